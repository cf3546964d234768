/*
 * cx_fragment_write.c — streams a fragment to the object store.
 *
 * Rows accumulate in one column builder per column.  When a row group is cut
 * (rows_per_group rows, max_group_bytes raw bytes, or a chunk about to pass
 * CX_CHUNK_RAW_MAX) each column is encoded, compressed, checksummed and
 * written to the upload at once, and the builders are emptied: memory stays
 * bounded by one row group whatever the fragment's size.  The row-group
 * directory (a few dozen bytes per chunk) is the only thing that grows; it
 * becomes the footer at cx_fragw_finish().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "util/cx_crc32c.h"
#include "format/cx_encoding.h"
#include "format/cx_fragment.h"
#include "objstore/cx_layout.h"

#define FRAGMENT_FORMAT_VERSION 1
#define TRAILER_BYTES 12

enum
{
	CODEC_NONE = 0,
	CODEC_ZSTD = 1
};

struct cx_fragw
{
	cx_objstore *store;
	char	   *key;
	cx_schema  *schema;
	cx_fragw_options opt;
	cx_upload  *up;
	ZSTD_CCtx  *zc;
	uint32_t	ncols;
	cx_colbuild **cols;			/* one builder per column */
	uint64_t   *row_sizes;		/* scratch: measured size of each value */
	cx_colstats *stats;			/* per column, merged over finished groups */
	cx_buf		dir;			/* row-group directory of finished groups */
	cx_buf		raw;			/* scratch: one raw chunk payload */
	cx_buf		packed;			/* scratch: one compressed chunk */
	uint64_t	offset;			/* bytes uploaded so far */
	uint64_t	rows;			/* rows appended, buffered ones included */
	uint32_t	group_rows;		/* rows in the buffered group */
	uint32_t	ngroups;		/* finished groups */
	cx_err		failure;		/* sticky: set once a write or allocation
								 * failed and the fragment is unusable */
};

void
cx_fragw_options_default(cx_fragw_options *o)
{
	o->rows_per_group = 65536;
	o->max_group_bytes = (uint64_t) 32 << 20;
	o->compression_level = CX_FRAGW_DEFAULT_COMPRESSION_LEVEL;
}

static cx_code
check_options(const cx_fragw_options *o, cx_err *err)
{
	if (o->rows_per_group == 0)
		return cx_err_set(err, CX_ERR_INVALID, "rows_per_group must be positive");
	if (o->max_group_bytes == 0 || o->max_group_bytes > CX_GROUP_BYTES_MAX)
		return cx_err_set(err, CX_ERR_INVALID,
						  "max_group_bytes must be between 1 and %llu",
						  (unsigned long long) CX_GROUP_BYTES_MAX);
	if (o->compression_level < ZSTD_minCLevel() ||
		o->compression_level > ZSTD_maxCLevel())
		return cx_err_set(err, CX_ERR_INVALID,
						  "compression level %d is outside %d..%d",
						  o->compression_level, ZSTD_minCLevel(),
						  ZSTD_maxCLevel());
	return CX_OK;
}

static void
fragw_free(cx_fragw *w)
{
	if (w->cols != NULL)
		for (uint32_t c = 0; c < w->ncols; c++)
			cx_colbuild_free(w->cols[c]);
	free(w->cols);
	free(w->row_sizes);
	free(w->stats);
	cx_buf_free(&w->dir);
	cx_buf_free(&w->raw);
	cx_buf_free(&w->packed);
	ZSTD_freeCCtx(w->zc);
	cx_schema_free(w->schema);
	free(w->key);
	free(w);
}

