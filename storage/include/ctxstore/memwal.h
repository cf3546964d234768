/*
 * ctxstore/memwal.h — the shards of a store: one writer per shard appends
 * rows (cx_sw_*), a merge folds its sealed generations into the base
 * (cx_merge_shard), and cx_shards_read describes every shard.
 * memwal/cx_shard_writer.h, memwal/cx_shard_manifest.h and merge/cx_merge.h
 * give the protocol in full.
 */
#ifndef CTXSTORE_MEMWAL_H
#define CTXSTORE_MEMWAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/layout.h"
#include "ctxstore/objstore.h"
#include "ctxstore/schema.h"

cx_code		cx_shard_id_validate(const char *shard_id, cx_err *err);

typedef struct cx_shard_manifest
{
	uint64_t	version;
	char	   *shard_id;
	uint64_t	epoch;
	uint8_t		commit_id[16];
	int64_t		committed_at_us;
	char	   *writer;			/* who holds the epoch: "host pid ..." for
								 * messages and the workers view */
	uint64_t	replay_seq;		/* WAL entries <= this are sealed */
	uint64_t	next_gen;		/* number the next generation gets */
	uint32_t	ngens;
	struct cx_generation *gens;		/* unmerged (or merged, not yet drained),
								 * oldest first */
	uint8_t    *carried;		/* the Parquet bytes of the generation this
								 * version sealed inline (malloc'd; NULL:
								 * none); its later versions list it without
								 * them */
	uint64_t	carried_len;
} cx_shard_manifest;

/* One shard of a store, as its newest shard manifest and the newest base
 * manifest describe it (cx_shard_info.c). */
typedef struct cx_shard_info
{
	char	   *shard_id;		/* malloc'd */
	uint64_t	version;		/* newest shard-manifest version (0: none) */
	uint64_t	epoch;
	char	   *writer;			/* who holds the epoch (malloc'd; NULL: none) */
	uint64_t	merged_gen;		/* the base's watermark */
	uint32_t	generations;	/* listed and not merged */
	uint64_t	rows;			/* in those generations */
} cx_shard_info;

/* Every shard registered in the store, in the base manifest's order
 * (*out = NULL and *n = 0 if none); free with cx_shards_free().  The shard
 * manifests are read before the base whose watermarks count them, so a
 * merge and drain in between never make merged generations look pending. */
cx_code		cx_shards_read(cx_objstore *s, cx_shard_info **out, uint32_t *n,
						   cx_err *err);
void		cx_shards_free(cx_shard_info *shards, uint32_t n);


/* ---- the shard writer ---- */

typedef struct cx_sw_options
{
	const char *writer_info;	/* "host pid ..." recorded in claims */
	const char *key_column;		/* table key; recorded in the base manifest
								 * on registration if none yet */
	bool		unique_key;		/* an upsert whose key is live but not its
								 * match is a unique violation */
	const char *upsert_column;	/* upsert_key: the column CX_ROW_UPSERT
								 * requests match on (NULL: none) */
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
	uint32_t	inline_generation_max;	/* CX_SW_DEFAULT_INLINE_MAX: a seal
										 * whose generation is at most this
										 * many bytes carries it inside its
										 * shard-manifest version (one PUT);
										 * 0: every generation is its own
										 * object */
	uint32_t	view_lag_generations;	/* CX_SW_DEFAULT_VIEW_LAG: after a
										 * drain, the writer loads a newer
										 * base as its view once merges have
										 * taken this many generations past
										 * the view it has (1: after every
										 * drain) */
	uint32_t	view_lag_keys;	/* CX_SW_DEFAULT_VIEW_LAG_KEYS: or, sooner,
								 * once its key cache holds this many keys
								 * (large generations: the cache's memory
								 * stays bounded) */
} cx_sw_options;

/* The defaults of the options above that are also the store's options
 * (key, unique_key, pending_generations_max); the FDW's option table spells
 * them as text. */
#define CX_SW_DEFAULT_KEY_COLUMN "id"
#define CX_SW_DEFAULT_UNIQUE_KEY true
#define CX_SW_DEFAULT_PENDING_MAX 4096
/* 64 KiB: a single-row seal's generation is a few KiB, so group commits of
 * small rows stay one PUT, while a reader of a pending inline generation
 * fetches at most this much more than the generation (docs/FORMAT.md
 * "Inline generations"). */
