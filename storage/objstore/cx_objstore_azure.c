/*
 * cx_objstore_azure.c — the Azure Blob Storage object-store backend.
 *
 * az://<container>/<prefix> keeps the object for key K in the block blob
 * "<prefix>/K" of the container, reached at <endpoint>/<container>/<blob>.
 * The endpoint defaults to https://<account_name>.blob.core.windows.net;
 * Azurite and other path-style endpoints carry the account in their path
 * (http://127.0.0.1:10000/devstoreaccount1), which the same URL scheme and
 * the SharedKey canonical resource handle without a special case.
 *
 * Requests authenticate with SharedKey (account_name + account_key) or with
 * a SAS token appended to every URL (cx_azure_auth.h), or go anonymous to a
 * public container.  They go through one cx_http per store, so connections
 * and DNS answers are reused and 429/5xx, timeouts and resets are retried
 * with backoff.
 *
 * Put-if-absent is "If-None-Match: *" on Put Blob, or on Put Block List for
 * uploads larger than one block; 409 BlobAlreadyExists and 412 mean the
 * object exists.  A put whose first attempt landed but whose answer was
 * lost is retried and then answered "exists": cx_commit settles that by
 * reading the object back.  Uploads above BLOCK_SIZE go up as blocks whose
 * ids carry a random per-upload nonce, so two writers racing on one key
 * never commit each other's blocks; an abandoned upload leaves uncommitted
 * blocks, which the service discards on its own (after a week).
 *
 * Error messages are bare reasons ("PUT <url without query>: HTTP 409
 * (BlobAlreadyExists)"); cx_objstore.c adds "<op> <uri>/<key>".  Neither
 * the key nor a SAS token appears in them: cx_http strips URL queries.
 */
#include "objstore/cx_objstore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/cx_azure_auth.h"
#include "util/cx_crypto.h"
#include "objstore/cx_http.h"
#include "objstore/cx_xml.h"

/* A version of the Blob REST API that Azure and Azurite both serve. */
#define AZ_API_VERSION "2021-08-06"

/* Uploads go up in blocks of this size; smaller objects in one Put Blob. */
#define BLOCK_SIZE ((size_t) 4 << 20)

/* Azure's limit on the blocks of one blob. */
#define MAX_BLOCKS 50000

/* List Blobs returns at most this many names per page. */
#define MAX_PAGE_SIZE 5000

#define NONCE_HEX 16

typedef struct az_store
{
	cx_objstore base;
	cx_http    *http;
	char	   *container_url;	/* <endpoint>/<container>, no trailing '/' */
	char	   *prefix;			/* "" or "<prefix>/" */
	cx_az_sharedkey key;		/* SharedKey; key.account NULL if none */
	char	   *sas;			/* normalised SAS token, or NULL */
	bool		conditional;	/* conditional_put: send If-None-Match */
	long		page_size;		/* maxresults; 0 leaves it to the service */
} az_store;

typedef struct az_upload
{
	cx_upload	base;
	cx_buf		pending;		/* bytes not yet sent as a block */
	uint32_t	nblocks;		/* blocks sent so far */
	char		nonce[NONCE_HEX + 1];
} az_upload;

/* One request being built: its URL and headers, owned here. */
typedef struct az_req
{
	cx_buf		url;			/* NUL-terminated */
	cx_http_headers headers;
	cx_http_request http;
	cx_http_response resp;
} az_req;

static cx_code
nomem(cx_err *err)
{
	return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
}

static void
put_str(cx_buf *b, const char *str)
{
	cx_buf_put(b, str, strlen(str));
}

/* Appends a NUL that the buffer's length does not count. */
static void
terminate(cx_buf *b)
{
	cx_buf_put_u8(b, 0);
	if (cx_buf_ok(b))
		b->len--;
}

/*
 * Starts a request on the blob for key (NULL: the container itself) with
 * query (NULL or "a=1&b=2", already encoded): URL, x-ms-version, and the
 * signer or the SAS token.  op names a step of a larger operation in
 * messages ("put block 3"), or is NULL.
 */
