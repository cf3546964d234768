/*
 * cx_objstore_s3.c — the S3 object-store backend (s3://bucket/prefix).
 *
 * The object for key K is <prefix>/K in the bucket.  Every request goes
 * through the store's cx_http client (one connection pool per handle) and is
 * signed with SigV4 per attempt, unless the store is anonymous.
 *
 * Put-if-absent is "PUT with If-None-Match: *" (412 means the object
 * exists).  Not every S3 server honours that header, so with conditional_put
 * on (the default) the first put-if-absent of a process against an endpoint
 * and bucket probes it and refuses a server that silently overwrites.  With
 * conditional_put off, put-if-absent is HEAD then PUT: correct only while one
 * writer at a time writes the store (see docs/OPERATIONS.md, section 3).
 *
 * A put whose acknowledgement was lost is retried; with If-None-Match the
 * retry then meets its own object and reports CX_ERR_EXISTS, which the
 * commit protocol resolves by reading the object back (cx_commit.c).
 *
 * Streaming uploads buffer up to PART_SIZE bytes; an object that stays
 * smaller is one PUT, a larger one a multipart upload whose completion
 * carries the same If-None-Match condition.
 *
 * Error messages are bare reasons; cx_objstore.c adds "<op> <uri>/<key>".
 * No message carries a credential.
 */
#include "objstore/cx_objstore.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/cx_crypto.h"
#include "objstore/cx_http.h"
#include "objstore/cx_sigv4.h"
#include "objstore/cx_xml.h"

/* Multipart parts (S3 wants >= 5 MiB but the last) and the threshold below
 * which an upload is a single PUT. */
#define PART_SIZE		(8 * 1024 * 1024)
#define MAX_PARTS		10000
#define MAX_PAGE_SIZE	1000
#define PROBE_PREFIX	"_cx_probe/"

typedef struct s3_store
{
	cx_objstore base;
	cx_http    *http;
	char	   *base_url;		/* scheme://authority[/path]: the bucket */
	char	   *host;			/* Host header: base_url's authority */
	char	   *prefix;			/* "" or "<prefix>/" */
	char	   *probe_id;		/* "<endpoint> <bucket>", for the probe cache */
	char	   *region;
	bool		path_style;
	bool		conditional;	/* conditional_put */
	bool		probed;			/* this handle already passed the probe */
	long		page_size;
	bool		anonymous;
	cx_sigv4_creds creds;		/* owned copies, wiped on close */
} s3_store;

typedef struct s3_upload
{
	cx_upload	base;
	cx_buf		pending;		/* bytes not yet sent */
	char	   *upload_id;		/* set once the multipart upload began */
	cx_buf		parts;			/* <Part> elements of the completion body */
	int			nparts;
} s3_upload;

/*
 * One request being built and performed: URL, headers, body, and the
 * payload hash its signature covers (computed once for all attempts).
 */
typedef struct s3_call
{
	s3_store   *s;
	cx_buf		url;
	cx_http_headers headers;
	char		payload_hash[CX_SHA256_HEX_LEN + 1];
	cx_http_request req;
	cx_http_response resp;
} s3_call;

/* Process-wide memory of probed servers: "<endpoint> <bucket>" -> verdict. */
typedef struct probe_entry
{
	struct probe_entry *next;
	char	   *id;
} probe_entry;

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static probe_entry *probes_passed;

static cx_code
nomem(cx_err *err)
{
	return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
}

/* --- requests ----------------------------------------------------------- */

static cx_code
sign(void *arg, const cx_http_request *req, cx_http_headers *out, cx_err *err)
{
	s3_call    *c = arg;
	char		date[CX_SIGV4_DATE_LEN];
	cx_sigv4_request r;

	cx_sigv4_date(time(NULL), date);
	r.method = req->method;
	r.url = req->url;
	r.headers = req->headers;
	r.payload_hash = c->payload_hash;
	r.amz_date = date;
	r.region = c->s->region;
	r.service = "s3";
	return cx_sigv4_sign(&r, &c->s->creds, out, err);
}

/* S3 asks for a retry of a conditional write racing another (409
 * ConditionalRequestConflict) and of a stalled upload (400 RequestTimeout). */
static bool
retryable(void *arg, const cx_http_response *resp)
{
	char	   *code;
	bool		retry;

	(void) arg;
	if (cx_http_retryable_status(resp->status))
		return true;
	if (resp->status != 409 && resp->status != 400)
		return false;
	code = cx_http_error_code(resp);
	retry = code != NULL &&
		(strcmp(code, "ConditionalRequestConflict") == 0 ||
		 strcmp(code, "RequestTimeout") == 0);
	free(code);
	return retry;
}

/* Appends the URL of a key ("" for the bucket itself) and a query string
 * (NULL for none) to c->url. */
