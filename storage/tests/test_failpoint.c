/*
 * test_failpoint.c — arming failpoints: spec parsing, error mode, delays,
 * @N, hit counts, disarming.  (Crash mode is exercised by test_shardwriter.c, in a
 * child process armed through CTXSTORE_FAILPOINTS.)
 */
#include <time.h>

#include "util/cx_failpoint.h"
#include "cx_test.h"

static cx_code
reach(const char *name)
{
	cx_err		err;
	cx_code		rc = CX_FAILPOINT(name, &err);

	if (rc != CX_OK && strstr(err.msg, name) == NULL)
		cx_test_fail(__FILE__, __LINE__, "the injected error does not name the failpoint");
	return rc;
}

CX_TEST(failpoint_error_mode_and_nth_hit)
{
	cx_err		err;

	REQUIRE_OK(cx_failpoint_set(" t.a = error , t.b=error@3", &err), &err);
	CHECK_CODE(reach("t.a"), CX_ERR_IO);
	CHECK_CODE(reach("t.a"), CX_ERR_IO);
	CHECK_CODE(reach("t.b"), CX_OK);
	CHECK_CODE(reach("t.b"), CX_OK);
	CHECK_CODE(reach("t.b"), CX_ERR_IO);
	CHECK_CODE(reach("t.b"), CX_OK);
	CHECK_CODE(reach("t.other"), CX_OK);
	CHECK(cx_failpoint_hits("t.a") == 2);
	CHECK(cx_failpoint_hits("t.b") == 4);
	CHECK(cx_failpoint_hits("t.other") == 0);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	CHECK_CODE(reach("t.a"), CX_OK);
	CHECK(cx_failpoint_active == 0);
}

CX_TEST(failpoint_last_item_wins_and_set_replaces)
{
	cx_err		err;

	REQUIRE_OK(cx_failpoint_set("t.a=error,t.a=error@2", &err), &err);
	CHECK_CODE(reach("t.a"), CX_OK);
	CHECK_CODE(reach("t.a"), CX_ERR_IO);
	REQUIRE_OK(cx_failpoint_set("t.c=error", &err), &err);
	CHECK_CODE(reach("t.a"), CX_OK);
	CHECK_CODE(reach("t.c"), CX_ERR_IO);
	REQUIRE_OK(cx_failpoint_set(NULL, &err), &err);
	CHECK_CODE(reach("t.c"), CX_OK);
}

CX_TEST(failpoint_rejects_malformed_specs)
{
	static const char *const bad[] = {
		"t.a", "t.a=", "=error", "t.a=explode", "t.a=error@", "t.a=error@0",
		"t.a=error@x", "T.A=error", "t a=error", "t.a=crash@2x",
	};
	cx_err		err;

	REQUIRE_OK(cx_failpoint_set("t.keep=error", &err), &err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		CHECK_CODE(cx_failpoint_set(bad[i], &err), CX_ERR_INVALID);
		CHECK(strstr(err.msg, "failpoint") != NULL);
	}
	/* A rejected spec leaves the armed set as it was. */
	CHECK_CODE(reach("t.keep"), CX_ERR_IO);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

CX_TEST(failpoint_delay_sleeps_then_lets_the_step_go_on)
{
	static const char *const bad[] = {
		"t.a=delay", "t.a=delay:", "t.a=delay:0", "t.a=delay:60001",
		"t.a=delay:5x", "t.a=delay:-5", "t.a=delay5",
	};
	cx_err		err;
	double		start;

	REQUIRE_OK(cx_failpoint_set("t.d=delay:50@2", &err), &err);
	CHECK_CODE(reach("t.d"), CX_OK);
	start = now_ms();
	CHECK_CODE(reach("t.d"), CX_OK);
	CHECK(now_ms() - start >= 50);
	CHECK(cx_failpoint_hits("t.d") == 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_CODE(cx_failpoint_set(bad[i], &err), CX_ERR_INVALID);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
}
