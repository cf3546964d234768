/*
 * cx_objstore.c — the backend-independent half of the object-store layer.
 *
 * Everything every backend would otherwise repeat lives here: checking keys
 * before a backend sees them, URI parsing, dispatch to the backends, request
 * accounting (s->stats) and the uniform error message
 * "<op> <uri>/<key>: <reason>".  Backends report only the reason.  What the
 * backends themselves use is in cx_backend_support.c, so that the calls go
 * one way: this file -> backends -> cx_backend_support.c.
 */
#include "objstore/cx_objstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longer scheme names are shortened in the "unsupported scheme" message. */
#define MSG_SCHEME_MAX 32

/* Turns a backend's bare reason into "<op> <uri>/<key>: <reason>". */
static cx_code
op_failed(cx_objstore *s, const char *op, const char *key, cx_err *err)
{
	if (key == NULL)
		key = "";
	return cx_err_prefix(err, "%s %s/%.*s%s", op, s->uri,
						 cx_key_shown_len(key), key, cx_key_cut_mark(key));
}

static cx_code
check_or_fail(cx_objstore *s, const char *op, const char *key, bool is_prefix,
			  cx_err *err)
{
	if (cx_key_check(key, is_prefix, err) == CX_OK)
		return CX_OK;
	cx_err_prefix(err, "invalid %s", is_prefix ? "prefix" : "key");
	return op_failed(s, op, key, err);
}

cx_code
cx_obj_put(cx_objstore *s, const char *key, const void *data, size_t len,
		   cx_put_mode mode, cx_err *err)
{
	if (check_or_fail(s, "put", key, false, err) != CX_OK)
		return err->code;
	s->stats.puts++;
	if (s->ops->put(s, key, data, len, mode, err) != CX_OK)
		return op_failed(s, "put", key, err);
	s->stats.bytes_written += len;
	return CX_OK;
}

cx_code
cx_obj_get(cx_objstore *s, const char *key, cx_buf *out, cx_err *err)
{
	return cx_obj_get_range(s, key, 0, SIZE_MAX, out, err);
}

cx_code
cx_obj_get_range(cx_objstore *s, const char *key, uint64_t offset, size_t len,
				 cx_buf *out, cx_err *err)
{
	cx_buf_reset(out);
	if (check_or_fail(s, "get", key, false, err) != CX_OK)
		return err->code;
	s->stats.gets++;
	if (s->ops->get(s, key, offset, len, out, err) != CX_OK)
	{
		cx_buf_reset(out);
		return op_failed(s, "get", key, err);
	}
	s->stats.bytes_read += out->len;
	return CX_OK;
}

static cx_code
head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
	 cx_err *err)
{
	if (check_or_fail(s, "head", key, false, err) != CX_OK)
		return err->code;
	s->stats.heads++;
	if (s->ops->head(s, key, size, mtime_us, err) != CX_OK)
		return op_failed(s, "head", key, err);
	return CX_OK;
}

cx_code
cx_obj_head(cx_objstore *s, const char *key, uint64_t *size, cx_err *err)
{
	return head(s, key, size, NULL, err);
}

cx_code
cx_obj_mtime(cx_objstore *s, const char *key, int64_t *us, cx_err *err)
{
	uint64_t	size;

	return head(s, key, &size, us, err);
}

cx_code
cx_obj_list_entries(cx_objstore *s, const char *prefix, cx_list_entry_fn fn,
					void *arg, cx_err *err)
{
	if (check_or_fail(s, "list", prefix, true, err) != CX_OK)
		return err->code;
	s->stats.lists++;
	if (s->ops->list(s, prefix, fn, arg, err) != CX_OK)
		return op_failed(s, "list", prefix, err);
	return CX_OK;
}

cx_code
cx_obj_sweep_temporaries(cx_objstore *s, const char *prefix,
						 int64_t older_than_us, bool dry, cx_list_entry_fn fn,
						 void *arg, cx_err *err)
{
	if (check_or_fail(s, "sweep temporaries of", prefix, true, err) != CX_OK)
		return err->code;
	if (s->ops->sweep_temporaries == NULL)
		return CX_OK;
	s->stats.lists++;
	if (s->ops->sweep_temporaries(s, prefix, older_than_us, dry, fn, arg,
								  err) != CX_OK)
		return op_failed(s, "sweep temporaries of", prefix, err);
	return CX_OK;
}

