/*
 * test_azure.c — the Azure Blob backend against Azurite: objects, ranges,
 * put-if-absent, paged listings, block uploads, SAS and SharedKey auth,
 * connection reuse, and racing committers.
 *
 * Azurite, its account and key and the fault proxy in front of it come from
 * the environment scripts/emulators.sh writes (CX_TEST_AZ_*).  Without it
 * these tests pass without running, saying so, unless
 * CX_TEST_REQUIRE_EMULATORS=1 (scripts/with-emulators.sh), when they fail:
 * a run meant to cover Azure must never go green by skipping it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "objstore/cx_azure_auth.h"
#include "table/cx_commit.h"
#include "util/cx_crypto.h"
#include "objstore/cx_http.h"
#include "objstore/cx_objstore.h"
#include "cx_test.h"
#include "cx_test_emu.h"

#define AZURITE_ENV "CX_TEST_AZ_ENDPOINT"
#define CONTAINER "cxtest"
#define MAX_OPTIONS 8

/* An environment variable emulators.sh sets, or "" if it did not. */
static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL ? v : "";
}

#define AZ_ACCOUNT env("CX_TEST_AZ_ACCOUNT")
#define AZ_KEY env("CX_TEST_AZ_KEY")

/* A prefix unique to this run, so reruns against one Azurite never meet
 * each other's objects. */
static const char *
run_prefix(void)
{
	static char prefix[64];

	if (prefix[0] == '\0')
		snprintf(prefix, sizeof(prefix), "run-%ld-%d", (long) time(NULL),
				 (int) getpid());
	return prefix;
}

/* Creates the test container once (201 created, 409 already there). */
static cx_code
ensure_container(const char *endpoint, cx_err *err)
{
	static bool done;
	cx_az_sharedkey key;
	cx_http_config cfg;
	cx_objstats stats = {0};
	cx_http    *http = NULL;
	cx_http_headers h;
	cx_http_request req = {0};
	cx_http_response resp;
	char		url[512];
	cx_code		rc;

	if (done)
		return CX_OK;
	snprintf(url, sizeof(url), "%s/%s?restype=container", endpoint, CONTAINER);
	cx_http_config_default(&cfg);
	cx_http_headers_init(&h);
	cx_http_headers_add(&h, "x-ms-version", "2021-08-06");
	cx_http_response_init(&resp);
	rc = cx_az_sharedkey_init(&key, AZ_ACCOUNT, AZ_KEY, err);
	if (rc == CX_OK)
		rc = cx_http_create(&cfg, &stats, &http, err);
	if (rc == CX_OK)
	{
		req.method = "PUT";
		req.url = url;
		req.headers = &h;
		req.sign = cx_az_sign;
		req.sign_arg = &key;
		rc = cx_http_do(http, &req, &resp, err);
	}
	if (rc == CX_OK && resp.status != 201 && resp.status != 409)
		rc = cx_http_fail(&req, &resp, CX_ERR_IO, "creating the test container", err);
	done = rc == CX_OK;
	cx_http_destroy(http);
	cx_http_response_free(&resp);
	cx_http_headers_free(&h);
	cx_az_sharedkey_free(&key);
	return rc;
}

/* Opens az://cxtest/<run>/<name> on Azurite with the given options after
 * the endpoint. */
static cx_code
open_with(const char *name, const cx_option *opts, size_t nopts,
		  cx_objstore **out, cx_err *err)
{
	const char *endpoint = getenv(AZURITE_ENV);
	cx_option	o[MAX_OPTIONS];
	size_t		n = 0;
	char		uri[256];

	if (ensure_container(endpoint, err) != CX_OK)
		return err->code;
	o[n++] = (cx_option) {"endpoint", endpoint};
	for (size_t i = 0; i < nopts && n < MAX_OPTIONS; i++)
		o[n++] = opts[i];
	snprintf(uri, sizeof(uri), "az://%s/%s/%s", CONTAINER, run_prefix(), name);
	return cx_objstore_open(uri, o, n, out, err);
}

/* The same with the development account's SharedKey before extra options. */
static cx_code
open_store(const char *name, const cx_option *extra, size_t nextra,
		   cx_objstore **out, cx_err *err)
{
	cx_option	o[MAX_OPTIONS];
	size_t		n = 0;

	o[n++] = (cx_option) {"account_name", AZ_ACCOUNT};
	o[n++] = (cx_option) {"account_key", AZ_KEY};
	for (size_t i = 0; i < nextra && n < MAX_OPTIONS - 1; i++)
		o[n++] = extra[i];
	return open_with(name, o, n, out, err);
}

/* Ends the test at once when Azurite is not configured (having failed it
 * if the emulators are required). */
#define AZURITE_OR_RETURN() \
	do { \
		if (cx_test_need_env(AZURITE_ENV) == NULL) \
			return; \
	} while (0)

