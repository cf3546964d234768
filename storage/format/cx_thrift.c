/*
 * cx_thrift.c — Thrift compact protocol writer and bounds-checked reader
 * (see cx_thrift.h; the protocol is Apache Thrift's
 * doc/specs/thrift-compact-protocol.md).
 */
#include "format/cx_thrift.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cx_buf.h"

/* ---- writer ---- */

void
cx_thrift_w_init(cx_thrift_w *w, cx_buf *out)
{
	w->out = out;
	w->depth = 0;
}

static void
put_varint(cx_thrift_w *w, uint64_t v)
{
	uint8_t		tmp[10];
	int			n = 0;

	while (v >= 0x80)
	{
		tmp[n++] = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t) v;
	cx_buf_put(w->out, tmp, n);
}

void
cx_thrift_w_begin(cx_thrift_w *w)
{
	/* Deeper nesting is a programming error; make the output fail. */
	if (w->depth == CX_THRIFT_MAX_DEPTH)
	{
		w->out->failed = true;
		return;
	}
	w->last_id[w->depth++] = 0;
}

void
cx_thrift_w_end(cx_thrift_w *w)
{
	cx_buf_put_u8(w->out, CX_THRIFT_STOP);
	if (w->depth > 0)
		w->depth--;
}

void
cx_thrift_w_field(cx_thrift_w *w, int16_t id, cx_thrift_type type)
{
	int16_t    *last;
	int			delta;

	if (w->depth == 0)
	{
		w->out->failed = true;
		return;
	}
	last = &w->last_id[w->depth - 1];
	delta = (int) id - (int) *last;
	if (delta > 0 && delta <= 15)
		cx_buf_put_u8(w->out, (uint8_t) (delta << 4 | type));
	else
	{
		cx_buf_put_u8(w->out, (uint8_t) type);
		cx_thrift_w_i32(w, id);
	}
	*last = id;
}

void
cx_thrift_w_i8(cx_thrift_w *w, int8_t v)
{
	cx_buf_put_u8(w->out, (uint8_t) v);
}

void
cx_thrift_w_i32(cx_thrift_w *w, int32_t v)
{
	uint32_t	u = (uint32_t) v;

	put_varint(w, (u << 1) ^ (uint32_t) -(int32_t) (u >> 31));
}

void
cx_thrift_w_i64(cx_thrift_w *w, int64_t v)
{
	uint64_t	u = (uint64_t) v;

	put_varint(w, (u << 1) ^ (uint64_t) -(int64_t) (u >> 63));
}

void
cx_thrift_w_binary(cx_thrift_w *w, const void *p, size_t n)
{
	put_varint(w, n);
	cx_buf_put(w->out, p, n);
}

void
cx_thrift_w_bool_elem(cx_thrift_w *w, bool v)
{
	cx_buf_put_u8(w->out, v ? CX_THRIFT_TRUE : CX_THRIFT_FALSE);
}

void
cx_thrift_w_list(cx_thrift_w *w, cx_thrift_type elem, uint32_t n)
{
	if (n < 15)
		cx_buf_put_u8(w->out, (uint8_t) (n << 4 | elem));
	else
	{
		cx_buf_put_u8(w->out, (uint8_t) (0xF0 | elem));
		put_varint(w, n);
	}
}

void
cx_thrift_w_field_bool(cx_thrift_w *w, int16_t id, bool v)
{
	cx_thrift_w_field(w, id, v ? CX_THRIFT_TRUE : CX_THRIFT_FALSE);
}

void
cx_thrift_w_field_i8(cx_thrift_w *w, int16_t id, int8_t v)
{
	cx_thrift_w_field(w, id, CX_THRIFT_I8);
	cx_thrift_w_i8(w, v);
}

void
cx_thrift_w_field_i16(cx_thrift_w *w, int16_t id, int16_t v)
{
	cx_thrift_w_field(w, id, CX_THRIFT_I16);
	cx_thrift_w_i32(w, v);
}

void
cx_thrift_w_field_i32(cx_thrift_w *w, int16_t id, int32_t v)
{
	cx_thrift_w_field(w, id, CX_THRIFT_I32);
	cx_thrift_w_i32(w, v);
}

void
cx_thrift_w_field_i64(cx_thrift_w *w, int16_t id, int64_t v)
{
	cx_thrift_w_field(w, id, CX_THRIFT_I64);
	cx_thrift_w_i64(w, v);
}

void
cx_thrift_w_field_binary(cx_thrift_w *w, int16_t id, const void *p, size_t n)
{
	cx_thrift_w_field(w, id, CX_THRIFT_BINARY);
	cx_thrift_w_binary(w, p, n);
}

