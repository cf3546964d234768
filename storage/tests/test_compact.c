/*
 * test_compact.c — compaction (maintenance/cx_compact*.c): which fragments
 * it chooses, the lease that keeps compactions from running at once, the
 * commit, and the job end to end.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cx_test.h"
#include "mw_util.h"
#include "maintenance/cx_compact_int.h"
#include "memwal/cx_shard_manifest.h"
#include "objstore/cx_layout.h"
#include "scan/cx_table_scan.h"
#include "table/cx_commit.h"
#include "table/cx_fragment_entry.h"
#include "table/cx_key_index.h"
#include "util/cx_clock.h"
#include "util/cx_failpoint.h"

/* A manifest listing fragments with these row counts (no columns). */
static cx_manifest *
fragments_of(const uint64_t *rows, uint32_t n)
{
	cx_manifest *m = cx_manifest_new();
	cx_err		err;

	if (m == NULL)
		abort();
	for (uint32_t i = 0; i < n; i++)
	{
		char		path[32];
		cx_fragment_info fi = {.path = path, .rows = rows[i]};

		snprintf(path, sizeof(path), "data/f%u.parquet", i);
		if (cx_manifest_add_fragment(m, &fi, &err) != CX_OK)
			abort();
	}
	return m;
}

/* The picked indices as "0,1,3" ("" for none). */
static const char *
picked_list(const cx_manifest *m, const cx_compact_options *o)
{
	static char out[CX_ERR_MSG_LEN + 16];
	uint32_t   *picked;
	uint32_t	n;
	cx_err		err;
	size_t		len = 0;

	out[0] = '\0';
	if (cx_compact_select(m, o, &picked, &n, &err) != CX_OK)
	{
		snprintf(out, sizeof(out), "error: %s", err.msg);
		return out;
	}
	for (uint32_t i = 0; i < n; i++)
		len += snprintf(out + len, sizeof(out) - len, "%s%u", i ? "," : "",
						picked[i]);
	free(picked);
	return out;
}

CX_TEST(compact_options_default_values)
{
	cx_compact_options o;

	cx_compact_options_default(&o);
	CHECK(o.min_fragments == CX_COMPACT_DEFAULT_MIN_FRAGMENTS);
	CHECK(o.lease_seconds == CX_COMPACT_DEFAULT_LEASE_SECONDS);
	CHECK(o.target_rows_per_fragment == CX_MERGE_DEFAULT_TARGET_ROWS);
	CHECK(o.sort_memory == CX_MERGE_DEFAULT_SORT_MEMORY);
	CHECK(o.sort_key == NULL && o.holder == NULL && !o.force);
	CHECK(o.small_rows == 0);
}

/* Fragments of 5, 2, 5000, 6, 20, 3 and 9 rows, target 5000.  Tiers of
 * factor 4: 2,3 in tier 0; 5,6,9 in tier 1; 20 in tier 2; 5000 is at the
 * target and never small. */
static cx_manifest *
tiered_fragments(cx_compact_options *o)
{
	const uint64_t rows[] = {5, 2, 5000, 6, 20, 3, 9};

	cx_compact_options_default(o);
	o->target_rows_per_fragment = 5000;
	return fragments_of(rows, 7);
}

CX_TEST(compact_select_takes_smallest_tier_with_enough)
{
	cx_compact_options o;
	cx_manifest *m = tiered_fragments(&o);

	o.min_fragments = 2;
	CHECK(strcmp(picked_list(m, &o), "1,5") == 0);
	o.min_fragments = 3;
	CHECK(strcmp(picked_list(m, &o), "0,3,6") == 0);
	o.min_fragments = 4;
	CHECK(strcmp(picked_list(m, &o), "") == 0);
	o.force = true;
	CHECK(strcmp(picked_list(m, &o), "0,1,3,4,5,6") == 0);
	cx_manifest_free(m);
}

/* small_rows lowers what counts as small: below 9 rows the tier of 5, 6
 * and 9 loses its 9 and no longer has three; even forced, 20 and 9 stay. */
CX_TEST(compact_select_small_rows_bounds_the_inputs)
{
	cx_compact_options o;
	cx_manifest *m = tiered_fragments(&o);

	o.min_fragments = 3;
	o.small_rows = 9;
	CHECK(strcmp(picked_list(m, &o), "") == 0);
	o.min_fragments = 2;
	CHECK(strcmp(picked_list(m, &o), "1,5") == 0);
	o.force = true;
	CHECK(strcmp(picked_list(m, &o), "0,1,3,5") == 0);
	o.small_rows = 100000;		/* above the target: the target rules */
	CHECK(strcmp(picked_list(m, &o), "0,1,3,4,5,6") == 0);
	cx_manifest_free(m);
}

/* At most max_inputs, the smallest (ties: the lower index), in index
 * order: 2 (1), 3 (5), then 5 (0) before 6 and 9. */
CX_TEST(compact_select_caps_inputs_at_the_smallest)
{
	cx_compact_options o;
	cx_manifest *m = tiered_fragments(&o);

	o.force = true;
	o.max_inputs = 3;
	CHECK(strcmp(picked_list(m, &o), "0,1,5") == 0);
	o.force = false;
	o.min_fragments = 2;
	o.max_inputs = 2;
	CHECK(strcmp(picked_list(m, &o), "1,5") == 0);
	o.min_fragments = 3;
	CHECK(strcmp(picked_list(m, &o), "0,3") == 0);
	cx_manifest_free(m);
}

/* Deleted rows count against a fragment's size: 40 rows with 38 deleted
 * sit in tier 0 with the 2-row one. */
CX_TEST(compact_select_sizes_by_live_rows)
{
	const uint64_t rows[] = {40, 2};
	cx_manifest *m = fragments_of(rows, 2);
	uint32_t	dead[38];
	cx_compact_options o;
	cx_err		err;

	for (uint32_t i = 0; i < 38; i++)
		dead[i] = i;
	cx_compact_options_default(&o);
	o.min_fragments = 2;
	CHECK(strcmp(picked_list(m, &o), "") == 0);
	REQUIRE_OK(cx_manifest_add_deletions(m, 0, dead, 38, &err), &err);
	CHECK(strcmp(picked_list(m, &o), "0,1") == 0);
	cx_manifest_free(m);
}

/* force rewrites a lone small fragment only to drop its deleted rows. */
CX_TEST(compact_select_force_skips_useless_rewrite)
{
	const uint64_t rows[] = {10};
	cx_manifest *m = fragments_of(rows, 1);
	const uint32_t dead[] = {4};
	cx_compact_options o;
	cx_err		err;

	cx_compact_options_default(&o);
	o.force = true;
	CHECK(strcmp(picked_list(m, &o), "") == 0);
	REQUIRE_OK(cx_manifest_add_deletions(m, 0, dead, 1, &err), &err);
	CHECK(strcmp(picked_list(m, &o), "0") == 0);
	o.force = false;
	o.min_fragments = 1;
	CHECK(strcmp(picked_list(m, &o), "") == 0);
	cx_manifest_free(m);
}

#define SECOND INT64_C(1000000)
/* 2026-12-01 16:00:00 UTC */
#define T0 (INT64_C(1796140800) * SECOND)

CX_TEST(compact_lease_busy_names_holder)
{
	cx_objstore *s;
	cx_compact_lease l;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_compact_lease_take(s, "pg-a pid 41", 60, T0, &err), &err);
	CHECK_CODE(cx_compact_lease_take(s, "pg-b pid 7", 60, T0 + 10 * SECOND, &err),
			   CX_ERR_BUSY);
	CHECK(strstr(err.msg, "pg-a pid 41") != NULL);
	CHECK(strstr(err.msg, "since 2026-12-01 16:00:00 UTC") != NULL);
	CHECK(strstr(err.msg, "50 more seconds") != NULL);
	/* The holder renews it, keeping when it first took it. */
	REQUIRE_OK(cx_compact_lease_take(s, "pg-a pid 41", 60, T0 + 30 * SECOND, &err), &err);
	REQUIRE_OK(cx_compact_lease_read(s, &l, &err), &err);
	CHECK(strcmp(l.holder, "pg-a pid 41") == 0);
	CHECK(l.since_us == T0 && l.expires_us == T0 + 90 * SECOND);
	CHECK_CODE(cx_compact_lease_take(s, "pg-b pid 7", 60, T0 + 80 * SECOND, &err),
			   CX_ERR_BUSY);
	cx_obj_close(s);
}

CX_TEST(compact_lease_expired_is_taken_over)
{
	cx_objstore *s;
	cx_compact_lease l;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_compact_lease_take(s, "a", 60, T0, &err), &err);
	REQUIRE_OK(cx_compact_lease_take(s, "b", 60, T0 + 61 * SECOND, &err), &err);
	REQUIRE_OK(cx_compact_lease_read(s, &l, &err), &err);
	CHECK(strcmp(l.holder, "b") == 0 && l.since_us == T0 + 61 * SECOND);
	/* The old holder, back late, finds it taken. */
	CHECK_CODE(cx_compact_lease_take(s, "a", 60, T0 + 62 * SECOND, &err),
			   CX_ERR_BUSY);
	CHECK(strstr(err.msg, ": b, since") != NULL);
	cx_obj_close(s);
}

CX_TEST(compact_lease_release_only_by_holder)
{
	cx_objstore *s;
	cx_compact_lease l;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_compact_lease_release(s, "a", &err), &err);
	REQUIRE_OK(cx_compact_lease_take(s, "a", 60, T0, &err), &err);
	REQUIRE_OK(cx_compact_lease_release(s, "b", &err), &err);
	REQUIRE_OK(cx_compact_lease_read(s, &l, &err), &err);
	CHECK(strcmp(l.holder, "a") == 0);
	REQUIRE_OK(cx_compact_lease_release(s, "a", &err), &err);
	CHECK_CODE(cx_compact_lease_read(s, &l, &err), CX_ERR_NOT_FOUND);
	REQUIRE_OK(cx_compact_lease_take(s, "b", 60, T0, &err), &err);
	cx_obj_close(s);
}

