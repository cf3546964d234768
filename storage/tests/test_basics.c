/*
 * test_basics.c — buffers, little-endian readers, CRC-32C (the CPU's
 * instruction and the table) and error records.
 */
#include <stdlib.h>

#include "util/cx_buf.h"
#include "util/cx_crc32c.h"
#include "cx_test.h"

CX_TEST(crc32c_known_vectors)
{
	/* RFC 3720 B.4 check values. */
	uint8_t		zeros[32] = {0};
	uint8_t		ones[32];
	uint8_t		inc[32];

	memset(ones, 0xFF, sizeof(ones));
	for (int i = 0; i < 32; i++)
		inc[i] = (uint8_t) i;
	CHECK(cx_crc32c(0, "123456789", 9) == 0xE3069283u);
	CHECK(cx_crc32c(0, zeros, 32) == 0x8A9136AAu);
	CHECK(cx_crc32c(0, ones, 32) == 0x62A8AB43u);
	CHECK(cx_crc32c(0, inc, 32) == 0x46DD794Eu);
	/* Chaining equals one pass. */
	CHECK(cx_crc32c(cx_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u);
}

/* The CPU's instruction, where cx_crc32c uses it, agrees with the table
 * at every length and alignment, chained or not; so do the check values. */
CX_TEST(crc32c_instruction_agrees_with_the_table)
{
	uint8_t		data[600];
	uint32_t	seed = 12345;
	int			differ = 0;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t) ((seed = seed * 1103515245u + 12345u) >> 16);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; off + len <= sizeof(data); len += 1 + len / 16)
			differ += cx_crc32c(0, data + off, len) !=
				cx_crc32c_portable(0, data + off, len) ||
				cx_crc32c(0x1234567u, data + off, len) !=
				cx_crc32c_portable(0x1234567u, data + off, len);
	CHECK(differ == 0);
	CHECK(cx_crc32c_portable(0, "123456789", 9) == 0xE3069283u);
}

/* fuzz_fragment found it: an empty buffer grown by 0 computed NULL + 0. */
CX_TEST(buf_grow_by_nothing_on_an_empty_buffer)
{
	cx_buf		b;

	cx_buf_init(&b);
	CHECK(cx_buf_grow(&b, 0) != NULL);
	CHECK(b.len == 0 && cx_buf_ok(&b));
	cx_buf_free(&b);
}

CX_TEST(buf_round_trip_and_sticky_reader)
{
	cx_buf		b;
	cx_rd		r;
	uint32_t	n;
	const uint8_t *p;
	char	   *s;

	cx_buf_init(&b);
	cx_buf_put_u8(&b, 7);
	cx_buf_put_u16(&b, 0xBEEF);
	cx_buf_put_u32(&b, 0xDEADBEEFu);
	cx_buf_put_u64(&b, 0x0123456789ABCDEFull);
	cx_buf_put_i64(&b, -5);
	cx_buf_put_bytes32(&b, "abc", 3);
	cx_buf_put_str16(&b, "name");
	REQUIRE(cx_buf_ok(&b));
	CHECK(b.data[1] == 0xEF && b.data[2] == 0xBE);	/* little-endian */

	cx_rd_init(&r, b.data, b.len);
	CHECK(cx_rd_u8(&r) == 7);
	CHECK(cx_rd_u16(&r) == 0xBEEF);
	CHECK(cx_rd_u32(&r) == 0xDEADBEEFu);
	CHECK(cx_rd_u64(&r) == 0x0123456789ABCDEFull);
	CHECK(cx_rd_i64(&r) == -5);
	p = cx_rd_bytes32(&r, &n);
	CHECK(n == 3 && p && memcmp(p, "abc", 3) == 0);
	s = cx_rd_str16(&r);
	CHECK(s && strcmp(s, "name") == 0);
	free(s);
	CHECK(cx_rd_ok(&r) && cx_rd_left(&r) == 0);
	/* Reading past the end is sticky and yields zero. */
	CHECK(cx_rd_u32(&r) == 0);
	CHECK(!cx_rd_ok(&r));
	CHECK(cx_rd_u8(&r) == 0);
	cx_buf_free(&b);
}

CX_TEST(reader_rejects_length_beyond_end)
{
	uint8_t		bytes[6] = {0xFF, 0xFF, 0xFF, 0x7F, 'a', 'b'};
	cx_rd		r;
	uint32_t	n;

	cx_rd_init(&r, bytes, sizeof(bytes));
	CHECK(cx_rd_bytes32(&r, &n) == NULL);
	CHECK(!cx_rd_ok(&r));
}

CX_TEST(error_prefix_keeps_code)
{
	cx_err		err;

	cx_err_set(&err, CX_ERR_IO, "disk %s", "full");
	CHECK(cx_err_prefix(&err, "writing %s", "x") == CX_ERR_IO);
	CHECK(strcmp(err.msg, "writing x: disk full") == 0);
	CHECK(strcmp(cx_code_name(CX_ERR_FENCED), "fenced") == 0);
}

CX_TEST(reader_rejects_nul_inside_a_string)
{
	uint8_t		bytes[5] = {3, 0, 'a', '\0', 'b'};
	cx_rd		r;

	cx_rd_init(&r, bytes, sizeof(bytes));
	CHECK(cx_rd_str16(&r) == NULL);
	CHECK(!cx_rd_ok(&r));
}
