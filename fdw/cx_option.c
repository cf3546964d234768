/*
 * cx_option.c — the options of servers, user mappings, foreign tables and
 * columns: validation at CREATE / ALTER time, and reading them back when a
 * table is used.
 *
 * Every option is checked at the level it belongs to, and its value as far as
 * it can be without touching the store, so a typo fails at DDL time rather
 * than at the first write.  Options the engine does not act on yet are
 * refused (0A000), rather than stored for nothing.
 *
 * The option table (shared/cx_options.c) is the one source of each option's
 * level, scope, syntax and default: this file validates and parses by it,
 * the write settings (cx_tableopts.c) take their fields and defaults from
 * it, and ctxstore.options() shows it, so that the regress test option_docs
 * can hold docs/OPERATIONS.md to it.
 *
 * Credentials are accepted only in user mappings: pg_user_mappings shows them
 * to their user and to superusers, whereas server and table options are
 * readable by anyone.
 */
#include "postgres.h"

#include <errno.h>
#include <limits.h>
#include <math.h>

#include "access/reloptions.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "ctxstore_fdw.h"
#include "ctxstore/engine.h"
#include "cx_options.h"

static const CxOptDef *
find_option(const char *name)
{
	for (int i = 0; i < cx_noptions; i++)
		if (strcmp(cx_options[i].name, name) == 0)
			return &cx_options[i];
	return NULL;
}

static const char *
level_name(Oid context)
{
	switch (context)
	{
		case ForeignServerRelationId:
			return "server";
		case UserMappingRelationId:
			return "user mapping";
		case ForeignTableRelationId:
			return "foreign table";
		case AttributeRelationId:
			return "column";
		default:
			return "foreign-data wrapper";
	}
}

static void reject_unknown(const char *name, Oid context) pg_attribute_noreturn();
static void reject_value(const CxOptDef *def, const char *value,
						 const char *why) pg_attribute_noreturn();

/* Unknown here: say which options this level does take, like postgres_fdw. */
static void
reject_unknown(const char *name, Oid context)
{
	StringInfoData valid;
	const CxOptDef *def = find_option(name);

	/* Secrets in a world-readable catalog are refused with their own reason. */
	if (def != NULL && def->context == UserMappingRelationId)
		ereport(ERROR,
				errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				errmsg("option \"%s\" is accepted only in a user mapping", name),
				errhidestmt(true),
				errhint("Credentials go in CREATE USER MAPPING ... SERVER ... OPTIONS (...), which only that user and superusers can read."));

	initStringInfo(&valid);
	for (int i = 0; i < cx_noptions; i++)
		if (cx_options[i].context == context)
			appendStringInfo(&valid, "%s%s", valid.len > 0 ? ", " : "",
							 cx_options[i].name);

	ereport(ERROR,
			errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
			errmsg("invalid option \"%s\" for a %s", name, level_name(context)),
			errhidestmt(true),
			valid.len > 0
			? errhint("Valid options in this context are: %s", valid.data)
			: errhint("There are no valid options in this context."));
}

/* value NULL: the value may hold a secret, so the message leaves it out. */
static void
reject_value(const CxOptDef *def, const char *value, const char *why)
{
	/* A credential's value is never repeated back. */
	bool		show = def->context != UserMappingRelationId && value != NULL;

	ereport(ERROR,
			errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			show
			? errmsg("invalid value for option \"%s\": \"%s\"", def->name, value)
			: errmsg("invalid value for option \"%s\"", def->name),
			errdetail("%s", why),
			errhidestmt(true));
}

static bool
has_prefix_ci(const char *s, const char *prefix)
{
	return pg_strncasecmp(s, prefix, strlen(prefix)) == 0;
}

bool
cxfdw_uri_is_file(const char *uri)
{
	return has_prefix_ci(uri, "file://");
}

/* The reason for refusing a URL that carries user-info, which is refused
 * without repeating it. */
static const char *const carries_credentials =
"A URL in an option cannot carry credentials; put them in the user mapping.";

/* Refuses value for def with problem, unless problem is NULL. */
static void
check_problem(const CxOptDef *def, const char *value, const char *problem)
{
	if (problem != NULL)
		reject_value(def, problem == carries_credentials ? NULL : value,
					 problem);
}

