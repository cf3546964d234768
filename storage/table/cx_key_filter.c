/*
 * cx_key_filter.c — key index segment filters (cx_key_filter.h).
 *
 * A value's hash h is cx_hash_bytes (util/cx_hash.h); probe i of k sets
 * bit (h1 + i * h2) mod nbits, where h1 is h's low 32 bits and h2 its high
 * 32 bits with bit 0 set (double hashing: k bits from one hash).  Bit b is
 * bit (b % 8) of byte b / 8.
 */
#include "table/cx_key_filter.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/cx_hash.h"

struct cx_keyfilter
{
	uint32_t	probes;
	uint64_t	nbits;
	uint8_t    *bits;
	uint32_t	refs;			/* under table_lock */
};

/* Body bytes before the bits: u32 probes, u64 nbits. */
#define FILTER_HEADER_LEN 12

static uint64_t
probe_bit(uint64_t h, uint32_t i, uint64_t nbits)
{
	uint64_t	h1 = h & 0xffffffffu;
	uint64_t	h2 = (h >> 32) | 1;

	return (h1 + i * h2) % nbits;
}

/* --------------------------------------------------------------------------
 * Building
 * -------------------------------------------------------------------------- */

cx_code
cx_keyfilter_build_add(cx_keyfilter_build *b, const uint8_t *v, uint32_t len,
					   cx_err *err)
{
	uint64_t	h = cx_keyfilter_hash(v, len);

	/* equal values arrive together; their hashes then repeat */
	if (b->n > 0 && b->hashes[b->n - 1] == h)
		return CX_OK;
	if (b->n == b->cap)
	{
		uint64_t	cap = b->cap == 0 ? 1024 : b->cap * 2;
		uint64_t   *grown = realloc(b->hashes, cap * sizeof(uint64_t));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "key filter: out of memory");
		b->hashes = grown;
		b->cap = cap;
	}
	b->hashes[b->n++] = h;
	return CX_OK;
}

cx_code
cx_keyfilter_build_encode(const cx_keyfilter_build *b, uint32_t *probes,
						  cx_buf *out, cx_err *err)
{
	/* whole 64-bit words, at least one */
	uint64_t	nbits = ((b->n * CX_KEYFILTER_BITS_PER_VALUE + 63) / 64) * 64;
	uint8_t    *bits;

	if (nbits == 0)
		nbits = 64;
	bits = calloc(nbits / 8, 1);
	if (bits == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "key filter: out of memory");
	for (uint64_t v = 0; v < b->n; v++)
		for (uint32_t i = 0; i < CX_KEYFILTER_PROBES; i++)
		{
			uint64_t	bit = probe_bit(b->hashes[v], i, nbits);

			bits[bit / 8] |= (uint8_t) (1u << (bit % 8));
		}
	*probes = CX_KEYFILTER_PROBES;
	cx_buf_put_u64(out, nbits);
	cx_buf_put(out, bits, nbits / 8);
	free(bits);
	return cx_buf_ok(out) ? CX_OK :
		cx_err_set(err, CX_ERR_NOMEM, "key filter: out of memory");
}

void
cx_keyfilter_build_free(cx_keyfilter_build *b)
{
	free(b->hashes);
	memset(b, 0, sizeof(*b));
}

/* --------------------------------------------------------------------------
 * Reading
 * -------------------------------------------------------------------------- */

cx_code
cx_keyfilter_decode(const uint8_t *body, uint32_t len, const char *what,
					cx_keyfilter **out, cx_err *err)
{
	cx_keyfilter *f;
	uint32_t	probes;
	uint64_t	nbits;

	*out = NULL;
	if (len < FILTER_HEADER_LEN)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "key index segment %s: filter block is damaged", what);
	probes = cx_load_u32(body);
	nbits = cx_load_u64(body + 4);
	if (probes < 1 || probes > CX_KEYFILTER_MAX_PROBES || nbits == 0 ||
		(nbits + 7) / 8 != len - FILTER_HEADER_LEN)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "key index segment %s: filter block is damaged", what);
	f = calloc(1, sizeof(cx_keyfilter));
	if (f == NULL ||
		(f->bits = cx_memdup(body + FILTER_HEADER_LEN,
							 len - FILTER_HEADER_LEN)) == NULL)
	{
		free(f);
		return cx_err_set(err, CX_ERR_NOMEM, "key filter: out of memory");
	}
	f->probes = probes;
	f->nbits = nbits;
	f->refs = 1;
	*out = f;
	return CX_OK;
}

uint64_t
cx_keyfilter_hash(const uint8_t *v, size_t len)
{
	return cx_hash_bytes(v, len);
}

bool
cx_keyfilter_may_hold(const cx_keyfilter *f, const uint8_t *v, size_t len)
{
	return cx_keyfilter_may_hold_hash(f, cx_keyfilter_hash(v, len));
}

bool
cx_keyfilter_may_hold_hash(const cx_keyfilter *f, uint64_t h)
{
	for (uint32_t i = 0; i < f->probes; i++)
	{
		uint64_t	bit = probe_bit(h, i, f->nbits);

		if ((f->bits[bit / 8] & (1u << (bit % 8))) == 0)
			return false;
	}
	return true;
}

