/*
 * cx_shard_commit.c — the shard-manifest commits of one writer's epoch, which
 * both the shard writer (cx_shard_writer.c) and its claim (cx_shard_claim.c)
 * make: the next version on top of the writer's, putting it (fenced if
 * anyone else holds that version), adding a generation, and the clocks they
 * stamp.  It calls neither of them, so the calls go one way:
 * cx_shard_writer.c -> cx_shard_claim.c -> this file.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_memwal_int.h"
#include "util/cx_clock.h"

int64_t
cx_sw_now(const cx_shardwriter *w)
{
	if (w->opt.clock_us != NULL)
		return w->opt.clock_us();
	return cx_clock_now_us();
}

void
cx_sw_proved_current(cx_shardwriter *w)
{
	w->current_at = cx_clock_mono_us();
}

bool
cx_sw_proof_stale(const cx_shardwriter *w)
{
	return cx_clock_mono_us() - w->current_at >=
		(int64_t) w->opt.revalidate_after_ms * 1000;
}

cx_code
cx_sw_fence(cx_shardwriter *w, cx_err *err, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(w->fence_err.msg, sizeof(w->fence_err.msg), fmt, ap);
	va_end(ap);
	w->fence_err.code = CX_ERR_FENCED;
	w->fenced = true;
	*err = w->fence_err;
	return CX_ERR_FENCED;
}

cx_code
cx_sw_fenced_by(cx_shardwriter *w, const char *what, uint64_t other_epoch,
				const char *other_writer, cx_err *err)
{
	uint64_t	ours = w->m->epoch;

	if (other_epoch > ours)
		return cx_sw_fence(w, err,
						   "shard %s of %s: fenced: %s was written by a newer claim (epoch %llu%s%s) than this writer's (epoch %llu); re-open the store to claim the shard again",
						   w->shard_id, w->s->uri, what,
						   (unsigned long long) other_epoch,
						   other_writer ? ", " : "", other_writer ? other_writer : "",
						   (unsigned long long) ours);
	return cx_sw_fence(w, err,
					   "shard %s of %s: fenced: %s was written by another process with epoch %llu while this writer holds epoch %llu; two processes write this shard (is ctxstore.shard_id unique per cluster?)",
					   w->shard_id, w->s->uri, what,
					   (unsigned long long) other_epoch,
					   (unsigned long long) ours);
}

cx_code
cx_sw_next_manifest(cx_shardwriter *w, cx_shard_manifest **out, cx_err *err)
{
	cx_shard_manifest *next = cx_shard_manifest_successor(w->m);
	int64_t		now = cx_sw_now(w);
	uint32_t	kept = 0;

	*out = NULL;
	if (next == NULL)
		return cx_err_set(err, CX_ERR_NOMEM,
						  "shard %s: preparing a commit: out of memory", w->shard_id);
	if (cx_random_bytes(next->commit_id, sizeof(next->commit_id), err) != CX_OK)
	{
		cx_shard_manifest_free(next);
		return err->code;
	}
	next->version = w->m->version + 1;
	/* Commit times never go backwards along the versions, and a version is
	 * never older than the rows it lists: a new claim starts its clock
	 * there. */
	next->committed_at_us = now;
	if (next->committed_at_us <= w->m->committed_at_us)
		next->committed_at_us = w->m->committed_at_us + 1;
	if (next->committed_at_us < w->last_ts)
		next->committed_at_us = w->last_ts;
	for (uint32_t i = 0; i < next->ngens; i++)
	{
		if (next->gens[i].gen <= w->merged_gen)
			cx_fragment_info_free(&next->gens[i].fragment);
		else
			next->gens[kept++] = next->gens[i];
	}
	next->ngens = kept;
	*out = next;
	return CX_OK;
}

cx_code
cx_sw_commit(cx_shardwriter *w, cx_shard_manifest *next, cx_err *err)
{
	cx_shard_manifest *winner;
	bool		unknown;
	char		what[64];
	cx_code		rc;

	if (cx_sw_mark_dirty(w, next, err) != CX_OK)
	{
		cx_shard_manifest_free(next);
		return err->code;
	}
	rc = cx_shard_manifest_put_reusing(w->s, next, w->entries, &winner,
									   &unknown, err);
	if (rc == CX_OK && winner == NULL)
	{
		cx_shard_manifest_free(w->m);
		w->m = next;
		cx_sw_proved_current(w);
		cx_sw_clear_dirty(w);
		return CX_OK;
	}
	if (rc == CX_OK)
	{
		snprintf(what, sizeof(what), "shard manifest version %llu",
				 (unsigned long long) next->version);
		rc = cx_sw_fenced_by(w, what, winner->epoch, winner->writer, err);
		cx_shard_manifest_free(winner);
	}
	if (unknown)
		w->unsettled = next;
	else
		cx_shard_manifest_free(next);
	return rc;
}

cx_code
cx_sw_add_generation(cx_shard_manifest *m, cx_generation *gen, cx_err *err)
{
	cx_generation *grown;

	if (m->ngens == UINT32_MAX)
		return cx_err_set(err, CX_ERR_LIMIT, "shard %s lists too many generations",
						  m->shard_id);
	grown = realloc(m->gens, ((size_t) m->ngens + 1) * sizeof(cx_generation));
	if (grown == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "shard %s: out of memory",
						  m->shard_id);
	m->gens = grown;
	m->gens[m->ngens++] = *gen;
	m->next_gen = gen->gen + 1;
	memset(gen, 0, sizeof(*gen));
	return CX_OK;
}

void
cx_sw_prepare_append(cx_shardwriter *w, bool sealed)
{
	char		prefix[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	cx_vseq		q;

	if (w->m == NULL)
		return;
	if (sealed)
		cx_layout_shard_versions(w->shard_id, prefix, &q);
	else
		cx_layout_wal(w->shard_id, prefix, &q);
	/* Any key of the directory: its puts all go there. */
	cx_vseq_key(&q, w->m->version + 1, key);
	cx_obj_prepare_put(w->s, key);
	if (!w->fenced)
		cx_sw_read_ahead(w);
}
