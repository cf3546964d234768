/*
 * fuzz_key_index.c — libFuzzer harness for key index segments: the input
 * is a whole segment object in an in-memory store, read as verify does
 * (cx_keyseg_check: trailer, root, the filter, every index and data block,
 * entry order) and as a lookup does (cx_keyseg_lookup of a few values,
 * through the root, the filter and one block per level, with the block
 * cache and the filter table) and a merge does (a cursor over every
 * entry).
 *
 * The fuzz build does not check block checksums (FUZZING_BUILD_MODE_UNSAFE_
 * FOR_PRODUCTION), so mutated blocks reach the decoders.  Each input gets a
 * key of its own: the block cache and the filter table are keyed by object
 * name.
 */
#include <string.h>

#include "table/cx_key_index.h"
#include "table/cx_key_index_int.h"
#include "support.h"

static cx_code
count_entry(void *arg, uint32_t value, const cx_keyentry *e, cx_err *err)
{
	(void) value;
	(void) e;
	(void) err;
	(*(uint64_t *) arg)++;
	return CX_OK;
}

/* The root block's frame header and the fields of its body up to the
 * entry count: column u32, flags u8, depth u8, entries u64. */
#define ROOT_MIN_LEN (12 + 4 + 1 + 1 + 8)

/* What a manifest would say of the segment, taken from its trailer and
 * root as they stand; false if they are not even there. */
static bool
ref_of(const char *key, const uint8_t *data, size_t size, cx_keyseg_ref *ref)
{
	const uint8_t *root;
	uint64_t	tail;

	if (size < CX_KEYSEG_TRAILER_LEN)
		return false;
	tail = (uint64_t) cx_load_u32(data + size - CX_KEYSEG_TRAILER_LEN) +
		CX_KEYSEG_TRAILER_LEN;
	if (tail > size || tail < CX_KEYSEG_TRAILER_LEN + ROOT_MIN_LEN)
		return false;
	root = data + size - tail;
	memset(ref, 0, sizeof(*ref));
	ref->path = (char *) key;
	ref->size = size;
	ref->tail_len = (uint32_t) tail;
	ref->column = cx_load_u32(root + 12);
	ref->entries = cx_load_u32(root + 18) | (uint64_t) cx_load_u32(root + 22) << 32;
	return true;
}

static void
look_up(cx_objstore *s, const cx_keyseg_ref *ref, const uint8_t *data,
		size_t size)
{
	/* Values in bytewise order, as the caller sorts them. */
	const uint8_t *values[3] = {data, data, data + size / 2};
	size_t		lens[3] = {0, size < 8 ? size : 8, size - size / 2 < 4 ? size - size / 2 : 4};
	uint32_t	order[3] = {0, 1, 2};
	uint64_t	n = 0;
	cx_err		err;

	if (lens[1] > 0 &&
		cx_keyseg_value_cmp(values[1], lens[1], values[2], lens[2]) > 0)
	{
		order[1] = 2;
		order[2] = 1;
	}
	(void) cx_keyseg_lookup(s, ref, values, lens, order, NULL, 3, count_entry,
							&n, &err);
}

static void
walk(cx_objstore *s, const cx_keyseg_ref *ref)
{
	cx_keyseg_cursor *c;
	const cx_keyentry *e;
	cx_err		err;

	if (cx_keyseg_cursor_open(s, ref, &c, &err) != CX_OK)
		return;
	while (cx_keyseg_cursor_next(c, &e, &err) == CX_OK && e != NULL)
		;
	cx_keyseg_cursor_close(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		key[64];
	cx_objstore *s;
	uint64_t	entries = 0;
	cx_keyseg_ref ref;
	cx_err		err;

	fuzz_fresh_key(key, sizeof(key), "index/", ".cxk");
	if ((s = fuzz_memstore(key, data, size)) == NULL)
		return 0;
	(void) cx_keyseg_check(s, key, &entries, &err);
	if (ref_of(key, data, size, &ref))
	{
		look_up(s, &ref, data, size);
		walk(s, &ref);
	}
	cx_obj_close(s);
	return 0;
}
