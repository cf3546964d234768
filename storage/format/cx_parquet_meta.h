/*
 * cx_parquet_meta.h — the Parquet metadata structures ctxstore writes and
 * reads (the subset of parquet.thrift it uses), and their Thrift compact
 * protocol encoding (cx_thrift.h).
 *
 * Enum values are the ones parquet.thrift assigns; they are on disk.  Every
 * optional field has a has_ flag (or a NULL pointer).  Decoders trust
 * nothing: they skip fields they do not know (any Thrift type), bound every
 * list by the bytes left, and return CX_ERR_CORRUPT with a message naming
 * what was wrong; they never read past the buffer.  Decoded structures own
 * their memory (malloc); free them with the matching _free function, which
 * also frees a partially decoded structure.
 */
#ifndef CX_PARQUET_META_H
#define CX_PARQUET_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctxstore/util.h"
#include "util/cx_buf.h"

#define CX_PARQUET_MAGIC "PAR1"

/* parquet.thrift Type */
typedef enum cx_pq_type
{
	CX_PQ_BOOLEAN = 0,
	CX_PQ_INT32 = 1,
	CX_PQ_INT64 = 2,
	CX_PQ_INT96 = 3,
	CX_PQ_FLOAT = 4,
	CX_PQ_DOUBLE = 5,
	CX_PQ_BYTE_ARRAY = 6,
	CX_PQ_FIXED_LEN_BYTE_ARRAY = 7
} cx_pq_type;

/* FieldRepetitionType */
typedef enum cx_pq_repetition
{
	CX_PQ_REQUIRED = 0,
	CX_PQ_OPTIONAL = 1,
	CX_PQ_REPEATED = 2
} cx_pq_repetition;

/* ConvertedType (written alongside logical types for older readers) */
typedef enum cx_pq_converted
{
	CX_PQ_CT_UTF8 = 0,
	CX_PQ_CT_LIST = 3,
	CX_PQ_CT_DECIMAL = 5,
	CX_PQ_CT_DATE = 6,
	CX_PQ_CT_TIME_MICROS = 8,
	CX_PQ_CT_TIMESTAMP_MICROS = 10,
	CX_PQ_CT_INT_16 = 16,
	CX_PQ_CT_JSON = 19
} cx_pq_converted;

/* Encoding */
typedef enum cx_pq_encoding
{
	CX_PQ_PLAIN = 0,
	CX_PQ_PLAIN_DICTIONARY = 2,
	CX_PQ_RLE = 3,
	CX_PQ_RLE_DICTIONARY = 8
} cx_pq_encoding;

/* CompressionCodec */
typedef enum cx_pq_codec
{
	CX_PQ_UNCOMPRESSED = 0,
	CX_PQ_ZSTD = 6
} cx_pq_codec;

/* PageType */
typedef enum cx_pq_page_type
{
	CX_PQ_DATA_PAGE = 0,
	CX_PQ_DICTIONARY_PAGE = 2
} cx_pq_page_type;

/* BoundaryOrder */
typedef enum cx_pq_boundary_order
{
	CX_PQ_UNORDERED = 0,
	CX_PQ_ASCENDING = 1,
	CX_PQ_DESCENDING = 2
} cx_pq_boundary_order;

/* LogicalType: which member of the union is set (0 = none).  The numbers are
 * the union's field ids; a decoded member not named here keeps its id (its
 * contents skipped), so a reader can refuse it by number. */
typedef enum cx_pq_logical_kind
{
	CX_PQ_LT_NONE = 0,
	CX_PQ_LT_STRING = 1,
	CX_PQ_LT_LIST = 3,
	CX_PQ_LT_DECIMAL = 5,
	CX_PQ_LT_DATE = 6,
	CX_PQ_LT_TIME = 7,
	CX_PQ_LT_TIMESTAMP = 8,
	CX_PQ_LT_INTEGER = 10,
	CX_PQ_LT_JSON = 12,
	CX_PQ_LT_UUID = 14
} cx_pq_logical_kind;

/* TimeUnit union member */
typedef enum cx_pq_time_unit
{
	CX_PQ_MILLIS = 1,
	CX_PQ_MICROS = 2,
	CX_PQ_NANOS = 3
} cx_pq_time_unit;

