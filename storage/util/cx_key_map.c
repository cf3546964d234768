/*
 * cx_key_map.c — open addressing with linear probing over a power-of-two slot
 * array kept at most 3/4 full, so probe runs stay short.
 *
 * The index map (cx_idxmap) holds only slots: 32 bits of a key's hash and
 * its index + 1 in 8 bytes, so probing, which is random access into the
 * slot array, touches 8 bytes per slot and a map of a million keys is 16
 * MB of slots; the keys stay in the caller's array, read only to confirm a
 * slot whose hash bits match.  The key map (cx_keymap) is an index map
 * over a dense array of entries (key and value) in insertion order, which
 * is the order scans and merges visit them again; its keys are copied into
 * an arena of large blocks, so it makes a handful of allocations however
 * many keys it holds, and freeing it is cheap.
 */
#include "util/cx_key_map.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/cx_hash.h"

#define INITIAL_SLOTS 64
#define ARENA_BLOCK (64 * 1024)

/* --------------------------------------------------------------------------
 * The index map
 * -------------------------------------------------------------------------- */

/*
 * 32 bits of the key's hash (cx_hash_bytes).  Keys are not attacker chosen
 * in a way that matters here: a bad distribution costs time, never
 * correctness, and the probe loop is bounded by the slot count.
 */
static uint32_t
hash_bytes(const uint8_t *p, size_t len)
{
	return (uint32_t) cx_hash_bytes(p, len);
}

/* A slot: 0 = empty, else the hash in the high half and index + 1. */
static inline uint32_t
slot_hash(uint64_t s)
{
	return (uint32_t) (s >> 32);
}

static inline uint32_t
slot_index(uint64_t s)
{
	return (uint32_t) s - 1;
}

bool
cx_idxmap_init(cx_idxmap *m)
{
	m->slots = calloc(INITIAL_SLOTS, sizeof(uint64_t));
	m->nslots = m->slots == NULL ? 0 : INITIAL_SLOTS;
	m->count = 0;
	return m->slots != NULL;
}

