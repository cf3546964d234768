/*
 * cx_writer_int.h — private to bgworker/: the workers' open stores, the
 * unsealed-rows records, the writer's resident stores and its round and
 * background work.  The state they share with the backend side (slots,
 * worker status, merge job, batches) is shared/cx_writer_shmem.h.
 *
 * Calls go one way: cx_writer_worker.c -> cx_writer_round.c ->
 * cx_writer_background.c -> cx_writer_resident.c -> cx_stores.c,
 * cx_unsealed.c -> shared/.
 */
#ifndef CX_WRITER_INT_H
#define CX_WRITER_INT_H

#include "postgres.h"

#include "lib/ilist.h"

#include "ctxstore/engine.h"
#include "cx_module.h"
#include "cx_writer_shmem.h"

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
/* The bytes the engine's caches hold in this process: the open stores'
 * handle caches and the key index's blocks and filters. */
extern uint64 cx_stores_cache_bytes(void);

/* ---- rows a crash left unsealed (cx_unsealed.c) ---- */

/* Records, durably, that store os holds unsealed rows of table's request. */
extern void cx_unsealed_record(const CxOpenStore *os, const CxTableRef *table);
/* The store's memtable is empty again: its record goes. */
extern void cx_unsealed_forget(const CxOpenStore *os);
/* At writer start: a recovery worker per database that records name. */
extern void cx_unsealed_recover(void);

/* ---- both workers (cx_workers_register.c) ---- */

/* The top of a worker's main loop: resets the latch, serves interrupts and
 * a configuration reload; false once a shutdown was requested. */
extern bool cx_worker_loop_continues(void);
/* Publishes a worker's live heap bytes and, of them, the bytes its caches
 * hold (cache_bytes()) into w for the view, at most once a second. */
extern void cx_worker_publish_memory(CxWorkerInfo *w, uint64 (*cache_bytes) (void));
/* Before a worker sleeps: malloc's free memory beyond a few MiB goes back to
 * the OS, so that one large transaction or merge does not leave it large,
 * and the memory is published; at most once a second, so the wait_ms the
 * worker may sleep comes back shortened to when it is next due. */
extern long cx_worker_settle_memory(CxWorkerInfo *w, uint64 (*cache_bytes) (void),
									long wait_ms);

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
	TimestampTz drain_at;		/* a merge noted, not drained: drain then
								 * (0: none due) */
	uint64		appended_round; /* the last writer round it appended in */
	TimestampTz last_warned;
	TimestampTz clock_warned_at;	/* last commit-time-ahead warning */
	uint64		merge_until;	/* merge wanted through this generation;
								 * 0 = no merge wanted */
	TimestampTz merge_wanted_at;
	bool		merge_running;	/* the maintenance worker has its job */
	TimestampTz behind_warned_at;	/* last merges-behind warning */
	dlist_head	waiters;		/* CxWaiter */
	uint64		held_round;		/* last round that found it */
	/* counters not yet published */
	uint64		new_appends;
	uint64		new_claims;
	uint64		new_fenced;
	cx_sw_stats published_sw;	/* counters of w already published */
} CxResident;

extern void cx_resident_init(void);
/* A writer round begins or ends: a store the round finds (cx_resident_get)
 * stays open until the round ends, since one of its groups holds it. */
extern void cx_resident_round_begin(void);
extern void cx_resident_round_end(void);
/* The resident store of req, its settings updated from req and its shard
 * writer claimed (a re-claim after fencing is logged). */
extern cx_code cx_resident_get(const CxBatchView *req, CxResident **out,
							   CxFailure *fail);
/*
 * A group commit: each request is staged (resolved against the store's live
 * rows; a unique or cardinality violation fails that request alone), then
 * the staged rows are appended as one append (cx_sw_stage and
 * cx_sw_append_staged in ctxstore/memwal.h).  Staging writes nothing.
 */
