/*
 * test_objstore.c — the object-store layer and its local-filesystem backend:
 * keys, URIs, put-if-absent, ranged reads, listings, streaming uploads,
 * temporary files, accounting and racing writers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/cx_failpoint.h"
#include "table/cx_manifest.h"
#include "objstore/cx_http.h"
#include "objstore/cx_objstore.h"
#include "cx_test.h"
#include "cx_test_emu.h"

#define MAX_LISTED 32

typedef struct listed
{
	int			n;
	int			stop_after;		/* 0: never stop early */
	char		keys[MAX_LISTED][128];
	uint64_t	sizes[MAX_LISTED];
} listed;

static bool
collect(void *arg, const char *key, uint64_t size)
{
	listed	   *l = arg;

	if (l->n < MAX_LISTED)
	{
		snprintf(l->keys[l->n], sizeof(l->keys[0]), "%s", key);
		l->sizes[l->n] = size;
	}
	l->n++;
	return l->stop_after == 0 || l->n < l->stop_after;
}

/* Lists prefix and returns the keys joined with spaces, in a static buffer. */
static const char *
list_str(cx_objstore *s, const char *prefix)
{
	static char out[2048];
	listed		l = {0};
	cx_err		err;

	if (cx_obj_list(s, prefix, collect, &l, &err) != CX_OK)
	{
		snprintf(out, sizeof(out), "ERROR %s", err.msg);
		return out;
	}
	out[0] = '\0';
	for (int i = 0; i < l.n && i < MAX_LISTED; i++)
	{
		if (i > 0)
			strcat(out, " ");
		strcat(out, l.keys[i]);
	}
	return out;
}

static int	temp_files_seen;

static int
count_temp(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	if (strstr(path + ftw->base, ".tmp.") != NULL)
		temp_files_seen++;
	return 0;
}

/* Temporary files anywhere under the test's directory. */
static int
temp_files_left(void)
{
	temp_files_seen = 0;
	nftw(cx_test_tmpdir(), count_temp, 16, FTW_PHYS);
	return temp_files_seen;
}

static bool
path_exists(const char *suffix)
{
	char		path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", cx_test_tmpdir(), suffix);
	return lstat(path, &st) == 0;
}

static cx_code
put_str(cx_objstore *s, const char *key, const char *val, cx_put_mode mode,
		cx_err *err)
{
	return cx_obj_put(s, key, val, strlen(val), mode, err);
}

/* True if key holds exactly val. */
static bool
holds(cx_objstore *s, const char *key, const char *val)
{
	cx_buf		b;
	cx_err		err;
	bool		ok;

	cx_buf_init(&b);
	ok = cx_obj_get(s, key, &b, &err) == CX_OK && b.len == strlen(val) &&
		memcmp(b.data, val, b.len) == 0;
	cx_buf_free(&b);
	return ok;
}

CX_TEST(objstore_put_get_round_trip)
{
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint8_t		data[70000];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t) (i * 31 + 7);
	/* The root does not exist yet, nor do its parents. */
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/deep/er/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "a/b/c.bin", data, sizeof(data), CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "empty", "", 0, CX_PUT_OVERWRITE, &err), &err);

	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, "a/b/c.bin", &b, &err), &err);
	CHECK(b.len == sizeof(data) && memcmp(b.data, data, sizeof(data)) == 0);
	/* The buffer is reset, not appended to. */
	REQUIRE_OK(cx_obj_get(s, "empty", &b, &err), &err);
	CHECK(b.len == 0);
	cx_buf_free(&b);
	CHECK(path_exists("/deep/er/store/a/b/c.bin"));
	cx_obj_close(s);
}

CX_TEST(objstore_put_if_absent_and_overwrite)
{
	cx_objstore *s;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "_versions/1.manifest", "first", CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(put_str(s, "_versions/1.manifest", "second", CX_PUT_IF_ABSENT, &err),
			   CX_ERR_EXISTS);
	CHECK(err.code == CX_ERR_EXISTS);
	CHECK(strstr(err.msg, "put file://") == err.msg);
	CHECK(strstr(err.msg, "/_versions/1.manifest: ") != NULL);
	CHECK(holds(s, "_versions/1.manifest", "first"));
	CHECK(temp_files_left() == 0);

	REQUIRE_OK(put_str(s, "_versions/1.manifest", "third, longer", CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds(s, "_versions/1.manifest", "third, longer"));
	REQUIRE_OK(put_str(s, "_versions/1.manifest", "4", CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds(s, "_versions/1.manifest", "4"));
	REQUIRE_OK(put_str(s, "fresh", "x", CX_PUT_OVERWRITE, &err), &err);
	CHECK(holds(s, "fresh", "x"));
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_ranged_get)
{
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "r", "0123456789", CX_PUT_IF_ABSENT, &err), &err);
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get_range(s, "r", 2, 3, &b, &err), &err);
	CHECK(b.len == 3 && memcmp(b.data, "234", 3) == 0);
	REQUIRE_OK(cx_obj_get_range(s, "r", 7, SIZE_MAX, &b, &err), &err);
	CHECK(b.len == 3 && memcmp(b.data, "789", 3) == 0);
	/* Past the end: fewer bytes, or none, and no error. */
	REQUIRE_OK(cx_obj_get_range(s, "r", 8, 100, &b, &err), &err);
	CHECK(b.len == 2 && memcmp(b.data, "89", 2) == 0);
	REQUIRE_OK(cx_obj_get_range(s, "r", 10, 5, &b, &err), &err);
	CHECK(b.len == 0);
	REQUIRE_OK(cx_obj_get_range(s, "r", 1000, SIZE_MAX, &b, &err), &err);
	CHECK(b.len == 0);
	REQUIRE_OK(cx_obj_get_range(s, "r", 0, 0, &b, &err), &err);
	CHECK(b.len == 0);
	CHECK_CODE(cx_obj_get_range(s, "nope", 0, 1, &b, &err), CX_ERR_NOT_FOUND);
	cx_buf_free(&b);
	cx_obj_close(s);
}

