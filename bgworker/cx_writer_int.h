/*
 * cx_writer_int.h — private to bgworker/: the shared request array, the
 * layout of a submitted batch in dynamic shared memory, and the pieces the
 * backend side (cx_writer_submit.c) and the worker (cx_writer_worker.c,
 * cx_writer_commit.c, cx_writer_stores.c) share.
 *
 * Slot life cycle (one slot per backend, indexed by MyBackendId - 1; all
 * transitions under CxWriter->lock):
 *
 *   FREE --backend posts--> QUEUED --worker takes--> TAKEN --> DONE | FAILED
 *   QUEUED --backend gives up--> FREE             (withdrawn: never written)
 *   TAKEN  --backend gives up--> ABANDONED --worker finishes--> FREE
 *   DONE | FAILED --backend reads the outcome--> FREE
 *
 * A backend only posts into a FREE slot, so a slot its previous transaction
 * abandoned makes the next commit wait (boundedly) until the worker is done
 * with it.  A worker that starts fails every TAKEN slot (its predecessor's
 * work, outcome unknown) and frees every ABANDONED one.
 */
#ifndef CX_WRITER_INT_H
#define CX_WRITER_INT_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/lwlock.h"

#include "cx_error.h"
#include "cx_objstore.h"
#include "cx_writer_protocol.h"

#define CX_WRITER_TRANCHE "ctxstore writer"

typedef enum CxSlotState
{
	CX_SLOT_FREE = 0,
	CX_SLOT_QUEUED,
	CX_SLOT_TAKEN,
	CX_SLOT_DONE,
	CX_SLOT_FAILED,
	CX_SLOT_ABANDONED
} CxSlotState;

typedef struct CxWriterSlot
{
	CxSlotState state;
	int			requester_procno;	/* whose latch to set */
	dsm_handle	handle;			/* the batch */
	uint64		seq;			/* submission order, for commit order */
	uint64		taken_generation;	/* worker generation that took it */
	/* First failure of the batch (FAILED only).  No secret ever. */
	int			failed_request; /* index into the batch */
	int			nfailed;		/* requests of the batch that failed */
	bool		outcome_unknown;	/* the rows may or may not be written */
	cx_code		error_code;
	char		error_msg[CX_ERR_MSG_LEN];
} CxWriterSlot;

/* Longest URI the per-store statistics table records. */
#define CX_STATS_URI_MAX 1024
#define CX_STATS_ENTRIES 128

typedef struct CxStoreStatsEntry
{
	char		uri[CX_STATS_URI_MAX];	/* "" = unused */
	uint64		last_used;		/* round number, for eviction */
	CxWriterStoreStats stats;
} CxStoreStatsEntry;

typedef struct CxWriterShared
{
	LWLock	   *lock;			/* slots, seq, stats */
	/* Read without the lock (atomics), so a waiting backend can notice a
	 * dead worker and the worker's exit callback needs no lock. */
	pg_atomic_uint32 worker_pid;	/* 0 = no worker running */
	pg_atomic_uint32 worker_procno;
	pg_atomic_uint64 generation;	/* bumped by each worker start */
	uint64		next_seq;
	uint64		rounds;			/* group-commit rounds run */
	int			nslots;
	CxStoreStatsEntry stats[CX_STATS_ENTRIES];
	CxWriterSlot slots[FLEXIBLE_ARRAY_MEMBER];
} CxWriterShared;

/* Set by the shmem startup hook; NULL without shared_preload_libraries. */
extern CxWriterShared *CxWriter;

/* ctxstore.commit_timeout, in milliseconds. */
extern int	cx_commit_timeout_ms;

/* Wakes a process by its PGPROC number. */
extern void cx_writer_set_latch(int procno);

/* Adds to a store's counters (caller holds CxWriter->lock exclusively). */
extern void cx_writer_stats_add(const char *uri, const CxWriterStoreStats *add);

/* ---- the batch in dynamic shared memory (cx_writer_batch.c) ---- */

/*
 * A batch is one DSM segment per submit call:
 *   CxBatchHeader, CxBatchRequest[nrequests], then the variable parts of
 *   each request (NUL-terminated URI, options as NUL-terminated name and
 *   value strings, the cx_schema_encode() bytes and the encoded rows).
 * Offsets are from the start of the segment.  The worker writes each
 * request's result version back into its CxBatchRequest.
 */
#define CX_BATCH_MAGIC 0x43584231	/* "CXB1" */

typedef struct CxBatchRequest
{
	Size		uri_off;
	Size		options_off;
	Size		options_len;
	int			noptions;
	int			compression_level;
	Size		schema_off;
	Size		schema_len;
	Size		rows_off;
	Size		rows_len;
	uint64		nrows;
	uint64		result_version; /* written by the worker */
} CxBatchRequest;

typedef struct CxBatchHeader
{
	uint32		magic;
	int			nrequests;
	Size		total_len;
	CxBatchRequest requests[FLEXIBLE_ARRAY_MEMBER];
} CxBatchHeader;

/* Creates the segment and copies every request into it (rows exactly once). */
extern dsm_segment *cx_batch_create(const CxWriteRequest *requests,
									int nrequests);

/* One request as the worker sees it: pointers into the mapped segment. */
typedef struct CxBatchView
{
	const char *uri;
	cx_option  *options;		/* palloc'd array pointing into the segment */
	int			noptions;
	const char *options_bytes;	/* the raw options block: store identity */
	Size		options_len;
	const uint8 *schema_bytes;
	Size		schema_len;
	const uint8 *rows;
	Size		rows_len;
	uint64		nrows;
	int			compression_level;
} CxBatchView;

/*
 * Checks a mapped batch and describes request i.  false (with *why) if the
 * segment does not hold a well-formed batch: the worker fails the request
 * rather than trusting a bad offset.
 */
extern bool cx_batch_check(const CxBatchHeader *hdr, Size maplen,
						   const char **why);
extern void cx_batch_view(CxBatchHeader *hdr, int i, CxBatchView *out);

/* ---- the worker's resident store handles (cx_writer_stores.c) ---- */

/* The cached handle for (uri, options), opened on first use. */
extern cx_code cx_stores_get(const CxBatchView *req, cx_objstore **out,
							 cx_err *err);
/* Drops a handle after a failed commit, so the next round reopens it. */
extern void cx_stores_discard(cx_objstore *store);
extern void cx_stores_close_all(void);

/* ---- one group-commit round (cx_writer_commit.c) ---- */

/* Runs one round as worker generation `generation`; returns how many
 * requests (slots) it took, 0 if none were queued. */
extern int	cx_writer_run_round(uint64 generation);

#endif							/* CX_WRITER_INT_H */
