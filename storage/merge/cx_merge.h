/*
 * cx_merge.h — merging a shard's sealed generations into the base table.
 *
 * Only the shard's owner merges it (the writer worker, or a process acting
 * for it), on its own cx_objstore handle, so appends never wait for the long
 * part.  A merge:
 *   1. reads the newest base manifest and the newest shard manifest;
 *   2. picks the oldest unmerged generations (number > the shard's watermark
 *      in the base manifest), at most max_generations and max_bytes, but
 *      always at least one (progress), never splitting a generation;
 *   3. keeps, per key, the newest row among them (commit order), and (every
 *      table with a key column, whatever unique_key says) finds the live
 *      base rows those keys replace (older
 *      commit time loses; across shards the later commit time wins);
 *   4. writes the surviving rows as new base fragments (with the hidden
 *      columns), sorted by the sort key, then the key (cx_merge_sort.c),
 *      and commits ONE base version that adds them, adds deletion
 *      vectors for the replaced base rows, and raises the shard's watermark
 *      to the newest merged generation — atomically;
 *   5. on a lost race rebases: re-checks keys against fragments committed in
 *      between (deletion vectors on whichever side is older) and aborts with
 *      CX_ERR_CONFLICT if the watermark already covers these generations.
 * The drain (cx_sw_drain_through) afterwards removes exactly the merged generations
 * from the shard manifest; a crash in between duplicates nothing, because
 * readers skip generations at or below the watermark.
 *
 * A winning tombstone is written to the base as a tombstone row (and the
 * base row it deletes gets a deletion vector entry): another shard may hold
 * an older unmerged version of the key that must stay hidden after this
 * shard's generations are drained.  Compaction carries tombstone rows
 * over as they are.
 *
 * A TRUNCATE marker among the merged generations (a tombstone with a NULL
 * key) is not written: the new base version records its time as
 * truncated_before_us, no row it hides is written, and fragments wholly
 * older are no longer listed (docs/design/merge.md, "TRUNCATE").  Every
 * fragment written records the merged shard as its origin; a key whose live
 * base row came from another shard is counted in key_conflicts.
 *
 * Costs: the merged generations' keys are held in memory (a cx_keymap; about
 * 100 bytes per distinct key plus the key bytes), and so are the surviving
 * rows of a sorted merge, up to sort_memory bytes per sorted run, and so
 * are the bytes of the small generations (read once for both passes, at
 * most 16 MiB: cx_merge_memo.c); finding
 * the base rows they replace is a probe of the base for the merged keys
 * (cx_base_probe.h): the key index where it covers the base, key columns
 * elsewhere.
 *
 * Failpoints (cx_failpoint.h), each reached after the step it names:
 *   merge.after_upload   the new base fragments are uploaded, the base
 *                        version listing them is not committed
 *   merge.after_commit   the base version is committed (watermark raised),
 *                        the shard is not drained
 */
#ifndef CX_MERGE_H
#define CX_MERGE_H

#include <stdint.h>

#include "format/cx_fragment.h"
#include "objstore/cx_objstore.h"
#include "ctxstore/memwal.h"

#endif							/* CX_MERGE_H */
