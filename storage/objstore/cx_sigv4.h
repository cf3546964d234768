/*
 * cx_sigv4.h — AWS Signature Version 4 for S3 requests (header-based).
 *
 * The canonical request is built from the request's method, the path and
 * query exactly as they appear in the URL, every header the request carries
 * (the caller's, plus host, x-amz-content-sha256, x-amz-date and, with
 * temporary credentials, x-amz-security-token) and the payload hash.  The
 * URL must therefore already be encoded the SigV4 way: path segments and
 * query names and values with cx_http_url_encode(), which is what the S3
 * backend builds; the signer only sorts the query parameters.
 *
 * The secret key never leaves this module except as an HMAC; no message
 * here contains it.
 */
#ifndef CX_SIGV4_H
#define CX_SIGV4_H

#include <time.h>

#include "util/cx_buf.h"
#include "ctxstore/error.h"
#include "objstore/cx_http.h"

/* x-amz-content-sha256 of a request with no body. */
#define CX_SIGV4_EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* "20130524T000000Z" and its NUL. */
#define CX_SIGV4_DATE_LEN 17

typedef struct cx_sigv4_creds
{
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token;	/* NULL without temporary credentials */
} cx_sigv4_creds;

typedef struct cx_sigv4_request
{
	const char *method;
	const char *url;			/* scheme://authority/path[?query] */
	const cx_http_headers *headers; /* sent with the request; all signed.
									 * A Host header, if present, overrides
									 * the URL's authority.  Must not hold
									 * the headers cx_sigv4_sign() adds.
									 * May be NULL. */
	const char *payload_hash;	/* lower-case hex SHA-256 of the body */
	const char *amz_date;		/* ISO 8601 basic, "20130524T000000Z" */
	const char *region;
	const char *service;		/* "s3" */
} cx_sigv4_request;

/* Formats t (UTC) as an x-amz-date value. */
void		cx_sigv4_date(time_t t, char out[CX_SIGV4_DATE_LEN]);

/*
 * The canonical request as AWS defines it, into out (reset first); exposed
 * for the unit tests built from AWS's published examples.  signed_headers,
 * if not NULL, receives "host;range;..." (reset first, NUL-terminated).
 */
cx_code		cx_sigv4_canonical_request(const cx_sigv4_request *r,
									   const cx_sigv4_creds *c, cx_buf *out,
									   cx_buf *signed_headers, cx_err *err);

/*
 * Signs r: appends to out the headers to send besides r->headers:
 * x-amz-date, x-amz-content-sha256, x-amz-security-token (with a session
 * token) and Authorization.
 */
cx_code		cx_sigv4_sign(const cx_sigv4_request *r, const cx_sigv4_creds *c,
						  cx_http_headers *out, cx_err *err);

#endif							/* CX_SIGV4_H */