/* Whether the authority of a URL (up to the first '/') has user-info. */
static bool
has_user_info(const char *authority)
{
	return memchr(authority, '@', strcspn(authority, "/")) != NULL;
}

/* Returns why uri is not a store URI, or NULL if the engine's own parser
 * (cx_uri_canonical) is to decide. */
static const char *
uri_problem(const char *uri)
{
	const char *rest;

	if (cxfdw_uri_is_file(uri))
		return NULL;
	if (has_prefix_ci(uri, "s3://"))
		rest = uri + strlen("s3://");
	else if (has_prefix_ci(uri, "az://"))
		rest = uri + strlen("az://");
	else
		return "Supported URIs are file:///absolute/path, s3://bucket/prefix and az://container/prefix.";
	/* URIs show up in EXPLAIN and messages, so they must not carry secrets. */
	if (has_user_info(rest))
		return carries_credentials;
	return NULL;
}

/*
 * The canonical spelling of a store URI (palloc'd), or an error as the
 * validator gives it for the table option uri.  Everything that keys on a
 * store takes its URI from here, so that file:///x/ts and file:///x//ts/
 * are one store to the writer, the caches, the stats and EXPLAIN.
 */
char *
cxfdw_canonical_uri(const char *uri)
{
	char	   *canonical;
	char	   *result;
	cx_err		err;

	check_problem(find_option("uri"), uri, uri_problem(uri));
	if (cx_uri_canonical(uri, &canonical, &err) != CX_OK)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("invalid value for option \"uri\": \"%s\"", uri),
				errdetail("The %s.", err.msg),
				errhidestmt(true),
				errhint("A store URI names a directory of its own without \"..\" segments: file:///absolute/path, s3://bucket/prefix or az://container/prefix."));
	result = pstrdup(canonical);
	free(canonical);
	return result;
}

/* Integer from an integer option; min/max from the option's definition. */
static int64
parse_integer(const CxOptDef *def, const char *value)
{
	char	   *end;
	int64		v;

	errno = 0;
	v = strtoi64(value, &end, 10);
	if (end == value || *end != '\0')
		reject_value(def, value, "The value must be a whole number.");
	if (errno == ERANGE)
		reject_value(def, value, "The value is out of range.");
	return v;
}

static int64
parse_seconds(const CxOptDef *def, const char *value)
{
	int			v;
	const char *hint = NULL;

	if (!parse_int(value, &v, GUC_UNIT_S, &hint))
		reject_value(def, value,
					 hint ? hint : "The value must be a whole number of seconds, optionally with a unit: 30, 30s, 5min, 1h.");
	return v;
}

static int64
parse_bytes(const CxOptDef *def, const char *value)
{
	double		v;
	const char *hint = NULL;

	if (!parse_real(value, &v, GUC_UNIT_BYTE, &hint) || v != rint(v) ||
		v < (double) PG_INT64_MIN || v >= (double) PG_INT64_MAX)
		reject_value(def, value,
					 hint ? hint : "The value must be a whole number of bytes, optionally with a unit: 1048576, 512MB, 1GB.");
	return (int64) v;
}

/* Returns why value is not an endpoint URL, or NULL if it is one. */
static const char *
endpoint_problem(const char *value)
{
	const char *authority;

	if (has_prefix_ci(value, "http://"))
		authority = value + strlen("http://");
	else if (has_prefix_ci(value, "https://"))
		authority = value + strlen("https://");
	else
		return "The endpoint must be an http:// or https:// URL.";
	/* Server options are readable by every role: no secrets in them (a SAS
	 * token goes in the user mapping, not in a query string). */
	if (has_user_info(authority))
		return carries_credentials;
	if (strpbrk(value, "?#") != NULL)
		return "The endpoint cannot have a query or a fragment; a SAS token goes in the user mapping's sas_token.";
	return NULL;
}

/* The sort key's list, by the engine's own reader (the columns are checked
 * against the table when it is first written, cxfdw_table_settings). */
static void
check_sort_key(const CxOptDef *def, const char *value)
{
	uint32_t	cols[CX_SORT_KEY_MAX_COLUMNS];
	uint32_t	n;
	cx_err		err;

	if (value[0] == '\0')
		reject_value(def, value, "The value must not be empty.");
	if (strlen(value) >= CX_SORT_KEY_LEN)
		reject_value(def, value,
					 psprintf("The value must be shorter than %d bytes.",
							  CX_SORT_KEY_LEN));
	if (cx_sort_key_resolve(NULL, value, cols, &n, &err) != CX_OK)
		reject_value(def, value,
					 psprintf("The %s; name up to %d columns, separated by commas, as in 'session_id, created_at'.",
							  err.msg, CX_SORT_KEY_MAX_COLUMNS));
}

