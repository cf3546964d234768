/*
 * test_resolve.c — the shard writer resolves write requests: INSERT fails
 * on a key live in the same request, an earlier staged request, the
 * memtable, an unmerged generation (also after a reopen) or the base;
 * deleted and truncated keys are free again; INSERT_IF_ABSENT drops live
 * keys; UPSERT supersedes its one live match (a second one is a
 * cardinality violation); a group of requests fails request by request and
 * appends its survivors once; the key cache follows appends and drains.
 */
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_memwal_int.h"
#include "merge/cx_merge.h"
#include "ctxstore/lifecycle.h"
#include "cx_test.h"
#include "mw_util.h"

#define SHARD "s1"

/* A writer of SHARD on a fresh store, upsert key "v" if upsert. */
static cx_code
open_writer(cx_objstore **s, bool unique, bool upsert, uint32_t pending_max,
			cx_shardwriter **w, cx_err *err)
{
	cx_sw_options o;

	mw_writer_options(unique, &o);
	o.view_lag_generations = 1;	/* a drain's merge becomes the view */
	o.upsert_column = upsert ? "v" : NULL;
	if (pending_max > 0)
		o.pending_generations_max = pending_max;
	if (*s == NULL && (*s = mw_open_store()) == NULL)
		return cx_err_set(err, CX_ERR_IO, "no store");
	return cx_sw_open(*s, SHARD, &o, w, err);
}

/* Adds a request row (id NULL: NULL key; v_null: NULL v) to b. */
static void
req_row(cx_buf *b, cx_row_kind kind, const char *id, int64_t v, bool v_null)
{
	cx_datum	d[3];

	memset(d, 0, sizeof(d));
	d[0].isnull = id == NULL;
	if (id != NULL)
	{
		d[0].v.bytes.ptr = (const uint8_t *) id;
		d[0].v.bytes.len = strlen(id);
	}
	d[1].isnull = v_null || kind == CX_ROW_DELETE;
	d[1].v.i64 = v;
	d[2].isnull = true;
	cx_row_encode(mw_schema(), kind, d, b);
}

/* Stages and appends one request of a single row. */
static cx_code
one(cx_shardwriter *w, cx_row_kind kind, const char *id, int64_t v,
	bool seal, cx_sw_resolved *out, cx_err *err)
{
	cx_buf		b;
	int64_t		ts;
	cx_code		rc;

	cx_buf_init(&b);
	req_row(&b, kind, id, v, false);
	rc = cx_sw_stage(w, mw_schema(), b.data, b.len, 1, out, err);
	if (rc == CX_OK)
		rc = cx_sw_append_staged(w, seal, &ts, err);
	cx_buf_free(&b);
	return rc;
}

static cx_code
insert(cx_shardwriter *w, const char *id, bool seal, cx_err *err)
{
	cx_sw_resolved r;

	return one(w, CX_ROW_INSERT, id, 0, seal, &r, err);
}

/* Merges SHARD and drains the writer through the merge. */
static cx_code
merge_and_drain(cx_objstore *s, cx_shardwriter *w, cx_err *err)
{
	cx_merge_result res;

	if (cx_sw_seal(w, err) != CX_OK ||
		cx_merge_shard(s, SHARD, NULL, &res, err) != CX_OK)
		return err->code;
	return cx_sw_drain_through(w, res.merged_through, err);
}

/* Visible rows with id, and the v of the last. */
static int
visible(cx_objstore *s, const char *id, int64_t *v)
{
	mw_rows		rows;
	cx_err		err;
	int			n;

	if (mw_scan(s, NULL, &rows, &err) != CX_OK)
	{
		cx_test_fail(__FILE__, __LINE__, err.msg);
		return -1;
	}
	n = mw_count(&rows, id, v);
	mw_rows_free(&rows);
	return n;
}

