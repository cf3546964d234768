/*
 * test_inspect.c — the ctxstore-inspect CLI against stores built here:
 * every command on directly committed fragments, on merged fragments (with the hidden
 * columns and deletion vectors) and on unmerged generations, and verify on
 * intact, damaged and incomplete stores (GC's retention record included)
 * and where there is no store, and repair.  The Makefile passes the binary's path in CX_INSPECT.
 */
#include <stdlib.h>
#include <sys/wait.h>

#include "ctxstore/lifecycle.h"
#include "objstore/cx_layout.h"
#include "table/cx_commit.h"
#include "util/cx_crc32c.h"
#include "merge/cx_merge.h"
#include "table/cx_key_index.h"
#include "cx_test.h"
#include "mw_util.h"

/* Runs the CLI with args; returns its exit status and its stdout+stderr
 * (malloc'd) in *out. */
static int
run_inspect(const char *args, char **out)
{
	const char *bin = getenv("CX_INSPECT");
	char		cmd[8192];
	cx_buf		b;
	char		chunk[4096];
	size_t		n;
	FILE	   *p;
	int			status;

	*out = NULL;
	if (bin == NULL)
		return -1;
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", bin, args);
	p = popen(cmd, "r");
	if (p == NULL)
		return -1;
	cx_buf_init(&b);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		cx_buf_put(&b, chunk, n);
	cx_buf_put_u8(&b, 0);
	status = pclose(p);
	*out = (char *) cx_buf_detach(&b, NULL);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Two base versions of two rows each, committed directly: id (string), n
 * (int64), tags (list<string>), then the hidden commit time and tombstone. */
static cx_code
build_store(cx_objstore *s, char *first_key, cx_err *err)
{
	cx_schema  *schema = cx_schema_new();
	cx_schema  *frag = NULL;
	cx_code		rc = CX_OK;

	if (cx_schema_add(schema, "id", CX_T_STRING, 0, NULL, err) != CX_OK ||
		cx_schema_add(schema, "n", CX_T_INT64, 0, NULL, err) != CX_OK ||
		cx_schema_add(schema, "tags", CX_T_LIST, CX_T_STRING, NULL, err) != CX_OK ||
		cx_shard_generation_schema(schema, &frag, err) != CX_OK)
		rc = err->code;
	for (int commit = 0; commit < 2 && rc == CX_OK; commit++)
	{
		char		key[128];
		cx_fragw   *w;
		cx_fragment_info fi;
		uint64_t	version;

		if ((rc = cx_fragment_new_key(key, sizeof(key), err)) != CX_OK ||
			(rc = cx_fragw_open(s, key, frag, NULL, &w, err)) != CX_OK)
			break;
		if (commit == 0)
			strcpy(first_key, key);
		for (int i = 0; i < 2 && rc == CX_OK; i++)
		{
			char		id[16];
			cx_datum	tag = {.isnull = false};
			cx_datum	row[5] = {{.isnull = false}, {.isnull = false},
			{.isnull = i == 1}, {.v.i64 = 1000 + commit}, {.v.b = false}};

			snprintf(id, sizeof(id), "row-%d", commit * 2 + i);
			tag.v.bytes.ptr = (const uint8_t *) "red";
			tag.v.bytes.len = 3;
			row[0].v.bytes.ptr = (const uint8_t *) id;
			row[0].v.bytes.len = strlen(id);
			row[1].v.i64 = 40 + commit * 2 + i;
			row[2].v.list.items = &tag;
			row[2].v.list.n = 1;
			rc = cx_fragw_append(w, row, err);
		}
		if (rc != CX_OK)
		{
			cx_fragw_abort(w);
			break;
		}
		if ((rc = cx_fragw_finish(w, &fi, err)) != CX_OK)
			break;
		cx_fragentry_set_field_ids(&fi, frag);
		rc = mw_commit_fragments(s, schema, &fi, 1, &version, err);
		cx_fragment_info_free(&fi);
	}
	cx_schema_free(frag);
	cx_schema_free(schema);
	return rc;
}

/* Stores bytes with byte `at` flipped under key and runs verify: whether it
 * exits 3 naming key and why.  Puts the bytes back as they were. */
static bool
run_damaged(cx_objstore *s, const char *uri, const char *key, cx_buf *b,
			size_t at, const char *why)
{
	char		args[8192];
	char	   *out = NULL;
	cx_err		err;
	bool		ok;

	b->data[at] ^= 0x40;
	ok = cx_obj_put(s, key, b->data, b->len, CX_PUT_OVERWRITE, &err) == CX_OK;
	b->data[at] ^= 0x40;
	snprintf(args, sizeof(args), "%s verify", uri);
	ok = ok && run_inspect(args, &out) == 3;
	ok = ok && out && strstr(out, "BAD") && strstr(out, key) &&
		strstr(out, why) && strstr(out, "1 bad");
	free(out);
	return cx_obj_put(s, key, b->data, b->len, CX_PUT_OVERWRITE, &err) == CX_OK && ok;
}

CX_TEST(inspect_cli_reads_and_verifies_a_store)
{
	cx_objstore *s;
	cx_err		err;
	char		first[128];
	char		args[8192];
	char	   *out;
	const char *uri = cx_test_uri("/store");

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(build_store(s, first, &err), &err);

	snprintf(args, sizeof(args), "%s versions", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "append") && strstr(out, "         2  "));
	free(out);

	snprintf(args, sizeof(args), "%s manifest 1", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "version      1") && strstr(out, "list<string>") &&
		  strstr(out, first));
	free(out);

	snprintf(args, sizeof(args), "%s fragment %s", uri, first);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "2 rows in 1 row groups") &&
		  strstr(out, "min \"row-0\" max \"row-1\""));
	/* the Parquet view: field ids, logical types, the 3-level list, pages */
	CHECK(out && strstr(out, "id                     BYTE_ARRAY STRING OPTIONAL field_id 1\n") &&
		  strstr(out, "tags                   group LIST OPTIONAL field_id 3\n") &&
		  strstr(out, "      element            BYTE_ARRAY STRING OPTIONAL field_id 1000000003\n") &&
		  strstr(out, "_ctx_commit_ts         INT64 TIMESTAMP(MICROS, UTC) REQUIRED") &&
		  strstr(out, "    page 0 @4 header ") && strstr(out, " ok\n") &&
		  !strstr(out, "MISMATCH"));
	free(out);

	snprintf(args, sizeof(args), "%s rows latest 3", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "\"row-0\" | 40 | [\"red\"]") &&
		  strstr(out, "\"row-1\" | 41 | NULL") && strstr(out, "row-2") &&
		  !strstr(out, "row-3"));
	free(out);

	snprintf(args, sizeof(args), "%s verify", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "4 objects checked, 0 bad"));
	free(out);

	/* After a DROP, statistics of the column are still named, by the field
	 * id the fragment entry records, from the schema history. */
	{
		cx_schema_alter drop = {CX_ALTER_DROP, "n", NULL, {0}};
		uint64_t	version;

		REQUIRE_OK(cx_table_alter_schema(s, &drop, 1, &version, &err), &err);
		snprintf(args, sizeof(args), "%s manifest", uri);
		CHECK(run_inspect(args, &out) == 0);
		CHECK(out && strstr(out, "schema id    2 (1 earlier") &&
			  strstr(out, "    n ") && !strstr(out, "match no schema"));
		free(out);
		/* rows reads the fragments by field id too: tags is column 1 of the
		 * table but 2 of the fragment */
		snprintf(args, sizeof(args), "%s rows latest 1", uri);
		CHECK(run_inspect(args, &out) == 0);
		CHECK(out && strstr(out, "id | tags\n\"row-0\" | [\"red\"]\n"));
		free(out);
	}

	/* Damage a page of the first fragment, then (that undone) its footer:
	 * verify names the fragment and what failed, and exits 3.  The footer
	 * is caught by the checksum its manifest entry holds. */
	{
		cx_buf		b;
		cx_fragr   *r;
		cx_page_info *pages;
		uint32_t	npages;
		size_t		page_byte;

		cx_buf_init(&b);
		REQUIRE_OK(cx_obj_get(s, first, &b, &err), &err);
		REQUIRE_OK(cx_fragr_open(s, first, 0, &r, &err), &err);
		REQUIRE_OK(cx_fragr_chunk_pages(r, 0, 1, &pages, &npages, &err), &err);
		page_byte = pages[0].offset + pages[0].header_len;
		free(pages);
		cx_fragr_close(r);
		CHECK(run_damaged(s, uri, first, &b, page_byte, "page 0: checksum mismatch"));
		CHECK(run_damaged(s, uri, first, &b, b.len - 20, "footer checksum mismatch"));
		cx_buf_free(&b);
	}

	/* Usage errors exit 2; a missing version exits 1 with the reason. */
	CHECK(run_inspect("", &out) == 2);
	free(out);
	snprintf(args, sizeof(args), "%s manifest 99", uri);
	CHECK(run_inspect(args, &out) == 1);
	CHECK(out && strstr(out, "not_found"));
	free(out);
	cx_obj_close(s);
}

