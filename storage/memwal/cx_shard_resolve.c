/*
 * cx_shard_resolve.c — the shard writer turns write requests into the PUTs
 * and DELETEs it appends (ctxstore/memwal.h, cx_sw_stage), checked against
 * the live rows it knows (docs/design/memwal.md, "Resolving requests"):
 *
 *   INSERT            PUT, or CX_ERR_UNIQUE if the key is live
 *   INSERT_IF_ABSENT  PUT, or nothing if the key is live
 *   UPSERT            a DELETE of the one live row holding the row's
 *                     upsert-key value (if any, and unless it is the row's
 *                     own key), then the PUT; CX_ERR_CARDINALITY if two live
 *                     rows hold it; a NULL upsert value is an INSERT (a PUT
 *                     where keys are not unique), and so is a live key that
 *                     is not the match
 *   PUT, DELETE       as they are
 *
 * "Live" is decided over four layers, newest first: the rows of this
 * request resolved so far, the requests staged before it, the writer's key
 * cache (this shard's rows its base view lacks) and the base view, probed
 * once per request for all the keys and upsert values it needs.  A key's
 * newest version in the highest layer holding it wins; a truncate marker in
 * a layer hides everything below it that is older.  Other shards' unmerged
 * rows are not seen: across clusters the later commit wins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_row_codec.h"
#include "table/cx_base_probe.h"
#include "memwal/cx_memwal_int.h"

/* The layers above the base, newest first. */
enum
{
	LAYER_REQUEST,
	LAYER_STAGED,
	LAYER_CACHE,
	NLAYERS
};

/* Characters of a value a message shows before it cuts it short. */
#define SHOW_MAX 64

/* One row of the request: where it is and the values resolution needs. */
typedef struct req_row
{
	size_t		start;			/* its bytes in the request */
	size_t		end;
	cx_row_kind kind;
	bool		has_key;
	bool		has_up;
	size_t		key_off;		/* into resolve.vals */
	size_t		key_len;
	size_t		up_off;
	size_t		up_len;
	int64_t		key_probe;		/* index of its key among the probed values
								 * (-1: not probed) */
	int64_t		up_probe;
} req_row;

/* The base rows a probe found for one probed value. */
typedef struct probe_set
{
	cx_probe_result res;
	uint32_t   *first;			/* per value: its first hit */
	uint32_t   *count;			/* and how many */
} probe_set;

typedef struct resolve
{
	cx_shardwriter *w;
	const cx_schema *schema;
	const uint8_t *rows;
	req_row    *r;
	uint64_t	n;
	cx_buf		vals;			/* key and upsert bytes of r */
	cx_keycache *layer[NLAYERS];
	probe_set	keys;			/* the key column's hits */
	probe_set	ups;			/* the upsert column's */
	cx_buf		out;			/* the resolved rows */
	cx_sw_resolved counts;
	cx_datum   *values;			/* decoding; a DELETE's values */
	cx_buf		scratch;
} resolve;

static const uint8_t *
key_of(const resolve *rs, const req_row *row)
{
	return rs->vals.data + row->key_off;
}

static const uint8_t *
up_of(const resolve *rs, const req_row *row)
{
	return rs->vals.data + row->up_off;
}

/* --------------------------------------------------------------------------
 * Messages
 * -------------------------------------------------------------------------- */

