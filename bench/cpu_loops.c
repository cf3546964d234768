/*
 * cpu_loops.c — CPU per row of two in-memory loops of the ingest path, with
 * no object store and no server (bench/cpu_loops.sh builds it against two
 * trees and runs them side by side):
 *
 *   sort   a merge's sorted run: rows of (uuid text key, int, short text)
 *          added (cx_sort_run_add), then sorted and decoded back
 *          (cx_sort_run_flush), NROWS rows per run;
 *   keys   the writer's key cache grown to 3,000,000 keys by 1,000-key
 *          requests: each request's keys looked up (absent, as new uuids
 *          are: what the uniqueness check does), then 8 MiB of other memory
 *          written (what the writer does between staging a request and
 *          committing it, encoding the generation, evicts the cache's slots
 *          the lookups fetched), then the keys applied (cx_kc_apply);
 *          timed once the cache holds 1,000,000;
 *   order  NROWS uuid keys' indexes put in byte-wise order, as a base
 *          probe orders the keys it looks up in the key index: with
 *          HAVE_PREFIX_SORT by cx_prefix_sort (util/cx_prefix_sort.h), as
 *          trees that have it do, else by qsort_r comparing the keys, as
 *          the probe did before.
 *
 * Usage: cpu_loops NROWS.  With HAVE_KC_PREFETCH the lookups prefetch a few
 * keys ahead, as resolving a request does in trees that have it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memwal/cx_key_cache.h"
#include "merge/cx_merge.h"
#include "merge/cx_merge_int.h"
#ifdef HAVE_PREFIX_SORT
#include "util/cx_prefix_sort.h"
#endif

#define KEY_LEN 36
#define REQUEST 1000
#define OTHER_WORK (8 << 20)

static volatile unsigned sink;	/* keeps the other work from being elided */
#define AHEAD 8				/* as resolving a request does */

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The next pseudo-random uuid as text into key (KEY_LEN + 1 bytes). */
static void
next_uuid(uint64_t *seed, char *key)
{
	uint64_t	a = *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	uint64_t	b = *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;

	snprintf(key, KEY_LEN + 1, "%08x-%04x-4%03x-a%03x-%012llx",
			 (unsigned) (a >> 32), (unsigned) (a >> 16) & 0xffff,
			 (unsigned) a & 0xfff, (unsigned) (b >> 52),
			 (unsigned long long) b & 0xffffffffffffULL);
}

static cx_code
count_row(void *arg, const cx_datum *values, cx_keyver *v, cx_err *err)
{
	(void) v;
	(void) err;
	*(uint64_t *) arg += (uint64_t) values[1].v.i64;
	return CX_OK;
}

static void
die(const cx_err *err)
{
	fprintf(stderr, "cpu_loops: %s\n", err->msg);
	exit(1);
}

