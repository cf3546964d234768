/*
 * cx_shard_claim.c — claiming a shard (cx_sw_open): epoch + 1, registration,
 * fence marker, WAL replay (docs/design/memwal.md, "Claim").
 *
 *   1. Register the shard in the base manifest (once per shard lifetime),
 *      checking the table key first: an open that is refused for its
 *      options fences nobody.
 *   2. Claim: write the next shard-manifest version with epoch + 1.  From
 *      then on the previous writer's next seal collides with it.
 *   3. Fence: write a fence marker at the first free WAL seq.  From then on
 *      the previous writer's next WAL entry collides with it (or with an
 *      entry before it).  Its entries that landed between 2 and 3 (the
 *      stragglers) are below the marker.
 *   4. Replay: every rows entry between the replay position and the fence
 *      goes into one generation, committed with the replay position moved
 *      to the fence.  Generations the base marks as merged are dropped in
 *      the same commit.  An entry of a newer epoch there means a newer
 *      claim overtook this one: the claim fails before acknowledging
 *      anything, and its fence is a dead one later appends step over.
 *
 * A writer that kept its claim (cx_sw_close_keep) skips 2-4 when the shard's
 * newest version is still the one it wrote last: nobody claimed since.
 *
 * A crash anywhere leaves a state the next claim handles: a claim without a
 * fence is just an epoch the next claim passes; a fence without a replay
 * commit is skipped by the next replay (fence markers hold no rows); a
 * replayed generation whose commit did not land is an orphan fragment, and
 * its entries are still above the replay position, replayed once by the
 * next claim.  Nothing here loops without bound: the claim rebases a few
 * times on the previous writer's seals, the fence moves past a few
 * stragglers, then they give up with CX_ERR_CONFLICT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/cx_commit.h"
#include "util/cx_failpoint.h"
#include "memwal/cx_memwal_int.h"
#include "memwal/cx_wal.h"

#define MAX_CLAIM_REBASES 16	/* the previous writer's seals we wait out */
#define MAX_FENCE_STEPS 64		/* its straggler entries we step over */

/* --------------------------------------------------------------------------
 * 2. Claim
 * -------------------------------------------------------------------------- */

/* The claim version on top of cur (NULL: the shard's first version). */
static cx_code
build_claim(cx_shardwriter *w, const cx_shard_manifest *cur,
			cx_shard_manifest **out, cx_err *err)
{
	cx_shard_manifest *next;
	int64_t		now = cx_sw_now(w);

	*out = NULL;
	next = cur != NULL ? cx_shard_manifest_successor(cur) :
		cx_shard_manifest_new(w->shard_id);
	if (next == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "claiming shard %s: out of memory",
						  w->shard_id);
	next->version = cur != NULL ? cur->version + 1 : 1;
	next->epoch = cur != NULL ? cur->epoch + 1 : 1;
	next->committed_at_us = now;
	if (cur != NULL && now <= cur->committed_at_us)
		next->committed_at_us = cur->committed_at_us + 1;
	free(next->writer);
	next->writer = cx_strdup(w->writer_info != NULL ? w->writer_info : "");
	if (next->writer == NULL)
	{
		cx_shard_manifest_free(next);
		return cx_err_set(err, CX_ERR_NOMEM, "claiming shard %s: out of memory",
						  w->shard_id);
	}
	if (cx_random_bytes(next->commit_id, sizeof(next->commit_id), err) != CX_OK)
	{
		cx_shard_manifest_free(next);
		return err->code;
	}
	*out = next;
	return CX_OK;
}

/*
 * Writes the claim.  Losing the version to a manifest of the epoch we are
 * replacing means the previous writer sealed meanwhile: build on that and
 * try again (a few times).  Losing it to a newer epoch means another claim
 * won: CX_ERR_FENCED, and no retry — re-claiming is the caller's explicit
 * decision.
 */
