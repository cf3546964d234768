/*
 * cx_buf.h — growable byte buffers and bounds-checked little-endian readers.
 *
 * Every on-disk integer is little-endian (docs/FORMAT.md).  Writers append to a
 * cx_buf whose failure is sticky: after an allocation failure every further
 * append is a no-op and cx_buf_ok() is false, so encoders check once at the end
 * instead of after each field.  Readers (cx_rd) work the same way: reading past
 * the end sets a sticky "bad" flag and yields zeroes, so a decoder checks
 * cx_rd_ok() once and reports the object as corrupt.
 *
 * Ownership: a cx_buf owns its data; cx_buf_free() releases it and
 * cx_buf_detach() hands it to the caller.  A cx_rd borrows its bytes.
 */
#ifndef CX_BUF_H
#define CX_BUF_H

#include "ctxstore/util.h"

void		cx_buf_reset(cx_buf *b);	/* len = 0, keeps capacity */

/*
 * The capacity a buffer reused from one request to the next keeps.  A
 * larger one (a large transaction's) goes back to malloc, and from there to
 * the OS, instead of leaving the process that large for good.
 */
#define CX_BUF_KEEP_BYTES ((size_t) 1 << 20)
/* len = 0; the capacity is kept only up to CX_BUF_KEEP_BYTES. */
void		cx_buf_reset_small(cx_buf *b);
/* Exchanges the contents of a and b (a move without a copy). */
void		cx_buf_swap(cx_buf *a, cx_buf *b);
uint8_t    *cx_buf_detach(cx_buf *b, size_t *len);	/* caller frees */

/* Appends a zero-filled region and returns a pointer to it (NULL on failure). */
uint8_t    *cx_buf_grow(cx_buf *b, size_t n);

/* Little-endian stores/loads on raw memory (unaligned-safe). */
static inline void
cx_store_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
}

static inline void
cx_store_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint16_t
cx_load_u16(const uint8_t *p)
{
	return (uint16_t) (p[0] | (p[1] << 8));
}

static inline uint32_t
cx_load_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
		(uint32_t) p[3] << 24;
}

static inline void
cx_buf_put_u16(cx_buf *b, uint16_t v)
{
	uint8_t		t[2];

	cx_store_u16(t, v);
	cx_buf_put(b, t, 2);
}

static inline void
cx_buf_put_u32(cx_buf *b, uint32_t v)
{
	uint8_t		t[4];

	cx_store_u32(t, v);
	cx_buf_put(b, t, 4);
}

static inline void
cx_buf_put_i64(cx_buf *b, int64_t v)
{
	cx_buf_put_u64(b, (uint64_t) v);
}

/* u32 length followed by the bytes. */
static inline void
cx_buf_put_bytes32(cx_buf *b, const void *p, uint32_t n)
{
	cx_buf_put_u32(b, n);
	cx_buf_put(b, p, n);
}

/* u16 length followed by the bytes of a NUL-terminated string (max 65535). */
void		cx_buf_put_str16(cx_buf *b, const char *s);

static inline bool cx_rd_ok(const cx_rd *r) { return !r->bad; }

/* Returns a pointer into the reader's bytes, or NULL (and bad) if short. */
static inline const uint8_t *
cx_rd_take(cx_rd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || n > r->len - r->pos)
	{
		r->bad = true;
		return NULL;
	}
	p = r->p + r->pos;
	r->pos += n;
	return p;
}

static inline uint8_t
cx_rd_u8(cx_rd *r)
{
	const uint8_t *p = cx_rd_take(r, 1);

	return p ? p[0] : 0;
}

static inline uint16_t
cx_rd_u16(cx_rd *r)
{
	const uint8_t *p = cx_rd_take(r, 2);

	return p ? cx_load_u16(p) : 0;
}

static inline uint32_t
cx_rd_u32(cx_rd *r)
{
	const uint8_t *p = cx_rd_take(r, 4);

	return p ? cx_load_u32(p) : 0;
}

static inline uint64_t
cx_rd_u64(cx_rd *r)
{
	const uint8_t *p = cx_rd_take(r, 8);

	return p ? cx_load_u64(p) : 0;
}

static inline int64_t
cx_rd_i64(cx_rd *r)
{
	return (int64_t) cx_rd_u64(r);
}

/* Reads a u32-length-prefixed byte string; *n receives the length. */
static inline const uint8_t *
cx_rd_bytes32(cx_rd *r, uint32_t *n)
{
	*n = cx_rd_u32(r);
	if (r->bad)
	{
		*n = 0;
		return NULL;
	}
	return cx_rd_take(r, *n);
}

/* Reads a u16-length-prefixed string into a new malloc'd NUL-terminated copy
 * (NULL and bad on truncation, on a NUL byte inside the string, or on
 * allocation failure). */
char	   *cx_rd_str16(cx_rd *r);

/* malloc'd copy of a string / of bytes; NULL on failure. */
char	   *cx_strdup(const char *s);
void	   *cx_memdup(const void *p, size_t n);
/* The bytes a malloc'd string holds, its NUL included (0 for NULL): what
 * the memory accounting of cached objects adds up. */
size_t		cx_str_memory(const char *s);

#endif							/* CX_BUF_H */