CX_TEST(objstore_head_and_missing_objects)
{
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size = 0;
	char		want[4300];

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/st"), NULL, 0, &s, &err), &err);
	/* Nothing at all yet, not even the root. */
	CHECK_CODE(cx_obj_head(s, "x", &size, &err), CX_ERR_NOT_FOUND);
	REQUIRE_OK(put_str(s, "dir/obj", "12345", CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(cx_obj_head(s, "dir/obj", &size, &err), &err);
	CHECK(size == 5);

	cx_buf_init(&b);
	CHECK_CODE(cx_obj_get(s, "_versions/7.manifest", &b, &err), CX_ERR_NOT_FOUND);
	snprintf(want, sizeof(want), "get file://%s/st/_versions/7.manifest: No such file or directory",
			 cx_test_tmpdir());
	CHECK(strcmp(err.msg, want) == 0);
	/* A directory of other keys is not an object, nor is a key below one. */
	CHECK_CODE(cx_obj_get(s, "dir", &b, &err), CX_ERR_NOT_FOUND);
	CHECK_CODE(cx_obj_head(s, "dir", &size, &err), CX_ERR_NOT_FOUND);
	CHECK_CODE(cx_obj_get(s, "dir/obj/under", &b, &err), CX_ERR_NOT_FOUND);
	CHECK_CODE(cx_obj_head(s, "dir/obj/under", &size, &err), CX_ERR_NOT_FOUND);
	cx_buf_free(&b);
	cx_obj_close(s);
}

CX_TEST(objstore_list_order_and_prefixes)
{
	const char *keys[] = {"b", "a/y/z", "_versions/0010.manifest", "ab",
		"_versions/0001.manifest", "a/x", "a.b", "_versions/0002.manifest"};
	cx_objstore *s;
	cx_err		err;
	listed		l = {0};

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	/* Listing a store nobody wrote to yet is empty, not an error. */
	CHECK(strcmp(list_str(s, ""), "") == 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		REQUIRE_OK(put_str(s, keys[i], keys[i], CX_PUT_IF_ABSENT, &err), &err);

	/* Byte order of whole keys: '.' < '/' < 'b', '_' < 'a'. */
	CHECK(strcmp(list_str(s, ""),
				 "_versions/0001.manifest _versions/0002.manifest "
				 "_versions/0010.manifest a.b a/x a/y/z ab b") == 0);
	/* A prefix is a key prefix, not a directory. */
	CHECK(strcmp(list_str(s, "_versions/000"),
				 "_versions/0001.manifest _versions/0002.manifest") == 0);
	CHECK(strcmp(list_str(s, "_versions/"),
				 "_versions/0001.manifest _versions/0002.manifest "
				 "_versions/0010.manifest") == 0);
	CHECK(strcmp(list_str(s, "_ver"),
				 "_versions/0001.manifest _versions/0002.manifest "
				 "_versions/0010.manifest") == 0);
	CHECK(strcmp(list_str(s, "a"), "a.b a/x a/y/z ab") == 0);
	CHECK(strcmp(list_str(s, "a/"), "a/x a/y/z") == 0);
	CHECK(strcmp(list_str(s, "a/y"), "a/y/z") == 0);
	CHECK(strcmp(list_str(s, "a/y/z"), "a/y/z") == 0);
	CHECK(strcmp(list_str(s, "zzz"), "") == 0);
	CHECK(strcmp(list_str(s, "no/such/dir/"), "") == 0);
	CHECK(strcmp(list_str(s, "b/"), "") == 0);	/* b is an object */

	/* Sizes come along, and returning false stops the listing early. */
	l.stop_after = 2;
	REQUIRE_OK(cx_obj_list(s, "", collect, &l, &err), &err);
	CHECK(l.n == 2);
	CHECK(l.sizes[0] == strlen("_versions/0001.manifest"));
	cx_obj_close(s);
}

CX_TEST(objstore_temp_files_are_hidden_and_reserved)
{
	const char *tmpnames[] = {"/.k.tmp.0123456789abcdef", "/d/.x.tmp.fedcba9876543210"};
	cx_objstore *s;
	cx_err		err;
	char		path[4200];

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "d/real", "r", CX_PUT_IF_ABSENT, &err), &err);
	/* Leftovers of a writer that crashed between create and publish. */
	for (int i = 0; i < 2; i++)
	{
		int			fd;

		snprintf(path, sizeof(path), "%s%s", cx_test_tmpdir(), tmpnames[i]);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		REQUIRE(fd >= 0);
		close(fd);
	}
	CHECK(strcmp(list_str(s, ""), "d/real") == 0);
	CHECK(strcmp(list_str(s, ".k"), "") == 0);
	CHECK(strcmp(list_str(s, "d/.x"), "") == 0);
	/* Keys of that shape are refused, so no object can hide that way. */
	CHECK_CODE(put_str(s, "d/.x.tmp.0000000000000000", "v", CX_PUT_OVERWRITE, &err),
			   CX_ERR_INVALID);
	/* Similar names that are not temporary names are ordinary keys. */
	REQUIRE_OK(put_str(s, ".hidden.tmp.notes", "v", CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(put_str(s, "..a", "v", CX_PUT_OVERWRITE, &err), &err);
	CHECK(strcmp(list_str(s, ""), "..a .hidden.tmp.notes d/real") == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_delete_is_idempotent_and_narrow)
{
	cx_objstore *s;
	cx_err		err;
	uint64_t	size;

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "g/1", "a", CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(put_str(s, "g/2", "b", CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "g/1", &err), &err);
	CHECK_CODE(cx_obj_head(s, "g/1", &size, &err), CX_ERR_NOT_FOUND);
	REQUIRE_OK(cx_obj_delete(s, "g/1", &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "never/was", &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "g/2/below", &err), &err);
	/* Deleting a "key" that is a directory of keys removes nothing. */
	REQUIRE_OK(cx_obj_delete(s, "g", &err), &err);
	CHECK(holds(s, "g/2", "b"));
	CHECK(strcmp(list_str(s, ""), "g/2") == 0);
	/* A deleted key can be created again with put-if-absent. */
	REQUIRE_OK(put_str(s, "g/1", "again", CX_PUT_IF_ABSENT, &err), &err);
	CHECK(holds(s, "g/1", "again"));
	cx_obj_close(s);
}

CX_TEST(objstore_key_validation)
{
	const char *bad[] = {"../x", "/abs", "a//b", "a/./b", "", "a\\b", ".", "..",
		"a/..", "a/", "./a", "a/../../x"};
	const char *good[] = {"a", "a/b.c", "..a", ".hidden", "a..b", "a/b/c/d",
	"_versions/00000000000000000001.manifest"};
	char		longkey[CX_KEY_MAX + 2];
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		CHECK_CODE(cx_key_validate(bad[i], &err), CX_ERR_INVALID);
		CHECK(strstr(err.msg, "invalid key") == err.msg);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_CODE(cx_key_validate(good[i], &err), CX_OK);
	CHECK_CODE(cx_key_validate(NULL, &err), CX_ERR_INVALID);
	memset(longkey, 'k', CX_KEY_MAX);
	longkey[CX_KEY_MAX] = '\0';
	CHECK_CODE(cx_key_validate(longkey, &err), CX_OK);
	longkey[CX_KEY_MAX] = 'k';
	longkey[CX_KEY_MAX + 1] = '\0';
	CHECK_CODE(cx_key_validate(longkey, &err), CX_ERR_INVALID);
	CHECK(strlen(err.msg) < 300);	/* the key is shortened in messages */

	/* Through the wrappers: refused before anything touches the disk. */
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	cx_buf_init(&b);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		CHECK_CODE(put_str(s, bad[i], "evil", CX_PUT_OVERWRITE, &err), CX_ERR_INVALID);
		CHECK(strstr(err.msg, "put file://") == err.msg);
		CHECK(strstr(err.msg, ": invalid key: ") != NULL);
		CHECK_CODE(cx_obj_get(s, bad[i], &b, &err), CX_ERR_INVALID);
		CHECK_CODE(cx_obj_head(s, bad[i], &size, &err), CX_ERR_INVALID);
		CHECK_CODE(cx_obj_delete(s, bad[i], &err), CX_ERR_INVALID);
	}
	CHECK_CODE(put_str(s, longkey, "v", CX_PUT_OVERWRITE, &err), CX_ERR_INVALID);
	cx_buf_free(&b);
	CHECK(!path_exists("/x"));
	CHECK(!path_exists("/store"));
	CHECK(s->stats.puts == 0 && s->stats.gets == 0 && s->stats.deletes == 0);

	/* Prefixes may be empty or end in '/', but must not escape either. */
	CHECK(strcmp(list_str(s, ""), "") == 0);
	CHECK(strcmp(list_str(s, "a/"), "") == 0);
	CHECK(strncmp(list_str(s, "/"), "ERROR list file://", 18) == 0);
	CHECK(strncmp(list_str(s, "../"), "ERROR ", 6) == 0);
	CHECK(strncmp(list_str(s, ".."), "ERROR ", 6) == 0);
	CHECK(strncmp(list_str(s, "a//"), "ERROR ", 6) == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_key_colliding_with_directory_layout)
{
	cx_objstore *s;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "p/q", "v", CX_PUT_IF_ABSENT, &err), &err);
	/* "p" is a directory here, and "p/q" an object: neither can change kind. */
	CHECK_CODE(put_str(s, "p", "v", CX_PUT_IF_ABSENT, &err), CX_ERR_INVALID);
	CHECK_CODE(put_str(s, "p", "v", CX_PUT_OVERWRITE, &err), CX_ERR_INVALID);
	CHECK_CODE(put_str(s, "p/q/r", "v", CX_PUT_IF_ABSENT, &err), CX_ERR_INVALID);
	CHECK(holds(s, "p/q", "v"));
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_uri_parsing)
{
	cx_option	opt = {"region", "eu-west-1"};
	cx_objstore *s;
	cx_err		err;
	char		uri[4200];

	CHECK_CODE(cx_objstore_open("file://relative/path", NULL, 0, &s, &err), CX_ERR_INVALID);
	CHECK(s == NULL);
	CHECK(strstr(err.msg, "absolute") != NULL);
	CHECK_CODE(cx_objstore_open("file://", NULL, 0, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open("", NULL, 0, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open(NULL, NULL, 0, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open("/just/a/path", NULL, 0, &s, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_objstore_open("https://user:hunter2@example.com/x", NULL, 0, &s, &err),
			   CX_ERR_INVALID);
	CHECK(strstr(err.msg, "file://, s3://, az://") != NULL);
	CHECK(strstr(err.msg, "\"https\"") != NULL);
	CHECK(strstr(err.msg, "hunter2") == NULL);
	/* Cloud options are ignored by file:// stores; unknown names are not. */
	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), &opt, 1, &s, &err), &err);
	cx_obj_close(s);
	opt.name = "regoin";
	CHECK_CODE(cx_objstore_open(cx_test_uri(""), &opt, 1, &s, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "\"regoin\"") != NULL && strstr(err.msg, "region") != NULL);
	CHECK_CODE(cx_objstore_open_local("relative", &s, &err), CX_ERR_INVALID);

	/* Trailing slashes are dropped, so messages join with exactly one. */
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/s//"), NULL, 0, &s, &err), &err);
	snprintf(uri, sizeof(uri), "file://%s/s", cx_test_tmpdir());
	CHECK(strcmp(s->uri, uri) == 0);
	REQUIRE_OK(put_str(s, "k", "v", CX_PUT_IF_ABSENT, &err), &err);
	CHECK(path_exists("/s/k"));
	cx_obj_close(s);
	cx_obj_close(NULL);
}

/* Whether uri canonicalises to want (NULL: is refused as invalid). */
static bool
canonical_is(const char *uri, const char *want)
{
	char	   *got = NULL;
	cx_err		err;
	cx_code		rc = cx_uri_canonical(uri, &got, &err);
	bool		ok;

	if (want == NULL)
		return rc == CX_ERR_INVALID && got == NULL;
	ok = rc == CX_OK && strcmp(got, want) == 0;
	if (!ok)
		fprintf(stderr, "  %s -> %s (want %s)\n", uri, rc == CX_OK ? got : err.msg, want);
	free(got);
	return ok;
}

/* Every spelling of one store has one canonical URI: what the writer, the
 * caches and the stats key on. */
CX_TEST(objstore_uri_canonical_spellings)
{
	const char *const same_file[] = {
		"file:///x/ts", "file:///x/ts/", "file:///x/./ts", "file:///x//ts",
		"FILE:///x/ts", "file:////x/ts///", "file:///./x/ts/.",
	};
	cx_err		err;
	char	   *got;

	for (size_t i = 0; i < sizeof(same_file) / sizeof(same_file[0]); i++)
		CHECK(canonical_is(same_file[i], "file:///x/ts"));
	CHECK(canonical_is("s3://bucket//ctx/", "s3://bucket/ctx"));
	CHECK(canonical_is("S3://bucket/a//b/./c/", "s3://bucket/a/b/c"));
	CHECK(canonical_is("s3://bucket", "s3://bucket"));
	CHECK(canonical_is("s3://bucket/", "s3://bucket"));
	CHECK(canonical_is("az://container///p", "az://container/p"));
	CHECK(canonical_is("Az://container/p/", "az://container/p"));

	/* ".." walks, the root is no store's directory, a bucket is needed. */
	CHECK(canonical_is("file:///x/../ts", NULL));
	CHECK(canonical_is("file:///x/ts/..", NULL));
	CHECK(canonical_is("s3://bucket/a/../b", NULL));
	CHECK(canonical_is("az://c/..", NULL));
	CHECK(canonical_is("file:///", NULL));
	CHECK(canonical_is("file://///./", NULL));
	CHECK(canonical_is("file://x", NULL));
	CHECK(canonical_is("s3:///prefix", NULL));
	CHECK(canonical_is("s3://../p", NULL));
	CHECK(canonical_is("az://", NULL));
	CHECK(canonical_is("http://h/x", NULL));
	CHECK(canonical_is("", NULL));
	/* Dots that are not a whole segment are names like any other. */
	CHECK(canonical_is("file:///x/..ts/.a", "file:///x/..ts/.a"));

	CHECK_CODE(cx_uri_canonical("file:///a/../b", &got, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "\"..\"") != NULL);
	CHECK_CODE(cx_uri_canonical("file:///", &got, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "root") != NULL);
}

/* Opening a store under any spelling gives the canonical URI, and the same
 * objects. */
CX_TEST(objstore_open_any_spelling_one_store)
{
	char		spelled[4200];
	char		want[4200];
	cx_objstore *a;
	cx_objstore *b;
	cx_err		err;
	cx_buf		got;

	cx_buf_init(&got);
	snprintf(spelled, sizeof(spelled), "file://%s//./st/", cx_test_tmpdir());
	snprintf(want, sizeof(want), "file://%s/st", cx_test_tmpdir());
	REQUIRE_OK(cx_objstore_open(spelled, NULL, 0, &a, &err), &err);
	CHECK(strcmp(a->uri, want) == 0);
	REQUIRE_OK(cx_objstore_open(want, NULL, 0, &b, &err), &err);
	REQUIRE_OK(put_str(a, "k", "v", CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(cx_obj_get(b, "k", &got, &err), &err);
	CHECK(got.len == 1 && got.data[0] == 'v');
	cx_buf_free(&got);
	cx_obj_close(a);
	cx_obj_close(b);
	snprintf(spelled, sizeof(spelled), "file://%s/x/../st", cx_test_tmpdir());
	CHECK_CODE(cx_objstore_open(spelled, NULL, 0, &a, &err), CX_ERR_INVALID);
	CHECK(a == NULL);
}

CX_TEST(objstore_streaming_upload)
{
	cx_objstore *s;
	cx_upload  *up;
	cx_err		err;
	cx_buf		b;
	uint8_t		chunk[65536];
	const int	nchunks = 20;

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_upload_begin(s, "frag/big", CX_PUT_IF_ABSENT, &up, &err), &err);
	for (int i = 0; i < nchunks; i++)
	{
		memset(chunk, 'a' + i, sizeof(chunk));
		REQUIRE_OK(cx_obj_upload_write(up, chunk, sizeof(chunk), &err), &err);
	}
	CHECK(up->written == (uint64_t) nchunks * sizeof(chunk));
	/* Not visible until published. */
	CHECK(strcmp(list_str(s, ""), "") == 0);
	REQUIRE_OK(cx_obj_upload_finish(up, &err), &err);
	CHECK(s->stats.puts == 1);
	CHECK(s->stats.bytes_written == (uint64_t) nchunks * sizeof(chunk));

	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, "frag/big", &b, &err), &err);
	REQUIRE(b.len == (size_t) nchunks * sizeof(chunk));
	for (int i = 0; i < nchunks; i++)
		CHECK(b.data[(size_t) i * sizeof(chunk)] == 'a' + i &&
			  b.data[(size_t) (i + 1) * sizeof(chunk) - 1] == 'a' + i);
	cx_buf_free(&b);

	/* A losing upload reports "exists" only at finish and changes nothing. */
	REQUIRE_OK(cx_obj_upload_begin(s, "frag/big", CX_PUT_IF_ABSENT, &up, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "loser", 5, &err), &err);
	CHECK_CODE(cx_obj_upload_finish(up, &err), CX_ERR_EXISTS);
	CHECK(strstr(err.msg, "/frag/big: ") != NULL);
	CHECK(holds(s, "frag/big", "") == false);
	CHECK(s->stats.bytes_written == (uint64_t) nchunks * sizeof(chunk));

	/* An aborted upload leaves nothing. */
	REQUIRE_OK(cx_obj_upload_begin(s, "frag/aborted", CX_PUT_OVERWRITE, &up, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "partial", 7, &err), &err);
	cx_obj_upload_abort(up);
	cx_obj_upload_abort(NULL);
	CHECK(!path_exists("/frag/aborted"));
	CHECK(strcmp(list_str(s, ""), "frag/big") == 0);

	/* Overwrite through an upload replaces the object. */
	REQUIRE_OK(cx_obj_upload_begin(s, "frag/big", CX_PUT_OVERWRITE, &up, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "small", 5, &err), &err);
	REQUIRE_OK(cx_obj_upload_finish(up, &err), &err);
	CHECK(holds(s, "frag/big", "small"));
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_failed_write_leaves_no_temp_file)
{
	struct rlimit old;
	struct rlimit small;
	void		(*old_handler) (int);
	cx_objstore *s;
	cx_err		err;
	cx_upload  *up;
	static uint8_t big[16384];
	cx_code		rc;

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "keep", "old", CX_PUT_IF_ABSENT, &err), &err);
	/* A file-size limit makes write() fail (EFBIG) part-way through. */
	/* Only the soft limit: an unprivileged process cannot raise the hard one
	 * back afterwards. */
	REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
	small = old;
	small.rlim_cur = 4096;
	old_handler = signal(SIGXFSZ, SIG_IGN);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
	rc = cx_obj_put(s, "keep", big, sizeof(big), CX_PUT_OVERWRITE, &err);
	if (cx_obj_upload_begin(s, "streamed", CX_PUT_IF_ABSENT, &up, &err) == CX_OK)
	{
		if (cx_obj_upload_write(up, big, sizeof(big), &err) == CX_OK)
			cx_obj_upload_finish(up, &err);
		else
			cx_obj_upload_abort(up);
	}
	REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
	signal(SIGXFSZ, old_handler);

	CHECK(rc == CX_ERR_IO);
	CHECK(err.code == CX_ERR_IO);
	CHECK(holds(s, "keep", "old"));
	CHECK(!path_exists("/streamed"));
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_stats_count_requests_and_bytes)
{
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;

	REQUIRE_OK(cx_objstore_open(cx_test_uri(""), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "s/1", "hello", CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(put_str(s, "s/1", "again", CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, "s/1", &b, &err), &err);
	REQUIRE_OK(cx_obj_get_range(s, "s/1", 1, 2, &b, &err), &err);
	CHECK_CODE(cx_obj_get(s, "s/missing", &b, &err), CX_ERR_NOT_FOUND);
	cx_buf_free(&b);
	REQUIRE_OK(cx_obj_head(s, "s/1", &size, &err), &err);
	list_str(s, "s/");
	REQUIRE_OK(cx_obj_delete(s, "s/1", &err), &err);

	/* Every dispatched request counts; only successful payloads add bytes. */
	CHECK(s->stats.puts == 2);
	CHECK(s->stats.bytes_written == 5);
	CHECK(s->stats.gets == 3);
	CHECK(s->stats.bytes_read == 7);
	CHECK(s->stats.heads == 1);
	CHECK(s->stats.lists == 1);
	CHECK(s->stats.deletes == 1);
	CHECK(s->stats.retries == 0 && s->stats.connections == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_random_bytes)
{
	uint8_t		a[32] = {0};
	uint8_t		b[32] = {0};
	uint8_t    *big = malloc(1 << 20);
	cx_err		err;

	REQUIRE(big != NULL);
	REQUIRE_OK(cx_random_bytes(a, sizeof(a), &err), &err);
	REQUIRE_OK(cx_random_bytes(b, sizeof(b), &err), &err);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	/* More than one getrandom() call returns. */
	REQUIRE_OK(cx_random_bytes(big, 1 << 20, &err), &err);
	REQUIRE_OK(cx_random_bytes(big, 0, &err), &err);
	free(big);
}

#define RACERS 8
#define RACE_ROUNDS 16

typedef struct racer
{
	pthread_barrier_t *start;
	const char *uri;
	char		key[32];
	int			id;
	cx_code		rc;
} racer;

static void *
race_put(void *arg)
{
	racer	   *r = arg;
	cx_objstore *s;
	cx_err		err;
	char		val[32];

	/* A handle per thread: handles are single-threaded. */
	r->rc = cx_objstore_open(r->uri, NULL, 0, &s, &err);
	pthread_barrier_wait(r->start);
	if (r->rc != CX_OK)
		return NULL;
	snprintf(val, sizeof(val), "writer %d", r->id);
	r->rc = put_str(s, r->key, val, CX_PUT_IF_ABSENT, &err);
	cx_obj_close(s);
	return NULL;
}

/* RACERS threads put-if-absent one key, RACE_ROUNDS times: one wins. */
static void
race_threads(const char *where)
{
	cx_objstore *s;
	cx_err		err;
	char		uri[4200];

	snprintf(uri, sizeof(uri), "%s", cx_test_uri(where));
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	for (int round = 0; round < RACE_ROUNDS; round++)
	{
		pthread_barrier_t start;
		pthread_t	th[RACERS];
		racer		r[RACERS];
		int			wins = 0;
		int			exists = 0;
		int			winner = -1;
		char		val[32];

		pthread_barrier_init(&start, NULL, RACERS);
		for (int i = 0; i < RACERS; i++)
		{
			r[i].start = &start;
			r[i].uri = uri;
			/* Fresh directories too, so the racers also race mkdir. */
			snprintf(r[i].key, sizeof(r[i].key), "r%d/_versions/1", round);
			r[i].id = i;
			REQUIRE(pthread_create(&th[i], NULL, race_put, &r[i]) == 0);
		}
		for (int i = 0; i < RACERS; i++)
		{
			pthread_join(th[i], NULL);
			if (r[i].rc == CX_OK)
			{
				wins++;
				winner = i;
			}
			else if (r[i].rc == CX_ERR_EXISTS)
				exists++;
		}
		pthread_barrier_destroy(&start);
		CHECK(wins == 1 && exists == RACERS - 1);
		snprintf(val, sizeof(val), "writer %d", winner);
		CHECK(holds(s, r[0].key, val));
	}
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);
}

CX_TEST(objstore_racing_threads_one_put_if_absent_wins)
{
	race_threads("/race");
}

/*
 * Where O_TMPFILE is unsupported, put-if-absent writes a temporary name and
 * link()s it: the same guarantees, and no temporary file left behind.  The
 * failpoint makes a store take that path.
 */
CX_TEST(objstore_put_if_absent_without_tmpfile)
{
	cx_objstore *s;
	cx_err		err;
	cx_upload  *up;
	uint64_t	hits;

	REQUIRE_OK(cx_failpoint_set("local.no_tmpfile=error", &err), &err);
	hits = cx_failpoint_hits("local.no_tmpfile");
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/fallback"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_str(s, "a/_versions/1", "first", CX_PUT_IF_ABSENT, &err), &err);
	CHECK(cx_failpoint_hits("local.no_tmpfile") == hits + 1);
	CHECK_CODE(put_str(s, "a/_versions/1", "second", CX_PUT_IF_ABSENT, &err),
			   CX_ERR_EXISTS);
	CHECK(holds(s, "a/_versions/1", "first"));
	/* The store remembers: the failpoint is not reached again. */
	REQUIRE_OK(cx_obj_upload_begin(s, "a/streamed", CX_PUT_IF_ABSENT, &up, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "abc", 3, &err), &err);
	REQUIRE_OK(cx_obj_upload_write(up, "def", 3, &err), &err);
	REQUIRE_OK(cx_obj_upload_finish(up, &err), &err);
	CHECK(holds(s, "a/streamed", "abcdef"));
	CHECK(cx_failpoint_hits("local.no_tmpfile") == hits + 1);
	CHECK(strcmp(list_str(s, ""), "a/_versions/1 a/streamed") == 0);
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);

	race_threads("/fallback-race");
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
}

/* Uploads larger than the local store's write buffer, written in pieces of
 * every size, arrive whole. */
CX_TEST(objstore_upload_pieces_across_the_write_buffer)
{
	cx_objstore *s;
	cx_err		err;
	cx_upload  *up;
	cx_buf		b;
	size_t		total = 0;
	size_t		sizes[] = {1, 65535, 2, 70000, 0, 65536, 3, 131072, 17};
	static uint8_t src[400000];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t) (i * 7 + i / 251);
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/pieces"), NULL, 0, &s, &err), &err);
	for (int mode = 0; mode < 2; mode++)
	{
		const char *key = mode == 0 ? "absent" : "overwrite";

		total = 0;
		REQUIRE_OK(cx_obj_upload_begin(s, key, mode == 0 ? CX_PUT_IF_ABSENT : CX_PUT_OVERWRITE,
									   &up, &err), &err);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		{
			REQUIRE_OK(cx_obj_upload_write(up, src + total, sizes[i], &err), &err);
			total += sizes[i];
		}
		REQUIRE_OK(cx_obj_upload_finish(up, &err), &err);
		cx_buf_init(&b);
		REQUIRE_OK(cx_obj_get(s, key, &b, &err), &err);
		CHECK(b.len == total && memcmp(b.data, src, total) == 0);
		cx_buf_free(&b);
	}
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);
}

