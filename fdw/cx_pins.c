/*
 * cx_pins.c — the base versions foreign tables pin (option version) on a
 * store, which garbage collection must keep readable: ctxstore.gc() reads
 * them from the catalog of its database, and every request to the writer
 * carries them (CxStoreSettings.pins) so that the maintenance worker's GC
 * keeps the pins of every database that wrote to or maintained the store
 * (docs/design/maintenance.md, "Pinned versions").
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "ctxstore_fdw.h"
#include "cx_functions.h"

/* The version option of table relid if it is a ctxstore table on the store
 * at uri, else NULL. */
static const char *
pin_of(Oid relid, const char *uri)
{
	const char *table_uri = NULL;
	const char *version = NULL;
	ListCell   *lc;

	if (!cxfdw_is_ctxstore_table(relid))
		return NULL;
	foreach(lc, GetForeignTable(relid)->options)
	{
		DefElem    *d = lfirst(lc);

		if (strcmp(d->defname, "uri") == 0)
			table_uri = defGetString(d);
		else if (strcmp(d->defname, "version") == 0)
			version = defGetString(d);
	}
	if (version == NULL || table_uri == NULL ||
		strcmp(cxfdw_canonical_uri(table_uri), uri) != 0)
		return NULL;
	return version;
}

uint64 *
cxfdw_pinned_versions(const char *uri, uint32 *n)
{
	Relation	catalog = table_open(ForeignTableRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(catalog, InvalidOid, false, NULL,
										  0, NULL);
	List	   *found = NIL;
	HeapTuple	tup;
	uint64	   *out;
	ListCell   *lc;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		const char *version =
			pin_of(((Form_pg_foreign_table) GETSTRUCT(tup))->ftrelid, uri);

		if (version != NULL)
			found = lappend(found, pstrdup(version));
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);

	*n = (uint32) list_length(found);
	out = palloc0(sizeof(uint64) * Max(*n, 1));
	foreach(lc, found)
		out[foreach_current_index(lc)] =
			DatumGetUInt64(DirectFunctionCall1(int8in,
											   CStringGetDatum(lfirst(lc))));
	return out;
}

/*
 * This backend's reading of the pins of each store it sent requests for
 * (CacheMemoryContext).  Every transaction that writes tells the writer its
 * pins, so reading the catalog each time would put a scan of
 * pg_foreign_table on the append path; any change to pg_foreign_table
 * (CREATE, ALTER ... OPTIONS, DROP, in any session) drops the whole cache.
 */
typedef struct PinsEntry
{
	char	   *uri;
	uint32		n;
	uint64	   *versions;
} PinsEntry;

static List *pins_cache = NIL;
static bool pins_callback_registered = false;

static void
forget_pins(Datum arg, int cacheid, uint32 hashvalue)
{
	ListCell   *lc;

	(void) arg;
	(void) cacheid;
	(void) hashvalue;

	foreach(lc, pins_cache)
	{
		PinsEntry  *e = lfirst(lc);

		pfree(e->uri);
		pfree(e->versions);
	}
	list_free_deep(pins_cache);
	pins_cache = NIL;
}

/* The pins of the store at uri, read from the catalog once until it changes. */
static const PinsEntry *
cached_pins(const char *uri)
{
	ListCell   *lc;
	PinsEntry  *e;
	uint64	   *versions;
	MemoryContext old;

	if (!pins_callback_registered)
	{
		CacheRegisterSyscacheCallback(FOREIGNTABLEREL, forget_pins, (Datum) 0);
		pins_callback_registered = true;
	}
	foreach(lc, pins_cache)
	{
		e = lfirst(lc);
		if (strcmp(e->uri, uri) == 0)
			return e;
	}
	e = MemoryContextAllocZero(CacheMemoryContext, sizeof(PinsEntry));
	versions = cxfdw_pinned_versions(uri, &e->n);
	e->uri = MemoryContextStrdup(CacheMemoryContext, uri);
	e->versions = MemoryContextAlloc(CacheMemoryContext,
									 sizeof(uint64) * Max(e->n, 1));
	memcpy(e->versions, versions, sizeof(uint64) * e->n);
	pfree(versions);
	old = MemoryContextSwitchTo(CacheMemoryContext);
	pins_cache = lappend(pins_cache, e);
	MemoryContextSwitchTo(old);
	return e;
}

void
cxfdw_settings_tell_pins(const char *uri, CxStoreSettings *s)
{
	const PinsEntry *e = cached_pins(uri);

	s->pins_told = true;
	s->pins_overflow = e->n > CX_PINS_MAX;
	s->npins = Min(e->n, CX_PINS_MAX);
	for (uint32 i = 0; i < s->npins; i++)
	{
		s->pins[i].dboid = MyDatabaseId;
		s->pins[i].version = e->versions[i];
	}
}
