/*
 * test_wal.c — WAL entries: rows and fence round trips, corruption, the key
 * check, and put-if-absent outcomes (ours after an ambiguous answer, taken by
 * another epoch, unknown).
 */
#include <stdlib.h>

#include "cx_test.h"
#include "memwal/cx_wal.h"
#include "swtest.h"

typedef struct rows_entry
{
	cx_wal_entry e;
	cx_schema  *schema;
	cx_buf		rows;
} rows_entry;

static void
make_rows_entry(rows_entry *r, uint64_t epoch, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	r->schema = sw_schema();
	cx_buf_init(&r->rows);
	sw_rows(&r->rows, r->schema, "k", 0, 3);
	r->e.kind = CX_WAL_ROWS;
	r->e.epoch = epoch;
	r->e.seq = seq;
	r->e.commit_ts = 1700000000000001;
	r->e.commit_id[0] = (uint8_t) (epoch * 16 + seq);
	r->e.nrows = 3;
	r->e.schema = r->schema;
	r->e.rows = r->rows.data;
	r->e.rows_len = r->rows.len;
}

static void
free_rows_entry(rows_entry *r)
{
	cx_schema_free(r->schema);
	cx_buf_free(&r->rows);
}

CX_TEST(wal_entry_round_trip)
{
	rows_entry r;
	cx_wal_entry d;
	cx_wal_entry fence;
	cx_buf		b;
	cx_err		err;

	make_rows_entry(&r, 2, 7);
	cx_buf_init(&b);
	REQUIRE_OK(cx_wal_encode(&r.e, &b, &err), &err);
	CHECK(memcmp(b.data, "CXW1", 4) == 0);
	REQUIRE_OK(cx_wal_decode(b.data, b.len, "x", &d, &err), &err);
	CHECK(d.kind == CX_WAL_ROWS && d.epoch == 2 && d.seq == 7);
	CHECK(d.commit_ts == r.e.commit_ts && d.nrows == 3);
	CHECK(memcmp(d.commit_id, r.e.commit_id, 16) == 0);
	CHECK(cx_schema_equal(d.schema, r.schema));
	CHECK(d.rows_len == r.rows.len && memcmp(d.rows, r.rows.data, d.rows_len) == 0);
	cx_wal_entry_clear(&d);

	memset(&fence, 0, sizeof(fence));
	fence.kind = CX_WAL_FENCE;
	fence.epoch = 3;
	fence.seq = 8;
	fence.writer = "host-b pid 7";
	cx_buf_reset(&b);
	REQUIRE_OK(cx_wal_encode(&fence, &b, &err), &err);
	REQUIRE_OK(cx_wal_decode(b.data, b.len, "x", &d, &err), &err);
	CHECK(d.kind == CX_WAL_FENCE && d.epoch == 3 && d.nrows == 0);
	CHECK(d.schema == NULL && strcmp(d.writer, "host-b pid 7") == 0);
	cx_wal_entry_clear(&d);

	/* Inconsistent entries are refused before they are written. */
	fence.nrows = 1;
	CHECK_CODE(cx_wal_encode(&fence, &b, &err), CX_ERR_INVALID);
	r.e.nrows = 0;
	CHECK_CODE(cx_wal_encode(&r.e, &b, &err), CX_ERR_INVALID);
	free_rows_entry(&r);
	cx_buf_free(&b);
}

CX_TEST(wal_entry_corruption_is_detected)
{
	rows_entry r;
	cx_wal_entry d;
	cx_buf		b;
	cx_err		err;
	size_t		detected = 0;

	make_rows_entry(&r, 1, 1);
	cx_buf_init(&b);
	REQUIRE_OK(cx_wal_encode(&r.e, &b, &err), &err);
	for (size_t i = 0; i < b.len; i++)
	{
		b.data[i] ^= 0x21;
		if (cx_wal_decode(b.data, b.len, "x", &d, &err) != CX_OK)
			detected++;
		else
			cx_wal_entry_clear(&d);
		b.data[i] ^= 0x21;
	}
	CHECK(detected == b.len);
	for (size_t len = 0; len < b.len; len++)
		CHECK_CODE(cx_wal_decode(b.data, len, "x", &d, &err), CX_ERR_CORRUPT);
	free_rows_entry(&r);
	cx_buf_free(&b);
}

