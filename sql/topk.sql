--
-- ORDER BY and LIMIT answered in the scan, and similarity search: the
-- results equal those of a heap copy of the same rows (ties are avoided or
-- compared by value only), across merged fragments, unmerged generations
-- and the transaction's own rows.
--
CREATE EXTENSION ctxstore;
CREATE SERVER tk_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE tk (id text, bot_id int, n int, ts timestamptz,
  label text COLLATE "C", e real[], e8 float8[])
  SERVER tk_srv OPTIONS (uri 'file://@store_root@/topk',
                         merge_after_generations '0', cleanup_interval '0');
CREATE TABLE tk_heap (id text, bot_id int, n int, ts timestamptz,
  label text COLLATE "C", e real[], e8 float8[]);
-- Distinct values (n, ts, label, vectors), some NULL, a zero vector.
SELECT setseed(0.12);
INSERT INTO tk_heap
  SELECT 'r' || g, g % 4,
         CASE WHEN g % 50 = 0 THEN NULL ELSE (g * 7919) % 1000 END,
         '2024-01-01 00:00:00+00'::timestamptz + ((g * 37) % 1000) * interval '1 minute',
         CASE WHEN g % 45 = 0 THEN NULL ELSE md5(g::text) END,
         CASE WHEN g % 60 = 0 THEN NULL
              WHEN g = 77 THEN array_fill(0::real, ARRAY[12])
              ELSE (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 12) d
                    WHERE g > 0) END,
         NULL
  FROM generate_series(1, 650) g;
UPDATE tk_heap SET e8 = e::float8[];
-- Three merged loads (three base fragments), then an unmerged generation
-- and unmerged changes.
INSERT INTO tk SELECT * FROM tk_heap WHERE substr(id, 2)::int <= 200;
SELECT ctxstore.merge_wal('tk');
INSERT INTO tk SELECT * FROM tk_heap WHERE substr(id, 2)::int BETWEEN 201 AND 400;
SELECT ctxstore.merge_wal('tk');
INSERT INTO tk SELECT * FROM tk_heap WHERE substr(id, 2)::int BETWEEN 401 AND 600;
SELECT ctxstore.merge_wal('tk');
INSERT INTO tk SELECT * FROM tk_heap WHERE substr(id, 2)::int > 600;
UPDATE tk SET n = 2000 WHERE id = 'r5';
UPDATE tk_heap SET n = 2000 WHERE id = 'r5';
DELETE FROM tk WHERE id IN ('r13', 'r450');
DELETE FROM tk_heap WHERE id IN ('r13', 'r450');

