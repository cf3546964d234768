/*
 * cx_probe_rows.c — small fragments' probed rows, kept on the handle
 * (cx_probe_rows.h).
 *
 * A kept fragment holds every row of the pass cx_colscan() makes with no
 * deletion vector and no row-group filter: the probed column's value, the
 * row's key, its commit time, whether it is a tombstone and its row
 * number.  It is named by the fragment's path (fragments are written once
 * and never changed) and by what the pass reads: the probed and key
 * columns' field ids and the probed column's type (its value bytes follow
 * the table's type), so a schema change never replays rows read under an
 * older one.  At most KEPT_FRAGMENTS fragments and KEPT_BYTES_MAX bytes are
 * kept; the least recently probed goes first.  A fragment whose rows
 * outgrow the bound (values that compress well) is not kept: the rows
 * read until then, and the rest as they are read, go to the probe, so
 * each probe of it reads it once, as before.
 */
#include "table/cx_probe_rows.h"

#include <stdlib.h>
#include <string.h>

#include "util/cx_buf.h"

#define KEPT_FRAGMENTS 8
#define KEPT_BYTES_MAX (1024 * 1024)

typedef struct kept_row
{
	uint32_t	key_off;		/* into the fragment's bytes */
	uint32_t	key_len;
	uint32_t	rowkey_off;
	uint32_t	rowkey_len;
	int64_t		ts;
	uint64_t	row;
	bool		tombstone;
} kept_row;

/* What a pass reads of a fragment, which names its kept rows. */
typedef struct pass_id
{
	int32_t		column_field;
	uint8_t		column_type;
	int32_t		key_field;		/* 0: no key column read */
} pass_id;

typedef struct kept_fragment
{
	char	   *path;			/* NULL: a free entry */
	pass_id		pass;
	cx_buf		rows;			/* kept_row array, in row order */
	cx_buf		bytes;			/* the rows' values and keys */
	uint64_t	used;			/* the clock when last probed */
} kept_fragment;

typedef struct kept_rows
{
	kept_fragment f[KEPT_FRAGMENTS];
	uint64_t	clock;
} kept_rows;

/*
 * A fragment's pass being read into f.  Past the bound, the rows read so
 * far and every row after them go to spec->fn instead (passed): the probe
 * then has its hits from this one read, and nothing is kept.
 */
typedef struct reading
{
	kept_fragment *f;
	const cx_colscan_spec *spec;
	cx_dvcursor dv;				/* spec->dv, for the rows passed on */
	bool		passed;
} reading;

static void
fragment_clear(kept_fragment *f)
{
	free(f->path);
	cx_buf_free(&f->rows);
	cx_buf_free(&f->bytes);
	memset(f, 0, sizeof(*f));
}

static size_t
fragment_bytes(const kept_fragment *f)
{
	return cx_str_memory(f->path) + f->rows.cap + f->bytes.cap;
}

static void
kept_free(void *p)
{
	kept_rows  *k = p;

	for (int i = 0; i < KEPT_FRAGMENTS; i++)
		fragment_clear(&k->f[i]);
	free(k);
}

static size_t
kept_bytes(const void *p)
{
	const kept_rows *k = p;
	size_t		bytes = sizeof(*k);

	for (int i = 0; i < KEPT_FRAGMENTS; i++)
		bytes += fragment_bytes(&k->f[i]);
	return bytes;
}

static pass_id
pass_of(const cx_schema *table, const cx_colscan_spec *spec)
{
	pass_id		id = {0};

	id.column_field = table->columns[spec->column].field_id;
	id.column_type = table->columns[spec->column].type;
	if (spec->key_col >= 0)
		id.key_field = table->columns[spec->key_col].field_id;
	return id;
}

static kept_fragment *
kept_find(kept_rows *k, const char *path, pass_id id)
{
	for (int i = 0; i < KEPT_FRAGMENTS; i++)
	{
		kept_fragment *f = &k->f[i];

		if (f->path != NULL && f->pass.column_field == id.column_field &&
			f->pass.column_type == id.column_type &&
			f->pass.key_field == id.key_field && strcmp(f->path, path) == 0)
			return f;
	}
	return NULL;
}

