/*
 * cx_row_key.h — a row's identity across fragments: where a fragment keeps
 * the hidden commit-time and tombstone columns, a row's key bytes, and a
 * projected pass over the key-related columns of one fragment.
 *
 * Merges (cx_merge.c) and de-duplicating scans (cx_table_scan.c) both decide
 * which version of a key wins; this is the part of that they share.
 *
 * Fragments have the columns of the schema they were written with, then the
 * hidden columns CX_COL_COMMIT_TS (int64) and CX_COL_TOMBSTONE (bool), last
 * and in that order: every fragment is a generation or was written by a
 * merge of generations, so every row has a commit time.  Readers match
 * columns by field id (cx_layout).
 *
 * Keys: the key column's value as stored (little-endian fixed-width bytes, or
 * the bytes of a variable-width value), compared bytewise.  A NULL key never
 * equals another key (as in a SQL unique constraint): such rows are neither
 * de-duplicated nor replaced.  List columns cannot be keys.
 */
#ifndef CX_ROWKEY_H
#define CX_ROWKEY_H

#include <stdbool.h>
#include <stdint.h>

#include "format/cx_fragment.h"
#include "table/cx_fragment_entry.h"
#include "table/cx_manifest.h"
#include "format/cx_schema.h"

/* Hidden columns; user columns may not start with "_ctx_". */
#define CX_HIDDEN_PREFIX "_ctx_"
#define CX_COL_COMMIT_TS "_ctx_commit_ts"
#define CX_COL_TOMBSTONE "_ctx_tombstone"

/*
 * How a fragment's columns serve the table's (cx_layout.c): each table
 * column is found by its field id (absent in a fragment written before it
 * was added: read as NULL; stored narrower before a widening: widened), the
 * hidden columns by theirs.
 */
typedef struct cx_layout_col
{
	int32_t		frag;			/* fragment column, or -1 */
	bool		widen;			/* stored as a narrower type */
} cx_layout_col;

/* The vector cx_layout_adapt() built for a column without a fragment
 * column of its own type. */
typedef struct cx_layout_view
{
	cx_colvec	vec;
	cx_colvec	child;			/* an empty element vector for a list */
	bool		ready;			/* built for the last row group */
	uint8_t    *mem;
	size_t		cap;
} cx_layout_view;

typedef struct cx_layout
{
	const cx_schema *table;		/* borrowed */
	uint32_t	ncolumns;		/* table columns */
	uint32_t	nfrag;			/* fragment columns */
	int32_t		ts_col;			/* fragment column of the commit time */
	int32_t		tomb_col;		/* fragment column of the tombstone */
	cx_layout_col *cols;		/* ncolumns entries */
	cx_layout_view *views;		/* ncolumns entries */
} cx_layout;

/* Maps table onto a fragment's schema; CX_ERR_SCHEMA naming the fragment
 * (path) if a column's stored type cannot be read as the table's or the
 * hidden columns are missing.  Free with cx_layout_free(). */
cx_code		cx_layout_check(const cx_schema *table, const cx_schema *frag,
							const char *path, cx_layout *out, cx_err *err);
void		cx_layout_free(cx_layout *l);
/* The fragment column of table column `column`, or -1. */
int32_t		cx_layout_frag_column(const cx_layout *l, uint32_t column);
/* The fragment columns (frag_want, nfrag entries, overwritten) that the
 * table columns want (NULL: all) need; hidden ones are the caller's. */
void		cx_layout_want(const cx_layout *l, const bool *want, bool *frag_want);
/* Prepares the wanted (NULL: all) table columns of row group g that the
 * fragment does not hold as they are (NULL-filled or widened); call after
 * each read and before cx_layout_column().  Valid until the next call. */
cx_code		cx_layout_adapt(cx_layout *l, const cx_rowgroup *g,
							const bool *want, cx_err *err);
/* Table column `column` of row group g, prepared by cx_layout_adapt();
 * NULL for a column not read (as cx_rowgroup_column()). */
const cx_colvec *cx_layout_column(const cx_layout *l, const cx_rowgroup *g,
								  uint32_t column);

/*
 * Rows in cx_row_encode() form of schema from, re-encoded as rows of schema
 * to (appended to out): columns matched by field id, widened where to's type
 * is wider, NULL where from lacks them.  cx_schema_reshapes_to says whether
 * every shared column widens.  Writers use it for rows sent or logged under
 * an older schema of the store.
 */
bool		cx_schema_reshapes_to(const cx_schema *from, const cx_schema *to);
cx_code		cx_rows_reshape(const cx_schema *from, const cx_schema *to,
							const uint8_t *rows, size_t len, uint64_t nrows,
							cx_buf *out, cx_err *err);

/* Index of the key column, checking it exists and is not a list. */
cx_code		cx_key_column(const cx_schema *table, const char *key_column,
						  uint32_t *index, cx_err *err);
/* Row i's key bytes; false when the key is NULL. */
bool		cx_key_bytes(const cx_colvec *v, uint32_t i, const uint8_t **p,
						 size_t *len);

/*
 * The smallest and largest of a set of keys, ordered as column statistics
 * order values, so that fragments whose key statistics lie outside it can be
 * skipped: they cannot hold any key of the set.
 */
typedef struct cx_keyrange
{
	cx_type		type;
	bool		empty;
	cx_buf		min;
	cx_buf		max;
} cx_keyrange;

