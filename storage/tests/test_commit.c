/*
 * test_commit.c — the optimistic commit protocol: gap-free versions, lost
 * races, concurrent committers, schema checks and ambiguous put outcomes.
 *
 * Ambiguous outcomes are produced by "faulty", a cx_objstore that forwards to
 * a real local store but can be told to land a manifest put and still report
 * an error, or to fail it without landing it.
 */
#include <pthread.h>
#include <stdlib.h>

#include "table/cx_commit.h"
#include "cx_test.h"
#include "mw_util.h"

/* --------------------------------------------------------------------------
 * The fault-injecting store
 * -------------------------------------------------------------------------- */

typedef enum put_fault
{
	FAULT_NONE,
	FAULT_LAND_THEN_IO,			/* the object lands, the caller sees IO */
	FAULT_LAND_THEN_EXISTS,		/* as a backend that retried a landed put */
	FAULT_IO_NOT_LANDED			/* nothing lands, the caller sees IO */
} put_fault;

typedef struct faulty
{
	cx_objstore base;
	cx_objstore *inner;
	put_fault	fault;			/* applied to manifest puts ... */
	int			faults_left;	/* ... this many times */
	int			manifest_get_failures;	/* manifest GETs that fail with IO */
	bool		fail_hint;		/* every put of the hint fails */
} faulty;

static bool
is_manifest(const char *key)
{
	return strncmp(key, CX_VERSIONS_PREFIX, strlen(CX_VERSIONS_PREFIX)) == 0;
}

static cx_code
faulty_put(cx_objstore *s, const char *key, const void *data, size_t len,
		   cx_put_mode mode, cx_err *err)
{
	faulty	   *f = (faulty *) s;
	put_fault	fault = FAULT_NONE;
	cx_code		rc;

	if (f->fail_hint && strcmp(key, CX_LATEST_HINT_KEY) == 0)
		return cx_err_set(err, CX_ERR_IO, "injected hint failure");
	if (is_manifest(key) && f->faults_left > 0)
	{
		f->faults_left--;
		fault = f->fault;
	}
	if (fault == FAULT_IO_NOT_LANDED)
		return cx_err_set(err, CX_ERR_IO, "injected failure before landing");
	rc = cx_obj_put(f->inner, key, data, len, mode, err);
	if (rc != CX_OK || fault == FAULT_NONE)
		return rc;
	if (fault == FAULT_LAND_THEN_EXISTS)
		return cx_err_set(err, CX_ERR_EXISTS, "injected: exists (our own retry)");
	return cx_err_set(err, CX_ERR_IO, "injected failure after landing");
}

static cx_code
faulty_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		   cx_buf *out, cx_err *err)
{
	faulty	   *f = (faulty *) s;

	if (is_manifest(key) && f->manifest_get_failures > 0)
	{
		f->manifest_get_failures--;
		return cx_err_set(err, CX_ERR_IO, "injected read failure");
	}
	return cx_obj_get_range(f->inner, key, offset, len, out, err);
}

static cx_code
faulty_head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
			cx_err *err)
{
	(void) mtime_us;			/* the commit protocol never asks */
	return cx_obj_head(((faulty *) s)->inner, key, size, err);
}

static cx_code
faulty_list(cx_objstore *s, const char *prefix, cx_list_entry_fn fn, void *arg,
			cx_err *err)
{
	return cx_obj_list_entries(((faulty *) s)->inner, prefix, fn, arg, err);
}

static cx_code
faulty_del(cx_objstore *s, const char *key, cx_err *err)
{
	return cx_obj_delete(((faulty *) s)->inner, key, err);
}

static void
faulty_close(cx_objstore *s)
{
	faulty	   *f = (faulty *) s;

	cx_obj_close(f->inner);
	free(f->base.uri);
	free(f);
}

/* Manifests are never streamed, so the upload entry points stay empty. */
static const cx_objstore_ops faulty_ops = {
	.put = faulty_put,
	.get = faulty_get,
	.head = faulty_head,
	.list = faulty_list,
	.del = faulty_del,
	.close = faulty_close,
};

