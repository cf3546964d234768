/*
 * swtest.h — helpers shared by the MemWAL tests (test_shard.c, test_wal.c,
 * test_shardwriter.c): a standard table, encoded row batches, reading back
 * which ids a shard's generations hold, and a wrapping object store that
 * injects faults into puts.
 */
#ifndef SWTEST_H
#define SWTEST_H

#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "memwal/cx_shard_manifest.h"

/* A store at cx_test_uri(suffix); NULL (and a test failure) on error. */
cx_objstore *sw_store(const char *suffix);

/* (id string, n int64) */
cx_schema  *sw_schema(void);

/* Appends rows id = "<prefix><i>", n = i for i in [from, from + count). */
void		sw_rows(cx_buf *out, const cx_schema *schema, const char *prefix,
					int from, int count);

/*
 * Counts, over the unmerged generations of the newest manifest of shard_id,
 * how often the id "<prefix><i>" occurs, for i in [from, from + count), into
 * counts[0 .. count).  Returns the total number of rows in those
 * generations, or -1 (and a test failure) on error.
 */
long		sw_count_ids(cx_objstore *s, const char *shard_id,
						 const char *prefix, int from, int count,
						 int *counts);

/* Whether every counts[i] is exactly 1 (failing the test otherwise). */
int			sw_all_once(const int *counts, int n, const char *what);

/*
 * A store that forwards to another and can misbehave on puts and uploads.
 * before_put, if set, runs before every put (with the key); fault applies
 * to the next `faults` puts and upload finishes whose key contains `match`.
 */
typedef enum sw_fault
{
	SW_FAULT_NONE,
	SW_FAULT_LAND_THEN_IO,		/* the object lands, the caller sees IO */
	SW_FAULT_IO_NOT_LANDED,		/* nothing lands, the caller sees IO */
	SW_FAULT_LAND_THEN_IO_GET_FAILS,	/* lands; the read-back fails too */
	SW_FAULT_IO_GET_FAILS,		/* nothing lands; the read-back fails too */
	SW_FAULT_LAND_THEN_EXISTS,	/* lands; the caller sees "exists", as
								 * from a retry after a lost answer */
	SW_FAULT_IO_LANDS_LATE		/* nothing lands yet, the caller sees IO;
								 * the put is applied just before the next
								 * put that is not faulted (a request that
								 * timed out, applied late) */
} sw_fault;

typedef struct sw_wrap
{
	cx_objstore base;
	cx_objstore *inner;
	sw_fault	fault;
	int			faults;
	const char *match;
	int			get_failures;	/* GETs that fail with IO */
	char	   *late_key;		/* SW_FAULT_IO_LANDS_LATE: the put to apply */
	cx_buf		late;
	void		(*before_put) (void *arg, const char *key);
	void	   *arg;
} sw_wrap;

sw_wrap    *sw_wrap_open(const char *suffix);
/* Applies fault to the next `faults` puts and uploads of keys containing
 * match. */
void		sw_wrap_arm(sw_wrap *w, const char *match, sw_fault fault,
						int faults);

/*
 * GC racing a probe for the newest version: until sw_gc_race_end(s), the
 * first HEAD of key on s first deletes the keys deletes[0..n) (kept by
 * pointer: they must outlive the race).
 */
void		sw_gc_race(cx_objstore *s, const char *key,
					   const char *const *deletes, int n);
void		sw_gc_race_end(cx_objstore *s);

#endif							/* SWTEST_H */
