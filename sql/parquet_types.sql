--
-- Values the fragment format cannot hold are refused when they are written,
-- in the backend, before anything reaches the writer: finite timestamps
-- beyond Unix microseconds in 64 bits, and NaN in a numeric(p,s) column
-- (stored as a DECIMAL).  numeric(p,s) records its precision and scale in
-- the store's schema.
--
CREATE EXTENSION ctxstore;
CREATE SERVER pt_srv FOREIGN DATA WRAPPER ctxstore;

CREATE FOREIGN TABLE pt_ts (k int, ts timestamp, tz timestamptz,
  a_ts timestamp[])
  SERVER pt_srv OPTIONS (uri 'file://@store_root@/pt/ts', key 'k');
-- The last storable microsecond, the infinities and the earliest value.
INSERT INTO pt_ts VALUES
  (1, '294247-01-10 04:00:54.775806', '294247-01-10 04:00:54.775806+00',
   '{294247-01-10 04:00:54.775806}'),
  (2, 'infinity', '-infinity', '{infinity,-infinity,NULL}'),
  (3, '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC', '{}');
-- One microsecond later is refused, in every timestamp column.
INSERT INTO pt_ts VALUES (4, '294247-01-10 04:00:54.775807', NULL, NULL);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO pt_ts VALUES (4, NULL, '294247-01-10 04:00:54.775807+00', NULL);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO pt_ts VALUES (4, NULL, NULL, '{2020-01-01,294276-12-31}');
\echo :LAST_ERROR_SQLSTATE
UPDATE pt_ts SET ts = '294276-12-31 23:59:59' WHERE k = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM pt_ts ORDER BY k;

CREATE FOREIGN TABLE pt_num (k int, d numeric(10,2), wide numeric(50,2),
  neg numeric(5,-2), free numeric, a_d numeric(10,2)[])
  SERVER pt_srv OPTIONS (uri 'file://@store_root@/pt/num', key 'k');
INSERT INTO pt_num VALUES (1, 12345678.9, 1.5, 12345, 'NaN', '{1.5,NULL}');
-- NaN has no DECIMAL form; columns stored as text (no typmod, p > 38,
-- negative scale) and arrays keep it.
INSERT INTO pt_num VALUES (2, 'NaN', NULL, NULL, NULL, NULL);
\echo :LAST_ERROR_SQLSTATE
UPDATE pt_num SET d = 'NaN' WHERE k = 1;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO pt_num VALUES (3, NULL, 'NaN', 'NaN', 'NaN', '{NaN}');
SELECT * FROM pt_num ORDER BY k;
-- The store records numeric(10,2): a table reading the column as plain
-- numeric does not match it, and IMPORT FOREIGN SCHEMA gives it back.
CREATE FOREIGN TABLE pt_num_plain (k int, d numeric)
  SERVER pt_srv OPTIONS (uri 'file://@store_root@/pt/num');
SELECT * FROM pt_num_plain;
\echo :LAST_ERROR_SQLSTATE
CREATE SCHEMA pt_imported;
IMPORT FOREIGN SCHEMA "file://@store_root@/pt" LIMIT TO (num)
  FROM SERVER pt_srv INTO pt_imported;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
  WHERE attrelid = 'pt_imported.num'::regclass AND attnum > 0 ORDER BY attnum;

SET client_min_messages = warning;
DROP SCHEMA pt_imported CASCADE;
DROP EXTENSION ctxstore CASCADE;
