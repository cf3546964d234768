/*
 * ctxstore/error.h — the engine's error codes and the error record every call fills.
 *
 * The engine never longjmps and never exits: each fallible function returns a
 * cx_code and, on failure, writes a human-readable message into the caller's
 * cx_err.  The PostgreSQL layer maps codes to SQLSTATEs (shared/cx_pgerror.c).
 * Messages name the object involved but never carry a credential.
 */
#ifndef CTXSTORE_ERROR_H
#define CTXSTORE_ERROR_H

#include <stdarg.h>
#include <stdbool.h>

typedef enum cx_code
{
	CX_OK = 0,
	CX_ERR_NOT_FOUND,		/* object or version does not exist */
	CX_ERR_EXISTS,			/* put-if-absent: the object is already there */
	CX_ERR_CORRUPT,			/* checksum, magic, length or structure is wrong */
	CX_ERR_IO,				/* local I/O or transport failure */
	CX_ERR_INVALID,			/* bad argument, key, URI, option or value */
	CX_ERR_NOMEM,			/* allocation failed */
	CX_ERR_CONFLICT,		/* optimistic commit lost too many races */
	CX_ERR_SCHEMA,			/* table schema does not match the store */
	CX_ERR_UNSUPPORTED,		/* feature or format version not supported */
	CX_ERR_TIMEOUT,			/* a bounded wait ran out */
	CX_ERR_AUTH,			/* object store refused the credentials */
	CX_ERR_FENCED,			/* a newer writer claimed the shard */
	CX_ERR_LIMIT,			/* a configured limit was exceeded */
	/*
	 * Refusals that retrying cannot change, so no retry loop repeats them
	 * (CX_ERR_IO, by contrast, may be a passing transport failure or an
	 * ambiguous write): */
	CX_ERR_PERMISSION,		/* file permissions, or the object store
							 * refused a write the credentials may not do */
	CX_ERR_NOSPACE,			/* the disk or a quota is full */
	CX_ERR_IO_PERMANENT,	/* any other: a read-only file system, a write
							 * the object store rejected as malformed or
							 * aimed at a missing bucket or container */
	CX_ERR_UNIQUE,			/* an insert of a key that is live; the
							 * message names the key */
	CX_ERR_CARDINALITY,		/* an upsert whose upsert-key value more than
							 * one live row holds; the message names two */
	CX_ERR_BUSY,			/* another job holds the store's lease (a
							 * compaction); the message names it */
	CX_ERR_CANCELED			/* the caller asked a job to stop */
} cx_code;

#define CX_ERR_MSG_LEN 512

typedef struct cx_err
{
	cx_code		code;
	char		msg[CX_ERR_MSG_LEN];
	bool		refused;		/* CX_ERR_IO from an object store that
								 * answered every attempt 429 or 503: it
								 * applied none of them (cx_http.c); false
								 * after every cx_err_set */
} cx_err;

/* Record an error and return its code, so callers can write
 * "return cx_err_set(err, CX_ERR_IO, "...", ...);". */
cx_code		cx_err_set(cx_err *err, cx_code code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Prefix the message already in err with more context ("reading x: <old>"). */
cx_code		cx_err_prefix(cx_err *err, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));

/* Stable lower-case name of a code, e.g. "not_found"; never NULL. */
const char *cx_code_name(cx_code code);

#endif							/* CTXSTORE_ERROR_H */
