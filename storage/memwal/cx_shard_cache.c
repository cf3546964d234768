/*
 * cx_shard_cache.c — the newest shard manifests a handle read, kept on the
 * handle (cx_objstore.caches) so that a reader that comes back pays two HEADs
 * per unchanged shard instead of a cold lookup (hint GET, HEADs, manifest
 * GET and decode).  docs/design/scan.md ("Many shards") says why this and
 * not a base-manifest summary.
 *
 * Versions of a shard manifest are contiguous and put-if-absent, so an
 * existing version V is the newest exactly when V + 1 does not exist.  GC
 * removes only older versions, never the newest, but a kept V may be old:
 * once V + 1 and V + 2 were committed, GC may have removed V and V + 1, and
 * a missing V + 1 then says nothing.  A kept manifest is therefore returned
 * only after a HEAD of V + 1 finds nothing and a HEAD of V finds it, as
 * fresh as a cold read made then; a kept V that is gone is read cold.
 *
 * A kept version keeps the inline generation it carries (at most
 * inline_generation_max bytes, so at most 256 x 64 KiB by default), which
 * spares the handle's readers a GET of the newest generation; so do the
 * bytes of the last 8 older versions read for theirs
 * (cx_shard_cache_carried).
 */
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_shard_manifest.h"
#include "objstore/cx_layout.h"
#include "objstore/cx_versioned.h"

#define CACHED_SHARDS 256
#define CACHED_CARRIERS 8

/* The bytes a version of a shard carries, read for an inline generation. */
typedef struct carried_copy
{
	char	   *shard_id;		/* NULL: an empty slot */
	uint64_t	version;
	uint8_t    *bytes;
	uint64_t	len;
} carried_copy;

typedef struct shard_cache
{
	uint32_t	n;
	uint32_t	victim;			/* the next entry replaced when full */
	cx_shard_manifest *m[CACHED_SHARDS];
	/* The bytes of older versions read for the inline generation they
	 * carry, the last CACHED_CARRIERS (versions never change, so a kept
	 * copy never goes stale): a merge reads each generation three times. */
	uint32_t	next_carrier;
	carried_copy carriers[CACHED_CARRIERS];
} shard_cache;

static void
carried_copy_clear(carried_copy *k)
{
	free(k->shard_id);
	free(k->bytes);
	memset(k, 0, sizeof(*k));
}

static void
cache_free(void *p)
{
	shard_cache *c = p;

	for (uint32_t i = 0; i < c->n; i++)
		cx_shard_manifest_free(c->m[i]);
	for (uint32_t i = 0; i < CACHED_CARRIERS; i++)
		carried_copy_clear(&c->carriers[i]);
	free(c);
}

static size_t
cache_bytes(const void *p)
{
	const shard_cache *c = p;
	size_t		bytes = sizeof(*c);

	for (uint32_t i = 0; i < c->n; i++)
		bytes += cx_shard_manifest_memory(c->m[i]);
	for (uint32_t i = 0; i < CACHED_CARRIERS; i++)
		bytes += cx_str_memory(c->carriers[i].shard_id) + c->carriers[i].len;
	return bytes;
}

/* The handle's cache, created on first use (NULL without memory: then
 * nothing is cached). */
static shard_cache *
cache_of(cx_objstore *s)
{
	return cx_obj_cache_of(s, CX_CACHE_SHARD_MANIFESTS, sizeof(shard_cache),
						   cache_free, cache_bytes);
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

/* The caller's copy of the manifest kept in slot at. */
static cx_code
kept_copy(const shard_cache *c, int at, const char *shard_id,
		  cx_shard_manifest **out, cx_err *err)
{
	if ((*out = cx_shard_manifest_clone(c->m[at])) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "shard %s: out of memory", shard_id);
	return CX_OK;
}

/* The newest version as a cold reader finds it, kept in slot at (-1: a new
 * one) when there is one. */
static cx_code
load_cold(cx_objstore *s, shard_cache *c, int at, const char *shard_id,
		  cx_shard_manifest **out, cx_err *err)
{
	if (cx_shard_manifest_load_latest(s, shard_id, 0, out, err) != CX_OK)
		return err->code;
	if (c != NULL && *out != NULL)
		remember(c, at, *out);
	return CX_OK;
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
	cx_code		rc;

	*out = NULL;
	if (at < 0)
		return load_cold(s, c, -1, shard_id, out, err);
	cx_layout_shard_versions(shard_id, prefix, &q);
	cx_layout_shard_hint(shard_id, hint);
	if (cx_vseq_latest(s, &q, hint, c->m[at]->version, &latest, err) != CX_OK)
		return err->code;
	if (latest == c->m[at]->version)
	{
		bool		exists;

		if (cx_vseq_exists(s, &q, latest, &exists, err) != CX_OK)
			return err->code;
		return exists ? kept_copy(c, at, shard_id, out, err) :
			load_cold(s, c, at, shard_id, out, err);
	}
	/* GC may remove the version the probe stopped at, and those after it,
	 * while the probe runs (it removes the oldest first, never the newest):
	 * then the versions are listed, as cx_shard_manifest_load_latest does. */
	rc = cx_shard_manifest_load(s, shard_id, latest, out, err);
	if (rc == CX_ERR_NOT_FOUND)
		return load_cold(s, c, at, shard_id, out, err);
	if (rc != CX_OK)
		return rc;
	remember(c, at, *out);
	return CX_OK;
}

cx_code
cx_shard_manifest_load_version_cached(cx_objstore *s, const char *shard_id,
									  uint64_t version,
									  cx_shard_manifest **out, cx_err *err)
{
	shard_cache *c = cache_of(s);
	int			at = c != NULL ? find(c, shard_id) : -1;

	*out = NULL;
	if (at >= 0 && c->m[at]->version == version)
		return kept_copy(c, at, shard_id, out, err);
	if (cx_shard_manifest_load(s, shard_id, version, out, err) != CX_OK)
		return err->code;
	if (c != NULL && (at < 0 || c->m[at]->version < version))
		remember(c, at, *out);
	return CX_OK;
}

const uint8_t *
cx_shard_cache_carried(cx_objstore *s, const char *shard_id, uint64_t version,
					   uint64_t *len)
{
	const shard_cache *c = s->caches[CX_CACHE_SHARD_MANIFESTS].p;
	int			at = c != NULL ? find(c, shard_id) : -1;

	if (at >= 0 && c->m[at]->version == version && c->m[at]->carried != NULL)
	{
		*len = c->m[at]->carried_len;
		return c->m[at]->carried;
	}
	for (uint32_t i = 0; c != NULL && i < CACHED_CARRIERS; i++)
	{
		const carried_copy *k = &c->carriers[i];

		if (k->shard_id != NULL && k->version == version &&
			strcmp(k->shard_id, shard_id) == 0)
		{
			*len = k->len;
			return k->bytes;
		}
	}
	return NULL;
}

bool
cx_shard_cache_keep_carried(cx_objstore *s, const char *shard_id,
							uint64_t version, uint8_t *bytes, uint64_t len)
{
	shard_cache *c = cache_of(s);
	char	   *id = cx_strdup(shard_id);
	carried_copy *k;

	if (c == NULL || id == NULL)
	{
		free(id);
		return false;
	}
	k = &c->carriers[c->next_carrier];
	carried_copy_clear(k);
	k->shard_id = id;
	k->version = version;
	k->bytes = bytes;
	k->len = len;
	c->next_carrier = (c->next_carrier + 1) % CACHED_CARRIERS;
	return true;
}
