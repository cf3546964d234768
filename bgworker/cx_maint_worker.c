/*
 * cx_maint_worker.c — the maintenance worker: runs the merges the writer
 * worker hands it, on store handles of its own, so that the long part of a
 * merge never holds up appends.
 *
 * The writer is the shard's owner and decides when to merge; it posts one
 * job at a time (CxWriter->job) carrying the store's URI, the options the
 * writer opened it with (the same resolved server and user-mapping options,
 * credentials included) and the table's settings.  This worker merges the
 * shard ctxstore.shard_id of that store with cx_merge_shard() until the
 * merge watermark reaches the generation the job names (each call merges
 * at most the job's step of generations, merge_max_generations or more when
 * the store is behind, and merge_max_bytes, oldest first, and always makes
 * progress), then reports and wakes the writer, which drains.  After a
 * job that merged it brings the store's key index up to date
 * (cx_keyindex_update_table), never on the append path, and, when the
 * table sets iceberg_interval, publishes the store as an Iceberg snapshot
 * (cx_iceberg_publish) once that interval has passed since the last
 * publish: at once when it has, otherwise from the idle loop when it does
 * (so the last merge of a burst is published too).
 *
 * When the table sets compact_interval or gc_interval it also compacts the
 * store or collects its garbage at that interval, on the same handle, with
 * the settings of the last job: those carry the versions tables pin in
 * every database that sent the writer a request for the store, which GC
 * keeps (docs/design/maintenance.md, "Pinned versions").
 *
 * A job is bounded: each call merges at least one generation and the target
 * is fixed when the job is posted.  SIGTERM stops it between two calls
 * (what was merged is reported; the rest stays unmerged, which is safe).
 * If this worker dies mid-merge, the writer notices (pid or generation
 * changed) and reports the job failed; a merge that committed is then
 * drained by the next drain or claim, one that did not left orphan
 * fragments for GC.
 *
 * With ctxstore.maintenance_nice above 0 it runs at a lower CPU priority:
 * a merge takes a core for seconds, and commits then need not wait for a
 * CPU behind it, at the price of slower merges on a saturated machine
 * (docs/design/workers.md, "The maintenance worker").
 */
#include "postgres.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "ctxstore/engine.h"
#include "cx_writer_int.h"

PGDLLEXPORT void cx_maint_main(Datum main_arg);

#define IDLE_WAIT_MS 10000L
/* Stores this worker keeps open between merges. */
#define CX_MAINT_STORES 8

/* A taken job as this worker runs it. */
typedef struct MaintJob
{
	uint64		id;
	dsm_handle	handle;
	uint64		until_gen;
	uint64		shard_version;	/* merge from it (cx_merge_options) */
	uint32		step_generations;
	char		uri[CX_STATS_URI_MAX];
	/* outcome */
	bool		ok;
	CxFailure	failure;
	uint32		generations;
	uint64		merged_through;
	uint64		rows_written;
	uint64		bytes_merged;
	uint64		key_conflicts;
	char		upsert_key[NAMEDATALEN];	/* indexed beside the key */
	uint32		commits;
	int			iceberg_interval_s; /* 0: no automatic publish */
	CxOpenStore *store;
} MaintJob;

/* What this worker keeps per open store (CxOpenStore.state): the Iceberg
 * publish a merge left due, the timed compaction and GC. */
typedef struct MaintStoreState
{
	int			iceberg_interval_s;
	TimestampTz last_publish;	/* 0: never by this worker */
	bool		publish_pending;
	CxStoreSettings settings;	/* the last job's: compaction's and GC's
								 * options, the pinned versions */
	TimestampTz next_compact;	/* 0: compact_interval is off */
	TimestampTz next_gc;		/* 0: gc_interval is off */
} MaintStoreState;

/* A timed lifecycle job of a store. */
typedef void (*TimedJob) (CxOpenStore *os, MaintStoreState *ms);

/* The job's merge options: its step of generations, the store's other
 * settings. */
