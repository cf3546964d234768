/*
 * cx_writer_worker.c — the writer worker's life: start-up recovery of the
 * request array, the main loop, and exit.
 *
 * One worker per cluster.  Each start bumps the generation, so a backend
 * whose request was taken by an earlier incarnation can tell its outcome is
 * unknown; requests still QUEUED are simply processed by the new worker.
 * The loop alternates group-commit rounds with single background steps
 * (cx_writer_background.c) or a bounded gather of the sessions a round
 * acknowledged, and sleeps on its latch until a request arrives,
 * a flush or cleanup falls due, or the maintenance worker reports.
 * SIGTERM ends the loop after the round in flight (a round is never cut
 * short: that could leave a commit half-reported); the worker then seals
 * every store it holds (rows appended with seal_on_insert off become
 * visible) and exits with status 1 so the postmaster restarts it, unless the
 * server is shutting down.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "cx_writer_int.h"

PGDLLEXPORT void cx_writer_main(Datum main_arg);

/* How long the worker sleeps when idle; wake-ups come from latches. */
#define IDLE_WAIT_MS 10000L
/*
 * The longest gather, whatever the last round took: a round far slower
 * than an object store's round trip sealed a large batch or retried, which
 * says nothing about how soon its sessions commit again.
 */
#define GATHER_MAX_US (50 * 1000L)

/*
 * How many of the sessions the last round settled have not committed
 * again.  Read without the lock: a stale state only moves a wake-up within
 * the gather's bound.
 */
static int
missing_commits(const CxRoundSummary *last)
{
	int			missing = 0;

	pg_read_barrier();
	for (int i = 0; i < last->nsettled; i++)
		missing += ((volatile CxWriterSlot *) &CxWriter->slots[last->settled[i]])->state !=
			CX_SLOT_QUEUED;
	return missing;
}

/*
 * Sleeps until the missing commits have been posted (the last of them sets
 * the latch: cx_writer_post_wakes), the latch is set otherwise, or
 * left_us passes.  A post between the count and the store of gather_quiet
 * took one from the old value (or, with the old value 0, set the latch):
 * the recount sees it, and the caller counts and stores again, so the
 * writer never waits for a post that came already.  The caller reset the
 * latch before counting, so a post counted already does not end the
 * sleep.
 */
static void
await_missing(const CxRoundSummary *last, int missing, int64 left_us)
{
	pg_atomic_write_u32(&CxWriter->gather_quiet, (uint32) (missing - 1));
	pg_memory_barrier();
	if (missing_commits(last) != missing)
		return;
	pg_atomic_fetch_add_u64(&CxWriter->gather_sleeps, 1);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) ((left_us + 999) / 1000), PG_WAIT_EXTENSION);
}

/*
 * The last round settled several commits at once, and their sessions are
 * about to commit again.  Taking whatever is queued at once would seal the
 * few that were quick (or the group that queued behind the last round)
 * while the rest queue behind that seal: the sessions split into groups
 * that take turns, each commit waiting for another group's seal as well as
 * its own.  So, as PostgreSQL's commit_delay does for WAL flushes, wait on
 * the latch (every commit sets it) until they have all committed again or
 * ctxstore.writer_commit_delay percent of the last round's time has passed
 * (a cloud store's round trip of tens of milliseconds allows a few; a
 * local store's millisecond fsync a fraction of one), whichever comes
 * first.  The bound is rounded up to whole milliseconds, as WaitLatch
 * counts them, so a local store waits up to one.  A lone session never
 * waits.  The writer wakes once, when the last of them has committed,
 * not once per commit (await_missing); it clears the count before the
 * round that follows every gather, so posts after that set its latch.
 */
