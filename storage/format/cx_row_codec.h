/*
 * cx_rowcodec.h — a compact row-at-a-time encoding of cx_datum rows.
 *
 * Rows travel in this form from a backend's transaction buffer to the writer
 * worker (through dynamic shared memory), and back out of the buffer when a
 * transaction reads its own pending rows.  It is the same schema-driven
 * layout for every row, so a batch is just rows laid end to end:
 *
 *   row   := null bitmap (ceil(ncolumns / 8) bytes, bit set = NULL)
 *            then, for each non-NULL column in schema order, its value
 *   value := fixed-width types: their width in little-endian bytes
 *            variable-width types: u32 length + bytes
 *            lists: u32 n, element null bitmap (ceil(n / 8) bytes),
 *                   then each non-NULL element as above
 *
 * Not an on-disk format by itself: the WAL (a later module) embeds batches,
 * and docs/FORMAT.md describes it there.
 */
#ifndef CX_ROWCODEC_H
#define CX_ROWCODEC_H

#include "util/cx_buf.h"
#include "ctxstore/error.h"
#include "format/cx_schema.h"

/* Appends one row (schema->ncolumns values) to out. */
void		cx_row_encode(const cx_schema *schema, const cx_datum *values,
						  cx_buf *out);

/*
 * Decodes the next row from r into values[schema->ncolumns].  Variable-width
 * values point into r's bytes.  List values are returned in v.list form with
 * items allocated from *scratch (a cx_buf reused across rows: the items stay
 * valid until the next call with the same scratch).  CX_ERR_CORRUPT if the
 * bytes do not hold a well-formed row.
 */
cx_code		cx_row_decode(const cx_schema *schema, cx_rd *r, cx_datum *values,
						  cx_buf *scratch, cx_err *err);

/* Whether rows holds exactly nrows well-formed rows of schema (decoding
 * each); CX_ERR_CORRUPT naming the first bad one otherwise. */
cx_code		cx_rows_check(const cx_schema *schema, const uint8_t *rows,
						  size_t len, uint64_t nrows, cx_err *err);

#endif							/* CX_ROWCODEC_H */