/* The code and message cx_objstore_open gives for an az:// URI and options;
 * no request is made. */
static cx_code
open_fails(const char *uri, const cx_option *o, size_t n, cx_err *err)
{
	cx_objstore *s = NULL;
	cx_code		rc = cx_objstore_open(uri, o, n, &s, err);

	cx_obj_close(s);
	return rc;
}

/* Options are checked when the store opens, with messages that name the
 * option and never show a secret. */
CX_TEST(azure_open_refusals)
{
	const char *secret = "c2VjcmV0LWtleS1tYXRlcmlhbA#=";
	cx_option	both[] = {{"account_name", "acct"}, {"account_key", "YWJjZA=="},
	{"sas_token", "sv=1&sig=x"}};
	cx_option	badkey[] = {{"account_name", "acct"}, {"account_key", secret}};
	cx_option	badsas[] = {{"account_name", "acct"}, {"sas_token", "sv=1&secretvalue"}};
	cx_option	scheme[] = {{"endpoint", "ftp://host/acct"}, {"sas_token", "sig=x"}};
	cx_option	query[] = {{"endpoint", "http://host/acct?sig=leak"}, {"sas_token", "sig=x"}};
	cx_option	noacct[] = {{"sas_token", "sig=x"}};
	cx_option	page[] = {{"account_name", "acct"}, {"list_page_size", "0"}};
	cx_option	cond[] = {{"account_name", "acct"}, {"conditional_put", "maybe"}};
	cx_err		err;

	CHECK_CODE(open_fails("az://c/p", both, 3, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "not both") != NULL);
	CHECK_CODE(open_fails("az://c/p", badkey, 2, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "account_key") != NULL && strstr(err.msg, "c2VjcmV0") == NULL);
	CHECK_CODE(open_fails("az://c/p", badsas, 2, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "sig=") != NULL && strstr(err.msg, "secretvalue") == NULL);
	CHECK_CODE(open_fails("az://c/p", scheme, 2, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "endpoint") != NULL);
	CHECK_CODE(open_fails("az://c/p", query, 2, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "leak") == NULL);
	CHECK_CODE(open_fails("az://c/p", noacct, 1, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "account_name") != NULL);
	CHECK_CODE(open_fails("az://c/p", page, 2, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "list_page_size") != NULL);
	CHECK_CODE(open_fails("az://c/p", cond, 2, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "conditional_put") != NULL);
	CHECK_CODE(open_fails("az:///p", noacct, 1, &err), CX_ERR_INVALID);
}

/* The store's URI names container and prefix, and no secret. */
CX_TEST(azure_open_uri)
{
	cx_option	o[] = {{"account_name", "acct"}, {"sas_token", "?sv=1&sig=topsecret"}};
	cx_objstore *s;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open("az://box/a/b/", o, 2, &s, &err), &err);
	CHECK(strcmp(s->uri, "az://box/a/b") == 0);
	cx_obj_close(s);
	REQUIRE_OK(cx_objstore_open("az://box", o, 2, &s, &err), &err);
	CHECK(strcmp(s->uri, "az://box") == 0);
	cx_obj_close(s);
}

/* The bytes get_range returns, as a string in a static buffer, or "ERROR". */
static const char *
range_str(cx_objstore *s, const char *key, uint64_t off, size_t len)
{
	static char out[256];
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	if (cx_obj_get_range(s, key, off, len, &b, &err) != CX_OK)
		snprintf(out, sizeof(out), "ERROR %s", cx_code_name(err.code));
	else
		snprintf(out, sizeof(out), "%.*s", (int) b.len, (const char *) b.data);
	cx_buf_free(&b);
	return out;
}

/* Keys that need escaping in URLs and entities in XML listings. */
static const char *const odd_keys[] = {
	"plain.bin", "sp ace+plus&amp<lt>\"q'.bin", "utf8/caf\xc3\xa9.bin",
	"pct%2Fnot-a-slash", "deep/a/b/c/d.bin",
};

#define NODD (sizeof(odd_keys) / sizeof(odd_keys[0]))