static void
merge_options_from(const CxStoreSettings *s, uint32 step_generations,
				   cx_merge_options *o)
{
	cx_merge_options_default(o);
	o->max_generations = step_generations;
	o->max_bytes = (uint64_t) s->merge_max_bytes;
	o->target_rows_per_fragment = (uint64_t) s->target_rows_per_fragment;
	o->fragment.compression_level = s->compression_level;
	o->sort_key = s->sort_key[0] != '\0' ? s->sort_key : NULL;
}

static void
set_maint_open(const char *uri, bool open)
{
	CxStoreStatsEntry *e;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	e = cx_stats_entry(uri, true);
	if (e != NULL)
		e->maint_open = open;
	LWLockRelease(CxWriter->lock);
}

static void
maint_closing(CxOpenStore *os)
{
	set_maint_open(os->uri, false);
	if (os->state != NULL)
		pfree(os->state);
	os->state = NULL;
}

static void
job_fail(MaintJob *job, cx_code code, const char *msg)
{
	job->ok = false;
	cx_failure_set(&job->failure, code, "%s", msg);
}

/* QUEUED -> RUNNING, if a job is queued. */
static bool
take_job(uint64 generation, MaintJob *job)
{
	CxMergeJob *shared = &CxWriter->job;
	bool		taken = false;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	if (shared->state == CX_JOB_QUEUED)
	{
		shared->state = CX_JOB_RUNNING;
		shared->taken_generation = generation;
		memset(job, 0, sizeof(*job));
		job->id = shared->id;
		job->handle = shared->handle;
		job->until_gen = shared->until_gen;
		job->shard_version = shared->shard_version;
		job->step_generations = shared->step_generations;
		strlcpy(job->uri, shared->uri, sizeof(job->uri));
		taken = true;
	}
	LWLockRelease(CxWriter->lock);
	return taken;
}

/* A merge that found keys written by two shards says so once, with a
 * count and an example (the later commit won without a uniqueness check). */
static void
log_key_conflicts(const MaintJob *job, const cx_merge_result *res)
{
	if (res->key_conflicts == 0)
		return;
	ereport(LOG,
			errmsg("ctxstore maintenance: merge of shard %s of store \"%s\" found %llu keys also written by another shard, for example %s",
				   cx_shard_id(), job->uri,
				   (unsigned long long) res->key_conflicts,
				   res->key_conflict_example),
			errhint("Across clusters uniqueness is not checked at commit: the later commit of such a key wins."));
}

/* Merges until the watermark reaches the job's generation, nothing is left
 * to merge, a call fails, or the worker is asked to stop. */
static void
merge_until(MaintJob *job, const cx_merge_options *opt)
{
	cx_merge_result res;
	cx_err		err;

	job->ok = true;
	for (;;)
	{
		if (cx_merge_shard(job->store->handle, cx_shard_id(), opt, &res, &err) != CX_OK)
		{
			ereport(LOG,
					errmsg("ctxstore maintenance: merging shard %s of store \"%s\" failed",
						   cx_shard_id(), job->uri),
					errdetail_internal("%s", err.msg));
			job_fail(job, err.code, err.msg);
			return;
		}
		if (res.generations == 0)
			return;
		job->generations += res.generations;
		job->merged_through = res.merged_through;
		job->rows_written += res.rows_written;
		job->bytes_merged += res.bytes_merged;
		job->key_conflicts += res.key_conflicts;
		log_key_conflicts(job, &res);
		job->commits++;
		if (res.merged_through >= job->until_gen || ShutdownRequestPending)
			return;
	}
}

/* This worker's state of an open store, made on first use. */
static MaintStoreState *
store_state(CxOpenStore *os)
{
	if (os->state == NULL)
		os->state = MemoryContextAllocZero(TopMemoryContext,
										   sizeof(MaintStoreState));
	return os->state;
}

/* When a timed job is next due: off (0) without an interval, else kept,
 * or interval_s from now when it was off. */
