/*
 * cx_encoding.c — column-chunk payloads: building them from cx_datum values
 * (writer), decoding them into cx_colvec (reader), and reading values back.
 *
 * Payload layout (one level; a list nests exactly one more level):
 *   u32 nrows, u32 null_count,
 *   null bitmap, ceil(nrows / 8) bytes, only when null_count > 0,
 *   fixed width:  nrows * width bytes (NULL rows zero),
 *   var width:    u32 offsets[nrows + 1], then offsets[nrows] bytes,
 *   list:         u32 offsets[nrows + 1] into the elements, then the
 *                 elements' own payload with offsets[nrows] rows.
 * The builder keeps the sections in separate buffers and the encoder
 * concatenates them, so unused sections (empty buffers) vanish naturally.
 *
 * The decoder is the format's line of defence against corrupt input: every
 * count is checked against the bytes actually present before anything is
 * allocated or indexed, offsets must start at 0 and never decrease, and the
 * payload must be consumed exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"

#define HEADER_BYTES 8

static bool
is_list(uint8_t type)
{
	return type == CX_T_LIST;
}

static size_t
bitmap_bytes(uint32_t nrows)
{
	return ((size_t) nrows + 7) / 8;
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
build_new(uint8_t type, uint8_t elem_type, bool track_stats)
{
	cx_colbuild *b = calloc(1, sizeof(cx_colbuild));

	if (b == NULL)
		return NULL;
	b->type = type;
	b->elem_type = elem_type;
	b->width = (uint8_t) cx_type_width(type);
	b->track_stats = track_stats;
	cx_buf_init(&b->nulls);
	cx_buf_init(&b->values);
	cx_buf_init(&b->offsets);
	cx_buf_init(&b->bytes);
	if (is_list(type))
	{
		b->elems = build_new(elem_type, 0, false);
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
	return build_new(col->type, col->elem_type, true);
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
	cx_statacc_init(&b->stats, b->type);
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
		if (b->track_stats)
			cx_statacc_add(&b->stats, fixed, b->width);
	}
	else if (is_list(b->type))
	{
		for (uint32_t k = 0; k < d->v.list.n; k++)
			cx_colbuild_append(b->elems, &d->v.list.items[k]);
		append_offset(b, b->elems->nrows);
		if (b->track_stats)
			cx_statacc_add(&b->stats, NULL, 0);
	}
	else
	{
		cx_buf_put(&b->bytes, d->v.bytes.ptr, d->v.bytes.len);
		append_offset(b, b->bytes.len);
		if (b->track_stats)
			cx_statacc_add(&b->stats, d->v.bytes.ptr, d->v.bytes.len);
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
	if (b->track_stats)
		cx_statacc_add_null(&b->stats);
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

uint64_t
cx_colbuild_raw_size(const cx_colbuild *b)
{
	uint64_t	n = HEADER_BYTES;

	if (b->null_count > 0)
		n += b->nulls.len;
	n += b->values.len + b->offsets.len + b->bytes.len;
	if (b->elems != NULL)
		n += cx_colbuild_raw_size(b->elems);
	return n;
}

void
cx_colbuild_encode(const cx_colbuild *b, cx_buf *out)
{
	cx_buf_put_u32(out, b->nrows);
	cx_buf_put_u32(out, b->null_count);
	if (b->null_count > 0)
		cx_buf_put(out, b->nulls.data, b->nulls.len);
	cx_buf_put(out, b->values.data, b->values.len);
	cx_buf_put(out, b->offsets.data, b->offsets.len);
	cx_buf_put(out, b->bytes.data, b->bytes.len);
	if (b->elems != NULL)
		cx_colbuild_encode(b->elems, out);
}

/* ---------------------------------------------------------------------
 * Decoding
 * --------------------------------------------------------------------- */

/* The bitmap must mark exactly null_count of the first nrows bits and
 * leave the padding bits clear. */
