--
-- Without shared_preload_libraries there is no writer worker: the extension
-- installs and reads, and every write fails with a hint saying what to set.
--
CREATE EXTENSION ctxstore;
CREATE SERVER nopreload_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE nopreload_t (id text, n int)
  SERVER nopreload_srv OPTIONS (uri 'file://@store_root@/nopreload');

SELECT * FROM nopreload_t;
SELECT ctxstore.stats('nopreload_t') -> 'rows' AS rows,
       ctxstore.stats('nopreload_t') -> 'acked_transactions' AS acked;

INSERT INTO nopreload_t VALUES ('a', 1);
\echo :LAST_ERROR_SQLSTATE
COPY nopreload_t FROM STDIN;
b	2
\.

-- EXPLAIN alone writes nothing, so it works.
EXPLAIN (COSTS OFF) INSERT INTO nopreload_t VALUES ('a', 1);

SELECT count(*) FROM nopreload_t;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
