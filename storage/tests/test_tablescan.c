/*
 * test_tablescan.c — snapshots and scans over base fragments, deletion
 * vectors and unmerged generations (cx_table_scan.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "table/cx_commit.h"
#include "merge/cx_merge.h"
#include "table/cx_row_key.h"
#include "cx_test.h"
#include "mw_util.h"

CX_TEST(tablescan_of_empty_store)
{
	cx_objstore *s = mw_open_store();
	cx_snapshot *snap;
	cx_tablescan *scan;
	const cx_rowgroup *g;
	const uint32_t *rows;
	uint32_t	n;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	CHECK(cx_snapshot_version(snap) == 0);
	CHECK(cx_snapshot_base(snap)->schema == NULL);
	CHECK(cx_snapshot_row_estimate(snap) == 0);
	CHECK(cx_snapshot_pending_generations(snap) == 0);
	REQUIRE_OK(cx_tablescan_begin(snap, NULL, &scan, &err), &err);
	REQUIRE_OK(cx_tablescan_next(scan, &g, &rows, &n, &err), &err);
	CHECK(g == NULL && n == 0);
	cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	cx_obj_close(s);
}

/* A large base and no generations: streamed a row group at a time, with no
 * key map, whatever the size of the table. */
CX_TEST(tablescan_large_base_streams_without_a_keymap)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	cx_merge_options o;
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	cx_merge_options_default(&o);
	o.fragment.rows_per_group = 4096;
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 50000, 5, true, &err), &err);
	REQUIRE_OK(mw_put(w, "j", 0, 50000, 6, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", &o, &res, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 100000 && r.pending == 0);
	CHECK(r.stats.keymap_keys == 0 && r.stats.keymap_bytes == 0);
	CHECK(r.stats.rows_returned == 100000 && r.stats.rows_hidden == 0);
	CHECK(r.stats.fragments_opened == 1);
	mw_rows_free(&r);
	/* one unmerged row: the map holds just it, not the base */
	REQUIRE_OK(mw_put(w, "k", 7, 1, 9, true, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 100000 && r.stats.keymap_keys == 1);
	CHECK(r.stats.keymap_bytes < 256 * 1024);
	CHECK(r.stats.rows_hidden == 1);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Only the wanted columns are read (plus, with generations, the key and
 * hidden ones internally); hidden columns never appear in the schema. */
CX_TEST(tablescan_projection_reads_fewer_bytes)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	bool		only_v[3] = {false, true, false};
	uint64_t	full;
	uint64_t	proj;
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "a-rather-long-key-to-make-the-id-column-heavy-", 0,
					  60000, 4, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_put(w, "a-rather-long-key-to-make-the-id-column-heavy-", 0,
					  10, 5, true, &err), &err);
	for (int pass = 0; pass < 2; pass++)
	{
		s->stats.bytes_read = 0;
		REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
		full = s->stats.bytes_read;
		CHECK(r.n == 60000);
		mw_rows_free(&r);
		s->stats.bytes_read = 0;
		REQUIRE_OK(mw_scan(s, only_v, &r, &err), &err);
		proj = s->stats.bytes_read;
		CHECK(r.n == 60000 && r.r[0].ntags == 0);
		mw_rows_free(&r);
		/* With a generation pending, the base's key (the heavy column here)
		 * and commit time are read too, for de-duplication; without, only
		 * v (measured: 76 KB whole, 75.6 KB and 4.5 KB projected). */
		CHECK(pass == 0 ? proj < full : proj * 4 < full);
		/* second pass: without generations (no key column needed) */
		REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
		REQUIRE_OK(mw_drain(s, w, &err), &err);
	}
	{
		cx_snapshot *snap;

		REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
		CHECK(cx_snapshot_base(snap)->schema->ncolumns == 3);
		cx_snapshot_close(snap);
	}
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Deletion vectors alone (no generations) need no key map. */
CX_TEST(tablescan_applies_deletion_vectors_without_keymap)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	mw_rows r;
	int64_t		v = -1;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 100, 1, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 10, 20, 2, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.rows_replaced == 20);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 100 && r.stats.keymap_keys == 0 && r.stats.rows_hidden == 20);
	CHECK(mw_count(&r, "k15", &v) == 1 && v == 2);
	CHECK(mw_count(&r, "k35", &v) == 1 && v == 1);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* A pinned version reads exactly its base fragments. */
