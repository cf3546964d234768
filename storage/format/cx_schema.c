/*
 * cx_schema.c — column types, schema building, comparison and serialisation.
 *
 * The serialised schema is embedded in fragment footers and manifests, so its
 * decoder trusts nothing: types must be known, a list's element type must not
 * itself be a list, names must be non-empty, NUL-free and unique, and the
 * external type name must be present exactly when the column (or its
 * elements) is CX_T_EXTERNAL.
 */
#include "format/cx_schema.h"

#include <stdlib.h>
#include <string.h>

/* Smallest encoded column: str16 name (>= 3 bytes), type, elem_type,
 * has_ext, field_id, precision, scale. */
#define MIN_ENCODED_COLUMN 12

const cx_type_info cx_type_infos[CX_T_MAX + 1] =
{
	[CX_T_BOOL] = {"bool", 1, true},
	[CX_T_INT16] = {"int16", 2, true},
	[CX_T_INT32] = {"int32", 4, true},
	[CX_T_INT64] = {"int64", 8, true},
	[CX_T_FLOAT32] = {"float32", 4, true},
	[CX_T_FLOAT64] = {"float64", 8, true},
	[CX_T_DATE] = {"date", 4, true},
	[CX_T_TIME] = {"time", 8, true},
	[CX_T_TIMESTAMP] = {"timestamp", 8, true},
	[CX_T_TIMESTAMPTZ] = {"timestamptz", 8, true},
	/* PostgreSQL orders uuids by memcmp, which is what the stats use. */
	[CX_T_UUID] = {"uuid", 16, true},
	/* Interval ordering normalises days and months; no stats. */
	[CX_T_INTERVAL] = {"interval", 16, false},
	/* Byte-wise order: exact for bytea and C collation, and still a valid
	 * bound for equality under any deterministic collation. */
	[CX_T_STRING] = {"string", 0, true},
	[CX_T_BINARY] = {"binary", 0, true},
	[CX_T_JSON] = {"json", 0, false},
	[CX_T_JSONB] = {"jsonb", 0, false},
	/* Canonical numeric text does not sort numerically; no stats. */
	[CX_T_NUMERIC] = {"numeric", 0, false},
	[CX_T_EXTERNAL] = {"external", 0, false},
	[CX_T_LIST] = {"list", 0, false},
};

const char *
cx_type_name(cx_type t)
{
	return cx_type_is_valid(t) ? cx_type_infos[t].name : "invalid";
}

/* Checks one column's type triple; returns a reason or NULL if valid. */
static const char *
column_type_problem(int type, int elem_type, const char *ext_type)
{
	bool		external;

	if (!cx_type_is_valid(type))
		return "unknown type";
	if (type == CX_T_LIST)
	{
		if (!cx_type_is_valid(elem_type))
			return "list has an unknown element type";
		if (elem_type == CX_T_LIST)
			return "list elements cannot be lists";
	}
	else if (elem_type != 0)
		return "element type given for a non-list column";
	external = type == CX_T_EXTERNAL ||
		(type == CX_T_LIST && elem_type == CX_T_EXTERNAL);
	if (external && (ext_type == NULL || ext_type[0] == '\0'))
		return "external type without a type name";
	if (!external && ext_type != NULL)
		return "type name given for a non-external column";
	if (ext_type != NULL && strlen(ext_type) > UINT16_MAX)
		return "type name too long";
	return NULL;
}

static const char *
decimal_problem(const cx_column *c)
{
	if (c->precision == 0)
		return c->scale == 0 ? NULL : "scale given without a precision";
	if (c->type != CX_T_NUMERIC)
		return "precision given for a non-numeric column";
	if (c->precision > CX_DECIMAL_PRECISION_MAX)
		return "decimal precision too large";
	if (c->scale > c->precision)
		return "decimal scale larger than its precision";
	return NULL;
}

