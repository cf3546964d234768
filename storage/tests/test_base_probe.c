/*
 * test_base_probe.c — finding base rows by column value (cx_base_probe.h):
 * keys present, absent, deleted by a deletion vector and tombstoned; a
 * non-key column with several rows per value; bytes read bounded by the
 * fragments and row groups whose statistics may hold the values.
 */
#include <stdio.h>
#include <stdlib.h>

#include "merge/cx_merge.h"
#include "table/cx_base_probe.h"
#include "table/cx_probe_rows.h"
#include "cx_test.h"
#include "mw_util.h"

/* Seals rows as one generation of shard "f" and merges it into the base. */
static cx_code
seal_and_merge(cx_objstore *s, const mw_genrow *rows, int n,
			   const cx_merge_options *opt, cx_err *err)
{
	cx_merge_result res;

	if (mw_fake_seal(s, "f", rows, n, err) != CX_OK ||
		cx_merge_shard(s, "f", opt, &res, err) != CX_OK)
		return err->code;
	return CX_OK;
}

/*
 * Three base fragments:
 *   0: a1 a2 a3          (a1 deleted by a DV: fragment 1 holds a newer a1)
 *   1: a1 b1 b2          (b2 deleted by a DV: fragment 2 tombstones it;
 *                         merges write rows in key order)
 *   2: b2 (tombstone)
 * v is 7 for a2, a3, b1 and the tombstone.
 */
static cx_code
commit_three_fragments(cx_objstore *s, cx_err *err)
{
	static const mw_genrow g1[] = {
		{"a1", 1, 10, false}, {"a2", 7, 11, false}, {"a3", 7, 12, false}};
	static const mw_genrow g2[] = {
		{"b1", 7, 20, false}, {"b2", 2, 21, false}, {"a1", 3, 22, false}};
	static const mw_genrow g3[] = {{"b2", 7, 30, true}};

	if (seal_and_merge(s, g1, 3, NULL, err) != CX_OK ||
		seal_and_merge(s, g2, 3, NULL, err) != CX_OK ||
		seal_and_merge(s, g3, 1, NULL, err) != CX_OK)
		return err->code;
	return CX_OK;
}

/* The store and base version a test probes. */
typedef struct fixture
{
	cx_objstore *s;
	cx_manifest *m;
} fixture;

/* Opens the test's store with the three fragments committed. */
static bool
fixture_open(fixture *fx)
{
	cx_err		err;

	fx->m = NULL;
	fx->s = mw_open_store();
	if (fx->s == NULL || commit_three_fragments(fx->s, &err) != CX_OK ||
		cx_manifest_load_latest(fx->s, &fx->m, &err) != CX_OK)
		return false;
	return fx->m != NULL && fx->m->nfragments == 3;
}

static void
fixture_close(fixture *fx)
{
	cx_manifest_free(fx->m);
	if (fx->s != NULL)
		cx_obj_close(fx->s);
}

static cx_code
probe_strings(cx_objstore *s, const cx_manifest *m, uint32_t column,
			  const char *const *keys, uint32_t n, cx_probe_result *out,
			  cx_err *err)
{
	const uint8_t *values[8];
	size_t		lens[8];

	for (uint32_t i = 0; i < n; i++)
	{
		values[i] = (const uint8_t *) keys[i];
		lens[i] = strlen(keys[i]);
	}
	return cx_base_probe(s, m, column, values, lens, n, out, err);
}

static bool
hit_is(const cx_probe_hit *h, uint32_t value, uint32_t fragment, uint64_t row,
	   const char *key, bool tombstone)
{
	return h->value == value && h->fragment == fragment && h->row == row &&
		h->key_len == strlen(key) && memcmp(h->key, key, h->key_len) == 0 &&
		h->tombstone == tombstone;
}

typedef void (*fixture_test) (const fixture *fx);

static void
on_three_fragments(fixture_test body)
{
	fixture		fx;

	if (fixture_open(&fx))
		body(&fx);
	else
		cx_test_fail(__FILE__, __LINE__, "committing three fragments");
	fixture_close(&fx);
}

