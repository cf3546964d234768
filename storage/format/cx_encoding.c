/*
 * cx_encoding.c — column builders (the writer's buffered row group, in the
 * engine's own value form) and reading values out of a cx_colvec.
 *
 * A builder holds one column of the rows appended since the last row group
 * was cut: a null bitmap, fixed-width values (little-endian, NULL rows zero)
 * or u32 offsets into value bytes, and for lists u32 offsets into a nested
 * builder of the elements.  The writer turns it into Parquet pages
 * (cx_fragment_write.c).
 */
#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"

static bool
is_list(uint8_t type)
{
	return type == CX_T_LIST;
}

/* ---------------------------------------------------------------------
 * Fixed-width values
 * --------------------------------------------------------------------- */

void
cx_fixed_encode(cx_type type, const cx_datum *d, uint8_t *out)
{
	uint32_t	b32;
	uint64_t	b64;

	switch (type)
	{
		case CX_T_BOOL:
			out[0] = d->v.b ? 1 : 0;
			break;
		case CX_T_INT16:
			cx_store_u16(out, (uint16_t) d->v.i16);
			break;
		case CX_T_INT32:
		case CX_T_DATE:
			cx_store_u32(out, (uint32_t) d->v.i32);
			break;
		case CX_T_FLOAT32:
			memcpy(&b32, &d->v.f32, sizeof(b32));
			cx_store_u32(out, b32);
			break;
		case CX_T_FLOAT64:
			memcpy(&b64, &d->v.f64, sizeof(b64));
			cx_store_u64(out, b64);
			break;
		case CX_T_UUID:
			memcpy(out, d->v.uuid, 16);
			break;
		case CX_T_INTERVAL:
			cx_store_u64(out, (uint64_t) d->v.interval.usec);
			cx_store_u32(out + 8, (uint32_t) d->v.interval.days);
			cx_store_u32(out + 12, (uint32_t) d->v.interval.months);
			break;
		default:
			/* int64, time and the timestamps */
			cx_store_u64(out, (uint64_t) d->v.i64);
			break;
	}
}

static void
fixed_decode(uint8_t type, const uint8_t *p, cx_datum *out)
{
	uint32_t	b32;
	uint64_t	b64;

	switch (type)
	{
		case CX_T_BOOL:
			out->v.b = p[0] != 0;
			break;
		case CX_T_INT16:
			out->v.i16 = (int16_t) cx_load_u16(p);
			break;
		case CX_T_INT32:
		case CX_T_DATE:
			out->v.i32 = (int32_t) cx_load_u32(p);
			break;
		case CX_T_FLOAT32:
			b32 = cx_load_u32(p);
			memcpy(&out->v.f32, &b32, sizeof(b32));
			break;
		case CX_T_FLOAT64:
			b64 = cx_load_u64(p);
			memcpy(&out->v.f64, &b64, sizeof(b64));
			break;
		case CX_T_UUID:
			memcpy(out->v.uuid, p, 16);
			break;
		case CX_T_INTERVAL:
			out->v.interval.usec = (int64_t) cx_load_u64(p);
			out->v.interval.days = (int32_t) cx_load_u32(p + 8);
			out->v.interval.months = (int32_t) cx_load_u32(p + 12);
			break;
		default:
			out->v.i64 = (int64_t) cx_load_u64(p);
			break;
	}
}

void
cx_colvec_get(const cx_colvec *v, uint32_t i, cx_datum *out)
{
	memset(out, 0, sizeof(*out));
	if (cx_colvec_isnull(v, i))
	{
		out->isnull = true;
		return;
	}
	if (v->width > 0)
		fixed_decode(v->type, v->fixed + (size_t) i * v->width, out);
	else if (is_list(v->type))
	{
		out->v.slice.elems = v->child;
		out->v.slice.start = v->offsets[i];
		out->v.slice.n = v->offsets[i + 1] - v->offsets[i];
	}
	else
	{
		out->v.bytes.ptr = v->bytes + v->offsets[i];
		out->v.bytes.len = v->offsets[i + 1] - v->offsets[i];
	}
}

/* ---------------------------------------------------------------------
 * Building
 * --------------------------------------------------------------------- */

static cx_colbuild *
build_new(uint8_t type, uint8_t elem_type)
{
	cx_colbuild *b = calloc(1, sizeof(cx_colbuild));

	if (b == NULL)
		return NULL;
	b->type = type;
	b->elem_type = elem_type;
	b->width = (uint8_t) cx_type_width(type);
	cx_buf_init(&b->nulls);
	cx_buf_init(&b->values);
	cx_buf_init(&b->offsets);
	cx_buf_init(&b->bytes);
	if (is_list(type))
	{
		b->elems = build_new(elem_type, 0);
		if (b->elems == NULL)
		{
			free(b);
			return NULL;
		}
	}
	cx_colbuild_reset(b);
	return b;
}

cx_colbuild *
cx_colbuild_new(const cx_column *col)
{
	return build_new(col->type, col->elem_type);
}

