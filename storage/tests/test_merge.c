/*
 * test_merge.c — merging shard generations into the base (cx_merge.h):
 * exactly-once across merge, crash between commit and drain, caps and
 * progress, upserts, cross-shard ordering, tombstones, racing merges.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "table/cx_commit.h"
#include "util/cx_failpoint.h"
#include "merge/cx_merge.h"
#include "cx_test.h"
#include "mw_util.h"

static cx_objstore *
open_store(const char *suffix)
{
	cx_objstore *s = NULL;
	cx_err		err;

	if (cx_objstore_open(cx_test_uri(suffix), NULL, 0, &s, &err) != CX_OK)
		return NULL;
	return s;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};

	nanosleep(&ts, NULL);
}

static cx_merge_options
merge_opts(uint32_t max_generations, uint64_t max_bytes)
{
	cx_merge_options o;

	cx_merge_options_default(&o);
	o.max_generations = max_generations;
	o.max_bytes = max_bytes;
	return o;
}

CX_TEST(merge_generations_into_one_base_commit)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_manifest *before;
	cx_manifest *after;
	cx_merge_result res;
	mw_rows r1;
	mw_rows r2;
	mw_rows r3;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int g = 0; g < 5; g++)
		REQUIRE_OK(mw_put(w, "k", g * 10, 10, g, true, &err), &err);
	CHECK(cx_sw_pending_generations(w) == 5);
	REQUIRE_OK(mw_scan(s, NULL, &r1, &err), &err);
	CHECK(r1.n == 50 && r1.pending == 5);
	REQUIRE_OK(cx_manifest_load_latest(s, &before, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.generations == 5 && res.merged_through == 5);
	CHECK(res.rows_written == 50 && res.rows_replaced == 0);
	CHECK(res.base_version == before->version + 1);
	REQUIRE_OK(cx_manifest_load_latest(s, &after, &err), &err);
	CHECK(after->version == res.base_version);
	CHECK(strcmp(after->operation, "merge") == 0);
	CHECK(cx_manifest_merged_gen(after, "a") == 5);
	CHECK(after->nfragments == before->nfragments + 1);
	CHECK(cx_manifest_rows(after) == 50);
	/* merged, not drained: readers skip the merged generations */
	REQUIRE_OK(mw_scan(s, NULL, &r2, &err), &err);
	CHECK(mw_rows_equal(&r1, &r2) && r2.pending == 0);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	CHECK(cx_sw_pending_generations(w) == 0);
	REQUIRE_OK(mw_scan(s, NULL, &r3, &err), &err);
	CHECK(mw_rows_equal(&r1, &r3));
	for (uint32_t i = 0; i < r3.n; i++)
		CHECK(r3.r[i].tags_ok);
	/* nothing left: a merge is a no-op */
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.generations == 0 && res.base_version == 0);
	mw_rows_free(&r1);
	mw_rows_free(&r2);
	mw_rows_free(&r3);
	cx_manifest_free(before);
	cx_manifest_free(after);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* A crash after the base commit and before the drain (the failpoint makes
 * the merge fail there): no duplicates, and the next merge converges. */
CX_TEST(merge_crash_between_commit_and_drain_duplicates_nothing)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	mw_rows r1;
	mw_rows r2;
	mw_rows r3;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int g = 0; g < 3; g++)
		REQUIRE_OK(mw_put(w, "k", g * 5, 5, g, true, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 1, 100, true, &err), &err);	/* upsert k0 */
	REQUIRE_OK(mw_scan(s, NULL, &r1, &err), &err);
	CHECK(r1.n == 15);

	REQUIRE_OK(cx_failpoint_set("merge.after_commit=error", &err), &err);
	CHECK_CODE(cx_merge_shard(s, "a", NULL, &res, &err), CX_ERR_IO);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	/* committed, not drained: the shard still lists every generation */
	CHECK(cx_sw_manifest(w)->ngens == 4);
	REQUIRE_OK(mw_scan(s, NULL, &r2, &err), &err);
	CHECK(mw_rows_equal(&r1, &r2) && r2.pending == 0);

	/* more writes, then a second merge: skips what is merged, converges */
	REQUIRE_OK(mw_put(w, "k", 1, 1, 200, true, &err), &err);	/* upsert k1 */
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.generations == 1 && res.merged_through == 5);
	CHECK(res.rows_replaced == 1);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	CHECK(cx_sw_manifest(w)->ngens == 0);
	REQUIRE_OK(mw_scan(s, NULL, &r3, &err), &err);
	{
		int64_t		v = -1;

		CHECK(r3.n == 15);
		CHECK(mw_count(&r3, "k0", &v) == 1 && v == 100);
		CHECK(mw_count(&r3, "k1", &v) == 1 && v == 200);
		CHECK(mw_count(&r3, "k14", &v) == 1 && v == 2);
	}
	mw_rows_free(&r1);
	mw_rows_free(&r2);
	mw_rows_free(&r3);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* A failure after the upload and before the commit changes nothing. */