typedef struct cx_pq_logical
{
	cx_pq_logical_kind kind;
	/* DECIMAL */
	int32_t		scale;
	int32_t		precision;
	/* TIME, TIMESTAMP */
	bool		adjusted_to_utc;
	cx_pq_time_unit unit;
	/* INTEGER */
	int8_t		bit_width;
	bool		is_signed;
} cx_pq_logical;

/* A byte string: owned by the structure that holds it once decoded; for
 * encoding, points wherever the caller likes. */
typedef struct cx_pq_bytes
{
	uint8_t    *ptr;
	size_t		len;
} cx_pq_bytes;

/* Statistics (fields 3, 5, 6, 7, 8; the deprecated min/max 1-2 are skipped
 * on read and never written). */
typedef struct cx_pq_stats
{
	bool		has_null_count;
	int64_t		null_count;
	bool		has_min;
	bool		has_max;
	cx_pq_bytes min_value;		/* PLAIN encoding of the physical type */
	cx_pq_bytes max_value;
	bool		has_min_exact;
	bool		min_exact;		/* is_min_value_exact */
	bool		has_max_exact;
	bool		max_exact;
} cx_pq_stats;

typedef struct cx_pq_schema_element
{
	char	   *name;			/* required */
	bool		has_type;		/* leaves only */
	cx_pq_type	type;
	int32_t		type_length;	/* FIXED_LEN_BYTE_ARRAY; 0 = absent */
	bool		has_repetition;
	cx_pq_repetition repetition;
	int32_t		num_children;	/* groups; 0 = absent (a leaf) */
	bool		has_converted;
	cx_pq_converted converted;
	bool		has_scale_precision;	/* converted DECIMAL */
	int32_t		scale;
	int32_t		precision;
	bool		has_field_id;
	int32_t		field_id;
	cx_pq_logical logical;		/* kind NONE = absent */
} cx_pq_schema_element;

typedef struct cx_pq_key_value
{
	char	   *key;
	char	   *value;			/* NULL = absent */
} cx_pq_key_value;

typedef struct cx_pq_column_meta
{
	cx_pq_type	type;
	uint32_t	nencodings;
	cx_pq_encoding *encodings;
	uint32_t	npath;
	char	  **path_in_schema;
	cx_pq_codec codec;
	int64_t		num_values;
	int64_t		total_uncompressed_size;
	int64_t		total_compressed_size;
	int64_t		data_page_offset;
	bool		has_dictionary_page_offset;
	int64_t		dictionary_page_offset;
	bool		has_statistics;
	cx_pq_stats statistics;
} cx_pq_column_meta;

typedef struct cx_pq_column_chunk
{
	int64_t		file_offset;
	bool		has_meta;		/* always true for files ctxstore reads */
	cx_pq_column_meta meta;
	bool		has_offset_index;
	int64_t		offset_index_offset;
	int32_t		offset_index_length;
	bool		has_column_index;
	int64_t		column_index_offset;
	int32_t		column_index_length;
} cx_pq_column_chunk;

/* SortingColumn: the rows of a row group are in this column's order
 * (column_idx is the leaf's position among the columns). */
typedef struct cx_pq_sorting_column
{
	int32_t		column_idx;
	bool		descending;
	bool		nulls_first;
} cx_pq_sorting_column;

typedef struct cx_pq_row_group
{
	uint32_t	ncolumns;
	cx_pq_column_chunk *columns;
	uint32_t	nsorting;		/* 0 = sorting_columns absent */
	cx_pq_sorting_column *sorting;	/* most significant first */
	int64_t		total_byte_size;
	int64_t		num_rows;
	bool		has_file_offset;
	int64_t		file_offset;
	bool		has_total_compressed_size;
	int64_t		total_compressed_size;
	bool		has_ordinal;
	int16_t		ordinal;
} cx_pq_row_group;

