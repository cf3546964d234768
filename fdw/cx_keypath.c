/*
 * cx_keypath.c — scans that read only the rows of given keys.
 *
 * Planning looks among a scan's restriction clauses for one the store can
 * answer by key alone:
 *
 *   key = expr    expr = key    key = ANY (array expr)    key IN (list)
 *
 * where expr references no column of the table and nothing volatile
 * (constants, parameters, stable expressions: they are evaluated when the
 * scan begins, so a prepared statement's $1 works), and the operator is the
 * equality of the key's type.  The store compares keys by their stored
 * bytes, so only types whose equality is byte equality qualify (integers,
 * text and varchar under a deterministic collation, bytea, uuid, date,
 * timestamps, bool; not bpchar, numeric, floats or json).  The scan then
 * reads only the row groups that hold those keys.  The clause stays among
 * the plan's quals, so the executor rechecks every row it returns.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "access/stratnum.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "ctxstore_fdw.h"

/* The table attribute (0-based) holding the store's key, or -1. */
int
cxfdw_key_attribute(const CxRelInfo *ri)
{
	CxStoreSettings s;

	cxfdw_table_settings_cached(ri, &s);
	for (int att = 0; att < ri->natts; att++)
		if (ri->columns[att].attname != NULL &&
			strcmp(ri->columns[att].name, s.key_column) == 0)
			return att;
	return -1;
}

/* Whether a column of this type can be a key: its values compare equal
 * exactly when their stored bytes do (bpchar too: a column's values are all
 * padded alike). */
bool
cxfdw_key_type_supported(const CxTypeInfo *ti)
{
	switch (ti->type)
	{
		case CX_T_BOOL:
		case CX_T_INT16:
		case CX_T_INT32:
		case CX_T_INT64:
		case CX_T_DATE:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
		case CX_T_UUID:
		case CX_T_BINARY:
		case CX_T_STRING:
			return true;
		default:
			return false;
	}
}

/* Whether a qual's equality on the key is byte equality: a key type, not
 * bpchar (whose equality ignores trailing blanks of values of any length),
 * text under a deterministic collation. */
static bool
byte_equality_type(const CxTypeInfo *ti, Oid collation)
{
	if (!cxfdw_key_type_supported(ti))
		return false;
	if (ti->type != CX_T_STRING)
		return true;
	return ti->typid != BPCHAROID &&
		(!OidIsValid(collation) || get_collation_isdeterministic(collation));
}

/* Whether node is the key column of the scanned relation. */
static bool
is_key_var(Node *node, Index relid, int key_att)
{
	return cxfdw_column_att(node, relid) == key_att;
}

int
cxfdw_column_att(Node *node, Index relid)
{
	while (node != NULL && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	if (node == NULL || !IsA(node, Var) || ((Var *) node)->varno != relid ||
		((Var *) node)->varlevelsup != 0 || ((Var *) node)->varattno < 1)
		return -1;
	return ((Var *) node)->varattno - 1;
}

bool
cxfdw_is_scan_constant(Node *expr, Index relid)
{
	Relids		relids = pull_varnos(NULL, expr);

	return !bms_is_member(relid, relids) && !contain_volatile_functions(expr);
}

static bool
is_integer_type(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

bool
cxfdw_value_type_convertible(const CxTypeInfo *ti, Oid value_type)
{
	Oid			col = ti->typid == VARCHAROID ? TEXTOID : ti->typid;

	if (value_type == VARCHAROID)
		value_type = TEXTOID;
	if (value_type == col)
		return true;
	if (is_integer_type(col))
		return is_integer_type(value_type);
	return (col == FLOAT4OID || col == FLOAT8OID) &&
		(value_type == FLOAT4OID || value_type == FLOAT8OID);
}

/* Whether opno is an equality of the btree operator family of the key's
 * type (so int8 = int4 qualifies: the value is converted when the scan
 * begins). */
static bool
is_key_equality(Oid opno, Oid key_type)
{
	TypeCacheEntry *tc = lookup_type_cache(key_type, TYPECACHE_BTREE_OPFAMILY);

	return OidIsValid(tc->btree_opf) &&
		get_op_opfamily_strategy(opno, tc->btree_opf) == BTEqualStrategyNumber;
}

/* For "key = expr" or "expr = key": expr, else NULL. */
static Expr *
key_equals(OpExpr *op, Index relid, int key_att, Oid key_type)
{
	Node	   *l,
			   *r;

	if (list_length(op->args) != 2 || !is_key_equality(op->opno, key_type))
		return NULL;
	l = linitial(op->args);
	r = lsecond(op->args);
	if (is_key_var(l, relid, key_att) && cxfdw_is_scan_constant(r, relid))
		return (Expr *) r;
	if (is_key_var(r, relid, key_att) && cxfdw_is_scan_constant(l, relid))
		return (Expr *) l;
	return NULL;
}

/* For "key = ANY (expr)" (and IN lists): expr, else NULL. */
static Expr *
key_in(ScalarArrayOpExpr *op, Index relid, int key_att, Oid key_type)
{
	if (!op->useOr || list_length(op->args) != 2 ||
		!is_key_equality(op->opno, key_type) ||
		!is_key_var(linitial(op->args), relid, key_att) ||
		!cxfdw_is_scan_constant(lsecond(op->args), relid))
		return NULL;
	return (Expr *) lsecond(op->args);
}

/* A key clause from its two parts as a plan keeps them (values as setrefs
 * left it). */
void
cxfdw_key_clause_of_plan(Expr *clause, Expr *values, const CxRelInfo *ri,
						 CxKeyClause *out)
{
	out->clause = clause;
	out->values = values;
	out->is_array = IsA(clause, ScalarArrayOpExpr);
	out->key_att = cxfdw_key_attribute(ri);
	out->value_type = exprType((Node *) values);
	if (out->is_array)
		out->value_type = get_element_type(out->value_type);
}

/* The first restriction clause of baserel that a key lookup answers. */
bool
cxfdw_key_clause(RelOptInfo *baserel, const CxRelInfo *ri, CxKeyClause *out)
{
	int			key_att = cxfdw_key_attribute(ri);
	const CxTypeInfo *ti;
	Oid			key_type;
	ListCell   *lc;

	if (key_att < 0)
		return false;
	ti = &ri->columns[key_att].type;
	key_type = ti->typid == VARCHAROID ? TEXTOID : ti->typid;
	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		Node	   *clause = (Node *) rinfo->clause;
		Expr	   *values = NULL;

		if (!byte_equality_type(ti, exprInputCollation(clause)))
			continue;
		if (IsA(clause, OpExpr))
			values = key_equals((OpExpr *) clause, baserel->relid, key_att,
								key_type);
		else if (IsA(clause, ScalarArrayOpExpr))
			values = key_in((ScalarArrayOpExpr *) clause, baserel->relid,
							key_att, key_type);
		if (values == NULL)
			continue;
		cxfdw_key_clause_of_plan((Expr *) clause, values, ri, out);
		if (!cxfdw_value_type_convertible(ti, out->value_type))
			continue;
		return true;
	}
	return false;
}

/* How many keys a key clause names, for the planner's estimate. */
double
cxfdw_key_clause_rows(const CxKeyClause *kc)
{
	Node	   *v = (Node *) kc->values;
	ArrayType  *arr;

	if (!kc->is_array)
		return 1;
	if (IsA(v, ArrayExpr))
		return Max(list_length(((ArrayExpr *) v)->elements), 1);
	if (!IsA(v, Const) || ((Const *) v)->constisnull)
		return 10;				/* a parameter: unknown until execution */
	arr = DatumGetArrayTypeP(((Const *) v)->constvalue);
	return Max(ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)), 1);
}

