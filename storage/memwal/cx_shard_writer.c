/*
 * cx_shard_writer.c — the resident writer of one shard: appends, seals,
 * drains and the shard-manifest commits they make (cx_shard_writer.h; the
 * protocol and the crash cases it survives are in docs/design/memwal.md).
 *
 * This writer is the only one that writes its epoch, so it never rebases:
 * it writes version + 1 of the manifest it wrote last, and whatever else
 * holds that version — or the WAL seq it writes next — was written by a
 * newer claim (or by a process sharing its claim, which is just as fatal).
 * Either way it is fenced, at once and for good: no retry, no wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cx_failpoint.h"
#include "table/cx_manifest.h"
#include "memwal/cx_memwal_int.h"
#include "memwal/cx_wal.h"

#define DEFAULT_REVALIDATE_MS 300000
#define DEFAULT_CLOCK_AHEAD_WARN_MS 1000
/* Shard-manifest versions between hints: a cold reader probes on from the
 * hint (about 2 log2 of how far behind it is in HEADs), and a hint is a PUT
 * that sealed appends, one PUT each otherwise, pay 1/HINT_EVERY of. */
#define HINT_EVERY 64
#define MAX_DEAD_FENCES 64		/* overtaken claims' fences an append skips */

void
cx_sw_options_default(cx_sw_options *o)
{
	memset(o, 0, sizeof(*o));
	o->key_column = CX_SW_DEFAULT_KEY_COLUMN;
	o->unique_key = CX_SW_DEFAULT_UNIQUE_KEY;
	o->pending_generations_max = CX_SW_DEFAULT_PENDING_MAX;
	o->revalidate_after_ms = DEFAULT_REVALIDATE_MS;
	o->clock_ahead_warn_ms = DEFAULT_CLOCK_AHEAD_WARN_MS;
	o->inline_generation_max = CX_SW_DEFAULT_INLINE_MAX;
	o->view_lag_generations = CX_SW_DEFAULT_VIEW_LAG;
	o->view_lag_keys = CX_SW_DEFAULT_VIEW_LAG_KEYS;
	cx_fragw_options_default(&o->fragment);
}

/* A commit time that runs ahead of the clock by more than the threshold
 * (cx_sw_stats says why that matters). */
static void
note_clock_ahead(cx_shardwriter *w, int64_t ts, int64_t now)
{
	int64_t		ahead = ts - now;

	if (ahead <= (int64_t) w->opt.clock_ahead_warn_ms * 1000)
		return;
	w->stats.clock_ahead_commits++;
	if ((uint64_t) ahead > w->stats.clock_ahead_max_us)
		w->stats.clock_ahead_max_us = (uint64_t) ahead;
	w->stats.clock_ahead_commit_us = ts;
	w->stats.clock_ahead_clock_us = now;
}

int64_t
cx_sw_next_ts(cx_shardwriter *w)
{
	int64_t		now = cx_sw_now(w);

	w->last_ts = now > w->last_ts ? now : w->last_ts + 1;
	note_clock_ahead(w, w->last_ts, now);
	return w->last_ts;
}

/*
 * Whether the unknown commit u was a seal whose generation fragment is
 * gone: GC removed it, which it does only to an object no version listed
 * and older than its grace, far longer than a request that timed out may
 * take to land.  So u did not land and never will, and putting it now
 * would publish a generation without its rows: the memtable, which still
 * holds them, is sealed again instead.  (An inline seal carries its rows
 * in u itself, so it can always still land.)  *rc: an error finding out.
 */
static bool
seal_cannot_land(cx_shardwriter *w, const cx_shard_manifest *u, cx_code *rc,
				 cx_err *err)
{
	uint64_t	size;

	*rc = CX_OK;
	if (u->next_gen == w->m->next_gen || u->ngens == 0 ||
		u->gens[u->ngens - 1].carrier == u->version)
		return false;
	*rc = cx_obj_head(w->s, u->gens[u->ngens - 1].fragment.path, &size, err);
	if (*rc != CX_ERR_NOT_FOUND)
		return false;
	*rc = CX_OK;
	return true;
}

