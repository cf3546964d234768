/*
 * cx_key_index_build.c — bringing a column's key index up to date with the
 * base (cx_keyindex_update, cx_key_index.h): segments for the fragments not
 * covered yet, a merge of the column's segments when there are too many,
 * and the "index" commit that lists them.
 */
#include <stdlib.h>
#include <string.h>

#include "table/cx_commit.h"
#include "table/cx_key_index_int.h"
#include "table/cx_row_key.h"

void
cx_keyindex_options_default(cx_keyindex_options *o)
{
	o->block_bytes = CX_KEYSEG_BLOCK_BYTES;
	o->max_segments = 4;
	o->max_entries = 1048576;
}

typedef struct build
{
	cx_objstore *s;
	cx_keyindex_options opt;
	const cx_manifest *m;
	uint32_t	column;
	int64_t		key_col;		/* -1 when column is the key column */
	cx_keyindex existing;		/* what m lists */
	cx_keyindex added;			/* segments written by this update */
	char	  **replaced;		/* paths of segments a merge replaced */
	uint32_t	nreplaced;
	/* The batch of fragments being indexed. */
	cx_keyentry *e;				/* values and keys malloc'd */
	uint64_t	n;
	uint64_t	cap;
	char	  **paths;			/* borrowed from m */
	uint32_t	npaths;
	cx_keyindex_result *res;
} build;

/* --------------------------------------------------------------------------
 * Segments from fragments
 * -------------------------------------------------------------------------- */

static void
free_entries(build *b)
{
	for (uint64_t i = 0; i < b->n; i++)
	{
		free((void *) b->e[i].value);
		free((void *) b->e[i].key);
	}
	b->n = 0;
	b->npaths = 0;
}

static cx_code
collect_row(void *arg, const cx_keyrow *kr, cx_err *err)
{
	build	   *b = arg;
	cx_keyentry *e;

	/* a tombstone has no other column: only the key column indexes it */
	if (kr->tombstone && b->key_col >= 0)
		return CX_OK;
	if (b->n == b->cap)
	{
		uint64_t	cap = b->cap == 0 ? 1024 : b->cap * 2;
		cx_keyentry *grown = realloc(b->e, cap * sizeof(cx_keyentry));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
		b->e = grown;
		b->cap = cap;
	}
	e = &b->e[b->n];
	memset(e, 0, sizeof(*e));
	e->value = cx_keyseg_copy(kr->key, kr->len);
	e->len = (uint32_t) kr->len;
	if (b->key_col >= 0)
	{
		e->key = cx_keyseg_copy(kr->rowkey, kr->rowkey_len);
		e->key_len = (uint32_t) kr->rowkey_len;
	}
	e->fragment = b->npaths - 1;
	e->row = (uint32_t) kr->row;
	e->ts = kr->ts;
	e->tombstone = kr->tombstone;
	b->n++;
	if (e->value == NULL || (b->key_col >= 0 && e->key == NULL))
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	return CX_OK;
}

static int
entry_cmp(const void *a, const void *b)
{
	return cx_keyentry_cmp(a, b);
}

/* Writes the entries `next` yields (sorted) as one segment covering
 * paths, and adds it to `into`. */
typedef cx_code (*entry_source) (void *arg, const cx_keyentry **e, cx_err *err);

static cx_code
write_segment(build *b, entry_source next, void *arg, char *const *paths,
			  uint32_t npaths, cx_keyindex *into, cx_err *err)
{
	cx_keysegw *w;
	cx_keyseg_ref ref;
	const cx_keyentry *e;
	cx_code		rc;

	if (cx_keysegw_open(b->s, b->column, b->key_col >= 0, b->opt.block_bytes,
						&w, err) != CX_OK)
		return err->code;
	while ((rc = next(arg, &e, err)) == CX_OK && e != NULL)
		if ((rc = cx_keysegw_add(w, e, err)) != CX_OK)
			break;
	if (rc != CX_OK)
	{
		cx_keysegw_abort(w);
		return rc;
	}
	if (cx_keysegw_finish(w, &ref, err) != CX_OK)
		return err->code;
	free(ref.fragments);
	ref.fragments = (char **) paths;
	ref.nfragments = npaths;
	rc = cx_keyindex_add(into, &ref, err);
	ref.fragments = NULL;
	ref.nfragments = 0;
	cx_keyseg_ref_free(&ref);
	if (rc == CX_OK)
		b->res->segments_written++;
	return rc;
}

typedef struct array_source
{
	const cx_keyentry *e;
	uint64_t	n;
	uint64_t	next;
} array_source;

