/*
 * cx_manifest.h — base-table manifests: one immutable object per version.
 *
 * Version N of a store is the object "_versions/<N as 20 digits>.manifest".
 * It lists every live fragment with its size, row count, footer position and
 * per-column statistics, plus the table schema, the operation that produced
 * it, a random commit id and the commit time.  Version 0 means "empty store":
 * no object.  Versions are gap-free: version N+1 is only ever written with
 * put-if-absent by a committer that read version N (cx_commit.h).
 *
 * "_latest" is a hint holding the newest version number a committer saw; it
 * is overwritten freely and may be stale or missing, so readers start there
 * and probe forward (cx_manifest_latest_version()).
 */
#ifndef CX_MANIFEST_H
#define CX_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include "format/cx_fragment.h"
#include "objstore/cx_layout.h"
#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "ctxstore/table.h"

#define CX_MANIFEST_MAGIC "CXM1"
/* Format 2 added truncated_before_us and each fragment's origin shard,
 * format 3 the schema id, the last field id and the schema history, format
 * 4 each shard's flags; older formats are still read (nothing truncated,
 * origins unknown, schema id 1 for a schema, no history, no flags). */
#define CX_MANIFEST_FORMAT 4

/* Opaque, forward-compatible sections (tag, bytes) carried from version to
 * version unchanged unless their owner rewrites them. */
typedef struct cx_manifest_ext
{
	uint32_t	tag;
	uint32_t	len;
	uint8_t    *data;
} cx_manifest_ext;

/*
 * A shard of the store (MemWAL, cx_shard_manifest.h) and how far it is merged:
 * every generation numbered <= merged_gen is already part of the base
 * fragments, so readers skip it and its owner may drain it.  A shard is
 * registered (merged_gen 0) by its writer's first claim, so that readers find
 * every shard by reading the base manifest alone.
 *
 * dirty_marked: the shard's writers put a dirty marker before any of its
 * manifest versions lists a generation (memwal/cx_shard_dirty.c), so a
 * reader need not read its manifest while no marker of it exists.  Set by
 * registration, never cleared.
 */
typedef struct cx_shard_mark
{
	char	   *shard_id;		/* malloc'd */
	uint64_t	merged_gen;
	bool		dirty_marked;
} cx_shard_mark;

/*
 * Rows of one fragment that are no longer live (a merge replaced them with a
 * newer row of the same key): row indices within the fragment, strictly
 * ascending.  Fragments are immutable, so deleting rows means listing them
 * here; compaction (a later module) rewrites fragments without them.
 */
typedef struct cx_deletion_vector
{
	uint32_t	n;
	uint32_t   *rows;			/* malloc'd, n entries; NULL when n == 0 */
} cx_deletion_vector;

cx_manifest *cx_manifest_new(void);
/* Deep copy (NULL on OOM). */
cx_manifest *cx_manifest_clone(const cx_manifest *m);
/* The bytes m holds, m itself included (its schemas, a few hundred bytes
 * that do not grow with the store, left out). */
size_t		cx_manifest_memory(const cx_manifest *m);
/* Appends a copy of fi, with an empty deletion vector. */
cx_code		cx_manifest_add_fragment(cx_manifest *m, const cx_fragment_info *fi,
									 cx_err *err);
/* Index of the fragment whose path is path, or -1. */
int64_t		cx_manifest_find_fragment(const cx_manifest *m, const char *path);
/* Removes fragment f (and its deletion vector), keeping the order of the
 * others. */
void		cx_manifest_remove_fragment(cx_manifest *m, uint32_t f);
/*
 * Schemas (cx_manifest_schema.c).  cx_manifest_set_schema makes a copy of s
 * the current schema: the first one gets schema id 1; a later one moves the
 * current schema into the history and gets the next id.  last_field_id
 * follows the largest id of s.  Whether s is an allowed change of the
 * current schema is cx_schema_check_evolution's business.
 */
cx_code		cx_manifest_set_schema(cx_manifest *m, const cx_schema *s,
								   cx_err *err);
/* The schema with that id, current or historical; NULL if none. */
const cx_schema *cx_manifest_schema_by_id(const cx_manifest *m,
										  uint32_t schema_id);
/* Whether s is the current schema or one in the history. */
bool		cx_manifest_had_schema(const cx_manifest *m, const cx_schema *s);
/* Internal to the manifest codec (cx_manifest.c). */
bool		cx_manifest_clone_schemas(cx_manifest *c, const cx_manifest *m);
void		cx_manifest_free_schemas(cx_manifest *m);
void		cx_manifest_encode_schemas(const cx_manifest *m, cx_buf *out);
bool		cx_manifest_decode_schemas(cx_rd *r, uint16_t format,
									   cx_manifest *m);

/*
 * MemWAL bookkeeping (cx_manifest_edit.c).
 *
 * cx_manifest_set_key records the table's key column and uniqueness; it may
 * be called again with the same values, but changing them is CX_ERR_SCHEMA
 * (rows already merged were de-duplicated under the old ones).
 */
