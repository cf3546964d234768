/*
 * cx_writer_shmem.h — the writer protocol's shared state, which both sides
 * use: the backend side (fdw/cx_writer_submit.c, fdw/cx_workers_view.c)
 * posts requests and reads the workers' status, the workers (bgworker/) take
 * and answer them.  It holds the request slots, the worker status, the merge
 * job, the per-store counters and the layout of a batch in dynamic shared
 * memory (built by backends for their commits and by the writer for merge
 * jobs, read by the workers).
 *
 * Slot life cycle (two slots per backend, one per lane, cx_slot_index();
 * all transitions under CxWriter->lock):
 *
 *   FREE --backend posts--> QUEUED --worker takes--> TAKEN --> DONE | FAILED
 *   QUEUED --backend gives up--> FREE             (withdrawn: never done)
 *   TAKEN  --backend gives up--> ABANDONED --worker finishes--> FREE
 *   DONE | FAILED --backend reads the outcome--> FREE
 *
 * A commit's batch is in the request ring when it fits (see below), else,
 * like every control request's, in a DSM segment of the backend's.  A ring
 * batch belongs to its slot from the post on: whoever makes the slot FREE
 * frees its ring chunk, in the same critical section (cx_slot_free_locked),
 * so a chunk is freed exactly once and never while the worker reads it (an
 * ABANDONED slot is freed by the worker when it is done with it).
 *
 * A backend only posts into a FREE slot, so a slot its previous request of
 * the same lane abandoned makes the next one wait (boundedly) until the
 * worker is done with it.  A control request (flush, merge, cleanup) may
 * stay TAKEN across rounds while the writer waits for the maintenance
 * worker, so control requests have a lane of their own: an abandoned
 * merge_wal delays only the backend's next control request, never its
 * next commit.  A worker that starts fails every TAKEN slot (its
 * predecessor's work, outcome unknown) and frees every ABANDONED one.
 *
 * Merge job (one at a time; under the same lock):
 *
 *   IDLE --writer posts--> QUEUED --maintenance takes--> RUNNING --> DONE
 *   DONE --writer reads, drains--> IDLE
 *   QUEUED --a new writer starts (the job's segment died with the old one)--> IDLE
 *   RUNNING, maintenance worker gone --writer--> IDLE (reported as failed)
 */
#ifndef CX_WRITER_SHMEM_H
#define CX_WRITER_SHMEM_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/lwlock.h"

#include "ctxstore/engine.h"
#include "cx_writer_protocol.h"

#define CX_WRITER_TRANCHE "ctxstore writer"

/* Longest URI the shared tables record. */
#define CX_STATS_URI_MAX 1024
#define CX_STATS_ENTRIES 128

/* Which of a backend's two slots a request goes through. */
typedef enum CxSlotLane
{
	CX_LANE_COMMIT = 0,			/* rows at PRE_COMMIT */
	CX_LANE_CONTROL,			/* flush, merge_wal, cleanup_wal */
	CX_LANES
} CxSlotLane;

/* The slot of backend backend_id (1-based) in lane. */
#define cx_slot_index(backend_id, lane) (((backend_id) - 1) * CX_LANES + (lane))

typedef enum CxSlotState
{
	CX_SLOT_FREE = 0,
	CX_SLOT_QUEUED,
	CX_SLOT_TAKEN,
	CX_SLOT_DONE,
	CX_SLOT_FAILED,
	CX_SLOT_ABANDONED
} CxSlotState;

/* The hint a failure gets beyond the engine code's own. */
typedef enum CxFailHint
{
	CX_HINT_NONE = 0,
	CX_HINT_FENCED,				/* another writer claimed the shard */
	CX_HINT_PENDING_LIMIT,		/* pending_generations_max reached */
	CX_HINT_STORE_OPTION		/* tables disagree about a store option */
} CxFailHint;

/* A failure as a slot or a merge job reports it.  No secret ever. */
typedef struct CxFailure
{
	cx_code		code;
	CxFailHint	hint;
	char		msg[CX_ERR_MSG_LEN];
} CxFailure;

typedef struct CxWriterSlot
{
	CxSlotState state;
	int			requester_procno;	/* whose latch to set */
	bool		in_ring;		/* the batch is in the request ring at
								 * ring_off, else in DSM segment handle */
	uint64		ring_off;
	dsm_handle	handle;
	uint64		seq;			/* submission order, for commit order */
	uint64		taken_generation;	/* worker generation that took it */
	/* First failure of the batch (FAILED only). */
	int			failed_request; /* index into the batch */
	int			nfailed;		/* requests of the batch that failed */
	bool		outcome_unknown;	/* the writer died holding it */
	CxFailure	failure;
} CxWriterSlot;

