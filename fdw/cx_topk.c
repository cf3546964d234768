/*
 * cx_topk.c — the scan's side of ORDER BY and LIMIT (cx_upper.c plans it;
 * docs/SQL.md, "ORDER BY and LIMIT").
 *
 * The scan evaluates the quals on every row itself, then:
 *   LIMIT k OFFSET n  skips n rows that pass and stops after k more;
 *   ORDER BY key      keeps the best n + k rows that pass in a bounded heap
 *                     (the worst at its root), sorts them once the input
 *                     ends and returns them from the n-th.
 * A snapshot row's key is computed from the row group's column before the
 * row is built (cxfdw_topk_admit): a row that cannot beat the k-th best is
 * skipped unbuilt.  For a distance that is the engine's kernel over the
 * vector as the row group holds it, the same kernel as the SQL function's.
 * The transaction's own rows, and rows the fast path cannot judge (a
 * vector of another dimension or with NULL elements: the function's error
 * is raised only if the row passes the quals), get the key from the ORDER
 * BY expression itself.  As the heap fills, the k-th best key of a column
 * becomes the scan's bound (cx_tablescan_set_bound), so that row groups
 * whose statistics cannot beat it are skipped, and the scan visits row
 * groups best-first by that column.  Keys compare with the ORDER BY's own
 * operator, collation and NULLS placement; of equal keys, the first read
 * stays.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_locale.h"
#include "utils/ruleutils.h"
#include "utils/sortsupport.h"

#include "cx_topk.h"
#include "cx_vector.h"

typedef struct TopkEntry
{
	Datum		key;
	bool		isnull;
	HeapTuple	tuple;
} TopkEntry;

struct CxTopk
{
	/* From the plan. */
	CxTopkMode	mode;
	int			att;
	bool		desc;
	const CxTypeInfo *type;		/* of att */
	Expr	   *order_src;		/* for EXPLAIN */
	Node	   *offset_src;
	Node	   *count_src;
	List	   *quals_src;
	ExprState  *order;
	ExprState  *offset_expr;
	ExprState  *count_expr;
	ExprState  *quals;
	ExprContext *econtext;
	TupleTableSlot *slot;
	SortSupportData ssup;
	int16		key_len;
	bool		key_byval;
	bool		bound_ok;		/* the engine orders the column's values so */

	/* DISTANCE: the query vector. */
	ExprState  *query;
	cx_distance_kind kind;
	Oid			elem_oid;
	cx_type		elem_type;
	char	   *fname;

	/* Per scan (a rescan starts over). */
	bool		started;
	int64		offset;
	int64		count;			/* -1: no limit */
	int64		wanted;			/* offset + count, -1: all */
	void	   *query_items;	/* NULL: the query vector is NULL */
	int			query_n;
	int64		skipped;		/* LIMIT alone */
	int64		returned;
	MemoryContext heap_cxt;
	TopkEntry  *heap;
	int64		n;
	int64		cap;
	bool		filled;			/* input read, heap sorted */
	int64		out_pos;
	cx_tablescan *scan;			/* the scan a bound goes to */
	uint32		bound_col;		/* att's column in it */
	cx_datum	bound;
	/* The key cxfdw_topk_admit() computed for the row being built. */
	bool		key_ready;
	Datum		key;
	bool		key_null;
};

static int
entry_cmp(const TopkEntry *a, const TopkEntry *b, CxTopk *t)
{
	return ApplySortComparator(a->key, a->isnull, b->key, b->isnull, &t->ssup);
}

static int
entry_qsort_cmp(const void *a, const void *b, void *arg)
{
	return entry_cmp(a, b, arg);
}

/* ---- setting up ---- */

static ExprState *
init_expr(Node *n, ForeignScanState *node)
{
	return n == NULL ? NULL : ExecInitExpr((Expr *) n, &node->ss.ps);
}

static void
init_distance(CxTopk *t, FuncExpr *f, int query_arg, ForeignScanState *node)
{
	Node	   *query = list_nth(f->args, query_arg);

	t->query = init_expr(query, node);
	t->elem_oid = get_element_type(exprType(query));
	t->elem_type = t->elem_oid == FLOAT4OID ? CX_T_FLOAT32 : CX_T_FLOAT64;
	t->fname = psprintf("ctxstore.%s", get_func_name(f->funcid));
}

