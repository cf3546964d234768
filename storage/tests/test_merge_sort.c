/*
 * test_merge_sort.c — sorted merges (cx_merge_sort.c): base fragments in
 * sort-key order across generations and shards, the memory budget cut into
 * sorted runs, row-group statistics disjoint on the leading sort column,
 * the order recorded in the footer, the sort key's validation, and a large
 * sorted run's order.
 *
 * The table is mw_util's (id text, v int64, tags text[]), key id.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"
#include "format/cx_parquet_meta.h"
#include "format/cx_parquet_schema.h"
#include "merge/cx_merge.h"
#include "merge/cx_merge_int.h"
#include "cx_test.h"
#include "mw_util.h"

#define COL_ID 0
#define NVALUES(a) ((int) (sizeof(a) / sizeof((a)[0])))
#define COL_V 1

/* One row of a base fragment, as far as the order goes. */
typedef struct frag_row
{
	char		id[32];			/* "" for NULL */
	bool		id_null;
	int64_t		v;
} frag_row;

/* The (id, v) of every row of fragment fi, in storage order. */
static cx_code
read_fragment_rows(cx_objstore *s, const cx_fragment_info *fi,
				   frag_row **rows, uint32_t *n, cx_err *err)
{
	cx_fragr   *r;
	cx_code		rc;

	*n = 0;
	*rows = calloc(fi->rows + 1, sizeof(frag_row));
	if (*rows == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	if (cx_fragr_open_entry(s, fi, &r, err) != CX_OK)
		return err->code;
	rc = CX_OK;
	for (uint32_t g = 0; rc == CX_OK && g < cx_fragr_num_groups(r); g++)
	{
		cx_rowgroup *rg;

		rc = cx_fragr_read_group(r, g, NULL, &rg, err);
		for (uint32_t i = 0; rc == CX_OK && i < cx_rowgroup_rows(rg); i++)
		{
			frag_row   *fr = &(*rows)[(*n)++];
			cx_datum	d;

			cx_colvec_get(cx_rowgroup_column(rg, COL_ID), i, &d);
			fr->id_null = d.isnull;
			if (!d.isnull)
				snprintf(fr->id, sizeof(fr->id), "%.*s",
						 (int) d.v.bytes.len, (const char *) d.v.bytes.ptr);
			cx_colvec_get(cx_rowgroup_column(rg, COL_V), i, &d);
			fr->v = d.v.i64;
		}
		if (rc == CX_OK)
			cx_rowgroup_free(rg);
	}
	cx_fragr_close(r);
	return rc;
}

/* Whether a comes after b in (v, id) order, NULL ids last. */
static bool
out_of_order(const frag_row *a, const frag_row *b)
{
	if (a->v != b->v)
		return a->v > b->v;
	if (a->id_null || b->id_null)
		return a->id_null && !b->id_null;
	return strcmp(a->id, b->id) > 0;
}

/* Whether fragment fi's rows are in (v, id) order; *n gets their count. */
static bool
fragment_sorted(cx_objstore *s, const cx_fragment_info *fi, uint32_t *n)
{
	frag_row   *rows = NULL;
	bool		sorted = true;
	cx_err		err;

	if (read_fragment_rows(s, fi, &rows, n, &err) != CX_OK)
	{
		cx_test_fail(__FILE__, __LINE__, err.msg);
		free(rows);
		return false;
	}
	for (uint32_t i = 1; i < *n; i++)
		sorted &= !out_of_order(&rows[i - 1], &rows[i]);
	free(rows);
	return sorted;
}

/* The footer of fragment fi, decoded. */
static cx_code
read_footer(cx_objstore *s, const cx_fragment_info *fi, cx_pq_file_meta *m,
			cx_err *err)
{
	cx_buf		b;
	cx_code		rc;

	cx_buf_init(&b);
	memset(m, 0, sizeof(*m));
	rc = cx_obj_get(s, fi->path, &b, err);
	if (rc == CX_OK)
		rc = cx_pq_file_meta_decode(b.data + fi->footer_offset, fi->footer_len,
									m, fi->path, err);
	cx_buf_free(&b);
	return rc;
}

static const char *
kv_value(const cx_pq_file_meta *m, const char *key)
{
	for (uint32_t i = 0; i < m->nkv; i++)
		if (strcmp(m->kv[i].key, key) == 0)
			return m->kv[i].value;
	return NULL;
}

/* Every row group of fi records sorting columns cols (ascending, NULLs
 * last), and the key-value ctxstore.sort_key is names. */
static bool
footer_records_order(cx_objstore *s, const cx_fragment_info *fi,
					 const int32_t *cols, uint32_t ncols, const char *names)
{
	cx_pq_file_meta m;
	const char *kv;
	bool		ok;
	cx_err		err;

	if (read_footer(s, fi, &m, &err) != CX_OK)
	{
		cx_test_fail(__FILE__, __LINE__, err.msg);
		cx_pq_file_meta_free(&m);
		return false;
	}
	kv = kv_value(&m, CX_PQ_KV_SORT_KEY);
	ok = m.nrow_groups > 0 && kv != NULL && strcmp(kv, names) == 0;
	for (uint32_t g = 0; ok && g < m.nrow_groups; g++)
	{
		const cx_pq_row_group *rg = &m.row_groups[g];

		ok = rg->nsorting == ncols;
		for (uint32_t i = 0; ok && i < ncols; i++)
			ok = rg->sorting[i].column_idx == cols[i] &&
				!rg->sorting[i].descending && !rg->sorting[i].nulls_first;
	}
	cx_pq_file_meta_free(&m);
	return ok;
}

static cx_merge_options
sorted_by(const char *sort_key)
{
	cx_merge_options o;

	cx_merge_options_default(&o);
	o.sort_key = sort_key;
	return o;
}

/* Fragment f of the newest base version holds exactly rows want, in order. */
static void
check_fragment_rows(cx_objstore *s, const cx_manifest *m, uint32_t f,
					const frag_row *want, uint32_t nwant)
{
	frag_row   *got = NULL;
	uint32_t	n = 0;
	cx_err		err;

	REQUIRE(f < m->nfragments);
	REQUIRE_OK(read_fragment_rows(s, &m->fragments[f], &got, &n, &err), &err);
	CHECK(n == nwant);
	for (uint32_t i = 0; i < n && i < nwant; i++)
		CHECK(got[i].id_null == want[i].id_null &&
			  strcmp(got[i].id, want[i].id) == 0 && got[i].v == want[i].v);
	free(got);
}

/*
 * Two shards, two generations in the first: an update inside the merge
 * (k2), a key replaced across shards (k1: the later shard's commit wins and
 * the base row gets a deletion vector entry), a NULL key (never
 * de-duplicated, last among equal v).  Each merge writes its survivors in
 * (v, id) order, and the scan still sees exactly the winners.
 */
CX_TEST(merge_sort_two_columns_across_generations_and_shards)
{
	static const mw_genrow a1[] = {
		{"k1", 3, 10, false}, {"k2", 1, 11, false}, {"k3", 2, 12, false},
		{NULL, 1, 13, false}};
	static const mw_genrow a2[] = {
		{"k2", 5, 20, false}, {"k4", 1, 21, false}, {"k5", 3, 22, false}};
	static const mw_genrow b1[] = {
		{"k7", 2, 30, false}, {"k1", 0, 31, false}, {"k6", 2, 32, false}};
	static const frag_row from_a[] = {
		{"k4", false, 1}, {"", true, 1}, {"k3", false, 2}, {"k1", false, 3},
		{"k5", false, 3}, {"k2", false, 5}};
	static const frag_row from_b[] = {
		{"k1", false, 0}, {"k6", false, 2}, {"k7", false, 2}};
	static const int32_t order[] = {COL_V, COL_ID};
	cx_objstore *s = mw_open_store();
	cx_merge_options o = sorted_by(" v ,id");
	cx_merge_result res;
	cx_manifest *m = NULL;
	mw_rows		rows;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_fake_seal(s, "a", a1, 4, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "a", a2, 3, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "b", b1, 3, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.generations == 2 && res.rows_written == 6 &&
		  res.sorted_runs == 1);
	REQUIRE_OK(cx_merge_shard(s, "b", &o, &res, &err), &err);
	CHECK(res.rows_written == 3 && res.rows_replaced == 1 &&
		  res.key_conflicts == 1 && res.bytes_merged > 0);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 2);
	check_fragment_rows(s, m, 0, from_a, 6);
	check_fragment_rows(s, m, 1, from_b, 3);
	CHECK(strcmp(m->fragments[0].origin_shard, "a") == 0 &&
		  strcmp(m->fragments[1].origin_shard, "b") == 0);
	/* k1 of shard a (row 3 of fragment 0) lost to shard b's */
	CHECK(mw_is_deleted(m, 0, 3) && cx_manifest_deleted_count(m, 0) == 1);
	CHECK(footer_records_order(s, &m->fragments[0], order, 2, "v,id"));
	REQUIRE_OK(mw_scan(s, NULL, &rows, &err), &err);
	CHECK(rows.n == 8);
	CHECK(mw_count(&rows, "k1", &v) == 1 && v == 0);
	CHECK(mw_count(&rows, "k2", &v) == 1 && v == 5);
	CHECK(mw_count(&rows, "", &v) == 1 && v == 1);
	mw_rows_free(&rows);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* Three generations of 400 rows with scattered v. */
static void
seal_scattered(cx_objstore *s, int64_t ts)
{
	mw_genrow  *rows = calloc(400, sizeof(mw_genrow));
	char	  (*ids)[16] = calloc(400, sizeof(*ids));
	cx_err		err;

	REQUIRE(rows != NULL && ids != NULL);
	for (int g = 0; g < 3; g++)
	{
		for (int i = 0; i < 400; i++)
		{
			int			k = g * 400 + i;

			snprintf(ids[i], sizeof(ids[i]), "k%04d", k);
			rows[i] = (mw_genrow) {ids[i], (k * 7919) % 1000, ts + k, false};
		}
		REQUIRE_OK(mw_fake_seal(s, "a", rows, 400, &err), &err);
	}
	free(rows);
	free(ids);
}

/* Consecutive row groups of fi do not overlap on v: each one's max is at
 * most the next one's min. */
static bool
groups_disjoint_on_v(cx_objstore *s, const cx_fragment_info *fi,
					 uint32_t *ngroups)
{
	cx_fragr   *r;
	bool		ok = true;
	cx_err		err;

	if (cx_fragr_open_entry(s, fi, &r, &err) != CX_OK)
		return false;
	*ngroups = cx_fragr_num_groups(r);
	for (uint32_t g = 1; g < *ngroups; g++)
	{
		const cx_colstats *prev = &cx_fragr_chunk(r, g - 1, COL_V)->stats;
		const cx_colstats *next = &cx_fragr_chunk(r, g, COL_V)->stats;

		ok &= prev->has_max && next->has_min &&
			cx_value_cmp(CX_T_INT64, prev->max, prev->max_len, next->min,
						 next->min_len) <= 0;
	}
	cx_fragr_close(r);
	return ok;
}

/*
 * With a budget far below the merge's rows, the merge writes several sorted
 * runs, each its own fragment (target_rows_per_fragment is not reached),
 * none holding more rows than fit in the budget; every fragment is in
 * order, its row groups are disjoint on v, and no row is lost.
 */
CX_TEST(merge_sort_memory_budget_cuts_sorted_runs)
{
	static const int32_t order[] = {COL_V, COL_ID};
	cx_objstore *s = mw_open_store();
	cx_merge_options o = sorted_by("v");
	cx_merge_result res;
	cx_manifest *m = NULL;
	mw_rows		rows;
	uint64_t	total = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	seal_scattered(s, 100);
	o.sort_memory = 16 * 1024;
	o.fragment.rows_per_group = 25;
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.rows_written == 1200 && res.sorted_runs > 2);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->nfragments == res.sorted_runs);
	for (uint32_t f = 0; f < m->nfragments; f++)
	{
		uint32_t	n = 0;
		uint32_t	ngroups = 0;

		CHECK(fragment_sorted(s, &m->fragments[f], &n));
		/* a held row takes at least its v, commit time and order bytes */
		CHECK(n > 0 && n <= o.sort_memory / 32);
		CHECK(groups_disjoint_on_v(s, &m->fragments[f], &ngroups));
		CHECK(ngroups > 1);
		total += n;
	}
	CHECK(total == 1200);
	CHECK(footer_records_order(s, &m->fragments[0], order, 2, "v,id"));
	REQUIRE_OK(mw_scan(s, NULL, &rows, &err), &err);
	CHECK(rows.n == 1200);
	mw_rows_free(&rows);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* The default budget holds the same merge in one run: one fragment. */
