/*
 * cx_gc_iceberg.c — garbage collection of the Iceberg table a store is
 * published as (docs/design/maintenance.md "Garbage collection", FORMAT.md
 * "Iceberg metadata").
 *
 * Snapshot expiry, as Iceberg's expire-snapshots: a snapshot is retained
 * when the base version it was published from is retained (by count,
 * interval or pin, the rule of base versions), is newer than the newest
 * base version this run listed (published while it ran), or is the current
 * one.  When some are not, GC writes the next vN.metadata.json without
 * them (snapshots and snapshot-log drop them; refs, whose main branch is
 * the current snapshot, stay).  The newest CX_GC_ICEBERG_METADATA_KEPT
 * metadata files are retained, and everything they reference: their
 * snapshots' manifest lists, manifests and the live files those list.
 * Older metadata files, and manifest lists, manifests and delete files
 * none of them references (expired snapshots', crashed publishes'), are
 * garbage once older than the grace.  The version hint always stays.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "maintenance/cx_gc_int.h"
#include "maintenance/cx_iceberg_int.h"
#include "objstore/cx_versioned.h"
#include "util/cx_clock.h"

/* Puts lost to concurrent publishes before GC gives up expiring. */
#define EXPIRE_ATTEMPTS 5

static int64_t
snapshot_id(json_t *snap)
{
	return json_integer_value(json_object_get(snap, "snapshot-id"));
}

static bool
base_retained(const cx_gc_run *run, uint64_t base)
{
	if (base > run->newest)
		return true;
	for (size_t i = 0; i < run->retained.n; i++)
		if (run->retained.v[i] == base)
			return true;
	return false;
}

static bool
snapshot_retained(const cx_gc_run *run, json_t *meta, json_t *snap)
{
	return snap == cx_ice_meta_current(meta) ||
		base_retained(run, cx_ice_snapshot_base_version(snap));
}

static bool
id_in(json_t *snaps, int64_t id)
{
	size_t		i;
	json_t	   *s;

	json_array_foreach(snaps, i, s)
		if (snapshot_id(s) == id)
		return true;
	return false;
}

/* The snapshot log after the last entry naming a snapshot no longer kept
 * (as Iceberg trims it: the log stays an unbroken history). */
static json_t *
trimmed_snapshot_log(json_t *log, json_t *kept)
{
	json_t	   *trimmed = json_array();
	size_t		from = 0;
	size_t		i;
	json_t	   *e;

	json_array_foreach(log, i, e)
		if (!id_in(kept, snapshot_id(e)))
		from = i + 1;
	for (i = from; trimmed != NULL && i < json_array_size(log); i++)
		json_array_append(trimmed, json_array_get(log, i));
	return trimmed;
}

/* The metadata log of the next file: this one appended, and only the
 * files retained with it. */
static json_t *
next_metadata_log(const cx_gc_run *run, json_t *meta)
{
	json_t	   *log = json_object_get(meta, "metadata-log");
	json_t	   *next = json_array();
	size_t		n = json_array_size(log);
	size_t		older = CX_GC_ICEBERG_METADATA_KEPT - 2;
	char		key[CX_KEY_MAX + 1];
	char	   *uri;

	cx_vseq_key(&cx_layout_iceberg_versions, run->ice_version, key);
	uri = malloc(strlen(run->store->uri) + strlen(key) + 2);
	if (uri != NULL)
		sprintf(uri, "%s/%s", run->store->uri, key);
	for (size_t i = n > older ? n - older : 0; next != NULL && i < n; i++)
		json_array_append(next, json_array_get(log, i));
	if (next != NULL &&
		(uri == NULL ||
		 json_array_append_new(next,
							   json_pack("{s:I, s:s}", "timestamp-ms",
										 json_integer_value(json_object_get(meta, "last-updated-ms")),
										 "metadata-file", uri)) != 0))
	{
		json_decref(next);
		next = NULL;
	}
	free(uri);
	return next;
}

/* The snapshots of meta the run retains (NULL: out of memory); *nexpired
 * receives how many it does not. */
static json_t *
retained_snapshots(const cx_gc_run *run, json_t *meta, uint32_t *nexpired)
{
	json_t	   *kept = json_array();
	size_t		i;
	json_t	   *s;

	*nexpired = 0;
	json_array_foreach(json_object_get(meta, "snapshots"), i, s)
	{
		if (!snapshot_retained(run, meta, s))
			(*nexpired)++;
		else if (kept == NULL || json_array_append(kept, s) != 0)
		{
			json_decref(kept);
			return NULL;
		}
	}
	return kept;
}

/* The metadata without its expired snapshots into *next; NULL when none
 * is. */
