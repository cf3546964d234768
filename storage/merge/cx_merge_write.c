/*
 * cx_merge_write.c — streaming the surviving rows of the merged generations
 * into new base fragments.
 *
 * One generation row group is decoded at a time and each surviving row is
 * appended to a cx_fragw, which uploads a row group as soon as it is cut, so
 * memory stays at about one row group in and one out.  A new fragment is
 * started every target_rows_per_fragment rows.  A merge with an order (the
 * sort key, then the key: cx_merge_sort.c) gathers the surviving rows in a
 * sorted run instead and writes it out in order when the merge ends or the
 * run's memory budget is reached: each run ends its fragment, so every base
 * fragment is sorted, and consecutive fragments of one run are disjoint in
 * the order.
 *
 * Survivors: in tables with a key column (all de-duplicate, whatever
 * unique_key says), each key's newest merged version unless
 * a newer base row beat it — including winning tombstones, which are written
 * as tombstone rows: another shard may still hold an older, unmerged version
 * of the key, and only a tombstone in the base keeps that version hidden
 * once this merge's generations are drained (docs/design/merge.md).  Rows
 * with a NULL key are never de-duplicated.  Without a key column every row
 * survives except tombstones, which have nothing to hide there.  No row a
 * TRUNCATE hides survives (committed before the cut, or ahead of the marker
 * in its generation), and the marker itself is not written.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/cx_merge_int.h"

typedef struct writer
{
	merge_state *ms;
	cx_fragw   *w;				/* the fragment being written, or NULL */
	cx_datum   *values;			/* one row of written_schema */
	cx_buf		items;			/* list elements of that row */
	const cx_layout *layout;	/* of the generation being read */
	cx_sort_run *run;			/* sorted merges only */
} writer;

/* Column c of written_schema (the table's, then the hidden ones) in g. */
static const cx_colvec *
written_column(const cx_layout *layout, const cx_rowgroup *g, uint32_t c)
{
	if (c < layout->ncolumns)
		return cx_layout_column(layout, g, c);
	return cx_rowgroup_column(g, (uint32_t) (c == layout->ncolumns ?
											 layout->ts_col : layout->tomb_col));
}

/*
 * Lists come out of a row group as slices of their element vector but go
 * into a writer as arrays of items, so their elements are gathered into
 * items (sized once per row, so the pointers into it stay valid).
 */
