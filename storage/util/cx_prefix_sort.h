/*
 * cx_prefix_sort.h — sorting items by an 8-byte prefix of their sort key,
 * then by the whole key where prefixes tie.
 *
 * A caller gives each item a prefix that never contradicts its order (two
 * items whose prefixes differ are in the order of their prefixes) and a
 * comparison that orders items fully.  The prefixes are sorted with a radix
 * sort (no comparison calls, a byte per pass); only stretches of equal
 * prefixes are sorted with the comparison.  Random keys (uuids as text)
 * almost never share 8 bytes, so most items are never compared: a general
 * sort calls its comparison about log2(n) times per item, each call loading
 * two keys from wherever they lie.
 */
#ifndef CX_PREFIX_SORT_H
#define CX_PREFIX_SORT_H

#include <stddef.h>
#include <stdint.h>

/* An item's place in the sort: its prefix and the caller's index of it. */
typedef struct cx_prefix_slot
{
	uint64_t	prefix;
	uint32_t	item;
} cx_prefix_slot;

/*
 * The big-endian value of the first (up to) 8 bytes at p, zero-padded:
 * byte-wise order of the byte strings (a shorter string first where one is
 * the other's start) is never contradicted by their prefixes'.
 */
uint64_t	cx_bytes_prefix(const uint8_t *p, size_t len);

/*
 * Sorts the n slots at slots by prefix, stably, and each stretch of equal
 * prefixes with cmp (qsort_r's contract, given two cx_prefix_slot pointers
 * and arg), using spare (room for n more slots).  Returns where the sorted
 * slots are: slots or spare.
 */
cx_prefix_slot *cx_prefix_sort(cx_prefix_slot *slots, cx_prefix_slot *spare,
							   uint32_t n,
							   int (*cmp) (const void *, const void *, void *),
							   void *arg);

#endif							/* CX_PREFIX_SORT_H */