/* --------------------------------------------------------------------------
 * The table of kept filters
 *
 * TABLE_SLOTS segments, their filters together at most TABLE_BYTES (one
 * filter at most half of it: about 16 million values at 16 bits).  A slot
 * without a filter counts the bytes of data blocks its segment's lookups
 * may have read since it was last seen.
 *
 * A segment's slot is one of the TABLE_WAYS of the set its name hashes to,
 * the set's least recently used replaced first, so that finding one costs
 * a few comparisons however many the table holds.  The table holds many:
 * a writer of 1,000 stores in turn looks up the few segments of each
 * store's key index once per commit of that store, and with room for 256
 * every store's slots were gone by its next commit, so no filter was ever
 * earned and each new key read the blocks of every segment.
 * -------------------------------------------------------------------------- */

#define TABLE_SETS 1024
#define TABLE_WAYS 8
#define TABLE_SLOTS (TABLE_SETS * TABLE_WAYS)
#define TABLE_BYTES (64 * 1024 * 1024)

typedef struct table_slot
{
	char	   *name;			/* malloc'd; NULL: free */
	uint64_t	name_hash;		/* compared before the name: every lookup
								 * of a segment searches the table */
	cx_keyfilter *filter;		/* NULL: not read yet */
	uint64_t	bytes;			/* the filter's */
	uint64_t	owed;			/* block bytes read without it */
	uint64_t	used;			/* tick of the last use */
} table_slot;

static table_slot table[TABLE_SLOTS];
static uint64_t table_filter_bytes;
static uint64_t table_tick;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static void
filter_unref(cx_keyfilter *f)
{
	if (f != NULL && --f->refs == 0)
	{
		free(f->bits);
		free(f);
	}
}

void
cx_keyfilter_release(cx_keyfilter *f)
{
	pthread_mutex_lock(&table_lock);
	filter_unref(f);
	pthread_mutex_unlock(&table_lock);
}

static void
slot_clear(table_slot *slot)
{
	table_filter_bytes -= slot->bytes;
	filter_unref(slot->filter);
	free(slot->name);
	memset(slot, 0, sizeof(*slot));
}

/* The TABLE_WAYS slots where the segment of name_hash may be. */
static table_slot *
slot_set(uint64_t name_hash)
{
	return &table[(name_hash % TABLE_SETS) * TABLE_WAYS];
}

static table_slot *
slot_find(const char *name, uint64_t name_hash)
{
	table_slot *set = slot_set(name_hash);

	for (int i = 0; i < TABLE_WAYS; i++)
		if (set[i].name != NULL && set[i].name_hash == name_hash &&
			strcmp(set[i].name, name) == 0)
			return &set[i];
	return NULL;
}

/* The least recently used of n slots from first (a free one before any),
 * holding a filter if want_filter. */
static table_slot *
slot_oldest(table_slot *first, int n, bool want_filter)
{
	table_slot *oldest = NULL;

	for (int i = 0; i < n; i++)
	{
		table_slot *slot = &first[i];

		if (want_filter && slot->filter == NULL)
			continue;
		if (slot->name == NULL)
			return slot;
		if (oldest == NULL || slot->used < oldest->used)
			oldest = slot;
	}
	return oldest;
}

/* The slot of name, taken over from the least recently used if new; NULL
 * when out of memory. */
static table_slot *
slot_claim(const char *name)
{
	uint64_t	name_hash = cx_hash_bytes((const uint8_t *) name, strlen(name));
	table_slot *slot = slot_find(name, name_hash);
	char	   *copy;

	if (slot == NULL && (copy = cx_strdup(name)) != NULL)
	{
		slot = slot_oldest(slot_set(name_hash), TABLE_WAYS, false);
		slot_clear(slot);
		slot->name = copy;
		slot->name_hash = name_hash;
	}
	if (slot != NULL)
		slot->used = ++table_tick;
	return slot;
}

cx_keyfilter *
cx_keyfilter_get(const char *name, uint64_t filter_len, uint64_t may_read,
				 bool *load)
{
	cx_keyfilter *f = NULL;
	table_slot *slot;

	*load = false;
	pthread_mutex_lock(&table_lock);
	slot = slot_claim(name);
	if (slot != NULL && slot->filter != NULL)
	{
		f = slot->filter;
		f->refs++;
	}
	else if (slot != NULL)
	{
		slot->owed += may_read;
		*load = slot->owed >= filter_len && filter_len <= TABLE_BYTES / 2;
	}
	pthread_mutex_unlock(&table_lock);
	return f;
}

void
cx_keyfilter_keep(const char *name, cx_keyfilter *f)
{
	uint64_t	bytes = f->nbits / 8 + sizeof(cx_keyfilter);
	table_slot *slot;

	if (bytes > TABLE_BYTES / 2)
		return;
	pthread_mutex_lock(&table_lock);
	while (table_filter_bytes + bytes > TABLE_BYTES)
	{
		table_slot *victim = slot_oldest(table, TABLE_SLOTS, true);

		filter_unref(victim->filter);
		victim->filter = NULL;
		table_filter_bytes -= victim->bytes;
		victim->bytes = 0;
		victim->owed = 0;
	}
	slot = slot_claim(name);
	if (slot != NULL && slot->filter == NULL)
	{
		f->refs++;
		slot->filter = f;
		slot->bytes = bytes;
		table_filter_bytes += bytes;
	}
	pthread_mutex_unlock(&table_lock);
}

uint64_t
cx_keyfilter_kept_bytes(void)
{
	uint64_t	bytes;

	pthread_mutex_lock(&table_lock);
	bytes = table_filter_bytes;
	pthread_mutex_unlock(&table_lock);
	return bytes;
}