/* One worker as the ctxstore.workers view shows it. */
typedef struct CxWorkerInfo
{
	/* Read without the lock (atomics), so a waiting process can notice a
	 * dead worker and the worker's exit callback needs no lock. */
	pg_atomic_uint32 pid;		/* 0 = not running */
	pg_atomic_uint32 procno;
	pg_atomic_uint64 generation;	/* bumped by each start */
	/* Under the lock. */
	uint64		rounds;			/* writer: group-commit rounds; maintenance:
								 * jobs */
	uint64		commits;		/* writer: appends (one per group);
								 * maintenance: merge commits */
	TimestampTz last_error_at;	/* 0 = none */
	char		last_error[CX_ERR_MSG_LEN];
	/* The lifecycle job running (maintenance): its phase ("" = none) and
	 * the units (fragments or objects, per the phase) done of total. */
	char		phase[32];
	uint64		progress_done;
	uint64		progress_total;
	/* The worker's memory as it last published it, before it slept and at
	 * most once a second while it works (cx_worker_publish_memory): the heap bytes malloc has handed out and
	 * not had back (its free heap excluded), and of those the bytes the
	 * engine's caches hold.  heap_bytes 0: not published since it started. */
	uint64		heap_bytes;
	uint64		cache_bytes;
} CxWorkerInfo;

typedef enum CxJobState
{
	CX_JOB_IDLE = 0,
	CX_JOB_QUEUED,
	CX_JOB_RUNNING,
	CX_JOB_DONE
} CxJobState;

/* A merge the writer hands to the maintenance worker. */
typedef struct CxMergeJob
{
	CxJobState	state;
	uint64		id;
	char		uri[CX_STATS_URI_MAX];
	dsm_handle	handle;			/* one-request batch: options, settings */
	uint64		until_gen;		/* merge until the watermark reaches it */
	uint64		shard_version;	/* the writer's shard-manifest version when
								 * it posted the job: lists them all */
	uint32		step_generations;	/* most generations one merge call
									 * takes (cx_merge_step_generations) */
	uint64		taken_generation;	/* maintenance generation running it */
	/* DONE */
	bool		ok;
	CxFailure	failure;
	uint32		generations;	/* merged by this job */
	uint64		merged_through;
} CxMergeJob;

typedef struct CxStoreStatsEntry
{
	char		uri[CX_STATS_URI_MAX];	/* "" = unused */
	uint32		uri_hash;		/* of uri: compared before it */
	uint64		last_used;		/* for eviction */
	bool		maint_open;		/* the maintenance worker holds it open */
	CxWriterStoreStats stats;
} CxStoreStatsEntry;

typedef struct CxWriterShared
{
	LWLock	   *lock;			/* everything but the atomics */
	CxWorkerInfo writer;
	CxWorkerInfo maint;
	CxMergeJob	job;
	int			merges_wanted;	/* stores waiting for the maintenance
								 * worker (published by the writer) */
	uint64		next_seq;
	uint64		stats_clock;
	uint64		ring_batches;	/* batches the writer took from the ring */
	uint64		dsm_batches;	/* ... and in DSM segments */
	/*
	 * Posts the writer lets pass without a latch set while it gathers
	 * (cx_writer_post_wakes); 0 whenever it does not gather: every post
	 * then sets it.
	 */
	pg_atomic_uint32 gather_quiet;
	/* The writer's gathers since the server started, and its sleeps in them. */
	pg_atomic_uint64 gathers;
	pg_atomic_uint64 gather_sleeps;
	int			nslots;
	CxStoreStatsEntry stats[CX_STATS_ENTRIES];
	CxWriterSlot slots[FLEXIBLE_ARRAY_MEMBER];
} CxWriterShared;

/* Set by the shmem startup hook; NULL without shared_preload_libraries. */
extern CxWriterShared *CxWriter;

/* ---- set-up and shared helpers (cx_writer_shmem.c) ---- */

extern void cx_shmem_install_hooks(void);
extern bool cx_writer_post_wakes(void);

/* Fills a failure (no hint) from a printf-style message. */
extern void cx_failure_set(CxFailure *fail, cx_code code, const char *fmt,...)
			pg_attribute_printf(3, 4);

/* A taken slot's outcome: DONE if nfailed is 0, else FAILED with failure;
 * an abandoned slot becomes FREE.  Caller holds the lock, and wakes the
 * requester whose PGPROC number this returns once it has released it: a
 * requester woken while the lock is held would only block on it. */
extern int	cx_slot_finish_locked(int slotno, int nfailed, int failed_request,
								  const CxFailure *failure);

/* Makes a slot FREE and frees its batch's ring chunk, if it has one.
 * Caller holds the lock exclusively. */
extern void cx_slot_free_locked(CxWriterSlot *slot);

/* Wakes a process by its PGPROC number. */
extern void cx_set_latch(int procno);

/* Marks the calling process as the running worker w (new generation) and
 * returns that generation; caller holds the lock. */
extern uint64 cx_worker_start_locked(CxWorkerInfo *w);
/* Records a worker's last error for the view (takes the lock). */
extern void cx_worker_note_error(CxWorkerInfo *w, const char *fmt,...)
			pg_attribute_printf(2, 3);

/* A store's shared counters, created (or recycling the least recently used
 * entry) when create is set; NULL for a URI too long to record.  Caller holds
 * the lock (exclusively when create is set). */
