/*
 * ctxstore/objstore.h — opening an object store and what the PostgreSQL side
 * does with one (objstore/cx_objstore.h has the whole interface).
 *
 * A store is a flat namespace of objects addressed by keys relative to the
 * store root; file://, s3:// and az:// URIs name one.  A cx_objstore handle
 * is used by one thread at a time.
 */
#ifndef CTXSTORE_OBJSTORE_H
#define CTXSTORE_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctxstore/error.h"

typedef enum cx_put_mode
{
	CX_PUT_OVERWRITE = 0,		/* replace whatever is there */
	CX_PUT_IF_ABSENT = 1,		/* fail with CX_ERR_EXISTS if the key exists */
	CX_PUT_HINT = 2				/* an overwrite that need not be durable nor
								 * atomic: a reader may find the old bytes, or
								 * the old and new mixed (docs/FORMAT.md, "The
								 * `_latest` hint") */
} cx_put_mode;

/* Request accounting, read by callers for stats.  The cx_obj_* wrappers count
 * every operation they dispatch (after key validation, whether or not it
 * succeeds) and the payload bytes of successful ones, so every backend gets
 * the same accounting; backends bump only retries and connections. */
typedef struct cx_objstats
{
	uint64_t	puts;
	uint64_t	gets;
	uint64_t	heads;
	uint64_t	lists;
	uint64_t	deletes;
	uint64_t	bytes_written;
	uint64_t	bytes_read;
	uint64_t	retries;
	uint64_t	connections;	/* new transport connections opened */
} cx_objstats;

/* A name/value option (server, user-mapping and table options arrive so). */
typedef struct cx_option
{
	const char *name;
	const char *value;
} cx_option;

/* Called once per key, in ascending byte order of keys.  Return false to stop
 * the listing early (the listing then still returns CX_OK). */
typedef bool (*cx_list_fn) (void *arg, const char *key, uint64_t size);

typedef struct cx_objstore cx_objstore;

/* What readers keep about the store between uses of a handle, one slot
 * per kind. */
typedef enum cx_handle_cache_kind
{
	CX_CACHE_SHARD_MANIFESTS,	/* the newest shard manifests read
								 * (memwal/cx_shard_cache.c) */
	CX_CACHE_BASE_MANIFEST,		/* the newest base version read or written
								 * (table/cx_manifest_cache.c) */
	CX_CACHE_PROBE_PLAN,		/* the last base probed, as its probes use
								 * it (table/cx_probe_plan.c) */
	CX_CACHE_PROBE_ROWS,		/* small fragments' rows the probes read
								 * (table/cx_probe_rows.c) */
	CX_HANDLE_CACHES
} cx_handle_cache_kind;

typedef struct cx_handle_cache
{
	void	   *p;				/* NULL: nothing kept */
	void		(*free_fn) (void *p);	/* frees p when the handle closes */
	size_t		(*bytes_fn) (const void *p);	/* the bytes p holds */
} cx_handle_cache;

struct cx_objstore
{
	const struct cx_objstore_ops *ops;	/* objstore/cx_objstore.h */
	char	   *uri;			/* as opened, for messages; holds no secret */
	cx_objstats stats;
	cx_handle_cache caches[CX_HANDLE_CACHES];
};

/*
 * The one spelling of a store URI, so that everything keyed on a store (the
 * writer's resident stores, caches, stats) sees one store however it was
 * written: the scheme in lower case, no empty or "." path segments (so no
 * duplicate, leading or trailing '/' in the path or prefix).  A ".." segment,
 * a file:// path that is not absolute or is the file-system root, an s3:// or
 * az:// URI without a bucket or container, or another scheme is
 * CX_ERR_INVALID.  *out is malloc'd; the caller frees it.
 */
cx_code		cx_uri_canonical(const char *uri, char **out, cx_err *err);

/* Opens the store a URI names: file:///abs/path, s3://bucket[/prefix] or
 * az://container[/prefix], in any spelling cx_uri_canonical() accepts (the
 * handle's uri is the canonical one).  options may be NULL when noptions is
 * 0; an unknown option name is CX_ERR_INVALID, naming the valid ones. */
cx_code		cx_objstore_open(const char *uri, const cx_option *options,
							 size_t noptions, cx_objstore **out, cx_err *err);

/* Value of the last option called name (later options override earlier
 * ones, so user-mapping options can follow server options), or NULL. */
const char *cx_option_get(const cx_option *options, size_t noptions,
						  const char *name);

/* Reads a boolean option (on/off, true/false, yes/no, 1/0, any case) into
 * *out, or dflt if absent; CX_ERR_INVALID naming the option otherwise. */
cx_code		cx_option_bool(const cx_option *options, size_t noptions,
						   const char *name, bool dflt, bool *out, cx_err *err);

cx_code		cx_obj_put(cx_objstore *s, const char *key, const void *data,
					   size_t len, cx_put_mode mode, cx_err *err);
/* Every key that starts with prefix, a key prefix rather than a directory
 * ("_versions/000" matches "_versions/0001.manifest"); it may be empty or end
 * in '/'. */
cx_code		cx_obj_list(cx_objstore *s, const char *prefix, cx_list_fn fn,
						void *arg, cx_err *err);
void		cx_obj_close(cx_objstore *s);
/* The bytes the handle's caches hold (each cache counts its own: the bytes
 * it asked malloc for, without malloc's per-chunk overhead). */
size_t		cx_obj_cache_bytes(const cx_objstore *s);
/* The handle's cache of that kind, made zeroed (size bytes, freed and
 * counted by free_fn and bytes_fn) on first use; NULL without memory:
 * then nothing is cached. */
void	   *cx_obj_cache_of(cx_objstore *s, cx_handle_cache_kind kind,
							size_t size, void (*free_fn) (void *p),
							size_t (*bytes_fn) (const void *p));

/* HTTP transport settings of the cloud backends (objstore/cx_http.h). */
typedef struct cx_http_config
{
	long		connect_timeout_ms; /* TCP + TLS handshake, per attempt */
	long		request_timeout_ms; /* one whole attempt */
	int			max_attempts;	/* >= 1; 1 means no retries */
	long		max_retry_ms;	/* no retry starts later than this after the
								 * first attempt began */
	const char *ca_file;		/* CA bundle (PEM); NULL: the system's */
	bool		tls_verify;		/* verify peer and host name; default on */
} cx_http_config;

/*
 * Reads connect_timeout, request_timeout and retry_max_seconds (seconds,
 * fractions allowed, or with a unit: "500ms", "30s", "2min", "1h"),
 * retry_max_attempts, ca_file and tls_verify (on|off)
 * from options on top of the defaults; other names are ignored.  A bad value
 * is CX_ERR_INVALID naming the option.  The config borrows ca_file from the
 * options array.
 */
cx_code		cx_http_config_from_options(cx_http_config *c,
										const cx_option *options,
										size_t noptions, cx_err *err);

#endif							/* CTXSTORE_OBJSTORE_H */
