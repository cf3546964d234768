/*
 * cx_vector.h — the distance functions of schema ctxstore (cx_vector.c), as
 * the scan's similarity top-k recognises and evaluates them.
 */
#ifndef CX_VECTOR_H
#define CX_VECTOR_H

#include "postgres.h"

#include "utils/array.h"

#include "ctxstore/vector.h"

/* Whether funcid is ctxstore.l2_distance, cosine_distance or inner_product
 * (of either element type); *kind says which. */
extern bool cxfdw_distance_function(Oid funcid, cx_distance_kind *kind);

/* The elements of a one-dimensional real[] or float8[] without NULLs, in
 * place; raises the functions' errors otherwise (fname names the function
 * in them). */
extern const void *cxfdw_vector_items(ArrayType *a, const char *fname,
									  int *n);

/* Raises the dimension-mismatch error unless n1 == n2. */
extern void cxfdw_vector_check_dims(const char *fname, int n1, int n2);

/* The distance of kind between a[0..n) and b[0..n) of element type elem
 * (FLOAT4OID or FLOAT8OID). */
extern double cxfdw_vector_distance(cx_distance_kind kind, Oid elem,
									const void *a, const void *b, int n);

#endif							/* CX_VECTOR_H */
