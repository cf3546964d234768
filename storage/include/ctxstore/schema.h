/*
 * ctxstore/schema.h — column types, table schemas, the value carrier
 * (cx_datum) and the row encoding rows travel in from a backend to the
 * writer (format/cx_schema.h and format/cx_row_codec.h say more).
 *
 * Each PostgreSQL type maps to one engine type in fdw/; types without a
 * native form travel as CX_T_EXTERNAL: their binary send/receive bytes,
 * tagged with the PostgreSQL type name.
 */
#ifndef CTXSTORE_SCHEMA_H
#define CTXSTORE_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctxstore/util.h"

/* Values are stored on disk: never renumber. */
typedef enum cx_type
{
	CX_T_BOOL = 1,				/* 1 byte, 0 or 1 */
	CX_T_INT16 = 2,
	CX_T_INT32 = 3,
	CX_T_INT64 = 4,
	CX_T_FLOAT32 = 5,			/* IEEE 754, NaN and infinities kept */
	CX_T_FLOAT64 = 6,
	CX_T_DATE = 7,				/* int32 days since 2000-01-01 (PostgreSQL's) */
	CX_T_TIME = 8,				/* int64 microseconds since midnight */
	CX_T_TIMESTAMP = 9,			/* int64 microseconds since 2000-01-01 */
	CX_T_TIMESTAMPTZ = 10,		/* same, UTC */
	CX_T_UUID = 11,				/* 16 bytes */
	CX_T_INTERVAL = 12,			/* int64 usec, int32 days, int32 months */
	CX_T_STRING = 13,			/* UTF-8 text (text, varchar, bpchar) */
	CX_T_BINARY = 14,			/* bytea */
	CX_T_JSON = 15,				/* json text as given */
	CX_T_JSONB = 16,			/* jsonb in its canonical text form */
	CX_T_NUMERIC = 17,			/* numeric in its canonical text form */
	CX_T_EXTERNAL = 18,			/* send/receive bytes of ext_type */
	CX_T_LIST = 19				/* 1-D array of elem_type (never a list) */
} cx_type;

const char *cx_type_name(cx_type t);	/* "int64", "string", ... */

/*
 * Field ids name a column for as long as it exists, whatever it is renamed
 * to: Parquet files and Iceberg metadata carry them, and readers match a
 * fragment's columns to the table's by id.  Table columns get 1, 2, ... in
 * order of creation; the hidden columns of fragments have fixed ids in a
 * reserved range below the ids Iceberg reserves for its own metadata columns.
 */
#define CX_FIELD_ID_USER_MAX 999999999
/* A list column's element has its own id (Parquet and Iceberg need one):
 * the column's id plus this offset. */
#define CX_FIELD_ID_ELEMENT_OFFSET 1000000000
#define CX_FIELD_ID_COMMIT_TS 2147483401
#define CX_FIELD_ID_TOMBSTONE 2147483402
/* The columns of an Iceberg position-delete file, as the Iceberg spec
 * numbers them. */
#define CX_FIELD_ID_DELETE_FILE_PATH 2147483546
#define CX_FIELD_ID_DELETE_POS 2147483545

/* The longest numeric precision stored as a Parquet DECIMAL (the most
 * Iceberg and most readers accept); wider or unconstrained numerics are
 * stored as canonical text. */
#define CX_DECIMAL_PRECISION_MAX 38

typedef struct cx_column
{
	char	   *name;			/* malloc'd */
	uint8_t		type;			/* cx_type */
	uint8_t		elem_type;		/* element cx_type for CX_T_LIST, else 0 */
	char	   *ext_type;		/* PostgreSQL type name for CX_T_EXTERNAL (or
								 * a list of it), else NULL */
	int32_t		field_id;		/* >= 1, unique in the schema */
	/* CX_T_NUMERIC only: 1..CX_DECIMAL_PRECISION_MAX and 0..precision when
	 * the column is a DECIMAL(precision, scale); 0 and 0 otherwise. */
	uint8_t		precision;
	uint8_t		scale;
	/* Written as a REQUIRED Parquet column (NULLs refused by the writer).
	 * Only fragments' own columns use it (hidden and delete-file columns);
	 * table columns are never required, and manifests do not encode it. */
	bool		required;
} cx_column;

typedef struct cx_schema
{
	uint32_t	ncolumns;
	cx_column  *columns;
} cx_schema;

/* Builder: cx_schema_new() then cx_schema_add() per column.  The new column
 * gets the next user field id (one more than the largest user id so far);
 * callers that need another id, or a DECIMAL, set the members afterwards and
 * cx_schema_validate() checks them. */
cx_schema  *cx_schema_new(void);
cx_code		cx_schema_add(cx_schema *s, const char *name, cx_type type,
						  cx_type elem_type, const char *ext_type, cx_err *err);
