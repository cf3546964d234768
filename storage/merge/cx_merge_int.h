/*
 * cx_merge_int.h — the merge's working state, shared by its parts:
 *   cx_merge.c            choosing generations, the base commit and its
 *                         rebase
 *   cx_merge_keys.c       the key map of the merged rows, finding the base
 *                         rows they replace (and, on rebase, the rows of
 *                         fragments committed in between)
 *   cx_merge_write.c      writing the surviving rows as base fragments
 *   cx_merge_deletions.c  deletions gathered per fragment path
 *   cx_merge_sort.c       the sort key and the sorted runs rows are
 *                         written from
 *   cx_merge_memo.c       the view generations are read through, each
 *                         small one once
 * Not a public interface.
 */
#ifndef CX_MERGE_INT_H
#define CX_MERGE_INT_H

#include "util/cx_key_map.h"
#include "table/cx_manifest.h"
#include "merge/cx_merge.h"
#include "table/cx_row_key.h"
#include "table/cx_truncation.h"
#include "memwal/cx_shard_manifest.h"

/*
 * Rows to delete, gathered per fragment path: the merge finds them against
 * one base version and applies them to another (the rebase target), where
 * fragment positions may differ but paths do not.
 */
typedef struct cx_dvset_entry
{
	char	   *path;
	uint32_t	n;
	uint32_t	cap;
	uint32_t   *rows;			/* any order, duplicates allowed */
} cx_dvset_entry;

typedef struct cx_dvset
{
	uint32_t	n;
	uint32_t	cap;
	cx_dvset_entry *e;
} cx_dvset;

void		cx_dvset_free(cx_dvset *d);
cx_code		cx_dvset_add(cx_dvset *d, const char *path, uint64_t row,
						 cx_err *err);
/* Adds every row to the fragments of m with those paths; a path m no longer
 * lists is CX_ERR_CONFLICT (the fragment was rewritten meanwhile).  Sorts
 * the rows in place.  Adds to *count the rows that were not deleted yet. */
cx_code		cx_dvset_apply(cx_dvset *d, cx_manifest *m, uint64_t *count,
						   cx_err *err);
/* Drops from d the fragments m no longer lists because a TRUNCATE removed
 * them (start listed them, wholly before m's truncated_before_us): their
 * rows are hidden already. */
void		cx_dvset_forget_truncated(cx_dvset *d, const cx_manifest *start,
									  const cx_manifest *m);

/*
 * The order merges and compactions write base rows in, most significant
 * first: the sort key, then the key (when the sort key does not name it);
 * n = 0: commit order (a table with neither).  cx_merge_sort.c.
 */
typedef struct cx_sort_order
{
	uint32_t	cols[CX_SORT_KEY_MAX_COLUMNS + 1];	/* table columns */
	cx_type		types[CX_SORT_KEY_MAX_COLUMNS + 1];
	uint32_t	n;
} cx_sort_order;

cx_code		cx_sort_order_resolve(const cx_schema *table, const char *sort_key,
								  bool keyed, uint32_t key_col,
								  cx_sort_order *o, cx_err *err);
/* Appends the order columns of a row (values of the table's columns, and
 * maybe more after them) to out, in the form cx_sort_order_cmp compares. */
void		cx_sort_order_encode(const cx_sort_order *o, const cx_datum *values,
								 cx_buf *out);
/* <0, 0, >0 as row a sorts before, with or after row b (cx_value_cmp per
 * column, NULLs last); a and b are cx_sort_order_encode output.  Rows equal
 * here go in commit order: that tie is the caller's. */
int			cx_sort_order_cmp(const cx_sort_order *o, const uint8_t *a,
							  const uint8_t *b);
/* An 8-byte summary of a row's first order column such that rows whose
 * summaries differ sort as their summaries do (NULL is UINT64_MAX); equal
 * summaries say nothing, and cx_sort_order_cmp decides. */
uint64_t	cx_sort_order_prefix(const cx_sort_order *o, const cx_datum *values);

/*
 * A read-only view of a store that holds the chosen generations' bytes
 * after their first read (cx_merge_memo.c): the merge reads each twice.
 * Requests it passes on are made on real.
 */
typedef struct cx_gen_memo cx_gen_memo;

cx_code		cx_gen_memo_open(cx_objstore *real, const cx_generation *gens,
							 uint32_t n, cx_gen_memo **out, cx_err *err);
/*
 * The store to read a generation through, given where cx_generation_open
 * says its bytes are: the memo's view (gets and heads only) for one with
 * its own object on real; an inline one's in-memory store as it is.
 */
