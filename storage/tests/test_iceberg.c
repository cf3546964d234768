/*
 * test_iceberg.c — publishing a store as an Iceberg v2 table
 * (ctxstore/iceberg.h): the metadata JSON's fields, the Avro manifests and
 * manifest list read back with libavro, the position deletes (the table
 * rebuilt from the data files minus them equals a ctxstore scan), one
 * snapshot per base version (idempotence), a second publish after more
 * commits, and a publish that loses the race for the next metadata file.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ctxstore/lifecycle.h"
#include "maintenance/cx_iceberg_int.h"
#include "merge/cx_merge.h"
#include "objstore/cx_versioned.h"
#include "cx_test.h"
#include "mw_util.h"

static cx_code
merge_all(cx_objstore *s, cx_shardwriter *w, cx_err *err)
{
	cx_merge_result res;

	if (cx_merge_shard(s, cx_sw_manifest(w)->shard_id, NULL, &res, err) != CX_OK)
		return err->code;
	return cx_sw_drain_through(w, res.merged_through, err);
}

/* A store with puts, an update and a delete, merged: a base whose first
 * fragment has deletion-vector entries and whose second has a tombstone. */
static cx_code
build_store(cx_objstore *s, cx_err *err)
{
	const mw_op change[] = {{CX_ROW_PUT, "k3", 30}, {CX_ROW_DELETE, "k2", 0},
	{CX_ROW_DELETE, "nobody", 0}};
	cx_shardwriter *w;

	if (mw_writer(s, "a", true, &w, err) != CX_OK ||
		mw_put(w, "k", 0, 6, 1, true, err) != CX_OK ||
		merge_all(s, w, err) != CX_OK ||
		mw_append(w, change, 3, true, err) != CX_OK ||
		merge_all(s, w, err) != CX_OK)
		return err->code;
	return cx_sw_close(w, false, err);
}

static json_t *
load_json(cx_objstore *s, const char *key)
{
	json_error_t jerr;
	json_t	   *j = NULL;
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	if (cx_obj_get(s, key, &b, &err) == CX_OK)
		j = json_loadb((const char *) b.data, b.len, 0, &jerr);
	cx_buf_free(&b);
	return j;
}

static json_t *
load_metadata(cx_objstore *s, uint64_t n)
{
	char		key[CX_KEY_MAX + 1];

	cx_vseq_key(&cx_layout_iceberg_versions, n, key);
	return load_json(s, key);
}

/* The object an absolute URI of store s names, read into b. */
static cx_code
get_uri(cx_objstore *s, const char *uri, cx_buf *b, cx_err *err)
{
	size_t		len = strlen(s->uri);

	if (strncmp(uri, s->uri, len) != 0 || uri[len] != '/')
		return cx_err_set(err, CX_ERR_INVALID, "%s is not in the store", uri);
	return cx_obj_get(s, uri + len + 1, b, err);
}

/* Every entry of every manifest of the current snapshot of meta. */
static cx_code
read_entries(cx_objstore *s, json_t *meta, cx_ice_files *out, cx_err *err)
{
	json_t	   *cur = cx_ice_meta_current(meta);
	const char *list = json_string_value(json_object_get(cur, "manifest-list"));
	char	  **paths = NULL;
	uint32_t	n = 0;
	cx_buf		b;
	cx_code		rc;

	cx_buf_init(&b);
	rc = list != NULL ? get_uri(s, list, &b, err) :
		cx_err_set(err, CX_ERR_NOT_FOUND, "no current snapshot");
	if (rc == CX_OK)
		rc = cx_ice_read_manifest_list(&b, list, &paths, &n, err);
	for (uint32_t i = 0; i < n; i++)
	{
		if (rc == CX_OK && (rc = get_uri(s, paths[i], &b, err)) == CX_OK)
			rc = cx_ice_read_manifest(&b, paths[i], out, err);
		free(paths[i]);
	}
	free(paths);
	cx_buf_free(&b);
	return rc;
}

static const cx_ice_file *
live_delete_file(const cx_ice_files *fs)
{
	for (uint32_t i = 0; i < fs->n; i++)
		if (fs->v[i].content == CX_ICE_POSITION_DELETES &&
			fs->v[i].status != CX_ICE_DELETED)
			return &fs->v[i];
	return NULL;
}

/* The (file_path, pos) rows of a delete file. */
typedef struct posdel
{
	char		path[CX_KEY_MAX + 1];
	int64_t		pos;
} posdel;

