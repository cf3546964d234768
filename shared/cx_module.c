/*
 * cx_module.c — the module's entry: _PG_init, every GUC, and the calls
 * between the two sides that neither may make directly.
 *
 * Loaded through shared_preload_libraries, the module also sets up the
 * shared state and registers the writer and maintenance workers
 * (bgworker/); loaded on demand by a backend it can still read stores, and
 * refuses writes with a hint (fdw/cx_modify.c).
 */
#include "postgres.h"

#include <ctype.h>
#include <limits.h>
#include <unistd.h>

#include "access/xlog.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "ctxstore/engine.h"
#include "cx_module.h"
#include "cx_writer_shmem.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			cx_max_transaction_kb = 1024 * 1024;
int			cx_commit_timeout_ms = 300000;
int			cx_writer_max_open_stores = 32;
int			cx_writer_concurrent_seals = 8;
int			cx_writer_commit_delay = 20;
int			cx_maintenance_nice = 0;
int			cx_request_ring_kb = 8 * 1024;
static char *shard_id_guc = NULL;
static char *failpoints_guc = NULL;

/* Whether this process armed failpoints from the GUC (so that going back
 * to the empty default disarms them, while the boot default leaves the
 * environment's CTXSTORE_FAILPOINTS alone). */
static bool failpoints_from_guc = false;

/*
 * "<host name>-<system identifier>": the host name with every character a
 * shard id may not hold replaced by '-', cut so that the whole fits.  The
 * system identifier (initdb's, as pg_controldata shows it) tells two
 * clusters on one host apart; the host name makes the id readable.
 */