/*
 * Settles a commit whose outcome was unknown by putting the same bytes at
 * its version again.  Reading the version back is not enough: finding
 * nothing there does not mean the first put will not still land (a request
 * that timed out), and a different commit at that version would then
 * collide with our own late object.  Until it lands, nothing else is
 * written.  A sealed append whose seal is settled so is durable although it
 * was not acknowledged (at most once, like an unknown WAL entry).
 */
static cx_code
settle(cx_shardwriter *w, cx_err *err)
{
	cx_shard_manifest *u = w->unsettled;
	cx_shard_manifest *winner;
	bool		unknown;
	char		what[64];
	cx_code		rc;

	if (seal_cannot_land(w, u, &rc, err))
	{
		w->unsettled = NULL;
		cx_shard_manifest_free(u);
		return CX_OK;
	}
	if (rc != CX_OK)
		return err->code;
	if (cx_shard_manifest_put(w->s, u, &winner, &unknown, err) != CX_OK)
		return cx_err_prefix(err, "shard %s: settling the unknown outcome of version %llu",
							 w->shard_id, (unsigned long long) u->version);
	w->unsettled = NULL;
	if (winner != NULL)
	{
		snprintf(what, sizeof(what), "shard manifest version %llu",
				 (unsigned long long) u->version);
		cx_shard_manifest_free(u);
		rc = cx_sw_fenced_by(w, what, winner->epoch, winner->writer, err);
		cx_shard_manifest_free(winner);
		return rc;
	}
	/* Ours.  If it was a seal, it holds the memtable. */
	if (u->next_gen != w->m->next_gen)
	{
		cx_memtable_clear(&w->mt);
		w->stats.seals++;
	}
	cx_shard_manifest_free(w->m);
	w->m = u;
	cx_sw_proved_current(w);
	return CX_OK;
}

/*
 * After a long idle spell, the put that would fence this writer may no
 * longer collide: GC may have removed the claim version that succeeded our
 * newest one (and a put there would then fork the shard).  So look for the
 * newest version the way a cold reader does, from the hint.
 */
static cx_code
revalidate(cx_shardwriter *w, cx_err *err)
{
	cx_shard_manifest *newest;
	cx_code		rc = CX_OK;

	if (cx_shard_manifest_load_latest(w->s, w->shard_id, 0, &newest, err) != CX_OK)
		return cx_err_prefix(err, "shard %s: re-reading the newest version after an idle spell",
							 w->shard_id);
	if (newest == NULL || newest->version < w->m->version)
		rc = cx_err_set(err, CX_ERR_CORRUPT,
						"shard %s of %s: version %llu, written by this writer, is no longer there",
						w->shard_id, w->s->uri, (unsigned long long) w->m->version);
	else if (newest->version > w->m->version)
	{
		char		what[64];

		snprintf(what, sizeof(what), "shard manifest version %llu",
				 (unsigned long long) newest->version);
		rc = cx_sw_fenced_by(w, what, newest->epoch, newest->writer, err);
	}
	else
		cx_sw_proved_current(w);
	cx_shard_manifest_free(newest);
	return rc;
}

/* Every write starts here: a fenced writer stays fenced, an unknown
 * outcome is settled first, an idle writer checks it is still current. */
static cx_code
begin_write(cx_shardwriter *w, cx_err *err)
{
	if (w->fenced)
	{
		*err = w->fence_err;
		return CX_ERR_FENCED;
	}
	if (w->unsettled != NULL && settle(w, err) != CX_OK)
		return err->code;
	if (cx_sw_proof_stale(w))
		return revalidate(w, err);
	return CX_OK;
}

void
cx_sw_maybe_hint(cx_shardwriter *w)
{
	cx_err		ignored;

	if (w->m->version < w->hint_version + HINT_EVERY)
		return;
	if (cx_shard_hint_write(w->s, w->shard_id, w->m->version, &ignored) == CX_OK)
	{
		w->hint_version = w->m->version;
		w->stats.hints++;
	}
}

/* --------------------------------------------------------------------------
 * Sealing
 * -------------------------------------------------------------------------- */

