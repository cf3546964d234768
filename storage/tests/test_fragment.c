/*
 * test_fragment.c — schemas, column statistics and the fragment format
 * (Parquet): round trips of every type, decimals, extreme dates, long lists
 * over many pages, row groups, projection and coalescing, stats, footer and
 * page checksums, corruption, truncation and garbage footers, compression
 * levels, memory bounds, and the level codec.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"
#include "format/cx_fragment.h"
#include "format/cx_levels.h"
#include "format/cx_parquet_meta.h"
#include "format/cx_parquet_types.h"
#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "cx_test.h"
#include "mw_util.h"

/* ---------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------- */

static cx_objstore *
open_store(void)
{
	cx_objstore *s = NULL;
	cx_err		err;

	if (cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err) != CX_OK)
	{
		cx_test_fail(__FILE__, __LINE__, err.msg);
		return NULL;
	}
	return s;
}

/* A row generator fills the values of row i, keeping the memory they point
 * to in the caller's scratch; the same i always yields the same row. */
typedef struct row_scratch
{
	char		str[80];
	uint8_t    *big;			/* optional large value */
	cx_datum	sitems[4];
	char		sbuf[4][16];
	cx_datum	iitems[4];
	cx_datum	eitems[2];
} row_scratch;

typedef void (*row_gen) (uint32_t i, cx_datum *vals, row_scratch *sc);

static void
set_bytes(cx_datum *d, const void *p, size_t len)
{
	d->isnull = false;
	d->v.bytes.ptr = p;
	d->v.bytes.len = len;
}

static cx_code
write_fragment(cx_objstore *s, const char *key, const cx_schema *schema,
			   const cx_fragw_options *opt, uint32_t nrows, row_gen gen,
			   cx_fragment_info *info, cx_err *err)
{
	cx_fragw   *w;
	cx_datum   *vals = calloc(schema->ncolumns + 1, sizeof(cx_datum));
	row_scratch sc = {0};

	if (cx_fragw_open(s, key, schema, opt, &w, err) != CX_OK)
	{
		free(vals);
		return err->code;
	}
	for (uint32_t i = 0; i < nrows; i++)
	{
		memset(vals, 0, sizeof(cx_datum) * schema->ncolumns);
		gen(i, vals, &sc);
		if (cx_fragw_append(w, vals, err) != CX_OK)
		{
			cx_fragw_abort(w);
			free(sc.big);
			free(vals);
			return err->code;
		}
	}
	free(vals);
	free(sc.big);
	return cx_fragw_finish(w, info, err);
}

static bool
datum_matches(uint8_t type, uint8_t elem_type, const cx_datum *exp,
			  const cx_datum *got)
{
	int			width = cx_type_width(type);

	if (exp->isnull || got->isnull)
		return exp->isnull == got->isnull;
	if (width > 0)
	{
		uint8_t		a[16];
		uint8_t		b[16];

		/* Compare encoded bits: NaN == NaN, -0.0 != 0.0. */
		cx_fixed_encode(type, exp, a);
		cx_fixed_encode(type, got, b);
		return memcmp(a, b, width) == 0;
	}
	if (type == CX_T_LIST)
	{
		if (got->v.slice.n != exp->v.list.n)
			return false;
		for (uint32_t k = 0; k < exp->v.list.n; k++)
		{
			cx_datum	e;

			cx_colvec_get(got->v.slice.elems, got->v.slice.start + k, &e);
			if (!datum_matches(elem_type, 0, &exp->v.list.items[k], &e))
				return false;
		}
		return true;
	}
	return exp->v.bytes.len == got->v.bytes.len &&
		(exp->v.bytes.len == 0 ||
		 memcmp(exp->v.bytes.ptr, got->v.bytes.ptr, exp->v.bytes.len) == 0);
}

/* Reads every row group of r and compares each value with gen's; returns
 * the number of mismatches, or -1 (and err) if reading failed.  Closes r. */
static long
verify_reader(cx_fragr *r, row_gen gen, cx_err *err)
{
	const cx_schema *schema;
	cx_datum   *vals;
	row_scratch sc = {0};
	uint32_t	row = 0;
	long		bad = 0;

	schema = cx_fragr_schema(r);
	vals = calloc(schema->ncolumns + 1, sizeof(cx_datum));
	for (uint32_t g = 0; g < cx_fragr_num_groups(r); g++)
	{
		cx_rowgroup *rg;

		if (cx_fragr_read_group(r, g, NULL, &rg, err) != CX_OK)
		{
			bad = -1;
			break;
		}
		for (uint32_t i = 0; i < cx_rowgroup_rows(rg); i++, row++)
		{
			memset(vals, 0, sizeof(cx_datum) * schema->ncolumns);
			gen(row, vals, &sc);
			for (uint32_t c = 0; c < schema->ncolumns; c++)
			{
				cx_datum	got;

				cx_colvec_get(cx_rowgroup_column(rg, c), i, &got);
				if (!datum_matches(schema->columns[c].type,
								   schema->columns[c].elem_type, &vals[c], &got))
					bad++;
			}
		}
		cx_rowgroup_free(rg);
	}
	if (bad >= 0 && row != cx_fragr_rows(r))
		bad++;
	free(vals);
	free(sc.big);
	cx_fragr_close(r);
	return bad;
}

/* verify_reader() of the fragment under key, opened as tools open it. */
static long
verify_fragment(cx_objstore *s, const char *key, uint64_t size, row_gen gen,
				cx_err *err)
{
	cx_fragr   *r;

	if (cx_fragr_open(s, key, size, &r, err) != CX_OK)
		return -1;
	return verify_reader(r, gen, err);
}

/* The same, opened from its manifest entry as the engine opens it. */
static long
verify_entry(cx_objstore *s, const cx_fragment_info *fi, row_gen gen,
			 cx_err *err)
{
	cx_fragr   *r;

	if (cx_fragr_open_entry(s, fi, &r, err) != CX_OK)
		return -1;
	return verify_reader(r, gen, err);
}

/* ---------------------------------------------------------------------
 * Every type
 * --------------------------------------------------------------------- */

static cx_schema *
all_types_schema(void)
{
	cx_schema  *s = cx_schema_new();
	cx_err		err;
	static const struct
	{
		const char *name;
		cx_type		type;
		cx_type		elem;
		const char *ext;
	}			cols[] = {
		{"b", CX_T_BOOL, 0, NULL}, {"i16", CX_T_INT16, 0, NULL}, {"i32", CX_T_INT32, 0, NULL},
		{"i64", CX_T_INT64, 0, NULL}, {"f32", CX_T_FLOAT32, 0, NULL}, {"f64", CX_T_FLOAT64, 0, NULL},
		{"d", CX_T_DATE, 0, NULL}, {"t", CX_T_TIME, 0, NULL}, {"ts", CX_T_TIMESTAMP, 0, NULL},
		{"tz", CX_T_TIMESTAMPTZ, 0, NULL}, {"u", CX_T_UUID, 0, NULL}, {"iv", CX_T_INTERVAL, 0, NULL},
		{"s", CX_T_STRING, 0, NULL}, {"bin", CX_T_BINARY, 0, NULL}, {"j", CX_T_JSON, 0, NULL},
		{"jb", CX_T_JSONB, 0, NULL}, {"n", CX_T_NUMERIC, 0, NULL},
		{"e", CX_T_EXTERNAL, 0, "point"},
		{"ls", CX_T_LIST, CX_T_STRING, NULL}, {"li", CX_T_LIST, CX_T_INT64, NULL},
		{"le", CX_T_LIST, CX_T_EXTERNAL, "inet"},
	};

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		if (cx_schema_add(s, cols[i].name, cols[i].type, cols[i].elem,
						  cols[i].ext, &err) != CX_OK)
		{
			cx_schema_free(s);
			return NULL;
		}
	return s;
}

static void
gen_list(uint32_t i, cx_datum *d, cx_datum *items, bool strings,
		 char sbuf[][16])
{
	uint32_t	n = i % 4 + 1;

	if (i % 5 == 0)
	{
		d->isnull = true;
		return;
	}
	d->v.list.items = items;
	d->v.list.n = i % 5 == 1 ? 0 : n;	/* some empty lists */
	for (uint32_t k = 0; k < d->v.list.n; k++)
	{
		memset(&items[k], 0, sizeof(cx_datum));
		if ((i + k) % 3 == 0)
			items[k].isnull = true;
		else if (strings)
		{
			int			len = snprintf(sbuf[k], 16, "%u.%u", i, k);

			set_bytes(&items[k], sbuf[k], k == 1 ? 0 : (size_t) len);
		}
		else
			items[k].v.i64 = (k == 2) ? INT64_MIN : (int64_t) i * 1000 + k;
	}
}

static void
gen_all(uint32_t i, cx_datum *v, row_scratch *sc)
{
	static const float f32s[] = {NAN, INFINITY, -INFINITY, -0.0f, FLT_MAX, 1.5f};
	static const double f64s[] = {NAN, INFINITY, -INFINITY, -0.0, DBL_MIN, -2.25};
	static const int64_t tss[] = {INT64_MIN + 1, INT64_MAX, 0, -86400000000LL};
	int			len;

	v[0].v.b = i % 3 == 0;
	v[1].v.i16 = (int16_t) (i % 2 ? INT16_MIN + (int) i : INT16_MAX - (int) i);
	v[2].v.i32 = i % 4 == 0 ? INT32_MIN : (int32_t) i * -7;
	v[3].v.i64 = i % 5 == 1 ? INT64_MIN : i % 5 == 2 ? INT64_MAX : (int64_t) i - 50;
	v[4].v.f32 = f32s[i % 6];
	v[5].v.f64 = f64s[i % 6];
	v[6].v.i32 = (int32_t) i - 1000;
	v[7].v.i64 = (int64_t) i * 1000000;
	v[8].v.i64 = tss[i % 4];
	v[9].v.i64 = tss[(i + 1) % 4];
	for (int k = 0; k < 16; k++)
		v[10].v.uuid[k] = (uint8_t) (i * 31 + k);
	v[11].v.interval.usec = -(int64_t) i * 3;
	v[11].v.interval.days = (int32_t) i % 7 - 3;
	v[11].v.interval.months = -(int32_t) i;
	len = snprintf(sc->str, sizeof(sc->str), "row-%u-\xc3\xa9", i);
	set_bytes(&v[12], sc->str, i % 4 == 0 ? 0 : (size_t) len);	/* "" */
	set_bytes(&v[13], sc->str, (size_t) len + 1);	/* includes the NUL */
	set_bytes(&v[14], "{\"a\": 1}", 8);
	set_bytes(&v[15], "{\"a\": 1}", 8);
	set_bytes(&v[16], "-12.5000", i % 2 ? 8 : 1);
	set_bytes(&v[17], "\x00\x01\x02", 3);
	gen_list(i, &v[18], sc->sitems, true, sc->sbuf);
	gen_list(i + 2, &v[19], sc->iitems, false, NULL);
	v[20].isnull = i % 2 == 0;
	v[20].v.list.items = sc->eitems;
	v[20].v.list.n = 2;
	set_bytes(&sc->eitems[0], "\x04\x7f", 2);
	sc->eitems[1].isnull = true;
	for (uint32_t c = 0; c < 21; c++)
		if ((i + c) % 11 == 0)
			v[c].isnull = true;
}

