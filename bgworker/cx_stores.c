/*
 * cx_stores.c — the stores a worker process holds open, one per URI.
 *
 * A store is opened once and reused by every later request, so object-store
 * connections, DNS lookups and TLS sessions are paid once, not per commit or
 * per merge.  Each worker (writer, maintenance) has its own table and its own
 * handles.  The table is bounded: the least recently used store that is not
 * busy is closed to make room.
 *
 * A store is its canonical URI plus the options that say where it is
 * (endpoint, account_name): one entry, one handle and, in the writer, one
 * shard claim, whichever role's request reaches it.  The handle is opened
 * with the options (server and user mapping) of the request that opened it.
 * A request that carries other options (another role's user mapping) is
 * carried out on that handle only once its own credentials have been seen
 * to write the store: the store is opened with them and a small object
 * (_access_check) is put with them.  The check is remembered per store by
 * a digest of the options, never the options themselves, for
 * CREDENTIAL_CHECK_SECONDS; a check that fails is not remembered.  So no
 * role's rows reach a store its own credentials could not write, and two
 * roles writing one store share one claim instead of re-claiming the shard
 * at every switch (docs/design/workers.md, "Resident stores", gives the
 * argument).  If the handle's own credentials stop working (CX_ERR_AUTH:
 * rotated or revoked), the store is reopened with the next request's
 * other options once it is not busy (cx_stores_want_reopen, must_reopen).
 *
 * The owning worker hangs its own state on each store (CxOpenStore.state)
 * and is told before a store is closed (CxStoreHooks.closing).
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "ctxstore/engine.h"
#include "cx_writer_int.h"

/* How long a credential check stays good. */
#define CREDENTIAL_CHECK_SECONDS 300

static CxOpenStore **open_stores;
static uint32 *uri_hashes;		/* of open_stores[i]->uri, side by side so
								 * that a lookup walks one small array */
static int	max_open;
static CxStoreHooks hooks;
static uint64 use_counter;

void
cx_stores_init(const CxStoreHooks *h, int max)
{
	hooks = *h;
	max_open = max;
	open_stores = MemoryContextAllocZero(TopMemoryContext,
										 sizeof(CxOpenStore *) * max);
	uri_hashes = MemoryContextAllocZero(TopMemoryContext, sizeof(uint32) * max);
}

int
cx_stores_max(void)
{
	return max_open;
}

CxOpenStore *
cx_stores_at(int i)
{
	return open_stores[i];
}

uint64
cx_stores_cache_bytes(void)
{
	uint64		bytes = cx_keyindex_cache_bytes();

	for (int i = 0; i < max_open; i++)
		if (open_stores[i] != NULL)
			bytes += cx_obj_cache_bytes(open_stores[i]->handle);
	return bytes;
}

/*
 * Lookups walk every open store, and the writer makes one per group of a
 * round while it holds the shared lock: with a thousand stores open, URIs
 * that differ only at their end made strcmp 5% of the writer's CPU.  A
 * hash compared first, kept in an array of its own (following each
 * store's pointer cost another 1%), leaves about one strcmp per lookup.
 */
static uint32
store_uri_hash(const char *uri)
{
	return hash_bytes((const unsigned char *) uri, (int) strlen(uri));
}

static bool
has_uri(int i, const char *uri, uint32 hash)
{
	return uri_hashes[i] == hash && open_stores[i] != NULL &&
		strcmp(open_stores[i]->uri, uri) == 0;
}

CxOpenStore *
cx_stores_find(const char *uri)
{
	uint32		hash = store_uri_hash(uri);

	for (int i = 0; i < max_open; i++)
		if (has_uri(i, uri, hash))
			return open_stores[i];
	return NULL;
}

/* The options that say where a store is, as "name=value\n" lines: part of
 * its identity, with the URI.  Holds no secret. */
