--
-- Options of a shared store.  Every table on a store shares its store-level
-- options (key, merge, cleanup, flush, limits, compression): a table that
-- sets one must agree with any other table that set it, and a table that
-- leaves it out takes the store's.  seal_on_insert is each table's own.
--
CREATE EXTENSION ctxstore;
CREATE SERVER so_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE so_a (id text, n int) SERVER so_srv
  OPTIONS (uri 'file://@store_root@/so', merge_after_generations '0',
           cleanup_interval '0', flush_interval '1h');
CREATE FOREIGN TABLE so_b (id text, n int) SERVER so_srv
  OPTIONS (uri 'file://@store_root@/so', pending_generations_max '3');
CREATE FOREIGN TABLE so_c (id text, n int) SERVER so_srv
  OPTIONS (uri 'file://@store_root@/so', pending_generations_max '5');
CREATE FOREIGN TABLE so_d (id text, n int) SERVER so_srv
  OPTIONS (uri 'file://@store_root@/so', seal_on_insert 'false');

INSERT INTO so_a VALUES ('a1', 1);
-- so_b sets the store's limit; it takes merge_after_generations 0 from so_a
-- (it would merge at 8 otherwise, which would hide what follows).
INSERT INTO so_b VALUES ('b1', 1);
-- so_c contradicts so_b about a store option: refused, nothing written.
INSERT INTO so_c VALUES ('c1', 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO so_a VALUES ('a2', 1);
SELECT ctxstore.pending_wal_generations('so_a');
-- The limit is the store's, so it holds for so_a and so_b alike (54000).
\set VERBOSITY terse
INSERT INTO so_a VALUES ('a3', 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO so_b VALUES ('b2', 1);
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT id FROM so_a ORDER BY id;
SELECT ctxstore.merge_wal('so_a');
INSERT INTO so_a VALUES ('a3', 1);
-- seal_on_insert is the table's own: so_d's rows wait in the WAL.
INSERT INTO so_d VALUES ('d1', 1);
SELECT id FROM so_b ORDER BY id;
SELECT ctxstore.flush('so_a')->'sealed_rows' AS sealed_rows;
-- A table that agrees, or leaves the option out, writes; the owner may
-- change its value.
ALTER FOREIGN TABLE so_c OPTIONS (SET pending_generations_max '3');
INSERT INTO so_c VALUES ('c1', 1);
ALTER FOREIGN TABLE so_b OPTIONS (SET pending_generations_max '100');
INSERT INTO so_b VALUES ('b2', 1);
INSERT INTO so_c VALUES ('c2', 1);
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE so_c OPTIONS (DROP pending_generations_max);
INSERT INTO so_c VALUES ('c2', 1);
SELECT id FROM so_d ORDER BY id;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
