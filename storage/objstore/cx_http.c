/*
 * cx_http.c — one libcurl easy handle per store, with signing per attempt
 * and bounded retries (see cx_http.h).
 *
 * The easy handle is reset before every attempt (curl_easy_reset() keeps the
 * connection pool, the DNS cache and TLS session ids) and then configured
 * from scratch, so no option of one request leaks into the next.
 */
#include "objstore/cx_http.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "objstore/cx_xml.h"
#include "util/cx_clock.h"

/* Backoff before retry n (1-based) is uniform in [0, min(CAP, BASE * 2^(n-1))). */
#define BACKOFF_BASE_MS 200
#define BACKOFF_CAP_MS	10000

/* How long a resolved address is reused; S3 rotates its addresses, so not
 * forever, but long enough that a warm store never waits on DNS. */
#define DNS_CACHE_SECONDS 300

/* Option limits, generous but finite. */
#define MAX_TIMEOUT_S	86400.0
#define MAX_ATTEMPTS	100

struct cx_http
{
	CURL	   *curl;
	cx_http_config cfg;			/* cfg.ca_file points at ca_file */
	char	   *ca_file;
	cx_objstats *stats;
	char		errbuf[CURL_ERROR_SIZE];
};

/* Where the write callback puts the body of the attempt in flight. */
typedef struct sink
{
	CURL	   *curl;
	cx_buf	   *ok_body;		/* 2xx bodies: req->body_out or resp->body */
	cx_buf	   *err_body;		/* other bodies: resp->body */
	cx_http_headers *headers;
} sink;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void
global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void
cx_http_config_default(cx_http_config *c)
{
	c->connect_timeout_ms = CX_HTTP_CONNECT_TIMEOUT_MS;
	c->request_timeout_ms = CX_HTTP_REQUEST_TIMEOUT_MS;
	c->max_attempts = CX_HTTP_MAX_ATTEMPTS;
	c->max_retry_ms = CX_HTTP_MAX_RETRY_MS;
	c->ca_file = NULL;
	c->tls_verify = true;
}

/* Seconds per unit of a duration suffix; the FDW accepts PostgreSQL's time
 * units and passes the value on as written.  -1 for an unknown unit. */
static double
unit_seconds(const char *unit)
{
	static const struct
	{
		const char *name;
		double		seconds;
	}			units[] = {
		{"", 1}, {"ms", 0.001}, {"s", 1}, {"min", 60}, {"h", 3600},
	};

	while (*unit == ' ')
		unit++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(unit, units[i].name) == 0)
			return units[i].seconds;
	return -1;
}

/* A duration in [min, MAX_TIMEOUT_S] seconds ("1.5", "500ms", "2min"), as
 * milliseconds. */
static cx_code
seconds_option(const char *name, const char *value, double min, long *ms,
			   cx_err *err)
{
	char	   *end;
	double		v;
	double		unit;

	errno = 0;
	v = strtod(value, &end);
	unit = end == value ? -1 : unit_seconds(end);
	v *= unit;
	if (errno != 0 || unit < 0 || !isfinite(v) || v < min || v > MAX_TIMEOUT_S)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option %s must be a duration between %g and %g seconds (units ms, s, min, h), not \"%.64s\"",
						  name, min, MAX_TIMEOUT_S, value);
	*ms = (long) (v * 1000.0 + 0.5);
	return CX_OK;
}

cx_code
cx_http_config_from_options(cx_http_config *c, const cx_option *o, size_t n,
							cx_err *err)
{
	const char *v;
	long		attempts;

	cx_http_config_default(c);
	if ((v = cx_option_get(o, n, "connect_timeout")) != NULL &&
		seconds_option("connect_timeout", v, 0.001, &c->connect_timeout_ms, err) != CX_OK)
		return err->code;
	if ((v = cx_option_get(o, n, "request_timeout")) != NULL &&
		seconds_option("request_timeout", v, 0.001, &c->request_timeout_ms, err) != CX_OK)
		return err->code;
	if ((v = cx_option_get(o, n, "retry_max_seconds")) != NULL &&
		seconds_option("retry_max_seconds", v, 0, &c->max_retry_ms, err) != CX_OK)
		return err->code;
	if (cx_option_int(o, n, "retry_max_attempts", 1, MAX_ATTEMPTS,
					  c->max_attempts, &attempts, err) != CX_OK)
		return err->code;
	c->max_attempts = (int) attempts;
	if ((v = cx_option_get(o, n, "ca_file")) != NULL)
	{
		if (v[0] == '\0')
			return cx_err_set(err, CX_ERR_INVALID, "option ca_file is empty");
		c->ca_file = v;
	}
	return cx_option_bool(o, n, "tls_verify", true, &c->tls_verify, err);
}

