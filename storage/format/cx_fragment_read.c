/*
 * cx_fragment_read.c — opens fragments (Parquet files) and reads row groups
 * column by column.
 *
 * Opening costs one ranged GET: of exactly the footer when a manifest entry
 * gives its place and checksum, else of the object's tail (two GETs when the
 * footer is larger than the first guess).  Reading a row group fetches only
 * the wanted column chunks, one GET per run of adjacent wanted chunks; a
 * fragment no larger than the first read is kept in memory whole and costs
 * no further GETs.
 *
 * Nothing read from the store is trusted: the footer's checksum (when known),
 * magic and length are checked, the FileMetaData decoder bounds everything it
 * reads, the Parquet schema must be exactly the one the engine schema in the
 * key-value metadata maps to, and every chunk must lie inside the data area.
 * Each page's CRC is verified before it is decompressed, and its levels and
 * values must add up to the row group's rows.  Every failure is
 * CX_ERR_CORRUPT with a message naming the object (and row group / column).
 */
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

#define MAGIC_BYTES 4
#define TRAILER_BYTES 8			/* u32 metadata length, "PAR1" */
#define TAIL_GUESS (64 * 1024)

struct cx_fragr
{
	cx_objstore *store;
	char	   *key;
	uint64_t	size;
	uint64_t	footer_offset;	/* end of the chunk area */
	cx_schema  *schema;
	cx_pq_leaf *leaves;
	uint64_t	rows;
	uint32_t	ngroups;
	uint32_t   *group_rows;
	cx_chunk_meta *chunks;		/* ngroups * ncolumns, group-major */
	cx_pq_offset_index *indexes;	/* the same, loaded as row reads need
									 * them (pages NULL: not yet) */
	cx_buf		io;				/* scratch for ranged reads */
	cx_buf		whole;			/* the entire object, when the first read
								 * covered it: small fragments then cost one
								 * GET in all */
	cx_buf		page;			/* scratch: one decompressed page */
	cx_buf		rep;			/* scratch: one page's levels */
	cx_buf		def;
	ZSTD_DCtx  *zd;
};

/* The values of one column (or of a list's elements) as they are decoded. */
typedef struct colout
{
	uint32_t	n;
	uint32_t	nnull;
	int			width;			/* engine width; 0 for var width and lists */
	cx_buf		nulls;			/* bitmap */
	cx_buf		data;			/* fixed values, or var-width bytes */
	cx_buf		offsets;		/* uint32_t: var-width ends / list starts */
} colout;

typedef struct cx_decoded
{
	cx_colvec	vec;
	cx_colvec	elems;
	colout		top;
	colout		child;
} cx_decoded;

struct cx_rowgroup
{
	uint32_t	nrows;
	uint32_t	ncols;
	bool	   *present;
	cx_decoded *cols;
};

static cx_code
corrupt(cx_err *err, const char *key, const char *why)
{
	return cx_err_set(err, CX_ERR_CORRUPT, "corrupt fragment %s: %s", key, why);
}

static cx_code
corrupt_chunk(cx_err *err, const cx_fragr *r, uint32_t group, uint32_t col,
			  const char *why)
{
	return cx_err_set(err, CX_ERR_CORRUPT,
					  "corrupt fragment %s: row group %u, column %u (\"%s\"): %s",
					  r->key, group, col, r->schema->columns[col].name, why);
}

static cx_code
nomem(cx_err *err, const char *key)
{
	return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading fragment %s",
					  key);
}

/*
 * Points *out at len bytes of the object from offset (a range the caller has
 * checked lies inside the object): from the cached whole object if there is
 * one, else with a ranged read into r->io that must return all len bytes.
 */
static cx_code
fetch(cx_fragr *r, uint64_t offset, size_t len, const uint8_t **out,
	  cx_err *err)
{
	if (r->whole.data != NULL)
	{
		*out = r->whole.data + offset;
		return CX_OK;
	}
	if (cx_obj_get_range(r->store, r->key, offset, len, &r->io, err) != CX_OK)
		return err->code;
	if (r->io.len != len)
		return corrupt(err, r->key, "object is shorter than expected");
	*out = r->io.data;
	return CX_OK;
}

/* ---------------------------------------------------------------------
 * Footer
 * --------------------------------------------------------------------- */

static const char *
kv_value(const cx_pq_file_meta *m, const char *key)
{
	for (uint32_t i = 0; i < m->nkv; i++)
		if (m->kv[i].key != NULL && strcmp(m->kv[i].key, key) == 0)
			return m->kv[i].value;
	return NULL;
}

static cx_code
load_schema(cx_fragr *r, const cx_pq_file_meta *m, cx_err *err)
{
	const char *format = kv_value(m, CX_PQ_KV_FORMAT);
	const char *json = kv_value(m, CX_PQ_KV_SCHEMA);
	const char *why;

	if (format == NULL || json == NULL)
		return corrupt(err, r->key, "not a ctxstore fragment (key-value metadata missing)");
	if (strcmp(format, CX_PQ_FORMAT_VERSION) != 0)
		return cx_err_set(err, CX_ERR_UNSUPPORTED,
						  "fragment %s has format version %s; this build reads %s",
						  r->key, format, CX_PQ_FORMAT_VERSION);
	r->schema = cx_pq_schema_from_json(json, &why);
	if (r->schema == NULL)
		return corrupt(err, r->key, why);
	if (!cx_pq_schema_matches(r->schema, m->schema, m->nschema))
		return corrupt(err, r->key,
					   "Parquet schema does not match the ctxstore schema");
	r->leaves = calloc(r->schema->ncolumns ? r->schema->ncolumns : 1,
					   sizeof(cx_pq_leaf));
	if (r->leaves == NULL)
		return nomem(err, r->key);
	for (uint32_t c = 0; c < r->schema->ncolumns; c++)
		cx_pq_leaf_init(&r->schema->columns[c], &r->leaves[c]);
	return CX_OK;
}

