/*
 * cx_iceberg.c — publishing the newest base version as an Iceberg v2
 * snapshot (ctxstore/iceberg.h).
 *
 * One publish:
 *   1. finds the table's newest metadata file (version-hint.text, then
 *      probing forward; a listing when there is no hint) and stops if its
 *      current snapshot already describes this base version or a newer one;
 *   2. reads the live entries of the current snapshot's manifests, so that
 *      fragments already published stay EXISTING with the sequence numbers
 *      they were added at, new fragments are ADDED and fragments the base
 *      no longer lists are DELETED;
 *   3. writes the position deletes of the base as one new delete file
 *      (ADDED; the previous one DELETED: deletes only ever describe the
 *      base they were computed from), one data manifest and one delete
 *      manifest, and the manifest list;
 *   4. writes v<N+1>.metadata.json with put-if-absent (cx_vseq_put settles
 *      ambiguous answers by reading back), then overwrites version-hint.text.
 * A publish that finds v<N+1> taken removes the files of step 3 (nothing
 * references them) and starts again from the winner's metadata.
 *
 * Snapshots are expired, and the files only they reference deleted, by
 * garbage collection (cx_gc_iceberg.c): the base version of the current
 * snapshot is retained, and so are the files of every snapshot the newest
 * few metadata files list (docs/design/maintenance.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/cx_versioned.h"
#include "maintenance/cx_iceberg_int.h"

/* Publishes attempted before a lost race is reported (CX_ERR_CONFLICT). */
#define PUBLISH_ATTEMPTS 5
#define UUID_LEN 36

/* The table as the newest metadata file describes it. */
typedef struct table_state
{
	uint64_t	version;		/* N of vN.metadata.json; 0: no table yet */
	json_t	   *meta;
	json_t	   *current;		/* borrowed from meta; NULL: no snapshot */
} table_state;

/* One publish attempt. */
typedef struct publish
{
	cx_objstore *s;
	const cx_manifest *base;
	table_state *st;
	char	   *prefix;			/* "<store uri>/" */
	char		uuid[UUID_LEN + 1]; /* names this attempt's files */
	int64_t		snapshot_id;
	int64_t		seq;
	cx_ice_files data;			/* the data manifest's entries */
	cx_ice_files dels;			/* the delete manifest's entries */
	cx_ice_files prev;			/* live entries of the current snapshot */
	uint64_t	position_deletes;
	char		keys[4][CX_KEY_MAX + 1];	/* files written, for cleanup */
	int			nkeys;
	bool		maybe_committed;	/* the metadata put's outcome is unknown */
} publish;

/* A random (version 4) UUID string. */
static cx_code
new_uuid(char out[UUID_LEN + 1], cx_err *err)
{
	uint8_t		b[16];

	if (cx_random_bytes(b, sizeof(b), err) != CX_OK)
		return err->code;
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, UUID_LEN + 1,
			 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
			 b[10], b[11], b[12], b[13], b[14], b[15]);
	return CX_OK;
}

/* A random positive snapshot id. */
static cx_code
new_snapshot_id(int64_t *id, cx_err *err)
{
	uint64_t	v = 0;

	while (v == 0)
		if (cx_random_bytes(&v, sizeof(v), err) != CX_OK)
			return err->code;
		else
			v &= INT64_MAX;
	*id = (int64_t) v;
	return CX_OK;
}

static char *
concat(const char *a, const char *b)
{
	size_t		len = strlen(a) + strlen(b) + 1;
	char	   *s = malloc(len);

	if (s != NULL)
		snprintf(s, len, "%s%s", a, b);
	return s;
}

/* The key of an absolute URI of the store (NULL: not in the store). */
static const char *
key_of(const publish *p, const char *uri)
{
	size_t		len = strlen(p->prefix);

	return uri != NULL && strncmp(uri, p->prefix, len) == 0 ? uri + len : NULL;
}

