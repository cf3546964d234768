/*
 * cx_tableopts.c — the foreign-table options that govern how the writer
 * worker keeps a store (CxStoreSettings), read when a transaction first
 * writes to a table, and the check of the table key against the store.
 *
 * Values are read with the validator's own parser (cx_option.c), so a
 * setting means here exactly what CREATE / ALTER accepted.  Options a table
 * leaves out take the defaults of BRIEF.md §2 / docs/SQL.md.
 */
#include "postgres.h"

#include <stddef.h>

#include "commands/defrem.h"
#include "foreign/foreign.h"

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
};

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

/*
 * The write settings of the foreign table ri, from its options and the
 * defaults.  compression_level comes from ri (cx_option.c reads it).
 */
void
cxfdw_table_settings(const CxRelInfo *ri, CxStoreSettings *out)
{
	ListCell   *lc;

	settings_default(out);
	out->compression_level = ri->compression_level;
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
				set_value(out, &setting_defs[i], defGetString(opt));
	}
}

/* Whether the table has a (non-dropped) column stored as name. */
static bool
table_has_column(const CxRelInfo *ri, const char *name)
{
	for (int i = 0; i < ri->natts; i++)
		if (ri->columns[i].attname != NULL &&
			strcmp(ri->columns[i].name, name) == 0)
			return true;
	return false;
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
	bool		found = base != NULL && base->schema != NULL
		? cx_schema_find(base->schema, key) >= 0
		: table_has_column(ri, key);

	if (!found)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_COLUMN),
				errmsg("key column \"%s\" of foreign table \"%s\" is not a column of store %s",
					   key, ri->relname, ri->uri),
				errhint("Name the store column that identifies a row in the table's key option, as in OPTIONS (ADD key 'session_id'); the default is \"%s\".",
						KEY_DEFAULT));
	if (base != NULL && base->key_column != NULL &&
		(strcmp(base->key_column, key) != 0 || base->unique_key != s->unique_key))
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
