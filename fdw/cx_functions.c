/*
 * cx_functions.c — SQL functions in schema ctxstore that describe the store
 * behind a foreign table (regclass): ctxstore.stats(), ctxstore.versions()
 * and ctxstore.fragments(),
 * and what every function of the schema shares: opening the table with the
 * caller's privileges checked, and reading a store's shards.
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
#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_functions.h"
#include "cx_pgerror.h"
#include "cx_time.h"
#include "ctxstore/engine.h"
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

bool
cxfdw_is_ctxstore_table(Oid relid)
{
	return get_rel_relkind(relid) == RELKIND_FOREIGN_TABLE &&
		uses_this_wrapper(relid);
}

Relation
cxfdw_function_table(Oid relid, CxTableCheck check)
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

	if (check == CX_CHECK_OWNER)
		acl = pg_class_ownercheck(relid, GetUserId()) ? ACLCHECK_OK : ACLCHECK_NOT_OWNER;
	else
		acl = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (acl != ACLCHECK_OK)
		aclcheck_error(acl, OBJECT_FOREIGN_TABLE, RelationGetRelationName(rel));
	return rel;
}

/* ---- shards ---- */

cx_shard_info *
cxfdw_read_shards(cx_objstore *s, int *nshards)
{
	cx_shard_info *shards;
	cx_shard_info *volatile out = NULL;
	uint32		n;
	cx_err		err;

	if (cx_shards_read(s, &shards, &n, &err) != CX_OK)
		cx_pg_error(&err, "could not read the shards of store %s", s->uri);
	PG_TRY();
	{
		out = palloc0(sizeof(cx_shard_info) * Max(n, 1));
		for (uint32 i = 0; i < n; i++)
		{
			out[i] = shards[i];
			out[i].shard_id = pstrdup(shards[i].shard_id);
			out[i].writer = shards[i].writer ? pstrdup(shards[i].writer) : NULL;
		}
	}
	PG_FINALLY();
	{
		cx_shards_free(shards, n);
	}
	PG_END_TRY();
	*nshards = (int) n;
	return out;
}

/* A separator unless a value opens the object or array. */
static void
json_sep(StringInfo buf)
{
	char		last = buf->data[buf->len - 1];

	if (last != '{' && last != '[')
		appendStringInfoChar(buf, ',');
}

static void
json_key(StringInfo buf, const char *key)
{
	json_sep(buf);
	escape_json(buf, key);
	appendStringInfoChar(buf, ':');
}

static void
json_str(StringInfo buf, const char *key, const char *value)
{
	json_key(buf, key);
	if (value == NULL)
		appendStringInfoString(buf, "null");
	else
		escape_json(buf, value);
}

void
cxfdw_json_uint(StringInfo buf, const char *key, uint64 value)
{
	json_key(buf, key);
	appendStringInfo(buf, UINT64_FORMAT, value);
}

/* Object-store requests of one handle. */
static void
request_stats(StringInfo buf, const char *key, const cx_objstats *os)
{
	json_key(buf, key);
	appendStringInfoChar(buf, '{');
	cxfdw_json_uint(buf, "puts", os->puts);
	cxfdw_json_uint(buf, "gets", os->gets);
	cxfdw_json_uint(buf, "heads", os->heads);
	cxfdw_json_uint(buf, "lists", os->lists);
	cxfdw_json_uint(buf, "deletes", os->deletes);
	cxfdw_json_uint(buf, "bytes_written", os->bytes_written);
	cxfdw_json_uint(buf, "bytes_read", os->bytes_read);
	cxfdw_json_uint(buf, "retries", os->retries);
	cxfdw_json_uint(buf, "connections", os->connections);
	appendStringInfoChar(buf, '}');
}

/* The base version the table reads; "rows" adds the unmerged generations'
 * rows when the table reads them too (not pinned): the rows a scan returns,
 * less the versions of keys that newer generations replace. */
static void
manifest_stats(StringInfo buf, const cx_manifest *m, uint64 generation_rows)
{
	uint64		bytes = m ? cx_manifest_bytes(m) : 0;
	uint64		base_rows = m ? cx_manifest_rows(m) : 0;

	cxfdw_json_uint(buf, "version", m ? m->version : 0);
	cxfdw_json_uint(buf, "schema_id", m ? m->schema_id : 0);
	cxfdw_json_uint(buf, "fragments", m ? m->nfragments : 0);
	cxfdw_json_uint(buf, "rows", base_rows + generation_rows);
	cxfdw_json_uint(buf, "base_rows", base_rows);
	cxfdw_json_uint(buf, "bytes", bytes);
}