CX_TEST(resolve_insert_of_a_live_key_fails_in_every_layer)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	/* memtable (unsealed) */
	REQUIRE_OK(insert(w, "a", false, &err), &err);
	CHECK_CODE(insert(w, "a", false, &err), CX_ERR_UNIQUE);
	CHECK(strcmp(err.msg, "Key (id)=(a) already exists.") == 0);
	/* an unmerged generation */
	REQUIRE_OK(insert(w, "b", true, &err), &err);
	CHECK_CODE(insert(w, "b", true, &err), CX_ERR_UNIQUE);
	/* the base: the cache lets go of the merged rows, the base has them */
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	CHECK_CODE(insert(w, "a", true, &err), CX_ERR_UNIQUE);
	CHECK(cx_kc_keys(w->keys) == 0);
	CHECK_CODE(insert(w, "b", false, &err), CX_ERR_UNIQUE);
	/* a generation listed when the writer opens */
	REQUIRE_OK(insert(w, "c", true, &err), &err);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	CHECK(cx_kc_keys(w->keys) == 1);
	CHECK_CODE(insert(w, "c", true, &err), CX_ERR_UNIQUE);
	REQUIRE_OK(insert(w, "d", true, &err), &err);
	CHECK(visible(s, "a", NULL) == 1 && visible(s, "c", NULL) == 1 &&
		  visible(s, "d", NULL) == 1);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_deleted_key_can_be_inserted_again)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	/* deleted in the memtable */
	REQUIRE_OK(insert(w, "m", false, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_DELETE, "m", 0, false, &r, &err), &err);
	REQUIRE_OK(insert(w, "m", false, &err), &err);
	/* live in the base, deleted in a generation */
	REQUIRE_OK(insert(w, "g", true, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_DELETE, "g", 0, true, &r, &err), &err);
	REQUIRE_OK(insert(w, "g", true, &err), &err);
	CHECK_CODE(insert(w, "g", true, &err), CX_ERR_UNIQUE);
	/* deleted in the base too */
	REQUIRE_OK(one(w, CX_ROW_DELETE, "g", 0, true, &r, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(insert(w, "g", true, &err), &err);
	CHECK(visible(s, "g", NULL) == 1 && visible(s, "m", NULL) == 1);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_truncate_marker_hides_older_rows)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	cx_buf		b;
	int64_t		ts;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	REQUIRE_OK(insert(w, "base", true, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(insert(w, "gen", true, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_DELETE, NULL, 0, true, &r, &err), &err);
	REQUIRE_OK(insert(w, "base", true, &err), &err);
	REQUIRE_OK(insert(w, "gen", false, &err), &err);
	/* within one request: the marker hides the row before it only */
	cx_buf_init(&b);
	req_row(&b, CX_ROW_INSERT, "k", 0, false);
	req_row(&b, CX_ROW_DELETE, NULL, 0, false);
	req_row(&b, CX_ROW_INSERT, "k", 0, false);
	req_row(&b, CX_ROW_INSERT, "base", 0, false);
	REQUIRE_OK(cx_sw_stage(w, mw_schema(), b.data, b.len, 4, &r, &err), &err);
	CHECK(r.rows == 4);
	cx_sw_unstage(w);
	cx_buf_reset(&b);
	req_row(&b, CX_ROW_DELETE, NULL, 0, false);
	req_row(&b, CX_ROW_INSERT, "k", 0, false);
	req_row(&b, CX_ROW_INSERT, "k", 0, false);
	CHECK_CODE(cx_sw_stage(w, mw_schema(), b.data, b.len, 3, &r, &err),
			   CX_ERR_UNIQUE);
	CHECK(cx_sw_staged_rows(w) == 0);
	REQUIRE_OK(cx_sw_append_staged(w, true, &ts, &err), &err);
	CHECK(ts == 0);
	cx_buf_free(&b);
	/* the marker survives a reopen: it is read from its generation */
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	CHECK_CODE(insert(w, "gen", true, &err), CX_ERR_UNIQUE);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_insert_if_absent_drops_live_keys)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	cx_buf		b;
	int64_t		ts;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_PUT, "old", 1, true, &r, &err), &err);
	cx_buf_init(&b);
	req_row(&b, CX_ROW_INSERT_IF_ABSENT, "old", 2, false);
	req_row(&b, CX_ROW_INSERT_IF_ABSENT, "new", 3, false);
	req_row(&b, CX_ROW_INSERT_IF_ABSENT, "new", 4, false);
	REQUIRE_OK(cx_sw_stage(w, mw_schema(), b.data, b.len, 3, &r, &err), &err);
	CHECK(r.rows == 1 && r.dropped == 2);
	REQUIRE_OK(cx_sw_append_staged(w, true, &ts, &err), &err);
	cx_buf_free(&b);
	CHECK(visible(s, "old", &v) == 1 && v == 1);
	CHECK(visible(s, "new", &v) == 1 && v == 3);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_group_fails_request_by_request_and_appends_once)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	cx_buf		b;
	int64_t		ts;
	uint64_t	appends;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	cx_buf_init(&b);
	req_row(&b, CX_ROW_INSERT, "k1", 1, false);
	REQUIRE_OK(cx_sw_stage(w, mw_schema(), b.data, b.len, 1, &r, &err), &err);
	cx_buf_reset(&b);
	req_row(&b, CX_ROW_INSERT, "k2", 2, false);
	req_row(&b, CX_ROW_INSERT, "k2", 3, false);
	CHECK_CODE(cx_sw_stage(w, mw_schema(), b.data, b.len, 2, &r, &err),
			   CX_ERR_UNIQUE);
	cx_buf_reset(&b);
	req_row(&b, CX_ROW_INSERT, "k1", 4, false);
	CHECK_CODE(cx_sw_stage(w, mw_schema(), b.data, b.len, 1, &r, &err),
			   CX_ERR_UNIQUE);
	cx_buf_reset(&b);
	req_row(&b, CX_ROW_INSERT, "k2", 5, false);
	REQUIRE_OK(cx_sw_stage(w, mw_schema(), b.data, b.len, 1, &r, &err), &err);
	CHECK(cx_sw_staged_rows(w) == 2);
	/* nothing is written before the append; then once */
	CHECK(visible(s, "k1", NULL) == 0);
	appends = cx_sw_get_stats(w)->appends;
	REQUIRE_OK(cx_sw_append_staged(w, true, &ts, &err), &err);
	CHECK(cx_sw_get_stats(w)->appends == appends + 1);
	CHECK(cx_sw_staged_rows(w) == 0);
	cx_buf_free(&b);
	{
		int64_t		v = 0;

		CHECK(visible(s, "k1", &v) == 1 && v == 1);
		CHECK(visible(s, "k2", &v) == 1 && v == 5);
	}
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_upsert_supersedes_its_live_match)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, true, 0, &w, &err), &err);
	/* the match in the base */
	REQUIRE_OK(one(w, CX_ROW_UPSERT, "a", 7, true, &r, &err), &err);
	CHECK(r.rows == 1 && r.superseded == 0);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_UPSERT, "b", 7, false, &r, &err), &err);
	CHECK(r.rows == 2 && r.superseded == 1);
	/* in the memtable */
	REQUIRE_OK(one(w, CX_ROW_UPSERT, "c", 7, true, &r, &err), &err);
	CHECK(r.superseded == 1);
	CHECK(visible(s, "a", NULL) == 0 && visible(s, "b", NULL) == 0);
	CHECK(visible(s, "c", &v) == 1 && v == 7);
	/* its own key: a plain replace */
	REQUIRE_OK(one(w, CX_ROW_UPSERT, "c", 7, true, &r, &err), &err);
	CHECK(r.rows == 1 && r.superseded == 0);
	/* a live key that is not the match: the INSERT rule */
	CHECK_CODE(one(w, CX_ROW_UPSERT, "c", 8, true, &r, &err), CX_ERR_UNIQUE);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_upsert_with_a_null_value_is_an_insert)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	cx_buf		b;
	int64_t		ts;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, true, 0, &w, &err), &err);
	cx_buf_init(&b);
	req_row(&b, CX_ROW_UPSERT, "n1", 0, true);
	req_row(&b, CX_ROW_UPSERT, "n2", 0, true);
	REQUIRE_OK(cx_sw_stage(w, mw_schema(), b.data, b.len, 2, &r, &err), &err);
	CHECK(r.rows == 2 && r.superseded == 0);
	REQUIRE_OK(cx_sw_append_staged(w, true, &ts, &err), &err);
	cx_buf_reset(&b);
	req_row(&b, CX_ROW_UPSERT, "n1", 0, true);
	CHECK_CODE(cx_sw_stage(w, mw_schema(), b.data, b.len, 1, &r, &err),
			   CX_ERR_UNIQUE);
	cx_buf_free(&b);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_upsert_with_two_live_matches_is_a_cardinality_violation)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, true, 0, &w, &err), &err);
	/* PUTs (UPDATEs) do not resolve: two rows come to hold 5 */
	REQUIRE_OK(one(w, CX_ROW_PUT, "x", 5, true, &r, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_PUT, "y", 5, true, &r, &err), &err);
	CHECK_CODE(one(w, CX_ROW_UPSERT, "z", 5, true, &r, &err),
			   CX_ERR_CARDINALITY);
	CHECK(strstr(err.msg, "(id)=(y)") != NULL && strstr(err.msg, "(id)=(x)") != NULL &&
		  strstr(err.msg, "(v)=(5)") != NULL);
	CHECK(visible(s, "z", NULL) == 0);
	/* one of them deleted: a single match again */
	REQUIRE_OK(one(w, CX_ROW_DELETE, "x", 0, false, &r, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_UPSERT, "z", 5, true, &r, &err), &err);
	CHECK(r.superseded == 1);
	CHECK(visible(s, "y", NULL) == 0 && visible(s, "z", NULL) == 1);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_without_unique_keys_an_upsert_replaces_a_live_key)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_sw_resolved r;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, false, true, 0, &w, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_UPSERT, "a", 1, true, &r, &err), &err);
	REQUIRE_OK(one(w, CX_ROW_UPSERT, "a", 2, true, &r, &err), &err);
	CHECK(r.rows == 1 && r.superseded == 0);
	CHECK(visible(s, "a", &v) >= 1 && v == 2);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