void
cx_thrift_w_field_string(cx_thrift_w *w, int16_t id, const char *s)
{
	cx_thrift_w_field_binary(w, id, s, strlen(s));
}

void
cx_thrift_w_field_struct(cx_thrift_w *w, int16_t id)
{
	cx_thrift_w_field(w, id, CX_THRIFT_STRUCT);
	cx_thrift_w_begin(w);
}

void
cx_thrift_w_field_list(cx_thrift_w *w, int16_t id, cx_thrift_type elem,
					   uint32_t n)
{
	cx_thrift_w_field(w, id, CX_THRIFT_LIST);
	cx_thrift_w_list(w, elem, n);
}

/* ---- reader ---- */

static const char *const type_names[] = {
	"stop", "bool", "bool", "i8", "i16", "i32", "i64", "double", "binary",
	"list", "set", "map", "struct", "uuid"
};

static const char *
type_name(cx_thrift_type t)
{
	return (unsigned) t <= CX_THRIFT_UUID ? type_names[t] : "unknown";
}

void
cx_thrift_r_init(cx_thrift_r *r, const void *p, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->p = p;
	r->len = len;
}

void
cx_thrift_r_fail(cx_thrift_r *r, const char *fmt,...)
{
	va_list		ap;
	size_t		n;
	const char *in = NULL;

	if (r->bad)
		return;
	r->bad = true;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	for (int d = r->depth - 1; d >= 0 && in == NULL; d--)
		in = r->name[d];
	n = strlen(r->msg);
	snprintf(r->msg + n, sizeof(r->msg) - n, "%s%s at byte %zu",
			 in ? " in " : "", in ? in : "", r->pos);
}

void
cx_thrift_r_nomem(cx_thrift_r *r)
{
	cx_thrift_r_fail(r, "out of memory");
	r->nomem = true;
}

static const uint8_t *
take(cx_thrift_r *r, size_t n)
{
	const uint8_t *p;

	if (r->bad)
		return NULL;
	if (n > r->len - r->pos)
	{
		cx_thrift_r_fail(r, "truncated (%zu bytes needed, %zu left)",
						 n, r->len - r->pos);
		return NULL;
	}
	p = r->p + r->pos;
	r->pos += n;
	return p;
}

static uint8_t
take_u8(cx_thrift_r *r)
{
	const uint8_t *p = take(r, 1);

	return p ? *p : 0;
}

/* An unsigned varint of at most maxbytes bytes whose value fits in bits. */
static uint64_t
get_varint(cx_thrift_r *r, int maxbytes, int bits)
{
	uint64_t	v = 0;

	for (int i = 0; i < maxbytes; i++)
	{
		uint8_t		b = take_u8(r);

		if (r->bad)
			return 0;
		v |= (uint64_t) (b & 0x7F) << (7 * i);
		if (!(b & 0x80))
		{
			if (bits < 64 && v >> bits != 0)
				break;
			return v;
		}
	}
	cx_thrift_r_fail(r, "malformed varint");
	return 0;
}

static int64_t
unzigzag(uint64_t u)
{
	return (int64_t) (u >> 1) ^ -(int64_t) (u & 1);
}

int8_t
cx_thrift_r_i8(cx_thrift_r *r)
{
	return (int8_t) take_u8(r);
}

int16_t
cx_thrift_r_i16(cx_thrift_r *r)
{
	return (int16_t) unzigzag(get_varint(r, 3, 16));
}

int32_t
cx_thrift_r_i32(cx_thrift_r *r)
{
	return (int32_t) unzigzag(get_varint(r, 5, 32));
}

int64_t
cx_thrift_r_i64(cx_thrift_r *r)
{
	return unzigzag(get_varint(r, 10, 64));
}

bool
cx_thrift_r_bool_elem(cx_thrift_r *r)
{
	uint8_t		b = take_u8(r);

	/* Writers use 1 and 2 (the bool field types); 0 is also seen for false. */
	if (b > CX_THRIFT_FALSE)
		cx_thrift_r_fail(r, "bool element %u", b);
	return b == CX_THRIFT_TRUE;
}

const uint8_t *
cx_thrift_r_binary(cx_thrift_r *r, size_t *n)
{
	uint64_t	len = get_varint(r, 10, 64);
	const uint8_t *p;

	*n = 0;
	if (len > r->len - r->pos)
	{
		cx_thrift_r_fail(r, "binary of %llu bytes, %zu left",
						 (unsigned long long) len, r->len - r->pos);
		return NULL;
	}
	p = take(r, (size_t) len);
	if (p)
		*n = (size_t) len;
	return p;
}

