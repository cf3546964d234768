/*
 * test_key_index.c — key index segments (cx_key_index.h): the probe answers
 * from them exactly as from column reads, with the index fresh, stale
 * (fragments and deletions added after it), missing or damaged; several
 * levels of blocks; merges of segments; the "index" commit.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctxstore/lifecycle.h"
#include "merge/cx_merge.h"
#include "table/cx_base_probe.h"
#include "table/cx_key_index.h"
#include "cx_test.h"
#include "cx_test_emu.h"
#include "mw_util.h"

/* Seals rows as one generation of shard "f" and merges it into the base. */
static cx_code
seal_and_merge(cx_objstore *s, const mw_genrow *rows, int n, cx_err *err)
{
	cx_merge_result res;

	if (mw_fake_seal(s, "f", rows, n, err) != CX_OK ||
		cx_merge_shard(s, "f", NULL, &res, err) != CX_OK)
		return err->code;
	return CX_OK;
}

/* Rows "<prefix><i>" for i in [first, first + n), v = i % 7, ts = ts0 + i;
 * ids point into ids (16 bytes each). */
static void
make_rows(mw_genrow *rows, char (*ids)[16], const char *prefix, int first,
		  int n, int64_t ts0)
{
	for (int i = 0; i < n; i++)
	{
		snprintf(ids[i], 16, "%s%d", prefix, first + i);
		rows[i] = (mw_genrow) {ids[i], (first + i) % 7, ts0 + first + i, false};
	}
}

static cx_code
merge_range(cx_objstore *s, const char *prefix, int first, int n,
			int64_t ts0, cx_err *err)
{
	mw_genrow  *rows = calloc(n, sizeof(mw_genrow));
	char	  (*ids)[16] = calloc(n, 16);
	cx_code		rc;

	if (rows == NULL || ids == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "test: out of memory");
	else
	{
		make_rows(rows, ids, prefix, first, n, ts0);
		rc = seal_and_merge(s, rows, n, err);
	}
	free(rows);
	free(ids);
	return rc;
}

/* The probe of m without its index: what the index must reproduce. */
static cx_code
probe_by_columns(cx_objstore *s, const cx_manifest *m, uint32_t column,
				 const uint8_t *const *values, const size_t *lens, uint32_t n,
				 cx_probe_result *out, cx_err *err)
{
	cx_manifest *bare = cx_manifest_clone(m);
	cx_keyindex none = {0};
	cx_code		rc;

	if (bare == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "test: out of memory");
	rc = cx_keyindex_store(bare, &none, err);
	if (rc == CX_OK)
		rc = cx_base_probe(s, bare, column, values, lens, n, out, err);
	cx_manifest_free(bare);
	return rc;
}

static bool
same_hits(const cx_probe_result *a, const cx_probe_result *b)
{
	if (a->nhits != b->nhits)
		return false;
	for (uint32_t i = 0; i < a->nhits; i++)
	{
		const cx_probe_hit *x = &a->hits[i];
		const cx_probe_hit *y = &b->hits[i];

		if (x->value != y->value || x->fragment != y->fragment ||
			x->row != y->row || x->ts != y->ts ||
			x->tombstone != y->tombstone || x->key_len != y->key_len ||
			memcmp(x->key, y->key, x->key_len) != 0)
			return false;
	}
	return true;
}

/* The probes a test compares: some keys present, some absent, and the
 * values 0..6 of v (many rows each). */
typedef struct probe_values
{
	const uint8_t *keys[6];
	size_t		key_lens[6];
	int64_t		v[7];
	const uint8_t *vs[7];
	size_t		v_lens[7];
} probe_values;

static void
probe_values_init(probe_values *pv)
{
	static const char *const keys[] = {"a5", "b17", "zz", "a0", "c3", "a5"};

	for (int i = 0; i < 6; i++)
	{
		pv->keys[i] = (const uint8_t *) keys[i];
		pv->key_lens[i] = strlen(keys[i]);
	}
	for (int i = 0; i < 7; i++)
	{
		pv->v[i] = i;
		pv->vs[i] = (const uint8_t *) &pv->v[i];
		pv->v_lens[i] = 8;
	}
}

