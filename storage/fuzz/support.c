/*
 * support.c — what the fuzz harnesses share (support.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_shard_manifest.h"
#include "support.h"

cx_objstore *
fuzz_memstore(const char *key, const uint8_t *data, size_t size)
{
	cx_objstore *s;
	cx_err		err;

	if (cx_memstore_of("mem://fuzz", key, data, size, &s, &err) != CX_OK)
		return NULL;
	return s;
}

void
fuzz_fresh_key(char *key, size_t keysize, const char *prefix,
			   const char *suffix)
{
	static unsigned long long n;

	snprintf(key, keysize, "%s%032llx%s", prefix, ++n, suffix);
}

void
fuzz_rows(const cx_schema *schema, const uint8_t *rows, size_t len)
{
	cx_datum   *values = calloc(schema->ncolumns + 1, sizeof(cx_datum));
	cx_buf		scratch;
	cx_buf		again;
	cx_row_kind kind;
	cx_rd		r;
	cx_err		err;

	if (values == NULL)
		return;
	cx_buf_init(&scratch);
	cx_buf_init(&again);
	cx_rd_init(&r, rows, len);
	while (cx_rd_left(&r) > 0)
	{
		size_t		start = r.pos;

		if (cx_row_decode(schema, &r, &kind, values, &scratch, &err) != CX_OK)
			break;
		cx_buf_reset(&again);
		cx_row_encode(schema, kind, values, &again);
		if (!cx_buf_ok(&again))
			break;
		if (again.len != r.pos - start ||
			memcmp(again.data, rows + start, again.len) != 0)
			abort();
	}
	cx_buf_free(&scratch);
	cx_buf_free(&again);
	free(values);
}

void *
fuzz_round_trip(const fuzz_codec *c, const uint8_t *data, size_t size)
{
	void	   *obj = c->decode(data, size);
	void	   *obj2;
	cx_buf		first;
	cx_buf		again;
	cx_err		err;

	if (obj == NULL)
		return NULL;
	cx_buf_init(&first);
	cx_buf_init(&again);
	if (c->encode(obj, &first, &err) != CX_OK ||
		(obj2 = c->decode(first.data, first.len)) == NULL)
		abort();
	if (c->encode(obj2, &again, &err) != CX_OK || again.len != first.len ||
		memcmp(again.data, first.data, first.len) != 0)
		abort();
	c->free(obj2);
	cx_buf_free(&first);
	cx_buf_free(&again);
	return obj;
}
