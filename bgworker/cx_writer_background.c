/*
 * cx_writer_background.c — what the writer worker does besides group
 * commits: the flush sweeper, the time-triggered cleanup, the merges it
 * hands to the maintenance worker, and the control requests (flush,
 * merge_wal, cleanup_wal) that wait for them.
 *
 * The writer is the shard's owner, so it alone decides when its shard is
 * merged; the merge itself (cx_merge_shard, the long part) runs in the
 * maintenance worker on that worker's own store handle, and the writer only
 * runs the drain afterwards (one shard-manifest commit): at once when a
 * control request waits for the merge, otherwise a second later unless a
 * seal, whose commit leaves merged generations out anyway, did it first.  Between two rounds
 * the writer does at most one background step, and a step makes at most one
 * shard-manifest commit (a seal or a drain), so an append never waits on
 * background work longer than that (docs/INVARIANTS.md, invariant 8).
 *
 * Triggers, per store, from the newest table options seen for it:
 *   flush_interval       rows appended unsealed this long ago are sealed
 *   merge_after_generations  after a seal, pending >= it wants a merge
 *   cleanup_interval     seal, then pending >= cleanup_min_generations wants
 *                        a merge
 *   a merge noted        drained a second later unless a seal dropped its
 *                        generations first (cx_resident_note_merged)
 * A wanted merge covers every generation listed at that moment; the
 * maintenance worker merges in steps of merge_max_generations /
 * merge_max_bytes until it has.  One merge job is out at a time; stores
 * wanting one are served oldest request first.
 *
 * Catching up: a merge call costs about the same for one small generation
 * as for many (manifest reads, the base key check, one base commit, and one
 * new base fragment per call), so a store whose seals outpace steps of
 * merge_max_generations would only fall further behind.  A job posted when
 * pending is at least twice merge_max_generations takes its whole backlog
 * per call, up to CATCHUP_FACTOR times merge_max_generations and at most
 * CATCHUP_MAX_GENERATIONS (merge_max_bytes still applies), so one call
 * stays bounded.  A job that still leaves more pending than that step
 * marks the store's merges as behind (stats) and says so in the log, at
 * most once a minute.
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "ctxstore/engine.h"
#include "cx_writer_int.h"

/* An unsealed memtable this large is sealed without waiting for
 * flush_interval (memory, not visibility, is the reason). */
#define MEMTABLE_SEAL_BYTES ((uint64) 64 * 1024 * 1024)
/* After a failed timed seal, the next try comes no sooner than this. */
#define SEAL_RETRY_MS 5000
/* A catch-up merge call takes this many times merge_max_generations... */
#define CATCHUP_FACTOR 64
/* ...but never more generations than this. */
#define CATCHUP_MAX_GENERATIONS 1024
/* How often a store's merges-behind warning may repeat. */
#define BEHIND_WARN_INTERVAL_MS 60000

/* The merge job this writer handed out (NULL: none, or a predecessor's). */
static dsm_segment *job_seg = NULL;
static char *job_uri = NULL;

/* ---- waiters: control requests answered after a merge ---- */

/* After a merge job: each waiter counts what it merged; those whose
 * generations are merged (or for which nothing is left) are answered. */
static void
waiters_advance(CxResident *r, uint32 merged, uint64 merged_through)
{
	dlist_mutable_iter it;

	dlist_foreach_modify(it, &r->waiters)
	{
		/* cppcheck-suppress nullPointer ; it takes offsetof() for a NULL dereference */
		CxWaiter   *w = dlist_container(CxWaiter, node, it.cur);

		w->result.generations_merged += merged;
		if (merged == 0 || merged_through >= w->until_gen)
		{
			cx_resident_result(r, &w->result);
			cx_waiter_finish(w, NULL);
		}
	}
}

static void
waiter_add(CxResident *r, int slotno, dsm_segment *seg, const CxWriteResult *res)
{
	CxWaiter   *w = MemoryContextAllocZero(TopMemoryContext, sizeof(CxWaiter));

	w->slotno = slotno;
	w->seg = seg;
	w->until_gen = cx_resident_newest_gen(r);
	w->result = *res;
	dlist_push_tail(&r->waiters, &w->node);
	cx_merge_want(r, w->until_gen);
}

