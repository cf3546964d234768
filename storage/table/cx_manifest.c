/*
 * cx_manifest.c — base-table manifests: building, (de)serialising, loading,
 * and finding the newest version.
 *
 * The byte layout is specified in docs/FORMAT.md ("Manifests").  Decoding
 * trusts nothing: the frame (magic, format version, length, CRC-32C) is
 * checked before any field is read, every field read is bounds-checked, and
 * counts are checked against the bytes left before anything is allocated.
 *
 * The frame, the fragment-entry form and the version sequence (keys, finding
 * the newest, the hint) are shared with shard manifests: cx_frame.h,
 * cx_fragment_entry.h and cx_versioned.h.  Finding the newest version relies
 * on one property of the store: the versions present form a contiguous range
 * [oldest, newest].  Committers only ever add newest + 1 (cx_commit.c) and GC
 * only removes a prefix of old versions, so the newest can be found by
 * probing forward from any existing version.
 */
#include "table/cx_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/cx_fragment_entry.h"
#include "util/cx_frame.h"
#include "objstore/cx_versioned.h"

#define COMMIT_ID_LEN 16

/* Smallest encoded fragment entry (empty path, no columns, no deletions),
 * shard entry and extension. */
#define MIN_FRAGMENT_LEN(format) (CX_FRAGENTRY_MIN_LEN + 4 + ((format) >= 2 ? 2 : 0))
#define MIN_SHARD_LEN (2 + 8)

/* A shard entry's flags (format 4). */
#define SHARD_DIRTY_MARKED 0x01
#define MIN_EXT_LEN (4 + 4)

/* "<uri>/<key>", the name error messages give an object. */
typedef struct objname
{
	char		s[CX_ERR_MSG_LEN];
} objname;

static void
object_name(const cx_objstore *s, const char *key, objname *name)
{
	snprintf(name->s, sizeof(name->s), "%s/%s", s->uri, key);
}

/* --------------------------------------------------------------------------
 * Building
 * -------------------------------------------------------------------------- */

cx_manifest *
cx_manifest_new(void)
{
	return calloc(1, sizeof(cx_manifest));
}

void
cx_manifest_free(cx_manifest *m)
{
	if (m == NULL)
		return;
	free(m->operation);
	cx_manifest_free_schemas(m);
	free(m->key_column);
	for (uint32_t i = 0; i < m->nfragments; i++)
	{
		cx_fragment_info_free(&m->fragments[i]);
		if (m->dvs != NULL)
			free(m->dvs[i].rows);
	}
	free(m->fragments);
	free(m->dvs);
	for (uint32_t i = 0; i < m->nshards; i++)
		free(m->shards[i].shard_id);
	free(m->shards);
	for (uint32_t i = 0; i < m->nexts; i++)
		free(m->exts[i].data);
	free(m->exts);
	free(m);
}

size_t
cx_manifest_memory(const cx_manifest *m)
{
	size_t		bytes = sizeof(*m) + cx_str_memory(m->operation) +
		cx_str_memory(m->key_column) +
		m->nfragments * sizeof(cx_fragment_info) +
		(m->dvs != NULL ? m->nfragments * sizeof(cx_deletion_vector) : 0) +
		m->nshards * sizeof(cx_shard_mark) + m->nexts * sizeof(cx_manifest_ext);

	for (uint32_t i = 0; i < m->nfragments; i++)
		bytes += cx_fragment_info_memory(&m->fragments[i]) +
			(m->dvs != NULL ? m->dvs[i].n * sizeof(uint32_t) : 0);
	for (uint32_t i = 0; i < m->nshards; i++)
		bytes += cx_str_memory(m->shards[i].shard_id);
	for (uint32_t i = 0; i < m->nexts; i++)
		bytes += m->exts[i].len;
	return bytes;
}

/* Copies src's fragments and deletion vectors into c, which has none yet.
 * False on OOM (c then holds the ones copied so far, for cx_manifest_free). */
