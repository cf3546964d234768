/*
 * cx_options.h — the option table (cx_options.c) and the write settings a
 * request carries, which both sides of the module read: the backend side
 * validates and parses options, the writer worker merges a store's
 * settings.
 */
#ifndef CX_OPTIONS_H
#define CX_OPTIONS_H

#include "postgres.h"

#include "ctxstore/engine.h"
#include "ctxstore/lifecycle.h"

/* What an option's value must look like. */
typedef enum CxOptKind
{
	OPT_STRING,					/* any non-empty string */
	OPT_BOOL,					/* anything parse_bool() accepts */
	OPT_URL,					/* http:// or https:// endpoint */
	OPT_URL_STYLE,				/* path | virtual */
	OPT_URI,					/* store URI */
	OPT_INT,					/* integer in [min, max] */
	OPT_SECONDS,				/* integer seconds, GUC time units allowed */
	OPT_BYTES,					/* byte count, GUC memory units allowed */
	/* Options the engine reads, checked by the engine's own parsers so that
	 * what CREATE SERVER accepts is exactly what opening a store accepts. */
	OPT_ENGINE_BOOL,			/* on/off, true/false, yes/no, 1/0 */
	OPT_TRANSPORT,				/* timeouts, retries, TLS (cx_http.h) */
	OPT_PATH,					/* absolute file name */
	OPT_SORT_KEY				/* comma-separated store column names */
} CxOptKind;

/*
 * Whom a foreign-table option belongs to.  A store is shared by every table
 * on it (in every database of the cluster, and of other clusters), so what
 * governs the store itself (its key, how it merges, cleans up, limits and
 * compresses) is one value per store: tables that set it must agree, and a
 * table that leaves it out takes the store's (cx_settings_apply).  What
 * governs only the table's own reads and writes is the table's.
 */
typedef enum CxOptScope
{
	OF_OBJECT = 0,				/* server, mapping and column options */
	OF_TABLE,					/* this table only */
	OF_STORE					/* the store, shared by its tables */
} CxOptScope;

/* Where a write setting goes in CxStoreSettings; size 0: the option is no
 * write setting. */
typedef struct CxSettingField
{
	uint16		offset;
	uint16		size;			/* sizeof(bool), int or int64 */
} CxSettingField;

typedef struct CxOptDef
{
	const char *name;
	Oid			context;		/* catalog of the level it belongs to */
	CxOptScope	scope;
	CxOptKind	kind;
	int64		min;
	int64		max;
	/* The value a table that leaves the option out gets, spelled as a value
	 * of the option (parse_value reads it); NULL: none (server options: the
	 * engine's backends decide, see docs/OPERATIONS.md). */
	const char *dflt;
	CxSettingField field;
} CxOptDef;

/* Every option, in the order ctxstore.options() shows them. */
extern const CxOptDef cx_options[];
extern const int cx_noptions;

/* The foreign table a request comes from. */
typedef struct CxTableRef
{
	Oid			dboid;
	Oid			relid;			/* InvalidOid: none */
	Oid			userid;			/* whose user mapping the request carries */
	char		name[2 * NAMEDATALEN + 1];	/* "schema.table", for messages */
} CxTableRef;

/* Room for the sort_key option: CX_SORT_KEY_MAX_COLUMNS names and the
 * commas and blanks between them. */
#define CX_SORT_KEY_LEN (8 * (NAMEDATALEN + 2))

/* Pinned base versions a store's settings carry, over every database. */
#define CX_PINS_MAX 32

/* A base version a table of database dboid pins (option version). */
typedef struct CxPin
{
	Oid			dboid;
	uint64		version;
} CxPin;

/* Most numeric and boolean settings (the option table, cx_options.c, lists them). */
#define CX_SETTINGS_MAX 24

