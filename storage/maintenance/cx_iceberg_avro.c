/*
 * cx_iceberg_avro.c — Iceberg manifests and manifest lists: Avro object
 * container files written and read with libavro, in the exact Avro schemas
 * of the Iceberg v2 spec.
 *
 * libavro writes a container's header with only avro.schema and avro.codec,
 * and its schema parser drops the "field-id" attributes Iceberg readers
 * match fields by.  So the container libavro writes gets a new header: the
 * metadata map the spec requires (the schema text with its field ids, and
 * the manifest's or manifest list's keys), encoded by libavro as an Avro
 * map<bytes>, then the container's own sync marker and data blocks
 * unchanged.  The sync marker ends both the header and every block, so the
 * first occurrence of the file's last 16 bytes marks the header's end.
 */
#include <avro.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maintenance/cx_avro_container.h"
#include "maintenance/cx_iceberg_int.h"

#define NKV(a) ((int) (sizeof(a) / sizeof((a)[0])))

/* Optional fields: ["null", T], null first, as the spec writes them. */
#define OPT(t) "[\"null\"," t "],\"default\":null"
#define MAP_OF(name, k, v, vt) \
	"{\"type\":\"array\",\"logicalType\":\"map\",\"items\":{\"type\":\"record\"," \
	"\"name\":\"" name "\",\"fields\":[{\"name\":\"key\",\"type\":\"int\",\"field-id\":" k "}," \
	"{\"name\":\"value\",\"type\":\"" vt "\",\"field-id\":" v "}]}}"

const char	cx_ice_manifest_entry_schema[] =
"{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
"{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
"{\"name\":\"snapshot_id\",\"type\":" OPT("\"long\"") ",\"field-id\":1},"
"{\"name\":\"sequence_number\",\"type\":" OPT("\"long\"") ",\"field-id\":3},"
"{\"name\":\"file_sequence_number\",\"type\":" OPT("\"long\"") ",\"field-id\":4},"
"{\"name\":\"data_file\",\"field-id\":2,\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
"{\"name\":\"content\",\"type\":\"int\",\"field-id\":134},"
"{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
"{\"name\":\"file_format\",\"type\":\"string\",\"field-id\":101},"
"{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[]},\"field-id\":102},"
"{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
"{\"name\":\"file_size_in_bytes\",\"type\":\"long\",\"field-id\":104},"
"{\"name\":\"column_sizes\",\"type\":" OPT(MAP_OF("k117_v118", "117", "118", "long")) ",\"field-id\":108},"
"{\"name\":\"value_counts\",\"type\":" OPT(MAP_OF("k119_v120", "119", "120", "long")) ",\"field-id\":109},"
"{\"name\":\"null_value_counts\",\"type\":" OPT(MAP_OF("k121_v122", "121", "122", "long")) ",\"field-id\":110},"
"{\"name\":\"nan_value_counts\",\"type\":" OPT(MAP_OF("k138_v139", "138", "139", "long")) ",\"field-id\":137},"
"{\"name\":\"lower_bounds\",\"type\":" OPT(MAP_OF("k126_v127", "126", "127", "bytes")) ",\"field-id\":125},"
"{\"name\":\"upper_bounds\",\"type\":" OPT(MAP_OF("k129_v130", "129", "130", "bytes")) ",\"field-id\":128},"
"{\"name\":\"key_metadata\",\"type\":" OPT("\"bytes\"") ",\"field-id\":131},"
"{\"name\":\"split_offsets\",\"type\":" OPT("{\"type\":\"array\",\"items\":\"long\",\"element-id\":133}") ",\"field-id\":132},"
"{\"name\":\"equality_ids\",\"type\":" OPT("{\"type\":\"array\",\"items\":\"int\",\"element-id\":136}") ",\"field-id\":135},"
"{\"name\":\"sort_order_id\",\"type\":" OPT("\"int\"") ",\"field-id\":140},"
"{\"name\":\"referenced_data_file\",\"type\":" OPT("\"string\"") ",\"field-id\":143}"
"]}}]}";

