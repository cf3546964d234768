/*
 * fuzz_levels.c — libFuzzer harness for the level decoder inside every
 * fragment page (cx_levels_decode: Parquet's RLE / bit-packed hybrid),
 * which fuzz_fragment rarely reaches through zstd-compressed pages.  The
 * first byte gives the largest level (1 to 7: the reader decodes no stream
 * for a largest level of 0), the next two the number of
 * levels; the rest is the length-prefixed stream.  Levels that decode must
 * be at most the largest level, and re-encode to a stream that decodes to
 * the same levels.
 */
#include <stdlib.h>
#include <string.h>

#include "format/cx_levels.h"
#include "support.h"

static void
round_trip(const uint8_t *levels, size_t n, int max_level)
{
	cx_buf		enc;
	cx_rd		r;
	uint8_t    *again = malloc(n > 0 ? n : 1);
	const char *why;

	cx_buf_init(&enc);
	cx_levels_encode(levels, n, cx_level_bit_width(max_level), &enc);
	cx_rd_init(&r, enc.data, enc.len);
	if (again != NULL && cx_buf_ok(&enc) &&
		(!cx_levels_decode(&r, n, max_level, again, &why) ||
		 memcmp(again, levels, n) != 0 || cx_rd_left(&r) != 0))
		abort();
	free(again);
	cx_buf_free(&enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int			max_level;
	size_t		n;
	uint8_t    *levels;
	cx_rd		r;
	const char *why;

	if (size < 3)
		return 0;
	max_level = 1 + data[0] % 7;
	n = (size_t) data[1] | (size_t) data[2] << 8;
	if ((levels = malloc(n > 0 ? n : 1)) == NULL)
		return 0;
	cx_rd_init(&r, data + 3, size - 3);
	if (cx_levels_decode(&r, n, max_level, levels, &why))
	{
		for (size_t i = 0; i < n; i++)
			if (levels[i] > max_level)
				abort();
		round_trip(levels, n, max_level);
	}
	free(levels);
	return 0;
}