static void
sort_loop(uint32_t nrows)
{
	cx_err		err;
	cx_schema  *schema = cx_schema_new();
	merge_state ms = {0};
	char	   *keys = malloc((size_t) nrows * (KEY_LEN + 1));
	uint64_t	seed = 7;
	uint64_t	sum = 0;
	double		add = 0;
	double		flush = 0;
	int			runs = 20;

	if (schema == NULL || keys == NULL ||
		cx_schema_add(schema, "id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		cx_schema_add(schema, "n", CX_T_INT64, 0, NULL, &err) != CX_OK ||
		cx_schema_add(schema, "content", CX_T_STRING, 0, NULL, &err) != CX_OK)
		die(&err);
	ms.written_schema = schema;
	ms.order = (cx_sort_order) {.cols = {0}, .types = {CX_T_STRING}, .n = 1};
	cx_merge_options_default(&ms.opt);
	for (int r = 0; r < runs + 2; r++)
	{
		cx_sort_run *run;
		double		t0, t1, t2;

		for (uint32_t i = 0; i < nrows; i++)
			next_uuid(&seed, keys + (size_t) i * (KEY_LEN + 1));
		if (cx_sort_run_new(&ms, &run, &err) != CX_OK)
			die(&err);
		t0 = now();
		for (uint32_t i = 0; i < nrows; i++)
		{
			cx_datum	v[3] = {{.isnull = false}};
			bool		full;

			v[0].v.bytes.ptr = (const uint8_t *) keys + (size_t) i * (KEY_LEN + 1);
			v[0].v.bytes.len = KEY_LEN;
			v[1].v.i64 = i;
			v[2].v.bytes.ptr = (const uint8_t *) "a short agent message of a few words";
			v[2].v.bytes.len = 36;
			if (cx_sort_run_add(run, v, NULL, &full, &err) != CX_OK)
				die(&err);
		}
		t1 = now();
		if (cx_sort_run_flush(run, count_row, &sum, &err) != CX_OK)
			die(&err);
		t2 = now();
		cx_sort_run_free(run);
		if (r >= 2)				/* the first two warm the allocator */
		{
			add += t1 - t0;
			flush += t2 - t1;
		}
	}
	printf("sort_add_ns_per_row %.1f\n", add / runs / nrows * 1e9);
	printf("sort_flush_ns_per_row %.1f\n", flush / runs / nrows * 1e9);
	free(keys);
	cx_schema_free(schema);
}

static void
keys_loop(void)
{
	cx_err		err;
	cx_keycache *cache = cx_kc_new();
	char		keys[REQUEST][KEY_LEN + 1];
	uint64_t	seed = 11;
	uint64_t	found = 0;
	double		get = 0;
	double		apply = 0;
	uint64_t	timed = 0;
	char	   *other = malloc(OTHER_WORK);

	if (cache == NULL || other == NULL)
		return;
	for (int r = 0; r < 3000; r++)
	{
		cx_keycache *req = cx_kc_new();
		double		t0, t1, t2, t3;

		for (int i = 0; i < REQUEST; i++)
			next_uuid(&seed, keys[i]);
		t0 = now();
		for (int i = 0; i < REQUEST; i++)
		{
			cx_kc_row	row;

#ifdef HAVE_KC_PREFETCH
			if (i + AHEAD < REQUEST)
				cx_kc_prefetch(cache, (const uint8_t *) keys[i + AHEAD], KEY_LEN);
#endif
			found += cx_kc_get(cache, (const uint8_t *) keys[i], KEY_LEN, &row);
		}
		t1 = now();
		for (int i = 0; i < REQUEST; i++)
		{
			cx_kc_row	row = {.key = (const uint8_t *) keys[i], .key_len = KEY_LEN};

			if (req == NULL || cx_kc_put(req, &row, &err) != CX_OK)
				die(&err);
		}
		memset(other, r, OTHER_WORK);
		sink += (unsigned char) other[(size_t) r * 4099 % OTHER_WORK];
		t2 = now();
		if (cx_kc_apply(cache, req, 1, (uint64_t) r + 1, &err) != CX_OK)
			die(&err);
		t3 = now();
		cx_kc_free(req);
		if (r >= 1000)
		{
			get += t1 - t0;
			apply += t3 - t2;
			timed += REQUEST;
		}
	}
	printf("keys_lookup_ns_per_key %.1f\n", get / timed * 1e9);
	printf("keys_apply_ns_per_key %.1f\n", apply / timed * 1e9);
	if (found != 0)
		printf("unexpected: %llu keys found\n", (unsigned long long) found);
	cx_kc_free(cache);
	free(other);
}

/* Key x against key y (indexes into arg, KEY_LEN bytes each), then index. */
static int
key_order(const uint8_t *keys, uint32_t x, uint32_t y)
{
	int			c = memcmp(keys + (size_t) x * (KEY_LEN + 1),
						   keys + (size_t) y * (KEY_LEN + 1), KEY_LEN);

	return c != 0 ? c : (x > y) - (x < y);
}

#ifdef HAVE_PREFIX_SORT
static int
slot_order(const void *a, const void *b, void *arg)
{
	return key_order(arg, ((const cx_prefix_slot *) a)->item,
					 ((const cx_prefix_slot *) b)->item);
}
#else
static int
index_order(const void *a, const void *b, void *arg)
{
	return key_order(arg, *(const uint32_t *) a, *(const uint32_t *) b);
}
#endif

static void
order_loop(uint32_t n)
{
	uint8_t    *keys = malloc((size_t) n * (KEY_LEN + 1));
	uint32_t   *order = malloc((size_t) n * sizeof(uint32_t));
	uint64_t	seed = 17;
	uint64_t	check = 0;
	double		t = 0;
	int			runs = 20;

	if (keys == NULL || order == NULL)
		return;
	for (int r = 0; r < runs; r++)
	{
		double		t0;

		for (uint32_t i = 0; i < n; i++)
			next_uuid(&seed, (char *) keys + (size_t) i * (KEY_LEN + 1));
		t0 = now();
#ifdef HAVE_PREFIX_SORT
		{
			cx_prefix_slot *slots = malloc((size_t) n * 2 * sizeof(cx_prefix_slot));
			const cx_prefix_slot *sorted;

			if (slots == NULL)
				return;
			for (uint32_t i = 0; i < n; i++)
			{
				slots[i].prefix = cx_bytes_prefix(keys + (size_t) i * (KEY_LEN + 1), KEY_LEN);
				slots[i].item = i;
			}
			sorted = cx_prefix_sort(slots, slots + n, n, slot_order, keys);
			for (uint32_t i = 0; i < n; i++)
				order[i] = sorted[i].item;
			free(slots);
		}
#else
		for (uint32_t i = 0; i < n; i++)
			order[i] = i;
		qsort_r(order, n, sizeof(uint32_t), index_order, keys);
#endif
		t += now() - t0;
		check += order[0];
	}
	printf("order_ns_per_key %.1f\n", t / runs / n * 1e9);
	if (check == UINT64_MAX)
		printf("unlikely\n");
	free(keys);
	free(order);
}

int
main(int argc, char **argv)
{
	uint32_t	nrows = argc > 1 ? (uint32_t) atol(argv[1]) : 20000;

	sort_loop(nrows);
	order_loop(nrows);
	keys_loop();
	return 0;
}
