/*
 * cx_lru.h — a bounded cache of byte strings by name, least recently used
 * out first, bounded by the bytes it holds.
 *
 * For objects that never change under their name (key-index segments:
 * immutable, randomly named), so an entry is never stale and nothing is
 * invalidated; a name that is deleted simply ages out.  The bound counts
 * every byte an entry costs (its bytes, its name and its bookkeeping), so
 * cx_lru_stats().bytes never exceeds the limit.  Thread-safe: one lock
 * around each call.
 */
#ifndef CX_LRU_H
#define CX_LRU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cx_buf.h"

typedef struct cx_lru cx_lru;

typedef struct cx_lru_stats
{
	uint64_t	hits;
	uint64_t	misses;
	uint64_t	evictions;
	size_t		bytes;			/* held now, bookkeeping included */
	size_t		entries;
} cx_lru_stats;

/* A cache holding at most limit bytes (0: holds nothing); NULL on OOM. */
cx_lru	   *cx_lru_new(size_t limit);
void		cx_lru_free(cx_lru *c);
/* Copies the entry called name into out (reset first) and makes it the
 * most recently used; false when there is none (out then unchanged) or out
 * could not grow. */
bool		cx_lru_get(cx_lru *c, const char *name, cx_buf *out);
/* Keeps a copy of data as name (replacing an entry of that name), evicting
 * the least recently used until it fits; an entry larger than the limit is
 * not kept.  Best effort: out of memory keeps nothing. */
void		cx_lru_put(cx_lru *c, const char *name, const void *data,
					   size_t len);
/* Changes the bound, evicting what no longer fits. */
void		cx_lru_set_limit(cx_lru *c, size_t limit);
cx_lru_stats cx_lru_stats_of(cx_lru *c);

#endif							/* CX_LRU_H */
