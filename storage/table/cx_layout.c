/*
 * cx_layout.c — how a fragment's columns serve the table's (cx_row_key.h).
 *
 * Fragments keep the schema they were written with.  A store's schema may
 * have changed since (ctxstore/table.h, "Changing a store's columns"), so a
 * table column is found in a fragment by its field id, never by position or
 * name: a column added later is absent (read as NULL), a dropped one is
 * simply never asked for, a renamed one keeps its id, a widened one is
 * stored narrower and widened here, one row group at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "table/cx_row_key.h"

static bool
is_hidden(const cx_column *c, int32_t field_id, cx_type type)
{
	return c->field_id == field_id && c->type == type;
}

static cx_code
map_column(const cx_column *tc, const cx_schema *frag, const char *path,
		   cx_layout_col *out, cx_err *err)
{
	int			f = cx_schema_find_field(frag, tc->field_id);

	out->frag = f;
	out->widen = false;
	if (f < 0)
		return CX_OK;
	if (!cx_column_widens_to(&frag->columns[f], tc))
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "fragment %s: column \"%s\" (field id %d) holds %s values, which cannot be read as the table's %s",
						  path, frag->columns[f].name, (int) tc->field_id,
						  cx_type_name(frag->columns[f].type),
						  cx_type_name(tc->type));
	out->widen = !cx_column_same_type(&frag->columns[f], tc);
	return CX_OK;
}

static cx_code
find_hidden(const cx_schema *frag, const char *path, cx_layout *out,
			cx_err *err)
{
	out->ts_col = cx_schema_find_field(frag, CX_FIELD_ID_COMMIT_TS);
	out->tomb_col = cx_schema_find_field(frag, CX_FIELD_ID_TOMBSTONE);
	if (out->ts_col < 0 || out->tomb_col < 0 ||
		!is_hidden(&frag->columns[out->ts_col], CX_FIELD_ID_COMMIT_TS, CX_T_INT64) ||
		!is_hidden(&frag->columns[out->tomb_col], CX_FIELD_ID_TOMBSTONE, CX_T_BOOL))
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "fragment %s lacks the hidden %s int64 and %s bool columns",
						  path, CX_COL_COMMIT_TS, CX_COL_TOMBSTONE);
	return CX_OK;
}

cx_code
cx_layout_check(const cx_schema *table, const cx_schema *frag,
				const char *path, cx_layout *out, cx_err *err)
{
	uint32_t	n = table->ncolumns;

	memset(out, 0, sizeof(*out));
	out->table = table;
	out->ncolumns = n;
	out->nfrag = frag->ncolumns;
	if (find_hidden(frag, path, out, err) != CX_OK)
		return err->code;
	out->cols = calloc(n + 1, sizeof(cx_layout_col));
	out->views = calloc(n + 1, sizeof(cx_layout_view));
	if (out->cols == NULL || out->views == NULL)
	{
		cx_layout_free(out);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading %s", path);
	}
	for (uint32_t i = 0; i < n; i++)
		if (map_column(&table->columns[i], frag, path, &out->cols[i],
					   err) != CX_OK)
		{
			cx_layout_free(out);
			return err->code;
		}
	return CX_OK;
}

void
cx_layout_free(cx_layout *l)
{
	for (uint32_t i = 0; l->views != NULL && i < l->ncolumns; i++)
		free(l->views[i].mem);
	free(l->views);
	free(l->cols);
	l->views = NULL;
	l->cols = NULL;
}

int32_t
cx_layout_frag_column(const cx_layout *l, uint32_t column)
{
	return column < l->ncolumns ? l->cols[column].frag : -1;
}

void
cx_layout_want(const cx_layout *l, const bool *want, bool *frag_want)
{
	memset(frag_want, 0, l->nfrag * sizeof(bool));
	for (uint32_t i = 0; i < l->ncolumns; i++)
		if ((want == NULL || want[i]) && l->cols[i].frag >= 0)
			frag_want[l->cols[i].frag] = true;
}

/* Room for a view of nrows rows of the table column's type: the NULL bitmap,
 * the fixed values and the offsets, all zeroed. */
static cx_code
view_memory(cx_layout_view *v, size_t bytes, cx_err *err)
{
	if (bytes > v->cap)
	{
		uint8_t    *mem = realloc(v->mem, bytes);

		if (mem == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "widening a column: out of memory");
		v->mem = mem;
		v->cap = bytes;
	}
	memset(v->mem, 0, bytes);
	return CX_OK;
}

/* A column the fragment predates: every row NULL. */
static cx_code
null_view(const cx_column *tc, uint32_t nrows, cx_layout_view *v, cx_err *err)
{
	size_t		bitmap = ((size_t) nrows + 7) / 8;
	size_t		width = (size_t) cx_type_width((cx_type) tc->type);
	size_t		values = width > 0 ? width * nrows : sizeof(uint32_t) * ((size_t) nrows + 1);

	if (view_memory(v, bitmap + values + sizeof(uint32_t), err) != CX_OK)
		return err->code;
	memset(v->mem, 0xff, bitmap);
	memset(&v->vec, 0, sizeof(v->vec));
	v->vec.type = tc->type;
	v->vec.width = (uint8_t) width;
	v->vec.nrows = nrows;
	v->vec.nulls = v->mem;
	/* Offsets are 4-aligned: bitmap rounded up. */
	bitmap = (bitmap + 3) & ~(size_t) 3;
	if (width > 0)
		v->vec.fixed = v->mem + bitmap;
	else
		v->vec.offsets = (const uint32_t *) (v->mem + bitmap);
	memset(&v->child, 0, sizeof(v->child));
	v->child.type = tc->elem_type;
	v->child.width = (uint8_t) cx_type_width((cx_type) tc->elem_type);
	v->vec.child = tc->type == CX_T_LIST ? &v->child : NULL;
	return CX_OK;
}

