/*
 * test_shardwriter.c — the resident shard writer: claims and epochs, fencing
 * on both write paths, WAL replay after a crash (once, even when the replay
 * itself crashes), stragglers of a fenced writer, object writes per append,
 * commit times, the pending-generations limit, draining exactly the merged
 * generations, two first writers on distinct shards, every failpoint in
 * error mode, and kill -9 at each step in a child process.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "table/cx_commit.h"
#include "util/cx_failpoint.h"
#include "memwal/cx_shard_writer.h"
#include "memwal/cx_memwal_int.h"
#include "format/cx_row_codec.h"
#include "merge/cx_merge.h"
#include "objstore/cx_layout.h"
#include "objstore/cx_versioned.h"
#include "cx_test.h"
#include "mw_util.h"
#include "swtest.h"

/* --------------------------------------------------------------------------
 * Helpers
 * -------------------------------------------------------------------------- */

static cx_sw_options
opts(void)
{
	cx_sw_options o;

	cx_sw_options_default(&o);
	o.writer_info = "test pid 1";
	return o;
}

static cx_code
open_writer(cx_objstore *s, const char *shard, cx_shardwriter **w, cx_err *err)
{
	cx_sw_options o = opts();

	return cx_sw_open(s, shard, &o, w, err);
}

/* A writer of shard on a store that injects faults (NULL on failure, which
 * fails the test). */
static sw_wrap *
faulty_writer(const char *shard, cx_shardwriter **w)
{
	sw_wrap    *s = sw_wrap_open("/st");
	cx_err		err;

	if (s != NULL && open_writer(&s->base, shard, w, &err) == CX_OK)
		return s;
	cx_test_fail(__FILE__, __LINE__, s == NULL ? "no store" : err.msg);
	if (s != NULL)
		cx_obj_close(&s->base);
	return NULL;
}

/* Appends rows "<prefix><from>" .. "<prefix><from + count - 1>". */
static cx_code
append(cx_shardwriter *w, const char *prefix, int from, int count, bool seal,
	   cx_err *err)
{
	cx_schema  *schema = sw_schema();
	cx_buf		b;
	int64_t		ts;
	cx_code		rc;

	cx_buf_init(&b);
	sw_rows(&b, schema, prefix, from, count);
	rc = cx_sw_append(w, schema, b.data, b.len, (uint64_t) count, seal, &ts, err);
	cx_buf_free(&b);
	cx_schema_free(schema);
	return rc;
}

/* How often each of "<prefix>0" .. "<prefix><n - 1>" is in shard's
 * unmerged generations; fails the test unless each is there exactly once. */
static bool
exactly_once(cx_objstore *s, const char *shard, const char *prefix, int n)
{
	int		   *counts = calloc((size_t) n, sizeof(int));
	bool		ok;

	ok = sw_count_ids(s, shard, prefix, 0, n, counts) >= 0 &&
		sw_all_once(counts, n, prefix);
	free(counts);
	return ok;
}

/* How often "<prefix><i>" appears (-1 on error). */
static int
occurrences(cx_objstore *s, const char *shard, const char *prefix, int i)
{
	int			count = 0;

	if (sw_count_ids(s, shard, prefix, i, 1, &count) < 0)
		return -1;
	return count;
}

typedef struct watermark
{
	const char *shard;
	uint64_t	gen;
} watermark;

static cx_code
watermark_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
				 cx_err *err)
{
	const watermark *wm = arg;

	(void) base;
	return cx_manifest_set_merged_gen(next, wm->shard, wm->gen, err);
}

/* What a merge's base commit does to the shard list, without the merge. */
static cx_code
fake_merge(cx_objstore *s, const char *shard, uint64_t gen, cx_err *err)
{
	watermark	wm = {shard, gen};
	uint64_t	version;

	return cx_commit(s, "merge", watermark_rebase, &wm, NULL, &version, err);
}

static bool
gens_are(const cx_shardwriter *w, const uint64_t *want, uint32_t n)
{
	const cx_shard_manifest *m = cx_sw_manifest(w);

	if (m->ngens != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (m->gens[i].gen != want[i])
			return false;
	return true;
}

static uint64_t
writes(const cx_objstore *s)
{
	return s->stats.puts;
}

static uint64_t
reads(const cx_objstore *s)
{
	return s->stats.gets + s->stats.heads + s->stats.lists;
}

/* --------------------------------------------------------------------------
 * Claims
 * -------------------------------------------------------------------------- */

CX_TEST(sw_open_claims_and_registers_once)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_manifest *base;
	uint64_t	base_version;
	uint64_t	size;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(cx_sw_epoch(w) == 1);
	CHECK(cx_sw_manifest(w)->version == 1);
	CHECK(strcmp(cx_sw_manifest(w)->writer, "test pid 1") == 0);
	CHECK_CODE(cx_obj_head(s, "_shards/a/_latest", &size, &err), CX_OK);
	REQUIRE_OK(cx_manifest_load_latest(s, &base, &err), &err);
	REQUIRE(base != NULL);
	CHECK(cx_manifest_shard(base, "a") != NULL);
	CHECK(base->key_column != NULL && strcmp(base->key_column, "id") == 0);
	base_version = base->version;
	cx_manifest_free(base);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);

	/* A second claim: epoch + 1, no second registration. */
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(cx_sw_epoch(w) == 2);
	CHECK(cx_sw_manifest(w)->version == 2);
	REQUIRE_OK(cx_manifest_load_latest(s, &base, &err), &err);
	CHECK(base->version == base_version);
	cx_manifest_free(base);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

static cx_code
open_kept(cx_objstore *s, const char *shard, const cx_sw_kept *kept,
		  cx_shardwriter **w, cx_err *err)
{
	cx_sw_options o = opts();

	return cx_sw_open_kept(s, shard, &o, kept, w, err);
}

/* Closing keeps the claim; reopening resumes it with reads only, and the
 * writer goes on where it stopped (WAL seqs, versions, epoch). */
