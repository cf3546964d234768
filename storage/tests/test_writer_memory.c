/*
 * test_writer_memory.c — what the shard writer holds for a large
 * transaction: its rows move from the request's resolution into the
 * memtable without a copy, and neither the staging buffer nor the memtable
 * keeps a large transaction's capacity once it is sealed.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_row_codec.h"
#include "memwal/cx_memwal_int.h"
#include "cx_test.h"
#include "mw_util.h"

#define BIG ((size_t) 8 << 20)

CX_TEST(memtable_first_batch_moves_in_later_ones_are_copied)
{
	cx_memtable mt;
	cx_buf		rows;
	uint8_t    *first;
	cx_err		err;

	cx_memtable_init(&mt);
	cx_buf_init(&rows);
	REQUIRE(cx_buf_grow(&rows, BIG) != NULL);
	first = rows.data;
	REQUIRE_OK(cx_memtable_add(&mt, &rows, 1, 1, &err), &err);
	CHECK(mt.bytes.data == first && mt.bytes.len == BIG);
	CHECK(rows.len == 0 && rows.data != first);
	cx_buf_put(&rows, "abc", 3);
	REQUIRE_OK(cx_memtable_add(&mt, &rows, 1, 2, &err), &err);
	CHECK(rows.len == 3 && mt.bytes.len == BIG + 3 && mt.batches[1].offset == BIG);
	CHECK(memcmp(mt.bytes.data + BIG, "abc", 3) == 0);
	/* Sealed: a large buffer is not kept for the next transaction. */
	cx_memtable_clear(&mt);
	CHECK(mt.bytes.cap <= CX_BUF_KEEP_BYTES);
	cx_buf_free(&rows);
	cx_memtable_free(&mt);
}

/* Bytes malloc has handed out and not had back (heap and mmapped). */
static size_t
allocated(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* An 8 MiB value appended sealed: afterwards the writer holds none of it. */
CX_TEST(sw_large_sealed_append_leaves_no_buffer_behind)
{
	cx_objstore *s = mw_open_store();
	cx_schema  *sc = cx_schema_new();
	cx_shardwriter *w;
	cx_sw_options o;
	cx_datum	d[2];
	cx_buf		rows;
	int64_t		ts;
	size_t		before;
	cx_err		err;

	REQUIRE(s != NULL && sc != NULL);
	REQUIRE_OK(cx_schema_add(sc, "id", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(sc, "body", CX_T_STRING, 0, NULL, &err), &err);
	mw_writer_options(false, &o);
	REQUIRE_OK(cx_sw_open(s, "s1", &o, &w, &err), &err);
	memset(d, 0, sizeof(d));
	d[0].v.bytes.ptr = (const uint8_t *) "k";
	d[0].v.bytes.len = 1;
	d[1].v.bytes.ptr = calloc(1, BIG);
	d[1].v.bytes.len = BIG;
	REQUIRE(d[1].v.bytes.ptr != NULL);
	cx_buf_init(&rows);
	cx_row_encode(sc, CX_ROW_PUT, d, &rows);
	free((void *) d[1].v.bytes.ptr);
	before = allocated();
	REQUIRE_OK(cx_sw_append(w, sc, rows.data, rows.len, 1, true, &ts, &err), &err);
	CHECK(allocated() < before + CX_BUF_KEEP_BYTES);
	cx_buf_free(&rows);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_schema_free(sc);
	cx_obj_close(s);
}

/* The writer's key caches grow with the unmerged keys, and a reader's
 * shard-manifest cache counts the version it keeps. */
CX_TEST(sw_and_shard_caches_count_what_they_keep)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *reader = mw_open_store();
	cx_shardwriter *w;
	cx_shard_manifest *m;
	uint64_t	before;
	cx_err		err;

	REQUIRE(s != NULL && reader != NULL);
	REQUIRE_OK(mw_writer(s, "s1", true, &w, &err), &err);
	before = cx_sw_cache_bytes(w);
	/* keys "k0" .. "k999": at least 2 bytes each */
	REQUIRE_OK(mw_put(w, "k", 0, 1000, 1, true, &err), &err);
	CHECK(cx_sw_cache_bytes(w) >= before + 2 * 1000);
	CHECK(cx_obj_cache_bytes(reader) == 0);
	REQUIRE_OK(cx_shard_manifest_load_latest_cached(reader, "s1", &m, &err),
			   &err);
	REQUIRE(m != NULL);
	CHECK(cx_obj_cache_bytes(reader) >= cx_shard_manifest_memory(m));
	CHECK(cx_shard_manifest_memory(m) > sizeof(*m) + m->ngens * sizeof(cx_generation));
	cx_shard_manifest_free(m);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(reader);
	cx_obj_close(s);
}
