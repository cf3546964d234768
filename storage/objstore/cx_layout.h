/*
 * cx_layout.h — the names of a store's objects: every key the engine
 * writes or reads is built here, and cx_object_parse (ctxstore/layout.h)
 * takes any key apart again.  docs/FORMAT.md "Store layout" lists them.
 *
 * Numbered objects (base versions, shard-manifest versions, WAL entries)
 * form sequences "<prefix><n as 20 digits><suffix>": zero-padded so that a
 * listing, in byte order, is in numeric order.  cx_versioned.h does the
 * I/O on such sequences.
 *
 * Key buffers hold CX_KEY_MAX + 1 bytes unless said otherwise.
 */
#ifndef CX_LAYOUT_H
#define CX_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/layout.h"
#include "objstore/cx_objstore.h"

#define CX_VSEQ_DIGITS 20

#define CX_VERSIONS_PREFIX "_versions/"
#define CX_LATEST_HINT_KEY "_latest"
#define CX_SHARDS_PREFIX "_shards/"
/* The dirty markers of every shard, found by one listing
 * (memwal/cx_shard_dirty.c). */
#define CX_DIRTY_PREFIX "_dirty/"

#define CX_FRAGMENT_PREFIX "data/"
#define CX_FRAGMENT_SUFFIX ".parquet"
/* A fragment key and its NUL. */
#define CX_FRAGMENT_KEY_SIZE \
	(sizeof(CX_FRAGMENT_PREFIX) - 1 + 2 * CX_FRAGMENT_ID_LEN + sizeof(CX_FRAGMENT_SUFFIX))

/* The retention records of garbage collection, a sequence
 * "_gc/<20 digits>.retention" (maintenance/cx_gc_record.c). */
#define CX_GC_RECORD_PREFIX "_gc/"

/* The lease that lets one compaction at a time run on a store
 * (maintenance/cx_compact_lease.c). */
#define CX_COMPACTION_LEASE_KEY "_compaction/lease"

#define CX_INDEX_SEGMENT_PREFIX "index/"
#define CX_INDEX_SEGMENT_SUFFIX ".cxk"
/* An index segment key and its NUL. */
#define CX_INDEX_SEGMENT_KEY_SIZE \
	(sizeof(CX_INDEX_SEGMENT_PREFIX) - 1 + 2 * CX_FRAGMENT_ID_LEN + sizeof(CX_INDEX_SEGMENT_SUFFIX))

/* What a temporary name adds to the name it stands for: a leading '.' and
 * CX_TEMP_TAG with 16 hex digits after it. */
#define CX_TEMP_TAG ".tmp."
#define CX_TEMP_RANDOM_LEN 8
#define CX_TEMP_EXTRA_LEN (1 + sizeof(CX_TEMP_TAG) - 1 + 2 * CX_TEMP_RANDOM_LEN)

typedef struct cx_vseq
{
	const char *prefix;			/* "_shards/a/_versions/" */
	const char *suffix;			/* ".shard" */
	/* n in plain decimal (no leading zeros) rather than 20 digits: the
	 * Iceberg metadata files, whose names other engines expect so. */
	bool		unpadded;
} cx_vseq;

/* "<prefix><n as 20 digits (or plain)><suffix>". */
void		cx_vseq_key(const cx_vseq *q, uint64_t n, char *key);
/* Parses a key of the sequence; false for anything else (temporary files,
 * other objects under the prefix) and for 0. */
bool		cx_vseq_parse(const cx_vseq *q, const char *key, uint64_t *n);

/* The sequences of the layout.  prefix (CX_KEY_MAX + 1 bytes) receives the
 * prefix q points to; shard_id must be valid. */
extern const cx_vseq cx_layout_base_versions;
void		cx_layout_shard_versions(const char *shard_id, char *prefix,
									 cx_vseq *q);
void		cx_layout_wal(const char *shard_id, char *prefix, cx_vseq *q);
/* "_gc/<20 digits>.retention": what garbage collection decided to retain. */
extern const cx_vseq cx_layout_gc_records;

/* "_dirty/<shard_id>.<20 digits>.dirty": shard_id's dirty markers, numbered
 * by the shard-manifest version each one precedes; all in one directory so
 * that one listing finds them.  The prefix "_dirty/<shard_id>." also
 * matches the markers of longer ids ("a." those of "a.b"). */
void		cx_layout_dirty_markers(const char *shard_id, char *prefix,
									cx_vseq *q);

/* "_shards/<shard_id>/_latest". */
void		cx_layout_shard_hint(const char *shard_id, char *key);

/* "data/<id as 32 lowercase hex>.parquet" into key (CX_FRAGMENT_KEY_SIZE). */
void		cx_layout_fragment(const uint8_t id[CX_FRAGMENT_ID_LEN], char *key);

/* "index/<id as 32 lowercase hex>.cxk" into key (CX_INDEX_SEGMENT_KEY_SIZE). */
void		cx_layout_index_segment(const uint8_t id[CX_FRAGMENT_ID_LEN],
									char *key);

/*
 * The Iceberg table a store is published as (maintenance/cx_iceberg.h):
 * its location is "<store>/iceberg"; metadata files, manifest lists and
 * manifests under "iceberg/metadata/", position-delete files under
 * "iceberg/data/".  uuid is a 36-character UUID string.
 */
#define CX_ICEBERG_DIR "iceberg"
#define CX_ICEBERG_METADATA_PREFIX "iceberg/metadata/"
#define CX_ICEBERG_VERSION_HINT_KEY "iceberg/metadata/version-hint.text"

/* "iceberg/metadata/v<n>.metadata.json": an unpadded sequence. */
extern const cx_vseq cx_layout_iceberg_versions;
/* "iceberg/metadata/snap-<snapshot_id>-<uuid>.avro". */
void		cx_layout_iceberg_manifest_list(int64_t snapshot_id,
											const char *uuid, char *key);
/* "iceberg/metadata/<uuid>-m<k>.avro". */
void		cx_layout_iceberg_manifest(const char *uuid, int k, char *key);
/* "iceberg/data/<uuid>-deletes.parquet". */
void		cx_layout_iceberg_deletes(const char *uuid, char *key);

/* Whether shard_id is [A-Za-z0-9._-]{1,128} and not "." or "..": one safe
 * key segment. */
bool		cx_layout_shard_id_ok(const char *shard_id);

/*
 * The temporary name an object store writes "<dir>/<name>" under before
 * publishing it: "<dir>/.<name>.tmp.<random as 16 hex>".  path may be a key
 * or a file path; out holds strlen(path) + CX_TEMP_EXTRA_LEN + 1 bytes.
 */
void		cx_layout_temporary(const char *path,
								const uint8_t random[CX_TEMP_RANDOM_LEN],
								char *out);
/* Whether the last segment of path has the shape of a temporary name. */
bool		cx_layout_is_temporary(const char *path);

#endif							/* CX_LAYOUT_H */