static char *
default_shard_id(void)
{
	static char id[CX_SHARD_ID_MAX + 1];
	char		host[256];
	char		sysid[32];
	size_t		room;

	if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0')
		strlcpy(host, "localhost", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	for (char *p = host; *p; p++)
		if (!(isalnum((unsigned char) *p) || *p == '.' || *p == '_' || *p == '-'))
			*p = '-';
	snprintf(sysid, sizeof(sysid), UINT64_FORMAT, GetSystemIdentifier());
	room = CX_SHARD_ID_MAX - strlen(sysid) - 1;
	if (strlen(host) > room)
		host[room] = '\0';
	snprintf(id, sizeof(id), "%s-%s", host, sysid);
	return id;
}

static bool
check_shard_id(char **newval, void **extra, GucSource source)
{
	cx_err		err;

	if (cx_shard_id_validate(*newval, &err) == CX_OK)
		return true;
	GUC_check_errdetail("%s", err.msg);
	return false;
}

/*
 * Failpoints are for tests.  The postmaster never arms them: its children
 * would inherit them, and a failpoint that crashes would then crash every
 * restarted worker again.  A process arms them when it applies the setting
 * itself (SET in a session; ALTER SYSTEM and pg_reload_conf() for every
 * running process, the workers included); a process started later, such as
 * a worker restarted after a crash, starts disarmed.
 *
 * Validating a spec means parsing it, which the engine only does by arming
 * it (cx_failpoint_set leaves the armed set alone on a bad spec).  So the
 * check hook arms in the process that validates, and the assign hook, which
 * follows it, arms the same set again.
 */
static bool
check_failpoints(char **newval, void **extra, GucSource source)
{
	cx_err		err;

	if (source == PGC_S_DEFAULT || !IsUnderPostmaster)
		return true;
	if (cx_failpoint_set(*newval, &err) == CX_OK)
		return true;
	GUC_check_errdetail("%s", err.msg);
	return false;
}

static void
assign_failpoints(const char *newval, void *extra)
{
	cx_err		err;

	if (!IsUnderPostmaster || (newval[0] == '\0' && !failpoints_from_guc))
		return;
	if (cx_failpoint_set(newval, &err) != CX_OK)
		elog(WARNING, "ctxstore.failpoints not applied: %s", err.msg);
	else
		failpoints_from_guc = newval[0] != '\0';
}

static void
define_gucs(void)
{
	DefineCustomIntVariable("ctxstore.max_transaction_bytes",
							"Most row data one transaction may write to ctxstore foreign tables.",
							"Rows stay in the backend's memory until COMMIT hands them to the writer worker.",
							&cx_max_transaction_kb,
							1024 * 1024, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("ctxstore.commit_timeout",
							"Longest a COMMIT or a ctxstore maintenance function waits for the ctxstore workers.",
							"0 means no limit beyond statement_timeout.",
							&cx_commit_timeout_ms,
							300000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	/* Sized once, with the server's shared memory: fixed at server start
	 * (see ctxstore.shard_id for the PGC_SIGHUP case). */
	DefineCustomIntVariable("ctxstore.request_ring_size",
							"Shared memory the request ring takes, in which a COMMIT hands its rows to the ctxstore writer.",
							"A transaction whose rows take more than a sixteenth of it, or that finds it full, uses a dynamic shared memory segment of its own.",
							&cx_request_ring_kb,
							8 * 1024, 64, 1024 * 1024,
							process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
	/*
	 * The writer claims its shards under this id, so it is fixed at server
	 * start.  PostgreSQL creates PGC_POSTMASTER variables only then: a
	 * backend that loads ctxstore on demand (no shared_preload_libraries,
	 * hence no writer) defines it PGC_SIGHUP, only to read it.
	 */
	DefineCustomStringVariable("ctxstore.shard_id",
							   "The shard this cluster writes in every store.",
							   "Two clusters writing one store must have different shard ids. The default is derived from the host name and the cluster's system identifier.",
							   &shard_id_guc,
							   default_shard_id(),
							   process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP,
							   0, check_shard_id, NULL, NULL);
	/* The writer sizes its table of open stores once, at its start (same
	 * context rule as ctxstore.shard_id). */
	DefineCustomIntVariable("ctxstore.writer_max_open_stores",
							"Most stores the ctxstore writer worker keeps open at once.",
							"Past it the least recently used idle store is closed; its shard claim is kept, so reopening it claims nothing.",
							&cx_writer_max_open_stores,
							32, 1, 65536,
							process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP,
							0, NULL, NULL, NULL);
	DefineCustomIntVariable("ctxstore.writer_concurrent_seals",
							"Most stores whose group commits the ctxstore writer worker has in flight at once.",
							"Each store's appends stay in order; a round's stores are appended concurrently, this many at a time.",
							&cx_writer_concurrent_seals,
							8, 1, CX_POOL_MAX_THREADS,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("ctxstore.writer_commit_delay",
							"Longest wait of the ctxstore writer worker for the sessions of its last group commit to commit again, in percent of that commit's time.",
							"After a round that settled several transactions, the next round waits until their sessions have committed again or this share of the round's time has passed, so that they share one group commit. 0 disables it.",
							&cx_writer_commit_delay,
							20, 0, 100,
							PGC_SIGHUP, 0, NULL, NULL, NULL);
	/* Applied once, when the maintenance worker starts (same context rule
	 * as ctxstore.shard_id). */
	DefineCustomIntVariable("ctxstore.maintenance_nice",
							"Nice value the ctxstore maintenance worker runs its merges, compactions and GC at.",
							"Above 0 the worker yields the CPU to commits while it merges, and its merges take longer on a busy machine; 0 runs it at the server's priority.",
							&cx_maintenance_nice,
							0, 0, 19,
							process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_SIGHUP,
							0, NULL, NULL, NULL);
	DefineCustomStringVariable("ctxstore.failpoints",
							   "Failpoints to arm, for tests only (name=crash|error|delay:MS|eacces|...[@N], ...).",
							   "Replaces the set armed from CTXSTORE_FAILPOINTS.",
							   &failpoints_guc,
							   "",
							   PGC_SUSET, 0,
							   check_failpoints, assign_failpoints, NULL);
}

void
_PG_init(void)
{
	define_gucs();
	cxfdw_init();
	if (process_shared_preload_libraries_in_progress)
	{
		cx_shmem_install_hooks();
		cx_workers_register();
	}
	MarkGUCPrefixReserved("ctxstore");
}

const char *
cx_shard_id(void)
{
	return shard_id_guc;
}

static cx_recorded_flush_fn recorded_flush = NULL;

void
cx_register_recorded_flush(cx_recorded_flush_fn fn)
{
	recorded_flush = fn;
}

void
cx_flush_recorded(Oid relid, Oid userid, const char *uri, CxWriteResult *res)
{
	/* _PG_init registers it before any worker can start. */
	Assert(recorded_flush != NULL);
	recorded_flush(relid, userid, uri, res);
}