/* A lease that cannot be read (a holder that wrote garbage) does not block
 * compaction for ever; a bad holder name is refused before any write. */
CX_TEST(compact_lease_unreadable_is_taken_over)
{
	cx_objstore *s;
	cx_compact_lease l;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, CX_COMPACTION_LEASE_KEY, "junk", 4, CX_PUT_OVERWRITE, &err), &err);
	CHECK_CODE(cx_compact_lease_read(s, &l, &err), CX_ERR_CORRUPT);
	REQUIRE_OK(cx_compact_lease_take(s, "a", 60, T0, &err), &err);
	REQUIRE_OK(cx_compact_lease_read(s, &l, &err), &err);
	CHECK(strcmp(l.holder, "a") == 0);
	CHECK_CODE(cx_compact_lease_take(s, "two\nlines", 60, T0, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_compact_lease_take(s, "", 60, T0, &err), CX_ERR_INVALID);
	cx_obj_close(s);
}

/* A lease race: the next put-if-absent of the lease meets one holder "b"
 * put just before (step 1), and b releases it just before the next read
 * of the lease (step 2). */
static const cx_objstore_ops *race_real_ops;
static cx_objstore_ops race_ops;
static int	race_step;

/* Runs fn on s's real backend (so the hooks do not see its calls). */
static void
race_unhooked(cx_objstore *s, bool take)
{
	cx_err		ignored;

	s->ops = race_real_ops;
	if (take)
		(void) cx_compact_lease_take(s, "b", 60, T0, &ignored);
	else
		(void) cx_compact_lease_release(s, "b", &ignored);
	s->ops = &race_ops;
}

static cx_code
race_put(cx_objstore *s, const char *key, const void *data, size_t len,
		 cx_put_mode mode, cx_err *err)
{
	if (race_step == 1 && mode == CX_PUT_IF_ABSENT &&
		strcmp(key, CX_COMPACTION_LEASE_KEY) == 0)
	{
		race_step = 2;
		race_unhooked(s, true);
	}
	return race_real_ops->put(s, key, data, len, mode, err);
}

static cx_code
race_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		 cx_buf *out, cx_err *err)
{
	if (race_step == 2 && strcmp(key, CX_COMPACTION_LEASE_KEY) == 0)
	{
		race_step = 0;
		race_unhooked(s, false);
	}
	return race_real_ops->get(s, key, offset, len, out, err);
}

/* Another job takes the lease between our read and our put, and releases
 * it before we read whose it is: the store is free, so we take it (it was
 * a "not found" error; found by the simulation, seed 30). */
