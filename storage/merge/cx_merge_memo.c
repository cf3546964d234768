/*
 * cx_merge_memo.c — where a merge reads its generations from
 * (cx_merge_int.h): a generation no larger than CX_MERGE_MEMO_OBJECT is
 * read once, whole, and every later read of it is served from memory.  A
 * merge reads each generation up to three times (its TRUNCATE markers, its
 * keys, its rows), and under single-row ingest generations are a few KB:
 * read thrice, they were most of what a merge read.  Generations are
 * immutable, so a copy cannot go stale during the merge.
 *
 * Both kinds are held.  A generation with its own object is served through
 * the memo's view of the store, which fills on the first read of it.  An
 * inline one (carried by a shard-manifest version) is opened once and its
 * in-memory store kept: the handle's own cache of carried bytes holds only
 * the last few, so a catch-up merge of hundreds of inline generations read
 * each of them again on every pass.  Memory: at most CX_MERGE_MEMO_BYTES
 * in all; larger generations, and those past the budget, are read from the
 * store on every pass as before.
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
	const cx_shard_manifest *sm;	/* the manifest listing gens */
	const cx_generation *gens;
	uint32_t	ngens;
	cx_buf	   *held;			/* per generation; len 0 until read */
	bool	   *have;
	cx_objstore **inline_src;	/* per inline generation, once opened */
	uint64_t	bytes;
};

/* Whether size more bytes fit the budget; counts them if so. */
static bool
memo_take(cx_gen_memo *m, uint64_t size)
{
	if (size > CX_MERGE_MEMO_OBJECT || m->bytes + size > CX_MERGE_MEMO_BYTES)
		return false;
	m->bytes += size;
	return true;
}

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

	if (!memo_take(m, size))
		return;
	if (cx_obj_get(m->real, m->gens[i].fragment.path, &m->held[i],
				   err) != CX_OK || m->held[i].len != size)
	{
		m->bytes -= size;
		return;
	}
	m->have[i] = true;
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
cx_gen_memo_open(cx_objstore *real, const cx_shard_manifest *sm,
				 const cx_generation *gens, uint32_t n, cx_gen_memo **out,
				 cx_err *err)
{
	cx_gen_memo *m = calloc(1, sizeof(cx_gen_memo));

	*out = NULL;
	if (m == NULL ||
		(m->held = calloc(n + 1, sizeof(cx_buf))) == NULL ||
		(m->have = calloc(n + 1, sizeof(bool))) == NULL ||
		(m->inline_src = calloc(n + 1, sizeof(cx_objstore *))) == NULL)
	{
		cx_gen_memo_close(m);
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	}
	m->view.ops = &memo_ops;
	m->view.uri = real->uri;
	m->real = real;
	m->sm = sm;
	m->gens = gens;
	m->ngens = n;
	for (uint32_t i = 0; i < n; i++)
		cx_buf_init(&m->held[i]);
	*out = m;
	return CX_OK;
}

cx_code
cx_gen_memo_open_gen(cx_gen_memo *m, uint32_t i, cx_objstore **src,
					 cx_err *err)
{
	const cx_generation *g = &m->gens[i];
	cx_objstore *from;

	*src = m->inline_src[i];
	if (*src != NULL)
		return CX_OK;
	if (cx_generation_open(m->real, m->sm, g, &from, err) != CX_OK)
		return cx_shard_generation_failed(m->sm, g, err);
	if (from == m->real)
		*src = &m->view;
	else if (memo_take(m, g->fragment.size))
		*src = m->inline_src[i] = from;
	else
		*src = from;
	return CX_OK;
}

void
cx_gen_memo_close_gen(cx_gen_memo *m, uint32_t i, cx_objstore *src)
{
	if (src != &m->view && src != m->inline_src[i])
		cx_generation_done(m->real, src);
}

void
cx_gen_memo_close(cx_gen_memo *m)
{
	if (m == NULL)
		return;
	for (uint32_t i = 0; m->held != NULL && i < m->ngens; i++)
		cx_buf_free(&m->held[i]);
	for (uint32_t i = 0; m->inline_src != NULL && i < m->ngens; i++)
		cx_generation_done(m->real, m->inline_src[i]);
	free(m->held);
	free(m->have);
	free(m->inline_src);
	free(m);
}
