/*
 * cx_options.c — the option table, the one source of each option's level,
 * scope, syntax and default, and the write settings numbered from it.
 *
 * Both sides of the module read it: the backend side (fdw/cx_option.c)
 * validates and parses options by it and shows it (ctxstore.options()); the
 * writer worker merges the store-level settings of a store's tables by it
 * (cx_settings_apply).  The engine's own defaults are the constants it
 * names, so that the regress test option_docs can hold docs/OPERATIONS.md
 * to the engine too.
 */
#include "postgres.h"

#include <limits.h>

#include "catalog/pg_attribute.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"

#include "ctxstore/engine.h"
#include "ctxstore/lifecycle.h"
#include "cx_options.h"

#define SERVER ForeignServerRelationId
#define MAPPING UserMappingRelationId
#define TABLE ForeignTableRelationId
#define COLUMN AttributeRelationId

/* A default that is an engine constant (an integer literal or true). */
#define ENGINE_DEFAULT(constant) CppAsString2(constant)
/* The engine keeps GC's intervals in microseconds, the options in seconds. */
#define CX_GC_DEFAULT_RETAIN_INTERVAL_S 3600
#define CX_GC_DEFAULT_GRACE_S 3600
StaticAssertDecl(CX_GC_DEFAULT_RETAIN_INTERVAL_S * INT64CONST(1000000) ==
				 CX_GC_DEFAULT_RETAIN_INTERVAL_US,
				 "retain_interval's default is the engine's");
StaticAssertDecl(CX_GC_DEFAULT_GRACE_S * INT64CONST(1000000) ==
				 CX_GC_DEFAULT_GRACE_US,
				 "gc_grace's default is the engine's");

#define FIELD(f) \
	{offsetof(CxStoreSettings, f), sizeof(((CxStoreSettings *) NULL)->f)}

