/*
 * cx_commit.h — optimistic, gap-free commits of base-table versions.
 *
 * A commit reads the newest version N, lets the caller derive version N+1 from
 * it (the "rebase" callback), and writes N+1 with put-if-absent.  If another
 * committer got there first, it reloads and calls rebase again on the newer
 * base, a bounded number of times.  If the put's outcome is ambiguous (an I/O
 * error or timeout after which the object may or may not exist), the object is
 * read back and its commit id compared with ours: equal means we won.
 */
#ifndef CX_COMMIT_H
#define CX_COMMIT_H

#include "table/cx_manifest.h"

/*
 * Derives the next manifest.  base is the newest committed version (NULL for
 * an empty store); next arrives as a deep copy of base (or an empty manifest)
 * with version, commit id, time and operation already set, and the callback
 * edits it in place.  Returning an error aborts the commit with that error.
 */
typedef cx_code (*cx_rebase_fn) (void *arg, const cx_manifest *base,
								 cx_manifest *next, cx_err *err);

typedef struct cx_commit_options
{
	int			max_attempts;	/* races tolerated before CX_ERR_CONFLICT;
								 * default 64 */
	int			backoff_max_ms;	/* cap on the randomised pause between
								 * attempts; default 200 */
} cx_commit_options;

void		cx_commit_options_default(cx_commit_options *o);

/* Commits; *version receives the version written.  opt may be NULL. */
cx_code		cx_commit(cx_objstore *s, const char *operation, cx_rebase_fn rebase,
					  void *arg, const cx_commit_options *opt,
					  uint64_t *version, cx_err *err);

/* CX_ERR_SCHEMA naming the first column (in order) where the data's schema
 * differs from the store's; appends of every kind check with it. */
cx_code		cx_commit_check_schema(const cx_schema *store, const cx_schema *data,
								   cx_err *err);

#endif							/* CX_COMMIT_H */
