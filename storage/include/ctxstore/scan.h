/*
 * ctxstore/scan.h — reading a consistent snapshot of a table, one row group
 * at a time (scan/cx_table_scan.h says how).
 */
#ifndef CTXSTORE_SCAN_H
#define CTXSTORE_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/table.h"

/* A decoded row group and one column of it. */
typedef struct cx_rowgroup cx_rowgroup;
const cx_colvec *cx_rowgroup_column(const cx_rowgroup *g, uint32_t column);
/* Value of row i (i < nrows) in the cx_datum member matching v->type. */
void		cx_colvec_get(const cx_colvec *v, uint32_t i, cx_datum *out);

typedef struct cx_snapshot cx_snapshot;

/* version 0 = newest; otherwise that base version (and, for shards, the
 * newest shard manifests — generations are not versioned with the base:
 * a pinned old version reads only its base fragments). */
cx_code		cx_snapshot_open(cx_objstore *s, uint64_t version,
							 cx_snapshot **out, cx_err *err);
void		cx_snapshot_close(cx_snapshot *snap);
/*
 * What a snapshot is made of, to open exactly the same one elsewhere (the
 * workers of a parallel scan): its base version (0: the empty store) and,
 * per shard of that base in its order, the shard-manifest version it read
 * (0: the shard had none).  nshards is 0 for a pinned old version.
 */
typedef struct cx_snapshot_pin
{
	uint64_t	base_version;
	uint32_t	nshards;
	const uint64_t *shard_versions;
} cx_snapshot_pin;

/* The pin of snap; pin->shard_versions points into snap. */
void		cx_snapshot_pin_of(const cx_snapshot *snap, cx_snapshot_pin *pin);
/* Opens the snapshot pin describes (CX_ERR_NOT_FOUND if a version it names
 * is gone, CX_ERR_INVALID if it does not fit its base). */
cx_code		cx_snapshot_open_pinned(cx_objstore *s, const cx_snapshot_pin *pin,
									cx_snapshot **out, cx_err *err);
/* The base version: an empty manifest (version 0, NULL schema) for an empty
 * store.  Its schema is the table's: shard writers record it in the base
 * with the first append, before any generation exists. */
const cx_manifest *cx_snapshot_base(const cx_snapshot *snap);
uint64_t	cx_snapshot_version(const cx_snapshot *snap);
/* Rows estimate: base rows plus unmerged generation rows. */
uint64_t	cx_snapshot_row_estimate(const cx_snapshot *snap);
uint32_t	cx_snapshot_pending_generations(const cx_snapshot *snap);
/* Bytes of its fragments: base fragments plus unmerged generations. */
uint64_t	cx_snapshot_bytes(const cx_snapshot *snap);

typedef struct cx_tablescan cx_tablescan;

/* want[] has one entry per column of the base schema (NULL = all). */
cx_code		cx_tablescan_begin(cx_snapshot *snap, const bool *want,
							   cx_tablescan **out, cx_err *err);
/*
 * The same, restricted to the rows whose key is one of nkeys keys (key bytes,
 * cx_datum_key_bytes(); repeats allowed, none = no rows): only the row groups
 * that hold a version of one of them are read (docs/design/scan.md, "Key
 * lookups").
 */
cx_code		cx_tablescan_begin_keys(cx_snapshot *snap, const bool *want,
									const uint8_t *const *keys,
									const size_t *lens, uint32_t nkeys,
									cx_tablescan **out, cx_err *err);
/*
 * Next batch of rows: *group receives a row group whose wanted columns are
 * decoded and *rows and *nrows the indices of its visible rows, ascending.
 * *group = NULL at the end.  The group and the row list stay valid until
 * the next call.  The group holds the columns as its fragment stores them:
 * read them with cx_tablescan_column(), which finds base-schema column
 * `column` in it by field id (NULL-filled for a fragment written before the
 * column was added, widened for one that stored it narrower).
 */
cx_code		cx_tablescan_next(cx_tablescan *scan, const cx_rowgroup **group,
							  const uint32_t **rows, uint32_t *nrows,
							  cx_err *err);
const cx_colvec *cx_tablescan_column(const cx_tablescan *scan,
									 uint32_t column);
void		cx_tablescan_end(cx_tablescan *scan);

/*
 * Scans described by a spec (docs/design/scan.md).  Predicates are a
 * conjunction used only to skip whole fragments and row groups whose
 * statistics prove that no row matches; rows are not filtered by them (the
 * caller rechecks).  The spec and everything it points to must stay valid
 * until cx_tablescan_end().
 */