CX_TEST(merge_sort_one_run_within_the_budget)
{
	cx_objstore *s = mw_open_store();
	cx_merge_options o = sorted_by("v");
	cx_merge_result res;
	cx_manifest *m = NULL;
	uint32_t	n = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	seal_scattered(s, 100);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.sorted_runs == 1);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 1);
	CHECK(fragment_sorted(s, &m->fragments[0], &n) && n == 1200);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* Without a sort key the key is the order, and the footer says so. */
CX_TEST(merge_sort_without_sort_key_orders_by_the_key)
{
	static const mw_genrow rows[] = {
		{"k3", 1, 10, false}, {"k1", 2, 11, false}, {"k2", 3, 12, false}};
	static const frag_row want[] = {
		{"k1", false, 2}, {"k2", false, 3}, {"k3", false, 1}};
	static const int32_t order[] = {COL_ID};
	cx_objstore *s = mw_open_store();
	cx_merge_result res;
	cx_manifest *m = NULL;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_fake_seal(s, "a", rows, 3, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.sorted_runs == 1);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	check_fragment_rows(s, m, 0, want, 3);
	CHECK(footer_records_order(s, &m->fragments[0], order, 1, "id"));
	cx_manifest_free(m);
	cx_obj_close(s);
}

static void
check_refused(const char *sort_key, const char *message)
{
	uint32_t	cols[CX_SORT_KEY_MAX_COLUMNS];
	uint32_t	n;
	cx_err		err;

	CHECK_CODE(cx_sort_key_resolve(mw_schema(), sort_key, cols, &n, &err),
			   CX_ERR_INVALID);
	CHECK(strstr(err.msg, message) != NULL);
}

