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
#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"

#define CX_MANIFEST_MAGIC "CXM1"
#define CX_MANIFEST_FORMAT 1
#define CX_VERSIONS_PREFIX "_versions/"
#define CX_LATEST_HINT_KEY "_latest"

/* Opaque, forward-compatible sections (tag, bytes) carried from version to
 * version unchanged unless their owner rewrites them. */
typedef struct cx_manifest_ext
{
	uint32_t	tag;
	uint32_t	len;
	uint8_t    *data;
} cx_manifest_ext;

/*
 * A shard of the store (MemWAL, cx_shard.h) and how far it is merged: every
 * generation numbered <= merged_gen is already part of the base fragments,
 * so readers skip it and its owner may drain it.  A shard is registered
 * (merged_gen 0) by its writer's first claim, so that readers find every
 * shard by reading the base manifest alone.
 */
typedef struct cx_shard_mark
{
	char	   *shard_id;		/* malloc'd */
	uint64_t	merged_gen;
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

typedef struct cx_manifest
{
	uint64_t	version;
	uint8_t		commit_id[16];
	int64_t		committed_at_us;	/* Unix epoch microseconds */
	char	   *operation;		/* "append", "create", ... */
	cx_schema  *schema;			/* NULL until the first data commit */
	/* Table properties, set once (cx_manifest_set_key) when the store gets
	 * its first writer: the key column by name (NULL: none yet), and whether
	 * a key has at most one live row (unique_key: merges and scans
	 * de-duplicate) or rows are only appended. */
	char	   *key_column;
	bool		unique_key;
	uint32_t	nfragments;
	cx_fragment_info *fragments;
	/* NULL (no fragment has deletions) or nfragments entries, parallel to
	 * fragments; cx_manifest_add_fragment keeps the two in step. */
	cx_deletion_vector *dvs;
	uint32_t	nshards;
	cx_shard_mark *shards;		/* ascending by shard_id (bytewise) */
	uint32_t	nexts;
	cx_manifest_ext *exts;
} cx_manifest;

cx_manifest *cx_manifest_new(void);
void		cx_manifest_free(cx_manifest *m);
/* Deep copy (NULL on OOM). */
cx_manifest *cx_manifest_clone(const cx_manifest *m);
/* Live rows: fragment rows minus deletion-vector entries. */
uint64_t	cx_manifest_rows(const cx_manifest *m);
/* Bytes of the fragments listed. */
uint64_t	cx_manifest_bytes(const cx_manifest *m);
/* Appends a copy of fi, with an empty deletion vector. */
cx_code		cx_manifest_add_fragment(cx_manifest *m, const cx_fragment_info *fi,
									 cx_err *err);
/* Index of the fragment whose path is path, or -1. */
int64_t		cx_manifest_find_fragment(const cx_manifest *m, const char *path);
cx_code		cx_manifest_set_schema(cx_manifest *m, const cx_schema *s,
								   cx_err *err);

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
/* Whether row `row` of fragment `fragment` is deleted (binary search). */
bool		cx_manifest_is_deleted(const cx_manifest *m, uint32_t fragment,
								   uint64_t row);
/* Deleted rows of one fragment (0 if none). */
uint32_t	cx_manifest_deleted_count(const cx_manifest *m, uint32_t fragment);
/* Whether s is a well-formed shard id: [A-Za-z0-9._-]{1,128}, not "." or
 * "..", so that it is one safe key segment. */
bool		cx_manifest_shard_id_ok(const char *shard_id);

/*
 * Whether a table fits a store whose newest base is base (NULL: an empty
 * store), checked in this order: its key names a column of the store (of the
 * table's columns while the store has no schema), agrees with the key and
 * uniqueness the store recorded, and every table column is a store column of
 * the same type.  cx_table_fits says which rule failed first;
 * cx_table_check_fit reports it as CX_ERR_SCHEMA.
 */
typedef struct cx_table_decl
{
	const cx_column *columns;	/* by store column name; entries whose name is
								 * NULL are skipped; NULL: not checked */
	uint32_t	ncolumns;
	const char *key_column;		/* NULL: the key is not checked */
	bool		unique_key;
} cx_table_decl;

typedef enum cx_misfit_kind
{
	CX_FITS = 0,
	CX_MISFIT_KEY_COLUMN,		/* the key is not a column of the store */
	CX_MISFIT_KEY,				/* the store recorded another key */
	CX_MISFIT_COLUMN,			/* a table column the store lacks */
	CX_MISFIT_COLUMN_TYPE		/* a column of another type in the store */
} cx_misfit_kind;

typedef struct cx_misfit
{
	cx_misfit_kind kind;
	int			column;			/* the table column (index in columns) of a
								 * column misfit, else -1 */
	int			store_column;	/* its store column for COLUMN_TYPE, else -1 */
} cx_misfit;

bool		cx_table_fits(const cx_manifest *base, const cx_table_decl *t,
						  cx_misfit *out);
cx_code		cx_table_check_fit(const cx_manifest *base, const cx_table_decl *t,
							   cx_err *err);

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

/* Loads version `version`; CX_ERR_NOT_FOUND if it does not exist. */
cx_code		cx_manifest_load(cx_objstore *s, uint64_t version,
							 cx_manifest **out, cx_err *err);
/* Newest committed version, 0 for an empty store. */
cx_code		cx_manifest_latest_version(cx_objstore *s, uint64_t *version,
									   cx_err *err);
/* Loads the newest version; *out = NULL for an empty store. */
cx_code		cx_manifest_load_latest(cx_objstore *s, cx_manifest **out,
									cx_err *err);

/*
 * Writes the encoded manifest of `version` with put-if-absent and settles
 * who holds that version: *ours is true if it is this object (a plain
 * success, or an ambiguous answer after which reading the version back gave
 * our bytes), false if another committer's.  An error means the version is
 * not ours, except when the message says the outcome is unknown.
 */
cx_code		cx_manifest_put(cx_objstore *s, uint64_t version,
							const cx_buf *bytes, bool *ours, cx_err *err);

/* Overwrites the "_latest" hint with version.  Callers treat a failure as
 * harmless: a stale or missing hint only costs readers extra requests. */
cx_code		cx_manifest_write_hint(cx_objstore *s, uint64_t version,
								   cx_err *err);

/* Calls fn for every version present, ascending (via a listing). */
typedef bool (*cx_version_fn) (void *arg, uint64_t version);
cx_code		cx_manifest_list_versions(cx_objstore *s, cx_version_fn fn,
									  void *arg, cx_err *err);

#endif							/* CX_MANIFEST_H */