cx_code		cx_manifest_set_key(cx_manifest *m, const char *key_column,
								bool unique_key, cx_err *err);
/* The shard's entry, or NULL if it is not registered. */
const cx_shard_mark *cx_manifest_shard(const cx_manifest *m,
									   const char *shard_id);
/* The shard's watermark; 0 if it is not registered (nothing merged). */
uint64_t	cx_manifest_merged_gen(const cx_manifest *m, const char *shard_id);
/* Adds the shard with watermark 0 unless it is already registered. */
cx_code		cx_manifest_register_shard(cx_manifest *m, const char *shard_id,
									   cx_err *err);
/* Sets the shard's dirty_marked (registering it if needed). */
cx_code		cx_manifest_set_dirty_marked(cx_manifest *m, const char *shard_id,
										 cx_err *err);
/* Raises the shard's watermark (registering it if needed); lowering it is
 * CX_ERR_INVALID: generations once merged must stay merged. */
cx_code		cx_manifest_set_merged_gen(cx_manifest *m, const char *shard_id,
									   uint64_t merged_gen, cx_err *err);
/*
 * Adds rows (ascending; duplicates and rows already deleted are fine) to the
 * deletion vector of fragment `fragment`, keeping it sorted and free of
 * duplicates.  CX_ERR_INVALID for a row beyond the fragment's row count.
 */
cx_code		cx_manifest_add_deletions(cx_manifest *m, uint32_t fragment,
									  const uint32_t *rows, uint32_t n,
									  cx_err *err);
/*
 * A merged TRUNCATE: raises m's truncated_before_us to before_us (never
 * lowers it) and removes every fragment whose commit-time statistics say
 * all its rows were committed before it.  The objects stay (earlier
 * versions still list them).  Returns how many fragments it removed.
 */
uint32_t	cx_manifest_truncate(cx_manifest *m, int64_t before_us);
/* CX_OK if m lists every fragment of inputs, else CX_ERR_CONFLICT naming
 * the first it does not (another compaction replaced it) and m's version:
 * the one message of a compaction that lost its inputs. */
cx_code		cx_manifest_lists_inputs(const cx_manifest *m,
									 const char *const *inputs,
									 uint32_t ninputs, cx_err *err);
/*
 * Compaction's edit: appends copies of outputs (empty deletion vectors) and
 * removes the fragments whose paths are inputs, keeping the order of the
 * others, so the outputs end up as the last noutputs fragments.  An input m
 * no longer lists (another compaction replaced it) is CX_ERR_CONFLICT
 * naming it; on any error m is unchanged.
 */
cx_code		cx_manifest_rewrite(cx_manifest *m, const char *const *inputs,
								uint32_t ninputs,
								const cx_fragment_info *outputs,
								uint32_t noutputs, cx_err *err);
/* Deleted rows of one fragment (0 if none). */
uint32_t	cx_manifest_deleted_count(const cx_manifest *m, uint32_t fragment);

/*
 * Prefixes the error a read of fragment `path` (listed by m) failed with by
 * the fragment and the version listing it ("fragment data/... listed by base
 * version 7: ..."), so that a missing or damaged object can be traced to
 * what needs it; returns err->code.
 */
cx_code		cx_manifest_fragment_failed(const cx_manifest *m, const char *path,
										cx_err *err);

/* Serialisation.  name is used in error messages ("_versions/...manifest"). */
cx_code		cx_manifest_encode(const cx_manifest *m, cx_buf *out, cx_err *err);
cx_code		cx_manifest_decode(const uint8_t *data, size_t len,
							   const char *name, cx_manifest **out, cx_err *err);

/* "_versions/00000000000000000042.manifest" into key (>= 64 bytes). */
void		cx_manifest_key(uint64_t version, char *key, size_t keysize);


/*
 * Writes the encoded manifest of `version` with put-if-absent and settles
 * who holds that version: *ours is true if it is this object (a plain
 * success, or an ambiguous answer after which reading the version back gave
 * our bytes), false if another committer's.  An error means the version is
 * not ours, except when the message says the outcome is unknown.
 */
cx_code		cx_manifest_put(cx_objstore *s, uint64_t version,
							const cx_buf *bytes, bool *ours, cx_err *err);

/* The newest base version this handle read or wrote, kept on it as its
 * bytes (cx_manifest_cache.c): cx_manifest_load of that version reads no
 * object.  get copies them into out (false: not kept); put keeps bytes
 * unless a newer version is kept already. */
bool		cx_manifest_cache_get(cx_objstore *s, uint64_t version,
								  cx_buf *out);
void		cx_manifest_cache_put(cx_objstore *s, uint64_t version,
								  const cx_buf *bytes);

/* Overwrites the "_latest" hint with version.  Callers treat a failure as
 * harmless: a stale or missing hint only costs readers extra requests. */
cx_code		cx_manifest_write_hint(cx_objstore *s, uint64_t version,
								   cx_err *err);

#endif							/* CX_MANIFEST_H */
