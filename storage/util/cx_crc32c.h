/*
 * cx_crc32c.h — CRC-32C (Castagnoli), the checksum on every stored object.
 *
 * CRC-32C is what iSCSI, ext4 and PostgreSQL's WAL use: cheap, and it detects
 * every burst error up to 32 bits.  It guards against torn and bit-rotted
 * objects, not against an adversary.
 */
#ifndef CX_CRC32C_H
#define CX_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Checksum of len bytes.  Chain calls by passing the previous result as crc;
 * start with 0. */
uint32_t	cx_crc32c(uint32_t crc, const void *data, size_t len);
/* The same, by table on every CPU: what cx_crc32c falls back to, and what
 * the tests hold the CPU's instruction to. */
uint32_t	cx_crc32c_portable(uint32_t crc, const void *data, size_t len);

/*
 * Whether a stored checksum (CRC-32C or, for Parquet pages, CRC-32) matches
 * the computed one.  The fuzzing build (make fuzz defines
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, libFuzzer's convention) takes
 * every checksum as a match, so that mutated bytes reach the decoders behind
 * it; no other build defines it.
 */
static inline bool
cx_checksum_matches(uint32_t stored, uint32_t computed)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	(void) stored;
	(void) computed;
	return true;
#else
	return stored == computed;
#endif
}

#endif							/* CX_CRC32C_H */
