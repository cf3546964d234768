/*
 * cx_http.h — the HTTP client the cloud object-store backends share.
 *
 * One cx_http per store handle wraps one libcurl easy handle for the handle's
 * whole life, so TCP connections, TLS sessions and DNS answers are reused
 * from one request to the next: a warm store opens no new connection per
 * append.  The client counts the connections it opens and the retries it
 * makes into the store's cx_objstats.
 *
 * cx_http_do() performs one logical request: it signs each attempt
 * afresh (SigV4 needs a new date per attempt), retries what is retryable
 * (429, 500, 502, 503, 504, timeouts, resets and failed connections, plus
 * whatever the backend's classifier says) with exponential backoff and full
 * jitter, bounded both in attempts and in total time, and hands back the
 * final response.  Any final HTTP status (404, 412, 403...) is CX_OK here:
 * mapping statuses to cx_codes is the backend's business, helped by
 * cx_http_fail().  Transport failures and exhausted retries are errors.
 *
 * Error messages name the operation, the URL without its query string or
 * user-info (a SAS token or credential never appears) and the HTTP status;
 * request headers (Authorization) are never shown.
 *
 * Thread-safety: like the store handle it belongs to, a cx_http is used by
 * one thread at a time.
 */
#ifndef CX_HTTP_H
#define CX_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cx_buf.h"
#include "ctxstore/error.h"
#include "objstore/cx_objstore.h"

/* Defaults of the timeout and retry options (docs/OPERATIONS.md, section 4). */
#define CX_HTTP_CONNECT_TIMEOUT_MS	10000
#define CX_HTTP_REQUEST_TIMEOUT_MS	60000
#define CX_HTTP_MAX_ATTEMPTS		5
#define CX_HTTP_MAX_RETRY_MS		30000

/* Fills in the defaults above, TLS verification on, system CA bundle. */
void		cx_http_config_default(cx_http_config *c);

/* A header: name and value, both malloc'd and owned by the list. */
typedef struct cx_http_header
{
	char	   *name;
	char	   *value;
} cx_http_header;

/* A growable list of headers.  Failure is sticky, like cx_buf's. */
typedef struct cx_http_headers
{
	cx_http_header *items;
	size_t		n;
	size_t		cap;
	bool		failed;			/* an allocation failed */
} cx_http_headers;

void		cx_http_headers_init(cx_http_headers *h);
void		cx_http_headers_free(cx_http_headers *h);
void		cx_http_headers_reset(cx_http_headers *h);	/* n = 0, keeps items */
void		cx_http_headers_add(cx_http_headers *h, const char *name,
								const char *value);
/* Value of the first header named name (case-insensitive), or NULL. */
const char *cx_http_headers_get(const cx_http_headers *h, const char *name);

/* What a HEAD answer says of the object: its Content-Length and, unless
 * mtime_us is NULL, its Last-Modified (an HTTP date, second precision) as
 * Unix microseconds; CX_ERR_IO when one is missing or malformed. */
cx_code		cx_http_read_head(const cx_http_headers *h, uint64_t *size,
							  int64_t *mtime_us, cx_err *err);

/* A time as S3 and Azure write them (an HTTP date, or ISO 8601 as S3's
 * listings do: "2026-12-01T17:22:23.000Z") in Unix microseconds; false if
 * text is neither. */
bool		cx_http_parse_time(const char *text, int64_t *us);

/* Adds one response header line as libcurl hands it over ("Name: value",
 * CRLF included): the name lower-cased, the value without surrounding
 * blanks; a status line ("HTTP/...") starts a new set (a 100 Continue comes
 * before the real answer); a line without a colon, or with a name of 128
 * bytes or more, is ignored. */
void		cx_http_header_line(cx_http_headers *h, const char *line,
								size_t len);
/* How long a 429/503 answer asked us to wait (Retry-After: <seconds>, under
 * an hour), in ms; 0 if it did not say or said something else. */
int64_t		cx_http_retry_after_ms(const cx_http_headers *h);

typedef struct cx_http_response
{
	long		status;			/* final HTTP status */
	cx_http_headers headers;	/* response headers, names lower-cased */
	cx_buf		body;			/* response body, unless req->body_out */
	int			attempts;		/* attempts made; > 1 means the request may
								 * have landed before the final answer */
} cx_http_response;

void		cx_http_response_init(cx_http_response *r);
void		cx_http_response_free(cx_http_response *r);

typedef struct cx_http_request cx_http_request;

