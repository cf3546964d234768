/*
 * cx_frame.h — the checksummed frame around every ctxstore metadata object,
 * and the small decoding helpers their bodies share.
 *
 * Frame (docs/FORMAT.md, "Manifest object"; every format version keeps it):
 *
 *   4 bytes   magic        identifies the kind of object ("CXM1", "CXS1", ...)
 *   u16       format       format version of the body, >= 1
 *   u16       flags        0
 *   u32       body_len
 *   body_len  body
 *   u32       crc          CRC-32C of everything before it
 *
 * Because the frame never changes, a reader verifies the checksum before it
 * believes the format version: damage is always "corrupt", and only an intact
 * object can be "too new".
 */
#ifndef CX_FRAME_H
#define CX_FRAME_H

#include <stdint.h>

#include "util/cx_buf.h"
#include "ctxstore/error.h"

#define CX_FRAME_HEADER_LEN 12
#define CX_FRAME_TRAILER_LEN 4

/* Appends the header (body length still 0) to out; returns where the frame
 * starts, for cx_frame_end(). */
size_t		cx_frame_begin(cx_buf *out, const char *magic, uint16_t format);

/* After the body was appended: patches its length and appends the CRC.
 * what names the object in messages ("shard manifest version 7").
 * CX_ERR_NOMEM if out failed, CX_ERR_LIMIT over 4 GiB (out is then cut back
 * to start). */
cx_code		cx_frame_end(cx_buf *out, size_t start, const char *what,
						 cx_err *err);

/*
 * Checks the frame of data[0 .. len): magic, exact length, CRC, then format
 * (1 .. max_format) and flags (0).  kind and name make the messages
 * ("shard manifest <uri>/<key>: checksum mismatch ...").  On success *body
 * points into data.
 */
cx_code		cx_frame_check(const uint8_t *data, size_t len, const char *magic,
						   uint16_t max_format, const char *kind,
						   const char *name, const uint8_t **body,
						   uint32_t *body_len, cx_err *err);


#endif							/* CX_FRAME_H */
