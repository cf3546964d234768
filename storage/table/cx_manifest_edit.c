/*
 * cx_manifest_edit.c — the MemWAL bookkeeping a base manifest carries: the
 * table's key, the shard list with each shard's merged-generation watermark,
 * per-fragment deletion vectors, and the truncation time.
 *
 * These are edited by committers' rebase callbacks (cx_commit.h) on a fresh
 * copy of the newest version, so none of this needs locking; what matters is
 * that every edit keeps the invariants the decoder checks (sorted shard list,
 * strictly ascending deletion vectors within the fragment), so that a version
 * built here can always be encoded and read back.
 */
#include "table/cx_manifest.h"
#include "table/cx_truncation.h"

#include <stdlib.h>
#include <string.h>

cx_code
cx_manifest_set_key(cx_manifest *m, const char *key_column, bool unique_key,
					cx_err *err)
{
	cx_table_decl table = {.key_column = key_column, .unique_key = unique_key};
	char	   *copy;

	if (key_column == NULL || key_column[0] == '\0')
		return cx_err_set(err, CX_ERR_INVALID, "the key column name is empty");
	if (cx_table_check_fit(m, &table, err) != CX_OK)
		return err->code;
	if (m->key_column != NULL)
		return CX_OK;
	copy = cx_strdup(key_column);
	if (copy == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "setting the key: out of memory");
	m->key_column = copy;
	m->unique_key = unique_key;
	return CX_OK;
}

/* Position of shard_id in the sorted list, or where it would go; *found
 * says which. */
