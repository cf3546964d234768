/*
 * cx_crc32c.c — table-driven CRC-32C, slicing by 8 bytes.
 *
 * Portable C rather than SSE4.2 intrinsics: the storage library must build
 * anywhere PostgreSQL does, and checksumming is far from the bottleneck next
 * to zstd and object-store round trips.
 */
#include "util/cx_crc32c.h"

#include <pthread.h>

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void
crc_build_tables(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
				crc_table[0][crc_table[t - 1][i] & 0xFF];
}

uint32_t
cx_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	pthread_once(&crc_once, crc_build_tables);
	crc = ~crc;
	while (len >= 8)
	{
		uint32_t	lo = crc ^ ((uint32_t) p[0] | (uint32_t) p[1] << 8 |
								(uint32_t) p[2] << 16 | (uint32_t) p[3] << 24);

		crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
			crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
			crc_table[3][p[4]] ^ crc_table[2][p[5]] ^
			crc_table[1][p[6]] ^ crc_table[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
	return ~crc;
}