CX_TEST(merge_sort_key_validation)
{
	uint32_t	cols[CX_SORT_KEY_MAX_COLUMNS];
	uint32_t	n = 9;
	cx_objstore *s;
	cx_merge_options o = sorted_by("nosuch");
	cx_merge_result res;
	cx_err		err;
	static const mw_genrow rows[] = {{"k1", 1, 10, false}};

	REQUIRE_OK(cx_sort_key_resolve(mw_schema(), "", cols, &n, &err), &err);
	CHECK(n == 0);
	REQUIRE_OK(cx_sort_key_resolve(mw_schema(), " v,\tid ", cols, &n, &err),
			   &err);
	CHECK(n == 2 && cols[0] == COL_V && cols[1] == COL_ID);
	check_refused("nosuch", "\"nosuch\" is not a column");
	check_refused("v,v", "names column \"v\" twice");
	check_refused("v,,id", "an empty column name");
	check_refused("v,", "an empty column name");
	check_refused("tags", "has type list, which has no order");
	check_refused("a,b,c,d,e,f,g,h,i", "more than 8 columns");
	/* without a schema only the list is checked */
	REQUIRE_OK(cx_sort_key_resolve(NULL, "nosuch, tags", cols, &n, &err),
			   &err);
	CHECK(n == 0);
	CHECK_CODE(cx_sort_key_resolve(NULL, "a, a", cols, &n, &err),
			   CX_ERR_INVALID);
	/* a merge with a bad sort key fails before writing anything */
	s = mw_open_store();
	REQUIRE(s != NULL);
	REQUIRE_OK(mw_fake_seal(s, "a", rows, 1, &err), &err);
	CHECK_CODE(cx_merge_shard(s, "a", &o, &res, &err), CX_ERR_INVALID);
	CHECK(res.generations == 0);
	cx_obj_close(s);
}