static uint32_t
shard_position(const cx_manifest *m, const char *shard_id, bool *found)
{
	uint32_t	lo = 0;
	uint32_t	hi = m->nshards;

	*found = false;
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;
		int			c = strcmp(m->shards[mid].shard_id, shard_id);

		if (c == 0)
		{
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const cx_shard_mark *
cx_manifest_shard(const cx_manifest *m, const char *shard_id)
{
	bool		found;
	uint32_t	i = shard_position(m, shard_id, &found);

	return found ? &m->shards[i] : NULL;
}

uint64_t
cx_manifest_merged_gen(const cx_manifest *m, const char *shard_id)
{
	const cx_shard_mark *sm = cx_manifest_shard(m, shard_id);

	return sm != NULL ? sm->merged_gen : 0;
}

/* The shard's entry, inserted (watermark 0) where it sorts if missing. */
static cx_code
shard_entry(cx_manifest *m, const char *shard_id, cx_shard_mark **out,
			cx_err *err)
{
	bool		found;
	uint32_t	i = shard_position(m, shard_id, &found);
	cx_shard_mark *grown;
	char	   *copy;

	if (found)
	{
		*out = &m->shards[i];
		return CX_OK;
	}
	if (!cx_layout_shard_id_ok(shard_id))
		return cx_err_set(err, CX_ERR_INVALID,
						  "invalid shard id \"%.140s\": use 1 to 128 of A-Z a-z 0-9 . _ -",
						  shard_id);
	if (m->nshards == UINT32_MAX)
		return cx_err_set(err, CX_ERR_LIMIT, "the store has too many shards");
	copy = cx_strdup(shard_id);
	grown = realloc(m->shards, ((size_t) m->nshards + 1) * sizeof(cx_shard_mark));
	if (copy == NULL || grown == NULL)
	{
		free(copy);
		if (grown != NULL)
			m->shards = grown;
		return cx_err_set(err, CX_ERR_NOMEM,
						  "registering shard %s: out of memory", shard_id);
	}
	m->shards = grown;
	memmove(&m->shards[i + 1], &m->shards[i],
			(m->nshards - i) * sizeof(cx_shard_mark));
	m->shards[i].shard_id = copy;
	m->shards[i].merged_gen = 0;
	m->shards[i].dirty_marked = false;
	m->nshards++;
	*out = &m->shards[i];
	return CX_OK;
}

cx_code
cx_manifest_register_shard(cx_manifest *m, const char *shard_id, cx_err *err)
{
	cx_shard_mark *sm;

	return shard_entry(m, shard_id, &sm, err);
}

cx_code
cx_manifest_set_dirty_marked(cx_manifest *m, const char *shard_id,
							 cx_err *err)
{
	cx_shard_mark *sm;

	if (shard_entry(m, shard_id, &sm, err) != CX_OK)
		return err->code;
	sm->dirty_marked = true;
	return CX_OK;
}

cx_code
cx_manifest_set_merged_gen(cx_manifest *m, const char *shard_id,
						   uint64_t merged_gen, cx_err *err)
{
	cx_shard_mark *sm;

	if (shard_entry(m, shard_id, &sm, err) != CX_OK)
		return err->code;
	if (merged_gen < sm->merged_gen)
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: merged watermark cannot go back from %llu to %llu",
						  shard_id, (unsigned long long) sm->merged_gen,
						  (unsigned long long) merged_gen);
	sm->merged_gen = merged_gen;
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Deletion vectors
 * -------------------------------------------------------------------------- */

uint32_t
cx_manifest_deleted_count(const cx_manifest *m, uint32_t fragment)
{
	return m->dvs != NULL && fragment < m->nfragments ? m->dvs[fragment].n : 0;
}

/* Merges two ascending lists into out (room for na + nb), dropping
 * duplicates; returns the length. */
static uint32_t
merge_sorted(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
			 uint32_t *out)
{
	uint32_t	i = 0;
	uint32_t	j = 0;
	uint32_t	n = 0;

	while (i < na || j < nb)
	{
		uint32_t	v;

		if (j == nb || (i < na && a[i] <= b[j]))
			v = a[i++];
		else
			v = b[j++];
		if (n == 0 || out[n - 1] != v)
			out[n++] = v;
	}
	return n;
}

cx_code
cx_manifest_add_deletions(cx_manifest *m, uint32_t fragment,
						  const uint32_t *rows, uint32_t n, cx_err *err)
{
	cx_deletion_vector *dv;
	uint32_t   *merged;
	uint64_t	total;

	if (fragment >= m->nfragments)
		return cx_err_set(err, CX_ERR_INVALID,
						  "deleting rows of fragment %u: the manifest lists %u",
						  fragment, m->nfragments);
	for (uint32_t i = 0; i < n; i++)
		if (rows[i] >= m->fragments[fragment].rows ||
			(i > 0 && rows[i - 1] > rows[i]))
			return cx_err_set(err, CX_ERR_INVALID,
							  "deleting rows of fragment %s: row %u is out of order or beyond its %llu rows",
							  m->fragments[fragment].path, rows[i],
							  (unsigned long long) m->fragments[fragment].rows);
	if (n == 0)
		return CX_OK;
	if (m->dvs == NULL)
	{
		m->dvs = calloc(m->nfragments, sizeof(cx_deletion_vector));
		if (m->dvs == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "deleting rows: out of memory");
	}
	dv = &m->dvs[fragment];
	total = (uint64_t) dv->n + n;
	merged = malloc(total * sizeof(uint32_t));
	if (merged == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "deleting rows: out of memory");
	/* The result is at most the fragment's row count, which fits a u32
	 * because every row index does. */
	dv->n = merge_sorted(dv->rows, dv->n, rows, n, merged);
	free(dv->rows);
	dv->rows = merged;
	return CX_OK;
}

void
cx_manifest_remove_fragment(cx_manifest *m, uint32_t f)
{
	uint32_t	after = m->nfragments - f - 1;

	cx_fragment_info_free(&m->fragments[f]);
	memmove(&m->fragments[f], &m->fragments[f + 1],
			after * sizeof(cx_fragment_info));
	if (m->dvs != NULL)
	{
		free(m->dvs[f].rows);
		memmove(&m->dvs[f], &m->dvs[f + 1],
				after * sizeof(cx_deletion_vector));
	}
	m->nfragments--;
}

uint32_t
cx_manifest_truncate(cx_manifest *m, int64_t before_us)
{
	uint32_t	dropped = 0;

	if (before_us > m->truncated_before_us)
		m->truncated_before_us = before_us;
	if (m->truncated_before_us == 0 || m->schema == NULL)
		return 0;
	for (uint32_t f = m->nfragments; f > 0; f--)
		if (cx_fragment_all_before(&m->fragments[f - 1],
								   m->truncated_before_us))
		{
			cx_manifest_remove_fragment(m, f - 1);
			dropped++;
		}
	return dropped;
}

cx_code
cx_manifest_lists_inputs(const cx_manifest *m, const char *const *inputs,
						 uint32_t ninputs, cx_err *err)
{
	for (uint32_t i = 0; i < ninputs; i++)
		if (cx_manifest_find_fragment(m, inputs[i]) < 0)
			return cx_err_set(err, CX_ERR_CONFLICT,
							  "fragment %s to compact is no longer listed by "
							  "base version %llu", inputs[i],
							  (unsigned long long) m->version);
	return CX_OK;
}

cx_code
cx_manifest_rewrite(cx_manifest *m, const char *const *inputs,
					uint32_t ninputs, const cx_fragment_info *outputs,
					uint32_t noutputs, cx_err *err)
{
	uint32_t	before = m->nfragments;

	if (cx_manifest_lists_inputs(m, inputs, ninputs, err) != CX_OK)
		return err->code;
	for (uint32_t o = 0; o < noutputs; o++)
		if (cx_manifest_add_fragment(m, &outputs[o], err) != CX_OK)
		{
			while (m->nfragments > before)
				cx_manifest_remove_fragment(m, m->nfragments - 1);
			return err->code;
		}
	for (uint32_t i = 0; i < ninputs; i++)
		cx_manifest_remove_fragment(m, (uint32_t) cx_manifest_find_fragment(m, inputs[i]));
	return CX_OK;
}
