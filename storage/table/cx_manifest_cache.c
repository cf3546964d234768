/*
 * cx_manifest_cache.c — the newest base version a handle read or wrote,
 * kept on the handle (cx_objstore.caches) as its bytes, so that a process
 * that comes back to the store (the maintenance worker's merges and index
 * updates, a commit after the load it rebases on) pays only the lookup of
 * the newest version (the hint and the HEADs that confirm it) instead of
 * the manifest's GET, which grows with every fragment the base lists.
 *
 * A base version is written once, put-if-absent, and never changes under
 * its name; GC removes only versions older than the newest.  So the bytes
 * of version V are valid for as long as V exists, and a caller asks for V
 * only after it found V (cx_manifest_load_latest) or was given it.
 */
#include <stdlib.h>

#include "table/cx_manifest.h"

typedef struct base_cache
{
	uint64_t	version;
	cx_buf		bytes;
} base_cache;

static void
cache_free(void *p)
{
	base_cache *c = p;

	cx_buf_free(&c->bytes);
	free(c);
}

static size_t
cache_bytes(const void *p)
{
	const base_cache *c = p;

	return sizeof(*c) + c->bytes.cap;
}

/* The handle's cache, created on first use (NULL without memory: then
 * nothing is kept). */
static base_cache *
cache_of(cx_objstore *s)
{
	cx_handle_cache *slot = &s->caches[CX_CACHE_BASE_MANIFEST];

	if (slot->p == NULL && (slot->p = calloc(1, sizeof(base_cache))) != NULL)
	{
		cx_buf_init(&((base_cache *) slot->p)->bytes);
		slot->free_fn = cache_free;
		slot->bytes_fn = cache_bytes;
	}
	return slot->p;
}

bool
cx_manifest_cache_get(cx_objstore *s, uint64_t version, cx_buf *out)
{
	base_cache *c = s->caches[CX_CACHE_BASE_MANIFEST].p;

	if (c == NULL || c->version != version || version == 0)
		return false;
	cx_buf_reset(out);
	cx_buf_put(out, c->bytes.data, c->bytes.len);
	return cx_buf_ok(out);
}

void
cx_manifest_cache_put(cx_objstore *s, uint64_t version, const cx_buf *bytes)
{
	base_cache *c = cache_of(s);

	if (c == NULL || version < c->version)
		return;
	cx_buf_reset(&c->bytes);
	cx_buf_put(&c->bytes, bytes->data, bytes->len);
	c->version = cx_buf_ok(&c->bytes) ? version : 0;
}
