/*
 * test_key_cache.c — the writer's key cache (memwal/cx_key_cache.h) and the
 * maps under it (util/cx_key_map.h): the newest version of each key and its
 * upsert value are found again after overwrites, value changes, tombstones,
 * trims and applies, and a key costs a bounded number of bytes, counted.
 */
#include <stdio.h>

#include "memwal/cx_key_cache.h"
#include "util/cx_key_map.h"
#include "cx_test.h"

/* Puts key (a string) with upsert value up (NULL: none) at gen. */
static cx_code
put(cx_keycache *c, const char *key, const char *up, bool tombstone,
	uint64_t gen, cx_err *err)
{
	cx_kc_row	row = {0};

	row.key = (const uint8_t *) key;
	row.key_len = strlen(key);
	row.upsert = (const uint8_t *) up;
	row.upsert_len = up == NULL ? 0 : strlen(up);
	row.tombstone = tombstone;
	row.ts = (int64_t) gen * 10;
	row.gen = gen;
	return cx_kc_put(c, &row, err);
}

/* The newest version of key, with its upsert value as a string in up. */
static bool
get(const cx_keycache *c, const char *key, cx_kc_row *row, char *up,
	size_t up_size)
{
	if (!cx_kc_get(c, (const uint8_t *) key, strlen(key), row))
		return false;
	snprintf(up, up_size, "%.*s", (int) row->upsert_len,
			 row->upsert == NULL ? "" : (const char *) row->upsert);
	return true;
}

typedef struct seen
{
	int			n;
	char		keys[8][16];
} seen;

static cx_code
collect(void *arg, const cx_kc_row *row, cx_err *err)
{
	seen	   *s = arg;

	(void) err;
	if (s->n < 8)
		snprintf(s->keys[s->n], sizeof(s->keys[0]), "%.*s", (int) row->key_len,
				 (const char *) row->key);
	s->n++;
	return CX_OK;
}

static seen
holders(const cx_keycache *c, const char *up)
{
	seen		s = {0};
	cx_err		err;

	(void) cx_kc_each_upsert(c, (const uint8_t *) up, strlen(up), collect, &s,
							 &err);
	return s;
}

CX_TEST(key_cache_keeps_the_newest_version_and_its_upsert_value)
{
	cx_keycache *c = cx_kc_new();
	cx_kc_row	row;
	char		up[32];
	cx_err		err;
	seen		s;

	REQUIRE(c != NULL);
	REQUIRE_OK(put(c, "a", "x", false, 1, &err), &err);
	REQUIRE_OK(put(c, "b", "x", false, 1, &err), &err);
	REQUIRE_OK(put(c, "c", NULL, false, 1, &err), &err);
	CHECK(cx_kc_keys(c) == 3);
	CHECK(get(c, "a", &row, up, sizeof(up)) && strcmp(up, "x") == 0 &&
		  row.ts == 10 && row.gen == 1 && !row.tombstone);
	CHECK(get(c, "c", &row, up, sizeof(up)) && row.upsert == NULL);
	CHECK(!get(c, "d", &row, up, sizeof(up)));
	CHECK(holders(c, "x").n == 2);

	/* a: x -> y -> x is linked twice but reported once; b's deletion
	 * takes it out of x; c takes a value, keeps its key. */
	REQUIRE_OK(put(c, "a", "y", false, 2, &err), &err);
	CHECK(holders(c, "y").n == 1 && holders(c, "x").n == 1);
	REQUIRE_OK(put(c, "a", "x", false, 3, &err), &err);
	REQUIRE_OK(put(c, "b", NULL, true, 3, &err), &err);
	REQUIRE_OK(put(c, "c", "y", false, 3, &err), &err);
	s = holders(c, "x");
	CHECK(s.n == 1 && strcmp(s.keys[0], "a") == 0);
	s = holders(c, "y");
	CHECK(s.n == 1 && strcmp(s.keys[0], "c") == 0);
	CHECK(get(c, "b", &row, up, sizeof(up)) && row.tombstone &&
		  row.upsert == NULL && row.gen == 3);
	CHECK(get(c, "c", &row, up, sizeof(up)) && strcmp(up, "y") == 0);
	CHECK(cx_kc_keys(c) == 3);

	/* A trim through generation 2 keeps what generation 3 wrote. */
	REQUIRE_OK(put(c, "e", "z", false, 2, &err), &err);
	REQUIRE_OK(cx_kc_trim(c, 2, &err), &err);
	CHECK(cx_kc_keys(c) == 3 && !get(c, "e", &row, up, sizeof(up)));
	CHECK(holders(c, "z").n == 0 && holders(c, "x").n == 1);
	CHECK(get(c, "a", &row, up, sizeof(up)) && strcmp(up, "x") == 0);
	cx_kc_free(c);
}

/*
 * A request's rows go to the empty staged cache, then to the unmerged
 * rows' cache, which holds a key already.  Into an empty cache the rows
 * move, so that a large transaction's keys are not held twice, and the
 * source is left empty; into one that holds keys they are copied.  Both
 * ways stamp them and carry the truncation.
 */