static bool
path_matches(const cx_column *col, const cx_pq_column_meta *m)
{
	const char *path[3];
	uint32_t	n = cx_pq_leaf_path(col, path);

	if (m->npath != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (m->path_in_schema[i] == NULL || strcmp(m->path_in_schema[i], path[i]) != 0)
			return false;
	return true;
}

static bool
inside(const cx_fragr *r, int64_t offset, int64_t len)
{
	return offset >= MAGIC_BYTES && len > 0 &&
		(uint64_t) offset <= r->footer_offset &&
		(uint64_t) len <= r->footer_offset - (uint64_t) offset;
}

/* Checks one column chunk and fills out from it; returns what is wrong. */
static const char *
chunk_problem(const cx_fragr *r, uint32_t c, uint32_t nrows,
			  const cx_pq_column_chunk *cc, cx_chunk_meta *out)
{
	const cx_pq_leaf *leaf = &r->leaves[c];
	const cx_pq_column_meta *m = &cc->meta;

	if (!cc->has_meta || m->type != leaf->ptype ||
		!path_matches(&r->schema->columns[c], m))
		return "column chunk does not match the schema";
	if (m->codec != CX_PQ_ZSTD || m->has_dictionary_page_offset)
		return "unsupported codec or dictionary page";
	if (!inside(r, m->data_page_offset, m->total_compressed_size) ||
		m->total_uncompressed_size < 0 ||
		(uint64_t) m->total_uncompressed_size > 2 * CX_CHUNK_RAW_MAX)
		return "chunk lies outside the data area or has an absurd size";
	if (!cc->has_offset_index ||
		!inside(r, cc->offset_index_offset, cc->offset_index_length))
		return "offset index missing or outside the object";
	/* a list row has one level at least, any other row exactly one */
	if (m->num_values < (int64_t) nrows ||
		(!leaf->list && m->num_values != (int64_t) nrows))
		return "value count does not match the row count";
	out->offset = (uint64_t) m->data_page_offset;
	out->stored_len = (uint64_t) m->total_compressed_size;
	out->raw_len = (uint64_t) m->total_uncompressed_size;
	out->num_values = m->num_values;
	out->index_offset = (uint64_t) cc->offset_index_offset;
	out->index_len = (uint32_t) cc->offset_index_length;
	memset(&out->stats, 0, sizeof(out->stats));
	if (leaf->list)
		return NULL;
	if (!m->has_statistics ||
		!cx_pq_stats_to_engine(leaf, &m->statistics, nrows, &out->stats))
		return "statistics missing or inconsistent";
	return NULL;
}

static cx_code
load_groups(cx_fragr *r, const cx_pq_file_meta *m, cx_err *err)
{
	uint32_t	ncols = r->schema->ncolumns;

	r->ngroups = m->nrow_groups;
	r->group_rows = calloc(r->ngroups ? r->ngroups : 1, sizeof(uint32_t));
	r->chunks = calloc(r->ngroups ? (size_t) r->ngroups * ncols : 1,
					   sizeof(cx_chunk_meta));
	if (r->group_rows == NULL || r->chunks == NULL)
		return nomem(err, r->key);
	for (uint32_t g = 0; g < r->ngroups; g++)
	{
		const cx_pq_row_group *rg = &m->row_groups[g];

		if (rg->num_rows <= 0 || rg->num_rows > UINT32_MAX ||
			rg->ncolumns != ncols)
			return corrupt(err, r->key, "row group is empty or does not match the schema");
		r->group_rows[g] = (uint32_t) rg->num_rows;
		r->rows += (uint64_t) rg->num_rows;
		for (uint32_t c = 0; c < ncols; c++)
		{
			const char *why = chunk_problem(r, c, r->group_rows[g],
											&rg->columns[c],
											&r->chunks[(size_t) g * ncols + c]);

			if (why != NULL)
				return corrupt_chunk(err, r, g, c, why);
		}
	}
	if (m->num_rows < 0 || (uint64_t) m->num_rows != r->rows)
		return corrupt(err, r->key, "row count does not match the row groups");
	return CX_OK;
}

static cx_code
parse_footer(cx_fragr *r, const uint8_t *meta, size_t len, cx_err *err)
{
	cx_pq_file_meta m;
	cx_code		rc;

	rc = cx_pq_file_meta_decode(meta, len, &m, r->key, err);
	if (rc == CX_OK)
		rc = load_schema(r, &m, err);
	if (rc == CX_OK)
		rc = load_groups(r, &m, err);
	cx_pq_file_meta_free(&m);
	return rc;
}

/* Checks the trailer at the end of tail (the object's last bytes) and sets
 * r->footer_offset; *meta_len gets the FileMetaData length. */
static cx_code
check_trailer(cx_fragr *r, const uint8_t *tail_end, uint32_t *meta_len,
			  cx_err *err)
{
	const uint8_t *t = tail_end - TRAILER_BYTES;

	if (memcmp(t + 4, CX_PARQUET_MAGIC, MAGIC_BYTES) != 0)
		return corrupt(err, r->key, "bad trailer magic");
	*meta_len = cx_load_u32(t);
	if (*meta_len > r->size - MAGIC_BYTES - TRAILER_BYTES)
		return corrupt(err, r->key, "footer length exceeds the object");
	r->footer_offset = r->size - TRAILER_BYTES - *meta_len;
	return CX_OK;
}

/* Keeps the bytes just read when they are the whole object. */
static cx_code
keep_whole(cx_fragr *r, const uint8_t *data, cx_err *err)
{
	if (memcmp(data, CX_PARQUET_MAGIC, MAGIC_BYTES) != 0)
		return corrupt(err, r->key, "bad header magic");
	r->whole = r->io;
	cx_buf_init(&r->io);
	return CX_OK;
}

/*
 * Reads the tail and checks the trailer; if the footer did not fit in the
 * tail, reads the whole footer with a second GET.  A tail that is the whole
 * object is kept, so the row groups of a small fragment need no further
 * reads.
 */
static cx_code
load_footer(cx_fragr *r, cx_err *err)
{
	size_t		tail = r->size < TAIL_GUESS ? (size_t) r->size : TAIL_GUESS;
	const uint8_t *data;
	const uint8_t *meta;
	uint32_t	meta_len;

	if (r->size < MAGIC_BYTES + TRAILER_BYTES)
		return corrupt(err, r->key, "object too small to be a fragment");
	if (fetch(r, r->size - tail, tail, &data, err) != CX_OK ||
		(tail == r->size && keep_whole(r, data, err) != CX_OK) ||
		check_trailer(r, data + tail, &meta_len, err) != CX_OK)
		return err->code;
	if ((size_t) meta_len + TRAILER_BYTES <= tail)
		meta = data + tail - TRAILER_BYTES - meta_len;
	else if (fetch(r, r->footer_offset, meta_len, &meta, err) != CX_OK)
		return err->code;
	return parse_footer(r, meta, meta_len, err);
}

/* The footer of a manifest-listed fragment: one GET of exactly the footer
 * (or of the whole object when it is small), checked against its CRC. */
static cx_code
load_entry_footer(cx_fragr *r, const cx_fragment_info *fi, cx_err *err)
{
	bool		whole = fi->size <= TAIL_GUESS;
	uint64_t	from = whole ? 0 : fi->footer_offset;
	const uint8_t *data;
	const uint8_t *footer;
	uint32_t	meta_len;

	if (fi->size < MAGIC_BYTES + TRAILER_BYTES ||
		fi->footer_len < TRAILER_BYTES || fi->footer_offset < MAGIC_BYTES ||
		fi->footer_offset > fi->size ||
		fi->footer_len != fi->size - fi->footer_offset)
		return corrupt(err, r->key, "manifest entry does not describe a footer");
	if (fetch(r, from, (size_t) (fi->size - from), &data, err) != CX_OK ||
		(whole && keep_whole(r, data, err) != CX_OK))
		return err->code;
	footer = data + (fi->footer_offset - from);
	if (cx_crc32c(0, footer, fi->footer_len) != fi->footer_crc)
		return corrupt(err, r->key, "footer checksum mismatch");
	if (check_trailer(r, footer + fi->footer_len, &meta_len, err) != CX_OK)
		return err->code;
	if (r->footer_offset != fi->footer_offset)
		return corrupt(err, r->key, "footer length does not match the manifest");
	return parse_footer(r, footer, meta_len, err);
}

static void
dctx_free(void *p)
{
	ZSTD_freeDCtx(p);
}

/*
 * A decompression context for a new reader: the thread's spare one when it
 * has one, else a new one.  Creating one (it allocates and sets up about
 * 100 KB) cost more than reading the keys of a small generation: 6% of the
 * writer worker's CPU when it reopened stores, each reading a few.
 */
static ZSTD_DCtx *
dctx_take(void)
{
	ZSTD_DCtx  *zd = cx_thread_spare_take(CX_THREAD_ZSTD_DCTX);

	return zd != NULL ? zd : ZSTD_createDCtx();
}

/* Keeps zd as the thread's spare when it has none, else frees it.  No
 * parameter of a reader's context is ever set, and each decompression
 * starts a new frame, so a context carries nothing from one reader to the
 * next. */
static void
dctx_give_back(ZSTD_DCtx *zd)
{
	if (zd != NULL && !cx_thread_spare_give(CX_THREAD_ZSTD_DCTX, zd, dctx_free))
		ZSTD_freeDCtx(zd);
}

static cx_fragr *
fragr_new(cx_objstore *s, const char *key, uint64_t size)
{
	cx_fragr   *r = calloc(1, sizeof(cx_fragr));

	if (r == NULL)
		return NULL;
	r->store = s;
	r->size = size;
	cx_buf_init(&r->io);
	cx_buf_init(&r->whole);
	cx_buf_init(&r->page);
	cx_buf_init(&r->rep);
	cx_buf_init(&r->def);
	if ((r->key = cx_strdup(key)) == NULL ||
		(r->zd = dctx_take()) == NULL)
	{
		cx_fragr_close(r);
		return NULL;
	}
	return r;
}

/* The read buffer is not needed once parsed; open readers may be cached. */
static cx_code
opened(cx_fragr *r, cx_code rc, cx_fragr **out)
{
	if (rc != CX_OK)
	{
		cx_fragr_close(r);
		return rc;
	}
	cx_buf_free(&r->io);
	*out = r;
	return CX_OK;
}

cx_code
cx_fragr_open(cx_objstore *s, const char *key, uint64_t size,
			  cx_fragr **out, cx_err *err)
{
	cx_fragr   *r = fragr_new(s, key, size);
	cx_code		rc;

	*out = NULL;
	if (r == NULL)
		return nomem(err, key);
	rc = size == 0 ? cx_obj_head(s, key, &r->size, err) : CX_OK;
	if (rc == CX_OK)
		rc = load_footer(r, err);
	return opened(r, rc, out);
}

cx_code
cx_fragr_open_entry(cx_objstore *s, const cx_fragment_info *fi,
					cx_fragr **out, cx_err *err)
{
	cx_fragr   *r = fragr_new(s, fi->path, fi->size);

	*out = NULL;
	if (r == NULL)
		return nomem(err, fi->path);
	return opened(r, load_entry_footer(r, fi, err), out);
}

void
cx_fragr_close(cx_fragr *r)
{
	if (r == NULL)
		return;
	if (r->indexes != NULL)
		for (size_t i = 0; i < (size_t) r->ngroups * r->schema->ncolumns; i++)
			cx_pq_offset_index_free(&r->indexes[i]);
	free(r->indexes);
	cx_schema_free(r->schema);
	free(r->leaves);
	free(r->group_rows);
	free(r->chunks);
	cx_buf_free(&r->io);
	cx_buf_free(&r->whole);
	cx_buf_free(&r->page);
	cx_buf_free(&r->rep);
	cx_buf_free(&r->def);
	dctx_give_back(r->zd);
	free(r->key);
	free(r);
}

const char *
cx_fragr_key(const cx_fragr *r)
{
	return r->key;
}

const cx_schema *
cx_fragr_schema(const cx_fragr *r)
{
	return r->schema;
}

uint64_t
cx_fragr_rows(const cx_fragr *r)
{
	return r->rows;
}

uint32_t
cx_fragr_num_groups(const cx_fragr *r)
{
	return r->ngroups;
}

uint32_t
cx_fragr_group_rows(const cx_fragr *r, uint32_t group)
{
	return group < r->ngroups ? r->group_rows[group] : 0;
}

const cx_chunk_meta *
cx_fragr_chunk(const cx_fragr *r, uint32_t group, uint32_t column)
{
	if (group >= r->ngroups || column >= r->schema->ncolumns)
		return NULL;
	return &r->chunks[(size_t) group * r->schema->ncolumns + column];
}

/* ---------------------------------------------------------------------
 * Decoding pages
 * --------------------------------------------------------------------- */

/*
 * Room for n entries of at most `bytes` value bytes, so decoding does not
 * reallocate as it goes; capped, so that a damaged footer's sizes cannot
 * reserve absurd amounts (buffers still grow past the cap if they must).
 */
#define RESERVE_CAP ((size_t) 64 << 20)

/* Capacity for n more bytes, allocated exactly: cx_buf_reserve() rounds
 * up to a power of two, which for a chunk of a few MiB pushes it past
 * malloc's mmap threshold and makes every row group fault fresh pages. */
static void
reserve_exact(cx_buf *b, uint64_t n)
{
	uint8_t    *p;

	n = n < RESERVE_CAP ? n : RESERVE_CAP;
	if (b->failed || b->cap - b->len >= n)
		return;
	p = realloc(b->data, b->len + (size_t) n);
	if (p == NULL)
		return;					/* growing later will fail, or succeed */
	b->data = p;
	b->cap = b->len + (size_t) n;
}

static void
colout_init(colout *o, int width)
{
	uint32_t	zero = 0;

	memset(o, 0, sizeof(*o));
	o->width = width;
	cx_buf_init(&o->nulls);
	cx_buf_init(&o->data);
	cx_buf_init(&o->offsets);
	/* so that an all-empty column still has a (non-NULL) bytes pointer */
	reserve_exact(&o->data, 1);
	if (width == 0)
		cx_buf_put(&o->offsets, &zero, sizeof(zero));
}

static void
colout_reserve(colout *o, uint64_t n, uint64_t bytes)
{
	reserve_exact(&o->nulls, (n + 7) / 8);
	reserve_exact(&o->data, bytes);
	if (o->width == 0)
		reserve_exact(&o->offsets, (n + 1) * sizeof(uint32_t));
}

static void
colout_free(colout *o)
{
	cx_buf_free(&o->nulls);
	cx_buf_free(&o->data);
	cx_buf_free(&o->offsets);
}

static bool
colout_ok(const colout *o)
{
	return cx_buf_ok(&o->nulls) && cx_buf_ok(&o->data) &&
		cx_buf_ok(&o->offsets);
}

/* n more bytes at the end of b, uninitialised; NULL (b failed) on OOM. */
static inline uint8_t *
room(cx_buf *b, size_t n)
{
	uint8_t    *p;

	if (b->cap - b->len < n && !cx_buf_reserve(b, n))
		return NULL;
	p = b->data + b->len;
	b->len += n;
	return p;
}

/* Starts entry n: its null bit (clear). */
static inline bool
colout_next(colout *o)
{
	uint8_t    *bits;

	if (o->n % 8 == 0)
	{
		if ((bits = room(&o->nulls, 1)) == NULL)
			return false;
		*bits = 0;
	}
	o->n++;
	return true;
}

static inline void
put_offset(cx_buf *offsets, size_t v)
{
	uint8_t    *p = room(offsets, sizeof(uint32_t));
	uint32_t	u = (uint32_t) v;

	if (p != NULL)
		memcpy(p, &u, sizeof(u));
}

/* Ends a var-width entry (its bytes appended to data). */
static inline void
colout_end_var(colout *o)
{
	if (o->width == 0)
		put_offset(&o->offsets, o->data.len);
}

static void
colout_null(colout *o)
{
	uint8_t    *p;

	if (!colout_next(o))
		return;
	o->nulls.data[(o->n - 1) / 8] |= (uint8_t) (1u << ((o->n - 1) % 8));
	o->nnull++;
	if (o->width > 0 && (p = room(&o->data, (size_t) o->width)) != NULL)
		memset(p, 0, (size_t) o->width);
	colout_end_var(o);
}

/* How a leaf's PLAIN values become engine values. */
typedef enum value_kind
{
	VALUES_SAME_FIXED,			/* the same fixed-width bytes */
	VALUES_SAME_VAR,			/* BYTE_ARRAY: the same bytes */
	VALUES_BOOL,				/* bit-packed */
	VALUES_TIMESTAMP,			/* INT64 Unix microseconds */
	VALUES_CONVERTED			/* cx_pq_get_plain() */
} value_kind;

static value_kind
value_kind_of(const cx_pq_leaf *leaf)
{
	if (leaf->ptype == CX_PQ_BOOLEAN)
		return VALUES_BOOL;
	if (leaf->type == CX_T_TIMESTAMP || leaf->type == CX_T_TIMESTAMPTZ)
		return VALUES_TIMESTAMP;
	if (leaf->precision > 0 || leaf->type == CX_T_INT16 ||
		leaf->type == CX_T_DATE || leaf->type == CX_T_TIMESTAMP ||
		leaf->type == CX_T_TIMESTAMPTZ)
		return VALUES_CONVERTED;
	return leaf->width > 0 ? VALUES_SAME_FIXED : VALUES_SAME_VAR;
}

/* One decoded page: its levels and values. */
typedef struct page_in
{
	const cx_pq_leaf *leaf;
	value_kind	kind;
	size_t		nlevels;
	const uint8_t *rep;			/* NULL: all 0 */
	const uint8_t *def;			/* NULL: all max_def */
	const uint8_t *vals;		/* PLAIN values not taken yet */
	size_t		left;			/* their bytes */
	const uint8_t *bools;		/* VALUES_BOOL: the bit-packed values */
	uint32_t	nbools;			/* booleans taken so far */
} page_in;

static bool
take_converted(page_in *p, colout *o, const char **why)
{
	cx_rd		r;

	cx_rd_init(&r, p->vals, p->left);
	if (!cx_pq_get_plain(p->leaf, &r, &o->data, why))
		return false;
	p->vals += r.pos;
	p->left -= r.pos;
	colout_end_var(o);
	return true;
}

/* A little-endian u32, inline (the reader loads one per BYTE_ARRAY). */
static inline uint32_t
load_le32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
		(uint32_t) p[3] << 24;
}