cx_objstore *cx_gen_memo_source(cx_gen_memo *m, cx_objstore *from);
void		cx_gen_memo_close(cx_gen_memo *m);

typedef struct merge_state
{
	cx_objstore *s;
	cx_gen_memo *memo;			/* read the chosen generations through it */
	const char *shard_id;
	cx_merge_options opt;
	cx_manifest *start;			/* the base version the merge read */
	cx_shard_manifest *sm;		/* the shard manifest it read */
	const cx_generation *gens;	/* the chosen generations, oldest first */
	uint32_t	ngens;
	cx_schema  *table;			/* table schema */
	cx_schema  *written_schema; /* table + hidden columns */

	/* Tables with a key column only (all of them de-duplicate by key,
	 * whatever unique_key says). */
	bool		keyed;
	uint32_t	key_col;
	cx_keymap  *map;			/* newest merged version of each key; source =
								 * index in gens */
	cx_keyrange range;			/* of the keys in map */

	cx_sort_order order;		/* the order rows are written in */
	cx_dvset	replaced;		/* base rows of `start` our rows replace */
	cx_dvset	rebased;		/* found on rebase: rows of fragments
								 * committed after `start`, or of ours */
	char	  **scanned;		/* fragments already compared on rebase */
	uint32_t	nscanned;

	/* TRUNCATE: the newest marker of the chosen generations, and the cut
	 * (rows committed before it are not written). */
	cx_marker	mark;
	uint32_t	mark_source;	/* index in gens of mark */
	int64_t		cut_ts;			/* start's truncated_before_us or mark */

	/* What the merge wrote. */
	cx_fragment_info *out;
	uint32_t	nout;
	uint64_t	rows_written;
	uint32_t	sorted_runs;
	uint64_t	rows_replaced;	/* set by the rebase that committed */
	uint64_t	key_conflicts;	/* keys whose base row another shard wrote */
	char		key_conflict_example[CX_KEY_EXAMPLE_MAX];
} merge_state;

/* cx_merge_keys.c */
cx_code		cx_merge_build_keymap(merge_state *ms, cx_err *err);
cx_code		cx_merge_find_replaced(merge_state *ms, cx_err *err);
cx_code		cx_merge_compare_new(merge_state *ms, const cx_manifest *base,
								 cx_err *err);

/* cx_merge_sort.c: a sorted run holds rows of ms (values of its
 * written_schema) up to ms->opt.sort_memory bytes. */
typedef struct cx_sort_run cx_sort_run;
typedef cx_code (*cx_sort_emit_fn) (void *arg, const cx_datum *values,
									cx_keyver *v, cx_err *err);

cx_code		cx_sort_run_new(const merge_state *ms, cx_sort_run **out,
							cx_err *err);
void		cx_sort_run_free(cx_sort_run *run);
bool		cx_sort_run_empty(const cx_sort_run *run);
/* Copies a row in; *full (nothing copied) when it does not fit in the
 * budget beside the rows held: flush first.  v is the row's key map entry
 * (or NULL), handed back with it. */
cx_code		cx_sort_run_add(cx_sort_run *run, const cx_datum *values,
							cx_keyver *v, bool *full, cx_err *err);
/* Hands every row held to emit in order and empties the run. */
cx_code		cx_sort_run_flush(cx_sort_run *run, cx_sort_emit_fn emit,
							  void *arg, cx_err *err);

/* cx_merge_write.c */
cx_code		cx_merge_write(merge_state *ms, cx_err *err);
/* Row i of g, a group of a fragment read through layout (cx_layout_adapt
 * done), into values: the columns of written, the table's then the hidden
 * ones (cx_shard_generation_schema).  Values point into g, list items into
 * items, until either changes.  Merges and compactions copy rows so. */
cx_code		cx_base_row_copy(const cx_schema *written, const cx_layout *layout,
							 const cx_rowgroup *g, uint32_t i,
							 cx_datum *values, cx_buf *items, cx_err *err);
/* Finishes w as a base fragment of written's columns from shard origin
 * (NULL: unknown), appended to (*out)[*n]; frees w in every case.  Counted
 * in *n as soon as it is uploaded, even if what follows fails. */
cx_code		cx_base_fragment_finish(cx_fragw *w, const cx_schema *written,
									const char *origin,
									cx_fragment_info **out, uint32_t *n,
									cx_err *err);

#endif							/* CX_MERGE_INT_H */
