/*
 * cx_relcache.c — this backend's cache of what a write needs to know about
 * a foreign table: its CxRelInfo (options, store options, columns) and its
 * write settings, per table and user.
 *
 * Every INSERT, UPDATE, DELETE, COPY and TRUNCATE starts from them, and
 * building them reads the table's, its columns', the server's and the user
 * mapping's options, parses the URI and resolves every column's type: a cost
 * per statement for facts that change only by DDL.  An entry is dropped on
 * any change that could alter it: the table's options (FOREIGNTABLEREL), its
 * columns, name or column options (its relcache entry), the server's
 * (FOREIGNSERVEROID) or a user mapping's (USERMAPPINGOID) options, a schema
 * rename (NAMESPACEOID: the settings name the table with its schema) and a
 * role's superuser flag (AUTHOID: it decides allow_env_credentials and the
 * access check).  Invalidations arrive whenever the backend takes a lock, so
 * also in the middle of a statement that still uses the entry: a dropped
 * entry's memory lives on until the end of the transaction.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "ctxstore_fdw.h"

typedef struct RelCacheKey
{
	Oid			relid;
	Oid			userid;
} RelCacheKey;

typedef struct RelCacheEntry
{
	RelCacheKey key;
	MemoryContext cxt;			/* holds ri */
	CxRelInfo  *ri;
	bool		has_settings;
	CxStoreSettings settings;	/* without pins: those are per transaction */
} RelCacheEntry;

static HTAB *rel_cache = NULL;

/* Invalidations seen: what was read while this changed may be stale. */
static uint64 invalidations = 0;

/* Frees an entry's memory now, or at the end of the transaction that may
 * still use it. */
static void
retire(RelCacheEntry *e)
{
	if (TopTransactionContext != NULL)
		MemoryContextSetParent(e->cxt, TopTransactionContext);
	else
		MemoryContextDelete(e->cxt);
}

/* Drops the entries of table relid, or every entry for InvalidOid. */
static void
forget(Oid relid)
{
	HASH_SEQ_STATUS seq;
	RelCacheEntry *e;

	invalidations++;
	hash_seq_init(&seq, rel_cache);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (OidIsValid(relid) && e->key.relid != relid)
			continue;
		retire(e);
		(void) hash_search(rel_cache, &e->key, HASH_REMOVE, NULL);
	}
}

static void
forget_all(Datum arg, int cacheid, uint32 hashvalue)
{
	forget(InvalidOid);
}

static void
forget_relation(Datum arg, Oid relid)
{
	forget(relid);
}

static void
create_cache(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(RelCacheKey);
	ctl.entrysize = sizeof(RelCacheEntry);
	ctl.hcxt = CacheMemoryContext;
	rel_cache = hash_create("ctxstore foreign tables", 16, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterSyscacheCallback(FOREIGNTABLEREL, forget_all, (Datum) 0);
	CacheRegisterSyscacheCallback(FOREIGNSERVEROID, forget_all, (Datum) 0);
	CacheRegisterSyscacheCallback(USERMAPPINGOID, forget_all, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, forget_all, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, forget_all, (Datum) 0);
	CacheRegisterRelcacheCallback(forget_relation, (Datum) 0);
}

/*
 * cxfdw_rel_info(rel, userid), built once until an invalidation drops it.
 * Read-only to the caller; valid until the end of the transaction.
 */
const CxRelInfo *
cxfdw_rel_info_cached(Relation rel, Oid userid)
{
	RelCacheKey key = {RelationGetRelid(rel), userid};
	RelCacheEntry *e;
	MemoryContext cxt;
	MemoryContext old;
	CxRelInfo  *ri;
	uint64		seen;

	if (rel_cache == NULL)
		create_cache();
	e = hash_search(rel_cache, &key, HASH_FIND, NULL);
	if (e != NULL)
		return e->ri;

	/* Built under the caller's context, so an error frees it; adopted by
	 * the cache only once complete, and only if no invalidation arrived
	 * while it was read (the catalog lookups take locks, which accept
	 * them). */
	seen = invalidations;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "ctxstore foreign table",
								ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	ri = cxfdw_rel_info(rel, userid);
	MemoryContextSwitchTo(old);
	if (invalidations != seen)
		return ri;
	e = hash_search(rel_cache, &key, HASH_ENTER, NULL);
	MemoryContextSetParent(cxt, CacheMemoryContext);
	e->cxt = cxt;
	e->ri = ri;
	e->has_settings = false;
	return ri;
}

/* The live cache entry ri belongs to, or NULL. */
static RelCacheEntry *
cached_entry_of(const CxRelInfo *ri)
{
	RelCacheKey key = {ri->relid, ri->userid};
	RelCacheEntry *e;

	if (rel_cache == NULL)
		return NULL;
	e = hash_search(rel_cache, &key, HASH_FIND, NULL);
	return e != NULL && e->ri == ri ? e : NULL;
}

/*
 * cxfdw_table_settings(ri, out), computed once per cache entry when ri came
 * from cxfdw_rel_info_cached and is still cached; computed afresh otherwise.
 */
void
cxfdw_table_settings_cached(const CxRelInfo *ri, CxStoreSettings *out)
{
	RelCacheEntry *e = cached_entry_of(ri);
	uint64		seen = invalidations;

	if (e != NULL && e->has_settings)
	{
		*out = e->settings;
		return;
	}
	cxfdw_table_settings(ri, out);
	/* Looked up again: reading the options may have dropped the entry. */
	if (invalidations == seen && (e = cached_entry_of(ri)) != NULL)
	{
		e->settings = *out;
		e->has_settings = true;
	}
}
