/*
 * cx_distance.c — distances between embedding vectors (ctxstore/vector.h).
 *
 * Written for the compiler's vectoriser: each sum runs over LANES
 * independent accumulators in a loop of fixed trip count, so gcc -O2 turns
 * the inner loop into packed SIMD operations (one register of 8 floats or
 * two of 4 doubles) without -ffast-math (the order of the additions is the
 * one written, so it need not reassociate); the tail is summed one by one.
 * a and b never alias a written object, hence restrict.
 */
#include <math.h>

#include "ctxstore/vector.h"

#define LANES 8

/* Sums of one pass over a and b: what every distance is computed from. */
#define DEFINE_SUMS(T, SFX) \
static T \
sum_sqdiff_##SFX(const T *restrict a, const T *restrict b, uint32_t n) \
{ \
	T			acc[LANES] = {0}; \
	T			s = 0; \
	uint32_t	i = 0; \
\
	for (; i + LANES <= n; i += LANES) \
		for (int j = 0; j < LANES; j++) \
		{ \
			T			d = a[i + j] - b[i + j]; \
\
			acc[j] += d * d; \
		} \
	for (; i < n; i++) \
		s += (a[i] - b[i]) * (a[i] - b[i]); \
	for (int j = 0; j < LANES; j++) \
		s += acc[j]; \
	return s; \
} \
\
static T \
sum_dot_##SFX(const T *restrict a, const T *restrict b, uint32_t n) \
{ \
	T			acc[LANES] = {0}; \
	T			s = 0; \
	uint32_t	i = 0; \
\
	for (; i + LANES <= n; i += LANES) \
		for (int j = 0; j < LANES; j++) \
			acc[j] += a[i + j] * b[i + j]; \
	for (; i < n; i++) \
		s += a[i] * b[i]; \
	for (int j = 0; j < LANES; j++) \
		s += acc[j]; \
	return s; \
} \
\
/* a.b, a.a and b.b in one pass. */ \
static void \
sum_cosine_##SFX(const T *restrict a, const T *restrict b, uint32_t n, \
				 double *dot, double *na, double *nb) \
{ \
	T			ab[LANES] = {0}; \
	T			aa[LANES] = {0}; \
	T			bb[LANES] = {0}; \
	uint32_t	i = 0; \
\
	for (; i + LANES <= n; i += LANES) \
		for (int j = 0; j < LANES; j++) \
		{ \
			ab[j] += a[i + j] * b[i + j]; \
			aa[j] += a[i + j] * a[i + j]; \
			bb[j] += b[i + j] * b[i + j]; \
		} \
	for (; i < n; i++) \
	{ \
		ab[0] += a[i] * b[i]; \
		aa[0] += a[i] * a[i]; \
		bb[0] += b[i] * b[i]; \
	} \
	*dot = *na = *nb = 0; \
	for (int j = 0; j < LANES; j++) \
	{ \
		*dot += ab[j]; \
		*na += aa[j]; \
		*nb += bb[j]; \
	} \
} \
\
double \
cx_distance_##SFX(cx_distance_kind kind, const T *a, const T *b, uint32_t n) \
{ \
	double		dot, na, nb; \
\
	switch (kind) \
	{ \
		case CX_DIST_L2: \
			return sqrt((double) sum_sqdiff_##SFX(a, b, n)); \
		case CX_DIST_INNER_PRODUCT: \
			return (double) sum_dot_##SFX(a, b, n); \
		case CX_DIST_COSINE: \
			break; \
	} \
	sum_cosine_##SFX(a, b, n, &dot, &na, &nb); \
	return cosine_from_sums(dot, na, nb); \
}

/* 1 - cos; NaN for a zero vector (0/0), as pgvector; the cosine is clamped
 * to [-1, 1] so that rounding never makes a distance negative. */
static double
cosine_from_sums(double dot, double na, double nb)
{
	double		cos = dot / sqrt(na * nb);

	if (cos > 1)
		cos = 1;
	else if (cos < -1)
		cos = -1;
	return 1 - cos;
}

DEFINE_SUMS(float, f32)
DEFINE_SUMS(double, f64)
