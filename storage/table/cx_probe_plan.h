/*
 * cx_probe_plan.h — what a base probe (cx_base_probe.h) works out from a
 * base version alone before it reads anything: the key index segments the
 * version lists and, for each, the fragment of the version at each
 * position of the segment's fragment list.  Segments name fragments by
 * path, so working this out sorts every fragment path of the version; the
 * writer probes the same base for every request, so the plan is kept on
 * the handle (CX_CACHE_PROBE_PLAN) and worked out again only for a base
 * whose fragment paths or index section differ from the kept plan's.
 */
#ifndef CX_PROBE_PLAN_H
#define CX_PROBE_PLAN_H

#include <stdint.h>

#include "table/cx_key_index.h"
#include "table/cx_manifest.h"
#include "util/cx_buf.h"

typedef struct cx_probe_plan
{
	cx_keyindex ix;				/* the segments the version lists; none
								 * when its index section is one this
								 * build cannot read */
	int64_t   **where;			/* per segment of ix, per position of its
								 * fragment list: the fragment, or -1 */
	/* What the plan was worked out from, compared whole before reuse. */
	uint32_t	nfragments;
	char	  **paths;			/* the version's fragment paths, in order */
	cx_buf		section;		/* the version's index section bytes */
} cx_probe_plan;

/* The plan of m: the handle's when it was worked out from the same paths
 * and index section, else worked out now and kept on the handle in place
 * of the old one.  Valid until the next call on the handle or its close. */
cx_code		cx_probe_plan_get(cx_objstore *s, const cx_manifest *m,
							  const cx_probe_plan **out, cx_err *err);

#endif							/* CX_PROBE_PLAN_H */