static void
init_order(CxTopk *t, const List *items, ForeignScanState *node)
{
	Oid			collation = (Oid) list_nth_int(items, CX_TOPK_COLLATION);

	t->ssup.ssup_cxt = CurrentMemoryContext;
	t->ssup.ssup_collation = collation;
	t->ssup.ssup_nulls_first = list_nth_int(items, CX_TOPK_NULLS_FIRST);
	PrepareSortSupportFromOrderingOp((Oid) list_nth_int(items, CX_TOPK_SORTOP),
									 &t->ssup);
	get_typlenbyval(exprType((Node *) t->order_src), &t->key_len,
					&t->key_byval);
	if (t->mode == CX_TOPK_DISTANCE)
		init_distance(t, (FuncExpr *) t->order_src,
					  list_nth_int(items, CX_TOPK_QUERY_ARG), node);
	else
		t->bound_ok = t->type->type != CX_T_STRING || lc_collate_is_c(collation);
}

CxTopk *
cxfdw_topk_begin(ForeignScanState *node, List *private, List *exprs,
				 const CxRelInfo *ri)
{
	CxTopk	   *t = palloc0(sizeof(CxTopk));

	t->mode = list_nth_int(private, CX_TOPK_MODE);
	t->att = list_nth_int(private, CX_TOPK_ATT);
	t->desc = list_nth_int(private, CX_TOPK_DESC);
	t->kind = list_nth_int(private, CX_TOPK_DIST_KIND);
	t->type = &ri->columns[t->att].type;
	t->order_src = list_nth(exprs, CX_TOPK_ORDER_EXPR);
	t->offset_src = list_nth(exprs, CX_TOPK_OFFSET);
	t->count_src = list_nth(exprs, CX_TOPK_COUNT);
	t->quals_src = list_nth(exprs, CX_TOPK_QUALS);
	t->order = init_expr((Node *) t->order_src, node);
	t->offset_expr = init_expr(t->offset_src, node);
	t->count_expr = init_expr(t->count_src, node);
	t->quals = ExecInitQual(t->quals_src, &node->ss.ps);
	t->econtext = node->ss.ps.ps_ExprContext;
	t->slot = node->ss.ss_ScanTupleSlot;
	t->heap_cxt = AllocSetContextCreate(CurrentMemoryContext, "ctxstore top-k",
										ALLOCSET_DEFAULT_SIZES);
	if (t->mode != CX_TOPK_LIMIT)
		init_order(t, private, node);
	return t;
}

bool
cxfdw_topk_order(const CxTopk *t, int *att, bool *desc)
{
	*att = t->att;
	*desc = t->desc;
	return t->mode == CX_TOPK_COLUMN;
}

/* OFFSET (0 if absent or NULL) or LIMIT (-1 if absent or NULL), with the
 * errors nodeLimit.c raises for negative ones. */
static int64
limit_value(ExprState *e, ExprContext *econtext, bool is_offset)
{
	bool		isnull;
	Datum		d;

	if (e == NULL)
		return is_offset ? 0 : -1;
	d = ExecEvalExprSwitchContext(e, econtext, &isnull);
	if (isnull)
		return is_offset ? 0 : -1;
	if (DatumGetInt64(d) < 0)
		ereport(ERROR,
				is_offset ?
				(errcode(ERRCODE_INVALID_ROW_COUNT_IN_RESULT_OFFSET_CLAUSE),
				 errmsg("OFFSET must not be negative")) :
				(errcode(ERRCODE_INVALID_ROW_COUNT_IN_LIMIT_CLAUSE),
				 errmsg("LIMIT must not be negative")));
	return DatumGetInt64(d);
}

/* The query vector, checked as the function checks it, in query memory. */
static void
start_query(CxTopk *t)
{
	bool		isnull;
	Datum		d = ExecEvalExprSwitchContext(t->query, t->econtext, &isnull);
	MemoryContext old;
	const void *items;
	Size		size;

	if (t->query_items != NULL)
		pfree(t->query_items);
	t->query_items = NULL;
	if (isnull)
		return;
	old = MemoryContextSwitchTo(t->econtext->ecxt_per_query_memory);
	items = cxfdw_vector_items(DatumGetArrayTypeP(d), t->fname, &t->query_n);
	size = (Size) t->query_n * (t->elem_oid == FLOAT4OID ? sizeof(float4) : sizeof(float8));
	t->query_items = palloc(Max(size, 1));
	memcpy(t->query_items, items, size);
	MemoryContextSwitchTo(old);
}

static void
start(CxTopk *t)
{
	t->offset = limit_value(t->offset_expr, t->econtext, true);
	t->count = limit_value(t->count_expr, t->econtext, false);
	t->wanted = t->count < 0 || t->count > PG_INT64_MAX - t->offset ? -1 :
		t->offset + t->count;
	if (t->query != NULL)
		start_query(t);
	t->started = true;
}

