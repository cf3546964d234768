/*
 * cx_schema_change.c — changing a store's columns (ctxstore/table.h has the
 * rules): one "alter schema" base commit per call.
 *
 * The changes are applied to the newest base on every attempt (cx_commit's
 * rebase), so a race with another committer (a merge, another table's
 * change) is settled the usual way, and a change that became a no-op or
 * impossible meanwhile is seen as such.
 */
#include <stdlib.h>
#include <string.h>

#include "table/cx_commit.h"
#include "table/cx_key_index.h"
#include "table/cx_row_key.h"

bool
cx_column_widens_to(const cx_column *from, const cx_column *to)
{
	if (cx_column_same_type(from, to))
		return true;
	switch (from->type)
	{
		case CX_T_INT16:
			return to->type == CX_T_INT32 || to->type == CX_T_INT64;
		case CX_T_INT32:
			return to->type == CX_T_INT64;
		case CX_T_FLOAT32:
			return to->type == CX_T_FLOAT64;
		default:
			return false;
	}
}

typedef struct alter_state
{
	const cx_schema_alter *alters;
	uint32_t	nalters;
	bool		changed;		/* by the last attempt */
} alter_state;

static cx_code
column_absent(const char *column, cx_err *err)
{
	return cx_err_set(err, CX_ERR_SCHEMA,
					  "column \"%.64s\" is not a column of the store", column);
}

static cx_code
key_change(const char *key, const char *what, cx_err *err)
{
	return cx_err_set(err, CX_ERR_SCHEMA,
					  "column \"%.64s\" is the store's key and cannot be %s",
					  key, what);
}

static bool
is_key(const cx_manifest *m, const char *column)
{
	return m->key_column != NULL && strcmp(m->key_column, column) == 0;
}

/* Copies the type of a->type into c (name and field id kept). */
static cx_code
set_type(cx_column *c, const cx_column *type, cx_err *err)
{
	char	   *ext = NULL;

	if (type->ext_type != NULL && (ext = cx_strdup(type->ext_type)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "changing a column type: out of memory");
	free(c->ext_type);
	c->ext_type = ext;
	c->type = type->type;
	c->elem_type = type->elem_type;
	c->precision = type->precision;
	c->scale = type->scale;
	return CX_OK;
}

static cx_code
add_column(cx_manifest *m, cx_schema *s, const cx_schema_alter *a,
		   bool *changed, cx_err *err)
{
	int			i = cx_schema_find(s, a->column);
	cx_column  *c;

	if (i >= 0)
	{
		if (cx_column_same_type(&s->columns[i], &a->type))
			return CX_OK;
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "the store already has a column \"%.64s\" of type %s",
						  a->column, cx_type_name(s->columns[i].type));
	}
	if (strncmp(a->column, CX_HIDDEN_PREFIX, strlen(CX_HIDDEN_PREFIX)) == 0)
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "column \"%.64s\": names starting with %s are reserved",
						  a->column, CX_HIDDEN_PREFIX);
	if (m->last_field_id >= CX_FIELD_ID_USER_MAX)
		return cx_err_set(err, CX_ERR_SCHEMA, "the store has used every field id");
	if (cx_schema_add(s, a->column, (cx_type) a->type.type,
					  (cx_type) a->type.elem_type, a->type.ext_type,
					  err) != CX_OK)
		return err->code;
	/* cx_schema_add gave it one more than the largest id in s, which an
	 * earlier ADD of the same change may hold; a dropped column's id may be
	 * larger still. */
	c = &s->columns[s->ncolumns - 1];
	if (c->field_id <= m->last_field_id)
		c->field_id = m->last_field_id + 1;
	c->precision = a->type.precision;
	c->scale = a->type.scale;
	*changed = true;
	return cx_schema_validate(s, err);
}

static cx_code
drop_column(cx_manifest *m, cx_schema *s, const cx_schema_alter *a,
			bool *changed, cx_err *err)
{
	int			i = cx_schema_find(s, a->column);

	if (i < 0)
		return CX_OK;
	if (is_key(m, a->column))
		return key_change(a->column, "dropped", err);
	free(s->columns[i].name);
	free(s->columns[i].ext_type);
	memmove(&s->columns[i], &s->columns[i + 1],
			sizeof(cx_column) * (s->ncolumns - (uint32_t) i - 1));
	s->ncolumns--;
	*changed = true;
	return CX_OK;
}