CxControlOutcome
cx_control_start(CxResident *r, CxControlKind kind, int slotno,
				 dsm_segment *seg, CxWriteResult *res, CxFailure *fail)
{
	uint32		pending;

	if (cx_resident_seal(r, &res->sealed_rows, fail) != CX_OK)
		return CX_CONTROL_FAILED;
	cx_resident_result(r, res);
	pending = cx_resident_pending(r);
	if (kind == CX_CONTROL_FLUSH || pending == 0 ||
		(kind == CX_CONTROL_CLEANUP &&
		 pending < (uint32) r->settings.cleanup_min_generations))
		return CX_CONTROL_DONE;
	waiter_add(r, slotno, seg, res);
	return CX_CONTROL_WAITING;
}

/* ---- merge jobs ---- */

/* The most generations one merge call takes when the store is behind:
 * its backlog one call clears (never fewer than merge_max_generations). */
static uint32
catch_up_generations(const CxStoreSettings *s)
{
	uint64		most = (uint64) s->merge_max_generations * CATCHUP_FACTOR;

	return Max((uint32) s->merge_max_generations,
			   (uint32) Min(most, CATCHUP_MAX_GENERATIONS));
}

/* The generations each merge call of a job takes, pending generations
 * unmerged when it is posted. */
static uint32
merge_step_generations(const CxStoreSettings *s, uint32 pending)
{
	if (pending < 2 * (uint64) s->merge_max_generations)
		return (uint32) s->merge_max_generations;
	return Min(pending, catch_up_generations(s));
}

/* The store whose merge has waited longest, among those not merging. */
static CxResident *
next_merge(void)
{
	CxResident *best = NULL;

	for (int i = 0; i < cx_stores_max(); i++)
	{
		CxOpenStore *os = cx_stores_at(i);
		CxResident *r = os != NULL ? os->state : NULL;

		if (r == NULL || r->merge_until == 0 || r->merge_running || r->w == NULL)
			continue;
		if (best == NULL || r->merge_wanted_at < best->merge_wanted_at)
			best = r;
	}
	return best;
}

/* The stores waiting for a merge job, for the view (queue_depth). */
static void
publish_merges_wanted(int n)
{
	/* Only this process writes it, so reading it unlocked is safe; most
	 * steps change nothing and need not take the lock every loop. */
	if (CxWriter->merges_wanted == n)
		return;
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	CxWriter->merges_wanted = n;
	LWLockRelease(CxWriter->lock);
}

static bool
wants_merge(const CxResident *r)
{
	return r != NULL && r->merge_until != 0;
}

/* Hands the longest-waiting wanted merge to the maintenance worker, with
 * the store's options and settings as the writer has them. */
static bool
job_dispatch(void)
{
	CxResident *r;
	CxWriteRequest req = {0};
	dsm_segment *seg;
	CxJobState state;

	LWLockAcquire(CxWriter->lock, LW_SHARED);
	state = CxWriter->job.state;
	LWLockRelease(CxWriter->lock);
	if (state != CX_JOB_IDLE || (r = next_merge()) == NULL)
		return false;

	req.uri = r->os->uri;
	req.options = r->os->options;
	req.noptions = r->os->noptions;
	req.settings = r->settings;
	seg = cx_batch_create(CX_BATCH_MERGE_JOB, &req, 1);
	job_uri = MemoryContextStrdup(TopMemoryContext, r->os->uri);

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	CxWriter->job.state = CX_JOB_QUEUED;
	CxWriter->job.id++;
	strlcpy(CxWriter->job.uri, r->os->uri, sizeof(CxWriter->job.uri));
	CxWriter->job.handle = dsm_segment_handle(seg);
	CxWriter->job.until_gen = r->merge_until;
	CxWriter->job.shard_version = cx_sw_manifest(r->w)->version;
	CxWriter->job.step_generations =
		merge_step_generations(&r->settings, cx_resident_pending(r));
	LWLockRelease(CxWriter->lock);

	job_seg = seg;
	r->merge_running = true;
	if (pg_atomic_read_u32(&CxWriter->maint.pid) != 0)
		cx_set_latch(pg_atomic_read_u32(&CxWriter->maint.procno));
	return true;
}

/* After a job and its drain: whether the store has more generations
 * pending than one catch-up call takes (the stats say so; the log at most
 * once a minute). */
