/*
 * cx_probe_plan.c — a base version's probe plan, kept on the handle
 * (cx_probe_plan.h).
 *
 * A kept plan is reused only for a manifest with the same fragment paths
 * in the same order and the same index section bytes: the plan is a
 * function of exactly those, so a reused plan is the one the manifest would
 * give, whatever its version number says (a clone changed in memory, a
 * version that lost its commit race).  Comparing costs one pass over the
 * paths, where working the plan out sorts them and searches the sorted
 * list once per entry of every segment's fragment list.
 */
#include "table/cx_probe_plan.h"

#include <stdlib.h>
#include <string.h>

static void
plan_free(void *p)
{
	cx_probe_plan *plan = p;

	if (plan == NULL)
		return;
	for (uint32_t i = 0; plan->where != NULL && i < plan->ix.n; i++)
		free(plan->where[i]);
	free(plan->where);
	for (uint32_t f = 0; plan->paths != NULL && f < plan->nfragments; f++)
		free(plan->paths[f]);
	free(plan->paths);
	cx_keyindex_free(&plan->ix);
	cx_buf_free(&plan->section);
	free(plan);
}

static size_t
plan_bytes(const void *p)
{
	const cx_probe_plan *plan = p;
	size_t		bytes = sizeof(*plan) + cx_keyindex_memory(&plan->ix) +
		plan->section.cap;

	for (uint32_t i = 0; plan->where != NULL && i < plan->ix.n; i++)
		bytes += sizeof(int64_t *) +
			(plan->ix.segs[i].nfragments + 1) * sizeof(int64_t);
	for (uint32_t f = 0; plan->paths != NULL && f < plan->nfragments; f++)
		bytes += sizeof(char *) + cx_str_memory(plan->paths[f]);
	return bytes;
}

static bool
plan_matches(const cx_probe_plan *plan, const cx_manifest *m)
{
	const cx_manifest_ext *e = cx_keyindex_section(m);
	size_t		len = e != NULL ? e->len : 0;

	if (plan->nfragments != m->nfragments || plan->section.len != len ||
		(len > 0 && memcmp(plan->section.data, e->data, len) != 0))
		return false;
	for (uint32_t f = 0; f < m->nfragments; f++)
		if (strcmp(plan->paths[f], m->fragments[f].path) != 0)
			return false;
	return true;
}

static int
path_cmp(const void *a, const void *b, void *arg)
{
	const cx_manifest *m = arg;

	return strcmp(m->fragments[*(const uint32_t *) a].path,
				  m->fragments[*(const uint32_t *) b].path);
}

/* The fragment of m whose path is path, or -1; by_path: m's fragments
 * sorted by path. */
static int64_t
find_path(const cx_manifest *m, const uint32_t *by_path, const char *path)
{
	uint32_t	lo = 0;
	uint32_t	hi = m->nfragments;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;
		int			c = strcmp(m->fragments[by_path[mid]].path, path);

		if (c == 0)
			return by_path[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* plan->where from m's fragments sorted by path. */
static bool
map_segments(cx_probe_plan *plan, const cx_manifest *m)
{
	uint32_t   *by_path = malloc((m->nfragments + 1) * sizeof(uint32_t));
	bool		ok = by_path != NULL &&
		(plan->where = calloc(plan->ix.n + 1, sizeof(int64_t *))) != NULL;

	for (uint32_t f = 0; ok && f < m->nfragments; f++)
		by_path[f] = f;
	if (ok)
		qsort_r(by_path, m->nfragments, sizeof(uint32_t), path_cmp,
				(void *) m);
	for (uint32_t i = 0; ok && i < plan->ix.n; i++)
	{
		const cx_keyseg_ref *ref = &plan->ix.segs[i];

		plan->where[i] = malloc((ref->nfragments + 1) * sizeof(int64_t));
		ok = plan->where[i] != NULL;
		for (uint32_t k = 0; ok && k < ref->nfragments; k++)
			plan->where[i][k] = find_path(m, by_path, ref->fragments[k]);
	}
	free(by_path);
	return ok;
}

/* What the plan is worked out from, copied for plan_matches. */
static bool
copy_inputs(cx_probe_plan *plan, const cx_manifest *m)
{
	const cx_manifest_ext *e = cx_keyindex_section(m);

	cx_buf_init(&plan->section);
	if (e != NULL)
		cx_buf_put(&plan->section, e->data, e->len);
	plan->paths = calloc(m->nfragments + 1, sizeof(char *));
	if (plan->paths == NULL || !cx_buf_ok(&plan->section))
		return false;
	plan->nfragments = m->nfragments;
	for (uint32_t f = 0; f < m->nfragments; f++)
		if ((plan->paths[f] = cx_strdup(m->fragments[f].path)) == NULL)
			return false;
	return true;
}

static cx_code
plan_build(const cx_manifest *m, cx_probe_plan **out, cx_err *err)
{
	cx_probe_plan *plan = calloc(1, sizeof(cx_probe_plan));
	cx_code		rc;

	*out = NULL;
	if (plan == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	rc = cx_keyindex_load(m, &plan->ix, err);
	/* an index this build cannot read: answered by column reads */
	if (rc == CX_ERR_CORRUPT || rc == CX_ERR_UNSUPPORTED)
		rc = CX_OK;
	if (rc == CX_OK && (!copy_inputs(plan, m) || !map_segments(plan, m)))
		rc = cx_err_set(err, CX_ERR_NOMEM, "base probe: out of memory");
	if (rc != CX_OK)
	{
		plan_free(plan);
		return rc;
	}
	*out = plan;
	return CX_OK;
}

cx_code
cx_probe_plan_get(cx_objstore *s, const cx_manifest *m,
				  const cx_probe_plan **out, cx_err *err)
{
	cx_handle_cache *slot = &s->caches[CX_CACHE_PROBE_PLAN];
	cx_probe_plan *plan;

	if (slot->p != NULL && plan_matches(slot->p, m))
	{
		*out = slot->p;
		return CX_OK;
	}
	if (plan_build(m, &plan, err) != CX_OK)
		return err->code;
	plan_free(slot->p);
	slot->p = plan;
	slot->free_fn = plan_free;
	slot->bytes_fn = plan_bytes;
	*out = plan;
	return CX_OK;
}
