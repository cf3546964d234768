/*
 * cx_base_probe.c — finding the base rows that hold given column values
 * (cx_base_probe.h).
 *
 * The values are sorted once, in the order column statistics use, so that
 * both questions asked per fragment and per row group ("may its min/max
 * hold one of them?") and per row ("which of them is it?") are binary
 * searches.  For types whose statistics do not bound values bytewise
 * (floats, types without statistics) the values are sorted bytewise and
 * nothing is pruned.
 */
#include "table/cx_base_probe.h"

#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"
#include "table/cx_row_key.h"

typedef struct probe_value
{
	const uint8_t *p;
	size_t		len;
	uint32_t	index;			/* in the caller's array */
} probe_value;

typedef struct probe_set
{
	cx_type		type;
	bool		ordered;		/* statistics order, and they may prune */
	probe_value *v;				/* sorted */
	uint32_t	n;
} probe_set;

typedef struct probe
{
	probe_set	set;
	bool		key_probe;		/* the probed column is the key column */
	uint32_t	fragment;		/* being read */
	uint32_t	cap;			/* of out->hits */
	cx_probe_result *out;
} probe;

static int
cmp_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int			c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* Statistics order where it is also equality (every type but floats),
 * bytewise otherwise. */
static int
value_cmp(const probe_set *set, const uint8_t *a, size_t alen,
		  const uint8_t *b, size_t blen)
{
	if (!set->ordered)
		return cmp_bytes(a, alen, b, blen);
	return cx_stats_cmp(set->type, a, alen, b, blen);
}

