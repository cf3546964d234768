/*
 * cx_fragment.h — fragments: Parquet files written and read by the engine.
 *
 * A fragment is one immutable Parquet object holding rows of one schema,
 * split into row groups; each row group holds one column chunk per column,
 * cut into zstd-compressed data pages of PLAIN values with definition (and
 * for lists repetition) levels and a CRC each.  The offset index of every
 * chunk follows the chunks, then the FileMetaData footer: the Parquet schema
 * with field ids, the engine schema as key-value metadata, row groups and
 * per-chunk statistics.  Readers fetch the footer first, then only the
 * chunks of the columns they need, one row group at a time.  docs/FORMAT.md
 * ("Fragments") is the byte-level specification.
 */
#ifndef CX_FRAGMENT_H
#define CX_FRAGMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "ctxstore/scan.h"

#define CX_STATS_MAX_BYTES 64	/* longest min/max kept for var-width types */

/* Statistics of one column over a chunk (or a whole fragment). */
typedef struct cx_colstats
{
	uint64_t	null_count;
	uint64_t	value_count;	/* non-null values */
	bool		has_min;
	bool		has_max;
	/* Encoded as the value's on-disk bytes: little-endian fixed width, or
	 * the (possibly truncated) bytes of a variable-width value.  A truncated
	 * min is a prefix (still a lower bound); a max is never truncated: if the
	 * largest value is longer than CX_STATS_MAX_BYTES has_max is false. */
	uint8_t		min_len;
	uint8_t		max_len;
	uint8_t		min[CX_STATS_MAX_BYTES];
	uint8_t		max[CX_STATS_MAX_BYTES];
	/* The column's field id, as manifest entries record it (0: unknown);
	 * not part of cx_colstats_encode(). */
	int32_t		field_id;
} cx_colstats;

/* Merge b into a (the union of the two value sets). */
void		cx_colstats_merge(cx_colstats *a, const cx_colstats *b, cx_type type);
void		cx_colstats_encode(const cx_colstats *st, cx_buf *out);
void		cx_colstats_decode(cx_rd *r, cx_colstats *st);

/* --------------------------------------------------------------------------
 * Writer
 * -------------------------------------------------------------------------- */

/* What a finished fragment looks like, for the manifest. */
typedef struct cx_fragment_info
{
	char	   *path;			/* key relative to the store root, malloc'd */
	uint64_t	size;			/* bytes */
	uint64_t	rows;
	uint64_t	footer_offset;	/* where the FileMetaData starts */
	uint32_t	footer_len;		/* FileMetaData, its u32 length and "PAR1" */
	uint32_t	footer_crc;		/* CRC-32C of those footer_len bytes */
	uint32_t	ncolumns;
	cx_colstats *stats;			/* ncolumns entries, malloc'd */
	char	   *origin_shard;	/* base fragments: the shard whose rows it
								 * holds (malloc'd; NULL: unknown) */
} cx_fragment_info;

void		cx_fragment_info_free(cx_fragment_info *fi);	/* frees members */
/* The bytes fi's members hold (not fi itself). */
size_t		cx_fragment_info_memory(const cx_fragment_info *fi);
cx_code		cx_fragment_info_copy(cx_fragment_info *dst,
								  const cx_fragment_info *src, cx_err *err);

typedef struct cx_fragw cx_fragw;

/* Starts a fragment under key (e.g. from cx_fragment_new_key()); the object
 * is streamed with put-if-absent and published by cx_fragw_finish(). */
cx_code		cx_fragw_open(cx_objstore *s, const char *key,
						  const cx_schema *schema, const cx_fragw_options *opt,
						  cx_fragw **out, cx_err *err);
/* values has schema->ncolumns entries, in schema order. */
cx_code		cx_fragw_append(cx_fragw *w, const cx_datum *values, cx_err *err);
uint64_t	cx_fragw_rows(const cx_fragw *w);
/* Raw bytes of the row group buffered in memory (not yet uploaded); bounded
 * by about one row group (rows_per_group / max_group_bytes). */
uint64_t	cx_fragw_buffered_bytes(const cx_fragw *w);
/* Writes the footer and publishes the object; info receives its description
 * (caller frees with cx_fragment_info_free).  Frees w in every case. */
cx_code		cx_fragw_finish(cx_fragw *w, cx_fragment_info *info, cx_err *err);
/* Discards an unfinished fragment; frees w. */
void		cx_fragw_abort(cx_fragw *w);

/* A fresh random fragment key (cx_layout_fragment); keysize is at least
 * CX_FRAGMENT_KEY_SIZE. */
cx_code		cx_fragment_new_key(char *key, size_t keysize, cx_err *err);

/* --------------------------------------------------------------------------
 * Reader
 * -------------------------------------------------------------------------- */

