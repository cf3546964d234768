/*
 * cx_shard_manifest.c — shard manifests: building, (de)serialising, loading,
 * finding the newest version, and the writer's put-if-absent commit
 * (cx_shard_manifest.h).
 *
 * The byte layout is specified in docs/FORMAT.md "Shards".  The object is
 * framed like a base manifest (cx_frame.h) and its generation fragments are
 * listed in the base manifest's fragment-entry form (cx_fragment_entry.h).
 * Decoding trusts nothing: frame first, every field bounds-checked, counts
 * checked against the bytes left before anything is allocated.
 */
#include "memwal/cx_shard_manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/cx_fragment_entry.h"
#include "util/cx_frame.h"
#include "objstore/cx_versioned.h"

#define COMMIT_ID_LEN 16

/* u64 gen, i64 min_ts, i64 max_ts, then a fragment entry (formats 2 and
 * 3: and u64 carrier after max_ts). */
#define MIN_GEN_LEN (8 + 8 + 8 + CX_FRAGENTRY_MIN_LEN)

/* The rule itself is the layout's: a shard id is one key segment. */
cx_code
cx_shard_id_validate(const char *shard_id, cx_err *err)
{
	if (!cx_layout_shard_id_ok(shard_id))
		return cx_err_set(err, CX_ERR_INVALID,
						  "invalid shard id \"%.140s\": use 1 to %d of A-Z a-z 0-9 . _ - (not \".\" or \"..\")",
						  shard_id != NULL ? shard_id : "", CX_SHARD_ID_MAX);
	return CX_OK;
}

cx_code
cx_shard_generation_schema(const cx_schema *table, cx_schema **out,
						   cx_err *err)
{
	size_t		plen = strlen(CX_HIDDEN_PREFIX);
	cx_schema  *g;

	*out = NULL;
	for (uint32_t i = 0; i < table->ncolumns; i++)
		if (strncmp(table->columns[i].name, CX_HIDDEN_PREFIX, plen) == 0)
			return cx_err_set(err, CX_ERR_SCHEMA,
							  "column \"%.64s\": names starting with \"%s\" are reserved for ctxstore",
							  table->columns[i].name, CX_HIDDEN_PREFIX);
	g = cx_schema_clone(table);
	if (g == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "generation schema: out of memory");
	if (cx_schema_add(g, CX_COL_COMMIT_TS, CX_T_INT64, 0, NULL, err) != CX_OK ||
		cx_schema_add(g, CX_COL_TOMBSTONE, CX_T_BOOL, 0, NULL, err) != CX_OK)
	{
		cx_schema_free(g);
		return err->code;
	}
	g->columns[g->ncolumns - 2].field_id = CX_FIELD_ID_COMMIT_TS;
	g->columns[g->ncolumns - 1].field_id = CX_FIELD_ID_TOMBSTONE;
	*out = g;
	return CX_OK;
}

void
cx_shard_manifest_key(const char *shard_id, uint64_t version, char *key,
					  size_t keysize)
{
	char		prefix[CX_KEY_MAX + 1];
	char		full[CX_KEY_MAX + 1];
	cx_vseq		q;

	cx_layout_shard_versions(shard_id, prefix, &q);
	cx_vseq_key(&q, version, full);
	snprintf(key, keysize, "%s", full);
}

/* --------------------------------------------------------------------------
 * Building
 * -------------------------------------------------------------------------- */

cx_code
cx_shard_generation_failed(const cx_shard_manifest *m, const cx_generation *g,
						   cx_err *err)
{
	return cx_err_prefix(err, "generation %llu (%s) listed by shard %s version %llu",
						 (unsigned long long) g->gen, g->fragment.path,
						 m->shard_id, (unsigned long long) m->version);
}

cx_shard_manifest *
cx_shard_manifest_new(const char *shard_id)
{
	cx_shard_manifest *m = calloc(1, sizeof(cx_shard_manifest));

	if (m == NULL)
		return NULL;
	m->shard_id = cx_strdup(shard_id);
	m->next_gen = 1;
	if (m->shard_id == NULL)
	{
		free(m);
		return NULL;
	}
	return m;
}