static void
note_merges_behind(CxResident *r)
{
	uint32		pending = cx_resident_pending(r);
	uint32		target = catch_up_generations(&r->settings);
	bool		behind = pending > target;
	TimestampTz now = GetCurrentTimestamp();
	CxStoreStatsEntry *e;

	if (behind &&
		TimestampDifferenceExceeds(r->behind_warned_at, now, BEHIND_WARN_INTERVAL_MS))
	{
		r->behind_warned_at = now;
		ereport(WARNING,
				errmsg("ctxstore writer: merges of shard %s of store \"%s\" are behind: %u generations are still unmerged after a merge, more than one merge call takes (%u)",
					   cx_shard_id(), r->os->uri, pending, target),
				errhint("Seals outpace merges.  Raise the store's merge_max_generations or merge_max_bytes, or batch more rows per transaction."));
	}
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	e = cx_stats_entry(r->os->uri, true);
	if (e != NULL)
	{
		e->stats.merges_behind = behind;
		e->stats.merge_target_generations = target;
	}
	LWLockRelease(CxWriter->lock);
}

/* The store's side of a finished job: drain, answer waiters, and keep the
 * merge wanted if generations it wanted are still unmerged. */
static void
merge_finished(CxResident *r, const CxMergeJob *job)
{
	CxFailure	fail;

	r->merge_running = false;
	if (!job->ok)
	{
		r->merge_until = 0;
		cx_waiters_fail(r, &job->failure);
		return;
	}
	/* A waiter reads the shard once answered: it gets the drain now. */
	if (job->generations > 0 && !dlist_is_empty(&r->waiters))
		(void) cx_resident_drain(r, job->merged_through, &fail);
	else if (job->generations > 0)
		cx_resident_note_merged(r, job->merged_through);
	if (job->generations == 0 || job->merged_through >= r->merge_until)
		r->merge_until = 0;
	waiters_advance(r, job->generations, job->merged_through);
	note_merges_behind(r);
	cx_resident_publish(r);
}

/* The job's outcome, if it has one: DONE, or RUNNING in a maintenance
 * worker that is gone.  Sets the job IDLE then. */
static bool
job_take_outcome(CxMergeJob *out)
{
	CxMergeJob *job = &CxWriter->job;
	bool		have = false;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	if (job->state == CX_JOB_RUNNING &&
		(pg_atomic_read_u32(&CxWriter->maint.pid) == 0 ||
		 pg_atomic_read_u64(&CxWriter->maint.generation) != job->taken_generation))
	{
		job->ok = false;
		cx_failure_set(&job->failure, CX_ERR_IO,
					   "the ctxstore maintenance worker stopped during the merge");
		job->state = CX_JOB_DONE;
	}
	if (job->state == CX_JOB_DONE)
	{
		*out = *job;
		job->state = CX_JOB_IDLE;
		have = true;
	}
	LWLockRelease(CxWriter->lock);
	return have;
}

/* Collects a finished job (drain: one commit); true if it did. */
static bool
job_collect(void)
{
	CxMergeJob	job;
	CxResident *r;

	if (!job_take_outcome(&job))
		return false;
	if (job_seg == NULL)
		return false;			/* a predecessor's job: its claim drained */
	dsm_detach(job_seg);
	job_seg = NULL;
	r = cx_resident_find(job_uri);
	pfree(job_uri);
	job_uri = NULL;
	if (r != NULL)
		merge_finished(r, &job);
	return true;
}

void
cx_merge_job_adopt(void)
{
	/* A queued job's segment died with the writer that created it. */
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	if (CxWriter->job.state == CX_JOB_QUEUED)
		CxWriter->job.state = CX_JOB_IDLE;
	LWLockRelease(CxWriter->lock);
}

/* ---- flush sweeper and cleanup ---- */

static TimestampTz
flush_due_at(const CxResident *r)
{
	TimestampTz due;

	if (r->w == NULL || r->unsealed_since == 0)
		return 0;
	if (cx_sw_memtable_bytes(r->w) >= MEMTABLE_SEAL_BYTES)
		due = r->unsealed_since;
	else if (r->settings.flush_interval_s > 0)
		due = TimestampTzPlusMilliseconds(r->unsealed_since,
										  r->settings.flush_interval_s * 1000L);
	else
		return 0;
	return Max(due, r->seal_retry_at);
}

static TimestampTz
cleanup_due_at(const CxResident *r)
{
	return r->w != NULL && r->settings.cleanup_interval_s > 0 ? r->next_cleanup : 0;
}