CX_TEST(merge_failure_before_commit_changes_nothing)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_manifest *m;
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 4, 1, true, &err), &err);
	REQUIRE_OK(cx_failpoint_set("merge.after_upload=error", &err), &err);
	CHECK_CODE(cx_merge_shard(s, "a", NULL, &res, &err), CX_ERR_IO);
	CHECK(cx_failpoint_hits("merge.after_upload") == 1);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(cx_manifest_merged_gen(m, "a") == 0 && m->nfragments == 0);
	cx_manifest_free(m);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 4 && r.pending == 1);
	mw_rows_free(&r);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.generations == 1);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 4 && r.pending == 0);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Generations beyond the caps, or sealed after the merge read the shard,
 * are neither merged nor drained. */
CX_TEST(merge_caps_and_later_generations_survive_the_drain)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_merge_options o = merge_opts(3, UINT64_MAX);
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int g = 0; g < 7; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.generations == 3 && res.merged_through == 3);
	/* sealed after the merge, before the drain */
	REQUIRE_OK(mw_put(w, "k", 7, 1, 7, true, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE(cx_sw_manifest(w)->ngens == 5);
	CHECK(cx_sw_manifest(w)->gens[0].gen == 4 &&
		  cx_sw_manifest(w)->gens[4].gen == 8);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 8 && r.pending == 5);
	mw_rows_free(&r);

	/* max_bytes: below one generation's size still merges one (progress) */
	o = merge_opts(100, 1);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.generations == 1 && res.merged_through == 4);
	/* room for exactly two generations (the shard still lists gen 4) */
	o = merge_opts(100, cx_sw_manifest(w)->gens[1].fragment.size +
				   cx_sw_manifest(w)->gens[2].fragment.size);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.generations == 2 && res.merged_through == 6);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.generations == 2 && res.merged_through == 8);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	CHECK(cx_sw_manifest(w)->ngens == 0);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 8 && r.pending == 0);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* One generation larger than max_bytes still merges, alone. */
CX_TEST(merge_huge_generation_still_makes_progress)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_merge_options o = merge_opts(8, 1024);
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "big", 0, 20000, 7, true, &err), &err);
	REQUIRE_OK(mw_put(w, "small", 0, 1, 7, true, &err), &err);
	CHECK(cx_sw_manifest(w)->gens[0].fragment.size > 1024);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.generations == 1 && res.rows_written == 20000);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 20001);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Same key in generation 1 and 3: the generation-3 row wins before the
 * merge, after one merge, and after merging in two steps (the base row is
 * then replaced through a deletion vector). */
CX_TEST(merge_upsert_newest_wins_in_every_order)
{
	for (int steps = 1; steps <= 2; steps++)
	{
		cx_objstore *s = open_store(steps == 1 ? "/one" : "/two");
		cx_shardwriter *w;
		cx_merge_result res;
		cx_merge_options o = merge_opts(1, UINT64_MAX);
		mw_rows r;
		int64_t		v = -1;
		cx_err		err;

		REQUIRE(s != NULL);
		REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
		REQUIRE_OK(mw_put(w, "k", 0, 10, 1, true, &err), &err);
		REQUIRE_OK(mw_put(w, "x", 0, 3, 2, true, &err), &err);
		REQUIRE_OK(mw_put(w, "k", 5, 1, 3, true, &err), &err);
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == 13 && mw_count(&r, "k5", &v) == 1 && v == 3);
		mw_rows_free(&r);
		if (steps == 1)
		{
			REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
			CHECK(res.generations == 3 && res.rows_written == 13);
			CHECK(res.rows_replaced == 0);
		}
		else
		{
			REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
			CHECK(res.generations == 1);
			/* gen 1 in the base, gen 3 unmerged: gen 3 still wins */
			REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
			CHECK(r.n == 13 && mw_count(&r, "k5", &v) == 1 && v == 3);
			mw_rows_free(&r);
			o.max_generations = 2;
			REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
			CHECK(res.generations == 2 && res.rows_replaced == 1);
		}
		REQUIRE_OK(mw_drain(s, w, &err), &err);
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == 13 && mw_count(&r, "k5", &v) == 1 && v == 3);
		CHECK(r.stats.keymap_keys == 0);	/* nothing unmerged */
		mw_rows_free(&r);
		REQUIRE_OK(cx_sw_close(w, false, &err), &err);
		cx_obj_close(s);
	}
}

/* Two shards write the same key; the later commit wins whichever shard is
 * merged first, and before any merge. */
