/*
 * test_vseq.c — numbered sequences: probing for the newest number stops at
 * the top of the number space instead of probing UINT64_MAX forever; a put
 * whose outcome is unknown says so once, naming the whole key, also when
 * every read-back found nothing.
 */
#include <string.h>

#include "cx_test.h"
#include "objstore/cx_versioned.h"
#include "swtest.h"

CX_TEST(vseq_latest_stops_at_the_top_of_the_number_space)
{
	cx_objstore *s;
	cx_err		err;
	char		key[CX_KEY_MAX + 1];
	uint64_t	latest = 0;
	const cx_vseq q = {"seq/", ".obj", false};

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

/* Occurrences of needle in haystack. */
static int
count_in(const char *haystack, const char *needle)
{
	int			n = 0;

	for (const char *p = strstr(haystack, needle); p != NULL;
		 p = strstr(p + 1, needle))
		n++;
	return n;
}

/*
 * Puts "entry" at number 1 of q under fault (on every try); true if the
 * outcome is unknown and the message says so once, naming the whole key
 * once.
 */
static bool
put_is_unknown(sw_wrap *w, const cx_vseq *q, sw_fault fault, cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	cx_buf		object;
	cx_buf		taken;
	cx_vseq_outcome outcome;
	cx_code		rc;

	cx_buf_init(&object);
	cx_buf_init(&taken);
	cx_buf_put(&object, "entry", 5);
	cx_vseq_key(q, 1, key);
	sw_wrap_arm(w, NULL, fault, 1000);
	rc = cx_vseq_put(&w->base, q, 1, &object, &taken, &outcome, err);
	sw_wrap_arm(w, NULL, SW_FAULT_NONE, 0);
	cx_buf_free(&object);
	cx_buf_free(&taken);
	return rc != CX_OK && outcome == CX_VSEQ_UNKNOWN &&
		count_in(err->msg, key) == 1 &&
		count_in(err->msg, "outcome unknown") == 1;
}

CX_TEST(vseq_unknown_outcome_names_the_whole_key_once)
{
	sw_wrap    *w = sw_wrap_open("/vseq");
	const cx_vseq q = {"_shards/a-rather-long-shard-name/wal/", ".wal", false};
	cx_err		err;

	REQUIRE(w != NULL);
	CHECK(put_is_unknown(w, &q, SW_FAULT_LAND_THEN_IO_GET_FAILS, &err));
	CHECK(strstr(err.msg, "injected failure after landing") != NULL &&
		  strstr(err.msg, "injected read failure") != NULL);
	cx_obj_close(&w->base);
}

/* A read-back that finds nothing does not prove the put will not land: a
 * request that timed out may be applied later. */
CX_TEST(vseq_put_that_never_shows_up_is_unknown_not_failed)
{
	sw_wrap    *w = sw_wrap_open("/vseq");
	const cx_vseq q = {"seq/", ".obj", false};
	cx_buf		object;
	cx_buf		taken;
	cx_vseq_outcome outcome;
	cx_err		err;

	REQUIRE(w != NULL);
	CHECK(put_is_unknown(w, &q, SW_FAULT_IO_LANDS_LATE, &err));
	CHECK(err.code == CX_ERR_TIMEOUT);
	/* Settled by putting the same bytes again: the late put landed first. */
	cx_buf_init(&object);
	cx_buf_init(&taken);
	cx_buf_put(&object, "entry", 5);
	REQUIRE_OK(cx_vseq_put(&w->base, &q, 1, &object, &taken, &outcome, &err), &err);
	CHECK(outcome == CX_VSEQ_LANDED);
	CHECK(w->late_key == NULL);
	cx_buf_free(&object);
	cx_buf_free(&taken);
	cx_obj_close(&w->base);
}
