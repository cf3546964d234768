--
-- Scans: projection, EXPLAIN, pinned versions, statistics, access rules.
--
CREATE EXTENSION ctxstore;
-- The parts of ctxstore.stats() about the version a table reads (the rest
-- names this cluster's shard and worker, which differ from run to run).
CREATE FUNCTION scan_stats(t regclass) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_object_agg(key, value) FROM jsonb_each(ctxstore.stats(t))
  WHERE key IN ('uri', 'pinned', 'version', 'fragments', 'rows', 'pending_rows')
$$;
CREATE SERVER scan_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE scan_t (
  id text, session_id text, role text, content text, metadata jsonb,
  embedding real[], created_at timestamptz
) SERVER scan_srv OPTIONS (uri 'file://@store_root@/scan');

-- An empty store: version 0, no rows.
EXPLAIN (COSTS OFF) SELECT * FROM scan_t;
SELECT * FROM scan_t;
SELECT scan_stats('scan_t');
SELECT * FROM ctxstore.versions('scan_t');

INSERT INTO scan_t
  SELECT 'id' || i, 's' || (i % 3), CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
         (SELECT string_agg(md5(i::text || '.' || j::text), ' ') FROM generate_series(1, 20) j),
         jsonb_build_object('i', i),
         ARRAY[i, i / 2.0, -i]::real[], '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 minute'
  FROM generate_series(1, 3000) i;
INSERT INTO scan_t VALUES ('short1', 's1', 'user', 'short', NULL, NULL, NULL);

-- Both commits are unmerged generations until they are merged into the base.
EXPLAIN (COSTS OFF) SELECT * FROM scan_t;
SELECT count(*) FROM scan_t;
SELECT ctxstore.merge_wal('scan_t');

-- EXPLAIN shows the store and the version read, never an option.
EXPLAIN (COSTS OFF) SELECT * FROM scan_t;
-- Only the columns the query needs are fetched: output and quals.
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM scan_t WHERE session_id = 's1';
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM scan_t;
EXPLAIN (VERBOSE, COSTS OFF) SELECT t FROM scan_t t LIMIT 1;
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT a.id FROM scan_t a JOIN scan_t b ON a.id = b.session_id;

SELECT count(*) FROM scan_t;
SELECT session_id, count(*) FROM scan_t GROUP BY 1 ORDER BY 1;
SELECT id, role, embedding, created_at FROM scan_t
  WHERE session_id = 's1' ORDER BY created_at NULLS LAST LIMIT 3;
SELECT id, length(content), metadata FROM scan_t WHERE id IN ('id7', 'short1') ORDER BY id;

-- Projection reads fewer bytes: the bytes this backend read from the store
-- while running a query (one statement, so the manifest is not re-read).
CREATE FUNCTION scan_bytes(query text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  before bigint := ctxstore.stats('scan_t') -> 'backend_reads' -> 'bytes_read';
BEGIN
  EXECUTE query;
  RETURN (ctxstore.stats('scan_t') -> 'backend_reads' -> 'bytes_read')::bigint - before;
END $$;
SELECT scan_bytes('SELECT count(DISTINCT session_id) FROM scan_t') * 3
       < scan_bytes('SELECT count(DISTINCT content) FROM scan_t') AS narrow_reads_less,
       scan_bytes('SELECT count(*) FROM scan_t')
       < scan_bytes('SELECT count(DISTINCT session_id) FROM scan_t') AS count_reads_least;

-- An error in the middle of a scan leaves nothing behind: the next scans work.
SELECT id, 1 / (length(id) - 4) FROM scan_t;
SELECT count(*) FROM scan_t WHERE length(id) = 4;

-- Row estimates come from the snapshot.
EXPLAIN SELECT * FROM scan_t;

-- Statistics and history.
SELECT scan_stats('scan_t');
SELECT version, operation, rows, committed_at <= now() AS past
FROM ctxstore.versions('scan_t');
SELECT ctxstore.stats('pg_class');
SELECT ctxstore.stats(0);

-- A table pinned to a version reads that version's base only, and is
-- read-only: before the merge (no rows in the base) and after it.
CREATE FOREIGN TABLE scan_v0 (id text, session_id text)
  SERVER scan_srv OPTIONS (uri 'file://@store_root@/scan', version '2');
SELECT count(*) FROM scan_v0;
CREATE FOREIGN TABLE scan_v1 (id text, session_id text)
  SERVER scan_srv OPTIONS (uri 'file://@store_root@/scan', version '3');
EXPLAIN (COSTS OFF) SELECT * FROM scan_v1;
SELECT count(*) FROM scan_v1;
SELECT scan_stats('scan_v1');
INSERT INTO scan_v1 VALUES ('x', 'y');
\echo :LAST_ERROR_SQLSTATE
CREATE FOREIGN TABLE scan_v9 (id text)
  SERVER scan_srv OPTIONS (uri 'file://@store_root@/scan', version '9');
SELECT * FROM scan_v9;
\echo :LAST_ERROR_SQLSTATE

-- Rescans (the inner side of a nested loop) start over.
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SELECT count(*) FROM scan_v1 a JOIN scan_t b ON a.id = b.id;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- A file:// store needs pg_read_server_files to read and
-- pg_write_server_files to write, like file_fdw.
CREATE ROLE regress_cx_scan_user;
GRANT USAGE ON FOREIGN SERVER scan_srv TO regress_cx_scan_user;
GRANT SELECT, INSERT ON scan_t TO regress_cx_scan_user;
SET ROLE regress_cx_scan_user;
SELECT count(*) FROM scan_t;
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.stats('scan_t');
INSERT INTO scan_t (id) VALUES ('intruder');
-- The functions need SELECT on the table.
SELECT * FROM ctxstore.versions('scan_v1');
RESET ROLE;
GRANT pg_read_server_files TO regress_cx_scan_user;
SET ROLE regress_cx_scan_user;
SELECT count(*) FROM scan_t;
INSERT INTO scan_t (id) VALUES ('intruder');
RESET ROLE;
GRANT pg_write_server_files TO regress_cx_scan_user;
SET ROLE regress_cx_scan_user;
INSERT INTO scan_t (id) VALUES ('welcome');
SELECT count(*) FROM scan_t;
RESET ROLE;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
DROP FUNCTION scan_bytes(text);
DROP FUNCTION scan_stats(regclass);
DROP ROLE regress_cx_scan_user;