CX_TEST(merge_two_shards_later_commit_wins_both_orders)
{
	for (int order = 0; order < 2; order++)
	{
		cx_objstore *s = open_store(order == 0 ? "/ab" : "/ba");
		cx_shardwriter *a;
		cx_shardwriter *b;
		cx_merge_result res;
		mw_rows r;
		int64_t		v = -1;
		cx_err		err;

		REQUIRE(s != NULL);
		REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
		REQUIRE_OK(mw_writer(s, "b", true, &b, &err), &err);
		REQUIRE_OK(mw_put(b, "k", 0, 4, 10, true, &err), &err);	/* older */
		sleep_ms(2);
		REQUIRE_OK(mw_put(a, "k", 2, 4, 20, true, &err), &err);	/* newer */
		sleep_ms(2);
		REQUIRE_OK(mw_put(b, "k", 5, 1, 30, true, &err), &err);	/* newest */
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == 6);
		CHECK(mw_count(&r, "k1", &v) == 1 && v == 10);
		CHECK(mw_count(&r, "k3", &v) == 1 && v == 20);
		CHECK(mw_count(&r, "k5", &v) == 1 && v == 30);
		mw_rows_free(&r);
		REQUIRE_OK(cx_merge_shard(s, order == 0 ? "a" : "b", NULL, &res, &err), &err);
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == 6);
		CHECK(mw_count(&r, "k3", &v) == 1 && v == 20);
		CHECK(mw_count(&r, "k5", &v) == 1 && v == 30);
		mw_rows_free(&r);
		REQUIRE_OK(cx_merge_shard(s, order == 0 ? "b" : "a", NULL, &res, &err), &err);
		REQUIRE_OK(mw_drain(s, a, &err), &err);
		REQUIRE_OK(mw_drain(s, b, &err), &err);
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == 6 && r.pending == 0);
		CHECK(mw_count(&r, "k0", &v) == 1 && v == 10);
		CHECK(mw_count(&r, "k2", &v) == 1 && v == 20);
		CHECK(mw_count(&r, "k3", &v) == 1 && v == 20);
		CHECK(mw_count(&r, "k4", &v) == 1 && v == 20);
		CHECK(mw_count(&r, "k5", &v) == 1 && v == 30);
		mw_rows_free(&r);
		REQUIRE_OK(cx_sw_close(a, false, &err), &err);
		REQUIRE_OK(cx_sw_close(b, false, &err), &err);
		cx_obj_close(s);
	}
}

/*
 * A key written by two shards is a cross-shard key conflict, counted by the
 * merge that judges the other shard's base row, whether that row is older
 * (shadowed) or newer (shadowing); keys of one shard only are not.  Merged
 * fragments record their shard.
 */
CX_TEST(merge_counts_cross_shard_key_conflicts)
{
	for (int newer_base = 0; newer_base < 2; newer_base++)
	{
		cx_objstore *s = open_store(newer_base ? "/newer" : "/older");
		cx_shardwriter *a;
		cx_shardwriter *b;
		cx_merge_result res;
		cx_manifest *m;
		int64_t		v = -1;
		mw_rows		r;
		cx_err		err;

		REQUIRE(s != NULL);
		REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
		REQUIRE_OK(mw_writer(s, "b", true, &b, &err), &err);
		REQUIRE_OK(mw_put(newer_base ? b : a, "k", 0, 2, 1, true, &err), &err);
		sleep_ms(2);
		REQUIRE_OK(mw_put(newer_base ? a : b, "k", 1, 2, 2, true, &err), &err);
		REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
		CHECK(res.key_conflicts == 0 && res.key_conflict_example[0] == '\0');
		REQUIRE_OK(cx_merge_shard(s, "b", NULL, &res, &err), &err);
		/* k1 is the one key both wrote */
		CHECK(res.key_conflicts == 1 &&
			  strcmp(res.key_conflict_example, "k1") == 0);
		CHECK(res.rows_replaced == (newer_base ? 0 : 1));
		REQUIRE_OK(mw_drain(s, a, &err), &err);
		REQUIRE_OK(mw_drain(s, b, &err), &err);
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == 3 && mw_count(&r, "k1", &v) == 1 && v == 2);
		mw_rows_free(&r);
		REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
		CHECK(m->nfragments == 2 &&
			  strcmp(m->fragments[0].origin_shard, "a") == 0 &&
			  strcmp(m->fragments[1].origin_shard, "b") == 0);
		cx_manifest_free(m);
		REQUIRE_OK(cx_sw_close(a, false, &err), &err);
		REQUIRE_OK(cx_sw_close(b, false, &err), &err);
		cx_obj_close(s);
	}
}

/*
 * A tombstone hides the key before and after its merge.  Across shards it
 * must also keep hiding an OLDER version that another shard merges later:
 * that is why merges write winning tombstones into the base.
 */