static int64
integer_value(Oid type, Datum value)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}

/* A float compared across widths: a float8 that no float4 equals (one not
 * exactly representable) is left out. */
static void
add_float(const CxTypeInfo *ti, Oid value_type, Datum value, cx_datum *keys,
		  uint32 *n)
{
	double		d = value_type == FLOAT4OID ? DatumGetFloat4(value) :
		DatumGetFloat8(value);

	keys[*n].isnull = false;
	if (ti->type == CX_T_FLOAT64)
		keys[(*n)++].v.f64 = d;
	else if (isnan(d) || (double) (float) d == d)
		keys[(*n)++].v.f32 = (float) d;
}

/*
 * Appends value (of a type cxfdw_value_type_convertible accepts) as a key
 * unless no value of the column can equal it: NULL, or a number of another
 * width that the column's type cannot hold.
 */
static void
add_key(const CxTypeInfo *ti, Oid value_type, Datum value, bool isnull,
		cx_datum *keys, uint32 *n)
{
	int64		i;

	if (isnull)
		return;
	if (value_type == ti->typid || ti->type == CX_T_STRING ||
		ti->type == CX_T_BINARY)
	{
		cxfdw_to_cx(ti, value, &keys[*n]);
		(*n)++;
		return;
	}
	if (ti->type == CX_T_FLOAT32 || ti->type == CX_T_FLOAT64)
	{
		add_float(ti, value_type, value, keys, n);
		return;
	}
	/* An integer compared across widths (int8 = int4 and the like). */
	i = integer_value(value_type, value);
	keys[*n].isnull = false;
	if (ti->type == CX_T_INT16 && i >= PG_INT16_MIN && i <= PG_INT16_MAX)
		keys[(*n)++].v.i16 = (int16) i;
	else if (ti->type == CX_T_INT32 && i >= PG_INT32_MIN && i <= PG_INT32_MAX)
		keys[(*n)++].v.i32 = (int32) i;
	else if (ti->type == CX_T_INT64)
		keys[(*n)++].v.i64 = i;
}

/* The keys a key clause names when the scan begins (NULLs left out). */
cx_datum *
cxfdw_key_values(const CxKeyClause *kc, ExprState *values,
				 const CxTypeInfo *ti, ExprContext *econtext, uint32 *n)
{
	bool		isnull;
	Datum		v = ExecEvalExpr(values, econtext, &isnull);

	return cxfdw_values_of(kc->is_array, kc->value_type, v, isnull, ti, n);
}

cx_datum *
cxfdw_values_of(bool is_array, Oid value_type, Datum v, bool isnull,
				const CxTypeInfo *ti, uint32 *n)
{
	cx_datum   *keys;

	*n = 0;
	if (!is_array)
	{
		keys = palloc(sizeof(cx_datum));
		add_key(ti, value_type, v, isnull, keys, n);
	}
	else if (isnull)
		keys = palloc(sizeof(cx_datum));
	else
	{
		ArrayType  *arr = DatumGetArrayTypeP(v);
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;
		int16		len;
		bool		byval;
		char		align;

		get_typlenbyvalalign(ARR_ELEMTYPE(arr), &len, &byval, &align);
		deconstruct_array(arr, ARR_ELEMTYPE(arr), len, byval, align,
						  &elems, &nulls, &nelems);
		keys = palloc(sizeof(cx_datum) * Max(nelems, 1));
		for (int i = 0; i < nelems; i++)
			add_key(ti, value_type, elems[i], nulls[i], keys, n);
	}
	return keys;
}