/* cx_list_fn keeping the last key listed. */
static bool
remember_key(void *arg, const char *key, uint64_t size)
{
	(void) size;
	snprintf(arg, CX_KEY_MAX + 1, "%s", key);
	return true;
}

/*
 * A MemWAL store: shard "s1" with two sealed generations (key k1 written
 * twice: v 1, then v 2) and one unsealed append (a WAL entry).  rows shows
 * one row per key with the newest value; shard shows the generations;
 * manifest shows the key and the shard; verify checks the shard manifests
 * and the WAL entry too.
 */
CX_TEST(inspect_cli_reads_a_memwal_store)
{
	cx_objstore *s;
	cx_shardwriter *w;
	cx_err		err;
	char		args[8192];
	char	   *out;
	const char *uri = cx_test_uri("/mw");

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(mw_writer(s, "s1", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 1, 2, 1, true, &err), &err);	/* k1, k2 = 1 */
	REQUIRE_OK(mw_put(w, "k", 1, 1, 2, true, &err), &err);	/* k1 = 2 */
	REQUIRE_OK(mw_put(w, "k", 3, 1, 3, false, &err), &err); /* k3 in WAL */

	snprintf(args, sizeof(args), "%s rows", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "\"k1\" | 2 |") && !strstr(out, "\"k1\" | 1 |") &&
		  strstr(out, "\"k2\" | 1 |") && !strstr(out, "\"k3\""));
	free(out);

	snprintf(args, sizeof(args), "%s shard s1", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "epoch        1") && strstr(out, "generations  2") &&
		  strstr(out, "gen 1  inline in version 2") &&
		  strstr(out, "gen 2  inline in version 3") &&
		  strstr(out, "carries      generation 2, "));
	free(out);

	snprintf(args, sizeof(args), "%s manifest", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "key          id (unique)") &&
		  strstr(out, "schema id    1 (0 earlier in the history; last field id 3)") &&
		  strstr(out, "s1  merged through generation 0"));
	free(out);

	snprintf(args, sizeof(args), "%s verify", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, " 0 bad"));
	free(out);

	/* Damaged carried bytes under an intact version CRC (what a reader
	 * of them alone meets) are named by verify, as a damaged fragment. */
	{
		char		key[CX_KEY_MAX + 1];
		cx_buf		b;
		cx_buf		saved;

		cx_shard_manifest_key("s1", 3, key, sizeof(key));
		cx_buf_init(&b);
		cx_buf_init(&saved);
		REQUIRE_OK(cx_obj_get(s, key, &b, &err), &err);
		cx_buf_put(&saved, b.data, b.len);
		b.data[CX_SHARD_CARRIED_AT + 40] ^= 0x01;
		cx_store_u32(b.data + b.len - 4, cx_crc32c(0, b.data, b.len - 4));
		REQUIRE_OK(cx_obj_put(s, key, b.data, b.len, CX_PUT_OVERWRITE, &err), &err);
		snprintf(args, sizeof(args), "%s verify", uri);
		CHECK(run_inspect(args, &out) == 3);
		CHECK(out && strstr(out, "BAD  generation 2 (") &&
			  strstr(out, "listed by shard s1 version 3: ") &&
			  strstr(out, " 1 bad"));
		free(out);
		REQUIRE_OK(cx_obj_put(s, key, saved.data, saved.len, CX_PUT_OVERWRITE,
							  &err), &err);
		cx_buf_free(&b);
		cx_buf_free(&saved);
	}

	/* A damaged WAL entry is named by verify. */
	{
		char		wal[CX_KEY_MAX + 1] = "";
		cx_buf		b;

		REQUIRE_OK(cx_obj_list(s, "_shards/s1/wal/", remember_key, wal, &err), &err);
		REQUIRE(wal[0] != '\0');
		cx_buf_init(&b);
		REQUIRE_OK(cx_obj_get(s, wal, &b, &err), &err);
		b.data[b.len / 2] ^= 0x01;
		REQUIRE_OK(cx_obj_put(s, wal, b.data, b.len, CX_PUT_OVERWRITE, &err), &err);
		cx_buf_free(&b);
		snprintf(args, sizeof(args), "%s verify", uri);
		CHECK(run_inspect(args, &out) == 3);
		CHECK(out && strstr(out, "BAD") && strstr(out, wal));
		free(out);
	}

	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Runs "URI <command>" and returns the exit status; the output in *out. */
