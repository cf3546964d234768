/*
 * cx_memwal_int.h — the shard writer's private parts, shared by its files:
 *
 *   cx_shard_writer.c       appends, seals, drains
 *   cx_shard_claim.c        cx_sw_open: claim, fence marker, WAL replay
 *   cx_shard_commit.c       the shard-manifest commits both of them make
 *   cx_shard_base.c         the writer's base-manifest commits (registration,
 *                           the store's first schema), the merge watermark
 *                           and taking a changed schema
 *   cx_memtable.c           the memtable: encoded row batches since the last
 *                           seal
 *   cx_generation_writer.c  writing rows out as a generation fragment
 *   cx_shard_resolve.c      resolving write requests into PUTs and DELETEs
 *                           (staging), against the key caches and the base
 *   cx_key_cache.c          the newest version of each key of a set of rows
 */
#ifndef CX_SWINT_H
#define CX_SWINT_H

#include "memwal/cx_shard_writer.h"
#include "memwal/cx_key_cache.h"
#include "table/cx_manifest.h"

/* --------------------------------------------------------------------------
 * Memtable: the row batches appended since the last seal, in cx_row_encode()
 * form, each with its commit time.  Held in memory until sealed; its size is
 * bounded by the caller's flush policy (seal_on_insert, flush_interval,
 * explicit flushes; cx_sw_memtable_bytes() tells the caller how big it is).
 * -------------------------------------------------------------------------- */

typedef struct cx_mt_batch
{
	size_t		offset;			/* into cx_memtable.bytes */
	size_t		len;
	uint64_t	nrows;
	int64_t		commit_ts;
} cx_mt_batch;

typedef struct cx_memtable
{
	cx_buf		bytes;
	cx_mt_batch *batches;
	uint32_t	nbatches;
	uint32_t	cap;
	uint64_t	rows;
} cx_memtable;

void		cx_memtable_init(cx_memtable *mt);
void		cx_memtable_free(cx_memtable *mt);
/*
 * Adds the nrows rows in *rows as one batch.  Into an empty memtable they
 * move (the buffers are exchanged: no copy, and *rows is left empty);
 * otherwise they are copied and *rows is unchanged.
 */
cx_code		cx_memtable_add(cx_memtable *mt, cx_buf *rows, uint64_t nrows,
							int64_t commit_ts, cx_err *err);
/* Drops the newest batch (a sealed append whose seal failed). */
void		cx_memtable_pop(cx_memtable *mt);
/* Empties the memtable; a large buffer goes back (cx_buf_reset_small). */
void		cx_memtable_clear(cx_memtable *mt);

/* --------------------------------------------------------------------------
 * Generation writer: one generation fragment, the table's columns followed
 * by the hidden commit-time and tombstone columns, streamed to the store.
 * -------------------------------------------------------------------------- */

typedef struct cx_genw cx_genw;

/*
 * The zstd level of every generation, whatever the store's
 * compression_level: a generation lives until a merge rewrites its rows at
 * the store's level, so the seal takes zstd's fastest positive level (on
 * random keys a fifth of level 3's CPU for the same size).
 */
#define CX_GENERATION_COMPRESSION_LEVEL 1

cx_code		cx_genw_open(cx_objstore *s, const cx_schema *table,
						 const cx_fragw_options *opt, cx_genw **out,
						 cx_err *err);
/* Adds nrows rows in cx_row_encode() form of the table schema, all with
 * commit time ts; CX_ERR_CORRUPT (naming what) unless the bytes hold exactly
 * nrows rows. */
cx_code		cx_genw_add(cx_genw *g, const uint8_t *rows, size_t len,
						uint64_t nrows, int64_t ts, const char *what,
						cx_err *err);
/* Publishes the fragment as generation `gen` into *out (caller frees
 * out->fragment); frees g in every case. */
cx_code		cx_genw_finish(cx_genw *g, uint64_t gen, cx_generation *out,
						   cx_err *err);