/* A cx_list_fn and its argument, called with the key and size of each
 * entry. */
typedef struct key_lister
{
	cx_list_fn	fn;
	void	   *arg;
} key_lister;

static bool
list_key(void *arg, const cx_list_entry *e)
{
	const key_lister *l = arg;

	return l->fn(l->arg, e->key, e->size);
}

cx_code
cx_obj_list(cx_objstore *s, const char *prefix, cx_list_fn fn, void *arg,
			cx_err *err)
{
	key_lister	l = {fn, arg};

	return cx_obj_list_entries(s, prefix, list_key, &l, err);
}

cx_code
cx_obj_delete(cx_objstore *s, const char *key, cx_err *err)
{
	if (check_or_fail(s, "delete", key, false, err) != CX_OK)
		return err->code;
	s->stats.deletes++;
	if (s->ops->del(s, key, err) != CX_OK)
		return op_failed(s, "delete", key, err);
	return CX_OK;
}

void
cx_obj_prepare_put(cx_objstore *s, const char *key)
{
	cx_err		ignored;

	if (s->ops->prepare_put != NULL && cx_key_check(key, false, &ignored) == CX_OK)
		s->ops->prepare_put(s, key);
}

/* An upload counts as one put, from begin; its bytes count once published. */
cx_code
cx_obj_upload_begin(cx_objstore *s, const char *key, cx_put_mode mode,
					cx_upload **up, cx_err *err)
{
	*up = NULL;
	if (check_or_fail(s, "upload", key, false, err) != CX_OK)
		return err->code;
	s->stats.puts++;
	if (s->ops->upload_begin(s, key, mode, up, err) != CX_OK)
	{
		*up = NULL;
		return op_failed(s, "upload", key, err);
	}
	return CX_OK;
}

cx_code
cx_obj_upload_write(cx_upload *up, const void *data, size_t len, cx_err *err)
{
	cx_objstore *s = up->store;

	if (s->ops->upload_write(up, data, len, err) != CX_OK)
		return op_failed(s, "upload", up->key, err);
	return CX_OK;
}

cx_code
cx_obj_upload_finish(cx_upload *up, cx_err *err)
{
	cx_objstore *s = up->store;
	uint64_t	written = up->written;
	char		key[CX_KEY_MAX + 1];

	/* finish frees up, so keep what the message and the stats need. */
	memcpy(key, up->key, sizeof(key));
	if (s->ops->upload_finish(up, err) != CX_OK)
		return op_failed(s, "upload", key, err);
	s->stats.bytes_written += written;
	return CX_OK;
}

void
cx_obj_upload_abort(cx_upload *up)
{
	if (up != NULL)
		up->store->ops->upload_abort(up);
}

void
cx_obj_close(cx_objstore *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < CX_HANDLE_CACHES; i++)
		if (s->caches[i].p != NULL)
			s->caches[i].free_fn(s->caches[i].p);
	s->ops->close(s);
}

size_t
cx_obj_cache_bytes(const cx_objstore *s)
{
	size_t		bytes = 0;

	for (int i = 0; i < CX_HANDLE_CACHES; i++)
		if (s->caches[i].p != NULL)
			bytes += s->caches[i].bytes_fn(s->caches[i].p);
	return bytes;
}

void *
cx_obj_cache_of(cx_objstore *s, cx_handle_cache_kind kind, size_t size,
				void (*free_fn) (void *p), size_t (*bytes_fn) (const void *p))
{
	cx_handle_cache *slot = &s->caches[kind];

	if (slot->p == NULL && (slot->p = calloc(1, size)) != NULL)
	{
		slot->free_fn = free_fn;
		slot->bytes_fn = bytes_fn;
	}
	return slot->p;
}

bool
cx_put_may_have_landed(cx_code rc, const cx_err *err)
{
	if (rc == CX_ERR_IO && err->refused)
		return false;
	return rc == CX_ERR_EXISTS || rc == CX_ERR_IO || rc == CX_ERR_TIMEOUT;
}