/* Appends len bytes of the page's values to o's data. */
static inline bool
take_bytes(page_in *p, colout *o, size_t len, const char **why)
{
	uint8_t    *dst;

	if (len > p->left)
		return (*why = "values are truncated"), false;
	if ((dst = room(&o->data, len)) == NULL)
		return (*why = "out of memory"), false;
	/* constant sizes become plain moves, not a call */
	if (len == 4)
		memcpy(dst, p->vals, 4);
	else if (len == 8)
		memcpy(dst, p->vals, 8);
	else
		memcpy(dst, p->vals, len);
	p->vals += len;
	p->left -= len;
	return true;
}

/* The less common kinds: booleans, timestamps, conversions. */
static bool
take_other(page_in *p, colout *o, const char **why)
{
	uint8_t    *dst;
	uint32_t	i;
	int64_t		ts;

	switch (p->kind)
	{
		case VALUES_BOOL:
			i = p->nbools++;
			if (i / 8 >= p->left)
				return (*why = "values are truncated"), false;
			if ((dst = room(&o->data, 1)) != NULL)
				*dst = (p->vals[i / 8] >> (i % 8)) & 1;
			return true;
		case VALUES_TIMESTAMP:
			if (p->left < 8)
				return (*why = "values are truncated"), false;
			if (!cx_pq_timestamp_from_unix((int64_t) cx_load_u64(p->vals), &ts))
				return (*why = "value outside the range of its type"), false;
			if ((dst = room(&o->data, 8)) != NULL)
				cx_store_u64(dst, (uint64_t) ts);
			p->vals += 8;
			p->left -= 8;
			return true;
		default:
			return take_converted(p, o, why);
	}
}