void
cx_colbuild_free(cx_colbuild *b)
{
	if (b == NULL)
		return;
	cx_buf_free(&b->nulls);
	cx_buf_free(&b->values);
	cx_buf_free(&b->offsets);
	cx_buf_free(&b->bytes);
	cx_colbuild_free(b->elems);
	free(b);
}

void
cx_colbuild_reset(cx_colbuild *b)
{
	b->nrows = 0;
	b->null_count = 0;
	cx_buf_reset(&b->nulls);
	cx_buf_reset(&b->values);
	cx_buf_reset(&b->offsets);
	cx_buf_reset(&b->bytes);
	if (b->width == 0)
		cx_buf_put_u32(&b->offsets, 0);
	if (b->elems != NULL)
		cx_colbuild_reset(b->elems);
}

cx_code
cx_colbuild_measure(const cx_colbuild *b, const cx_datum *d, uint64_t *size,
					cx_err *err)
{
	/* One bitmap byte, plus a fixed value or an offset. */
	*size = 1 + (b->width > 0 ? b->width : 4);
	if (d->isnull || b->width > 0)
		return CX_OK;
	if (!is_list(b->type))
	{
		if (d->v.bytes.ptr == NULL && d->v.bytes.len > 0)
			return cx_err_set(err, CX_ERR_INVALID, "value has no bytes");
		/* Checked before adding so a huge size_t cannot wrap the sum. */
		if (d->v.bytes.len <= CX_CHUNK_RAW_MAX)
			*size += d->v.bytes.len;
		else
			*size = UINT64_MAX;
	}
	else
	{
		if (d->v.list.items == NULL && d->v.list.n > 0)
			return cx_err_set(err, CX_ERR_INVALID, "list value has no items");
		for (uint32_t k = 0; k < d->v.list.n && *size <= CX_CHUNK_RAW_MAX; k++)
		{
			uint64_t	item;

			if (cx_colbuild_measure(b->elems, &d->v.list.items[k], &item,
									err) != CX_OK)
				return cx_err_prefix(err, "list element %u", k);
			*size += item;
		}
	}
	if (*size > CX_CHUNK_RAW_MAX)
		return cx_err_set(err, CX_ERR_LIMIT,
						  "value of more than %llu bytes cannot be stored",
						  (unsigned long long) CX_CHUNK_RAW_MAX);
	return CX_OK;
}

static void
append_offset(cx_colbuild *b, size_t end)
{
	cx_buf_put_u32(&b->offsets, (uint32_t) end);
}

static void
append_value(cx_colbuild *b, const cx_datum *d)
{
	uint8_t		fixed[16];

	if (b->width > 0)
	{
		cx_fixed_encode(b->type, d, fixed);
		cx_buf_put(&b->values, fixed, b->width);
	}
	else if (is_list(b->type))
	{
		for (uint32_t k = 0; k < d->v.list.n; k++)
			cx_colbuild_append(b->elems, &d->v.list.items[k]);
		append_offset(b, b->elems->nrows);
	}
	else
	{
		cx_buf_put(&b->bytes, d->v.bytes.ptr, d->v.bytes.len);
		append_offset(b, b->bytes.len);
	}
}

static void
append_null(cx_colbuild *b)
{
	uint32_t	i = b->nrows;

	b->nulls.data[i / 8] |= (uint8_t) (1u << (i % 8));
	b->null_count++;
	if (b->width > 0)
		cx_buf_grow(&b->values, b->width);
	else
		append_offset(b, is_list(b->type) ? b->elems->nrows : b->bytes.len);
}

static bool
build_ok(const cx_colbuild *b)
{
	return cx_buf_ok(&b->nulls) && cx_buf_ok(&b->values) &&
		cx_buf_ok(&b->offsets) && cx_buf_ok(&b->bytes) &&
		(b->elems == NULL || build_ok(b->elems));
}

bool
cx_colbuild_append(cx_colbuild *b, const cx_datum *d)
{
	if (b->nrows % 8 == 0 && cx_buf_grow(&b->nulls, 1) == NULL)
		return false;
	if (d->isnull)
		append_null(b);
	else
		append_value(b, d);
	b->nrows++;
	return build_ok(b);
}

static uint32_t
offset_at(const cx_colbuild *b, uint32_t i)
{
	return cx_load_u32(b->offsets.data + (size_t) i * 4);
}

bool
cx_colbuild_value(const cx_colbuild *b, uint32_t i, const uint8_t **p,
				  size_t *len)
{
	if (b->null_count > 0 && (b->nulls.data[i / 8] >> (i % 8)) & 1)
		return false;
	if (b->width > 0)
	{
		*p = b->values.data + (size_t) i * b->width;
		*len = b->width;
	}
	else
	{
		*p = b->bytes.data + offset_at(b, i);
		*len = offset_at(b, i + 1) - offset_at(b, i);
	}
	return true;
}

void
cx_colbuild_items(const cx_colbuild *b, uint32_t i, uint32_t *start,
				  uint32_t *end)
{
	*start = offset_at(b, i);
	*end = offset_at(b, i + 1);
}