/* Keep in step with docs/OPERATIONS.md (section 2) and the FDW validator. */
const char *const cx_objstore_option_names[] = {
	/* where and how to reach the service */
	"endpoint", "region", "url_style", "conditional_put",
	/* credentials (user mappings only) */
	"access_key_id", "secret_access_key", "session_token",
	"account_name", "account_key", "sas_token",
	"allow_env_credentials",
	/* transport */
	"connect_timeout", "request_timeout", "retry_max_attempts",
	"retry_max_seconds", "ca_file", "tls_verify",
	"list_page_size",
	NULL
};

static bool
known_option(const char *name)
{
	for (const char *const *n = cx_objstore_option_names; *n != NULL; n++)
		if (strcmp(*n, name) == 0)
			return true;
	return false;
}

/* Refuses an option name no backend knows, listing the ones they do. */
static cx_code
check_option_names(const cx_option *options, size_t noptions, cx_err *err)
{
	char		names[CX_ERR_MSG_LEN / 2];
	size_t		used = 0;

	for (size_t i = 0; i < noptions; i++)
	{
		const char *name = options[i].name;

		if (name != NULL && known_option(name))
			continue;
		for (const char *const *n = cx_objstore_option_names; *n != NULL; n++)
			used += (size_t) snprintf(names + used, sizeof(names) - used,
									  "%s%s", used ? ", " : "", *n);
		return cx_err_set(err, CX_ERR_INVALID,
						  "unknown object store option \"%.64s\"; valid options: %s",
						  name ? name : "", names);
	}
	return CX_OK;
}

static bool
has_scheme(const char *uri, const char *scheme)
{
	return strncasecmp(uri, scheme, strlen(scheme)) == 0;
}

/* The schemes a store URI may have, as canonical URIs spell them. */
static const char *const uri_schemes[] = {"file://", "s3://", "az://"};

/*
 * Appends the '/'-separated segments of path to out (at *used, room for
 * strlen(path) more bytes), each after a '/': empty and "." segments are
 * dropped, ".." is refused (a store URI names a place, it does not walk).
 */
static cx_code
append_segments(const char *uri, const char *path, char *out, size_t *used,
				cx_err *err)
{
	while (*path != '\0')
	{
		size_t		n = strcspn(path, "/");

		if (n == 2 && path[0] == '.' && path[1] == '.')
			return cx_err_set(err, CX_ERR_INVALID,
							  "object store URI \"%.200s\" has a \"..\" segment",
							  uri);
		if (n > 0 && !(n == 1 && path[0] == '.'))
		{
			out[(*used)++] = '/';
			memcpy(out + *used, path, n);
			*used += n;
		}
		path += n;
		if (*path == '/')
			path++;
	}
	out[*used] = '\0';
	return CX_OK;
}

/* "<scheme>" + "/<segments of path>": a file:// URI's path, which must be
 * absolute and not the file-system root. */
static cx_code
canonical_file(const char *uri, const char *path, char *out, size_t *used,
			   cx_err *err)
{
	if (path[0] != '/')
		return cx_err_set(err, CX_ERR_INVALID,
						  "object store URI \"%.200s\" needs an absolute path, as in file:///var/lib/ctxstore",
						  uri);
	if (append_segments(uri, path, out, used, err) != CX_OK)
		return err->code;
	if (*used == strlen("file://"))
		return cx_err_set(err, CX_ERR_INVALID,
						  "object store URI \"%.200s\" names the file-system root; a store needs a directory of its own",
						  uri);
	return CX_OK;
}

/* "<scheme><bucket>" + "/<segments of the prefix>". */
static cx_code
canonical_cloud(const char *uri, const char *rest, char *out, size_t *used,
				const char *what, cx_err *err)
{
	size_t		blen = strcspn(rest, "/");

	if (blen == 0 || (blen == 1 && rest[0] == '.') ||
		(blen == 2 && rest[0] == '.' && rest[1] == '.'))
		return cx_err_set(err, CX_ERR_INVALID,
						  "object store URI \"%.200s\" names no %s, as in %.*sname/prefix",
						  uri, what, (int) *used, out);
	memcpy(out + *used, rest, blen);
	*used += blen;
	return append_segments(uri, rest + blen, out, used, err);
}

