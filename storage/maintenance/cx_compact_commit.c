/*
 * cx_compact_commit.c — committing a compaction (cx_compact_commit,
 * cx_compact_int.h) through the optimistic base commit (table/cx_commit.h).
 */
#include "maintenance/cx_compact_int.h"

#include <stdlib.h>

#include "table/cx_commit.h"

typedef struct compact_rebase
{
	cx_compact_edit *e;
	const char **paths;			/* of the inputs, from e->read */
	uint32_t	calls;
} compact_rebase;

/* next arrives as a copy of base, the newest version: swap the inputs for
 * the outputs in it and carry over what base deleted since e->read. */
static cx_code
rebase_compaction(void *arg, const cx_manifest *base, cx_manifest *next,
				  cx_err *err)
{
	compact_rebase *r = arg;
	cx_compact_edit *e = r->e;

	r->calls++;
	if (base == NULL)
		return cx_err_set(err, CX_ERR_CONFLICT,
						  "the store no longer has the base version compaction read");
	/* Checked against base, so that a conflict names the newest version
	 * rather than the one being built. */
	if (cx_manifest_lists_inputs(base, r->paths, e->ninputs, err) != CX_OK ||
		cx_manifest_rewrite(next, r->paths, e->ninputs, e->outputs,
							e->noutputs, err) != CX_OK)
		return err->code;
	return cx_compact_carry_deletions(e->map, e->read, e->inputs, base, next,
									  next->nfragments - e->noutputs,
									  &e->deletions_carried, err);
}

cx_code
cx_compact_commit(cx_objstore *s, cx_compact_edit *e, uint64_t *version,
				  cx_err *err)
{
	compact_rebase r = {e, NULL, 0};
	cx_code		rc;

	r.paths = malloc(sizeof(char *) * (e->ninputs ? e->ninputs : 1));
	if (r.paths == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory committing a compaction");
	for (uint32_t i = 0; i < e->ninputs; i++)
		r.paths[i] = e->read->fragments[e->inputs[i]].path;
	rc = cx_commit(s, CX_COMPACT_OPERATION, rebase_compaction, &r, NULL,
				   version, err);
	e->retries = r.calls > 0 ? r.calls - 1 : 0;
	free(r.paths);
	return rc;
}
