/*
 * cx_azure_auth.c — SharedKey string-to-sign and signature, SAS tokens.
 *
 * The rules are in cx_azure_auth.h.  The string-to-sign is built from the
 * request exactly as cx_http will send it (its URL and header lists), so
 * that what is signed and what goes on the wire cannot drift apart.
 */
#include "objstore/cx_azure_auth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/cx_crypto.h"

/* The standard headers of the string-to-sign, in their prescribed order;
 * Content-Length, third, is special-cased. */
static const char *const standard_headers[] = {
	"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5",
	"Content-Type", "Date", "If-Modified-Since", "If-Match", "If-None-Match",
	"If-Unmodified-Since", "Range",
};

/* A query parameter or x-ms- header as it enters the canonical form. */
typedef struct canon_pair
{
	char	   *name;			/* lower-cased */
	char	   *value;
} canon_pair;

typedef struct canon_list
{
	canon_pair *items;
	size_t		n;
	size_t		cap;
} canon_list;

static void
canon_free(canon_list *l)
{
	for (size_t i = 0; i < l->n; i++)
	{
		free(l->items[i].name);
		free(l->items[i].value);
	}
	free(l->items);
}

/* Takes ownership of name and value (freeing them on failure). */
static cx_code
canon_add(canon_list *l, char *name, char *value, cx_err *err)
{
	if (name == NULL || value == NULL)
		goto nomem;
	if (l->n == l->cap)
	{
		size_t		cap = l->cap ? l->cap * 2 : 16;
		canon_pair *items = realloc(l->items, cap * sizeof(canon_pair));

		if (items == NULL)
			goto nomem;
		l->items = items;
		l->cap = cap;
	}
	for (char *p = name; *p; p++)
		*p = (char) tolower((unsigned char) *p);
	l->items[l->n].name = name;
	l->items[l->n].value = value;
	l->n++;
	return CX_OK;

nomem:
	free(name);
	free(value);
	return cx_err_set(err, CX_ERR_NOMEM, "out of memory signing a request");
}

/* By name, then value: repeated query parameters list their values sorted. */
static int
pair_cmp(const void *a, const void *b)
{
	const canon_pair *x = a;
	const canon_pair *y = b;
	int			c = strcmp(x->name, y->name);

	return c != 0 ? c : strcmp(x->value, y->value);
}

