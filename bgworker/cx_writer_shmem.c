/*
 * cx_writer_shmem.c — the writer's shared state: the request array (one slot
 * per backend), the per-store statistics table, the ctxstore.commit_timeout
 * GUC, and the registration of the writer worker.
 *
 * All of it exists only when ctxstore is in shared_preload_libraries; without
 * it cx_writer_available() is false and the FDW refuses writes with a hint.
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "cx_writer_int.h"

CxWriterShared *CxWriter = NULL;
int			cx_commit_timeout_ms = 300000;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
writer_shmem_size(void)
{
	return add_size(offsetof(CxWriterShared, slots),
					mul_size(MaxBackends, sizeof(CxWriterSlot)));
}

static void
writer_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(writer_shmem_size());
	RequestNamedLWLockTranche(CX_WRITER_TRANCHE, 1);
}

static void
writer_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	CxWriter = ShmemInitStruct("ctxstore writer", writer_shmem_size(), &found);
	if (!found)
	{
		memset(CxWriter, 0, writer_shmem_size());
		CxWriter->lock = &(GetNamedLWLockTranche(CX_WRITER_TRANCHE))->lock;
		pg_atomic_init_u32(&CxWriter->worker_pid, 0);
		pg_atomic_init_u32(&CxWriter->worker_procno, 0);
		pg_atomic_init_u64(&CxWriter->generation, 0);
		CxWriter->nslots = MaxBackends;
	}
	LWLockRelease(AddinShmemInitLock);
}

static void
register_writer_worker(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	snprintf(worker.bgw_name, BGW_MAXLEN, "ctxstore writer");
	snprintf(worker.bgw_type, BGW_MAXLEN, "ctxstore writer");
	/* The "connection" is to no database: it gives the worker a
	 * pg_stat_activity entry; requests carry everything it needs. */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "ctxstore");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "cx_writer_main");
	RegisterBackgroundWorker(&worker);
}

void
cx_writer_init_module(void)
{
	DefineCustomIntVariable("ctxstore.commit_timeout",
							"Longest a COMMIT waits for the ctxstore writer to acknowledge its rows.",
							"0 means no limit beyond statement_timeout.",
							&cx_commit_timeout_ms,
							300000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = writer_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = writer_shmem_startup;

	register_writer_worker();
}

bool
cx_writer_available(void)
{
	return CxWriter != NULL;
}

void
cx_writer_set_latch(int procno)
{
	SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/* The entry for uri, claiming a free or the least recently used one when
 * create is set; NULL if the URI is too long to record or not found. */
static CxStoreStatsEntry *
stats_entry(const char *uri, bool create)
{
	CxStoreStatsEntry *victim = NULL;

	if (uri[0] == '\0' || strlen(uri) >= CX_STATS_URI_MAX)
		return NULL;
	for (int i = 0; i < CX_STATS_ENTRIES; i++)
	{
		CxStoreStatsEntry *e = &CxWriter->stats[i];

		if (strcmp(e->uri, uri) == 0)
			return e;
		if (victim == NULL || e->uri[0] == '\0' ||
			(victim->uri[0] != '\0' && e->last_used < victim->last_used))
			victim = e;
	}
	if (!create)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	strlcpy(victim->uri, uri, CX_STATS_URI_MAX);
	return victim;
}

void
cx_writer_stats_add(const char *uri, const CxWriterStoreStats *add)
{
	CxStoreStatsEntry *e;

	Assert(LWLockHeldByMeInMode(CxWriter->lock, LW_EXCLUSIVE));
	e = stats_entry(uri, true);
	if (e == NULL)
		return;
	e->last_used = CxWriter->rounds;
	e->stats.store_commits += add->store_commits;
	e->stats.acked_transactions += add->acked_transactions;
	e->stats.acked_rows += add->acked_rows;
	e->stats.failed_transactions += add->failed_transactions;
}

bool
cx_writer_store_stats(const char *uri, CxWriterStoreStats *out)
{
	CxStoreStatsEntry *e;

	memset(out, 0, sizeof(*out));
	if (CxWriter == NULL || uri == NULL)
		return false;
	LWLockAcquire(CxWriter->lock, LW_SHARED);
	e = stats_entry(uri, false);
	if (e != NULL)
		*out = e->stats;
	LWLockRelease(CxWriter->lock);
	return e != NULL;
}