CX_TEST(wal_put_and_read_back)
{
	sw_wrap    *w = sw_wrap_open("/st");
	rows_entry r;
	rows_entry other;
	cx_wal_entry d;
	cx_wal_taken taken;
	bool		unknown;
	cx_buf		bytes;
	cx_err		err;

	REQUIRE(w != NULL);
	cx_buf_init(&bytes);
	make_rows_entry(&r, 1, 1);
	make_rows_entry(&other, 2, 1);

	/* Lands, but the answer is lost: recognised as ours. */
	w->fault = SW_FAULT_LAND_THEN_IO;
	w->faults = 1;
	REQUIRE_OK(cx_wal_put(&w->base, "s1", &r.e, &taken, &unknown, &err), &err);
	CHECK(taken.epoch == 0);
	/* Another epoch's entry at the same seq: taken, by epoch 1. */
	REQUIRE_OK(cx_wal_put(&w->base, "s1", &other.e, &taken, &unknown, &err), &err);
	CHECK(taken.epoch == 1 && taken.kind == CX_WAL_ROWS);
	/* Our own retry of the very same entry: ours. */
	REQUIRE_OK(cx_wal_put(&w->base, "s1", &r.e, &taken, &unknown, &err), &err);
	CHECK(taken.epoch == 0);
	REQUIRE_OK(cx_wal_read(&w->base, "s1", 1, &bytes, &d, &err), &err);
	CHECK(d.epoch == 1 && d.nrows == 3);
	cx_wal_entry_clear(&d);
	CHECK_CODE(cx_wal_read(&w->base, "s1", 2, &bytes, &d, &err), CX_ERR_NOT_FOUND);

	/* Unknown outcome. */
	other.e.seq = 2;
	w->fault = SW_FAULT_LAND_THEN_IO_GET_FAILS;
	w->faults = 1;
	CHECK_CODE(cx_wal_put(&w->base, "s1", &other.e, &taken, &unknown, &err), CX_ERR_IO);
	CHECK(unknown);

	/* An entry copied under another seq is corrupt. */
	REQUIRE_OK(cx_obj_get(&w->base, "_shards/s1/wal/00000000000000000001.wal", &bytes, &err), &err);
	REQUIRE_OK(cx_obj_put(&w->base, "_shards/s1/wal/00000000000000000009.wal",
						  bytes.data, bytes.len, CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(cx_wal_read(&w->base, "s1", 9, &bytes, &d, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "00000000000000000009.wal") != NULL);

	free_rows_entry(&r);
	free_rows_entry(&other);
	cx_buf_free(&bytes);
	cx_obj_close(&w->base);
}

/* The examples in docs/FORMAT.md "Shards", byte for byte. */
CX_TEST(wal_entries_match_the_documented_examples)
{
	static const uint8_t fence_bytes[] = {
		0x43, 0x58, 0x57, 0x31, 0x01, 0x00, 0x00, 0x00, 0x34, 0x00, 0x00, 0x00,
		0x02,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x40, 0x1e, 0x18, 0x24, 0x0a, 0x06, 0x00,
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x77,
		0x85, 0xf9, 0xd8, 0xd5,
	};
	static const uint8_t rows_bytes[] = {
		0x43, 0x58, 0x57, 0x31, 0x01, 0x00, 0x00, 0x00, 0x4d, 0x00, 0x00, 0x00,
		0x01,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x40, 0x1e, 0x18, 0x24, 0x0a, 0x06, 0x00,
		0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
		0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x69, 0x64, 0x0d, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x07, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x61,
		0xbd, 0xc6, 0xa1, 0xb9,
	};
	static const uint8_t row[] = {0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x61};
	cx_wal_entry e;
	cx_schema  *schema = cx_schema_new();
	cx_buf		b;
	cx_err		err;

	REQUIRE(schema != NULL);
	REQUIRE_OK(cx_schema_add(schema, "id", CX_T_STRING, 0, NULL, &err), &err);
	cx_buf_init(&b);
	memset(&e, 0, sizeof(e));
	e.kind = CX_WAL_FENCE;
	e.epoch = 2;
	e.seq = 5;
	e.commit_ts = 1700000000000000;
	for (int i = 0; i < 16; i++)
		e.commit_id[i] = (uint8_t) i;
	e.writer = "w";
	REQUIRE_OK(cx_wal_encode(&e, &b, &err), &err);
	CHECK(b.len == sizeof(fence_bytes) && memcmp(b.data, fence_bytes, b.len) == 0);

	memset(&e, 0, sizeof(e));
	e.kind = CX_WAL_ROWS;
	e.epoch = 2;
	e.seq = 6;
	e.commit_ts = 1700000000000001;
	for (int i = 0; i < 16; i++)
		e.commit_id[i] = (uint8_t) (0xf0 | i);
	e.nrows = 1;
	e.schema = schema;
	e.rows = row;
	e.rows_len = sizeof(row);
	cx_buf_reset(&b);
	REQUIRE_OK(cx_wal_encode(&e, &b, &err), &err);
	CHECK(b.len == sizeof(rows_bytes) && memcmp(b.data, rows_bytes, b.len) == 0);
	cx_buf_free(&b);
	cx_schema_free(schema);
}
