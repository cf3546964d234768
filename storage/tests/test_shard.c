/*
 * test_shard.c — shard manifests: encoding round trip, every kind of
 * corruption, keys, shard ids, finding the newest version (with a known
 * version, the hint, or a listing) and the put-if-absent commit.
 */
#include <stdlib.h>

#include "util/cx_crc32c.h"
#include "memwal/cx_shard_manifest.h"
#include "cx_test.h"
#include "swtest.h"
#include "mw_util.h"

static void
fill_fragment(cx_fragment_info *fi, const char *path, uint32_t ncolumns)
{
	memset(fi, 0, sizeof(*fi));
	fi->path = cx_strdup(path);
	fi->size = 1000;
	fi->rows = 7;
	fi->footer_offset = 900;
	fi->footer_len = 100;
	fi->footer_crc = 0x89abcdefu;
	fi->ncolumns = ncolumns;
	fi->stats = calloc(ncolumns, sizeof(cx_colstats));
	for (uint32_t c = 0; c < ncolumns; c++)
	{
		fi->stats[c].value_count = 7;
		fi->stats[c].has_min = true;
		fi->stats[c].min_len = 1;
		fi->stats[c].min[0] = (uint8_t) c;
	}
}

/* Version 3 of shard "s1" with two generations. */
static cx_shard_manifest *
sample(void)
{
	cx_shard_manifest *m = cx_shard_manifest_new("s1");

	m->version = 3;
	m->epoch = 2;
	for (int i = 0; i < 16; i++)
		m->commit_id[i] = (uint8_t) i;
	m->committed_at_us = 1700000000000000;
	m->writer = cx_strdup("host-a pid 42");
	m->replay_seq = 9;
	m->next_gen = 6;
	m->ngens = 2;
	m->gens = calloc(2, sizeof(cx_generation));
	m->gens[0].gen = 4;
	m->gens[0].min_ts = 10;
	m->gens[0].max_ts = 20;
	fill_fragment(&m->gens[0].fragment, "data/a.parquet", 4);
	m->gens[1].gen = 5;
	m->gens[1].min_ts = 21;
	m->gens[1].max_ts = 21;
	fill_fragment(&m->gens[1].fragment, "data/b.parquet", 4);
	return m;
}

static bool
same_manifest(const cx_shard_manifest *a, const cx_shard_manifest *b)
{
	if (a->version != b->version || strcmp(a->shard_id, b->shard_id) != 0 ||
		a->epoch != b->epoch || memcmp(a->commit_id, b->commit_id, 16) != 0 ||
		a->committed_at_us != b->committed_at_us ||
		strcmp(a->writer, b->writer) != 0 || a->replay_seq != b->replay_seq ||
		a->next_gen != b->next_gen || a->ngens != b->ngens)
		return false;
	for (uint32_t i = 0; i < a->ngens; i++)
	{
		const cx_generation *x = &a->gens[i];
		const cx_generation *y = &b->gens[i];

		if (x->gen != y->gen || x->min_ts != y->min_ts || x->max_ts != y->max_ts ||
			strcmp(x->fragment.path, y->fragment.path) != 0 ||
			x->fragment.size != y->fragment.size ||
			x->fragment.rows != y->fragment.rows ||
			x->fragment.footer_crc != y->fragment.footer_crc ||
			x->fragment.ncolumns != y->fragment.ncolumns ||
			x->fragment.stats[1].min[0] != y->fragment.stats[1].min[0])
			return false;
	}
	return true;
}

CX_TEST(shard_manifest_round_trip)
{
	cx_shard_manifest *m = sample();
	cx_shard_manifest *d = NULL;
	cx_shard_manifest *c;
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	CHECK(memcmp(b.data, "CXS1", 4) == 0);
	CHECK(cx_load_u32(b.data + 8) == b.len - 16);
	REQUIRE_OK(cx_shard_manifest_decode(b.data, b.len, "x", &d, &err), &err);
	CHECK(same_manifest(m, d));
	c = cx_shard_manifest_clone(d);
	REQUIRE(c != NULL);
	CHECK(same_manifest(m, c));
	cx_shard_manifest_free(c);
	cx_shard_manifest_free(d);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
}

/* Every single-byte change and every truncation of the encoded manifest b
 * is an error naming it, never a crash or a different manifest. */