void		cx_genw_abort(cx_genw *g);

/* --------------------------------------------------------------------------
 * The writer
 * -------------------------------------------------------------------------- */

struct cx_shardwriter
{
	cx_objstore *s;				/* borrowed */
	char	   *shard_id;
	char	   *writer_info;	/* owned copies of the option strings */
	char	   *key_column;
	cx_sw_options opt;			/* its strings point at the copies above */
	cx_shard_manifest *m;		/* newest version, written by us */
	cx_gen_entries *entries;	/* its list, encoded: what the next
								 * version's encoding copies */
	uint64_t	merged_gen;		/* watermark last read from the base */
	cx_schema  *schema;			/* the store's columns; NULL until known */
	uint64_t	next_seq;		/* where the next WAL entry goes */
	uint64_t	wal_covered;	/* WAL entries <= this are in the memtable
								 * or sealed: a seal's replay_seq */
	int64_t		last_ts;		/* newest commit time handed out */
	uint64_t	hint_version;	/* version the shard hint last got */
	bool		markers_maybe;	/* a dirty marker may exist that this
								 * writer did not delete */
	int64_t		current_at;		/* monotonic us when a put last proved this
								 * writer current (see revalidate) */
	cx_memtable mt;

	/*
	 * Resolving requests (cx_shard_resolve.c).  The writer's view of the
	 * live rows is base (the newest base version it knows, refreshed when
	 * it sees a newer one, at the latest when the shard drains) plus keys
	 * (this shard's rows base does not hold: trimmed through base's
	 * watermark only after base is replaced, so the two never miss a row),
	 * plus staged (the requests staged for the next append, whose resolved
	 * rows are staged_rows).  keys_lost: an update of keys failed after an
	 * append, so keys no longer covers every row; requests are refused
	 * until the writer is reopened.
	 */
	char	   *upsert_column;
	cx_manifest *base;
	cx_keycache *keys;
	cx_keycache *staged;
	cx_buf		staged_rows;
	uint64_t	staged_nrows;
	bool		keys_lost;
	bool		columns_known;	/* key_col and upsert_col are set */
	uint32_t	key_col;
	int32_t		upsert_col;		/* -1: no upsert column */

	/*
	 * Puts whose outcome is unknown (the put failed and reading it back
	 * failed, or found nothing although a timed-out request may still land).
	 * Each holds its place until the same bytes are put there again and
	 * land, or another writer's object is found there (fenced):
	 *   unsettled  a shard-manifest commit; nothing else is written until it
	 *              is settled (the next commit would go to the same version);
	 *   wal_unsettled, wal_bytes  a WAL entry at that seq (0: none) and its
	 *              bytes; no WAL entry is written past it until it is
	 *              settled (a claim's fence could take the gap).
	 */
	cx_shard_manifest *unsettled;
	uint64_t	wal_unsettled;
	cx_buf		wal_bytes;

	bool		fenced;			/* sticky: every call returns fence_err */
	cx_err		fence_err;
	cx_sw_stats stats;
};

/* cx_shard_writer.c */
/* Commit time for new rows: now, but always after the last one handed out. */
int64_t		cx_sw_next_ts(cx_shardwriter *w);
/* Best effort: the shard hint, if it is HINT_EVERY or more versions behind. */
void		cx_sw_maybe_hint(cx_shardwriter *w);

/* cx_shard_commit.c: the commits of the writer's epoch (the writer and its
 * claim both make them; this file calls neither) */
int64_t		cx_sw_now(const cx_shardwriter *w);

/* A put of ours just landed: nobody had claimed the shard before it. */
void		cx_sw_proved_current(cx_shardwriter *w);
/* Whether that was revalidate_after_ms or longer ago. */
bool		cx_sw_proof_stale(const cx_shardwriter *w);

