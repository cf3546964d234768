/*
 * cx_merge_sort.c — sorted merges: the sort key, and the sorted runs the
 * surviving rows of a merge are gathered in (docs/design/merge.md, "Sorted
 * merges").
 *
 * A run holds whole rows (cx_row_encode of the written schema) and, beside
 * each, the bytes of its order columns, in one arena whose size, with the
 * index of the rows, never exceeds the merge's sort_memory: a row that does
 * not fit makes the caller write the run out first (a single row larger
 * than the budget is held alone, or the merge could not progress).  Rows
 * are ordered by the order columns (cx_value_cmp, NULLs last), then by
 * arrival, which is commit order: generations oldest first, rows in order.
 */
#include <stdlib.h>
#include <string.h>

#include "format/cx_encoding.h"
#include "merge/cx_merge_int.h"
#include "util/cx_prefix_sort.h"

/* ---- the sort key ---- */

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The next name of the list at *p (blanks around it dropped), allocated
 * (NULL when out of memory); *more: a comma follows it. */
static char *
next_name(const char **p, bool *more)
{
	const char *s = *p;
	const char *end;

	while (is_blank(*s))
		s++;
	end = strchr(s, ',');
	if (end == NULL)
		end = s + strlen(s);
	*more = *end == ',';
	*p = *more ? end + 1 : end;
	while (end > s && is_blank(end[-1]))
		end--;
	return strndup(s, (size_t) (end - s));
}

/* The names of list into names[CX_SORT_KEY_MAX_COLUMNS] (allocated; the
 * caller frees *n of them): none empty, none twice. */
