--
-- ctxstore.create_id_index(t): builds or extends the store's key index and
-- says what it did; the rows read the same with the index as without; a
-- pinned table is refused (25006), and so is a role that does not own the
-- table.
--
CREATE EXTENSION ctxstore;
CREATE SERVER id_index_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE id_index (id text, n int) SERVER id_index_srv
  OPTIONS (uri 'file://@store_root@/id_index', merge_after_generations '0');

-- An empty store: nothing to index.
SELECT ctxstore.create_id_index('id_index');

INSERT INTO id_index SELECT 'k' || g, g FROM generate_series(1, 100) g;
SELECT ctxstore.merge_wal('id_index') > 0 AS merged;
-- The maintenance worker indexes after a merge too, so either call may do
-- the work; once both are done, nothing is left.
SELECT (ctxstore.create_id_index('id_index')->>'base_version') IS NOT NULL AS indexed;
SELECT ctxstore.create_id_index('id_index');
SELECT operation FROM ctxstore.versions('id_index') ORDER BY version DESC LIMIT 1;
SELECT count(*), sum(n) FROM id_index;
SELECT n FROM id_index WHERE id = 'k42';

-- The maintenance worker indexes after each merge by itself (waited for
-- up to 30 s).
CREATE FOREIGN TABLE id_index_auto (id text, n int) SERVER id_index_srv
  OPTIONS (uri 'file://@store_root@/id_index_auto', merge_after_generations '0');
INSERT INTO id_index_auto VALUES ('a', 1), ('b', 2);
SELECT ctxstore.merge_wal('id_index_auto') > 0 AS merged;
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXIT WHEN (SELECT operation FROM ctxstore.versions('id_index_auto')
               ORDER BY version DESC LIMIT 1) = 'index';
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT operation FROM ctxstore.versions('id_index_auto') ORDER BY version DESC LIMIT 1;
SELECT ctxstore.create_id_index('id_index_auto')->>'segments_written' AS left_to_do;

-- With an upsert_key the worker indexes that column too: nothing is left.
CREATE FOREIGN TABLE id_index_upsert (id text, ext text) SERVER id_index_srv
  OPTIONS (uri 'file://@store_root@/id_index_upsert', merge_after_generations '0',
           upsert_key 'ext');
INSERT INTO id_index_upsert VALUES ('a', 'x'), ('b', 'y');
SELECT ctxstore.merge_wal('id_index_upsert') > 0 AS merged;
SELECT ctxstore.create_id_index('id_index_upsert')->>'segments_written' AS left_to_do;

-- A pinned table is read-only.
CREATE FOREIGN TABLE id_index_pinned (id text, n int) SERVER id_index_srv
  OPTIONS (uri 'file://@store_root@/id_index', version '1');
SELECT ctxstore.create_id_index('id_index_pinned');
\echo :LAST_ERROR_SQLSTATE

-- Ownership comes first.
CREATE ROLE id_index_user;
GRANT SELECT ON id_index TO id_index_user;
SET ROLE id_index_user;
SELECT ctxstore.create_id_index('id_index');
RESET ROLE;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
DROP ROLE id_index_user;