/* The sort order over floats is PostgreSQL's: NaN equals NaN and sorts
 * above every number. */
CX_TEST(merge_sort_nan_sorts_last)
{
	uint8_t		nan[8];
	uint8_t		big[8];
	double		d;

	d = NAN;
	memcpy(nan, &d, 8);
	d = INFINITY;
	memcpy(big, &d, 8);
	CHECK(cx_value_cmp(CX_T_FLOAT64, nan, 8, big, 8) > 0);
	CHECK(cx_value_cmp(CX_T_FLOAT64, big, 8, nan, 8) < 0);
	CHECK(cx_value_cmp(CX_T_FLOAT64, nan, 8, nan, 8) == 0);
	CHECK(cx_value_cmp(CX_T_FLOAT64, big, 8, big, 8) == 0);
}

/*
 * A row larger than the budget is a run of its own, and the runs after it
 * stay within the budget although the arena grew past it for that row.
 */
CX_TEST(merge_sort_a_row_larger_than_the_budget_is_held_alone)
{
	enum
	{
		NSMALL = 600, BIG = 100 * 1024
	};
	cx_objstore *s = mw_open_store();
	cx_merge_options o = sorted_by("v");
	mw_genrow  *rows = calloc(NSMALL + 1, sizeof(mw_genrow));
	char	   *big = malloc(BIG + 1);
	char	  (*ids)[16] = calloc(NSMALL, sizeof(*ids));
	cx_merge_result res;
	cx_manifest *m = NULL;
	uint64_t	total = 0;
	cx_err		err;

	REQUIRE(s != NULL && rows != NULL && big != NULL && ids != NULL);
	memset(big, 'b', BIG);
	big[BIG] = '\0';
	rows[0] = (mw_genrow) {big, 0, 10, false};
	for (int i = 0; i < NSMALL; i++)
	{
		snprintf(ids[i], sizeof(ids[i]), "k%04d", i);
		rows[i + 1] = (mw_genrow) {ids[i], i, 11 + i, false};
	}
	REQUIRE_OK(mw_fake_seal(s, "a", rows, NSMALL + 1, &err), &err);
	o.sort_memory = 4096;
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == res.sorted_runs && m->nfragments > 2);
	CHECK(m->fragments[0].rows == 1);
	for (uint32_t f = 1; f < m->nfragments; f++)
	{
		/* a held row takes at least its v, commit time and order bytes */
		CHECK(m->fragments[f].rows <= o.sort_memory / 32);
		total += m->fragments[f].rows;
	}
	CHECK(total == NSMALL);
	cx_manifest_free(m);
	free(rows);
	free(big);
	free(ids);
	cx_obj_close(s);
}

