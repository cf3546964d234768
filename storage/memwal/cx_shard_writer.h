/*
 * cx_shardwriter.h — the resident writer of one shard of one store (MemWAL).
 *
 * The writer worker keeps one cx_shardwriter per store, opened once: the
 * claim (epoch + 1), the fence marker and the WAL replay happen in
 * cx_sw_open(), never per append.
 *
 * Write path:
 *   append(seal = false): WAL entry "_shards/<id>/wal/<20-digit seq>.wal"
 *       written put-if-absent at the next seq (durable on return), rows go
 *       to the memtable;  visible after the next seal.
 *   append(seal = true):  rows go to the memtable and the memtable is sealed
 *       at once: no WAL entry (it would be a wasted PUT).  Visible on return.
 *   seal:  memtable -> generation fragment -> next shard-manifest version
 *       listing it, with replay_seq advanced past the WAL entries it holds.
 *       A sealed append therefore costs exactly 2 PUTs, an unsealed one 1.
 *   Every shard-manifest commit also leaves out the generations the writer
 *   knows to be merged (a drain for free).  The shard hint is written by the
 *   claim and then, once 16 versions behind, by seals, drains and closes
 *   that are not part of an append (never on the append path).  A put whose
 *   outcome is unknown is settled by putting the same bytes there again: a
 *   shard manifest before the writer writes anything else, a WAL entry
 *   before the next WAL entry (so the WAL has no gap below a later entry).
 *
 * Fencing: every write that can collide with a newer writer is put-if-absent
 * (WAL entries at seq, shard manifests at version + 1).  A collision is read
 * back: an object of a newer epoch (a fence marker, an entry, a manifest)
 * means this writer is fenced: CX_ERR_FENCED, and the writer stays fenced
 * (every later call fails the same way).  Re-claiming is an explicit new
 * cx_sw_open(); nothing here retries a claim.  Only an older epoch's fence
 * marker at the next WAL seq is stepped over: a claim that ours overtook
 * put it, and that claim fails.
 *
 * Claim (cx_sw_open): register the shard in the base manifest if it is not
 * there (a base commit, once per shard lifetime, so readers find it; the
 * table key is checked or recorded first, so a refused open fences nobody);
 * read the newest shard manifest, write the next version with epoch + 1
 * (losing that race to a newer epoch is CX_ERR_FENCED: someone else claimed
 * concurrently; losing it to the previous writer's seal rebases); write a fence
 * marker at the WAL tip (the first free seq after the newest entry; if that
 * collides with a straggler's entry, move past it); replay the WAL entries in
 * (replay_seq, fence) into a generation, failing with CX_ERR_FENCED if one
 * has a newer epoch (a newer claim overtook this one); drain generations the
 * base manifest says are merged.
 *
 * Idle writers: a fenced writer learns it at its next put only if the
 * object it collides with still exists.  GC removes old shard-manifest
 * versions (a prefix of them), possibly the claim version that fenced it, so
 * a writer idle for revalidate_after_ms first re-reads the newest version
 * (hint and HEADs, then the manifest) and is fenced if it is not its own.
 * GC's retention window must exceed that interval (docs/DESIGN.md section 6).
 *
 * Not thread-safe: one thread drives a writer.
 */
#ifndef CX_SHARDWRITER_H
#define CX_SHARDWRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "format/cx_fragment.h"
#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "memwal/cx_shard_manifest.h"

typedef struct cx_sw_options
{
	const char *writer_info;	/* "host pid ..." recorded in claims */
	const char *key_column;		/* table key; recorded in the base manifest
								 * on registration if none yet */
	bool		unique_key;
	uint32_t	pending_generations_max;	/* 4096: appends are refused
											 * once this many generations
											 * are unmerged; warning about
											 * the count is the caller's job */
	cx_fragw_options fragment;	/* row groups and zstd level */
	uint32_t	revalidate_after_ms;	/* 300000: before writing after
										 * this long without a successful
										 * write, re-read the shard's newest
										 * version (0: before every write) */
	uint32_t	clock_ahead_warn_ms;	/* 1000: a commit time that must run
										 * ahead of the clock by more than
										 * this (it follows the shard's
										 * last one) is counted in the
										 * stats (0: any lead) */
	int64_t		(*clock_us) (void);	/* Unix microseconds; NULL = the
									 * real-time clock (tests step it) */
} cx_sw_options;

