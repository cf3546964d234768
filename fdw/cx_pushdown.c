/*
 * cx_pushdown.c — restriction clauses the store uses to skip fragments and
 * row groups (predicate pushdown), and what EXPLAIN shows of them.
 *
 * Planning picks from a scan's restriction clauses those a cx_pred can say
 * something about, on a column of a type whose statistics order values as
 * PostgreSQL does (bool, int2/4/8, float4/8, date, time, timestamp(tz),
 * uuid, text and varchar, bytea):
 *
 *   col op expr, expr op col   op one of = <> < <= > >= of the column's
 *                              btree family (int8 < int4 too; commuted)
 *   col = ANY (array expr)     IN lists
 *   col IS [NOT] NULL
 *   col LIKE 'abc...'          text and bytea: the literal bytes before the
 *                              first wildcard or escape are a prefix
 *
 * expr is a constant, a parameter or a stable expression (no column of the
 * table, nothing volatile), evaluated when the scan begins.  Statistics
 * order strings byte-wise, so on text = <> IN and LIKE need a deterministic
 * collation and < <= > >= the C (POSIX) collation.  A BETWEEN is two
 * clauses.  Every clause stays among the plan's quals: the executor
 * rechecks each row, the store only skips what cannot match.
 */
#include "postgres.h"

#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "access/stratnum.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/ruleutils.h"
#include "utils/typcache.h"

#include "ctxstore_fdw.h"

/* One pushed clause as planning finds it. */
typedef struct PushedClause
{
	Expr	   *clause;			/* as the query has it, for EXPLAIN */
	int			att;			/* 0-based */
	cx_pred_op	op;
	Expr	   *values;			/* NULL for IS [NOT] NULL */
} PushedClause;

/* ---- planning ---- */

/* Whether the engine's statistics of a column of this type order its
 * values as PostgreSQL does (text: under the C collation). */
bool
cxfdw_stats_ordered_type(Oid typid)
{
	switch (typid)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case UUIDOID:
		case TEXTOID:
		case VARCHAROID:
		case BYTEAOID:
			return true;
		default:
			return false;
	}
}

/* Whether byte-wise statistics answer op under collation collid. */
static bool
collation_allows(const CxTypeInfo *ti, cx_pred_op op, Oid collid)
{
	if (ti->type != CX_T_STRING || !OidIsValid(collid))
		return true;
	if (op >= CX_PRED_LT && op <= CX_PRED_GE)
		return lc_collate_is_c(collid);
	return get_collation_isdeterministic(collid);
}

static cx_pred_op
strategy_op(int strategy)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			return CX_PRED_LT;
		case BTLessEqualStrategyNumber:
			return CX_PRED_LE;
		case BTEqualStrategyNumber:
			return CX_PRED_EQ;
		case BTGreaterEqualStrategyNumber:
			return CX_PRED_GE;
		case BTGreaterStrategyNumber:
			return CX_PRED_GT;
		default:
			return 0;
	}
}

/* The comparison opno makes in the column's btree family (<> through its
 * negator), 0 if none. */
static cx_pred_op
comparison_op(Oid opno, const CxTypeInfo *ti)
{
	Oid			type = ti->typid == VARCHAROID ? TEXTOID : ti->typid;
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_BTREE_OPFAMILY);
	Oid			negator;

	if (!OidIsValid(tc->btree_opf))
		return 0;
	if (op_in_opfamily(opno, tc->btree_opf))
		return strategy_op(get_op_opfamily_strategy(opno, tc->btree_opf));
	negator = get_negator(opno);
	if (OidIsValid(negator) &&
		get_op_opfamily_strategy(negator, tc->btree_opf) == BTEqualStrategyNumber)
		return CX_PRED_NE;
	return 0;
}

