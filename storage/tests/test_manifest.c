/*
 * test_manifest.c — manifest encoding, corruption handling, loading and
 * newest-version discovery (hint, probing, listing fallback).
 */
#include <stdlib.h>

#include "util/cx_crc32c.h"
#include "table/cx_manifest.h"
#include "cx_test.h"
#include "mw_util.h"
#include "swtest.h"

#define HEADER_LEN 12
#define TRAILER_LEN 4

static cx_schema *
test_schema(void)
{
	cx_schema  *s = cx_schema_new();
	cx_err		err;

	if (s == NULL ||
		cx_schema_add(s, "id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		cx_schema_add(s, "n", CX_T_INT64, 0, NULL, &err) != CX_OK ||
		cx_schema_add(s, "embedding", CX_T_LIST, CX_T_FLOAT32, NULL, &err) != CX_OK ||
		cx_schema_add(s, "where", CX_T_EXTERNAL, 0, "point", &err) != CX_OK)
	{
		cx_schema_free(s);
		return NULL;
	}
	return s;
}

/* A fragment description with distinct values in every field. */
static void
fill_fragment(cx_fragment_info *fi, int i, uint32_t ncolumns)
{
	static char path[64];

	memset(fi, 0, sizeof(*fi));
	snprintf(path, sizeof(path), "data/frag-%03d.parquet", i);
	fi->path = path;
	fi->size = 100000 + i;
	fi->rows = 1000 + i;
	fi->footer_offset = 90000 + i;
	fi->footer_len = 5000 + i;
	fi->footer_crc = 0xc0cc4ef5u ^ (uint32_t) i;
	fi->ncolumns = ncolumns;
	fi->stats = calloc(ncolumns ? ncolumns : 1, sizeof(cx_colstats));
	for (uint32_t c = 0; c < ncolumns; c++)
	{
		cx_colstats *st = &fi->stats[c];

		st->null_count = c;
		st->value_count = fi->rows - c;
		st->has_min = true;
		st->min_len = 3;
		memcpy(st->min, "abc", 3);
		st->has_max = c % 2 == 0;
		if (st->has_max)
		{
			st->max_len = 4;
			memcpy(st->max, "wxyz", 4);
		}
	}
}

/* A manifest with a schema, a unique key, nfrag fragments with statistics
 * (the second one with a deletion vector), two shards and two extensions
 * (one of them empty). */
static cx_manifest *
rich_manifest(uint64_t version, int nfrag)
{
	cx_manifest *m = cx_manifest_new();
	cx_schema  *schema = test_schema();
	cx_err		err;
	static uint8_t ext_bytes[] = {1, 2, 3, 4, 5};

	if (m == NULL || schema == NULL ||
		cx_manifest_set_schema(m, schema, &err) != CX_OK)
		goto fail;
	m->version = version;
	for (int i = 0; i < 16; i++)
		m->commit_id[i] = (uint8_t) (0xA0 + i);
	m->committed_at_us = 1700000000000000LL + (int64_t) version;
	m->operation = cx_strdup("append");
	for (int i = 0; i < nfrag; i++)
	{
		cx_fragment_info fi;
		cx_code		rc;

		fill_fragment(&fi, i, schema->ncolumns);
		rc = cx_manifest_add_fragment(m, &fi, &err);
		free(fi.stats);
		if (rc != CX_OK)
			goto fail;
	}
	if (cx_manifest_set_key(m, "id", true, &err) != CX_OK ||
		cx_manifest_set_merged_gen(m, "shard-b", 17, &err) != CX_OK ||
		cx_manifest_register_shard(m, "shard-a", &err) != CX_OK)
		goto fail;
	if (nfrag > 1)
	{
		static const uint32_t deleted[] = {0, 5, 999};

		if (cx_manifest_add_deletions(m, 1, deleted, 3, &err) != CX_OK)
			goto fail;
	}
	m->exts = calloc(2, sizeof(cx_manifest_ext));
	if (m->exts == NULL)
		goto fail;
	m->nexts = 2;
	m->exts[0].tag = 0x53484152;
	m->exts[0].len = sizeof(ext_bytes);
	m->exts[0].data = cx_memdup(ext_bytes, sizeof(ext_bytes));
	m->exts[1].tag = 7;
	m->exts[1].len = 0;
	m->exts[1].data = NULL;
	cx_schema_free(schema);
	return m;
fail:
	cx_schema_free(schema);
	cx_manifest_free(m);
	return NULL;
}

static bool
fragments_equal(const cx_fragment_info *a, const cx_fragment_info *b)
{
	if (strcmp(a->path, b->path) != 0 || a->size != b->size ||
		a->rows != b->rows || a->footer_offset != b->footer_offset ||
		a->footer_len != b->footer_len || a->footer_crc != b->footer_crc ||
		a->ncolumns != b->ncolumns)
		return false;
	for (uint32_t c = 0; c < a->ncolumns; c++)
		if (!mw_colstats_equal(&a->stats[c], &b->stats[c]))
			return false;
	return true;
}

static bool
dvs_equal(const cx_manifest *a, const cx_manifest *b)
{
	for (uint32_t i = 0; i < a->nfragments; i++)
	{
		uint32_t	n = cx_manifest_deleted_count(a, i);

		if (n != cx_manifest_deleted_count(b, i) ||
			(n > 0 && memcmp(a->dvs[i].rows, b->dvs[i].rows, n * 4) != 0))
			return false;
	}
	return true;
}

static bool
shards_equal(const cx_manifest *a, const cx_manifest *b)
{
	if (a->nshards != b->nshards)
		return false;
	for (uint32_t i = 0; i < a->nshards; i++)
		if (strcmp(a->shards[i].shard_id, b->shards[i].shard_id) != 0 ||
			a->shards[i].merged_gen != b->shards[i].merged_gen)
			return false;
	return true;
}

static bool
manifests_equal(const cx_manifest *a, const cx_manifest *b)
{
	if ((a->key_column == NULL) != (b->key_column == NULL) ||
		(a->key_column && strcmp(a->key_column, b->key_column) != 0) ||
		a->unique_key != b->unique_key ||
		!dvs_equal(a, b) || !shards_equal(a, b))
		return false;
	if (a->version != b->version ||
		memcmp(a->commit_id, b->commit_id, 16) != 0 ||
		a->committed_at_us != b->committed_at_us ||
		strcmp(a->operation ? a->operation : "", b->operation ? b->operation : "") != 0 ||
		(a->schema == NULL) != (b->schema == NULL) ||
		(a->schema && !cx_schema_equal(a->schema, b->schema)) ||
		a->nfragments != b->nfragments || a->nexts != b->nexts)
		return false;
	for (uint32_t i = 0; i < a->nfragments; i++)
		if (!fragments_equal(&a->fragments[i], &b->fragments[i]))
			return false;
	for (uint32_t i = 0; i < a->nexts; i++)
		if (a->exts[i].tag != b->exts[i].tag || a->exts[i].len != b->exts[i].len ||
			(a->exts[i].len && memcmp(a->exts[i].data, b->exts[i].data, a->exts[i].len) != 0))
			return false;
	return true;
}

/* Wraps body bytes in a valid frame (the given format version, flags 0). */
static void
frame(const uint8_t *body, size_t len, uint16_t format, cx_buf *out)
{
	cx_buf_reset(out);
	cx_buf_put(out, CX_MANIFEST_MAGIC, 4);
	cx_buf_put_u16(out, format);
	cx_buf_put_u16(out, 0);
	cx_buf_put_u32(out, (uint32_t) len);
	cx_buf_put(out, body, len);
	cx_buf_put_u32(out, cx_crc32c(0, out->data, out->len));
}

/* Recomputes the trailer after a test edited the header or body. */
static void
fix_crc(cx_buf *b)
{
	cx_store_u32(b->data + b->len - TRAILER_LEN,
				 cx_crc32c(0, b->data, b->len - TRAILER_LEN));
}

/* Decoding must fail cleanly: an error code, no manifest, the name quoted. */
static bool
rejected(const uint8_t *data, size_t len, cx_code *code)
{
	cx_manifest *m = (cx_manifest *) 1;
	cx_err		err;
	cx_code		rc = cx_manifest_decode(data, len, "obj-name", &m, &err);

	if (code)
		*code = rc;
	if (rc == CX_OK)
	{
		cx_manifest_free(m);
		return false;
	}
	return m == NULL && strstr(err.msg, "obj-name") != NULL;
}

static cx_code
put_manifest(cx_objstore *s, const cx_manifest *m, uint64_t at_version,
			 cx_err *err)
{
	char		key[64];
	cx_buf		b;
	cx_code		rc;

	cx_buf_init(&b);
	rc = cx_manifest_encode(m, &b, err);
	cx_manifest_key(at_version, key, sizeof(key));
	if (rc == CX_OK)
		rc = cx_obj_put(s, key, b.data, b.len, CX_PUT_IF_ABSENT, err);
	cx_buf_free(&b);
	return rc;
}

/* Writes versions first..last directly (no commit protocol). */
static cx_code
put_versions(cx_objstore *s, uint64_t first, uint64_t last, cx_err *err)
{
	for (uint64_t v = first; v <= last; v++)
	{
		cx_manifest *m = cx_manifest_new();
		cx_code		rc;

		if (m == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "oom");
		m->version = v;
		m->operation = cx_strdup("test");
		rc = put_manifest(s, m, v, err);
		cx_manifest_free(m);
		if (rc != CX_OK)
			return rc;
	}
	return CX_OK;
}

static cx_code
delete_version(cx_objstore *s, uint64_t v, cx_err *err)
{
	char		key[64];

	cx_manifest_key(v, key, sizeof(key));
	return cx_obj_delete(s, key, err);
}

CX_TEST(manifest_round_trip_is_exact)
{
	cx_manifest *m = rich_manifest(42, 3);
	cx_manifest *d = NULL;
	cx_manifest *c = NULL;
	cx_buf		b1;
	cx_buf		b2;
	cx_err		err;

	REQUIRE(m != NULL);
	cx_buf_init(&b1);
	cx_buf_init(&b2);
	REQUIRE_OK(cx_manifest_encode(m, &b1, &err), &err);
	REQUIRE_OK(cx_manifest_decode(b1.data, b1.len, "m", &d, &err), &err);
	CHECK(manifests_equal(m, d));
	/* live rows: three of the second fragment's are deleted */
	CHECK(cx_manifest_rows(d) == 1000 + 1001 + 1002 - 3);
	CHECK(strcmp(d->key_column, "id") == 0 && d->unique_key);
	CHECK(d->nshards == 2 && strcmp(d->shards[0].shard_id, "shard-a") == 0);
	CHECK(cx_manifest_merged_gen(d, "shard-b") == 17);
	CHECK(mw_is_deleted(d, 1, 999) && !mw_is_deleted(d, 0, 0));
	CHECK(d->schema->columns[3].ext_type &&
		  strcmp(d->schema->columns[3].ext_type, "point") == 0);
	/* Re-encoding the decoded manifest gives the same bytes. */
	REQUIRE_OK(cx_manifest_encode(d, &b2, &err), &err);
	CHECK(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0);
	c = cx_manifest_clone(d);
	REQUIRE(c != NULL);
	CHECK(manifests_equal(m, c));
	cx_manifest_free(c);
	cx_manifest_free(d);
	cx_manifest_free(m);
	cx_buf_free(&b1);
	cx_buf_free(&b2);
}

/* A manifest's memory counts what each fragment holds. */
CX_TEST(manifest_memory_follows_its_fragments)
{
	cx_manifest *one = rich_manifest(1, 1);
	cx_manifest *many = rich_manifest(1, 11);
	size_t		per_fragment;

	REQUIRE(one != NULL && many != NULL);
	per_fragment = sizeof(cx_fragment_info) + strlen(one->fragments[0].path) +
		one->fragments[0].ncolumns * sizeof(cx_colstats);
	CHECK(cx_manifest_memory(one) > sizeof(cx_manifest) + per_fragment);
	CHECK(cx_manifest_memory(many) >= cx_manifest_memory(one) + 10 * per_fragment);
	cx_manifest_free(one);
	cx_manifest_free(many);
}

CX_TEST(manifest_round_trip_minimal)
{
	cx_manifest *m = cx_manifest_new();
	cx_manifest *d = NULL;
	cx_buf		b;
	cx_err		err;

	REQUIRE(m != NULL);
	m->version = 1;
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	/* header, version, id, time, empty operation, no schema, schema id,
	 * last field id, history count, empty key, unique_key,
	 * truncated_before_us, three counts, crc */
	CHECK(b.len == 12 + 8 + 16 + 8 + 2 + 1 + 4 + 4 + 4 + 2 + 1 + 8 + 4 + 4 + 4 + 4);
	CHECK(memcmp(b.data, "CXM1", 4) == 0);
	CHECK(cx_load_u16(b.data + 4) == 4 && cx_load_u16(b.data + 6) == 0);
	CHECK(cx_load_u32(b.data + 8) == b.len - 16);
	REQUIRE_OK(cx_manifest_decode(b.data, b.len, "m", &d, &err), &err);
	CHECK(d->schema == NULL && d->nfragments == 0 && d->nexts == 0);
	CHECK(d->key_column == NULL && !d->unique_key && d->nshards == 0);
	CHECK(d->truncated_before_us == 0);
	CHECK(strcmp(d->operation, "") == 0);
	cx_manifest_free(d);
	cx_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(manifest_every_flipped_byte_is_detected)
{
	cx_manifest *m = rich_manifest(7, 2);
	cx_buf		b;
	cx_err		err;
	static const uint8_t flips[] = {0x01, 0x80, 0xFF};

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	/* Header, body and checksum alike: CRC-32C catches every single-byte
	 * error, and it is verified before any header field is believed (so a
	 * damaged format version reads as corrupt, not as "too new"). */
	for (size_t i = 0; i < b.len; i++)
		for (size_t f = 0; f < sizeof(flips); f++)
		{
			cx_code		code;

			b.data[i] ^= flips[f];
			CHECK(rejected(b.data, b.len, &code));
			CHECK(code == CX_ERR_CORRUPT);
			b.data[i] ^= flips[f];
		}
	cx_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(manifest_truncation_and_trailing_bytes_are_detected)
{
	cx_manifest *m = rich_manifest(7, 2);
	cx_buf		b;
	cx_err		err;
	cx_code		code;

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	for (size_t len = 0; len < b.len; len++)
	{
		CHECK(rejected(b.data, len, &code));
		CHECK(code == CX_ERR_CORRUPT);
	}
	cx_buf_put(&b, "\0\0\0", 3);
	CHECK(rejected(b.data, b.len, &code));
	CHECK(code == CX_ERR_CORRUPT);
	cx_manifest_free(m);
	cx_buf_free(&b);
}

/* A body cut short but framed with a valid checksum, as a buggy writer might
 * produce: the field decoders must notice on their own. */
CX_TEST(manifest_truncated_body_with_valid_crc_is_detected)
{
	cx_manifest *m = rich_manifest(9, 3);
	cx_buf		b;
	cx_buf		f;
	cx_err		err;
	cx_code		code;

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	cx_buf_init(&f);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	for (size_t n = 0; n < b.len - HEADER_LEN - TRAILER_LEN; n++)
	{
		frame(b.data + HEADER_LEN, n, CX_MANIFEST_FORMAT, &f);
		CHECK(rejected(f.data, f.len, &code));
		CHECK(code == CX_ERR_CORRUPT);
	}
	/* One byte too many inside the body. */
	cx_buf_reset(&f);
	cx_buf_put(&f, b.data + HEADER_LEN, b.len - HEADER_LEN - TRAILER_LEN);
	cx_buf_put_u8(&f, 0);
	{
		cx_buf		g;

		cx_buf_init(&g);
		frame(f.data, f.len, CX_MANIFEST_FORMAT, &g);
		CHECK(rejected(g.data, g.len, &code));
		CHECK(code == CX_ERR_CORRUPT);
		cx_buf_free(&g);
	}
	cx_manifest_free(m);
	cx_buf_free(&b);
	cx_buf_free(&f);
}

/* Random edits of the body with the checksum fixed up: decoding may succeed
 * or fail, but must never crash, leak or read out of bounds (ASan run). */
CX_TEST(manifest_fuzzed_bodies_never_crash)
{
	cx_manifest *m = rich_manifest(11, 4);
	cx_buf		b;
	cx_err		err;
	uint32_t	seed = 12345;

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	for (int iter = 0; iter < 20000; iter++)
	{
		cx_buf		c;
		cx_manifest *d = NULL;
		int			edits = 1 + iter % 4;

		cx_buf_init(&c);
		cx_buf_put(&c, b.data, b.len);
		for (int e = 0; e < edits; e++)
		{
			seed = seed * 1103515245u + 12345u;
			c.data[HEADER_LEN + (seed >> 8) % (c.len - HEADER_LEN - TRAILER_LEN)] =
				(uint8_t) (seed >> 24);
		}
		fix_crc(&c);
		if (cx_manifest_decode(c.data, c.len, "fuzz", &d, &err) == CX_OK)
			cx_manifest_free(d);
		else
			CHECK(d == NULL && strstr(err.msg, "fuzz") != NULL);
		cx_buf_free(&c);
	}
	cx_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(manifest_bad_field_values_with_valid_crc_are_rejected)
{
	cx_manifest *m = rich_manifest(5, 1);
	cx_buf		b;
	cx_err		err;
	cx_code		code;
	size_t		schema_flag = HEADER_LEN + 8 + 16 + 8 + 2 + strlen("append");

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	/* has_schema must be 0 or 1. */
	b.data[schema_flag] = 2;
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code));
	CHECK(code == CX_ERR_CORRUPT);
	b.data[schema_flag] = 1;
	/* A NUL inside a path would make it a different, shorter key. */
	{
		uint8_t    *path = memmem(b.data, b.len, "data/frag-000.parquet", 21);

		REQUIRE(path != NULL);
		path[9] = '\0';
		fix_crc(&b);
		CHECK(rejected(b.data, b.len, &code));
		CHECK(code == CX_ERR_CORRUPT);
	}
	cx_manifest_free(m);

	/* A fragment path that escapes the store. */
	m = rich_manifest(5, 1);
	REQUIRE(m != NULL);
	m->fragments[0].path[5] = '.';
	m->fragments[0].path[6] = '.';
	m->fragments[0].path[7] = '/';
	cx_buf_reset(&b);
	CHECK_CODE(cx_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	cx_manifest_free(m);

	/* A footer that lies outside the fragment. */
	m = rich_manifest(5, 1);
	REQUIRE(m != NULL);
	m->fragments[0].footer_offset = m->fragments[0].size;
	CHECK_CODE(cx_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	cx_manifest_free(m);

	/* Version 0 is never a manifest. */
	m = rich_manifest(0, 0);
	REQUIRE(m != NULL);
	cx_buf_reset(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	CHECK(rejected(b.data, b.len, &code));
	CHECK(code == CX_ERR_CORRUPT);
	cx_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(manifest_huge_counts_are_rejected_before_allocating)
{
	cx_buf		body;
	cx_buf		f;
	cx_code		code;

	cx_buf_init(&body);
	cx_buf_init(&f);
	cx_buf_put_u64(&body, 1);
	cx_buf_grow(&body, 16);
	cx_buf_put_i64(&body, 0);
	cx_buf_put_str16(&body, "x");
	cx_buf_put_u8(&body, 0);
	cx_buf_put_str16(&body, "");	/* no key */
	cx_buf_put_u8(&body, 0);
	cx_buf_put_u32(&body, 0xFFFFFFFFu);	/* nfragments */
	cx_buf_put_u32(&body, 0);
	cx_buf_put_u32(&body, 0);
	frame(body.data, body.len, CX_MANIFEST_FORMAT, &f);
	CHECK(rejected(f.data, f.len, &code));
	CHECK(code == CX_ERR_CORRUPT);

	/* and the same for shards */
	body.len -= 12;
	cx_buf_put_u32(&body, 0);
	cx_buf_put_u32(&body, 0xFFFFFFF0u);	/* nshards */
	cx_buf_put_u32(&body, 0);
	frame(body.data, body.len, CX_MANIFEST_FORMAT, &f);
	CHECK(rejected(f.data, f.len, &code));
	CHECK(code == CX_ERR_CORRUPT);

	/* and for extensions */
	body.len -= 8;
	cx_buf_put_u32(&body, 0);
	cx_buf_put_u32(&body, 0x7FFFFFFFu);	/* nexts */
	frame(body.data, body.len, CX_MANIFEST_FORMAT, &f);
	CHECK(rejected(f.data, f.len, &code));
	CHECK(code == CX_ERR_CORRUPT);
	cx_buf_free(&body);
	cx_buf_free(&f);
}

CX_TEST(manifest_future_format_and_flags_are_refused)
{
	cx_manifest *m = rich_manifest(3, 1);
	cx_buf		b;
	cx_err		err;
	cx_manifest *d = NULL;

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	cx_store_u16(b.data + 4, CX_MANIFEST_FORMAT + 1);
	fix_crc(&b);
	CHECK_CODE(cx_manifest_decode(b.data, b.len, "future", &d, &err),
			   CX_ERR_UNSUPPORTED);
	CHECK(d == NULL && strstr(err.msg, "future") && strstr(err.msg, "newer"));

	/* without the checksum fixed up it is damage, not a newer format */
	b.data[b.len - 1] ^= 1;
	CHECK_CODE(cx_manifest_decode(b.data, b.len, "future", &d, &err),
			   CX_ERR_CORRUPT);

	cx_buf_reset(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	cx_store_u16(b.data + 6, 0x0001);
	fix_crc(&b);
	CHECK_CODE(cx_manifest_decode(b.data, b.len, "flags", &d, &err),
			   CX_ERR_UNSUPPORTED);
	CHECK(d == NULL);
	cx_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(manifest_key_is_zero_padded)
{
	char		key[64];

	cx_manifest_key(42, key, sizeof(key));
	CHECK(strcmp(key, "_versions/00000000000000000042.manifest") == 0);
	cx_manifest_key(UINT64_MAX, key, sizeof(key));
	CHECK(strcmp(key, "_versions/18446744073709551615.manifest") == 0);
}

CX_TEST(manifest_load_checks_version_against_key)
{
	cx_objstore *s;
	cx_manifest *m = rich_manifest(5, 2);
	cx_manifest *d = NULL;
	cx_err		err;

	REQUIRE(m != NULL);
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_manifest(s, m, 5, &err), &err);
	REQUIRE_OK(put_manifest(s, m, 3, &err), &err);	/* wrong place */
	REQUIRE_OK(cx_manifest_load(s, 5, &d, &err), &err);
	CHECK(manifests_equal(m, d));
	cx_manifest_free(d);
	d = NULL;
	CHECK_CODE(cx_manifest_load(s, 3, &d, &err), CX_ERR_CORRUPT);
	CHECK(d == NULL && strstr(err.msg, "_versions/00000000000000000003.manifest"));
	CHECK_CODE(cx_manifest_load(s, 4, &d, &err), CX_ERR_NOT_FOUND);
	CHECK_CODE(cx_manifest_load(s, 0, &d, &err), CX_ERR_NOT_FOUND);
	CHECK(d == NULL);
	cx_manifest_free(m);
	cx_obj_close(s);
}

CX_TEST(manifest_load_names_a_corrupt_object)
{
	cx_objstore *s;
	cx_manifest *d = NULL;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "_versions/00000000000000000001.manifest",
						  "CXM1garbage-garbage", 19, CX_PUT_IF_ABSENT, &err), &err);
	CHECK_CODE(cx_manifest_load(s, 1, &d, &err), CX_ERR_CORRUPT);
	CHECK(d == NULL);
	CHECK(strstr(err.msg, "/store/_versions/00000000000000000001.manifest") != NULL);
	cx_obj_close(s);
}

CX_TEST(latest_of_empty_store_is_zero)
{
	cx_objstore *s;
	cx_manifest *m = (cx_manifest *) 1;
	uint64_t	v = 99;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 0);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m == NULL);
	cx_obj_close(s);
}

CX_TEST(latest_with_current_hint_costs_two_heads)
{
	cx_objstore *s;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_versions(s, 1, 5, &err), &err);
	REQUIRE_OK(cx_manifest_write_hint(s, 5, &err), &err);
	memset(&s->stats, 0, sizeof(s->stats));
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 5);
	CHECK(s->stats.gets == 1 && s->stats.heads == 2 && s->stats.lists == 0);
	cx_obj_close(s);
}

CX_TEST(latest_with_stale_hint_probes_forward)
{
	cx_objstore *s;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_versions(s, 1, 300, &err), &err);
	for (uint64_t hint = 1; hint <= 300; hint += 37)
	{
		REQUIRE_OK(cx_manifest_write_hint(s, hint, &err), &err);
		memset(&s->stats, 0, sizeof(s->stats));
		REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
		CHECK(v == 300);
		CHECK(s->stats.lists == 0);
		/* galloping then bisecting: logarithmic, not linear, in the lag */
		CHECK(s->stats.heads <= 2 + 2 * 9);
	}
	cx_obj_close(s);
}

