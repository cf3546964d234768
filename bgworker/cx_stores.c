/*
 * cx_writer_stores.c — the writer worker's resident store handles.
 *
 * A store is opened once per (URI, options) identity and reused by every
 * later round, so object-store connections, DNS lookups and TLS sessions are
 * paid once, not per commit.  The options take part in the identity because
 * two user mappings may reach one URI with different credentials; they are
 * compared as bytes and never logged.  The cache is bounded: the least
 * recently used handle is closed to make room.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "cx_writer_int.h"

#define CX_STORES_MAX 32

typedef struct CxStoreEntry
{
	char	   *uri;			/* NULL = unused; TopMemoryContext */
	char	   *options_bytes;
	Size		options_len;
	cx_objstore *store;
	uint64		last_used;
} CxStoreEntry;

static CxStoreEntry stores[CX_STORES_MAX];
static uint64 use_counter;

static void
entry_close(CxStoreEntry *e)
{
	cx_obj_close(e->store);
	pfree(e->uri);
	if (e->options_bytes)
		pfree(e->options_bytes);
	memset(e, 0, sizeof(*e));
}

static bool
entry_matches(const CxStoreEntry *e, const CxBatchView *req)
{
	return e->uri != NULL && strcmp(e->uri, req->uri) == 0 &&
		e->options_len == req->options_len &&
		memcmp(e->options_bytes, req->options_bytes, req->options_len) == 0;
}

/* A free entry, or the least recently used one after closing it. */
static CxStoreEntry *
entry_for_new_store(void)
{
	CxStoreEntry *victim = &stores[0];

	for (int i = 0; i < CX_STORES_MAX; i++)
	{
		if (stores[i].uri == NULL)
			return &stores[i];
		if (stores[i].last_used < victim->last_used)
			victim = &stores[i];
	}
	elog(LOG, "ctxstore writer: closing idle store \"%s\" (cache of %d stores is full)",
		 victim->uri, CX_STORES_MAX);
	entry_close(victim);
	return victim;
}

cx_code
cx_stores_get(const CxBatchView *req, cx_objstore **out, cx_err *err)
{
	CxStoreEntry *e;
	char	   *uri;
	char	   *options_bytes = NULL;
	cx_code		rc;

	for (int i = 0; i < CX_STORES_MAX; i++)
		if (entry_matches(&stores[i], req))
		{
			stores[i].last_used = ++use_counter;
			*out = stores[i].store;
			return CX_OK;
		}

	/* Copy first: a palloc failure must not strand an open handle. */
	uri = MemoryContextStrdup(TopMemoryContext, req->uri);
	if (req->options_len > 0)
	{
		options_bytes = MemoryContextAlloc(TopMemoryContext, req->options_len);
		memcpy(options_bytes, req->options_bytes, req->options_len);
	}
	e = entry_for_new_store();
	rc = cx_objstore_open(req->uri, req->options, req->noptions, out, err);
	if (rc != CX_OK)
	{
		pfree(uri);
		if (options_bytes)
			pfree(options_bytes);
		return rc;
	}
	e->uri = uri;
	e->options_bytes = options_bytes;
	e->options_len = req->options_len;
	e->store = *out;
	e->last_used = ++use_counter;
	elog(DEBUG1, "ctxstore writer: opened store \"%s\"", req->uri);
	return CX_OK;
}

void
cx_stores_discard(cx_objstore *store)
{
	for (int i = 0; i < CX_STORES_MAX; i++)
		if (stores[i].store == store)
		{
			entry_close(&stores[i]);
			return;
		}
}

void
cx_stores_close_all(void)
{
	for (int i = 0; i < CX_STORES_MAX; i++)
		if (stores[i].uri != NULL)
			entry_close(&stores[i]);
}
