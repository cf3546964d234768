/*
 * cx_gen_entries.c — the encoded generation entries a shard writer reuses
 * from one shard-manifest version to the next.
 *
 * Every version lists every pending generation, and a generation's entry
 * (its number, commit-time range, carrier and fragment entry with the
 * column statistics) never changes once sealed; re-encoding all of them for
 * each seal costs in proportion to the backlog (with merges a few hundred
 * generations behind, most of the writer's time).  So the writer keeps the
 * bytes each entry encoded to, in generation order, and the next version
 * copies them.  An entry is reused only for a generation equal in every
 * field its fragment entry records apart from the statistics, which the
 * footer CRC and the random path stand for (a generation rebuilt under the
 * same number, after a seal whose outcome was unknown, has another path),
 * and only in the format it was encoded in.  Without memory the entries are
 * dropped and encoded afresh: the bytes written never depend on the cache.
 */
#include "memwal/cx_shard_manifest.h"

#include <stdlib.h>
#include <string.h>

#include "util/cx_buf.h"

typedef struct gen_entry
{
	cx_generation id;			/* fragment.path owned; no statistics */
	size_t		off;			/* its bytes in the cache's buffer */
	size_t		len;
} gen_entry;

struct cx_gen_entries
{
	uint16_t	format;
	gen_entry  *e;
	uint32_t	n;
	cx_buf		bytes;
	uint64_t	reused;
	uint64_t	encoded;
};

cx_gen_entries *
cx_gen_entries_new(void)
{
	cx_gen_entries *c = calloc(1, sizeof(*c));

	if (c != NULL)
		cx_buf_init(&c->bytes);
	return c;
}

static void
drop_entries(gen_entry *e, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(e[i].id.fragment.path);
	free(e);
}

void
cx_gen_entries_free(cx_gen_entries *c)
{
	if (c == NULL)
		return;
	drop_entries(c->e, c->n);
	cx_buf_free(&c->bytes);
	free(c);
}

static bool
same_generation(const cx_generation *a, const cx_generation *b)
{
	const cx_fragment_info *x = &a->fragment;
	const cx_fragment_info *y = &b->fragment;

	return a->gen == b->gen && a->min_ts == b->min_ts &&
		a->max_ts == b->max_ts && a->carrier == b->carrier &&
		x->size == y->size && x->rows == y->rows &&
		x->footer_offset == y->footer_offset &&
		x->footer_len == y->footer_len && x->footer_crc == y->footer_crc &&
		x->ncolumns == y->ncolumns && x->path != NULL &&
		strcmp(x->path, y->path) == 0;
}

/* The cached entry of g, if any; *from: where the search goes on (the
 * entries and the generations listed are both in generation order). */
static gen_entry *
find_entry(cx_gen_entries *c, const cx_generation *g, uint32_t *from)
{
	while (*from < c->n && c->e[*from].id.gen < g->gen)
		(*from)++;
	if (*from < c->n && same_generation(&c->e[*from].id, g))
		return &c->e[*from];
	return NULL;
}

/* Records g's entry, the last len bytes of kept, in list[i], with path
 * (taken over; NULL: a copy of g's is made). */
static bool
note_entry(gen_entry *list, uint32_t i, const cx_generation *g, char *path,
		   const cx_buf *kept, size_t len)
{
	list[i].id = *g;
	list[i].id.fragment.stats = NULL;
	list[i].id.fragment.origin_shard = NULL;
	list[i].id.fragment.path = path != NULL ? path : cx_strdup(g->fragment.path);
	list[i].off = kept->len - len;
	list[i].len = len;
	return list[i].id.fragment.path != NULL && cx_buf_ok(kept);
}

/*
 * Appends the n entries of gens, in format, to out: copied where c holds
 * them, else encoded; c then holds exactly these.  out gets the same bytes
 * whatever c held, and whether or not c could keep them.
 */
void
cx_gen_entries_encode(cx_gen_entries *c, const cx_generation *gens,
					  uint32_t n, uint16_t format, cx_buf *out)
{
	gen_entry  *list = n > 0 ? calloc(n, sizeof(gen_entry)) : NULL;
	cx_buf		kept;
	uint32_t	from = 0;
	uint32_t	noted = 0;
	bool		keep = n == 0 || list != NULL;

	cx_buf_init(&kept);
	if (c->format != format)
		from = c->n;			/* encoded in another format: none reused */
	for (uint32_t i = 0; i < n; i++)
	{
		gen_entry  *old = find_entry(c, &gens[i], &from);
		size_t		start = out->len;
		char	   *path = NULL;

		if (old != NULL)
		{
			cx_buf_put(out, c->bytes.data + old->off, old->len);
			c->reused++;
			/* The old list goes at the end: its path moves, not copied. */
			path = old->id.fragment.path;
			old->id.fragment.path = NULL;
		}
		else
		{
			cx_shard_generation_encode(&gens[i], format, out);
			c->encoded++;
		}
		if (keep && !cx_buf_ok(out))
			keep = false;		/* the encoding fails anyway */
		if (!keep)
		{
			free(path);
			continue;
		}
		cx_buf_put(&kept, out->data + start, out->len - start);
		keep = note_entry(list, i, &gens[i], path, &kept, out->len - start);
		noted = i + 1;
	}
	if (!keep)
	{
		/* Out of memory: forget everything; the next version encodes. */
		drop_entries(list, noted);
		cx_buf_free(&kept);
		list = NULL;
		n = 0;
	}
	drop_entries(c->e, c->n);
	cx_buf_free(&c->bytes);
	c->e = list;
	c->n = n;
	c->bytes = kept;
	c->format = format;
}

void
cx_gen_entries_counts(const cx_gen_entries *c, uint64_t *reused,
					  uint64_t *encoded)
{
	*reused = c->reused;
	*encoded = c->encoded;
}

uint64_t
cx_gen_entries_memory(const cx_gen_entries *c)
{
	uint64_t	bytes;

	if (c == NULL)
		return 0;
	bytes = sizeof(*c) + c->bytes.cap + (uint64_t) c->n * sizeof(gen_entry);
	for (uint32_t i = 0; i < c->n; i++)
		bytes += cx_str_memory(c->e[i].id.fragment.path);
	return bytes;
}