/* Allocates everything but the upload; false on OOM. */
static bool
fragw_alloc(cx_fragw *w, const char *key, const cx_schema *schema)
{
	uint32_t	n = schema->ncolumns;

	w->ncols = n;
	cx_buf_init(&w->dir);
	cx_buf_init(&w->raw);
	cx_buf_init(&w->packed);
	w->key = cx_strdup(key);
	w->schema = cx_schema_clone(schema);
	w->zc = ZSTD_createCCtx();
	w->cols = calloc(n ? n : 1, sizeof(cx_colbuild *));
	w->row_sizes = calloc(n ? n : 1, sizeof(uint64_t));
	w->stats = calloc(n ? n : 1, sizeof(cx_colstats));
	if (!w->key || !w->schema || !w->zc || !w->cols || !w->row_sizes ||
		!w->stats)
		return false;
	for (uint32_t c = 0; c < n; c++)
	{
		w->cols[c] = cx_colbuild_new(&schema->columns[c]);
		if (w->cols[c] == NULL)
			return false;
	}
	return true;
}

cx_code
cx_fragw_open(cx_objstore *s, const char *key, const cx_schema *schema,
			  const cx_fragw_options *opt, cx_fragw **out, cx_err *err)
{
	cx_fragw   *w;

	*out = NULL;
	if (cx_schema_validate(schema, err) != CX_OK ||
		(opt != NULL && check_options(opt, err) != CX_OK))
		return cx_err_prefix(err, "fragment %s", key);
	w = calloc(1, sizeof(cx_fragw));
	if (w == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory opening fragment %s",
						  key);
	w->store = s;
	if (opt != NULL)
		w->opt = *opt;
	else
		cx_fragw_options_default(&w->opt);
	if (!fragw_alloc(w, key, schema))
	{
		fragw_free(w);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory opening fragment %s",
						  key);
	}
	if (cx_obj_upload_begin(s, key, CX_PUT_IF_ABSENT, &w->up, err) != CX_OK)
	{
		fragw_free(w);
		return err->code;
	}
	if (cx_obj_upload_write(w->up, CX_FRAGMENT_MAGIC, 4, err) != CX_OK)
	{
		cx_fragw_abort(w);
		return err->code;
	}
	w->offset = 4;
	*out = w;
	return CX_OK;
}

/* Records a failure that leaves the fragment unusable; returns its code. */
static cx_code
fail(cx_fragw *w, cx_err *err)
{
	w->failure = *err;
	return err->code;
}

/* Compresses w->raw into w->packed unless that does not make it smaller;
 * returns the codec and points *stored at the buffer to store. */
static uint8_t
pack_chunk(cx_fragw *w, cx_buf **stored)
{
	size_t		bound = ZSTD_compressBound(w->raw.len);
	size_t		n;

	cx_buf_reset(&w->packed);
	if (cx_buf_reserve(&w->packed, bound + 4))
	{
		n = ZSTD_compressCCtx(w->zc, w->packed.data, bound, w->raw.data,
							  w->raw.len, w->opt.compression_level);
		if (!ZSTD_isError(n) && n < w->raw.len)
		{
			w->packed.len = n;
			*stored = &w->packed;
			return CODEC_ZSTD;
		}
	}
	*stored = &w->raw;
	return CODEC_NONE;
}

/* Encodes, compresses, checksums and uploads column c of the buffered
 * group, and records it in the directory. */
static cx_code
write_chunk(cx_fragw *w, uint32_t c, cx_err *err)
{
	cx_colbuild *b = w->cols[c];
	cx_buf	   *stored;
	uint32_t	raw_len;
	uint8_t		codec;
	cx_colstats st;

	cx_buf_reset(&w->raw);
	cx_colbuild_encode(b, &w->raw);
	if (!cx_buf_ok(&w->raw))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory encoding a chunk");
	raw_len = (uint32_t) w->raw.len;
	codec = pack_chunk(w, &stored);
	cx_buf_put_u32(stored, cx_crc32c(0, stored->data, stored->len));
	if (!cx_buf_ok(stored))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory encoding a chunk");
	if (cx_obj_upload_write(w->up, stored->data, stored->len, err) != CX_OK)
		return err->code;

	cx_statacc_finish(&b->stats, &st);
	cx_buf_put_u64(&w->dir, w->offset);
	cx_buf_put_u32(&w->dir, (uint32_t) stored->len);
	cx_buf_put_u32(&w->dir, raw_len);
	cx_buf_put_u8(&w->dir, codec);
	cx_colstats_encode(&st, &w->dir);
	cx_colstats_merge(&w->stats[c], &st, b->type);
	w->offset += stored->len;
	return CX_OK;
}

