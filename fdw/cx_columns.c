/*
 * cx_columns.c — a foreign table's columns against a store's schema.
 *
 * A store has one schema, fixed by its first write: the columns of the table
 * that wrote first, named by their column_name option or attribute name.
 * Every table bound to the store later is matched by name.  A table column the
 * store lacks, or one whose type maps to a different engine type, is an error
 * whenever the table is read or written, never a silent reinterpretation; a
 * store column the table lacks is simply not read, and written as NULL.
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"

/* The schema a first write gives an empty store; caller frees it with
 * cx_schema_free(). */
cx_schema *
cxfdw_schema_from_rel(const CxRelInfo *ri)
{
	cx_schema  *schema = cx_schema_new();
	cx_err		err;

	if (schema == NULL)
		ereport(ERROR, errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory"));
	for (int i = 0; i < ri->natts; i++)
	{
		const CxColumnDef *col = &ri->columns[i];

		if (col->attname == NULL)
			continue;
		if (cx_schema_add(schema, col->name, col->type.type, col->type.elem_type,
						  col->type.ext_type, &err) != CX_OK)
		{
			cx_schema_free(schema);
			cx_pg_error(&err, "cannot create a store schema from foreign table \"%s\"",
						ri->relname);
		}
		schema->columns[schema->ncolumns - 1].precision = col->type.precision;
		schema->columns[schema->ncolumns - 1].scale = col->type.scale;
	}
	return schema;
}

static char *
schema_column_names(const cx_schema *schema)
{
	StringInfoData names;

	initStringInfo(&names);
	for (uint32 c = 0; c < schema->ncolumns; c++)
		appendStringInfo(&names, "%s%s", c > 0 ? ", " : "",
						 quote_identifier(schema->columns[c].name));
	return names.data;
}

static void
column_missing(const CxRelInfo *ri, const CxColumnDef *col,
			   const cx_schema *schema)
{
	ereport(ERROR,
			errcode(ERRCODE_UNDEFINED_COLUMN),
			errmsg("column \"%s\" of foreign table \"%s\" does not exist in store %s",
				   col->attname, ri->relname, ri->uri),
			errdetail("No store column is named \"%s\"; the store's columns are: %s.",
					  col->name, schema_column_names(schema)),
			errhint("Give the column the option column_name to name a store column, or drop it from the foreign table."));
}

static void
column_type_differs(const CxRelInfo *ri, const CxColumnDef *col,
					const cx_column *stored)
{
	ereport(ERROR,
			errcode(ERRCODE_DATATYPE_MISMATCH),
			errmsg("column \"%s\" of foreign table \"%s\" does not match the type of its store column",
				   col->attname, ri->relname),
			errdetail("Store column \"%s\" in %s holds %s values; type %s is stored as %s.",
					  stored->name, ri->uri,
					  cxfdw_column_describe(stored),
					  format_type_with_typemod(col->type.typid, col->type.typmod),
					  cxfdw_typeinfo_describe(&col->type)));
}

/*
 * The table's columns as the engine's fit rule sees them, one per attribute
 * (a dropped attribute's has no name).
 */
static cx_column *
table_columns(const CxRelInfo *ri)
{
	cx_column  *columns = palloc0(sizeof(cx_column) * Max(ri->natts, 1));

	for (int i = 0; i < ri->natts; i++)
	{
		const CxColumnDef *col = &ri->columns[i];

		if (col->attname == NULL)
			continue;
		columns[i].name = col->name;
		columns[i].type = col->type.type;
		columns[i].elem_type = col->type.elem_type;
		columns[i].ext_type = col->type.ext_type;
		columns[i].precision = col->type.precision;
		columns[i].scale = col->type.scale;
	}
	return columns;
}

bool
cxfdw_table_fits(const CxRelInfo *ri, const char *key_column, bool unique_key,
				 const cx_manifest *base, cx_misfit *why)
{
	cx_table_decl table = {table_columns(ri), ri->natts, key_column,
	unique_key};
	bool		fits = cx_table_fits(base, &table, why);

	pfree((void *) table.columns);
	return fits;
}

/* Raises unless every column of the table is a column of schema of the
 * same type. */
static void
check_columns_fit(const CxRelInfo *ri, const cx_schema *schema)
{
	cx_manifest store = {.schema = (cx_schema *) schema};
	cx_misfit	why;

	if (cxfdw_table_fits(ri, NULL, false, &store, &why))
		return;
	if (why.kind == CX_MISFIT_COLUMN)
		column_missing(ri, &ri->columns[why.column], schema);
	column_type_differs(ri, &ri->columns[why.column],
						&schema->columns[why.store_column]);
}

/* Matches every column of the table with a column of schema, or raises. */
void
cxfdw_bind(const CxRelInfo *ri, const cx_schema *schema, CxBinding *b)
{
	b->schema = schema;
	b->att_col = palloc(sizeof(int) * Max(ri->natts, 1));
	b->col_att = palloc(sizeof(int) * Max(schema->ncolumns, 1));
	for (uint32 c = 0; c < schema->ncolumns; c++)
		b->col_att[c] = -1;

	check_columns_fit(ri, schema);
	for (int i = 0; i < ri->natts; i++)
	{
		const CxColumnDef *col = &ri->columns[i];
		int			c;

		b->att_col[i] = -1;
		if (col->attname == NULL)
			continue;
		c = cx_schema_find(schema, col->name);
		b->att_col[i] = c;
		b->col_att[c] = i;
	}
}
