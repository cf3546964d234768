/*
 * test_key_filter.c — key index segment filters (cx_key_filter.h): no false
 * negatives, a bounded false-positive rate, damaged filters refused,
 * segments written before filters still read, and a batch of new keys into
 * a large indexed store answered without reading data blocks; a cursor over
 * a segment (merges, verify) reads its data blocks in few GETs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/cx_merge.h"
#include "table/cx_base_probe.h"
#include "table/cx_key_filter.h"
#include "table/cx_key_index.h"
#include "table/cx_key_index_int.h"
#include "util/cx_frame.h"
#include "util/cx_hash.h"
#include "cx_test.h"
#include "mw_util.h"

#define FILTER_VALUES 100000

/* A filter over "v<i>", i < n, decoded as a reader gets it. */
static cx_code
filter_of(uint32_t n, cx_keyfilter **f, cx_err *err)
{
	cx_keyfilter_build b = {0};
	cx_buf		body;
	uint32_t	probes = 0;
	cx_code		rc = CX_OK;
	char		v[16];

	cx_buf_init(&body);
	for (uint32_t i = 0; rc == CX_OK && i < n; i++)
	{
		int			len = snprintf(v, sizeof(v), "v%u", i);

		rc = cx_keyfilter_build_add(&b, (const uint8_t *) v, (uint32_t) len, err);
	}
	cx_buf_put_u32(&body, 0);	/* the probe count, patched below */
	if (rc == CX_OK)
		rc = cx_keyfilter_build_encode(&b, &probes, &body, err);
	if (rc == CX_OK)
	{
		cx_store_u32(body.data, probes);
		rc = cx_keyfilter_decode(body.data, (uint32_t) body.len, "test", f, err);
	}
	cx_keyfilter_build_free(&b);
	cx_buf_free(&body);
	return rc;
}

static bool
may_hold(const cx_keyfilter *f, const char *prefix, uint32_t i)
{
	char		v[16];
	int			len = snprintf(v, sizeof(v), "%s%u", prefix, i);

	return cx_keyfilter_may_hold(f, (const uint8_t *) v, (size_t) len);
}

CX_TEST(key_filter_never_misses_and_rarely_errs)
{
	cx_keyfilter *f;
	uint32_t	missed = 0;
	uint32_t	false_positives = 0;
	cx_err		err;

	REQUIRE_OK(filter_of(FILTER_VALUES, &f, &err), &err);
	for (uint32_t i = 0; i < FILTER_VALUES; i++)
	{
		missed += !may_hold(f, "v", i);
		false_positives += may_hold(f, "w", i);
	}
	CHECK(missed == 0);
	/* 16 bits and 11 probes per value: about 0.05% in theory */
	printf("# false positives: %u of %u\n", false_positives, (unsigned) FILTER_VALUES);
	CHECK(false_positives < FILTER_VALUES / 1000);
	cx_keyfilter_release(f);
}

/*
 * The stored bits depend on the hash and the probe positions, so both are
 * pinned to FORMAT.md's definition (values computed from its text, in
 * Python): a change would make every stored filter wrong.
 */
CX_TEST(key_filter_bits_are_those_format_md_defines)
{
	static const uint8_t expected[8] = {0, 0, 0, 0, 0x80, 0xff, 0x03, 0};
	cx_keyfilter_build b = {0};
	cx_buf		body;
	uint32_t	probes;
	cx_err		err;

	CHECK(cx_hash_bytes((const uint8_t *) "", 0) == 0x9ca066f1a4ab2eeaULL);
	CHECK(cx_hash_bytes((const uint8_t *) "abc", 3) == 0x5dd72d3e34ab3131ULL);
	CHECK(cx_hash_bytes((const uint8_t *) "0123456789abcdef-x", 18) ==
		  0x801ac8a2ebe8a6adULL);
	/* "abc" alone: 64 bits, 11 probes at 49, 48 .. 39 (h2 is -1 mod 64) */
	cx_buf_init(&body);
	REQUIRE_OK(cx_keyfilter_build_add(&b, (const uint8_t *) "abc", 3, &err),
			   &err);
	REQUIRE_OK(cx_keyfilter_build_encode(&b, &probes, &body, &err), &err);
	CHECK(probes == 11 && body.len == 8 + 8 && cx_load_u64(body.data) == 64);
	CHECK(memcmp(body.data + 8, expected, 8) == 0);
	cx_buf_free(&body);
	cx_keyfilter_build_free(&b);
}

