--
-- A store's schema comes from the first table that writes to it; other
-- tables bound to the store are matched by column name.
--
CREATE EXTENSION ctxstore;
CREATE SERVER schema_srv FOREIGN DATA WRAPPER ctxstore;

CREATE FOREIGN TABLE schema_a (id text, n int, note text)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema');
INSERT INTO schema_a VALUES ('a', 1, 'first');

-- A table column the store lacks: an error on read and on write.
CREATE FOREIGN TABLE schema_missing (id text, n int, extra text)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema');
SELECT * FROM schema_missing;
\echo :LAST_ERROR_SQLSTATE
SELECT id FROM schema_missing;
INSERT INTO schema_missing VALUES ('b', 2, 'x');
\echo :LAST_ERROR_SQLSTATE

-- A column whose type maps to another engine type.
CREATE FOREIGN TABLE schema_type (id text, n bigint)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema');
SELECT * FROM schema_type;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO schema_type VALUES ('b', 2);
\echo :LAST_ERROR_SQLSTATE
CREATE FOREIGN TABLE schema_json (id text, note jsonb)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema');
SELECT * FROM schema_json;

-- Types that share an engine type match: varchar reads a text column.
CREATE FOREIGN TABLE schema_varchar (id varchar(5), n int)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema');
SELECT * FROM schema_varchar;

-- Fewer columns: store columns the table lacks are not read, and are
-- written as NULL.
CREATE FOREIGN TABLE schema_subset (n int, id text)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema');
SELECT * FROM schema_subset;
INSERT INTO schema_subset VALUES (2, 'b');
SELECT * FROM schema_a ORDER BY id;

-- column_name maps a table column to a differently named store column.
CREATE FOREIGN TABLE schema_renamed (ident text OPTIONS (column_name 'id'),
                                     remark text OPTIONS (column_name 'note'))
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema');
INSERT INTO schema_renamed VALUES ('c', 'via column_name');
SELECT * FROM schema_renamed ORDER BY ident;
SELECT * FROM schema_a ORDER BY id;

-- A store's column names come from column_name at its first write.
CREATE FOREIGN TABLE schema_first (k int OPTIONS (column_name 'key'), v text)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema_first', key 'key');
INSERT INTO schema_first VALUES (1, 'one');
CREATE FOREIGN TABLE schema_first_plain (key int, v text)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema_first');
SELECT * FROM schema_first_plain;
CREATE FOREIGN TABLE schema_first_k (k int, v text)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema_first');
SELECT * FROM schema_first_k;

-- Dropped columns are not part of the schema; adding one back to the table
-- adds it to the store (sql/schema_evolution.sql has the rest).
CREATE FOREIGN TABLE schema_dropped (id text, gone int, n int)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema_dropped');
ALTER FOREIGN TABLE schema_dropped DROP COLUMN gone;
INSERT INTO schema_dropped VALUES ('a', 1);
ALTER FOREIGN TABLE schema_dropped ADD COLUMN gone int;
SELECT * FROM schema_dropped;
ALTER FOREIGN TABLE schema_dropped DROP COLUMN gone;
SELECT * FROM schema_dropped;

-- Two tables creating one new store in one transaction with different
-- columns: the table written first sets the schema, the other one's rows are
-- refused at COMMIT, and so is the whole transaction: the writer resolves
-- every request of it before it appends any, so nothing of it lands.
CREATE FOREIGN TABLE schema_race1 (id text, n int)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema_race');
CREATE FOREIGN TABLE schema_race2 (id text, s text)
  SERVER schema_srv OPTIONS (uri 'file://@store_root@/schema_race');
BEGIN;
INSERT INTO schema_race1 VALUES ('a', 1);
INSERT INTO schema_race2 VALUES ('b', 'x');
COMMIT;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM schema_race1;
SELECT * FROM schema_race2;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
