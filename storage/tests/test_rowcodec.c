/*
 * test_rowcodec.c — row codec: round trips of every type, NULLs, lists with
 * NULL elements, empty and big values, batches, and corrupt input.
 */
#include <math.h>
#include <stdlib.h>

#include "format/cx_row_codec.h"
#include "cx_test.h"

/* One column of every scalar type, then a list of each, in type order. */
static cx_schema *
all_types_schema(void)
{
	cx_schema  *s = cx_schema_new();
	cx_err		err;
	char		name[32];

	for (int t = CX_T_BOOL; t < CX_T_LIST; t++)
	{
		const char *ext = t == CX_T_EXTERNAL ? "point" : NULL;

		snprintf(name, sizeof(name), "c_%s", cx_type_name(t));
		if (cx_schema_add(s, name, t, 0, ext, &err) != CX_OK)
			abort();
		snprintf(name, sizeof(name), "l_%s", cx_type_name(t));
		if (cx_schema_add(s, name, CX_T_LIST, t, ext, &err) != CX_OK)
			abort();
	}
	return s;
}

/* A deterministic non-NULL value of type t, varied by seed. */
static void
make_value(cx_type t, int seed, cx_datum *d)
{
	static const char *texts[] = {"", "a", "héllo wörld", "{\"k\": [1, 2]}", "12.5000"};
	const char *txt = texts[seed % 5];

	memset(d, 0, sizeof(*d));
	switch (t)
	{
		case CX_T_BOOL:
			d->v.b = seed & 1;
			break;
		case CX_T_INT16:
			d->v.i16 = (int16_t) (seed % 2 ? INT16_MIN + seed : INT16_MAX - seed);
			break;
		case CX_T_INT32:
		case CX_T_DATE:
			d->v.i32 = seed % 2 ? INT32_MIN + seed : -seed;
			break;
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			d->v.i64 = seed % 2 ? INT64_MIN + seed : INT64_MAX - seed;
			break;
		case CX_T_FLOAT32:
			d->v.f32 = seed % 3 == 0 ? -0.0f : seed % 3 == 1 ? INFINITY : 1.5f * seed;
			break;
		case CX_T_FLOAT64:
			d->v.f64 = seed % 3 == 0 ? NAN : seed % 3 == 1 ? -INFINITY : 1e300 / (seed + 1);
			break;
		case CX_T_UUID:
			for (int i = 0; i < 16; i++)
				d->v.uuid[i] = (uint8_t) (seed * 31 + i * 7);
			break;
		case CX_T_INTERVAL:
			d->v.interval.usec = -86400000000LL * seed - 1;
			d->v.interval.days = -seed;
			d->v.interval.months = seed * 12 + 1;
			break;
		default:
			d->v.bytes.ptr = (const uint8_t *) txt;
			d->v.bytes.len = strlen(txt);
			break;
	}
}

static bool
same_scalar(cx_type t, const cx_datum *a, const cx_datum *b)
{
	if (a->isnull || b->isnull)
		return a->isnull == b->isnull;
	switch (t)
	{
		case CX_T_BOOL:
			return a->v.b == b->v.b;
		case CX_T_INT16:
			return a->v.i16 == b->v.i16;
		case CX_T_INT32:
		case CX_T_DATE:
			return a->v.i32 == b->v.i32;
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			return a->v.i64 == b->v.i64;
		case CX_T_FLOAT32:
			return memcmp(&a->v.f32, &b->v.f32, sizeof(float)) == 0;
		case CX_T_FLOAT64:
			return memcmp(&a->v.f64, &b->v.f64, sizeof(double)) == 0;
		case CX_T_UUID:
			return memcmp(a->v.uuid, b->v.uuid, 16) == 0;
		case CX_T_INTERVAL:
			return a->v.interval.usec == b->v.interval.usec &&
				a->v.interval.days == b->v.interval.days &&
				a->v.interval.months == b->v.interval.months;
		default:
			return a->v.bytes.len == b->v.bytes.len &&
				(a->v.bytes.len == 0 ||
				 memcmp(a->v.bytes.ptr, b->v.bytes.ptr, a->v.bytes.len) == 0);
	}
}

