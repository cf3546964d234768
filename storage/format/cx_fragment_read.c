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
		(r->zd = ZSTD_createDCtx()) == NULL)
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
	cx_schema_free(r->schema);
	free(r->leaves);
	free(r->group_rows);
	free(r->chunks);
	cx_buf_free(&r->io);
	cx_buf_free(&r->whole);
	cx_buf_free(&r->page);
	cx_buf_free(&r->rep);
	cx_buf_free(&r->def);
	ZSTD_freeDCtx(r->zd);
	free(r->key);
	free(r);
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
	cx_buf_reserve(&o->data, 1);
	if (width == 0)
		cx_buf_put(&o->offsets, &zero, sizeof(zero));
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

/* Starts entry n: its null bit (clear). */
static void
colout_next(colout *o)
{
	if (o->n % 8 == 0)
		cx_buf_put_u8(&o->nulls, 0);
	o->n++;
}

static void
put_offset(cx_buf *offsets, size_t v)
{
	uint32_t	u = (uint32_t) v;

	cx_buf_put(offsets, &u, sizeof(u));
}

/* Ends a var-width entry (its bytes appended to data). */
static void
colout_end_var(colout *o)
{
	if (o->width == 0)
		put_offset(&o->offsets, o->data.len);
}

static void
colout_null(colout *o)
{
	colout_next(o);
	if (cx_buf_ok(&o->nulls))
		o->nulls.data[(o->n - 1) / 8] |= (uint8_t) (1u << ((o->n - 1) % 8));
	o->nnull++;
	if (o->width > 0)
		cx_buf_grow(&o->data, (size_t) o->width);
	colout_end_var(o);
}

/* One decoded page: its levels and values. */
typedef struct page_in
{
	const cx_pq_leaf *leaf;
	size_t		nlevels;
	const uint8_t *rep;			/* NULL: all 0 */
	const uint8_t *def;			/* NULL: all max_def */
	cx_rd		values;
	uint32_t	nbools;			/* booleans taken so far */
	size_t		bool_bytes;
} page_in;

/* Appends the next value of the page to o. */
static bool
take_value(page_in *p, colout *o, const char **why)
{
	colout_next(o);
	if (p->leaf->ptype == CX_PQ_BOOLEAN)
	{
		const uint8_t *bits = p->values.p + p->values.pos;
		uint32_t	i = p->nbools++;

		if (i / 8 >= cx_rd_left(&p->values))
		{
			*why = "values are truncated";
			return false;
		}
		cx_buf_put_u8(&o->data, (bits[i / 8] >> (i % 8)) & 1);
		return true;
	}
	if (!cx_pq_get_plain(p->leaf, &p->values, &o->data, why))
		return false;
	colout_end_var(o);
	return true;
}

static bool
decode_flat(page_in *p, colout *o, uint32_t *rows, const char **why)
{
	for (size_t k = 0; k < p->nlevels; k++)
	{
		if (p->def != NULL && p->def[k] == 0)
			colout_null(o);
		else if (!take_value(p, o, why))
			return false;
	}
	*rows = (uint32_t) p->nlevels;
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
			colout_next(top);
			put_offset(&top->offsets, child->n);
			(*rows)++;
			if (def == 0)
			{
				top->nulls.data[(top->n - 1) / 8] |= (uint8_t) (1u << ((top->n - 1) % 8));
				top->nnull++;
			}
			open = def >= 2;
			if (def < 2 || !cx_buf_ok(&top->nulls))
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
	p.nlevels = nlevels;
	cx_rd_init(&rd, body, len);
	if (!decode_levels(r, &p, &rd, why))
		return false;
	cx_rd_init(&p.values, rd.p + rd.pos, cx_rd_left(&rd));
	ok = leaf->list ? decode_list(&p, &d->top, &d->child, rows, why) :
		decode_flat(&p, &d->top, rows, why);
	if (!ok)
		return false;
	if (leaf->ptype == CX_PQ_BOOLEAN)
		(void) cx_rd_take(&p.values, ((size_t) p.nbools + 7) / 8);
	if (cx_rd_left(&p.values) != 0)
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
		(uint32_t) crc32(0L, page, (uInt) h->compressed_page_size) != h->crc)
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
		cx_buf_reset(&d->top.offsets);
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
	rg = calloc(1, sizeof(cx_rowgroup));
	if (rg == NULL ||
		(rg->present = calloc(ncols ? ncols : 1, sizeof(bool))) == NULL ||
		(rg->cols = calloc(ncols ? ncols : 1, sizeof(cx_decoded))) == NULL)
	{
		cx_rowgroup_free(rg);
		return nomem(err, r->key);
	}
	rg->nrows = r->group_rows[group];
	rg->ncols = ncols;
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