static cx_code
faulty_open(const char *uri, faulty **out, cx_err *err)
{
	faulty	   *f = calloc(1, sizeof(faulty));

	if (f == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "oom");
	if (cx_objstore_open(uri, NULL, 0, &f->inner, err) != CX_OK)
	{
		free(f);
		return err->code;
	}
	f->base.ops = &faulty_ops;
	f->base.uri = cx_strdup(uri);
	*out = f;
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Helpers
 * -------------------------------------------------------------------------- */

static cx_schema *
schema_of(const char *second_name, cx_type second_type)
{
	cx_schema  *s = cx_schema_new();
	cx_err		err;

	if (s == NULL ||
		cx_schema_add(s, "id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		(second_name != NULL &&
		 cx_schema_add(s, second_name, second_type, 0, NULL, &err) != CX_OK))
	{
		cx_schema_free(s);
		return NULL;
	}
	return s;
}

static cx_schema *
std_schema(void)
{
	return schema_of("n", CX_T_INT64);
}

/* A fragment description named after tag (the file need not exist: commits
 * only record it).  Caller frees with cx_fragment_info_free. */
static void
make_fragment(cx_fragment_info *fi, const char *tag, uint32_t ncolumns)
{
	char		path[128];

	snprintf(path, sizeof(path), "data/%s.parquet", tag);
	memset(fi, 0, sizeof(*fi));
	fi->path = cx_strdup(path);
	fi->size = 4096;
	fi->rows = 10;
	fi->footer_offset = 4000;
	fi->footer_len = 96;
	fi->ncolumns = ncolumns;
	fi->stats = calloc(ncolumns, sizeof(cx_colstats));
	for (uint32_t c = 0; c < ncolumns; c++)
		fi->stats[c].value_count = 10;
}

/* Appends one fragment called tag with the standard schema. */
static cx_code
append_one(cx_objstore *s, const char *tag, uint64_t *version, cx_err *err)
{
	cx_schema  *schema = std_schema();
	cx_fragment_info fi;
	cx_code		rc;

	if (schema == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "oom");
	make_fragment(&fi, tag, schema->ncolumns);
	rc = mw_commit_fragments(s, schema, &fi, 1, version, err);
	cx_fragment_info_free(&fi);
	cx_schema_free(schema);
	return rc;
}

static int
count_fragment(const cx_manifest *m, const char *tag)
{
	char		path[128];
	int			n = 0;

	snprintf(path, sizeof(path), "data/%s.parquet", tag);
	for (uint32_t i = 0; i < m->nfragments; i++)
		n += strcmp(m->fragments[i].path, path) == 0;
	return n;
}

typedef struct version_list
{
	uint64_t	v[1024];
	int			n;
} version_list;

static bool
collect_version(void *arg, uint64_t version)
{
	version_list *l = arg;

	if (l->n < 1024)
		l->v[l->n] = version;
	l->n++;
	return true;
}

/* Whether the versions present are exactly 1..n. */
static bool
versions_are_1_to(cx_objstore *s, int n)
{
	version_list l = {.n = 0};
	cx_err		err;

	if (cx_manifest_list_versions(s, collect_version, &l, &err) != CX_OK ||
		l.n != n)
		return false;
	for (int i = 0; i < n; i++)
		if (l.v[i] != (uint64_t) (i + 1))
			return false;
	return true;
}

/* --------------------------------------------------------------------------
 * Sequential commits
 * -------------------------------------------------------------------------- */

CX_TEST(commit_first_append_sets_schema_then_accumulates)
{
	cx_objstore *s;
	cx_manifest *m1 = NULL;
	cx_manifest *m2 = NULL;
	cx_schema  *schema = std_schema();
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE(schema != NULL);
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(append_one(s, "a", &v, &err), &err);
	CHECK(v == 1);
	REQUIRE_OK(append_one(s, "b", &v, &err), &err);
	CHECK(v == 2);
	REQUIRE_OK(cx_manifest_load(s, 1, &m1, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m2, &err), &err);
	CHECK(m2->version == 2);
	CHECK(m1->schema && cx_schema_equal(m1->schema, schema));
	CHECK(m2->schema && cx_schema_equal(m2->schema, schema));
	CHECK(strcmp(m2->operation, "append") == 0);
	CHECK(m1->nfragments == 1 && count_fragment(m1, "a") == 1);
	CHECK(m2->nfragments == 2 && count_fragment(m2, "a") == 1 &&
		  count_fragment(m2, "b") == 1);
	CHECK(cx_manifest_rows(m2) == 20);
	CHECK(memcmp(m1->commit_id, m2->commit_id, 16) != 0);
	CHECK(m2->committed_at_us > m1->committed_at_us);
	CHECK(versions_are_1_to(s, 2));
	cx_manifest_free(m1);
	cx_manifest_free(m2);
	cx_schema_free(schema);
	cx_obj_close(s);
}

CX_TEST(commit_writes_the_latest_hint)
{
	cx_objstore *s;
	cx_buf		b;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(append_one(s, i == 0 ? "x" : i == 1 ? "y" : "z", &v, &err), &err);
	cx_buf_init(&b);
	REQUIRE_OK(cx_obj_get(s, CX_LATEST_HINT_KEY, &b, &err), &err);
	CHECK(b.len == 16 && cx_load_u64(b.data + 4) == 3);
	cx_buf_free(&b);
	/* and discovery then needs no listing */
	memset(&s->stats, 0, sizeof(s->stats));
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 3 && s->stats.lists == 0);
	cx_obj_close(s);
}