const char	cx_ice_manifest_file_schema[] =
"{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
"{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
"{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
"{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
"{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
"{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
"{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
"{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
"{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
"{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
"{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
"{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
"{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
"{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"
"{\"name\":\"partitions\",\"type\":" OPT("{\"type\":\"array\",\"element-id\":508,\"items\":"
"{\"type\":\"record\",\"name\":\"r508\",\"fields\":["
"{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"
"{\"name\":\"contains_nan\",\"type\":" OPT("\"boolean\"") ",\"field-id\":518},"
"{\"name\":\"lower_bound\",\"type\":" OPT("\"bytes\"") ",\"field-id\":510},"
"{\"name\":\"upper_bound\",\"type\":" OPT("\"bytes\"") ",\"field-id\":511}]}}")
",\"field-id\":507},"
"{\"name\":\"key_metadata\",\"type\":" OPT("\"bytes\"") ",\"field-id\":519}"
"]}";

static cx_code
avro_failed(cx_err *err, cx_code code, const char *what, const char *name)
{
	return cx_err_set(err, code, "%s %s: %s", what, name, avro_strerror());
}

/* ---- setting and getting fields of a generic record ---- */

/* rec's field called name; one whose iface is NULL when there is none (or
 * rec is itself such a missing field): readers check with present(). */
static avro_value_t
field(avro_value_t *rec, const char *name)
{
	avro_value_t f = {0};

	if (rec->iface != NULL)
		avro_value_get_by_name(rec, name, &f, NULL);
	return f;
}

/* Whether field() found the field: a file read need not have it. */
static bool
present(const avro_value_t *f)
{
	return f->iface != NULL;
}

static int
set_int(avro_value_t *rec, const char *name, int32_t v)
{
	avro_value_t f = field(rec, name);

	return avro_value_set_int(&f, v);
}

static int
set_long(avro_value_t *rec, const char *name, int64_t v)
{
	avro_value_t f = field(rec, name);

	return avro_value_set_long(&f, v);
}

static int
set_string(avro_value_t *rec, const char *name, const char *v)
{
	avro_value_t f = field(rec, name);

	return avro_value_set_string(&f, v);
}

/* An optional long: null when v is CX_ICE_INHERIT. */
static int
set_opt_long(avro_value_t *rec, const char *name, int64_t v)
{
	avro_value_t f = field(rec, name);
	avro_value_t b;

	if (v == CX_ICE_INHERIT)
		return avro_value_set_branch(&f, 0, &b) || avro_value_set_null(&b);
	return avro_value_set_branch(&f, 1, &b) || avro_value_set_long(&b, v);
}

/* Every optional field of rec not set otherwise: null. */
static int
set_nulls(avro_value_t *rec)
{
	size_t		n;

	avro_value_get_size(rec, &n);
	for (size_t i = 0; i < n; i++)
	{
		avro_value_t f,
					b;

		avro_value_get_by_index(rec, i, &f, NULL);
		if (avro_value_get_type(&f) == AVRO_UNION &&
			(avro_value_set_branch(&f, 0, &b) || avro_value_set_null(&b)))
			return 1;
	}
	return 0;
}

static int64_t
get_long(avro_value_t *rec, const char *name)
{
	avro_value_t f = field(rec, name);
	avro_value_t b;
	int			disc;
	int64_t		v = CX_ICE_INHERIT;
	int32_t		i;

	if (!present(&f))
		return CX_ICE_INHERIT;
	if (avro_value_get_type(&f) == AVRO_UNION)
	{
		if (avro_value_get_discriminant(&f, &disc) || disc == 0 ||
			avro_value_get_current_branch(&f, &b))
			return CX_ICE_INHERIT;
		f = b;
	}
	if (avro_value_get_type(&f) == AVRO_INT32)
		return avro_value_get_int(&f, &i) ? CX_ICE_INHERIT : i;
	return avro_value_get_long(&f, &v) ? CX_ICE_INHERIT : v;
}

static char *
get_string(avro_value_t *rec, const char *name)
{
	avro_value_t f = field(rec, name);
	const char *p = NULL;
	size_t		len = 0;

	if (!present(&f) || avro_value_get_string(&f, &p, &len) != 0 || p == NULL)
		return NULL;
	return strndup(p, len);
}

/* ---- containers ---- */

/* One key of a container's metadata. */
typedef struct kv
{
	const char *key;
	const char *value;
} kv;