cx_code
cx_uri_canonical(const char *uri, char **out, cx_err *err)
{
	const char *scheme = NULL;
	char	   *buf;
	size_t		used;
	cx_code		rc;

	*out = NULL;
	if (uri == NULL || uri[0] == '\0')
		return cx_err_set(err, CX_ERR_INVALID, "object store URI is empty");
	for (size_t i = 0; i < sizeof(uri_schemes) / sizeof(uri_schemes[0]); i++)
		if (has_scheme(uri, uri_schemes[i]))
			scheme = uri_schemes[i];
	if (scheme == NULL)
	{
		/* Name only the scheme: the rest of a URI may carry a secret. */
		size_t		scheme_len = strcspn(uri, ":/");

		if (scheme_len > MSG_SCHEME_MAX)
			scheme_len = MSG_SCHEME_MAX;
		return cx_err_set(err, CX_ERR_INVALID,
						  "unsupported object store URI scheme \"%.*s\"; supported: file://, s3://, az://",
						  (int) scheme_len, uri);
	}
	/* Never longer than the URI: segments are only dropped. */
	if ((buf = malloc(strlen(uri) + 1)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	used = strlen(scheme);
	memcpy(buf, scheme, used);
	if (scheme == uri_schemes[0])
		rc = canonical_file(uri, uri + used, buf, &used, err);
	else
		rc = canonical_cloud(uri, uri + used, buf, &used,
							 scheme == uri_schemes[1] ? "bucket" : "container", err);
	if (rc != CX_OK)
	{
		free(buf);
		return rc;
	}
	*out = buf;
	return CX_OK;
}

typedef cx_code (*cloud_open_fn) (const char *bucket, const char *prefix,
								  const cx_option *options, size_t noptions,
								  cx_objstore **out, cx_err *err);

/*
 * Splits a canonical "<scheme>://<bucket>[/<prefix>]" and opens it with
 * open_fn.  The prefix must be a valid key, so that "<prefix>/<key>" is one
 * too.
 */
static cx_code
open_cloud(const char *uri, const char *scheme, cloud_open_fn open_fn,
		   const cx_option *options, size_t noptions, cx_objstore **out,
		   cx_err *err)
{
	const char *rest = uri + strlen(scheme);
	size_t		blen = strcspn(rest, "/");
	const char *prefix = rest[blen] == '/' ? rest + blen + 1 : "";
	char	   *bucket;
	cx_code		rc;

	bucket = strndup(rest, blen);
	if (bucket == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	else if (prefix[0] != '\0' && cx_key_check(prefix, false, err) != CX_OK)
		rc = cx_err_prefix(err, "object store URI \"%.200s\": invalid prefix", uri);
	else
		rc = open_fn(bucket, prefix, options, noptions, out, err);
	free(bucket);
	return rc;
}

static cx_code
open_canonical(const char *uri, const cx_option *options, size_t noptions,
			   cx_objstore **out, cx_err *err)
{
	if (has_scheme(uri, "file://"))
		/* The local backend ignores the cloud options, which may well
		 * arrive with it from a server shared with cloud tables. */
		return cx_objstore_open_local(uri + strlen("file://"), out, err);
	if (has_scheme(uri, "s3://"))
		return open_cloud(uri, "s3://", cx_objstore_open_s3, options, noptions,
						  out, err);
	return open_cloud(uri, "az://", cx_objstore_open_azure, options, noptions,
					  out, err);
}

cx_code
cx_objstore_open(const char *uri, const cx_option *options, size_t noptions,
				 cx_objstore **out, cx_err *err)
{
	char	   *canonical;
	cx_code		rc;

	*out = NULL;
	if (check_option_names(options, noptions, err) != CX_OK)
		return err->code;
	if (cx_uri_canonical(uri, &canonical, err) != CX_OK)
		return err->code;
	rc = open_canonical(canonical, options, noptions, out, err);
	free(canonical);
	return rc;
}