static void
gather(const CxRoundSummary *last, int64 round_us)
{
	int64		bound_us;
	TimestampTz until;

	if (cx_writer_commit_delay == 0 || last->nsettled < 2)
		return;
	pg_atomic_fetch_add_u64(&CxWriter->gathers, 1);
	bound_us = Min(round_us * cx_writer_commit_delay / 100, GATHER_MAX_US);
	until = GetCurrentTimestamp() + Max((bound_us + 999) / 1000, 1) * 1000;
	while (!ShutdownRequestPending)
	{
		int			missing;
		int64		left_us;

		/*
		 * Before counting, as latch loops do: whatever set the latch so far
		 * is in the count or, for the maintenance worker's reports, polled
		 * by the round and background step that follow every gather.
		 */
		ResetLatch(MyLatch);
		missing = missing_commits(last);
		left_us = until - GetCurrentTimestamp();
		if (missing == 0 || left_us <= 0)
			break;
		await_missing(last, missing, left_us);
	}
	pg_atomic_write_u32(&CxWriter->gather_quiet, 0);
	pg_memory_barrier();
}

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
	generation = cx_worker_start_locked(&CxWriter->writer);
	/* A writer that died in a gather left its count. */
	pg_atomic_write_u32(&CxWriter->gather_quiet, 0);
	for (int i = 0; i < CxWriter->nslots; i++)
	{
		CxWriterSlot *slot = &CxWriter->slots[i];

		if (slot->state == CX_SLOT_ABANDONED)
			cx_slot_free_locked(slot);
		else if (slot->state == CX_SLOT_TAKEN)
		{
			slot->state = CX_SLOT_FAILED;
			slot->nfailed = 1;
			slot->failed_request = -1;
			slot->outcome_unknown = true;
			slot->failure.code = CX_ERR_IO;
			slot->failure.hint = CX_HINT_NONE;
			strlcpy(slot->failure.msg, "the writer worker restarted while carrying out the request",
					sizeof(slot->failure.msg));
			cx_set_latch(slot->requester_procno);
			recovered++;
		}
	}
	LWLockRelease(CxWriter->lock);

	if (recovered > 0)
		elog(LOG, "ctxstore writer: %d request(s) in flight in the previous writer reported as outcome unknown",
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
	pg_atomic_write_u32(&CxWriter->writer.pid, 0);
	for (int i = 0; i < CxWriter->nslots; i++)
	{
		CxSlotState state = CxWriter->slots[i].state;

		if (state == CX_SLOT_QUEUED || state == CX_SLOT_TAKEN)
			cx_set_latch(CxWriter->slots[i].requester_procno);
	}
}

void
cx_writer_main(Datum main_arg)
{
	uint64		generation;
	CxRoundSummary round = {0};

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	/* There is no query to cancel; a cancel must not end the worker. */
	pqsignal(SIGINT, SIG_IGN);
	BackgroundWorkerUnblockSignals();
	/* No database: this only gives the worker a pg_stat_activity entry. */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	before_shmem_exit(writer_exit, (Datum) 0);
	round.settled = MemoryContextAlloc(TopMemoryContext,
									   sizeof(int) * CxWriter->nslots);
	cx_resident_init();
	generation = claim_writer_role();
	cx_merge_job_adopt();
	cx_unsealed_recover();
	elog(LOG, "ctxstore writer started (generation " UINT64_FORMAT ", shard %s)",
		 generation, cx_shard_id());

	for (;;)
	{
		bool		worked;
		long		wait_ms;
		TimestampTz round_start;
		int64		round_us;

		if (!cx_worker_loop_continues())
			break;
		cx_worker_publish_memory(&CxWriter->writer, cx_resident_cache_bytes);
		round_start = GetCurrentTimestamp();
		cx_writer_run_round(generation, &round);
		round_us = GetCurrentTimestamp() - round_start;
		worked = round.taken > 0;
		if (cx_writer_background_step())
			worked = true;
		else
			gather(&round, round_us);
		/* Work found: look again at once, without sleeping. */
		if (worked)
			continue;
		wait_ms = cx_worker_settle_memory(&CxWriter->writer, cx_resident_cache_bytes,
										  cx_writer_next_due_ms(IDLE_WAIT_MS));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms, PG_WAIT_EXTENSION);
	}

	elog(LOG, "ctxstore writer shutting down: sealing the stores it holds");
	cx_resident_shutdown();
	/* Status 1: the postmaster restarts the worker unless it is stopping. */
	proc_exit(1);
}
