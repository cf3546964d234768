/*
 * test_prune.c — skipping by statistics (scan/cx_prune.h) and its use by
 * scans with predicates (cx_tablescan_begin_spec).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "format/cx_encoding.h"
#include "merge/cx_merge.h"
#include "scan/cx_prune.h"
#include "cx_test.h"
#include "mw_util.h"

/* --------------------------------------------------------------------------
 * Statistics rules
 * -------------------------------------------------------------------------- */

/* Statistics as a writer builds them from n values (isnull entries NULL). */
static cx_colstats
stats_of(cx_type type, const cx_datum *values, int n)
{
	cx_statacc	acc;
	cx_colstats st;

	cx_statacc_init(&acc, type);
	for (int i = 0; i < n; i++)
	{
		uint8_t		fixed[16];

		if (values[i].isnull)
			cx_statacc_add_null(&acc);
		else if (cx_type_width(type) > 0)
		{
			cx_fixed_encode(type, &values[i], fixed);
			cx_statacc_add(&acc, fixed, (size_t) cx_type_width(type));
		}
		else
			cx_statacc_add(&acc, values[i].v.bytes.ptr, values[i].v.bytes.len);
	}
	cx_statacc_finish(&acc, &st);
	return st;
}

static bool
may(cx_type type, const cx_colstats *st, cx_pred_op op, cx_datum value)
{
	cx_pred		p = {0, op, &value, 1};

	return cx_prune_may_match(type, st, &p);
}

static cx_datum
i64(int64_t v)
{
	cx_datum	d = {0};

	d.v.i64 = v;
	return d;
}

static cx_datum
f64(double v)
{
	cx_datum	d = {0};

	d.v.f64 = v;
	return d;
}

static cx_datum
str(const char *s)
{
	cx_datum	d = {0};

	d.v.bytes.ptr = (const uint8_t *) s;
	d.v.bytes.len = strlen(s);
	return d;
}

static const cx_datum null_datum = {.isnull = true};

/* [10, 20] of every integer-like type, as their own members. */
CX_TEST(prune_comparisons_on_integers)
{
	static const cx_type types[] = {CX_T_INT16, CX_T_INT32, CX_T_INT64,
	CX_T_DATE, CX_T_TIME, CX_T_TIMESTAMP, CX_T_TIMESTAMPTZ};

	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
	{
		cx_type		type = types[t];
		cx_datum	v[3] = {{0}};
		cx_colstats st;
		cx_datum	x[6];
		const int64_t at[6] = {-5, 10, 15, 20, 25, -30000};

		for (int i = 0; i < 6; i++)
		{
			memset(&x[i], 0, sizeof(x[i]));
			if (type == CX_T_INT16)
				x[i].v.i16 = (int16_t) at[i];
			else if (type == CX_T_INT32 || type == CX_T_DATE)
				x[i].v.i32 = (int32_t) at[i];
			else
				x[i].v.i64 = at[i];
		}
		v[0] = x[1];			/* 10 */
		v[1] = x[3];			/* 20 */
		v[2] = null_datum;
		st = stats_of(type, v, 3);
		CHECK(!may(type, &st, CX_PRED_EQ, x[0]));
		CHECK(may(type, &st, CX_PRED_EQ, x[2]));
		CHECK(!may(type, &st, CX_PRED_EQ, x[4]));
		CHECK(!may(type, &st, CX_PRED_LT, x[1]));
		CHECK(may(type, &st, CX_PRED_LE, x[1]));
		CHECK(!may(type, &st, CX_PRED_GT, x[3]));
		CHECK(may(type, &st, CX_PRED_GE, x[3]));
		CHECK(!may(type, &st, CX_PRED_LE, x[5]));	/* signed, not bytes */
		CHECK(may(type, &st, CX_PRED_GT, x[5]));
		CHECK(may(type, &st, CX_PRED_NE, x[1]));
		CHECK(may(type, &st, CX_PRED_IS_NULL, x[0]));
		CHECK(may(type, &st, CX_PRED_IS_NOT_NULL, x[0]));
	}
}

