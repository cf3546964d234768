/*
 * cx_prune.h — whether column statistics (a fragment's, from its manifest
 * entry, or a row group's chunk) allow a set of rows to be skipped: by a
 * predicate of a scan spec, or by a top-k bound; and which of two sets to
 * visit first for a top-k.  Private to scan/.
 *
 * Statistics are in the engine value domain (cx_stats_cmp): signed integers,
 * IEEE floats, byte-wise strings and binaries, uuids by memcmp.  Every rule
 * errs towards "may match":
 *   - st == NULL (unknown) or a type without min/max keeps everything but
 *     what the NULL and value counts decide;
 *   - a stored string min may be a prefix of the true min (still a lower
 *     bound); a missing max bounds nothing;
 *   - floats: a chunk holding NaN has no max (cx_column_stats.c), so it is
 *     never skipped by >, >=, <> or a DESC bound; a NaN operand proves
 *     nothing (every NaN test keeps the rows);
 *   - a comparison, IN or PREFIX never matches NULL, so an all-NULL set
 *     (value_count 0, an empty one too) is skipped by all but IS NULL.
 */
#ifndef CX_PRUNE_H
#define CX_PRUNE_H

#include "format/cx_fragment.h"

/* Whether a column of type `type` with statistics st may hold a row that
 * satisfies p (p->column is the caller's business). */
bool		cx_prune_may_match(cx_type type, const cx_colstats *st,
							   const cx_pred *p);

/* Whether it may hold a value better than bound: greater when desc, smaller
 * otherwise (NULLs are better when nulls_win). */
bool		cx_prune_may_beat(cx_type type, const cx_colstats *st,
							  const cx_datum *bound, bool desc,
							  bool nulls_win);

/* Negative when the set with statistics a is to be visited before the one
 * with b for a top-k (by largest max when desc, smallest min otherwise;
 * unknown bounds first, since they may hold the best value). */
int			cx_prune_order_cmp(cx_type type, const cx_colstats *a,
							   const cx_colstats *b, bool desc);

#endif							/* CX_PRUNE_H */
