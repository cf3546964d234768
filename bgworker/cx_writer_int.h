/*
 * cx_writer_int.h — private to bgworker/: the shared state of the two workers
 * (request slots, worker status, the merge job, per-store counters), the
 * layout of a submitted batch in dynamic shared memory, and the pieces the
 * backend side and the workers share.
 *
 * Slot life cycle (two slots per backend, one per lane, cx_slot_index();
 * all transitions under CxWriter->lock):
 *
 *   FREE --backend posts--> QUEUED --worker takes--> TAKEN --> DONE | FAILED
 *   QUEUED --backend gives up--> FREE             (withdrawn: never done)
 *   TAKEN  --backend gives up--> ABANDONED --worker finishes--> FREE
 *   DONE | FAILED --backend reads the outcome--> FREE
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
#ifndef CX_WRITER_INT_H
#define CX_WRITER_INT_H

#include "postgres.h"

#include "lib/ilist.h"
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
	dsm_handle	handle;			/* the batch */
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
	int			nslots;
	CxStoreStatsEntry stats[CX_STATS_ENTRIES];
	CxWriterSlot slots[FLEXIBLE_ARRAY_MEMBER];
} CxWriterShared;

/* Set by the shmem startup hook; NULL without shared_preload_libraries. */
extern CxWriterShared *CxWriter;

/* ---- GUCs and set-up (cx_init.c, cx_writer_shmem.c) ---- */

/* ctxstore.commit_timeout, in milliseconds. */
extern int	cx_commit_timeout_ms;

extern void cx_shmem_install_hooks(void);

/* Fills a failure (no hint) from a printf-style message. */
extern void cx_failure_set(CxFailure *fail, cx_code code, const char *fmt,...)
			pg_attribute_printf(3, 4);

/* A taken slot's outcome: DONE if nfailed is 0, else FAILED with failure;
 * an abandoned slot becomes FREE.  Wakes the requester.  Caller holds the
 * lock. */
extern void cx_slot_finish_locked(int slotno, int nfailed, int failed_request,
								  const CxFailure *failure);

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

/* ---- the batch in dynamic shared memory (cx_writer_batch.c) ---- */

/*
 * A batch is one DSM segment per submit call:
 *   CxBatchHeader, CxBatchRequest[nrequests], then the variable parts of
 *   each request (NUL-terminated URI, options as NUL-terminated name and
 *   value strings, the cx_schema_encode() bytes and the encoded rows).
 * Offsets are from the start of the segment.  The worker writes each
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

/* Creates the segment and copies every request into it (rows exactly once). */
extern dsm_segment *cx_batch_create(int kind, const CxWriteRequest *requests,
									int nrequests);

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

/* ---- a process's open stores (cx_stores.c) ---- */

/* Credential checks a store remembers (cx_stores.c). */
#define CX_STORE_CHECKS 8

/* A passed credential check: the digest of a request's options. */
typedef struct CxCredentialCheck
{
	uint8		digest[CX_SHA256_LEN];	/* SHA-256 of the options */
	TimestampTz at;				/* 0 = unused */
} CxCredentialCheck;

/* One store a worker holds open: one per URI and location, opened with the
 * options of the request that opened it. */
typedef struct CxOpenStore
{
	char	   *uri;			/* TopMemoryContext */
	char	   *location;		/* endpoint and account: with uri, the
								 * store's identity */
	char	   *options_bytes;	/* the opening request's; may hold secrets */
	Size		options_len;
	cx_option  *options;		/* split options_bytes */
	int			noptions;
	cx_objstore *handle;
	uint64		last_used;
	cx_objstats published;		/* handle counters already published */
	CxCredentialCheck checks[CX_STORE_CHECKS];	/* other options admitted */
	bool		reopen;			/* the handle's credentials were refused */
	void	   *state;			/* the owning worker's per-store state */
} CxOpenStore;

typedef struct CxStoreHooks
{
	/* Called before a store is closed (evicted, reopened with other
	 * options, worker exit): release whatever rides on its handle. */
	void		(*closing) (CxOpenStore *os);
	/* Whether the store may not be evicted now. */
	bool		(*busy) (const CxOpenStore *os);
} CxStoreHooks;

extern void cx_stores_init(const CxStoreHooks *hooks, int max_open);
/* The open store req names (URI and location), opened with req's options on
 * first use; a request with other options is admitted once its credentials
 * have written the store (cx_stores.c). */
extern cx_code cx_stores_get(const CxBatchView *req, CxOpenStore **out,
							 cx_err *err);
/* The store's own credentials were refused: the next request with other
 * options reopens it with those. */
extern void cx_stores_want_reopen(CxOpenStore *os);
extern CxOpenStore *cx_stores_find(const char *uri);
/* Open stores, for iteration: entries 0..cx_stores_max()-1, NULL unused. */
extern int	cx_stores_max(void);
extern CxOpenStore *cx_stores_at(int i);
extern void cx_stores_close_all(void);

/* ---- rows a crash left unsealed (cx_unsealed.c) ---- */

