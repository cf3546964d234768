--
-- ALTER FOREIGN TABLE changes the store's columns through field ids: ADD
-- COLUMN (older rows read NULL), RENAME COLUMN (keeps the data), DROP COLUMN
-- (a later ADD of the name is a new column), widening ALTER COLUMN TYPE;
-- other type changes and changes of the key are refused at ALTER time.
-- Every change is an "alter schema" version of the store.
--
CREATE EXTENSION ctxstore;
CREATE SERVER se_srv FOREIGN DATA WRAPPER ctxstore;

CREATE FOREIGN TABLE se (id text, n int2, f float4, note text)
  SERVER se_srv OPTIONS (uri 'file://@store_root@/se', merge_after_generations '0',
                         flush_interval '1h', cleanup_interval '0');
INSERT INTO se VALUES ('a', 1, 1.5, 'merged'), ('b', -32768, -0.25, 'merged');
SELECT ctxstore.merge_wal('se');
INSERT INTO se VALUES ('c', 32767, 3.5, 'pending');

-- ADD: rows written before read NULL, before and after a merge.
ALTER FOREIGN TABLE se ADD COLUMN extra text;
INSERT INTO se VALUES ('d', 4, 4.5, 'new', 'set');
SELECT * FROM se ORDER BY id;
SELECT ctxstore.merge_wal('se');
SELECT * FROM se ORDER BY id;
UPDATE se SET extra = 'updated' WHERE id = 'a';
SELECT id, extra FROM se ORDER BY id;

-- RENAME: the column keeps its data under the new name.
ALTER FOREIGN TABLE se RENAME COLUMN note TO remark;
SELECT id, remark FROM se ORDER BY id;
-- Another table of the store still using the old name no longer matches.
CREATE FOREIGN TABLE se_old (id text, note text)
  SERVER se_srv OPTIONS (uri 'file://@store_root@/se');
SELECT * FROM se_old;
\echo :LAST_ERROR_SQLSTATE
-- A column mapped with column_name keeps its store column when renamed.
CREATE FOREIGN TABLE se_mapped (id text, r text OPTIONS (column_name 'remark'))
  SERVER se_srv OPTIONS (uri 'file://@store_root@/se');
ALTER FOREIGN TABLE se_mapped RENAME COLUMN r TO r2;
SELECT id, r2 FROM se_mapped ORDER BY id;
SELECT id, remark FROM se WHERE id = 'a';

-- Widening: int2 -> int8 and float4 -> float8 read the old values.
ALTER FOREIGN TABLE se ALTER COLUMN n TYPE int8, ALTER COLUMN f TYPE float8;
INSERT INTO se VALUES ('e', 9000000000, 1e300, 'wide', NULL);
SELECT id, n, f FROM se ORDER BY id;
SELECT ctxstore.merge_wal('se');
SELECT id, n, f FROM se ORDER BY id;

-- Any other type change is refused, and the table keeps its type.
ALTER FOREIGN TABLE se ALTER COLUMN remark TYPE int;
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE se ALTER COLUMN n TYPE int4;
\echo :LAST_ERROR_SQLSTATE
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'se'::regclass AND attname = 'remark';

-- DROP: the store stops reading it; adding the name again is a new column
-- (old values do not come back).
ALTER FOREIGN TABLE se DROP COLUMN extra;
SELECT * FROM se ORDER BY id;
ALTER FOREIGN TABLE se ADD COLUMN extra text;
SELECT id, extra FROM se ORDER BY id;

-- The key column cannot be dropped, renamed or retyped.
ALTER FOREIGN TABLE se DROP COLUMN id;
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE se RENAME COLUMN id TO ident;
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE se ALTER COLUMN id TYPE varchar(10);
SELECT id FROM se ORDER BY id LIMIT 1;

-- The store's versions record every change: ADD, RENAME, both widenings
-- (one statement), DROP, ADD; the refused ones and the no-ops are not there.
SELECT count(*) FROM ctxstore.versions('se') WHERE operation = 'alter schema';
-- Each one gave the store the next schema id (1 was its first schema).
SELECT ctxstore.stats('se') -> 'schema_id' AS schema_id;

-- The change is made at ALTER time, outside the transaction: a transaction
-- that buffered rows for the table cannot write them after its ALTER, and
-- its rollback leaves the store with the column, which the table does not
-- read; running the ALTER again is a no-op for the store.
BEGIN;
INSERT INTO se VALUES ('f', 6, 6, 'txn', NULL);
ALTER FOREIGN TABLE se ADD COLUMN later int;
INSERT INTO se VALUES ('g', 7, 7, 'txn', NULL, 7);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT id, extra FROM se ORDER BY id;
ALTER FOREIGN TABLE se ADD COLUMN later int;
SELECT id, later FROM se ORDER BY id LIMIT 1;
SELECT count(*) FROM ctxstore.versions('se') WHERE operation = 'alter schema';

-- A store never written to takes its columns from its first write.
CREATE FOREIGN TABLE se_empty (id text, n int)
  SERVER se_srv OPTIONS (uri 'file://@store_root@/se_empty');
ALTER FOREIGN TABLE se_empty ALTER COLUMN n TYPE text, ADD COLUMN m int;
INSERT INTO se_empty VALUES ('a', 'x', 1);
SELECT * FROM se_empty;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