static cx_code
read_deletes(cx_objstore *s, const cx_ice_file *f, posdel *out, uint32_t max,
			 uint32_t *n, cx_err *err)
{
	cx_fragr   *r;
	cx_rowgroup *g;
	cx_datum	d;

	*n = 0;
	if (cx_fragr_open(s, f->path + strlen(s->uri) + 1, 0, &r, err) != CX_OK)
		return err->code;
	for (uint32_t gi = 0; gi < cx_fragr_num_groups(r); gi++)
	{
		if (cx_fragr_read_group(r, gi, NULL, &g, err) != CX_OK)
			break;
		for (uint32_t i = 0; i < cx_rowgroup_rows(g) && *n < max; i++, (*n)++)
		{
			cx_colvec_get(cx_rowgroup_column(g, 0), i, &d);
			snprintf(out[*n].path, sizeof(out[*n].path), "%.*s",
					 (int) d.v.bytes.len, (const char *) d.v.bytes.ptr);
			cx_colvec_get(cx_rowgroup_column(g, 1), i, &d);
			out[*n].pos = d.v.i64;
		}
		cx_rowgroup_free(g);
	}
	cx_fragr_close(r);
	return err->code == CX_OK ? CX_OK : err->code;
}

static bool
deleted(const posdel *dels, uint32_t n, const char *path, int64_t pos)
{
	for (uint32_t i = 0; i < n; i++)
		if (dels[i].pos == pos && strcmp(dels[i].path, path) == 0)
			return true;
	return false;
}

/*
 * The ids the Iceberg table holds: the id column of every live data file,
 * minus the position deletes, appended to ids (as "id=v;" text, sorted by
 * the caller's comparison); what an external reader sees.
 */
#define MAX_ROWS 64

typedef struct table_rows
{
	char		row[MAX_ROWS][160];
	uint32_t	n;
} table_rows;

static int
by_text(const void *a, const void *b)
{
	return strcmp(a, b);
}

static cx_code
rebuild(cx_objstore *s, const cx_ice_files *fs, const posdel *dels,
		uint32_t ndels, table_rows *out, cx_err *err)
{
	out->n = 0;
	for (uint32_t f = 0; f < fs->n; f++)
	{
		const cx_ice_file *e = &fs->v[f];
		cx_fragr   *r;
		uint64_t	pos = 0;

		if (e->content != CX_ICE_DATA || e->status == CX_ICE_DELETED)
			continue;
		if (cx_fragr_open(s, e->path + strlen(s->uri) + 1, 0, &r, err) != CX_OK)
			return err->code;
		for (uint32_t gi = 0; gi < cx_fragr_num_groups(r); gi++)
		{
			cx_rowgroup *g;

			if (cx_fragr_read_group(r, gi, NULL, &g, err) != CX_OK)
				return err->code;
			for (uint32_t i = 0; i < cx_rowgroup_rows(g); i++, pos++)
			{
				cx_datum	id,
							v;

				if (deleted(dels, ndels, e->path, (int64_t) pos) || out->n == MAX_ROWS)
					continue;
				cx_colvec_get(cx_rowgroup_column(g, 0), i, &id);
				cx_colvec_get(cx_rowgroup_column(g, 1), i, &v);
				snprintf(out->row[out->n++], sizeof(out->row[0]), "%.*s=%lld",
						 (int) id.v.bytes.len, (const char *) id.v.bytes.ptr,
						 (long long) v.v.i64);
			}
			cx_rowgroup_free(g);
		}
		cx_fragr_close(r);
	}
	qsort(out->row, out->n, sizeof(out->row[0]), by_text);
	return CX_OK;
}

/* What a ctxstore scan returns, in the same form. */
static cx_code
scanned(cx_objstore *s, table_rows *out, cx_err *err)
{
	mw_rows		r;

	if (mw_scan(s, NULL, &r, err) != CX_OK)
		return err->code;
	out->n = 0;
	for (uint32_t i = 0; i < r.n && i < MAX_ROWS; i++)
		snprintf(out->row[out->n++], sizeof(out->row[0]), "%s=%lld", r.r[i].id,
				 (long long) r.r[i].v);
	mw_rows_free(&r);
	qsort(out->row, out->n, sizeof(out->row[0]), by_text);
	return CX_OK;
}

/* The Iceberg table of s as an external reader rebuilds it equals what a
 * scan returns. */
static void
check_rebuild(cx_objstore *s, json_t *meta)
{
	cx_ice_files fs = {0};
	posdel		dels[MAX_ROWS];
	uint32_t	ndels = 0;
	table_rows	ice,
				ctx;
	cx_err		err = {0};
	const cx_ice_file *df;

	REQUIRE_OK(read_entries(s, meta, &fs, &err), &err);
	df = live_delete_file(&fs);
	if (df != NULL)
	{
		REQUIRE_OK(read_deletes(s, df, dels, MAX_ROWS, &ndels, &err), &err);
		CHECK((int64_t) ndels == df->records);
		for (uint32_t i = 1; i < ndels; i++)
			CHECK(strcmp(dels[i - 1].path, dels[i].path) < 0 ||
				  (strcmp(dels[i - 1].path, dels[i].path) == 0 &&
				   dels[i - 1].pos < dels[i].pos));
	}
	REQUIRE_OK(rebuild(s, &fs, dels, ndels, &ice, &err), &err);
	REQUIRE_OK(scanned(s, &ctx, &err), &err);
	CHECK(ice.n == ctx.n);
	for (uint32_t i = 0; i < ice.n && i < ctx.n; i++)
		CHECK(strcmp(ice.row[i], ctx.row[i]) == 0);
	cx_ice_files_free(&fs);
}

