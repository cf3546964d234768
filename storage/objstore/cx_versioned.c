/*
 * cx_versioned.c — numbered object sequences: probing for the newest, puts,
 * hints (cx_versioned.h).
 */
#include "objstore/cx_versioned.h"

#include <stdio.h>
#include <string.h>

#include "util/cx_crc32c.h"

#define HINT_MAGIC "CXL1"
/* Puts repeated when reading back shows an ambiguous put did not land. */
#define MAX_PUT_TRIES 4
#define HINT_LEN 16				/* magic, u64 number, u32 CRC-32C */

cx_code
cx_vseq_exists(cx_objstore *s, const cx_vseq *q, uint64_t n, bool *exists,
			   cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	uint64_t	size;
	cx_code		rc;

	cx_vseq_key(q, n, key);
	rc = cx_obj_head(s, key, &size, err);
	*exists = rc == CX_OK;
	return rc == CX_ERR_NOT_FOUND ? CX_OK : rc;
}

/*
 * Newest number, given that `from` exists (or is 0).  Gallops forward
 * (from+1, +3, +7, ...) until a number is missing, then bisects between the
 * last one found and the first one missing: one HEAD when nothing changed,
 * O(log distance) for a stale starting point.
 */
static cx_code
probe_forward(cx_objstore *s, const cx_vseq *q, uint64_t from,
			  uint64_t *latest, cx_err *err)
{
	uint64_t	lo = from;		/* exists (or 0) */
	uint64_t	hi;				/* missing */
	uint64_t	step = 1;
	bool		exists;

	for (;;)
	{
		hi = step > UINT64_MAX - lo ? UINT64_MAX : lo + step;
		if (hi == lo)			/* lo is UINT64_MAX: nothing above to probe */
			break;
		if (cx_vseq_exists(s, q, hi, &exists, err) != CX_OK)
			return err->code;
		if (!exists)
			break;
		lo = hi;
		step = step > UINT64_MAX / 2 ? step : step * 2;
	}
	while (hi - lo > 1)
	{
		uint64_t	mid = lo + (hi - lo) / 2;

		if (cx_vseq_exists(s, q, mid, &exists, err) != CX_OK)
			return err->code;
		if (exists)
			lo = mid;
		else
			hi = mid;
	}
	*latest = lo;
	return CX_OK;
}

typedef struct list_walk
{
	const cx_vseq *q;
	cx_vseq_fn	fn;
	void	   *arg;
} list_walk;

static bool
walk_one_key(void *arg, const char *key, uint64_t size)
{
	list_walk  *w = arg;
	uint64_t	n;

	(void) size;
	if (!cx_vseq_parse(w->q, key, &n))
		return true;
	return w->fn(w->arg, n);
}

cx_code
cx_vseq_list(cx_objstore *s, const cx_vseq *q, cx_vseq_fn fn, void *arg,
			 cx_err *err)
{
	list_walk	w = {q, fn, arg};

	return cx_obj_list(s, q->prefix, walk_one_key, &w, err);
}

static bool
keep_max(void *arg, uint64_t n)
{
	uint64_t   *max = arg;

	if (n > *max)
		*max = n;
	return true;
}

/*
 * A hint is trusted only once its number is seen to exist: one far behind
 * may name a number GC removed, and probing forward from there would report
 * an old number as the newest (and let a writer fork the sequence).
 */
cx_code
cx_vseq_latest(cx_objstore *s, const cx_vseq *q, const char *hint_key,
			   uint64_t known, uint64_t *latest, cx_err *err)
{
	uint64_t	hint;
	bool		exists = false;
	cx_code		rc;

	*latest = 0;
	if (known > 0)
		return probe_forward(s, q, known, latest, err);
	if (hint_key == NULL)
		return cx_vseq_list(s, q, keep_max, latest, err);
	rc = cx_hint_read(s, hint_key, &hint, err);
	if (rc != CX_OK && rc != CX_ERR_NOT_FOUND && rc != CX_ERR_CORRUPT)
		return rc;
	if (rc == CX_OK && cx_vseq_exists(s, q, hint, &exists, err) != CX_OK)
		return err->code;
	if (exists)
		return probe_forward(s, q, hint, latest, err);
	return cx_vseq_list(s, q, keep_max, latest, err);
}

