/*
 * cx_prefix_sort.c — sorting by an 8-byte prefix, then by the whole key
 * (cx_prefix_sort.h).
 */
#include "util/cx_prefix_sort.h"

#include <stdlib.h>

uint64_t
cx_bytes_prefix(const uint8_t *p, size_t len)
{
	uint64_t	prefix = 0;

	for (size_t i = 0; i < sizeof(prefix); i++)
		prefix = (prefix << 8) | (i < len ? p[i] : 0);
	return prefix;
}

/* The byte of prefix p that radix pass `pass` sorts by. */
static inline uint32_t
digit(uint64_t p, int pass)
{
	return (uint32_t) (p >> (8 * pass)) & 0xff;
}

/*
 * A least-significant-digit radix sort of n slots by prefix, a byte per
 * pass, through spare; passes over a byte every prefix shares are skipped.
 * Stable.  Returns where the sorted slots are.
 */
static cx_prefix_slot *
radix_sort(cx_prefix_slot *a, cx_prefix_slot *spare, uint32_t n)
{
	uint32_t	count[8][256] = {{0}};

	for (uint32_t i = 0; i < n; i++)
		for (int pass = 0; pass < 8; pass++)
			count[pass][digit(a[i].prefix, pass)]++;
	for (int pass = 0; pass < 8; pass++)
	{
		uint32_t   *at = count[pass];
		uint32_t	next = 0;
		cx_prefix_slot *t;

		if (at[digit(a[0].prefix, pass)] == n)
			continue;
		for (int d = 0; d < 256; d++)
		{
			uint32_t	c = at[d];

			at[d] = next;
			next += c;
		}
		for (uint32_t i = 0; i < n; i++)
			spare[at[digit(a[i].prefix, pass)]++] = a[i];
		t = a;
		a = spare;
		spare = t;
	}
	return a;
}

cx_prefix_slot *
cx_prefix_sort(cx_prefix_slot *slots, cx_prefix_slot *spare, uint32_t n,
			   int (*cmp) (const void *, const void *, void *), void *arg)
{
	cx_prefix_slot *a;

	if (n == 0)
		return slots;
	a = radix_sort(slots, spare, n);
	for (uint32_t i = 0; i < n;)
	{
		uint32_t	j = i + 1;

		while (j < n && a[j].prefix == a[i].prefix)
			j++;
		if (j - i > 1)
			qsort_r(&a[i], j - i, sizeof(cx_prefix_slot), cmp, arg);
		i = j;
	}
	return a;
}
