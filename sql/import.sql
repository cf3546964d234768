--
-- IMPORT FOREIGN SCHEMA "<uri prefix>": one foreign table per store directly
-- below the prefix, with the store's columns.
--
CREATE EXTENSION ctxstore;
CREATE SERVER imp_srv FOREIGN DATA WRAPPER ctxstore;
CREATE TYPE imp_mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN imp_posint AS int4 CHECK (VALUE > 0);

-- Stores below one prefix, written through ordinary tables.
CREATE FOREIGN TABLE w_context (id text NOT NULL, session_id text,
  content text, metadata jsonb, embedding real[], created_at timestamptz)
  SERVER imp_srv OPTIONS (uri 'file://@store_root@/import/context');
CREATE FOREIGN TABLE w_types (id text, b bool, i2 int2, i4 imp_posint,
  i8 int8, f4 float4, f8 float8, num numeric(10,2), vc varchar(10),
  bc char(3), raw bytea, js json, jb jsonb, u uuid, d date, tm time,
  ts timestamp, tz timestamptz, iv interval, ip inet, mood imp_mood,
  moods imp_mood[], tags text[], "Mixed Case" int4,
  long_one text OPTIONS (column_name
    'a_store_column_whose_name_is_longer_than_sixty_three_bytes_and_so_on'))
  SERVER imp_srv OPTIONS (uri 'file://@store_root@/import/types');
CREATE FOREIGN TABLE w_spaced (id text, n int8)
  SERVER imp_srv OPTIONS (uri 'file://@store_root@/import/Spaced Store');
-- Deeper than directly below the prefix: not imported from it.
CREATE FOREIGN TABLE w_nested (id text)
  SERVER imp_srv OPTIONS (uri 'file://@store_root@/import/deeper/nested');
INSERT INTO w_context VALUES ('c1', 's1', 'hello', '{"k": 1}', '{0.5,NULL}',
  '2026-01-02 03:04:05+00');
INSERT INTO w_types VALUES ('t1', true, 1, 2, 3, 1.5, 2.5, 12.34, 'varchar',
  'ab', '\x00ff', '{"a": [1]}', '{"b": 2}',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2026-01-02', '03:04:05',
  '2026-01-02 03:04:05', '2026-01-02 03:04:05+00', '1 day 2 hours',
  '10.0.0.1/8', 'happy', '{sad,NULL,ok}', '{x,y}', 7, 'long');
INSERT INTO w_spaced VALUES ('s', 1);
INSERT INTO w_nested VALUES ('n');

-- The columns an imported table gets, and its options.
CREATE FUNCTION imp_columns(t regclass) RETURNS TABLE (col name, type text, options text[])
  LANGUAGE sql AS $$
    SELECT attname, format_type(atttypid, atttypmod), attfdwoptions
    FROM pg_attribute WHERE attrelid = t AND attnum > 0 AND NOT attisdropped
    ORDER BY attnum $$;
-- Table options except the key, which the write path records in the store
-- as it sees fit (checked separately below).
CREATE FUNCTION imp_tables(nsp text) RETURNS TABLE (tab name, server name, options text[])
  LANGUAGE sql AS $$
    SELECT c.relname, s.srvname,
           array(SELECT o FROM unnest(ft.ftoptions) o
                 WHERE o NOT LIKE 'key=%' AND o NOT LIKE 'unique_key=%')
    FROM pg_foreign_table ft JOIN pg_class c ON c.oid = ft.ftrelid
    JOIN pg_foreign_server s ON s.oid = ft.ftserver
    WHERE c.relnamespace = nsp::regnamespace ORDER BY 1 $$;

CREATE SCHEMA imp_all;
IMPORT FOREIGN SCHEMA "file://@store_root@/import" FROM SERVER imp_srv INTO imp_all;
SELECT * FROM imp_tables('imp_all');
SELECT * FROM imp_columns('imp_all.context');
SELECT * FROM imp_columns('imp_all.types');
-- A recorded key is the writer's key column (the default, id).
SELECT coalesce(bool_and(o IN ('key=id', 'unique_key=false')), true) AS key_ok
  FROM pg_foreign_table, unnest(ftoptions) o
  WHERE ftrelid::regclass::text LIKE 'imp_all.%' AND o LIKE '%key=%';

