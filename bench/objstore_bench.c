/*
 * objstore_bench.c — per-commit cost of appends to an object store, with a
 * resident writer against the write path of the system ctxstore replaces.
 *
 *   objstore_bench <uri> <appends> [name=value ...]
 *
 * The name=value pairs are object-store options (endpoint, account_name,
 * account_key, ...).  Two modes run one after the other on their own stores
 * (<uri>/resident, <uri>/fresh), each making <appends> sealed single-row
 * appends (seal_on_insert):
 *
 *   resident  one store handle and one shard writer, opened once and reused
 *             for every append (what the writer worker does);
 *   fresh     a new store handle and a new shard writer (claim included) per
 *             append, closed after it: the old behaviour.
 *
 * For each it prints commit latency (p50, p99, mean), requests per commit by
 * kind and new connections per commit, from the store handles' own request
 * accounting, then the ratios fresh / resident.  The resident writer's one-off
 * open (claim) is reported separately, not charged to its commits.
 *
 * Built against storage/ only (bench/objstore.sh compiles it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "objstore/cx_objstore.h"
#include "format/cx_row_codec.h"
#include "format/cx_schema.h"
#include "memwal/cx_shard_writer.h"
#include "bench_util.h"

const char *bench_name = "objstore_bench";

typedef struct bench_result
{
	double	   *ms;				/* per append */
	int			n;
	cx_objstats stats;			/* summed over every handle used */
	double		open_ms;		/* resident: the one open and claim */
} bench_result;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* sum += after - before */
static void
add_delta(cx_objstats *sum, const cx_objstats *after, const cx_objstats *before)
{
	sum->puts += after->puts - before->puts;
	sum->gets += after->gets - before->gets;
	sum->heads += after->heads - before->heads;
	sum->lists += after->lists - before->lists;
	sum->deletes += after->deletes - before->deletes;
	sum->retries += after->retries - before->retries;
	sum->connections += after->connections - before->connections;
}

/* The one-row batch an agent turn would be. */
static void
encode_row(const cx_schema *schema, int i, cx_buf *out)
{
	cx_buf_reset(out);
	bench_row(schema, "row", i, out);
}

static cx_shardwriter *
open_writer(cx_objstore *s)
{
	cx_sw_options o;
	cx_shardwriter *w;
	cx_err		err;

	cx_sw_options_default(&o);
	o.writer_info = "objstore_bench";
	o.key_column = "id";
	o.unique_key = true;
	if (cx_sw_open(s, "bench", &o, &w, &err) != CX_OK)
		die("opening the shard writer", &err);
	return w;
}

static void
append_one(cx_shardwriter *w, const cx_schema *schema, const cx_buf *row)
{
	int64_t		ts;
	cx_err		err;

	if (cx_sw_append(w, schema, row->data, row->len, 1, true, &ts, &err) != CX_OK)
		die("appending", &err);
}

static void
close_writer(cx_shardwriter *w)
{
	cx_err		err;

	if (cx_sw_close(w, false, &err) != CX_OK)
		die("closing the shard writer", &err);
}

static void
run_resident(const char *uri, const cx_option *opts, int nopts,
			 const cx_schema *schema, bench_result *r)
{
	double		t0 = now_ms();
	cx_objstore *s = open_store(uri, opts, nopts);
	cx_shardwriter *w = open_writer(s);
	cx_objstats before = s->stats;
	cx_buf		row;

	r->open_ms = now_ms() - t0;
	cx_buf_init(&row);
	for (int i = 0; i < r->n; i++)
	{
		encode_row(schema, i, &row);
		t0 = now_ms();
		append_one(w, schema, &row);
		r->ms[i] = now_ms() - t0;
	}
	/* Only the appends' requests: the open's are reported apart. */
	add_delta(&r->stats, &s->stats, &before);
	close_writer(w);
	cx_obj_close(s);
	cx_buf_free(&row);
}