/* Writes the memtable out as one generation fragment into store. */
static cx_code
write_generation(cx_shardwriter *w, cx_objstore *store, cx_generation *gen,
				 cx_err *err)
{
	cx_genw    *g;

	if (cx_genw_open(store, w->schema, &w->opt.fragment, &g, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < w->mt.nbatches; i++)
	{
		const cx_mt_batch *b = &w->mt.batches[i];

		if (cx_genw_add(g, w->mt.bytes.data + b->offset, b->len, b->nrows,
						b->commit_ts, "memtable batch", err) != CX_OK)
		{
			cx_genw_abort(g);
			return err->code;
		}
	}
	return cx_genw_finish(g, w->m->next_gen, gen, err);
}

/*
 * A small memtable is written in memory; if its generation is within
 * inline_generation_max, next carries the bytes (*carried) and the seal is
 * one PUT.  Otherwise (also when the Parquet form outgrew the rows) the
 * generation becomes its own object, as large seals always do.
 */
static cx_code
write_inline(cx_shardwriter *w, const cx_shard_manifest *next,
			 cx_generation *gen, uint8_t **carried, cx_err *err)
{
	cx_objstore *mem;
	uint64_t	len;
	cx_code		rc;

	*carried = NULL;
	if (w->mt.bytes.len > w->opt.inline_generation_max)
		return write_generation(w, w->s, gen, err);
	if (cx_memstore_new(w->s->uri, &mem, err) != CX_OK)
		return err->code;
	rc = write_generation(w, mem, gen, err);
	if (rc == CX_OK)
		*carried = cx_memstore_take(mem, &len);
	cx_obj_close(mem);
	if (rc != CX_OK)
		return rc;
	if (*carried != NULL && len <= w->opt.inline_generation_max)
	{
		gen->carrier = next->version;
		return CX_OK;
	}
	free(*carried);
	*carried = NULL;
	cx_fragment_info_free(&gen->fragment);
	return write_generation(w, w->s, gen, err);
}

/*
 * The seal: memtable -> generation (inline, or its own fragment object) ->
 * next shard-manifest version listing it (replay position advanced past the
 * WAL entries it holds).  The memtable is cleared only once that version is
 * ours, so a seal that fails before is simply repeated later; its fragment
 * object, if any, is left for GC.
 */
static cx_code
seal(cx_shardwriter *w, cx_err *err)
{
	cx_generation gen;
	cx_shard_manifest *next;
	uint8_t    *carried;

	if (w->mt.nbatches == 0)
		return CX_OK;
	if (cx_sw_next_manifest(w, &next, err) != CX_OK)
		return err->code;
	if (write_inline(w, next, &gen, &carried, err) != CX_OK)
	{
		cx_shard_manifest_free(next);
		return err->code;
	}
	next->carried = carried;
	next->carried_len = carried != NULL ? gen.fragment.size : 0;
	if (CX_FAILPOINT("seal.after_fragment", err) != CX_OK ||
		cx_sw_add_generation(next, &gen, err) != CX_OK)
	{
		cx_fragment_info_free(&gen.fragment);
		cx_shard_manifest_free(next);
		return err->code;
	}
	if (next->replay_seq < w->wal_covered)
		next->replay_seq = w->wal_covered;
	if (cx_sw_commit(w, next, err) != CX_OK)
		return err->code;
	cx_memtable_clear(&w->mt);
	w->stats.seals++;
	return CX_FAILPOINT("seal.after_commit", err);
}

cx_code
cx_sw_seal(cx_shardwriter *w, cx_err *err)
{
	if (begin_write(w, err) != CX_OK || seal(w, err) != CX_OK)
		return err->code;
	cx_sw_maybe_hint(w);
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Appending
 * -------------------------------------------------------------------------- */

static uint32_t
pending(const cx_shardwriter *w)
{
	uint32_t	n = 0;

	for (uint32_t i = 0; i < w->m->ngens; i++)
		n += w->m->gens[i].gen > w->merged_gen;
	return n;
}

/* Refuses writes while too many generations are unmerged (invariant 7).  A
 * merge on another handle may have raised the watermark since we last
 * looked, so look again before refusing. */
static cx_code
check_pending(cx_shardwriter *w, cx_err *err)
{
	uint32_t	max = w->opt.pending_generations_max;

	if (pending(w) < max)
		return CX_OK;
	if (cx_sw_read_watermark(w, err) != CX_OK)
		return err->code;
	if (pending(w) < max)
		return CX_OK;
	return cx_err_set(err, CX_ERR_LIMIT,
					  "shard %s of %s has %u unmerged generations, the limit (pending_generations_max) is %u: merge the shard's generations before writing more",
					  w->shard_id, w->s->uri, pending(w), max);
}

/*
 * What a WAL seq found taken means.  An older epoch's fence marker was put
 * by a claim ours overtook (it landed its claim version before ours but
 * fenced after us): that claim finds our fence in its listing and fails
 * before acknowledging anything (cx_shard_claim.c), and a marker holds no
 * rows, so the seq is simply skipped: CX_OK.  Anything else there means this
 * writer is fenced.
 */
static cx_code
wal_collision(cx_shardwriter *w, uint64_t seq, const cx_wal_taken *taken,
			  cx_err *err)
{
	char		what[64];

	if (taken->epoch < w->m->epoch && taken->kind == CX_WAL_FENCE)
		return CX_OK;
	snprintf(what, sizeof(what), "WAL entry %llu", (unsigned long long) seq);
	return cx_sw_fenced_by(w, what, taken->epoch, NULL, err);
}

/* Puts the WAL entry encoded in w->wal_bytes at seq; *landed says whether
 * it holds the seq now (false: an overtaken claim's fence does). */
static cx_code
put_wal_bytes(cx_shardwriter *w, uint64_t seq, bool *landed, bool *unknown,
			  cx_err *err)
{
	cx_wal_taken taken;

	*landed = false;
	if (cx_wal_put_encoded(w->s, w->shard_id, seq, &w->wal_bytes, &taken,
						   unknown, err) != CX_OK)
		return err->code;
	if (taken.epoch != 0)
		return wal_collision(w, seq, &taken, err);
	*landed = true;
	cx_sw_proved_current(w);
	w->stats.wal_entries++;
	return CX_OK;
}

/*
 * An entry whose outcome is unknown is settled, by putting its bytes again,
 * before any entry goes past it.  Writing past a gap would let a claim that
 * listed the WAL meanwhile put its fence in the gap: our later entries would
 * land above the fence, be acknowledged, and never be replayed.  (Found
 * under an overtaken claim's fence, it did not land; its rows stay in the
 * memtable, unacknowledged, like those of any unknown outcome.)
 */
static cx_code
settle_wal(cx_shardwriter *w, cx_err *err)
{
	bool		landed;
	bool		unknown;

	if (w->wal_unsettled == 0)
		return CX_OK;
	if (put_wal_bytes(w, w->wal_unsettled, &landed, &unknown, err) != CX_OK)
		return err->code == CX_ERR_FENCED ? err->code :
			cx_err_prefix(err, "shard %s: settling the unknown outcome of WAL entry %llu",
						  w->shard_id, (unsigned long long) w->wal_unsettled);
	w->wal_unsettled = 0;
	cx_buf_free(&w->wal_bytes);
	return CX_OK;
}

/* Puts e at the next free seq, past overtaken claims' fences (a few). */
static cx_code
put_wal_entry(cx_shardwriter *w, cx_wal_entry *e, bool *unknown, cx_err *err)
{
	for (int step = 0; step < MAX_DEAD_FENCES; step++)
	{
		bool		landed;

		e->seq = w->next_seq;
		cx_buf_reset(&w->wal_bytes);
		if (cx_wal_encode(e, &w->wal_bytes, err) != CX_OK ||
			put_wal_bytes(w, e->seq, &landed, unknown, err) != CX_OK)
			return err->code;
		if (landed)
			return CX_OK;
		w->next_seq = e->seq + 1;
	}
	return cx_err_set(err, CX_ERR_CONFLICT,
					  "shard %s of %s: %d WAL seqs in a row hold fence markers of older claims; gave up",
					  w->shard_id, w->s->uri, MAX_DEAD_FENCES);
}

/* Unsealed append: WAL entry first (durable on return), then the memtable. */
static cx_code
append_wal(cx_shardwriter *w, const uint8_t *rows, size_t len, uint64_t nrows,
		   int64_t ts, cx_err *err)
{
	cx_wal_entry e;
	bool		unknown = false;
	cx_code		rc;

	if (settle_wal(w, err) != CX_OK)
		return err->code;
	memset(&e, 0, sizeof(e));
	e.kind = CX_WAL_ROWS;
	e.epoch = w->m->epoch;
	e.commit_ts = ts;
	e.nrows = nrows;
	e.schema = w->schema;
	e.rows = rows;
	e.rows_len = len;
	if (cx_random_bytes(e.commit_id, sizeof(e.commit_id), err) != CX_OK)
		return err->code;
	rc = put_wal_entry(w, &e, &unknown, err);
	if (!unknown)
		cx_buf_free(&w->wal_bytes);
	if (rc != CX_OK && !unknown)
		return rc;
	/* The seq is used (or may be): never write anything else there. */
	w->next_seq = e.seq + 1;
	w->wal_covered = e.seq;
	if (rc != CX_OK)
		w->wal_unsettled = e.seq;
	else if (CX_FAILPOINT("append.after_wal", err) != CX_OK)
		return err->code;

	/*
	 * Landed, or perhaps landed: the rows go to the memtable either way.  If
	 * the entry exists, its rows must be sealed by us, since the seal moves
	 * the replay position past it; if it does not, sealing rows that were
	 * never acknowledged is harmless.
	 */
	if (cx_memtable_add(&w->mt, &w->staged_rows, nrows, ts, err) != CX_OK)
		return err->code;
	return rc;
}

/* Sealed append of the staged rows: no WAL entry (it would be a wasted
 * PUT); the rows are durable and visible once the seal's commit is. */
static cx_code
append_sealed(cx_shardwriter *w, uint64_t nrows, int64_t ts, cx_err *err)
{
	if (cx_memtable_add(&w->mt, &w->staged_rows, nrows, ts, err) != CX_OK)
		return err->code;
	if (seal(w, err) == CX_OK)
	{
		cx_sw_maybe_hint(w);
		return CX_OK;
	}
	/* Not acknowledged, so not to be sealed later either — unless the
	 * outcome is unknown, which settle() decides. */
	if (w->unsettled == NULL)
		cx_memtable_pop(&w->mt);
	return err->code;
}

/* Appends the staged rows; *kept says whether they are in the memtable (or
 * sealed) now, acknowledged or not. */
static cx_code
append_rows(cx_shardwriter *w, bool seal_now, int64_t ts, bool *kept,
			cx_err *err)
{
	const uint8_t *rows = w->staged_rows.data;
	size_t		len = w->staged_rows.len;
	uint64_t	nrows = w->staged_nrows;
	uint64_t	seals = w->stats.seals;
	uint64_t	mt_rows = w->mt.rows;
	cx_code		rc;

	if (seal_now)
		rc = append_sealed(w, nrows, ts, err);
	else
		rc = append_wal(w, rows, len, nrows, ts, err);
	*kept = rc == CX_OK || w->stats.seals > seals || w->mt.rows > mt_rows;
	return rc;
}

cx_code
cx_sw_append_staged(cx_shardwriter *w, bool seal_now, int64_t *commit_ts,
					cx_err *err)
{
	uint64_t	gen;
	int64_t		ts;
	bool		kept = false;
	cx_code		rc;

	*commit_ts = 0;
	rc = begin_write(w, err);
	if (rc == CX_OK && w->staged_nrows > 0)
		rc = check_pending(w, err);
	if (rc == CX_OK && w->staged_nrows > 0)
	{
		gen = w->m->next_gen;	/* where the memtable goes */
		ts = cx_sw_next_ts(w);
		rc = append_rows(w, seal_now, ts, &kept, err);
		if (kept)
			cx_sw_keys_appended(w, ts, gen);
		if (rc == CX_OK)
		{
			w->stats.appends++;
			*commit_ts = ts;
		}
	}
	cx_sw_unstage(w);
	return rc;
}

cx_code
cx_sw_append(cx_shardwriter *w, const cx_schema *schema, const uint8_t *rows,
			 size_t rows_len, uint64_t nrows, bool seal_now,
			 int64_t *commit_ts, cx_err *err)
{
	cx_sw_resolved resolved;

	*commit_ts = 0;
	if (cx_sw_staged_rows(w) > 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: an append while requests are staged", w->shard_id);
	if (cx_sw_stage(w, schema, rows, rows_len, nrows, &resolved, err) != CX_OK)
		return err->code;
	return cx_sw_append_staged(w, seal_now, commit_ts, err);
}

/* --------------------------------------------------------------------------
 * Draining
 * -------------------------------------------------------------------------- */

/* Commits a version without the generations at or below w->merged_gen. */
static cx_code
drain(cx_shardwriter *w, cx_err *err)
{
	cx_shard_manifest *next;
	bool		any = false;

	for (uint32_t i = 0; i < w->m->ngens; i++)
		any |= w->m->gens[i].gen <= w->merged_gen;
	if (!any)
		return CX_OK;
	if (CX_FAILPOINT("drain.before_commit", err) != CX_OK ||
		cx_sw_next_manifest(w, &next, err) != CX_OK)
		return err->code;
	if (cx_sw_commit(w, next, err) != CX_OK)
		return err->code;
	w->stats.drains++;
	if (CX_FAILPOINT("drain.after_commit", err) != CX_OK)
		return err->code;
	cx_sw_maybe_hint(w);
	return CX_OK;
}

cx_code
cx_sw_note_merged(cx_shardwriter *w, uint64_t merged_through, cx_err *err)
{
	/* A merge merges listed generations: a watermark past the newest one is
	 * no merge's, and would drop generations sealed later. */
	if (merged_through >= w->m->next_gen)
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: drain through generation %llu, but the newest generation is %llu",
						  w->shard_id, (unsigned long long) merged_through,
						  (unsigned long long) w->m->next_gen - 1);
	if (merged_through > w->merged_gen)
		w->merged_gen = merged_through;
	return CX_OK;
}

cx_code
cx_sw_drain_through(cx_shardwriter *w, uint64_t merged_through, cx_err *err)
{
	if (begin_write(w, err) != CX_OK ||
		cx_sw_note_merged(w, merged_through, err) != CX_OK)
		return err->code;
	return drain(w, err);
}

/* --------------------------------------------------------------------------
 * Opening, closing, accessors
 * -------------------------------------------------------------------------- */

static void
sw_free(cx_shardwriter *w)
{
	free(w->shard_id);
	free(w->writer_info);
	free(w->key_column);
	cx_shard_manifest_free(w->m);
	cx_shard_manifest_free(w->unsettled);
	cx_buf_free(&w->wal_bytes);
	if (w->schema != NULL)
		cx_schema_free(w->schema);
	cx_memtable_free(&w->mt);
	cx_sw_keys_free(w);
	cx_gen_entries_free(w->entries);
	free(w);
}

/* Copies the option strings so the caller's may go away. */
static cx_code
copy_options(cx_shardwriter *w, const cx_sw_options *opt, cx_err *err)
{
	w->opt = *opt;
	if ((opt->writer_info != NULL &&
		 (w->writer_info = cx_strdup(opt->writer_info)) == NULL) ||
		(opt->key_column != NULL &&
		 (w->key_column = cx_strdup(opt->key_column)) == NULL) ||
		(opt->upsert_column != NULL &&
		 (w->upsert_column = cx_strdup(opt->upsert_column)) == NULL))
		return cx_err_set(err, CX_ERR_NOMEM, "opening a shard writer: out of memory");
	w->opt.writer_info = w->writer_info;
	w->opt.key_column = w->key_column;
	w->opt.upsert_column = w->upsert_column;
	if (w->opt.pending_generations_max == 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "pending_generations_max must be at least 1");
	return CX_OK;
}

cx_code
cx_sw_open(cx_objstore *s, const char *shard_id, const cx_sw_options *opt,
		   cx_shardwriter **out, cx_err *err)
{
	return cx_sw_open_kept(s, shard_id, opt, NULL, out, err);
}

cx_code
cx_sw_open_kept(cx_objstore *s, const char *shard_id,
				const cx_sw_options *opt, const cx_sw_kept *kept,
				cx_shardwriter **out, cx_err *err)
{
	cx_sw_options defaults;
	cx_shardwriter *w;

	*out = NULL;
	if (cx_shard_id_validate(shard_id, err) != CX_OK)
		return err->code;
	if (opt == NULL)
	{
		cx_sw_options_default(&defaults);
		opt = &defaults;
	}
	w = calloc(1, sizeof(cx_shardwriter));
	if (w == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "opening a shard writer: out of memory");
	w->s = s;
	w->markers_maybe = true;	/* until this writer deletes them */
	cx_memtable_init(&w->mt);
	cx_buf_init(&w->wal_bytes);
	cx_buf_init(&w->staged_rows);
	if ((w->shard_id = cx_strdup(shard_id)) == NULL ||
		(w->entries = cx_gen_entries_new()) == NULL)
	{
		sw_free(w);
		return cx_err_set(err, CX_ERR_NOMEM, "opening a shard writer: out of memory");
	}
	if (copy_options(w, opt, err) != CX_OK ||
		cx_sw_claim(w, kept, err) != CX_OK ||
		cx_sw_keys_open(w, err) != CX_OK)
	{
		sw_free(w);
		return err->code;
	}
	*out = w;
	return CX_OK;
}

cx_code
cx_sw_close(cx_shardwriter *w, bool seal_first, cx_err *err)
{
	cx_code		rc = CX_OK;

	if (w == NULL)
		return CX_OK;
	if (seal_first)
		rc = cx_sw_seal(w, err);
	sw_free(w);
	return rc;
}

/* Whether nothing of w's can still land or needs replaying: its claim can
 * be taken up again as it is. */
static bool
resumable(const cx_shardwriter *w)
{
	return !w->fenced && w->unsettled == NULL && w->wal_unsettled == 0 &&
		w->mt.nbatches == 0;
}

void
cx_sw_close_keep(cx_shardwriter *w, cx_sw_kept *kept)
{
	memset(kept, 0, sizeof(*kept));
	if (w == NULL)
		return;
	if (resumable(w))
	{
		strcpy(kept->shard_id, w->shard_id);
		kept->version = w->m->version;
		memcpy(kept->commit_id, w->m->commit_id, sizeof(kept->commit_id));
		kept->epoch = w->m->epoch;
		kept->next_seq = w->next_seq;
		kept->last_ts = w->last_ts;
		kept->hint_version = w->hint_version;
	}
	sw_free(w);
}

uint32_t
cx_sw_pending_generations(const cx_shardwriter *w)
{
	return pending(w);
}

uint64_t
cx_sw_memtable_rows(const cx_shardwriter *w)
{
	return w->mt.rows;
}

uint64_t
cx_sw_memtable_bytes(const cx_shardwriter *w)
{
	return w->mt.bytes.len;
}

uint64_t
cx_sw_cache_bytes(const cx_shardwriter *w)
{
	return (w->keys != NULL ? cx_kc_memory(w->keys) : 0) +
		(w->staged != NULL ? cx_kc_memory(w->staged) : 0) +
		(w->base != NULL ? cx_manifest_memory(w->base) : 0) +
		cx_gen_entries_memory(w->entries);
}

uint64_t
cx_sw_epoch(const cx_shardwriter *w)
{
	return w->m->epoch;
}

uint64_t
cx_sw_newest_gen(const cx_shardwriter *w)
{
	return w->m->ngens > 0 ? w->m->gens[w->m->ngens - 1].gen : 0;
}

const cx_shard_manifest *
cx_sw_manifest(const cx_shardwriter *w)
{
	return w->m;
}

const cx_sw_stats *
cx_sw_get_stats(const cx_shardwriter *w)
{
	return &w->stats;
}