/* Runs the engine's own reader of the option over value (booleans come
 * back as 0 or 1). */
static int64
parse_engine(const CxOptDef *def, const char *value)
{
	cx_option	opt = {def->name, value};
	cx_http_config cfg;
	bool		b = false;
	cx_err		err;
	cx_code		rc;

	if (def->kind == OPT_ENGINE_BOOL)
		rc = cx_option_bool(&opt, 1, def->name, false, &b, &err);
	else
		rc = cx_http_config_from_options(&cfg, &opt, 1, &err);
	if (rc != CX_OK)
		reject_value(def, value, psprintf("The %s.", err.msg));
	return b ? 1 : 0;
}

/*
 * Checks value against def and returns it as a number for the numeric kinds
 * (booleans as 0 or 1; 0 for the others).
 */
static int64
parse_value(const CxOptDef *def, const char *value)
{
	int64		n = 0;
	bool		b;

	switch (def->kind)
	{
		case OPT_STRING:
			if (value[0] == '\0')
				reject_value(def, value, "The value must not be empty.");
			return 0;
		case OPT_BOOL:
			if (!parse_bool(value, &b))
				reject_value(def, value, "The value must be a boolean: on, off, true or false.");
			return b ? 1 : 0;
		case OPT_URL:
			check_problem(def, value, endpoint_problem(value));
			return 0;
		case OPT_PATH:
			if (value[0] != '/')
				reject_value(def, value, "The value must be an absolute file name.");
			return 0;
		case OPT_SORT_KEY:
			check_sort_key(def, value);
			return 0;
		case OPT_ENGINE_BOOL:
		case OPT_TRANSPORT:
			return parse_engine(def, value);
		case OPT_URL_STYLE:
			if (strcmp(value, "path") != 0 && strcmp(value, "virtual") != 0)
				reject_value(def, value, "The value must be \"path\" or \"virtual\".");
			return 0;
		case OPT_URI:
			(void) cxfdw_canonical_uri(value);
			return 0;
		case OPT_INT:
			n = parse_integer(def, value);
			break;
		case OPT_SECONDS:
			n = parse_seconds(def, value);
			break;
		case OPT_BYTES:
			n = parse_bytes(def, value);
			break;
	}

	if (n < def->min || n > def->max)
	{
		/* Upper bounds of INT_MAX and beyond only guard against overflow. */
		if (def->max >= INT_MAX)
			reject_value(def, value,
						 psprintf("The value must be at least " INT64_FORMAT ".",
								  def->min));
		reject_value(def, value,
					 psprintf("The value must be between " INT64_FORMAT " and " INT64_FORMAT ".",
							  def->min, def->max));
	}
	return n;
}

/* Whether an option's value is a secret: every user-mapping option but
 * the account name. */
static bool
is_secret(const CxOptDef *def)
{
	return def->context == UserMappingRelationId && strcmp(def->name, "account_name") != 0;
}

/* Whether sql mentions an option whose value is a secret, so that a log
 * line about it must not repeat it. */
bool
cxfdw_mentions_secret(const char *sql)
{
	for (int i = 0; i < cx_noptions; i++)
		if (is_secret(&cx_options[i]) && strcasestr(sql, cx_options[i].name) != NULL)
			return true;
	return false;
}

static bool
has_option(List *list, const char *name)
{
	ListCell   *lc;

	foreach(lc, list)
		if (strcmp(lfirst_node(DefElem, lc)->defname, name) == 0)
			return true;
	return false;
}

static void refuse_incomplete(const char *given, const char *needs,
							  const char *hint) pg_attribute_noreturn();

static void
refuse_incomplete(const char *given, const char *needs, const char *hint)
{
	ereport(ERROR,
			errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
			errmsg("user mapping option \"%s\" needs %s", given, needs),
			errhidestmt(true),
			errhint("%s", hint));
}

/*
 * A user mapping holds whole credentials or none: half a pair would only
 * fail at the first query, far from the statement that caused it.
 */