static int
inspect_cmd(const char *uri, const char *command, char **out)
{
	char		args[8192];

	snprintf(args, sizeof(args), "%s %s", uri, command);
	return run_inspect(args, out);
}

/* Deletes key, keeping its bytes in saved, so that it can be put back. */
static cx_code
take_away(cx_objstore *s, const char *key, cx_buf *saved, cx_err *err)
{
	if (cx_obj_get(s, key, saved, err) != CX_OK)
		return err->code;
	return cx_obj_delete(s, key, err);
}

static cx_code
put_back(cx_objstore *s, const char *key, const cx_buf *saved, cx_err *err)
{
	return cx_obj_put(s, key, saved->data, saved->len, CX_PUT_OVERWRITE, err);
}

/*
 * A store whose base fragments come from merges (they carry the hidden
 * columns), one with a deletion vector (k1 was rewritten and merged again),
 * and an unmerged generation (k3): every command reads it, and verify finds
 * a deleted base fragment, a deleted generation and a damaged object, each
 * naming the object and the version that lists it.
 */
CX_TEST(inspect_cli_on_merged_fragments_generations_and_deletions)
{
	cx_objstore *s;
	cx_sw_options o;
	cx_shardwriter *w;
	cx_merge_result res;
	cx_manifest *m;
	cx_shard_manifest *sm;
	cx_err		err;
	char		first[CX_KEY_MAX + 1];
	char		gen[CX_KEY_MAX + 1];
	char		cmd[CX_KEY_MAX + 32];
	cx_buf		saved;
	char	   *out;
	const char *uri = cx_test_uri("/merged");

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	/* Generations of their own, so that one can go missing. */
	mw_writer_options(true, &o);
	o.inline_generation_max = 0;
	REQUIRE_OK(cx_sw_open(s, "s1", &o, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 1, 2, 1, true, &err), &err);	/* k1, k2 = 1 */
	REQUIRE_OK(cx_merge_shard(s, "s1", NULL, &res, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 1, 1, 2, true, &err), &err);	/* k1 = 2 */
	REQUIRE_OK(cx_merge_shard(s, "s1", NULL, &res, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 3, 1, 3, true, &err), &err);	/* k3, unmerged */
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 2 && cx_manifest_deleted_count(m, 0) == 1);
	snprintf(first, sizeof(first), "%s", m->fragments[0].path);
	cx_manifest_free(m);
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "s1", 0, &sm, &err), &err);
	REQUIRE(sm != NULL && sm->ngens >= 1);
	snprintf(gen, sizeof(gen), "%s", sm->gens[sm->ngens - 1].fragment.path);
	cx_shard_manifest_free(sm);

	CHECK(inspect_cmd(uri, "versions", &out) == 0);
	CHECK(out && strstr(out, "merge"));
	free(out);
	/* Merged fragments have more statistics than the table has columns. */
	CHECK(inspect_cmd(uri, "manifest", &out) == 0);
	CHECK(out && strstr(out, first) && strstr(out, "1 deleted") &&
		  strstr(out, CX_COL_TOMBSTONE) && strstr(out, "merged through generation 2"));
	free(out);
	snprintf(cmd, sizeof(cmd), "fragment %s", first);
	CHECK(inspect_cmd(uri, cmd, &out) == 0);
	CHECK(out && strstr(out, "2 rows in 1 row groups") && strstr(out, CX_COL_COMMIT_TS));
	free(out);
	CHECK(inspect_cmd(uri, "shard s1", &out) == 0);
	CHECK(out && strstr(out, "gen 3 ") && strstr(out, gen));
	free(out);
	CHECK(inspect_cmd(uri, "rows", &out) == 0);
	CHECK(out && strstr(out, "\"k1\" | 2 |") && !strstr(out, "\"k1\" | 1 |") &&
		  strstr(out, "\"k2\" | 1 |") && strstr(out, "\"k3\" | 3 |"));
	free(out);
	CHECK(inspect_cmd(uri, "verify", &out) == 0);
	CHECK(out && strstr(out, " 0 bad"));
	free(out);

	cx_buf_init(&saved);
	/* A base fragment gone: every version listing it is named, once. */
	REQUIRE_OK(take_away(s, first, &saved, &err), &err);
	CHECK(inspect_cmd(uri, "verify", &out) == 3);
	CHECK(out && strstr(out, first) && strstr(out, "is missing; base version") &&
		  strstr(out, "more versions") && strstr(out, " 1 bad"));
	free(out);
	REQUIRE_OK(put_back(s, first, &saved, &err), &err);

	/* A generation gone: the shard version listing it is named. */
	REQUIRE_OK(take_away(s, gen, &saved, &err), &err);
	CHECK(inspect_cmd(uri, "verify", &out) == 3);
	CHECK(out && strstr(out, gen) && strstr(out, "is missing; shard s1 version") &&
		  strstr(out, "(generation 3)") && strstr(out, " 1 bad"));
	free(out);
	REQUIRE_OK(put_back(s, gen, &saved, &err), &err);

	/* A damaged generation. */
	saved.data[saved.len / 2] ^= 0x10;
	REQUIRE_OK(put_back(s, gen, &saved, &err), &err);
	CHECK(inspect_cmd(uri, "verify", &out) == 3);
	CHECK(out && strstr(out, "BAD") && strstr(out, gen) && strstr(out, " 1 bad"));
	free(out);
	cx_buf_free(&saved);

	/* Nothing at all there: said, and not "0 bad". */
	CHECK(inspect_cmd(cx_test_uri("/nothing-here"), "verify", &out) == 1);
	CHECK(out && strstr(out, "no store at URI") && !strstr(out, "0 bad"));
	free(out);

	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* The manifest command shows a merged TRUNCATE and each fragment's shard. */
