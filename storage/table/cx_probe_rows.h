/*
 * cx_probe_rows.h — the probed column of small fragments no key index
 * segment answers for, read once and kept on the handle
 * (CX_CACHE_PROBE_ROWS) for the base probes after it (cx_base_probe.h).
 *
 * Between a merge and the index job that covers its output, every probe of
 * the writer (one per request it stages) would read the merge's new
 * fragment again; fragments are immutable, so their rows can be kept,
 * whole, and only the deletion vector of the probing version applied.
 */
#ifndef CX_PROBE_ROWS_H
#define CX_PROBE_ROWS_H

#include "table/cx_row_key.h"

/*
 * cx_colscan() of fi, served from the rows the handle keeps of it when fi
 * is small (at most CX_PROBE_ROWS_FRAGMENT_MAX bytes): read and kept on
 * first use, then replayed through spec->fn with spec->dv applied, in row
 * order.  spec->group_may_hold prunes only a fragment read from the store
 * (a kept fragment's rows are matched one by one, which gives the same
 * hits).  *from_store says whether the store was read.
 */
#define CX_PROBE_ROWS_FRAGMENT_MAX (64 * 1024)

cx_code		cx_probe_rows_scan(cx_objstore *s, const cx_fragment_info *fi,
							   const cx_schema *table,
							   const cx_colscan_spec *spec, bool *from_store,
							   cx_err *err);

#endif							/* CX_PROBE_ROWS_H */
