/*
 * cx_versioned.h — numbered object sequences and their hints.
 *
 * Base versions, shard-manifest versions and WAL entries are sequences of
 * immutable objects named by a number (cx_layout.h names the sequences and
 * their keys).  Like base versions (docs/FORMAT.md, "Finding the newest
 * version"), the numbers present form a contiguous range [oldest, newest] —
 * writers add newest + 1, GC removes a prefix — so the newest can be found
 * by probing forward from any number known to exist.
 *
 * A hint object holds a number some writer saw (same 16-byte layout as the
 * base "_latest" hint: "CXL1", u64, CRC-32C); it may be stale or missing.
 */
#ifndef CX_VSEQ_H
#define CX_VSEQ_H

#include <stdbool.h>
#include <stdint.h>

#include "objstore/cx_layout.h"
#include "objstore/cx_objstore.h"

cx_code		cx_vseq_exists(cx_objstore *s, const cx_vseq *q, uint64_t n,
						   bool *exists, cx_err *err);

/* Calls fn for each number present, ascending (one listing). */
typedef bool (*cx_vseq_fn) (void *arg, uint64_t n);
cx_code		cx_vseq_list(cx_objstore *s, const cx_vseq *q, cx_vseq_fn fn,
						 void *arg, cx_err *err);

/*
 * Newest number present.  known (0 if none) is a number the caller saw
 * exist within GC's retention window: probing starts after it (one HEAD when
 * nothing changed).  Without it the hint at hint_key is read and checked to
 * exist, and failing that (or with hint_key NULL) the prefix is listed.  0
 * when the sequence is empty.
 *
 * GC may remove the number probing started from, and those after it, while
 * the probe runs (a stale hint: it removes the oldest first, never the
 * newest): the number found is then gone too, so a caller whose read of it
 * finds nothing asks again with hint_key NULL.
 */
cx_code		cx_vseq_latest(cx_objstore *s, const cx_vseq *q,
						   const char *hint_key, uint64_t known,
						   uint64_t *latest, cx_err *err);

/*
 * Writing number n with put-if-absent.  A put that does not plainly succeed
 * ("exists", I/O error, timeout: it may have landed, or a transport retry may
 * have met our own landed put) is settled by reading n back: the same bytes
 * mean ours (every object carries a random commit id, so another writer's
 * object never has our bytes).  A put that did not land is repeated a few
 * times; if the last read-back still finds nothing, or a read-back fails,
 * the outcome is unknown (a request that timed out may still be applied).
 * An unknown outcome is settled only by calling this again with the same
 * object: a late landing of the first put is then harmless, whereas any
 * other object put at n could meet it.  The message of an unknown outcome
 * names "<uri>/<key>" once, then the put's and the read-back's reasons.
 */
typedef enum cx_vseq_outcome
{
	CX_VSEQ_LANDED,				/* n holds our object (CX_OK) */
	CX_VSEQ_TAKEN,				/* n holds another object, in *taken (CX_OK) */
	CX_VSEQ_FAILED,				/* error; n does not hold our object */
	CX_VSEQ_UNKNOWN				/* error; whether n holds it is unknown */
} cx_vseq_outcome;

cx_code		cx_vseq_put(cx_objstore *s, const cx_vseq *q, uint64_t n,
						const cx_buf *object, cx_buf *taken,
						cx_vseq_outcome *outcome, cx_err *err);

/* Overwrites a hint (plain put); callers treat failure as harmless. */
cx_code		cx_hint_write(cx_objstore *s, const char *key, uint64_t n,
						  cx_err *err);
/* CX_ERR_NOT_FOUND or CX_ERR_CORRUPT mean "no usable hint". */
cx_code		cx_hint_read(cx_objstore *s, const char *key, uint64_t *n,
						 cx_err *err);

#endif							/* CX_VSEQ_H */
