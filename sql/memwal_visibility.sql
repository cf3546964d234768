--
-- MemWAL visibility contracts (docs/INVARIANTS.md, 4, 5 and 7): seal_on_insert on and
-- off, flush, cleanup, count-triggered merges, merge_wal, and the key rule.
-- Every table has a reader twin on the same store: what the twin sees after
-- COMMIT is what any other session or cluster sees.  Timed flushes and
-- cleanups are turned off (flush_interval, cleanup_interval) so that nothing
-- but the statements below changes what is visible.
--
CREATE EXTENSION ctxstore;
CREATE SERVER mw_srv FOREIGN DATA WRAPPER ctxstore;

-- The key must name a store column (default "id").
CREATE FOREIGN TABLE mw_nokey (n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_nokey');
INSERT INTO mw_nokey VALUES (1);
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE mw_nokey OPTIONS (ADD key 'n');
INSERT INTO mw_nokey VALUES (1);
SELECT * FROM mw_nokey;
-- ... and agree with the key the store recorded with its first writer.
CREATE FOREIGN TABLE mw_otherkey (n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_nokey', key 'n', unique_key 'false');
INSERT INTO mw_otherkey VALUES (2);
\echo :LAST_ERROR_SQLSTATE

-- ---- seal_on_insert 'true' (the default): visible when COMMIT returns ----
CREATE FOREIGN TABLE mw_seal (id text, n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_seal', merge_after_generations '0',
           flush_interval '1h', cleanup_interval '0');
CREATE FOREIGN TABLE mw_seal_r (id text, n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_seal');
INSERT INTO mw_seal VALUES ('a', 1);
SELECT * FROM mw_seal_r;
SELECT ctxstore.pending_wal_generations('mw_seal');
-- merge_after_generations 0: no automatic merge, one generation per commit,
-- past the default trigger of 8 too.
INSERT INTO mw_seal VALUES ('b', 1);
INSERT INTO mw_seal VALUES ('c', 1);
SELECT ctxstore.pending_wal_generations('mw_seal');
SELECT format('INSERT INTO mw_seal VALUES (%L, 0)', 'f' || i)
  FROM generate_series(1, 8) i \gexec
SELECT ctxstore.pending_wal_generations('mw_seal');
EXPLAIN (COSTS OFF) SELECT * FROM mw_seal_r;

-- a new version of a key replaces the old one: one row, the newer one, in
-- two commits, or one merged and one not.
UPDATE mw_seal SET n = 2 WHERE id = 'a';
BEGIN;
INSERT INTO mw_seal VALUES ('d', 1);
UPDATE mw_seal SET n = 2 WHERE id = 'd';
COMMIT;
SELECT * FROM mw_seal_r ORDER BY id;
-- The scan opened every generation twice (its keys first, then its rows)
-- and hid the two replaced versions.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM mw_seal_r;

-- merge_wal folds every pending generation into the base: nothing pending,
-- every row exactly once.
SELECT ctxstore.merge_wal('mw_seal');
SELECT ctxstore.pending_wal_generations('mw_seal');
EXPLAIN (COSTS OFF) SELECT * FROM mw_seal_r;
SELECT * FROM mw_seal_r ORDER BY id;
UPDATE mw_seal SET n = 3 WHERE id = 'a';
SELECT * FROM mw_seal_r WHERE id = 'a';
SELECT ctxstore.merge_wal('mw_seal');
SELECT * FROM mw_seal_r ORDER BY id;
-- Nothing pending: nothing to merge.
SELECT ctxstore.merge_wal('mw_seal');

-- A transaction reads its own rows before COMMIT, from its own table only.
BEGIN;
INSERT INTO mw_seal VALUES ('e', 1);
SELECT * FROM mw_seal WHERE id = 'e';
SELECT * FROM mw_seal_r WHERE id = 'e';
COMMIT;
SELECT * FROM mw_seal_r WHERE id = 'e';

-- ---- seal_on_insert 'false': durable at COMMIT, visible at the next seal ----
CREATE FOREIGN TABLE mw_defer (id text, n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_defer', seal_on_insert 'false',
           merge_after_generations '0', flush_interval '1h',
           cleanup_interval '0');
CREATE FOREIGN TABLE mw_defer_r (id text, n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_defer');
INSERT INTO mw_defer VALUES ('x', 1);
INSERT INTO mw_defer VALUES ('y', 1);
-- Not visible after COMMIT, neither through the other table nor through
-- the one that wrote them; no generation yet.
SELECT count(*) FROM mw_defer_r;
SELECT count(*) FROM mw_defer;
SELECT ctxstore.pending_wal_generations('mw_defer');
-- flush seals them into one generation.
SELECT ctxstore.flush('mw_defer') -> 'sealed_rows' AS sealed_rows;
SELECT * FROM mw_defer_r ORDER BY id;
SELECT ctxstore.pending_wal_generations('mw_defer');
-- A flush with nothing to seal changes nothing.
SELECT ctxstore.flush('mw_defer') -> 'sealed_rows' AS sealed_rows;
SELECT ctxstore.pending_wal_generations('mw_defer');

-- cleanup_wal seals before it merges: the unsealed row is merged too.
INSERT INTO mw_defer VALUES ('z', 1);
UPDATE mw_defer SET n = 2 WHERE id = 'x';
SELECT * FROM mw_defer_r ORDER BY id;
SELECT ctxstore.cleanup_wal('mw_defer');
SELECT ctxstore.pending_wal_generations('mw_defer');
SELECT * FROM mw_defer_r ORDER BY id;
-- merge_wal seals too.
INSERT INTO mw_defer VALUES ('w', 1);
SELECT ctxstore.merge_wal('mw_defer');
SELECT * FROM mw_defer_r ORDER BY id;

-- ---- merge_after_generations 2: merges keep pending bounded ----
CREATE FOREIGN TABLE mw_auto (id text, n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_auto', merge_after_generations '2',
           flush_interval '1h', cleanup_interval '0', unique_key 'false');
CREATE FOREIGN TABLE mw_auto_r (id text, n int) SERVER mw_srv
  OPTIONS (uri 'file://@store_root@/mw_auto', unique_key 'false');
-- Twenty single-row commits, each key written twice (unique_key 'false':
-- the second replaces the first).
SELECT format('INSERT INTO mw_auto VALUES (%L, %s)', 'k' || (i % 10), i)
  FROM generate_series(1, 20) i \gexec
-- Merges run beside the appends (they never block them), so the count is
-- read once the last one has finished: bounded, far below 20.
CREATE FUNCTION mw_settled_pending(t regclass, bound int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  n int;
BEGIN
  FOR i IN 1 .. 600 LOOP
    n := ctxstore.pending_wal_generations(t);
    EXIT WHEN n <= bound;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN n;
END $$;
SELECT mw_settled_pending('mw_auto', 2) <= 2 AS bounded;
SELECT count(*), count(DISTINCT id), sum(n) FROM mw_auto_r;

DROP FUNCTION mw_settled_pending;
SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