static const char *
jstr(json_t *j, const char *key)
{
	const char *v = json_string_value(json_object_get(j, key));

	return v != NULL ? v : "";
}

static json_int_t
jint(json_t *j, const char *key)
{
	return json_integer_value(json_object_get(j, key));
}

/* The table-level fields of the first metadata file. */
static void
check_table_fields(cx_objstore *s, json_t *meta)
{
	char		location[CX_KEY_MAX + 64];
	json_t	   *fields = json_object_get(json_array_get(json_object_get(meta, "schemas"), 0),
										 "fields");
	json_t	   *tags = json_array_get(fields, 2);

	snprintf(location, sizeof(location), "%s/iceberg", s->uri);
	CHECK(jint(meta, "format-version") == 2);
	CHECK(strlen(jstr(meta, "table-uuid")) == 36);
	CHECK(strcmp(jstr(meta, "location"), location) == 0);
	CHECK(jint(meta, "current-schema-id") == 1);
	CHECK(jint(json_array_get(json_object_get(meta, "schemas"), 0), "schema-id") == 1);
	CHECK(jint(meta, "default-spec-id") == 0);
	CHECK(jint(meta, "last-partition-id") == 999);
	CHECK(jint(meta, "last-column-id") == 3 + CX_FIELD_ID_ELEMENT_OFFSET);
	CHECK(json_array_size(json_object_get(json_array_get(json_object_get(meta, "partition-specs"), 0),
										  "fields")) == 0);
	CHECK(jint(json_array_get(json_object_get(meta, "sort-orders"), 0), "order-id") == 0);
	/* Table columns only, with their field ids; no hidden column. */
	CHECK(json_array_size(fields) == 3);
	CHECK(jint(json_array_get(fields, 0), "id") == 1);
	CHECK(strcmp(jstr(json_array_get(fields, 0), "name"), "id") == 0);
	CHECK(strcmp(jstr(json_array_get(fields, 0), "type"), "string") == 0);
	CHECK(strcmp(jstr(json_array_get(fields, 1), "type"), "long") == 0);
	CHECK(jint(json_object_get(tags, "type"), "element-id") == 3 + CX_FIELD_ID_ELEMENT_OFFSET);
	CHECK(strcmp(jstr(json_object_get(tags, "type"), "element"), "string") == 0);
}

static void
check_snapshot(json_t *meta, uint64_t base_version, const char *operation,
			   json_int_t seq)
{
	json_t	   *cur = cx_ice_meta_current(meta);
	json_t	   *summary = json_object_get(cur, "summary");
	char		bv[24];

	REQUIRE(cur != NULL);
	snprintf(bv, sizeof(bv), "%llu", (unsigned long long) base_version);
	CHECK(strcmp(jstr(summary, "ctxstore.base-version"), bv) == 0);
	CHECK(strcmp(jstr(summary, "operation"), operation) == 0);
	CHECK(jint(cur, "sequence-number") == seq);
	CHECK(jint(meta, "last-sequence-number") == seq);
	CHECK(jint(json_object_get(json_object_get(meta, "refs"), "main"), "snapshot-id") ==
		  jint(meta, "current-snapshot-id"));
	CHECK(json_array_size(json_object_get(meta, "snapshot-log")) == (size_t) seq);
	CHECK(json_array_size(json_object_get(meta, "metadata-log")) == (size_t) seq - 1);
}

static char *
hint_text(cx_objstore *s)
{
	cx_buf		b;
	cx_err		err;
	char	   *t = NULL;

	cx_buf_init(&b);
	if (cx_obj_get(s, CX_ICEBERG_VERSION_HINT_KEY, &b, &err) == CX_OK)
		t = strndup((const char *) b.data, b.len);
	cx_buf_free(&b);
	return t;
}

CX_TEST(iceberg_first_publish_describes_the_base)
{
	cx_objstore *s = mw_open_store();
	cx_iceberg_result res;
	cx_manifest *m;
	json_t	   *meta;
	char	   *hint;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &res, &err), &err);
	CHECK(res.published && res.metadata_version == 1 && res.snapshot_id > 0);
	CHECK(res.base_version == m->version);
	CHECK(res.data_files == m->nfragments);
	CHECK(res.delete_files == 1 && res.position_deletes >= 3);
	CHECK(res.metadata_location != NULL &&
		  strstr(res.metadata_location, "/iceberg/metadata/v1.metadata.json") != NULL);
	meta = load_metadata(s, 1);
	REQUIRE(meta != NULL);
	check_table_fields(s, meta);
	check_snapshot(meta, m->version, "overwrite", 1);
	CHECK(jint(cx_ice_meta_current(meta), "snapshot-id") == res.snapshot_id);
	check_rebuild(s, meta);
	hint = hint_text(s);
	CHECK(hint != NULL && strcmp(hint, "1") == 0);
	free(hint);
	json_decref(meta);
	cx_iceberg_result_free(&res);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* The Avro files carry the spec's schemas with their field ids and the
 * metadata keys the spec requires. */