-- Whether query q returns the same rows, in the same order, from tk and
-- from tk_heap.
CREATE FUNCTION same_result(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  got text[];
  want text[];
BEGIN
  EXECUTE format('SELECT array_agg(r::text) FROM (%s) r', q) INTO got;
  EXECUTE format('SELECT array_agg(r::text) FROM (%s) r',
                 replace(q, 'FROM tk ', 'FROM tk_heap ')) INTO want;
  IF got IS DISTINCT FROM want THEN
    RAISE NOTICE 'got %, want %', got, want;
  END IF;
  RETURN got IS NOT DISTINCT FROM want;
END $$;

-- ---- LIMIT alone stops reading early ----
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM tk LIMIT 5;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM tk LIMIT 5;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM tk LIMIT 1000;
SELECT count(*) FROM (SELECT id FROM tk WHERE bot_id = 1 LIMIT 7 OFFSET 3) s;
SELECT count(*) FROM (SELECT id FROM tk LIMIT 0) s;
SELECT count(*) FROM (SELECT id FROM tk LIMIT NULL) s;
SELECT id FROM tk LIMIT -1;
SELECT id FROM tk LIMIT 1 OFFSET -1;

-- ---- ORDER BY a column LIMIT k: a bounded top-k in the scan ----
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT id, n FROM tk WHERE bot_id = 2 ORDER BY n DESC NULLS LAST LIMIT 5;
SELECT id, n FROM tk WHERE bot_id = 2 ORDER BY n DESC NULLS LAST LIMIT 5;
SELECT same_result('SELECT id, n FROM tk ORDER BY n DESC NULLS LAST LIMIT 7');
SELECT same_result('SELECT id, n FROM tk ORDER BY n LIMIT 7');
SELECT same_result('SELECT n FROM tk ORDER BY n DESC NULLS LAST LIMIT 20');
SELECT same_result('SELECT n FROM tk ORDER BY n NULLS FIRST LIMIT 20');
SELECT same_result('SELECT n FROM tk ORDER BY n DESC NULLS FIRST LIMIT 20');
SELECT same_result('SELECT id, n FROM tk WHERE bot_id = 3 AND n < 500 ORDER BY n DESC LIMIT 5');
SELECT same_result('SELECT id, n FROM tk ORDER BY n DESC NULLS LAST LIMIT 5 OFFSET 10');
SELECT same_result('SELECT id, ts FROM tk ORDER BY ts DESC LIMIT 6');
SELECT same_result('SELECT id, ts FROM tk WHERE bot_id = 0 ORDER BY ts LIMIT 6');
SELECT same_result('SELECT id, label FROM tk ORDER BY label DESC NULLS LAST LIMIT 6');
SELECT same_result('SELECT label FROM tk ORDER BY label NULLS FIRST LIMIT 20');
SELECT same_result('SELECT id, label FROM tk WHERE label LIKE ''a%'' ORDER BY label LIMIT 4 OFFSET 2');
-- More rows wanted than there are: every row, sorted.
SELECT same_result('SELECT id, n FROM tk WHERE bot_id = 1 ORDER BY n LIMIT 100000');
-- Parameters: the plan that cannot know them, evaluated as the scan starts.
SET plan_cache_mode = force_generic_plan;
PREPARE top_n(int, bigint, bigint) AS
  SELECT id, n FROM tk WHERE bot_id = $1 ORDER BY n DESC NULLS LAST LIMIT $2 OFFSET $3;
EXPLAIN (COSTS OFF) EXECUTE top_n(1, 3, 1);
EXECUTE top_n(1, 3, 1);
SELECT id, n FROM tk_heap WHERE bot_id = 1 ORDER BY n DESC NULLS LAST LIMIT 3 OFFSET 1;
EXECUTE top_n(2, 2, 0);
SELECT id, n FROM tk_heap WHERE bot_id = 2 ORDER BY n DESC NULLS LAST LIMIT 2;
RESET plan_cache_mode;
-- A rescan (the inner side of a nested loop) starts over.
EXPLAIN (COSTS OFF) SELECT b.bot_id, t.id, t.n
  FROM (VALUES (0), (1)) b(bot_id),
       LATERAL (SELECT id, n FROM tk WHERE tk.bot_id = b.bot_id ORDER BY n LIMIT 2) t;
SELECT b.bot_id, t.id, t.n
  FROM (VALUES (0), (1)) b(bot_id),
       LATERAL (SELECT id, n FROM tk WHERE tk.bot_id = b.bot_id ORDER BY n LIMIT 2) t;
SELECT b.bot_id, t.id, t.n
  FROM (VALUES (0), (1)) b(bot_id),
       LATERAL (SELECT id, n FROM tk_heap WHERE tk_heap.bot_id = b.bot_id ORDER BY n LIMIT 2) t;

-- The transaction's own rows take part, and shadow what they replace.
BEGIN;
INSERT INTO tk VALUES ('p1', 1, 3000, now(), 'zzz', '{1,1,1,1,1,1,1,1,1,1,1,1}', NULL);
INSERT INTO tk_heap VALUES ('p1', 1, 3000, now(), 'zzz', '{1,1,1,1,1,1,1,1,1,1,1,1}', NULL);
UPDATE tk SET n = -1 WHERE id = 'r5';
UPDATE tk_heap SET n = -1 WHERE id = 'r5';
DELETE FROM tk WHERE id = 'r7';
DELETE FROM tk_heap WHERE id = 'r7';
SELECT id, n FROM tk ORDER BY n DESC NULLS LAST LIMIT 3;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id, n FROM tk ORDER BY n DESC NULLS LAST LIMIT 3;
SELECT same_result('SELECT id, n FROM tk ORDER BY n DESC NULLS LAST LIMIT 3');
SELECT same_result('SELECT id, n FROM tk ORDER BY n LIMIT 3');
SELECT same_result('SELECT id, label FROM tk WHERE bot_id = 1 ORDER BY label DESC NULLS LAST LIMIT 3');
ROLLBACK;

-- Not answered in the scan: two sort keys, an aggregate, no LIMIT.
EXPLAIN (COSTS OFF) SELECT id FROM tk ORDER BY n, id LIMIT 3;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tk LIMIT 3;
EXPLAIN (COSTS OFF) SELECT bot_id FROM tk ORDER BY n DESC;

-- ---- Distance functions against a SQL reference ----
CREATE FUNCTION ref_l2(a float8[], b float8[]) RETURNS float8 LANGUAGE sql
  AS $$ SELECT sqrt(sum((x - y) ^ 2)) FROM unnest(a, b) u(x, y) $$;
CREATE FUNCTION ref_cos(a float8[], b float8[]) RETURNS float8 LANGUAGE sql
  AS $$ SELECT 1 - sum(x * y) / sqrt(sum(x * x) * sum(y * y)) FROM unnest(a, b) u(x, y) $$;
CREATE FUNCTION ref_ip(a float8[], b float8[]) RETURNS float8 LANGUAGE sql
  AS $$ SELECT sum(x * y) FROM unnest(a, b) u(x, y) $$;
CREATE FUNCTION near(got float8, want float8, tolerance float8) RETURNS boolean
  LANGUAGE sql AS $$ SELECT abs(got - want) <= tolerance * (1 + abs(want)) $$;
-- Every pair of 40 vectors (real[] summed in float, float8[] in double).
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE near(ctxstore.l2_distance(a.e, b.e), ref_l2(a.e8, b.e8), 1e-5)) AS l2,
       count(*) FILTER (WHERE near(ctxstore.cosine_distance(a.e, b.e), ref_cos(a.e8, b.e8), 1e-5)) AS cos,
       count(*) FILTER (WHERE near(ctxstore.inner_product(a.e, b.e), ref_ip(a.e8, b.e8), 1e-5)) AS ip,
       count(*) FILTER (WHERE near(ctxstore.l2_distance(a.e8, b.e8), ref_l2(a.e8, b.e8), 1e-12)) AS l2_8,
       count(*) FILTER (WHERE near(ctxstore.cosine_distance(a.e8, b.e8), ref_cos(a.e8, b.e8), 1e-12)) AS cos_8,
       count(*) FILTER (WHERE near(ctxstore.inner_product(a.e8, b.e8), ref_ip(a.e8, b.e8), 1e-12)) AS ip_8
  FROM (SELECT * FROM tk_heap WHERE e IS NOT NULL AND id <> 'r77' ORDER BY id LIMIT 40) a,
       (SELECT * FROM tk_heap WHERE e IS NOT NULL AND id <> 'r77' ORDER BY id LIMIT 40) b;