/* Probes m's key and v columns with and without the index; the hits must
 * be the same, and v (0..6 in every row) must find the live rows.
 * *segments and *scanned: what the indexed key probe used. */
static bool
index_agrees(cx_objstore *s, const cx_manifest *m, uint64_t live_rows,
			 uint32_t *segments, uint32_t *scanned)
{
	probe_values pv;
	cx_probe_result a;
	cx_probe_result b;
	cx_err		err;
	bool		same;

	probe_values_init(&pv);
	if (cx_base_probe(s, m, 0, pv.keys, pv.key_lens, 6, &a, &err) != CX_OK)
		return false;
	*segments = a.index_segments_read;
	*scanned = a.fragments_scanned;
	same = probe_by_columns(s, m, 0, pv.keys, pv.key_lens, 6, &b, &err) == CX_OK &&
		a.nhits >= 4 && same_hits(&a, &b);
	cx_probe_result_free(&a);
	cx_probe_result_free(&b);
	if (!same ||
		cx_base_probe(s, m, 1, pv.vs, pv.v_lens, 7, &a, &err) != CX_OK)
		return false;
	same = probe_by_columns(s, m, 1, pv.vs, pv.v_lens, 7, &b, &err) == CX_OK &&
		a.nhits == live_rows && same_hits(&a, &b);
	cx_probe_result_free(&a);
	cx_probe_result_free(&b);
	return same;
}

static cx_code
index_both(cx_objstore *s, const cx_keyindex_options *opt,
		   cx_keyindex_result *key_res, cx_err *err)
{
	cx_keyindex_result v_res;

	if (cx_keyindex_update(s, 0, opt, key_res, err) != CX_OK)
		return err->code;
	return cx_keyindex_update(s, 1, opt, &v_res, err);
}

/* a0..a49, then b0..b49 and a new version of a5 (a DV in fragment 0), then
 * a tombstone of c3 and b0..b9 again. */
static cx_code
three_merges(cx_objstore *s, int which, cx_err *err)
{
	static const mw_genrow tomb[] = {{"c3", 1, 5000, true}};

	switch (which)
	{
		case 0:
			return merge_range(s, "a", 0, 50, 1000, err);
		case 1:
			if (merge_range(s, "b", 0, 50, 2000, err) != CX_OK)
				return err->code;
			return merge_range(s, "a", 5, 1, 3000, err);
		default:
			if (seal_and_merge(s, tomb, 1, err) != CX_OK)
				return err->code;
			return merge_range(s, "b", 0, 10, 4000, err);
	}
}

/* The first two merges, both columns indexed; *m the version that lists
 * the index. */
static cx_code
indexed_base(cx_objstore *s, cx_keyindex_result *res, cx_manifest **m,
			 cx_err *err)
{
	if (three_merges(s, 0, err) != CX_OK || three_merges(s, 1, err) != CX_OK ||
		index_both(s, NULL, res, err) != CX_OK)
		return err->code;
	return cx_manifest_load_latest(s, m, err);
}

CX_TEST(key_index_answers_probes_fresh_and_stale)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_result res;
	uint32_t	segments;
	uint32_t	scanned;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(indexed_base(s, &res, &m, &err), &err);
	CHECK(res.segments_written == 1 && res.fragments_covered == 3 &&
		  res.keys_indexed == 100 && res.base_version > 0);
	CHECK(strcmp(m->operation, "index") == 0);
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(segments == 1 && scanned == 0);
	cx_manifest_free(m);
	/* stale: new fragments and deletion vectors on indexed ones */
	REQUIRE_OK(three_merges(s, 2, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(segments == 1 && scanned > 0);
	cx_manifest_free(m);
	/* extended: only the new fragments are indexed */
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &res, &err), &err);
	CHECK(res.segments_written == 1 && res.fragments_covered == 2 &&
		  res.keys_indexed == 11);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &res, &err), &err);
	CHECK(res.segments_written == 0 && res.base_version == 0);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(scanned == 0);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* The probe's plan of a base (its segments and where their fragments
 * are) is kept on the handle per base: reused for the same base, worked out
 * again for a base with other fragments or another index section. */