/* The same comparison with its operands swapped. */
static cx_pred_op
commuted(cx_pred_op op)
{
	switch (op)
	{
		case CX_PRED_LT:
			return CX_PRED_GT;
		case CX_PRED_LE:
			return CX_PRED_GE;
		case CX_PRED_GT:
			return CX_PRED_LT;
		case CX_PRED_GE:
			return CX_PRED_LE;
		default:
			return op;
	}
}

/* The literal bytes before the first wildcard or escape of a LIKE pattern,
 * as a constant of the pattern's type; NULL when there are none. */
static Expr *
like_prefix(Const *pattern)
{
	text	   *pat = DatumGetTextPP(pattern->constvalue);
	const char *p = VARDATA_ANY(pat);
	int			len = VARSIZE_ANY_EXHDR(pat);
	int			n = 0;

	while (n < len && p[n] != '%' && p[n] != '_' && p[n] != '\\')
		n++;
	if (n == 0)
		return NULL;
	return (Expr *) makeConst(pattern->consttype, -1, pattern->constcollid,
							  -1, PointerGetDatum(cstring_to_text_with_len(p, n)),
							  false, false);
}

static bool
classify_like(OpExpr *op, Index relid, PushedClause *out)
{
	Node	   *pattern = lsecond(op->args);

	out->att = cxfdw_column_att(linitial(op->args), relid);
	if (out->att < 0 || !IsA(pattern, Const) || ((Const *) pattern)->constisnull)
		return false;
	out->op = CX_PRED_PREFIX;
	out->values = like_prefix((Const *) pattern);
	return out->values != NULL;
}

static bool
classify_opexpr(OpExpr *op, Index relid, const CxRelInfo *ri,
				PushedClause *out)
{
	Node	   *l,
			   *r;
	int			latt;

	if (list_length(op->args) != 2)
		return false;
	if (op->opno == OID_TEXT_LIKE_OP || op->opno == OID_BYTEA_LIKE_OP)
		return classify_like(op, relid, out);
	l = linitial(op->args);
	r = lsecond(op->args);
	latt = cxfdw_column_att(l, relid);
	out->att = latt >= 0 ? latt : cxfdw_column_att(r, relid);
	out->values = (Expr *) (latt >= 0 ? r : l);
	if (out->att < 0 || !cxfdw_is_scan_constant((Node *) out->values, relid))
		return false;
	out->op = comparison_op(op->opno, &ri->columns[out->att].type);
	if (latt < 0)
		out->op = commuted(out->op);
	return out->op != 0;
}

static bool
classify_in(ScalarArrayOpExpr *op, Index relid, const CxRelInfo *ri,
			PushedClause *out)
{
	if (!op->useOr || list_length(op->args) != 2)
		return false;
	out->att = cxfdw_column_att(linitial(op->args), relid);
	out->values = lsecond(op->args);
	if (out->att < 0 || !cxfdw_is_scan_constant((Node *) out->values, relid) ||
		comparison_op(op->opno, &ri->columns[out->att].type) != CX_PRED_EQ)
		return false;
	out->op = CX_PRED_IN;
	return true;
}

static bool
classify_nulltest(NullTest *nt, Index relid, PushedClause *out)
{
	out->att = nt->argisrow ? -1 : cxfdw_column_att((Node *) nt->arg, relid);
	out->op = nt->nulltesttype == IS_NULL ? CX_PRED_IS_NULL : CX_PRED_IS_NOT_NULL;
	out->values = NULL;
	return out->att >= 0;
}

/* The element type of an IN's array, else the value's type. */
static Oid
value_type(cx_pred_op op, Expr *values)
{
	Oid			type = exprType((Node *) values);

	return op == CX_PRED_IN ? get_element_type(type) : type;
}