static void
req_init(az_req *r, az_store *s, const char *op, const char *method,
		 const char *key, const char *query)
{
	cx_buf_init(&r->url);
	cx_buf_put(&r->url, s->container_url, strlen(s->container_url));
	if (key != NULL)
	{
		cx_buf_put_u8(&r->url, '/');
		cx_http_url_encode(&r->url, s->prefix, true);
		cx_http_url_encode(&r->url, key, true);
	}
	if (query != NULL)
	{
		cx_buf_put_u8(&r->url, '?');
		cx_buf_put(&r->url, query, strlen(query));
	}
	terminate(&r->url);
	if (s->sas != NULL)
		cx_az_url_append_sas(&r->url, s->sas);

	cx_http_headers_init(&r->headers);
	cx_http_headers_add(&r->headers, "x-ms-version", AZ_API_VERSION);

	memset(&r->http, 0, sizeof(r->http));
	r->http.op = op;
	r->http.method = method;
	r->http.headers = &r->headers;
	if (s->key.account != NULL)
	{
		r->http.sign = cx_az_sign;
		r->http.sign_arg = &s->key;
	}
	cx_http_response_init(&r->resp);
}

static void
req_free(az_req *r)
{
	cx_buf_free(&r->url);
	cx_http_headers_free(&r->headers);
	cx_http_response_free(&r->resp);
}

/* Sends the request; CX_OK means a final HTTP status is in r->resp. */
static cx_code
req_send(az_store *s, az_req *r, cx_err *err)
{
	if (!cx_buf_ok(&r->url) || r->headers.failed)
		return nomem(err);
	r->http.url = (const char *) r->url.data;
	return cx_http_do(s->http, &r->http, &r->resp, err);
}

/* Azure's error code: the x-ms-error-code header (HEAD answers have no
 * body), else the <Code> of the error body.  malloc'd, or NULL. */
static char *
error_code(const cx_http_response *resp)
{
	const char *h = cx_http_headers_get(&resp->headers, "x-ms-error-code");

	return h != NULL ? cx_strdup(h) : cx_http_error_code(resp);
}

/* The uniform failure for a final status, with the service's error code. */
static cx_code
req_fail(az_req *r, cx_code code, cx_err *err)
{
	char	   *detail = error_code(&r->resp);

	cx_http_fail(&r->http, &r->resp, code, detail, err);
	free(detail);
	return code;
}

/* Is this answer to a conditional write "the blob is already there"? */
static bool
is_exists(const cx_http_response *resp)
{
	char	   *code;
	bool		exists;

	if (resp->status == 412)
		return true;
	if (resp->status != 409)
		return false;
	code = error_code(resp);
	exists = code != NULL && strcmp(code, "BlobAlreadyExists") == 0;
	free(code);
	return exists;
}

/* Maps the final status of a write.  A missing container (404) is a setup
 * mistake, not a missing object. */
static cx_code
write_outcome(az_req *r, cx_err *err)
{
	long		st = r->resp.status;
	char	   *code;
	cx_code		rc;

	if (st >= 200 && st < 300)
		return CX_OK;
	if (is_exists(&r->resp))
		return req_fail(r, CX_ERR_EXISTS, err);
	code = error_code(&r->resp);
	rc = cx_http_write_status_code(st, code);
	free(code);
	return req_fail(r, rc, err);
}

static cx_code az_head(cx_objstore *base, const char *key, uint64_t *size,
					   int64_t *mtime_us, cx_err *err);

/*
 * With conditional_put off the service is not trusted with If-None-Match:
 * put-if-absent checks with a HEAD and then writes unconditionally, which is
 * exact for the single writer such a store is meant for.
 */
