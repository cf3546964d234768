/*
 * test_pq_infinity.c — how dates and timestamps at infinity are stored:
 * Parquet has none, and DuckDB reads the type's maximum as infinity and its
 * negation as -infinity, so that is what the writer stores for the engine's
 * (PostgreSQL's) minimum and maximum, and what the reader maps back.
 */
#include "format/cx_parquet_types.h"
#include "cx_test.h"

static int64_t
plain_round_trip(cx_type type, int64_t v, int width, int64_t *back)
{
	cx_column	col = {.name = "c", .type = type, .field_id = 1};
	cx_pq_leaf	leaf;
	cx_buf		out,
				eng;
	cx_rd		r;
	uint8_t		val[8];
	const char *why = NULL;
	int64_t		plain;

	cx_pq_leaf_init(&col, &leaf);
	cx_buf_init(&out);
	cx_buf_init(&eng);
	if (width == 8)
		cx_store_u64(val, (uint64_t) v);
	else
		cx_store_u32(val, (uint32_t) (int32_t) v);
	cx_pq_put_plain(&leaf, val, width, &out);
	plain = width == 8 ? (int64_t) cx_load_u64(out.data) :
		(int32_t) cx_load_u32(out.data);
	cx_rd_init(&r, out.data, out.len);
	*back = 0x5a5a;
	if (cx_pq_get_plain(&leaf, &r, &eng, &why))
		*back = width == 8 ? (int64_t) cx_load_u64(eng.data) :
			(int32_t) cx_load_u32(eng.data);
	cx_buf_free(&out);
	cx_buf_free(&eng);
	return plain;
}

CX_TEST(parquet_infinities_are_stored_as_duckdb_reads_them)
{
	int64_t		back;
	int64_t		ts;

	CHECK(plain_round_trip(CX_T_TIMESTAMPTZ, INT64_MIN, 8, &back) == -INT64_MAX);
	CHECK(back == INT64_MIN);
	CHECK(plain_round_trip(CX_T_TIMESTAMP, INT64_MIN, 8, &back) == -INT64_MAX);
	CHECK(back == INT64_MIN);
	CHECK(plain_round_trip(CX_T_DATE, INT32_MIN, 4, &back) == -INT32_MAX);
	CHECK(back == INT32_MIN);
	CHECK(plain_round_trip(CX_T_TIMESTAMPTZ, INT64_MAX, 8, &back) == INT64_MAX);
	CHECK(back == INT64_MAX);
	CHECK(plain_round_trip(CX_T_DATE, INT32_MAX, 4, &back) == INT32_MAX);
	CHECK(back == INT32_MAX);
	/* The reader's fast path agrees with the writer. */
	CHECK(cx_pq_timestamp_from_unix(-INT64_MAX, &ts) && ts == INT64_MIN);
	CHECK(cx_pq_timestamp_from_unix(INT64_MAX, &ts) && ts == INT64_MAX);
	CHECK(!cx_pq_timestamp_from_unix(INT64_MIN, &ts));
}
