/*
 * ctxstore/table.h — base-table manifests as the PostgreSQL side reads them,
 * and the rule for whether a table fits a store (table/cx_manifest.h has
 * the whole of it).
 *
 * Version N of a store is the object "_versions/<N as 20 digits>.manifest"
 * (ctxstore/layout.h); version 0 means an empty store.  "_latest" is a hint
 * holding the newest version a committer saw.
 */
#ifndef CTXSTORE_TABLE_H
#define CTXSTORE_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/objstore.h"
#include "ctxstore/schema.h"

/* An earlier schema of the store, kept in the manifest's schema history. */
typedef struct cx_schema_version
{
	uint32_t	schema_id;
	cx_schema  *schema;
} cx_schema_version;

typedef struct cx_manifest
{
	uint64_t	version;
	uint8_t		commit_id[16];
	int64_t		committed_at_us;	/* Unix epoch microseconds */
	char	   *operation;		/* "append", "create", ... */
	cx_schema  *schema;			/* NULL until the first data commit */
	/* 0 while there is no schema, 1 for the first, one more with every
	 * change (cx_manifest_set_schema). */
	uint32_t	schema_id;
	/* The largest user field id the store ever gave a column: an added
	 * column gets the next one, so a dropped column's id is never reused. */
	int32_t		last_field_id;
	/* The schemas before the current one, ascending by schema_id. */
	uint32_t	nold_schemas;
	cx_schema_version *old_schemas;
	/* Table properties, set once (cx_manifest_set_key) when the store gets
	 * its first writer: the key column by name (NULL: none yet), and whether
	 * the writer refuses an insert of a live key (unique_key; merges and
	 * scans de-duplicate by key either way). */
	char	   *key_column;
	bool		unique_key;
	/* A merged TRUNCATE: rows committed before this time (Unix us) are
	 * hidden, whatever layer holds them; 0: nothing truncated.  Never
	 * decreases along the version chain. */
	int64_t		truncated_before_us;
	uint32_t	nfragments;
	struct cx_fragment_info *fragments;
	/* NULL (no fragment has deletions) or nfragments entries, parallel to
	 * fragments; cx_manifest_add_fragment keeps the two in step. */
	struct cx_deletion_vector *dvs;
	uint32_t	nshards;
	struct cx_shard_mark *shards;		/* ascending by shard_id (bytewise) */
	uint32_t	nexts;
	struct cx_manifest_ext *exts;
} cx_manifest;

void		cx_manifest_free(cx_manifest *m);
/* Live rows: fragment rows minus deletion-vector entries. */
uint64_t	cx_manifest_rows(const cx_manifest *m);
/* Bytes of the fragments listed. */
uint64_t	cx_manifest_bytes(const cx_manifest *m);

/* Fragment f of m as ctxstore.fragments() shows it (cx_fragment_summary.c):
 * its rows, those deleted, and the shard that wrote it (NULL: unknown). */
typedef struct cx_fragment_summary
{
	uint64_t	rows;
	uint64_t	deleted;
	const char *origin_shard;	/* points into m */
} cx_fragment_summary;

void		cx_manifest_fragment_summary(const cx_manifest *m, uint32_t f,
										 cx_fragment_summary *out);
/* The statistics bounds of column `column` of m's schema in fragment f, as
 * values of its type (variable-width ones point into m; a text min may be a
 * prefix of the smallest value); a missing bound comes back NULL. */
void		cx_manifest_fragment_bounds(const cx_manifest *m, uint32_t f,
										uint32_t column, cx_datum *min,
										cx_datum *max);

/* Loads version `version`; CX_ERR_NOT_FOUND if it does not exist. */
cx_code		cx_manifest_load(cx_objstore *s, uint64_t version,
							 cx_manifest **out, cx_err *err);
/* Newest committed version, 0 for an empty store. */
cx_code		cx_manifest_latest_version(cx_objstore *s, uint64_t *version,
									   cx_err *err);
/* Loads the newest version; *out = NULL for an empty store. */
cx_code		cx_manifest_load_latest(cx_objstore *s, cx_manifest **out,
									cx_err *err);

