/*
 * cx_shard_info.c — every shard of a store at a glance, for stats and the
 * maintenance functions (cx_shard_manifest.h).
 *
 * The shard manifests are read before the base whose watermarks count their
 * generations, so a merge and drain in between never make merged
 * generations look pending (they may make pending ones look merged, which
 * the next look corrects).
 */
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_shard_manifest.h"
#include "table/cx_manifest.h"

void
cx_shards_free(cx_shard_info *shards, uint32_t n)
{
	for (uint32_t i = 0; shards != NULL && i < n; i++)
	{
		free(shards[i].shard_id);
		free(shards[i].writer);
	}
	free(shards);
}

/* Fills in what the newest shard manifest m (NULL: none) says of the
 * generations above the watermark. */
static cx_code
describe_shard(const cx_shard_manifest *m, cx_shard_info *out, cx_err *err)
{
	if (m == NULL)
		return CX_OK;
	out->version = m->version;
	out->epoch = m->epoch;
	if (m->writer != NULL && (out->writer = cx_strdup(m->writer)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory describing shard %s",
						  m->shard_id);
	for (uint32_t g = 0; g < m->ngens; g++)
	{
		if (m->gens[g].gen <= out->merged_gen)
			continue;
		out->generations++;
		out->rows += m->gens[g].fragment.rows;
	}
	return CX_OK;
}

/* Reads the newest version of each shard listing names into out. */
static cx_code
read_shard_manifests(cx_objstore *s, const cx_manifest *listing,
					 cx_shard_manifest **out, cx_err *err)
{
	for (uint32_t i = 0; i < listing->nshards; i++)
		if (cx_shard_manifest_load_latest(s, listing->shards[i].shard_id, 0,
										  &out[i], err) != CX_OK)
			return err->code;
	return CX_OK;
}

static cx_code
describe_shards(cx_objstore *s, const cx_manifest *listing,
				cx_shard_manifest **manifests, cx_shard_info *out, cx_err *err)
{
	cx_manifest *marks = NULL;
	cx_code		rc;

	if (read_shard_manifests(s, listing, manifests, err) != CX_OK ||
		cx_manifest_load_latest(s, &marks, err) != CX_OK)
		return err->code;
	rc = CX_OK;
	for (uint32_t i = 0; rc == CX_OK && i < listing->nshards; i++)
	{
		out[i].shard_id = cx_strdup(listing->shards[i].shard_id);
		if (out[i].shard_id == NULL)
			rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory reading the shards of %s",
							s->uri);
		else
		{
			out[i].merged_gen = cx_manifest_merged_gen(marks, out[i].shard_id);
			rc = describe_shard(manifests[i], &out[i], err);
		}
	}
	cx_manifest_free(marks);
	return rc;
}

cx_code
cx_shards_read(cx_objstore *s, cx_shard_info **out, uint32_t *n, cx_err *err)
{
	cx_manifest *listing;
	cx_shard_manifest **manifests = NULL;
	cx_shard_info *shards = NULL;
	cx_code		rc = CX_OK;

	*out = NULL;
	*n = 0;
	if (cx_manifest_load_latest(s, &listing, err) != CX_OK)
		return err->code;
	if (listing != NULL && listing->nshards > 0)
	{
		manifests = calloc(listing->nshards, sizeof(*manifests));
		shards = calloc(listing->nshards, sizeof(*shards));
		rc = manifests == NULL || shards == NULL
			? cx_err_set(err, CX_ERR_NOMEM, "out of memory reading the shards of %s", s->uri)
			: describe_shards(s, listing, manifests, shards, err);
		for (uint32_t i = 0; manifests != NULL && i < listing->nshards; i++)
			cx_shard_manifest_free(manifests[i]);
		free(manifests);
		if (rc != CX_OK)
			cx_shards_free(shards, listing->nshards);
		else
		{
			*out = shards;
			*n = listing->nshards;
		}
	}
	cx_manifest_free(listing);
	return rc;
}
