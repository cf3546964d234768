/*
 * test_thread_cache.c — what a thread keeps between engine calls
 * (util/cx_thread_cache.h) and what rides on it: a thread's slots are its
 * own and are freed when it exits; the schema JSON memos give each schema
 * its own conversion, in both directions, whatever was converted before;
 * fragment readers open at the same time in one thread, which take turns
 * with the thread's spare decompression context, each read their own
 * fragment; a thread keeps one spare of a kind, and a fragment writer that
 * takes the spare compression context writes what a new context writes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_fragment.h"
#include "format/cx_parquet_schema.h"
#include "format/cx_schema.h"
#include "objstore/cx_objstore.h"
#include "util/cx_thread_cache.h"
#include "cx_test.h"

static int	freed_values;

static void
count_free(void *p)
{
	freed_values += *(int *) p;
	free(p);
}

/* Fills the calling thread's schema memo slot with a value of 1 that is
 * counted when freed; returns the slot seen. */
static void *
fill_slot(void *arg)
{
	cx_thread_cache *slot = cx_thread_cache_get(CX_THREAD_ZSTD_DCTX);
	int		   *one = malloc(sizeof(int));

	(void) arg;
	if (slot == NULL || one == NULL)
	{
		free(one);
		return NULL;
	}
	*one = 1;
	cx_thread_cache_clear(slot);
	slot->p = one;
	slot->free_fn = count_free;
	return slot;
}

CX_TEST(thread_cache_slots_are_per_thread_and_freed_at_exit)
{
	cx_thread_cache *mine = cx_thread_cache_get(CX_THREAD_ZSTD_DCTX);
	void	   *before = mine != NULL ? mine->p : NULL;
	pthread_t	t;
	void	   *theirs = NULL;

	REQUIRE(mine != NULL);
	freed_values = 0;
	REQUIRE(pthread_create(&t, NULL, fill_slot, NULL) == 0);
	REQUIRE(pthread_join(t, &theirs) == 0);
	CHECK(theirs != NULL && theirs != (void *) mine);
	CHECK(freed_values == 1);	/* the thread's exit freed its value */
	CHECK(mine->p == before);	/* and left this thread's slot alone */
	CHECK(cx_thread_cache_get(CX_THREAD_ZSTD_DCTX) == mine);
}

/* Two columns; `required` and `ext_type` of the second as given. */
static cx_schema *
two_columns(bool required, const char *ext_type)
{
	cx_schema  *s = cx_schema_new();
	cx_err		err;

	if (s == NULL ||
		cx_schema_add(s, "id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		cx_schema_add(s, "v", ext_type ? CX_T_EXTERNAL : CX_T_INT64, 0,
					  ext_type, &err) != CX_OK)
	{
		cx_schema_free(s);
		return NULL;
	}
	s->columns[1].required = required;
	return s;
}

static bool
same_schema(const cx_schema *a, const cx_schema *b)
{
	if (a == NULL || b == NULL || !cx_schema_equal(a, b))
		return false;
	for (uint32_t c = 0; c < a->ncolumns; c++)
		if (a->columns[c].required != b->columns[c].required)
			return false;
	return true;
}

/* Whether json decodes to exactly s. */
static bool
decodes_to(const char *json, const cx_schema *s)
{
	const char *why;
	cx_schema  *got = cx_pq_schema_from_json(json, &why);
	bool		ok = same_schema(got, s);

	cx_schema_free(got);
	return ok;
}

CX_TEST(pq_schema_json_memos_give_each_schema_its_own_conversion)
{
	cx_schema  *plain = two_columns(false, NULL);
	cx_schema  *required = two_columns(true, NULL);
	cx_schema  *external = two_columns(false, "inet");
	cx_schema  *all[] = {plain, required, external, plain, external, required};
	char	   *first[3] = {0};
	const char *why;

	REQUIRE(plain != NULL && required != NULL && external != NULL);
	for (int i = 0; i < 6; i++)
	{
		char	   *json = cx_pq_schema_json(all[i]);

		REQUIRE(json != NULL);
		CHECK(decodes_to(json, all[i]));
		CHECK(decodes_to(json, all[i]));	/* the memo's answer, a copy */
		if (i < 3)
			first[i] = json;
		else
		{
			CHECK(strcmp(json, first[i == 3 ? 0 : i == 4 ? 2 : 1]) == 0);
			free(json);
		}
	}
	/* Schemas that differ only in what cx_schema_equal() ignores still get
	 * their own JSON. */
	CHECK(strcmp(first[0], first[1]) != 0);
	/* A memo never lets malformed JSON through after a good one. */
	CHECK(cx_pq_schema_from_json("[{\"name\": \"id\"}]", &why) == NULL && why != NULL);
	CHECK(decodes_to(first[0], plain));
	for (int i = 0; i < 3; i++)
		free(first[i]);
	cx_schema_free(plain);
	cx_schema_free(required);
	cx_schema_free(external);
}

