/*
 * cx_ring.c — a byte ring of variable-size chunks freed in any order
 * (ctxstore/util.h describes the layout).
 */
#include <stddef.h>
#include <string.h>

#include "ctxstore/util.h"

#define RING_ALIGN 8

/* The header at the start of every chunk, padding included. */
typedef struct ring_chunk
{
	uint32_t	len;			/* bytes of the chunk, header included */
	uint32_t	live;			/* 0 once freed (padding: from the start) */
} ring_chunk;

static uint64_t
align_up(uint64_t n)
{
	return (n + RING_ALIGN - 1) & ~(uint64_t) (RING_ALIGN - 1);
}

static ring_chunk *
chunk_at(const cx_ring *r, uint64_t pos)
{
	return (ring_chunk *) (r->data + pos % r->size);
}

size_t
cx_ring_bytes(uint64_t size)
{
	return offsetof(cx_ring, data) + (size & ~(uint64_t) (RING_ALIGN - 1));
}

void
cx_ring_init(cx_ring *r, uint64_t size)
{
	r->size = size & ~(uint64_t) (RING_ALIGN - 1);
	r->head = 0;
	r->tail = 0;
}

size_t
cx_ring_max_len(const cx_ring *r)
{
	uint64_t	max = r->size > sizeof(ring_chunk) ? r->size - sizeof(ring_chunk) : 0;

	/* A chunk's length must fit its header's 32 bits. */
	return max > UINT32_MAX - 2 * RING_ALIGN ? UINT32_MAX - 2 * RING_ALIGN : max;
}

/* Starts a chunk of need bytes at the head. */
static uint64_t
put_chunk(cx_ring *r, uint64_t need, uint32_t live)
{
	ring_chunk *c = chunk_at(r, r->head);
	uint64_t	pos = r->head % r->size;

	c->len = (uint32_t) need;
	c->live = live;
	r->head += need;
	return pos;
}

bool
cx_ring_alloc(cx_ring *r, size_t len, uint64_t *off)
{
	uint64_t	need = sizeof(ring_chunk) + align_up(len);
	uint64_t	to_end;
	uint64_t	pad;

	if (len > cx_ring_max_len(r))
		return false;
	/* Empty: start over at the beginning, so that any chunk up to the
	 * ring's size fits without padding. */
	if (r->head == r->tail)
		r->head = r->tail = 0;
	to_end = r->size - r->head % r->size;
	pad = need > to_end ? to_end : 0;
	if (pad + need > r->size - cx_ring_used(r))
		return false;
	if (pad > 0)
		(void) put_chunk(r, pad, 0);
	*off = put_chunk(r, need, 1) + sizeof(ring_chunk);
	return true;
}

void
cx_ring_free(cx_ring *r, uint64_t off)
{
	chunk_at(r, off - sizeof(ring_chunk))->live = 0;
	while (r->tail != r->head && !chunk_at(r, r->tail)->live)
		r->tail += chunk_at(r, r->tail)->len;
}

size_t
cx_ring_len(const cx_ring *r, uint64_t off)
{
	return chunk_at(r, off - sizeof(ring_chunk))->len - sizeof(ring_chunk);
}
