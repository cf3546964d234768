/*
 * test_delete.c — DELETE rows appended through the shard writer
 * (cx_sw_append with CX_ROW_DELETE rows): tombstones of a key, sealed and
 * through the WAL and its replay, before and after merges; TRUNCATE
 * markers (a DELETE with a NULL key) across layers and shards.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge/cx_merge.h"
#include "cx_test.h"
#include "mw_util.h"
#include "swtest.h"

/* The visible rows of s: n of them, and key id's value (-1: absent). */
static int64_t
value_of(cx_objstore *s, const char *id, uint32_t *n)
{
	mw_rows		r;
	int64_t		v = -1;
	cx_err		err;

	if (mw_scan(s, NULL, &r, &err) != CX_OK)
		return -2;
	if (mw_count(&r, id, &v) != 1)
		v = -1;
	*n = r.n;
	mw_rows_free(&r);
	return v;
}

static cx_code
merge_and_drain(cx_objstore *s, cx_shardwriter *w, cx_err *err)
{
	cx_merge_result res;

	if (cx_merge_shard(s, cx_sw_manifest(w)->shard_id, NULL, &res,
					   err) != CX_OK)
		return err->code;
	return cx_sw_drain_through(w, res.merged_through, err);
}

/* A tombstone hides its key before and after its merge, sealed or not
 * (unsealed: a WAL entry the next seal turns into a generation). */
CX_TEST(delete_tombstone_hides_key_before_and_after_merge)
{
	for (int sealed = 0; sealed < 2; sealed++)
	{
		cx_objstore *s = sw_store(sealed ? "/sealed" : "/wal");
		cx_shardwriter *w;
		uint32_t	n = 0;
		cx_err		err;
		const mw_op del[] = {{CX_ROW_DELETE, "k1", 0}};

		REQUIRE(s != NULL);
		REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
		REQUIRE_OK(mw_put(w, "k", 0, 3, 1, sealed, &err), &err);
		REQUIRE_OK(mw_append(w, del, 1, sealed, &err), &err);
		if (!sealed)
			REQUIRE_OK(cx_sw_seal(w, &err), &err);
		CHECK(value_of(s, "k1", &n) == -1 && n == 2);
		REQUIRE_OK(merge_and_drain(s, w, &err), &err);
		CHECK(value_of(s, "k1", &n) == -1 && n == 2);
		REQUIRE_OK(cx_sw_close(w, false, &err), &err);
		cx_obj_close(s);
	}
}

/* A deleted key inserted again is visible, in the same append and in a
 * later one, before and after merges. */
CX_TEST(delete_then_insert_again_is_visible)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	uint32_t	n = 0;
	cx_err		err;
	const mw_op same[] = {{CX_ROW_PUT, "a", 1}, {CX_ROW_DELETE, "a", 0},
	{CX_ROW_PUT, "a", 2}};
	const mw_op put[] = {{CX_ROW_PUT, "b", 4}};
	const mw_op del[] = {{CX_ROW_DELETE, "b", 0}};
	const mw_op again[] = {{CX_ROW_PUT, "b", 5}};

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_append(w, same, 3, true, &err), &err);
	REQUIRE_OK(mw_append(w, put, 1, true, &err), &err);
	REQUIRE_OK(mw_append(w, del, 1, true, &err), &err);
	CHECK(value_of(s, "a", &n) == 2 && n == 1);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	CHECK(value_of(s, "b", &n) == -1 && n == 1);
	REQUIRE_OK(mw_append(w, again, 1, true, &err), &err);
	CHECK(value_of(s, "b", &n) == 5 && n == 2);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	CHECK(value_of(s, "b", &n) == 5 && n == 2);
	CHECK(value_of(s, "a", &n) == 2);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* A tombstone of a key that lives only in the base hides it: unmerged, and
 * after its own merge (a deletion vector on the base row). */
CX_TEST(delete_of_a_base_only_key_hides_it)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_manifest *m;
	uint32_t	n = 0;
	cx_err		err;
	const mw_op del[] = {{CX_ROW_DELETE, "k2", 0}};

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 4, 1, true, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(mw_append(w, del, 1, true, &err), &err);
	CHECK(value_of(s, "k2", &n) == -1 && n == 3);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	CHECK(value_of(s, "k2", &n) == -1 && n == 3);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->nfragments == 2 && cx_manifest_deleted_count(m, 0) == 1);
	cx_manifest_free(m);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* A tombstone acknowledged from the WAL only (the writer went away without
 * sealing) is replayed by the next claim and still hides its key, the base
 * row included. */