static bool
field_id_is_valid(int32_t id)
{
	return (id >= 1 && id <= CX_FIELD_ID_USER_MAX) ||
		id == CX_FIELD_ID_COMMIT_TS || id == CX_FIELD_ID_TOMBSTONE ||
		id == CX_FIELD_ID_DELETE_FILE_PATH || id == CX_FIELD_ID_DELETE_POS;
}

static const char *
column_problem(const cx_schema *s, uint32_t upto, const cx_column *c)
{
	const char *why;

	if (c->name == NULL || c->name[0] == '\0')
		return "empty column name";
	if (strlen(c->name) > UINT16_MAX)
		return "column name too long";
	if (!field_id_is_valid(c->field_id))
		return "invalid field id";
	for (uint32_t i = 0; i < upto; i++)
	{
		if (strcmp(s->columns[i].name, c->name) == 0)
			return "duplicate column name";
		if (s->columns[i].field_id == c->field_id)
			return "duplicate field id";
	}
	if ((why = decimal_problem(c)) != NULL)
		return why;
	return column_type_problem(c->type, c->elem_type, c->ext_type);
}

cx_code
cx_schema_validate(const cx_schema *s, cx_err *err)
{
	for (uint32_t i = 0; i < s->ncolumns; i++)
	{
		const char *why = column_problem(s, i, &s->columns[i]);

		if (why != NULL)
			return cx_err_set(err, CX_ERR_INVALID, "column %u \"%s\": %s", i,
							  s->columns[i].name ? s->columns[i].name : "",
							  why);
	}
	return CX_OK;
}

cx_schema *
cx_schema_new(void)
{
	return calloc(1, sizeof(cx_schema));
}

static void
column_free(cx_column *c)
{
	free(c->name);
	free(c->ext_type);
}

/* Appends a column whose strings the schema now owns. */
static bool
schema_push(cx_schema *s, const cx_column *c)
{
	cx_column  *cols;

	if (s->ncolumns == UINT32_MAX)
		return false;
	cols = realloc(s->columns, sizeof(cx_column) * ((size_t) s->ncolumns + 1));
	if (cols == NULL)
		return false;
	s->columns = cols;
	s->columns[s->ncolumns++] = *c;
	return true;
}

int32_t
cx_schema_max_user_field_id(const cx_schema *s)
{
	int32_t		max = 0;

	for (uint32_t i = 0; i < s->ncolumns; i++)
		if (s->columns[i].field_id <= CX_FIELD_ID_USER_MAX &&
			s->columns[i].field_id > max)
			max = s->columns[i].field_id;
	return max;
}

cx_code
cx_schema_add(cx_schema *s, const char *name, cx_type type,
			  cx_type elem_type, const char *ext_type, cx_err *err)
{
	cx_column	c = {.name = (char *) name, .type = type,
		.elem_type = elem_type, .ext_type = (char *) ext_type,
	.field_id = cx_schema_max_user_field_id(s) + 1};
	const char *why = column_problem(s, s->ncolumns, &c);

	if (why != NULL)
		return cx_err_set(err, CX_ERR_INVALID, "column \"%s\": %s",
						  name ? name : "", why);
	c.name = cx_strdup(name);
	c.ext_type = ext_type ? cx_strdup(ext_type) : NULL;
	if (c.name == NULL || (ext_type && c.ext_type == NULL) ||
		!schema_push(s, &c))
	{
		column_free(&c);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory adding column \"%s\"",
						  name);
	}
	return CX_OK;
}

cx_schema *
cx_schema_clone(const cx_schema *s)
{
	cx_schema  *copy = cx_schema_new();

	if (copy == NULL)
		return NULL;
	for (uint32_t i = 0; i < s->ncolumns; i++)
	{
		const cx_column *src = &s->columns[i];
		cx_column	c = *src;

		c.name = cx_strdup(src->name);
		c.ext_type = src->ext_type ? cx_strdup(src->ext_type) : NULL;
		if (c.name == NULL || (src->ext_type && c.ext_type == NULL) ||
			!schema_push(copy, &c))
		{
			column_free(&c);
			cx_schema_free(copy);
			return NULL;
		}
	}
	return copy;
}

