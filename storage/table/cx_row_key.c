/*
 * cx_row_key.c — key bytes, key ranges and the projected key pass over a
 * fragment (cx_row_key.h); cx_layout.c maps a fragment's columns.
 */
#include "table/cx_row_key.h"

#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"

/* --------------------------------------------------------------------------
 * Keys
 * -------------------------------------------------------------------------- */

cx_code
cx_key_column(const cx_schema *table, const char *key_column, uint32_t *index,
			  cx_err *err)
{
	int			i = cx_schema_find(table, key_column);

	if (i < 0)
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "key column \"%.64s\" is not a column of the table",
						  key_column);
	if (table->columns[i].type == CX_T_LIST)
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "key column \"%.64s\" is an array; keys must be scalar",
						  key_column);
	*index = (uint32_t) i;
	return CX_OK;
}

bool
cx_key_bytes(const cx_colvec *v, uint32_t i, const uint8_t **p, size_t *len)
{
	if (cx_colvec_isnull(v, i))
		return false;
	if (v->width > 0)
	{
		*p = v->fixed + (size_t) i * v->width;
		*len = v->width;
	}
	else
	{
		*p = v->bytes + v->offsets[i];
		*len = v->offsets[i + 1] - v->offsets[i];
	}
	return true;
}

void
cx_keyrange_init(cx_keyrange *r, cx_type type)
{
	r->type = type;
	r->empty = true;
	cx_buf_init(&r->min);
	cx_buf_init(&r->max);
}

void
cx_keyrange_free(cx_keyrange *r)
{
	cx_buf_free(&r->min);
	cx_buf_free(&r->max);
}

static void
set_bound(cx_buf *b, const uint8_t *key, size_t len)
{
	cx_buf_reset(b);
	cx_buf_put(b, key, len);
}

cx_code
cx_keyrange_add(cx_keyrange *r, const uint8_t *key, size_t len, cx_err *err)
{
	if (r->empty || cx_stats_cmp(r->type, key, len, r->min.data, r->min.len) < 0)
		set_bound(&r->min, key, len);
	if (r->empty || cx_stats_cmp(r->type, key, len, r->max.data, r->max.len) > 0)
		set_bound(&r->max, key, len);
	r->empty = false;
	if (!cx_buf_ok(&r->min) || !cx_buf_ok(&r->max))
		return cx_err_set(err, CX_ERR_NOMEM, "key range: out of memory");
	return CX_OK;
}

/* Whether a column with statistics st (NULL: unknown) may hold a value in
 * [lo, hi] (ordered as statistics order values). */
static bool
bounds_may_overlap(cx_type type, const cx_colstats *st, const uint8_t *lo,
				   size_t lolen, const uint8_t *hi, size_t hilen)
{
	if (st == NULL || !cx_type_has_stats(type) ||
		type == CX_T_FLOAT32 || type == CX_T_FLOAT64)
		return true;
	if (st->value_count == 0)
		return false;			/* every value of the column is NULL */
	/* A stored min may be a prefix of the true min: still a lower bound.  A
	 * max is never truncated (it is absent instead). */
	if (st->has_max && cx_stats_cmp(type, st->max, st->max_len, lo, lolen) < 0)
		return false;
	if (st->has_min && cx_stats_cmp(type, st->min, st->min_len, hi, hilen) > 0)
		return false;
	return true;
}

bool
cx_keyrange_may_overlap(const cx_keyrange *r, const cx_colstats *st)
{
	if (r->empty)
		return false;
	return bounds_may_overlap(r->type, st, r->min.data, r->min.len,
							  r->max.data, r->max.len);
}

bool
cx_stats_may_hold(cx_type type, const cx_colstats *st, const uint8_t *value,
				  size_t len)
{
	return bounds_may_overlap(type, st, value, len, value, len);
}

/* --------------------------------------------------------------------------
 * Rows
 * -------------------------------------------------------------------------- */