static cx_code
cut_group(cx_fragw *w, cx_err *err)
{
	cx_buf_put_u32(&w->dir, w->group_rows);
	for (uint32_t c = 0; c < w->ncols; c++)
	{
		if (write_chunk(w, c, err) != CX_OK)
			return cx_err_prefix(err, "writing fragment %s", w->key);
		cx_colbuild_reset(w->cols[c]);
	}
	if (!cx_buf_ok(&w->dir))
		return cx_err_set(err, CX_ERR_NOMEM,
						  "out of memory writing fragment %s", w->key);
	w->ngroups++;
	w->group_rows = 0;
	return CX_OK;
}

uint64_t
cx_fragw_buffered_bytes(const cx_fragw *w)
{
	uint64_t	n = 0;

	for (uint32_t c = 0; c < w->ncols; c++)
		n += cx_colbuild_raw_size(w->cols[c]);
	return n;
}

/* Whether appending the measured row would push some chunk past the cap. */
static bool
row_overflows_chunk(const cx_fragw *w)
{
	for (uint32_t c = 0; c < w->ncols; c++)
		if (cx_colbuild_raw_size(w->cols[c]) + w->row_sizes[c] > CX_CHUNK_RAW_MAX)
			return true;
	return false;
}

static cx_code
measure_row(cx_fragw *w, const cx_datum *values, cx_err *err)
{
	for (uint32_t c = 0; c < w->ncols; c++)
		if (cx_colbuild_measure(w->cols[c], &values[c], &w->row_sizes[c],
								err) != CX_OK)
			return cx_err_prefix(err, "fragment %s, column \"%s\"", w->key,
								 w->schema->columns[c].name);
	return CX_OK;
}

cx_code
cx_fragw_append(cx_fragw *w, const cx_datum *values, cx_err *err)
{
	if (w->failure.code != CX_OK)
	{
		*err = w->failure;
		return err->code;
	}
	/* A bad value is refused before anything is buffered, so the writer
	 * stays usable. */
	if (measure_row(w, values, err) != CX_OK)
		return err->code;
	if (row_overflows_chunk(w) && w->group_rows > 0 &&
		cut_group(w, err) != CX_OK)
		return fail(w, err);
	if (row_overflows_chunk(w))
		return cx_err_set(err, CX_ERR_LIMIT,
						  "fragment %s: row too large for one chunk", w->key);
	for (uint32_t c = 0; c < w->ncols; c++)
		if (!cx_colbuild_append(w->cols[c], &values[c]))
		{
			cx_err_set(err, CX_ERR_NOMEM, "out of memory writing fragment %s",
					   w->key);
			return fail(w, err);
		}
	w->group_rows++;
	w->rows++;
	if ((w->group_rows >= w->opt.rows_per_group ||
		 cx_fragw_buffered_bytes(w) >= w->opt.max_group_bytes) &&
		cut_group(w, err) != CX_OK)
		return fail(w, err);
	return CX_OK;
}

uint64_t
cx_fragw_rows(const cx_fragw *w)
{
	return w->rows;
}

/* Footer: version, schema, row count, group count, directory. */
static void
build_footer(const cx_fragw *w, cx_buf *f)
{
	cx_buf_put_u32(f, FRAGMENT_FORMAT_VERSION);
	cx_schema_encode(w->schema, f);
	cx_buf_put_u64(f, w->rows);
	cx_buf_put_u32(f, w->ngroups);
	cx_buf_put(f, w->dir.data, w->dir.len);
}

static void
append_trailer(cx_buf *f)
{
	uint32_t	footer_len = (uint32_t) f->len;
	uint32_t	crc = cx_crc32c(0, f->data, f->len);

	cx_buf_put_u32(f, footer_len);
	cx_buf_put_u32(f, crc);
	cx_buf_put(f, CX_FRAGMENT_MAGIC, 4);
}

