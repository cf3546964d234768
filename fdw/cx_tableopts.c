/*
 * cx_tableopts.c — the foreign-table options that govern how the writer
 * worker keeps a store (CxStoreSettings), read when a transaction first
 * writes to a table, and the check of the table key against the store.
 *
 * Values are read with the validator's own parser, and the fields and
 * defaults come from the option table (shared/cx_options.c), so a setting
 * means here exactly what CREATE / ALTER accepted.  Options a table leaves
 * out take their defaults, or, for an option of the store that another
 * table of the store set, that table's value (cx_settings_apply, run by the
 * writer worker, which sees every table's requests).
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"

#include "utils/builtins.h"

#include "ctxstore_fdw.h"

/* Copies the column name of option (key or upsert_key) into field. */
static void
set_column_name(char *field, const CxRelInfo *ri, const char *option,
				const char *name)
{
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				errcode(ERRCODE_NAME_TOO_LONG),
				errmsg("%s column name of foreign table \"%s\" is too long",
					   option, ri->relname),
				errdetail("Column names are limited to %d bytes.",
						  NAMEDATALEN - 1));
	strlcpy(field, name, NAMEDATALEN);
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
 * The sort key names orderable store columns of the table (the engine's
 * check, which merges repeat against the store's schema).  Checked before
 * writes only: reads do not depend on it.
 */
static void
check_sort_key(const CxRelInfo *ri, const CxStoreSettings *s)
{
	cx_schema  *schema;
	uint32_t	cols[CX_SORT_KEY_MAX_COLUMNS];
	uint32_t	n;
	cx_err		err;
	cx_code		rc;

	if (s->sort_key[0] == '\0')
		return;
	schema = cxfdw_schema_from_rel(ri);
	rc = cx_sort_key_resolve(schema, s->sort_key, cols, &n, &err);
	cx_schema_free(schema);
	if (rc != CX_OK)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("invalid sort_key of foreign table \"%s\"", ri->relname),
				errdetail("The %s.", err.msg),
				errhint("Name store columns of orderable types (integers, floats, text, bytea, uuid, bool, date, time and timestamp types), as in OPTIONS (SET sort_key 'session_id, created_at')."));
}

/*
 * The write settings of the foreign table ri, from its options and the
 * defaults, with the table they come from.
 */
void
cxfdw_table_settings(const CxRelInfo *ri, CxStoreSettings *out)
{
	ListCell   *lc;

	cxfdw_settings_default(out);
	set_source(&out->source, ri);
	foreach(lc, GetForeignTable(ri->relid)->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);
		int			i;

		if (strcmp(opt->defname, "key") == 0)
			set_column_name(out->key_column, ri, "key", defGetString(opt));
		else if (strcmp(opt->defname, "upsert_key") == 0)
			set_column_name(out->upsert_key, ri, "upsert_key",
							defGetString(opt));
		else if (strcmp(opt->defname, "sort_key") == 0)
			strlcpy(out->sort_key, defGetString(opt), sizeof(out->sort_key));
		else if ((i = cxfdw_setting_set(out, opt->defname, defGetString(opt))) >= 0)
			out->explicit_mask |= UINT32_C(1) << i;
	}
	cxfdw_check_upsert_key(ri, out);
}

/*
 * Checks, before a transaction writes to ri, that its key names a column of
 * the store (the store's schema, or the table's for a store nobody has
 * written yet), and that it agrees with the key the store recorded with its
 * first writer (base may be NULL: an empty store), and that its sort key
 * names orderable columns of the table.
 */
/*
 * The store tells keys apart by their stored bytes, so a key's type must be
 * one whose equality is byte equality: not an array, a float (0 = -0, NaN),
 * numeric (1.0 = 1.00), interval ('1 day' = '24 hours'), json (no equality)
 * or a type stored by its send form.
 */
static void
check_key_type(const CxRelInfo *ri)
{
	int			att = cxfdw_key_attribute(ri);

	if (att < 0 || cxfdw_key_type_supported(&ri->columns[att].type))
		return;
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("key column \"%s\" of foreign table \"%s\" has type %s, which cannot be a key",
				   ri->columns[att].attname, ri->relname,
				   format_type_be(ri->columns[att].type.typid)),
			errdetail("Keys are compared by their stored bytes, and values of this type can be equal with different bytes."),
			errhint("Use a key of type text, varchar, an integer type, uuid, bytea, date or a timestamp type."));
}

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
						cxfdw_option_default("key")));
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
	check_key_type(ri);
	check_sort_key(ri, s);
}