CX_TEST(compact_lease_released_while_we_raced_for_it_is_taken)
{
	cx_objstore *s;
	cx_compact_lease l;
	cx_err		err;
	cx_code		rc;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	race_real_ops = s->ops;
	race_ops = *s->ops;
	race_ops.put = race_put;
	race_ops.get = race_get;
	s->ops = &race_ops;
	race_step = 1;
	rc = cx_compact_lease_take(s, "a", 60, T0, &err);
	s->ops = race_real_ops;
	CHECK(race_step == 0);
	if (rc != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	REQUIRE_OK(cx_compact_lease_read(s, &l, &err), &err);
	CHECK(strcmp(l.holder, "a") == 0);
	cx_obj_close(s);
}

static bool
dv_is(const cx_manifest *m, uint32_t f, const uint32_t *rows, uint32_t n)
{
	const cx_deletion_vector *dv = m->dvs != NULL ? &m->dvs[f] : NULL;
	uint32_t	have = dv != NULL ? dv->n : 0;

	return have == n && (n == 0 || memcmp(dv->rows, rows, n * sizeof(uint32_t)) == 0);
}

/* The edit keeps every fragment that is no input, in order, and appends
 * the outputs; a missing input is a conflict that leaves m alone. */
CX_TEST(compact_rewrite_replaces_inputs)
{
	const uint64_t rows[] = {4, 3, 5};
	cx_manifest *m = fragments_of(rows, 3);
	const char *inputs[] = {"data/f0.parquet", "data/f2.parquet"};
	const char *gone[] = {"data/f0.parquet", "data/nope.parquet"};
	cx_fragment_info out = {.path = "data/out.parquet", .rows = 9};
	cx_err		err;

	CHECK_CODE(cx_manifest_rewrite(m, gone, 2, &out, 1, &err), CX_ERR_CONFLICT);
	CHECK(strstr(err.msg, "data/nope.parquet") != NULL);
	REQUIRE(m->nfragments == 3);
	REQUIRE_OK(cx_manifest_rewrite(m, inputs, 2, &out, 1, &err), &err);
	REQUIRE(m->nfragments == 2);
	CHECK(strcmp(m->fragments[0].path, "data/f1.parquet") == 0);
	CHECK(strcmp(m->fragments[1].path, "data/out.parquet") == 0);
	CHECK(m->fragments[1].rows == 9);
	cx_manifest_free(m);
}

static void
map_row(cx_compact_rowmap *map, uint32_t input, uint32_t row, uint32_t output,
		uint32_t out_row)
{
	map->dest[input][row] = (cx_row_dest) {output, out_row};
}

/*
 * Compaction read f0 (row 1 deleted) and f1, wrote their live rows to two
 * outputs; meanwhile a merge added f3 and deleted f0 row 3, f1 row 0 and
 * f2 row 2.  The commit keeps f2's and f3's state and moves the two new
 * deletions of inputs to the output rows that hold those rows.
 */
CX_TEST(compact_carries_concurrent_deletions)
{
	const uint64_t rows[] = {4, 3, 5};
	cx_manifest *read = fragments_of(rows, 3);
	cx_manifest *now = NULL;
	cx_manifest *edited = NULL;
	const uint32_t inputs[] = {0, 1};
	const char *paths[] = {"data/f0.parquet", "data/f1.parquet"};
	cx_fragment_info outs[] = {{.path = "data/o0.parquet", .rows = 3},
	{.path = "data/o1.parquet", .rows = 3}};
	cx_fragment_info added = {.path = "data/f3.parquet", .rows = 2};
	const uint32_t r1[] = {1}, r13[] = {1, 3}, r0[] = {0}, r2[] = {2};
	cx_compact_rowmap map;
	uint64_t	carried;
	cx_err		err;

	REQUIRE_OK(cx_manifest_add_deletions(read, 0, r1, 1, &err), &err);
	REQUIRE_OK(cx_compact_rowmap_init(&map, read, inputs, 2, &err), &err);
	map_row(&map, 0, 0, 0, 0);
	map_row(&map, 0, 2, 0, 1);
	map_row(&map, 0, 3, 1, 0);
	map_row(&map, 1, 0, 0, 2);
	map_row(&map, 1, 1, 1, 1);
	map_row(&map, 1, 2, 1, 2);
	now = cx_manifest_clone(read);
	REQUIRE(now != NULL);
	REQUIRE_OK(cx_manifest_add_fragment(now, &added, &err), &err);
	REQUIRE_OK(cx_manifest_add_deletions(now, 0, r13, 2, &err), &err);
	REQUIRE_OK(cx_manifest_add_deletions(now, 1, r0, 1, &err), &err);
	REQUIRE_OK(cx_manifest_add_deletions(now, 2, r2, 1, &err), &err);
	edited = cx_manifest_clone(now);
	REQUIRE(edited != NULL);
	REQUIRE_OK(cx_manifest_rewrite(edited, paths, 2, outs, 2, &err), &err);
	REQUIRE(edited->nfragments == 4);
	REQUIRE_OK(cx_compact_carry_deletions(&map, read, inputs, now, edited, 2,
										  &carried, &err), &err);
	CHECK(carried == 2);
	CHECK(strcmp(edited->fragments[0].path, "data/f2.parquet") == 0 && dv_is(edited, 0, r2, 1));
	CHECK(strcmp(edited->fragments[1].path, "data/f3.parquet") == 0 && dv_is(edited, 1, NULL, 0));
	CHECK(dv_is(edited, 2, r2, 1));	/* f1 row 0 was o0 row 2 */
	CHECK(dv_is(edited, 3, r0, 1));	/* f0 row 3 was o1 row 0 */
	/* f2 and f3 as now has them, and the four output rows still live. */
	CHECK(cx_manifest_rows(edited) == 4 + 2 + 4);
	/* Carrying onto an edit that lost an input is refused. */
	CHECK_CODE(cx_compact_carry_deletions(&map, read, inputs, edited, edited, 2,
										  &carried, &err), CX_ERR_CONFLICT);
	cx_compact_rowmap_free(&map);
	cx_manifest_free(read);
	cx_manifest_free(now);
	cx_manifest_free(edited);
}

/* A deleted row the map says was never written means the map is wrong:
 * an error, never a silently resurrected or lost row. */
CX_TEST(compact_carry_refuses_unmapped_row)
{
	const uint64_t rows[] = {2};
	cx_manifest *read = fragments_of(rows, 1);
	cx_manifest *now = cx_manifest_clone(read);
	const uint32_t inputs[] = {0};
	const uint32_t r1[] = {1};
	cx_compact_rowmap map;
	uint64_t	carried;
	cx_err		err;

	REQUIRE(now != NULL);
	REQUIRE_OK(cx_compact_rowmap_init(&map, read, inputs, 1, &err), &err);
	map_row(&map, 0, 0, 0, 0);
	REQUIRE_OK(cx_manifest_add_deletions(now, 0, r1, 1, &err), &err);
	CHECK_CODE(cx_compact_carry_deletions(&map, read, inputs, now, now, 0,
										  &carried, &err), CX_ERR_INVALID);
	cx_compact_rowmap_free(&map);
	cx_manifest_free(read);
	cx_manifest_free(now);
}

/* --------------------------------------------------------------------------
 * Committing against a store that moved on
 * -------------------------------------------------------------------------- */

typedef struct test_append
{
	const char *const *paths;
	const uint64_t *rows;
	uint32_t	n;
} test_append;

/* Adds fragments (one int64 column; the objects need not exist, commits only
 * record them). */
static cx_code
append_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	test_append *a = arg;
	cx_colstats stats = {.value_count = 1};

	if (base == NULL)
	{
		cx_schema  *schema = cx_schema_new();
		cx_code		rc = schema == NULL ? CX_ERR_NOMEM :
			cx_schema_add(schema, "n", CX_T_INT64, 0, NULL, err);

		if (rc == CX_OK)
			rc = cx_manifest_set_schema(next, schema, err);
		cx_schema_free(schema);
		if (rc != CX_OK)
			return rc;
	}
	for (uint32_t i = 0; i < a->n; i++)
	{
		cx_fragment_info fi = {.path = (char *) a->paths[i], .rows = a->rows[i],
		.size = 100, .ncolumns = 1, .stats = &stats};

		if (cx_manifest_add_fragment(next, &fi, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* Commits what rebase does, failing the test if it cannot. */
static void
commit_or_fail(cx_objstore *s, const char *operation, cx_rebase_fn rebase,
			   void *arg)
{
	uint64_t	v;
	cx_err		err;

	if (cx_commit(s, operation, rebase, arg, NULL, &v, &err) != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
}

static void
append(cx_objstore *s, const char *const *paths, const uint64_t *rows,
	   uint32_t n)
{
	test_append a = {paths, rows, n};

	commit_or_fail(s, "append", append_rebase, &a);
}

typedef struct test_delete
{
	const char *path;
	uint32_t	row;
} test_delete;

static cx_code
delete_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	test_delete *d = arg;

	(void) base;
	return cx_manifest_add_deletions(next, (uint32_t) cx_manifest_find_fragment(next, d->path),
									 &d->row, 1, err);
}

static void
delete_row(cx_objstore *s, const char *path, uint32_t row)
{
	test_delete d = {path, row};

	commit_or_fail(s, "delete", delete_rebase, &d);
}

/* f0 (4 rows) and f1 (3 rows) compacted into one 7-row output, in order;
 * *e keeps only the results (its inputs point to freed memory). */
static cx_code
compact_f0_f1(cx_objstore *s, const cx_manifest *read, const char *output,
			  cx_compact_edit *e, uint64_t *version, cx_err *err)
{
	static const uint32_t inputs[] = {0, 1};
	cx_colstats stats = {.value_count = 7};
	cx_fragment_info out = {.path = (char *) output, .rows = 7, .size = 100,
	.ncolumns = 1, .stats = &stats};
	cx_compact_rowmap map;
	cx_code		rc;

	if (cx_compact_rowmap_init(&map, read, inputs, 2, err) != CX_OK)
		return err->code;
	for (uint32_t r = 0; r < 7; r++)
		map_row(&map, r < 4 ? 0 : 1, r < 4 ? r : r - 4, 0, r);
	*e = (cx_compact_edit) {.read = read, .inputs = inputs, .ninputs = 2,
	.outputs = &out, .noutputs = 1, .map = &map};
	rc = cx_compact_commit(s, e, version, err);
	cx_compact_rowmap_free(&map);
	return rc;
}

static const char *const f01[] = {"data/f0.parquet", "data/f1.parquet"};
static const uint64_t rows43[] = {4, 3};

/* A merge and a delete commit after compaction read version 1: the merge's
 * fragment stays, the deletion in f0 moves to the output, f2's stays. */
CX_TEST(compact_commit_after_merge_and_delete)
{
	const char *const f2[] = {"data/f2.parquet"};
	const uint64_t rows5[] = {5};
	const uint32_t r0[] = {0}, r2[] = {2};
	cx_objstore *s;
	cx_manifest *read = NULL;
	cx_manifest *m = NULL;
	cx_compact_edit e;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	append(s, f01, rows43, 2);
	REQUIRE_OK(cx_manifest_load_latest(s, &read, &err), &err);
	append(s, f2, rows5, 1);
	delete_row(s, "data/f0.parquet", 2);
	delete_row(s, "data/f2.parquet", 0);
	REQUIRE_OK(compact_f0_f1(s, read, "data/o.parquet", &e, &v, &err), &err);
	CHECK(v == 5 && e.deletions_carried == 1 && e.retries == 0);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->version == 5 && strcmp(m->operation, CX_COMPACT_OPERATION) == 0);
	REQUIRE(m->nfragments == 2);
	CHECK(strcmp(m->fragments[0].path, "data/f2.parquet") == 0 && dv_is(m, 0, r0, 1));
	CHECK(strcmp(m->fragments[1].path, "data/o.parquet") == 0 && dv_is(m, 1, r2, 1));
	CHECK(cx_manifest_rows(m) == 4 + 6);
	cx_manifest_free(read);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* Two compactions of the same inputs: the second finds them gone and
 * commits nothing. */
CX_TEST(compact_commit_loses_to_another_compaction)
{
	cx_objstore *s;
	cx_manifest *read = NULL;
	cx_manifest *m = NULL;
	cx_compact_edit e;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	append(s, f01, rows43, 2);
	REQUIRE_OK(cx_manifest_load_latest(s, &read, &err), &err);
	REQUIRE_OK(compact_f0_f1(s, read, "data/a.parquet", &e, &v, &err), &err);
	CHECK(v == 2);
	CHECK_CODE(compact_f0_f1(s, read, "data/b.parquet", &e, &v, &err), CX_ERR_CONFLICT);
	CHECK(strstr(err.msg, "data/f0.parquet") != NULL);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->version == 2 && m->nfragments == 1);
	CHECK(strcmp(m->fragments[0].path, "data/a.parquet") == 0);
	cx_manifest_free(read);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * The job, end to end: a table of every type, keyed by id, in base
 * fragments made here (each sorted as merges sort), compacted by cx_compact
 * -------------------------------------------------------------------------- */

/* Setup the helpers below cannot go on without. */
#define MUST(call, errp) \
	do { \
		if ((call) != CX_OK) \
		{ \
			cx_test_fail(__FILE__, __LINE__, (errp)->msg); \
			abort(); \
		} \
	} while (0)

/* id, then a column of every type; "vec" is a vector (list of float32). */
static cx_schema *
typed_schema(void)
{
	static const struct
	{
		const char *name;
		cx_type		type;
		cx_type		elem;
		const char *ext;
	}			cols[] = {
		{"id", CX_T_INT64, 0, NULL},
		{"b", CX_T_BOOL, 0, NULL}, {"i16", CX_T_INT16, 0, NULL}, {"i32", CX_T_INT32, 0, NULL},
		{"f32", CX_T_FLOAT32, 0, NULL}, {"f64", CX_T_FLOAT64, 0, NULL},
		{"d", CX_T_DATE, 0, NULL}, {"t", CX_T_TIME, 0, NULL}, {"ts", CX_T_TIMESTAMP, 0, NULL},
		{"tz", CX_T_TIMESTAMPTZ, 0, NULL}, {"u", CX_T_UUID, 0, NULL}, {"iv", CX_T_INTERVAL, 0, NULL},
		{"s", CX_T_STRING, 0, NULL}, {"bin", CX_T_BINARY, 0, NULL}, {"j", CX_T_JSON, 0, NULL},
		{"jb", CX_T_JSONB, 0, NULL}, {"n", CX_T_NUMERIC, 0, NULL},
		{"e", CX_T_EXTERNAL, 0, "point"},
		{"ls", CX_T_LIST, CX_T_STRING, NULL}, {"vec", CX_T_LIST, CX_T_FLOAT32, NULL},
	};
	cx_schema  *s = cx_schema_new();
	cx_err		err;

	for (size_t i = 0; s != NULL && i < sizeof(cols) / sizeof(cols[0]); i++)
		if (cx_schema_add(s, cols[i].name, cols[i].type, cols[i].elem,
						  cols[i].ext, &err) != CX_OK)
			abort();
	return s;
}

#define TYPED_I32 3				/* the sort-key column of the tests */

typedef struct typed_scratch
{
	char		str[48];
	char		items[3][24];
	cx_datum	sitems[3];
	cx_datum	vitems[4];
} typed_scratch;

static void
set_text(cx_datum *d, const char *p, size_t len)
{
	d->isnull = false;
	d->v.bytes.ptr = (const uint8_t *) p;
	d->v.bytes.len = len;
}

static int32_t
typed_i32(int64_t id)
{
	return (int32_t) (id % 7) - 3;
}

/* Whether column c of row id is NULL. */
static bool
typed_null(int64_t id, uint32_t c)
{
	return c > 0 && (id + c) % 11 == 0;
}

/* Row id of the typed table (values of the table's columns), NULLs in
 * every column now and then. */
static void
typed_row(int64_t id, cx_datum *v, typed_scratch *sc)
{
	uint32_t	i = (uint32_t) id;
	int			len = snprintf(sc->str, sizeof(sc->str), "row-%u-\xc3\xa9", i);

	memset(v, 0, sizeof(cx_datum) * 20);
	v[0].v.i64 = id;
	v[1].v.b = i % 3 == 0;
	v[2].v.i16 = (int16_t) (i % 2 ? INT16_MIN + (int) i : INT16_MAX - (int) i);
	v[3].v.i32 = typed_i32(id);
	v[4].v.f32 = i % 5 == 0 ? NAN : (float) i / 3;
	v[5].v.f64 = i % 6 == 0 ? -INFINITY : -(double) i / 7;
	v[6].v.i32 = (int32_t) i - 1000;
	v[7].v.i64 = (int64_t) i * 1000000;
	v[8].v.i64 = (int64_t) i * 86400000000LL;
	v[9].v.i64 = -(int64_t) i;
	for (int k = 0; k < 16; k++)
		v[10].v.uuid[k] = (uint8_t) (i * 31 + k);
	v[11].v.interval.usec = -(int64_t) i * 3;
	v[11].v.interval.days = (int32_t) i % 7 - 3;
	v[11].v.interval.months = -(int32_t) i;
	set_text(&v[12], sc->str, i % 4 == 0 ? 0 : (size_t) len);
	set_text(&v[13], sc->str, (size_t) len + 1);
	set_text(&v[14], "{\"a\": 1}", 8);
	set_text(&v[15], "{\"b\": 2}", 8);
	set_text(&v[16], "-12.5000", i % 2 ? 8 : 1);
	set_text(&v[17], "\x00\x01\x02", 3);
	v[18].v.list.items = sc->sitems;
	v[18].v.list.n = i % 4;
	for (uint32_t k = 0; k < v[18].v.list.n; k++)
	{
		sc->sitems[k].isnull = (i + k) % 5 == 0;
		snprintf(sc->items[k], sizeof(sc->items[k]), "%u.%u", i, k);
		if (!sc->sitems[k].isnull)
			set_text(&sc->sitems[k], sc->items[k], strlen(sc->items[k]));
	}
	v[19].v.list.items = sc->vitems;
	v[19].v.list.n = 4;
	for (uint32_t k = 0; k < 4; k++)
		sc->vitems[k] = (cx_datum) {.v.f32 = (float) i + (float) k / 4};
	for (uint32_t c = 1; c < 20; c++)
		v[c].isnull = typed_null(id, c);
}

/* The order of the tests' fragments: by typed_i32 when by_i32, then id. */
static bool sort_by_i32;

static int
cmp_ids(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	if (sort_by_i32 && typed_null(x, TYPED_I32) != typed_null(y, TYPED_I32))
		return typed_null(x, TYPED_I32) ? 1 : -1;	/* NULLs last */
	if (sort_by_i32 && !typed_null(x, TYPED_I32) && typed_i32(x) != typed_i32(y))
		return typed_i32(x) < typed_i32(y) ? -1 : 1;
	return (x > y) - (x < y);
}

/* Writes rows ids[0..n) (sorted here) as a base fragment of
 * rows_per_group-row groups, the r-th row committed at ts + r. */
static void
write_typed_fragment(cx_objstore *s, const cx_schema *written, int64_t *ids,
					 uint32_t n, int64_t ts, uint32_t rows_per_group,
					 cx_fragment_info *fi)
{
	cx_datum	v[22];
	typed_scratch sc;
	cx_fragw_options o;
	cx_fragw   *w;
	char		key[64];
	cx_err		err;

	qsort(ids, n, sizeof(int64_t), cmp_ids);
	cx_fragw_options_default(&o);
	o.rows_per_group = rows_per_group;
	if (cx_fragment_new_key(key, sizeof(key), &err) != CX_OK ||
		cx_fragw_open(s, key, written, &o, &w, &err) != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	for (uint32_t r = 0; r < n; r++)
	{
		typed_row(ids[r], v, &sc);
		v[20] = (cx_datum) {.v.i64 = ts + r};
		v[21] = (cx_datum) {.v.b = false};
		if (cx_fragw_append(w, v, &err) != CX_OK)
			cx_test_fail(__FILE__, __LINE__, err.msg);
	}
	memset(fi, 0, sizeof(*fi));
	if (cx_fragw_finish(w, fi, &err) != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	cx_fragentry_set_field_ids(fi, written);
}

typedef struct typed_commit
{
	const cx_schema *table;
	cx_fragment_info *fragments;
	uint32_t	n;
} typed_commit;

/* The key column typed stores get (NULL: none, a table without a key). */
static const char *typed_key = "id";

static cx_code
typed_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			 cx_err *err)
{
	typed_commit *c = arg;

	if (base == NULL &&
		(cx_manifest_set_schema(next, c->table, err) != CX_OK ||
		 (typed_key != NULL &&
		  cx_manifest_set_key(next, typed_key, true, err) != CX_OK)))
		return err->code;
	for (uint32_t i = 0; i < c->n; i++)
		if (cx_manifest_add_fragment(next, &c->fragments[i], err) != CX_OK)
			return err->code;
	return CX_OK;
}

/*
 * Commits one more fragment of the typed table: ids first, first + stride,
 * ... (n of them), sorted by (typed_i32, id) when by_i32 or by id, committed
 * at ts, ts + 1, ...  Row groups of 4 rows.
 */
static void
add_typed_fragment(cx_objstore *s, int64_t first, int64_t stride, uint32_t n,
				   int64_t ts, bool by_i32)
{
	cx_schema  *table = typed_schema();
	cx_schema  *written;
	int64_t    *ids = malloc(sizeof(int64_t) * n);
	cx_fragment_info fi;
	typed_commit c = {table, &fi, 1};
	cx_err		err;

	MUST(cx_shard_generation_schema(table, &written, &err), &err);
	for (uint32_t r = 0; r < n; r++)
		ids[r] = first + (int64_t) r * stride;
	sort_by_i32 = by_i32;
	write_typed_fragment(s, written, ids, n, ts, 4, &fi);
	sort_by_i32 = false;
	commit_or_fail(s, "append", typed_rebase, &c);
	cx_fragment_info_free(&fi);
	free(ids);
	cx_schema_free(written);
	cx_schema_free(table);
}

/* Rows of fragment f of a typed store are committed from this time on. */
#define TYPED_TS(f) (INT64_C(1000) * ((f) + 1))

/* A typed store of nfrag fragments of per rows each, committed one by one
 * (as merges would), ids interleaved across them (fragment f holds ids f,
 * f + nfrag, ...). */
static cx_objstore *
typed_store(const char *suffix, uint32_t nfrag, uint32_t per, bool by_i32)
{
	cx_objstore *s;
	cx_err		err;

	MUST(cx_objstore_open(cx_test_uri(suffix), NULL, 0, &s, &err), &err);
	for (uint32_t f = 0; f < nfrag; f++)
		add_typed_fragment(s, f, nfrag, per, TYPED_TS(f), by_i32);
	return s;
}

/* One value as text: its key bytes in hex, "N" for NULL. */
static void
put_value(cx_buf *out, cx_type type, const cx_datum *d)
{
	uint8_t		fixed[CX_KEY_FIXED_MAX];
	const uint8_t *p;
	size_t		len;
	char		hex[3];

	if (!cx_datum_key_bytes(type, d, fixed, &p, &len))
	{
		cx_buf_put(out, "N", 1);
		return;
	}
	for (size_t k = 0; k < len; k++)
	{
		snprintf(hex, sizeof(hex), "%02x", p[k]);
		cx_buf_put(out, hex, 2);
	}
}

/* Row i of the scan's batch as text, every column. */
static char *
row_text(const cx_tablescan *scan, const cx_schema *table, uint32_t i)
{
	cx_buf		out;
	char	   *text;

	cx_buf_init(&out);
	for (uint32_t c = 0; c < table->ncolumns; c++)
	{
		cx_datum	d;
		cx_type		type = (cx_type) table->columns[c].type;

		cx_colvec_get(cx_tablescan_column(scan, c), i, &d);
		if (type != CX_T_LIST || d.isnull)
			put_value(&out, type, &d);
		else
		{
			cx_buf_put(&out, "[", 1);
			for (uint32_t k = 0; k < d.v.slice.n; k++)
			{
				cx_datum	e;

				cx_colvec_get(d.v.slice.elems, d.v.slice.start + k, &e);
				put_value(&out, (cx_type) table->columns[c].elem_type, &e);
				cx_buf_put(&out, ",", 1);
			}
			cx_buf_put(&out, "]", 1);
		}
		cx_buf_put(&out, "|", 1);
	}
	cx_buf_put_u8(&out, 0);
	text = strdup((const char *) out.data);
	cx_buf_free(&out);
	return text;
}

typedef struct text_rows
{
	char	  **r;
	uint32_t	n;
} text_rows;

static int
cmp_text(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Every live row of the newest snapshot, every column, as sorted text. */
static text_rows
scan_text(cx_objstore *s)
{
	text_rows	rows = {NULL, 0};
	cx_snapshot *snap;
	cx_tablescan *scan;
	cx_manifest *m;
	cx_err		err;
	cx_code		rc;

	MUST(cx_manifest_load_latest(s, &m, &err), &err);
	MUST(cx_snapshot_open(s, 0, &snap, &err), &err);
	rc = cx_tablescan_begin(snap, NULL, &scan, &err);
	while (rc == CX_OK)
	{
		const cx_rowgroup *g;
		const uint32_t *sel;
		uint32_t	n;

		rc = cx_tablescan_next(scan, &g, &sel, &n, &err);
		if (rc != CX_OK || g == NULL)
			break;
		rows.r = realloc(rows.r, sizeof(char *) * (rows.n + n + 1));
		for (uint32_t k = 0; k < n; k++)
			rows.r[rows.n++] = row_text(scan, m->schema, sel[k]);
	}
	if (rc != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	cx_manifest_free(m);
	if (rows.n > 0)
		qsort(rows.r, rows.n, sizeof(char *), cmp_text);
	return rows;
}

static bool
text_rows_equal(const text_rows *a, const text_rows *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (strcmp(a->r[i], b->r[i]) != 0)
			return false;
	return true;
}

static void
text_rows_free(text_rows *rows)
{
	for (uint32_t i = 0; i < rows->n; i++)
		free(rows->r[i]);
	free(rows->r);
}

static void
compact_options(cx_compact_options *o, uint64_t target)
{
	cx_compact_options_default(o);
	o->target_rows_per_fragment = target;
	o->min_fragments = 2;
	o->holder = "test";
	o->fragment.rows_per_group = 4;
}

/* The ids of fragment f of m in row order, with typed_i32 of each. */
static uint32_t
fragment_ids(cx_objstore *s, const cx_fragment_info *fi, int64_t *ids,
			 uint32_t cap)
{
	cx_fragr   *r;
	uint32_t	n = 0;
	cx_err		err;

	MUST(cx_fragr_open_entry(s, fi, &r, &err), &err);
	for (uint32_t g = 0; g < cx_fragr_num_groups(r); g++)
	{
		cx_rowgroup *rg;

		MUST(cx_fragr_read_group(r, g, NULL, &rg, &err), &err);
		for (uint32_t i = 0; i < cx_rowgroup_rows(rg) && n < cap; i++)
		{
			cx_datum	d;

			cx_colvec_get(cx_rowgroup_column(rg, 0), i, &d);
			ids[n++] = d.v.i64;
		}
		cx_rowgroup_free(rg);
	}
	cx_fragr_close(r);
	return n;
}

/* Whether every fragment of the newest version from `first` on is in
 * order and, unless target is 0, holds `target` rows but the last. */
static bool
outputs_in_order(cx_objstore *s, uint32_t first, uint64_t target, bool by_i32)
{
	cx_manifest *m;
	int64_t		ids[512];
	bool		ok = true;
	cx_err		err;

	MUST(cx_manifest_load_latest(s, &m, &err), &err);
	sort_by_i32 = by_i32;
	for (uint32_t f = first; f < m->nfragments; f++)
	{
		uint32_t	n = fragment_ids(s, &m->fragments[f], ids, 512);

		ok &= n == m->fragments[f].rows;
		ok &= target == 0 || f + 1 == m->nfragments || n == target;
		for (uint32_t i = 1; i < n; i++)
			ok &= cmp_ids(&ids[i - 1], &ids[i]) < 0;
	}
	sort_by_i32 = false;
	cx_manifest_free(m);
	return ok;
}

static uint64_t
newest_version(cx_objstore *s)
{
	uint64_t	v = 0;
	cx_err		err;

	MUST(cx_manifest_latest_version(s, &v, &err), &err);
	return v;
}

/* Six fragments of 30 rows become three: 64, 64 and 52 rows; every value
 * of every type (NULLs, lists, vectors) reads back the same, in key order. */
CX_TEST(compact_job_preserves_rows_of_every_type)
{
	cx_objstore *s = typed_store("/store", 6, 30, false);
	text_rows	before = scan_text(s);
	text_rows	after;
	cx_compact_options o;
	cx_compact_result res;
	cx_manifest *m;
	cx_err		err;

	compact_options(&o, 64);
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 6 && res.outputs == 3);
	CHECK(res.rows == 180 && res.rows_dropped == 0 && res.version == 7);
	CHECK(res.bytes_read > 0 && res.bytes_written > 0 && res.retries == 0);
	after = scan_text(s);
	CHECK(before.n == 180 && text_rows_equal(&before, &after));
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->nfragments == 3 && strcmp(m->operation, CX_COMPACT_OPERATION) == 0);
	CHECK(m->fragments[0].rows == 64 && m->fragments[2].rows == 52);
	cx_manifest_free(m);
	CHECK(outputs_in_order(s, 0, 64, false));
	/* Nothing small enough is left to pair: nothing to do. */
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(!res.compacted && res.inputs == 0 && newest_version(s) == 7);
	text_rows_free(&before);
	text_rows_free(&after);
	cx_obj_close(s);
}

/* What a job's "reading" reports tell: inputs held at once (chosen and not
 * finished) and the inputs chosen over the whole job. */
typedef struct reading_seen
{
	uint64_t	peak_open;
	uint64_t	last_total;
	uint32_t	reports;
} reading_seen;

static bool
note_reading(void *arg, const char *phase, uint64_t done, uint64_t total)
{
	reading_seen *seen = arg;

	if (strcmp(phase, "reading") != 0)
		return true;
	if (total - done > seen->peak_open)
		seen->peak_open = total - done;
	seen->last_total = total;
	seen->reports++;
	return true;
}

/* Ten 3-row fragments forced with max_inputs 4: batches of the four
 * smallest, each committed before the next is read (the third takes the
 * first two's outputs), until one fragment is left; every row kept, never
 * more than four inputs open, progress counted across the batches. */
CX_TEST(compact_job_forced_in_batches_of_max_inputs)
{
	cx_objstore *s = typed_store("/store", 10, 3, false);
	text_rows	before = scan_text(s);
	text_rows	after;
	reading_seen seen = {0};
	cx_job_progress progress = {note_reading, &seen};
	cx_compact_options o;
	cx_compact_result res;
	cx_manifest *m;
	cx_err		err;

	compact_options(&o, 1000);
	o.force = true;
	o.max_inputs = 4;
	REQUIRE_OK(cx_compact(s, &o, &progress, &res, &err), &err);
	/* 4 x 3 -> 12, 4 x 3 -> 12, then 3, 3, 12, 12 -> 30: summed, rows
	 * written more than once count each time. */
	CHECK(res.compacted && res.inputs == 12 && res.outputs == 3);
	CHECK(res.rows == 54 && res.version == 13 && newest_version(s) == 13);
	CHECK(seen.reports > 0 && seen.peak_open == 4 && seen.last_total == 12);
	after = scan_text(s);
	CHECK(before.n == 30 && text_rows_equal(&before, &after));
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->nfragments == 1 && m->fragments[0].rows == 30);
	cx_manifest_free(m);
	for (uint64_t v = 11; v <= 13; v++)
	{
		REQUIRE_OK(cx_manifest_load(s, v, &m, &err), &err);
		CHECK(strcmp(m->operation, CX_COMPACT_OPERATION) == 0);
		cx_manifest_free(m);
	}
	text_rows_free(&after);
	text_rows_free(&before);
	cx_obj_close(s);
}

/* Capped without force too: one batch of the tier's four smallest. */
CX_TEST(compact_job_unforced_takes_one_batch)
{
	cx_objstore *s = typed_store("/store", 10, 3, false);
	cx_compact_options o;
	cx_compact_result res;
	cx_err		err;

	compact_options(&o, 1000);
	o.max_inputs = 4;
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 4 && res.outputs == 1);
	CHECK(res.rows == 12 && newest_version(s) == 11);
	o.max_inputs = 1;
	CHECK(cx_compact(s, &o, NULL, &res, &err) == CX_ERR_INVALID);
	cx_obj_close(s);
}

/* With no tier full a compaction writes nothing, not even its lease, and
 * is not refused by another holder's lease; with one full it is. */
CX_TEST(compact_job_with_nothing_due_writes_nothing)
{
	cx_objstore *s = typed_store("/store", 10, 3, false);
	cx_compact_options o;
	cx_compact_result res;
	uint64_t	puts;
	cx_err		err;

	compact_options(&o, 1000);
	o.min_fragments = 11;
	REQUIRE_OK(cx_compact_lease_take(s, "another", 60, cx_clock_now_us(), &err), &err);
	puts = s->stats.puts;
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(!res.compacted && newest_version(s) == 10);
	CHECK(s->stats.puts == puts && s->stats.deletes == 0);
	o.min_fragments = 10;
	CHECK_CODE(cx_compact(s, &o, NULL, &res, &err), CX_ERR_BUSY);
	REQUIRE_OK(cx_compact_lease_release(s, "another", &err), &err);
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 10 && newest_version(s) == 11);
	cx_obj_close(s);
}

/* Six fragments sorted by (i32, id) compacted with sort_key i32 come out
 * in that order, 32 rows each; compacted by the key alone they are not in
 * its order, and each output still is: none lies about its order. */
CX_TEST(compact_job_orders_by_sort_key_else_key)
{
	cx_objstore *s = typed_store("/by_i32", 6, 24, true);
	cx_objstore *t = typed_store("/by_key", 6, 24, true);
	text_rows	before = scan_text(s);
	text_rows	after;
	cx_compact_options o;
	cx_compact_result res;
	cx_err		err;

	compact_options(&o, 32);
	o.sort_key = "i32";
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 6 && res.outputs == 5);
	CHECK(outputs_in_order(s, 0, 32, true));
	after = scan_text(s);
	CHECK(text_rows_equal(&before, &after));
	text_rows_free(&after);
	o.sort_key = NULL;
	REQUIRE_OK(cx_compact(t, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.outputs > 5);
	CHECK(outputs_in_order(t, 0, 0, false));
	CHECK(!outputs_in_order(t, 0, 0, true));
	after = scan_text(t);
	CHECK(text_rows_equal(&before, &after));
	text_rows_free(&before);
	text_rows_free(&after);
	cx_obj_close(s);
	cx_obj_close(t);
}

typedef struct test_truncate
{
	int64_t		before_us;
} test_truncate;

static cx_code
truncate_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
				cx_err *err)
{
	(void) base;
	(void) err;
	cx_manifest_truncate(next, ((test_truncate *) arg)->before_us);
	return CX_OK;
}

/* Path of fragment f of the newest version (static buffer). */
static const char *
fragment_path(cx_objstore *s, uint32_t f)
{
	static char path[256];
	cx_manifest *m;
	cx_err		err;

	MUST(cx_manifest_load_latest(s, &m, &err), &err);
	snprintf(path, sizeof(path), "%s", m->fragments[f].path);
	cx_manifest_free(m);
	return path;
}

/* Three deleted rows and ten a TRUNCATE hides (fragment 0 wholly, so it
 * is gone; the first ten of fragment 1) are not carried over. */
CX_TEST(compact_job_drops_deleted_and_truncated_rows)
{
	cx_objstore *s = typed_store("/store", 4, 20, false);
	test_truncate cut = {TYPED_TS(1) + 10};
	text_rows	before;
	text_rows	after;
	cx_compact_options o;
	cx_compact_result res;
	cx_err		err;

	delete_row(s, fragment_path(s, 2), 0);
	delete_row(s, fragment_path(s, 2), 5);
	delete_row(s, fragment_path(s, 3), 3);
	commit_or_fail(s, "truncate", truncate_rebase, &cut);
	before = scan_text(s);
	CHECK(before.n == 47);
	compact_options(&o, 64);
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 3 && res.outputs == 1);
	CHECK(res.rows == 47 && res.rows_dropped == 13);
	after = scan_text(s);
	CHECK(text_rows_equal(&before, &after));
	text_rows_free(&before);
	text_rows_free(&after);
	cx_obj_close(s);
}