/* Every shard of the store with its unmerged generations. */
static void
shard_stats(StringInfo buf, const cx_shard_info *shards, int n)
{
	json_str(buf, "shard_id", cx_shard_id());
	json_key(buf, "shards");
	appendStringInfoChar(buf, '[');
	for (int i = 0; i < n; i++)
	{
		json_sep(buf);
		appendStringInfoChar(buf, '{');
		json_str(buf, "shard_id", shards[i].shard_id);
		cxfdw_json_uint(buf, "generations", shards[i].generations);
		cxfdw_json_uint(buf, "generation_rows", shards[i].rows);
		cxfdw_json_uint(buf, "merged_through", shards[i].merged_gen);
		cxfdw_json_uint(buf, "version", shards[i].version);
		cxfdw_json_uint(buf, "epoch", shards[i].epoch);
		json_str(buf, "writer", shards[i].writer);
		appendStringInfoChar(buf, '}');
	}
	appendStringInfoChar(buf, ']');
}

/* This cluster's writer on the store: its shard and what it did. */
static void
writer_object(StringInfo buf, const CxWriterStoreStats *ws)
{
	json_key(buf, "writer");
	appendStringInfoChar(buf, '{');
	json_key(buf, "open");
	appendStringInfoString(buf, ws->writer_open ? "true" : "false");
	cxfdw_json_uint(buf, "epoch", ws->epoch);
	cxfdw_json_uint(buf, "shard_version", ws->shard_version);
	cxfdw_json_uint(buf, "pending_generations", ws->pending_generations);
	cxfdw_json_uint(buf, "memtable_rows", ws->memtable_rows);
	cxfdw_json_uint(buf, "claims", ws->claims);
	cxfdw_json_uint(buf, "fenced", ws->fenced);
	cxfdw_json_uint(buf, "clock_ahead_commits", ws->clock_ahead_commits);
	cxfdw_json_uint(buf, "clock_ahead_max_us", ws->clock_ahead_max_us);
	cxfdw_json_uint(buf, "wal_entries", ws->wal_entries);
	cxfdw_json_uint(buf, "seals", ws->seals);
	cxfdw_json_uint(buf, "drains", ws->drains);
	cxfdw_json_uint(buf, "hints", ws->hints);
	cxfdw_json_uint(buf, "replayed_entries", ws->replayed_entries);
	request_stats(buf, "requests", &ws->writer_requests);
	appendStringInfoChar(buf, '}');
}

/* The merges of this cluster's shard (maintenance worker). */
static void
merge_object(StringInfo buf, const CxWriterStoreStats *ws)
{
	json_key(buf, "merge");
	appendStringInfoChar(buf, '{');
	cxfdw_json_uint(buf, "merges", ws->merges);
	cxfdw_json_uint(buf, "failures", ws->merge_failures);
	cxfdw_json_uint(buf, "generations", ws->merged_generations);
	cxfdw_json_uint(buf, "rows", ws->merged_rows);
	cxfdw_json_uint(buf, "bytes", ws->merged_bytes);
	cxfdw_json_uint(buf, "key_conflicts", ws->key_conflicts);
	json_key(buf, "last_merge_at");
	if (ws->last_merge_at == 0)
		appendStringInfoString(buf, "null");
	else
		escape_json(buf, timestamptz_to_str(ws->last_merge_at));
	json_str(buf, "last_error",
			 ws->last_merge_error[0] != '\0' ? ws->last_merge_error : NULL);
	json_key(buf, "merges_behind");
	appendStringInfoString(buf, ws->merges_behind ? "true" : "false");
	cxfdw_json_uint(buf, "target_generations", ws->merge_target_generations);
	request_stats(buf, "requests", &ws->maintenance_requests);
	appendStringInfoChar(buf, '}');
}

/* The last compaction or GC of the store by this cluster; GC's with what
 * it counted as garbage. */
static void
lifecycle_object(StringInfo buf, const char *key, const CxLifecycleRun *run,
				 const cx_objstats *requests, bool garbage)
{
	json_key(buf, key);
	appendStringInfoChar(buf, '{');
	json_key(buf, "last_at");
	if (run->at == 0)
		appendStringInfoString(buf, "null");
	else
		escape_json(buf, timestamptz_to_str(run->at));
	json_str(buf, "outcome", run->at != 0 ? run->outcome : NULL);
	cxfdw_json_uint(buf, "bytes_reclaimed", run->bytes_reclaimed);
	if (garbage)
	{
		cxfdw_json_uint(buf, "objects_garbage", run->objects_garbage);
		cxfdw_json_uint(buf, "bytes_garbage", run->bytes_garbage);
	}
	request_stats(buf, "requests", requests);
	appendStringInfoChar(buf, '}');
}

