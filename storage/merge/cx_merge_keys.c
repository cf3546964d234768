/*
 * cx_merge_keys.c — which rows a merge keeps and which base rows it replaces
 * (every table with a key column, whatever unique_key says).
 *
 * The key map holds, per key, the newest version among the merged
 * generations: they are one shard's, visited oldest first and rows in order,
 * so the last version seen is the newest (commit order).
 *
 * Replaced base rows are found by probing the base for the merged keys
 * (cx_base_probe.h): the key index answers for the fragments it covers, and
 * only the key columns of the others are read, of the fragments and row
 * groups whose key statistics may hold a merged key.
 *
 * A base row newer than our version (merged from another shard that
 * committed later) wins: our version is not written.  Otherwise the base row
 * gets a deletion vector entry.  Either way, a base row whose fragment came
 * from another shard (its origin in the manifest) makes the key a
 * cross-shard key conflict: two clusters wrote it, and the later commit won
 * without any uniqueness check.  Conflicts are counted where a found base
 * row is judged, whatever found it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/cx_merge_int.h"
#include "table/cx_base_probe.h"

typedef struct gen_keys
{
	merge_state *ms;
	uint32_t	source;
} gen_keys;

static cx_code
add_merged_key(void *arg, const cx_keyrow *kr, cx_err *err)
{
	gen_keys   *gk = arg;
	cx_keyver  *v;
	bool		found;

	if (cx_keymap_upsert(gk->ms->map, kr->key, kr->len, &v, &found,
						 err) != CX_OK)
		return err->code;
	v->ts = kr->ts;
	v->source = gk->source;
	v->row = kr->row;
	v->tombstone = kr->tombstone;
	return found ? CX_OK : cx_keyrange_add(&gk->ms->range, kr->key, kr->len,
										   err);
}

cx_code
cx_merge_build_keymap(merge_state *ms, cx_err *err)
{
	ms->map = cx_keymap_new();
	if (ms->map == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	cx_keyrange_init(&ms->range, (cx_type) ms->table->columns[ms->key_col].type);
	for (uint32_t i = 0; i < ms->ngens; i++)
	{
		gen_keys	gk = {ms, i};
		cx_objstore *from;
		cx_code		rc;

		if (cx_generation_open(ms->s, ms->sm, &ms->gens[i], &from,
							   err) != CX_OK)
			return cx_shard_generation_failed(ms->sm, &ms->gens[i], err);
		rc = cx_keyscan(cx_gen_memo_source(ms->memo, from),
						&ms->gens[i].fragment, ms->table, ms->key_col,
						NULL, add_merged_key, &gk, err);
		cx_generation_done(ms->s, from);
		if (rc != CX_OK)
			return cx_shard_generation_failed(ms->sm, &ms->gens[i], err);
	}
	return CX_OK;
}

/* Whether fragment fi may hold one of the merged keys (statistics). */
static bool
may_hold_merged_key(const merge_state *ms, const cx_fragment_info *fi)
{
	return cx_keyrange_may_overlap(&ms->range,
								   cx_fragment_stats(fi, ms->table,
													 ms->key_col));
}

typedef struct base_keys
{
	merge_state *ms;
	const char *path;
	const char *origin;			/* the fragment's origin shard, or NULL */
} base_keys;

/* Whether a byte may appear in a log line as it is (UTF-8 passes). */
static bool
printable(uint8_t c)
{
	return c >= 0x20 && c != 0x7f;
}

/* A text key, cut at a character boundary to fit, with "..." if cut. */
static void
text_example(const uint8_t *key, size_t len, char *out, size_t size)
{
	size_t		n = len < size - 1 ? len : size - 4;

	while (n < len && n > 0 && (key[n] & 0xC0) == 0x80)
		n--;
	for (size_t i = 0; i < n; i++)
		out[i] = printable(key[i]) ? (char) key[i] : '?';
	strcpy(out + n, n < len ? "..." : "");
}

/* The printable form of a key (CX_KEY_EXAMPLE_MAX bytes in out). */
static void
key_example(const merge_state *ms, const uint8_t *key, size_t len, char *out)
{
	size_t		size = CX_KEY_EXAMPLE_MAX;
	int64_t		i = 0;

	switch ((cx_type) ms->table->columns[ms->key_col].type)
	{
		case CX_T_INT16:
			i = len == 2 ? (int16_t) cx_load_u16(key) : 0;
			break;
		case CX_T_INT32:
			i = len == 4 ? (int32_t) cx_load_u32(key) : 0;
			break;
		case CX_T_INT64:
			i = len == 8 ? (int64_t) cx_load_u64(key) : 0;
			break;
		case CX_T_STRING:
		case CX_T_JSON:
		case CX_T_JSONB:
		case CX_T_NUMERIC:
			text_example(key, len, out, size);
			return;
		default:
			strcpy(out, "\\x");
			for (size_t k = 0; k < len && 2 + 2 * k + 3 < size; k++)
				snprintf(out + 2 + 2 * k, 3, "%02x", key[k]);
			return;
	}
	snprintf(out, size, "%" PRId64, i);
}

/* Counts v's key once if the base row judged against it came from another
 * shard than the one merging. */
static void
judge_origin(merge_state *ms, cx_keyver *v, const char *origin,
			 const cx_keyrow *kr)
{
	if (origin == NULL || v->conflict || strcmp(origin, ms->shard_id) == 0)
		return;
	v->conflict = true;
	if (ms->key_conflicts++ == 0)
		key_example(ms, kr->key, kr->len, ms->key_conflict_example);
}

