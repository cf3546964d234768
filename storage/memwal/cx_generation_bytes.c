/*
 * cx_generation_bytes.c — where a generation's bytes are read from, and the
 * in-memory store a small seal writes its generation into
 * (cx_shard_manifest.h; docs/FORMAT.md "Inline generations").
 *
 * A generation either has its own object (data/<hex>.parquet) or is inline:
 * its Parquet bytes travel inside the shard-manifest version that sealed it,
 * so that a small seal is one PUT.  Readers (scans, key lookups, merges, the
 * writer's key cache) open a generation through cx_generation_open(), which
 * hands them a store holding the bytes under the generation's path: the
 * real store, or a read-only in-memory one.  Everything that reads a
 * fragment then works unchanged on either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_shard_manifest.h"

/* One object, held in memory. */
typedef struct memstore
{
	cx_objstore base;
	char		key[CX_KEY_MAX + 1];
	cx_buf		bytes;
	bool		present;
} memstore;

typedef struct memupload
{
	cx_upload	up;
	cx_buf		bytes;
} memupload;

static cx_code
refused(cx_err *err)
{
	return cx_err_set(err, CX_ERR_UNSUPPORTED,
					  "an in-memory store of one object takes no other request");
}

static cx_code
mem_put(cx_objstore *s, const char *key, const void *data, size_t len,
		cx_put_mode mode, cx_err *err)
{
	(void) s, (void) key, (void) data, (void) len, (void) mode;
	return refused(err);
}

static cx_code
mem_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		cx_buf *out, cx_err *err)
{
	memstore   *m = (memstore *) s;
	size_t		n;

	if (!m->present || strcmp(key, m->key) != 0)
		return cx_err_set(err, CX_ERR_NOT_FOUND, "no such object");
	if (offset >= m->bytes.len)
		return CX_OK;
	n = m->bytes.len - (size_t) offset;
	if (len < n)
		n = len;
	cx_buf_put(out, m->bytes.data + offset, n);
	return !cx_buf_ok(out) ? cx_err_set(err, CX_ERR_NOMEM, "out of memory") : CX_OK;
}

static cx_code
mem_head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
		 cx_err *err)
{
	memstore   *m = (memstore *) s;

	if (!m->present || strcmp(key, m->key) != 0)
		return cx_err_set(err, CX_ERR_NOT_FOUND, "no such object");
	*size = m->bytes.len;
	if (mtime_us != NULL)
		*mtime_us = 0;
	return CX_OK;
}

static cx_code
mem_list(cx_objstore *s, const char *prefix, cx_list_entry_fn fn, void *arg,
		 cx_err *err)
{
	(void) s, (void) prefix, (void) fn, (void) arg;
	return refused(err);
}

static cx_code
mem_del(cx_objstore *s, const char *key, cx_err *err)
{
	(void) s, (void) key;
	return refused(err);
}