static void
call_url(s3_call *c, const char *key, const char *query)
{
	s3_store   *s = c->s;

	cx_buf_put(&c->url, s->base_url, strlen(s->base_url));
	if (key[0] != '\0' || !s->path_style)
		cx_buf_put_u8(&c->url, '/');
	if (key[0] != '\0')
	{
		cx_http_url_encode(&c->url, s->prefix, true);
		cx_http_url_encode(&c->url, key, true);
	}
	if (query != NULL)
	{
		cx_buf_put_u8(&c->url, '?');
		cx_buf_put(&c->url, query, strlen(query));
	}
	cx_buf_put_u8(&c->url, '\0');
}

/* Starts a call on key (relative to the store; "" for the bucket). */
static void
call_init(s3_call *c, s3_store *s, const char *method, const char *key,
		  const char *query)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	cx_buf_init(&c->url);
	cx_http_headers_init(&c->headers);
	cx_http_response_init(&c->resp);
	call_url(c, key, query);
	/* Sent as given, so that curl and the signature agree on it. */
	cx_http_headers_add(&c->headers, "Host", s->host);
	c->req.method = method;
	c->req.headers = &c->headers;
	c->req.retry = retryable;
	if (!s->anonymous)
	{
		c->req.sign = sign;
		c->req.sign_arg = c;
	}
	memcpy(c->payload_hash, CX_SIGV4_EMPTY_SHA256, sizeof(c->payload_hash));
}

static void
call_body(s3_call *c, const void *data, size_t len)
{
	c->req.body = data;
	c->req.body_len = len;
	if (!c->s->anonymous)
		cx_sha256_hex(data, len, c->payload_hash);
}

static void
call_free(s3_call *c)
{
	cx_buf_free(&c->url);
	cx_http_headers_free(&c->headers);
	cx_http_response_free(&c->resp);
}

/* Performs the call; CX_OK means a response arrived, whatever its status. */
static cx_code
call_do(s3_call *c, cx_err *err)
{
	if (!cx_buf_ok(&c->url) || c->headers.failed)
		return nomem(err);
	c->req.url = (const char *) c->url.data;
	return cx_http_do(c->s->http, &c->req, &c->resp, err);
}

static bool
call_ok(const s3_call *c)
{
	return c->resp.status >= 200 && c->resp.status < 300;
}

/* Did If-None-Match: * refuse the write?  412 per S3; some MinIO releases
 * answered 304 as to a GET, meaning the same. */
static bool
condition_failed(const s3_call *c)
{
	return c->resp.status == 412 ||
		(c->resp.status == 304 && cx_http_headers_get(&c->headers, "If-None-Match") != NULL);
}

/* The cx_code of a final status we do not accept, given the error code S3
 * answered with: PUTs and POSTs (the multipart steps) write. */
static cx_code
status_code(const s3_call *c, const char *service_code)
{
	bool		writes = strcmp(c->req.method, "PUT") == 0 ||
		strcmp(c->req.method, "POST") == 0;

	return writes ? cx_http_write_status_code(c->resp.status, service_code) :
		cx_http_status_code(c->resp.status);
}

/* The uniform error for a status we do not accept. */
static cx_code
call_fail(s3_call *c, cx_err *err)
{
	char	   *code = cx_http_error_code(&c->resp);
	cx_code		rc = cx_http_fail(&c->req, &c->resp, status_code(c, code), code,
								  err);

	free(code);
	return rc;
}

/* --- HEAD, GET, DELETE ------------------------------------------------- */

static cx_code
s3_head(cx_objstore *base, const char *key, uint64_t *size, int64_t *mtime_us,
		cx_err *err)
{
	s3_call		c;
	cx_code		rc;

	call_init(&c, (s3_store *) base, "HEAD", key, NULL);
	rc = call_do(&c, err);
	if (rc == CX_OK && c.resp.status == 404)
		rc = cx_err_set(err, CX_ERR_NOT_FOUND, "no such object");
	else if (rc == CX_OK && !call_ok(&c))
		rc = call_fail(&c, err);
	else if (rc == CX_OK)
		rc = cx_http_read_head(&c.resp.headers, size, mtime_us, err);
	call_free(&c);
	return rc;
}

/* Does the object exist?  For the paths that must find out after the fact. */
static cx_code
exists(s3_store *s, const char *key, bool *found, cx_err *err)
{
	uint64_t	size;
	cx_code		rc = s3_head(&s->base, key, &size, NULL, err);

	*found = rc == CX_OK;
	return rc == CX_ERR_NOT_FOUND ? CX_OK : rc;
}

/*
 * A server that ignores Range answers 200 with the whole object; keep only
 * the bytes asked for, appended to out after `start`.
 */
static void
trim_to_range(cx_buf *out, size_t start, uint64_t offset, size_t len)
{
	size_t		got = out->len - start;
	size_t		skip = offset < got ? (size_t) offset : got;
	size_t		keep = got - skip < len ? got - skip : len;

	memmove(out->data + start, out->data + start + skip, keep);
	out->len = start + keep;
}