void
cx_http_headers_init(cx_http_headers *h)
{
	memset(h, 0, sizeof(*h));
}

void
cx_http_headers_reset(cx_http_headers *h)
{
	for (size_t i = 0; i < h->n; i++)
	{
		free(h->items[i].name);
		free(h->items[i].value);
	}
	h->n = 0;
	h->failed = false;
}

void
cx_http_headers_free(cx_http_headers *h)
{
	cx_http_headers_reset(h);
	free(h->items);
	cx_http_headers_init(h);
}

/* Adds a header from a name and a value of given lengths. */
static void
headers_add_n(cx_http_headers *h, const char *name, size_t nlen,
			  const char *value, size_t vlen)
{
	char	   *n;
	char	   *v;

	if (h->failed)
		return;
	if (h->n == h->cap)
	{
		size_t		cap = h->cap ? h->cap * 2 : 16;
		cx_http_header *items = realloc(h->items, cap * sizeof(*items));

		if (items == NULL)
		{
			h->failed = true;
			return;
		}
		h->items = items;
		h->cap = cap;
	}
	n = strndup(name, nlen);
	v = strndup(value, vlen);
	if (n == NULL || v == NULL)
	{
		free(n);
		free(v);
		h->failed = true;
		return;
	}
	h->items[h->n].name = n;
	h->items[h->n].value = v;
	h->n++;
}

void
cx_http_headers_add(cx_http_headers *h, const char *name, const char *value)
{
	headers_add_n(h, name, strlen(name), value, strlen(value));
}

const char *
cx_http_headers_get(const cx_http_headers *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->items[i].name, name) == 0)
			return h->items[i].value;
	return NULL;
}

/* "YYYY-MM-DDTHH:MM:SS[.fraction]Z", UTC. */
static bool
parse_iso8601(const char *text, int64_t *us)
{
	struct tm	tm = {0};
	int			end = 0;
	long		frac_us = 0;
	const char *p;

	if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
			   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &end) != 6)
		return false;
	p = text + end;
	if (*p == '.')
		for (long scale = 100000; isdigit((unsigned char) *++p); scale /= 10)
			frac_us += (*p - '0') * scale;
	if (strcmp(p, "Z") != 0)
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*us = (int64_t) timegm(&tm) * 1000000 + frac_us;
	return true;
}

bool
cx_http_parse_time(const char *text, int64_t *us)
{
	time_t		t;

	if (parse_iso8601(text, us))
		return true;
	t = curl_getdate(text, NULL);
	/* libcurl takes years far beyond what microseconds can hold. */
	if (t < 0 || t > INT64_MAX / 1000000)
		return false;
	*us = (int64_t) t * 1000000;
	return true;
}

cx_code
cx_http_read_head(const cx_http_headers *h, uint64_t *size, int64_t *mtime_us,
				  cx_err *err)
{
	const char *len = cx_http_headers_get(h, "content-length");
	const char *date = cx_http_headers_get(h, "last-modified");
	char	   *end;

	errno = 0;
	*size = len ? strtoull(len, &end, 10) : 0;
	if (len == NULL || end == len || *end != '\0' || errno != 0)
		return cx_err_set(err, CX_ERR_IO, "HEAD answer has no valid Content-Length");
	if (mtime_us == NULL)
		return CX_OK;
	if (date == NULL || !cx_http_parse_time(date, mtime_us))
		return cx_err_set(err, CX_ERR_IO, "HEAD answer has no valid Last-Modified");
	return CX_OK;
}

void
cx_http_response_init(cx_http_response *r)
{
	r->status = 0;
	r->attempts = 0;
	cx_http_headers_init(&r->headers);
	cx_buf_init(&r->body);
}

