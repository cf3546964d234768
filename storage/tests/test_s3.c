/*
 * test_s3.c — the S3 backend against s3rver, directly and through the fault
 * proxy (scripts/faultproxy.js), as started by scripts/with-emulators.sh.
 *
 * s3rver itself ignores If-None-Match, which is how the conditional-write
 * probe is tested; through the proxy, which emulates the condition, the
 * store runs with conditional_put on, as against a real S3.
 *
 * s3rver does not verify signatures either; through a second proxy that
 * does (faultproxy.js --verify-sigv4, an independent implementation of the
 * specification), every kind of request the backend sends is checked to
 * carry a valid SigV4 signature, and a wrong secret to be refused.
 *
 * The endpoints come from CX_TEST_S3_* variables.  Without them a test is
 * skipped (with a note), unless CX_TEST_REQUIRE_EMULATORS=1, when it fails.
 */
#include <stdlib.h>
#include <time.h>

#include "ctxstore/lifecycle.h"
#include "objstore/cx_layout.h"
#include "table/cx_commit.h"
#include "util/cx_crypto.h"
#include "objstore/cx_objstore.h"
#include "cx_test.h"
#include "cx_test_emu.h"
#include "mw_util.h"

#define SECRET "S3RVER"
#define TOKEN "SESSION-TOKEN-SECRET"
#define MAX_OPTS 16

/* A store under test: its options and a prefix of its own. */
typedef struct s3_env
{
	char		uri[256];
	cx_option	opts[MAX_OPTS];
	size_t		nopts;
	char		prefix[64];
} s3_env;

static void
add_opt(s3_env *e, const char *name, const char *value)
{
	if (e->nopts < MAX_OPTS)
	{
		e->opts[e->nopts].name = name;
		e->opts[e->nopts].value = value;
		e->nopts++;
	}
}

/* Sets up s3://<bucket>/<random prefix> against the endpoint held in
 * variable endpoint_var, authenticated, path-style.  False to skip. */
static bool
env_init(s3_env *e, const char *endpoint_var)
{
	const char *endpoint = cx_test_need_env(endpoint_var);
	const char *bucket = cx_test_need_env("CX_TEST_S3_BUCKET");
	uint8_t		rnd[6];
	char		hex[13];
	cx_err		err;

	memset(e, 0, sizeof(*e));
	if (endpoint == NULL || bucket == NULL)
		return false;
	if (cx_random_bytes(rnd, sizeof(rnd), &err) != CX_OK)
		return false;
	cx_hex_encode(rnd, sizeof(rnd), hex);
	snprintf(e->prefix, sizeof(e->prefix), "t%s", hex);
	snprintf(e->uri, sizeof(e->uri), "s3://%s/%s/store", bucket, e->prefix);
	add_opt(e, "endpoint", endpoint);
	add_opt(e, "access_key_id", getenv("CX_TEST_S3_ACCESS_KEY"));
	add_opt(e, "secret_access_key", getenv("CX_TEST_S3_SECRET_KEY"));
	add_opt(e, "region", "us-east-1");
	/* Short timeouts keep failing tests quick; the defaults are minutes. */
	add_opt(e, "connect_timeout", "2");
	add_opt(e, "request_timeout", "10");
	add_opt(e, "retry_max_seconds", "5");
	return true;
}

/* s3rver directly: no conditional writes, so conditional_put off. */
static bool
direct_env(s3_env *e)
{
	if (!env_init(e, "CX_TEST_S3_ENDPOINT"))
		return false;
	add_opt(e, "conditional_put", "off");
	return true;
}

/* Through the fault proxy, which honours If-None-Match: conditional_put on. */
static bool
proxy_env(s3_env *e)
{
	if (!env_init(e, "CX_TEST_S3_PROXY") || cx_test_need_env("CX_TEST_S3_PROXY_CTL") == NULL)
		return false;
	add_opt(e, "conditional_put", "on");
	return true;
}

static cx_code
env_open(s3_env *e, cx_objstore **s, cx_err *err)
{
	return cx_objstore_open(e->uri, e->opts, e->nopts, s, err);
}

