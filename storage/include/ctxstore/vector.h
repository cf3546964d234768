/*
 * ctxstore/vector.h — distances between embedding vectors (util/cx_distance.c)
 * and the vectors a row group's list column holds, read in place
 * (format/cx_vector_column.c).  The SQL functions ctxstore.l2_distance,
 * cosine_distance and inner_product and the scan's similarity top-k share
 * these, so both compute the same value for the same row.
 */
#ifndef CTXSTORE_VECTOR_H
#define CTXSTORE_VECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/schema.h"

typedef enum cx_distance_kind
{
	CX_DIST_L2 = 1,				/* Euclidean: sqrt(sum((a-b)^2)) */
	CX_DIST_COSINE,				/* 1 - cos(a, b); NaN if either is all zeros */
	CX_DIST_INNER_PRODUCT		/* sum(a*b), not negated: larger is nearer */
} cx_distance_kind;

/* The distance between a[0..n) and b[0..n).  float vectors are summed in
 * float, as pgvector does for its vector type; double ones in double. */
double		cx_distance_f32(cx_distance_kind kind, const float *a,
							const float *b, uint32_t n);
double		cx_distance_f64(cx_distance_kind kind, const double *a,
							const double *b, uint32_t n);

/* Row i of a list column of FLOAT32 or FLOAT64 elements, in place. */
typedef enum cx_vector_state
{
	CX_VECTOR_OK,				/* *items points at n elements */
	CX_VECTOR_NULL,				/* the list itself is NULL */
	CX_VECTOR_NULL_ELEMENT,		/* an element is NULL */
	CX_VECTOR_WRONG_TYPE		/* not a list of the element type asked for */
} cx_vector_state;

cx_vector_state cx_colvec_vector(const cx_colvec *list, uint32_t i,
								 cx_type elem_type, const void **items,
								 uint32_t *n);

#endif							/* CTXSTORE_VECTOR_H */
