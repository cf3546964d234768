/*
 * cx_lru.c — a bounded LRU cache of byte strings by name (cx_lru.h): a
 * fixed table of hash chains for lookups and one doubly linked list, most
 * recently used first, for eviction.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/cx_lru.h"

/* Chains per cache: a few entries each at the sizes caches hold (4 KiB
 * blocks in MiBs), and a fixed table keeps the code free of rehashing. */
#define LRU_BUCKETS 4096

typedef struct lru_entry
{
	struct lru_entry *chain;	/* next in its bucket */
	struct lru_entry *newer;
	struct lru_entry *older;
	uint64_t	hash;
	size_t		cost;			/* what the bound counts */
	size_t		len;
	uint8_t    *data;
	char		name[];
} lru_entry;

struct cx_lru
{
	pthread_mutex_t lock;
	size_t		limit;
	lru_entry  *newest;
	lru_entry  *oldest;
	cx_lru_stats stats;
	lru_entry  *buckets[LRU_BUCKETS];
};

static uint64_t
hash_name(const char *name)
{
	uint64_t	h = 14695981039346656037ULL;	/* FNV-1a */

	for (const char *p = name; *p != '\0'; p++)
		h = (h ^ (uint8_t) *p) * 1099511628211ULL;
	return h;
}

cx_lru *
cx_lru_new(size_t limit)
{
	cx_lru	   *c = calloc(1, sizeof(cx_lru));

	if (c == NULL)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->limit = limit;
	return c;
}

static void
unlink_lru(cx_lru *c, lru_entry *e)
{
	if (e->newer != NULL)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older != NULL)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void
push_newest(cx_lru *c, lru_entry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest != NULL)
		c->newest->newer = e;
	c->newest = e;
	if (c->oldest == NULL)
		c->oldest = e;
}

/* The entry called name, and where the link to it is in its chain. */
static lru_entry *
find(cx_lru *c, const char *name, uint64_t h, lru_entry ***link)
{
	lru_entry **at = &c->buckets[h % LRU_BUCKETS];

	while (*at != NULL && ((*at)->hash != h || strcmp((*at)->name, name) != 0))
		at = &(*at)->chain;
	*link = at;
	return *at;
}

static void
remove_entry(cx_lru *c, lru_entry *e)
{
	lru_entry **link;

	(void) find(c, e->name, e->hash, &link);
	*link = e->chain;
	unlink_lru(c, e);
	c->stats.bytes -= e->cost;
	c->stats.entries--;
	free(e->data);
	free(e);
}

/* Evicts the least recently used until `room` more bytes fit. */
static void
make_room(cx_lru *c, size_t room)
{
	while (c->oldest != NULL && c->stats.bytes + room > c->limit)
	{
		remove_entry(c, c->oldest);
		c->stats.evictions++;
	}
}

void
cx_lru_free(cx_lru *c)
{
	if (c == NULL)
		return;
	while (c->oldest != NULL)
		remove_entry(c, c->oldest);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

bool
cx_lru_get(cx_lru *c, const char *name, cx_buf *out)
{
	lru_entry **link;
	lru_entry  *e;
	bool		hit = false;

	pthread_mutex_lock(&c->lock);
	e = find(c, name, hash_name(name), &link);
	if (e != NULL)
	{
		cx_buf_reset(out);
		cx_buf_put(out, e->data, e->len);
		hit = cx_buf_ok(out);
		unlink_lru(c, e);
		push_newest(c, e);
	}
	if (hit)
		c->stats.hits++;
	else
		c->stats.misses++;
	pthread_mutex_unlock(&c->lock);
	return hit;
}

/* A new entry holding a copy of name and data; NULL on OOM. */
static lru_entry *
new_entry(const char *name, uint64_t h, const void *data, size_t len)
{
	size_t		name_len = strlen(name) + 1;
	lru_entry  *e = malloc(offsetof(lru_entry, name) + name_len);

	if (e == NULL)
		return NULL;
	memset(e, 0, offsetof(lru_entry, name));
	memcpy(e->name, name, name_len);
	e->data = malloc(len > 0 ? len : 1);
	if (e->data == NULL)
	{
		free(e);
		return NULL;
	}
	memcpy(e->data, data, len);
	e->len = len;
	e->hash = h;
	e->cost = offsetof(lru_entry, name) + name_len + len;
	return e;
}

void
cx_lru_put(cx_lru *c, const char *name, const void *data, size_t len)
{
	uint64_t	h = hash_name(name);
	lru_entry **link;
	lru_entry  *old;
	lru_entry  *e = new_entry(name, h, data, len);

	if (e == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	old = find(c, name, h, &link);
	if (old != NULL)
		remove_entry(c, old);
	if (e->cost > c->limit)
	{
		pthread_mutex_unlock(&c->lock);
		free(e->data);
		free(e);
		return;
	}
	make_room(c, e->cost);
	(void) find(c, name, h, &link);
	*link = e;
	push_newest(c, e);
	c->stats.bytes += e->cost;
	c->stats.entries++;
	pthread_mutex_unlock(&c->lock);
}

void
cx_lru_set_limit(cx_lru *c, size_t limit)
{
	pthread_mutex_lock(&c->lock);
	c->limit = limit;
	make_room(c, 0);
	pthread_mutex_unlock(&c->lock);
}

cx_lru_stats
cx_lru_stats_of(cx_lru *c)
{
	cx_lru_stats s;

	pthread_mutex_lock(&c->lock);
	s = c->stats;
	pthread_mutex_unlock(&c->lock);
	return s;
}
