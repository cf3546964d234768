/*
 * cx_frame.c — the checksummed frame of metadata objects (cx_frame.h).
 */
#include "util/cx_frame.h"

#include <stdlib.h>
#include <string.h>

#include "util/cx_crc32c.h"

size_t
cx_frame_begin(cx_buf *out, const char *magic, uint16_t format)
{
	size_t		start = out->len;

	cx_buf_put(out, magic, 4);
	cx_buf_put_u16(out, format);
	cx_buf_put_u16(out, 0);		/* flags */
	cx_buf_put_u32(out, 0);		/* body length, patched by cx_frame_end */
	return start;
}

cx_code
cx_frame_end(cx_buf *out, size_t start, const char *what, cx_err *err)
{
	size_t		body_len;

	if (!cx_buf_ok(out))
		return cx_err_set(err, CX_ERR_NOMEM, "encoding %s: out of memory", what);
	body_len = out->len - start - CX_FRAME_HEADER_LEN;
	if (body_len > UINT32_MAX)
	{
		out->len = start;
		return cx_err_set(err, CX_ERR_LIMIT,
						  "%s would be %zu bytes, over the 4 GiB limit",
						  what, body_len);
	}
	cx_store_u32(out->data + start + 8, (uint32_t) body_len);
	cx_buf_put_u32(out, cx_crc32c(0, out->data + start, out->len - start));
	if (!cx_buf_ok(out))
		return cx_err_set(err, CX_ERR_NOMEM, "encoding %s: out of memory", what);
	return CX_OK;
}

cx_code
cx_frame_check(const uint8_t *data, size_t len, const char *magic,
			   uint16_t max_format, const char *kind, const char *name,
			   const uint8_t **body, uint32_t *body_len, cx_err *err)
{
	uint64_t	want;
	uint32_t	stored;
	uint32_t	computed;
	uint16_t	format;
	uint16_t	flags;

	if (len < 4 || memcmp(data, magic, 4) != 0)
		return cx_err_set(err, CX_ERR_CORRUPT, "%s %s: not a %s (bad magic)",
						  kind, name, kind);
	if (len < CX_FRAME_HEADER_LEN + CX_FRAME_TRAILER_LEN)
		return cx_err_set(err, CX_ERR_CORRUPT, "%s %s: truncated to %zu bytes",
						  kind, name, len);
	*body_len = cx_load_u32(data + 8);
	want = (uint64_t) CX_FRAME_HEADER_LEN + *body_len + CX_FRAME_TRAILER_LEN;
	if (len < want)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s %s: truncated: %zu bytes, header announces %llu",
						  kind, name, len, (unsigned long long) want);
	if (len > want)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s %s: %llu unexpected bytes after the checksum",
						  kind, name, (unsigned long long) (len - want));
	stored = cx_load_u32(data + len - CX_FRAME_TRAILER_LEN);
	computed = cx_crc32c(0, data, len - CX_FRAME_TRAILER_LEN);
	if (!cx_checksum_matches(stored, computed))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s %s: checksum mismatch (stored %08x, computed %08x)",
						  kind, name, stored, computed);
	format = cx_load_u16(data + 4);
	if (format == 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s %s: invalid format version 0", kind, name);
	if (format > max_format)
		return cx_err_set(err, CX_ERR_UNSUPPORTED,
						  "%s %s: format version %u is newer than this build reads (%u); upgrade ctxstore",
						  kind, name, format, max_format);
	flags = cx_load_u16(data + 6);
	if (flags != 0)
		return cx_err_set(err, CX_ERR_UNSUPPORTED,
						  "%s %s: unknown flags 0x%04x (written by a newer ctxstore?)",
						  kind, name, flags);
	*body = data + CX_FRAME_HEADER_LEN;
	return CX_OK;
}
