/*
 * cx_import.c — IMPORT FOREIGN SCHEMA: one foreign table per store found
 * directly below a URI prefix.
 *
 *   IMPORT FOREIGN SCHEMA "s3://bucket/agents" [LIMIT TO (...) | EXCEPT (...)]
 *     FROM SERVER lake INTO local_schema [OPTIONS (uri '...')];
 *
 * The remote schema names the prefix.  Being an identifier it holds at most
 * NAMEDATALEN - 1 bytes, so the import option uri may name a longer one.  A
 * store below the prefix is a sub-prefix <name>/ holding base manifests
 * ("_versions/<n>.manifest") or the "_latest" hint; a listing of the prefix
 * finds them (it lists every object below the prefix, data included: the
 * object-store interface has no delimiter listing yet).  Each store becomes
 *
 *   CREATE FOREIGN TABLE <name> (<column> <type>, ...) SERVER <server>
 *     OPTIONS (uri '<prefix>/<name>' [, key '<column>', unique_key 'false'])
 *
 * with the columns of its newest schema (engine types as PostgreSQL types,
 * lists as arrays, external values as the type they were written from, which
 * must exist here) and its key as the store records it.  A store nobody has
 * written rows to has no columns yet and is left out with a NOTICE.
 *
 * The prefix and each store are opened with the importing user's options and
 * credentials, resolved as for every other use (cxfdw_resolve_store_options)
 * and after the same access checks, on handles closed as soon as they are
 * read.  PostgreSQL applies LIMIT TO / EXCEPT to the commands again; they are
 * applied here first so that excluded stores are not even read.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_type.h"
#include "parser/scansup.h"
#include "utils/builtins.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"

/* Store names found by a listing, NUL-terminated back to back; malloc'd,
 * since the engine calls the collector and it must not raise. */
typedef struct CxFoundStores
{
	cx_buf		names;
	size_t		last;			/* offset of the last name added */
	int			count;
} CxFoundStores;

/* Whether key, relative to a store's root, marks the store as one: a base
 * manifest or the newest-version hint. */
static bool
is_store_marker(const char *key)
{
	cx_object_name name;
	cx_object_kind kind = cx_object_parse(key, &name);

	return kind == CX_OBJECT_BASE_VERSION || kind == CX_OBJECT_BASE_HINT;
}

/*
 * cx_list_fn: adds the store "<name>" of keys "<name>/<marker>".  Keys come
 * in ascending order, and all keys of one store share the prefix "<name>/",
 * so a store's markers are adjacent and comparing with the last name added
 * is enough to add each store once.
 */
static bool
collect_store(void *arg, const char *key, uint64_t size)
{
	CxFoundStores *found = arg;
	const char *slash = strchr(key, '/');
	size_t		len;

	if (slash == NULL || !is_store_marker(slash + 1))
		return true;
	len = slash - key;
	if (found->count > 0 &&
		strncmp((const char *) found->names.data + found->last, key, len) == 0 &&
		found->names.data[found->last + len] == '\0')
		return true;
	found->last = found->names.len;
	cx_buf_put(&found->names, key, len);
	cx_buf_put_u8(&found->names, 0);
	found->count++;
	return cx_buf_ok(&found->names);
}

