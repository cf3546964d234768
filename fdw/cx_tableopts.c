/*
 * cx_tableopts.c — the foreign-table options that govern how the writer
 * worker keeps a store (CxStoreSettings), read when a transaction first
 * writes to a table, and the check of the table key against the store.
 *
 * Values are read with the validator's own parser, and the fields and
 * defaults come from the option table (cx_option.c), so a setting means here
 * exactly what CREATE / ALTER accepted.  Options a table leaves out take
 * their defaults, or, for an option of
 * the store that another table of the store set, that table's value
 * (cxfdw_settings_apply, run by the writer worker, which sees every table's
 * requests).
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"

#include "ctxstore_fdw.h"
#include "cx_writer_protocol.h"

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

	cxfdw_settings_default(out);
	set_source(&out->source, ri);
	foreach(lc, GetForeignTable(ri->relid)->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);
		int			i;

		if (strcmp(opt->defname, "key") == 0)
			set_key(out, ri, defGetString(opt));
		else if ((i = cxfdw_setting_set(out, opt->defname, defGetString(opt))) >= 0)
			out->explicit_mask |= UINT32_C(1) << i;
	}
}

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
		cxfdw_setting_get(store, i) == cxfdw_setting_get(req, i))
		return false;
	snprintf(why, whylen,
			 "foreign table \"%s\" sets %s to " INT64_FORMAT ", but the store has " INT64_FORMAT " from foreign table \"%s\"",
			 req->source.name, cxfdw_setting_name(i),
			 cxfdw_setting_get(req, i), cxfdw_setting_get(store, i),
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
bool
cxfdw_settings_apply(CxStoreSettings *store, CxTableRef *owners,
					 const CxStoreSettings *req, char *why, size_t whylen)
{
	CxStoreSettings merged = *req;
	int			nsettings = cxfdw_nsettings();

	for (int i = 0; i < nsettings; i++)
		if (contradicts(store, &owners[i], req, i, why, whylen))
			return false;
	for (int i = 0; i < nsettings; i++)
	{
		bool		sets = (req->explicit_mask & (UINT32_C(1) << i)) != 0;

		if (!cxfdw_setting_is_store_level(i))
			continue;
		if (sets && owners[i].relid == InvalidOid)
			owners[i] = req->source;
		else if (sets)
			continue;
		else if (same_table(&owners[i], &req->source))
			owners[i].relid = InvalidOid;
		else if (owners[i].relid != InvalidOid)
			cxfdw_setting_copy(&merged, store, i);
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
}