void
cx_schema_free(cx_schema *s)
{
	if (s == NULL)
		return;
	for (uint32_t i = 0; i < s->ncolumns; i++)
		column_free(&s->columns[i]);
	free(s->columns);
	free(s);
}

int
cx_schema_find(const cx_schema *s, const char *name)
{
	for (uint32_t i = 0; i < s->ncolumns; i++)
		if (strcmp(s->columns[i].name, name) == 0)
			return (int) i;
	return -1;
}

int
cx_schema_find_field(const cx_schema *s, int32_t field_id)
{
	for (uint32_t i = 0; i < s->ncolumns; i++)
		if (s->columns[i].field_id == field_id)
			return (int) i;
	return -1;
}

static bool
str_equal_or_both_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

bool
cx_column_same_type(const cx_column *a, const cx_column *b)
{
	return a->type == b->type && a->elem_type == b->elem_type &&
		a->precision == b->precision && a->scale == b->scale &&
		str_equal_or_both_null(a->ext_type, b->ext_type);
}

bool
cx_schema_equal(const cx_schema *a, const cx_schema *b)
{
	if (a->ncolumns != b->ncolumns)
		return false;
	for (uint32_t i = 0; i < a->ncolumns; i++)
		if (strcmp(a->columns[i].name, b->columns[i].name) != 0 ||
			a->columns[i].field_id != b->columns[i].field_id ||
			!cx_column_same_type(&a->columns[i], &b->columns[i]))
			return false;
	return true;
}

void
cx_schema_encode(const cx_schema *s, cx_buf *out)
{
	cx_buf_put_u32(out, s->ncolumns);
	for (uint32_t i = 0; i < s->ncolumns; i++)
	{
		const cx_column *c = &s->columns[i];

		cx_buf_put_str16(out, c->name);
		cx_buf_put_u8(out, c->type);
		cx_buf_put_u8(out, c->elem_type);
		cx_buf_put_u8(out, c->ext_type != NULL);
		if (c->ext_type != NULL)
			cx_buf_put_str16(out, c->ext_type);
		cx_buf_put_u32(out, (uint32_t) c->field_id);
		cx_buf_put_u8(out, c->precision);
		cx_buf_put_u8(out, c->scale);
	}
}

static bool
decode_column(cx_rd *r, cx_column *c)
{
	uint8_t		has_ext;

	memset(c, 0, sizeof(*c));
	c->name = cx_rd_str16(r);
	c->type = cx_rd_u8(r);
	c->elem_type = cx_rd_u8(r);
	has_ext = cx_rd_u8(r);
	if (has_ext > 1)
		r->bad = true;
	if (has_ext == 1 && cx_rd_ok(r))
		c->ext_type = cx_rd_str16(r);
	c->field_id = (int32_t) cx_rd_u32(r);
	c->precision = cx_rd_u8(r);
	c->scale = cx_rd_u8(r);
	return cx_rd_ok(r);
}

cx_schema *
cx_schema_decode(cx_rd *r)
{
	uint32_t	n = cx_rd_u32(r);
	cx_schema  *s;

	/* Bound the count by the bytes left before allocating anything. */
	if (!cx_rd_ok(r) || n > cx_rd_left(r) / MIN_ENCODED_COLUMN)
	{
		r->bad = true;
		return NULL;
	}
	s = cx_schema_new();
	if (s == NULL)
	{
		r->bad = true;
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		cx_column	c;

		if (!decode_column(r, &c) || column_problem(s, i, &c) != NULL ||
			!schema_push(s, &c))
		{
			column_free(&c);
			cx_schema_free(s);
			r->bad = true;
			return NULL;
		}
	}
	return s;
}
