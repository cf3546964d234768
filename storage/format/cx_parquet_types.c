/*
 * cx_parquet_types.c — the engine-to-Parquet type map and value conversions
 * (cx_parquet_types.h).
 *
 * Conversions are exact and invertible: dates and timestamps move between
 * the 2000 and 1970 epochs (infinities, the extreme values of their type,
 * stay as they are), int16 widens to INT32, a DECIMAL is the unscaled value
 * of the canonical text with exactly `scale` fraction digits, and every other
 * value keeps its bytes.  The reader refuses what the writer cannot produce
 * (an INT32 outside int16, a DECIMAL wider than its precision), so corrupt
 * files never turn into wrong values silently.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_fragment.h"
#include "format/cx_parquet_types.h"

typedef __int128 int128;

/* ---------------------------------------------------------------------
 * The type map
 * --------------------------------------------------------------------- */

static int128
pow10_128(int n)
{
	int128		v = 1;

	while (n-- > 0)
		v *= 10;
	return v;
}

/* Fewest bytes whose two's complement holds every DECIMAL(precision). */
static int32_t
decimal_bytes(int precision)
{
	int128		limit = pow10_128(precision);
	int32_t		n = 1;

	while (n < 16 && ((int128) 1 << (8 * n - 1)) < limit)
		n++;
	return n;
}

static void
set_logical(cx_pq_schema_element *el, cx_pq_logical_kind kind,
			cx_pq_converted converted)
{
	el->logical.kind = kind;
	el->has_converted = true;
	el->converted = converted;
}

static void
set_time(cx_pq_schema_element *el, cx_pq_logical_kind kind, bool utc,
		 cx_pq_converted converted)
{
	el->type = CX_PQ_INT64;
	set_logical(el, kind, converted);
	el->logical.unit = CX_PQ_MICROS;
	el->logical.adjusted_to_utc = utc;
}

static void
set_decimal(cx_pq_schema_element *el, int precision, int scale)
{
	if (precision <= 9)
		el->type = CX_PQ_INT32;
	else if (precision <= 18)
		el->type = CX_PQ_INT64;
	else
	{
		el->type = CX_PQ_FIXED_LEN_BYTE_ARRAY;
		el->type_length = decimal_bytes(precision);
	}
	set_logical(el, CX_PQ_LT_DECIMAL, CX_PQ_CT_DECIMAL);
	el->logical.precision = precision;
	el->logical.scale = scale;
	el->has_scale_precision = true;
	el->precision = precision;
	el->scale = scale;
}

/* Physical, logical and converted type of a leaf holding type t. */
static void
leaf_element(const cx_column *col, cx_type t, cx_pq_schema_element *el)
{
	el->has_type = true;
	el->type = CX_PQ_BYTE_ARRAY;
	switch (t)
	{
		case CX_T_BOOL:
			el->type = CX_PQ_BOOLEAN;
			break;
		case CX_T_INT16:
			el->type = CX_PQ_INT32;
			set_logical(el, CX_PQ_LT_INTEGER, CX_PQ_CT_INT_16);
			el->logical.bit_width = 16;
			el->logical.is_signed = true;
			break;
		case CX_T_INT32:
			el->type = CX_PQ_INT32;
			break;
		case CX_T_INT64:
			if (col->field_id == CX_FIELD_ID_COMMIT_TS)
				set_time(el, CX_PQ_LT_TIMESTAMP, true, CX_PQ_CT_TIMESTAMP_MICROS);
			else
				el->type = CX_PQ_INT64;
			break;
		case CX_T_FLOAT32:
			el->type = CX_PQ_FLOAT;
			break;
		case CX_T_FLOAT64:
			el->type = CX_PQ_DOUBLE;
			break;
		case CX_T_DATE:
			el->type = CX_PQ_INT32;
			set_logical(el, CX_PQ_LT_DATE, CX_PQ_CT_DATE);
			break;
		case CX_T_TIME:
			set_time(el, CX_PQ_LT_TIME, false, CX_PQ_CT_TIME_MICROS);
			break;
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			set_time(el, CX_PQ_LT_TIMESTAMP, t == CX_T_TIMESTAMPTZ,
					 CX_PQ_CT_TIMESTAMP_MICROS);
			break;
		case CX_T_UUID:
			el->type = CX_PQ_FIXED_LEN_BYTE_ARRAY;
			el->type_length = 16;
			el->logical.kind = CX_PQ_LT_UUID;
			break;
		case CX_T_INTERVAL:
			/* usec, days, months little-endian; Parquet's INTERVAL is
			 * months/days/millis and would lose the microseconds */
			el->type = CX_PQ_FIXED_LEN_BYTE_ARRAY;
			el->type_length = 16;
			break;
		case CX_T_STRING:
			set_logical(el, CX_PQ_LT_STRING, CX_PQ_CT_UTF8);
			break;
		case CX_T_JSON:
		case CX_T_JSONB:
			set_logical(el, CX_PQ_LT_JSON, CX_PQ_CT_JSON);
			break;
		case CX_T_NUMERIC:
			if (col->precision > 0)
				set_decimal(el, col->precision, col->scale);
			else
				set_logical(el, CX_PQ_LT_STRING, CX_PQ_CT_UTF8);
			break;
		default:
			/* binary, external: the bytes as they are */
			break;
	}
}