/* The fault proxy's control URL (proxy_env() made sure it is set). */
static const char *
ctl(void)
{
	return getenv("CX_TEST_S3_PROXY_CTL");
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* --- helpers over the store ------------------------------------------- */

static cx_code
put_str(cx_objstore *s, const char *key, const char *val, cx_put_mode mode,
		cx_err *err)
{
	return cx_obj_put(s, key, val, strlen(val), mode, err);
}

static bool
holds(cx_objstore *s, const char *key, const char *val)
{
	return cx_test_holds(s, key, val, strlen(val));
}

/* --- tests against s3rver directly ------------------------------------ */

CX_TEST(s3_put_get_head_delete)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;
	int64_t		mtime;

	if (!direct_env(&e))
		return;
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	CHECK(strstr(s->uri, "s3://") == s->uri && strstr(s->uri, e.prefix) != NULL);
	REQUIRE_OK(put_str(s, "a/b.bin", "0123456789", CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(put_str(s, "empty", "", CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds(s, "a/b.bin", "0123456789"));
	CHECK(holds(s, "empty", ""));

	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get_range(s, "a/b.bin", 2, 3, &b, &err), &err);
	CHECK(b.len == 3 && memcmp(b.data, "234", 3) == 0);
	REQUIRE_OK(cx_obj_get_range(s, "a/b.bin", 7, SIZE_MAX, &b, &err), &err);
	CHECK(b.len == 3 && memcmp(b.data, "789", 3) == 0);
	REQUIRE_OK(cx_obj_get_range(s, "a/b.bin", 8, 100, &b, &err), &err);
	CHECK(b.len == 2 && memcmp(b.data, "89", 2) == 0);
	/* A range past the end is no error: no bytes. */
	REQUIRE_OK(cx_obj_get_range(s, "a/b.bin", 10, 5, &b, &err), &err);
	CHECK(b.len == 0);
	REQUIRE_OK(cx_obj_get_range(s, "a/b.bin", 3, 0, &b, &err), &err);
	CHECK(b.len == 0);
	CHECK_CODE(cx_obj_get(s, "missing", &b, &err), CX_ERR_NOT_FOUND);
	CHECK(strstr(err.msg, "missing") != NULL);
	cx_buf_free(&b);

	REQUIRE_OK(cx_obj_head(s, "a/b.bin", &size, &err), &err);
	CHECK(size == 10);
	CHECK_CODE(cx_obj_head(s, "missing", &size, &err), CX_ERR_NOT_FOUND);
	REQUIRE_OK(cx_obj_delete(s, "a/b.bin", &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "a/b.bin", &err), &err);
	CHECK_CODE(cx_obj_head(s, "a/b.bin", &size, &err), CX_ERR_NOT_FOUND);
	CHECK(s->stats.puts == 2 && s->stats.bytes_written == 10);
	CHECK(s->stats.heads == 3 && s->stats.deletes == 2);
	CHECK(cx_test_written_lately(s, "empty"));
	CHECK_CODE(cx_obj_mtime(s, "a/b.bin", &mtime, &err), CX_ERR_NOT_FOUND);
	cx_obj_close(s);
}

CX_TEST(s3_list_with_continuation_and_odd_keys)
{
	static const char *const keys[] = {
		"k/a & b", "k/a<b>", "k/caf\xc3\xa9", "k/d'q\"", "k/e+f=g?h",
		"k/n0", "k/n1", "k/n2", "k/n3", "k/z%41",
	};
	const int	n = (int) (sizeof(keys) / sizeof(keys[0]));
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	cx_test_listed l = {0};
	cx_test_listed first3 = {.stop_after = 3};
	cx_test_listed none = {0};

	if (!direct_env(&e))
		return;
	/* Three keys a page: the listing needs four continuation requests. */
	add_opt(&e, "list_page_size", "3");
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	for (int i = n - 1; i >= 0; i--)
		REQUIRE_OK(put_str(s, keys[i], keys[i], CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(put_str(s, "other", "x", CX_PUT_OVERWRITE, &err), &err);

	REQUIRE_OK(cx_obj_list(s, "k/", cx_test_collect, &l, &err), &err);
	REQUIRE(l.n == n);
	for (int i = 0; i < n; i++)
	{
		CHECK(strcmp(l.keys[i], keys[i]) == 0);
		CHECK(l.sizes[i] == strlen(keys[i]));
		CHECK(holds(s, keys[i], keys[i]));
	}
	CHECK(s->stats.lists == 1);

	REQUIRE_OK(cx_obj_list(s, "k/", cx_test_collect, &first3, &err), &err);
	CHECK(first3.n == 3);
	REQUIRE_OK(cx_obj_list(s, "nothing/", cx_test_collect, &none, &err), &err);
	CHECK(none.n == 0);
	cx_obj_close(s);
}

/* Streams n bytes of a pattern through an upload, in odd-sized pieces. */
static cx_code
stream(cx_objstore *s, const char *key, size_t n, cx_put_mode mode,
	   cx_err *err)
{
	static uint8_t chunk[100003];
	cx_upload  *up;

	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (uint8_t) (i * 7 + 3);
	if (cx_obj_upload_begin(s, key, mode, &up, err) != CX_OK)
		return err->code;
	for (size_t done = 0; done < n;)
	{
		size_t		len = n - done < sizeof(chunk) ? n - done : sizeof(chunk);

		if (cx_obj_upload_write(up, chunk, len, err) != CX_OK)
		{
			cx_obj_upload_abort(up);
			return err->code;
		}
		done += len;
	}
	return cx_obj_upload_finish(up, err);
}

static bool
holds_stream(cx_objstore *s, const char *key, size_t n)
{
	cx_buf		b;
	cx_err		err;
	bool		ok;

	cx_buf_init(&b);
	ok = cx_obj_get(s, key, &b, &err) == CX_OK && b.len == n;
	for (size_t i = 0; ok && i < n; i++)
		ok = b.data[i] == (uint8_t) ((i % 100003) * 7 + 3);
	cx_buf_free(&b);
	return ok;
}

CX_TEST(s3_streaming_and_multipart_uploads)
{
	const size_t big = 2 * 8 * 1024 * 1024 + 12345;	/* three parts */
	s3_env		e;
	cx_objstore *s;
	cx_upload  *up;
	cx_err		err;
	uint64_t	size;

	if (!direct_env(&e))
		return;
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(stream(s, "small", 250000, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(holds_stream(s, "small", 250000));
	REQUIRE_OK(stream(s, "big", big, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(holds_stream(s, "big", big));
	CHECK(s->stats.bytes_written == 250000 + big);
	/* if-absent holds for multipart uploads too. */
	CHECK_CODE(stream(s, "big", big, CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(holds_stream(s, "big", big));

	/* An aborted upload leaves nothing behind. */
	REQUIRE_OK(cx_obj_upload_begin(s, "aborted", CX_PUT_OVERWRITE, &up, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "abc", 3, &err), &err);
	cx_obj_upload_abort(up);
	CHECK_CODE(cx_obj_head(s, "aborted", &size, &err), CX_ERR_NOT_FOUND);
	cx_obj_close(s);
}

CX_TEST(s3_conditional_put_off_is_head_then_put)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;

	if (!direct_env(&e))
		return;
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(put_str(s, "k", "one", CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(put_str(s, "k", "two", CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(strstr(err.msg, "exists") != NULL);
	CHECK(holds(s, "k", "one"));
	REQUIRE_OK(put_str(s, "k", "three", CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds(s, "k", "three"));
	cx_obj_close(s);
}

CX_TEST(s3_probe_refuses_server_ignoring_if_none_match)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	cx_test_listed l = {0};

	if (!env_init(&e, "CX_TEST_S3_ENDPOINT"))
		return;
	/* conditional_put defaults to on. */
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	CHECK_CODE(put_str(s, "k", "v", CX_PUT_IF_ABSENT, &err), CX_ERR_UNSUPPORTED);
	CHECK(strstr(err.msg, "If-None-Match") != NULL);
	CHECK(strstr(err.msg, "conditional_put 'off'") != NULL);
	CHECK(strstr(err.msg, "single cluster") != NULL);
	/* Nothing was written, and the probe cleaned up after itself. */
	REQUIRE_OK(cx_obj_list(s, "", cx_test_collect, &l, &err), &err);
	CHECK(l.n == 0);
	/* Plain overwrites need no probe. */
	REQUIRE_OK(put_str(s, "k", "v", CX_PUT_OVERWRITE, &err), &err);
	cx_obj_close(s);
}

CX_TEST(s3_options_are_checked)
{
	static const cx_option bad_style[] = {{"url_style", "sideways"}};
	static const cx_option bad_endpoint[] = {{"endpoint", "http://h/?x=1"}};
	static const cx_option half_keys[] = {{"access_key_id", "AKID"}};
	static const cx_option bad_timeout[] = {{"request_timeout", "-1"}};
	static const cx_option bad_unit[] = {{"connect_timeout", "5 fortnights"}};
	static const cx_option units[] = {{"connect_timeout", "1500ms"},
	{"request_timeout", "2min"}, {"retry_max_seconds", "30s"}};
	static const cx_option bad_attempts[] = {{"retry_max_attempts", "0"}};
	static const cx_option unknown[] = {{"secret_acess_key", "x"}};
	cx_objstore *s;
	cx_err		err;

	CHECK_CODE(cx_objstore_open("s3://b/p", bad_style, 1, &s, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "url_style") != NULL);
	CHECK_CODE(cx_objstore_open("s3://b/p", bad_endpoint, 1, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open("s3://b/p", half_keys, 1, &s, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "AKID") == NULL);
	CHECK_CODE(cx_objstore_open("s3://b/p", bad_timeout, 1, &s, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "request_timeout") != NULL);
	CHECK_CODE(cx_objstore_open("s3://b/p", bad_unit, 1, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open("s3://b/p", bad_attempts, 1, &s, &err), CX_ERR_INVALID);
	REQUIRE_OK(cx_objstore_open("s3://b/p", units, 3, &s, &err), &err);
	cx_obj_close(s);
	CHECK_CODE(cx_objstore_open("s3://b/p", unknown, 1, &s, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "secret_access_key") != NULL);
	CHECK_CODE(cx_objstore_open("s3:///p", NULL, 0, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open("s3://b/a/../c", NULL, 0, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open("s3://b c/p", NULL, 0, &s, &err), CX_ERR_INVALID);

	/* Defaults: AWS endpoint of the region, virtual-host style. */
	REQUIRE_OK(cx_objstore_open("s3://bucket/some/prefix/", NULL, 0, &s, &err), &err);
	CHECK(strcmp(s->uri, "s3://bucket/some/prefix") == 0);
	cx_obj_close(s);
}

/*
 * Environment credentials are used only when allow_env_credentials is on.
 * s3rver accepts anonymous requests and refuses unknown keys, which tells
 * the two apart.
 */
CX_TEST(s3_env_credentials_need_permission)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	const char *saved = getenv("AWS_ACCESS_KEY_ID");

	if (saved != NULL)
	{
		printf("    skip: AWS_ACCESS_KEY_ID is set in this environment\n");
		return;
	}
	if (!env_init(&e, "CX_TEST_S3_ENDPOINT"))
		return;
	e.nopts = 0;
	add_opt(&e, "endpoint", getenv("CX_TEST_S3_ENDPOINT"));
	add_opt(&e, "conditional_put", "off");
	setenv("AWS_ACCESS_KEY_ID", "NOT-A-KNOWN-KEY", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ENV-SECRET-VALUE", 1);

	/* No REQUIRE until the variables are gone again: other tests follow. */
	CHECK_CODE(env_open(&e, &s, &err), CX_OK);
	if (s != NULL)
	{
		CHECK_CODE(put_str(s, "anon", "v", CX_PUT_OVERWRITE, &err), CX_OK);
		cx_obj_close(s);
	}
	add_opt(&e, "allow_env_credentials", "on");
	CHECK_CODE(env_open(&e, &s, &err), CX_OK);
	if (s != NULL)
	{
		CHECK_CODE(put_str(s, "signed", "v", CX_PUT_OVERWRITE, &err), CX_ERR_AUTH);
		CHECK(strstr(err.msg, "403") != NULL && strstr(err.msg, "InvalidAccessKeyId") != NULL);
		CHECK(strstr(err.msg, "ENV-SECRET-VALUE") == NULL);
		CHECK(strstr(err.msg, "NOT-A-KNOWN-KEY") == NULL);
		cx_obj_close(s);
	}
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
}

CX_TEST(s3_tls_verified_by_default_and_ca_file)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	const char *ca = cx_test_need_env("CX_TEST_S3_TLS_CA");

	if (ca == NULL || !env_init(&e, "CX_TEST_S3_TLS_ENDPOINT"))
		return;
	add_opt(&e, "conditional_put", "off");
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	/* A self-signed peer is refused at once: no retries for a bad cert. */
	CHECK_CODE(put_str(s, "k", "v", CX_PUT_OVERWRITE, &err), CX_ERR_IO);
	CHECK(strstr(err.msg, "https://") != NULL);
	CHECK(s->stats.retries == 0);
	cx_obj_close(s);

	add_opt(&e, "ca_file", ca);
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(put_str(s, "k", "v", CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds(s, "k", "v"));
	cx_obj_close(s);
}

/* --- through the fault proxy ------------------------------------------ */

CX_TEST(s3_proxy_honours_conditional_put)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;

	if (!proxy_env(&e))
		return;
	cx_test_proxy_reset(ctl());
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(put_str(s, "k", "one", CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(put_str(s, "k", "two", CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(holds(s, "k", "one"));
	cx_obj_close(s);
}

CX_TEST(s3_retries_500_503_429)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;

	if (!proxy_env(&e))
		return;
	cx_test_proxy_reset(ctl());
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"status\",\"status\":500,\"method\":\"PUT\"}"));
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"status\",\"status\":503,\"code\":\"SlowDown\",\"method\":\"PUT\"}"));
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"status\",\"status\":429,\"method\":\"PUT\",\"headers\":{\"Retry-After\":\"1\"}}"));
	REQUIRE_OK(put_str(s, "k", "v", CX_PUT_OVERWRITE, &err), &err);
	CHECK(s->stats.retries == 3);
	CHECK(holds(s, "k", "v"));
	/* The same on reads. */
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"status\",\"status\":502,\"method\":\"GET\"}"));
	CHECK(holds(s, "k", "v"));
	CHECK(s->stats.retries == 4);
	cx_obj_close(s);
}

CX_TEST(s3_retries_exhausted_name_op_key_status_not_secret)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	double		t0;

	if (!proxy_env(&e))
		return;
	cx_test_proxy_reset(ctl());
	add_opt(&e, "session_token", TOKEN);
	add_opt(&e, "retry_max_attempts", "3");
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"status\",\"status\":503,\"code\":\"SlowDown\",\"count\":10}"));
	t0 = now_s();
	CHECK_CODE(put_str(s, "victim/key", "v", CX_PUT_OVERWRITE, &err), CX_ERR_IO);
	CHECK(now_s() - t0 < 5.0);
	CHECK(strstr(err.msg, "put ") == err.msg);
	CHECK(strstr(err.msg, "victim/key") != NULL);
	CHECK(strstr(err.msg, "HTTP 503") != NULL);
	CHECK(strstr(err.msg, "SlowDown") != NULL);
	CHECK(strstr(err.msg, "3 attempts") != NULL);
	CHECK(strstr(err.msg, SECRET) == NULL);
	CHECK(strstr(err.msg, TOKEN) == NULL);
	CHECK(strstr(err.msg, "Authorization") == NULL);
	CHECK(s->stats.retries == 2);
	cx_test_proxy_reset(ctl());

	/* A final refusal is not retried, and says so just as clearly. */
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"status\",\"status\":403,\"code\":\"AccessDenied\"}"));
	CHECK_CODE(put_str(s, "victim/key", "v", CX_PUT_OVERWRITE, &err), CX_ERR_PERMISSION);
	CHECK(strstr(err.msg, "HTTP 403 (AccessDenied)") != NULL);
	CHECK(s->stats.retries == 2);
	cx_obj_close(s);
}

/* Writes S3 refuses for good fail at once with their own code: 403
 * AccessDenied is a permission, 400 and 404 (no such bucket) permanent. */
CX_TEST(s3_refused_writes_are_not_retried)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;

	if (!proxy_env(&e))
		return;
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	cx_test_refused_commit(s, ctl(), "\"status\":403,\"code\":\"AccessDenied\"",
						   CX_ERR_PERMISSION);
	cx_test_refused_commit(s, ctl(), "\"status\":400,\"code\":\"InvalidRequest\"",
						   CX_ERR_IO_PERMANENT);
	cx_test_refused_commit(s, ctl(), "\"status\":404,\"code\":\"NoSuchBucket\"",
						   CX_ERR_IO_PERMANENT);
	CHECK(s->stats.retries == 0);
	cx_obj_close(s);
}

CX_TEST(s3_timeouts_are_bounded)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	double		t0;
	double		took;

	if (!proxy_env(&e))
		return;
	cx_test_proxy_reset(ctl());
	add_opt(&e, "request_timeout", "0.4");
	add_opt(&e, "retry_max_attempts", "2");
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(put_str(s, "k", "v", CX_PUT_OVERWRITE, &err), &err);
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"delay\",\"ms\":3000,\"count\":5,\"method\":\"GET\"}"));
	cx_buf_init(&b);
	t0 = now_s();
	CHECK_CODE(cx_obj_get(s, "k", &b, &err), CX_ERR_TIMEOUT);
	took = now_s() - t0;
	CHECK(took < 2.0);
	CHECK(strstr(err.msg, "get ") == err.msg && strstr(err.msg, "/k") != NULL);
	CHECK(strstr(err.msg, "2 attempts") != NULL);
	cx_buf_free(&b);
	cx_test_proxy_reset(ctl());
	cx_obj_close(s);
}

CX_TEST(s3_connection_resets_are_retried)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;

	if (!proxy_env(&e))
		return;
	cx_test_proxy_reset(ctl());
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"reset\",\"count\":2,\"method\":\"PUT\"}"));
	REQUIRE_OK(put_str(s, "k", "v", CX_PUT_IF_ABSENT, &err), &err);
	CHECK(s->stats.retries >= 2);
	CHECK(holds(s, "k", "v"));
	cx_obj_close(s);
}

