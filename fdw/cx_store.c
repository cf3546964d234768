/*
 * cx_store.c — the backend's read handles on stores, its manifest cache and
 * the access checks every use of a store goes through.
 *
 * Handles are opened once per backend per (uri, options) and kept: opening
 * may cost connections and DNS lookups on an object store, and a read handle
 * holds no state that a later transaction could trip over.  They are never
 * used for writing (the writer worker writes).
 *
 * Loading the newest manifest costs a few HEAD probes and a GET, so it is
 * cached: for the whole transaction under REPEATABLE READ or SERIALIZABLE, for
 * one statement under READ COMMITTED (a statement's planning and execution
 * share it, as they share the statement start time).  A pinned version never
 * changes, so the last one used is kept as long as the handle.  Scans read
 * snapshots of their own (cx_scan.c), so replacing a cached manifest never
 * pulls one from under a scan still running (an open cursor, say).
 *
 * Writing needs less: only the store's schema and key, to check a table
 * against them and to encode its rows.  The first writer records both; the
 * key never changes (cx_manifest_set_key is only applied to a manifest
 * without one) and the schema only by ALTER (cx_alter.c), after which a
 * table that no longer fits the copy reloads it and rows encoded under an
 * older schema are converted by the writer.  So once a store has both they
 * are kept for the handle's life and an INSERT no longer loads the
 * manifest at all.  An empty store, or one without a key
 * yet, is looked up again every time.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"

struct CxStore
{
	char	   *key;			/* uri and options; holds secrets */
	cx_objstore *handle;
	/* The newest manifest (NULL: empty store) and when it was loaded. */
	bool		latest_loaded;
	cx_manifest *latest;
	LocalTransactionId latest_lxid;
	TimestampTz latest_stmt;
	cx_manifest *pinned;		/* last pinned version read, or NULL */
	/* The store's schema (malloc'd) and key once it recorded both, else
	 * NULL; write_base views them as a manifest for cxfdw_check_table_key. */
	cx_schema  *fixed_schema;
	char	   *fixed_key;
	cx_manifest write_base;
	CxStore    *next;			/* another key of the same hash */
};

/*
 * The open stores by the hash of their key: a backend of a cluster writing
 * a thousand stores finds each one's handle at every statement, so a search
 * must not compare every key (they share long URI prefixes).
 */
typedef struct StoreBucket
{
	uint64		hash;			/* the hash key */
	CxStore    *first;
} StoreBucket;

static HTAB *stores = NULL;

/* What tells two handles apart: the URI and every option the engine gets. */
static char *
handle_key(const CxRelInfo *ri)
{
	StringInfoData key;

	initStringInfo(&key);
	appendStringInfoString(&key, ri->uri);
	for (int i = 0; i < ri->nstore_options; i++)
		appendStringInfo(&key, "\n%s=%s", ri->store_options[i].name,
						 ri->store_options[i].value);
	return key.data;
}

/* "store <uri> of foreign table "<name>"", or "store <uri>" without one. */
static char *
describe(const CxRelInfo *ri)
{
	if (ri->relname == NULL)
		return psprintf("store %s", ri->uri);
	return psprintf("store %s of foreign table \"%s\"", ri->uri, ri->relname);
}

static void
check_access(const CxRelInfo *ri, CxAccess access)
{
	bool		reading = access == CX_ACCESS_READ;

	/* file:// reaches the server's file system: the rule of file_fdw. */
	if (cxfdw_uri_is_file(ri->uri))
	{
		Oid			role = reading ? ROLE_PG_READ_SERVER_FILES : ROLE_PG_WRITE_SERVER_FILES;

		if (!has_privs_of_role(ri->userid, role))
			ereport(ERROR,
					errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied to %s %s",
						   reading ? "read" : "write", describe(ri)),
					errdetail("Only roles with privileges of the \"%s\" role may %s file:// stores.",
							  reading ? "pg_read_server_files" : "pg_write_server_files",
							  reading ? "read" : "write"));
		return;
	}

	/* Without credentials of its own a request is anonymous or, where a
	 * superuser allowed it, uses the server process's environment: neither
	 * is for every user. */
	if (!ri->has_credentials && !ri->env_credentials && !superuser_arg(ri->userid))
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				errmsg("%s needs credentials in a user mapping", describe(ri)),
				errdetail("Only superusers may reach an object store without credentials, unless a superuser set allow_env_credentials on the server."),
				errhint("Add access_key_id and secret_access_key (S3), or account_key or sas_token (Azure), to the user mapping."));
}

static cx_objstore *
open_handle(const CxRelInfo *ri)
{
	cx_objstore *handle;
	cx_err		err;

	if (cx_objstore_open(ri->uri, ri->store_options, ri->nstore_options,
						 &handle, &err) != CX_OK)
		cx_pg_error(&err, "could not open store %s", ri->uri);
	return handle;
}