/* Whether clause is one the store can use; *out says how. */
static bool
classify(Expr *clause, Index relid, const CxRelInfo *ri, PushedClause *out)
{
	const CxTypeInfo *ti;
	bool		ok;

	if (IsA(clause, OpExpr))
		ok = classify_opexpr((OpExpr *) clause, relid, ri, out);
	else if (IsA(clause, ScalarArrayOpExpr))
		ok = classify_in((ScalarArrayOpExpr *) clause, relid, ri, out);
	else if (IsA(clause, NullTest))
		ok = classify_nulltest((NullTest *) clause, relid, out);
	else
		ok = false;
	if (!ok || ri->columns[out->att].attname == NULL)
		return false;
	ti = &ri->columns[out->att].type;
	out->clause = clause;
	return cxfdw_stats_ordered_type(ti->typid) &&
		collation_allows(ti, out->op, exprInputCollation((Node *) clause)) &&
		(out->values == NULL ||
		 cxfdw_value_type_convertible(ti, value_type(out->op, out->values)));
}

/*
 * The pushable restriction clauses of baserel: each as a list (clause,
 * attribute, operator) for fdw_private; their values (NULL for IS [NOT]
 * NULL) are appended to *values, for fdw_exprs.
 */
List *
cxfdw_pushdown_classify(RelOptInfo *baserel, const CxRelInfo *ri,
						List **values)
{
	List	   *conds = NIL;
	ListCell   *lc;

	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		PushedClause pc;
		List	   *cond;

		if (!classify(rinfo->clause, baserel->relid, ri, &pc))
			continue;
		cond = list_make1(pc.clause);
		cond = lappend(cond, makeInteger(pc.att));
		cond = lappend(cond, makeInteger(pc.op));
		conds = lappend(conds, cond);
		*values = lappend(*values, pc.values);
	}
	return conds;
}

/* ---- predicates ---- */

/* The predicate of a pushed clause on store column `column`, from its
 * value (v, isnull); false when it proves nothing (a comparison with NULL,
 * or with a number no value of the column equals). */
static bool
make_pred(const CxTypeInfo *ti, int column, cx_pred_op op, Expr *values,
		  Datum v, bool isnull, cx_pred *out)
{
	uint32		n = 0;

	out->column = (uint32_t) column;
	out->op = op;
	out->values = NULL;
	out->nvalues = 0;
	if (values == NULL)
		return true;
	out->values = cxfdw_values_of(op == CX_PRED_IN, value_type(op, values), v,
								  isnull, ti, &n);
	out->nvalues = n;
	return op == CX_PRED_IN || n == 1;
}

/* What a scan needs of the pushed clauses at execution. */
struct CxPushdown
{
	List	   *conds;			/* as cxfdw_pushdown_classify made them */
	List	   *values;			/* Expr per cond (setrefs applied), or NULL */
	ExprState **states;
	int			n;
};

CxPushdown *
cxfdw_pushdown_begin(List *conds, List *values, PlanState *ps)
{
	CxPushdown *pd = palloc0(sizeof(CxPushdown));
	ListCell   *lc;
	int			i = 0;

	pd->conds = conds;
	pd->values = values;
	pd->n = list_length(conds);
	pd->states = palloc0(sizeof(ExprState *) * Max(pd->n, 1));
	foreach(lc, values)
		pd->states[i++] = ExecInitExpr((Expr *) lfirst(lc), ps);
	return pd;
}

static int
cond_att(List *cond)
{
	return intVal(lsecond(cond));
}

static cx_pred_op
cond_op(List *cond)
{
	return (cx_pred_op) intVal(lthird(cond));
}

/* The predicates for the store columns bind gives, evaluated now (in the
 * current memory context). */
cx_pred *
cxfdw_pushdown_preds(const CxPushdown *pd, const CxRelInfo *ri,
					 const CxBinding *bind, ExprContext *econtext, uint32 *n)
{
	cx_pred    *preds = palloc(sizeof(cx_pred) * Max(pd->n, 1));

	*n = 0;
	for (int i = 0; i < pd->n; i++)
	{
		List	   *cond = list_nth(pd->conds, i);
		int			att = cond_att(cond);
		bool		isnull = true;
		Datum		v = (Datum) 0;

		if (bind->att_col[att] < 0)
			continue;
		if (pd->states[i] != NULL)
			v = ExecEvalExpr(pd->states[i], econtext, &isnull);
		if (make_pred(&ri->columns[att].type, bind->att_col[att],
					  cond_op(cond), list_nth(pd->values, i), v, isnull,
					  &preds[*n]))
			(*n)++;
	}
	return preds;
}

