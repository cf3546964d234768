/*
 * cx_manifest_schema.c — the schema a base manifest records and its history.
 *
 * A store's schema changes only by base commits (cx_schema_change.c), each
 * of which gives it the next schema id and keeps the schema it replaces in
 * the history, so that external metadata (Iceberg's schema list) can be
 * derived from any single version.  Fragments carry their own schema and
 * are read by field id, so the history is never needed to read them.
 */
#include <stdlib.h>
#include <string.h>

#include "table/cx_manifest.h"

/* Smallest encoded history entry: schema id, then an empty schema. */
#define MIN_OLD_SCHEMA_LEN (4 + 4)

static bool
push_old_schema(cx_manifest *m, uint32_t schema_id, cx_schema *s)
{
	cx_schema_version *v = realloc(m->old_schemas,
								   sizeof(*v) * ((size_t) m->nold_schemas + 1));

	if (v == NULL)
		return false;
	m->old_schemas = v;
	v[m->nold_schemas].schema_id = schema_id;
	v[m->nold_schemas].schema = s;
	m->nold_schemas++;
	return true;
}

cx_code
cx_manifest_set_schema(cx_manifest *m, const cx_schema *s, cx_err *err)
{
	cx_schema  *copy = cx_schema_clone(s);
	int32_t		max_id = cx_schema_max_user_field_id(s);

	if (copy == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "copying schema: out of memory");
	if (m->schema != NULL && !push_old_schema(m, m->schema_id, m->schema))
	{
		cx_schema_free(copy);
		return cx_err_set(err, CX_ERR_NOMEM, "keeping the schema history: out of memory");
	}
	m->schema = copy;
	m->schema_id++;
	if (max_id > m->last_field_id)
		m->last_field_id = max_id;
	return CX_OK;
}

const cx_schema *
cx_manifest_schema_by_id(const cx_manifest *m, uint32_t schema_id)
{
	if (m->schema != NULL && schema_id == m->schema_id)
		return m->schema;
	for (uint32_t i = 0; i < m->nold_schemas; i++)
		if (m->old_schemas[i].schema_id == schema_id)
			return m->old_schemas[i].schema;
	return NULL;
}

bool
cx_manifest_had_schema(const cx_manifest *m, const cx_schema *s)
{
	if (m->schema != NULL && cx_schema_equal(m->schema, s))
		return true;
	for (uint32_t i = 0; i < m->nold_schemas; i++)
		if (cx_schema_equal(m->old_schemas[i].schema, s))
			return true;
	return false;
}

bool
cx_manifest_clone_schemas(cx_manifest *c, const cx_manifest *m)
{
	c->schema_id = m->schema_id;
	c->last_field_id = m->last_field_id;
	if (m->schema != NULL && (c->schema = cx_schema_clone(m->schema)) == NULL)
		return false;
	for (uint32_t i = 0; i < m->nold_schemas; i++)
	{
		cx_schema  *s = cx_schema_clone(m->old_schemas[i].schema);

		if (s == NULL || !push_old_schema(c, m->old_schemas[i].schema_id, s))
		{
			cx_schema_free(s);
			return false;
		}
	}
	return true;
}

void
cx_manifest_free_schemas(cx_manifest *m)
{
	cx_schema_free(m->schema);
	for (uint32_t i = 0; i < m->nold_schemas; i++)
		cx_schema_free(m->old_schemas[i].schema);
	free(m->old_schemas);
}

void
cx_manifest_encode_schemas(const cx_manifest *m, cx_buf *out)
{
	cx_buf_put_u8(out, m->schema != NULL);
	if (m->schema != NULL)
		cx_schema_encode(m->schema, out);
	cx_buf_put_u32(out, m->schema_id);
	cx_buf_put_u32(out, (uint32_t) m->last_field_id);
	cx_buf_put_u32(out, m->nold_schemas);
	for (uint32_t i = 0; i < m->nold_schemas; i++)
	{
		cx_buf_put_u32(out, m->old_schemas[i].schema_id);
		cx_schema_encode(m->old_schemas[i].schema, out);
	}
}

/* The history: ids strictly ascending and below the current one. */
static bool
decode_history(cx_rd *r, cx_manifest *m)
{
	uint32_t	n = cx_rd_u32(r);

	if (!cx_rd_ok(r) || n > cx_rd_left(r) / MIN_OLD_SCHEMA_LEN)
	{
		r->bad = true;
		return true;
	}
	for (uint32_t i = 0; i < n && cx_rd_ok(r); i++)
	{
		uint32_t	id = cx_rd_u32(r);
		cx_schema  *s = cx_rd_ok(r) ? cx_schema_decode(r) : NULL;

		if (s == NULL || id >= m->schema_id ||
			(i > 0 && id <= m->old_schemas[i - 1].schema_id) ||
			cx_schema_max_user_field_id(s) > m->last_field_id)
		{
			cx_schema_free(s);
			r->bad = true;
			return true;
		}
		if (!push_old_schema(m, id, s))
		{
			cx_schema_free(s);
			return false;
		}
	}
	return true;
}

/* Malformed input marks r bad; false only when memory runs out. */
bool
cx_manifest_decode_schemas(cx_rd *r, uint16_t format, cx_manifest *m)
{
	uint8_t		has_schema = cx_rd_u8(r);

	if (has_schema > 1)
		r->bad = true;
	/* cx_schema_decode cannot tell OOM from corruption; call it corrupt. */
	if (has_schema == 1 && cx_rd_ok(r))
		m->schema = cx_schema_decode(r);
	if (!cx_rd_ok(r))
		return true;
	if (format < 3)
	{
		m->schema_id = m->schema != NULL ? 1 : 0;
		m->last_field_id = m->schema != NULL ? cx_schema_max_user_field_id(m->schema) : 0;
		return true;
	}
	m->schema_id = cx_rd_u32(r);
	m->last_field_id = (int32_t) cx_rd_u32(r);
	if (!cx_rd_ok(r) || (m->schema_id == 0) != (m->schema == NULL) ||
		m->last_field_id < 0 || m->last_field_id > CX_FIELD_ID_USER_MAX ||
		(m->schema != NULL && cx_schema_max_user_field_id(m->schema) > m->last_field_id))
	{
		r->bad = true;
		return true;
	}
	return decode_history(r, m);
}
