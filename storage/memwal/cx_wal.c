/*
 * cx_wal.c — encoding, writing and reading a shard's WAL entries (cx_wal.h;
 * byte layout in docs/FORMAT.md "Shards").
 */
#include "memwal/cx_wal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cx_frame.h"

void
cx_wal_entry_clear(cx_wal_entry *e)
{
	if (e->schema != NULL)
		cx_schema_free(e->schema);
	free(e->writer);
	memset(e, 0, sizeof(*e));
}

/* Whether the fields are consistent with the kind (encoder and decoder). */
static bool
well_formed(const cx_wal_entry *e)
{
	if (e->epoch == 0 || e->seq == 0)
		return false;
	if (e->kind == CX_WAL_ROWS)
		return e->nrows > 0 && e->schema != NULL && e->rows != NULL &&
			e->rows_len <= UINT32_MAX;
	return e->kind == CX_WAL_FENCE && e->nrows == 0;
}

cx_code
cx_wal_encode(const cx_wal_entry *e, cx_buf *out, cx_err *err)
{
	char		what[96];
	size_t		start;

	snprintf(what, sizeof(what), "WAL entry %llu", (unsigned long long) e->seq);
	if (!well_formed(e))
		return cx_err_set(err, CX_ERR_INVALID,
						  "%s: kind, epoch, seq, rows or schema missing or inconsistent",
						  what);
	if (e->writer != NULL && strlen(e->writer) > UINT16_MAX)
		return cx_err_set(err, CX_ERR_INVALID,
						  "%s: writer description longer than %u bytes",
						  what, UINT16_MAX);
	start = cx_frame_begin(out, CX_WAL_MAGIC, CX_WAL_FORMAT);
	cx_buf_put_u8(out, e->kind);
	cx_buf_put_u64(out, e->epoch);
	cx_buf_put_u64(out, e->seq);
	cx_buf_put_i64(out, e->commit_ts);
	cx_buf_put(out, e->commit_id, sizeof(e->commit_id));
	cx_buf_put_u64(out, e->nrows);
	if (e->kind == CX_WAL_ROWS)
	{
		cx_schema_encode(e->schema, out);
		cx_buf_put_bytes32(out, e->rows, (uint32_t) e->rows_len);
	}
	else
		cx_buf_put_str16(out, e->writer != NULL ? e->writer : "");
	return cx_frame_end(out, start, what, err);
}

cx_code
cx_wal_decode(const uint8_t *data, size_t len, const char *name,
			  cx_wal_entry *e, cx_err *err)
{
	const uint8_t *body;
	uint32_t	body_len;
	cx_rd		r;
	const uint8_t *id;

	memset(e, 0, sizeof(*e));
	if (cx_frame_check(data, len, CX_WAL_MAGIC, CX_WAL_FORMAT, "WAL entry",
					   name, &body, &body_len, err) != CX_OK)
		return err->code;
	cx_rd_init(&r, body, body_len);
	e->kind = cx_rd_u8(&r);
	e->epoch = cx_rd_u64(&r);
	e->seq = cx_rd_u64(&r);
	e->commit_ts = cx_rd_i64(&r);
	id = cx_rd_take(&r, sizeof(e->commit_id));
	if (id != NULL)
		memcpy(e->commit_id, id, sizeof(e->commit_id));
	e->nrows = cx_rd_u64(&r);
	if (e->kind == CX_WAL_ROWS && cx_rd_ok(&r))
	{
		uint32_t	n = 0;

		e->schema = cx_schema_decode(&r);
		e->rows = cx_rd_bytes32(&r, &n);
		e->rows_len = n;
	}
	else if (e->kind == CX_WAL_FENCE)
		e->writer = cx_rd_str16(&r);
	if (!cx_rd_ok(&r) || cx_rd_left(&r) != 0 || !well_formed(e))
	{
		cx_wal_entry_clear(e);
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "WAL entry %s: malformed body (unknown kind, bad field or length)",
						  name);
	}
	return CX_OK;
}

static void
entry_name(cx_objstore *s, const char *shard_id, uint64_t seq, char *name,
		   size_t size)
{
	char		prefix[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	cx_vseq		q;

	cx_layout_wal(shard_id, prefix, &q);
	cx_vseq_key(&q, seq, key);
	snprintf(name, size, "%.900s/%s", s->uri, key);
}

/* Decodes bytes read from seq and checks they belong there. */
static cx_code
decode_at(cx_objstore *s, const char *shard_id, uint64_t seq,
		  const cx_buf *bytes, cx_wal_entry *e, cx_err *err)
{
	char		name[2 * CX_KEY_MAX];

	entry_name(s, shard_id, seq, name, sizeof(name));
	if (cx_wal_decode(bytes->data, bytes->len, name, e, err) != CX_OK)
		return err->code;
	if (e->seq != seq)
	{
		cx_wal_entry_clear(e);
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "WAL entry %s: holds seq %llu, not the one its key names",
						  name, (unsigned long long) e->seq);
	}
	return CX_OK;
}

cx_code
cx_wal_put(cx_objstore *s, const char *shard_id, const cx_wal_entry *e,
		   cx_wal_taken *taken, bool *unknown, cx_err *err)
{
	cx_buf		bytes;
	cx_code		rc;

	memset(taken, 0, sizeof(*taken));
	*unknown = false;
	cx_buf_init(&bytes);
	rc = cx_wal_encode(e, &bytes, err);
	if (rc == CX_OK)
		rc = cx_wal_put_encoded(s, shard_id, e->seq, &bytes, taken, unknown,
								err);
	cx_buf_free(&bytes);
	return rc;
}

cx_code
cx_wal_put_encoded(cx_objstore *s, const char *shard_id, uint64_t seq,
				   const cx_buf *bytes, cx_wal_taken *taken, bool *unknown,
				   cx_err *err)
{
	char		prefix[CX_KEY_MAX + 1];
	cx_vseq		q;
	cx_buf		there;
	cx_vseq_outcome outcome = CX_VSEQ_FAILED;
	cx_wal_entry other;
	cx_code		rc;

	memset(taken, 0, sizeof(*taken));
	*unknown = false;
	cx_layout_wal(shard_id, prefix, &q);
	cx_buf_init(&there);
	rc = cx_vseq_put(s, &q, seq, bytes, &there, &outcome, err);
	if (rc == CX_OK && outcome == CX_VSEQ_TAKEN)
	{
		rc = decode_at(s, shard_id, seq, &there, &other, err);
		if (rc == CX_OK)
		{
			taken->epoch = other.epoch;
			taken->kind = other.kind;
			cx_wal_entry_clear(&other);
		}
	}
	else if (rc != CX_OK)
	{
		*unknown = outcome == CX_VSEQ_UNKNOWN;
		cx_err_prefix(err, "writing WAL entry %llu of shard %s",
					  (unsigned long long) seq, shard_id);
	}
	cx_buf_free(&there);
	return rc;
}

cx_code
cx_wal_read(cx_objstore *s, const char *shard_id, uint64_t seq, cx_buf *bytes,
			cx_wal_entry *e, cx_err *err)
{
	char		prefix[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	cx_vseq		q;

	memset(e, 0, sizeof(*e));
	cx_layout_wal(shard_id, prefix, &q);
	cx_vseq_key(&q, seq, key);
	if (cx_obj_get(s, key, bytes, err) != CX_OK)
		return err->code;
	return decode_at(s, shard_id, seq, bytes, e, err);
}
