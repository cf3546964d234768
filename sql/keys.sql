--
-- Keys: every row has one.  A NULL key is refused (23502) whether it comes
-- from INSERT, a multi-row INSERT or COPY, and nothing of the statement is
-- written; NULLs elsewhere are fine.
--
CREATE EXTENSION ctxstore;
CREATE SERVER keys_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE keys_t (id text, note text) SERVER keys_srv
  OPTIONS (uri 'file://@store_root@/keys', merge_after_generations '0');
INSERT INTO keys_t VALUES (NULL, 'no key');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO keys_t VALUES ('a', NULL), (NULL, 'second row'), ('c', 'third');
INSERT INTO keys_t (note) VALUES ('key left out');
COPY keys_t FROM STDIN;
b	from copy
\N	copy row without a key
\.
SELECT count(*) FROM keys_t;
INSERT INTO keys_t VALUES ('a', NULL), ('b', 'fine');
SELECT id, note FROM keys_t ORDER BY id;

-- The key is the store column the key option names.
CREATE FOREIGN TABLE keys_s (id text, session_id text) SERVER keys_srv
  OPTIONS (uri 'file://@store_root@/keys_s', key 'session_id');
INSERT INTO keys_s VALUES ('x', NULL);
INSERT INTO keys_s VALUES (NULL, 's1');
SELECT * FROM keys_s;

-- Keys are told apart by their stored bytes: a type whose equal values can
-- differ in bytes cannot be a key, and nothing is written.
CREATE FOREIGN TABLE keys_float (id float8, v text) SERVER keys_srv
  OPTIONS (uri 'file://@store_root@/keys_float');
INSERT INTO keys_float VALUES (0, 'zero');
CREATE FOREIGN TABLE keys_numeric (id numeric, v text) SERVER keys_srv
  OPTIONS (uri 'file://@store_root@/keys_numeric');
INSERT INTO keys_numeric VALUES (1.0, 'one');
CREATE FOREIGN TABLE keys_array (id int[], v text) SERVER keys_srv
  OPTIONS (uri 'file://@store_root@/keys_array');
INSERT INTO keys_array VALUES ('{1}', 'one');
SELECT count(*) FROM keys_float;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