static cx_code
precheck_absent(az_store *s, const char *key, cx_put_mode mode, cx_err *err)
{
	uint64_t	size;
	cx_code		rc;

	if (mode != CX_PUT_IF_ABSENT || s->conditional)
		return CX_OK;
	rc = az_head(&s->base, key, &size, NULL, err);
	if (rc == CX_OK)
		return cx_err_set(err, CX_ERR_EXISTS, "object already exists");
	return rc == CX_ERR_NOT_FOUND ? CX_OK : rc;
}

static void
add_condition(az_store *s, az_req *r, cx_put_mode mode)
{
	if (mode == CX_PUT_IF_ABSENT && s->conditional)
		cx_http_headers_add(&r->headers, "If-None-Match", "*");
}

/* Put Blob: the whole object in one request. */
static cx_code
put_blob(az_store *s, const char *key, const void *data, size_t len,
		 cx_put_mode mode, cx_err *err)
{
	az_req		r;
	cx_code		rc;

	if (precheck_absent(s, key, mode, err) != CX_OK)
		return err->code;
	req_init(&r, s, NULL, "PUT", key, NULL);
	cx_http_headers_add(&r.headers, "x-ms-blob-type", "BlockBlob");
	cx_http_headers_add(&r.headers, "Content-Type", "application/octet-stream");
	add_condition(s, &r, mode);
	r.http.body = data;
	r.http.body_len = len;
	rc = req_send(s, &r, err);
	if (rc == CX_OK)
		rc = write_outcome(&r, err);
	req_free(&r);
	return rc;
}

/* Block ids: base64 of "<nonce>-<index as 6 digits>", all the same length
 * as Azure requires. */
static void
block_id(const az_upload *up, uint32_t index, cx_buf *out)
{
	char		raw[NONCE_HEX + 16];
	int			n = snprintf(raw, sizeof(raw), "%s-%06u", up->nonce, index);

	cx_base64_encode(out, raw, (size_t) n);
}

/* "comp=block&blockid=<encoded id>", NUL-terminated. */
static void
block_query(const az_upload *up, uint32_t index, cx_buf *q)
{
	cx_buf		id;

	cx_buf_init(&id);
	block_id(up, index, &id);
	put_str(q, "comp=block&blockid=");
	if (cx_buf_ok(&id))
		cx_http_url_encode(q, (const char *) id.data, false);
	else
		q->failed = true;
	cx_buf_free(&id);
	terminate(q);
}

/* Put Block: one block of an upload. */
static cx_code
put_block(az_upload *up, const void *data, size_t len, cx_err *err)
{
	az_store   *s = (az_store *) up->base.store;
	cx_buf		query;
	char		op[32];
	az_req		r;
	cx_code		rc;

	if (up->nblocks == MAX_BLOCKS)
		return cx_err_set(err, CX_ERR_LIMIT,
						  "object too large: more than %d blocks of %zu bytes",
						  MAX_BLOCKS, BLOCK_SIZE);
	cx_buf_init(&query);
	block_query(up, up->nblocks, &query);
	if (!cx_buf_ok(&query))
	{
		cx_buf_free(&query);
		return nomem(err);
	}
	snprintf(op, sizeof(op), "put block %u", up->nblocks);
	req_init(&r, s, op, "PUT", up->base.key, (const char *) query.data);
	cx_buf_free(&query);
	cx_http_headers_add(&r.headers, "Content-Type", "application/octet-stream");
	r.http.body = data;
	r.http.body_len = len;
	rc = req_send(s, &r, err);
	if (rc == CX_OK)
		rc = write_outcome(&r, err);
	if (rc == CX_OK)
		up->nblocks++;
	req_free(&r);
	return rc;
}