static cx_code
check_base_row(void *arg, const cx_keyrow *kr, cx_err *err)
{
	base_keys  *bk = arg;
	cx_keyver  *v = cx_keymap_get(bk->ms->map, kr->key, kr->len);

	if (v == NULL)
		return CX_OK;
	judge_origin(bk->ms, v, bk->origin, kr);
	if (kr->ts > v->ts)
	{
		v->beaten = true;
		return CX_OK;
	}
	return cx_dvset_add(&bk->ms->replaced, bk->path, kr->row, err);
}

/* Every merged key, for the probe (pointers into the key map). */
static cx_code
merged_keys(const merge_state *ms, const uint8_t ***values, size_t **lens,
			uint32_t *n, cx_err *err)
{
	uint64_t	count = cx_keymap_count(ms->map);

	if (count > UINT32_MAX)
		return cx_err_set(err, CX_ERR_LIMIT, "merge: too many keys to probe");
	*n = (uint32_t) count;
	*values = malloc((count + 1) * sizeof(uint8_t *));
	*lens = malloc((count + 1) * sizeof(size_t));
	if (*values == NULL || *lens == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	for (uint64_t i = 0; i < count; i++)
		cx_keymap_key(ms->map, i, &(*values)[i], &(*lens)[i]);
	return CX_OK;
}

/* Judges each base row holding a merged key as the key scan did. */
static cx_code
judge_hits(merge_state *ms, const cx_probe_result *r, cx_err *err)
{
	for (uint32_t i = 0; i < r->nhits; i++)
	{
		const cx_probe_hit *h = &r->hits[i];
		const cx_fragment_info *fi = &ms->start->fragments[h->fragment];
		base_keys	bk = {ms, fi->path, fi->origin_shard};
		cx_keyrow	kr = {h->key, h->key_len, h->key, h->key_len, h->ts,
		h->tombstone, h->row};

		if (check_base_row(&bk, &kr, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

cx_code
cx_merge_find_replaced(merge_state *ms, cx_err *err)
{
	const uint8_t **values = NULL;
	size_t	   *lens = NULL;
	uint32_t	n = 0;
	cx_probe_result r = {0};
	cx_code		rc;

	rc = merged_keys(ms, &values, &lens, &n, err);
	if (rc == CX_OK)
		rc = cx_base_probe(ms->s, ms->start, ms->key_col,
						   (const uint8_t *const *) values, lens, n, &r, err);
	if (rc == CX_OK)
		rc = judge_hits(ms, &r, err);
	cx_probe_result_free(&r);
	free(values);
	free(lens);
	return rc;
}

/*
 * A row of a fragment committed after `start` (by another shard's merge)
 * against the version we wrote: the older one gets
 * the deletion; on a tie, theirs (to a reader before our commit, their row
 * was in the base and ours unmerged, and an unmerged row wins a tie).
 */
static cx_code
check_new_row(void *arg, const cx_keyrow *kr, cx_err *err)
{
	base_keys  *bk = arg;
	merge_state *ms = bk->ms;
	cx_keyver  *v = cx_keymap_get(ms->map, kr->key, kr->len);

	if (v == NULL || !v->written)
		return CX_OK;
	judge_origin(ms, v, bk->origin, kr);
	if (kr->ts > v->ts)
		return cx_dvset_add(&ms->rebased, ms->out[v->out_fragment].path,
							v->out_row, err);
	return cx_dvset_add(&ms->rebased, bk->path, kr->row, err);
}

/* Whether `start` lists fragment f of a later version.  Versions append
 * fragments, so the same position is checked first. */
static bool
in_start(const merge_state *ms, uint32_t f, const char *path)
{
	const cx_manifest *start = ms->start;

	if (f < start->nfragments && strcmp(start->fragments[f].path, path) == 0)
		return true;
	return cx_manifest_find_fragment(start, path) >= 0;
}

static bool
already_scanned(const merge_state *ms, const char *path)
{
	for (uint32_t i = 0; i < ms->nscanned; i++)
		if (strcmp(ms->scanned[i], path) == 0)
			return true;
	return false;
}

static cx_code
remember_scanned(merge_state *ms, const char *path, cx_err *err)
{
	char	  **grown = realloc(ms->scanned, (ms->nscanned + 1) * sizeof(char *));

	if (grown == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	ms->scanned = grown;
	if ((ms->scanned[ms->nscanned] = cx_strdup(path)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	ms->nscanned++;
	return CX_OK;
}

/*
 * Compares our written rows with the fragments base lists that `start` did
 * not.  Results accumulate in ms->rebased across rebase attempts, and each
 * fragment is read once however many attempts there are: a deleted row of
 * theirs may be compared too, which is harmless (whatever deleted it is
 * newer still, and deleting a deleted row changes nothing).
 */
cx_code
cx_merge_compare_new(merge_state *ms, const cx_manifest *base, cx_err *err)
{
	for (uint32_t f = 0; f < base->nfragments; f++)
	{
		const cx_fragment_info *fi = &base->fragments[f];
		base_keys	bk = {ms, fi->path, fi->origin_shard};

		if (in_start(ms, f, fi->path) || already_scanned(ms, fi->path))
			continue;
		if (may_hold_merged_key(ms, fi) &&
			cx_keyscan(ms->s, fi, ms->table, ms->key_col, NULL, check_new_row,
					   &bk, err) != CX_OK)
			return cx_manifest_fragment_failed(base, fi->path, err);
		if (remember_scanned(ms, fi->path, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}