CX_TEST(iceberg_manifests_are_avro_with_field_ids)
{
	cx_objstore *s = mw_open_store();
	cx_iceberg_result res;
	cx_ice_files fs = {0};
	json_t	   *meta;
	cx_buf		b;
	char	   *v = NULL;
	cx_err		err;
	const char *list;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &res, &err), &err);
	meta = load_metadata(s, 1);
	REQUIRE(meta != NULL);
	list = jstr(cx_ice_meta_current(meta), "manifest-list");
	cx_buf_init(&b);
	REQUIRE_OK(get_uri(s, list, &b, &err), &err);
	REQUIRE_OK(cx_ice_avro_file_meta(&b, list, "avro.schema", &v, &err), &err);
	CHECK(v != NULL && strcmp(v, cx_ice_manifest_file_schema) == 0 &&
		  strstr(v, "\"field-id\":500") != NULL);
	free(v);
	REQUIRE_OK(cx_ice_avro_file_meta(&b, list, "format-version", &v, &err), &err);
	CHECK(v != NULL && strcmp(v, "2") == 0);
	free(v);
	REQUIRE_OK(read_entries(s, meta, &fs, &err), &err);
	CHECK(fs.n == res.data_files + 1);
	for (uint32_t i = 0; i < fs.n; i++)
	{
		CHECK(fs.v[i].status == CX_ICE_ADDED && fs.v[i].seq == 1 &&
			  fs.v[i].file_seq == 1 && fs.v[i].snapshot_id == res.snapshot_id);
		CHECK(strncmp(fs.v[i].path, s->uri, strlen(s->uri)) == 0);
		CHECK(fs.v[i].records > 0 && fs.v[i].size > 0);
	}
	cx_ice_files_free(&fs);
	cx_buf_free(&b);
	json_decref(meta);
	cx_iceberg_result_free(&res);
	cx_obj_close(s);
}

/* Publishing the same base version again adds nothing. */
CX_TEST(iceberg_publish_is_idempotent)
{
	cx_objstore *s = mw_open_store();
	cx_iceberg_result a,
				b;
	bool		exists = true;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &a, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &b, &err), &err);
	CHECK(a.published && !b.published);
	CHECK(b.snapshot_id == a.snapshot_id && b.metadata_version == 1 &&
		  b.base_version == a.base_version);
	CHECK(b.metadata_location != NULL &&
		  strcmp(a.metadata_location, b.metadata_location) == 0);
	REQUIRE_OK(cx_vseq_exists(s, &cx_layout_iceberg_versions, 2, &exists, &err), &err);
	CHECK(!exists);
	cx_iceberg_result_free(&a);
	cx_iceberg_result_free(&b);
	cx_obj_close(s);
}

/* After more commits a second publish adds a snapshot on top of the
 * first: fragments published before stay EXISTING at sequence number 1,
 * the old delete file is DELETED, the new deletes cover the new base. */
CX_TEST(iceberg_second_publish_after_more_commits)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_iceberg_result a,
				b;
	cx_ice_files fs = {0};
	json_t	   *meta;
	const mw_op change[] = {{CX_ROW_PUT, "k0", 100}, {CX_ROW_DELETE, "k4", 0}};
	uint32_t	existing = 0,
				removed_deletes = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &a, &err), &err);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_append(w, change, 2, true, &err), &err);
	REQUIRE_OK(merge_all(s, w, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &b, &err), &err);
	CHECK(b.published && b.metadata_version == 2 && b.base_version > a.base_version);
	meta = load_metadata(s, 2);
	REQUIRE(meta != NULL);
	check_snapshot(meta, b.base_version, "overwrite", 2);
	CHECK(jint(cx_ice_meta_current(meta), "parent-snapshot-id") == a.snapshot_id);
	CHECK(strstr(jstr(json_array_get(json_object_get(meta, "metadata-log"), 0),
					  "metadata-file"), "/iceberg/metadata/v1.metadata.json") != NULL);
	REQUIRE_OK(read_entries(s, meta, &fs, &err), &err);
	for (uint32_t i = 0; i < fs.n; i++)
	{
		if (fs.v[i].status == CX_ICE_EXISTING)
		{
			existing++;
			CHECK(fs.v[i].seq == 1 && fs.v[i].snapshot_id == a.snapshot_id);
		}
		if (fs.v[i].status == CX_ICE_DELETED && fs.v[i].content == CX_ICE_POSITION_DELETES)
			removed_deletes++;
	}
	CHECK(existing == a.data_files && removed_deletes == 1);
	check_rebuild(s, meta);
	cx_ice_files_free(&fs);
	json_decref(meta);
	cx_iceberg_result_free(&a);
	cx_iceberg_result_free(&b);
	cx_obj_close(s);
}

