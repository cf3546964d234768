/*
 * cx_writer_submit.c — the backend side of reaching the writer worker: hand
 * a transaction's rows over at PRE_COMMIT, or a control request (flush,
 * merge, cleanup) from a SQL function, and wait for the outcome.
 *
 * The wait is bounded and interruptible.  Every ~100 ms at the latest (and
 * whenever the latch is set: by the worker, a signal or an interrupt) the
 * backend looks at its slot, at whether a worker is alive, and at its
 * deadline: ctxstore.commit_timeout from the moment the request is handed
 * over and statement_timeout from the start of the statement.  PostgreSQL
 * disables the statement_timeout timer before it commits, so the writer
 * applies that limit itself; otherwise a stuck store could hold a COMMIT
 * forever.
 *
 * A commit's batch goes into the request ring when it fits, else into a DSM
 * segment (cx_writer_shmem.h); the ring chunk is the backend's until it is
 * posted, the slot's afterwards.
 *
 * Giving up (timeout, cancel, worker gone, backend exit) is decided under
 * the lock: a request the worker has not taken is withdrawn and is certain
 * never to be carried out; one it has taken is abandoned and its outcome is
 * unknown.  Every error says which of the two happened.
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"
#include "cx_writer_shmem.h"

/* Longest sleep between two looks at the slot and the worker. */
#define POLL_MS 100L

/*
 * Longest a request waits for a writer worker that is not running before it
 * fails: the postmaster starts the worker after the server accepts
 * connections and restarts it a second after it stopped (bgw_restart_time),
 * so a COMMIT right after a (re)start would otherwise fail for no lasting
 * reason.  A request already handed to a worker that then stops is not
 * re-posted: it fails at once and says what became of its rows.
 */
#define WRITER_START_WAIT_MS 5000L

/* What a call hands over: rows (a commit) or a control request. */
typedef struct CxCall
{
	int			kind;			/* CX_BATCH_WRITE or a CxControlKind */
	const char *what;			/* "the commit", "ctxstore.flush()", ... */
	const char *failed;			/* error message, with the store's URI */
} CxCall;

/* What giving up on a posted request means for it. */
typedef enum GiveUp
{
	GIVEUP_NONE,				/* nothing was posted */
	GIVEUP_WITHDRAWN,			/* never written */
	GIVEUP_UNKNOWN,				/* taken by the worker: may be written */
	GIVEUP_WRITTEN,				/* the worker had finished successfully */
	GIVEUP_FAILED				/* the worker had finished with an error */
} GiveUp;

/* Where a call's batch is: in the request ring, or in a DSM segment. */
typedef struct Batch
{
	CxBatchHeader *hdr;
	dsm_segment *seg;			/* NULL: in the ring at ring_off */
	uint64		ring_off;
} Batch;

/* The slot holding a request of ours (NULL: none).  A backend waits for
 * one request at a time, so at most one of its two slots is posted. */
static CxWriterSlot *posted_slot = NULL;
static bool exit_callback_registered = false;

/* A ring chunk this backend filled and has not posted yet: its own to free
 * until the post hands it to the slot (cx_writer_shmem.h). */
static bool holding_ring_chunk = false;
static uint64 held_ring_off;

typedef struct WaitDeadline
{
	TimestampTz at;				/* PG_INT64_MAX = none */
	bool		by_statement;	/* statement_timeout, not commit_timeout */
} WaitDeadline;

/* This backend's slot for a call of kind: commits and control requests
 * each have their own (cx_writer_shmem.h). */
static CxWriterSlot *
my_slot(int kind)
{
	CxSlotLane	lane = kind == CX_BATCH_WRITE ? CX_LANE_COMMIT : CX_LANE_CONTROL;

	if (MyBackendId == InvalidBackendId ||
		cx_slot_index(MyBackendId, lane) >= CxWriter->nslots)
		elog(ERROR, "ctxstore: this process cannot hand rows to the writer");
	return &CxWriter->slots[cx_slot_index(MyBackendId, lane)];
}