/*
 * Whether a column is a REQUIRED Parquet column: when the schema says so,
 * and always for the hidden columns, which every row has (the commit time
 * is Unix microseconds already, hence its TIMESTAMP type without any
 * conversion above).
 */
static bool
stored_required(const cx_column *col)
{
	return col->required || col->field_id == CX_FIELD_ID_COMMIT_TS ||
		col->field_id == CX_FIELD_ID_TOMBSTONE;
}

void
cx_pq_leaf_init(const cx_column *col, cx_pq_leaf *leaf)
{
	cx_pq_schema_element el;

	memset(leaf, 0, sizeof(*leaf));
	memset(&el, 0, sizeof(el));
	leaf->list = col->type == CX_T_LIST;
	leaf->type = leaf->list ? col->elem_type : col->type;
	leaf_element(col, leaf->type, &el);
	leaf->ptype = el.type;
	switch (el.type)
	{
		case CX_PQ_INT32:
		case CX_PQ_FLOAT:
			leaf->width = 4;
			break;
		case CX_PQ_INT64:
		case CX_PQ_DOUBLE:
			leaf->width = 8;
			break;
		case CX_PQ_FIXED_LEN_BYTE_ARRAY:
			leaf->width = el.type_length;
			break;
		default:
			break;
	}
	if (el.logical.kind == CX_PQ_LT_DECIMAL)
	{
		leaf->precision = col->precision;
		leaf->scale = col->scale;
	}
	leaf->max_def = leaf->list ? 3 : stored_required(col) ? 0 : 1;
	leaf->max_rep = leaf->list ? 1 : 0;
}

static cx_pq_schema_element *
add_element(cx_pq_schema_element *els, uint32_t *n, const char *name,
			cx_pq_repetition rep, int32_t field_id)
{
	cx_pq_schema_element *el = &els[(*n)++];

	memset(el, 0, sizeof(*el));
	el->name = (char *) name;
	el->has_repetition = true;
	el->repetition = rep;
	el->has_field_id = field_id != 0;
	el->field_id = field_id;
	return el;
}

bool
cx_pq_schema_elements(const cx_schema *schema, cx_pq_schema_element **out,
					  uint32_t *n)
{
	cx_pq_schema_element *els = calloc(1 + 3 * (size_t) schema->ncolumns,
									   sizeof(cx_pq_schema_element));
	cx_pq_schema_element *el;

	*out = els;
	*n = 0;
	if (els == NULL)
		return false;
	el = add_element(els, n, "schema", CX_PQ_REQUIRED, 0);
	el->has_repetition = false;
	el->num_children = (int32_t) schema->ncolumns;
	for (uint32_t c = 0; c < schema->ncolumns; c++)
	{
		const cx_column *col = &schema->columns[c];

		if (col->type != CX_T_LIST)
		{
			el = add_element(els, n, col->name,
							 stored_required(col) ? CX_PQ_REQUIRED : CX_PQ_OPTIONAL,
							 col->field_id);
			leaf_element(col, col->type, el);
			continue;
		}
		el = add_element(els, n, col->name, CX_PQ_OPTIONAL, col->field_id);
		el->num_children = 1;
		set_logical(el, CX_PQ_LT_LIST, CX_PQ_CT_LIST);
		el = add_element(els, n, "list", CX_PQ_REPEATED, 0);
		el->num_children = 1;
		el = add_element(els, n, "element", CX_PQ_OPTIONAL,
						 col->field_id + CX_FIELD_ID_ELEMENT_OFFSET);
		leaf_element(col, col->elem_type, el);
	}
	return true;
}

uint32_t
cx_pq_leaf_path(const cx_column *col, const char *path[3])
{
	path[0] = col->name;
	if (col->type != CX_T_LIST)
		return 1;
	path[1] = "list";
	path[2] = "element";
	return 3;
}

