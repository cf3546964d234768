/*
 * test_inline_generations.c — generations carried inside the shard-manifest
 * version that sealed them (docs/FORMAT.md "Inline generations"): what
 * reading one costs, and that scans, key lookups, merges and compaction
 * read them like generations of their own.
 */
#include <string.h>

#include "objstore/cx_objstore.h"

#include "ctxstore/lifecycle.h"
#include "memwal/cx_shard_manifest.h"
#include "cx_test.h"
#include "mw_util.h"

/* Three sealed appends: versions 2 to 4 of shard "a", each carrying one
 * generation; k5..k9 are overwritten by the second. */
static cx_code
three_inline_seals(cx_objstore *s, cx_shardwriter **w, cx_err *err)
{
	cx_code		rc = mw_writer(s, "a", true, w, err);

	if (rc == CX_OK)
		rc = mw_put(*w, "k", 0, 10, 1, true, err);
	if (rc == CX_OK)
		rc = mw_put(*w, "k", 5, 10, 2, true, err);
	if (rc == CX_OK)
		rc = mw_put(*w, "k", 20, 5, 3, true, err);
	return rc;
}

static void
check_rows(cx_objstore *s)
{
	static const char *const keys[] = {"k3", "k7", "k22"};
	mw_rows		r;
	int64_t		v;
	cx_err		err;

	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 20);
	CHECK(mw_count(&r, "k3", &v) == 1 && v == 1);
	CHECK(mw_count(&r, "k7", &v) == 1 && v == 2);
	CHECK(mw_count(&r, "k24", &v) == 1 && v == 3);
	mw_rows_free(&r);
	REQUIRE_OK(mw_scan_keys(s, keys, 3, &r, &err), &err);
	CHECK(r.n == 3);
	CHECK(mw_count(&r, "k7", &v) == 1 && v == 2);
	CHECK(mw_count(&r, "k22", &v) == 1 && v == 3);
	mw_rows_free(&r);
}

/* The version that carries a generation costs no GET to whoever holds
 * it; any other reader pays one, of the carried bytes only, as for a
 * generation's own object, once per handle. */
CX_TEST(inline_generation_costs_one_get_unless_the_reader_holds_its_carrier)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	const cx_shard_manifest *m;
	cx_objstore *from;
	uint64_t	gets;
	uint64_t	bytes;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_inline_seals(s, &w, &err), &err);
	m = cx_sw_manifest(w);
	REQUIRE(m->version == 4 && m->ngens == 3);
	for (uint32_t i = 0; i < 3; i++)
		CHECK(m->gens[i].carrier == 2 + i);
	CHECK(m->carried != NULL && m->carried_len == m->gens[2].fragment.size);
	gets = s->stats.gets;
	REQUIRE_OK(cx_generation_open(s, m, &m->gens[2], &from, &err), &err);
	CHECK(from != s && s->stats.gets == gets);
	cx_generation_done(s, from);
	bytes = s->stats.bytes_read;
	REQUIRE_OK(cx_generation_open(s, m, &m->gens[0], &from, &err), &err);
	/* Of version 2, the head holding generation 1's bytes only. */
	CHECK(from != s && s->stats.gets == gets + 1);
	CHECK(s->stats.bytes_read ==
		  bytes + CX_SHARD_CARRIED_AT + m->gens[0].fragment.size);
	cx_generation_done(s, from);
	/* The handle keeps the carrier it read: a merge's second and third
	 * reads of the generation cost nothing. */
	REQUIRE_OK(cx_generation_open(s, m, &m->gens[0], &from, &err), &err);
	CHECK(from != s && s->stats.gets == gets + 1);
	cx_generation_done(s, from);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(inline_generations_are_read_by_scans_lookups_merges_and_compaction)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *cold;
	cx_shardwriter *w;
	cx_merge_result merged;
	cx_compact_options co;
	cx_compact_result compacted;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_inline_seals(s, &w, &err), &err);
	/* No generation has an object: the store holds manifests only. */
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &cold, &err),
			   &err);
	check_rows(cold);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &merged, &err), &err);
	CHECK(merged.generations == 3 && merged.merged_through == 3);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	check_rows(cold);
	/* A fourth, inline, on top of the merged base; compaction then
	 * rewrites the base the merges wrote from inline generations. */
	REQUIRE_OK(mw_put(w, "k", 30, 1, 4, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &merged, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	cx_compact_options_default(&co);
	co.force = true;
	REQUIRE_OK(cx_compact(s, &co, NULL, &compacted, &err), &err);
	CHECK(compacted.inputs == 2);
	REQUIRE_OK(mw_put(w, "k", 31, 1, 5, true, &err), &err);
	{
		mw_rows		r;

		REQUIRE_OK(mw_scan(cold, NULL, &r, &err), &err);
		CHECK(r.n == 22 && r.pending == 1);
		mw_rows_free(&r);
	}
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(cold);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * What a merge reads of the versions carrying its generations
 * -------------------------------------------------------------------------- */

static cx_objstore_ops counting_ops;
static const cx_objstore_ops *real_ops;
static uint64_t version_bytes;	/* read from shard-manifest versions */

static cx_code
counting_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
			 cx_buf *out, cx_err *err)
{
	size_t		before = out->len;
	cx_code		rc = real_ops->get(s, key, offset, len, out, err);

	if (strncmp(key, "_shards/", 8) == 0 && strstr(key, "/_versions/") != NULL)
		version_bytes += out->len - before;
	return rc;
}

static uint64_t
object_size(cx_objstore *s, const char *shard_id, uint64_t version)
{
	char		key[CX_KEY_MAX + 1];
	uint64_t	size = 0;
	cx_err		err;

	cx_shard_manifest_key(shard_id, version, key, sizeof(key));
	CHECK_CODE(cx_obj_head(s, key, &size, &err), CX_OK);
	return size;
}

/* Eight sealed appends of ten rows, each an inline generation: versions 2
 * to 9 of shard "a", each listing every generation before it too. */
static cx_code
eight_inline_seals(cx_objstore *s, cx_shardwriter **w, cx_err *err)
{
	cx_code		rc = mw_writer(s, "a", true, w, err);

	for (int i = 0; i < 8 && rc == CX_OK; i++)
		rc = mw_put(*w, "k", i * 10, 10, i, true, err);
	return rc;
}

static void
check_eighty_rows(cx_objstore *s)
{
	mw_rows		r;
	int64_t		v;
	cx_err		err;

	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 80);
	CHECK(mw_count(&r, "k0", &v) == 1 && v == 0);
	CHECK(mw_count(&r, "k79", &v) == 1 && v == 7);
	mw_rows_free(&r);
}