/* ---- what happens while a job runs: its progress callback acts ---- */

typedef enum meanwhile_action
{
	DO_NOTHING, DELETE_A_ROW, COMMIT_A_FRAGMENT, RUN_ANOTHER, CANCEL,
	LOSE_LEASE_AND_RUN_ANOTHER,
	STEAL_LEASE,				/* (the job's lease lasts one second) */
	BREAK_UPLOADS				/* every upload of the local store fails */
} meanwhile_action;

typedef struct meanwhile
{
	cx_objstore *s;
	const char *phase;			/* act the first time this phase reports */
	meanwhile_action action;
	bool		acted;
	text_rows	expected;		/* scan after acting */
	cx_code		other_rc;		/* of the other job */
	cx_err		other_err;
	cx_compact_result other_res;
	char		phases[256];	/* every phase reported, in order */
} meanwhile;

static void
run_other(meanwhile *mw)
{
	cx_compact_options o;

	compact_options(&o, 64);
	o.holder = "other";
	mw->other_rc = cx_compact(mw->s, &o, NULL, &mw->other_res, &mw->other_err);
}

static bool
act_meanwhile(void *arg, const char *phase, uint64_t done, uint64_t total)
{
	meanwhile  *mw = arg;
	size_t		len = strlen(mw->phases);

	(void) done;
	(void) total;
	if (len == 0 || strstr(mw->phases, phase) == NULL)
		snprintf(mw->phases + len, sizeof(mw->phases) - len, "%s%s",
				 len ? "," : "", phase);
	if (mw->acted || strcmp(phase, mw->phase) != 0)
		return true;
	mw->acted = true;
	switch (mw->action)
	{
		case DO_NOTHING:
			break;
		case DELETE_A_ROW:
			delete_row(mw->s, fragment_path(mw->s, 0), 2);
			break;
		case COMMIT_A_FRAGMENT:
			add_typed_fragment(mw->s, 1000, 1, 10, 9000, false);
			break;
		case RUN_ANOTHER:
			run_other(mw);
			break;
		case LOSE_LEASE_AND_RUN_ANOTHER:
			{
				cx_err		err;

				MUST(cx_compact_lease_release(mw->s, "test", &err), &err);
				run_other(mw);
			}
			break;
		case STEAL_LEASE:
			{
				struct timespec pause = {0, 400000000L};
				cx_err		err;

				/* Past a third of the lease: the job renews at its next
				 * step, and finds the thief's. */
				nanosleep(&pause, NULL);
				MUST(cx_compact_lease_release(mw->s, "test", &err), &err);
				MUST(cx_compact_lease_take(mw->s, "thief", 60,
										   cx_clock_now_us(), &err), &err);
			}
			break;
		case BREAK_UPLOADS:
			{
				cx_err		err;

				MUST(cx_failpoint_set("local.open_upload=error", &err), &err);
			}
			return true;
		case CANCEL:
			return false;
	}
	mw->expected = scan_text(mw->s);
	return true;
}

