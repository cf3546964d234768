/*
 * cx_generation_writer.c — writes rows out as one generation fragment
 * (cx_memwal_int.h): the table's columns followed by the hidden commit-time
 * and tombstone columns (cx_shard_manifest.h), streamed through a fragment
 * writer so that memory stays at one row group whatever the generation's
 * size.  Both the seal (rows from the memtable) and the replay (rows from WAL
 * entries) use it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_row_codec.h"
#include "memwal/cx_memwal_int.h"

struct cx_genw
{
	cx_schema  *table;			/* the table's columns */
	cx_schema  *written;		/* the fragment's: table + hidden */
	cx_fragw   *fw;
	cx_datum   *values;			/* table columns + 2 hidden */
	cx_buf		scratch;		/* list items of the row being decoded */
	int64_t		min_ts;
	int64_t		max_ts;
};

static void
genw_free(cx_genw *g)
{
	cx_schema_free(g->table);
	cx_schema_free(g->written);
	free(g->values);
	cx_buf_free(&g->scratch);
	free(g);
}

cx_code
cx_genw_open(cx_objstore *s, const cx_schema *table,
			 const cx_fragw_options *opt, cx_genw **out, cx_err *err)
{
	cx_genw    *g = calloc(1, sizeof(cx_genw));
	char		key[CX_KEY_MAX + 1];
	cx_fragw_options gen_opt = *opt;
	cx_code		rc;

	*out = NULL;
	if (g == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "opening a generation: out of memory");
	cx_buf_init(&g->scratch);
	g->min_ts = INT64_MAX;
	g->max_ts = INT64_MIN;
	g->table = cx_schema_clone(table);
	g->values = calloc((size_t) table->ncolumns + 2, sizeof(cx_datum));
	if (g->table == NULL || g->values == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "opening a generation: out of memory");
	else
		rc = cx_shard_generation_schema(table, &g->written, err);
	if (rc == CX_OK)
		rc = cx_fragment_new_key(key, sizeof(key), err);
	if (rc == CX_OK)
	{
		gen_opt.compression_level = CX_GENERATION_COMPRESSION_LEVEL;
		rc = cx_fragw_open(s, key, g->written, &gen_opt, &g->fw, err);
	}
	if (rc != CX_OK)
	{
		genw_free(g);
		return rc;
	}
	*out = g;
	return CX_OK;
}

cx_code
cx_genw_add(cx_genw *g, const uint8_t *rows, size_t len, uint64_t nrows,
			int64_t ts, const char *what, cx_err *err)
{
	uint32_t	n = g->table->ncolumns;
	cx_rd		r;

	cx_rd_init(&r, rows, len);
	g->values[n].isnull = false;
	g->values[n].v.i64 = ts;
	g->values[n + 1].isnull = false;
	for (uint64_t i = 0; i < nrows; i++)
	{
		cx_row_kind kind;

		if (cx_row_decode(g->table, &r, &kind, g->values, &g->scratch,
						  err) != CX_OK)
			return cx_err_prefix(err, "%s: row %llu of %llu", what,
								 (unsigned long long) i + 1,
								 (unsigned long long) nrows);
		if (kind != CX_ROW_PUT && kind != CX_ROW_DELETE)
			return cx_err_set(err, CX_ERR_CORRUPT,
							  "%s: row %llu of %llu is a request (kind %d) the writer did not resolve",
							  what, (unsigned long long) i + 1,
							  (unsigned long long) nrows, (int) kind);
		g->values[n + 1].v.b = kind == CX_ROW_DELETE;
		if (cx_fragw_append(g->fw, g->values, err) != CX_OK)
			return err->code;
	}
	if (cx_rd_left(&r) != 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s: %zu bytes left after its %llu rows", what,
						  cx_rd_left(&r), (unsigned long long) nrows);
	if (nrows > 0)
	{
		g->min_ts = ts < g->min_ts ? ts : g->min_ts;
		g->max_ts = ts > g->max_ts ? ts : g->max_ts;
	}
	return CX_OK;
}

cx_code
cx_genw_finish(cx_genw *g, uint64_t gen, cx_generation *out, cx_err *err)
{
	cx_code		rc;

	memset(out, 0, sizeof(*out));
	rc = cx_fragw_finish(g->fw, &out->fragment, err);
	g->fw = NULL;
	if (rc == CX_OK)
	{
		cx_fragentry_set_field_ids(&out->fragment, g->written);
		out->gen = gen;
		out->min_ts = g->min_ts;
		out->max_ts = g->max_ts;
	}
	genw_free(g);
	return rc;
}

void
cx_genw_abort(cx_genw *g)
{
	if (g == NULL)
		return;
	cx_fragw_abort(g->fw);
	genw_free(g);
}
