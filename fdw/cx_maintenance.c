/*
 * cx_maintenance.c — the maintenance functions of schema ctxstore, each
 * taking a foreign table (regclass) and requiring its ownership:
 *
 *   flush(t)                    seal this cluster's memtable of the store now
 *   merge_wal(t)                seal, merge every pending generation, drain
 *   cleanup_wal(t)              seal, then merge if at least
 *                               cleanup_min_generations are pending
 *   pending_wal_generations(t)  unmerged generations of this cluster's shard
 *   create_id_index(t)          build or extend the store's key index
 *   publish_iceberg(t)          publish the base as an Iceberg snapshot
 *
 * (compact and gc are in cx_lifecycle.c.)
 *
 * The first three ask the writer worker (cx_writer_control) and wait for it,
 * through the same slot and the same bounded, interruptible wait as a
 * COMMIT; they need shared_preload_libraries.  The others work on the
 * store themselves, without the workers.
 */
#include "postgres.h"

#include "access/relation.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_functions.h"
#include "cx_pgerror.h"
#include "cx_writer_protocol.h"

/* Refuses a table pinned to a version: maintenance works on the newest. */
static void
refuse_pinned(const CxRelInfo *ri, const char *fname, const char *verb)
{
	if (ri->version != 0)
		ereport(ERROR,
				errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				errmsg("%s() cannot %s foreign table \"%s\": it is pinned to version " UINT64_FORMAT,
					   fname, verb, ri->relname, ri->version),
				errhint("Call it on a table of the store that is not pinned."));
}

/* The store of an unpinned table, opened for writing. */
CxStore *
cxfdw_open_unpinned(CxRelInfo *ri, const char *fname, const char *verb)
{
	refuse_pinned(ri, fname, verb);
	return cxfdw_store_open(ri, CX_ACCESS_WRITE);
}

/* Hands kind for the store of ri (table rel) to the writer and waits. */
static void
control_table(CxControlKind kind, const char *fname, CxRelInfo *ri,
			  CxWriteResult *res)
{
	CxWriteRequest req = {0};
	CxStore    *st;

	refuse_pinned(ri, fname, "maintain");
	if (!cx_writer_available())
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("%s() needs the ctxstore writer worker, which is not running", fname),
				errhint("Add ctxstore to shared_preload_libraries in postgresql.conf and restart the server."));
	st = cxfdw_store_open(ri, CX_ACCESS_WRITE);
	req.uri = ri->uri;
	req.options = ri->store_options;
	req.noptions = ri->nstore_options;
	cxfdw_table_settings(ri, &req.settings);
	cxfdw_settings_tell_pins(ri->uri, &req.settings);
	cxfdw_check_table_key(ri, &req.settings, cxfdw_store_manifest(st, 0));
	cx_writer_control(kind, &req, res);
}

/* The SQL functions: the caller must own the table. */
static void
control(CxControlKind kind, const char *fname, Oid relid, CxWriteResult *res)
{
	Relation	rel = cxfdw_function_table(relid, CX_CHECK_OWNER);

	control_table(kind, fname, cxfdw_rel_info(rel, GetUserId()), res);
	relation_close(rel, AccessShareLock);
}

/*
 * The recovery worker (bgworker/cx_unsealed.c), a superuser process: flushes
 * the store uri through table relid with the user mapping and privileges of
 * userid, the role whose rows a crash left unsealed.
 */
void
cxfdw_flush_recorded(Oid relid, Oid userid, const char *uri,
					 CxWriteResult *res)
{
	Relation	rel = cxfdw_function_table(relid, CX_CHECK_OWNER);
	CxRelInfo  *ri = cxfdw_rel_info(rel, userid);

	if (strcmp(ri->uri, uri) != 0)
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("foreign table \"%s\" now names store %s, not %s",
					   ri->relname, ri->uri, uri));
	control_table(CX_CONTROL_FLUSH, "ctxstore recovery", ri, res);
	relation_close(rel, AccessShareLock);
}

PG_FUNCTION_INFO_V1(ctxstore_flush);

/* ctxstore.flush(regclass) returns jsonb: what the seal made visible and
 * the shard afterwards. */
Datum
ctxstore_flush(PG_FUNCTION_ARGS)
{
	CxWriteResult res = {0};
	StringInfoData buf;

	control(CX_CONTROL_FLUSH, "ctxstore.flush", PG_GETARG_OID(0), &res);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"shard_id\":");
	escape_json(&buf, cx_shard_id());
	cxfdw_json_uint(&buf, "sealed_rows", res.sealed_rows);
	cxfdw_json_uint(&buf, "shard_version", res.shard_version);
	cxfdw_json_uint(&buf, "epoch", res.epoch);
	cxfdw_json_uint(&buf, "pending_generations", res.pending_generations);
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

PG_FUNCTION_INFO_V1(ctxstore_merge_wal);

/* ctxstore.merge_wal(regclass) returns integer: generations merged. */
Datum
ctxstore_merge_wal(PG_FUNCTION_ARGS)
{
	CxWriteResult res = {0};

	control(CX_CONTROL_MERGE, "ctxstore.merge_wal", PG_GETARG_OID(0), &res);
	PG_RETURN_INT32((int32) res.generations_merged);
}