void		cx_keyrange_init(cx_keyrange *r, cx_type type);
void		cx_keyrange_free(cx_keyrange *r);
cx_code		cx_keyrange_add(cx_keyrange *r, const uint8_t *key, size_t len,
							cx_err *err);
/* Whether a fragment whose key column has statistics st (NULL: unknown) may
 * hold a key of the range.  Types whose statistics cannot bound a bytewise
 * key (no statistics; floats, with their NaN rules) always may. */
bool		cx_keyrange_may_overlap(const cx_keyrange *r, const cx_colstats *st);
/* The same for one value. */
bool		cx_stats_may_hold(cx_type type, const cx_colstats *st,
							  const uint8_t *value, size_t len);

/* One live row, as cx_keyscan() and cx_colscan() report it. */
typedef struct cx_keyrow
{
	const uint8_t *key;			/* the scanned column's value; valid during
								 * the callback */
	size_t		len;
	const uint8_t *rowkey;		/* cx_colscan() with a key_col: the row's key
								 * (never NULL); otherwise the same as key */
	size_t		rowkey_len;
	int64_t		ts;				/* commit time */
	bool		tombstone;
	uint64_t	row;			/* index within the fragment */
} cx_keyrow;

typedef cx_code (*cx_keyrow_fn) (void *arg, const cx_keyrow *kr, cx_err *err);

/*
 * Reads only the key, commit-time and tombstone columns of fragment fi (a
 * fragment of table), one row group at a time, and calls fn for every row
 * with a non-NULL key that dv (may be NULL) does not delete, in row order.
 */
cx_code		cx_keyscan(cx_objstore *s, const cx_fragment_info *fi,
					   const cx_schema *table, uint32_t key_col,
					   const cx_deletion_vector *dv, cx_keyrow_fn fn, void *arg,
					   cx_err *err);
/*
 * The same, calling ahead(arg, key, len), when not NULL, with the key of a
 * row a few rows before fn sees it (NULL keys and deleted rows included), so
 * that a hash map can prefetch where the key will go.  Only a hint: ahead may
 * not be called for every row, and must not fail.
 */
typedef void (*cx_keyahead_fn) (void *arg, const uint8_t *key, size_t len);
cx_code		cx_keyscan_ahead(cx_objstore *s, const cx_fragment_info *fi,
							 const cx_schema *table, uint32_t key_col,
							 const cx_deletion_vector *dv, cx_keyrow_fn fn,
							 cx_keyahead_fn ahead, void *arg, cx_err *err);

/*
 * The general pass cx_keyscan() is one case of: reads `column` (reported as
 * kr->key; rows where it is NULL are skipped), the hidden columns and, when
 * key_col >= 0, the key column too (kr->rowkey; rows with a NULL key are
 * skipped).  group_may_hold, when not NULL, sees the statistics of `column`
 * in each row group and returns false to skip the group unread.
 */
typedef bool (*cx_group_filter_fn) (void *arg, const cx_colstats *st);
typedef struct cx_colscan_spec
{
	uint32_t	column;
	int64_t		key_col;		/* -1: none */
	const cx_deletion_vector *dv;	/* NULL: nothing deleted */
	cx_group_filter_fn group_may_hold;
	cx_keyrow_fn fn;
	cx_keyahead_fn ahead;		/* as for cx_keyscan_ahead(), or NULL */
	void	   *arg;
} cx_colscan_spec;

cx_code		cx_colscan(cx_objstore *s, const cx_fragment_info *fi,
					   const cx_schema *table, const cx_colscan_spec *spec,
					   cx_err *err);

/*
 * The same pass over the key column (and the hidden ones) handing over whole
 * row groups: fn sees each group with first_row, the fragment row of its
 * first row (deletion vectors are the caller's business).
 */
typedef cx_code (*cx_keygroup_fn) (void *arg, const cx_rowgroup *g,
								   const cx_layout *layout, uint64_t first_row,
								   cx_err *err);
cx_code		cx_keygroups(cx_objstore *s, const cx_fragment_info *fi,
						 const cx_schema *table, uint32_t key_col,
						 cx_keygroup_fn fn, void *arg, cx_err *err);

/* Commit time and tombstone flag of row i of a group read with the hidden
 * columns wanted. */
int64_t		cx_row_ts(const cx_rowgroup *g, const cx_layout *layout, uint32_t i);
bool		cx_row_tombstone(const cx_rowgroup *g, const cx_layout *layout,
							 uint32_t i);

/* Whether dv (NULL: nothing deleted) deletes row, for rows visited in any
 * order (binary search). */
bool		cx_dv_deletes(const cx_deletion_vector *dv, uint64_t row);

/* A cursor over a deletion vector for rows visited in ascending order. */
typedef struct cx_dvcursor
{
	const cx_deletion_vector *dv;	/* NULL: nothing deleted */
	uint32_t	next;
} cx_dvcursor;

static inline bool
cx_dvcursor_deleted(cx_dvcursor *c, uint64_t row)
{
	if (c->dv == NULL)
		return false;
	while (c->next < c->dv->n && c->dv->rows[c->next] < row)
		c->next++;
	return c->next < c->dv->n && c->dv->rows[c->next] == row;
}

#endif							/* CX_ROWKEY_H */
