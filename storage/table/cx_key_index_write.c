/*
 * cx_key_index_write.c — writing key index segments (cx_key_index.h):
 * entries arrive sorted and are streamed out in data blocks; the first value
 * of every block is kept, and at the end packed into index blocks, level by
 * level, until one root block holds them, then the filter block
 * (cx_key_filter.h) before the root.  Memory: one block, one child record
 * per block written and 8 bytes per distinct value (the filter's hashes).
 */
#include <stdlib.h>
#include <string.h>

#include "format/cx_fragment.h"
#include "table/cx_key_filter.h"
#include "table/cx_key_index_int.h"
#include "util/cx_crypto.h"
#include "util/cx_frame.h"

typedef struct child
{
	uint8_t    *first;			/* malloc'd */
	uint32_t	first_len;
	uint64_t	offset;
	uint32_t	len;
} child;

typedef struct level
{
	child	   *c;
	uint32_t	n;
	uint32_t	cap;
} level;

struct cx_keysegw
{
	cx_objstore *s;
	cx_upload  *up;
	char		key[CX_INDEX_SEGMENT_KEY_SIZE];
	uint32_t	column;
	bool		with_keys;
	uint32_t	block_bytes;
	uint64_t	offset;			/* bytes uploaded */
	uint64_t	entries;
	cx_buf		block;			/* entries of the open data block */
	uint32_t	block_n;
	cx_buf		first;			/* its first value */
	cx_buf		last;			/* the last value added */
	cx_buf		min;
	level		blocks;			/* the data blocks written */
	cx_keyfilter_build filter;
};

static void
level_free(level *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		free(l->c[i].first);
	free(l->c);
	memset(l, 0, sizeof(*l));
}