CX_TEST(prune_ne_in_and_null_counts)
{
	cx_datum	same[2] = {i64(7), i64(7)};
	cx_datum	spread[2] = {i64(1), i64(9)};
	cx_datum	nulls[2] = {null_datum, null_datum};
	cx_colstats st_same = stats_of(CX_T_INT64, same, 2);
	cx_colstats st_spread = stats_of(CX_T_INT64, spread, 2);
	cx_colstats st_nulls = stats_of(CX_T_INT64, nulls, 2);
	cx_colstats st_empty = stats_of(CX_T_INT64, NULL, 0);
	cx_datum	in_out[2] = {i64(0), i64(10)};
	cx_datum	in_hit[2] = {i64(0), i64(5)};
	cx_pred		p_out = {0, CX_PRED_IN, in_out, 2};
	cx_pred		p_hit = {0, CX_PRED_IN, in_hit, 2};
	cx_pred		p_none = {0, CX_PRED_IN, NULL, 0};

	CHECK(!may(CX_T_INT64, &st_same, CX_PRED_NE, i64(7)));
	CHECK(may(CX_T_INT64, &st_same, CX_PRED_NE, i64(8)));
	CHECK(may(CX_T_INT64, &st_spread, CX_PRED_NE, i64(1)));
	CHECK(!cx_prune_may_match(CX_T_INT64, &st_spread, &p_out));
	CHECK(cx_prune_may_match(CX_T_INT64, &st_spread, &p_hit));
	CHECK(!cx_prune_may_match(CX_T_INT64, &st_spread, &p_none));
	/* NULL-only chunks: only IS NULL may match */
	CHECK(may(CX_T_INT64, &st_nulls, CX_PRED_IS_NULL, null_datum));
	CHECK(!may(CX_T_INT64, &st_nulls, CX_PRED_IS_NOT_NULL, null_datum));
	CHECK(!may(CX_T_INT64, &st_nulls, CX_PRED_NE, i64(1)));
	CHECK(!may(CX_T_INT64, &st_nulls, CX_PRED_LT, i64(1)));
	CHECK(!may(CX_T_INT64, &st_spread, CX_PRED_IS_NULL, null_datum));
	/* an empty set matches nothing */
	CHECK(!may(CX_T_INT64, &st_empty, CX_PRED_IS_NULL, null_datum));
	CHECK(!may(CX_T_INT64, &st_empty, CX_PRED_EQ, i64(1)));
	/* unknown statistics and NULL operands prove nothing */
	CHECK(may(CX_T_INT64, NULL, CX_PRED_EQ, i64(1)));
	CHECK(may(CX_T_INT64, &st_spread, CX_PRED_EQ, null_datum));
}

/* PostgreSQL orders NaN above every number; statistics keep no max for a
 * set holding one. */
