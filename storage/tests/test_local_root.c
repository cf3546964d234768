/*
 * test_local_root.c — the local store stays inside its root: symlinks and
 * hard links planted in a store, FIFOs, and ".." in keys never make it read,
 * write or remove anything outside.  Each planted-link test runs twice: with
 * openat2() (where the kernel has it) and with the segment-by-segment walk
 * that replaces it elsewhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cx_failpoint.h"
#include "objstore/cx_objstore.h"
#include "cx_test.h"
#include "cx_test_emu.h"

/* Where a run of a test puts its files, below the test's directory. */
static const char *run_dir = "";

/* "<test dir><run dir><suffix>" in buf. */
static const char *
test_path(char *buf, const char *suffix)
{
	snprintf(buf, PATH_MAX, "%s%s%s", cx_test_tmpdir(), run_dir, suffix);
	return buf;
}

/* Writes text to a file outside any store. */
static bool
write_file(const char *suffix, const char *text)
{
	char		path[PATH_MAX];
	FILE	   *f = fopen(test_path(path, suffix), "w");

	if (f == NULL)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

/* Whether the file holds exactly text. */
static bool
file_holds(const char *suffix, const char *text)
{
	char		path[PATH_MAX];
	char		got[256];
	FILE	   *f = fopen(test_path(path, suffix), "r");
	size_t		n;

	if (f == NULL)
		return false;
	n = fread(got, 1, sizeof(got) - 1, f);
	fclose(f);
	got[n] = '\0';
	return strcmp(got, text) == 0;
}

static bool
exists(const char *suffix)
{
	char		path[PATH_MAX];
	struct stat st;

	return lstat(test_path(path, suffix), &st) == 0;
}

/* Makes <run dir>/outside with a file "secret", and an empty store. */
static bool
make_outside_and_store(cx_objstore **s, cx_err *err)
{
	char		path[PATH_MAX];
	char		uri[PATH_MAX + 8];

	snprintf(uri, sizeof(uri), "file://%s", test_path(path, "/store"));
	return mkdir(test_path(path, "/outside"), 0777) == 0 &&
		write_file("/outside/secret", "outside") &&
		mkdir(test_path(path, "/store"), 0777) == 0 &&
		cx_objstore_open(uri, NULL, 0, s, err) == CX_OK;
}

static bool
plant_symlink(const char *target_suffix, const char *link_suffix)
{
	char		target[PATH_MAX];
	char		linkpath[PATH_MAX];

	return symlink(test_path(target, target_suffix),
				   test_path(linkpath, link_suffix)) == 0;
}

/* Whether the last error refused a link and named the key. */
static bool
refused(const cx_err *err, const char *key)
{
	return err->code == CX_ERR_CORRUPT && strstr(err->msg, key) != NULL;
}

static bool
list_nothing(void *arg, const char *key, uint64_t size)
{
	(void) arg;
	(void) key;
	(void) size;
	return true;
}

/*
 * Runs a planted-link test with openat2() and again, in a directory of its
 * own, with the walk.
 */
static void
both_resolvers(void (*test) (void))
{
	char		path[PATH_MAX];
	cx_err		err;

	run_dir = "";
	test();
	run_dir = "/walk";
	if (mkdir(test_path(path, ""), 0777) != 0 ||
		cx_failpoint_set("local.no_openat2=error", &err) != CX_OK)
		cx_test_fail(__FILE__, __LINE__, "cannot set up the walk's run");
	else
		test();
	run_dir = "";
	cx_failpoint_set("", &err);
}

/*
 * store/data -> outside: no read, write, delete or listing goes through it.
 * Also a link in a deeper directory (store/a/b -> outside).
 */
static void
symlinked_directory(void)
{
	char		path[PATH_MAX];
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;
	const char *keys[] = {"data/secret", "a/b/secret"};

	REQUIRE(make_outside_and_store(&s, &err));
	REQUIRE(plant_symlink("/outside", "/store/data"));
	REQUIRE(mkdir(test_path(path, "/store/a"), 0777) == 0);
	REQUIRE(plant_symlink("/outside", "/store/a/b"));
	cx_buf_init(&b);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
	{
		CHECK_CODE(cx_obj_get(s, keys[i], &b, &err), CX_ERR_CORRUPT);
		CHECK(refused(&err, keys[i]));
		CHECK(b.len == 0);
		CHECK_CODE(cx_obj_head(s, keys[i], &size, &err), CX_ERR_CORRUPT);
		CHECK_CODE(cx_obj_put(s, keys[i], "x", 1, CX_PUT_OVERWRITE, &err),
				   CX_ERR_CORRUPT);
		CHECK(refused(&err, keys[i]));
		CHECK_CODE(cx_obj_put(s, "data/new", "x", 1, CX_PUT_IF_ABSENT, &err),
				   CX_ERR_CORRUPT);
		CHECK_CODE(cx_obj_delete(s, keys[i], &err), CX_ERR_CORRUPT);
	}
	CHECK(file_holds("/outside/secret", "outside"));
	CHECK(!exists("/outside/new"));
	/* A listing below the link is refused; one above skips it. */
	CHECK_CODE(cx_obj_list(s, "data/", list_nothing, NULL, &err), CX_ERR_CORRUPT);
	CHECK_CODE(cx_obj_list(s, "a/b/", list_nothing, NULL, &err), CX_ERR_CORRUPT);
	cx_buf_free(&b);
	cx_obj_close(s);
}

CX_TEST(local_root_symlinked_directory_refused)
{
	both_resolvers(symlinked_directory);
}

/*
 * store/obj -> outside/secret: reads refuse it; an overwrite or a delete
 * replaces or removes the link itself, never the file it points at.
 */
static void
symlinked_object(void)
{
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;

	REQUIRE(make_outside_and_store(&s, &err));
	REQUIRE(plant_symlink("/outside/secret", "/store/obj"));
	REQUIRE(plant_symlink("/outside/secret", "/store/obj2"));
	cx_buf_init(&b);
	CHECK_CODE(cx_obj_get(s, "obj", &b, &err), CX_ERR_CORRUPT);
	CHECK(refused(&err, "obj"));
	CHECK(b.len == 0);
	CHECK_CODE(cx_obj_head(s, "obj", &size, &err), CX_ERR_CORRUPT);
	CHECK(refused(&err, "obj"));
	CHECK_CODE(cx_obj_put(s, "obj", "new", 3, CX_PUT_IF_ABSENT, &err),
			   CX_ERR_EXISTS);
	REQUIRE_OK(cx_obj_put(s, "obj", "new", 3, CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_obj_get(s, "obj", &b, &err), &err);
	CHECK(b.len == 3 && memcmp(b.data, "new", 3) == 0);
	REQUIRE_OK(cx_obj_delete(s, "obj2", &err), &err);
	CHECK(!exists("/store/obj2"));
	CHECK(file_holds("/outside/secret", "outside"));
	cx_buf_free(&b);
	cx_obj_close(s);
}

CX_TEST(local_root_symlinked_object_refused)
{
	both_resolvers(symlinked_object);
}

/*
 * A file in the store with a second name outside it (the hard link could
 * have been planted either way round) is refused by reads.
 */
CX_TEST(local_root_hard_link_refused)
{
	char		target[PATH_MAX];
	char		name[PATH_MAX];
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;

	REQUIRE(make_outside_and_store(&s, &err));
	REQUIRE(link(test_path(target, "/outside/secret"),
				 test_path(name, "/store/hl")) == 0);
	cx_buf_init(&b);
	CHECK_CODE(cx_obj_get(s, "hl", &b, &err), CX_ERR_CORRUPT);
	CHECK(refused(&err, "hl") && strstr(err.msg, "2 hard links") != NULL);
	CHECK(b.len == 0);
	CHECK_CODE(cx_obj_head(s, "hl", &size, &err), CX_ERR_CORRUPT);
	/* Once the other name is gone the object is the store's alone. */
	REQUIRE(unlink(target) == 0);
	REQUIRE_OK(cx_obj_get(s, "hl", &b, &err), &err);
	CHECK(b.len == 7 && memcmp(b.data, "outside", 7) == 0);
	cx_buf_free(&b);
	cx_obj_close(s);
}

/* A FIFO in an object's place is refused at once, not waited on. */
CX_TEST(local_root_fifo_refused_without_blocking)
{
	char		path[PATH_MAX];
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;

	REQUIRE(make_outside_and_store(&s, &err));
	REQUIRE(mkfifo(test_path(path, "/store/pipe"), 0666) == 0);
	cx_buf_init(&b);
	CHECK_CODE(cx_obj_get(s, "pipe", &b, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "not a regular file") != NULL);
	cx_buf_free(&b);
	cx_obj_close(s);
}

/*
 * The root's own path is the operator's: symlinks in it, or the root itself
 * a symlink, are followed.  Only what is below the root is checked.
 */
CX_TEST(local_root_reached_through_symlinks)
{
	char		path[PATH_MAX];
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;

	REQUIRE(mkdir(test_path(path, "/real"), 0777) == 0);
	REQUIRE(plant_symlink("/real", "/via"));
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/via/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "a/b/obj", "v", 1, CX_PUT_IF_ABSENT, &err), &err);
	cx_obj_close(s);
	CHECK(exists("/real/store/a/b/obj"));

	REQUIRE(plant_symlink("/real/store", "/rootlink"));
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/rootlink"), NULL, 0, &s, &err), &err);
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, "a/b/obj", &b, &err), &err);
	CHECK(b.len == 1 && b.data[0] == 'v');
	cx_buf_free(&b);
	cx_obj_close(s);
}