/*
 * The foreign-table options that govern how the writer worker keeps a store
 * (docs/OPERATIONS.md lists them with their defaults), and the table they
 * come from.  Every request carries them.  seal_on_insert belongs to the
 * request's table; the others belong to the store, shared by every table
 * on it: a table that sets one explicitly (explicit_mask) must agree with
 * any other table that set it (cx_settings_apply), and a table that
 * leaves it out takes the store's.  ALTER FOREIGN TABLE takes effect with
 * the table's next request.
 */
typedef struct CxStoreSettings
{
	char		key_column[NAMEDATALEN];	/* store column of the key */
	char		upsert_key[NAMEDATALEN];	/* store column an insert
											 * supersedes the live row of
											 * by value; "" = none */
	char		sort_key[CX_SORT_KEY_LEN];	/* store columns merges sort
											 * by; "" = the key */
	bool		unique_key;
	bool		seal_on_insert;
	int			flush_interval_s;	/* 0 = no timed flush */
	int			merge_after_generations;	/* 0 = no count-triggered merge */
	int			merge_max_generations;
	int64		merge_max_bytes;
	int			cleanup_interval_s; /* 0 = off */
	int			cleanup_min_generations;
	int			pending_generations_warn;
	int			pending_generations_max;
	int64		target_rows_per_fragment;
	int			compression_level;
	int			iceberg_interval_s; /* 0 = no automatic Iceberg publish */
	int			compact_min_fragments;
	int			compact_interval_s; /* 0 = no timed compaction */
	bool		compact_on_merge;	/* compact a full size tier after
									 * each merge job */
	int			retain_versions;
	int			retain_interval_s;
	int			gc_grace_s;
	int			gc_interval_s;	/* 0 = no automatic GC */
	uint32		explicit_mask;	/* bit i: setting i was set by the table */
	CxTableRef	source;

	/*
	 * The base versions tables pin on the store, for the maintenance
	 * worker's GC.  A request that tells them (pins_told) carries those of
	 * its database; the store's settings keep, per database, what it last
	 * told (cx_settings_apply).  pins_overflow: more than CX_PINS_MAX were
	 * told, so the worker does not collect the store's garbage at all.
	 */
	bool		pins_told;
	bool		pins_overflow;
	uint32		npins;
	CxPin		pins[CX_PINS_MAX];
} CxStoreSettings;

/*
 * The write settings: the options with a field in CxStoreSettings, numbered
 * 0 .. cx_nsettings() - 1 in the option table's order (explicit_mask and
 * the owners of a store's settings go by the numbers).  cx_setting_def is
 * NULL past the last.  seal_on_insert belongs to the table; "store level"
 * settings to the store.
 */
extern const CxOptDef *cx_setting_def(int i);
extern int	cx_nsettings(void);
extern const char *cx_setting_name(int i);
extern bool cx_setting_is_store_level(int i);
extern int64 cx_setting_get(const CxStoreSettings *s, int i);
extern void cx_setting_copy(CxStoreSettings *dst, const CxStoreSettings *src,
							int i);

/*
 * Applies a request's settings to a store's, whose store-level settings i
 * were set explicitly by owners[i] (relid InvalidOid: by none).  False, with
 * why filled and nothing changed, if req explicitly sets a store-level
 * setting that another table set to another value.
 */
extern bool cx_settings_apply(CxStoreSettings *store, CxTableRef *owners,
							  const CxStoreSettings *req, char *why,
							  size_t whylen);

/* The engine options of compaction and GC from a store's settings (the
 * caller sets what is its own: holder, force, pinned, dry_run). */
extern void cx_compact_options_from(const CxStoreSettings *s,
									cx_compact_options *o);
extern void cx_gc_options_from(const CxStoreSettings *s, cx_gc_options *o);

/* The versions s pins, in every database it was told of, as GC takes
 * them: out has room for CX_PINS_MAX; returns how many. */
extern uint32 cx_settings_pinned(const CxStoreSettings *s, uint64 *out);

#endif							/* CX_OPTIONS_H */