/* Makes w fenced for good and returns CX_ERR_FENCED with the message. */
cx_code		cx_sw_fence(cx_shardwriter *w, cx_err *err, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
/* Fences w because what (a version or WAL seq) was written by other_epoch
 * (a newer claim, or another process sharing this one's). */
cx_code		cx_sw_fenced_by(cx_shardwriter *w, const char *what,
							uint64_t other_epoch, const char *other_writer,
							cx_err *err);

/*
 * The next shard-manifest version on top of w->m: a copy with version + 1, a
 * fresh commit id and commit time, and without the generations the known
 * watermark covers (draining is free when a commit happens anyway).
 */
cx_code		cx_sw_next_manifest(cx_shardwriter *w, cx_shard_manifest **out,
								cx_err *err);
/*
 * Writes next (from cx_sw_next_manifest, edited) at its version.  Landed:
 * w->m becomes next (ownership passes).  Taken by anyone: w is fenced.
 * Outcome unknown: w->unsettled takes next.  Failed: next is freed.
 */
cx_code		cx_sw_commit(cx_shardwriter *w, cx_shard_manifest *next,
						 cx_err *err);

/* Adds gen as m's newest generation (its fragment moves into m; gen is
 * zeroed) and moves next_gen past it. */
cx_code		cx_sw_add_generation(cx_shard_manifest *m, cx_generation *gen,
								 cx_err *err);

/* cx_shard_dirty.c */
/* Puts the dirty marker numbered version ("version or a later one may list
 * a generation"). */
cx_code		cx_shard_put_dirty_marker(cx_objstore *s, const char *shard_id,
									  uint64_t version, cx_err *err);
/* Before next is put: its marker, if it is the first version listing
 * generations after one listing none. */
cx_code		cx_sw_mark_dirty(cx_shardwriter *w, const cx_shard_manifest *next,
							 cx_err *err);
/* After a version landed: if it lists no generation, deletes the shard's
 * markers up to it (best effort). */
void		cx_sw_clear_dirty(cx_shardwriter *w);

/* cx_shard_base.c */
/* Registers the shard (and the table key) in the base manifest unless it is
 * already there, and reads the store schema and this shard's watermark. */
cx_code		cx_sw_register(cx_shardwriter *w, cx_err *err);
/* The first append to a store without a schema records it (a base commit);
 * later ones compare, after taking the newest base's schema if the store's
 * columns changed.  Rows of an older schema of the store that the current
 * one can take set *reshape (cx_rows_reshape).  CX_ERR_SCHEMA otherwise. */
cx_code		cx_sw_check_schema(cx_shardwriter *w, const cx_schema *schema,
							   bool *reshape, cx_err *err);
/* Refreshes w->merged_gen from the newest base manifest, which becomes the
 * writer's base view (cx_sw_keep_base). */
cx_code		cx_sw_read_watermark(cx_shardwriter *w, cx_err *err);

/* cx_shard_claim.c */
/* Registers, then resumes kept if it is still the shard's newest version,
 * else claims (kept may be NULL). */
cx_code		cx_sw_claim(cx_shardwriter *w, const cx_sw_kept *kept, cx_err *err);

/* cx_shard_resolve.c */
/* After the claim: the key cache from the listed unmerged generations. */
cx_code		cx_sw_keys_open(cx_shardwriter *w, cx_err *err);
/* What the next request would read first, read now (cx_shard_resolve.c). */
void		cx_sw_read_ahead(cx_shardwriter *w);
/* Takes base (ownership) as the writer's base view if it is newer than the
 * one it has, and trims the key cache through its watermark. */
void		cx_sw_keep_base(cx_shardwriter *w, cx_manifest *base);
/* The staged rows are in the memtable now (appended, or perhaps appended),
 * committed at ts into generation gen. */
void		cx_sw_keys_appended(cx_shardwriter *w, int64_t ts, uint64_t gen);
void		cx_sw_keys_free(cx_shardwriter *w);

#endif							/* CX_SWINT_H */
