/*
 * cx_shard_writer.h — the resident writer of one shard of one store (MemWAL).
 *
 * The writer worker keeps one cx_shardwriter per store, opened once: the
 * claim (epoch + 1), the fence marker and the WAL replay happen in
 * cx_sw_open(), never per append.  A writer closed only to free memory
 * keeps its claim (cx_sw_close_keep) and is reopened without one
 * (cx_sw_open_kept) while nobody claimed the shard meanwhile.
 *
 * Write path:
 *   append(seal = false): WAL entry "_shards/<id>/wal/<20-digit seq>.wal"
 *       written put-if-absent at the next seq (durable on return), rows go
 *       to the memtable;  visible after the next seal.
 *   append(seal = true):  rows go to the memtable and the memtable is sealed
 *       at once: no WAL entry (it would be a wasted PUT).  Visible on return.
 *   seal:  memtable -> generation fragment -> next shard-manifest version
 *       listing it, with replay_seq advanced past the WAL entries it holds.
 *       A sealed append therefore costs 2 PUTs (1 with the generation
 *       carried inline in the shard manifest), an unsealed one 1.
 *   Every shard-manifest commit also leaves out the generations the writer
 *   knows to be merged (a drain for free).  The shard hint is written by the
 *   claim and then, once HINT_EVERY versions behind, by seals (sealed
 *   appends' too), drains and closes: a shard written only by sealed
 *   appends would otherwise keep the claim's hint, and every cold reader
 *   probe on from there.  A put whose
 *   outcome is unknown is settled by putting the same bytes there again: a
 *   shard manifest before the writer writes anything else, a WAL entry
 *   before the next WAL entry (so the WAL has no gap below a later entry).
 *
 * Fencing: every write that can collide with a newer writer is put-if-absent
 * (WAL entries at seq, shard manifests at version + 1).  A collision is read
 * back: an object of a newer epoch (a fence marker, an entry, a manifest)
 * means this writer is fenced: CX_ERR_FENCED, and the writer stays fenced
 * (every later call fails the same way).  Re-claiming is an explicit new
 * cx_sw_open(); nothing here retries a claim.  Only an older epoch's fence
 * marker at the next WAL seq is stepped over: a claim that ours overtook
 * put it, and that claim fails.
 *
 * Claim (cx_sw_open): register the shard in the base manifest if it is not
 * there (a base commit, once per shard lifetime, so readers find it; the
 * table key is checked or recorded first, so a refused open fences nobody);
 * read the newest shard manifest, write the next version with epoch + 1
 * (losing that race to a newer epoch is CX_ERR_FENCED: someone else claimed
 * concurrently; losing it to the previous writer's seal rebases); write a fence
 * marker at the WAL tip (the first free seq after the newest entry; if that
 * collides with a straggler's entry, move past it); replay the WAL entries in
 * (replay_seq, fence) into a generation, failing with CX_ERR_FENCED if one
 * has a newer epoch (a newer claim overtook this one); drain generations the
 * base manifest says are merged.
 *
 * Idle writers: a fenced writer learns it at its next put only if the
 * object it collides with still exists.  GC removes old shard-manifest
 * versions (a prefix of them), possibly the claim version that fenced it, so
 * a writer idle for revalidate_after_ms first re-reads the newest version
 * (hint and HEADs, then the manifest) and is fenced if it is not its own.
 * GC's retention window must exceed that interval (docs/design/memwal.md).
 *
 * Not thread-safe: one thread drives a writer.
 */
#ifndef CX_SHARDWRITER_H
#define CX_SHARDWRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "format/cx_fragment.h"
#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "memwal/cx_shard_manifest.h"
#include "ctxstore/memwal.h"

#endif							/* CX_SHARDWRITER_H */
