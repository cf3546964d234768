/*
 * cx_writer_shmem.c — the workers' shared state: the request array (two
 * slots per backend, cx_writer_shmem.h), the request ring commits' batches
 * are laid out in, the status of each worker, the merge job and the
 * per-store counters.
 *
 * All of it exists only when ctxstore is in shared_preload_libraries; without
 * it cx_writer_available() is false and the FDW refuses writes with a hint.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "cx_module.h"
#include "cx_writer_shmem.h"

CxWriterShared *CxWriter = NULL;

/* The request ring and the spinlock that guards it. */
typedef struct CxRequestRing
{
	slock_t		mutex;
	cx_ring    *ring;			/* right after this struct */
} CxRequestRing;

static CxRequestRing *RequestRing = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
writer_shmem_size(void)
{
	return add_size(offsetof(CxWriterShared, slots),
					mul_size(mul_size(MaxBackends, CX_LANES),
							 sizeof(CxWriterSlot)));
}

static Size
ring_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(CxRequestRing)),
					cx_ring_bytes((uint64) cx_request_ring_kb * 1024));
}

static void
writer_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(writer_shmem_size());
	RequestAddinShmemSpace(ring_shmem_size());
	RequestNamedLWLockTranche(CX_WRITER_TRANCHE, 1);
}

static void
worker_info_init(CxWorkerInfo *w)
{
	pg_atomic_init_u32(&w->pid, 0);
	pg_atomic_init_u32(&w->procno, 0);
	pg_atomic_init_u64(&w->generation, 0);
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
		worker_info_init(&CxWriter->writer);
		worker_info_init(&CxWriter->maint);
		pg_atomic_init_u32(&CxWriter->gather_quiet, 0);
		pg_atomic_init_u64(&CxWriter->gathers, 0);
		pg_atomic_init_u64(&CxWriter->gather_sleeps, 0);
		CxWriter->nslots = MaxBackends * CX_LANES;
	}
	RequestRing = ShmemInitStruct("ctxstore request ring", ring_shmem_size(), &found);
	if (!found)
	{
		SpinLockInit(&RequestRing->mutex);
		RequestRing->ring = (cx_ring *) ((char *) RequestRing +
										 MAXALIGN(sizeof(CxRequestRing)));
		cx_ring_init(RequestRing->ring, (uint64) cx_request_ring_kb * 1024);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
cx_shmem_install_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = writer_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = writer_shmem_startup;
}

bool
cx_writer_available(void)
{
	return CxWriter != NULL;
}

void
cx_failure_set(CxFailure *fail, cx_code code, const char *fmt,...)
{
	va_list		ap;

	fail->code = code;
	fail->hint = CX_HINT_NONE;
	va_start(ap, fmt);
	vsnprintf(fail->msg, sizeof(fail->msg), fmt, ap);
	va_end(ap);
}

/*
 * A batch that takes more than a sixteenth of the ring goes to a DSM
 * segment: a few large transactions then never crowd out the many small
 * ones the ring is for (16 sessions' single-row batches fit many times).
 */
Size
cx_request_ring_batch_max(void)
{
	return Min(cx_ring_max_len(RequestRing->ring),
			   RequestRing->ring->size / 16);
}

bool
cx_request_ring_alloc(Size len, uint64 *off)
{
	bool		ok;

	if (len > cx_request_ring_batch_max())
		return false;
	SpinLockAcquire(&RequestRing->mutex);
	ok = cx_ring_alloc(RequestRing->ring, len, off);
	SpinLockRelease(&RequestRing->mutex);
	return ok;
}

void
cx_request_ring_free(uint64 off)
{
	SpinLockAcquire(&RequestRing->mutex);
	cx_ring_free(RequestRing->ring, off);
	SpinLockRelease(&RequestRing->mutex);
}

void *
cx_request_ring_at(uint64 off)
{
	return RequestRing->ring->data + off;
}

Size
cx_request_ring_len(uint64 off)
{
	return cx_ring_len(RequestRing->ring, off);
}

void
cx_slot_free_locked(CxWriterSlot *slot)
{
	Assert(LWLockHeldByMeInMode(CxWriter->lock, LW_EXCLUSIVE));
	if (slot->in_ring)
		cx_request_ring_free(slot->ring_off);
	slot->in_ring = false;
	slot->state = CX_SLOT_FREE;
}

int
cx_slot_finish_locked(int slotno, int nfailed, int failed_request,
					  const CxFailure *failure)
{
	CxWriterSlot *slot = &CxWriter->slots[slotno];

	if (slot->state == CX_SLOT_ABANDONED)
	{
		/* Its requester may be waiting to post its next request. */
		cx_slot_free_locked(slot);
		return slot->requester_procno;
	}
	Assert(slot->state == CX_SLOT_TAKEN);
	slot->state = nfailed == 0 ? CX_SLOT_DONE : CX_SLOT_FAILED;
	slot->nfailed = nfailed;
	slot->failed_request = failed_request;
	slot->outcome_unknown = false;
	if (nfailed > 0)
		slot->failure = *failure;
	return slot->requester_procno;
}

