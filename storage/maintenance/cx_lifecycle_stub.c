/*
 * cx_lifecycle_stub.c — a stand-in for compaction and GC so that the SQL
 * surface builds and tests before the engines exist.
 *
 * TEMPORARY: deleted at integration, where maintenance/cx_compact*.c and
 * maintenance/cx_gc*.c replace it.  cx_compact finds nothing to do and
 * cx_gc lists nothing.
 */
#include <string.h>

#include "ctxstore/engine.h"
#include "ctxstore/lifecycle.h"

void
cx_compact_options_default(cx_compact_options *o)
{
	memset(o, 0, sizeof(*o));
	o->min_fragments = CX_COMPACT_DEFAULT_MIN_FRAGMENTS;
	o->target_rows_per_fragment = CX_MERGE_DEFAULT_TARGET_ROWS;
	cx_fragw_options_default(&o->fragment);
	o->sort_memory = CX_MERGE_DEFAULT_SORT_MEMORY;
	o->lease_seconds = CX_COMPACT_DEFAULT_LEASE_SECONDS;
}

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

void
cx_gc_options_default(cx_gc_options *o)
{
	memset(o, 0, sizeof(*o));
	o->retain_versions = CX_GC_DEFAULT_RETAIN_VERSIONS;
	o->retain_interval_us = CX_GC_DEFAULT_RETAIN_INTERVAL_US;
	o->grace_us = CX_GC_DEFAULT_GRACE_US;
	o->batch = 100;
}

cx_code
cx_gc(cx_objstore *s, const cx_gc_options *o,
	  const cx_job_progress *progress, cx_gc_result *res, cx_err *err)
{
	(void) s;
	(void) o;
	(void) err;
	memset(res, 0, sizeof(*res));
	if (progress != NULL && progress->report != NULL &&
		!progress->report(progress->arg, "listing", 0, 0))
		return CX_ERR_CANCELED;
	return CX_OK;
}
