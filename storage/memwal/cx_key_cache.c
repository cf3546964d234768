/*
 * cx_key_cache.c — the newest version of each key, with its upsert value
 * (cx_key_cache.h).
 *
 * Entries sit in a dense array in the order their keys first arrived; two
 * hash maps (util/cx_key_map.h) point into it: key -> entry, and upsert
 * value -> a chain of links to the entries that took that value.  A link
 * goes stale when its entry later takes another value or becomes a
 * tombstone; lookups check each entry's current value, so stale links cost
 * time, never correctness, and a trim drops them.  Nothing is ever removed
 * in place: a trim rebuilds the cache from the entries it keeps.
 */
#include <stdlib.h>
#include <string.h>

#include "util/cx_key_map.h"
#include "memwal/cx_key_cache.h"

typedef struct kc_entry
{
	size_t		key_off;		/* into bytes */
	size_t		key_len;
	size_t		up_off;
	size_t		up_len;
	bool		has_up;
	bool		tombstone;
	int64_t		ts;
	uint64_t	gen;
} kc_entry;

typedef struct kc_link
{
	uint64_t	entry;
	uint64_t	next;			/* link index + 1; 0 ends the chain */
} kc_link;

struct cx_keycache
{
	cx_keymap  *by_key;			/* key -> entry index (cx_keyver.row) */
	cx_keymap  *by_upsert;		/* upsert value -> newest link + 1 (row) */
	kc_entry   *entries;
	uint64_t	n;
	uint64_t	cap;
	kc_link    *links;
	uint64_t	nlinks;
	uint64_t	links_cap;
	cx_buf		bytes;			/* keys and upsert values */
	bool		truncated;
	int64_t		trunc_ts;
	uint64_t	trunc_gen;
};

static cx_code
oom(cx_err *err)
{
	return cx_err_set(err, CX_ERR_NOMEM, "the writer's key cache: out of memory");
}

static void
kc_release(cx_keycache *c)
{
	cx_keymap_free(c->by_key);
	cx_keymap_free(c->by_upsert);
	free(c->entries);
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
	c->by_key = cx_keymap_new();
	c->by_upsert = cx_keymap_new();
	return c->by_key != NULL && c->by_upsert != NULL;
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

static void
entry_row(const cx_keycache *c, const kc_entry *e, cx_kc_row *out)
{
	out->key = c->bytes.data + e->key_off;
	out->key_len = e->key_len;
	out->upsert = e->has_up ? c->bytes.data + e->up_off : NULL;
	out->upsert_len = e->has_up ? e->up_len : 0;
	out->ts = e->ts;
	out->gen = e->gen;
	out->tombstone = e->tombstone;
}

/* Copies p into bytes; its offset into *off. */
static bool
store_bytes(cx_keycache *c, const uint8_t *p, size_t len, size_t *off)
{
	*off = c->bytes.len;
	cx_buf_put(&c->bytes, p, len);
	return cx_buf_ok(&c->bytes);
}

static bool
grow(void **array, uint64_t *cap, uint64_t need, size_t size)
{
	uint64_t	ncap = *cap == 0 ? 64 : *cap * 2;
	void	   *p;

	if (need <= *cap)
		return true;
	p = realloc(*array, ncap * size);
	if (p == NULL)
		return false;
	*array = p;
	*cap = ncap;
	return true;
}

/* Links entry to the chain of its upsert value. */
static cx_code
link_upsert(cx_keycache *c, uint64_t entry, const uint8_t *up, size_t len,
			cx_err *err)
{
	cx_keyver  *head;
	bool		found;

	if (!grow((void **) &c->links, &c->links_cap, c->nlinks + 1, sizeof(kc_link)))
		return oom(err);
	if (cx_keymap_upsert(c->by_upsert, up, len, &head, &found, err) != CX_OK)
		return err->code;
	c->links[c->nlinks].entry = entry;
	c->links[c->nlinks].next = head->row;
	head->row = ++c->nlinks;
	return CX_OK;
}

static bool
same_upsert(const cx_keycache *c, const kc_entry *e, const cx_kc_row *row)
{
	if (!e->has_up || row->upsert == NULL)
		return e->has_up == (row->upsert != NULL);
	return e->up_len == row->upsert_len &&
		memcmp(c->bytes.data + e->up_off, row->upsert, e->up_len) == 0;
}

cx_code
cx_kc_put(cx_keycache *c, const cx_kc_row *row, cx_err *err)
{
	cx_keyver  *v;
	bool		found;
	kc_entry   *e;
	bool		new_up;

	if (!grow((void **) &c->entries, &c->cap, c->n + 1, sizeof(kc_entry)))
		return oom(err);
	if (cx_keymap_upsert(c->by_key, row->key, row->key_len, &v, &found,
						 err) != CX_OK)
		return err->code;
	if (!found)
	{
		v->row = c->n;
		e = &c->entries[c->n++];
		memset(e, 0, sizeof(*e));
		e->key_len = row->key_len;
		if (!store_bytes(c, row->key, row->key_len, &e->key_off))
			return oom(err);
	}
	e = &c->entries[v->row];
	new_up = row->upsert != NULL && (!found || !same_upsert(c, e, row));
	if (new_up && !store_bytes(c, row->upsert, row->upsert_len, &e->up_off))
		return oom(err);
	e->has_up = row->upsert != NULL;
	e->up_len = row->upsert_len;
	e->tombstone = row->tombstone;
	e->ts = row->ts;
	e->gen = row->gen;
	if (new_up)
		return link_upsert(c, (uint64_t) (e - c->entries), row->upsert,
						   row->upsert_len, err);
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
	cx_keyver  *v = cx_keymap_get(c->by_key, key, len);

	if (v == NULL)
		return false;
	entry_row(c, &c->entries[v->row], out);
	return true;
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
linked_before(const cx_keycache *c, uint64_t head, uint64_t link)
{
	for (uint64_t l = head; l != 0 && l - 1 != link; l = c->links[l - 1].next)
		if (c->links[l - 1].entry == c->links[link].entry)
			return true;
	return false;
}

cx_code
cx_kc_each_upsert(const cx_keycache *c, const uint8_t *up, size_t len,
				  cx_kc_row_fn fn, void *arg, cx_err *err)
{
	cx_keyver  *head = cx_keymap_get(c->by_upsert, up, len);

	for (uint64_t l = head == NULL ? 0 : head->row; l != 0;
		 l = c->links[l - 1].next)
	{
		const kc_entry *e = &c->entries[c->links[l - 1].entry];
		cx_kc_row	row;

		entry_row(c, e, &row);
		if (e->tombstone || !e->has_up || e->up_len != len ||
			memcmp(row.upsert, up, len) != 0 ||
			linked_before(c, head->row, l - 1))
			continue;
		if (fn(arg, &row, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

/* Puts the entries of src of generations >= min_gen, stamped with ts and
 * gen unless ts is 0. */
static cx_code
put_entries(cx_keycache *dst, const cx_keycache *src, uint64_t min_gen,
			int64_t ts, uint64_t gen, cx_err *err)
{
	for (uint64_t i = 0; i < src->n; i++)
	{
		cx_kc_row	row;

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

cx_code
cx_kc_apply(cx_keycache *dst, const cx_keycache *src, int64_t ts,
			uint64_t gen, cx_err *err)
{
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
	return cx_keymap_memory(c->by_key) + cx_keymap_memory(c->by_upsert) +
		c->cap * sizeof(kc_entry) + c->links_cap * sizeof(kc_link) +
		c->bytes.cap;
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