/* The same at planning: only clauses whose value is a constant. */
static cx_pred *
plan_preds(List *conds, List *values, const CxRelInfo *ri,
		   const CxBinding *bind, uint32 *n)
{
	cx_pred    *preds = palloc(sizeof(cx_pred) * Max(list_length(conds), 1));

	*n = 0;
	for (int i = 0; i < list_length(conds); i++)
	{
		List	   *cond = list_nth(conds, i);
		int			att = cond_att(cond);
		Expr	   *value = list_nth(values, i);
		Const	   *c = (Const *) value;

		if (bind->att_col[att] < 0 || (value != NULL && !IsA(value, Const)))
			continue;
		if (make_pred(&ri->columns[att].type, bind->att_col[att],
					  cond_op(cond), value,
					  c != NULL ? c->constvalue : (Datum) 0,
					  c != NULL && c->constisnull, &preds[*n]))
			(*n)++;
	}
	return preds;
}

/* Rows of snap in the fragments that the clauses with constant values do
 * not skip (cx_snapshot_rows_matching). */
double
cxfdw_pushdown_rows(cx_snapshot *snap, List *conds, List *values,
					const CxRelInfo *ri)
{
	const cx_manifest *base = cx_snapshot_base(snap);
	CxBinding	bind;
	cx_pred    *preds;
	uint32		n;

	if (base->schema == NULL)
		return 0;
	cxfdw_bind(ri, base->schema, &bind);
	preds = plan_preds(conds, values, ri, &bind, &n);
	return (double) cx_snapshot_rows_matching(snap, preds, n);
}

/* ---- EXPLAIN ---- */

void
cxfdw_pushdown_explain(const CxPushdown *pd, ForeignScanState *node,
					   ExplainState *es)
{
	List	   *context;
	List	   *shown = NIL;
	ListCell   *lc;

	if (pd == NULL || pd->n == 0)
		return;
	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, NIL);
	foreach(lc, pd->conds)
		shown = lappend(shown,
						deparse_expression(linitial(lfirst(lc)), context,
										   false, false));
	ExplainPropertyList("Pushed Conditions", shown, es);
}

/* One layer's counts: one line per kind in text form, numbers otherwise. */
static void
explain_layer(const char *layer, const cx_scan_layer_stats *st,
			  ExplainState *es)
{
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText(psprintf("%s Fragments", layer),
							psprintf(UINT64_FORMAT " read, " UINT64_FORMAT " skipped",
									 st->fragments_read, st->fragments_skipped),
							es);
		ExplainPropertyText(psprintf("%s Row Groups", layer),
							psprintf(UINT64_FORMAT " read, " UINT64_FORMAT " skipped",
									 st->row_groups_read, st->row_groups_skipped),
							es);
		return;
	}
	ExplainPropertyUInteger(psprintf("%s Fragments Read", layer), NULL,
							st->fragments_read, es);
	ExplainPropertyUInteger(psprintf("%s Fragments Skipped", layer), NULL,
							st->fragments_skipped, es);
	ExplainPropertyUInteger(psprintf("%s Row Groups Read", layer), NULL,
							st->row_groups_read, es);
	ExplainPropertyUInteger(psprintf("%s Row Groups Skipped", layer), NULL,
							st->row_groups_skipped, es);
}

/* What the base and the unmerged generations read and skipped. */
void
cxfdw_pushdown_explain_counts(const cx_tablescan_stats *st, ExplainState *es)
{
	explain_layer("Base", &st->base, es);
	explain_layer("Generation", &st->gens, es);
}