CX_TEST(prune_floats_and_nan)
{
	cx_datum	plain[2] = {f64(1.5), f64(2.5)};
	cx_datum	with_nan[2] = {f64(1.5), f64(NAN)};
	cx_datum	zeros[2] = {f64(-0.0), f64(0.0)};
	cx_colstats st = stats_of(CX_T_FLOAT64, plain, 2);
	cx_colstats sn = stats_of(CX_T_FLOAT64, with_nan, 2);
	cx_colstats sz = stats_of(CX_T_FLOAT64, zeros, 2);
	cx_datum	f = {0};
	cx_colstats sf;
	cx_datum	fv[1];

	CHECK(!may(CX_T_FLOAT64, &st, CX_PRED_GT, f64(2.5)));
	CHECK(!may(CX_T_FLOAT64, &st, CX_PRED_LT, f64(1.5)));
	CHECK(!may(CX_T_FLOAT64, &st, CX_PRED_EQ, f64(-INFINITY)));
	CHECK(may(CX_T_FLOAT64, &st, CX_PRED_LT, f64(INFINITY)));
	CHECK(may(CX_T_FLOAT64, &sn, CX_PRED_GT, f64(1e300)));	/* NaN > x */
	CHECK(may(CX_T_FLOAT64, &sn, CX_PRED_GE, f64(INFINITY)));
	CHECK(!may(CX_T_FLOAT64, &sn, CX_PRED_LT, f64(1.5)));
	/* a NaN operand proves nothing */
	CHECK(may(CX_T_FLOAT64, &st, CX_PRED_EQ, f64(NAN)));
	CHECK(may(CX_T_FLOAT64, &st, CX_PRED_LT, f64(NAN)));
	/* -0 = 0 in PostgreSQL */
	CHECK(!may(CX_T_FLOAT64, &sz, CX_PRED_NE, f64(0.0)));
	CHECK(may(CX_T_FLOAT64, &sz, CX_PRED_EQ, f64(-0.0)));
	/* float32 */
	f.v.f32 = 3.0f;
	fv[0] = f;
	sf = stats_of(CX_T_FLOAT32, fv, 1);
	f.v.f32 = 4.0f;
	CHECK(!may(CX_T_FLOAT32, &sf, CX_PRED_GE, f));
	f.v.f32 = NAN;
	CHECK(may(CX_T_FLOAT32, &sf, CX_PRED_GE, f));
}

CX_TEST(prune_strings_prefix_and_truncation)
{
	char		longa[100];
	char		longb[100];
	cx_datum	v[2] = {str("banana"), str("cherry")};
	cx_colstats st = stats_of(CX_T_STRING, v, 2);
	cx_datum	lv[2];
	cx_colstats sl;

	CHECK(!may(CX_T_STRING, &st, CX_PRED_EQ, str("apple")));
	CHECK(may(CX_T_STRING, &st, CX_PRED_EQ, str("c")));
	CHECK(!may(CX_T_STRING, &st, CX_PRED_EQ, str("cherryx")));
	CHECK(!may(CX_T_STRING, &st, CX_PRED_LT, str("banana")));
	CHECK(!may(CX_T_STRING, &st, CX_PRED_GT, str("cherry")));
	CHECK(may(CX_T_STRING, &st, CX_PRED_PREFIX, str("ban")));
	CHECK(may(CX_T_STRING, &st, CX_PRED_PREFIX, str("ch")));
	CHECK(may(CX_T_STRING, &st, CX_PRED_PREFIX, str("")));
	CHECK(!may(CX_T_STRING, &st, CX_PRED_PREFIX, str("a")));
	CHECK(!may(CX_T_STRING, &st, CX_PRED_PREFIX, str("d")));
	CHECK(may(CX_T_STRING, &st, CX_PRED_PREFIX, str("bz")));
	CHECK(!may(CX_T_STRING, &st, CX_PRED_PREFIX, str("baa")));
	/* values longer than the kept bytes: the min is a prefix, no max */
	memset(longa, 'm', 99);
	longa[99] = '\0';
	memcpy(longb, longa, 100);
	longb[80] = 'n';
	lv[0] = str(longa);
	lv[1] = str(longb);
	sl = stats_of(CX_T_STRING, lv, 2);
	CHECK(sl.min_len == CX_STATS_MAX_BYTES && !sl.has_max);
	CHECK(may(CX_T_STRING, &sl, CX_PRED_EQ, str(longa)));
	CHECK(may(CX_T_STRING, &sl, CX_PRED_EQ, str(longb)));
	CHECK(may(CX_T_STRING, &sl, CX_PRED_PREFIX, str(longb)));
	CHECK(may(CX_T_STRING, &sl, CX_PRED_GT, str("zzz")));
	CHECK(!may(CX_T_STRING, &sl, CX_PRED_LT, str("m")));
	CHECK(!may(CX_T_STRING, &sl, CX_PRED_PREFIX, str("ma")));
	/* binary the same way */
	CHECK(!may(CX_T_BINARY, &st, CX_PRED_PREFIX, str("a")));
}