static cx_code
split_names(const char *list, char **names, uint32_t *n, cx_err *err)
{
	bool		more = true;

	while (more)
	{
		char	   *name;

		if (*n == CX_SORT_KEY_MAX_COLUMNS)
			return cx_err_set(err, CX_ERR_INVALID,
							  "sort key names more than %d columns",
							  CX_SORT_KEY_MAX_COLUMNS);
		if ((name = next_name(&list, &more)) == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
		names[(*n)++] = name;
		if (name[0] == '\0')
			return cx_err_set(err, CX_ERR_INVALID,
							  "sort key has an empty column name");
		for (uint32_t i = 0; i + 1 < *n; i++)
			if (strcmp(names[i], name) == 0)
				return cx_err_set(err, CX_ERR_INVALID,
								  "sort key names column \"%s\" twice", name);
	}
	return CX_OK;
}

static cx_code
find_sort_column(const cx_schema *schema, const char *name, uint32_t *col,
				 cx_err *err)
{
	int			c = cx_schema_find(schema, name);

	if (c < 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "sort key column \"%s\" is not a column of the table",
						  name);
	if (!cx_type_has_stats((cx_type) schema->columns[c].type))
		return cx_err_set(err, CX_ERR_INVALID,
						  "sort key column \"%s\" has type %s, which has no order to sort by",
						  name, cx_type_name((cx_type) schema->columns[c].type));
	*col = (uint32_t) c;
	return CX_OK;
}

cx_code
cx_sort_key_resolve(const cx_schema *schema, const char *sort_key,
					uint32_t *cols, uint32_t *n, cx_err *err)
{
	char	   *names[CX_SORT_KEY_MAX_COLUMNS];
	uint32_t	nnames = 0;
	cx_code		rc = CX_OK;

	*n = 0;
	if (sort_key != NULL && sort_key[0] != '\0')
		rc = split_names(sort_key, names, &nnames, err);
	for (uint32_t i = 0; rc == CX_OK && schema != NULL && i < nnames; i++)
		rc = find_sort_column(schema, names[i], &cols[i], err);
	if (rc == CX_OK && schema != NULL)
		*n = nnames;
	for (uint32_t i = 0; i < nnames; i++)
		free(names[i]);
	return rc;
}

cx_code
cx_sort_order_resolve(const cx_schema *table, const char *sort_key,
					  bool keyed, uint32_t key_col, cx_sort_order *o,
					  cx_err *err)
{
	bool		has_key = false;

	if (cx_sort_key_resolve(table, sort_key, o->cols, &o->n, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < o->n; i++)
		has_key |= keyed && o->cols[i] == key_col;
	if (keyed && !has_key)
		o->cols[o->n++] = key_col;
	for (uint32_t i = 0; i < o->n; i++)
		o->types[i] = (cx_type) table->columns[o->cols[i]].type;
	return CX_OK;
}

/* ---- sorted runs ---- */

/* A buffered row: where its order-column bytes and its row are. */
typedef struct run_item
{
	size_t		keys;			/* offset in the arena */
	size_t		row;
	uint32_t	row_len;
	uint64_t	prefix;			/* cx_sort_order_prefix of the row */
	uint64_t	seq;			/* arrival: commit order */
	cx_keyver  *v;				/* its key's map entry, or NULL */
} run_item;

/*
 * The arena is one allocation: rows (each its order-column bytes, then the
 * row) from the start up, the items from the end down, and between them
 * room for two sort slots per item, which sorting uses; so what a run holds
 * is the arena's size.
 */
struct cx_sort_run
{
	const merge_state *ms;
	uint8_t    *arena;
	size_t		cap;			/* a multiple of the item alignment */
	size_t		used;			/* row bytes from the start */
	uint32_t	n;				/* items at the end */
	uint64_t	seq;
	cx_buf		scratch;		/* the row being added, encoded */
	cx_buf		lists;			/* list items of the row being decoded */
	cx_datum   *values;
};

#define ITEM_ALIGN sizeof(uint64_t)

static size_t
align_up(size_t n)
{
	return (n + ITEM_ALIGN - 1) & ~(ITEM_ALIGN - 1);
}

static run_item *
items(const cx_sort_run *run)
{
	return (run_item *) (run->arena + run->cap - run->n * sizeof(run_item));
}

cx_code
cx_sort_run_new(const merge_state *ms, cx_sort_run **out, cx_err *err)
{
	cx_sort_run *run = calloc(1, sizeof(cx_sort_run));

	*out = run;
	if (run == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	run->ms = ms;
	cx_buf_init(&run->scratch);
	cx_buf_init(&run->lists);
	run->values = calloc(ms->written_schema->ncolumns, sizeof(cx_datum));
	if (run->values == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	return CX_OK;
}

void
cx_sort_run_free(cx_sort_run *run)
{
	if (run == NULL)
		return;
	free(run->arena);
	cx_buf_free(&run->scratch);
	cx_buf_free(&run->lists);
	free(run->values);
	free(run);
}

bool
cx_sort_run_empty(const cx_sort_run *run)
{
	return run->n == 0;
}

void
cx_sort_order_encode(const cx_sort_order *o, const cx_datum *values,
					 cx_buf *out)
{
	for (uint32_t i = 0; i < o->n; i++)
	{
		uint8_t		fixed[CX_KEY_FIXED_MAX];
		const uint8_t *p;
		size_t		len;
		uint32_t	len32;

		if (!cx_datum_key_bytes(o->types[i], &values[o->cols[i]], fixed, &p,
								&len))
		{
			cx_buf_put_u8(out, 1);
			continue;
		}
		len32 = (uint32_t) len;
		cx_buf_put_u8(out, 0);
		cx_buf_put(out, &len32, sizeof(len32));
		cx_buf_put(out, p, len);
	}
}

/* A signed integer moved into unsigned order. */
static uint64_t
int_prefix(int64_t v)
{
	return (uint64_t) v ^ ((uint64_t) 1 << 63);
}

uint64_t
cx_sort_order_prefix(const cx_sort_order *o, const cx_datum *values)
{
	const cx_datum *d;

	if (o->n == 0)
		return 0;
	d = &values[o->cols[0]];
	if (d->isnull)
		return UINT64_MAX;		/* NULLs last */
	switch (o->types[0])
	{
		case CX_T_BOOL:
			return d->v.b ? 1 : 0;
		case CX_T_INT16:
			return int_prefix(d->v.i16);
		case CX_T_INT32:
		case CX_T_DATE:
			return int_prefix(d->v.i32);
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			return int_prefix(d->v.i64);
		case CX_T_UUID:
			return cx_bytes_prefix(d->v.uuid, sizeof(d->v.uuid));
		case CX_T_STRING:
		case CX_T_BINARY:
			return cx_bytes_prefix(d->v.bytes.ptr, d->v.bytes.len);
		default:
			/* Floats (NaN, -0) compare in full. */
			return 0;
	}
}

typedef enum reserved
{
	RESERVED, RUN_FULL, RESERVE_NOMEM
} reserved;

/* Room for need more row bytes and one more item.  The arena doubles up to
 * the budget; past it only for a run's first row. */
static reserved
reserve(cx_sort_run *run, size_t need)
{
	size_t		budget = (size_t) run->ms->opt.sort_memory & ~(ITEM_ALIGN - 1);
	size_t		held = run->n * sizeof(run_item);
	size_t		want = align_up(run->used + need) + held + sizeof(run_item) +
		(run->n + 1) * 2 * sizeof(cx_prefix_slot);
	size_t		cap = run->cap;
	uint8_t    *grown;

	/* First: an arena grown past the budget by a large first row must not
	 * hold more rows than the budget afterwards. */
	if (run->n > 0 && want > budget)
		return RUN_FULL;
	if (want <= cap)
		return RESERVED;
	while (cap < want)
		cap = cap ? cap * 2 : 65536;
	if (cap > budget)
		cap = want > budget ? want : budget;
	grown = realloc(run->arena, cap);
	if (grown == NULL)
		return RESERVE_NOMEM;
	memmove(grown + cap - held, grown + run->cap - held, held);
	run->arena = grown;
	run->cap = cap;
	return RESERVED;
}

cx_code
cx_sort_run_add(cx_sort_run *run, const cx_datum *values, cx_keyver *v,
				bool *full, cx_err *err)
{
	const merge_state *ms = run->ms;
	size_t		keys_len;
	run_item   *it;
	reserved	r;

	cx_buf_reset(&run->scratch);
	cx_sort_order_encode(&ms->order, values, &run->scratch);
	keys_len = run->scratch.len;
	cx_row_encode(ms->written_schema, CX_ROW_PUT, values, &run->scratch);
	if (!cx_buf_ok(&run->scratch) || run->scratch.len - keys_len > UINT32_MAX)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	r = reserve(run, run->scratch.len);
	if (r == RESERVE_NOMEM)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	*full = r == RUN_FULL;
	if (*full)
		return CX_OK;
	run->n++;
	it = items(run);
	it->keys = run->used;
	it->row = run->used + keys_len;
	it->row_len = (uint32_t) (run->scratch.len - keys_len);
	it->prefix = cx_sort_order_prefix(&ms->order, values);
	it->seq = run->seq++;
	it->v = v;
	memcpy(run->arena + run->used, run->scratch.data, run->scratch.len);
	run->used = align_up(run->used + run->scratch.len);
	return CX_OK;
}

/* Reads one order column's bytes at *p; false for NULL. */
static bool
read_order_key(const uint8_t **p, const uint8_t **val, size_t *len)
{
	bool		isnull = **p != 0;
	uint32_t	len32;

	(*p)++;
	if (isnull)
		return false;
	memcpy(&len32, *p, sizeof(len32));
	*len = len32;
	*val = *p + sizeof(len32);
	*p += sizeof(len32) + len32;
	return true;
}

int
cx_sort_order_cmp(const cx_sort_order *o, const uint8_t *px,
				  const uint8_t *py)
{
	for (uint32_t i = 0; i < o->n; i++)
	{
		const uint8_t *vx = NULL;
		const uint8_t *vy = NULL;
		size_t		lx = 0;
		size_t		ly = 0;
		bool		has_x = read_order_key(&px, &vx, &lx);
		bool		has_y = read_order_key(&py, &vy, &ly);
		int			c;

		if (has_x != has_y)
			return has_x ? -1 : 1;	/* NULLs last */
		if (!has_x)
			continue;
		c = cx_value_cmp(o->types[i], vx, lx, vy, ly);
		if (c != 0)
			return c;
	}
	return 0;
}

/*
 * Two items of one stretch of equal prefixes (cx_prefix_sort compares only
 * those): by their order bytes, then arrival.
 */
static int
slot_cmp(const void *a, const void *b, void *arg)
{
	const cx_sort_run *run = arg;
	const run_item *x = &items(run)[((const cx_prefix_slot *) a)->item];
	const run_item *y = &items(run)[((const cx_prefix_slot *) b)->item];
	int			c = cx_sort_order_cmp(&run->ms->order, run->arena + x->keys,
									  run->arena + y->keys);

	return c != 0 ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* How many rows ahead a flush prefetches, and at most how many of a row's
 * bytes. */
#define PREFETCH_AHEAD 4
#define PREFETCH_BYTES 512

/*
 * Fetches the row of item it into the CPU cache (a hint).  Sorted, the rows
 * are visited in an order unrelated to where they lie in the arena, so each
 * one read in turn is a miss the decoding waits for; fetched a few rows
 * ahead, the misses overlap.
 */
static void
prefetch_row(const cx_sort_run *run, const run_item *it)
{
	const uint8_t *row = run->arena + it->row;
	size_t		len = it->row_len < PREFETCH_BYTES ? it->row_len : PREFETCH_BYTES;

	for (size_t off = 0; off < len; off += 64)
		__builtin_prefetch(row + off);
}

/*
 * The items in order: their slots, built and sorted in the arena's gap
 * between the rows and the items, which reserve() keeps large enough.
 */
static const cx_prefix_slot *
sort_items(cx_sort_run *run)
{
	const run_item *all = items(run);
	cx_prefix_slot *slots = (cx_prefix_slot *) (run->arena + run->used);

	for (uint32_t i = 0; i < run->n; i++)
	{
		slots[i].prefix = all[i].prefix;
		slots[i].item = i;
	}
	return cx_prefix_sort(slots, slots + run->n, run->n, slot_cmp, run);
}

cx_code
cx_sort_run_flush(cx_sort_run *run, cx_sort_emit_fn emit, void *arg,
				  cx_err *err)
{
	const cx_schema *schema = run->ms->written_schema;
	const run_item *all = items(run);
	const cx_prefix_slot *sorted;
	cx_code		rc = CX_OK;

	if (run->n == 0)
		return CX_OK;
	sorted = sort_items(run);
	for (uint32_t i = 0; rc == CX_OK && i < run->n; i++)
	{
		const run_item *it = &all[sorted[i].item];
		cx_row_kind kind;
		cx_rd		rd;

		/* The item first (items lie in arrival order, as random as the
		 * rows), so that its row's address is at hand when it is due. */
		if (i + 2 * PREFETCH_AHEAD < run->n)
			__builtin_prefetch(&all[sorted[i + 2 * PREFETCH_AHEAD].item]);
		if (i + PREFETCH_AHEAD < run->n)
			prefetch_row(run, &all[sorted[i + PREFETCH_AHEAD].item]);
		cx_rd_init(&rd, run->arena + it->row, it->row_len);
		rc = cx_row_decode(schema, &rd, &kind, run->values, &run->lists, err);
		if (rc == CX_OK)
			rc = emit(arg, run->values, it->v, err);
	}
	run->n = 0;
	run->used = 0;
	return rc;
}