static cx_code
mem_upload_begin(cx_objstore *s, const char *key, cx_put_mode mode,
				 cx_upload **up, cx_err *err)
{
	memstore   *m = (memstore *) s;
	memupload  *u;

	if (m->present)
		return refused(err);
	if ((u = calloc(1, sizeof(memupload))) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	u->up.store = s;
	snprintf(u->up.key, sizeof(u->up.key), "%s", key);
	u->up.mode = mode;
	cx_buf_init(&u->bytes);
	*up = &u->up;
	return CX_OK;
}

static cx_code
mem_upload_write(cx_upload *up, const void *data, size_t len, cx_err *err)
{
	memupload  *u = (memupload *) up;

	cx_buf_put(&u->bytes, data, len);
	if (!cx_buf_ok(&u->bytes))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	up->written += len;
	return CX_OK;
}

static cx_code
mem_upload_finish(cx_upload *up, cx_err *err)
{
	memupload  *u = (memupload *) up;
	memstore   *m = (memstore *) up->store;

	(void) err;
	memcpy(m->key, up->key, sizeof(m->key));
	m->bytes = u->bytes;
	m->present = true;
	free(u);
	return CX_OK;
}

static void
mem_upload_abort(cx_upload *up)
{
	memupload  *u = (memupload *) up;

	cx_buf_free(&u->bytes);
	free(u);
}

static void
mem_close(cx_objstore *s)
{
	memstore   *m = (memstore *) s;

	cx_buf_free(&m->bytes);
	free(s->uri);
	free(m);
}

static const cx_objstore_ops mem_ops = {
	.put = mem_put,
	.get = mem_get,
	.head = mem_head,
	.list = mem_list,
	.del = mem_del,
	.upload_begin = mem_upload_begin,
	.upload_write = mem_upload_write,
	.upload_finish = mem_upload_finish,
	.upload_abort = mem_upload_abort,
	.close = mem_close,
};

cx_code
cx_memstore_new(const char *uri, cx_objstore **out, cx_err *err)
{
	memstore   *m = calloc(1, sizeof(memstore));

	*out = NULL;
	if (m == NULL || (m->base.uri = cx_strdup(uri)) == NULL)
	{
		free(m);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	m->base.ops = &mem_ops;
	cx_buf_init(&m->bytes);
	*out = &m->base;
	return CX_OK;
}

uint8_t *
cx_memstore_take(cx_objstore *mem, uint64_t *len)
{
	memstore   *m = (memstore *) mem;
	uint8_t    *bytes = m->present ? m->bytes.data : NULL;

	*len = bytes != NULL ? m->bytes.len : 0;
	cx_buf_init(&m->bytes);
	m->present = false;
	return bytes;
}

cx_code
cx_memstore_of(const char *uri, const char *key, const uint8_t *bytes,
			   uint64_t len, cx_objstore **out, cx_err *err)
{
	memstore   *m;

	if (cx_memstore_new(uri, out, err) != CX_OK)
		return err->code;
	m = (memstore *) *out;
	snprintf(m->key, sizeof(m->key), "%s", key);
	cx_buf_put(&m->bytes, bytes, (size_t) len);
	m->present = true;
	if (!cx_buf_ok(&m->bytes))
	{
		cx_obj_close(*out);
		*out = NULL;
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	return CX_OK;
}

/* A store holding generation g's bytes, named after the version carrying
 * them so that messages point there. */
static cx_code
store_of_carried(cx_objstore *s, const char *shard_id,
				 const cx_generation *g, const uint8_t *bytes,
				 cx_objstore **out, cx_err *err)
{
	char		vkey[CX_KEY_MAX + 1];
	char		uri[3 * CX_KEY_MAX];

	cx_shard_manifest_key(shard_id, g->carrier, vkey, sizeof(vkey));
	snprintf(uri, sizeof(uri), "%.900s/%s, inline:", s->uri, vkey);
	return cx_memstore_of(uri, g->fragment.path, bytes, g->fragment.size,
						  out, err);
}

/* The bytes a format 2 version carries: it is read whole (they end it). */
static cx_code
read_whole_carrier(cx_objstore *s, const char *shard_id, uint64_t version,
				   uint8_t **bytes, uint64_t *len, cx_err *err)
{
	cx_shard_manifest *v;

	if (cx_shard_manifest_load(s, shard_id, version, &v, err) != CX_OK)
		return err->code;
	*bytes = v->carried;
	*len = v->carried_len;
	v->carried = NULL;
	cx_shard_manifest_free(v);
	return CX_OK;
}

/* Reads the bytes of inline generation g from the version carrying it
 * (*bytes malloc'd, NULL if it carries none): one ranged GET of its head
 * (docs/FORMAT.md "Inline generations"). */
static cx_code
read_carried(cx_objstore *s, const char *shard_id, const cx_generation *g,
			 uint8_t **bytes, uint64_t *len, cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	char		name[2 * CX_KEY_MAX];
	uint64_t	size = g->fragment.size;
	bool		whole;
	cx_buf		b;
	cx_code		rc;

	*bytes = NULL;
	*len = 0;
	cx_shard_manifest_key(shard_id, g->carrier, key, sizeof(key));
	snprintf(name, sizeof(name), "%.900s/%s", s->uri, key);
	cx_buf_init(&b);
	rc = cx_obj_get_range(s, key, 0, (size_t) (CX_SHARD_CARRIED_AT + size),
						  &b, err);
	if (rc == CX_OK)
		rc = cx_shard_carried_check(b.data, b.len, size, name, &whole, err);
	if (rc == CX_OK && whole)
		rc = read_whole_carrier(s, shard_id, g->carrier, bytes, len, err);
	else if (rc == CX_OK)
	{
		/* The buffer becomes the copy: the bytes moved to its start. */
		memmove(b.data, b.data + CX_SHARD_CARRIED_AT, (size_t) size);
		*bytes = b.data;
		*len = size;
		cx_buf_init(&b);
	}
	cx_buf_free(&b);
	return rc;
}

cx_code
cx_generation_open(cx_objstore *s, const cx_shard_manifest *m,
				   const cx_generation *g, cx_objstore **from, cx_err *err)
{
	const uint8_t *bytes = NULL;
	uint8_t    *read = NULL;
	uint64_t	len = 0;
	cx_code		rc;

	*from = s;
	if (g->carrier == 0)
		return CX_OK;
	if (m->version == g->carrier)
	{
		bytes = m->carried;
		len = m->carried_len;
	}
	else
		bytes = cx_shard_cache_carried(s, m->shard_id, g->carrier, &len);
	if (bytes == NULL)
	{
		if (read_carried(s, m->shard_id, g, &read, &len, err) != CX_OK)
			return cx_err_prefix(err, "reading the shard manifest version carrying generation %llu",
								 (unsigned long long) g->gen);
		bytes = read;
		if (read != NULL &&
			cx_shard_cache_keep_carried(s, m->shard_id, g->carrier, read, len))
			read = NULL;		/* the handle's now; bytes stay valid */
	}
	if (bytes == NULL || len != g->fragment.size)
		rc = cx_err_set(err, CX_ERR_CORRUPT,
						"shard %s version %llu does not carry generation %llu (%llu bytes) that version %llu says it does",
						m->shard_id, (unsigned long long) g->carrier,
						(unsigned long long) g->gen,
						(unsigned long long) g->fragment.size,
						(unsigned long long) m->version);
	else
		rc = store_of_carried(s, m->shard_id, g, bytes, from, err);
	free(read);
	if (rc != CX_OK)
		*from = s;
	return rc;
}

void
cx_generation_done(cx_objstore *s, cx_objstore *from)
{
	if (from != NULL && from != s)
		cx_obj_close(from);
}
