/*
 * cx_table_scan.h — reading a consistent snapshot of a table: the base
 * fragments (minus deletion vectors) unioned with the unmerged generations of
 * every shard, at most one row per key.
 *
 * A snapshot is fixed when it is opened: one base version and, per shard
 * registered in it, one shard-manifest version, the base read after the
 * shard manifests (so a merge and drain racing the open lose nothing).
 * Generations at or below the shard's watermark in that base version are
 * skipped (already merged).  Nothing is cached across snapshots.
 *
 * De-duplication (unique-key tables): among all versions of a key the newest
 * wins — commit order within a shard (generation number, then row order),
 * commit time across shards (docs/design/merge.md, with the tie rule); a
 * winning tombstone hides the key; NULL keys are never de-duplicated.  The
 * scan first reads the key, commit-time and tombstone columns of the
 * unmerged generations to build a map of their keys (memory bounded by the
 * unmerged layers, not by the base), then streams the base rows that no
 * newer generation row shadows, then the winning generation rows.  Without
 * unmerged generations, or without a unique key, no map is built and rows
 * are filtered by deletion vectors and tombstones only.
 *
 * Rows come out one row group at a time with the wanted columns decoded
 * (projection).  The scan may decode more columns of a group for its own
 * use (the key, the hidden ones): callers look only at what they wanted.
 */
#ifndef CX_TABLESCAN_H
#define CX_TABLESCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "format/cx_fragment.h"
#include "table/cx_manifest.h"
#include "objstore/cx_objstore.h"

typedef struct cx_snapshot cx_snapshot;

/* version 0 = newest; otherwise that base version (and, for shards, the
 * newest shard manifests — generations are not versioned with the base:
 * a pinned old version reads only its base fragments). */
cx_code		cx_snapshot_open(cx_objstore *s, uint64_t version,
							 cx_snapshot **out, cx_err *err);
void		cx_snapshot_close(cx_snapshot *snap);
/* The base version: an empty manifest (version 0, NULL schema) for an empty
 * store.  Its schema is the table's: shard writers record it in the base
 * with the first append, before any generation exists. */
const cx_manifest *cx_snapshot_base(const cx_snapshot *snap);
uint64_t	cx_snapshot_version(const cx_snapshot *snap);
/* Rows estimate: base rows plus unmerged generation rows. */
uint64_t	cx_snapshot_row_estimate(const cx_snapshot *snap);
uint32_t	cx_snapshot_pending_generations(const cx_snapshot *snap);

typedef struct cx_tablescan cx_tablescan;

/* want[] has one entry per column of the base schema (NULL = all). */
cx_code		cx_tablescan_begin(cx_snapshot *snap, const bool *want,
							   cx_tablescan **out, cx_err *err);
/*
 * Next batch of rows: *group receives a row group whose wanted columns are
 * decoded (indices are base-schema column indices) and *rows and *nrows the
 * indices of its visible rows, ascending.  *group = NULL at the end.  The
 * group and the row list stay valid until the next call.
 */
cx_code		cx_tablescan_next(cx_tablescan *scan, const cx_rowgroup **group,
							  const uint32_t **rows, uint32_t *nrows,
							  cx_err *err);
void		cx_tablescan_end(cx_tablescan *scan);

/* What a scan did so far, for tests, EXPLAIN ANALYZE and stats. */
typedef struct cx_tablescan_stats
{
	uint64_t	fragments_opened;	/* base fragments and generations */
	uint64_t	keymap_keys;	/* distinct unmerged keys (0: no map built) */
	uint64_t	keymap_bytes;	/* memory the de-duplication map holds */
	uint64_t	rows_returned;
	uint64_t	rows_hidden;	/* deleted, shadowed by a newer version, or
								 * tombstones */
} cx_tablescan_stats;

const cx_tablescan_stats *cx_tablescan_get_stats(const cx_tablescan *scan);

#endif							/* CX_TABLESCAN_H */