/* Records, durably, that store os holds unsealed rows of table's request. */
extern void cx_unsealed_record(const CxOpenStore *os, const CxTableRef *table);
/* The store's memtable is empty again: its record goes. */
extern void cx_unsealed_forget(const CxOpenStore *os);
/* At writer start: a recovery worker per database that records name. */
extern void cx_unsealed_recover(void);

/* ---- the writer worker (cx_writer_*.c) ---- */

/* A backend control request the writer answers later (merge, cleanup). */
typedef struct CxWaiter
{
	dlist_node	node;
	int			slotno;
	dsm_segment *seg;
	uint64		until_gen;		/* done once merged through this */
	CxWriteResult result;
} CxWaiter;

/* The writer's state for one open store. */
typedef struct CxResident
{
	CxOpenStore *os;
	CxStoreSettings settings;	/* the store's, from its tables' requests */
	CxTableRef	owners[CX_SETTINGS_MAX];	/* who set each store setting */
	cx_shardwriter *w;	/* NULL: not claimed (yet, or any more) */
	bool		reclaim;		/* the previous writer was fenced */
	bool		unsealed_recorded;	/* cx_unsealed_record() holds it */
	uint64		claim_rows;		/* rows the claim's replay made visible,
								 * not reported by a seal yet */
	TimestampTz unsealed_since; /* 0: memtable empty */
	TimestampTz seal_retry_at;	/* a timed seal failed: not before this */
	TimestampTz next_cleanup;
	TimestampTz last_warned;
	TimestampTz clock_warned_at;	/* last commit-time-ahead warning */
	uint64		merge_until;	/* merge wanted through this generation;
								 * 0 = no merge wanted */
	TimestampTz merge_wanted_at;
	bool		merge_running;	/* the maintenance worker has its job */
	TimestampTz behind_warned_at;	/* last merges-behind warning */
	dlist_head	waiters;		/* CxWaiter */
	/* counters not yet published */
	uint64		new_appends;
	uint64		new_claims;
	uint64		new_fenced;
	cx_sw_stats published_sw;	/* counters of w already published */
} CxResident;

extern void cx_resident_init(void);
/* The resident store of req, its settings updated from req and its shard
 * writer claimed (a re-claim after fencing is logged). */
extern cx_code cx_resident_get(const CxBatchView *req, CxResident **out,
							   CxFailure *fail);
extern cx_code cx_resident_append(CxResident *r, const cx_schema *schema,
								  const uint8 *rows, Size len, uint64 nrows,
								  bool seal, CxWriteResult *res,
								  CxFailure *fail);
/* Seals the memtable (one shard-manifest commit if it is not empty). */
extern cx_code cx_resident_seal(CxResident *r, uint64 *sealed_rows,
								CxFailure *fail);
/* Removes the generations at or below merged_through, the watermark a merge
 * just committed to the base (one shard-manifest commit, nothing read). */
extern cx_code cx_resident_drain(CxResident *r, uint64 merged_through,
								 CxFailure *fail);
extern uint32 cx_resident_pending(const CxResident *r);
/* Newest generation listed (0 if none). */
extern uint64 cx_resident_newest_gen(const CxResident *r);
/* Fills the shard part of a result. */
extern void cx_resident_result(const CxResident *r, CxWriteResult *res);
/* Publishes the store's counters (caller holds the lock exclusively). */
extern void cx_resident_publish_locked(CxResident *r);
extern void cx_resident_publish(CxResident *r);
extern CxResident *cx_resident_find(const char *uri);
/* Seals and closes every store (worker exit). */
extern void cx_resident_shutdown(void);
/* The store wants its generations merged through until_gen (the background
 * work posts the job). */
extern void cx_merge_want(CxResident *r, uint64 until_gen);
/* Answers waiter w of its store (fail NULL: with its result) and frees it. */
extern void cx_waiter_finish(CxWaiter *w, const CxFailure *fail);
/* Fails every waiter of r (store closing, writer fenced). */
extern void cx_waiters_fail(CxResident *r, const CxFailure *fail);

/* The round (cx_writer_round.c): returns how many slots it took. */
extern int	cx_writer_run_round(uint64 generation);

/* Control requests and background work (cx_writer_background.c). */
typedef enum CxControlOutcome
{
	CX_CONTROL_DONE,			/* res filled */
	CX_CONTROL_FAILED,			/* fail filled */
	CX_CONTROL_WAITING			/* waits for a merge; the waiter keeps seg */
} CxControlOutcome;

extern CxControlOutcome cx_control_start(CxResident *r, CxControlKind kind,
										 int slotno, dsm_segment *seg,
										 CxWriteResult *res, CxFailure *fail);
/* One step of background work (at most one shard-manifest commit):
 * merge completion and drain, job dispatch, a due flush or cleanup. */
extern bool cx_writer_background_step(void);
/* Milliseconds until a flush or cleanup falls due (cap if none). */
extern long cx_writer_next_due_ms(long cap);
/* A new writer's view of a job its predecessor left behind. */
extern void cx_merge_job_adopt(void);

#endif							/* CX_WRITER_INT_H */
