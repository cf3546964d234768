/*
 * cx_test.h — a very small unit-test harness for the storage engine.
 *
 * Tests register themselves (CX_TEST), so test files never touch a central
 * list.  CHECK records a failure and carries on; REQUIRE records it and
 * returns from the test.  The runner (runner.c) prints one line per failure
 * and ends with "N passed, N failed".
 */
#ifndef CX_TEST_H
#define CX_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ctxstore/error.h"

typedef void (*cx_test_fn) (void);

void		cx_test_register(const char *name, cx_test_fn fn);
void		cx_test_fail(const char *file, int line, const char *what);
/* Failures of the running test so far (a forked child reports them so). */
int			cx_test_failures(void);
/* Marks the running test skipped (printed with the reason and counted
 * apart, never as a pass) unless it also failed. */
void		cx_test_skip(const char *why);
/* A fresh empty directory for the running test, removed after it passes. */
const char *cx_test_tmpdir(void);
/* "file://" URI of cx_test_tmpdir() plus a suffix, in a static buffer. */
const char *cx_test_uri(const char *suffix);
/* The bytes of a file named relative to storage/ (tests/data/..., a fuzz
 * seed), malloc'd; NULL if unreadable. */
uint8_t    *cx_test_read_file(const char *name, size_t *len);

#define CX_TEST(name) \
	static void name(void); \
	__attribute__((constructor)) static void name##_register(void) \
	{ cx_test_register(#name, name); } \
	static void name(void)

#define CHECK(cond) \
	do { if (!(cond)) cx_test_fail(__FILE__, __LINE__, #cond); } while (0)

#define REQUIRE(cond) \
	do { if (!(cond)) { cx_test_fail(__FILE__, __LINE__, #cond); return; } } while (0)

/* Asserts a call returned CX_OK, printing the engine's message if not. */
#define REQUIRE_OK(call, errp) \
	do { \
		cx_code rc_ = (call); \
		if (rc_ != CX_OK) { \
			cx_test_fail(__FILE__, __LINE__, (errp)->msg); \
			return; \
		} \
	} while (0)

#define CHECK_CODE(call, expected) \
	do { \
		cx_code rc_ = (call); \
		if (rc_ != (expected)) { \
			char what_[256]; \
			snprintf(what_, sizeof(what_), "%s returned %s, expected %s", \
					 #call, cx_code_name(rc_), cx_code_name(expected)); \
			cx_test_fail(__FILE__, __LINE__, what_); \
		} \
	} while (0)

#include <stdio.h>

#endif							/* CX_TEST_H */
