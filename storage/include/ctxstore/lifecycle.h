/*
 * ctxstore/lifecycle.h — compaction and garbage collection of a store
 * (storage/maintenance/; docs/design/maintenance.md).
 *
 * Both run on a store handle the caller opened with the same resolved
 * options and credentials as the write path.  Every wait is bounded by the
 * store's request timeouts; progress callbacks let the caller report
 * progress and ask to stop (cancel), after which the call returns
 * CX_ERR_CANCELED and leaves the store consistent.
 */
#ifndef CTXSTORE_LIFECYCLE_H
#define CTXSTORE_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/memwal.h"

/* Progress of a running job: called between steps; returning false asks the
 * job to stop. */
typedef struct cx_job_progress
{
	bool		(*report) (void *arg, const char *phase, uint64_t done,
						   uint64_t total);
	void	   *arg;
} cx_job_progress;

/* ---- compaction (maintenance/cx_compact*.c) ---- */

typedef struct cx_compact_options
{
	uint32_t	min_fragments;	/* compact_min_fragments, default 8: a tier
								 * of at least this many small fragments */
	uint64_t	target_rows_per_fragment;	/* as merges' */
	uint64_t	small_rows;		/* a fragment is small below this many live
								 * rows; 0 (default): the target */
	cx_fragw_options fragment;
	const char *sort_key;		/* as merges' (NULL: by the key) */
	uint64_t	sort_memory;
	/* The lease that makes one compaction per store at a time: held by
	 * holder (a readable name: cluster, pid) for lease_seconds, renewed
	 * while the job runs; another caller gets CX_ERR_BUSY naming it. */
	const char *holder;
	uint32_t	lease_seconds;	/* default 60 */
	bool		force;			/* ctxstore.compact(): every small fragment,
								 * even below min_fragments, batch after
								 * batch */
	/* Most fragments one compaction (a batch) reads at once, the smallest
	 * first: each holds a footer and a row group while it is read. */
	uint32_t	max_inputs;		/* default 64, at least 2 */
} cx_compact_options;

#define CX_COMPACT_DEFAULT_MIN_FRAGMENTS 8
#define CX_COMPACT_DEFAULT_MAX_INPUTS 64
#define CX_COMPACT_DEFAULT_LEASE_SECONDS 60

void		cx_compact_options_default(cx_compact_options *o);

typedef struct cx_compact_result
{
	bool		compacted;		/* false: nothing to do */
	uint32_t	inputs;			/* fragments rewritten */
	uint32_t	outputs;		/* fragments written */
	uint64_t	rows;			/* live rows written (summed over batches) */
	uint64_t	rows_dropped;	/* deleted rows not carried over */
	uint64_t	deletions_carried;	/* deletion-vector entries a concurrent
									 * commit added, remapped to outputs */
	uint64_t	bytes_read;
	uint64_t	bytes_written;
	uint64_t	version;		/* the base version committed */
	uint32_t	retries;
} cx_compact_result;

/*
 * Compacts the store (docs/design/maintenance.md "Compaction"): one batch
 * of at most max_inputs fragments, or with force one batch after another,
 * each committed as its own base version, until no small fragment is left
 * to compact; the result sums the batches (version: the last committed).
 * Progress phases, per batch: "selecting" (0 of the base's fragments),
 * "reading" (inputs finished of inputs, at every row group read), "writing"
 * (outputs finished of those expected), "committing" (0 of 1); the counts
 * of "reading" and "writing" run on across batches.  CX_ERR_BUSY: another
 * holder's lease; CX_ERR_CONFLICT: another compaction replaced an input;
 * CX_ERR_CANCELED: progress said stop.  An error commits nothing more
 * (the batches before it stay committed: compacted true), except one
 * after the commit (compacted true) and a commit of unknown outcome
 * ("outcome unknown": the version may exist).  With nothing to compact
 * it returns CX_OK, compacted false, having taken no lease and written
 * nothing (so not CX_ERR_BUSY either).  The key index is not updated: run
 * cx_keyindex_update_table afterwards when compacted.
 */
cx_code		cx_compact(cx_objstore *s, const cx_compact_options *o,
					   const cx_job_progress *progress,
					   cx_compact_result *res, cx_err *err);

/* ---- garbage collection (maintenance/cx_gc*.c) ---- */

typedef struct cx_gc_options
{
	uint32_t	retain_versions;	/* newest base versions kept, default 10 */
	int64_t		retain_interval_us; /* and every version newer than this,
									 * default 1 hour */
	int64_t		grace_us;		/* objects no version references are deleted
								 * only once older than this, default 1 hour
								 * (uploads not yet committed, commits of
								 * unknown outcome) */
	const uint64_t *pinned;		/* base versions that must stay (tables with
								 * the version option), npinned of them */
	uint32_t	npinned;
	bool		dry_run;		/* report, delete nothing */
	uint32_t	batch;			/* deletes per batch, default 100 */
} cx_gc_options;

#define CX_GC_DEFAULT_RETAIN_VERSIONS 10
#define CX_GC_DEFAULT_RETAIN_INTERVAL_US INT64_C(3600000000)
#define CX_GC_DEFAULT_GRACE_US INT64_C(3600000000)

void		cx_gc_options_default(cx_gc_options *o);

typedef struct cx_gc_result
{
	uint64_t	objects_listed;
	uint64_t	bytes_listed;
	uint64_t	objects_garbage;	/* unreferenced and past the grace */
	uint64_t	bytes_garbage;
	uint64_t	objects_deleted;	/* 0 in a dry run */
	uint64_t	bytes_deleted;
	uint64_t	versions_retained;
	uint64_t	objects_unknown;	/* under a known prefix but no key of
									 * the layout: reported, never deleted */
} cx_gc_result;

/*
 * Collects the store's garbage (docs/design/maintenance.md "Garbage
 * collection").  Before deleting anything it records in the store which
 * base versions it retains (not in a dry run; what cx_gc_collected reads);
 * when that put fails for want of space it retains every base version
 * instead and frees only what none names.
 */
cx_code		cx_gc(cx_objstore *s, const cx_gc_options *o,
				  const cx_job_progress *progress, cx_gc_result *res,
				  cx_err *err);

/*
 * The base versions cx_gc with options o (retain_versions, retain_interval,
 * pinned) retains at now_us (Unix us): it keeps those and everything they
 * name, while another version may already miss objects only it names.  The
 * current Iceberg snapshot's base version counts as pinned.  *versions
 * (malloc'd, newest first, free() it; NULL when *n is 0) receives them.
 */
cx_code		cx_gc_retained_versions(cx_objstore *s, const cx_gc_options *o,
									int64_t now_us, uint64_t **versions,
									size_t *n, cx_err *err);

/*
 * Whether garbage collection collected each of base versions[0 .. n) of
 * the store, into collected[0 .. n): by the retention record GC puts in
 * the store before it deletes anything, some run left the version
 * unretained, so objects only it names may be gone, whatever pins and
 * options say now.  false for a version no run decided on: one newer than
 * the newest any run listed, and every version of a store without a record
 * (no GC of this ctxstore ran on it yet).  One listing and one GET; on an
 * error collected is all false.
 */
cx_code		cx_gc_collected_versions(cx_objstore *s, const uint64_t *versions,
									 size_t n, bool *collected, cx_err *err);
/* The same for one version. */
cx_code		cx_gc_collected(cx_objstore *s, uint64_t version, bool *collected,
							cx_err *err);

#endif							/* CTXSTORE_LIFECYCLE_H */