/* ---- the heap ---- */

static bool
heap_full(const CxTopk *t)
{
	return t->wanted >= 0 && t->n >= t->wanted;
}

static void
swap_entries(CxTopk *t, int64 i, int64 j)
{
	TopkEntry	tmp = t->heap[i];

	t->heap[i] = t->heap[j];
	t->heap[j] = tmp;
}

/* The heap keeps the worst entry at its root. */
static void
sift_up(CxTopk *t, int64 i)
{
	while (i > 0)
	{
		int64		parent = (i - 1) / 2;

		if (entry_cmp(&t->heap[parent], &t->heap[i], t) >= 0)
			break;
		swap_entries(t, parent, i);
		i = parent;
	}
}

static void
sift_down(CxTopk *t, int64 i)
{
	for (;;)
	{
		int64		worst = i;

		for (int64 c = 2 * i + 1; c <= 2 * i + 2 && c < t->n; c++)
			if (entry_cmp(&t->heap[c], &t->heap[worst], t) > 0)
				worst = c;
		if (worst == i)
			return;
		swap_entries(t, worst, i);
		i = worst;
	}
}

/* The k-th best key so far narrows the scan (a NULL or NaN one cannot: the
 * engine's statistics do not order them). */
static void
narrow_scan(CxTopk *t)
{
	const TopkEntry *worst = &t->heap[0];

	if (!t->bound_ok || t->scan == NULL || worst->isnull)
		return;
	cxfdw_to_cx(t->type, worst->key, &t->bound);
	if ((t->type->type == CX_T_FLOAT32 && isnan(t->bound.v.f32)) ||
		(t->type->type == CX_T_FLOAT64 && isnan(t->bound.v.f64)))
		return;
	cx_tablescan_set_bound(t->scan, t->bound_col, &t->bound, t->desc,
						   t->ssup.ssup_nulls_first);
}

/* The row in t->slot with this key, into the heap if it is among the best
 * so far. */
static void
offer(CxTopk *t, Datum key, bool isnull)
{
	TopkEntry	e = {key, isnull, NULL};
	TopkEntry	old;
	MemoryContext oldcxt;

	if (t->wanted == 0 || (heap_full(t) && entry_cmp(&e, &t->heap[0], t) >= 0))
		return;
	oldcxt = MemoryContextSwitchTo(t->heap_cxt);
	e.tuple = ExecCopySlotHeapTuple(t->slot);
	if (!isnull)
		e.key = datumCopy(key, t->key_byval, t->key_len);
	if (!heap_full(t) && t->n == t->cap)
	{
		t->cap = Max(16, t->cap * 2);
		t->heap = t->heap == NULL ? palloc(sizeof(TopkEntry) * t->cap) :
			repalloc_huge(t->heap, sizeof(TopkEntry) * t->cap);
	}
	MemoryContextSwitchTo(oldcxt);
	if (heap_full(t))
	{
		old = t->heap[0];
		t->heap[0] = e;
		sift_down(t, 0);
		narrow_scan(t);
		heap_freetuple(old.tuple);
		if (!old.isnull && !t->key_byval)
			pfree(DatumGetPointer(old.key));
		return;
	}
	t->heap[t->n++] = e;
	sift_up(t, t->n - 1);
	if (heap_full(t))
		narrow_scan(t);
}

/* ---- reading ---- */

/* A snapshot row's key from its row group, if the fast path knows it. */
static bool
group_key(CxTopk *t, cx_tablescan *scan, const int *att_col, uint32 row,
		  Datum *key, bool *isnull)
{
	const cx_colvec *col = cx_tablescan_column(scan, att_col[t->att]);
	const void *items;
	uint32_t	n;
	cx_datum	d;

	*isnull = false;
	if (t->mode == CX_TOPK_COLUMN)
	{
		cx_colvec_get(col, row, &d);
		*isnull = d.isnull;
		if (!d.isnull)
			*key = cxfdw_from_cx(t->type, &d, CX_LIST_SLICE);
		return true;
	}
	if (t->query_items == NULL)
	{
		*isnull = true;			/* the function is strict */
		return true;
	}
	switch (cx_colvec_vector(col, row, t->elem_type, &items, &n))
	{
		case CX_VECTOR_NULL:
			*isnull = true;
			return true;
		case CX_VECTOR_OK:
			if (n != (uint32) t->query_n)
				return false;
			*key = Float8GetDatum(cxfdw_vector_distance(t->kind, t->elem_oid,
														items, t->query_items,
														t->query_n));
			return true;
		default:
			return false;
	}
}

