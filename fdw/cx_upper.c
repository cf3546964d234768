/*
 * cx_upper.c — the planner's side of ORDER BY and LIMIT in the scan
 * (docs/SQL.md, "ORDER BY and LIMIT"), as postgres_fdw pushes them: the
 * UPPERREL_ORDERED rel of a ctxstore table is marked, and the
 * UPPERREL_FINAL stage gets a ForeignScan path of the base table that
 * returns the query's result rows itself (no Sort, no Limit above it):
 *
 *   LIMIT k [OFFSET n]                             stops after n + k rows
 *   ORDER BY column [ASC|DESC] [NULLS ..] LIMIT k  bounded top-(n + k)
 *   ORDER BY ctxstore.*_distance(column, v) LIMIT k   the same over the
 *                                                  distance, v a constant
 *                                                  or parameter
 *
 * only for a single table without inheritance children, joins, grouping,
 * aggregates, window functions, DISTINCT, set-returning functions in the
 * target list or row locks: then the base rel is what the ordered (or
 * final) rel reads.  The
 * scan evaluates the quals itself, before a row counts (cx_topk.c).
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"

#include "cx_topk.h"
#include "cx_vector.h"

/* The fraction of the rows a LIMIT that cannot be estimated is taken to
 * return, as the planner takes it (preprocess_limit()). */
#define UNKNOWN_LIMIT_FRACTION 0.10

/* The ordered rel's fdw_private: the base rel it sorts. */
typedef struct CxOrderedInfo
{
	RelOptInfo *base;
} CxOrderedInfo;

/* Types whose values sort as the engine's statistics order them, so that a
 * bound can skip row groups (text only under the C collation).  bpchar too:
 * its bound is a stored value, padded as the statistics are (equality with
 * an unpadded constant is why pushdown leaves bpchar out). */
static bool
orderable_type(Oid type)
{
	return type == BPCHAROID || cxfdw_stats_ordered_type(type);
}

/* The attribute (0-based) if e is a column of rel, else -1. */
static int
column_of(Expr *e, RelOptInfo *rel)
{
	while (IsA(e, RelabelType))
		e = ((RelabelType *) e)->arg;
	if (IsA(e, Var) && ((Var *) e)->varno == rel->relid &&
		((Var *) e)->varattno > 0 && ((Var *) e)->varlevelsup == 0)
		return ((Var *) e)->varattno - 1;
	return -1;
}

/* Whether e is ctxstore.<distance>(column of rel, constant or parameter),
 * in either order; fills the items that say so. */
static bool
distance_order(Expr *e, RelOptInfo *rel, int *items)
{
	FuncExpr   *f = (FuncExpr *) e;
	cx_distance_kind kind;

	if (!IsA(e, FuncExpr) || list_length(f->args) != 2 ||
		!cxfdw_distance_function(f->funcid, &kind))
		return false;
	for (int q = 0; q < 2; q++)
	{
		Node	   *query = list_nth(f->args, q);
		int			att = column_of(list_nth(f->args, 1 - q), rel);

		if (att >= 0 && (IsA(query, Const) || IsA(query, Param)))
		{
			items[CX_TOPK_MODE] = CX_TOPK_DISTANCE;
			items[CX_TOPK_ATT] = att;
			items[CX_TOPK_DIST_KIND] = kind;
			items[CX_TOPK_QUERY_ARG] = q;
			return true;
		}
	}
	return false;
}

/* What the one sort key of the query orders by, if the scan can order by
 * it: fills items and *expr. */
static bool
order_of(PlannerInfo *root, RelOptInfo *rel, int *items, Expr **expr)
{
	PathKey    *pk;
	ListCell   *lc;

	if (list_length(root->sort_pathkeys) != 1)
		return false;
	pk = linitial(root->sort_pathkeys);
	if (pk->pk_eclass->ec_has_volatile)
		return false;
	foreach(lc, pk->pk_eclass->ec_members)
	{
		EquivalenceMember *em = lfirst(lc);
		int			att;

		if (em->em_is_const || em->em_is_child ||
			!bms_equal(em->em_relids, rel->relids))
			continue;
		att = column_of(em->em_expr, rel);
		if (att >= 0 && orderable_type(exprType((Node *) em->em_expr)))
		{
			items[CX_TOPK_MODE] = CX_TOPK_COLUMN;
			items[CX_TOPK_ATT] = att;
		}
		else if (!distance_order(em->em_expr, rel, items))
			continue;
		items[CX_TOPK_SORTOP] = (int) get_opfamily_member(pk->pk_opfamily,
														  em->em_datatype,
														  em->em_datatype,
														  pk->pk_strategy);
		items[CX_TOPK_COLLATION] = (int) pk->pk_eclass->ec_collation;
		items[CX_TOPK_NULLS_FIRST] = pk->pk_nulls_first;
		items[CX_TOPK_DESC] = pk->pk_strategy == BTGreaterStrategyNumber;
		*expr = em->em_expr;
		return items[CX_TOPK_SORTOP] != (int) InvalidOid;
	}
	return false;
}