/* ---- step 1: the current table ---- */

static void
state_free(table_state *st)
{
	json_decref(st->meta);
	memset(st, 0, sizeof(*st));
}

/* The version version-hint.text names, if that metadata file exists (0:
 * no usable hint; probing then starts from a listing). */
static uint64_t
read_text_hint(cx_objstore *s)
{
	unsigned long long n = 0;
	bool		exists = false;
	char		text[24];
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	if (cx_obj_get(s, CX_ICEBERG_VERSION_HINT_KEY, &b, &err) == CX_OK &&
		b.len < sizeof(text))
	{
		memcpy(text, b.data, b.len);
		text[b.len] = '\0';
		if (sscanf(text, "%llu", &n) != 1)
			n = 0;
	}
	cx_buf_free(&b);
	if (n > 0 && (cx_vseq_exists(s, &cx_layout_iceberg_versions, n, &exists,
								 &err) != CX_OK || !exists))
		n = 0;
	return n;
}

cx_code
cx_ice_load_newest(cx_objstore *s, uint64_t *version, json_t **meta,
				   cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	json_error_t jerr;
	cx_buf		b;

	*meta = NULL;
	if (cx_vseq_latest(s, &cx_layout_iceberg_versions,
					   CX_ICEBERG_VERSION_HINT_KEY, read_text_hint(s),
					   version, err) != CX_OK)
		return err->code;
	if (*version == 0)
		return CX_OK;
	cx_vseq_key(&cx_layout_iceberg_versions, *version, key);
	cx_buf_init(&b);
	if (cx_obj_get(s, key, &b, err) == CX_OK &&
		(*meta = json_loadb((const char *) b.data, b.len, 0, &jerr)) == NULL)
		cx_err_set(err, CX_ERR_CORRUPT, "%s/%s: %s", s->uri, key, jerr.text);
	cx_buf_free(&b);
	return *meta == NULL ? err->code : CX_OK;
}

static cx_code
load_state(cx_objstore *s, table_state *st, cx_err *err)
{
	memset(st, 0, sizeof(*st));
	if (cx_ice_load_newest(s, &st->version, &st->meta, err) != CX_OK)
		return err->code;
	if (st->meta != NULL)
		st->current = cx_ice_meta_current(st->meta);
	return CX_OK;
}

/* ---- step 2: what the current snapshot lists ---- */

static cx_code
read_object(publish *p, const char *uri, cx_buf *b, cx_err *err)
{
	const char *key = key_of(p, uri);

	if (key == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "Iceberg metadata of %s names %s, outside the store",
						  p->s->uri, uri != NULL ? uri : "(nothing)");
	return cx_obj_get(p->s, key, b, err);
}

/* The live entries of manifest uri into p->prev. */
static cx_code
read_live_entries(publish *p, const char *uri, cx_err *err)
{
	cx_ice_files all = {0};
	cx_buf		b;
	cx_code		rc;

	cx_buf_init(&b);
	rc = read_object(p, uri, &b, err);
	if (rc == CX_OK)
		rc = cx_ice_read_manifest(&b, uri, &all, err);
	for (uint32_t i = 0; rc == CX_OK && i < all.n; i++)
		if (all.v[i].status != CX_ICE_DELETED)
			rc = cx_ice_files_add(&p->prev, &all.v[i], err);
	cx_ice_files_free(&all);
	cx_buf_free(&b);
	return rc;
}

static cx_code
read_previous(publish *p, cx_err *err)
{
	const char *list = json_string_value(json_object_get(p->st->current,
														 "manifest-list"));
	char	  **paths = NULL;
	uint32_t	n = 0;
	cx_buf		b;
	cx_code		rc;

	if (p->st->current == NULL)
		return CX_OK;
	cx_buf_init(&b);
	rc = read_object(p, list, &b, err);
	if (rc == CX_OK)
		rc = cx_ice_read_manifest_list(&b, list, &paths, &n, err);
	for (uint32_t i = 0; i < n; i++)
	{
		if (rc == CX_OK)
			rc = read_live_entries(p, paths[i], err);
		free(paths[i]);
	}
	free(paths);
	cx_buf_free(&b);
	return rc;
}

