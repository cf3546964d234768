/*
 * cx_encoding.h — private to the fragment writer and reader: column-chunk
 * builders and decoders, and statistics accumulation.
 *
 * A chunk payload (before compression) is, for n rows of one type:
 *   u32 n, u32 null_count, [null bitmap if null_count > 0], values
 * where values are n fixed-width little-endian values, or u32 offsets[n+1]
 * plus bytes, or for lists u32 element offsets[n+1] followed by a nested
 * chunk payload of the elements.  docs/FORMAT.md ("Chunk payload") has the details.
 */
#ifndef CX_ENCODING_H
#define CX_ENCODING_H

#include "util/cx_buf.h"
#include "format/cx_fragment.h"
#include "format/cx_schema.h"

/*
 * Largest raw (uncompressed) chunk payload, written or accepted.  PostgreSQL
 * values are at most 1 GiB; the writer cuts a row group before a chunk would
 * pass this, and the reader refuses larger raw_len values so a corrupt footer
 * cannot make it allocate absurd amounts.
 */
#define CX_CHUNK_RAW_MAX ((uint64_t) 1 << 30 | (uint64_t) 64 << 20)

/* Largest accepted max_group_bytes option. */
#define CX_GROUP_BYTES_MAX ((uint64_t) 1 << 30)

/* ---- statistics ---- */

/* Accumulates a chunk's statistics one value at a time. */
typedef struct cx_statacc
{
	cx_colstats st;
	uint8_t		type;
	bool		max_truncated;	/* st.max holds a 64-byte prefix of the max */
	bool		saw_nan;		/* PostgreSQL sorts NaN above all: no max */
} cx_statacc;

void		cx_statacc_init(cx_statacc *acc, cx_type type);
void		cx_statacc_add_null(cx_statacc *acc);
/* val is the value's on-disk bytes (little-endian fixed width, or the bytes
 * of a variable-width value). */
void		cx_statacc_add(cx_statacc *acc, const uint8_t *val, size_t len);
void		cx_statacc_finish(const cx_statacc *acc, cx_colstats *out);

/* Orders two on-disk values of a type with statistics (NaN excluded). */
int			cx_stats_cmp(cx_type type, const uint8_t *a, size_t alen,
						 const uint8_t *b, size_t blen);

/* ---- values ---- */

/* Encodes a fixed-width datum as its on-disk little-endian bytes. */
void		cx_fixed_encode(cx_type type, const cx_datum *d, uint8_t *out);

/* ---- building chunks (writer) ---- */

typedef struct cx_colbuild
{
	uint8_t		type;
	uint8_t		elem_type;		/* lists */
	uint8_t		width;
	uint32_t	nrows;
	uint32_t	null_count;
	cx_buf		nulls;			/* bitmap, one bit per row so far */
	cx_buf		values;			/* fixed-width values */
	cx_buf		offsets;		/* u32 LE offsets, nrows + 1 of them */
	cx_buf		bytes;			/* variable-width data */
	struct cx_colbuild *elems;	/* list elements */
	bool		track_stats;
	cx_statacc	stats;
} cx_colbuild;

/* NULL on allocation failure. */
cx_colbuild *cx_colbuild_new(const cx_column *col);
void		cx_colbuild_free(cx_colbuild *b);
/* Empties the builder for the next row group (keeps its capacity). */
void		cx_colbuild_reset(cx_colbuild *b);

/*
 * Checks a value for the builder's type and sets *size to an upper bound of
 * the raw bytes appending it adds.  CX_ERR_INVALID for a malformed datum
 * (bytes or items pointer missing), CX_ERR_LIMIT for one too big to store.
 */
cx_code		cx_colbuild_measure(const cx_colbuild *b, const cx_datum *d,
								uint64_t *size, cx_err *err);
/* Appends a measured value.  false on allocation failure. */
bool		cx_colbuild_append(cx_colbuild *b, const cx_datum *d);
/* Exact raw payload size the builder would encode to now. */
uint64_t	cx_colbuild_raw_size(const cx_colbuild *b);
/* Appends the raw chunk payload to out (check cx_buf_ok). */
void		cx_colbuild_encode(const cx_colbuild *b, cx_buf *out);

/* ---- decoding chunks (reader) ---- */

/* One decoded chunk.  vec (and elems, for lists) point into payload and
 * into the offset arrays; all four allocations belong to this struct, which
 * must not move once decoded (vec.child points at elems). */
typedef struct cx_decoded
{
	cx_colvec	vec;
	cx_colvec	elems;
	uint8_t    *payload;
	uint32_t   *offsets;
	uint32_t   *elem_offsets;
} cx_decoded;

/*
 * Decodes nrows rows of col from payload (malloc'd, ownership passes to out
 * in every case).  On a malformed payload returns false with *why set to a
 * static description; out must still be released with cx_decoded_free().
 */
bool		cx_chunk_decode(const cx_column *col, uint32_t nrows,
							uint8_t *payload, size_t len, cx_decoded *out,
							const char **why);
void		cx_decoded_free(cx_decoded *d);

#endif							/* CX_ENCODING_H */
