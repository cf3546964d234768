/*
 * cx_fragment_write.c — streams a fragment (a Parquet file) to the object
 * store.
 *
 * Rows accumulate in one column builder per column.  When a row group is cut
 * (rows_per_group rows, max_group_bytes raw bytes, or a chunk about to pass
 * CX_CHUNK_RAW_MAX) each column becomes a column chunk of data pages of
 * about PAGE_TARGET raw bytes (whole rows each), uploaded at once, and the
 * builders are emptied: memory stays bounded by one row group whatever the
 * fragment's size.  What grows is the directory of chunks and pages (a few
 * dozen bytes per page); at cx_fragw_finish() it becomes the offset indexes
 * and the FileMetaData footer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "util/cx_crc32c.h"
#include "util/cx_thread_cache.h"
#include "format/cx_encoding.h"
#include "format/cx_fragment.h"
#include "format/cx_levels.h"
#include "format/cx_parquet_schema.h"
#include "format/cx_parquet_types.h"
#include "objstore/cx_layout.h"

/*
 * Raw bytes of values (and levels) in a page before it is cut.  A point read
 * fetches one page per column, so pages stay small; zstd still finds most of
 * the redundancy at this size.
 */
#define PAGE_TARGET (64 * 1024)

/* One column chunk written: what the footer and the offset index need. */
typedef struct chunk_rec
{
	uint64_t	offset;
	uint64_t	stored;			/* page headers and compressed pages */
	uint64_t	raw;			/* page headers and raw pages */
	int64_t		num_values;		/* levels (leaf entries, NULLs included) */
	cx_colstats st;				/* engine domain */
	cx_buf		pages;			/* cx_pq_page_location[] */
	uint64_t	index_offset;	/* of its offset index */
	uint32_t	index_len;
} chunk_rec;

/* One data page being built. */
/*
 * A var-width value of at least LARGE_VALUE bytes is not copied into a
 * page's values: they hold its length, and the compression reads its bytes
 * where the column builder has them (so a large value has two copies at
 * the seal, the memtable's and the builder's, not three).
 */
#define LARGE_VALUE ((size_t) 64 << 10)

/* One such value: its bytes go after the first at bytes of the values. */
typedef struct page_value
{
	size_t		at;
	const uint8_t *bytes;
	size_t		len;
} page_value;

typedef struct page_build
{
	cx_buf		rep;			/* one byte per level */
	cx_buf		def;
	cx_buf		values;			/* PLAIN */
	uint32_t	nbools;			/* booleans bit-packed into values */
	cx_statacc	stats;
	cx_buf		levels;			/* rep and def levels, encoded */
	cx_buf		large;			/* page_value: large values, not copied */
	size_t		large_bytes;
	cx_buf		packed;			/* levels + values, compressed */
	cx_buf		header;			/* PageHeader */
} page_build;

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
	cx_pq_leaf *leaves;			/* one per column */
	uint64_t   *row_sizes;		/* scratch: measured size of each value */
	cx_colstats *stats;			/* per column, merged over finished groups */
	chunk_rec  *chunks;			/* ngroups * ncols, group-major */
	uint32_t   *group_rows;		/* per finished group */
	uint32_t	cap_groups;
	page_build	page;
	uint64_t	offset;			/* bytes uploaded so far */
	uint64_t	rows;			/* rows appended, buffered ones included */
	uint32_t	nbuffered;		/* rows in the buffered group */
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
	o->sort_columns = NULL;
	o->nsort_columns = 0;
}