/*
 * A decoded column chunk.  Memory belongs to the row group it came from.
 *   nulls:   bitmap, bit (i % 8) of byte (i / 8) set = row i is NULL;
 *            NULL pointer when the chunk has no NULLs.
 *   fixed:   nrows * width bytes (NULL rows hold zeroes) for fixed types.
 *   offsets: nrows + 1 entries for variable-width types (into bytes) and for
 *            lists (into the elements of child).
 */
struct cx_colvec
{
	uint8_t		type;
	uint8_t		width;
	uint32_t	nrows;
	const uint8_t *nulls;
	const uint8_t *fixed;
	const uint32_t *offsets;
	const uint8_t *bytes;
	cx_colvec  *child;
};

static inline bool
cx_colvec_isnull(const cx_colvec *v, uint32_t i)
{
	return v->nulls != NULL && (v->nulls[i >> 3] >> (i & 7)) & 1;
}


/* One column chunk, from the footer. */
typedef struct cx_chunk_meta
{
	uint64_t	offset;			/* of its first page in the object */
	uint64_t	stored_len;		/* its pages as stored, headers included */
	uint64_t	raw_len;		/* the same uncompressed */
	int64_t		num_values;		/* levels: rows, or list elements */
	uint64_t	index_offset;	/* its OffsetIndex */
	uint32_t	index_len;
	/* Engine domain.  List chunks carry none: zero counts, no bounds. */
	cx_colstats stats;
} cx_chunk_meta;

typedef struct cx_fragr cx_fragr;

/* Opens a fragment a manifest lists: one ranged read of exactly its footer
 * (of the whole object when that is small), whose CRC-32C must be
 * fi->footer_crc. */
cx_code		cx_fragr_open_entry(cx_objstore *s, const cx_fragment_info *fi,
								cx_fragr **out, cx_err *err);
/* Opens a fragment without a manifest entry (tools): one ranged read of the
 * tail for the footer (two if the footer is larger than the first guess).
 * size is the object size when known, or 0 to ask the store. */
cx_code		cx_fragr_open(cx_objstore *s, const char *key, uint64_t size,
						  cx_fragr **out, cx_err *err);
void		cx_fragr_close(cx_fragr *r);
const char *cx_fragr_key(const cx_fragr *r);
const cx_schema *cx_fragr_schema(const cx_fragr *r);
uint64_t	cx_fragr_rows(const cx_fragr *r);
uint32_t	cx_fragr_num_groups(const cx_fragr *r);
uint32_t	cx_fragr_group_rows(const cx_fragr *r, uint32_t group);
const cx_chunk_meta *cx_fragr_chunk(const cx_fragr *r, uint32_t group,
									uint32_t column);

/* Reads row group `group`, fetching and decoding only the columns whose
 * want[] entry is true (want == NULL: all).  Adjacent wanted chunks are read
 * with one ranged GET.  Columns not wanted come back NULL from
 * cx_rowgroup_column(). */
cx_code		cx_fragr_read_group(cx_fragr *r, uint32_t group, const bool *want,
								cx_rowgroup **out, cx_err *err);
/*
 * Reads rows [first_row, first_row + nrows) of row group `group`, as
 * cx_fragr_read_group() does but fetching, per wanted column, only the pages
 * that hold them (one ranged GET each, found through the chunk's offset
 * index, which the reader loads once).  Row 0 of the result is first_row.
 * Point lookups use it: a page is about 64 KiB, a chunk many times that.
 */
cx_code		cx_fragr_read_rows(cx_fragr *r, uint32_t group, uint32_t first_row,
							   uint32_t nrows, const bool *want,
							   cx_rowgroup **out, cx_err *err);
uint32_t	cx_rowgroup_rows(const cx_rowgroup *g);

/* One data page of a column chunk, as ctxstore-inspect shows it. */
typedef struct cx_page_info
{
	uint64_t	offset;			/* of its header in the object */
	uint32_t	header_len;
	uint32_t	stored_len;		/* compressed page, header excluded */
	uint32_t	raw_len;
	uint32_t	num_values;		/* levels */
	uint64_t	first_row;		/* from the offset index */
	uint32_t	crc;			/* CRC-32 the header records */
	bool		crc_ok;			/* and the page bytes have */
} cx_page_info;

/*
 * Lists the pages of chunk (group, column) into *pages (malloc'd, *npages
 * entries; the caller frees it whatever the outcome), reading the chunk and
 * its offset index.  A page whose CRC does
 * not match is listed with crc_ok false; a page header that does not decode,
 * or an offset index that does not describe the pages, is CX_ERR_CORRUPT.
 */
cx_code		cx_fragr_chunk_pages(cx_fragr *r, uint32_t group, uint32_t column,
								 cx_page_info **pages, uint32_t *npages,
								 cx_err *err);
void		cx_rowgroup_free(cx_rowgroup *g);

#endif							/* CX_FRAGMENT_H */