#define CX_SW_DEFAULT_INLINE_MAX (64 * 1024)
/* 64: loading a newer base view costs a manifest GET and the new key index
 * segments' roots and filters, a few round trips a slow store makes the
 * writer's next round wait for; until then the key cache holds the merged
 * rows (about 50 bytes a key), which is as correct (docs/design/memwal.md,
 * "The base view and drains"). */
#define CX_SW_DEFAULT_VIEW_LAG 64
/* 16,384 keys (under 1 MB): single-row group commits over a slow store put
 * about 1,000 keys in 64 generations and never reach it; generations of
 * thousands of rows reach it within a few merges, so the held rows stay
 * bounded in memory, not only in generations. */
#define CX_SW_DEFAULT_VIEW_LAG_KEYS 16384

void		cx_sw_options_default(cx_sw_options *o);

typedef struct cx_shardwriter cx_shardwriter;

/* Claims shard_id of the store s (see above).  s stays owned by the caller
 * and must outlive the writer. */
cx_code		cx_sw_open(cx_objstore *s, const char *shard_id,
					   const cx_sw_options *opt, cx_shardwriter **out,
					   cx_err *err);

/*
 * Write requests are staged, then appended.  cx_sw_stage() resolves one
 * request (nrows rows encoded with cx_row_encode() in the order of schema,
 * the table's user columns; the writer adds the hidden columns) into the
 * PUTs and DELETEs it stands for, against the rows of the requests staged
 * before it, this shard's unmerged rows and the base (cx_row_kind says what
 * each kind does; docs/design/memwal.md, "Resolving requests"):
 * CX_ERR_UNIQUE or CX_ERR_CARDINALITY (the message names the keys) fail that
 * request alone and leave the staged ones as they were.  schema must match
 * the store's (CX_ERR_SCHEMA otherwise; the first request to an empty store
 * records it).  *out counts what the request resolved to.  Staged rows are
 * written by nobody until cx_sw_append_staged().
 */
typedef struct cx_sw_resolved
{
	uint64_t	rows;			/* PUTs and DELETEs it resolved to */
	uint64_t	dropped;		/* INSERT_IF_ABSENT rows whose key was live */
	uint64_t	superseded;		/* live rows an UPSERT deleted */
} cx_sw_resolved;

cx_code		cx_sw_stage(cx_shardwriter *w, const cx_schema *schema,
						const uint8_t *rows, size_t rows_len, uint64_t nrows,
						cx_sw_resolved *out, cx_err *err);
/* Rows staged (0: nothing to append). */
uint64_t	cx_sw_staged_rows(const cx_shardwriter *w);
/* Drops the staged requests. */
void		cx_sw_unstage(cx_shardwriter *w);

/*
 * Appends every staged row as ONE append and unstages them, whatever the
 * outcome (no staged rows: nothing is written, *commit_ts = 0).
 * *commit_ts receives the commit time given to these rows, strictly
 * increasing per shard even if the clock steps back.  CX_ERR_LIMIT when the
 * shard has pending_generations_max unmerged generations (after re-reading
 * the merge watermark once).  An error whose outcome is unknown (an unsealed
 * append's WAL put failed and could not be read back) leaves the rows in the
 * memtable: they were not acknowledged, but they may be durable, so they
 * become visible with the next seal either way (docs/DESIGN.md section 6),
 * and later requests are resolved against them.
 */
cx_code		cx_sw_append_staged(cx_shardwriter *w, bool seal,
								int64_t *commit_ts, cx_err *err);

/* One request staged and appended alone (nothing else may be staged). */
cx_code		cx_sw_append(cx_shardwriter *w, const cx_schema *schema,
						 const uint8_t *rows, size_t rows_len, uint64_t nrows,
						 bool seal, int64_t *commit_ts, cx_err *err);

/* Seals the memtable (no-op when empty). */
cx_code		cx_sw_seal(cx_shardwriter *w, cx_err *err);

