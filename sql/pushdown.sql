--
-- Predicate pushdown: quals the store's statistics can answer make the scan
-- skip base fragments, row groups and unmerged generations none of whose
-- rows can match.  Every qual stays a filter, so what is returned is what
-- the same query returns on a heap copy of the table.
--
CREATE EXTENSION ctxstore;
CREATE SERVER pd_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE pd (id text, n int, f float8, t text COLLATE "C",
                         u text COLLATE "und-x-icu", b bytea, ts timestamptz,
                         g uuid)
  SERVER pd_srv OPTIONS (uri 'file://@store_root@/pd',
                         merge_after_generations '0', cleanup_interval '0');
-- Three merged loads (three base fragments: n in 1..100, 101..200,
-- 201..300 and NULL), then an unmerged generation (n in 1001..1010).  The
-- first load holds a NaN, the third the NULLs.
INSERT INTO pd SELECT 'a' || g, g, CASE WHEN g = 50 THEN 'NaN' ELSE g / 10.0 END,
    'a' || g, 'a' || g, decode(lpad(to_hex(g), 4, '0'), 'hex'),
    timestamptz '2020-01-01' + g * interval '1 hour',
    ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid
  FROM generate_series(1, 100) g;
SELECT ctxstore.merge_wal('pd');
INSERT INTO pd SELECT 'b' || g, g, g / 10.0, 'b' || g, 'b' || g,
    decode(lpad(to_hex(g), 4, '0'), 'hex'),
    timestamptz '2021-01-01' + g * interval '1 hour',
    ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid
  FROM generate_series(101, 200) g;
SELECT ctxstore.merge_wal('pd');
INSERT INTO pd SELECT 'c' || g, CASE WHEN g % 10 = 0 THEN NULL ELSE g END,
    CASE WHEN g % 10 = 0 THEN NULL ELSE g / 10.0 END, 'c' || g, 'c' || g,
    decode(lpad(to_hex(g), 4, '0'), 'hex'), now(),
    ('00000000-0000-0000-0000-' || lpad(g::text, 12, '0'))::uuid
  FROM generate_series(201, 300) g;
SELECT ctxstore.merge_wal('pd');
INSERT INTO pd SELECT 'd' || g, g, g, 'd' || g, 'd' || g, '\x00', now(), NULL
  FROM generate_series(1001, 1010) g;
CREATE TABLE pd_heap AS SELECT * FROM pd;

-- What is pushed, as EXPLAIN VERBOSE shows it: comparisons either way
-- round, BETWEEN (two quals), IN, IS [NOT] NULL, LIKE 'prefix%'.
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT id FROM pd WHERE n BETWEEN 120 AND 130 AND 5.0 < f AND id LIKE 'b1%'
    AND g IS NOT NULL AND n IN (120, 125) AND t <> 'x';
-- Not pushed: an operator of another family, a column against a column,
-- a volatile expression, a LIKE without a literal prefix, a range on text
-- under a collation other than C (its = is pushed).
EXPLAIN (VERBOSE, COSTS OFF)
  SELECT id FROM pd WHERE n::numeric = 7 AND n = length(id) AND f < random()
    AND t LIKE '%1' AND u > 'b' AND u = 'b150';

-- The counts: one base fragment of three read, the generation skipped.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id FROM pd WHERE n = 150;
-- Only the generation.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id FROM pd WHERE n > 1000;
-- NaN sorts above every number: the first fragment (it holds one) may match.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id FROM pd WHERE f > 500;
-- NULLs only in the third fragment; no fragment is all NULL.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id FROM pd WHERE n IS NULL;
-- Byte-wise text: C collation ranges, any deterministic collation for =.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id FROM pd WHERE t >= 'c';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id FROM pd WHERE u = 'c250';

