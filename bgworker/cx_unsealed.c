/*
 * cx_unsealed.c — rows a crash left durable but unsealed become visible
 * again without anyone asking.
 *
 * With seal_on_insert off, COMMIT returns once the rows are in a WAL entry;
 * they become visible when the memtable is sealed.  If the writer dies first
 * (kill -9 restarts the whole cluster), the rows are safe in the WAL, but
 * only a claim of the shard replays them, and claiming needs the store's
 * options and credentials, which live in the catalog of some database, not
 * in the writer.  So the writer keeps a record, in the data directory, of
 * each store whose memtable holds rows: the store's URI and the table and
 * role whose request put them there (OIDs, never an option value).  It is
 * written (and fsynced) before the first unsealed append to an empty
 * memtable and removed once the memtable is empty again.
 *
 * When the writer starts and finds records, it starts one recovery worker
 * per database they name.  That worker connects to the database, resolves
 * each recorded table's server and user mapping as the recorded role, as
 * any query would, and asks the writer to flush the store through the
 * ordinary control path (cx_flush_recorded, shared/cx_module.h): the writer opens the store
 * with those options, its claim replays the WAL into a generation, and the
 * rows are visible.  A record whose table is gone or names another store
 * now is reported and left for the next start (any write to the store
 * seals the rows too).
 *
 * Records: $PGDATA/ctxstore/unsealed/<32 hex>.rec, the name from a SHA-256
 * of the store's identity (URI and location), the body text lines
 * "ctxstore unsealed 1", "uri <uri>", "db <oid>", "rel <oid>", "user <oid>".
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "cx_writer_int.h"

PGDLLEXPORT void cx_recovery_main(Datum main_arg);

#define RECORD_DIR "ctxstore/unsealed"
#define RECORD_MAGIC "ctxstore unsealed 1"
/* Most records one start recovers (more are left for the next). */
#define MAX_RECORDS 1024

typedef struct UnsealedRecord
{
	char		uri[CX_STATS_URI_MAX];
	Oid			dboid;
	Oid			relid;
	Oid			userid;
} UnsealedRecord;

/* "ctxstore/unsealed/<32 hex>.rec" of the store os. */
static void
record_path(const CxOpenStore *os, char *path, size_t len)
{
	StringInfoData id;
	char		hex[2 * CX_SHA256_LEN + 1];

	initStringInfo(&id);
	appendStringInfo(&id, "%s\n%s", os->uri, os->location);
	cx_sha256_hex(id.data, id.len, hex);
	pfree(id.data);
	snprintf(path, len, "%s/%.32s.rec", RECORD_DIR, hex);
}

/* Writes path durably: a temporary file, fsync, rename, fsync the
 * directory.  false (errno set) on failure. */
static bool
write_durably(const char *path, const char *body)
{
	char		tmp[MAXPGPATH];
	int			fd;
	bool		ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		return false;
	ok = write(fd, body, strlen(body)) == (ssize_t) strlen(body) &&
		pg_fsync(fd) == 0;
	if (CloseTransientFile(fd) != 0)
		ok = false;
	return ok && durable_rename(tmp, path, LOG) == 0;
}

void
cx_unsealed_record(const CxOpenStore *os, const CxTableRef *table)
{
	char		path[MAXPGPATH];
	char	   *body;

	if (table->relid == InvalidOid)
		return;
	record_path(os, path, sizeof(path));
	body = psprintf("%s\nuri %s\ndb %u\nrel %u\nuser %u\n", RECORD_MAGIC,
					os->uri, table->dboid, table->relid, table->userid);
	if (MakePGDirectory("ctxstore") < 0 && errno != EEXIST)
		elog(WARNING, "ctxstore writer: could not create directory \"ctxstore\": %m");
	else if (MakePGDirectory(RECORD_DIR) < 0 && errno != EEXIST)
		elog(WARNING, "ctxstore writer: could not create directory \"%s\": %m", RECORD_DIR);
	else if (!write_durably(path, body))
		ereport(WARNING,
				errmsg("ctxstore writer: could not record that store \"%s\" holds unsealed rows: %m",
					   os->uri),
				errdetail("The rows are durable in the store's WAL; after a crash they stay invisible until the store is written or flushed."));
	pfree(body);
}

void
cx_unsealed_forget(const CxOpenStore *os)
{
	char		path[MAXPGPATH];

	record_path(os, path, sizeof(path));
	if (unlink(path) != 0 && errno != ENOENT)
		elog(LOG, "ctxstore writer: could not remove \"%s\": %m", path);
}