/* Calls fn for every version present, ascending (via a listing). */
typedef bool (*cx_version_fn) (void *arg, uint64_t version);
cx_code		cx_manifest_list_versions(cx_objstore *s, cx_version_fn fn,
									  void *arg, cx_err *err);


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
 * Changing a store's columns (table/cx_schema_change.c).  Each change is one
 * base commit with operation "alter schema" that gives the store the next
 * schema id; fragments written before keep their own schema and are read by
 * field id, so nothing is rewritten.  The rules:
 *   ADD     a new nullable column with the next field id (never one a dropped
 *           column had); older fragments read it as NULL
 *   DROP    the column (and its field id) leaves the schema for good
 *   RENAME  the column keeps its field id and takes the new name
 *   TYPE    only widening: int16 -> int32 -> int64, float32 -> float64; older
 *           fragments are widened on read
 * The key column cannot be dropped, renamed or retyped.  Each change is
 * idempotent, so that repeating a statement whose transaction rolled back
 * after the store changed converges: adding a column the store has with the
 * same type, dropping one it lacks, renaming to a name it has while the old
 * name is gone and changing to the type a column has are no-ops.  A store
 * without a schema (never written) takes its schema from its first write
 * instead: nothing to do.  CX_ERR_SCHEMA for a change the rules refuse.
 */
typedef enum cx_alter_kind
{
	CX_ALTER_ADD,
	CX_ALTER_DROP,
	CX_ALTER_RENAME,
	CX_ALTER_TYPE
} cx_alter_kind;

typedef struct cx_schema_alter
{
	cx_alter_kind kind;
	const char *column;			/* the store column (its new name for ADD) */
	const char *new_name;		/* RENAME */
	/* ADD and TYPE: type, elem_type, ext_type, precision and scale; the name
	 * and field id are ignored. */
	cx_column	type;
} cx_schema_alter;

/* Applies the changes in order as one commit; *version: the version
 * committed, 0 when every change was a no-op. */
cx_code		cx_table_alter_schema(cx_objstore *s, const cx_schema_alter *alters,
								  uint32_t nalters, uint64_t *version,
								  cx_err *err);

/* Whether a column of type from may be read as type to (the same type, or a
 * widening the rules above allow). */
bool		cx_column_widens_to(const cx_column *from, const cx_column *to);

/*
 * The key index (storage/table/cx_key_index.h: segments listed by the base
 * manifest, used by every probe of the base by key).
 *
 * Building (cx_key_index_build.c).  cx_keyindex_update indexes column
 * `column` of the live fragments of the newest base version that no segment
 * of the column covers yet, one segment per max_entries entries, and when
 * the column then has more than max_segments segments merges the newest of
 * them into one (a streaming k-way merge: one block per segment in
 * memory): enough to leave max_segments, and each older one that holds at
 * most twice the entries of all newer together, so that a large old
 * segment is not rewritten for every few small updates.  It
 * commits one base version with operation "index"; on a lost race it
 * rebases (the segments stay valid: fragments are immutable), and a version
 * a merge committed in between is fine (its new fragments are indexed by
 * the next update).  Nothing to do: no commit, result all zero.
 */
typedef struct cx_keyindex_options
{
	uint32_t	block_bytes;	/* default 4096 */
	uint32_t	max_segments;	/* per column before a merge; default 4 */
	uint64_t	max_entries;	/* per segment built from fragments; default
								 * 1048576 (what the build holds in memory) */
} cx_keyindex_options;

void		cx_keyindex_options_default(cx_keyindex_options *o);

typedef struct cx_keyindex_result
{
	uint32_t	segments_written;
	uint64_t	keys_indexed;	/* entries of the segments built from
								 * fragments */
	uint32_t	fragments_covered;	/* newly */
	uint32_t	segments_merged;	/* segments replaced by a merged one */
	uint64_t	base_version;	/* committed, 0 if nothing to do */
} cx_keyindex_result;

cx_code		cx_keyindex_update(cx_objstore *s, uint32_t column,
							   const cx_keyindex_options *opt,
							   cx_keyindex_result *res, cx_err *err);
/* The same for the key column and, when also_column is not NULL, for that
 * column too (the table's upsert key); results added up, base_version the
 * last committed.  Nothing to do for a store without a key yet. */
cx_code		cx_keyindex_update_table(cx_objstore *s, const char *also_column,
									 const cx_keyindex_options *opt,
									 cx_keyindex_result *res, cx_err *err);

/* The bytes the process's key-index caches hold, which lookups fill: the
 * segment blocks (bounded by CX_KEYINDEX_CACHE_DEFAULT, bookkeeping
 * included) and the segments' kept filters. */
size_t		cx_keyindex_cache_bytes(void);

#endif							/* CTXSTORE_TABLE_H */
