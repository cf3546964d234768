/*
 * cx_iceberg_deletes.c — the position deletes of a base version: every row
 * of a base fragment that a ctxstore scan of the base would not return
 * (its deletion vector lists it, it is a tombstone, or it was committed
 * before the base's TRUNCATE cut), as one Iceberg position-delete file
 * written with the engine's fragment writer: file_path and pos, REQUIRED,
 * with the field ids the Iceberg spec gives them, sorted by file_path then
 * pos.
 *
 * Only the hidden columns of fragments that may hold tombstones or rows
 * before the cut (by their statistics) are read; the others contribute
 * their deletion vectors alone.
 */
#include <stdlib.h>
#include <string.h>

#include "table/cx_row_key.h"
#include "table/cx_truncation.h"
#include "maintenance/cx_iceberg_int.h"

typedef struct deletes
{
	cx_objstore *s;
	const char *key;
	cx_schema  *schema;			/* file_path, pos */
	cx_fragw   *w;				/* opened with the first delete */
	char	   *path;			/* of the current data file */
	uint64_t	rows;
} deletes;

static cx_code
delete_schema(cx_schema **out, cx_err *err)
{
	cx_schema  *sc = cx_schema_new();

	if (sc == NULL ||
		cx_schema_add(sc, "file_path", CX_T_STRING, 0, NULL, err) != CX_OK ||
		cx_schema_add(sc, "pos", CX_T_INT64, 0, NULL, err) != CX_OK)
	{
		cx_schema_free(sc);
		return sc == NULL ? cx_err_set(err, CX_ERR_NOMEM, "out of memory") : err->code;
	}
	sc->columns[0].field_id = CX_FIELD_ID_DELETE_FILE_PATH;
	sc->columns[1].field_id = CX_FIELD_ID_DELETE_POS;
	sc->columns[0].required = sc->columns[1].required = true;
	*out = sc;
	return CX_OK;
}

static cx_code
emit(deletes *d, uint64_t pos, cx_err *err)
{
	cx_datum	v[2] = {{0}};

	if (d->w == NULL &&
		cx_fragw_open(d->s, d->key, d->schema, NULL, &d->w, err) != CX_OK)
		return err->code;
	v[0].v.bytes.ptr = (const uint8_t *) d->path;
	v[0].v.bytes.len = strlen(d->path);
	v[1].v.i64 = (int64_t) pos;
	d->rows++;
	return cx_fragw_append(d->w, v, err);
}

/* The deletion vector of fragment i of m alone. */
static cx_code
emit_dv(deletes *d, const cx_manifest *m, uint32_t i, cx_err *err)
{
	const cx_deletion_vector *dv = m->dvs != NULL ? &m->dvs[i] : NULL;

	for (uint32_t k = 0; dv != NULL && k < dv->n; k++)
		if (emit(d, dv->rows[k], err) != CX_OK)
			return err->code;
	return CX_OK;
}

/* Every hidden row of fragment i of m, reading its hidden columns. */
static cx_code
emit_read(deletes *d, const cx_manifest *m, uint32_t i, cx_err *err)
{
	const cx_fragment_info *fi = &m->fragments[i];
	cx_dvcursor dvc = {m->dvs != NULL ? &m->dvs[i] : NULL, 0};
	cx_layout	layout = {0};
	cx_fragr   *r;
	bool	   *want = NULL;
	uint64_t	first = 0;
	cx_code		rc;

	if (cx_fragr_open_entry(d->s, fi, &r, err) != CX_OK)
		return cx_manifest_fragment_failed(m, fi->path, err);
	rc = cx_layout_check(m->schema, cx_fragr_schema(r), fi->path, &layout, err);
	if (rc == CX_OK && (want = calloc(cx_fragr_schema(r)->ncolumns, sizeof(bool))) == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	if (rc == CX_OK)
		want[layout.ts_col] = want[layout.tomb_col] = true;
	for (uint32_t g = 0; rc == CX_OK && g < cx_fragr_num_groups(r); g++)
	{
		cx_rowgroup *rg;

		if ((rc = cx_fragr_read_group(r, g, want, &rg, err)) != CX_OK)
			break;
		for (uint32_t k = 0; rc == CX_OK && k < cx_rowgroup_rows(rg); k++)
			if (cx_dvcursor_deleted(&dvc, first + k) ||
				cx_row_tombstone(rg, &layout, k) ||
				cx_row_ts(rg, &layout, k) < m->truncated_before_us)
				rc = emit(d, first + k, err);
		first += cx_rowgroup_rows(rg);
		cx_rowgroup_free(rg);
	}
	free(want);
	cx_layout_free(&layout);
	cx_fragr_close(r);
	return rc;
}

/* Orders fragment indices of manifest m by path (delete files are sorted
 * so). */
static int
by_path(const void *a, const void *b, void *m)
{
	const cx_fragment_info *f = ((const cx_manifest *) m)->fragments;

	return strcmp(f[*(const uint32_t *) a].path, f[*(const uint32_t *) b].path);
}

static cx_code
emit_fragment(deletes *d, const cx_manifest *m, uint32_t i,
			  const char *location_prefix, cx_err *err)
{
	const cx_fragment_info *fi = &m->fragments[i];
	bool		read = cx_fragment_may_have_tombstones(fi) ||
		(m->truncated_before_us > 0 &&
		 cx_fragment_any_before(fi, m->truncated_before_us));
	size_t		len = strlen(location_prefix) + strlen(fi->path) + 1;

	free(d->path);
	if ((d->path = malloc(len)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	snprintf(d->path, len, "%s%s", location_prefix, fi->path);
	return read ? emit_read(d, m, i, err) : emit_dv(d, m, i, err);
}

cx_code
cx_ice_write_deletes(cx_objstore *s, const cx_manifest *m,
					 const char *location_prefix, const char *key,
					 uint64_t *rows, uint64_t *size, cx_err *err)
{
	deletes		d = {.s = s, .key = key};
	uint32_t   *order = calloc(m->nfragments + 1, sizeof(uint32_t));
	cx_fragment_info info = {0};
	cx_code		rc = order != NULL ? delete_schema(&d.schema, err) :
		cx_err_set(err, CX_ERR_NOMEM, "out of memory");

	for (uint32_t i = 0; rc == CX_OK && i < m->nfragments; i++)
		order[i] = i;
	if (rc == CX_OK)
		qsort_r(order, m->nfragments, sizeof(uint32_t), by_path, (void *) m);
	for (uint32_t i = 0; rc == CX_OK && i < m->nfragments; i++)
		rc = emit_fragment(&d, m, order[i], location_prefix, err);
	*rows = rc == CX_OK ? d.rows : 0;
	*size = 0;
	if (d.w != NULL && rc != CX_OK)
		cx_fragw_abort(d.w);
	else if (d.w != NULL && (rc = cx_fragw_finish(d.w, &info, err)) == CX_OK)
		*size = info.size;
	cx_fragment_info_free(&info);
	cx_schema_free(d.schema);
	free(d.path);
	free(order);
	return rc;
}
