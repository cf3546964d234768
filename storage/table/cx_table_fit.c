/*
 * cx_table_fit.c — the one rule for whether a table fits a store.
 *
 * A store records its schema with its first write and its key with its first
 * writer (cx_manifest_set_key); every table bound to the store later must
 * agree with both.  The PostgreSQL side checks it before a transaction
 * buffers rows (to report it with the table's names), the shard writer again
 * when it registers and records a schema: both ask this file.
 */
#include <string.h>

#include "table/cx_manifest.h"

static void
misfit(cx_misfit *out, cx_misfit_kind kind, int column, int store_column)
{
	out->kind = kind;
	out->column = column;
	out->store_column = store_column;
}

static bool
columns_have(const cx_column *columns, uint32_t ncolumns, const char *name)
{
	for (uint32_t i = 0; i < ncolumns; i++)
		if (columns[i].name != NULL && strcmp(columns[i].name, name) == 0)
			return true;
	return false;
}

/* The key names a column of the store: of its schema, or of the table's
 * columns while the store has none (the table's become the store's). */
static bool
key_is_a_column(const cx_manifest *base, const cx_table_decl *t)
{
	if (base != NULL && base->schema != NULL)
		return cx_schema_find(base->schema, t->key_column) >= 0;
	return t->columns == NULL ||
		columns_have(t->columns, t->ncolumns, t->key_column);
}

static bool
key_agrees(const cx_manifest *base, const cx_table_decl *t)
{
	return base == NULL || base->key_column == NULL ||
		(strcmp(base->key_column, t->key_column) == 0 &&
		 base->unique_key == t->unique_key);
}

/* Every table column is a store column of the same type. */
static void
check_columns(const cx_schema *store, const cx_table_decl *t, cx_misfit *out)
{
	for (uint32_t i = 0; i < t->ncolumns; i++)
	{
		int			c;

		if (t->columns[i].name == NULL)
			continue;
		c = cx_schema_find(store, t->columns[i].name);
		if (c < 0 || !cx_column_same_type(&store->columns[c], &t->columns[i]))
		{
			misfit(out, c < 0 ? CX_MISFIT_COLUMN : CX_MISFIT_COLUMN_TYPE,
				   (int) i, c);
			return;
		}
	}
}

bool
cx_table_fits(const cx_manifest *base, const cx_table_decl *t, cx_misfit *out)
{
	misfit(out, CX_FITS, -1, -1);
	if (t->key_column != NULL && !key_is_a_column(base, t))
		misfit(out, CX_MISFIT_KEY_COLUMN, -1, -1);
	else if (t->key_column != NULL && !key_agrees(base, t))
		misfit(out, CX_MISFIT_KEY, -1, -1);
	else if (t->columns != NULL && base != NULL && base->schema != NULL)
		check_columns(base->schema, t, out);
	return out->kind == CX_FITS;
}

cx_code
cx_table_check_fit(const cx_manifest *base, const cx_table_decl *t,
				   cx_err *err)
{
	cx_misfit	why;

	if (cx_table_fits(base, t, &why))
		return CX_OK;
	switch (why.kind)
	{
		case CX_MISFIT_KEY_COLUMN:
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "key column \"%.64s\" is not a column of the table",
							  t->key_column);
		case CX_MISFIT_KEY:
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "the store's key is \"%.64s\" (%s) but the table declares \"%.64s\" (%s); the key cannot change once rows were written",
							  base->key_column,
							  base->unique_key ? "unique" : "not unique",
							  t->key_column,
							  t->unique_key ? "unique" : "not unique");
		case CX_MISFIT_COLUMN:
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "column \"%.64s\" is not a column of the store",
							  t->columns[why.column].name);
		default:
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "column \"%.64s\" holds %s values in the store, not %s",
							  t->columns[why.column].name,
							  cx_type_name(base->schema->columns[why.store_column].type),
							  cx_type_name(t->columns[why.column].type));
	}
}
