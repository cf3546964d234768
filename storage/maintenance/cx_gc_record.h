/*
 * cx_gc_record.h — the retention records of garbage collection: what GC
 * decided to retain of a store's base versions, recorded in the store
 * before it deletes anything (docs/FORMAT.md "GC retention records",
 * docs/design/maintenance.md "Garbage collection").
 *
 * A record says: of base versions 1 .. newest, those in retained were
 * retained by every GC run so far, every other one was collected (some run
 * left it unretained, so objects only it names may be gone).  Records are a
 * sequence (cx_layout_gc_records) written with put-if-absent, each one the
 * cumulative decision of every record before it: a run merges the newest
 * record into its own decision and puts the result at the next number, and
 * a lost race merges the winner's too, so no decision is lost.
 */
#ifndef CX_GC_RECORD_H
#define CX_GC_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore/cx_objstore.h"

typedef struct cx_gc_record
{
	uint64_t	number;			/* its place in the sequence (0: none read) */
	uint64_t	newest;			/* newest base version decided on; 0: none */
	uint64_t   *retained;		/* malloc'd, ascending, the last is newest */
	size_t		n;
} cx_gc_record;

void		cx_gc_record_free(cx_gc_record *r);

/* Whether r says version was collected: at most newest, not retained. */
bool		cx_gc_record_collected(const cx_gc_record *r, uint64_t version);

/*
 * Makes into the decision of both: newest the larger, and a version
 * retained only if neither decided to collect it (each decided only up to
 * its own newest).  into->number is left alone.
 */
cx_code		cx_gc_record_merge(cx_gc_record *into, const cx_gc_record *other,
							   cx_err *err);

cx_code		cx_gc_record_encode(const cx_gc_record *r, cx_buf *out,
								cx_err *err);
/* Checks and decodes untrusted bytes; name is the object in messages.
 * CX_ERR_CORRUPT (or CX_ERR_UNSUPPORTED: a newer format) naming what is
 * wrong. */
cx_code		cx_gc_record_decode(const uint8_t *data, size_t len,
								const char *name, cx_gc_record *r,
								cx_err *err);

/* The newest record of the store into *r (all zero when there is none:
 * no GC recorded a decision yet). */
cx_code		cx_gc_record_load_latest(cx_objstore *s, cx_gc_record *r,
									 cx_err *err);

/*
 * Puts mine, a run's decision already merged with the newest record read
 * (numbered mine->number), at the next number; a number another run took
 * first has its record merged in and the next one tried, a few times, then
 * CX_ERR_CONFLICT.  mine->number receives the number it landed at.  Then
 * deletes the records numbered below it (a failure to is left to the next
 * put): the one landed holds all their decisions.
 */
cx_code		cx_gc_record_put(cx_objstore *s, cx_gc_record *mine,
							 cx_err *err);

#endif							/* CX_GC_RECORD_H */
