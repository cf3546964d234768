/*
 * cx_shard_manifest.h — shard manifests: the per-writer half of a store
 * (MemWAL).
 *
 * A store is written by one writer per shard; a shard is named by the writing
 * cluster's identity (ctxstore.shard_id), so two clusters never contend for
 * one shard.  A shard's state is a gap-free sequence of immutable shard
 * manifest versions "_shards/<shard_id>/_versions/<20 digits>.shard", written
 * with put-if-absent at exactly previous+1, like base versions.
 *
 * Each shard manifest version carries:
 *   - the writer epoch: a claim writes the next version with epoch + 1, so any
 *     older writer's next shard-manifest put collides and it learns it was
 *     fenced;
 *   - the replay position: every WAL entry with seq <= replay_seq is sealed
 *     into a listed (or already merged) generation;
 *   - the unmerged generations, oldest first, each a fragment (same format as
 *     base fragments) plus its number and commit-time range.
 *
 * Generations whose number is <= the shard's merged watermark in the base
 * manifest are already merged: readers skip them; the owner drains them.
 *
 * Generation fragments carry the table's columns followed by the hidden
 * columns CX_COL_COMMIT_TS (int64, Unix microseconds, the commit time of the
 * row; per writer strictly increasing) and CX_COL_TOMBSTONE (bool, true =
 * the key is deleted).  Base fragments written by merges carry them too.
 */
#ifndef CX_SHARD_H
#define CX_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "format/cx_fragment.h"
#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "ctxstore/memwal.h"
#include "table/cx_row_key.h"

#define CX_SHARD_MAGIC "CXS1"
/* Format 2 added inline generations, carrying a version's bytes at the end
 * of its body; format 3 moves them to its start, so that a reader of an
 * inline generation reads them alone.  Writers write format 3 when a
 * version lists an inline generation, else format 1, which older readers
 * read as before; format 2 is only read. */
#define CX_SHARD_FORMAT 3

/* In format 3 the bytes a version carries start here, after the frame
 * header and their u64 length: a reader of size carried bytes GETs the
 * range [0, CX_SHARD_CARRIED_AT + size) and checks it with
 * cx_shard_carried_check(). */
#define CX_SHARD_CARRIED_AT 20

typedef struct cx_generation
{
	uint64_t	gen;			/* per shard, strictly increasing from 1 */
	int64_t		min_ts;			/* commit-time range of its rows */
	int64_t		max_ts;
	uint64_t	carrier;		/* the shard-manifest version carrying its
								 * bytes (inline); 0: its own object at
								 * fragment.path */
	cx_fragment_info fragment;	/* path: its own object's key, or, inline,
								 * the name its bytes go by */
} cx_generation;


/* The columns of a generation fragment: the table's, then CX_COL_COMMIT_TS
 * and CX_COL_TOMBSTONE.  CX_ERR_SCHEMA if a table column name starts with
 * CX_HIDDEN_PREFIX. */
cx_code		cx_shard_generation_schema(const cx_schema *table,
									   cx_schema **out, cx_err *err);

/* The same as cx_manifest_fragment_failed for a generation g of m
 * ("generation 3 (data/...) listed by shard s1 version 12: ..."). */
cx_code		cx_shard_generation_failed(const cx_shard_manifest *m,
									   const cx_generation *g, cx_err *err);

cx_shard_manifest *cx_shard_manifest_new(const char *shard_id);
void		cx_shard_manifest_free(cx_shard_manifest *m);
cx_shard_manifest *cx_shard_manifest_clone(const cx_shard_manifest *m);
/* The bytes m holds, m itself included. */
size_t		cx_shard_manifest_memory(const cx_shard_manifest *m);
/* The same without the bytes m carries: what the next version starts
 * from (an inline generation's bytes stay in the version that sealed it). */
cx_shard_manifest *cx_shard_manifest_successor(const cx_shard_manifest *m);
cx_code		cx_shard_manifest_encode(const cx_shard_manifest *m, cx_buf *out,
									 cx_err *err);