static cx_code
check_options(const cx_fragw_options *o, const cx_schema *schema, cx_err *err)
{
	for (uint32_t i = 0; i < o->nsort_columns; i++)
		if (o->sort_columns[i] >= schema->ncolumns)
			return cx_err_set(err, CX_ERR_INVALID,
							  "sort column %u is not a column of the schema",
							  o->sort_columns[i]);
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
page_init(page_build *p)
{
	cx_buf_init(&p->rep);
	cx_buf_init(&p->def);
	cx_buf_init(&p->values);
	cx_buf_init(&p->levels);
	cx_buf_init(&p->large);
	cx_buf_init(&p->packed);
	cx_buf_init(&p->header);
}

static void
page_free(page_build *p)
{
	cx_buf_free(&p->rep);
	cx_buf_free(&p->def);
	cx_buf_free(&p->values);
	cx_buf_free(&p->levels);
	cx_buf_free(&p->large);
	cx_buf_free(&p->packed);
	cx_buf_free(&p->header);
}

static void
cctx_free(void *p)
{
	ZSTD_freeCCtx(p);
}

/*
 * A compression context for a new writer: the thread's spare one when it
 * has one, else a new one (creating one allocates and sets up its tables:
 * 1.6-1.9% of the writer worker's CPU when every commit sealed a
 * generation of its own).  Every page resets its context's session and
 * parameters before compressing, so a context carries nothing from one
 * writer to the next.
 */
static ZSTD_CCtx *
cctx_take(void)
{
	ZSTD_CCtx  *zc = cx_thread_spare_take(CX_THREAD_ZSTD_CCTX);

	return zc != NULL ? zc : ZSTD_createCCtx();
}

/*
 * The largest compression context kept as a thread's spare.  A context
 * keeps the workspace its largest page needed (about 40 KB for a small
 * generation's pages at level 1, 250 KB for 50 KB ones, 0.6-1.3 MB and
 * more for large pages at levels 1-3), so keeping any would leave a thread
 * that once wrote a large value holding that much for good.
 */
#define CCTX_KEEP_BYTES (256 * 1024)

/* Keeps zc as the thread's spare when it has none and zc is small, else
 * frees it. */
static void
cctx_give_back(ZSTD_CCtx *zc)
{
	if (zc != NULL && (ZSTD_sizeof_CCtx(zc) > CCTX_KEEP_BYTES ||
					   !cx_thread_spare_give(CX_THREAD_ZSTD_CCTX, zc, cctx_free)))
		ZSTD_freeCCtx(zc);
}

static void
fragw_free(cx_fragw *w)
{
	if (w->cols != NULL)
		for (uint32_t c = 0; c < w->ncols; c++)
			cx_colbuild_free(w->cols[c]);
	if (w->chunks != NULL)
		for (size_t i = 0; i < (size_t) w->ngroups * w->ncols; i++)
			cx_buf_free(&w->chunks[i].pages);
	free(w->chunks);
	free(w->group_rows);
	free(w->cols);
	free(w->leaves);
	free(w->row_sizes);
	free(w->stats);
	page_free(&w->page);
	cctx_give_back(w->zc);
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
	page_init(&w->page);
	w->key = cx_strdup(key);
	w->schema = cx_schema_clone(schema);
	w->zc = cctx_take();
	w->cols = calloc(n ? n : 1, sizeof(cx_colbuild *));
	w->leaves = calloc(n ? n : 1, sizeof(cx_pq_leaf));
	w->row_sizes = calloc(n ? n : 1, sizeof(uint64_t));
	w->stats = calloc(n ? n : 1, sizeof(cx_colstats));
	if (!w->key || !w->schema || !w->zc || !w->cols || !w->leaves ||
		!w->row_sizes || !w->stats)
		return false;
	for (uint32_t c = 0; c < n; c++)
	{
		cx_pq_leaf_init(&schema->columns[c], &w->leaves[c]);
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
		(opt != NULL && check_options(opt, schema, err) != CX_OK))
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
	if (cx_obj_upload_write(w->up, CX_PARQUET_MAGIC, 4, err) != CX_OK)
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

static cx_code
nomem(cx_fragw *w, cx_err *err)
{
	return cx_err_set(err, CX_ERR_NOMEM, "out of memory writing fragment %s",
					  w->key);
}

static cx_code
upload(cx_fragw *w, const cx_buf *b, cx_err *err)
{
	if (cx_obj_upload_write(w->up, b->data, b->len, err) != CX_OK)
		return err->code;
	w->offset += b->len;
	return CX_OK;
}

/* ---------------------------------------------------------------------
 * Pages
 * --------------------------------------------------------------------- */

static void
put_bool(page_build *p, bool v)
{
	if (p->nbools % 8 == 0)
		cx_buf_put_u8(&p->values, 0);
	if (v && cx_buf_ok(&p->values))
		p->values.data[p->values.len - 1] |= (uint8_t) (1u << (p->nbools % 8));
	p->nbools++;
}

/* Adds leaf value i of builder b (def level `present` when it is not NULL,
 * one less when it is). */
static void
page_add(page_build *p, const cx_pq_leaf *leaf, const cx_colbuild *b,
		 uint32_t i, uint8_t rep, uint8_t present, bool stats)
{
	const uint8_t *val;
	size_t		len;
	bool		isval = cx_colbuild_value(b, i, &val, &len);

	if (leaf->max_rep > 0)
		cx_buf_put_u8(&p->rep, rep);
	if (leaf->max_def > 0)
		cx_buf_put_u8(&p->def, isval ? present : present - 1);
	if (!isval)
	{
		if (stats)
			cx_statacc_add_null(&p->stats);
		return;
	}
	if (leaf->ptype == CX_PQ_BOOLEAN)
		put_bool(p, val[0] != 0);
	else if (len >= LARGE_VALUE && cx_pq_put_plain_length(leaf, len, &p->values))
	{
		page_value	v = {p->values.len, val, len};

		cx_buf_put(&p->large, &v, sizeof(v));
		p->large_bytes += len;
	}
	else
		cx_pq_put_plain(leaf, val, len, &p->values);
	if (stats)
		cx_statacc_add(&p->stats, val, len);
}

/* Adds row i of list builder b: a NULL list (def 0), an empty list (def 1)
 * or its elements (rep 0 then 1; def 2 for a NULL element, else 3). */
static void
page_add_list(page_build *p, const cx_pq_leaf *leaf, const cx_colbuild *b,
			  uint32_t i)
{
	const uint8_t *ignored;
	size_t		len;
	uint32_t	start;
	uint32_t	end;

	if (!cx_colbuild_value(b, i, &ignored, &len))
	{
		cx_buf_put_u8(&p->rep, 0);
		cx_buf_put_u8(&p->def, 0);
		cx_statacc_add_null(&p->stats);
		return;
	}
	cx_statacc_add(&p->stats, NULL, 0);
	cx_colbuild_items(b, i, &start, &end);
	if (start == end)
	{
		cx_buf_put_u8(&p->rep, 0);
		cx_buf_put_u8(&p->def, 1);
		return;
	}
	for (uint32_t k = start; k < end; k++)
		page_add(p, leaf, b->elems, k, k == start ? 0 : 1, 3, false);
}

static size_t
levels_count(const page_build *p, const cx_pq_leaf *leaf)
{
	return leaf->max_rep > 0 ? p->rep.len :
		leaf->max_def > 0 ? p->def.len : 0;
}

/* Raw bytes row i adds to a page (roughly; only used to cut pages). */
static uint64_t
row_bytes(const cx_colbuild *b, uint32_t i)
{
	const uint8_t *val;
	size_t		len;
	uint32_t	start;
	uint32_t	end;
	uint64_t	n = 1;

	if (b->elems == NULL)
		return cx_colbuild_value(b, i, &val, &len) ? n + len + 4 : n;
	cx_colbuild_items(b, i, &start, &end);
	for (uint32_t k = start; k < end; k++)
		n += row_bytes(b->elems, k);
	return n;
}

/* Feeds len bytes at data to the page's frame (the last piece ends it). */
static bool
compress_piece(cx_fragw *w, ZSTD_outBuffer *out, const void *data, size_t len,
			   bool last)
{
	ZSTD_inBuffer in = {data, len, 0};
	size_t		rc = ZSTD_compressStream2(w->zc, out, &in,
										  last ? ZSTD_e_end : ZSTD_e_continue);

	/* The output holds the bound, so each call consumes all its input. */
	return !ZSTD_isError(rc) && in.pos == in.size && (!last || rc == 0);
}

/* The page's values from byte at on (NULL when none are left: no offset
 * is ever applied to an unallocated buffer). */
static const uint8_t *
values_from(const page_build *p, size_t at)
{
	return at < p->values.len ? p->values.data + at : NULL;
}

/*
 * Compresses the page body, its levels then its values, as one zstd frame
 * streamed from where the bytes are: the levels, the values, and each
 * large value in its column builder.  Nothing is copied into a body first.
 */
static bool
compress_body(cx_fragw *w, page_build *p, size_t raw)
{
	ZSTD_outBuffer out = {p->packed.data, p->packed.cap, 0};
	const page_value *large = (const page_value *) p->large.data;
	size_t		nlarge = p->large.len / sizeof(page_value);
	size_t		done = 0;

	if (ZSTD_isError(ZSTD_CCtx_reset(w->zc, ZSTD_reset_session_and_parameters)) ||
		ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel,
											w->opt.compression_level)) ||
		ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(w->zc, raw)) ||
		!compress_piece(w, &out, p->levels.data, p->levels.len, false))
		return false;
	for (size_t i = 0; i < nlarge; i++)
	{
		if (!compress_piece(w, &out, values_from(p, done), large[i].at - done, false) ||
			!compress_piece(w, &out, large[i].bytes, large[i].len, false))
			return false;
		done = large[i].at;
	}
	if (!compress_piece(w, &out, values_from(p, done), p->values.len - done, true))
		return false;
	p->packed.len = out.pos;
	return true;
}

