/*
 * cx_topk.h — ORDER BY and LIMIT answered in the scan (docs/SQL.md,
 * "ORDER BY and LIMIT"): the planner's final paths (cx_upper.c) and the
 * scan's bounded top-k and early stop (cx_topk.c).
 */
#ifndef CX_TOPK_H
#define CX_TOPK_H

#include "postgres.h"

#include "commands/explain.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"

#include "ctxstore/engine.h"
#include "ctxstore_fdw.h"

/* What the scan answers. */
typedef enum CxTopkMode
{
	CX_TOPK_LIMIT,				/* LIMIT (OFFSET) alone: stop early */
	CX_TOPK_COLUMN,				/* ORDER BY a column LIMIT k */
	CX_TOPK_DISTANCE			/* ORDER BY ctxstore.*_distance(column, v)
								 * LIMIT k */
} CxTopkMode;

/* The items of the plan's integer list describing it (cx_upper.c writes
 * it, cx_topk.c reads it). */
typedef enum CxTopkItem
{
	CX_TOPK_MODE,
	CX_TOPK_SORTOP,				/* ordering operator of the key (or 0) */
	CX_TOPK_COLLATION,
	CX_TOPK_NULLS_FIRST,
	CX_TOPK_DESC,
	CX_TOPK_ATT,				/* ordered (or embedding) attribute, 0-based */
	CX_TOPK_DIST_KIND,			/* cx_distance_kind (DISTANCE only) */
	CX_TOPK_QUERY_ARG,			/* which argument is the query vector */
	CX_TOPK_NITEMS
} CxTopkItem;

/* The items of the plan's expression list: the ORDER BY expression (NULL
 * for LIMIT alone), OFFSET and LIMIT (NULL if absent), the quals. */
typedef enum CxTopkExpr
{
	CX_TOPK_ORDER_EXPR,
	CX_TOPK_OFFSET,
	CX_TOPK_COUNT,
	CX_TOPK_QUALS,
	CX_TOPK_NEXPRS
} CxTopkExpr;

/* ---- planning (cx_upper.c) ---- */

/* The GetForeignUpperPaths callback. */
extern void cxfdw_upper_paths(PlannerInfo *root, UpperRelationKind stage,
							  RelOptInfo *input_rel, RelOptInfo *output_rel,
							  void *extra);

/*
 * For a path of cxfdw_upper_paths (best_path->fdw_private not NIL): appends
 * what the scan needs to *private and *exprs (after the base scan's own
 * items, which stay at their positions) and takes the quals over, *quals
 * becoming NIL: the scan evaluates them before a row counts.
 */
extern void cxfdw_upper_plan(List *path_private, List **private,
							 List **exprs, List **quals);

/* ---- execution (cx_topk.c) ---- */

typedef struct CxTopk CxTopk;

/* The next visible row of the scan into slot (cleared first); false at the
 * end.  Snapshot rows are first offered to cxfdw_topk_admit(). */
typedef bool (*CxNextRow) (void *scan_state, TupleTableSlot *slot);

/* From the plan items cxfdw_upper_plan() added (private item, exprs
 * item). */
extern CxTopk *cxfdw_topk_begin(ForeignScanState *node, List *private,
								List *exprs, const CxRelInfo *ri);
/* The column to visit best-first by (attribute, 0-based); false: any
 * order. */
extern bool cxfdw_topk_order(const CxTopk *t, int *att, bool *desc);
/*
 * Whether row `row` of the scan's current group may be among the rows
 * returned (false: skip it without building it).  att_col maps attributes
 * to the scan's columns.  May narrow the scan by a bound as the top k fill.
 */
extern bool cxfdw_topk_admit(CxTopk *t, cx_tablescan *scan,
							 const int *att_col, uint32 row);
/* The next row to return, read through next; NULL at the end. */
extern TupleTableSlot *cxfdw_topk_next(CxTopk *t, CxNextRow next,
									   void *scan_state);
extern void cxfdw_topk_rescan(CxTopk *t);
extern void cxfdw_topk_explain(const CxTopk *t, ForeignScanState *node,
							   ExplainState *es);

#endif							/* CX_TOPK_H */