/* Releases the slot whatever state it is in (caller holds the lock). */
static GiveUp
give_up_locked(CxWriterSlot *slot)
{
	GiveUp		result = GIVEUP_NONE;

	if (posted_slot != slot)
		return GIVEUP_NONE;
	posted_slot = NULL;
	switch (slot->state)
	{
		case CX_SLOT_QUEUED:
			cx_slot_free_locked(slot);
			return GIVEUP_WITHDRAWN;
		case CX_SLOT_TAKEN:
			slot->state = CX_SLOT_ABANDONED;
			return GIVEUP_UNKNOWN;
		case CX_SLOT_DONE:
			result = GIVEUP_WRITTEN;
			break;
		case CX_SLOT_FAILED:
			result = slot->outcome_unknown ? GIVEUP_UNKNOWN : GIVEUP_FAILED;
			break;
		default:
			break;
	}
	cx_slot_free_locked(slot);
	return result;
}

static GiveUp
give_up(CxWriterSlot *slot)
{
	GiveUp		result;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	result = give_up_locked(slot);
	LWLockRelease(CxWriter->lock);
	return result;
}

/* A DETAIL sentence saying what became of the rows or the request. */
static const char *
give_up_detail(const CxCall *call, GiveUp g)
{
	bool		rows = call->kind == CX_BATCH_WRITE;

	switch (g)
	{
		case GIVEUP_WITHDRAWN:
			return rows ? "The transaction's rows were withdrawn before the ctxstore writer took them: they were not written."
				: "The request was withdrawn before the ctxstore writer took it: nothing was done.";
		case GIVEUP_UNKNOWN:
			return rows ? "The ctxstore writer had already taken the transaction's rows: they may or may not have been written."
				: "The ctxstore writer had already taken the request: it may or may not be carried out.";
		case GIVEUP_WRITTEN:
			return rows ? "The ctxstore writer had already written the transaction's rows: they are durable although the transaction reports an error."
				: "The ctxstore writer had already carried out the request.";
		case GIVEUP_FAILED:
			return rows ? "The ctxstore writer had failed to write the transaction's rows."
				: "The ctxstore writer had failed to carry out the request.";
		case GIVEUP_NONE:
			break;
	}
	return NULL;
}

/* Frees the ring chunk of a batch that was never posted. */
static void
release_unposted(void)
{
	if (!holding_ring_chunk)
		return;
	holding_ring_chunk = false;
	cx_request_ring_free(held_ring_off);
}

/* Backend exit (FATAL, terminate) while a request is posted or its batch
 * is being laid out. */
static void
backend_exit(int code, Datum arg)
{
	if (posted_slot != NULL)
		(void) give_up(posted_slot);
	release_unposted();
}

static WaitDeadline
wait_deadline(void)
{
	WaitDeadline d = {PG_INT64_MAX, false};

	if (cx_commit_timeout_ms > 0)
		d.at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   cx_commit_timeout_ms);
	if (StatementTimeout > 0)
	{
		TimestampTz st = TimestampTzPlusMilliseconds(GetCurrentStatementStartTimestamp(),
													 StatementTimeout);

		if (st < d.at)
		{
			d.at = st;
			d.by_statement = true;
		}
	}
	return d;
}

static void
report_timeout(const CxCall *call, const WaitDeadline *d, GiveUp g)
{
	if (d->by_statement)
		ereport(ERROR,
				errcode(ERRCODE_QUERY_CANCELED),
				errmsg("canceling statement due to statement timeout"),
				errdetail("%s", give_up_detail(call, g)));
	ereport(ERROR,
			errcode(ERRCODE_QUERY_CANCELED),
			errmsg("the ctxstore writer did not finish %s within ctxstore.commit_timeout (%d ms)",
					call->what, cx_commit_timeout_ms),
			errdetail("%s", give_up_detail(call, g)),
			errhint("Check the server log and the ctxstore.workers view for the workers' progress; raise ctxstore.commit_timeout if this store is legitimately slow."));
}

