--
-- Store lifecycle: the options of compaction and GC, ctxstore.compact(t)
-- and ctxstore.gc(t, dry_run).  (The compaction lease's BUSY error, 55P03
-- naming the holder, needs the compaction engine and is tested with it.)
--
CREATE EXTENSION ctxstore;
CREATE SERVER lc_srv FOREIGN DATA WRAPPER ctxstore;

-- The options take integers or seconds with units, each within its range,
-- and say what they accept when refused.
CREATE FOREIGN TABLE lc (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc', merge_after_generations '0',
           compact_min_fragments '4', compact_interval '10min',
           retain_versions '3', retain_interval '2h', gc_grace '30min',
           gc_interval '1h');
ALTER FOREIGN TABLE lc OPTIONS (SET compact_min_fragments '1');
ALTER FOREIGN TABLE lc OPTIONS (SET compact_min_fragments 'many');
ALTER FOREIGN TABLE lc OPTIONS (SET compact_interval '-1');
ALTER FOREIGN TABLE lc OPTIONS (SET compact_interval 'soon');
ALTER FOREIGN TABLE lc OPTIONS (SET retain_versions '0');
ALTER FOREIGN TABLE lc OPTIONS (SET retain_interval '1 fortnight');
ALTER FOREIGN TABLE lc OPTIONS (SET gc_grace '-5s');
ALTER FOREIGN TABLE lc OPTIONS (SET gc_interval 'hourly');
\echo :LAST_ERROR_SQLSTATE
SELECT name, level, scope, default_value FROM ctxstore.options()
WHERE name IN ('compact_min_fragments', 'compact_interval', 'retain_versions',
               'retain_interval', 'gc_grace', 'gc_interval')
ORDER BY name;

-- ctxstore.stats(t) shows the last compaction and GC: none yet.
SELECT ctxstore.stats('lc')->'compaction' AS compaction,
       ctxstore.stats('lc')->'gc' AS gc;

-- An empty store: nothing to compact, nothing to collect.
SELECT ctxstore.compact('lc');
SELECT ctxstore.gc('lc', dry_run => true);
SELECT ctxstore.gc('lc');

-- A small store, with a table pinned to its first version: GC is told to
-- keep that version.
INSERT INTO lc SELECT 'k' || g, g FROM generate_series(1, 10) g;
SELECT ctxstore.merge_wal('lc') > 0 AS merged;
INSERT INTO lc SELECT 'k' || g, g FROM generate_series(11, 20) g;
SELECT ctxstore.merge_wal('lc') > 0 AS merged;
SELECT min(version) AS first_version FROM ctxstore.versions('lc') \gset
CREATE FOREIGN TABLE lc_pinned (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc/', version :'first_version');
SELECT ctxstore.compact('lc')->'compacted' AS compacted;
-- The dry run's report: every count, deleting nothing.
SELECT key, jsonb_typeof(value) AS type FROM jsonb_each(ctxstore.gc('lc', true))
ORDER BY key;
SELECT r->'dry_run' AS dry_run, r->'versions_pinned' AS versions_pinned,
       r->'objects_deleted' AS objects_deleted
FROM ctxstore.gc('lc', true) r;
-- stats(t) shows what the last GC (here the dry run) counted as garbage;
-- jsonb_pretty() makes it readable.
SELECT ctxstore.gc('lc', true)->>'objects_garbage' AS dry_garbage \gset
SELECT s #>> '{gc,objects_garbage}' = :'dry_garbage' AS garbage_shown,
       jsonb_pretty((s->'gc') - 'last_at' - 'objects_garbage'
                    - 'bytes_garbage') AS gc
FROM ctxstore.stats('lc') s;
SELECT ctxstore.gc('lc')->'versions_pinned' AS versions_pinned;
SELECT count(*), sum(n) FROM lc;
SELECT s->'compaction'->>'outcome' AS compaction,
       s->'compaction'->>'last_at' IS NOT NULL AS compaction_at,
       s->'gc'->>'outcome' AS gc, s->'gc'->'bytes_reclaimed' AS gc_bytes
FROM ctxstore.stats('lc') s;

-- The outcome of the first run of job (compaction, gc) on t's store that
-- stats(t) shows, waited for up to 30 s (NULL: none came).
CREATE FUNCTION lc_wait_for(t regclass, job text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  outcome text;
BEGIN
  FOR i IN 1..300 LOOP
    outcome := ctxstore.stats(t)->job->>'outcome';
    EXIT WHEN outcome IS NOT NULL;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN outcome;
END $$;

-- With compact_interval the maintenance worker compacts the store by
-- itself, an interval after a merge job told it the settings (waited for
-- up to 30 s).
CREATE FOREIGN TABLE lc_timed (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_timed', merge_after_generations '0',
           compact_interval '1s');
INSERT INTO lc_timed VALUES ('a', 1);
SELECT ctxstore.merge_wal('lc_timed') > 0 AS merged;
SELECT lc_wait_for('lc_timed', 'compaction') AS compaction;

-- With gc_interval the maintenance worker collects a store's garbage by
-- itself, an interval after a merge job told it the settings, keeping the
-- versions tables pin: every request carries its database's pins.  With
-- retain_versions 1, retain_interval 0 and gc_grace 0 only the newest
-- version and the pinned first one stay (waited for up to 30 s).  No write
-- after gc_interval is set: with gc_grace 0 GC could take an upload not
-- committed yet.
CREATE FOREIGN TABLE lc_gc (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_gc', merge_after_generations '0',
           retain_versions '1', retain_interval '0', gc_grace '0');
INSERT INTO lc_gc SELECT 'k' || g, g FROM generate_series(1, 10) g;
SELECT ctxstore.merge_wal('lc_gc') > 0 AS merged;
SELECT max(version) AS gc_first FROM ctxstore.versions('lc_gc') \gset
CREATE FOREIGN TABLE lc_gc_pinned (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_gc', version :'gc_first');
INSERT INTO lc_gc SELECT 'k' || g, g FROM generate_series(11, 20) g;
SELECT ctxstore.merge_wal('lc_gc') > 0 AS merged;
ALTER FOREIGN TABLE lc_gc OPTIONS (ADD gc_interval '1s');
INSERT INTO lc_gc SELECT 'k' || g, g FROM generate_series(21, 30) g;
SELECT ctxstore.merge_wal('lc_gc') > 0 AS merged;
SELECT lc_wait_for('lc_gc', 'gc') AS gc;
SELECT (s #>> '{gc,bytes_reclaimed}')::bigint > 0 AS reclaimed,
       (s #>> '{gc,objects_garbage}')::bigint > 0 AS garbage_counted
FROM ctxstore.stats('lc_gc') s;
SELECT count(*), sum(n) FROM lc_gc;
SELECT count(*), sum(n) FROM lc_gc_pinned;

-- Maintenance works on the newest version: a pinned table is refused
-- (25006), and so is a role that does not own the table (42501).
SELECT ctxstore.compact('lc_pinned');
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.gc('lc_pinned', true);
\echo :LAST_ERROR_SQLSTATE
CREATE ROLE lc_other;
GRANT SELECT ON lc TO lc_other;
SET ROLE lc_other;
SELECT ctxstore.compact('lc');
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.gc('lc', true);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP OWNED BY lc_other;
DROP ROLE lc_other;

SET client_min_messages = warning;
DROP FUNCTION lc_wait_for;
DROP EXTENSION ctxstore CASCADE;