cx_code
cx_base_row_copy(const cx_schema *written, const cx_layout *layout,
				 const cx_rowgroup *g, uint32_t i, cx_datum *values,
				 cx_buf *items_buf, cx_err *err)
{
	size_t		nitems = 0;
	cx_datum   *items;

	for (uint32_t c = 0; c < written->ncolumns; c++)
	{
		cx_colvec_get(written_column(layout, g, c), i, &values[c]);
		if (written->columns[c].type == CX_T_LIST && !values[c].isnull)
			nitems += values[c].v.slice.n;
	}
	cx_buf_reset(items_buf);
	items = (cx_datum *) cx_buf_grow(items_buf, nitems * sizeof(cx_datum) + 1);
	if (items == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory copying a row");
	for (uint32_t c = 0; c < written->ncolumns; c++)
	{
		cx_datum   *d = &values[c];
		const cx_colvec *elems;
		uint32_t	start;
		uint32_t	n;

		if (written->columns[c].type != CX_T_LIST || d->isnull)
			continue;
		elems = d->v.slice.elems;
		start = d->v.slice.start;
		n = d->v.slice.n;
		for (uint32_t k = 0; k < n; k++)
			cx_colvec_get(elems, start + k, &items[k]);
		d->v.list.items = items;
		d->v.list.n = n;
		items += n;
	}
	return CX_OK;
}

cx_code
cx_base_fragment_finish(cx_fragw *w, const cx_schema *written,
						const char *origin, cx_fragment_info **out,
						uint32_t *n, cx_err *err)
{
	cx_fragment_info *grown = realloc(*out, (*n + 1) * sizeof(cx_fragment_info));
	cx_fragment_info *fi;

	if (grown == NULL)
	{
		cx_fragw_abort(w);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory finishing a fragment");
	}
	*out = grown;
	fi = &grown[*n];
	memset(fi, 0, sizeof(cx_fragment_info));
	if (cx_fragw_finish(w, fi, err) != CX_OK)
		return err->code;
	cx_fragentry_set_field_ids(fi, written);
	/* Counted first, so that a failed copy is freed with the rest. */
	(*n)++;
	if (origin != NULL && (fi->origin_shard = cx_strdup(origin)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory finishing a fragment");
	return CX_OK;
}

static cx_code
finish_fragment(writer *wr, cx_err *err)
{
	merge_state *ms = wr->ms;
	cx_fragw   *w = wr->w;

	wr->w = NULL;
	return cx_base_fragment_finish(w, ms->written_schema, ms->shard_id,
								   &ms->out, &ms->nout, err);
}

/* Appends a row of written_schema; v (NULL for rows outside the key map)
 * records where (cx_sort_emit_fn). */
static cx_code
append_row(void *arg, const cx_datum *values, cx_keyver *v, cx_err *err)
{
	writer	   *wr = arg;
	merge_state *ms = wr->ms;

	if (wr->w == NULL)
	{
		char		key[64];

		if (cx_fragment_new_key(key, sizeof(key), err) != CX_OK ||
			cx_fragw_open(ms->s, key, ms->written_schema, &ms->opt.fragment,
						  &wr->w, err) != CX_OK)
			return err->code;
	}
	if (v != NULL)
	{
		v->written = true;
		v->out_fragment = ms->nout;
		v->out_row = (uint32_t) cx_fragw_rows(wr->w);
	}
	if (cx_fragw_append(wr->w, values, err) != CX_OK)
		return err->code;
	ms->rows_written++;
	if (cx_fragw_rows(wr->w) >= ms->opt.target_rows_per_fragment)
		return finish_fragment(wr, err);
	return CX_OK;
}

/* Writes the sorted run out; its last fragment ends with it. */
static cx_code
flush_run(writer *wr, cx_err *err)
{
	if (cx_sort_run_flush(wr->run, append_row, wr, err) != CX_OK)
		return err->code;
	wr->ms->sorted_runs++;
	return wr->w != NULL ? finish_fragment(wr, err) : CX_OK;
}

/* Row i of g survives: appended now, or to the sorted run. */
static cx_code
emit_row(writer *wr, const cx_rowgroup *g, uint32_t i, cx_keyver *v,
		 cx_err *err)
{
	bool		full;

	if (cx_base_row_copy(wr->ms->written_schema, wr->layout, g, i, wr->values,
						 &wr->items, err) != CX_OK)
		return err->code;
	if (wr->run == NULL)
		return append_row(wr, wr->values, v, err);
	if (cx_sort_run_add(wr->run, wr->values, v, &full, err) != CX_OK)
		return err->code;
	if (!full)
		return CX_OK;
	if (flush_run(wr, err) != CX_OK ||
		cx_sort_run_add(wr->run, wr->values, v, &full, err) != CX_OK)
		return err->code;
	return CX_OK;
}

/* How many rows ahead survives() is told where to look. */
#define PREFETCH_AHEAD 8

/* Fetches where row i of g's key sits in the merge's key map into the CPU
 * cache (a hint: a map of many keys misses memory on each lookup). */
static void
prefetch_key(const merge_state *ms, const cx_rowgroup *g,
			 const cx_layout *layout, uint32_t i)
{
	const uint8_t *key;
	size_t		len;

	if (ms->keyed && i < cx_rowgroup_rows(g) &&
		cx_key_bytes(cx_layout_column(layout, g, ms->key_col), i, &key, &len))
		cx_keymap_prefetch(ms->map, key, len);
}

/* Whether row `row` (row i of g) of generation `source` survives; *v is its
 * key's map entry when it has one. */
static bool
survives(const merge_state *ms, const cx_rowgroup *g, const cx_layout *layout,
		 uint32_t i, uint32_t source, uint64_t row, cx_keyver **v)
{
	const uint8_t *key;
	size_t		len;
	bool		tomb = cx_row_tombstone(g, layout, i);

	*v = NULL;
	if (!ms->keyed ||
		!cx_key_bytes(cx_layout_column(layout, g, ms->key_col), i, &key, &len))
		return !tomb;
	*v = cx_keymap_get(ms->map, key, len);
	return *v != NULL && (*v)->source == source && (*v)->row == row &&
		!(*v)->beaten;
}

/* Whether row `row` (row i of g) of generation `source` is hidden by a
 * TRUNCATE: committed before the cut, or ahead of the marker in the
 * marker's generation (cx_truncation.h). */
static bool
truncated(const merge_state *ms, const cx_rowgroup *g, const cx_layout *layout,
		  uint32_t i, uint32_t source, uint64_t row)
{
	if (ms->mark.found && source == ms->mark_source && row < ms->mark.row)
		return true;
	return cx_row_ts(g, layout, i) < ms->cut_ts;
}

static cx_code
write_generation(writer *wr, uint32_t source, cx_err *err)
{
	const cx_fragment_info *fi = &wr->ms->gens[source].fragment;
	cx_fragr   *r;
	cx_layout	layout = {0};
	uint64_t	row = 0;
	cx_objstore *from;
	cx_code		rc;

	if (cx_generation_open(wr->ms->s, wr->ms->sm, &wr->ms->gens[source],
						   &from, err) != CX_OK)
		return cx_shard_generation_failed(wr->ms->sm, &wr->ms->gens[source],
										  err);
	if (cx_fragr_open_entry(cx_gen_memo_source(wr->ms->memo, from), fi, &r,
							err) != CX_OK)
	{
		cx_generation_done(wr->ms->s, from);
		return cx_shard_generation_failed(wr->ms->sm, &wr->ms->gens[source],
										  err);
	}
	/* Generations written under an older schema are read by field id into
	 * the current one, which the new base fragments have. */
	rc = cx_layout_check(wr->ms->table, cx_fragr_schema(r), fi->path, &layout,
						 err);
	wr->layout = &layout;
	for (uint32_t grp = 0; rc == CX_OK && grp < cx_fragr_num_groups(r); grp++)
	{
		cx_rowgroup *g;

		rc = cx_fragr_read_group(r, grp, NULL, &g, err);
		if (rc == CX_OK)
			rc = cx_layout_adapt(&layout, g, NULL, err);
		for (uint32_t i = 0; rc == CX_OK && i < cx_rowgroup_rows(g); i++, row++)
		{
			cx_keyver  *v;

			prefetch_key(wr->ms, g, &layout, i + PREFETCH_AHEAD);
			if (!truncated(wr->ms, g, &layout, i, source, row) &&
				survives(wr->ms, g, &layout, i, source, row, &v))
				rc = emit_row(wr, g, i, v, err);
		}
		cx_rowgroup_free(g);
	}
	wr->layout = NULL;
	cx_layout_free(&layout);
	cx_fragr_close(r);
	cx_generation_done(wr->ms->s, from);
	return rc;
}

cx_code
cx_merge_write(merge_state *ms, cx_err *err)
{
	writer		wr = {ms, NULL, NULL, {0}, NULL, NULL};
	cx_code		rc = CX_OK;

	cx_buf_init(&wr.items);
	wr.values = calloc(ms->written_schema->ncolumns, sizeof(cx_datum));
	if (wr.values == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	if (rc == CX_OK && ms->order.n > 0)
		rc = cx_sort_run_new(ms, &wr.run, err);
	for (uint32_t i = 0; rc == CX_OK && i < ms->ngens; i++)
		if (!cx_fragment_all_before(&ms->gens[i].fragment, ms->cut_ts))
			rc = write_generation(&wr, i, err);
	if (rc == CX_OK && wr.run != NULL && !cx_sort_run_empty(wr.run))
		rc = flush_run(&wr, err);
	if (rc == CX_OK && wr.w != NULL)
		rc = finish_fragment(&wr, err);
	if (wr.w != NULL)
		cx_fragw_abort(wr.w);
	cx_sort_run_free(wr.run);
	free(wr.values);
	cx_buf_free(&wr.items);
	return rc;
}
