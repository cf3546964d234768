/*
 * mw_util.c — helpers for the MemWAL merge and scan tests (mw_util.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/cx_commit.h"
#include "util/cx_crc32c.h"
#include "util/cx_frame.h"
#include "format/cx_row_codec.h"
#include "cx_test.h"
#include "mw_util.h"

cx_schema *
mw_schema(void)
{
	static cx_schema *schema;
	cx_err		err;

	if (schema == NULL)
	{
		schema = cx_schema_new();
		if (cx_schema_add(schema, "id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
			cx_schema_add(schema, "v", CX_T_INT64, 0, NULL, &err) != CX_OK ||
			cx_schema_add(schema, "tags", CX_T_LIST, CX_T_STRING, NULL, &err) != CX_OK)
			abort();
	}
	return schema;
}

void
mw_to_format_2(cx_buf *b)
{
	size_t		carried = CX_SHARD_CARRIED_AT - CX_FRAME_HEADER_LEN +
		(size_t) cx_load_u32(b->data + CX_FRAME_HEADER_LEN);
	size_t		body = b->len - CX_FRAME_HEADER_LEN - CX_FRAME_TRAILER_LEN;
	uint8_t    *moved = malloc(body);

	memcpy(moved, b->data + CX_FRAME_HEADER_LEN + carried, body - carried);
	memcpy(moved + body - carried, b->data + CX_FRAME_HEADER_LEN, carried);
	memcpy(b->data + CX_FRAME_HEADER_LEN, moved, body);
	free(moved);
	cx_store_u16(b->data + 4, 2);
	cx_store_u32(b->data + b->len - 4, cx_crc32c(0, b->data, b->len - 4));
}

cx_objstore *
mw_open_store(void)
{
	cx_objstore *s = NULL;
	cx_err		err;

	if (cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err) != CX_OK)
		return NULL;
	return s;
}

void
mw_writer_options(bool unique_key, cx_sw_options *o)
{
	cx_sw_options_default(o);
	o->writer_info = "test";
	o->key_column = "id";
	o->unique_key = unique_key;
}

cx_code
mw_writer(cx_objstore *s, const char *shard_id, bool unique_key,
		  cx_shardwriter **w, cx_err *err)
{
	cx_sw_options o;

	mw_writer_options(unique_key, &o);
	return cx_sw_open(s, shard_id, &o, w, err);
}

/* The three columns of a row; tag storage lives in the caller's arrays. */
static void
fill_row(cx_datum *d, const char *id, int64_t v, char tag[32], cx_datum items[3])
{
	uint32_t	ntags = (uint32_t) (v < 0 ? -v : v) % 3;

	memset(d, 0, 3 * sizeof(cx_datum));
	d[0].isnull = id == NULL;
	if (id != NULL)
	{
		d[0].v.bytes.ptr = (const uint8_t *) id;
		d[0].v.bytes.len = strlen(id);
	}
	d[1].v.i64 = v;
	snprintf(tag, 32, "t%lld", (long long) v);
	for (uint32_t i = 0; i < ntags; i++)
	{
		memset(&items[i], 0, sizeof(cx_datum));
		items[i].v.bytes.ptr = (const uint8_t *) tag;
		items[i].v.bytes.len = strlen(tag);
	}
	d[2].v.list.items = items;
	d[2].v.list.n = ntags;
}

/* Encodes op: a put with the tags of v, or a tombstone with only the key
 * set (a NULL key: a TRUNCATE marker). */
static void
encode_op(const mw_op *op, cx_buf *rows)
{
	char		tag[32];
	cx_datum	d[3];
	cx_datum	items[3];

	fill_row(d, op->id, op->v, tag, items);
	if (op->kind == CX_ROW_DELETE)
		d[1].isnull = d[2].isnull = true;
	cx_row_encode(mw_schema(), op->kind, d, rows);
}

cx_code
mw_append_ts(cx_shardwriter *w, const mw_op *ops, int n, bool seal,
			 int64_t *commit_ts, cx_err *err)
{
	cx_buf		rows;
	cx_code		rc;

	cx_buf_init(&rows);
	for (int i = 0; i < n; i++)
		encode_op(&ops[i], &rows);
	rc = cx_sw_append(w, mw_schema(), rows.data, rows.len, (uint64_t) n, seal,
					  commit_ts, err);
	cx_buf_free(&rows);
	return rc;
}

cx_code
mw_stage(cx_shardwriter *w, const mw_op *op, cx_err *err)
{
	cx_buf		rows;
	cx_sw_resolved resolved;
	cx_code		rc;

	cx_buf_init(&rows);
	encode_op(op, &rows);
	rc = cx_sw_stage(w, mw_schema(), rows.data, rows.len, 1, &resolved, err);
	cx_buf_free(&rows);
	return rc;
}