/* One generation's entry in a version's list, in format. */
void		cx_shard_generation_encode(const cx_generation *g, uint16_t format,
									   cx_buf *out);

/*
 * The encoded entries of the generations a writer's last version listed
 * (cx_gen_entries.c), which its next versions copy instead of encoding
 * each pending generation's fragment entry again: a version's encoding
 * costs the bytes of its list, not the work of building it.  The bytes are
 * those cx_shard_manifest_encode() writes, with or without the cache.
 */
typedef struct cx_gen_entries cx_gen_entries;

cx_gen_entries *cx_gen_entries_new(void);	/* NULL on OOM */
void		cx_gen_entries_free(cx_gen_entries *c);
/* Appends the n entries of gens (in generation order), in format, to out,
 * copying those c holds; c then holds exactly these. */
void		cx_gen_entries_encode(cx_gen_entries *c, const cx_generation *gens,
								  uint32_t n, uint16_t format, cx_buf *out);
/* Entries copied and entries encoded since c was made. */
void		cx_gen_entries_counts(const cx_gen_entries *c, uint64_t *reused,
								  uint64_t *encoded);
uint64_t	cx_gen_entries_memory(const cx_gen_entries *c);

/* cx_shard_manifest_encode(), copying the entries reuse holds (NULL: none)
 * and leaving it holding m's. */
cx_code		cx_shard_manifest_encode_reusing(const cx_shard_manifest *m,
											 cx_gen_entries *reuse,
											 cx_buf *out, cx_err *err);
cx_code		cx_shard_manifest_decode(const uint8_t *data, size_t len,
									 const char *name,
									 cx_shard_manifest **out, cx_err *err);
void		cx_shard_manifest_key(const char *shard_id, uint64_t version,
								  char *key, size_t keysize);

/*
 * Checks head, the first len bytes of a shard-manifest version's object
 * (name in messages), read to get the size bytes it carries: the magic,
 * the format, the flags, that len is CX_SHARD_CARRIED_AT + size (not cut
 * short) and that the version says it carries exactly size bytes.  The
 * frame's CRC covers the whole object and is not checked: the carried
 * bytes are a Parquet file the reader checks as it checks a fragment
 * object (footer CRC from the fragment entry, page CRCs).  *whole is set
 * for a format 2 object, whose carried bytes end it: the caller loads it
 * whole instead.  CX_ERR_CORRUPT otherwise, CX_ERR_UNSUPPORTED for a newer
 * format or unknown flags.
 */
cx_code		cx_shard_carried_check(const uint8_t *head, size_t len,
								   uint64_t size, const char *name,
								   bool *whole, cx_err *err);

/* Loads a version; CX_ERR_NOT_FOUND if absent. */
cx_code		cx_shard_manifest_load(cx_objstore *s, const char *shard_id,
								   uint64_t version, cx_shard_manifest **out,
								   cx_err *err);
/*
 * Newest version of a shard (*out = NULL if the shard has none).  known is a
 * version the caller already saw (0 if none): probing starts there, so a
 * reader that caches it pays one HEAD when nothing changed.
 */
cx_code		cx_shard_manifest_load_latest(cx_objstore *s, const char *shard_id,
										  uint64_t known,
										  cx_shard_manifest **out, cx_err *err);

/*
 * The same, for readers that come back: the handle keeps the newest
 * manifest of each shard it read (the last 256 shards), and a later call
 * costs two HEADs (of the next version: absent, and of the kept one:
 * there, so still the newest) when the shard did not change.  *out is the
 * caller's copy.
 */
cx_code		cx_shard_manifest_load_latest_cached(cx_objstore *s,
												 const char *shard_id,
												 cx_shard_manifest **out,
												 cx_err *err);

/* Version `version` of shard_id: the kept copy if the handle keeps exactly
 * that version, else read (one GET) and kept if newer than the kept one, so
 * the inline generation it carries is not read again.  *out is the
 * caller's copy. */