/* libavro's encoding of the header metadata map kvs into out. */
static cx_code
encode_meta_map(const kv *kvs, int n, cx_buf *out, cx_err *err)
{
	avro_schema_t sc = avro_schema_map(avro_schema_bytes());
	avro_value_iface_t *iface = avro_generic_class_from_schema(sc);
	avro_value_t map;
	avro_writer_t w = NULL;
	size_t		size = 0;
	char	   *buf = NULL;
	int			bad = iface == NULL || avro_generic_value_new(iface, &map);

	for (int i = 0; !bad && i < n; i++)
	{
		avro_value_t e;

		bad = avro_value_add(&map, kvs[i].key, &e, NULL, NULL) ||
			avro_value_set_bytes(&e, (void *) kvs[i].value, strlen(kvs[i].value));
	}
	if (!bad)
		bad = avro_value_sizeof(&map, &size) || (buf = malloc(size + 1)) == NULL ||
			(w = avro_writer_memory(buf, (int64_t) size)) == NULL ||
			avro_value_write(w, &map);
	if (!bad)
		cx_buf_put(out, buf, size);
	if (w != NULL)
		avro_writer_free(w);
	free(buf);
	if (iface != NULL)
	{
		avro_value_decref(&map);
		avro_value_iface_decref(iface);
	}
	avro_schema_decref(sc);
	if (bad)
		return avro_failed(err, CX_ERR_NOMEM, "encoding the header of", "an Avro file");
	return CX_OK;
}

/* Replaces the header of the container data[len] by one with kvs. */
static cx_code
rewrite_header(const char *data, size_t len, const kv *kvs, int n,
			   cx_buf *out, cx_err *err)
{
	const char *sync = data + len - CX_AVRO_SYNC_LEN;
	const char *end = len >= CX_AVRO_MAGIC_LEN + 2 * CX_AVRO_SYNC_LEN ?
		memmem(data + CX_AVRO_MAGIC_LEN, len - CX_AVRO_MAGIC_LEN, sync, CX_AVRO_SYNC_LEN) : NULL;

	if (end == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT, "libavro wrote no sync marker");
	cx_buf_put(out, CX_AVRO_MAGIC, CX_AVRO_MAGIC_LEN);
	if (encode_meta_map(kvs, n, out, err) != CX_OK)
		return err->code;
	cx_buf_put(out, end, (size_t) (data + len - end));
	return cx_buf_ok(out) ? CX_OK :
		cx_err_set(err, CX_ERR_NOMEM, "out of memory writing an Avro file");
}

/* Fills the generic record of one row; nonzero on a libavro error. */
typedef int (*row_fn) (const void *rows, uint32_t i, avro_value_t *rec);

/* An Avro container of schema_json holding n rows, with metadata kvs
 * (after avro.schema and avro.codec), into out. */
static cx_code
write_container(const char *schema_json, row_fn fill, const void *rows,
				uint32_t n, const kv *extra, int nextra, cx_buf *out,
				cx_err *err)
{
	kv			kvs[8] = {{"avro.schema", schema_json}, {"avro.codec", "null"}};
	avro_schema_t sc;
	avro_value_iface_t *iface = NULL;
	avro_file_writer_t w = NULL;
	avro_value_t rec;
	char	   *data = NULL;
	size_t		len = 0;
	FILE	   *f;
	int			bad;
	cx_code		rc;

	if (avro_schema_from_json_length(schema_json, strlen(schema_json), &sc))
		return avro_failed(err, CX_ERR_INVALID, "parsing", "an Iceberg Avro schema");
	f = open_memstream(&data, &len);
	bad = f == NULL || avro_file_writer_create_fp(f, "memory", 0, sc, &w) ||
		(iface = avro_generic_class_from_schema(sc)) == NULL ||
		avro_generic_value_new(iface, &rec);
	for (uint32_t i = 0; !bad && i < n; i++)
		bad = set_nulls(&rec) || fill(rows, i, &rec) ||
			avro_file_writer_append_value(w, &rec);
	if (w != NULL)
		bad = avro_file_writer_close(w) || bad;
	if (f != NULL)
		bad = fclose(f) || bad;
	rc = bad ? avro_failed(err, CX_ERR_NOMEM, "writing", "an Avro file") : CX_OK;
	if (iface != NULL)
	{
		avro_value_decref(&rec);
		avro_value_iface_decref(iface);
	}
	avro_schema_decref(sc);
	memcpy(kvs + 2, extra, nextra * sizeof(kv));
	if (rc == CX_OK)
		rc = rewrite_header(data, len, kvs, 2 + nextra, out, err);
	free(data);
	return rc;
}