CX_TEST(fragment_round_trip_every_type)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = all_types_schema();
	cx_fragw_options o;
	cx_fragment_info info;
	cx_err		err;
	uint64_t	size;
	cx_fragr   *r;

	REQUIRE(s && schema);
	cx_fragw_options_default(&o);
	o.rows_per_group = 7;
	REQUIRE_OK(write_fragment(s, "data/all.parquet", schema, &o, 100, gen_all,
							  &info, &err), &err);
	CHECK(info.rows == 100);
	CHECK(strcmp(info.path, "data/all.parquet") == 0);
	CHECK(info.ncolumns == schema->ncolumns);
	CHECK(cx_obj_head(s, "data/all.parquet", &size, &err) == CX_OK);
	CHECK(size == info.size);
	CHECK(info.footer_offset + info.footer_len == info.size);
	CHECK(verify_fragment(s, "data/all.parquet", info.size, gen_all, &err) == 0);
	CHECK(verify_entry(s, &info, gen_all, &err) == 0);
	/* size 0: the reader asks the store. */
	CHECK(verify_fragment(s, "data/all.parquet", 0, gen_all, &err) == 0);

	REQUIRE_OK(cx_fragr_open(s, "data/all.parquet", 0, &r, &err), &err);
	CHECK(cx_fragr_num_groups(r) == 15);	/* 14 * 7 + 2 */
	CHECK(cx_fragr_group_rows(r, 14) == 2);
	CHECK(cx_fragr_rows(r) == 100);
	CHECK(cx_schema_equal(cx_fragr_schema(r), schema));
	CHECK(cx_fragr_chunk(r, 15, 0) == NULL);
	cx_fragr_close(r);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* ---------------------------------------------------------------------
 * Large values
 * --------------------------------------------------------------------- */

#define BIG_LEN (5u << 20)

static void
gen_big(uint32_t i, cx_datum *v, row_scratch *sc)
{
	if (sc->big == NULL)
	{
		uint32_t	x = 12345;

		sc->big = malloc(BIG_LEN);
		/* pseudo-random, so zstd cannot shrink it: the raw codec path */
		for (uint32_t k = 0; k < BIG_LEN; k++)
			sc->big[k] = (uint8_t) ((x = x * 1103515245u + 12345u) >> 16);
	}
	v[0].v.i32 = (int32_t) i;
	if (i == 1 || i == 4)
		set_bytes(&v[1], sc->big, BIG_LEN - i);
	else
		set_bytes(&v[1], "small", 5);
}