static cx_code
expired_metadata(const cx_gc_run *run, json_t *meta, json_t **next,
				 cx_err *err)
{
	uint32_t	nexpired;
	json_t	   *kept = retained_snapshots(run, meta, &nexpired);
	bool		oom = kept == NULL;

	*next = NULL;
	if (!oom && nexpired > 0)
	{
		oom = (*next = json_deep_copy(meta)) == NULL ||
			json_object_set_new(*next, "snapshot-log",
								trimmed_snapshot_log(json_object_get(meta, "snapshot-log"), kept)) ||
			json_object_set_new(*next, "metadata-log", next_metadata_log(run, meta)) ||
			json_object_set_new(*next, "last-updated-ms",
								json_integer(cx_clock_now_us() / 1000)) ||
			json_object_set(*next, "snapshots", kept);
	}
	json_decref(kept);
	if (!oom)
		return CX_OK;
	json_decref(*next);
	*next = NULL;
	return cx_err_set(err, CX_ERR_NOMEM, "out of memory expiring Iceberg snapshots");
}

/* Replaces the run's newest metadata by next, numbered n. */
static void
take_metadata(cx_gc_run *run, uint64_t n, json_t *next)
{
	json_decref(run->ice_meta);
	run->ice_meta = next;
	run->ice_version = n;
}

/*
 * Expires the snapshots the run does not retain.  A dry run only pretends
 * to have written the next metadata, so that it counts what the real run
 * would delete.  A publish that takes the next number first is read and
 * expiry tried again on it.
 */
static cx_code
expire(cx_gc_run *run, cx_err *err)
{
	for (int attempt = 0; run->ice_meta != NULL; attempt++)
	{
		cx_vseq_outcome outcome;
		json_t	   *next;
		cx_code		rc = expired_metadata(run, run->ice_meta, &next, err);

		if (rc != CX_OK || next == NULL)
			return rc;
		if (attempt == EXPIRE_ATTEMPTS)
		{
			json_decref(next);
			return cx_err_set(err, CX_ERR_CONFLICT,
							  "expiring Iceberg snapshots of %s lost the race for the next metadata version %d times",
							  run->store->uri, EXPIRE_ATTEMPTS);
		}
		outcome = CX_VSEQ_LANDED;
		rc = run->opts->dry_run ? CX_OK :
			cx_ice_put_metadata(run->store, run->ice_version + 1, next,
								&outcome, err);
		if (rc == CX_OK && outcome == CX_VSEQ_LANDED)
		{
			take_metadata(run, run->ice_version + 1, next);
			return CX_OK;
		}
		json_decref(next);
		if (rc != CX_OK)
			return rc;
		json_decref(run->ice_meta);
		run->ice_meta = NULL;
		if ((rc = cx_ice_load_newest(run->store, &run->ice_version,
									 &run->ice_meta, err)) != CX_OK)
			return rc;
	}
	return CX_OK;
}

cx_code
cx_gc_iceberg_load(cx_gc_run *run, cx_err *err)
{
	json_t	   *snaps;
	size_t		i;
	json_t	   *s;
	cx_code		rc = cx_ice_load_newest(run->store, &run->ice_version,
										&run->ice_meta, err);

	if (rc != CX_OK || run->ice_meta == NULL)
		return rc;
	snaps = json_object_get(run->ice_meta, "snapshots");
	json_array_foreach(snaps, i, s)
		if (cx_ice_snapshot_base_version(s) == 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s: Iceberg metadata v%" PRIu64 " has a snapshot naming no base version",
						  run->store->uri, run->ice_version);
	s = cx_ice_meta_current(run->ice_meta);
	run->iceberg_pin = s != NULL ? cx_ice_snapshot_base_version(s) : 0;
	return CX_OK;
}

/* ---- what the retained metadata files reference ---- */

typedef struct ice_walk
{
	cx_gc_run  *run;
	size_t		prefix_len;		/* of "<store uri>/" */
	int64_t    *seen;			/* snapshot ids walked already */
	size_t		nseen;
	cx_buf		buf;
} ice_walk;

/* Adds the key of an absolute URI of the store; one elsewhere is no
 * concern of this store's GC. */
static cx_code
add_uri(ice_walk *w, const char *uri, cx_err *err)
{
	const char *root = w->run->store->uri;

	if (uri == NULL || strncmp(uri, root, w->prefix_len - 1) != 0 ||
		uri[w->prefix_len - 1] != '/')
		return CX_OK;
	return cx_gc_refs_add(&w->run->refs, uri + w->prefix_len, err);
}

static cx_code
read_uri(ice_walk *w, const char *uri, cx_err *err)
{
	const char *root = w->run->store->uri;

	if (strncmp(uri, root, w->prefix_len - 1) != 0 || uri[w->prefix_len - 1] != '/')
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "Iceberg metadata of %s names %s, outside the store",
						  root, uri);
	return cx_obj_get(w->run->store, uri + w->prefix_len, &w->buf, err);
}

/* A manifest and the live files it lists. */
static cx_code
reference_manifest(ice_walk *w, const char *uri, cx_err *err)
{
	cx_ice_files files = {0};
	cx_code		rc = add_uri(w, uri, err);

	if (rc == CX_OK)
		rc = read_uri(w, uri, err);
	if (rc == CX_OK)
		rc = cx_ice_read_manifest(&w->buf, uri, &files, err);
	for (uint32_t i = 0; rc == CX_OK && i < files.n; i++)
		if (files.v[i].status != CX_ICE_DELETED)
			rc = add_uri(w, files.v[i].path, err);
	cx_ice_files_free(&files);
	return rc;
}

