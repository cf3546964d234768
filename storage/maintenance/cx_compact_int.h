/*
 * cx_compact_int.h — the parts of compaction (ctxstore/lifecycle.h) that
 * its files share: the lease, the choice of inputs, the rewrite of the
 * inputs, the row map and the commit; cx_compact.c strings them together.
 * docs/design/maintenance.md "Compaction".
 */
#ifndef CX_COMPACT_INT_H
#define CX_COMPACT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/lifecycle.h"
#include "objstore/cx_objstore.h"
#include "table/cx_manifest.h"

/* Longest holder name a lease records (cluster name and pid fit). */
#define CX_LEASE_HOLDER_MAX 200

/* What the lease object says (docs/FORMAT.md "Compaction lease"). */
typedef struct cx_compact_lease
{
	char		holder[CX_LEASE_HOLDER_MAX + 1];
	int64_t		since_us;		/* when this holder first took it */
	int64_t		expires_us;		/* it may be taken over after this */
} cx_compact_lease;

/*
 * Takes or renews the store's compaction lease for holder until now_us +
 * lease_seconds.  A lease another holder has and that has not expired is
 * CX_ERR_BUSY naming that holder and since when; an expired one is taken
 * over.  The object store offers no compare-and-swap, so taking over is a
 * delete and a put-if-absent, and two callers that race for an expired
 * lease can both believe they hold it: the lease only keeps compactions
 * from wasting work on each other; the commit's check that every input is
 * still listed keeps the store right whatever the lease says.
 */
cx_code		cx_compact_lease_take(cx_objstore *s, const char *holder,
								  uint32_t lease_seconds, int64_t now_us,
								  cx_err *err);
/* Deletes the lease if holder has it; anything else is left alone. */
cx_code		cx_compact_lease_release(cx_objstore *s, const char *holder,
									 cx_err *err);
/* The lease as stored: CX_ERR_NOT_FOUND if none, CX_ERR_CORRUPT if it
 * cannot be read. */
cx_code		cx_compact_lease_read(cx_objstore *s, cx_compact_lease *l,
								  cx_err *err);

/* Each tier holds fragments up to this factor larger than the one below. */
#define CX_COMPACT_TIER_FACTOR 4

/*
 * The fragments of m to compact, as ascending indices into m->fragments
 * (*picked malloc'd, *n of them; NULL and 0 when there is nothing to do).
 * A fragment is small when its live rows are below the target; small
 * fragments fall into tiers by live rows (tier t: below 4^(t+1) rows), and
 * the smallest tier with at least min_fragments of them is chosen, so that
 * a compaction rewrites fragments of like size and no row is rewritten
 * again and again with ever larger neighbours.  force takes every small
 * fragment, as long as that changes something: two or more, or one with
 * deleted rows.
 */
cx_code		cx_compact_select(const cx_manifest *m,
							  const cx_compact_options *o, uint32_t **picked,
							  uint32_t *n, cx_err *err);

/*
 * Where compaction put each row of its inputs (cx_compact_rowmap.c), so that
 * deletions a concurrent commit adds to an input after compaction read it
 * can be carried over to the outputs.  One entry per input row: memory is
 * bounded by the rows compacted (8 bytes each).
 */
#define CX_ROW_NOT_WRITTEN UINT32_MAX

typedef struct cx_row_dest
{
	uint32_t	output;			/* index among the outputs, or
								 * CX_ROW_NOT_WRITTEN (deleted when read) */
	uint32_t	row;			/* row within that output */
} cx_row_dest;

typedef struct cx_compact_rowmap
{
	uint32_t	ninputs;
	uint64_t   *nrows;			/* rows of each input */
	cx_row_dest **dest;			/* dest[i][row] */
} cx_compact_rowmap;

/* A map for the fragments of m at inputs[0..ninputs), every row marked not
 * written; free with cx_compact_rowmap_free. */