static bool
count_object(void *arg, const char *key, uint64_t size)
{
	(void) key;
	(void) size;
	(*(uint32_t *) arg)++;
	return true;
}

/* Objects under data/. */
static uint32_t
data_objects(cx_objstore *s)
{
	uint32_t	n = 0;
	cx_err		err;

	MUST(cx_obj_list(s, "data/", count_object, &n, &err), &err);
	return n;
}

/* Runs a job on a fresh store of four 20-row fragments (target 32) whose
 * callback does `action` at `phase`. */
static cx_code
compact_meanwhile(const char *suffix, const char *phase,
				  meanwhile_action action, meanwhile *mw,
				  cx_compact_result *res, cx_err *err)
{
	cx_compact_options o;
	cx_job_progress progress = {act_meanwhile, mw};

	memset(mw, 0, sizeof(*mw));
	mw->s = typed_store(suffix, 4, 20, false);
	mw->phase = phase;
	mw->action = action;
	compact_options(&o, 32);
	if (action == STEAL_LEASE)
		o.lease_seconds = 1;
	return cx_compact(mw->s, &o, &progress, res, err);
}

static void
meanwhile_free(meanwhile *mw)
{
	text_rows_free(&mw->expected);
	cx_obj_close(mw->s);
}

/* A DELETE committed after the job read the row, before its commit: the
 * commit rebases and the row stays deleted in the output. */