CX_TEST(latest_without_hint_lists)
{
	cx_objstore *s;
	uint64_t	v = 0;
	cx_manifest *m = NULL;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_versions(s, 1, 7, &err), &err);
	memset(&s->stats, 0, sizeof(s->stats));
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 7);
	CHECK(s->stats.lists == 1);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m != NULL);
	CHECK(m->version == 7);
	cx_manifest_free(m);
	cx_obj_close(s);
}

CX_TEST(latest_with_corrupt_hint_lists)
{
	cx_objstore *s;
	uint64_t	v = 0;
	uint8_t		hint[16];
	cx_buf		b;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_versions(s, 1, 4, &err), &err);
	/* garbage */
	REQUIRE_OK(cx_obj_put(s, CX_LATEST_HINT_KEY, "nonsense", 8, CX_PUT_OVERWRITE,
						  &err), &err);
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 4);
	/* a well-formed hint for version 2 with one bit flipped to say 3 */
	REQUIRE_OK(cx_manifest_write_hint(s, 2, &err), &err);
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, CX_LATEST_HINT_KEY, &b, &err), &err);
	REQUIRE(b.len == sizeof(hint));
	CHECK(memcmp(b.data, "CXL1", 4) == 0 && cx_load_u64(b.data + 4) == 2);
	memcpy(hint, b.data, sizeof(hint));
	cx_buf_free(&b);
	hint[4] ^= 1;
	REQUIRE_OK(cx_obj_put(s, CX_LATEST_HINT_KEY, hint, sizeof(hint),
						  CX_PUT_OVERWRITE, &err), &err);
	memset(&s->stats, 0, sizeof(s->stats));
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 4);
	CHECK(s->stats.lists == 1);
	cx_obj_close(s);
}

