/*
 * cx_key_index.c — the base manifest's list of key index segments, and
 * reading segments: lookups by value and full walks (cx_key_index.h).
 *
 * Every block is read in one ranged GET and checked (frame magic, length,
 * CRC-32C) before any field is believed; offsets and lengths a block gives
 * for its children are checked against the object before they are read.
 */
#include "table/cx_key_index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "table/cx_key_filter.h"
#include "table/cx_key_index_int.h"
#include "util/cx_frame.h"

/* --------------------------------------------------------------------------
 * The manifest section
 * -------------------------------------------------------------------------- */

void
cx_keyseg_ref_free(cx_keyseg_ref *ref)
{
	free(ref->path);
	free(ref->min);
	free(ref->max);
	/* A ref that failed to decode may count fragments it never got. */
	for (uint32_t i = 0; ref->fragments != NULL && i < ref->nfragments; i++)
		free(ref->fragments[i]);
	free(ref->fragments);
	memset(ref, 0, sizeof(*ref));
}

static size_t
keyseg_ref_memory(const cx_keyseg_ref *ref)
{
	size_t		bytes = sizeof(*ref) + cx_str_memory(ref->path) +
		(ref->min != NULL ? ref->min_len : 0) +
		(ref->max != NULL ? ref->max_len : 0);

	for (uint32_t i = 0; ref->fragments != NULL && i < ref->nfragments; i++)
		bytes += sizeof(char *) + cx_str_memory(ref->fragments[i]);
	return bytes;
}

size_t
cx_keyindex_memory(const cx_keyindex *ix)
{
	size_t		bytes = 0;

	for (uint32_t i = 0; i < ix->n; i++)
		bytes += keyseg_ref_memory(&ix->segs[i]);
	return bytes;
}

void
cx_keyindex_free(cx_keyindex *ix)
{
	for (uint32_t i = 0; i < ix->n; i++)
		cx_keyseg_ref_free(&ix->segs[i]);
	free(ix->segs);
	memset(ix, 0, sizeof(*ix));
}

uint8_t *
cx_keyseg_copy(const uint8_t *p, size_t len)
{
	uint8_t    *c = malloc(len > 0 ? len : 1);

	if (c != NULL && len > 0)
		memcpy(c, p, len);
	return c;
}

static bool
copy_bytes(uint8_t **dst, const uint8_t *src, uint32_t len)
{
	*dst = src != NULL ? cx_keyseg_copy(src, len) : NULL;
	return src == NULL || *dst != NULL;
}

