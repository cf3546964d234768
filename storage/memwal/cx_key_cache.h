/*
 * cx_key_cache.h — the newest version of each key among a set of rows the
 * shard writer resolves requests against (cx_shard_resolve.c), with its
 * upsert-key value, so that both "is this key live?" and "which live rows
 * hold this upsert value?" are answered from memory.
 *
 * The writer keeps three: the rows of its shard that its base view does not
 * hold yet (the unmerged generations and the memtable: built at open from
 * the listed generations' key, upsert-key, commit-time and tombstone
 * columns, updated by every append, trimmed when a newer base holds them),
 * the rows of the requests staged for the next append, and the rows of the
 * request being resolved.  A cache holds one entry per key plus the bytes of
 * the key and of each upsert value the key took, so its memory is bounded by
 * the rows it covers: for the first, the unmerged window
 * (docs/design/memwal.md, "Resolving requests").
 *
 * A truncate marker (a DELETE with a NULL key) empties a cache and is
 * remembered: it hides every row older than it that lies below this cache.
 */
#ifndef CX_KEY_CACHE_H
#define CX_KEY_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "memwal/cx_shard_manifest.h"

/* A row version as a cache holds it.  Pointers are valid until the cache
 * next changes. */
typedef struct cx_kc_row
{
	const uint8_t *key;
	size_t		key_len;
	const uint8_t *upsert;		/* NULL: a NULL value, or no upsert column */
	size_t		upsert_len;
	int64_t		ts;				/* commit time (0 while staged) */
	uint64_t	gen;			/* the generation that holds it (0 while
								 * staged) */
	bool		tombstone;
} cx_kc_row;

typedef struct cx_keycache cx_keycache;

cx_keycache *cx_kc_new(void);	/* NULL on OOM */
void		cx_kc_free(cx_keycache *c);
/* Forgets everything, the truncation too. */
cx_code		cx_kc_clear(cx_keycache *c, cx_err *err);

/* row becomes its key's newest version. */
cx_code		cx_kc_put(cx_keycache *c, const cx_kc_row *row, cx_err *err);
/* A truncate marker at ts in generation gen: forgets every row. */
cx_code		cx_kc_truncate(cx_keycache *c, int64_t ts, uint64_t gen,
						   cx_err *err);
/* The newest version of key, if the cache holds one. */
bool		cx_kc_get(const cx_keycache *c, const uint8_t *key, size_t len,
					  cx_kc_row *out);
/*
 * Fetches into the CPU cache where key is or would go (a hint, a few keys
 * before a get or put of it): a cache of millions of keys misses memory on
 * every lookup, and lookups issued one after another wait for each miss in
 * turn, where prefetches a few keys ahead overlap them.
 */
void		cx_kc_prefetch(const cx_keycache *c, const uint8_t *key, size_t len);
/* Whether a truncate marker is held, and its commit time. */
bool		cx_kc_truncated(const cx_keycache *c, int64_t *ts);

/* Calls fn for each key whose newest version is live and holds upsert
 * value up (each key once). */
typedef cx_code (*cx_kc_row_fn) (void *arg, const cx_kc_row *row,
								 cx_err *err);
cx_code		cx_kc_each_upsert(const cx_keycache *c, const uint8_t *up,
							  size_t len, cx_kc_row_fn fn, void *arg,
							  cx_err *err);

/* Puts src's truncation and then its rows into dst, as committed at ts in
 * generation gen (ts 0: as they are).  Into an empty dst they move, leaving
 * src empty; callers discard src after. */
cx_code		cx_kc_apply(cx_keycache *dst, cx_keycache *src, int64_t ts,
						uint64_t gen, cx_err *err);
/* Forgets the rows (and the truncation) of generations <= through.  On
 * failure the cache is as it was. */
cx_code		cx_kc_trim(cx_keycache *c, uint64_t through, cx_err *err);

/* Adds generation g's rows (g listed by m, a version of its shard in s), in
 * row order: the key column key_col and the upsert column upsert_col (-1:
 * none) of table. */
cx_code		cx_kc_add_generation(cx_keycache *c, cx_objstore *s,
								 const cx_shard_manifest *m,
								 const cx_generation *g,
								 const cx_schema *table, uint32_t key_col,
								 int32_t upsert_col, cx_err *err);

uint64_t	cx_kc_keys(const cx_keycache *c);
uint64_t	cx_kc_memory(const cx_keycache *c);

#endif							/* CX_KEY_CACHE_H */