/* Index of the column with this field id, or -1. */
int			cx_schema_find_field(const cx_schema *s, int32_t field_id);
cx_schema  *cx_schema_clone(const cx_schema *s);	/* NULL on OOM */
void		cx_schema_free(cx_schema *s);
/* Index of the column with this name, or -1. */
int			cx_schema_find(const cx_schema *s, const char *name);
/* Same names, types, field ids and decimal shapes, in the same order. */
bool		cx_schema_equal(const cx_schema *a, const cx_schema *b);
/* Same type, element type, external type name and decimal shape. */
bool		cx_column_same_type(const cx_column *a, const cx_column *b);

/* Serialised form shared by fragment footers and manifests (FORMAT.md). */
void		cx_schema_encode(const cx_schema *s, cx_buf *out);
cx_schema  *cx_schema_decode(cx_rd *r);	/* NULL and r->bad on error */

/*
 * cx_datum carries one value in and out of the engine.  Writers fill the
 * member that matches the column type; readers get the same back.  Variable
 * width and list members point into memory owned by someone else (the caller
 * when writing, the row group when reading).
 */
typedef struct cx_colvec cx_colvec;

typedef struct cx_datum
{
	bool		isnull;
	union
	{
		bool		b;
		int16_t		i16;
		int32_t		i32;		/* also CX_T_DATE */
		int64_t		i64;		/* also CX_T_TIME and the timestamps */
		float		f32;
		double		f64;
		uint8_t		uuid[16];
		struct
		{
			int64_t		usec;
			int32_t		days;
			int32_t		months;
		}			interval;
		struct
		{
			const uint8_t *ptr;
			size_t		len;
		}			bytes;		/* string, binary, json(b), numeric, external */
		struct
		{
			const struct cx_datum *items;
			uint32_t	n;
		}			list;		/* writing a CX_T_LIST value */
		struct
		{
			const cx_colvec *elems;
			uint32_t	start;
			uint32_t	n;
		}			slice;		/* reading a CX_T_LIST value: elements
								 * start..start+n-1 of elems */
	}			v;
} cx_datum;

/*
 * What an encoded row does to its key: the first byte of every encoded row.
 * PUT and DELETE are what shards store (WAL entries, generations); the other
 * kinds are requests that the shard writer resolves against the live rows
 * into PUTs and DELETEs before it appends (never stored).  Values are on
 * disk: never renumber.
 */
typedef enum cx_row_kind
{
	CX_ROW_PUT = 0,				/* the key's new version: replaces the whole
								 * row, if any */
	CX_ROW_DELETE = 1,			/* a tombstone: only the key column is set.
								 * A NULL key deletes every row committed
								 * before it (TRUNCATE) */
	CX_ROW_INSERT = 2,			/* PUT, or a unique violation if the key is
								 * live */
	CX_ROW_INSERT_IF_ABSENT = 3,	/* PUT, or nothing if the key is live */
	CX_ROW_UPSERT = 4			/* PUT that supersedes the live row whose
								 * upsert-key value equals this row's */
} cx_row_kind;

#define CX_ROW_KIND_MAX CX_ROW_UPSERT

/* Appends one row (its kind, then schema->ncolumns values) to out. */
void		cx_row_encode(const cx_schema *schema, cx_row_kind kind,
						  const cx_datum *values, cx_buf *out);

/* The bytes a value is compared by as a key: the form a column stores it
 * in, a fixed-width type's little-endian bytes (encoded into fixed) or a
 * variable-width value's own bytes (*p points into d).  False when d is
 * NULL. */
#define CX_KEY_FIXED_MAX 16
bool		cx_datum_key_bytes(cx_type type, const cx_datum *d,
							   uint8_t fixed[CX_KEY_FIXED_MAX],
							   const uint8_t **p, size_t *len);

/*
 * Decodes the next row from r into *kind and values[schema->ncolumns].  Variable-width
 * values point into r's bytes.  List values are returned in v.list form with
 * items allocated from *scratch (a cx_buf reused across rows: the items stay
 * valid until the next call with the same scratch).  CX_ERR_CORRUPT if the
 * bytes do not hold a well-formed row.
 */
cx_code		cx_row_decode(const cx_schema *schema, cx_rd *r, cx_row_kind *kind,
						  cx_datum *values, cx_buf *scratch, cx_err *err);

/* How fragments are cut into row groups and compressed
 * (format/cx_fragment.h). */
typedef struct cx_fragw_options
{
	uint32_t	rows_per_group;		/* default 65536 */
	uint64_t	max_group_bytes;	/* raw bytes before a row group is cut;
									 * default 32 MiB */
	int			compression_level;	/* zstd level, default 3 */
	/* The order the caller appends rows in, most significant column first
	 * (columns of the schema, ascending, NULLs last; none by default):
	 * recorded as every row group's sorting_columns and as the key-value
	 * ctxstore.sort_key (the column names, comma-separated).  The writer
	 * trusts it; the array must outlive the writer. */
	const uint32_t *sort_columns;
	uint32_t	nsort_columns;
} cx_fragw_options;

/* The zstd level fragments are written with unless the store sets another
 * (the compression_level option's default). */
#define CX_FRAGW_DEFAULT_COMPRESSION_LEVEL 3

void		cx_fragw_options_default(cx_fragw_options *o);

#endif							/* CTXSTORE_SCHEMA_H */
