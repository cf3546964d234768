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
 * How often a worker publishes its memory and gives malloc's free memory
 * back.  Both walk malloc's arenas (mallinfo2), and publishing sums the
 * caches of every open store and takes the lock every commit posts under.
 * Once per round or per job would put all of that on the append path: a
 * busy cluster's workers sleep between most rounds and merges, and with
 * 1,000 stores written round-robin the walk was 7% of the maintenance
 * worker's CPU and 2% of the writer's.
 */
#define PUBLISH_INTERVAL_MS 1000

/*
 * The free memory malloc may keep for the next request.  Buffers past
 * glibc's mmap threshold go back on free already; this is for the heap's
 * share, such as a million rows' key cache entries, which stays resident
 * after its free unless trimmed.
 */
#define KEEP_FREE_BYTES ((size_t) 8 << 20)

static TimestampTz last_published;

static void
publish(CxWorkerInfo *w, uint64 (*cache_bytes) (void), const struct mallinfo2 *mi)
{
	uint64		caches = cache_bytes();

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	w->heap_bytes = (uint64) mi->uordblks + (uint64) mi->hblkhd;
	w->cache_bytes = caches;
	LWLockRelease(CxWriter->lock);
}

void
cx_worker_publish_memory(CxWorkerInfo *w, uint64 (*cache_bytes) (void))
{
	TimestampTz now = GetCurrentTimestamp();
	struct mallinfo2 mi;

	if (!TimestampDifferenceExceeds(last_published, now, PUBLISH_INTERVAL_MS))
		return;
	last_published = now;
	mi = mallinfo2();
	publish(w, cache_bytes, &mi);
}

long
cx_worker_settle_memory(CxWorkerInfo *w, uint64 (*cache_bytes) (void),
						long wait_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	struct mallinfo2 mi;

	if (!TimestampDifferenceExceeds(last_published, now, PUBLISH_INTERVAL_MS))
	{
		TimestampTz due = TimestampTzPlusMilliseconds(last_published,
													  PUBLISH_INTERVAL_MS);

		/* Back when it is due, however long the worker may sleep. */
		return Min(wait_ms, TimestampDifferenceMilliseconds(now, due) + 1);
	}
	last_published = now;
	mi = mallinfo2();
	if (mi.fordblks > KEEP_FREE_BYTES)
	{
		malloc_trim(0);
		mi = mallinfo2();
	}
	publish(w, cache_bytes, &mi);
	return wait_ms;
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
