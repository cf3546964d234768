/*
 * cx_compact_lease.c — the lease that makes one compaction per store run at
 * a time (cx_compact_int.h).  The object is a few lines of text so that an
 * operator can see who holds it with any object-store tool.
 */
#include "maintenance/cx_compact_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "objstore/cx_layout.h"

#define LEASE_MAGIC "ctxstore compaction lease"
#define LEASE_TEXT_MAX (CX_LEASE_HOLDER_MAX + 128)

static cx_code
encode_lease(const cx_compact_lease *l, char *text, size_t *len, cx_err *err)
{
	int			n = snprintf(text, LEASE_TEXT_MAX,
							 LEASE_MAGIC "\nholder %s\nsince %" PRId64
							 "\nexpires %" PRId64 "\n",
							 l->holder, l->since_us, l->expires_us);

	if (n < 0 || n >= LEASE_TEXT_MAX)
		return cx_err_set(err, CX_ERR_INVALID, "compaction lease holder is too long");
	*len = (size_t) n;
	return CX_OK;
}

static bool
decode_lease(const char *text, cx_compact_lease *l)
{
	const char *holder = strstr(text, "\nholder ");
	const char *end = holder != NULL ? strchr(holder + 8, '\n') : NULL;
	size_t		n;

	if (strncmp(text, LEASE_MAGIC "\n", sizeof(LEASE_MAGIC)) != 0 ||
		end == NULL || (n = (size_t) (end - holder - 8)) > CX_LEASE_HOLDER_MAX)
		return false;
	memcpy(l->holder, holder + 8, n);
	l->holder[n] = '\0';
	return sscanf(end, "\nsince %" SCNd64 "\nexpires %" SCNd64,
				  &l->since_us, &l->expires_us) == 2;
}

cx_code
cx_compact_lease_read(cx_objstore *s, cx_compact_lease *l, cx_err *err)
{
	cx_buf		b;
	cx_code		rc;
	char		text[LEASE_TEXT_MAX + 1];

	cx_buf_init(&b);
	rc = cx_obj_get(s, CX_COMPACTION_LEASE_KEY, &b, err);
	if (rc == CX_OK)
	{
		bool		fits = b.len <= LEASE_TEXT_MAX;

		if (fits)
		{
			memcpy(text, b.data, b.len);
			text[b.len] = '\0';
		}
		if (!fits || !decode_lease(text, l))
			rc = cx_err_set(err, CX_ERR_CORRUPT, "%s: not a compaction lease",
							CX_COMPACTION_LEASE_KEY);
	}
	cx_buf_free(&b);
	return rc;
}

/* "2026-12-01 16:33:34 UTC" */
static void
format_time(int64_t us, char *out, size_t size)
{
	time_t		t = (time_t) (us / 1000000);
	struct tm	tm;

	if (gmtime_r(&t, &tm) == NULL ||
		strftime(out, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(out, size, "%" PRId64 " us", us);
}

static cx_code
busy(const cx_compact_lease *l, int64_t now_us, cx_err *err)
{
	char		since[64];

	format_time(l->since_us, since, sizeof(since));
	return cx_err_set(err, CX_ERR_BUSY,
					  "another compaction holds the store's lease (%s): %s, "
					  "since %s, for %" PRId64 " more seconds",
					  CX_COMPACTION_LEASE_KEY, l->holder, since,
					  (l->expires_us - now_us + 999999) / 1000000);
}

static cx_code
write_lease(cx_objstore *s, const cx_compact_lease *l, cx_put_mode mode,
			cx_err *err)
{
	char		text[LEASE_TEXT_MAX];
	size_t		len = 0;

	if (encode_lease(l, text, &len, err) != CX_OK)
		return err->code;
	return cx_obj_put(s, CX_COMPACTION_LEASE_KEY, text, len, mode, err);
}

/* No lease, or one we may replace: put ours; someone else's live one: BUSY. */
static cx_code
take_once(cx_objstore *s, cx_compact_lease *mine, int64_t now_us, cx_err *err)
{
	cx_compact_lease held;
	cx_code		rc = cx_compact_lease_read(s, &held, err);

	if (rc == CX_ERR_NOT_FOUND)
		return write_lease(s, mine, CX_PUT_IF_ABSENT, err);
	if (rc != CX_OK && rc != CX_ERR_CORRUPT)
		return rc;
	if (rc == CX_OK && strcmp(held.holder, mine->holder) == 0)
	{
		/* A renewal keeps the time the job first took it. */
		mine->since_us = held.since_us;
		return write_lease(s, mine, CX_PUT_OVERWRITE, err);
	}
	if (rc == CX_OK && held.expires_us > now_us)
		return busy(&held, now_us, err);
	/* Expired or unreadable (a holder that died mid-write): take it over. */
	rc = cx_obj_delete(s, CX_COMPACTION_LEASE_KEY, err);
	return rc != CX_OK ? rc : write_lease(s, mine, CX_PUT_IF_ABSENT, err);
}

cx_code
cx_compact_lease_take(cx_objstore *s, const char *holder,
					  uint32_t lease_seconds, int64_t now_us, cx_err *err)
{
	cx_compact_lease mine;
	cx_code		rc;

	if (holder == NULL || holder[0] == '\0' ||
		strlen(holder) > CX_LEASE_HOLDER_MAX || strchr(holder, '\n') != NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "compaction lease holder must be 1 to %d characters "
						  "on one line", CX_LEASE_HOLDER_MAX);
	strcpy(mine.holder, holder);
	mine.since_us = now_us;
	mine.expires_us = now_us + (int64_t) lease_seconds * 1000000;
	rc = take_once(s, &mine, now_us, err);
	/*
	 * Another caller put one between our read and our put: theirs is live,
	 * unless its job released it again before we read it.  Then the store
	 * is free: one more try (no loop), and if that races too, busy.
	 */
	for (int tries = 0; rc == CX_ERR_EXISTS; tries++)
	{
		cx_compact_lease held;

		rc = cx_compact_lease_read(s, &held, err);
		if (rc == CX_OK)
			rc = busy(&held, now_us, err);
		else if (rc == CX_ERR_NOT_FOUND && tries == 0)
			rc = take_once(s, &mine, now_us, err);
		else if (rc == CX_ERR_NOT_FOUND)
			rc = cx_err_set(err, CX_ERR_BUSY,
							"the store's compaction lease (%s) changed hands "
							"twice while we took it",
							CX_COMPACTION_LEASE_KEY);
	}
	return rc;
}

cx_code
cx_compact_lease_release(cx_objstore *s, const char *holder, cx_err *err)
{
	cx_compact_lease held;
	cx_code		rc = cx_compact_lease_read(s, &held, err);

	if (rc == CX_ERR_NOT_FOUND)
		return CX_OK;
	if (rc != CX_OK)
		return rc;
	if (strcmp(held.holder, holder) != 0)
		return CX_OK;
	return cx_obj_delete(s, CX_COMPACTION_LEASE_KEY, err);
}