static cx_code
level_add(level *l, const uint8_t *first, uint32_t len, uint64_t offset,
		  uint32_t block_len, cx_err *err)
{
	child	   *c;

	if (l->n == l->cap)
	{
		uint32_t	cap = l->cap == 0 ? 64 : l->cap * 2;
		child	   *grown = realloc(l->c, cap * sizeof(child));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
		l->c = grown;
		l->cap = cap;
	}
	c = &l->c[l->n];
	if ((c->first = cx_keyseg_copy(first, len)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	c->first_len = len;
	c->offset = offset;
	c->len = block_len;
	l->n++;
	return CX_OK;
}

cx_code
cx_keysegw_open(cx_objstore *s, uint32_t column, bool with_keys,
				uint32_t block_bytes, cx_keysegw **out, cx_err *err)
{
	cx_keysegw *w = calloc(1, sizeof(cx_keysegw));
	uint8_t		id[CX_FRAGMENT_ID_LEN];

	if (w == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	w->s = s;
	w->column = column;
	w->with_keys = with_keys;
	w->block_bytes = block_bytes > 0 ? block_bytes : CX_KEYSEG_BLOCK_BYTES;
	cx_buf_init(&w->block);
	cx_buf_init(&w->first);
	cx_buf_init(&w->last);
	cx_buf_init(&w->min);
	if (cx_random_bytes(id, sizeof(id), err) != CX_OK)
	{
		free(w);
		return err->code;
	}
	cx_layout_index_segment(id, w->key);
	if (cx_obj_upload_begin(s, w->key, CX_PUT_IF_ABSENT, &w->up, err) != CX_OK)
	{
		free(w);
		return err->code;
	}
	*out = w;
	return CX_OK;
}

/* Frames body as one block (magic) and uploads it; *len its bytes. */
static cx_code
put_block(cx_keysegw *w, const char *magic, uint32_t n, const cx_buf *body,
		  uint32_t *len, cx_err *err)
{
	cx_buf		b;
	size_t		start;
	cx_code		rc;

	cx_buf_init(&b);
	start = cx_frame_begin(&b, magic, CX_KEYSEG_FORMAT);
	cx_buf_put_u32(&b, n);
	cx_buf_put(&b, body->data, body->len);
	rc = cx_frame_end(&b, start, "key index block", err);
	if (rc == CX_OK)
		rc = cx_obj_upload_write(w->up, b.data, b.len, err);
	*len = (uint32_t) b.len;
	w->offset += b.len;
	cx_buf_free(&b);
	return rc;
}

static cx_code
flush_data_block(cx_keysegw *w, cx_err *err)
{
	uint64_t	offset = w->offset;
	uint32_t	len;

	if (w->block_n == 0)
		return CX_OK;
	if (put_block(w, CX_KEYSEG_DATA_MAGIC, w->block_n, &w->block, &len,
				  err) != CX_OK ||
		level_add(&w->blocks, w->first.data, (uint32_t) w->first.len, offset,
				  len, err) != CX_OK)
		return err->code;
	cx_buf_reset(&w->block);
	w->block_n = 0;
	return CX_OK;
}

static void
set_value(cx_buf *b, const uint8_t *p, uint32_t len)
{
	cx_buf_reset(b);
	cx_buf_put(b, p, len);
}

cx_code
cx_keysegw_add(cx_keysegw *w, const cx_keyentry *e, cx_err *err)
{
	if (w->entries > 0 &&
		cx_keyseg_value_cmp(e->value, e->len, w->last.data, w->last.len) < 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "key index: entries added out of order");
	if (w->block_n == 0)
		set_value(&w->first, e->value, e->len);
	if (w->entries == 0)
		set_value(&w->min, e->value, e->len);
	set_value(&w->last, e->value, e->len);
	cx_buf_put_bytes32(&w->block, e->value, e->len);
	cx_buf_put_u32(&w->block, e->fragment);
	cx_buf_put_u32(&w->block, e->row);
	cx_buf_put_i64(&w->block, e->ts);
	cx_buf_put_u8(&w->block, e->tombstone ? 1 : 0);
	if (w->with_keys)
		cx_buf_put_bytes32(&w->block, e->key, e->key_len);
	if (cx_keyfilter_build_add(&w->filter, e->value, e->len, err) != CX_OK)
		return err->code;
	if (!cx_buf_ok(&w->block) || !cx_buf_ok(&w->first) ||
		!cx_buf_ok(&w->last) || !cx_buf_ok(&w->min))
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	w->block_n++;
	w->entries++;
	return w->block.len >= w->block_bytes ? flush_data_block(w, err) : CX_OK;
}

static void
put_child(cx_buf *b, const child *c)
{
	cx_buf_put_bytes32(b, c->first, c->first_len);
	cx_buf_put_u64(b, c->offset);
	cx_buf_put_u32(b, c->len);
}

/* Packs the children of `from` into index blocks; `to` gets one child per
 * block. */
static cx_code
pack_level(cx_keysegw *w, const level *from, level *to, cx_err *err)
{
	cx_buf		body;
	uint32_t	n = 0;
	uint32_t	first = 0;
	cx_code		rc = CX_OK;

	cx_buf_init(&body);
	for (uint32_t i = 0; rc == CX_OK && i < from->n; i++)
	{
		put_child(&body, &from->c[i]);
		n++;
		if (body.len >= w->block_bytes || i + 1 == from->n)
		{
			uint64_t	offset = w->offset;
			uint32_t	len;

			rc = put_block(w, CX_KEYSEG_INDEX_MAGIC, n, &body, &len, err);
			if (rc == CX_OK)
				rc = level_add(to, from->c[first].first,
							   from->c[first].first_len, offset, len, err);
			cx_buf_reset(&body);
			n = 0;
			first = i + 1;
		}
	}
	cx_buf_free(&body);
	return rc;
}

/* Encoded size of a level's children. */
static size_t
level_bytes(const level *l)
{
	size_t		n = 0;

	for (uint32_t i = 0; i < l->n; i++)
		n += CX_KEYSEG_CHILD_MIN_LEN + l->c[i].first_len;
	return n;
}

/* Index levels until the top one fits one block; *top receives it. */
static cx_code
build_levels(cx_keysegw *w, level *top, uint8_t *depth, cx_err *err)
{
	*top = w->blocks;
	memset(&w->blocks, 0, sizeof(w->blocks));
	*depth = 1;
	while (top->n > 1 && level_bytes(top) > w->block_bytes)
	{
		level		up = {0};
		cx_code		rc = pack_level(w, top, &up, err);

		level_free(top);
		*top = up;
		if (rc != CX_OK)
			return rc;
		if (++*depth > CX_KEYSEG_MAX_DEPTH)
			return cx_err_set(err, CX_ERR_LIMIT, "key index: segment too deep");
	}
	return CX_OK;
}

/* Where the filter block is. */
typedef struct filter_place
{
	uint64_t	offset;
	uint32_t	len;
} filter_place;

static cx_code
put_filter(cx_keysegw *w, filter_place *at, cx_err *err)
{
	cx_buf		body;
	uint32_t	probes;
	cx_code		rc;

	cx_buf_init(&body);
	at->offset = w->offset;
	rc = cx_keyfilter_build_encode(&w->filter, &probes, &body, err);
	if (rc == CX_OK)
		rc = put_block(w, CX_KEYSEG_FILTER_MAGIC, probes, &body, &at->len, err);
	cx_buf_free(&body);
	return rc;
}

/* The root block and the trailer; *tail_len their bytes. */
static cx_code
put_root(cx_keysegw *w, const level *top, uint8_t depth,
		 const filter_place *filter, uint32_t *tail_len, cx_err *err)
{
	cx_buf		b;
	size_t		start;
	uint8_t		trailer[CX_KEYSEG_TRAILER_LEN];
	cx_code		rc;

	cx_buf_init(&b);
	start = cx_frame_begin(&b, CX_KEYSEG_ROOT_MAGIC, CX_KEYSEG_FORMAT);
	cx_buf_put_u32(&b, w->column);
	cx_buf_put_u8(&b, CX_KEYSEG_HAS_FILTER |
				  (w->with_keys ? CX_KEYSEG_WITH_KEYS : 0));
	cx_buf_put_u8(&b, depth);
	cx_buf_put_u64(&b, w->entries);
	cx_buf_put_u64(&b, filter->offset);
	cx_buf_put_u32(&b, filter->len);
	cx_buf_put_u32(&b, top->n);
	for (uint32_t i = 0; i < top->n; i++)
		put_child(&b, &top->c[i]);
	rc = cx_frame_end(&b, start, "key index root block", err);
	cx_store_u32(trailer, (uint32_t) b.len);
	memcpy(trailer + 4, CX_KEYSEG_TRAILER_MAGIC, 4);
	cx_buf_put(&b, trailer, sizeof(trailer));
	if (rc == CX_OK && !cx_buf_ok(&b))
		rc = cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	if (rc == CX_OK)
		rc = cx_obj_upload_write(w->up, b.data, b.len, err);
	w->offset += b.len;
	*tail_len = (uint32_t) b.len;
	cx_buf_free(&b);
	return rc;
}

static void
writer_free(cx_keysegw *w)
{
	cx_buf_free(&w->block);
	cx_buf_free(&w->first);
	cx_buf_free(&w->last);
	cx_buf_free(&w->min);
	level_free(&w->blocks);
	cx_keyfilter_build_free(&w->filter);
	free(w);
}

void
cx_keysegw_abort(cx_keysegw *w)
{
	if (w == NULL)
		return;
	cx_obj_upload_abort(w->up);
	writer_free(w);
}

/* What the manifest says of the finished segment (fragments aside). */
static cx_code
describe(const cx_keysegw *w, uint32_t tail_len, cx_keyseg_ref *ref,
		 cx_err *err)
{
	memset(ref, 0, sizeof(*ref));
	ref->path = cx_strdup(w->key);
	ref->column = w->column;
	ref->size = w->offset;
	ref->tail_len = tail_len;
	ref->entries = w->entries;
	if (w->entries > 0)
	{
		ref->min = cx_keyseg_copy(w->min.data, w->min.len);
		ref->min_len = (uint32_t) w->min.len;
		ref->max = cx_keyseg_copy(w->last.data, w->last.len);
		ref->max_len = (uint32_t) w->last.len;
	}
	ref->fragments = calloc(1, sizeof(char *));
	if (ref->path == NULL || ref->fragments == NULL ||
		(w->entries > 0 && (ref->min == NULL || ref->max == NULL)))
	{
		cx_keyseg_ref_free(ref);
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	}
	return CX_OK;
}

cx_code
cx_keysegw_finish(cx_keysegw *w, cx_keyseg_ref *ref, cx_err *err)
{
	level		top = {0};
	uint8_t		depth;
	filter_place filter = {0};
	uint32_t	tail_len = 0;
	cx_code		rc;

	rc = flush_data_block(w, err);
	if (rc == CX_OK)
		rc = build_levels(w, &top, &depth, err);
	if (rc == CX_OK)
		rc = put_filter(w, &filter, err);
	if (rc == CX_OK)
		rc = put_root(w, &top, depth, &filter, &tail_len, err);
	level_free(&top);
	if (rc != CX_OK)
	{
		cx_keysegw_abort(w);
		return rc;
	}
	rc = cx_obj_upload_finish(w->up, err);
	w->up = NULL;
	if (rc == CX_OK)
		rc = describe(w, tail_len, ref, err);
	writer_free(w);
	return rc;
}