static const void *
kept_plan(const cx_objstore *s)
{
	return s->caches[CX_CACHE_PROBE_PLAN].p;
}

/* Probes key k of m on s with and without the index: the same hits, and
 * the indexed probe read no fragment's column. */
static bool
indexed_probe_exact(cx_objstore *s, const cx_manifest *m, const char *k)
{
	const uint8_t *v = (const uint8_t *) k;
	size_t		len = strlen(k);
	cx_probe_result indexed;
	cx_probe_result scanned;
	cx_err		err;
	bool		ok;

	if (cx_base_probe(s, m, 0, &v, &len, 1, &indexed, &err) != CX_OK)
		return false;
	ok = probe_by_columns(s, m, 0, &v, &len, 1, &scanned, &err) == CX_OK &&
		indexed.nhits == 1 && indexed.fragments_scanned == 0 &&
		indexed.index_segments_read == 1 && scanned.fragments_scanned > 0 &&
		same_hits(&indexed, &scanned);
	cx_probe_result_free(&indexed);
	cx_probe_result_free(&scanned);
	return ok;
}

CX_TEST(probe_plan_is_kept_per_base_and_follows_merges)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_result res;
	const uint8_t *v = (const uint8_t *) "a7";
	size_t		len = 2;
	cx_probe_result r;
	const void *plan;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(merge_range(s, "a", 0, 50, 1000, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	/* the clone without an index between them is not answered by the
	 * index: the kept plan is not its */
	CHECK(indexed_probe_exact(s, m, "a7"));
	CHECK(indexed_probe_exact(s, m, "a7"));
	/* the same base again: the kept plan serves it */
	REQUIRE_OK(cx_base_probe(s, m, 0, &v, &len, 1, &r, &err), &err);
	cx_probe_result_free(&r);
	plan = kept_plan(s);
	REQUIRE_OK(cx_base_probe(s, m, 0, &v, &len, 1, &r, &err), &err);
	CHECK(plan != NULL && kept_plan(s) == plan && r.nhits == 1);
	cx_probe_result_free(&r);
	cx_manifest_free(m);
	/* a merge and its index: new fragments, a new segment */
	REQUIRE_OK(merge_range(s, "b", 0, 10, 2000, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(indexed_probe_exact(s, m, "b3") && indexed_probe_exact(s, m, "a7"));
	CHECK(kept_plan(s) != NULL);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* What a probe keeps is counted: the handle's caches (the base version's
 * bytes, then its probe plan, which holds every fragment path) and the
 * process's block cache (the blocks the lookup read). */
CX_TEST(probe_caches_count_what_they_keep)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *reader = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_result res;
	const uint8_t *v = (const uint8_t *) "a7";
	size_t		len = 2;
	size_t		with_base;
	size_t		blocks;
	size_t		paths = 0;
	cx_probe_result r;
	cx_err		err;

	REQUIRE(s != NULL && reader != NULL);
	REQUIRE_OK(merge_range(s, "a", 0, 50, 1000, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &res, &err), &err);
	CHECK(cx_obj_cache_bytes(reader) == 0);
	REQUIRE_OK(cx_manifest_load_latest(reader, &m, &err), &err);
	with_base = cx_obj_cache_bytes(reader);
	CHECK(with_base > 0);
	for (uint32_t f = 0; f < m->nfragments; f++)
		paths += strlen(m->fragments[f].path);
	blocks = cx_keyindex_cache_bytes();
	REQUIRE_OK(cx_base_probe(reader, m, 0, &v, &len, 1, &r, &err), &err);
	CHECK(r.nhits == 1 && r.index_segments_read == 1);
	CHECK(cx_obj_cache_bytes(reader) > with_base + paths);
	CHECK(cx_keyindex_cache_bytes() > blocks);
	cx_probe_result_free(&r);
	cx_manifest_free(m);
	cx_obj_close(reader);
	cx_obj_close(s);
}

/* After a compaction replaced every fragment the index covered, the
 * update indexes the outputs and drops the segments that cover nothing
 * listed any more (GC can then delete them). */
CX_TEST(key_index_update_drops_segments_of_compacted_fragments)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex ix;
	cx_keyindex_result res;
	cx_compact_options co;
	cx_compact_result cres;
	uint32_t	segments;
	uint32_t	scanned;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(indexed_base(s, &res, &m, &err), &err);
	cx_manifest_free(m);
	cx_compact_options_default(&co);
	co.holder = "test";
	co.force = true;
	REQUIRE_OK(cx_compact(s, &co, NULL, &cres, &err), &err);
	REQUIRE(cres.compacted && cres.inputs == 3);
	REQUIRE_OK(index_both(s, NULL, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	/* one segment per column, over the outputs only */
	CHECK(ix.n == 2);
	for (uint32_t i = 0; i < ix.n; i++)
		CHECK(ix.segs[i].nfragments == cres.outputs);
	cx_keyindex_free(&ix);
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(segments == 1 && scanned == 0);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* A missing or damaged segment, or an index section this build cannot
 * read: the probe reads columns instead. */
CX_TEST(key_index_missing_or_damaged_segment_falls_back)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex ix;
	cx_keyindex_result res;
	uint32_t	segments;
	uint32_t	scanned;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(indexed_base(s, &res, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	REQUIRE(ix.n == 2 && ix.segs[0].column == 0);
	REQUIRE_OK(cx_obj_put(s, ix.segs[0].path, "garbage", 7, CX_PUT_OVERWRITE,
						  &err), &err);
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(segments == 0 && scanned == 3);
	REQUIRE_OK(cx_obj_delete(s, ix.segs[0].path, &err), &err);
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(segments == 0 && scanned == 3);
	cx_keyindex_free(&ix);
	/* a manifest section this build cannot read (format 99) */
	for (uint32_t i = 0; i < m->nexts; i++)
		if (m->exts[i].tag == CX_KEYINDEX_EXT_TAG)
			m->exts[i].data[0] = 99;
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(segments == 0 && scanned == 3);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* Small blocks: several index levels; merging segments keeps answers. */
CX_TEST(key_index_deep_segments_and_merges)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_options opt;
	cx_keyindex_result res;
	cx_keyindex ix;
	uint32_t	segments;
	uint32_t	scanned;
	cx_err		err;

	REQUIRE(s != NULL);
	cx_keyindex_options_default(&opt);
	opt.block_bytes = 128;
	opt.max_segments = 2;
	for (int i = 0; i < 3; i++)
	{
		REQUIRE_OK(three_merges(s, i, &err), &err);
		REQUIRE_OK(index_both(s, &opt, &res, &err), &err);
		CHECK(res.segments_written >= 1);
		CHECK(res.segments_merged == (i == 2 ? 3u : 0u));
	}
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	/* one merged segment per column, covering the five fragments, without
	 * the rows deleted since they were indexed (a5, b0..b9) */
	CHECK(ix.n == 2);
	CHECK(ix.n == 2 && ix.segs[0].column == 0 &&
		  ix.segs[0].nfragments == 5 && ix.segs[0].entries == 112 - 11);
	CHECK(index_agrees(s, m, 100, &segments, &scanned));
	CHECK(segments == 1 && scanned == 0);
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Merges find the base rows they replace through the index
 * -------------------------------------------------------------------------- */

#define BIG_BASE 100000

static cx_code
big_base(cx_objstore *s, cx_err *err)
{
	mw_genrow  *rows = calloc(BIG_BASE, sizeof(mw_genrow));
	char	  (*ids)[16] = calloc(BIG_BASE, 16);
	cx_code		rc;

	if (rows == NULL || ids == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "test: out of memory");
	else
	{
		for (int i = 0; i < BIG_BASE; i++)
		{
			snprintf(ids[i], 16, "k%06d", i);
			rows[i] = (mw_genrow) {ids[i], i, 1000 + i, false};
		}
		rc = seal_and_merge(s, rows, BIG_BASE, err);
	}
	free(rows);
	free(ids);
	return rc;
}

/* Merges new versions of 8 keys spread over the base from key `first`
 * on (so that no key statistics help), the merge's calls through `during`
 * unless NULL; *read: bytes the merge read, *merged: bytes of the
 * generation it merged. */
static cx_code
merge_spread_keys(cx_objstore *s, int first, const cx_objstore_ops *during,
				  uint64_t *read, uint64_t *merged, cx_err *err)
{
	const cx_objstore_ops *own = s->ops;
	cx_code		rc;

	mw_genrow	rows[8];
	char		ids[8][16];
	cx_merge_result res;
	cx_shard_manifest *sm;
	uint64_t	before;

	for (int i = 0; i < 8; i++)
	{
		snprintf(ids[i], 16, "k%06d", first + i * 12345);
		rows[i] = (mw_genrow) {ids[i], -i, 1000000 + i, false};
	}
	if (mw_fake_seal(s, "f", rows, 8, err) != CX_OK ||
		cx_shard_manifest_load_latest(s, "f", 0, &sm, err) != CX_OK)
		return err->code;
	*merged = sm->gens[sm->ngens - 1].fragment.size;
	cx_shard_manifest_free(sm);
	before = s->stats.bytes_read;
	if (during != NULL)
		s->ops = during;
	rc = cx_merge_shard(s, "f", NULL, &res, err);
	s->ops = own;
	if (rc != CX_OK)
		return rc;
	*read = s->stats.bytes_read - before;
	if (res.rows_replaced != 8)
		return cx_err_set(err, CX_ERR_INVALID, "replaced %llu rows, not 8",
						  (unsigned long long) res.rows_replaced);
	return CX_OK;
}

CX_TEST(merge_into_an_indexed_base_reads_little)
{
	cx_objstore *s = mw_open_store();
	cx_keyindex_result ires;
	uint64_t	read_plain;
	uint64_t	read_indexed;
	uint64_t	merged;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(big_base(s, &err), &err);
	REQUIRE_OK(merge_spread_keys(s, 1234, NULL, &read_plain, &merged, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &ires, &err), &err);
	CHECK(ires.keys_indexed == BIG_BASE);
	REQUIRE_OK(merge_spread_keys(s, 1234, NULL, &read_indexed, &merged, &err),
			   &err);
	/* Measured: 1,411 bytes merged; 172 KB read without the index (the key
	 * columns of the whole base), 53 KB with it (the generation twice, the
	 * segment's root and about one index and one data block of 4 KiB per
	 * key, none cached yet: small_merge_reads_its_generation_and_a_block_
	 * per_key measures a merge that comes back). */
	CHECK(read_indexed * 3 < read_plain);
	CHECK(read_indexed < merged * 100);
	cx_obj_close(s);
}

/* GETs by the kind of object they read, counted by a hook around a
 * handle's backend. */
static const cx_objstore_ops *counted_real;
static cx_objstore_ops counted_ops;
static uint64_t gets_of[CX_OBJECT_COMPACTION_LEASE + 1];
static uint64_t base_fragment_gets;	/* of fragments counted_base lists */
static const cx_manifest *counted_base;

static cx_code
counted_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
			cx_buf *out, cx_err *err)
{
	cx_object_name name;
	cx_object_kind kind = cx_object_parse(key, &name);

	gets_of[kind]++;
	if (kind == CX_OBJECT_FRAGMENT &&
		cx_manifest_find_fragment(counted_base, key) >= 0)
		base_fragment_gets++;
	return counted_real->get(s, key, offset, len, out, err);
}

/* Merges 8 spread keys from `first` on as the maintenance worker does (its
 * handle kept, then the index brought up to date), counting the merge's
 * GETs by kind. */
static cx_code
counted_merge(cx_objstore *s, int first, uint64_t *read, uint64_t *merged,
			  cx_err *err)
{
	cx_manifest *base;
	cx_keyindex_result ires;
	cx_code		rc;

	if (cx_manifest_load_latest(s, &base, err) != CX_OK)
		return err->code;
	memset(gets_of, 0, sizeof(gets_of));
	base_fragment_gets = 0;
	counted_base = base;
	counted_real = s->ops;
	counted_ops = *s->ops;
	counted_ops.get = counted_get;
	rc = merge_spread_keys(s, first, &counted_ops, read, merged, err);
	cx_manifest_free(base);
	if (rc != CX_OK)
		return rc;
	return cx_keyindex_update(s, 0, NULL, &ires, err);
}

/*
 * A small merge into a large indexed base, on a handle that merged before
 * (the maintenance worker's): it reads its generation once, the shard
 * manifest and, per merged key and index segment, at most one block beyond
 * those a lookup keeps; never the base manifest (the handle holds the
 * version it wrote), nor a base fragment (the index covers them all).
 */
CX_TEST(small_merge_reads_its_generation_and_a_block_per_key)
{
	cx_objstore *s = mw_open_store();
	cx_keyindex_result ires;
	uint64_t	read;
	uint64_t	merged;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(big_base(s, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &ires, &err), &err);
	REQUIRE_OK(counted_merge(s, 1234, &read, &merged, &err), &err);
	REQUIRE_OK(counted_merge(s, 5678, &read, &merged, &err), &err);
	fprintf(stderr, "    small merge: %llu bytes merged, %llu read; GETs: base manifest %llu, shard manifest %llu, index %llu, fragments %llu (of the base %llu)\n",
			(unsigned long long) merged, (unsigned long long) read,
			(unsigned long long) gets_of[CX_OBJECT_BASE_VERSION],
			(unsigned long long) gets_of[CX_OBJECT_SHARD_VERSION],
			(unsigned long long) gets_of[CX_OBJECT_INDEX_SEGMENT],
			(unsigned long long) gets_of[CX_OBJECT_FRAGMENT],
			(unsigned long long) base_fragment_gets);
	CHECK(gets_of[CX_OBJECT_BASE_VERSION] == 0);
	CHECK(gets_of[CX_OBJECT_SHARD_VERSION] == 1);
	/* two segments (the base's, the first merge's): a data block each per
	 * key, and the roots of the newer one */
	CHECK(gets_of[CX_OBJECT_INDEX_SEGMENT] <= 2 * 8 + 2);
	CHECK(base_fragment_gets == 0);
	/* its generation once, though the merge reads it twice */
	CHECK(gets_of[CX_OBJECT_FRAGMENT] == 1);
	cx_obj_close(s);
}

/* A merge of segments takes the newest ones, and an older one only once
 * the newer together reach half its entries: a large base's segment is not
 * rewritten for every few small merges (it was, with all of them). */
CX_TEST(key_index_merge_leaves_a_big_old_segment_alone)
{
	static const char *const keys[] = {"a5", "a999", "b3", "b15", "zz"};
	size_t		lens[5];
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_options opt;
	cx_keyindex_result res;
	cx_keyindex ix;
	cx_probe_result indexed;
	cx_probe_result scanned;
	char	   *big;
	cx_err		err;

	REQUIRE(s != NULL);
	for (int i = 0; i < 5; i++)
		lens[i] = strlen(keys[i]);
	cx_keyindex_options_default(&opt);
	opt.max_segments = 2;
	REQUIRE_OK(merge_range(s, "a", 0, 1000, 1000, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, &opt, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	REQUIRE(ix.n == 1);
	big = cx_strdup(ix.segs[0].path);
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
	for (int i = 0; i < 2; i++)
	{
		REQUIRE_OK(merge_range(s, "b", i * 10, 10, 5000 + i * 100, &err), &err);
		REQUIRE_OK(cx_keyindex_update(s, 0, &opt, &res, &err), &err);
	}
	/* three segments, two allowed: the two small ones merged */
	CHECK(res.segments_merged == 2);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	CHECK(ix.n == 2 && strcmp(ix.segs[0].path, big) == 0 &&
		  ix.segs[0].entries == 1000 && ix.segs[1].entries == 20);
	REQUIRE_OK(cx_base_probe(s, m, 0, (const uint8_t *const *) keys, lens, 5,
							 &indexed, &err), &err);
	REQUIRE_OK(probe_by_columns(s, m, 0, (const uint8_t *const *) keys, lens,
								5, &scanned, &err), &err);
	CHECK(indexed.nhits == 4 && same_hits(&indexed, &scanned));
	cx_probe_result_free(&indexed);
	cx_probe_result_free(&scanned);
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
	free(big);
	cx_obj_close(s);
}

/*
 * An update whose new segment would take the index past max_segments
 * merges the new keys straight into the merged segment: it writes one
 * segment, not the new one and then the merge that replaces it in the same
 * commit (an object nothing ever listed, and a PUT, per merge under steady
 * ingest).
 */
CX_TEST(key_index_update_that_merges_writes_one_segment)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_options opt;
	cx_keyindex_result res;
	cx_keyindex ix;
	cx_test_listed objects = {0};
	uint32_t	segments;
	uint32_t	scanned;
	cx_err		err;

	REQUIRE(s != NULL);
	cx_keyindex_options_default(&opt);
	opt.max_segments = 2;
	for (int i = 0; i < 3; i++)
	{
		static const char *const prefixes[] = {"a", "b", "c"};

		REQUIRE_OK(merge_range(s, prefixes[i], 0, 100, 1000 + i * 100, &err),
				   &err);
		REQUIRE_OK(cx_keyindex_update(s, 0, &opt, &res, &err), &err);
		CHECK(res.keys_indexed == 100 && res.fragments_covered == 1);
		CHECK(res.segments_written == 1);
		CHECK(res.segments_merged == (i == 2 ? 3u : 0u));
	}
	/* two segments written alone, one merge of them and the third batch */
	REQUIRE_OK(cx_obj_list(s, CX_INDEX_SEGMENT_PREFIX, cx_test_collect,
						   &objects, &err), &err);
	CHECK(objects.n == 3);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	CHECK(ix.n == 1 && ix.segs[0].entries == 300 && ix.segs[0].nfragments == 3);
	CHECK(index_agrees(s, m, 300, &segments, &scanned));
	CHECK(segments == 1 && scanned == 0);
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
	cx_obj_close(s);
}

CX_TEST(key_index_update_table_indexes_key_and_upsert_column)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_result res;
	cx_keyindex ix;
	cx_err		err;

	REQUIRE(s != NULL);
	/* no store yet: nothing to do */
	REQUIRE_OK(cx_keyindex_update_table(s, "v", NULL, &res, &err), &err);
	CHECK(res.segments_written == 0 && res.base_version == 0);
	REQUIRE_OK(three_merges(s, 0, &err), &err);
	CHECK_CODE(cx_keyindex_update_table(s, "nope", NULL, &res, &err),
			   CX_ERR_SCHEMA);
	REQUIRE_OK(cx_keyindex_update_table(s, "v", NULL, &res, &err), &err);
	CHECK(res.segments_written == 2 && res.keys_indexed == 100 &&
		  res.fragments_covered == 2 && res.base_version > 0);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	CHECK(ix.n == 2 && ix.segs[0].column == 0 && ix.segs[1].column == 1);
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
	/* the key named again is indexed once */
	REQUIRE_OK(three_merges(s, 1, &err), &err);
	REQUIRE_OK(cx_keyindex_update_table(s, "id", NULL, &res, &err), &err);
	CHECK(res.segments_written == 1 && res.fragments_covered == 2);
	cx_obj_close(s);
}

/* Index updates racing merges: every commit rebases (or the index's lands
 * first), and the index stays exact.  The merges leave a0..a49 and
 * b7..b54 live: 98 rows. */
typedef struct racer
{
	cx_objstore *s;
	cx_code		rc;
	cx_err		err;
} racer;

static void *
merge_racer(void *arg)
{
	racer	   *r = arg;

	for (int i = 0; i < 6 && r->rc == CX_OK; i++)
		r->rc = merge_range(r->s, i % 2 ? "b" : "a", i * 7, 20, 10000 * (i + 1),
							&r->err);
	return NULL;
}

CX_TEST(key_index_updates_race_merges)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *s2 = NULL;
	cx_manifest *m = NULL;
	cx_keyindex_result res;
	racer		r = {NULL, CX_OK, {0}};
	pthread_t	t;
	uint32_t	segments;
	uint32_t	scanned;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, 0, &err), &err);
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s2, &err),
			   &err);
	r.s = s2;
	REQUIRE(pthread_create(&t, NULL, merge_racer, &r) == 0);
	for (int i = 0; i < 20; i++)
		CHECK(cx_keyindex_update_table(s, "v", NULL, &res, &err) == CX_OK);
	pthread_join(t, NULL);
	REQUIRE_OK(r.rc, &r.err);
	REQUIRE_OK(cx_keyindex_update_table(s, "v", NULL, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(index_agrees(s, m, 98, &segments, &scanned));
	CHECK(scanned == 0);
	cx_manifest_free(m);
	cx_obj_close(s2);
	cx_obj_close(s);
}

/* The empty string is a key like any other, and may be a segment's min. */
CX_TEST(key_index_empty_string_key)
{
	static const mw_genrow rows[] = {{"", 3, 10, false}, {"x", 3, 11, false}};
	const uint8_t *empty = (const uint8_t *) "";
	size_t		len = 0;
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_result res;
	cx_probe_result r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(seal_and_merge(s, rows, 2, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_base_probe(s, m, 0, &empty, &len, 1, &r, &err), &err);
	CHECK(r.nhits == 1 && r.index_segments_read == 1 && r.hits[0].row == 0 &&
		  r.hits[0].key_len == 0);
	cx_probe_result_free(&r);
	cx_manifest_free(m);
	cx_obj_close(s);
}


/* Lookups keep the blocks they read: a second probe of the same values
 * reads nothing; with a cache too small for them, the data blocks again. */
CX_TEST(key_index_lookups_reuse_blocks_within_the_cache_bound)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m = NULL;
	cx_keyindex_options opt;
	cx_keyindex_result res;
	probe_values pv;
	cx_probe_result first;
	cx_probe_result again;
	cx_probe_result small;
	cx_err		err;

	REQUIRE(s != NULL);
	cx_keyindex_options_default(&opt);
	opt.block_bytes = 128;		/* several levels */
	REQUIRE_OK(three_merges(s, 0, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, &opt, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	probe_values_init(&pv);
	REQUIRE_OK(cx_base_probe(s, m, 0, pv.keys, pv.key_lens, 6, &first, &err),
			   &err);
	REQUIRE_OK(cx_base_probe(s, m, 0, pv.keys, pv.key_lens, 6, &again, &err),
			   &err);
	CHECK(first.index_segments_read == 1 && again.index_segments_read == 1);
	CHECK(same_hits(&first, &again) && first.nhits == 3);
	/* measured: 668 bytes, then none */
	CHECK(first.bytes_read > 0 && again.bytes_read == 0);
	/* room for about one block: each probe evicts what the next needs */
	cx_keyindex_cache_set_limit(300);
	REQUIRE_OK(cx_base_probe(s, m, 0, pv.keys, pv.key_lens, 6, &small, &err),
			   &err);
	CHECK(same_hits(&first, &small) && small.bytes_read > 0);
	CHECK(cx_keyindex_cache_stats().bytes <= 300);
	cx_keyindex_cache_set_limit(CX_KEYINDEX_CACHE_DEFAULT);
	cx_probe_result_free(&first);
	cx_probe_result_free(&again);
	cx_probe_result_free(&small);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/*
 * A key index section whose segment announces more covered fragments than
 * the section holds is damaged, not a crash: the half-decoded segment was
 * freed by walking a fragment list that was never allocated (found by
 * fuzz_manifest).
 */
CX_TEST(key_index_section_with_impossible_fragment_count)
{
	cx_manifest *m = cx_manifest_new();
	cx_keyseg_ref ref = {.path = "index/00000000000000000000000000000000.cxk"};
	cx_keyindex ix = {1, &ref};
	cx_keyindex got;
	cx_manifest_ext *e;
	cx_err		err;

	REQUIRE(m != NULL);
	REQUIRE_OK(cx_keyindex_store(m, &ix, &err), &err);
	REQUIRE(m->nexts == 1 && m->exts[0].tag == CX_KEYINDEX_EXT_TAG);
	e = &m->exts[0];
	/* The segment's fragment count is the section's last field. */
	cx_store_u32(e->data + e->len - 4, 0xffffffffu);
	CHECK_CODE(cx_keyindex_load(m, &got, &err), CX_ERR_CORRUPT);
	CHECK(got.n == 0 && got.segs == NULL);
	cx_manifest_free(m);
}