/* Whether the prefixes of every pair of values[n] of type t agree with the
 * full order wherever they differ: checked both ways round. */
static bool
prefixes_agree(cx_type t, const cx_datum *values, int n)
{
	cx_sort_order o = {.cols = {0}, .types = {t}, .n = 1};
	bool		ok = true;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
		{
			uint64_t	pi = cx_sort_order_prefix(&o, &values[i]);
			uint64_t	pj = cx_sort_order_prefix(&o, &values[j]);
			cx_buf		bi;
			cx_buf		bj;
			int			c;

			cx_buf_init(&bi);
			cx_buf_init(&bj);
			cx_sort_order_encode(&o, &values[i], &bi);
			cx_sort_order_encode(&o, &values[j], &bj);
			c = cx_sort_order_cmp(&o, bi.data, bj.data);
			if ((pi < pj && c >= 0) || (pi > pj && c <= 0))
			{
				fprintf(stderr, "type %d: values %d and %d: prefixes %llx %llx, order %d\n",
						(int) t, i, j, (unsigned long long) pi,
						(unsigned long long) pj, c);
				ok = false;
			}
			cx_buf_free(&bi);
			cx_buf_free(&bj);
		}
	return ok;
}

static cx_datum
bytes_datum(const char *p, size_t len)
{
	cx_datum	d = {.isnull = false};

	d.v.bytes.ptr = (const uint8_t *) p;
	d.v.bytes.len = len;
	return d;
}