cx_code
mw_append(cx_shardwriter *w, const mw_op *ops, int n, bool seal, cx_err *err)
{
	int64_t		ts;

	return mw_append_ts(w, ops, n, seal, &ts, err);
}

cx_code
mw_truncate(cx_shardwriter *w, bool seal, cx_err *err)
{
	const mw_op marker = {CX_ROW_DELETE, NULL, 0};

	return mw_append(w, &marker, 1, seal, err);
}

cx_code
mw_put(cx_shardwriter *w, const char *prefix, int first, int n, int64_t v,
	   bool seal, cx_err *err)
{
	mw_op	   *ops = calloc((size_t) n + 1, sizeof(mw_op));
	char	   *ids = calloc((size_t) n + 1, 128);
	cx_code		rc;

	if (ops == NULL || ids == NULL)
		abort();
	for (int k = 0; k < n; k++)
	{
		snprintf(ids + (size_t) k * 128, 128, "%s%d", prefix, first + k);
		ops[k] = (mw_op) {CX_ROW_PUT, ids + (size_t) k * 128, v};
	}
	rc = mw_append(w, ops, n, seal, err);
	free(ops);
	free(ids);
	return rc;
}

/* --------------------------------------------------------------------------
 * Hand-made shards
 * -------------------------------------------------------------------------- */

static cx_code
register_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
				cx_err *err)
{
	(void) base;
	if (next->schema == NULL &&
		cx_manifest_set_schema(next, mw_schema(), err) != CX_OK)
		return err->code;
	if (cx_manifest_set_key(next, "id", true, err) != CX_OK)
		return err->code;
	return cx_manifest_register_shard(next, arg, err);
}

static cx_code
write_generation(cx_objstore *s, const mw_genrow *rows, int n,
				 cx_generation *gen, cx_err *err)
{
	cx_schema  *gs;
	cx_fragw   *w;
	char		key[64];

	if (cx_shard_generation_schema(mw_schema(), &gs, err) != CX_OK)
		return err->code;
	if (cx_fragment_new_key(key, sizeof(key), err) != CX_OK ||
		cx_fragw_open(s, key, gs, NULL, &w, err) != CX_OK)
	{
		cx_schema_free(gs);
		return err->code;
	}
	cx_schema_free(gs);
	gen->min_ts = INT64_MAX;
	gen->max_ts = INT64_MIN;
	for (int i = 0; i < n; i++)
	{
		cx_datum	d[5];
		char		tag[32];
		cx_datum	items[3];

		fill_row(d, rows[i].id, rows[i].v, tag, items);
		memset(&d[3], 0, 2 * sizeof(cx_datum));
		d[3].v.i64 = rows[i].ts;
		d[4].v.b = rows[i].tombstone;
		if (cx_fragw_append(w, d, err) != CX_OK)
		{
			cx_fragw_abort(w);
			return err->code;
		}
		if (rows[i].ts < gen->min_ts)
			gen->min_ts = rows[i].ts;
		if (rows[i].ts > gen->max_ts)
			gen->max_ts = rows[i].ts;
	}
	return cx_fragw_finish(w, &gen->fragment, err);
}

static cx_code
commit_shard(cx_objstore *s, cx_shard_manifest *next, cx_err *err)
{
	cx_shard_manifest *winner = NULL;
	bool		unknown;

	if (cx_random_bytes(next->commit_id, 16, err) != CX_OK ||
		cx_shard_manifest_put(s, next, &winner, &unknown, err) != CX_OK)
		return err->code;
	if (winner != NULL)
	{
		cx_shard_manifest_free(winner);
		return cx_err_set(err, CX_ERR_CONFLICT, "test shard raced");
	}
	return CX_OK;
}

typedef struct fragments_args
{
	const cx_schema *schema;
	const cx_fragment_info *fragments;
	uint32_t	n;
} fragments_args;