CX_TEST(commit_old_versions_stay_readable)
{
	cx_objstore *s;
	uint64_t	v = 0;
	char		tag[16];
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	for (int i = 1; i <= 5; i++)
	{
		snprintf(tag, sizeof(tag), "f%d", i);
		REQUIRE_OK(append_one(s, tag, &v, &err), &err);
	}
	for (uint64_t ver = 1; ver <= 5; ver++)
	{
		cx_manifest *m = NULL;

		REQUIRE_OK(cx_manifest_load(s, ver, &m, &err), &err);
		CHECK(m->version == ver && m->nfragments == ver);
		snprintf(tag, sizeof(tag), "f%d", (int) ver);
		CHECK(count_fragment(m, tag) == 1);
		cx_manifest_free(m);
	}
	cx_obj_close(s);
}

CX_TEST(commit_time_never_goes_backwards)
{
	cx_objstore *s;
	cx_manifest *m = cx_manifest_new();
	cx_manifest *m2 = NULL;
	cx_buf		b;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE(m != NULL);
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	/* version 1 from a committer whose clock runs a day ahead */
	m->version = 1;
	m->committed_at_us = 4102444800000000LL;	/* 2100-01-01 */
	cx_buf_init(&b);
	REQUIRE_OK(cx_manifest_encode(m, &b, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "_versions/00000000000000000001.manifest", b.data,
						  b.len, CX_PUT_IF_ABSENT, &err), &err);
	cx_buf_free(&b);
	REQUIRE_OK(append_one(s, "a", &v, &err), &err);
	REQUIRE_OK(cx_manifest_load(s, 2, &m2, &err), &err);
	CHECK(m2->committed_at_us == m->committed_at_us + 1);
	cx_manifest_free(m);
	cx_manifest_free(m2);
	cx_obj_close(s);
}

