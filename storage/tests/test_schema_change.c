/*
 * test_schema_change.c — changing a store's columns (cx_table_alter_schema):
 * the manifest's schema history, the rules, and reading fragments, WAL
 * entries and rows written under an older schema by field id.
 */
#include <stdlib.h>
#include <string.h>

#include "cx_test.h"
#include "merge/cx_merge.h"
#include "mw_util.h"
#include "table/cx_commit.h"
#include "table/cx_key_index.h"

static cx_schema_alter
alter(cx_alter_kind kind, const char *column, const char *new_name,
	  cx_type type)
{
	cx_schema_alter a = {kind, column, new_name, {.type = type}};

	return a;
}

static cx_manifest *
latest(cx_objstore *s)
{
	cx_manifest *m = NULL;
	cx_err		err;

	if (cx_manifest_load_latest(s, &m, &err) != CX_OK)
		return NULL;
	return m;
}

static int32_t
field_id(const cx_manifest *m, const char *name)
{
	int			i = cx_schema_find(m->schema, name);

	return i < 0 ? -1 : m->schema->columns[i].field_id;
}

/* Each schema change moves the schema into the history and takes the next
 * id; the history survives encoding, and a history that does not ascend
 * below the current id is refused as corrupt. */
CX_TEST(manifest_schema_history_round_trips)
{
	cx_manifest *m = cx_manifest_new();
	cx_manifest *d = NULL;
	cx_schema  *s = cx_schema_new();
	cx_buf		b;
	cx_err		err;

	REQUIRE(m != NULL && s != NULL);
	m->version = 3;
	CHECK(m->schema_id == 0 && cx_manifest_schema_by_id(m, 1) == NULL);
	REQUIRE_OK(cx_schema_add(s, "id", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(s, "n", CX_T_INT16, 0, NULL, &err), &err);
	REQUIRE_OK(cx_manifest_set_schema(m, s, &err), &err);
	CHECK(m->schema_id == 1 && m->last_field_id == 2 && m->nold_schemas == 0);
	REQUIRE_OK(cx_schema_add(s, "extra", CX_T_BOOL, 0, NULL, &err), &err);
	REQUIRE_OK(cx_manifest_set_schema(m, s, &err), &err);
	/* a dropped column's id stays used */
	s->ncolumns--;
	free(s->columns[2].name);
	REQUIRE_OK(cx_manifest_set_schema(m, s, &err), &err);
	CHECK(m->schema_id == 3 && m->last_field_id == 3 && m->nold_schemas == 2);
	CHECK(m->old_schemas[0].schema_id == 1 && m->old_schemas[1].schema_id == 2);
	CHECK(cx_manifest_schema_by_id(m, 2)->ncolumns == 3);
	CHECK(cx_manifest_had_schema(m, m->old_schemas[1].schema));

	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	REQUIRE_OK(cx_manifest_decode(b.data, b.len, "m", &d, &err), &err);
	CHECK(d->schema_id == 3 && d->last_field_id == 3 && d->nold_schemas == 2);
	CHECK(cx_schema_equal(d->schema, m->schema));
	CHECK(cx_schema_equal(cx_manifest_schema_by_id(d, 2),
						  cx_manifest_schema_by_id(m, 2)));
	cx_manifest_free(d);

	m->old_schemas[1].schema_id = 3;
	cx_buf_reset(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	CHECK_CODE(cx_manifest_decode(b.data, b.len, "m", &d, &err), CX_ERR_CORRUPT);
	m->old_schemas[1].schema_id = 2;
	m->last_field_id = 1;
	cx_buf_reset(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	CHECK_CODE(cx_manifest_decode(b.data, b.len, "m", &d, &err), CX_ERR_CORRUPT);
	cx_buf_free(&b);
	cx_schema_free(s);
	cx_manifest_free(m);
}

/* ADD, DROP, RENAME and widening TYPE each commit "alter schema"; repeated
 * they are no-ops; ids are never reused; the key and narrowing or
 * unrelated type changes are refused. */
CX_TEST(alter_schema_rules)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_manifest *m;
	cx_schema_alter a;
	uint64_t	version;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 2, 1, true, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);

	a = alter(CX_ALTER_ADD, "note", NULL, CX_T_STRING);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(version > 0);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(version == 0);
	REQUIRE((m = latest(s)) != NULL);
	CHECK(strcmp(m->operation, "alter schema") == 0 && m->schema_id == 2);
	CHECK(field_id(m, "note") == 4 && m->last_field_id == 4);
	cx_manifest_free(m);

	a = alter(CX_ALTER_DROP, "note", NULL, 0);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(version > 0);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(version == 0);
	a = alter(CX_ALTER_ADD, "note", NULL, CX_T_STRING);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	REQUIRE((m = latest(s)) != NULL);
	CHECK(field_id(m, "note") == 5 && m->schema_id == 4);
	cx_manifest_free(m);

	a = alter(CX_ALTER_RENAME, "v", "value", 0);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(version > 0);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(version == 0);
	REQUIRE((m = latest(s)) != NULL);
	CHECK(field_id(m, "value") == 2 && field_id(m, "v") == -1);
	cx_manifest_free(m);

	a = alter(CX_ALTER_TYPE, "note", NULL, CX_T_INT64);
	CHECK_CODE(cx_table_alter_schema(s, &a, 1, &version, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, "cannot be read as int64") != NULL);
	a = alter(CX_ALTER_TYPE, "value", NULL, CX_T_INT32);
	CHECK_CODE(cx_table_alter_schema(s, &a, 1, &version, &err), CX_ERR_SCHEMA);
	a = alter(CX_ALTER_DROP, "id", NULL, 0);
	CHECK_CODE(cx_table_alter_schema(s, &a, 1, &version, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, "key") != NULL);
	a = alter(CX_ALTER_RENAME, "id", "ident", 0);
	CHECK_CODE(cx_table_alter_schema(s, &a, 1, &version, &err), CX_ERR_SCHEMA);
	a = alter(CX_ALTER_TYPE, "id", NULL, CX_T_BINARY);
	CHECK_CODE(cx_table_alter_schema(s, &a, 1, &version, &err), CX_ERR_SCHEMA);
	REQUIRE((m = latest(s)) != NULL);
	CHECK(m->schema_id == 5);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* A fragment written as (id string, n int16, f float32, gone string) is
 * read after n -> int64, f -> float64, DROP gone and ADD extra: values
 * widened, extra NULL, and statistics of a widened column not used. */
CX_TEST(fragment_of_an_older_schema_is_read_by_field_id)
{
	cx_objstore *s = mw_open_store();
	cx_schema  *t = cx_schema_new();
	cx_schema  *g;
	cx_fragw   *fw;
	cx_fragment_info fi;
	cx_schema_alter alters[4];
	cx_snapshot *snap;
	cx_tablescan *scan;
	const cx_rowgroup *rg;
	const uint32_t *rows;
	uint32_t	nrows;
	uint64_t	version;
	char		key[64];
	cx_datum	d[6];
	cx_err		err;

	REQUIRE(s != NULL && t != NULL);
	REQUIRE_OK(cx_schema_add(t, "id", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(t, "n", CX_T_INT16, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(t, "f", CX_T_FLOAT32, 0, NULL, &err), &err);
	REQUIRE_OK(cx_schema_add(t, "gone", CX_T_STRING, 0, NULL, &err), &err);
	REQUIRE_OK(cx_shard_generation_schema(t, &g, &err), &err);
	REQUIRE_OK(cx_fragment_new_key(key, sizeof(key), &err), &err);
	REQUIRE_OK(cx_fragw_open(s, key, g, NULL, &fw, &err), &err);
	memset(d, 0, sizeof(d));
	d[0].v.bytes.ptr = (const uint8_t *) "a";
	d[0].v.bytes.len = 1;
	d[1].v.i16 = -32768;
	d[2].v.f32 = 1.5f;
	d[3].v.bytes.ptr = (const uint8_t *) "old";
	d[3].v.bytes.len = 3;
	d[4].v.i64 = 10;
	REQUIRE_OK(cx_fragw_append(fw, d, &err), &err);
	REQUIRE_OK(cx_fragw_finish(fw, &fi, &err), &err);
	cx_fragentry_set_field_ids(&fi, g);
	REQUIRE_OK(mw_commit_fragments(s, t, &fi, 1, &version, &err), &err);
	cx_fragment_info_free(&fi);

	alters[0] = alter(CX_ALTER_TYPE, "n", NULL, CX_T_INT64);
	alters[1] = alter(CX_ALTER_TYPE, "f", NULL, CX_T_FLOAT64);
	alters[2] = alter(CX_ALTER_DROP, "gone", NULL, 0);
	alters[3] = alter(CX_ALTER_ADD, "extra", NULL, CX_T_STRING);
	REQUIRE_OK(cx_table_alter_schema(s, alters, 4, &version, &err), &err);

	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	{
		const cx_manifest *m = cx_snapshot_base(snap);

		CHECK(m->schema->ncolumns == 4 && m->schema->columns[3].field_id == 5);
		/* n's stored bounds are int16: not read as int64 bounds */
		CHECK(cx_fragment_stats(&m->fragments[0], m->schema, 1) == NULL);
		CHECK(cx_fragment_stats(&m->fragments[0], m->schema, 0) != NULL);
		CHECK(cx_fragment_stats(&m->fragments[0], m->schema, 3) == NULL);
	}
	REQUIRE_OK(cx_tablescan_begin(snap, NULL, &scan, &err), &err);
	REQUIRE_OK(cx_tablescan_next(scan, &rg, &rows, &nrows, &err), &err);
	REQUIRE(rg != NULL && nrows == 1);
	for (uint32_t c = 0; c < 4; c++)
		cx_colvec_get(cx_tablescan_column(scan, c), rows[0], &d[c]);
	CHECK(!d[0].isnull && d[0].v.bytes.len == 1);
	CHECK(!d[1].isnull && d[1].v.i64 == -32768);
	CHECK(!d[2].isnull && d[2].v.f64 == 1.5);
	CHECK(d[3].isnull);
	cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	cx_schema_free(g);
	cx_schema_free(t);
	cx_obj_close(s);
}

/* Appends the row ("new", 6, no tags, "n") of the store's new schema. */
static cx_code
append_new_row(cx_shardwriter *w, const cx_schema *schema, cx_err *err)
{
	cx_datum	d[4];
	cx_buf		row;
	int64_t		ts;
	cx_code		rc;

	memset(d, 0, sizeof(d));
	d[0].v.bytes.ptr = (const uint8_t *) "new";
	d[0].v.bytes.len = 3;
	d[1].v.i64 = 6;
	d[2].isnull = true;
	d[3].v.bytes.ptr = (const uint8_t *) "n";
	d[3].v.bytes.len = 1;
	cx_buf_init(&row);
	cx_row_encode(schema, CX_ROW_PUT, d, &row);
	rc = cx_sw_append(w, schema, row.data, row.len, 1, false, &ts, err);
	cx_buf_free(&row);
	return rc;
}

/*
 * A writer sealed and logged rows of the old schema; the store gains a
 * column; an append of the new schema makes the writer seal its old-schema
 * memtable and take the new one, a later one of the old schema (a backend
 * with a stale view) is reshaped, the reopened writer replays the WAL
 * entries of both schemas into the new one, and a merge writes it all into base
 * fragments of the new schema with the new column NULL.
 */
CX_TEST(older_generations_wal_and_rows_merge_into_the_new_schema)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_schema_alter a = alter(CX_ALTER_ADD, "note", NULL, CX_T_STRING);
	cx_merge_result res;
	cx_manifest *m;
	cx_fragr   *r;
	uint64_t	version;
	mw_rows		rows;
	int64_t		v;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "sealed", 0, 3, 1, true, &err), &err);
	REQUIRE_OK(mw_put(w, "logged", 0, 3, 2, false, &err), &err);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	REQUIRE_OK(mw_put(w, "late", 0, 3, 3, false, &err), &err);
	CHECK(cx_sw_pending_generations(w) == 1);
	REQUIRE((m = latest(s)) != NULL);
	REQUIRE_OK(append_new_row(w, m->schema, &err), &err);
	cx_manifest_free(m);
	/* the memtable of the old schema was sealed before the new one */
	CHECK(cx_sw_pending_generations(w) == 2);
	REQUIRE_OK(mw_put(w, "later", 0, 1, 5, false, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &rows, &err), &err);
	CHECK(rows.n == 11 && mw_count(&rows, "logged1", &v) == 1 && v == 2);
	CHECK(mw_count(&rows, "late2", &v) == 1 && v == 3);
	CHECK(mw_count(&rows, "new", &v) == 1 && v == 6);
	CHECK(mw_count(&rows, "later0", &v) == 1 && v == 5);
	mw_rows_free(&rows);

	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	CHECK(res.rows_written == 11);
	REQUIRE((m = latest(s)) != NULL);
	REQUIRE_OK(cx_fragr_open(s, m->fragments[m->nfragments - 1].path, 0, &r,
							 &err), &err);
	CHECK(cx_fragr_schema(r)->ncolumns == 4 + 2);
	CHECK(cx_schema_find_field(cx_fragr_schema(r), 4) == 3);
	cx_fragr_close(r);
	cx_manifest_free(m);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_scan(s, NULL, &rows, &err), &err);
	CHECK(rows.n == 11 && mw_count(&rows, "sealed0", &v) == 1 && v == 1);
	for (uint32_t i = 0; i < rows.n; i++)
		CHECK(rows.r[i].tags_ok);
	mw_rows_free(&rows);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

static uint32_t
index_segments(cx_objstore *s)
{
	cx_manifest *m = latest(s);
	cx_keyindex ix = {0};
	cx_err		err;
	uint32_t	n;

	if (m == NULL || cx_keyindex_load(m, &ix, &err) != CX_OK)
		abort();
	n = ix.n;
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
	return n;
}

/* Key index segments name columns by position and hold stored values: a
 * DROP that moves an indexed column, or a widening of one, removes the
 * index; a DROP after every indexed column keeps it. */
CX_TEST(drop_or_widening_removes_a_key_index_it_invalidates)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	cx_keyindex_result kres;
	cx_schema_alter a;
	uint64_t	version;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 5, 1, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &kres, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 1, NULL, &kres, &err), &err);
	CHECK(index_segments(s) == 2);
	a = alter(CX_ALTER_DROP, "tags", NULL, 0);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(index_segments(s) == 2);
	a = alter(CX_ALTER_DROP, "v", NULL, 0);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(index_segments(s) == 0);
	cx_obj_close(s);
}

CX_TEST(widening_an_indexed_column_removes_the_key_index)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	cx_keyindex_result kres;
	cx_schema_alter a;
	uint64_t	version;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 0, 5, 1, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	a = alter(CX_ALTER_ADD, "n", NULL, CX_T_INT32);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &kres, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 3, NULL, &kres, &err), &err);
	CHECK(index_segments(s) == 2);
	a = alter(CX_ALTER_TYPE, "n", NULL, CX_T_INT64);
	REQUIRE_OK(cx_table_alter_schema(s, &a, 1, &version, &err), &err);
	CHECK(index_segments(s) == 0);
	cx_obj_close(s);
}
