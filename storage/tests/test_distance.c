/*
 * test_distance.c — the distance kernels against a naive double-precision
 * reference, for lengths around the kernels' lane width and its tail.
 */
#include <math.h>
#include <stdlib.h>

#include "ctxstore/vector.h"
#include "cx_test.h"

#define MAX_DIM 77

static double
reference(cx_distance_kind kind, const double *a, const double *b, uint32_t n)
{
	double		dot = 0, aa = 0, bb = 0, sq = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		dot += a[i] * b[i];
		aa += a[i] * a[i];
		bb += b[i] * b[i];
		sq += (a[i] - b[i]) * (a[i] - b[i]);
	}
	if (kind == CX_DIST_L2)
		return sqrt(sq);
	if (kind == CX_DIST_INNER_PRODUCT)
		return dot;
	return 1 - dot / sqrt(aa * bb);
}

static bool
close_to(double got, double want, double tolerance)
{
	return fabs(got - want) <= tolerance * (1 + fabs(want));
}

CX_TEST(distance_kernels_match_reference)
{
	static const cx_distance_kind kinds[] = {
		CX_DIST_L2, CX_DIST_COSINE, CX_DIST_INNER_PRODUCT
	};
	float		af[MAX_DIM] = {0}, bf[MAX_DIM] = {0};
	double		ad[MAX_DIM] = {0}, bd[MAX_DIM] = {0};

	srand(12);
	for (uint32_t n = 1; n <= MAX_DIM; n += 3)
	{
		for (uint32_t i = 0; i < n; i++)
		{
			af[i] = (float) rand() / RAND_MAX - 0.5f;
			bf[i] = (float) rand() / RAND_MAX - 0.5f;
			ad[i] = af[i];
			bd[i] = bf[i];
		}
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		{
			double		want = reference(kinds[k], ad, bd, n);

			CHECK(close_to(cx_distance_f32(kinds[k], af, bf, n), want, 1e-5));
			CHECK(close_to(cx_distance_f64(kinds[k], ad, bd, n), want, 1e-12));
		}
	}
}

CX_TEST(distance_edge_cases)
{
	float		zero[9] = {0};
	float		v[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	double		same[2] = {3, 4};

	/* A zero vector has no direction: NaN, as pgvector. */
	CHECK(isnan(cx_distance_f32(CX_DIST_COSINE, zero, v, 9)));
	CHECK(cx_distance_f32(CX_DIST_L2, v, v, 9) == 0);
	CHECK(cx_distance_f32(CX_DIST_INNER_PRODUCT, zero, v, 9) == 0);
	/* Rounding never takes the cosine outside [-1, 1]. */
	CHECK(cx_distance_f64(CX_DIST_COSINE, same, same, 2) >= 0);
	CHECK(cx_distance_f64(CX_DIST_L2, same, (double[2]) {0, 0}, 2) == 5);
	/* Empty vectors. */
	CHECK(cx_distance_f64(CX_DIST_L2, same, same, 0) == 0);
	CHECK(cx_distance_f64(CX_DIST_INNER_PRODUCT, same, same, 0) == 0);
}