void
cx_shard_manifest_free(cx_shard_manifest *m)
{
	if (m == NULL)
		return;
	free(m->shard_id);
	free(m->writer);
	for (uint32_t i = 0; i < m->ngens; i++)
		cx_fragment_info_free(&m->gens[i].fragment);
	free(m->gens);
	free(m->carried);
	free(m);
}

size_t
cx_shard_manifest_memory(const cx_shard_manifest *m)
{
	size_t		bytes = sizeof(*m) + cx_str_memory(m->shard_id) +
		cx_str_memory(m->writer) + m->ngens * sizeof(cx_generation) +
		m->carried_len;

	for (uint32_t i = 0; i < m->ngens; i++)
		bytes += cx_fragment_info_memory(&m->gens[i].fragment);
	return bytes;
}

cx_shard_manifest *
cx_shard_manifest_clone(const cx_shard_manifest *m)
{
	cx_shard_manifest *c = cx_shard_manifest_successor(m);

	if (c == NULL || m->carried == NULL)
		return c;
	if ((c->carried = malloc(m->carried_len)) == NULL)
	{
		cx_shard_manifest_free(c);
		return NULL;
	}
	memcpy(c->carried, m->carried, m->carried_len);
	c->carried_len = m->carried_len;
	return c;
}

cx_shard_manifest *
cx_shard_manifest_successor(const cx_shard_manifest *m)
{
	cx_shard_manifest *c = cx_shard_manifest_new(m->shard_id);
	cx_err		ignored;

	if (c == NULL)
		return NULL;
	c->version = m->version;
	c->epoch = m->epoch;
	memcpy(c->commit_id, m->commit_id, COMMIT_ID_LEN);
	c->committed_at_us = m->committed_at_us;
	c->replay_seq = m->replay_seq;
	c->next_gen = m->next_gen;
	if (m->writer != NULL && (c->writer = cx_strdup(m->writer)) == NULL)
		goto oom;
	if (m->ngens > 0)
	{
		c->gens = calloc(m->ngens, sizeof(cx_generation));
		if (c->gens == NULL)
			goto oom;
		for (uint32_t i = 0; i < m->ngens; i++)
		{
			c->gens[i] = m->gens[i];
			memset(&c->gens[i].fragment, 0, sizeof(cx_fragment_info));
			c->ngens = i + 1;
			if (cx_fragment_info_copy(&c->gens[i].fragment,
									  &m->gens[i].fragment, &ignored) != CX_OK)
				goto oom;
		}
	}
	return c;
oom:
	cx_shard_manifest_free(c);
	return NULL;
}

/* --------------------------------------------------------------------------
 * Encoding
 * -------------------------------------------------------------------------- */

/* The rules a reader enforces on the generation list (besides the entries'
 * own): numbers strictly increasing, below next_gen, ranges ordered. */
static bool
gens_ordered(const cx_shard_manifest *m)
{
	for (uint32_t i = 0; i < m->ngens; i++)
	{
		const cx_generation *g = &m->gens[i];

		if (g->gen == 0 || g->gen >= m->next_gen || g->min_ts > g->max_ts ||
			(i > 0 && g->gen <= m->gens[i - 1].gen))
			return false;
	}
	return true;
}

/* Whether any generation is inline: the version needs format 2. */
static bool
lists_inline(const cx_shard_manifest *m)
{
	for (uint32_t i = 0; i < m->ngens; i++)
		if (m->gens[i].carrier != 0)
			return true;
	return false;
}

/*
 * The rules of inline generations: carried by this version or an earlier
 * one; the one this version carries (at most one: it sealed it) is its
 * newest generation, and the carried bytes are exactly its fragment.
 */