/* A column added after a publish: the next snapshot is read with the new
 * schema, and the metadata keeps the first one (schema history by the
 * store's schema ids, field ids kept). */
CX_TEST(iceberg_schema_follows_the_store_with_its_history)
{
	cx_objstore *s = mw_open_store();
	cx_schema_alter add = {CX_ALTER_ADD, "note", NULL, {.type = CX_T_STRING}};
	cx_iceberg_result a,
				b;
	uint64_t	version;
	json_t	   *meta;
	json_t	   *schemas;
	json_t	   *fields;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &a, &err), &err);
	REQUIRE_OK(cx_table_alter_schema(s, &add, 1, &version, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &b, &err), &err);
	CHECK(b.published && b.base_version == version);
	meta = load_metadata(s, 2);
	REQUIRE(meta != NULL);
	schemas = json_object_get(meta, "schemas");
	REQUIRE(json_array_size(schemas) == 2);
	CHECK(jint(json_array_get(schemas, 0), "schema-id") == 1);
	CHECK(jint(json_array_get(schemas, 1), "schema-id") == 2);
	CHECK(jint(meta, "current-schema-id") == 2);
	CHECK(jint(cx_ice_meta_current(meta), "schema-id") == 2);
	CHECK(jint(json_array_get(json_object_get(meta, "snapshots"), 0), "schema-id") == 1);
	fields = json_object_get(json_array_get(schemas, 1), "fields");
	REQUIRE(json_array_size(fields) == 4);
	CHECK(strcmp(jstr(json_array_get(fields, 3), "name"), "note") == 0);
	CHECK(jint(json_array_get(fields, 3), "id") == 4);
	CHECK(jint(json_array_get(fields, 0), "id") == 1);
	json_decref(meta);
	cx_iceberg_result_free(&a);
	cx_iceberg_result_free(&b);
	cx_obj_close(s);
}

/* A publisher that finds the next metadata file taken (another publisher
 * committed first, for an older base) starts again from it. */
CX_TEST(iceberg_publish_retries_after_a_lost_race)
{
	cx_objstore *s = mw_open_store();
	cx_iceberg_result a,
				b;
	char		key[CX_KEY_MAX + 1];
	json_t	   *meta;
	char	   *text;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &a, &err), &err);
	/* The rival's v2: v1 claiming an older base version, the hint left at
	 * 1, as if its put landed between our read and our put. */
	meta = load_metadata(s, 1);
	REQUIRE(meta != NULL);
	json_object_set_new(json_object_get(cx_ice_meta_current(meta), "summary"),
						"ctxstore.base-version", json_string("1"));
	text = json_dumps(meta, 0);
	cx_vseq_key(&cx_layout_iceberg_versions, 2, key);
	REQUIRE_OK(cx_obj_put(s, key, text, strlen(text), CX_PUT_IF_ABSENT, &err), &err);
	free(text);
	json_decref(meta);
	REQUIRE_OK(cx_obj_put(s, CX_ICEBERG_VERSION_HINT_KEY, "1", 1, CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &b, &err), &err);
	CHECK(b.published && b.metadata_version == 3 && b.base_version == a.base_version);
	meta = load_metadata(s, 3);
	CHECK(meta != NULL && json_array_size(json_object_get(meta, "snapshots")) == 2);
	json_decref(meta);
	cx_iceberg_result_free(&a);
	cx_iceberg_result_free(&b);
	cx_obj_close(s);
}

/* A TRUNCATE merged into the base hides the rows before it: position
 * deletes for those still listed. */
CX_TEST(iceberg_deletes_rows_before_a_truncation)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_iceberg_result res;
	json_t	   *meta;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 3, 1, true, &err), &err);
	REQUIRE_OK(mw_truncate(w, false, &err), &err);
	REQUIRE_OK(mw_put(w, "n", 0, 2, 2, true, &err), &err);
	REQUIRE_OK(merge_all(s, w, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &res, &err), &err);
	meta = load_metadata(s, 1);
	REQUIRE(meta != NULL);
	check_rebuild(s, meta);
	json_decref(meta);
	cx_iceberg_result_free(&res);
	cx_obj_close(s);
}

/* A base without deletes is an append with no delete file. */
CX_TEST(iceberg_insert_only_base_is_an_append)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_iceberg_result res;
	cx_ice_files fs = {0};
	json_t	   *meta;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 4, 1, true, &err), &err);
	REQUIRE_OK(merge_all(s, w, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &res, &err), &err);
	CHECK(res.published && res.delete_files == 0 && res.position_deletes == 0 &&
		  res.records == 4);
	meta = load_metadata(s, 1);
	REQUIRE(meta != NULL);
	check_snapshot(meta, res.base_version, "append", 1);
	REQUIRE_OK(read_entries(s, meta, &fs, &err), &err);
	CHECK(fs.n == res.data_files && live_delete_file(&fs) == NULL);
	check_rebuild(s, meta);
	cx_ice_files_free(&fs);
	json_decref(meta);
	cx_iceberg_result_free(&res);
	cx_obj_close(s);
}

