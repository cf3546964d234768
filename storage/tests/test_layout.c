/*
 * test_layout.c — the names of a store's objects: every key the layout
 * builds is the one docs/FORMAT.md "Store layout" gives and parses back to
 * what built it; nothing else parses; temporary names have their one shape.
 */
#include <stdio.h>
#include <string.h>

#include "cx_test.h"
#include "format/cx_fragment.h"
#include "objstore/cx_layout.h"

#define MAX_ID "0123456789012345678901234567890123456789012345678901234567890123" \
	"456789012345678901234567890123456789012345678901234567890123456-"

/* key is literal, parses as kind and has the other fields of want. */
static bool
parses_as(const char *key, const char *literal, const cx_object_name *want)
{
	cx_object_name got;

	memset(&got, 0xAA, sizeof(got));
	return strcmp(key, literal) == 0 &&
		cx_object_parse(key, &got) == want->kind &&
		memcmp(&got, want, sizeof(got)) == 0;
}

/* The name of a sequence key: kind, number and shard id. */
static cx_object_name
numbered(cx_object_kind kind, const char *shard_id, uint64_t n)
{
	cx_object_name name;

	memset(&name, 0, sizeof(name));
	name.kind = kind;
	name.number = n;
	snprintf(name.shard_id, sizeof(name.shard_id), "%s", shard_id);
	return name;
}

CX_TEST(layout_base_keys_parse_back)
{
	char		key[CX_KEY_MAX + 1];
	cx_object_name want;

	want = numbered(CX_OBJECT_BASE_VERSION, "", 42);
	cx_vseq_key(&cx_layout_base_versions, 42, key);
	CHECK(parses_as(key, "_versions/00000000000000000042.manifest", &want));
	want.number = UINT64_MAX;
	cx_vseq_key(&cx_layout_base_versions, UINT64_MAX, key);
	CHECK(parses_as(key, "_versions/18446744073709551615.manifest", &want));
	want = numbered(CX_OBJECT_BASE_HINT, "", 0);
	CHECK(parses_as(CX_LATEST_HINT_KEY, "_latest", &want));
	want = numbered(CX_OBJECT_ACCESS_CHECK, "", 0);
	CHECK(parses_as(CX_ACCESS_CHECK_KEY, "_access_check", &want));
	want = numbered(CX_OBJECT_COMPACTION_LEASE, "", 0);
	CHECK(parses_as(CX_COMPACTION_LEASE_KEY, "_compaction/lease", &want));
	want = numbered(CX_OBJECT_GC_RECORD, "", 3);
	cx_vseq_key(&cx_layout_gc_records, 3, key);
	CHECK(parses_as(key, "_gc/00000000000000000003.retention", &want));
}

CX_TEST(layout_fragment_keys_parse_back)
{
	char		key[CX_FRAGMENT_KEY_SIZE];
	char		fresh[CX_FRAGMENT_KEY_SIZE];
	cx_object_name want = numbered(CX_OBJECT_FRAGMENT, "", 0);
	cx_object_name got;
	cx_err		err;

	for (int i = 0; i < CX_FRAGMENT_ID_LEN; i++)
		want.fragment_id[i] = (uint8_t) (i * 17 + 0x0f);
	cx_layout_fragment(want.fragment_id, key);
	CHECK(parses_as(key, "data/0f2031425364758697a8b9cadbecfd0e.parquet", &want));

	REQUIRE_OK(cx_fragment_new_key(fresh, sizeof(fresh), &err), &err);
	CHECK(cx_object_parse(fresh, &got) == CX_OBJECT_FRAGMENT);
	cx_layout_fragment(got.fragment_id, key);
	CHECK(strcmp(key, fresh) == 0);
}

CX_TEST(layout_index_segment_keys_parse_back)
{
	char		key[CX_INDEX_SEGMENT_KEY_SIZE];
	cx_object_name want = numbered(CX_OBJECT_INDEX_SEGMENT, "", 0);

	for (int i = 0; i < CX_FRAGMENT_ID_LEN; i++)
		want.fragment_id[i] = (uint8_t) (i * 17 + 0x0f);
	cx_layout_index_segment(want.fragment_id, key);
	CHECK(parses_as(key, "index/0f2031425364758697a8b9cadbecfd0e.cxk", &want));
}