/* A body whose fields do not add up is damaged, whatever its checksum. */
/* FORMAT.md's hash read byte by byte, as its text defines it. */
static uint64_t
hash_by_bytes(const uint8_t *p, size_t len)
{
	uint64_t	h = 0x9e3779b97f4a7c15ULL ^ len;

	for (size_t i = 0; i < len; i += 8)
	{
		size_t		n = len - i < 8 ? len - i : 8;
		uint64_t	w = 0;

		for (size_t j = 0; j < n; j++)
			w |= (uint64_t) p[i + j] << (8 * j);
		h = cx_mix64(h ^ w ^ (n < 8 ? 0x100 : 0));
	}
	return cx_mix64(h);
}

/*
 * The hash reads a key's last partial word with loads of a constant size
 * (overlapping ones, or a shifted word from before it); every length and
 * every position in a buffer must give the bytewise value, and bytes
 * outside the key must not count.
 */
CX_TEST(hash_bytes_agrees_with_a_bytewise_reference)
{
	uint8_t		buf[96];
	uint32_t	x = 12345;

	for (int round = 0; round < 50; round++)
		for (size_t len = 0; len <= 40; len++)
			for (size_t start = 0; start < 8; start++)
			{
				for (size_t i = 0; i < sizeof(buf); i++)
				{
					x = x * 1103515245u + 12345u;
					buf[i] = (uint8_t) (round == 0 ? 0xff : x >> 16);
				}
				CHECK(cx_hash_bytes(buf + start, len) ==
					  hash_by_bytes(buf + start, len));
				/* a byte just outside the key changes nothing */
				buf[start + len] ^= 0x5a;
				if (start > 0)
					buf[start - 1] ^= 0xa5;
				CHECK(cx_hash_bytes(buf + start, len) ==
					  hash_by_bytes(buf + start, len));
			}
}

CX_TEST(key_filter_refuses_impossible_fields)
{
	uint8_t		body[12 + 8];
	cx_keyfilter *f;
	cx_err		err;

	memset(body, 0, sizeof(body));
	cx_store_u32(body, 8);
	cx_store_u64(body + 4, 64);
	REQUIRE_OK(cx_keyfilter_decode(body, sizeof(body), "test", &f, &err), &err);
	CHECK(!cx_keyfilter_may_hold(f, (const uint8_t *) "x", 1));
	cx_keyfilter_release(f);
	cx_store_u32(body, 0);		/* no probes */
	CHECK_CODE(cx_keyfilter_decode(body, sizeof(body), "test", &f, &err),
			   CX_ERR_CORRUPT);
	cx_store_u32(body, CX_KEYFILTER_MAX_PROBES + 1);
	CHECK_CODE(cx_keyfilter_decode(body, sizeof(body), "test", &f, &err),
			   CX_ERR_CORRUPT);
	cx_store_u32(body, 8);
	cx_store_u64(body + 4, 65);	/* needs 9 bytes, has 8 */
	CHECK_CODE(cx_keyfilter_decode(body, sizeof(body), "test", &f, &err),
			   CX_ERR_CORRUPT);
	cx_store_u64(body + 4, 0);
	CHECK_CODE(cx_keyfilter_decode(body, sizeof(body), "test", &f, &err),
			   CX_ERR_CORRUPT);
	CHECK_CODE(cx_keyfilter_decode(body, 11, "test", &f, &err), CX_ERR_CORRUPT);
	CHECK(f == NULL);
}

/* Writes a segment of the key column over "k<i>", i < n (fragment 0, row
 * i), with small blocks: many data blocks. */
