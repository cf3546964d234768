/*
 * cx_tableopts.c — the foreign-table options that govern how the writer
 * worker keeps a store (CxStoreSettings), read when a transaction first
 * writes to a table, and the check of the table key against the store.
 *
 * The validator (cx_option.c) has already checked every option's syntax and
 * range, so a value that does not parse here is an internal error.  Options
 * a table leaves out take the defaults of BRIEF.md §2 / docs/SQL.md.
 */
#include "postgres.h"

#include <stddef.h>

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "ctxstore_fdw.h"
#include "cx_writer_protocol.h"

#define KEY_DEFAULT "id"

typedef enum CxSettingType
{
	SETTING_BOOL,
	SETTING_INT,
	SETTING_INT64
} CxSettingType;

/* A numeric or boolean setting: its option, where it goes in
 * CxStoreSettings, and the GUC unit its value may carry. */
typedef struct CxSettingDef
{
	const char *option;
	CxSettingType type;
	size_t		offset;
	int			unit;
} CxSettingDef;

#define SETTING(opt, type, field, unit) \
	{opt, type, offsetof(CxStoreSettings, field), unit}

static const CxSettingDef setting_defs[] =
{
	SETTING("unique_key", SETTING_BOOL, unique_key, 0),
	SETTING("seal_on_insert", SETTING_BOOL, seal_on_insert, 0),
	SETTING("flush_interval", SETTING_INT, flush_interval_s, GUC_UNIT_S),
	SETTING("merge_after_generations", SETTING_INT, merge_after_generations, 0),
	SETTING("merge_max_generations", SETTING_INT, merge_max_generations, 0),
	SETTING("merge_max_bytes", SETTING_INT64, merge_max_bytes, GUC_UNIT_BYTE),
	SETTING("cleanup_interval", SETTING_INT, cleanup_interval_s, GUC_UNIT_S),
	SETTING("cleanup_min_generations", SETTING_INT, cleanup_min_generations, 0),
	SETTING("pending_generations_warn", SETTING_INT, pending_generations_warn, 0),
	SETTING("pending_generations_max", SETTING_INT, pending_generations_max, 0),
	SETTING("target_rows_per_fragment", SETTING_INT64, target_rows_per_fragment, 0),
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

/* Stores value, already validated, into the field def names. */
static void
set_value(CxStoreSettings *s, const CxSettingDef *def, const char *value)
{
	char	   *field = (char *) s + def->offset;
	bool		b;
	int			i;
	double		d;

	switch (def->type)
	{
		case SETTING_BOOL:
			if (!parse_bool(value, &b))
				break;
			*(bool *) field = b;
			return;
		case SETTING_INT:
			if (!parse_int(value, &i, def->unit, NULL))
				break;
			*(int *) field = i;
			return;
		case SETTING_INT64:
			if (!parse_real(value, &d, def->unit, NULL))
				break;
			*(int64 *) field = (int64) d;
			return;
	}
	elog(ERROR, "unexpected value \"%s\" for option \"%s\"", value, def->option);
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