CX_TEST(compact_job_keeps_delete_committed_meanwhile)
{
	meanwhile	mw;
	cx_compact_result res;
	text_rows	after;
	cx_err		err;

	REQUIRE_OK(compact_meanwhile("/store", "committing", DELETE_A_ROW, &mw,
								 &res, &err), &err);
	CHECK(mw.acted && mw.expected.n == 79);
	CHECK(strcmp(mw.phases, "selecting,reading,writing,committing") == 0);
	CHECK(res.compacted && res.deletions_carried == 1);
	CHECK(res.rows == 80 && res.version == 6);
	after = scan_text(mw.s);
	CHECK(text_rows_equal(&mw.expected, &after));
	text_rows_free(&after);
	meanwhile_free(&mw);
}

/* A merge committed meanwhile adds a fragment; the compaction keeps it. */
CX_TEST(compact_job_keeps_merge_committed_meanwhile)
{
	meanwhile	mw;
	cx_compact_result res;
	text_rows	after;
	cx_manifest *m;
	cx_err		err;

	REQUIRE_OK(compact_meanwhile("/store", "writing", COMMIT_A_FRAGMENT, &mw,
								 &res, &err), &err);
	CHECK(mw.acted && mw.expected.n == 90);
	CHECK(res.compacted && res.deletions_carried == 0 && res.outputs == 3);
	after = scan_text(mw.s);
	CHECK(text_rows_equal(&mw.expected, &after));
	REQUIRE_OK(cx_manifest_load_latest(mw.s, &m, &err), &err);
	CHECK(m->nfragments == 4 && m->fragments[0].rows == 10);
	cx_manifest_free(m);
	text_rows_free(&after);
	meanwhile_free(&mw);
}

/* A second job while the first holds its lease is BUSY naming it. */
CX_TEST(compact_job_busy_while_another_holds_the_lease)
{
	meanwhile	mw;
	cx_compact_result res;
	text_rows	after;
	cx_err		err;

	REQUIRE_OK(compact_meanwhile("/store", "reading", RUN_ANOTHER, &mw, &res,
								 &err), &err);
	CHECK(mw.other_rc == CX_ERR_BUSY && !mw.other_res.compacted);
	CHECK(strstr(mw.other_err.msg, "test") != NULL);
	CHECK(res.compacted && res.version == 5);
	after = scan_text(mw.s);
	CHECK(after.n == 80 && text_rows_equal(&mw.expected, &after));
	text_rows_free(&after);
	meanwhile_free(&mw);
}

/* The first job's lease lapses (released here, as if expired) and a second
 * job compacts the same inputs first: the first gets CONFLICT naming an
 * input and deletes its outputs; the second's result stands. */
CX_TEST(compact_job_conflict_when_another_won)
{
	meanwhile	mw;
	cx_compact_result res;
	text_rows	after;
	uint32_t	objects_before;
	cx_err		err;

	CHECK_CODE(compact_meanwhile("/store", "committing",
								 LOSE_LEASE_AND_RUN_ANOTHER, &mw, &res, &err),
			   CX_ERR_CONFLICT);
	CHECK(strstr(err.msg, "to compact is no longer listed by base version 5") != NULL);
	CHECK(strstr(err.msg, "data/") != NULL);
	CHECK(!res.compacted && res.outputs == 3);
	REQUIRE_OK(mw.other_rc, &mw.other_err);
	CHECK(mw.other_res.compacted && mw.other_res.version == 5);
	CHECK(newest_version(mw.s) == 5);
	/* The four inputs and the other job's two outputs; ours are gone. */
	objects_before = data_objects(mw.s);
	CHECK(objects_before == 4 + mw.other_res.outputs);
	after = scan_text(mw.s);
	CHECK(after.n == 80 && text_rows_equal(&mw.expected, &after));
	text_rows_free(&after);
	meanwhile_free(&mw);
}

/* Canceled at each phase: CANCELED, no new version, no output left, the
 * lease released, the rows as they were. */
CX_TEST(compact_job_cancel_at_each_phase)
{
	static const char *const phases[] = {"selecting", "reading", "writing",
	"committing"};

	for (int i = 0; i < 4; i++)
	{
		char		suffix[32];
		meanwhile	mw;
		cx_compact_result res;
		cx_compact_lease l;
		text_rows	after;
		cx_err		err;

		snprintf(suffix, sizeof(suffix), "/store%d", i);
		CHECK_CODE(compact_meanwhile(suffix, phases[i], CANCEL, &mw, &res, &err),
				   CX_ERR_CANCELED);
		CHECK(mw.acted && strstr(err.msg, phases[i]) != NULL);
		CHECK(!res.compacted && newest_version(mw.s) == 4);
		CHECK(data_objects(mw.s) == 4);
		CHECK_CODE(cx_compact_lease_read(mw.s, &l, &err), CX_ERR_NOT_FOUND);
		after = scan_text(mw.s);
		CHECK(after.n == 80);
		text_rows_free(&after);
		meanwhile_free(&mw);
	}
}

/* ---- failures at each step ---- */

static const char *const compact_failpoints[] = {
	"compact.after_lease", "compact.after_outputs", "compact.after_commit"
};

/* Whether the newest version lists exactly `outputs` fragments, all of
 * them new (none of the first four), and the rows of four 20-row inputs. */