CX_TEST(merge_tombstones_hide_across_shards)
{
	cx_objstore *s = open_store("/store");
	cx_merge_result res;
	mw_rows r;
	int64_t		v = -1;
	cx_err		err;
	const mw_genrow old_rows[] = {{"k1", 1, 100, false}, {"k2", 2, 100, false},
	{"k3", 3, 100, false}};
	const mw_genrow other[] = {{"k2", 22, 250, false}, {"k4", 4, 250, false}};
	const mw_genrow tombs[] = {{"k1", 0, 300, true}, {"k2", 0, 300, true}};
	const mw_genrow revive[] = {{"k1", 111, 400, false}};

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_fake_seal(s, "f", old_rows, 3, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &res, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "g", other, 2, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", tombs, 2, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 2 && mw_count(&r, "k3", NULL) == 1 && mw_count(&r, "k4", NULL) == 1);
	mw_rows_free(&r);
	/* merge the tombstones: the base rows of k1 and k2 get deleted */
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &res, &err), &err);
	CHECK(res.rows_replaced == 2 && res.rows_written == 2);
	REQUIRE_OK(mw_fake_drain(s, "f", &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 2 && mw_count(&r, "k2", NULL) == 0);
	mw_rows_free(&r);
	/* shard g's older k2 (ts 250 < 300) merges later: still hidden */
	REQUIRE_OK(cx_merge_shard(s, "g", NULL, &res, &err), &err);
	REQUIRE_OK(mw_fake_drain(s, "g", &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 2 && mw_count(&r, "k2", NULL) == 0 && mw_count(&r, "k4", NULL) == 1);
	mw_rows_free(&r);
	/* a newer write brings the key back */
	REQUIRE_OK(mw_fake_seal(s, "g", revive, 1, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(mw_count(&r, "k1", &v) == 1 && v == 111);
	mw_rows_free(&r);
	REQUIRE_OK(cx_merge_shard(s, "g", NULL, &res, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 3 && mw_count(&r, "k1", &v) == 1 && v == 111);
	mw_rows_free(&r);
	cx_obj_close(s);
}

/* unique_key false only lets the writer accept an insert of a live key: the
 * store still de-duplicates by key, in scans and merges (newest wins). */
CX_TEST(merge_and_scan_dedup_without_unique_key)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	mw_rows r;
	int64_t		v = -1;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", false, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 3, 1, true, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 3, 2, true, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 3 && mw_count(&r, "k1", &v) == 1 && v == 2);
	mw_rows_free(&r);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.rows_written == 3 && res.rows_replaced == 0);
	REQUIRE_OK(mw_put(w, "k", 0, 3, 3, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.rows_written == 3 && res.rows_replaced == 3);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 3 && mw_count(&r, "k1", &v) == 1 && v == 3);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Every row has a commit time: a base fragment without the hidden columns
 * (as only a direct append could write one) is refused by scans and merges,
 * naming it. */
CX_TEST(merge_and_scan_refuse_fragments_without_hidden_columns)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_fragw   *fw;
	cx_fragment_info fi;
	cx_merge_result res;
	uint64_t	version;
	mw_rows r;
	char		key[64];
	cx_datum	d[3];
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(cx_fragment_new_key(key, sizeof(key), &err), &err);
	REQUIRE_OK(cx_fragw_open(s, key, mw_schema(), NULL, &fw, &err), &err);
	memset(d, 0, sizeof(d));
	d[0].v.bytes.ptr = (const uint8_t *) "k1";
	d[0].v.bytes.len = 2;
	REQUIRE_OK(cx_fragw_append(fw, d, &err), &err);
	REQUIRE_OK(cx_fragw_finish(fw, &fi, &err), &err);
	REQUIRE_OK(mw_commit_fragments(s, mw_schema(), &fi, 1, &version, &err), &err);
	cx_fragment_info_free(&fi);
	CHECK_CODE(mw_scan(s, NULL, &r, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, key) && strstr(err.msg, "lacks the hidden"));
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 1, 1, 9, true, &err), &err);
	CHECK_CODE(cx_merge_shard(s, "a", NULL, &res, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, key) != NULL);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Base fragments whose key range cannot hold a merged key are not read. */
CX_TEST(merge_skips_base_fragments_by_key_range)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_objstats before;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int f = 0; f < 12; f++)
	{
		char		prefix[8];

		snprintf(prefix, sizeof(prefix), "%c", 'a' + f);
		REQUIRE_OK(mw_put(w, prefix, 0, 50, f, true, &err), &err);
		REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	}
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_put(w, "c", 10, 5, 99, true, &err), &err);
	before = s->stats;
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.rows_replaced == 5);
	/* Reads: manifests and hints (a handful), the generation (2), one base
	 * fragment's keys (2), the generation again to write: far fewer than
	 * the 24 reading every base fragment would cost. */
	CHECK(s->stats.gets - before.gets <= 12);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Merging every 8 generations keeps pending generations (and so the
 * fragments a scan opens beyond the base) bounded. */
CX_TEST(merge_every_eight_keeps_pending_bounded)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	mw_rows r;
	uint32_t	max_pending = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int i = 0; i < 100; i++)
	{
		REQUIRE_OK(mw_put(w, "k", i % 37, 1, i, true, &err), &err);
		if (cx_sw_pending_generations(w) > max_pending)
			max_pending = cx_sw_pending_generations(w);
		if (cx_sw_pending_generations(w) >= 8)
		{
			REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
			REQUIRE_OK(mw_drain(s, w, &err), &err);
		}
	}
	CHECK(max_pending <= 8);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 37 && r.pending < 8);
	{
		cx_manifest *m;

		REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
		CHECK(r.stats.fragments_opened <= 2 * r.pending + m->nfragments);
		cx_manifest_free(m);
	}
	for (int k = 0; k < 37; k++)
	{
		char		id[16];
		int64_t		v = -1;

		snprintf(id, sizeof(id), "k%d", k);
		CHECK(mw_count(&r, id, &v) == 1 && v % 37 == k && v + 37 >= 100);
	}
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Two shards merging concurrently, racing for base versions
 * -------------------------------------------------------------------------- */

typedef struct racer
{
	const char *shard;
	int			merges;
	cx_code		rc;
	cx_err		err;
} racer;

