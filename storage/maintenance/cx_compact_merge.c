/*
 * cx_compact_merge.c — rewriting a compaction's inputs as outputs
 * (cx_compact_rewrite, cx_compact_int.h): a k-way streaming merge.
 *
 * Every input is a base fragment written by a merge or an earlier
 * compaction, so its rows are in the table's order (the sort key, then the
 * key: cx_merge_sort.c); a cursor per input holds one row group of it, and
 * the next row out is the smallest current row of all cursors (a binary
 * heap), ties in commit order.  Memory is one row group per input plus the
 * output's row group, and the row map (8 bytes per input row).
 *
 * Rows the input's deletion vector lists, or that a merged TRUNCATE hides
 * (committed before truncated_before_us), are not carried over.  Tombstone
 * rows are carried like any other: another shard may still hold an older,
 * unmerged version of their key that only they hide.
 *
 * An input in another order (written before the sort key changed) cannot
 * make an output lie about its order: a row that sorts before the output's
 * previous row ends that output and starts the next, so every output is
 * sorted, as its metadata says.
 */
#include "maintenance/cx_compact_int.h"

#include <stdlib.h>
#include <string.h>

#include "merge/cx_merge_int.h"

typedef struct input_cursor
{
	uint32_t	index;			/* among the inputs */
	const cx_fragment_info *fi;
	cx_fragr   *r;
	cx_layout	layout;
	cx_dvcursor dv;
	uint32_t	next_group;
	cx_rowgroup *g;				/* the group being read, or NULL */
	uint32_t	i;				/* row within g */
	uint64_t	row;			/* fragment row of row i */
	bool		done;
	/* The current row (valid while !done). */
	cx_datum   *values;
	cx_buf		items;
	cx_buf		keys;			/* its order columns, cx_sort_order_encode */
	int64_t		ts;
} input_cursor;

typedef struct rewrite
{
	cx_compact_rewrite_job *job;
	const cx_schema *written;
	cx_sort_order order;
	cx_fragw_options fragment;	/* the job's, with the order */
	int64_t		cut_ts;			/* truncated_before_us of the base read */
	const char *origin;			/* the inputs' common origin shard, or NULL */
	input_cursor *cur;
	uint32_t   *heap;			/* cursors not done, smallest first */
	uint32_t	nheap;
	uint32_t	inputs_done;
	uint64_t	rows_held;		/* rows of the groups the cursors hold */
	cx_fragw   *w;				/* the output being written, or NULL */
	cx_buf		prev;			/* order columns of its last row */
	uint64_t	expected_outputs;
} rewrite;

static cx_code
step(rewrite *rw, const char *phase, uint64_t done, uint64_t total,
	 cx_err *err)
{
	cx_compact_rewrite_job *job = rw->job;

	return job->step(job->step_arg, phase, done, total, err);
}

/* ---- the inputs ---- */

static void
cursor_drop_group(rewrite *rw, input_cursor *c)
{
	if (c->g == NULL)
		return;
	rw->rows_held -= cx_rowgroup_rows(c->g);
	cx_rowgroup_free(c->g);
	c->g = NULL;
}

static cx_code
cursor_next_group(rewrite *rw, input_cursor *c, cx_err *err)
{
	cx_compact_rewrite_job *job = rw->job;

	if (c->g != NULL)
		c->row += cx_rowgroup_rows(c->g);
	cursor_drop_group(rw, c);
	if (c->next_group == cx_fragr_num_groups(c->r))
	{
		c->done = true;
		rw->inputs_done++;
		return CX_OK;
	}
	if (cx_fragr_read_group(c->r, c->next_group++, NULL, &c->g, err) != CX_OK)
		return cx_manifest_fragment_failed(job->read, c->fi->path, err);
	c->i = 0;
	rw->rows_held += cx_rowgroup_rows(c->g);
	if (rw->rows_held > job->peak_rows_held)
		job->peak_rows_held = rw->rows_held;
	if (cx_layout_adapt(&c->layout, c->g, NULL, err) != CX_OK)
		return err->code;
	return step(rw, "reading", rw->inputs_done, job->ninputs, err);
}

/* Moves c to its next live row, at or after the current one, counting the
 * rows it passes as dropped. */