static int
probe_value_cmp(const void *a, const void *b, void *arg)
{
	const probe_value *x = a;
	const probe_value *y = b;
	int			c = value_cmp(arg, x->p, x->len, y->p, y->len);

	if (c != 0)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

static cx_code
probe_set_init(probe_set *set, cx_type type, const uint8_t *const *values,
			   const size_t *lens, uint32_t n, cx_err *err)
{
	set->type = type;
	set->ordered = cx_type_has_stats(type) && type != CX_T_FLOAT32 &&
		type != CX_T_FLOAT64;
	set->n = n;
	set->v = malloc((size_t) n * sizeof(probe_value));
	if (set->v == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	for (uint32_t i = 0; i < n; i++)
	{
		set->v[i].p = values[i];
		set->v[i].len = lens[i];
		set->v[i].index = i;
	}
	qsort_r(set->v, n, sizeof(probe_value), probe_value_cmp, set);
	return CX_OK;
}

/* The first value not below (p, len). */
static uint32_t
probe_set_lower_bound(const probe_set *set, const uint8_t *p, size_t len)
{
	uint32_t	lo = 0;
	uint32_t	hi = set->n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (value_cmp(set, set->v[mid].p, set->v[mid].len, p, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether a column with statistics st (NULL: unknown) may hold a value of
 * the set: the smallest value not below its min must not exceed its max. */
static bool
probe_set_may_hold(const probe_set *set, const cx_colstats *st)
{
	uint32_t	i = 0;

	if (set->n == 0)
		return false;
	if (!set->ordered || st == NULL)
		return true;
	if (st->has_min)
		i = probe_set_lower_bound(set, st->min, st->min_len);
	return i < set->n &&
		cx_stats_may_hold(set->type, st, set->v[i].p, set->v[i].len);
}

static bool
group_may_hold(void *arg, const cx_colstats *st)
{
	return probe_set_may_hold(&((probe *) arg)->set, st);
}

static cx_code
add_hit(probe *pr, uint32_t value, const cx_keyrow *kr, cx_err *err)
{
	cx_probe_result *out = pr->out;
	cx_probe_hit *h;

	if (out->nhits == pr->cap)
	{
		uint32_t	cap = pr->cap == 0 ? 16 : pr->cap * 2;
		cx_probe_hit *grown = realloc(out->hits, cap * sizeof(cx_probe_hit));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
		out->hits = grown;
		pr->cap = cap;
	}
	h = &out->hits[out->nhits];
	h->key = malloc(kr->rowkey_len > 0 ? kr->rowkey_len : 1);
	if (h->key == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	memcpy(h->key, kr->rowkey, kr->rowkey_len);
	h->key_len = kr->rowkey_len;
	h->value = value;
	h->fragment = pr->fragment;
	h->row = kr->row;
	h->ts = kr->ts;
	h->tombstone = kr->tombstone;
	out->nhits++;
	return CX_OK;
}

/* One hit per probe value equal to the row's (values may repeat). */
static cx_code
match_row(void *arg, const cx_keyrow *kr, cx_err *err)
{
	probe	   *pr = arg;
	const probe_set *set = &pr->set;

	if (kr->tombstone && !pr->key_probe)
		return CX_OK;
	for (uint32_t i = probe_set_lower_bound(set, kr->key, kr->len);
		 i < set->n &&
		 value_cmp(set, set->v[i].p, set->v[i].len, kr->key, kr->len) == 0;
		 i++)
		if (add_hit(pr, set->v[i].index, kr, err) != CX_OK)
			return err->code;
	return CX_OK;
}

/* Reads the probed column of every live fragment that may hold a value. */
static cx_code
probe_fragments(cx_objstore *s, const cx_manifest *m, uint32_t column,
				uint32_t key_col, probe *pr, cx_err *err)
{
	cx_colscan_spec spec = {column, key_col, NULL, group_may_hold, match_row,
	NULL, pr};

	for (uint32_t f = 0; f < m->nfragments; f++)
	{
		const cx_fragment_info *fi = &m->fragments[f];

		if (cx_manifest_deleted_count(m, f) == fi->rows ||
			!probe_set_may_hold(&pr->set, column < fi->ncolumns ?
								&fi->stats[column] : NULL))
			continue;
		pr->fragment = f;
		spec.dv = m->dvs != NULL ? &m->dvs[f] : NULL;
		if (cx_colscan(s, fi, m->schema, &spec, err) != CX_OK)
			return cx_manifest_fragment_failed(m, fi->path, err);
		pr->out->fragments_scanned++;
	}
	return CX_OK;
}

static int
hit_cmp(const void *a, const void *b)
{
	const cx_probe_hit *x = a;
	const cx_probe_hit *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	if (x->fragment != y->fragment)
		return x->fragment < y->fragment ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* The key column's index, and a check that `column` can be probed. */
static cx_code
probe_columns(const cx_manifest *m, uint32_t column, uint32_t *key_col,
			  cx_err *err)
{
	if (m->key_column == NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "base probe: base version %llu has no key column",
						  (unsigned long long) m->version);
	if (cx_key_column(m->schema, m->key_column, key_col, err) != CX_OK)
		return err->code;
	if (column >= m->schema->ncolumns ||
		m->schema->columns[column].type == CX_T_LIST)
		return cx_err_set(err, CX_ERR_INVALID,
						  "base probe: column %u is not a scalar column of the table",
						  column + 1);
	return CX_OK;
}

cx_code
cx_base_probe(cx_objstore *s, const cx_manifest *m, uint32_t column,
			  const uint8_t *const *values, const size_t *lens, uint32_t n,
			  cx_probe_result *out, cx_err *err)
{
	uint64_t	bytes_before = s->stats.bytes_read;
	probe		pr = {{0}, false, 0, 0, out};
	uint32_t	key_col;
	cx_code		rc;

	memset(out, 0, sizeof(*out));
	if (n == 0 || m->nfragments == 0 || m->schema == NULL)
		return CX_OK;
	if (probe_columns(m, column, &key_col, err) != CX_OK)
		return err->code;
	pr.key_probe = column == key_col;
	rc = probe_set_init(&pr.set, (cx_type) m->schema->columns[column].type,
						values, lens, n, err);
	if (rc == CX_OK)
		rc = probe_fragments(s, m, column, key_col, &pr, err);
	free(pr.set.v);
	if (rc != CX_OK)
	{
		cx_probe_result_free(out);
		return rc;
	}
	if (out->nhits > 1)
		qsort(out->hits, out->nhits, sizeof(cx_probe_hit), hit_cmp);
	out->bytes_read = s->stats.bytes_read - bytes_before;
	return CX_OK;
}

void
cx_probe_result_free(cx_probe_result *r)
{
	for (uint32_t i = 0; i < r->nhits; i++)
		free(r->hits[i].key);
	free(r->hits);
	memset(r, 0, sizeof(*r));
}