bool
cxfdw_topk_admit(CxTopk *t, cx_tablescan *scan, const int *att_col,
				 uint32 row)
{
	TopkEntry	e;

	t->scan = scan;
	t->bound_col = (uint32) att_col[t->att];
	if (t->mode == CX_TOPK_LIMIT)
		return true;
	t->key_ready = group_key(t, scan, att_col, row, &t->key, &t->key_null);
	if (!t->key_ready || !heap_full(t))
		return true;
	e.key = t->key;
	e.isnull = t->key_null;
	if (entry_cmp(&e, &t->heap[0], t) < 0)
		return true;
	/* Not built, so no row takes this key (a transaction's row that
	 * follows must compute its own). */
	t->key_ready = false;
	return false;
}

static bool
passes_quals(CxTopk *t)
{
	t->econtext->ecxt_scantuple = t->slot;
	return ExecQual(t->quals, t->econtext);
}

/* The next row that passes, t->key_ready telling whether admit() computed
 * its key; false at the end. */
static bool
next_passing(CxTopk *t, CxNextRow next, void *scan_state)
{
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		/* Rows that fail hold nothing: free what building them took. */
		ResetExprContext(t->econtext);
		t->key_ready = false;
		if (!next(scan_state, t->slot))
			return false;
		if (passes_quals(t))
			return true;
	}
}

static TupleTableSlot *
next_limited(CxTopk *t, CxNextRow next, void *scan_state)
{
	while (t->count < 0 || t->returned < t->count)
	{
		if (!next_passing(t, next, scan_state))
			break;
		if (t->skipped < t->offset)
		{
			t->skipped++;
			continue;
		}
		t->returned++;
		return t->slot;
	}
	return ExecClearTuple(t->slot);
}

static void
fill(CxTopk *t, CxNextRow next, void *scan_state)
{
	while (next_passing(t, next, scan_state))
	{
		Datum		key = t->key;
		bool		isnull = t->key_null;

		if (!t->key_ready)
			key = ExecEvalExprSwitchContext(t->order, t->econtext, &isnull);
		offer(t, key, isnull);
	}
	if (t->n > 1)
		qsort_arg(t->heap, t->n, sizeof(TopkEntry), entry_qsort_cmp, t);
	t->out_pos = t->offset;
	t->filled = true;
}

TupleTableSlot *
cxfdw_topk_next(CxTopk *t, CxNextRow next, void *scan_state)
{
	if (!t->started)
		start(t);
	if (t->mode == CX_TOPK_LIMIT)
		return next_limited(t, next, scan_state);
	if (!t->filled)
		fill(t, next, scan_state);
	if (t->out_pos >= t->n)
		return ExecClearTuple(t->slot);
	ExecForceStoreHeapTuple(t->heap[t->out_pos++].tuple, t->slot, false);
	return t->slot;
}

void
cxfdw_topk_rescan(CxTopk *t)
{
	MemoryContextReset(t->heap_cxt);
	t->heap = NULL;
	t->n = t->cap = 0;
	t->started = t->filled = false;
	t->skipped = t->returned = 0;
	t->scan = NULL;
}

/* ---- EXPLAIN ---- */

static void
explain_expr(const char *label, Node *n, List *dpcontext, ExplainState *es,
			 const char *suffix)
{
	char	   *text = deparse_expression(n, dpcontext, false, false);

	ExplainPropertyText(label, psprintf("%s%s", text, suffix), es);
}

void
cxfdw_topk_explain(const CxTopk *t, ForeignScanState *node, ExplainState *es)
{
	List	   *dpcontext = set_deparse_context_plan(es->deparse_cxt,
													 node->ss.ps.plan, NIL);
	bool		nulls_first = t->ssup.ssup_nulls_first;

	if (t->order_src != NULL)
		explain_expr("Order In Scan", (Node *) t->order_src, dpcontext, es,
					 psprintf("%s%s", t->desc ? " DESC" : "",
							  nulls_first == t->desc ? "" :
							  nulls_first ? " NULLS FIRST" : " NULLS LAST"));
	if (t->count_src != NULL)
		explain_expr("Limit In Scan", t->count_src, dpcontext, es, "");
	if (t->offset_src != NULL)
		explain_expr("Offset In Scan", t->offset_src, dpcontext, es, "");
	if (t->quals_src != NIL)
		explain_expr("Filter In Scan",
					 (Node *) make_ands_explicit(t->quals_src), dpcontext, es, "");
}