static void
check_credential_pairs(List *list)
{
	static const char *const s3_hint =
		"S3 credentials are access_key_id and secret_access_key together, with session_token for temporary credentials.";
	static const char *const az_hint =
		"Azure credentials are account_name with account_key (SharedKey), or a sas_token (with account_name or an endpoint naming the account).";
	bool		id = has_option(list, "access_key_id");
	bool		secret = has_option(list, "secret_access_key");
	bool		key = has_option(list, "account_key");
	bool		sas = has_option(list, "sas_token");

	if (id && !secret)
		refuse_incomplete("access_key_id", "\"secret_access_key\"", s3_hint);
	if (secret && !id)
		refuse_incomplete("secret_access_key", "\"access_key_id\"", s3_hint);
	if (has_option(list, "session_token") && !id)
		refuse_incomplete("session_token", "\"access_key_id\" and \"secret_access_key\"", s3_hint);
	if (key && sas)
		ereport(ERROR,
				errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				errmsg("a user mapping takes \"account_key\" or \"sas_token\", not both"),
				errhidestmt(true),
				errhint("%s", az_hint));
	if (key && !has_option(list, "account_name"))
		refuse_incomplete("account_key", "\"account_name\"", az_hint);
	if (has_option(list, "account_name") && !key && !sas)
		refuse_incomplete("account_name", "\"account_key\" or \"sas_token\"", az_hint);
}

PG_FUNCTION_INFO_V1(ctxstore_fdw_validator);

/*
 * The wrapper's validator: called with the complete option list of the object
 * being created or altered, and the catalog that says which level it is.
 */
Datum
ctxstore_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *list = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			context = PG_GETARG_OID(1);
	bool		has_uri = false;
	ListCell   *lc;

	foreach(lc, list)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);
		const CxOptDef *def = find_option(opt->defname);

		if (def == NULL || def->context != context)
			reject_unknown(opt->defname, context);
		if (parse_value(def, defGetString(opt)) != 0 &&
			strcmp(def->name, "allow_env_credentials") == 0 && !superuser())
			ereport(ERROR,
					errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					errmsg("permission denied to set option \"allow_env_credentials\""),
					errhidestmt(true),
					errdetail("The option lets every user of the server use the credentials of the database server's environment."),
					errhint("Only superusers may turn it on."));
		has_uri |= strcmp(def->name, "uri") == 0;
	}

	if (context == UserMappingRelationId)
		check_credential_pairs(list);
	if (context == ForeignTableRelationId && !has_uri)
		ereport(ERROR,
				errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
				errmsg("a ctxstore foreign table needs the option \"uri\""),
				errhidestmt(true),
				errhint("Name the store, as in OPTIONS (uri 'file:///var/lib/ctxstore/context') or OPTIONS (uri 's3://bucket/context')."));

	PG_RETURN_VOID();
}

/* The user mapping's options for (userid, serverid), falling back to the
 * PUBLIC mapping; NIL if there is none (a file:// store needs none). */
static List *
user_mapping_options(Oid userid, Oid serverid)
{
	HeapTuple	tp;
	Datum		datum;
	bool		isnull;
	List	   *result = NIL;

	tp = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(userid),
						 ObjectIdGetDatum(serverid));
	if (!HeapTupleIsValid(tp))
		tp = SearchSysCache2(USERMAPPINGUSERSERVER, ObjectIdGetDatum(InvalidOid),
							 ObjectIdGetDatum(serverid));
	if (!HeapTupleIsValid(tp))
		return NIL;
	datum = SysCacheGetAttr(USERMAPPINGUSERSERVER, tp,
							Anum_pg_user_mapping_umoptions, &isnull);
	if (!isnull)
		result = untransformRelOptions(datum);
	ReleaseSysCache(tp);
	return result;
}

/* Options a user mapping authenticates with, as opposed to naming things. */
static bool
is_credential(const char *name)
{
	return strcmp(name, "access_key_id") == 0 ||
		strcmp(name, "account_key") == 0 ||
		strcmp(name, "sas_token") == 0;
}

static void
add_store_option(CxRelInfo *ri, DefElem *opt)
{
	ri->store_options[ri->nstore_options].name = opt->defname;
	ri->store_options[ri->nstore_options].value = defGetString(opt);
	ri->nstore_options++;
}