PG_FUNCTION_INFO_V1(ctxstore_cleanup_wal);

/* ctxstore.cleanup_wal(regclass) returns integer: generations merged (0
 * when fewer than cleanup_min_generations were pending). */
Datum
ctxstore_cleanup_wal(PG_FUNCTION_ARGS)
{
	CxWriteResult res = {0};

	control(CX_CONTROL_CLEANUP, "ctxstore.cleanup_wal", PG_GETARG_OID(0), &res);
	PG_RETURN_INT32((int32) res.generations_merged);
}

PG_FUNCTION_INFO_V1(ctxstore_pending_wal_generations);

/* ctxstore.pending_wal_generations(regclass) returns integer: unmerged
 * generations of this cluster's shard (ctxstore.shard_id), read from the
 * store; ctxstore.stats() lists every shard's. */
Datum
ctxstore_pending_wal_generations(PG_FUNCTION_ARGS)
{
	Relation	rel = cxfdw_function_table(PG_GETARG_OID(0), CX_CHECK_OWNER);
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	CxStore    *st = cxfdw_store_open(ri, CX_ACCESS_READ);
	int			n;
	cx_shard_info *shards = cxfdw_read_shards(cxfdw_store_handle(st), &n);
	uint32		pending = 0;

	for (int i = 0; i < n; i++)
		if (strcmp(shards[i].shard_id, cx_shard_id()) == 0)
			pending = shards[i].generations;
	relation_close(rel, AccessShareLock);
	PG_RETURN_INT32((int32) pending);
}

/* The table's upsert_key option (a column name), or NULL. */
static const char *
upsert_column(Oid relid)
{
	ListCell   *lc;

	foreach(lc, GetForeignTable(relid)->options)
	{
		DefElem    *d = lfirst(lc);

		if (strcmp(d->defname, "upsert_key") == 0)
			return defGetString(d);
	}
	return NULL;
}

/* Brings the key index of ri's store (the key column, and the upsert_key
 * column when set) up to date with its base. */
cx_code
cxfdw_index_store(const CxRelInfo *ri, CxStore *st, cx_keyindex_result *res,
				  cx_err *err)
{
	return cx_keyindex_update_table(cxfdw_store_handle(st),
									upsert_column(ri->relid), NULL, res, err);
}

PG_FUNCTION_INFO_V1(ctxstore_create_id_index);

/* ctxstore.create_id_index(regclass) returns jsonb: what the update of the
 * key index (key column, and the upsert_key column when set) did. */
Datum
ctxstore_create_id_index(PG_FUNCTION_ARGS)
{
	Relation	rel = cxfdw_function_table(PG_GETARG_OID(0), CX_CHECK_OWNER);
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	cx_keyindex_result res;
	StringInfoData buf;
	CxStore    *st;
	cx_err		err;

	st = cxfdw_open_unpinned(ri, "ctxstore.create_id_index", "index");
	if (cxfdw_index_store(ri, st, &res, &err) != CX_OK)
		cx_pg_error(&err, "could not index the store of foreign table \"%s\"",
					ri->relname);
	relation_close(rel, AccessShareLock);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	cxfdw_json_uint(&buf, "segments_written", res.segments_written);
	cxfdw_json_uint(&buf, "keys_indexed", res.keys_indexed);
	cxfdw_json_uint(&buf, "fragments_covered", res.fragments_covered);
	cxfdw_json_uint(&buf, "segments_merged", res.segments_merged);
	cxfdw_json_uint(&buf, "base_version", res.base_version);
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

PG_FUNCTION_INFO_V1(ctxstore_publish_iceberg);

/* ctxstore.publish_iceberg(regclass) returns jsonb: the Iceberg snapshot
 * that describes the store's newest base version (published now, or
 * already). */
Datum
ctxstore_publish_iceberg(PG_FUNCTION_ARGS)
{
	Relation	rel = cxfdw_function_table(PG_GETARG_OID(0), CX_CHECK_OWNER);
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	CxStore    *st = cxfdw_open_unpinned(ri, "ctxstore.publish_iceberg", "publish");
	cx_iceberg_result res;
	StringInfoData buf;
	cx_err		err;

	if (cx_iceberg_publish(cxfdw_store_handle(st), &res, &err) != CX_OK)
		cx_pg_error(&err, "could not publish the store of foreign table \"%s\" as an Iceberg table",
					ri->relname);
	relation_close(rel, AccessShareLock);
	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"published\":%s,\"metadata_location\":",
					 res.published ? "true" : "false");
	if (res.metadata_location != NULL)
		escape_json(&buf, res.metadata_location);
	else
		appendStringInfoString(&buf, "null");
	appendStringInfo(&buf, ",\"snapshot_id\":" INT64_FORMAT, res.snapshot_id);
	cxfdw_json_uint(&buf, "metadata_version", res.metadata_version);
	cxfdw_json_uint(&buf, "base_version", res.base_version);
	cxfdw_json_uint(&buf, "data_files", res.data_files);
	cxfdw_json_uint(&buf, "records", res.records);
	cxfdw_json_uint(&buf, "delete_files", res.delete_files);
	cxfdw_json_uint(&buf, "position_deletes", res.position_deletes);
	appendStringInfoChar(&buf, '}');
	cx_iceberg_result_free(&res);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}
