/*
 * support.c — the in-memory, read-only, one-object store of
 * support.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

typedef struct mem_store
{
	cx_objstore base;
	char	   *key;
	uint8_t    *data;
	size_t		size;
} mem_store;

static cx_code
refuse(cx_err *err)
{
	return cx_err_set(err, CX_ERR_INVALID, "the fuzzing store is read-only");
}

static cx_code
mem_put(cx_objstore *s, const char *key, const void *data, size_t len,
		cx_put_mode mode, cx_err *err)
{
	(void) s;
	(void) key;
	(void) data;
	(void) len;
	(void) mode;
	return refuse(err);
}

static const mem_store *
find(const cx_objstore *base, const char *key)
{
	const mem_store *s = (const mem_store *) base;

	return strcmp(s->key, key) == 0 ? s : NULL;
}

static cx_code
mem_get(cx_objstore *base, const char *key, uint64_t offset, size_t len,
		cx_buf *out, cx_err *err)
{
	const mem_store *s = find(base, key);
	size_t		avail;

	if (s == NULL)
		return cx_err_set(err, CX_ERR_NOT_FOUND, "no such object");
	avail = offset < s->size ? s->size - (size_t) offset : 0;
	if (len > avail)
		len = avail;
	if (len > 0)
		cx_buf_put(out, s->data + offset, len);
	return cx_buf_ok(out) ? CX_OK : cx_err_set(err, CX_ERR_NOMEM, "out of memory");
}

static cx_code
mem_head(cx_objstore *base, const char *key, uint64_t *size,
		 int64_t *mtime_us, cx_err *err)
{
	const mem_store *s = find(base, key);

	if (s == NULL)
		return cx_err_set(err, CX_ERR_NOT_FOUND, "no such object");
	*size = s->size;
	if (mtime_us != NULL)
		*mtime_us = 0;
	return CX_OK;
}

static cx_code
mem_list(cx_objstore *base, const char *prefix, cx_list_entry_fn fn,
		 void *arg, cx_err *err)
{
	const mem_store *s = (const mem_store *) base;
	cx_list_entry e = {s->key, s->size, 0};

	(void) err;
	if (strncmp(s->key, prefix, strlen(prefix)) == 0)
		fn(arg, &e);
	return CX_OK;
}

static cx_code
mem_del(cx_objstore *s, const char *key, cx_err *err)
{
	(void) s;
	(void) key;
	return refuse(err);
}

static cx_code
mem_upload_begin(cx_objstore *s, const char *key, cx_put_mode mode,
				 cx_upload **up, cx_err *err)
{
	(void) s;
	(void) key;
	(void) mode;
	*up = NULL;
	return refuse(err);
}

static void
mem_close(cx_objstore *base)
{
	mem_store  *s = (mem_store *) base;

	free(s->key);
	free(s->data);
	free(s->base.uri);
	free(s);
}

/* Uploads never begin, so write, finish and abort are never called. */
static const cx_objstore_ops mem_ops = {
	.put = mem_put,
	.get = mem_get,
	.head = mem_head,
	.list = mem_list,
	.del = mem_del,
	.upload_begin = mem_upload_begin,
	.close = mem_close,
};

cx_objstore *
fuzz_memstore(const char *key, const uint8_t *data, size_t size)
{
	mem_store  *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->base.ops = &mem_ops;
	s->base.uri = cx_strdup("mem://fuzz");
	s->key = cx_strdup(key);
	s->data = malloc(size > 0 ? size : 1);
	s->size = size;
	if (s->base.uri == NULL || s->key == NULL || s->data == NULL)
	{
		mem_close(&s->base);
		return NULL;
	}
	memcpy(s->data, data, size);
	return &s->base;
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