static bool
clone_fragments(cx_manifest *c, const cx_manifest *src)
{
	cx_err		err;

	if (src->nfragments == 0)
		return true;
	c->fragments = calloc(src->nfragments, sizeof(cx_fragment_info));
	c->dvs = calloc(src->nfragments, sizeof(cx_deletion_vector));
	if (c->fragments == NULL || c->dvs == NULL)
		return false;
	for (uint32_t i = 0; i < src->nfragments; i++)
	{
		const cx_deletion_vector *dv = src->dvs != NULL ? &src->dvs[i] : NULL;

		if (cx_fragment_info_copy(&c->fragments[i], &src->fragments[i],
								  &err) != CX_OK)
			return false;
		c->nfragments = i + 1;
		if (dv != NULL && dv->n > 0)
		{
			c->dvs[i].rows = cx_memdup(dv->rows, dv->n * sizeof(uint32_t));
			if (c->dvs[i].rows == NULL)
				return false;
			c->dvs[i].n = dv->n;
		}
	}
	return true;
}

static bool
clone_shards(cx_manifest *c, const cx_manifest *src)
{
	if (src->nshards == 0)
		return true;
	c->shards = calloc(src->nshards, sizeof(cx_shard_mark));
	if (c->shards == NULL)
		return false;
	for (uint32_t i = 0; i < src->nshards; i++)
	{
		c->shards[i].shard_id = cx_strdup(src->shards[i].shard_id);
		if (c->shards[i].shard_id == NULL)
			return false;
		c->shards[i].merged_gen = src->shards[i].merged_gen;
		c->shards[i].dirty_marked = src->shards[i].dirty_marked;
		c->nshards = i + 1;
	}
	return true;
}

static bool
clone_exts(cx_manifest *c, const cx_manifest *src)
{
	if (src->nexts == 0)
		return true;
	c->exts = calloc(src->nexts, sizeof(cx_manifest_ext));
	if (c->exts == NULL)
		return false;
	for (uint32_t i = 0; i < src->nexts; i++)
	{
		const cx_manifest_ext *e = &src->exts[i];

		c->exts[i].data = cx_memdup(e->data, e->len);
		if (c->exts[i].data == NULL)
			return false;
		c->exts[i].tag = e->tag;
		c->exts[i].len = e->len;
		c->nexts = i + 1;
	}
	return true;
}

cx_manifest *
cx_manifest_clone(const cx_manifest *m)
{
	cx_manifest *c = cx_manifest_new();

	if (c == NULL)
		return NULL;
	c->version = m->version;
	memcpy(c->commit_id, m->commit_id, COMMIT_ID_LEN);
	c->committed_at_us = m->committed_at_us;
	c->unique_key = m->unique_key;
	c->truncated_before_us = m->truncated_before_us;
	if ((m->operation != NULL &&
		 (c->operation = cx_strdup(m->operation)) == NULL) ||
		!cx_manifest_clone_schemas(c, m) ||
		(m->key_column != NULL &&
		 (c->key_column = cx_strdup(m->key_column)) == NULL) ||
		!clone_fragments(c, m) ||
		!clone_shards(c, m) ||
		!clone_exts(c, m))
	{
		cx_manifest_free(c);
		return NULL;
	}
	return c;
}

uint64_t
cx_manifest_rows(const cx_manifest *m)
{
	uint64_t	rows = 0;

	for (uint32_t i = 0; i < m->nfragments; i++)
		rows += m->fragments[i].rows - cx_manifest_deleted_count(m, i);
	return rows;
}

uint64_t
cx_manifest_bytes(const cx_manifest *m)
{
	uint64_t	bytes = 0;

	for (uint32_t i = 0; i < m->nfragments; i++)
		bytes += m->fragments[i].size;
	return bytes;
}

/* Makes m->dvs exist (nfragments empty vectors) and have room for one more
 * entry, so the two arrays grow in step. */
static bool
grow_dvs(cx_manifest *m)
{
	size_t		n = (size_t) m->nfragments + 1;
	cx_deletion_vector *grown;

	if (m->dvs == NULL)
	{
		m->dvs = calloc(n, sizeof(cx_deletion_vector));
		return m->dvs != NULL;
	}
	grown = realloc(m->dvs, n * sizeof(cx_deletion_vector));
	if (grown == NULL)
		return false;
	memset(&grown[m->nfragments], 0, sizeof(cx_deletion_vector));
	m->dvs = grown;
	return true;
}