static bool
fill_info(const cx_fragw *w, uint64_t footer_total, cx_fragment_info *info)
{
	uint32_t	n = w->ncols;

	info->path = cx_strdup(w->key);
	info->stats = cx_memdup(w->stats, sizeof(cx_colstats) * n);
	info->size = w->offset + footer_total;
	info->rows = w->rows;
	info->footer_offset = w->offset;
	info->footer_len = (uint32_t) footer_total;
	info->ncolumns = n;
	return info->path != NULL && info->stats != NULL;
}

/* Everything up to publishing; on failure the caller aborts. */
static cx_code
finish_footer(cx_fragw *w, cx_buf *f, cx_fragment_info *info, cx_err *err)
{
	if (w->failure.code != CX_OK)
	{
		*err = w->failure;
		return err->code;
	}
	if (w->group_rows > 0 && cut_group(w, err) != CX_OK)
		return err->code;
	/* An empty fragment would only cost a PUT and clutter the manifest. */
	if (w->rows == 0)
		return cx_err_set(err, CX_ERR_INVALID, "fragment %s has no rows",
						  w->key);
	build_footer(w, f);
	if (cx_buf_ok(f) && f->len > UINT32_MAX - TRAILER_BYTES)
		return cx_err_set(err, CX_ERR_LIMIT, "fragment %s: footer too large",
						  w->key);
	append_trailer(f);
	if (!cx_buf_ok(f) || !fill_info(w, f->len, info))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory writing fragment %s",
						  w->key);
	return cx_obj_upload_write(w->up, f->data, f->len, err);
}

/*
 * Whether an upload that did not plainly succeed landed after all (its
 * answer was lost, or a retry met the object the first attempt created and
 * said "exists").  Fragment keys are random, so the object there is ours if
 * it ends with our footer at our offset: the same size, and the same
 * checksum of every chunk (the footer holds them, and its own CRC).
 */
static bool
landed_after_all(const cx_fragw *w, const cx_buf *footer)
{
	cx_buf		there;
	cx_err		ignored;
	bool		ours;

	cx_buf_init(&there);
	ours = cx_obj_get_range(w->store, w->key, w->offset, SIZE_MAX, &there,
							&ignored) == CX_OK &&
		there.len == footer->len &&
		memcmp(there.data, footer->data, footer->len) == 0;
	cx_buf_free(&there);
	return ours;
}

cx_code
cx_fragw_finish(cx_fragw *w, cx_fragment_info *info, cx_err *err)
{
	cx_buf		footer;
	cx_code		rc;

	memset(info, 0, sizeof(*info));
	cx_buf_init(&footer);
	rc = finish_footer(w, &footer, info, err);
	if (rc != CX_OK)
	{
		cx_buf_free(&footer);
		cx_fragment_info_free(info);
		cx_fragw_abort(w);
		return rc;
	}
	rc = cx_obj_upload_finish(w->up, err);
	w->up = NULL;
	if (rc != CX_OK && cx_put_may_have_landed(rc) &&
		landed_after_all(w, &footer))
		rc = CX_OK;
	cx_buf_free(&footer);
	if (rc != CX_OK)
		cx_fragment_info_free(info);
	fragw_free(w);
	return rc;
}

void
cx_fragw_abort(cx_fragw *w)
{
	if (w == NULL)
		return;
	if (w->up != NULL)
		cx_obj_upload_abort(w->up);
	fragw_free(w);
}

cx_code
cx_fragment_new_key(char *key, size_t keysize, cx_err *err)
{
	uint8_t		id[CX_FRAGMENT_ID_LEN];

	if (keysize < CX_FRAGMENT_KEY_SIZE)
		return cx_err_set(err, CX_ERR_INVALID,
						  "key buffer of %zu bytes is too small", keysize);
	if (cx_random_bytes(id, sizeof(id), err) != CX_OK)
		return err->code;
	cx_layout_fragment(id, key);
	return CX_OK;
}
