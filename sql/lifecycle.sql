--
-- Store lifecycle: the options of compaction and GC, ctxstore.compact(t)
-- and ctxstore.gc(t, dry_run), the maintenance worker's timed ones.  (The
-- compaction lease's BUSY error, 55P03 naming the holder, is a TAP test:
-- t/090_compaction.pl.)
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

-- After a merge job the maintenance worker compacts the smallest size
-- tier once it holds compact_min_fragments small fragments (before
-- merge_wal() returns); compact_on_merge 'false' leaves that to
-- compact_interval and ctxstore.compact().  Three merges of one row each
-- with compact_min_fragments 3: one fragment on lc_auto, three on
-- lc_manual.
CREATE FOREIGN TABLE lc_auto (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_auto', merge_after_generations '0',
           compact_min_fragments '3');
CREATE FOREIGN TABLE lc_manual (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_manual', merge_after_generations '0',
           compact_min_fragments '3', compact_on_merge 'false');
ALTER FOREIGN TABLE lc_manual OPTIONS (SET compact_on_merge 'sometimes');
INSERT INTO lc_auto VALUES ('a', 1);
SELECT ctxstore.merge_wal('lc_auto') > 0 AS merged;
INSERT INTO lc_manual VALUES ('a', 1);
SELECT ctxstore.merge_wal('lc_manual') > 0 AS merged;
SELECT ctxstore.stats('lc_auto')->'fragments' AS auto_fragments,
       ctxstore.stats('lc_auto')->'compaction' - 'requests' AS auto_compaction;