static void
run_fresh(const char *uri, const cx_option *opts, int nopts,
		  const cx_schema *schema, bench_result *r)
{
	static const cx_objstats none;
	cx_buf		row;

	cx_buf_init(&row);
	for (int i = 0; i < r->n; i++)
	{
		double		t0;
		cx_objstore *s;
		cx_shardwriter *w;

		encode_row(schema, i, &row);
		t0 = now_ms();
		s = open_store(uri, opts, nopts);
		w = open_writer(s);
		append_one(w, schema, &row);
		close_writer(w);
		r->ms[i] = now_ms() - t0;
		add_delta(&r->stats, &s->stats, &none);
		cx_obj_close(s);
	}
	cx_buf_free(&row);
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

static double
percentile(const bench_result *r, double p)
{
	int			i = (int) (p * (r->n - 1) + 0.5);

	return r->ms[i];
}

static double
mean(const bench_result *r)
{
	double		sum = 0;

	for (int i = 0; i < r->n; i++)
		sum += r->ms[i];
	return sum / r->n;
}

static double
per_commit(const bench_result *r, uint64_t count)
{
	return (double) count / r->n;
}

static double
requests(const cx_objstats *s)
{
	return (double) (s->puts + s->gets + s->heads + s->lists + s->deletes);
}

static void
print_row(const char *mode, bench_result *r)
{
	qsort(r->ms, (size_t) r->n, sizeof(double), cmp_double);
	printf("%-9s %8.2f %8.2f %8.2f %9.2f %6.2f %6.2f %6.2f %6.2f %6.2f %12.3f\n",
		   mode, percentile(r, 0.5), percentile(r, 0.99), mean(r),
		   requests(&r->stats) / r->n,
		   per_commit(r, r->stats.puts), per_commit(r, r->stats.gets),
		   per_commit(r, r->stats.heads), per_commit(r, r->stats.lists),
		   per_commit(r, r->stats.deletes),
		   per_commit(r, r->stats.connections));
}

static double
ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

int
main(int argc, char **argv)
{
	cx_option  *opts;
	int			nopts = argc - 3;
	int			n;
	char		uri[2048];
	cx_schema  *schema = bench_schema();
	bench_result res = {0};
	bench_result fresh = {0};

	if (argc < 3 || (n = atoi(argv[2])) < 1)
	{
		fprintf(stderr, "usage: objstore_bench <uri> <appends> [name=value ...]\n");
		return 2;
	}
	opts = calloc((size_t) (nopts > 0 ? nopts : 1), sizeof(cx_option));
	for (int i = 0; i < nopts; i++)
	{
		char	   *eq = strchr(argv[3 + i], '=');

		if (eq == NULL)
			die("options are name=value", NULL);
		*eq = '\0';
		opts[i].name = argv[3 + i];
		opts[i].value = eq + 1;
	}
	res.n = fresh.n = n;
	res.ms = calloc((size_t) n, sizeof(double));
	fresh.ms = calloc((size_t) n, sizeof(double));

	snprintf(uri, sizeof(uri), "%s/resident", argv[1]);
	run_resident(uri, opts, nopts, schema, &res);
	snprintf(uri, sizeof(uri), "%s/fresh", argv[1]);
	run_fresh(uri, opts, nopts, schema, &fresh);

	printf("%d sealed single-row appends per mode on %s\n", n, argv[1]);
	printf("%-9s %8s %8s %8s %9s %6s %6s %6s %6s %6s %12s\n", "mode",
		   "p50_ms", "p99_ms", "mean_ms", "req/commit", "PUT", "GET", "HEAD",
		   "LIST", "DEL", "conn/commit");
	print_row("resident", &res);
	print_row("fresh", &fresh);
	printf("resident writer open (claim, once): %.2f ms\n", res.open_ms);
	printf("ratios fresh/resident: p50 %.1fx, p99 %.1fx, mean %.1fx, requests per commit %.1fx\n",
		   ratio(percentile(&fresh, 0.5), percentile(&res, 0.5)),
		   ratio(percentile(&fresh, 0.99), percentile(&res, 0.99)),
		   ratio(mean(&fresh), mean(&res)),
		   ratio(requests(&fresh.stats), requests(&res.stats)));
	printf("new connections: resident %llu in %d commits, fresh %llu in %d commits\n",
		   (unsigned long long) res.stats.connections, n,
		   (unsigned long long) fresh.stats.connections, n);
	cx_schema_free(schema);
	free(res.ms);
	free(fresh.ms);
	free(opts);
	return 0;
}