cx_code		cx_compact_rowmap_init(cx_compact_rowmap *map, const cx_manifest *m,
								   const uint32_t *inputs, uint32_t ninputs,
								   cx_err *err);
void		cx_compact_rowmap_free(cx_compact_rowmap *map);

/*
 * Carries deletions over: for each input (inputs index the fragments of
 * read, the manifest compaction read), the rows now's deletion vector of
 * the same fragment lists and read's did not are deleted from the output
 * rows they were written to, in edited: a copy of now that
 * cx_manifest_rewrite edited, whose outputs start at fragment first_output.
 * An input now no longer lists is CX_ERR_CONFLICT.  *carried counts the
 * deletions carried.
 */
cx_code		cx_compact_carry_deletions(const cx_compact_rowmap *map,
									   const cx_manifest *read,
									   const uint32_t *inputs,
									   const cx_manifest *now,
									   cx_manifest *edited,
									   uint32_t first_output,
									   uint64_t *carried, cx_err *err);

/*
 * Between the steps of a job: reports progress (phase, done of total) and
 * keeps the lease; CX_ERR_CANCELED when the caller asked to stop.
 */
typedef cx_code (*cx_compact_step_fn) (void *arg, const char *phase,
									   uint64_t done, uint64_t total,
									   cx_err *err);

/* Rewriting the inputs as outputs (cx_compact_merge.c). */
typedef struct cx_compact_rewrite_job
{
	cx_objstore *s;
	const cx_compact_options *o;
	const cx_manifest *read;	/* the base version the inputs are read from */
	const uint32_t *inputs;		/* indices into read->fragments */
	uint32_t	ninputs;		/* at least one */
	cx_compact_step_fn step;
	void	   *step_arg;
	/* Set by cx_compact_rewrite, also on error: */
	cx_compact_rowmap map;		/* where each input row went */
	cx_fragment_info *outputs;	/* uploaded, in order: the caller frees
								 * them, and deletes them unless committed */
	uint32_t	noutputs;
	uint64_t	rows;			/* written */
	uint64_t	rows_dropped;	/* deleted or truncated, not written */
	uint64_t	bytes_read;
	uint64_t	bytes_written;
	uint64_t	peak_rows_held; /* most input rows held at once */
} cx_compact_rewrite_job;

/*
 * Reads the inputs in a k-way streaming merge by the table's order (the sort
 * key o->sort_key, then the key), writing every live row to outputs of
 * o->target_rows_per_fragment rows (fewer for the last, and wherever an
 * input out of that order would break an output's order), filling the map.
 * Calls step with "reading" as it reads each row group and "writing" as it
 * finishes each output.  job must be zeroed but for the inputs.
 */
cx_code		cx_compact_rewrite(cx_compact_rewrite_job *job, cx_err *err);

/* The operation compaction's base versions carry (ctxstore.versions()). */
#define CX_COMPACT_OPERATION "compact"

/* What a compaction commits: the fragments it read and what it wrote. */
typedef struct cx_compact_edit
{
	const cx_manifest *read;	/* the base version the inputs were read from */
	const uint32_t *inputs;		/* indices into read->fragments */
	uint32_t	ninputs;
	const cx_fragment_info *outputs;
	uint32_t	noutputs;
	const cx_compact_rowmap *map;	/* where each input row went */
	/* Set by cx_compact_commit: */
	uint64_t	deletions_carried;
	uint32_t	retries;		/* commits lost to a newer base first */
} cx_compact_edit;

/*
 * Commits the edit as a base version with operation "compact" on top of
 * the newest base, however many merges or deletes came after e->read:
 * their fragments stay, deletions they added to an input are carried over
 * to the outputs.  An input the newest base no longer lists (another
 * compaction replaced it) is CX_ERR_CONFLICT; the outputs are then
 * unreferenced, for the caller to delete or GC to collect.
 */
cx_code		cx_compact_commit(cx_objstore *s, cx_compact_edit *e,
							  uint64_t *version, cx_err *err);

#endif							/* CX_COMPACT_INT_H */