/* A value as a message shows it, cut short after SHOW_MAX characters. */
static void
show_value(const cx_column *col, const uint8_t *p, size_t len, char *out,
		   size_t size)
{
	cx_datum	d;
	cx_err		ignored;
	size_t		n;

	if (cx_value_from_bytes((cx_type) col->type, p, len, &d, &ignored) != CX_OK)
		d.isnull = true;
	switch (d.isnull ? 0 : col->type)
	{
		case CX_T_INT16:
			snprintf(out, size, "%d", (int) d.v.i16);
			return;
		case CX_T_INT32:
			snprintf(out, size, "%d", (int) d.v.i32);
			return;
		case CX_T_INT64:
			snprintf(out, size, "%lld", (long long) d.v.i64);
			return;
		case CX_T_STRING:
		case CX_T_NUMERIC:
		case CX_T_JSON:
		case CX_T_JSONB:
			/* Cut at a UTF-8 character boundary. */
			n = len < SHOW_MAX ? len : SHOW_MAX;
			while (n < len && n > 0 && (p[n] & 0xC0) == 0x80)
				n--;
			snprintf(out, size, "%.*s%s", (int) n, (const char *) p,
					 n < len ? "..." : "");
			return;
	}
	/* uuid, bytes and the rest: hexadecimal. */
	n = 0;
	for (size_t i = 0; i < len && i < SHOW_MAX / 2 && n + 3 < size; i++)
		n += (size_t) snprintf(out + n, size - n, "%02x", p[i]);
	snprintf(out + n, size - n, "%s", len > SHOW_MAX / 2 ? "..." : "");
}

static cx_code
unique_violation(const resolve *rs, const req_row *row, cx_err *err)
{
	const cx_column *kc = &rs->schema->columns[rs->w->key_col];
	char		key[SHOW_MAX * 2 + 4];

	show_value(kc, key_of(rs, row), row->key_len, key, sizeof(key));
	return cx_err_set(err, CX_ERR_UNIQUE, "Key (%s)=(%s) already exists.",
					  kc->name, key);
}

static cx_code
cardinality_violation(const resolve *rs, const req_row *row,
					  const cx_buf *match, cx_err *err)
{
	const cx_column *kc = &rs->schema->columns[rs->w->key_col];
	const cx_column *uc = &rs->schema->columns[rs->w->upsert_col];
	char		a[SHOW_MAX * 2 + 4];
	char		b[SHOW_MAX * 2 + 4];
	char		up[SHOW_MAX * 2 + 4];
	size_t		alen = cx_load_u64(match->data);

	show_value(kc, match->data + 8, alen, a, sizeof(a));
	show_value(kc, match->data + 16 + alen, cx_load_u64(match->data + 8 + alen),
			   b, sizeof(b));
	show_value(uc, up_of(rs, row), row->up_len, up, sizeof(up));
	return cx_err_set(err, CX_ERR_CARDINALITY,
					  "Keys (%s)=(%s) and (%s)=(%s) both hold the upsert key (%s)=(%s).",
					  kc->name, a, kc->name, b, uc->name, up);
}

/* --------------------------------------------------------------------------
 * Reading the request
 * -------------------------------------------------------------------------- */

/* Copies a non-NULL scalar value's bytes into vals. */
static void
take_value(resolve *rs, const cx_column *col, const cx_datum *d, size_t *off,
		   size_t *len)
{
	uint8_t		fixed[CX_KEY_FIXED_MAX];
	const uint8_t *p;

	*off = rs->vals.len;
	(void) cx_datum_key_bytes((cx_type) col->type, d, fixed, &p, len);
	cx_buf_put(&rs->vals, p, *len);
}