void		cx_sw_options_default(cx_sw_options *o);

typedef struct cx_shardwriter cx_shardwriter;

/* Claims shard_id of the store s (see above).  s stays owned by the caller
 * and must outlive the writer. */
cx_code		cx_sw_open(cx_objstore *s, const char *shard_id,
					   const cx_sw_options *opt, cx_shardwriter **out,
					   cx_err *err);

/*
 * Appends nrows rows encoded with cx_row_encode() in the order of schema
 * (the table's user columns; the writer adds the hidden columns).  schema
 * must match the store's (CX_ERR_SCHEMA otherwise; the first append to an
 * empty store records it).  *commit_ts receives the commit time given to
 * these rows, strictly increasing per shard even if the clock steps back.
 * CX_ERR_LIMIT when the shard has pending_generations_max unmerged
 * generations (after re-reading the merge watermark once).  An error whose
 * outcome is unknown (an unsealed append's WAL put failed and could not be
 * read back) leaves the rows in the memtable: they were not acknowledged,
 * but they may be durable, so they become visible with the next seal either
 * way (docs/DESIGN.md section 6).
 */
cx_code		cx_sw_append(cx_shardwriter *w, const cx_schema *schema,
						 const uint8_t *rows, size_t rows_len, uint64_t nrows,
						 bool seal, int64_t *commit_ts, cx_err *err);

/* Seals the memtable (no-op when empty). */
cx_code		cx_sw_seal(cx_shardwriter *w, cx_err *err);

/* Removes from the shard manifest exactly the generations the base manifest
 * marks as merged (no-op if none). */
cx_code		cx_sw_drain(cx_shardwriter *w, cx_err *err);

/*
 * The same, with the watermark given instead of read from the newest base
 * manifest (no GET, no decode: the drain costs one shard-manifest commit).
 * merged_through must be a watermark a committed base version holds for this
 * shard, such as cx_merge_result.merged_through of a cx_merge_shard() that
 * returned CX_OK (the commit that raised it is what makes dropping the
 * generations at or below it safe).  A value below what the writer already
 * knows changes nothing; the later commits (seals) keep leaving those
 * generations out too.
 */
cx_code		cx_sw_drain_through(cx_shardwriter *w, uint64_t merged_through,
								cx_err *err);

/* Unmerged generations listed now (drained ones excluded). */
uint32_t	cx_sw_pending_generations(const cx_shardwriter *w);
/* Rows appended but not sealed yet, and the bytes they hold in memory (the
 * caller's flush policy bounds them: seal when they grow too large). */
uint64_t	cx_sw_memtable_rows(const cx_shardwriter *w);
uint64_t	cx_sw_memtable_bytes(const cx_shardwriter *w);
uint64_t	cx_sw_epoch(const cx_shardwriter *w);
/* The newest generation listed (0: none). */
uint64_t	cx_sw_newest_gen(const cx_shardwriter *w);
const cx_shard_manifest *cx_sw_manifest(const cx_shardwriter *w);

/*
 * Counters since open.  Commit times strictly increase per shard, so after
 * a clock stepped forward (here or on the cluster that wrote the shard
 * before) the shard keeps handing out times ahead of the clock, and wins
 * every cross-shard conflict until real time catches up.  Appends whose
 * commit time ran ahead of the clock by more than clock_ahead_warn_ms are
 * counted; the newest one's two times are kept, so a caller that sees
 * clock_ahead_commits grow after an append can warn with both.
 */
typedef struct cx_sw_stats
{
	uint64_t	appends;
	uint64_t	wal_entries;
	uint64_t	seals;
	uint64_t	drains;
	uint64_t	replayed_entries;
	uint64_t	replayed_rows;	/* rows of those entries: made visible by
								 * the claim's replay generation */
	uint64_t	clock_ahead_commits;
	uint64_t	clock_ahead_max_us; /* the largest lead seen */
	int64_t		clock_ahead_commit_us;	/* the newest such commit time */
	int64_t		clock_ahead_clock_us;	/* and the clock at that moment */
} cx_sw_stats;
const cx_sw_stats *cx_sw_get_stats(const cx_shardwriter *w);

/* Seals if seal is true, then frees the writer (s stays open). */
cx_code		cx_sw_close(cx_shardwriter *w, bool seal, cx_err *err);

#endif							/* CX_SHARDWRITER_H */
