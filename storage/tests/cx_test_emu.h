/*
 * cx_test_emu.h — helpers for storage tests against the object-store
 * emulators and the fault proxy that scripts/with-emulators.sh starts
 * (scripts/emulators.sh documents the CX_TEST_* variables it exports).
 *
 * The proxy's control port is driven with plain libcurl rather than
 * cx_http, so that a bug in the client under test cannot hide in the
 * harness.
 */
#ifndef CX_TEST_EMU_H
#define CX_TEST_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cx_buf.h"
#include "objstore/cx_objstore.h"

/*
 * The variable's value, or NULL if it is unset: the running test has then
 * been failed if CX_TEST_REQUIRE_EMULATORS=1 (a run meant to cover the
 * emulators must not go green by skipping them), and otherwise a skip is
 * noted in the output.
 */
const char *cx_test_need_env(const char *name);

/* Sends a request to the fault proxy's control URL ctl (POST /faults with a
 * JSON rule, DELETE /faults, GET /stats, POST /stats/reset); returns the
 * HTTP status (0 on failure) and appends the answer's body to out unless
 * NULL. */
long		cx_test_proxy_ctl(const char *ctl, const char *method,
							  const char *path, const char *json, cx_buf *out);

/* Arms a fault rule; false if the proxy refused it. */
bool		cx_test_proxy_inject(const char *ctl, const char *json);

/* Removes every rule and zeroes the counters. */
void		cx_test_proxy_reset(const char *ctl);

/* A counter of GET /stats ("requests", "connections", "fired"), or -1. */
long		cx_test_proxy_stat(const char *ctl, const char *name);

/* Whether key holds exactly the len bytes at data. */
bool		cx_test_holds(cx_objstore *s, const char *key, const void *data,
						  size_t len);
/* Whether the store says key was last written within the last minute (its
 * mtime, second precision). */
bool		cx_test_written_lately(cx_objstore *s, const char *key);

/*
 * Writes base version 1 of s through the commit protocol's put while s
 * refuses writes the way write_fault (JSON fields "status", "code", ...) at
 * the fault proxy ctl makes it, or as the environment already does when
 * write_fault is NULL; checks that the put fails with expected, naming the
 * version's key, after exactly one PUT (neither the HTTP client nor the
 * commit protocol repeats a write that cannot succeed).
 */
void		cx_test_refused_commit(cx_objstore *s, const char *ctl,
								   const char *write_fault, cx_code expected);

/*
 * GC on s, an empty store, over n orphan fragments (n <= CX_TEST_LIST_MAX):
 * with the default grace all of them are young and kept, with grace 0 all
 * go, and neither run sends a HEAD: the mtimes come from the listing, whose
 * entries carry the time each object was written (checked against a HEAD).
 */
void		cx_test_gc_reads_listed_mtimes(cx_objstore *s, int n);

#define CX_TEST_LIST_MAX 64

/* What a listing passed to cx_test_collect(): the first CX_TEST_LIST_MAX
 * keys and sizes, and how many there were in all. */
typedef struct cx_test_listed
{
	int			n;
	int			stop_after;		/* 0: never stop early */
	char		keys[CX_TEST_LIST_MAX][128];
	uint64_t	sizes[CX_TEST_LIST_MAX];
} cx_test_listed;

/* A cx_list_fn collecting into the cx_test_listed at arg. */
bool		cx_test_collect(void *arg, const char *key, uint64_t size);

#endif							/* CX_TEST_EMU_H */
