/*
 * cx_fragment_read.c — opens fragments and reads row groups column by column.
 *
 * Opening costs one ranged GET of the object's tail (two when the footer is
 * larger than the first guess).  Reading a row group fetches only the wanted
 * chunks, one GET per run of adjacent wanted chunks; a fragment no larger
 * than the tail read is kept in memory whole and costs no further GETs.
 *
 * Nothing read from the store is trusted: the trailer and footer are checked
 * (magic, lengths, CRC, every offset inside the data area, statistics
 * consistent with row counts) before any of it is used, and each chunk's CRC
 * is verified before it is decompressed and decoded.  Every failure is
 * CX_ERR_CORRUPT with a message naming the object (and row group / column).
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "util/cx_crc32c.h"
#include "format/cx_encoding.h"
#include "format/cx_fragment.h"

#define FRAGMENT_FORMAT_VERSION 1
#define MAGIC_BYTES 4
#define TRAILER_BYTES 12
#define TAIL_GUESS (64 * 1024)
/* Smallest directory entry of one chunk: offset, lengths, codec and a
 * statistics record without bounds. */
#define MIN_CHUNK_ENTRY (8 + 4 + 4 + 1 + 17)

struct cx_fragr
{
	cx_objstore *store;
	char	   *key;
	uint64_t	size;
	uint64_t	footer_offset;	/* end of the chunk area */
	cx_schema  *schema;
	uint64_t	rows;
	uint32_t	ngroups;
	uint32_t   *group_rows;
	cx_chunk_meta *chunks;		/* ngroups * ncolumns, group-major */
	cx_buf		io;				/* scratch for ranged reads */
	cx_buf		whole;			/* the entire object, when the first tail
								 * read covered it: small fragments then
								 * cost one GET in all */
	ZSTD_DCtx  *zd;
};

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
stats_problem(const cx_colstats *st, const cx_column *col, uint32_t nrows)
{
	int			width = cx_type_width(col->type);

	if (st->null_count > nrows || st->value_count != nrows - st->null_count)
		return "statistics do not match the row count";
	if ((st->has_min || st->has_max) && !cx_type_has_stats(col->type))
		return "statistics bounds on a type without them";
	if (width > 0 && ((st->has_min && st->min_len != width) ||
					  (st->has_max && st->max_len != width)))
		return "statistics bound has the wrong width";
	return NULL;
}

static const char *
chunk_problem(const cx_fragr *r, const cx_chunk_meta *m)
{
	if (m->codec > 1)
		return "unknown codec";
	if (m->raw_len > CX_CHUNK_RAW_MAX)
		return "chunk size is absurd";
	if (m->stored_len < 4 || (m->codec == 0 && m->stored_len != m->raw_len + 4))
		return "chunk lengths are inconsistent";
	if (m->offset < MAGIC_BYTES || m->offset > r->footer_offset ||
		m->stored_len > r->footer_offset - m->offset)
		return "chunk lies outside the data area";
	return NULL;
}

static void
read_chunk_meta(cx_rd *rd, cx_chunk_meta *m)
{
	m->offset = cx_rd_u64(rd);
	m->stored_len = cx_rd_u32(rd);
	m->raw_len = cx_rd_u32(rd);
	m->codec = cx_rd_u8(rd);
	cx_colstats_decode(rd, &m->stats);
}

static cx_code
parse_group(cx_fragr *r, cx_rd *rd, uint32_t g, cx_err *err)
{
	uint32_t	ncols = r->schema->ncolumns;
	uint32_t	nrows = cx_rd_u32(rd);

	if (nrows == 0)
		return corrupt(err, r->key, "empty row group");
	r->group_rows[g] = nrows;
	for (uint32_t c = 0; c < ncols; c++)
	{
		cx_chunk_meta *m = &r->chunks[(size_t) g * ncols + c];
		const char *why;

		read_chunk_meta(rd, m);
		if (!cx_rd_ok(rd))
			return corrupt(err, r->key, "row-group directory is truncated");
		why = chunk_problem(r, m);
		if (why == NULL)
			why = stats_problem(&m->stats, &r->schema->columns[c], nrows);
		if (why != NULL)
			return corrupt_chunk(err, r, g, c, why);
	}
	r->rows += nrows;
	return CX_OK;
}

static cx_code
parse_footer(cx_fragr *r, const uint8_t *data, size_t len, cx_err *err)
{
	cx_rd		rd;
	uint64_t	rows;
	uint32_t	version;
	size_t		per_group;
	size_t		nchunks;

	cx_rd_init(&rd, data, len);
	version = cx_rd_u32(&rd);
	if (version != FRAGMENT_FORMAT_VERSION)
		return cx_err_set(err, CX_ERR_UNSUPPORTED,
						  "fragment %s has format version %u; this build reads %u",
						  r->key, version, FRAGMENT_FORMAT_VERSION);
	r->schema = cx_schema_decode(&rd);
	if (r->schema == NULL)
		return corrupt(err, r->key, "invalid schema in footer");
	rows = cx_rd_u64(&rd);
	r->ngroups = cx_rd_u32(&rd);
	/* Bound the group count by the bytes present before allocating. */
	per_group = 4 + (size_t) r->schema->ncolumns * MIN_CHUNK_ENTRY;
	if (!cx_rd_ok(&rd) || r->ngroups > cx_rd_left(&rd) / per_group)
		return corrupt(err, r->key, "row-group directory is truncated");
	nchunks = (size_t) r->ngroups * r->schema->ncolumns;
	r->group_rows = calloc(r->ngroups ? r->ngroups : 1, sizeof(uint32_t));
	r->chunks = calloc(nchunks ? nchunks : 1, sizeof(cx_chunk_meta));
	if (r->group_rows == NULL || r->chunks == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory opening fragment %s",
						  r->key);
	for (uint32_t g = 0; g < r->ngroups; g++)
		if (parse_group(r, &rd, g, err) != CX_OK)
			return err->code;
	if (cx_rd_left(&rd) != 0)
		return corrupt(err, r->key, "trailing bytes in footer");
	if (rows != r->rows)
		return corrupt(err, r->key, "row count does not match the row groups");
	return CX_OK;
}