static void
check_damage_refused(cx_buf *b)
{
	cx_shard_manifest *d;
	cx_err		err;
	int			corrupt = 0;

	for (size_t i = 0; i < b->len; i++)
	{
		b->data[i] ^= 0x5a;
		if (cx_shard_manifest_decode(b->data, b->len, "x", &d, &err) != CX_OK)
			corrupt += strstr(err.msg, "shard manifest x") != NULL;
		else
			cx_shard_manifest_free(d);
		b->data[i] ^= 0x5a;
	}
	CHECK(corrupt == (int) b->len);
	for (size_t len = 0; len < b->len; len++)
		CHECK_CODE(cx_shard_manifest_decode(b->data, len, "x", &d, &err),
				   CX_ERR_CORRUPT);
}

CX_TEST(shard_manifest_corruption_is_detected)
{
	cx_shard_manifest *m = sample();
	cx_shard_manifest *d;
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	check_damage_refused(&b);
	/* A newer format with a valid checksum is unsupported, not corrupt. */
	cx_store_u16(b.data + 4, CX_SHARD_FORMAT + 1);
	cx_store_u32(b.data + b.len - 4, cx_crc32c(0, b.data, b.len - 4));
	CHECK_CODE(cx_shard_manifest_decode(b.data, b.len, "x", &d, &err),
			   CX_ERR_UNSUPPORTED);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(shard_manifest_refuses_unreadable_contents)
{
	cx_shard_manifest *m = sample();
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	m->gens[1].gen = 4;			/* not increasing */
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->gens[1].gen = 6;			/* not below next_gen */
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->gens[1].gen = 5;
	m->gens[1].min_ts = 22;		/* inverted range */
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->gens[1].min_ts = 21;
	m->epoch = 0;
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->epoch = 2;
	free(m->gens[0].fragment.path);
	m->gens[0].fragment.path = cx_strdup("../escape");
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
}

/* sample() with generation 4 inline in version 2 and generation 5 carried
 * by the manifest itself (version 3): format 3. */
static cx_shard_manifest *
inline_sample(void)
{
	cx_shard_manifest *m = sample();

	m->gens[0].carrier = 2;
	m->gens[1].carrier = 3;
	m->carried_len = m->gens[1].fragment.size;
	m->carried = malloc(m->carried_len);
	for (uint64_t i = 0; i < m->carried_len; i++)
		m->carried[i] = (uint8_t) (i * 7);
	return m;
}

CX_TEST(shard_manifest_with_inline_generations_is_format_3)
{
	cx_shard_manifest *m = inline_sample();
	cx_shard_manifest *d = NULL;
	cx_shard_manifest *next;
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	CHECK(cx_load_u16(b.data + 4) == 3);
	/* The carried bytes come first, after their length. */
	CHECK(cx_load_u32(b.data + 12) == 1000 && cx_load_u32(b.data + 16) == 0);
	CHECK(memcmp(b.data + CX_SHARD_CARRIED_AT, m->carried, 1000) == 0);
	REQUIRE_OK(cx_shard_manifest_decode(b.data, b.len, "x", &d, &err), &err);
	CHECK(same_manifest(m, d));
	CHECK(d->gens[0].carrier == 2 && d->gens[1].carrier == 3);
	CHECK(d->carried_len == 1000 && memcmp(d->carried, m->carried, 1000) == 0);
	/* The next version lists both, carries neither's bytes. */
	next = cx_shard_manifest_successor(d);
	REQUIRE(next != NULL);
	CHECK(next->carried == NULL && next->carried_len == 0 &&
		  next->gens[1].carrier == 3);
	cx_shard_manifest_free(next);
	cx_shard_manifest_free(d);
	check_damage_refused(&b);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(shard_manifest_format_2_still_reads)
{
	cx_shard_manifest *m = inline_sample();
	cx_shard_manifest *d = NULL;
	cx_buf		b;
	bool		whole;
	cx_err		err;

	cx_buf_init(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	mw_to_format_2(&b);
	/* The length of the carried bytes and the CRC end a format 2 object. */
	CHECK(cx_load_u32(b.data + b.len - 4 - 1000 - 8) == 1000);
	REQUIRE_OK(cx_shard_manifest_decode(b.data, b.len, "x", &d, &err), &err);
	CHECK(same_manifest(m, d));
	CHECK(d->carried_len == 1000 && memcmp(d->carried, m->carried, 1000) == 0);
	cx_shard_manifest_free(d);
	check_damage_refused(&b);
	/* Its head does not hold the carried bytes: it is read whole. */
	REQUIRE_OK(cx_shard_carried_check(b.data, CX_SHARD_CARRIED_AT + 1000, 1000,
									  "x", &whole, &err), &err);
	CHECK(whole);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
}

/* Checks head (of an encoded manifest carrying size bytes) as a reader of
 * them does. */
static cx_code
check_head(const cx_buf *head, uint64_t size, cx_err *err)
{
	bool		whole = true;
	size_t		len = head->len < CX_SHARD_CARRIED_AT + size ?
		head->len : CX_SHARD_CARRIED_AT + size;
	cx_code		rc = cx_shard_carried_check(head->data, len, size, "x",
											&whole, err);

	CHECK(!whole);
	CHECK(rc == CX_OK || strstr(err->msg, "shard manifest x") != NULL);
	return rc;
}

/* The head of a format 3 version is all a reader of its carried bytes
 * reads; everything in it that can be checked is. */
CX_TEST(shard_carried_bytes_are_read_from_the_head_only_if_it_matches)
{
	cx_shard_manifest *m = inline_sample();
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	REQUIRE_OK(check_head(&b, 1000, &err), &err);
	/* Another size than the listing's: the carrier holds other bytes. */
	CHECK_CODE(check_head(&b, 999, &err), CX_ERR_CORRUPT);
	CHECK_CODE(check_head(&b, 1001, &err), CX_ERR_CORRUPT);
	/* The range cut short (an object shorter than it). */
	b.len = CX_SHARD_CARRIED_AT + 999;
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_CORRUPT);
	b.len = 8;
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_CORRUPT);
	b.len = CX_SHARD_CARRIED_AT + 1000;
	/* A body too short to hold them. */
	cx_store_u32(b.data + 8, 1000);
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_CORRUPT);
	cx_buf_free(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	b.data[0] = 'X';
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_CORRUPT);
	b.data[0] = 'C';
	cx_store_u16(b.data + 4, 1);	/* format 1 carries nothing */
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_CORRUPT);
	cx_store_u16(b.data + 4, 0);
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_CORRUPT);
	cx_store_u16(b.data + 4, CX_SHARD_FORMAT + 1);
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_UNSUPPORTED);
	cx_store_u16(b.data + 4, 3);
	cx_store_u16(b.data + 6, 1);
	CHECK_CODE(check_head(&b, 1000, &err), CX_ERR_UNSUPPORTED);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
}