/* Compresses the page body and puts its header in p->header. */
static bool
seal_page(cx_fragw *w, const cx_pq_leaf *leaf, uint32_t nvalues, bool stats)
{
	page_build *p = &w->page;
	size_t		raw = p->levels.len + p->values.len + p->large_bytes;
	size_t		n;
	cx_pq_page_header h;
	cx_colstats st;
	uint8_t		minb[CX_STATS_MAX_BYTES];
	uint8_t		maxb[CX_STATS_MAX_BYTES];

	cx_buf_reset(&p->packed);
	cx_buf_reset(&p->header);
	if (!cx_buf_ok(&p->levels) || !cx_buf_ok(&p->large) ||
		!cx_buf_reserve(&p->packed, ZSTD_compressBound(raw)) ||
		!compress_body(w, p, raw))
		return false;
	n = p->packed.len;
	memset(&h, 0, sizeof(h));
	h.type = CX_PQ_DATA_PAGE;
	h.uncompressed_page_size = (int32_t) raw;
	h.compressed_page_size = (int32_t) n;
	h.has_crc = true;
	h.crc = (uint32_t) crc32(0L, p->packed.data, (uInt) n);
	h.has_data_page = true;
	h.data_page.num_values = (int32_t) nvalues;
	h.data_page.encoding = CX_PQ_PLAIN;
	h.data_page.definition_level_encoding = CX_PQ_RLE;
	h.data_page.repetition_level_encoding = CX_PQ_RLE;
	if (stats)
	{
		cx_statacc_finish(&p->stats, &st);
		h.has_data_page = true;
		h.data_page.has_statistics =
			cx_pq_stats_from_engine(leaf, &st, minb, maxb,
									&h.data_page.statistics);
	}
	cx_pq_page_header_encode(&h, &p->header);
	return cx_buf_ok(&p->header);
}