SELECT ctxstore.l2_distance('{3,0}'::real[], '{0,4}'), ctxstore.inner_product('{1,2}'::float8[], '{3,4}'),
       ctxstore.cosine_distance('{1,0}'::real[], '{0,1}'), ctxstore.cosine_distance('{1,1}'::real[], '{2,2}');
-- A zero vector has no direction; empty vectors; NULL arguments.
SELECT ctxstore.cosine_distance('{0,0}'::real[], '{1,2}'), ctxstore.l2_distance('{}'::real[], '{}'),
       ctxstore.inner_product(NULL::real[], '{1}') IS NULL AS strict;
\set VERBOSITY default
SELECT ctxstore.l2_distance('{1,2,3}'::real[], '{1,2}');
SELECT ctxstore.cosine_distance('{1,NULL}'::float8[], '{1,2}');
SELECT ctxstore.inner_product('{{1,2},{3,4}}'::real[], '{1,2}');

-- ---- ORDER BY distance LIMIT k, with and without filters ----
PREPARE nearest(real[]) AS
  SELECT id FROM tk ORDER BY ctxstore.cosine_distance(e, $1) LIMIT 5;
PREPARE nearest_heap(real[]) AS
  SELECT id FROM tk_heap ORDER BY ctxstore.cosine_distance(e, $1) LIMIT 5;