const CxOptDef cx_options[] =
{
	{"endpoint", SERVER, OF_OBJECT, OPT_URL},
	{"region", SERVER, OF_OBJECT, OPT_STRING},
	{"url_style", SERVER, OF_OBJECT, OPT_URL_STYLE},
	{"conditional_put", SERVER, OF_OBJECT, OPT_ENGINE_BOOL},
	{"connect_timeout", SERVER, OF_OBJECT, OPT_TRANSPORT},
	{"request_timeout", SERVER, OF_OBJECT, OPT_TRANSPORT},
	{"retry_max_attempts", SERVER, OF_OBJECT, OPT_TRANSPORT},
	{"retry_max_seconds", SERVER, OF_OBJECT, OPT_TRANSPORT},
	{"ca_file", SERVER, OF_OBJECT, OPT_PATH},
	{"tls_verify", SERVER, OF_OBJECT, OPT_TRANSPORT},
	/* S3 serves at most 1000 keys per page and refuses more when a store
	 * opens; Azure serves up to 5000. */
	{"list_page_size", SERVER, OF_OBJECT, OPT_INT, 1, 5000},
	{"allow_env_credentials", SERVER, OF_OBJECT, OPT_ENGINE_BOOL},

	{"access_key_id", MAPPING, OF_OBJECT, OPT_STRING},
	{"secret_access_key", MAPPING, OF_OBJECT, OPT_STRING},
	{"session_token", MAPPING, OF_OBJECT, OPT_STRING},
	{"account_name", MAPPING, OF_OBJECT, OPT_STRING},
	{"account_key", MAPPING, OF_OBJECT, OPT_STRING},
	{"sas_token", MAPPING, OF_OBJECT, OPT_STRING},

	{"uri", TABLE, OF_TABLE, OPT_URI},
	{"key", TABLE, OF_STORE, OPT_STRING, 0, 0, CX_SW_DEFAULT_KEY_COLUMN},
	{"seal_on_insert", TABLE, OF_TABLE, OPT_BOOL, 0, 0, "true",
	FIELD(seal_on_insert)},
	{"unique_key", TABLE, OF_STORE, OPT_BOOL, 0, 0,
	ENGINE_DEFAULT(CX_SW_DEFAULT_UNIQUE_KEY), FIELD(unique_key)},
	{"upsert_key", TABLE, OF_STORE, OPT_STRING},
	{"sort_key", TABLE, OF_STORE, OPT_SORT_KEY},
	{"flush_interval", TABLE, OF_STORE, OPT_SECONDS, 0, INT_MAX, "30",
	FIELD(flush_interval_s)},
	{"merge_after_generations", TABLE, OF_STORE, OPT_INT, 0, INT_MAX, "8",
	FIELD(merge_after_generations)},
	{"merge_max_generations", TABLE, OF_STORE, OPT_INT, 2, INT_MAX,
		ENGINE_DEFAULT(CX_MERGE_DEFAULT_MAX_GENERATIONS),
	FIELD(merge_max_generations)},
	{"merge_max_bytes", TABLE, OF_STORE, OPT_BYTES, 1, PG_INT64_MAX / 2,
	ENGINE_DEFAULT(CX_MERGE_DEFAULT_MAX_BYTES), FIELD(merge_max_bytes)},
	{"cleanup_interval", TABLE, OF_STORE, OPT_SECONDS, 0, INT_MAX, "60",
	FIELD(cleanup_interval_s)},
	{"cleanup_min_generations", TABLE, OF_STORE, OPT_INT, 1, INT_MAX, "1",
	FIELD(cleanup_min_generations)},
	{"pending_generations_warn", TABLE, OF_STORE, OPT_INT, 1, INT_MAX, "256",
	FIELD(pending_generations_warn)},
	{"pending_generations_max", TABLE, OF_STORE, OPT_INT, 1, INT_MAX,
		ENGINE_DEFAULT(CX_SW_DEFAULT_PENDING_MAX),
	FIELD(pending_generations_max)},
	{"target_rows_per_fragment", TABLE, OF_STORE, OPT_INT, 1, INT_MAX,
		ENGINE_DEFAULT(CX_MERGE_DEFAULT_TARGET_ROWS),
	FIELD(target_rows_per_fragment)},
	{"compression_level", TABLE, OF_STORE, OPT_INT, 1, 22,
		ENGINE_DEFAULT(CX_FRAGW_DEFAULT_COMPRESSION_LEVEL),
	FIELD(compression_level)},
	{"iceberg_interval", TABLE, OF_STORE, OPT_SECONDS, 0, INT_MAX, "0",
	FIELD(iceberg_interval_s)},
	{"compact_min_fragments", TABLE, OF_STORE, OPT_INT, 2, INT_MAX,
		ENGINE_DEFAULT(CX_COMPACT_DEFAULT_MIN_FRAGMENTS),
	FIELD(compact_min_fragments)},
	{"compact_interval", TABLE, OF_STORE, OPT_SECONDS, 0, INT_MAX, "0",
	FIELD(compact_interval_s)},
	{"compact_on_merge", TABLE, OF_STORE, OPT_BOOL, 0, 0, "true",
	FIELD(compact_on_merge)},
	{"retain_versions", TABLE, OF_STORE, OPT_INT, 1, INT_MAX,
		ENGINE_DEFAULT(CX_GC_DEFAULT_RETAIN_VERSIONS),
	FIELD(retain_versions)},
	{"retain_interval", TABLE, OF_STORE, OPT_SECONDS, 0, INT_MAX,
		CppAsString2(CX_GC_DEFAULT_RETAIN_INTERVAL_S),
	FIELD(retain_interval_s)},
	{"gc_grace", TABLE, OF_STORE, OPT_SECONDS, 0, INT_MAX,
		CppAsString2(CX_GC_DEFAULT_GRACE_S),
	FIELD(gc_grace_s)},
	{"gc_interval", TABLE, OF_STORE, OPT_SECONDS, 0, INT_MAX, "0",
	FIELD(gc_interval_s)},
	{"version", TABLE, OF_TABLE, OPT_INT, 1, PG_INT64_MAX},

	{"column_name", COLUMN, OF_OBJECT, OPT_STRING},
};

const int	cx_noptions = lengthof(cx_options);

/*
 * The write settings: the table options with a field in CxStoreSettings,
 * numbered in the option table's order (explicit_mask and the owners of a
 * store's settings go by these numbers).
 */
const CxOptDef *
cx_setting_def(int i)
{
	static const CxOptDef *settings[CX_SETTINGS_MAX];
	static int	nsettings = 0;

	if (nsettings == 0)
		for (int o = 0; o < cx_noptions; o++)
		{
			if (cx_options[o].field.size == 0)
				continue;
			if (nsettings == CX_SETTINGS_MAX)
				elog(ERROR, "CX_SETTINGS_MAX is too small for the write settings");
			settings[nsettings++] = &cx_options[o];
		}
	return i < nsettings ? settings[i] : NULL;
}

int
cx_nsettings(void)
{
	int			n = 0;

	while (cx_setting_def(n) != NULL)
		n++;
	return n;
}

const char *
cx_setting_name(int i)
{
	return cx_setting_def(i)->name;
}

bool
cx_setting_is_store_level(int i)
{
	return cx_setting_def(i)->scope == OF_STORE;
}

int64
cx_setting_get(const CxStoreSettings *s, int i)
{
	CxSettingField f = cx_setting_def(i)->field;
	const char *p = (const char *) s + f.offset;

	switch (f.size)
	{
		case sizeof(bool):
			return *(const bool *) p;
		case sizeof(int):
			return *(const int *) p;
	}
	return *(const int64 *) p;
}