static void
schedule_first(TimestampTz *next, int interval_s)
{
	if (interval_s <= 0)
		*next = 0;
	else if (*next == 0)
		*next = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											(int64) interval_s * 1000);
}

/* A job's settings, for the store's timed compaction and GC: the first of
 * each is due its interval after the job that set it. */
static void
note_settings(CxOpenStore *os, const CxStoreSettings *settings)
{
	MaintStoreState *ms = store_state(os);

	ms->settings = *settings;
	schedule_first(&ms->next_compact, settings->compact_interval_s);
	schedule_first(&ms->next_gc, settings->gc_interval_s);
}

/* Opens the job's store (this worker's own handle) and merges. */
static void
run_job(MaintJob *job)
{
	dsm_segment *seg = dsm_attach(job->handle);
	CxBatchHeader *hdr;
	CxBatchView view;
	cx_merge_options opt;
	const char *why;
	cx_err		err;

	if (seg == NULL)
	{
		job_fail(job, CX_ERR_IO, "the writer withdrew the merge before it started");
		return;
	}
	hdr = dsm_segment_address(seg);
	if (!cx_batch_check(hdr, dsm_segment_map_length(seg), &why) ||
		hdr->kind != CX_BATCH_MERGE_JOB)
		job_fail(job, CX_ERR_CORRUPT, "malformed merge job");
	else
	{
		cx_batch_view(hdr, 0, &view);
		if (cx_stores_get(&view, &job->store, &err) != CX_OK)
			job_fail(job, err.code, err.msg);
		else
		{
			set_maint_open(job->uri, true);
			merge_options_from(view.settings, job->step_generations, &opt);
			opt.shard_version = job->shard_version;
			strlcpy(job->upsert_key, view.settings->upsert_key,
					sizeof(job->upsert_key));
			job->iceberg_interval_s = view.settings->iceberg_interval_s;
			note_settings(job->store, view.settings);
			merge_until(job, &opt);
		}
		pfree(view.options);
	}
	dsm_detach(seg);
}

/* Brings the key index of os (its key, and upsert_key unless "") up to
 * date with its base; a failure is logged (see index_after_merge). */
static void
index_store(CxOpenStore *os, const char *upsert_key)
{
	cx_keyindex_result res;
	cx_err		err;

	if (cx_keyindex_update_table(os->handle,
								 upsert_key[0] != '\0' ? upsert_key : NULL,
								 NULL, &res, &err) != CX_OK)
		ereport(LOG,
				errmsg("ctxstore maintenance: indexing store \"%s\" failed",
					   os->uri),
				errdetail_internal("%s", err.msg));
}

/*
 * After a job that merged: brings the store's key index up to date with the
 * fragments the merge added (and merges the index's segments when there are
 * too many) before the job is reported done, so that a merge_wal() that
 * returns has its index commit behind it (versions are predictable).  It
 * reads only the new fragments' key column, far less than the merge read,
 * and appends never wait for jobs.  A failure only costs lookup speed
 * (fragments not indexed are read by column), so it is logged and the next
 * merge tries again.
 */
static void
index_after_merge(MaintJob *job)
{
	if (!job->ok || job->commits == 0 || job->store == NULL ||
		ShutdownRequestPending)
		return;
	index_store(job->store, job->upsert_key);
}

/* After a job that merged: an Iceberg publish of the store is due when
 * its table sets iceberg_interval. */
static void
note_publish_due(MaintJob *job)
{
	MaintStoreState *ms;

	if (!job->ok || job->commits == 0 || job->store == NULL ||
		job->iceberg_interval_s <= 0)
		return;
	ms = store_state(job->store);
	ms->iceberg_interval_s = job->iceberg_interval_s;
	ms->publish_pending = true;
}

/* Publishes os (its publish is due now).  A failure is logged and tried
 * again an interval later; it only delays what other engines see. */
