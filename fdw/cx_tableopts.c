/*
 * cx_tableopts.c — the foreign-table options that govern how the writer
 * worker keeps a store (CxStoreSettings), read when a transaction first
 * writes to a table, and the check of the table key against the store.
 *
 * Values are read with the validator's own parser (cx_option.c), so a
 * setting means here exactly what CREATE / ALTER accepted.  Options a table
 * leaves out take the defaults of docs/OPERATIONS.md, or, for an option of
 * the store that another table of the store set, that table's value
 * (cxfdw_settings_apply, run by the writer worker, which sees every table's
 * requests).
 */
#include "postgres.h"

#include <stddef.h>

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"

#include "ctxstore_fdw.h"
#include "cx_writer_protocol.h"

#define KEY_DEFAULT "id"

typedef enum CxSettingType
{
	SETTING_BOOL,
	SETTING_INT,
	SETTING_INT64
} CxSettingType;

/* A numeric or boolean setting: its option and where it goes in
 * CxStoreSettings. */
typedef struct CxSettingDef
{
	const char *option;
	CxSettingType type;
	size_t		offset;
} CxSettingDef;

#define SETTING(opt, type, field) \
	{opt, type, offsetof(CxStoreSettings, field)}

static const CxSettingDef setting_defs[] =
{
	SETTING("unique_key", SETTING_BOOL, unique_key),
	SETTING("seal_on_insert", SETTING_BOOL, seal_on_insert),
	SETTING("flush_interval", SETTING_INT, flush_interval_s),
	SETTING("merge_after_generations", SETTING_INT, merge_after_generations),
	SETTING("merge_max_generations", SETTING_INT, merge_max_generations),
	SETTING("merge_max_bytes", SETTING_INT64, merge_max_bytes),
	SETTING("cleanup_interval", SETTING_INT, cleanup_interval_s),
	SETTING("cleanup_min_generations", SETTING_INT, cleanup_min_generations),
	SETTING("pending_generations_warn", SETTING_INT, pending_generations_warn),
	SETTING("pending_generations_max", SETTING_INT, pending_generations_max),
	SETTING("target_rows_per_fragment", SETTING_INT64, target_rows_per_fragment),
	SETTING("compression_level", SETTING_INT, compression_level),
};

StaticAssertDecl(lengthof(setting_defs) <= CX_SETTINGS_MAX,
				 "CX_SETTINGS_MAX is too small for setting_defs");

static void
settings_default(CxStoreSettings *s)
{
	memset(s, 0, sizeof(*s));
	strlcpy(s->key_column, KEY_DEFAULT, sizeof(s->key_column));
	s->unique_key = true;
	s->seal_on_insert = true;
	s->flush_interval_s = 30;
	s->merge_after_generations = 8;
	s->merge_max_generations = 8;
	s->merge_max_bytes = INT64CONST(1024) * 1024 * 1024;
	s->cleanup_interval_s = 60;
	s->cleanup_min_generations = 1;
	s->pending_generations_warn = 256;
	s->pending_generations_max = 4096;
	s->target_rows_per_fragment = 1048576;
	s->compression_level = 3;
}

/* Stores value into the field def names. */
static void
set_value(CxStoreSettings *s, const CxSettingDef *def, const char *value)
{
	char	   *field = (char *) s + def->offset;
	int64		v = cxfdw_table_option_value(def->option, value);

	/* The options' ranges (cx_option.c) fit their fields. */
	switch (def->type)
	{
		case SETTING_BOOL:
			*(bool *) field = v != 0;
			break;
		case SETTING_INT:
			*(int *) field = (int) v;
			break;
		case SETTING_INT64:
			*(int64 *) field = v;
			break;
	}
}

static void
set_key(CxStoreSettings *s, const CxRelInfo *ri, const char *key)
{
	if (strlen(key) >= sizeof(s->key_column))
		ereport(ERROR,
				errcode(ERRCODE_NAME_TOO_LONG),
				errmsg("key column name of foreign table \"%s\" is too long",
					   ri->relname),
				errdetail("Key column names are limited to %d bytes.",
						  (int) sizeof(s->key_column) - 1));
	strlcpy(s->key_column, key, sizeof(s->key_column));
}

static void
set_source(CxTableRef *ref, const CxRelInfo *ri)
{
	ref->dboid = MyDatabaseId;
	ref->relid = ri->relid;
	ref->userid = ri->userid;
	snprintf(ref->name, sizeof(ref->name), "%s.%s",
			 get_namespace_name(get_rel_namespace(ri->relid)), ri->relname);
}

/*
 * The write settings of the foreign table ri, from its options and the
 * defaults, with the table they come from.
 */