static bool
carried_consistent(const cx_shard_manifest *m)
{
	const cx_generation *own = NULL;

	for (uint32_t i = 0; i < m->ngens; i++)
	{
		if (m->gens[i].carrier > m->version)
			return false;
		if (m->gens[i].carrier == m->version)
		{
			if (own != NULL || i != m->ngens - 1)
				return false;
			own = &m->gens[i];
		}
	}
	if (own == NULL)
		return m->carried_len == 0;
	return m->carried != NULL && m->carried_len == own->fragment.size;
}

/* Refuses what a reader would reject, so a writer never publishes a version
 * nobody can load. */
static cx_code
check_encodable(const cx_shard_manifest *m, cx_err *err)
{
	if (cx_shard_id_validate(m->shard_id, err) != CX_OK)
		return err->code;
	if (m->version == 0 || m->epoch == 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: manifest version and epoch must be >= 1",
						  m->shard_id);
	if (m->writer != NULL && strlen(m->writer) > UINT16_MAX)
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: writer description longer than %u bytes",
						  m->shard_id, UINT16_MAX);
	if (!gens_ordered(m))
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: generations out of order, numbered 0 or beyond next_gen %llu, or with an inverted time range",
						  m->shard_id, (unsigned long long) m->next_gen);
	if (!carried_consistent(m))
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: inline generations carried by a later version, or carried bytes that are not exactly the newest generation's",
						  m->shard_id);
	for (uint32_t i = 0; i < m->ngens; i++)
		if (cx_fragentry_check(&m->gens[i].fragment, err) != CX_OK)
			return cx_err_prefix(err, "shard %s: generation %llu", m->shard_id,
								 (unsigned long long) m->gens[i].gen);
	return CX_OK;
}

/* Format 3's carried part, first in the body: u64 length, the bytes. */
static void
encode_carried(const cx_shard_manifest *m, cx_buf *out)
{
	cx_buf_put_u64(out, m->carried_len);
	if (m->carried_len > 0)
		cx_buf_put(out, m->carried, m->carried_len);
}

void
cx_shard_generation_encode(const cx_generation *g, uint16_t format,
						   cx_buf *out)
{
	cx_buf_put_u64(out, g->gen);
	cx_buf_put_i64(out, g->min_ts);
	cx_buf_put_i64(out, g->max_ts);
	if (format != 1)
		cx_buf_put_u64(out, g->carrier);
	cx_fragentry_encode(&g->fragment, out);
}

static void
encode_body(const cx_shard_manifest *m, uint16_t format,
			cx_gen_entries *reuse, cx_buf *out)
{
	if (format == 3)
		encode_carried(m, out);
	cx_buf_put_u64(out, m->version);
	cx_buf_put_str16(out, m->shard_id);
	cx_buf_put_u64(out, m->epoch);
	cx_buf_put(out, m->commit_id, COMMIT_ID_LEN);
	cx_buf_put_i64(out, m->committed_at_us);
	cx_buf_put_str16(out, m->writer != NULL ? m->writer : "");
	cx_buf_put_u64(out, m->replay_seq);
	cx_buf_put_u64(out, m->next_gen);
	cx_buf_put_u32(out, m->ngens);
	if (reuse != NULL)
		cx_gen_entries_encode(reuse, m->gens, m->ngens, format, out);
	else
		for (uint32_t i = 0; i < m->ngens; i++)
			cx_shard_generation_encode(&m->gens[i], format, out);
}

cx_code
cx_shard_manifest_encode(const cx_shard_manifest *m, cx_buf *out, cx_err *err)
{
	return cx_shard_manifest_encode_reusing(m, NULL, out, err);
}

cx_code
cx_shard_manifest_encode_reusing(const cx_shard_manifest *m,
								 cx_gen_entries *reuse, cx_buf *out,
								 cx_err *err)
{
	char		what[64 + CX_SHARD_ID_MAX];
	uint16_t	format = lists_inline(m) ? CX_SHARD_FORMAT : 1;
	size_t		start;

	if (check_encodable(m, err) != CX_OK)
		return err->code;
	snprintf(what, sizeof(what), "shard %s manifest version %llu",
			 m->shard_id, (unsigned long long) m->version);
	start = cx_frame_begin(out, CX_SHARD_MAGIC, format);
	encode_body(m, format, reuse, out);
	return cx_frame_end(out, start, what, err);
}