cx_code		cx_shard_manifest_load_version_cached(cx_objstore *s,
												  const char *shard_id,
												  uint64_t version,
												  cx_shard_manifest **out,
												  cx_err *err);

/* Whether the manifest the handle keeps of shard_id lists generations
 * (false when it keeps none): a guess that the shard still does. */
bool		cx_shard_cache_lists_generations(const cx_objstore *s,
											 const char *shard_id);

/*
 * Writes m at m->version with put-if-absent (the writer's commit: version is
 * the previous one + 1).  On CX_OK, *winner is NULL if m holds the version,
 * else the manifest that does (decoded; the caller frees it and decides: a
 * newer epoch means fenced).  An ambiguous put is settled by reading the
 * version back; when even that fails, *unknown is set and the error says the
 * outcome is unknown (the caller must find out later whether m landed).
 */
cx_code		cx_shard_manifest_put(cx_objstore *s, const cx_shard_manifest *m,
								  cx_shard_manifest **winner, bool *unknown,
								  cx_err *err);
/* The same, encoding through reuse (cx_shard_manifest_encode_reusing). */
cx_code		cx_shard_manifest_put_reusing(cx_objstore *s,
										  const cx_shard_manifest *m,
										  cx_gen_entries *reuse,
										  cx_shard_manifest **winner,
										  bool *unknown, cx_err *err);

/*
 * Overwrites the shard hint "_shards/<shard_id>/_latest" (same 16-byte form
 * as the base "_latest" hint) with version: best effort, written on claims
 * and periodically (cx_shard_writer.c), so that cold readers probe little.
 */
cx_code		cx_shard_hint_write(cx_objstore *s, const char *shard_id,
								uint64_t version, cx_err *err);

/* --------------------------------------------------------------------------
 * A generation's bytes (cx_generation_bytes.c)
 * -------------------------------------------------------------------------- */

/*
 * Where generation g, listed by m (a version of its shard in s), is read
 * from: *from is s itself when g has its own object; for an inline one, a
 * read-only in-memory store holding g's bytes under g->fragment.path, taken
 * from m or the handle's cache when one of them holds the version carrying
 * them, else read from it: one ranged GET of just those bytes (format 3;
 * a format 2 version is read whole), as many GETs as opening an own object
 * costs; the handle then keeps them, so the next open costs none.  Release
 * with cx_generation_done().
 */
cx_code		cx_generation_open(cx_objstore *s, const cx_shard_manifest *m,
							   const cx_generation *g, cx_objstore **from,
							   cx_err *err);
void		cx_generation_done(cx_objstore *s, cx_objstore *from);

/* An in-memory store that holds one object and takes no other request but
 * reads of it: empty, taking one upload (the generation a small seal
 * writes: cx_shard_writer.c), or holding a copy of bytes at key (also what
 * the fuzz harnesses read from).  uri names it in messages. */
cx_code		cx_memstore_new(const char *uri, cx_objstore **out, cx_err *err);
cx_code		cx_memstore_of(const char *uri, const char *key,
						   const uint8_t *bytes, uint64_t len,
						   cx_objstore **out, cx_err *err);
/* The bytes uploaded to mem (malloc'd; the caller owns them), or NULL. */
uint8_t    *cx_memstore_take(cx_objstore *mem, uint64_t *len);

/* The bytes version `version` of shard_id carries (*len of them) if the
 * handle keeps them (cx_shard_cache.c: as the shard's newest manifest, or
 * as one of the last carried bytes it was given); NULL otherwise.
 * Borrowed: valid until the handle next loads that shard or keeps other
 * carried bytes. */
const uint8_t *cx_shard_cache_carried(cx_objstore *s, const char *shard_id,
									  uint64_t version, uint64_t *len);
/* Keeps bytes (malloc'd, len), carried by version of shard_id and read for
 * an inline generation (ownership passes: true); false without memory,
 * bytes still the caller's. */
bool		cx_shard_cache_keep_carried(cx_objstore *s, const char *shard_id,
										uint64_t version, uint8_t *bytes,
										uint64_t len);

#endif							/* CX_SHARD_H */
