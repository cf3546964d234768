/*
 * cx_test_emu.c — emulator and fault-proxy helpers for the storage tests.
 */
#include "cx_test_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "ctxstore/lifecycle.h"
#include "objstore/cx_layout.h"
#include "table/cx_manifest.h"
#include "cx_test.h"
#include "mw_util.h"

const char *
cx_test_need_env(const char *name)
{
	const char *v = getenv(name);
	const char *required = getenv("CX_TEST_REQUIRE_EMULATORS");
	char		msg[160];

	if (v != NULL && v[0] != '\0')
		return v;
	snprintf(msg, sizeof(msg),
			 "%s is not set: start the emulators (scripts/with-emulators.sh)",
			 name);
	if (required != NULL && strcmp(required, "1") == 0)
		cx_test_fail(__FILE__, __LINE__, msg);
	else
		cx_test_skip(msg);
	return NULL;
}

static size_t
collect_body(char *p, size_t size, size_t n, void *arg)
{
	cx_buf_put(arg, p, size * n);
	return size * n;
}

long
cx_test_proxy_ctl(const char *ctl, const char *method, const char *path,
				  const char *json, cx_buf *out)
{
	char		url[256];
	CURL	   *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	cx_buf		ignored;
	long		status = 0;

	cx_buf_init(&ignored);
	snprintf(url, sizeof(url), "%s%s", ctl ? ctl : "", path);
	if (c != NULL && h != NULL)
	{
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		if (json != NULL)
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, out ? out : &ignored);
		if (curl_easy_perform(c) == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	cx_buf_free(&ignored);
	return status;
}

bool
cx_test_proxy_inject(const char *ctl, const char *json)
{
	return cx_test_proxy_ctl(ctl, "POST", "/faults", json, NULL) == 200;
}

void
cx_test_proxy_reset(const char *ctl)
{
	cx_test_proxy_ctl(ctl, "DELETE", "/faults", NULL, NULL);
	cx_test_proxy_ctl(ctl, "POST", "/stats/reset", NULL, NULL);
}

long
cx_test_proxy_stat(const char *ctl, const char *name)
{
	cx_buf		b;
	char		pat[64];
	const char *p;
	long		v = -1;

	cx_buf_init(&b);
	cx_test_proxy_ctl(ctl, "GET", "/stats", NULL, &b);
	cx_buf_put_u8(&b, 0);
	snprintf(pat, sizeof(pat), "\"%s\":", name);
	if (cx_buf_ok(&b) && (p = strstr((char *) b.data, pat)) != NULL)
		v = strtol(p + strlen(pat), NULL, 10);
	cx_buf_free(&b);
	return v;
}

bool
cx_test_holds(cx_objstore *s, const char *key, const void *data, size_t len)
{
	cx_buf		b;
	cx_err		err;
	bool		same;

	cx_buf_init(&b);
	same = cx_obj_get(s, key, &b, &err) == CX_OK && b.len == len &&
		(len == 0 || memcmp(b.data, data, len) == 0);
	cx_buf_free(&b);
	return same;
}

bool
cx_test_collect(void *arg, const char *key, uint64_t size)
{
	cx_test_listed *l = arg;

	if (l->n < CX_TEST_LIST_MAX)
	{
		snprintf(l->keys[l->n], sizeof(l->keys[0]), "%s", key);
		l->sizes[l->n] = size;
	}
	l->n++;
	return l->stop_after == 0 || l->n < l->stop_after;
}

void
cx_test_refused_commit(cx_objstore *s, const char *ctl,
					   const char *write_fault, cx_code expected)
{
	cx_manifest *m = cx_manifest_new();
	uint64_t	puts_before = s->stats.puts;
	char		rule[512];
	char		key[CX_KEY_MAX + 1];
	cx_buf		bytes;
	cx_err		err;
	bool		ours;

	REQUIRE(m != NULL);
	m->version = 1;
	cx_buf_init(&bytes);
	REQUIRE_OK(cx_manifest_encode(m, &bytes, &err), &err);
	cx_manifest_free(m);
	if (ctl != NULL)
	{
		cx_test_proxy_reset(ctl);
		snprintf(rule, sizeof(rule),
				 "{\"action\":\"status\",\"method\":\"PUT\",\"count\":10,%s}",
				 write_fault);
		REQUIRE(cx_test_proxy_inject(ctl, rule));
	}
	CHECK_CODE(cx_manifest_put(s, 1, &bytes, &ours, &err), expected);
	cx_manifest_key(1, key, sizeof(key));
	CHECK(strstr(err.msg, key) != NULL);
	CHECK(s->stats.puts - puts_before == 1);
	CHECK(ctl == NULL || cx_test_proxy_stat(ctl, "fired") == 1);
	if (ctl != NULL)
		cx_test_proxy_reset(ctl);
	cx_buf_free(&bytes);
}

bool
cx_test_written_lately(cx_objstore *s, const char *key)
{
	int64_t		mtime;
	int64_t		now = (int64_t) time(NULL) * 1000000;
	cx_err		err;

	if (cx_obj_mtime(s, key, &mtime, &err) != CX_OK)
		return false;
	return mtime <= now + 1000000 && mtime > now - 60 * INT64_C(1000000);
}

/* The mtimes of a listing, in key order. */
typedef struct listed_mtimes
{
	int			n;
	int64_t		mtime_us[CX_TEST_LIST_MAX];
} listed_mtimes;

static bool
collect_mtime(void *arg, const cx_list_entry *e)
{
	listed_mtimes *l = arg;

	if (l->n < CX_TEST_LIST_MAX)
		l->mtime_us[l->n] = e->mtime_us;
	l->n++;
	return true;
}

void
cx_test_gc_reads_listed_mtimes(cx_objstore *s, int n)
{
	char		key[CX_FRAGMENT_KEY_SIZE];
	uint8_t		id[CX_FRAGMENT_ID_LEN];
	listed_mtimes listed = {0};
	int64_t		head_mtime;
	uint64_t	heads;
	uint64_t	v;
	cx_gc_options o;
	cx_gc_result res;
	cx_err		err;

	REQUIRE(n <= CX_TEST_LIST_MAX);
	REQUIRE_OK(mw_commit_fragments(s, mw_schema(), NULL, 0, &v, &err), &err);
	for (int i = 0; i < n; i++)
	{
		memset(id, i + 1, sizeof(id));
		cx_layout_fragment(id, key);
		REQUIRE_OK(cx_obj_put(s, key, "orphan", 6, CX_PUT_OVERWRITE, &err), &err);
	}
	REQUIRE_OK(cx_obj_list_entries(s, CX_FRAGMENT_PREFIX, collect_mtime,
								   &listed, &err), &err);
	REQUIRE(listed.n == n);
	/* the last one listed is the last written; a HEAD has second
	 * precision on S3 and Azure, a listing at least that */
	REQUIRE_OK(cx_obj_mtime(s, key, &head_mtime, &err), &err);
	CHECK(listed.mtime_us[n - 1] / 1000000 == head_mtime / 1000000);
	CHECK(cx_test_written_lately(s, key));

	heads = s->stats.heads;
	cx_gc_options_default(&o);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_listed == (uint64_t) n + 1 && res.objects_garbage == 0);
	o.grace_us = 0;
	o.batch = 6;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_deleted == (uint64_t) n && res.bytes_deleted == (uint64_t) n * 6);
	CHECK(!cx_test_holds(s, key, "orphan", 6));
	CHECK(s->stats.heads == heads);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_listed == 1 && res.objects_garbage == 0);
}