/* --------------------------------------------------------------------------
 * Decoding
 * -------------------------------------------------------------------------- */

static bool
decode_gens(cx_rd *r, uint16_t format, cx_shard_manifest *m)
{
	uint32_t	n = cx_rd_u32(r);

	if (!cx_rd_ok(r) || n == 0)
		return true;
	if (n > cx_rd_left(r) / MIN_GEN_LEN)
	{
		r->bad = true;
		return true;
	}
	m->gens = calloc(n, sizeof(cx_generation));
	if (m->gens == NULL)
		return false;
	for (uint32_t i = 0; i < n && cx_rd_ok(r); i++)
	{
		cx_generation *g = &m->gens[i];

		/* Counted first so a half-decoded entry is freed too. */
		m->ngens = i + 1;
		g->gen = cx_rd_u64(r);
		g->min_ts = cx_rd_i64(r);
		g->max_ts = cx_rd_i64(r);
		if (format != 1)
			g->carrier = cx_rd_u64(r);
		if (!cx_fragentry_decode(r, true, &g->fragment))
			return false;
	}
	return true;
}

/* The carried bytes (first in format 3's body, last in format 2's); false
 * without memory.  A length beyond the bytes left leaves r bad. */
static bool
decode_carried(cx_rd *r, cx_shard_manifest *m)
{
	uint64_t	n = cx_rd_u64(r);
	const uint8_t *p;

	if (!cx_rd_ok(r) || n == 0)
		return true;
	if (n > cx_rd_left(r))
	{
		r->bad = true;
		return true;
	}
	p = cx_rd_take(r, (size_t) n);
	if ((m->carried = malloc((size_t) n)) == NULL)
		return false;
	memcpy(m->carried, p, (size_t) n);
	m->carried_len = n;
	return true;
}

/* Everything but the carried bytes; false without memory. */
static bool
decode_listing(cx_rd *r, uint16_t format, cx_shard_manifest *m)
{
	const uint8_t *id;

	m->version = cx_rd_u64(r);
	m->shard_id = cx_rd_str16(r);
	m->epoch = cx_rd_u64(r);
	id = cx_rd_take(r, COMMIT_ID_LEN);
	if (id != NULL)
		memcpy(m->commit_id, id, COMMIT_ID_LEN);
	m->committed_at_us = cx_rd_i64(r);
	m->writer = cx_rd_str16(r);
	m->replay_seq = cx_rd_u64(r);
	m->next_gen = cx_rd_u64(r);
	return decode_gens(r, format, m);
}

static cx_code
decode_body(const uint8_t *body, size_t len, uint16_t format,
			const char *name, cx_shard_manifest *m, cx_err *err)
{
	cx_rd		r;
	cx_err		ignored;

	cx_rd_init(&r, body, len);
	if ((format == 3 && !decode_carried(&r, m)) ||
		!decode_listing(&r, format, m) ||
		(format == 2 && !decode_carried(&r, m)))
		return cx_err_set(err, CX_ERR_NOMEM,
						  "shard manifest %s: out of memory while decoding", name);
	if (!cx_rd_ok(&r))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: malformed body (bad field at byte %zu)",
						  name, CX_FRAME_HEADER_LEN + r.pos);
	if (cx_rd_left(&r) != 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: %zu unexpected bytes at the end of the body",
						  name, cx_rd_left(&r));
	if (m->version == 0 || m->epoch == 0 ||
		cx_shard_id_validate(m->shard_id, &ignored) != CX_OK)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: version 0, epoch 0 or an invalid shard id",
						  name);
	if (!gens_ordered(m))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: generation list out of order",
						  name);
	if (!carried_consistent(m) || (format != 1 && !lists_inline(m)))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: inline generations inconsistent with the bytes it carries",
						  name);
	return CX_OK;
}

