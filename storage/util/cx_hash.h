/*
 * cx_hash.h — the 64-bit finaliser of MurmurHash3 (also SplitMix64's):
 * every input bit affects every output bit.  In-memory hash maps mix with
 * it, and so does the key index filter, whose stored bits depend on it
 * (docs/FORMAT.md "Key index segments"): it never changes.
 */
#ifndef CX_HASH_H
#define CX_HASH_H

#include <stdint.h>

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

#endif							/* CX_HASH_H */