/* Appends the next value of the page to o. */
static inline bool
take_value(page_in *p, colout *o, const char **why)
{
	size_t		len;

	if (!colout_next(o))
		return (*why = "out of memory"), false;
	if (p->kind == VALUES_SAME_FIXED)
		return take_bytes(p, o, (size_t) p->leaf->width, why);
	if (p->kind != VALUES_SAME_VAR)
		return take_other(p, o, why);
	if (p->left < 4 || (len = load_le32(p->vals)) > p->left - 4)
		return (*why = "values are truncated"), false;
	p->vals += 4;
	p->left -= 4;
	if (!take_bytes(p, o, len, why))
		return false;
	colout_end_var(o);
	return true;
}

/* A page of fixed-width values without NULLs, copied in one go (the common
 * case of numbers and timestamps-free columns). */
static bool
copy_dense(page_in *p, colout *o, const char **why)
{
	size_t		n = p->nlevels;
	size_t		bytes = n * (size_t) p->leaf->width;
	size_t		nbits = ((size_t) o->n + n + 7) / 8;
	uint8_t    *dst;

	if (bytes > p->left)
		return (*why = "values are truncated"), false;
	if (nbits > o->nulls.len && cx_buf_grow(&o->nulls, nbits - o->nulls.len) == NULL)
		return (*why = "out of memory"), false;
	if ((dst = room(&o->data, bytes)) == NULL)
		return (*why = "out of memory"), false;
	memcpy(dst, p->vals, bytes);
	p->vals += bytes;
	p->left -= bytes;
	o->n += (uint32_t) n;
	return true;
}

