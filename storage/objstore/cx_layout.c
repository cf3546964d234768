/*
 * cx_layout.c — building and parsing the keys of a store (cx_layout.h,
 * ctxstore/layout.h).  The parser recognises a key by building the key of
 * that kind again and comparing, so that what it accepts is exactly what
 * the builders make.
 */
#include "objstore/cx_layout.h"

#include <stdio.h>
#include <string.h>

#define SHARD_VERSIONS_DIR "_versions/"
#define SHARD_VERSION_SUFFIX ".shard"
#define SHARD_HINT_NAME "_latest"
#define WAL_DIR "wal/"
#define WAL_SUFFIX ".wal"
#define BASE_VERSION_SUFFIX ".manifest"
#define DIRTY_MARKER_SUFFIX ".dirty"
#define GC_RECORD_SUFFIX ".retention"

const cx_vseq cx_layout_base_versions = {CX_VERSIONS_PREFIX, BASE_VERSION_SUFFIX, false};
const cx_vseq cx_layout_gc_records = {CX_GC_RECORD_PREFIX, GC_RECORD_SUFFIX, false};
const cx_vseq cx_layout_iceberg_versions = {CX_ICEBERG_METADATA_PREFIX "v", ".metadata.json", true};

static const char hex_digits[] = "0123456789abcdef";

/* n bytes as 2n lowercase hex digits and a NUL. */
static void
hex_encode(const uint8_t *bytes, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
	{
		*out++ = hex_digits[bytes[i] >> 4];
		*out++ = hex_digits[bytes[i] & 15];
	}
	*out = '\0';
}

/* Value of a lowercase hex digit, -1 for anything else. */
static int
hex_value(char c)
{
	const char *at = c != '\0' ? strchr(hex_digits, c) : NULL;

	return at != NULL ? (int) (at - hex_digits) : -1;
}

/* Exactly 2n lowercase hex digits at text into bytes. */
static bool
hex_decode(const char *text, size_t n, uint8_t *bytes)
{
	for (size_t i = 0; i < n; i++)
	{
		int			hi = hex_value(text[2 * i]);
		int			lo = hi < 0 ? -1 : hex_value(text[2 * i + 1]);

		if (lo < 0)
			return false;
		bytes[i] = (uint8_t) (hi << 4 | lo);
	}
	return true;
}

void
cx_vseq_key(const cx_vseq *q, uint64_t n, char *key)
{
	snprintf(key, CX_KEY_MAX + 1, "%s%0*llu%s", q->prefix,
			 q->unpadded ? 1 : CX_VSEQ_DIGITS, (unsigned long long) n, q->suffix);
}