static bool
converged(cx_objstore *s)
{
	text_rows	rows = scan_text(s);
	cx_manifest *m;
	bool		ok;
	cx_err		err;

	MUST(cx_manifest_load_latest(s, &m, &err), &err);
	ok = rows.n == 80 && m->nfragments == 3 &&
		strcmp(m->operation, CX_COMPACT_OPERATION) == 0;
	cx_manifest_free(m);
	text_rows_free(&rows);
	return ok;
}

/* An error at each step: the job fails, the store reads as before, the
 * lease is released, only committed outputs stay; the next job converges
 * (after the commit there is nothing left to do). */
CX_TEST(compact_job_failpoint_error_at_each_step)
{
	for (int i = 0; i < 3; i++)
	{
		char		suffix[32];
		char		spec[64];
		cx_objstore *s;
		cx_compact_options o;
		cx_compact_result res;
		cx_compact_lease l;
		text_rows	after;
		cx_err		err;

		snprintf(suffix, sizeof(suffix), "/store%d", i);
		snprintf(spec, sizeof(spec), "%s=error", compact_failpoints[i]);
		s = typed_store(suffix, 4, 20, false);
		compact_options(&o, 32);
		REQUIRE_OK(cx_failpoint_set(spec, &err), &err);
		CHECK_CODE(cx_compact(s, &o, NULL, &res, &err), CX_ERR_IO);
		CHECK(strstr(err.msg, compact_failpoints[i]) != NULL);
		CHECK(cx_failpoint_hits(compact_failpoints[i]) == 1);
		REQUIRE_OK(cx_failpoint_set("", &err), &err);
		CHECK(newest_version(s) == (i == 2 ? 5 : 4));
		CHECK(data_objects(s) == (i == 2 ? 4 + 3 : 4));
		CHECK_CODE(cx_compact_lease_read(s, &l, &err), CX_ERR_NOT_FOUND);
		after = scan_text(s);
		CHECK(after.n == 80);
		text_rows_free(&after);
		REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
		CHECK(res.compacted == (i < 2));
		CHECK(converged(s) && newest_version(s) == 5);
		cx_obj_close(s);
	}
}

/* Runs a job that dies (kill -9) at failpoint fp, as holder "crashed" with
 * a one-second lease; true if it died there. */
static bool
crash_job_at(cx_objstore *s, const char *fp)
{
	pid_t		pid = fork();
	int			status;

	if (pid < 0)
		return false;
	if (pid == 0)
	{
		char		spec[64];
		cx_compact_options o;
		cx_compact_result res;
		cx_err		err;

		snprintf(spec, sizeof(spec), "%s=crash", fp);
		compact_options(&o, 32);
		o.holder = "crashed";
		o.lease_seconds = 1;
		if (cx_failpoint_set(spec, &err) != CX_OK)
			_exit(2);
		(void) cx_compact(s, &o, NULL, &res, &err);
		_exit(3);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* A job killed at each step leaves its lease: the next job is BUSY until it
 * expires, then takes it over and converges; what the dead job uploaded
 * and did not commit is referenced by no version (left to GC).  Killed
 * after its commit, it left nothing to do, which the next job finds
 * without the lease. */
CX_TEST(compact_job_crash_at_each_step_converges)
{
	for (int i = 0; i < 3; i++)
	{
		char		suffix[32];
		cx_objstore *s;
		cx_compact_options o;
		cx_compact_result res;
		struct timespec pause = {1, 200000000L};
		cx_err		err;

		snprintf(suffix, sizeof(suffix), "/store%d", i);
		s = typed_store(suffix, 4, 20, false);
		REQUIRE(crash_job_at(s, compact_failpoints[i]));
		CHECK(newest_version(s) == (i == 2 ? 5 : 4));
		CHECK(data_objects(s) == (i == 0 ? 4 : 4 + 3));
		compact_options(&o, 32);
		if (i == 2)
			CHECK(cx_compact(s, &o, NULL, &res, &err) == CX_OK && !res.compacted);
		else
		{
			CHECK_CODE(cx_compact(s, &o, NULL, &res, &err), CX_ERR_BUSY);
			CHECK(strstr(err.msg, "crashed") != NULL);
		}
		nanosleep(&pause, NULL);
		REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
		CHECK(res.compacted == (i < 2));
		CHECK(converged(s) && newest_version(s) == 5);
		cx_obj_close(s);
	}
}

/* ---- memory ---- */

static cx_code
step_ok(void *arg, const char *phase, uint64_t done, uint64_t total,
		cx_err *err)
{
	(void) arg;
	(void) phase;
	(void) done;
	(void) total;
	(void) err;
	return CX_OK;
}

/* Eight inputs of 40 rows in 4-row groups: the rewrite never holds more
 * than a group per input (32 rows), not the 320 rows it rewrites. */
CX_TEST(compact_rewrite_streams_its_inputs)
{
	cx_objstore *s = typed_store("/store", 8, 40, false);
	uint32_t	inputs[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	cx_compact_options o;
	cx_manifest *m;
	cx_compact_rewrite_job job;
	cx_err		err;

	compact_options(&o, 1000);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	memset(&job, 0, sizeof(job));
	job.s = s;
	job.o = &o;
	job.read = m;
	job.inputs = inputs;
	job.ninputs = 8;
	job.step = step_ok;
	REQUIRE_OK(cx_compact_rewrite(&job, &err), &err);
	CHECK(job.rows == 320 && job.noutputs == 1);
	CHECK(job.peak_rows_held > 0 && job.peak_rows_held <= 8 * 4);
	for (uint32_t i = 0; i < job.noutputs; i++)
		cx_fragment_info_free(&job.outputs[i]);
	free(job.outputs);
	cx_compact_rowmap_free(&job.map);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* ---- the key index after a compaction ---- */

/* Keys k0..k199 merged in four 50-row fragments, then k10..k19 updated
 * (v 9) by a fifth merge, all indexed; the shard drained. */
static cx_objstore *
indexed_store(void)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result mres;
	cx_keyindex_result ires;
	cx_err		err;

	MUST(mw_writer(s, "s1", false, &w, &err), &err);
	for (int r = 0; r < 4; r++)
	{
		MUST(mw_put(w, "k", r * 50, 50, r + 1, true, &err), &err);
		MUST(cx_merge_shard(s, "s1", NULL, &mres, &err), &err);
	}
	MUST(mw_put(w, "k", 10, 10, 9, true, &err), &err);
	MUST(cx_merge_shard(s, "s1", NULL, &mres, &err), &err);
	MUST(mw_drain(s, w, &err), &err);
	MUST(cx_sw_close(w, false, &err), &err);
	MUST(cx_keyindex_update_table(s, NULL, NULL, &ires, &err), &err);
	if (ires.fragments_covered != 5)
		cx_test_fail(__FILE__, __LINE__, "the five fragments are not indexed");
	return s;
}

static const char *const lookup_keys[] = {"k5", "k10", "k19", "k150", "k199",
"nope", "k10"};

/* The rows a lookup of lookup_keys finds equal those a full scan has for
 * them: k5 v 1, k10 and k19 v 9, k150 v 4, k199 v 4. */
static bool
lookups_right(cx_objstore *s)
{
	mw_rows		full;
	mw_rows		got;
	bool		ok = true;
	int64_t		v = 0;
	cx_err		err;

	MUST(mw_scan(s, NULL, &full, &err), &err);
	MUST(mw_scan_keys(s, lookup_keys, 7, &got, &err), &err);
	ok &= full.n == 200 && got.n == 5;
	for (int i = 0; i < 7; i++)
		ok &= mw_count(&full, lookup_keys[i], NULL) ==
			mw_count(&got, lookup_keys[i], NULL);
	ok &= mw_count(&got, "k10", &v) == 1 && v == 9;
	ok &= mw_count(&got, "k19", &v) == 1 && v == 9;
	ok &= mw_count(&got, "k5", &v) == 1 && v == 1;
	ok &= mw_count(&got, "k150", &v) == 1 && v == 4;
	mw_rows_free(&full);
	mw_rows_free(&got);
	return ok;
}

/* The column-0 segments of the newest version: how many, the fragments
 * they name that it still lists, and their entries. */
static void
index_state(cx_objstore *s, uint32_t *segs, uint32_t *live_refs,
			uint32_t *dead_refs, uint64_t *entries)
{
	cx_manifest *m;
	cx_keyindex ix;
	cx_err		err;

	*segs = *live_refs = *dead_refs = 0;
	*entries = 0;
	MUST(cx_manifest_load_latest(s, &m, &err), &err);
	MUST(cx_keyindex_load(m, &ix, &err), &err);
	for (uint32_t i = 0; i < ix.n; i++)
	{
		(*segs)++;
		*entries += ix.segs[i].entries;
		for (uint32_t k = 0; k < ix.segs[i].nfragments; k++)
		{
			if (cx_manifest_find_fragment(m, ix.segs[i].fragments[k]) >= 0)
				(*live_refs)++;
			else
				(*dead_refs)++;
		}
	}
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
}

/* The origin shard of the newest version's first fragment (static copy;
 * NULL: none). */
static const char *
origin_of_first(cx_objstore *s)
{
	static char origin[128];
	cx_manifest *m;
	bool		has;
	cx_err		err;

	MUST(cx_manifest_load_latest(s, &m, &err), &err);
	has = m->nfragments > 0 && m->fragments[0].origin_shard != NULL;
	if (has)
		snprintf(origin, sizeof(origin), "%s", m->fragments[0].origin_shard);
	cx_manifest_free(m);
	return has ? origin : NULL;
}

/*
 * Key lookups are right before the compaction, after it with the index
 * naming only removed fragments (the output unindexed: probed by its key
 * column), and after the reindex, which drops the segments naming only
 * removed fragments, so the index does not grow for ever.  One
 * output for all 200 rows also says that the merges wrote each input in
 * key order: an input out of order would have split it.
 */
CX_TEST(compact_key_lookups_right_before_and_after_reindex)
{
	cx_objstore *s = indexed_store();
	cx_compact_options o;
	cx_compact_result res;
	cx_keyindex_options io;
	cx_keyindex_result ires;
	uint32_t	segs,
				live,
				dead;
	uint64_t	entries;
	cx_err		err;

	CHECK(lookups_right(s));
	compact_options(&o, 1000);
	o.force = true;
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 5 && res.outputs == 1);
	CHECK(res.rows == 200 && res.rows_dropped == 10);
	CHECK(origin_of_first(s) != NULL && strcmp(origin_of_first(s), "s1") == 0);
	index_state(s, &segs, &live, &dead, &entries);
	CHECK(live == 0 && dead == 5);
	CHECK(lookups_right(s));
	/* The reindex drops the segments that cover only removed fragments,
	 * so the index does not grow for ever. */
	REQUIRE_OK(cx_keyindex_update_table(s, NULL, NULL, &ires, &err), &err);
	CHECK(ires.fragments_covered == 1 && ires.keys_indexed == 200);
	index_state(s, &segs, &live, &dead, &entries);
	CHECK(segs == 1 && live == 1 && dead == 0 && entries == 200);
	CHECK(lookups_right(s));
	/* Nothing is left to merge. */
	cx_keyindex_options_default(&io);
	io.max_segments = 1;
	REQUIRE_OK(cx_keyindex_update_table(s, NULL, &io, &ires, &err), &err);
	CHECK(ires.segments_merged == 0);
	CHECK(lookups_right(s));
	cx_obj_close(s);
}

/* ---- inputs written under an older schema ---- */

/* Two fragments written before an ALTER (a column added, one renamed, one
 * dropped) and one after: the outputs have the current columns, the
 * older rows read the added column as NULL, and every row reads as before. */
CX_TEST(compact_job_rewrites_older_schemas_in_the_current_one)
{
	cx_objstore *s = typed_store("/store", 2, 20, false);
	cx_schema_alter alters[] = {
		{CX_ALTER_ADD, "extra", NULL, {.type = CX_T_INT64}},
		{CX_ALTER_RENAME, "s", "s2", {0}},
		{CX_ALTER_DROP, "jb", NULL, {0}},
	};
	text_rows	before;
	text_rows	after;
	cx_compact_options o;
	cx_compact_result res;
	cx_manifest *m;
	cx_fragr   *r;
	uint64_t	v;
	cx_err		err;

	REQUIRE_OK(cx_table_alter_schema(s, alters, 3, &v, &err), &err);
	REQUIRE(v == 3);
	before = scan_text(s);
	compact_options(&o, 64);
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 2 && res.rows == 40);
	after = scan_text(s);
	CHECK(before.n == 40 && text_rows_equal(&before, &after));
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 1);
	REQUIRE_OK(cx_fragr_open_entry(s, &m->fragments[0], &r, &err), &err);
	CHECK(cx_fragr_schema(r)->ncolumns == m->schema->ncolumns + 2);
	CHECK(cx_schema_find(cx_fragr_schema(r), "extra") >= 0);
	CHECK(cx_schema_find(cx_fragr_schema(r), "s2") >= 0);
	CHECK(cx_schema_find(cx_fragr_schema(r), "jb") < 0);
	cx_fragr_close(r);
	cx_manifest_free(m);
	text_rows_free(&before);
	text_rows_free(&after);
	cx_obj_close(s);
}