static bool
decode_flat(page_in *p, colout *o, uint32_t *rows, const char **why)
{
	*rows = (uint32_t) p->nlevels;
	if (p->kind == VALUES_SAME_FIXED &&
		(p->def == NULL || memchr(p->def, 0, p->nlevels) == NULL))
		return copy_dense(p, o, why);
	for (size_t k = 0; k < p->nlevels; k++)
	{
		if (p->def != NULL && p->def[k] == 0)
			colout_null(o);
		else if (!take_value(p, o, why))
			return false;
	}
	return true;
}

/*
 * Levels of a list: rep 0 starts a row, whose def says NULL list (0), empty
 * list (1) or first element (2 NULL, 3 present); rep 1 adds an element to
 * the open non-empty list.
 */
static bool
decode_list(page_in *p, colout *top, colout *child, uint32_t *rows,
			const char **why)
{
	bool		open = false;

	*rows = 0;
	for (size_t k = 0; k < p->nlevels; k++)
	{
		uint8_t		rep = p->rep[k];
		uint8_t		def = p->def[k];

		if (rep == 0)
		{
			if (!colout_next(top))
				return (*why = "out of memory"), false;
			put_offset(&top->offsets, child->n);
			(*rows)++;
			if (def == 0)
			{
				top->nulls.data[(top->n - 1) / 8] |= (uint8_t) (1u << ((top->n - 1) % 8));
				top->nnull++;
			}
			open = def >= 2;
			if (def < 2)
				continue;
		}
		else if (!open || def < 2)
		{
			*why = "repetition levels do not form lists";
			return false;
		}
		if (def == 2)
			colout_null(child);
		else if (!take_value(p, child, why))
			return false;
	}
	return true;
}

/* Decodes the levels of a page of nvalues levels into r->rep / r->def. */
static bool
decode_levels(cx_fragr *r, page_in *p, cx_rd *rd, const char **why)
{
	const cx_pq_leaf *leaf = p->leaf;

	cx_buf_reset(&r->rep);
	cx_buf_reset(&r->def);
	if (leaf->max_rep > 0)
	{
		if (cx_buf_grow(&r->rep, p->nlevels) == NULL)
			return (*why = "out of memory"), false;
		if (!cx_levels_decode(rd, p->nlevels, leaf->max_rep, r->rep.data, why))
			return false;
		if (p->nlevels > 0 && r->rep.data[0] != 0)
			return (*why = "page does not start a row"), false;
		p->rep = r->rep.data;
	}
	if (leaf->max_def > 0)
	{
		if (cx_buf_grow(&r->def, p->nlevels) == NULL)
			return (*why = "out of memory"), false;
		if (!cx_levels_decode(rd, p->nlevels, leaf->max_def, r->def.data, why))
			return false;
		p->def = r->def.data;
	}
	return true;
}

/* Decodes one decompressed page body into d; *rows gets its rows. */
static bool
decode_page(cx_fragr *r, const cx_pq_leaf *leaf, const uint8_t *body,
			size_t len, size_t nlevels, cx_decoded *d, uint32_t *rows,
			const char **why)
{
	page_in		p;
	cx_rd		rd;
	bool		ok;

	memset(&p, 0, sizeof(p));
	p.leaf = leaf;
	p.kind = value_kind_of(leaf);
	p.nlevels = nlevels;
	cx_rd_init(&rd, body, len);
	if (!decode_levels(r, &p, &rd, why))
		return false;
	p.vals = rd.p + rd.pos;
	p.left = cx_rd_left(&rd);
	ok = leaf->list ? decode_list(&p, &d->top, &d->child, rows, why) :
		decode_flat(&p, &d->top, rows, why);
	if (!ok)
		return false;
	if (p.kind == VALUES_BOOL)
		p.left -= ((size_t) p.nbools + 7) / 8;	/* take_value checked */
	if (p.left != 0)
		return (*why = "trailing bytes after the values"), false;
	if (!colout_ok(&d->top) || !colout_ok(&d->child))
		return (*why = "out of memory"), false;
	return true;
}

/* Checks a page header and its CRC; returns what is wrong, or NULL. */
static const char *
page_problem(const cx_pq_page_header *h, const uint8_t *page, size_t left)
{
	if (h->type != CX_PQ_DATA_PAGE || !h->has_data_page ||
		h->data_page.encoding != CX_PQ_PLAIN ||
		h->data_page.definition_level_encoding != CX_PQ_RLE ||
		h->data_page.repetition_level_encoding != CX_PQ_RLE)
		return "unsupported page type or encoding";
	if (h->compressed_page_size < 0 || (size_t) h->compressed_page_size > left ||
		h->uncompressed_page_size < 0 ||
		(uint64_t) h->uncompressed_page_size > CX_CHUNK_RAW_MAX ||
		h->data_page.num_values < 0)
		return "page sizes are inconsistent";
	if (!h->has_crc ||
		!cx_checksum_matches((uint32_t) h->crc,
							 (uint32_t) crc32(0L, page, (uInt) h->compressed_page_size)))
		return "page checksum mismatch";
	return NULL;
}

static const char *
decompress(cx_fragr *r, const cx_pq_page_header *h, const uint8_t *src)
{
	size_t		n = (size_t) h->uncompressed_page_size;
	size_t		got;

	cx_buf_reset(&r->page);
	if (!cx_buf_reserve(&r->page, n ? n : 1))
		return "out of memory";
	got = ZSTD_decompressDCtx(r->zd, r->page.data, n, src,
							  (size_t) h->compressed_page_size);
	if (ZSTD_isError(got) || got != n)
		return "decompression failed";
	r->page.len = n;
	return NULL;
}

/* Decodes the page at data (left bytes to the chunk's end); *used gets its
 * size with the header. */
static cx_code
load_page(cx_fragr *r, uint32_t g, uint32_t c, const uint8_t *data,
		  size_t left, cx_decoded *d, uint32_t *rows, int64_t *levels,
		  size_t *used, cx_err *err)
{
	cx_pq_page_header h;
	const char *why;
	size_t		hlen;

	*rows = 0;
	*levels = 0;
	*used = 0;
	if (cx_pq_page_header_decode(data, left, &h, &hlen, r->key, err) != CX_OK)
	{
		cx_pq_page_header_free(&h);
		return cx_err_prefix(err, "row group %u, column %u", g, c);
	}
	why = page_problem(&h, data + hlen, left - hlen);
	if (why == NULL)
		why = decompress(r, &h, data + hlen);
	if (why == NULL)
		(void) decode_page(r, &r->leaves[c], r->page.data, r->page.len,
						   (size_t) h.data_page.num_values, d, rows, &why);
	*levels = h.data_page.num_values;
	*used = hlen + (size_t) h.compressed_page_size;
	cx_pq_page_header_free(&h);
	return why == NULL ? CX_OK : corrupt_chunk(err, r, g, c, why);
}

