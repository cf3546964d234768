/*
 * cx_alter.c — ALTER FOREIGN TABLE on a ctxstore table changes its store's
 * columns (ctxstore/table.h, "Changing a store's columns"; docs/SQL.md).
 *
 * Two event triggers the extension installs (ctxstore--0.1.sql) do it:
 * ddl_command_start remembers how the table's attributes map to store
 * columns before the command, ddl_command_end compares that with the
 * catalog after it and commits the difference to the store, with the
 * user's credentials, as one "alter schema" base version before the
 * command returns:
 *
 *   an attribute added     ADD the store column
 *   an attribute dropped   DROP its store column
 *   RENAME COLUMN          RENAME the store column, unless the attribute
 *                          names it through column_name (then nothing)
 *   ALTER COLUMN TYPE      the store column's type: only widenings
 *
 * Changes the store cannot make (the key, a type change that is not a
 * widening) raise before the store is touched, so the command fails as a
 * whole.  Attributes are compared by attnum, which ALTER never changes;
 * column_name set or changed by ALTER COLUMN OPTIONS maps the attribute to
 * another store column and changes nothing in the store.
 *
 * The store change is not part of the transaction: if the transaction
 * rolls back afterwards, the store keeps the new columns.  Every change is
 * idempotent in the engine, so repeating the ALTER converges.
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "commands/event_trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_functions.h"
#include "cx_pgerror.h"

/* The table's columns as the command found them (ddl_command_start). */
static MemoryContext before_cxt = NULL;
static CxRelInfo *before = NULL;
static LocalTransactionId before_lxid = InvalidLocalTransactionId;

/* The ctxstore table the command alters, or InvalidOid; *rename: it is a
 * RENAME COLUMN. */
static Oid
altered_table(Node *parsetree, bool *rename)
{
	RangeVar   *rv = NULL;
	Oid			relid;

	*rename = false;
	if (IsA(parsetree, AlterTableStmt))
		rv = ((AlterTableStmt *) parsetree)->relation;
	else if (IsA(parsetree, RenameStmt) &&
			 ((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN)
	{
		rv = ((RenameStmt *) parsetree)->relation;
		*rename = true;
	}
	if (rv == NULL)
		return InvalidOid;
	relid = RangeVarGetRelid(rv, NoLock, true);
	if (!OidIsValid(relid) || !cxfdw_is_ctxstore_table(relid))
		return InvalidOid;
	return relid;
}

/* The table's columns only, or (with_store) everything the store needs
 * too: an ALTER that changes no column never reads options or
 * credentials. */
static CxRelInfo *
table_info(Oid relid, bool with_store)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	CxRelInfo  *ri = with_store ? cxfdw_rel_info(rel, GetUserId()) :
		cxfdw_rel_columns(rel);

	relation_close(rel, AccessShareLock);
	return ri;
}

static EventTriggerData *
trigger_data(FunctionCallInfo fcinfo)
{
	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				errmsg("function can only be called as an event trigger"));
	return (EventTriggerData *) fcinfo->context;
}

