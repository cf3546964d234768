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

/*
 * The last n (1..7) bytes of a len-byte key that ends at end, as
 * cx_hash_word reads them, with loads of a constant size: a memcpy of n
 * bytes into a zeroed word is a call, and a store the next load cannot
 * forward from (about a fifth of hashing a 36-byte key).  A key of 8 bytes
 * or more: its last 8 bytes, shifted right; a shorter one: two 4-byte
 * loads that may overlap, or three single bytes.
 */
static inline uint64_t
cx_hash_tail(const uint8_t *end, size_t n, size_t len)
{
	const uint8_t *p = end - n;

	if (len >= 8)
		return cx_hash_word(end - 8, 8) >> (8 * (8 - n));
	if (n >= 4)
		return cx_hash_word(p, 4) | cx_hash_word(end - 4, 4) << (8 * (n - 4));
	return (uint64_t) p[0] | (uint64_t) p[n / 2] << (8 * (n / 2)) |
		(uint64_t) p[n - 1] << (8 * (n - 1));
}

static inline uint64_t
cx_hash_bytes(const uint8_t *p, size_t len)
{
	uint64_t	h = 0x9e3779b97f4a7c15ULL ^ len;
	size_t		i = 0;

	for (; i + 8 <= len; i += 8)
		h = cx_mix64(h ^ cx_hash_word(p + i, 8));
	if (i < len)
		h = cx_mix64(h ^ cx_hash_tail(p + len, len - i, len) ^ 0x100);
	return cx_mix64(h);
}

#endif							/* CX_HASH_H */