int64_t
cx_row_ts(const cx_rowgroup *g, const cx_layout *layout, uint32_t i)
{
	const cx_colvec *v;
	cx_datum	d;

	v = cx_rowgroup_column(g, (uint32_t) layout->ts_col);
	cx_colvec_get(v, i, &d);
	/* Writers never leave it NULL; a NULL reads as 0, like any bad value. */
	return d.isnull ? 0 : d.v.i64;
}

bool
cx_row_tombstone(const cx_rowgroup *g, const cx_layout *layout, uint32_t i)
{
	const cx_colvec *v;
	cx_datum	d;

	v = cx_rowgroup_column(g, (uint32_t) layout->tomb_col);
	cx_colvec_get(v, i, &d);
	return !d.isnull && d.v.b;
}

bool
cx_dv_deletes(const cx_deletion_vector *dv, uint64_t row)
{
	uint32_t	lo = 0;
	uint32_t	hi = dv != NULL ? dv->n : 0;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (dv->rows[mid] < row)
			lo = mid + 1;
		else
			hi = mid;
	}
	return dv != NULL && lo < dv->n && dv->rows[lo] == row;
}

/* How many rows ahead cx_keyscan_ahead() announces keys. */
#define KEY_AHEAD 8

/* Announces the scanned column's value of rows [from, to) of a group. */
static void
announce(const cx_colscan_spec *spec, const cx_colvec *v, uint32_t from,
		 uint32_t to)
{
	const uint8_t *p;
	size_t		len;

	for (uint32_t i = from; spec->ahead != NULL && i < to; i++)
		if (cx_key_bytes(v, i, &p, &len))
			spec->ahead(spec->arg, p, len);
}

/* Calls spec->fn for the live rows of one row group whose column (and key,
 * if asked for) is not NULL. */
