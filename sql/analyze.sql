--
-- ANALYZE samples the rows a scan returns (de-duplicated across unmerged
-- generations) and records the exact visible row count, so the planner's
-- estimates follow the data.
--
CREATE EXTENSION ctxstore;
CREATE SERVER an_srv FOREIGN DATA WRAPPER ctxstore;
CREATE FOREIGN TABLE an (id text, session_id text, n int) SERVER an_srv
  OPTIONS (uri 'file://@store_root@/an', merge_after_generations '0',
           flush_interval '1h', cleanup_interval '0');
-- 1000 rows in the base, 4 sessions of 250; then 10 unmerged updates (the
-- manifests count 1010 rows) and one session of 20 rows.
INSERT INTO an SELECT 'k' || i, 's' || i % 4, i FROM generate_series(1, 1000) i;
SELECT ctxstore.merge_wal('an');
UPDATE an SET n = -n WHERE id IN (SELECT 'k' || i FROM generate_series(1, 10) i);
INSERT INTO an SELECT 'x' || i, 'small', i FROM generate_series(1, 20) i;

CREATE FUNCTION plan_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  j json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
  RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;

-- Before: the default selectivity of an equality, far from 250 and 20.
SELECT plan_rows($$SELECT * FROM an WHERE session_id = 's1'$$) AS s1,
       plan_rows($$SELECT * FROM an WHERE session_id = 'small'$$) AS small;
SELECT reltuples, relpages FROM pg_class WHERE relname = 'an';

ANALYZE an;
-- After: within 2x of the truth (250 and 20).
SELECT plan_rows($$SELECT * FROM an WHERE session_id = 's1'$$)
         BETWEEN 125 AND 500 AS s1_close,
       plan_rows($$SELECT * FROM an WHERE session_id = 'small'$$)
         BETWEEN 10 AND 40 AS small_close;
-- Every row was sampled (fewer than the 30000 a sample takes): the counts
-- are exact, and the row count is that of visible rows.
SELECT reltuples, relpages > 0 AS has_pages FROM pg_class WHERE relname = 'an';
SELECT attname, null_frac, n_distinct FROM pg_stats
  WHERE tablename = 'an' ORDER BY attname;
SELECT most_common_vals FROM pg_stats
  WHERE tablename = 'an' AND attname = 'session_id';
-- The updated values are the ones sampled.
SELECT histogram_bounds IS NOT NULL AS has_histogram, correlation IS NOT NULL AS has_correlation
  FROM pg_stats WHERE tablename = 'an' AND attname = 'n';
SELECT min(v::text::int) FROM pg_stats, unnest(histogram_bounds::text::int[]) v
  WHERE tablename = 'an' AND attname = 'n';

-- A sample smaller than the table (300 rows) still counts every row.
ALTER FOREIGN TABLE an ALTER COLUMN id SET STATISTICS 1,
  ALTER COLUMN session_id SET STATISTICS 1, ALTER COLUMN n SET STATISTICS 1;
ANALYZE VERBOSE an;
SELECT reltuples FROM pg_class WHERE relname = 'an';
SELECT plan_rows($$SELECT * FROM an WHERE session_id = 's1'$$)
         BETWEEN 125 AND 500 AS s1_close;

-- An empty store: no rows, no statistics, no error.
CREATE FOREIGN TABLE an_empty (id text) SERVER an_srv
  OPTIONS (uri 'file://@store_root@/an_empty');
ANALYZE an_empty;
SELECT count(*) FROM pg_stats WHERE tablename = 'an_empty';

DROP FUNCTION plan_rows(text);
DROP FOREIGN TABLE an, an_empty;
DROP SERVER an_srv;
DROP EXTENSION ctxstore;