static void
publish_iceberg(CxOpenStore *os, MaintStoreState *ms, TimestampTz now)
{
	cx_iceberg_result res;
	cx_err		err;

	ms->last_publish = now;
	if (cx_iceberg_publish(os->handle, &res, &err) != CX_OK)
	{
		ereport(LOG,
				errmsg("ctxstore maintenance: publishing store \"%s\" as an Iceberg table failed",
					   os->uri),
				errdetail_internal("%s", err.msg));
		return;
	}
	ms->publish_pending = false;
	if (res.published)
		elog(DEBUG1, "ctxstore maintenance: published base version " UINT64_FORMAT " of store \"%s\" as Iceberg snapshot " INT64_FORMAT,
			 res.base_version, os->uri, res.snapshot_id);
	cx_iceberg_result_free(&res);
}

/* Milliseconds from now until due (IDLE_WAIT_MS at most). */
static long
wait_until(TimestampTz due, TimestampTz now)
{
	return Min(IDLE_WAIT_MS, (long) ((due - now) / 1000) + 1);
}

/* Publishes os if its publish is due; returns how long until it is. */
static long
publish_if_due(CxOpenStore *os, MaintStoreState *ms, TimestampTz now)
{
	TimestampTz due = TimestampTzPlusMilliseconds(ms->last_publish,
												  (int64) ms->iceberg_interval_s * 1000);

	if (!ms->publish_pending)
		return IDLE_WAIT_MS;
	if (ms->last_publish != 0 && now < due)
		return wait_until(due, now);
	publish_iceberg(os, ms, now);
	return IDLE_WAIT_MS;
}

/* Progress callback of this worker's lifecycle jobs: shown in
 * ctxstore.workers; SIGTERM asks the job to stop (the store stays
 * consistent). */
static bool
show_progress(void *arg, const char *phase, uint64_t done, uint64_t total)
{
	(void) arg;
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	strlcpy(CxWriter->maint.phase, phase, sizeof(CxWriter->maint.phase));
	CxWriter->maint.progress_done = done;
	CxWriter->maint.progress_total = total;
	LWLockRelease(CxWriter->lock);
	return !ShutdownRequestPending;
}

/* Adds to *requests what os's handle asked of the object store since the
 * last time; the caller holds CxWriter->lock. */
static void
add_requests(CxOpenStore *os, cx_objstats *requests)
{
	cx_counters_add_delta((uint64 *) requests,
						  (const uint64 *) &os->handle->stats,
						  (uint64 *) &os->published, CX_NCOUNTERS(cx_objstats));
}

/* The requests of os's handle since the last publish, as those of the job
 * that made them: the store stats field at offset. */
static void
publish_requests(CxOpenStore *os, size_t offset)
{
	CxStoreStatsEntry *e;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	e = cx_stats_entry(os->uri, true);
	if (e != NULL)
		add_requests(os, (cx_objstats *) ((char *) &e->stats + offset));
	LWLockRelease(CxWriter->lock);
}

/* Compacts os with opt (its tables' settings), then indexes the outputs.
 * Another holder of the lease (BUSY) or a stop is not a failure.  A run
 * that found nothing to do is recorded only if note_idle. */
static void
compact_with(CxOpenStore *os, MaintStoreState *ms, cx_compact_options *opt,
			 bool note_idle)
{
	cx_job_progress progress = {show_progress, NULL};
	cx_compact_result res;
	char		holder[NAMEDATALEN + 32];
	cx_code		rc;
	cx_err		err;

	cx_lease_holder(holder, sizeof(holder));
	opt->holder = holder;
	rc = cx_compact(os->handle, opt, &progress, &res, &err);
	(void) show_progress(NULL, "", 0, 0);
	if (note_idle || rc != CX_OK || res.compacted)
		cx_stats_note_compact(os->uri, rc, &res, &err);
	if (rc == CX_OK && res.compacted)
		index_store(os, ms->settings.upsert_key);
	publish_requests(os, offsetof(CxWriterStoreStats, compaction_requests));
	if (rc != CX_OK && rc != CX_ERR_BUSY && rc != CX_ERR_CANCELED)
	{
		ereport(LOG,
				errmsg("ctxstore maintenance: compacting store \"%s\" failed",
					   os->uri),
				errdetail_internal("%s", err.msg));
		cx_worker_note_error(&CxWriter->maint, "store %s: %s", os->uri,
							 err.msg);
	}
}