cx_code
cx_manifest_add_fragment(cx_manifest *m, const cx_fragment_info *fi,
						 cx_err *err)
{
	cx_fragment_info *grown;

	if (m->nfragments == UINT32_MAX)
		return cx_err_set(err, CX_ERR_LIMIT,
						  "manifest already lists %u fragments", m->nfragments);
	grown = realloc(m->fragments,
					((size_t) m->nfragments + 1) * sizeof(cx_fragment_info));
	if (grown == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "adding fragment %s: out of memory",
						  fi->path);
	m->fragments = grown;
	if (!grow_dvs(m))
		return cx_err_set(err, CX_ERR_NOMEM, "adding fragment %s: out of memory",
						  fi->path);
	if (cx_fragment_info_copy(&m->fragments[m->nfragments], fi, err) != CX_OK)
		return err->code;
	m->nfragments++;
	return CX_OK;
}

int64_t
cx_manifest_find_fragment(const cx_manifest *m, const char *path)
{
	for (uint32_t i = 0; i < m->nfragments; i++)
		if (strcmp(m->fragments[i].path, path) == 0)
			return i;
	return -1;
}

/* --------------------------------------------------------------------------
 * Encoding
 * -------------------------------------------------------------------------- */

/* The key column, if any, is a column of the schema (once there is one), and
 * unique_key needs a key.  Long names cannot be columns, so the length limit
 * of str16 is covered. */
static bool
key_ok(const char *key_column, bool unique_key, const cx_schema *schema)
{
	if (key_column == NULL || key_column[0] == '\0')
		return !unique_key;
	return schema == NULL || cx_schema_find(schema, key_column) >= 0;
}

/* Strictly ascending row indices, all within the fragment. */
static bool
dv_ok(const cx_deletion_vector *dv, uint64_t rows)
{
	if (dv->n > 0 && dv->rows == NULL)
		return false;
	for (uint32_t i = 0; i < dv->n; i++)
		if (dv->rows[i] >= rows || (i > 0 && dv->rows[i - 1] >= dv->rows[i]))
			return false;
	return true;
}

/* Refuses what the format cannot carry or a reader would reject, so that a
 * committer never publishes a version nobody can load. */
static cx_code
check_encodable(const cx_manifest *m, cx_err *err)
{
	if (m->operation != NULL && strlen(m->operation) > UINT16_MAX)
		return cx_err_set(err, CX_ERR_INVALID,
						  "manifest operation name is longer than %u bytes",
						  UINT16_MAX);
	if (!key_ok(m->key_column, m->unique_key, m->schema))
		return cx_err_set(err, CX_ERR_INVALID,
						  "manifest version %llu: key column \"%.64s\" is not a column of the table (or unique_key is set without a key)",
						  (unsigned long long) m->version,
						  m->key_column != NULL ? m->key_column : "");
	for (uint32_t i = 0; i < m->nshards; i++)
		if (!cx_layout_shard_id_ok(m->shards[i].shard_id) ||
			(i > 0 && strcmp(m->shards[i - 1].shard_id,
							 m->shards[i].shard_id) >= 0))
			return cx_err_set(err, CX_ERR_INVALID,
							  "manifest version %llu: shard list is not a sorted list of valid shard ids",
							  (unsigned long long) m->version);
	if (m->truncated_before_us < 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "manifest version %llu: negative truncated_before_us",
						  (unsigned long long) m->version);
	for (uint32_t i = 0; i < m->nfragments; i++)
	{
		const cx_fragment_info *fi = &m->fragments[i];

		if (fi->origin_shard != NULL && !cx_layout_shard_id_ok(fi->origin_shard))
			return cx_err_set(err, CX_ERR_INVALID,
							  "fragment %s: origin shard is not a valid shard id",
							  fi->path);
		if (cx_fragentry_check(fi, err) != CX_OK)
			return cx_err_prefix(err, "fragment %u of manifest version %llu",
								 i, (unsigned long long) m->version);
		if (m->dvs != NULL && !dv_ok(&m->dvs[i], fi->rows))
			return cx_err_set(err, CX_ERR_INVALID,
							  "fragment %s: deletion vector is not an ascending list of its rows",
							  fi->path);
	}
	for (uint32_t i = 0; i < m->nexts; i++)
		if (m->exts[i].len > 0 && m->exts[i].data == NULL)
			return cx_err_set(err, CX_ERR_INVALID,
							  "manifest extension %u has no data", m->exts[i].tag);
	return CX_OK;
}