static int
fill_entry(const void *rows, uint32_t i, avro_value_t *rec)
{
	const cx_ice_file *e = &((const cx_ice_files *) rows)->v[i];
	avro_value_t df = field(rec, "data_file");

	return set_int(rec, "status", e->status) ||
		set_opt_long(rec, "snapshot_id", e->snapshot_id) ||
		set_opt_long(rec, "sequence_number", e->seq) ||
		set_opt_long(rec, "file_sequence_number", e->file_seq) ||
		set_nulls(&df) ||
		set_int(&df, "content", e->content) ||
		set_string(&df, "file_path", e->path) ||
		set_string(&df, "file_format", "PARQUET") ||
		set_long(&df, "record_count", e->records) ||
		set_long(&df, "file_size_in_bytes", e->size);
}

cx_code
cx_ice_write_manifest(const cx_ice_files *entries,
					  const cx_ice_manifest_meta *meta, cx_buf *out,
					  cx_err *err)
{
	char		schema_id[16];
	const kv	extra[] = {
		{"schema", meta->schema_json},
		{"schema-id", schema_id},
		{"partition-spec", "[]"},
		{"partition-spec-id", "0"},
		{"format-version", "2"},
		{"content", meta->content == CX_ICE_DATA ? "data" : "deletes"},
	};

	snprintf(schema_id, sizeof(schema_id), "%u", meta->schema_id);
	return write_container(cx_ice_manifest_entry_schema, fill_entry, entries,
						   entries->n, extra, NKV(extra), out, err);
}

static int
fill_ref(const void *rows, uint32_t i, avro_value_t *rec)
{
	const cx_ice_manifest_ref *r = &((const cx_ice_manifest_ref *) rows)[i];

	return set_string(rec, "manifest_path", r->path) ||
		set_long(rec, "manifest_length", r->length) ||
		set_int(rec, "partition_spec_id", 0) ||
		set_int(rec, "content", r->content) ||
		set_long(rec, "sequence_number", r->seq) ||
		set_long(rec, "min_sequence_number", r->min_seq) ||
		set_long(rec, "added_snapshot_id", r->added_snapshot_id) ||
		set_int(rec, "added_files_count", r->added_files) ||
		set_int(rec, "existing_files_count", r->existing_files) ||
		set_int(rec, "deleted_files_count", r->deleted_files) ||
		set_long(rec, "added_rows_count", r->added_rows) ||
		set_long(rec, "existing_rows_count", r->existing_rows) ||
		set_long(rec, "deleted_rows_count", r->deleted_rows);
}

cx_code
cx_ice_write_manifest_list(const cx_ice_manifest_ref *refs, uint32_t n,
						   const cx_ice_list_meta *meta, cx_buf *out,
						   cx_err *err)
{
	char		id[24],
				parent[24],
				seq[24];
	const kv	extra[] = {
		{"snapshot-id", id},
		{"parent-snapshot-id", parent},
		{"sequence-number", seq},
		{"format-version", "2"},
	};

	snprintf(id, sizeof(id), "%lld", (long long) meta->snapshot_id);
	if (meta->parent_snapshot_id != 0)
		snprintf(parent, sizeof(parent), "%lld", (long long) meta->parent_snapshot_id);
	else
		strcpy(parent, "null");
	snprintf(seq, sizeof(seq), "%lld", (long long) meta->seq);
	return write_container(cx_ice_manifest_file_schema, fill_ref, refs, n,
						   extra, NKV(extra), out, err);
}

/* ---- reading ---- */

/* Calls take for every row of the container data; nonzero from take stops
 * with CX_ERR_CORRUPT. */
typedef int (*take_fn) (void *arg, avro_value_t *rec);

/* Decodes the count rows of block b with libavro into rec, take on each. */
static cx_code
read_block(const cx_avro_block *b, const char *name, avro_value_t *rec,
		   take_fn take, void *arg, cx_err *err)
{
	avro_reader_t r = avro_reader_memory((const char *) b->data, (int64_t) b->len);
	cx_code		rc = r == NULL ? avro_failed(err, CX_ERR_NOMEM, "reading", name) : CX_OK;

	for (int64_t i = 0; rc == CX_OK && i < b->count; i++)
	{
		if (avro_value_read(r, rec) != 0)
			rc = avro_failed(err, CX_ERR_CORRUPT, "reading", name);
		else if (take(arg, rec))
			rc = cx_err_set(err, CX_ERR_CORRUPT, "%s holds a malformed entry", name);
	}
	if (r != NULL)
		avro_reader_free(r);
	return rc;
}

