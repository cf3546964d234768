/*
 * test_vseq.c — numbered sequences: probing for the newest number stops at
 * the top of the number space instead of probing UINT64_MAX forever.
 */
#include "cx_test.h"
#include "cx_vseq.h"

CX_TEST(vseq_latest_stops_at_the_top_of_the_number_space)
{
	cx_objstore *s;
	cx_err		err;
	char		key[CX_KEY_MAX + 1];
	uint64_t	latest = 0;
	const cx_vseq q = {"seq/", ".obj"};

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/vseq"), NULL, 0, &s, &err), &err);
	cx_vseq_key(&q, UINT64_MAX - 1, key);
	REQUIRE_OK(cx_obj_put(s, key, "a", 1, CX_PUT_IF_ABSENT, &err), &err);
	cx_vseq_key(&q, UINT64_MAX, key);
	REQUIRE_OK(cx_obj_put(s, key, "b", 1, CX_PUT_IF_ABSENT, &err), &err);

	/* Without the guard this call never returns. */
	REQUIRE_OK(cx_vseq_latest(s, &q, "seq/_hint", UINT64_MAX - 1, &latest, &err), &err);
	CHECK(latest == UINT64_MAX);
	cx_obj_close(s);
}
