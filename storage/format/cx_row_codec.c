/*
 * cx_row_codec.c — row-at-a-time encoding of cx_datum rows (cx_row_codec.h).
 *
 * The decoder is fed bytes that crossed a process boundary (dynamic shared
 * memory) and, later, bytes read back from a WAL object, so it trusts
 * nothing: every length is checked against what is left, booleans must be 0
 * or 1, and unused bitmap bits must be clear.  Anything else is reported as
 * CX_ERR_CORRUPT rather than decoded into plausible-looking garbage.
 */
#include "format/cx_row_codec.h"

#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"

#define BITMAP_BYTES(n) (((size_t) (n) + 7) / 8)

static inline bool
bit_is_set(const uint8_t *bitmap, uint32_t i)
{
	return (bitmap[i >> 3] >> (i & 7)) & 1;
}

/* Appends a zeroed null bitmap of n bits; false if out has failed. */
static bool
put_bitmap(cx_buf *out, uint32_t n)
{
	if (n > 0)
		cx_buf_grow(out, BITMAP_BYTES(n));
	return cx_buf_ok(out);
}

/* ---- encoding ---- */

/* Appends a fixed-width value as its little-endian bytes. */
static void
encode_fixed(cx_type type, const cx_datum *d, cx_buf *out)
{
	uint32_t	u32;
	uint64_t	u64;

	switch (type)
	{
		case CX_T_BOOL:
			cx_buf_put_u8(out, d->v.b ? 1 : 0);
			break;
		case CX_T_INT16:
			cx_buf_put_u16(out, (uint16_t) d->v.i16);
			break;
		case CX_T_INT32:
		case CX_T_DATE:
			cx_buf_put_u32(out, (uint32_t) d->v.i32);
			break;
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			cx_buf_put_i64(out, d->v.i64);
			break;
		case CX_T_FLOAT32:
			/* Bit pattern, so NaN payloads and -0 survive. */
			memcpy(&u32, &d->v.f32, sizeof(u32));
			cx_buf_put_u32(out, u32);
			break;
		case CX_T_FLOAT64:
			memcpy(&u64, &d->v.f64, sizeof(u64));
			cx_buf_put_u64(out, u64);
			break;
		case CX_T_UUID:
			cx_buf_put(out, d->v.uuid, sizeof(d->v.uuid));
			break;
		case CX_T_INTERVAL:
			cx_buf_put_i64(out, d->v.interval.usec);
			cx_buf_put_u32(out, (uint32_t) d->v.interval.days);
			cx_buf_put_u32(out, (uint32_t) d->v.interval.months);
			break;
		default:
			/* Not fixed-width: callers never get here. */
			out->failed = true;
			break;
	}
}

/*
 * Appends one non-NULL scalar value.  A variable-width value longer than a
 * u32 length can express cannot be encoded; the buffer is marked failed so
 * the caller's single cx_buf_ok() check catches it (PostgreSQL values are at
 * most 1 GiB, so this does not happen in practice).
 */
static void
encode_scalar(cx_type type, const cx_datum *d, cx_buf *out)
{
	if (cx_type_width(type) > 0)
	{
		encode_fixed(type, d, out);
		return;
	}
	if (d->v.bytes.len > UINT32_MAX)
	{
		out->failed = true;
		return;
	}
	cx_buf_put_bytes32(out, d->v.bytes.ptr, (uint32_t) d->v.bytes.len);
}

static void
encode_list(cx_type elem_type, const cx_datum *d, cx_buf *out)
{
	uint32_t	n = d->v.list.n;
	size_t		bitmap_at;
	uint8_t    *bitmap;

	cx_buf_put_u32(out, n);
	bitmap_at = out->len;
	if (!put_bitmap(out, n))
		return;
	for (uint32_t i = 0; i < n; i++)
	{
		const cx_datum *item = &d->v.list.items[i];

		if (item->isnull)
		{
			/* Re-derive the pointer: encoding items may have moved data. */
			bitmap = out->data + bitmap_at;
			bitmap[i >> 3] |= (uint8_t) (1u << (i & 7));
		}
		else
			encode_scalar(elem_type, item, out);
		if (!cx_buf_ok(out))
			return;
	}
}

