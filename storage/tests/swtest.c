/*
 * swtest.c — helpers shared by the MemWAL tests (swtest.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/cx_fragment.h"
#include "format/cx_row_codec.h"
#include "cx_test.h"
#include "swtest.h"

cx_objstore *
sw_store(const char *suffix)
{
	cx_objstore *s = NULL;
	cx_err		err;

	if (cx_objstore_open(cx_test_uri(suffix), NULL, 0, &s, &err) != CX_OK)
	{
		cx_test_fail(__FILE__, __LINE__, err.msg);
		return NULL;
	}
	return s;
}

cx_schema *
sw_schema(void)
{
	cx_schema  *s = cx_schema_new();
	cx_err		err;

	if (s == NULL ||
		cx_schema_add(s, "id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		cx_schema_add(s, "n", CX_T_INT64, 0, NULL, &err) != CX_OK)
	{
		cx_schema_free(s);
		return NULL;
	}
	return s;
}

void
sw_rows(cx_buf *out, const cx_schema *schema, const char *prefix, int from,
		int count)
{
	for (int i = from; i < from + count; i++)
	{
		char		id[64];
		cx_datum	v[2];

		snprintf(id, sizeof(id), "%s%d", prefix, i);
		memset(v, 0, sizeof(v));
		v[0].v.bytes.ptr = (const uint8_t *) id;
		v[0].v.bytes.len = strlen(id);
		v[1].v.i64 = i;
		cx_row_encode(schema, CX_ROW_PUT, v, out);
	}
}

/* Counts the ids of one generation fragment into counts. */
static long
count_fragment(cx_objstore *s, const cx_fragment_info *fi, const char *prefix,
			   int from, int count, int *counts, cx_err *err)
{
	cx_fragr   *r;
	long		rows = 0;
	size_t		plen = strlen(prefix);

	if (cx_fragr_open(s, fi->path, fi->size, &r, err) != CX_OK)
		return -1;
	for (uint32_t g = 0; g < cx_fragr_num_groups(r); g++)
	{
		cx_rowgroup *rg;
		const cx_colvec *ids;

		if (cx_fragr_read_group(r, g, NULL, &rg, err) != CX_OK)
		{
			cx_fragr_close(r);
			return -1;
		}
		ids = cx_rowgroup_column(rg, 0);
		for (uint32_t i = 0; i < cx_rowgroup_rows(rg); i++)
		{
			cx_datum	d;
			char		buf[64];
			int			n;

			cx_colvec_get(ids, i, &d);
			rows++;
			if (d.v.bytes.len >= sizeof(buf) || d.v.bytes.len < plen ||
				memcmp(d.v.bytes.ptr, prefix, plen) != 0)
				continue;
			memcpy(buf, d.v.bytes.ptr, d.v.bytes.len);
			buf[d.v.bytes.len] = '\0';
			n = atoi(buf + plen);
			if (n >= from && n < from + count)
				counts[n - from]++;
		}
		cx_rowgroup_free(rg);
	}
	cx_fragr_close(r);
	return rows;
}

long
sw_count_ids(cx_objstore *s, const char *shard_id, const char *prefix,
			 int from, int count, int *counts)
{
	cx_shard_manifest *m;
	cx_err		err;
	long		total = 0;

	memset(counts, 0, sizeof(int) * (size_t) count);
	if (cx_shard_manifest_load_latest(s, shard_id, 0, &m, &err) != CX_OK)
	{
		cx_test_fail(__FILE__, __LINE__, err.msg);
		return -1;
	}
	for (uint32_t i = 0; m != NULL && i < m->ngens; i++)
	{
		cx_objstore *in;
		long		n = -1;

		if (cx_generation_open(s, m, &m->gens[i], &in, &err) == CX_OK)
		{
			n = count_fragment(in, &m->gens[i].fragment, prefix, from, count,
							   counts, &err);
			cx_generation_done(s, in);
		}

		if (n < 0)
		{
			cx_test_fail(__FILE__, __LINE__, err.msg);
			total = -1;
			break;
		}
		total += n;
	}
	cx_shard_manifest_free(m);
	return total;
}

