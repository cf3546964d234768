/*
 * cx_iceberg_meta.c — Iceberg v2 table metadata (vN.metadata.json) built
 * and read with jansson.
 *
 * The schema is the table's columns (the hidden _ctx_ columns are not part
 * of it), with their field ids, so that readers match the Parquet columns
 * by id; the types follow the Parquet mapping of docs/FORMAT.md.  The table
 * is unpartitioned and unsorted.  Until the schema has a history (schema
 * evolution), it is schema 0, the current schema.
 */
#include <stdio.h>
#include <string.h>

#include "maintenance/cx_iceberg_int.h"

/* The Iceberg type of a non-list engine type. */
static json_t *
primitive_type(const cx_column *c, cx_type t)
{
	char		decimal[32];

	switch (t)
	{
		case CX_T_BOOL:
			return json_string("boolean");
		case CX_T_INT16:
		case CX_T_INT32:
			return json_string("int");
		case CX_T_INT64:
			return json_string("long");
		case CX_T_FLOAT32:
			return json_string("float");
		case CX_T_FLOAT64:
			return json_string("double");
		case CX_T_DATE:
			return json_string("date");
		case CX_T_TIME:
			return json_string("time");
		case CX_T_TIMESTAMP:
			return json_string("timestamp");
		case CX_T_TIMESTAMPTZ:
			return json_string("timestamptz");
		case CX_T_UUID:
			return json_string("uuid");
		case CX_T_INTERVAL:
			return json_string("fixed[16]");
		case CX_T_NUMERIC:
			if (c->precision == 0)
				return json_string("string");
			snprintf(decimal, sizeof(decimal), "decimal(%u, %u)",
					 c->precision, c->scale);
			return json_string(decimal);
		case CX_T_BINARY:
		case CX_T_EXTERNAL:
			return json_string("binary");
		default:				/* string, json, jsonb */
			return json_string("string");
	}
}

static json_t *
column_type(const cx_column *c)
{
	if (c->type != CX_T_LIST)
		return primitive_type(c, c->type);
	return json_pack("{s:s, s:I, s:o, s:b}", "type", "list",
					 "element-id", (json_int_t) c->field_id + CX_FIELD_ID_ELEMENT_OFFSET,
					 "element", primitive_type(c, c->elem_type),
					 "element-required", 0);
}

json_t *
cx_ice_schema_json(const cx_schema *table, uint32_t schema_id)
{
	json_t	   *fields = json_array();

	for (uint32_t i = 0; i < table->ncolumns; i++)
	{
		const cx_column *c = &table->columns[i];

		json_array_append_new(fields,
							  json_pack("{s:I, s:s, s:b, s:o}",
										"id", (json_int_t) c->field_id,
										"name", c->name, "required", c->required,
										"type", column_type(c)));
	}
	return json_pack("{s:s, s:I, s:o}", "type", "struct",
					 "schema-id", (json_int_t) schema_id, "fields", fields);
}

/* The largest field id of the table, element ids included. */
static json_int_t
last_column_id(const cx_schema *table)
{
	json_int_t	last = 0;

	for (uint32_t i = 0; i < table->ncolumns; i++)
	{
		json_int_t	id = table->columns[i].field_id;

		if (table->columns[i].type == CX_T_LIST)
			id += CX_FIELD_ID_ELEMENT_OFFSET;
		if (id > last)
			last = id;
	}
	return last;
}

json_t *
cx_ice_meta_new(const char *location, const char *table_uuid)
{
	return json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:[], s:i, s:[{s:i, s:[]}],"
					 " s:i, s:i, s:[{s:i, s:[]}], s:i, s:{}, s:[], s:[], s:[], s:{}}",
					 "format-version", 2,
					 "table-uuid", table_uuid,
					 "location", location,
					 "last-sequence-number", 0,
					 "last-updated-ms", 0,
					 "last-column-id", 0,
					 "schemas",
					 "current-schema-id", 0,
					 "partition-specs", "spec-id", 0, "fields",
					 "default-spec-id", 0,
					 "last-partition-id", 999,
					 "sort-orders", "order-id", 0, "fields",
					 "default-sort-order-id", 0,
					 "properties",
					 "snapshots", "snapshot-log", "metadata-log",
					 "refs");
}

/* Appends schema s with id to the metadata's schemas unless that id is
 * there, and raises last-column-id to cover it. */