INSERT INTO lc_auto VALUES ('b', 2);
SELECT ctxstore.merge_wal('lc_auto') > 0 AS merged;
INSERT INTO lc_manual VALUES ('b', 2);
SELECT ctxstore.merge_wal('lc_manual') > 0 AS merged;
INSERT INTO lc_auto VALUES ('c', 3);
SELECT ctxstore.merge_wal('lc_auto') > 0 AS merged;
INSERT INTO lc_manual VALUES ('c', 3);
SELECT ctxstore.merge_wal('lc_manual') > 0 AS merged;
SELECT t, ctxstore.stats(t)->'fragments' AS fragments,
       ctxstore.stats(t)->'compaction'->>'outcome' AS compaction,
       (ctxstore.stats(t) #>> '{compaction,requests,puts}')::int > 0
         AS compaction_puts,
       (SELECT string_agg(operation, ', ' ORDER BY version)
        FROM ctxstore.versions(t)) AS operations
FROM (VALUES ('lc_auto'::regclass), ('lc_manual')) v(t);
SELECT count(*), sum(n) FROM lc_auto;
-- The merges made as many requests of each kind on both stores: the
-- compaction's are its own.  (Byte counts differ with the encoded commit
-- times.)
SELECT (SELECT ctxstore.stats('lc_auto') #> '{merge,requests}') -
         '{bytes_read,bytes_written}'::text[] =
       (SELECT ctxstore.stats('lc_manual') #> '{merge,requests}') -
         '{bytes_read,bytes_written}'::text[]
  AS same_merge_requests;

-- A compaction after a merge takes only fragments below a sixteenth of
-- target_rows_per_fragment (the next merge waits behind it): with a target
-- of 32 rows, two merges of three rows each stay two fragments, which
-- ctxstore.compact() then compacts.
CREATE FOREIGN TABLE lc_bounded (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_bounded', merge_after_generations '0',
           compact_min_fragments '2', target_rows_per_fragment '32');
INSERT INTO lc_bounded VALUES ('a', 1), ('b', 2), ('c', 3);
SELECT ctxstore.merge_wal('lc_bounded') > 0 AS merged;
INSERT INTO lc_bounded VALUES ('d', 4), ('e', 5), ('f', 6);
SELECT ctxstore.merge_wal('lc_bounded') > 0 AS merged;
SELECT ctxstore.stats('lc_bounded')->'fragments' AS fragments,
       ctxstore.stats('lc_bounded') #>> '{compaction,outcome}' AS compaction;
SELECT ctxstore.compact('lc_bounded')->'compacted' AS compacted;
SELECT ctxstore.stats('lc_bounded')->'fragments' AS fragments;

-- With gc_interval the maintenance worker collects a store's garbage by
-- itself, an interval after a merge job told it the settings, keeping the
-- versions tables pin: every request carries its database's pins.  With
-- retain_versions 1, retain_interval 0 and gc_grace 0 only the newest
-- version and the pinned first one stay (waited for up to 30 s).  No write
-- after gc_interval is set: with gc_grace 0 GC could take an upload not
-- committed yet.
CREATE FOREIGN TABLE lc_gc (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_gc', merge_after_generations '0',
           cleanup_interval '0', retain_versions '1', retain_interval '0',
           gc_grace '0');
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

-- A version between retained ones keeps its manifest, but GC deletes the
-- fragments only it names: ctxstore.versions(t) says which versions GC
-- retains, and reading a collected one says it is no longer retained.
-- Versions: pinned (fragment A), between (A and B), compacted (C), newest.
CREATE FOREIGN TABLE lc_ret (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_ret', merge_after_generations '0',
           cleanup_interval '0', compact_min_fragments '2',
           compact_on_merge 'false', retain_versions '1',
           retain_interval '0', gc_grace '0');
INSERT INTO lc_ret SELECT 'k' || g, g FROM generate_series(1, 10) g;
SELECT ctxstore.merge_wal('lc_ret') > 0 AS merged;
SELECT max(version) AS ret_pinned FROM ctxstore.versions('lc_ret') \gset
CREATE FOREIGN TABLE lc_ret_pinned (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_ret', version :'ret_pinned');
INSERT INTO lc_ret SELECT 'k' || g, g FROM generate_series(11, 20) g;
SELECT ctxstore.merge_wal('lc_ret') > 0 AS merged;
SELECT max(version) AS ret_between FROM ctxstore.versions('lc_ret') \gset
SELECT ctxstore.compact('lc_ret')->'compacted' AS compacted;
SELECT (ctxstore.gc('lc_ret')->>'objects_deleted')::int > 0 AS collected;
SELECT version - :ret_pinned AS since_pinned, operation, retained
FROM ctxstore.versions('lc_ret') WHERE version >= :ret_pinned ORDER BY version;
SELECT count(*), sum(n) FROM lc_ret_pinned;
-- What GC collected is what the store records, not what the options of a
-- table asking now would retain: another table of the store, which would
-- retain 20 versions, pinned to the collected one after GC ran, reads it
-- as no longer retained, and versions() of either table calls it not
-- retained although a table pins it now.
CREATE FOREIGN TABLE lc_ret_between (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_ret', version :'ret_between',
           retain_versions '20');
SELECT version - :ret_pinned AS since_pinned, b.retained AS retained_here,
       r.retained AS retained_by_20
FROM ctxstore.versions('lc_ret') b JOIN ctxstore.versions('lc_ret_between') r
  USING (version)
WHERE version >= :ret_pinned ORDER BY version;
-- A scan and ANALYZE both say so.
DO $$
DECLARE
  stmt text;
  state text;
  msg text;
  detail text;
  hint text;
BEGIN
  FOREACH stmt IN ARRAY ARRAY['SELECT count(*) FROM lc_ret_between',
                              'ANALYZE lc_ret_between'] LOOP
    BEGIN
      EXECUTE stmt;
      RAISE NOTICE '%: read', stmt;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
        detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
      RAISE NOTICE '%: %, no longer retained: %, detail names a fragment: %, hint: %',
        stmt, state,
        msg LIKE 'version % of store file://%/lc_ret is no longer retained',
        detail LIKE '%data/%', hint;
    END;
  END LOOP;
END $$;

-- Compaction rewrites the small fragments into one, rows, deletions and
-- updates read the same, and key lookups go through the reindexed outputs.
CREATE FOREIGN TABLE lc_cmp (id text, n int) SERVER lc_srv
  OPTIONS (uri 'file://@store_root@/lc_cmp', merge_after_generations '0');
INSERT INTO lc_cmp SELECT 'k' || g, g FROM generate_series(1, 10) g;
SELECT ctxstore.merge_wal('lc_cmp') > 0 AS merged;
INSERT INTO lc_cmp SELECT 'k' || g, g FROM generate_series(11, 20) g;
SELECT ctxstore.merge_wal('lc_cmp') > 0 AS merged;
DELETE FROM lc_cmp WHERE n % 5 = 0;
UPDATE lc_cmp SET n = n * 100 WHERE id IN ('k3', 'k13');
SELECT ctxstore.merge_wal('lc_cmp') > 0 AS merged;
INSERT INTO lc_cmp SELECT 'k' || g, g FROM generate_series(21, 25) g;
SELECT ctxstore.merge_wal('lc_cmp') > 0 AS merged;
CREATE TEMP TABLE lc_before AS SELECT * FROM lc_cmp;
SELECT count(*) AS fragments_before FROM ctxstore.fragments('lc_cmp') \gset
SELECT r->'compacted' AS compacted, (r->>'inputs')::int = :fragments_before
         AS every_fragment, r->'outputs' AS outputs, r->'rows' AS rows
FROM ctxstore.compact('lc_cmp') r;
SELECT count(*) < :fragments_before AS fewer, count(*) AS fragments
FROM ctxstore.fragments('lc_cmp');
SELECT count(*), sum(n) FROM lc_cmp;
(SELECT * FROM lc_cmp EXCEPT SELECT * FROM lc_before)
UNION ALL (SELECT * FROM lc_before EXCEPT SELECT * FROM lc_cmp);
SELECT operation FROM ctxstore.versions('lc_cmp')
WHERE operation IN ('compact', 'index') ORDER BY version DESC LIMIT 2;
SELECT id, n FROM lc_cmp WHERE id = 'k13';
SELECT id, n FROM lc_cmp WHERE id = 'k15';
SELECT string_agg(id, ',' ORDER BY id) FROM lc_cmp
WHERE id = ANY (ARRAY['k1', 'k10', 'k24', 'zz']);
EXPLAIN (COSTS OFF) SELECT * FROM lc_cmp WHERE id = 'k13';
-- Nothing small left: the next compaction has nothing to do.
SELECT ctxstore.compact('lc_cmp')->'compacted' AS compacted;

-- A compaction canceled (statement_timeout) while it holds the lease, held
-- there by a failpoint delay: 57014, the store unchanged and readable, its
-- lease released, so the next compaction converges.
INSERT INTO lc_cmp VALUES ('k26', 26);
SELECT ctxstore.merge_wal('lc_cmp') > 0 AS merged;
SELECT count(*) AS fragments_before FROM ctxstore.fragments('lc_cmp') \gset
SELECT count(*) AS versions_before FROM ctxstore.versions('lc_cmp') \gset
SET ctxstore.failpoints = 'compact.after_lease=delay:2000';
SET statement_timeout = '200ms';
SELECT ctxstore.compact('lc_cmp');
\echo :LAST_ERROR_SQLSTATE
RESET statement_timeout;
RESET ctxstore.failpoints;
SELECT (SELECT count(*) FROM ctxstore.fragments('lc_cmp')) = :fragments_before
         AS same_fragments,
       (SELECT count(*) FROM ctxstore.versions('lc_cmp')) = :versions_before
         AS same_versions;
SELECT ctxstore.stats('lc_cmp')->'compaction'->>'outcome' AS compaction;
SELECT count(*), sum(n) FROM lc_cmp;
SELECT r->'compacted' AS compacted, r->'inputs' AS inputs
FROM ctxstore.compact('lc_cmp') r;
SELECT count(*) AS fragments FROM ctxstore.fragments('lc_cmp');
SELECT count(*), sum(n) FROM lc_cmp;

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