void
cx_row_encode(const cx_schema *schema, cx_row_kind kind,
			  const cx_datum *values, cx_buf *out)
{
	size_t		bitmap_at;

	cx_buf_put_u8(out, (uint8_t) kind);
	bitmap_at = out->len;
	if (!put_bitmap(out, schema->ncolumns))
		return;
	for (uint32_t i = 0; i < schema->ncolumns; i++)
	{
		const cx_column *col = &schema->columns[i];

		if (values[i].isnull)
			out->data[bitmap_at + (i >> 3)] |= (uint8_t) (1u << (i & 7));
		else if (col->type == CX_T_LIST)
			encode_list(col->elem_type, &values[i], out);
		else
			encode_scalar(col->type, &values[i], out);
		if (!cx_buf_ok(out))
			return;
	}
}

bool
cx_datum_key_bytes(cx_type type, const cx_datum *d,
				   uint8_t fixed[CX_KEY_FIXED_MAX], const uint8_t **p,
				   size_t *len)
{
	int			width = cx_type_width(type);

	if (d->isnull)
		return false;
	if (width > 0)
	{
		cx_fixed_encode(type, d, fixed);
		*p = fixed;
		*len = (size_t) width;
	}
	else
	{
		*p = d->v.bytes.ptr;
		*len = d->v.bytes.len;
	}
	return true;
}

/* ---- decoding ---- */

/* Reads a bitmap of n bits and checks its padding bits are clear. */
static const uint8_t *
take_bitmap(cx_rd *r, uint32_t n)
{
	size_t		len = BITMAP_BYTES(n);
	const uint8_t *bitmap = cx_rd_take(r, len);

	if (bitmap != NULL && (n & 7) != 0 && (bitmap[len - 1] >> (n & 7)) != 0)
	{
		r->bad = true;
		return NULL;
	}
	return bitmap;
}

static void
decode_fixed(cx_type type, cx_rd *r, cx_datum *d)
{
	uint32_t	u32;
	uint64_t	u64;
	const uint8_t *p;

	switch (type)
	{
		case CX_T_BOOL:
			u32 = cx_rd_u8(r);
			if (u32 > 1)
				r->bad = true;
			d->v.b = u32 == 1;
			break;
		case CX_T_INT16:
			d->v.i16 = (int16_t) cx_rd_u16(r);
			break;
		case CX_T_INT32:
		case CX_T_DATE:
			d->v.i32 = (int32_t) cx_rd_u32(r);
			break;
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			d->v.i64 = cx_rd_i64(r);
			break;
		case CX_T_FLOAT32:
			u32 = cx_rd_u32(r);
			memcpy(&d->v.f32, &u32, sizeof(u32));
			break;
		case CX_T_FLOAT64:
			u64 = cx_rd_u64(r);
			memcpy(&d->v.f64, &u64, sizeof(u64));
			break;
		case CX_T_UUID:
			p = cx_rd_take(r, sizeof(d->v.uuid));
			if (p != NULL)
				memcpy(d->v.uuid, p, sizeof(d->v.uuid));
			break;
		case CX_T_INTERVAL:
			d->v.interval.usec = cx_rd_i64(r);
			d->v.interval.days = (int32_t) cx_rd_u32(r);
			d->v.interval.months = (int32_t) cx_rd_u32(r);
			break;
		default:
			r->bad = true;
			break;
	}
}

static void
decode_scalar(cx_type type, cx_rd *r, cx_datum *d)
{
	uint32_t	len;

	d->isnull = false;
	if (cx_type_width(type) > 0)
	{
		decode_fixed(type, r, d);
		return;
	}
	d->v.bytes.ptr = cx_rd_bytes32(r, &len);
	d->v.bytes.len = len;
}

/*
 * Decodes a list's elements into scratch.  The items pointer is filled in
 * only once the whole row is decoded (fix_list_items), because a later list
 * in the same row may grow, and so move, scratch.
 */