PG_FUNCTION_INFO_V1(ctxstore_alter_start);
Datum
ctxstore_alter_start(PG_FUNCTION_ARGS)
{
	EventTriggerData *trig = trigger_data(fcinfo);
	bool		rename;
	Oid			relid = altered_table(trig->parsetree, &rename);
	MemoryContext old;

	if (before_cxt == NULL)
		before_cxt = AllocSetContextCreate(TopMemoryContext, "ctxstore alter",
										   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(before_cxt);
	before = NULL;
	if (!OidIsValid(relid))
		PG_RETURN_VOID();
	old = MemoryContextSwitchTo(before_cxt);
	before = table_info(relid, false);
	MemoryContextSwitchTo(old);
	before_lxid = MyProc->lxid;
	PG_RETURN_VOID();
}

/* ---- the difference ---- */

static void
column_type(const CxTypeInfo *ti, cx_column *out)
{
	memset(out, 0, sizeof(*out));
	out->type = ti->type;
	out->elem_type = ti->elem_type;
	out->ext_type = ti->ext_type;
	out->precision = ti->precision;
	out->scale = ti->scale;
}

static const CxColumnDef *
attribute(const CxRelInfo *ri, int i)
{
	return i < ri->natts && ri->columns[i].attname != NULL ?
		&ri->columns[i] : NULL;
}

static void
push(cx_schema_alter **alters, int *n, cx_alter_kind kind, const char *column,
	 const char *new_name, const CxTypeInfo *type)
{
	cx_schema_alter *a;

	*alters = *n == 0 ? palloc(sizeof(cx_schema_alter)) :
		repalloc(*alters, sizeof(cx_schema_alter) * (*n + 1));
	a = &(*alters)[(*n)++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	a->column = column;
	a->new_name = new_name;
	if (type != NULL)
		column_type(type, &a->type);
}

static void
diff_attribute(const CxColumnDef *b, const CxColumnDef *a, bool rename,
			   cx_schema_alter **alters, int *n)
{
	cx_column	bt;
	cx_column	at;

	if (b != NULL && a == NULL)
		push(alters, n, CX_ALTER_DROP, b->name, NULL, NULL);
	else if (b == NULL && a != NULL)
		push(alters, n, CX_ALTER_ADD, a->name, NULL, &a->type);
	if (b == NULL || a == NULL)
		return;
	if (rename && strcmp(b->name, a->name) != 0)
		push(alters, n, CX_ALTER_RENAME, b->name, a->name, NULL);
	column_type(&b->type, &bt);
	column_type(&a->type, &at);
	if (!cx_column_same_type(&bt, &at))
		push(alters, n, CX_ALTER_TYPE, b->name, NULL, &a->type);
}

/* The store changes that turn before's columns into after's. */
static cx_schema_alter *
diff_tables(const CxRelInfo *b, const CxRelInfo *a, bool rename, int *n)
{
	cx_schema_alter *alters = NULL;

	*n = 0;
	for (int i = 0; i < Max(b->natts, a->natts); i++)
		diff_attribute(attribute(b, i), attribute(a, i), rename, &alters, n);
	return alters;
}

/* ---- checks with the table's names, then the store ---- */

static void
refuse_key_change(const CxRelInfo *ri, const char *column, const char *what)
{
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("cannot %s column \"%s\" of foreign table \"%s\": it is the key of store %s",
				   what, column, ri->relname, ri->uri),
			errhint("A store's key column keeps its name and type for good; copy the rows into a new store to change it."));
}

static void
refuse_type_change(const CxRelInfo *ri, const cx_column *stored,
				   const CxTypeInfo *to)
{
	ereport(ERROR,
			errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			errmsg("cannot change the type of column \"%s\" of foreign table \"%s\" to %s",
				   stored->name, ri->relname,
				   format_type_with_typemod(to->typid, to->typmod)),
			errdetail("Store %s holds %s values in it, which cannot be read as %s.",
					  ri->uri,
					  cxfdw_column_describe(stored), cxfdw_typeinfo_describe(to)),
			errhint("Only int2 to int4 or int8, int4 to int8 and float4 to float8 keep the stored values readable; add a column of the new type and copy the values into it instead."));
}

static void
check_alter(const CxRelInfo *ri, const cx_manifest *base,
			const cx_schema_alter *a, const CxTypeInfo *to)
{
	static const char *const verbs[] = {
		[CX_ALTER_DROP] = "drop",
		[CX_ALTER_RENAME] = "rename",
		[CX_ALTER_TYPE] = "change the type of",
	};
	int			c = cx_schema_find(base->schema, a->column);

	if (a->kind == CX_ALTER_ADD || c < 0)
		return;
	if (base->key_column != NULL && strcmp(base->key_column, a->column) == 0)
		refuse_key_change(ri, a->column, verbs[a->kind]);
	if (a->kind == CX_ALTER_TYPE &&
		!cx_column_widens_to(&base->schema->columns[c], &a->type))
		refuse_type_change(ri, &base->schema->columns[c], to);
}

/* The type an attribute of after takes, for a TYPE change's messages. */
static const CxTypeInfo *
new_type(const CxRelInfo *after, const cx_schema_alter *a)
{
	for (int i = 0; i < after->natts; i++)
		if (after->columns[i].attname != NULL &&
			strcmp(after->columns[i].name, a->column) == 0)
			return &after->columns[i].type;
	return NULL;
}

static void
apply_alters(const CxRelInfo *after, const cx_schema_alter *alters, int n)
{
	CxStore    *st = cxfdw_store_open(after, CX_ACCESS_WRITE);
	const cx_manifest *base = cxfdw_store_manifest(st, 0);
	uint64_t	version;
	cx_err		err;

	/* A store never written to takes its columns from its first write. */
	if (base == NULL || base->schema == NULL)
		return;
	for (int i = 0; i < n; i++)
		check_alter(after, base, &alters[i], new_type(after, &alters[i]));
	if (cx_table_alter_schema(cxfdw_store_handle(st), alters, (uint32) n,
							  &version, &err) != CX_OK)
		cx_pg_error(&err, "could not change the columns of store %s of foreign table \"%s\"",
					after->uri, after->relname);
	cxfdw_store_forget_write_base(st);
}

PG_FUNCTION_INFO_V1(ctxstore_alter_end);
Datum
ctxstore_alter_end(PG_FUNCTION_ARGS)
{
	EventTriggerData *trig = trigger_data(fcinfo);
	bool		rename;
	Oid			relid = altered_table(trig->parsetree, &rename);
	CxRelInfo  *after;
	cx_schema_alter *alters;
	int			n;

	/* Only the end of the command whose start was seen. */
	if (!OidIsValid(relid) || before == NULL || before->relid != relid ||
		before_lxid != MyProc->lxid)
		PG_RETURN_VOID();
	after = table_info(relid, false);
	alters = diff_tables(before, after, rename, &n);
	if (n == 0)
		PG_RETURN_VOID();
	/* The same columns, with the table's options and credentials. */
	after = table_info(relid, true);
	if (after->version == 0)
		apply_alters(after, alters, n);
	PG_RETURN_VOID();
}