CX_TEST(tablescan_pinned_version_reads_its_base_only)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	cx_snapshot *snap;
	cx_tablescan *scan;
	const cx_rowgroup *g;
	const uint32_t *rows;
	uint32_t	n;
	uint32_t	total = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 10, 1, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 5, 10, 2, true, &err), &err);
	REQUIRE_OK(cx_snapshot_open(s, res.base_version, &snap, &err), &err);
	CHECK(cx_snapshot_pending_generations(snap) == 0);
	REQUIRE_OK(cx_tablescan_begin(snap, NULL, &scan, &err), &err);
	for (;;)
	{
		REQUIRE_OK(cx_tablescan_next(scan, &g, &rows, &n, &err), &err);
		if (g == NULL)
			break;
		total += n;
	}
	CHECK(total == 10);
	cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* NULL keys are never de-duplicated; tombstones in the base are hidden
 * even on the path without generations.  (A tombstone with a NULL key is a
 * TRUNCATE marker: test_delete.c.) */
CX_TEST(tablescan_null_keys_and_base_tombstones)
{
	cx_objstore *s = mw_open_store();
	cx_merge_result res;
	mw_rows r;
	cx_err		err;
	const mw_genrow g1[] = {{NULL, 1, 10, false}, {NULL, 2, 10, false},
	{"a", 3, 10, false}, {"b", 4, 10, false}};
	const mw_genrow g2[] = {{NULL, 5, 20, false}, {"a", 0, 20, true}};

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_fake_seal(s, "f", g1, 4, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", g2, 2, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 4 && mw_count(&r, "", NULL) == 3 && mw_count(&r, "a", NULL) == 0);
	CHECK(r.stats.keymap_keys == 2);
	mw_rows_free(&r);
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &res, &err), &err);
	/* NULL-key rows 1, 2, 5; the tombstone of a; b */
	CHECK(res.rows_written == 5);
	REQUIRE_OK(mw_fake_drain(s, "f", &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 4 && mw_count(&r, "", NULL) == 3 && mw_count(&r, "a", NULL) == 0);
	CHECK(r.stats.keymap_keys == 0 && r.stats.rows_hidden == 1);
	mw_rows_free(&r);
	cx_obj_close(s);
}

/*
 * Versions of a key within one generation and across generations, with
 * enough keys to grow the map and span many words of the loser bitmaps:
 * the later row of a shard wins, a winning tombstone hides its key, NULL
 * keys never collide, and only the winners come out of the generation pass.
 */