CX_TEST(layout_shard_keys_parse_back)
{
	static const char *const ids[] = {"s1", "a.b_c-D", MAX_ID};
	char		prefix[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	char		literal[CX_KEY_MAX + 1];
	cx_vseq		q;
	cx_object_name want;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
	{
		want = numbered(CX_OBJECT_SHARD_VERSION, ids[i], 7);
		cx_layout_shard_versions(ids[i], prefix, &q);
		cx_vseq_key(&q, 7, key);
		snprintf(literal, sizeof(literal), "_shards/%s/_versions/00000000000000000007.shard", ids[i]);
		CHECK(parses_as(key, literal, &want));

		want = numbered(CX_OBJECT_WAL_ENTRY, ids[i], 12345);
		cx_layout_wal(ids[i], prefix, &q);
		cx_vseq_key(&q, 12345, key);
		snprintf(literal, sizeof(literal), "_shards/%s/wal/00000000000000012345.wal", ids[i]);
		CHECK(parses_as(key, literal, &want));

		want = numbered(CX_OBJECT_SHARD_HINT, ids[i], 0);
		cx_layout_shard_hint(ids[i], key);
		snprintf(literal, sizeof(literal), "_shards/%s/_latest", ids[i]);
		CHECK(parses_as(key, literal, &want));

		want = numbered(CX_OBJECT_DIRTY_MARKER, ids[i], 9);
		cx_layout_dirty_markers(ids[i], prefix, &q);
		cx_vseq_key(&q, 9, key);
		snprintf(literal, sizeof(literal), "_dirty/%s.00000000000000000009.dirty", ids[i]);
		CHECK(parses_as(key, literal, &want));
	}
}

CX_TEST(layout_parses_nothing_else)
{
	static const char *const others[] = {
		"",
		"_versions/",
		"_versions/0000000000000000042.manifest",	/* 19 digits */
		"_versions/000000000000000000042.manifest",	/* 21 digits */
		"_versions/00000000000000000000.manifest",	/* 0 */
		"_versions/18446744073709551616.manifest",	/* UINT64_MAX + 1 */
		"_versions/0000000000000000004x.manifest",
		"_versions/00000000000000000042.shard",
		"_versions/00000000000000000042.manifest/x",
		"_dirty/s1.00000000000000000000.dirty",	/* 0 */
		"_dirty/s1.00000000000000000009",
		"_dirty/s?.00000000000000000009.dirty",
		"_dirty/s1/00000000000000000009.dirty",
		"_dirty/.00000000000000000009.dirty",
		"_dirty/00000000000000000009.dirty",
		"x/_versions/00000000000000000042.manifest",
		"_versions/._versions/00000000000000000042.manifest.tmp.0123456789abcdef",
		"._latest.tmp.0123456789abcdef",
		"_latestx",
		"_latest/",
		"_access_check.old",
		"data/0F203142536475869708A9BACBDCEDFE.parquet",	/* upper case */
		"data/0f203142536475869708a9bacbdcedf.parquet",	/* 31 digits */
		"data/0f203142536475869708a9bacbdcedfe0.parquet",	/* 33 digits */
		"data/0f203142536475869708a9bacbdcedfg.parquet",
		"data/0f203142536475869708a9bacbdcedfe.parquet.old",
		"data/x/0f203142536475869708a9bacbdcedfe.parquet",
		"data/all.parquet",
		"_gc/00000000000000000000.retention",
		"_gc/3.retention",
		"_gc/00000000000000000003.manifest",
		"_shards/s1",
		"_shards/s1/",
		"_shards//_latest",
		"_shards/../_latest",
		"_shards/a b/_latest",
		"_shards/" MAX_ID "x/_latest",	/* 129 characters */
		"_shards/s1/_latest/x",
		"_shards/s1/_versions/00000000000000000042.manifest",
		"_shards/s1/_versions/00000000000000000000.shard",
		"_shards/s1/wal/00000000000000000042.shard",
		"_shards/s1/wal/x/00000000000000000042.wal",
		"_shards/s1/data/0f203142536475869708a9bacbdcedfe.parquet",
	};
	cx_object_name none;
	cx_object_name got;

	memset(&none, 0, sizeof(none));
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
	{
		memset(&got, 0xAA, sizeof(got));
		if (cx_object_parse(others[i], &got) != CX_OBJECT_NONE ||
			memcmp(&got, &none, sizeof(got)) != 0)
		{
			printf("    parsed: \"%s\"\n", others[i]);
			CHECK(!"a key outside the layout parsed");
		}
	}
}

CX_TEST(layout_temporary_names)
{
	static const uint8_t random[CX_TEMP_RANDOM_LEN] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
	char		out[64];

	cx_layout_temporary("/root/data/name.parquet", random, out);
	CHECK(strcmp(out, "/root/data/.name.parquet.tmp.0123456789abcdef") == 0);
	CHECK(strlen(out) == strlen("/root/data/name.parquet") + CX_TEMP_EXTRA_LEN);
	CHECK(cx_layout_is_temporary(out));
	cx_layout_temporary("_latest", random, out);
	CHECK(strcmp(out, "._latest.tmp.0123456789abcdef") == 0);
	CHECK(cx_layout_is_temporary(out));
	CHECK(cx_layout_is_temporary(".x.tmp.0123456789abcdef"));

	CHECK(!cx_layout_is_temporary("/root/data/name.parquet"));
	CHECK(!cx_layout_is_temporary("..tmp.0123456789abcdef"));	/* no name */
	CHECK(!cx_layout_is_temporary("x.tmp.0123456789abcdef"));	/* no dot */
	CHECK(!cx_layout_is_temporary(".x.tmp.0123456789ABCDEF"));
	CHECK(!cx_layout_is_temporary(".x.tmp.0123456789abcde"));
	CHECK(!cx_layout_is_temporary(".x.tmp.0123456789abcdefa"));
	CHECK(!cx_layout_is_temporary(".x.tmp.0123456789abcdef/y"));
}

/* Iceberg metadata files are numbered in plain decimal, as Iceberg readers
 * expect: v1.metadata.json, v12.metadata.json; nothing else parses. */
CX_TEST(layout_iceberg_metadata_keys_parse_back)
{
	const cx_vseq *q = &cx_layout_iceberg_versions;
	char		key[CX_KEY_MAX + 1];
	uint64_t	n = 0;

	cx_vseq_key(q, 12, key);
	CHECK(strcmp(key, "iceberg/metadata/v12.metadata.json") == 0);
	CHECK(cx_vseq_parse(q, key, &n) && n == 12);
	CHECK(cx_vseq_parse(q, "iceberg/metadata/v1.metadata.json", &n) && n == 1);
	CHECK(!cx_vseq_parse(q, "iceberg/metadata/v01.metadata.json", &n));
	CHECK(!cx_vseq_parse(q, "iceberg/metadata/v0.metadata.json", &n));
	CHECK(!cx_vseq_parse(q, "iceberg/metadata/v.metadata.json", &n));
	CHECK(!cx_vseq_parse(q, "iceberg/metadata/version-hint.text", &n));
	CHECK(!cx_vseq_parse(q, "iceberg/metadata/v1.metadata.json.tmp", &n));
	cx_layout_iceberg_deletes("u", key);
	CHECK(strcmp(key, "iceberg/data/u-deletes.parquet") == 0);
	cx_layout_iceberg_manifest("u", 1, key);
	CHECK(strcmp(key, "iceberg/metadata/u-m1.avro") == 0);
	cx_layout_iceberg_manifest_list(7, "u", key);
	CHECK(strcmp(key, "iceberg/metadata/snap-7-u.avro") == 0);
}