/* Parses a record's text; false if it is not one. */
static bool
parse_record(char *text, UnsealedRecord *rec)
{
	char	   *line;
	char	   *save = NULL;
	int			found = 0;

	memset(rec, 0, sizeof(*rec));
	line = strtok_r(text, "\n", &save);
	if (line == NULL || strcmp(line, RECORD_MAGIC) != 0)
		return false;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL)
	{
		if (strncmp(line, "uri ", 4) == 0 && strlen(line + 4) < sizeof(rec->uri))
			found += strlcpy(rec->uri, line + 4, sizeof(rec->uri)) > 0;
		else
			found += sscanf(line, "db %u", &rec->dboid) +
				sscanf(line, "rel %u", &rec->relid) +
				sscanf(line, "user %u", &rec->userid);
	}
	return found == 4 && rec->dboid != InvalidOid && rec->relid != InvalidOid;
}

static bool
read_record(const char *path, UnsealedRecord *rec)
{
	char		text[CX_STATS_URI_MAX + 256];
	FILE	   *f = AllocateFile(path, "r");
	size_t		n;

	if (f == NULL)
		return false;
	n = fread(text, 1, sizeof(text) - 1, f);
	FreeFile(f);
	text[n] = '\0';
	return parse_record(text, rec);
}

/* Every well-formed record (at most max), palloc'd; *n how many. */
static UnsealedRecord *
read_records(int *n)
{
	UnsealedRecord *recs = palloc(sizeof(UnsealedRecord) * MAX_RECORDS);
	DIR		   *dir = AllocateDir(RECORD_DIR);
	struct dirent *de;

	*n = 0;
	if (dir == NULL)
		return recs;
	while ((de = ReadDirExtended(dir, RECORD_DIR, LOG)) != NULL && *n < MAX_RECORDS)
	{
		char		path[MAXPGPATH];
		size_t		len = strlen(de->d_name);

		if (len < 4 || strcmp(de->d_name + len - 4, ".rec") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", RECORD_DIR, de->d_name);
		if (read_record(path, &recs[*n]))
			(*n)++;
		else
			elog(LOG, "ctxstore writer: ignoring malformed record \"%s\"", path);
	}
	FreeDir(dir);
	return recs;
}

static void
launch_recovery(Oid dboid)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	snprintf(worker.bgw_name, BGW_MAXLEN, "ctxstore recovery for database %u", dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "ctxstore recovery");
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "ctxstore");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "cx_recovery_main");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	if (!RegisterDynamicBackgroundWorker(&worker, NULL))
		ereport(WARNING,
				errmsg("ctxstore writer: could not start a recovery worker for database %u", dboid),
				errdetail("Rows a crash left unsealed in its stores stay invisible until the stores are written or flushed."),
				errhint("Raise max_worker_processes, or call ctxstore.flush() on the tables."));
}

void
cx_unsealed_recover(void)
{
	int			n;
	UnsealedRecord *recs = read_records(&n);

	for (int i = 0; i < n; i++)
	{
		bool		first = true;

		for (int k = 0; k < i && first; k++)
			first = recs[k].dboid != recs[i].dboid;
		if (first)
			launch_recovery(recs[i].dboid);
	}
	if (n > 0)
		elog(LOG, "ctxstore writer: %d store(s) held unsealed rows when the writer last stopped; recovering them",
			 n);
	pfree(recs);
}

/* One record of this database: flush its store as its table and role. */
static void
recover_one(const UnsealedRecord *rec)
{
	CxWriteResult res = {0};

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, rec->uri);
	cx_flush_recorded(rec->relid, rec->userid, rec->uri, &res);
	ereport(LOG,
			errmsg("ctxstore recovery: made " UINT64_FORMAT " row(s) of store \"%s\" visible",
				   res.sealed_rows, rec->uri));
	PopActiveSnapshot();
	CommitTransactionCommand();
}

void
cx_recovery_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	int			n;
	UnsealedRecord *recs;

	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	recs = read_records(&n);
	for (int i = 0; i < n; i++)
	{
		if (recs[i].dboid != dboid)
			continue;
		PG_TRY();
		{
			recover_one(&recs[i]);
		}
		PG_CATCH();
		{
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			ereport(WARNING,
					errmsg("ctxstore recovery: could not make the unsealed rows of store \"%s\" visible",
						   recs[i].uri),
					errhint("They are durable in the store's WAL: the next write to the store, or ctxstore.flush() on one of its tables, makes them visible."));
		}
		PG_END_TRY();
	}
	proc_exit(0);
}