static cx_code
read_request(resolve *rs, size_t rows_len, cx_err *err)
{
	const cx_schema *sc = rs->schema;
	int32_t		uc = rs->w->upsert_col;
	cx_rd		r;

	cx_rd_init(&r, rs->rows, rows_len);
	for (uint64_t i = 0; i < rs->n; i++)
	{
		req_row    *row = &rs->r[i];
		const cx_datum *k = &rs->values[rs->w->key_col];

		row->start = r.pos;
		if (cx_row_decode(sc, &r, &row->kind, rs->values, &rs->scratch,
						  err) != CX_OK)
			return err->code;
		row->end = r.pos;
		row->key_probe = row->up_probe = -1;
		if ((row->has_key = !k->isnull))
			take_value(rs, &sc->columns[rs->w->key_col], k, &row->key_off,
					   &row->key_len);
		row->has_up = uc >= 0 && !rs->values[uc].isnull;
		if (row->has_up)
			take_value(rs, &sc->columns[uc], &rs->values[uc], &row->up_off,
					   &row->up_len);
		if (row->kind == CX_ROW_UPSERT && uc < 0)
			return cx_err_set(err, CX_ERR_INVALID,
							  "an upsert request for a store without an upsert key");
	}
	if (!cx_buf_ok(&rs->vals))
		return cx_err_set(err, CX_ERR_NOMEM, "resolving a request: out of memory");
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Probing the base, once per request
 * -------------------------------------------------------------------------- */

static void
probe_set_free(probe_set *ps)
{
	cx_probe_result_free(&ps->res);
	free(ps->first);
	free(ps->count);
}

/* Probes column for the n values (offsets into rs->vals) and indexes the
 * hits by value. */
static cx_code
probe(resolve *rs, uint32_t column, const size_t *offs, const size_t *lens,
	  uint32_t n, probe_set *ps, cx_err *err)
{
	const uint8_t **vals;
	cx_code		rc;

	if (n == 0 || rs->w->base == NULL || rs->w->base->nfragments == 0)
		return CX_OK;
	vals = malloc(n * sizeof(*vals));
	ps->first = calloc(n, sizeof(uint32_t));
	ps->count = calloc(n, sizeof(uint32_t));
	if (vals == NULL || ps->first == NULL || ps->count == NULL)
	{
		free(vals);
		return cx_err_set(err, CX_ERR_NOMEM, "probing the base: out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		vals[i] = rs->vals.data + offs[i];
	rc = cx_base_probe(rs->w->s, rs->w->base, column, vals, lens, n, &ps->res,
					   err);
	free(vals);
	if (rc != CX_OK)
		return cx_err_prefix(err, "checking the request against the base");
	for (uint32_t h = ps->res.nhits; h-- > 0;)
	{
		ps->first[ps->res.hits[h].value] = h;
		ps->count[ps->res.hits[h].value]++;
	}
	return CX_OK;
}

/* The keys of the requests that must be checked, and the upsert values. */
static cx_code
probe_base_once(resolve *rs, cx_err *err)
{
	size_t	   *offs = malloc(2 * rs->n * sizeof(size_t) + 1);
	size_t	   *lens = malloc(2 * rs->n * sizeof(size_t) + 1);
	uint32_t	nk = 0;
	uint32_t	nu = 0;
	cx_code		rc;

	if (offs == NULL || lens == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "probing the base: out of memory");
	else
	{
		size_t	   *uoffs = offs + rs->n;
		size_t	   *ulens = lens + rs->n;

		for (uint64_t i = 0; i < rs->n; i++)
		{
			req_row    *row = &rs->r[i];

			if (row->kind < CX_ROW_INSERT || !row->has_key)
				continue;
			offs[nk] = row->key_off;
			lens[nk] = row->key_len;
			row->key_probe = nk++;
			if (row->kind != CX_ROW_UPSERT || !row->has_up)
				continue;
			uoffs[nu] = row->up_off;
			ulens[nu] = row->up_len;
			row->up_probe = nu++;
		}
		rc = probe(rs, rs->w->key_col, offs, lens, nk, &rs->keys, err);
		if (rc == CX_OK)
			rc = probe(rs, (uint32_t) rs->w->upsert_col, uoffs, ulens, nu,
					   &rs->ups, err);
	}
	free(offs);
	free(lens);
	return rc;
}

/*
 * The writer keeps the base it last loaded until its own shard's merges
 * move it on; meanwhile other shards' merges and compactions may replace
 * the fragments it lists, and GC collect them.  A probe that finds one
 * gone therefore loads the newest base, which lists what is there, and
 * probes again, once.  Only the base view changes (not the schema: the
 * request is being resolved against it).
 */
static cx_code
probe_base(resolve *rs, cx_err *err)
{
	cx_manifest *base;
	cx_code		rc = probe_base_once(rs, err);

	if (rc != CX_ERR_NOT_FOUND)
		return rc;
	probe_set_free(&rs->keys);
	probe_set_free(&rs->ups);
	memset(&rs->keys, 0, sizeof(rs->keys));
	memset(&rs->ups, 0, sizeof(rs->ups));
	if (cx_manifest_load_latest(rs->w->s, &base, err) != CX_OK)
		return err->code;
	cx_sw_keep_base(rs->w, base);
	return probe_base_once(rs, err);
}

/* The hits of probed value v (NULL and 0 when none). */
static const cx_probe_hit *
hits_of(const probe_set *ps, int64_t v, uint32_t *n)
{
	*n = v < 0 || ps->count == NULL ? 0 : ps->count[v];
	return *n == 0 ? NULL : &ps->res.hits[ps->first[v]];
}

/* --------------------------------------------------------------------------
 * Deciding what is live
 * -------------------------------------------------------------------------- */

/*
 * Whether a version of key with commit time ts found in layer `layer`
 * (NLAYERS: the base) is hidden by a layer above it: one holding the key,
 * or a truncate marker.  The cache's rows and markers have commit times; a
 * base row newer than them (another shard's, merged) still wins.  The
 * layers above the cache will be committed after anything the writer knows.
 */
static bool
shadowed(const resolve *rs, int layer, const uint8_t *key, size_t len,
		 int64_t ts)
{
	for (int i = 0; i < layer; i++)
	{
		cx_kc_row	r;
		int64_t		tts;

		if (cx_kc_get(rs->layer[i], key, len, &r) &&
			(i != LAYER_CACHE || r.ts >= ts))
			return true;
		if (cx_kc_truncated(rs->layer[i], &tts) &&
			(i != LAYER_CACHE || tts > ts))
			return true;
	}
	return false;
}

/* The newest of the base hits of one key (NULL if none). */
static const cx_probe_hit *
newest_hit(const cx_probe_hit *hits, uint32_t n)
{
	const cx_probe_hit *best = NULL;

	for (uint32_t i = 0; i < n; i++)
		if (best == NULL || hits[i].ts > best->ts)
			best = &hits[i];
	return best;
}

static bool
key_live(const resolve *rs, const req_row *row)
{
	const uint8_t *key = key_of(rs, row);
	uint32_t	nh;
	const cx_probe_hit *hits = hits_of(&rs->keys, row->key_probe, &nh);
	const cx_probe_hit *h = newest_hit(hits, nh);

	for (int i = 0; i < NLAYERS; i++)
	{
		cx_kc_row	r;

		if (!cx_kc_get(rs->layer[i], key, row->key_len, &r))
			continue;
		if (!shadowed(rs, i, key, row->key_len, r.ts))
		{
			if (i == LAYER_CACHE && h != NULL && h->ts > r.ts)
				break;
			return !r.tombstone;
		}
		return false;
	}
	return h != NULL && !shadowed(rs, NLAYERS, key, row->key_len, h->ts) &&
		!h->tombstone;
}

/*
 * The live rows holding an upsert value, collected as distinct keys: the
 * first two, each as u64 length + bytes, in match (enough to act on one and
 * to name two), and how many.
 */
typedef struct matches
{
	const resolve *rs;
	int			layer;
	cx_buf		keys;
	uint32_t	n;
} matches;

static bool
already_matched(const matches *m, const uint8_t *key, size_t len)
{
	size_t		off = 0;

	for (uint32_t i = 0; i < m->n && i < 2; i++)
	{
		size_t		l = cx_load_u64(m->keys.data + off);

		if (l == len && memcmp(m->keys.data + off + 8, key, len) == 0)
			return true;
		off += 8 + l;
	}
	return false;
}

static cx_code
add_match(matches *m, const uint8_t *key, size_t len, int64_t ts, cx_err *err)
{
	if (shadowed(m->rs, m->layer, key, len, ts) || already_matched(m, key, len))
		return CX_OK;
	if (m->n++ < 2)
	{
		cx_buf_put_u64(&m->keys, len);
		cx_buf_put(&m->keys, key, len);
	}
	if (!cx_buf_ok(&m->keys))
		return cx_err_set(err, CX_ERR_NOMEM, "resolving an upsert: out of memory");
	return CX_OK;
}

static cx_code
match_cached(void *arg, const cx_kc_row *row, cx_err *err)
{
	return add_match(arg, row->key, row->key_len, row->ts, err);
}

static cx_code
find_matches(const resolve *rs, const req_row *row, matches *m, cx_err *err)
{
	uint32_t	nh;
	const cx_probe_hit *h = hits_of(&rs->ups, row->up_probe, &nh);

	m->rs = rs;
	for (m->layer = 0; m->layer < NLAYERS; m->layer++)
		if (cx_kc_each_upsert(rs->layer[m->layer], up_of(rs, row), row->up_len,
							  match_cached, m, err) != CX_OK)
			return err->code;
	for (uint32_t i = 0; i < nh; i++)
		if (!h[i].tombstone &&
			add_match(m, h[i].key, h[i].key_len, h[i].ts, err) != CX_OK)
			return err->code;
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Writing the resolved rows
 * -------------------------------------------------------------------------- */

/* The row as it is (PUT, DELETE) or as a PUT, into the output and the
 * request's layer. */
static cx_code
emit(resolve *rs, const req_row *row, cx_err *err)
{
	cx_kc_row	kr = {0};
	bool		tombstone = row->kind == CX_ROW_DELETE;

	cx_buf_put(&rs->out, rs->rows + row->start, row->end - row->start);
	if (!cx_buf_ok(&rs->out))
		return cx_err_set(err, CX_ERR_NOMEM, "resolving a request: out of memory");
	if (!tombstone)
		rs->out.data[rs->out.len - (row->end - row->start)] = CX_ROW_PUT;
	rs->counts.rows++;
	if (!row->has_key)
		return tombstone ?
			cx_kc_truncate(rs->layer[LAYER_REQUEST], 0, 0, err) : CX_OK;
	kr.key = key_of(rs, row);
	kr.key_len = row->key_len;
	kr.tombstone = tombstone;
	if (row->has_up && !tombstone)
	{
		kr.upsert = up_of(rs, row);
		kr.upsert_len = row->up_len;
	}
	return cx_kc_put(rs->layer[LAYER_REQUEST], &kr, err);
}

/* A DELETE of key (an upsert's superseded row). */
static cx_code
emit_delete(resolve *rs, const uint8_t *key, size_t len, cx_err *err)
{
	uint32_t	kc = rs->w->key_col;
	cx_kc_row	kr = {.key = key,.key_len = len,.tombstone = true};

	for (uint32_t i = 0; i < rs->schema->ncolumns; i++)
		rs->values[i].isnull = true;
	if (cx_value_from_bytes((cx_type) rs->schema->columns[kc].type, key, len,
							&rs->values[kc], err) != CX_OK)
		return err->code;
	cx_row_encode(rs->schema, CX_ROW_DELETE, rs->values, &rs->out);
	if (!cx_buf_ok(&rs->out))
		return cx_err_set(err, CX_ERR_NOMEM, "resolving an upsert: out of memory");
	rs->counts.rows++;
	rs->counts.superseded++;
	return cx_kc_put(rs->layer[LAYER_REQUEST], &kr, err);
}

static cx_code
resolve_insert(resolve *rs, const req_row *row, cx_err *err)
{
	if (row->has_key && key_live(rs, row))
		return unique_violation(rs, row, err);
	return emit(rs, row, err);
}

static cx_code
resolve_upsert(resolve *rs, const req_row *row, cx_err *err)
{
	matches		m = {0};
	size_t		mlen;
	bool		own;
	cx_code		rc;

	if (!row->has_up || !row->has_key)
		return rs->w->opt.unique_key ? resolve_insert(rs, row, err) :
			emit(rs, row, err);
	cx_buf_init(&m.keys);
	rc = find_matches(rs, row, &m, err);
	if (rc == CX_OK && m.n > 1)
		rc = cardinality_violation(rs, row, &m.keys, err);
	if (rc != CX_OK)
	{
		cx_buf_free(&m.keys);
		return rc;
	}
	mlen = m.n == 1 ? cx_load_u64(m.keys.data) : 0;
	own = m.n == 1 && mlen == row->key_len &&
		memcmp(m.keys.data + 8, key_of(rs, row), mlen) == 0;
	if (!own && rs->w->opt.unique_key && key_live(rs, row))
		rc = unique_violation(rs, row, err);
	else if (m.n == 1 && !own)
		rc = emit_delete(rs, m.keys.data + 8, mlen, err);
	cx_buf_free(&m.keys);
	return rc == CX_OK ? emit(rs, row, err) : rc;
}

static cx_code
resolve_row(resolve *rs, const req_row *row, cx_err *err)
{
	switch (row->kind)
	{
		case CX_ROW_INSERT:
			return resolve_insert(rs, row, err);
		case CX_ROW_INSERT_IF_ABSENT:
			if (row->has_key && key_live(rs, row))
			{
				rs->counts.dropped++;
				return CX_OK;
			}
			return emit(rs, row, err);
		case CX_ROW_UPSERT:
			return resolve_upsert(rs, row, err);
		case CX_ROW_PUT:
		case CX_ROW_DELETE:
			break;
	}
	return emit(rs, row, err);
}

/* --------------------------------------------------------------------------
 * Staging
 * -------------------------------------------------------------------------- */

/* The key and upsert columns, once the store has a schema. */
static cx_code
find_columns(cx_shardwriter *w, cx_err *err)
{
	const char *key = w->base != NULL && w->base->key_column != NULL ?
		w->base->key_column : w->key_column;

	if (w->columns_known || w->schema == NULL)
		return CX_OK;
	if (key == NULL)
		return cx_err_set(err, CX_ERR_INVALID, "shard %s: the store has no key column",
						  w->shard_id);
	if (cx_key_column(w->schema, key, &w->key_col, err) != CX_OK)
		return err->code;
	w->upsert_col = -1;
	if (w->upsert_column != NULL)
	{
		uint32_t	uc;

		if (cx_key_column(w->schema, w->upsert_column, &uc, err) != CX_OK)
			return cx_err_prefix(err, "upsert key");
		w->upsert_col = (int32_t) uc;
	}
	w->columns_known = true;
	return CX_OK;
}

static void
resolve_free(resolve *rs)
{
	free(rs->r);
	free(rs->values);
	cx_buf_free(&rs->vals);
	cx_buf_free(&rs->out);
	cx_buf_free(&rs->scratch);
	cx_kc_free(rs->layer[LAYER_REQUEST]);
	probe_set_free(&rs->keys);
	probe_set_free(&rs->ups);
}

/* How many rows ahead resolving prefetches their keys' cache slots. */
#define PREFETCH_AHEAD 8

/* Row i's key where the writer's key cache keeps it or would (a hint: the
 * cache's slots are random accesses into memory, and resolving looks each
 * key up there). */
static void
prefetch_key(const resolve *rs, uint64_t i)
{
	if (i < rs->n && rs->r[i].has_key)
		cx_kc_prefetch(rs->layer[LAYER_CACHE], key_of(rs, &rs->r[i]),
					   rs->r[i].key_len);
}

static cx_code
resolve_request(resolve *rs, size_t rows_len, cx_err *err)
{
	cx_shardwriter *w = rs->w;

	rs->r = calloc(rs->n, sizeof(req_row));
	rs->values = calloc(rs->schema->ncolumns + 1, sizeof(cx_datum));
	rs->layer[LAYER_REQUEST] = cx_kc_new();
	rs->layer[LAYER_STAGED] = w->staged;
	rs->layer[LAYER_CACHE] = w->keys;
	if (rs->r == NULL || rs->values == NULL || rs->layer[LAYER_REQUEST] == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "resolving a request: out of memory");
	if (read_request(rs, rows_len, err) != CX_OK ||
		probe_base(rs, err) != CX_OK)
		return err->code;
	for (uint64_t i = 0; i < rs->n; i++)
	{
		prefetch_key(rs, i + PREFETCH_AHEAD);
		if (resolve_row(rs, &rs->r[i], err) != CX_OK)
			return err->code;
	}
	/* Survived: its rows join the staged ones (the first request's move). */
	if (w->staged_rows.len == 0)
		cx_buf_swap(&w->staged_rows, &rs->out);
	else
		cx_buf_put(&w->staged_rows, rs->out.data, rs->out.len);
	if (!cx_buf_ok(&w->staged_rows))
		return cx_err_set(err, CX_ERR_NOMEM, "staging a request: out of memory");
	if (cx_kc_apply(w->staged, rs->layer[LAYER_REQUEST], 0, 0, err) != CX_OK)
		return err->code;
	w->staged_nrows += rs->counts.rows;
	return CX_OK;
}

/*
 * After a drain the writer knows a merge committed rows of its generations
 * into a newer base: that base becomes its base view (and only then does the
 * key cache let go of those rows), at the next request rather than in the
 * drain, which reads nothing, and only once merges have taken
 * view_lag_generations past the view, so that a slow store's round trips
 * for it are paid once per that many generations rather than per merge, or
 * once the cache holds view_lag_keys keys, so that large generations do not
 * keep it large.  Best effort: until a refresh succeeds the cache keeps the
 * rows, which is still correct.
 */
static void
refresh_base_view(cx_shardwriter *w)
{
	uint64_t	lag = w->opt.view_lag_generations;
	uint64_t	viewed;
	cx_err		ignored;

	if (w->base != NULL)
	{
		viewed = cx_manifest_merged_gen(w->base, w->shard_id);
		if (w->merged_gen <= viewed)
			return;
		if (w->merged_gen - viewed < (lag > 0 ? lag : 1) &&
			cx_kc_keys(w->keys) < w->opt.view_lag_keys)
			return;
	}
	(void) cx_sw_read_watermark(w, &ignored);
}

/*
 * Between rounds (cx_sw_prepare_append): the newer base view the next
 * request would load, and, for a text key, one probe of it for the empty
 * string, which reads
 * what every probe of that base needs first (the probe plan, and the root
 * and filter of each new key index segment) and no fragment (no key
 * statistics hold a value below every key).  Best effort; only the next
 * request's wait gets shorter.
 */
void
cx_sw_read_ahead(cx_shardwriter *w)
{
	static const uint8_t empty = 0;
	const uint8_t *value = &empty;
	size_t		len = 0;
	uint64_t	known = w->base != NULL ? w->base->version : 0;
	cx_probe_result res;
	cx_err		ignored;

	refresh_base_view(w);
	if (w->base == NULL || w->base->version == known || !w->columns_known ||
		w->base->nfragments == 0 || w->schema == NULL ||
		w->schema->columns[w->key_col].type != CX_T_STRING)
		return;
	if (cx_base_probe(w->s, w->base, w->key_col, &value, &len, 1, &res,
					  &ignored) == CX_OK)
		cx_probe_result_free(&res);
}

cx_code
cx_sw_stage(cx_shardwriter *w, const cx_schema *schema, const uint8_t *rows,
			size_t rows_len, uint64_t nrows, cx_sw_resolved *out, cx_err *err)
{
	resolve		rs = {0};
	cx_buf		reshaped;
	bool		reshape;
	size_t		staged_len = w->staged_rows.len;
	uint64_t	staged_nrows = w->staged_nrows;
	cx_code		rc;

	memset(out, 0, sizeof(*out));
	if (w->fenced)
	{
		*err = w->fence_err;
		return CX_ERR_FENCED;
	}
	if (w->keys_lost)
		return cx_err_set(err, CX_ERR_NOMEM,
						  "shard %s: the writer's key cache is incomplete after running out of memory; reopen the writer",
						  w->shard_id);
	if (nrows == 0 || rows == NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "shard %s: a request needs at least one row", w->shard_id);
	/* Before anything is written: an unsealed append's rows go to the WAL
	 * as they are, and every replay would trip over a malformed one. */
	if (cx_rows_check(schema, rows, rows_len, nrows, err) != CX_OK)
		return cx_err_prefix(err, "shard %s: appending", w->shard_id);
	refresh_base_view(w);
	if (cx_sw_check_schema(w, schema, &reshape, err) != CX_OK ||
		find_columns(w, err) != CX_OK)
		return err->code;
	cx_buf_init(&reshaped);
	if (reshape &&
		cx_rows_reshape(schema, w->schema, rows, rows_len, nrows, &reshaped,
						err) != CX_OK)
	{
		cx_buf_free(&reshaped);
		return cx_err_prefix(err, "shard %s: appending", w->shard_id);
	}
	rs.w = w;
	rs.schema = reshape ? w->schema : schema;
	rs.rows = reshape ? reshaped.data : rows;
	rows_len = reshape ? reshaped.len : rows_len;
	rs.n = nrows;
	cx_buf_init(&rs.vals);
	cx_buf_init(&rs.out);
	cx_buf_init(&rs.scratch);
	rc = resolve_request(&rs, rows_len, err);
	if (rc == CX_OK)
		*out = rs.counts;
	else if (w->staged_rows.len != staged_len)
	{
		/* Failed while joining: put the earlier requests' rows back. */
		w->staged_rows.len = staged_len;
		w->staged_nrows = staged_nrows;
	}
	resolve_free(&rs);
	cx_buf_free(&reshaped);
	return rc;
}

void
cx_sw_unstage(cx_shardwriter *w)
{
	cx_err		ignored;

	cx_buf_reset_small(&w->staged_rows);
	w->staged_nrows = 0;
	if (cx_kc_clear(w->staged, &ignored) != CX_OK)
		w->keys_lost = true;
}

uint64_t
cx_sw_staged_rows(const cx_shardwriter *w)
{
	return w->staged_nrows;
}

/* --------------------------------------------------------------------------
 * The writer's view: key cache and base
 * -------------------------------------------------------------------------- */

void
cx_sw_keep_base(cx_shardwriter *w, cx_manifest *base)
{
	cx_err		ignored;

	if (base == NULL)
		return;
	if (w->base != NULL && w->base->version >= base->version)
	{
		cx_manifest_free(base);
		return;
	}
	cx_manifest_free(w->base);
	w->base = base;
	/* A failed trim leaves rows base holds too: correct, only larger. */
	if (w->keys != NULL)
		(void) cx_kc_trim(w->keys,
						  cx_manifest_merged_gen(base, w->shard_id), &ignored);
}

cx_code
cx_sw_keys_open(cx_shardwriter *w, cx_err *err)
{
	uint64_t	through;

	w->keys = cx_kc_new();
	w->staged = cx_kc_new();
	if (w->keys == NULL || w->staged == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "opening a shard writer: out of memory");
	if (w->base == NULL && cx_sw_read_watermark(w, err) != CX_OK)
		return err->code;
	if (find_columns(w, err) != CX_OK)
		return err->code;
	if (!w->columns_known)
		return CX_OK;			/* no schema, so no rows yet */
	through = w->base == NULL ? 0 : cx_manifest_merged_gen(w->base, w->shard_id);
	for (uint32_t i = 0; i < w->m->ngens; i++)
	{
		const cx_generation *g = &w->m->gens[i];

		if (g->gen > through &&
			cx_kc_add_generation(w->keys, w->s, w->m, g, w->schema, w->key_col,
								 w->upsert_col, err) != CX_OK)
			return cx_err_prefix(err, "shard %s: reading the keys of generation %llu",
								 w->shard_id, (unsigned long long) g->gen);
	}
	return CX_OK;
}

void
cx_sw_keys_appended(cx_shardwriter *w, int64_t ts, uint64_t gen)
{
	cx_err		ignored;

	if (cx_kc_apply(w->keys, w->staged, ts, gen, &ignored) != CX_OK)
		w->keys_lost = true;
}

void
cx_sw_keys_free(cx_shardwriter *w)
{
	cx_kc_free(w->keys);
	cx_kc_free(w->staged);
	cx_manifest_free(w->base);
	free(w->upsert_column);
	cx_buf_free(&w->staged_rows);
}
