/*
 * cx_fragment_entry.c — encoding and decoding manifest fragment entries
 * (cx_fragment_entry.h).
 */
#include "table/cx_fragment_entry.h"

#include <stdlib.h>

#include "util/cx_frame.h"

static bool
footer_fits(const cx_fragment_info *fi)
{
	return fi->footer_offset <= fi->size &&
		fi->footer_len <= fi->size - fi->footer_offset;
}

cx_code
cx_fragentry_check(const cx_fragment_info *fi, cx_err *err)
{
	if (fi->path == NULL)
		return cx_err_set(err, CX_ERR_INVALID, "fragment entry has no path");
	if (cx_key_validate(fi->path, err) != CX_OK)
		return err->code;
	if (!footer_fits(fi) || (fi->ncolumns > 0 && fi->stats == NULL))
		return cx_err_set(err, CX_ERR_INVALID,
						  "fragment %s: footer or statistics inconsistent with its size",
						  fi->path);
	return CX_OK;
}

void
cx_fragentry_encode(const cx_fragment_info *fi, cx_buf *out)
{
	cx_buf_put_str16(out, fi->path);
	cx_buf_put_u64(out, fi->size);
	cx_buf_put_u64(out, fi->rows);
	cx_buf_put_u64(out, fi->footer_offset);
	cx_buf_put_u32(out, fi->footer_len);
	cx_buf_put_u32(out, fi->footer_crc);
	cx_buf_put_u32(out, fi->ncolumns);
	for (uint32_t c = 0; c < fi->ncolumns; c++)
		cx_colstats_encode(&fi->stats[c], out);
}

bool
cx_fragentry_decode(cx_rd *r, cx_fragment_info *fi)
{
	cx_err		ignored;

	fi->path = cx_rd_str16(r);
	fi->size = cx_rd_u64(r);
	fi->rows = cx_rd_u64(r);
	fi->footer_offset = cx_rd_u64(r);
	fi->footer_len = cx_rd_u32(r);
	fi->footer_crc = cx_rd_u32(r);
	fi->ncolumns = cx_rd_u32(r);
	if (!cx_rd_ok(r))
		return true;
	if (cx_key_validate(fi->path, &ignored) != CX_OK || !footer_fits(fi) ||
		fi->ncolumns > cx_rd_left(r))
	{
		r->bad = true;
		return true;
	}
	if (fi->ncolumns == 0)
		return true;
	fi->stats = calloc(fi->ncolumns, sizeof(cx_colstats));
	if (fi->stats == NULL)
		return false;
	for (uint32_t c = 0; c < fi->ncolumns && cx_rd_ok(r); c++)
		cx_colstats_decode(r, &fi->stats[c]);
	return true;
}
