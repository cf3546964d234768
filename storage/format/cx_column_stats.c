/*
 * cx_column_stats.c — column statistics (accumulation, merging, serialisation)
 * and the fragment descriptions manifests carry.
 *
 * Min/max exist so readers can skip chunks and fragments, so every rule here
 * errs towards "no bound" rather than a wrong bound:
 *   - floats: NaN never becomes a min or max; because PostgreSQL sorts NaN
 *     above every number, a set containing NaN has no max at all;
 *   - variable width: the min may be a prefix (still a lower bound); the max
 *     is dropped when the largest value is longer than CX_STATS_MAX_BYTES;
 *   - merging keeps a bound only if every non-empty side has one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"

#define FLAG_HAS_MIN 0x01
#define FLAG_HAS_MAX 0x02

static int
cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int
cmp_f64(double a, double b)
{
	return (a > b) - (a < b);
}

static float
load_f32(const uint8_t *p)
{
	uint32_t	bits = cx_load_u32(p);
	float		f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static double
load_f64(const uint8_t *p)
{
	uint64_t	bits = cx_load_u64(p);
	double		d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

static int
cmp_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t		n = alen < blen ? alen : blen;
	/* an empty value may have no bytes at all (a NULL pointer) */
	int			c = n > 0 ? memcmp(a, b, n) : 0;

	if (c != 0)
		return c < 0 ? -1 : 1;
	return (alen > blen) - (alen < blen);
}

int
cx_stats_cmp(cx_type type, const uint8_t *a, size_t alen,
			 const uint8_t *b, size_t blen)
{
	size_t		width = (size_t) cx_type_width(type);

	/* A fixed-width bound of the wrong length is never read as a number. */
	if (width == 0 || alen != width || blen != width)
		return cmp_bytes(a, alen, b, blen);
	switch (type)
	{
		case CX_T_INT16:
			return cmp_i64((int16_t) cx_load_u16(a), (int16_t) cx_load_u16(b));
		case CX_T_INT32:
		case CX_T_DATE:
			return cmp_i64((int32_t) cx_load_u32(a), (int32_t) cx_load_u32(b));
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			return cmp_i64((int64_t) cx_load_u64(a), (int64_t) cx_load_u64(b));
		case CX_T_FLOAT32:
			return cmp_f64(load_f32(a), load_f32(b));
		case CX_T_FLOAT64:
			return cmp_f64(load_f64(a), load_f64(b));
		default:
			/* bool (0/1) and uuid order byte-wise. */
			return cmp_bytes(a, alen, b, blen);
	}
}

static bool
is_nan(cx_type type, const uint8_t *val)
{
	if (type == CX_T_FLOAT32)
		return isnan(load_f32(val));
	if (type == CX_T_FLOAT64)
		return isnan(load_f64(val));
	return false;
}

void
cx_statacc_init(cx_statacc *acc, cx_type type)
{
	memset(acc, 0, sizeof(*acc));
	acc->type = type;
}

void
cx_statacc_add_null(cx_statacc *acc)
{
	acc->st.null_count++;
}

int
cx_value_cmp(cx_type type, const uint8_t *a, size_t alen, const uint8_t *b,
			 size_t blen)
{
	size_t		width = (size_t) cx_type_width(type);
	bool		nan_a = alen == width && is_nan(type, a);
	bool		nan_b = blen == width && is_nan(type, b);

	if (nan_a || nan_b)
		return nan_a - nan_b;
	return cx_stats_cmp(type, a, alen, b, blen);
}

static void
set_bound(uint8_t *dst, uint8_t *dst_len, const uint8_t *val, size_t len)
{
	*dst_len = (uint8_t) (len < CX_STATS_MAX_BYTES ? len : CX_STATS_MAX_BYTES);
	/* An empty value may come without bytes (NULL): memcpy must not see it. */
	if (*dst_len > 0)
		memcpy(dst, val, *dst_len);
}

/*
 * The stored min is a prefix P of the true min M, so a value below P is below
 * M; a value at or above P either exceeds M or shares the prefix P with it,
 * and then P stays the right (truncated) bound.
 */
static void
add_min(cx_statacc *acc, const uint8_t *val, size_t len)
{
	cx_colstats *st = &acc->st;

	if (!st->has_min ||
		cx_stats_cmp(acc->type, val, len, st->min, st->min_len) < 0)
	{
		set_bound(st->min, &st->min_len, val, len);
		st->has_min = true;
	}
}

/*
 * When the stored max is a truncated prefix P of the true max L, a value
 * that starts with P cannot be ordered against L, but either way the largest
 * is longer than the limit and the prefix stays P; any other value compares
 * against L as it compares against P.
 */
static void
add_max(cx_statacc *acc, const uint8_t *val, size_t len)
{
	cx_colstats *st = &acc->st;

	if (st->has_max && acc->max_truncated && len >= st->max_len &&
		memcmp(val, st->max, st->max_len) == 0)
		return;
	if (!st->has_max ||
		cx_stats_cmp(acc->type, val, len, st->max, st->max_len) > 0)
	{
		set_bound(st->max, &st->max_len, val, len);
		st->has_max = true;
		acc->max_truncated = len > CX_STATS_MAX_BYTES;
	}
}

void
cx_statacc_add(cx_statacc *acc, const uint8_t *val, size_t len)
{
	acc->st.value_count++;
	if (!cx_type_has_stats(acc->type))
		return;
	if (is_nan(acc->type, val))
	{
		acc->saw_nan = true;
		return;
	}
	add_min(acc, val, len);
	add_max(acc, val, len);
}

