/*
 * cx_objstore.h — the object-store interface every backend implements.
 *
 * A store is a flat namespace of immutable-by-convention objects addressed by
 * keys relative to the store root ("_versions/00000000000000000001.manifest").
 * Backends: local filesystem (cx_objstore_local.c), S3 (cx_objstore_s3.c)
 * and Azure Blob (cx_objstore_azure.c); the cloud ones share cx_http.h.
 *
 * The one primitive the whole commit protocol rests on is put-if-absent: it
 * either creates the object or reports CX_ERR_EXISTS and changes nothing.
 *
 * Keys are validated by cx_key_validate(): relative, '/'-separated, no empty,
 * "." or ".." segments, no NUL or backslash, at most CX_KEY_MAX bytes.
 *
 * Thread-safety: a cx_objstore handle is used by one thread at a time.
 */
#ifndef CX_OBJSTORE_H
#define CX_OBJSTORE_H

#include "ctxstore/objstore.h"
#include "util/cx_buf.h"

#define CX_KEY_MAX 1024

typedef struct cx_upload cx_upload;

/* One object of a listing, as the backend's listing tells it (no request
 * per object): S3's ListObjectsV2 and Azure's List Blobs report each
 * entry's Last-Modified, the local store stats the file it lists. */
typedef struct cx_list_entry
{
	const char *key;
	uint64_t	size;
	int64_t		mtime_us;		/* when last written, Unix microseconds (S3
								 * and Azure: second precision) */
} cx_list_entry;

/* As cx_list_fn, with the whole entry. */
typedef bool (*cx_list_entry_fn) (void *arg, const cx_list_entry *e);

struct cx_objstore_ops
{
	cx_code		(*put) (cx_objstore *s, const char *key, const void *data,
						size_t len, cx_put_mode mode, cx_err *err);
	/* len == SIZE_MAX reads to the end.  A range past the end is not an
	 * error: fewer bytes (possibly none) come back. */
	cx_code		(*get) (cx_objstore *s, const char *key, uint64_t offset,
						size_t len, cx_buf *out, cx_err *err);
	/* mtime_us may be NULL; else it receives when the object was last
	 * written, Unix microseconds (S3 and Azure: second precision). */
	cx_code		(*head) (cx_objstore *s, const char *key, uint64_t *size,
						 int64_t *mtime_us, cx_err *err);
	cx_code		(*list) (cx_objstore *s, const char *prefix,
						 cx_list_entry_fn fn, void *arg, cx_err *err);
	cx_code		(*del) (cx_objstore *s, const char *key, cx_err *err);
	/* Optional: NULL where an upload that never finished leaves nothing
	 * behind (S3 and Azure never publish a partial upload).  Removes the
	 * temporary files of uploads under prefix last written before
	 * older_than_us (with dry, only finds them), telling fn of each
	 * (e->key the temporary file's path); fn returning false stops. */
	cx_code		(*sweep_temporaries) (cx_objstore *s, const char *prefix,
									  int64_t older_than_us, bool dry,
									  cx_list_entry_fn fn, void *arg,
									  cx_err *err);
	/* Streaming upload: begin, write any number of times, then finish
	 * (publishes the object atomically, honouring mode) or abort.  finish
	 * and abort free the upload whatever the outcome; after a failed write
	 * the caller still calls abort. */
	cx_code		(*upload_begin) (cx_objstore *s, const char *key,
								 cx_put_mode mode, cx_upload **up, cx_err *err);
	cx_code		(*upload_write) (cx_upload *up, const void *data, size_t len,
								 cx_err *err);
	cx_code		(*upload_finish) (cx_upload *up, cx_err *err);
	void		(*upload_abort) (cx_upload *up);
	/* Optional: NULL where preparing gains nothing (cx_obj_prepare_put). */
	void		(*prepare_put) (cx_objstore *s, const char *key);
	void		(*close) (cx_objstore *s);
};
typedef struct cx_objstore_ops cx_objstore_ops;

/* Backends embed this as the first member of their upload state, fill it in
 * upload_begin and keep written current. */
struct cx_upload
{
	cx_objstore *store;
	char		key[CX_KEY_MAX + 1];
	cx_put_mode mode;
	uint64_t	written;
};

/*
 * Every option name an object store understands, NULL-terminated.  Each name
 * is accepted for every scheme, so that callers can pass server and
 * user-mapping options uniformly; each backend reads the ones it needs and
 * ignores the rest.  A name not in this table is CX_ERR_INVALID.
 */
extern const char *const cx_objstore_option_names[];

/*
 * Backend entry points cx_objstore_open() dispatches to, with the URI split
 * up: bucket/container is non-empty, prefix is "" or a valid key without a
 * trailing '/', and the option names are already known to be valid.
 */
cx_code		cx_objstore_open_s3(const char *bucket, const char *prefix,
								const cx_option *options, size_t noptions,
								cx_objstore **out, cx_err *err);
cx_code		cx_objstore_open_azure(const char *container, const char *prefix,
								   const cx_option *options, size_t noptions,
								   cx_objstore **out, cx_err *err);

