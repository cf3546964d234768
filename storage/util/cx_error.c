/*
 * cx_error.c — filling cx_err records.
 */
#include "ctxstore/error.h"

#include <stdio.h>
#include <string.h>

cx_code
cx_err_set(cx_err *err, cx_code code, const char *fmt,...)
{
	va_list		ap;

	err->code = code;
	err->refused = false;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

cx_code
cx_err_prefix(cx_err *err, const char *fmt,...)
{
	char		old[CX_ERR_MSG_LEN];
	va_list		ap;
	int			n;

	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	/* Append ": <old>" in whatever room is left; truncation is acceptable. */
	if (n >= 0 && (size_t) n < sizeof(err->msg))
	{
		size_t		used = (size_t) n;
		size_t		room = sizeof(err->msg) - used;

		strncat(err->msg + used, ": ", room - 1);
		used = strlen(err->msg);
		strncat(err->msg + used, old, sizeof(err->msg) - used - 1);
	}
	return err->code;
}

const char *
cx_code_name(cx_code code)
{
	switch (code)
	{
		case CX_OK:
			return "ok";
		case CX_ERR_NOT_FOUND:
			return "not_found";
		case CX_ERR_EXISTS:
			return "exists";
		case CX_ERR_CORRUPT:
			return "corrupt";
		case CX_ERR_IO:
			return "io";
		case CX_ERR_INVALID:
			return "invalid";
		case CX_ERR_NOMEM:
			return "nomem";
		case CX_ERR_CONFLICT:
			return "conflict";
		case CX_ERR_SCHEMA:
			return "schema";
		case CX_ERR_UNSUPPORTED:
			return "unsupported";
		case CX_ERR_TIMEOUT:
			return "timeout";
		case CX_ERR_AUTH:
			return "auth";
		case CX_ERR_FENCED:
			return "fenced";
		case CX_ERR_LIMIT:
			return "limit";
		case CX_ERR_PERMISSION:
			return "permission";
		case CX_ERR_NOSPACE:
			return "nospace";
		case CX_ERR_IO_PERMANENT:
			return "io_permanent";
		case CX_ERR_UNIQUE:
			return "unique";
		case CX_ERR_CARDINALITY:
			return "cardinality";
		case CX_ERR_BUSY:
			return "busy";
		case CX_ERR_CANCELED:
			return "canceled";
	}
	return "unknown";
}
