/*
 * cx_levels.c — the RLE / bit-packed hybrid for levels (cx_levels.h).
 *
 * The encoder emits an RLE run for every stretch of at least RLE_MIN equal
 * levels (a column without NULLs is one run) and bit-packs what lies between,
 * in whole groups of 8; only the stream's last group may be padded, because
 * readers stop after the page's value count.
 */
#include <string.h>

#include "format/cx_levels.h"

#define RLE_MIN 8
#define GROUP 8

int
cx_level_bit_width(int max_level)
{
	int			w = 0;

	while ((1 << w) <= max_level)
		w++;
	return w;
}

static void
put_uleb(cx_buf *out, uint64_t v)
{
	while (v >= 0x80)
	{
		cx_buf_put_u8(out, (uint8_t) (v | 0x80));
		v >>= 7;
	}
	cx_buf_put_u8(out, (uint8_t) v);
}

static size_t
run_length(const uint8_t *levels, size_t n, size_t i)
{
	size_t		j = i + 1;

	while (j < n && levels[j] == levels[i])
		j++;
	return j - i;
}

/* Bit-packs levels[i..] up to the next long run (or the end); returns the
 * index after the last level packed (padding excluded). */
static size_t
put_packed(const uint8_t *levels, size_t n, size_t i, int bit_width,
		   cx_buf *out)
{
	size_t		end = i;
	size_t		groups;
	uint8_t    *p;

	do
		end = end + GROUP < n ? end + GROUP : n;
	while (end < n && run_length(levels, n, end) < RLE_MIN);
	groups = (end - i + GROUP - 1) / GROUP;
	put_uleb(out, (uint64_t) groups << 1 | 1);
	p = cx_buf_grow(out, groups * (size_t) bit_width);
	if (p == NULL)
		return n;
	for (size_t k = 0; k < end - i; k++)
	{
		size_t		bit = k * (size_t) bit_width;

		/* bit_width <= 8, so a level spans at most two bytes */
		p[bit / 8] |= (uint8_t) (levels[i + k] << (bit % 8));
		if (bit % 8 + (size_t) bit_width > 8)
			p[bit / 8 + 1] |= (uint8_t) (levels[i + k] >> (8 - bit % 8));
	}
	return end;
}

void
cx_levels_encode(const uint8_t *levels, size_t n, int bit_width, cx_buf *out)
{
	size_t		len_at = out->len;
	size_t		i = 0;

	cx_buf_put_u32(out, 0);
	while (i < n)
	{
		size_t		run = run_length(levels, n, i);

		if (run >= RLE_MIN)
		{
			put_uleb(out, (uint64_t) run << 1);
			cx_buf_put_u8(out, levels[i]);
			i += run;
		}
		else
			i = put_packed(levels, n, i, bit_width, out);
	}
	if (cx_buf_ok(out))
		cx_store_u32(out->data + len_at, (uint32_t) (out->len - len_at - 4));
}

static bool
get_uleb(cx_rd *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7)
	{
		uint8_t		b = cx_rd_u8(r);

		if (!cx_rd_ok(r))
			return false;
		*v |= (uint64_t) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return true;
	}
	return false;
}

static bool
unpack(cx_rd *r, uint64_t groups, int bit_width, uint8_t *out, size_t want)
{
	const uint8_t *p;
	uint8_t		mask = (uint8_t) ((1u << bit_width) - 1);

	if (groups > cx_rd_left(r) / (size_t) bit_width)
		return false;
	p = cx_rd_take(r, (size_t) groups * (size_t) bit_width);
	for (size_t k = 0; k < want; k++)
	{
		size_t		bit = k * (size_t) bit_width;
		unsigned	v = p[bit / 8] >> (bit % 8);

		if (bit % 8 + (size_t) bit_width > 8)
			v |= (unsigned) p[bit / 8 + 1] << (8 - bit % 8);
		out[k] = (uint8_t) (v & mask);
	}
	return true;
}

/* Decodes runs from s until n levels are out; false on a malformed run. */
static bool
decode_runs(cx_rd *s, size_t n, int bit_width, uint8_t *out)
{
	size_t		done = 0;

	while (done < n)
	{
		uint64_t	header;
		uint64_t	count;
		size_t		take;

		if (!get_uleb(s, &header))
			return false;
		count = header >> 1;
		if (count == 0)
			return false;
		if (header & 1)
		{
			take = count * GROUP < n - done ? (size_t) count * GROUP : n - done;
			if (count > SIZE_MAX / GROUP ||
				!unpack(s, count, bit_width, out + done, take))
				return false;
		}
		else
		{
			uint8_t		v = cx_rd_u8(s);

			if (!cx_rd_ok(s))
				return false;
			take = count < n - done ? (size_t) count : n - done;
			memset(out + done, v, take);
		}
		done += take;
	}
	return true;
}

bool
cx_levels_decode(cx_rd *r, size_t n, int max_level, uint8_t *out,
				 const char **why)
{
	uint32_t	len = cx_rd_u32(r);
	const uint8_t *p = cx_rd_take(r, len);
	cx_rd		s;

	if (p == NULL)
	{
		*why = "level stream is truncated";
		return false;
	}
	cx_rd_init(&s, p, len);
	if (!decode_runs(&s, n, cx_level_bit_width(max_level), out))
	{
		*why = "level stream is malformed or short";
		return false;
	}
	for (size_t i = 0; i < n; i++)
		if (out[i] > max_level)
		{
			*why = "level out of range";
			return false;
		}
	return true;
}