static void
key_probe(const fixture *fx)
{
	static const char *const keys[] = {"a1", "zz", "b2", "a2", "a1"};
	cx_probe_result r;
	cx_err		err;

	REQUIRE_OK(probe_strings(fx->s, fx->m, 0, keys, 5, &r, &err), &err);
	/* a1: only the live version; zz: none; b2: only the tombstone; the
	 * repeated a1 is a hit of its own */
	CHECK(r.nhits == 4);
	CHECK(r.nhits > 0 && hit_is(&r.hits[0], 0, 1, 0, "a1", false) &&
		  r.hits[0].ts == 22);
	CHECK(r.nhits > 1 && hit_is(&r.hits[1], 2, 2, 0, "b2", true) &&
		  r.hits[1].ts == 30);
	CHECK(r.nhits > 2 && hit_is(&r.hits[2], 3, 0, 1, "a2", false) &&
		  r.hits[2].ts == 11);
	CHECK(r.nhits > 3 && hit_is(&r.hits[3], 4, 1, 0, "a1", false));
	CHECK(r.index_segments_read == 0);
	cx_probe_result_free(&r);
}

CX_TEST(probe_key_present_absent_deleted_tombstoned)
{
	on_three_fragments(key_probe);
}

/* Rows older than a merged TRUNCATE are no hits, wherever they are. */
static void
truncated_probe(const fixture *fx)
{
	static const char *const keys[] = {"a2", "a1"};
	cx_probe_result r;
	cx_err		err;

	fx->m->truncated_before_us = 21;
	REQUIRE_OK(probe_strings(fx->s, fx->m, 0, keys, 2, &r, &err), &err);
	CHECK(r.nhits == 1);
	CHECK(r.nhits > 0 && hit_is(&r.hits[0], 1, 1, 0, "a1", false) &&
		  r.hits[0].ts == 22);
	cx_probe_result_free(&r);
}

CX_TEST(probe_skips_rows_before_a_merged_truncate)
{
	on_three_fragments(truncated_probe);
}

static void
non_key_probe(const fixture *fx)
{
	int64_t		seven = 7;
	int64_t		absent = 5;
	const uint8_t *values[] = {(const uint8_t *) &absent,
	(const uint8_t *) &seven};
	size_t		lens[] = {8, 8};
	cx_probe_result r;
	cx_err		err;

	REQUIRE_OK(cx_base_probe(fx->s, fx->m, 1, values, lens, 2, &r, &err),
			   &err);
	/* a2, a3, b1; not the tombstone of b2, though its v is 7 */
	CHECK(r.nhits == 3);
	CHECK(r.nhits > 0 && hit_is(&r.hits[0], 1, 0, 1, "a2", false));
	CHECK(r.nhits > 1 && hit_is(&r.hits[1], 1, 0, 2, "a3", false));
	CHECK(r.nhits > 2 && hit_is(&r.hits[2], 1, 1, 1, "b1", false) &&
		  r.hits[2].ts == 20);
	cx_probe_result_free(&r);
}

CX_TEST(probe_non_key_column_finds_every_live_row)
{
	on_three_fragments(non_key_probe);
}

/* On a handle of its own: the merges' probes kept rows on fx->s. */
static void
pruned_probe(const fixture *fx)
{
	static const char *const in_one[] = {"b1"};
	static const char *const in_none[] = {"zz"};
	cx_objstore *reader = mw_open_store();
	cx_probe_result r;
	cx_err		err;

	REQUIRE(reader != NULL);
	/* key ranges: [a1, a3], [a1, b2], [b2, b2] */
	REQUIRE_OK(probe_strings(reader, fx->m, 0, in_one, 1, &r, &err), &err);
	CHECK(r.nhits == 1 && r.fragments_scanned == 1 && r.fragments_kept == 0);
	CHECK(r.bytes_read > 0 && r.bytes_read <= fx->m->fragments[1].size);
	cx_probe_result_free(&r);
	REQUIRE_OK(probe_strings(reader, fx->m, 0, in_none, 1, &r, &err), &err);
	CHECK(r.nhits == 0 && r.fragments_scanned == 0 && r.bytes_read == 0);
	cx_probe_result_free(&r);
	cx_obj_close(reader);
}

CX_TEST(probe_reads_only_fragments_that_may_hold_the_values)
{
	on_three_fragments(pruned_probe);
}

/*
 * A small fragment's rows are read once per handle: the next probes of it
 * read nothing, find the same rows, and apply the deletion vector of the
 * version they probe, not the one it was read under.
 */