static cx_code
no_change(void *arg, const cx_manifest *base, cx_manifest *next, cx_err *err)
{
	(void) arg;
	(void) base;
	(void) next;
	(void) err;
	return CX_OK;
}

static bool
count_version(void *arg, uint64_t version)
{
	(void) version;
	(*(int *) arg)++;
	return true;
}

/*
 * A manifest PUT lands but its answer is lost: the HTTP layer retries, the
 * retry meets If-None-Match and answers "exists", and cx_commit reads the
 * manifest back, finds its own commit id and reports success — one version,
 * no error, no gap.
 */
CX_TEST(s3_lost_acknowledgement_of_a_commit)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	uint64_t	v = 0;
	int			versions = 0;

	if (!proxy_env(&e))
		return;
	cx_test_proxy_reset(ctl());
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(cx_commit(s, "first", no_change, NULL, NULL, &v, &err), &err);
	CHECK(v == 1);
	REQUIRE(cx_test_proxy_inject(ctl(), "{\"action\":\"drop_response\",\"method\":\"PUT\",\"path\":\"/_versions/\"}"));
	REQUIRE_OK(cx_commit(s, "second", no_change, NULL, NULL, &v, &err), &err);
	CHECK(v == 2);
	CHECK(cx_test_proxy_stat(ctl(), "fired") == 1);
	/* libcurl itself resends a request whose reused connection died before
	 * any answer, so the retry shows as a new connection, not always as one
	 * of our retries. */
	CHECK(s->stats.connections >= 2);
	REQUIRE_OK(cx_manifest_list_versions(s, count_version, &versions, &err), &err);
	CHECK(versions == 2);
	REQUIRE_OK(cx_commit(s, "third", no_change, NULL, NULL, &v, &err), &err);
	CHECK(v == 3);
	cx_obj_close(s);
}

