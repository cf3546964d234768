/*
 * cx_key_map.h — an open-addressing hash map from key bytes to the newest
 * known version of that key (commit time, where the row is), with explicit
 * memory accounting.
 *
 * Merges and de-duplicating scans build one over the keys of the unmerged
 * generations, so its size is what bounds their memory: every byte it holds
 * (slot array and copied keys) is counted in cx_keymap_memory().
 *
 * Keys are arbitrary byte strings (a key column's encoded value) and are
 * copied into the map.  Values are plain structs the caller reads and
 * updates in place through the pointer lookups return; the pointer stays
 * valid until the next insertion (which may grow the slot array).
 */
#ifndef CX_KEYMAP_H
#define CX_KEYMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctxstore/error.h"

/* Where the current winner of a key is and how new it is. */
typedef struct cx_keyver
{
	int64_t		ts;				/* commit time of the row */
	uint64_t	row;			/* row index within its source */
	uint32_t	source;			/* the caller's number for a fragment */
	bool		tombstone;		/* the winning row deletes the key */
	bool		beaten;			/* a newer row outside the map won */
	bool		conflict;		/* a merge found a live base row of the key
								 * that another shard wrote */
	/* Where a merge wrote the winner (fragment number, row), if it did. */
	bool		written;
	uint32_t	out_fragment;
	uint32_t	out_row;
} cx_keyver;

typedef struct cx_keymap cx_keymap;

cx_keymap  *cx_keymap_new(void);	/* NULL on OOM */
/*
 * Sizes the slot array for about n keys up front, so that inserting them
 * does not rehash the map several times.  Only a hint: false (map unchanged,
 * still usable) when the memory is not available; never shrinks the map.
 */
bool		cx_keymap_reserve(cx_keymap *m, uint64_t n);
void		cx_keymap_free(cx_keymap *m);

/*
 * Finds key, inserting it (value zeroed, *found = false) when absent;
 * *val points at its value.  CX_ERR_NOMEM leaves the map as it was.
 */
cx_code		cx_keymap_upsert(cx_keymap *m, const uint8_t *key, size_t len,
							 cx_keyver **val, bool *found, cx_err *err);
/* Prefetches the slot where key is or would go (a hint, before a lookup or
 * insertion of key a little later). */
void		cx_keymap_prefetch(const cx_keymap *m, const uint8_t *key,
							   size_t len);
/* The value of key, or NULL. */
cx_keyver  *cx_keymap_get(const cx_keymap *m, const uint8_t *key, size_t len);

uint64_t	cx_keymap_count(const cx_keymap *m);
/* The i-th key inserted (i < cx_keymap_count()); the bytes stay valid while
 * the map lives. */
void		cx_keymap_key(const cx_keymap *m, uint64_t i, const uint8_t **key,
						  size_t *len);
/* Bytes allocated by the map: slot array plus key storage. */
uint64_t	cx_keymap_memory(const cx_keymap *m);

#endif							/* CX_KEYMAP_H */