CX_TEST(prune_uuid_bool_and_types_without_stats)
{
	cx_datum	u[2] = {{0}, {0}};
	cx_datum	probe = {0};
	cx_datum	b[1] = {{0}};
	cx_colstats su;
	cx_colstats sb;
	cx_datum	j[1] = {str("{}")};
	cx_colstats sj = stats_of(CX_T_JSON, j, 1);

	u[0].v.uuid[0] = 0x10;
	u[1].v.uuid[0] = 0x20;
	su = stats_of(CX_T_UUID, u, 2);
	probe.v.uuid[0] = 0x30;
	CHECK(!may(CX_T_UUID, &su, CX_PRED_EQ, probe));
	probe.v.uuid[0] = 0x18;
	CHECK(may(CX_T_UUID, &su, CX_PRED_EQ, probe));
	b[0].v.b = true;
	sb = stats_of(CX_T_BOOL, b, 1);
	probe.v.b = false;
	CHECK(!may(CX_T_BOOL, &sb, CX_PRED_EQ, probe));
	CHECK(may(CX_T_JSON, &sj, CX_PRED_EQ, str("[]")));
	CHECK(!may(CX_T_JSON, &sj, CX_PRED_IS_NULL, null_datum));
}

CX_TEST(prune_topk_bound_and_order)
{
	cx_datum	lo[2] = {i64(1), i64(5)};
	cx_datum	hi[2] = {i64(6), null_datum};
	cx_datum	nan[1] = {f64(NAN)};
	cx_colstats sl = stats_of(CX_T_INT64, lo, 2);
	cx_colstats sh = stats_of(CX_T_INT64, hi, 2);
	cx_colstats sn = stats_of(CX_T_FLOAT64, nan, 1);
	cx_datum	b5 = i64(5);
	cx_datum	b1 = i64(1);
	cx_datum	bf = f64(1e300);

	CHECK(!cx_prune_may_beat(CX_T_INT64, &sl, &b5, true, false));
	CHECK(cx_prune_may_beat(CX_T_INT64, &sh, &b5, true, false));
	CHECK(!cx_prune_may_beat(CX_T_INT64, &sl, &b1, false, false));
	CHECK(cx_prune_may_beat(CX_T_INT64, &sl, &b5, false, false));
	CHECK(!cx_prune_may_beat(CX_T_INT64, &sh, &b5, false, false));
	CHECK(cx_prune_may_beat(CX_T_INT64, &sh, &b5, false, true));	/* NULLs */
	CHECK(cx_prune_may_beat(CX_T_FLOAT64, &sn, &bf, true, false));	/* NaN */
	CHECK(cx_prune_order_cmp(CX_T_INT64, &sh, &sl, true) < 0);
	CHECK(cx_prune_order_cmp(CX_T_INT64, &sl, &sh, false) < 0);
	CHECK(cx_prune_order_cmp(CX_T_INT64, NULL, &sl, false) < 0);
	CHECK(cx_prune_order_cmp(CX_T_FLOAT64, &sn, &sn, true) == 0);
}

/* --------------------------------------------------------------------------
 * Scans with predicates
 * -------------------------------------------------------------------------- */

typedef struct found
{
	int			n;
	int			matching;		/* rows with v = the probe */
	char		ids[64][32];
	int64_t		vs[64];
	cx_tablescan_stats stats;
} found;