static cx_code
rename_column(cx_manifest *m, cx_schema *s, const cx_schema_alter *a,
			  bool *changed, cx_err *err)
{
	int			i = cx_schema_find(s, a->column);
	char	   *name;

	if (i < 0 && cx_schema_find(s, a->new_name) >= 0)
		return CX_OK;
	if (i < 0)
		return column_absent(a->column, err);
	if (strcmp(a->column, a->new_name) == 0)
		return CX_OK;
	if (is_key(m, a->column))
		return key_change(a->column, "renamed", err);
	if (cx_schema_find(s, a->new_name) >= 0)
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "the store already has a column \"%.64s\"", a->new_name);
	if ((name = cx_strdup(a->new_name)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "renaming a column: out of memory");
	free(s->columns[i].name);
	s->columns[i].name = name;
	*changed = true;
	return cx_schema_validate(s, err);
}

static cx_code
retype_column(cx_manifest *m, cx_schema *s, const cx_schema_alter *a,
			  bool *changed, cx_err *err)
{
	int			i = cx_schema_find(s, a->column);
	cx_column  *c;

	if (i < 0)
		return column_absent(a->column, err);
	c = &s->columns[i];
	if (cx_column_same_type(c, &a->type))
		return CX_OK;
	if (is_key(m, a->column))
		return key_change(a->column, "given another type", err);
	if (!cx_column_widens_to(c, &a->type))
		return cx_err_set(err, CX_ERR_SCHEMA,
						  "column \"%.64s\" holds %s values, which cannot be read as %s",
						  a->column, cx_type_name(c->type),
						  cx_type_name(a->type.type));
	*changed = true;
	return set_type(c, &a->type, err);
}

static cx_code
apply_alter(cx_manifest *m, cx_schema *s, const cx_schema_alter *a,
			bool *changed, cx_err *err)
{
	switch (a->kind)
	{
		case CX_ALTER_ADD:
			return add_column(m, s, a, changed, err);
		case CX_ALTER_DROP:
			return drop_column(m, s, a, changed, err);
		case CX_ALTER_RENAME:
			return rename_column(m, s, a, changed, err);
		case CX_ALTER_TYPE:
			return retype_column(m, s, a, changed, err);
	}
	return cx_err_set(err, CX_ERR_INVALID, "unknown schema change %d", (int) a->kind);
}

/*
 * Key index segments name their column by position in the schema and hold
 * its values in the stored type.  A DROP moves the columns after it and a
 * widening changes the values' width, so an index whose positions no longer
 * hold the same field ids of the same types is removed (lookups fall back to
 * statistics until the maintenance worker or create_id_index builds it
 * again, reading the old fragments widened).
 */
static cx_code
keep_index_valid(cx_manifest *next, const cx_schema *old,
				 const cx_schema *new, cx_err *err)
{
	cx_keyindex ix = {0};
	cx_keyindex none = {0};
	bool		moved = false;

	if (cx_keyindex_load(next, &ix, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < ix.n && !moved; i++)
	{
		uint32_t	c = ix.segs[i].column;

		moved = c >= new->ncolumns || c >= old->ncolumns ||
			old->columns[c].field_id != new->columns[c].field_id ||
			!cx_column_same_type(&old->columns[c], &new->columns[c]);
	}
	cx_keyindex_free(&ix);
	return moved ? cx_keyindex_store(next, &none, err) : CX_OK;
}

/* Applies every change to a copy of next's schema, then records it. */
static cx_code
alter_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			 cx_err *err)
{
	alter_state *st = arg;
	cx_schema  *s;
	cx_code		rc = CX_OK;

	(void) base;
	st->changed = false;
	if (next->schema == NULL)
		return CX_OK;
	if ((s = cx_schema_clone(next->schema)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "copying the store schema: out of memory");
	for (uint32_t i = 0; i < st->nalters && rc == CX_OK; i++)
		rc = apply_alter(next, s, &st->alters[i], &st->changed, err);
	if (rc == CX_OK && st->changed)
		rc = keep_index_valid(next, next->schema, s, err);
	if (rc == CX_OK && st->changed)
		rc = cx_manifest_set_schema(next, s, err);
	cx_schema_free(s);
	return rc;
}

cx_code
cx_table_alter_schema(cx_objstore *s, const cx_schema_alter *alters,
					  uint32_t nalters, uint64_t *version, cx_err *err)
{
	alter_state st = {alters, nalters, false};
	cx_manifest *base;
	cx_manifest *trial = NULL;
	cx_code		rc;

	*version = 0;
	/* A dry run on the newest base first: no version for a no-op. */
	if (cx_manifest_load_latest(s, &base, err) != CX_OK)
		return err->code;
	if (base != NULL && (trial = cx_manifest_clone(base)) == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "copying the base manifest: out of memory");
	else
		rc = trial != NULL ? alter_rebase(&st, base, trial, err) : CX_OK;
	cx_manifest_free(trial);
	cx_manifest_free(base);
	if (rc == CX_OK && st.changed)
		rc = cx_commit(s, "alter schema", alter_rebase, &st, NULL, version,
					   err);
	if (rc != CX_OK)
		return cx_err_prefix(err, "changing the columns of store %s", s->uri);
	return CX_OK;
}