/* The timed compaction (compact_interval): every small fragment counts. */
static void
compact_store(CxOpenStore *os, MaintStoreState *ms)
{
	cx_compact_options opt;

	cx_compact_options_from(&ms->settings, &opt);
	compact_with(os, ms, &opt, true);
}

/*
 * What a compaction after a merge job may take: one tier's worth
 * (compact_min_fragments) of fragments below a sixteenth of
 * target_rows_per_fragment, so that it rewrites at most half a target's
 * rows (about a second here) while the next merge job waits behind it;
 * larger fragments are compact_interval's and ctxstore.compact()'s.
 */
#define AFTER_MERGE_SMALL_DIVISOR 16

static void
after_merge_options(const MaintStoreState *ms, cx_compact_options *opt)
{
	cx_compact_options_from(&ms->settings, opt);
	opt->small_rows = Max(opt->target_rows_per_fragment / AFTER_MERGE_SMALL_DIVISOR, 1);
	opt->max_inputs = Max(opt->min_fragments, 2);
}

/*
 * After a job that merged, unless the table sets compact_on_merge 'false':
 * compacts the smallest size tier of small base fragments once it holds
 * compact_min_fragments (cx_compact finds that first, without the lease: a
 * job with no full tier writes nothing more, and no run is recorded).
 * Each merge adds a fragment and every base version lists them all, so
 * without it a store under steady ingest makes each later commit larger
 * and each merge slower.  It runs before the job is reported done, so
 * that a merge_wal() that returns has it behind it too (versions are
 * predictable), and appends never wait for it.
 */
static void
compact_after_merge(MaintJob *job)
{
	MaintStoreState *ms;
	cx_compact_options opt;

	if (!job->ok || job->commits == 0 || job->store == NULL ||
		ShutdownRequestPending)
		return;
	ms = store_state(job->store);
	if (!ms->settings.compact_on_merge)
		return;
	/* The merge's requests are the merge's, not the compaction's. */
	publish_requests(job->store,
					 offsetof(CxWriterStoreStats, maintenance_requests));
	after_merge_options(ms, &opt);
	compact_with(job->store, ms, &opt, false);
}

/* Logs a failed GC and keeps it as the worker's last error. */
static void
gc_failed(CxOpenStore *os, const cx_err *err)
{
	ereport(LOG,
			errmsg("ctxstore maintenance: collecting garbage of store \"%s\" failed",
				   os->uri),
			errdetail_internal("%s", err->msg));
	cx_worker_note_error(&CxWriter->maint, "store %s: %s", os->uri, err->msg);
}

/* Collects os's garbage with its tables' settings, keeping the versions
 * tables pin in every database that told this cluster's writer of them;
 * one that pins more than they carry stops it (GC from SQL still runs). */
static void
gc_store(CxOpenStore *os, MaintStoreState *ms)
{
	cx_job_progress progress = {show_progress, NULL};
	uint64		pinned[CX_PINS_MAX];
	cx_gc_options opt;
	cx_gc_result res;
	cx_code		rc;
	cx_err		err;

	memset(&res, 0, sizeof(res));
	if (ms->settings.pins_overflow)
	{
		rc = cx_err_set(&err, CX_ERR_INVALID,
						"more than %d base versions of the store are pinned: run ctxstore.gc() from each database that pins them",
						CX_PINS_MAX);
		cx_stats_note_gc(os->uri, rc, &res, false, &err);
		gc_failed(os, &err);
		return;
	}
	cx_gc_options_from(&ms->settings, &opt);
	opt.npinned = cx_settings_pinned(&ms->settings, pinned);
	opt.pinned = pinned;
	rc = cx_gc(os->handle, &opt, &progress, &res, &err);
	(void) show_progress(NULL, "", 0, 0);
	cx_stats_note_gc(os->uri, rc, &res, false, &err);
	publish_requests(os, offsetof(CxWriterStoreStats, gc_requests));
	if (rc != CX_OK && rc != CX_ERR_CANCELED)
		gc_failed(os, &err);
}