static void
report_no_worker(const CxCall *call, GiveUp g)
{
	ereport(ERROR,
			errcode(g == GIVEUP_UNKNOWN ? ERRCODE_T_R_STATEMENT_COMPLETION_UNKNOWN
					 : ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			g == GIVEUP_UNKNOWN ?
			errmsg("the ctxstore writer worker stopped while carrying out %s", call->what) :
			errmsg("the ctxstore writer worker is not running"),
			errdetail("%s", give_up_detail(call, g == GIVEUP_NONE ? GIVEUP_WITHDRAWN : g)),
			errhint("The worker restarts automatically within seconds; retry.  The server log says why it stopped."));
}

static bool
worker_running(void)
{
	return pg_atomic_read_u32(&CxWriter->writer.pid) != 0;
}

/* Sleeps until the latch is set or the next look is due (at most POLL_MS),
 * then honours cancel and terminate. */
static void
nap(const WaitDeadline *d)
{
	long		ms = POLL_MS;

	if (d->at != PG_INT64_MAX)
		ms = Min(ms, Max(TimestampDifferenceMilliseconds(GetCurrentTimestamp(), d->at), 1));
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

static bool
deadline_passed(const WaitDeadline *d)
{
	return d->at != PG_INT64_MAX && GetCurrentTimestamp() >= d->at;
}

/* Returns once a writer worker runs; fails after WRITER_START_WAIT_MS
 * without one, or at the deadline. */
static void
await_running_worker(const CxCall *call, const WaitDeadline *d)
{
	TimestampTz give_up_at;

	if (worker_running())
		return;
	give_up_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), WRITER_START_WAIT_MS);
	do
	{
		if (deadline_passed(d) || GetCurrentTimestamp() >= give_up_at)
			report_no_worker(call, GIVEUP_NONE);
		nap(d);
	} while (!worker_running());
}

/*
 * Posts the batch once a writer worker runs.  The slot may still be
 * ABANDONED by this backend's previous request of the same lane (or a
 * previous backend with this slot); then wait, boundedly, for the worker to
 * finish with it.
 */
static void
post_request(const CxCall *call, CxWriterSlot *slot, const Batch *b,
			 const WaitDeadline *d)
{
	for (;;)
	{
		CxSlotState state;

		await_running_worker(call, d);
		LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
		state = slot->state;
		if (state == CX_SLOT_FREE)
		{
			slot->state = CX_SLOT_QUEUED;
			slot->in_ring = b->seg == NULL;
			slot->ring_off = b->ring_off;
			slot->handle = b->seg != NULL ? dsm_segment_handle(b->seg) : 0;
			/* The slot owns a ring chunk from here on. */
			holding_ring_chunk = false;
			slot->requester_procno = MyProc->pgprocno;
			slot->seq = ++CxWriter->next_seq;
			slot->nfailed = 0;
			slot->outcome_unknown = false;
			memset(&slot->failure, 0, sizeof(slot->failure));
			posted_slot = slot;
		}
		LWLockRelease(CxWriter->lock);
		if (state == CX_SLOT_FREE)
			break;
		if (state != CX_SLOT_ABANDONED)
			elog(ERROR, "ctxstore writer slot %d is unexpectedly in state %d",
				 (int) (slot - CxWriter->slots), (int) state);
		if (deadline_passed(d))
			report_timeout(call, d, GIVEUP_WITHDRAWN);
		nap(d);
	}
	if (cx_writer_post_wakes())
		cx_set_latch(pg_atomic_read_u32(&CxWriter->writer.procno));
}