/* After GC removed old versions, a hint older than the oldest survivor must
 * not be mistaken for the newest version. */
CX_TEST(latest_ignores_hint_to_collected_version)
{
	cx_objstore *s;
	uint64_t	v = 0;
	cx_manifest *m = NULL;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_versions(s, 1, 20, &err), &err);
	REQUIRE_OK(cx_manifest_write_hint(s, 4, &err), &err);
	for (uint64_t old = 1; old < 10; old++)
		REQUIRE_OK(delete_version(s, old, &err), &err);
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 20);
	/* A hint within the surviving range probes forward as usual. */
	REQUIRE_OK(cx_manifest_write_hint(s, 12, &err), &err);
	memset(&s->stats, 0, sizeof(s->stats));
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m != NULL);
	CHECK(m->version == 20 && s->stats.lists == 0);
	cx_manifest_free(m);
	/* And without a hint the listing starts wherever the survivors start. */
	REQUIRE_OK(cx_obj_delete(s, CX_LATEST_HINT_KEY, &err), &err);
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 20);
	cx_obj_close(s);
}

/* GC removes the stale hint's version and the next one while the probe
 * runs (between its HEADs of versions 1 and 2): the probe stops at 1,
 * which is gone by the time it is read, and the versions are listed
 * instead of failing with "not found" (found by the simulation for shard
 * manifests, seed 937). */