/* A hint for a caller about to wait (for its next requests): the next
 * append will be sealed (a shard-manifest commit) or not (a WAL entry), so
 * the store may get ready for that put now (a local store makes its
 * unnamed inode), and the writer reads what the next request would read
 * first (a newer base after a merge, and its new key index segments' roots
 * and filters), off the append's path.  Best effort, never an error. */
void		cx_sw_prepare_append(cx_shardwriter *w, bool sealed);

/*
 * Removes from the shard manifest exactly the generations at or below
 * merged_through, the watermark the merge returned (no GET, no decode: the
 * drain costs one shard-manifest commit).
 * merged_through must be a watermark a committed base version holds for this
 * shard, such as cx_merge_result.merged_through of a cx_merge_shard() that
 * returned CX_OK (the commit that raised it is what makes dropping the
 * generations at or below it safe).  A value below what the writer already
 * knows changes nothing; the later commits (seals) keep leaving those
 * generations out too.
 */
cx_code		cx_sw_drain_through(cx_shardwriter *w, uint64_t merged_through,
								cx_err *err);
/* The same watermark noted without a commit: the generations at or below
 * it are no longer pending, and the writer's next commit (a seal, or a
 * cx_sw_drain_through) leaves them out; until then readers skip them by
 * the base's watermark, as they do between a merge and its drain. */
cx_code		cx_sw_note_merged(cx_shardwriter *w, uint64_t merged_through,
							  cx_err *err);

/* Unmerged generations listed now (drained ones excluded). */
uint32_t	cx_sw_pending_generations(const cx_shardwriter *w);
/* Rows appended but not sealed yet, and the bytes they hold in memory (the
 * caller's flush policy bounds them: seal when they grow too large). */
uint64_t	cx_sw_memtable_rows(const cx_shardwriter *w);
uint64_t	cx_sw_memtable_bytes(const cx_shardwriter *w);
/* The bytes of what it keeps to resolve requests against: its key caches
 * (the unmerged rows' keys, and those of the requests staged), bounded by
 * the unmerged window, and its copy of the newest base version it knows,
 * which follows the store's fragments. */
uint64_t	cx_sw_cache_bytes(const cx_shardwriter *w);
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
	uint64_t	claims;			/* 1: the open claimed the shard; 0: it
								 * resumed a kept claim (cx_sw_open_kept) */
	uint64_t	appends;
	uint64_t	wal_entries;
	uint64_t	seals;
	uint64_t	drains;
	uint64_t	hints;			/* shard hints written */
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

/*
 * Kept claims: holding a claim costs nothing, so a writer closed only to
 * free its memory (the store handle is evicted) keeps it, and reopening
 * writes no claim (docs/design/memwal.md, "Kept claims").
 *
 * cx_sw_close_keep() frees the writer (no seal: the caller seals first) and
 * fills *kept if the claim can be resumed: the memtable is empty (every
 * acknowledged row is sealed, so nothing needs replaying), no put's outcome
 * is unknown (nothing of ours can still land), and the writer is not
 * fenced.  Otherwise *kept is cleared (version 0).  A kept claim is good
 * only in the process that held the writer (a restarted process cannot know
 * what its predecessor left in flight: it claims).
 */
typedef struct cx_sw_kept
{
	char		shard_id[CX_SHARD_ID_MAX + 1];
	uint64_t	version;		/* the shard-manifest version the writer wrote
								 * last; 0: nothing kept */
	uint8_t		commit_id[16];	/* and its commit id */
	uint64_t	epoch;
	uint64_t	next_seq;		/* where its next WAL entry goes */
	int64_t		last_ts;		/* newest commit time it handed out */
	uint64_t	hint_version;
} cx_sw_kept;

void		cx_sw_close_keep(cx_shardwriter *w, cx_sw_kept *kept);

/*
 * cx_sw_open(), resuming kept (NULL or cleared: none) if the shard's newest
 * manifest is still the version kept names, with its commit id: then nobody
 * claimed the shard since and nothing of this epoch was written since, so
 * there is no claim version, no fence marker and no replay (reads only).
 * Otherwise the shard is claimed exactly as cx_sw_open() does: epoch + 1
 * over whatever claimed it meanwhile, which fences that writer.
 * cx_sw_get_stats()->claims says which happened.
 */
