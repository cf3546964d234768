/*
 * test_inspect.c — the ctxstore-inspect CLI against a store built here:
 * versions, manifest, fragment, rows, and verify on an intact and on a
 * damaged store.  The Makefile passes the binary's path in CX_INSPECT.
 */
#include <stdlib.h>
#include <sys/wait.h>

#include "cx_commit.h"
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

/* Two appends of two rows each: id (string), n (int64), tags (list<string>). */
static cx_code
build_store(cx_objstore *s, char *first_key, cx_err *err)
{
	cx_schema  *schema = cx_schema_new();
	cx_code		rc = CX_OK;

	if (cx_schema_add(schema, "id", CX_T_STRING, 0, NULL, err) != CX_OK ||
		cx_schema_add(schema, "n", CX_T_INT64, 0, NULL, err) != CX_OK ||
		cx_schema_add(schema, "tags", CX_T_LIST, CX_T_STRING, NULL, err) != CX_OK)
		rc = err->code;
	for (int commit = 0; commit < 2 && rc == CX_OK; commit++)
	{
		char		key[128];
		cx_fragw   *w;
		cx_fragment_info fi;
		uint64_t	version;

		if ((rc = cx_fragment_new_key(key, sizeof(key), err)) != CX_OK ||
			(rc = cx_fragw_open(s, key, schema, NULL, &w, err)) != CX_OK)
			break;
		if (commit == 0)
			strcpy(first_key, key);
		for (int i = 0; i < 2 && rc == CX_OK; i++)
		{
			char		id[16];
			cx_datum	tag = {.isnull = false};
			cx_datum	row[3] = {{.isnull = false}, {.isnull = false}, {.isnull = i == 1}};

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
		rc = cx_commit_append(s, schema, &fi, 1, &version, err);
		cx_fragment_info_free(&fi);
	}
	cx_schema_free(schema);
	return rc;
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
	CHECK(out && strstr(out, "2 rows in 1 row groups") && strstr(out, "nulls 1"));
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

	/* Damage the first fragment's first chunk: verify names it, exits 3. */
	{
		cx_buf		b;

		cx_buf_init(&b);
		REQUIRE_OK(cx_obj_get(s, first, &b, &err), &err);
		b.data[6] ^= 0x40;
		REQUIRE_OK(cx_obj_put(s, first, b.data, b.len, CX_PUT_OVERWRITE, &err), &err);
		cx_buf_free(&b);
	}
	snprintf(args, sizeof(args), "%s verify", uri);
	CHECK(run_inspect(args, &out) == 3);
	CHECK(out && strstr(out, "BAD") && strstr(out, first) && strstr(out, "1 bad"));
	free(out);

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
		  strstr(out, "gen 1 ") && strstr(out, "gen 2 "));
	free(out);

	snprintf(args, sizeof(args), "%s manifest", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, "key          id (unique)") &&
		  strstr(out, "s1  merged through generation 0"));
	free(out);

	snprintf(args, sizeof(args), "%s verify", uri);
	CHECK(run_inspect(args, &out) == 0);
	CHECK(out && strstr(out, " 0 bad"));
	free(out);

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