/* A warm handle opens no new connection: N puts, one connection. */
CX_TEST(s3_sequential_requests_reuse_one_connection)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	char		key[32];

	if (!proxy_env(&e))
		return;
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	cx_test_proxy_reset(ctl());
	for (int i = 0; i < 20; i++)
	{
		snprintf(key, sizeof(key), "k%02d", i);
		REQUIRE_OK(put_str(s, key, "v", CX_PUT_OVERWRITE, &err), &err);
	}
	CHECK(s->stats.puts == 20);
	CHECK(s->stats.connections == 1);
	CHECK(cx_test_proxy_stat(ctl(), "connections") == 1);
	CHECK(cx_test_proxy_stat(ctl(), "requests") == 20);
	cx_obj_close(s);
}

/* --- through the SigV4-verifying proxy -------------------------------- */

/*
 * s3rver checks only that the access key id exists.  The proxy at
 * CX_TEST_S3_SIGNED_ENDPOINT (faultproxy.js --verify-sigv4) recomputes every
 * request's signature from what arrived, with a verifier written from AWS's
 * specification rather than from cx_sigv4.c, and refuses what S3 would
 * refuse; these tests prove the signer end to end.
 */

/* The verifying proxy's control URL (signed_env() made sure it is set). */
static const char *
signed_ctl(void)
{
	return getenv("CX_TEST_S3_SIGNED_CTL");
}