CX_TEST(commit_after_old_versions_were_collected)
{
	cx_objstore *s;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	for (int i = 0; i < 4; i++)
		REQUIRE_OK(append_one(s, i % 2 ? "odd" : "even", &v, &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "_versions/00000000000000000001.manifest", &err), &err);
	REQUIRE_OK(cx_obj_delete(s, "_versions/00000000000000000002.manifest", &err), &err);
	REQUIRE_OK(cx_obj_delete(s, CX_LATEST_HINT_KEY, &err), &err);
	REQUIRE_OK(append_one(s, "later", &v, &err), &err);
	CHECK(v == 5);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Schema checks
 * -------------------------------------------------------------------------- */

/* Appending with `schema` must be refused, naming `column`, writing nothing. */
static void
check_refused(cx_objstore *s, cx_schema *schema, const char *column)
{
	cx_fragment_info fi;
	uint64_t	v = 0;
	uint64_t	latest = 0;
	cx_err		err;

	REQUIRE(schema != NULL);
	make_fragment(&fi, "bad", schema->ncolumns);
	CHECK_CODE(mw_commit_fragments(s, schema, &fi, 1, &v, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, column) != NULL);
	REQUIRE_OK(cx_manifest_latest_version(s, &latest, &err), &err);
	CHECK(latest == 1);
	CHECK(versions_are_1_to(s, 1));
	cx_fragment_info_free(&fi);
	cx_schema_free(schema);
}

CX_TEST(commit_schema_mismatch_refused_and_nothing_written)
{
	cx_objstore *s;
	cx_schema  *wider;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	REQUIRE_OK(append_one(s, "a", &v, &err), &err);
	check_refused(s, schema_of("n", CX_T_INT32), "\"n\"");	/* type */
	check_refused(s, schema_of("m", CX_T_INT64), "\"m\"");	/* name */
	check_refused(s, schema_of(NULL, CX_T_INT64), "\"n\"");	/* missing */
	wider = std_schema();
	REQUIRE(wider != NULL);
	REQUIRE_OK(cx_schema_add(wider, "extra", CX_T_BOOL, 0, NULL, &err), &err);
	check_refused(s, wider, "\"extra\"");	/* extra */
	cx_obj_close(s);
}

static cx_code
refuse_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	(void) arg;
	(void) base;
	(void) next;
	return cx_err_set(err, CX_ERR_LIMIT, "refused by the caller");
}

CX_TEST(commit_rebase_error_aborts_the_commit)
{
	cx_objstore *s;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &s, &err), &err);
	CHECK_CODE(cx_commit(s, "noop", refuse_rebase, NULL, NULL, &v, &err),
			   CX_ERR_LIMIT);
	CHECK(strcmp(err.msg, "refused by the caller") == 0);
	REQUIRE_OK(cx_manifest_latest_version(s, &v, &err), &err);
	CHECK(v == 0);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Races
 * -------------------------------------------------------------------------- */

/* A rebase that, on its first call, lets a rival commit first: our put of
 * the same version must then lose. */
typedef struct racing
{
	cx_objstore *rival;
	const char *rival_tag;
	uint64_t	rival_version;
	int			calls;
	uint64_t	bases[8];
	bool		rival_every_time;	/* the rival wins every attempt */
	cx_code		rival_rc;
} racing;

static cx_code
racing_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	racing	   *r = arg;
	cx_schema  *schema;
	cx_fragment_info fi;
	cx_code		rc;
	cx_err		rival_err;

	r->bases[r->calls % 8] = base ? base->version : 0;
	if (r->calls++ == 0 || r->rival_every_time)
		r->rival_rc = append_one(r->rival, r->rival_tag, &r->rival_version,
								 &rival_err);
	/* then do what an append does */
	schema = std_schema();
	if (schema == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "oom");
	rc = next->schema ? CX_OK : cx_manifest_set_schema(next, schema, err);
	make_fragment(&fi, "mine", schema->ncolumns);
	if (rc == CX_OK)
		rc = cx_manifest_add_fragment(next, &fi, err);
	cx_fragment_info_free(&fi);
	cx_schema_free(schema);
	return rc;
}