void
cxfdw_table_settings(const CxRelInfo *ri, CxStoreSettings *out)
{
	ListCell   *lc;

	settings_default(out);
	set_source(&out->source, ri);
	foreach(lc, GetForeignTable(ri->relid)->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, "key") == 0)
		{
			set_key(out, ri, defGetString(opt));
			continue;
		}
		for (int i = 0; i < lengthof(setting_defs); i++)
			if (strcmp(opt->defname, setting_defs[i].option) == 0)
			{
				set_value(out, &setting_defs[i], defGetString(opt));
				out->explicit_mask |= UINT32_C(1) << i;
			}
	}
}

static bool
same_table(const CxTableRef *a, const CxTableRef *b)
{
	return a->dboid == b->dboid && a->relid == b->relid;
}

static Size
setting_size(const CxSettingDef *def)
{
	switch (def->type)
	{
		case SETTING_BOOL:
			return sizeof(bool);
		case SETTING_INT:
			return sizeof(int);
		case SETTING_INT64:
			break;
	}
	return sizeof(int64);
}

static int64
setting_get(const CxStoreSettings *s, const CxSettingDef *def)
{
	const char *field = (const char *) s + def->offset;

	switch (def->type)
	{
		case SETTING_BOOL:
			return *(const bool *) field;
		case SETTING_INT:
			return *(const int *) field;
		case SETTING_INT64:
			break;
	}
	return *(const int64 *) field;
}

/* Whether req's explicit value of setting i contradicts the value another
 * table set for the store; why says so. */
static bool
contradicts(const CxStoreSettings *store, const CxTableRef *owner,
			const CxStoreSettings *req, int i, char *why, size_t whylen)
{
	const CxSettingDef *def = &setting_defs[i];

	if (!(req->explicit_mask & (UINT32_C(1) << i)) ||
		owner->relid == InvalidOid || same_table(owner, &req->source) ||
		setting_get(store, def) == setting_get(req, def))
		return false;
	snprintf(why, whylen,
			 "foreign table \"%s\" sets %s to " INT64_FORMAT ", but the store has " INT64_FORMAT " from foreign table \"%s\"",
			 req->source.name, def->option, setting_get(req, def),
			 setting_get(store, def), owner->name);
	return true;
}

/*
 * Store-level settings: owned by the first table that sets one explicitly,
 * which may change it and releases it by leaving it out (back to the
 * default, or to whatever a table sets next); another table may set it only
 * to the same value, and one that leaves it out takes the store's.  Table-level ones (seal_on_insert) and the key, which the store
 * records itself, come from each request.
 */
bool
cxfdw_settings_apply(CxStoreSettings *store, CxTableRef *owners,
					 const CxStoreSettings *req, char *why, size_t whylen)
{
	CxStoreSettings merged = *req;

	for (int i = 0; i < lengthof(setting_defs); i++)
		if (contradicts(store, &owners[i], req, i, why, whylen))
			return false;
	for (int i = 0; i < lengthof(setting_defs); i++)
	{
		const CxSettingDef *def = &setting_defs[i];
		bool		sets = (req->explicit_mask & (UINT32_C(1) << i)) != 0;

		if (!cxfdw_option_is_store_level(def->option))
			continue;
		if (sets && owners[i].relid == InvalidOid)
			owners[i] = req->source;
		else if (sets)
			continue;
		else if (same_table(&owners[i], &req->source))
			owners[i].relid = InvalidOid;
		else if (owners[i].relid != InvalidOid)
			memcpy((char *) &merged + def->offset,
				   (const char *) store + def->offset, setting_size(def));
	}
	*store = merged;
	return true;
}

/*
 * Checks, before a transaction writes to ri, that its key names a column of
 * the store (the store's schema, or the table's for a store nobody has
 * written yet), and that it agrees with the key the store recorded with its
 * first writer (base may be NULL: an empty store).
 */
void
cxfdw_check_table_key(const CxRelInfo *ri, const CxStoreSettings *s,
					  const cx_manifest *base)
{
	const char *key = s->key_column;
	cx_misfit	why;

	cxfdw_table_fits(ri, key, s->unique_key, base, &why);
	if (why.kind == CX_MISFIT_KEY_COLUMN)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_COLUMN),
				errmsg("key column \"%s\" of foreign table \"%s\" is not a column of store %s",
					   key, ri->relname, ri->uri),
				errhint("Name the store column that identifies a row in the table's key option, as in OPTIONS (ADD key 'session_id'); the default is \"%s\".",
						KEY_DEFAULT));
	if (why.kind == CX_MISFIT_KEY)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("foreign table \"%s\" disagrees with store %s about its key",
					   ri->relname, ri->uri),
				errdetail("The store's key is \"%s\" (%s); the table's is \"%s\" (%s).",
						  base->key_column,
						  base->unique_key ? "unique" : "not unique",
						  key, s->unique_key ? "unique" : "not unique"),
				errhint("Set the table's key and unique_key options to the store's: they are fixed by the store's first writer."));
}