/* Builds, compresses and uploads rows [r0, r1) of column c as one page,
 * and adds the page's statistics to its chunk's. */
static cx_code
write_page(cx_fragw *w, uint32_t c, uint32_t r0, uint32_t r1, chunk_rec *rec,
		   cx_statacc *chunk, cx_err *err)
{
	const cx_pq_leaf *leaf = &w->leaves[c];
	const cx_colbuild *b = w->cols[c];
	page_build *p = &w->page;
	cx_pq_page_location loc;
	size_t		nvalues;

	cx_buf_reset(&p->rep);
	cx_buf_reset(&p->def);
	cx_buf_reset(&p->values);
	cx_buf_reset(&p->large);
	p->large_bytes = 0;
	cx_buf_reset(&p->levels);
	p->nbools = 0;
	/* Of the column's type: a list's counts its rows (its page header has
	 * no statistics; its chunk's has the counts). */
	cx_statacc_init(&p->stats, b->type);
	for (uint32_t i = r0; i < r1; i++)
		if (leaf->list)
			page_add_list(p, leaf, b, i);
		else
			page_add(p, leaf, b, i, 0, 1, true);
	nvalues = leaf->max_def > 0 || leaf->max_rep > 0 ?
		levels_count(p, leaf) : r1 - r0;
	if (leaf->max_rep > 0)
		cx_levels_encode(p->rep.data, p->rep.len, 1, &p->levels);
	if (leaf->max_def > 0)
		cx_levels_encode(p->def.data, p->def.len,
						 cx_level_bit_width(leaf->max_def), &p->levels);
	if (!cx_buf_ok(&p->rep) || !cx_buf_ok(&p->def) || !cx_buf_ok(&p->values) ||
		!seal_page(w, leaf, (uint32_t) nvalues, !leaf->list))
		return nomem(w, err);
	cx_statacc_merge(chunk, &p->stats);
	loc.offset = (int64_t) w->offset;
	loc.compressed_page_size = (int32_t) (p->header.len + p->packed.len);
	loc.first_row_index = r0;
	cx_buf_put(&rec->pages, &loc, sizeof(loc));
	if (!cx_buf_ok(&rec->pages))
		return nomem(w, err);
	rec->stored += p->header.len + p->packed.len;
	rec->raw += p->header.len + p->levels.len + p->values.len + p->large_bytes;
	rec->num_values += (int64_t) nvalues;
	if (upload(w, &p->header, err) != CX_OK || upload(w, &p->packed, err) != CX_OK)
		return err->code;
	return CX_OK;
}

