/*
 * cx_key_map.c — open addressing with linear probing over a power-of-two slot
 * array kept at most 3/4 full, so probe runs stay short.  Keys are copied
 * into an arena of large blocks, so the map makes a handful of allocations
 * however many keys it holds, and freeing it is cheap.
 *
 * A slot is small (a key's hash and the index of its entry): probing, which
 * is random access into the slot array, touches 16 bytes per slot instead of
 * a whole entry, so a map of a few hundred thousand keys probes a few MB
 * rather than tens.  Entries (key and value) sit in a dense array in
 * insertion order, which is the order scans and merges visit them again.
 */
#include "util/cx_key_map.h"

#include <stdlib.h>
#include <string.h>

#include "util/cx_hash.h"

#define INITIAL_SLOTS 64
#define ARENA_BLOCK (64 * 1024)

typedef struct slot
{
	uint64_t	hash;			/* 0 = empty; stored hashes are never 0 */
	uint64_t	entry;			/* index in entries */
} slot;

typedef struct entry
{
	const uint8_t *key;
	size_t		len;
	cx_keyver	val;
} entry;

/* A block of key bytes; blocks are chained for freeing. */
typedef struct arena_block
{
	struct arena_block *next;
	size_t		used;
	size_t		size;
	uint8_t		data[];
} arena_block;

struct cx_keymap
{
	slot	   *slots;
	uint64_t	nslots;			/* power of two */
	uint64_t	count;			/* entries in use */
	entry	   *entries;
	uint64_t	entries_cap;
	arena_block *arena;
	uint64_t	arena_bytes;
};

/*
 * The key's hash (cx_hash_bytes), never 0.  Keys are not attacker chosen
 * in a way that matters here: a bad distribution costs time, never
 * correctness, and the probe loop is bounded by the slot count.
 */
static uint64_t
hash_bytes(const uint8_t *p, size_t len)
{
	uint64_t	h = cx_hash_bytes(p, len);

	return h != 0 ? h : 1;
}

cx_keymap *
cx_keymap_new(void)
{
	cx_keymap  *m = calloc(1, sizeof(cx_keymap));

	if (m == NULL)
		return NULL;
	m->slots = calloc(INITIAL_SLOTS, sizeof(slot));
	if (m->slots == NULL)
	{
		free(m);
		return NULL;
	}
	m->nslots = INITIAL_SLOTS;
	return m;
}

void
cx_keymap_free(cx_keymap *m)
{
	if (m == NULL)
		return;
	while (m->arena != NULL)
	{
		arena_block *next = m->arena->next;

		free(m->arena);
		m->arena = next;
	}
	free(m->slots);
	free(m->entries);
	free(m);
}

/* The slot holding key, or the empty slot where it would go. */
static slot *
probe(const cx_keymap *m, uint64_t hash, const uint8_t *key, size_t len)
{
	uint64_t	mask = m->nslots - 1;
	uint64_t	i = hash & mask;

	/* The table is never full, so an empty slot ends the run. */
	for (uint64_t n = 0; n < m->nslots; n++, i = (i + 1) & mask)
	{
		const slot *s = &m->slots[i];
		const entry *e;

		if (s->hash == 0)
			return (slot *) s;
		if (s->hash != hash)
			continue;
		e = &m->entries[s->entry];
		if (e->len == len && (len == 0 || memcmp(e->key, key, len) == 0))
			return (slot *) s;
	}
	return NULL;
}

