/*
 * test_avro_container.c — malformed Avro files are refused as corrupt, naming
 * the file, before libavro sees a length it would trust: the fuzz_iceberg
 * findings, and each length of the container and of a block's values made
 * negative, too large, or left without the bytes it announces.
 */
#include <stdlib.h>
#include <string.h>

#include "maintenance/cx_avro_container.h"
#include "maintenance/cx_iceberg_int.h"
#include "cx_test.h"

#define PATH "file:///t/iceberg/data/f.parquet"

/* A valid manifest of one data file PATH. */
static bool
one_entry_manifest(cx_buf *b)
{
	cx_ice_file e = {.status = CX_ICE_ADDED, .snapshot_id = 1, .seq = CX_ICE_INHERIT,
	.file_seq = CX_ICE_INHERIT, .path = (char *) PATH, .records = 3, .size = 100};
	cx_ice_files fs = {.v = &e, .n = 1, .cap = 1};
	cx_ice_manifest_meta meta = {.schema_json = "{}", .schema_id = 1};
	cx_err		err;

	cx_buf_init(b);
	return cx_ice_write_manifest(&fs, &meta, b, &err) == CX_OK;
}

/* The manifest read back: CX_ERR_CORRUPT naming the file, nothing kept. */
static void
check_refused(const cx_buf *b, const char *name)
{
	cx_ice_files fs = {0};
	char	  **paths = NULL;
	uint32_t	n = 0;
	cx_err		err;

	CHECK_CODE(cx_ice_read_manifest(b, name, &fs, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, name) != NULL);
	CHECK(fs.n == 0);
	cx_ice_files_free(&fs);
	CHECK_CODE(cx_ice_read_manifest_list(b, name, &paths, &n, &err), CX_ERR_CORRUPT);
	CHECK(n == 0);
	free(paths);
}

/* b with the bytes [at, at + len) replaced by the varint of v. */
static void
splice_long(cx_buf *b, size_t at, size_t len, int64_t v)
{
	uint64_t	u = v < 0 ? ~((uint64_t) v << 1) : (uint64_t) v << 1;	/* zigzag */
	uint8_t		enc[10];
	size_t		n = 0;
	cx_buf		out;

	do
	{
		enc[n++] = (uint8_t) ((u & 0x7f) | (u > 0x7f ? 0x80 : 0));
		u >>= 7;
	} while (u != 0);
	cx_buf_init(&out);
	cx_buf_put(&out, b->data, at);
	cx_buf_put(&out, enc, n);
	cx_buf_put(&out, b->data + at + len, b->len - at - len);
	cx_buf_free(b);
	*b = out;
}

/* Where the first block starts (its object count), in a valid file. */
static size_t
first_block(const cx_buf *b)
{
	const char *known = cx_ice_manifest_entry_schema;
	cx_avro_file f;
	cx_err		err;
	size_t		at = cx_avro_open(b, "m.avro", &known, 1, &f, &err) == CX_OK ?
		(size_t) (f.next - b->data) : 0;

	cx_avro_close(&f);
	return at;
}

/* The offset of PATH's length in the block (one varint byte before it). */
static size_t
path_length_at(const cx_buf *b)
{
	const uint8_t *p = memmem(b->data, b->len, PATH, strlen(PATH));

	return p != NULL ? (size_t) (p - b->data) - 1 : 0;
}

CX_TEST(avro_valid_manifest_reads_back)
{
	cx_buf		b;
	cx_ice_files fs = {0};
	char	   *v = NULL;
	cx_err		err;

	REQUIRE(one_entry_manifest(&b));
	REQUIRE_OK(cx_ice_read_manifest(&b, "m.avro", &fs, &err), &err);
	CHECK(fs.n == 1 && strcmp(fs.v[0].path, PATH) == 0 && fs.v[0].records == 3);
	REQUIRE_OK(cx_ice_avro_file_meta(&b, "m.avro", "format-version", &v, &err), &err);
	CHECK(v != NULL && strcmp(v, "2") == 0);
	free(v);
	cx_ice_files_free(&fs);
	cx_buf_free(&b);
}

/*
 * The file path's string length below zero (libavro asked for ~2^64 bytes,
 * then leaked), past the block (libavro allocated it before reading), or
 * one short: the record is cut and the block ends past its values.
 */
CX_TEST(avro_string_length_out_of_its_block_is_corrupt)
{
	const int64_t lengths[] = {-1, (int64_t) 1 << 40, (int64_t) strlen(PATH) - 1};

	for (int i = 0; i < 3; i++)
	{
		cx_buf		b;

		REQUIRE(one_entry_manifest(&b));
		REQUIRE(path_length_at(&b) != 0);
		splice_long(&b, path_length_at(&b), 1, lengths[i]);
		check_refused(&b, "m.avro");
		cx_buf_free(&b);
	}
}

