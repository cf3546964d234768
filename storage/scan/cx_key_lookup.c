/*
 * cx_key_lookup.c — the keys of a restricted scan and the base rows holding
 * them (cx_key_lookup.h).
 *
 * Keys are kept sorted bytewise (membership is all the scan asks, so any
 * total order does); the base rows come from one cx_base_probe, bucketed per
 * fragment and sorted, so the scan can skip whole fragments and row groups
 * without a row of them.
 */
#include "scan/cx_key_lookup.h"

#include <stdlib.h>
#include <string.h>

#include "table/cx_base_probe.h"

typedef struct lookup_key
{
	uint8_t    *p;
	size_t		len;
} lookup_key;

typedef struct base_rows
{
	uint64_t   *rows;
	uint32_t	n;
} base_rows;

struct cx_lookup
{
	lookup_key *keys;			/* sorted, no repeats */
	uint32_t	nkeys;
	cx_keyrange range;
	base_rows  *base;			/* one per base fragment */
	uint32_t	nfragments;
};

static int
bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

static int
key_cmp(const void *a, const void *b)
{
	const lookup_key *x = a;
	const lookup_key *y = b;

	return bytes_cmp(x->p, x->len, y->p, y->len);
}

static int
row_cmp(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* Copies, sorts and de-duplicates the keys, and notes their range. */
static cx_code
take_keys(cx_lookup *l, const uint8_t *const *keys, const size_t *lens,
		  uint32_t n, cx_err *err)
{
	uint32_t	k = 0;

	l->keys = calloc(n + 1, sizeof(lookup_key));
	if (l->keys == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key lookup: out of memory");
	for (uint32_t i = 0; i < n; i++)
	{
		l->keys[i].p = malloc(lens[i] + 1);
		if (l->keys[i].p == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "key lookup: out of memory");
		memcpy(l->keys[i].p, keys[i], lens[i]);
		l->keys[i].len = lens[i];
		l->nkeys = i + 1;
		if (cx_keyrange_add(&l->range, keys[i], lens[i], err) != CX_OK)
			return err->code;
	}
	qsort(l->keys, n, sizeof(lookup_key), key_cmp);
	for (uint32_t i = 0; i < n; i++)
	{
		if (k > 0 && key_cmp(&l->keys[k - 1], &l->keys[i]) == 0)
			free(l->keys[i].p);
		else
			l->keys[k++] = l->keys[i];
	}
	l->nkeys = k;
	return CX_OK;
}

/*
 * Buckets the probe's hits by fragment, rows ascending: counted first, so
 * each fragment's rows are allocated once.  Tombstones too: the scan never
 * returns them, but reads them, so that a merged delete beats the older
 * unmerged rows of its key in other shards (without it, such a row came
 * back).
 */
static cx_code
take_base_rows(cx_lookup *l, const cx_probe_result *r, cx_err *err)
{
	for (uint32_t i = 0; i < r->nhits; i++)
		l->base[r->hits[i].fragment].n++;
	for (uint32_t f = 0; f < l->nfragments; f++)
	{
		if (l->base[f].n == 0)
			continue;
		l->base[f].rows = malloc(l->base[f].n * sizeof(uint64_t));
		if (l->base[f].rows == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "key lookup: out of memory");
		l->base[f].n = 0;
	}
	for (uint32_t i = 0; i < r->nhits; i++)
	{
		const cx_probe_hit *h = &r->hits[i];

		l->base[h->fragment].rows[l->base[h->fragment].n++] = h->row;
	}
	/* (a fragment without hits has no array; qsort wants one even for 0) */
	for (uint32_t f = 0; f < l->nfragments; f++)
		if (l->base[f].n > 0)
			qsort(l->base[f].rows, l->base[f].n, sizeof(uint64_t), row_cmp);
	return CX_OK;
}

static cx_code
probe_base(cx_lookup *l, cx_objstore *s, const cx_manifest *base,
		   uint32_t key_col, cx_err *err)
{
	const uint8_t **values = malloc((l->nkeys + 1) * sizeof(uint8_t *));
	size_t	   *lens = malloc((l->nkeys + 1) * sizeof(size_t));
	cx_probe_result r = {0};
	cx_code		rc;

	if (values == NULL || lens == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "key lookup: out of memory");
	else
	{
		for (uint32_t i = 0; i < l->nkeys; i++)
		{
			values[i] = l->keys[i].p;
			lens[i] = l->keys[i].len;
		}
		rc = cx_base_probe(s, base, key_col, values, lens, l->nkeys, &r, err);
	}
	if (rc == CX_OK)
		rc = take_base_rows(l, &r, err);
	cx_probe_result_free(&r);
	free(values);
	free(lens);
	return rc;
}

cx_code
cx_lookup_new(cx_objstore *s, const cx_manifest *base, uint32_t key_col,
			  const uint8_t *const *keys, const size_t *lens, uint32_t n,
			  cx_lookup **out, cx_err *err)
{
	cx_lookup  *l = calloc(1, sizeof(cx_lookup));
	cx_code		rc;

	*out = NULL;
	if (l == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key lookup: out of memory");
	cx_keyrange_init(&l->range, (cx_type) base->schema->columns[key_col].type);
	l->nfragments = base->nfragments;
	l->base = calloc(base->nfragments + 1, sizeof(base_rows));
	if (l->base == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "key lookup: out of memory");
	else
		rc = take_keys(l, keys, lens, n, err);
	if (rc == CX_OK && l->nkeys > 0)
		rc = probe_base(l, s, base, key_col, err);
	if (rc != CX_OK)
	{
		cx_lookup_free(l);
		return rc;
	}
	*out = l;
	return CX_OK;
}

void
cx_lookup_free(cx_lookup *l)
{
	if (l == NULL)
		return;
	for (uint32_t i = 0; i < l->nkeys; i++)
		free(l->keys[i].p);
	free(l->keys);
	for (uint32_t f = 0; l->base != NULL && f < l->nfragments; f++)
		free(l->base[f].rows);
	free(l->base);
	cx_keyrange_free(&l->range);
	free(l);
}

bool
cx_lookup_has(const cx_lookup *l, const uint8_t *key, size_t len)
{
	lookup_key	k = {(uint8_t *) key, len};

	return bsearch(&k, l->keys, l->nkeys, sizeof(lookup_key), key_cmp) != NULL;
}

const cx_keyrange *
cx_lookup_range(const cx_lookup *l)
{
	return &l->range;
}

const uint64_t *
cx_lookup_base_rows(const cx_lookup *l, uint32_t f, uint32_t *n)
{
	*n = f < l->nfragments ? l->base[f].n : 0;
	return *n > 0 ? l->base[f].rows : NULL;
}

/* Index of the first of rows[0..n) (ascending) that is >= v. */
static uint32_t
lower_bound(const uint64_t *rows, uint32_t n, uint64_t v)
{
	uint32_t	lo = 0;

	while (lo < n)
	{
		uint32_t	mid = lo + (n - lo) / 2;

		if (rows[mid] < v)
			lo = mid + 1;
		else
			n = mid;
	}
	return lo;
}

bool
cx_lookup_base_span(const cx_lookup *l, uint32_t f, uint64_t first,
					uint64_t count, uint64_t *lo, uint64_t *hi)
{
	uint32_t	n;
	const uint64_t *rows = cx_lookup_base_rows(l, f, &n);
	uint32_t	a = lower_bound(rows, n, first);
	uint32_t	b = lower_bound(rows, n, first + count);

	if (a == b)
		return false;
	*lo = rows[a];
	*hi = rows[b - 1];
	return true;
}

bool
cx_lookup_base_rows_in(const cx_lookup *l, uint32_t f, uint64_t first,
					   uint64_t count)
{
	uint64_t	lo;
	uint64_t	hi;

	return cx_lookup_base_span(l, f, first, count, &lo, &hi);
}
