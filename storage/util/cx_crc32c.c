/*
 * cx_crc32c.c — CRC-32C: the SSE4.2 crc32 instruction where the CPU has it,
 * else table-driven, slicing by 8 bytes.
 *
 * Every object read or written is checksummed (metadata frames, key index
 * blocks, fragment footers), and the table loop was 2-4% of the writer's and
 * the maintenance worker's CPU; the instruction does 8 bytes a cycle or so.
 * It is picked at run time (x86-64 built by GCC or Clang only), so the
 * library still builds and runs anywhere PostgreSQL does.
 */
#include "util/cx_crc32c.h"

#include <pthread.h>
#include <string.h>

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
cx_crc32c_portable(uint32_t crc, const void *data, size_t len)
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

__attribute__((target("sse4.2")))
static uint32_t
crc32c_sse42(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t	c = ~crc;

	for (; len >= 8; p += 8, len -= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);		/* x86 is little-endian, as the CRC wants */
		c = __builtin_ia32_crc32di(c, w);
	}
	crc = (uint32_t) c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return ~crc;
}

static uint32_t (*crc_impl) (uint32_t, const void *, size_t);
static pthread_once_t impl_once = PTHREAD_ONCE_INIT;

static void
pick_impl(void)
{
	__builtin_cpu_init();
	crc_impl = __builtin_cpu_supports("sse4.2") ? crc32c_sse42 :
		cx_crc32c_portable;
}

uint32_t
cx_crc32c(uint32_t crc, const void *data, size_t len)
{
	pthread_once(&impl_once, pick_impl);
	return crc_impl(crc, data, len);
}

#else

uint32_t
cx_crc32c(uint32_t crc, const void *data, size_t len)
{
	return cx_crc32c_portable(crc, data, len);
}

#endif