static cx_code
s3_get(cx_objstore *base, const char *key, uint64_t offset, size_t len,
	   cx_buf *out, cx_err *err)
{
	s3_store   *s = (s3_store *) base;
	bool		ranged = offset > 0 || len != SIZE_MAX;
	size_t		start = out->len;
	char		range[64];
	s3_call		c;
	cx_code		rc;

	if (len == 0)
	{
		/* No Range can ask for nothing; say whether the object exists. */
		uint64_t	size;

		return s3_head(base, key, &size, NULL, err);
	}
	call_init(&c, s, "GET", key, NULL);
	if (ranged)
	{
		if (len == SIZE_MAX || offset + len - 1 < offset)
			snprintf(range, sizeof(range), "bytes=%llu-",
					 (unsigned long long) offset);
		else
			snprintf(range, sizeof(range), "bytes=%llu-%llu",
					 (unsigned long long) offset,
					 (unsigned long long) (offset + len - 1));
		cx_http_headers_add(&c.headers, "Range", range);
	}
	c.req.body_out = out;
	rc = call_do(&c, err);
	if (rc == CX_OK && c.resp.status == 404)
		rc = cx_err_set(err, CX_ERR_NOT_FOUND, "no such object");
	else if (rc == CX_OK && c.resp.status == 416)
		rc = CX_OK;				/* the range starts past the end: no bytes */
	else if (rc == CX_OK && !call_ok(&c))
		rc = call_fail(&c, err);
	else if (rc == CX_OK && ranged && c.resp.status == 200)
		trim_to_range(out, start, offset, len);
	call_free(&c);
	return rc;
}

static cx_code
s3_del(cx_objstore *base, const char *key, cx_err *err)
{
	s3_call		c;
	cx_code		rc;

	call_init(&c, (s3_store *) base, "DELETE", key, NULL);
	rc = call_do(&c, err);
	if (rc == CX_OK && !call_ok(&c) && c.resp.status != 404)
		rc = call_fail(&c, err);
	call_free(&c);
	return rc;
}

/* --- LIST -------------------------------------------------------------- */

typedef struct list_state
{
	s3_store   *s;
	const char *prefix;			/* the store's, taken off every key */
	cx_list_entry_fn fn;
	void	   *arg;
	bool		stopped;
	char	   *token;			/* NextContinuationToken, or NULL */
} list_state;

/* Reports one <Contents> entry, with the store prefix taken off its key. */
static cx_code
list_entry(list_state *ls, const cx_xml *contents, cx_err *err)
{
	size_t		plen = strlen(ls->prefix);
	const cx_xml *k = cx_xml_find(contents, "Key");
	const cx_xml *size = cx_xml_find(contents, "Size");
	const cx_xml *modified = cx_xml_find(contents, "LastModified");
	cx_list_entry e;
	char	   *end;
	cx_err		scratch;

	if (k == NULL || size == NULL || modified == NULL)
		return cx_err_set(err, CX_ERR_IO,
						  "listing entry without Key, Size or LastModified");
	e.key = cx_xml_text(k);
	e.size = strtoull(cx_xml_text(size), &end, 10);
	if (end == cx_xml_text(size) || *end != '\0')
		return cx_err_set(err, CX_ERR_IO, "listing entry with a bad Size");
	if (!cx_http_parse_time(cx_xml_text(modified), &e.mtime_us))
		return cx_err_set(err, CX_ERR_IO, "listing entry with a bad LastModified");
	/* Objects outside our namespace rules (written by someone else) are
	 * not ours to report, as in the local backend. */
	if (strncmp(e.key, ls->prefix, plen) == 0 &&
		cx_key_validate(e.key + plen, &scratch) == CX_OK)
	{
		e.key += plen;
		ls->stopped = !ls->fn(ls->arg, &e);
	}
	return CX_OK;
}

/* Takes the continuation token of a ListBucketResult into ls->token. */
static cx_code
page_token(list_state *ls, const cx_xml *result, cx_err *err)
{
	const cx_xml *truncated = cx_xml_find(result, "IsTruncated");
	bool		more = truncated != NULL && strcmp(cx_xml_text(truncated), "true") == 0;
	char	   *prev = ls->token;
	bool		same;

	ls->token = more ? cx_xml_find_text(result, "NextContinuationToken") : NULL;
	/* A page that hands back the token it was asked with would repeat forever. */
	same = prev != NULL && ls->token != NULL && strcmp(prev, ls->token) == 0;
	free(prev);
	if (more && ls->token == NULL)
		return cx_err_set(err, CX_ERR_IO,
						  "truncated listing without a NextContinuationToken");
	if (same)
		return cx_err_set(err, CX_ERR_IO,
						  "listing does not advance: the same NextContinuationToken twice");
	return CX_OK;
}

/* Parses one ListObjectsV2 page; sets ls->token if there is another. */
static cx_code
list_page(list_state *ls, const cx_buf *page, cx_err *err)
{
	cx_xml_doc *doc;
	const cx_xml *result;
	const cx_xml *contents = NULL;
	cx_code		rc;

	rc = cx_xml_parse((const char *) page->data, page->len, &doc, err);
	if (rc != CX_OK)
		return cx_err_prefix(err, "listing");
	result = cx_xml_root(doc, "ListBucketResult");
	if (result == NULL)
		rc = cx_err_set(err, CX_ERR_IO, "listing answer is not a ListBucketResult");
	else
		/* The fields come in any order: look them up before walking Contents. */
		rc = page_token(ls, result, err);
	while (rc == CX_OK && !ls->stopped &&
		   (contents = cx_xml_next(result, contents, "Contents")) != NULL)
		rc = list_entry(ls, contents, err);
	cx_xml_free(doc);
	return rc;
}