PREPARE nearest_bot(real[], int) AS
  SELECT id FROM tk WHERE bot_id = $2 ORDER BY ctxstore.cosine_distance(e, $1) LIMIT 5;
PREPARE nearest_bot_heap(real[], int) AS
  SELECT id FROM tk_heap WHERE bot_id = $2 ORDER BY ctxstore.cosine_distance(e, $1) LIMIT 5;
SELECT e AS q FROM tk_heap WHERE id = 'r42' \gset
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE nearest_bot(:'q', 2);
EXECUTE nearest(:'q');
EXECUTE nearest_heap(:'q');
EXECUTE nearest_bot(:'q', 2);
EXECUTE nearest_bot_heap(:'q', 2);
SET plan_cache_mode = force_generic_plan;
EXECUTE nearest_bot(:'q', 3);
EXECUTE nearest_bot_heap(:'q', 3);
RESET plan_cache_mode;
SELECT same_result(format('SELECT id FROM tk ORDER BY ctxstore.l2_distance(e, %L) LIMIT 6', :'q'));
SELECT same_result(format('SELECT id FROM tk ORDER BY ctxstore.inner_product(%L, e) DESC NULLS LAST LIMIT 6', :'q'));
SELECT same_result(format('SELECT id FROM tk WHERE bot_id = 1 ORDER BY ctxstore.l2_distance(e8, %L::float8[]) LIMIT 6 OFFSET 2', :'q'));
-- The zero vector's NaN sorts above every distance, NULL vectors (ties:
-- compared by value) above it under DESC.
SELECT same_result(format('SELECT id FROM tk WHERE bot_id = 1 ORDER BY ctxstore.cosine_distance(e, %L) DESC NULLS LAST LIMIT 4', :'q'));
SELECT same_result(format('SELECT ctxstore.cosine_distance(e, %L) FROM tk ORDER BY 1 DESC LIMIT 12', :'q'));
-- A query vector of another dimension fails as the function does.
SELECT id FROM tk ORDER BY ctxstore.cosine_distance(e, '{1,2}') LIMIT 5;
-- The transaction's rows take part.
BEGIN;
INSERT INTO tk SELECT 'p2', 2, 1, now(), 'p', array_agg(x + 0.001), NULL FROM unnest(:'q'::real[]) x;
INSERT INTO tk_heap SELECT * FROM tk WHERE id = 'p2';
EXECUTE nearest_bot(:'q', 2);
EXECUTE nearest_bot_heap(:'q', 2);
ROLLBACK;

-- A table with inheritance children: not in the scan, which reads only the
-- table's own rows (last: the table keeps relhassubclass after the DROP).
CREATE TABLE tk_child () INHERITS (tk);
INSERT INTO tk_child (id, n) VALUES ('c1', 5000);
SELECT id, n FROM tk ORDER BY n DESC NULLS LAST LIMIT 2;
SELECT count(*) FROM (SELECT id FROM tk LIMIT 1000) s;
DROP TABLE tk_child;

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
DROP TABLE tk_heap;
DROP FUNCTION same_result(text), ref_l2(float8[], float8[]), ref_cos(float8[], float8[]),
  ref_ip(float8[], float8[]), near(float8, float8, float8);
