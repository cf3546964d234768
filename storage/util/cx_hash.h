/*
 * cx_hash.h — a 64-bit hash of byte strings: little-endian 8-byte words
 * folded with the 64-bit finaliser of MurmurHash3 (also SplitMix64's), in
 * which every input bit affects every output bit.  In-memory hash maps use
 * it, and so does the key index filter, whose stored bits depend on it
 * (docs/FORMAT.md "Key index segments", filter block): it never changes,
 * and it reads words in little-endian order on every host.
 */
#ifndef CX_HASH_H
#define CX_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t
cx_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* The n <= 8 bytes at p as a little-endian integer. */
static inline uint64_t
cx_hash_word(const uint8_t *p, size_t n)
{
	uint64_t	w = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(&w, p, n);
#else
	for (size_t i = 0; i < n; i++)
		w |= (uint64_t) p[i] << (8 * i);
#endif
	return w;
}

static inline uint64_t
cx_hash_bytes(const uint8_t *p, size_t len)
{
	uint64_t	h = 0x9e3779b97f4a7c15ULL ^ len;
	size_t		i = 0;

	for (; i + 8 <= len; i += 8)
		h = cx_mix64(h ^ cx_hash_word(p + i, 8));
	if (i < len)
		h = cx_mix64(h ^ cx_hash_word(p + i, len - i) ^ 0x100);
	return cx_mix64(h);
}

#endif							/* CX_HASH_H */