static bool
push(cx_thrift_r *r, const char *name)
{
	if (r->bad)
		return false;
	if (r->depth == CX_THRIFT_MAX_DEPTH)
	{
		cx_thrift_r_fail(r, "nested deeper than %d", CX_THRIFT_MAX_DEPTH);
		return false;
	}
	r->name[r->depth] = name;
	r->last_id[r->depth++] = 0;
	return true;
}

static void
pop(cx_thrift_r *r)
{
	if (r->depth > 0)
		r->depth--;
}

bool
cx_thrift_r_begin(cx_thrift_r *r, const char *name)
{
	return push(r, name);
}

void
cx_thrift_r_end(cx_thrift_r *r)
{
	pop(r);
}

bool
cx_thrift_r_next(cx_thrift_r *r, int16_t *id, cx_thrift_type *type)
{
	uint8_t		b = take_u8(r);
	int			delta = b >> 4;

	*id = 0;
	*type = CX_THRIFT_STOP;
	if (r->bad || b == CX_THRIFT_STOP || r->depth == 0)
		return false;
	*type = (cx_thrift_type) (b & 0x0F);
	if (*type == CX_THRIFT_STOP || *type > CX_THRIFT_UUID)
	{
		cx_thrift_r_fail(r, "field of unknown type %d", *type);
		return false;
	}
	if (delta != 0)
		*id = (int16_t) (r->last_id[r->depth - 1] + delta);
	else
		*id = cx_thrift_r_i16(r);
	r->last_id[r->depth - 1] = *id;
	r->field_id = *id;
	return !r->bad;
}

/* A count of elements each taking at least per bytes must fit the rest. */
static bool
count_fits(cx_thrift_r *r, uint64_t n, size_t per)
{
	if (n > (r->len - r->pos) / per)
	{
		cx_thrift_r_fail(r, "%llu elements, %zu bytes left",
						 (unsigned long long) n, r->len - r->pos);
		return false;
	}
	return true;
}

static bool
valid_elem_type(cx_thrift_r *r, cx_thrift_type t)
{
	if (t == CX_THRIFT_STOP || t > CX_THRIFT_UUID)
	{
		cx_thrift_r_fail(r, "element of unknown type %d", t);
		return false;
	}
	return true;
}

bool
cx_thrift_r_list(cx_thrift_r *r, cx_thrift_type *elem, uint32_t *n)
{
	uint8_t		b = take_u8(r);
	uint64_t	size = b >> 4;

	*elem = (cx_thrift_type) (b & 0x0F);
	*n = 0;
	if (size == 15)
		size = get_varint(r, 5, 32);
	if (r->bad || !valid_elem_type(r, *elem) || !count_fits(r, size, 1) ||
		!push(r, NULL))
		return false;
	*n = (uint32_t) size;
	return true;
}

void
cx_thrift_r_list_end(cx_thrift_r *r)
{
	pop(r);
}

static void
skip_struct(cx_thrift_r *r)
{
	int16_t		id;
	cx_thrift_type t;

	if (!push(r, NULL))
		return;
	while (cx_thrift_r_next(r, &id, &t))
		cx_thrift_r_skip(r, t, false);
	pop(r);
}

static void
skip_list(cx_thrift_r *r)
{
	cx_thrift_type elem;
	uint32_t	n;

	if (!cx_thrift_r_list(r, &elem, &n))
		return;
	for (uint32_t i = 0; i < n && !r->bad; i++)
		cx_thrift_r_skip(r, elem, true);
	cx_thrift_r_list_end(r);
}

static void
skip_map(cx_thrift_r *r)
{
	uint64_t	n = get_varint(r, 5, 32);
	uint8_t		kv;

	if (n == 0 || r->bad)
		return;
	kv = take_u8(r);
	if (r->bad || !valid_elem_type(r, kv >> 4) ||
		!valid_elem_type(r, kv & 0x0F) || !count_fits(r, n, 2) ||
		!push(r, NULL))
		return;
	for (uint64_t i = 0; i < n && !r->bad; i++)
	{
		cx_thrift_r_skip(r, kv >> 4, true);
		cx_thrift_r_skip(r, kv & 0x0F, true);
	}
	pop(r);
}

