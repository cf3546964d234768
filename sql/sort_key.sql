--
-- sort_key: merges write base fragments sorted by the table's sort key,
-- then its key, so that each fragment's statistics cover a narrow range of
-- it (ctxstore.fragments() shows the bounds).  Without a sort key the key
-- is the order.
--
CREATE EXTENSION ctxstore;
CREATE SERVER sk_srv FOREIGN DATA WRAPPER ctxstore;

-- The list is checked when the option is set ...
CREATE FOREIGN TABLE sk_bad (id text) SERVER sk_srv
  OPTIONS (uri 'file://@store_root@/sk_bad', sort_key '');
CREATE FOREIGN TABLE sk_bad (id text) SERVER sk_srv
  OPTIONS (uri 'file://@store_root@/sk_bad', sort_key 'a,,b');
CREATE FOREIGN TABLE sk_bad (id text) SERVER sk_srv
  OPTIONS (uri 'file://@store_root@/sk_bad', sort_key 'a, a');
CREATE FOREIGN TABLE sk_bad (id text) SERVER sk_srv
  OPTIONS (uri 'file://@store_root@/sk_bad', sort_key 'a,b,c,d,e,f,g,h,i');
-- ... and its columns when the table is first written.
CREATE FOREIGN TABLE sk_bad (id text, meta jsonb, n numeric, tags text[])
  SERVER sk_srv OPTIONS (uri 'file://@store_root@/sk_bad', sort_key 'nosuch');
INSERT INTO sk_bad (id) VALUES ('x');
ALTER FOREIGN TABLE sk_bad OPTIONS (SET sort_key 'id, meta');
INSERT INTO sk_bad (id) VALUES ('x');
ALTER FOREIGN TABLE sk_bad OPTIONS (SET sort_key 'n');
INSERT INTO sk_bad (id) VALUES ('x');
ALTER FOREIGN TABLE sk_bad OPTIONS (SET sort_key 'tags');
INSERT INTO sk_bad (id) VALUES ('x');
-- Reads do not depend on it.
SELECT count(*) FROM sk_bad;
DROP FOREIGN TABLE sk_bad;

-- A context table clustered by (session_id, created_at), ten rows a
-- fragment.  Each load interleaves the turns of four sessions; each merge
-- cuts its sorted rows into fragments that hold one session each.
CREATE FOREIGN TABLE turns (id text, session_id text, created_at timestamptz,
                            body text)
  SERVER sk_srv OPTIONS (uri 'file://@store_root@/turns',
    sort_key 'session_id, created_at', target_rows_per_fragment '10',
    merge_after_generations '0', cleanup_interval '0');
INSERT INTO turns SELECT 't' || g, 's' || (g % 4),
  timestamptz '2026-01-01 00:00:00+00' + g * interval '1 minute', 'turn ' || g
  FROM generate_series(1, 40) g;
SELECT ctxstore.merge_wal('turns');
INSERT INTO turns SELECT 't' || g, 's' || (g % 4),
  timestamptz '2026-01-01 00:00:00+00' + g * interval '1 minute', 'turn ' || g
  FROM generate_series(41, 80) g;
SELECT ctxstore.merge_wal('turns');
SET TimeZone = 'UTC';
SELECT fragment, rows, deleted, origin_shard IS NOT NULL AS has_origin,
       min, max
FROM ctxstore.fragments('turns');
-- An update of a merged row: its old version gets a deletion vector entry,
-- the new one lands in its session's fragment at the next merge.
UPDATE turns SET body = 'edited' WHERE id = 't6';
SELECT ctxstore.merge_wal('turns');
SELECT fragment, rows, deleted, min, max
FROM ctxstore.fragments('turns') WHERE deleted > 0 OR rows < 10;
-- What a session fetch returns is unchanged by the order, and it reads
-- only the base fragments whose bounds may hold 's2' (pushdown skips the
-- others unopened).
SELECT id, created_at, body FROM turns WHERE session_id = 's2'
ORDER BY created_at DESC LIMIT 3;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id FROM turns WHERE session_id = 's2';
SELECT count(*), count(DISTINCT id) FROM turns;

-- A change applies to the merges after it; earlier fragments keep theirs.
ALTER FOREIGN TABLE turns OPTIONS (SET sort_key 'created_at');
INSERT INTO turns SELECT 'u' || g, 's' || (g % 4),
  timestamptz '2026-02-01 00:00:00+00' + g * interval '1 minute', 'later'
  FROM generate_series(1, 20) g;
SELECT ctxstore.merge_wal('turns');
SELECT fragment, rows, min, max FROM ctxstore.fragments('turns')
WHERE fragment >= 8;

-- Without a sort key the key is the order.
CREATE FOREIGN TABLE notes (id int, body text) SERVER sk_srv
  OPTIONS (uri 'file://@store_root@/notes', key 'id',
    target_rows_per_fragment '5', merge_after_generations '0',
    cleanup_interval '0');
INSERT INTO notes SELECT (g * 7) % 20, 'n' || g FROM generate_series(0, 19) g;
SELECT ctxstore.merge_wal('notes');
SELECT fragment, rows, min, max FROM ctxstore.fragments('notes');
SELECT * FROM ctxstore.fragments('pg_class');

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