/*
 * Called before every attempt to add the headers that authenticate it
 * (Authorization, x-amz-date...) to `out`, which starts empty each time.
 * Returns CX_OK or an error that ends the request.
 */
typedef cx_code (*cx_http_sign_fn) (void *arg, const cx_http_request *req,
									cx_http_headers *out, cx_err *err);

/*
 * Decides, for a response that arrived, whether to try again.  Backends add
 * their own retryable answers (S3's 409 ConditionalRequestConflict) and call
 * cx_http_retryable_status() for the common ones.
 */
typedef bool (*cx_http_retry_fn) (void *arg, const cx_http_response *resp);

struct cx_http_request
{
	const char *op;				/* sub-operation named in messages ("upload
								 * part 3"), or NULL */
	const char *method;			/* "GET", "PUT", "HEAD", "POST", "DELETE" */
	const char *url;			/* full URL; its query is never shown */
	const cx_http_headers *headers; /* fixed headers, may be NULL */
	const void *body;			/* request body (borrowed), may be NULL */
	size_t		body_len;
	cx_buf	   *body_out;		/* if set, a 2xx response's body is appended
								 * here instead of to resp->body (cut back
								 * to its starting length before each
								 * attempt); error bodies still go to
								 * resp->body */
	cx_http_sign_fn sign;		/* may be NULL (anonymous, SAS in the URL) */
	void	   *sign_arg;
	cx_http_retry_fn retry;		/* NULL: cx_http_retryable_status() */
	void	   *retry_arg;
};

typedef struct cx_http cx_http;

/*
 * Creates a client; cfg is copied (ca_file too).  stats, which must outlive
 * the client, receives connection and retry counts.
 */
cx_code		cx_http_create(const cx_http_config *cfg, cx_objstats *stats,
						   cx_http **out, cx_err *err);
void		cx_http_destroy(cx_http *h);

/*
 * Performs req, retrying as described above.  resp is reset first; on CX_OK
 * it holds the final response, whatever its status.  Errors: CX_ERR_TIMEOUT
 * (the last attempt timed out), CX_ERR_IO (transport failure, or a retryable
 * status that persisted; the message gives the status), CX_ERR_NOMEM,
 * CX_ERR_INVALID (a malformed URL), or whatever the signer returned.
 */
cx_code		cx_http_do(cx_http *h, const cx_http_request *req,
					   cx_http_response *resp, cx_err *err);

/* 429, 500, 502, 503 and 504. */
bool		cx_http_retryable_status(long status);

/*
 * Sets err to code with "[<op>: ]<METHOD> <url without query>: HTTP
 * <status> [(<detail>)]": the uniform message for a final status the backend
 * refuses.
 * detail (may be NULL) is typically the service's error code, e.g.
 * "AccessDenied".  Returns code.
 */
cx_code		cx_http_fail(const cx_http_request *req,
						 const cx_http_response *resp, cx_code code,
						 const char *detail, cx_err *err);

/*
 * Maps the statuses every service uses alike: 404 -> NOT_FOUND,
 * 401/403 -> AUTH, 412 -> EXISTS, 400 -> INVALID, other 4xx -> INVALID,
 * anything else -> IO.
 */
cx_code		cx_http_status_code(long status);

/*
 * The same for the final status of a write (a PUT, a multipart step), given
 * the service's error code (NULL if none): 401 and 403 stay AUTH, except a
 * 403 saying the caller may not write here (AccessDenied,
 * AuthorizationPermissionMismatch), which is PERMISSION; 412 stays EXISTS; 400, 404 (no such bucket or container) and
 * every other 4xx are IO_PERMANENT.  The same request would be refused
 * again, so nobody retries any of them.
 */
cx_code		cx_http_write_status_code(long status, const char *service_code);

/* The <Code> of an S3 or Azure XML error body (malloc'd; caller frees), or
 * NULL if there is none. */
char	   *cx_http_error_code(const cx_http_response *resp);

/* Writes url minus its query string, fragment and user-info into buf. */
void		cx_http_redact_url(const char *url, char *buf, size_t size);

/*
 * Percent-encodes s into out as RFC 3986 (and SigV4) want: unreserved
 * characters A-Z a-z 0-9 - . _ ~ stay, every other byte becomes %XX
 * (upper-case hex); '/' stays too when keep_slash.
 */
void		cx_http_url_encode(cx_buf *out, const char *s, bool keep_slash);

#endif							/* CX_HTTP_H */