static bool
same_value(const cx_column *col, const cx_datum *a, const cx_datum *b)
{
	if (col->type != CX_T_LIST || a->isnull || b->isnull)
		return same_scalar(col->type, a, b);
	if (a->v.list.n != b->v.list.n)
		return false;
	for (uint32_t i = 0; i < a->v.list.n; i++)
		if (!same_scalar(col->elem_type, &a->v.list.items[i], &b->v.list.items[i]))
			return false;
	return true;
}

/* Fills a row of the all-types schema.  items must hold 11 datums per list
 * column; lists get seed % 11 elements, every third one NULL; every fifth
 * column (shifted by seed) is NULL. */
static void
make_row(const cx_schema *s, int seed, cx_datum *row, cx_datum *items)
{
	for (uint32_t c = 0; c < s->ncolumns; c++)
	{
		const cx_column *col = &s->columns[c];

		if ((c + seed) % 5 == 0)
		{
			memset(&row[c], 0, sizeof(cx_datum));
			row[c].isnull = true;
		}
		else if (col->type == CX_T_LIST)
		{
			cx_datum   *mine = items + c * 11;
			uint32_t	n = (uint32_t) (seed % 11);

			for (uint32_t i = 0; i < n; i++)
			{
				make_value(col->elem_type, seed + (int) i, &mine[i]);
				mine[i].isnull = (i + seed) % 3 == 0;
			}
			memset(&row[c], 0, sizeof(cx_datum));
			row[c].v.list.items = n ? mine : NULL;
			row[c].v.list.n = n;
		}
		else
			make_value(col->type, seed + (int) c, &row[c]);
	}
}

CX_TEST(rowcodec_round_trip_every_type)
{
	cx_schema  *s = all_types_schema();
	cx_datum   *row = calloc(s->ncolumns, sizeof(cx_datum));
	cx_datum   *got = calloc(s->ncolumns, sizeof(cx_datum));
	cx_datum   *items = calloc(s->ncolumns * 11, sizeof(cx_datum));
	cx_buf		enc,
				scratch;
	cx_rd		r;
	cx_row_kind kind;
	cx_err		err;
	const int	nrows = 40;

	cx_buf_init(&enc);
	cx_buf_init(&scratch);
	/* A batch: rows back to back, each with a different NULL pattern. */
	for (int seed = 0; seed < nrows; seed++)
	{
		make_row(s, seed, row, items);
		cx_row_encode(s, (cx_row_kind) (seed % (CX_ROW_KIND_MAX + 1)), row, &enc);
	}
	REQUIRE(cx_buf_ok(&enc));
	cx_rd_init(&r, enc.data, enc.len);
	for (int seed = 0; seed < nrows; seed++)
	{
		make_row(s, seed, row, items);
		REQUIRE_OK(cx_row_decode(s, &r, &kind, got, &scratch, &err), &err);
		CHECK(kind == (cx_row_kind) (seed % (CX_ROW_KIND_MAX + 1)));
		for (uint32_t c = 0; c < s->ncolumns; c++)
			if (!same_value(&s->columns[c], &row[c], &got[c]))
			{
				char		what[128];

				snprintf(what, sizeof(what), "row %d column %s differs",
						 seed, s->columns[c].name);
				cx_test_fail(__FILE__, __LINE__, what);
			}
	}
	CHECK(cx_rd_left(&r) == 0);
	cx_buf_free(&enc);
	cx_buf_free(&scratch);
	free(row);
	free(got);
	free(items);
	cx_schema_free(s);
}