-- The imported tables read what was written.
SELECT * FROM imp_all.context;
SELECT (SELECT count(*) FROM (SELECT i::text FROM imp_all.types i
          EXCEPT SELECT w::text FROM w_types w) d) AS differing,
       (SELECT count(*) FROM imp_all.types) AS rows;
SELECT * FROM imp_all."Spaced Store";
-- ... and write to the same store.
INSERT INTO imp_all.context (id, content) VALUES ('c2', 'through the import');
SELECT id, content FROM w_context ORDER BY id;

-- LIMIT TO and EXCEPT pick stores by table name.
CREATE SCHEMA imp_some;
IMPORT FOREIGN SCHEMA "file://@store_root@/import" LIMIT TO (types, nosuch)
  FROM SERVER imp_srv INTO imp_some;
IMPORT FOREIGN SCHEMA "file://@store_root@/import" EXCEPT (types, "Spaced Store")
  FROM SERVER imp_srv INTO imp_some;
SELECT tab FROM imp_tables('imp_some');

-- A trailing slash is the same prefix; the store below it is the deeper one.
CREATE SCHEMA imp_deeper;
IMPORT FOREIGN SCHEMA "file://@store_root@/import/deeper/" FROM SERVER imp_srv
  INTO imp_deeper;
SELECT * FROM imp_tables('imp_deeper');
-- A prefix with no stores imports nothing.
IMPORT FOREIGN SCHEMA "file://@store_root@/import/nothing" FROM SERVER imp_srv
  INTO imp_deeper;
SELECT count(*) FROM imp_tables('imp_deeper');

-- The prefix can be given as an option, since a schema name is short.
CREATE SCHEMA imp_opt;
IMPORT FOREIGN SCHEMA anything FROM SERVER imp_srv INTO imp_opt
  OPTIONS (uri 'file://@store_root@/import');
SELECT count(*) FROM imp_tables('imp_opt');
IMPORT FOREIGN SCHEMA "file:///a/prefix/longer/than/a/schema/name/which/the/parser/cuts/short"
  FROM SERVER imp_srv INTO imp_opt;
\echo :LAST_ERROR_SQLSTATE
IMPORT FOREIGN SCHEMA x FROM SERVER imp_srv INTO imp_opt OPTIONS (prefix 'x');
\echo :LAST_ERROR_SQLSTATE
IMPORT FOREIGN SCHEMA "gs://bucket/x" FROM SERVER imp_srv INTO imp_opt;
IMPORT FOREIGN SCHEMA "s3://AKIAEXAMPLE:hunter2@bucket/x" FROM SERVER imp_srv INTO imp_opt;

-- A store written with a type that does not exist here cannot be imported.
CREATE TYPE imp_gone AS ENUM ('x');
CREATE FOREIGN TABLE w_gone (id text, g imp_gone)
  SERVER imp_srv OPTIONS (uri 'file://@store_root@/import_gone/gone');
INSERT INTO w_gone VALUES ('g', 'x');
DROP FOREIGN TABLE w_gone;
DROP TYPE imp_gone;
IMPORT FOREIGN SCHEMA "file://@store_root@/import_gone" FROM SERVER imp_srv
  INTO imp_opt;
-- Nor one whose type is a domain here (values were written as the type).
CREATE DOMAIN imp_gone AS text;
IMPORT FOREIGN SCHEMA "file://@store_root@/import_gone" FROM SERVER imp_srv
  INTO imp_opt;

-- Reading file:// stores takes pg_read_server_files, as for scans.
CREATE ROLE regress_cx_importer;
GRANT USAGE ON FOREIGN SERVER imp_srv TO regress_cx_importer;
GRANT CREATE ON SCHEMA imp_opt TO regress_cx_importer;
SET ROLE regress_cx_importer;
IMPORT FOREIGN SCHEMA x FROM SERVER imp_srv INTO imp_opt
  OPTIONS (uri 'file://@store_root@/import');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
DROP SCHEMA imp_all, imp_some, imp_deeper, imp_opt CASCADE;
DROP ROLE regress_cx_importer;
DROP TYPE imp_mood CASCADE;
DROP DOMAIN imp_posint, imp_gone;
