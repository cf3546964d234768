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
	for (uint32_t c = 0; c < fi->ncolumns; c++)
		cx_buf_put_u32(out, (uint32_t) fi->stats[c].field_id);
}

bool
cx_fragentry_decode(cx_rd *r, bool field_ids, cx_fragment_info *fi)
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
	for (uint32_t c = 0; field_ids && c < fi->ncolumns && cx_rd_ok(r); c++)
		fi->stats[c].field_id = (int32_t) cx_rd_u32(r);
	return true;
}

void
cx_fragentry_set_field_ids(cx_fragment_info *fi, const cx_schema *written)
{
	for (uint32_t c = 0; c < fi->ncolumns && c < written->ncolumns; c++)
		fi->stats[c].field_id = written->columns[c].field_id;
}

/* Index of the entry's column with that field id; `fallback` when the entry
 * records no field ids. */
static int64_t
stats_index(const cx_fragment_info *fi, int32_t field_id, int64_t fallback)
{
	if (fi->ncolumns == 0 || fi->stats[0].field_id == 0)
		return fallback >= 0 && fallback < fi->ncolumns ? fallback : -1;
	for (uint32_t c = 0; c < fi->ncolumns; c++)
		if (fi->stats[c].field_id == field_id)
			return c;
	return -1;
}

const cx_colstats *
cx_fragment_stats(const cx_fragment_info *fi, const cx_schema *table,
				  uint32_t column)
{
	const cx_column *tc = &table->columns[column];
	int64_t		i = stats_index(fi, tc->field_id, column);
	const cx_colstats *st;
	int			width = cx_type_width((cx_type) tc->type);

	if (i < 0)
		return NULL;
	st = &fi->stats[i];
	/* Widening changes only fixed widths: a bound of another width is of
	 * the narrower stored type. */
	if (width > 0 && ((st->has_min && st->min_len != width) ||
					  (st->has_max && st->max_len != width)))
		return NULL;
	return st;
}

const cx_colstats *
cx_fragment_hidden_stats(const cx_fragment_info *fi, int32_t field_id)
{
	int64_t		last = (int64_t) fi->ncolumns - 1;
	int64_t		i = stats_index(fi, field_id,
								field_id == CX_FIELD_ID_COMMIT_TS ? last - 1 : last);

	return i >= 0 ? &fi->stats[i] : NULL;
}

bool
cx_fragment_may_have_tombstones(const cx_fragment_info *fi)
{
	const cx_colstats *st = cx_fragment_hidden_stats(fi, CX_FIELD_ID_TOMBSTONE);

	if (st == NULL)
		return true;
	if (st->value_count == 0)
		return false;
	/* A bool's max is one byte, 0 or 1. */
	return !(st->has_max && st->max_len == 1 && st->max[0] == 0);
}
