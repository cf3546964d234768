/*
 * cx_truncation.h — TRUNCATE markers: a tombstone row with a NULL key hides
 * every row that precedes it in commit order (docs/design/merge.md,
 * "TRUNCATE"):
 *   - rows of every shard with a smaller commit time, and
 *   - rows of its own generation before it (same commit time: the rows of
 *     the same append written ahead of it).
 * Once merged, the marker's commit time is the base manifest's
 * truncated_before_us; until then scans honour the unmerged marker of any
 * shard.  Scans and merges share the finding of markers and the commit-time
 * tests on fragments here.
 */
#ifndef CX_TRUNCATION_H
#define CX_TRUNCATION_H

#include "table/cx_row_key.h"

/* The last marker of one fragment. */
typedef struct cx_marker
{
	bool		found;
	uint64_t	row;			/* its row in the fragment */
	int64_t		ts;				/* its commit time */
} cx_marker;

/*
 * Finds the last marker of fragment fi (a generation: deletion vectors do
 * not apply).  Reads nothing when its statistics say the key column holds
 * no NULL or the fragment no tombstone; otherwise only the key, commit-time
 * and tombstone columns.
 */
cx_code		cx_marker_find(cx_objstore *s, const cx_fragment_info *fi,
						   const cx_schema *table, uint32_t key_col,
						   cx_marker *out, cx_err *err);

/* Whether every row of fragment fi was committed before ts, by its
 * commit-time statistics: false when they are missing. */
bool		cx_fragment_all_before(const cx_fragment_info *fi, int64_t ts);
/* Whether some row of fi may have been committed before ts (true when the
 * statistics are missing). */
bool		cx_fragment_any_before(const cx_fragment_info *fi, int64_t ts);

#endif							/* CX_TRUNCATION_H */
