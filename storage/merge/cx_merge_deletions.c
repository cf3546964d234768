/*
 * cx_merge_deletions.c — deletions a merge gathers, per fragment path, until
 * its rebase applies them to the version being committed.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/cx_merge_int.h"

void
cx_dvset_free(cx_dvset *d)
{
	for (uint32_t i = 0; i < d->n; i++)
	{
		free(d->e[i].path);
		free(d->e[i].rows);
	}
	free(d->e);
	memset(d, 0, sizeof(*d));
}

/* The entry of path, created if missing.  Rows arrive a fragment at a time,
 * so the last entry is looked at first. */
static cx_dvset_entry *
entry_for(cx_dvset *d, const char *path)
{
	cx_dvset_entry *e;

	for (uint32_t i = d->n; i > 0; i--)
		if (strcmp(d->e[i - 1].path, path) == 0)
			return &d->e[i - 1];
	if (d->n == d->cap)
	{
		uint32_t	cap = d->cap ? d->cap * 2 : 8;
		cx_dvset_entry *grown = realloc(d->e, cap * sizeof(*grown));

		if (grown == NULL)
			return NULL;
		d->e = grown;
		d->cap = cap;
	}
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	if ((e->path = cx_strdup(path)) == NULL)
		return NULL;
	d->n++;
	return e;
}

cx_code
cx_dvset_add(cx_dvset *d, const char *path, uint64_t row, cx_err *err)
{
	cx_dvset_entry *e = entry_for(d, path);

	if (e == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	if (row > UINT32_MAX)
		return cx_err_set(err, CX_ERR_LIMIT,
						  "fragment %s: row %llu is beyond what a deletion vector can name",
						  path, (unsigned long long) row);
	if (e->n == e->cap)
	{
		uint32_t	cap = e->cap ? e->cap * 2 : 64;
		uint32_t   *grown = realloc(e->rows, (size_t) cap * sizeof(uint32_t));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
		e->rows = grown;
		e->cap = cap;
	}
	e->rows[e->n++] = (uint32_t) row;
	return CX_OK;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return (x > y) - (x < y);
}

cx_code
cx_dvset_apply(cx_dvset *d, cx_manifest *m, uint64_t *count, cx_err *err)
{
	for (uint32_t i = 0; i < d->n; i++)
	{
		cx_dvset_entry *e = &d->e[i];
		int64_t		f = cx_manifest_find_fragment(m, e->path);
		uint32_t	before;

		if (f < 0)
			return cx_err_set(err, CX_ERR_CONFLICT,
							  "merge: fragment %s was removed from the base meanwhile; merge again",
							  e->path);
		before = cx_manifest_deleted_count(m, (uint32_t) f);
		qsort(e->rows, e->n, sizeof(uint32_t), cmp_u32);
		if (cx_manifest_add_deletions(m, (uint32_t) f, e->rows, e->n,
									  err) != CX_OK)
			return err->code;
		*count += cx_manifest_deleted_count(m, (uint32_t) f) - before;
	}
	return CX_OK;
}

void
cx_dvset_forget_truncated(cx_dvset *d, const cx_manifest *start,
						  const cx_manifest *m)
{
	uint32_t	kept = 0;

	for (uint32_t i = 0; i < d->n; i++)
	{
		cx_dvset_entry *e = &d->e[i];
		int64_t		f = cx_manifest_find_fragment(start, e->path);

		if (m->truncated_before_us > 0 && start->schema != NULL && f >= 0 &&
			cx_manifest_find_fragment(m, e->path) < 0 &&
			cx_fragment_all_before(&start->fragments[f],
								   m->truncated_before_us))
		{
			free(e->path);
			free(e->rows);
			continue;
		}
		d->e[kept++] = *e;
	}
	d->n = kept;
}
