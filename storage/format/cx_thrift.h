/*
 * cx_thrift.h — the Thrift compact protocol, as far as Parquet metadata
 * needs it (cx_parquet_meta.c is the one user).
 *
 * Writer: appends to a cx_buf (whose failure is sticky).  Field headers use
 * the one-byte delta form when the id is 1..15 above the previous field of
 * the same struct and the long form otherwise; a bool field carries its
 * value in the header's type nibble; integers are zigzag varints.
 *
 * Reader: borrows its bytes and, like cx_rd, fails stickily: the first
 * problem (truncation, a malformed varint, an unknown type, nesting deeper
 * than CX_THRIFT_MAX_DEPTH, a list longer than the bytes left, a field of
 * the wrong type) sets bad and a message, and every later read yields
 * zeroes.  It never reads past its buffer.  Decoders check cx_thrift_r_ok()
 * once per structure.
 */
#ifndef CX_THRIFT_H
#define CX_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctxstore/util.h"

/* Compact protocol type ids (on the wire). */
typedef enum cx_thrift_type
{
	CX_THRIFT_STOP = 0,
	CX_THRIFT_TRUE = 1,			/* bool field true; bool list element type */
	CX_THRIFT_FALSE = 2,
	CX_THRIFT_I8 = 3,
	CX_THRIFT_I16 = 4,
	CX_THRIFT_I32 = 5,
	CX_THRIFT_I64 = 6,
	CX_THRIFT_DOUBLE = 7,
	CX_THRIFT_BINARY = 8,
	CX_THRIFT_LIST = 9,
	CX_THRIFT_SET = 10,
	CX_THRIFT_MAP = 11,
	CX_THRIFT_STRUCT = 12,
	CX_THRIFT_UUID = 13
} cx_thrift_type;

/* Structs, lists, sets and maps nested deeper than this are refused (Parquet
 * metadata nests at most 6 deep), which bounds the skipper's recursion. */
#define CX_THRIFT_MAX_DEPTH 32

/* ---- writer ---- */

typedef struct cx_thrift_w
{
	cx_buf	   *out;
	int			depth;			/* open structs */
	int16_t		last_id[CX_THRIFT_MAX_DEPTH];
} cx_thrift_w;

void		cx_thrift_w_init(cx_thrift_w *w, cx_buf *out);

/* A struct: begin, fields, end (which writes the stop byte).  The top-level
 * struct too.  A struct field's header comes first (cx_thrift_w_field);
 * a struct list element has none. */
void		cx_thrift_w_begin(cx_thrift_w *w);
void		cx_thrift_w_end(cx_thrift_w *w);
void		cx_thrift_w_field(cx_thrift_w *w, int16_t id, cx_thrift_type type);

/* Values (after a field or list header). */
void		cx_thrift_w_i8(cx_thrift_w *w, int8_t v);
void		cx_thrift_w_i32(cx_thrift_w *w, int32_t v);	/* i16 too */
void		cx_thrift_w_i64(cx_thrift_w *w, int64_t v);
void		cx_thrift_w_binary(cx_thrift_w *w, const void *p, size_t n);
void		cx_thrift_w_bool_elem(cx_thrift_w *w, bool v);
void		cx_thrift_w_list(cx_thrift_w *w, cx_thrift_type elem, uint32_t n);

/* Field header and value in one. */
void		cx_thrift_w_field_bool(cx_thrift_w *w, int16_t id, bool v);
void		cx_thrift_w_field_i8(cx_thrift_w *w, int16_t id, int8_t v);
void		cx_thrift_w_field_i16(cx_thrift_w *w, int16_t id, int16_t v);
void		cx_thrift_w_field_i32(cx_thrift_w *w, int16_t id, int32_t v);
void		cx_thrift_w_field_i64(cx_thrift_w *w, int16_t id, int64_t v);
void		cx_thrift_w_field_binary(cx_thrift_w *w, int16_t id,
									 const void *p, size_t n);
void		cx_thrift_w_field_string(cx_thrift_w *w, int16_t id, const char *s);
/* Header of a struct field followed by cx_thrift_w_begin. */
void		cx_thrift_w_field_struct(cx_thrift_w *w, int16_t id);
/* Header of a list field followed by the list header. */
void		cx_thrift_w_field_list(cx_thrift_w *w, int16_t id,
								   cx_thrift_type elem, uint32_t n);