/* The kept rows dv does not delete, through spec->fn, in row order. */
static cx_code
replay(const kept_fragment *f, const cx_colscan_spec *spec, cx_dvcursor *dv,
	   cx_err *err)
{
	const kept_row *rows = (const kept_row *) f->rows.data;
	size_t		n = f->rows.len / sizeof(kept_row);

	for (size_t i = 0; i < n; i++)
	{
		const kept_row *r = &rows[i];
		cx_keyrow	kr;

		if (cx_dvcursor_deleted(dv, r->row))
			continue;
		kr.key = f->bytes.data + r->key_off;
		kr.len = r->key_len;
		kr.rowkey = f->bytes.data + r->rowkey_off;
		kr.rowkey_len = r->rowkey_len;
		kr.ts = r->ts;
		kr.tombstone = r->tombstone;
		kr.row = r->row;
		if (spec->fn(spec->arg, &kr, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

static cx_code
pass_row(reading *rd, const cx_keyrow *kr, cx_err *err)
{
	if (cx_dvcursor_deleted(&rd->dv, kr->row))
		return CX_OK;
	return rd->spec->fn(rd->spec->arg, kr, err);
}

static cx_code
collect_row(void *arg, const cx_keyrow *kr, cx_err *err)
{
	reading    *rd = arg;
	kept_fragment *f = rd->f;
	kept_row	r;

	if (!rd->passed && f->bytes.len + kr->len + kr->rowkey_len > KEPT_BYTES_MAX)
	{
		rd->passed = true;
		if (replay(f, rd->spec, &rd->dv, err) != CX_OK)
			return err->code;
	}
	if (rd->passed)
		return pass_row(rd, kr, err);
	r.key_off = (uint32_t) f->bytes.len;
	r.key_len = (uint32_t) kr->len;
	cx_buf_put(&f->bytes, kr->key, kr->len);
	r.rowkey_off = r.key_off;
	r.rowkey_len = r.key_len;
	if (kr->rowkey != kr->key)
	{
		r.rowkey_off = (uint32_t) f->bytes.len;
		r.rowkey_len = (uint32_t) kr->rowkey_len;
		cx_buf_put(&f->bytes, kr->rowkey, kr->rowkey_len);
	}
	r.ts = kr->ts;
	r.row = kr->row;
	r.tombstone = kr->tombstone;
	cx_buf_put(&f->rows, &r, sizeof(r));
	if (!cx_buf_ok(&f->bytes) || !cx_buf_ok(&f->rows))
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	return CX_OK;
}

/* Every row of fi's pass into f, or past the bound to spec->fn (*passed). */
static cx_code
read_fragment(cx_objstore *s, const cx_fragment_info *fi,
			  const cx_schema *table, const cx_colscan_spec *spec,
			  kept_fragment *f, bool *passed, cx_err *err)
{
	reading		rd = {f, spec, {spec->dv, 0}, false};
	cx_colscan_spec all = {spec->column, spec->key_col, NULL, NULL,
	collect_row, NULL, &rd};
	cx_code		rc;

	f->pass = pass_of(table, spec);
	rc = cx_colscan(s, fi, table, &all, err);
	*passed = rd.passed;
	if (rc == CX_OK && !rd.passed && (f->path = cx_strdup(fi->path)) == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	return rc;
}

/* A free entry, made by dropping the least recently probed fragments until
 * `bytes` more fit. */
static kept_fragment *
make_room(kept_rows *k, size_t bytes)
{
	for (;;)
	{
		kept_fragment *free_entry = NULL;
		kept_fragment *oldest = NULL;
		size_t		total = bytes;

		for (int i = 0; i < KEPT_FRAGMENTS; i++)
		{
			kept_fragment *f = &k->f[i];

			total += fragment_bytes(f);
			if (f->path == NULL)
				free_entry = f;
			else if (oldest == NULL || f->used < oldest->used)
				oldest = f;
		}
		/* (Once nothing else is kept, the fragment is, however large.) */
		if (free_entry != NULL && (total <= KEPT_BYTES_MAX || oldest == NULL))
			return free_entry;
		fragment_clear(oldest);
	}
}

cx_code
cx_probe_rows_scan(cx_objstore *s, const cx_fragment_info *fi,
				   const cx_schema *table, const cx_colscan_spec *spec,
				   bool *from_store, cx_err *err)
{
	kept_rows  *k = NULL;
	kept_fragment *f;
	kept_fragment read = {0};
	cx_dvcursor dv = {spec->dv, 0};
	bool		passed;
	cx_code		rc;

	*from_store = true;
	if (fi->size <= CX_PROBE_ROWS_FRAGMENT_MAX)
		k = cx_obj_cache_of(s, CX_CACHE_PROBE_ROWS, sizeof(kept_rows),
							kept_free, kept_bytes);
	if (k == NULL)
		return cx_colscan(s, fi, table, spec, err);
	f = kept_find(k, fi->path, pass_of(table, spec));
	if (f != NULL)
		*from_store = false;
	else
	{
		rc = read_fragment(s, fi, table, spec, &read, &passed, err);
		if (rc != CX_OK || passed)
		{
			fragment_clear(&read);
			return rc;
		}
		f = make_room(k, fragment_bytes(&read));
		*f = read;
	}
	f->used = ++k->clock;
	return replay(f, spec, &dv, err);
}
