--
-- One store, one identity: every spelling of a store URI names the same
-- store, so the writer keeps one resident writer (one shard claim) for it
-- and EXPLAIN and stats show its canonical URI.
--
CREATE EXTENSION ctxstore;
CREATE SERVER id_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE id_plain (id text, n int) SERVER id_srv
  OPTIONS (uri 'file://@store_root@/id_ts',
           merge_after_generations '0', cleanup_interval '0');
CREATE FOREIGN TABLE id_slash (id text, n int) SERVER id_srv
  OPTIONS (uri 'file://@store_root@/id_ts/',
           merge_after_generations '0', cleanup_interval '0');
CREATE FOREIGN TABLE id_dot (id text, n int) SERVER id_srv
  OPTIONS (uri 'file://@store_root@/./id_ts',
           merge_after_generations '0', cleanup_interval '0');
CREATE FOREIGN TABLE id_double (id text, n int) SERVER id_srv
  OPTIONS (uri 'FILE://@store_root@//id_ts',
           merge_after_generations '0', cleanup_interval '0');

-- Ten inserts alternating between the four spellings all commit: a second
-- resident writer for the same store would fence the first.
SELECT format('INSERT INTO %I VALUES (%L, %s)',
              (ARRAY['id_plain', 'id_slash', 'id_dot', 'id_double'])[i % 4 + 1],
              'k' || i, i)
  FROM generate_series(1, 10) i \gexec
SELECT count(*), count(DISTINCT id), sum(n) FROM id_plain;
SELECT count(*) FROM id_double;

-- One claim, one store URI, whatever the spelling asked about.
SELECT s->>'uri' = 'file://@store_root@/id_ts' AS canonical,
       s->'writer'->>'claims' AS claims,
       s->'writer'->>'fenced' AS fenced
  FROM (SELECT ctxstore.stats('id_double') AS s) q;
EXPLAIN (COSTS OFF) SELECT * FROM id_dot;
SELECT last_error IS NULL OR last_error NOT LIKE '%id_ts%' AS no_store_error
  FROM ctxstore.workers WHERE kind = 'writer';
SELECT u FROM ctxstore.workers, unnest(store_uris) u
  WHERE kind = 'writer' AND u LIKE '%id_ts%';

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