/* Writes column c of the buffered group as pages of about PAGE_TARGET. */
static cx_code
write_chunk(cx_fragw *w, uint32_t c, chunk_rec *rec, cx_err *err)
{
	const cx_colbuild *b = w->cols[c];
	uint32_t	r0 = 0;
	cx_statacc	chunk;

	cx_statacc_init(&chunk, b->type);
	rec->offset = w->offset;
	while (r0 < b->nrows)
	{
		uint32_t	r1 = r0;
		uint64_t	size = 0;

		while (r1 < b->nrows && (r1 == r0 || size < PAGE_TARGET))
			size += row_bytes(b, r1++);
		if (write_page(w, c, r0, r1, rec, &chunk, err) != CX_OK)
			return err->code;
		r0 = r1;
	}
	cx_statacc_finish(&chunk, &rec->st);
	cx_colstats_merge(&w->stats[c], &rec->st, b->type);
	return CX_OK;
}

static bool
grow_groups(cx_fragw *w)
{
	uint32_t	cap = w->cap_groups ? w->cap_groups * 2 : 4;
	chunk_rec  *chunks;
	uint32_t   *rows;

	chunks = realloc(w->chunks, (size_t) cap * (w->ncols ? w->ncols : 1) *
					 sizeof(chunk_rec));
	if (chunks == NULL)
		return false;
	w->chunks = chunks;
	rows = realloc(w->group_rows, (size_t) cap * sizeof(uint32_t));
	if (rows == NULL)
		return false;
	w->group_rows = rows;
	w->cap_groups = cap;
	return true;
}