/* ---- step 3: the new snapshot's files ---- */

static const cx_ice_file *
find_prev(const publish *p, const char *path, int content)
{
	for (uint32_t i = 0; i < p->prev.n; i++)
		if (p->prev.v[i].content == content &&
			strcmp(p->prev.v[i].path, path) == 0)
			return &p->prev.v[i];
	return NULL;
}

static cx_code
add_entry(publish *p, cx_ice_files *to, const cx_ice_file *e, int status,
		  cx_err *err)
{
	cx_ice_file f = *e;

	f.status = status;
	if (status != CX_ICE_EXISTING)
		f.snapshot_id = p->snapshot_id;
	if (status == CX_ICE_ADDED)
		f.seq = f.file_seq = p->seq;
	return cx_ice_files_add(to, &f, err);
}

/* Whether f of the current snapshot is still listed in to. */
static bool
listed(const cx_ice_files *to, const cx_ice_file *f)
{
	for (uint32_t i = 0; i < to->n; i++)
		if (strcmp(to->v[i].path, f->path) == 0)
			return true;
	return false;
}

/* Previous entries of content that to no longer lists: DELETED. */
static cx_code
add_removed(publish *p, cx_ice_files *to, int content, cx_err *err)
{
	uint32_t	nlive = to->n;

	for (uint32_t i = 0; i < p->prev.n; i++)
	{
		const cx_ice_file *f = &p->prev.v[i];
		cx_ice_files live = {to->v, nlive, nlive};

		if (f->content == content && !listed(&live, f) &&
			add_entry(p, to, f, CX_ICE_DELETED, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

static cx_code
build_data_entries(publish *p, cx_err *err)
{
	for (uint32_t i = 0; i < p->base->nfragments; i++)
	{
		const cx_fragment_info *fi = &p->base->fragments[i];
		char	   *path = concat(p->prefix, fi->path);
		const cx_ice_file *old = path != NULL ? find_prev(p, path, CX_ICE_DATA) : NULL;
		cx_ice_file f = {.content = CX_ICE_DATA, .path = path,
		.records = (int64_t) fi->rows, .size = (int64_t) fi->size};
		cx_code		rc;

		if (path == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
		rc = old != NULL ? add_entry(p, &p->data, old, CX_ICE_EXISTING, err) :
			add_entry(p, &p->data, &f, CX_ICE_ADDED, err);
		free(path);
		if (rc != CX_OK)
			return rc;
	}
	return add_removed(p, &p->data, CX_ICE_DATA, err);
}

static cx_code
build_delete_entries(publish *p, cx_err *err)
{
	char	   *key = p->keys[p->nkeys];
	uint64_t	size;
	cx_ice_file f = {.content = CX_ICE_POSITION_DELETES};
	cx_code		rc;

	cx_layout_iceberg_deletes(p->uuid, key);
	if (cx_ice_write_deletes(p->s, p->base, p->prefix, key,
							 &p->position_deletes, &size, err) != CX_OK)
		return err->code;
	if (p->position_deletes > 0)
	{
		p->nkeys++;
		f.path = concat(p->prefix, key);
		f.records = (int64_t) p->position_deletes;
		f.size = (int64_t) size;
		rc = f.path == NULL ? cx_err_set(err, CX_ERR_NOMEM, "out of memory") :
			add_entry(p, &p->dels, &f, CX_ICE_ADDED, err);
		free(f.path);
		if (rc != CX_OK)
			return rc;
	}
	return add_removed(p, &p->dels, CX_ICE_POSITION_DELETES, err);
}

/* The counts of one manifest, for its manifest-list entry. */
static void
count_entries(const publish *p, const cx_ice_files *fs, cx_ice_manifest_ref *r)
{
	r->seq = r->min_seq = p->seq;
	r->added_snapshot_id = p->snapshot_id;
	for (uint32_t i = 0; i < fs->n; i++)
	{
		const cx_ice_file *f = &fs->v[i];

		if (f->status == CX_ICE_ADDED)
			r->added_files++, r->added_rows += f->records;
		else if (f->status == CX_ICE_EXISTING)
			r->existing_files++, r->existing_rows += f->records;
		else
			r->deleted_files++, r->deleted_rows += f->records;
		if (f->status != CX_ICE_DELETED && f->seq >= 0 && f->seq < r->min_seq)
			r->min_seq = f->seq;
	}
}

/* Puts bytes at a fresh key of this attempt (recorded for cleanup). */
static cx_code
put_new(publish *p, const char *key, const cx_buf *bytes, cx_err *err)
{
	if (cx_obj_put(p->s, key, bytes->data, bytes->len, CX_PUT_IF_ABSENT,
				   err) != CX_OK)
		return err->code;
	strcpy(p->keys[p->nkeys++], key);
	return CX_OK;
}

static cx_code
write_manifest(publish *p, const cx_ice_files *fs, int content, int k,
			   const char *schema_json, cx_ice_manifest_ref *ref, cx_err *err)
{
	cx_ice_manifest_meta meta = {schema_json, p->base->schema_id, content};
	char		key[CX_KEY_MAX + 1];
	cx_buf		b;
	cx_code		rc;

	memset(ref, 0, sizeof(*ref));
	cx_layout_iceberg_manifest(p->uuid, k, key);
	cx_buf_init(&b);
	rc = cx_ice_write_manifest(fs, &meta, &b, err);
	if (rc == CX_OK)
		rc = put_new(p, key, &b, err);
	ref->path = concat(p->prefix, key);
	ref->length = (int64_t) b.len;
	ref->content = content;
	count_entries(p, fs, ref);
	cx_buf_free(&b);
	if (rc == CX_OK && ref->path == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	return rc;
}

/* The manifests (those with entries) and the manifest list; *list_uri
 * malloc'd. */
static cx_code
write_manifests(publish *p, const char *schema_json, char **list_uri,
				cx_err *err)
{
	const cx_ice_files *sets[2] = {&p->data, &p->dels};
	cx_ice_manifest_ref refs[2];
	cx_ice_list_meta meta = {p->snapshot_id, 0, p->seq};
	char		key[CX_KEY_MAX + 1];
	uint32_t	n = 0;
	cx_buf		b;
	cx_code		rc = CX_OK;

	if (p->st->current != NULL)
		meta.parent_snapshot_id = json_integer_value(json_object_get(p->st->current,
																	 "snapshot-id"));
	for (int c = 0; rc == CX_OK && c < 2; c++)
		if (sets[c]->n > 0)
			rc = write_manifest(p, sets[c], c, c, schema_json, &refs[n++], err);
	cx_buf_init(&b);
	if (rc == CX_OK)
		rc = cx_ice_write_manifest_list(refs, n, &meta, &b, err);
	cx_layout_iceberg_manifest_list(p->snapshot_id, p->uuid, key);
	if (rc == CX_OK)
		rc = put_new(p, key, &b, err);
	if (rc == CX_OK && (*list_uri = concat(p->prefix, key)) == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		free(refs[i].path);
	cx_buf_free(&b);
	return rc;
}

/* ---- the snapshot ---- */

typedef struct totals
{
	int64_t		files;
	int64_t		records;
	int64_t		bytes;
	int64_t		added_files;
	int64_t		added_records;
	int64_t		deleted_files;
	int64_t		deleted_records;
} totals;

static totals
sum(const cx_ice_files *fs)
{
	totals		t = {0};

	for (uint32_t i = 0; i < fs->n; i++)
	{
		const cx_ice_file *f = &fs->v[i];

		if (f->status != CX_ICE_DELETED)
			t.files++, t.records += f->records, t.bytes += f->size;
		if (f->status == CX_ICE_ADDED)
			t.added_files++, t.added_records += f->records;
		if (f->status == CX_ICE_DELETED)
			t.deleted_files++, t.deleted_records += f->records;
	}
	return t;
}

static void
put_count(json_t *summary, const char *key, int64_t v)
{
	char		text[24];

	snprintf(text, sizeof(text), "%lld", (long long) v);
	json_object_set_new(summary, key, json_string(text));
}

/*
 * append: only data files added; delete: no data file added; overwrite:
 * both.  The delete file is rewritten whole each time, so deletes count as
 * a change only when their number changes.
 */
static const char *
operation(const totals *d, const totals *x)
{
	bool		deletes_changed = x->added_records != x->deleted_records;

	if (d->deleted_files == 0 && !deletes_changed)
		return "append";
	return d->added_files == 0 ? "delete" : "overwrite";
}

static json_t *
summary_json(const publish *p, const char **op)
{
	totals		d = sum(&p->data);
	totals		x = sum(&p->dels);
	/* Not json_object(): the PostgreSQL server has a function of that name
	 * (the SQL json_object), which the dynamic linker binds the extension's
	 * call to; json_pack builds the object inside libjansson. */
	json_t	   *s = json_pack("{}");

	*op = operation(&d, &x);
	json_object_set_new(s, "operation", json_string(*op));
	put_count(s, "added-data-files", d.added_files);
	put_count(s, "deleted-data-files", d.deleted_files);
	put_count(s, "added-records", d.added_records);
	put_count(s, "deleted-records", d.deleted_records);
	put_count(s, "added-delete-files", x.added_files);
	put_count(s, "removed-delete-files", x.deleted_files);
	put_count(s, "added-position-deletes", x.added_records);
	put_count(s, "removed-position-deletes", x.deleted_records);
	put_count(s, "total-data-files", d.files);
	put_count(s, "total-delete-files", x.files);
	put_count(s, "total-records", d.records);
	put_count(s, "total-position-deletes", x.records);
	put_count(s, "total-equality-deletes", 0);
	put_count(s, "total-files-size", d.bytes + x.bytes);
	put_count(s, "ctxstore.base-version", (int64_t) p->base->version);
	return s;
}

/* The metadata the new snapshot is added to: the current one, or a new
 * table. */
static cx_code
new_metadata(publish *p, json_t **out, cx_err *err)
{
	char		table_uuid[UUID_LEN + 1];
	char	   *location;

	if (p->st->meta != NULL)
		*out = json_deep_copy(p->st->meta);
	else
	{
		location = concat(p->prefix, CX_ICEBERG_DIR);
		if (location == NULL || new_uuid(table_uuid, err) != CX_OK)
		{
			free(location);
			return location == NULL ? cx_err_set(err, CX_ERR_NOMEM, "out of memory") : err->code;
		}
		*out = cx_ice_meta_new(location, table_uuid);
		free(location);
	}
	if (*out == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory building Iceberg metadata");
	return cx_ice_meta_set_schemas(*out, p->base, err);
}

static cx_code
add_snapshot(publish *p, json_t *meta, const char *list_uri, cx_err *err)
{
	char		prev_key[CX_KEY_MAX + 1];
	char	   *prev_uri = NULL;
	cx_ice_snapshot snap = {
		.snapshot_id = p->snapshot_id,
		.seq = p->seq,
		/* The snapshot is the table as of the base's commit, so that time
		 * travel by timestamp finds the base versions' times. */
		.timestamp_ms = p->base->committed_at_us / 1000,
		.manifest_list = list_uri,
		.previous_updated_ms = json_integer_value(json_object_get(meta, "last-updated-ms")),
		.schema_id = p->base->schema_id,
	};
	cx_code		rc;

	if (snap.timestamp_ms < snap.previous_updated_ms)
		snap.timestamp_ms = snap.previous_updated_ms;
	if (p->st->current != NULL)
		snap.parent_id = json_integer_value(json_object_get(p->st->current,
															"snapshot-id"));
	if (p->st->version > 0)
	{
		cx_vseq_key(&cx_layout_iceberg_versions, p->st->version, prev_key);
		if ((prev_uri = concat(p->prefix, prev_key)) == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	snap.previous_metadata = prev_uri;
	snap.summary = summary_json(p, &snap.operation);
	rc = cx_ice_meta_add_snapshot(meta, &snap, err);
	free(prev_uri);
	return rc;
}

cx_code
cx_ice_put_metadata(cx_objstore *s, uint64_t n, json_t *meta,
					cx_vseq_outcome *outcome, cx_err *err)
{
	char	   *text = json_dumps(meta, JSON_INDENT(2));
	cx_buf		bytes = {(uint8_t *) text, text != NULL ? strlen(text) : 0, 0, false};
	cx_buf		taken;
	char		hint[24];
	cx_err		ignored;
	cx_code		rc;

	*outcome = CX_VSEQ_FAILED;
	if (text == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory writing Iceberg metadata");
	cx_buf_init(&taken);
	rc = cx_vseq_put(s, &cx_layout_iceberg_versions, n, &bytes, &taken,
					 outcome, err);
	cx_buf_free(&taken);
	free(text);
	if (rc != CX_OK || *outcome != CX_VSEQ_LANDED)
		return rc;
	/* A stale hint only makes readers and the next publish probe further. */
	snprintf(hint, sizeof(hint), "%llu", (unsigned long long) n);
	(void) cx_obj_put(s, CX_ICEBERG_VERSION_HINT_KEY, hint, strlen(hint),
					  CX_PUT_OVERWRITE, &ignored);
	return CX_OK;
}

/* Step 4: v<N+1>.metadata.json; CX_ERR_EXISTS when another publish took
 * it. */
static cx_code
commit_metadata(publish *p, json_t *meta, cx_err *err)
{
	cx_vseq_outcome outcome;
	cx_code		rc = cx_ice_put_metadata(p->s, p->st->version + 1, meta,
										 &outcome, err);

	p->maybe_committed = outcome == CX_VSEQ_UNKNOWN;
	if (rc == CX_OK && outcome == CX_VSEQ_TAKEN)
		return CX_ERR_EXISTS;
	return rc;
}

/* Removes what a publish that did not commit wrote (best effort: the
 * files are unreferenced either way).  Not after a metadata put whose
 * outcome is unknown: it may still land, referencing them. */
static void
remove_written(publish *p)
{
	cx_err		ignored;

	for (int i = 0; i < p->nkeys; i++)
		(void) cx_obj_delete(p->s, p->keys[i], &ignored);
}

static void
fill_result(cx_objstore *s, uint64_t version, json_t *snapshot,
			cx_iceberg_result *res)
{
	char		key[CX_KEY_MAX + 1];

	res->metadata_version = version;
	cx_vseq_key(&cx_layout_iceberg_versions, version, key);
	free(res->metadata_location);
	res->metadata_location = malloc(strlen(s->uri) + strlen(key) + 2);
	if (res->metadata_location != NULL)
		sprintf(res->metadata_location, "%s/%s", s->uri, key);
	res->snapshot_id = json_integer_value(json_object_get(snapshot, "snapshot-id"));
	res->base_version = cx_ice_snapshot_base_version(snapshot);
	res->data_files = (uint32_t) cx_ice_summary_int(snapshot, "total-data-files");
	res->records = (uint64_t) cx_ice_summary_int(snapshot, "total-records");
	res->delete_files = (uint32_t) cx_ice_summary_int(snapshot, "total-delete-files");
	res->position_deletes = (uint64_t) cx_ice_summary_int(snapshot, "total-position-deletes");
}

static cx_code
publish_once(publish *p, cx_iceberg_result *res, cx_err *err)
{
	json_t	   *meta = NULL;
	json_t	   *schema = cx_ice_schema_json(p->base->schema, p->base->schema_id);
	char	   *schema_text = schema != NULL ? json_dumps(schema, JSON_COMPACT) : NULL;
	char	   *list_uri = NULL;
	cx_code		rc = schema_text != NULL ? CX_OK :
		cx_err_set(err, CX_ERR_NOMEM, "out of memory");

	p->seq = json_integer_value(json_object_get(p->st->meta, "last-sequence-number")) + 1;
	if (rc == CX_OK &&
		(rc = new_uuid(p->uuid, err)) == CX_OK &&
		(rc = new_snapshot_id(&p->snapshot_id, err)) == CX_OK &&
		(rc = read_previous(p, err)) == CX_OK &&
		(rc = build_data_entries(p, err)) == CX_OK &&
		(rc = build_delete_entries(p, err)) == CX_OK &&
		(rc = write_manifests(p, schema_text, &list_uri, err)) == CX_OK &&
		(rc = new_metadata(p, &meta, err)) == CX_OK &&
		(rc = add_snapshot(p, meta, list_uri, err)) == CX_OK)
		rc = commit_metadata(p, meta, err);
	if (rc == CX_OK)
	{
		res->published = true;
		fill_result(p->s, p->st->version + 1, cx_ice_meta_current(meta), res);
	}
	else if (!p->maybe_committed)
		remove_written(p);
	json_decref(meta);
	json_decref(schema);
	free(schema_text);
	free(list_uri);
	return rc;
}

static void
publish_free(publish *p)
{
	cx_ice_files_free(&p->data);
	cx_ice_files_free(&p->dels);
	cx_ice_files_free(&p->prev);
	free(p->prefix);
}

/* One attempt on the table as it is now: nothing when it already
 * describes base, else CX_ERR_EXISTS if another publish commits first. */
static cx_code
attempt(cx_objstore *s, const cx_manifest *base, cx_iceberg_result *res,
		cx_err *err)
{
	table_state st;
	publish		p = {.s = s, .base = base, .st = &st};
	cx_code		rc;

	if (load_state(s, &st, err) != CX_OK)
		return err->code;
	if (st.current != NULL && cx_ice_snapshot_base_version(st.current) >= base->version)
	{
		fill_result(s, st.version, st.current, res);
		state_free(&st);
		return CX_OK;
	}
	p.prefix = concat(s->uri, "/");
	rc = p.prefix != NULL ? publish_once(&p, res, err) :
		cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	publish_free(&p);
	state_free(&st);
	return rc;
}

cx_code
cx_iceberg_publish(cx_objstore *s, cx_iceberg_result *res, cx_err *err)
{
	cx_manifest *base;
	cx_code		rc = CX_ERR_EXISTS;

	memset(res, 0, sizeof(*res));
	if (cx_manifest_load_latest(s, &base, err) != CX_OK)
		return err->code;
	if (base == NULL || base->schema == NULL)
	{
		cx_manifest_free(base);
		return CX_OK;
	}
	for (int i = 0; rc == CX_ERR_EXISTS && i < PUBLISH_ATTEMPTS; i++)
		rc = attempt(s, base, res, err);
	if (rc == CX_ERR_EXISTS)
		rc = cx_err_set(err, CX_ERR_CONFLICT,
						"publishing %s as Iceberg lost the race for the next metadata version %d times",
						s->uri, PUBLISH_ATTEMPTS);
	cx_manifest_free(base);
	return rc;
}

void
cx_iceberg_result_free(cx_iceberg_result *res)
{
	free(res->metadata_location);
	res->metadata_location = NULL;
}