/* Through the verifying proxy, which does not emulate If-None-Match. */
static bool
signed_env(s3_env *e)
{
	if (!env_init(e, "CX_TEST_S3_SIGNED_ENDPOINT") ||
		cx_test_need_env("CX_TEST_S3_SIGNED_CTL") == NULL)
		return false;
	add_opt(e, "conditional_put", "off");
	return true;
}

/* The proxy's refusal counter, and why it last refused, on failure. */
static bool
none_refused(void)
{
	cx_buf		b;
	long		refused = cx_test_proxy_stat(signed_ctl(), "refused");

	if (refused == 0)
		return true;
	cx_buf_init(&b);
	cx_test_proxy_ctl(signed_ctl(), "GET", "/stats", NULL, &b);
	cx_buf_put_u8(&b, 0);
	printf("    verifying proxy refused %ld: %s\n", refused,
		   cx_buf_ok(&b) ? (char *) b.data : "?");
	cx_buf_free(&b);
	return false;
}

/* The verifier itself first: AWS's published examples, and what it must
 * refuse (node scripts/faultproxy.js --self-test). */
CX_TEST(s3_sigv4_verifier_passes_aws_examples)
{
	const char *script = cx_test_need_env("CX_TEST_FAULTPROXY");
	char		cmd[1024];
	char		line[512];
	bool		all_passed = false;
	FILE	   *p;

	if (script == NULL)
		return;
	snprintf(cmd, sizeof(cmd), "node '%s' --self-test 2>&1", script);
	p = popen(cmd, "r");
	REQUIRE(p != NULL);
	while (fgets(line, sizeof(line), p) != NULL)
	{
		if (strncmp(line, "FAIL", 4) == 0)
			printf("    %s", line);
		if (strncmp(line, "self-test: all ", 15) == 0)
			all_passed = true;
	}
	CHECK(pclose(p) == 0);
	CHECK(all_passed);
}

