/*
 * cx_distance.c — distances between embedding vectors (ctxstore/vector.h).
 *
 * Written for the compiler's vectoriser: each sum runs over LANES
 * independent accumulators in a loop of fixed trip count, so gcc -O2 turns
 * the inner loop into packed SIMD operations (two SSE registers of 4 floats
 * or four of 2 doubles per sum) without -ffast-math: the order of the
 * additions is the one written, so it need not reassociate.  The loops
 * advance the pointers rather than index them with i + j, whose 32-bit
 * wrap-around kept gcc from plain vector loads (it gathered element by
 * element).  The tail is summed one by one.  a and b never alias a written
 * object, hence restrict.
 */
#include <math.h>

#include "ctxstore/vector.h"

#define LANES 8

/* The sums every distance is computed from.  Cosine takes three dot
 * products in three passes over vectors that stay in L1: one loop summing
 * all three kept its 24 accumulators in memory. */
#define DEFINE_SUMS(T, SFX) \
static T \
sum_sqdiff_##SFX(const T *restrict a, const T *restrict b, uint32_t n) \
{ \
	T			acc[LANES] = {0}; \
	T			s = 0; \
\
	for (; n >= LANES; n -= LANES, a += LANES, b += LANES) \
		for (int j = 0; j < LANES; j++) \
			acc[j] += (a[j] - b[j]) * (a[j] - b[j]); \
	for (uint32_t i = 0; i < n; i++) \
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
\
	for (; n >= LANES; n -= LANES, a += LANES, b += LANES) \
		for (int j = 0; j < LANES; j++) \
			acc[j] += a[j] * b[j]; \
	for (uint32_t i = 0; i < n; i++) \
		s += a[i] * b[i]; \
	for (int j = 0; j < LANES; j++) \
		s += acc[j]; \
	return s; \
} \
\
double \
cx_distance_##SFX(cx_distance_kind kind, const T *a, const T *b, uint32_t n) \
{ \
	switch (kind) \
	{ \
		case CX_DIST_L2: \
			return sqrt((double) sum_sqdiff_##SFX(a, b, n)); \
		case CX_DIST_INNER_PRODUCT: \
			return (double) sum_dot_##SFX(a, b, n); \
		case CX_DIST_COSINE: \
			break; \
	} \
	return cosine_from_sums(sum_dot_##SFX(a, b, n), sum_dot_##SFX(a, a, n), \
							sum_dot_##SFX(b, b, n)); \
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