static void *
race_merges(void *arg)
{
	racer	   *rc = arg;
	cx_objstore *s = open_store("/store");
	cx_merge_options o = merge_opts(2, UINT64_MAX);

	if (s == NULL)
	{
		rc->rc = CX_ERR_IO;
		return NULL;
	}
	for (int i = 0; i < 64; i++)
	{
		cx_merge_result res;

		rc->rc = cx_merge_shard(s, rc->shard, &o, &res, &rc->err);
		if (rc->rc != CX_OK || res.generations == 0)
			break;
		rc->merges++;
	}
	cx_obj_close(s);
	return NULL;
}

CX_TEST(merge_racing_shards_every_key_exactly_once)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *a;
	cx_shardwriter *b;
	pthread_t	ta;
	pthread_t	tb;
	racer		ra = {"a", 0, CX_OK, {0}};
	racer		rb = {"b", 0, CX_OK, {0}};
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
	REQUIRE_OK(mw_writer(s, "b", true, &b, &err), &err);
	/* a writes k0..k99 (older), b overwrites k50..k149 (newer), in
	 * interleaved generations of 10 keys */
	for (int g = 0; g < 10; g++)
	{
		REQUIRE_OK(mw_put(a, "k", g * 10, 10, 1, true, &err), &err);
		sleep_ms(1);
	}
	for (int g = 0; g < 10; g++)
		REQUIRE_OK(mw_put(b, "k", 50 + g * 10, 10, 2, true, &err), &err);
	pthread_create(&ta, NULL, race_merges, &ra);
	pthread_create(&tb, NULL, race_merges, &rb);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	REQUIRE_OK(ra.rc, &ra.err);
	REQUIRE_OK(rb.rc, &rb.err);
	CHECK(ra.merges == 5 && rb.merges == 5);
	REQUIRE_OK(mw_drain(s, a, &err), &err);
	REQUIRE_OK(mw_drain(s, b, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 150 && r.pending == 0);
	for (int k = 0; k < 150; k++)
	{
		char		id[16];
		int64_t		v = -1;

		snprintf(id, sizeof(id), "k%d", k);
		CHECK(mw_count(&r, id, &v) == 1 && v == (k < 50 ? 1 : 2));
	}
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(a, false, &err), &err);
	REQUIRE_OK(cx_sw_close(b, false, &err), &err);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Interleaving work into a merge's commit, deterministically: a handle whose
 * first put of a base version first runs another merge to the end (on a
 * second handle), so the interrupted merge loses the race for that version
 * and has to rebase on the other one's commit; or first seals a generation
 * with the shard's writer.
 * -------------------------------------------------------------------------- */

static cx_objstore_ops hooked_ops;
static const cx_objstore_ops *real_ops;
static const char *hook_shard;	/* merge this shard first; NULL once done */
static const char *hook_store;	/* cx_test_uri suffix of the store */
static cx_shardwriter *hook_sealer;	/* or: seal a generation with it */
static cx_merge_result hook_res;
static cx_code hook_rc;

static cx_code
hooked_put(cx_objstore *s, const char *key, const void *data, size_t len,
		   cx_put_mode mode, cx_err *err)
{
	if (hook_sealer != NULL && strncmp(key, "_versions/", 10) == 0)
	{
		cx_shardwriter *w = hook_sealer;
		cx_err		e2;

		hook_sealer = NULL;		/* its own puts come through here too */
		hook_rc = mw_put(w, "during", 0, 1, 5, true, &e2);
	}
	if (hook_shard != NULL && strncmp(key, "_versions/", 10) == 0)
	{
		const char *shard = hook_shard;
		cx_objstore *other = open_store(hook_store);
		cx_err		e2;

		hook_shard = NULL;
		hook_rc = other == NULL ? CX_ERR_IO :
			cx_merge_shard(other, shard, NULL, &hook_res, &e2);
		cx_obj_close(other);
	}
	return real_ops->put(s, key, data, len, mode, err);
}

/* Routes s's calls through hooked_ops, a copy of its own the caller
 * changes; returns the ops to restore. */
static const cx_objstore_ops *
hook_store_ops(cx_objstore *s)
{
	real_ops = s->ops;
	hooked_ops = *s->ops;
	s->ops = &hooked_ops;
	return real_ops;
}

/* Runs a merge of `shard` on s with a merge of `first` slipped in before
 * its commit. */
static cx_code
merge_interrupted(cx_objstore *s, const char *suffix, const char *shard,
				  const char *first, cx_merge_result *res, cx_err *err)
{
	const cx_objstore_ops *saved = hook_store_ops(s);
	cx_code		rc;

	hooked_ops.put = hooked_put;
	hook_shard = first;
	hook_store = suffix;
	hook_rc = CX_ERR_INVALID;
	rc = cx_merge_shard(s, shard, NULL, res, err);
	s->ops = saved;
	hook_shard = NULL;
	return rc;
}

static cx_shardwriter *hook_first_writer;	/* its first append, before the
											 * merge's first shard read */

static cx_code
hooked_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		   cx_buf *out, cx_err *err)
{
	if (hook_first_writer != NULL && strncmp(key, "_shards/", 8) == 0)
	{
		cx_err		e2;

		hook_rc = mw_put(hook_first_writer, "first", 0, 2, 1, true, &e2);
		hook_first_writer = NULL;
	}
	return real_ops->get(s, key, offset, len, out, err);
}

