/*
 * cx_encoding.h — private to the fragment writer and reader: column builders
 * (a row group buffered in the engine's value form), engine fixed-width
 * values, and statistics accumulation.
 */
#ifndef CX_ENCODING_H
#define CX_ENCODING_H

#include "util/cx_buf.h"
#include "format/cx_fragment.h"
#include "format/cx_schema.h"

/*
 * Largest raw (uncompressed) column chunk, written or accepted.  PostgreSQL
 * values are at most 1 GiB; the writer cuts a row group before a chunk would
 * pass this, and the reader refuses pages and chunks that claim more, so a
 * corrupt footer cannot make it allocate absurd amounts.
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
/* Adds what from (of the same type) accumulated to acc: acc then finishes
 * as if it had seen from's values too. */
void		cx_statacc_merge(cx_statacc *acc, const cx_statacc *from);

/* Orders two on-disk values of a type with statistics (NaN excluded). */
int			cx_stats_cmp(cx_type type, const uint8_t *a, size_t alen,
						 const uint8_t *b, size_t blen);
/* The same order over every value, NaN included: PostgreSQL's, where NaN
 * equals NaN and sorts above every number (merges sort by it). */
int			cx_value_cmp(cx_type type, const uint8_t *a, size_t alen,
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
/* Bytes the builder holds (an estimate of the raw chunk size).  Inline: the
 * fragment writer asks it of every column for every row it appends. */
static inline uint64_t
cx_colbuild_raw_size(const cx_colbuild *b)
{
	uint64_t	n = b->null_count > 0 ? b->nulls.len : 0;

	n += b->values.len + b->offsets.len + b->bytes.len;
	if (b->elems != NULL)
		n += cx_colbuild_raw_size(b->elems);
	return n;
}
/* Whether row i is non-NULL, and if so its value's engine bytes (fixed
 * width little-endian, or a var-width value's bytes; not for lists). */
bool		cx_colbuild_value(const cx_colbuild *b, uint32_t i,
							  const uint8_t **p, size_t *len);
/* Row i of a list builder holds elements [*start, *end) of b->elems. */
void		cx_colbuild_items(const cx_colbuild *b, uint32_t i,
							  uint32_t *start, uint32_t *end);

#endif							/* CX_ENCODING_H */