static cx_code
cursor_settle(rewrite *rw, input_cursor *c, cx_err *err)
{
	for (;;)
	{
		uint64_t	row;

		if (c->g == NULL || c->i == cx_rowgroup_rows(c->g))
		{
			if (cursor_next_group(rw, c, err) != CX_OK)
				return err->code;
			if (c->done)
				return CX_OK;
			continue;
		}
		row = c->row + c->i;
		c->ts = cx_row_ts(c->g, &c->layout, c->i);
		if (!cx_dvcursor_deleted(&c->dv, row) && c->ts >= rw->cut_ts)
			break;
		rw->job->rows_dropped++;
		c->i++;
	}
	if (cx_base_row_copy(rw->written, &c->layout, c->g, c->i, c->values,
						 &c->items, err) != CX_OK)
		return err->code;
	cx_buf_reset(&c->keys);
	cx_sort_order_encode(&rw->order, c->values, &c->keys);
	if (!cx_buf_ok(&c->keys))
		return cx_err_set(err, CX_ERR_NOMEM, "compaction: out of memory");
	return CX_OK;
}

static cx_code
cursor_open(rewrite *rw, input_cursor *c, uint32_t index, cx_err *err)
{
	const cx_manifest *read = rw->job->read;
	uint32_t	f = rw->job->inputs[index];

	c->index = index;
	c->fi = &read->fragments[f];
	c->dv.dv = read->dvs != NULL ? &read->dvs[f] : NULL;
	cx_buf_init(&c->items);
	cx_buf_init(&c->keys);
	c->values = calloc(rw->written->ncolumns, sizeof(cx_datum));
	if (c->values == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "compaction: out of memory");
	if (cx_fragr_open_entry(rw->job->s, c->fi, &c->r, err) != CX_OK)
		return cx_manifest_fragment_failed(read, c->fi->path, err);
	rw->job->bytes_read += c->fi->size;
	/* Fragments written under an older schema are read by field id into
	 * the current one, which the outputs have. */
	if (cx_layout_check(read->schema, cx_fragr_schema(c->r), c->fi->path,
						&c->layout, err) != CX_OK)
		return err->code;
	return cursor_settle(rw, c, err);
}

static void
cursor_close(rewrite *rw, input_cursor *c)
{
	cursor_drop_group(rw, c);
	if (c->r != NULL)
	{
		cx_layout_free(&c->layout);
		cx_fragr_close(c->r);
	}
	free(c->values);
	cx_buf_free(&c->items);
	cx_buf_free(&c->keys);
}

/* ---- the heap of cursors ---- */

/* Whether cursor a's row goes out before b's: the order, then commit time,
 * then the inputs' order (their rows' order within an input is its own). */
static bool
goes_before(const rewrite *rw, uint32_t a, uint32_t b)
{
	const input_cursor *x = &rw->cur[a];
	const input_cursor *y = &rw->cur[b];
	int			c = cx_sort_order_cmp(&rw->order, x->keys.data, y->keys.data);

	if (c != 0)
		return c < 0;
	if (x->ts != y->ts)
		return x->ts < y->ts;
	return a < b;
}

static void
heap_swap(rewrite *rw, uint32_t i, uint32_t j)
{
	uint32_t	t = rw->heap[i];

	rw->heap[i] = rw->heap[j];
	rw->heap[j] = t;
}