CX_TEST(azure_live_put_get_head_delete)
{
	cx_objstore *s;
	cx_buf		b;
	uint64_t	size = 0;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("basic", NULL, 0, &s, &err), &err);
	cx_buf_init(&b);
	for (size_t i = 0; i < NODD; i++)
	{
		REQUIRE_OK(cx_obj_put(s, odd_keys[i], odd_keys[i], strlen(odd_keys[i]),
							  CX_PUT_OVERWRITE, &err), &err);
		CHECK(cx_test_holds(s, odd_keys[i], odd_keys[i], strlen(odd_keys[i])));
		REQUIRE_OK(cx_obj_head(s, odd_keys[i], &size, &err), &err);
		CHECK(size == strlen(odd_keys[i]));
	}

	/* Ranges: inside, running past the end, starting past the end. */
	REQUIRE_OK(cx_obj_put(s, "r", "0123456789", 10, CX_PUT_OVERWRITE, &err), &err);
	CHECK(strcmp(range_str(s, "r", 2, 3), "234") == 0);
	CHECK(strcmp(range_str(s, "r", 7, 100), "789") == 0);
	CHECK(strcmp(range_str(s, "r", 0, SIZE_MAX), "0123456789") == 0);
	CHECK(strcmp(range_str(s, "r", 4, SIZE_MAX), "456789") == 0);
	CHECK(strcmp(range_str(s, "r", 10, 5), "") == 0);
	CHECK(strcmp(range_str(s, "r", 99, SIZE_MAX), "") == 0);
	CHECK(strcmp(range_str(s, "r", 3, 0), "") == 0);
	CHECK(strcmp(range_str(s, "missing", 3, 0), "ERROR not_found") == 0);

	/* An empty object. */
	REQUIRE_OK(cx_obj_put(s, "empty", "", 0, CX_PUT_OVERWRITE, &err), &err);
	CHECK(cx_test_holds(s, "empty", "", 0));
	CHECK(strcmp(range_str(s, "empty", 0, 10), "") == 0);
	REQUIRE_OK(cx_obj_head(s, "empty", &size, &err), &err);
	CHECK(size == 0);
	CHECK(cx_test_written_lately(s, "empty"));

	/* Missing objects; deleting is idempotent. */
	CHECK_CODE(cx_obj_get(s, "missing", &b, &err), CX_ERR_NOT_FOUND);
	CHECK(strstr(err.msg, "404") != NULL && strstr(err.msg, "BlobNotFound") != NULL);
	CHECK_CODE(cx_obj_head(s, "missing", &size, &err), CX_ERR_NOT_FOUND);
	CHECK(strstr(err.msg, "BlobNotFound") != NULL);
	REQUIRE_OK(cx_obj_delete(s, "r", &err), &err);
	CHECK_CODE(cx_obj_get(s, "r", &b, &err), CX_ERR_NOT_FOUND);
	CHECK_CODE(cx_obj_delete(s, "r", &err), CX_OK);
	CHECK(s->stats.puts == NODD + 2 && s->stats.deletes == 2);
	cx_buf_free(&b);
	cx_obj_close(s);
}