static cx_code
add_fragments(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	const fragments_args *a = arg;

	(void) base;
	if (next->schema == NULL)
	{
		if (cx_manifest_set_schema(next, a->schema, err) != CX_OK)
			return err->code;
	}
	else if (cx_commit_check_schema(next->schema, a->schema, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < a->n; i++)
		if (cx_manifest_add_fragment(next, &a->fragments[i], err) != CX_OK)
			return err->code;
	return CX_OK;
}

cx_code
mw_commit_fragments(cx_objstore *s, const cx_schema *schema,
					const cx_fragment_info *fragments, uint32_t n,
					uint64_t *version, cx_err *err)
{
	fragments_args a = {schema, fragments, n};

	return cx_commit(s, "append", add_fragments, &a, NULL, version, err);
}

/* The next version of a hand-made shard (version 1 if it has none). */
static cx_code
next_version(cx_objstore *s, const char *shard_id, cx_shard_manifest **out,
			 cx_err *err)
{
	cx_shard_manifest *m;

	if (cx_shard_manifest_load_latest(s, shard_id, 0, &m, err) != CX_OK)
		return err->code;
	if (m == NULL)
	{
		m = cx_shard_manifest_new(shard_id);
		m->epoch = 1;
		m->next_gen = 1;
		m->writer = cx_strdup("test");
	}
	m->version++;
	*out = m;
	return CX_OK;
}

cx_code
mw_fake_seal(cx_objstore *s, const char *shard_id, const mw_genrow *rows,
			 int n, cx_err *err)
{
	cx_shard_manifest *m;
	cx_generation *grown;
	uint64_t	v;
	cx_code		rc;

	if (cx_commit(s, "register", register_rebase, (void *) shard_id, NULL, &v,
				  err) != CX_OK ||
		next_version(s, shard_id, &m, err) != CX_OK)
		return err->code;
	grown = realloc(m->gens, (m->ngens + 1) * sizeof(cx_generation));
	m->gens = grown;
	memset(&m->gens[m->ngens], 0, sizeof(cx_generation));
	rc = write_generation(s, rows, n, &m->gens[m->ngens], err);
	if (rc == CX_OK)
	{
		m->gens[m->ngens].gen = m->next_gen++;
		m->ngens++;
		rc = commit_shard(s, m, err);
	}
	cx_shard_manifest_free(m);
	return rc;
}

cx_code
mw_fake_drain(cx_objstore *s, const char *shard_id, cx_err *err)
{
	cx_manifest *base;
	cx_shard_manifest *m;
	uint64_t	merged;
	uint32_t	keep = 0;
	cx_code		rc;

	if (cx_manifest_load_latest(s, &base, err) != CX_OK)
		return err->code;
	merged = cx_manifest_merged_gen(base, shard_id);
	cx_manifest_free(base);
	if (next_version(s, shard_id, &m, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < m->ngens; i++)
	{
		if (m->gens[i].gen <= merged)
			cx_fragment_info_free(&m->gens[i].fragment);
		else
			m->gens[keep++] = m->gens[i];
	}
	m->ngens = keep;
	rc = commit_shard(s, m, err);
	cx_shard_manifest_free(m);
	return rc;
}

/* --------------------------------------------------------------------------
 * Scans
 * -------------------------------------------------------------------------- */

static int
cmp_row(const void *a, const void *b)
{
	const mw_row *x = a;
	const mw_row *y = b;
	int			c = strcmp(x->id, y->id);

	return c != 0 ? c : (x->v > y->v) - (x->v < y->v);
}

static void
take_row(const cx_tablescan *scan, uint32_t i, mw_row *r)
{
	const cx_colvec *id = cx_tablescan_column(scan, 0);
	const cx_colvec *v = cx_tablescan_column(scan, 1);
	const cx_colvec *tags = cx_tablescan_column(scan, 2);
	cx_datum	d;
	char		want[32];

	memset(r, 0, sizeof(*r));
	r->tags_ok = true;
	if (id != NULL)
	{
		cx_colvec_get(id, i, &d);
		if (!d.isnull)
			snprintf(r->id, sizeof(r->id), "%.*s", (int) d.v.bytes.len,
					 (const char *) d.v.bytes.ptr);
	}
	if (v != NULL)
	{
		cx_colvec_get(v, i, &d);
		r->v = d.v.i64;
	}
	if (tags == NULL)
		return;
	cx_colvec_get(tags, i, &d);
	r->ntags = d.v.slice.n;
	snprintf(want, sizeof(want), "t%lld", (long long) r->v);
	r->tags_ok = r->ntags == (uint32_t) (r->v < 0 ? -r->v : r->v) % 3;
	for (uint32_t k = 0; k < r->ntags; k++)
	{
		cx_datum	e;

		cx_colvec_get(d.v.slice.elems, d.v.slice.start + k, &e);
		r->tags_ok &= e.v.bytes.len == strlen(want) &&
			memcmp(e.v.bytes.ptr, want, e.v.bytes.len) == 0;
	}
}

cx_code
mw_scan(cx_objstore *s, const bool *want, mw_rows *out, cx_err *err)
{
	return mw_scan_version(s, 0, want, out, err);
}

/* A scan of every row, or of the rows of n keys when keys is not NULL. */
static cx_code
scan_rows(cx_objstore *s, uint64_t version, const bool *want,
		  const char *const *keys, uint32_t n, mw_rows *out, cx_err *err)
{
	cx_snapshot *snap;
	cx_tablescan *scan;
	cx_code		rc;

	memset(out, 0, sizeof(*out));
	if (cx_snapshot_open(s, version, &snap, err) != CX_OK)
		return err->code;
	out->pending = cx_snapshot_pending_generations(snap);
	if (keys == NULL)
		rc = cx_tablescan_begin(snap, want, &scan, err);
	else
	{
		const uint8_t *bytes[64];
		size_t		lens[64];

		for (uint32_t i = 0; i < n && i < 64; i++)
		{
			bytes[i] = (const uint8_t *) keys[i];
			lens[i] = strlen(keys[i]);
		}
		rc = cx_tablescan_begin_keys(snap, want, bytes, lens, n < 64 ? n : 64,
									 &scan, err);
	}
	while (rc == CX_OK)
	{
		const cx_rowgroup *g;
		const uint32_t *rows;
		uint32_t	n;

		rc = cx_tablescan_next(scan, &g, &rows, &n, err);
		if (rc != CX_OK || g == NULL)
			break;
		mw_rows_add(scan, rows, n, out);
	}
	if (scan != NULL)
	{
		out->stats = *cx_tablescan_get_stats(scan);
		cx_tablescan_end(scan);
	}
	cx_snapshot_close(snap);
	mw_rows_sort(out);
	return rc;
}

void
mw_rows_add(const cx_tablescan *scan, const uint32_t *rows, uint32_t n,
			mw_rows *out)
{
	out->r = realloc(out->r, (out->n + n + 1) * sizeof(mw_row));
	for (uint32_t k = 0; k < n; k++)
		take_row(scan, rows[k], &out->r[out->n++]);
}

void
mw_rows_sort(mw_rows *rows)
{
	if (rows->n > 0)
		qsort(rows->r, rows->n, sizeof(mw_row), cmp_row);
}

cx_code
mw_scan_version(cx_objstore *s, uint64_t version, const bool *want,
				mw_rows *out, cx_err *err)
{
	return scan_rows(s, version, want, NULL, 0, out, err);
}

cx_code
mw_scan_keys(cx_objstore *s, const char *const *keys, uint32_t n,
			 mw_rows *out, cx_err *err)
{
	return scan_rows(s, 0, NULL, keys, n, out, err);
}

void
mw_rows_free(mw_rows *rows)
{
	free(rows->r);
	memset(rows, 0, sizeof(*rows));
}

int
mw_count(const mw_rows *rows, const char *id, int64_t *v)
{
	int			n = 0;

	for (uint32_t i = 0; i < rows->n; i++)
		if (strcmp(rows->r[i].id, id) == 0)
		{
			n++;
			if (v != NULL)
				*v = rows->r[i].v;
		}
	return n;
}

bool
mw_rows_equal(const mw_rows *a, const mw_rows *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (cmp_row(&a->r[i], &b->r[i]) != 0 || a->r[i].ntags != b->r[i].ntags)
			return false;
	return true;
}

cx_code
mw_drain(cx_objstore *s, cx_shardwriter *w, cx_err *err)
{
	cx_manifest *base;
	uint64_t	merged = 0;

	if (cx_manifest_load_latest(s, &base, err) != CX_OK)
		return err->code;
	if (base != NULL)
		merged = cx_manifest_merged_gen(base, cx_sw_manifest(w)->shard_id);
	cx_manifest_free(base);
	return cx_sw_drain_through(w, merged, err);
}

bool
mw_is_deleted(const cx_manifest *m, uint32_t fragment, uint64_t row)
{
	const cx_deletion_vector *dv;

	if (m->dvs == NULL || fragment >= m->nfragments)
		return false;
	dv = &m->dvs[fragment];
	for (uint32_t i = 0; i < dv->n; i++)
		if (dv->rows[i] == row)
			return true;
	return false;
}

bool
mw_colstats_equal(const cx_colstats *a, const cx_colstats *b)
{
	return a->null_count == b->null_count && a->value_count == b->value_count &&
		a->has_min == b->has_min && a->has_max == b->has_max &&
		(!a->has_min || (a->min_len == b->min_len &&
						 memcmp(a->min, b->min, a->min_len) == 0)) &&
		(!a->has_max || (a->max_len == b->max_len &&
						 memcmp(a->max, b->max, a->max_len) == 0));
}
