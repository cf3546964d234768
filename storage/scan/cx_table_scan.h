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
 * De-duplication (every table with a key column, whatever unique_key says):
 * among all versions of a key the newest
 * wins — commit order within a shard (generation number, then row order),
 * commit time across shards (docs/design/merge.md, with the tie rule); a
 * winning tombstone hides the key; NULL keys are never de-duplicated.  The
 * scan first reads the key, commit-time and tombstone columns of the
 * unmerged generations to build a map of their keys (memory bounded by the
 * unmerged layers, not by the base), then streams the base rows that no
 * newer generation row shadows, then the winning generation rows.  Without
 * unmerged generations, or without a key column, no map is built and rows
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
#include "ctxstore/scan.h"

#endif							/* CX_TABLESCAN_H */