static bool
add_schema(json_t *meta, const cx_schema *s, uint32_t id)
{
	json_t	   *schemas = json_object_get(meta, "schemas");
	json_int_t	last = json_integer_value(json_object_get(meta, "last-column-id"));
	size_t		i;
	json_t	   *have;

	json_array_foreach(schemas, i, have)
		if (json_integer_value(json_object_get(have, "schema-id")) == (json_int_t) id)
		return true;
	if (last_column_id(s) > last &&
		json_object_set_new(meta, "last-column-id",
							json_integer(last_column_id(s))) != 0)
		return false;
	return json_array_append_new(schemas, cx_ice_schema_json(s, id)) == 0;
}

cx_code
cx_ice_meta_set_schemas(json_t *meta, const cx_manifest *base, cx_err *err)
{
	bool		ok = true;

	for (uint32_t i = 0; ok && i < base->nold_schemas; i++)
		ok = add_schema(meta, base->old_schemas[i].schema,
						base->old_schemas[i].schema_id);
	ok = ok && add_schema(meta, base->schema, base->schema_id) &&
		json_object_set_new(meta, "current-schema-id",
							json_integer(base->schema_id)) == 0;
	return ok ? CX_OK :
		cx_err_set(err, CX_ERR_NOMEM, "out of memory building Iceberg metadata");
}

static json_t *
snapshot_json(const cx_ice_snapshot *snap)
{
	json_t	   *j = json_pack("{s:I, s:I, s:I, s:s, s:o, s:i}",
							  "snapshot-id", (json_int_t) snap->snapshot_id,
							  "sequence-number", (json_int_t) snap->seq,
							  "timestamp-ms", (json_int_t) snap->timestamp_ms,
							  "manifest-list", snap->manifest_list,
							  "summary", snap->summary,
							  "schema-id", (json_int_t) snap->schema_id);

	if (j != NULL && snap->parent_id != 0)
		json_object_set_new(j, "parent-snapshot-id",
							json_integer(snap->parent_id));
	return j;
}

cx_code
cx_ice_meta_add_snapshot(json_t *meta, const cx_ice_snapshot *snap,
						 cx_err *err)
{
	json_t	   *s = snapshot_json(snap);
	int			bad = s == NULL ||
		json_array_append_new(json_object_get(meta, "snapshots"), s) ||
		json_array_append_new(json_object_get(meta, "snapshot-log"),
							  json_pack("{s:I, s:I}",
										"timestamp-ms", (json_int_t) snap->timestamp_ms,
										"snapshot-id", (json_int_t) snap->snapshot_id)) ||
		json_object_set_new(meta, "current-snapshot-id",
							json_integer(snap->snapshot_id)) ||
		json_object_set_new(meta, "last-sequence-number",
							json_integer(snap->seq)) ||
		json_object_set_new(meta, "last-updated-ms",
							json_integer(snap->timestamp_ms)) ||
		json_object_set_new(json_object_get(meta, "refs"), "main",
							json_pack("{s:I, s:s}",
									  "snapshot-id", (json_int_t) snap->snapshot_id,
									  "type", "branch"));

	if (!bad && snap->previous_metadata != NULL)
		bad = json_array_append_new(json_object_get(meta, "metadata-log"),
									json_pack("{s:I, s:s}",
											  "timestamp-ms", (json_int_t) snap->previous_updated_ms,
											  "metadata-file", snap->previous_metadata));
	if (bad)
		return cx_err_set(err, CX_ERR_NOMEM,
						  "out of memory building Iceberg metadata");
	return CX_OK;
}

json_t *
cx_ice_meta_current(json_t *meta)
{
	json_t	   *cur = json_object_get(meta, "current-snapshot-id");
	json_t	   *snaps = json_object_get(meta, "snapshots");
	size_t		i;
	json_t	   *s;

	if (!json_is_integer(cur))
		return NULL;
	json_array_foreach(snaps, i, s)
		if (json_integer_value(json_object_get(s, "snapshot-id")) ==
			json_integer_value(cur))
		return s;
	return NULL;
}

int64_t
cx_ice_summary_int(json_t *snapshot, const char *key)
{
	const char *v = json_string_value(json_object_get(json_object_get(snapshot, "summary"), key));
	long long	n = 0;

	if (v == NULL || sscanf(v, "%lld", &n) != 1)
		return 0;
	return n;
}

uint64_t
cx_ice_snapshot_base_version(json_t *snapshot)
{
	int64_t		v = cx_ice_summary_int(snapshot, "ctxstore.base-version");

	return v > 0 ? (uint64_t) v : 0;
}