int
sw_all_once(const int *counts, int n, const char *what)
{
	for (int i = 0; i < n; i++)
		if (counts[i] != 1)
		{
			char		msg[160];

			snprintf(msg, sizeof(msg), "%s: row %d present %d times, expected once",
					 what, i, counts[i]);
			cx_test_fail(__FILE__, __LINE__, msg);
			return 0;
		}
	return 1;
}

/* --------------------------------------------------------------------------
 * The wrapping store
 * -------------------------------------------------------------------------- */

/* The fault for the next put or upload of key, counted down. */
static sw_fault
take_fault(sw_wrap *w, const char *key)
{
	if (w->faults == 0 || (w->match != NULL && strstr(key, w->match) == NULL))
		return SW_FAULT_NONE;
	w->faults--;
	return w->fault;
}

/* Applies a put that timed out earlier, if any. */
static void
land_late_put(sw_wrap *w)
{
	cx_err		ignored;

	if (w->late_key == NULL)
		return;
	cx_obj_put(w->inner, w->late_key, w->late.data, w->late.len,
			   CX_PUT_IF_ABSENT, &ignored);
	free(w->late_key);
	w->late_key = NULL;
	cx_buf_free(&w->late);
}

static cx_code
keep_late_put(sw_wrap *w, const char *key, const void *data, size_t len,
			  cx_err *err)
{
	free(w->late_key);
	cx_buf_free(&w->late);
	w->late_key = cx_strdup(key);
	cx_buf_put(&w->late, data, len);
	return cx_err_set(err, CX_ERR_TIMEOUT, "injected timeout (applied later)");
}

/* What the caller hears after the object landed (or not) under fault. */
static cx_code
fault_after(sw_wrap *w, sw_fault fault, cx_code rc, cx_err *err)
{
	if (rc != CX_OK || fault == SW_FAULT_NONE)
		return rc;
	if (fault == SW_FAULT_LAND_THEN_EXISTS)
		return cx_err_set(err, CX_ERR_EXISTS, "object already exists (injected)");
	if (fault == SW_FAULT_LAND_THEN_IO_GET_FAILS)
		w->get_failures = 1;
	return cx_err_set(err, CX_ERR_IO, "injected failure after landing");
}

static cx_code
wrap_put(cx_objstore *s, const char *key, const void *data, size_t len,
		 cx_put_mode mode, cx_err *err)
{
	sw_wrap    *w = (sw_wrap *) s;
	sw_fault	fault;

	if (w->before_put != NULL)
		w->before_put(w->arg, key);
	fault = take_fault(w, key);
	if (fault == SW_FAULT_IO_LANDS_LATE)
		return keep_late_put(w, key, data, len, err);
	land_late_put(w);
	if (fault == SW_FAULT_IO_GET_FAILS)
		w->get_failures = 1;
	if (fault == SW_FAULT_IO_NOT_LANDED || fault == SW_FAULT_IO_GET_FAILS)
		return cx_err_set(err, CX_ERR_IO, "injected failure before landing");
	return fault_after(w, fault, cx_obj_put(w->inner, key, data, len, mode, err),
					   err);
}

static cx_code
wrap_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		 cx_buf *out, cx_err *err)
{
	sw_wrap    *w = (sw_wrap *) s;

	if (w->get_failures > 0)
	{
		w->get_failures--;
		return cx_err_set(err, CX_ERR_IO, "injected read failure");
	}
	return cx_obj_get_range(w->inner, key, offset, len, out, err);
}

static cx_code
wrap_head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
		  cx_err *err)
{
	cx_objstore *inner = ((sw_wrap *) s)->inner;

	if (mtime_us != NULL)
		return cx_obj_mtime(inner, key, mtime_us, err);
	return cx_obj_head(inner, key, size, err);
}

static cx_code
wrap_list(cx_objstore *s, const char *prefix, cx_list_entry_fn fn, void *arg,
		  cx_err *err)
{
	return cx_obj_list_entries(((sw_wrap *) s)->inner, prefix, fn, arg, err);
}

static cx_code
wrap_del(cx_objstore *s, const char *key, cx_err *err)
{
	return cx_obj_delete(((sw_wrap *) s)->inner, key, err);
}