/*
 * Fills in ri's store options for ri->uri as ri->userid reaches it through
 * the server: the server's options, then those of the user's mapping (or the
 * PUBLIC one), which the engine lets win on a clash.  Every path that opens
 * a store gets its options here: scans, the SQL functions, the writer
 * worker's requests (copied from ri) and IMPORT FOREIGN SCHEMA.
 *
 * allow_env_credentials reaches the engine only from a server a superuser
 * owns: the validator lets only superusers turn it on, and this keeps it off
 * after a superuser hands the server to another role.  A file:// store gets
 * no options (the local backend takes none).
 */
void
cxfdw_resolve_store_options(CxRelInfo *ri, Oid serverid)
{
	ForeignServer *server;
	List	   *mapping;
	ListCell   *lc;

	ri->store_options = NULL;
	ri->nstore_options = 0;
	ri->has_credentials = false;
	ri->env_credentials = false;
	if (cxfdw_uri_is_file(ri->uri))
		return;

	server = GetForeignServer(serverid);
	mapping = user_mapping_options(ri->userid, serverid);
	ri->store_options = palloc(sizeof(cx_option) *
							   (list_length(server->options) + list_length(mapping) + 1));
	foreach(lc, server->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, "allow_env_credentials") == 0)
		{
			if (!superuser_arg(server->owner))
				continue;
			ri->env_credentials = parse_value(find_option(opt->defname),
											  defGetString(opt)) != 0;
		}
		add_store_option(ri, opt);
	}
	foreach(lc, mapping)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		ri->has_credentials |= is_credential(opt->defname);
		add_store_option(ri, opt);
	}
}

/* Stores v, parsed from the option's value, into its field: the options'
 * ranges fit their fields. */
static void
setting_put(CxStoreSettings *s, const CxOptDef *def, int64 v)
{
	char	   *p = (char *) s + def->field.offset;

	switch (def->field.size)
	{
		case sizeof(bool):
			*(bool *) p = v != 0;
			return;
		case sizeof(int):
			*(int *) p = (int) v;
			return;
	}
	*(int64 *) p = v;
}

/* The write settings of a table that sets none of them.  They are
 * constants, and every statement that writes starts from them: parsed once
 * per backend. */
void
cxfdw_settings_default(CxStoreSettings *s)
{
	static CxStoreSettings defaults;
	static bool parsed = false;
	const CxOptDef *def;

	if (!parsed)
	{
		memset(&defaults, 0, sizeof(defaults));
		strlcpy(defaults.key_column, cxfdw_option_default("key"),
				sizeof(defaults.key_column));
		for (int i = 0; (def = cx_setting_def(i)) != NULL; i++)
			setting_put(&defaults, def, parse_value(def, def->dflt));
		parsed = true;
	}
	*s = defaults;
}

/*
 * Sets the write setting of table option name from value, read by the
 * validator's own parser, and returns its number; -1 if the option is no
 * write setting.
 */
int
cxfdw_setting_set(CxStoreSettings *s, const char *name, const char *value)
{
	const CxOptDef *def;

	for (int i = 0; (def = cx_setting_def(i)) != NULL; i++)
		if (strcmp(def->name, name) == 0)
		{
			setting_put(s, def, parse_value(def, value));
			return i;
		}
	return -1;
}

/*
 * upsert_key names a store column of the table other than the key: an
 * insert supersedes the live row whose value of it equals the new row's.
 */
void
cxfdw_check_upsert_key(const CxRelInfo *ri, const CxStoreSettings *s)
{
	bool		found = false;

	if (s->upsert_key[0] == '\0')
		return;
	for (int att = 0; att < ri->natts; att++)
		found |= ri->columns[att].attname != NULL &&
			strcmp(ri->columns[att].name, s->upsert_key) == 0;
	if (!found)
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_COLUMN),
				errmsg("upsert_key column \"%s\" of foreign table \"%s\" does not exist",
					   s->upsert_key, ri->relname),
				errhint("Name a column of the table in upsert_key, as in OPTIONS (SET upsert_key 'external_id')."));
	if (strcmp(s->upsert_key, s->key_column) == 0)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("upsert_key of foreign table \"%s\" names its key column \"%s\"",
					   ri->relname, s->key_column),
				errdetail("Rows are already replaced by their key when unique_key is false."),
				errhint("Name a second column that identifies a row, or drop the upsert_key option."));
}