static cx_code
write_segment(cx_objstore *s, uint32_t n, cx_keyseg_ref *ref, cx_err *err)
{
	cx_keysegw *w;
	char		v[16];
	cx_code		rc = CX_OK;

	if (cx_keysegw_open(s, 0, false, 256, &w, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; rc == CX_OK && i < n; i++)
	{
		int			len = snprintf(v, sizeof(v), "k%08u", i);
		cx_keyentry e = {(const uint8_t *) v, (uint32_t) len, 0, i, 1, false,
		NULL, 0};

		rc = cx_keysegw_add(w, &e, err);
	}
	if (rc != CX_OK)
	{
		cx_keysegw_abort(w);
		return rc;
	}
	return cx_keysegw_finish(w, ref, err);
}

/* Verify's reading of the segment: intact, n entries. */
static cx_code
check_entries(cx_objstore *s, const cx_keyseg_ref *ref, uint64_t n,
			  cx_err *err)
{
	uint64_t	entries;

	if (cx_keyseg_check(s, ref->path, &entries, err) != CX_OK)
		return err->code;
	if (entries != n)
		return cx_err_set(err, CX_ERR_INVALID, "%llu entries, not %llu",
						  (unsigned long long) entries, (unsigned long long) n);
	return CX_OK;
}

static cx_code
count_hit(void *arg, uint32_t value, const cx_keyentry *e, cx_err *err)
{
	(void) value;
	(void) e;
	(void) err;
	(*(uint32_t *) arg)++;
	return CX_OK;
}

/* Looks up "k<first + i * step><suffix>" (%08u), i < n, in ref; *hits,
 * *gets.  Suffix "x": absent values between present ones. */
static cx_code
look_up(cx_objstore *s, const cx_keyseg_ref *ref, uint32_t first,
		uint32_t step, uint32_t n, const char *suffix, uint32_t *hits,
		uint64_t *gets, cx_err *err)
{
	char	  (*v)[16] = calloc(n, 16);
	const uint8_t **values = calloc(n, sizeof(*values));
	size_t	   *lens = calloc(n, sizeof(size_t));
	uint32_t   *order = calloc(n, sizeof(uint32_t));
	uint64_t	before = s->stats.gets;
	cx_code		rc;

	*hits = 0;
	if (v == NULL || values == NULL || lens == NULL || order == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "test: out of memory");
	else
	{
		/* ascending numbers of one width: already in bytewise order */
		for (uint32_t i = 0; i < n; i++)
		{
			lens[i] = (size_t) snprintf(v[i], 16, "k%08u%s", first + i * step,
										suffix);
			values[i] = (const uint8_t *) v[i];
			order[i] = i;
		}
		rc = cx_keyseg_lookup(s, ref, values, lens, order, NULL, n, count_hit,
							  hits, err);
	}
	*gets = s->stats.gets - before;
	free(v);
	free(values);
	free(lens);
	free(order);
	return rc;
}

/* The filter answers for absent values; present ones still reach their
 * blocks. */
CX_TEST(key_filter_spares_the_blocks_of_absent_values)
{
	cx_objstore *s = mw_open_store();
	cx_keyseg_ref ref;
	uint32_t	hits;
	uint64_t	gets;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(write_segment(s, 20000, &ref, &err), &err);
	REQUIRE_OK(check_entries(s, &ref, 20000, &err), &err);
	/* "k<even>x": spread over the segment's range, never in it */
	REQUIRE_OK(look_up(s, &ref, 0, 20, 1000, "x", &hits, &gets, &err), &err);
	/* tail, filter, and a block per level for the few false positives;
	 * without the filter: every data block of the 1000 values */
	printf("# absent: %llu GETs\n", (unsigned long long) gets);
	CHECK(hits == 0 && gets <= 2 + 3 * 10);
	REQUIRE_OK(look_up(s, &ref, 0, 20, 1000, "x", &hits, &gets, &err), &err);
	CHECK(hits == 0 && gets <= 10);		/* the filter is kept */
	REQUIRE_OK(look_up(s, &ref, 5000, 1, 1000, "", &hits, &gets, &err), &err);
	CHECK(hits == 1000 && gets >= 10);
	cx_keyseg_ref_free(&ref);
	cx_obj_close(s);
}

/* One-off lookups of a big segment do not read its filter (40 KB here);
 * once its lookups might have read as many bytes of blocks, it is read and
 * kept, and an absent value then costs no GET at all. */
CX_TEST(key_filter_is_read_once_lookups_have_earned_it)
{
	cx_objstore *s = mw_open_store();
	cx_keyseg_ref ref;
	uint32_t	hits;
	uint64_t	gets;
	uint64_t	before;
	uint64_t	kept;
	int			lookups = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(write_segment(s, 20000, &ref, &err), &err);
	kept = cx_keyfilter_kept_bytes();
	do
	{
		before = s->stats.bytes_read;
		REQUIRE_OK(look_up(s, &ref, 100 * (uint32_t) lookups, 1, 1, "x", &hits,
						   &gets, &err), &err);
		lookups++;
	} while (s->stats.bytes_read - before < 20000 * 16 / 8 && lookups < 20);
	/* 4 KiB owed per one-value lookup: the tenth reaches 40 KB */
	CHECK(lookups == 10);
	/* the kept filter is counted: 20,000 values at 16 bits */
	CHECK(cx_keyfilter_kept_bytes() >= kept + 20000 * 16 / 8);
	REQUIRE_OK(look_up(s, &ref, 12345, 1, 1, "x", &hits, &gets, &err), &err);
	CHECK(hits == 0 && gets == 0);
	cx_keyseg_ref_free(&ref);
	cx_obj_close(s);
}

/*
 * The filters of many small segments looked up in turn stay kept: a writer
 * of 1,000 stores in turn looks up each store's few segments once per
 * commit of that store, and a table of 256 filters had dropped each one by
 * its next lookup, so every new key read blocks again.
 */
CX_TEST(key_filters_of_a_thousand_segments_looked_up_in_turn_stay_kept)
{
	enum
	{
		SEGMENTS = 1000
	};
	cx_objstore *s = mw_open_store();
	cx_keyseg_ref *refs = calloc(SEGMENTS, sizeof(cx_keyseg_ref));
	uint32_t	hits;
	uint64_t	gets;
	uint64_t	second_pass = 0;
	cx_err		err;

	REQUIRE(s != NULL && refs != NULL);
	for (int i = 0; i < SEGMENTS; i++)
		REQUIRE_OK(write_segment(s, 20, &refs[i], &err), &err);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < SEGMENTS; i++)
		{
			REQUIRE_OK(look_up(s, &refs[i], (uint32_t) pass, 1, 1, "x", &hits,
							   &gets, &err), &err);
			CHECK(hits == 0);
			if (pass == 1)
				second_pass += gets;
		}
	printf("# second pass over %d segments: %llu GETs\n", SEGMENTS,
		   (unsigned long long) second_pass);
	/* each filter was earned by its first lookup and is still kept */
	CHECK(second_pass < SEGMENTS / 10);
	for (int i = 0; i < SEGMENTS; i++)
		cx_keyseg_ref_free(&refs[i]);
	free(refs);
	cx_obj_close(s);
}

