/*
 * cx_key_cache.c — the newest version of each key, with its upsert value
 * (cx_key_cache.h).
 *
 * Entries sit in a dense array in the order their keys first arrived, 24
 * bytes each: where the entry's record is (with two flags), its commit
 * time and generation.  A record, in `bytes`, is the key (its length as a
 * LEB128 varint, then its bytes) and, for an entry that held an upsert
 * value when the record was written, that value the same way; records are
 * never changed, so an entry that takes another upsert value gets a new
 * record.  Two index maps (util/cx_key_map.h, 8-byte slots) point into the
 * arrays: key -> entry, and upsert value -> a group, whose chain of links
 * names the entries that took that value (a table without an upsert key
 * has neither groups nor links).  A link goes stale when its entry later
 * takes another value or becomes a tombstone; lookups check each entry's
 * current value, so stale links cost time, never correctness, and a trim
 * drops them.  Nothing is ever removed in place: a trim rebuilds the cache
 * from the entries it keeps.  So a key costs about 24 bytes of entry, 11-21
 * of slots and its bytes plus one (a million keys of 8 bytes: about 60 MB
 * with the arrays' doubling).
 */
#include <stdlib.h>
#include <string.h>

#include "util/cx_key_map.h"
#include "memwal/cx_key_cache.h"

/* An entry's rec: the record's offset << KC_FLAG_BITS | the flags. */
#define KC_TOMBSTONE 1
#define KC_HAS_UP 2
#define KC_FLAG_BITS 2

typedef struct kc_entry
{
	uint64_t	rec;
	int64_t		ts;
	uint64_t	gen;
} kc_entry;

typedef struct kc_group
{
	uint64_t	value;			/* offset of the value (its length) in bytes */
	uint32_t	head;			/* newest link + 1; 0: none */
} kc_group;

typedef struct kc_link
{
	uint32_t	entry;
	uint32_t	next;			/* link index + 1; 0 ends the chain */
} kc_link;

struct cx_keycache
{
	cx_idxmap	by_key;			/* key -> entry */
	cx_idxmap	by_upsert;		/* upsert value -> group */
	kc_entry   *entries;
	uint64_t	n;
	uint64_t	cap;
	kc_group   *groups;
	uint64_t	ngroups;
	uint64_t	groups_cap;
	kc_link    *links;
	uint64_t	nlinks;
	uint64_t	links_cap;
	cx_buf		bytes;			/* records */
	bool		truncated;
	int64_t		trunc_ts;
	uint64_t	trunc_gen;
};

static cx_code
oom(cx_err *err)
{
	return cx_err_set(err, CX_ERR_NOMEM,
					  "the writer's key cache: out of memory (or over %u keys)",
					  (unsigned) CX_IDXMAP_MAX);
}

static void
kc_release(cx_keycache *c)
{
	cx_idxmap_free(&c->by_key);
	cx_idxmap_free(&c->by_upsert);
	free(c->entries);
	free(c->groups);
	free(c->links);
	cx_buf_free(&c->bytes);
	memset(c, 0, sizeof(*c));
}

/* An empty cache in *c (whose old contents the caller has released). */
static bool
kc_init(cx_keycache *c)
{
	memset(c, 0, sizeof(*c));
	cx_buf_init(&c->bytes);
	return cx_idxmap_init(&c->by_key) && cx_idxmap_init(&c->by_upsert);
}

cx_keycache *
cx_kc_new(void)
{
	cx_keycache *c = malloc(sizeof(cx_keycache));

	if (c != NULL && !kc_init(c))
	{
		kc_release(c);
		free(c);
		return NULL;
	}
	return c;
}

void
cx_kc_free(cx_keycache *c)
{
	if (c == NULL)
		return;
	kc_release(c);
	free(c);
}