static cx_code
decode_list(const cx_column *col, cx_rd *r, cx_datum *d, cx_buf *scratch,
			cx_err *err)
{
	uint32_t	n = cx_rd_u32(r);
	const uint8_t *bitmap = take_bitmap(r, n);
	cx_datum   *items;

	if (bitmap == NULL)
		return CX_OK;			/* r is bad; the caller reports it */
	d->isnull = false;
	d->v.list.items = NULL;
	d->v.list.n = n;
	if (n == 0)
		return CX_OK;
	items = (cx_datum *) cx_buf_grow(scratch, (size_t) n * sizeof(cx_datum));
	if (items == NULL)
		return cx_err_set(err, CX_ERR_NOMEM,
						  "no memory for a list of %u elements in column \"%s\"",
						  n, col->name);
	for (uint32_t i = 0; i < n && cx_rd_ok(r); i++)
	{
		if (bit_is_set(bitmap, i))
			items[i].isnull = true;
		else
			decode_scalar(col->elem_type, r, &items[i]);
	}
	return CX_OK;
}

/* Points each non-NULL list at its items, laid out in column order. */
static void
fix_list_items(const cx_schema *schema, cx_datum *values, cx_buf *scratch)
{
	const cx_datum *items = (const cx_datum *) scratch->data;
	size_t		next = 0;

	for (uint32_t i = 0; i < schema->ncolumns; i++)
	{
		uint32_t	n = values[i].v.list.n;

		if (schema->columns[i].type != CX_T_LIST || values[i].isnull || n == 0)
			continue;
		values[i].v.list.items = items + next;
		next += n;
	}
}

cx_code
cx_row_decode(const cx_schema *schema, cx_rd *r, cx_row_kind *kind,
			  cx_datum *values, cx_buf *scratch, cx_err *err)
{
	size_t		start = r->pos;
	uint8_t		k = cx_rd_u8(r);
	const uint8_t *nulls;

	if (cx_rd_ok(r) && k > CX_ROW_KIND_MAX)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "encoded row at byte %zu: unknown row kind %u",
						  start, k);
	*kind = (cx_row_kind) k;
	nulls = take_bitmap(r, schema->ncolumns);

	cx_buf_reset(scratch);
	for (uint32_t i = 0; i < schema->ncolumns && cx_rd_ok(r); i++)
	{
		const cx_column *col = &schema->columns[i];

		memset(&values[i], 0, sizeof(cx_datum));
		if (bit_is_set(nulls, i))
			values[i].isnull = true;
		else if (col->type == CX_T_LIST)
		{
			cx_code		rc = decode_list(col, r, &values[i], scratch, err);

			if (rc != CX_OK)
				return rc;
		}
		else
			decode_scalar(col->type, r, &values[i]);
		if (!cx_rd_ok(r))
			return cx_err_set(err, CX_ERR_CORRUPT,
							  "encoded row at byte %zu: column %u \"%s\" is truncated or malformed",
							  start, i, col->name);
	}
	if (!cx_rd_ok(r))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "encoded row at byte %zu: null bitmap is truncated or malformed",
						  start);
	fix_list_items(schema, values, scratch);
	return CX_OK;
}

cx_code
cx_rows_check(const cx_schema *schema, const uint8_t *rows, size_t len,
			  uint64_t nrows, cx_err *err)
{
	cx_datum   *values = malloc(sizeof(cx_datum) * (schema->ncolumns + 1));
	cx_row_kind kind;
	cx_buf		scratch;
	cx_rd		r;
	cx_code		rc = CX_OK;

	if (values == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "checking rows: out of memory");
	cx_buf_init(&scratch);
	cx_rd_init(&r, rows, len);
	for (uint64_t n = 0; n < nrows && rc == CX_OK; n++)
		rc = cx_row_decode(schema, &r, &kind, values, &scratch, err);
	cx_buf_free(&scratch);
	free(values);
	if (rc == CX_OK && cx_rd_left(&r) != 0)
		rc = cx_err_set(err, CX_ERR_CORRUPT,
						"%zu bytes left over after %llu encoded rows",
						cx_rd_left(&r), (unsigned long long) nrows);
	return rc;
}

cx_code
cx_value_from_bytes(cx_type type, const uint8_t *p, size_t len, cx_datum *d,
					cx_err *err)
{
	int			width = cx_type_width(type);
	cx_rd		r;

	memset(d, 0, sizeof(*d));
	if (width == 0)
	{
		d->v.bytes.ptr = p;
		d->v.bytes.len = len;
		return CX_OK;
	}
	cx_rd_init(&r, p, len);
	if ((size_t) width == len)
		decode_fixed(type, &r, d);
	if ((size_t) width != len || !cx_rd_ok(&r))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "a %s value of %zu bytes (it has %d)",
						  cx_type_name(type), len, width);
	return CX_OK;
}