CX_TEST(latest_survives_gc_removing_the_hint_during_the_probe)
{
	cx_objstore *s;
	cx_manifest *m = NULL;
	char		v1[64];
	char		v2[64];
	const char *const gone[] = {v1, v2};
	cx_err		err;
	cx_code		rc;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_versions(s, 1, 5, &err), &err);
	REQUIRE_OK(cx_manifest_write_hint(s, 1, &err), &err);
	cx_manifest_key(1, v1, sizeof(v1));
	cx_manifest_key(2, v2, sizeof(v2));
	sw_gc_race(s, v2, gone, 2);
	rc = cx_manifest_load_latest(s, &m, &err);
	sw_gc_race_end(s);
	if (rc != CX_OK)
		cx_test_fail(__FILE__, __LINE__, err.msg);
	CHECK(rc == CX_OK && m != NULL && m->version == 5);
	cx_manifest_free(m);
	cx_obj_close(s);
}

typedef struct collected
{
	uint64_t	versions[64];
	int			n;
	int			stop_after;
} collected;

static bool
collect(void *arg, uint64_t version)
{
	collected  *c = arg;

	c->versions[c->n++] = version;
	return c->n != c->stop_after;
}

CX_TEST(list_versions_ascending_skipping_foreign_keys)
{
	cx_objstore *s;
	collected	c = {.n = 0, .stop_after = 0};
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(put_versions(s, 8, 12, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "_versions/readme", "x", 1, CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "_versions/00000000000000000013.manifest.tmp", "x",
						  1, CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "_versions/99999999999999999999.manifest", "x",
						  1, CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "_versions/0000000000000000001x.manifest", "x",
						  1, CX_PUT_OVERWRITE, &err), &err);
	REQUIRE_OK(cx_manifest_list_versions(s, collect, &c, &err), &err);
	REQUIRE(c.n == 5);
	for (int i = 0; i < 5; i++)
		CHECK(c.versions[i] == (uint64_t) (8 + i));
	c.n = 0;
	c.stop_after = 2;
	REQUIRE_OK(cx_manifest_list_versions(s, collect, &c, &err), &err);
	CHECK(c.n == 2);
	cx_obj_close(s);
}