/* A snapshot's manifest list and its manifests (once per snapshot). */
static cx_code
reference_snapshot(ice_walk *w, json_t *snap, cx_err *err)
{
	const char *list = json_string_value(json_object_get(snap, "manifest-list"));
	int64_t    *seen;
	char	  **paths = NULL;
	uint32_t	n = 0;
	cx_code		rc;

	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i] == snapshot_id(snap))
			return CX_OK;
	if ((seen = realloc(w->seen, (w->nseen + 1) * sizeof(int64_t))) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	w->seen = seen;
	w->seen[w->nseen++] = snapshot_id(snap);
	if (list == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s: an Iceberg snapshot without a manifest list",
						  w->run->store->uri);
	rc = add_uri(w, list, err);
	if (rc == CX_OK)
		rc = read_uri(w, list, err);
	if (rc == CX_OK)
		rc = cx_ice_read_manifest_list(&w->buf, list, &paths, &n, err);
	for (uint32_t i = 0; i < n; i++)
	{
		if (rc == CX_OK)
			rc = reference_manifest(w, paths[i], err);
		free(paths[i]);
	}
	free(paths);
	return rc;
}

static cx_code
reference_metadata(ice_walk *w, json_t *meta, uint64_t version, cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	size_t		i;
	json_t	   *s;
	cx_code		rc;

	cx_vseq_key(&cx_layout_iceberg_versions, version, key);
	if ((rc = cx_gc_refs_add(&w->run->refs, key, err)) != CX_OK)
		return rc;
	json_array_foreach(json_object_get(meta, "snapshots"), i, s)
		if ((rc = reference_snapshot(w, s, err)) != CX_OK)
		return rc;
	return CX_OK;
}

/* An older retained metadata file; one already gone is skipped. */
static cx_code
reference_older(ice_walk *w, uint64_t version, cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	json_error_t jerr;
	json_t	   *meta;
	cx_code		rc;

	cx_vseq_key(&cx_layout_iceberg_versions, version, key);
	rc = cx_obj_get(w->run->store, key, &w->buf, err);
	if (rc == CX_ERR_NOT_FOUND)
		return CX_OK;
	if (rc != CX_OK)
		return rc;
	meta = json_loadb((const char *) w->buf.data, w->buf.len, 0, &jerr);
	if (meta == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT, "%s/%s: %s", w->run->store->uri,
						  key, jerr.text);
	rc = reference_metadata(w, meta, version, err);
	json_decref(meta);
	return rc;
}

cx_code
cx_gc_iceberg_reference(cx_gc_run *run, cx_err *err)
{
	ice_walk	w = {.run = run, .prefix_len = strlen(run->store->uri) + 1};
	cx_code		rc;

	if (run->ice_meta == NULL)
		return CX_OK;
	if ((rc = expire(run, err)) != CX_OK)
		return rc;
	run->ice_floor = run->ice_version > CX_GC_ICEBERG_METADATA_KEPT ?
		run->ice_version - CX_GC_ICEBERG_METADATA_KEPT + 1 : 1;
	cx_buf_init(&w.buf);
	rc = reference_metadata(&w, run->ice_meta, run->ice_version, err);
	for (uint64_t v = run->ice_version; rc == CX_OK && v-- > run->ice_floor;)
		rc = reference_older(&w, v, err);
	cx_buf_free(&w.buf);
	free(w.seen);
	return rc;
}

/*
 * Keys under iceberg/: metadata files below the oldest retained, and
 * manifest lists, manifests and delete files, may go; the version hint
 * and a metadata file newer than the run's newest (published while it
 * ran) stay; anything else is unknown.
 */
bool
cx_gc_iceberg_collectable(const cx_gc_run *run, const char *key,
						  bool *unknown)
{
	static const char deletes_prefix[] = CX_ICEBERG_DIR "/data/";
	static const char deletes_suffix[] = "-deletes.parquet";
	size_t		len = strlen(key);
	uint64_t	n;

	*unknown = false;
	if (strcmp(key, CX_ICEBERG_VERSION_HINT_KEY) == 0)
		return false;
	if (cx_vseq_parse(&cx_layout_iceberg_versions, key, &n))
		return n < run->ice_floor;
	if (strncmp(key, CX_ICEBERG_METADATA_PREFIX, strlen(CX_ICEBERG_METADATA_PREFIX)) == 0 &&
		len > 5 && strcmp(key + len - 5, ".avro") == 0 &&
		strchr(key + strlen(CX_ICEBERG_METADATA_PREFIX), '/') == NULL)
		return true;
	if (strncmp(key, deletes_prefix, strlen(deletes_prefix)) == 0 &&
		len > strlen(deletes_suffix) &&
		strcmp(key + len - strlen(deletes_suffix), deletes_suffix) == 0 &&
		strchr(key + strlen(deletes_prefix), '/') == NULL)
		return true;
	*unknown = true;
	return false;
}