static cx_code
cut_group(cx_fragw *w, cx_err *err)
{
	chunk_rec  *recs;

	if (w->ngroups == w->cap_groups && !grow_groups(w))
		return nomem(w, err);
	recs = &w->chunks[(size_t) w->ngroups * w->ncols];
	memset(recs, 0, sizeof(chunk_rec) * w->ncols);
	for (uint32_t c = 0; c < w->ncols; c++)
		cx_buf_init(&recs[c].pages);
	w->group_rows[w->ngroups++] = w->nbuffered;
	for (uint32_t c = 0; c < w->ncols; c++)
	{
		if (write_chunk(w, c, &recs[c], err) != CX_OK)
			return cx_err_prefix(err, "writing fragment %s", w->key);
		cx_colbuild_reset(w->cols[c]);
	}
	w->nbuffered = 0;
	return CX_OK;
}

/* ---------------------------------------------------------------------
 * Appending rows
 * --------------------------------------------------------------------- */

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
	{
		const cx_column *col = &w->schema->columns[c];

		if (cx_colbuild_measure(w->cols[c], &values[c], &w->row_sizes[c],
								err) != CX_OK ||
			cx_pq_value_check(col, &values[c], err) != CX_OK)
			return cx_err_prefix(err, "fragment %s, column \"%s\"", w->key,
								 col->name);
	}
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
	if (row_overflows_chunk(w) && w->nbuffered > 0 &&
		cut_group(w, err) != CX_OK)
		return fail(w, err);
	if (row_overflows_chunk(w))
		return cx_err_set(err, CX_ERR_LIMIT,
						  "fragment %s: row too large for one chunk", w->key);
	for (uint32_t c = 0; c < w->ncols; c++)
		if (!cx_colbuild_append(w->cols[c], &values[c]))
		{
			nomem(w, err);
			return fail(w, err);
		}
	w->nbuffered++;
	w->rows++;
	if ((w->nbuffered >= w->opt.rows_per_group ||
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

/* ---------------------------------------------------------------------
 * Footer
 * --------------------------------------------------------------------- */

/* Uploads the offset index of every chunk, in file order. */
static cx_code
write_offset_indexes(cx_fragw *w, cx_buf *scratch, cx_err *err)
{
	for (size_t i = 0; i < (size_t) w->ngroups * w->ncols; i++)
	{
		chunk_rec  *rec = &w->chunks[i];
		cx_pq_offset_index oi;

		oi.npages = (uint32_t) (rec->pages.len / sizeof(cx_pq_page_location));
		oi.pages = (cx_pq_page_location *) rec->pages.data;
		cx_buf_reset(scratch);
		cx_pq_offset_index_encode(&oi, scratch);
		if (!cx_buf_ok(scratch))
			return nomem(w, err);
		rec->index_offset = w->offset;
		rec->index_len = (uint32_t) scratch->len;
		if (upload(w, scratch, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

static void
fill_column_meta(const cx_fragw *w, uint32_t c, const chunk_rec *rec,
				 cx_pq_column_chunk *cc, const char **path, uint8_t *minb,
				 uint8_t *maxb)
{
	static const cx_pq_encoding encodings[] = {CX_PQ_PLAIN, CX_PQ_RLE};
	const cx_pq_leaf *leaf = &w->leaves[c];
	cx_pq_column_meta *m = &cc->meta;

	cc->file_offset = (int64_t) rec->offset;
	cc->has_meta = true;
	m->type = leaf->ptype;
	m->nencodings = 2;
	m->encodings = (cx_pq_encoding *) encodings;
	m->npath = cx_pq_leaf_path(&w->schema->columns[c], path);
	m->path_in_schema = (char **) path;
	m->codec = CX_PQ_ZSTD;
	m->num_values = rec->num_values;
	m->total_uncompressed_size = (int64_t) rec->raw;
	m->total_compressed_size = (int64_t) rec->stored;
	m->data_page_offset = (int64_t) rec->offset;
	m->has_statistics = !leaf->list &&
		cx_pq_stats_from_engine(leaf, &rec->st, minb, maxb, &m->statistics);
	cc->has_offset_index = true;
	cc->offset_index_offset = (int64_t) rec->index_offset;
	cc->offset_index_length = (int32_t) rec->index_len;
}

/* Scratch the FileMetaData points into while it is encoded. */
typedef struct footer_parts
{
	cx_pq_row_group *groups;
	cx_pq_column_chunk *chunks;
	const char **paths;			/* 3 per chunk */
	uint8_t    *bounds;			/* 2 * CX_STATS_MAX_BYTES per chunk */
	cx_pq_schema_element *elements;
	char	   *schema_json;
	cx_pq_sorting_column *sorting;	/* nsort_columns, shared by the groups */
	char	   *sort_key;		/* the sort column names, or NULL */
} footer_parts;

static void
footer_parts_free(footer_parts *fp)
{
	free(fp->groups);
	free(fp->chunks);
	free(fp->paths);
	free(fp->bounds);
	free(fp->elements);
	free(fp->schema_json);
	free(fp->sorting);
	free(fp->sort_key);
}

/* The sort order as SortingColumns and as the ctxstore.sort_key value. */
static bool
sort_parts_alloc(const cx_fragw *w, footer_parts *fp)
{
	uint32_t	n = w->opt.nsort_columns;
	cx_buf		names;

	if (n == 0)
		return true;
	fp->sorting = calloc(n, sizeof(cx_pq_sorting_column));
	if (fp->sorting == NULL)
		return false;
	cx_buf_init(&names);
	for (uint32_t i = 0; i < n; i++)
	{
		const char *name = w->schema->columns[w->opt.sort_columns[i]].name;

		fp->sorting[i].column_idx = (int32_t) w->opt.sort_columns[i];
		if (i > 0)
			cx_buf_put(&names, ",", 1);
		cx_buf_put(&names, name, strlen(name));
	}
	cx_buf_put(&names, "", 1);
	if (cx_buf_ok(&names))
		fp->sort_key = (char *) names.data;
	else
		cx_buf_free(&names);
	return fp->sort_key != NULL;
}

static bool
footer_parts_alloc(const cx_fragw *w, footer_parts *fp, uint32_t *nelements)
{
	size_t		n = (size_t) w->ngroups * w->ncols;

	memset(fp, 0, sizeof(*fp));
	fp->groups = calloc(w->ngroups, sizeof(cx_pq_row_group));
	fp->chunks = calloc(n ? n : 1, sizeof(cx_pq_column_chunk));
	fp->paths = calloc(3 * (n ? n : 1), sizeof(char *));
	fp->bounds = calloc(n ? n : 1, 2 * CX_STATS_MAX_BYTES);
	fp->schema_json = cx_pq_schema_json(w->schema);
	return fp->groups && fp->chunks && fp->paths && fp->bounds &&
		fp->schema_json && sort_parts_alloc(w, fp) &&
		cx_pq_schema_elements(w->schema, &fp->elements, nelements);
}

static void
fill_row_groups(const cx_fragw *w, footer_parts *fp)
{
	for (uint32_t g = 0; g < w->ngroups; g++)
	{
		cx_pq_row_group *rg = &fp->groups[g];
		size_t		first = (size_t) g * w->ncols;

		rg->ncolumns = w->ncols;
		rg->columns = &fp->chunks[first];
		rg->num_rows = w->group_rows[g];
		rg->has_file_offset = true;
		rg->file_offset = (int64_t) w->chunks[first].offset;
		rg->has_total_compressed_size = true;
		rg->has_ordinal = g <= INT16_MAX;
		rg->ordinal = (int16_t) g;
		rg->nsorting = w->opt.nsort_columns;
		rg->sorting = fp->sorting;
		for (uint32_t c = 0; c < w->ncols; c++)
		{
			size_t		i = first + c;
			uint8_t    *b = fp->bounds + i * 2 * CX_STATS_MAX_BYTES;

			fill_column_meta(w, c, &w->chunks[i], &fp->chunks[i],
							 &fp->paths[3 * i], b, b + CX_STATS_MAX_BYTES);
			rg->total_byte_size += fp->chunks[i].meta.total_uncompressed_size;
			rg->total_compressed_size += fp->chunks[i].meta.total_compressed_size;
		}
	}
}

/* FileMetaData, its length and the magic into f. */
static cx_code
encode_footer(const cx_fragw *w, cx_buf *f, cx_err *err)
{
	footer_parts fp;
	cx_pq_file_meta m;
	cx_pq_key_value kv[3];
	size_t		start = f->len;

	memset(&m, 0, sizeof(m));
	if (!footer_parts_alloc(w, &fp, &m.nschema))
	{
		footer_parts_free(&fp);
		return nomem((cx_fragw *) w, err);
	}
	fill_row_groups(w, &fp);
	kv[0].key = (char *) CX_PQ_KV_SCHEMA;
	kv[0].value = fp.schema_json;
	kv[1].key = (char *) CX_PQ_KV_FORMAT;
	kv[1].value = (char *) CX_PQ_FORMAT_VERSION;
	kv[2].key = (char *) CX_PQ_KV_SORT_KEY;
	kv[2].value = fp.sort_key;
	m.version = 2;
	m.schema = fp.elements;
	m.num_rows = (int64_t) w->rows;
	m.nrow_groups = w->ngroups;
	m.row_groups = fp.groups;
	m.nkv = fp.sort_key != NULL ? 3 : 2;
	m.kv = kv;
	m.created_by = (char *) CX_PQ_CREATED_BY;
	m.type_defined_order = true;
	m.ncolumn_orders = w->ncols;
	cx_pq_file_meta_encode(&m, f);
	footer_parts_free(&fp);
	if (cx_buf_ok(f) && f->len - start > UINT32_MAX - 8)
		return cx_err_set(err, CX_ERR_LIMIT, "fragment %s: footer too large",
						  w->key);
	cx_buf_put_u32(f, (uint32_t) (f->len - start));
	cx_buf_put(f, CX_PARQUET_MAGIC, 4);
	return cx_buf_ok(f) ? CX_OK : nomem((cx_fragw *) w, err);
}

static bool
fill_info(const cx_fragw *w, const cx_buf *footer, cx_fragment_info *info)
{
	uint32_t	n = w->ncols;

	info->path = cx_strdup(w->key);
	info->stats = cx_memdup(w->stats, sizeof(cx_colstats) * n);
	info->size = w->offset + footer->len;
	info->rows = w->rows;
	info->footer_offset = w->offset;
	info->footer_len = (uint32_t) footer->len;
	info->footer_crc = cx_crc32c(0, footer->data, footer->len);
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
	if (w->nbuffered > 0 && cut_group(w, err) != CX_OK)
		return err->code;
	/* An empty fragment would only cost a PUT and clutter the manifest. */
	if (w->rows == 0)
		return cx_err_set(err, CX_ERR_INVALID, "fragment %s has no rows",
						  w->key);
	if (write_offset_indexes(w, f, err) != CX_OK)
		return err->code;
	cx_buf_reset(f);
	if (encode_footer(w, f, err) != CX_OK)
		return err->code;
	if (!fill_info(w, f, info))
		return nomem(w, err);
	return cx_obj_upload_write(w->up, f->data, f->len, err);
}

/*
 * Whether an upload that did not plainly succeed landed after all (its
 * answer was lost, or a retry met the object the first attempt created and
 * said "exists").  Fragment keys are random, so the object there is ours if
 * it ends with our footer at our offset: the same size, and the same
 * checksum of every page (the footer holds the chunk sizes and statistics;
 * the pages their CRCs).
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
	if (rc != CX_OK && cx_put_may_have_landed(rc, err) &&
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
