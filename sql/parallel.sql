--
-- Parallel scans: the leader and its workers claim the row groups of one
-- snapshot (base fragments, then unmerged generations) and together return
-- exactly the rows a serial scan returns; the transaction's buffered rows
-- keep a scan serial, or (a plan made before them) read by the leader only.
--
CREATE EXTENSION ctxstore;
CREATE SERVER par_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE par (id text, session_id text, n int, note text)
  SERVER par_srv
  OPTIONS (uri 'file://@store_root@/par', merge_after_generations '0',
           flush_interval '1h', cleanup_interval '0');

-- Three base fragments, then unmerged generations holding updates and
-- deletes of base keys and new keys.
-- (note: incompressible, so that the store is big enough for two workers)
INSERT INTO par SELECT 'k' || i, 's' || i % 4, i, md5(i::text)
  FROM generate_series(1, 1000) i;
SELECT ctxstore.merge_wal('par');
INSERT INTO par SELECT 'k' || i, 's' || i % 4, i, md5(i::text)
  FROM generate_series(1001, 2000) i;
SELECT ctxstore.merge_wal('par');
UPDATE par SET n = -n WHERE id IN ('k1', 'k1500');
SELECT ctxstore.merge_wal('par');
UPDATE par SET n = n * 10 WHERE id IN ('k2', 'k1501', 'k1');
DELETE FROM par WHERE id IN ('k3', 'k1502');
INSERT INTO par SELECT 'k' || i, 's9', i, md5(i::text)
  FROM generate_series(2001, 2100) i;
UPDATE par SET n = 7 WHERE id = 'k2001';
SELECT ctxstore.pending_wal_generations('par');

-- The serial answer.
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT * FROM par;
CREATE TABLE par_serial AS SELECT * FROM par;
SELECT count(*), sum(n) FROM par_serial;

-- Forced parallel plans: the scan is parallel aware under a Gather.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT * FROM par;
CREATE TABLE par_parallel AS SELECT * FROM par;
SELECT (SELECT count(*) FROM (SELECT * FROM par_serial EXCEPT ALL
                              SELECT * FROM par_parallel) d) AS missing,
       (SELECT count(*) FROM (SELECT * FROM par_parallel EXCEPT ALL
                              SELECT * FROM par_serial) d) AS extra;
-- Without the leader, the workers alone return every row.
SET parallel_leader_participation = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM par;
DROP TABLE par_parallel;
CREATE TABLE par_parallel AS SELECT * FROM par;
SELECT (SELECT count(*) FROM (SELECT * FROM par_serial EXCEPT ALL
                              SELECT * FROM par_parallel) d) AS missing,
       (SELECT count(*) FROM (SELECT * FROM par_parallel EXCEPT ALL
                              SELECT * FROM par_serial) d) AS extra;
RESET parallel_leader_participation;
-- An aggregate over a parallel scan.
SELECT count(*), sum(n) FROM par;
EXPLAIN (COSTS OFF) SELECT count(*) FROM par;
-- In a join the scan is parallel aware too, never a whole scan run in a
-- worker (which would open a snapshot of its own).
CREATE TABLE par_keys AS SELECT 'k' || i AS id FROM generate_series(1, 3000) i;
ANALYZE par_keys;
EXPLAIN (COSTS OFF) SELECT count(*), sum(p.n) FROM par_keys k JOIN par p USING (id);
EXPLAIN (COSTS OFF) SELECT count(*), sum(p.n) FROM par_keys k JOIN par p USING (id)
  WHERE p.id IN ('k6', 'k7', 'k2001');
SELECT count(*), sum(p.n) FROM par_keys k JOIN par p USING (id)
  WHERE p.id IN ('k6', 'k7', 'k2001');
SELECT count(*), sum(p.n) FROM par_keys k JOIN par p USING (id);
EXPLAIN (COSTS OFF) SELECT count(*), sum(p.n) FROM par_keys k JOIN par p USING (id)
  WHERE p.id IN ('k6', 'k7', 'k2001');
SELECT count(*), sum(p.n) FROM par_keys k JOIN par p USING (id)
  WHERE p.id IN ('k6', 'k7', 'k2001');

-- A plan made before the transaction wrote (a cached generic plan) stays
-- parallel: its workers return nothing and the leader reads every row,
-- applying the buffered ones.
SET plan_cache_mode = force_generic_plan;
PREPARE par_all AS SELECT * FROM par;
EXECUTE par_all \g /dev/null
BEGIN;
INSERT INTO par VALUES ('p1', 's1', 1);
UPDATE par SET n = 0 WHERE id IN ('k4', 'k1503', 'k2002');
DELETE FROM par WHERE id IN ('k5', 'k2003');
EXPLAIN (COSTS OFF) EXECUTE par_all;
CREATE TABLE par_cached AS EXECUTE par_all;
-- A plan made now is serial: the buffered rows make the table parallel
-- unsafe.
EXPLAIN (COSTS OFF) SELECT * FROM par;
CREATE TABLE par_xact AS SELECT * FROM par;
SET LOCAL max_parallel_workers_per_gather = 0;
CREATE TABLE par_xact_serial AS SELECT * FROM par;
SELECT count(*), sum(n) FROM par_xact_serial;
SELECT (SELECT count(*) FROM (SELECT * FROM par_xact_serial EXCEPT ALL
                              SELECT * FROM par_cached) d) AS missing,
       (SELECT count(*) FROM (SELECT * FROM par_cached EXCEPT ALL
                              SELECT * FROM par_xact_serial) d) AS extra,
       (SELECT count(*) FROM (SELECT * FROM par_xact EXCEPT ALL
                              SELECT * FROM par_xact_serial) d) AS extra_now;
ROLLBACK;
DEALLOCATE par_all;
RESET plan_cache_mode;

DROP TABLE par_serial, par_parallel, par_keys;
DROP FOREIGN TABLE par;
DROP SERVER par_srv;
DROP EXTENSION ctxstore;