cx_code
cx_keyindex_add(cx_keyindex *ix, const cx_keyseg_ref *ref, cx_err *err)
{
	cx_keyseg_ref *grown = realloc(ix->segs, (ix->n + 1) * sizeof(cx_keyseg_ref));
	cx_keyseg_ref *c;
	bool		ok;

	if (grown == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	ix->segs = grown;
	c = &ix->segs[ix->n++];
	*c = *ref;
	c->path = cx_strdup(ref->path);
	ok = c->path != NULL && copy_bytes(&c->min, ref->min, ref->min_len) &&
		copy_bytes(&c->max, ref->max, ref->max_len);
	c->nfragments = 0;
	c->fragments = calloc(ref->nfragments > 0 ? ref->nfragments : 1,
						  sizeof(char *));
	ok = ok && c->fragments != NULL;
	for (uint32_t i = 0; ok && i < ref->nfragments; i++)
	{
		c->fragments[i] = cx_strdup(ref->fragments[i]);
		ok = c->fragments[i] != NULL;
		c->nfragments += ok;
	}
	if (!ok)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	return CX_OK;
}

static void
encode_ref(const cx_keyseg_ref *r, cx_buf *out)
{
	cx_buf_put_str16(out, r->path);
	cx_buf_put_u32(out, r->column);
	cx_buf_put_u64(out, r->size);
	cx_buf_put_u32(out, r->tail_len);
	cx_buf_put_u64(out, r->entries);
	cx_buf_put_bytes32(out, r->min, r->min_len);
	cx_buf_put_bytes32(out, r->max, r->max_len);
	cx_buf_put_u32(out, r->nfragments);
	for (uint32_t i = 0; i < r->nfragments; i++)
		cx_buf_put_str16(out, r->fragments[i]);
}

/* The section's bytes: u32 format, u32 count, the segments. */
static cx_code
encode_index(const cx_keyindex *ix, cx_buf *out, cx_err *err)
{
	cx_buf_put_u32(out, CX_KEYINDEX_SECTION_FORMAT);
	cx_buf_put_u32(out, ix->n);
	for (uint32_t i = 0; i < ix->n; i++)
		encode_ref(&ix->segs[i], out);
	if (!cx_buf_ok(out))
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	return CX_OK;
}

/* A copy of a bytes32 field (an empty value is a valid bound: the key ''). */
static uint8_t *
take_copy(cx_rd *r, uint32_t *len)
{
	const uint8_t *p = cx_rd_bytes32(r, len);

	return p != NULL ? cx_keyseg_copy(p, *len) : NULL;
}

static bool
decode_ref(cx_rd *r, cx_keyseg_ref *ref)
{
	memset(ref, 0, sizeof(*ref));
	ref->path = cx_rd_str16(r);
	ref->column = cx_rd_u32(r);
	ref->size = cx_rd_u64(r);
	ref->tail_len = cx_rd_u32(r);
	ref->entries = cx_rd_u64(r);
	ref->min = take_copy(r, &ref->min_len);
	ref->max = take_copy(r, &ref->max_len);
	if (ref->entries == 0)
	{
		free(ref->min);
		free(ref->max);
		ref->min = ref->max = NULL;
	}
	ref->nfragments = cx_rd_u32(r);
	/* each path takes at least its u16 length */
	if (!cx_rd_ok(r) || ref->nfragments > cx_rd_left(r) / 2)
		return false;
	ref->fragments = calloc(ref->nfragments > 0 ? ref->nfragments : 1,
							sizeof(char *));
	for (uint32_t i = 0; ref->fragments != NULL && i < ref->nfragments; i++)
		ref->fragments[i] = cx_rd_str16(r);
	return ref->fragments != NULL && cx_rd_ok(r) && ref->path != NULL &&
		(ref->entries == 0 || (ref->min != NULL && ref->max != NULL));
}

const cx_manifest_ext *
cx_keyindex_section(const cx_manifest *m)
{
	for (uint32_t i = 0; i < m->nexts; i++)
		if (m->exts[i].tag == CX_KEYINDEX_EXT_TAG)
			return &m->exts[i];
	return NULL;
}

cx_code
cx_keyindex_load(const cx_manifest *m, cx_keyindex *out, cx_err *err)
{
	const cx_manifest_ext *e = cx_keyindex_section(m);
	cx_rd		r;
	uint32_t	n;

	memset(out, 0, sizeof(*out));
	if (e == NULL)
		return CX_OK;
	cx_rd_init(&r, e->data, e->len);
	if (cx_rd_u32(&r) != CX_KEYINDEX_SECTION_FORMAT)
		return cx_err_set(err, CX_ERR_UNSUPPORTED,
						  "base version %llu: key index section of an unknown format",
						  (unsigned long long) m->version);
	n = cx_rd_u32(&r);
	if (!cx_rd_ok(&r) || n > cx_rd_left(&r) / CX_KEYSEG_REF_MIN_LEN ||
		(n > 0 && (out->segs = calloc(n, sizeof(cx_keyseg_ref))) == NULL))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "base version %llu: key index section is damaged",
						  (unsigned long long) m->version);
	for (uint32_t i = 0; i < n; i++)
	{
		bool		ok = decode_ref(&r, &out->segs[i]);

		out->n = i + 1;
		if (!ok)
		{
			cx_keyindex_free(out);
			return cx_err_set(err, CX_ERR_CORRUPT,
							  "base version %llu: key index section is damaged",
							  (unsigned long long) m->version);
		}
	}
	return CX_OK;
}