cx_code
cx_s3_list_page(const char *prefix, const cx_buf *page, cx_list_entry_fn fn,
				void *arg, char **token, cx_err *err)
{
	list_state	ls = {.prefix = prefix, .fn = fn, .arg = arg, .token = *token};
	cx_code		rc = list_page(&ls, page, err);

	*token = ls.token;
	return rc;
}

/* "list-type=2&max-keys=N&prefix=P[&continuation-token=T]", encoded. */
static void
list_query(cx_buf *q, const list_state *ls, const char *prefix)
{
	char		head[64];

	snprintf(head, sizeof(head), "list-type=2&max-keys=%ld&prefix=",
			 ls->s->page_size);
	cx_buf_put(q, head, strlen(head));
	cx_http_url_encode(q, ls->s->prefix, false);
	cx_http_url_encode(q, prefix, false);
	if (ls->token != NULL)
	{
		cx_buf_put(q, "&continuation-token=", 20);
		cx_http_url_encode(q, ls->token, false);
	}
	cx_buf_put_u8(q, '\0');
}

static cx_code
s3_list(cx_objstore *base, const char *prefix, cx_list_entry_fn fn,
		void *arg, cx_err *err)
{
	s3_store   *s = (s3_store *) base;
	list_state	ls = {.s = s, .prefix = s->prefix, .fn = fn, .arg = arg};
	cx_buf		q;
	cx_code		rc;

	cx_buf_init(&q);
	do
	{
		s3_call		c;

		cx_buf_reset(&q);
		list_query(&q, &ls, prefix);
		if (!cx_buf_ok(&q))
		{
			rc = nomem(err);
			break;
		}
		call_init(&c, ls.s, "GET", "", (const char *) q.data);
		rc = call_do(&c, err);
		if (rc == CX_OK && !call_ok(&c))
			rc = call_fail(&c, err);
		if (rc == CX_OK)
			rc = list_page(&ls, &c.resp.body, err);
		call_free(&c);
	} while (rc == CX_OK && ls.token != NULL && !ls.stopped);
	free(ls.token);
	cx_buf_free(&q);
	return rc;
}

/* --- PUT and the conditional-write probe ------------------------------ */

/* One PUT, conditional or not; 412 is CX_ERR_EXISTS. */
static cx_code
put_once(s3_store *s, const char *key, const void *data, size_t len,
		 bool if_none_match, cx_err *err)
{
	s3_call		c;
	cx_code		rc;

	call_init(&c, s, "PUT", key, NULL);
	if (if_none_match)
		cx_http_headers_add(&c.headers, "If-None-Match", "*");
	call_body(&c, data, len);
	rc = call_do(&c, err);
	if (rc == CX_OK && condition_failed(&c))
		rc = cx_err_set(err, CX_ERR_EXISTS, "object already exists");
	else if (rc == CX_OK && !call_ok(&c))
		rc = call_fail(&c, err);
	else if (rc != CX_OK && c.resp.status == 409)
	{
		/* ConditionalRequestConflict outlasted the retries: another writer
		 * kept racing us for this key.  If it is there now, it exists. */
		bool		found;
		cx_err		head_err;

		if (exists(s, key, &found, &head_err) == CX_OK && found)
			rc = cx_err_set(err, CX_ERR_EXISTS, "object already exists");
	}
	call_free(&c);
	return rc;
}

static bool
probe_known(const char *id)
{
	bool		known = false;

	pthread_mutex_lock(&probe_lock);
	for (probe_entry *e = probes_passed; e != NULL && !known; e = e->next)
		known = strcmp(e->id, id) == 0;
	pthread_mutex_unlock(&probe_lock);
	return known;
}

/* Remembered for the life of the process, hence never freed. */
static void
probe_remember(const char *id)
{
	probe_entry *e = malloc(sizeof(*e));

	if (e == NULL || (e->id = strdup(id)) == NULL)
	{
		free(e);
		return;					/* we will just probe again */
	}
	pthread_mutex_lock(&probe_lock);
	e->next = probes_passed;
	probes_passed = e;
	pthread_mutex_unlock(&probe_lock);
}

/*
 * Writes a fresh probe object with If-None-Match twice: a server that
 * honours the condition refuses the second write.  The probe object is
 * deleted either way.
 */