/*
 * Rewrites ref's object as a segment written before filters existed: the
 * blocks before the filter, then the root without the filter flag and
 * fields.
 */
static cx_code
strip_filter(cx_objstore *s, cx_keyseg_ref *ref, cx_err *err)
{
	cx_buf		obj;
	cx_buf		out;
	const uint8_t *root;
	uint64_t	filter_at;
	uint32_t	root_len = ref->tail_len - CX_KEYSEG_TRAILER_LEN;
	size_t		start;
	uint8_t		trailer[CX_KEYSEG_TRAILER_LEN];
	cx_code		rc;

	cx_buf_init(&obj);
	cx_buf_init(&out);
	if (cx_obj_get(s, ref->path, &obj, err) != CX_OK)
		return err->code;
	/* root body: column u32, flags u8, depth u8, entries u64, filter offset
	 * u64 and length u32, then the children */
	root = obj.data + obj.len - ref->tail_len + CX_FRAME_HEADER_LEN;
	filter_at = cx_load_u64(root + 14);
	cx_buf_put(&out, obj.data, filter_at);
	start = cx_frame_begin(&out, CX_KEYSEG_ROOT_MAGIC, 1);
	cx_buf_put(&out, root, 4);
	cx_buf_put_u8(&out, root[4] & ~CX_KEYSEG_HAS_FILTER);
	cx_buf_put(&out, root + 5, 1 + 8);
	cx_buf_put(&out, root + 26,
			   root_len - CX_FRAME_HEADER_LEN - CX_FRAME_TRAILER_LEN - 26);
	rc = cx_frame_end(&out, start, "test root", err);
	cx_store_u32(trailer, (uint32_t) (out.len - filter_at));
	memcpy(trailer + 4, CX_KEYSEG_TRAILER_MAGIC, 4);
	cx_buf_put(&out, trailer, sizeof(trailer));
	ref->size = out.len;
	ref->tail_len = (uint32_t) (out.len - filter_at);
	if (rc == CX_OK)
		rc = cx_obj_put(s, ref->path, out.data, out.len, CX_PUT_OVERWRITE, err);
	cx_buf_free(&obj);
	cx_buf_free(&out);
	return rc;
}

