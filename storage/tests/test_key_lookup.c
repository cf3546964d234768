/*
 * test_key_lookup.c — scans restricted to given keys
 * (cx_tablescan_begin_keys): the rows they return are exactly those a full
 * scan returns for the keys (newest version, deletions and TRUNCATE
 * honoured, each key once), and they read only the base row groups holding
 * one of the keys.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/cx_merge.h"
#include "table/cx_key_index.h"
#include "cx_test.h"
#include "mw_util.h"

/* 3000 rows "k0".."k2999" (v 1) merged into a base of 500-row groups, then,
 * unmerged: k10 updated (v 2), k20 deleted, n1 new (v 3). */
static cx_code
build_store(cx_objstore *s, cx_shardwriter **w, cx_err *err)
{
	const mw_op later[] = {
		{CX_ROW_PUT, "k10", 2}, {CX_ROW_DELETE, "k20", 0}, {CX_ROW_PUT, "n1", 3}};
	cx_merge_options mo;
	cx_merge_result res;

	cx_merge_options_default(&mo);
	mo.fragment.rows_per_group = 500;
	if (mw_writer(s, "s1", false, w, err) != CX_OK ||
		mw_put(*w, "k", 0, 3000, 1, true, err) != CX_OK ||
		cx_merge_shard(s, "s1", &mo, &res, err) != CX_OK ||
		mw_append(*w, later, 3, true, err) != CX_OK)
		return err->code;
	return CX_OK;
}

/* Every key's rows in the lookup equal its rows in the full scan. */
static void
check_against_full_scan(const mw_rows *full, const mw_rows *got,
						const char *const *keys, int n)
{
	for (int i = 0; i < n; i++)
	{
		int64_t		vf = -1,
					vg = -1;

		CHECK(mw_count(full, keys[i], &vf) == mw_count(got, keys[i], &vg));
		CHECK(vf == vg);
	}
}

CX_TEST(key_lookup_reads_only_the_row_groups_of_its_keys)
{
	static const char *const keys[] = {"k10", "k20", "k2500", "n1", "zz", "k10"};
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w = NULL;
	mw_rows		full,
				got;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &w, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &full, &err), &err);
	REQUIRE_OK(mw_scan_keys(s, keys, 6, &got, &err), &err);
	CHECK(got.n == 3);
	CHECK(mw_count(&got, "k10", &v) == 1 && v == 2);
	CHECK(mw_count(&got, "k2500", &v) == 1 && v == 1);
	CHECK(mw_count(&got, "n1", &v) == 1 && v == 3);
	CHECK(mw_count(&got, "k20", NULL) == 0);
	check_against_full_scan(&full, &got, keys, 6);
	/* Merged in key order (byte-wise: k0 .. k1447 in group 0, k1899 ..
	 * k2347 in 2, k2348 .. k2798 in 3): k10 (group 0), k20 (2) and k2500
	 * (3); the other three unread */
	CHECK(got.stats.row_groups_read == 3 + 1);	/* and the generation's */
	CHECK(got.stats.row_groups_skipped == 3);
	CHECK(full.stats.row_groups_skipped == 0);
	mw_rows_free(&got);

	/* No keys: no rows, nothing read. */
	REQUIRE_OK(mw_scan_keys(s, keys, 0, &got, &err), &err);
	CHECK(got.n == 0 && got.stats.row_groups_read == 0);
	mw_rows_free(&got);
	mw_rows_free(&full);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* In a row group of many pages, a lookup of one key (found through the key
 * index) fetches the pages that hold its row, not the group's chunks
 * (cx_fragr_read_rows). */
CX_TEST(key_lookup_reads_only_the_pages_of_its_rows)
{
	static const char *const keys[] = {"a-rather-long-key-to-fill-pages-31234"};
	static const char *const absent[] = {"a-rather-long-key-to-fill-pages-31234x"};
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w = NULL;
	cx_merge_result res;
	cx_keyindex_result ires;
	mw_rows		got;
	uint64_t	full;
	uint64_t	one;
	uint64_t	none;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "s1", false, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "a-rather-long-key-to-fill-pages-", 0, 300000, 4, true,
					  &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "s1", NULL, &res, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &ires, &err), &err);
	s->stats.bytes_read = 0;
	REQUIRE_OK(mw_scan(s, NULL, &got, &err), &err);
	full = s->stats.bytes_read;
	CHECK(got.n == 300000);
	mw_rows_free(&got);
	s->stats.bytes_read = 0;
	REQUIRE_OK(mw_scan_keys(s, keys, 1, &got, &err), &err);
	one = s->stats.bytes_read;
	CHECK(got.n == 1 && mw_count(&got, keys[0], &v) == 1 && v == 4);
	mw_rows_free(&got);
	s->stats.bytes_read = 0;
	REQUIRE_OK(mw_scan_keys(s, absent, 1, &got, &err), &err);
	none = s->stats.bytes_read;
	CHECK(got.n == 0);
	/* Measured: 268 KB for the 5 groups, 5 KB for an absent key (manifest,
	 * the index segment), 17 KB for one key: 12 KB more, the footer, the
	 * offset indexes of its group and a page per column, where reading its
	 * group's chunks cost 65 KB. */
	CHECK((one - none) * 3 < full / 5);
	mw_rows_free(&got);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(key_lookup_honours_truncate)
{
	static const char *const keys[] = {"k5", "k6", "n1"};
	const mw_op after[] = {{CX_ROW_PUT, "k5", 9}};
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w = NULL;
	mw_rows		got;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &w, &err), &err);
	REQUIRE_OK(mw_truncate(w, true, &err), &err);
	REQUIRE_OK(mw_append(w, after, 1, true, &err), &err);
	REQUIRE_OK(mw_scan_keys(s, keys, 3, &got, &err), &err);
	CHECK(got.n == 1 && mw_count(&got, "k5", &v) == 1 && v == 9);
	mw_rows_free(&got);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* A delete merged from one shard hides the older row of its key that
 * another shard has not merged yet, in a lookup as in a full scan (the
 * lookup read the base's live rows only, so the older row came back;
 * found by the simulation, seed 177). */
CX_TEST(key_lookup_merged_delete_hides_older_row_of_another_shard)
{
	cx_objstore *s = mw_open_store();
	const mw_genrow older[] = {{"k", 3, 100, false}, {"x", 1, 100, false}};
	const mw_genrow put[] = {{"k", 5, 200, false}};
	const mw_genrow del[] = {{"k", 0, 300, true}};
	const char *const keys[] = {"k", "x"};
	cx_merge_result res;
	mw_rows full;
	mw_rows got;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_fake_seal(s, "g", older, 2, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", put, 1, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", del, 1, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &res, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &full, &err), &err);
	REQUIRE_OK(mw_scan_keys(s, keys, 2, &got, &err), &err);
	CHECK(mw_count(&full, "k", NULL) == 0);
	CHECK(mw_count(&got, "k", NULL) == 0);
	check_against_full_scan(&full, &got, keys, 2);
	mw_rows_free(&full);
	mw_rows_free(&got);
	cx_obj_close(s);
}