CX_TEST(fragment_multi_megabyte_values_close_the_group)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragw_options o;
	cx_fragment_info info;
	cx_fragr   *r;
	cx_err		err;

	REQUIRE(s && schema);
	REQUIRE_OK(cx_schema_add(schema, "id", CX_T_INT32, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(schema, "blob", CX_T_BINARY, 0, NULL, &err), &err);
	cx_fragw_options_default(&o);
	o.max_group_bytes = 1 << 20;
	REQUIRE_OK(write_fragment(s, "data/big.parquet", schema, &o, 6, gen_big,
							  &info, &err), &err);
	/* {0,1} {2,3,4} {5}: each big value closes its group. */
	REQUIRE_OK(cx_fragr_open(s, "data/big.parquet", info.size, &r, &err), &err);
	CHECK(cx_fragr_num_groups(r) == 3);
	CHECK(cx_fragr_group_rows(r, 0) == 2 && cx_fragr_group_rows(r, 1) == 3);
	cx_fragr_close(r);
	CHECK(verify_fragment(s, "data/big.parquet", info.size, gen_big, &err) == 0);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* ---------------------------------------------------------------------
 * Projection and coalescing
 * --------------------------------------------------------------------- */

#define WIDE_COLS 8

#define WIDE_LEN 250

/* Pseudo-random bytes per (row, column): chunks zstd cannot shrink much. */
static void
gen_wide(uint32_t i, cx_datum *v, row_scratch *sc)
{
	if (sc->big == NULL)
		sc->big = malloc(WIDE_COLS * WIDE_LEN);
	for (int c = 0; c < WIDE_COLS; c++)
	{
		uint8_t    *p = sc->big + c * WIDE_LEN;
		uint32_t	x = i * WIDE_COLS + (uint32_t) c;

		for (int k = 0; k < WIDE_LEN; k++)
			p[k] = (uint8_t) ((x = x * 1103515245u + 12345u) >> 16);
		set_bytes(&v[c], p, WIDE_LEN);
	}
}

/* Columns c0, c1, ... of one type. */
static cx_schema *
numbered_schema(int ncols, cx_type type)
{
	cx_schema  *schema = cx_schema_new();
	cx_err		err;
	char		name[16];

	for (int c = 0; c < ncols; c++)
	{
		snprintf(name, sizeof(name), "c%d", c);
		cx_schema_add(schema, name, type, 0, NULL, &err);
	}
	return schema;
}

static cx_schema *
wide_schema(void)
{
	return numbered_schema(WIDE_COLS, CX_T_BINARY);
}

/* Reads group 0 with want[] and returns the GETs and bytes it cost. */
static cx_code
read_cost(cx_objstore *s, cx_fragr *r, const bool *want, uint64_t *gets,
		  uint64_t *bytes, cx_err *err)
{
	cx_objstats before = s->stats;
	cx_rowgroup *rg;

	if (cx_fragr_read_group(r, 0, want, &rg, err) != CX_OK)
		return err->code;
	*gets = s->stats.gets - before.gets;
	*bytes = s->stats.bytes_read - before.bytes_read;
	for (uint32_t c = 0; c < WIDE_COLS; c++)
		if ((cx_rowgroup_column(rg, c) != NULL) != (want == NULL || want[c]))
			*gets = UINT64_MAX;
	cx_rowgroup_free(rg);
	return CX_OK;
}

CX_TEST(fragment_projection_reads_only_wanted_chunks)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = wide_schema();
	cx_fragment_info info;
	cx_fragr   *r;
	cx_err		err;
	uint64_t	gets,
				bytes,
				all_bytes;
	bool		one[WIDE_COLS] = {[3] = true};
	bool		three[WIDE_COLS] = {[2] = true, [3] = true, [4] = true};
	bool		gap[WIDE_COLS] = {[1] = true, [3] = true};
	cx_objstats before;

	REQUIRE(s && schema);
	REQUIRE_OK(write_fragment(s, "data/wide.parquet", schema, NULL, 500, gen_wide,
							  &info, &err), &err);
	REQUIRE(info.size > 2 * 64 * 1024);	/* not read whole with the footer */
	before = s->stats;
	REQUIRE_OK(cx_fragr_open(s, "data/wide.parquet", info.size, &r, &err), &err);
	CHECK(s->stats.gets - before.gets == 1);	/* footer in one GET */
	CHECK(s->stats.heads == before.heads);

	REQUIRE_OK(read_cost(s, r, NULL, &gets, &all_bytes, &err), &err);
	CHECK(gets == 1);			/* every chunk adjacent: one GET */
	REQUIRE_OK(read_cost(s, r, one, &gets, &bytes, &err), &err);
	CHECK(gets == 1);
	CHECK(bytes == cx_fragr_chunk(r, 0, 3)->stored_len);
	CHECK(bytes * 6 < all_bytes);
	REQUIRE_OK(read_cost(s, r, three, &gets, &bytes, &err), &err);
	CHECK(gets == 1);			/* coalesced */
	REQUIRE_OK(read_cost(s, r, gap, &gets, &bytes, &err), &err);
	CHECK(gets == 2);
	cx_fragr_close(r);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* A footer larger than the first tail read costs exactly one more GET. */
static void
gen_tiny(uint32_t i, cx_datum *v, row_scratch *sc)
{
	(void) sc;
	v[0].v.i64 = i;
	v[1].v.i64 = -(int64_t) i;
}

CX_TEST(fragment_large_footer_second_get)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragw_options o;
	cx_fragment_info info;
	cx_objstats before;
	cx_fragr   *r;
	cx_err		err;

	REQUIRE(s && schema);
	cx_schema_add(schema, "a", CX_T_INT64, 0, NULL, &err);
	cx_schema_add(schema, "b", CX_T_INT64, 0, NULL, &err);
	cx_fragw_options_default(&o);
	o.rows_per_group = 1;
	REQUIRE_OK(write_fragment(s, "data/footer.parquet", schema, &o, 2000, gen_tiny,
							  &info, &err), &err);
	CHECK(info.footer_len > 64 * 1024);
	before = s->stats;
	REQUIRE_OK(cx_fragr_open(s, "data/footer.parquet", info.size, &r, &err), &err);
	CHECK(s->stats.gets - before.gets == 2);
	CHECK(cx_fragr_num_groups(r) == 2000);
	cx_fragr_close(r);
	CHECK(verify_fragment(s, "data/footer.parquet", 0, gen_tiny, &err) == 0);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* ---------------------------------------------------------------------
 * Statistics
 * --------------------------------------------------------------------- */

static char long_a[101];		/* "a" followed by 99 'x' */
static char long_c[71];			/* 70 'c' */

static void
gen_stats(uint32_t i, cx_datum *v, row_scratch *sc)
{
	static const int32_t ints[] = {5, 0, -3, 100, 0, 7};
	static const double dbls[] = {1.5, NAN, -INFINITY, 2.0, 0, 3};
	static const float flts[] = {1, INFINITY, -2, 0, 0, 0};
	static const char *strs[] = {"b", "a", "zz", NULL, "m", "b"};

	(void) sc;
	memset(long_a, 'x', 100);
	long_a[0] = 'a';
	memset(long_c, 'c', 70);
	v[0].v.i32 = ints[i];
	v[0].isnull = i == 1 || i == 4;
	v[1].v.f64 = dbls[i];
	v[1].isnull = i >= 4;
	v[2].v.f32 = flts[i];
	v[2].isnull = i >= 3;
	if (i == 1)
		set_bytes(&v[3], long_a, 100);
	else if (i == 2)
		set_bytes(&v[3], long_c, 70);
	else
		set_bytes(&v[3], "b", 1);
	if (strs[i])
		set_bytes(&v[4], strs[i], strlen(strs[i]));
	else
		v[4].isnull = true;
	set_bytes(&v[5], "{}", 2);
}

static bool
bound_is(bool has, const uint8_t *b, uint8_t len, const void *want,
		 size_t want_len)
{
	return has && len == want_len && memcmp(b, want, want_len) == 0;
}

static bool
i32_bound(bool has, const uint8_t *b, uint8_t len, int32_t want)
{
	uint8_t		e[4];

	cx_store_u32(e, (uint32_t) want);
	return bound_is(has, b, len, e, 4);
}

static bool
f64_bound(bool has, const uint8_t *b, uint8_t len, double want)
{
	cx_datum	d = {.v.f64 = want};
	uint8_t		e[8];

	cx_fixed_encode(CX_T_FLOAT64, &d, e);
	return bound_is(has, b, len, e, 8);
}

static bool
f32_bound(bool has, const uint8_t *b, uint8_t len, float want)
{
	cx_datum	d = {.v.f32 = want};
	uint8_t		e[4];

	cx_fixed_encode(CX_T_FLOAT32, &d, e);
	return bound_is(has, b, len, e, 4);
}

static void
check_stats(const cx_colstats *st)
{
	/* int32: 5, NULL, -3, 100, NULL, 7 */
	CHECK(st[0].null_count == 2 && st[0].value_count == 4);
	CHECK(i32_bound(st[0].has_min, st[0].min, st[0].min_len, -3));
	CHECK(i32_bound(st[0].has_max, st[0].max, st[0].max_len, 100));
	/* float64 with a NaN: min ignores it, and there is no max */
	CHECK(st[1].null_count == 2 && st[1].value_count == 4);
	CHECK(f64_bound(st[1].has_min, st[1].min, st[1].min_len, -INFINITY));
	CHECK(!st[1].has_max);
	/* float32: 1, +Inf, -2 */
	CHECK(f32_bound(st[2].has_min, st[2].min, st[2].min_len, -2));
	CHECK(f32_bound(st[2].has_max, st[2].max, st[2].max_len, INFINITY));
	/* strings: min truncated to a prefix, max longer than the limit dropped */
	CHECK(bound_is(st[3].has_min, st[3].min, st[3].min_len, long_a,
				   CX_STATS_MAX_BYTES));
	CHECK(!st[3].has_max);
	CHECK(bound_is(st[4].has_min, st[4].min, st[4].min_len, "a", 1));
	CHECK(bound_is(st[4].has_max, st[4].max, st[4].max_len, "zz", 2));
	CHECK(st[4].null_count == 1);
	/* json: counts only */
	CHECK(!st[5].has_min && !st[5].has_max && st[5].value_count == 6);
}

CX_TEST(fragment_statistics_per_chunk_and_merged)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragw_options o;
	cx_fragment_info info;
	cx_fragr   *r;
	cx_err		err;
	const cx_chunk_meta *m;

	REQUIRE(s && schema);
	cx_schema_add(schema, "i", CX_T_INT32, 0, NULL, &err);
	cx_schema_add(schema, "f", CX_T_FLOAT64, 0, NULL, &err);
	cx_schema_add(schema, "g", CX_T_FLOAT32, 0, NULL, &err);
	cx_schema_add(schema, "s", CX_T_STRING, 0, NULL, &err);
	cx_schema_add(schema, "t", CX_T_STRING, 0, NULL, &err);
	cx_schema_add(schema, "j", CX_T_JSON, 0, NULL, &err);
	REQUIRE(schema->ncolumns == 6);

	/* One group: the chunk stats. */
	REQUIRE_OK(write_fragment(s, "data/st1.parquet", schema, NULL, 6, gen_stats,
							  &info, &err), &err);
	check_stats(info.stats);
	REQUIRE_OK(cx_fragr_open(s, "data/st1.parquet", info.size, &r, &err), &err);
	{
		cx_colstats st[6];

		for (int c = 0; c < 6; c++)
			st[c] = cx_fragr_chunk(r, 0, c)->stats;
		check_stats(st);
	}
	cx_fragr_close(r);
	cx_fragment_info_free(&info);

	/* Groups of two: the fragment stats are the merge. */
	cx_fragw_options_default(&o);
	o.rows_per_group = 2;
	REQUIRE_OK(write_fragment(s, "data/st2.parquet", schema, &o, 6, gen_stats,
							  &info, &err), &err);
	check_stats(info.stats);
	REQUIRE_OK(cx_fragr_open(s, "data/st2.parquet", info.size, &r, &err), &err);
	m = cx_fragr_chunk(r, 2, 0);	/* rows 4, 5: NULL, 7 */
	CHECK(m->stats.null_count == 1 && m->stats.value_count == 1);
	CHECK(i32_bound(m->stats.has_min, m->stats.min, m->stats.min_len, 7));
	cx_fragr_close(r);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

CX_TEST(colstats_truncated_max_and_merge_rules)
{
	cx_statacc	acc;
	cx_colstats st,
				empty = {0},
				merged;
	char		m100[100];

	memset(m100, 'm', sizeof(m100));
	/* A long max is later beaten by a short larger value: max is exact. */
	cx_statacc_init(&acc, CX_T_STRING);
	cx_statacc_add(&acc, (uint8_t *) m100, 100);
	cx_statacc_add(&acc, (uint8_t *) "n", 1);
	cx_statacc_finish(&acc, &st);
	CHECK(bound_is(st.has_max, st.max, st.max_len, "n", 1));
	/* A long max sharing the prefix keeps it unknown. */
	cx_statacc_init(&acc, CX_T_STRING);
	cx_statacc_add(&acc, (uint8_t *) m100, 100);
	cx_statacc_add(&acc, (uint8_t *) m100, 80);
	cx_statacc_add(&acc, (uint8_t *) "a", 1);
	cx_statacc_finish(&acc, &st);
	CHECK(!st.has_max);
	CHECK(bound_is(st.has_min, st.min, st.min_len, "a", 1));

	/* Merging with an all-NULL side keeps the bounds... */
	empty.null_count = 3;
	merged = empty;
	cx_colstats_merge(&merged, &st, CX_T_STRING);
	CHECK(merged.null_count == 3 && merged.value_count == 3);
	CHECK(merged.has_min && !merged.has_max);
	/* ...and a side without a max drops the max. */
	cx_statacc_init(&acc, CX_T_STRING);
	cx_statacc_add(&acc, (uint8_t *) "zz", 2);
	cx_statacc_finish(&acc, &merged);
	CHECK(merged.has_max);
	cx_colstats_merge(&merged, &st, CX_T_STRING);
	CHECK(!merged.has_max);
	CHECK(bound_is(merged.has_min, merged.min, merged.min_len, "a", 1));
}

/* Value i of the accumulator-merge sequences: strings around the 64-byte
 * limit that share long prefixes (NULL every 11th), or doubles with a NaN. */
static void
merge_value(cx_type t, uint32_t i, uint8_t *buf, size_t *len, bool *isnull)
{
	uint32_t	h = (i * 2654435761u) >> 16;

	*isnull = h % 11 == 0;
	if (t == CX_T_FLOAT64)
	{
		cx_datum	d = {.v.f64 = h % 17 == 3 ? NAN : (double) (h % 1000) - 500};

		cx_fixed_encode(t, &d, buf);
		*len = 8;
		return;
	}
	*len = 60 + h % 10;			/* 60..69 bytes */
	memset(buf, 'p', *len);
	buf[h % 3 == 0 ? 63 : 30] = (uint8_t) ('a' + h % 26);
}

static void
merge_add(cx_statacc *acc, cx_type t, uint32_t i)
{
	uint8_t		buf[80];
	size_t		len;
	bool		isnull;

	merge_value(t, i, buf, &len, &isnull);
	if (isnull)
		cx_statacc_add_null(acc);
	else
		cx_statacc_add(acc, buf, len);
}

/*
 * A chunk's statistics are its pages' accumulators merged: for any cut of
 * a sequence into pages, the merge finishes exactly as one accumulator fed
 * every value (prefix minimums, maximums truncated or beaten by a shorter
 * larger value, NaN, NULLs).
 */
CX_TEST(statacc_merge_is_one_pass_over_all_values)
{
	cx_type		types[] = {CX_T_STRING, CX_T_FLOAT64};
	uint8_t		longer[CX_STATS_MAX_BYTES + 1];

	/* One page's max is exactly the 64-byte prefix of the other's: the
	 * max is unknown, whichever page comes first. */
	memset(longer, 'q', sizeof(longer));
	for (int first = 0; first < 2; first++)
	{
		cx_statacc	pages[2];
		cx_colstats st;

		cx_statacc_init(&pages[0], CX_T_STRING);
		cx_statacc_init(&pages[1], CX_T_STRING);
		cx_statacc_add(&pages[0], longer, CX_STATS_MAX_BYTES);
		cx_statacc_add(&pages[1], longer, sizeof(longer));
		cx_statacc_merge(&pages[first], &pages[1 - first]);
		cx_statacc_finish(&pages[first], &st);
		CHECK(!st.has_max && st.has_min && st.value_count == 2);
	}

	for (int ti = 0; ti < 2; ti++)
		for (uint32_t start = 0; start < 300; start += 7)
			for (uint32_t page = 1; page <= 40; page += 13)
			{
				cx_type		t = types[ti];
				cx_statacc	whole;
				cx_statacc	merged;
				cx_colstats a;
				cx_colstats b;

				cx_statacc_init(&whole, t);
				cx_statacc_init(&merged, t);
				for (uint32_t p0 = start; p0 < start + 120; p0 += page)
				{
					cx_statacc	one;

					cx_statacc_init(&one, t);
					for (uint32_t i = p0; i < p0 + page && i < start + 120; i++)
					{
						merge_add(&whole, t, i);
						merge_add(&one, t, i);
					}
					cx_statacc_merge(&merged, &one);
				}
				cx_statacc_finish(&whole, &a);
				cx_statacc_finish(&merged, &b);
				if (!mw_colstats_equal(&a, &b))
				{
					CHECK(mw_colstats_equal(&a, &b));
					return;
				}
			}
}

CX_TEST(colstats_encode_decode)
{
	cx_colstats st = {.null_count = 5, .value_count = 7, .has_min = true,
	.min_len = 3, .min = "abc"};
	cx_colstats back;
	cx_buf		b;
	cx_rd		r;

	cx_buf_init(&b);
	cx_colstats_encode(&st, &b);
	cx_rd_init(&r, b.data, b.len);
	cx_colstats_decode(&r, &back);
	CHECK(cx_rd_ok(&r) && cx_rd_left(&r) == 0);
	CHECK(memcmp(&st, &back, sizeof(st)) == 0);
	/* Every truncation fails cleanly. */
	for (size_t n = 0; n < b.len; n++)
	{
		cx_rd_init(&r, b.data, n);
		cx_colstats_decode(&r, &back);
		CHECK(!cx_rd_ok(&r));
	}
	/* A bound longer than CX_STATS_MAX_BYTES is refused. */
	b.data[17] = CX_STATS_MAX_BYTES + 1;
	cx_rd_init(&r, b.data, b.len);
	cx_colstats_decode(&r, &back);
	CHECK(!cx_rd_ok(&r));
	cx_buf_free(&b);
}

/* ---------------------------------------------------------------------
 * Corruption and truncation
 * --------------------------------------------------------------------- */

static void
gen_small(uint32_t i, cx_datum *v, row_scratch *sc)
{
	v[0].v.i64 = (int64_t) i * 3;
	snprintf(sc->str, sizeof(sc->str), "value %u", i);
	set_bytes(&v[1], sc->str, strlen(sc->str));
	v[1].isnull = i % 4 == 0;
	gen_list(i, &v[2], sc->sitems, true, sc->sbuf);
}

static cx_schema *
small_schema(void)
{
	cx_schema  *schema = cx_schema_new();
	cx_err		err;

	cx_schema_add(schema, "id", CX_T_INT64, 0, NULL, &err);
	cx_schema_add(schema, "s", CX_T_STRING, 0, NULL, &err);
	cx_schema_add(schema, "l", CX_T_LIST, CX_T_STRING, NULL, &err);
	return schema;
}

/* A fragment that fits in the first tail read costs one GET in all. */
CX_TEST(fragment_small_fragment_costs_one_get)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = small_schema();
	cx_fragment_info info;
	cx_objstats before;
	cx_err		err;
	cx_fragw_options o;

	REQUIRE(s && schema);
	cx_fragw_options_default(&o);
	o.rows_per_group = 16;
	REQUIRE_OK(write_fragment(s, "data/one.parquet", schema, &o, 40, gen_small,
							  &info, &err), &err);
	before = s->stats;
	CHECK(verify_fragment(s, "data/one.parquet", info.size, gen_small, &err) == 0);
	CHECK(s->stats.gets - before.gets == 1);
	CHECK(s->stats.bytes_read - before.bytes_read == info.size);
	before = s->stats;
	CHECK(verify_entry(s, &info, gen_small, &err) == 0);
	CHECK(s->stats.gets - before.gets == 1);
	CHECK(s->stats.bytes_read - before.bytes_read == info.size);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* Writes the small fragment and returns its bytes. */
static bool
small_fragment_bytes(cx_objstore *s, int level, cx_buf *bytes,
					 cx_fragment_info *info)
{
	cx_schema  *schema = small_schema();
	cx_fragw_options o;
	cx_err		err;
	char		key[64];
	bool		ok;

	cx_fragw_options_default(&o);
	o.rows_per_group = 16;
	o.compression_level = level;
	ok = cx_fragment_new_key(key, sizeof(key), &err) == CX_OK &&
		write_fragment(s, key, schema, &o, 40, gen_small, info, &err) == CX_OK &&
		cx_obj_get(s, key, bytes, &err) == CX_OK;
	if (!ok)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	cx_schema_free(schema);
	return ok;
}

/* Stores bytes under key and reads the whole fragment back, opened from
 * entry fi (its path replaced by key) or, when fi is NULL, as tools open it
 * with the given size; the code. */
static cx_code
try_read(cx_objstore *s, const char *key, const uint8_t *data, size_t len,
		 uint64_t size, const cx_fragment_info *fi, cx_err *err)
{
	cx_fragment_info entry;
	long		bad;

	if (cx_obj_put(s, key, data, len, CX_PUT_OVERWRITE, err) != CX_OK)
		return CX_ERR_IO;
	if (fi != NULL)
	{
		entry = *fi;
		entry.path = (char *) key;
		bad = verify_entry(s, &entry, gen_small, err);
	}
	else
		bad = verify_fragment(s, key, size, gen_small, err);
	if (bad < 0)
		return err->code;
	return bad == 0 ? CX_OK : CX_ERR_INVALID;	/* wrong data: never OK */
}

/*
 * Marks in unchecked[] the bytes no checksum covers and the reader does not
 * need: page headers (their CRC covers the page, not the header; the fields
 * that matter are checked against the page and the footer, statistics are
 * not) and the offset indexes (read by point lookups and inspect verify).
 */
static void
mark_unchecked(const uint8_t *data, size_t len, const cx_fragment_info *fi,
			   bool *unchecked)
{
	cx_objstore *s = open_store();
	cx_fragr   *r;
	cx_err		err;

	REQUIRE(cx_obj_put(s, "data/marks.parquet", data, len, CX_PUT_OVERWRITE,
					   &err) == CX_OK);
	REQUIRE(cx_fragr_open(s, "data/marks.parquet", 0, &r, &err) == CX_OK);
	for (uint32_t g = 0; g < cx_fragr_num_groups(r); g++)
		for (uint32_t c = 0; c < cx_fragr_schema(r)->ncolumns; c++)
		{
			const cx_chunk_meta *m = cx_fragr_chunk(r, g, c);
			uint64_t	pos = m->offset;

			memset(unchecked + m->index_offset, 1, m->index_len);
			while (pos < m->offset + m->stored_len)
			{
				cx_pq_page_header h;
				size_t		used;

				REQUIRE(cx_pq_page_header_decode(data + pos, len - pos, &h, &used,
												 "page", &err) == CX_OK);
				memset(unchecked + pos, 1, used);
				pos += used + (size_t) h.compressed_page_size;
				cx_pq_page_header_free(&h);
			}
		}
	CHECK(fi->footer_offset + fi->footer_len == len);
	cx_fragr_close(r);
	cx_obj_close(s);
}

/* Every flipped byte of a fragment opened from its manifest entry is caught
 * (or, in the few bytes no reader needs, harmless): never wrong data. */
CX_TEST(fragment_every_flipped_byte_is_detected)
{
	cx_objstore *s = open_store();
	cx_fragment_info info;
	cx_buf		bytes;
	cx_err		err;
	bool	   *unchecked;
	size_t		missed = 0,
				wrong = 0,
				unnamed = 0,
				caught = 0;

	REQUIRE(s);
	cx_buf_init(&bytes);
	REQUIRE(small_fragment_bytes(s, 3, &bytes, &info));
	unchecked = calloc(bytes.len, sizeof(bool));
	REQUIRE(unchecked);
	mark_unchecked(bytes.data, bytes.len, &info, unchecked);
	CHECK(try_read(s, "data/flip.parquet", bytes.data, bytes.len, 0, &info,
				   &err) == CX_OK);
	for (size_t i = 0; i < bytes.len; i++)
	{
		cx_code		rc;

		bytes.data[i] ^= 0x5A;
		rc = try_read(s, "data/flip.parquet", bytes.data, bytes.len, 0, &info,
					  &err);
		if (rc == CX_ERR_INVALID)
			wrong++;
		else if (rc != CX_ERR_CORRUPT && !unchecked[i])
			missed++;
		else if (rc == CX_ERR_CORRUPT && strstr(err.msg, "data/flip.parquet") == NULL)
			unnamed++;
		caught += rc == CX_ERR_CORRUPT;
		bytes.data[i] ^= 0x5A;
	}
	CHECK(wrong == 0);
	CHECK(missed == 0);
	CHECK(unnamed == 0);
	CHECK(caught > bytes.len / 2);
	free(unchecked);
	cx_buf_free(&bytes);
	cx_fragment_info_free(&info);
	cx_obj_close(s);
}

CX_TEST(fragment_chunk_corruption_names_group_and_column)
{
	cx_objstore *s = open_store();
	cx_fragment_info info;
	cx_buf		bytes;
	cx_err		err;
	cx_fragr   *r;
	cx_rowgroup *rg;
	const cx_chunk_meta *m;
	bool		want[3] = {false, true, false};

	REQUIRE(s);
	cx_buf_init(&bytes);
	REQUIRE(small_fragment_bytes(s, 3, &bytes, &info));
	REQUIRE_OK(cx_obj_put(s, "data/chunk.parquet", bytes.data, bytes.len,
						  CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_fragr_open(s, "data/chunk.parquet", 0, &r, &err), &err);
	m = cx_fragr_chunk(r, 1, 1);
	bytes.data[m->offset + m->stored_len / 2] ^= 1;
	cx_fragr_close(r);
	REQUIRE_OK(cx_obj_put(s, "data/chunk.parquet", bytes.data, bytes.len,
						  CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_fragr_open(s, "data/chunk.parquet", 0, &r, &err), &err);
	/* Other groups and columns still read. */
	REQUIRE_OK(cx_fragr_read_group(r, 0, NULL, &rg, &err), &err);
	cx_rowgroup_free(rg);
	CHECK_CODE(cx_fragr_read_group(r, 1, want, &rg, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "data/chunk.parquet") != NULL);
	CHECK(strstr(err.msg, "row group 1, column 1 (\"s\")") != NULL);
	CHECK(strstr(err.msg, "checksum") != NULL);
	cx_fragr_close(r);
	cx_buf_free(&bytes);
	cx_fragment_info_free(&info);
	cx_obj_close(s);
}

CX_TEST(fragment_truncated_at_every_length)
{
	cx_objstore *s = open_store();
	cx_fragment_info info;
	cx_buf		bytes;
	cx_err		err;
	size_t		missed = 0;

	REQUIRE(s);
	cx_buf_init(&bytes);
	REQUIRE(small_fragment_bytes(s, 3, &bytes, &info));
	for (size_t n = 0; n < bytes.len; n++)
	{
		/* The store's size, and the size a manifest would claim. */
		if (try_read(s, "data/trunc.parquet", bytes.data, n, 0, NULL, &err) != CX_ERR_CORRUPT)
			missed++;
		if (try_read(s, "data/trunc.parquet", bytes.data, n, bytes.len, NULL, &err) != CX_ERR_CORRUPT)
			missed++;
		if (try_read(s, "data/trunc.parquet", bytes.data, n, 0, &info, &err) != CX_ERR_CORRUPT)
			missed++;
	}
	CHECK(missed == 0);
	/* A manifest size smaller than the object misses the trailer. */
	CHECK(try_read(s, "data/trunc.parquet", bytes.data, bytes.len, bytes.len - 1,
				   NULL, &err) == CX_ERR_CORRUPT);
	cx_buf_free(&bytes);
	cx_fragment_info_free(&info);
	cx_obj_close(s);
}

/* Row i of the page-statistics fragment: an int64 in no order, and a short
 * string in no order, NULL every 13th row. */
static void
gen_page_stats(uint32_t i, cx_datum *v, row_scratch *sc)
{
	v[0].v.i64 = (int64_t) ((i * 7919u) % 10007u) - 5000;
	if (i % 13 == 0)
	{
		v[1].isnull = true;
		return;
	}
	snprintf(sc->str, sizeof(sc->str), "%05u-page-statistics",
			 (i * 104729u) % 99991u);
	set_bytes(&v[1], sc->str, strlen(sc->str));
}

/* The statistics of rows [r0, r0 + n) of column c, as a page header of
 * leaf would carry them, equal got's. */
static bool
page_stats_match(const cx_pq_leaf *leaf, uint32_t c, uint32_t r0, uint32_t n,
				 const cx_pq_stats *got)
{
	cx_statacc	acc;
	cx_colstats st;
	cx_pq_stats want;
	uint8_t		minb[CX_STATS_MAX_BYTES];
	uint8_t		maxb[CX_STATS_MAX_BYTES];
	row_scratch sc = {0};

	cx_statacc_init(&acc, leaf->type);
	for (uint32_t i = r0; i < r0 + n; i++)
	{
		cx_datum	v[2] = {{0}};
		uint8_t		fixed[16];
		const uint8_t *p;
		size_t		len;

		gen_page_stats(i, v, &sc);
		if (!cx_datum_key_bytes(leaf->type, &v[c], fixed, &p, &len))
			cx_statacc_add_null(&acc);
		else
			cx_statacc_add(&acc, p, len);
	}
	cx_statacc_finish(&acc, &st);
	if (!cx_pq_stats_from_engine(leaf, &st, minb, maxb, &want))
		return false;
	return got->null_count == want.null_count &&
		got->has_min == want.has_min && got->has_max == want.has_max &&
		got->min_value.len == want.min_value.len &&
		got->max_value.len == want.max_value.len &&
		memcmp(got->min_value.ptr, want.min_value.ptr, want.min_value.len) == 0 &&
		memcmp(got->max_value.ptr, want.max_value.ptr, want.max_value.len) == 0;
}

/*
 * Every data page carries the statistics of its own values, whether it is
 * its column's whole chunk (the int64 column) or one of several pages of it
 * (the string column); the chunk's are its pages' merged.
 */
CX_TEST(fragment_page_statistics_are_the_pages_own)
{
	enum
	{
		NROWS = 4000
	};
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragment_info info;
	cx_fragw_options o;
	cx_buf		bytes;
	cx_fragr   *r;
	cx_err		err;
	uint32_t	pages[2] = {0, 0};

	REQUIRE(s && schema);
	cx_buf_init(&bytes);
	REQUIRE_OK(cx_schema_add(schema, "n", CX_T_INT64, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(schema, "s", CX_T_STRING, 0, NULL, &err), &err);
	cx_fragw_options_default(&o);
	REQUIRE_OK(write_fragment(s, "data/pagestats.parquet", schema, &o, NROWS,
							  gen_page_stats, &info, &err), &err);
	REQUIRE_OK(cx_obj_get(s, "data/pagestats.parquet", &bytes, &err), &err);
	REQUIRE_OK(cx_fragr_open(s, "data/pagestats.parquet", 0, &r, &err), &err);
	REQUIRE(cx_fragr_num_groups(r) == 1);
	for (uint32_t c = 0; c < 2; c++)
	{
		const cx_chunk_meta *m = cx_fragr_chunk(r, 0, c);
		uint64_t	pos = m->offset;
		uint32_t	row = 0;
		cx_pq_leaf	leaf;

		cx_pq_leaf_init(&schema->columns[c], &leaf);
		while (pos < m->offset + m->stored_len)
		{
			cx_pq_page_header h;
			size_t		used;

			REQUIRE_OK(cx_pq_page_header_decode(bytes.data + pos,
												bytes.len - pos, &h, &used,
												"page", &err), &err);
			CHECK(h.has_data_page && h.data_page.has_statistics);
			CHECK(page_stats_match(&leaf, c, row,
								   (uint32_t) h.data_page.num_values,
								   &h.data_page.statistics));
			row += (uint32_t) h.data_page.num_values;
			pos += used + (size_t) h.compressed_page_size;
			pages[c]++;
			cx_pq_page_header_free(&h);
		}
		CHECK(row == NROWS);
	}
	CHECK(pages[0] == 1);
	CHECK(pages[1] > 1);
	cx_fragr_close(r);
	cx_buf_free(&bytes);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* ---------------------------------------------------------------------
 * Writer behaviour
 * --------------------------------------------------------------------- */

CX_TEST(fragment_compression_levels)
{
	cx_objstore *s = open_store();
	cx_fragment_info fast,
				best;
	cx_buf		b1,
				b2;
	cx_err		err;

	REQUIRE(s);
	cx_buf_init(&b1);
	cx_buf_init(&b2);
	REQUIRE(small_fragment_bytes(s, 1, &b1, &fast));
	REQUIRE(small_fragment_bytes(s, 19, &b2, &best));
	CHECK(verify_fragment(s, fast.path, fast.size, gen_small, &err) == 0);
	CHECK(verify_fragment(s, best.path, best.size, gen_small, &err) == 0);
	CHECK(best.size <= fast.size);
	cx_buf_free(&b1);
	cx_buf_free(&b2);
	cx_fragment_info_free(&fast);
	cx_fragment_info_free(&best);
	cx_obj_close(s);
}

CX_TEST(fragment_writer_memory_is_bounded)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = small_schema();
	cx_fragw_options o;
	cx_fragw   *w;
	cx_fragment_info info;
	cx_datum	vals[3];
	row_scratch sc = {0};
	cx_err		err;
	uint64_t	peak = 0;
	cx_fragr   *r;

	REQUIRE(s && schema);
	cx_fragw_options_default(&o);
	o.rows_per_group = 1000;
	REQUIRE_OK(cx_fragw_open(s, "data/mem.parquet", schema, &o, &w, &err), &err);
	for (uint32_t i = 0; i < 100000; i++)
	{
		uint64_t	held;

		memset(vals, 0, sizeof(vals));
		gen_small(i, vals, &sc);
		REQUIRE_OK(cx_fragw_append(w, vals, &err), &err);
		held = cx_fragw_buffered_bytes(w);
		peak = held > peak ? held : peak;
	}
	CHECK(cx_fragw_rows(w) == 100000);
	/* A 1000-row group of this schema is ~70 KB raw. */
	CHECK(peak < 128 * 1024);
	REQUIRE_OK(cx_fragw_finish(w, &info, &err), &err);
	REQUIRE_OK(cx_fragr_open(s, "data/mem.parquet", info.size, &r, &err), &err);
	CHECK(cx_fragr_num_groups(r) == 100);
	cx_fragr_close(r);
	CHECK(verify_fragment(s, "data/mem.parquet", info.size, gen_small, &err) == 0);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

CX_TEST(fragment_zero_rows_is_refused_and_not_published)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = small_schema();
	cx_fragw   *w;
	cx_fragment_info info;
	cx_err		err;
	uint64_t	size;

	REQUIRE(s && schema);
	REQUIRE_OK(cx_fragw_open(s, "data/empty.parquet", schema, NULL, &w, &err), &err);
	CHECK_CODE(cx_fragw_finish(w, &info, &err), CX_ERR_INVALID);
	CHECK(info.path == NULL && info.stats == NULL);
	CHECK_CODE(cx_obj_head(s, "data/empty.parquet", &size, &err), CX_ERR_NOT_FOUND);
	cx_schema_free(schema);
	cx_obj_close(s);
}

CX_TEST(fragment_writer_refuses_bad_input_and_existing_key)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = small_schema();
	cx_fragw_options o;
	cx_fragw   *w;
	cx_fragment_info info;
	cx_datum	vals[3];
	row_scratch sc = {0};
	cx_err		err;

	REQUIRE(s && schema);
	cx_fragw_options_default(&o);
	o.compression_level = 99;
	CHECK_CODE(cx_fragw_open(s, "data/x.parquet", schema, &o, &w, &err), CX_ERR_INVALID);
	cx_fragw_options_default(&o);
	o.rows_per_group = 0;
	CHECK_CODE(cx_fragw_open(s, "data/x.parquet", schema, &o, &w, &err), CX_ERR_INVALID);

	REQUIRE_OK(cx_fragw_open(s, "data/x.parquet", schema, NULL, &w, &err), &err);
	memset(vals, 0, sizeof(vals));
	gen_small(1, vals, &sc);
	vals[1].v.bytes.ptr = NULL;	/* length without bytes */
	CHECK_CODE(cx_fragw_append(w, vals, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "column \"s\"") != NULL);
	CHECK(cx_fragw_rows(w) == 0);
	/* A length no chunk can hold is refused before a byte is read. */
	gen_small(1, vals, &sc);
	vals[1].v.bytes.len = SIZE_MAX;
	CHECK_CODE(cx_fragw_append(w, vals, &err), CX_ERR_LIMIT);
	gen_small(2, vals, &sc);
	((cx_datum *) vals[2].v.list.items)[0].v.bytes.len = SIZE_MAX / 2;
	CHECK_CODE(cx_fragw_append(w, vals, &err), CX_ERR_LIMIT);
	CHECK(strstr(err.msg, "list element 0") != NULL);
	vals[2].v.list.items = NULL;
	CHECK_CODE(cx_fragw_append(w, vals, &err), CX_ERR_INVALID);
	CHECK(cx_fragw_rows(w) == 0);
	gen_small(1, vals, &sc);	/* the writer is still usable */
	REQUIRE_OK(cx_fragw_append(w, vals, &err), &err);
	REQUIRE_OK(cx_fragw_finish(w, &info, &err), &err);
	cx_fragment_info_free(&info);

	/* Fragments are put-if-absent: a second writer of the key, with other
	 * rows, loses (the same bytes would be taken for its own put). */
	if (cx_fragw_open(s, "data/x.parquet", schema, NULL, &w, &err) == CX_OK)
	{
		gen_small(2, vals, &sc);
		REQUIRE_OK(cx_fragw_append(w, vals, &err), &err);
		CHECK_CODE(cx_fragw_finish(w, &info, &err), CX_ERR_EXISTS);
	}
	else
		CHECK(err.code == CX_ERR_EXISTS);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* ---------------------------------------------------------------------
 * Parquet specifics: decimals, extreme dates, long lists, footers
 * --------------------------------------------------------------------- */

/* Decodes the FileMetaData of the fragment under key into m. */
static bool
file_meta(cx_objstore *s, const char *key, cx_pq_file_meta *m)
{
	cx_buf		b;
	cx_err		err;
	bool		ok;

	cx_buf_init(&b);
	ok = cx_obj_get(s, key, &b, &err) == CX_OK && b.len > 12;
	ok = ok && cx_pq_file_meta_decode(b.data + b.len - 8 - cx_load_u32(b.data + b.len - 8),
									  cx_load_u32(b.data + b.len - 8), m, key,
									  &err) == CX_OK;
	cx_buf_free(&b);
	return ok;
}

static const struct
{
	uint8_t		precision;
	uint8_t		scale;
	cx_pq_type	physical;
	const char *values[4];		/* canonical text, as PostgreSQL sends it */
}			decimals[] = {
	{5, 2, CX_PQ_INT32, {"999.99", "-999.99", "0.00", "-0.05"}},
	{1, 0, CX_PQ_INT32, {"9", "-9", "0", "3"}},
	{18, 0, CX_PQ_INT64, {"999999999999999999", "-999999999999999999", "0", "42"}},
	{38, 10, CX_PQ_FIXED_LEN_BYTE_ARRAY,
	{"9999999999999999999999999999.9999999999", "-0.0000000001", "0.0000000000", "-1234.5000000000"}},
	{20, 20, CX_PQ_FIXED_LEN_BYTE_ARRAY,
	{"0.99999999999999999999", "-0.00000000000000000001", "0.00000000000000000000", "-0.50000000000000000000"}},
};

#define NDECIMALS (sizeof(decimals) / sizeof(decimals[0]))

static cx_schema *
decimal_schema(void)
{
	cx_schema  *s = numbered_schema(NDECIMALS, CX_T_NUMERIC);
	cx_err		err;

	for (size_t c = 0; c < NDECIMALS; c++)
	{
		s->columns[c].precision = decimals[c].precision;
		s->columns[c].scale = decimals[c].scale;
	}
	cx_schema_add(s, "text", CX_T_NUMERIC, 0, NULL, &err);	/* no typmod */
	return s;
}

static void
gen_decimal(uint32_t i, cx_datum *v, row_scratch *sc)
{
	(void) sc;
	for (size_t c = 0; c < NDECIMALS; c++)
	{
		const char *t = decimals[c].values[i % 4];

		set_bytes(&v[c], t, strlen(t));
		v[c].isnull = (i + c) % 5 == 4;
	}
	set_bytes(&v[NDECIMALS], "NaN", 3);
}

CX_TEST(fragment_decimal_shapes_round_trip)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = decimal_schema();
	cx_fragment_info info;
	cx_pq_file_meta m;
	cx_err		err;

	REQUIRE(s && schema);
	REQUIRE_OK(write_fragment(s, "data/dec.parquet", schema, NULL, 20,
							  gen_decimal, &info, &err), &err);
	CHECK(verify_entry(s, &info, gen_decimal, &err) == 0);
	REQUIRE(file_meta(s, "data/dec.parquet", &m));
	for (size_t c = 0; c < NDECIMALS; c++)
	{
		const cx_pq_schema_element *el = &m.schema[1 + c];

		CHECK(el->type == decimals[c].physical);
		CHECK(el->logical.kind == CX_PQ_LT_DECIMAL &&
			  el->logical.precision == decimals[c].precision &&
			  el->logical.scale == decimals[c].scale);
	}
	CHECK(m.schema[4].type_length == 16 && m.schema[5].type_length == 9);
	CHECK(m.schema[1 + NDECIMALS].logical.kind == CX_PQ_LT_STRING);
	cx_pq_file_meta_free(&m);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* Input with fewer fraction digits reads back with exactly `scale`; what a
 * DECIMAL cannot hold is refused before it is buffered. */
CX_TEST(fragment_decimal_refuses_what_it_cannot_store)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	static const char *const bad[] = {"NaN", "1000.00", "1.234", "", "-", "1e5",
	"12a", "Infinity"};
	cx_fragw   *w;
	cx_fragment_info info;
	cx_fragr   *r;
	cx_rowgroup *g;
	cx_datum	v;
	cx_err		err;

	REQUIRE(s && schema);
	cx_schema_add(schema, "n", CX_T_NUMERIC, 0, NULL, &err);
	schema->columns[0].precision = 5;
	schema->columns[0].scale = 2;
	REQUIRE_OK(cx_fragw_open(s, "data/decbad.parquet", schema, NULL, &w, &err), &err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		set_bytes(&v, bad[i], strlen(bad[i]));
		CHECK_CODE(cx_fragw_append(w, &v, &err), CX_ERR_INVALID);
		CHECK(strstr(err.msg, "column \"n\"") && strstr(err.msg, "numeric(5,2)"));
	}
	CHECK(cx_fragw_rows(w) == 0);
	set_bytes(&v, "-7.5", 4);
	REQUIRE_OK(cx_fragw_append(w, &v, &err), &err);
	REQUIRE_OK(cx_fragw_finish(w, &info, &err), &err);
	REQUIRE_OK(cx_fragr_open_entry(s, &info, &r, &err), &err);
	REQUIRE_OK(cx_fragr_read_group(r, 0, NULL, &g, &err), &err);
	cx_colvec_get(cx_rowgroup_column(g, 0), 0, &v);
	CHECK(v.v.bytes.len == 5 && memcmp(v.v.bytes.ptr, "-7.50", 5) == 0);
	cx_rowgroup_free(g);
	cx_fragr_close(r);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* Engine dates count days from 2000, timestamps microseconds from 2000;
 * Parquet's count from 1970; the infinities are the extreme values. */
static const int32_t dates[] = {INT32_MIN, INT32_MAX, INT32_MIN + 1,
INT32_MAX - CX_PQ_UNIX_DAYS_OFFSET - 1, 0, -10957};
static const int64_t stamps[] = {INT64_MIN, INT64_MAX, INT64_MIN + 1,
INT64_MAX - CX_PQ_UNIX_USEC_OFFSET - 1, 0, -CX_PQ_UNIX_USEC_OFFSET};

static void
gen_extreme(uint32_t i, cx_datum *v, row_scratch *sc)
{
	(void) sc;
	v[0].v.i32 = dates[i % 6];
	v[1].v.i64 = stamps[i % 6];
	v[2].v.i64 = stamps[(i + 1) % 6];
	v[3].v.i64 = stamps[(i + 2) % 6];
}

CX_TEST(fragment_extreme_dates_and_timestamps)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragment_info info;
	cx_pq_file_meta m;
	cx_fragw   *w;
	cx_datum	v[4];
	cx_err		err;

	REQUIRE(s && schema);
	cx_schema_add(schema, "d", CX_T_DATE, 0, NULL, &err);
	cx_schema_add(schema, "ts", CX_T_TIMESTAMP, 0, NULL, &err);
	cx_schema_add(schema, "tz", CX_T_TIMESTAMPTZ, 0, NULL, &err);
	cx_schema_add(schema, "t", CX_T_TIME, 0, NULL, &err);
	REQUIRE_OK(write_fragment(s, "data/ext.parquet", schema, NULL, 12,
							  gen_extreme, &info, &err), &err);
	CHECK(verify_entry(s, &info, gen_extreme, &err) == 0);

	/* The footer's statistics are in the Unix domain; the infinities are
	 * the bounds, -infinity stored as -max (test_pq_infinity.c). */
	REQUIRE(file_meta(s, "data/ext.parquet", &m));
	{
		const cx_pq_stats *d = &m.row_groups[0].columns[0].meta.statistics;

		CHECK(d->has_min && (int32_t) cx_load_u32(d->min_value.ptr) == -INT32_MAX);
		CHECK(d->has_max && (int32_t) cx_load_u32(d->max_value.ptr) == INT32_MAX);
		CHECK(m.schema[2].logical.kind == CX_PQ_LT_TIMESTAMP &&
			  !m.schema[2].logical.adjusted_to_utc && m.schema[3].logical.adjusted_to_utc);
	}
	cx_pq_file_meta_free(&m);
	cx_fragment_info_free(&info);

	/* One day (microsecond) more and the Unix form would be the infinity. */
	REQUIRE_OK(cx_fragw_open(s, "data/ext2.parquet", schema, NULL, &w, &err), &err);
	memset(v, 0, sizeof(v));
	v[0].v.i32 = INT32_MAX - CX_PQ_UNIX_DAYS_OFFSET;
	CHECK_CODE(cx_fragw_append(w, v, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "column \"d\"") != NULL);
	v[0].v.i32 = 0;
	v[2].v.i64 = INT64_MAX - CX_PQ_UNIX_USEC_OFFSET;
	CHECK_CODE(cx_fragw_append(w, v, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "column \"tz\"") != NULL);
	CHECK(cx_fragw_rows(w) == 0);
	cx_fragw_abort(w);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* Lists of up to 3000 elements, with NULL elements, empty and NULL lists:
 * chunks of many pages, each starting a row. */
static void
gen_long_lists(uint32_t i, cx_datum *v, row_scratch *sc)
{
	static cx_datum items[3000];

	(void) sc;
	v[0].v.i64 = i;
	for (uint32_t k = 0; k < 3000; k++)
	{
		items[k].isnull = (k + i) % 7 == 0;
		items[k].v.i64 = (int64_t) k * i;
	}
	v[1].isnull = i % 10 == 3;
	v[1].v.list.items = items;
	v[1].v.list.n = i % 10 == 5 ? 0 : (i * 37) % 3000;
}

CX_TEST(fragment_long_lists_span_many_pages)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragment_info info;
	cx_fragr   *r;
	cx_page_info *pages;
	uint32_t	npages;
	cx_err		err;

	REQUIRE(s && schema);
	cx_schema_add(schema, "id", CX_T_INT64, 0, NULL, &err);
	cx_schema_add(schema, "l", CX_T_LIST, CX_T_INT64, NULL, &err);
	REQUIRE_OK(write_fragment(s, "data/lists.parquet", schema, NULL, 400,
							  gen_long_lists, &info, &err), &err);
	CHECK(verify_entry(s, &info, gen_long_lists, &err) == 0);
	REQUIRE_OK(cx_fragr_open_entry(s, &info, &r, &err), &err);
	REQUIRE_OK(cx_fragr_chunk_pages(r, 0, 1, &pages, &npages, &err), &err);
	CHECK(npages > 10);
	for (uint32_t k = 1; k < npages; k++)
		CHECK(pages[k].first_row > pages[k - 1].first_row &&
			  pages[k].crc_ok && pages[k].raw_len < 2 * 64 * 1024);
	free(pages);
	REQUIRE_OK(cx_fragr_chunk_pages(r, 0, 0, &pages, &npages, &err), &err);
	CHECK(npages == 1);			/* 400 int64s fit one page */
	free(pages);
	cx_fragr_close(r);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* Rows read through the offset index match the same rows of the whole
 * group, and cost only the pages that hold them. */
CX_TEST(fragment_read_rows_fetches_only_their_pages)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragment_info info;
	cx_fragr   *r;
	cx_rowgroup *all;
	cx_err		err;
	static const uint32_t spans[][2] = {{0, 1}, {399, 1}, {123, 7}, {10, 300},
	{0, 399}, {1, 399}};
	uint64_t	whole_bytes;

	REQUIRE(s && schema);
	cx_schema_add(schema, "id", CX_T_INT64, 0, NULL, &err);
	cx_schema_add(schema, "l", CX_T_LIST, CX_T_INT64, NULL, &err);
	REQUIRE_OK(write_fragment(s, "data/rows.parquet", schema, NULL, 400,
							  gen_long_lists, &info, &err), &err);
	REQUIRE_OK(cx_fragr_open_entry(s, &info, &r, &err), &err);
	REQUIRE_OK(cx_fragr_read_group(r, 0, NULL, &all, &err), &err);
	whole_bytes = cx_fragr_chunk(r, 0, 1)->stored_len;
	for (size_t t = 0; t < sizeof(spans) / sizeof(spans[0]); t++)
	{
		uint32_t	from = spans[t][0];
		uint32_t	n = spans[t][1];
		cx_objstats before = s->stats;
		cx_rowgroup *g;
		size_t		bad = 0;

		REQUIRE_OK(cx_fragr_read_rows(r, 0, from, n, NULL, &g, &err), &err);
		REQUIRE(cx_rowgroup_rows(g) == n);
		for (uint32_t i = 0; i < n; i++)
			for (uint32_t c = 0; c < 2; c++)
			{
				cx_datum	want;
				cx_datum	got;
				cx_datum	items[3000];

				cx_colvec_get(cx_rowgroup_column(all, c), from + i, &want);
				cx_colvec_get(cx_rowgroup_column(g, c), i, &got);
				if (c == 1 && !want.isnull)
				{
					/* the expected list, back in its writing form */
					for (uint32_t k = 0; k < want.v.slice.n; k++)
						cx_colvec_get(want.v.slice.elems, want.v.slice.start + k,
									  &items[k]);
					want.v.list.items = items;
					want.v.list.n = want.v.slice.n;
				}
				bad += !datum_matches(schema->columns[c].type,
									  schema->columns[c].elem_type, &want, &got);
			}
		CHECK(bad == 0);
		/* one row: the offset indexes (first time) and a page per column */
		if (n == 1)
			CHECK(s->stats.bytes_read - before.bytes_read < whole_bytes / 4);
		cx_rowgroup_free(g);
	}
	cx_rowgroup_free(all);
	CHECK_CODE(cx_fragr_read_rows(r, 0, 399, 2, NULL, &all, &err), CX_ERR_INVALID);
	cx_fragr_close(r);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* The footer checksum of the manifest entry catches a changed footer that
 * still decodes; an entry that does not describe the footer is refused. */
CX_TEST(fragment_footer_checksum_mismatch)
{
	cx_objstore *s = open_store();
	cx_fragment_info info;
	cx_fragment_info bad;
	cx_buf		bytes;
	cx_fragr   *r;
	cx_err		err;

	REQUIRE(s);
	cx_buf_init(&bytes);
	REQUIRE(small_fragment_bytes(s, 3, &bytes, &info));
	bad = info;
	bad.footer_crc ^= 1;
	CHECK_CODE(cx_fragr_open_entry(s, &bad, &r, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, info.path) && strstr(err.msg, "footer checksum mismatch"));
	bad = info;
	bad.footer_offset--;
	bad.footer_len++;
	CHECK_CODE(cx_fragr_open_entry(s, &bad, &r, &err), CX_ERR_CORRUPT);
	bad = info;
	bad.footer_len--;
	CHECK_CODE(cx_fragr_open_entry(s, &bad, &r, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, info.path) != NULL);
	REQUIRE_OK(cx_fragr_open_entry(s, &info, &r, &err), &err);
	cx_fragr_close(r);
	cx_buf_free(&bytes);
	cx_fragment_info_free(&info);
	cx_obj_close(s);
}

/* Whatever the metadata bytes between "PAR1" and the trailer, opening is
 * CX_ERR_CORRUPT naming the object, never a crash. */
CX_TEST(fragment_garbage_footers_are_corrupt)
{
	cx_objstore *s = open_store();
	cx_buf		b;
	cx_err		err;
	uint32_t	x = 7;
	size_t		wrong = 0;

	REQUIRE(s);
	cx_buf_init(&b);
	for (int round = 0; round < 300; round++)
	{
		uint32_t	n = 1 + (uint32_t) round * 7 % 400;
		cx_fragr   *r;

		cx_buf_reset(&b);
		cx_buf_put(&b, CX_PARQUET_MAGIC, 4);
		for (uint32_t k = 0; k < n; k++)
			cx_buf_put_u8(&b, (uint8_t) ((x = x * 1103515245u + 12345u) >> 16));
		/* some rounds start like a FileMetaData: field 1 (i32 version) */
		if (round % 3 == 0)
			b.data[4] = 0x15;
		cx_buf_put_u32(&b, n);
		cx_buf_put(&b, CX_PARQUET_MAGIC, 4);
		REQUIRE_OK(cx_obj_put(s, "data/junk.parquet", b.data, b.len,
							  CX_PUT_OVERWRITE, &err), &err);
		if (cx_fragr_open(s, "data/junk.parquet", 0, &r, &err) == CX_OK)
		{
			cx_fragr_close(r);
			wrong++;
		}
		else if (err.code != CX_ERR_CORRUPT ||
				 strstr(err.msg, "data/junk.parquet") == NULL)
			wrong++;
	}
	CHECK(wrong == 0);
	cx_buf_free(&b);
	cx_obj_close(s);
}

/* A footer that decodes but whose Parquet schema is not the one its
 * ctxstore schema maps to (another writer, or an edited file). */
CX_TEST(fragment_schema_mismatch_is_corrupt)
{
	cx_objstore *s = open_store();
	cx_fragment_info info;
	cx_buf		bytes;
	cx_buf		out;
	cx_pq_file_meta m;
	cx_fragr   *r;
	cx_err		err;
	uint32_t	meta_len;

	REQUIRE(s);
	cx_buf_init(&bytes);
	cx_buf_init(&out);
	REQUIRE(small_fragment_bytes(s, 3, &bytes, &info));
	meta_len = cx_load_u32(bytes.data + bytes.len - 8);
	REQUIRE_OK(cx_pq_file_meta_decode(bytes.data + info.footer_offset, meta_len,
									  &m, "meta", &err), &err);
	m.schema[1].field_id = 77;	/* "id" gets another field id */
	cx_buf_put(&out, bytes.data, info.footer_offset);
	cx_pq_file_meta_encode(&m, &out);
	cx_buf_put_u32(&out, (uint32_t) (out.len - info.footer_offset));
	cx_buf_put(&out, CX_PARQUET_MAGIC, 4);
	REQUIRE_OK(cx_obj_put(s, "data/other.parquet", out.data, out.len,
						  CX_PUT_OVERWRITE, &err), &err);
	CHECK_CODE(cx_fragr_open(s, "data/other.parquet", 0, &r, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "data/other.parquet") &&
		  strstr(err.msg, "does not match the ctxstore schema"));
	/* without the ctxstore key-value metadata it is no fragment at all */
	m.schema[1].field_id = 1;
	m.nkv = 0;
	cx_buf_reset(&out);
	cx_buf_put(&out, bytes.data, info.footer_offset);
	cx_pq_file_meta_encode(&m, &out);
	cx_buf_put_u32(&out, (uint32_t) (out.len - info.footer_offset));
	cx_buf_put(&out, CX_PARQUET_MAGIC, 4);
	REQUIRE_OK(cx_obj_put(s, "data/other.parquet", out.data, out.len,
						  CX_PUT_OVERWRITE, &err), &err);
	CHECK_CODE(cx_fragr_open(s, "data/other.parquet", 0, &r, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "key-value metadata missing") != NULL);
	m.nkv = 2;
	cx_pq_file_meta_free(&m);
	cx_buf_free(&out);
	cx_buf_free(&bytes);
	cx_fragment_info_free(&info);
	cx_obj_close(s);
}

/* Hidden columns are REQUIRED: a NULL there is refused. */
CX_TEST(fragment_required_columns_refuse_nulls)
{
	cx_objstore *s = open_store();
	cx_schema  *schema = cx_schema_new();
	cx_fragw   *w;
	cx_datum	v[2] = {{.v.i64 = 1}, {.isnull = true}};
	cx_err		err;

	REQUIRE(s && schema);
	cx_schema_add(schema, "id", CX_T_INT64, 0, NULL, &err);
	cx_schema_add(schema, "_ctx_tombstone", CX_T_BOOL, 0, NULL, &err);
	schema->columns[1].field_id = CX_FIELD_ID_TOMBSTONE;
	REQUIRE_OK(cx_fragw_open(s, "data/req.parquet", schema, NULL, &w, &err), &err);
	CHECK_CODE(cx_fragw_append(w, v, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "_ctx_tombstone") && strstr(err.msg, "required"));
	cx_fragw_abort(w);
	cx_schema_free(schema);
	cx_obj_close(s);
}

/* ---------------------------------------------------------------------
 * Levels
 * --------------------------------------------------------------------- */

CX_TEST(levels_round_trip_and_refuse_malformed_streams)
{
	uint8_t		levels[5000];
	uint8_t		back[5000 + 9];	/* room for the "more levels" case */
	uint32_t	x = 99;
	const char *why;

	for (int width = 1; width <= 2; width++)
		for (int shape = 0; shape < 4; shape++)
		{
			size_t		n = shape == 0 ? 1 : shape == 1 ? 7 : 5000;
			cx_buf		b;
			cx_rd		r;

			for (size_t i = 0; i < n; i++)
				levels[i] = (uint8_t) (shape == 3 ? (i / 50) % (1 << width) :
									   ((x = x * 1103515245u + 12345u) >> 16) % (1 << width));
			cx_buf_init(&b);
			cx_levels_encode(levels, n, width, &b);
			REQUIRE(cx_buf_ok(&b));
			cx_rd_init(&r, b.data, b.len);
			CHECK(cx_levels_decode(&r, n, (1 << width) - 1, back, &why));
			CHECK(cx_rd_left(&r) == 0 && memcmp(levels, back, n) == 0);
			/* runs of 50 equal levels are RLE: a few bytes per run */
			if (shape == 3)
				CHECK(b.len < 4 + 3 * (n / 50 + 1));
			for (size_t cut = 0; cut < b.len; cut++)
			{
				cx_rd_init(&r, b.data, cut);
				CHECK(!cx_levels_decode(&r, n, (1 << width) - 1, back, &why));
			}
			/* more levels than the stream holds */
			cx_rd_init(&r, b.data, b.len);
			CHECK(!cx_levels_decode(&r, n + 9, (1 << width) - 1, back, &why));
			cx_buf_free(&b);
		}
	/* a level above the maximum */
	{
		uint8_t		two[8] = {2, 2, 2, 2, 2, 2, 2, 2};
		cx_buf		b;
		cx_rd		r;

		cx_buf_init(&b);
		cx_levels_encode(two, 8, 2, &b);
		cx_rd_init(&r, b.data, b.len);
		CHECK(!cx_levels_decode(&r, 8, 1, back, &why));
		cx_buf_free(&b);
	}
}

CX_TEST(fragment_info_copy_and_new_key)
{
	cx_fragment_info a = {0},
				b;
	cx_colstats st[2] = {{.null_count = 1}, {.value_count = 2}};
	char		k1[64],
				k2[64],
				tiny[16];
	cx_err		err;

	a.path = "data/p.parquet";
	a.ncolumns = 2;
	a.stats = st;
	a.rows = 9;
	REQUIRE_OK(cx_fragment_info_copy(&b, &a, &err), &err);
	CHECK(b.path != a.path && strcmp(b.path, a.path) == 0);
	CHECK(b.stats != st && b.stats[1].value_count == 2 && b.rows == 9);
	cx_fragment_info_free(&b);
	CHECK(b.path == NULL);

	REQUIRE_OK(cx_fragment_new_key(k1, sizeof(k1), &err), &err);
	REQUIRE_OK(cx_fragment_new_key(k2, sizeof(k2), &err), &err);
	CHECK(strlen(k1) == 45 && strncmp(k1, "data/", 5) == 0);
	CHECK(strcmp(k1 + 37, ".parquet") == 0);
	CHECK(strspn(k1 + 5, "0123456789abcdef") == 32);
	CHECK(strcmp(k1, k2) != 0);
	CHECK(cx_key_validate(k1, &err) == CX_OK);
	CHECK_CODE(cx_fragment_new_key(tiny, sizeof(tiny), &err), CX_ERR_INVALID);
}

/* ---------------------------------------------------------------------
 * Schemas
 * --------------------------------------------------------------------- */

CX_TEST(schema_round_trip)
{
	cx_schema  *s = all_types_schema();
	cx_schema  *back,
			   *copy;
	cx_buf		b;
	cx_rd		r;

	REQUIRE(s);
	cx_buf_init(&b);
	cx_schema_encode(s, &b);
	REQUIRE(cx_buf_ok(&b));
	cx_rd_init(&r, b.data, b.len);
	back = cx_schema_decode(&r);
	REQUIRE(back != NULL);
	CHECK(cx_rd_left(&r) == 0);
	CHECK(cx_schema_equal(s, back));
	CHECK(strcmp(back->columns[17].ext_type, "point") == 0);
	CHECK(strcmp(back->columns[20].ext_type, "inet") == 0);
	CHECK(back->columns[19].elem_type == CX_T_INT64);
	copy = cx_schema_clone(back);
	CHECK(copy && cx_schema_equal(copy, s));
	CHECK(cx_schema_find(s, "jb") == 15 && cx_schema_find(s, "nope") == -1);
	/* Every truncation is rejected. */
	for (size_t n = 0; n < b.len; n++)
	{
		cx_schema  *t;

		cx_rd_init(&r, b.data, n);
		t = cx_schema_decode(&r);
		CHECK(t == NULL && !cx_rd_ok(&r));
		cx_schema_free(t);
	}
	CHECK(cx_type_width(CX_T_INTERVAL) == 16 && cx_type_width(CX_T_STRING) == 0);
	CHECK(strcmp(cx_type_name(CX_T_TIMESTAMPTZ), "timestamptz") == 0);
	CHECK(!cx_type_is_valid(0) && !cx_type_is_valid(CX_T_MAX + 1));
	cx_schema_free(copy);
	cx_schema_free(back);
	cx_schema_free(s);
	cx_buf_free(&b);
}

CX_TEST(schema_rejects_invalid)
{
	cx_schema  *s = cx_schema_new();
	cx_column	other;
	cx_err		err;

	REQUIRE(s);
	REQUIRE_OK(cx_schema_add(s, "a", CX_T_INT32, 0, NULL, &err), &err);
	CHECK_CODE(cx_schema_add(s, "a", CX_T_INT64, 0, NULL, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_schema_add(s, "", CX_T_INT64, 0, NULL, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_schema_add(s, "l", CX_T_LIST, CX_T_LIST, NULL, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_schema_add(s, "l", CX_T_LIST, 0, NULL, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_schema_add(s, "e", CX_T_EXTERNAL, 0, NULL, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_schema_add(s, "x", CX_T_INT32, 0, "int4", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_schema_add(s, "x", CX_T_INT32, CX_T_INT32, NULL, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_schema_add(s, "x", (cx_type) 40, 0, NULL, &err), CX_ERR_INVALID);
	CHECK(s->ncolumns == 1);
	REQUIRE_OK(cx_schema_validate(s, &err), &err);

	/* Hand-built encodings the decoder must refuse. */
	{
		static const uint8_t bad[][16] = {
			/* unknown type 0 */
			{1, 0, 0, 0, 1, 0, 'a', 0, 0, 0},
			/* list of lists */
			{1, 0, 0, 0, 1, 0, 'a', 19, 19, 0},
			/* external without a type name */
			{1, 0, 0, 0, 1, 0, 'a', 18, 0, 0},
			/* empty name */
			{1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0},
			/* duplicate names */
			{2, 0, 0, 0, 1, 0, 'a', 3, 0, 0, 1, 0, 'a', 3, 0, 0},
			/* name with a NUL */
			{1, 0, 0, 0, 2, 0, 'a', 0, 3, 0, 0},
			/* has_ext not 0/1 */
			{1, 0, 0, 0, 1, 0, 'a', 3, 0, 2},
			/* absurd column count */
			{0xff, 0xff, 0xff, 0xff, 1, 0, 'a', 3, 0, 0},
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		{
			cx_rd		r;

			cx_rd_init(&r, bad[i], sizeof(bad[i]));
			CHECK(cx_schema_decode(&r) == NULL);
			CHECK(!cx_rd_ok(&r));
		}
	}
	/* A hand-built schema is checked by the writer. */
	other = s->columns[0];
	other.elem_type = CX_T_INT32;
	s->columns[0] = other;
	CHECK_CODE(cx_schema_validate(s, &err), CX_ERR_INVALID);
	s->columns[0].elem_type = 0;
	cx_schema_free(s);
}