CX_TEST(rowcodec_all_null_and_empty_values)
{
	cx_schema  *s = cx_schema_new();
	cx_datum	row[3],
				got[3];
	cx_buf		enc,
				scratch;
	cx_rd		r;
	cx_row_kind kind;
	cx_err		err;

	REQUIRE_OK(cx_schema_add(s, "t", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(s, "b", CX_T_BINARY, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(s, "l", CX_T_LIST, CX_T_STRING, NULL, &err), &err);
	cx_buf_init(&enc);
	cx_buf_init(&scratch);

	/* All NULL: the kind and the bitmap. */
	memset(row, 0, sizeof(row));
	for (int i = 0; i < 3; i++)
		row[i].isnull = true;
	cx_row_encode(s, CX_ROW_PUT, row, &enc);
	CHECK(enc.len == 2 && enc.data[0] == CX_ROW_PUT && enc.data[1] == 0x07);

	/* Empty string, empty bytes with no pointer, empty list: not NULL. */
	memset(row, 0, sizeof(row));
	row[0].v.bytes.ptr = (const uint8_t *) "";
	cx_row_encode(s, CX_ROW_PUT, row, &enc);
	REQUIRE(cx_buf_ok(&enc));

	cx_rd_init(&r, enc.data, enc.len);
	REQUIRE_OK(cx_row_decode(s, &r, &kind, got, &scratch, &err), &err);
	CHECK(got[0].isnull && got[1].isnull && got[2].isnull);
	REQUIRE_OK(cx_row_decode(s, &r, &kind, got, &scratch, &err), &err);
	CHECK(!got[0].isnull && got[0].v.bytes.len == 0);
	CHECK(!got[1].isnull && got[1].v.bytes.len == 0);
	CHECK(!got[2].isnull && got[2].v.list.n == 0);
	CHECK(cx_rd_left(&r) == 0);
	cx_buf_free(&enc);
	cx_buf_free(&scratch);
	cx_schema_free(s);
}

/* Several list columns in one row: the first list's items must survive the
 * scratch buffer growing for the later ones. */
CX_TEST(rowcodec_big_values_and_many_lists)
{
	cx_schema  *s = cx_schema_new();
	const uint32_t nitems = 100000;
	const size_t big = 5u << 20;
	uint8_t    *blob = malloc(big);
	cx_datum	small[3];
	cx_datum   *many = calloc(nitems, sizeof(cx_datum));
	cx_datum	row[4],
				got[4];
	cx_buf		enc,
				scratch;
	cx_rd		r;
	cx_row_kind kind;
	cx_err		err;

	REQUIRE(blob && many);
	REQUIRE_OK(cx_schema_add(s, "l1", CX_T_LIST, CX_T_FLOAT32, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(s, "blob", CX_T_BINARY, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(s, "l2", CX_T_LIST, CX_T_INT64, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(s, "l3", CX_T_LIST, CX_T_STRING, NULL, &err), &err);
	for (size_t i = 0; i < big; i++)
		blob[i] = (uint8_t) (i * 2654435761u >> 13);
	memset(small, 0, sizeof(small));
	for (uint32_t i = 0; i < 3; i++)
		small[i].v.f32 = (float) i + 0.25f;
	small[1].isnull = true;
	for (uint32_t i = 0; i < nitems; i++)
	{
		many[i].v.i64 = (int64_t) i * 1000003;
		many[i].isnull = i % 97 == 0;
	}

	memset(row, 0, sizeof(row));
	row[0].v.list.items = small;
	row[0].v.list.n = 3;
	row[1].v.bytes.ptr = blob;
	row[1].v.bytes.len = big;
	row[2].v.list.items = many;
	row[2].v.list.n = nitems;
	row[3].isnull = true;
	cx_buf_init(&enc);
	cx_buf_init(&scratch);
	cx_row_encode(s, CX_ROW_PUT, row, &enc);
	REQUIRE(cx_buf_ok(&enc));
	cx_rd_init(&r, enc.data, enc.len);
	REQUIRE_OK(cx_row_decode(s, &r, &kind, got, &scratch, &err), &err);
	for (int c = 0; c < 4; c++)
		CHECK(same_value(&s->columns[c], &row[c], &got[c]));
	/* The bytes point into the encoded batch, not a copy. */
	CHECK(got[1].v.bytes.ptr >= enc.data &&
		  got[1].v.bytes.ptr < enc.data + enc.len);
	cx_buf_free(&enc);
	cx_buf_free(&scratch);
	free(blob);
	free(many);
	cx_schema_free(s);
}

/* Encodes one row of the all-types schema with seed 7 (lists non-empty). */
static void
encode_sample(const cx_schema *s, cx_buf *enc)
{
	cx_datum   *row = calloc(s->ncolumns, sizeof(cx_datum));
	cx_datum   *items = calloc(s->ncolumns * 11, sizeof(cx_datum));

	make_row(s, 7, row, items);
	cx_buf_init(enc);
	cx_row_encode(s, CX_ROW_PUT, row, enc);
	free(row);
	free(items);
}

CX_TEST(rowcodec_truncated_input_is_corrupt)
{
	cx_schema  *s = all_types_schema();
	cx_datum   *got = calloc(s->ncolumns, sizeof(cx_datum));
	cx_buf		enc,
				scratch;
	cx_err		err;

	encode_sample(s, &enc);
	REQUIRE(cx_buf_ok(&enc) && enc.len > 50);
	cx_buf_init(&scratch);
	/* Every proper prefix, copied to an exact-size allocation so ASan sees
	 * any read past its end. */
	for (size_t len = 0; len < enc.len; len++)
	{
		uint8_t    *copy = malloc(len ? len : 1);
		cx_rd		r;
		cx_row_kind kind;

		memcpy(copy, enc.data, len);
		cx_rd_init(&r, copy, len);
		CHECK_CODE(cx_row_decode(s, &r, &kind, got, &scratch, &err), CX_ERR_CORRUPT);
		free(copy);
	}
	cx_buf_free(&enc);
	cx_buf_free(&scratch);
	free(got);
	cx_schema_free(s);
}

CX_TEST(rowcodec_malformed_input_is_corrupt)
{
	cx_schema  *s = cx_schema_new();
	cx_datum	got[2];
	cx_buf		scratch;
	cx_rd		r;
	cx_row_kind kind;
	cx_err		err;
	/* a row kind beyond CX_ROW_KIND_MAX */
	const uint8_t bad_kind[] = {CX_ROW_KIND_MAX + 1, 0x03};
	/* bool 2 */
	const uint8_t bad_bool[] = {0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00};
	/* padding bit 2 set in the row bitmap of a 2-column schema */
	const uint8_t bad_pad[] = {0x00, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00};
	/* list of 3 with padding bit 3 set in its element bitmap */
	const uint8_t bad_list_pad[] = {0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x0F};
	/* list claiming 2^32-1 elements */
	const uint8_t huge_list[] = {0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x00};

	REQUIRE_OK(cx_schema_add(s, "b", CX_T_BOOL, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(s, "l", CX_T_LIST, CX_T_INT32, NULL, &err), &err);
	cx_buf_init(&scratch);
	cx_rd_init(&r, bad_kind, sizeof(bad_kind));
	CHECK_CODE(cx_row_decode(s, &r, &kind, got, &scratch, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "row kind") != NULL);
	cx_rd_init(&r, bad_bool, sizeof(bad_bool));
	CHECK_CODE(cx_row_decode(s, &r, &kind, got, &scratch, &err), CX_ERR_CORRUPT);
	cx_rd_init(&r, bad_pad, sizeof(bad_pad));
	CHECK_CODE(cx_row_decode(s, &r, &kind, got, &scratch, &err), CX_ERR_CORRUPT);
	cx_rd_init(&r, bad_list_pad, sizeof(bad_list_pad));
	CHECK_CODE(cx_row_decode(s, &r, &kind, got, &scratch, &err), CX_ERR_CORRUPT);
	cx_rd_init(&r, huge_list, sizeof(huge_list));
	CHECK_CODE(cx_row_decode(s, &r, &kind, got, &scratch, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "\"l\"") != NULL);
	cx_buf_free(&scratch);
	cx_schema_free(s);
}

/* Random corruption never crashes: each mutated row decodes or is corrupt. */
CX_TEST(rowcodec_random_corruption_never_crashes)
{
	cx_schema  *s = all_types_schema();
	cx_datum   *got = calloc(s->ncolumns, sizeof(cx_datum));
	cx_buf		enc,
				scratch;
	cx_err		err;
	uint32_t	rng = 12345;
	int			corrupt = 0;

	encode_sample(s, &enc);
	REQUIRE(cx_buf_ok(&enc));
	cx_buf_init(&scratch);
	for (int iter = 0; iter < 20000; iter++)
	{
		uint8_t    *copy = malloc(enc.len);
		cx_rd		r;
		cx_row_kind kind;
		cx_code		rc;

		memcpy(copy, enc.data, enc.len);
		for (int k = 0; k < 1 + iter % 4; k++)
		{
			rng = rng * 1103515245u + 12345u;
			copy[(rng >> 8) % enc.len] ^= (uint8_t) (1u << ((rng >> 4) & 7));
		}
		cx_rd_init(&r, copy, enc.len);
		rc = cx_row_decode(s, &r, &kind, got, &scratch, &err);
		CHECK(rc == CX_OK || rc == CX_ERR_CORRUPT || rc == CX_ERR_NOMEM);
		corrupt += rc == CX_ERR_CORRUPT;
		free(copy);
	}
	CHECK(corrupt > 0);
	cx_buf_free(&enc);
	cx_buf_free(&scratch);
	free(got);
	cx_schema_free(s);
}