static void
canon_sort(canon_list *l)
{
	/* qsort's array may not be NULL, even with no elements. */
	if (l->n > 0)
		qsort(l->items, l->n, sizeof(canon_pair), pair_cmp);
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char) tolower((unsigned char) c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

cx_code
cx_az_percent_decode(const char *s, size_t len, bool plus_is_space,
					 char **out, cx_err *err)
{
	char	   *d = malloc(len + 1);
	size_t		o = 0;

	*out = NULL;
	if (d == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < len; i++)
	{
		int			hi;
		int			lo;

		if (s[i] != '%')
		{
			d[o++] = plus_is_space && s[i] == '+' ? ' ' : s[i];
			continue;
		}
		hi = i + 2 < len ? hex_value(s[i + 1]) : -1;
		lo = i + 2 < len ? hex_value(s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
		{
			free(d);
			return cx_err_set(err, CX_ERR_INVALID, "malformed percent escape");
		}
		d[o++] = (char) (hi * 16 + lo);
		i += 2;
	}
	d[o] = '\0';
	*out = d;
	return CX_OK;
}

/* Splits query[0 .. len) ("a=1&b=2", no leading '?') into l. */
static cx_code
parse_query(const char *query, size_t len, canon_list *l, cx_err *err)
{
	const char *end = query + len;

	while (query < end)
	{
		const char *amp = memchr(query, '&', (size_t) (end - query));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(query, '=', (size_t) (stop - query));
		const char *vstart = eq ? eq + 1 : stop;
		char	   *name = NULL;
		char	   *value = NULL;

		if (stop > query)
		{
			if (cx_az_percent_decode(query, (size_t) ((eq ? eq : stop) - query),
									 true, &name, err) != CX_OK ||
				cx_az_percent_decode(vstart, (size_t) (stop - vstart), true,
									 &value, err) != CX_OK)
			{
				free(name);
				return cx_err_prefix(err, "request URL");
			}
			if (canon_add(l, name, value, err) != CX_OK)
				return err->code;
		}
		query = stop + 1;
	}
	return CX_OK;
}

/* "/<account><path>" then "\n<name>:<v1>,<v2>" per distinct parameter. */
static cx_code
put_resource(cx_buf *out, const char *account, const char *url, cx_err *err)
{
	const char *host = strstr(url, "://");
	const char *path;
	size_t		pathlen;
	canon_list	q = {0};
	cx_code		rc = CX_OK;

	if (host == NULL || host == url || host[3] == '\0')
		return cx_err_set(err, CX_ERR_INVALID,
						  "request URL has no scheme and host");
	path = host + 3 + strcspn(host + 3, "/?#");
	pathlen = strcspn(path, "?#");

	cx_buf_put(out, "/", 1);
	cx_buf_put(out, account, strlen(account));
	if (pathlen == 0)
		cx_buf_put(out, "/", 1);
	cx_buf_put(out, path, pathlen);

	if (path[pathlen] == '?')
	{
		const char *query = path + pathlen + 1;

		rc = parse_query(query, strcspn(query, "#"), &q, err);
	}
	canon_sort(&q);
	for (size_t i = 0; rc == CX_OK && i < q.n; i++)
	{
		bool		same = i > 0 && strcmp(q.items[i - 1].name, q.items[i].name) == 0;

		if (same)
			cx_buf_put(out, ",", 1);
		else
		{
			cx_buf_put(out, "\n", 1);
			cx_buf_put(out, q.items[i].name, strlen(q.items[i].name));
			cx_buf_put(out, ":", 1);
		}
		cx_buf_put(out, q.items[i].value, strlen(q.items[i].value));
	}
	canon_free(&q);
	return rc;
}

/* Copies value with surrounding whitespace trimmed and inner runs of
 * whitespace folded to one space, as canonical headers want. */
static char *
fold_value(const char *value)
{
	char	   *out = malloc(strlen(value) + 1);
	size_t		o = 0;
	bool		space = false;

	if (out == NULL)
		return NULL;
	for (const char *p = value; *p; p++)
	{
		if (isspace((unsigned char) *p))
		{
			space = o > 0;
			continue;
		}
		if (space)
			out[o++] = ' ';
		space = false;
		out[o++] = *p;
	}
	out[o] = '\0';
	return out;
}

static cx_code
collect_ms_headers(const cx_http_headers *h, canon_list *l, cx_err *err)
{
	for (size_t i = 0; h != NULL && i < h->n; i++)
	{
		if (strncasecmp(h->items[i].name, "x-ms-", 5) != 0)
			continue;
		if (canon_add(l, cx_strdup(h->items[i].name),
					  fold_value(h->items[i].value), err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

static cx_code
put_ms_headers(cx_buf *out, const cx_http_request *req,
			   const cx_http_headers *extra, cx_err *err)
{
	canon_list	l = {0};
	cx_code		rc;

	rc = collect_ms_headers(req->headers, &l, err);
	if (rc == CX_OK)
		rc = collect_ms_headers(extra, &l, err);
	canon_sort(&l);
	for (size_t i = 0; rc == CX_OK && i < l.n; i++)
	{
		cx_buf_put(out, l.items[i].name, strlen(l.items[i].name));
		cx_buf_put(out, ":", 1);
		cx_buf_put(out, l.items[i].value, strlen(l.items[i].value));
		cx_buf_put(out, "\n", 1);
	}
	canon_free(&l);
	return rc;
}

static const char *
header_value(const cx_http_request *req, const cx_http_headers *extra,
			 const char *name)
{
	const char *v = extra ? cx_http_headers_get(extra, name) : NULL;

	if (v == NULL && req->headers != NULL)
		v = cx_http_headers_get(req->headers, name);
	return v;
}

cx_code
cx_az_string_to_sign(const char *account, const cx_http_request *req,
					 const cx_http_headers *extra, cx_buf *out, cx_err *err)
{
	size_t		n = sizeof(standard_headers) / sizeof(standard_headers[0]);

	cx_buf_put(out, req->method, strlen(req->method));
	cx_buf_put(out, "\n", 1);
	for (size_t i = 0; i < n; i++)
	{
		const char *v = header_value(req, extra, standard_headers[i]);
		char		len[32];

		/* libcurl sends the length of the body, not a header of ours; an
		 * empty body signs as an empty field (versions 2015-02-21+). */
		if (strcmp(standard_headers[i], "Content-Length") == 0)
		{
			snprintf(len, sizeof(len), "%zu", req->body_len);
			v = req->body_len > 0 ? len : NULL;
		}
		if (v != NULL)
			cx_buf_put(out, v, strlen(v));
		cx_buf_put(out, "\n", 1);
	}
	if (put_ms_headers(out, req, extra, err) != CX_OK ||
		put_resource(out, account, req->url, err) != CX_OK)
		return err->code;
	cx_buf_put_u8(out, 0);
	if (!cx_buf_ok(out))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory signing a request");
	out->len--;					/* NUL-terminated, NUL not counted */
	return CX_OK;
}

void
cx_az_http_date(time_t t, char out[CX_AZ_DATE_LEN])
{
	static const char days[7][4] = {
		"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"
	};
	static const char months[12][4] = {
		"Jan", "Feb", "Mar", "Apr", "May", "Jun",
		"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
	};
	struct tm	tm;

	gmtime_r(&t, &tm);
	snprintf(out, CX_AZ_DATE_LEN, "%s, %02d %s %04d %02d:%02d:%02d GMT",
			 days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
			 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

cx_code
cx_az_sign_at(const cx_az_sharedkey *k, const cx_http_request *req,
			  time_t now, cx_http_headers *out, cx_err *err)
{
	char		date[CX_AZ_DATE_LEN];
	uint8_t		mac[CX_SHA256_LEN];
	cx_buf		buf;
	cx_code		rc;

	cx_az_http_date(now, date);
	cx_http_headers_add(out, "x-ms-date", date);
	if (out->failed)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory signing a request");

	cx_buf_init(&buf);
	rc = cx_az_string_to_sign(k->account, req, out, &buf, err);
	if (rc == CX_OK)
	{
		cx_hmac_sha256(k->key, k->keylen, buf.data, buf.len, mac);
		cx_buf_reset(&buf);
		cx_buf_put(&buf, "SharedKey ", 10);
		cx_buf_put(&buf, k->account, strlen(k->account));
		cx_buf_put(&buf, ":", 1);
		cx_base64_encode(&buf, mac, sizeof(mac));
		if (cx_buf_ok(&buf))
			cx_http_headers_add(out, "Authorization", (const char *) buf.data);
		if (!cx_buf_ok(&buf) || out->failed)
			rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory signing a request");
	}
	cx_buf_free(&buf);
	return rc;
}

cx_code
cx_az_sign(void *arg, const cx_http_request *req, cx_http_headers *out,
		   cx_err *err)
{
	return cx_az_sign_at(arg, req, time(NULL), out, err);
}

cx_code
cx_az_sharedkey_init(cx_az_sharedkey *k, const char *account,
					 const char *key_base64, cx_err *err)
{
	cx_buf		key;

	memset(k, 0, sizeof(*k));
	if (account == NULL || account[0] == '\0')
		return cx_err_set(err, CX_ERR_INVALID, "account_name is required");
	for (const char *p = account; *p; p++)
		if (!isalnum((unsigned char) *p))
			return cx_err_set(err, CX_ERR_INVALID,
							  "account_name \"%.64s\" may hold only letters and digits",
							  account);
	if (key_base64 == NULL || key_base64[0] == '\0')
		return cx_err_set(err, CX_ERR_INVALID, "account_key is empty");

	cx_buf_init(&key);
	if (cx_base64_decode(&key, key_base64, err) != CX_OK)
	{
		/* The decoder's message gives an offset, never the key's text. */
		if (key.data != NULL)
			explicit_bzero(key.data, key.cap);
		cx_buf_free(&key);
		return cx_err_prefix(err, "account_key is not a base64 account key");
	}
	k->account = cx_strdup(account);
	if (k->account == NULL)
	{
		explicit_bzero(key.data, key.cap);
		cx_buf_free(&key);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	k->key = cx_buf_detach(&key, &k->keylen);
	return CX_OK;
}

void
cx_az_sharedkey_free(cx_az_sharedkey *k)
{
	if (k->key != NULL)
		explicit_bzero(k->key, k->keylen);
	free(k->key);
	free(k->account);
	memset(k, 0, sizeof(*k));
}

/* Does the query string hold a parameter called name? */
static bool
has_param(const char *query, const char *name)
{
	size_t		n = strlen(name);

	for (const char *p = query; p != NULL; p = strchr(p, '&'))
	{
		if (*p == '&')
			p++;
		if (strncmp(p, name, n) == 0 && p[n] == '=')
			return true;
	}
	return false;
}

cx_code
cx_az_sas_normalize(const char *sas, char **out, cx_err *err)
{
	*out = NULL;
	if (sas != NULL && sas[0] == '?')
		sas++;
	if (sas == NULL || sas[0] == '\0')
		return cx_err_set(err, CX_ERR_INVALID, "sas_token is empty");
	for (const char *p = sas; *p; p++)
		if (!isgraph((unsigned char) *p) || *p == '#' || *p == '?')
			return cx_err_set(err, CX_ERR_INVALID,
							  "sas_token holds a character not allowed in a query string (at offset %zu)",
							  (size_t) (p - sas));
	if (!has_param(sas, "sig"))
		return cx_err_set(err, CX_ERR_INVALID,
						  "sas_token has no sig= parameter; give the whole token");
	*out = cx_strdup(sas);
	if (*out == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	return CX_OK;
}

void
cx_az_url_append_sas(cx_buf *url, const char *sas)
{
	bool		has_query = url->len > 0 && memchr(url->data, '?', url->len) != NULL;

	cx_buf_put_u8(url, has_query ? '&' : '?');
	cx_buf_put(url, sas, strlen(sas) + 1);
	if (cx_buf_ok(url))
		url->len--;				/* keep the NUL out of the length */
}