static void
encode_fragment(const cx_fragment_info *fi, const cx_deletion_vector *dv,
				cx_buf *out)
{
	cx_fragentry_encode(fi, out);
	cx_buf_put_u32(out, dv != NULL ? dv->n : 0);
	for (uint32_t i = 0; dv != NULL && i < dv->n; i++)
		cx_buf_put_u32(out, dv->rows[i]);
	cx_buf_put_str16(out, fi->origin_shard != NULL ? fi->origin_shard : "");
}

static void
encode_body(const cx_manifest *m, cx_buf *out)
{
	cx_buf_put_u64(out, m->version);
	cx_buf_put(out, m->commit_id, COMMIT_ID_LEN);
	cx_buf_put_i64(out, m->committed_at_us);
	cx_buf_put_str16(out, m->operation != NULL ? m->operation : "");
	cx_manifest_encode_schemas(m, out);
	cx_buf_put_str16(out, m->key_column != NULL ? m->key_column : "");
	cx_buf_put_u8(out, m->unique_key);
	cx_buf_put_i64(out, m->truncated_before_us);
	cx_buf_put_u32(out, m->nfragments);
	for (uint32_t i = 0; i < m->nfragments; i++)
		encode_fragment(&m->fragments[i],
						m->dvs != NULL ? &m->dvs[i] : NULL, out);
	cx_buf_put_u32(out, m->nshards);
	for (uint32_t i = 0; i < m->nshards; i++)
	{
		cx_buf_put_str16(out, m->shards[i].shard_id);
		cx_buf_put_u64(out, m->shards[i].merged_gen);
		cx_buf_put_u8(out, m->shards[i].dirty_marked ? SHARD_DIRTY_MARKED : 0);
	}
	cx_buf_put_u32(out, m->nexts);
	for (uint32_t i = 0; i < m->nexts; i++)
	{
		cx_buf_put_u32(out, m->exts[i].tag);
		cx_buf_put_bytes32(out, m->exts[i].data, m->exts[i].len);
	}
}

/* Appends the object to out; on error out is left as it was (or failed). */
cx_code
cx_manifest_encode(const cx_manifest *m, cx_buf *out, cx_err *err)
{
	char		what[64];
	size_t		start;

	if (check_encodable(m, err) != CX_OK)
		return err->code;
	snprintf(what, sizeof(what), "manifest version %llu",
			 (unsigned long long) m->version);
	start = cx_frame_begin(out, CX_MANIFEST_MAGIC, CX_MANIFEST_FORMAT);
	encode_body(m, out);
	return cx_frame_end(out, start, what, err);
}

/* --------------------------------------------------------------------------
 * Decoding
 * -------------------------------------------------------------------------- */

/*
 * Field decoders.  Malformed input marks the reader bad (the caller reports
 * the object as corrupt); they return false only when memory runs out, so the
 * two are reported differently.
 */
/* key_column (empty = none) and unique_key, checked against the schema;
 * then (format 2) truncated_before_us. */
static bool
decode_key(cx_rd *r, uint16_t format, cx_manifest *m)
{
	uint8_t		unique;

	m->key_column = cx_rd_str16(r);
	unique = cx_rd_u8(r);
	if (format >= 2)
		m->truncated_before_us = cx_rd_i64(r);
	if (m->truncated_before_us < 0)
		r->bad = true;
	if (!cx_rd_ok(r))
		return true;
	if (m->key_column[0] == '\0')
	{
		free(m->key_column);
		m->key_column = NULL;
	}
	m->unique_key = unique == 1;
	if (unique > 1 || !key_ok(m->key_column, m->unique_key, m->schema))
		r->bad = true;
	return true;
}