static void
race_once(uint64_t preexisting)
{
	cx_objstore *a;
	cx_objstore *b;
	cx_manifest *m = NULL;
	racing		r = {.rival_tag = "theirs"};
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &a, &err), &err);
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &b, &err), &err);
	for (uint64_t i = 0; i < preexisting; i++)
		REQUIRE_OK(append_one(a, "before", &v, &err), &err);
	r.rival = b;
	REQUIRE_OK(cx_commit(a, "append", racing_rebase, &r, NULL, &v, &err), &err);
	CHECK(r.rival_rc == CX_OK);
	CHECK(r.rival_version == preexisting + 1);	/* the rival won N */
	CHECK(v == preexisting + 2);	/* we landed at N+1 */
	CHECK(r.calls == 2);
	CHECK(r.bases[0] == preexisting && r.bases[1] == preexisting + 1);
	REQUIRE_OK(cx_manifest_load_latest(a, &m, &err), &err);
	REQUIRE(m != NULL);
	CHECK(m->version == preexisting + 2);
	CHECK(count_fragment(m, "mine") == 1 && count_fragment(m, "theirs") == 1);
	CHECK(m->nfragments == preexisting + 2);
	CHECK(versions_are_1_to(a, (int) preexisting + 2));
	cx_manifest_free(m);
	cx_obj_close(a);
	cx_obj_close(b);
}

CX_TEST(commit_lost_race_rebases_onto_winner)
{
	race_once(3);
}

CX_TEST(commit_two_first_writers_both_succeed)
{
	race_once(0);
}

CX_TEST(commit_conflicts_exhausted)
{
	cx_objstore *a;
	cx_objstore *b;
	racing		r = {.rival_tag = "theirs", .rival_every_time = true};
	cx_commit_options o = {.max_attempts = 3, .backoff_max_ms = 1};
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &a, &err), &err);
	REQUIRE_OK(cx_objstore_open(cx_test_uri("/store"), NULL, 0, &b, &err), &err);
	r.rival = b;
	CHECK_CODE(cx_commit(a, "append", racing_rebase, &r, &o, &v, &err),
			   CX_ERR_CONFLICT);
	CHECK(strstr(err.msg, "3 times") != NULL);
	CHECK(r.calls == 3);
	CHECK(versions_are_1_to(a, 3));	/* all three the rival's */
	cx_obj_close(a);
	cx_obj_close(b);
}

#define RACE_THREADS 4
#define RACE_COMMITS 8

typedef struct worker
{
	const char *uri;
	int			id;
	pthread_barrier_t *start;
	cx_code		rc;
	char		msg[CX_ERR_MSG_LEN];
} worker;

static void *
worker_main(void *arg)
{
	worker	   *w = arg;
	cx_objstore *s;
	cx_err		err;
	bool		opened;

	w->rc = cx_objstore_open(w->uri, NULL, 0, &s, &err);
	opened = w->rc == CX_OK;
	pthread_barrier_wait(w->start);
	for (int i = 0; i < RACE_COMMITS && w->rc == CX_OK; i++)
	{
		char		tag[32];
		uint64_t	v;

		snprintf(tag, sizeof(tag), "w%d-%d", w->id, i);
		w->rc = append_one(s, tag, &v, &err);
	}
	if (w->rc != CX_OK)
		snprintf(w->msg, sizeof(w->msg), "%s", err.msg);
	if (opened)
		cx_obj_close(s);
	return NULL;
}

/* Invariants 1 and 11: every commit lands exactly once, gap-free, starting
 * from an empty store that all threads try to initialise at once. */