void
cx_set_latch(int procno)
{
	SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/*
 * Called by a backend after it posted a request: whether to set the
 * writer's latch.  While the writer gathers the sessions its last round
 * woke, it asks to be woken once, by the post that completes the count it
 * still waits for, not by each of them: every post before that one takes
 * one from gather_quiet and leaves the latch alone.  Nothing is stranded:
 * a gather always ends in a round, which takes every request queued before
 * it, and a post after the writer cleared the count (before that round
 * took the lock this post took later) sees it cleared.
 */
bool
cx_writer_post_wakes(void)
{
	uint32		quiet = pg_atomic_read_u32(&CxWriter->gather_quiet);

	while (quiet > 0)
	{
		if (pg_atomic_compare_exchange_u32(&CxWriter->gather_quiet, &quiet, quiet - 1))
			return false;
	}
	return true;
}

uint64
cx_worker_start_locked(CxWorkerInfo *w)
{
	uint64		generation = pg_atomic_add_fetch_u64(&w->generation, 1);

	Assert(LWLockHeldByMeInMode(CxWriter->lock, LW_EXCLUSIVE));
	w->last_error[0] = '\0';
	w->last_error_at = 0;
	w->heap_bytes = 0;
	w->cache_bytes = 0;
	pg_atomic_write_u32(&w->procno, MyProc->pgprocno);
	pg_atomic_write_u32(&w->pid, (uint32) MyProcPid);
	return generation;
}

void
cx_worker_note_error(CxWorkerInfo *w, const char *fmt,...)
{
	va_list		ap;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	va_start(ap, fmt);
	vsnprintf(w->last_error, sizeof(w->last_error), fmt, ap);
	va_end(ap);
	w->last_error_at = GetCurrentTimestamp();
	LWLockRelease(CxWriter->lock);
}

/*
 * The entry of uri.  The writer looks one up per group commit under the
 * lock every commit posts under, and with more stores than entries most
 * lookups miss: comparing URIs that share their prefix made strcmp 2% of
 * the writer's CPU with 1,000 stores written round-robin, hence the hash.
 */
CxStoreStatsEntry *
cx_stats_entry(const char *uri, bool create)
{
	CxStoreStatsEntry *victim = NULL;
	size_t		len = strlen(uri);
	uint32		hash;

	Assert(!create || LWLockHeldByMeInMode(CxWriter->lock, LW_EXCLUSIVE));
	if (len == 0 || len >= CX_STATS_URI_MAX)
		return NULL;
	hash = hash_bytes((const unsigned char *) uri, (int) len);
	for (int i = 0; i < CX_STATS_ENTRIES; i++)
	{
		CxStoreStatsEntry *e = &CxWriter->stats[i];

		if (e->uri_hash == hash && strcmp(e->uri, uri) == 0)
		{
			if (create)
				e->last_used = ++CxWriter->stats_clock;
			return e;
		}
		if (victim == NULL || e->uri[0] == '\0' ||
			(victim->uri[0] != '\0' && e->last_used < victim->last_used))
			victim = e;
	}
	if (!create)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	strlcpy(victim->uri, uri, CX_STATS_URI_MAX);
	victim->uri_hash = hash;
	victim->last_used = ++CxWriter->stats_clock;
	return victim;
}

void
cx_counters_add_delta(uint64 *dst, const uint64 *now, uint64 *last, int n)
{
	for (int i = 0; i < n; i++)
	{
		dst[i] += now[i] - last[i];
		last[i] = now[i];
	}
}

/* Records run (its at set now) as the last job of its kind on uri. */
static void
note_run(const char *uri, CxLifecycleJob job, CxLifecycleRun *run)
{
	CxStoreStatsEntry *e;

	if (CxWriter == NULL)
		return;
	run->at = GetCurrentTimestamp();
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	e = cx_stats_entry(uri, true);
	if (e != NULL)
		*(job == CX_LIFECYCLE_GC ? &e->stats.last_gc :
		  &e->stats.last_compaction) = *run;
	LWLockRelease(CxWriter->lock);
}

void
cx_lease_holder(char *holder, size_t len)
{
	snprintf(holder, len, "shard %s, pid %d", cx_shard_id(), MyProcPid);
}

/* A failed job's outcome: "failed: " and the engine's message. */
static void
note_failure(const char *uri, CxLifecycleJob job, const cx_err *err)
{
	CxLifecycleRun run = {0};

	snprintf(run.outcome, sizeof(run.outcome), "failed: %s", err->msg);
	note_run(uri, job, &run);
}

void
cx_stats_note_compact(const char *uri, cx_code rc,
					  const cx_compact_result *res, const cx_err *err)
{
	CxLifecycleRun run = {0};

	if (rc != CX_OK)
	{
		note_failure(uri, CX_LIFECYCLE_COMPACT, err);
		return;
	}
	strlcpy(run.outcome, res->compacted ? "compacted" : "nothing to do",
			sizeof(run.outcome));
	run.bytes_reclaimed = res->bytes_read > res->bytes_written ?
		res->bytes_read - res->bytes_written : 0;
	note_run(uri, CX_LIFECYCLE_COMPACT, &run);
}

void
cx_stats_note_gc(const char *uri, cx_code rc, const cx_gc_result *res,
				 bool dry_run, const cx_err *err)
{
	CxLifecycleRun run = {0};

	if (rc != CX_OK)
	{
		note_failure(uri, CX_LIFECYCLE_GC, err);
		return;
	}
	strlcpy(run.outcome, dry_run ? "dry run" : "collected",
			sizeof(run.outcome));
	run.bytes_reclaimed = res->bytes_deleted;
	run.objects_garbage = res->objects_garbage;
	run.bytes_garbage = res->bytes_garbage;
	note_run(uri, CX_LIFECYCLE_GC, &run);
}

bool
cx_writer_store_stats(const char *uri, CxWriterStoreStats *out)
{
	CxStoreStatsEntry *e;

	memset(out, 0, sizeof(*out));
	if (CxWriter == NULL || uri == NULL)
		return false;
	LWLockAcquire(CxWriter->lock, LW_SHARED);
	e = cx_stats_entry(uri, false);
	if (e != NULL)
		*out = e->stats;
	LWLockRelease(CxWriter->lock);
	return e != NULL;
}