/* A hint naming a metadata file that does not exist, or no number, is
 * ignored: the newest file is found by listing. */
CX_TEST(iceberg_publish_ignores_an_unusable_hint)
{
	const char *hints[] = {"9", "v1"};
	const char *stores[] = {"/missing", "/garbage"};

	for (int i = 0; i < 2; i++)
	{
		cx_objstore *s = NULL;
		cx_shardwriter *w;
		cx_iceberg_result a,
					b;
		cx_err		err;

		REQUIRE_OK(cx_objstore_open(cx_test_uri(stores[i]), NULL, 0, &s, &err), &err);
		REQUIRE_OK(build_store(s, &err), &err);
		REQUIRE_OK(cx_iceberg_publish(s, &a, &err), &err);
		REQUIRE_OK(cx_obj_put(s, CX_ICEBERG_VERSION_HINT_KEY, hints[i],
							  strlen(hints[i]), CX_PUT_OVERWRITE, &err), &err);
		REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
		REQUIRE_OK(mw_put(w, "x", 0, 2, 7, true, &err), &err);
		REQUIRE_OK(merge_all(s, w, &err), &err);
		REQUIRE_OK(cx_sw_close(w, false, &err), &err);
		REQUIRE_OK(cx_iceberg_publish(s, &b, &err), &err);
		CHECK(b.published && b.metadata_version == 2);
		cx_iceberg_result_free(&a);
		cx_iceberg_result_free(&b);
		cx_obj_close(s);
	}
}

/* An empty store publishes nothing. */
CX_TEST(iceberg_empty_store_publishes_nothing)
{
	cx_objstore *s = mw_open_store();
	cx_iceberg_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(cx_iceberg_publish(s, &res, &err), &err);
	CHECK(!res.published && res.metadata_version == 0 &&
		  res.metadata_location == NULL);
	cx_obj_close(s);
}

/* ---- snapshot expiry and metadata GC (cx_gc_iceberg.c) ---- */

#define MAX_SNAPSHOT_FILES 16

/* The keys of the files a snapshot references: its manifest list, its
 * manifests and the live files they list. */
typedef struct snapshot_files
{
	int			n;
	char		key[MAX_SNAPSHOT_FILES][CX_KEY_MAX + 1];
} snapshot_files;

static void
add_file(cx_objstore *s, snapshot_files *f, const char *uri)
{
	if (f->n < MAX_SNAPSHOT_FILES)
		snprintf(f->key[f->n++], CX_KEY_MAX + 1, "%s", uri + strlen(s->uri) + 1);
}

static cx_code
list_snapshot_files(cx_objstore *s, json_t *snap, snapshot_files *f,
					cx_err *err)
{
	const char *list = json_string_value(json_object_get(snap, "manifest-list"));
	char	  **paths = NULL;
	uint32_t	n = 0;
	cx_ice_files fs = {0};
	cx_buf		b;
	cx_code		rc;

	memset(f, 0, sizeof(*f));
	cx_buf_init(&b);
	add_file(s, f, list);
	rc = get_uri(s, list, &b, err);
	if (rc == CX_OK)
		rc = cx_ice_read_manifest_list(&b, list, &paths, &n, err);
	for (uint32_t i = 0; i < n; i++)
	{
		add_file(s, f, paths[i]);
		if (rc == CX_OK && (rc = get_uri(s, paths[i], &b, err)) == CX_OK)
			rc = cx_ice_read_manifest(&b, paths[i], &fs, err);
		free(paths[i]);
	}
	for (uint32_t i = 0; rc == CX_OK && i < fs.n; i++)
		if (fs.v[i].status != CX_ICE_DELETED)
			add_file(s, f, fs.v[i].path);
	free(paths);
	cx_ice_files_free(&fs);
	cx_buf_free(&b);
	return rc == CX_OK && f->n == MAX_SNAPSHOT_FILES ?
		cx_err_set(err, CX_ERR_INVALID, "more files than the test expects") : rc;
}

/* How many of the files are present, of all or only of the Iceberg
 * table's own (not the data files, which are base fragments). */
static int
files_present(cx_objstore *s, const snapshot_files *f, bool only_iceberg)
{
	uint64_t	size;
	int			n = 0;
	cx_err		err;

	for (int i = 0; i < f->n; i++)
		if (!only_iceberg || strncmp(f->key[i], CX_ICEBERG_DIR "/", 8) == 0)
			n += cx_obj_head(s, f->key[i], &size, &err) == CX_OK;
	return n;
}