static cx_code
claim_version(cx_shardwriter *w, cx_err *err)
{
	cx_shard_manifest *cur;
	cx_code		rc;

	if (cx_shard_manifest_load_latest(w->s, w->shard_id, 0, &cur, err) != CX_OK)
		return err->code;
	for (int attempt = 0; attempt < MAX_CLAIM_REBASES; attempt++)
	{
		cx_shard_manifest *next;
		cx_shard_manifest *winner;
		bool		unknown;
		uint64_t	cur_epoch = cur != NULL ? cur->epoch : 0;

		rc = build_claim(w, cur, &next, err);
		if (rc == CX_OK)
			rc = cx_shard_manifest_put(w->s, next, &winner, &unknown, err);
		if (rc == CX_OK && winner == NULL)
		{
			cx_shard_manifest_free(cur);
			w->m = next;
			cx_sw_clear_dirty(w);
			return CX_OK;
		}
		cx_shard_manifest_free(next);
		cx_shard_manifest_free(cur);
		if (rc != CX_OK)
			return rc;
		if (winner->epoch > cur_epoch)
		{
			rc = cx_err_set(err, CX_ERR_FENCED,
							"shard %s of %s was claimed concurrently by \"%.128s\" (epoch %llu)",
							w->shard_id, w->s->uri,
							winner->writer != NULL ? winner->writer : "",
							(unsigned long long) winner->epoch);
			cx_shard_manifest_free(winner);
			return rc;
		}
		cur = winner;
	}
	cx_shard_manifest_free(cur);
	return cx_err_set(err, CX_ERR_CONFLICT,
					  "shard %s of %s: its current writer committed %d times while this claim tried to land; gave up",
					  w->shard_id, w->s->uri, MAX_CLAIM_REBASES);
}

/* --------------------------------------------------------------------------
 * 3. Fence
 * -------------------------------------------------------------------------- */

/* WAL entries still to replay: listed ones above the replay position, then
 * the stragglers the fence stepped over.  Ascending. */
typedef struct seq_list
{
	uint64_t   *seqs;
	uint32_t	n;
	uint32_t	cap;
	uint64_t	after;			/* replay position: collect seqs above it */
	uint64_t	tip;			/* highest seq seen */
	bool		oom;
} seq_list;

static bool
seq_push(seq_list *l, uint64_t seq)
{
	if (l->n == l->cap)
	{
		uint32_t	cap = l->cap == 0 ? 64 : l->cap * 2;
		uint64_t   *grown;

		if (l->cap > UINT32_MAX / 2 ||
			(grown = realloc(l->seqs, cap * sizeof(uint64_t))) == NULL)
		{
			l->oom = true;
			return false;
		}
		l->seqs = grown;
		l->cap = cap;
	}
	l->seqs[l->n++] = seq;
	return true;
}

static bool
collect_seq(void *arg, uint64_t seq)
{
	seq_list   *l = arg;

	if (seq > l->tip)
		l->tip = seq;
	return seq <= l->after || seq_push(l, seq);
}

static cx_code
list_wal(cx_shardwriter *w, seq_list *l, cx_err *err)
{
	char		prefix[CX_KEY_MAX + 1];
	cx_vseq		q;

	cx_layout_wal(w->shard_id, prefix, &q);
	l->after = w->m->replay_seq;
	l->tip = w->m->replay_seq;
	if (cx_vseq_list(w->s, &q, collect_seq, l, err) != CX_OK)
		return err->code;
	if (l->oom)
		return cx_err_set(err, CX_ERR_NOMEM, "listing the WAL of shard %s: out of memory",
						  w->shard_id);
	return CX_OK;
}

/*
 * Puts the fence marker at the first free seq after the tip.  A seq taken
 * by an older epoch is a straggler of the previous writer (landed after the
 * listing): it is replayed, and the fence moves on.  A seq taken by our own
 * or a newer epoch means another claim is at work: fenced.
 */
static cx_code
place_fence(cx_shardwriter *w, seq_list *l, cx_err *err)
{
	cx_wal_entry e;

	memset(&e, 0, sizeof(e));
	e.kind = CX_WAL_FENCE;
	e.epoch = w->m->epoch;
	e.writer = w->writer_info;
	for (int step = 0; step < MAX_FENCE_STEPS; step++)
	{
		cx_wal_taken taken;
		bool		unknown;

		e.seq = l->tip + 1 + (uint64_t) step;
		e.commit_ts = cx_sw_now(w);
		if (cx_random_bytes(e.commit_id, sizeof(e.commit_id), err) != CX_OK ||
			cx_wal_put(w->s, w->shard_id, &e, &taken, &unknown, err) != CX_OK)
			return err->code;
		if (taken.epoch == 0)
		{
			w->next_seq = e.seq + 1;
			w->wal_covered = e.seq;
			cx_sw_proved_current(w);
			return CX_OK;
		}
		if (taken.epoch >= e.epoch)
			return cx_err_set(err, CX_ERR_FENCED,
							  "shard %s of %s: WAL entry %llu was written by epoch %llu while this claim holds epoch %llu; another claim is at work",
							  w->shard_id, w->s->uri, (unsigned long long) e.seq,
							  (unsigned long long) taken.epoch,
							  (unsigned long long) e.epoch);
		if (!seq_push(l, e.seq))
			return cx_err_set(err, CX_ERR_NOMEM, "placing the fence of shard %s: out of memory",
							  w->shard_id);
	}
	return cx_err_set(err, CX_ERR_CONFLICT,
					  "shard %s of %s: the previous writer kept writing WAL entries; no fence after %d tries",
					  w->shard_id, w->s->uri, MAX_FENCE_STEPS);
}