/* The default of the table option name, as text. */
const char *
cxfdw_option_default(const char *name)
{
	const CxOptDef *def = find_option(name);

	Assert(def != NULL && def->context == ForeignTableRelationId && def->dflt != NULL);
	return def->dflt;
}

/* A default as ctxstore.options() shows it: booleans spelled one way. */
static const char *
default_text(const CxOptDef *def)
{
	if (def->dflt != NULL && def->kind == OPT_BOOL)
		return parse_value(def, def->dflt) != 0 ? "true" : "false";
	return def->dflt;
}

static const char *
scope_name(CxOptScope scope)
{
	switch (scope)
	{
		case OF_TABLE:
			return "table";
		case OF_STORE:
			return "store";
		case OF_OBJECT:
			break;
	}
	return NULL;
}

PG_FUNCTION_INFO_V1(ctxstore_options);

/*
 * ctxstore.options() returns setof (name, level, scope, default_value): the
 * option table, for documentation and its check (regress test option_docs).
 */
Datum
ctxstore_options(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < cx_noptions; i++)
	{
		const CxOptDef *def = &cx_options[i];
		const char *texts[4] = {def->name, level_name(def->context),
		scope_name(def->scope), default_text(def)};
		Datum		values[4];
		bool		nulls[4];

		for (int c = 0; c < 4; c++)
		{
			nulls[c] = texts[c] == NULL;
			values[c] = nulls[c] ? (Datum) 0 : CStringGetTextDatum(texts[c]);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

static void
read_table_options(CxRelInfo *ri, List *list)
{
	ListCell   *lc;

	foreach(lc, list)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);
		const CxOptDef *def = find_option(opt->defname);

		/* The validator let nothing else in; re-parsing is cheap and keeps
		 * one definition of each option's syntax. */
		if (def == NULL || def->context != ForeignTableRelationId)
			reject_unknown(opt->defname, ForeignTableRelationId);
		if (strcmp(def->name, "uri") == 0)
			ri->uri = cxfdw_canonical_uri(defGetString(opt));
		else if (strcmp(def->name, "version") == 0)
			ri->version = (uint64) parse_value(def, defGetString(opt));
	}
	if (ri->uri == NULL)
		elog(ERROR, "foreign table \"%s\" has no uri option", ri->relname);
}

static void
read_columns(CxRelInfo *ri, Relation rel)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	CxConvErrContext ec;

	/* A type that cannot be stored is reported with its column. */
	cxfdw_conv_errcontext_push(&ec, ri);
	ri->natts = tupdesc->natts;
	ri->columns = palloc0(sizeof(CxColumnDef) * ri->natts);
	for (int i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		CxColumnDef *col = &ri->columns[i];
		ListCell   *lc;

		if (att->attisdropped)
			continue;
		/* A copy: a relcache rebuild may move the original. */
		col->attname = pstrdup(NameStr(att->attname));
		col->name = col->attname;
		foreach(lc, GetForeignColumnOptions(ri->relid, att->attnum))
		{
			DefElem    *opt = lfirst_node(DefElem, lc);

			if (strcmp(opt->defname, "column_name") == 0)
				col->name = defGetString(opt);
		}
		ec.att = i;
		cxfdw_type_resolve(att->atttypid, att->atttypmod, &col->type);
	}
	cxfdw_conv_errcontext_pop(&ec);
}

CxRelInfo *
cxfdw_rel_columns(Relation rel)
{
	CxRelInfo  *ri = palloc0(sizeof(CxRelInfo));

	ri->relid = RelationGetRelid(rel);
	ri->relname = pstrdup(RelationGetRelationName(rel));
	read_columns(ri, rel);
	return ri;
}

/*
 * Everything the wrapper needs to know about a foreign table, as seen by
 * userid (whose user mapping supplies credentials).  Allocated in
 * CurrentMemoryContext.
 */
CxRelInfo *
cxfdw_rel_info(Relation rel, Oid userid)
{
	CxRelInfo  *ri = palloc0(sizeof(CxRelInfo));
	ForeignTable *table = GetForeignTable(RelationGetRelid(rel));

	ri->relid = RelationGetRelid(rel);
	ri->relname = pstrdup(RelationGetRelationName(rel));
	ri->userid = userid;
	read_table_options(ri, table->options);
	cxfdw_resolve_store_options(ri, table->serverid);
	read_columns(ri, rel);
	return ri;
}