static void
finish_vec(const colout *o, cx_type type, cx_colvec *v)
{
	v->type = type;
	v->width = (uint8_t) cx_type_width(type);
	v->nrows = o->n;
	v->nulls = o->nnull > 0 ? o->nulls.data : NULL;
	if (v->width > 0)
		v->fixed = o->data.data;
	else
	{
		v->offsets = (const uint32_t *) o->offsets.data;
		v->bytes = o->data.data;
	}
}

/* Decodes every page of chunk (g, c) from its stored bytes into d. */
static cx_code
load_chunk(cx_fragr *r, uint32_t g, uint32_t c, const uint8_t *data,
		   cx_decoded *d, cx_err *err)
{
	const cx_chunk_meta *m = cx_fragr_chunk(r, g, c);
	const cx_pq_leaf *leaf = &r->leaves[c];
	const cx_column *col = &r->schema->columns[c];
	size_t		pos = 0;
	uint32_t	rows = 0;
	int64_t		levels = 0;

	colout_init(&d->top, leaf->list ? 0 : cx_type_width(col->type));
	colout_init(&d->child, cx_type_width(leaf->type));
	/* a list's offsets are pushed as each row starts, and the end last */
	if (leaf->list)
	{
		cx_buf_reset(&d->top.offsets);
		colout_reserve(&d->top, r->group_rows[g], 0);
		colout_reserve(&d->child, (uint64_t) m->num_values,
					   d->child.width > 0 ? (uint64_t) m->num_values * (uint64_t) d->child.width :
					   m->raw_len);
	}
	else
		colout_reserve(&d->top, r->group_rows[g],
					   d->top.width > 0 ? (uint64_t) r->group_rows[g] * (uint64_t) d->top.width :
					   m->raw_len);
	while (pos < m->stored_len)
	{
		uint32_t	page_rows;
		int64_t		page_levels;
		size_t		used;

		if (load_page(r, g, c, data + pos, (size_t) (m->stored_len - pos), d,
					  &page_rows, &page_levels, &used, err) != CX_OK)
			return err->code;
		pos += used;
		rows += page_rows;
		levels += page_levels;
		if (rows > r->group_rows[g] || levels > m->num_values)
			return corrupt_chunk(err, r, g, c, "pages hold more rows than the row group");
	}
	if (rows != r->group_rows[g] || levels != m->num_values)
		return corrupt_chunk(err, r, g, c, "pages hold fewer rows than the row group");
	if (leaf->list)
	{
		put_offset(&d->top.offsets, d->child.n);
		finish_vec(&d->child, leaf->type, &d->elems);
		d->vec.child = &d->elems;
	}
	if (!colout_ok(&d->top))
		return nomem(err, r->key);
	finish_vec(&d->top, col->type, &d->vec);
	return CX_OK;
}

static void
decoded_free(cx_decoded *d)
{
	colout_free(&d->top);
	colout_free(&d->child);
	memset(d, 0, sizeof(*d));
}

static bool
wanted(const bool *want, uint32_t c)
{
	return want == NULL || want[c];
}

/* Reads chunks first..last of group g (adjacent in the object) with one
 * ranged GET and decodes each. */