CX_TEST(key_index_segment_without_filter_still_reads)
{
	cx_objstore *s = mw_open_store();
	cx_keyseg_ref ref;
	uint32_t	hits;
	uint64_t	gets;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(write_segment(s, 2000, &ref, &err), &err);
	REQUIRE_OK(strip_filter(s, &ref, &err), &err);
	REQUIRE_OK(check_entries(s, &ref, 2000, &err), &err);
	REQUIRE_OK(look_up(s, &ref, 1990, 1, 20, "", &hits, &gets, &err), &err);
	CHECK(hits == 10);
	/* absent values are looked for in their blocks */
	REQUIRE_OK(look_up(s, &ref, 0, 20, 100, "x", &hits, &gets, &err), &err);
	CHECK(hits == 0 && gets >= 10);
	cx_keyseg_ref_free(&ref);
	cx_obj_close(s);
}

/* 50,000 entries in 256-byte blocks: about 6,000 data blocks, 1.5 MiB,
 * walked in order in two GETs of data blocks (one per block before). */
CX_TEST(key_index_cursor_reads_data_blocks_in_few_gets)
{
	cx_objstore *s = mw_open_store();
	cx_keyseg_ref ref;
	cx_keyseg_cursor *c = NULL;
	const cx_keyentry *e;
	uint64_t	gets;
	uint32_t	n = 0;
	bool		in_order = true;
	cx_code		rc;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(write_segment(s, 50000, &ref, &err), &err);
	REQUIRE_OK(cx_keyseg_cursor_open(s, &ref, &c, &err), &err);
	gets = s->stats.gets;
	while ((rc = cx_keyseg_cursor_next(c, &e, &err)) == CX_OK && e != NULL)
		in_order &= e->row == n++;
	CHECK(rc == CX_OK && n == 50000 && in_order);
	CHECK(ref.size > 1500000 && s->stats.gets - gets <= 2);
	cx_keyseg_cursor_close(c);
	cx_keyseg_ref_free(&ref);
	cx_obj_close(s);
}

/*
 * Sets the length of the first child the root of a depth-1 segment lists
 * (its first data block) to 0 and frames the root again, as a damaged or
 * hostile index would say it (found by fuzz_key_index: the cursor then
 * offset a buffer it had never read into).
 */
static cx_code
empty_first_leaf(cx_objstore *s, const cx_keyseg_ref *ref, cx_err *err)
{
	cx_buf		obj;
	cx_buf		out;
	uint64_t	root_at;
	uint8_t    *body;
	uint32_t	body_len = ref->tail_len - CX_KEYSEG_TRAILER_LEN -
		CX_FRAME_HEADER_LEN - CX_FRAME_TRAILER_LEN;
	size_t		start;
	cx_code		rc;

	cx_buf_init(&obj);
	cx_buf_init(&out);
	if (cx_obj_get(s, ref->path, &obj, err) != CX_OK)
		return err->code;
	root_at = obj.len - ref->tail_len;
	body = obj.data + root_at + CX_FRAME_HEADER_LEN;
	/* root body: column u32, flags u8, depth u8, entries u64, filter
	 * offset u64 and length u32, the child count u32, then each child:
	 * its first value (u32 length and bytes), offset u64, length u32 */
	if (body[5] != 1)
		rc = cx_err_set(err, CX_ERR_INVALID, "the segment is %u deep", body[5]);
	else
	{
		cx_store_u32(body + 30 + 4 + cx_load_u32(body + 30) + 8, 0);
		cx_buf_put(&out, obj.data, root_at);
		start = cx_frame_begin(&out, CX_KEYSEG_ROOT_MAGIC, 1);
		cx_buf_put(&out, body, body_len);
		rc = cx_frame_end(&out, start, "test root", err);
		cx_buf_put(&out, obj.data + obj.len - CX_KEYSEG_TRAILER_LEN,
				   CX_KEYSEG_TRAILER_LEN);
	}
	if (rc == CX_OK)
		rc = cx_obj_put(s, ref->path, out.data, out.len, CX_PUT_OVERWRITE, err);
	cx_buf_free(&obj);
	cx_buf_free(&out);
	return rc;
}