/* --------------------------------------------------------------------------
 * 4. Replay
 * -------------------------------------------------------------------------- */

/*
 * The entry's rows in the store's current schema: as they are, or (an entry
 * logged before the store's columns changed) re-encoded by field id into
 * *reshaped.
 */
static cx_code
entry_rows(const cx_shardwriter *w, const cx_wal_entry *e, const char *what,
		   cx_buf *reshaped, bool *reshape, cx_err *err)
{
	*reshape = !cx_schema_equal(w->schema, e->schema);
	if (!*reshape)
		return CX_OK;
	if (!cx_schema_reshapes_to(e->schema, w->schema))
	{
		/* Reports the first difference: the schemas are not equal. */
		(void) cx_commit_check_schema(w->schema, e->schema, err);
		return cx_err_prefix(err, "%s", what);
	}
	if (cx_rows_reshape(e->schema, w->schema, e->rows, e->rows_len, e->nrows,
						reshaped, err) != CX_OK)
		return cx_err_prefix(err, "%s", what);
	return CX_OK;
}

/* Adds one rows entry to the replay generation (opened on the first). */
static cx_code
replay_entry(cx_shardwriter *w, const cx_wal_entry *e, cx_genw **g,
			 cx_err *err)
{
	char		what[64 + CX_SHARD_ID_MAX];
	cx_buf		reshaped;
	bool		reshape;
	cx_code		rc;

	snprintf(what, sizeof(what), "WAL entry %llu of shard %s",
			 (unsigned long long) e->seq, w->shard_id);
	if (w->schema == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s holds rows but the store %s has no schema",
						  what, w->s->uri);
	cx_buf_init(&reshaped);
	rc = entry_rows(w, e, what, &reshaped, &reshape, err);
	if (rc == CX_OK && *g == NULL)
		rc = cx_genw_open(w->s, w->schema, &w->opt.fragment, g, err);
	if (rc == CX_OK && reshape)
		rc = cx_genw_add(*g, reshaped.data, reshaped.len, e->nrows,
						 e->commit_ts, what, err);
	else if (rc == CX_OK)
		rc = cx_genw_add(*g, e->rows, e->rows_len, e->nrows, e->commit_ts,
						 what, err);
	cx_buf_free(&reshaped);
	if (rc != CX_OK)
		return rc;
	if (e->commit_ts > w->last_ts)
		w->last_ts = e->commit_ts;
	w->stats.replayed_entries++;
	w->stats.replayed_rows += e->nrows;
	return CX_OK;
}

/*
 * An entry of a newer epoch below our fence: a newer claim landed after ours
 * and fenced (and perhaps appended) before we listed the WAL.  Our fence is
 * above its entries, so its next append would collide with our fence and
 * wrongly fence it; and with nothing to replay we would commit nothing and
 * never meet its claim version.  So the claim fails here, before this writer
 * acknowledges anything.
 */
static cx_code
superseded(cx_shardwriter *w, const cx_wal_entry *e, cx_err *err)
{
	return cx_err_set(err, CX_ERR_FENCED,
					  "shard %s of %s was claimed concurrently: WAL entry %llu was written by a newer claim (epoch %llu%s%.128s) than this one (epoch %llu)",
					  w->shard_id, w->s->uri, (unsigned long long) e->seq,
					  (unsigned long long) e->epoch,
					  e->writer != NULL ? ", " : "", e->writer != NULL ? e->writer : "",
					  (unsigned long long) w->m->epoch);
}

/* Streams the entries into one generation: one entry in memory at a time. */
static cx_code
replay_into(cx_shardwriter *w, const seq_list *l, cx_genw **g, cx_err *err)
{
	cx_buf		bytes;
	cx_code		rc = CX_OK;

	cx_buf_init(&bytes);
	for (uint32_t i = 0; i < l->n && rc == CX_OK; i++)
	{
		cx_wal_entry e;

		rc = cx_wal_read(w->s, w->shard_id, l->seqs[i], &bytes, &e, err);
		if (rc != CX_OK)
			break;
		if (e.epoch > w->m->epoch)
			rc = superseded(w, &e, err);
		else if (e.kind == CX_WAL_ROWS)
			rc = replay_entry(w, &e, g, err);
		cx_wal_entry_clear(&e);
	}
	cx_buf_free(&bytes);
	return rc;
}

