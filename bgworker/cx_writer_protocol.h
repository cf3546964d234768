/*
 * cx_writer_protocol.h — how a backend hands committed rows to the writer
 * worker and waits for the acknowledgement (the only write path).
 *
 * Backends never write a store.  At PRE_COMMIT each foreign table with pending
 * rows becomes one CxWriteRequest; cx_writer_submit() copies each batch once
 * into a dynamic shared memory segment, posts it in the backend's slot of the
 * shared request array, wakes the writer worker and waits on its latch for the
 * result.  The worker group-commits: every request queued while a store commit
 * is in flight goes into the next commit of that store.
 *
 * The wait is bounded and interruptible: statement_timeout and cancel are
 * honoured (CHECK_FOR_INTERRUPTS), worker death is detected (the slot's worker
 * generation changes or no worker is running), and ctxstore.commit_timeout
 * caps it.  A request still queued when the backend gives up is withdrawn and
 * never written; one the worker already took may or may not land, and the
 * error says so.
 */
#ifndef CX_WRITER_PROTOCOL_H
#define CX_WRITER_PROTOCOL_H

#include "postgres.h"

#include "cx_objstore.h"
#include "cx_schema.h"

/*
 * The foreign-table options that govern how the writer worker keeps a store
 * (docs/OPERATIONS.md lists them with their defaults).  Every request carries
 * them; the worker applies the newest it has seen for a store, so ALTER
 * FOREIGN TABLE takes effect with the next commit.
 */
typedef struct CxStoreSettings
{
	char		key_column[NAMEDATALEN];	/* store column of the key */
	bool		unique_key;
	bool		seal_on_insert;
	int			flush_interval_s;	/* 0 = no timed flush */
	int			merge_after_generations;	/* 0 = no count-triggered merge */
	int			merge_max_generations;
	int64		merge_max_bytes;
	int			cleanup_interval_s; /* 0 = off */
	int			cleanup_min_generations;
	int			pending_generations_warn;
	int			pending_generations_max;
	int64		target_rows_per_fragment;
	int			compression_level;
} CxStoreSettings;

/* One store's batch of rows, encoded with cx_row_encode() in the order of
 * schema's columns (the store's schema, which may already exist). */
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

/* Outcome for one request. */
typedef struct CxWriteResult
{
	uint64		version;		/* store version that made the rows visible */
} CxWriteResult;

/* Called from _PG_init() while shared_preload_libraries is being processed:
 * defines the worker's GUCs (ctxstore.commit_timeout), requests the shared
 * request array and registers the writer worker. */
void		cx_writer_init_module(void);

/* True when ctxstore was loaded by shared_preload_libraries, so the shared
 * request array and the writer worker exist. */
bool		cx_writer_available(void);

/*
 * Submits the requests and waits until every one is acknowledged.  On any
 * failure it raises an ERROR (engine error mapped to a SQLSTATE, worker death,
 * timeout, cancel); on return every batch is durable and visible.
 * results may be NULL.  Must not be called without cx_writer_available().
 */
void		cx_writer_submit(const CxWriteRequest *requests, int nrequests,
							 CxWriteResult *results);

/* Counters the writer worker keeps per store (shared memory). */
typedef struct CxWriterStoreStats
{
	uint64		store_commits;	/* manifest commits made */
	uint64		acked_transactions;	/* requests acknowledged */
	uint64		acked_rows;
	uint64		failed_transactions;
} CxWriterStoreStats;

/* False if the worker has no record of the store (never written here since
 * the server started). */
bool		cx_writer_store_stats(const char *uri, CxWriterStoreStats *out);

#endif							/* CX_WRITER_PROTOCOL_H */
