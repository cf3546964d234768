/*
 * cx_module.h — what every part of the module's PostgreSQL side shares: the
 * GUCs, and the entry points through which _PG_init and the workers reach
 * each side (cx_module.c).
 *
 * The sides depend on shared/ only: fdw/ and bgworker/ include no header of
 * each other's.  Where one side needs the other, it goes through a
 * declaration here: _PG_init calls each side's set-up, and the recovery
 * worker (bgworker/cx_unsealed.c) flushes a store through the function the
 * backend side registers.
 */
#ifndef CX_MODULE_H
#define CX_MODULE_H

#include "postgres.h"

#include "cx_writer_protocol.h"

/* ctxstore.max_transaction_bytes, in kB: rows one transaction may buffer. */
extern int	cx_max_transaction_kb;

/* ctxstore.commit_timeout, in milliseconds. */
extern int	cx_commit_timeout_ms;

/* ctxstore.writer_max_open_stores: stores the writer worker keeps open. */
extern int	cx_writer_max_open_stores;
/* ctxstore.writer_concurrent_seals: stores' appends in flight at once. */
extern int	cx_writer_concurrent_seals;
/* ctxstore.writer_commit_delay: the longest gather before a round, in
 * percent of the previous round's time (0: none). */
extern int	cx_writer_commit_delay;
/* ctxstore.maintenance_nice: the maintenance worker's CPU priority. */
extern int	cx_maintenance_nice;
/* ctxstore.request_ring_size, in kB: the shared ring commits' rows are
 * handed to the writer in (fixed at server start). */
extern int	cx_request_ring_kb;

/* This cluster's shard id (ctxstore.shard_id). */
extern const char *cx_shard_id(void);

/* The backend side's set-up (fdw/ctxstore.c): transaction hooks and the
 * log hook that hides statements carrying credentials. */
extern void cxfdw_init(void);

/* Registers the writer and maintenance workers (bgworker/cx_workers_register.c); only
 * while shared_preload_libraries is processed. */
extern void cx_workers_register(void);

/*
 * Flushes the store uri through foreign table relid as role userid: the
 * recovery of rows a crash left unsealed.  Raises an ERROR if the table is
 * gone or names another store.  The backend side (fdw/cx_maintenance.c)
 * implements it and registers it in cxfdw_init().
 */
typedef void (*cx_recorded_flush_fn) (Oid relid, Oid userid, const char *uri,
									  CxWriteResult *res);
extern void cx_register_recorded_flush(cx_recorded_flush_fn fn);
extern void cx_flush_recorded(Oid relid, Oid userid, const char *uri,
							  CxWriteResult *res);

#endif							/* CX_MODULE_H */