-- A stable expression, evaluated when the scan begins.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id FROM pd WHERE ts > now() - interval '1 day';
-- A prepared statement's parameter in a generic plan.
SET plan_cache_mode = force_generic_plan;
PREPARE above(int) AS SELECT count(*) FROM pd WHERE n > $1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE above(250);
EXECUTE above(250);
EXECUTE above(0);
PREPARE within(int[]) AS SELECT count(*) FROM pd WHERE n = ANY ($1);
EXECUTE within(ARRAY[5, 150, NULL]);
EXECUTE within(ARRAY[NULL]::int[]);
RESET plan_cache_mode;

-- An update lands in a generation: the base's old version of the key is
-- hidden even when its fragment is read and the generation skipped, and
-- the new version found even when its base fragment is skipped.
UPDATE pd SET n = 5000 WHERE id = 'b150';
UPDATE pd_heap SET n = 5000 WHERE id = 'b150';
SELECT id, n FROM pd WHERE n = 150;
SELECT id, n FROM pd WHERE n = 5000;

-- The scan outputs only the columns the query uses (none for count(*));
-- its tuple holds the columns fetched.
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM pd;
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM pd WHERE n > 295 ORDER BY f;
SELECT id FROM pd WHERE n > 295 ORDER BY f;
SELECT substr(id, 1, 1) AS l, count(*), sum(n) FROM pd GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM pd p JOIN pd_heap h USING (id) WHERE p.n = h.n;
SELECT p FROM pd p WHERE n = 7;
SELECT tableoid::regclass, id FROM pd WHERE n = 7;

-- Estimates: PostgreSQL's, but never more than the rows of the fragments the
-- constants do not skip (none here: beyond every fragment's max).
EXPLAIN SELECT id FROM pd WHERE n > 100000;
EXPLAIN SELECT id FROM pd WHERE n = 150;
EXPLAIN SELECT id FROM pd WHERE n > 0;
EXPLAIN SELECT id FROM pd WHERE n > 250;

-- The same rows as the heap copy, for every operator and type.
CREATE FUNCTION same_as_heap(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  found bigint;
  differ bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM pd WHERE %s', q) INTO found;
  EXECUTE format('SELECT count(*) FROM ((SELECT * FROM pd WHERE %1$s EXCEPT ALL '
                 'SELECT * FROM pd_heap WHERE %1$s) UNION ALL (SELECT * FROM '
                 'pd_heap WHERE %1$s EXCEPT ALL SELECT * FROM pd WHERE %1$s)) x',
                 q) INTO differ;
  RETURN found || ' rows, ' || differ || ' differ';
END $$;
SELECT q, same_as_heap(q) FROM (VALUES
  ('n = 150'), ('n <> 150'), ('n < 5'), ('n <= 5'), ('n > 295'), ('n >= 295'),
  ('295 <= n'), ('n BETWEEN 99 AND 101'), ('n IN (1, 200, 5000)'),
  ('n = ANY (ARRAY[NULL, 7])'), ('n IS NULL'), ('n IS NOT NULL'),
  ('n = 40000000000'), ('n < 40000000000'), ('n::int8 > -1'),
  ('n = 5000'), ('f = ''NaN'''), ('f > 1e9'), ('f >= ''Infinity'''),
  ('f < 0.15'), ('f = 0.1::float4'), ('f <> ''NaN'''),
  ('id = ''c250'''), ('id LIKE ''c2%'''), ('id LIKE ''a_1'''),
  ('t < ''b'''), ('t > ''c9'''), ('u = ''a5'''), ('u > ''c'''),
  ('b = ''\x0001'''), ('b < ''\x0002'''), ('b LIKE ''\x0025'''),
  ('ts < ''2020-06-01'''), ('ts >= ''2021-01-01''::date'),
  ('g = ''00000000-0000-0000-0000-000000000150'''), ('g IS NULL'),
  ('g > ''00000000-0000-0000-0000-000000000290''')
) v(q);

SET client_min_messages = warning;
DROP EXTENSION ctxstore CASCADE;
DROP TABLE pd_heap;
DROP FUNCTION same_as_heap(text);
