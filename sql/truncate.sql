--
-- TRUNCATE buffers one marker (a DELETE with a NULL key) that hides every
-- row committed before it and every row the transaction wrote before it;
-- it is transactional like every other change.  Pinned tables are
-- read-only.
--
CREATE EXTENSION ctxstore;
CREATE SERVER trunc_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE trunc_t (id text, n int)
  SERVER trunc_srv OPTIONS (uri 'file://@store_root@/trunc');
INSERT INTO trunc_t VALUES ('a', 1), ('b', 2);

-- ROLLBACK undoes it; inside the transaction it hid everything before it.
BEGIN;
INSERT INTO trunc_t VALUES ('c', 3);
TRUNCATE trunc_t;
SELECT count(*) FROM trunc_t;
INSERT INTO trunc_t VALUES ('a', 10);
SELECT * FROM trunc_t ORDER BY id;
ROLLBACK;
SELECT * FROM trunc_t ORDER BY id;

-- So does a rolled-back savepoint.
BEGIN;
SAVEPOINT s1;
TRUNCATE trunc_t;
ROLLBACK TO SAVEPOINT s1;
SELECT * FROM trunc_t ORDER BY id;
COMMIT;
SELECT * FROM trunc_t ORDER BY id;

-- RESTART IDENTITY and CASCADE are accepted.  The commit hands the marker
-- and the rows after it to the writer in one commit: every row committed
-- before it is gone, the row after it stays, before and after the merge
-- (a version whose operation is "truncate").
BEGIN;
TRUNCATE trunc_t RESTART IDENTITY CASCADE;
INSERT INTO trunc_t VALUES ('z', 26);
SELECT * FROM trunc_t ORDER BY id;
COMMIT;
SELECT s -> 'acked_transactions' AS transactions, s -> 'acked_rows' AS acked_rows
FROM ctxstore.stats('trunc_t') s;
SELECT * FROM trunc_t ORDER BY id;
SELECT ctxstore.merge_wal('trunc_t') > 0 AS merged;
SELECT * FROM trunc_t ORDER BY id;
-- The truncated keys are free again.
INSERT INTO trunc_t VALUES ('a', 100);
SELECT * FROM trunc_t ORDER BY id;
-- A pinned table is read-only: no TRUNCATE, UPDATE, DELETE or maintenance
-- (25006, with a hint).
CREATE FOREIGN TABLE trunc_v1 (id text, n int)
  SERVER trunc_srv OPTIONS (uri 'file://@store_root@/trunc', version '1');
TRUNCATE trunc_v1;
\echo :LAST_ERROR_SQLSTATE
UPDATE trunc_v1 SET n = 0;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM trunc_v1;
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.flush('trunc_v1');
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.merge_wal('trunc_v1');
\echo :LAST_ERROR_SQLSTATE
SELECT ctxstore.cleanup_wal('trunc_v1');
\echo :LAST_ERROR_SQLSTATE
-- ctxstore.versions() shows each version's operation and rows.
SELECT version, operation, rows FROM ctxstore.versions('trunc_t');

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