/* ---- reader ---- */

typedef struct cx_thrift_r
{
	const uint8_t *p;
	size_t		len;
	size_t		pos;
	bool		bad;
	bool		nomem;			/* bad because an allocation failed */
	int			depth;			/* open containers */
	int16_t		last_id[CX_THRIFT_MAX_DEPTH];
	const char *name[CX_THRIFT_MAX_DEPTH];	/* struct names, for messages */
	int16_t		field_id;		/* of the last field header read */
	char		msg[160];		/* the first problem */
} cx_thrift_r;

void		cx_thrift_r_init(cx_thrift_r *r, const void *p, size_t len);
static inline bool cx_thrift_r_ok(const cx_thrift_r *r) { return !r->bad; }

/* Marks the reader bad with a message (the first one wins); the message is
 * suffixed with the struct being read and the byte offset. */
void		cx_thrift_r_fail(cx_thrift_r *r, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
/* An allocation failed: bad, and nomem so the caller reports CX_ERR_NOMEM. */
void		cx_thrift_r_nomem(cx_thrift_r *r);

/*
 * A struct: cx_thrift_r_begin (name is for messages), then
 * cx_thrift_r_next until it returns false (the stop byte, or bad), then
 * cx_thrift_r_end.  Every field the caller does not read must be skipped.
 */
bool		cx_thrift_r_begin(cx_thrift_r *r, const char *name);
bool		cx_thrift_r_next(cx_thrift_r *r, int16_t *id, cx_thrift_type *type);
void		cx_thrift_r_end(cx_thrift_r *r);

/* Skips one value of any type, nested containers included.  elem: the value
 * is a list element (a bool then takes a byte; in a field it takes none). */
void		cx_thrift_r_skip(cx_thrift_r *r, cx_thrift_type type, bool elem);

/* Raw values. */
int8_t		cx_thrift_r_i8(cx_thrift_r *r);
int16_t		cx_thrift_r_i16(cx_thrift_r *r);
int32_t		cx_thrift_r_i32(cx_thrift_r *r);
int64_t		cx_thrift_r_i64(cx_thrift_r *r);
bool		cx_thrift_r_bool_elem(cx_thrift_r *r);
/* Points into the reader's bytes (NULL and bad when short). */
const uint8_t *cx_thrift_r_binary(cx_thrift_r *r, size_t *n);
/* A list or set header; n is checked against the bytes left (every element
 * takes at least one).  Opens a container level: call cx_thrift_r_list_end
 * after the elements. */
bool		cx_thrift_r_list(cx_thrift_r *r, cx_thrift_type *elem, uint32_t *n);
void		cx_thrift_r_list_end(cx_thrift_r *r);

/* Typed field values: type is the field header's; a different type makes
 * the reader bad.  They return cx_thrift_r_ok() afterwards. */
bool		cx_thrift_r_want(cx_thrift_r *r, cx_thrift_type type,
							 cx_thrift_type want);
bool		cx_thrift_r_field_bool(cx_thrift_r *r, cx_thrift_type type, bool *v);
bool		cx_thrift_r_field_i8(cx_thrift_r *r, cx_thrift_type type, int8_t *v);
bool		cx_thrift_r_field_i16(cx_thrift_r *r, cx_thrift_type type, int16_t *v);
bool		cx_thrift_r_field_i32(cx_thrift_r *r, cx_thrift_type type, int32_t *v);
bool		cx_thrift_r_field_i64(cx_thrift_r *r, cx_thrift_type type, int64_t *v);
/* A malloc'd copy of binary bytes (never NULL on success, even if empty). */
bool		cx_thrift_r_field_bytes(cx_thrift_r *r, cx_thrift_type type,
									uint8_t **p, size_t *n);
/* A malloc'd NUL-terminated copy; a NUL inside the string is malformed. */
bool		cx_thrift_r_field_string(cx_thrift_r *r, cx_thrift_type type,
									 char **s);
/* A list field's header, with its element type checked. */
bool		cx_thrift_r_field_list(cx_thrift_r *r, cx_thrift_type type,
								   cx_thrift_type want_elem, uint32_t *n);

#endif							/* CX_THRIFT_H */