static cx_code
run_probe(s3_store *s, cx_err *err)
{
	uint8_t		rnd[8];
	char		key[sizeof(PROBE_PREFIX) + 2 * sizeof(rnd)];
	cx_code		rc;
	cx_err		del_err;

	if (cx_random_bytes(rnd, sizeof(rnd), err) != CX_OK)
		return err->code;
	memcpy(key, PROBE_PREFIX, strlen(PROBE_PREFIX));
	cx_hex_encode(rnd, sizeof(rnd), key + strlen(PROBE_PREFIX));
	rc = put_once(s, key, "1", 1, true, err);
	if (rc == CX_OK)
	{
		rc = put_once(s, key, "2", 1, true, err);
		if (rc == CX_OK)
			rc = cx_err_set(err, CX_ERR_UNSUPPORTED,
							"this S3 server ignores If-None-Match: * (a conditional put replaced an existing object), so it cannot make commits atomic; "
							"set the server option conditional_put 'off' only if this store is written by a single cluster, whose commits are then serialised by that cluster alone");
		else if (rc == CX_ERR_EXISTS)
			rc = CX_OK;
	}
	s3_del(&s->base, key, &del_err);
	if (rc != CX_OK && rc != CX_ERR_UNSUPPORTED)
		cx_err_prefix(err, "probing conditional writes");
	return rc;
}

/* Once per process per endpoint and bucket: does If-None-Match work? */
static cx_code
check_conditional(s3_store *s, cx_err *err)
{
	if (s->probed || probe_known(s->probe_id))
	{
		s->probed = true;
		return CX_OK;
	}
	if (run_probe(s, err) != CX_OK)
		return err->code;
	s->probed = true;
	probe_remember(s->probe_id);
	return CX_OK;
}

/* Put-if-absent without server help: only safe with a single writer. */
static cx_code
head_then(s3_store *s, const char *key, cx_err *err)
{
	bool		found;

	if (exists(s, key, &found, err) != CX_OK)
		return err->code;
	if (found)
		return cx_err_set(err, CX_ERR_EXISTS, "object already exists");
	return CX_OK;
}

static cx_code
s3_put(cx_objstore *base, const char *key, const void *data, size_t len,
	   cx_put_mode mode, cx_err *err)
{
	s3_store   *s = (s3_store *) base;
	bool		conditional = mode == CX_PUT_IF_ABSENT && s->conditional;

	if (conditional && check_conditional(s, err) != CX_OK)
		return err->code;
	if (mode == CX_PUT_IF_ABSENT && !s->conditional &&
		head_then(s, key, err) != CX_OK)
		return err->code;
	return put_once(s, key, data, len, conditional, err);
}

/* --- streaming and multipart uploads ----------------------------------- */

static cx_code
s3_upload_begin(cx_objstore *base, const char *key, cx_put_mode mode,
				cx_upload **out, cx_err *err)
{
	s3_upload  *up = calloc(1, sizeof(*up));

	if (up == NULL)
		return nomem(err);
	up->base.store = base;
	snprintf(up->base.key, sizeof(up->base.key), "%s", key);
	up->base.mode = mode;
	cx_buf_init(&up->pending);
	cx_buf_init(&up->parts);
	*out = &up->base;
	return CX_OK;
}

/* Pulls one value out of an XML answer (malloc'd), or fails. */
static cx_code
answer_field(const s3_call *c, const char *name, char **out, cx_err *err)
{
	*out = cx_xml_doc_field((const char *) c->resp.body.data, c->resp.body.len, name);
	if (*out == NULL || (*out)[0] == '\0')
	{
		free(*out);
		*out = NULL;
		return cx_http_fail(&c->req, &c->resp, CX_ERR_IO,
							"answer without a value for this field", err);
	}
	return CX_OK;
}

static cx_code
multipart_create(s3_upload *up, cx_err *err)
{
	s3_call		c;
	cx_code		rc;

	call_init(&c, (s3_store *) up->base.store, "POST", up->base.key, "uploads=");
	c.req.op = "start multipart upload";
	rc = call_do(&c, err);
	if (rc == CX_OK && !call_ok(&c))
		rc = call_fail(&c, err);
	if (rc == CX_OK)
		rc = answer_field(&c, "UploadId", &up->upload_id, err);
	call_free(&c);
	return rc;
}

/* "partNumber=N&uploadId=ID" (or just the id), encoded. */
static void
upload_query(cx_buf *q, const s3_upload *up, int part)
{
	char		num[32];

	if (part > 0)
	{
		snprintf(num, sizeof(num), "partNumber=%d&", part);
		cx_buf_put(q, num, strlen(num));
	}
	cx_buf_put(q, "uploadId=", 9);
	cx_http_url_encode(q, up->upload_id, false);
	cx_buf_put_u8(q, '\0');
}

