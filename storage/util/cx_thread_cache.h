/*
 * cx_thread_cache.h — what a thread keeps between calls of the engine, one
 * slot per kind, freed when the thread exits.
 *
 * For memos of pure work that every call would otherwise repeat (decoding
 * the same schema JSON for every generation footer of a store, setting up a
 * decompression context per fragment reader): a thread's slot is touched by
 * that thread only, so nothing needs a lock, and what a slot holds never
 * outlives its thread.
 */
#ifndef CX_THREAD_CACHE_H
#define CX_THREAD_CACHE_H

#include <stdbool.h>

typedef enum cx_thread_cache_kind
{
	CX_THREAD_SCHEMA_FROM_JSON, /* the last schema JSON decoded
								 * (format/cx_parquet_schema.c) */
	CX_THREAD_SCHEMA_TO_JSON,	/* the last schema encoded as JSON (same) */
	CX_THREAD_ZSTD_DCTX,		/* a decompression context no fragment reader
								 * holds (format/cx_fragment_read.c) */
	CX_THREAD_ZSTD_CCTX,		/* a compression context no fragment writer
								 * holds (format/cx_fragment_write.c) */
	CX_THREAD_CACHES
} cx_thread_cache_kind;

typedef struct cx_thread_cache
{
	void	   *p;				/* NULL: nothing kept */
	void		(*free_fn) (void *p);	/* frees p when the thread exits */
} cx_thread_cache;

/* The calling thread's slot of that kind, or NULL when the thread's slots
 * could not be made (no memory): the caller then keeps nothing. */
cx_thread_cache *cx_thread_cache_get(cx_thread_cache_kind kind);

/* Frees what the slot holds and empties it. */
void		cx_thread_cache_clear(cx_thread_cache *slot);

/*
 * For slots that keep one spare object (a context a user takes and gives
 * back): takes the thread's spare of that kind (NULL when it has none; the
 * caller then makes one), and gives p back as the spare when the slot is
 * empty (true; free_fn frees it when the thread exits), false when it
 * holds one already or the slots could not be made (p is the caller's to
 * free).
 */
void	   *cx_thread_spare_take(cx_thread_cache_kind kind);
bool		cx_thread_spare_give(cx_thread_cache_kind kind, void *p,
								 void (*free_fn) (void *p));

#endif							/* CX_THREAD_CACHE_H */