static cx_code
colscan_group(const cx_rowgroup *g, const cx_layout *layout,
			  const cx_colscan_spec *spec, uint64_t first_row,
			  cx_dvcursor *dvc, cx_err *err)
{
	const cx_colvec *cv = cx_layout_column(layout, g, spec->column);
	const cx_colvec *kv = spec->key_col >= 0 ?
		cx_layout_column(layout, g, (uint32_t) spec->key_col) : NULL;
	uint32_t	n = cx_rowgroup_rows(g);

	announce(spec, cv, 0, n < KEY_AHEAD ? n : KEY_AHEAD);
	for (uint32_t i = 0; i < n; i++)
	{
		cx_keyrow	kr;

		if (i + KEY_AHEAD < n)
			announce(spec, cv, i + KEY_AHEAD, i + KEY_AHEAD + 1);
		kr.row = first_row + i;
		if (cx_dvcursor_deleted(dvc, kr.row) ||
			!cx_key_bytes(cv, i, &kr.key, &kr.len))
			continue;
		kr.rowkey = kr.key;
		kr.rowkey_len = kr.len;
		if (kv != NULL && !cx_key_bytes(kv, i, &kr.rowkey, &kr.rowkey_len))
			continue;
		kr.ts = cx_row_ts(g, layout, i);
		kr.tombstone = cx_row_tombstone(g, layout, i);
		if (spec->fn(spec->arg, &kr, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

cx_code
cx_keyscan(cx_objstore *s, const cx_fragment_info *fi, const cx_schema *table,
		   uint32_t key_col, const cx_deletion_vector *dv, cx_keyrow_fn fn,
		   void *arg, cx_err *err)
{
	return cx_keyscan_ahead(s, fi, table, key_col, dv, fn, NULL, arg, err);
}

cx_code
cx_keyscan_ahead(cx_objstore *s, const cx_fragment_info *fi,
				 const cx_schema *table, uint32_t key_col,
				 const cx_deletion_vector *dv, cx_keyrow_fn fn,
				 cx_keyahead_fn ahead, void *arg, cx_err *err)
{
	cx_colscan_spec spec = {key_col, -1, dv, NULL, fn, ahead, arg};

	return cx_colscan(s, fi, table, &spec, err);
}

/* The table columns a column pass reads (the column and the key) in
 * table_want, and the fragment columns that takes, with the hidden ones, in
 * frag_want. */
static cx_code
colscan_columns(const cx_layout *layout, const cx_colscan_spec *spec,
				const char *path, bool **table_want, bool **frag_want,
				cx_err *err)
{
	if (spec->column >= layout->ncolumns ||
		(spec->key_col >= 0 && spec->key_col >= (int64_t) layout->ncolumns))
		return cx_err_set(err, CX_ERR_INVALID,
						  "column pass over %s: no such column", path);
	*table_want = calloc(layout->ncolumns, sizeof(bool));
	*frag_want = calloc(layout->nfrag, sizeof(bool));
	if (*table_want == NULL || *frag_want == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading %s", path);
	(*table_want)[spec->column] = true;
	if (spec->key_col >= 0)
		(*table_want)[spec->key_col] = true;
	cx_layout_want(layout, *table_want, *frag_want);
	(*frag_want)[layout->ts_col] = (*frag_want)[layout->tomb_col] = true;
	return CX_OK;
}

/* Whether the pass may skip row group grp unread: the filter says so from
 * the column's statistics, or rows are passed one by one (those with a NULL
 * column are not) and the fragment predates the column.  A widened column's
 * statistics are in its stored type: not filtered. */
static bool
colscan_skips(const cx_fragr *r, const cx_layout *layout,
			  const cx_colscan_spec *spec, bool by_row, uint32_t grp)
{
	const cx_layout_col *c = &layout->cols[spec->column];

	if (c->frag < 0)
		return by_row;
	return spec->group_may_hold != NULL && !c->widen &&
		!spec->group_may_hold(spec->arg,
							  &cx_fragr_chunk(r, grp, (uint32_t) c->frag)->stats);
}

/*
 * The pass both entry points share: reads the columns spec names of each row
 * group its filter lets through, and hands the group to group_fn when there
 * is one, else spec->fn each of its rows.
 */
static cx_code
colscan_pass(cx_objstore *s, const cx_fragment_info *fi,
			 const cx_schema *table, const cx_colscan_spec *spec,
			 cx_keygroup_fn group_fn, cx_err *err)
{
	cx_fragr   *r;
	cx_layout	layout = {0};
	bool	   *table_want = NULL;
	bool	   *frag_want = NULL;
	uint64_t	first_row = 0;
	cx_dvcursor dvc = {spec->dv, 0};
	cx_code		rc;

	if (cx_fragr_open_entry(s, fi, &r, err) != CX_OK)
		return err->code;
	rc = cx_layout_check(table, cx_fragr_schema(r), fi->path, &layout, err);
	if (rc == CX_OK)
		rc = colscan_columns(&layout, spec, fi->path, &table_want, &frag_want,
							 err);
	for (uint32_t grp = 0; rc == CX_OK && grp < cx_fragr_num_groups(r); grp++)
	{
		cx_rowgroup *g;

		if (colscan_skips(r, &layout, spec, group_fn == NULL, grp))
		{
			first_row += cx_fragr_group_rows(r, grp);
			continue;
		}
		rc = cx_fragr_read_group(r, grp, frag_want, &g, err);
		if (rc != CX_OK)
			break;
		rc = cx_layout_adapt(&layout, g, table_want, err);
		if (rc == CX_OK)
			rc = group_fn != NULL ?
				group_fn(spec->arg, g, &layout, first_row, err) :
				colscan_group(g, &layout, spec, first_row, &dvc, err);
		first_row += cx_rowgroup_rows(g);
		cx_rowgroup_free(g);
	}
	free(table_want);
	free(frag_want);
	cx_layout_free(&layout);
	cx_fragr_close(r);
	return rc;
}

cx_code
cx_colscan(cx_objstore *s, const cx_fragment_info *fi, const cx_schema *table,
		   const cx_colscan_spec *spec, cx_err *err)
{
	return colscan_pass(s, fi, table, spec, NULL, err);
}

cx_code
cx_keygroups(cx_objstore *s, const cx_fragment_info *fi,
			 const cx_schema *table, uint32_t key_col, cx_keygroup_fn fn,
			 void *arg, cx_err *err)
{
	cx_colscan_spec spec = {key_col, -1, NULL, NULL, NULL, NULL, arg};

	return colscan_pass(s, fi, table, &spec, fn, err);
}