/* A request's reason without the "<op> <uri>/<key>: " its message starts
 * with (the whole message if it does not name key). */
static const char *
reason(const char *msg, const char *key)
{
	const char *at = strstr(msg, key);

	if (at == NULL)
		return msg;
	at += strlen(key);
	return strncmp(at, ": ", 2) == 0 ? at + 2 : at;
}

/*
 * An ambiguous put that could not be settled.  The message names the key
 * once, whole, then both reasons (put_err is a copy: err is the
 * destination).
 */
static cx_code
unknown_outcome(cx_objstore *s, const char *key, cx_code code,
				const cx_err *put_err, const char *after, cx_err *err)
{
	return cx_err_set(err, code,
					  "%s/%s: outcome unknown: the put failed (%.150s) and %.200s",
					  s->uri, key, reason(put_err->msg, key), after);
}

cx_code
cx_vseq_put(cx_objstore *s, const cx_vseq *q, uint64_t n,
			const cx_buf *object, cx_buf *taken, cx_vseq_outcome *outcome,
			cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	char		after[CX_ERR_MSG_LEN];

	cx_vseq_key(q, n, key);
	for (int tries = 1;; tries++)
	{
		cx_code		rc;
		cx_code		rb;
		cx_err		put_err;
		cx_err		rb_err;

		rc = cx_obj_put(s, key, object->data, object->len, CX_PUT_IF_ABSENT,
						&put_err);
		if (rc == CX_OK)
		{
			*outcome = CX_VSEQ_LANDED;
			return CX_OK;
		}
		*outcome = CX_VSEQ_FAILED;
		if (!cx_put_may_have_landed(rc, &put_err))
		{
			*err = put_err;
			return rc;
		}
		rb = cx_obj_get(s, key, taken, &rb_err);
		if (rb == CX_OK)
		{
			bool		ours = taken->len == object->len &&
				memcmp(taken->data, object->data, object->len) == 0;

			*outcome = ours ? CX_VSEQ_LANDED : CX_VSEQ_TAKEN;
			return CX_OK;
		}
		if (rb != CX_ERR_NOT_FOUND)
		{
			*outcome = CX_VSEQ_UNKNOWN;
			snprintf(after, sizeof(after), "reading it back failed (%.200s)",
					 reason(rb_err.msg, key));
			return unknown_outcome(s, key, rb, &put_err, after, err);
		}

		/*
		 * Not there now, but a request that timed out may still be applied
		 * later: after the last try, only a put of these same bytes may go
		 * to n (cx_versioned.h).
		 */
		if (tries == MAX_PUT_TRIES)
		{
			*outcome = CX_VSEQ_UNKNOWN;
			snprintf(after, sizeof(after),
					 "%d puts and read-backs found nothing there, but a put that timed out may still land",
					 tries);
			return unknown_outcome(s, key, rc, &put_err, after, err);
		}
	}
}

cx_code
cx_hint_write(cx_objstore *s, const char *key, uint64_t n, cx_err *err)
{
	uint8_t		hint[HINT_LEN];

	memcpy(hint, HINT_MAGIC, 4);
	cx_store_u64(hint + 4, n);
	cx_store_u32(hint + 12, cx_crc32c(0, hint, 12));
	return cx_obj_put(s, key, hint, sizeof(hint), CX_PUT_HINT, err);
}

cx_code
cx_hint_read(cx_objstore *s, const char *key, uint64_t *n, cx_err *err)
{
	cx_buf		b;
	cx_code		rc;

	cx_buf_init(&b);
	rc = cx_obj_get(s, key, &b, err);
	if (rc == CX_OK)
	{
		if (b.len != HINT_LEN || memcmp(b.data, HINT_MAGIC, 4) != 0 ||
			cx_load_u32(b.data + 12) != cx_crc32c(0, b.data, 12) ||
			(*n = cx_load_u64(b.data + 4)) == 0)
			rc = cx_err_set(err, CX_ERR_CORRUPT, "%s/%s: corrupt hint",
							s->uri, key);
	}
	cx_buf_free(&b);
	return rc;
}
