/*
 * cx_init.c — the module set-up of bgworker/: the GUCs every process
 * defines (ctxstore.shard_id, ctxstore.failpoints, ctxstore.commit_timeout)
 * and, with shared_preload_libraries, the shared state and the registration
 * of the writer and maintenance workers.
 */
#include "postgres.h"

#include <ctype.h>
#include <limits.h>
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "utils/guc.h"

#include "ctxstore/engine.h"
#include "cx_writer_int.h"

int			cx_commit_timeout_ms = 300000;
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
	DefineCustomIntVariable("ctxstore.commit_timeout",
							"Longest a COMMIT or a ctxstore maintenance function waits for the ctxstore workers.",
							"0 means no limit beyond statement_timeout.",
							&cx_commit_timeout_ms,
							300000, 0, INT_MAX,
							PGC_USERSET, GUC_UNIT_MS,
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
	DefineCustomStringVariable("ctxstore.failpoints",
							   "Failpoints to arm, for tests only (name=crash|error|delay:MS|eacces|...[@N], ...).",
							   "Replaces the set armed from CTXSTORE_FAILPOINTS.",
							   &failpoints_guc,
							   "",
							   PGC_SUSET, 0,
							   check_failpoints, assign_failpoints, NULL);
}

static void
register_worker(const char *type, const char *function)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", type);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", type);
	/* The "connection" is to no database: it gives the worker a
	 * pg_stat_activity entry; requests carry everything it needs. */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "ctxstore");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
	RegisterBackgroundWorker(&worker);
}

void
cx_writer_init_module(void)
{
	define_gucs();
	if (!process_shared_preload_libraries_in_progress)
		return;
	cx_shmem_install_hooks();
	register_worker("ctxstore writer", "cx_writer_main");
	register_worker("ctxstore maintenance", "cx_maint_main");
}

const char *
cx_shard_id(void)
{
	return shard_id_guc;
}
