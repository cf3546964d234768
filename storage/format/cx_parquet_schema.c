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
#include "util/cx_thread_cache.h"

/*
 * Each thread remembers its last conversion in each direction: the writer
 * encodes the same generation schema for every seal's footer, and a reader
 * decodes the same JSON from every fragment footer of a store (a writer
 * reopening a store reads the footer of each unmerged generation).  Both
 * conversions are pure, so the remembered output is what converting again
 * would give; decoding the JSON with jansson was 7% of the writer worker's
 * CPU when it reopened stores, encoding it 5% when it sealed.
 */
typedef struct schema_memo
{
	char	   *json;
	cx_schema  *schema;
} schema_memo;

static void
memo_free(void *p)
{
	schema_memo *m = p;

	free(m->json);
	cx_schema_free(m->schema);
	free(m);
}

static const schema_memo *
memo_of(cx_thread_cache_kind kind)
{
	cx_thread_cache *slot = cx_thread_cache_get(kind);

	return slot != NULL ? slot->p : NULL;
}

/* Makes json and schema (taken over, either may be NULL: then nothing is
 * remembered) the thread's memo of kind. */
static void
memo_keep(cx_thread_cache_kind kind, char *json, cx_schema *schema)
{
	cx_thread_cache *slot = cx_thread_cache_get(kind);
	schema_memo *m = NULL;

	if (slot != NULL && json != NULL && schema != NULL &&
		(m = malloc(sizeof(schema_memo))) != NULL)
	{
		cx_thread_cache_clear(slot);
		m->json = json;
		m->schema = schema;
		slot->p = m;
		slot->free_fn = memo_free;
		return;
	}
	free(json);
	cx_schema_free(schema);
}

/* Whether a and b have the same JSON: every member it holds is equal. */
static bool
same_json(const cx_schema *a, const cx_schema *b)
{
	if (!cx_schema_equal(a, b))
		return false;
	for (uint32_t c = 0; c < a->ncolumns; c++)
		if (a->columns[c].required != b->columns[c].required)
			return false;
	return true;
}

/*
 * Never jansson's json_object(): inside a PostgreSQL backend that name
 * resolves to PostgreSQL's own SQL function json_object() (the executable's
 * symbols come first), so objects are made with json_pack().
 */
static json_t *
column_json(const cx_column *col)
{
	json_t	   *o = json_pack("{s:s, s:i, s:s}", "name", col->name,
							  "field_id", (int) col->field_id,
							  "type", cx_type_name(col->type));

	if (o == NULL)
		return NULL;
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

static char *
encode_json(const cx_schema *schema)
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

char *
cx_pq_schema_json(const cx_schema *schema)
{
	const schema_memo *m = memo_of(CX_THREAD_SCHEMA_TO_JSON);
	char	   *out;

	if (m != NULL && same_json(m->schema, schema))
		return cx_strdup(m->json);
	out = encode_json(schema);
	if (out != NULL)
		memo_keep(CX_THREAD_SCHEMA_TO_JSON, cx_strdup(out),
				  cx_schema_clone(schema));
	return out;
}

static cx_schema *
decode_json(const char *json, const char **why)
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

cx_schema *
cx_pq_schema_from_json(const char *json, const char **why)
{
	const schema_memo *m = memo_of(CX_THREAD_SCHEMA_FROM_JSON);
	cx_schema  *s;

	if (m != NULL && strcmp(m->json, json) == 0)
	{
		s = cx_schema_clone(m->schema);
		*why = s == NULL ? "out of memory" : NULL;
		return s;
	}
	s = decode_json(json, why);
	if (s != NULL)
		memo_keep(CX_THREAD_SCHEMA_FROM_JSON, cx_strdup(json),
				  cx_schema_clone(s));
	return s;
}
