/*
 * test_lru.c — the bounded LRU cache (util/cx_lru.h): hits copy the bytes,
 * the least recently used goes first, the bound holds with every byte
 * counted, and an entry larger than the bound is not kept.
 */
#include <stdlib.h>

#include "util/cx_lru.h"
#include "cx_test.h"

/* The length of the entry called name, now the most recently used; -1
 * when there is none. */
static long
got(cx_lru *c, const char *name)
{
	cx_buf		b;
	long		len;

	cx_buf_init(&b);
	len = cx_lru_get(c, name, &b) ? (long) b.len : -1;
	cx_buf_free(&b);
	return len;
}

CX_TEST(lru_evicts_the_least_recently_used_within_its_bound)
{
	char		block[1000];
	cx_lru	   *c = cx_lru_new(SIZE_MAX);
	cx_buf		b;
	size_t		one;
	uint8_t    *huge;

	REQUIRE(c != NULL);
	memset(block, 'x', sizeof(block));
	cx_lru_put(c, "a", block, sizeof(block));
	one = cx_lru_stats_of(c).bytes;
	CHECK(one > sizeof(block));	/* the name and bookkeeping count too */
	cx_lru_set_limit(c, 3 * one);
	cx_lru_put(c, "b", block, sizeof(block));
	cx_lru_put(c, "c", block, sizeof(block));
	CHECK(cx_lru_stats_of(c).entries == 3);
	/* a used again: b is the least recently used, and goes for d */
	CHECK(got(c, "a") == 1000);
	cx_lru_put(c, "d", block, sizeof(block));
	CHECK(cx_lru_stats_of(c).evictions == 1 &&
		  cx_lru_stats_of(c).bytes <= 3 * one);
	CHECK(got(c, "b") == -1 && got(c, "a") == 1000 && got(c, "c") == 1000);
	/* a name put again replaces its entry; oldest first now: a, c, d */
	cx_lru_put(c, "d", "ddd", 3);
	cx_buf_init(&b);
	CHECK(cx_lru_get(c, "d", &b) && b.len == 3 && memcmp(b.data, "ddd", 3) == 0);
	cx_buf_free(&b);
	CHECK(cx_lru_stats_of(c).entries == 3);
	/* larger than the bound: not kept, nothing evicted for it */
	huge = calloc(1, 3 * one);
	REQUIRE(huge != NULL);
	cx_lru_put(c, "huge", huge, 3 * one);
	free(huge);
	CHECK(got(c, "huge") == -1 && cx_lru_stats_of(c).entries == 3);
	/* a smaller bound evicts, oldest first, what no longer fits */
	cx_lru_set_limit(c, one);
	CHECK(cx_lru_stats_of(c).bytes <= one && cx_lru_stats_of(c).entries == 1);
	CHECK(got(c, "d") == 3);
	cx_lru_set_limit(c, 0);
	CHECK(cx_lru_stats_of(c).entries == 0 && cx_lru_stats_of(c).bytes == 0);
	cx_lru_free(c);
}