static cx_code
load_run(cx_fragr *r, uint32_t g, uint32_t first, uint32_t last,
		 cx_rowgroup *rg, cx_err *err)
{
	const cx_chunk_meta *m0 = cx_fragr_chunk(r, g, first);
	const cx_chunk_meta *mn = cx_fragr_chunk(r, g, last);
	size_t		len = (size_t) (mn->offset + mn->stored_len - m0->offset);
	const uint8_t *data;

	if (fetch(r, m0->offset, len, &data, err) != CX_OK)
		return err->code;
	for (uint32_t c = first; c <= last; c++)
	{
		const cx_chunk_meta *m = cx_fragr_chunk(r, g, c);

		rg->present[c] = true;
		if (load_chunk(r, g, c, data + (m->offset - m0->offset),
					   &rg->cols[c], err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* Last column of the run of adjacent wanted chunks starting at first. */
static uint32_t
run_end(const cx_fragr *r, uint32_t g, uint32_t first, const bool *want)
{
	uint32_t	last = first;

	while (last + 1 < r->schema->ncolumns && wanted(want, last + 1))
	{
		const cx_chunk_meta *a = cx_fragr_chunk(r, g, last);
		const cx_chunk_meta *b = cx_fragr_chunk(r, g, last + 1);

		if (b->offset != a->offset + a->stored_len)
			break;
		last++;
	}
	return last;
}

/* An empty row group of nrows rows, no column present; NULL on OOM. */
static cx_rowgroup *
rowgroup_new(const cx_fragr *r, uint32_t nrows)
{
	uint32_t	ncols = r->schema->ncolumns;
	cx_rowgroup *rg = calloc(1, sizeof(cx_rowgroup));

	if (rg == NULL ||
		(rg->present = calloc(ncols ? ncols : 1, sizeof(bool))) == NULL ||
		(rg->cols = calloc(ncols ? ncols : 1, sizeof(cx_decoded))) == NULL)
	{
		cx_rowgroup_free(rg);
		return NULL;
	}
	rg->nrows = nrows;
	rg->ncols = ncols;
	return rg;
}

cx_code
cx_fragr_read_group(cx_fragr *r, uint32_t group, const bool *want,
					cx_rowgroup **out, cx_err *err)
{
	uint32_t	ncols = r->schema->ncolumns;
	cx_rowgroup *rg;

	*out = NULL;
	if (group >= r->ngroups)
		return cx_err_set(err, CX_ERR_INVALID,
						  "fragment %s has no row group %u", r->key, group);
	if ((rg = rowgroup_new(r, r->group_rows[group])) == NULL)
		return nomem(err, r->key);
	for (uint32_t c = 0; c < ncols; c++)
	{
		uint32_t	last;

		if (!wanted(want, c))
			continue;
		last = run_end(r, group, c, want);
		if (load_run(r, group, c, last, rg, err) != CX_OK)
		{
			cx_rowgroup_free(rg);
			return err->code;
		}
		c = last;
	}
	*out = rg;
	return CX_OK;
}

uint32_t
cx_rowgroup_rows(const cx_rowgroup *g)
{
	return g->nrows;
}

const cx_colvec *
cx_rowgroup_column(const cx_rowgroup *g, uint32_t column)
{
	if (column >= g->ncols || !g->present[column])
		return NULL;
	return &g->cols[column].vec;
}

void
cx_rowgroup_free(cx_rowgroup *g)
{
	if (g == NULL)
		return;
	if (g->cols != NULL)
		for (uint32_t c = 0; c < g->ncols; c++)
			decoded_free(&g->cols[c]);
	free(g->cols);
	free(g->present);
	free(g);
}

/* ---------------------------------------------------------------------
 * Pages and offset indexes
 * --------------------------------------------------------------------- */

static cx_code
load_offset_index(cx_fragr *r, uint32_t g, uint32_t c, cx_pq_offset_index *oi,
				  cx_err *err)
{
	const cx_chunk_meta *m = cx_fragr_chunk(r, g, c);
	const uint8_t *data;

	memset(oi, 0, sizeof(*oi));
	if (fetch(r, m->index_offset, m->index_len, &data, err) != CX_OK)
		return err->code;
	if (cx_pq_offset_index_decode(data, m->index_len, oi, r->key, err) != CX_OK)
		return cx_err_prefix(err, "row group %u, column %u", g, c);
	return CX_OK;
}

/* Walks the page headers of chunk data; fills pages[] (at most max). */
static cx_code
walk_pages(cx_fragr *r, uint32_t g, uint32_t c, const uint8_t *data,
		   cx_page_info *pages, uint32_t max, uint32_t *n, cx_err *err)
{
	const cx_chunk_meta *m = cx_fragr_chunk(r, g, c);
	size_t		pos = 0;

	*n = 0;
	while (pos < m->stored_len)
	{
		cx_pq_page_header h;
		size_t		hlen;
		cx_page_info *p = &pages[*n];

		if (*n == max)
			return corrupt_chunk(err, r, g, c, "more pages than the offset index lists");
		if (cx_pq_page_header_decode(data + pos, m->stored_len - pos, &h, &hlen,
									 r->key, err) != CX_OK)
		{
			cx_pq_page_header_free(&h);
			return cx_err_prefix(err, "row group %u, column %u", g, c);
		}
		p->offset = m->offset + pos;
		p->header_len = (uint32_t) hlen;
		p->stored_len = (uint32_t) h.compressed_page_size;
		p->raw_len = (uint32_t) h.uncompressed_page_size;
		p->num_values = (uint32_t) h.data_page.num_values;
		p->crc = h.crc;
		p->crc_ok = page_problem(&h, data + pos + hlen, m->stored_len - pos - hlen) == NULL;
		cx_pq_page_header_free(&h);
		if (p->stored_len > m->stored_len - pos - hlen)
			return corrupt_chunk(err, r, g, c, "page sizes are inconsistent");
		pos += hlen + p->stored_len;
		(*n)++;
	}
	return CX_OK;
}

static const char *
index_problem(const cx_pq_offset_index *oi, const cx_page_info *pages,
			  uint32_t n, uint32_t nrows)
{
	if (oi->npages != n)
		return "offset index lists another number of pages";
	for (uint32_t k = 0; k < n; k++)
	{
		const cx_pq_page_location *loc = &oi->pages[k];

		if ((uint64_t) loc->offset != pages[k].offset ||
			(uint64_t) loc->compressed_page_size !=
			(uint64_t) pages[k].header_len + pages[k].stored_len ||
			loc->first_row_index < (k == 0 ? 0 : oi->pages[k - 1].first_row_index + 1) ||
			loc->first_row_index >= nrows || (k == 0 && loc->first_row_index != 0))
			return "offset index does not match the pages";
	}
	return NULL;
}

cx_code
cx_fragr_chunk_pages(cx_fragr *r, uint32_t group, uint32_t column,
					 cx_page_info **pages, uint32_t *npages, cx_err *err)
{
	const cx_chunk_meta *m = cx_fragr_chunk(r, group, column);
	cx_pq_offset_index oi;
	const uint8_t *data;
	const char *why;

	*pages = NULL;
	*npages = 0;
	if (m == NULL)
		return cx_err_set(err, CX_ERR_INVALID, "fragment %s has no chunk %u/%u",
						  r->key, group, column);
	if (load_offset_index(r, group, column, &oi, err) != CX_OK)
	{
		cx_pq_offset_index_free(&oi);
		return err->code;
	}
	*pages = calloc(oi.npages ? oi.npages : 1, sizeof(cx_page_info));
	if (*pages == NULL)
	{
		cx_pq_offset_index_free(&oi);
		return nomem(err, r->key);
	}
	if (fetch(r, m->offset, (size_t) m->stored_len, &data, err) != CX_OK ||
		walk_pages(r, group, column, data, *pages, oi.npages, npages, err) != CX_OK)
	{
		cx_pq_offset_index_free(&oi);
		return err->code;
	}
	why = index_problem(&oi, *pages, *npages, r->group_rows[group]);
	for (uint32_t k = 0; why == NULL && k < *npages; k++)
		(*pages)[k].first_row = (uint64_t) oi.pages[k].first_row_index;
	cx_pq_offset_index_free(&oi);
	return why == NULL ? CX_OK : corrupt_chunk(err, r, group, column, why);
}

/* ---------------------------------------------------------------------
 * Reading some rows of a row group: only the pages that hold them
 * --------------------------------------------------------------------- */

/* What is wrong with an offset index as a map of chunk m's pages of a
 * group of nrows rows, or NULL: pages must tile the chunk, first rows
 * ascend from 0. */
static const char *
index_layout_problem(const cx_pq_offset_index *oi, const cx_chunk_meta *m,
					 uint32_t nrows)
{
	uint64_t	next = m->offset;

	if (oi->npages == 0)
		return "offset index lists no pages";
	for (uint32_t k = 0; k < oi->npages; k++)
	{
		const cx_pq_page_location *loc = &oi->pages[k];

		if ((uint64_t) loc->offset != next || loc->compressed_page_size <= 0 ||
			loc->first_row_index < (k == 0 ? 0 : oi->pages[k - 1].first_row_index + 1) ||
			loc->first_row_index >= nrows || (k == 0 && loc->first_row_index != 0))
			return "offset index does not match the chunk";
		next += (uint64_t) loc->compressed_page_size;
	}
	return next == m->offset + m->stored_len ? NULL :
		"offset index does not match the chunk";
}

/* The offset index of chunk (g, c), loaded and checked once per reader. */
static cx_code
chunk_index(cx_fragr *r, uint32_t g, uint32_t c, const cx_pq_offset_index **out,
			cx_err *err)
{
	size_t		i = (size_t) g * r->schema->ncolumns + c;
	const char *why;

	if (r->indexes == NULL &&
		(r->indexes = calloc(r->ngroups * (size_t) r->schema->ncolumns,
							 sizeof(cx_pq_offset_index))) == NULL)
		return nomem(err, r->key);
	if (r->indexes[i].pages == NULL)
	{
		if (load_offset_index(r, g, c, &r->indexes[i], err) != CX_OK)
		{
			cx_pq_offset_index_free(&r->indexes[i]);
			return err->code;
		}
		why = index_layout_problem(&r->indexes[i], cx_fragr_chunk(r, g, c),
								   r->group_rows[g]);
		if (why != NULL)
		{
			cx_pq_offset_index_free(&r->indexes[i]);
			return corrupt_chunk(err, r, g, c, why);
		}
	}
	*out = &r->indexes[i];
	return CX_OK;
}

/* Pages [*p0, *p1] of oi hold rows [lo, hi); *row0 is the first row of p0
 * and *rows the rows of those pages. */
static void
covering_pages(const cx_pq_offset_index *oi, uint32_t group_rows, uint32_t lo,
			   uint32_t hi, uint32_t *p0, uint32_t *p1, uint32_t *row0,
			   uint32_t *rows)
{
	uint32_t	a = 0;
	uint32_t	b;
	uint32_t	end;

	while (a + 1 < oi->npages && oi->pages[a + 1].first_row_index <= lo)
		a++;
	b = a;
	while (b + 1 < oi->npages && oi->pages[b + 1].first_row_index < hi)
		b++;
	end = b + 1 < oi->npages ? (uint32_t) oi->pages[b + 1].first_row_index : group_rows;
	*p0 = a;
	*p1 = b;
	*row0 = (uint32_t) oi->pages[a].first_row_index;
	*rows = end - *row0;
}

/* Rows [from, from + n) of o into dst (empty, same width). */
static void
colout_slice(const colout *o, uint32_t from, uint32_t n, colout *dst)
{
	const uint32_t *offs = (const uint32_t *) o->offsets.data;

	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	k = from + i;
		bool		null = o->nnull > 0 && (o->nulls.data[k / 8] >> (k % 8)) & 1;

		if (null)
			colout_null(dst);
		else if (!colout_next(dst))
			return;
		else if (o->width > 0)
			cx_buf_put(&dst->data, o->data.data + (size_t) k * o->width,
					   (size_t) o->width);
		else
		{
			cx_buf_put(&dst->data, o->data.data + offs[k], offs[k + 1] - offs[k]);
			colout_end_var(dst);
		}
	}
}

/* The same for a list column: its rows, and the elements they hold. */
static void
list_slice(const cx_decoded *d, uint32_t from, uint32_t n, cx_decoded *dst)
{
	const uint32_t *offs = (const uint32_t *) d->top.offsets.data;
	uint32_t	first = offs[from];

	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	k = from + i;

		if (!colout_next(&dst->top))
			return;
		if (d->top.nnull > 0 && (d->top.nulls.data[k / 8] >> (k % 8)) & 1)
		{
			dst->top.nulls.data[i / 8] |= (uint8_t) (1u << (i % 8));
			dst->top.nnull++;
		}
		put_offset(&dst->top.offsets, offs[k] - first);
	}
	colout_slice(&d->child, first, offs[from + n] - first, &dst->child);
}

/* Decodes pages p0..p1 of chunk (g, c) (rows row0 .. row0 + rows) and keeps
 * rows [lo, lo + n) of them in out. */
static cx_code
load_pages(cx_fragr *r, uint32_t g, uint32_t c, const cx_pq_offset_index *oi,
		   uint32_t p0, uint32_t p1, uint32_t row0, uint32_t rows,
		   uint32_t lo, uint32_t n, cx_decoded *out, cx_err *err)
{
	const cx_pq_leaf *leaf = &r->leaves[c];
	const cx_column *col = &r->schema->columns[c];
	uint64_t	from = (uint64_t) oi->pages[p0].offset;
	size_t		len = (size_t) ((uint64_t) oi->pages[p1].offset +
								(uint64_t) oi->pages[p1].compressed_page_size - from);
	const uint8_t *data;
	cx_decoded	all;
	uint32_t	got = 0;
	size_t		pos = 0;
	cx_code		rc = CX_OK;

	if (fetch(r, from, len, &data, err) != CX_OK)
		return err->code;
	memset(&all, 0, sizeof(all));
	colout_init(&all.top, leaf->list ? 0 : cx_type_width(col->type));
	colout_init(&all.child, cx_type_width(leaf->type));
	if (leaf->list)
		cx_buf_reset(&all.top.offsets);
	while (rc == CX_OK && pos < len)
	{
		uint32_t	page_rows;
		int64_t		levels;
		size_t		used;

		rc = load_page(r, g, c, data + pos, len - pos, &all, &page_rows,
					   &levels, &used, err);
		pos += used;
		got += page_rows;
	}
	if (rc == CX_OK && got != rows)
		rc = corrupt_chunk(err, r, g, c, "pages hold another number of rows than the offset index says");
	if (rc == CX_OK)
	{
		colout_init(&out->top, all.top.width);
		colout_init(&out->child, all.child.width);
		if (leaf->list)
		{
			put_offset(&all.top.offsets, all.child.n);
			cx_buf_reset(&out->top.offsets);
			list_slice(&all, lo - row0, n, out);
			put_offset(&out->top.offsets, out->child.n);
			finish_vec(&out->child, leaf->type, &out->elems);
			out->vec.child = &out->elems;
		}
		else
			colout_slice(&all.top, lo - row0, n, &out->top);
		if (!colout_ok(&out->top) || !colout_ok(&out->child) ||
			!colout_ok(&all.top) || !colout_ok(&all.child))
			rc = nomem(err, r->key);
		else
			finish_vec(&out->top, col->type, &out->vec);
	}
	decoded_free(&all);
	return rc;
}

cx_code
cx_fragr_read_rows(cx_fragr *r, uint32_t group, uint32_t first_row,
				   uint32_t nrows, const bool *want, cx_rowgroup **out,
				   cx_err *err)
{
	uint32_t	ncols = r->schema->ncolumns;
	cx_rowgroup *rg;
	cx_code		rc = CX_OK;

	*out = NULL;
	if (group >= r->ngroups || nrows == 0 ||
		first_row > r->group_rows[group] ||
		nrows > r->group_rows[group] - first_row)
		return cx_err_set(err, CX_ERR_INVALID,
						  "fragment %s has no rows %u..%u in row group %u",
						  r->key, first_row, first_row + nrows, group);
	if (first_row == 0 && nrows == r->group_rows[group])
		return cx_fragr_read_group(r, group, want, out, err);
	if ((rg = rowgroup_new(r, nrows)) == NULL)
		return nomem(err, r->key);
	for (uint32_t c = 0; rc == CX_OK && c < ncols; c++)
	{
		const cx_pq_offset_index *oi = NULL;
		uint32_t	p0,
					p1,
					row0,
					rows;

		if (!wanted(want, c))
			continue;
		rg->present[c] = true;
		rc = chunk_index(r, group, c, &oi, err);
		if (rc != CX_OK)
			break;
		covering_pages(oi, r->group_rows[group], first_row, first_row + nrows,
					   &p0, &p1, &row0, &rows);
		rc = load_pages(r, group, c, oi, p0, p1, row0, rows, first_row, nrows,
						&rg->cols[c], err);
	}
	if (rc != CX_OK)
	{
		cx_rowgroup_free(rg);
		return rc;
	}
	*out = rg;
	return CX_OK;
}