static const char *
failure_hint(CxFailHint hint)
{
	switch (hint)
	{
		case CX_HINT_FENCED:
			return "Another cluster wrote this store's shard: check that no two clusters share a ctxstore.shard_id.  The writer re-claims the shard with the next request to the store.";
		case CX_HINT_PENDING_LIMIT:
			return "Too many generations are unmerged.  Run ctxstore.merge_wal() on a table of the store, or check its merge_after_generations, cleanup_interval and pending_generations_max options.";
		case CX_HINT_STORE_OPTION:
			return "Options that belong to a store must agree on every table of the store: set the option alike on both tables, or leave it out of one (it then takes the store's).";
		case CX_HINT_NONE:
			break;
	}
	return NULL;
}

/* Raises the error a FAILED slot carried (a copy taken under the lock). */
static void
report_failure(const CxCall *call, const CxWriterSlot *failed,
			   const CxWriteRequest *requests, int nrequests)
{
	cx_err		err;
	int			nwritten = nrequests - failed->nfailed;
	const char *uri;
	const char *hint = failure_hint(failed->failure.hint);
	const char *violation = cx_pg_violation(failed->failure.code);

	if (failed->outcome_unknown)
		report_no_worker(call, GIVEUP_UNKNOWN);
	uri = failed->failed_request >= 0 ? requests[failed->failed_request].uri : "?";
	err.code = failed->failure.code;
	if (nwritten > 0)
		snprintf(err.msg, sizeof(err.msg), "%s (%d other store(s) of this transaction were written)",
				 failed->failure.msg, nwritten);
	else
		strlcpy(err.msg, failed->failure.msg, sizeof(err.msg));
	if (violation != NULL && call->kind == CX_BATCH_WRITE)
		cx_pg_error(&err, violation, uri);
	if (hint == NULL)
		cx_pg_error(&err, call->failed, uri);
	ereport(ERROR,
			errcode(cx_pg_errcode(err.code)),
			errmsg_internal(call->failed, uri),
			errdetail_internal("%s", err.msg),
			errhint("%s", hint));
}

/* Waits for the worker's verdict; on success fills results. */
static void
await_outcome(const CxCall *call, CxWriterSlot *slot, const Batch *b,
			  const WaitDeadline *d, const CxWriteRequest *requests,
			  int nrequests, CxWriteResult *results)
{
	for (;;)
	{
		CxSlotState state;
		CxWriterSlot failed;
		GiveUp		g = GIVEUP_NONE;
		bool		dead = false;

		LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
		state = slot->state;
		if (state == CX_SLOT_DONE || state == CX_SLOT_FAILED)
		{
			/* Read before the slot, and a ring batch with it, is freed. */
			for (int i = 0; state == CX_SLOT_DONE && results != NULL && i < nrequests; i++)
				results[i] = b->hdr->requests[i].result;
			failed = *slot;
			(void) give_up_locked(slot);
		}
		else
		{
			dead = !worker_running() ||
				(state == CX_SLOT_TAKEN &&
				 slot->taken_generation != pg_atomic_read_u64(&CxWriter->writer.generation));
			if (dead)
				g = give_up_locked(slot);
		}
		LWLockRelease(CxWriter->lock);

		if (state == CX_SLOT_DONE)
			return;
		if (state == CX_SLOT_FAILED)
			report_failure(call, &failed, requests, nrequests);
		if (dead)
			report_no_worker(call, g);
		if (deadline_passed(d))
			report_timeout(call, d, give_up(slot));
		nap(d);
	}
}

/* On an error out of the wait (cancel, terminate): release the slot and say
 * in the error what became of the rows. */
static void
rethrow_with_outcome(const CxCall *call, CxWriterSlot *slot, const Batch *b,
					 MemoryContext cxt)
{
	GiveUp		g = give_up(slot);
	ErrorData  *edata;
	const char *what = give_up_detail(call, g);

	release_unposted();
	if (b->seg != NULL)
		dsm_detach(b->seg);
	if (what == NULL)
		PG_RE_THROW();
	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	edata->detail = edata->detail ? psprintf("%s\n%s", edata->detail, what)
		: pstrdup(what);
	ReThrowError(edata);
}