/* Every snapshot metadata n lists has all its files. */
static void
check_metadata_complete(cx_objstore *s, uint64_t n)
{
	json_t	   *meta = load_metadata(s, n);
	snapshot_files f;
	size_t		i;
	json_t	   *snap;
	cx_err		err;

	REQUIRE(meta != NULL);
	json_array_foreach(json_object_get(meta, "snapshots"), i, snap)
	{
		REQUIRE_OK(list_snapshot_files(s, snap, &f, &err), &err);
		CHECK(files_present(s, &f, false) == f.n);
	}
	json_decref(meta);
}

/* One more merged change (an update and a delete) and its publish. */
static cx_code
change_and_publish(cx_objstore *s, int round, cx_iceberg_result *res,
				   cx_err *err)
{
	char		id[16];
	const mw_op change[] = {{CX_ROW_PUT, "k0", 100 + round}, {CX_ROW_DELETE, id, 0}};
	cx_shardwriter *w;

	snprintf(id, sizeof(id), "k%d", 3 + round);
	if (mw_writer(s, "a", true, &w, err) != CX_OK)
		return err->code;
	if (mw_append(w, change, 2, true, err) != CX_OK ||
		merge_all(s, w, err) != CX_OK)
	{
		(void) cx_sw_close(w, false, err);
		return err->code;
	}
	if (cx_sw_close(w, false, err) != CX_OK)
		return err->code;
	cx_iceberg_result_free(res);
	return cx_iceberg_publish(s, res, err);
}

static cx_gc_options
settled_gc(void)
{
	cx_gc_options o;

	cx_gc_options_default(&o);
	o.retain_versions = 1;
	o.retain_interval_us = 0;
	o.grace_us = 0;
	return o;
}

static json_int_t
log_snapshot(json_t *meta, size_t i)
{
	return jint(json_array_get(json_object_get(meta, "snapshot-log"), i),
				"snapshot-id");
}

/*
 * Three publishes, then GC keeping two base versions (the first snapshot
 * expires), then one: the second expires too (v5 lists only the current
 * one, with its snapshot log and main ref), while the metadata files still
 * retained keep their files.
 * Two more publish-and-GC rounds push them out of the newest three: then
 * their manifest lists, manifests, delete files and metadata files go
 * (their data files, fragments the base still lists, stay), and every
 * snapshot of every metadata file left still has all its files.
 */
CX_TEST(iceberg_gc_expires_snapshots_and_their_files)
{
	cx_objstore *s = mw_open_store();
	cx_iceberg_result pub = {0};
	snapshot_files first,
				second;
	int64_t		third_id;
	json_t	   *meta;
	char	   *hint;
	char		key[CX_KEY_MAX + 1];
	cx_gc_options o = settled_gc();
	cx_gc_result dry,
				res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &pub, &err), &err);
	REQUIRE_OK(change_and_publish(s, 1, &pub, &err), &err);
	REQUIRE_OK(change_and_publish(s, 2, &pub, &err), &err);
	REQUIRE(pub.metadata_version == 3);
	third_id = pub.snapshot_id;
	meta = load_metadata(s, 3);
	REQUIRE(meta != NULL);
	REQUIRE_OK(list_snapshot_files(s, json_array_get(json_object_get(meta, "snapshots"), 0),
								   &first, &err), &err);
	REQUIRE_OK(list_snapshot_files(s, json_array_get(json_object_get(meta, "snapshots"), 1),
								   &second, &err), &err);
	json_decref(meta);
	CHECK(first.n >= 3 && second.n >= 3);

	/* keeping two base versions keeps the snapshots of both */
	o.retain_versions = 2;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	meta = load_metadata(s, 4);
	REQUIRE(meta != NULL);
	CHECK(json_array_size(json_object_get(meta, "snapshots")) == 2);
	json_decref(meta);
	o.retain_versions = 1;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	meta = load_metadata(s, 5);
	REQUIRE(meta != NULL);
	CHECK(json_array_size(json_object_get(meta, "snapshots")) == 1);
	CHECK(jint(cx_ice_meta_current(meta), "snapshot-id") == third_id);
	CHECK(json_array_size(json_object_get(meta, "snapshot-log")) == 1 &&
		  log_snapshot(meta, 0) == third_id);
	CHECK(jint(json_object_get(json_object_get(meta, "refs"), "main"), "snapshot-id") == third_id);
	CHECK(json_array_size(json_object_get(meta, "metadata-log")) == 2);
	check_rebuild(s, meta);
	json_decref(meta);
	hint = hint_text(s);
	CHECK(hint != NULL && strcmp(hint, "5") == 0);
	free(hint);
	/* v3 and v4 are retained and list them */
	CHECK(files_present(s, &first, false) == first.n &&
		  files_present(s, &second, false) == second.n);
	for (uint64_t n = 3; n <= 5; n++)
		check_metadata_complete(s, n);

	REQUIRE_OK(change_and_publish(s, 3, &pub, &err), &err);
	CHECK(pub.metadata_version == 6);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	REQUIRE_OK(change_and_publish(s, 4, &pub, &err), &err);
	CHECK(pub.metadata_version == 8);
	/* a dry run writes no metadata and counts what the real run deletes */
	o.dry_run = true;
	REQUIRE_OK(cx_gc(s, &o, NULL, &dry, &err), &err);
	meta = load_metadata(s, 9);
	CHECK(meta == NULL);
	o.dry_run = false;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_deleted == dry.objects_garbage && res.bytes_deleted == dry.bytes_garbage);
	CHECK(files_present(s, &first, true) == 0 && files_present(s, &second, true) == 0);
	for (uint64_t n = 1; n <= 6; n++)
	{
		cx_vseq_key(&cx_layout_iceberg_versions, n, key);
		CHECK(load_json(s, key) == NULL);
	}
	for (uint64_t n = 7; n <= 9; n++)
		check_metadata_complete(s, n);
	meta = load_metadata(s, 9);
	REQUIRE(meta != NULL);
	CHECK(json_array_size(json_object_get(meta, "snapshots")) == 1);
	CHECK(jint(cx_ice_meta_current(meta), "snapshot-id") == pub.snapshot_id);
	check_rebuild(s, meta);
	json_decref(meta);
	CHECK(res.objects_unknown == 0);
	cx_iceberg_result_free(&pub);
	cx_obj_close(s);
}