static void
list_stores(const CxRelInfo *prefix, CxFoundStores *found)
{
	cx_objstore *handle = cxfdw_store_connect(prefix, CX_ACCESS_READ);
	cx_err		err;
	cx_code		rc;

	rc = cx_obj_list(handle, "", collect_store, found, &err);
	cx_obj_close(handle);
	if (rc != CX_OK)
		cx_pg_error(&err, "could not list the stores below %s", prefix->uri);
	if (!cx_buf_ok(&found->names))
		ereport(ERROR, errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory"));
}

/* The newest manifest of a store (NULL if it has none), malloc'd. */
static cx_manifest *
load_newest(const CxRelInfo *ri)
{
	cx_objstore *handle = cxfdw_store_connect(ri, CX_ACCESS_READ);
	cx_manifest *m;
	cx_err		err;
	cx_code		rc;

	rc = cx_manifest_load_latest(handle, &m, &err);
	cx_obj_close(handle);
	if (rc != CX_OK)
		cx_pg_error(&err, "could not read the newest version of store %s",
					ri->uri);
	return m;
}

/*
 * The local type whose values were written as external values tagged name.
 * Parsing the tag (rather than pasting it into the command) refuses a tag
 * that is no type name; resolving it back checks that values of the local
 * type carry the same tag, so the table will match the store.
 */
static char *
external_type(const char *name)
{
	Oid			typid;
	int32		typmod;
	CxTypeInfo	ti;

	parseTypeString(name, &typid, &typmod, false);
	cxfdw_type_resolve(typid, typmod, &ti);
	if (ti.type != CX_T_EXTERNAL || strcmp(ti.ext_type, name) != 0)
		ereport(ERROR,
				errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("type %s here is not the type the store's values were written as", name),
				errdetail("Values of the local type are stored as %s.",
						  cxfdw_type_describe(ti.type, 0, ti.ext_type, 0, 0)));
	return ti.ext_type;
}

static char *
column_type(const cx_column *col)
{
	cx_type		type = col->type == CX_T_LIST ? col->elem_type : col->type;
	char	   *name;

	if (type == CX_T_EXTERNAL)
		name = external_type(col->ext_type);
	else if (col->precision > 0)
		name = psprintf("numeric(%d,%d)", col->precision, col->scale);
	else
		name = format_type_be(cxfdw_native_type_oid(type));
	return col->type == CX_T_LIST ? psprintf("%s[]", name) : name;
}

/* Says which store and column a type error is about. */
typedef struct CxImportErrContext
{
	const char *uri;
	const char *column;
} CxImportErrContext;

static void
import_errcontext(void *arg)
{
	CxImportErrContext *ec = arg;

	errcontext("importing column \"%s\" of store %s", ec->column, ec->uri);
}

/* A store or column name as a table or column name: quoted, and cut to
 * NAMEDATALEN - 1 bytes as the parser would (without its NOTICE). */
static const char *
sql_name(const char *name)
{
	char	   *cut = pstrdup(name);

	truncate_identifier(cut, strlen(cut), false);
	return quote_identifier(cut);
}

static void
append_columns(StringInfo cmd, const char *uri, const cx_schema *schema)
{
	CxImportErrContext ec = {uri, NULL};
	ErrorContextCallback cb = {error_context_stack, import_errcontext, &ec};

	error_context_stack = &cb;
	for (uint32 i = 0; i < schema->ncolumns; i++)
	{
		const cx_column *col = &schema->columns[i];

		ec.column = col->name;
		appendStringInfo(cmd, "%s\n  %s %s", i > 0 ? "," : "",
						 sql_name(col->name), column_type(col));
		/* A name cut short still has to find its store column. */
		if (strlen(col->name) >= NAMEDATALEN)
			appendStringInfo(cmd, " OPTIONS (column_name %s)",
							 quote_literal_cstr(col->name));
	}
	error_context_stack = cb.previous;
}

static char *
create_command(const char *name, const char *server, const char *uri,
			   const cx_manifest *m)
{
	StringInfoData cmd;

	initStringInfo(&cmd);
	appendStringInfo(&cmd, "CREATE FOREIGN TABLE %s (", sql_name(name));
	append_columns(&cmd, uri, m->schema);
	appendStringInfo(&cmd, "\n) SERVER %s OPTIONS (uri %s",
					 quote_identifier(server), quote_literal_cstr(uri));
	if (m->key_column != NULL)
		appendStringInfo(&cmd, ", key %s%s", quote_literal_cstr(m->key_column),
						 m->unique_key ? "" : ", unique_key 'false'");
	appendStringInfoChar(&cmd, ')');
	return cmd.data;
}

/* The command importing store name below prefix, or NULL to leave it out. */
static char *
import_store(const CxRelInfo *prefix, const char *name, const char *server)
{
	CxRelInfo	ri = *prefix;
	cx_manifest *m;
	char	   *volatile cmd = NULL;

	ri.uri = psprintf("%s/%s", prefix->uri, name);
	m = load_newest(&ri);
	PG_TRY();
	{
		if (m != NULL && m->schema != NULL)
			cmd = create_command(name, server, ri.uri, m);
		else
			ereport(NOTICE,
					errmsg("store %s has no columns yet; no table imported for it",
						   ri.uri));
	}
	PG_FINALLY();
	{
		cx_manifest_free(m);
	}
	PG_END_TRY();
	return cmd;
}

/* The prefix URI: the import option uri, or else the remote schema name. */
static char *
prefix_uri(ImportForeignSchemaStmt *stmt)
{
	char	   *uri = NULL;
	char	   *canonical;
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, "uri") != 0)
			ereport(ERROR,
					errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					errmsg("invalid option \"%s\" for IMPORT FOREIGN SCHEMA",
						   opt->defname),
					errhint("Valid options in this context are: uri"));
		uri = defGetString(opt);
	}
	/* Checked first: a URI with user-info is refused without being shown.
	 * Canonical URIs have no trailing '/': "<prefix>/<name>" gets exactly
	 * one in between. */
	canonical = cxfdw_canonical_uri(uri != NULL ? uri : stmt->remote_schema);
	if (uri == NULL && strlen(stmt->remote_schema) >= NAMEDATALEN - 1)
		ereport(ERROR,
				errcode(ERRCODE_NAME_TOO_LONG),
				errmsg("the URI prefix \"%s\" may have been cut short as a schema name",
					   stmt->remote_schema),
				errhint("Give the prefix as OPTIONS (uri '...'); the schema name is then ignored."));
	return canonical;
}

/* Whether LIMIT TO / EXCEPT let the store through, by the table name it
 * gets (cut short like any identifier). */
static bool
wanted(const char *name, ImportForeignSchemaStmt *stmt)
{
	char	   *relname = pstrdup(name);

	truncate_identifier(relname, strlen(relname), false);
	return IsImportableForeignTable(relname, stmt);
}

List *
cxfdw_import_schema(ImportForeignSchemaStmt *stmt, Oid serverid)
{
	CxRelInfo	prefix = {0};
	CxFoundStores found = {0};
	List	   *volatile commands = NIL;

	prefix.uri = prefix_uri(stmt);
	prefix.userid = GetUserId();
	cxfdw_resolve_store_options(&prefix, serverid);

	cx_buf_init(&found.names);
	PG_TRY();
	{
		size_t		off = 0;

		list_stores(&prefix, &found);
		for (int i = 0; i < found.count; i++)
		{
			const char *name = (const char *) found.names.data + off;
			char	   *cmd;

			off += strlen(name) + 1;
			if (!wanted(name, stmt))
				continue;
			cmd = import_store(&prefix, name, stmt->server_name);
			if (cmd != NULL)
				commands = lappend(commands, cmd);
		}
	}
	PG_FINALLY();
	{
		cx_buf_free(&found.names);
	}
	PG_END_TRY();
	return commands;
}