/* Rehashes the map into n slots (a power of two holding every key). */
static bool
resize(cx_keymap *m, uint64_t n)
{
	slot	   *fresh = calloc(n, sizeof(slot));

	if (fresh == NULL)
		return false;
	/* Rehashing moves distinct keys: each goes to the first empty slot of
	 * its run. */
	for (uint64_t i = 0; i < m->nslots; i++)
	{
		uint64_t	j = m->slots[i].hash & (n - 1);

		if (m->slots[i].hash == 0)
			continue;
		while (fresh[j].hash != 0)
			j = (j + 1) & (n - 1);
		fresh[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = fresh;
	m->nslots = n;
	return true;
}

/* Room for one more entry. */
static bool
entries_room(cx_keymap *m, uint64_t n)
{
	entry	   *grown;

	if (n <= m->entries_cap)
		return true;
	if (n < m->entries_cap * 2)
		n = m->entries_cap * 2;
	if (n < 64)
		n = 64;
	grown = realloc(m->entries, n * sizeof(entry));
	if (grown == NULL)
		return false;
	m->entries = grown;
	m->entries_cap = n;
	return true;
}

/* Largest reservation honoured: 2^28 slots; a larger hint is ignored. */
#define RESERVE_MAX_SLOTS ((uint64_t) 1 << 28)

bool
cx_keymap_reserve(cx_keymap *m, uint64_t n)
{
	uint64_t	want = m->nslots;

	if (n >= RESERVE_MAX_SLOTS / 2)
		return false;
	/* The load limit of cx_keymap_upsert: (count + 1) * 4 <= slots * 3. */
	while ((n + 1) * 4 > want * 3)
		want *= 2;
	if (want != m->nslots && !resize(m, want))
		return false;
	return entries_room(m, n);
}

/* A stable copy of key in the arena (a key longer than a block gets a block
 * of its own). */
static const uint8_t *
arena_copy(cx_keymap *m, const uint8_t *key, size_t len)
{
	arena_block *b = m->arena;
	uint8_t    *p;

	if (b == NULL || b->size - b->used < len)
	{
		size_t		size = len > ARENA_BLOCK ? len : ARENA_BLOCK;

		b = malloc(sizeof(arena_block) + size);
		if (b == NULL)
			return NULL;
		b->next = m->arena;
		b->used = 0;
		b->size = size;
		m->arena = b;
		m->arena_bytes += sizeof(arena_block) + size;
	}
	p = b->data + b->used;
	if (len > 0)
		memcpy(p, key, len);
	b->used += len;
	return p;
}

cx_code
cx_keymap_upsert(cx_keymap *m, const uint8_t *key, size_t len, cx_keyver **val,
				 bool *found, cx_err *err)
{
	uint64_t	hash = hash_bytes(key, len);
	slot	   *s;
	entry	   *e;
	const uint8_t *copy;

	if (((m->count + 1) * 4 > m->nslots * 3 && !resize(m, m->nslots * 2)) ||
		!entries_room(m, m->count + 1))
		return cx_err_set(err, CX_ERR_NOMEM,
						  "key map of %llu keys: out of memory",
						  (unsigned long long) m->count);
	s = probe(m, hash, key, len);
	*found = s->hash != 0;
	if (!*found)
	{
		copy = arena_copy(m, key, len);
		if (copy == NULL)
			return cx_err_set(err, CX_ERR_NOMEM,
							  "key map of %llu keys: out of memory",
							  (unsigned long long) m->count);
		s->hash = hash;
		s->entry = m->count;
		e = &m->entries[m->count++];
		e->key = copy;
		e->len = len;
		memset(&e->val, 0, sizeof(e->val));
	}
	*val = &m->entries[s->entry].val;
	return CX_OK;
}

void
cx_keymap_prefetch(const cx_keymap *m, const uint8_t *key, size_t len)
{
	__builtin_prefetch(&m->slots[hash_bytes(key, len) & (m->nslots - 1)]);
}

cx_keyver *
cx_keymap_get(const cx_keymap *m, const uint8_t *key, size_t len)
{
	slot	   *s = probe(m, hash_bytes(key, len), key, len);

	return s->hash != 0 ? &m->entries[s->entry].val : NULL;
}

uint64_t
cx_keymap_count(const cx_keymap *m)
{
	return m->count;
}

void
cx_keymap_key(const cx_keymap *m, uint64_t i, const uint8_t **key,
			  size_t *len)
{
	*key = m->entries[i].key;
	*len = m->entries[i].len;
}

uint64_t
cx_keymap_memory(const cx_keymap *m)
{
	return sizeof(cx_keymap) + m->nslots * sizeof(slot) +
		m->entries_cap * sizeof(entry) + m->arena_bytes;
}