static StoreBucket *
bucket_of(const char *key)
{
	uint64		hash = hash_bytes_extended((const unsigned char *) key,
										   (int) strlen(key), 0);
	StoreBucket *b;
	bool		found;

	if (stores == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(uint64),
		.entrysize = sizeof(StoreBucket)};

		stores = hash_create("ctxstore stores", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS);
	}
	b = hash_search(stores, &hash, HASH_ENTER, &found);
	if (!found)
		b->first = NULL;
	return b;
}

static CxStore *
find_or_open(const CxRelInfo *ri)
{
	char	   *key = handle_key(ri);
	StoreBucket *b = bucket_of(key);
	CxStore    *st;
	cx_objstore *handle;

	for (st = b->first; st != NULL; st = st->next)
		if (strcmp(st->key, key) == 0)
			return st;

	handle = open_handle(ri);
	st = MemoryContextAllocZero(TopMemoryContext, sizeof(CxStore));
	st->key = MemoryContextStrdup(TopMemoryContext, key);
	st->handle = handle;
	st->next = b->first;
	b->first = st;
	return st;
}

/*
 * The store of a foreign table, after checking that its user may read it or
 * write it.  Every use of a store starts here.
 */
CxStore *
cxfdw_store_open(const CxRelInfo *ri, CxAccess access)
{
	check_access(ri, access);
	return find_or_open(ri);
}

/*
 * A handle of the caller's own on a store, after the same access checks:
 * for uses that touch many stores once (IMPORT FOREIGN SCHEMA), which the
 * per-backend cache would otherwise keep open for good.
 */
cx_objstore *
cxfdw_store_connect(const CxRelInfo *ri, CxAccess access)
{
	check_access(ri, access);
	return open_handle(ri);
}

cx_objstore *
cxfdw_store_handle(CxStore *st)
{
	return st->handle;
}

static bool
latest_is_current(const CxStore *st)
{
	if (!st->latest_loaded || st->latest_lxid != MyProc->lxid)
		return false;
	return IsolationUsesXactSnapshot() ||
		st->latest_stmt == GetCurrentStatementStartTimestamp();
}

static const cx_manifest *
latest_manifest(CxStore *st)
{
	cx_manifest *m;
	cx_err		err;

	if (latest_is_current(st))
		return st->latest;

	if (cx_manifest_load_latest(st->handle, &m, &err) != CX_OK)
		cx_pg_error(&err, "could not read the newest version of store %s",
					st->handle->uri);
	cx_manifest_free(st->latest);
	st->latest = m;
	st->latest_loaded = true;
	st->latest_lxid = MyProc->lxid;
	st->latest_stmt = GetCurrentStatementStartTimestamp();
	return m;
}

static const cx_manifest *
pinned_manifest(CxStore *st, uint64 version)
{
	cx_manifest *m;
	cx_err		err;

	if (st->pinned != NULL && st->pinned->version == version)
		return st->pinned;

	if (cx_manifest_load(st->handle, version, &m, &err) != CX_OK)
		cx_pg_error(&err, "could not read version " UINT64_FORMAT " of store %s",
					version, st->handle->uri);
	cx_manifest_free(st->pinned);
	st->pinned = m;
	return m;
}

/*
 * The manifest of version (0: the newest), or NULL for a store nobody has
 * written yet.  It belongs to the cache: use it before the next call.
 */
const cx_manifest *
cxfdw_store_manifest(CxStore *st, uint64 version)
{
	return version == 0 ? latest_manifest(st) : pinned_manifest(st, version);
}

/*
 * The store's schema and key for a write: a manifest of which only schema,
 * key_column and unique_key may be used, or NULL for a store nobody has
 * written yet.  Valid until the next call on st.  *cached says whether it
 * came from the handle's cache rather than from the newest manifest.
 */
const cx_manifest *
cxfdw_store_write_base(CxStore *st, bool *cached)
{
	const cx_manifest *m;
	cx_schema  *schema;

	*cached = st->fixed_schema != NULL;
	if (*cached)
		return &st->write_base;

	m = latest_manifest(st);
	if (m == NULL || m->schema == NULL || m->key_column == NULL)
		return m;
	schema = cx_schema_clone(m->schema);
	if (schema == NULL)
		ereport(ERROR, errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory"));
	st->fixed_key = MemoryContextStrdup(TopMemoryContext, m->key_column);
	st->fixed_schema = schema;
	memset(&st->write_base, 0, sizeof(st->write_base));
	st->write_base.schema = st->fixed_schema;
	st->write_base.key_column = st->fixed_key;
	st->write_base.unique_key = m->unique_key;
	return &st->write_base;
}

/*
 * Drops the cached schema and key, so that the next write looks at the newest
 * manifest again: for when a table no longer fits them, or a write failed (a
 * store deleted and created anew at the same URI has a schema of its own).
 */
void
cxfdw_store_forget_write_base(CxStore *st)
{
	if (st->fixed_schema == NULL)
		return;
	cx_schema_free(st->fixed_schema);
	pfree(st->fixed_key);
	st->fixed_schema = NULL;
	st->fixed_key = NULL;
	memset(&st->write_base, 0, sizeof(st->write_base));
}