CX_TEST(delete_replayed_from_the_wal_still_hides)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	uint32_t	n = 0;
	cx_err		err;
	const mw_op del[] = {{CX_ROW_DELETE, "k0", 0}, {CX_ROW_DELETE, "k3", 0}};

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 2, 1, true, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 2, 2, 1, false, &err), &err);
	REQUIRE_OK(mw_append(w, del, 2, false, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);	/* the crash */
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	CHECK(cx_sw_get_stats(w)->replayed_rows == 4);
	CHECK(value_of(s, "k0", &n) == -1 && n == 2);
	CHECK(value_of(s, "k3", &n) == -1);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	CHECK(value_of(s, "k0", &n) == -1 && n == 2);
	CHECK(value_of(s, "k2", &n) == 1);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * TRUNCATE and puts in one append: the rows after the marker are visible,
 * those ahead of it (same commit time) and every older row are hidden —
 * sealed or through the WAL, unmerged and after the merge, which records
 * the marker's time and writes only the rows after it.
 */
CX_TEST(truncate_then_puts_in_the_same_append)
{
	for (int sealed = 0; sealed < 2; sealed++)
	{
		cx_objstore *s = sw_store(sealed ? "/sealed" : "/wal");
		cx_shardwriter *w;
		cx_merge_result res;
		cx_manifest *m;
		uint32_t	n = 0;
		cx_err		err;
		const mw_op ops[] = {{CX_ROW_PUT, "a", 1}, {CX_ROW_PUT, "b", 1},
		{CX_ROW_DELETE, NULL, 0}, {CX_ROW_PUT, "c", 2}, {CX_ROW_PUT, "a", 2}};

		REQUIRE(s != NULL);
		REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
		REQUIRE_OK(mw_put(w, "k", 0, 3, 1, true, &err), &err);
		REQUIRE_OK(merge_and_drain(s, w, &err), &err);
		REQUIRE_OK(mw_put(w, "u", 0, 2, 1, sealed, &err), &err);
		REQUIRE_OK(mw_append(w, ops, 5, sealed, &err), &err);
		if (!sealed)
			REQUIRE_OK(cx_sw_seal(w, &err), &err);
		CHECK(value_of(s, "a", &n) == 2 && n == 2);
		CHECK(value_of(s, "c", &n) == 2 && value_of(s, "b", &n) == -1);
		REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
		CHECK(res.rows_written == 2);
		REQUIRE_OK(cx_sw_drain_through(w, res.merged_through, &err), &err);
		CHECK(value_of(s, "a", &n) == 2 && n == 2);
		CHECK(value_of(s, "c", &n) == 2);
		REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
		CHECK(m->truncated_before_us > 0 && m->nfragments == 1);
		CHECK(strcmp(m->operation, "truncate") == 0);
		cx_manifest_free(m);
		REQUIRE_OK(cx_sw_close(w, false, &err), &err);
		cx_obj_close(s);
	}
}

/*
 * A marker of one shard hides another shard's older rows, unmerged and in
 * the base, but not its later ones; after its merge the base records the
 * time, no longer lists the fragments wholly before it, and the other
 * shard's older unmerged rows stay hidden through their own merge.  A
 * version pinned before the truncation still reads its rows.
 */
CX_TEST(truncate_hides_every_shard_and_layer_before_it)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *a;
	cx_shardwriter *b;
	cx_manifest *m;
	mw_rows		r;
	uint64_t	pinned;
	uint32_t	n = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
	REQUIRE_OK(mw_writer(s, "b", true, &b, &err), &err);
	REQUIRE_OK(mw_put(a, "k", 0, 3, 1, true, &err), &err);
	REQUIRE_OK(mw_put(b, "x", 0, 2, 1, true, &err), &err);
	REQUIRE_OK(merge_and_drain(s, b, &err), &err);
	REQUIRE_OK(mw_put(b, "y", 0, 2, 1, true, &err), &err);	/* unmerged */
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	pinned = m->version;
	cx_manifest_free(m);
	sleep_ms(2);
	REQUIRE_OK(mw_truncate(a, true, &err), &err);
	sleep_ms(2);
	REQUIRE_OK(mw_put(b, "z", 0, 1, 7, true, &err), &err);	/* after it */
	CHECK(value_of(s, "z0", &n) == 7 && n == 1);
	REQUIRE_OK(merge_and_drain(s, a, &err), &err);
	CHECK(value_of(s, "z0", &n) == 7 && n == 1);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->truncated_before_us > 0);
	CHECK(m->nfragments == 0);	/* shard b's x fragment is gone */
	cx_manifest_free(m);
	REQUIRE_OK(merge_and_drain(s, b, &err), &err);
	CHECK(value_of(s, "z0", &n) == 7 && n == 1);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->nfragments == 1 && m->fragments[0].rows == 1);
	cx_manifest_free(m);
	REQUIRE_OK(mw_scan_version(s, pinned, NULL, &r, &err), &err);
	CHECK(r.n == 2 && mw_count(&r, "x1", NULL) == 1);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(a, false, &err), &err);
	REQUIRE_OK(cx_sw_close(b, false, &err), &err);
	cx_obj_close(s);
}