cx_code
cx_shard_manifest_decode(const uint8_t *data, size_t len, const char *name,
						 cx_shard_manifest **out, cx_err *err)
{
	const uint8_t *body;
	uint32_t	body_len;
	cx_shard_manifest *m;

	*out = NULL;
	if (cx_frame_check(data, len, CX_SHARD_MAGIC, CX_SHARD_FORMAT,
					   "shard manifest", name, &body, &body_len, err) != CX_OK)
		return err->code;
	m = calloc(1, sizeof(cx_shard_manifest));
	if (m == NULL)
		return cx_err_set(err, CX_ERR_NOMEM,
						  "shard manifest %s: out of memory while decoding", name);
	/* The frame is intact, so its format field is the writer's. */
	if (decode_body(body, body_len, (uint16_t) (data[4] | data[5] << 8), name,
					m, err) != CX_OK)
	{
		cx_shard_manifest_free(m);
		return err->code;
	}
	*out = m;
	return CX_OK;
}

/* The encoder puts the carried part first in the body. */
_Static_assert(CX_SHARD_CARRIED_AT == CX_FRAME_HEADER_LEN + 8,
			   "carried bytes follow the frame header and their length");

cx_code
cx_shard_carried_check(const uint8_t *head, size_t len, uint64_t size,
					   const char *name, bool *whole, cx_err *err)
{
	uint16_t	format;
	cx_rd		carried_len;

	*whole = false;
	if (len < CX_FRAME_HEADER_LEN || memcmp(head, CX_SHARD_MAGIC, 4) != 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: not a shard manifest (bad magic or too short)",
						  name);
	format = cx_load_u16(head + 4);
	if (format > CX_SHARD_FORMAT)
		return cx_err_set(err, CX_ERR_UNSUPPORTED,
						  "shard manifest %s: format version %u is newer than this build reads (%u); upgrade ctxstore",
						  name, format, CX_SHARD_FORMAT);
	if (cx_load_u16(head + 6) != 0)
		return cx_err_set(err, CX_ERR_UNSUPPORTED,
						  "shard manifest %s: unknown flags 0x%04x (written by a newer ctxstore?)",
						  name, cx_load_u16(head + 6));
	if (format == 2)
	{
		*whole = true;
		return CX_OK;
	}
	cx_rd_init(&carried_len, head + CX_FRAME_HEADER_LEN,
			   len - CX_FRAME_HEADER_LEN);
	if (format != 3 || len != CX_SHARD_CARRIED_AT + size ||
		cx_load_u32(head + 8) < 8 + size ||
		cx_rd_u64(&carried_len) != size)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: does not carry the %llu bytes of the generation it is said to (format %u, %zu bytes read)",
						  name, (unsigned long long) size, format, len);
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Loading
 * -------------------------------------------------------------------------- */

/* Decodes the bytes of version `version` of shard_id read from s, and checks
 * they belong there (an object copied to the wrong key is corrupt). */
static cx_code
decode_at(cx_objstore *s, const char *shard_id, uint64_t version,
		  const cx_buf *bytes, cx_shard_manifest **out, cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	char		name[2 * CX_KEY_MAX];

	cx_shard_manifest_key(shard_id, version, key, sizeof(key));
	snprintf(name, sizeof(name), "%.900s/%s", s->uri, key);
	if (cx_shard_manifest_decode(bytes->data, bytes->len, name, out, err) != CX_OK)
		return err->code;
	if ((*out)->version != version || strcmp((*out)->shard_id, shard_id) != 0)
	{
		cx_shard_manifest_free(*out);
		*out = NULL;
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "shard manifest %s: holds another shard or version than its key names",
						  name);
	}
	return CX_OK;
}

