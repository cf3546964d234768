/*
 * cx_row_codec.h — a compact row-at-a-time encoding of cx_datum rows.
 *
 * Rows travel in this form from a backend's transaction buffer to the writer
 * worker (through dynamic shared memory), and back out of the buffer when a
 * transaction reads its own pending rows.  It is the same schema-driven
 * layout for every row, so a batch is just rows laid end to end:
 *
 *   row   := kind (u8, cx_row_kind)
 *            null bitmap (ceil(ncolumns / 8) bytes, bit set = NULL)
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

#include "format/cx_schema.h"

/* Whether rows holds exactly nrows well-formed rows of schema (decoding
 * each); CX_ERR_CORRUPT naming the first bad one otherwise. */
cx_code		cx_rows_check(const cx_schema *schema, const uint8_t *rows,
						  size_t len, uint64_t nrows, cx_err *err);

/* The value cx_datum_key_bytes() bytes hold (a variable-width one points into them);
 * CX_ERR_CORRUPT if a fixed-width type's bytes have the wrong length. */
cx_code		cx_value_from_bytes(cx_type type, const uint8_t *p, size_t len,
								cx_datum *d, cx_err *err);

#endif							/* CX_ROWCODEC_H */