/* A deletion vector: u32 n, then n strictly ascending rows below `rows`. */
static bool
decode_dv(cx_rd *r, uint64_t rows, cx_deletion_vector *dv)
{
	uint32_t	n = cx_rd_u32(r);

	if (!cx_rd_ok(r) || n == 0)
		return true;
	if (n > cx_rd_left(r) / 4 || n > rows)
	{
		r->bad = true;
		return true;
	}
	dv->rows = malloc((size_t) n * sizeof(uint32_t));
	if (dv->rows == NULL)
		return false;
	dv->n = n;
	for (uint32_t i = 0; i < n; i++)
		dv->rows[i] = cx_rd_u32(r);
	if (!dv_ok(dv, rows))
		r->bad = true;
	return true;
}

/* The origin shard (format 2): empty = unknown, else a valid shard id. */
static bool
decode_origin(cx_rd *r, cx_fragment_info *fi)
{
	char	   *origin = cx_rd_str16(r);

	if (!cx_rd_ok(r))
		return true;
	if (origin == NULL)
		return false;
	if (origin[0] == '\0')
		free(origin);
	else if (cx_layout_shard_id_ok(origin))
		fi->origin_shard = origin;
	else
	{
		free(origin);
		r->bad = true;
	}
	return true;
}

static bool
decode_fragment(cx_rd *r, uint16_t format, cx_fragment_info *fi,
				cx_deletion_vector *dv)
{
	if (!cx_fragentry_decode(r, format >= 3, fi))
		return false;
	if (cx_rd_ok(r) && !decode_dv(r, fi->rows, dv))
		return false;
	return format < 2 || !cx_rd_ok(r) || decode_origin(r, fi);
}

static bool
decode_fragments(cx_rd *r, uint16_t format, cx_manifest *m)
{
	uint32_t	n = cx_rd_u32(r);

	if (!cx_rd_ok(r) || n == 0)
		return true;
	if (n > cx_rd_left(r) / MIN_FRAGMENT_LEN(format))
	{
		r->bad = true;
		return true;
	}
	m->fragments = calloc(n, sizeof(cx_fragment_info));
	m->dvs = calloc(n, sizeof(cx_deletion_vector));
	if (m->fragments == NULL || m->dvs == NULL)
		return false;
	for (uint32_t i = 0; i < n && cx_rd_ok(r); i++)
	{
		/* Counted before decoding so a half-decoded entry is freed too. */
		m->nfragments = i + 1;
		if (!decode_fragment(r, format, &m->fragments[i], &m->dvs[i]))
			return false;
	}
	return true;
}

/* A shard entry's flags (format 4); unknown flags are a damaged entry. */
static void
decode_shard_flags(cx_rd *r, uint16_t format, cx_shard_mark *sm)
{
	uint8_t		flags = format >= 4 ? cx_rd_u8(r) : 0;

	if (flags & ~SHARD_DIRTY_MARKED)
		r->bad = true;
	sm->dirty_marked = (flags & SHARD_DIRTY_MARKED) != 0;
}

/* The shard list: valid ids, strictly ascending (so no duplicates). */
static bool
decode_shards(cx_rd *r, uint16_t format, cx_manifest *m)
{
	uint32_t	n = cx_rd_u32(r);

	if (!cx_rd_ok(r) || n == 0)
		return true;
	if (n > cx_rd_left(r) / MIN_SHARD_LEN)
	{
		r->bad = true;
		return true;
	}
	m->shards = calloc(n, sizeof(cx_shard_mark));
	if (m->shards == NULL)
		return false;
	for (uint32_t i = 0; i < n && cx_rd_ok(r); i++)
	{
		cx_shard_mark *sm = &m->shards[i];

		/* Counted before decoding so a half-decoded entry is freed too. */
		m->nshards = i + 1;
		sm->shard_id = cx_rd_str16(r);
		sm->merged_gen = cx_rd_u64(r);
		decode_shard_flags(r, format, sm);
		if (!cx_rd_ok(r))
			return true;
		if (!cx_layout_shard_id_ok(sm->shard_id) ||
			(i > 0 && strcmp(m->shards[i - 1].shard_id, sm->shard_id) >= 0))
			r->bad = true;
	}
	return true;
}

