/*
 * cx_sigv4.c — AWS Signature Version 4 (see cx_sigv4.h), following
 * "Signature Calculations for the Authorization Header: Transferring Payload
 * in a Single Chunk" of the S3 API reference.
 */
#include "objstore/cx_sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cx_crypto.h"

#define ALGORITHM "AWS4-HMAC-SHA256"

/* A header or query parameter; the list owns both strings. */
typedef struct pair
{
	char	   *name;
	char	   *value;
} pair;

typedef struct pairs
{
	pair	   *items;
	size_t		n;
	size_t		cap;
	bool		failed;
} pairs;

static void
pairs_free(pairs *p)
{
	for (size_t i = 0; i < p->n; i++)
	{
		free(p->items[i].name);
		free(p->items[i].value);
	}
	free(p->items);
}

static void
pairs_add(pairs *p, const char *name, size_t nlen, const char *value,
		  size_t vlen)
{
	char	   *n;
	char	   *v;

	if (p->failed)
		return;
	if (p->n == p->cap)
	{
		size_t		cap = p->cap ? p->cap * 2 : 16;
		pair	   *items = realloc(p->items, cap * sizeof(*items));

		if (items == NULL)
		{
			p->failed = true;
			return;
		}
		p->items = items;
		p->cap = cap;
	}
	n = strndup(name, nlen);
	v = strndup(value, vlen);
	if (n == NULL || v == NULL)
	{
		free(n);
		free(v);
		p->failed = true;
		return;
	}
	p->items[p->n].name = n;
	p->items[p->n].value = v;
	p->n++;
}

static int
pair_cmp(const void *a, const void *b)
{
	const pair *x = a;
	const pair *y = b;
	int			c = strcmp(x->name, y->name);

	return c != 0 ? c : strcmp(x->value, y->value);
}

static void
pairs_sort(pairs *p)
{
	if (p->n > 0)
		qsort(p->items, p->n, sizeof(pair), pair_cmp);
}

/* Lower-cases the name and trims the value, collapsing inner runs of
 * spaces to one, as the canonical headers want. */
static void
add_header(pairs *p, const char *name, const char *value)
{
	size_t		vlen = strlen(value);
	char	   *v = malloc(vlen + 1);
	size_t		o = 0;

	if (v == NULL)
	{
		p->failed = true;
		return;
	}
	for (size_t i = 0; i < vlen; i++)
	{
		if (value[i] == ' ' || value[i] == '\t')
		{
			if (o > 0 && v[o - 1] != ' ')
				v[o++] = ' ';
			continue;
		}
		v[o++] = value[i];
	}
	if (o > 0 && v[o - 1] == ' ')
		o--;
	pairs_add(p, name, strlen(name), v, o);
	free(v);
	if (!p->failed)
	{
		char	   *n = p->items[p->n - 1].name;

		for (; *n; n++)
			*n = (char) tolower((unsigned char) *n);
	}
}

/* Splits the URL into authority, path and query spans. */
static void
split_url(const char *url, const char **auth, size_t *auth_len,
		  const char **path, size_t *path_len, const char **query)
{
	const char *s = strstr(url, "://");
	const char *q;

	*auth = s ? s + 3 : url;
	*auth_len = strcspn(*auth, "/?");
	*path = *auth + *auth_len;
	q = strchr(*path, '?');
	*path_len = q ? (size_t) (q - *path) : strlen(*path);
	*query = q ? q + 1 : "";
}

/* "a=1&b" -> sorted pairs (b has value ""). */
static void
query_pairs(const char *query, pairs *p)
{
	while (*query)
	{
		size_t		len = strcspn(query, "&");
		const char *eq = memchr(query, '=', len);

		if (len > 0)
		{
			if (eq)
				pairs_add(p, query, (size_t) (eq - query), eq + 1,
						  len - (size_t) (eq - query) - 1);
			else
				pairs_add(p, query, len, "", 0);
		}
		query += len;
		if (*query == '&')
			query++;
	}
	pairs_sort(p);
}

/* Every header the request carries, canonicalised and sorted. */
static void
header_pairs(const cx_sigv4_request *r, const cx_sigv4_creds *c, pairs *p)
{
	const char *auth;
	const char *path;
	const char *query;
	size_t		auth_len;
	size_t		path_len;

	for (size_t i = 0; r->headers != NULL && i < r->headers->n; i++)
		add_header(p, r->headers->items[i].name, r->headers->items[i].value);
	if (r->headers == NULL || cx_http_headers_get(r->headers, "host") == NULL)
	{
		char	   *host;

		split_url(r->url, &auth, &auth_len, &path, &path_len, &query);
		host = strndup(auth, auth_len);
		if (host == NULL)
			p->failed = true;
		else
			add_header(p, "host", host);
		free(host);
	}
	add_header(p, "x-amz-content-sha256", r->payload_hash);
	add_header(p, "x-amz-date", r->amz_date);
	if (c->session_token != NULL)
		add_header(p, "x-amz-security-token", c->session_token);
	pairs_sort(p);
}

void
cx_sigv4_date(time_t t, char out[CX_SIGV4_DATE_LEN])
{
	struct tm	tm;

	gmtime_r(&t, &tm);
	strftime(out, CX_SIGV4_DATE_LEN, "%Y%m%dT%H%M%SZ", &tm);
}

static void
put_str(cx_buf *b, const char *s)
{
	cx_buf_put(b, s, strlen(s));
}