static TimestampTz
drain_due_at(const CxResident *r)
{
	return r->w != NULL ? r->drain_at : 0;
}

/* The drain of a merge noted earlier; nothing to commit if seals since
 * left its generations out. */
static void
timed_drain(CxResident *r)
{
	CxFailure	fail;

	r->drain_at = 0;
	(void) cx_resident_drain(r, 0, &fail);
	cx_resident_publish(r);
}

static void
timed_seal(CxResident *r)
{
	CxFailure	fail;
	uint64		sealed;

	if (cx_resident_seal(r, &sealed, &fail) != CX_OK)
		r->seal_retry_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   SEAL_RETRY_MS);
	cx_resident_publish(r);
}

/* Cleanup: seal, then merge when enough generations are pending. */
static void
timed_cleanup(CxResident *r)
{
	r->next_cleanup = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												  r->settings.cleanup_interval_s * 1000L);
	timed_seal(r);
	if (r->w != NULL &&
		cx_resident_pending(r) >= (uint32) r->settings.cleanup_min_generations &&
		cx_resident_pending(r) > 0)
		cx_merge_want(r, cx_resident_newest_gen(r));
}

/* Carries out r's first timer that is due by now; false if none is. */
static bool
run_due_timer(CxResident *r, TimestampTz now)
{
	TimestampTz due = flush_due_at(r);

	if (due != 0 && due <= now)
	{
		timed_seal(r);
		return true;
	}
	due = cleanup_due_at(r);
	if (due != 0 && due <= now)
	{
		timed_cleanup(r);
		return true;
	}
	due = drain_due_at(r);
	if (due != 0 && due <= now)
	{
		timed_drain(r);
		return true;
	}
	return false;
}

/*
 * How often a busy writer walks its open stores for timers that are due,
 * counting the merges they want on the way.  The walk visits every open
 * store: run between every two rounds, a few milliseconds apart with 1,000
 * stores written round-robin, it was 4% of the writer's CPU.  The timers
 * are a second or more (the memtable's size bound bounds memory, not
 * latency), so one found this much later makes no difference; an idle
 * writer sleeps until the first is due (cx_writer_next_due_ms).
 */
#define TIMER_WALK_INTERVAL_MS 10

static TimestampTz last_walk;

/* Milliseconds from now until the next walk may run (0: at once). */
static long
ms_until_walk(TimestampTz now)
{
	TimestampTz next = TimestampTzPlusMilliseconds(last_walk, TIMER_WALK_INTERVAL_MS);

	return next > now ? TimestampDifferenceMilliseconds(now, next) + 1 : 0;
}

/* The first store with a timer due: one seal or drain. */
static bool
timers_step(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			wanted = 0;

	if (ms_until_walk(now) > 0)
		return false;
	last_walk = now;
	for (int i = 0; i < cx_stores_max(); i++)
	{
		CxOpenStore *os = cx_stores_at(i);
		CxResident *r = os != NULL ? os->state : NULL;

		if (r == NULL)
			continue;
		if (run_due_timer(r, now))
		{
			/* Walked again at once: more may be due. */
			last_walk = 0;
			return true;
		}
		wanted += wants_merge(r);
	}
	publish_merges_wanted(wanted);
	return false;
}

long
cx_writer_next_due_ms(long cap)
{
	TimestampTz now = GetCurrentTimestamp();
	long		ms = cap;
	int			wanted = 0;

	for (int i = 0; i < cx_stores_max(); i++)
	{
		CxOpenStore *os = cx_stores_at(i);
		CxResident *r = os != NULL ? os->state : NULL;
		TimestampTz due[3];

		if (r == NULL)
			continue;
		wanted += wants_merge(r);
		due[0] = flush_due_at(r);
		due[1] = cleanup_due_at(r);
		due[2] = drain_due_at(r);
		for (int k = 0; k < 3; k++)
			if (due[k] != 0)
				ms = Min(ms, TimestampDifferenceMilliseconds(now, due[k]));
	}
	/* Before the writer sleeps, the view gets the count as it stands. */
	publish_merges_wanted(wanted);
	/* A timer due already waits for the next walk, without a spin. */
	return Max(ms, ms_until_walk(now));
}

bool
cx_writer_background_step(void)
{
	bool		did = job_collect();

	if (!did)
		did = timers_step();
	if (job_dispatch())
		did = true;
	return did;
}