bool
cx_vseq_parse(const cx_vseq *q, const char *key, uint64_t *n)
{
	size_t		plen = strlen(q->prefix);
	const char *p = key + plen;
	uint64_t	v = 0;
	int			i;

	if (strncmp(key, q->prefix, plen) != 0)
		return false;
	/* Unpadded: as many digits as there are, no leading zero. */
	for (i = 0; i < CX_VSEQ_DIGITS && (!q->unpadded || (*p >= '0' && *p <= '9'));
		 i++, p++)
	{
		unsigned	d = (unsigned) (*p - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if ((q->unpadded && key[plen] == '0') || strcmp(p, q->suffix) != 0 || v == 0)
		return false;
	*n = v;
	return true;
}

/* "_shards/<shard_id>/<rest>" into key. */
static void
shard_key(const char *shard_id, const char *rest, char *key)
{
	snprintf(key, CX_KEY_MAX + 1, CX_SHARDS_PREFIX "%s/%s", shard_id, rest);
}

void
cx_layout_shard_versions(const char *shard_id, char *prefix, cx_vseq *q)
{
	shard_key(shard_id, SHARD_VERSIONS_DIR, prefix);
	q->prefix = prefix;
	q->suffix = SHARD_VERSION_SUFFIX;
	q->unpadded = false;
}

void
cx_layout_wal(const char *shard_id, char *prefix, cx_vseq *q)
{
	shard_key(shard_id, WAL_DIR, prefix);
	q->prefix = prefix;
	q->suffix = WAL_SUFFIX;
	q->unpadded = false;
}

void
cx_layout_dirty_markers(const char *shard_id, char *prefix, cx_vseq *q)
{
	snprintf(prefix, CX_KEY_MAX + 1, CX_DIRTY_PREFIX "%s.", shard_id);
	q->prefix = prefix;
	q->suffix = DIRTY_MARKER_SUFFIX;
	q->unpadded = false;
}

void
cx_layout_shard_hint(const char *shard_id, char *key)
{
	shard_key(shard_id, SHARD_HINT_NAME, key);
}

/* "<prefix><id as hex><suffix>": the keys of randomly named objects. */
static void
random_name_key(const char *prefix, const uint8_t id[CX_FRAGMENT_ID_LEN],
				const char *suffix, char *key, size_t keysize)
{
	char		hex[2 * CX_FRAGMENT_ID_LEN + 1];

	hex_encode(id, CX_FRAGMENT_ID_LEN, hex);
	snprintf(key, keysize, "%s%s%s", prefix, hex, suffix);
}

void
cx_layout_fragment(const uint8_t id[CX_FRAGMENT_ID_LEN], char *key)
{
	random_name_key(CX_FRAGMENT_PREFIX, id, CX_FRAGMENT_SUFFIX, key,
					CX_FRAGMENT_KEY_SIZE);
}

void
cx_layout_iceberg_manifest_list(int64_t snapshot_id, const char *uuid,
								char *key)
{
	snprintf(key, CX_KEY_MAX + 1, "%ssnap-%lld-%s.avro",
			 CX_ICEBERG_METADATA_PREFIX, (long long) snapshot_id, uuid);
}

void
cx_layout_iceberg_manifest(const char *uuid, int k, char *key)
{
	snprintf(key, CX_KEY_MAX + 1, "%s%s-m%d.avro",
			 CX_ICEBERG_METADATA_PREFIX, uuid, k);
}

void
cx_layout_iceberg_deletes(const char *uuid, char *key)
{
	snprintf(key, CX_KEY_MAX + 1, "%s/data/%s-deletes.parquet",
			 CX_ICEBERG_DIR, uuid);
}

void
cx_layout_index_segment(const uint8_t id[CX_FRAGMENT_ID_LEN], char *key)
{
	random_name_key(CX_INDEX_SEGMENT_PREFIX, id, CX_INDEX_SEGMENT_SUFFIX, key,
					CX_INDEX_SEGMENT_KEY_SIZE);
}

bool
cx_layout_shard_id_ok(const char *shard_id)
{
	size_t		n;

	if (shard_id == NULL)
		return false;
	n = strlen(shard_id);
	if (n == 0 || n > CX_SHARD_ID_MAX ||
		strcmp(shard_id, ".") == 0 || strcmp(shard_id, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		char		c = shard_id[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static const char *
last_segment(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

void
cx_layout_temporary(const char *path, const uint8_t random[CX_TEMP_RANDOM_LEN],
					char *out)
{
	const char *name = last_segment(path);
	char		hex[2 * CX_TEMP_RANDOM_LEN + 1];

	hex_encode(random, CX_TEMP_RANDOM_LEN, hex);
	sprintf(out, "%.*s.%s" CX_TEMP_TAG "%s", (int) (name - path), path, name, hex);
}

bool
cx_layout_is_temporary(const char *path)
{
	const char *name = last_segment(path);
	size_t		len = strlen(name);
	size_t		tag_len = strlen(CX_TEMP_TAG);
	const char *tag;
	uint8_t		random[CX_TEMP_RANDOM_LEN];

	if (name[0] != '.' || len < 2 + tag_len + 2 * CX_TEMP_RANDOM_LEN)
		return false;
	tag = name + len - 2 * CX_TEMP_RANDOM_LEN - tag_len;
	return memcmp(tag, CX_TEMP_TAG, tag_len) == 0 &&
		hex_decode(tag + tag_len, CX_TEMP_RANDOM_LEN, random);
}

/* Whether key is "<prefix><32 hex><suffix>"; the id into name. */
static bool
parse_random_name(const char *key, const char *prefix, const char *suffix,
				  cx_object_name *name)
{
	size_t		plen = strlen(prefix);

	return strlen(key) == plen + 2 * CX_FRAGMENT_ID_LEN + strlen(suffix) &&
		strncmp(key, prefix, plen) == 0 &&
		strcmp(key + plen + 2 * CX_FRAGMENT_ID_LEN, suffix) == 0 &&
		hex_decode(key + plen, CX_FRAGMENT_ID_LEN, name->fragment_id);
}

static cx_object_kind
parse_random_named(const char *key, cx_object_name *name)
{
	if (parse_random_name(key, CX_FRAGMENT_PREFIX, CX_FRAGMENT_SUFFIX, name))
		return CX_OBJECT_FRAGMENT;
	if (parse_random_name(key, CX_INDEX_SEGMENT_PREFIX,
						  CX_INDEX_SEGMENT_SUFFIX, name))
		return CX_OBJECT_INDEX_SEGMENT;
	return CX_OBJECT_NONE;
}

/* A key below "_dirty/": a shard's dirty marker, its shard id all that
 * precedes the number. */
static cx_object_kind
parse_dirty_marker(const char *key, cx_object_name *name)
{
	const char *id = key + strlen(CX_DIRTY_PREFIX);
	size_t		tail = 1 + CX_VSEQ_DIGITS + strlen(DIRTY_MARKER_SUFFIX);
	size_t		len = strlen(id);
	char		built[CX_KEY_MAX + 1];
	cx_vseq		q;

	if (len <= tail || len - tail > CX_SHARD_ID_MAX)
		return CX_OBJECT_NONE;
	memcpy(name->shard_id, id, len - tail);
	name->shard_id[len - tail] = '\0';
	if (!cx_layout_shard_id_ok(name->shard_id))
		return CX_OBJECT_NONE;
	cx_layout_dirty_markers(name->shard_id, built, &q);
	return cx_vseq_parse(&q, key, &name->number) ?
		CX_OBJECT_DIRTY_MARKER : CX_OBJECT_NONE;
}

/* A key below "_shards/": its shard id, then which of the shard's keys. */
static cx_object_kind
parse_shard_object(const char *key, cx_object_name *name)
{
	const char *id = key + strlen(CX_SHARDS_PREFIX);
	const char *slash = strchr(id, '/');
	char		built[CX_KEY_MAX + 1];
	cx_vseq		q;

	if (slash == NULL || (size_t) (slash - id) > CX_SHARD_ID_MAX)
		return CX_OBJECT_NONE;
	memcpy(name->shard_id, id, slash - id);
	name->shard_id[slash - id] = '\0';
	if (!cx_layout_shard_id_ok(name->shard_id))
		return CX_OBJECT_NONE;
	cx_layout_shard_hint(name->shard_id, built);
	if (strcmp(key, built) == 0)
		return CX_OBJECT_SHARD_HINT;
	cx_layout_shard_versions(name->shard_id, built, &q);
	if (cx_vseq_parse(&q, key, &name->number))
		return CX_OBJECT_SHARD_VERSION;
	cx_layout_wal(name->shard_id, built, &q);
	if (cx_vseq_parse(&q, key, &name->number))
		return CX_OBJECT_WAL_ENTRY;
	return CX_OBJECT_NONE;
}

static cx_object_kind
parse_key(const char *key, cx_object_name *name)
{
	if (strcmp(key, CX_LATEST_HINT_KEY) == 0)
		return CX_OBJECT_BASE_HINT;
	if (strcmp(key, CX_ACCESS_CHECK_KEY) == 0)
		return CX_OBJECT_ACCESS_CHECK;
	if (strcmp(key, CX_COMPACTION_LEASE_KEY) == 0)
		return CX_OBJECT_COMPACTION_LEASE;
	if (cx_vseq_parse(&cx_layout_base_versions, key, &name->number))
		return CX_OBJECT_BASE_VERSION;
	if (cx_vseq_parse(&cx_layout_gc_records, key, &name->number))
		return CX_OBJECT_GC_RECORD;
	if (strncmp(key, CX_SHARDS_PREFIX, strlen(CX_SHARDS_PREFIX)) == 0)
		return parse_shard_object(key, name);
	if (strncmp(key, CX_DIRTY_PREFIX, strlen(CX_DIRTY_PREFIX)) == 0)
		return parse_dirty_marker(key, name);
	return parse_random_named(key, name);
}

cx_object_kind
cx_object_parse(const char *key, cx_object_name *name)
{
	memset(name, 0, sizeof(*name));
	name->kind = parse_key(key, name);
	if (name->kind == CX_OBJECT_NONE)
		memset(name, 0, sizeof(*name));
	return name->kind;
}