CX_TEST(manifest_shard_marks_stay_sorted_and_only_rise)
{
	cx_manifest *m = cx_manifest_new();
	cx_err		err;
	static const char *ids[] = {"m", "a", "z", "b-2", "b.1", "A_0"};

	REQUIRE(m != NULL);
	for (int i = 0; i < 6; i++)
		REQUIRE_OK(cx_manifest_register_shard(m, ids[i], &err), &err);
	/* registering again changes nothing */
	REQUIRE_OK(cx_manifest_register_shard(m, "m", &err), &err);
	REQUIRE(m->nshards == 6);
	for (uint32_t i = 1; i < m->nshards; i++)
		CHECK(strcmp(m->shards[i - 1].shard_id, m->shards[i].shard_id) < 0);
	CHECK(cx_manifest_merged_gen(m, "z") == 0);
	CHECK(cx_manifest_merged_gen(m, "unknown") == 0);
	CHECK(cx_manifest_shard(m, "unknown") == NULL);
	REQUIRE_OK(cx_manifest_set_merged_gen(m, "z", 9, &err), &err);
	REQUIRE_OK(cx_manifest_set_merged_gen(m, "z", 9, &err), &err);
	CHECK(cx_manifest_merged_gen(m, "z") == 9);
	CHECK_CODE(cx_manifest_set_merged_gen(m, "z", 8, &err), CX_ERR_INVALID);
	CHECK(cx_manifest_merged_gen(m, "z") == 9);
	/* setting a watermark registers an unknown shard */
	REQUIRE_OK(cx_manifest_set_merged_gen(m, "new", 3, &err), &err);
	CHECK(m->nshards == 7 && cx_manifest_merged_gen(m, "new") == 3);
	/* ids must be one safe key segment */
	CHECK_CODE(cx_manifest_register_shard(m, "", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_manifest_register_shard(m, "..", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_manifest_register_shard(m, "a/b", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_manifest_register_shard(m, "sp ace", &err), CX_ERR_INVALID);
	{
		char		longid[130];

		memset(longid, 'x', 129);
		longid[129] = '\0';
		CHECK_CODE(cx_manifest_register_shard(m, longid, &err), CX_ERR_INVALID);
		longid[128] = '\0';
		REQUIRE_OK(cx_manifest_register_shard(m, longid, &err), &err);
	}
	CHECK(m->nshards == 8);
	cx_manifest_free(m);
}

CX_TEST(manifest_deletions_merge_sorted_lists)
{
	cx_manifest *m = rich_manifest(3, 3);
	cx_manifest *c;
	cx_err		err;
	static const uint32_t a[] = {7, 7, 100, 500};
	static const uint32_t b[] = {1, 100, 600, 1001};
	static const uint32_t want[] = {1, 7, 100, 500, 600, 1001};
	static const uint32_t beyond[] = {1002};
	static const uint32_t unsorted[] = {5, 4};

	REQUIRE(m != NULL);
	/* fragment 0 has 1000 rows, fragment 2 has 1002 */
	REQUIRE_OK(cx_manifest_add_deletions(m, 2, a, 4, &err), &err);
	REQUIRE_OK(cx_manifest_add_deletions(m, 2, b, 4, &err), &err);
	REQUIRE(m->dvs[2].n == 6);
	CHECK(memcmp(m->dvs[2].rows, want, sizeof(want)) == 0);
	for (uint32_t r = 0; r < 1002; r++)
	{
		bool		expect = false;

		for (int i = 0; i < 6; i++)
			expect |= want[i] == r;
		CHECK(mw_is_deleted(m, 2, r) == expect);
	}
	CHECK(!mw_is_deleted(m, 0, 7));
	CHECK(!mw_is_deleted(m, 9, 7));
	CHECK(cx_manifest_deleted_count(m, 2) == 6);
	CHECK_CODE(cx_manifest_add_deletions(m, 2, beyond, 1, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_manifest_add_deletions(m, 0, unsorted, 2, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_manifest_add_deletions(m, 3, a, 1, &err), CX_ERR_INVALID);
	CHECK(cx_manifest_deleted_count(m, 0) == 0 && m->dvs[2].n == 6);
	/* live rows: 1000 + (1001 - 3) + (1002 - 6) */
	CHECK(cx_manifest_rows(m) == 1000 + 998 + 996);
	/* a clone is deep, and adding a fragment keeps the arrays in step */
	c = cx_manifest_clone(m);
	REQUIRE(c != NULL);
	cx_manifest_free(m);
	CHECK(mw_is_deleted(c, 2, 600) && cx_manifest_deleted_count(c, 1) == 3);
	{
		cx_fragment_info fi;

		fill_fragment(&fi, 9, c->schema->ncolumns);
		REQUIRE_OK(cx_manifest_add_fragment(c, &fi, &err), &err);
		free(fi.stats);
	}
	CHECK(c->nfragments == 4 && cx_manifest_deleted_count(c, 3) == 0);
	CHECK(cx_manifest_find_fragment(c, "data/frag-009.parquet") == 3);
	CHECK(cx_manifest_find_fragment(c, "data/none.parquet") == -1);
	cx_manifest_free(c);
}

CX_TEST(manifest_key_is_set_once)
{
	cx_manifest *m = rich_manifest(2, 0);
	cx_manifest *e = cx_manifest_new();
	cx_err		err;

	REQUIRE(m != NULL && e != NULL);
	REQUIRE_OK(cx_manifest_set_key(m, "id", true, &err), &err);
	CHECK_CODE(cx_manifest_set_key(m, "n", true, &err), CX_ERR_SCHEMA);
	CHECK_CODE(cx_manifest_set_key(m, "id", false, &err), CX_ERR_SCHEMA);
	CHECK(strcmp(m->key_column, "id") == 0 && m->unique_key);
	/* before the schema is known any name is taken; with one it must exist */
	REQUIRE_OK(cx_manifest_set_key(e, "later", false, &err), &err);
	CHECK_CODE(cx_manifest_set_key(e, "", false, &err), CX_ERR_INVALID);
	cx_manifest_free(e);
	e = rich_manifest(2, 0);
	REQUIRE(e != NULL);
	free(e->key_column);
	e->key_column = NULL;
	CHECK_CODE(cx_manifest_set_key(e, "nope", true, &err), CX_ERR_SCHEMA);
	cx_manifest_free(e);
	cx_manifest_free(m);
}

/* Values the encoder refuses and the decoder rejects even under a valid
 * checksum: a committer can never publish what readers would refuse. */
CX_TEST(manifest_bad_memwal_fields_are_rejected)
{
	cx_manifest *m = rich_manifest(4, 2);
	cx_buf		b;
	cx_err		err;
	cx_code		code;
	uint8_t    *p;

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	/* a key that is not a column */
	p = memmem(b.data, b.len, "\x02\x00id\x01", 5);
	REQUIRE(p != NULL);
	p[2] = 'x';
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);
	p[2] = 'i';
	/* unique_key other than 0 or 1 */
	p[4] = 2;
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);
	p[4] = 1;
	/* shards out of order (swap the first letters: "shard-b" < "shard-a") */
	p = memmem(b.data, b.len, "shard-a", 7);
	REQUIRE(p != NULL);
	p[6] = 'c';
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);
	p[6] = '/';
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);
	p[6] = 'a';
	fix_crc(&b);
	{
		cx_manifest *d = NULL;

		REQUIRE_OK(cx_manifest_decode(b.data, b.len, "ok", &d, &err), &err);
		cx_manifest_free(d);
	}
	/* deletion vector not ascending, or beyond the fragment's rows */
	p = memmem(b.data, b.len, "\x03\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\xe7\x03\x00\x00", 16);
	REQUIRE(p != NULL);
	p[8] = 0;
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);
	p[8] = 5;
	p[12] = 0xe9;				/* 1001: the fragment has rows 0..1000 */
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);
	p[12] = 0xe8;				/* 1000 is its last row */
	fix_crc(&b);
	CHECK(!rejected(b.data, b.len, &code));
	/* the encoder refuses the same things */
	m->dvs[1].rows[0] = 5;
	CHECK_CODE(cx_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->dvs[1].rows[0] = 0;
	m->shards[0].shard_id[0] = 'z';
	CHECK_CODE(cx_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->shards[0].shard_id[0] = 's';
	m->key_column[0] = 'x';
	CHECK_CODE(cx_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	cx_manifest_free(m);
	cx_buf_free(&b);
}

/* The example in docs/FORMAT.md ("Manifests", "Example"), byte for byte. */
static const uint8_t format_example[92] = {
		0x43, 0x58, 0x4d, 0x31, 0x04, 0x00, 0x00, 0x00, 0x4c, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
		0x00, 0x40, 0x1e, 0x18, 0x24, 0x0a, 0x06, 0x00,
		0x06, 0x00, 0x61, 0x70, 0x70, 0x65, 0x6e, 0x64,
		0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00,
		0x00, 0xa0, 0xab, 0xc9, 0x0b, 0x01, 0x06, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x44, 0x89, 0x40, 0x37};

/* The same store with one shard "s1", merged through 0, dirty_marked: the
 * shard entry of docs/FORMAT.md's example, in format 4. */
static const uint8_t format_example_shard[105] = {
		0x43, 0x58, 0x4d, 0x31, 0x04, 0x00, 0x00, 0x00, 0x59, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
		0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
		0x00, 0x40, 0x1e, 0x18, 0x24, 0x0a, 0x06, 0x00,
		0x06, 0x00, 0x61, 0x70, 0x70, 0x65, 0x6e, 0x64,
		0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00,
		0x00, 0xa0, 0xab, 0xc9, 0x0b, 0x01, 0x06, 0x00,
		0x00, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x73, 0x31,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00,
		0xbc, 0x84, 0x83, 0xa7};

/* Fills in the example's fields (docs/FORMAT.md, "Example"). */
static cx_manifest *
format_example_manifest(void)
{
	cx_manifest *m = cx_manifest_new();

	if (m == NULL)
		return NULL;
	m->version = 1;
	for (int i = 0; i < 16; i++)
		m->commit_id[i] = (uint8_t) i;
	m->committed_at_us = 1700000000000000LL;
	m->truncated_before_us = 1690000000000000LL;
	m->operation = cx_strdup("append");
	return m;
}

/*
 * A shard's dirty_marked flag is the u8 after its watermark (format 4);
 * format 3 has no such byte and reads as unflagged; a flag bit this format
 * does not define is refused.
 */
CX_TEST(manifest_shard_flags_match_format_example)
{
	cx_manifest *m = format_example_manifest();
	cx_manifest *d = NULL;
	cx_buf		b;
	cx_code		code;
	cx_err		err;

	REQUIRE(m != NULL);
	REQUIRE_OK(cx_manifest_set_dirty_marked(m, "s1", &err), &err);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	CHECK(b.len == sizeof(format_example_shard) &&
		  memcmp(b.data, format_example_shard, b.len) == 0);
	REQUIRE_OK(cx_manifest_decode(b.data, b.len, "v4", &d, &err), &err);
	CHECK(d->nshards == 1 && d->shards[0].dirty_marked);
	cx_manifest_free(d);

	b.data[96] = 0x02;			/* the flags */
	fix_crc(&b);
	CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);

	/* Format 3: the same without the flags byte. */
	b.len = 0;
	cx_buf_put(&b, format_example_shard, 96);
	cx_buf_put(&b, format_example_shard + 97, sizeof(format_example_shard) - 97);
	b.data[4] = 3;
	b.data[8] = 0x58;
	fix_crc(&b);
	CHECK(b.len == 104 && cx_load_u32(b.data + 100) == 0x36f531d3);
	REQUIRE_OK(cx_manifest_decode(b.data, b.len, "v3", &d, &err), &err);
	CHECK(d->nshards == 1 && !d->shards[0].dirty_marked &&
		  strcmp(d->shards[0].shard_id, "s1") == 0);
	cx_manifest_free(d);
	cx_manifest_free(m);
	cx_buf_free(&b);
}

CX_TEST(manifest_encoding_matches_format_example)
{
	const uint8_t *expect = format_example;
	cx_manifest *m = format_example_manifest();
	cx_buf		b;
	cx_err		err;

	REQUIRE(m != NULL);
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	CHECK(b.len == sizeof(format_example) && memcmp(b.data, expect, b.len) == 0);
	cx_manifest_free(m);
	cx_buf_free(&b);
}

/*
 * Formats 1 to 3 (docs/FORMAT.md, the examples before format 4) are still
 * read: no shard flags (format 3; the example has no shard, so only the
 * format differs), no schema id, history or last field id (format 2), and
 * nothing truncated, every origin unknown (format 1).
 */
CX_TEST(manifest_formats_1_and_2_are_still_read)
{
	cx_buf		v3;
	cx_buf		v2;
	cx_buf		v1;
	cx_manifest *d = NULL;
	cx_err		err;

	cx_buf_init(&v3);
	cx_buf_put(&v3, format_example, sizeof(format_example));
	v3.data[4] = 3;
	fix_crc(&v3);
	CHECK(cx_load_u32(v3.data + 88) == 0x628c8e8d);
	REQUIRE_OK(cx_manifest_decode(v3.data, v3.len, "v3", &d, &err), &err);
	cx_manifest_free(d);
	cx_buf_free(&v3);

	/* The format 3 example without schema_id, last_field_id and the
	 * history count (bytes 53-64). */
	cx_buf_init(&v2);
	cx_buf_put(&v2, format_example, 53);
	cx_buf_put(&v2, format_example + 65, sizeof(format_example) - 65);
	v2.data[4] = 2;
	v2.data[8] = 64;
	fix_crc(&v2);
	CHECK(v2.len == 80 && cx_load_u32(v2.data + 76) == 0xd7d65734);
	REQUIRE_OK(cx_manifest_decode(v2.data, v2.len, "v2", &d, &err), &err);
	CHECK(d->schema_id == 0 && d->last_field_id == 0 && d->nold_schemas == 0);
	CHECK(d->truncated_before_us == 1690000000000000LL);
	cx_manifest_free(d);

	/* The format 2 one without its truncated_before_us (bytes 56-63). */
	cx_buf_init(&v1);
	cx_buf_put(&v1, v2.data, 56);
	cx_buf_put(&v1, v2.data + 64, v2.len - 64);
	v1.data[4] = 1;
	v1.data[8] = 56;
	fix_crc(&v1);
	CHECK(v1.len == 72 && cx_load_u32(v1.data + 68) == 0x7730f0e8);
	REQUIRE_OK(cx_manifest_decode(v1.data, v1.len, "v1", &d, &err), &err);
	CHECK(d->version == 1 && d->truncated_before_us == 0 &&
		  strcmp(d->operation, "append") == 0);
	cx_manifest_free(d);
	cx_buf_free(&v1);
	cx_buf_free(&v2);
}

/* truncated_before_us and each fragment's origin shard travel through
 * encode and decode; a negative time or an invalid shard id is refused on
 * both sides. */
CX_TEST(manifest_truncation_and_origin_round_trip)
{
	cx_manifest *m = rich_manifest(3, 2);
	cx_manifest *d = NULL;
	cx_buf		b;
	cx_code		code;
	cx_err		err;

	REQUIRE(m != NULL);
	m->truncated_before_us = 1700000000000123LL;
	m->fragments[1].origin_shard = cx_strdup("shard-b");
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	REQUIRE_OK(cx_manifest_decode(b.data, b.len, "m", &d, &err), &err);
	CHECK(d->truncated_before_us == 1700000000000123LL);
	CHECK(d->fragments[0].origin_shard == NULL);
	CHECK(d->fragments[1].origin_shard != NULL &&
		  strcmp(d->fragments[1].origin_shard, "shard-b") == 0);
	cx_manifest_free(d);
	{
		uint8_t    *p = memmem(b.data, b.len, "shard-b", 7);

		REQUIRE(p != NULL);
		p[5] = '/';
		fix_crc(&b);
		CHECK(rejected(b.data, b.len, &code) && code == CX_ERR_CORRUPT);
	}
	m->fragments[1].origin_shard[5] = '/';
	cx_buf_reset(&b);
	CHECK_CODE(cx_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	m->fragments[1].origin_shard[5] = '-';
	m->truncated_before_us = -1;
	CHECK_CODE(cx_manifest_encode(m, &b, &err), CX_ERR_INVALID);
	cx_manifest_free(m);
	cx_buf_free(&b);
}
