/*
 * cx_failpoint.c — arming and firing named failpoints (cx_failpoint.h).
 *
 * The armed set is a small fixed table behind a mutex: failpoints are for
 * tests, so the slow path may take a lock, but the fast path (nothing armed)
 * is the relaxed load of cx_failpoint_active in CX_FAILPOINT.  That flag
 * starts at 1 so the first failpoint reached reads CTXSTORE_FAILPOINTS; it
 * drops to 0 whenever the armed set is empty and the environment was fine.
 */
#include "util/cx_failpoint.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/cx_clock.h"

#define MAX_ARMED 32
#define NAME_MAX_LEN 63
#define SPEC_MAX_LEN 4096
/* Longest delay an action may ask for: a slowed step stays bounded. */
#define DELAY_MAX_MS 60000

typedef enum fp_action
{
	FP_CRASH,
	FP_ERROR,
	FP_ERRNO,
	FP_DELAY
} fp_action;

/* The errnos an action may name: those whose handling tests must reach
 * without the conditions (a full disk, a read-only mount, a permission
 * root does not feel) that produce them. */
static const struct
{
	const char *name;
	int			errnum;
}			errno_actions[] =
{
	{"eacces", EACCES},
	{"eperm", EPERM},
	{"enospc", ENOSPC},
	{"erofs", EROFS}
};

typedef struct failpoint
{
	char		name[NAME_MAX_LEN + 1];
	fp_action	action;
	int			errnum;			/* FP_ERRNO: what it injects */
	long		delay_ms;		/* FP_DELAY: how long the step sleeps */
	uint64_t	nth;			/* fire on this hit only; 0 = on every hit */
	uint64_t	hits;
} failpoint;

typedef struct fp_set
{
	int			n;
	failpoint	fp[MAX_ARMED];
} fp_set;

int			cx_failpoint_active = 1;

static pthread_mutex_t fp_lock = PTHREAD_MUTEX_INITIALIZER;
static fp_set armed;
static bool env_read;
static char env_error[CX_ERR_MSG_LEN];	/* "" unless the variable was bad */

static void
update_active(void)
{
	__atomic_store_n(&cx_failpoint_active,
					 armed.n > 0 || env_error[0] != '\0', __ATOMIC_RELAXED);
}

/* Copies [p, end) into buf without surrounding spaces. */
static void
trimmed(const char *p, const char *end, char *buf, size_t size)
{
	size_t		n;

	while (p < end && isspace((unsigned char) *p))
		p++;
	while (end > p && isspace((unsigned char) end[-1]))
		end--;
	n = (size_t) (end - p) < size - 1 ? (size_t) (end - p) : size - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
}

static bool
valid_name(const char *name)
{
	if (name[0] == '\0')
		return false;
	for (const char *c = name; *c; c++)
		if (!(islower((unsigned char) *c) || isdigit((unsigned char) *c) ||
			  *c == '_' || *c == '.'))
			return false;
	return true;
}

/* An errno action's errno, or 0. */
static int
errno_action(const char *text, size_t len)
{
	for (size_t i = 0; i < sizeof(errno_actions) / sizeof(errno_actions[0]); i++)
		if (strlen(errno_actions[i].name) == len &&
			strncmp(text, errno_actions[i].name, len) == 0)
			return errno_actions[i].errnum;
	return 0;
}

/* "delay:MS" (text is len bytes long) with 1 <= MS <= DELAY_MAX_MS. */
static bool
parse_delay(const char *text, size_t len, failpoint *fp)
{
	char	   *end;

	if (len < 7 || strncmp(text, "delay:", 6) != 0 ||
		!isdigit((unsigned char) text[6]))
		return false;
	fp->delay_ms = strtol(text + 6, &end, 10);
	return end == text + len && fp->delay_ms >= 1 && fp->delay_ms <= DELAY_MAX_MS;
}

/* "crash", "error", an errno action or "delay:MS", optionally "@N" with
 * N >= 1. */
static bool
parse_action(const char *text, failpoint *fp)
{
	const char *at = strchr(text, '@');
	size_t		len = at != NULL ? (size_t) (at - text) : strlen(text);
	char	   *end;

	fp->errnum = errno_action(text, len);
	if (len == 5 && strncmp(text, "crash", 5) == 0)
		fp->action = FP_CRASH;
	else if (len == 5 && strncmp(text, "error", 5) == 0)
		fp->action = FP_ERROR;
	else if (fp->errnum != 0)
		fp->action = FP_ERRNO;
	else if (parse_delay(text, len, fp))
		fp->action = FP_DELAY;
	else
		return false;
	fp->nth = 0;
	if (at == NULL)
		return true;
	if (!isdigit((unsigned char) at[1]))
		return false;
	fp->nth = strtoull(at + 1, &end, 10);
	return *end == '\0' && fp->nth >= 1;
}

/* Adds or replaces the entry of parsed->name in set. */
static bool
set_put(fp_set *set, const failpoint *parsed)
{
	failpoint  *fp = NULL;

	for (int i = 0; i < set->n; i++)
		if (strcmp(set->fp[i].name, parsed->name) == 0)
			fp = &set->fp[i];
	if (fp == NULL)
	{
		if (set->n == MAX_ARMED)
			return false;
		fp = &set->fp[set->n++];
	}
	*fp = *parsed;
	fp->hits = 0;
	return true;
}