/* Runs job on os if *next (its interval_s) has passed; returns how long
 * until the next one is due. */
static long
run_if_due(TimedJob job, TimestampTz *next, int interval_s, CxOpenStore *os,
		   MaintStoreState *ms, TimestampTz now)
{
	int64		interval_ms = (int64) interval_s * 1000;

	if (*next == 0)
		return IDLE_WAIT_MS;
	if (now < *next)
		return wait_until(*next, now);
	job(os, ms);
	*next = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), interval_ms);
	return Min(IDLE_WAIT_MS, interval_ms);
}

/* Does what is due on every open store (an Iceberg publish, a timed
 * compaction or GC); returns how long until the next is (IDLE_WAIT_MS at
 * most). */
static long
timed_work_due(void)
{
	TimestampTz now = GetCurrentTimestamp();
	long		wait_ms = IDLE_WAIT_MS;

	for (int i = 0; i < cx_stores_max(); i++)
	{
		CxOpenStore *os = cx_stores_at(i);
		MaintStoreState *ms = os != NULL ? os->state : NULL;

		if (ms == NULL || ShutdownRequestPending)
			continue;
		wait_ms = Min(wait_ms, publish_if_due(os, ms, now));
		wait_ms = Min(wait_ms, run_if_due(compact_store, &ms->next_compact,
										  ms->settings.compact_interval_s,
										  os, ms, now));
		wait_ms = Min(wait_ms, run_if_due(gc_store, &ms->next_gc,
										  ms->settings.gc_interval_s,
										  os, ms, now));
	}
	return wait_ms;
}

/* The store's merge counters and this worker's requests on it. */
static void
publish_store_locked(MaintJob *job)
{
	CxStoreStatsEntry *e = cx_stats_entry(job->uri, true);
	CxWriterStoreStats *st;

	if (e == NULL)
		return;
	st = &e->stats;
	st->merges += job->commits;
	st->merge_failures += job->ok ? 0 : 1;
	st->merged_generations += job->generations;
	st->merged_rows += job->rows_written;
	st->merged_bytes += job->bytes_merged;
	st->key_conflicts += job->key_conflicts;
	st->last_merge_at = GetCurrentTimestamp();
	strlcpy(st->last_merge_error, job->ok ? "" : job->failure.msg,
			sizeof(st->last_merge_error));
	if (job->store != NULL)
		add_requests(job->store, &st->maintenance_requests);
}

/* RUNNING -> DONE with the outcome, and the writer is woken. */
static void
finish_job(MaintJob *job)
{
	CxMergeJob *shared = &CxWriter->job;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	publish_store_locked(job);
	CxWriter->maint.rounds++;
	CxWriter->maint.commits += job->commits;
	if (shared->state == CX_JOB_RUNNING && shared->id == job->id)
	{
		shared->ok = job->ok;
		shared->failure = job->failure;
		shared->generations = job->generations;
		shared->merged_through = job->merged_through;
		shared->state = CX_JOB_DONE;
	}
	LWLockRelease(CxWriter->lock);
	if (!job->ok)
		cx_worker_note_error(&CxWriter->maint, "store %s: %s", job->uri,
							 job->failure.msg);
	if (pg_atomic_read_u32(&CxWriter->writer.pid) != 0)
		cx_set_latch(pg_atomic_read_u32(&CxWriter->writer.procno));
}

/* Attempts at the autogroup's nice value, which the kernel takes from one
 * unprivileged process per 100 ms (EAGAIN meanwhile), and the pause
 * between them. */
