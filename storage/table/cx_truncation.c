/*
 * cx_truncation.c — finding TRUNCATE markers, and what a fragment's
 * commit-time statistics say about a truncation time (cx_truncation.h).
 */
#include "table/cx_truncation.h"

/* Whether fi (a fragment of table) may hold a row with a NULL key that is
 * a tombstone. */
static bool
may_hold_marker(const cx_fragment_info *fi, const cx_schema *table,
				uint32_t key_col)
{
	const cx_colstats *key = cx_fragment_stats(fi, table, key_col);

	if (key != NULL && key->null_count == 0)
		return false;
	return cx_fragment_may_have_tombstones(fi);
}

typedef struct marker_args
{
	uint32_t	key_col;
	cx_marker  *out;
} marker_args;

static cx_code
group_markers(void *arg, const cx_rowgroup *g, const cx_layout *layout,
			  uint64_t first_row, cx_err *err)
{
	marker_args *a = arg;
	const cx_colvec *kv = cx_layout_column(layout, g, a->key_col);

	(void) err;
	for (uint32_t i = 0; i < cx_rowgroup_rows(g); i++)
		if (cx_colvec_isnull(kv, i) && cx_row_tombstone(g, layout, i))
		{
			a->out->found = true;
			a->out->row = first_row + i;
			a->out->ts = cx_row_ts(g, layout, i);
		}
	return CX_OK;
}

cx_code
cx_marker_find(cx_objstore *s, const cx_fragment_info *fi,
			   const cx_schema *table, uint32_t key_col, cx_marker *out,
			   cx_err *err)
{
	marker_args a = {key_col, out};

	out->found = false;
	if (!may_hold_marker(fi, table, key_col))
		return CX_OK;
	return cx_keygroups(s, fi, table, key_col, group_markers, &a, err);
}


bool
cx_fragment_all_before(const cx_fragment_info *fi, int64_t ts)
{
	const cx_colstats *st = cx_fragment_hidden_stats(fi, CX_FIELD_ID_COMMIT_TS);

	if (st == NULL || !st->has_max || st->max_len != 8)
		return false;
	return (int64_t) cx_load_u64(st->max) < ts;
}

bool
cx_fragment_any_before(const cx_fragment_info *fi, int64_t ts)
{
	const cx_colstats *st = cx_fragment_hidden_stats(fi, CX_FIELD_ID_COMMIT_TS);

	if (st == NULL || !st->has_min || st->min_len != 8)
		return true;
	return (int64_t) cx_load_u64(st->min) < ts;
}