/* What the workers did for the store since the server started (zeroes
 * without them). */
static void
writer_stats(StringInfo buf, const char *uri)
{
	CxWriterStoreStats ws = {0};

	if (cx_writer_available())
		cx_writer_store_stats(uri, &ws);
	cxfdw_json_uint(buf, "store_commits", ws.store_commits);
	cxfdw_json_uint(buf, "acked_transactions", ws.acked_transactions);
	cxfdw_json_uint(buf, "acked_rows", ws.acked_rows);
	cxfdw_json_uint(buf, "failed_transactions", ws.failed_transactions);
	writer_object(buf, &ws);
	merge_object(buf, &ws);
	lifecycle_object(buf, "compaction", &ws.last_compaction,
					 &ws.compaction_requests, false);
	lifecycle_object(buf, "gc", &ws.last_gc, &ws.gc_requests, true);
}

/* Requests this backend's read handle has made, since it was opened. */
static void
backend_read_stats(StringInfo buf, const cx_objstats *os)
{
	json_key(buf, "backend_reads");
	appendStringInfoChar(buf, '{');
	cxfdw_json_uint(buf, "gets", os->gets);
	cxfdw_json_uint(buf, "heads", os->heads);
	cxfdw_json_uint(buf, "lists", os->lists);
	cxfdw_json_uint(buf, "bytes_read", os->bytes_read);
	appendStringInfoChar(buf, '}');
}

PG_FUNCTION_INFO_V1(ctxstore_stats);

/* ctxstore.stats(regclass) returns jsonb. */
Datum
ctxstore_stats(PG_FUNCTION_ARGS)
{
	Relation	rel = cxfdw_function_table(PG_GETARG_OID(0), CX_CHECK_SELECT);
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	CxStore    *st = cxfdw_store_open(ri, CX_ACCESS_READ);
	CxPending  *p = ri->version == 0 ? cxfdw_pending_find(ri->relid) : NULL;
	int			nshards;
	cx_shard_info *shards = cxfdw_read_shards(cxfdw_store_handle(st), &nshards);
	uint64		generation_rows = 0;
	StringInfoData buf;

	for (int i = 0; ri->version == 0 && i < nshards; i++)
		generation_rows += shards[i].rows;
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	json_key(&buf, "uri");
	escape_json(&buf, ri->uri);
	json_key(&buf, "pinned");
	appendStringInfoString(&buf, ri->version != 0 ? "true" : "false");
	manifest_stats(&buf, cxfdw_store_manifest(st, ri->version), generation_rows);
	cxfdw_json_uint(&buf, "pending_rows", p ? cxfdw_pending_rows(p) : 0);
	writer_stats(&buf, ri->uri);
	shard_stats(&buf, shards, nshards);
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
emit_version(ReturnSetInfo *rsinfo, cx_objstore *store, uint64 version,
			 bool retained)
{
	cx_manifest *m;
	cx_err		err;
	Datum		values[5];
	bool		nulls[5] = {0};

	if (cx_manifest_load(store, version, &m, &err) != CX_OK)
		cx_pg_error(&err, "could not read version " UINT64_FORMAT " of store %s",
					version, store->uri);
	values[0] = Int64GetDatum((int64) version);
	values[1] = TimestampTzGetDatum(cx_timestamptz_from_unix_us(m->committed_at_us));
	values[2] = CStringGetTextDatum(m->operation ? m->operation : "");
	values[3] = Int64GetDatum((int64) cx_manifest_rows(m));
	values[4] = BoolGetDatum(retained);
	cx_manifest_free(m);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

PG_FUNCTION_INFO_V1(ctxstore_versions);

/* ctxstore.versions(regclass) returns setof (version, committed_at,
 * operation, rows, retained): one manifest read per version, the
 * retention walk of ctxstore.gc() on the table (what GC keeps now) and the
 * store's GC record (what a GC collected stays collected). */
Datum
ctxstore_versions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = cxfdw_function_table(PG_GETARG_OID(0), CX_CHECK_SELECT);
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	cx_objstore *store = cxfdw_store_handle(cxfdw_store_open(ri, CX_ACCESS_READ));
	cx_buf		versions;
	uint64	   *retained;
	size_t		nretained;
	cx_err		err;

	InitMaterializedSRF(fcinfo, 0);
	cx_buf_init(&versions);
	PG_TRY();
	{
		if (cx_manifest_list_versions(store, collect_version, &versions, &err) != CX_OK)
			cx_pg_error(&err, "could not list the versions of store %s", ri->uri);
		if (!cx_buf_ok(&versions))
			ereport(ERROR, errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory"));
		retained = cxfdw_retained_versions(ri, store, &nretained);
		for (size_t off = 0; off < versions.len; off += sizeof(uint64))
		{
			uint64		version = cx_load_u64(versions.data + off);

			emit_version(rsinfo, store, version,
						 cxfdw_version_in(retained, nretained, version));
		}
	}
	PG_FINALLY();
	{
		cx_buf_free(&versions);
	}
	PG_END_TRY();

	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}

/* ---- ctxstore.fragments() ---- */

/* The store columns whose bounds ctxstore.fragments() shows: the table's
 * sort key, or its key (the order merges write base fragments in). */
static uint32
order_columns(const CxRelInfo *ri, const cx_manifest *m, uint32 *cols)
{
	CxStoreSettings s;
	uint32_t	n = 0;
	cx_err		err;

	cxfdw_table_settings(ri, &s);
	if (m->schema != NULL &&
		cx_sort_key_resolve(m->schema, s.sort_key[0] ? s.sort_key : s.key_column,
							cols, &n, &err) != CX_OK)
		cx_pg_error(&err, "foreign table \"%s\" has no order to show", ri->relname);
	return n;
}

/* A bound as text, by the output function of the table column of store
 * column name; NULL when it has none or no table column reads it. */
static Datum
bound_text(const CxRelInfo *ri, const char *name, const cx_datum *d,
		   bool *isnull)
{
	*isnull = true;
	for (int att = 0; !d->isnull && att < ri->natts; att++)
	{
		const CxColumnDef *col = &ri->columns[att];
		Oid			out;
		bool		varlena;

		if (col->attname == NULL || strcmp(col->name, name) != 0)
			continue;
		getTypeOutputInfo(col->type.typid, &out, &varlena);
		*isnull = false;
		return CStringGetTextDatum(OidOutputFunctionCall(out,
														 cxfdw_from_cx(&col->type, d, CX_LIST_ITEMS)));
	}
	return (Datum) 0;
}

static Datum
text_array(Datum *elems, bool *nulls, int n)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};

	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
											  TEXTOID, -1, false, TYPALIGN_INT));
}