void
cx_http_response_free(cx_http_response *r)
{
	cx_http_headers_free(&r->headers);
	cx_buf_free(&r->body);
	cx_http_response_init(r);
}

bool
cx_http_retryable_status(long status)
{
	return status == 429 || status == 500 || status == 502 ||
		status == 503 || status == 504;
}

cx_code
cx_http_status_code(long status)
{
	switch (status)
	{
		case 404:
			return CX_ERR_NOT_FOUND;
		case 401:
		case 403:
			return CX_ERR_AUTH;
		case 412:
			return CX_ERR_EXISTS;
		default:
			return status >= 400 && status < 500 ? CX_ERR_INVALID : CX_ERR_IO;
	}
}

/* Error codes by which S3 and Azure say the caller was recognised and may
 * not do this.  Not Azure's AuthorizationFailure: Azurite answers a wrong
 * account key with it, so it may mean credentials. */
static bool
denies_permission(const char *service_code)
{
	return service_code != NULL &&
		(strcmp(service_code, "AccessDenied") == 0 ||
		 strcmp(service_code, "AuthorizationPermissionMismatch") == 0);
}

cx_code
cx_http_write_status_code(long status, const char *service_code)
{
	if (status == 403 && denies_permission(service_code))
		return CX_ERR_PERMISSION;
	if (status == 401 || status == 403 || status == 412)
		return cx_http_status_code(status);
	return status >= 400 && status < 500 ? CX_ERR_IO_PERMANENT :
		cx_http_status_code(status);
}

void
cx_http_redact_url(const char *url, char *buf, size_t size)
{
	const char *scheme_end = strstr(url, "://");
	const char *auth = scheme_end ? scheme_end + 3 : url;
	size_t		auth_len = strcspn(auth, "/?#");
	const char *at = memchr(auth, '@', auth_len);
	const char *host = at ? at + 1 : auth;
	size_t		rest = strcspn(host, "?#");

	snprintf(buf, size, "%.*s%.*s", (int) (auth - url), url, (int) rest, host);
}

void
cx_http_url_encode(cx_buf *out, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *) s; *p; p++)
	{
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
			(keep_slash && *p == '/'))
			cx_buf_put_u8(out, *p);
		else
		{
			uint8_t		e[3] = {'%', (uint8_t) hex[*p >> 4], (uint8_t) hex[*p & 15]};

			cx_buf_put(out, e, 3);
		}
	}
}

char *
cx_http_error_code(const cx_http_response *resp)
{
	if (resp->body.len == 0)
		return NULL;
	return cx_xml_doc_field((const char *) resp->body.data, resp->body.len, "Code");
}

/* "<op>: " before a message, when the request names a sub-operation. */
static const char *
op_prefix(const cx_http_request *req)
{
	return req->op ? req->op : "";
}

static const char *
op_sep(const cx_http_request *req)
{
	return req->op ? ": " : "";
}

cx_code
cx_http_fail(const cx_http_request *req, const cx_http_response *resp,
			 cx_code code, const char *detail, cx_err *err)
{
	char		url[CX_ERR_MSG_LEN];

	cx_http_redact_url(req->url, url, sizeof(url));
	return cx_err_set(err, code, "%s%s%s %.300s: HTTP %ld%s%.64s%s",
					  op_prefix(req), op_sep(req), req->method, url,
					  resp->status, detail ? " (" : "", detail ? detail : "",
					  detail ? ")" : "");
}