typedef enum cx_pred_op
{
	CX_PRED_EQ = 1,
	CX_PRED_NE,
	CX_PRED_LT,
	CX_PRED_LE,
	CX_PRED_GT,
	CX_PRED_GE,
	CX_PRED_IS_NULL,
	CX_PRED_IS_NOT_NULL,
	CX_PRED_IN,					/* values[0..nvalues) */
	CX_PRED_PREFIX				/* string/binary starts with values[0] */
} cx_pred_op;

typedef struct cx_pred
{
	uint32_t	column;			/* base-schema column index */
	cx_pred_op	op;
	const cx_datum *values;		/* 1 for comparisons and PREFIX, n for IN,
								 * none for IS [NOT] NULL */
	uint32_t	nvalues;
} cx_pred;

typedef struct cx_scan_spec
{
	const bool *want;			/* per base column; NULL = all */
	const cx_pred *preds;
	uint32_t	npreds;
	/* Key lookup: only rows whose key is one of nkeys keys (as
	 * cx_tablescan_begin_keys). */
	bool		has_keys;
	const uint8_t *const *keys;
	const size_t *lens;
	uint32_t	nkeys;
	/* Top-k help: visit base fragments and row groups best-first by this
	 * column's statistics (largest max first when order_desc, smallest min
	 * first otherwise); -1 = storage order. */
	int32_t		order_column;
	bool		order_desc;
	/* Parallel scans: when claim is set, the scan reads only the units
	 * (fragment row groups, numbered in one deterministic order of the
	 * snapshot) that claim() hands it, and claim returns false when none is
	 * left.  Every participant builds the same de-duplication map. */
	bool		(*claim) (void *arg, uint32_t *unit);
	void	   *claim_arg;
} cx_scan_spec;

/* Rows estimate (as cx_snapshot_row_estimate) of the fragments whose
 * statistics do not rule out the predicates (a conjunction): what a scan
 * with them reads at most. */
uint64_t	cx_snapshot_rows_matching(const cx_snapshot *snap,
									  const cx_pred *preds, uint32_t npreds);

/* A spec that reads every column of every row, in storage order. */
void		cx_scan_spec_init(cx_scan_spec *spec);
cx_code		cx_tablescan_begin_spec(cx_snapshot *snap, const cx_scan_spec *spec,
									cx_tablescan **out, cx_err *err);
/*
 * Top-k: from now on, skip fragments and row groups none of whose values of
 * column can be better than *bound (greater when desc, smaller otherwise);
 * groups holding NULLs are kept when nulls_win (NULLS FIRST of a DESC
 * order).  A later call replaces the bound; what *bound points to stays
 * the caller's and must live until then (or cx_tablescan_end()).
 */
void		cx_tablescan_set_bound(cx_tablescan *scan, uint32_t column,
								   const cx_datum *bound, bool desc,
								   bool nulls_win);

/* What the streaming of one layer (the base, or the unmerged generations)
 * read and skipped. */
typedef struct cx_scan_layer_stats
{
	uint64_t	fragments_read;
	uint64_t	fragments_skipped;	/* by predicates or a bound, unopened */
	uint64_t	row_groups_read;
	uint64_t	row_groups_skipped; /* by predicates, a bound or a key lookup */
} cx_scan_layer_stats;

/* What a scan did so far, for tests, EXPLAIN ANALYZE and stats. */
typedef struct cx_tablescan_stats
{
	uint64_t	fragments_opened;	/* base fragments and generations */
	uint64_t	fragments_skipped;	/* by predicates or a bound, unopened */
	uint64_t	keymap_keys;	/* distinct unmerged keys (0: no map built) */
	uint64_t	keymap_bytes;	/* memory the de-duplication map holds */
	uint64_t	row_groups_read;
	uint64_t	row_groups_skipped; /* by a key lookup, predicates or a bound */
	/* Base row groups skipped by predicates or a bound whose key and
	 * commit-time columns were still read to de-duplicate (also counted in
	 * row_groups_skipped). */
	uint64_t	row_groups_keys_only;
	uint64_t	rows_returned;
	uint64_t	rows_hidden;	/* deleted, shadowed by a newer version, or
								 * tombstones */
	cx_scan_layer_stats base;
	cx_scan_layer_stats gens;
} cx_tablescan_stats;

const cx_tablescan_stats *cx_tablescan_get_stats(const cx_tablescan *scan);

#endif							/* CTXSTORE_SCAN_H */