CX_TEST(tablescan_losers_within_and_across_generations)
{
	enum { N = 3000 };
	cx_objstore *s = mw_open_store();
	mw_rows r;
	cx_err		err;
	mw_genrow  *g1 = calloc(N + 6, sizeof(mw_genrow));
	char	  (*ids)[16] = calloc(N, sizeof(*ids));
	const mw_genrow g2[] = {{"k7", 70, 30, false}, {"k8", 0, 30, true},
	{"a", 9, 30, false}};
	int64_t		v = -1;
	int			n = 0;

	REQUIRE(s != NULL && g1 != NULL && ids != NULL);
	g1[n++] = (mw_genrow) {"a", 1, 10, false};
	g1[n++] = (mw_genrow) {NULL, 2, 10, false};
	for (int k = 0; k < N; k++)
	{
		snprintf(ids[k], sizeof(ids[k]), "k%d", k);
		g1[n++] = (mw_genrow) {ids[k], k, 10, false};
	}
	g1[n++] = (mw_genrow) {"a", 3, 20, false};	/* replaces a = 1 */
	g1[n++] = (mw_genrow) {"c", 4, 20, false};
	g1[n++] = (mw_genrow) {"c", 0, 20, true};	/* deletes c */
	g1[n++] = (mw_genrow) {NULL, 5, 20, false};
	REQUIRE_OK(mw_fake_seal(s, "f", g1, n, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == N + 3);
	CHECK(mw_count(&r, "a", &v) == 1 && v == 3);
	CHECK(mw_count(&r, "c", NULL) == 0 && mw_count(&r, "", NULL) == 2);
	CHECK(mw_count(&r, "k2999", &v) == 1 && v == 2999);
	CHECK(r.stats.keymap_keys == N + 2 && r.stats.rows_hidden == 3);
	mw_rows_free(&r);
	/* a second generation replaces k7 and a, deletes k8 */
	REQUIRE_OK(mw_fake_seal(s, "f", g2, 3, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == N + 2);
	CHECK(mw_count(&r, "a", &v) == 1 && v == 9);
	CHECK(mw_count(&r, "k7", &v) == 1 && v == 70);
	CHECK(mw_count(&r, "k8", NULL) == 0 && mw_count(&r, "k9", &v) == 1 && v == 9);
	CHECK(r.stats.rows_hidden == 3 + 3 + 1);
	mw_rows_free(&r);
	free(g1);
	free(ids);
	cx_obj_close(s);
}

/* A base fragment without tombstones is read without its tombstone
 * column; one with them is filtered. */
CX_TEST(tablescan_reads_tombstone_column_only_when_needed)
{
	cx_objstore *s = mw_open_store();
	cx_merge_result res;
	cx_snapshot *snap;
	const cx_manifest *m;
	cx_err		err;
	const mw_genrow live[] = {{"a", 1, 10, false}};
	const mw_genrow dead[] = {{"b", 0, 20, true}};

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_fake_seal(s, "f", live, 1, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &res, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", dead, 1, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &res, &err), &err);
	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	m = cx_snapshot_base(snap);
	REQUIRE(m->nfragments == 2);
	CHECK(!cx_fragment_may_have_tombstones(&m->fragments[0]));
	CHECK(cx_fragment_may_have_tombstones(&m->fragments[1]));
	cx_snapshot_close(snap);
	cx_obj_close(s);
}

/* Pending keys outside a base fragment's key range: that fragment is read
 * without its key column, as if nothing were pending. */
CX_TEST(tablescan_reads_base_keys_only_where_pending_keys_may_be)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	bool		only_v[3] = {false, true, false};
	uint64_t	idle;
	uint64_t	pending;
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "a-rather-long-key-to-make-the-id-column-heavy-", 0,
					  60000, 4, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	s->stats.bytes_read = 0;
	REQUIRE_OK(mw_scan(s, only_v, &r, &err), &err);
	idle = s->stats.bytes_read;
	mw_rows_free(&r);
	REQUIRE_OK(mw_put(w, "z", 0, 10, 5, true, &err), &err);
	s->stats.bytes_read = 0;
	REQUIRE_OK(mw_scan(s, only_v, &r, &err), &err);
	pending = s->stats.bytes_read;
	CHECK(r.n == 60010 && r.stats.keymap_keys == 10);
	mw_rows_free(&r);
	/* the generation's own bytes (read twice) are all the difference */
	CHECK(pending < idle + 2 * cx_sw_manifest(w)->gens[0].fragment.size + 4096);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/*
 * A merge and its drain land while a snapshot is being opened, between its
 * read of the base and its read of the shard manifest: the snapshot must
 * pair the drained shard manifest with the base that holds the merged rows,
 * never with the older base (which would lose them).
 */
static cx_objstore_ops hooked_ops;
static const cx_objstore_ops *real_ops;
static cx_shardwriter *hook_writer;	/* merge and drain it once; then NULL */
static cx_code hook_rc;

static cx_code
hooked_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		   cx_buf *out, cx_err *err)
{
	if (hook_writer != NULL && strncmp(key, "_shards/a/", 10) == 0)
	{
		cx_shardwriter *w = hook_writer;
		cx_objstore *other = mw_open_store();
		cx_merge_result res;
		cx_err		e2;

		hook_writer = NULL;
		hook_rc = other == NULL ? CX_ERR_IO :
			cx_merge_shard(other, "a", NULL, &res, &e2);
		if (hook_rc == CX_OK)
			hook_rc = mw_drain(s, w, &e2);
		cx_obj_close(other);
	}
	return real_ops->get(s, key, offset, len, out, err);
}

CX_TEST(tablescan_snapshot_survives_a_merge_and_drain_during_its_open)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	const cx_objstore_ops *saved;
	mw_rows r;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 30, 1, true, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 30, 30, 1, true, &err), &err);
	saved = s->ops;
	real_ops = saved;
	hooked_ops = *saved;
	hooked_ops.get = hooked_get;
	s->ops = &hooked_ops;
	hook_writer = w;
	hook_rc = CX_ERR_INVALID;
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	s->ops = saved;
	CHECK(hook_writer == NULL && hook_rc == CX_OK);
	CHECK(cx_sw_manifest(w)->ngens == 0);
	CHECK(r.n == 60 && r.pending == 0);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Snapshot GETs on reader, for the request counts below. */