cx_code
cx_shard_manifest_load(cx_objstore *s, const char *shard_id, uint64_t version,
					   cx_shard_manifest **out, cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	cx_buf		b;
	cx_code		rc;

	*out = NULL;
	if (cx_shard_id_validate(shard_id, err) != CX_OK)
		return err->code;
	if (version == 0)
		return cx_err_set(err, CX_ERR_NOT_FOUND,
						  "shard %s: version 0 is the empty shard and has no manifest",
						  shard_id);
	cx_shard_manifest_key(shard_id, version, key, sizeof(key));
	cx_buf_init(&b);
	rc = cx_obj_get(s, key, &b, err);
	if (rc == CX_OK)
		rc = decode_at(s, shard_id, version, &b, out, err);
	cx_buf_free(&b);
	return rc;
}

/* The newest version, found from known, else from the hint, else (use_hint
 * false) by listing. */
static cx_code
latest_from(cx_objstore *s, const char *shard_id, uint64_t known,
			bool use_hint, cx_shard_manifest **out, cx_err *err)
{
	char		prefix[CX_KEY_MAX + 1];
	char		hint[CX_KEY_MAX + 1];
	cx_vseq		q;
	uint64_t	latest;

	cx_layout_shard_versions(shard_id, prefix, &q);
	cx_layout_shard_hint(shard_id, hint);
	if (cx_vseq_latest(s, &q, use_hint ? hint : NULL, known, &latest,
					   err) != CX_OK)
		return err->code;
	if (latest == 0)
		return CX_OK;
	return cx_shard_manifest_load(s, shard_id, latest, out, err);
}

/* A known version GC has since removed (the caller cached it too long), or
 * a stale hint GC removed while we probed past it, leads to a version that
 * is gone: list the versions instead. */
cx_code
cx_shard_manifest_load_latest(cx_objstore *s, const char *shard_id,
							  uint64_t known, cx_shard_manifest **out,
							  cx_err *err)
{
	cx_code		rc;

	*out = NULL;
	if (cx_shard_id_validate(shard_id, err) != CX_OK)
		return err->code;
	rc = latest_from(s, shard_id, known, true, out, err);
	if (rc == CX_ERR_NOT_FOUND)
		rc = latest_from(s, shard_id, 0, false, out, err);
	return rc;
}

/* --------------------------------------------------------------------------
 * Writing
 * -------------------------------------------------------------------------- */

cx_code
cx_shard_manifest_put(cx_objstore *s, const cx_shard_manifest *m,
					  cx_shard_manifest **winner, bool *unknown, cx_err *err)
{
	return cx_shard_manifest_put_reusing(s, m, NULL, winner, unknown, err);
}

cx_code
cx_shard_manifest_put_reusing(cx_objstore *s, const cx_shard_manifest *m,
							  cx_gen_entries *reuse,
							  cx_shard_manifest **winner, bool *unknown,
							  cx_err *err)
{
	char		prefix[CX_KEY_MAX + 1];
	cx_vseq		q;
	cx_buf		bytes;
	cx_buf		taken;
	cx_vseq_outcome outcome = CX_VSEQ_FAILED;
	cx_code		rc;

	*winner = NULL;
	*unknown = false;
	cx_layout_shard_versions(m->shard_id, prefix, &q);
	cx_buf_init(&bytes);
	cx_buf_init(&taken);
	rc = cx_shard_manifest_encode_reusing(m, reuse, &bytes, err);
	if (rc == CX_OK)
		rc = cx_vseq_put(s, &q, m->version, &bytes, &taken, &outcome, err);
	if (rc == CX_OK && outcome == CX_VSEQ_TAKEN)
		rc = decode_at(s, m->shard_id, m->version, &taken, winner, err);
	else if (rc != CX_OK)
	{
		*unknown = outcome == CX_VSEQ_UNKNOWN;
		cx_err_prefix(err, "committing shard %s manifest version %llu",
					  m->shard_id, (unsigned long long) m->version);
	}
	cx_buf_free(&bytes);
	cx_buf_free(&taken);
	return rc;
}

cx_code
cx_shard_hint_write(cx_objstore *s, const char *shard_id, uint64_t version,
					cx_err *err)
{
	char		key[CX_KEY_MAX + 1];

	cx_layout_shard_hint(shard_id, key);
	return cx_hint_write(s, key, version, err);
}