typedef struct cx_pq_file_meta
{
	int32_t		version;		/* ctxstore writes 2 */
	uint32_t	nschema;		/* depth-first, root first */
	cx_pq_schema_element *schema;
	int64_t		num_rows;
	uint32_t	nrow_groups;
	cx_pq_row_group *row_groups;
	uint32_t	nkv;
	cx_pq_key_value *kv;
	char	   *created_by;		/* NULL = absent */
	/* column_orders: written as TypeDefinedOrder for every leaf (schema
	 * element after the root without children) when type_defined_order is
	 * true; read back as that flag (true only if there are entries and every
	 * one is TypeDefinedOrder). */
	bool		type_defined_order;
	uint32_t	ncolumn_orders;	/* entries read; the encoder ignores it */
} cx_pq_file_meta;

typedef struct cx_pq_data_page_header
{
	int32_t		num_values;		/* values including NULLs (levels) */
	cx_pq_encoding encoding;
	cx_pq_encoding definition_level_encoding;	/* RLE */
	cx_pq_encoding repetition_level_encoding;	/* RLE */
	bool		has_statistics;
	cx_pq_stats statistics;
} cx_pq_data_page_header;

typedef struct cx_pq_dictionary_page_header
{
	int32_t		num_values;
	cx_pq_encoding encoding;	/* PLAIN */
	bool		has_is_sorted;
	bool		is_sorted;
} cx_pq_dictionary_page_header;

typedef struct cx_pq_page_header
{
	cx_pq_page_type type;
	int32_t		uncompressed_page_size;
	int32_t		compressed_page_size;
	bool		has_crc;
	/* CRC-32 (the zlib / ISO-HDLC polynomial, as parquet.thrift specifies)
	 * of the compressed_page_size bytes that follow the header. */
	uint32_t	crc;
	bool		has_data_page;
	cx_pq_data_page_header data_page;
	bool		has_dictionary_page;
	cx_pq_dictionary_page_header dictionary_page;
} cx_pq_page_header;

typedef struct cx_pq_page_location
{
	int64_t		offset;
	int32_t		compressed_page_size;	/* header included */
	int64_t		first_row_index;
} cx_pq_page_location;

typedef struct cx_pq_offset_index
{
	uint32_t	npages;
	cx_pq_page_location *pages;
} cx_pq_offset_index;

typedef struct cx_pq_column_index
{
	uint32_t	npages;
	bool	   *null_pages;
	cx_pq_bytes *min_values;
	cx_pq_bytes *max_values;
	cx_pq_boundary_order boundary_order;
	bool		has_null_counts;
	int64_t    *null_counts;
} cx_pq_column_index;

/* Encoders append to out (cx_buf's own out-of-memory rule applies). */
void		cx_pq_file_meta_encode(const cx_pq_file_meta *m, cx_buf *out);
void		cx_pq_page_header_encode(const cx_pq_page_header *h, cx_buf *out);
void		cx_pq_offset_index_encode(const cx_pq_offset_index *x, cx_buf *out);
void		cx_pq_column_index_encode(const cx_pq_column_index *x, cx_buf *out);

/*
 * Decoders read one structure from p[0..len).  *used (when not NULL) gets
 * the bytes it took, so a page header can be found followed by its page.
 * The output is zeroed first and owns everything it points to afterwards,
 * even after a failure.  what names the object in error messages.
 */
cx_code		cx_pq_file_meta_decode(const uint8_t *p, size_t len,
								   cx_pq_file_meta *out, const char *what,
								   cx_err *err);
cx_code		cx_pq_page_header_decode(const uint8_t *p, size_t len,
									 cx_pq_page_header *out, size_t *used,
									 const char *what, cx_err *err);
cx_code		cx_pq_offset_index_decode(const uint8_t *p, size_t len,
									  cx_pq_offset_index *out,
									  const char *what, cx_err *err);
cx_code		cx_pq_column_index_decode(const uint8_t *p, size_t len,
									  cx_pq_column_index *out,
									  const char *what, cx_err *err);

void		cx_pq_file_meta_free(cx_pq_file_meta *m);
void		cx_pq_page_header_free(cx_pq_page_header *h);
void		cx_pq_offset_index_free(cx_pq_offset_index *x);
void		cx_pq_column_index_free(cx_pq_column_index *x);

#endif							/* CX_PARQUET_META_H */
