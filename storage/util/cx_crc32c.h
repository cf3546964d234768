/*
 * cx_crc32c.h — CRC-32C (Castagnoli), the checksum on every stored object.
 *
 * CRC-32C is what iSCSI, ext4 and PostgreSQL's WAL use: cheap, and it detects
 * every burst error up to 32 bits.  It guards against torn and bit-rotted
 * objects, not against an adversary.
 */
#ifndef CX_CRC32C_H
#define CX_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Checksum of len bytes.  Chain calls by passing the previous result as crc;
 * start with 0. */
uint32_t	cx_crc32c(uint32_t crc, const void *data, size_t len);

#endif							/* CX_CRC32C_H */
