/*
 * cx_functions.c — SQL functions in schema ctxstore that take a foreign table
 * (regclass): ctxstore.stats() and ctxstore.versions().
 *
 * They describe the store behind the table and never show an option's value:
 * the only configuration they repeat is the URI, which cannot carry
 * credentials (cx_option.c refuses such URIs).
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"
#include "cx_writer_protocol.h"

/* Defined in ctxstore.c; identifies tables that belong to this wrapper. */
extern Datum ctxstore_fdw_handler(PG_FUNCTION_ARGS);

static bool
uses_this_wrapper(Oid relid)
{
	ForeignServer *server = GetForeignServer(GetForeignTable(relid)->serverid);
	FmgrInfo	handler;

	fmgr_info(GetForeignDataWrapper(server->fdwid)->fdwhandler, &handler);
	return handler.fn_addr == ctxstore_fdw_handler;
}

/*
 * Opens a ctxstore foreign table for a function that reads its store: the
 * caller needs SELECT on it (the function reveals its contents' shape).
 */
static Relation
open_table(Oid relid)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	AclResult	acl;

	if (rel == NULL)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_TABLE),
				errmsg("relation with OID %u does not exist", relid));
	if (rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE || !uses_this_wrapper(relid))
		ereport(ERROR,
				errcode(ERRCODE_WRONG_OBJECT_TYPE),
				errmsg("\"%s\" is not a ctxstore foreign table",
					   RelationGetRelationName(rel)));

	acl = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_FOREIGN_TABLE, RelationGetRelationName(rel));
	return rel;
}

static void
json_key(StringInfo buf, const char *key)
{
	if (buf->data[buf->len - 1] != '{')
		appendStringInfoChar(buf, ',');
	escape_json(buf, key);
	appendStringInfoChar(buf, ':');
}

static void
json_uint(StringInfo buf, const char *key, uint64 value)
{
	json_key(buf, key);
	appendStringInfo(buf, UINT64_FORMAT, value);
}

static void
manifest_stats(StringInfo buf, const cx_manifest *m)
{
	uint64		bytes = 0;

	for (uint32 i = 0; m != NULL && i < m->nfragments; i++)
		bytes += m->fragments[i].size;
	json_uint(buf, "version", m ? m->version : 0);
	json_uint(buf, "fragments", m ? m->nfragments : 0);
	json_uint(buf, "rows", m ? cx_manifest_rows(m) : 0);
	json_uint(buf, "bytes", bytes);
}

static void
writer_stats(StringInfo buf, const char *uri)
{
	CxWriterStoreStats ws = {0};

	if (cx_writer_available())
		cx_writer_store_stats(uri, &ws);
	json_uint(buf, "store_commits", ws.store_commits);
	json_uint(buf, "acked_transactions", ws.acked_transactions);
	json_uint(buf, "acked_rows", ws.acked_rows);
	json_uint(buf, "failed_transactions", ws.failed_transactions);
}

/* Requests this backend's read handle has made, since it was opened. */
static void
backend_read_stats(StringInfo buf, const cx_objstats *os)
{
	json_key(buf, "backend_reads");
	appendStringInfoChar(buf, '{');
	json_uint(buf, "gets", os->gets);
	json_uint(buf, "heads", os->heads);
	json_uint(buf, "lists", os->lists);
	json_uint(buf, "bytes_read", os->bytes_read);
	appendStringInfoChar(buf, '}');
}

PG_FUNCTION_INFO_V1(ctxstore_stats);

/* ctxstore.stats(regclass) returns jsonb. */
Datum
ctxstore_stats(PG_FUNCTION_ARGS)
{
	Relation	rel = open_table(PG_GETARG_OID(0));
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	CxStore    *st = cxfdw_store_open(ri, CX_ACCESS_READ);
	CxPending  *p = ri->version == 0 ? cxfdw_pending_find(ri->relid) : NULL;
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	json_key(&buf, "uri");
	escape_json(&buf, ri->uri);
	json_key(&buf, "pinned");
	appendStringInfoString(&buf, ri->version != 0 ? "true" : "false");
	manifest_stats(&buf, cxfdw_store_manifest(st, ri->version));
	json_uint(&buf, "pending_rows", p ? cxfdw_pending_rows(p) : 0);
	writer_stats(&buf, ri->uri);
	backend_read_stats(&buf, &cxfdw_store_handle(st)->stats);
	appendStringInfoChar(&buf, '}');

	relation_close(rel, AccessShareLock);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}

/* Collects version numbers into a cx_buf: the engine calls this, so it must
 * not raise (no palloc). */
static bool
collect_version(void *arg, uint64_t version)
{
	cx_buf_put_u64(arg, version);
	return true;
}

static void
emit_version(ReturnSetInfo *rsinfo, cx_objstore *store, uint64 version)
{
	cx_manifest *m;
	cx_err		err;
	Datum		values[4];
	bool		nulls[4] = {0};

	if (cx_manifest_load(store, version, &m, &err) != CX_OK)
		cx_pg_error(&err, "could not read version " UINT64_FORMAT " of store %s",
					version, store->uri);
	values[0] = Int64GetDatum((int64) version);
	values[1] = TimestampTzGetDatum(m->committed_at_us -
									(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
	values[2] = CStringGetTextDatum(m->operation ? m->operation : "");
	values[3] = Int64GetDatum((int64) cx_manifest_rows(m));
	cx_manifest_free(m);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

PG_FUNCTION_INFO_V1(ctxstore_versions);

/* ctxstore.versions(regclass) returns setof (version, committed_at,
 * operation, rows): one manifest read per version. */
Datum
ctxstore_versions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = open_table(PG_GETARG_OID(0));
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	cx_objstore *store = cxfdw_store_handle(cxfdw_store_open(ri, CX_ACCESS_READ));
	cx_buf		versions;
	cx_err		err;

	InitMaterializedSRF(fcinfo, 0);
	cx_buf_init(&versions);
	PG_TRY();
	{
		if (cx_manifest_list_versions(store, collect_version, &versions, &err) != CX_OK)
			cx_pg_error(&err, "could not list the versions of store %s", ri->uri);
		if (!cx_buf_ok(&versions))
			ereport(ERROR, errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory"));
		for (size_t off = 0; off < versions.len; off += sizeof(uint64))
			emit_version(rsinfo, store, cx_load_u64(versions.data + off));
	}
	PG_FINALLY();
	{
		cx_buf_free(&versions);
	}
	PG_END_TRY();

	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}