static void
sift_down(rewrite *rw, uint32_t i)
{
	for (;;)
	{
		uint32_t	l = 2 * i + 1;
		uint32_t	m = i;

		if (l < rw->nheap && goes_before(rw, rw->heap[l], rw->heap[m]))
			m = l;
		if (l + 1 < rw->nheap && goes_before(rw, rw->heap[l + 1], rw->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		heap_swap(rw, i, m);
		i = m;
	}
}

static void
heap_build(rewrite *rw)
{
	rw->nheap = 0;
	for (uint32_t i = 0; i < rw->job->ninputs; i++)
		if (!rw->cur[i].done)
			rw->heap[rw->nheap++] = i;
	for (uint32_t i = rw->nheap / 2; i-- > 0;)
		sift_down(rw, i);
}

/* ---- the outputs ---- */

static cx_code
finish_output(rewrite *rw, cx_err *err)
{
	cx_compact_rewrite_job *job = rw->job;
	cx_fragw   *w = rw->w;

	rw->w = NULL;
	if (cx_base_fragment_finish(w, rw->written, rw->origin, &job->outputs,
								&job->noutputs, err) != CX_OK)
		return err->code;
	job->bytes_written += job->outputs[job->noutputs - 1].size;
	return step(rw, "writing", job->noutputs,
				rw->expected_outputs > job->noutputs ?
				rw->expected_outputs : job->noutputs, err);
}

/* Writes c's current row, recording where it went. */
static cx_code
write_row(rewrite *rw, const input_cursor *c, cx_err *err)
{
	cx_compact_rewrite_job *job = rw->job;

	if (c->row + c->i >= job->map.nrows[c->index])
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "fragment %s holds more rows than base version %llu lists",
						  c->fi->path, (unsigned long long) job->read->version);
	if (rw->w != NULL && rw->order.n > 0 &&
		cx_sort_order_cmp(&rw->order, c->keys.data, rw->prev.data) < 0 &&
		finish_output(rw, err) != CX_OK)
		return err->code;
	if (rw->w == NULL)
	{
		char		key[64];

		if (cx_fragment_new_key(key, sizeof(key), err) != CX_OK ||
			cx_fragw_open(job->s, key, rw->written, &rw->fragment, &rw->w,
						  err) != CX_OK)
			return err->code;
	}
	job->map.dest[c->index][c->row + c->i] = (cx_row_dest)
	{
		job->noutputs, (uint32_t) cx_fragw_rows(rw->w)
	};
	if (cx_fragw_append(rw->w, c->values, err) != CX_OK)
		return err->code;
	job->rows++;
	cx_buf_reset(&rw->prev);
	cx_buf_put(&rw->prev, c->keys.data, c->keys.len);
	if (!cx_buf_ok(&rw->prev))
		return cx_err_set(err, CX_ERR_NOMEM, "compaction: out of memory");
	if (cx_fragw_rows(rw->w) >= job->o->target_rows_per_fragment)
		return finish_output(rw, err);
	return CX_OK;
}

static cx_code
merge_inputs(rewrite *rw, cx_err *err)
{
	heap_build(rw);
	while (rw->nheap > 0)
	{
		input_cursor *c = &rw->cur[rw->heap[0]];

		if (write_row(rw, c, err) != CX_OK)
			return err->code;
		c->i++;
		if (cursor_settle(rw, c, err) != CX_OK)
			return err->code;
		if (c->done)
			rw->heap[0] = rw->heap[--rw->nheap];
		sift_down(rw, 0);
	}
	return rw->w != NULL ? finish_output(rw, err) : CX_OK;
}

/* ---- setting up ---- */

/* The origin shard every input shares, or NULL (mixed or unknown). */
static const char *
common_origin(const cx_compact_rewrite_job *job)
{
	const char *origin = job->read->fragments[job->inputs[0]].origin_shard;

	for (uint32_t i = 1; origin != NULL && i < job->ninputs; i++)
	{
		const char *o = job->read->fragments[job->inputs[i]].origin_shard;

		if (o == NULL || strcmp(o, origin) != 0)
			return NULL;
	}
	return origin;
}

static cx_code
prepare(rewrite *rw, cx_schema **written, cx_err *err)
{
	cx_compact_rewrite_job *job = rw->job;
	const cx_manifest *read = job->read;
	uint32_t	key_col = 0;
	uint64_t	live = 0;

	if (read->schema == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "base version %llu lists fragments but has no schema",
						  (unsigned long long) read->version);
	if (read->key_column != NULL &&
		cx_key_column(read->schema, read->key_column, &key_col, err) != CX_OK)
		return err->code;
	if (cx_sort_order_resolve(read->schema, job->o->sort_key,
							  read->key_column != NULL, key_col, &rw->order,
							  err) != CX_OK ||
		cx_shard_generation_schema(read->schema, written, err) != CX_OK)
		return err->code;
	rw->written = *written;
	rw->fragment = job->o->fragment;
	rw->fragment.sort_columns = rw->order.cols;
	rw->fragment.nsort_columns = rw->order.n;
	rw->cut_ts = read->truncated_before_us;
	rw->origin = common_origin(job);
	for (uint32_t i = 0; i < job->ninputs; i++)
		live += read->fragments[job->inputs[i]].rows -
			cx_manifest_deleted_count(read, job->inputs[i]);
	rw->expected_outputs = (live + job->o->target_rows_per_fragment - 1) /
		job->o->target_rows_per_fragment;
	rw->cur = calloc(job->ninputs, sizeof(input_cursor));
	rw->heap = calloc(job->ninputs, sizeof(uint32_t));
	if (rw->cur == NULL || rw->heap == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "compaction: out of memory");
	return cx_compact_rowmap_init(&job->map, read, job->inputs, job->ninputs,
								  err);
}

cx_code
cx_compact_rewrite(cx_compact_rewrite_job *job, cx_err *err)
{
	rewrite		rw = {.job = job};
	cx_schema  *written = NULL;
	cx_code		rc;

	cx_buf_init(&rw.prev);
	rc = prepare(&rw, &written, err);
	for (uint32_t i = 0; rc == CX_OK && i < job->ninputs; i++)
		rc = cursor_open(&rw, &rw.cur[i], i, err);
	if (rc == CX_OK)
		rc = merge_inputs(&rw, err);
	if (rw.w != NULL)
		cx_fragw_abort(rw.w);
	for (uint32_t i = 0; rw.cur != NULL && i < job->ninputs; i++)
		cursor_close(&rw, &rw.cur[i]);
	free(rw.cur);
	free(rw.heap);
	cx_buf_free(&rw.prev);
	if (written != NULL)
		cx_schema_free(written);
	return rc;
}