void
cx_idxmap_free(cx_idxmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* The slot holding key, or the empty slot where it would go. */
static uint64_t *
probe(const cx_idxmap *m, uint32_t hash, const uint8_t *key, size_t len,
	  cx_idxmap_key_fn key_of, const void *arg)
{
	uint64_t	mask = m->nslots - 1;
	uint64_t	i = hash & mask;

	/* The table is never full, so an empty slot ends the run. */
	for (uint64_t n = 0; n < m->nslots; n++, i = (i + 1) & mask)
	{
		uint64_t	s = m->slots[i];
		const uint8_t *k;
		size_t		klen;

		if (s == 0)
			return &m->slots[i];
		if (slot_hash(s) != hash)
			continue;
		key_of(arg, slot_index(s), &k, &klen);
		if (klen == len && (len == 0 || memcmp(k, key, len) == 0))
			return &m->slots[i];
	}
	return NULL;
}

/* Slot arrays at least this large ask for huge pages. */
#define HUGE_PAGE ((uintptr_t) 2 << 20)
#define HUGE_SLOTS_BYTES (4 * HUGE_PAGE)

/*
 * A zeroed array of n slots.  A large one asks the kernel for huge pages
 * where it may (transparent huge pages in "madvise" mode, Debian's
 * default): probing touches a random slot per key, and with 4 KiB pages a
 * map of millions of keys misses the TLB on nearly every lookup as well as
 * the cache.  Only advice: without it the array works the same.
 */
static uint64_t *
new_slots(uint64_t n)
{
	uint64_t   *slots = calloc(n, sizeof(uint64_t));

#ifdef MADV_HUGEPAGE
	if (slots != NULL && n * sizeof(uint64_t) >= HUGE_SLOTS_BYTES)
	{
		uintptr_t	start = ((uintptr_t) slots + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
		uintptr_t	end = ((uintptr_t) slots + n * sizeof(uint64_t)) & ~(HUGE_PAGE - 1);

		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
	}
#endif
	return slots;
}

/* Rehashes the map into n slots (a power of two holding every key). */
static bool
resize(cx_idxmap *m, uint64_t n)
{
	uint64_t   *fresh = new_slots(n);

	if (fresh == NULL)
		return false;
	/* Rehashing moves distinct keys: each goes to the first empty slot of
	 * its run. */
	for (uint64_t i = 0; i < m->nslots; i++)
	{
		uint64_t	j = slot_hash(m->slots[i]) & (n - 1);

		if (m->slots[i] == 0)
			continue;
		while (fresh[j] != 0)
			j = (j + 1) & (n - 1);
		fresh[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = fresh;
	m->nslots = n;
	return true;
}

/* Largest reservation honoured: 2^28 slots; a larger hint is ignored. */
#define RESERVE_MAX_SLOTS ((uint64_t) 1 << 28)

bool
cx_idxmap_reserve(cx_idxmap *m, uint64_t n)
{
	uint64_t	want = m->nslots;

	if (n >= RESERVE_MAX_SLOTS / 2)
		return false;
	/* The load limit of cx_idxmap_add: (count + 1) * 4 <= slots * 3. */
	while ((n + 1) * 4 > want * 3)
		want *= 2;
	return want == m->nslots || resize(m, want);
}

uint32_t
cx_idxmap_get(const cx_idxmap *m, const uint8_t *key, size_t len,
			  cx_idxmap_key_fn key_of, const void *arg)
{
	uint64_t	s = *probe(m, hash_bytes(key, len), key, len, key_of, arg);

	return s != 0 ? slot_index(s) : CX_IDXMAP_NONE;
}

bool
cx_idxmap_add(cx_idxmap *m, const uint8_t *key, size_t len, uint32_t fresh,
			  uint32_t *idx, cx_idxmap_key_fn key_of, const void *arg)
{
	uint32_t	hash = hash_bytes(key, len);
	uint64_t   *s;

	if (m->count >= CX_IDXMAP_MAX ||
		((m->count + 1) * 4 > m->nslots * 3 && !resize(m, m->nslots * 2)))
		return false;
	s = probe(m, hash, key, len, key_of, arg);
	if (*s == 0)
	{
		*s = (uint64_t) hash << 32 | ((uint64_t) fresh + 1);
		m->count++;
	}
	*idx = slot_index(*s);
	return true;
}

void
cx_idxmap_prefetch(const cx_idxmap *m, const uint8_t *key, size_t len)
{
	__builtin_prefetch(&m->slots[hash_bytes(key, len) & (m->nslots - 1)]);
}

uint64_t
cx_idxmap_memory(const cx_idxmap *m)
{
	return m->nslots * sizeof(uint64_t);
}

/* --------------------------------------------------------------------------
 * The key map
 * -------------------------------------------------------------------------- */

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
	cx_idxmap	index;			/* key -> entry */
	entry	   *entries;
	uint64_t	entries_cap;
	arena_block *arena;
	uint64_t	arena_bytes;
};

static void
entry_key(const void *arg, uint32_t i, const uint8_t **key, size_t *len)
{
	const entry *e = &((const cx_keymap *) arg)->entries[i];

	*key = e->key;
	*len = e->len;
}

cx_keymap *
cx_keymap_new(void)
{
	cx_keymap  *m = calloc(1, sizeof(cx_keymap));

	if (m != NULL && !cx_idxmap_init(&m->index))
	{
		free(m);
		return NULL;
	}
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
	cx_idxmap_free(&m->index);
	free(m->entries);
	free(m);
}

/* Room for n entries. */
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

bool
cx_keymap_reserve(cx_keymap *m, uint64_t n)
{
	return cx_idxmap_reserve(&m->index, n) && entries_room(m, n);
}

/* Room for len more key bytes in the arena (a key longer than a block gets
 * a block of its own). */
static bool
arena_room(cx_keymap *m, size_t len)
{
	arena_block *b = m->arena;
	size_t		size = len > ARENA_BLOCK ? len : ARENA_BLOCK;

	if (b != NULL && b->size - b->used >= len)
		return true;
	b = malloc(sizeof(arena_block) + size);
	if (b == NULL)
		return false;
	b->next = m->arena;
	b->used = 0;
	b->size = size;
	m->arena = b;
	m->arena_bytes += sizeof(arena_block) + size;
	return true;
}

/* A stable copy of key in the room arena_room made. */
static const uint8_t *
arena_copy(cx_keymap *m, const uint8_t *key, size_t len)
{
	uint8_t    *p = m->arena->data + m->arena->used;

	if (len > 0)
		memcpy(p, key, len);
	m->arena->used += len;
	return p;
}

cx_code
cx_keymap_upsert(cx_keymap *m, const uint8_t *key, size_t len, cx_keyver **val,
				 bool *found, cx_err *err)
{
	uint32_t	fresh = (uint32_t) m->index.count;
	uint32_t	i;

	/* Every allocation before the index changes, so that a failure leaves
	 * the map as it was. */
	if (!entries_room(m, m->index.count + 1) || !arena_room(m, len) ||
		!cx_idxmap_add(&m->index, key, len, fresh, &i, entry_key, m))
		return cx_err_set(err, CX_ERR_NOMEM,
						  "key map of %llu keys: out of memory",
						  (unsigned long long) m->index.count);
	*found = i != fresh;
	if (!*found)
	{
		entry	   *e = &m->entries[fresh];

		e->key = arena_copy(m, key, len);
		e->len = len;
		memset(&e->val, 0, sizeof(e->val));
	}
	*val = &m->entries[i].val;
	return CX_OK;
}

void
cx_keymap_prefetch(const cx_keymap *m, const uint8_t *key, size_t len)
{
	cx_idxmap_prefetch(&m->index, key, len);
}

cx_keyver *
cx_keymap_get(const cx_keymap *m, const uint8_t *key, size_t len)
{
	uint32_t	i = cx_idxmap_get(&m->index, key, len, entry_key, m);

	return i != CX_IDXMAP_NONE ? &m->entries[i].val : NULL;
}

uint64_t
cx_keymap_count(const cx_keymap *m)
{
	return m->index.count;
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
	return sizeof(cx_keymap) + cx_idxmap_memory(&m->index) +
		m->entries_cap * sizeof(entry) + m->arena_bytes;
}
