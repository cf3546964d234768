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
#include "access/reloptions.h"
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

/* Called for each table that pins a version: the canonical URI of its
 * store and the version. */
typedef void (*pin_fn) (void *arg, const char *uri, uint64 version);

/* The uri and version options of the catalog tuple of a foreign table
 * (either NULL when absent): read from the tuple itself, so that a table
 * without a version costs no syscache lookup. */
static void
table_options(HeapTuple tup, TupleDesc desc, const char **uri,
			  const char **version)
{
	bool		isnull;
	Datum		options = heap_getattr(tup, Anum_pg_foreign_table_ftoptions,
									   desc, &isnull);
	List	   *defs;
	ListCell   *lc;

	*uri = NULL;
	*version = NULL;
	if (isnull)
		return;
	defs = untransformRelOptions(options);
	foreach(lc, defs)
	{
		DefElem    *d = lfirst(lc);

		if (strcmp(d->defname, "uri") == 0)
			*uri = defGetString(d);
		else if (strcmp(d->defname, "version") == 0)
			*version = defGetString(d);
	}
}

/* Calls fn for every ctxstore table of this database that pins a version:
 * one scan of pg_foreign_table, whatever the number of stores. */
static void
for_each_pin(pin_fn fn, void *arg)
{
	Relation	catalog = table_open(ForeignTableRelationId, AccessShareLock);
	SysScanDesc scan = systable_beginscan(catalog, InvalidOid, false, NULL,
										  0, NULL);
	HeapTuple	tup;

	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Oid			relid = ((Form_pg_foreign_table) GETSTRUCT(tup))->ftrelid;
		const char *uri;
		const char *version;

		table_options(tup, RelationGetDescr(catalog), &uri, &version);
		if (uri != NULL && version != NULL && cxfdw_is_ctxstore_table(relid))
			fn(arg, cxfdw_canonical_uri(uri),
			   DatumGetUInt64(DirectFunctionCall1(int8in,
												  CStringGetDatum(version))));
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);
}

/* The pins of one store, collected by for_each_pin. */
typedef struct PinsOf
{
	const char *uri;
	List	   *versions;		/* of uint64 *, palloc'd */
} PinsOf;

static void
collect_pin(void *arg, const char *uri, uint64 version)
{
	PinsOf	   *p = arg;
	uint64	   *v;

	if (strcmp(uri, p->uri) != 0)
		return;
	v = palloc(sizeof(uint64));
	*v = version;
	p->versions = lappend(p->versions, v);
}

uint64 *
cxfdw_pinned_versions(const char *uri, uint32 *n)
{
	PinsOf		p = {uri, NIL};
	uint64	   *out;
	ListCell   *lc;

	for_each_pin(collect_pin, &p);
	*n = (uint32) list_length(p.versions);
	out = palloc0(sizeof(uint64) * Max(*n, 1));
	foreach(lc, p.versions)
		out[foreach_current_index(lc)] = *(uint64 *) lfirst(lc);
	list_free_deep(p.versions);
	return out;
}

/*
 * This backend's reading of the pins of every store of its database
 * (CacheMemoryContext), by store; stores without pins have no entry.
 * Every transaction that writes tells the writer its pins, so reading the
 * catalog each time would put a scan of pg_foreign_table on the append
 * path, and reading it once per store would scan it once for each of a
 * thousand stores: one scan reads them all.  Any change to
 * pg_foreign_table (CREATE, ALTER ... OPTIONS, DROP, in any session) drops
 * the whole cache.
 */
typedef struct PinsEntry
{
	char	   *uri;
	uint32		n;
	uint64	   *versions;
} PinsEntry;

static List *pins_cache = NIL;
static bool pins_loaded = false;
/* Counts the drops, so that a load an invalidation interrupted (the scan
 * takes locks, which processes invalidations) is not kept as current. */
static uint64 pins_drops = 0;
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
	pins_loaded = false;
	pins_drops++;
}

static PinsEntry *
find_pins(List *cache, const char *uri)
{
	ListCell   *lc;

	foreach(lc, cache)
	{
		PinsEntry  *e = lfirst(lc);

		if (strcmp(e->uri, uri) == 0)
			return e;
	}
	return NULL;
}

/* Adds a pin to the cache being built (*arg, a List *). */
static void
cache_pin(void *arg, const char *uri, uint64 version)
{
	List	  **cache = arg;
	PinsEntry  *e = find_pins(*cache, uri);
	MemoryContext old = MemoryContextSwitchTo(CacheMemoryContext);

	if (e == NULL)
	{
		e = palloc0(sizeof(PinsEntry));
		e->uri = pstrdup(uri);
		e->versions = palloc(sizeof(uint64));
		*cache = lappend(*cache, e);
	}
	else
		e->versions = repalloc(e->versions, sizeof(uint64) * (e->n + 1));
	e->versions[e->n++] = version;
	MemoryContextSwitchTo(old);
}

/* The pins of the store at uri (NULL: none), the catalog read once for
 * every store until it changes. */
static const PinsEntry *
cached_pins(const char *uri)
{
	if (!pins_callback_registered)
	{
		CacheRegisterSyscacheCallback(FOREIGNTABLEREL, forget_pins, (Datum) 0);
		pins_callback_registered = true;
	}
	if (!pins_loaded)
	{
		List	   *fresh = NIL;
		uint64		drops = pins_drops;

		for_each_pin(cache_pin, &fresh);
		/* Built aside, so that a drop during the scan frees nothing it
		 * holds; a complete scan, good for this request either way. */
		forget_pins((Datum) 0, 0, 0);
		pins_cache = fresh;
		pins_loaded = drops + 1 == pins_drops;
	}
	return find_pins(pins_cache, uri);
}

void
cxfdw_settings_tell_pins(const char *uri, CxStoreSettings *s)
{
	const PinsEntry *e = cached_pins(uri);
	uint32		n = e != NULL ? e->n : 0;

	s->pins_told = true;
	s->pins_overflow = n > CX_PINS_MAX;
	s->npins = Min(n, CX_PINS_MAX);
	for (uint32 i = 0; i < s->npins; i++)
	{
		s->pins[i].dboid = MyDatabaseId;
		s->pins[i].version = e->versions[i];
	}
}
