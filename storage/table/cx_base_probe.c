/*
 * cx_base_probe.c — finding the base rows that hold given column values
 * (cx_base_probe.h).
 *
 * For column reads the values are sorted once, in the order column
 * statistics use, so that both questions asked per fragment and per row
 * group ("may its min/max hold one of them?") and per row ("which of them
 * is it?") are binary searches; a probe the key index answers whole never
 * sorts them so.  For types whose statistics do not bound values bytewise
 * (floats, types without statistics) the values are sorted bytewise and
 * nothing is pruned.
 *
 * Fragments a key index segment of the column covers are answered by the
 * segment instead (cx_key_index.h): one segment per fragment (the first the
 * manifest lists), its entries filtered by the fragment's deletion vector
 * as it is now.  A segment that cannot be read (missing, damaged) is no
 * error: its fragments fall back to column reads.  Which fragment each
 * segment entry names comes from the base's probe plan (cx_probe_plan.h),
 * kept on the handle, so that a writer probing the same base for every
 * request does not sort the base's fragment paths each time.
 */
#include "table/cx_base_probe.h"

#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"
#include "table/cx_key_filter.h"
#include "table/cx_key_index_int.h"
#include "table/cx_probe_plan.h"
#include "table/cx_probe_rows.h"
#include "table/cx_row_key.h"
#include "util/cx_prefix_sort.h"

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
	const cx_manifest *m;
	const uint8_t *const *values;
	const size_t *lens;
	uint32_t   *order;			/* value indices sorted bytewise: segment
								 * order */
	uint64_t   *hashes;			/* per value: its key filter hash, computed
								 * once for every segment's filter */
	int32_t    *owner;			/* per fragment: the segment answering for
								 * it, or -1 */
	const cx_probe_plan *plan;	/* m's segments and where their fragments
								 * are */
	const int64_t *where;		/* per position in the segment being read:
								 * the fragment of m, or -1 */
	uint32_t	nwhere;
	uint32_t	segment;		/* being read */
	bool		key_probe;		/* the probed column is the key column */
	uint32_t	fragment;		/* being read */
	uint32_t	cap;			/* of out->hits */
	cx_probe_result *out;
} probe;

/* Statistics order where it is also equality (every type but floats),
 * bytewise otherwise. */