static void
kept_probe(const fixture *fx)
{
	static const char *const a2[] = {"a2"};
	static const char *const a1[] = {"a1"};
	cx_objstore *reader = mw_open_store();
	cx_deletion_vector *dv0 = &fx->m->dvs[0];
	uint32_t	deleted = dv0->n;
	cx_probe_result r;
	uint64_t	gets;
	cx_err		err;

	REQUIRE(reader != NULL && fx->m->dvs != NULL && deleted == 1);
	REQUIRE_OK(probe_strings(reader, fx->m, 0, a2, 1, &r, &err), &err);
	CHECK(r.nhits == 1 && r.fragments_kept == 0 && r.bytes_read > 0);
	cx_probe_result_free(&r);
	gets = reader->stats.gets;
	REQUIRE_OK(probe_strings(reader, fx->m, 0, a2, 1, &r, &err), &err);
	CHECK(r.nhits == 1 && hit_is(&r.hits[0], 0, 0, 1, "a2", false) &&
		  r.hits[0].ts == 11);
	/* fragments 0 [a1, a3] and 1 [a1, b2] may hold it */
	CHECK(r.fragments_scanned == 2 && r.fragments_kept == 2);
	CHECK(r.bytes_read == 0 && reader->stats.gets == gets);
	cx_probe_result_free(&r);
	/* fragment 0's a1 is deleted in this version, live without its DV */
	REQUIRE_OK(probe_strings(reader, fx->m, 0, a1, 1, &r, &err), &err);
	CHECK(r.nhits == 1 && r.hits[0].fragment == 1 && r.fragments_kept == 2);
	cx_probe_result_free(&r);
	dv0->n = 0;
	REQUIRE_OK(probe_strings(reader, fx->m, 0, a1, 1, &r, &err), &err);
	dv0->n = deleted;
	CHECK(r.nhits == 2 && hit_is(&r.hits[0], 0, 0, 0, "a1", false) &&
		  r.hits[0].ts == 10);
	CHECK(r.fragments_kept == 2 && reader->stats.gets == gets);
	cx_probe_result_free(&r);
	cx_obj_close(reader);
}

CX_TEST(probe_keeps_small_fragments_rows_per_handle)
{
	on_three_fragments(kept_probe);
}

/*
 * More small fragments than a handle keeps: fragment i holds a<i> and z<i>,
 * so a probe of "m" reads every one of them; the least recently probed
 * make room, and every probe still finds exactly its rows.
 */
CX_TEST(probe_keeps_a_bounded_number_of_fragments)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	char		ids[2][12][16];
	static const char *const middle[] = {"m"};
	const char *const some[] = {"a3", "z11", "a0"};
	cx_probe_result r;
	cx_err		err;

	REQUIRE(s != NULL);
	for (int i = 0; i < 12; i++)
	{
		mw_genrow	rows[2];

		snprintf(ids[0][i], 16, "a%d", i);
		snprintf(ids[1][i], 16, "z%d", i);
		rows[0] = (mw_genrow) {ids[0][i], i, 10 + i, false};
		rows[1] = (mw_genrow) {ids[1][i], i, 10 + i, false};
		REQUIRE_OK(seal_and_merge(s, rows, 2, NULL, &err), &err);
	}
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 12);
	for (int pass = 0; pass < 2; pass++)
	{
		REQUIRE_OK(probe_strings(s, m, 0, middle, 1, &r, &err), &err);
		CHECK(r.nhits == 0 && r.fragments_scanned == 12);
		cx_probe_result_free(&r);
		REQUIRE_OK(probe_strings(s, m, 0, some, 3, &r, &err), &err);
		CHECK(r.nhits == 3);
		CHECK(r.nhits == 3 && hit_is(&r.hits[0], 0, 3, 0, "a3", false) &&
			  hit_is(&r.hits[1], 1, 11, 1, "z11", false) &&
			  hit_is(&r.hits[2], 2, 0, 0, "a0", false));
		cx_probe_result_free(&r);
	}
	cx_manifest_free(m);
	cx_obj_close(s);
}

static void
list_probe(const fixture *fx)
{
	static const char *const keys[] = {"t1"};
	cx_probe_result r;
	cx_err		err;

	CHECK_CODE(probe_strings(fx->s, fx->m, 2, keys, 1, &r, &err),
			   CX_ERR_INVALID);
	CHECK(r.nhits == 0 && r.hits == NULL);
}

CX_TEST(probe_refuses_a_list_column)
{
	on_three_fragments(list_probe);
}

static cx_code
count_row(void *arg, const cx_keyrow *kr, cx_err *err)
{
	(void) kr;
	(void) err;
	(*(uint64_t *) arg)++;
	return CX_OK;
}