/*
 * The sort compares rows by an 8-byte prefix of their first order column
 * before it decodes their order bytes: for every orderable type, a prefix
 * that differs must never contradict cx_sort_order_cmp (values sharing
 * their first 8 bytes, shorter values, zero and 0xff bytes, the integers'
 * extremes, NULL), and the prefixes must tell most distinct values apart.
 */
CX_TEST(merge_sort_prefix_agrees_with_the_order)
{
	cx_datum	s[] = {
		bytes_datum("", 0), bytes_datum("a", 1), bytes_datum("a\0", 2),
		bytes_datum("a\0\1", 3), bytes_datum("abcdefgh", 8),
		bytes_datum("abcdefgh\0", 9), bytes_datum("abcdefghi", 9),
		bytes_datum("abcdefgj", 8), bytes_datum("abcdefg", 7),
		bytes_datum("\377\377\377\377\377\377\377\377", 8),
		bytes_datum("\377\377\377\377\377\377\377\377\377", 9),
		{.isnull = true},
	};
	int64_t		ints[] = {INT64_MIN, INT64_MIN + 1, -65536, -1, 0, 1, 65536,
	INT64_MAX - 1, INT64_MAX};
	cx_datum	i64[NVALUES(ints) + 1];
	cx_datum	i16[NVALUES(ints) + 1];
	cx_datum	i32[NVALUES(ints) + 1];
	cx_datum	b[] = {{.v.b = false}, {.v.b = true}, {.isnull = true}};
	cx_datum	u[4] = {{.isnull = false}, {.isnull = false}, {.isnull = false},
	{.isnull = true}};
	cx_datum	f[] = {{.v.f64 = -1.5}, {.v.f64 = 0.0}, {.v.f64 = NAN},
	{.v.f64 = INFINITY}, {.isnull = true}};
	cx_sort_order text = {.cols = {0}, .types = {CX_T_STRING}, .n = 1};

	for (int i = 0; i < NVALUES(ints); i++)
	{
		i64[i] = (cx_datum) {.v.i64 = ints[i]};
		i16[i] = (cx_datum) {.v.i16 = (int16_t) (ints[i] >> 48)};
		i32[i] = (cx_datum) {.v.i32 = (int32_t) (ints[i] >> 32)};
	}
	i64[NVALUES(ints)] = i16[NVALUES(ints)] = i32[NVALUES(ints)] =
		(cx_datum) {.isnull = true};
	memset(u[1].v.uuid, 0x7f, 16);
	memset(u[2].v.uuid, 0x7f, 16);
	u[2].v.uuid[15] = 0x80;
	CHECK(prefixes_agree(CX_T_STRING, s, NVALUES(s)));
	CHECK(prefixes_agree(CX_T_BINARY, s, NVALUES(s)));
	CHECK(prefixes_agree(CX_T_INT64, i64, NVALUES(i64)));
	CHECK(prefixes_agree(CX_T_TIMESTAMPTZ, i64, NVALUES(i64)));
	CHECK(prefixes_agree(CX_T_INT32, i32, NVALUES(i32)));
	CHECK(prefixes_agree(CX_T_DATE, i32, NVALUES(i32)));
	CHECK(prefixes_agree(CX_T_INT16, i16, NVALUES(i16)));
	CHECK(prefixes_agree(CX_T_BOOL, b, NVALUES(b)));
	CHECK(prefixes_agree(CX_T_UUID, u, NVALUES(u)));
	CHECK(prefixes_agree(CX_T_FLOAT64, f, NVALUES(f)));
	/* values that differ within 8 bytes are told apart by the prefix */
	CHECK(cx_sort_order_prefix(&text, &s[4]) <
		  cx_sort_order_prefix(&text, &s[7]));
	CHECK(cx_sort_order_prefix(&text, &s[8]) <
		  cx_sort_order_prefix(&text, &s[4]));
	CHECK(cx_sort_order_prefix(&text, &s[0]) <
		  cx_sort_order_prefix(&text, &s[1]));
}

#define NROWS 30000

/* What a sorted run gave back, row by row: (s, v) copied. */
typedef struct emitted
{
	char		s[16];
	bool		s_null;
	int64_t		v;
} emitted;

