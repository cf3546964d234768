/*
 * cx_parquet_types.h — private to the fragment writer and reader: how each
 * engine column is stored in Parquet (the type map of docs/FORMAT.md,
 * "Types"), the schema elements a fragment's schema becomes, and the
 * conversions between engine values and Parquet PLAIN values.
 *
 * The one table of which engine type becomes which physical, logical and
 * converted type is leaf_element() in cx_parquet_types.c; the writer builds
 * the schema from it and the reader checks a file's schema against it.
 */
#ifndef CX_PARQUET_TYPES_H
#define CX_PARQUET_TYPES_H

#include "format/cx_parquet_meta.h"
#include "format/cx_fragment.h"
#include "format/cx_schema.h"

/* Days from 1970-01-01 to 2000-01-01, and the same in microseconds: engine
 * dates and timestamps count from 2000, Parquet's from 1970. */
#define CX_PQ_UNIX_DAYS_OFFSET 10957
#define CX_PQ_UNIX_USEC_OFFSET INT64_C(946684800000000)

/*
 * The engine timestamp of a Parquet (Unix) one: INT64_MAX is infinity and
 * -INT64_MAX -infinity (the engine's INT64_MIN; DuckDB's convention, as the
 * writer's to_unix); false for a finite value the writer never produces (one
 * that would not fit, or would land on an infinity).  Inline: the reader
 * converts every timestamp with it.
 */
static inline bool
cx_pq_timestamp_from_unix(int64_t u, int64_t *v)
{
	if (u == -INT64_MAX)
		*v = INT64_MIN;
	else if (u == INT64_MAX)
		*v = u;
	else if (u <= INT64_MIN + CX_PQ_UNIX_USEC_OFFSET)
		return false;
	else
		*v = u - CX_PQ_UNIX_USEC_OFFSET;
	return true;
}

/* What the writer and reader need to know about one column's leaf. */
typedef struct cx_pq_leaf
{
	cx_type		type;			/* engine type of the values (the element
								 * type of a list) */
	cx_pq_type	ptype;
	int32_t		width;			/* bytes of a PLAIN value; 0 for BYTE_ARRAY
								 * and BOOLEAN (bit-packed) */
	uint8_t		precision;		/* DECIMAL(precision, scale); 0 otherwise */
	uint8_t		scale;
	bool		list;
	int			max_def;		/* 0 (required), 1 (optional) or 3 (list) */
	int			max_rep;		/* 1 for lists */
} cx_pq_leaf;

void		cx_pq_leaf_init(const cx_column *col, cx_pq_leaf *leaf);

/*
 * The Parquet schema of a fragment: root "schema", then per column one leaf,
 * or for a list the group <name> -> repeated group "list" -> leaf "element".
 * *out (malloc'd, names point into schema or at constants; free the array
 * only) receives *n elements.  false on allocation failure.
 */
bool		cx_pq_schema_elements(const cx_schema *schema,
								  cx_pq_schema_element **out, uint32_t *n);
/* Path of column col's leaf in the schema: 1 or 3 names (static / col's). */
uint32_t	cx_pq_leaf_path(const cx_column *col, const char *path[3]);

/* ---- writing ---- */

/* CX_ERR_INVALID for a value the column cannot store in Parquet: a NULL in a
 * required column, a finite date or timestamp whose Unix form does not fit,
 * a numeric that is not a DECIMAL(precision, scale).  Checks list
 * elements too. */
cx_code		cx_pq_value_check(const cx_column *col, const cx_datum *d,
							  cx_err *err);
/*
 * Values below are in their engine on-disk form, as column builders and
 * cx_colstats hold them: little-endian fixed width, or a var-width value's
 * bytes.
 */
/* Appends the PLAIN form of a checked non-NULL, non-boolean value. */
void		cx_pq_put_plain(const cx_pq_leaf *leaf, const uint8_t *val,
							size_t len, cx_buf *out);
/* A var-width leaf's PLAIN value is a u32 length, then its bytes: appends
 * that length and returns true; false (nothing appended) for any other. */
bool		cx_pq_put_plain_length(const cx_pq_leaf *leaf, size_t len,
								   cx_buf *out);
/* The PLAIN bytes of a fixed-width non-DECIMAL value, or of a statistics
 * bound, into out (16 bytes or len for var width); returns their length. */
size_t		cx_pq_stat_bound(const cx_pq_leaf *leaf, const uint8_t *val,
							 size_t len, uint8_t *out);

/* ---- reading ---- */

/* Reads one PLAIN non-boolean value from r and appends its engine form to
 * out (engine fixed-width bytes, or a var-width value's bytes).  false with
 * *why set when the bytes are short or hold no valid value. */
bool		cx_pq_get_plain(const cx_pq_leaf *leaf, cx_rd *r, cx_buf *out,
							const char **why);
/* The engine-domain form of a Parquet statistics bound; false if it is
 * malformed (wrong width, out of range). */
bool		cx_pq_engine_bound(const cx_pq_leaf *leaf, const uint8_t *val,
							   size_t len, uint8_t *out, size_t *outlen);

/* ---- statistics ---- */

/* Chunk or page statistics in the Parquet domain from engine-domain ones;
 * minb and maxb (CX_STATS_MAX_BYTES each) hold the bounds out points to. */
bool		cx_pq_stats_from_engine(const cx_pq_leaf *leaf,
									const cx_colstats *st, uint8_t *minb,
									uint8_t *maxb, cx_pq_stats *out);
/* The inverse for a chunk of nrows rows; false when the statistics are
 * inconsistent with the rows or hold malformed bounds. */
bool		cx_pq_stats_to_engine(const cx_pq_leaf *leaf,
								  const cx_pq_stats *ps, uint64_t nrows,
								  cx_colstats *st);

#endif							/* CX_PARQUET_TYPES_H */