static bool
limit_expr_ok(Node *n)
{
	return n == NULL || IsA(n, Const) || IsA(n, Param);
}

/* The rows the path returns, k + n as the planner estimates them. */
static double
rows_wanted(const FinalPathExtraData *extra, double rows)
{
	if (extra->count_est > 0 && extra->offset_est >= 0)
		return (double) extra->count_est + (double) extra->offset_est;
	return rows * UNKNOWN_LIMIT_FRACTION;
}

/*
 * Costs.  LIMIT alone reads the fraction of the scan that yields the rows
 * wanted, as a Limit over the scan would, less the Limit node's own handling
 * of each row (which the planner does not charge, hence the explicit
 * saving).  A top-k reads every row and compares each that passes the quals
 * with the k-th best (log2(2k) comparisons at most; a sort's bounded heap
 * does two per level); the rows it returns cost nothing more.  It is offered only when k is small against the rows
 * read (before the quals), where the heap skips building most of them:
 * otherwise a Sort does as well.
 */
static bool
final_costs(RelOptInfo *base, Path *scan, bool sorted, double wanted,
			double *rows, Cost *startup, Cost *total)
{
	double		passing = Max(base->rows, 1);
	double		read = Max(base->tuples, 1);

	*rows = clamp_row_est(Min(wanted, passing));
	if (!sorted)
	{
		*startup = scan->startup_cost;
		*total = *startup + (scan->total_cost - *startup) *
			Min(1.0, wanted / passing) - cpu_tuple_cost * *rows;
		return true;
	}
	if (wanted > read / 2)
		return false;
	*startup = scan->total_cost + passing * cpu_operator_cost * log2(2.0 * *rows);
	*total = *startup;
	return true;
}

/* The path's fdw_private: the items, then the ORDER BY expression, OFFSET
 * and LIMIT (the first items of the plan's expression list, CxTopkExpr). */
static List *
path_private(const int *items, Expr *order, Node *offset, Node *count)
{
	List	   *ints = NIL;
	List	   *result;

	for (int i = 0; i < CX_TOPK_NITEMS; i++)
		ints = lappend_int(ints, items[i]);
	result = lappend(list_make1(ints), order);
	result = lappend(result, offset);
	return lappend(result, count);
}

static void
add_final_path(PlannerInfo *root, RelOptInfo *input_rel,
			   RelOptInfo *final_rel, FinalPathExtraData *extra)
{
	Query	   *parse = root->parse;
	RelOptInfo *base = input_rel;
	int			items[CX_TOPK_NITEMS] = {0};
	Expr	   *order = NULL;
	bool		sorted = false;
	double		rows;
	Cost		startup, total;

	if (input_rel->reloptkind == RELOPT_UPPER_REL && input_rel->fdw_private)
	{
		base = ((CxOrderedInfo *) input_rel->fdw_private)->base;
		sorted = root->sort_pathkeys != NIL;
	}
	if (base->reloptkind != RELOPT_BASEREL || base->cheapest_total_path == NULL ||
		planner_rt_fetch(base->relid, root)->inh ||
		!bms_is_empty(base->lateral_relids) ||
		parse->commandType != CMD_SELECT || parse->rowMarks != NIL ||
		parse->hasTargetSRFs || !extra->limit_needed ||
		parse->limitOption != LIMIT_OPTION_COUNT ||
		!limit_expr_ok(parse->limitCount) || !limit_expr_ok(parse->limitOffset))
		return;
	items[CX_TOPK_MODE] = CX_TOPK_LIMIT;
	if (sorted && !order_of(root, base, items, &order))
		return;
	if (!final_costs(base, base->cheapest_total_path, sorted,
					 rows_wanted(extra, base->rows), &rows, &startup, &total))
		return;
	add_path(final_rel, (Path *)
			 create_foreign_upper_path(root, base,
									   root->upper_targets[UPPERREL_FINAL],
									   rows, startup, total,
									   sorted ? root->sort_pathkeys : NIL,
									   NULL,
									   path_private(items, order, parse->limitOffset,
													parse->limitCount)));
}

void
cxfdw_upper_paths(PlannerInfo *root, UpperRelationKind stage,
				  RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	if (stage == UPPERREL_ORDERED && output_rel->fdw_private == NULL &&
		input_rel->reloptkind == RELOPT_BASEREL)
	{
		CxOrderedInfo *info = palloc0(sizeof(CxOrderedInfo));

		info->base = input_rel;
		output_rel->fdw_private = info;
	}
	else if (stage == UPPERREL_FINAL)
		add_final_path(root, input_rel, output_rel, extra);
}

void
cxfdw_upper_plan(List *path_private, List **private, List **exprs,
				 List **quals)
{
	List	   *topk_exprs = lappend(list_copy_tail(path_private, 1), *quals);

	*private = lappend(*private, linitial(path_private));
	*exprs = lappend(*exprs, topk_exprs);
	*quals = NIL;
}