#define AUTOGROUP_TRIES 10
#define AUTOGROUP_RETRY_US 110000L

/* Sets the nice value of this process's autogroup; 0 or an errno (ENOENT:
 * the kernel has no autogroups). */
static int
set_autogroup_nice(int nice)
{
	char		line[16];
	int			len = snprintf(line, sizeof(line), "%d\n", nice);
	int			fd;
	int			rc = 0;

	for (int i = 0; i < AUTOGROUP_TRIES; i++)
	{
		if (i > 0)
			pg_usleep(AUTOGROUP_RETRY_US);
		if ((fd = open("/proc/self/autogroup", O_WRONLY)) < 0)
			return errno;
		rc = write(fd, line, len) == len ? 0 : errno;
		close(fd);
		if (rc != EAGAIN)
			break;
	}
	return rc;
}

/*
 * Lowers this worker's CPU priority to ctxstore.maintenance_nice, before it
 * starts any thread (threads inherit it).  PostgreSQL starts every child in
 * a session of its own, and where the kernel groups sessions for
 * scheduling (autogroup), a nice value only ranks the threads of one
 * session: so the session's own nice value is set too, which is what ranks
 * this worker against the writer and the backends.  Lowering a priority
 * needs no privilege; a failure only costs commit latency during merges,
 * so it is logged and the worker goes on.
 */
static void
lower_cpu_priority(void)
{
	int			rc;

	if (cx_maintenance_nice == 0)
		return;
	if (setpriority(PRIO_PROCESS, 0, cx_maintenance_nice) != 0)
		ereport(LOG,
				errmsg("ctxstore maintenance: could not lower its CPU priority: %m"));
	rc = set_autogroup_nice(cx_maintenance_nice);
	if (rc != 0 && rc != ENOENT)
		ereport(LOG,
				errmsg("ctxstore maintenance: could not lower the CPU priority of its session's scheduling group: %s",
					   strerror(rc)));
}

/* Exit callback: the writer, if it waits on a job of ours, notices. */
static void
maint_exit(int code, Datum arg)
{
	pg_atomic_write_u32(&CxWriter->maint.pid, 0);
	if (pg_atomic_read_u32(&CxWriter->writer.pid) != 0)
		cx_set_latch(pg_atomic_read_u32(&CxWriter->writer.procno));
}

void
cx_maint_main(Datum main_arg)
{
	CxStoreHooks hooks = {maint_closing, NULL};
	uint64		generation;
	MaintJob	job;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, SIG_IGN);
	BackgroundWorkerUnblockSignals();
	/* Before it shows in pg_stat_activity, so that it is seen only so. */
	lower_cpu_priority();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	before_shmem_exit(maint_exit, (Datum) 0);
	cx_stores_init(&hooks, CX_MAINT_STORES);
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	generation = cx_worker_start_locked(&CxWriter->maint);
	LWLockRelease(CxWriter->lock);
	elog(LOG, "ctxstore maintenance started (generation " UINT64_FORMAT ", shard %s)",
		 generation, cx_shard_id());

	for (;;)
	{
		long		wait_ms;

		if (!cx_worker_loop_continues())
			break;
		cx_worker_publish_memory(&CxWriter->maint, cx_stores_cache_bytes);
		if (take_job(generation, &job))
		{
			run_job(&job);
			index_after_merge(&job);
			compact_after_merge(&job);
			finish_job(&job);
			note_publish_due(&job);
			/* Between jobs too, so that a busy store is published and
			 * compacted. */
			(void) timed_work_due();
			continue;
		}
		wait_ms = cx_worker_settle_memory(&CxWriter->maint, cx_stores_cache_bytes,
										  timed_work_due());
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait_ms, PG_WAIT_EXTENSION);
	}

	cx_stores_close_all();
	elog(LOG, "ctxstore maintenance shutting down");
	proc_exit(1);
}