void
cx_thrift_r_skip(cx_thrift_r *r, cx_thrift_type type, bool elem)
{
	size_t		n;

	switch (type)
	{
		case CX_THRIFT_TRUE:
		case CX_THRIFT_FALSE:
			if (elem)
				(void) cx_thrift_r_bool_elem(r);
			break;
		case CX_THRIFT_I8:
			(void) take_u8(r);
			break;
		case CX_THRIFT_I16:
		case CX_THRIFT_I32:
		case CX_THRIFT_I64:
			(void) get_varint(r, 10, 64);
			break;
		case CX_THRIFT_DOUBLE:
			(void) take(r, 8);
			break;
		case CX_THRIFT_BINARY:
			(void) cx_thrift_r_binary(r, &n);
			break;
		case CX_THRIFT_UUID:
			(void) take(r, 16);
			break;
		case CX_THRIFT_LIST:
		case CX_THRIFT_SET:
			skip_list(r);
			break;
		case CX_THRIFT_MAP:
			skip_map(r);
			break;
		case CX_THRIFT_STRUCT:
			skip_struct(r);
			break;
		default:
			cx_thrift_r_fail(r, "value of unknown type %d", type);
	}
}

bool
cx_thrift_r_want(cx_thrift_r *r, cx_thrift_type type, cx_thrift_type want)
{
	bool		is_bool = type == CX_THRIFT_TRUE || type == CX_THRIFT_FALSE;

	if (type == want || (is_bool && want == CX_THRIFT_TRUE))
		return !r->bad;
	cx_thrift_r_fail(r, "field %d is %s, expected %s", r->field_id,
					 type_name(type), type_name(want));
	return false;
}

bool
cx_thrift_r_field_bool(cx_thrift_r *r, cx_thrift_type type, bool *v)
{
	if (cx_thrift_r_want(r, type, CX_THRIFT_TRUE))
		*v = type == CX_THRIFT_TRUE;
	return !r->bad;
}

bool
cx_thrift_r_field_i8(cx_thrift_r *r, cx_thrift_type type, int8_t *v)
{
	if (cx_thrift_r_want(r, type, CX_THRIFT_I8))
		*v = cx_thrift_r_i8(r);
	return !r->bad;
}

bool
cx_thrift_r_field_i16(cx_thrift_r *r, cx_thrift_type type, int16_t *v)
{
	if (cx_thrift_r_want(r, type, CX_THRIFT_I16))
		*v = cx_thrift_r_i16(r);
	return !r->bad;
}

bool
cx_thrift_r_field_i32(cx_thrift_r *r, cx_thrift_type type, int32_t *v)
{
	if (cx_thrift_r_want(r, type, CX_THRIFT_I32))
		*v = cx_thrift_r_i32(r);
	return !r->bad;
}

bool
cx_thrift_r_field_i64(cx_thrift_r *r, cx_thrift_type type, int64_t *v)
{
	if (cx_thrift_r_want(r, type, CX_THRIFT_I64))
		*v = cx_thrift_r_i64(r);
	return !r->bad;
}

bool
cx_thrift_r_field_bytes(cx_thrift_r *r, cx_thrift_type type,
						uint8_t **p, size_t *n)
{
	const uint8_t *src;
	size_t		len;

	if (!cx_thrift_r_want(r, type, CX_THRIFT_BINARY))
		return false;
	src = cx_thrift_r_binary(r, &len);
	if (src == NULL)
		return false;
	/* One spare byte: never malloc(0), and room for a string's NUL. */
	*p = malloc(len + 1);
	if (*p == NULL)
	{
		cx_thrift_r_nomem(r);
		return false;
	}
	memcpy(*p, src, len);
	(*p)[len] = '\0';
	*n = len;
	return true;
}

bool
cx_thrift_r_field_string(cx_thrift_r *r, cx_thrift_type type, char **s)
{
	uint8_t    *p;
	size_t		n;

	if (!cx_thrift_r_field_bytes(r, type, &p, &n))
		return false;
	if (memchr(p, '\0', n) != NULL)
	{
		free(p);
		cx_thrift_r_fail(r, "string field %d holds a NUL byte", r->field_id);
		return false;
	}
	*s = (char *) p;
	return true;
}

bool
cx_thrift_r_field_list(cx_thrift_r *r, cx_thrift_type type,
					   cx_thrift_type want_elem, uint32_t *n)
{
	cx_thrift_type elem;

	*n = 0;
	if (!cx_thrift_r_want(r, type, CX_THRIFT_LIST) ||
		!cx_thrift_r_list(r, &elem, n))
		return false;
	if (*n > 0 && elem != want_elem &&
		!(want_elem == CX_THRIFT_TRUE && elem == CX_THRIFT_FALSE))
	{
		cx_thrift_r_fail(r, "list field %d holds %s, expected %s",
						 r->field_id, type_name(elem), type_name(want_elem));
		cx_thrift_r_list_end(r);
		*n = 0;
		return false;
	}
	return true;
}
