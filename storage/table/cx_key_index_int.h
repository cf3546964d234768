/*
 * cx_key_index_int.h — the byte layout of key index segments, shared by the
 * reader (cx_key_index.c) and the writer (cx_key_index_write.c).  Not a
 * public interface; docs/FORMAT.md "Key index segments" is the
 * specification.
 */
#ifndef CX_KEY_INDEX_INT_H
#define CX_KEY_INDEX_INT_H

#include "table/cx_key_index.h"

#define CX_KEYSEG_FORMAT 1
#define CX_KEYSEG_DATA_MAGIC "CXKD"
#define CX_KEYSEG_INDEX_MAGIC "CXKI"
#define CX_KEYSEG_ROOT_MAGIC "CXKR"
#define CX_KEYSEG_FILTER_MAGIC "CXKF"
#define CX_KEYSEG_TRAILER_MAGIC "CXK1"
#define CX_KEYSEG_TRAILER_LEN 8	/* u32 root block length, magic */
#define CX_KEYSEG_WITH_KEYS 1	/* root flag: entries carry the row's key */
#define CX_KEYSEG_HAS_FILTER 2	/* root flag: it names a filter block */
#define CX_KEYSEG_MAX_DEPTH 8
/* Smallest child entry: empty first value, offset, length. */
#define CX_KEYSEG_CHILD_MIN_LEN (4 + 8 + 4)

/* Manifest section format, and the smallest segment entry in it. */
#define CX_KEYINDEX_SECTION_FORMAT 1
#define CX_KEYSEG_REF_MIN_LEN (2 + 4 + 8 + 4 + 8 + 4 + 4 + 4)

typedef struct cx_keyseg_root
{
	uint32_t	column;
	uint8_t		flags;
	uint8_t		depth;			/* index levels from the root down to the
								 * data blocks, the root included: >= 1 */
	uint64_t	entries;
	uint64_t	filter_offset;	/* with CX_KEYSEG_HAS_FILTER */
	uint32_t	filter_len;
} cx_keyseg_root;

/* Bytewise order of values (memcmp, then the shorter first). */
int			cx_keyseg_value_cmp(const uint8_t *a, size_t alen,
								const uint8_t *b, size_t blen);

/* A malloc'd copy of a value that may be empty (p then may be NULL); NULL
 * on OOM. */
uint8_t    *cx_keyseg_copy(const uint8_t *p, size_t len);

#endif							/* CX_KEY_INDEX_INT_H */
