/*
 * cx_backend_support.c — what every object-store backend and the
 * backend-independent wrappers (cx_objstore.c) use: key checks and their
 * spelling in messages, reading options, random bytes.
 *
 * It calls no backend, so the backends depend on it and never on the
 * wrappers that dispatch to them (cx_objstore.c -> backends -> this file).
 */
#include "objstore/cx_objstore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

/* Longer keys are shortened in messages so that the reason still fits. */
#define MSG_KEY_MAX 200

cx_code
cx_key_check(const char *key, bool is_prefix, cx_err *err)
{
	size_t		len;
	size_t		start;

	if (key == NULL)
		return cx_err_set(err, CX_ERR_INVALID, "key is missing");
	len = strlen(key);
	if (len == 0)
		return is_prefix ? CX_OK : cx_err_set(err, CX_ERR_INVALID, "empty key");
	if (len > CX_KEY_MAX)
		return cx_err_set(err, CX_ERR_INVALID, "%zu bytes, more than %d",
						  len, CX_KEY_MAX);
	if (key[0] == '/')
		return cx_err_set(err, CX_ERR_INVALID, "keys are relative: leading '/'");
	if (memchr(key, '\\', len) != NULL)
		return cx_err_set(err, CX_ERR_INVALID, "backslash not allowed");
	if (is_prefix && key[len - 1] == '/')
		len--;

	/* Walk the segments of key[0 .. len); len > 0 since key[0] != '/'. */
	start = 0;
	for (;;)
	{
		const char *slash = memchr(key + start, '/', len - start);
		size_t		end = slash ? (size_t) (slash - key) : len;
		size_t		seglen = end - start;

		if (seglen == 0)
			return cx_err_set(err, CX_ERR_INVALID, "empty segment");
		if ((seglen == 1 && key[start] == '.') ||
			(seglen == 2 && key[start] == '.' && key[start + 1] == '.'))
			return cx_err_set(err, CX_ERR_INVALID, "\"%.*s\" segment not allowed",
							  (int) seglen, key + start);
		if (end == len)
			return CX_OK;
		start = end + 1;
	}
}

/* Length of key to show in a message, and whether it was cut. */
int
cx_key_shown_len(const char *key)
{
	size_t		len = strlen(key);

	return (int) (len > MSG_KEY_MAX ? MSG_KEY_MAX : len);
}

const char *
cx_key_cut_mark(const char *key)
{
	return strlen(key) > MSG_KEY_MAX ? "..." : "";
}

cx_code
cx_key_validate(const char *key, cx_err *err)
{
	if (cx_key_check(key, false, err) == CX_OK)
		return CX_OK;
	if (key == NULL)
		return err->code;
	return cx_err_prefix(err, "invalid key \"%.*s%s\"", cx_key_shown_len(key), key,
						 cx_key_cut_mark(key));
}

const char *
cx_option_get(const cx_option *options, size_t noptions, const char *name)
{
	const char *value = NULL;

	for (size_t i = 0; i < noptions; i++)
		if (options[i].name != NULL && strcmp(options[i].name, name) == 0)
			value = options[i].value;
	return value;
}

cx_code
cx_option_bool(const cx_option *options, size_t noptions, const char *name,
			   bool dflt, bool *out, cx_err *err)
{
	static const char *const yes[] = {"on", "true", "yes", "1"};
	static const char *const no[] = {"off", "false", "no", "0"};
	const char *v = cx_option_get(options, noptions, name);

	*out = dflt;
	if (v == NULL)
		return CX_OK;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
	{
		if (strcasecmp(v, yes[i]) == 0)
		{
			*out = true;
			return CX_OK;
		}
		if (strcasecmp(v, no[i]) == 0)
		{
			*out = false;
			return CX_OK;
		}
	}
	return cx_err_set(err, CX_ERR_INVALID,
					  "option %s must be on or off, not \"%.64s\"", name, v);
}

cx_code
cx_option_int(const cx_option *options, size_t noptions, const char *name,
			  long min, long max, long dflt, long *out, cx_err *err)
{
	const char *v = cx_option_get(options, noptions, name);
	char	   *end;
	long		x;

	*out = dflt;
	if (v == NULL)
		return CX_OK;
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || x < min || x > max)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option %s must be an integer between %ld and %ld, not \"%.64s\"",
						  name, min, max, v);
	*out = x;
	return CX_OK;
}

static void (*random_source) (void *buf, size_t n);

void
cx_random_set_source(void (*fill) (void *buf, size_t n))
{
	random_source = fill;
}

cx_code
cx_random_bytes(void *buf, size_t n, cx_err *err)
{
	uint8_t    *p = buf;

	if (random_source != NULL)
	{
		random_source(buf, n);
		return CX_OK;
	}

	while (n > 0)
	{
		ssize_t		got = getrandom(p, n, 0);

		if (got < 0)
		{
			char		msg[128];
			int			e = errno;

			if (e == EINTR)
				continue;
			return cx_err_set(err, CX_ERR_IO, "getrandom: %s",
							  strerror_r(e, msg, sizeof(msg)));
		}
		/* Reads above 256 bytes may come back short; loop for the rest. */
		p += got;
		n -= (size_t) got;
	}
	return CX_OK;
}