/* A job whose lease was taken over while it ran (it outlasted the lease)
 * finds out when it renews: BUSY naming the new holder, nothing committed,
 * its outputs deleted, the new holder's lease left alone. */
CX_TEST(compact_job_stops_when_its_lease_is_taken_over)
{
	meanwhile	mw;
	cx_compact_result res;
	cx_compact_lease l;
	cx_err		err;

	CHECK_CODE(compact_meanwhile("/store", "reading", STEAL_LEASE, &mw, &res,
								 &err), CX_ERR_BUSY);
	CHECK(mw.acted && strstr(err.msg, "thief") != NULL);
	CHECK(!res.compacted && newest_version(mw.s) == 4);
	CHECK(data_objects(mw.s) == 4);
	REQUIRE_OK(cx_compact_lease_read(mw.s, &l, &err), &err);
	CHECK(strcmp(l.holder, "thief") == 0);
	meanwhile_free(&mw);
}

/* A commit whose put fails without saying whether it landed (every upload
 * fails: the read-back finds nothing, but a put may land later) keeps its
 * outputs: were the version there, deleting them would lose its rows.  GC
 * collects them if it is not. */
CX_TEST(compact_job_keeps_outputs_of_a_commit_of_unknown_outcome)
{
	meanwhile	mw;
	cx_compact_result res;
	cx_code		rc;
	cx_err		err;
	cx_err		err2;

	rc = compact_meanwhile("/store", "committing", BREAK_UPLOADS, &mw, &res,
						   &err);
	REQUIRE_OK(cx_failpoint_set("", &err2), &err2);
	CHECK(rc == CX_ERR_IO && strstr(err.msg, "outcome unknown") != NULL);
	CHECK(!res.compacted && res.outputs == 3);
	CHECK(newest_version(mw.s) == 4);
	CHECK(data_objects(mw.s) == 4 + 3);
	meanwhile_free(&mw);
}

/* Without a key or a sort key rows keep commit order: the outputs hold the
 * inputs' rows one input after the other. */
CX_TEST(compact_job_keeps_commit_order_without_a_key)
{
	cx_objstore *s;
	cx_compact_options o;
	cx_compact_result res;
	cx_manifest *m;
	int64_t		ids[128];
	uint32_t	n;
	bool		in_order = true;
	text_rows	before;
	text_rows	after;
	cx_err		err;

	typed_key = NULL;
	s = typed_store("/store", 3, 20, false);
	typed_key = "id";
	before = scan_text(s);
	compact_options(&o, 64);
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 3 && res.outputs == 1);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 1 && m->key_column == NULL);
	n = fragment_ids(s, &m->fragments[0], ids, 128);
	CHECK(n == 60);
	/* Fragment f holds f, f + 3, ... in id order. */
	for (uint32_t i = 0; i < n; i++)
		in_order &= ids[i] == (int64_t) (i / 20 + (i % 20) * 3);
	CHECK(in_order);
	after = scan_text(s);
	CHECK(text_rows_equal(&before, &after));
	cx_manifest_free(m);
	text_rows_free(&before);
	text_rows_free(&after);
	cx_obj_close(s);
}

/* Inputs merged from two shards: the output names no origin (one shard's
 * inputs keep theirs: compact_key_lookups_right_before_and_after_reindex). */
CX_TEST(compact_output_of_two_shards_has_no_origin)
{
	cx_objstore *s = mw_open_store();
	const char *const shards[] = {"s1", "s2"};
	cx_compact_options o;
	cx_compact_result res;
	mw_rows		rows;
	cx_err		err;

	REQUIRE(s != NULL);
	for (int i = 0; i < 2; i++)
	{
		cx_shardwriter *w;
		cx_merge_result mres;

		REQUIRE_OK(mw_writer(s, shards[i], false, &w, &err), &err);
		REQUIRE_OK(mw_put(w, shards[i], 0, 10, i + 1, true, &err), &err);
		REQUIRE_OK(cx_merge_shard(s, shards[i], NULL, &mres, &err), &err);
		REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	}
	CHECK(origin_of_first(s) != NULL);
	compact_options(&o, 1000);
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 2 && res.rows == 20);
	CHECK(origin_of_first(s) == NULL);
	REQUIRE_OK(mw_scan(s, NULL, &rows, &err), &err);
	CHECK(rows.n == 20 && mw_count(&rows, "s17", NULL) == 1);
	mw_rows_free(&rows);
	cx_obj_close(s);
}

/* Every row of the inputs deleted: the commit removes them and adds
 * nothing. */
CX_TEST(compact_job_of_deleted_rows_only_writes_nothing)
{
	cx_objstore *s = typed_store("/store", 1, 3, false);
	cx_compact_options o;
	cx_compact_result res;
	cx_manifest *m;
	text_rows	after;
	cx_err		err;

	for (uint32_t r = 0; r < 3; r++)
		delete_row(s, fragment_path(s, 0), r);
	compact_options(&o, 64);
	o.force = true;
	REQUIRE_OK(cx_compact(s, &o, NULL, &res, &err), &err);
	CHECK(res.compacted && res.inputs == 1 && res.outputs == 0);
	CHECK(res.rows == 0 && res.rows_dropped == 3 && res.bytes_written == 0);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->nfragments == 0 && m->version == 5);
	cx_manifest_free(m);
	after = scan_text(s);
	CHECK(after.n == 0);
	text_rows_free(&after);
	cx_obj_close(s);
}

/* An input whose object is gone: the error names it and the version that
 * lists it; nothing is committed and no output is left. */
CX_TEST(compact_job_missing_input_fails_cleanly)
{
	cx_objstore *s = typed_store("/store", 3, 20, false);
	char		gone[256];
	cx_compact_options o;
	cx_compact_result res;
	cx_compact_lease l;
	cx_err		err;

	snprintf(gone, sizeof(gone), "%s", fragment_path(s, 2));
	REQUIRE_OK(cx_obj_delete(s, gone, &err), &err);
	compact_options(&o, 64);
	CHECK_CODE(cx_compact(s, &o, NULL, &res, &err), CX_ERR_NOT_FOUND);
	CHECK(strstr(err.msg, gone) != NULL && strstr(err.msg, "base version 3") != NULL);
	CHECK(!res.compacted && newest_version(s) == 3 && data_objects(s) == 2);
	CHECK_CODE(cx_compact_lease_read(s, &l, &err), CX_ERR_NOT_FOUND);
	cx_obj_close(s);
}