static cx_code
write_ints(cx_objstore *s, const char *key, const cx_schema *schema,
		   int64_t base, uint32_t nrows, cx_fragment_info *info, cx_err *err)
{
	cx_fragw_options opt;
	cx_fragw   *w;
	cx_datum	vals[2] = {0};

	cx_fragw_options_default(&opt);
	if (cx_fragw_open(s, key, schema, &opt, &w, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < nrows; i++)
	{
		vals[0].v.i64 = base + i;
		vals[1].v.i64 = -(base + i);
		if (cx_fragw_append(w, vals, err) != CX_OK)
		{
			cx_fragw_abort(w);
			return err->code;
		}
	}
	return cx_fragw_finish(w, info, err);
}

/* Whether r's one row group holds base + i, -(base + i) in row i. */
static bool
reads_ints(cx_fragr *r, int64_t base, uint32_t nrows)
{
	cx_rowgroup *rg;
	cx_err		err;
	bool		ok;

	if (cx_fragr_read_group(r, 0, NULL, &rg, &err) != CX_OK)
		return false;
	ok = cx_rowgroup_rows(rg) == nrows;
	for (uint32_t i = 0; ok && i < nrows; i++)
	{
		cx_datum	a;
		cx_datum	b;

		cx_colvec_get(cx_rowgroup_column(rg, 0), i, &a);
		cx_colvec_get(cx_rowgroup_column(rg, 1), i, &b);
		ok = !a.isnull && !b.isnull && a.v.i64 == base + i && b.v.i64 == -(base + i);
	}
	cx_rowgroup_free(rg);
	return ok;
}

CX_TEST(fragment_readers_open_together_in_one_thread_read_their_own)
{
	cx_objstore *s = NULL;
	cx_schema  *schema = cx_schema_new();
	cx_fragment_info info[3];
	cx_fragr   *r[3] = {0};
	cx_err		err;

	memset(info, 0, sizeof(info));
	REQUIRE(schema != NULL);
	CHECK_CODE(cx_schema_add(schema, "a", CX_T_INT64, 0, NULL, &err), CX_OK);
	CHECK_CODE(cx_schema_add(schema, "b", CX_T_INT64, 0, NULL, &err), CX_OK);
	CHECK_CODE(cx_objstore_open(cx_test_uri("/tc"), NULL, 0, &s, &err), CX_OK);
	REQUIRE(s != NULL);
	for (int i = 0; i < 3; i++)
		CHECK_CODE(write_ints(s, i == 0 ? "f0" : i == 1 ? "f1" : "f2", schema,
							  1000 * i, 5000 + i, &info[i], &err), CX_OK);
	CHECK_CODE(cx_fragr_open_entry(s, &info[0], &r[0], &err), CX_OK);
	CHECK_CODE(cx_fragr_open_entry(s, &info[1], &r[1], &err), CX_OK);
	REQUIRE(r[0] != NULL && r[1] != NULL);
	CHECK(reads_ints(r[1], 1000, 5001));
	CHECK(reads_ints(r[0], 0, 5000));
	cx_fragr_close(r[0]);		/* its context becomes the spare ... */
	CHECK_CODE(cx_fragr_open_entry(s, &info[2], &r[2], &err), CX_OK);	/* ... r[2]'s */
	REQUIRE(r[2] != NULL);
	CHECK(reads_ints(r[1], 1000, 5001));
	CHECK(reads_ints(r[2], 2000, 5002));
	cx_fragr_close(r[1]);
	cx_fragr_close(r[2]);
	for (int i = 0; i < 3; i++)
		cx_fragment_info_free(&info[i]);
	cx_schema_free(schema);
	cx_obj_close(s);
}

CX_TEST(thread_spare_is_kept_once_and_taken_once)
{
	int		   *a = malloc(sizeof(int));
	int		   *b = malloc(sizeof(int));

	REQUIRE(a != NULL && b != NULL);
	*a = *b = 0;
	cx_thread_cache_clear(cx_thread_cache_get(CX_THREAD_ZSTD_CCTX));
	CHECK(cx_thread_spare_take(CX_THREAD_ZSTD_CCTX) == NULL);
	CHECK(cx_thread_spare_give(CX_THREAD_ZSTD_CCTX, a, count_free));
	CHECK(!cx_thread_spare_give(CX_THREAD_ZSTD_CCTX, b, count_free));	/* b stays ours */
	CHECK(cx_thread_spare_take(CX_THREAD_ZSTD_CCTX) == a);
	CHECK(cx_thread_spare_take(CX_THREAD_ZSTD_CCTX) == NULL);
	free(a);
	free(b);
}

/* The bytes of the fragment at key: 500 rows of two columns, at level. */
static cx_code
write_at_level(cx_objstore *s, const char *key, const cx_schema *schema,
			   int level, cx_buf *bytes, cx_err *err)
{
	cx_fragw_options opt;
	cx_fragw   *w;
	cx_datum	vals[2] = {0};
	cx_fragment_info info;

	memset(&info, 0, sizeof(info));
	cx_fragw_options_default(&opt);
	opt.compression_level = level;
	if (cx_fragw_open(s, key, schema, &opt, &w, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < 500; i++)
	{
		vals[0].v.i64 = i % 7;
		vals[1].v.i64 = (int64_t) i * i;
		if (cx_fragw_append(w, vals, err) != CX_OK)
		{
			cx_fragw_abort(w);
			return err->code;
		}
	}
	if (cx_fragw_finish(w, &info, err) != CX_OK)
		return err->code;
	cx_fragment_info_free(&info);
	return cx_obj_get(s, key, bytes, err);
}

/* A writer that takes the spare compression context a writer at another
 * level gave back writes the same bytes as one with a new context. */
CX_TEST(fragment_writers_reusing_a_context_write_what_a_new_one_writes)
{
	cx_objstore *s = NULL;
	cx_schema  *schema = cx_schema_new();
	cx_buf		fresh;
	cx_buf		other;
	cx_buf		reused;
	cx_err		err;

	cx_buf_init(&fresh);
	cx_buf_init(&other);
	cx_buf_init(&reused);
	REQUIRE(schema != NULL);
	CHECK_CODE(cx_schema_add(schema, "a", CX_T_INT64, 0, NULL, &err), CX_OK);
	CHECK_CODE(cx_schema_add(schema, "b", CX_T_INT64, 0, NULL, &err), CX_OK);
	CHECK_CODE(cx_objstore_open(cx_test_uri("/tcz"), NULL, 0, &s, &err), CX_OK);
	REQUIRE(s != NULL);
	cx_thread_cache_clear(cx_thread_cache_get(CX_THREAD_ZSTD_CCTX));
	CHECK_CODE(write_at_level(s, "fresh", schema, 1, &fresh, &err), CX_OK);
	cx_thread_cache_clear(cx_thread_cache_get(CX_THREAD_ZSTD_CCTX));
	CHECK_CODE(write_at_level(s, "other", schema, 9, &other, &err), CX_OK);
	CHECK(cx_thread_cache_get(CX_THREAD_ZSTD_CCTX)->p != NULL);	/* its spare */
	CHECK_CODE(write_at_level(s, "reused", schema, 1, &reused, &err), CX_OK);
	CHECK(fresh.len > 0 && fresh.len == reused.len &&
		  memcmp(fresh.data, reused.data, fresh.len) == 0);
	CHECK(other.len != fresh.len || memcmp(other.data, fresh.data, fresh.len) != 0);
	cx_buf_free(&fresh);
	cx_buf_free(&other);
	cx_buf_free(&reused);
	cx_schema_free(schema);
	cx_obj_close(s);
}
