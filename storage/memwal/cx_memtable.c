/*
 * cx_memtable.c — the shard writer's memtable (cx_memwal_int.h): row batches
 * in their encoded form, laid end to end in one buffer, so that a small append
 * costs one copy and no per-row allocation.  Rows are decoded only when the
 * memtable is sealed into a generation.  The first batch's buffer is taken
 * over, not copied: a single large transaction costs no copy here.
 */
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_memwal_int.h"

void
cx_memtable_init(cx_memtable *mt)
{
	memset(mt, 0, sizeof(*mt));
	cx_buf_init(&mt->bytes);
}

void
cx_memtable_free(cx_memtable *mt)
{
	cx_buf_free(&mt->bytes);
	free(mt->batches);
	cx_memtable_init(mt);
}

cx_code
cx_memtable_add(cx_memtable *mt, cx_buf *rows, uint64_t nrows,
				int64_t commit_ts, cx_err *err)
{
	size_t		len = rows->len;
	cx_mt_batch *b;

	if (mt->nbatches == mt->cap)
	{
		uint32_t	cap = mt->cap == 0 ? 16 : mt->cap * 2;
		cx_mt_batch *grown;

		if (mt->cap > UINT32_MAX / 2)
			return cx_err_set(err, CX_ERR_LIMIT,
							  "memtable holds %u batches; seal it", mt->nbatches);
		grown = realloc(mt->batches, cap * sizeof(cx_mt_batch));
		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM,
							  "adding %llu rows to the memtable: out of memory",
							  (unsigned long long) nrows);
		mt->batches = grown;
		mt->cap = cap;
	}
	if (mt->nbatches == 0)
	{
		/* The first batch moves in (its bytes would be the only ones). */
		cx_buf_reset(&mt->bytes);
		cx_buf_swap(&mt->bytes, rows);
		cx_buf_reset(rows);
	}
	else if (!cx_buf_reserve(&mt->bytes, len))
	{
		/* The failed reservation left the buffer intact; keep using it. */
		mt->bytes.failed = false;
		return cx_err_set(err, CX_ERR_NOMEM,
						  "adding %llu rows to the memtable: out of memory",
						  (unsigned long long) nrows);
	}
	else
		cx_buf_put(&mt->bytes, rows->data, len);
	b = &mt->batches[mt->nbatches];
	b->offset = mt->bytes.len - len;
	b->len = len;
	b->nrows = nrows;
	b->commit_ts = commit_ts;
	mt->nbatches++;
	mt->rows += nrows;
	return CX_OK;
}

void
cx_memtable_pop(cx_memtable *mt)
{
	cx_mt_batch *b;

	if (mt->nbatches == 0)
		return;
	b = &mt->batches[--mt->nbatches];
	mt->bytes.len = b->offset;
	mt->rows -= b->nrows;
	if (mt->nbatches == 0)
		cx_buf_reset_small(&mt->bytes);
}

void
cx_memtable_clear(cx_memtable *mt)
{
	cx_buf_reset_small(&mt->bytes);
	mt->nbatches = 0;
	mt->rows = 0;
}
