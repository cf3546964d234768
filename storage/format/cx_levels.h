/*
 * cx_levels.h — private to the fragment writer and reader: Parquet's
 * RLE / bit-packed hybrid encoding of definition and repetition levels.
 *
 * A level stream is a sequence of runs, each starting with a ULEB128 header:
 * (count << 1) for an RLE run of count copies of one value (stored in
 * ceil(bit_width / 8) little-endian bytes), or (groups << 1) | 1 for groups *
 * 8 bit-packed values (bit_width bits each, least significant bit first).
 * Data pages V1 prefix the stream with its length as a u32.
 */
#ifndef CX_LEVELS_H
#define CX_LEVELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cx_buf.h"

/* Bits needed to store levels 0..max_level. */
int			cx_level_bit_width(int max_level);

/* Appends the u32 length and the hybrid encoding of n levels (each at most
 * 2^bit_width - 1, bit_width 1..8). */
void		cx_levels_encode(const uint8_t *levels, size_t n, int bit_width,
							 cx_buf *out);

/*
 * Decodes n levels from the length-prefixed stream at r into out[n]; false
 * (with *why set) when the stream is truncated, holds fewer than n levels
 * or a level above max_level.  Consumes the whole prefixed stream.
 */
bool		cx_levels_decode(cx_rd *r, size_t n, int max_level, uint8_t *out,
							 const char **why);

#endif							/* CX_LEVELS_H */
