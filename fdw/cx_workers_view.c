/*
 * cx_workers_view.c — ctxstore.worker_info(), the set-returning function
 * behind the ctxstore.workers view: one row per worker (writer,
 * maintenance) with its pid, the stores it holds open, its queue depth, its
 * rounds and commits, its last error, the lifecycle job it runs (phase,
 * progress) and its memory (live heap bytes, and those its caches hold).
 *
 * Options are never shown.  Store URIs and error messages (which name
 * stores) are shown to members of pg_read_all_stats only, as
 * pg_stat_activity shows other users' queries; everyone else sees NULL
 * there and the counts.
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "cx_module.h"
#include "cx_writer_shmem.h"

#define NCOLS 19

typedef enum WorkerKind
{
	KIND_WRITER,
	KIND_MAINTENANCE
} WorkerKind;

/* The URIs of the stores the worker holds open (NULL if none). */
static ArrayType *
open_stores(WorkerKind kind, int *count)
{
	Datum	   *uris = palloc(sizeof(Datum) * CX_STATS_ENTRIES);

	*count = 0;
	for (int i = 0; i < CX_STATS_ENTRIES; i++)
	{
		const CxStoreStatsEntry *e = &CxWriter->stats[i];
		bool		open = kind == KIND_WRITER ? e->stats.writer_open : e->maint_open;

		if (e->uri[0] != '\0' && open)
			uris[(*count)++] = CStringGetTextDatum(e->uri);
	}
	if (*count == 0)
		return NULL;
	return construct_array(uris, *count, TEXTOID, -1, false, TYPALIGN_INT);
}

static int
queue_depth(WorkerKind kind)
{
	int			n = 0;

	if (kind == KIND_MAINTENANCE)
		return CxWriter->merges_wanted;
	for (int i = 0; i < CxWriter->nslots; i++)
		n += CxWriter->slots[i].state == CX_SLOT_QUEUED ||
			CxWriter->slots[i].state == CX_SLOT_TAKEN;
	return n;
}

/* One row; caller holds the lock (shared). */
static void
worker_row(ReturnSetInfo *rsinfo, WorkerKind kind, bool see_details)
{
	CxWorkerInfo *w = kind == KIND_WRITER ? &CxWriter->writer : &CxWriter->maint;
	uint32		pid = pg_atomic_read_u32(&w->pid);
	Datum		values[NCOLS];
	bool		nulls[NCOLS] = {0};
	ArrayType  *stores;
	int			nstores;

	stores = open_stores(kind, &nstores);
	values[0] = Int32GetDatum((int32) pid);
	nulls[0] = pid == 0;
	values[1] = CStringGetTextDatum(kind == KIND_WRITER ? "writer" : "maintenance");
	values[2] = CStringGetTextDatum(cx_shard_id());
	values[3] = Int32GetDatum(nstores);
	values[4] = PointerGetDatum(stores);
	nulls[4] = stores == NULL || !see_details;
	values[5] = Int32GetDatum(queue_depth(kind));
	values[6] = Int64GetDatum((int64) w->rounds);
	values[7] = Int64GetDatum((int64) w->commits);
	values[8] = CStringGetTextDatum(w->last_error);
	nulls[8] = w->last_error[0] == '\0' || !see_details;
	values[9] = TimestampTzGetDatum(w->last_error_at);
	nulls[9] = w->last_error_at == 0;
	values[10] = CStringGetTextDatum(w->phase);
	nulls[10] = w->phase[0] == '\0';
	values[11] = Int64GetDatum((int64) w->progress_done);
	nulls[11] = nulls[10];
	values[12] = Int64GetDatum((int64) w->progress_total);
	nulls[12] = nulls[10];
	values[13] = Int64GetDatum((int64) CxWriter->ring_batches);
	nulls[13] = kind != KIND_WRITER;
	values[14] = Int64GetDatum((int64) CxWriter->dsm_batches);
	nulls[14] = kind != KIND_WRITER;
	values[15] = Int64GetDatum((int64) w->heap_bytes);
	nulls[15] = pid == 0 || w->heap_bytes == 0;
	values[16] = Int64GetDatum((int64) w->cache_bytes);
	nulls[16] = nulls[15];
	values[17] = Int64GetDatum((int64) pg_atomic_read_u64(&CxWriter->gathers));
	nulls[17] = kind != KIND_WRITER;
	values[18] = Int64GetDatum((int64) pg_atomic_read_u64(&CxWriter->gather_sleeps));
	nulls[18] = kind != KIND_WRITER;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

PG_FUNCTION_INFO_V1(ctxstore_worker_info);

/* ctxstore.worker_info() returns setof (pid, kind, shard_id, stores,
 * store_uris, queue_depth, rounds, commits, last_error, last_error_at,
 * phase, progress_done, progress_total, ring_batches, dsm_batches,
 * heap_bytes, cache_bytes, gathers, gather_sleeps). */
Datum
ctxstore_worker_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		see_details = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	InitMaterializedSRF(fcinfo, 0);
	if (CxWriter == NULL)
		return (Datum) 0;
	LWLockAcquire(CxWriter->lock, LW_SHARED);
	worker_row(rsinfo, KIND_WRITER, see_details);
	worker_row(rsinfo, KIND_MAINTENANCE, see_details);
	LWLockRelease(CxWriter->lock);
	return (Datum) 0;
}