static bool
decode_exts(cx_rd *r, cx_manifest *m)
{
	uint32_t	n = cx_rd_u32(r);

	if (!cx_rd_ok(r) || n == 0)
		return true;
	if (n > cx_rd_left(r) / MIN_EXT_LEN)
	{
		r->bad = true;
		return true;
	}
	m->exts = calloc(n, sizeof(cx_manifest_ext));
	if (m->exts == NULL)
		return false;
	for (uint32_t i = 0; i < n && cx_rd_ok(r); i++)
	{
		cx_manifest_ext *e = &m->exts[i];
		const uint8_t *p;

		e->tag = cx_rd_u32(r);
		p = cx_rd_bytes32(r, &e->len);
		if (p == NULL)
			return true;
		e->data = cx_memdup(p, e->len);
		if (e->data == NULL)
			return false;
		m->nexts = i + 1;
	}
	return true;
}

/* Decodes the body into *m; CX_ERR_CORRUPT unless it is exactly consumed. */
static cx_code
decode_body(const uint8_t *body, size_t len, uint16_t format, const char *name,
			cx_manifest *m, cx_err *err)
{
	cx_rd		r;
	const uint8_t *id;
	bool		mem_ok;

	cx_rd_init(&r, body, len);
	m->version = cx_rd_u64(&r);
	id = cx_rd_take(&r, COMMIT_ID_LEN);
	if (id != NULL)
		memcpy(m->commit_id, id, COMMIT_ID_LEN);
	m->committed_at_us = cx_rd_i64(&r);
	m->operation = cx_rd_str16(&r);
	mem_ok = cx_manifest_decode_schemas(&r, format, m) &&
		decode_key(&r, format, m) &&
		decode_fragments(&r, format, m) &&
		decode_shards(&r, format, m) &&
		decode_exts(&r, m);
	if (!mem_ok)
		return cx_err_set(err, CX_ERR_NOMEM,
						  "manifest %s: out of memory while decoding", name);
	if (!cx_rd_ok(&r))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "manifest %s: malformed body (bad field at byte %zu)",
						  name, CX_FRAME_HEADER_LEN + r.pos);
	if (cx_rd_left(&r) != 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "manifest %s: %zu unexpected bytes at the end of the body",
						  name, cx_rd_left(&r));
	if (m->version == 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "manifest %s: claims version 0", name);
	return CX_OK;
}