/* Exit status of a racing child: 0 won, 1 lost cleanly, 2 anything else. */
static int
race_child(const char *uri, int go_fd, int id)
{
	cx_objstore *s;
	cx_err		err;
	char		val[32];
	char		c;
	cx_code		rc;

	if (cx_objstore_open(uri, NULL, 0, &s, &err) != CX_OK)
		return 2;
	/* Blocks until the parent closes the write end: a starting gun. */
	if (read(go_fd, &c, 1) != 0)
		return 2;
	snprintf(val, sizeof(val), "process %d", id);
	rc = put_str(s, "proc/_versions/1", val, CX_PUT_IF_ABSENT, &err);
	cx_obj_close(s);
	return rc == CX_OK ? 0 : rc == CX_ERR_EXISTS ? 1 : 2;
}

CX_TEST(objstore_racing_processes_one_put_if_absent_wins)
{
	char		uri[4200];
	pid_t		pids[RACERS];
	int			gun[2];
	int			wins = 0;
	int			losses = 0;
	int			winner = -1;
	cx_objstore *s;
	cx_err		err;
	char		val[32];

	snprintf(uri, sizeof(uri), "%s", cx_test_uri("/procs"));
	REQUIRE(pipe(gun) == 0);
	fflush(stdout);
	for (int i = 0; i < RACERS; i++)
	{
		pids[i] = fork();
		REQUIRE(pids[i] >= 0);
		if (pids[i] == 0)
		{
			close(gun[1]);
			_exit(race_child(uri, gun[0], i));
		}
	}
	close(gun[0]);
	close(gun[1]);
	for (int i = 0; i < RACERS; i++)
	{
		int			status;

		REQUIRE(waitpid(pids[i], &status, 0) == pids[i]);
		REQUIRE(WIFEXITED(status));
		if (WEXITSTATUS(status) == 0)
		{
			wins++;
			winner = i;
		}
		else if (WEXITSTATUS(status) == 1)
			losses++;
	}
	CHECK(wins == 1 && losses == RACERS - 1);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	snprintf(val, sizeof(val), "process %d", winner);
	CHECK(holds(s, "proc/_versions/1", val));
	CHECK(temp_files_left() == 0);
	cx_obj_close(s);
}

