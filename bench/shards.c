/*
 * shards.c — what a scan costs as the number of shards (clusters that ever
 * wrote the store) grows: a store whose rows went through 1 shard against
 * one with the same rows through 64 shards, 62 of them merged and drained
 * and 2 with unmerged generations, through the engine API on file://.
 *
 *   shards <dir> [scans]
 *
 * Both stores hold BASE_ROWS merged rows in one base fragment and GENS
 * generations of GEN_ROWS rows each, unmerged (in the 64-shard store, split
 * over 2 shards; the other 62 are registered, with nothing unmerged).  Each
 * scan is what a query does: open a snapshot (planning) and read every row.
 * Two readers: warm (one handle for every scan, as a backend keeps it) and
 * cold (a new handle per scan).  Prints, for each, the median CPU ms of
 * the snapshot open alone ("plan") and of the whole query ("scan", snapshot
 * included), the object-store requests per query, and the 64 / 1 ratios;
 * and first what building each store cost the writers in requests (claims,
 * seals, merges and drains: the dirty markers' share is in there).
 *
 * Built against storage/ only (bench/shards.sh compiles and runs it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "objstore/cx_objstore.h"
#include "format/cx_row_codec.h"
#include "format/cx_schema.h"
#include "memwal/cx_shard_writer.h"
#include "ctxstore/scan.h"
#include "bench_util.h"

const char *bench_name = "shards";

#define BASE_ROWS 20000
#define GENS 8
#define GEN_ROWS 50
#define MANY 64
#define UNMERGED_SHARDS 2

/* CPU time of this process: the machine is shared, and wall time would
 * measure the other processes' load as much as this one's work.  The
 * object-store requests (file://, so no round trips) are counted apart. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Rows "<prefix>-<first>" .. "<prefix>-<first + n - 1>", appended sealed. */
static void
put_rows(cx_shardwriter *w, const cx_schema *schema, const char *prefix,
		 int first, int n)
{
	cx_buf		rows;
	int64_t		ts;
	cx_err		err;

	cx_buf_init(&rows);
	for (int i = first; i < first + n; i++)
		bench_row(schema, prefix, i, &rows);
	if (cx_sw_append(w, schema, rows.data, rows.len, (uint64_t) n, true, &ts,
					 &err) != CX_OK)
		die("appending", &err);
	cx_buf_free(&rows);
}

static cx_shardwriter *
open_writer(cx_objstore *s, const char *shard)
{
	cx_sw_options o;
	cx_shardwriter *w;
	cx_err		err;

	cx_sw_options_default(&o);
	o.writer_info = "shards bench";
	if (cx_sw_open(s, shard, &o, &w, &err) != CX_OK)
		die("opening a shard writer", &err);
	return w;
}

/* Merges everything shard holds into the base and drains it. */
static void
merge_all(cx_objstore *s, cx_shardwriter *w, const char *shard)
{
	cx_merge_options o;
	cx_merge_result r;
	cx_err		err;

	cx_merge_options_default(&o);
	o.max_generations = 1u << 20;
	if (cx_merge_shard(s, shard, &o, &r, &err) != CX_OK ||
		cx_sw_drain_through(w, r.merged_through, &err) != CX_OK)
		die("merging", &err);
}

/*
 * The store: nshards shards.  The base rows go through shard 0 and are
 * merged; the other shards claim (so the base registers them: clusters that
 * wrote the store and were merged and drained) but leave no rows, so that
 * both stores have the same base fragments (many small merge fragments are
 * compaction's business, not the shards'); the unmerged generations go to
 * the last UNMERGED_SHARDS shards (shard 0 when there is one).
 */
static void
build(const char *uri, int nshards, const cx_schema *schema)
{
	cx_objstore *s = open_store(uri, NULL, 0);
	int			unmerged = nshards < UNMERGED_SHARDS ? nshards : UNMERGED_SHARDS;
	int			gens = 0;
	cx_err		err;

	for (int i = 0; i < nshards; i++)
	{
		char		shard[16];
		cx_shardwriter *w;

		snprintf(shard, sizeof(shard), "s%d", i);
		w = open_writer(s, shard);
		if (i == 0)
		{
			put_rows(w, schema, "base", 0, BASE_ROWS);
			merge_all(s, w, shard);
		}
		if (i >= nshards - unmerged)
			for (int g = 0; g < GENS / unmerged; g++)
				put_rows(w, schema, "gen", GEN_ROWS * gens++, GEN_ROWS);
		if (cx_sw_close(w, true, &err) != CX_OK)
			die("closing a writer", &err);
	}
	printf("building %2d shards: %llu PUTs, %llu GETs, %llu HEADs, %llu LISTs, %llu DELETEs\n",
		   nshards, (unsigned long long) s->stats.puts,
		   (unsigned long long) s->stats.gets, (unsigned long long) s->stats.heads,
		   (unsigned long long) s->stats.lists, (unsigned long long) s->stats.deletes);
	cx_obj_close(s);
}