cx_code
cx_http_create(const cx_http_config *cfg, cx_objstats *stats, cx_http **out,
			   cx_err *err)
{
	cx_http    *h;

	*out = NULL;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return cx_err_set(err, CX_ERR_IO, "libcurl initialisation failed: %s",
						  curl_easy_strerror(global_rc));
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	h->cfg = *cfg;
	h->stats = stats;
	if (cfg->ca_file != NULL && (h->ca_file = strdup(cfg->ca_file)) == NULL)
	{
		free(h);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	h->cfg.ca_file = h->ca_file;
	h->curl = curl_easy_init();
	if (h->curl == NULL)
	{
		cx_http_destroy(h);
		return cx_err_set(err, CX_ERR_NOMEM, "libcurl could not create a handle");
	}
	*out = h;
	return CX_OK;
}

void
cx_http_destroy(cx_http *h)
{
	if (h == NULL)
		return;
	if (h->curl != NULL)
		curl_easy_cleanup(h->curl);
	free(h->ca_file);
	free(h);
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	sink	   *s = arg;
	long		status = 0;
	cx_buf	   *b;

	curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
	b = status >= 200 && status < 300 ? s->ok_body : s->err_body;
	cx_buf_put(b, data, nmemb);
	/* Returning less than given makes libcurl fail with CURLE_WRITE_ERROR. */
	return cx_buf_ok(b) ? nmemb * size : 0;
}

void
cx_http_header_line(cx_http_headers *h, const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);
	const char *v;
	const char *end = line + len;
	char		name[128];
	size_t		nlen;

	if (len >= 5 && memcmp(line, "HTTP/", 5) == 0)
	{
		cx_http_headers_reset(h);
		return;
	}
	if (colon == NULL || (nlen = (size_t) (colon - line)) >= sizeof(name))
		return;
	for (size_t i = 0; i < nlen; i++)
		name[i] = (char) tolower((unsigned char) line[i]);
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	headers_add_n(h, name, nlen, v, (size_t) (end - v));
}

static size_t
on_header(char *line, size_t size, size_t nmemb, void *arg)
{
	sink	   *s = arg;

	cx_http_header_line(s->headers, line, nmemb * size);
	return nmemb * size;
}

/* Appends "Name: value" to a curl header list; a NULL value makes it
 * "Name:", which tells libcurl to drop a header it would add itself, and an
 * empty one "Name;", since "Name:" would drop it. */
static struct curl_slist *
slist_add(struct curl_slist *list, bool *failed, const char *name,
		  const char *value)
{
	size_t		len = strlen(name) + (value ? strlen(value) : 0) + 3;
	char	   *line = malloc(len);
	struct curl_slist *l;

	if (line == NULL)
	{
		*failed = true;
		return list;
	}
	if (value == NULL)
		snprintf(line, len, "%s:", name);
	else if (value[0] == '\0')
		snprintf(line, len, "%s;", name);
	else
		snprintf(line, len, "%s: %s", name, value);
	l = curl_slist_append(list, line);
	free(line);
	if (l == NULL)
		*failed = true;
	return l ? l : list;
}

static struct curl_slist *
slist_add_all(struct curl_slist *list, bool *failed, const cx_http_headers *h)
{
	for (size_t i = 0; h != NULL && i < h->n; i++)
		list = slist_add(list, failed, h->items[i].name, h->items[i].value);
	return list;
}

/*
 * The request's headers, then the signer's, then two suppressions: no
 * "Expect: 100-continue" (a round trip per upload, for nothing) and no
 * Content-Type unless one was given (libcurl adds a form type to bodies,
 * and a header the signer did not see would break Azure's signature).
 */
static struct curl_slist *
build_headers(const cx_http_request *req, const cx_http_headers *signed_h,
			  bool *failed)
{
	struct curl_slist *list = NULL;

	*failed = false;
	list = slist_add_all(list, failed, req->headers);
	list = slist_add_all(list, failed, signed_h);
	list = slist_add(list, failed, "Expect", NULL);
	if ((req->headers == NULL || cx_http_headers_get(req->headers, "Content-Type") == NULL) &&
		cx_http_headers_get(signed_h, "Content-Type") == NULL)
		list = slist_add(list, failed, "Content-Type", NULL);
	return list;
}

/* Sets the options every attempt needs, after curl_easy_reset(). */
static void
set_common(cx_http *h, sink *s)
{
	CURL	   *c = h->curl;

	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_DNS_CACHE_TIMEOUT, (long) DNS_CACHE_SECONDS);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->cfg.connect_timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->cfg.request_timeout_ms);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, h->cfg.tls_verify ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, h->cfg.tls_verify ? 2L : 0L);
	if (h->cfg.ca_file != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->cfg.ca_file);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ctxstore");
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
}

