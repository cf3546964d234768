--
-- A backend that knows a store's schema and key (recorded by its first
-- writer, never changed afterwards) does not read the store's manifest again
-- for every INSERT; the checks against that schema and key still happen.
--
CREATE EXTENSION ctxstore;
CREATE SERVER insc_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE insc_t (id text NOT NULL, n int)
  SERVER insc_srv OPTIONS (uri 'file://@store_root@/insert_cache');
-- The first write records the schema and key; the second caches them.
INSERT INTO insc_t VALUES ('a', 0);
INSERT INTO insc_t VALUES ('b', 0);

-- What one stats() call reads by itself, between two of them.
SELECT (ctxstore.stats('insc_t') -> 'backend_reads' ->> 'gets')::bigint AS g0 \gset
SELECT (ctxstore.stats('insc_t') -> 'backend_reads' ->> 'gets')::bigint AS g1 \gset
-- 50 single-row INSERT transactions (not echoed).
\set ECHO none
SELECT format('INSERT INTO insc_t VALUES (%L, %s)', 'k' || g, g)
  FROM generate_series(1, 50) g \gexec
\set ECHO all
SELECT (ctxstore.stats('insc_t') -> 'backend_reads' ->> 'gets')::bigint AS g2 \gset
-- Loading the manifest takes a GET, so without the cache the inserts made at
-- least 50; with it none (the margin is for a stats() call's own reads).
SELECT :g2 - :g1 - (:g1 - :g0) < 50 AS inserts_read_few,
       :g2 - :g1 - (:g1 - :g0) < 3 AS inserts_read_nothing;
SELECT count(*) FROM insc_t;

-- Tables that do not fit the cached schema or key still fail at INSERT.
CREATE FOREIGN TABLE insc_extra (id text, n int, extra int)
  SERVER insc_srv OPTIONS (uri 'file://@store_root@/insert_cache');
INSERT INTO insc_extra VALUES ('x', 1, 1);
CREATE FOREIGN TABLE insc_type (id text, n text)
  SERVER insc_srv OPTIONS (uri 'file://@store_root@/insert_cache');
INSERT INTO insc_type VALUES ('x', '1');
CREATE FOREIGN TABLE insc_key (id text, n int)
  SERVER insc_srv OPTIONS (uri 'file://@store_root@/insert_cache', key 'n');
INSERT INTO insc_key VALUES ('x', 1);
CREATE FOREIGN TABLE insc_unique (id text, n int)
  SERVER insc_srv OPTIONS (uri 'file://@store_root@/insert_cache', unique_key 'false');
INSERT INTO insc_unique VALUES ('x', 1);
-- A table with fewer columns writes NULL for the rest, as before.
CREATE FOREIGN TABLE insc_narrow (id text)
  SERVER insc_srv OPTIONS (uri 'file://@store_root@/insert_cache');
INSERT INTO insc_narrow VALUES ('narrow');
SELECT * FROM insc_t WHERE id IN ('a', 'narrow') ORDER BY id;
-- After those errors (an abort drops the cache) one INSERT reads the
-- manifest again and the following ones do not.
INSERT INTO insc_t VALUES ('c', 3);
SELECT (ctxstore.stats('insc_t') -> 'backend_reads' ->> 'gets')::bigint AS g3 \gset
SELECT (ctxstore.stats('insc_t') -> 'backend_reads' ->> 'gets')::bigint AS g4 \gset
\set ECHO none
SELECT format('INSERT INTO insc_t VALUES (%L, %s)', 'm' || g, g)
  FROM generate_series(1, 20) g \gexec
\set ECHO all
SELECT (ctxstore.stats('insc_t') -> 'backend_reads' ->> 'gets')::bigint AS g5 \gset
SELECT :g5 - :g4 - (:g4 - :g3) < 3 AS still_cached;
SELECT count(*) FROM insc_t;

-- What a write knows of its table (its options, columns and write
-- settings) is cached by the backend too; an ALTER in between takes effect
-- at the session's next write.
CREATE FOREIGN TABLE insc_alt (id text NOT NULL, n int)
  SERVER insc_srv OPTIONS (uri 'file://@store_root@/insert_cache_a');
INSERT INTO insc_alt VALUES ('a1', 1);
-- A table option: the next row goes to the other store.
ALTER FOREIGN TABLE insc_alt OPTIONS (SET uri 'file://@store_root@/insert_cache_b');
INSERT INTO insc_alt VALUES ('b1', 1);
SELECT * FROM insc_alt ORDER BY id;
ALTER FOREIGN TABLE insc_alt OPTIONS (SET uri 'file://@store_root@/insert_cache_a');
SELECT * FROM insc_alt ORDER BY id;
-- A write setting: an upsert_key naming no column fails the next write.
ALTER FOREIGN TABLE insc_alt OPTIONS (ADD upsert_key 'nothing');
INSERT INTO insc_alt VALUES ('a2', 2);
ALTER FOREIGN TABLE insc_alt OPTIONS (DROP upsert_key);
-- A column: the next row has it.
ALTER FOREIGN TABLE insc_alt ADD COLUMN extra int;
INSERT INTO insc_alt VALUES ('a3', 3, 33);
SELECT * FROM insc_alt ORDER BY id;

DROP EXTENSION ctxstore CASCADE;