/* Scans the newest snapshot of s with spec, keeping (id, v) of each row. */
static cx_code
scan_spec(cx_objstore *s, cx_scan_spec *spec, int64_t probe, found *f,
		  cx_err *err)
{
	cx_snapshot *snap;
	cx_tablescan *scan;
	const cx_rowgroup *g;
	const uint32_t *rows;
	uint32_t	n;
	cx_code		rc;

	memset(f, 0, sizeof(*f));
	if (cx_snapshot_open(s, 0, &snap, err) != CX_OK)
		return err->code;
	if (cx_tablescan_begin_spec(snap, spec, &scan, err) != CX_OK)
	{
		cx_snapshot_close(snap);
		return err->code;
	}
	while ((rc = cx_tablescan_next(scan, &g, &rows, &n, err)) == CX_OK &&
		   g != NULL)
		for (uint32_t i = 0; i < n; i++)
		{
			cx_datum	id;
			cx_datum	v;

			cx_colvec_get(cx_tablescan_column(scan, 0), rows[i], &id);
			cx_colvec_get(cx_tablescan_column(scan, 1), rows[i], &v);
			if (f->n < 64)
			{
				snprintf(f->ids[f->n], sizeof(f->ids[0]), "%.*s",
						 (int) id.v.bytes.len, (const char *) id.v.bytes.ptr);
				f->vs[f->n] = v.v.i64;
			}
			f->n++;
			f->matching += !v.isnull && v.v.i64 == probe;
		}
	f->stats = *cx_tablescan_get_stats(scan);
	cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	return rc;
}

/* Merges shard_id with row groups of `group_rows` rows. */
static cx_code
merge_small_groups(cx_objstore *s, const char *shard_id, uint32_t group_rows,
				   cx_err *err)
{
	cx_merge_options o;
	cx_merge_result res;

	cx_merge_options_default(&o);
	o.fragment.rows_per_group = group_rows;
	return cx_merge_shard(s, shard_id, &o, &res, err);
}

/* A base of two fragments of row groups of 10 rows, v = 1, 2 | 3, 4, plus
 * an unmerged generation with v = 5: v = 2 reads one base group and no
 * generation; the rows come back complete. */
CX_TEST(prune_scan_skips_fragments_and_groups)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_scan_spec spec;
	cx_datum	two = i64(2);
	cx_pred		p = {1, CX_PRED_EQ, &two, 1};
	cx_snapshot *snap;
	found		f;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "a", 0, 10, 1, false, &err), &err);
	REQUIRE_OK(mw_put(w, "b", 0, 10, 2, true, &err), &err);
	REQUIRE_OK(merge_small_groups(s, "a", 10, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_put(w, "c", 0, 10, 3, false, &err), &err);
	REQUIRE_OK(mw_put(w, "d", 0, 10, 4, true, &err), &err);
	REQUIRE_OK(merge_small_groups(s, "a", 10, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_put(w, "e", 0, 10, 5, true, &err), &err);

	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	CHECK(cx_snapshot_rows_matching(snap, &p, 1) == 20);
	CHECK(cx_snapshot_rows_matching(snap, NULL, 0) == 50);
	cx_snapshot_close(snap);

	cx_scan_spec_init(&spec);
	spec.preds = &p;
	spec.npreds = 1;
	REQUIRE_OK(scan_spec(s, &spec, 2, &f, &err), &err);
	CHECK(f.matching == 10);	/* a superset of the matching rows */
	CHECK(f.n == 10);
	CHECK(f.stats.base.fragments_read == 1);
	CHECK(f.stats.base.fragments_skipped == 1);
	CHECK(f.stats.base.row_groups_read == 1);
	CHECK(f.stats.base.row_groups_skipped == 1);
	CHECK(f.stats.gens.fragments_skipped == 1);
	CHECK(f.stats.gens.fragments_read == 0);
	CHECK(f.stats.fragments_skipped == 2);
	CHECK(f.stats.row_groups_keys_only == 0);	/* "e" keys: no overlap */

	/* without predicates everything is read */
	cx_scan_spec_init(&spec);
	REQUIRE_OK(scan_spec(s, &spec, 2, &f, &err), &err);
	CHECK(f.n == 50 && f.matching == 10);
	CHECK(f.stats.base.row_groups_read == 4 && f.stats.gens.fragments_read == 1);

	/* IS NULL on v: nothing has NULLs */
	p.op = CX_PRED_IS_NULL;
	p.nvalues = 0;
	spec.preds = &p;
	spec.npreds = 1;
	REQUIRE_OK(scan_spec(s, &spec, 2, &f, &err), &err);
	CHECK(f.n == 0 && f.stats.fragments_skipped == 3);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/*
 * A base row that beats an older unmerged version of its key must do so even
 * when the predicates skip its row group: shard x writes k0 = 5 (unmerged),
 * then shard y writes k0 = 1 later and is merged.  k0's row is v = 1, so
 * v = 5 matches nothing; reading only the generation would bring back the
 * stale k0 = 5.
 */
CX_TEST(prune_pruned_base_group_still_shadows_generations)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *wx;
	cx_shardwriter *wy;
	cx_scan_spec spec;
	cx_datum	five = i64(5);
	cx_pred		p = {1, CX_PRED_EQ, &five, 1};
	found		f;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "x", true, &wx, &err), &err);
	REQUIRE_OK(mw_writer(s, "y", true, &wy, &err), &err);
	REQUIRE_OK(mw_put(wx, "k", 0, 1, 5, true, &err), &err);
	REQUIRE_OK(mw_put(wy, "k", 0, 1, 1, false, &err), &err);
	REQUIRE_OK(mw_put(wy, "j", 0, 9, 1, true, &err), &err);
	REQUIRE_OK(merge_small_groups(s, "y", 10, &err), &err);
	REQUIRE_OK(mw_drain(s, wy, &err), &err);

	cx_scan_spec_init(&spec);
	REQUIRE_OK(scan_spec(s, &spec, 5, &f, &err), &err);
	CHECK(f.n == 10 && f.matching == 0);	/* the base's k0 = 1 wins */

	spec.preds = &p;
	spec.npreds = 1;
	REQUIRE_OK(scan_spec(s, &spec, 5, &f, &err), &err);
	CHECK(f.matching == 0);
	CHECK(f.stats.base.row_groups_read == 0);
	CHECK(f.stats.base.row_groups_skipped == 1);
	CHECK(f.stats.row_groups_keys_only == 1);
	CHECK(f.stats.gens.row_groups_read == 1);
	REQUIRE_OK(cx_sw_close(wx, false, &err), &err);
	REQUIRE_OK(cx_sw_close(wy, false, &err), &err);
	cx_obj_close(s);
}

