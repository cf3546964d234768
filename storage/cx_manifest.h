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

#include <stdint.h>

#include "cx_fragment.h"
#include "cx_objstore.h"
#include "cx_schema.h"

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

typedef struct cx_manifest
{
	uint64_t	version;
	uint8_t		commit_id[16];
	int64_t		committed_at_us;	/* Unix epoch microseconds */
	char	   *operation;		/* "append", "create", ... */
	cx_schema  *schema;			/* NULL until the first data commit */
	uint32_t	nfragments;
	cx_fragment_info *fragments;
	uint32_t	nexts;
	cx_manifest_ext *exts;
} cx_manifest;

cx_manifest *cx_manifest_new(void);
void		cx_manifest_free(cx_manifest *m);
/* Deep copy (NULL on OOM). */
cx_manifest *cx_manifest_clone(const cx_manifest *m);
uint64_t	cx_manifest_rows(const cx_manifest *m);
cx_code		cx_manifest_add_fragment(cx_manifest *m, const cx_fragment_info *fi,
									 cx_err *err);
cx_code		cx_manifest_set_schema(cx_manifest *m, const cx_schema *s,
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

/* Overwrites the "_latest" hint with version.  Callers treat a failure as
 * harmless: a stale or missing hint only costs readers extra requests. */
cx_code		cx_manifest_write_hint(cx_objstore *s, uint64_t version,
								   cx_err *err);

/* Calls fn for every version present, ascending (via a listing). */
typedef bool (*cx_version_fn) (void *arg, uint64_t version);
cx_code		cx_manifest_list_versions(cx_objstore *s, cx_version_fn fn,
									  void *arg, cx_err *err);

#endif							/* CX_MANIFEST_H */