/* Parses a whole spec into *set (emptied first). */
static cx_code
parse_spec(const char *spec, fp_set *set, cx_err *err)
{
	const char *p = spec;

	set->n = 0;
	if (spec == NULL)
		return CX_OK;
	if (strlen(spec) > SPEC_MAX_LEN)
		return cx_err_set(err, CX_ERR_INVALID,
						  "failpoint spec is longer than %d bytes", SPEC_MAX_LEN);
	while (*p != '\0')
	{
		const char *start = p;
		const char *comma = strchr(p, ',');
		const char *end = comma != NULL ? comma : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t) (end - p));
		char		item[NAME_MAX_LEN + 32];
		char		name[NAME_MAX_LEN + 2];
		char		action_text[32];
		failpoint	parsed;

		trimmed(p, end, item, sizeof(item));
		p = comma != NULL ? comma + 1 : end;
		if (item[0] == '\0')
			continue;
		if (eq == NULL)
			return cx_err_set(err, CX_ERR_INVALID,
							  "failpoint \"%s\": expected name=crash or name=error (optionally @N)",
							  item);
		trimmed(start, eq, name, sizeof(name));
		trimmed(eq + 1, end, action_text, sizeof(action_text));
		if (strlen(name) > NAME_MAX_LEN || !valid_name(name))
			return cx_err_set(err, CX_ERR_INVALID,
							  "failpoint \"%s\": the name must be 1-%d characters of [a-z0-9_.]",
							  item, NAME_MAX_LEN);
		if (!parse_action(action_text, &parsed))
			return cx_err_set(err, CX_ERR_INVALID,
							  "failpoint \"%s\": the action must be crash, error, one of eacces, eperm, enospc, erofs, or delay:MS (1-%d), optionally followed by @N (N >= 1)",
							  item, DELAY_MAX_MS);
		strcpy(parsed.name, name);
		if (!set_put(set, &parsed))
			return cx_err_set(err, CX_ERR_INVALID,
							  "failpoint spec arms more than %d failpoints", MAX_ARMED);
	}
	return CX_OK;
}

/* Reads the environment once; called with the lock held. */
static void
read_env(void)
{
	const char *spec = getenv(CX_FAILPOINT_ENV);
	fp_set		parsed;
	cx_err		err;

	env_read = true;
	if (parse_spec(spec, &parsed, &err) == CX_OK)
		armed = parsed;
	else
		snprintf(env_error, sizeof(env_error), "%s: %.400s", CX_FAILPOINT_ENV,
				 err.msg);
	update_active();
}

cx_code
cx_failpoint_set(const char *spec, cx_err *err)
{
	fp_set		parsed;

	if (parse_spec(spec, &parsed, err) != CX_OK)
		return err->code;
	pthread_mutex_lock(&fp_lock);
	env_read = true;
	env_error[0] = '\0';
	armed = parsed;
	update_active();
	pthread_mutex_unlock(&fp_lock);
	return CX_OK;
}

/*
 * Counts a hit of name and says whether it fires (then *fired gets a copy of
 * its entry and err the error it injects); crashes or sleeps right here (a
 * delay then lets the step go on: it does not fire).  A malformed
 * environment fires every failpoint as FP_ERROR with CX_ERR_INVALID.
 */
static bool
reach(const char *name, failpoint *fired, cx_err *err)
{
	bool		fire = false;

	pthread_mutex_lock(&fp_lock);
	if (!env_read)
		read_env();
	if (env_error[0] != '\0')
	{
		cx_err_set(err, CX_ERR_INVALID, "%s", env_error);
		pthread_mutex_unlock(&fp_lock);
		fired->action = FP_ERROR;
		return true;
	}
	for (int i = 0; i < armed.n; i++)
	{
		failpoint  *fp = &armed.fp[i];

		if (strcmp(fp->name, name) != 0)
			continue;
		fp->hits++;
		fire = fp->nth == 0 || fp->hits == fp->nth;
		*fired = *fp;
	}
	pthread_mutex_unlock(&fp_lock);
	if (fire && fired->action == FP_CRASH)
		raise(SIGKILL);			/* as kill -9: no cleanup, no flush */
	if (fire && fired->action == FP_DELAY)
	{
		cx_clock_sleep_us((int64_t) fired->delay_ms * 1000);
		return false;
	}
	if (fire)
		cx_err_set(err, CX_ERR_IO, "failpoint %s", name);
	return fire;
}

cx_code
cx_failpoint_hit(const char *name, cx_err *err)
{
	failpoint	fp;

	return reach(name, &fp, err) ? err->code : CX_OK;
}

int
cx_failpoint_errno_hit(const char *name)
{
	failpoint	fp;
	cx_err		ignored;

	if (!reach(name, &fp, &ignored))
		return 0;
	return fp.action == FP_ERRNO ? fp.errnum : EIO;
}

uint64_t
cx_failpoint_hits(const char *name)
{
	uint64_t	hits = 0;

	pthread_mutex_lock(&fp_lock);
	for (int i = 0; i < armed.n; i++)
		if (strcmp(armed.fp[i].name, name) == 0)
			hits = armed.fp[i].hits;
	pthread_mutex_unlock(&fp_lock);
	return hits;
}