static cx_code
next_in_array(void *arg, const cx_keyentry **e, cx_err *err)
{
	array_source *a = arg;

	(void) err;
	*e = a->next < a->n ? &a->e[a->next++] : NULL;
	return CX_OK;
}

/* Sorts the batch's entries. */
static void
sort_batch(build *b)
{
	/* A column whose values are all NULL has no entries (and e is NULL). */
	if (b->n > 0)
		qsort(b->e, b->n, sizeof(cx_keyentry), entry_cmp);
}

/* Counts the batch as indexed (written, or merged into a segment), and
 * empties it. */
static void
batch_done(build *b)
{
	b->res->keys_indexed += b->n;
	b->res->fragments_covered += b->npaths;
	free_entries(b);
}

/* Writes the batch, sorted, as a segment of its own. */
static cx_code
flush_batch(build *b, cx_err *err)
{
	array_source src = {b->e, b->n, 0};
	cx_code		rc;

	if (b->npaths == 0)
		return CX_OK;
	sort_batch(b);
	rc = write_segment(b, next_in_array, &src, b->paths, b->npaths,
					   &b->added, err);
	if (rc == CX_OK)
		batch_done(b);
	else
		free_entries(b);
	return rc;
}

static bool
covered(const build *b, const char *path)
{
	for (uint32_t i = 0; i < b->existing.n; i++)
	{
		const cx_keyseg_ref *ref = &b->existing.segs[i];

		for (uint32_t k = 0; ref->column == b->column && k < ref->nfragments; k++)
			if (strcmp(ref->fragments[k], path) == 0)
				return true;
	}
	return false;
}

static cx_code
index_fragment(build *b, uint32_t f, cx_err *err)
{
	const cx_fragment_info *fi = &b->m->fragments[f];
	cx_colscan_spec spec = {b->column, b->key_col,
		b->m->dvs != NULL ? &b->m->dvs[f] : NULL, NULL, collect_row, NULL, b};

	b->paths[b->npaths++] = fi->path;
	if (cx_colscan(b->s, fi, b->m->schema, &spec, err) != CX_OK)
		return cx_manifest_fragment_failed(b->m, fi->path, err);
	return b->n >= b->opt.max_entries ? flush_batch(b, err) : CX_OK;
}

