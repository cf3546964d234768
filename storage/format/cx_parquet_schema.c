/*
 * cx_parquet_schema.c — the engine schema as JSON key-value metadata, and
 * the check of a file's Parquet schema against it (cx_parquet_schema.h).
 *
 * One object per column, in order:
 *   {"name": ..., "field_id": n, "type": "<cx_type_name>",
 *    ["elem_type": "<cx_type_name>",] ["pg_type": "<external type name>",]
 *    ["precision": p, "scale": s,] "required": bool}
 */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "format/cx_parquet_schema.h"
#include "format/cx_parquet_types.h"

static json_t *
column_json(const cx_column *col)
{
	/* Not json_object(): inside the server that name binds to PostgreSQL's
	 * own json_object (the SQL function), which crashes the process. */
	json_t	   *o = json_pack("{}");

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "name", json_string(col->name));
	json_object_set_new(o, "field_id", json_integer(col->field_id));
	json_object_set_new(o, "type", json_string(cx_type_name(col->type)));
	if (col->type == CX_T_LIST)
		json_object_set_new(o, "elem_type",
							json_string(cx_type_name(col->elem_type)));
	if (col->ext_type != NULL)
		json_object_set_new(o, "pg_type", json_string(col->ext_type));
	if (col->precision > 0)
	{
		json_object_set_new(o, "precision", json_integer(col->precision));
		json_object_set_new(o, "scale", json_integer(col->scale));
	}
	json_object_set_new(o, "required", json_boolean(col->required));
	return o;
}

char *
cx_pq_schema_json(const cx_schema *schema)
{
	json_t	   *a = json_array();
	char	   *out = NULL;
	bool		ok = a != NULL;

	for (uint32_t c = 0; ok && c < schema->ncolumns; c++)
		ok = json_array_append_new(a, column_json(&schema->columns[c])) == 0;
	if (ok)
		out = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(a);
	return out;
}

static int
type_by_name(const char *name)
{
	for (int t = 1; t <= CX_T_MAX; t++)
		if (strcmp(cx_type_name((cx_type) t), name) == 0)
			return t;
	return 0;
}

/* Integer member key of o in lo..hi, or -1 when absent or out of range. */
static long long
int_member(json_t *o, const char *key, long long lo, long long hi)
{
	json_t	   *v = json_object_get(o, key);
	long long	n;

	if (!json_is_integer(v))
		return -1;
	n = json_integer_value(v);
	return n < lo || n > hi ? -1 : n;
}

static const char *
add_column(cx_schema *s, json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *elem = json_string_value(json_object_get(o, "elem_type"));
	const char *pg_type = json_string_value(json_object_get(o, "pg_type"));
	json_t	   *required = json_object_get(o, "required");
	long long	field_id = int_member(o, "field_id", 1, INT32_MAX);
	long long	precision = int_member(o, "precision", 1,
									   CX_DECIMAL_PRECISION_MAX);
	long long	scale = int_member(o, "scale", 0, CX_DECIMAL_PRECISION_MAX);
	cx_column  *col;
	cx_err		err;

	if (name == NULL || type == NULL || field_id < 0 ||
		!json_is_boolean(required) ||
		(json_object_get(o, "precision") != NULL && precision < 0) ||
		(precision > 0) != (scale >= 0))
		return "a column in the schema metadata is malformed";
	if (cx_schema_add(s, name, (cx_type) type_by_name(type),
					  elem ? (cx_type) type_by_name(elem) : 0, pg_type,
					  &err) != CX_OK)
		return "the schema metadata holds an invalid column";
	col = &s->columns[s->ncolumns - 1];
	col->field_id = (int32_t) field_id;
	col->precision = precision > 0 ? (uint8_t) precision : 0;
	col->scale = precision > 0 ? (uint8_t) scale : 0;
	col->required = json_is_true(required);
	return NULL;
}

cx_schema *
cx_pq_schema_from_json(const char *json, const char **why)
{
	json_t	   *a = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
	cx_schema  *s = cx_schema_new();
	size_t		i;
	json_t	   *o;
	cx_err		err;

	*why = NULL;
	if (s == NULL)
		*why = "out of memory";
	else if (!json_is_array(a))
		*why = "the schema metadata is not a JSON array";
	else
		json_array_foreach(a, i, o)
			if (*why == NULL)
				*why = add_column(s, o);
	if (*why == NULL && cx_schema_validate(s, &err) != CX_OK)
		*why = "the schema metadata is not a valid schema";
	json_decref(a);
	if (*why == NULL)
		return s;
	cx_schema_free(s);
	return NULL;
}

static bool
logical_equal(const cx_pq_logical *a, const cx_pq_logical *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind)
	{
		case CX_PQ_LT_DECIMAL:
			return a->precision == b->precision && a->scale == b->scale;
		case CX_PQ_LT_TIME:
		case CX_PQ_LT_TIMESTAMP:
			return a->unit == b->unit &&
				a->adjusted_to_utc == b->adjusted_to_utc;
		case CX_PQ_LT_INTEGER:
			return a->bit_width == b->bit_width && a->is_signed == b->is_signed;
		default:
			return true;
	}
}

static bool
element_equal(const cx_pq_schema_element *a, const cx_pq_schema_element *b)
{
	return a->name != NULL && strcmp(a->name, b->name) == 0 &&
		a->has_type == b->has_type &&
		(!a->has_type || a->type == b->type) &&
		a->type_length == b->type_length &&
		a->has_repetition == b->has_repetition &&
		(!a->has_repetition || a->repetition == b->repetition) &&
		a->num_children == b->num_children &&
		a->has_field_id == b->has_field_id &&
		(!a->has_field_id || a->field_id == b->field_id) &&
		logical_equal(&a->logical, &b->logical);
}

bool
cx_pq_schema_matches(const cx_schema *schema,
					 const cx_pq_schema_element *els, uint32_t n)
{
	cx_pq_schema_element *want;
	uint32_t	nwant;
	bool		same;

	if (!cx_pq_schema_elements(schema, &want, &nwant))
	{
		free(want);
		return false;
	}
	same = n == nwant;
	/* the root's name is not ours to insist on */
	for (uint32_t i = 1; same && i < n; i++)
		same = element_equal(&els[i], &want[i]);
	free(want);
	return same;
}