void
cx_setting_copy(CxStoreSettings *dst, const CxStoreSettings *src, int i)
{
	CxSettingField f = cx_setting_def(i)->field;

	memcpy((char *) dst + f.offset, (const char *) src + f.offset, f.size);
}

/* ---- the settings of a store, merged from its tables' requests ---- */

static bool
same_table(const CxTableRef *a, const CxTableRef *b)
{
	return a->dboid == b->dboid && a->relid == b->relid;
}

/* Whether req's explicit value of setting i contradicts the value another
 * table set for the store; why says so. */
static bool
contradicts(const CxStoreSettings *store, const CxTableRef *owner,
			const CxStoreSettings *req, int i, char *why, size_t whylen)
{
	if (!(req->explicit_mask & (UINT32_C(1) << i)) ||
		owner->relid == InvalidOid || same_table(owner, &req->source) ||
		cx_setting_get(store, i) == cx_setting_get(req, i))
		return false;
	snprintf(why, whylen,
			 "foreign table \"%s\" sets %s to " INT64_FORMAT ", but the store has " INT64_FORMAT " from foreign table \"%s\"",
			 req->source.name, cx_setting_name(i),
			 cx_setting_get(req, i), cx_setting_get(store, i),
			 owner->name);
	return true;
}

/*
 * Store-level settings: owned by the first table that sets one explicitly,
 * which may change it and releases it by leaving it out (back to the
 * default, or to whatever a table sets next); another table may set it only
 * to the same value, and one that leaves it out takes the store's.  Table-level ones (seal_on_insert) and the key, which the store
 * records itself, come from each request.
 */
/* The store's pins with those of req's database replaced by req's, if req
 * tells them (the union over databases of what each last told); more than
 * fit set pins_overflow, which stays. */
static void
merge_pins(CxStoreSettings *merged, const CxStoreSettings *store,
		   const CxStoreSettings *req)
{
	Oid			dboid = req->source.dboid;
	uint32		n = 0;

	merged->pins_overflow = store->pins_overflow;
	merged->npins = 0;
	for (uint32 i = 0; i < store->npins; i++)
		if (!req->pins_told || store->pins[i].dboid != dboid)
			merged->pins[n++] = store->pins[i];
	for (uint32 i = 0; req->pins_told && i < req->npins; i++)
	{
		if (n == CX_PINS_MAX)
		{
			merged->pins_overflow = true;
			break;
		}
		merged->pins[n++] = req->pins[i];
	}
	merged->pins_overflow |= req->pins_overflow;
	merged->npins = n;
	merged->pins_told = false;
}

bool
cx_settings_apply(CxStoreSettings *store, CxTableRef *owners,
					 const CxStoreSettings *req, char *why, size_t whylen)
{
	CxStoreSettings merged = *req;
	int			nsettings = cx_nsettings();

	for (int i = 0; i < nsettings; i++)
		if (contradicts(store, &owners[i], req, i, why, whylen))
			return false;
	merge_pins(&merged, store, req);
	for (int i = 0; i < nsettings; i++)
	{
		bool		sets = (req->explicit_mask & (UINT32_C(1) << i)) != 0;

		if (!cx_setting_is_store_level(i))
			continue;
		if (sets && owners[i].relid == InvalidOid)
			owners[i] = req->source;
		else if (sets)
			continue;
		else if (same_table(&owners[i], &req->source))
			owners[i].relid = InvalidOid;
		else if (owners[i].relid != InvalidOid)
			cx_setting_copy(&merged, store, i);
	}
	*store = merged;
	return true;
}

/* ---- the lifecycle jobs' options, from a store's settings ---- */

void
cx_compact_options_from(const CxStoreSettings *s, cx_compact_options *o)
{
	cx_compact_options_default(o);
	o->min_fragments = (uint32_t) s->compact_min_fragments;
	o->target_rows_per_fragment = (uint64_t) s->target_rows_per_fragment;
	o->fragment.compression_level = s->compression_level;
	o->sort_key = s->sort_key[0] != '\0' ? s->sort_key : NULL;
}

void
cx_gc_options_from(const CxStoreSettings *s, cx_gc_options *o)
{
	cx_gc_options_default(o);
	o->retain_versions = (uint32_t) s->retain_versions;
	o->retain_interval_us = (int64_t) s->retain_interval_s * INT64CONST(1000000);
	o->grace_us = (int64_t) s->gc_grace_s * INT64CONST(1000000);
}

uint32
cx_settings_pinned(const CxStoreSettings *s, uint64 *out)
{
	for (uint32 i = 0; i < s->npins; i++)
		out[i] = s->pins[i].version;
	return s->npins;
}