/* An upload of the wrapper forwards to one of the inner store; faults
 * apply when it is finished. */
typedef struct wrap_upload
{
	cx_upload	base;
	cx_upload  *inner;
} wrap_upload;

static cx_code
wrap_upload_begin(cx_objstore *s, const char *key, cx_put_mode mode,
				  cx_upload **up, cx_err *err)
{
	wrap_upload *u = calloc(1, sizeof(wrap_upload));

	if (u == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	if (cx_obj_upload_begin(((sw_wrap *) s)->inner, key, mode, &u->inner,
							err) != CX_OK)
	{
		free(u);
		return err->code;
	}
	u->base.store = s;
	snprintf(u->base.key, sizeof(u->base.key), "%s", key);
	u->base.mode = mode;
	*up = &u->base;
	return CX_OK;
}

static cx_code
wrap_upload_write(cx_upload *up, const void *data, size_t len, cx_err *err)
{
	wrap_upload *u = (wrap_upload *) up;
	cx_code		rc = cx_obj_upload_write(u->inner, data, len, err);

	u->base.written = u->inner->written;
	return rc;
}

static cx_code
wrap_upload_finish(cx_upload *up, cx_err *err)
{
	wrap_upload *u = (wrap_upload *) up;
	sw_wrap    *w = (sw_wrap *) up->store;
	sw_fault	fault = take_fault(w, up->key);
	cx_code		rc = cx_obj_upload_finish(u->inner, err);

	free(u);
	return fault_after(w, fault, rc, err);
}

static void
wrap_upload_abort(cx_upload *up)
{
	wrap_upload *u = (wrap_upload *) up;

	cx_obj_upload_abort(u->inner);
	free(u);
}

static void
wrap_close(cx_objstore *s)
{
	sw_wrap    *w = (sw_wrap *) s;

	cx_obj_close(w->inner);
	free(w->late_key);
	cx_buf_free(&w->late);
	free(w->base.uri);
	free(w);
}

static const cx_objstore_ops wrap_ops = {
	.put = wrap_put,
	.get = wrap_get,
	.head = wrap_head,
	.list = wrap_list,
	.del = wrap_del,
	.upload_begin = wrap_upload_begin,
	.upload_write = wrap_upload_write,
	.upload_finish = wrap_upload_finish,
	.upload_abort = wrap_upload_abort,
	.close = wrap_close,
};

sw_wrap *
sw_wrap_open(const char *suffix)
{
	sw_wrap    *w = calloc(1, sizeof(sw_wrap));

	if (w == NULL)
		return NULL;
	w->inner = sw_store(suffix);
	if (w->inner == NULL)
	{
		free(w);
		return NULL;
	}
	cx_buf_init(&w->late);
	w->base.ops = &wrap_ops;
	w->base.uri = cx_strdup(cx_test_uri(suffix));
	return w;
}

void
sw_wrap_arm(sw_wrap *w, const char *match, sw_fault fault, int faults)
{
	w->match = match;
	w->fault = fault;
	w->faults = faults;
}

/* ---- GC racing a probe ---- */

static const cx_objstore_ops *race_real_ops;
static cx_objstore_ops race_ops;
static const char *race_key;
static const char *const *race_deletes;
static int	race_ndeletes;

static cx_code
race_head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
		  cx_err *err)
{
	if (race_key != NULL && strcmp(key, race_key) == 0)
	{
		race_key = NULL;
		for (int i = 0; i < race_ndeletes; i++)
			(void) race_real_ops->del(s, race_deletes[i], err);
	}
	return race_real_ops->head(s, key, size, mtime_us, err);
}

void
sw_gc_race(cx_objstore *s, const char *key, const char *const *deletes, int n)
{
	race_real_ops = s->ops;
	race_ops = *s->ops;
	race_ops.head = race_head;
	race_key = key;
	race_deletes = deletes;
	race_ndeletes = n;
	s->ops = &race_ops;
}

void
sw_gc_race_end(cx_objstore *s)
{
	s->ops = race_real_ops;
	race_key = NULL;
}