static cx_code
replay(cx_shardwriter *w, const seq_list *l, cx_err *err)
{
	cx_genw    *g = NULL;
	cx_generation gen;
	cx_shard_manifest *next;
	cx_code		rc;

	memset(&gen, 0, sizeof(gen));
	if (replay_into(w, l, &g, err) != CX_OK)
	{
		cx_genw_abort(g);
		return err->code;
	}
	if (g != NULL &&
		(cx_genw_finish(g, w->m->next_gen, &gen, err) != CX_OK ||
		 CX_FAILPOINT("claim.after_replay", err) != CX_OK))
	{
		cx_fragment_info_free(&gen.fragment);
		return err->code;
	}
	if (cx_sw_next_manifest(w, &next, err) != CX_OK)
	{
		cx_fragment_info_free(&gen.fragment);
		return err->code;
	}
	/* Nothing replayed and nothing to drain: no commit needed. */
	if (g == NULL && next->ngens == w->m->ngens)
	{
		cx_shard_manifest_free(next);
		return CX_OK;
	}
	if (g != NULL && cx_sw_add_generation(next, &gen, err) != CX_OK)
	{
		cx_fragment_info_free(&gen.fragment);
		cx_shard_manifest_free(next);
		return err->code;
	}
	next->replay_seq = w->wal_covered;
	rc = cx_sw_commit(w, next, err);
	if (rc == CX_OK && g != NULL)
		w->stats.seals++;
	return rc;
}

/* --------------------------------------------------------------------------
 * A kept claim (docs/design/memwal.md, "Kept claims")
 * -------------------------------------------------------------------------- */

/* Whether newest is the version the kept claim wrote last: nobody claimed
 * the shard since (a claim writes a version before anything else). */
static bool
still_newest(const cx_shard_manifest *newest, const cx_sw_kept *kept)
{
	return newest != NULL && newest->version == kept->version &&
		newest->epoch == kept->epoch &&
		memcmp(newest->commit_id, kept->commit_id, sizeof(kept->commit_id)) == 0;
}

/*
 * Takes up the kept claim if it is still the shard's: the writer goes on
 * exactly where it stopped (its memtable was empty, so its manifest's
 * replay position covers every WAL entry it wrote).  *resumed false: it is
 * not, and the shard is to be claimed anew.
 */
static cx_code
resume(cx_shardwriter *w, const cx_sw_kept *kept, bool *resumed, cx_err *err)
{
	cx_shard_manifest *newest;

	*resumed = false;
	if (kept == NULL || kept->version == 0 ||
		strcmp(kept->shard_id, w->shard_id) != 0)
		return CX_OK;
	if (cx_shard_manifest_load_latest(w->s, w->shard_id, kept->version,
									  &newest, err) != CX_OK)
		return err->code;
	if (!still_newest(newest, kept))
	{
		cx_shard_manifest_free(newest);
		return CX_OK;
	}
	w->m = newest;
	w->next_seq = kept->next_seq;
	w->wal_covered = newest->replay_seq;
	w->last_ts = kept->last_ts > newest->committed_at_us ?
		kept->last_ts : newest->committed_at_us;
	w->hint_version = kept->hint_version;
	cx_sw_proved_current(w);
	*resumed = true;
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * The whole claim
 * -------------------------------------------------------------------------- */

cx_code
cx_sw_claim(cx_shardwriter *w, const cx_sw_kept *kept, cx_err *err)
{
	seq_list	l;
	cx_err		ignored;
	bool		resumed;
	cx_code		rc;

	if (cx_sw_register(w, err) != CX_OK ||
		CX_FAILPOINT("claim.after_register", err) != CX_OK ||
		resume(w, kept, &resumed, err) != CX_OK)
		return err->code;
	if (resumed)
		return CX_OK;
	w->stats.claims = 1;
	if (claim_version(w, err) != CX_OK ||
		CX_FAILPOINT("claim.after_commit", err) != CX_OK)
		return err->code;
	w->last_ts = w->m->committed_at_us;
	if (cx_shard_hint_write(w->s, w->shard_id, w->m->version, &ignored) == CX_OK)
	{
		w->hint_version = w->m->version;
		w->stats.hints++;
	}
	memset(&l, 0, sizeof(l));
	rc = list_wal(w, &l, err);
	if (rc == CX_OK)
		rc = place_fence(w, &l, err);
	if (rc == CX_OK)
		rc = CX_FAILPOINT("claim.after_fence", err);
	if (rc == CX_OK)
		rc = replay(w, &l, err);
	free(l.seqs);
	return rc;
}
