/*
 * test_ring.c — the byte ring's index arithmetic: chunks never overlap,
 * padding at the end wraps a chunk to the start, space freed out of order
 * comes back once the chunks before it are freed, an empty ring takes a
 * chunk as large as itself, and freeing everything returns every byte.
 */
#include <stdlib.h>
#include <string.h>

#include "cx_test.h"
#include "ctxstore/util.h"

#define RING_SIZE 4096

static cx_ring *
new_ring(uint64_t size)
{
	cx_ring    *r = calloc(1, cx_ring_bytes(size));

	cx_ring_init(r, size);
	return r;
}

CX_TEST(ring_wraps_with_padding_and_frees_out_of_order)
{
	cx_ring    *r = new_ring(RING_SIZE);
	uint64_t	a,
				b,
				c,
				d;

	REQUIRE(cx_ring_alloc(r, 1500, &a));
	REQUIRE(cx_ring_alloc(r, 1500, &b));
	CHECK(a == 8 && b == 8 + 1504 + 8);
	/* 1,072 bytes left, all at the end: too few for 1,500. */
	CHECK(!cx_ring_alloc(r, 1500, &c));
	/* Freeing the newer chunk first gives nothing back... */
	cx_ring_free(r, b);
	CHECK(cx_ring_used(r) == 2 * 1512);
	/* ...until the older one goes too. */
	cx_ring_free(r, a);
	CHECK(cx_ring_used(r) == 0);

	REQUIRE(cx_ring_alloc(r, 3000, &a));
	cx_ring_free(r, a);
	REQUIRE(cx_ring_alloc(r, 2000, &a));
	REQUIRE(cx_ring_alloc(r, 1000, &b));
	cx_ring_free(r, a);
	/* 1,080 bytes before the end: the chunk pads them and starts at 0. */
	REQUIRE(cx_ring_alloc(r, 1500, &c));
	CHECK(c == 8);
	CHECK(cx_ring_len(r, c) == 1504);
	CHECK(cx_ring_used(r) == 1008 + (RING_SIZE - 2008 - 1008) + 1512);
	CHECK(!cx_ring_alloc(r, 2000, &d));
	cx_ring_free(r, b);
	/* The padding went with the chunk before it. */
	CHECK(cx_ring_used(r) == 1512);
	cx_ring_free(r, c);
	CHECK(cx_ring_used(r) == 0);
	free(r);
}

CX_TEST(ring_takes_a_chunk_as_large_as_itself_only_when_empty)
{
	cx_ring    *r = new_ring(RING_SIZE);
	uint64_t	a,
				b;

	CHECK(cx_ring_max_len(r) == RING_SIZE - 8);
	CHECK(!cx_ring_alloc(r, RING_SIZE - 7, &a));
	REQUIRE(cx_ring_alloc(r, 100, &a));
	cx_ring_free(r, a);
	/* Empty again, though the head moved: the whole ring is there. */
	REQUIRE(cx_ring_alloc(r, RING_SIZE - 8, &a));
	CHECK(!cx_ring_alloc(r, 0, &b));
	cx_ring_free(r, a);
	CHECK(cx_ring_used(r) == 0);
	free(r);
}

/* Live chunks as the test tracks them. */
typedef struct live_chunk
{
	uint64_t	off;
	size_t		len;
	uint8_t		fill;
} live_chunk;

static bool
overlaps(const live_chunk *x, const live_chunk *y)
{
	return x->off < y->off + y->len && y->off < x->off + x->len;
}

CX_TEST(ring_random_allocs_and_frees_never_overlap)
{
	cx_ring    *r = new_ring(RING_SIZE);
	live_chunk	live[64];
	int			nlive = 0;
	int			allocated = 0;

	srand(7);
	for (int step = 0; step < 20000; step++)
	{
		if (nlive < 64 && rand() % 3 != 0)
		{
			live_chunk	c = {0, (size_t) (rand() % 700), (uint8_t) step};

			if (!cx_ring_alloc(r, c.len, &c.off))
			{
				/* Refused only when the ring holds something. */
				CHECK(nlive > 0);
				continue;
			}
			allocated++;
			CHECK(c.off + c.len <= RING_SIZE);
			for (int i = 0; i < nlive; i++)
				CHECK(!overlaps(&c, &live[i]));
			memset(r->data + c.off, c.fill, c.len);
			live[nlive++] = c;
		}
		else if (nlive > 0)
		{
			int			k = rand() % nlive;

			for (size_t i = 0; i < live[k].len; i++)
				if (r->data[live[k].off + i] != live[k].fill)
				{
					CHECK(!"a chunk's bytes were overwritten");
					break;
				}
			cx_ring_free(r, live[k].off);
			live[k] = live[--nlive];
		}
		CHECK(cx_ring_used(r) <= RING_SIZE);
	}
	while (nlive > 0)
		cx_ring_free(r, live[--nlive].off);
	CHECK(cx_ring_used(r) == 0);
	CHECK(allocated > 5000);
	free(r);
}