CX_TEST(key_index_cursor_refuses_an_empty_data_block)
{
	cx_objstore *s = mw_open_store();
	cx_keyseg_ref ref;
	cx_keyseg_cursor *c = NULL;
	const cx_keyentry *e;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(write_segment(s, 40, &ref, &err), &err);
	REQUIRE_OK(empty_first_leaf(s, &ref, &err), &err);
	REQUIRE_OK(cx_keyseg_cursor_open(s, &ref, &c, &err), &err);
	CHECK_CODE(cx_keyseg_cursor_next(c, &e, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "cut short") != NULL);
	cx_keyseg_cursor_close(c);
	cx_keyseg_ref_free(&ref);
	cx_obj_close(s);
}

/* A filter block whose bytes were damaged: the lookup and verify report
 * the segment corrupt (the base probe then reads by column). */
CX_TEST(key_index_damaged_filter_is_corrupt)
{
	cx_objstore *s = mw_open_store();
	cx_keyseg_ref ref;
	cx_buf		obj;
	uint32_t	hits;
	uint64_t	gets;
	uint64_t	filter_at;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(write_segment(s, 2000, &ref, &err), &err);
	cx_buf_init(&obj);
	REQUIRE_OK(cx_obj_get(s, ref.path, &obj, &err), &err);
	filter_at = cx_load_u64(obj.data + obj.len - ref.tail_len +
							CX_FRAME_HEADER_LEN + 14);
	obj.data[filter_at + CX_FRAME_HEADER_LEN + 12] ^= 0x10;	/* a bit */
	REQUIRE_OK(cx_obj_put(s, ref.path, obj.data, obj.len, CX_PUT_OVERWRITE,
						  &err), &err);
	CHECK_CODE(look_up(s, &ref, 0, 20, 100, "x", &hits, &gets, &err),
			   CX_ERR_CORRUPT);
	CHECK_CODE(check_entries(s, &ref, 2000, &err), CX_ERR_CORRUPT);
	cx_buf_free(&obj);
	cx_keyseg_ref_free(&ref);
	cx_obj_close(s);
}

/* A batch of new keys into an indexed base of 20,000 rows: the probe reads
 * the segment's tail and filter, and no data block but for false
 * positives. */
CX_TEST(probe_of_new_keys_reads_no_index_block)
{
	cx_objstore *s = mw_open_store();
	mw_genrow  *rows = calloc(20000, sizeof(mw_genrow));
	char	  (*ids)[16] = calloc(21000, 16);	/* present, then new */
	const uint8_t **values = calloc(1000, sizeof(*values));
	size_t	   *lens = calloc(1000, sizeof(size_t));
	cx_manifest *m = NULL;
	cx_keyindex_result res;
	cx_merge_result mres;
	cx_probe_result pr;
	uint64_t	gets;
	cx_err		err;

	REQUIRE(s != NULL && rows != NULL && ids != NULL && values != NULL &&
			lens != NULL);
	/* the new keys fall between present ones all over the range */
	for (int i = 0; i < 20000; i++)
		snprintf(ids[i], 16, "id%d", i);
	for (int i = 0; i < 1000; i++)
		snprintf(ids[20000 + i], 16, "id%dx", i * 20);
	for (int i = 0; i < 20000; i++)
		rows[i] = (mw_genrow) {ids[i], i % 7, 1000 + i, false};
	REQUIRE_OK(mw_fake_seal(s, "f", rows, 20000, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &mres, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &res, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	for (int i = 0; i < 1000; i++)
	{
		values[i] = (const uint8_t *) ids[20000 + i];
		lens[i] = strlen(ids[20000 + i]);
	}
	gets = s->stats.gets;
	REQUIRE_OK(cx_base_probe(s, m, 0, values, lens, 1000, &pr, &err), &err);
	gets = s->stats.gets - gets;
	printf("# 1000 new keys: %llu GETs\n", (unsigned long long) gets);
	CHECK(pr.nhits == 0 && pr.index_segments_read == 1 &&
		  pr.fragments_scanned == 0);
	/* tail, filter, and a data block per false positive (about 3) */
	CHECK(gets <= 2 + 10);
	cx_probe_result_free(&pr);
	cx_manifest_free(m);
	free(rows);
	free(ids);
	free(values);
	free(lens);
	cx_obj_close(s);
}
