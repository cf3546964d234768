/*
 * cx_iceberg_int.h — the parts of an Iceberg publish (ctxstore/iceberg.h):
 * manifests and manifest lists in Avro (cx_iceberg_avro.c, libavro), the
 * table metadata JSON (cx_iceberg_meta.c, jansson), the position deletes
 * of a base version (cx_iceberg_deletes.c) and the publish itself
 * (cx_iceberg.c).  docs/FORMAT.md "Iceberg metadata" specifies the files.
 *
 * jansson's json_object() must not be called: inside the server it binds
 * to PostgreSQL's own json_object (the SQL function); json_pack("{}")
 * makes an empty object instead.  (libavro calls it only in
 * avro_value_to_json, which the engine does not use.)
 */
#ifndef CX_ICEBERG_INT_H
#define CX_ICEBERG_INT_H

#include <jansson.h>

#include "ctxstore/iceberg.h"
#include "objstore/cx_versioned.h"
#include "table/cx_manifest.h"

/* The Avro schemas of the Iceberg v2 spec ("field-id" on every field). */
extern const char cx_ice_manifest_entry_schema[];
extern const char cx_ice_manifest_file_schema[];

/* Manifest entry status and content, as the spec numbers them. */
#define CX_ICE_EXISTING 0
#define CX_ICE_ADDED 1
#define CX_ICE_DELETED 2
#define CX_ICE_DATA 0
#define CX_ICE_POSITION_DELETES 1

/* No sequence number: an ADDED entry inherits its manifest's. */
#define CX_ICE_INHERIT (-1)

/* One entry of a manifest: a data file or a delete file. */
typedef struct cx_ice_file
{
	int			status;
	int			content;
	char	   *path;			/* absolute URI, malloc'd */
	int64_t		snapshot_id;
	int64_t		seq;			/* data sequence number, or CX_ICE_INHERIT */
	int64_t		file_seq;		/* or CX_ICE_INHERIT */
	int64_t		records;
	int64_t		size;
} cx_ice_file;

typedef struct cx_ice_files
{
	cx_ice_file *v;
	uint32_t	n;
	uint32_t	cap;
} cx_ice_files;

/* Appends a copy of f (its path copied). */
cx_code		cx_ice_files_add(cx_ice_files *fs, const cx_ice_file *f,
							 cx_err *err);
void		cx_ice_files_free(cx_ice_files *fs);

/* One entry of a manifest list. */
typedef struct cx_ice_manifest_ref
{
	char	   *path;			/* absolute URI */
	int64_t		length;
	int			content;		/* 0 data, 1 deletes */
	int64_t		seq;
	int64_t		min_seq;
	int64_t		added_snapshot_id;
	int32_t		added_files;
	int32_t		existing_files;
	int32_t		deleted_files;
	int64_t		added_rows;
	int64_t		existing_rows;
	int64_t		deleted_rows;
} cx_ice_manifest_ref;

/* A manifest's Avro file metadata (the spec's required keys). */
typedef struct cx_ice_manifest_meta
{
	const char *schema_json;	/* the table schema, as in the metadata */
	uint32_t	schema_id;
	int			content;
} cx_ice_manifest_meta;

/* A manifest list's Avro file metadata. */
typedef struct cx_ice_list_meta
{
	int64_t		snapshot_id;
	int64_t		parent_snapshot_id; /* 0: none */
	int64_t		seq;
} cx_ice_list_meta;

/* Avro object container files into out (name for messages). */
cx_code		cx_ice_write_manifest(const cx_ice_files *entries,
								  const cx_ice_manifest_meta *meta,
								  cx_buf *out, cx_err *err);
cx_code		cx_ice_write_manifest_list(const cx_ice_manifest_ref *refs,
									   uint32_t n, const cx_ice_list_meta *meta,
									   cx_buf *out, cx_err *err);
/* Appends the entries of a manifest to out; CX_ERR_CORRUPT naming name. */
cx_code		cx_ice_read_manifest(const cx_buf *data, const char *name,
								 cx_ice_files *out, cx_err *err);
/* The manifest paths of a manifest list (*paths malloc'd, each too; the
 * caller frees the *n read so far whatever the outcome). */
cx_code		cx_ice_read_manifest_list(const cx_buf *data, const char *name,
									  char ***paths, uint32_t *n, cx_err *err);
/* The value of key in an Avro file's metadata, malloc'd (NULL: absent). */
cx_code		cx_ice_avro_file_meta(const cx_buf *data, const char *name,
								  const char *key, char **value, cx_err *err);

/* Writes meta as metadata file n with put-if-absent (cx_vseq_put says
 * how its outcome is settled), then the version hint if it landed. */
cx_code		cx_ice_put_metadata(cx_objstore *s, uint64_t n, json_t *meta,
								cx_vseq_outcome *outcome, cx_err *err);

/* The table's newest metadata file (cx_iceberg.c): its number and JSON;
 * 0 and NULL when the store was never published. */
cx_code		cx_ice_load_newest(cx_objstore *s, uint64_t *version,
							   json_t **meta, cx_err *err);

/* ---- table metadata (cx_iceberg_meta.c) ---- */

/* The Iceberg schema of a table (hidden columns left out) with that id
 * (the store's schema id). */
json_t	   *cx_ice_schema_json(const cx_schema *table, uint32_t schema_id);
/* Empty table metadata: no schema and no snapshot yet. */
json_t	   *cx_ice_meta_new(const char *location, const char *table_uuid);
/* Lists every schema the base version knows (its history, then the
 * current one) that the metadata lacks, and makes the base's current. */
cx_code		cx_ice_meta_set_schemas(json_t *meta, const cx_manifest *base,
									cx_err *err);

/* What a new snapshot adds to the metadata. */
typedef struct cx_ice_snapshot
{
	int64_t		snapshot_id;
	int64_t		parent_id;		/* 0: none */
	int64_t		seq;
	int64_t		timestamp_ms;
	const char *manifest_list;	/* absolute URI */
	const char *operation;		/* append, overwrite, delete */
	json_t	   *summary;		/* string values; stolen */
	const char *previous_metadata;	/* absolute URI of the file this
									 * replaces; NULL: the first */
	int64_t		previous_updated_ms;
	uint32_t	schema_id;		/* the schema its data files are read with */
} cx_ice_snapshot;

/* Adds snap as the current snapshot of meta (and to its logs). */
cx_code		cx_ice_meta_add_snapshot(json_t *meta, const cx_ice_snapshot *snap,
									 cx_err *err);

/* The current snapshot of meta (NULL: none). */
json_t	   *cx_ice_meta_current(json_t *meta);
/* ctxstore.base-version of a snapshot's summary (0: absent). */
uint64_t	cx_ice_snapshot_base_version(json_t *snapshot);
/* A summary value as an integer (0: absent). */
int64_t		cx_ice_summary_int(json_t *snapshot, const char *key);

/* ---- position deletes (cx_iceberg_deletes.c) ---- */

/*
 * Writes the position deletes of base m (its deletion vectors, tombstone
 * rows and rows before its TRUNCATE cut) as one delete file at key, paths
 * of data files being location_prefix + fragment path; *rows = 0 and no
 * file when there are none.
 */
cx_code		cx_ice_write_deletes(cx_objstore *s, const cx_manifest *m,
								 const char *location_prefix, const char *key,
								 uint64_t *rows, uint64_t *size, cx_err *err);

#endif							/* CX_ICEBERG_INT_H */