/*
 * The commit put into a store directory nobody may write, done as an
 * unprivileged user: root is not refused by file modes, so when the tests
 * run as root a child drops to "nobody" first.  Exits 0 if the put failed
 * at once as CX_ERR_PERMISSION, naming its key.
 */
static int
refused_by_file_mode(const char *uri)
{
	cx_objstore *s;
	cx_err		err;
	pid_t		pid = fork();
	int			status;

	if (pid == 0)
	{
		if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(2);
		if (cx_objstore_open(uri, NULL, 0, &s, &err) != CX_OK)
			_exit(3);
		cx_test_refused_commit(s, NULL, NULL, CX_ERR_PERMISSION);
		cx_obj_close(s);
		_exit(cx_test_failures() == 0 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Local errors retrying cannot fix fail at once with their own code and the
 * key, after one put: a read-only directory (file modes), and, injected
 * where a file system cannot be made to produce them, EACCES, EPERM, ENOSPC
 * and EROFS.  Before, each was CX_ERR_IO and the commit put tried 4 times.
 */
CX_TEST(local_refused_writes_fail_at_once)
{
	static const struct
	{
		const char *action;
		cx_code		expected;
	}			injected[] =
	{
		{"eacces", CX_ERR_PERMISSION},
		{"eperm", CX_ERR_PERMISSION},
		{"enospc", CX_ERR_NOSPACE},
		{"erofs", CX_ERR_IO_PERMANENT}
	};
	char		dir[PATH_MAX];
	char		spec[64];
	cx_objstore *s;
	cx_err		err;
	const char *uri = cx_test_uri("/ro");

	snprintf(dir, sizeof(dir), "%s/ro", cx_test_tmpdir());
	REQUIRE(mkdir(dir, 0555) == 0 && chmod(dir, 0555) == 0);
	REQUIRE(chmod(cx_test_tmpdir(), 0711) == 0);
	CHECK(refused_by_file_mode(uri) == 0);
	REQUIRE(chmod(dir, 0755) == 0);

	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	for (size_t i = 0; i < sizeof(injected) / sizeof(injected[0]); i++)
	{
		snprintf(spec, sizeof(spec), "local.open_upload=%s", injected[i].action);
		REQUIRE_OK(cx_failpoint_set(spec, &err), &err);
		cx_test_refused_commit(s, NULL, NULL, injected[i].expected);
		CHECK(cx_failpoint_hits("local.open_upload") == 1);
	}
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	cx_obj_close(s);
}

/*
 * A HEAD answer's Last-Modified that libcurl parses to a time beyond what
 * microseconds since 1970 can hold (year two million) is not valid, rather
 * than an overflowed modification time (found by fuzz_http_headers).
 */
CX_TEST(http_head_with_a_last_modified_out_of_range)
{
	static const char *const lines[] = {
		"HTTP/1.1 200 OK\r\n", "Content-Length: 4096\r\n",
		"Last-Modified: Tue, 01 Dec 2026010:00:00 GMT\r\n", "\r\n",
	};
	cx_http_headers h;
	uint64_t	size = 0;
	int64_t		mtime = 0;
	cx_err		err;

	cx_http_headers_init(&h);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		cx_http_header_line(&h, lines[i], strlen(lines[i]));
	CHECK(cx_http_headers_get(&h, "last-modified") != NULL);
	CHECK_CODE(cx_http_read_head(&h, &size, &mtime, &err), CX_ERR_IO);
	CHECK(strstr(err.msg, "Last-Modified") != NULL);
	CHECK_CODE(cx_http_read_head(&h, &size, NULL, &err), CX_OK);
	CHECK(size == 4096);
	cx_http_headers_free(&h);
}