static uint64_t
snapshot_gets(cx_objstore *reader, uint32_t *pending, cx_err *err)
{
	cx_snapshot *snap;
	uint64_t	before = reader->stats.gets;

	*pending = 0;
	if (cx_snapshot_open(reader, 0, &snap, err) != CX_OK)
		return 0;
	*pending = cx_snapshot_pending_generations(snap);
	cx_snapshot_close(snap);
	return reader->stats.gets - before;
}

/* A handle that comes back reads no shard manifest that did not change
 * (two HEADs each prove it is still there and the newest), and still sees
 * every seal made since. */
CX_TEST(snapshot_rereads_only_changed_shard_manifests)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *reader = mw_open_store();
	cx_shardwriter *w[3];
	const char *ids[3] = {"a", "b", "c"};
	uint64_t	cold;
	uint64_t	warm;
	uint64_t	heads;
	uint32_t	pending;
	cx_err		err;

	REQUIRE(s != NULL && reader != NULL);
	for (int i = 0; i < 3; i++)
	{
		REQUIRE_OK(mw_writer(s, ids[i], true, &w[i], &err), &err);
		REQUIRE_OK(mw_put(w[i], ids[i], 0, 10, 1, true, &err), &err);
	}
	cold = snapshot_gets(reader, &pending, &err);
	CHECK(pending == 3);
	heads = reader->stats.heads;
	warm = snapshot_gets(reader, &pending, &err);
	CHECK(pending == 3);
	/* Cold, each shard costs its hint and its manifest (2 GETs), and the
	 * base its manifest; warm, two HEADs each (and the base its 4, finding
	 * and re-checking the newest, whose manifest the handle kept). */
	CHECK(cold - warm == 2 * 3 + 1);
	heads = reader->stats.heads - heads;
	CHECK(heads == 2 * 3 + 4);

	/* A seal on one shard: that one manifest is read again, and seen. */
	REQUIRE_OK(mw_put(w[1], "b", 10, 5, 1, true, &err), &err);
	CHECK(snapshot_gets(reader, &pending, &err) == warm + 1);
	CHECK(pending == 4);
	CHECK(snapshot_gets(reader, &pending, &err) == warm);
	CHECK(pending == 4);
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(cx_sw_close(w[i], true, &err), &err);
	cx_obj_close(reader);
	cx_obj_close(s);
}