cx_code
cx_keyindex_store(cx_manifest *m, const cx_keyindex *ix, cx_err *err)
{
	cx_manifest_ext *e = (cx_manifest_ext *) cx_keyindex_section(m);
	cx_buf		b;

	if (ix->n == 0)
	{
		if (e != NULL)
		{
			free(e->data);
			*e = m->exts[--m->nexts];
		}
		return CX_OK;
	}
	cx_buf_init(&b);
	if (encode_index(ix, &b, err) != CX_OK)
	{
		cx_buf_free(&b);
		return err->code;
	}
	if (e == NULL)
	{
		cx_manifest_ext *grown = realloc(m->exts, (m->nexts + 1) * sizeof(cx_manifest_ext));

		if (grown == NULL)
		{
			cx_buf_free(&b);
			return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
		}
		m->exts = grown;
		e = &m->exts[m->nexts++];
		e->tag = CX_KEYINDEX_EXT_TAG;
	}
	else
		free(e->data);
	e->len = (uint32_t) b.len;
	e->data = cx_buf_detach(&b, NULL);
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Entries and blocks
 * -------------------------------------------------------------------------- */

int
cx_keyseg_value_cmp(const uint8_t *a, size_t alen, const uint8_t *b,
					size_t blen)
{
	size_t		n = alen < blen ? alen : blen;
	/* an empty value may have no bytes at all (a NULL pointer) */
	int			c = n > 0 ? memcmp(a, b, n) : 0;

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen;
}

int
cx_keyentry_cmp(const cx_keyentry *a, const cx_keyentry *b)
{
	int			c = cx_keyseg_value_cmp(a->value, a->len, b->value, b->len);

	if (c != 0)
		return c;
	if (a->fragment != b->fragment)
		return a->fragment < b->fragment ? -1 : 1;
	return a->row < b->row ? -1 : a->row > b->row;
}

/* --------------------------------------------------------------------------
 * The block cache
 *
 * Lookups keep the blocks they read (root, index and data blocks), per
 * process, in an LRU bounded by bytes (CX_KEYINDEX_CACHE_DEFAULT, changed
 * by cx_keyindex_cache_set_limit): segments are immutable and randomly
 * named, so a cached block is never stale and a segment that a merge of
 * segments or GC removed just ages out.  A process
 * that looks up again (the uniqueness check of every INSERT, the merges of
 * the maintenance worker) reads only the blocks that are not cached: once
 * the index fits, none.  Walks and checks never use it: they must see the
 * object's bytes.
 * -------------------------------------------------------------------------- */

/* A block's name in the cache: "<offset>@<path>@<store uri>", the uri cut
 * if it is long (paths are random, so offset and path alone are unique). */
#define CACHE_NAME_LEN (CX_KEY_MAX + 96)

static cx_lru *block_cache;
static pthread_once_t block_cache_once = PTHREAD_ONCE_INIT;

static void
block_cache_init(void)
{
	block_cache = cx_lru_new(CX_KEYINDEX_CACHE_DEFAULT);
}

/* The process's block cache; NULL without memory (then nothing is kept). */
static cx_lru *
the_cache(void)
{
	pthread_once(&block_cache_once, block_cache_init);
	return block_cache;
}

void
cx_keyindex_cache_set_limit(size_t bytes)
{
	cx_lru	   *c = the_cache();

	if (c != NULL)
		cx_lru_set_limit(c, bytes);
}

cx_lru_stats
cx_keyindex_cache_stats(void)
{
	cx_lru	   *c = the_cache();
	cx_lru_stats none = {0};

	return c != NULL ? cx_lru_stats_of(c) : none;
}

size_t
cx_keyindex_cache_bytes(void)
{
	return cx_keyindex_cache_stats().bytes + cx_keyfilter_kept_bytes();
}

/* Appends n bytes of p to name[*at ..] as far as size leaves room. */
static void
name_append(char *name, size_t size, size_t *at, const char *p, size_t n)
{
	size_t		room = size - 1 - *at;

	if (n > room)
		n = room;
	memcpy(name + *at, p, n);
	*at += n;
}

/* Formatted by hand, not by snprintf: the writer's uniqueness check names
 * two blocks per segment per request, and formatting was a tenth of the
 * probe's instructions. */
static void
cache_name(const cx_objstore *s, const char *path, uint64_t offset,
		   char *name, size_t size)
{
	char		digits[20];
	size_t		nd = sizeof(digits);
	size_t		at = 0;

	do
		digits[--nd] = (char) ('0' + offset % 10);
	while ((offset /= 10) > 0);
	name_append(name, size, &at, digits + nd, sizeof(digits) - nd);
	name_append(name, size, &at, "@", 1);
	name_append(name, size, &at, path, strlen(path));
	name_append(name, size, &at, "@", 1);
	name_append(name, size, &at, s->uri, strlen(s->uri));
	name[at] = '\0';
}

/* Copies the cached block into out; false when it is not cached. */
static bool
cache_get(const char *name, cx_buf *out)
{
	cx_lru	   *c = the_cache();

	return c != NULL && cx_lru_get(c, name, out);
}

/* Keeps a copy of a block that passed its checks (best effort). */
static void
cache_put(const char *name, const cx_buf *b)
{
	cx_lru	   *c = the_cache();

	if (c != NULL)
		cx_lru_put(c, name, b->data, b->len);
}

/* A block read and checked: its body, owned by buf. */
typedef struct block
{
	cx_buf		buf;
	cx_rd		body;
} block;

/* The body of a cached block.  It passed cx_frame_check when it was read,
 * so its checksum is not computed again (the root block of every segment,
 * at every uniqueness check of the writer); only the kind is compared, and
 * a block asked for as another kind goes to cx_frame_check, which names
 * the damage. */
static bool
cached_body(const cx_buf *buf, const char *magic, const uint8_t **body,
			uint32_t *body_len)
{
	if (memcmp(buf->data, magic, 4) != 0)
		return false;
	*body = buf->data + CX_FRAME_HEADER_LEN;
	*body_len = (uint32_t) (buf->len - CX_FRAME_HEADER_LEN -
							CX_FRAME_TRAILER_LEN);
	return true;
}

/* Reads and checks one block; cached: through the block cache. */
static cx_code
read_block(cx_objstore *s, const cx_keyseg_ref *ref, uint64_t offset,
		   uint32_t len, const char *magic, bool cached, block *b,
		   cx_err *err)
{
	char		name[CACHE_NAME_LEN];
	const uint8_t *body;
	uint32_t	body_len;
	bool		hit = false;

	cx_buf_init(&b->buf);
	if (offset > ref->size || len > ref->size - offset)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "key index segment %s: block at %llu is outside the object",
						  ref->path, (unsigned long long) offset);
	if (cached)
	{
		cache_name(s, ref->path, offset, name, sizeof(name));
		hit = cache_get(name, &b->buf) && b->buf.len == len;
	}
	if (!hit &&
		cx_obj_get_range(s, ref->path, offset, len, &b->buf, err) != CX_OK)
		return err->code;
	if (!(hit && cached_body(&b->buf, magic, &body, &body_len)) &&
		cx_frame_check(b->buf.data, b->buf.len, magic, CX_KEYSEG_FORMAT,
					   "key index segment", ref->path, &body, &body_len,
					   err) != CX_OK)
		return err->code;
	if (cached && !hit)
		cache_put(name, &b->buf);
	cx_rd_init(&b->body, body, body_len);
	return CX_OK;
}