/* Every block is checked (cx_avro_container.c) before libavro reads it;
 * the file's schema must be one of the two the engine writes. */
static cx_code
read_container(const cx_buf *data, const char *name, take_fn take, void *arg,
			   cx_err *err)
{
	static const char *const schemas[] = {
		cx_ice_manifest_entry_schema, cx_ice_manifest_file_schema,
	};
	cx_avro_file f;
	cx_avro_block b = {0};
	avro_value_iface_t *iface = NULL;
	avro_value_t rec;
	cx_code		rc = cx_avro_open(data, name, schemas, NKV(schemas), &f, err);

	if (rc == CX_OK &&
		((iface = avro_generic_class_from_schema(f.schema)) == NULL ||
		 avro_generic_value_new(iface, &rec)))
	{
		rc = avro_failed(err, CX_ERR_CORRUPT, "reading", name);
		if (iface != NULL)
			avro_value_iface_decref(iface);
		iface = NULL;
	}
	while (rc == CX_OK && (rc = cx_avro_next_block(&f, name, &b, err)) == CX_OK &&
		   b.data != NULL)
		rc = read_block(&b, name, &rec, take, arg, err);
	if (iface != NULL)
	{
		avro_value_decref(&rec);
		avro_value_iface_decref(iface);
	}
	cx_avro_close(&f);
	return rc;
}

static int
take_entry(void *arg, avro_value_t *rec)
{
	avro_value_t df = field(rec, "data_file");
	cx_ice_file e = {
		.status = (int) get_long(rec, "status"),
		.snapshot_id = get_long(rec, "snapshot_id"),
		.seq = get_long(rec, "sequence_number"),
		.file_seq = get_long(rec, "file_sequence_number"),
		.content = (int) get_long(&df, "content"),
		.records = get_long(&df, "record_count"),
		.size = get_long(&df, "file_size_in_bytes"),
		.path = get_string(&df, "file_path"),
	};
	cx_err		err;
	int			bad = e.path == NULL || e.status < 0 || e.content < 0 ||
		cx_ice_files_add(arg, &e, &err) != CX_OK;

	free(e.path);
	return bad;
}

cx_code
cx_ice_read_manifest(const cx_buf *data, const char *name, cx_ice_files *out,
					 cx_err *err)
{
	return read_container(data, name, take_entry, out, err);
}

typedef struct path_list
{
	char	  **paths;
	uint32_t	n;
} path_list;

static int
take_path(void *arg, avro_value_t *rec)
{
	path_list  *l = arg;
	char	   *p = get_string(rec, "manifest_path");
	char	  **grown = p != NULL ? realloc(l->paths, (l->n + 1) * sizeof(char *)) : NULL;

	if (grown == NULL)
	{
		free(p);
		return 1;
	}
	l->paths = grown;
	l->paths[l->n++] = p;
	return 0;
}

cx_code
cx_ice_read_manifest_list(const cx_buf *data, const char *name,
						  char ***paths, uint32_t *n, cx_err *err)
{
	path_list	l = {NULL, 0};
	cx_code		rc = read_container(data, name, take_path, &l, err);

	*paths = l.paths;
	*n = l.n;
	return rc;
}

cx_code
cx_ice_files_add(cx_ice_files *fs, const cx_ice_file *f, cx_err *err)
{
	if (fs->n == fs->cap)
	{
		uint32_t	cap = fs->cap ? 2 * fs->cap : 16;
		cx_ice_file *v = realloc(fs->v, cap * sizeof(cx_ice_file));

		if (v == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory listing Iceberg files");
		fs->v = v;
		fs->cap = cap;
	}
	fs->v[fs->n] = *f;
	if ((fs->v[fs->n].path = strdup(f->path)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory listing Iceberg files");
	fs->n++;
	return CX_OK;
}

void
cx_ice_files_free(cx_ice_files *fs)
{
	for (uint32_t i = 0; i < fs->n; i++)
		free(fs->v[i].path);
	free(fs->v);
	memset(fs, 0, sizeof(*fs));
}