CX_TEST(resolve_refused_append_leaves_its_keys_free)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, false, 1, &w, &err), &err);
	REQUIRE_OK(insert(w, "first", true, &err), &err);
	CHECK_CODE(insert(w, "late", true, &err), CX_ERR_LIMIT);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(insert(w, "late", true, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Removes every fragment version `version` of s lists (GC, once nothing
 * retained lists them any more). */
static cx_code
collect_fragments_of(cx_objstore *s, uint64_t version, cx_err *err)
{
	cx_manifest *m;
	cx_code		rc = CX_OK;

	if (cx_manifest_load(s, version, &m, err) != CX_OK)
		return err->code;
	for (uint32_t f = 0; f < m->nfragments && rc == CX_OK; f++)
		rc = cx_obj_delete(s, m->fragments[f].path, err);
	cx_manifest_free(m);
	return rc;
}

/*
 * A writer lets its base view fall view_lag_generations behind the merges it
 * drained, or its key cache grow to view_lag_keys keys, before it loads a
 * newer one: until then its key cache keeps the merged rows (a live key is
 * still a unique violation) and the checks read nothing; at the lag the
 * newer base becomes the view and the cache lets go of what it holds.
 * Three one-row generations reach a lag of 3 either way.
 */
static void
view_follows_merges(uint32_t lag_generations, uint32_t lag_keys)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_sw_options o;
	cx_objstats before;
	const char *ids[] = {"a", "b", "c"};
	cx_err		err;

	REQUIRE(s != NULL);
	mw_writer_options(true, &o);
	o.view_lag_generations = lag_generations;
	o.view_lag_keys = lag_keys;
	REQUIRE_OK(cx_sw_open(s, SHARD, &o, &w, &err), &err);
	for (int i = 0; i < 3; i++)
	{
		REQUIRE_OK(insert(w, ids[i], true, &err), &err);
		REQUIRE_OK(merge_and_drain(s, w, &err), &err);
		if (i == 2)
			break;
		/* i + 1 generations merged past the view */
		before = s->stats;
		CHECK_CODE(insert(w, "a", false, &err), CX_ERR_UNIQUE);
		CHECK(s->stats.gets == before.gets && s->stats.heads == before.heads);
		CHECK(cx_kc_keys(w->keys) == (uint64_t) i + 1);
		CHECK(cx_manifest_merged_gen(w->base, SHARD) == 0);
	}
	CHECK_CODE(insert(w, "a", false, &err), CX_ERR_UNIQUE);
	CHECK(cx_manifest_merged_gen(w->base, SHARD) == 3);
	CHECK(cx_kc_keys(w->keys) == 0);
	REQUIRE_OK(insert(w, "d", true, &err), &err);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	CHECK(visible(s, "a", NULL) == 1 && visible(s, "d", NULL) == 1);
	cx_obj_close(s);
}

CX_TEST(resolve_base_view_follows_merges_at_its_lag)
{
	view_follows_merges(3, 1000);
}

/* Large generations reach the keys bound long before the generations one. */
CX_TEST(resolve_base_view_follows_merges_at_its_key_bound)
{
	view_follows_merges(1000, 3);
}

/*
 * The writer's base view lists fragments a compaction replaced and GC then
 * collected: its INSERT check finds one gone, loads the newest base and
 * checks against that, so a live key is still a unique violation and a
 * new one goes in (the check failed with "not found"; found by the
 * simulation, seed 30 with CX_SIM_LENGTH=10).
 */
CX_TEST(resolve_base_view_whose_fragments_were_collected_is_reloaded)
{
	cx_objstore *s = NULL;
	cx_shardwriter *w;
	cx_compact_options co;
	cx_compact_result cres;
	uint64_t	viewed;
	cx_err		err;

	REQUIRE_OK(open_writer(&s, true, false, 0, &w, &err), &err);
	REQUIRE_OK(insert(w, "k1", true, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(insert(w, "k2", true, &err), &err);
	REQUIRE_OK(merge_and_drain(s, w, &err), &err);
	REQUIRE_OK(insert(w, "k3", false, &err), &err);	/* the view: 2 fragments */
	REQUIRE(w->base != NULL && w->base->nfragments == 2);
	viewed = w->base->version;
	cx_compact_options_default(&co);
	co.holder = "test";
	co.force = true;
	REQUIRE_OK(cx_compact(s, &co, NULL, &cres, &err), &err);
	REQUIRE(cres.compacted);
	REQUIRE_OK(collect_fragments_of(s, viewed, &err), &err);
	CHECK_CODE(insert(w, "k1", false, &err), CX_ERR_UNIQUE);
	REQUIRE_OK(insert(w, "k4", false, &err), &err);
	CHECK(w->base->version > viewed);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	CHECK(visible(s, "k1", NULL) == 1 && visible(s, "k4", NULL) == 1);
	cx_obj_close(s);
}