typedef struct result
{
	double		plan_ms;		/* median snapshot open */
	double		ms;				/* median per scan, snapshot included */
	double		requests;		/* per scan */
	uint64_t	rows;
} result;

static uint64_t
requests(const cx_objstats *st)
{
	return st->gets + st->heads + st->lists;
}

/* One query: snapshot (its time into *plan_ms), then every row. */
static uint64_t
scan_once(cx_objstore *s, double *plan_ms)
{
	double		t0 = now_ms();

	cx_snapshot *snap;
	cx_tablescan *scan;
	const cx_rowgroup *g;
	const uint32_t *rows;
	uint32_t	n;
	uint64_t	total = 0;
	cx_err		err;

	if (cx_snapshot_open(s, 0, &snap, &err) != CX_OK)
		die("opening a snapshot", &err);
	*plan_ms = now_ms() - t0;
	if (cx_tablescan_begin(snap, NULL, &scan, &err) != CX_OK)
		die("opening a scan", &err);
	do
	{
		if (cx_tablescan_next(scan, &g, &rows, &n, &err) != CX_OK)
			die("scanning", &err);
		total += n;
	} while (g != NULL);
	cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	return total;
}

static int
by_value(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

static result
measure(const char *uri, int scans, bool warm)
{
	cx_objstore *s = open_store(uri, NULL, 0);
	double	   *ms = calloc((size_t) scans, sizeof(double));
	double	   *plan = calloc((size_t) scans, sizeof(double));
	uint64_t	reqs = 0;
	result		r = {0};

	if (ms == NULL || plan == NULL)
		die("out of memory", NULL);
	r.rows = scan_once(s, &plan[0]);	/* warms the cache (and the page
										 * cache) */
	for (int i = 0; i < scans; i++)
	{
		uint64_t	before;
		double		t0;

		if (!warm)
		{
			cx_obj_close(s);
			s = open_store(uri, NULL, 0);
		}
		before = requests(&s->stats);
		t0 = now_ms();
		if (scan_once(s, &plan[i]) != r.rows)
			die("a scan returned another row count", NULL);
		ms[i] = now_ms() - t0;
		reqs += requests(&s->stats) - before;
	}
	qsort(ms, (size_t) scans, sizeof(double), by_value);
	qsort(plan, (size_t) scans, sizeof(double), by_value);
	r.ms = ms[scans / 2];
	r.plan_ms = plan[scans / 2];
	r.requests = (double) reqs / scans;
	free(ms);
	free(plan);
	cx_obj_close(s);
	return r;
}

int
main(int argc, char **argv)
{
	cx_schema  *schema = bench_schema();
	char		one[4096];
	char		many[4096];
	int			scans = argc > 2 ? atoi(argv[2]) : 50;

	if (argc < 2 || scans < 1)
	{
		fprintf(stderr, "usage: shards <empty dir> [scans]\n");
		return 2;
	}
	snprintf(one, sizeof(one), "file://%s/one", argv[1]);
	snprintf(many, sizeof(many), "file://%s/many", argv[1]);
	build(one, 1, schema);
	build(many, MANY, schema);
	printf("shards: %d scans each, %d base rows + %d unmerged generations of %d rows\n",
		   scans, BASE_ROWS, GENS, GEN_ROWS);
	printf("%-6s %9s %9s %7s %9s %9s %7s %7s %7s %7s\n", "reader",
		   "plan 1", "plan 64", "ratio", "scan 1", "scan 64", "ratio",
		   "reqs 1", "reqs 64", "ratio");
	for (int warm = 1; warm >= 0; warm--)
	{
		result		a = measure(one, scans, warm);
		result		b = measure(many, scans, warm);

		if (a.rows != b.rows)
			die("the two stores hold different row counts", NULL);
		printf("%-6s %9.3f %9.3f %7.2f %9.3f %9.3f %7.2f %7.1f %7.1f %7.2f\n",
			   warm ? "warm" : "cold", a.plan_ms, b.plan_ms, b.plan_ms / a.plan_ms,
			   a.ms, b.ms, b.ms / a.ms, a.requests, b.requests,
			   b.requests / a.requests);
	}
	cx_schema_free(schema);
	return 0;
}