extern cx_code cx_resident_stage(CxResident *r, const cx_schema *schema,
								 const uint8 *rows, Size len, uint64 nrows,
								 CxFailure *fail);
extern void cx_resident_unstage(CxResident *r);

/*
 * The append of a store's staged rows, in three steps so that several
 * stores' appends can be in flight at once (cx_writer_round.c): begin and
 * end run on the worker's own thread (they may log, raise, and touch the
 * worker's state); run calls only the engine, on the store's own shard
 * writer, and may run on a pool thread while the worker's thread handles
 * other stores (docs/design/workers.md, "Concurrent seals").
 */
typedef struct CxAppend
{
	CxResident *r;
	bool		seal;
	bool		called;			/* begin found rows for the engine */
	cx_code		rc;				/* run's outcome */
	int64_t		commit_ts;
	cx_err		err;
} CxAppend;

/* False if there is nothing for run to do (end then reports why). */
extern bool cx_resident_append_begin(CxResident *r, bool seal, CxAppend *a);
/* The engine's append (arg: the CxAppend); any thread. */
extern void cx_resident_append_run(void *arg);
extern cx_code cx_resident_append_end(CxAppend *a, CxWriteResult *res,
									  CxFailure *fail);
/* Seals the memtable (one shard-manifest commit if it is not empty). */
extern cx_code cx_resident_seal(CxResident *r, uint64 *sealed_rows,
								CxFailure *fail);
/* Removes the generations at or below merged_through, the watermark a merge
 * just committed to the base (one shard-manifest commit, nothing read). */
extern cx_code cx_resident_drain(CxResident *r, uint64 merged_through,
								 CxFailure *fail);
/* A merge job merged through merged_through, with nobody waiting for it:
 * noted now, drained by the next seal or LAZY_DRAIN_MS later. */
extern void cx_resident_note_merged(CxResident *r, uint64 merged_through);
extern uint32 cx_resident_pending(const CxResident *r);
/* Newest generation listed (0 if none). */
extern uint64 cx_resident_newest_gen(const CxResident *r);
/* Fills the shard part of a result. */
extern void cx_resident_result(const CxResident *r, CxWriteResult *res);
/* Publishes the store's counters (caller holds the lock exclusively). */
extern void cx_resident_publish_locked(CxResident *r);
extern void cx_resident_publish(CxResident *r);
extern CxResident *cx_resident_find(const char *uri);
/* The bytes the writer's caches hold: cx_stores_cache_bytes() and what
 * each store's shard writer keeps (cx_sw_cache_bytes). */
extern uint64 cx_resident_cache_bytes(void);
/* Seals and closes every store (worker exit). */
extern void cx_resident_shutdown(void);
/* The store wants its generations merged through until_gen (the background
 * work posts the job). */
extern void cx_merge_want(CxResident *r, uint64 until_gen);
/* Answers waiter w of its store (fail NULL: with its result) and frees it. */
extern void cx_waiter_finish(CxWaiter *w, const CxFailure *fail);
/* Fails every waiter of r (store closing, writer fenced). */
extern void cx_waiters_fail(CxResident *r, const CxFailure *fail);

/* What a round did, for the gather before the next (cx_writer_worker.c). */
typedef struct CxRoundSummary
{
	int			taken;			/* slots it took */
	int			nsettled;		/* commits whose outcome it published */
	int		   *settled;		/* their slot numbers (room for every slot) */
} CxRoundSummary;

/* The round (cx_writer_round.c); fills summary. */
extern void cx_writer_run_round(uint64 generation, CxRoundSummary *summary);

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
/* Before the writer sleeps: milliseconds until a timer falls due or the
 * next walk for timers may run (cap if none), publishing the count of
 * stores that want a merge as it stands (the view's queue_depth). */
extern long cx_writer_next_due_ms(long cap);
/* A new writer's view of a job its predecessor left behind. */
extern void cx_merge_job_adopt(void);

#endif							/* CX_WRITER_INT_H */
