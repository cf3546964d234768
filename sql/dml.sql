--
-- UPDATE, DELETE and RETURNING: the key is the row identity; an UPDATE
-- buffers the whole new row, a DELETE a tombstone; a transaction reads its
-- own changes (its rows shadow committed rows of the same key); ROLLBACK and
-- rolled-back savepoints leave nothing.
--
CREATE EXTENSION ctxstore;
CREATE SERVER dml_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE dml_t (id text, session_id text, n int, note text)
  SERVER dml_srv OPTIONS (uri 'file://@store_root@/dml');
INSERT INTO dml_t VALUES ('a', 's1', 1, 'one'), ('b', 's1', 2, 'two'),
  ('c', 's2', 3, 'three');

-- UPDATE replaces the whole row; unchanged columns keep their values.
UPDATE dml_t SET n = n * 10 WHERE session_id = 's1';
SELECT * FROM dml_t ORDER BY id;
-- DELETE leaves a tombstone; the row is gone.
DELETE FROM dml_t WHERE id = 'b';
SELECT * FROM dml_t ORDER BY id;

-- RETURNING of INSERT, UPDATE and DELETE.
INSERT INTO dml_t VALUES ('d', 's2', 4, 'four') RETURNING id, n;
UPDATE dml_t SET note = upper(note) WHERE id = 'd' RETURNING *;
DELETE FROM dml_t WHERE session_id = 's2' RETURNING id, note, n;
SELECT * FROM dml_t ORDER BY id;

-- The key cannot change: DELETE and INSERT instead.
UPDATE dml_t SET id = 'z' WHERE id = 'a';
\echo :LAST_ERROR_SQLSTATE
UPDATE dml_t SET id = id;

-- Read-your-writes: an updated or deleted row shows its newest version
-- once, a re-inserted key once, a deleted key not at all.
BEGIN;
INSERT INTO dml_t VALUES ('e', 's3', 5, 'five');
UPDATE dml_t SET n = 11 WHERE id = 'a';
UPDATE dml_t SET n = 12 WHERE id = 'a';
UPDATE dml_t SET n = 55 WHERE id = 'e';
DELETE FROM dml_t WHERE id = 'a';
SELECT * FROM dml_t ORDER BY id;
INSERT INTO dml_t VALUES ('a', 's1', 13, 'again');
SELECT * FROM dml_t ORDER BY id;
DELETE FROM dml_t WHERE id = 'e';
SELECT count(*) FROM dml_t;
SAVEPOINT s1;
DELETE FROM dml_t;
SELECT count(*) FROM dml_t;
ROLLBACK TO SAVEPOINT s1;
SELECT * FROM dml_t ORDER BY id;
ROLLBACK;
SELECT * FROM dml_t ORDER BY id;

-- With unique_key 'false' a later insert replaces the row: the transaction
-- sees its newest version only.
CREATE FOREIGN TABLE dml_replace (id text, n int)
  SERVER dml_srv OPTIONS (uri 'file://@store_root@/dml_replace', unique_key 'false');
BEGIN;
INSERT INTO dml_replace VALUES ('r', 1), ('q', 1);
INSERT INTO dml_replace VALUES ('r', 2);
INSERT INTO dml_replace VALUES ('r', 3), ('q', 2);
SELECT * FROM dml_replace ORDER BY id;
ROLLBACK;

BEGIN;
UPDATE dml_t SET note = 'committed' WHERE id = 'a';
INSERT INTO dml_t VALUES ('f', 's4', 6, 'six');
DELETE FROM dml_t WHERE id = 'f';
COMMIT;
SELECT * FROM dml_t ORDER BY id;

-- A table without its key column can neither UPDATE nor DELETE.
CREATE FOREIGN TABLE dml_nokey (session_id text, n int)
  SERVER dml_srv OPTIONS (uri 'file://@store_root@/dml');
DELETE FROM dml_nokey;
UPDATE dml_nokey SET n = 0;
SELECT * FROM dml_nokey ORDER BY n;

-- RETURNING of a column the store lacks: the table cannot write at all.
CREATE FOREIGN TABLE dml_extra (id text, session_id text, n int, note text,
  extra int) SERVER dml_srv OPTIONS (uri 'file://@store_root@/dml');
DELETE FROM dml_extra WHERE id = 'a' RETURNING extra;
UPDATE dml_extra SET n = 1 RETURNING extra;
SELECT * FROM dml_t ORDER BY id;

-- A DELETE of 100,000 rows buffers key-only tombstones: it fits a
-- transaction limit that the same rows in full (an UPDATE) would not.
CREATE FOREIGN TABLE dml_big (id text, session_id text, payload text)
  SERVER dml_srv OPTIONS (uri 'file://@store_root@/dml_big');
INSERT INTO dml_big SELECT 'k' || i, 'big', repeat('x', 100)
  FROM generate_series(1, 100000) i;
SET ctxstore.max_transaction_bytes = '3MB';
BEGIN;
UPDATE dml_big SET session_id = 'big2' WHERE session_id = 'big';
ROLLBACK;
DELETE FROM dml_big WHERE session_id = 'big';
SELECT count(*) FROM dml_big;
RESET ctxstore.max_transaction_bytes;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