/* Of a version carrying a generation a merge reads the carried bytes and
 * the 20 bytes before them, not the whole version, which lists every
 * pending generation with its statistics: reading whole versions cost
 * pending x merged bytes. */
CX_TEST(merge_reads_only_the_carried_bytes_of_inline_generations)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *merger;
	cx_shardwriter *w;
	const cx_shard_manifest *m;
	cx_merge_result merged;
	uint64_t	carried = 0;
	uint64_t	whole = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(eight_inline_seals(s, &w, &err), &err);
	m = cx_sw_manifest(w);
	REQUIRE(m->version == 9 && m->ngens == 8);
	/* The newest version is read whole (it is the shard's state); the
	 * seven before it carry the other generations. */
	for (uint32_t i = 0; i < 7; i++)
	{
		carried += CX_SHARD_CARRIED_AT + m->gens[i].fragment.size;
		whole += object_size(s, "a", m->gens[i].carrier);
	}
	merger = mw_open_store();
	REQUIRE(merger != NULL);
	real_ops = merger->ops;
	counting_ops = *merger->ops;
	counting_ops.get = counting_get;
	merger->ops = &counting_ops;
	version_bytes = 0;
	REQUIRE_OK(cx_merge_shard(merger, "a", NULL, &merged, &err), &err);
	CHECK(merged.generations == 8);
	CHECK(version_bytes == object_size(s, "a", 9) + carried);
	CHECK(carried < whole);
	merger->ops = real_ops;
	cx_obj_close(merger);
	check_eighty_rows(s);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* A version earlier releases wrote (format 2: the carried bytes end it) is
 * read whole, and its generation read like any other. */
CX_TEST(inline_generation_carried_by_a_format_2_version_is_read)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *cold;
	cx_shardwriter *w;
	const cx_shard_manifest *m;
	char		key[CX_KEY_MAX + 1];
	cx_objstore *from;
	cx_buf		b;
	uint64_t	gets;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(eight_inline_seals(s, &w, &err), &err);
	m = cx_sw_manifest(w);
	cx_shard_manifest_key("a", 2, key, sizeof(key));
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, key, &b, &err), &err);
	mw_to_format_2(&b);
	REQUIRE_OK(cx_obj_put(s, key, b.data, b.len, CX_PUT_OVERWRITE, &err), &err);
	cold = mw_open_store();
	REQUIRE(cold != NULL);
	gets = cold->stats.gets;
	REQUIRE_OK(cx_generation_open(cold, m, &m->gens[0], &from, &err), &err);
	/* Its head, then the whole version. */
	CHECK(from != cold && cold->stats.gets == gets + 2);
	cx_generation_done(cold, from);
	check_eighty_rows(cold);
	cx_buf_free(&b);
	cx_obj_close(cold);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}