CX_TEST(key_cache_apply_moves_into_an_empty_cache_else_copies)
{
	cx_keycache *request = cx_kc_new();
	cx_keycache *staged = cx_kc_new();
	cx_keycache *keys = cx_kc_new();
	cx_kc_row	row;
	char		up[32];
	int64_t		ts;
	cx_err		err;

	REQUIRE(request != NULL && staged != NULL && keys != NULL);
	REQUIRE_OK(cx_kc_truncate(request, 0, 0, &err), &err);
	REQUIRE_OK(put(request, "new", "w", false, 0, &err), &err);
	REQUIRE_OK(put(request, "gone", NULL, true, 0, &err), &err);
	REQUIRE_OK(cx_kc_apply(staged, request, 0, 0, &err), &err);
	CHECK(cx_kc_keys(request) == 0 && cx_kc_memory(request) < 4096 &&
		  !cx_kc_truncated(request, &ts));
	CHECK(cx_kc_keys(staged) == 2 && cx_kc_truncated(staged, &ts) && ts == 0);
	CHECK(holders(staged, "w").n == 1);
	REQUIRE_OK(put(request, "again", "w", false, 0, &err), &err);
	CHECK(cx_kc_keys(request) == 1 && holders(request, "w").n == 1);

	REQUIRE_OK(put(keys, "old", "v", false, 1, &err), &err);
	REQUIRE_OK(cx_kc_apply(keys, staged, 70, 7, &err), &err);
	CHECK(cx_kc_keys(staged) == 2);	/* copied, not moved */
	CHECK(cx_kc_truncated(keys, &ts) && ts == 70);
	CHECK(!get(keys, "old", &row, up, sizeof(up)));
	CHECK(get(keys, "new", &row, up, sizeof(up)) && strcmp(up, "w") == 0 &&
		  row.ts == 70 && row.gen == 7);
	CHECK(get(keys, "gone", &row, up, sizeof(up)) && row.tombstone &&
		  row.gen == 7);
	CHECK(holders(keys, "w").n == 1 && holders(keys, "v").n == 0);

	/* A move stamps too. */
	cx_kc_free(keys);
	keys = cx_kc_new();
	REQUIRE(keys != NULL);
	REQUIRE_OK(cx_kc_apply(keys, staged, 80, 8, &err), &err);
	CHECK(cx_kc_keys(staged) == 0 && cx_kc_truncated(keys, &ts) && ts == 80);
	CHECK(get(keys, "new", &row, up, sizeof(up)) && row.ts == 80 &&
		  row.gen == 8);
	cx_kc_free(request);
	cx_kc_free(staged);
	cx_kc_free(keys);
}

/* n keys "k0000001"... of 8 bytes, each with an upsert value if ups. */
static cx_keycache *
filled(int n, bool ups)
{
	cx_keycache *c = cx_kc_new();
	char		key[16];
	char		up[16];
	cx_err		err;

	for (int i = 0; c != NULL && i < n; i++)
	{
		snprintf(key, sizeof(key), "k%07d", i);
		snprintf(up, sizeof(up), "u%07d", i / 2);
		if (put(c, key, ups ? up : NULL, false, 1, &err) != CX_OK)
		{
			cx_kc_free(c);
			return NULL;
		}
	}
	return c;
}

/*
 * A key costs its 24-byte entry, 11-21 bytes of slots and its bytes plus
 * one, the arrays' doubling aside: under 80 bytes for keys of 8 bytes
 * (they cost about 200 with 56-byte entries, 16-byte slots and each key
 * copied twice).  An upsert value adds its bytes, a link and a group.
 */
CX_TEST(key_cache_memory_per_key_is_bounded)
{
	const int	n = 200000;
	cx_keycache *c = filled(n, false);
	cx_kc_row	row;
	char		up[32];

	REQUIRE(c != NULL);
	CHECK(cx_kc_keys(c) == (uint64_t) n);
	CHECK(get(c, "k0123456", &row, up, sizeof(up)) && row.upsert == NULL);
	CHECK(cx_kc_memory(c) / n < 80);
	cx_kc_free(c);

	c = filled(n, true);
	REQUIRE(c != NULL);
	CHECK(holders(c, "u0061728").n == 2);
	CHECK(cx_kc_memory(c) / n < 120);
	cx_kc_free(c);
}

/* The key map over the index map: every key found again with its value,
 * in insertion order, with 8-byte slots. */
CX_TEST(key_map_finds_every_key_again)
{
	const int	n = 100000;
	cx_keymap  *m = cx_keymap_new();
	char		key[16];
	cx_keyver  *v;
	bool		found;
	const uint8_t *k;
	size_t		len;
	cx_err		err;

	REQUIRE(m != NULL);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++)
		{
			snprintf(key, sizeof(key), "key%d", i);
			REQUIRE_OK(cx_keymap_upsert(m, (const uint8_t *) key, strlen(key),
										&v, &found, &err), &err);
			CHECK(found == (pass == 1));
			if (pass == 0)
				v->row = (uint64_t) i;
			else
				CHECK(v->row == (uint64_t) i);
		}
	CHECK(cx_keymap_count(m) == (uint64_t) n);
	cx_keymap_key(m, 4242, &k, &len);
	CHECK(len == 7 && memcmp(k, "key4242", 7) == 0);
	CHECK(cx_keymap_get(m, (const uint8_t *) "key99999", 8)->row == 99999);
	CHECK(cx_keymap_get(m, (const uint8_t *) "key100000", 9) == NULL);
	/* Slots at most 2^18 * 8 bytes, entries at most 2^17 * 48, keys. */
	CHECK(cx_keymap_memory(m) < ((uint64_t) 1 << 21) + 48 * ((uint64_t) 1 << 17) + 64 * 1024 * 16);
	cx_keymap_free(m);
}