CX_TEST(azure_live_put_if_absent)
{
	cx_objstore *s;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("ifabsent", NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "k", "first", 5, CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(cx_obj_put(s, "k", "second", 6, CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	/* The message names the key's URL, the status and Azure's code. */
	CHECK(strstr(err.msg, "az://" CONTAINER) != NULL);
	CHECK(strstr(err.msg, "/ifabsent/k") != NULL);
	CHECK(strstr(err.msg, "409") != NULL);
	CHECK(strstr(err.msg, "BlobAlreadyExists") != NULL);
	CHECK(cx_test_holds(s, "k", "first", 5));
	REQUIRE_OK(cx_obj_put(s, "k", "third", 5, CX_PUT_OVERWRITE, &err), &err);
	CHECK(cx_test_holds(s, "k", "third", 5));
	cx_obj_close(s);
}

/* conditional_put off: put-if-absent checks first and writes plainly. */
CX_TEST(azure_live_conditional_put_off)
{
	cx_option	off[] = {{"conditional_put", "off"}};
	cx_objstore *s;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("condoff", off, 1, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "k", "first", 5, CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(cx_obj_put(s, "k", "second", 6, CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(cx_test_holds(s, "k", "first", 5));
	cx_obj_close(s);
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Pages of two names: markers are followed, entities decoded, names come
 * back in byte order without the store prefix, and a listing that stops
 * early stops. */
CX_TEST(azure_live_list_pages)
{
	cx_option	small[] = {{"list_page_size", "2"}};
	const char *sorted[NODD];
	cx_objstore *s;
	cx_objstore *other;
	cx_test_listed l = {0};
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("list", small, 1, &s, &err), &err);
	REQUIRE_OK(open_store("list-other", NULL, 0, &other, &err), &err);
	REQUIRE_OK(cx_obj_put(other, "plain.bin", "x", 1, CX_PUT_OVERWRITE, &err), &err);
	for (size_t i = 0; i < NODD; i++)
	{
		REQUIRE_OK(cx_obj_put(s, odd_keys[i], "abc", i, CX_PUT_OVERWRITE, &err), &err);
		sorted[i] = odd_keys[i];
	}
	qsort(sorted, NODD, sizeof(sorted[0]), str_cmp);

	REQUIRE_OK(cx_obj_list(s, "", cx_test_collect, &l, &err), &err);
	REQUIRE(l.n == (int) NODD);
	for (size_t i = 0; i < NODD; i++)
	{
		CHECK(strcmp(l.keys[i], sorted[i]) == 0);
		for (size_t j = 0; j < NODD; j++)
			if (strcmp(odd_keys[j], l.keys[i]) == 0)
				CHECK(l.sizes[i] == j);
	}
	/* Five names in pages of two: three List Blobs requests, one list. */
	CHECK(s->stats.lists == 1);

	memset(&l, 0, sizeof(l));
	REQUIRE_OK(cx_obj_list(s, "deep/a/", cx_test_collect, &l, &err), &err);
	CHECK(l.n == 1 && strcmp(l.keys[0], "deep/a/b/c/d.bin") == 0);

	memset(&l, 0, sizeof(l));
	REQUIRE_OK(cx_obj_list(s, "sp ace+plus&", cx_test_collect, &l, &err), &err);
	CHECK(l.n == 1 && strcmp(l.keys[0], odd_keys[1]) == 0);

	memset(&l, 0, sizeof(l));
	l.stop_after = 3;
	REQUIRE_OK(cx_obj_list(s, "", cx_test_collect, &l, &err), &err);
	CHECK(l.n == 3);

	memset(&l, 0, sizeof(l));
	REQUIRE_OK(cx_obj_list(s, "nothing-here/", cx_test_collect, &l, &err), &err);
	CHECK(l.n == 0);
	cx_obj_close(other);
	cx_obj_close(s);
}

/* GC on Azure: across List Blobs pages, the grace reading each blob's
 * Last-Modified from the listing. */
CX_TEST(azure_live_gc_reads_mtimes_from_the_listing)
{
	cx_option	small[] = {{"list_page_size", "3"}};
	cx_objstore *s;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("gc", small, 1, &s, &err), &err);
	cx_test_gc_reads_listed_mtimes(s, 20);
	cx_obj_close(s);
}

/* Deterministic, position-dependent bytes: a misplaced block shows. */
static void
fill_pattern(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t	x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++)
	{
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t) (x >> 16);
	}
}

#define BIG_LEN ((size_t) 9 * 1024 * 1024 + 12345)

/* Above one block (4 MiB), uploads go up as blocks and a block list. */
CX_TEST(azure_live_block_upload)
{
	cx_objstore *s;
	cx_upload  *up;
	uint8_t    *data;
	uint64_t	puts;
	cx_buf		b;
	size_t		off = 0;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("blocks", NULL, 0, &s, &err), &err);
	data = malloc(BIG_LEN);
	REQUIRE(data != NULL);
	fill_pattern(data, BIG_LEN, 7);
	cx_buf_init(&b);

	/* Uneven writes, so that blocks straddle them. */
	REQUIRE_OK(cx_obj_upload_begin(s, "big", CX_PUT_IF_ABSENT, &up, &err), &err);
	for (size_t chunk = 1; off < BIG_LEN; chunk = chunk * 3 + 1001)
	{
		size_t		n = BIG_LEN - off < chunk ? BIG_LEN - off : chunk;

		if (cx_obj_upload_write(up, data + off, n, &err) != CX_OK)
		{
			cx_obj_upload_abort(up);
			REQUIRE_OK(err.code, &err);
		}
		off += n;
	}
	REQUIRE_OK(cx_obj_upload_finish(up, &err), &err);
	CHECK(cx_test_holds(s, "big", data, BIG_LEN));
	REQUIRE_OK(cx_obj_get_range(s, "big", 4194300, 10, &b, &err), &err);
	CHECK(b.len == 10 && memcmp(b.data, data + 4194300, 10) == 0);

	/* Put-if-absent through the block list: refused, object unchanged. */
	puts = s->stats.puts;
	fill_pattern(data, BIG_LEN, 8);
	CHECK_CODE(cx_obj_put(s, "big", data, BIG_LEN, CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(strstr(err.msg, "put block list") != NULL);
	CHECK(s->stats.puts == puts + 1);
	fill_pattern(data, BIG_LEN, 7);
	CHECK(cx_test_holds(s, "big", data, BIG_LEN));

	/* Overwrite through cx_obj_put, and an aborted upload changes nothing. */
	fill_pattern(data, BIG_LEN, 9);
	REQUIRE_OK(cx_obj_put(s, "big", data, BIG_LEN, CX_PUT_OVERWRITE, &err), &err);
	CHECK(cx_test_holds(s, "big", data, BIG_LEN));
	REQUIRE_OK(cx_obj_upload_begin(s, "big", CX_PUT_OVERWRITE, &up, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "junk", 4, &err), &err);
	cx_obj_upload_abort(up);
	CHECK(cx_test_holds(s, "big", data, BIG_LEN));

	cx_buf_free(&b);
	free(data);
	cx_obj_close(s);
}

/* Once a store is warm, requests reuse its connection. */
CX_TEST(azure_live_connection_reuse)
{
	cx_objstore *s;
	uint64_t	warm;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("reuse", NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "warmup", "x", 1, CX_PUT_OVERWRITE, &err), &err);
	warm = s->stats.connections;
	CHECK(warm == 1);
	for (int i = 0; i < 20; i++)
	{
		char		key[32];

		snprintf(key, sizeof(key), "k%02d", i);
		REQUIRE_OK(cx_obj_put(s, key, key, strlen(key), CX_PUT_IF_ABSENT, &err), &err);
		CHECK(cx_test_holds(s, key, key, strlen(key)));
	}
	CHECK(s->stats.connections == warm);
	CHECK(s->stats.retries == 0);
	cx_obj_close(s);
}

/* A wrong key is refused as an authentication failure; no message shows
 * the key. */
CX_TEST(azure_live_wrong_key_refused)
{
	/* Base64 of 64 bytes that are not the account key. */
	const char *wrong = "V1JPTkdLRVlXUk9OR0tFWVdST05HS0VZV1JPTkdLRVlXUk9OR0tFWVdST05HS0VZV1JPTkdLRVlXUk9OR0tFWQ==";
	cx_option	o[] = {{"account_key", wrong}};
	cx_objstore *s;
	cx_buf		b;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_store("wrongkey", o, 1, &s, &err), &err);
	cx_buf_init(&b);
	CHECK_CODE(cx_obj_put(s, "k", "x", 1, CX_PUT_IF_ABSENT, &err), CX_ERR_AUTH);
	CHECK(strstr(err.msg, "403") != NULL);
	CHECK(strstr(err.msg, "AuthorizationFailure") != NULL ||
		  strstr(err.msg, "AuthenticationFailed") != NULL);
	CHECK(strstr(err.msg, "V1JPTkdL") == NULL && strstr(err.msg, "SharedKey") == NULL);
	CHECK_CODE(cx_obj_get(s, "k", &b, &err), CX_ERR_AUTH);
	CHECK(strstr(err.msg, "V1JPTkdL") == NULL);
	cx_buf_free(&b);
	cx_obj_close(s);
}

static void
put_str(cx_buf *b, const char *s)
{
	cx_buf_put(b, s, strlen(s));
}

/*
 * An account SAS for the Blob service, signed with the development key as
 * "Create an account SAS" (version 2020-12-06 and later) prescribes:
 * account, permissions, services, resource types, start, expiry, IP,
 * protocols, version and encryption scope, each followed by a newline.
 */
static void
account_sas(const char *key_base64, time_t expiry, cx_buf *out)
{
	char		se[32];
	char		sts[256];
	uint8_t		mac[CX_SHA256_LEN];
	cx_buf		key;
	cx_buf		sig;
	cx_err		err;
	struct tm	tm;
	int			n;

	gmtime_r(&expiry, &tm);
	strftime(se, sizeof(se), "%Y-%m-%dT%H:%M:%SZ", &tm);
	n = snprintf(sts, sizeof(sts), "%s\nrwdlac\nb\nsco\n\n%s\n\nhttps,http\n2021-08-06\n\n",
				 AZ_ACCOUNT, se);
	cx_buf_init(&key);
	cx_buf_init(&sig);
	(void) cx_base64_decode(&key, key_base64, &err);
	cx_hmac_sha256(key.data, key.len, sts, (size_t) n, mac);
	cx_base64_encode(&sig, mac, sizeof(mac));

	put_str(out, "?sv=2021-08-06&ss=b&srt=sco&sp=rwdlac&se=");
	cx_http_url_encode(out, se, false);
	put_str(out, "&spr=https,http&sig=");
	cx_http_url_encode(out, (const char *) sig.data, false);
	cx_buf_put_u8(out, 0);
	cx_buf_free(&key);
	cx_buf_free(&sig);
}

/* A SAS token instead of the key: every operation works, with or without
 * the leading '?'; a forged token is refused as an authentication failure
 * and no message shows it. */
CX_TEST(azure_live_sas_token)
{
	cx_objstore *s;
	cx_objstore *f;
	cx_buf		sas;
	cx_buf		forged;
	cx_buf		b;
	uint8_t    *big;
	uint64_t	size = 0;
	cx_test_listed l = {0};
	cx_err		err;

	AZURITE_OR_RETURN();
	big = malloc(BIG_LEN);
	REQUIRE(big != NULL);
	fill_pattern(big, BIG_LEN, 3);
	cx_buf_init(&sas);
	cx_buf_init(&forged);
	cx_buf_init(&b);
	account_sas(AZ_KEY, time(NULL) + 3600, &sas);
	account_sas("V1JPTkdLRVlXUk9OR0tFWQ==", time(NULL) + 3600, &forged);
	REQUIRE(cx_buf_ok(&sas) && cx_buf_ok(&forged));
	{
		cx_option	o[] = {{"sas_token", (const char *) sas.data}};
		cx_option	fo[] = {{"sas_token", (const char *) forged.data + 1}};

		REQUIRE_OK(open_with("sas", o, 1, &s, &err), &err);
		REQUIRE_OK(open_with("sas", fo, 1, &f, &err), &err);
	}
	REQUIRE_OK(cx_obj_put(s, "a/k", "value", 5, CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(cx_obj_put(s, "a/k", "value", 5, CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(cx_test_holds(s, "a/k", "value", 5));
	CHECK(strcmp(range_str(s, "a/k", 1, 2), "al") == 0);
	REQUIRE_OK(cx_obj_head(s, "a/k", &size, &err), &err);
	CHECK(size == 5);
	REQUIRE_OK(cx_obj_put(s, "big", big, BIG_LEN, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(cx_test_holds(s, "big", big, BIG_LEN));
	REQUIRE_OK(cx_obj_list(s, "", cx_test_collect, &l, &err), &err);
	CHECK(l.n == 2 && strcmp(l.keys[0], "a/k") == 0 && strcmp(l.keys[1], "big") == 0);
	REQUIRE_OK(cx_obj_delete(s, "a/k", &err), &err);
	CHECK_CODE(cx_obj_head(s, "a/k", &size, &err), CX_ERR_NOT_FOUND);

	CHECK_CODE(cx_obj_get(f, "big", &b, &err), CX_ERR_AUTH);
	CHECK(strstr(err.msg, "403") != NULL);
	CHECK(strstr(err.msg, "sig=") == NULL && strstr(err.msg, "sv=") == NULL);
	CHECK_CODE(cx_obj_put(f, "x", "x", 1, CX_PUT_OVERWRITE, &err), CX_ERR_AUTH);
	CHECK(strstr(err.msg, "sig=") == NULL);

	cx_obj_close(f);
	cx_obj_close(s);
	cx_buf_free(&b);
	cx_buf_free(&sas);
	cx_buf_free(&forged);
	free(big);
}

/*
 * Credentials come from the environment only with allow_env_credentials;
 * with none at all requests are anonymous, which a private container
 * refuses as an authentication failure.
 */
CX_TEST(azure_live_env_credentials)
{
	cx_option	allow[] = {{"allow_env_credentials", "on"}};
	cx_objstore *s;
	cx_buf		b;
	cx_err		err;

	AZURITE_OR_RETURN();
	cx_buf_init(&b);
	setenv("AZURE_STORAGE_ACCOUNT", AZ_ACCOUNT, 1);
	setenv("AZURE_STORAGE_KEY", AZ_KEY, 1);
	REQUIRE_OK(open_with("envcreds", allow, 1, &s, &err), &err);
	CHECK_CODE(cx_obj_put(s, "k", "env", 3, CX_PUT_OVERWRITE, &err), CX_OK);
	CHECK(cx_test_holds(s, "k", "env", 3));
	cx_obj_close(s);

	REQUIRE_OK(open_with("envcreds", NULL, 0, &s, &err), &err);
	CHECK_CODE(cx_obj_get(s, "k", &b, &err), CX_ERR_AUTH);
	CHECK(strstr(err.msg, "403") != NULL);
	cx_obj_close(s);
	unsetenv("AZURE_STORAGE_ACCOUNT");
	unsetenv("AZURE_STORAGE_KEY");
	cx_buf_free(&b);
}

#define RACERS 3
#define RACE_COMMITS 6

typedef struct racer
{
	int			id;
	pthread_barrier_t *start;
	uint64_t	won[RACE_COMMITS];	/* the version each commit got */
	cx_code		rc;
	char		msg[CX_ERR_MSG_LEN];
} racer;

static cx_code
no_change(void *arg, const cx_manifest *base, cx_manifest *next, cx_err *err)
{
	(void) arg;
	(void) base;
	(void) next;
	(void) err;
	return CX_OK;
}

/* Commits RACE_COMMITS versions named "r<id>-<i>" through its own handle. */
static void *
racer_main(void *arg)
{
	racer	   *r = arg;
	cx_objstore *s;
	cx_err		err;

	r->rc = open_store("race", NULL, 0, &s, &err);
	pthread_barrier_wait(r->start);
	for (int i = 0; i < RACE_COMMITS && r->rc == CX_OK; i++)
	{
		char		op[32];

		snprintf(op, sizeof(op), "r%d-%d", r->id, i);
		r->rc = cx_commit(s, op, no_change, NULL, NULL, &r->won[i], &err);
	}
	if (r->rc != CX_OK)
		snprintf(r->msg, sizeof(r->msg), "%s", err.msg);
	if (s != NULL)
		cx_obj_close(s);
	return NULL;
}

/*
 * Racing committers on an az:// store (invariants 1 and 11): they all
 * start on an empty store, every commit lands exactly once, gap-free, and
 * each version belongs to the committer that was told it won it.
 */
CX_TEST(azure_live_commit_race)
{
	racer		r[RACERS];
	pthread_t	t[RACERS];
	pthread_barrier_t start;
	cx_objstore *s;
	uint64_t	latest = 0;
	cx_err		err;

	AZURITE_OR_RETURN();
	/* The container exists before the threads race to use it. */
	REQUIRE_OK(ensure_container(getenv(AZURITE_ENV), &err), &err);
	pthread_barrier_init(&start, NULL, RACERS);
	for (int i = 0; i < RACERS; i++)
	{
		r[i] = (racer) {.id = i, .start = &start};
		REQUIRE(pthread_create(&t[i], NULL, racer_main, &r[i]) == 0);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < RACERS; i++)
		if (r[i].rc != CX_OK)
			cx_test_fail(__FILE__, __LINE__, r[i].msg);

	REQUIRE_OK(open_store("race", NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_manifest_latest_version(s, &latest, &err), &err);
	CHECK(latest == RACERS * RACE_COMMITS);
	for (int i = 0; i < RACERS; i++)
		for (int j = 0; j < RACE_COMMITS; j++)
		{
			cx_manifest *m = NULL;
			char		op[32];

			snprintf(op, sizeof(op), "r%d-%d", i, j);
			if (cx_manifest_load(s, r[i].won[j], &m, &err) != CX_OK)
			{
				cx_test_fail(__FILE__, __LINE__, err.msg);
				continue;
			}
			CHECK(strcmp(m->operation, op) == 0);
			cx_manifest_free(m);
		}
	/* Distinct versions: RACERS * RACE_COMMITS winners of as many
	 * versions, each checked above to hold its winner's commit. */
	for (int i = 0; i < RACERS * RACE_COMMITS; i++)
		for (int j = i + 1; j < RACERS * RACE_COMMITS; j++)
			CHECK(r[i / RACE_COMMITS].won[i % RACE_COMMITS] !=
				  r[j / RACE_COMMITS].won[j % RACE_COMMITS]);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Through the fault proxy (scripts/faultproxy.js) in front of Azurite
 * -------------------------------------------------------------------------- */

#define PROXY_CTL env("CX_TEST_AZ_PROXY_CTL")

/* Opens the store name through the proxy, with no rule armed and the
 * proxy's counters reset. */
static cx_code
open_proxied(const char *name, const cx_option *extra, size_t nextra,
			 cx_objstore **out, cx_err *err)
{
	cx_option	o[MAX_OPTIONS];
	size_t		n = 0;

	cx_test_proxy_reset(PROXY_CTL);
	o[n++] = (cx_option) {"endpoint", env("CX_TEST_AZ_PROXY")};
	for (size_t i = 0; i < nextra && n < MAX_OPTIONS - 1; i++)
		o[n++] = extra[i];
	return open_store(name, o, n, out, err);
}

static int64_t
elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t) (now.tv_sec - since->tv_sec) * 1000 +
		(now.tv_nsec - since->tv_nsec) / 1000000;
}

/*
 * 503, 500 and 429 answers and connection resets are retried and the
 * operations succeed.  A reset on a kept-alive connection before any answer
 * is resent by libcurl itself on a new connection: it shows as a connection,
 * not a retry.
 */
CX_TEST(azure_fault_retried)
{
	cx_objstore *s;
	cx_buf		b;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_proxied("fault-retry", NULL, 0, &s, &err), &err);
	cx_buf_init(&b);
	REQUIRE(cx_test_proxy_inject(PROXY_CTL,
								 "{\"action\":\"status\",\"status\":503,\"count\":2,\"method\":\"PUT\"}"));
	REQUIRE_OK(cx_obj_put(s, "k", "value", 5, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(s->stats.retries == 2);
	REQUIRE(cx_test_proxy_inject(PROXY_CTL,
								 "{\"action\":\"status\",\"status\":429,\"code\":\"TooManyRequests\",\"method\":\"GET\"}"));
	REQUIRE(cx_test_proxy_inject(PROXY_CTL, "{\"action\":\"reset\",\"method\":\"GET\"}"));
	REQUIRE_OK(cx_obj_get(s, "k", &b, &err), &err);
	CHECK(b.len == 5 && memcmp(b.data, "value", 5) == 0);
	CHECK(s->stats.retries == 3);
	CHECK(s->stats.connections == 2);
	REQUIRE(cx_test_proxy_inject(PROXY_CTL,
								 "{\"action\":\"status\",\"status\":500,\"code\":\"InternalError\",\"method\":\"GET\"}"));
	REQUIRE_OK(cx_obj_list(s, "", cx_test_collect, &(cx_test_listed) {0}, &err), &err);
	CHECK(s->stats.retries == 4);
	CHECK(cx_test_proxy_stat(PROXY_CTL, "fired") == 5);
	cx_buf_free(&b);
	cx_obj_close(s);
}

/* Writes Azure refuses for good fail at once with their own code: 403
 * AuthorizationPermissionMismatch is a permission, 400 and 404 (no such
 * container) permanent. */
CX_TEST(azure_refused_writes_are_not_retried)
{
	cx_objstore *s;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_proxied("refused-writes", NULL, 0, &s, &err), &err);
	cx_test_refused_commit(s, PROXY_CTL,
						   "\"status\":403,\"code\":\"AuthorizationPermissionMismatch\"",
						   CX_ERR_PERMISSION);
	cx_test_refused_commit(s, PROXY_CTL, "\"status\":400,\"code\":\"InvalidHeaderValue\"",
						   CX_ERR_IO_PERMANENT);
	cx_test_refused_commit(s, PROXY_CTL, "\"status\":404,\"code\":\"ContainerNotFound\"",
						   CX_ERR_IO_PERMANENT);
	CHECK(s->stats.retries == 0);
	cx_obj_close(s);
}

/* A fault that persists ends in bounded time with a clear error: the
 * operation, the object, the status and Azure's code, and no credential. */
CX_TEST(azure_fault_bounded_failure)
{
	cx_option	o[] = {{"retry_max_attempts", "3"}, {"retry_max_seconds", "5"}};
	cx_objstore *s;
	struct timespec start;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_proxied("fault-bounded", o, 2, &s, &err), &err);
	REQUIRE(cx_test_proxy_inject(PROXY_CTL, "{\"action\":\"status\",\"status\":503,\"count\":100}"));
	clock_gettime(CLOCK_MONOTONIC, &start);
	CHECK_CODE(cx_obj_put(s, "k", "value", 5, CX_PUT_IF_ABSENT, &err), CX_ERR_IO);
	CHECK(elapsed_ms(&start) < 5000);
	CHECK(strstr(err.msg, "put az://") != NULL && strstr(err.msg, "/fault-bounded/k") != NULL);
	CHECK(strstr(err.msg, "HTTP 503") != NULL);
	CHECK(strstr(err.msg, "ServiceUnavailable") != NULL);
	CHECK(strstr(err.msg, "3 attempts") != NULL);
	CHECK(strstr(err.msg, "SharedKey") == NULL && strstr(err.msg, "Eby8") == NULL);
	CHECK(s->stats.retries == 2);
	cx_test_proxy_reset(PROXY_CTL);
	cx_obj_close(s);
}

/* The number of manifest versions in s, and whether they are 1..n. */
static bool
versions_are_1_to(cx_objstore *s, uint64_t n)
{
	uint64_t	latest = 0;
	cx_manifest *m = NULL;
	cx_err		err;
	bool		ok;

	if (cx_manifest_latest_version(s, &latest, &err) != CX_OK || latest != n)
		return false;
	/* No version beyond the latest either. */
	ok = cx_manifest_load(s, n + 1, &m, &err) == CX_ERR_NOT_FOUND;
	cx_manifest_free(m);
	return ok;
}

/*
 * Lost acknowledgements (invariant 1): the manifest put lands but its answer
 * is dropped (a reset), or comes after the request timeout.  The retried put
 * finds the object there; cx_commit reads it back, recognises its own commit
 * id and reports the version won, committing nothing twice.
 */
CX_TEST(azure_fault_lost_ack_resolved_by_commit)
{
	/* Long enough that no undelayed request of a loaded machine times out:
	 * the retries counted below are the delayed put's alone. */
	cx_option	o[] = {{"request_timeout", "3"}};
	cx_objstore *s;
	cx_manifest *m = NULL;
	uint64_t	v = 0;
	uint64_t	retries;
	cx_err		err;

	AZURITE_OR_RETURN();
	REQUIRE_OK(open_proxied("fault-lostack", o, 1, &s, &err), &err);

	REQUIRE(cx_test_proxy_inject(PROXY_CTL,
								 "{\"action\":\"drop_response\",\"method\":\"PUT\",\"path\":\"_versions/\"}"));
	REQUIRE_OK(cx_commit(s, "first", no_change, NULL, NULL, &v, &err), &err);
	CHECK(v == 1);
	CHECK(cx_test_proxy_stat(PROXY_CTL, "fired") == 1);

	REQUIRE(cx_test_proxy_inject(PROXY_CTL,
								 "{\"action\":\"delay\",\"ms\":6000,\"method\":\"PUT\",\"path\":\"_versions/\"}"));
	retries = s->stats.retries;
	REQUIRE_OK(cx_commit(s, "second", no_change, NULL, NULL, &v, &err), &err);
	CHECK(v == 2);
	CHECK(cx_test_proxy_stat(PROXY_CTL, "fired") == 2);
	CHECK(s->stats.retries == retries + 1);	/* the timed-out attempt */

	CHECK(versions_are_1_to(s, 2));
	REQUIRE_OK(cx_manifest_load(s, 2, &m, &err), &err);
	CHECK(strcmp(m->operation, "second") == 0);
	cx_manifest_free(m);
	cx_test_proxy_reset(PROXY_CTL);
	cx_obj_close(s);
}
