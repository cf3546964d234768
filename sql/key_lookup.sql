--
-- Key lookups: a qual naming keys (key = value, key = ANY (array), key IN
-- (list); constants, parameters, stable expressions) makes the scan read
-- only the row groups holding those keys; EXPLAIN shows the key path and,
-- with ANALYZE, the fragments and row groups read.  The qual stays a filter,
-- so what is returned is what a full scan returns.
--
CREATE EXTENSION ctxstore;
CREATE SERVER kl_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE kl (id text, session_id text, n int) SERVER kl_srv
  OPTIONS (uri 'file://@store_root@/kl', merge_after_generations '0',
           cleanup_interval '0');
-- Three merged loads (three base fragments), then unmerged changes.
INSERT INTO kl SELECT 'a' || g, 's' || (g % 10), g FROM generate_series(1, 1000) g;
SELECT ctxstore.merge_wal('kl');
INSERT INTO kl SELECT 'b' || g, 's' || (g % 10), g FROM generate_series(1, 1000) g;
SELECT ctxstore.merge_wal('kl');
INSERT INTO kl SELECT 'c' || g, 's' || (g % 10), g FROM generate_series(1, 1000) g;
SELECT ctxstore.merge_wal('kl');
UPDATE kl SET n = -5 WHERE id = 'a5';
DELETE FROM kl WHERE id = 'b7';

EXPLAIN (COSTS OFF) SELECT * FROM kl WHERE id = 'a5';
SELECT * FROM kl WHERE id = 'a5';
SELECT * FROM kl WHERE id = 'b7';
-- One base fragment of three, and the generation holding the update.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT * FROM kl WHERE id = 'c9';
SELECT id, n FROM kl WHERE id = ANY (ARRAY['a5', 'b7', 'c9', 'zz', NULL]) ORDER BY id;
SELECT id, n FROM kl WHERE id IN ('a1', 'b1', 'a1') ORDER BY id;
SELECT count(*) FROM kl WHERE id = ANY ('{}'::text[]);
-- A stable expression is evaluated when the scan begins.
EXPLAIN (COSTS OFF) SELECT n FROM kl WHERE id = lower('A' || '2');
SELECT n FROM kl WHERE id = lower('A' || '2');

-- A prepared statement's parameter, a different key each execution.
PREPARE by_id(text) AS SELECT id, n FROM kl WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE by_id('a3');
EXECUTE by_id('a3');
EXECUTE by_id('c1000');
EXECUTE by_id('b7');
PREPARE by_ids(text[]) AS SELECT count(*) FROM kl WHERE id = ANY ($1);
EXECUTE by_ids(ARRAY['a1', 'a2', 'nope']);
-- A rescan re-evaluates the keys (a parameter of the outer side).
SELECT v.k, (SELECT n FROM kl WHERE id = v.k) FROM (VALUES ('a4'), ('b4'), ('x')) v(k);

-- Not key lookups: other operators, the key against a column, no key.
EXPLAIN (COSTS OFF) SELECT * FROM kl WHERE id LIKE 'a1%';
EXPLAIN (COSTS OFF) SELECT * FROM kl WHERE id = session_id;
EXPLAIN (COSTS OFF) SELECT * FROM kl WHERE session_id = 's1';

-- Inside a transaction its own changes shadow what the lookup finds.
BEGIN;
UPDATE kl SET n = 100 WHERE id = 'a6';
DELETE FROM kl WHERE id = 'a8';
INSERT INTO kl VALUES ('new', 's', 1);
SELECT id, n FROM kl WHERE id IN ('a6', 'a8', 'new') ORDER BY id;
ROLLBACK;
SELECT id, n FROM kl WHERE id IN ('a6', 'a8', 'new') ORDER BY id;

-- ON CONFLICT DO NOTHING finds committed keys too: only the new row is
-- inserted (and returned).
INSERT INTO kl VALUES ('a1', 'x', 0), ('d1', 'x', 0) ON CONFLICT DO NOTHING RETURNING id;
SELECT id, n FROM kl WHERE id IN ('a1', 'd1') ORDER BY id;
-- A key deleted in the same transaction is free again.
BEGIN;
DELETE FROM kl WHERE id = 'a2';
INSERT INTO kl VALUES ('a2', 'x', 22) ON CONFLICT DO NOTHING;
COMMIT;
SELECT id, n FROM kl WHERE id = 'a2';

-- An integer key compared with an integer of another width.
CREATE FOREIGN TABLE kl_int (id bigint, n int) SERVER kl_srv
  OPTIONS (uri 'file://@store_root@/kl_int');
INSERT INTO kl_int SELECT g, g * 10 FROM generate_series(1, 100) g;
EXPLAIN (COSTS OFF) SELECT n FROM kl_int WHERE id = 42;
SELECT n FROM kl_int WHERE id = 42;
SELECT n FROM kl_int WHERE id IN (7::smallint, 8::smallint);
SELECT count(*) FROM kl_int WHERE id = 4294967296;

-- A date key compared with a timestamp is no key lookup (its value is no
-- date), but still finds its row.
CREATE FOREIGN TABLE kl_date (id date, n int) SERVER kl_srv
  OPTIONS (uri 'file://@store_root@/kl_date');
INSERT INTO kl_date VALUES ('2024-01-02', 1), ('2024-01-03', 2);
EXPLAIN (COSTS OFF) SELECT n FROM kl_date WHERE id = timestamp '2024-01-02';
SELECT n FROM kl_date WHERE id = timestamp '2024-01-02';

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;

