/*
 * cx_key_filter.h — the Bloom filter of a key index segment: a bit array
 * over the segment's distinct values that proves a value absent without
 * reading a data block.  It only ever proves absence: a value it may hold
 * is looked up in the blocks as before, so answers stay exact.
 *
 * The filter block's bytes (docs/FORMAT.md "Key index segments", filter
 * block) are u32 probes, u64 nbits, then ceil(nbits / 8) bytes of bits;
 * this file encodes and decodes that body, and the segment code frames it.
 *
 * Filters a process has read are kept in a bounded table keyed by segment
 * (segments are immutable, so a kept filter is never stale).  A filter is
 * read only once the lookups of its segment would have read as many bytes
 * of data blocks as the filter has: a one-off lookup of a big segment is
 * not made to pay for it.
 */
#ifndef CX_KEY_FILTER_H
#define CX_KEY_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/error.h"
#include "util/cx_buf.h"

#define CX_KEYFILTER_BITS_PER_VALUE 16
#define CX_KEYFILTER_PROBES 11	/* about 0.05% false positives at 16 bits */
#define CX_KEYFILTER_MAX_PROBES 32

/* Hashes of the values a segment writer has seen, distinct neighbours
 * once (values arrive sorted): 8 bytes per distinct value until encoded. */
typedef struct cx_keyfilter_build
{
	uint64_t   *hashes;
	uint64_t	n;
	uint64_t	cap;
} cx_keyfilter_build;

cx_code		cx_keyfilter_build_add(cx_keyfilter_build *b, const uint8_t *v,
								   uint32_t len, cx_err *err);
/* Appends the body after its leading u32 (the probe count, *probes) to
 * out: u64 nbits and the bits. */
cx_code		cx_keyfilter_build_encode(const cx_keyfilter_build *b,
									  uint32_t *probes, cx_buf *out,
									  cx_err *err);
void		cx_keyfilter_build_free(cx_keyfilter_build *b);

typedef struct cx_keyfilter cx_keyfilter;

/* Checks and copies a filter body (from its u32 probes on).  what names
 * the segment in messages.  CX_ERR_CORRUPT when the fields do not add up. */
cx_code		cx_keyfilter_decode(const uint8_t *body, uint32_t len,
								const char *what, cx_keyfilter **out,
								cx_err *err);
bool		cx_keyfilter_may_hold(const cx_keyfilter *f, const uint8_t *v,
								  size_t len);
/* The hash the filter keeps of a value, and the question asked with it: a
 * lookup of a value in several segments hashes it once. */
uint64_t	cx_keyfilter_hash(const uint8_t *v, size_t len);
bool		cx_keyfilter_may_hold_hash(const cx_keyfilter *f, uint64_t h);

/*
 * The filter kept for segment `name`, with a reference the caller drops
 * with cx_keyfilter_release; NULL when none is kept.  With none kept,
 * *load says whether to read it now: the data-block bytes the segment's
 * lookups may read without it (this one's `may_read` included) have
 * reached its `filter_len`, or it fits no table.
 */
cx_keyfilter *cx_keyfilter_get(const char *name, uint64_t filter_len,
							   uint64_t may_read, bool *load);
/* Keeps f for name (best effort; the table takes its own reference). */
void		cx_keyfilter_keep(const char *name, cx_keyfilter *f);
void		cx_keyfilter_release(cx_keyfilter *f);
/* The bytes of the filters the table keeps now. */
uint64_t	cx_keyfilter_kept_bytes(void);

#endif							/* CX_KEY_FILTER_H */
