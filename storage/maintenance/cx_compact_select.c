/*
 * cx_compact_select.c — which fragments a compaction rewrites
 * (cx_compact_select, cx_compact_int.h) and the options' defaults.
 */
#include "maintenance/cx_compact_int.h"

#include <stdlib.h>

void
cx_compact_options_default(cx_compact_options *o)
{
	o->min_fragments = CX_COMPACT_DEFAULT_MIN_FRAGMENTS;
	o->target_rows_per_fragment = CX_MERGE_DEFAULT_TARGET_ROWS;
	o->small_rows = 0;
	cx_fragw_options_default(&o->fragment);
	o->sort_key = NULL;
	o->sort_memory = CX_MERGE_DEFAULT_SORT_MEMORY;
	o->holder = NULL;
	o->lease_seconds = CX_COMPACT_DEFAULT_LEASE_SECONDS;
	o->force = false;
	o->max_inputs = CX_COMPACT_DEFAULT_MAX_INPUTS;
}

static uint64_t
live_rows(const cx_manifest *m, uint32_t f)
{
	return m->fragments[f].rows - cx_manifest_deleted_count(m, f);
}

/* Tier of a fragment with that many live rows: 0 below 4 rows, 1 below 16... */
static uint32_t
tier_of(uint64_t rows)
{
	uint32_t	t = 0;

	while (rows >= CX_COMPACT_TIER_FACTOR)
	{
		rows /= CX_COMPACT_TIER_FACTOR;
		t++;
	}
	return t;
}

/* 64-bit row counts have at most 32 tiers of factor 4. */
#define MAX_TIERS 33

static bool
is_small(const cx_manifest *m, const cx_compact_options *o, uint32_t f)
{
	uint64_t	below = o->target_rows_per_fragment;

	if (o->small_rows > 0 && o->small_rows < below)
		below = o->small_rows;
	return live_rows(m, f) < below;
}

/* The tier to compact, or -1: the smallest with enough members. */
static int
chosen_tier(const cx_manifest *m, const cx_compact_options *o)
{
	uint32_t	members[MAX_TIERS] = {0};

	for (uint32_t f = 0; f < m->nfragments; f++)
		if (is_small(m, o, f))
			members[tier_of(live_rows(m, f))]++;
	for (int t = 0; t < MAX_TIERS; t++)
		if (members[t] >= o->min_fragments && members[t] >= 2)
			return t;
	return -1;
}

static bool
worth_forcing(const cx_manifest *m, const cx_compact_options *o)
{
	uint32_t	small = 0;
	bool		deletions = false;

	for (uint32_t f = 0; f < m->nfragments; f++)
		if (is_small(m, o, f))
		{
			small++;
			deletions |= cx_manifest_deleted_count(m, f) > 0;
		}
	return small >= 2 || (small == 1 && deletions);
}

static bool
picks(const cx_manifest *m, const cx_compact_options *o, int tier, uint32_t f)
{
	return is_small(m, o, f) &&
		(tier < 0 || tier_of(live_rows(m, f)) == (uint32_t) tier);
}

/* A candidate and its live rows, to find the smallest. */
typedef struct sized_fragment
{
	uint64_t	rows;
	uint32_t	f;
} sized_fragment;

static int
by_rows_then_index(const void *a, const void *b)
{
	const sized_fragment *x = a;
	const sized_fragment *y = b;

	if (x->rows != y->rows)
		return x->rows < y->rows ? -1 : 1;
	return x->f < y->f ? -1 : x->f > y->f;
}

static int
by_index(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return x < y ? -1 : x > y;
}

/* Keeps the max_inputs smallest of picked[0..*n) (ties: the lower index),
 * in ascending index order. */
static cx_code
keep_smallest(const cx_manifest *m, uint32_t max_inputs, uint32_t *picked,
			  uint32_t *n, cx_err *err)
{
	sized_fragment *sized;

	if (*n <= max_inputs)
		return CX_OK;
	sized = malloc(sizeof(sized_fragment) * *n);
	if (sized == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory choosing fragments to compact");
	for (uint32_t i = 0; i < *n; i++)
		sized[i] = (sized_fragment) {live_rows(m, picked[i]), picked[i]};
	qsort(sized, *n, sizeof(sized_fragment), by_rows_then_index);
	*n = max_inputs;
	for (uint32_t i = 0; i < *n; i++)
		picked[i] = sized[i].f;
	free(sized);
	qsort(picked, *n, sizeof(uint32_t), by_index);
	return CX_OK;
}

cx_code
cx_compact_select(const cx_manifest *m, const cx_compact_options *o,
				  uint32_t **picked, uint32_t *n, cx_err *err)
{
	/* -1 stands for every small fragment (force). */
	int			tier = o->force ? -1 : chosen_tier(m, o);

	*picked = NULL;
	*n = 0;
	if (o->force ? !worth_forcing(m, o) : tier < 0)
		return CX_OK;
	*picked = malloc(sizeof(uint32_t) * m->nfragments);
	if (*picked == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory choosing fragments to compact");
	for (uint32_t f = 0; f < m->nfragments; f++)
		if (picks(m, o, tier, f))
			(*picked)[(*n)++] = f;
	return keep_smallest(m, o->max_inputs, *picked, n, err);
}