static void
check_requests(int kind, const CxWriteRequest *requests, int nrequests)
{
	if (CxWriter == NULL)
		elog(ERROR, "ctxstore writer is not available (shared_preload_libraries)");
	if (nrequests <= 0 || (kind != CX_BATCH_WRITE && nrequests != 1))
		elog(ERROR, "ctxstore: malformed submission to the writer");
	for (int i = 0; kind == CX_BATCH_WRITE && i < nrequests; i++)
		if (requests[i].nrows == 0)
			elog(ERROR, "ctxstore: write request for \"%s\" has no rows",
				 requests[i].uri);
}

/*
 * Lays the batch out: a commit's in the request ring when it fits there
 * now, anything else (a large commit, a full ring, a control request, which
 * may wait for a merge for long and would hold the ring's tail meanwhile)
 * in a DSM segment.
 */
static void
make_batch(const CxCall *call, const CxWriteRequest *requests, int nrequests,
		   Batch *b)
{
	CxBatchPlan plan;

	cx_batch_plan(&plan, call->kind, requests, nrequests);
	b->seg = NULL;
	b->ring_off = 0;
	if (call->kind == CX_BATCH_WRITE &&
		cx_request_ring_alloc(plan.total_len, &held_ring_off))
	{
		holding_ring_chunk = true;
		b->ring_off = held_ring_off;
		b->hdr = cx_request_ring_at(b->ring_off);
		cx_batch_write(&plan, b->hdr);
		return;
	}
	b->seg = cx_batch_create_planned(&plan);
	b->hdr = dsm_segment_address(b->seg);
}

/* Posts the requests as one batch and waits for the outcome. */
static void
call_writer(const CxCall *call, const CxWriteRequest *requests, int nrequests,
			CxWriteResult *results)
{
	MemoryContext cxt = CurrentMemoryContext;
	CxWriterSlot *slot;
	WaitDeadline d;
	Batch		b;

	check_requests(call->kind, requests, nrequests);
	if (!exit_callback_registered)
	{
		before_shmem_exit(backend_exit, (Datum) 0);
		exit_callback_registered = true;
	}
	slot = my_slot(call->kind);
	d = wait_deadline();
	/* Nothing can raise an ERROR between a ring chunk's allocation and
	 * the PG_TRY that frees it on one. */
	make_batch(call, requests, nrequests, &b);

	PG_TRY();
	{
		post_request(call, slot, &b, &d);
		await_outcome(call, slot, &b, &d, requests, nrequests, results);
	}
	PG_CATCH();
	{
		rethrow_with_outcome(call, slot, &b, cxt);
	}
	PG_END_TRY();
	if (b.seg != NULL)
		dsm_detach(b.seg);
}

void
cx_writer_submit(const CxWriteRequest *requests, int nrequests,
				 CxWriteResult *results)
{
	CxCall		call = {CX_BATCH_WRITE, "the commit",
	"could not write to ctxstore store \"%s\""};

	call_writer(&call, requests, nrequests, results);
}

void
cx_writer_control(CxControlKind kind, const CxWriteRequest *request,
				  CxWriteResult *result)
{
	CxCall		call = {kind, NULL, NULL};

	switch (kind)
	{
		case CX_CONTROL_FLUSH:
			call.what = "ctxstore.flush()";
			call.failed = "could not flush ctxstore store \"%s\"";
			break;
		case CX_CONTROL_MERGE:
			call.what = "ctxstore.merge_wal()";
			call.failed = "could not merge the generations of ctxstore store \"%s\"";
			break;
		case CX_CONTROL_CLEANUP:
			call.what = "ctxstore.cleanup_wal()";
			call.failed = "could not clean up ctxstore store \"%s\"";
			break;
	}
	if (call.what == NULL)
		elog(ERROR, "unknown ctxstore control request %d", (int) kind);
	call_writer(&call, request, 1, result);
}
