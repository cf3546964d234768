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
 * outgrow the bound (values that compress well) is read from the store on
 * every probe, as before.
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
	kept_row   *rows;
	uint32_t	nrows;
	uint32_t	cap;
	cx_buf		bytes;			/* the rows' values and keys */
	bool		too_big;		/* outgrew KEPT_BYTES_MAX while read */
	uint64_t	used;			/* the clock when last probed */
} kept_fragment;

typedef struct kept_rows
{
	kept_fragment f[KEPT_FRAGMENTS];
	uint64_t	clock;
} kept_rows;

static void
fragment_clear(kept_fragment *f)
{
	free(f->path);
	free(f->rows);
	cx_buf_free(&f->bytes);
	memset(f, 0, sizeof(*f));
}

static size_t
fragment_bytes(const kept_fragment *f)
{
	return cx_str_memory(f->path) + (size_t) f->cap * sizeof(kept_row) +
		f->bytes.cap;
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

/* The handle's kept rows, made on first use (NULL: out of memory). */
static kept_rows *
kept_rows_of(cx_objstore *s)
{
	cx_handle_cache *slot = &s->caches[CX_CACHE_PROBE_ROWS];

	if (slot->p == NULL && (slot->p = calloc(1, sizeof(kept_rows))) != NULL)
	{
		slot->free_fn = kept_free;
		slot->bytes_fn = kept_bytes;
	}
	return slot->p;
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

static cx_code
collect_row(void *arg, const cx_keyrow *kr, cx_err *err)
{
	kept_fragment *f = arg;
	kept_row   *r;

	if (f->bytes.len + kr->len + kr->rowkey_len > KEPT_BYTES_MAX)
	{
		f->too_big = true;
		return cx_err_set(err, CX_ERR_LIMIT, "kept probe rows: over the bound");
	}
	if (f->nrows == f->cap)
	{
		uint32_t	cap = f->cap == 0 ? 64 : f->cap * 2;
		kept_row   *grown = realloc(f->rows, cap * sizeof(kept_row));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
		f->rows = grown;
		f->cap = cap;
	}
	r = &f->rows[f->nrows++];
	r->key_off = (uint32_t) f->bytes.len;
	r->key_len = (uint32_t) kr->len;
	cx_buf_put(&f->bytes, kr->key, kr->len);
	r->rowkey_off = r->key_off;
	r->rowkey_len = r->key_len;
	if (kr->rowkey != kr->key)
	{
		r->rowkey_off = (uint32_t) f->bytes.len;
		r->rowkey_len = (uint32_t) kr->rowkey_len;
		cx_buf_put(&f->bytes, kr->rowkey, kr->rowkey_len);
	}
	r->ts = kr->ts;
	r->row = kr->row;
	r->tombstone = kr->tombstone;
	if (!cx_buf_ok(&f->bytes))
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	return CX_OK;
}

/* Every row of fi's pass into f (f->too_big: they would outgrow the bound). */
static cx_code
read_fragment(cx_objstore *s, const cx_fragment_info *fi,
			  const cx_schema *table, const cx_colscan_spec *spec,
			  kept_fragment *f, cx_err *err)
{
	cx_colscan_spec all = {spec->column, spec->key_col, NULL, NULL,
	collect_row, NULL, f};
	cx_code		rc;

	f->pass = pass_of(table, spec);
	rc = cx_colscan(s, fi, table, &all, err);
	if (rc == CX_OK && (f->path = cx_strdup(fi->path)) == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	return f->too_big ? CX_OK : rc;
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

/* The rows spec->dv does not delete, through spec->fn, in row order. */
static cx_code
replay(const kept_fragment *f, const cx_colscan_spec *spec, cx_err *err)
{
	cx_dvcursor dv = {spec->dv, 0};

	for (uint32_t i = 0; i < f->nrows; i++)
	{
		const kept_row *r = &f->rows[i];
		cx_keyrow	kr;

		if (cx_dvcursor_deleted(&dv, r->row))
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

cx_code
cx_probe_rows_scan(cx_objstore *s, const cx_fragment_info *fi,
				   const cx_schema *table, const cx_colscan_spec *spec,
				   bool *from_store, cx_err *err)
{
	kept_rows  *k;
	kept_fragment *f;
	kept_fragment read = {0};

	*from_store = true;
	if (fi->size > CX_PROBE_ROWS_FRAGMENT_MAX || (k = kept_rows_of(s)) == NULL)
		return cx_colscan(s, fi, table, spec, err);
	f = kept_find(k, fi->path, pass_of(table, spec));
	if (f != NULL)
		*from_store = false;
	else
	{
		if (read_fragment(s, fi, table, spec, &read, err) != CX_OK)
		{
			fragment_clear(&read);
			return err->code;
		}
		if (read.too_big)
		{
			fragment_clear(&read);
			return cx_colscan(s, fi, table, spec, err);
		}
		f = make_room(k, fragment_bytes(&read));
		*f = read;
	}
	f->used = ++k->clock;
	return replay(f, spec, err);
}