/* ---------------------------------------------------------------------
 * Dates, timestamps and decimals
 * --------------------------------------------------------------------- */

/*
 * An epoch shift between engine (2000) and Unix (1970) values of a type
 * whose extreme values min and max are the infinities, kept as they are.
 * A finite value must not land on or beyond an infinity.
 */
typedef struct epoch
{
	int64_t		min;
	int64_t		max;
	int64_t		offset;
} epoch;

static const epoch date_epoch = {INT32_MIN, INT32_MAX, CX_PQ_UNIX_DAYS_OFFSET};
static const epoch ts_epoch = {INT64_MIN, INT64_MAX, CX_PQ_UNIX_USEC_OFFSET};

static bool
is_infinite(const epoch *e, int64_t v)
{
	return v == e->min || v == e->max;
}

static bool
fits_unix(const epoch *e, int64_t v)
{
	return is_infinite(e, v) || v < e->max - e->offset;
}

/* PostgreSQL's -infinity is the type's minimum.  Parquet has no infinity;
 * DuckDB reads -max as -infinity (and max as infinity), so -infinity is
 * stored as -max. */
static int64_t
to_unix(const epoch *e, int64_t v)
{
	if (v == e->min)
		return -e->max;
	return v == e->max ? v : v + e->offset;
}

/* Inverse of to_unix; false for a value it never produces. */
static bool
from_unix(const epoch *e, int64_t u, int64_t *v)
{
	if (u == -e->max)
		*v = e->min;
	else if (u == e->max)
		*v = u;
	else if (u <= e->min + e->offset)
		return false;
	else
		*v = u - e->offset;
	return true;
}

/* Parses canonical numeric text into its unscaled DECIMAL(precision, scale)
 * value; false if it is not one (NaN, too many digits, malformed). */