cx_code		cx_sw_open_kept(cx_objstore *s, const char *shard_id,
							const cx_sw_options *opt, const cx_sw_kept *kept,
							cx_shardwriter **out, cx_err *err);

/* ---- merging ---- */

typedef struct cx_merge_options
{
	uint32_t	max_generations;	/* merge_max_generations, default 8 */
	uint64_t	max_bytes;		/* merge_max_bytes, default 1 GiB: the sum of
								 * the chosen generation fragments' sizes */
	uint64_t	target_rows_per_fragment;	/* default 1048576; at most
											 * UINT32_MAX (deletion vectors
											 * name rows with a u32) */
	cx_fragw_options fragment;	/* sort_columns are the merge's own */
	/* The columns merges sort the rows they write by (the sort_key option:
	 * names, comma-separated, most significant first), then by the key;
	 * NULL or "": by the key alone (a table without a key: commit order). */
	const char *sort_key;
	uint64_t	sort_memory;	/* default 256 MiB: the rows one sorted run
								 * holds; more make several runs, each
								 * its own base fragments */
	/* 0 (default): merge from the newest shard-manifest version.  Else
	 * that version, which its writer knew to list the generations wanted
	 * (its newest when it asked): one GET and no probe for the newest; a
	 * version GC has removed since falls back to the newest. */
	uint64_t	shard_version;
} cx_merge_options;

/* The defaults, which are also those of the options named above.  Plain
 * integer literals: the FDW's option table spells them as text. */
#define CX_MERGE_DEFAULT_MAX_GENERATIONS 8
#define CX_MERGE_DEFAULT_MAX_BYTES 1073741824	/* 1 GiB */
#define CX_MERGE_DEFAULT_TARGET_ROWS 1048576
#define CX_MERGE_DEFAULT_SORT_MEMORY 268435456	/* 256 MiB */

/* Most columns a sort key names. */
#define CX_SORT_KEY_MAX_COLUMNS 8

/*
 * The columns of schema that sort_key names (comma-separated column names,
 * blanks around them ignored), most significant first, into
 * cols[CX_SORT_KEY_MAX_COLUMNS]; *n = 0 for NULL or "".  CX_ERR_INVALID for
 * an empty name, a column named twice, too many, a name that is no column,
 * or a column of a type without an order statistics can use
 * (cx_type_has_stats: not interval, numeric, json, lists, external
 * values).  schema NULL checks the list alone (*n = 0).
 */
cx_code		cx_sort_key_resolve(const cx_schema *schema, const char *sort_key,
								uint32_t *cols, uint32_t *n, cx_err *err);

void		cx_merge_options_default(cx_merge_options *o);

/* Room for a key's printable form in messages: text keys cut to fit (with
 * "..."), integers in decimal, other types in hex. */
#define CX_KEY_EXAMPLE_MAX 72

typedef struct cx_merge_result
{
	uint32_t	generations;	/* merged; 0 when there was nothing to do */
	uint64_t	bytes_merged;	/* their fragments' sizes */
	uint64_t	merged_through; /* new watermark */
	uint64_t	rows_written;
	uint64_t	rows_replaced;	/* base rows given a deletion vector entry */
	uint32_t	sorted_runs;	/* rows written in sort order, in this many
								 * runs (0: in commit order) */
	uint64_t	base_version;	/* committed base version (0 if none) */
	/* Keys of the merged generations whose live base row (shadowed or
	 * shadowing) came from another shard: a key written by two clusters,
	 * where the later commit won without a uniqueness check.  One of them,
	 * printable ("" when none), for the log. */
	uint64_t	key_conflicts;
	char		key_conflict_example[CX_KEY_EXAMPLE_MAX];
} cx_merge_result;

/* opt may be NULL (defaults).  CX_ERR_CONFLICT when another merge merged
 * (some of) the same generations first: nothing was committed. */
cx_code		cx_merge_shard(cx_objstore *s, const char *shard_id,
						   const cx_merge_options *opt, cx_merge_result *out,
						   cx_err *err);

#endif							/* CTXSTORE_MEMWAL_H */
