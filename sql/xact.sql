--
-- Transactions: rows reach the store at COMMIT only; ROLLBACK and ROLLBACK TO
-- SAVEPOINT discard exactly what they should; a transaction reads its own
-- rows; two-phase commit is refused.
--
CREATE EXTENSION ctxstore;
CREATE SERVER xact_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE xact_t (id text NOT NULL, n int)
  SERVER xact_srv OPTIONS (uri 'file://@store_root@/xact');

-- Autocommit.
INSERT INTO xact_t VALUES ('a', 1);
SELECT * FROM xact_t ORDER BY id;

-- ROLLBACK discards; the transaction saw its rows until then.
BEGIN;
INSERT INTO xact_t VALUES ('b', 2), ('c', 3);
SELECT * FROM xact_t ORDER BY id;
SELECT count(*) FROM xact_t;
ROLLBACK;
SELECT * FROM xact_t ORDER BY id;

-- Savepoints cut back exactly the rows written since.
BEGIN;
INSERT INTO xact_t VALUES ('b', 2);
SAVEPOINT s1;
INSERT INTO xact_t VALUES ('x1', 10);
SAVEPOINT s2;
INSERT INTO xact_t VALUES ('x2', 20);
ROLLBACK TO SAVEPOINT s1;
SELECT * FROM xact_t ORDER BY id;
INSERT INTO xact_t VALUES ('c', 3);
SAVEPOINT s3;
INSERT INTO xact_t VALUES ('d', 4);
RELEASE SAVEPOINT s3;
SAVEPOINT s4;
INSERT INTO xact_t VALUES ('x3', 30);
SAVEPOINT s5;
INSERT INTO xact_t VALUES ('x4', 40);
RELEASE SAVEPOINT s5;
ROLLBACK TO SAVEPOINT s4;
INSERT INTO xact_t VALUES ('e', 5);
-- An error inside a savepoint is rolled back with it.
SAVEPOINT s6;
INSERT INTO xact_t VALUES ('x5', 50), (NULL, 60);
ROLLBACK TO SAVEPOINT s6;
SELECT * FROM xact_t ORDER BY id;
-- So is a plpgsql block that catches an error.
DO $$
BEGIN
  INSERT INTO xact_t VALUES ('f', 6);
  BEGIN
    INSERT INTO xact_t VALUES ('x6', 60);
    RAISE EXCEPTION 'undo x6';
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'caught: %', SQLERRM;
  END;
END $$;
COMMIT;
SELECT * FROM xact_t ORDER BY id;
-- Two commits reached the store, one per transaction that wrote rows.
SELECT s -> 'acked_transactions' AS transactions, s -> 'acked_rows' AS acked_rows
FROM ctxstore.stats('xact_t') s;

-- Read-your-writes in plpgsql, cursors and self-referencing inserts: a
-- statement does not read the rows it inserts itself.
BEGIN;
INSERT INTO xact_t SELECT id || '2', n + 100 FROM xact_t;
SELECT count(*) FROM xact_t;
DECLARE c CURSOR FOR SELECT id FROM xact_t;
FETCH 2 FROM c;
INSERT INTO xact_t VALUES ('late', 6);
FETCH ALL FROM c;
CLOSE c;
DO $$
BEGIN
  INSERT INTO xact_t VALUES ('g', 7);
  RAISE NOTICE 'rows now: %', (SELECT count(*) FROM xact_t);
END $$;
ROLLBACK;
SELECT count(*) FROM xact_t;

-- RETURNING, multi-row inserts (batched), COPY FROM.
INSERT INTO xact_t VALUES ('h', 8) RETURNING *;
INSERT INTO xact_t SELECT 'batch' || i, i FROM generate_series(1, 1000) i;
COPY xact_t FROM STDIN;
copy1	1
copy2	\N
\.
SELECT count(*), sum(n), count(*) FILTER (WHERE n IS NULL) AS nulls FROM xact_t;

-- Rows routed to a ctxstore partition, by INSERT and by COPY.
CREATE TABLE xact_parted (id text NOT NULL, n int) PARTITION BY RANGE (n);
CREATE TABLE xact_parted_heap PARTITION OF xact_parted FOR VALUES FROM (0) TO (100);
CREATE FOREIGN TABLE xact_parted_cx PARTITION OF xact_parted FOR VALUES FROM (100) TO (200)
  SERVER xact_srv OPTIONS (uri 'file://@store_root@/xact_parted');
INSERT INTO xact_parted VALUES ('heap', 1), ('cx1', 101), ('cx2', 102);
COPY xact_parted FROM STDIN;
cx3	103
heap2	2
\.
SELECT tableoid::regclass, * FROM xact_parted ORDER BY n;
DROP TABLE xact_parted;

-- Two tables, one transaction, one commit.
CREATE FOREIGN TABLE xact_u (id text, n int)
  SERVER xact_srv OPTIONS (uri 'file://@store_root@/xact_u');
BEGIN;
INSERT INTO xact_t VALUES ('i', 9);
INSERT INTO xact_u VALUES ('u', 1);
COMMIT;
SELECT (SELECT count(*) FROM xact_t) AS t_rows, (SELECT count(*) FROM xact_u) AS u_rows;

-- NOT NULL holds (foreign tables get no check from the executor).
INSERT INTO xact_t VALUES (NULL, 1);
\echo :LAST_ERROR_SQLSTATE

-- Two-phase commit cannot include ctxstore writes.
BEGIN;
INSERT INTO xact_t VALUES ('p', 1);
PREPARE TRANSACTION 'cx_xact';
\echo :LAST_ERROR_SQLSTATE
-- Rows rolled back to a savepoint do not count.
BEGIN;
SAVEPOINT s;
INSERT INTO xact_t VALUES ('p', 1);
ROLLBACK TO SAVEPOINT s;
PREPARE TRANSACTION 'cx_xact';
COMMIT PREPARED 'cx_xact';
SELECT count(*) FROM xact_t WHERE id = 'p';

-- A transaction may buffer at most ctxstore.max_transaction_bytes.
SHOW ctxstore.max_transaction_bytes;
SET ctxstore.max_transaction_bytes = '8kB';
BEGIN;
INSERT INTO xact_t VALUES ('big1', 1);
INSERT INTO xact_t VALUES (repeat('x', 9000), 2);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- The limit counts every table of the transaction.
BEGIN;
INSERT INTO xact_t SELECT repeat('x', 1000) || i, i FROM generate_series(1, 5) i;
INSERT INTO xact_u SELECT repeat('y', 1000) || i, i FROM generate_series(1, 5) i;
ROLLBACK;
SET ctxstore.max_transaction_bytes = '-1';
RESET ctxstore.max_transaction_bytes;

SELECT count(*) FROM xact_t;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