CX_TEST(commit_threads_race_gap_free)
{
	char		uri[4200];
	worker		w[RACE_THREADS];
	pthread_t	t[RACE_THREADS];
	pthread_barrier_t start;
	cx_objstore *s;
	cx_manifest *m = NULL;
	cx_err		err;

	snprintf(uri, sizeof(uri), "%s", cx_test_uri("/store"));
	pthread_barrier_init(&start, NULL, RACE_THREADS);
	for (int i = 0; i < RACE_THREADS; i++)
	{
		w[i] = (worker) {.uri = uri, .id = i, .start = &start};
		REQUIRE(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
	}
	for (int i = 0; i < RACE_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < RACE_THREADS; i++)
		if (w[i].rc != CX_OK)
			cx_test_fail(__FILE__, __LINE__, w[i].msg);
	REQUIRE_OK(cx_objstore_open(uri, NULL, 0, &s, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m != NULL);
	CHECK(m->version == RACE_THREADS * RACE_COMMITS);
	CHECK(m->nfragments == RACE_THREADS * RACE_COMMITS);
	CHECK(versions_are_1_to(s, RACE_THREADS * RACE_COMMITS));
	for (int i = 0; i < RACE_THREADS; i++)
		for (int j = 0; j < RACE_COMMITS; j++)
		{
			char		tag[32];

			snprintf(tag, sizeof(tag), "w%d-%d", i, j);
			CHECK(count_fragment(m, tag) == 1);
		}
	cx_manifest_free(m);
	cx_obj_close(s);
}

/* --------------------------------------------------------------------------
 * Ambiguous put outcomes
 * -------------------------------------------------------------------------- */

/* One append through a faulty store on top of `before` earlier versions. */
static void
append_with_fault(put_fault fault, int times, uint64_t before,
				  cx_code expect, uint64_t expect_versions)
{
	faulty	   *f;
	cx_manifest *m = NULL;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(faulty_open(cx_test_uri("/store"), &f, &err), &err);
	for (uint64_t i = 0; i < before; i++)
		REQUIRE_OK(append_one(&f->base, "before", &v, &err), &err);
	f->fault = fault;
	f->faults_left = times;
	CHECK_CODE(append_one(&f->base, "mine", &v, &err), expect);
	CHECK(versions_are_1_to(&f->base, (int) expect_versions));
	if (expect == CX_OK)
	{
		CHECK(v == before + 1);
		REQUIRE_OK(cx_manifest_load_latest(&f->base, &m, &err), &err);
		REQUIRE(m != NULL);
		CHECK(count_fragment(m, "mine") == 1);
		cx_manifest_free(m);
	}
	cx_obj_close(&f->base);
}

CX_TEST(commit_ambiguous_put_that_landed_succeeds_once)
{
	append_with_fault(FAULT_LAND_THEN_IO, 1, 0, CX_OK, 1);
}

CX_TEST(commit_ambiguous_put_that_landed_on_top_of_history)
{
	append_with_fault(FAULT_LAND_THEN_IO, 1, 2, CX_OK, 3);
}

CX_TEST(commit_exists_from_our_own_landed_put_succeeds_once)
{
	append_with_fault(FAULT_LAND_THEN_EXISTS, 1, 1, CX_OK, 2);
}

CX_TEST(commit_ambiguous_put_that_did_not_land_is_retried)
{
	append_with_fault(FAULT_IO_NOT_LANDED, 2, 1, CX_OK, 2);
}

CX_TEST(commit_put_that_never_lands_gives_up)
{
	append_with_fault(FAULT_IO_NOT_LANDED, 1000, 1, CX_ERR_IO, 1);
}

CX_TEST(commit_unresolvable_outcome_is_reported)
{
	faulty	   *f;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(faulty_open(cx_test_uri("/store"), &f, &err), &err);
	f->fault = FAULT_LAND_THEN_IO;
	f->faults_left = 1;
	f->manifest_get_failures = 1;	/* the read-back */
	CHECK_CODE(append_one(&f->base, "mine", &v, &err), CX_ERR_IO);
	CHECK(strstr(err.msg, "outcome unknown") != NULL);
	cx_obj_close(&f->base);
}

CX_TEST(commit_survives_hint_write_failure)
{
	faulty	   *f;
	uint64_t	v = 0;
	cx_err		err;

	REQUIRE_OK(faulty_open(cx_test_uri("/store"), &f, &err), &err);
	REQUIRE_OK(append_one(&f->base, "a", &v, &err), &err);
	f->fail_hint = true;
	REQUIRE_OK(append_one(&f->base, "b", &v, &err), &err);
	REQUIRE_OK(append_one(&f->base, "c", &v, &err), &err);
	CHECK(v == 3);
	/* the hint is stuck at 1; discovery probes past it */
	REQUIRE_OK(cx_manifest_latest_version(&f->base, &v, &err), &err);
	CHECK(v == 3);
	cx_obj_close(&f->base);
}
