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

/*
 * An index map: key bytes -> a 32-bit index into an array the caller owns,
 * which also holds the keys (key_of gives index i's bytes, with the arg the
 * caller passes to each call).  A slot is 8 bytes, 32 bits of the key's hash
 * and the index + 1, so a map costs 11-21 bytes a key beside the caller's
 * array.  At most CX_IDXMAP_MAX keys.
 */
typedef void (*cx_idxmap_key_fn) (const void *arg, uint32_t idx,
								  const uint8_t **key, size_t *len);

typedef struct cx_idxmap
{
	uint64_t   *slots;
	uint64_t	nslots;			/* power of two */
	uint64_t	count;
} cx_idxmap;

#define CX_IDXMAP_MAX ((uint32_t) 1 << 31)
#define CX_IDXMAP_NONE UINT32_MAX

bool		cx_idxmap_init(cx_idxmap *m);	/* false on OOM */
void		cx_idxmap_free(cx_idxmap *m);
/* Sizes the slots for about n keys (a hint: false when not possible). */
bool		cx_idxmap_reserve(cx_idxmap *m, uint64_t n);
/* The index of key, or CX_IDXMAP_NONE. */
uint32_t	cx_idxmap_get(const cx_idxmap *m, const uint8_t *key, size_t len,
						  cx_idxmap_key_fn key_of, const void *arg);
/*
 * The index of key into *idx; when absent, key is added as fresh (which
 * key_of need not know yet) and *idx = fresh.  False when out of memory or
 * full (the map unchanged).
 */
bool		cx_idxmap_add(cx_idxmap *m, const uint8_t *key, size_t len,
						  uint32_t fresh, uint32_t *idx,
						  cx_idxmap_key_fn key_of, const void *arg);
void		cx_idxmap_prefetch(const cx_idxmap *m, const uint8_t *key,
							   size_t len);
uint64_t	cx_idxmap_memory(const cx_idxmap *m);

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