extern CxStoreStatsEntry *cx_stats_entry(const char *uri, bool create);

/* Adds now - *last to *dst for n counters and sets *last = now: counters
 * the engine keeps since an object was opened become deltas to publish. */
extern void cx_counters_add_delta(uint64 *dst, const uint64 *now,
								  uint64 *last, int n);

#define CX_NCOUNTERS(type) ((int) (sizeof(type) / sizeof(uint64)))

/*
 * ---- the request ring (cx_writer_shmem.c) ----
 *
 * ctxstore.request_ring_size bytes of the main shared memory segment, in
 * which a backend lays out its commit's batch instead of creating, and the
 * writer attaching, a DSM segment per transaction.  Chunks are freed in any
 * order (ctxstore/util.h's cx_ring); a batch larger than
 * cx_request_ring_batch_max(), or one that finds the ring full, takes a DSM
 * segment instead: the ring never makes a commit wait.  Its own spinlock
 * guards it, so it may be taken with or without CxWriter->lock held.
 */
extern Size cx_request_ring_batch_max(void);
/* A chunk of len bytes: true with *off; false when it does not fit now. */
extern bool cx_request_ring_alloc(Size len, uint64 *off);
extern void cx_request_ring_free(uint64 off);
extern void *cx_request_ring_at(uint64 off);
/* The bytes of the chunk at off. */
extern Size cx_request_ring_len(uint64 off);

/* ---- the batch in shared memory (cx_writer_batch.c) ---- */

/*
 * A batch is one ring chunk or DSM segment per submit call:
 *   CxBatchHeader, CxBatchRequest[nrequests], then the variable parts of
 *   each request (NUL-terminated URI, options as NUL-terminated name and
 *   value strings, the cx_schema_encode() bytes and the encoded rows).
 * Offsets are from the start of the batch.  The worker writes each
 * request's result back into its CxBatchRequest.
 */
#define CX_BATCH_MAGIC 0x43584232	/* "CXB2" */

/* What a batch asks for: rows to write, a control request (CxControlKind,
 * one request, no rows), or a merge job for the maintenance worker. */
#define CX_BATCH_WRITE 0
#define CX_BATCH_MERGE_JOB 100

typedef struct CxBatchRequest
{
	Size		uri_off;
	Size		options_off;
	Size		options_len;
	int			noptions;
	Size		schema_off;
	Size		schema_len;		/* 0: no schema */
	Size		rows_off;
	Size		rows_len;
	uint64		nrows;
	CxStoreSettings settings;
	CxWriteResult result;		/* written by the worker */
} CxBatchRequest;

typedef struct CxBatchHeader
{
	uint32		magic;
	int			kind;
	int			nrequests;
	Size		total_len;
	CxBatchRequest requests[FLEXIBLE_ARRAY_MEMBER];
} CxBatchHeader;

/* A batch's layout, computed before the memory for it is found. */
typedef struct CxBatchPlan
{
	int			kind;
	const CxWriteRequest *requests;
	int			nrequests;
	char	  **schemas;		/* each request's cx_schema_encode() bytes */
	Size	   *schema_lens;
	Size		total_len;		/* bytes of the whole batch */
} CxBatchPlan;

/* Sizes the batch of requests (encoding each schema once). */
extern void cx_batch_plan(CxBatchPlan *plan, int kind,
						  const CxWriteRequest *requests, int nrequests);
/* Lays the planned batch out at dst (total_len bytes; rows copied exactly
 * once) and frees the plan's encoded schemas. */
extern void cx_batch_write(CxBatchPlan *plan, void *dst);
/* A DSM segment holding the batch of requests. */
extern dsm_segment *cx_batch_create(int kind, const CxWriteRequest *requests,
									int nrequests);
/* A DSM segment holding the planned batch. */
extern dsm_segment *cx_batch_create_planned(CxBatchPlan *plan);

/* One request as a worker sees it: pointers into the mapped segment. */
typedef struct CxBatchView
{
	const char *uri;
	cx_option  *options;		/* palloc'd array pointing into the segment */
	int			noptions;
	const char *options_bytes;	/* the raw options block: store identity */
	Size		options_len;
	const uint8 *schema_bytes;	/* NULL when the request has no schema */
	Size		schema_len;
	const uint8 *rows;
	Size		rows_len;
	uint64		nrows;
	const CxStoreSettings *settings;
} CxBatchView;

/*
 * Checks a mapped batch and describes request i.  false (with *why) if the
 * segment does not hold a well-formed batch: the worker fails the request
 * rather than trusting a bad offset.
 */
extern bool cx_batch_check(const CxBatchHeader *hdr, Size maplen,
						   const char **why);
extern void cx_batch_view(CxBatchHeader *hdr, int i, CxBatchView *out);
/* Splits an options block (checked) into noptions name/value pairs. */
extern void cx_options_split(const char *bytes, int noptions, cx_option *out);

#endif							/* CX_WRITER_SHMEM_H */
