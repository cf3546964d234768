--
-- What an INSERT checks in the backend: a key live in the transaction or
-- repeated in the statement fails with 23505 under unique_key 'true', is
-- skipped by ON CONFLICT DO NOTHING (the command tag counts the rows
-- inserted), and replaces the row under unique_key 'false'.  upsert_key
-- names a column of the table other than the key.
--
CREATE EXTENSION ctxstore;
CREATE SERVER kinds_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE kinds_t (id text, n int)
  SERVER kinds_srv OPTIONS (uri 'file://@store_root@/kinds');

-- Repeated in one statement, in one transaction, in a batch or in COPY.
INSERT INTO kinds_t VALUES ('a', 1), ('a', 2);
\echo :LAST_ERROR_SQLSTATE
BEGIN;
INSERT INTO kinds_t VALUES ('a', 1);
INSERT INTO kinds_t VALUES ('a', 2);
ROLLBACK;
INSERT INTO kinds_t SELECT 'k' || (i % 70), i FROM generate_series(1, 100) i;
COPY kinds_t FROM STDIN;
c	1
c	2
\.
SELECT count(*) FROM kinds_t;
-- A key deleted in the transaction may come back; one rolled back to a
-- savepoint is no longer there.
BEGIN;
INSERT INTO kinds_t VALUES ('b', 1);
DELETE FROM kinds_t WHERE id = 'b';
INSERT INTO kinds_t VALUES ('b', 2);
SAVEPOINT s1;
INSERT INTO kinds_t VALUES ('d', 1);
ROLLBACK TO SAVEPOINT s1;
INSERT INTO kinds_t VALUES ('d', 2);
COMMIT;
SELECT * FROM kinds_t ORDER BY id;

-- ON CONFLICT DO NOTHING skips keys pending in the transaction or repeated
-- in the statement.
BEGIN;
INSERT INTO kinds_t VALUES ('e', 1);
INSERT INTO kinds_t VALUES ('e', 2), ('f', 1), ('f', 2), ('g', 1)
  ON CONFLICT DO NOTHING;
\echo :ROW_COUNT
INSERT INTO kinds_t SELECT 'h' || (i % 3), i FROM generate_series(1, 100) i
  ON CONFLICT DO NOTHING;
\echo :ROW_COUNT
INSERT INTO kinds_t VALUES ('g', 2) ON CONFLICT DO NOTHING RETURNING *;
INSERT INTO kinds_t VALUES ('i', 1) ON CONFLICT DO NOTHING RETURNING *;
SELECT * FROM kinds_t WHERE id >= 'e' ORDER BY id;
COMMIT;
-- ON CONFLICT DO UPDATE needs a unique index, which foreign tables lack.
INSERT INTO kinds_t VALUES ('e', 3) ON CONFLICT (id) DO UPDATE SET n = 3;

-- unique_key 'false': a later insert replaces the row.
CREATE FOREIGN TABLE kinds_r (id text, n int)
  SERVER kinds_srv OPTIONS (uri 'file://@store_root@/kinds_r', unique_key 'false');
BEGIN;
INSERT INTO kinds_r VALUES ('a', 1), ('a', 2);
INSERT INTO kinds_r VALUES ('a', 3);
SELECT * FROM kinds_r;
ROLLBACK;

-- upsert_key names a column of the table, not its key.
CREATE FOREIGN TABLE kinds_u (id text, external_id text, n int)
  SERVER kinds_srv OPTIONS (uri 'file://@store_root@/kinds_u',
                            upsert_key 'external');
INSERT INTO kinds_u VALUES ('a', 'x1', 1);
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE kinds_u OPTIONS (SET upsert_key 'id');
INSERT INTO kinds_u VALUES ('a', 'x1', 1);
ALTER FOREIGN TABLE kinds_u OPTIONS (SET upsert_key '');
ALTER FOREIGN TABLE kinds_u OPTIONS (SET upsert_key 'external_id');
SELECT ftoptions FROM pg_foreign_table WHERE ftrelid = 'kinds_u'::regclass;
-- Not yet resolved by the writer: an upsert is sent as a plain new row,
-- and repeats within a transaction are left to the writer.
INSERT INTO kinds_u VALUES ('a', 'x1', 1);
SELECT * FROM kinds_u;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
