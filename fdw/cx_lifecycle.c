/*
 * cx_lifecycle.c — the lifecycle functions of schema ctxstore, each taking
 * a foreign table (regclass) and requiring its ownership:
 *
 *   compact(t)          rewrite the store's small base fragments into
 *                       fewer, larger ones (every small one: force)
 *   gc(t, dry_run)      delete the objects no retained version references
 *
 * and what GC retains, as ctxstore.gc() would decide it now less what the
 * store records GC collected, for ctxstore.versions, and from that record
 * the error a read of a collected version raises.
 *
 * Both work on the store themselves, with the caller's user mapping, without
 * the workers (and so from pg_cron); the maintenance worker also runs them
 * when the table sets compact_interval or gc_interval.  The engine never
 * longjmps: a cancel or statement_timeout reaches it through the progress
 * callback, which asks it to stop, and the CX_ERR_CANCELED it then returns
 * is raised as 57014 here.
 */
#include "postgres.h"

#include "access/relation.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "ctxstore_fdw.h"
#include "ctxstore/lifecycle.h"
#include "cx_functions.h"
#include "cx_options.h"
#include "cx_pgerror.h"
#include "cx_time.h"
#include "cx_writer_protocol.h"

/* Progress callback: a pending cancel, statement_timeout or termination
 * asks the job to stop (it returns CX_ERR_CANCELED, the store consistent);
 * CHECK_FOR_INTERRUPTS then raises it outside the engine. */
static bool
keep_going(void *arg, const char *phase, uint64_t done, uint64_t total)
{
	(void) arg;
	(void) phase;
	(void) done;
	(void) total;
	return !(QueryCancelPending || ProcDiePending);
}

static const cx_job_progress interruptible = {keep_going, NULL};

/* Raises a lifecycle job's failure: an interrupt that stopped it as the
 * interrupt itself, anything else as the engine's error. */
static void
job_error(cx_err *err, const char *what, const CxRelInfo *ri)
{
	CHECK_FOR_INTERRUPTS();
	cx_pg_error(err, "could not %s the store of foreign table \"%s\"", what,
				ri->relname);
}

/* After a compaction committed: the key index no longer resolves the
 * removed fragments' keys, so it indexes the outputs, as after a merge.  A
 * failure only costs lookup speed (fragments not indexed are read by
 * column) and the compaction stands, so it is a warning. */
static void
index_compacted(const CxRelInfo *ri, CxStore *st)
{
	cx_keyindex_result res;
	cx_err		err;

	if (cxfdw_index_store(ri, st, &res, &err) != CX_OK)
		cx_pg_report(WARNING, &err,
					 "could not index the compacted store of foreign table \"%s\"",
					 ri->relname);
}

/* A lifecycle job's table (owned by the caller, not pinned, held open in
 * *rel) and its store, with the table's settings. */
static CxStore *
open_job_store(Oid relid, const char *fname, const char *verb,
			   Relation *rel, CxRelInfo **ri, CxStoreSettings *settings)
{
	CxStore    *st;

	*rel = cxfdw_function_table(relid, CX_CHECK_OWNER);
	*ri = cxfdw_rel_info(*rel, GetUserId());
	st = cxfdw_open_unpinned(*ri, fname, verb);
	cxfdw_table_settings(*ri, settings);
	return st;
}

static Datum
jsonb_from(StringInfo buf)
{
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf->data));
}

PG_FUNCTION_INFO_V1(ctxstore_compact);

/* ctxstore.compact(regclass) returns jsonb: what the compaction did
 * ("compacted": false when there was nothing to do). */
Datum
ctxstore_compact(PG_FUNCTION_ARGS)
{
	Relation	rel;
	CxRelInfo  *ri;
	CxStoreSettings settings;
	CxStore    *st = open_job_store(PG_GETARG_OID(0), "ctxstore.compact",
									"compact", &rel, &ri, &settings);
	cx_compact_options opt;
	cx_compact_result res;
	char		holder[NAMEDATALEN + 32];
	StringInfoData buf;
	cx_code		rc;
	cx_err		err;

	cx_compact_options_from(&settings, &opt);
	cx_lease_holder(holder, sizeof(holder));
	opt.holder = holder;
	opt.force = true;
	rc = cx_compact(cxfdw_store_handle(st), &opt, &interruptible, &res, &err);
	cx_stats_note_compact(ri->uri, rc, &res, &err);
	if (rc != CX_OK)
		job_error(&err, "compact", ri);
	if (res.compacted)
		index_compacted(ri, st);
	relation_close(rel, AccessShareLock);
	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"compacted\":%s", res.compacted ? "true" : "false");
	cxfdw_json_uint(&buf, "inputs", res.inputs);
	cxfdw_json_uint(&buf, "outputs", res.outputs);
	cxfdw_json_uint(&buf, "rows", res.rows);
	cxfdw_json_uint(&buf, "rows_dropped", res.rows_dropped);
	cxfdw_json_uint(&buf, "deletions_carried", res.deletions_carried);
	cxfdw_json_uint(&buf, "bytes_read", res.bytes_read);
	cxfdw_json_uint(&buf, "bytes_written", res.bytes_written);
	cxfdw_json_uint(&buf, "version", res.version);
	cxfdw_json_uint(&buf, "retries", res.retries);
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(jsonb_from(&buf));
}

/* The options ctxstore.gc() runs with on ri's store: settings' lifecycle
 * options and the pins of this database's tables on the store. */