/*
 * Both minimums are prefixes of true minimums, and the smaller prefix is
 * the prefix of the smaller.  A maximum that differs from the other
 * decides as its value would (a truncated prefix that the other exceeds
 * differs from it within the prefix); equal ones are the same value or
 * share a truncated prefix, which stays truncated.
 */
void
cx_statacc_merge(cx_statacc *acc, const cx_statacc *from)
{
	cx_colstats *st = &acc->st;
	const cx_colstats *f = &from->st;

	st->null_count += f->null_count;
	st->value_count += f->value_count;
	acc->saw_nan |= from->saw_nan;
	if (f->has_min &&
		(!st->has_min ||
		 cx_stats_cmp(acc->type, f->min, f->min_len, st->min, st->min_len) < 0))
	{
		set_bound(st->min, &st->min_len, f->min, f->min_len);
		st->has_min = true;
	}
	if (!f->has_max)
		return;
	if (!st->has_max ||
		cx_stats_cmp(acc->type, f->max, f->max_len, st->max, st->max_len) > 0)
	{
		set_bound(st->max, &st->max_len, f->max, f->max_len);
		st->has_max = true;
		acc->max_truncated = from->max_truncated;
	}
	else if (cx_stats_cmp(acc->type, f->max, f->max_len, st->max, st->max_len) == 0)
		acc->max_truncated |= from->max_truncated;
}

void
cx_statacc_finish(const cx_statacc *acc, cx_colstats *out)
{
	*out = acc->st;
	if (acc->max_truncated || acc->saw_nan)
	{
		out->has_max = false;
		out->max_len = 0;
		memset(out->max, 0, sizeof(out->max));
	}
}

void
cx_colstats_merge(cx_colstats *a, const cx_colstats *b, cx_type type)
{
	uint64_t	nulls = a->null_count + b->null_count;
	uint64_t	values = a->value_count + b->value_count;

	if (a->value_count == 0)
		*a = *b;
	else if (b->value_count > 0)
	{
		if (a->has_min && b->has_min &&
			cx_stats_cmp(type, b->min, b->min_len, a->min, a->min_len) < 0)
			set_bound(a->min, &a->min_len, b->min, b->min_len);
		if (a->has_max && b->has_max &&
			cx_stats_cmp(type, b->max, b->max_len, a->max, a->max_len) > 0)
			set_bound(a->max, &a->max_len, b->max, b->max_len);
		a->has_min = a->has_min && b->has_min;
		a->has_max = a->has_max && b->has_max;
	}
	a->null_count = nulls;
	a->value_count = values;
}

void
cx_colstats_encode(const cx_colstats *st, cx_buf *out)
{
	cx_buf_put_u64(out, st->null_count);
	cx_buf_put_u64(out, st->value_count);
	cx_buf_put_u8(out, (st->has_min ? FLAG_HAS_MIN : 0) |
				  (st->has_max ? FLAG_HAS_MAX : 0));
	if (st->has_min)
	{
		cx_buf_put_u8(out, st->min_len);
		cx_buf_put(out, st->min, st->min_len);
	}
	if (st->has_max)
	{
		cx_buf_put_u8(out, st->max_len);
		cx_buf_put(out, st->max, st->max_len);
	}
}

static void
decode_bound(cx_rd *r, uint8_t *dst, uint8_t *dst_len)
{
	uint8_t		n = cx_rd_u8(r);
	const uint8_t *p;

	if (n > CX_STATS_MAX_BYTES)
	{
		r->bad = true;
		return;
	}
	p = cx_rd_take(r, n);
	if (p == NULL)
		return;
	*dst_len = n;
	memcpy(dst, p, n);
}

void
cx_colstats_decode(cx_rd *r, cx_colstats *st)
{
	uint8_t		flags;

	memset(st, 0, sizeof(*st));
	st->null_count = cx_rd_u64(r);
	st->value_count = cx_rd_u64(r);
	flags = cx_rd_u8(r);
	if (flags & ~(FLAG_HAS_MIN | FLAG_HAS_MAX) ||
		(flags != 0 && st->value_count == 0))
		r->bad = true;
	st->has_min = (flags & FLAG_HAS_MIN) != 0;
	st->has_max = (flags & FLAG_HAS_MAX) != 0;
	if (st->has_min)
		decode_bound(r, st->min, &st->min_len);
	if (st->has_max)
		decode_bound(r, st->max, &st->max_len);
	if (!cx_rd_ok(r))
		memset(st, 0, sizeof(*st));
}

void
cx_fragment_info_free(cx_fragment_info *fi)
{
	if (fi == NULL)
		return;
	free(fi->path);
	free(fi->stats);
	free(fi->origin_shard);
	memset(fi, 0, sizeof(*fi));
}

size_t
cx_fragment_info_memory(const cx_fragment_info *fi)
{
	return cx_str_memory(fi->path) + cx_str_memory(fi->origin_shard) +
		(fi->stats != NULL ? sizeof(cx_colstats) * fi->ncolumns : 0);
}

cx_code
cx_fragment_info_copy(cx_fragment_info *dst, const cx_fragment_info *src,
					  cx_err *err)
{
	*dst = *src;
	dst->path = src->path ? cx_strdup(src->path) : NULL;
	dst->stats = src->ncolumns ?
		cx_memdup(src->stats, sizeof(cx_colstats) * src->ncolumns) : NULL;
	dst->origin_shard = src->origin_shard ? cx_strdup(src->origin_shard) : NULL;
	if ((src->path && dst->path == NULL) ||
		(src->ncolumns && dst->stats == NULL) ||
		(src->origin_shard && dst->origin_shard == NULL))
	{
		cx_fragment_info_free(dst);
		return cx_err_set(err, CX_ERR_NOMEM,
						  "out of memory copying fragment description %s",
						  src->path ? src->path : "");
	}
	return CX_OK;
}
