/*
 * test_prefix_sort.c — sorting by an 8-byte prefix, then the whole key
 * (util/cx_prefix_sort.h): the order a general sort gives, for byte strings
 * sharing 0 to 12 leading bytes, of every length from 0 to 12, zero and
 * 0xff bytes among them, and repeats (kept in the caller's tie order).
 */
#include <stdlib.h>
#include <string.h>

#include "util/cx_prefix_sort.h"
#include "cx_test.h"

#define NKEYS 20000
#define KEY_MAX 12

typedef struct key
{
	uint8_t		b[KEY_MAX];
	size_t		len;
} key;

/* Byte-wise, a shorter key first where one starts the other. */
static int
key_cmp(const key *x, const key *y)
{
	size_t		n = x->len < y->len ? x->len : y->len;
	int			c = n > 0 ? memcmp(x->b, y->b, n) : 0;

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* Slots by key, then by index (the caller's tie order). */
static int
slot_cmp(const void *a, const void *b, void *arg)
{
	const key  *keys = arg;
	uint32_t	x = ((const cx_prefix_slot *) a)->item;
	uint32_t	y = ((const cx_prefix_slot *) b)->item;
	int			c = key_cmp(&keys[x], &keys[y]);

	return c != 0 ? c : (x > y) - (x < y);
}

/* The same order over plain indexes, for the reference sort. */
static int
index_cmp(const void *a, const void *b, void *arg)
{
	const key  *keys = arg;
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;
	int			c = key_cmp(&keys[x], &keys[y]);

	return c != 0 ? c : (x > y) - (x < y);
}

/* Key i: a shared start of 0-12 bytes (from four starts: zeros, 0xff
 * bytes, "abcdefghijkl", a mixed one), then pseudo-random bytes from a
 * small alphabet (0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff), so that keys tie
 * at every byte and repeat. */
static void
make_key(uint32_t i, uint64_t *seed, key *k)
{
	static const uint8_t starts[4][KEY_MAX] = {
		{0}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l'},
		{0x80, 0x00, 0x7f, 0xff, 0x01, 0xfe, 0x80, 0x00, 0x7f, 0xff, 0x01, 0xfe}};
	static const uint8_t alphabet[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
	size_t		shared;

	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	k->len = (size_t) (*seed >> 33) % (KEY_MAX + 1);
	shared = (size_t) (*seed >> 45) % (KEY_MAX + 1);
	for (size_t b = 0; b < k->len; b++)
	{
		*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
		k->b[b] = b < shared ? starts[i % 4][b] :
			alphabet[(*seed >> 40) % sizeof(alphabet)];
	}
}

/* How many of n keys cx_prefix_sort puts elsewhere than qsort_r does. */
static uint32_t
misplaced(uint32_t n, uint64_t seed)
{
	key		   *keys = calloc(n + 1, sizeof(key));
	cx_prefix_slot *slots = calloc(2 * (size_t) n + 1, sizeof(cx_prefix_slot));
	uint32_t   *want = calloc(n + 1, sizeof(uint32_t));
	const cx_prefix_slot *got;
	uint32_t	wrong = 0;

	if (keys == NULL || slots == NULL || want == NULL)
		wrong = n + 1;
	for (uint32_t i = 0; wrong == 0 && i < n; i++)
	{
		make_key(i, &seed, &keys[i]);
		slots[i].prefix = cx_bytes_prefix(keys[i].b, keys[i].len);
		slots[i].item = i;
		want[i] = i;
	}
	if (wrong == 0)
	{
		qsort_r(want, n, sizeof(uint32_t), index_cmp, keys);
		got = cx_prefix_sort(slots, slots + n, n, slot_cmp, keys);
		for (uint32_t i = 0; i < n; i++)
			wrong += got[i].item != want[i];
	}
	free(keys);
	free(slots);
	free(want);
	return wrong;
}

/* Sets of every size up to 80 (few keys, few ties) and a large one (many
 * ties at every byte) come back in a general sort's order. */
CX_TEST(prefix_sort_gives_a_general_sorts_order)
{
	for (uint32_t n = 0; n <= 80; n++)
		CHECK(misplaced(n, 3 + n) == 0);
	CHECK(misplaced(NKEYS, 3) == 0);
}

/* A prefix never contradicts byte-wise order, and tells apart keys that
 * differ within 8 bytes. */
CX_TEST(prefix_sort_bytes_prefix_agrees_with_byte_order)
{
	static const struct
	{
		const char *a;
		size_t		alen;
		const char *b;
		size_t		blen;
	}			pairs[] = {
		{"", 0, "\0", 1}, {"a", 1, "a\0", 2}, {"a\0", 2, "a\1", 2},
		{"abcdefg", 7, "abcdefgh", 8}, {"abcdefgh", 8, "abcdefgi", 8},
		{"abcdefgh", 8, "abcdefgh\0", 9}, {"\177", 1, "\200", 1},
		{"\377\377\377\377\377\377\377", 7, "\377\377\377\377\377\377\377\377", 8},
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		CHECK(cx_bytes_prefix((const uint8_t *) pairs[i].a, pairs[i].alen) <=
			  cx_bytes_prefix((const uint8_t *) pairs[i].b, pairs[i].blen));
	CHECK(cx_bytes_prefix((const uint8_t *) "abcdefgh", 8) <
		  cx_bytes_prefix((const uint8_t *) "abcdefgi", 8));
	CHECK(cx_bytes_prefix((const uint8_t *) "\177", 1) <
		  cx_bytes_prefix((const uint8_t *) "\200", 1));
	CHECK(cx_bytes_prefix(NULL, 0) == 0);
}