typedef struct emit_log
{
	emitted    *rows;
	uint32_t	n;
} emit_log;

static cx_code
log_row(void *arg, const cx_datum *values, cx_keyver *v, cx_err *err)
{
	emit_log   *log = arg;
	emitted    *e = &log->rows[log->n++];

	(void) v;
	(void) err;
	e->s_null = values[0].isnull;
	if (!e->s_null)
		snprintf(e->s, sizeof(e->s), "%.*s", (int) values[0].v.bytes.len,
				 (const char *) values[0].v.bytes.ptr);
	e->v = values[1].v.i64;
	return CX_OK;
}

/* Whether b may follow a: s ascending (NULLs last), equal s in arrival
 * order (v counts the arrivals). */
static bool
in_order(const emitted *a, const emitted *b)
{
	int			c;

	if (a->s_null || b->s_null)
		return b->s_null && (!a->s_null || a->v < b->v);
	c = strcmp(a->s, b->s);
	return c < 0 || (c == 0 && a->v < b->v);
}

/*
 * A run of 30,000 rows comes back in order: values sharing their first 8
 * bytes (which the sort tells apart only by their whole bytes), values that
 * differ within them, repeated values (arrival decides), an empty value,
 * NULLs and a value of 0xff bytes, added in a scrambled order; each comes
 * back exactly once.
 */
CX_TEST(merge_sort_run_orders_many_rows)
{
	cx_schema  *schema = cx_schema_new();
	merge_state ms = {0};
	cx_sort_run *run = NULL;
	emit_log	log = {calloc(NROWS, sizeof(emitted)), 0};
	bool	   *back = calloc(NROWS, sizeof(bool));
	uint32_t	nulls = 0;
	uint32_t	distinct = 0;
	cx_err		err;

	REQUIRE(schema != NULL && log.rows != NULL && back != NULL);
	REQUIRE_OK(cx_schema_add(schema, "s", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(schema, "v", CX_T_INT64, 0, NULL, &err), &err);
	ms.written_schema = schema;
	ms.order = (cx_sort_order) {.cols = {0}, .types = {CX_T_STRING}, .n = 1};
	cx_merge_options_default(&ms.opt);
	REQUIRE_OK(cx_sort_run_new(&ms, &run, &err), &err);
	for (uint32_t i = 0; i < NROWS; i++)
	{
		uint32_t	x = (i * 7919u) % 1009u;	/* scrambled, repeating */
		char		s[16];
		cx_datum	values[2] = {{.isnull = false}, {.v.i64 = i}};
		bool		full;

		if (x % 3 == 0)
			snprintf(s, sizeof(s), "abcdefgh%03u", x);	/* shared prefix */
		else if (x % 3 == 1 && x > 2)	/* sharing 5 to 7 leading bytes */
			snprintf(s, sizeof(s), "%08u", x);
		else if (x == 1)
			s[0] = '\0';
		else if (x == 2)
			memset(s, 0xff, 10), s[10] = '\0';
		else					/* digits varying in every place */
			snprintf(s, sizeof(s), "%010u", x * 2654435761u);
		values[0] = bytes_datum(s, strlen(s));
		values[0].isnull = x == 5;
		nulls += x == 5;
		REQUIRE_OK(cx_sort_run_add(run, values, NULL, &full, &err), &err);
		REQUIRE(!full);
	}
	REQUIRE_OK(cx_sort_run_flush(run, log_row, &log, &err), &err);
	CHECK(log.n == NROWS);
	for (uint32_t i = 0; i < log.n; i++)
	{
		nulls -= log.rows[i].s_null;
		if (log.rows[i].v >= 0 && log.rows[i].v < NROWS &&
			!back[log.rows[i].v])
			back[log.rows[i].v] = true, distinct++;
	}
	CHECK(nulls == 0);
	CHECK(distinct == NROWS);
	for (uint32_t i = 1; i < log.n; i++)
		if (!in_order(&log.rows[i - 1], &log.rows[i]))
		{
			CHECK(in_order(&log.rows[i - 1], &log.rows[i]));
			break;
		}
	cx_sort_run_free(run);
	cx_schema_free(schema);
	free(log.rows);
	free(back);
}