cx_code
cx_sigv4_canonical_request(const cx_sigv4_request *r, const cx_sigv4_creds *c,
						   cx_buf *out, cx_buf *signed_headers, cx_err *err)
{
	const char *auth;
	const char *path;
	const char *query;
	size_t		auth_len;
	size_t		path_len;
	pairs		q = {0};
	pairs		h = {0};
	cx_buf		sh;
	bool		ok;

	cx_buf_reset(out);
	cx_buf_init(&sh);
	split_url(r->url, &auth, &auth_len, &path, &path_len, &query);
	query_pairs(query, &q);
	header_pairs(r, c, &h);

	put_str(out, r->method);
	cx_buf_put_u8(out, '\n');
	if (path_len == 0)
		cx_buf_put_u8(out, '/');
	cx_buf_put(out, path, path_len);
	cx_buf_put_u8(out, '\n');
	for (size_t i = 0; i < q.n; i++)
	{
		if (i > 0)
			cx_buf_put_u8(out, '&');
		put_str(out, q.items[i].name);
		cx_buf_put_u8(out, '=');
		put_str(out, q.items[i].value);
	}
	cx_buf_put_u8(out, '\n');
	for (size_t i = 0; i < h.n; i++)
	{
		put_str(out, h.items[i].name);
		cx_buf_put_u8(out, ':');
		put_str(out, h.items[i].value);
		cx_buf_put_u8(out, '\n');
		if (i > 0)
			cx_buf_put_u8(&sh, ';');
		put_str(&sh, h.items[i].name);
	}
	cx_buf_put_u8(out, '\n');
	cx_buf_put(out, sh.data, sh.len);
	cx_buf_put_u8(out, '\n');
	put_str(out, r->payload_hash);
	if (signed_headers != NULL)
	{
		cx_buf_reset(signed_headers);
		cx_buf_put(signed_headers, sh.data, sh.len);
		cx_buf_put_u8(signed_headers, 0);
	}
	ok = !q.failed && !h.failed && cx_buf_ok(out) && cx_buf_ok(&sh) &&
		(signed_headers == NULL || cx_buf_ok(signed_headers));
	pairs_free(&q);
	pairs_free(&h);
	cx_buf_free(&sh);
	if (!ok)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory signing a request");
	return CX_OK;
}

/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service),
 * "aws4_request"). */
static void
signing_key(const cx_sigv4_request *r, const char *secret,
			uint8_t key[CX_SHA256_LEN])
{
	size_t		slen = strlen(secret);
	char	   *k = malloc(slen + 5);
	uint8_t		t[CX_SHA256_LEN];

	if (k == NULL)
	{
		/* A zero key yields a signature the service refuses. */
		memset(key, 0, CX_SHA256_LEN);
		return;
	}
	memcpy(k, "AWS4", 4);
	memcpy(k + 4, secret, slen + 1);
	cx_hmac_sha256(k, slen + 4, r->amz_date, 8, t);
	explicit_bzero(k, slen + 4);
	free(k);
	cx_hmac_sha256(t, sizeof(t), r->region, strlen(r->region), key);
	cx_hmac_sha256(key, CX_SHA256_LEN, r->service, strlen(r->service), t);
	cx_hmac_sha256(t, sizeof(t), "aws4_request", 12, key);
	explicit_bzero(t, sizeof(t));
}

cx_code
cx_sigv4_sign(const cx_sigv4_request *r, const cx_sigv4_creds *c,
			  cx_http_headers *out, cx_err *err)
{
	cx_buf		canon;
	cx_buf		sh;
	char		canon_hash[CX_SHA256_HEX_LEN + 1];
	char		scope[256];
	char		sts[512];
	uint8_t		key[CX_SHA256_LEN];
	uint8_t		sig[CX_SHA256_LEN];
	char		sig_hex[2 * CX_SHA256_LEN + 1];
	char	   *authz;
	size_t		alen;

	if (strlen(r->amz_date) != CX_SIGV4_DATE_LEN - 1)
		return cx_err_set(err, CX_ERR_INVALID, "malformed x-amz-date");
	cx_buf_init(&canon);
	cx_buf_init(&sh);
	if (cx_sigv4_canonical_request(r, c, &canon, &sh, err) != CX_OK)
	{
		cx_buf_free(&canon);
		cx_buf_free(&sh);
		return err->code;
	}
	cx_sha256_hex(canon.data, canon.len, canon_hash);
	cx_buf_free(&canon);
	snprintf(scope, sizeof(scope), "%.8s/%.64s/%.32s/aws4_request",
			 r->amz_date, r->region, r->service);
	snprintf(sts, sizeof(sts), ALGORITHM "\n%s\n%s\n%s", r->amz_date, scope,
			 canon_hash);
	signing_key(r, c->secret_access_key, key);
	cx_hmac_sha256(key, sizeof(key), sts, strlen(sts), sig);
	explicit_bzero(key, sizeof(key));
	cx_hex_encode(sig, sizeof(sig), sig_hex);

	alen = strlen(c->access_key_id) + strlen(scope) + sh.len + 128;
	authz = malloc(alen);
	if (authz == NULL)
	{
		cx_buf_free(&sh);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory signing a request");
	}
	snprintf(authz, alen, ALGORITHM " Credential=%s/%s,SignedHeaders=%s,Signature=%s",
			 c->access_key_id, scope, (const char *) sh.data, sig_hex);
	cx_buf_free(&sh);
	cx_http_headers_add(out, "x-amz-date", r->amz_date);
	cx_http_headers_add(out, "x-amz-content-sha256", r->payload_hash);
	if (c->session_token != NULL)
		cx_http_headers_add(out, "x-amz-security-token", c->session_token);
	cx_http_headers_add(out, "Authorization", authz);
	free(authz);
	if (out->failed)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory signing a request");
	return CX_OK;
}
