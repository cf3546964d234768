/*
 * cx_azure_auth.h — authenticating Azure Blob requests: SharedKey signatures
 * and SAS tokens.
 *
 * SharedKey: each request carries x-ms-date and "Authorization: SharedKey
 * <account>:<signature>", the signature being base64(HMAC-SHA256(key,
 * string-to-sign)) with the base64-decoded account key, over the
 * string-to-sign of the Blob service (versions 2015-02-21 and later):
 *
 *     VERB \n Content-Encoding \n Content-Language \n Content-Length \n
 *     Content-MD5 \n Content-Type \n Date \n If-Modified-Since \n If-Match \n
 *     If-None-Match \n If-Unmodified-Since \n Range \n
 *     CanonicalizedHeaders CanonicalizedResource
 *
 * Content-Length is empty when the body is empty.  CanonicalizedHeaders are
 * the x-ms-* headers, names lower-cased, sorted, one "name:value\n" each.
 * CanonicalizedResource is "/<account><path as encoded in the URL>" followed,
 * for each query parameter sorted by lower-cased name, by "\n<name>:<decoded
 * value>".  With a path-style endpoint (Azurite's http://host:port/<account>)
 * the path itself starts with the account, which therefore appears twice, as
 * the service expects.
 *
 * SAS: the token (the query string the portal or CLI hands out) is appended to
 * every request URL and no Authorization header is sent.
 *
 * Secrets: a cx_az_sharedkey holds the decoded key and wipes it when freed.
 * No function here puts the key, the signature or a SAS token into an error
 * message.
 */
#ifndef CX_AZURE_AUTH_H
#define CX_AZURE_AUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "util/cx_buf.h"
#include "ctxstore/error.h"
#include "objstore/cx_http.h"

/* Room for "Sun, 06 Nov 1994 08:49:37 GMT" (29 bytes) and its NUL, with
 * headroom so that no year can truncate it. */
#define CX_AZ_DATE_LEN 64

typedef struct cx_az_sharedkey
{
	char	   *account;		/* storage account name */
	uint8_t    *key;			/* the account key, base64-decoded */
	size_t		keylen;
} cx_az_sharedkey;

/*
 * Checks the account name (letters and digits) and decodes the base64 account
 * key into k, which owns copies of both.  CX_ERR_INVALID names the option at
 * fault (account_name, account_key) but never shows the key.
 */
cx_code		cx_az_sharedkey_init(cx_az_sharedkey *k, const char *account,
								 const char *key_base64, cx_err *err);

/* Wipes the key and frees both copies; k may be zeroed or half-initialised. */
void		cx_az_sharedkey_free(cx_az_sharedkey *k);

/*
 * Appends to out the string-to-sign of req for account, reading the headers
 * from req->headers and extra (the per-attempt ones, such as x-ms-date; may
 * be NULL) and the path and query from req->url.  CX_ERR_INVALID if the URL
 * has no scheme and host or a malformed percent escape; CX_ERR_NOMEM.
 */
cx_code		cx_az_string_to_sign(const char *account, const cx_http_request *req,
								 const cx_http_headers *extra, cx_buf *out,
								 cx_err *err);

/*
 * Signs req as if at time now: adds x-ms-date and Authorization to out.
 * cx_az_sign() is the same at the current time, in the shape of a
 * cx_http_sign_fn whose arg is the cx_az_sharedkey.
 */
cx_code		cx_az_sign_at(const cx_az_sharedkey *k, const cx_http_request *req,
						  time_t now, cx_http_headers *out, cx_err *err);
cx_code		cx_az_sign(void *arg, const cx_http_request *req,
					   cx_http_headers *out, cx_err *err);

/* Formats t as an RFC 1123 date in GMT, independent of the locale. */
void		cx_az_http_date(time_t t, char out[CX_AZ_DATE_LEN]);

/*
 * Decodes the %XX escapes of s[0 .. len), and '+' as a space when
 * plus_is_space (query strings as the service reads them), into a new
 * malloc'd string in *out.  CX_ERR_INVALID on a malformed escape or an
 * encoded NUL (the message never quotes s), CX_ERR_NOMEM.
 */
cx_code		cx_az_percent_decode(const char *s, size_t len, bool plus_is_space,
								 char **out, cx_err *err);

/*
 * Checks a SAS token and returns it, without any leading '?', in a new
 * malloc'd string.  It must be a non-empty query string of printable
 * characters without spaces, '#' or '?' and carry a sig= parameter.
 * CX_ERR_INVALID (never quoting the token), CX_ERR_NOMEM.
 */
cx_code		cx_az_sas_normalize(const char *sas, char **out, cx_err *err);

/* Appends '?' or '&' (whichever the URL in url, NUL-terminated, needs) and
 * the normalised token to url, keeping it NUL-terminated. */
void		cx_az_url_append_sas(cx_buf *url, const char *sas);

#endif							/* CX_AZURE_AUTH_H */