/* A writer never publishes carried bytes that are not exactly the newest
 * generation's, nor a generation carried by a later version; without
 * inline generations a manifest stays format 1. */
CX_TEST(shard_manifest_refuses_inconsistent_inline_generations)
{
	cx_shard_manifest *m = inline_sample();
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	m->carried_len = 999;
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->carried_len = 1000;
	m->gens[0].carrier = 4;
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->gens[0].carrier = 3;		/* two carried by this version */
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->gens[0].carrier = 0;
	m->gens[1].carrier = 0;		/* bytes without a generation they carry */
	CHECK_CODE(cx_shard_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	free(m->carried);
	m->carried = NULL;
	m->carried_len = 0;
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	CHECK(cx_load_u16(b.data + 4) == 1);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(shard_ids_and_keys)
{
	char		key[CX_KEY_MAX + 1];
	char		long_id[CX_SHARD_ID_MAX + 2];
	cx_err		err;

	CHECK_CODE(cx_shard_id_validate("host-1.pg_15", &err), CX_OK);
	CHECK_CODE(cx_shard_id_validate("", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_shard_id_validate("..", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_shard_id_validate("a/b", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_shard_id_validate(NULL, &err), CX_ERR_INVALID);
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	CHECK_CODE(cx_shard_id_validate(long_id, &err), CX_ERR_INVALID);
	long_id[CX_SHARD_ID_MAX] = '\0';
	CHECK_CODE(cx_shard_id_validate(long_id, &err), CX_OK);
	cx_shard_manifest_key("s1", 42, key, sizeof(key));
	CHECK(strcmp(key, "_shards/s1/_versions/00000000000000000042.shard") == 0);
}

/* Writes versions 1..n of shard s1 (epoch 1), with or without the hint. */
static void
write_versions_from(cx_objstore *s, uint64_t from, uint64_t n, bool hint)
{
	for (uint64_t v = from; v <= n; v++)
	{
		cx_shard_manifest *m = cx_shard_manifest_new("s1");
		cx_shard_manifest *winner;
		bool		unknown;
		cx_err		err;

		m->version = v;
		m->epoch = 1;
		m->commit_id[0] = (uint8_t) v;
		if (cx_shard_manifest_put(s, m, &winner, &unknown, &err) != CX_OK ||
			winner != NULL)
			cx_test_fail(__FILE__, __LINE__, "writing a version failed");
		if (hint && v == 1)
			cx_shard_hint_write(s, "s1", v, &err);
		cx_shard_manifest_free(m);
	}
}

static void
write_versions(cx_objstore *s, uint64_t n, bool hint)
{
	write_versions_from(s, 1, n, hint);
}

CX_TEST(shard_latest_uses_known_then_hint_then_listing)
{
	cx_objstore *s = sw_store("/st");
	cx_shard_manifest *m;
	cx_err		err;
	uint64_t	heads;

	REQUIRE(s != NULL);
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "s1", 0, &m, &err), &err);
	CHECK(m == NULL);
	write_versions(s, 37, true);
	/* Cold: the hint (version 1) and galloping forward. */
	heads = s->stats.heads;
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "s1", 0, &m, &err), &err);
	REQUIRE(m != NULL);
	CHECK(m->version == 37);
	CHECK(s->stats.heads - heads <= 2 * 6 + 2);
	cx_shard_manifest_free(m);
	/* Warm: nothing changed since 37, one HEAD. */
	heads = s->stats.heads;
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "s1", 37, &m, &err), &err);
	CHECK(m->version == 37);
	CHECK(s->stats.heads - heads == 1);
	cx_shard_manifest_free(m);
	/* A known version GC removed: start cold. */
	REQUIRE_OK(cx_obj_delete(s, "_shards/s1/_versions/00000000000000000037.shard", &err), &err);
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "s1", 37, &m, &err), &err);
	CHECK(m->version == 36);
	cx_shard_manifest_free(m);
	/* No hint: the listing decides. */
	REQUIRE_OK(cx_obj_delete(s, "_shards/s1/_latest", &err), &err);
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "s1", 0, &m, &err), &err);
	CHECK(m->version == 36);
	cx_shard_manifest_free(m);
	cx_obj_close(s);
}

