/*
 * cx_commit.c — optimistic, gap-free commits of base-table versions
 * (docs/INVARIANTS.md, invariants 1 and 11).
 *
 * One attempt: derive version N+1 from the newest version N and write it with
 * put-if-absent.  Put-if-absent is the only arbiter: whoever creates N+1 owns
 * it, and everyone else reloads and rebases onto the winner.
 *
 * A put can fail without saying whether it landed (a timeout or reset after
 * the request was sent), and a backend that retries internally may then see
 * its own earlier attempt as "exists".  So every put that does not plainly
 * succeed is settled by reading version N+1 back and comparing it with ours
 * (cx_manifest_put, cx_vseq_put: every version carries a random commit id,
 * so equal bytes mean ours); re-committing after our own put landed would
 * apply the change twice.
 */
#include "table/cx_commit.h"
#include "util/cx_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ATTEMPTS 64
#define DEFAULT_BACKOFF_MAX_MS 200

void
cx_commit_options_default(cx_commit_options *o)
{
	o->max_attempts = DEFAULT_MAX_ATTEMPTS;
	o->backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
}

/*
 * Sleeps a random time in [0, min(backoff_max_ms, 2^attempt ms)]: "full
 * jitter", so committers that collided spread out instead of colliding again
 * in lockstep, and the first retries stay short.
 */
static void
backoff(const cx_commit_options *o, int attempt)
{
	long		cap_us = 1000L << (attempt < 16 ? attempt : 16);
	uint32_t	r;
	long		us;
	cx_err		ignored;

	if (cap_us > o->backoff_max_ms * 1000L)
		cap_us = o->backoff_max_ms * 1000L;
	if (cap_us <= 0)
		return;
	if (cx_random_bytes(&r, sizeof(r), &ignored) != CX_OK)
		r = (uint32_t) cx_clock_now_us();
	us = (long) (r % (uint32_t) (cap_us + 1));
	cx_clock_sleep_us(us);
}

/* The next version's skeleton: a copy of base with a new identity. */
static cx_code
build_next(const cx_manifest *base, const char *operation, cx_manifest **out,
		   cx_err *err)
{
	cx_manifest *next = base != NULL ? cx_manifest_clone(base) : cx_manifest_new();
	int64_t		now = cx_clock_now_us();

	*out = NULL;
	if (next == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "preparing a commit: out of memory");
	next->version = base != NULL ? base->version + 1 : 1;
	/* Commit times never go backwards along the version chain, even when
	 * committers' clocks disagree. */
	next->committed_at_us = now;
	if (base != NULL && now <= base->committed_at_us)
		next->committed_at_us = base->committed_at_us + 1;
	free(next->operation);
	next->operation = cx_strdup(operation);
	if (next->operation == NULL)
	{
		cx_manifest_free(next);
		return cx_err_set(err, CX_ERR_NOMEM, "preparing a commit: out of memory");
	}
	if (cx_random_bytes(next->commit_id, sizeof(next->commit_id), err) != CX_OK)
	{
		cx_manifest_free(next);
		return err->code;
	}
	*out = next;
	return CX_OK;
}

/*
 * One attempt on top of base: build the next version, let the caller edit it,
 * write it.  On CX_OK, *won says whether we own *version, the version the
 * attempt wrote (false: someone else's commit is that version).
 */
static cx_code
attempt(cx_objstore *s, const cx_manifest *base, const char *operation,
		cx_rebase_fn rebase, void *arg, bool *won, uint64_t *version,
		cx_err *err)
{
	cx_manifest *next;
	cx_buf		bytes;
	cx_code		rc;

	if (build_next(base, operation, &next, err) != CX_OK)
		return err->code;
	cx_buf_init(&bytes);
	rc = rebase(arg, base, next, err);
	if (rc == CX_OK)
		rc = cx_manifest_encode(next, &bytes, err);
	if (rc == CX_OK)
		rc = cx_manifest_put(s, next->version, &bytes, won, err);
	if (rc == CX_OK)
		*version = next->version;
	cx_buf_free(&bytes);
	cx_manifest_free(next);
	return rc;
}

cx_code
cx_commit(cx_objstore *s, const char *operation, cx_rebase_fn rebase,
		  void *arg, const cx_commit_options *opt, uint64_t *version,
		  cx_err *err)
{
	cx_commit_options o;
	cx_manifest *base = NULL;
	bool		won = false;
	uint64_t	tried = 0;
	cx_code		rc;
	int			losses = 0;
	cx_err		hint_err;

	if (opt != NULL)
		o = *opt;
	else
		cx_commit_options_default(&o);
	if (o.max_attempts < 1)
		o.max_attempts = 1;
	for (;;)
	{
		rc = cx_manifest_load_latest(s, &base, err);
		if (rc == CX_OK)
			rc = attempt(s, base, operation, rebase, arg, &won, &tried, err);
		cx_manifest_free(base);
		base = NULL;
		if (rc != CX_OK || won)
			break;
		if (++losses == o.max_attempts)
			return cx_err_set(err, CX_ERR_CONFLICT,
							  "commit (%s) to %s: lost the race for the next version %d times; gave up",
							  operation, s->uri, losses);
		backoff(&o, losses);
	}
	if (rc != CX_OK)
		return rc;
	*version = tried;
	/* Best effort: a failed hint write only makes readers probe further. */
	(void) cx_manifest_write_hint(s, *version, &hint_err);
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Schema checks
 * -------------------------------------------------------------------------- */

/* "int64", "list of string", "external point", "list of external point". */
static void
describe_type(const cx_column *c, char *buf, size_t size)
{
	bool		list = c->type == CX_T_LIST;
	cx_type		t = list ? (cx_type) c->elem_type : (cx_type) c->type;

	snprintf(buf, size, "%s%s%s%s", list ? "list of " : "", cx_type_name(t),
			 c->ext_type != NULL ? " " : "",
			 c->ext_type != NULL ? c->ext_type : "");
}

cx_code
cx_commit_check_schema(const cx_schema *store, const cx_schema *data,
					   cx_err *err)
{
	uint32_t	n = store->ncolumns > data->ncolumns ? store->ncolumns : data->ncolumns;

	for (uint32_t i = 0; i < n; i++)
	{
		const cx_column *a = i < store->ncolumns ? &store->columns[i] : NULL;
		const cx_column *b = i < data->ncolumns ? &data->columns[i] : NULL;
		char		ta[96];
		char		tb[96];

		if (b == NULL)
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "schema mismatch: the data lacks the store's column %u \"%s\"",
							  i + 1, a->name);
		if (a == NULL)
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "schema mismatch: the data has column %u \"%s\", which the store lacks",
							  i + 1, b->name);
		if (strcmp(a->name, b->name) != 0)
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "schema mismatch: column %u is \"%s\" in the store but \"%s\" in the data",
							  i + 1, a->name, b->name);
		if (a->field_id != b->field_id)
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "schema mismatch: column \"%s\" has field id %d in the store but %d in the data (it was dropped and added again)",
							  a->name, (int) a->field_id, (int) b->field_id);
		if (!cx_column_same_type(a, b))
		{
			describe_type(a, ta, sizeof(ta));
			describe_type(b, tb, sizeof(tb));
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "schema mismatch: column \"%s\" is %s in the store but %s in the data",
							  a->name, ta, tb);
		}
	}
	return CX_OK;
}