static char *
store_location(const CxBatchView *req)
{
	static const char *const names[] = {"endpoint", "account_name"};
	StringInfoData loc;

	initStringInfo(&loc);
	for (int i = 0; i < lengthof(names); i++)
	{
		const char *v = cx_option_get(req->options, req->noptions, names[i]);

		if (v != NULL)
			appendStringInfo(&loc, "%s=%s\n", names[i], v);
	}
	return loc.data;
}

static void
store_free(CxOpenStore *os)
{
	pfree(os->uri);
	pfree(os->location);
	if (os->options_bytes)
		pfree(os->options_bytes);
	pfree(os->options);
	pfree(os);
}

static void
store_close(int i)
{
	CxOpenStore *os = open_stores[i];

	if (hooks.closing)
		hooks.closing(os);
	cx_obj_close(os->handle);
	store_free(os);
	open_stores[i] = NULL;
}

/* Whether req carries the options the store was opened with. */
static bool
same_options(const CxOpenStore *os, const CxBatchView *req)
{
	return os->options_len == req->options_len &&
		memcmp(os->options_bytes, req->options_bytes, req->options_len) == 0;
}

static void
options_digest(const CxBatchView *req, uint8 *digest)
{
	cx_sha256(req->options_bytes, req->options_len, digest);
}

/* Whether the credentials of digest passed a check of os that is still
 * good. */
static bool
recently_checked(const CxOpenStore *os, const uint8 *digest, TimestampTz now)
{
	for (int i = 0; i < CX_STORE_CHECKS; i++)
		if (os->checks[i].at != 0 &&
			memcmp(os->checks[i].digest, digest, CX_SHA256_LEN) == 0 &&
			!TimestampDifferenceExceeds(os->checks[i].at, now,
										CREDENTIAL_CHECK_SECONDS * 1000))
			return true;
	return false;
}

/* Remembers a passed check in place of the oldest. */
static void
remember_check(CxOpenStore *os, const uint8 *digest, TimestampTz now)
{
	int			oldest = 0;

	for (int i = 1; i < CX_STORE_CHECKS; i++)
		if (os->checks[i].at < os->checks[oldest].at)
			oldest = i;
	memcpy(os->checks[oldest].digest, digest, CX_SHA256_LEN);
	os->checks[oldest].at = now;
}

/* Opens the store with req's own options and writes the check object with
 * them: what those credentials may do, they may do through os's handle. */
static cx_code
check_credentials(const CxBatchView *req, cx_err *err)
{
	static const char body[] = "ctxstore: this store was written with these credentials\n";
	cx_objstore *own;
	cx_code		rc;

	if (cx_objstore_open(req->uri, req->options, req->noptions, &own, err) != CX_OK)
		return err->code;
	rc = cx_obj_put(own, CX_ACCESS_CHECK_KEY, body, sizeof(body) - 1,
					CX_PUT_OVERWRITE, err);
	cx_obj_close(own);
	return rc;
}

/* A request with options other than os's may use os once its credentials
 * are known to write the store. */
static cx_code
admit(CxOpenStore *os, const CxBatchView *req, cx_err *err)
{
	uint8		digest[CX_SHA256_LEN];
	TimestampTz now = GetCurrentTimestamp();

	if (same_options(os, req))
		return CX_OK;
	options_digest(req, digest);
	if (recently_checked(os, digest, now))
		return CX_OK;
	if (check_credentials(req, err) != CX_OK)
		return cx_err_prefix(err, "the credentials of this request's user mapping cannot write store %s",
							 req->uri);
	elog(LOG, "ctxstore: store \"%s\" admits the credentials of another user mapping (checked by writing %s)",
		 req->uri, CX_ACCESS_CHECK_KEY);
	remember_check(os, digest, now);
	return CX_OK;
}

/* Whether the owning worker still needs os open (CxStoreHooks.busy). */
static bool
store_busy(const CxOpenStore *os)
{
	return hooks.busy && hooks.busy(os);
}

/* A free entry, or the least recently used store that is not busy after
 * closing it; -1 if every store is busy. */