/* GC removes the stale hint's version and the next one while a cold
 * probe runs: the version it stops at is gone when read, and the
 * versions are listed instead of failing with "not found" (found by the
 * simulation: a writer's claim, seed 937). */
CX_TEST(shard_latest_survives_gc_removing_the_hint_during_the_probe)
{
	cx_objstore *s = sw_store("/st");
	const char *const gone[] = {
		"_shards/s1/_versions/00000000000000000001.shard",
		"_shards/s1/_versions/00000000000000000002.shard"
	};
	cx_shard_manifest *m = NULL;
	cx_err		err;
	cx_code		rc;

	REQUIRE(s != NULL);
	write_versions(s, 5, true);
	sw_gc_race(s, gone[1], gone, 2);
	rc = cx_shard_manifest_load_latest(s, "s1", 0, &m, &err);
	sw_gc_race_end(s);
	if (rc != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	CHECK(rc == CX_OK && m != NULL && m->version == 5);
	cx_shard_manifest_free(m);
	cx_obj_close(s);
}

/* The same race for a reader that keeps the version it last read: its
 * probe from the kept version stops at one GC then removes, and the
 * versions are listed instead of failing with "not found" (found by the
 * simulation, seed 2535 with CX_SIM_LENGTH=10). */
CX_TEST(shard_latest_cached_survives_gc_removing_versions_during_the_probe)
{
	cx_objstore *s = sw_store("/st");
	const char *const gone[] = {
		"_shards/s1/_versions/00000000000000000001.shard",
		"_shards/s1/_versions/00000000000000000002.shard",
		"_shards/s1/_versions/00000000000000000003.shard",
		"_shards/s1/_versions/00000000000000000004.shard",
		"_shards/s1/_versions/00000000000000000005.shard"
	};
	cx_shard_manifest *m = NULL;
	cx_err		err;
	cx_code		rc;

	REQUIRE(s != NULL);
	write_versions(s, 2, true);
	REQUIRE_OK(cx_shard_manifest_load_latest_cached(s, "s1", &m, &err), &err);
	REQUIRE(m != NULL && m->version == 2);
	cx_shard_manifest_free(m);
	m = NULL;
	write_versions_from(s, 3, 6, false);
	/* The probe HEADs 3 (there), then 5: GC removes 1 to 5 just before. */
	sw_gc_race(s, gone[4], gone, 5);
	rc = cx_shard_manifest_load_latest_cached(s, "s1", &m, &err);
	sw_gc_race_end(s);
	if (rc != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	CHECK(rc == CX_OK && m != NULL && m->version == 6);
	cx_shard_manifest_free(m);
	cx_obj_close(s);
}

CX_TEST(shard_load_checks_the_key)
{
	cx_objstore *s = sw_store("/st");
	cx_shard_manifest *m = sample();
	cx_shard_manifest *d;
	cx_buf		b;
	cx_err		err;

	REQUIRE(s != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	/* Version 3 of s1 stored as version 4, and as a version of s2. */
	REQUIRE_OK(cx_obj_put(s, "_shards/s1/_versions/00000000000000000004.shard",
						  b.data, b.len, CX_PUT_IF_ABSENT, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "_shards/s2/_versions/00000000000000000003.shard",
						  b.data, b.len, CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(cx_shard_manifest_load(s, "s1", 4, &d, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "00000000000000000004.shard") != NULL);
	CHECK_CODE(cx_shard_manifest_load(s, "s2", 3, &d, &err), CX_ERR_CORRUPT);
	CHECK_CODE(cx_shard_manifest_load(s, "s1", 3, &d, &err), CX_ERR_NOT_FOUND);
	cx_shard_manifest_free(m);
	cx_buf_free(&b);
	cx_obj_close(s);
}

CX_TEST(shard_put_reports_the_winner_and_settles_ambiguity)
{
	sw_wrap    *w = sw_wrap_open("/st");
	cx_shard_manifest *mine = sample();
	cx_shard_manifest *theirs = sample();
	cx_shard_manifest *winner;
	bool		unknown;
	cx_err		err;

	REQUIRE(w != NULL);
	/* Our put lands but we hear "I/O error": read back, ours. */
	w->fault = SW_FAULT_LAND_THEN_IO;
	w->faults = 1;
	REQUIRE_OK(cx_shard_manifest_put(&w->base, mine, &winner, &unknown, &err), &err);
	CHECK(winner == NULL);
	/* Someone else's version 3: we learn who holds it. */
	theirs->commit_id[0] = 99;
	theirs->epoch = 3;
	REQUIRE_OK(cx_shard_manifest_put(&w->base, theirs, &winner, &unknown, &err), &err);
	REQUIRE(winner != NULL);
	CHECK(winner->epoch == 2);
	cx_shard_manifest_free(winner);
	/* Lands, and the read-back fails: unknown. */
	theirs->version = 4;
	w->fault = SW_FAULT_LAND_THEN_IO_GET_FAILS;
	w->faults = 1;
	CHECK_CODE(cx_shard_manifest_put(&w->base, theirs, &winner, &unknown, &err), CX_ERR_IO);
	CHECK(unknown);
	CHECK(strstr(err.msg, "outcome unknown") != NULL);
	/* Does not land, twice: retried, lands on the third try. */
	theirs->version = 5;
	w->fault = SW_FAULT_IO_NOT_LANDED;
	w->faults = 2;
	REQUIRE_OK(cx_shard_manifest_put(&w->base, theirs, &winner, &unknown, &err), &err);
	CHECK(winner == NULL);
	cx_shard_manifest_free(mine);
	cx_shard_manifest_free(theirs);
	cx_obj_close(&w->base);
}

/* The example in docs/FORMAT.md "Shards", byte for byte. */
CX_TEST(shard_manifest_matches_the_documented_example)
{
	static const uint8_t want[] = {
		0x43, 0x58, 0x53, 0x31, 0x01, 0x00, 0x00, 0x00, 0x43, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x73, 0x31,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
		0x00, 0x40, 0x1e, 0x18, 0x24, 0x0a, 0x06, 0x00,
		0x01, 0x00, 0x77,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00,
		0x18, 0xad, 0x4c, 0x54,
	};
	cx_shard_manifest *m = cx_shard_manifest_new("s1");
	cx_buf		b;
	cx_err		err;

	REQUIRE(m != NULL);
	m->version = 1;
	m->epoch = 1;
	for (int i = 0; i < 16; i++)
		m->commit_id[i] = (uint8_t) i;
	m->committed_at_us = 1700000000000000;
	m->writer = cx_strdup("w");
	cx_buf_init(&b);
	REQUIRE_OK(cx_shard_manifest_encode(m, &b, &err), &err);
	CHECK(b.len == sizeof(want) && memcmp(b.data, want, sizeof(want)) == 0);
	cx_buf_free(&b);
	cx_shard_manifest_free(m);
}

/* ---- the encoded entries a writer reuses (cx_gen_entries.c) ---- */

/* Encodes m with and without reuse and checks that the bytes agree. */
static void
check_reused_encoding(const cx_shard_manifest *m, cx_gen_entries *reuse)
{
	cx_buf		plain;
	cx_buf		reusing;
	cx_err		err;

	cx_buf_init(&plain);
	cx_buf_init(&reusing);
	REQUIRE_OK(cx_shard_manifest_encode(m, &plain, &err), &err);
	REQUIRE_OK(cx_shard_manifest_encode_reusing(m, reuse, &reusing, &err), &err);
	CHECK(plain.len == reusing.len &&
		  memcmp(plain.data, reusing.data, plain.len) == 0);
	cx_buf_free(&plain);
	cx_buf_free(&reusing);
}

/* Whether reuse copied `reused` entries and encoded `encoded` so far. */
static bool
counted(const cx_gen_entries *reuse, uint64_t reused, uint64_t encoded)
{
	uint64_t	r;
	uint64_t	e;

	cx_gen_entries_counts(reuse, &r, &e);
	return r == reused && e == encoded;
}

/* m's successor without its oldest generation and with generation gen
 * (path, carried by the new version if inline). */
static cx_shard_manifest *
next_version(const cx_shard_manifest *m, uint64_t gen, const char *path,
			 bool inline_gen)
{
	cx_shard_manifest *n = cx_shard_manifest_successor(m);
	cx_generation *g;

	n->version = m->version + 1;
	cx_fragment_info_free(&n->gens[0].fragment);
	memmove(&n->gens[0], &n->gens[1], (n->ngens - 1) * sizeof(cx_generation));
	g = &n->gens[n->ngens - 1];
	memset(g, 0, sizeof(*g));
	g->gen = gen;
	g->min_ts = g->max_ts = (int64_t) gen * 10;
	g->carrier = inline_gen ? n->version : 0;
	fill_fragment(&g->fragment, path, 4);
	if (inline_gen)
	{
		n->carried = calloc(1, g->fragment.size);
		n->carried_len = g->fragment.size;
	}
	n->next_gen = gen + 1;
	return n;
}

CX_TEST(gen_entries_encode_what_the_plain_encoding_does)
{
	cx_gen_entries *reuse = cx_gen_entries_new();
	cx_shard_manifest *m = sample();
	cx_shard_manifest *n;

	REQUIRE(reuse != NULL);
	check_reused_encoding(m, reuse);
	CHECK(counted(reuse, 0, 2));
	/* Generation 4 drained, 6 added: 5 is copied. */
	n = next_version(m, 6, "data/c.parquet", false);
	check_reused_encoding(n, reuse);
	CHECK(counted(reuse, 1, 3));
	cx_shard_manifest_free(m);
	/* An inline generation makes the version format 3, whose entries carry
	 * the carrier: none of format 1's is copied, then format 3's are. */
	m = next_version(n, 7, "inline/d", true);
	check_reused_encoding(m, reuse);
	CHECK(counted(reuse, 1, 5));
	cx_shard_manifest_free(n);
	n = next_version(m, 8, "inline/e", true);
	check_reused_encoding(n, reuse);
	CHECK(counted(reuse, 2, 6));
	cx_shard_manifest_free(m);
	cx_shard_manifest_free(n);
	cx_gen_entries_free(reuse);
}

/* After a seal whose outcome was unknown a generation may be built again
 * under its number: another path (or footer), so its entry is encoded
 * afresh, never copied from the first build. */
CX_TEST(gen_entries_encode_a_rebuilt_generation_afresh)
{
	cx_gen_entries *reuse = cx_gen_entries_new();
	cx_shard_manifest *m = sample();

	REQUIRE(reuse != NULL);
	check_reused_encoding(m, reuse);
	free(m->gens[1].fragment.path);
	m->gens[1].fragment.path = cx_strdup("data/b2.parquet");
	check_reused_encoding(m, reuse);
	CHECK(counted(reuse, 1, 3));
	m->gens[1].fragment.footer_crc ^= 1;
	m->gens[1].fragment.stats[0].min[0] = 9;
	check_reused_encoding(m, reuse);
	CHECK(counted(reuse, 2, 4));
	cx_shard_manifest_free(m);
	cx_gen_entries_free(reuse);
}
