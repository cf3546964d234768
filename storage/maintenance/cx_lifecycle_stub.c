/*
 * cx_lifecycle_stub.c — a stand-in for the compaction job so that the SQL
 * surface builds and tests before it exists.
 *
 * TEMPORARY: deleted when maintenance/cx_compact.c defines cx_compact (the
 * job's parts, selection, lease, rewrite edit and carried deletions, are
 * in cx_compact*.c already).  It finds nothing to do.
 */
#include <string.h>

#include "ctxstore/engine.h"
#include "ctxstore/lifecycle.h"

cx_code
cx_compact(cx_objstore *s, const cx_compact_options *o,
		   const cx_job_progress *progress, cx_compact_result *res,
		   cx_err *err)
{
	(void) s;
	(void) o;
	(void) err;
	memset(res, 0, sizeof(*res));
	if (progress != NULL && progress->report != NULL &&
		!progress->report(progress->arg, "selecting", 0, 0))
		return CX_ERR_CANCELED;
	return CX_OK;
}