static int
value_cmp(const probe_set *set, const uint8_t *a, size_t alen,
		  const uint8_t *b, size_t blen)
{
	if (!set->ordered)
		return cx_keyseg_value_cmp(a, alen, b, blen);
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

static void
probe_set_init(probe_set *set, cx_type type, uint32_t n)
{
	set->type = type;
	set->ordered = cx_type_has_stats(type) && type != CX_T_FLOAT32 &&
		type != CX_T_FLOAT64;
	set->n = n;
	set->v = NULL;
}

/* The values in statistics order: only column reads need it, so it is
 * sorted when the first fragment the key index does not cover comes. */
static cx_code
probe_set_sort(probe_set *set, const uint8_t *const *values,
			   const size_t *lens, cx_err *err)
{
	uint32_t	n = set->n;

	if (set->v != NULL)
		return CX_OK;
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

	/* A merged TRUNCATE hides every row committed before it (invariant
	 * 17), even in fragments the version still lists. */
	if (kr->ts < pr->m->truncated_before_us)
		return CX_OK;
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
	h->key = cx_keyseg_copy(kr->rowkey, kr->rowkey_len);
	if (h->key == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
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

/* --------------------------------------------------------------------------
 * Key index segments
 * -------------------------------------------------------------------------- */

/* Two probed values' slots in byte-wise order, then by index. */
static int
bytewise_cmp(const void *a, const void *b, void *arg)
{
	const probe *pr = arg;
	uint32_t	x = ((const cx_prefix_slot *) a)->item;
	uint32_t	y = ((const cx_prefix_slot *) b)->item;
	int			c = cx_keyseg_value_cmp(pr->values[x], pr->lens[x],
										pr->values[y], pr->lens[y]);

	return c != 0 ? c : (x > y) - (x < y);
}

/* pr->order: the probed values' indexes in byte-wise order (the order of
 * key index segments), sorted by their prefixes first (cx_prefix_sort.h). */
static cx_code
order_values(probe *pr, cx_err *err)
{
	uint32_t	n = pr->set.n;
	cx_prefix_slot *slots = malloc(((size_t) n * 2 + 1) * sizeof(cx_prefix_slot));
	const cx_prefix_slot *sorted;

	if (slots == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	for (uint32_t i = 0; i < n; i++)
	{
		slots[i].prefix = cx_bytes_prefix(pr->values[i], pr->lens[i]);
		slots[i].item = i;
	}
	sorted = cx_prefix_sort(slots, slots + n, n, bytewise_cmp, pr);
	for (uint32_t i = 0; i < n; i++)
		pr->order[i] = sorted[i].item;
	free(slots);
	return CX_OK;
}

/* Whether a segment's value range holds one of the probed values. */
static bool
segment_may_hold(const probe *pr, const cx_keyseg_ref *ref)
{
	uint32_t	lo = 0;
	uint32_t	hi = pr->set.n;

	if (ref->entries == 0)
		return false;
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;
		uint32_t	v = pr->order[mid];

		if (cx_keyseg_value_cmp(pr->values[v], pr->lens[v], ref->min,
								ref->min_len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < pr->set.n &&
		cx_keyseg_value_cmp(pr->values[pr->order[lo]], pr->lens[pr->order[lo]],
							ref->max, ref->max_len) <= 0;
}

/* An entry of the segment being read: a hit if its fragment is one the
 * segment answers for and the row is still live. */
static cx_code
match_entry(void *arg, uint32_t i, const cx_keyentry *e, cx_err *err)
{
	probe	   *pr = arg;
	int64_t		f = e->fragment < pr->nwhere ? pr->where[e->fragment] : -1;
	cx_keyrow	kr;

	if (f < 0 || pr->owner[f] != (int32_t) pr->segment ||
		(e->tombstone && !pr->key_probe) ||
		cx_dv_deletes(pr->m->dvs != NULL ? &pr->m->dvs[f] : NULL, e->row))
		return CX_OK;
	kr.key = e->value;
	kr.len = e->len;
	kr.rowkey = e->key != NULL ? e->key : e->value;
	kr.rowkey_len = e->key != NULL ? e->key_len : e->len;
	kr.ts = e->ts;
	kr.tombstone = e->tombstone;
	kr.row = e->row;
	pr->fragment = (uint32_t) f;
	return add_hit(pr, pr->order[i], &kr, err);
}

/* owner[f]: the first segment of the column that lists fragment f. */
static void
assign_owners(probe *pr, uint32_t column)
{
	const cx_keyindex *ix = &pr->plan->ix;

	for (uint32_t f = 0; f < pr->m->nfragments; f++)
		pr->owner[f] = -1;
	for (uint32_t i = 0; i < ix->n; i++)
	{
		const cx_keyseg_ref *ref = &ix->segs[i];

		for (uint32_t k = 0; ref->column == column && k < ref->nfragments; k++)
		{
			int64_t		f = pr->plan->where[i][k];

			if (f >= 0 && pr->owner[f] < 0)
				pr->owner[f] = (int32_t) i;
		}
	}
}

/* Takes up the plan's where[] of the segment being read; whether the
 * segment answers for any fragment. */
static bool
map_positions(probe *pr, const cx_keyseg_ref *ref)
{
	bool		owns_any = false;

	pr->where = pr->plan->where[pr->segment];
	pr->nwhere = ref->nfragments;
	for (uint32_t k = 0; k < ref->nfragments; k++)
		if (pr->where[k] >= 0 &&
			pr->owner[pr->where[k]] == (int32_t) pr->segment)
			owns_any = true;
	return owns_any;
}

/* After a segment could not be read: its hits are dropped and its
 * fragments read by column instead. */
static void
disown(probe *pr, uint32_t nhits_before)
{
	cx_probe_result *out = pr->out;

	while (out->nhits > nhits_before)
		free(out->hits[--out->nhits].key);
	for (uint32_t f = 0; f < pr->m->nfragments; f++)
		if (pr->owner[f] == (int32_t) pr->segment)
			pr->owner[f] = -1;
}

static cx_code
probe_segment(cx_objstore *s, probe *pr, const cx_keyseg_ref *ref,
			  cx_err *err)
{
	uint32_t	before = pr->out->nhits;
	cx_code		rc;

	if (!map_positions(pr, ref) || !segment_may_hold(pr, ref))
		return CX_OK;
	rc = cx_keyseg_lookup(s, ref, pr->values, pr->lens, pr->order,
						  pr->hashes, pr->set.n, match_entry, pr, err);
	if (rc == CX_OK)
		pr->out->index_segments_read++;
	else if (rc == CX_ERR_NOT_FOUND || rc == CX_ERR_CORRUPT)
		disown(pr, before);
	else
		return rc;
	return CX_OK;
}

/* hashes[] for the segments' filters, when the plan lists segments. */
static cx_code
hash_values(probe *pr, cx_err *err)
{
	if (pr->plan->ix.n == 0)
		return CX_OK;
	pr->hashes = malloc(((size_t) pr->set.n + 1) * sizeof(uint64_t));
	if (pr->hashes == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	for (uint32_t i = 0; i < pr->set.n; i++)
		pr->hashes[i] = cx_keyfilter_hash(pr->values[i], pr->lens[i]);
	return CX_OK;
}

/* Answers from the key index what it covers; owner[] then says which
 * fragments are left for column reads. */
static cx_code
probe_index(cx_objstore *s, probe *pr, uint32_t column, cx_err *err)
{
	const cx_keyindex *ix;
	cx_code		rc;

	pr->owner = malloc((pr->m->nfragments + 1) * sizeof(int32_t));
	pr->order = malloc(((size_t) pr->set.n + 1) * sizeof(uint32_t));
	if (pr->owner == NULL || pr->order == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	if (order_values(pr, err) != CX_OK ||
		cx_probe_plan_get(s, pr->m, &pr->plan, err) != CX_OK ||
		hash_values(pr, err) != CX_OK)
		return err->code;
	ix = &pr->plan->ix;
	assign_owners(pr, column);
	rc = CX_OK;
	for (uint32_t i = 0; rc == CX_OK && i < ix->n; i++)
	{
		pr->segment = i;
		if (ix->segs[i].column == column)
			rc = probe_segment(s, pr, &ix->segs[i], err);
	}
	return rc;
}

/* Reads the probed column of the live fragments no segment answers for
 * that may hold a value (a small one's rows once per handle:
 * cx_probe_rows.h). */
static cx_code
probe_fragments(cx_objstore *s, const cx_manifest *m, uint32_t column,
				uint32_t key_col, probe *pr, cx_err *err)
{
	cx_colscan_spec spec = {column, key_col, NULL, group_may_hold, match_row,
	NULL, pr};

	for (uint32_t f = 0; f < m->nfragments; f++)
	{
		const cx_fragment_info *fi = &m->fragments[f];
		bool		from_store;

		if (pr->owner[f] >= 0 || cx_manifest_deleted_count(m, f) == fi->rows)
			continue;
		if (probe_set_sort(&pr->set, pr->values, pr->lens, err) != CX_OK)
			return err->code;
		if (!probe_set_may_hold(&pr->set,
								cx_fragment_stats(fi, m->schema, column)))
			continue;
		pr->fragment = f;
		spec.dv = m->dvs != NULL ? &m->dvs[f] : NULL;
		if (cx_probe_rows_scan(s, fi, m->schema, &spec, &from_store,
							   err) != CX_OK)
			return cx_manifest_fragment_failed(m, fi->path, err);
		pr->out->fragments_scanned++;
		pr->out->fragments_kept += !from_store;
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
	probe		pr = {0};
	uint32_t	key_col;
	cx_code		rc;

	memset(out, 0, sizeof(*out));
	if (n == 0 || m->nfragments == 0 || m->schema == NULL)
		return CX_OK;
	if (probe_columns(m, column, &key_col, err) != CX_OK)
		return err->code;
	pr.out = out;
	pr.m = m;
	pr.values = values;
	pr.lens = lens;
	pr.key_probe = column == key_col;
	probe_set_init(&pr.set, (cx_type) m->schema->columns[column].type, n);
	rc = probe_index(s, &pr, column, err);
	if (rc == CX_OK)
		rc = probe_fragments(s, m, column, key_col, &pr, err);
	free(pr.set.v);
	free(pr.order);
	free(pr.hashes);
	free(pr.owner);
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
