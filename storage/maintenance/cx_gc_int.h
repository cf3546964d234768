/*
 * cx_gc_int.h — what the files of garbage collection share (cx_gc.c picks
 * the referenced set, cx_gc_iceberg.c expires Iceberg snapshots and adds
 * what the retained Iceberg metadata references, cx_gc_sweep.c lists the
 * store and deletes).
 */
#ifndef CX_GC_INT_H
#define CX_GC_INT_H

#include <jansson.h>

#include "ctxstore/lifecycle.h"
#include "objstore/cx_objstore.h"

#define CX_GC_DEFAULT_BATCH 100

/* The newest Iceberg metadata files retained (docs/FORMAT.md "Iceberg
 * metadata"): readers that loaded one of them a moment ago still find
 * everything it references. */
#define CX_GC_ICEBERG_METADATA_KEPT 3

/* The base versions present, ascending. */
typedef struct cx_gc_versions
{
	uint64_t   *v;
	size_t		n;
	size_t		cap;
	bool		oom;
} cx_gc_versions;

/* The keys retained versions reference: a sorted set once
 * cx_gc_refs_sort ran. */
typedef struct cx_gc_refs
{
	char	  **keys;
	size_t		n;
	size_t		cap;
} cx_gc_refs;

/* What the sweep keeps of a shard: its versions from the oldest retained
 * on, its WAL entries from the replay point on, and its dirty markers
 * numbered above the newest version seen listing no generation. */
typedef struct cx_gc_shard
{
	char	   *shard_id;
	uint64_t	floor;			/* oldest retained version */
	uint64_t	replay_seq;
	uint64_t	empty_at;		/* 0: no version seen listing none */
} cx_gc_shard;

typedef struct cx_gc_run
{
	cx_objstore *store;
	const cx_gc_options *opts;
	const cx_job_progress *progress;
	cx_gc_result *res;
	int64_t		now;			/* Unix us when the run began */
	uint64_t	newest;			/* newest base version listed */
	/* The oldest retained base version: only versions below it are
	 * deleted, so that the versions present stay one contiguous range
	 * (docs/FORMAT.md "Finding the newest version"). */
	uint64_t	base_floor;
	cx_gc_refs	refs;
	/* The base versions retained (newest first). */
	cx_gc_versions retained;
	/* Every base version counts as pinned: the run could not record its
	 * retention, so it collects none. */
	bool		retain_every_base;
	/* The newest Iceberg metadata (NULL: never published), its number,
	 * the base version its current snapshot was published from (retained
	 * like a pinned one; 0: none) and the oldest metadata number kept. */
	json_t	   *ice_meta;
	uint64_t	ice_version;
	uint64_t	iceberg_pin;
	uint64_t	ice_floor;
	cx_gc_shard *shards;
	uint32_t	nshards;
	/* The garbage keys waiting to be deleted: at most opts->batch. */
	char	  **batch;
	uint64_t   *batch_bytes;
	uint32_t	nbatch;
	uint32_t	batch_cap;
	/* The first error met inside a listing callback. */
	cx_code		rc;
	cx_err	   *err;
} cx_gc_run;

cx_code		cx_gc_refs_add(cx_gc_refs *refs, const char *key, cx_err *err);
void		cx_gc_refs_sort(cx_gc_refs *refs);
/* Records a shard walked: its oldest retained version, the replay point
 * of its newest and the newest version seen listing no generation. */
cx_code		cx_gc_shard_add(cx_gc_run *run, const char *shard_id,
							uint64_t floor, uint64_t replay_seq,
							uint64_t empty_at, cx_err *err);

/* Loads the newest Iceberg metadata and pins its current snapshot's base
 * version; to be called before the retained versions are walked. */
cx_code		cx_gc_iceberg_load(cx_gc_run *run, cx_err *err);
/* Expires the snapshots whose base versions are not retained (writing the
 * next metadata file, but not in a dry run), then adds what the retained
 * metadata files reference to run->refs. */
cx_code		cx_gc_iceberg_reference(cx_gc_run *run, cx_err *err);
/* Whether a key under iceberg/ may be deleted once unreferenced; *unknown
 * when it is no key a publish writes. */
bool		cx_gc_iceberg_collectable(const cx_gc_run *run, const char *key,
									  bool *unknown);

/* Lists every key under prefix and deletes (or, in a dry run, counts) the
 * garbage, opts->batch at a time. */
cx_code		cx_gc_sweep(cx_gc_run *run, const char *prefix, cx_err *err);
void		cx_gc_run_free(cx_gc_run *run);

#endif							/* CX_GC_INT_H */
