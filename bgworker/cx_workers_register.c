/*
 * cx_workers_register.c — registers the writer and maintenance workers (while
 * shared_preload_libraries is processed; cx_module.c calls it), and the steps
 * at the top of both workers' main loops (the memory they publish for the
 * ctxstore.workers view among them) and before they sleep.
 */
#include "postgres.h"

#include <malloc.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "cx_module.h"
#include "cx_writer_int.h"

bool
cx_worker_loop_continues(void)
{
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	if (ShutdownRequestPending)
		return false;
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	return true;
}

/*
 * How often a busy worker publishes its memory.  Publishing walks malloc's
 * arenas (mallinfo2), sums the caches of every open store and takes the
 * lock every commit posts under: once per round would put all three on
 * the append path, thousands of times a second.
 */
#define PUBLISH_INTERVAL_MS 1000

void
cx_worker_publish_memory(CxWorkerInfo *w, uint64 (*cache_bytes) (void),
						 bool idle)
{
	static TimestampTz last_published;
	TimestampTz now = GetCurrentTimestamp();
	struct mallinfo2 mi;
	uint64		caches;

	if (!idle && !TimestampDifferenceExceeds(last_published, now,
											 PUBLISH_INTERVAL_MS))
		return;
	last_published = now;
	mi = mallinfo2();
	caches = cache_bytes();
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	w->heap_bytes = (uint64) mi.uordblks + (uint64) mi.hblkhd;
	w->cache_bytes = caches;
	LWLockRelease(CxWriter->lock);
}

/*
 * The free memory malloc may keep for the next request.  Buffers past
 * glibc's mmap threshold go back on free already; this is for the heap's
 * share, such as a million rows' key cache entries, which stays resident
 * after its free unless trimmed.
 */
#define KEEP_FREE_BYTES ((size_t) 8 << 20)

void
cx_worker_release_free_memory(void)
{
	/* mallinfo2 walks malloc's bins: cheap next to the sleep it precedes */
	if (mallinfo2().fordblks > KEEP_FREE_BYTES)
		malloc_trim(0);
}

static void
register_worker(const char *type, const char *function)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", type);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", type);
	/* The "connection" is to no database: it gives the worker a
	 * pg_stat_activity entry; requests carry everything it needs. */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "ctxstore");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
	RegisterBackgroundWorker(&worker);
}

void
cx_workers_register(void)
{
	register_worker("ctxstore writer", "cx_writer_main");
	register_worker("ctxstore maintenance", "cx_maint_main");
}