/* ".." never reaches the backend: every operation refuses it first. */
CX_TEST(local_root_dot_dot_keys_refused)
{
	const char *keys[] = {"..", "../outside/secret", "a/../../outside/secret",
	"a/.."};
	cx_objstore *s;
	cx_err		err;
	cx_buf		b;
	uint64_t	size;

	REQUIRE(make_outside_and_store(&s, &err));
	cx_buf_init(&b);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
	{
		CHECK_CODE(cx_obj_get(s, keys[i], &b, &err), CX_ERR_INVALID);
		CHECK_CODE(cx_obj_head(s, keys[i], &size, &err), CX_ERR_INVALID);
		CHECK_CODE(cx_obj_put(s, keys[i], "x", 1, CX_PUT_OVERWRITE, &err),
				   CX_ERR_INVALID);
		CHECK_CODE(cx_obj_delete(s, keys[i], &err), CX_ERR_INVALID);
	}
	CHECK_CODE(cx_obj_list(s, "../", list_nothing, NULL, &err), CX_ERR_INVALID);
	CHECK(file_holds("/outside/secret", "outside"));
	cx_buf_free(&b);
	cx_obj_close(s);
}

/* Descriptors this process has open. */
static int
open_fds(void)
{
	DIR		   *d = opendir("/proc/self/fd");
	int			n = 0;

	if (d == NULL)
		return -1;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/*
 * cx_obj_prepare_put makes the next put-if-absent's unnamed inode ahead:
 * it holds two descriptors (the inode and its directory) until a put into
 * that directory names it, shows in no listing, still refuses an existing
 * name, stays for its directory's put across a put elsewhere, and a put
 * whose directory went in between still lands.
 */
CX_TEST(local_prepared_put_names_the_spare_inode)
{
	char		path[PATH_MAX];
	cx_objstore *s;
	cx_err		err;
	int			base;
	uint64_t	size;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/prep"), NULL, 0, &s, &err), &err);
	base = open_fds();
	cx_obj_prepare_put(s, "d/k1");
	CHECK(open_fds() == base + 2);
	CHECK_CODE(cx_obj_head(s, "d/k1", &size, &err), CX_ERR_NOT_FOUND);
	REQUIRE_OK(cx_obj_put(s, "d/k1", "one", 3, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(open_fds() == base && cx_test_holds(s, "d/k1", "one", 3));

	cx_obj_prepare_put(s, "d/k1");
	CHECK_CODE(cx_obj_put(s, "d/k1", "two", 3, CX_PUT_IF_ABSENT, &err), CX_ERR_EXISTS);
	CHECK(open_fds() == base && cx_test_holds(s, "d/k1", "one", 3));

	cx_obj_prepare_put(s, "d/k2");
	REQUIRE_OK(cx_obj_put(s, "e/x", "ex", 2, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(open_fds() == base + 2 && cx_test_holds(s, "e/x", "ex", 2));
	REQUIRE_OK(cx_obj_put(s, "d/k2", "k2", 2, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(open_fds() == base && cx_test_holds(s, "d/k2", "k2", 2));

	cx_obj_prepare_put(s, "f/k");
	REQUIRE(rmdir(test_path(path, "/prep/f")) == 0);
	REQUIRE_OK(cx_obj_put(s, "f/k", "again", 5, CX_PUT_IF_ABSENT, &err), &err);
	CHECK(open_fds() == base && cx_test_holds(s, "f/k", "again", 5) && exists("/prep/f/k"));

	cx_obj_prepare_put(s, "g/k");
	cx_obj_close(s);
	CHECK(open_fds() == base);

	/* A store that finds O_TMPFILE unsupported at a put drops its spare
	 * and makes none again. */
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/prep"), NULL, 0, &s, &err), &err);
	cx_obj_prepare_put(s, "h/k");
	REQUIRE_OK(cx_failpoint_set("local.no_tmpfile=error", &err), &err);
	REQUIRE_OK(cx_obj_put(s, "h/k", "tmp", 3, CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	CHECK(cx_test_holds(s, "h/k", "tmp", 3) && open_fds() == base);
	cx_obj_prepare_put(s, "h/k2");
	CHECK(open_fds() == base);
	cx_obj_close(s);
}

/* Opens n stores, <test dir><prefix>/0 .. n-1, into s. */
static cx_code
open_stores(const char *prefix, cx_objstore **s, int n, cx_err *err)
{
	char		suffix[64];

	for (int i = 0; i < n; i++)
	{
		snprintf(suffix, sizeof(suffix), "%s/%d", prefix, i);
		if (cx_objstore_open(cx_test_uri(suffix), NULL, 0, &s[i], err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* Spares are bounded per process (16, the oldest giving way to a new one):
 * a writer preparing puts to many stores in turn holds 32 descriptors for
 * them, not two per store, and every put still lands. */
CX_TEST(local_prepared_puts_are_bounded_per_process)
{
	enum
	{
		STORES = 24
	};
	cx_objstore *s[STORES];
	cx_err		err;
	int			base = open_fds();

	REQUIRE_OK(open_stores("/many", s, STORES, &err), &err);
	for (int i = 0; i < STORES; i++)
		cx_obj_prepare_put(s[i], "d/k");
	CHECK(open_fds() == base + 2 * 16);
	for (int i = 0; i < STORES; i++)
	{
		REQUIRE_OK(cx_obj_put(s[i], "d/k", "v", 1, CX_PUT_IF_ABSENT, &err), &err);
		CHECK(cx_test_holds(s[i], "d/k", "v", 1));
		cx_obj_close(s[i]);
	}
	CHECK(open_fds() == base);
}

static ino_t
inode_of(const char *suffix)
{
	char		path[PATH_MAX];
	struct stat st;

	return stat(test_path(path, suffix), &st) == 0 ? st.st_ino : 0;
}

/* Whether ino is one of the n in set. */
static bool
holds_inode(const ino_t *set, int n, ino_t ino)
{
	for (int i = 0; i < n; i++)
		if (set[i] == ino)
			return true;
	return false;
}

/* The unnamed regular files this process holds open (spares), at most max
 * of them into set; returns how many there are. */
static int
unnamed_inodes(ino_t *set, int max)
{
	DIR		   *d = opendir("/proc/self/fd");
	struct dirent *e;
	struct stat st;
	int			n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && fstat(atoi(e->d_name), &st) == 0 &&
			S_ISREG(st.st_mode) && st.st_nlink == 0 &&
			!holds_inode(set, n < max ? n : max, st.st_ino))
		{
			if (n < max)
				set[n] = st.st_ino;
			n++;
		}
	closedir(d);
	return n;
}

/* Whether the process holds exactly the n unnamed inodes of want. */
static bool
holds_exactly(const ino_t *want, int n)
{
	ino_t		got[64];

	if (unnamed_inodes(got, 64) != n)
		return false;
	for (int i = 0; i < n; i++)
		if (!holds_inode(got, n, want[i]))
			return false;
	return true;
}

/*
 * A spare is never freed to make another on the same mount (freeing inodes
 * makes new ones slow to find on ext4 without a journal): a handle's spare
 * for a new directory, and a new spare with the table full, take an inode
 * already made.  A 17th store's spare is the 1st's inode, its put names
 * that inode, and the 1st store's put makes its own.
 */
CX_TEST(local_spare_inodes_move_instead_of_being_freed)
{
	enum
	{
		STORES = 17
	};
	cx_objstore *s[STORES];
	ino_t		made[STORES];
	char		suffix[32];
	cx_err		err;
	int			base = open_fds();

	REQUIRE_OK(open_stores("/move", s, STORES, &err), &err);
	cx_obj_prepare_put(s[0], "a/k");
	REQUIRE(unnamed_inodes(made, STORES) == 1);
	cx_obj_prepare_put(s[0], "d/k");	/* the handle's spare moves to d */
	CHECK(holds_exactly(made, 1) && open_fds() == base + 2);
	for (int i = 1; i < STORES - 1; i++)
		cx_obj_prepare_put(s[i], "d/k");
	REQUIRE(unnamed_inodes(made, STORES) == STORES - 1);
	cx_obj_prepare_put(s[STORES - 1], "d/k");	/* the table is full */
	CHECK(holds_exactly(made, STORES - 1) && open_fds() == base + 2 * (STORES - 1));

	REQUIRE_OK(cx_obj_put(s[STORES - 1], "d/k", "v", 1, CX_PUT_IF_ABSENT, &err), &err);
	snprintf(suffix, sizeof(suffix), "/move/%d/d/k", STORES - 1);
	CHECK(holds_inode(made, STORES - 1, inode_of(suffix)));
	for (int i = 0; i < STORES; i++)
	{
		if (i < STORES - 1)
			REQUIRE_OK(cx_obj_put(s[i], "d/k", "v", 1, CX_PUT_IF_ABSENT, &err), &err);
		CHECK(cx_test_holds(s[i], "d/k", "v", 1));
		cx_obj_close(s[i]);
	}
	CHECK(open_fds() == base && unnamed_inodes(made, STORES) == 0);
}

/*
 * A hint is written over one of its size in place (the same inode: no new
 * file, no rename), and put as any overwrite is when its size differs (the
 * new inode's number may be the old one's again: not checked).  A
 * hint with a second name outside the store is refused, not written
 * through.
 */
CX_TEST(local_hint_is_rewritten_in_place)
{
	char		path[PATH_MAX];
	char		outside[PATH_MAX];
	cx_objstore *s;
	cx_err		err;
	ino_t		first;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/hint"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "d/_latest", "0123456789abcdef", 16, CX_PUT_HINT, &err), &err);
	CHECK(cx_test_holds(s, "d/_latest", "0123456789abcdef", 16));
	first = inode_of("/hint/d/_latest");
	REQUIRE_OK(cx_obj_put(s, "d/_latest", "fedcba9876543210", 16, CX_PUT_HINT, &err), &err);
	CHECK(cx_test_holds(s, "d/_latest", "fedcba9876543210", 16));
	CHECK(first != 0 && inode_of("/hint/d/_latest") == first);
	REQUIRE_OK(cx_obj_put(s, "d/_latest", "short", 5, CX_PUT_HINT, &err), &err);
	CHECK(cx_test_holds(s, "d/_latest", "short", 5));

	REQUIRE(write_file("/hint-outside", "12345"));
	REQUIRE(unlink(test_path(path, "/hint/d/_latest")) == 0);
	REQUIRE(link(test_path(outside, "/hint-outside"), path) == 0);
	CHECK_CODE(cx_obj_put(s, "d/_latest", "54321", 5, CX_PUT_HINT, &err), CX_ERR_CORRUPT);
	CHECK(file_holds("/hint-outside", "12345"));
	cx_obj_close(s);
}

/*
 * ...but only into a directory of the inode's own project (ext4 and XFS
 * refuse links across projects with EXDEV): with the new spare's directory
 * of another project (failpoint local.spare_project), the oldest spare is
 * dropped and a new inode made, and the put names the new one.
 */
CX_TEST(local_spare_inodes_stay_within_their_project)
{
	enum
	{
		STORES = 17
	};
	cx_objstore *s[STORES];
	ino_t		made[STORES];
	char		suffix[32];
	cx_err		err;

	REQUIRE_OK(open_stores("/project", s, STORES, &err), &err);
	for (int i = 0; i < STORES - 1; i++)
		cx_obj_prepare_put(s[i], "d/k");
	REQUIRE(unnamed_inodes(made, STORES) == STORES - 1);
	REQUIRE_OK(cx_failpoint_set("local.spare_project=error", &err), &err);
	cx_obj_prepare_put(s[STORES - 1], "d/k");
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	CHECK(unnamed_inodes(NULL, 0) == STORES - 1 && !holds_exactly(made, STORES - 1));

	REQUIRE_OK(cx_obj_put(s[STORES - 1], "d/k", "v", 1, CX_PUT_IF_ABSENT, &err), &err);
	snprintf(suffix, sizeof(suffix), "/project/%d/d/k", STORES - 1);
	CHECK(inode_of(suffix) != 0 && !holds_inode(made, STORES - 1, inode_of(suffix)));
	for (int i = 0; i < STORES; i++)
		cx_obj_close(s[i]);
	CHECK(unnamed_inodes(NULL, 0) == 0);
}