/* A publish slipped in just before GC's put of the expired metadata. */
static cx_objstore_ops hooked_ops;
static const cx_objstore_ops *real_ops;
static const char *hook_key;	/* the put to precede; NULL once done */
static cx_iceberg_result hook_pub;
static cx_code hook_rc;

static cx_code
publish_first(cx_objstore *s, const char *key, const void *data, size_t len,
			  cx_put_mode mode, cx_err *err)
{
	if (hook_key != NULL && strcmp(key, hook_key) == 0)
	{
		cx_objstore *other = mw_open_store();
		cx_err		e2;

		hook_key = NULL;
		hook_rc = other == NULL ? CX_ERR_IO :
			change_and_publish(other, 9, &hook_pub, &e2);
		cx_obj_close(other);
	}
	return real_ops->put(s, key, data, len, mode, err);
}

/* GC loses the race for the next metadata file to a publish: it expires
 * on the winner's metadata, keeping the new snapshot (published from a
 * base version newer than the run listed). */
CX_TEST(iceberg_gc_expiry_retries_after_a_publish_wins)
{
	cx_objstore *s = mw_open_store();
	cx_iceberg_result pub = {0};
	char		key[CX_KEY_MAX + 1];
	cx_gc_options o = settled_gc();
	cx_gc_result res;
	json_t	   *meta;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(build_store(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &pub, &err), &err);
	REQUIRE_OK(change_and_publish(s, 1, &pub, &err), &err);
	REQUIRE(pub.metadata_version == 2);
	cx_vseq_key(&cx_layout_iceberg_versions, 3, key);
	real_ops = s->ops;
	hooked_ops = *s->ops;
	hooked_ops.put = publish_first;
	s->ops = &hooked_ops;
	hook_key = key;
	memset(&hook_pub, 0, sizeof(hook_pub));
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	s->ops = real_ops;
	REQUIRE(hook_key == NULL);
	REQUIRE_OK(hook_rc, &err);
	CHECK(hook_pub.metadata_version == 3);
	meta = load_metadata(s, 4);
	REQUIRE(meta != NULL);
	/* the first snapshot expired; the second's base version is the one
	 * the run retained, the rival's is newer and current */
	CHECK(json_array_size(json_object_get(meta, "snapshots")) == 2);
	CHECK(jint(json_array_get(json_object_get(meta, "snapshots"), 0), "snapshot-id") ==
		  pub.snapshot_id);
	CHECK(jint(cx_ice_meta_current(meta), "snapshot-id") == hook_pub.snapshot_id);
	check_rebuild(s, meta);
	json_decref(meta);
	for (uint64_t n = 2; n <= 4; n++)
		check_metadata_complete(s, n);
	cx_iceberg_result_free(&hook_pub);
	cx_iceberg_result_free(&pub);
	cx_obj_close(s);
}

/*
 * An Avro file whose records lack the fields a manifest has (here a
 * manifest list read as a manifest) is corrupt, not a crash: a missing
 * field was read through libavro's value of nothing (found by fuzz_iceberg).
 */
CX_TEST(iceberg_manifest_without_its_fields_is_corrupt)
{
	cx_ice_manifest_ref ref = {.path = (char *) "file:///t/iceberg/metadata/m.avro",
	.length = 10, .seq = 1, .min_seq = 1, .added_snapshot_id = 1};
	cx_ice_list_meta meta = {.snapshot_id = 1, .seq = 1};
	cx_ice_files files = {0};
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	REQUIRE_OK(cx_ice_write_manifest_list(&ref, 1, &meta, &b, &err), &err);
	CHECK_CODE(cx_ice_read_manifest(&b, "list.avro", &files, &err), CX_ERR_CORRUPT);
	CHECK(files.n == 0);
	cx_ice_files_free(&files);
	cx_buf_free(&b);
}