static const char *const odd_keys[] = {
	"k/a & b", "k/a<b>", "k/caf\xc3\xa9", "k/d'q\"", "k/e+f=g?h",
	"k/n0", "k/n1", "k/n2", "k/s p;a,c:e@$", "k/t~i!l*d(e)", "k/z%41",
};

CX_TEST(s3_signed_requests_pass_an_independent_verifier)
{
	const int	n = (int) (sizeof(odd_keys) / sizeof(odd_keys[0]));
	const size_t big = 2 * 8 * 1024 * 1024 + 12345;	/* three parts */
	s3_env		e;
	cx_objstore *s;
	cx_upload  *up;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;
	cx_test_listed l = {0};
	long		verified;

	if (!signed_env(&e))
		return;
	/* Three keys a page: the listing sends continuation tokens. */
	add_opt(&e, "list_page_size", "3");
	cx_test_proxy_reset(signed_ctl());
	REQUIRE_OK(env_open(&e, &s, &err), &err);

	/* Single PUTs, of odd keys and of nothing. */
	for (int i = n - 1; i >= 0; i--)
		REQUIRE_OK(put_str(s, odd_keys[i], odd_keys[i], CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(put_str(s, "empty", "", CX_PUT_OVERWRITE, &err), &err);
	CHECK(none_refused());

	/* A multipart upload (create, three parts, complete) and an aborted one. */
	REQUIRE_OK(stream(s, "big", big, CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds_stream(s, "big", big));
	REQUIRE_OK(cx_obj_upload_begin(s, "aborted", CX_PUT_OVERWRITE, &up, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "abc", 3, &err), &err);
	cx_obj_upload_abort(up);
	CHECK(none_refused());

	/* Ranged and whole GETs, HEADs (found and not). */
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get_range(s, "k/n1", 1, 2, &b, &err), &err);
	CHECK(b.len == 2 && memcmp(b.data, "/n", 2) == 0);
	REQUIRE_OK(cx_obj_get_range(s, "big", 8 * 1024 * 1024 - 1, SIZE_MAX, &b, &err), &err);
	CHECK(b.len == big - (8 * 1024 * 1024 - 1));
	CHECK_CODE(cx_obj_get(s, "missing", &b, &err), CX_ERR_NOT_FOUND);
	cx_buf_free(&b);
	REQUIRE_OK(cx_obj_head(s, "k/caf\xc3\xa9", &size, &err), &err);
	CHECK(size == strlen(odd_keys[2]));
	CHECK_CODE(cx_obj_head(s, "aborted", &size, &err), CX_ERR_NOT_FOUND);
	CHECK(none_refused());

	/* A listing over four pages. */
	REQUIRE_OK(cx_obj_list(s, "k/", cx_test_collect, &l, &err), &err);
	REQUIRE(l.n == n);
	for (int i = 0; i < n; i++)
	{
		CHECK(strcmp(l.keys[i], odd_keys[i]) == 0);
		CHECK(holds(s, odd_keys[i], odd_keys[i]));
	}
	CHECK(none_refused());

	/* put-if-absent with conditional_put off: HEAD, then PUT. */
	REQUIRE_OK(put_str(s, "once", "one", CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(put_str(s, "once", "two", CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(holds(s, "once", "one"));

	/* DELETEs, of what is there and what is not. */
	for (int i = 0; i < n; i++)
		REQUIRE_OK(cx_obj_delete(s, odd_keys[i], &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "k/n0", &err), &err);
	CHECK_CODE(cx_obj_head(s, "k/n0", &size, &err), CX_ERR_NOT_FOUND);

	/* Every request reached the proxy, was verified, none was refused. */
	CHECK(none_refused());
	verified = cx_test_proxy_stat(signed_ctl(), "verified");
	CHECK(verified == cx_test_proxy_stat(signed_ctl(), "requests"));
	CHECK(verified >= 2 * n + 20);
	CHECK(s->stats.retries == 0);
	cx_obj_close(s);
}

/* Temporary credentials: x-amz-security-token goes out signed (the verifier
 * refuses an x-amz-* header the signature does not cover). */
CX_TEST(s3_signed_requests_with_a_session_token)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;
	uint64_t	size;
	cx_test_listed l = {0};

	if (!signed_env(&e))
		return;
	add_opt(&e, "session_token", TOKEN);
	cx_test_proxy_reset(signed_ctl());
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(put_str(s, "t/k", "v", CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(stream(s, "t/big", 8 * 1024 * 1024 + 1, CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds(s, "t/k", "v"));
	REQUIRE_OK(cx_obj_head(s, "t/big", &size, &err), &err);
	CHECK(size == 8 * 1024 * 1024 + 1);
	REQUIRE_OK(cx_obj_list(s, "t/", cx_test_collect, &l, &err), &err);
	CHECK(l.n == 2);
	REQUIRE_OK(cx_obj_delete(s, "t/k", &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "t/big", &err), &err);
	CHECK(none_refused());
	CHECK(cx_test_proxy_stat(signed_ctl(), "verified") ==
		  cx_test_proxy_stat(signed_ctl(), "requests"));
	cx_obj_close(s);
}

/* A wrong secret is refused as S3 refuses it, at once, for every kind of
 * request, and nothing reaches s3rver. */
CX_TEST(s3_wrong_secret_is_refused_by_the_verifier)
{
	s3_env		e;
	s3_env		good;
	cx_objstore *s;
	cx_objstore *g;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;
	cx_test_listed l = {0};

	if (!signed_env(&e) || !signed_env(&good))
		return;
	memcpy(good.prefix, e.prefix, sizeof(e.prefix));
	memcpy(good.uri, e.uri, sizeof(e.uri));
	/* A later option of the same name wins. */
	add_opt(&e, "secret_access_key", "NOT-THE-SECRET");
	cx_test_proxy_reset(signed_ctl());
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	REQUIRE_OK(env_open(&good, &g, &err), &err);
	REQUIRE_OK(put_str(g, "there", "v", CX_PUT_OVERWRITE, &err), &err);

	CHECK_CODE(put_str(s, "k", "v", CX_PUT_OVERWRITE, &err), CX_ERR_AUTH);
	CHECK(strstr(err.msg, "HTTP 403 (SignatureDoesNotMatch)") != NULL);
	CHECK(strstr(err.msg, "NOT-THE-SECRET") == NULL);
	CHECK_CODE(put_str(s, "k", "v", CX_PUT_IF_ABSENT, &err), CX_ERR_AUTH);
	cx_buf_init(&b);
	CHECK_CODE(cx_obj_get_range(s, "there", 0, 1, &b, &err), CX_ERR_AUTH);
	cx_buf_free(&b);
	CHECK_CODE(cx_obj_head(s, "there", &size, &err), CX_ERR_AUTH);
	CHECK_CODE(cx_obj_list(s, "", cx_test_collect, &l, &err), CX_ERR_AUTH);
	CHECK_CODE(cx_obj_delete(s, "there", &err), CX_ERR_AUTH);
	CHECK_CODE(stream(s, "big", 8 * 1024 * 1024 + 1, CX_PUT_OVERWRITE, &err), CX_ERR_AUTH);
	CHECK(s->stats.retries == 0);
	CHECK(cx_test_proxy_stat(signed_ctl(), "refused") >= 7);
	CHECK(cx_test_proxy_stat(signed_ctl(), "verified") == 1);

	/* Nothing landed, nothing was deleted. */
	CHECK_CODE(cx_obj_head(g, "k", &size, &err), CX_ERR_NOT_FOUND);
	CHECK_CODE(cx_obj_head(g, "big", &size, &err), CX_ERR_NOT_FOUND);
	CHECK(holds(g, "there", "v"));
	cx_obj_close(g);
	cx_obj_close(s);

	/* An unknown key id is told apart from a bad signature. */
	signed_env(&e);
	add_opt(&e, "access_key_id", "NOT-A-KNOWN-KEY");
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	CHECK_CODE(put_str(s, "k", "v", CX_PUT_OVERWRITE, &err), CX_ERR_AUTH);
	CHECK(strstr(err.msg, "HTTP 403 (InvalidAccessKeyId)") != NULL);
	cx_obj_close(s);
}

/*
 * GC on S3: the listing pages three keys at a time (so GC works across
 * continuation requests, holding only its references and one delete batch),
 * and the grace reads each object's LastModified from the listing.
 */
CX_TEST(s3_gc_sweeps_orphans_across_list_pages)
{
	s3_env		e;
	cx_objstore *s;
	cx_err		err;

	if (!direct_env(&e))
		return;
	add_opt(&e, "list_page_size", "3");
	REQUIRE_OK(env_open(&e, &s, &err), &err);
	cx_test_gc_reads_listed_mtimes(s, 20);
	cx_obj_close(s);
}
