/*
 * cx_buf.c — growable buffers and little-endian field readers.
 */
#include "util/cx_buf.h"

#include <stdlib.h>
#include <string.h>

void
cx_buf_init(cx_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->failed = false;
}

void
cx_buf_free(cx_buf *b)
{
	free(b->data);
	cx_buf_init(b);
}

void
cx_buf_reset(cx_buf *b)
{
	b->len = 0;
	b->failed = false;
}

void
cx_buf_reset_small(cx_buf *b)
{
	if (b->cap > CX_BUF_KEEP_BYTES)
	{
		cx_buf_free(b);
		cx_buf_init(b);
	}
	cx_buf_reset(b);
}

void
cx_buf_swap(cx_buf *a, cx_buf *b)
{
	cx_buf		t = *a;

	*a = *b;
	*b = t;
}

bool
cx_buf_reserve_slow(cx_buf *b, size_t extra)
{
	size_t		need;
	size_t		cap;
	uint8_t    *p;

	if (b->failed)
		return false;
	if (extra > SIZE_MAX - b->len)
	{
		b->failed = true;
		return false;
	}
	need = b->len + extra;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	p = realloc(b->data, cap);
	if (p == NULL)
	{
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

uint8_t *
cx_buf_detach(cx_buf *b, size_t *len)
{
	uint8_t    *p = b->data;

	if (len)
		*len = b->len;
	cx_buf_init(b);
	return p;
}

uint8_t *
cx_buf_grow(cx_buf *b, size_t n)
{
	uint8_t    *p;

	/* At least a byte, so that growing an empty buffer by 0 still yields
	 * a pointer (NULL means out of memory) and never NULL + 0. */
	if (!cx_buf_reserve(b, n > 0 ? n : 1))
		return NULL;
	p = b->data + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}

void
cx_buf_put_str16(cx_buf *b, const char *s)
{
	size_t		n = strlen(s);

	if (n > UINT16_MAX)
	{
		b->failed = true;
		return;
	}
	cx_buf_put_u16(b, (uint16_t) n);
	cx_buf_put(b, s, n);
}

void
cx_rd_init(cx_rd *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->pos = 0;
	r->bad = false;
}

char *
cx_rd_str16(cx_rd *r)
{
	uint16_t	n = cx_rd_u16(r);
	const uint8_t *p = cx_rd_take(r, n);
	char	   *s;

	if (p == NULL)
		return NULL;
	/* A NUL inside would silently shorten the C string (and a key with one
	 * could pass validation as a different key). */
	if (memchr(p, '\0', n) != NULL)
	{
		r->bad = true;
		return NULL;
	}
	s = malloc((size_t) n + 1);
	if (s == NULL)
	{
		r->bad = true;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

char *
cx_strdup(const char *s)
{
	return cx_memdup(s, strlen(s) + 1);
}

size_t
cx_str_memory(const char *s)
{
	return s != NULL ? strlen(s) + 1 : 0;
}

void *
cx_memdup(const void *p, size_t n)
{
	void	   *q = malloc(n ? n : 1);

	if (q != NULL && n > 0)
		memcpy(q, p, n);
	return q;
}