static bool
decimal_parse(const uint8_t *s, size_t len, int precision, int scale,
			  int128 *out)
{
	size_t		i = 0;
	bool		neg = len > 0 && s[0] == '-';
	int			int_digits = 0;
	int			frac_digits = 0;
	bool		dot = false;
	bool		any = false;
	int128		v = 0;

	for (i = neg ? 1 : 0; i < len; i++)
	{
		if (s[i] == '.' && !dot)
		{
			dot = true;
			continue;
		}
		if (s[i] < '0' || s[i] > '9')
			return false;
		any = true;
		if (dot && ++frac_digits > scale)
			return false;
		if (!dot && (int_digits > 0 || s[i] != '0'))
			int_digits++;
		if (int_digits + scale > precision)
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (!any)
		return false;
	v *= pow10_128(scale - frac_digits);
	*out = neg ? -v : v;
	return true;
}

/* Canonical text of an unscaled value: exactly scale fraction digits. */
static void
decimal_format(int128 v, int scale, cx_buf *out)
{
	char		digits[48];
	int			n = 0;
	bool		neg = v < 0;
	unsigned __int128 u = neg ? -(unsigned __int128) v : (unsigned __int128) v;

	do
	{
		digits[n++] = (char) ('0' + (int) (u % 10));
		u /= 10;
	} while (u > 0 || n <= scale);
	if (neg)
		cx_buf_put_u8(out, '-');
	while (n > 0)
	{
		if (n == scale)
			cx_buf_put_u8(out, '.');
		cx_buf_put_u8(out, (uint8_t) digits[--n]);
	}
}

static void
put_decimal(const cx_pq_leaf *leaf, int128 v, cx_buf *out)
{
	uint8_t    *p;

	if (leaf->ptype == CX_PQ_INT32)
		cx_buf_put_u32(out, (uint32_t) (int32_t) v);
	else if (leaf->ptype == CX_PQ_INT64)
		cx_buf_put_u64(out, (uint64_t) (int64_t) v);
	else if ((p = cx_buf_grow(out, (size_t) leaf->width)) != NULL)
	{
		/* big-endian two's complement */
		for (int32_t k = leaf->width - 1; k >= 0; k--)
		{
			p[k] = (uint8_t) (v & 0xff);
			v >>= 8;
		}
	}
}

static int128
get_decimal(const cx_pq_leaf *leaf, const uint8_t *p)
{
	int128		v;

	if (leaf->ptype == CX_PQ_INT32)
		return (int32_t) cx_load_u32(p);
	if (leaf->ptype == CX_PQ_INT64)
		return (int64_t) cx_load_u64(p);
	v = (int8_t) p[0];			/* sign-extends */
	for (int32_t k = 1; k < leaf->width; k++)
		v = v * 256 + p[k];
	return v;
}

/* ---------------------------------------------------------------------
 * Writing
 * --------------------------------------------------------------------- */

static cx_code
scalar_check(const cx_column *col, cx_type t, const cx_datum *d, cx_err *err)
{
	int128		ignored;

	if (d->isnull)
		return CX_OK;
	if (t == CX_T_DATE && !fits_unix(&date_epoch, d->v.i32))
		return cx_err_set(err, CX_ERR_INVALID,
						  "date %d is outside the range Parquet stores",
						  d->v.i32);
	if ((t == CX_T_TIMESTAMP || t == CX_T_TIMESTAMPTZ) &&
		!fits_unix(&ts_epoch, d->v.i64))
		return cx_err_set(err, CX_ERR_INVALID,
						  "timestamp %lld is outside the range Parquet stores",
						  (long long) d->v.i64);
	if (t == CX_T_NUMERIC && col->precision > 0 &&
		!decimal_parse(d->v.bytes.ptr, d->v.bytes.len, col->precision,
					   col->scale, &ignored))
		return cx_err_set(err, CX_ERR_INVALID,
						  "value \"%.*s\" is not a numeric(%d,%d)",
						  (int) (d->v.bytes.len < 64 ? d->v.bytes.len : 64),
						  (const char *) d->v.bytes.ptr, col->precision,
						  col->scale);
	return CX_OK;
}

cx_code
cx_pq_value_check(const cx_column *col, const cx_datum *d, cx_err *err)
{
	if (d->isnull && stored_required(col))
		return cx_err_set(err, CX_ERR_INVALID, "NULL in a required column");
	if (col->type != CX_T_LIST || d->isnull)
		return scalar_check(col, col->type, d, err);
	for (uint32_t k = 0; k < d->v.list.n; k++)
		if (scalar_check(col, col->elem_type, &d->v.list.items[k], err) != CX_OK)
			return cx_err_prefix(err, "list element %u", k);
	return CX_OK;
}

size_t
cx_pq_stat_bound(const cx_pq_leaf *leaf, const uint8_t *val, size_t len,
				 uint8_t *out)
{
	switch (leaf->type)
	{
		case CX_T_INT16:
			cx_store_u32(out, (uint32_t) (int32_t) (int16_t) cx_load_u16(val));
			return 4;
		case CX_T_DATE:
			cx_store_u32(out, (uint32_t) to_unix(&date_epoch, (int32_t) cx_load_u32(val)));
			return 4;
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			cx_store_u64(out, (uint64_t) to_unix(&ts_epoch, (int64_t) cx_load_u64(val)));
			return 8;
		default:
			memcpy(out, val, len);
			return len;
	}
}

void
cx_pq_put_plain(const cx_pq_leaf *leaf, const uint8_t *val, size_t len,
				cx_buf *out)
{
	uint8_t		fixed[16];
	int128		dec;

	if (leaf->precision > 0)
	{
		/* checked by cx_pq_value_check before it was buffered */
		(void) decimal_parse(val, len, leaf->precision, leaf->scale, &dec);
		put_decimal(leaf, dec, out);
	}
	else if (cx_pq_put_plain_length(leaf, len, out))
		cx_buf_put(out, val, len);
	else
	{
		size_t		n = cx_pq_stat_bound(leaf, val, len, fixed);

		cx_buf_put(out, fixed, n);
	}
}

bool
cx_pq_put_plain_length(const cx_pq_leaf *leaf, size_t len, cx_buf *out)
{
	if (leaf->precision > 0 || leaf->width > 0)
		return false;
	cx_buf_put_u32(out, (uint32_t) len);
	return true;
}

/* ---------------------------------------------------------------------
 * Reading
 * --------------------------------------------------------------------- */

/* Converts one fixed-width PLAIN value p to its engine bytes in e; returns
 * the engine width, or 0 if p holds no value the writer produces. */
static size_t
fixed_to_engine(const cx_pq_leaf *leaf, const uint8_t *p, uint8_t *e)
{
	int32_t		i32;
	int64_t		v;

	switch (leaf->type)
	{
		case CX_T_INT16:
			i32 = (int32_t) cx_load_u32(p);
			if (i32 < INT16_MIN || i32 > INT16_MAX)
				return 0;
			cx_store_u16(e, (uint16_t) i32);
			return 2;
		case CX_T_DATE:
			if (!from_unix(&date_epoch, (int32_t) cx_load_u32(p), &v))
				return 0;
			cx_store_u32(e, (uint32_t) (int32_t) v);
			return 4;
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			if (!cx_pq_timestamp_from_unix((int64_t) cx_load_u64(p), &v))
				return 0;
			cx_store_u64(e, (uint64_t) v);
			return 8;
		default:
			memcpy(e, p, (size_t) leaf->width);
			return (size_t) leaf->width;
	}
}

bool
cx_pq_get_plain(const cx_pq_leaf *leaf, cx_rd *r, cx_buf *out,
				const char **why)
{
	const uint8_t *p;
	uint32_t	len;
	uint8_t		e[16];
	size_t		n;

	if (leaf->width == 0)
	{
		p = cx_rd_bytes32(r, &len);
		if (p == NULL && !cx_rd_ok(r))
		{
			*why = "values are truncated";
			return false;
		}
		cx_buf_put(out, p, len);
		return true;
	}
	p = cx_rd_take(r, (size_t) leaf->width);
	if (p == NULL)
	{
		*why = "values are truncated";
		return false;
	}
	if (leaf->precision > 0)
	{
		int128		v = get_decimal(leaf, p);
		int128		limit = pow10_128(leaf->precision);

		if (v <= -limit || v >= limit)
		{
			*why = "DECIMAL value exceeds its precision";
			return false;
		}
		decimal_format(v, leaf->scale, out);
		return true;
	}
	n = fixed_to_engine(leaf, p, e);
	if (n == 0)
	{
		*why = "value outside the range of its type";
		return false;
	}
	cx_buf_put(out, e, n);
	return true;
}

bool
cx_pq_engine_bound(const cx_pq_leaf *leaf, const uint8_t *val, size_t len,
				   uint8_t *out, size_t *outlen)
{
	if (leaf->width == 0)
	{
		if (len > CX_STATS_MAX_BYTES)
			return false;
		memcpy(out, val, len);
		*outlen = len;
		return true;
	}
	if (len != (size_t) leaf->width)
		return false;
	*outlen = fixed_to_engine(leaf, val, out);
	return *outlen > 0;
}

/* ---------------------------------------------------------------------
 * Statistics
 * --------------------------------------------------------------------- */

bool
cx_pq_stats_from_engine(const cx_pq_leaf *leaf, const cx_colstats *st,
						uint8_t *minb, uint8_t *maxb, cx_pq_stats *out)
{
	bool		var = leaf->ptype == CX_PQ_BYTE_ARRAY;

	memset(out, 0, sizeof(*out));
	out->has_null_count = true;
	out->null_count = (int64_t) st->null_count;
	if (st->has_min)
	{
		out->has_min = true;
		out->min_value.ptr = minb;
		out->min_value.len = cx_pq_stat_bound(leaf, st->min, st->min_len, minb);
		/* a bound of the full length may be a truncated longer value */
		out->has_min_exact = var;
		out->min_exact = st->min_len < CX_STATS_MAX_BYTES;
	}
	if (st->has_max)
	{
		/* never truncated: cx_statacc drops a max that would be */
		out->has_max = true;
		out->max_value.ptr = maxb;
		out->max_value.len = cx_pq_stat_bound(leaf, st->max, st->max_len, maxb);
		out->has_max_exact = var;
		out->max_exact = true;
	}
	return true;
}

static bool
engine_bound(const cx_pq_leaf *leaf, const cx_pq_bytes *b, uint8_t *out,
			 uint8_t *outlen)
{
	size_t		n;

	if (!cx_pq_engine_bound(leaf, b->ptr, b->len, out, &n))
		return false;
	*outlen = (uint8_t) n;
	return true;
}

bool
cx_pq_stats_to_engine(const cx_pq_leaf *leaf, const cx_pq_stats *ps,
					  uint64_t nrows, cx_colstats *st)
{
	memset(st, 0, sizeof(*st));
	if (!ps->has_null_count || ps->null_count < 0 ||
		(uint64_t) ps->null_count > nrows)
		return false;
	st->null_count = (uint64_t) ps->null_count;
	st->value_count = nrows - st->null_count;
	st->has_min = ps->has_min;
	st->has_max = ps->has_max;
	if ((st->has_min || st->has_max) &&
		(!cx_type_has_stats(leaf->type) || st->value_count == 0))
		return false;
	return (!st->has_min || engine_bound(leaf, &ps->min_value, st->min,
										 &st->min_len)) &&
		(!st->has_max || engine_bound(leaf, &ps->max_value, st->max,
									  &st->max_len));
}