CX_TEST(inspect_cli_shows_truncation_and_origin_shard)
{
	cx_objstore *s;
	cx_shardwriter *w;
	cx_merge_result res;
	cx_err		err;
	char	   *out;
	const char *uri = cx_test_uri("/truncated");
	const mw_op ops[] = {{CX_ROW_DELETE, NULL, 0}, {CX_ROW_PUT, "a", 1}};

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(mw_writer(s, "s1", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 1, 2, 1, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "s1", NULL, &res, &err), &err);
	CHECK(inspect_cmd(uri, "manifest", &out) == 0);
	CHECK(out && strstr(out, "truncated    never") &&
		  strstr(out, "from shard s1"));
	free(out);
	REQUIRE_OK(mw_append(w, ops, 2, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "s1", NULL, &res, &err), &err);
	CHECK(inspect_cmd(uri, "manifest", &out) == 0);
	CHECK(out && strstr(out, "truncated    rows committed before 20") &&
		  strstr(out, "fragments    1"));
	free(out);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Key index segments: listed by manifest with what they cover, checked by
 * verify, a damaged one reported. */
CX_TEST(inspect_cli_lists_and_verifies_key_index_segments)
{
	cx_objstore *s;
	cx_shardwriter *w;
	cx_merge_result res;
	cx_keyindex_result ires;
	cx_manifest *m;
	cx_keyindex ix;
	cx_buf		saved;
	char		seg[CX_KEY_MAX + 1];
	char	   *out;
	cx_err		err;
	const char *uri = cx_test_uri("/indexed");

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(mw_writer(s, "s1", true, &w, &err), &err);
	REQUIRE_OK(mw_put(w, "k", 1, 20, 1, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "s1", NULL, &res, &err), &err);
	REQUIRE_OK(cx_keyindex_update(s, 0, NULL, &ires, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	REQUIRE(ix.n == 1);
	snprintf(seg, sizeof(seg), "%s", ix.segs[0].path);
	cx_keyindex_free(&ix);
	CHECK(inspect_cmd(uri, "manifest", &out) == 0);
	CHECK(out && strstr(out, "key index    1 segments") && strstr(out, seg) &&
		  strstr(out, "column id") && strstr(out, "20 entries") &&
		  strstr(out, m->fragments[0].path));
	free(out);
	cx_manifest_free(m);
	CHECK(inspect_cmd(uri, "verify", &out) == 0);
	CHECK(out && strstr(out, " 0 bad"));
	free(out);

	cx_buf_init(&saved);
	REQUIRE_OK(take_away(s, seg, &saved, &err), &err);
	saved.data[saved.len / 3] ^= 0x10;
	REQUIRE_OK(put_back(s, seg, &saved, &err), &err);
	CHECK(inspect_cmd(uri, "verify", &out) == 3);
	CHECK(out && strstr(out, "BAD") && strstr(out, seg) && strstr(out, " 1 bad"));
	free(out);
	REQUIRE_OK(take_away(s, seg, &saved, &err), &err);
	CHECK(inspect_cmd(uri, "verify", &out) == 3);
	CHECK(out && strstr(out, seg) && strstr(out, "is missing; base version"));
	free(out);
	cx_buf_free(&saved);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* Runs "<command> URI" (the command first) and returns the exit status. */
static int
inspect_cmd_first(const char *command, const char *uri, char **out)
{
	char		args[8192];

	snprintf(args, sizeof(args), "%s %s", command, uri);
	return run_inspect(args, out);
}

/* Merges rows <prefix><first> .. of shard "a" into a base fragment. */
static cx_code
merged_fragment(cx_objstore *s, const char *prefix, int first, int n,
				cx_err *err)
{
	cx_shardwriter *w;
	cx_merge_result res;
	cx_code		rc = mw_writer(s, "a", false, &w, err);

	if (rc != CX_OK)
		return rc;
	rc = mw_put(w, prefix, first, n, 7, true, err);
	if (rc == CX_OK)
		rc = cx_merge_shard(s, "a", NULL, &res, err);
	if (rc == CX_OK)
		rc = mw_drain(s, w, err);
	if (rc == CX_OK)
		rc = cx_sw_close(w, false, err);
	else
		(void) cx_sw_close(w, false, err);
	return rc;
}

/*
 * repair prints the keys a broken fragment loses, from the key index: the
 * live ones of an indexed fragment (not those a later merge replaced), and
 * says so when no segment covers the fragment.  The command may come
 * before the URI.
 */
CX_TEST(inspect_cli_repair_prints_the_keys_lost)
{
	cx_objstore *s;
	cx_manifest *m;
	cx_keyindex_options kopt;
	cx_keyindex_result kres;
	cx_buf		saved;
	cx_err		err;
	char	   *out;
	const char *uri = cx_test_uri("/repair-keys");

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(merged_fragment(s, "k", 1, 3, &err), &err);	/* k1 k2 k3 */
	REQUIRE_OK(merged_fragment(s, "k", 3, 1, &err), &err);	/* k3 again */
	cx_keyindex_options_default(&kopt);
	REQUIRE_OK(cx_keyindex_update_table(s, NULL, &kopt, &kres, &err), &err);
	REQUIRE(kres.fragments_covered == 2);
	REQUIRE_OK(merged_fragment(s, "u", 1, 1, &err), &err);	/* not indexed */
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->nfragments == 3);
	cx_buf_init(&saved);
	REQUIRE_OK(take_away(s, m->fragments[0].path, &saved, &err), &err);
	REQUIRE_OK(take_away(s, m->fragments[2].path, &saved, &err), &err);
	cx_buf_free(&saved);

	CHECK(inspect_cmd_first("repair", uri, &out) == 3);
	CHECK(out && strstr(out, "lost key \"k1\"") && strstr(out, "lost key \"k2\""));
	/* k3's row in the first fragment was replaced: it is not lost */
	CHECK(out && strstr(out, "lost key \"k3\"") == NULL);
	CHECK(out && strstr(out, m->fragments[2].path) &&
		  strstr(out, "its keys are unknown: no key-index segment covers it"));
	CHECK(out && strstr(out, "2 of 3 fragments missing or damaged, 3 rows lost"));
	free(out);
	cx_manifest_free(m);
	cx_obj_close(s);
}

/*
 * repair: an intact store needs none; a missing fragment and one whose
 * footer fails its checksum are named with their rows, a dry run changes
 * nothing, --apply commits a "repair" version without them (schema kept),
 * after which there is nothing left to repair; an empty store has nothing
 * to repair.
 */
CX_TEST(inspect_cli_repairs_missing_and_damaged_fragments)
{
	cx_objstore *s;
	cx_manifest *m;
	cx_err		err;
	char		first[128];
	char		second[128];
	cx_buf		saved;
	char	   *out;
	const char *uri = cx_test_uri("/repair");

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(build_store(s, first, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m != NULL && m->nfragments == 2);
	snprintf(second, sizeof(second), "%s",
			 strcmp(m->fragments[0].path, first) == 0 ?
			 m->fragments[1].path : m->fragments[0].path);
	cx_manifest_free(m);

	CHECK(inspect_cmd(uri, "repair", &out) == 0);
	CHECK(out && strstr(out, "base version 2: 2 fragments, none missing or damaged"));
	free(out);

	/* The first fragment gone, the second's footer damaged (its last bytes
	 * before the length and "PAR1"). */
	cx_buf_init(&saved);
	REQUIRE_OK(take_away(s, first, &saved, &err), &err);
	REQUIRE_OK(cx_obj_get(s, second, &saved, &err), &err);
	saved.data[saved.len - 20] ^= 0x40;
	REQUIRE_OK(put_back(s, second, &saved, &err), &err);
	cx_buf_free(&saved);

	CHECK(inspect_cmd(uri, "repair", &out) == 3);
	CHECK(out && strstr(out, first) && strstr(out, second) &&
		  strstr(out, "2 of 2 fragments missing or damaged, 4 rows lost; nothing changed"));
	free(out);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->version == 2 && m->nfragments == 2);
	cx_manifest_free(m);

	CHECK(inspect_cmd(uri, "repair --apply", &out) == 0);
	CHECK(out && strstr(out, "committed base version 3 without 2 fragments: 4 rows lost"));
	free(out);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	CHECK(m->version == 3 && m->nfragments == 0 &&
		  strcmp(m->operation, "repair") == 0 && m->schema != NULL);
	cx_manifest_free(m);
	CHECK(inspect_cmd(uri, "repair", &out) == 0);
	CHECK(out && strstr(out, "base version 3: 0 fragments, none missing"));
	free(out);
	CHECK(inspect_cmd(uri, "repair --force", &out) == 2);
	free(out);
	cx_obj_close(s);

	CHECK(inspect_cmd(cx_test_uri("/repair-empty"), "repair", &out) == 0);
	CHECK(out && strstr(out, "empty store: nothing to repair"));
	free(out);
}

/* The retention record GC puts is checked by verify like every metadata
 * object: intact it passes, a flipped byte is named. */
CX_TEST(inspect_cli_verifies_the_gc_retention_record)
{
	const char *uri = cx_test_uri("/gc_record");
	char		first[128];
	char		key[CX_KEY_MAX + 1];
	cx_objstore *s;
	cx_gc_options o;
	cx_gc_result res;
	cx_buf		b;
	char	   *out;
	cx_err		err;

	REQUIRE(getenv("CX_INSPECT") != NULL);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(build_store(s, first, &err), &err);
	cx_gc_options_default(&o);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	cx_vseq_key(&cx_layout_gc_records, 1, key);
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, key, &b, &err), &err);
	CHECK(inspect_cmd(uri, "verify", &out) == 0);
	CHECK(out && strstr(out, " 0 bad"));
	free(out);
	CHECK(run_damaged(s, uri, key, &b, b.len / 2, "checksum mismatch"));
	cx_buf_free(&b);
	cx_obj_close(s);
}