static cx_code
index_uncovered(build *b, cx_err *err)
{
	b->paths = calloc(b->m->nfragments + 1, sizeof(char *));
	if (b->paths == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	for (uint32_t f = 0; f < b->m->nfragments; f++)
	{
		const cx_fragment_info *fi = &b->m->fragments[f];

		if (cx_manifest_deleted_count(b->m, f) == fi->rows ||
			covered(b, fi->path))
			continue;
		if (index_fragment(b, f, err) != CX_OK)
			return err->code;
	}
	/* The last batch waits: merge_if_many merges it into a segment with
	 * others, or writes it as one. */
	sort_batch(b);
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Merging segments
 * -------------------------------------------------------------------------- */

/* One input of a merge: a cursor and where its fragment positions go in the
 * merged list (-1: dropped, the fragment is gone or an earlier input covers
 * it). */
typedef struct merge_input
{
	const cx_keyseg_ref *ref;
	cx_keyseg_cursor *cur;		/* NULL: the entries are batch's */
	array_source batch;
	int64_t    *to;
	const cx_deletion_vector **dv;	/* per position: its deletions in m */
	const cx_keyentry *head;
	cx_keyentry mapped;
} merge_input;

typedef struct seg_merge
{
	merge_input *in;
	uint32_t	n;
	merge_input *last;			/* returned last: advanced on the next call */
	char	  **paths;			/* the merged list, borrowed */
	uint32_t	npaths;
} seg_merge;

/* Advances an input to its next entry that is kept: its fragment is kept
 * and m does not delete its row. */
static cx_code
advance(merge_input *in, cx_err *err)
{
	for (;;)
	{
		uint32_t	k;

		if (in->cur == NULL)
			(void) next_in_array(&in->batch, &in->head, err);
		else if (cx_keyseg_cursor_next(in->cur, &in->head, err) != CX_OK)
			return err->code;
		if (in->head == NULL)
			return CX_OK;
		k = in->head->fragment;
		if (k < in->ref->nfragments && in->to[k] >= 0 &&
			!cx_dv_deletes(in->dv[k], in->head->row))
			break;
	}
	in->mapped = *in->head;
	in->mapped.fragment = (uint32_t) in->to[in->head->fragment];
	return CX_OK;
}

static cx_code
next_merged(void *arg, const cx_keyentry **e, cx_err *err)
{
	seg_merge  *sm = arg;
	merge_input *best = NULL;

	if (sm->last != NULL && advance(sm->last, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < sm->n; i++)
		if (sm->in[i].head != NULL &&
			(best == NULL || cx_keyentry_cmp(&sm->in[i].mapped,
											 &best->mapped) < 0))
			best = &sm->in[i];
	sm->last = best;
	*e = best != NULL ? &best->mapped : NULL;
	return CX_OK;
}

/* The merged fragment list: each fragment m still lists, once. */
static cx_code
plan_merge(build *b, seg_merge *sm, cx_err *err)
{
	for (uint32_t i = 0; i < sm->n; i++)
	{
		const cx_keyseg_ref *ref = sm->in[i].ref;

		sm->in[i].to = malloc((ref->nfragments + 1) * sizeof(int64_t));
		sm->in[i].dv = calloc(ref->nfragments + 1, sizeof(cx_deletion_vector *));
		if (sm->in[i].to == NULL || sm->in[i].dv == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
		for (uint32_t k = 0; k < ref->nfragments; k++)
		{
			const char *p = ref->fragments[k];
			int64_t		f = cx_manifest_find_fragment(b->m, p);
			bool		dup = false;

			for (uint32_t j = 0; j < sm->npaths && !dup; j++)
				dup = strcmp(sm->paths[j], p) == 0;
			sm->in[i].to[k] = -1;
			if (dup || f < 0)
				continue;
			if (b->m->dvs != NULL)
				sm->in[i].dv[k] = &b->m->dvs[f];
			sm->in[i].to[k] = sm->npaths;
			sm->paths[sm->npaths++] = (char *) p;
		}
	}
	return CX_OK;
}

static void
close_inputs(seg_merge *sm)
{
	for (uint32_t i = 0; i < sm->n; i++)
	{
		cx_keyseg_cursor_close(sm->in[i].cur);
		free(sm->in[i].to);
		free(sm->in[i].dv);
	}
	free(sm->in);
	free(sm->paths);
}

/*
 * How much older a segment may be, in entries, than all newer ones
 * together and still be merged with them.  A merge of segments rewrites
 * its inputs, so merging every segment into one (the old rule) rewrote the
 * whole index every max_segments updates: under single-row ingest the
 * maintenance worker re-read most of the index each fourth merge.  Merging
 * only the newest segments, and an older one once the newer ones reach
 * half its size, rewrites an entry about 9 times in 1,000 updates of 50
 * keys with 4 segments (125 times before).
 */
#define MERGE_RATIO 2

/* The column's segments, oldest first: those m lists (in its order, which
 * appends), then this update's, then batch (the entries not written yet)
 * unless NULL. */
static cx_code
column_segments(const build *b, const cx_keyseg_ref *batch,
				const cx_keyseg_ref ***out, uint32_t *n, cx_err *err)
{
	const cx_keyseg_ref **segs = calloc(b->existing.n + b->added.n + 2,
										sizeof(*segs));

	*out = segs;
	*n = 0;
	if (segs == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	for (uint32_t i = 0; i < b->existing.n; i++)
		if (b->existing.segs[i].column == b->column)
			segs[(*n)++] = &b->existing.segs[i];
	for (uint32_t i = 0; i < b->added.n; i++)
		segs[(*n)++] = &b->added.segs[i];
	if (batch != NULL)
		segs[(*n)++] = batch;
	return CX_OK;
}

/* The oldest of n segments (n >= 2) the merge takes, with every newer one:
 * enough of the newest to leave at most max_segments, then each older one
 * that is at most MERGE_RATIO times all newer together. */
static uint32_t
merge_start(const cx_keyseg_ref *const *segs, uint32_t n,
			uint32_t max_segments)
{
	uint32_t	i = n - 2;
	uint64_t	newer = 0;

	if (max_segments > 0 && i > max_segments - 1)
		i = max_segments - 1;
	for (uint32_t k = i; k < n; k++)
		newer += segs[k]->entries;
	while (i > 0 && segs[i - 1]->entries <= MERGE_RATIO * newer)
		newer += segs[--i]->entries;
	return i;
}

/* Opens the inputs, the segments `in` holds, oldest first; the one that is
 * batch reads the build's sorted entries. */
static cx_code
open_inputs(build *b, const cx_keyseg_ref *const *in, uint32_t n,
			const cx_keyseg_ref *batch, seg_merge *sm, cx_err *err)
{
	uint32_t	npaths = 0;

	for (uint32_t i = 0; i < n; i++)
		npaths += in[i]->nfragments;
	sm->in = calloc(n + 1, sizeof(merge_input));
	sm->paths = calloc(npaths + 1, sizeof(char *));
	if (sm->in == NULL || sm->paths == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	for (uint32_t i = 0; i < n; i++)
		sm->in[sm->n++].ref = in[i];
	if (plan_merge(b, sm, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < sm->n; i++)
	{
		merge_input *mi = &sm->in[i];

		if (mi->ref == batch)
			mi->batch = (array_source) {b->e, b->n, 0};
		else if (cx_keyseg_cursor_open(b->s, mi->ref, &mi->cur, err) != CX_OK)
			return err->code;
		if (advance(mi, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* The paths of the inputs m lists (those of this update were never
 * committed): the merge replaces them. */
static cx_code
note_replaced(build *b, const cx_keyseg_ref *const *in, uint32_t n,
			  cx_err *err)
{
	b->replaced = calloc(n + 1, sizeof(char *));
	if (b->replaced == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	for (uint32_t i = 0; i < n; i++)
		if (in[i] >= b->existing.segs &&
			in[i] < b->existing.segs + b->existing.n)
			b->replaced[b->nreplaced++] = in[i]->path;
	return CX_OK;
}

/*
 * Keeps the column's segments at most max_segments by merging the newest
 * ones (merge_start), when there are more; the batch index_uncovered left
 * counts as the newest.  A merge always takes the newest two, so the batch
 * goes into the merged segment rather than being written as a segment of
 * its own that the same commit would replace (under steady ingest most
 * updates merge: that segment was a PUT, its fsyncs and an object for GC
 * each time); with no merge due it is written as one.
 */
static cx_code
merge_if_many(build *b, cx_err *err)
{
	cx_keyseg_ref batch = {.column = b->column, .entries = b->n,
	.nfragments = b->npaths, .fragments = b->paths};
	const cx_keyseg_ref *pending = b->npaths > 0 ? &batch : NULL;
	const cx_keyseg_ref **segs;
	uint32_t	n;
	uint32_t	first;
	seg_merge	sm = {0};
	cx_keyindex merged = {0};
	cx_code		rc;

	if (column_segments(b, pending, &segs, &n, err) != CX_OK)
		return err->code;
	if (n <= b->opt.max_segments || n < 2)
	{
		free(segs);
		return flush_batch(b, err);
	}
	first = merge_start(segs, n, b->opt.max_segments);
	rc = open_inputs(b, segs + first, n - first, pending, &sm, err);
	if (rc == CX_OK)
		rc = write_segment(b, next_merged, &sm, sm.paths, sm.npaths, &merged,
						   err);
	close_inputs(&sm);
	if (rc == CX_OK)
		rc = note_replaced(b, segs + first, n - first, err);
	free(segs);
	if (rc != CX_OK)
	{
		cx_keyindex_free(&merged);
		return rc;
	}
	b->res->segments_merged = n - first;
	if (pending != NULL)
		batch_done(b);
	cx_keyindex_free(&b->added);
	b->added = merged;
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * The commit
 * -------------------------------------------------------------------------- */

static bool
is_replaced(const build *b, const char *path)
{
	for (uint32_t i = 0; i < b->nreplaced; i++)
		if (strcmp(b->replaced[i], path) == 0)
			return true;
	return false;
}

/* Whether m still lists a fragment the segment covers: one that covers
 * none (all compacted or replaced away) answers nothing. */
static bool
covers_listed(const cx_manifest *m, const cx_keyseg_ref *seg)
{
	for (uint32_t f = 0; f < seg->nfragments; f++)
		if (cx_manifest_find_fragment(m, seg->fragments[f]) >= 0)
			return true;
	return false;
}

/* next's segments, less those merged away or covering nothing next lists,
 * plus ours. */
static cx_code
list_segments(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	build	   *b = arg;
	cx_keyindex ix;
	cx_keyindex kept = {0};
	cx_code		rc;

	(void) base;
	if (cx_keyindex_load(next, &ix, err) != CX_OK)
		return err->code;
	rc = CX_OK;
	for (uint32_t i = 0; rc == CX_OK && i < ix.n; i++)
		if (!is_replaced(b, ix.segs[i].path) && covers_listed(next, &ix.segs[i]))
			rc = cx_keyindex_add(&kept, &ix.segs[i], err);
	for (uint32_t i = 0; rc == CX_OK && i < b->added.n; i++)
		rc = cx_keyindex_add(&kept, &b->added.segs[i], err);
	if (rc == CX_OK)
		rc = cx_keyindex_store(next, &kept, err);
	cx_keyindex_free(&ix);
	cx_keyindex_free(&kept);
	return rc;
}

/* Which columns: the key's index, and whether column is it. */
static cx_code
check_column(build *b, cx_err *err)
{
	uint32_t	key_col;
	const cx_schema *t = b->m->schema;

	if (b->m->key_column == NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "key index: the store has no key column");
	if (cx_key_column(t, b->m->key_column, &key_col, err) != CX_OK)
		return err->code;
	if (b->column >= t->ncolumns || t->columns[b->column].type == CX_T_LIST)
		return cx_err_set(err, CX_ERR_INVALID,
						  "key index: column %u is not a scalar column of the table",
						  b->column + 1);
	b->key_col = b->column == key_col ? -1 : (int64_t) key_col;
	return CX_OK;
}

static void
build_free(build *b)
{
	free_entries(b);
	free(b->e);
	free(b->paths);
	free(b->replaced);
	cx_keyindex_free(&b->existing);
	cx_keyindex_free(&b->added);
}

cx_code
cx_keyindex_update(cx_objstore *s, uint32_t column,
				   const cx_keyindex_options *opt, cx_keyindex_result *res,
				   cx_err *err)
{
	build		b = {0};
	cx_manifest *m;
	cx_code		rc;

	memset(res, 0, sizeof(*res));
	b.s = s;
	b.column = column;
	b.res = res;
	if (opt != NULL)
		b.opt = *opt;
	else
		cx_keyindex_options_default(&b.opt);
	if (cx_manifest_load_latest(s, &m, err) != CX_OK)
		return err->code;
	if (m == NULL || m->schema == NULL)
	{
		cx_manifest_free(m);
		return CX_OK;
	}
	b.m = m;
	rc = check_column(&b, err);
	if (rc == CX_OK)
		rc = cx_keyindex_load(m, &b.existing, err);
	if (rc == CX_OK)
		rc = index_uncovered(&b, err);
	if (rc == CX_OK)
		rc = merge_if_many(&b, err);
	if (rc == CX_OK && b.added.n > 0)
		rc = cx_commit(s, "index", list_segments, &b, NULL,
					   &res->base_version, err);
	build_free(&b);
	cx_manifest_free(m);
	return rc;
}

static void
add_result(cx_keyindex_result *sum, const cx_keyindex_result *r)
{
	sum->segments_written += r->segments_written;
	sum->keys_indexed += r->keys_indexed;
	sum->fragments_covered += r->fragments_covered;
	sum->segments_merged += r->segments_merged;
	if (r->base_version != 0)
		sum->base_version = r->base_version;
}

/* The schema index of the key column and of also_column (-1: none). */
static cx_code
table_columns(const cx_manifest *m, const char *also_column, uint32_t *key,
			  int64_t *also, cx_err *err)
{
	int			i;

	if (cx_key_column(m->schema, m->key_column, key, err) != CX_OK)
		return err->code;
	*also = -1;
	if (also_column == NULL)
		return CX_OK;
	i = cx_schema_find(m->schema, also_column);
	if (i < 0)
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "key index: \"%.64s\" is not a column of the store",
						  also_column);
	*also = (uint32_t) i == *key ? -1 : i;
	return CX_OK;
}

cx_code
cx_keyindex_update_table(cx_objstore *s, const char *also_column,
						 const cx_keyindex_options *opt,
						 cx_keyindex_result *res, cx_err *err)
{
	cx_manifest *m;
	cx_keyindex_result one;
	uint32_t	key;
	int64_t		also = -1;
	cx_code		rc;

	memset(res, 0, sizeof(*res));
	if (cx_manifest_load_latest(s, &m, err) != CX_OK)
		return err->code;
	if (m == NULL || m->schema == NULL || m->key_column == NULL)
	{
		cx_manifest_free(m);
		return CX_OK;			/* no key yet: nothing to index */
	}
	rc = table_columns(m, also_column, &key, &also, err);
	cx_manifest_free(m);
	if (rc == CX_OK)
	{
		rc = cx_keyindex_update(s, key, opt, &one, err);
		add_result(res, &one);
	}
	if (rc == CX_OK && also >= 0)
	{
		rc = cx_keyindex_update(s, (uint32_t) also, opt, &one, err);
		add_result(res, &one);
	}
	return rc;
}