/*
 * One page of a listing answer (S3: a ListBucketResult; Azure: an
 * EnumerationResults), parsed as the backend's list operation parses it:
 * fn gets each listed entry under the store prefix (prefix: "" or ending in
 * '/'), the prefix taken off its key; *next holds the continuation token (S3) or
 * marker (Azure) the page was asked with, or NULL, and receives the next
 * one (malloc'd), or NULL after the last page.  The parsers of untrusted
 * answers, callable without a server (the fuzz harnesses use them).
 */
cx_code		cx_s3_list_page(const char *prefix, const cx_buf *page,
							cx_list_entry_fn fn, void *arg, char **next,
							cx_err *err);
cx_code		cx_az_list_page(const char *prefix, const cx_buf *page,
							cx_list_entry_fn fn, void *arg, char **next,
							cx_err *err);

/* Local-filesystem backend rooted at an absolute directory path.  The root is
 * created on the first write if it does not exist. */
cx_code		cx_objstore_open_local(const char *root, cx_objstore **out,
								   cx_err *err);

/*
 * Wrappers that validate the key, dispatch to the backend and keep error
 * messages uniform ("<op> <uri>/<key>: <reason>").  Callers use these, never
 * the ops table directly.
 */
/* Both gets reset out first; it then holds exactly the bytes read. */
cx_code		cx_obj_get(cx_objstore *s, const char *key, cx_buf *out,
					   cx_err *err);
cx_code		cx_obj_get_range(cx_objstore *s, const char *key, uint64_t offset,
							 size_t len, cx_buf *out, cx_err *err);
cx_code		cx_obj_head(cx_objstore *s, const char *key, uint64_t *size,
						cx_err *err);
/* When key was last written (Unix us): GC's grace period rests on it. */
cx_code		cx_obj_mtime(cx_objstore *s, const char *key, int64_t *us,
						 cx_err *err);
/* cx_obj_list, telling each entry's mtime too. */
cx_code		cx_obj_list_entries(cx_objstore *s, const char *prefix,
								cx_list_entry_fn fn, void *arg, cx_err *err);
/*
 * Removes what uploads that crashed before publishing left under prefix
 * (temporary files of a local store), last written before older_than_us:
 * an upload still running writes its file, so a grace longer than any
 * upload keeps it.  dry only finds them.  fn hears of each; a store whose
 * uploads leave nothing behind has none.
 */
cx_code		cx_obj_sweep_temporaries(cx_objstore *s, const char *prefix,
									 int64_t older_than_us, bool dry,
									 cx_list_entry_fn fn, void *arg,
									 cx_err *err);
/* Deleting a missing object is not an error. */
cx_code		cx_obj_delete(cx_objstore *s, const char *key, cx_err *err);
/*
 * A hint, best effort: the next put-if-absent goes to key's directory, so
 * whatever that put can do ahead of its bytes may be done now, while the
 * caller would otherwise wait (a local store makes the put's unnamed inode:
 * file systems that avoid reusing recently freed inodes can take longer
 * over that than over the put's fsyncs).  No request is made or counted;
 * a failure costs nothing but the head start.
 */
void		cx_obj_prepare_put(cx_objstore *s, const char *key);
cx_code		cx_obj_upload_begin(cx_objstore *s, const char *key,
								cx_put_mode mode, cx_upload **up, cx_err *err);
cx_code		cx_obj_upload_write(cx_upload *up, const void *data, size_t len,
								cx_err *err);
cx_code		cx_obj_upload_finish(cx_upload *up, cx_err *err);
void		cx_obj_upload_abort(cx_upload *up);

/*
 * Whether a put (or upload) that failed with rc (err its error) may have
 * landed all the same: an I/O error or timeout after the request was sent,
 * or "exists" from a transport retry that met the object its first attempt
 * created.  Such an outcome is settled by reading the object back.  Not an
 * I/O error the store refused at every attempt (err->refused: 429 or 503,
 * which S3 and Azure answer instead of carrying a write out).
 */
bool		cx_put_may_have_landed(cx_code rc, const cx_err *err);

/* ---- what the backends use (cx_backend_support.c) ---- */

cx_code		cx_key_validate(const char *key, cx_err *err);
/* The bare reason key (with is_prefix: a listing prefix, which may also be
 * empty or end in '/') is no valid key; the caller adds the context. */
cx_code		cx_key_check(const char *key, bool is_prefix, cx_err *err);
/* How much of key a message shows, and the mark ("..." or "") after it. */
int			cx_key_shown_len(const char *key);
const char *cx_key_cut_mark(const char *key);

/* Reads a decimal integer option in [min, max] into *out, or dflt if
 * absent; CX_ERR_INVALID naming the option and the range otherwise. */
cx_code		cx_option_int(const cx_option *options, size_t noptions,
						  const char *name, long min, long max, long dflt,
						  long *out, cx_err *err);

/* Fills buf with n cryptographically random bytes (getrandom). */
cx_code		cx_random_bytes(void *buf, size_t n, cx_err *err);
/* Makes cx_random_bytes call fill instead (NULL: getrandom again), so that
 * a test's run is repeatable: the deterministic simulation names its
 * objects and commits from its seed.  Process-wide; not for production. */
void		cx_random_set_source(void (*fill) (void *buf, size_t n));

#endif							/* CX_OBJSTORE_H */
