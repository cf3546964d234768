/*
 * cx_key_index.h — the persistent key index of a base table: immutable
 * index segments, each a sorted map from one column's value to the rows
 * (fragment, row, commit time, tombstone, key) that hold it in the fragments
 * the segment covers, and their list in the base manifest.
 *
 * A segment ("index/<32 hex>.cxk", written put-if-absent) is a tree of
 * checksummed blocks: data blocks of entries sorted bytewise by value (then
 * fragment, row), index blocks of their first values, a filter block
 * (cx_key_filter.h) that proves values absent, and a root block at the
 * end, so that a lookup reads the root and one block per level by ranged
 * GET, and none for a value the filter rules out.  docs/FORMAT.md "Key
 * index segments" is the byte layout.
 *
 * The base manifest lists the segments in an extension section
 * (CX_KEYINDEX_EXT_TAG): per segment its column, size, value range and the
 * fragments it covers, by path (stable across merges; fragment positions
 * are not).  A segment that names a fragment the version no longer lists is
 * ignored for it; entries stay valid while the fragment is listed because
 * fragments are immutable, and deletion vectors are applied at lookup.
 */
#ifndef CX_KEY_INDEX_H
#define CX_KEY_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "table/cx_manifest.h"
#include "util/cx_lru.h"

#define CX_KEYINDEX_EXT_TAG 0x5844494Bu	/* "KIDX" as stored (little-endian) */
#define CX_KEYSEG_BLOCK_BYTES 4096	/* default block size */

/*
 * Lookups keep the segment blocks they read in one cache per process, least
 * recently used out first, bounded by bytes: 16 MiB by default, the index
 * blocks of about 400,000 keys of 36 bytes (a UUID as text).  Segments never
 * change, so nothing in it is ever stale.
 */
#define CX_KEYINDEX_CACHE_DEFAULT ((size_t) 16 * 1024 * 1024)
void		cx_keyindex_cache_set_limit(size_t bytes);
cx_lru_stats cx_keyindex_cache_stats(void);

/* One segment as the base manifest lists it. */
typedef struct cx_keyseg_ref
{
	char	   *path;			/* malloc'd */
	uint32_t	column;			/* table column indexed */
	uint64_t	size;			/* object bytes */
	uint32_t	tail_len;		/* root block + trailer, read first */
	uint64_t	entries;
	uint8_t    *min;			/* smallest and largest value (bytewise), */
	uint32_t	min_len;		/* malloc'd; NULL when entries == 0 */
	uint8_t    *max;
	uint32_t	max_len;
	uint32_t	nfragments;
	char	  **fragments;		/* paths covered; entries name them by
								 * position in this list */
} cx_keyseg_ref;

typedef struct cx_keyindex
{
	uint32_t	n;
	cx_keyseg_ref *segs;
} cx_keyindex;

/* m's index section, or NULL when it has none. */
const cx_manifest_ext *cx_keyindex_section(const cx_manifest *m);
/* The segments m lists (none when it has no index section). */
cx_code		cx_keyindex_load(const cx_manifest *m, cx_keyindex *out,
							 cx_err *err);
/* Replaces m's index section with ix (removes it when ix is empty). */
cx_code		cx_keyindex_store(cx_manifest *m, const cx_keyindex *ix,
							  cx_err *err);
/* Appends a copy of ref. */
cx_code		cx_keyindex_add(cx_keyindex *ix, const cx_keyseg_ref *ref,
							cx_err *err);
void		cx_keyindex_free(cx_keyindex *ix);
void		cx_keyseg_ref_free(cx_keyseg_ref *ref);
/* The bytes ix's segment list holds (not ix itself). */
size_t		cx_keyindex_memory(const cx_keyindex *ix);

/* One entry of a segment.  key is the row's key (NULL when the segment
 * indexes the key column: the value is the key). */
typedef struct cx_keyentry
{
	const uint8_t *value;
	uint32_t	len;
	uint32_t	fragment;		/* position in the segment's fragment list */
	uint32_t	row;
	int64_t		ts;
	bool		tombstone;
	const uint8_t *key;
	uint32_t	key_len;
} cx_keyentry;

/* Bytewise order of values, then fragment, row. */
int			cx_keyentry_cmp(const cx_keyentry *a, const cx_keyentry *b);

/*
 * Calls fn(arg, i, entry) for every entry of the segment whose value equals
 * values[order[i]], i < n, where order sorts the values bytewise.  hashes:
 * cx_keyfilter_hash of each value (by the caller's index), so that a
 * caller looking up the same values in several segments hashes them once;
 * NULL: hashed here when the filter is asked.  Reads the
 * tail, then one block per level and per distinct block needed by a value
 * the segment's filter (once read, cx_key_filter.h) does not rule out.
 * CX_ERR_CORRUPT for a damaged segment, CX_ERR_NOT_FOUND for a missing one.
 */
typedef cx_code (*cx_keyentry_fn) (void *arg, uint32_t value, const cx_keyentry *e,
								   cx_err *err);
cx_code		cx_keyseg_lookup(cx_objstore *s, const cx_keyseg_ref *ref,
							 const uint8_t *const *values, const size_t *lens,
							 const uint32_t *order, const uint64_t *hashes,
							 uint32_t n, cx_keyentry_fn fn, void *arg,
							 cx_err *err);
/* Calls fn for every entry, in order (value index 0): merges and verify. */
cx_code		cx_keyseg_walk(cx_objstore *s, const cx_keyseg_ref *ref,
						   cx_keyentry_fn fn, void *arg, cx_err *err);

/* Reads a whole segment from its own bytes (no manifest): every block's
 * checksum and structure, the order of its entries and their count, and
 * that its filter holds every value.
 * *entries: how many it holds. */
cx_code		cx_keyseg_check(cx_objstore *s, const char *path,
							uint64_t *entries, cx_err *err);

/* Reading a segment's entries in order: the data blocks up to 1 MiB of them
 * a GET (CURSOR_READAHEAD), so at most that much in memory. */
typedef struct cx_keyseg_cursor cx_keyseg_cursor;

cx_code		cx_keyseg_cursor_open(cx_objstore *s, const cx_keyseg_ref *ref,
								  cx_keyseg_cursor **out, cx_err *err);
/* *e: the next entry (valid until the next call), NULL at the end. */
cx_code		cx_keyseg_cursor_next(cx_keyseg_cursor *c, const cx_keyentry **e,
								  cx_err *err);
void		cx_keyseg_cursor_close(cx_keyseg_cursor *c);

/* Writing a segment: entries in cx_keyentry_cmp order. */
typedef struct cx_keysegw cx_keysegw;

cx_code		cx_keysegw_open(cx_objstore *s, uint32_t column, bool with_keys,
							uint32_t block_bytes, cx_keysegw **out,
							cx_err *err);
cx_code		cx_keysegw_add(cx_keysegw *w, const cx_keyentry *e, cx_err *err);
/* Publishes the object and describes it in ref (fragments left empty for
 * the caller).  Frees w in every case. */
cx_code		cx_keysegw_finish(cx_keysegw *w, cx_keyseg_ref *ref, cx_err *err);
void		cx_keysegw_abort(cx_keysegw *w);

/* Building: cx_keyindex_update() and cx_keyindex_update_table(), declared in
 * ctxstore/table.h (cx_key_index_build.c). */

#endif							/* CX_KEY_INDEX_H */
