/*
 * runner.c — runs every registered storage test, or those whose names contain
 * the first argument, and ends with "N passed, N failed".
 */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cx_test.h"

#define MAX_TESTS 1024

typedef struct test_entry
{
	const char *name;
	cx_test_fn	fn;
} test_entry;

static test_entry tests[MAX_TESTS];
static int	ntests;
static int	current_failures;
static bool current_skipped;
static char current_tmpdir[4096];

void
cx_test_register(const char *name, cx_test_fn fn)
{
	if (ntests == MAX_TESTS)
	{
		fprintf(stderr, "too many tests\n");
		exit(2);
	}
	tests[ntests].name = name;
	tests[ntests].fn = fn;
	ntests++;
}

void
cx_test_fail(const char *file, int line, const char *what)
{
	current_failures++;
	printf("    FAIL %s:%d: %s\n", file, line, what);
	fflush(stdout);
}

int
cx_test_failures(void)
{
	return current_failures;
}

void
cx_test_skip(const char *why)
{
	if (!current_skipped)
		printf("    skip: %s\n", why);
	current_skipped = true;
	fflush(stdout);
}

static int
remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	return remove(path);
}

static const char *
dump_dir(void)
{
	return getenv("CX_TEST_DUMP_SEEDS");
}

/* Removes the running test's directory, unless it is kept for seeds. */
static void
remove_tmpdir(void)
{
	if (current_tmpdir[0] && dump_dir() == NULL)
		nftw(current_tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Made on first use, under a lock: tests start threads that each open the
 * test's store, and two threads that both found no directory yet would make
 * two (one thread writing where the test never looks).  With
 * CX_TEST_DUMP_SEEDS=<dir> the directories are made there and kept, so that
 * the objects the tests write seed the fuzz harnesses (make fuzz).
 */
const char *
cx_test_tmpdir(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&lock);
	if (current_tmpdir[0] == '\0')
	{
		const char *base = dump_dir() ? dump_dir() : getenv("TMPDIR");

		snprintf(current_tmpdir, sizeof(current_tmpdir), "%s/cxtest.XXXXXX",
				 base ? base : "/tmp");
		if (mkdtemp(current_tmpdir) == NULL)
		{
			perror("mkdtemp");
			exit(2);
		}
	}
	pthread_mutex_unlock(&lock);
	return current_tmpdir;
}

const char *
cx_test_uri(const char *suffix)
{
	/* Per thread: threads of one test build their URIs at the same time. */
	static __thread char uri[4200];

	snprintf(uri, sizeof(uri), "file://%s%s", cx_test_tmpdir(), suffix);
	return uri;
}

uint8_t *
cx_test_read_file(const char *name, size_t *len)
{
	char		path[4096];
	/* __FILE__ is storage/tests/runner.c, relative or absolute */
	size_t		dir = strlen(__FILE__) - strlen("tests/runner.c");
	FILE	   *f;
	uint8_t    *data = NULL;
	long		n;

	snprintf(path, sizeof(path), "%.*s%s", (int) dir, __FILE__, name);
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
		(data = malloc(n > 0 ? n : 1)) != NULL)
	{
		rewind(f);
		if (fread(data, 1, n, f) != (size_t) n)
		{
			free(data);
			data = NULL;
		}
		*len = (size_t) n;
	}
	fclose(f);
	return data;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const test_entry *) a)->name, ((const test_entry *) b)->name);
}

int
main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	int			passed = 0;
	int			failed = 0;
	int			skipped = 0;

	qsort(tests, ntests, sizeof(tests[0]), by_name);
	for (int i = 0; i < ntests; i++)
	{
		if (filter && strstr(tests[i].name, filter) == NULL)
			continue;
		current_failures = 0;
		current_skipped = false;
		current_tmpdir[0] = '\0';
		tests[i].fn();
		if (current_failures == 0 && current_skipped)
		{
			skipped++;
			printf("skip %s\n", tests[i].name);
			remove_tmpdir();
		}
		else if (current_failures == 0)
		{
			passed++;
			printf("ok   %s\n", tests[i].name);
			remove_tmpdir();
		}
		else
		{
			failed++;
			printf("FAIL %s%s%s%s\n", tests[i].name,
				   current_tmpdir[0] ? " (files kept in " : "",
				   current_tmpdir[0] ? current_tmpdir : "",
				   current_tmpdir[0] ? ")" : "");

		}
		fflush(stdout);
	}
	if (skipped > 0)
		printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	else
		printf("%d passed, %d failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