static void
set_method(CURL *c, const cx_http_request *req)
{
	if (strcmp(req->method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(req->method, "PUT") == 0 || strcmp(req->method, "POST") == 0)
	{
		/* An in-memory body: POSTFIELDS sends it with a Content-Length, the
		 * custom request names the real method. */
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
	}
	else if (strcmp(req->method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
}

static bool
retryable_transport(CURLcode rc)
{
	switch (rc)
	{
		case CURLE_COULDNT_RESOLVE_HOST:
		case CURLE_COULDNT_CONNECT:
		case CURLE_OPERATION_TIMEDOUT:
		case CURLE_SEND_ERROR:
		case CURLE_RECV_ERROR:
		case CURLE_GOT_NOTHING:
		case CURLE_PARTIAL_FILE:
		case CURLE_SSL_CONNECT_ERROR:
		case CURLE_HTTP2:
		case CURLE_HTTP2_STREAM:
			return true;
		default:
			return false;
	}
}

/* Outcome of one attempt. */
typedef struct attempt
{
	CURLcode	curl_rc;		/* CURLE_OK: resp->status is valid */
	cx_code		code;			/* non-transport failure (signer, memory) */
	char		curl_msg[CURL_ERROR_SIZE];
} attempt;

static void
one_attempt(cx_http *h, const cx_http_request *req, cx_http_response *resp,
			size_t out_start, attempt *a, cx_err *err)
{
	cx_http_headers signed_h;
	struct curl_slist *list;
	bool		failed;
	long		connects = 0;
	sink		s;

	a->curl_rc = CURLE_OK;
	a->code = CX_OK;
	a->curl_msg[0] = '\0';
	resp->status = 0;
	cx_http_headers_reset(&resp->headers);
	cx_buf_reset(&resp->body);
	if (req->body_out != NULL)
		req->body_out->len = out_start;

	cx_http_headers_init(&signed_h);
	if (req->sign != NULL && req->sign(req->sign_arg, req, &signed_h, err) != CX_OK)
	{
		a->code = err->code;
		cx_http_headers_free(&signed_h);
		return;
	}
	list = build_headers(req, &signed_h, &failed);
	failed |= signed_h.failed;
	cx_http_headers_free(&signed_h);
	if (failed)
	{
		curl_slist_free_all(list);
		a->code = cx_err_set(err, CX_ERR_NOMEM, "out of memory building a request");
		return;
	}

	s.curl = h->curl;
	s.ok_body = req->body_out ? req->body_out : &resp->body;
	s.err_body = &resp->body;
	s.headers = &resp->headers;
	curl_easy_reset(h->curl);
	h->errbuf[0] = '\0';
	set_common(h, &s);
	set_method(h->curl, req);
	curl_easy_setopt(h->curl, CURLOPT_URL, req->url);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, list);

	a->curl_rc = curl_easy_perform(h->curl);
	if (curl_easy_getinfo(h->curl, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK)
		h->stats->connections += (uint64_t) connects;
	if (a->curl_rc == CURLE_OK)
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	snprintf(a->curl_msg, sizeof(a->curl_msg), "%s",
			 h->errbuf[0] ? h->errbuf : curl_easy_strerror(a->curl_rc));
	/* The handle keeps pointers into the list until the next request. */
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(list);
	if (resp->headers.failed || !cx_buf_ok(&resp->body) ||
		(req->body_out && !cx_buf_ok(req->body_out)))
		a->code = cx_err_set(err, CX_ERR_NOMEM, "out of memory receiving a response");
}

static int64_t
now_ms(void)
{
	return cx_clock_mono_us() / 1000;
}

int64_t
cx_http_retry_after_ms(const cx_http_headers *h)
{
	const char *v = cx_http_headers_get(h, "retry-after");
	char	   *end;
	long		s;

	if (v == NULL)
		return 0;
	s = strtol(v, &end, 10);
	return end != v && *end == '\0' && s > 0 && s < 3600 ? (int64_t) s * 1000 : 0;
}

/* Full jitter: uniform in [0, min(cap, base * 2^(retry-1))). */
static int64_t
backoff_ms(int retry)
{
	int64_t		ceiling = BACKOFF_BASE_MS;
	uint32_t	r = 0;
	cx_err		ignored;

	for (int i = 1; i < retry && ceiling < BACKOFF_CAP_MS; i++)
		ceiling *= 2;
	if (ceiling > BACKOFF_CAP_MS)
		ceiling = BACKOFF_CAP_MS;
	/* Should getrandom fail, r stays 0 and we retry at once: still bounded. */
	(void) cx_random_bytes(&r, sizeof(r), &ignored);
	return (int64_t) (r % (uint32_t) ceiling);
}

/*
 * Whether the attempt was refused: the store answered 429 or 503 (S3
 * SlowDown / ServiceUnavailable, Azure ServerBusy), which it sends instead
 * of carrying a request out.  A transport failure or another status (a 500
 * may come after the write was applied) is no such proof.
 */
static bool
refused(const cx_http_response *resp, const attempt *a)
{
	return a->curl_rc == CURLE_OK &&
		(resp->status == 429 || resp->status == 503);
}

/* The final error after the last attempt, which failed retryably;
 * all_refused if every attempt was refused. */
static cx_code
give_up(const cx_http_request *req, const cx_http_response *resp,
		const attempt *a, int attempts, int64_t elapsed, bool all_refused,
		cx_err *err)
{
	char		url[CX_ERR_MSG_LEN];
	char	   *code;
	cx_code		rc;

	cx_http_redact_url(req->url, url, sizeof(url));
	if (a->curl_rc != CURLE_OK)
		return cx_err_set(err,
						  a->curl_rc == CURLE_OPERATION_TIMEDOUT ? CX_ERR_TIMEOUT : CX_ERR_IO,
						  "%s%s%s %.250s: %.150s (no HTTP status) after %d attempt%s in %.1f s",
						  op_prefix(req), op_sep(req), req->method, url,
						  a->curl_msg, attempts, attempts == 1 ? "" : "s",
						  (double) elapsed / 1000.0);
	code = cx_http_error_code(resp);
	rc = cx_err_set(err, CX_ERR_IO,
					"%s%s%s %.250s: HTTP %ld%s%.64s%s after %d attempt%s in %.1f s",
					op_prefix(req), op_sep(req), req->method, url,
					resp->status, code ? " (" : "", code ? code : "",
					code ? ")" : "", attempts, attempts == 1 ? "" : "s",
					(double) elapsed / 1000.0);
	err->refused = all_refused;
	free(code);
	return rc;
}

/* Whether the attempt's outcome, a response or a transport failure, is
 * worth another attempt. */
static bool
should_retry(const cx_http_request *req, const cx_http_response *resp,
			 const attempt *a)
{
	if (a->curl_rc != CURLE_OK)
		return retryable_transport(a->curl_rc);
	return req->retry ? req->retry(req->retry_arg, resp) :
		cx_http_retryable_status(resp->status);
}

/* A transport failure not worth retrying (bad certificate, bad URL...). */
static cx_code
transport_fail(const cx_http_request *req, const attempt *a, cx_err *err)
{
	char		url[CX_ERR_MSG_LEN];

	cx_http_redact_url(req->url, url, sizeof(url));
	return cx_err_set(err,
					  a->curl_rc == CURLE_URL_MALFORMAT ? CX_ERR_INVALID : CX_ERR_IO,
					  "%s%s%s %.250s: %.200s", op_prefix(req), op_sep(req),
					  req->method, url, a->curl_msg);
}

cx_code
cx_http_do(cx_http *h, const cx_http_request *req, cx_http_response *resp,
		   cx_err *err)
{
	int64_t		start = now_ms();
	size_t		out_start = req->body_out ? req->body_out->len : 0;
	attempt		a;
	bool		all_refused = true;

	for (int n = 1;; n++)
	{
		int64_t		delay;

		resp->attempts = n;
		one_attempt(h, req, resp, out_start, &a, err);
		if (a.code != CX_OK)
			return a.code;
		if (!should_retry(req, resp, &a))
			return a.curl_rc == CURLE_OK ? CX_OK : transport_fail(req, &a, err);
		all_refused &= refused(resp, &a);
		delay = backoff_ms(n);
		if (a.curl_rc == CURLE_OK && cx_http_retry_after_ms(&resp->headers) > delay)
			delay = cx_http_retry_after_ms(&resp->headers);
		if (n >= h->cfg.max_attempts ||
			now_ms() + delay - start > h->cfg.max_retry_ms)
			return give_up(req, resp, &a, n, now_ms() - start, all_refused,
						   err);
		cx_clock_sleep_us(delay * 1000);
		h->stats->retries++;
	}
}