CX_TEST(sw_kept_claim_reopens_without_a_new_claim)
{
	cx_objstore *s = sw_store("/st");
	cx_objstore *sc = sw_store("/st");
	cx_shardwriter *w;
	cx_shardwriter *c;
	cx_sw_kept	kept;
	uint64_t	version;
	uint64_t	puts;
	cx_err		err;

	REQUIRE(s != NULL && sc != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(cx_sw_get_stats(w)->claims == 1);
	REQUIRE_OK(append(w, "r", 0, 2, true, &err), &err);
	REQUIRE_OK(append(w, "r", 2, 2, false, &err), &err);

	/* Rows in the memtable: nothing to keep (a claim must replay them). */
	cx_sw_close_keep(w, &kept);
	CHECK(kept.version == 0);
	REQUIRE_OK(open_kept(s, "a", &kept, &w, &err), &err);
	CHECK(cx_sw_epoch(w) == 2);
	CHECK(cx_sw_get_stats(w)->replayed_entries == 1);
	REQUIRE_OK(append(w, "r", 4, 1, false, &err), &err);
	REQUIRE_OK(cx_sw_seal(w, &err), &err);
	version = cx_sw_manifest(w)->version;
	cx_sw_close_keep(w, &kept);
	CHECK(kept.version == version && kept.epoch == 2);

	/* Resumed: no claim version, no fence marker, no replay. */
	puts = writes(s);
	REQUIRE_OK(open_kept(s, "a", &kept, &w, &err), &err);
	CHECK(writes(s) == puts);
	CHECK(cx_sw_get_stats(w)->claims == 0);
	CHECK(cx_sw_epoch(w) == 2);
	CHECK(cx_sw_manifest(w)->version == version);
	REQUIRE_OK(append(w, "r", 5, 1, false, &err), &err);
	REQUIRE_OK(append(w, "r", 6, 1, true, &err), &err);
	CHECK(cx_sw_manifest(w)->version == version + 1);
	CHECK(exactly_once(s, "a", "r", 7));

	/* A claim after the resume fences the resumed writer as usual. */
	REQUIRE_OK(open_writer(sc, "a", &c, &err), &err);
	CHECK(cx_sw_epoch(c) == 3);
	CHECK(cx_sw_get_stats(c)->replayed_entries == 0);
	CHECK_CODE(append(w, "r", 7, 1, false, &err), CX_ERR_FENCED);
	cx_sw_close_keep(w, &kept);
	CHECK(kept.version == 0);
	CHECK(exactly_once(sc, "a", "r", 7));
	REQUIRE_OK(cx_sw_close(c, true, &err), &err);
	cx_obj_close(s);
	cx_obj_close(sc);
}

/* A kept claim that another writer overtook is not resumed: the reopen
 * claims anew (fencing the other writer, replaying its WAL), and the kept
 * epoch is never written again. */
CX_TEST(sw_kept_claim_overtaken_claims_anew)
{
	cx_objstore *sa = sw_store("/st");
	cx_objstore *sb = sw_store("/st");
	cx_shardwriter *a;
	cx_shardwriter *b;
	cx_sw_kept	kept;
	cx_sw_kept	stale;
	cx_err		err;

	REQUIRE(sa != NULL && sb != NULL);
	REQUIRE_OK(open_writer(sa, "x", &a, &err), &err);
	REQUIRE_OK(append(a, "a", 0, 2, true, &err), &err);
	cx_sw_close_keep(a, &stale);
	REQUIRE(stale.version > 0 && stale.epoch == 1);

	/* Another cluster claims the shard and writes an unsealed entry. */
	REQUIRE_OK(open_writer(sb, "x", &b, &err), &err);
	CHECK(cx_sw_epoch(b) == 2);
	REQUIRE_OK(append(b, "b", 0, 2, false, &err), &err);

	/* The reopen notices, claims anew and replays B's acknowledged rows. */
	REQUIRE_OK(open_kept(sa, "x", &stale, &a, &err), &err);
	CHECK(cx_sw_get_stats(a)->claims == 1);
	CHECK(cx_sw_epoch(a) == 3);
	CHECK(cx_sw_get_stats(a)->replayed_entries == 1);
	CHECK_CODE(append(b, "b", 2, 1, false, &err), CX_ERR_FENCED);
	CHECK_CODE(append(b, "b", 2, 1, true, &err), CX_ERR_FENCED);
	REQUIRE_OK(append(a, "a", 2, 1, true, &err), &err);
	cx_sw_close_keep(a, &kept);
	CHECK(kept.epoch == 3);

	/* The stale kept claim (epoch 1) is overtaken too: a claim, epoch 4. */
	REQUIRE_OK(open_kept(sa, "x", &stale, &a, &err), &err);
	CHECK(cx_sw_get_stats(a)->claims == 1);
	CHECK(cx_sw_epoch(a) == 4);
	CHECK(exactly_once(sa, "x", "a", 3));
	CHECK(exactly_once(sa, "x", "b", 2));
	cx_sw_close(b, false, &err);
	REQUIRE_OK(cx_sw_close(a, true, &err), &err);
	cx_obj_close(sa);
	cx_obj_close(sb);
}

CX_TEST(sw_open_refuses_a_different_key)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_sw_options o = opts();
	cx_err		err;

	cx_shardwriter *refused;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	o.key_column = "n";
	CHECK_CODE(cx_sw_open(s, "a", &o, &refused, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, "key") != NULL);
	/* Refused before claiming: the writer in place is not fenced. */
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	CHECK(cx_sw_epoch(w) == 1);
	CHECK_CODE(cx_sw_open(s, "no/slash", NULL, &refused, &err), CX_ERR_INVALID);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Appends: object writes, schema, commit times
 * -------------------------------------------------------------------------- */

/* Ten sealed appends of one row, each writing puts_per_seal objects with
 * generations inlined up to inline_max bytes, then ten unsealed ones. */
static void
sealed_then_unsealed(uint32_t inline_max, uint64_t puts_per_seal)
{
	cx_objstore *s = sw_store("/st");
	cx_sw_options o = opts();
	cx_shardwriter *w;
	cx_err		err;
	uint64_t	p;
	uint64_t	r;

	REQUIRE(s != NULL);
	o.inline_generation_max = inline_max;
	REQUIRE_OK(cx_sw_open(s, "a", &o, &w, &err), &err);
	/* The first append records the store schema (one base commit). */
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	for (int i = 1; i < 11; i++)
	{
		p = writes(s);
		r = reads(s);
		REQUIRE_OK(append(w, "r", i, 1, true, &err), &err);
		CHECK(writes(s) - p == puts_per_seal);
		CHECK(reads(s) - r == 0);
	}
	for (int i = 11; i < 21; i++)
	{
		p = writes(s);
		r = reads(s);
		REQUIRE_OK(append(w, "r", i, 1, false, &err), &err);
		CHECK(writes(s) - p == 1);	/* WAL entry */
		CHECK(reads(s) - r == 0);
	}
	CHECK(cx_sw_memtable_rows(w) == 10);
	CHECK(cx_sw_memtable_bytes(w) > 0);
	p = writes(s);
	REQUIRE_OK(cx_sw_seal(w, &err), &err);
	/* Plus the shard hint every 64 versions. */
	CHECK(writes(s) - p <= puts_per_seal + 1);
	CHECK(cx_sw_memtable_rows(w) == 0);
	/* A seal of nothing writes nothing. */
	p = writes(s);
	REQUIRE_OK(cx_sw_seal(w, &err), &err);
	CHECK(writes(s) == p);
	CHECK(exactly_once(s, "a", "r", 21));
	CHECK(cx_sw_get_stats(w)->appends == 21);
	CHECK(cx_sw_get_stats(w)->wal_entries == 10);
	CHECK(cx_sw_get_stats(w)->seals == 12);
	CHECK(cx_sw_pending_generations(w) == 12);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

/* A small generation travels inside the shard manifest that seals it. */
CX_TEST(sw_small_sealed_append_is_one_put_unsealed_is_one)
{
	sealed_then_unsealed(CX_SW_DEFAULT_INLINE_MAX, 1);
}

/* Above inline_generation_max: generation fragment + shard manifest. */
CX_TEST(sw_large_sealed_append_is_two_puts)
{
	sealed_then_unsealed(0, 2);
}

/* The shard hint as a cold reader finds it (0: none). */
static uint64_t
shard_hint(cx_objstore *s, const char *shard_id)
{
	char		key[CX_KEY_MAX + 1];
	uint64_t	n = 0;
	cx_err		err;

	cx_layout_shard_hint(shard_id, key);
	if (cx_hint_read(s, key, &n, &err) != CX_OK)
		return 0;
	return n;
}

/* A shard written only by sealed appends keeps its hint within 64 versions
 * (one extra PUT in 64), so a cold reader's probe stays short however old
 * the shard grows. */
CX_TEST(sw_sealed_appends_keep_the_shard_hint_recent)
{
	cx_objstore *s = sw_store("/st");
	cx_objstore *cold = sw_store("/st");
	cx_shardwriter *w;
	cx_shard_manifest *m = NULL;
	uint64_t	p;
	uint64_t	r;
	cx_err		err;

	REQUIRE(s != NULL && cold != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(cx_sw_get_stats(w)->hints == 1);	/* the claim's */
	CHECK(shard_hint(s, "a") == cx_sw_manifest(w)->version);
	/* The first append records the store schema (one base commit). */
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	p = writes(s);
	for (int i = 1; i < 200; i++)
		REQUIRE_OK(append(w, "r", i, 1, true, &err), &err);
	CHECK(cx_sw_manifest(w)->version >= 200);
	CHECK(cx_sw_manifest(w)->version - shard_hint(s, "a") < 64);
	CHECK(cx_sw_get_stats(w)->hints == 1 + 3);
	CHECK(writes(s) - p == 199 + 3);	/* shard manifests, hints */
	r = reads(cold);
	REQUIRE_OK(cx_shard_manifest_load_latest(cold, "a", 0, &m, &err), &err);
	CHECK(m->version == cx_sw_manifest(w)->version);
	CHECK(reads(cold) - r <= 2 + 2 * 6 + 1);	/* hint, its HEAD, probe, GET */
	cx_shard_manifest_free(m);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(cold);
	cx_obj_close(s);
}

/* Each seal's version lists every pending generation; the writer encodes
 * only the one it adds and copies the others' entries as its last version
 * encoded them. */
CX_TEST(sw_seals_encode_only_their_new_generation)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	uint64_t	reused0;
	uint64_t	encoded0;
	uint64_t	reused;
	uint64_t	encoded;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	REQUIRE(cx_sw_pending_generations(w) == 1);
	cx_gen_entries_counts(w->entries, &reused0, &encoded0);
	for (int i = 1; i < 10; i++)
		REQUIRE_OK(append(w, "r", i, 1, true, &err), &err);
	CHECK(cx_sw_pending_generations(w) == 10);
	cx_gen_entries_counts(w->entries, &reused, &encoded);
	CHECK(encoded - encoded0 == 9);
	CHECK(reused - reused0 == 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9);
	CHECK(exactly_once(s, "a", "r", 10));
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

CX_TEST(sw_generation_fragments_carry_hidden_columns)
{
	cx_objstore *s = sw_store("/st");
	cx_objstore *in;
	cx_shardwriter *w;
	cx_fragr   *r;
	cx_rowgroup *g;
	const cx_schema *fs;
	const cx_generation *gen;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	REQUIRE_OK(append(w, "r", 0, 3, true, &err), &err);
	gen = &cx_sw_manifest(w)->gens[0];
	CHECK(gen->gen == 1 && gen->min_ts == gen->max_ts && gen->min_ts > 0);
	CHECK(gen->carrier == cx_sw_manifest(w)->version);
	REQUIRE_OK(cx_generation_open(s, cx_sw_manifest(w), gen, &in, &err), &err);
	REQUIRE_OK(cx_fragr_open(in, gen->fragment.path, gen->fragment.size, &r, &err), &err);
	fs = cx_fragr_schema(r);
	REQUIRE(fs->ncolumns == 4);
	CHECK(strcmp(fs->columns[2].name, CX_COL_COMMIT_TS) == 0 &&
		  fs->columns[2].type == CX_T_INT64);
	CHECK(strcmp(fs->columns[3].name, CX_COL_TOMBSTONE) == 0 &&
		  fs->columns[3].type == CX_T_BOOL);
	REQUIRE_OK(cx_fragr_read_group(r, 0, NULL, &g, &err), &err);
	for (uint32_t i = 0; i < 3; i++)
	{
		cx_datum	ts;
		cx_datum	tomb;

		cx_colvec_get(cx_rowgroup_column(g, 2), i, &ts);
		cx_colvec_get(cx_rowgroup_column(g, 3), i, &tomb);
		CHECK(!ts.isnull && ts.v.i64 == gen->min_ts);
		CHECK(!tomb.isnull && !tomb.v.b);
	}
	cx_rowgroup_free(g);
	cx_fragr_close(r);
	cx_generation_done(s, in);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

CX_TEST(sw_schema_is_recorded_then_enforced)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_schema  *other = cx_schema_new();
	cx_schema  *hidden = cx_schema_new();
	cx_manifest *base;
	cx_datum	nulls[2] = {{.isnull = true}, {.isnull = true}};
	cx_buf		b;
	int64_t		ts;
	cx_err		err;

	REQUIRE(s != NULL && other != NULL && hidden != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_schema_add(other, "id", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(other, "n", CX_T_INT32, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(hidden, "id", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(hidden, "_ctx_x", CX_T_INT32, 0, NULL, &err), &err);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	/* Reserved column names are refused before anything is recorded.  The
	 * row (NULL, NULL) is well-formed for both schemas. */
	cx_row_encode(other, CX_ROW_PUT, nulls, &b);
	CHECK_CODE(cx_sw_append(w, hidden, b.data, b.len, 1, true, &ts, &err), CX_ERR_SCHEMA);
	REQUIRE_OK(append(w, "r", 0, 1, false, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &base, &err), &err);
	CHECK(base->schema != NULL && base->schema->ncolumns == 2);
	cx_manifest_free(base);
	CHECK_CODE(cx_sw_append(w, other, b.data, b.len, 1, true, &ts, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, "\"n\"") != NULL);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	/* Another shard's writer learns the schema from the base. */
	REQUIRE_OK(open_writer(s, "b", &w, &err), &err);
	CHECK_CODE(cx_sw_append(w, other, b.data, b.len, 1, false, &ts, &err), CX_ERR_SCHEMA);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_schema_free(other);
	cx_schema_free(hidden);
	cx_buf_free(&b);
	cx_obj_close(s);
}

static int64_t test_clock;

static int64_t
stepped_clock(void)
{
	return test_clock;
}

CX_TEST(sw_commit_times_increase_when_the_clock_steps_back)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_sw_options o = opts();
	cx_schema  *schema = sw_schema();
	cx_buf		b;
	int64_t		ts;
	int64_t		prev = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	cx_buf_init(&b);
	sw_rows(&b, schema, "r", 0, 1);
	o.clock_us = stepped_clock;
	test_clock = 5000000;
	REQUIRE_OK(cx_sw_open(s, "a", &o, &w, &err), &err);
	for (int i = 0; i < 6; i++)
	{
		REQUIRE_OK(cx_sw_append(w, schema, b.data, b.len, 1, i % 2 == 0, &ts, &err), &err);
		CHECK(ts > prev);
		prev = ts;
		test_clock -= 1000000;	/* the clock steps back a second each time */
	}
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	/* A new claim (replaying the unsealed rows) continues after them. */
	REQUIRE_OK(cx_sw_open(s, "a", &o, &w, &err), &err);
	REQUIRE_OK(cx_sw_append(w, schema, b.data, b.len, 1, true, &ts, &err), &err);
	CHECK(ts > prev);
	CHECK(cx_sw_manifest(w)->committed_at_us >= ts);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_schema_free(schema);
	cx_buf_free(&b);
	cx_obj_close(s);
}

/* Invariant 6: a commit time inherited from a clock that ran ahead is
 * counted once it leads this clock by more than clock_ahead_warn_ms, with
 * both times, and a later claim inherits it too. */
CX_TEST(sw_commit_time_ahead_of_the_clock_is_reported)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_sw_options o = opts();
	const cx_sw_stats *st;
	const int64_t t = 100000000;
	int64_t		ahead_ts;
	cx_err		err;

	REQUIRE(s != NULL);
	CHECK(o.clock_ahead_warn_ms == 1000);
	o.clock_us = stepped_clock;
	test_clock = t;
	REQUIRE_OK(cx_sw_open(s, "a", &o, &w, &err), &err);
	st = cx_sw_get_stats(w);
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	/* Half a second back: within the threshold. */
	test_clock = t - 500000;
	REQUIRE_OK(append(w, "r", 1, 1, false, &err), &err);
	CHECK(st->clock_ahead_commits == 0 && st->clock_ahead_max_us == 0);
	/* Five seconds back (the earlier times came from a clock that was
	 * five seconds fast). */
	test_clock = t - 5000000;
	REQUIRE_OK(append(w, "r", 2, 1, true, &err), &err);
	CHECK(st->clock_ahead_commits == 1);
	CHECK(st->clock_ahead_clock_us == t - 5000000);
	CHECK(st->clock_ahead_commit_us > t && st->clock_ahead_commit_us < t + 10);
	CHECK(st->clock_ahead_max_us ==
		  (uint64_t) (st->clock_ahead_commit_us - st->clock_ahead_clock_us));
	ahead_ts = st->clock_ahead_commit_us;
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	/* The next claim starts after the shard's last commit time: ahead too. */
	REQUIRE_OK(cx_sw_open(s, "a", &o, &w, &err), &err);
	REQUIRE_OK(append(w, "r", 3, 1, true, &err), &err);
	CHECK(cx_sw_get_stats(w)->clock_ahead_commits == 1);
	CHECK(cx_sw_get_stats(w)->clock_ahead_commit_us > ahead_ts);
	/* Real time catches up: no longer counted. */
	test_clock = t + 10000000;
	REQUIRE_OK(append(w, "r", 4, 1, true, &err), &err);
	CHECK(cx_sw_get_stats(w)->clock_ahead_commits == 1);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	CHECK(exactly_once(s, "a", "r", 5));
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Fencing
 * -------------------------------------------------------------------------- */

CX_TEST(sw_second_open_fences_the_first_on_both_paths)
{
	cx_objstore *sa = sw_store("/st");
	cx_objstore *sb = sw_store("/st");
	cx_objstore *sc = sw_store("/st");
	cx_shardwriter *a;
	cx_shardwriter *b;
	cx_shardwriter *c;
	uint64_t	before;
	cx_err		err;

	REQUIRE(sa != NULL && sb != NULL && sc != NULL);
	REQUIRE_OK(open_writer(sa, "x", &a, &err), &err);
	REQUIRE_OK(append(a, "a", 0, 3, false, &err), &err);

	/* B claims: A's next seal collides with B's claim version. */
	REQUIRE_OK(open_writer(sb, "x", &b, &err), &err);
	CHECK(cx_sw_epoch(b) == 2);
	CHECK(cx_sw_get_stats(b)->replayed_entries == 1);
	before = writes(sa) + reads(sa);
	CHECK_CODE(cx_sw_seal(a, &err), CX_ERR_FENCED);
	CHECK(strstr(err.msg, "fenced") != NULL && strstr(err.msg, "epoch 2") != NULL);
	/* fragment, dirty marker (its first generation), put, read-back */
	CHECK(writes(sa) + reads(sa) - before <= 4);
	/* ... and stays fenced, without another request. */
	before = writes(sa) + reads(sa);
	CHECK_CODE(append(a, "a", 3, 1, false, &err), CX_ERR_FENCED);
	CHECK_CODE(append(a, "a", 3, 1, true, &err), CX_ERR_FENCED);
	CHECK_CODE(cx_sw_drain_through(a, 0, &err), CX_ERR_FENCED);
	CHECK(writes(sa) + reads(sa) == before);

	/* C claims: B's next unsealed append meets C's fence marker. */
	REQUIRE_OK(append(b, "b", 0, 2, false, &err), &err);
	REQUIRE_OK(open_writer(sc, "x", &c, &err), &err);
	before = writes(sb) + reads(sb);
	CHECK_CODE(append(b, "b", 2, 1, false, &err), CX_ERR_FENCED);
	CHECK(writes(sb) + reads(sb) - before == 2);	/* the put and its read-back */
	CHECK_CODE(cx_sw_seal(b, &err), CX_ERR_FENCED);
	CHECK_CODE(append(b, "b", 2, 1, false, &err), CX_ERR_FENCED);

	/* Every acknowledged row is there once: A's and B's unsealed rows. */
	CHECK(exactly_once(sc, "x", "a", 3));
	CHECK(exactly_once(sc, "x", "b", 2));
	CHECK(occurrences(sc, "x", "b", 2) == 0);

	cx_sw_close(a, false, &err);
	cx_sw_close(b, false, &err);
	REQUIRE_OK(cx_sw_close(c, true, &err), &err);
	cx_obj_close(sa);
	cx_obj_close(sb);
	cx_obj_close(sc);
}

CX_TEST(sw_straggler_between_claim_and_fence_is_replayed)
{
	cx_objstore *sa = sw_store("/st");
	cx_objstore *sb = sw_store("/st");
	cx_shardwriter *a;
	cx_shardwriter *b;
	cx_err		err;

	REQUIRE(sa != NULL && sb != NULL);
	REQUIRE_OK(open_writer(sa, "x", &a, &err), &err);
	REQUIRE_OK(append(a, "s", 0, 1, false, &err), &err);
	/* A claim that stops after its claim version, before its fence. */
	REQUIRE_OK(cx_failpoint_set("claim.after_commit=error", &err), &err);
	CHECK_CODE(open_writer(sb, "x", &b, &err), CX_ERR_IO);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	/* The old writer's WAL path still works, and acknowledges a row. */
	REQUIRE_OK(append(a, "s", 1, 1, false, &err), &err);
	/* The next claim fences it and replays the straggler. */
	REQUIRE_OK(open_writer(sb, "x", &b, &err), &err);
	CHECK(cx_sw_epoch(b) == 3);
	CHECK(cx_sw_get_stats(b)->replayed_entries == 2);
	CHECK(exactly_once(sb, "x", "s", 2));
	CHECK_CODE(append(a, "s", 2, 1, false, &err), CX_ERR_FENCED);
	cx_sw_close(a, false, &err);
	REQUIRE_OK(cx_sw_close(b, true, &err), &err);
	cx_obj_close(sa);
	cx_obj_close(sb);
}

CX_TEST(sw_idle_writer_revalidates_before_writing)
{
	cx_objstore *sa = sw_store("/st");
	cx_objstore *sb = sw_store("/st");
	cx_shardwriter *a;
	cx_shardwriter *b;
	cx_sw_options o = opts();
	uint64_t	claim;
	uint64_t	r;
	struct timespec pause = {0, 5000000};
	cx_err		err;

	REQUIRE(sa != NULL && sb != NULL);
	o.revalidate_after_ms = 2;
	/* GC removes versions carrying unmerged generations' bytes never; with
	 * generations as objects it may remove all of them. */
	o.inline_generation_max = 0;
	REQUIRE_OK(cx_sw_open(sa, "x", &o, &a, &err), &err);
	REQUIRE_OK(append(a, "a", 0, 1, true, &err), &err);
	/* Busy: no reads on the append path. */
	r = reads(sa);
	REQUIRE_OK(append(a, "a", 1, 1, true, &err), &err);
	CHECK(reads(sa) == r);
	REQUIRE_OK(open_writer(sb, "x", &b, &err), &err);
	claim = cx_sw_manifest(b)->version;
	REQUIRE_OK(append(b, "b", 0, 1, true, &err), &err);
	/* GC removes every version up to B's claim: A's next put would land. */
	for (uint64_t v = 1; v <= claim; v++)
	{
		char		key[CX_KEY_MAX + 1];

		cx_shard_manifest_key("x", v, key, sizeof(key));
		REQUIRE_OK(cx_obj_delete(sa, key, &err), &err);
	}
	nanosleep(&pause, NULL);
	CHECK_CODE(append(a, "a", 2, 1, true, &err), CX_ERR_FENCED);
	CHECK(strstr(err.msg, "epoch 2") != NULL);
	CHECK(exactly_once(sb, "x", "b", 1));
	cx_sw_close(a, false, &err);
	REQUIRE_OK(cx_sw_close(b, true, &err), &err);
	cx_obj_close(sa);
	cx_obj_close(sb);
}

typedef struct straggle
{
	cx_shardwriter *old;
	bool		done;
	cx_code		rc;
} straggle;

/* Runs once, right before the new writer's first WAL put (its fence). */
static void
old_writer_appends(void *arg, const char *key)
{
	straggle   *st = arg;
	cx_err		err;

	if (st->done || strstr(key, "/wal/") == NULL)
		return;
	st->done = true;
	st->rc = append(st->old, "s", 1, 1, false, &err);
}

CX_TEST(sw_fence_steps_over_a_straggler_at_the_tip)
{
	cx_objstore *sa = sw_store("/st");
	sw_wrap    *wb = sw_wrap_open("/st");
	cx_shardwriter *a;
	cx_shardwriter *b;
	straggle	st = {0};
	cx_err		err;

	REQUIRE(sa != NULL && wb != NULL);
	REQUIRE_OK(open_writer(sa, "x", &a, &err), &err);
	REQUIRE_OK(append(a, "s", 0, 1, false, &err), &err);
	st.old = a;
	wb->before_put = old_writer_appends;
	wb->arg = &st;
	/* The old writer's entry lands where the fence was going. */
	REQUIRE_OK(open_writer(&wb->base, "x", &b, &err), &err);
	CHECK(st.done && st.rc == CX_OK);
	CHECK(cx_sw_get_stats(b)->replayed_entries == 2);
	CHECK(exactly_once(sa, "x", "s", 2));
	CHECK_CODE(append(a, "s", 2, 1, false, &err), CX_ERR_FENCED);
	cx_sw_close(a, false, &err);
	REQUIRE_OK(cx_sw_close(b, true, &err), &err);
	cx_obj_close(sa);
	cx_obj_close(&wb->base);
}

typedef struct overtake
{
	const char *shard;
	bool		done;
	cx_code		rc;
	cx_objstore *store;
	cx_shardwriter *newer;
} overtake;

/* Runs once, when the claimant writes the shard hint: right after its
 * claim version landed, before it lists the WAL.  A newer claim opens (it
 * has nothing to replay, so it commits nothing after its fence). */
static void
newer_claim_opens(void *arg, const char *key)
{
	overtake   *ot = arg;
	cx_err		err;

	if (ot->done || strstr(key, "_shards/") == NULL ||
		strstr(key, "/_latest") == NULL)
		return;
	ot->done = true;
	ot->rc = open_writer(ot->store, ot->shard, &ot->newer, &err);
}

/* Invariant 2: a claimant overtaken between its claim and its WAL listing
 * finds the newer claim's fence in its listing and fails; it must not open
 * (with nothing to replay it commits nothing) and fence the newer writer
 * with its own later fence. */
CX_TEST(sw_claim_overtaken_before_listing_the_wal_fails)
{
	sw_wrap    *wn = sw_wrap_open("/st");
	overtake	ot = {.shard = "x", .store = sw_store("/st")};
	cx_shardwriter *n = NULL;
	cx_shardwriter *old;
	cx_err		err;

	REQUIRE(wn != NULL && ot.store != NULL);
	/* Nothing to replay for anyone: the old writer sealed and left. */
	REQUIRE_OK(open_writer(ot.store, "x", &old, &err), &err);
	REQUIRE_OK(append(old, "o", 0, 1, true, &err), &err);
	REQUIRE_OK(cx_sw_close(old, true, &err), &err);

	wn->before_put = newer_claim_opens;
	wn->arg = &ot;
	CHECK_CODE(open_writer(&wn->base, "x", &n, &err), CX_ERR_FENCED);
	CHECK(strstr(err.msg, "claimed concurrently") != NULL);
	REQUIRE(ot.done && ot.rc == CX_OK);
	/* The newer writer's first append is not fenced by the overtaken one. */
	REQUIRE_OK(append(ot.newer, "n", 0, 1, false, &err), &err);
	REQUIRE_OK(cx_sw_seal(ot.newer, &err), &err);
	CHECK(exactly_once(ot.store, "x", "n", 1));
	CHECK(exactly_once(ot.store, "x", "o", 1));
	cx_sw_close(n, false, &err);
	REQUIRE_OK(cx_sw_close(ot.newer, true, &err), &err);
	cx_obj_close(&wn->base);
	cx_obj_close(ot.store);
}

/* --------------------------------------------------------------------------
 * Recovery
 * -------------------------------------------------------------------------- */

CX_TEST(sw_crash_before_seal_replays_exactly_once)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	REQUIRE_OK(append(w, "r", 0, 5, false, &err), &err);
	REQUIRE_OK(append(w, "r", 5, 5, false, &err), &err);
	REQUIRE_OK(append(w, "r", 10, 5, false, &err), &err);
	/* The process dies: the writer goes away without sealing. */
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	CHECK(sw_count_ids(s, "a", "r", 0, 1, (int[1]) {0}) == 0);

	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(cx_sw_get_stats(w)->replayed_entries == 3);
	CHECK(cx_sw_get_stats(w)->replayed_rows == 15);
	CHECK(cx_sw_manifest(w)->ngens == 1);
	CHECK(cx_sw_manifest(w)->gens[0].fragment.rows == 15);
	CHECK(cx_sw_memtable_rows(w) == 0);
	CHECK(exactly_once(s, "a", "r", 15));
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);

	/* Nothing is replayed twice. */
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(cx_sw_get_stats(w)->replayed_entries == 0);
	CHECK(cx_sw_get_stats(w)->replayed_rows == 0);
	CHECK(cx_sw_manifest(w)->ngens == 1);
	CHECK(exactly_once(s, "a", "r", 15));
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

static bool
count_key(void *arg, const char *key, uint64_t size)
{
	(void) key;
	(void) size;
	(*(int *) arg)++;
	return true;
}

CX_TEST(sw_replay_that_crashes_before_its_commit_duplicates_nothing)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	int			fragments = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	REQUIRE_OK(append(w, "r", 0, 4, false, &err), &err);
	REQUIRE_OK(append(w, "r", 4, 4, false, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);

	REQUIRE_OK(cx_failpoint_set("claim.after_replay=error", &err), &err);
	CHECK_CODE(open_writer(s, "a", &w, &err), CX_ERR_IO);
	CHECK(strstr(err.msg, "failpoint claim.after_replay") != NULL);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);

	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(cx_sw_get_stats(w)->replayed_entries == 2);
	CHECK(cx_sw_manifest(w)->ngens == 1);
	CHECK(exactly_once(s, "a", "r", 8));
	/* The first replay's fragment is an orphan: written, never listed. */
	REQUIRE_OK(cx_obj_list(s, "data/", count_key, &fragments, &err), &err);
	CHECK(fragments == 2);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Unknown outcomes: the put failed and reading it back failed too
 * -------------------------------------------------------------------------- */

CX_TEST(sw_unknown_seal_outcome_is_settled_before_the_next_write)
{
	cx_shardwriter *w;
	sw_wrap    *s = faulty_writer("a", &w);
	uint64_t	version;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	s->match = "_shards/a/_versions/";

	/* The seal landed, but nobody could tell. */
	version = cx_sw_manifest(w)->version;
	s->fault = SW_FAULT_LAND_THEN_IO_GET_FAILS;
	s->faults = 1;
	CHECK_CODE(append(w, "r", 1, 1, true, &err), CX_ERR_IO);
	CHECK(strstr(err.msg, "outcome unknown") != NULL);
	/* The next write reads it back first: ours, so the rows are in. */
	REQUIRE_OK(append(w, "r", 2, 1, true, &err), &err);
	CHECK(cx_sw_manifest(w)->version == version + 2);
	CHECK(cx_sw_memtable_rows(w) == 0);

	/* The seal did not land, and nobody could tell: the next write puts
	 * the same version again (a late landing of the first put would then
	 * be harmless), so the unacknowledged rows land once. */
	s->fault = SW_FAULT_IO_GET_FAILS;
	s->faults = 1;
	CHECK_CODE(append(w, "r", 3, 1, true, &err), CX_ERR_IO);
	REQUIRE_OK(append(w, "r", 4, 1, true, &err), &err);
	CHECK(cx_sw_manifest(w)->version == version + 4);
	CHECK(exactly_once(&s->base, "a", "r", 5));
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(&s->base);
}

/*
 * A seal of unknown outcome whose generation fragment GC has removed
 * since (the writer stayed idle past the grace): the seal never landed
 * and never will, so settling it must not put it (it would list a
 * missing fragment); the memtable is sealed again and its rows land once
 * (they were published without their fragment; found by the simulation,
 * seed 27038).
 */
CX_TEST(sw_unknown_seal_whose_fragment_was_collected_is_sealed_again)
{
	cx_shardwriter *w;
	sw_wrap    *s = faulty_writer("a", &w);
	const cx_shard_manifest *u;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	s->match = "_shards/a/_versions/";
	s->fault = SW_FAULT_IO_GET_FAILS;
	s->faults = 1;
	CHECK_CODE(append(w, "r", 1, 1, true, &err), CX_ERR_IO);
	u = w->unsettled;
	REQUIRE(u != NULL && u->ngens > 0);
	REQUIRE_OK(cx_obj_delete(s->inner, u->gens[u->ngens - 1].fragment.path,
							 &err), &err);
	REQUIRE_OK(append(w, "r", 2, 1, true, &err), &err);
	CHECK(exactly_once(&s->base, "a", "r", 3));
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(&s->base);
}

CX_TEST(sw_unknown_wal_outcome_keeps_the_rows_at_most_once)
{
	cx_shardwriter *w;
	sw_wrap    *s = faulty_writer("a", &w);
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(append(w, "r", 0, 1, false, &err), &err);
	s->match = "/wal/";
	/* Landed, unacknowledged; then not landed, unacknowledged. */
	s->fault = SW_FAULT_LAND_THEN_IO_GET_FAILS;
	s->faults = 1;
	CHECK_CODE(append(w, "x", 0, 1, false, &err), CX_ERR_IO);
	s->fault = SW_FAULT_IO_GET_FAILS;
	s->faults = 1;
	CHECK_CODE(append(w, "x", 1, 1, false, &err), CX_ERR_IO);
	REQUIRE_OK(append(w, "r", 1, 1, false, &err), &err);
	REQUIRE_OK(cx_sw_seal(w, &err), &err);
	REQUIRE_OK(append(w, "r", 2, 1, false, &err), &err);
	/* Crash, recover: acknowledged rows once, the others at most once. */
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	REQUIRE_OK(open_writer(&s->base, "a", &w, &err), &err);
	CHECK(exactly_once(&s->base, "a", "r", 3));
	CHECK(occurrences(&s->base, "a", "x", 0) <= 1);
	CHECK(occurrences(&s->base, "a", "x", 1) <= 1);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(&s->base);
}

/* Invariant 3: a WAL entry of unknown outcome is settled before the writer
 * writes past it, so a claim's fence cannot take the gap it would leave. */
CX_TEST(sw_unknown_wal_entry_is_settled_before_writing_past_it)
{
	sw_wrap    *so = sw_wrap_open("/st");
	cx_objstore *sn = sw_store("/st");
	cx_shardwriter *o;
	cx_shardwriter *n;
	cx_err		err;

	REQUIRE(so != NULL && sn != NULL);
	REQUIRE_OK(open_writer(&so->base, "x", &o, &err), &err);
	REQUIRE_OK(append(o, "o", 0, 1, false, &err), &err);
	/* O's entry s does not land, and nobody can tell. */
	sw_wrap_arm(so, "/wal/", SW_FAULT_IO_GET_FAILS, 1);
	CHECK_CODE(append(o, "u", 0, 1, false, &err), CX_ERR_IO);
	/* N claims, sees the tip at s - 1 and puts its fence at s. */
	REQUIRE_OK(open_writer(sn, "x", &n, &err), &err);
	/* O must not acknowledge an entry at s + 1, above N's fence. */
	CHECK_CODE(append(o, "o", 1, 1, false, &err), CX_ERR_FENCED);
	CHECK(strstr(err.msg, "newer claim") != NULL);
	/* N, the rightful writer, is not fenced by O. */
	REQUIRE_OK(append(n, "n", 0, 1, false, &err), &err);
	REQUIRE_OK(cx_sw_seal(n, &err), &err);
	CHECK(exactly_once(sn, "x", "o", 1));
	CHECK(occurrences(sn, "x", "o", 1) == 0);
	CHECK(exactly_once(sn, "x", "n", 1));
	cx_sw_close(o, false, &err);
	REQUIRE_OK(cx_sw_close(n, true, &err), &err);
	cx_obj_close(&so->base);
	cx_obj_close(sn);
}

/* Invariant 1: every try of a put timed out and read back as absent, and the
 * put is applied later.  The writer settles it and does not meet its own
 * late object as someone else's. */
CX_TEST(sw_put_applied_after_its_tries_does_not_fence_the_writer)
{
	static const char *const paths[] = {"/wal/", "/_versions/"};

	for (int i = 0; i < 2; i++)
	{
		const char *shard = i == 0 ? "s0" : "s1";
		cx_shardwriter *w;
		sw_wrap    *s = faulty_writer(shard, &w);
		bool		sealed = i == 1;
		cx_err		err;

		REQUIRE(s != NULL);
		REQUIRE_OK(append(w, "r", 0, 1, sealed, &err), &err);
		sw_wrap_arm(s, paths[i], SW_FAULT_IO_LANDS_LATE, 1000);
		CHECK_CODE(append(w, "r", 1, 1, sealed, &err), CX_ERR_TIMEOUT);
		CHECK(strstr(err.msg, "outcome unknown") != NULL);
		s->faults = 0;
		REQUIRE_OK(append(w, "r", 2, 1, sealed, &err), &err);
		REQUIRE_OK(cx_sw_close(w, true, &err), &err);
		REQUIRE_OK(open_writer(&s->base, shard, &w, &err), &err);
		CHECK(exactly_once(&s->base, shard, "r", 3));
		REQUIRE_OK(cx_sw_close(w, true, &err), &err);
		cx_obj_close(&s->base);
	}
}

/* An inline seal is one PUT: when it lands but its answer and the read
 * back are lost, the writer settles it by putting the same version again
 * (it has no generation object whose absence would mean it never landed),
 * and the rows are there once. */
CX_TEST(sw_inline_seal_whose_answer_is_lost_is_settled)
{
	cx_shardwriter *w;
	sw_wrap    *s = faulty_writer("a", &w);
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	sw_wrap_arm(s, "/_versions/", SW_FAULT_LAND_THEN_IO_GET_FAILS, 1);
	CHECK(append(w, "r", 1, 1, true, &err) != CX_OK);
	CHECK(strstr(err.msg, "outcome unknown") != NULL);
	CHECK(s->faults == 0);
	REQUIRE_OK(append(w, "r", 2, 1, true, &err), &err);
	CHECK(cx_sw_manifest(w)->gens[cx_sw_manifest(w)->ngens - 1].carrier ==
		  cx_sw_manifest(w)->version);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	REQUIRE_OK(open_writer(&s->base, "a", &w, &err), &err);
	CHECK(exactly_once(&s->base, "a", "r", 3));
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(&s->base);
}

/* Invariant 1: the first upload of a generation fragment lands, its answer
 * is lost, the retry hears "exists": the object is ours and the seal
 * commits. */
CX_TEST(sw_fragment_upload_whose_retry_hears_exists_is_ours)
{
	cx_shardwriter *w;
	sw_wrap    *s = faulty_writer("a", &w);
	cx_sw_options o = opts();
	cx_err		err;

	REQUIRE(s != NULL);
	/* Generations of their own, uploaded as objects. */
	cx_sw_close(w, false, &err);
	o.inline_generation_max = 0;
	REQUIRE_OK(cx_sw_open(&s->base, "a", &o, &w, &err), &err);
	sw_wrap_arm(s, "data/", SW_FAULT_LAND_THEN_EXISTS, 1);
	REQUIRE_OK(append(w, "r", 0, 2, true, &err), &err);
	CHECK(s->faults == 0);
	/* And an I/O error after landing, on the seal of unsealed rows. */
	REQUIRE_OK(append(w, "r", 2, 1, false, &err), &err);
	sw_wrap_arm(s, "data/", SW_FAULT_LAND_THEN_IO, 1);
	REQUIRE_OK(cx_sw_seal(w, &err), &err);
	CHECK(s->faults == 0);
	CHECK(exactly_once(&s->base, "a", "r", 3));
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(&s->base);
}

/* --------------------------------------------------------------------------
 * Limits and draining
 * -------------------------------------------------------------------------- */

CX_TEST(sw_pending_generations_max_refuses_writes)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_sw_options o = opts();
	cx_err		err;

	REQUIRE(s != NULL);
	o.pending_generations_max = 3;
	REQUIRE_OK(cx_sw_open(s, "a", &o, &w, &err), &err);
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(append(w, "r", i, 1, true, &err), &err);
	CHECK_CODE(append(w, "r", 3, 1, true, &err), CX_ERR_LIMIT);
	CHECK(strstr(err.msg, "pending_generations_max") != NULL &&
		  strstr(err.msg, "merge") != NULL);
	CHECK_CODE(append(w, "r", 3, 1, false, &err), CX_ERR_LIMIT);
	CHECK(cx_sw_memtable_rows(w) == 0);
	/* A merge (on another handle) takes two: writes flow again. */
	REQUIRE_OK(fake_merge(s, "a", 2, &err), &err);
	REQUIRE_OK(append(w, "r", 3, 1, true, &err), &err);
	CHECK(cx_sw_pending_generations(w) == 2);
	{
		/* That seal dropped the merged generations on the way. */
		const uint64_t want[] = {3, 4};

		CHECK(gens_are(w, want, 2));
	}
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

CX_TEST(sw_drain_removes_exactly_the_merged_generations)
{
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	uint64_t	p;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(append(w, "r", i, 1, true, &err), &err);
	/* A merge commits generations 1-2 ... */
	REQUIRE_OK(fake_merge(s, "a", 2, &err), &err);
	/* ... while generation 4 is sealed. */
	REQUIRE_OK(append(w, "r", 3, 1, true, &err), &err);
	{
		const uint64_t all[] = {1, 2, 3, 4};
		const uint64_t left[] = {3, 4};

		CHECK(gens_are(w, all, 4));
		REQUIRE_OK(mw_drain(s, w, &err), &err);
		CHECK(gens_are(w, left, 2));
	}
	CHECK(cx_sw_get_stats(w)->drains == 1);
	CHECK(cx_sw_pending_generations(w) == 2);
	CHECK(occurrences(s, "a", "r", 2) == 1 && occurrences(s, "a", "r", 3) == 1);
	/* Nothing more to drain: no commit. */
	p = writes(s);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	CHECK(writes(s) == p);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	/* A new claim drains too. */
	REQUIRE_OK(fake_merge(s, "a", 3, &err), &err);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	{
		const uint64_t left[] = {4};

		CHECK(gens_are(w, left, 1));
	}
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Two writers, one store
 * -------------------------------------------------------------------------- */

typedef struct racer
{
	const char *shard;
	pthread_barrier_t *start;
	cx_code		rc;
	cx_err		err;
} racer;

static void *
race(void *arg)
{
	racer	   *r = arg;
	cx_objstore *s = NULL;
	cx_shardwriter *w = NULL;
	char		prefix[16];

	snprintf(prefix, sizeof(prefix), "%s-", r->shard);
	r->rc = cx_objstore_open(cx_test_uri("/st"), NULL, 0, &s, &r->err);
	pthread_barrier_wait(r->start);
	if (r->rc == CX_OK)
		r->rc = open_writer(s, r->shard, &w, &r->err);
	for (int i = 0; i < 30 && r->rc == CX_OK; i++)
		r->rc = append(w, prefix, i, 1, i % 3 != 0, &r->err);
	if (w != NULL && r->rc == CX_OK)
		r->rc = cx_sw_close(w, true, &r->err);
	else if (w != NULL)
		cx_sw_close(w, false, &r->err);
	cx_obj_close(s);
	return NULL;
}

CX_TEST(sw_two_first_writers_on_distinct_shards_both_succeed)
{
	pthread_barrier_t start;
	pthread_t	t[2];
	racer		r[2] = {{.shard = "east"}, {.shard = "west"}};
	cx_objstore *s;
	cx_manifest *base;
	cx_err		err;

	pthread_barrier_init(&start, NULL, 2);
	for (int i = 0; i < 2; i++)
	{
		r[i].start = &start;
		pthread_create(&t[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < 2; i++)
		if (r[i].rc != CX_OK)
			cx_test_fail(__FILE__, __LINE__, r[i].err.msg);
	s = sw_store("/st");
	REQUIRE(s != NULL);
	REQUIRE_OK(cx_manifest_load_latest(s, &base, &err), &err);
	REQUIRE(base != NULL);
	CHECK(base->nshards == 2 && base->schema != NULL);
	cx_manifest_free(base);
	CHECK(exactly_once(s, "east", "east-", 30));
	CHECK(exactly_once(s, "west", "west-", 30));
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Failpoints, error mode: the step fails, the store stays consistent
 * -------------------------------------------------------------------------- */

static void
arm(const char *spec)
{
	cx_err		err;

	if (cx_failpoint_set(spec, &err) != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
}

static bool
injected(cx_code rc, const cx_err *err, const char *name)
{
	return rc == CX_ERR_IO && strstr(err->msg, name) != NULL;
}

CX_TEST(sw_failpoints_in_error_mode_keep_the_store_consistent)
{
	static const char *const claim_steps[] = {
		"claim.after_register", "claim.after_commit", "claim.after_fence",
		"claim.after_replay",
	};
	cx_objstore *s = sw_store("/st");
	cx_shardwriter *w;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);

	/* append.after_wal: durable, not acknowledged; later rows unaffected. */
	arm("append.after_wal=error");
	CHECK(injected(append(w, "x", 0, 1, false, &err), &err, "append.after_wal"));
	arm("");
	REQUIRE_OK(append(w, "u", 0, 2, false, &err), &err);

	/* seal.after_fragment: the sealed append fails and is not kept; the
	 * unsealed rows before it are sealed later. */
	arm("seal.after_fragment=error");
	CHECK(injected(append(w, "y", 0, 1, true, &err), &err, "seal.after_fragment"));
	arm("");
	REQUIRE_OK(cx_sw_seal(w, &err), &err);
	CHECK(occurrences(s, "a", "y", 0) == 0);

	/* seal.after_commit: the error comes after the rows are in. */
	arm("seal.after_commit=error");
	CHECK(injected(append(w, "z", 0, 1, true, &err), &err, "seal.after_commit"));
	arm("");
	REQUIRE_OK(append(w, "u", 2, 1, true, &err), &err);
	CHECK(occurrences(s, "a", "z", 0) == 1);
	REQUIRE_OK(append(w, "u", 3, 2, false, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);

	/* Each claim step failing leaves a shard the next claim recovers. */
	for (size_t i = 0; i < sizeof(claim_steps) / sizeof(claim_steps[0]); i++)
	{
		char		spec[64];

		snprintf(spec, sizeof(spec), "%s=error", claim_steps[i]);
		arm(spec);
		CHECK(injected(open_writer(s, "a", &w, &err), &err, claim_steps[i]));
		arm("");
	}
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	CHECK(exactly_once(s, "a", "u", 5));
	CHECK(occurrences(s, "a", "x", 0) <= 1);

	/* drain.before_commit / drain.after_commit */
	REQUIRE_OK(fake_merge(s, "a", 1, &err), &err);
	arm("drain.before_commit=error");
	CHECK(injected(mw_drain(s, w, &err), &err, "drain.before_commit"));
	arm("drain.after_commit=error");
	CHECK(injected(mw_drain(s, w, &err), &err, "drain.after_commit"));
	arm("");
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	CHECK(cx_sw_manifest(w)->ngens > 0 && cx_sw_manifest(w)->gens[0].gen == 2);
	CHECK(cx_sw_get_stats(w)->drains == 1);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * kill -9 at each step: a child process armed through CTXSTORE_FAILPOINTS
 * -------------------------------------------------------------------------- */

#define CRASH_STORE_ENV "CX_SW_CRASH_STORE"
#define CRASH_STEP_ENV "CX_SW_CRASH_STEP"

/*
 * The child's part (a no-op in a normal run): open the shard, append
 * u0-u4 and u5-u9 unsealed, s0-s4 sealed, then close.  "claim" steps only
 * open.  The armed failpoint kills it somewhere on the way.
 */
CX_TEST(sw_crash_child)
{
	const char *uri = getenv(CRASH_STORE_ENV);
	const char *step = getenv(CRASH_STEP_ENV);
	cx_objstore *s;
	cx_shardwriter *w;
	cx_err		err;

	if (uri == NULL || step == NULL)
		return;
	if (cx_objstore_open(uri, NULL, 0, &s, &err) != CX_OK ||
		open_writer(s, "a", &w, &err) != CX_OK)
		_exit(3);
	if (strncmp(step, "claim.", 6) != 0 &&
		(append(w, "u", 0, 5, false, &err) != CX_OK ||
		 append(w, "u", 5, 5, false, &err) != CX_OK ||
		 append(w, "s", 0, 5, true, &err) != CX_OK))
		_exit(4);
	_exit(5);					/* the failpoint should have killed us */
}

/* Runs the child for step with spec armed; true if it died of SIGKILL. */
static bool
run_child(const char *uri, const char *step, const char *spec)
{
	pid_t		pid = fork();
	int			status;

	if (pid < 0)
		return false;
	if (pid == 0)
	{
		int			devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0)
			dup2(devnull, 1);
		setenv(CRASH_STORE_ENV, uri, 1);
		setenv(CRASH_STEP_ENV, step, 1);
		setenv(CX_FAILPOINT_ENV, spec, 1);
		execl("/proc/self/exe", "cx_tests", "sw_crash_child", (char *) NULL);
		_exit(2);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

typedef struct crash_case
{
	const char *spec;
	int			acked_u;		/* u0 .. u(acked_u - 1) were acknowledged */
	int			acked_s;		/* s0 .. s(acked_s - 1) too */
} crash_case;

CX_TEST(sw_kill9_at_each_step_loses_and_duplicates_nothing)
{
	static const crash_case cases[] = {
		{"append.after_wal=crash@2", 5, 0},
		{"seal.after_fragment=crash", 10, 0},
		{"seal.after_commit=crash", 10, 5},
		{"claim.after_register=crash", 10, 0},
		{"claim.after_commit=crash", 10, 0},
		{"claim.after_fence=crash", 10, 0},
		{"claim.after_replay=crash", 10, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		const crash_case *c = &cases[i];
		char		suffix[32];
		char		uri[4200];
		char		step[64];
		cx_objstore *s;
		cx_shardwriter *w;
		int			counts[10];
		cx_err		err;

		snprintf(suffix, sizeof(suffix), "/st%zu", i);
		snprintf(uri, sizeof(uri), "%s", cx_test_uri(suffix));
		snprintf(step, sizeof(step), "%.*s", (int) strcspn(c->spec, "="), c->spec);
		s = sw_store(suffix);
		REQUIRE(s != NULL);
		if (strncmp(step, "claim.", 6) == 0)
		{
			/* The shard has unsealed rows for the claim to replay. */
			REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
			REQUIRE_OK(append(w, "u", 0, 10, false, &err), &err);
			REQUIRE_OK(cx_sw_close(w, false, &err), &err);
		}
		if (!run_child(uri, step, c->spec))
		{
			cx_test_fail(__FILE__, __LINE__, c->spec);
			cx_obj_close(s);
			continue;
		}
		/* Recover twice: the second recovery must not add anything. */
		for (int round = 0; round < 2; round++)
		{
			REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
			REQUIRE_OK(cx_sw_close(w, false, &err), &err);
			REQUIRE(sw_count_ids(s, "a", "u", 0, 10, counts) >= 0);
			for (int k = 0; k < 10; k++)
				CHECK(k < c->acked_u ? counts[k] == 1 : counts[k] <= 1);
			REQUIRE(sw_count_ids(s, "a", "s", 0, 5, counts) >= 0);
			for (int k = 0; k < 5; k++)
				CHECK(k < c->acked_s ? counts[k] == 1 : counts[k] <= 1);
		}
		cx_obj_close(s);
	}
}

/* Two sealed generations, one of them merged: cx_shards_read counts only
 * the unmerged one, with its rows, and names the writer. */
CX_TEST(shards_read_counts_unmerged_generations)
{
	cx_objstore *s = sw_store("/st");
	cx_schema  *schema = sw_schema();
	cx_shardwriter *w;
	cx_shard_info *shards;
	cx_merge_result res;
	uint32_t	n;
	cx_buf		rows;
	int64_t		ts;
	cx_err		err;

	REQUIRE(s != NULL && schema != NULL);
	REQUIRE_OK(cx_shards_read(s, &shards, &n, &err), &err);
	CHECK(shards == NULL && n == 0);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	cx_buf_init(&rows);
	sw_rows(&rows, schema, "k", 0, 3);
	REQUIRE_OK(cx_sw_append(w, schema, rows.data, rows.len, 3, true, &ts, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	cx_buf_reset(&rows);
	sw_rows(&rows, schema, "k", 3, 2);
	REQUIRE_OK(cx_sw_append(w, schema, rows.data, rows.len, 2, true, &ts, &err), &err);
	REQUIRE_OK(cx_shards_read(s, &shards, &n, &err), &err);
	REQUIRE(n == 1);
	CHECK(strcmp(shards[0].shard_id, "a") == 0);
	CHECK(shards[0].merged_gen == 1);
	CHECK(shards[0].generations == 1 && shards[0].rows == 2);
	CHECK(shards[0].epoch == 1 && shards[0].version == cx_sw_manifest(w)->version);
	CHECK(shards[0].writer != NULL && strcmp(shards[0].writer, "test pid 1") == 0);
	cx_shards_free(shards, n);
	cx_buf_free(&rows);
	cx_schema_free(schema);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Malformed rows (truncated, or with bytes left over) are refused before
 * anything is written, and the writer goes on as if they never came. */
CX_TEST(sw_append_refuses_malformed_rows_before_writing)
{
	cx_objstore *s = sw_store("/st");
	cx_schema  *schema = sw_schema();
	cx_shardwriter *w;
	cx_buf		rows;
	uint64_t	p;
	int64_t		ts;
	cx_err		err;

	REQUIRE(s != NULL && schema != NULL);
	REQUIRE_OK(open_writer(s, "a", &w, &err), &err);
	REQUIRE_OK(append(w, "r", 0, 1, true, &err), &err);
	cx_buf_init(&rows);
	sw_rows(&rows, schema, "r", 1, 2);
	p = writes(s);
	CHECK_CODE(cx_sw_append(w, schema, rows.data, rows.len - 1, 2, false, &ts, &err),
			   CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "truncated") != NULL);
	CHECK_CODE(cx_sw_append(w, schema, rows.data, rows.len, 1, true, &ts, &err),
			   CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "left over") != NULL);
	CHECK(writes(s) == p);
	CHECK(cx_sw_memtable_rows(w) == 0);
	REQUIRE_OK(cx_sw_append(w, schema, rows.data, rows.len, 2, false, &ts, &err), &err);
	REQUIRE_OK(cx_sw_seal(w, &err), &err);
	CHECK(exactly_once(s, "a", "r", 3));
	cx_buf_free(&rows);
	cx_schema_free(schema);
	REQUIRE_OK(cx_sw_close(w, true, &err), &err);
	cx_obj_close(s);
}

/* Appends row i of the compression-level rows (mw_schema's columns, then
 * a generation's hidden commit time and tombstone) to g or, without g, to
 * fw. */
#define LEVEL_ROWS 2000
static cx_code
add_level_row(int i, cx_genw *g, cx_fragw *fw, cx_buf *rows, cx_err *err)
{
	cx_datum	d[5] = {{0}};
	char		id[64];

	snprintf(id, sizeof(id), "key-%07d-of-a-row-whose-text-repeats-%d",
			 (i * 7919) % LEVEL_ROWS, i % 7);
	d[0].v.bytes.ptr = (const uint8_t *) id;
	d[0].v.bytes.len = strlen(id);
	d[1].v.i64 = i % 97;
	d[2].isnull = true;			/* tags */
	d[3].v.i64 = 1000;
	if (g == NULL)
		return cx_fragw_append(fw, d, err);
	cx_buf_reset(rows);
	cx_row_encode(mw_schema(), CX_ROW_PUT, d, rows);
	return cx_genw_add(g, rows->data, rows->len, 1, 1000, "test", err);
}

/* *size: the stored size of the compression-level rows written at zstd
 * level `level` as a generation (cx_genw) or, when !generation, as a plain
 * fragment of the generation's schema. */
static cx_code
stored_at_level(cx_objstore *s, int level, bool generation, uint64_t *size,
				cx_err *err)
{
	cx_fragw_options o;
	cx_buf		rows;
	cx_schema  *written = NULL;
	cx_fragw   *fw = NULL;
	cx_genw    *g = NULL;
	cx_generation gen;
	char		key[CX_KEY_MAX + 1];
	cx_code		rc;

	cx_fragw_options_default(&o);
	o.compression_level = level;
	cx_buf_init(&rows);
	if (generation)
		rc = cx_genw_open(s, mw_schema(), &o, &g, err);
	else if ((rc = cx_shard_generation_schema(mw_schema(), &written, err)) == CX_OK &&
			 (rc = cx_fragment_new_key(key, sizeof(key), err)) == CX_OK)
		rc = cx_fragw_open(s, key, written, &o, &fw, err);
	for (int i = 0; rc == CX_OK && i < LEVEL_ROWS; i++)
		rc = add_level_row(i, g, fw, &rows, err);
	if (rc == CX_OK && generation)
		rc = cx_genw_finish(g, 1, &gen, err);
	else if (rc == CX_OK)
		rc = cx_fragw_finish(fw, &gen.fragment, err);
	else
	{
		cx_genw_abort(g);
		cx_fragw_abort(fw);
	}
	if (rc == CX_OK)
	{
		*size = gen.fragment.size;
		cx_fragment_info_free(&gen.fragment);
	}
	cx_schema_free(written);
	cx_buf_free(&rows);
	return rc;
}

/*
 * A generation is written at CX_GENERATION_COMPRESSION_LEVEL whatever the
 * store's compression_level (its rows are rewritten at the store's level
 * when merged); a plain fragment of the same rows honours the level.
 */
CX_TEST(sw_generations_use_their_own_compression_level)
{
	cx_objstore *s = mw_open_store();
	uint64_t	fast;
	uint64_t	best;
	uint64_t	gen19;
	uint64_t	gen3;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(stored_at_level(s, CX_GENERATION_COMPRESSION_LEVEL, false,
							   &fast, &err), &err);
	REQUIRE_OK(stored_at_level(s, 19, false, &best, &err), &err);
	REQUIRE_OK(stored_at_level(s, 19, true, &gen19, &err), &err);
	REQUIRE_OK(stored_at_level(s, 3, true, &gen3, &err), &err);
	CHECK(best < fast);			/* the rows tell the levels apart */
	CHECK(gen19 == fast);
	CHECK(gen3 == fast);
	cx_obj_close(s);
}