static cx_code
damaged(const cx_keyseg_ref *ref, const char *what, cx_err *err)
{
	return cx_err_set(err, CX_ERR_CORRUPT, "key index segment %s: %s",
					  ref->path, what);
}

/* The root block (the tail holds it, then the trailer), whatever column it
 * names. */
static cx_code
read_any_root(cx_objstore *s, const cx_keyseg_ref *ref, bool cached,
			  block *b, cx_keyseg_root *root, cx_err *err)
{
	uint32_t	tail = ref->tail_len;

	cx_buf_init(&b->buf);
	if (tail < CX_KEYSEG_TRAILER_LEN || tail > ref->size)
		return damaged(ref, "impossible tail length", err);
	if (read_block(s, ref, ref->size - tail, tail - CX_KEYSEG_TRAILER_LEN,
				   CX_KEYSEG_ROOT_MAGIC, cached, b, err) != CX_OK)
		return err->code;
	root->column = cx_rd_u32(&b->body);
	root->flags = cx_rd_u8(&b->body);
	root->depth = cx_rd_u8(&b->body);
	root->entries = cx_rd_u64(&b->body);
	root->filter_offset = 0;
	root->filter_len = 0;
	if (root->flags & CX_KEYSEG_HAS_FILTER)
	{
		root->filter_offset = cx_rd_u64(&b->body);
		root->filter_len = cx_rd_u32(&b->body);
	}
	if (!cx_rd_ok(&b->body) || root->depth < 1 ||
		root->depth > CX_KEYSEG_MAX_DEPTH)
		return damaged(ref, "root block is damaged", err);
	return CX_OK;
}

/* The root of a segment the manifest lists, which must agree with it. */
static cx_code
read_root(cx_objstore *s, const cx_keyseg_ref *ref, bool cached, block *b,
		  cx_keyseg_root *root, cx_err *err)
{
	if (read_any_root(s, ref, cached, b, root, err) != CX_OK)
		return err->code;
	if (root->column != ref->column || root->entries != ref->entries)
		return damaged(ref, "root block does not match the manifest", err);
	return CX_OK;
}

/* One child of an index block. */
typedef struct child
{
	const uint8_t *first;
	uint32_t	first_len;
	uint64_t	offset;
	uint32_t	len;
} child;