/* order_column visits base fragments and row groups best first; a bound set
 * after the first batch skips the fragments and groups that cannot beat
 * it. */
CX_TEST(prune_scan_order_and_bound)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_scan_spec spec;
	cx_snapshot *snap;
	cx_tablescan *scan;
	const cx_rowgroup *g;
	const uint32_t *rows;
	uint32_t	n;
	cx_datum	first;
	int			batches = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	/* the first base fragment in storage order is the worst */
	REQUIRE_OK(mw_put(w, "z", 0, 10, 0, true, &err), &err);
	REQUIRE_OK(merge_small_groups(s, "a", 10, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_put(w, "a", 0, 10, 1, false, &err), &err);
	REQUIRE_OK(mw_put(w, "b", 0, 10, 9, false, &err), &err);
	REQUIRE_OK(mw_put(w, "c", 0, 10, 4, true, &err), &err);
	REQUIRE_OK(merge_small_groups(s, "a", 10, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);

	cx_scan_spec_init(&spec);
	spec.order_column = 1;
	spec.order_desc = true;
	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	REQUIRE_OK(cx_tablescan_begin_spec(snap, &spec, &scan, &err), &err);
	REQUIRE_OK(cx_tablescan_next(scan, &g, &rows, &n, &err), &err);
	REQUIRE(g != NULL && n == 10);
	cx_colvec_get(cx_tablescan_column(scan, 1), rows[0], &first);
	CHECK(first.v.i64 == 9);	/* the group with the largest max first */
	cx_tablescan_set_bound(scan, 1, &first, true, false);
	do
	{
		REQUIRE_OK(cx_tablescan_next(scan, &g, &rows, &n, &err), &err);
		batches += g != NULL;
	} while (g != NULL);
	CHECK(batches == 0);
	CHECK(cx_tablescan_get_stats(scan)->base.row_groups_skipped == 2);
	CHECK(cx_tablescan_get_stats(scan)->base.fragments_skipped == 1);
	cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}