/* Bytes a pass over the whole key column of fi reads. */
static uint64_t
key_column_bytes(cx_objstore *s, const cx_fragment_info *fi)
{
	uint64_t	before = s->stats.bytes_read;
	uint64_t	rows = 0;
	cx_err		err;

	if (cx_keyscan(s, fi, mw_schema(), 0, NULL, count_row, &rows,
				   &err) != CX_OK || rows != fi->rows)
		return 0;
	return s->stats.bytes_read - before;
}

/* 20,000 keys in order, 500 rows per group: a probe of two keys reads two
 * groups of the key column, not the whole column (a fragment this large is
 * not kept whole: cx_probe_rows.h). */
CX_TEST(probe_reads_only_row_groups_that_may_hold_the_values)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_merge_options opt;
	mw_genrow  *rows = calloc(20000, sizeof(mw_genrow));
	char	  (*ids)[16] = calloc(20000, 16);
	static const char *const keys[] = {"k00150", "k19999"};
	cx_probe_result r;
	uint64_t	full;
	uint64_t	footer;
	cx_err		err;

	REQUIRE(s != NULL && rows != NULL && ids != NULL);
	for (int i = 0; i < 20000; i++)
	{
		snprintf(ids[i], 16, "k%05d", i);
		rows[i] = (mw_genrow) {ids[i], i, 100 + i, false};
	}
	cx_merge_options_default(&opt);
	opt.fragment.rows_per_group = 500;
	REQUIRE_OK(seal_and_merge(s, rows, 20000, &opt, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 1);
	REQUIRE_OK(probe_strings(s, m, 0, keys, 2, &r, &err), &err);
	REQUIRE(r.nhits == 2);
	CHECK(hit_is(&r.hits[0], 0, 0, 150, "k00150", false) &&
		  r.hits[0].ts == 250);
	CHECK(hit_is(&r.hits[1], 1, 0, 19999, "k19999", false));
	/* Two of the 40 groups: beyond the footer read that every pass makes,
	 * a tenth at most of what reading the whole key column costs. */
	full = key_column_bytes(s, &m->fragments[0]);
	footer = m->fragments[0].footer_len;
	CHECK(r.bytes_read - footer < (full - footer) / 10);
	cx_probe_result_free(&r);
	cx_manifest_free(m);
	free(rows);
	free(ids);
	cx_obj_close(s);
}

/*
 * A fragment small on disk whose keys decode to more than a handle keeps
 * (1,200 keys of 1,000 bytes, compressed): not kept, and each probe of it
 * reads it once, finding its row.
 */
CX_TEST(probe_passes_on_a_fragment_too_large_to_keep)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *reader = mw_open_store();
	cx_manifest *m = NULL;
	mw_genrow  *rows = calloc(1200, sizeof(mw_genrow));
	char	  (*ids)[1001] = calloc(1200, 1001);
	const uint8_t *v;
	size_t		len = 1000;
	uint64_t	full;
	cx_probe_result r;
	cx_err		err;

	REQUIRE(s != NULL && reader != NULL && rows != NULL && ids != NULL);
	for (int i = 0; i < 1200; i++)
	{
		/* "k0042" and zeros to 1000 bytes */
		snprintf(ids[i], 1001, "k%04d", i);
		memset(ids[i] + 5, '0', 995);
		ids[i][1000] = '\0';
		rows[i] = (mw_genrow) {ids[i], i, 100 + i, false};
	}
	REQUIRE_OK(seal_and_merge(s, rows, 1200, NULL, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 1 &&
			m->fragments[0].size <= CX_PROBE_ROWS_FRAGMENT_MAX);
	full = key_column_bytes(s, &m->fragments[0]);
	v = (const uint8_t *) ids[700];
	for (int pass = 0; pass < 2; pass++)
	{
		uint64_t	gets = reader->stats.gets;

		REQUIRE_OK(cx_base_probe(reader, m, 0, &v, &len, 1, &r, &err), &err);
		CHECK(r.nhits == 1 &&
			  hit_is(&r.hits[0], 0, 0, 700, ids[700], false));
		CHECK(r.fragments_scanned == 1 && r.fragments_kept == 0);
		CHECK(r.bytes_read > 0 && r.bytes_read <= full);
		CHECK(reader->stats.gets > gets);
		cx_probe_result_free(&r);
	}
	cx_manifest_free(m);
	free(rows);
	free(ids);
	cx_obj_close(reader);
	cx_obj_close(s);
}