cx_code
cx_manifest_decode(const uint8_t *data, size_t len, const char *name,
				   cx_manifest **out, cx_err *err)
{
	const uint8_t *body;
	uint32_t	body_len = 0;
	cx_manifest *m;

	*out = NULL;
	if (cx_frame_check(data, len, CX_MANIFEST_MAGIC, CX_MANIFEST_FORMAT,
					   "manifest", name, &body, &body_len, err) != CX_OK)
		return err->code;
	m = cx_manifest_new();
	if (m == NULL)
		return cx_err_set(err, CX_ERR_NOMEM,
						  "manifest %s: out of memory while decoding", name);
	/* The frame check passed: the format (bytes 4-5) is 1 to 3. */
	if (decode_body(body, body_len, cx_load_u16(data + 4), name, m,
					err) != CX_OK)
	{
		cx_manifest_free(m);
		return err->code;
	}
	*out = m;
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Keys and loading
 * -------------------------------------------------------------------------- */

void
cx_manifest_key(uint64_t version, char *key, size_t keysize)
{
	char		full[CX_KEY_MAX + 1];
	size_t		n;

	cx_vseq_key(&cx_layout_base_versions, version, full);
	n = strlen(full);
	if (keysize == 0)
		return;
	if (n >= keysize)
		n = keysize - 1;
	memcpy(key, full, n);
	key[n] = '\0';
}

cx_code
cx_manifest_load(cx_objstore *s, uint64_t version, cx_manifest **out,
				 cx_err *err)
{
	char		key[64];
	objname		name;
	cx_buf		b;
	cx_code		rc;

	*out = NULL;
	if (version == 0)
		return cx_err_set(err, CX_ERR_NOT_FOUND,
						  "%s: version 0 is the empty store and has no manifest",
						  s->uri);
	cx_manifest_key(version, key, sizeof(key));
	object_name(s, key, &name);
	cx_buf_init(&b);
	rc = cx_manifest_cache_get(s, version, &b) ? CX_OK :
		cx_obj_get(s, key, &b, err);
	if (rc == CX_OK)
		rc = cx_manifest_decode(b.data, b.len, name.s, out, err);
	if (rc == CX_OK && (*out)->version == version)
		cx_manifest_cache_put(s, version, &b);
	cx_buf_free(&b);
	if (rc == CX_OK && (*out)->version != version)
	{
		rc = cx_err_set(err, CX_ERR_CORRUPT,
						"manifest %s: holds version %llu, not the version its key names",
						name.s, (unsigned long long) (*out)->version);
		cx_manifest_free(*out);
		*out = NULL;
	}
	return rc;
}

cx_code
cx_manifest_fragment_failed(const cx_manifest *m, const char *path,
							cx_err *err)
{
	return cx_err_prefix(err, "fragment %s listed by base version %llu", path,
						 (unsigned long long) m->version);
}

cx_code
cx_manifest_put(cx_objstore *s, uint64_t version, const cx_buf *bytes,
				bool *ours, cx_err *err)
{
	cx_buf		taken;
	cx_vseq_outcome outcome = CX_VSEQ_FAILED;
	cx_code		rc;

	cx_buf_init(&taken);
	rc = cx_vseq_put(s, &cx_layout_base_versions, version, bytes, &taken, &outcome, err);
	cx_buf_free(&taken);
	*ours = rc == CX_OK && outcome == CX_VSEQ_LANDED;
	if (*ours)
		cx_manifest_cache_put(s, version, bytes);
	if (rc != CX_OK)
		return cx_err_prefix(err, "commit of version %llu to %s",
							 (unsigned long long) version, s->uri);
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * The "_latest" hint and finding the newest version
 * -------------------------------------------------------------------------- */

cx_code
cx_manifest_write_hint(cx_objstore *s, uint64_t version, cx_err *err)
{
	return cx_hint_write(s, CX_LATEST_HINT_KEY, version, err);
}

cx_code
cx_manifest_list_versions(cx_objstore *s, cx_version_fn fn, void *arg,
						  cx_err *err)
{
	return cx_vseq_list(s, &cx_layout_base_versions, fn, arg, err);
}

/* The hint is trusted only once its version is seen to exist (cx_versioned.h);
 * without a usable hint the listing decides. */
cx_code
cx_manifest_latest_version(cx_objstore *s, uint64_t *version, cx_err *err)
{
	return cx_vseq_latest(s, &cx_layout_base_versions, CX_LATEST_HINT_KEY, 0, version, err);
}

/* A stale hint that GC removed while we probed past it leads to a version
 * that is gone (cx_versioned.h): list the versions instead. */
cx_code
cx_manifest_load_latest(cx_objstore *s, cx_manifest **out, cx_err *err)
{
	uint64_t	version;
	cx_code		rc;

	*out = NULL;
	if (cx_manifest_latest_version(s, &version, err) != CX_OK)
		return err->code;
	if (version == 0)
		return CX_OK;
	rc = cx_manifest_load(s, version, out, err);
	if (rc != CX_ERR_NOT_FOUND)
		return rc;
	if (cx_vseq_latest(s, &cx_layout_base_versions, NULL, 0, &version,
					   err) != CX_OK)
		return err->code;
	return version == 0 ? CX_OK : cx_manifest_load(s, version, out, err);
}