static bool
bitmap_valid(const uint8_t *bits, uint32_t nrows, uint32_t null_count)
{
	size_t		nbytes = bitmap_bytes(nrows);
	uint64_t	set = 0;

	for (size_t i = 0; i < nbytes; i++)
		set += (uint64_t) __builtin_popcount(bits[i]);
	if (nrows % 8 != 0 && (bits[nbytes - 1] >> (nrows % 8)) != 0)
		return false;
	return set == null_count;
}

static bool
decode_header(cx_rd *r, uint32_t nrows, cx_colvec *v, const char **why)
{
	uint32_t	stored_rows = cx_rd_u32(r);
	uint32_t	null_count = cx_rd_u32(r);

	if (!cx_rd_ok(r) || stored_rows != nrows || null_count > nrows)
	{
		*why = "row count or null count does not match";
		return false;
	}
	if (null_count == 0)
		return true;
	v->nulls = cx_rd_take(r, bitmap_bytes(nrows));
	if (v->nulls == NULL || !bitmap_valid(v->nulls, nrows, null_count))
	{
		*why = "null bitmap is truncated or does not match the null count";
		return false;
	}
	return true;
}

/* Reads nrows + 1 little-endian offsets into a new aligned array. */
static bool
decode_offsets(cx_rd *r, uint32_t nrows, uint32_t **out, const char **why)
{
	size_t		n = (size_t) nrows + 1;
	const uint8_t *p = cx_rd_take(r, n * 4);
	uint32_t   *offs;

	if (p == NULL)
	{
		*why = "offsets are truncated";
		return false;
	}
	offs = malloc(n * sizeof(uint32_t));
	if (offs == NULL)
	{
		*why = "out of memory decoding offsets";
		return false;
	}
	*out = offs;
	for (size_t i = 0; i < n; i++)
	{
		offs[i] = cx_load_u32(p + 4 * i);
		if ((i == 0 && offs[i] != 0) || (i > 0 && offs[i] < offs[i - 1]))
		{
			*why = "offsets are not monotonic from zero";
			return false;
		}
	}
	return true;
}

/* Decodes one level; for a list, the elements are left for the caller. */
static bool
decode_level(cx_rd *r, uint8_t type, uint32_t nrows, cx_colvec *v,
			 uint32_t **offsets, const char **why)
{
	v->type = type;
	v->width = (uint8_t) cx_type_width(type);
	v->nrows = nrows;
	if (!decode_header(r, nrows, v, why))
		return false;
	if (v->width > 0)
	{
		v->fixed = cx_rd_take(r, (size_t) nrows * v->width);
		if (v->fixed == NULL)
			*why = "values are truncated";
		return v->fixed != NULL;
	}
	if (!decode_offsets(r, nrows, offsets, why))
		return false;
	v->offsets = *offsets;
	if (is_list(type))
		return true;
	v->bytes = cx_rd_take(r, v->offsets[nrows]);
	if (v->bytes == NULL)
		*why = "value bytes are truncated";
	return v->bytes != NULL;
}

bool
cx_chunk_decode(const cx_column *col, uint32_t nrows, uint8_t *payload,
				size_t len, cx_decoded *out, const char **why)
{
	cx_rd		r;

	memset(out, 0, sizeof(*out));
	out->payload = payload;
	cx_rd_init(&r, payload, len);
	if (!decode_level(&r, col->type, nrows, &out->vec, &out->offsets, why))
		return false;
	if (is_list(col->type))
	{
		if (!decode_level(&r, col->elem_type, out->offsets[nrows],
						  &out->elems, &out->elem_offsets, why))
			return false;
		out->vec.child = &out->elems;
	}
	if (cx_rd_left(&r) != 0)
	{
		*why = "trailing bytes after the values";
		return false;
	}
	return true;
}

void
cx_decoded_free(cx_decoded *d)
{
	free(d->payload);
	free(d->offsets);
	free(d->elem_offsets);
	memset(d, 0, sizeof(*d));
}