cx_code
cx_kc_clear(cx_keycache *c, cx_err *err)
{
	cx_keycache fresh;

	if (!kc_init(&fresh))
	{
		kc_release(&fresh);
		return oom(err);
	}
	kc_release(c);
	*c = fresh;
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * Records
 * -------------------------------------------------------------------------- */

/* The most bytes a length takes as a LEB128 varint. */
#define LEN_MAX_BYTES 10

static void
put_len(cx_buf *b, uint64_t v)
{
	uint8_t		out[LEN_MAX_BYTES];
	size_t		n = 0;

	do
	{
		out[n++] = (uint8_t) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v != 0);
	cx_buf_put(b, out, n);
}

/* The bytes of the length-prefixed string at p (written by put_len, so
 * well formed); returns what follows it. */
static const uint8_t *
get_bytes(const uint8_t *p, const uint8_t **bytes, size_t *len)
{
	uint64_t	v = 0;

	for (int shift = 0;; shift += 7)
	{
		v |= (uint64_t) (*p & 0x7f) << shift;
		if ((*p++ & 0x80) == 0)
			break;
	}
	*bytes = p;
	*len = v;
	return p + v;
}

static uint64_t
rec_offset(const kc_entry *e)
{
	return e->rec >> KC_FLAG_BITS;
}

static void
entry_key(const void *arg, uint32_t i, const uint8_t **key, size_t *len)
{
	const cx_keycache *c = arg;

	(void) get_bytes(c->bytes.data + rec_offset(&c->entries[i]), key, len);
}

static void
group_value(const void *arg, uint32_t i, const uint8_t **value, size_t *len)
{
	const cx_keycache *c = arg;

	(void) get_bytes(c->bytes.data + c->groups[i].value, value, len);
}

static void
entry_row(const cx_keycache *c, const kc_entry *e, cx_kc_row *out)
{
	const uint8_t *up = get_bytes(c->bytes.data + rec_offset(e), &out->key,
								  &out->key_len);

	out->upsert = NULL;
	out->upsert_len = 0;
	if (e->rec & KC_HAS_UP)
		(void) get_bytes(up, &out->upsert, &out->upsert_len);
	out->ts = e->ts;
	out->gen = e->gen;
	out->tombstone = (e->rec & KC_TOMBSTONE) != 0;
}

/* Room in bytes for row's record, so that writing it cannot fail. */
static bool
record_room(cx_keycache *c, const cx_kc_row *row)
{
	return row->key_len < SIZE_MAX / 4 && row->upsert_len < SIZE_MAX / 4 &&
		cx_buf_reserve(&c->bytes, 2 * LEN_MAX_BYTES + row->key_len +
					   row->upsert_len);
}

/* Appends row's record; returns its offset, and the offset of its upsert
 * value in *value. */
static uint64_t
put_record(cx_keycache *c, const cx_kc_row *row, uint64_t *value)
{
	uint64_t	off = c->bytes.len;

	put_len(&c->bytes, row->key_len);
	cx_buf_put(&c->bytes, row->key, row->key_len);
	*value = c->bytes.len;
	if (row->upsert != NULL)
	{
		put_len(&c->bytes, row->upsert_len);
		cx_buf_put(&c->bytes, row->upsert, row->upsert_len);
	}
	return off;
}

/* --------------------------------------------------------------------------
 * Entries and upsert groups
 * -------------------------------------------------------------------------- */

/* Room for need elements of size in *array (indexes stay 32-bit). */
static bool
grow(void **array, uint64_t *cap, uint64_t need, size_t size)
{
	uint64_t	ncap = *cap == 0 ? 64 : *cap * 2;
	void	   *p;

	if (need <= *cap)
		return true;
	if (need > CX_IDXMAP_MAX)
		return false;
	p = realloc(*array, ncap * size);
	if (p == NULL)
		return false;
	*array = p;
	*cap = ncap;
	return true;
}

/* Links entry to the group of its upsert value up, which the record at
 * offset value holds. */
static cx_code
link_upsert(cx_keycache *c, uint32_t entry, const uint8_t *up, size_t len,
			uint64_t value, cx_err *err)
{
	uint32_t	fresh = (uint32_t) c->ngroups;
	uint32_t	g;

	if (!grow((void **) &c->links, &c->links_cap, c->nlinks + 1, sizeof(kc_link)) ||
		!grow((void **) &c->groups, &c->groups_cap, c->ngroups + 1, sizeof(kc_group)) ||
		!cx_idxmap_add(&c->by_upsert, up, len, fresh, &g, group_value, c))
		return oom(err);
	if (g == fresh)
	{
		c->groups[g].value = value;
		c->groups[g].head = 0;
		c->ngroups++;
	}
	c->links[c->nlinks].entry = entry;
	c->links[c->nlinks].next = c->groups[g].head;
	c->groups[g].head = (uint32_t) ++c->nlinks;
	return CX_OK;
}

static bool
same_upsert(const cx_keycache *c, const kc_entry *e, const cx_kc_row *row)
{
	cx_kc_row	held;

	entry_row(c, e, &held);
	if (held.upsert == NULL || row->upsert == NULL)
		return held.upsert == row->upsert;
	return held.upsert_len == row->upsert_len &&
		memcmp(held.upsert, row->upsert, held.upsert_len) == 0;
}

cx_code
cx_kc_put(cx_keycache *c, const cx_kc_row *row, cx_err *err)
{
	uint32_t	fresh = (uint32_t) c->n;
	uint32_t	i;
	kc_entry   *e;
	bool		new_record;
	uint64_t	value = 0;

	/* Every allocation first: a failure leaves the cache as it was. */
	if (!grow((void **) &c->entries, &c->cap, c->n + 1, sizeof(kc_entry)) ||
		!record_room(c, row) ||
		!cx_idxmap_add(&c->by_key, row->key, row->key_len, fresh, &i,
					   entry_key, c))
		return oom(err);
	e = &c->entries[i];
	new_record = i == fresh || (row->upsert != NULL && !same_upsert(c, e, row));
	if (i == fresh)
		c->n++;
	if (new_record)
		e->rec = put_record(c, row, &value) << KC_FLAG_BITS;
	e->rec = (e->rec >> KC_FLAG_BITS << KC_FLAG_BITS) |
		(row->upsert != NULL ? KC_HAS_UP : 0) |
		(row->tombstone ? KC_TOMBSTONE : 0);
	e->ts = row->ts;
	e->gen = row->gen;
	if (new_record && row->upsert != NULL)
		return link_upsert(c, i, row->upsert, row->upsert_len, value, err);
	return CX_OK;
}

cx_code
cx_kc_truncate(cx_keycache *c, int64_t ts, uint64_t gen, cx_err *err)
{
	if (cx_kc_clear(c, err) != CX_OK)
		return err->code;
	c->truncated = true;
	c->trunc_ts = ts;
	c->trunc_gen = gen;
	return CX_OK;
}

bool
cx_kc_get(const cx_keycache *c, const uint8_t *key, size_t len,
		  cx_kc_row *out)
{
	uint32_t	i = cx_idxmap_get(&c->by_key, key, len, entry_key, c);

	if (i == CX_IDXMAP_NONE)
		return false;
	entry_row(c, &c->entries[i], out);
	return true;
}

void
cx_kc_prefetch(const cx_keycache *c, const uint8_t *key, size_t len)
{
	cx_idxmap_prefetch(&c->by_key, key, len);
}

bool
cx_kc_truncated(const cx_keycache *c, int64_t *ts)
{
	*ts = c->trunc_ts;
	return c->truncated;
}

/* Whether a chain link before `link` already named entry (an entry whose
 * value went V -> W -> V is linked twice). */
static bool
linked_before(const cx_keycache *c, uint32_t head, uint32_t link)
{
	for (uint32_t l = head; l != 0 && l - 1 != link; l = c->links[l - 1].next)
		if (c->links[l - 1].entry == c->links[link].entry)
			return true;
	return false;
}

cx_code
cx_kc_each_upsert(const cx_keycache *c, const uint8_t *up, size_t len,
				  cx_kc_row_fn fn, void *arg, cx_err *err)
{
	uint32_t	g = cx_idxmap_get(&c->by_upsert, up, len, group_value, c);
	uint32_t	head = g == CX_IDXMAP_NONE ? 0 : c->groups[g].head;

	for (uint32_t l = head; l != 0; l = c->links[l - 1].next)
	{
		cx_kc_row	row;

		entry_row(c, &c->entries[c->links[l - 1].entry], &row);
		if (row.tombstone || row.upsert == NULL || row.upsert_len != len ||
			memcmp(row.upsert, up, len) != 0 ||
			linked_before(c, head, l - 1))
			continue;
		if (fn(arg, &row, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* How many entries ahead a bulk put prefetches where the key goes. */
#define PREFETCH_AHEAD 8

/* Puts the entries of src of generations >= min_gen, stamped with ts and
 * gen unless ts is 0. */
static cx_code
put_entries(cx_keycache *dst, const cx_keycache *src, uint64_t min_gen,
			int64_t ts, uint64_t gen, cx_err *err)
{
	for (uint64_t i = 0; i < src->n; i++)
	{
		cx_kc_row	row;

		if (i + PREFETCH_AHEAD < src->n)
		{
			const uint8_t *key;
			size_t		len;

			entry_key(src, (uint32_t) (i + PREFETCH_AHEAD), &key, &len);
			cx_kc_prefetch(dst, key, len);
		}
		entry_row(src, &src->entries[i], &row);
		if (row.gen < min_gen)
			continue;
		if (ts != 0)
		{
			row.ts = ts;
			row.gen = gen;
		}
		if (cx_kc_put(dst, &row, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* Moves src's contents into the empty dst (src takes dst's empty ones),
 * stamped as cx_kc_apply stamps them: one large transaction's keys are
 * then never held twice. */
static void
move_into_empty(cx_keycache *dst, cx_keycache *src, int64_t ts, uint64_t gen)
{
	cx_keycache empty = *dst;

	*dst = *src;
	*src = empty;
	if (dst->truncated)
	{
		dst->trunc_ts = ts;
		dst->trunc_gen = gen;
	}
	for (uint64_t i = 0; ts != 0 && i < dst->n; i++)
	{
		dst->entries[i].ts = ts;
		dst->entries[i].gen = gen;
	}
}

cx_code
cx_kc_apply(cx_keycache *dst, cx_keycache *src, int64_t ts, uint64_t gen,
			cx_err *err)
{
	if (dst->n == 0 && !dst->truncated)
	{
		move_into_empty(dst, src, ts, gen);
		return CX_OK;
	}
	if (src->truncated && cx_kc_truncate(dst, ts, gen, err) != CX_OK)
		return err->code;
	return put_entries(dst, src, 0, ts, gen, err);
}

cx_code
cx_kc_trim(cx_keycache *c, uint64_t through, cx_err *err)
{
	cx_keycache kept;
	bool		any = c->truncated && c->trunc_gen <= through;

	for (uint64_t i = 0; !any && i < c->n; i++)
		any = c->entries[i].gen <= through;
	if (!any)
		return CX_OK;
	if (!kc_init(&kept))
	{
		kc_release(&kept);
		return oom(err);
	}
	if (c->truncated && c->trunc_gen > through)
	{
		kept.truncated = true;
		kept.trunc_ts = c->trunc_ts;
		kept.trunc_gen = c->trunc_gen;
	}
	if (put_entries(&kept, c, through + 1, 0, 0, err) != CX_OK)
	{
		kc_release(&kept);
		return err->code;
	}
	kc_release(c);
	*c = kept;
	return CX_OK;
}

uint64_t
cx_kc_keys(const cx_keycache *c)
{
	return c->n;
}

uint64_t
cx_kc_memory(const cx_keycache *c)
{
	return cx_idxmap_memory(&c->by_key) + cx_idxmap_memory(&c->by_upsert) +
		c->cap * sizeof(kc_entry) + c->groups_cap * sizeof(kc_group) +
		c->links_cap * sizeof(kc_link) + c->bytes.cap;
}

/* --------------------------------------------------------------------------
 * Loading a generation
 * -------------------------------------------------------------------------- */

/* Adds row i of a group read with the key, upsert and hidden columns. */
static cx_code
add_group_row(cx_keycache *c, const cx_rowgroup *g, const cx_layout *layout,
			  uint32_t key_col, int32_t upsert_col, uint32_t i, uint64_t gen,
			  cx_err *err)
{
	cx_kc_row	row = {0};

	row.ts = cx_row_ts(g, layout, i);
	row.gen = gen;
	row.tombstone = cx_row_tombstone(g, layout, i);
	if (!cx_key_bytes(cx_layout_column(layout, g, key_col), i, &row.key,
					  &row.key_len))
		/* NULL keys are never live: the only stored one is a marker. */
		return row.tombstone ? cx_kc_truncate(c, row.ts, gen, err) : CX_OK;
	if (upsert_col >= 0 && !row.tombstone)
		(void) cx_key_bytes(cx_layout_column(layout, g, (uint32_t) upsert_col),
							i, &row.upsert, &row.upsert_len);
	return cx_kc_put(c, &row, err);
}

cx_code
cx_kc_add_generation(cx_keycache *c, cx_objstore *s,
					 const cx_shard_manifest *m, const cx_generation *g,
					 const cx_schema *table, uint32_t key_col,
					 int32_t upsert_col, cx_err *err)
{
	const cx_fragment_info *fi = &g->fragment;
	cx_objstore *from;
	cx_fragr   *r;
	cx_layout	layout = {0};
	bool	   *want = NULL;
	bool	   *table_want = NULL;
	cx_code		rc;

	if (cx_generation_open(s, m, g, &from, err) != CX_OK)
		return err->code;
	if (cx_fragr_open_entry(from, fi, &r, err) != CX_OK)
	{
		cx_generation_done(s, from);
		return err->code;
	}
	rc = cx_layout_check(table, cx_fragr_schema(r), fi->path, &layout, err);
	if (rc == CX_OK &&
		((want = calloc(layout.nfrag, sizeof(bool))) == NULL ||
		 (table_want = calloc(table->ncolumns, sizeof(bool))) == NULL))
		rc = oom(err);
	if (rc == CX_OK)
	{
		table_want[key_col] = true;
		if (upsert_col >= 0)
			table_want[upsert_col] = true;
		cx_layout_want(&layout, table_want, want);
		want[layout.ts_col] = want[layout.tomb_col] = true;
	}
	for (uint32_t grp = 0; rc == CX_OK && grp < cx_fragr_num_groups(r); grp++)
	{
		cx_rowgroup *rg;

		if ((rc = cx_fragr_read_group(r, grp, want, &rg, err)) != CX_OK)
			break;
		rc = cx_layout_adapt(&layout, rg, table_want, err);
		for (uint32_t i = 0; rc == CX_OK && i < cx_rowgroup_rows(rg); i++)
			rc = add_group_row(c, rg, &layout, key_col, upsert_col, i,
							   g->gen, err);
		cx_rowgroup_free(rg);
	}
	free(want);
	free(table_want);
	cx_layout_free(&layout);
	cx_fragr_close(r);
	cx_generation_done(s, from);
	return rc;
}