/* A block's byte size or object count out of range. */
CX_TEST(avro_block_size_and_count_out_of_range_are_corrupt)
{
	const int64_t bad_counts[] = {-1, 1000, INT64_MAX};
	const int64_t bad_sizes[] = {-5, (int64_t) 1 << 40, 0};

	for (int i = 0; i < 3; i++)
	{
		cx_buf		b;
		size_t		at;

		REQUIRE(one_entry_manifest(&b));
		REQUIRE((at = first_block(&b)) != 0);
		REQUIRE(b.data[at] == 2);	/* one object */
		splice_long(&b, at, 1, bad_counts[i]);
		check_refused(&b, "m.avro");
		cx_buf_free(&b);

		REQUIRE(one_entry_manifest(&b));
		at = first_block(&b) + 1;
		while (b.data[at] & 0x80)	/* the size's own bytes */
			at++;
		splice_long(&b, first_block(&b) + 1, at + 1 - (first_block(&b) + 1), bad_sizes[i]);
		check_refused(&b, "m.avro");
		cx_buf_free(&b);
	}
}

/* The container around the blocks: none, the sync marker, truncation,
 * the codec, the magic. */
CX_TEST(avro_container_damage_is_corrupt)
{
	cx_buf		b;
	uint8_t    *codec;
	char	   *v = NULL;
	cx_err		err;

	cx_buf_init(&b);			/* an empty object: no bytes at all */
	check_refused(&b, "m.avro");
	REQUIRE(one_entry_manifest(&b));
	b.data[b.len - 1] ^= 1;		/* the sync marker after the block */
	check_refused(&b, "m.avro");
	b.len -= 17;				/* cut inside the block */
	check_refused(&b, "m.avro");
	b.len = 100;				/* cut inside the metadata map */
	check_refused(&b, "m.avro");
	CHECK_CODE(cx_ice_avro_file_meta(&b, "m.avro", "format-version", &v, &err), CX_ERR_CORRUPT);
	CHECK(v == NULL);
	cx_buf_free(&b);

	REQUIRE(one_entry_manifest(&b));
	REQUIRE((codec = memmem(b.data, b.len, "avro.codec\x08null", 15)) != NULL);
	memcpy(codec + 11, "defl", 4);	/* avro.codec's value: not null */
	check_refused(&b, "m.avro");
	b.data[0] = 'X';
	check_refused(&b, "m.avro");
	cx_buf_free(&b);
}

/* A schema text other than the two the engine writes, even a valid one,
 * is refused unparsed. */
CX_TEST(avro_unknown_schema_is_corrupt)
{
	cx_buf		b;
	uint8_t    *name;

	REQUIRE(one_entry_manifest(&b));
	REQUIRE((name = memmem(b.data, b.len, "\"manifest_entry\"", 16)) != NULL);
	name[14] = 'x';				/* "manifest_entrx" */
	check_refused(&b, "m.avro");
	cx_buf_free(&b);
}

/* An object over CX_ICE_AVRO_MAX_BYTES is refused before it is walked. */
CX_TEST(avro_file_over_the_size_limit_is_corrupt)
{
	cx_buf		b;
	cx_err		err;
	char	   *v = NULL;

	REQUIRE(one_entry_manifest(&b));
	REQUIRE(cx_buf_reserve(&b, CX_ICE_AVRO_MAX_BYTES));
	b.len = CX_ICE_AVRO_MAX_BYTES + 1;	/* pages never touched */
	check_refused(&b, "m.avro");
	CHECK_CODE(cx_ice_avro_file_meta(&b, "m.avro", "format-version", &v, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "MiB") != NULL);
	cx_buf_free(&b);
}

/* The inputs fuzz_iceberg found libavro leaking on or allocating
 * gigabytes for (fuzz/seeds/fuzz_iceberg/finding-libavro-*; the first two
 * before the walk, the third with a walk that still let libavro parse the
 * file's schema). */
static void
check_seed_refused(const char *seed)
{
	cx_buf		b;
	size_t		len = 0;
	uint8_t    *data = cx_test_read_file(seed, &len);

	REQUIRE(data != NULL);
	cx_buf_init(&b);
	cx_buf_put(&b, data, len);
	check_refused(&b, strrchr(seed, '/') + 1);
	cx_buf_free(&b);
	free(data);
}

CX_TEST(avro_finding_libavro_negative_length_is_corrupt)
{
	check_seed_refused("fuzz/seeds/fuzz_iceberg/finding-libavro-negative-length");
}

CX_TEST(avro_finding_libavro_declared_length_is_corrupt)
{
	check_seed_refused("fuzz/seeds/fuzz_iceberg/finding-libavro-declared-length");
}

/* A malformed avro.schema: libavro's schema parser leaked on it. */
CX_TEST(avro_finding_libavro_schema_leak_is_corrupt)
{
	check_seed_refused("fuzz/seeds/fuzz_iceberg/finding-libavro-schema-leak");
}