/* A merge that starts while a writer makes the store's first append (it
 * records the schema in the base, then seals the first generation): the
 * merge reads the shard manifest first, so the base it reads next has the
 * schema, and it merges the generation.  Read the other way round it met
 * a generation newer than the schema-less base it had read and called the
 * store corrupt (found by the simulation, seed 506). */
CX_TEST(merge_racing_the_first_append_finds_the_schema)
{
	cx_objstore *s = open_store("/store");
	cx_objstore *ws = open_store("/store");
	const cx_objstore_ops *saved;
	cx_shardwriter *w;
	cx_merge_result res;
	cx_err		err;
	cx_code		rc;

	REQUIRE(s != NULL && ws != NULL);
	REQUIRE_OK(mw_writer(ws, "a", true, &w, &err), &err);
	saved = hook_store_ops(s);
	hooked_ops.get = hooked_get;
	hook_first_writer = w;
	hook_rc = CX_ERR_INVALID;
	rc = cx_merge_shard(s, "a", NULL, &res, &err);
	s->ops = saved;
	CHECK(hook_rc == CX_OK);
	if (rc != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	CHECK(rc == CX_OK && res.generations == 1 && res.rows_written == 2);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(ws);
	cx_obj_close(s);
}

/* Another merge of the same generations commits first: this one gets
 * CX_ERR_CONFLICT, commits nothing, and nothing is merged twice. */
CX_TEST(merge_same_generations_twice_conflicts)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_manifest *m;
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 3, 1, true, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 3, 3, 1, true, &err), &err);
	CHECK_CODE(merge_interrupted(s, "/store", "a", "a", &res, &err),
			   CX_ERR_CONFLICT);
	CHECK(strstr(err.msg, "another merge got there first") != NULL);
	CHECK(hook_rc == CX_OK && hook_res.generations == 2);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(cx_manifest_rows(m) == 6 && m->nfragments == 1);
	CHECK(cx_manifest_merged_gen(m, "a") == 2);
	cx_manifest_free(m);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 6);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Another shard's merge commits between our plan and our commit, with the
 * same keys: the rebase compares our new rows with its new rows and deletes
 * whichever is older, ours or theirs. */
CX_TEST(merge_rebase_rechecks_keys_against_fragments_committed_meanwhile)
{
	for (int newer_is_ours = 0; newer_is_ours < 2; newer_is_ours++)
	{
		const char *suffix = newer_is_ours ? "/ours" : "/theirs";
		cx_objstore *s = open_store(suffix);
		cx_shardwriter *a;
		cx_shardwriter *b;
		cx_shardwriter *older;
		cx_shardwriter *newer;
		cx_merge_result res;
		mw_rows r;
		int64_t		v = -1;
		cx_err		err;

		REQUIRE(s != NULL);
		REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
		REQUIRE_OK(mw_writer(s, "b", true, &b, &err), &err);
		older = newer_is_ours ? b : a;
		newer = newer_is_ours ? a : b;
		REQUIRE_OK(mw_put(older, "k", 0, 10, 1, true, &err), &err);
		sleep_ms(2);
		REQUIRE_OK(mw_put(newer, "k", 5, 10, 2, true, &err), &err);
		/* we merge a; b's merge slips in before our commit */
		REQUIRE_OK(merge_interrupted(s, suffix, "a", "b", &res, &err), &err);
		CHECK(hook_rc == CX_OK && hook_res.generations == 1);
		CHECK(res.generations == 1 && res.rows_written == 10);
		CHECK(res.rows_replaced == 5);	/* k5..k9, on whichever side */
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == 15 && r.pending == 0);
		for (int k = 0; k < 15; k++)
		{
			char		id[16];

			snprintf(id, sizeof(id), "k%d", k);
			CHECK(mw_count(&r, id, &v) == 1 && v == (k < 5 ? 1 : 2));
		}
		mw_rows_free(&r);
		REQUIRE_OK(cx_sw_close(a, false, &err), &err);
		REQUIRE_OK(cx_sw_close(b, false, &err), &err);
		cx_obj_close(s);
	}
}

/*
 * Another shard merges a TRUNCATE between our plan and our commit, dropping
 * the base fragment whose row our merge replaces: the rebase forgets that
 * deletion instead of failing, drops our new fragment if all its rows are
 * older than the truncation, and only the rows after it stay visible.
 */
