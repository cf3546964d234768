/*
 * cx_parquet_schema.h — private to the fragment writer and reader: the
 * key-value metadata a fragment carries and the engine schema's JSON form
 * (docs/FORMAT.md, "Key-value metadata").
 *
 * The Parquet schema alone cannot say which engine type a column has (json
 * and jsonb, timestamp and timestamptz share physical types; external types
 * are plain BYTE_ARRAY), so the writer stores the engine schema as JSON under
 * CX_PQ_KV_SCHEMA and the reader rebuilds the cx_schema from it, then checks
 * that the Parquet schema is exactly the one the writer derives from it.
 */
#ifndef CX_PARQUET_SCHEMA_H
#define CX_PARQUET_SCHEMA_H

#include "format/cx_parquet_meta.h"
#include "format/cx_schema.h"

#define CX_PQ_KV_SCHEMA "ctxstore.schema"
#define CX_PQ_KV_FORMAT "ctxstore.format"
/* The sort order of a fragment's rows (cx_fragw_options.sort_columns). */
#define CX_PQ_KV_SORT_KEY "ctxstore.sort_key"
#define CX_PQ_FORMAT_VERSION "2"
/* FileMetaData.created_by; the version is the extension's (ctxstore.control) */
#define CX_PQ_CREATED_BY "ctxstore version " CX_VERSION

/* The schema as a JSON array (malloc'd), or NULL on allocation failure. */
char	   *cx_pq_schema_json(const cx_schema *schema);

/* Rebuilds a schema from its JSON; NULL with *why set when the JSON is not
 * one cx_pq_schema_json() produces for a valid schema (or memory ran out). */
cx_schema  *cx_pq_schema_from_json(const char *json, const char **why);

/* Whether els[0..n) is exactly the Parquet schema of schema. */
bool		cx_pq_schema_matches(const cx_schema *schema,
								 const cx_pq_schema_element *els, uint32_t n);

#endif							/* CX_PARQUET_SCHEMA_H */
