/*
 * cx_vector.c — ctxstore.l2_distance, ctxstore.cosine_distance and
 * ctxstore.inner_product on real[] and float8[] (docs/SQL.md, "Similarity
 * search").  The kernels are the engine's (ctxstore/vector.h), which the
 * scan's similarity top-k (cx_topk.c) calls on row groups directly, so a
 * distance is the same number whichever computes it.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/lsyscache.h"

#include "cx_vector.h"

static const struct
{
	const char *name;
	cx_distance_kind kind;
}			distance_functions[] = {
	{"l2_distance", CX_DIST_L2},
	{"cosine_distance", CX_DIST_COSINE},
	{"inner_product", CX_DIST_INNER_PRODUCT},
};

bool
cxfdw_distance_function(Oid funcid, cx_distance_kind *kind)
{
	char	   *name;

	if (get_namespace_oid("ctxstore", true) != get_func_namespace(funcid))
		return false;
	name = get_func_name(funcid);
	for (int i = 0; i < lengthof(distance_functions); i++)
		if (strcmp(name, distance_functions[i].name) == 0)
		{
			*kind = distance_functions[i].kind;
			return true;
		}
	return false;
}

const void *
cxfdw_vector_items(ArrayType *a, const char *fname, int *n)
{
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s takes one-dimensional arrays", fname),
				 errdetail("An array has %d dimensions.", ARR_NDIM(a))));
	if (array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s takes arrays without NULL elements", fname)));
	*n = ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
	return ARR_DATA_PTR(a);
}

void
cxfdw_vector_check_dims(const char *fname, int n1, int n2)
{
	if (n1 != n2)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s takes vectors of the same dimension", fname),
				 errdetail("The vectors have %d and %d dimensions.", n1, n2)));
}

double
cxfdw_vector_distance(cx_distance_kind kind, Oid elem, const void *a,
					  const void *b, int n)
{
	if (elem == FLOAT4OID)
		return cx_distance_f32(kind, a, b, (uint32_t) n);
	return cx_distance_f64(kind, a, b, (uint32_t) n);
}

/* The three SQL functions: fname(a, b) over arrays of the same element
 * type (the SQL declarations see to that). */
static Datum
distance(FunctionCallInfo fcinfo, cx_distance_kind kind, const char *fname)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int			na, nb;
	const void *ia = cxfdw_vector_items(a, fname, &na);
	const void *ib = cxfdw_vector_items(b, fname, &nb);

	cxfdw_vector_check_dims(fname, na, nb);
	PG_RETURN_FLOAT8(cxfdw_vector_distance(kind, ARR_ELEMTYPE(a), ia, ib, na));
}

PG_FUNCTION_INFO_V1(ctxstore_l2_distance);
Datum
ctxstore_l2_distance(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, CX_DIST_L2, "ctxstore.l2_distance");
}

PG_FUNCTION_INFO_V1(ctxstore_cosine_distance);
Datum
ctxstore_cosine_distance(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, CX_DIST_COSINE, "ctxstore.cosine_distance");
}

PG_FUNCTION_INFO_V1(ctxstore_inner_product);
Datum
ctxstore_inner_product(PG_FUNCTION_ARGS)
{
	return distance(fcinfo, CX_DIST_INNER_PRODUCT, "ctxstore.inner_product");
}