CX_TEST(merge_rebase_after_a_truncation_merged_meanwhile)
{
	for (int later_row = 0; later_row < 2; later_row++)
	{
		const char *suffix = later_row ? "/later" : "/older";
		cx_objstore *s = open_store(suffix);
		cx_shardwriter *a;
		cx_shardwriter *b;
		cx_merge_result res;
		cx_manifest *m;
		mw_rows		r;
		int64_t		v = -1;
		cx_err		err;

		REQUIRE(s != NULL);
		REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
		REQUIRE_OK(mw_writer(s, "b", true, &b, &err), &err);
		REQUIRE_OK(mw_put(a, "k", 0, 3, 1, true, &err), &err);
		REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
		REQUIRE_OK(mw_drain(s, a, &err), &err);
		sleep_ms(2);
		REQUIRE_OK(mw_put(b, "k", 1, 1, 2, true, &err), &err);	/* replaces k1 */
		sleep_ms(2);
		REQUIRE_OK(mw_truncate(a, true, &err), &err);
		sleep_ms(2);
		if (later_row)
			REQUIRE_OK(mw_put(b, "z", 0, 1, 3, true, &err), &err);
		/* we merge b; a's merge (the truncation) slips in before our commit */
		REQUIRE_OK(merge_interrupted(s, suffix, "b", "a", &res, &err), &err);
		CHECK(hook_rc == CX_OK && hook_res.generations == 1);
		CHECK(res.generations == 1 + (uint32_t) later_row);
		REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
		CHECK(m->truncated_before_us > 0);
		/* shard a's fragment is gone; ours, holding k1 (hidden by the time)
		 * and z0, stays only if it holds z0 */
		CHECK(m->nfragments == (uint32_t) later_row);
		cx_manifest_free(m);
		REQUIRE_OK(mw_drain(s, a, &err), &err);
		REQUIRE_OK(mw_drain(s, b, &err), &err);
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		CHECK(r.n == (uint32_t) later_row);
		CHECK(!later_row || (mw_count(&r, "z0", &v) == 1 && v == 3));
		mw_rows_free(&r);
		REQUIRE_OK(cx_sw_close(a, false, &err), &err);
		REQUIRE_OK(cx_sw_close(b, false, &err), &err);
		cx_obj_close(s);
	}
}

/* A generation sealed while the merge runs (between its plan and its
 * commit) is neither merged nor drained. */
CX_TEST(merge_generation_sealed_during_merge_survives_drain)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 3, 1, true, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 3, 3, 1, true, &err), &err);
	hook_sealer = w;
	hook_rc = CX_ERR_INVALID;
	REQUIRE_OK(merge_interrupted(s, "/store", "a", NULL, &res, &err), &err);
	REQUIRE_OK(hook_rc, &err);
	CHECK(res.generations == 2 && res.merged_through == 2);
	CHECK(cx_sw_manifest(w)->ngens == 3);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE(cx_sw_manifest(w)->ngens == 1);
	CHECK(cx_sw_manifest(w)->gens[0].gen == 3);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 7 && r.pending == 1 && mw_count(&r, "during0", NULL) == 1);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/*
 * A merge watermark noted without a commit (cx_sw_note_merged) takes the
 * merged generations out of pending at once and out of the shard manifest
 * with the next seal; and cx_sw_prepare_append reads the newer base and
 * its new key index segment ahead, so the next request's append reads
 * nothing.
 */
CX_TEST(merge_noted_watermark_rides_on_the_next_seal_and_is_read_ahead)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_merge_options o = merge_opts(3, UINT64_MAX);
	cx_keyindex_result kr;
	cx_objstats before;
	uint64_t	version;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int g = 0; g < 6; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	version = cx_sw_manifest(w)->version;
	before = s->stats;
	REQUIRE_OK(cx_sw_note_merged(w, res.merged_through, &err), &err);
	CHECK(s->stats.puts == before.puts && s->stats.gets == before.gets);
	CHECK(cx_sw_manifest(w)->version == version &&
		  cx_sw_manifest(w)->ngens == 6 && cx_sw_pending_generations(w) == 3);
	CHECK_CODE(cx_sw_note_merged(w, 7, &err), CX_ERR_INVALID);
	REQUIRE_OK(mw_put(w, "k", 6, 1, 6, true, &err), &err);
	CHECK(cx_sw_manifest(w)->ngens == 4 && cx_sw_manifest(w)->gens[0].gen == 4);

	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	REQUIRE_OK(cx_keyindex_update_table(s, NULL, NULL, &kr, &err), &err);
	REQUIRE_OK(cx_sw_note_merged(w, res.merged_through, &err), &err);
	cx_sw_prepare_append(w, true);
	before = s->stats;
	REQUIRE_OK(mw_put(w, "k", 7, 1, 7, true, &err), &err);
	CHECK(s->stats.gets == before.gets && s->stats.heads == before.heads);
	CHECK(cx_sw_manifest(w)->ngens == 2);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/*
 * A drain given the merge's own result reads nothing (no base manifest GET)
 * and removes exactly what mw_drain would: the generations at or below
 * the committed watermark, not one sealed after the merge.  A watermark no
 * merge could have committed is refused; a stale one changes nothing.
 */
