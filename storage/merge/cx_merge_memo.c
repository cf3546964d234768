/*
 * cx_merge_memo.c — the view of the store a merge reads its generations
 * through (cx_merge_int.h): a generation no larger than
 * CX_MERGE_MEMO_OBJECT is read once, whole, and every later read of it is
 * served from memory.  A merge reads each generation twice (its keys, then
 * its rows), and under single-row ingest generations are a few KB: read
 * twice, they were half of what a merge read.  Generations are immutable,
 * so the copy cannot go stale during the merge.  Memory: at most
 * CX_MERGE_MEMO_BYTES in all; larger generations, and those past the
 * budget, are read from the store as before.
 *
 * Only reads go through the view (get and head); every request it passes on
 * is made, and counted, on the merge's own handle.
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/cx_objstore.h"
#include "merge/cx_merge_int.h"

#define CX_MERGE_MEMO_OBJECT ((uint64_t) 1024 * 1024)
#define CX_MERGE_MEMO_BYTES ((uint64_t) 16 * 1024 * 1024)

struct cx_gen_memo
{
	cx_objstore view;			/* first: the handle readers get */
	cx_objstore *real;
	const cx_generation *gens;
	uint32_t	ngens;
	cx_buf	   *held;			/* per generation; len 0 until read */
	bool	   *have;
	uint64_t	bytes;
};

/* The generation whose fragment is key, if it may be held; -1 otherwise. */
static int64_t
memo_slot(const cx_gen_memo *m, const char *key)
{
	for (uint32_t i = 0; i < m->ngens; i++)
		if (strcmp(m->gens[i].fragment.path, key) == 0)
			return m->gens[i].fragment.size <= CX_MERGE_MEMO_OBJECT ? (int64_t) i : -1;
	return -1;
}

/* Reads generation i whole into the memo, if the budget allows. */
static void
memo_fill(cx_gen_memo *m, uint32_t i, cx_err *err)
{
	uint64_t	size = m->gens[i].fragment.size;

	if (m->bytes + size > CX_MERGE_MEMO_BYTES)
		return;
	if (cx_obj_get(m->real, m->gens[i].fragment.path, &m->held[i],
				   err) != CX_OK || m->held[i].len != size)
		return;
	m->have[i] = true;
	m->bytes += size;
}

static cx_code
memo_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		 cx_buf *out, cx_err *err)
{
	cx_gen_memo *m = (cx_gen_memo *) s;
	int64_t		i = memo_slot(m, key);
	cx_err		ignored;

	if (i >= 0 && !m->have[i])
		memo_fill(m, (uint32_t) i, &ignored);
	if (i < 0 || !m->have[i])
		return cx_obj_get_range(m->real, key, offset, len, out, err);
	if (offset < m->held[i].len)
	{
		size_t		n = m->held[i].len - offset;

		cx_buf_put(out, m->held[i].data + offset, n < len ? n : len);
	}
	return cx_buf_ok(out) ? CX_OK :
		cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
}

static cx_code
memo_head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
		  cx_err *err)
{
	cx_gen_memo *m = (cx_gen_memo *) s;

	if (mtime_us != NULL)
		return cx_obj_mtime(m->real, key, mtime_us, err);
	return cx_obj_head(m->real, key, size, err);
}

static const cx_objstore_ops memo_ops = {
	.get = memo_get,
	.head = memo_head,
};

cx_code
cx_gen_memo_open(cx_objstore *real, const cx_generation *gens, uint32_t n,
				 cx_gen_memo **out, cx_err *err)
{
	cx_gen_memo *m = calloc(1, sizeof(cx_gen_memo));

	*out = NULL;
	if (m == NULL ||
		(m->held = calloc(n + 1, sizeof(cx_buf))) == NULL ||
		(m->have = calloc(n + 1, sizeof(bool))) == NULL)
	{
		cx_gen_memo_close(m);
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	}
	m->view.ops = &memo_ops;
	m->view.uri = real->uri;
	m->real = real;
	m->gens = gens;
	m->ngens = n;
	for (uint32_t i = 0; i < n; i++)
		cx_buf_init(&m->held[i]);
	*out = m;
	return CX_OK;
}

cx_objstore *
cx_gen_memo_source(cx_gen_memo *m, cx_objstore *from)
{
	return from == m->real ? &m->view : from;
}

void
cx_gen_memo_close(cx_gen_memo *m)
{
	if (m == NULL)
		return;
	for (uint32_t i = 0; m->held != NULL && i < m->ngens; i++)
		cx_buf_free(&m->held[i]);
	free(m->held);
	free(m->have);
	free(m);
}
