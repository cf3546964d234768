/*
 * cx_shard_cache.c — the newest shard manifests a handle read, kept on the
 * handle (cx_objstore.caches) so that a reader that comes back pays one HEAD
 * per unchanged shard instead of a cold lookup (hint GET, HEADs, manifest
 * GET and decode).  docs/design/scan.md ("Many shards") says why this and
 * not a base-manifest summary.
 *
 * Versions of a shard manifest are contiguous and put-if-absent, so version
 * V is the newest exactly when V + 1 does not exist; GC removes only older
 * versions, never the newest.  A kept manifest is therefore returned only
 * after a HEAD of V + 1 finds nothing, as fresh as a cold read made then.
 *
 * A kept version keeps the inline generation it carries (at most
 * inline_generation_max bytes, so at most 256 x 64 KiB by default), which
 * spares the handle's readers a GET of the newest generation; so do the
 * last 8 older versions read for theirs (cx_shard_cache_carrier).
 */
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_shard_manifest.h"
#include "objstore/cx_layout.h"
#include "objstore/cx_versioned.h"

#define CACHED_SHARDS 256
#define CACHED_CARRIERS 8

typedef struct shard_cache
{
	uint32_t	n;
	uint32_t	victim;			/* the next entry replaced when full */
	cx_shard_manifest *m[CACHED_SHARDS];
	/* Older versions read for the inline generation they carry, the last
	 * CACHED_CARRIERS (versions never change, so a kept one never goes
	 * stale): a merge reads each generation three times. */
	uint32_t	next_carrier;
	cx_shard_manifest *carriers[CACHED_CARRIERS];
} shard_cache;

static void
cache_free(void *p)
{
	shard_cache *c = p;

	for (uint32_t i = 0; i < c->n; i++)
		cx_shard_manifest_free(c->m[i]);
	for (uint32_t i = 0; i < CACHED_CARRIERS; i++)
		cx_shard_manifest_free(c->carriers[i]);
	free(c);
}

/* The handle's cache, created on first use (NULL without memory: then
 * nothing is cached). */
static shard_cache *
cache_of(cx_objstore *s)
{
	cx_handle_cache *slot = &s->caches[CX_CACHE_SHARD_MANIFESTS];

	if (slot->p == NULL && (slot->p = calloc(1, sizeof(shard_cache))) != NULL)
		slot->free_fn = cache_free;
	return slot->p;
}

static int
find(const shard_cache *c, const char *shard_id)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (strcmp(c->m[i]->shard_id, shard_id) == 0)
			return (int) i;
	return -1;
}

/* Keeps a copy of m in entry at, replacing its older version (-1: a new
 * entry, or the next victim when full); best effort. */
static void
remember(shard_cache *c, int at, const cx_shard_manifest *m)
{
	cx_shard_manifest *copy = cx_shard_manifest_clone(m);

	if (copy == NULL)
		return;
	if (at < 0 && c->n < CACHED_SHARDS)
		at = (int) c->n++;
	else if (at < 0)
	{
		at = (int) c->victim;
		c->victim = (c->victim + 1) % CACHED_SHARDS;
	}
	cx_shard_manifest_free(c->m[at]);
	c->m[at] = copy;
}

bool
cx_shard_cache_lists_generations(const cx_objstore *s, const char *shard_id)
{
	const shard_cache *c = s->caches[CX_CACHE_SHARD_MANIFESTS].p;
	int			at = c != NULL ? find(c, shard_id) : -1;

	return at >= 0 && c->m[at]->ngens > 0;
}

cx_code
cx_shard_manifest_load_latest_cached(cx_objstore *s, const char *shard_id,
									 cx_shard_manifest **out, cx_err *err)
{
	shard_cache *c = cache_of(s);
	int			at = c != NULL ? find(c, shard_id) : -1;
	char		prefix[CX_KEY_MAX + 1];
	char		hint[CX_KEY_MAX + 1];
	cx_vseq		q;
	uint64_t	latest;

	*out = NULL;
	if (at < 0)
	{
		if (cx_shard_manifest_load_latest(s, shard_id, 0, out, err) != CX_OK)
			return err->code;
		if (c != NULL && *out != NULL)
			remember(c, -1, *out);
		return CX_OK;
	}
	cx_layout_shard_versions(shard_id, prefix, &q);
	cx_layout_shard_hint(shard_id, hint);
	if (cx_vseq_latest(s, &q, hint, c->m[at]->version, &latest, err) != CX_OK)
		return err->code;
	if (latest == c->m[at]->version)
	{
		if ((*out = cx_shard_manifest_clone(c->m[at])) == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "shard %s: out of memory", shard_id);
		return CX_OK;
	}
	if (cx_shard_manifest_load(s, shard_id, latest, out, err) != CX_OK)
		return err->code;
	remember(c, at, *out);
	return CX_OK;
}

static bool
is_carrier(const cx_shard_manifest *m, const char *shard_id, uint64_t version)
{
	return m != NULL && m->version == version && m->carried != NULL &&
		strcmp(m->shard_id, shard_id) == 0;
}

const cx_shard_manifest *
cx_shard_cache_carrier(cx_objstore *s, const char *shard_id, uint64_t version)
{
	const shard_cache *c = s->caches[CX_CACHE_SHARD_MANIFESTS].p;
	int			at = c != NULL ? find(c, shard_id) : -1;

	if (at >= 0 && is_carrier(c->m[at], shard_id, version))
		return c->m[at];
	for (uint32_t i = 0; c != NULL && i < CACHED_CARRIERS; i++)
		if (is_carrier(c->carriers[i], shard_id, version))
			return c->carriers[i];
	return NULL;
}

bool
cx_shard_cache_keep_carrier(cx_objstore *s, cx_shard_manifest *m)
{
	shard_cache *c = cache_of(s);

	if (c == NULL)
		return false;
	cx_shard_manifest_free(c->carriers[c->next_carrier]);
	c->carriers[c->next_carrier] = m;
	c->next_carrier = (c->next_carrier + 1) % CACHED_CARRIERS;
	return true;
}