CX_TEST(merge_drain_through_the_merge_result_reads_nothing)
{
	cx_objstore *s = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_merge_options o = merge_opts(3, UINT64_MAX);
	cx_objstats before;
	uint64_t	version;
	mw_rows		r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int g = 0; g < 7; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	CHECK(res.generations == 3 && res.merged_through == 3);
	/* sealed after the merge, before the drain */
	REQUIRE_OK(mw_put(w, "k", 7, 1, 7, true, &err), &err);

	version = cx_sw_manifest(w)->version;
	CHECK_CODE(cx_sw_drain_through(w, 9, &err), CX_ERR_INVALID);
	CHECK(cx_sw_manifest(w)->version == version && cx_sw_manifest(w)->ngens == 8);

	before = s->stats;
	REQUIRE_OK(cx_sw_drain_through(w, res.merged_through, &err), &err);
	CHECK(s->stats.gets == before.gets && s->stats.heads == before.heads &&
		  s->stats.lists == before.lists);
	CHECK(s->stats.puts >= before.puts + 1);
	REQUIRE(cx_sw_manifest(w)->ngens == 5);
	CHECK(cx_sw_manifest(w)->gens[0].gen == 4 &&
		  cx_sw_manifest(w)->gens[4].gen == 8);
	CHECK(cx_sw_manifest(w)->version == version + 1);

	/* Stale: nothing listed at or below it any more, so no commit. */
	REQUIRE_OK(cx_sw_drain_through(w, 2, &err), &err);
	CHECK(cx_sw_manifest(w)->version == version + 1);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	CHECK(cx_sw_manifest(w)->version == version + 1);

	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 8 && r.pending == 5);
	mw_rows_free(&r);

	/* The rest, then a seal: the new generation stays listed. */
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.merged_through == 8);
	REQUIRE_OK(cx_sw_drain_through(w, res.merged_through, &err), &err);
	CHECK(cx_sw_manifest(w)->ngens == 0);
	REQUIRE_OK(mw_put(w, "k", 8, 1, 8, true, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 9, 1, 9, true, &err), &err);
	CHECK(cx_sw_manifest(w)->ngens == 2);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 10 && r.pending == 2);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/*
 * A maintenance handle merges one shard job after job: the shard manifest
 * comes through the handle's cache, probed on from the version the last
 * merge saw (a few HEADs), not from the shard hint, which a shard written by
 * sealed appends refreshes only every 64 versions.  Here the hint is set
 * back to the claim's version, as old as it may be.
 */
CX_TEST(merge_finds_the_shard_manifest_from_the_last_one_it_saw)
{
	cx_objstore *s = open_store("/store");
	cx_objstore *maint = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_merge_options o = merge_opts(64, UINT64_MAX);
	uint64_t	heads;
	cx_err		err;

	REQUIRE(s != NULL && maint != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int g = 0; g < 300; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	REQUIRE_OK(cx_shard_hint_write(s, "a", 1, &err), &err);
	REQUIRE_OK(cx_merge_shard(maint, "a", &o, &res, &err), &err);
	CHECK(res.generations == 64);
	for (int g = 300; g < 303; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	heads = maint->stats.heads;
	REQUIRE_OK(cx_merge_shard(maint, "a", &o, &res, &err), &err);
	CHECK(res.generations == 64 && res.merged_through == 128);
	/* the shard's +1, +3, +7, +5, +4 and the base's few (from the hint of
	 * version 1: 22) */
	CHECK(maint->stats.heads - heads <= 10);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(maint);
	cx_obj_close(s);
}

/*
 * A merge told the shard-manifest version its writer had when it asked
 * (cx_merge_options.shard_version) reads that version with one GET and
 * probes nothing on the shard; it merges the generations that version
 * lists, and those sealed since wait for the next merge.  The job's next
 * call takes the version from the handle's cache.  A version that is gone
 * falls back to the newest.
 */
CX_TEST(merge_from_the_shard_version_its_writer_names)
{
	cx_objstore *s = open_store("/store");
	cx_objstore *maint = open_store("/store");
	cx_shardwriter *w;
	cx_merge_result res;
	cx_merge_options o = merge_opts(64, UINT64_MAX);
	cx_objstats before;
	cx_err		err;

	REQUIRE(s != NULL && maint != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	for (int g = 0; g < 6; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	o.shard_version = cx_sw_manifest(w)->version;
	for (int g = 6; g < 8; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	before = maint->stats;
	REQUIRE_OK(cx_merge_shard(maint, "a", &o, &res, &err), &err);
	CHECK(res.generations == 6 && res.merged_through == 6);
	/* the base's lookup and a probe; the shard's newest found cold: 12 */
	CHECK(maint->stats.heads - before.heads <= 4);

	/* A job's next call, from the same version: the kept copy, no GET of it */
	for (int g = 8; g < 14; g++)
		REQUIRE_OK(mw_put(w, "k", g, 1, g, true, &err), &err);
	o.shard_version = cx_sw_manifest(w)->version;
	o.max_generations = 3;
	REQUIRE_OK(cx_merge_shard(maint, "a", &o, &res, &err), &err);
	before = maint->stats;
	REQUIRE_OK(cx_merge_shard(maint, "a", &o, &res, &err), &err);
	CHECK(res.generations == 3 && res.merged_through == 12);
	/* its generations, the base and its index: 6 (7 reading the version) */
	CHECK(maint->stats.gets - before.gets <= 6);
	o.max_generations = 64;

	o.shard_version = 1000;		/* never written */
	REQUIRE_OK(cx_merge_shard(maint, "a", &o, &res, &err), &err);
	CHECK(res.generations == 2 && res.merged_through == 14);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(maint);
	cx_obj_close(s);
}
