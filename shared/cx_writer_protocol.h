/*
 * cx_writer_protocol.h — how a backend reaches the ctxstore workers: hand a
 * transaction's rows to the writer worker at PRE_COMMIT, or ask it to flush,
 * merge or clean up a store, and wait for the answer.  This header holds
 * what both sides of the protocol read (requests, results, the workers'
 * per-store counters); its backend side is fdw/cx_writer_submit.c, its
 * worker side bgworker/, and the shared memory between them
 * cx_writer_shmem.h.
 *
 * Backends never write a store.  At PRE_COMMIT each foreign table with pending
 * rows becomes one CxWriteRequest; cx_writer_submit() copies the batch once
 * into the shared request ring (or, when it is large or the ring full, a
 * dynamic shared memory segment), posts it in the backend's slot of the
 * shared request array, wakes the writer worker and waits on its latch for the
 * result.  The worker group-commits: every request queued while a store commit
 * is in flight goes into the next commit of that store, through the store's
 * resident shard writer (storage/memwal/cx_shard_writer.h).  The SQL maintenance
 * functions (ctxstore.flush, merge_wal, cleanup_wal) go through the same wait
 * (cx_writer_control()) on a second slot of the backend's, so that one left
 * waiting for a merge never holds up the backend's next commit.
 *
 * The wait is bounded and interruptible: statement_timeout and cancel are
 * honoured (CHECK_FOR_INTERRUPTS), worker death is detected (the slot's worker
 * generation changes or no worker is running), and ctxstore.commit_timeout
 * caps it.  A request still queued when the backend gives up is withdrawn and
 * never carried out; one the worker already took may or may not be, and the
 * error says so.
 */
#ifndef CX_WRITER_PROTOCOL_H
#define CX_WRITER_PROTOCOL_H

#include "postgres.h"

#include "datatype/timestamp.h"

#include "ctxstore/engine.h"
#include "cx_options.h"

/* One store's batch of rows, encoded with cx_row_encode() in the order of
 * schema's columns (the store's schema, which may already exist).  A
 * control request (cx_writer_control) has no schema and no rows. */
typedef struct CxWriteRequest
{
	const char *uri;			/* resolved store URI */
	const cx_option *options;	/* resolved store-opening options (server +
								 * user mapping); may hold secrets: never
								 * logged */
	int			noptions;
	const cx_schema *schema;
	const char *rows;			/* nrows encoded rows, back to back */
	Size		rows_len;
	uint64		nrows;
	CxStoreSettings settings;
} CxWriteRequest;

/* Outcome of one request. */
typedef struct CxWriteResult
{
	uint64		shard_version;	/* the shard-manifest version after it */
	uint64		epoch;			/* the writer's epoch on the shard */
	int64		commit_ts;		/* writes: commit time of the rows (Unix us) */
	bool		visible;		/* writes: sealed, visible to every reader */
	uint64		sealed_rows;	/* flush, merge, cleanup: rows their seal
								 * made visible */
	uint32		generations_merged; /* merge, cleanup */
	uint32		pending_generations;	/* unmerged generations afterwards */
} CxWriteResult;

/* What a control request asks of the writer. */
typedef enum CxControlKind
{
	CX_CONTROL_FLUSH = 1,		/* seal the memtable now */
	CX_CONTROL_MERGE,			/* seal, merge every pending generation,
								 * drain */
	CX_CONTROL_CLEANUP			/* seal, then merge when pending >=
								 * cleanup_min_generations */
} CxControlKind;

/* True when ctxstore was loaded by shared_preload_libraries, so the shared
 * request array and the workers exist. */
bool		cx_writer_available(void);

/* The store lifecycle's jobs. */
typedef enum CxLifecycleJob
{
	CX_LIFECYCLE_COMPACT,
	CX_LIFECYCLE_GC
} CxLifecycleJob;

/* The last run of one of them on a store. */
typedef struct CxLifecycleRun
{
	TimestampTz at;				/* 0 = none since the server started */
	char		outcome[256];	/* "compacted", "nothing to do", "collected",
								 * "dry run", or "failed: <error>" */
	uint64		bytes_reclaimed;	/* GC: bytes deleted; compaction: input
									 * bytes less output bytes, reclaimed
									 * once GC deletes the inputs */
	uint64		objects_garbage;	/* GC: what it counted as garbage (a
									 * dry run: what it would delete) */
	uint64		bytes_garbage;
} CxLifecycleRun;

/* What the workers did for one store since the server started (shared
 * memory).  Never holds an option value. */
typedef struct CxWriterStoreStats
{
	/* the write path */
	uint64		store_commits;	/* group commits: one append per group */
	uint64		acked_transactions;	/* requests acknowledged */
	uint64		acked_rows;
	uint64		failed_transactions;
	uint64		wal_entries;	/* unsealed appends' WAL entries */
	uint64		seals;			/* generations sealed */
	uint64		drains;
	uint64		hints;			/* shard hints written */
	uint64		claims;			/* shard claims (opens and re-claims) */
	uint64		replayed_entries;	/* WAL entries replayed by claims */
	uint64		fenced;			/* times the writer found itself fenced */
	uint64		clock_ahead_commits;	/* commit times ahead of the clock by
										 * more than a second */
	uint64		clock_ahead_max_us; /* the largest lead */
	/* the shard as the writer last saw it */
	uint64		epoch;
	uint64		shard_version;
	uint32		pending_generations;
	uint64		memtable_rows;	/* appended, not sealed yet */
	bool		writer_open;	/* the writer holds the store open now */
	/* merges (maintenance worker) */
	uint64		merges;			/* merge commits (cx_merge_shard calls that
								 * merged something) */
	uint64		merge_failures;
	uint64		merged_generations;
	uint64		merged_rows;
	uint64		merged_bytes;	/* of the generations merged */
	uint64		key_conflicts;	/* keys merges found written by another
								 * shard too (cx_merge_result) */
	TimestampTz last_merge_at;	/* 0 = never */
	char		last_merge_error[256];	/* "" = the last merge succeeded */
	bool		merges_behind;	/* the last merge job left more pending than
								 * one catch-up step takes */
	uint32		merge_target_generations;	/* that step: the backlog one
											 * merge call clears */
	/* the store's lifecycle: the last compaction and GC of this cluster
	 * (ctxstore.compact / ctxstore.gc or the maintenance worker) */
	CxLifecycleRun last_compaction;
	CxLifecycleRun last_gc;
	/* object-store requests of the workers' own handles: the writer's,
	 * and the maintenance worker's for merges (with their index updates),
	 * its compactions and its GC */
	cx_objstats writer_requests;
	cx_objstats maintenance_requests;
	cx_objstats compaction_requests;
	cx_objstats gc_requests;
} CxWriterStoreStats;

/* Who holds a compaction lease this process takes: shard and pid, as the
 * BUSY error another caller gets names it; written to holder. */
void		cx_lease_holder(char *holder, size_t len);

/* Record the outcome of a compaction or GC of uri, rc and res (or err) as
 * the engine returned them (nothing without the workers' shared memory). */
void		cx_stats_note_compact(const char *uri, cx_code rc,
								  const cx_compact_result *res,
								  const cx_err *err);
void		cx_stats_note_gc(const char *uri, cx_code rc,
							 const cx_gc_result *res, bool dry_run,
							 const cx_err *err);

/* False if the workers have no record of the store (never used here since
 * the server started). */
bool		cx_writer_store_stats(const char *uri, CxWriterStoreStats *out);

#endif							/* CX_WRITER_PROTOCOL_H */