/* One stored value of type from as the wider type to (little-endian, the
 * fixed-width form of colvecs). */
static void
widen_value(cx_type from, cx_type to, const uint8_t *src, uint8_t *dst)
{
	int64_t		i;

	if (from == CX_T_FLOAT32)
	{
		uint32_t	b32 = cx_load_u32(src);
		float		f;
		double		x;
		uint64_t	b64;

		memcpy(&f, &b32, sizeof(f));
		x = (double) f;
		memcpy(&b64, &x, sizeof(b64));
		cx_store_u64(dst, b64);
		return;
	}
	i = from == CX_T_INT16 ? (int16_t) cx_load_u16(src) :
		(int32_t) cx_load_u32(src);
	if (to == CX_T_INT32)
		cx_store_u32(dst, (uint32_t) (int32_t) i);
	else
		cx_store_u64(dst, (uint64_t) i);
}

/* A column stored narrower than the table's type: its values widened, its
 * NULL bitmap shared with the row group. */
static cx_code
widened_view(const cx_column *tc, const cx_colvec *src, cx_layout_view *v,
			 cx_err *err)
{
	size_t		width = (size_t) cx_type_width((cx_type) tc->type);
	uint8_t    *dst;

	if (view_memory(v, width * src->nrows + 1, err) != CX_OK)
		return err->code;
	dst = v->mem;
	for (uint32_t r = 0; r < src->nrows; r++)
		if (!cx_colvec_isnull(src, r))
			widen_value((cx_type) src->type, (cx_type) tc->type,
						src->fixed + (size_t) r * src->width,
						dst + (size_t) r * width);
	memset(&v->vec, 0, sizeof(v->vec));
	v->vec.type = tc->type;
	v->vec.width = (uint8_t) width;
	v->vec.nrows = src->nrows;
	v->vec.nulls = src->nulls;
	v->vec.fixed = dst;
	return CX_OK;
}

cx_code
cx_layout_adapt(cx_layout *l, const cx_rowgroup *g, const bool *want,
				cx_err *err)
{
	for (uint32_t i = 0; i < l->ncolumns; i++)
	{
		const cx_layout_col *c = &l->cols[i];
		const cx_column *tc = &l->table->columns[i];
		cx_code		rc = CX_OK;

		l->views[i].ready = false;
		if (want != NULL && !want[i])
			continue;
		l->views[i].ready = true;
		if (c->frag < 0)
			rc = null_view(tc, cx_rowgroup_rows(g), &l->views[i], err);
		else if (c->widen)
			rc = widened_view(tc, cx_rowgroup_column(g, (uint32_t) c->frag),
							  &l->views[i], err);
		if (rc != CX_OK)
			return rc;
	}
	return CX_OK;
}

const cx_colvec *
cx_layout_column(const cx_layout *l, const cx_rowgroup *g, uint32_t column)
{
	const cx_layout_col *c = &l->cols[column];

	if (c->frag < 0 || c->widen)
		return l->views[column].ready ? &l->views[column].vec : NULL;
	return cx_rowgroup_column(g, (uint32_t) c->frag);
}

/* --------------------------------------------------------------------------
 * Rows of an older schema
 * -------------------------------------------------------------------------- */

/* A decoded value of column `from` as a value of column `to`, which it
 * widens to (or is the same type as). */
static void
widen_datum(const cx_column *from, const cx_column *to, const cx_datum *in,
			cx_datum *out)
{
	*out = *in;
	if (in->isnull || from->type == to->type)
		return;
	if (from->type == CX_T_FLOAT32)
		out->v.f64 = (double) in->v.f32;
	else if (to->type == CX_T_INT32)
		out->v.i32 = in->v.i16;
	else
		out->v.i64 = from->type == CX_T_INT16 ? in->v.i16 : in->v.i32;
}

cx_code
cx_rows_reshape(const cx_schema *from, const cx_schema *to,
				const uint8_t *rows, size_t len, uint64_t nrows, cx_buf *out,
				cx_err *err)
{
	cx_datum   *in = calloc((size_t) from->ncolumns + 1, sizeof(cx_datum));
	cx_datum   *vals = calloc((size_t) to->ncolumns + 1, sizeof(cx_datum));
	cx_buf		scratch;
	cx_rd		r;
	cx_code		rc = CX_OK;

	cx_buf_init(&scratch);
	cx_rd_init(&r, rows, len);
	if (in == NULL || vals == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "reshaping rows: out of memory");
	for (uint64_t n = 0; rc == CX_OK && n < nrows; n++)
	{
		cx_row_kind kind;

		rc = cx_row_decode(from, &r, &kind, in, &scratch, err);
		for (uint32_t j = 0; rc == CX_OK && j < to->ncolumns; j++)
		{
			int			i = cx_schema_find_field(from, to->columns[j].field_id);

			if (i < 0)
				vals[j].isnull = true;
			else
				widen_datum(&from->columns[i], &to->columns[j], &in[i], &vals[j]);
		}
		if (rc == CX_OK)
			cx_row_encode(to, kind, vals, out);
	}
	if (rc == CX_OK && !cx_buf_ok(out))
		rc = cx_err_set(err, CX_ERR_NOMEM, "reshaping rows: out of memory");
	cx_buf_free(&scratch);
	free(in);
	free(vals);
	return rc;
}

bool
cx_schema_reshapes_to(const cx_schema *from, const cx_schema *to)
{
	for (uint32_t j = 0; j < to->ncolumns; j++)
	{
		int			i = cx_schema_find_field(from, to->columns[j].field_id);

		if (i >= 0 && !cx_column_widens_to(&from->columns[i], &to->columns[j]))
			return false;
	}
	return true;
}
