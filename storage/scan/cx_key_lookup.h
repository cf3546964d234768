/*
 * cx_key_lookup.h — what a scan restricted to given keys
 * (cx_tablescan_begin_keys) reads: the keys, and the base rows that hold
 * them, found once by cx_base_probe (the key index where there is one).
 * Private to scan/.
 *
 * The base holds at most one live row per key, so the rows found are few;
 * unmerged generations are not probed here: the scan skips those whose key
 * statistics cannot hold a key and reads the key column of the others.
 */
#ifndef CX_KEY_LOOKUP_H
#define CX_KEY_LOOKUP_H

#include "table/cx_manifest.h"
#include "table/cx_row_key.h"

typedef struct cx_lookup cx_lookup;

/* Copies the n keys (key bytes of the key column key_col of base's schema;
 * repeats allowed) and probes base for them. */
cx_code		cx_lookup_new(cx_objstore *s, const cx_manifest *base,
						  uint32_t key_col, const uint8_t *const *keys,
						  const size_t *lens, uint32_t n, cx_lookup **out,
						  cx_err *err);
void		cx_lookup_free(cx_lookup *l);

/* Whether key is one of the keys. */
bool		cx_lookup_has(const cx_lookup *l, const uint8_t *key, size_t len);
/* The smallest and largest key, to skip fragments by their statistics. */
const cx_keyrange *cx_lookup_range(const cx_lookup *l);
/* The live rows of base fragment f that hold a key, ascending (*n = 0:
 * none); tombstones among them, which the scan reads to hide older rows
 * of their keys but never returns. */
const uint64_t *cx_lookup_base_rows(const cx_lookup *l, uint32_t f,
									uint32_t *n);
/* Whether one of those rows lies in [first, first + count). */
bool		cx_lookup_base_rows_in(const cx_lookup *l, uint32_t f,
								   uint64_t first, uint64_t count);
/* The same, and the first (*lo) and last (*hi) of them. */
bool		cx_lookup_base_span(const cx_lookup *l, uint32_t f, uint64_t first,
								uint64_t count, uint64_t *lo, uint64_t *hi);

#endif							/* CX_KEY_LOOKUP_H */