/* Put Block List: publishes the blocks as the blob, honouring the mode. */
static cx_code
put_block_list(az_upload *up, cx_err *err)
{
	az_store   *s = (az_store *) up->base.store;
	cx_buf		body;
	az_req		r;
	cx_code		rc;

	if (precheck_absent(s, up->base.key, up->base.mode, err) != CX_OK)
		return err->code;
	cx_buf_init(&body);
	put_str(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
	for (uint32_t i = 0; i < up->nblocks; i++)
	{
		put_str(&body, "<Latest>");
		block_id(up, i, &body);
		put_str(&body, "</Latest>");
	}
	put_str(&body, "</BlockList>");
	if (!cx_buf_ok(&body))
	{
		cx_buf_free(&body);
		return nomem(err);
	}
	req_init(&r, s, "put block list", "PUT", up->base.key, "comp=blocklist");
	cx_http_headers_add(&r.headers, "Content-Type", "application/xml");
	add_condition(s, &r, up->base.mode);
	r.http.body = body.data;
	r.http.body_len = body.len;
	rc = req_send(s, &r, err);
	if (rc == CX_OK)
		rc = write_outcome(&r, err);
	req_free(&r);
	cx_buf_free(&body);
	return rc;
}

static void
az_upload_abort(cx_upload *base)
{
	az_upload  *up = (az_upload *) base;

	cx_buf_free(&up->pending);
	free(up);
}

static cx_code
az_upload_begin(cx_objstore *s, const char *key, cx_put_mode mode,
				cx_upload **out, cx_err *err)
{
	az_upload  *up = calloc(1, sizeof(*up));
	uint8_t		rnd[NONCE_HEX / 2];

	if (up == NULL)
		return nomem(err);
	if (cx_random_bytes(rnd, sizeof(rnd), err) != CX_OK)
	{
		free(up);
		return err->code;
	}
	cx_hex_encode(rnd, sizeof(rnd), up->nonce);
	up->base.store = s;
	snprintf(up->base.key, sizeof(up->base.key), "%s", key);
	up->base.mode = mode;
	cx_buf_init(&up->pending);
	*out = &up->base;
	return CX_OK;
}

/*
 * Sends every full block: first the pending bytes topped up from data, then
 * whole blocks straight from data; what is left waits in pending.
 */
static cx_code
az_upload_write(cx_upload *base, const void *data, size_t len, cx_err *err)
{
	az_upload  *up = (az_upload *) base;
	const uint8_t *p = data;

	while (len > 0)
	{
		size_t		take;

		if (up->pending.len == 0 && len >= BLOCK_SIZE)
		{
			if (put_block(up, p, BLOCK_SIZE, err) != CX_OK)
				return err->code;
			take = BLOCK_SIZE;
		}
		else
		{
			take = BLOCK_SIZE - up->pending.len;
			if (take > len)
				take = len;
			cx_buf_put(&up->pending, p, take);
			if (!cx_buf_ok(&up->pending))
				return nomem(err);
			if (up->pending.len == BLOCK_SIZE)
			{
				if (put_block(up, up->pending.data, up->pending.len, err) != CX_OK)
					return err->code;
				cx_buf_reset(&up->pending);
			}
		}
		p += take;
		len -= take;
		up->base.written += take;
	}
	return CX_OK;
}

/* An object that fits in one block goes up with one Put Blob; a larger one
 * sends its last block and commits the list. */
static cx_code
az_upload_finish(cx_upload *base, cx_err *err)
{
	az_upload  *up = (az_upload *) base;
	az_store   *s = (az_store *) base->store;
	cx_code		rc;

	if (up->nblocks == 0)
		rc = put_blob(s, base->key, up->pending.data, up->pending.len,
					  base->mode, err);
	else
	{
		rc = CX_OK;
		if (up->pending.len > 0)
			rc = put_block(up, up->pending.data, up->pending.len, err);
		if (rc == CX_OK)
			rc = put_block_list(up, err);
	}
	az_upload_abort(base);
	return rc;
}

static cx_code
az_put(cx_objstore *base, const char *key, const void *data, size_t len,
	   cx_put_mode mode, cx_err *err)
{
	cx_upload  *up;

	if (len <= BLOCK_SIZE)
		return put_blob((az_store *) base, key, data, len, mode, err);
	if (az_upload_begin(base, key, mode, &up, err) != CX_OK)
		return err->code;
	if (az_upload_write(up, data, len, err) != CX_OK)
	{
		az_upload_abort(up);
		return err->code;
	}
	return az_upload_finish(up, err);
}

static cx_code
az_get(cx_objstore *base, const char *key, uint64_t offset, size_t len,
	   cx_buf *out, cx_err *err)
{
	az_store   *s = (az_store *) base;
	char		range[64];
	az_req		r;
	cx_code		rc;

	/* An empty range is no request to the service, but the object must
	 * still exist. */
	if (len == 0)
	{
		uint64_t	size;

		return az_head(base, key, &size, NULL, err);
	}
	req_init(&r, s, NULL, "GET", key, NULL);
	if (len == SIZE_MAX || offset + len - 1 < offset)
	{
		if (offset > 0)
		{
			snprintf(range, sizeof(range), "bytes=%llu-",
					 (unsigned long long) offset);
			cx_http_headers_add(&r.headers, "x-ms-range", range);
		}
	}
	else
	{
		snprintf(range, sizeof(range), "bytes=%llu-%llu",
				 (unsigned long long) offset,
				 (unsigned long long) (offset + len - 1));
		cx_http_headers_add(&r.headers, "x-ms-range", range);
	}
	r.http.body_out = out;
	rc = req_send(s, &r, err);
	/* 416: the range starts at or past the end, which is no error here. */
	if (rc == CX_OK && r.resp.status != 200 && r.resp.status != 206 &&
		r.resp.status != 416)
		rc = req_fail(&r, cx_http_status_code(r.resp.status), err);
	req_free(&r);
	return rc;
}

static cx_code
az_head(cx_objstore *base, const char *key, uint64_t *size, int64_t *mtime_us,
		cx_err *err)
{
	az_store   *s = (az_store *) base;
	az_req		r;
	cx_code		rc;

	req_init(&r, s, NULL, "HEAD", key, NULL);
	rc = req_send(s, &r, err);
	if (rc == CX_OK && r.resp.status != 200)
		rc = req_fail(&r, cx_http_status_code(r.resp.status), err);
	if (rc == CX_OK)
		rc = cx_http_read_head(&r.resp.headers, size, mtime_us, err);
	req_free(&r);
	return rc;
}

static cx_code
az_del(cx_objstore *base, const char *key, cx_err *err)
{
	az_store   *s = (az_store *) base;
	az_req		r;
	cx_code		rc;

	req_init(&r, s, NULL, "DELETE", key, NULL);
	rc = req_send(s, &r, err);
	if (rc == CX_OK && r.resp.status != 202 && r.resp.status != 200 &&
		r.resp.status != 404)
		rc = req_fail(&r, cx_http_status_code(r.resp.status), err);
	req_free(&r);
	return rc;
}

/* State of a listing across its pages. */
typedef struct list_state
{
	az_store   *s;
	const char *prefix;			/* the store's, taken off every name */
	cx_list_entry_fn fn;
	void	   *arg;
	bool		stopped;		/* fn asked to stop */
	char	   *marker;			/* NextMarker of the last page, or NULL */
} list_state;

/* Passes a listed blob to fn: its name less the store prefix, its size
 * and Last-Modified. */
static cx_code
emit_blob(list_state *ls, const char *name, const cx_xml *props, cx_err *err)
{
	size_t		plen = strlen(ls->prefix);
	const char *size = cx_xml_text(cx_xml_find(props, "Content-Length"));
	const cx_xml *modified = cx_xml_find(props, "Last-Modified");
	cx_list_entry e = {.key = name + plen};
	char	   *end;
	cx_err		scratch;

	if (strncmp(name, ls->prefix, plen) != 0)
		return cx_err_set(err, CX_ERR_IO, "a blob name lacks the store prefix");
	errno = 0;
	e.size = strtoull(size, &end, 10);
	if (end == size || *end != '\0' || errno != 0)
		return cx_err_set(err, CX_ERR_IO, "malformed Content-Length");
	if (modified == NULL || !cx_http_parse_time(cx_xml_text(modified), &e.mtime_us))
		return cx_err_set(err, CX_ERR_IO, "a <Blob> lacks a valid Last-Modified");
	/* A name that is no valid key was not written through a store. */
	if (cx_key_validate(e.key, &scratch) == CX_OK && !ls->fn(ls->arg, &e))
		ls->stopped = true;
	return CX_OK;
}

/* One <Blob> of a page: its name (percent-decoded if the service had to
 * encode it), size and mtime. */
static cx_code
list_blob(list_state *ls, const cx_xml *blob, cx_err *err)
{
	const cx_xml *name = cx_xml_find(blob, "Name");
	const cx_xml *props = cx_xml_find(blob, "Properties");
	const char *encoded;
	char	   *decoded;
	cx_code		rc;

	if (name == NULL || props == NULL ||
		cx_xml_find(props, "Content-Length") == NULL)
		return cx_err_set(err, CX_ERR_IO, "listing: a <Blob> lacks its name or size");
	encoded = cx_xml_attr(name, "Encoded");
	if (encoded == NULL || strcmp(encoded, "true") != 0)
		rc = emit_blob(ls, cx_xml_text(name), props, err);
	else if ((rc = cx_az_percent_decode(cx_xml_text(name), strlen(cx_xml_text(name)),
										false, &decoded, err)) == CX_OK)
	{
		rc = emit_blob(ls, decoded, props, err);
		free(decoded);
	}
	return rc == CX_OK ? CX_OK : cx_err_prefix(err, "listing");
}

/* Hands a page's blobs to fn and sets ls->marker to its NextMarker. */
static cx_code
page_blobs(list_state *ls, const cx_xml_doc *doc, cx_err *err)
{
	const cx_xml *x = cx_xml_root(doc, "EnumerationResults");
	const cx_xml *blobs;
	const cx_xml *blob = NULL;
	const cx_xml *marker;

	if (x == NULL)
		return cx_err_set(err, CX_ERR_IO, "listing: answer is no <EnumerationResults>");
	blobs = cx_xml_find(x, "Blobs");
	while (blobs != NULL && !ls->stopped &&
		   (blob = cx_xml_next(blobs, blob, "Blob")) != NULL)
		if (list_blob(ls, blob, err) != CX_OK)
			return err->code;
	marker = cx_xml_find(x, "NextMarker");
	if (marker != NULL && cx_xml_text(marker)[0] != '\0')
	{
		ls->marker = strdup(cx_xml_text(marker));
		if (ls->marker == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory for a NextMarker");
	}
	return CX_OK;
}

/* Hands one page's blobs to fn and keeps its NextMarker. */
static cx_code
list_page(list_state *ls, const cx_buf *page, cx_err *err)
{
	cx_xml_doc *doc;
	char	   *prev = ls->marker;
	cx_code		rc;

	ls->marker = NULL;
	rc = cx_xml_parse((const char *) page->data, page->len, &doc, err);
	if (rc != CX_OK)
	{
		free(prev);
		return cx_err_prefix(err, "listing");
	}
	rc = page_blobs(ls, doc, err);
	cx_xml_free(doc);
	if (rc != CX_OK)
	{
		free(prev);
		return rc;
	}
	/* A page that hands back the marker it was asked with would repeat forever. */
	if (prev != NULL && ls->marker != NULL && strcmp(prev, ls->marker) == 0)
	{
		free(prev);
		return cx_err_set(err, CX_ERR_IO,
						  "listing does not advance: the same NextMarker twice");
	}
	free(prev);
	return CX_OK;
}

cx_code
cx_az_list_page(const char *prefix, const cx_buf *page, cx_list_entry_fn fn,
				void *arg, char **marker, cx_err *err)
{
	list_state	ls = {.prefix = prefix, .fn = fn, .arg = arg, .marker = *marker};
	cx_code		rc = list_page(&ls, page, err);

	*marker = ls.marker;
	return rc;
}

/* "restype=container&comp=list&prefix=..[&marker=..][&maxresults=..]" */
static void
list_query(const list_state *ls, const char *prefix, cx_buf *q)
{
	char		num[32];

	put_str(q, "restype=container&comp=list&prefix=");
	cx_http_url_encode(q, ls->s->prefix, false);
	cx_http_url_encode(q, prefix, false);
	if (ls->marker != NULL)
	{
		put_str(q, "&marker=");
		cx_http_url_encode(q, ls->marker, false);
	}
	if (ls->s->page_size > 0)
	{
		snprintf(num, sizeof(num), "&maxresults=%ld", ls->s->page_size);
		cx_buf_put(q, num, strlen(num));
	}
	terminate(q);
}

static cx_code
az_list(cx_objstore *base, const char *prefix, cx_list_entry_fn fn,
		void *arg, cx_err *err)
{
	az_store   *s = (az_store *) base;
	list_state	ls = {.s = s, .prefix = s->prefix, .fn = fn, .arg = arg};
	cx_buf		query;
	cx_buf		page;
	cx_code		rc = CX_OK;

	cx_buf_init(&query);
	cx_buf_init(&page);
	do
	{
		az_req		r;

		cx_buf_reset(&query);
		cx_buf_reset(&page);
		list_query(&ls, prefix, &query);
		if (!cx_buf_ok(&query))
		{
			rc = nomem(err);
			break;
		}
		req_init(&r, ls.s, NULL, "GET", NULL, (const char *) query.data);
		r.http.body_out = &page;
		rc = req_send(ls.s, &r, err);
		if (rc == CX_OK && r.resp.status != 200)
			rc = req_fail(&r, cx_http_status_code(r.resp.status), err);
		req_free(&r);
		if (rc == CX_OK)
			rc = list_page(&ls, &page, err);
	} while (rc == CX_OK && !ls.stopped && ls.marker != NULL);
	free(ls.marker);
	cx_buf_free(&query);
	cx_buf_free(&page);
	return rc;
}

static void
az_close(cx_objstore *base)
{
	az_store   *s = (az_store *) base;

	cx_http_destroy(s->http);
	cx_az_sharedkey_free(&s->key);
	if (s->sas != NULL)
		explicit_bzero(s->sas, strlen(s->sas));
	free(s->sas);
	free(s->container_url);
	free(s->prefix);
	free(s->base.uri);
	free(s);
}

static const cx_objstore_ops az_ops = {
	.put = az_put,
	.get = az_get,
	.head = az_head,
	.list = az_list,
	.del = az_del,
	.upload_begin = az_upload_begin,
	.upload_write = az_upload_write,
	.upload_finish = az_upload_finish,
	.upload_abort = az_upload_abort,
	.close = az_close,
};

/* "<endpoint>/<container>", the endpoint defaulting from the account. */
static cx_code
set_container_url(az_store *s, const char *endpoint, const char *account,
				  const char *container, cx_err *err)
{
	size_t		len;
	cx_buf		url;

	if (endpoint == NULL && account == NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "an az:// store needs account_name, or an endpoint");
	if (endpoint != NULL &&
		strncmp(endpoint, "https://", 8) != 0 && strncmp(endpoint, "http://", 7) != 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option endpoint must start with https:// or http://");
	/* A query in the endpoint would be a SAS token in the wrong place. */
	if (endpoint != NULL && strpbrk(endpoint, "?#") != NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option endpoint must not hold a query string; give a SAS token as sas_token");
	cx_buf_init(&url);
	if (endpoint != NULL)
	{
		len = strlen(endpoint);
		while (len > 0 && endpoint[len - 1] == '/')
			len--;
		cx_buf_put(&url, endpoint, len);
	}
	else
	{
		put_str(&url, "https://");
		cx_buf_put(&url, account, strlen(account));
		put_str(&url, ".blob.core.windows.net");
	}
	cx_buf_put_u8(&url, '/');
	cx_http_url_encode(&url, container, false);
	cx_buf_put_u8(&url, 0);
	if (!cx_buf_ok(&url))
	{
		cx_buf_free(&url);
		return nomem(err);
	}
	s->container_url = (char *) cx_buf_detach(&url, NULL);
	return CX_OK;
}

/*
 * Credentials come from the options: account_key (SharedKey, with
 * account_name) or sas_token, not both.  Failing those, and only if
 * allow_env_credentials is on (the FDW sets it for superuser-configured
 * servers only), from AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, the
 * names the Azure CLI uses; failing those, requests are anonymous, which
 * only a public container answers.  *account may be replaced by
 * AZURE_STORAGE_ACCOUNT in the same circumstances.
 */
static cx_code
set_credentials(az_store *s, const cx_option *o, size_t n, const char **account,
				cx_err *err)
{
	const char *key = cx_option_get(o, n, "account_key");
	const char *sas = cx_option_get(o, n, "sas_token");
	bool		allow_env;

	if (cx_option_bool(o, n, "allow_env_credentials", false, &allow_env, err) != CX_OK)
		return err->code;
	if (key == NULL && sas == NULL && allow_env)
	{
		key = getenv("AZURE_STORAGE_KEY");
		sas = key == NULL ? getenv("AZURE_STORAGE_SAS_TOKEN") : NULL;
		if (*account == NULL)
			*account = getenv("AZURE_STORAGE_ACCOUNT");
	}
	if (key != NULL && sas != NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "give either account_key or sas_token for an az:// store, not both");
	if (key != NULL)
		return cx_az_sharedkey_init(&s->key, *account, key, err);
	if (sas != NULL)
		return cx_az_sas_normalize(sas, &s->sas, err);
	return CX_OK;
}

static cx_code
set_page_size(az_store *s, const char *v, cx_err *err)
{
	char	   *end;

	if (v == NULL)
		return CX_OK;
	errno = 0;
	s->page_size = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || s->page_size < 1 ||
		s->page_size > MAX_PAGE_SIZE)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option list_page_size must be an integer between 1 and %d, not \"%.32s\"",
						  MAX_PAGE_SIZE, v);
	return CX_OK;
}

static cx_code
configure(az_store *s, const char *container, const char *prefix,
		  const cx_option *o, size_t n, cx_err *err)
{
	const char *account = cx_option_get(o, n, "account_name");
	cx_http_config cfg;
	size_t		plen = strlen(prefix);

	s->base.ops = &az_ops;
	s->base.uri = malloc(strlen(container) + plen + sizeof("az:///"));
	s->prefix = malloc(plen + 2);
	if (s->base.uri == NULL || s->prefix == NULL)
		return nomem(err);
	sprintf(s->base.uri, "az://%s%s%s", container, plen ? "/" : "", prefix);
	sprintf(s->prefix, "%s%s", prefix, plen ? "/" : "");

	if (set_credentials(s, o, n, &account, err) != CX_OK ||
		set_container_url(s, cx_option_get(o, n, "endpoint"), account,
						  container, err) != CX_OK ||
		cx_option_bool(o, n, "conditional_put", true, &s->conditional, err) != CX_OK ||
		set_page_size(s, cx_option_get(o, n, "list_page_size"), err) != CX_OK ||
		cx_http_config_from_options(&cfg, o, n, err) != CX_OK)
		return err->code;
	return cx_http_create(&cfg, &s->base.stats, &s->http, err);
}

cx_code
cx_objstore_open_azure(const char *container, const char *prefix,
					   const cx_option *options, size_t noptions,
					   cx_objstore **out, cx_err *err)
{
	az_store   *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (s == NULL)
		return nomem(err);
	if (configure(s, container, prefix, options, noptions, err) != CX_OK)
	{
		az_close(&s->base);
		return err->code;
	}
	*out = &s->base;
	return CX_OK;
}