static void
gc_options(const CxRelInfo *ri, const CxStoreSettings *settings,
		   cx_gc_options *opt)
{
	cx_gc_options_from(settings, opt);
	opt->pinned = cxfdw_pinned_versions(ri->uri, &opt->npinned);
}

/* Whether version is among the n of retained. */
bool
cxfdw_version_in(const uint64 *retained, size_t n, uint64 version)
{
	for (size_t i = 0; i < n; i++)
		if (retained[i] == version)
			return true;
	return false;
}

/* Keeps of v[0 .. *n) those the store records no GC collected. */
static cx_code
drop_collected(cx_objstore *store, uint64_t *v, size_t *n, cx_err *err)
{
	bool	   *collected = palloc(sizeof(bool) * Max(*n, 1));
	size_t		kept = 0;
	cx_code		rc = cx_gc_collected_versions(store, v, *n, collected, err);

	for (size_t i = 0; rc == CX_OK && i < *n; i++)
		if (!collected[i])
			v[kept++] = v[i];
	if (rc == CX_OK)
		*n = kept;
	pfree(collected);
	return rc;
}

/* The base versions ctxstore.gc() with ri's options would retain now, less
 * those a GC already collected, into *out (palloc'd). */
static cx_code
retained_versions(const CxRelInfo *ri, cx_objstore *store, uint64 **out,
				  size_t *n, cx_err *err)
{
	CxStoreSettings settings;
	cx_gc_options opt;
	int64		now = cx_unix_us_from_timestamptz(GetCurrentTimestamp());
	uint64_t   *v;
	cx_code		rc;

	cxfdw_table_settings(ri, &settings);
	gc_options(ri, &settings, &opt);
	if ((rc = cx_gc_retained_versions(store, &opt, now, &v, n, err)) != CX_OK)
		return rc;
	*out = palloc(sizeof(uint64) * Max(*n, 1));
	if (*n > 0)
		memcpy(*out, v, sizeof(uint64) * *n);
	free(v);
	return drop_collected(store, *out, n, err);
}

uint64 *
cxfdw_retained_versions(const CxRelInfo *ri, cx_objstore *store, size_t *n)
{
	uint64	   *retained;
	cx_err		err;

	if (retained_versions(ri, store, &retained, n, &err) != CX_OK)
		cx_pg_error(&err, "could not tell the retained versions of store %s",
					ri->uri);
	return retained;
}

/*
 * A table pinned to a version GC collected may miss objects GC deleted: a
 * read that finds one missing (err) says so instead of reporting a damaged
 * store.  Whether GC collected it is what the store records of every GC
 * run, whichever table's options and pins it ran with (a pin made after,
 * such as the table's own, cannot bring the objects back).  Returns when
 * that is not the case (the caller raises err as it is): a version no GC
 * collected missing an object is a damaged store, one above the newest any
 * GC listed was never committed or is too new to be collected, a store
 * without a record (no GC of this ctxstore ran on it) proves nothing, and
 * when reading the record fails too, err is the error to report.
 */
void
cxfdw_raise_if_collected(const CxRelInfo *ri, cx_objstore *store,
						 const cx_err *err)
{
	bool		collected;
	cx_err		record_err;

	if (ri->version == 0 || err->code != CX_ERR_NOT_FOUND ||
		cx_gc_collected(store, ri->version, &collected, &record_err) != CX_OK ||
		!collected)
		return;
	ereport(ERROR,
			errcode(cx_pg_errcode(err->code)),
			errmsg("version " UINT64_FORMAT " of store %s is no longer retained",
				   ri->version, ri->uri),
			errdetail("%s", err->msg),
			errhint("GC keeps the newest retain_versions versions, those newer than retain_interval and pinned ones; pin a version with the option version before it ages out."));
}

PG_FUNCTION_INFO_V1(ctxstore_gc);

/* ctxstore.gc(regclass, dry_run boolean) returns jsonb: what GC listed,
 * found to be garbage and deleted (nothing in a dry run). */
Datum
ctxstore_gc(PG_FUNCTION_ARGS)
{
	Relation	rel;
	CxRelInfo  *ri;
	CxStoreSettings settings;
	CxStore    *st = open_job_store(PG_GETARG_OID(0), "ctxstore.gc",
									"collect garbage of", &rel, &ri,
									&settings);
	cx_gc_options opt;
	cx_gc_result res;
	StringInfoData buf;
	cx_code		rc;
	cx_err		err;

	gc_options(ri, &settings, &opt);
	opt.dry_run = PG_GETARG_BOOL(1);
	rc = cx_gc(cxfdw_store_handle(st), &opt, &interruptible, &res, &err);
	cx_stats_note_gc(ri->uri, rc, &res, opt.dry_run, &err);
	if (rc != CX_OK)
		job_error(&err, "collect garbage of", ri);
	relation_close(rel, AccessShareLock);
	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"dry_run\":%s", opt.dry_run ? "true" : "false");
	cxfdw_json_uint(&buf, "versions_retained", res.versions_retained);
	cxfdw_json_uint(&buf, "versions_pinned", opt.npinned);
	cxfdw_json_uint(&buf, "objects_listed", res.objects_listed);
	cxfdw_json_uint(&buf, "bytes_listed", res.bytes_listed);
	cxfdw_json_uint(&buf, "objects_garbage", res.objects_garbage);
	cxfdw_json_uint(&buf, "bytes_garbage", res.bytes_garbage);
	cxfdw_json_uint(&buf, "objects_deleted", res.objects_deleted);
	cxfdw_json_uint(&buf, "bytes_deleted", res.bytes_deleted);
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(jsonb_from(&buf));
}