/* Sends the first len pending bytes as the next part. */
static cx_code
send_part(s3_upload *up, size_t len, cx_err *err)
{
	s3_call		c;
	cx_buf		q;
	char		op[32];
	const char *etag;
	cx_code		rc;

	if (up->nparts == MAX_PARTS)
		return cx_err_set(err, CX_ERR_LIMIT,
						  "object larger than %d parts of %d bytes", MAX_PARTS,
						  PART_SIZE);
	up->nparts++;
	cx_buf_init(&q);
	upload_query(&q, up, up->nparts);
	snprintf(op, sizeof(op), "upload part %d", up->nparts);
	call_init(&c, (s3_store *) up->base.store, "PUT", up->base.key,
			  (const char *) q.data);
	c.req.op = op;
	call_body(&c, up->pending.data, len);
	rc = cx_buf_ok(&q) ? call_do(&c, err) : nomem(err);
	if (rc == CX_OK && !call_ok(&c))
		rc = call_fail(&c, err);
	etag = cx_http_headers_get(&c.resp.headers, "etag");
	if (rc == CX_OK && (etag == NULL || strpbrk(etag, "<&") != NULL))
		rc = cx_http_fail(&c.req, &c.resp, CX_ERR_IO, "no usable ETag", err);
	if (rc == CX_OK)
	{
		char		part[64];

		snprintf(part, sizeof(part), "<Part><PartNumber>%d</PartNumber><ETag>",
				 up->nparts);
		cx_buf_put(&up->parts, part, strlen(part));
		cx_buf_put(&up->parts, etag, strlen(etag));
		cx_buf_put(&up->parts, "</ETag></Part>", 14);
		memmove(up->pending.data, up->pending.data + len, up->pending.len - len);
		up->pending.len -= len;
	}
	call_free(&c);
	cx_buf_free(&q);
	return rc;
}