/* Decodes an index block's children (pointers into b). */
static cx_code
read_children(const cx_keyseg_ref *ref, cx_rd *r, child **out, uint32_t *n,
			  cx_err *err)
{
	uint32_t	count = cx_rd_u32(r);

	*out = NULL;
	*n = 0;
	if (!cx_rd_ok(r) || count > cx_rd_left(r) / CX_KEYSEG_CHILD_MIN_LEN)
		return damaged(ref, "index block is damaged", err);
	if (count > 0 && (*out = calloc(count, sizeof(child))) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	for (uint32_t i = 0; i < count; i++)
	{
		(*out)[i].first = cx_rd_bytes32(r, &(*out)[i].first_len);
		(*out)[i].offset = cx_rd_u64(r);
		(*out)[i].len = cx_rd_u32(r);
	}
	*n = count;
	if (!cx_rd_ok(r) || cx_rd_left(r) != 0)
		return damaged(ref, "index block is damaged", err);
	return CX_OK;
}

static bool
read_entry(cx_rd *r, bool with_keys, cx_keyentry *e)
{
	e->value = cx_rd_bytes32(r, &e->len);
	e->fragment = cx_rd_u32(r);
	e->row = cx_rd_u32(r);
	e->ts = cx_rd_i64(r);
	e->tombstone = cx_rd_u8(r) != 0;
	e->key = NULL;
	e->key_len = 0;
	if (with_keys)
		e->key = cx_rd_bytes32(r, &e->key_len);
	return cx_rd_ok(r) && e->value != NULL && (!with_keys || e->key != NULL);
}

/* The filter block the root names, read and checked. */
static cx_code
read_filter(cx_objstore *s, const cx_keyseg_ref *ref,
			const cx_keyseg_root *root, cx_keyfilter **f, cx_err *err)
{
	block		b;
	cx_code		rc;

	rc = read_block(s, ref, root->filter_offset, root->filter_len,
					CX_KEYSEG_FILTER_MAGIC, false, &b, err);
	if (rc == CX_OK)
	{
		uint32_t	len = (uint32_t) cx_rd_left(&b.body);

		rc = cx_keyfilter_decode(cx_rd_take(&b.body, len), len, ref->path, f,
								 err);
	}
	cx_buf_free(&b.buf);
	return rc;
}

/* --------------------------------------------------------------------------
 * Lookups
 * -------------------------------------------------------------------------- */

/* A lookup: the sorted values still wanted below the current block. */
typedef struct lookup
{
	cx_objstore *s;
	const cx_keyseg_ref *ref;
	cx_keyseg_root root;
	const uint8_t *const *values;
	const size_t *lens;
	const uint32_t *order;
	const uint64_t *hashes;		/* the values' filter hashes, or NULL */
	const uint32_t *pos;		/* the caller's index of order[i] (NULL:
								 * i), once the filter dropped values */
	cx_keyentry_fn fn;
	void	   *arg;
} lookup;

static int
value_vs(const lookup *lk, uint32_t i, const uint8_t *p, size_t len)
{
	uint32_t	v = lk->order[i];

	return cx_keyseg_value_cmp(lk->values[v], lk->lens[v], p, len);
}

static cx_code
data_block(const lookup *lk, const child *c, uint32_t from, uint32_t to,
		   cx_err *err)
{
	block		b;
	uint32_t	n;
	uint32_t	i = from;
	cx_code		rc;

	rc = read_block(lk->s, lk->ref, c->offset, c->len, CX_KEYSEG_DATA_MAGIC,
					true, &b, err);
	n = rc == CX_OK ? cx_rd_u32(&b.body) : 0;
	for (uint32_t k = 0; rc == CX_OK && k < n; k++)
	{
		cx_keyentry e;

		if (!read_entry(&b.body, lk->root.flags & CX_KEYSEG_WITH_KEYS, &e))
		{
			rc = damaged(lk->ref, "data block is damaged", err);
			break;
		}
		/* entries ascend: the values below this one are done */
		while (i < to && value_vs(lk, i, e.value, e.len) < 0)
			i++;
		if (i == to)
			break;
		for (uint32_t j = i;
			 rc == CX_OK && j < to && value_vs(lk, j, e.value, e.len) == 0; j++)
			rc = lk->fn(lk->arg, lk->pos != NULL ? lk->pos[j] : j, &e, err);
	}
	cx_buf_free(&b.buf);
	return rc;
}

static cx_code descend(const lookup *lk, const child *c, uint32_t depth,
					   uint32_t from, uint32_t to, cx_err *err);

/*
 * Values [from, to) under the children of one index block.  Child k holds
 * values from its first value up to the next child's first value, both
 * included (equal values may span blocks).
 */
static cx_code
route(const lookup *lk, const child *kids, uint32_t n, uint32_t depth,
	  uint32_t from, uint32_t to, cx_err *err)
{
	uint32_t	lo = from;
	uint32_t	hi = from;

	/* both bounds only move forward: values and children ascend */
	for (uint32_t k = 0; k < n && lo < to; k++)
	{
		/* the first value not below this child's first value ... */
		while (lo < to && k > 0 &&
			   value_vs(lk, lo, kids[k].first, kids[k].first_len) < 0)
			lo++;
		/* ... through the last not above the next child's first */
		if (hi < lo)
			hi = lo;
		while (hi < to && (k + 1 == n ||
						   value_vs(lk, hi, kids[k + 1].first,
									kids[k + 1].first_len) <= 0))
			hi++;
		if (lo < hi && descend(lk, &kids[k], depth - 1, lo, hi, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

static cx_code
index_block(const lookup *lk, block *b, uint32_t depth, uint32_t from,
			uint32_t to, cx_err *err)
{
	child	   *kids;
	uint32_t	n;
	cx_code		rc;

	rc = read_children(lk->ref, &b->body, &kids, &n, err);
	if (rc == CX_OK)
		rc = route(lk, kids, n, depth, from, to, err);
	free(kids);
	return rc;
}

/* The block c at `depth` levels above the data blocks (0: a data block). */
static cx_code
descend(const lookup *lk, const child *c, uint32_t depth, uint32_t from,
		uint32_t to, cx_err *err)
{
	block		b;
	cx_code		rc;

	if (depth == 0)
		return data_block(lk, c, from, to, err);
	rc = read_block(lk->s, lk->ref, c->offset, c->len, CX_KEYSEG_INDEX_MAGIC,
					true, &b, err);
	if (rc == CX_OK)
		rc = index_block(lk, &b, depth, from, to, err);
	cx_buf_free(&b.buf);
	return rc;
}

/* The segment's filter, read if the lookups of the segment have earned it
 * (cx_keyfilter_get); *f stays NULL when there is none to use. */
static cx_code
segment_filter(const lookup *lk, uint32_t n, cx_keyfilter **f, cx_err *err)
{
	const cx_keyseg_root *root = &lk->root;
	uint64_t	blocks = lk->ref->size / CX_KEYSEG_BLOCK_BYTES + 1;
	uint64_t	may_read = (n < blocks ? n : blocks) * CX_KEYSEG_BLOCK_BYTES;
	char		name[CACHE_NAME_LEN];
	bool		load;
	cx_code		rc;

	*f = NULL;
	if (!(root->flags & CX_KEYSEG_HAS_FILTER))
		return CX_OK;
	cache_name(lk->s, lk->ref->path, root->filter_offset, name, sizeof(name));
	*f = cx_keyfilter_get(name, root->filter_len, may_read, &load);
	if (*f != NULL || !load)
		return CX_OK;
	rc = read_filter(lk->s, lk->ref, root, f, err);
	if (rc == CX_OK)
		cx_keyfilter_keep(name, *f);
	return rc;
}

/* Drops the values the filter proves absent: lk->order and lk->pos then
 * list those left (*kept), in order (malloc'd into *order and *pos). */
static cx_code
filter_values(lookup *lk, const cx_keyfilter *f, uint32_t n, uint32_t **order,
			  uint32_t **pos, uint32_t *kept, cx_err *err)
{
	*order = malloc(((size_t) n + 1) * sizeof(uint32_t));
	*pos = malloc(((size_t) n + 1) * sizeof(uint32_t));
	if (*order == NULL || *pos == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	*kept = 0;
	for (uint32_t i = 0; i < n; i++)
	{
		uint32_t	v = lk->order[i];
		uint64_t	h = lk->hashes != NULL ? lk->hashes[v] :
			cx_keyfilter_hash(lk->values[v], lk->lens[v]);

		if (!cx_keyfilter_may_hold_hash(f, h))
			continue;
		(*order)[*kept] = v;
		(*pos)[(*kept)++] = i;
	}
	lk->order = *order;
	lk->pos = *pos;
	return CX_OK;
}

/* The values the filter leaves, from the root down. */
static cx_code
lookup_from_root(lookup *lk, block *root, uint32_t n, cx_err *err)
{
	cx_keyfilter *f;
	uint32_t   *order = NULL;
	uint32_t   *pos = NULL;
	cx_code		rc = segment_filter(lk, n, &f, err);

	if (rc == CX_OK && f != NULL)
		rc = filter_values(lk, f, n, &order, &pos, &n, err);
	if (rc == CX_OK && n > 0)
		rc = index_block(lk, root, lk->root.depth, 0, n, err);
	if (f != NULL)
		cx_keyfilter_release(f);
	free(order);
	free(pos);
	return rc;
}

static cx_code
run_lookup(lookup *lk, uint32_t n, cx_err *err)
{
	block		b;
	cx_code		rc;

	rc = read_root(lk->s, lk->ref, true, &b, &lk->root, err);
	if (rc == CX_OK)
		rc = lookup_from_root(lk, &b, n, err);
	cx_buf_free(&b.buf);
	return rc;
}

cx_code
cx_keyseg_lookup(cx_objstore *s, const cx_keyseg_ref *ref,
				 const uint8_t *const *values, const size_t *lens,
				 const uint32_t *order, const uint64_t *hashes, uint32_t n,
				 cx_keyentry_fn fn, void *arg, cx_err *err)
{
	lookup		lk = {s, ref, {0}, values, lens, order, hashes, NULL, fn, arg};

	if (n == 0 || ref->entries == 0)
		return CX_OK;
	return run_lookup(&lk, n, err);
}

/* --------------------------------------------------------------------------
 * Cursors
 * -------------------------------------------------------------------------- */

/*
 * The data blocks lie back to back at the start of a segment (FORMAT.md),
 * and a cursor reads every one in order, so it reads up to
 * CURSOR_READAHEAD bytes of them in one ranged GET instead of one GET per
 * block: a merge of segments reads each of its inputs whole, and a GET is
 * an open, a read and a close on file:// and a request on S3 or Azure.
 * Each block is still checked when the cursor reaches it.
 */
#define CURSOR_READAHEAD ((uint64_t) 1 << 20)

struct cx_keyseg_cursor
{
	cx_objstore *s;
	const cx_keyseg_ref *ref;
	bool		with_keys;
	child	   *leaves;			/* the data blocks, in order */
	uint32_t	nleaves;
	uint32_t	cap;
	uint32_t	next_leaf;
	cx_buf		ahead;			/* the bytes of leaves [.., ahead_end) */
	uint64_t	ahead_offset;	/* where they start in the object */
	uint32_t	ahead_end;
	cx_rd		cur;			/* the body of the data block being read */
	uint32_t	left;			/* entries left in it */
	cx_keyentry e;
};

static cx_code
add_leaf(cx_keyseg_cursor *c, const child *k, cx_err *err)
{
	if (c->nleaves == c->cap)
	{
		uint32_t	cap = c->cap == 0 ? 64 : c->cap * 2;
		child	   *grown = realloc(c->leaves, cap * sizeof(child));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
		c->leaves = grown;
		c->cap = cap;
	}
	c->leaves[c->nleaves] = *k;
	c->leaves[c->nleaves].first = NULL;	/* not kept: the block goes away */
	c->leaves[c->nleaves].first_len = 0;
	c->nleaves++;
	return CX_OK;
}

/* Adds the data blocks under index block b (depth >= 1), in order. */
static cx_code
collect_leaves(cx_keyseg_cursor *c, block *b, uint32_t depth, cx_err *err)
{
	child	   *kids;
	uint32_t	n;
	cx_code		rc = read_children(c->ref, &b->body, &kids, &n, err);

	for (uint32_t k = 0; rc == CX_OK && k < n; k++)
	{
		block		sub;

		if (depth == 1)
		{
			rc = add_leaf(c, &kids[k], err);
			continue;
		}
		rc = read_block(c->s, c->ref, kids[k].offset, kids[k].len,
						CX_KEYSEG_INDEX_MAGIC, false, &sub, err);
		if (rc == CX_OK)
			rc = collect_leaves(c, &sub, depth - 1, err);
		cx_buf_free(&sub.buf);
	}
	free(kids);
	return rc;
}

void
cx_keyseg_cursor_close(cx_keyseg_cursor *c)
{
	if (c == NULL)
		return;
	free(c->leaves);
	cx_buf_free(&c->ahead);
	free(c);
}

cx_code
cx_keyseg_cursor_open(cx_objstore *s, const cx_keyseg_ref *ref,
					  cx_keyseg_cursor **out, cx_err *err)
{
	cx_keyseg_cursor *c = calloc(1, sizeof(cx_keyseg_cursor));
	cx_keyseg_root root;
	block		b;
	cx_code		rc;

	if (c == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
	c->s = s;
	c->ref = ref;
	cx_buf_init(&c->ahead);
	rc = read_root(s, ref, false, &b, &root, err);
	if (rc == CX_OK)
	{
		c->with_keys = root.flags & CX_KEYSEG_WITH_KEYS;
		rc = collect_leaves(c, &b, root.depth, err);
	}
	cx_buf_free(&b.buf);
	if (rc != CX_OK)
	{
		cx_keyseg_cursor_close(c);
		return rc;
	}
	*out = c;
	return CX_OK;
}

/* Whether leaf k lies inside the object. */
static bool
leaf_in_object(const cx_keyseg_cursor *c, const child *k)
{
	return k->offset <= c->ref->size && k->len <= c->ref->size - k->offset;
}

/* Reads the next leaf and those right behind it, within CURSOR_READAHEAD
 * bytes of its start (at least the next leaf). */
static cx_code
read_ahead(cx_keyseg_cursor *c, cx_err *err)
{
	const child *first = &c->leaves[c->next_leaf];
	uint32_t	end = c->next_leaf + 1;
	const child *last = first;

	if (!leaf_in_object(c, first))
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "key index segment %s: block at %llu is outside the object",
						  c->ref->path, (unsigned long long) first->offset);
	while (end < c->nleaves && leaf_in_object(c, &c->leaves[end]) &&
		   c->leaves[end].offset == last->offset + last->len &&
		   c->leaves[end].offset + c->leaves[end].len - first->offset <=
		   CURSOR_READAHEAD)
		last = &c->leaves[end++];
	if (cx_obj_get_range(c->s, c->ref->path, first->offset,
						 last->offset + last->len - first->offset, &c->ahead,
						 err) != CX_OK)
		return err->code;
	c->ahead_offset = first->offset;
	c->ahead_end = end;
	return CX_OK;
}

/* Makes the next leaf the block being read, checked. */
static cx_code
next_block(cx_keyseg_cursor *c, cx_err *err)
{
	const child *k;
	const uint8_t *body;
	uint32_t	body_len;

	if (c->next_leaf == c->ahead_end && read_ahead(c, err) != CX_OK)
		return err->code;
	k = &c->leaves[c->next_leaf++];
	/* A block too short to hold a frame is damaged before its bytes are
	 * looked at: an empty one was never read into c->ahead. */
	if (k->len < CX_FRAME_HEADER_LEN + CX_FRAME_TRAILER_LEN ||
		k->offset - c->ahead_offset + k->len > c->ahead.len)
		return damaged(c->ref, "a data block is cut short", err);
	if (cx_frame_check(c->ahead.data + (k->offset - c->ahead_offset), k->len,
					   CX_KEYSEG_DATA_MAGIC, CX_KEYSEG_FORMAT,
					   "key index segment", c->ref->path, &body, &body_len,
					   err) != CX_OK)
		return err->code;
	cx_rd_init(&c->cur, body, body_len);
	c->left = cx_rd_u32(&c->cur);
	return CX_OK;
}

cx_code
cx_keyseg_cursor_next(cx_keyseg_cursor *c, const cx_keyentry **e, cx_err *err)
{
	while (c->left == 0)
	{
		if (c->next_leaf == c->nleaves)
		{
			*e = NULL;
			return CX_OK;
		}
		if (next_block(c, err) != CX_OK)
			return err->code;
	}
	c->left--;
	if (!read_entry(&c->cur, c->with_keys, &c->e))
		return damaged(c->ref, "data block is damaged", err);
	*e = &c->e;
	return CX_OK;
}

cx_code
cx_keyseg_walk(cx_objstore *s, const cx_keyseg_ref *ref, cx_keyentry_fn fn,
			   void *arg, cx_err *err)
{
	cx_keyseg_cursor *c;
	const cx_keyentry *e;
	cx_code		rc;

	if (cx_keyseg_cursor_open(s, ref, &c, err) != CX_OK)
		return err->code;
	while ((rc = cx_keyseg_cursor_next(c, &e, err)) == CX_OK && e != NULL &&
		   (rc = fn(arg, 0, e, err)) == CX_OK)
		;
	cx_keyseg_cursor_close(c);
	return rc;
}

/* --------------------------------------------------------------------------
 * Checking a segment on its own (ctxstore-inspect verify)
 * -------------------------------------------------------------------------- */

typedef struct order_check
{
	const cx_keyseg_ref *ref;
	cx_keyfilter *filter;		/* NULL: the segment has none */
	cx_buf		prev;
	uint32_t	prev_fragment;
	uint32_t	prev_row;
	uint64_t	n;
} order_check;

static cx_code
check_entry(void *arg, uint32_t value, const cx_keyentry *e, cx_err *err)
{
	order_check *oc = arg;
	cx_keyentry prev = {oc->prev.data, (uint32_t) oc->prev.len,
	oc->prev_fragment, oc->prev_row, 0, false, NULL, 0};

	(void) value;
	if (oc->n > 0 && cx_keyentry_cmp(&prev, e) > 0)
		return damaged(oc->ref, "entries are out of order", err);
	if (oc->filter != NULL && !cx_keyfilter_may_hold(oc->filter, e->value, e->len))
		return damaged(oc->ref, "its filter does not hold one of its values", err);
	cx_buf_reset(&oc->prev);
	cx_buf_put(&oc->prev, e->value, e->len);
	oc->prev_fragment = e->fragment;
	oc->prev_row = e->row;
	oc->n++;
	return cx_buf_ok(&oc->prev) ? CX_OK :
		cx_err_set(err, CX_ERR_NOMEM, "key index: out of memory");
}

/* What a segment's own bytes say of it: size, tail and root fields. */
static cx_code
describe_object(cx_objstore *s, const char *path, cx_keyseg_ref *ref,
				cx_keyseg_root *root, cx_err *err)
{
	cx_buf		t;
	block		b;
	cx_code		rc;

	memset(ref, 0, sizeof(*ref));
	ref->path = (char *) path;
	if (cx_obj_head(s, path, &ref->size, err) != CX_OK)
		return err->code;
	if (ref->size < CX_KEYSEG_TRAILER_LEN)
		return damaged(ref, "too short", err);
	cx_buf_init(&t);
	rc = cx_obj_get_range(s, path, ref->size - CX_KEYSEG_TRAILER_LEN,
						  CX_KEYSEG_TRAILER_LEN, &t, err);
	if (rc == CX_OK && (t.len != CX_KEYSEG_TRAILER_LEN ||
						memcmp(t.data + 4, CX_KEYSEG_TRAILER_MAGIC, 4) != 0))
		rc = damaged(ref, "no trailer", err);
	if (rc == CX_OK)
		ref->tail_len = cx_load_u32(t.data) + CX_KEYSEG_TRAILER_LEN;
	cx_buf_free(&t);
	if (rc != CX_OK)
		return rc;
	rc = read_any_root(s, ref, false, &b, root, err);
	cx_buf_free(&b.buf);
	ref->column = root->column;
	ref->entries = root->entries;
	return rc;
}

cx_code
cx_keyseg_check(cx_objstore *s, const char *path, uint64_t *entries,
				cx_err *err)
{
	cx_keyseg_ref ref;
	cx_keyseg_root root;
	order_check oc = {&ref, NULL, {0}, 0, 0, 0};
	cx_code		rc;

	if (describe_object(s, path, &ref, &root, err) != CX_OK)
		return err->code;
	if ((root.flags & CX_KEYSEG_HAS_FILTER) &&
		read_filter(s, &ref, &root, &oc.filter, err) != CX_OK)
		return err->code;
	cx_buf_init(&oc.prev);
	rc = cx_keyseg_walk(s, &ref, check_entry, &oc, err);
	cx_buf_free(&oc.prev);
	if (oc.filter != NULL)
		cx_keyfilter_release(oc.filter);
	if (rc == CX_OK && oc.n != root.entries)
		rc = damaged(&ref, "holds a different number of entries than its root says",
					 err);
	*entries = oc.n;
	return rc;
}