/*
 * Reads the tail and checks the trailer; if the footer did not fit in the
 * tail, reads the whole footer with a second GET.  Then verifies the footer
 * CRC and parses it.  A tail that is the whole object is kept, so the row
 * groups of a small fragment need no further reads.
 */
static cx_code
load_footer(cx_fragr *r, cx_err *err)
{
	size_t		tail = r->size < TAIL_GUESS ? (size_t) r->size : TAIL_GUESS;
	const uint8_t *data;
	const uint8_t *t;
	const uint8_t *footer;
	uint32_t	footer_len;
	uint32_t	crc;

	if (r->size < MAGIC_BYTES + TRAILER_BYTES)
		return corrupt(err, r->key, "object too small to be a fragment");
	if (fetch(r, r->size - tail, tail, &data, err) != CX_OK)
		return err->code;
	if (tail == r->size)
	{
		if (memcmp(data, CX_FRAGMENT_MAGIC, MAGIC_BYTES) != 0)
			return corrupt(err, r->key, "bad header magic");
		r->whole = r->io;
		cx_buf_init(&r->io);
	}
	t = data + tail - TRAILER_BYTES;
	if (memcmp(t + 8, CX_FRAGMENT_MAGIC, MAGIC_BYTES) != 0)
		return corrupt(err, r->key, "bad trailer magic");
	footer_len = cx_load_u32(t);
	crc = cx_load_u32(t + 4);
	if (footer_len > r->size - MAGIC_BYTES - TRAILER_BYTES)
		return corrupt(err, r->key, "footer length exceeds the object");
	r->footer_offset = r->size - TRAILER_BYTES - footer_len;
	if ((size_t) footer_len + TRAILER_BYTES <= tail)
		footer = t - footer_len;
	else if (fetch(r, r->footer_offset, footer_len, &footer, err) != CX_OK)
		return err->code;
	if (cx_crc32c(0, footer, footer_len) != crc)
		return corrupt(err, r->key, "footer checksum mismatch");
	return parse_footer(r, footer, footer_len, err);
}

cx_code
cx_fragr_open(cx_objstore *s, const char *key, uint64_t size,
			  cx_fragr **out, cx_err *err)
{
	cx_fragr   *r;

	*out = NULL;
	r = calloc(1, sizeof(cx_fragr));
	if (r == NULL || (r->key = cx_strdup(key)) == NULL ||
		(r->zd = ZSTD_createDCtx()) == NULL)
	{
		cx_fragr_close(r);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory opening fragment %s",
						  key);
	}
	r->store = s;
	r->size = size;
	cx_buf_init(&r->io);
	if ((size == 0 && cx_obj_head(s, key, &r->size, err) != CX_OK) ||
		load_footer(r, err) != CX_OK)
	{
		cx_fragr_close(r);
		return err->code;
	}
	/* The tail buffer is not needed once parsed; open readers may be cached. */
	cx_buf_free(&r->io);
	*out = r;
	return CX_OK;
}

void
cx_fragr_close(cx_fragr *r)
{
	if (r == NULL)
		return;
	cx_schema_free(r->schema);
	free(r->group_rows);
	free(r->chunks);
	cx_buf_free(&r->io);
	cx_buf_free(&r->whole);
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
 * Row groups
 * --------------------------------------------------------------------- */

/* Decompresses a zstd chunk into payload (raw_len bytes); returns what is
 * wrong, or NULL. */
static const char *
decompress(cx_fragr *r, const cx_chunk_meta *m, const uint8_t *src, size_t n,
		   uint8_t *payload)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(src, n);
	size_t		got;

	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != m->raw_len)
		return "compressed frame has the wrong size";
	got = ZSTD_decompressDCtx(r->zd, payload, m->raw_len, src, n);
	if (ZSTD_isError(got) || got != m->raw_len)
		return "decompression failed";
	return NULL;
}

/* Verifies, decompresses and decodes one chunk's stored bytes into out. */
static cx_code
load_chunk(cx_fragr *r, uint32_t g, uint32_t c, const uint8_t *stored,
		   cx_decoded *out, cx_err *err)
{
	const cx_chunk_meta *m = cx_fragr_chunk(r, g, c);
	size_t		n = m->stored_len - 4;
	uint8_t    *payload;
	const char *why;

	if (cx_crc32c(0, stored, n) != cx_load_u32(stored + n))
		return corrupt_chunk(err, r, g, c, "checksum mismatch");
	payload = malloc(m->raw_len ? m->raw_len : 1);
	if (payload == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading fragment %s",
						  r->key);
	why = NULL;
	if (m->codec == 0)
		memcpy(payload, stored, n);
	else
		why = decompress(r, m, stored, n, payload);
	if (why != NULL)
	{
		free(payload);
		return corrupt_chunk(err, r, g, c, why);
	}
	if (!cx_chunk_decode(&r->schema->columns[c], r->group_rows[g], payload,
						 m->raw_len, out, &why))
		return corrupt_chunk(err, r, g, c, why);
	return CX_OK;
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
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading fragment %s",
						  r->key);
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
			cx_decoded_free(&g->cols[c]);
	free(g->cols);
	free(g->present);
	free(g);
}