/* One row of ctxstore.fragments(): fragment f of m. */
static void
emit_fragment(ReturnSetInfo *rsinfo, const CxRelInfo *ri, const cx_manifest *m,
			  uint32 f, const uint32 *cols, uint32 ncols)
{
	cx_fragment_summary fs;
	Datum		values[6];
	bool		nulls[6] = {0};
	Datum		bounds[2][CX_SORT_KEY_MAX_COLUMNS];
	bool		bound_nulls[2][CX_SORT_KEY_MAX_COLUMNS];

	cx_manifest_fragment_summary(m, f, &fs);
	for (uint32 i = 0; i < ncols; i++)
	{
		const char *name = m->schema->columns[cols[i]].name;
		cx_datum	min;
		cx_datum	max;

		cx_manifest_fragment_bounds(m, f, cols[i], &min, &max);
		bounds[0][i] = bound_text(ri, name, &min, &bound_nulls[0][i]);
		bounds[1][i] = bound_text(ri, name, &max, &bound_nulls[1][i]);
	}
	values[0] = Int32GetDatum((int32) f);
	values[1] = Int64GetDatum((int64) fs.rows);
	values[2] = Int64GetDatum((int64) fs.deleted);
	values[3] = fs.origin_shard ? CStringGetTextDatum(fs.origin_shard) : (Datum) 0;
	nulls[3] = fs.origin_shard == NULL;
	values[4] = text_array(bounds[0], bound_nulls[0], (int) ncols);
	values[5] = text_array(bounds[1], bound_nulls[1], (int) ncols);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

PG_FUNCTION_INFO_V1(ctxstore_fragments);

/* ctxstore.fragments(regclass) returns setof (fragment, rows, deleted,
 * origin_shard, min, max): the base fragments of the table's version, with
 * the statistics bounds of its order columns (no fragment is read). */
Datum
ctxstore_fragments(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = cxfdw_function_table(PG_GETARG_OID(0), CX_CHECK_SELECT);
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	const cx_manifest *m = cxfdw_store_manifest(cxfdw_store_open(ri, CX_ACCESS_READ),
												ri->version);
	uint32		cols[CX_SORT_KEY_MAX_COLUMNS];
	uint32		ncols = m != NULL ? order_columns(ri, m, cols) : 0;

	InitMaterializedSRF(fcinfo, 0);
	for (uint32 f = 0; m != NULL && f < m->nfragments; f++)
		emit_fragment(rsinfo, ri, m, f, cols, ncols);
	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}