static int
entry_for_new_store(void)
{
	int			victim = -1;

	for (int i = 0; i < max_open; i++)
	{
		if (open_stores[i] == NULL)
			return i;
		if (store_busy(open_stores[i]))
			continue;
		if (victim < 0 || open_stores[i]->last_used < open_stores[victim]->last_used)
			victim = i;
	}
	if (victim >= 0)
	{
		elog(DEBUG1, "ctxstore: closing idle store \"%s\" (at most %d stores are kept open)",
			 open_stores[victim]->uri, max_open);
		store_close(victim);
	}
	return victim;
}

/* The store's identity copied into TopMemoryContext (before opening, so a
 * palloc failure cannot strand an open handle). */
static CxOpenStore *
store_new(const CxBatchView *req)
{
	CxOpenStore *os = MemoryContextAllocZero(TopMemoryContext, sizeof(CxOpenStore));
	char	   *location = store_location(req);

	os->uri = MemoryContextStrdup(TopMemoryContext, req->uri);
	os->location = MemoryContextStrdup(TopMemoryContext, location);
	pfree(location);
	if (req->options_len > 0)
	{
		os->options_bytes = MemoryContextAlloc(TopMemoryContext, req->options_len);
		memcpy(os->options_bytes, req->options_bytes, req->options_len);
	}
	os->options_len = req->options_len;
	os->noptions = req->noptions;
	os->options = MemoryContextAlloc(TopMemoryContext,
									 sizeof(cx_option) * Max(req->noptions, 1));
	cx_options_split(os->options_bytes, os->noptions, os->options);
	return os;
}

/* The entry of the store req names, or -1.  req's location is formatted
 * only for a store of its URI. */
static int
find_entry(const CxBatchView *req)
{
	uint32		hash = store_uri_hash(req->uri);
	char	   *location = NULL;
	int			found = -1;

	for (int i = 0; i < max_open && found < 0; i++)
	{
		if (!has_uri(i, req->uri, hash))
			continue;
		if (location == NULL)
			location = store_location(req);
		if (strcmp(open_stores[i]->location, location) == 0)
			found = i;
	}
	if (location != NULL)
		pfree(location);
	return found;
}

/*
 * Whether os, whose own credentials were refused, is reopened with req's
 * other options now.  Not while it is busy: a group of the round in progress
 * may hold it (closing it would free what that group appends through), so
 * req is admitted like any other mapping's and the reopen waits for the
 * first lookup that finds the store idle.
 */
static bool
must_reopen(const CxOpenStore *os, const CxBatchView *req)
{
	return os->reopen && !same_options(os, req) && !store_busy(os);
}

cx_code
cx_stores_get(const CxBatchView *req, CxOpenStore **out, cx_err *err)
{
	CxOpenStore *os;
	int			slot = find_entry(req);

	if (slot >= 0 && must_reopen(open_stores[slot], req))
	{
		elog(LOG, "ctxstore: reopening store \"%s\" with the options of another user mapping: its own credentials were refused",
			 req->uri);
		store_close(slot);
	}
	else if (slot >= 0)
	{
		if (admit(open_stores[slot], req, err) != CX_OK)
			return err->code;
		open_stores[slot]->last_used = ++use_counter;
		*out = open_stores[slot];
		return CX_OK;
	}
	else if ((slot = entry_for_new_store()) < 0)
		return cx_err_set(err, CX_ERR_LIMIT,
						  "cannot open store %s: all %d stores this worker keeps open are busy",
						  req->uri, max_open);

	os = store_new(req);
	if (cx_objstore_open(req->uri, os->options, os->noptions, &os->handle, err) != CX_OK)
	{
		store_free(os);
		return err->code;
	}
	os->last_used = ++use_counter;
	open_stores[slot] = os;
	uri_hashes[slot] = store_uri_hash(os->uri);
	*out = os;
	return CX_OK;
}

void
cx_stores_want_reopen(CxOpenStore *os)
{
	os->reopen = true;
}

void
cx_stores_close_all(void)
{
	for (int i = 0; i < max_open; i++)
		if (open_stores[i] != NULL)
			store_close(i);
}
