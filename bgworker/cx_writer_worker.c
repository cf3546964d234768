/*
 * cx_writer_worker.c — the writer worker's life: start-up recovery of the
 * request array, the main loop, and exit.
 *
 * One worker per cluster.  Each start bumps the generation, so a backend
 * whose request was taken by an earlier incarnation can tell its outcome is
 * unknown; requests still QUEUED are simply processed by the new worker.
 * SIGTERM ends the loop after the round in flight (a round is never cut
 * short: that could leave a commit half-reported); the worker then exits
 * with status 1 so the postmaster restarts it, unless the server is shutting
 * down.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "cx_writer_int.h"

PGDLLEXPORT void cx_writer_main(Datum main_arg);

/* How long the worker sleeps when idle; wake-ups come from latches. */
#define IDLE_WAIT_MS 10000L

/*
 * Claims the writer role: a new generation, then fails what a previous
 * incarnation had taken (it may or may not have been written) and frees what
 * its requesters abandoned.  Queued requests stay queued for the first round.
 */
static uint64
claim_writer_role(void)
{
	uint64		generation;
	int			recovered = 0;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	generation = pg_atomic_add_fetch_u64(&CxWriter->generation, 1);
	for (int i = 0; i < CxWriter->nslots; i++)
	{
		CxWriterSlot *slot = &CxWriter->slots[i];

		if (slot->state == CX_SLOT_ABANDONED)
			slot->state = CX_SLOT_FREE;
		else if (slot->state == CX_SLOT_TAKEN)
		{
			slot->state = CX_SLOT_FAILED;
			slot->nfailed = 1;
			slot->failed_request = -1;
			slot->outcome_unknown = true;
			slot->error_code = CX_ERR_IO;
			strlcpy(slot->error_msg, "the writer worker restarted while committing the transaction",
					sizeof(slot->error_msg));
			cx_writer_set_latch(slot->requester_procno);
			recovered++;
		}
	}
	pg_atomic_write_u32(&CxWriter->worker_procno, MyProc->pgprocno);
	pg_atomic_write_u32(&CxWriter->worker_pid, (uint32) MyProcPid);
	LWLockRelease(CxWriter->lock);

	if (recovered > 0)
		elog(LOG, "ctxstore writer: %d transaction(s) in flight in the previous writer reported as outcome unknown",
			 recovered);
	return generation;
}

/*
 * Exit callback: from here on no worker is running, and backends waiting on
 * this one are woken to notice.  Reads slots without the lock (the exit may
 * follow an ERROR at any point): a stray SetLatch is harmless.
 */
static void
writer_exit(int code, Datum arg)
{
	pg_atomic_write_u32(&CxWriter->worker_pid, 0);
	for (int i = 0; i < CxWriter->nslots; i++)
	{
		CxSlotState state = CxWriter->slots[i].state;

		if (state == CX_SLOT_QUEUED || state == CX_SLOT_TAKEN)
			cx_writer_set_latch(CxWriter->slots[i].requester_procno);
	}
}

void
cx_writer_main(Datum main_arg)
{
	uint64		generation;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	/* There is no query to cancel; a cancel must not end the worker. */
	pqsignal(SIGINT, SIG_IGN);
	BackgroundWorkerUnblockSignals();
	/* No database: this only gives the worker a pg_stat_activity entry. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	before_shmem_exit(writer_exit, (Datum) 0);
	generation = claim_writer_role();
	elog(LOG, "ctxstore writer started (generation " UINT64_FORMAT ")", generation);

	for (;;)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ShutdownRequestPending)
			break;
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		/* Work found: look again at once, without sleeping. */
		if (cx_writer_run_round(generation) > 0)
			continue;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 IDLE_WAIT_MS, PG_WAIT_EXTENSION);
	}

	cx_stores_close_all();
	elog(LOG, "ctxstore writer shutting down");
	/* Status 1: the postmaster restarts the worker unless it is stopping. */
	proc_exit(1);
}