static cx_code
s3_upload_write(cx_upload *base, const void *data, size_t len, cx_err *err)
{
	s3_upload  *up = (s3_upload *) base;

	cx_buf_put(&up->pending, data, len);
	if (!cx_buf_ok(&up->pending))
		return nomem(err);
	up->base.written += len;
	while (up->pending.len >= PART_SIZE)
	{
		if (up->upload_id == NULL && multipart_create(up, err) != CX_OK)
			return err->code;
		if (send_part(up, PART_SIZE, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* AbortMultipartUpload, best effort: S3's lifecycle rules reap leftovers. */
static void
multipart_abort(s3_upload *up)
{
	s3_call		c;
	cx_buf		q;
	cx_err		ignored;

	cx_buf_init(&q);
	upload_query(&q, up, 0);
	call_init(&c, (s3_store *) up->base.store, "DELETE", up->base.key,
			  (const char *) q.data);
	if (cx_buf_ok(&q))
		(void) call_do(&c, &ignored);
	call_free(&c);
	cx_buf_free(&q);
}

/*
 * A completion retried after its first answer was lost finds the upload gone
 * (404 NoSuchUpload).  If the object is there, our completion most likely
 * made it: report it as put, or, for put-if-absent, as existing, which the
 * commit protocol settles by reading it back.
 */
static cx_code
settle_lost_completion(s3_upload *up, s3_call *c, cx_err *err)
{
	bool		found;
	cx_err		head_err;

	if (exists((s3_store *) up->base.store, up->base.key, &found, &head_err) == CX_OK &&
		found)
		return up->base.mode == CX_PUT_IF_ABSENT ?
			cx_err_set(err, CX_ERR_EXISTS, "object already exists") : CX_OK;
	return call_fail(c, err);
}

static cx_code
completion_outcome(s3_upload *up, s3_call *c, cx_err *err)
{
	/* S3 may answer 200 and still report an error in the body. */
	char	   *error_code = cx_http_error_code(&c->resp);
	cx_code		rc = CX_OK;

	if (condition_failed(c))
		rc = cx_err_set(err, CX_ERR_EXISTS, "object already exists");
	else if (c->resp.status == 404 && c->resp.attempts > 1)
		rc = settle_lost_completion(up, c, err);
	else if (!call_ok(c) || error_code != NULL)
		rc = cx_http_fail(&c->req, &c->resp,
						  call_ok(c) ? CX_ERR_IO : status_code(c, error_code),
						  error_code, err);
	free(error_code);
	return rc;
}

static cx_code
multipart_complete(s3_upload *up, bool if_none_match, cx_err *err)
{
	s3_call		c;
	cx_buf		q;
	cx_buf		body;
	cx_code		rc;

	cx_buf_init(&q);
	cx_buf_init(&body);
	upload_query(&q, up, 0);
	cx_buf_put(&body, "<CompleteMultipartUpload>", 25);
	cx_buf_put(&body, up->parts.data, up->parts.len);
	cx_buf_put(&body, "</CompleteMultipartUpload>", 26);
	call_init(&c, (s3_store *) up->base.store, "POST", up->base.key,
			  (const char *) q.data);
	c.req.op = "complete multipart upload";
	if (if_none_match)
		cx_http_headers_add(&c.headers, "If-None-Match", "*");
	call_body(&c, body.data, body.len);
	rc = cx_buf_ok(&q) && cx_buf_ok(&body) && cx_buf_ok(&up->parts) ?
		call_do(&c, err) : nomem(err);
	if (rc == CX_OK)
		rc = completion_outcome(up, &c, err);
	call_free(&c);
	cx_buf_free(&q);
	cx_buf_free(&body);
	return rc;
}

static void
upload_free(s3_upload *up)
{
	cx_buf_free(&up->pending);
	cx_buf_free(&up->parts);
	free(up->upload_id);
	free(up);
}

static void
s3_upload_abort(cx_upload *base)
{
	s3_upload  *up = (s3_upload *) base;

	if (up->upload_id != NULL)
		multipart_abort(up);
	upload_free(up);
}

static cx_code
finish_multipart(s3_upload *up, cx_err *err)
{
	s3_store   *s = (s3_store *) up->base.store;
	bool		conditional = up->base.mode == CX_PUT_IF_ABSENT && s->conditional;

	if (conditional && check_conditional(s, err) != CX_OK)
		return err->code;
	if (up->pending.len > 0 && send_part(up, up->pending.len, err) != CX_OK)
		return err->code;
	if (up->base.mode == CX_PUT_IF_ABSENT && !s->conditional &&
		head_then(s, up->base.key, err) != CX_OK)
		return err->code;
	return multipart_complete(up, conditional, err);
}

static cx_code
s3_upload_finish(cx_upload *base, cx_err *err)
{
	s3_upload  *up = (s3_upload *) base;
	cx_code		rc;

	if (up->upload_id == NULL)
	{
		rc = s3_put(up->base.store, up->base.key, up->pending.data,
					up->pending.len, up->base.mode, err);
		upload_free(up);
		return rc;
	}
	rc = finish_multipart(up, err);
	if (rc != CX_OK)
	{
		s3_upload_abort(base);
		return rc;
	}
	upload_free(up);
	return CX_OK;
}

/* --- opening and closing ----------------------------------------------- */

static void
wipe_free(char *secret)
{
	if (secret != NULL)
	{
		explicit_bzero(secret, strlen(secret));
		free(secret);
	}
}

static void
s3_close(cx_objstore *base)
{
	s3_store   *s = (s3_store *) base;

	cx_http_destroy(s->http);
	free(s->base.uri);
	free(s->base_url);
	free(s->host);
	free(s->prefix);
	free(s->probe_id);
	free(s->region);
	wipe_free((char *) s->creds.access_key_id);
	wipe_free((char *) s->creds.secret_access_key);
	wipe_free((char *) s->creds.session_token);
	free(s);
}

static const cx_objstore_ops s3_ops = {
	.put = s3_put,
	.get = s3_get,
	.head = s3_head,
	.list = s3_list,
	.del = s3_del,
	.upload_begin = s3_upload_begin,
	.upload_write = s3_upload_write,
	.upload_finish = s3_upload_finish,
	.upload_abort = s3_upload_abort,
	.close = s3_close,
};

/*
 * Credentials come from the options; failing those, from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN only if allow_env_credentials
 * is on (set by the FDW for superuser-configured servers only); failing
 * those, the store is anonymous.
 */
static cx_code
set_credentials(s3_store *s, const cx_option *o, size_t n, cx_err *err)
{
	const char *id = cx_option_get(o, n, "access_key_id");
	const char *secret = cx_option_get(o, n, "secret_access_key");
	const char *token = cx_option_get(o, n, "session_token");
	bool		allow_env;

	if (cx_option_bool(o, n, "allow_env_credentials", false, &allow_env, err) != CX_OK)
		return err->code;
	if (id == NULL && secret == NULL && token == NULL && allow_env)
	{
		id = getenv("AWS_ACCESS_KEY_ID");
		secret = getenv("AWS_SECRET_ACCESS_KEY");
		token = getenv("AWS_SESSION_TOKEN");
		if (id == NULL || secret == NULL)
			id = secret = token = NULL;
	}
	if ((id == NULL) != (secret == NULL))
		return cx_err_set(err, CX_ERR_INVALID,
						  "options access_key_id and secret_access_key go together");
	if (token != NULL && id == NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option session_token needs access_key_id and secret_access_key");
	s->anonymous = id == NULL;
	if (s->anonymous)
		return CX_OK;
	s->creds.access_key_id = strdup(id);
	s->creds.secret_access_key = strdup(secret);
	s->creds.session_token = token && token[0] ? strdup(token) : NULL;
	if (s->creds.access_key_id == NULL || s->creds.secret_access_key == NULL ||
		(token && token[0] && s->creds.session_token == NULL))
		return nomem(err);
	return CX_OK;
}

static bool
is_aws_host(const char *authority, size_t len)
{
	static const char suffix[] = ".amazonaws.com";
	size_t		hlen = strcspn(authority, ":");

	if (hlen > len)
		hlen = len;
	return hlen >= sizeof(suffix) - 1 &&
		strncasecmp(authority + hlen - (sizeof(suffix) - 1), suffix,
					sizeof(suffix) - 1) == 0;
}

/*
 * Builds the bucket's base URL from the endpoint:
 *   path style:    <scheme>://<authority><path>/<bucket>
 *   virtual style: <scheme>://<bucket>.<authority><path>
 * url_style defaults to virtual on AWS endpoints (unless the bucket name has
 * a dot, which AWS's wildcard certificates do not cover) and to path
 * elsewhere (emulators, MinIO and most other servers).
 */
static cx_code
set_urls(s3_store *s, const char *bucket, const cx_option *o, size_t n,
		 cx_err *err)
{
	const char *endpoint = cx_option_get(o, n, "endpoint");
	const char *style = cx_option_get(o, n, "url_style");
	char		dflt[256];
	const char *auth;
	size_t		auth_len;
	size_t		path_len;
	size_t		size;

	if (endpoint == NULL)
	{
		snprintf(dflt, sizeof(dflt), "https://s3.%.200s.amazonaws.com", s->region);
		endpoint = dflt;
	}
	if (strncasecmp(endpoint, "http://", 7) != 0 && strncasecmp(endpoint, "https://", 8) != 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option endpoint must start with http:// or https://");
	if (strpbrk(endpoint, "?#@") != NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "option endpoint must be scheme://host[:port][/path], without query or user-info");
	auth = strstr(endpoint, "://") + 3;
	auth_len = strcspn(auth, "/");
	path_len = strlen(auth + auth_len);
	while (path_len > 0 && auth[auth_len + path_len - 1] == '/')
		path_len--;
	if (auth_len == 0)
		return cx_err_set(err, CX_ERR_INVALID, "option endpoint names no host");

	if (style == NULL)
		s->path_style = !is_aws_host(auth, auth_len) || strchr(bucket, '.') != NULL;
	else if (strcmp(style, "path") == 0 || strcmp(style, "virtual") == 0)
		s->path_style = style[0] == 'p';
	else
		return cx_err_set(err, CX_ERR_INVALID,
						  "option url_style must be path or virtual, not \"%.32s\"", style);

	size = strlen(endpoint) + strlen(bucket) + 3;
	s->base_url = malloc(size);
	s->host = malloc(auth_len + strlen(bucket) + 2);
	s->probe_id = malloc(size + 1);
	if (s->base_url == NULL || s->host == NULL || s->probe_id == NULL)
		return nomem(err);
	if (s->path_style)
	{
		snprintf(s->base_url, size, "%.*s%.*s/%s", (int) (auth - endpoint + auth_len),
				 endpoint, (int) path_len, auth + auth_len, bucket);
		snprintf(s->host, auth_len + 1, "%s", auth);
	}
	else
	{
		snprintf(s->base_url, size, "%.*s%s.%.*s", (int) (auth - endpoint),
				 endpoint, bucket, (int) (auth_len + path_len), auth);
		snprintf(s->host, auth_len + strlen(bucket) + 2, "%s.%.*s", bucket,
				 (int) auth_len, auth);
	}
	snprintf(s->probe_id, size + 1, "%.*s %s", (int) (auth_len + (auth - endpoint)),
			 endpoint, bucket);
	return CX_OK;
}

/* Bucket names are plain (S3's rules are stricter still); anything that
 * would need encoding in a host name or path is refused. */
static cx_code
check_bucket(const char *bucket, cx_err *err)
{
	for (const char *p = bucket; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			  (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_'))
			return cx_err_set(err, CX_ERR_INVALID,
							  "bucket name \"%.64s\" has a character other than letters, digits, '-', '.' and '_'",
							  bucket);
	return CX_OK;
}

static cx_code
configure(s3_store *s, const char *bucket, const char *prefix,
		  const cx_option *o, size_t n, cx_err *err)
{
	const char *region = cx_option_get(o, n, "region");
	size_t		plen = strlen(prefix);
	cx_http_config cfg;

	s->base.ops = &s3_ops;
	s->base.uri = malloc(strlen(bucket) + plen + sizeof("s3:///"));
	s->prefix = malloc(plen + 2);
	s->region = strdup(region ? region : "us-east-1");
	if (s->base.uri == NULL || s->prefix == NULL || s->region == NULL)
		return nomem(err);
	sprintf(s->base.uri, "s3://%s%s%s", bucket, plen ? "/" : "", prefix);
	sprintf(s->prefix, "%s%s", prefix, plen ? "/" : "");
	if (s->region[0] == '\0' || strpbrk(s->region, "/ ") != NULL)
		return cx_err_set(err, CX_ERR_INVALID, "option region \"%.64s\" is not a region name",
						  s->region);
	if (check_bucket(bucket, err) != CX_OK ||
		set_urls(s, bucket, o, n, err) != CX_OK ||
		set_credentials(s, o, n, err) != CX_OK ||
		cx_option_bool(o, n, "conditional_put", true, &s->conditional, err) != CX_OK ||
		cx_option_int(o, n, "list_page_size", 1, MAX_PAGE_SIZE, MAX_PAGE_SIZE,
					  &s->page_size, err) != CX_OK ||
		cx_http_config_from_options(&cfg, o, n, err) != CX_OK)
		return err->code;
	return cx_http_create(&cfg, &s->base.stats, &s->http, err);
}

cx_code
cx_objstore_open_s3(const char *bucket, const char *prefix,
					const cx_option *options, size_t noptions,
					cx_objstore **out, cx_err *err)
{
	s3_store   *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (s == NULL)
		return nomem(err);
	if (configure(s, bucket, prefix, options, noptions, err) != CX_OK)
	{
		s3_close(&s->base);
		return err->code;
	}
	*out = &s->base;
	return CX_OK;
}
