/*
 * cx_writer_protocol.h — how a backend reaches the ctxstore workers: hand a
 * transaction's rows to the writer worker at PRE_COMMIT, or ask it to flush,
 * merge or clean up a store, and wait for the answer.
 *
 * Backends never write a store.  At PRE_COMMIT each foreign table with pending
 * rows becomes one CxWriteRequest; cx_writer_submit() copies each batch once
 * into a dynamic shared memory segment, posts it in the backend's slot of the
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

/* The foreign table a request comes from. */
typedef struct CxTableRef
{
	Oid			dboid;
	Oid			relid;			/* InvalidOid: none */
	Oid			userid;			/* whose user mapping the request carries */
	char		name[2 * NAMEDATALEN + 1];	/* "schema.table", for messages */
} CxTableRef;

/* Most numeric and boolean settings (the option table in cx_option.c
 * lists them). */
#define CX_SETTINGS_MAX 16

/*
 * The foreign-table options that govern how the writer worker keeps a store
 * (docs/OPERATIONS.md lists them with their defaults), and the table they
 * come from.  Every request carries them.  seal_on_insert belongs to the
 * request's table; the others belong to the store, shared by every table
 * on it: a table that sets one explicitly (explicit_mask) must agree with
 * any other table that set it (cxfdw_settings_apply), and a table that
 * leaves it out takes the store's.  ALTER FOREIGN TABLE takes effect with
 * the table's next request.
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
	uint32		explicit_mask;	/* bit i: setting i was set by the table */
	CxTableRef	source;
} CxStoreSettings;

/*
 * The numeric and boolean settings, numbered 0 .. cxfdw_nsettings() - 1
 * (explicit_mask and owners go by the numbers), read and written by the
 * option table (cx_option.c).  seal_on_insert belongs to the table; "store
 * level" settings to the store.
 */
extern int	cxfdw_nsettings(void);
extern const char *cxfdw_setting_name(int i);
extern bool cxfdw_setting_is_store_level(int i);
extern int64 cxfdw_setting_get(const CxStoreSettings *s, int i);
extern void cxfdw_setting_copy(CxStoreSettings *dst, const CxStoreSettings *src,
							   int i);
/* The settings of a table that sets none of them. */
extern void cxfdw_settings_default(CxStoreSettings *s);
/* Sets the setting of the table option name from value; returns its number,
 * or -1 if the option is no such setting. */
extern int	cxfdw_setting_set(CxStoreSettings *s, const char *name,
							  const char *value);

/*
 * Applies a request's settings to a store's, whose store-level settings i
 * were set explicitly by owners[i] (relid InvalidOid: by none).  False, with
 * why filled and nothing changed, if req explicitly sets a store-level
 * setting that another table set to another value (cx_tableopts.c).
 */
extern bool cxfdw_settings_apply(CxStoreSettings *store, CxTableRef *owners,
								 const CxStoreSettings *req, char *why,
								 size_t whylen);

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

/* Called from _PG_init(): defines the GUCs (ctxstore.shard_id,
 * ctxstore.failpoints, ctxstore.commit_timeout); while
 * shared_preload_libraries is being processed it also requests the shared
 * state and registers the writer and maintenance workers. */
void		cx_writer_init_module(void);

/* True when ctxstore was loaded by shared_preload_libraries, so the shared
 * request array and the workers exist. */
bool		cx_writer_available(void);

/* This cluster's shard id (ctxstore.shard_id). */
const char *cx_shard_id(void);

/*
 * Submits the requests and waits until every one is acknowledged.  On any
 * failure it raises an ERROR (engine error mapped to a SQLSTATE, worker death,
 * timeout, cancel); on return every batch is durable (and visible if its
 * settings asked for seal_on_insert).  results may be NULL.  Must not be
 * called without cx_writer_available().
 */
void		cx_writer_submit(const CxWriteRequest *requests, int nrequests,
							 CxWriteResult *results);

/* Asks the writer to flush, merge or clean up the store of request (no
 * schema, no rows) and waits for the outcome, as cx_writer_submit(). */
void		cx_writer_control(CxControlKind kind, const CxWriteRequest *request,
							  CxWriteResult *result);

/* Flushes the store uri through foreign table relid as role userid (the
 * recovery of rows a crash left unsealed, cx_unsealed.c); raises an ERROR
 * if the table is gone or names another store (fdw/cx_maintenance.c). */
extern void cxfdw_flush_recorded(Oid relid, Oid userid, const char *uri,
								 CxWriteResult *res);


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
	TimestampTz last_merge_at;	/* 0 = never */
	char		last_merge_error[256];	/* "" = the last merge succeeded */
	bool		merges_behind;	/* the last merge job left more pending than
								 * one catch-up step takes */
	uint32		merge_target_generations;	/* that step: the backlog one
											 * merge call clears */
	/* object-store requests of the workers' own handles */
	cx_objstats writer_requests;
	cx_objstats maintenance_requests;
} CxWriterStoreStats;

/* False if the workers have no record of the store (never used here since
 * the server started). */
bool		cx_writer_store_stats(const char *uri, CxWriterStoreStats *out);

#endif							/* CX_WRITER_PROTOCOL_H */
