/*
 * cx_base_probe.h — which rows of a base version hold given values of one
 * column: the lookup behind point reads by key, the writer's uniqueness and
 * upsert checks, UPDATE/DELETE targeting and a merge's search for the base
 * rows it shadows.
 *
 * Only the probed column, the key column and the hidden columns are read,
 * and only of fragments (and row groups) whose statistics may hold one of
 * the values.
 */
#ifndef CX_BASE_PROBE_H
#define CX_BASE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "table/cx_manifest.h"

/* One row of a base version whose probed column holds a probed value. */
typedef struct cx_probe_hit
{
	uint32_t	value;			/* index of the probe value it matches */
	uint32_t	fragment;		/* index into m->fragments */
	uint64_t	row;			/* row within that fragment */
	int64_t		ts;				/* its commit time */
	bool		tombstone;
	uint8_t    *key;			/* the row's KEY bytes (cx_key_bytes form),
								 * malloc'd */
	size_t		key_len;
} cx_probe_hit;

typedef struct cx_probe_result
{
	cx_probe_hit *hits;			/* ascending by value, then fragment, row */
	uint32_t	nhits;
	uint32_t	fragments_scanned;	/* fragments whose column was read (not
									 * indexed) */
	uint32_t	fragments_kept; /* of those, answered from the rows the
								 * handle kept (nothing read) */
	uint32_t	index_segments_read;
	uint64_t	bytes_read;
} cx_probe_result;

/* Rows of base m whose column `column` (the key column or the upsert-key
 * column) holds one of the n values (cx_key_bytes form).  Rows deleted by a
 * deletion vector, and rows older than m's truncated_before, are never hits;
 * tombstone rows are hits only when column is the key column.  Uses the key
 * index where m lists one, reads the column of fragments it does not cover
 * (pruned by min/max statistics; a small fragment's column once per
 * handle: cx_probe_rows.h).  Never wrong with a missing or stale index. */
cx_code		cx_base_probe(cx_objstore *s, const cx_manifest *m, uint32_t column,
						  const uint8_t *const *values, const size_t *lens,
						  uint32_t n, cx_probe_result *out, cx_err *err);
void		cx_probe_result_free(cx_probe_result *r);

#endif							/* CX_BASE_PROBE_H */
