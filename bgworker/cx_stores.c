/*
 * cx_stores.c — the stores a worker process holds open, one per URI.
 *
 * A store is opened once and reused by every later request, so object-store
 * connections, DNS lookups and TLS sessions are paid once, not per commit or
 * per merge.  Each worker (writer, maintenance) has its own table and its own
 * handles.  The handle is opened with the options (server and user-mapping
 * options, compared as bytes and never logged) of the request that opened
 * it; a request for the same URI with other options (another user mapping)
 * closes it and opens it again with those, so no request is carried out with
 * another user's credentials.  The table is bounded: the least recently used
 * store that is not busy is closed to make room.
 *
 * The owning worker hangs its own state on each store (CxOpenStore.state)
 * and is told before a store is closed (CxStoreHooks.closing).
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "cx_writer_int.h"

static CxOpenStore **open_stores;
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

CxOpenStore *
cx_stores_find(const char *uri)
{
	for (int i = 0; i < max_open; i++)
		if (open_stores[i] != NULL && strcmp(open_stores[i]->uri, uri) == 0)
			return open_stores[i];
	return NULL;
}

static void
store_free(CxOpenStore *os)
{
	pfree(os->uri);
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

static bool
same_identity(const CxOpenStore *os, const CxBatchView *req)
{
	return os->options_len == req->options_len &&
		memcmp(os->options_bytes, req->options_bytes, req->options_len) == 0;
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
		if (hooks.busy && hooks.busy(open_stores[i]))
			continue;
		if (victim < 0 || open_stores[i]->last_used < open_stores[victim]->last_used)
			victim = i;
	}
	if (victim >= 0)
	{
		elog(LOG, "ctxstore: closing idle store \"%s\" (at most %d stores are kept open)",
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

	os->uri = MemoryContextStrdup(TopMemoryContext, req->uri);
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

cx_code
cx_stores_get(const CxBatchView *req, CxOpenStore **out, cx_err *err)
{
	CxOpenStore *os;
	int			slot = -1;

	for (int i = 0; i < max_open && slot < 0; i++)
		if (open_stores[i] != NULL && strcmp(open_stores[i]->uri, req->uri) == 0)
			slot = i;
	if (slot >= 0 && same_identity(open_stores[slot], req))
	{
		open_stores[slot]->last_used = ++use_counter;
		*out = open_stores[slot];
		return CX_OK;
	}
	if (slot >= 0)
	{
		elog(LOG, "ctxstore: reopening store \"%s\" with the options of another user mapping",
			 req->uri);
		store_close(slot);
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
	*out = os;
	return CX_OK;
}

void
cx_stores_close_all(void)
{
	for (int i = 0; i < max_open; i++)
		if (open_stores[i] != NULL)
			store_close(i);
}
