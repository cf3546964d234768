/*
 * cx_table_scan.c — scanning a snapshot: base fragments minus deletion
 * vectors, unioned with the unmerged generations, at most one row per key
 * (cx_table_scan.h; the ordering rule is in docs/design/merge.md).
 *
 * Which version of a key wins:
 *   - among unmerged generations: of one shard, the later one in commit
 *     order (generation number, then row order); of two shards, the later
 *     commit time, and on an exact tie the shard whose id sorts last;
 *   - a base row against an unmerged one: the base row only if its commit
 *     time is strictly later (a row merged from another shard that committed
 *     after this one);
 *   - a winning tombstone hides the key.
 *
 * Plan (tables with a key column and unmerged generations; every store
 * de-duplicates by key, whatever unique_key says: that option only decides
 * whether the writer refuses an INSERT of a live key):
 *   1. begin: read only the key, commit-time and tombstone columns of every
 *      unmerged generation into a key map (the winner per key).  Memory is
 *      bounded by the unmerged layers, never by the base.  Every generation
 *      row that stops being (or never is) its key's winner is marked in a
 *      per-generation bitmap of losers;
 *   2. stream the base fragments a row group at a time; a live base row
 *      whose key is in the map is kept only if it is newer than the map's
 *      winner (which is then marked beaten: a loser);
 *   3. stream the generations, keeping the rows not marked losers (and not
 *      tombstones): no key is looked up again, and the key column is read
 *      only if the caller wants it.
 * Otherwise (no generations, or no key column) no map is built: base rows
 * are filtered by their deletion vectors alone (and their tombstone column,
 * read only for fragments whose statistics say they hold tombstones), and
 * generation rows by their tombstone column.
 *
 * TRUNCATE (cx_truncation.h): the cut is the newest of the base's
 * truncated_before_us and the unmerged markers of every shard (found in
 * step 1); rows committed before it are hidden, and so are the rows of a
 * marker's generation ahead of it.  Fragments whose commit-time statistics
 * lie wholly before the cut are not opened, and the commit-time column is
 * read only of fragments that may hold rows before it.
 *
 * Key lookups (cx_tablescan_begin_keys): the base rows holding the keys are
 * found first through cx_base_probe (the key index, or the key column of
 * fragments whose statistics may hold a key); only base fragments and row
 * groups holding one of those rows are read, and only those rows can be
 * visible.  Generations whose key statistics cannot hold a key are neither
 * mapped nor read; in the others, rows of other keys are hidden.
 *
 * Predicates and a top-k bound (cx_prune.h) skip a fragment before it is
 * opened and a row group before it is read, when their statistics prove no
 * row can match.  The key map is never pruned; and a base fragment or row
 * group skipped so whose keys may be in the map still has its key and
 * commit-time columns read, so that its winning rows beat the older unmerged
 * versions of their keys (else those would reappear).  Generations are
 * skipped freely: the map decides their winners.  With spec.order_column,
 * base fragments and the row groups of every fragment are visited
 * best-first by that column's statistics.
 */
#include <stdlib.h>
#include <string.h>

#include "util/cx_key_map.h"
#include "table/cx_row_key.h"
#include "table/cx_truncation.h"
#include "scan/cx_key_lookup.h"
#include "scan/cx_prune.h"
#include "table/cx_base_probe.h"
#include "scan/cx_scan_int.h"

/* A growable bitmap of row indices. */
typedef struct cx_bits
{
	uint64_t   *words;
	uint64_t	nwords;
} cx_bits;

static bool
bits_set(cx_bits *b, uint64_t i)
{
	uint64_t	w = i / 64;

	if (w >= b->nwords)
	{
		uint64_t	n = b->nwords ? b->nwords : 16;
		uint64_t   *grown;

		while (n <= w)
			n *= 2;
		grown = realloc(b->words, n * sizeof(uint64_t));
		if (grown == NULL)
			return false;
		memset(grown + b->nwords, 0, (n - b->nwords) * sizeof(uint64_t));
		b->words = grown;
		b->nwords = n;
	}
	b->words[w] |= (uint64_t) 1 << (i % 64);
	return true;
}

static bool
bits_test(const cx_bits *b, uint64_t i)
{
	return i / 64 < b->nwords && (b->words[i / 64] >> (i % 64) & 1) != 0;
}

typedef enum scan_phase
{
	PHASE_BASE,
	PHASE_GENS,
	PHASE_DONE
} scan_phase;

struct cx_tablescan
{
	cx_snapshot *snap;			/* borrowed */
	cx_scan_spec spec;			/* what it points to is the caller's */
	/* Top-k bound (cx_tablescan_set_bound). */
	bool		has_bound;
	uint32_t	bound_column;
	cx_datum	bound;
	bool		bound_desc;
	bool		bound_nulls_win;
	const cx_schema *table;		/* snap->base->schema */
	bool	   *want_user;		/* table->ncolumns entries */
	bool	   *want;			/* per column of the open fragment */
	uint32_t	want_cap;
	bool		dedup;			/* a key column and unmerged generations */
	uint32_t	key_col;
	cx_keymap  *map;			/* dedup only */
	cx_bits    *losers;			/* dedup only: per generation, the rows that
								 * are not their key's winner */
	cx_keyrange range;			/* of the keys in map */
	int64_t		cut_ts;			/* rows committed before it are truncated */
	cx_lookup  *lookup;			/* key lookups only: the keys */
	cx_marker  *marks;			/* dedup only: per generation, its last
								 * TRUNCATE marker */
	scan_phase	phase;
	uint32_t	next_source;	/* next base fragment / generation to open */
	/* The open fragment. */
	cx_fragr   *r;
	uint32_t	source;
	cx_layout	layout;
	bool		read_tomb;
	bool		check_cut;		/* compare commit times with cut_ts */
	bool		check_keys;		/* compare rows with the map */
	cx_dvcursor dvc;
	bool		keys_only;		/* skipped by predicates, read to de-duplicate */
	bool	   *key_want;		/* per fragment column: the key and commit time */
	uint32_t   *frag_order;		/* base fragments in visiting order, or NULL */
	uint32_t   *group_order;	/* the open fragment's groups, in visiting order */
	uint64_t   *group_first;	/* the fragment row of each group's first row */
	uint32_t	groups_cap;
	uint32_t	pos;			/* in group_order: the next group to visit */
	uint32_t	group;			/* the group being visited */
	uint64_t	first_row;		/* group_first[group] */
	/* The batch handed out last. */
	cx_rowgroup *g;
	uint32_t   *rows;
	uint32_t	rows_cap;
	/* Parallel scans (spec.claim): the unit claimed and not read yet, and
	 * the number of the open source's first unit. */
	bool		has_claim;
	uint32_t	claimed;
	uint32_t	unit_base;
	cx_tablescan_stats stats;
};

/* --------------------------------------------------------------------------
 * Step 1: the key map of the unmerged generations
 * -------------------------------------------------------------------------- */

typedef struct gen_keys
{
	cx_tablescan *scan;
	uint32_t	source;			/* index in snap->gens */
} gen_keys;

/*
 * Generations are visited by shard, then generation number, rows in order:
 * a later row of the same shard is newer whatever its time says (commit
 * order), and a row of a later-sorting shard wins ties on commit time.
 */
static cx_code
lose(cx_tablescan *scan, uint32_t source, uint64_t row, cx_err *err)
{
	if (!bits_set(&scan->losers[source], row))
		return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	return CX_OK;
}

static cx_code
add_gen_key(void *arg, const cx_keyrow *kr, cx_err *err)
{
	gen_keys   *gk = arg;
	const cx_snapgen *gens = gk->scan->snap->gens;
	cx_keyver  *v;
	bool		found;

	if (gk->scan->lookup != NULL &&
		!cx_lookup_has(gk->scan->lookup, kr->key, kr->len))
		return CX_OK;			/* never returned: no need to rank it */

	if (cx_keymap_upsert(gk->scan->map, kr->key, kr->len, &v, &found,
						 err) != CX_OK ||
		(!found && cx_keyrange_add(&gk->scan->range, kr->key, kr->len,
								   err) != CX_OK))
		return err->code;
	if (found && gens[v->source].shard != gens[gk->source].shard &&
		kr->ts < v->ts)
		return lose(gk->scan, gk->source, kr->row, err);
	if (found && lose(gk->scan, v->source, v->row, err) != CX_OK)
		return err->code;
	v->ts = kr->ts;
	v->source = gk->source;
	v->row = kr->row;
	v->tombstone = kr->tombstone;
	return CX_OK;
}

static void
gen_key_ahead(void *arg, const uint8_t *key, size_t len)
{
	cx_keymap_prefetch(((gen_keys *) arg)->scan->map, key, len);
}

/* The error reading generation g of the snapshot failed with, naming the
 * shard version that lists it. */
static cx_code
snapgen_failed(const cx_snapshot *snap, const cx_snapgen *g, cx_err *err)
{
	return cx_shard_generation_failed(snap->shards[g->shard], g->gen, err);
}

/* The store generation i of the snapshot is read from, opened on first
 * use and kept with the snapshot (an inline one is fetched once). */
static cx_code
snapgen_store(const cx_snapshot *snap, uint32_t i, cx_objstore **out,
			  cx_err *err)
{
	cx_snapgen *g = &snap->gens[i];

	if (g->from == NULL &&
		cx_generation_open(snap->store, snap->shards[g->shard], g->gen,
						   &g->from, err) != CX_OK)
	{
		g->from = NULL;
		return snapgen_failed(snap, g, err);
	}
	*out = g->from;
	return CX_OK;
}

/* The same for the scan's current source, a base fragment or generation. */
static cx_code
source_failed(const cx_tablescan *scan, cx_err *err)
{
	const cx_snapshot *snap = scan->snap;

	if (scan->phase == PHASE_BASE)
		return cx_manifest_fragment_failed(snap->base,
										   snap->base->fragments[scan->source].path,
										   err);
	return snapgen_failed(snap, &snap->gens[scan->source], err);
}

/* Each generation's last TRUNCATE marker; the newest of them moves the
 * cut. */
static cx_code
find_markers(cx_tablescan *scan, cx_err *err)
{
	const cx_snapshot *snap = scan->snap;

	scan->marks = calloc(snap->ngens, sizeof(cx_marker));
	if (scan->marks == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	for (uint32_t i = 0; i < snap->ngens; i++)
	{
		cx_marker  *m = &scan->marks[i];
		cx_objstore *from;

		if (snapgen_store(snap, i, &from, err) != CX_OK)
			return err->code;
		if (cx_marker_find(from, &snap->gens[i].gen->fragment,
						   scan->table, scan->key_col, m, err) != CX_OK)
			return snapgen_failed(snap, &snap->gens[i], err);
		if (m->found && m->ts > scan->cut_ts)
			scan->cut_ts = m->ts;
	}
	return CX_OK;
}

/* Whether fragment fi may hold a key of the lookup (always without one). */
static bool
may_hold_a_lookup_key(const cx_tablescan *scan, const cx_fragment_info *fi)
{
	return scan->lookup == NULL ||
		cx_keyrange_may_overlap(cx_lookup_range(scan->lookup),
								cx_fragment_stats(fi, scan->table,
												  scan->key_col));
}

static cx_code
build_keymap(cx_tablescan *scan, cx_err *err)
{
	const cx_snapshot *snap = scan->snap;

	uint64_t	rows = 0;

	scan->map = cx_keymap_new();
	scan->losers = calloc(snap->ngens, sizeof(cx_bits));
	if (scan->map == NULL || scan->losers == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	/* Size the map for the generations' rows (as their manifests count
	 * them) at once rather than rehashing it as it fills: only a hint,
	 * capped so that a wrong count cannot claim much more. */
	for (uint32_t i = 0; i < snap->ngens; i++)
		rows += snap->gens[i].gen->fragment.rows;
	(void) cx_keymap_reserve(scan->map, rows < ((uint64_t) 1 << 24) ? rows :
							 (uint64_t) 1 << 24);
	cx_keyrange_init(&scan->range,
					 (cx_type) scan->table->columns[scan->key_col].type);
	for (uint32_t i = 0; i < snap->ngens; i++)
	{
		gen_keys	gk = {scan, i};
		cx_objstore *from;

		if (!may_hold_a_lookup_key(scan, &snap->gens[i].gen->fragment))
			continue;
		scan->stats.fragments_opened++;
		if (snapgen_store(snap, i, &from, err) != CX_OK)
			return err->code;
		if (cx_keyscan_ahead(from, &snap->gens[i].gen->fragment,
							 scan->table, scan->key_col, NULL, add_gen_key,
							 gen_key_ahead, &gk, err) != CX_OK)
			return snapgen_failed(snap, &snap->gens[i], err);
	}
	scan->stats.keymap_keys = cx_keymap_count(scan->map);
	scan->stats.keymap_bytes = cx_keymap_memory(scan->map);
	return CX_OK;
}

/* The keys of a lookup; the table's key column must exist. */
static cx_code
begin_lookup(cx_tablescan *scan, const uint8_t *const *keys,
			 const size_t *lens, uint32_t nkeys, cx_err *err)
{
	const cx_manifest *base = scan->snap->base;

	if (base->key_column == NULL)
		return cx_err_set(err, CX_ERR_INVALID,
						  "key lookup: the store has no key column");
	if (cx_key_column(scan->table, base->key_column, &scan->key_col,
					  err) != CX_OK)
		return err->code;
	return cx_lookup_new(scan->snap->store, base, scan->key_col, keys, lens,
						 nkeys, &scan->lookup, err);
}

/* --------------------------------------------------------------------------
 * Pruning and visiting order (cx_prune.h)
 * -------------------------------------------------------------------------- */

/* Statistics of table column `column` over unit `at`: a fragment of the
 * current phase, or a row group of the open fragment; NULL when unknown. */
typedef const cx_colstats *(*stats_at_fn) (const cx_tablescan *scan,
										   uint32_t at, uint32_t column);

static const cx_fragment_info *
phase_fragment(const cx_tablescan *scan, uint32_t source)
{
	if (scan->phase == PHASE_BASE)
		return &scan->snap->base->fragments[source];
	return &scan->snap->gens[source].gen->fragment;
}

static const cx_colstats *
fragment_stats_at(const cx_tablescan *scan, uint32_t source, uint32_t column)
{
	return cx_fragment_stats(phase_fragment(scan, source), scan->table,
							 column);
}

/* A column stored narrower has its bounds in another type: unknown. */
static const cx_colstats *
group_stats_at(const cx_tablescan *scan, uint32_t group, uint32_t column)
{
	const cx_layout_col *c = &scan->layout.cols[column];

	if (c->frag < 0 || c->widen)
		return NULL;
	return &cx_fragr_chunk(scan->r, group, (uint32_t) c->frag)->stats;
}

/* Whether unit `at` may hold a row that satisfies every predicate and beats
 * the bound. */
static bool
stats_may_match(const cx_tablescan *scan, stats_at_fn stats_at, uint32_t at)
{
	const cx_column *cols = scan->table->columns;
	uint32_t	n = scan->table->ncolumns;

	for (uint32_t i = 0; i < scan->spec.npreds; i++)
	{
		const cx_pred *p = &scan->spec.preds[i];

		if (p->column < n &&
			!cx_prune_may_match((cx_type) cols[p->column].type,
								stats_at(scan, at, p->column), p))
			return false;
	}
	return !scan->has_bound || scan->bound_column >= n ||
		cx_prune_may_beat((cx_type) cols[scan->bound_column].type,
						  stats_at(scan, at, scan->bound_column),
						  &scan->bound, scan->bound_desc,
						  scan->bound_nulls_win);
}

uint64_t
cx_snapshot_rows_matching(const cx_snapshot *snap, const cx_pred *preds,
						  uint32_t npreds)
{
	cx_tablescan scan = {0};
	uint64_t	rows = 0;

	if (snap->base->schema == NULL)
		return 0;
	scan.snap = (cx_snapshot *) snap;
	scan.table = snap->base->schema;
	scan.spec.preds = preds;
	scan.spec.npreds = npreds;
	scan.phase = PHASE_BASE;
	for (uint32_t i = 0; i < snap->base->nfragments; i++)
		if (stats_may_match(&scan, fragment_stats_at, i))
			rows += snap->base->fragments[i].rows -
				cx_manifest_deleted_count(snap->base, i);
	scan.phase = PHASE_GENS;
	for (uint32_t i = 0; i < snap->ngens; i++)
		if (stats_may_match(&scan, fragment_stats_at, i))
			rows += snap->gens[i].gen->fragment.rows;
	return rows;
}

typedef struct order_sort
{
	const cx_tablescan *scan;
	stats_at_fn stats_at;
} order_sort;

static int
by_order_column(const void *a, const void *b, void *arg)
{
	const order_sort *o = arg;
	const cx_tablescan *scan = o->scan;
	uint32_t	col = (uint32_t) scan->spec.order_column;
	uint32_t	ia = *(const uint32_t *) a;
	uint32_t	ib = *(const uint32_t *) b;
	int			c;

	c = cx_prune_order_cmp((cx_type) scan->table->columns[col].type,
						   o->stats_at(scan, ia, col),
						   o->stats_at(scan, ib, col), scan->spec.order_desc);
	return c != 0 ? c : (ia > ib) - (ia < ib);	/* ties: storage order */
}

/* order[0..n): the units 0..n-1, best first when the spec orders them. */
static void
visit_best_first(const cx_tablescan *scan, stats_at_fn stats_at,
				 uint32_t *order, uint32_t n)
{
	order_sort	o = {scan, stats_at};

	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	if (scan->spec.order_column >= 0 &&
		(uint32_t) scan->spec.order_column < scan->table->ncolumns)
		qsort_r(order, n, sizeof(uint32_t), by_order_column, &o);
}

/* The order base fragments are visited in (storage order without one). */
static cx_code
order_fragments(cx_tablescan *scan, cx_err *err)
{
	uint32_t	n = scan->snap->base->nfragments;

	if (scan->spec.order_column < 0 || n == 0)
		return CX_OK;
	scan->frag_order = malloc(n * sizeof(uint32_t));
	if (scan->frag_order == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	visit_best_first(scan, fragment_stats_at, scan->frag_order, n);
	return CX_OK;
}

cx_code
cx_tablescan_begin_spec(cx_snapshot *snap, const cx_scan_spec *spec,
						cx_tablescan **out, cx_err *err)
{
	static const uint8_t *const none[1] = {NULL};
	cx_tablescan *scan = calloc(1, sizeof(cx_tablescan));
	const bool *want = spec->want;
	const uint8_t *const *keys = NULL;
	const cx_manifest *base = snap->base;
	uint32_t	n;

	*out = NULL;
	if (scan == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	scan->snap = snap;
	scan->spec = *spec;
	/* Units are numbered in one order every participant agrees on. */
	if (spec->claim != NULL)
		scan->spec.order_column = -1;
	if (spec->has_keys)
		keys = spec->keys != NULL ? spec->keys : none;
	scan->table = snap->base->schema;
	scan->phase = PHASE_BASE;
	if (scan->table == NULL)
	{
		scan->phase = PHASE_DONE;	/* no data at all */
		*out = scan;
		return CX_OK;
	}
	n = scan->table->ncolumns;
	scan->want_user = malloc(n * sizeof(bool) + 1);
	if (scan->want_user == NULL)
	{
		cx_tablescan_end(scan);
		return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	}
	for (uint32_t c = 0; c < n; c++)
		scan->want_user[c] = want == NULL || want[c];
	scan->dedup = base->key_column != NULL && snap->ngens > 0;
	scan->cut_ts = base->truncated_before_us;
	if (order_fragments(scan, err) != CX_OK ||
		(keys != NULL && begin_lookup(scan, keys, spec->lens, spec->nkeys, err) != CX_OK) ||
		(scan->dedup &&
		 (cx_key_column(scan->table, base->key_column, &scan->key_col,
						err) != CX_OK ||
		  find_markers(scan, err) != CX_OK ||
		  build_keymap(scan, err) != CX_OK)))
	{
		cx_tablescan_end(scan);
		return err->code;
	}
	*out = scan;
	return CX_OK;
}

void
cx_scan_spec_init(cx_scan_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->order_column = -1;
}

cx_code
cx_tablescan_begin(cx_snapshot *snap, const bool *want, cx_tablescan **out,
				   cx_err *err)
{
	cx_scan_spec spec;

	cx_scan_spec_init(&spec);
	spec.want = want;
	return cx_tablescan_begin_spec(snap, &spec, out, err);
}

cx_code
cx_tablescan_begin_keys(cx_snapshot *snap, const bool *want,
						const uint8_t *const *keys, const size_t *lens,
						uint32_t nkeys, cx_tablescan **out, cx_err *err)
{
	cx_scan_spec spec;

	cx_scan_spec_init(&spec);
	spec.want = want;
	spec.has_keys = true;
	spec.keys = keys;
	spec.lens = lens;
	spec.nkeys = nkeys;
	return cx_tablescan_begin_spec(snap, &spec, out, err);
}

void
cx_tablescan_set_bound(cx_tablescan *scan, uint32_t column,
					   const cx_datum *bound, bool desc, bool nulls_win)
{
	scan->has_bound = true;
	scan->bound_column = column;
	scan->bound = *bound;
	scan->bound_desc = desc;
	scan->bound_nulls_win = nulls_win;
}

/* --------------------------------------------------------------------------
 * Steps 2 and 3: streaming
 * -------------------------------------------------------------------------- */

/* Whether a lookup can find a row in the source about to be opened: a base
 * fragment holding one of the rows the probe found, a generation whose key
 * statistics may hold a key. */
static bool
lookup_may_hold(const cx_tablescan *scan, const cx_fragment_info *fi)
{
	uint32_t	n;

	if (scan->lookup == NULL)
		return true;
	if (scan->phase == PHASE_BASE)
		return cx_lookup_base_rows(scan->lookup, scan->source, &n) != NULL;
	return may_hold_a_lookup_key(scan, fi);
}

/* Room in scan->want for the open fragment's columns. */
static cx_code
size_want(cx_tablescan *scan, cx_err *err)
{
	bool	   *want;
	bool	   *key_want;

	if (scan->layout.nfrag <= scan->want_cap)
		return CX_OK;
	want = realloc(scan->want, scan->layout.nfrag * sizeof(bool));
	if (want != NULL)
		scan->want = want;
	key_want = realloc(scan->key_want, scan->layout.nfrag * sizeof(bool));
	if (key_want != NULL)
		scan->key_want = key_want;
	if (want == NULL || key_want == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	scan->want_cap = scan->layout.nfrag;
	return CX_OK;
}

/* The key column is in every fragment (it cannot be dropped or added;
 * open_next checks). */
static void
want_key(cx_tablescan *scan)
{
	scan->want[cx_layout_frag_column(&scan->layout, scan->key_col)] = true;
}

static void
close_source(cx_tablescan *scan)
{
	cx_fragr_close(scan->r);
	scan->r = NULL;
	cx_layout_free(&scan->layout);
}

/* The open fragment's row groups: where each starts, and the order they are
 * visited in. */
static cx_code
plan_groups(cx_tablescan *scan, cx_err *err)
{
	uint32_t	n = cx_fragr_num_groups(scan->r);
	uint64_t	row = 0;

	if (n > scan->groups_cap)
	{
		uint32_t   *order = realloc(scan->group_order, n * sizeof(uint32_t));
		uint64_t   *first;

		if (order != NULL)
			scan->group_order = order;
		first = realloc(scan->group_first, n * sizeof(uint64_t));
		if (first != NULL)
			scan->group_first = first;
		if (order == NULL || first == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
		scan->groups_cap = n;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		scan->group_first[i] = row;
		row += cx_fragr_group_rows(scan->r, i);
	}
	visit_best_first(scan, group_stats_at, scan->group_order, n);
	scan->pos = 0;
	return CX_OK;
}

static cx_scan_layer_stats *
layer_stats(cx_tablescan *scan)
{
	return scan->phase == PHASE_BASE ? &scan->stats.base : &scan->stats.gens;
}

/*
 * Whether the open generation's winning rows are checked against the base
 * by a probe.  In a parallel scan the base row that beats a generation row
 * may lie in a unit another participant reads, so marking losers from base
 * rows (step 2) is not enough there: the participant that reads a
 * generation row asks the base itself (docs/design/scan.md, "Parallel
 * scans").
 */
static bool
base_probed(const cx_tablescan *scan)
{
	return scan->spec.claim != NULL && scan->phase == PHASE_GENS &&
		scan->check_keys && scan->snap->base->nfragments > 0;
}

/* Opens the next base fragment or generation, or moves to PHASE_DONE; one
 * whose rows are all truncated, or that the predicates skip, is passed over
 * (scan->r stays NULL). */
static cx_code
open_next(cx_tablescan *scan, cx_err *err)
{
	const cx_snapshot *snap = scan->snap;
	const cx_fragment_info *fi = NULL;
	const cx_deletion_vector *dv = NULL;
	cx_objstore *from = snap->store;
	if (scan->phase == PHASE_BASE && scan->next_source == snap->base->nfragments)
	{
		scan->phase = PHASE_GENS;
		scan->next_source = 0;
	}
	if (scan->phase == PHASE_GENS && scan->next_source == snap->ngens)
		scan->phase = PHASE_DONE;
	if (scan->phase == PHASE_DONE)
		return CX_OK;
	scan->source = scan->next_source++;
	if (scan->phase == PHASE_BASE && scan->frag_order != NULL)
		scan->source = scan->frag_order[scan->source];
	fi = phase_fragment(scan, scan->source);
	if (scan->phase == PHASE_BASE && snap->base->dvs != NULL)
		dv = &snap->base->dvs[scan->source];
	if ((scan->cut_ts > 0 && cx_fragment_all_before(fi, scan->cut_ts)) ||
		!lookup_may_hold(scan, fi))
		return CX_OK;
	/* Base rows are compared with the unmerged keys only in fragments whose
	 * key statistics overlap them; such a fragment is opened even when the
	 * predicates skip it, to read just its keys. */
	scan->check_keys = scan->dedup &&
		(scan->phase == PHASE_GENS ||
		 cx_keyrange_may_overlap(&scan->range,
								 cx_fragment_stats(fi, scan->table,
												   scan->key_col)));
	scan->keys_only = !stats_may_match(scan, fragment_stats_at, scan->source);
	if (scan->keys_only && !(scan->phase == PHASE_BASE && scan->check_keys))
	{
		scan->stats.fragments_skipped++;
		layer_stats(scan)->fragments_skipped++;
		return CX_OK;
	}
	if (scan->phase == PHASE_GENS &&
		snapgen_store(snap, scan->source, &from, err) != CX_OK)
		return err->code;
	if (cx_fragr_open_entry(from, fi, &scan->r, err) != CX_OK)
		return source_failed(scan, err);
	scan->stats.fragments_opened++;
	layer_stats(scan)->fragments_read++;
	if (cx_layout_check(scan->table, cx_fragr_schema(scan->r), fi->path,
						&scan->layout, err) != CX_OK ||
		size_want(scan, err) != CX_OK)
		return err->code;
	if ((scan->dedup || scan->lookup != NULL) &&
		cx_layout_frag_column(&scan->layout, scan->key_col) < 0)
		return cx_err_set(err, CX_ERR_SCHEMA, "fragment %s lacks the key column",
						  fi->path);
	/* Generations may always hold tombstones; base fragments only if their
	 * statistics say so. */
	scan->read_tomb = scan->phase == PHASE_GENS ||
		cx_fragment_may_have_tombstones(fi);
	scan->check_cut = scan->cut_ts > 0 &&
		cx_fragment_any_before(fi, scan->cut_ts);
	cx_layout_want(&scan->layout, scan->want_user, scan->want);
	if (scan->read_tomb)
		scan->want[scan->layout.tomb_col] = true;
	if (scan->check_cut)
		scan->want[scan->layout.ts_col] = true;
	/* Generation rows are checked against the loser bitmaps, by row
	 * number: only base rows need their key (and commit time). */
	if (scan->check_keys && scan->phase == PHASE_BASE)
	{
		want_key(scan);
		scan->want[scan->layout.ts_col] = true;
		memset(scan->key_want, 0, scan->layout.nfrag * sizeof(bool));
		scan->key_want[cx_layout_frag_column(&scan->layout, scan->key_col)] = true;
		scan->key_want[scan->layout.ts_col] = true;
	}
	/* A lookup keeps only generation rows of its keys; a parallel scan
	 * probes the base for its generation rows' keys. */
	if (scan->lookup != NULL && scan->phase == PHASE_GENS)
		want_key(scan);
	if (base_probed(scan))
	{
		want_key(scan);
		scan->want[scan->layout.ts_col] = true;
	}
	scan->dvc.dv = dv;
	scan->dvc.next = 0;
	scan->first_row = 0;
	return plan_groups(scan, err);
}

/* Whether base row i (live, of the current group) survives the unmerged
 * versions of its key; when it does, marks the map's winner beaten and a
 * loser (an error only if that runs out of memory). */
static cx_code
base_row_wins(cx_tablescan *scan, const cx_rowgroup *g, uint32_t i,
			  bool *wins, cx_err *err)
{
	const uint8_t *key;
	size_t		len;
	cx_keyver  *v;
	int64_t		ts;

	*wins = true;
	if (!cx_key_bytes(cx_layout_column(&scan->layout, g, scan->key_col), i,
					  &key, &len) ||
		(v = cx_keymap_get(scan->map, key, len)) == NULL)
		return CX_OK;
	ts = cx_row_ts(g, &scan->layout, i);
	if (ts <= v->ts)
	{
		*wins = false;
		return CX_OK;
	}
	if (v->beaten)
		return CX_OK;
	v->beaten = true;
	return lose(scan, v->source, v->row, err);
}

/* Whether generation row i is its key's winner: a row that is not was
 * marked a loser when its key's map entry was built or beaten (NULL keys,
 * never de-duplicated, never are). */
static bool
gen_row_wins(const cx_tablescan *scan, uint32_t i)
{
	return !bits_test(&scan->losers[scan->source], scan->first_row + i);
}

/* Whether row i of group g is hidden by a TRUNCATE: committed before the
 * cut, or ahead of its generation's marker. */
static bool
truncated(const cx_tablescan *scan, const cx_rowgroup *g, uint32_t i)
{
	if (scan->phase == PHASE_GENS && scan->marks != NULL &&
		scan->marks[scan->source].found &&
		scan->first_row + i < scan->marks[scan->source].row)
		return true;
	return scan->check_cut && cx_row_ts(g, &scan->layout, i) < scan->cut_ts;
}

/* Whether a lookup may return row i of group g: a base row the probe
 * found, a generation row of one of its keys. */
static bool
lookup_wants(const cx_tablescan *scan, const cx_rowgroup *g, uint32_t i)
{
	const uint8_t *key;
	size_t		len;

	if (scan->lookup == NULL)
		return true;
	if (scan->phase == PHASE_BASE)
		return cx_lookup_base_rows_in(scan->lookup, scan->source,
									  scan->first_row + i, 1);
	return cx_key_bytes(cx_layout_column(&scan->layout, g, scan->key_col), i,
						&key, &len) &&
		cx_lookup_has(scan->lookup, key, len);
}

/* Removes from scan->rows[0..*n) the generation rows a live base row of
 * their key beats (committed strictly later), as step 2 would have marked
 * them: one probe for the group's rows. */
static cx_code
hide_rows_base_beats(cx_tablescan *scan, const cx_rowgroup *g, uint32_t *n,
					 cx_err *err)
{
	const cx_colvec *keys = cx_layout_column(&scan->layout, g, scan->key_col);
	const uint8_t **values = malloc(*n * sizeof(uint8_t *));
	size_t	   *lens = malloc(*n * sizeof(size_t));
	bool	   *beaten = calloc(*n, sizeof(bool));
	cx_probe_result r = {0};
	uint32_t	nkeys = 0;
	uint32_t   *of_key = malloc(*n * sizeof(uint32_t));
	uint32_t	k = 0;
	cx_code		rc = CX_OK;

	if (values == NULL || lens == NULL || beaten == NULL || of_key == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
	/* Winners are one per key, so the group's keys have no repeats. */
	for (uint32_t j = 0; rc == CX_OK && j < *n; j++)
		if (cx_key_bytes(keys, scan->rows[j], &values[nkeys], &lens[nkeys]))
			of_key[nkeys++] = j;
	if (rc == CX_OK && nkeys > 0)
		rc = cx_base_probe(scan->snap->store, scan->snap->base, scan->key_col,
						   values, lens, nkeys, &r, err);
	for (uint32_t h = 0; rc == CX_OK && h < r.nhits; h++)
	{
		uint32_t	j = of_key[r.hits[h].value];

		if (r.hits[h].ts > cx_row_ts(g, &scan->layout, scan->rows[j]))
			beaten[j] = true;
	}
	for (uint32_t j = 0; rc == CX_OK && j < *n; j++)
		if (!beaten[j])
			scan->rows[k++] = scan->rows[j];
	if (rc == CX_OK)
		*n = k;
	cx_probe_result_free(&r);
	free(values);
	free(lens);
	free(beaten);
	free(of_key);
	return rc;
}

/* Fills scan->rows with the visible rows of group g (*nvisible of them). */
static cx_code
visible_rows(cx_tablescan *scan, const cx_rowgroup *g, uint32_t *nvisible,
			 cx_err *err)
{
	uint32_t	n = cx_rowgroup_rows(g);
	uint32_t	k = 0;
	uint32_t	unwanted = 0;

	for (uint32_t i = 0; i < n; i++)
	{
		bool		visible;
		bool		tomb = scan->read_tomb &&
			cx_row_tombstone(g, &scan->layout, i);

		if (!lookup_wants(scan, g, i))
		{
			unwanted++;			/* another key: not hidden, not asked for */
			continue;
		}
		if (scan->phase == PHASE_BASE)
		{
			visible = !cx_dvcursor_deleted(&scan->dvc, scan->first_row + i);
			if (visible && scan->check_keys &&
				base_row_wins(scan, g, i, &visible, err) != CX_OK)
				return err->code;
			visible = visible && !tomb;
		}
		else
			visible = !tomb && (!scan->check_keys || gen_row_wins(scan, i));
		visible = visible && !truncated(scan, g, i);
		if (visible)
			scan->rows[k++] = i;
	}
	if (base_probed(scan) && k > 0 &&
		hide_rows_base_beats(scan, g, &k, err) != CX_OK)
		return err->code;
	scan->stats.rows_returned += k;
	scan->stats.rows_hidden += n - k - unwanted;
	*nvisible = k;
	return CX_OK;
}

/* Moves to the group at scan->pos.  The deletion-vector cursor moves only
 * forwards: it starts again when the order goes back. */
static void
start_group(cx_tablescan *scan)
{
	uint64_t	first;

	scan->group = scan->group_order[scan->pos];
	first = scan->group_first[scan->group];
	if (first < scan->first_row)
		scan->dvc.next = 0;
	scan->first_row = first;
}

static void
count_skipped_group(cx_tablescan *scan)
{
	scan->stats.row_groups_skipped++;
	layer_stats(scan)->row_groups_skipped++;
}

/* Whether a lookup can skip the open base fragment's current row group
 * unread: it holds none of the rows the probe found. */
static bool
lookup_skips_group(cx_tablescan *scan)
{
	uint32_t	n = cx_fragr_group_rows(scan->r, scan->group);

	return scan->lookup != NULL && scan->phase == PHASE_BASE &&
		!cx_lookup_base_rows_in(scan->lookup, scan->source, scan->first_row, n);
}

/*
 * The rows of the next row group (of n rows) to read: for a lookup in a base
 * fragment only the span from the first to the last row the probe found in
 * it, so that only the pages holding them are fetched
 * (cx_fragr_read_rows); otherwise the whole group.
 */
static void
rows_to_read(const cx_tablescan *scan, uint32_t n, uint32_t *lo,
			 uint32_t *count)
{
	uint64_t	first;
	uint64_t	last;

	*lo = 0;
	*count = n;
	if (scan->lookup == NULL || scan->phase != PHASE_BASE ||
		!cx_lookup_base_span(scan->lookup, scan->source, scan->first_row, n,
							 &first, &last))
		return;
	*lo = (uint32_t) (first - scan->first_row);
	*count = (uint32_t) (last - first) + 1;
}

/* A base row group the predicates or the bound skip: its live rows still
 * beat the older unmerged versions of their keys (base_row_wins), so its
 * key and commit-time columns are read when its keys may be in the map. */
static cx_code
skip_group(cx_tablescan *scan, cx_err *err)
{
	uint32_t	n;

	count_skipped_group(scan);
	if (scan->phase != PHASE_BASE || !scan->check_keys ||
		!cx_keyrange_may_overlap(&scan->range,
								 group_stats_at(scan, scan->group,
												scan->key_col)))
		return CX_OK;
	scan->stats.row_groups_keys_only++;
	if (cx_fragr_read_group(scan->r, scan->group, scan->key_want, &scan->g,
							err) != CX_OK)
		return err->code;
	n = cx_rowgroup_rows(scan->g);
	for (uint32_t i = 0; i < n; i++)
	{
		bool		wins;

		if (!cx_dvcursor_deleted(&scan->dvc, scan->first_row + i) &&
			base_row_wins(scan, scan->g, i, &wins, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

static cx_code
read_visible(cx_tablescan *scan, uint32_t *nvisible, cx_err *err)
{
	uint32_t	lo;
	uint32_t	n;

	scan->stats.row_groups_read++;
	layer_stats(scan)->row_groups_read++;
	rows_to_read(scan, cx_fragr_group_rows(scan->r, scan->group), &lo, &n);
	if (cx_fragr_read_rows(scan->r, scan->group, lo, n, scan->want, &scan->g,
						   err) != CX_OK ||
		cx_layout_adapt(&scan->layout, scan->g, scan->want_user, err) != CX_OK)
		return err->code;
	/* row i of the group read is row first_row + i of the fragment */
	scan->first_row += lo;
	if (n > scan->rows_cap)
	{
		uint32_t   *grown = realloc(scan->rows, n * sizeof(uint32_t));

		if (grown == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "scan: out of memory");
		scan->rows = grown;
		scan->rows_cap = n;
	}
	return visible_rows(scan, scan->g, nvisible, err);
}

/* Visits the open fragment's next row group: skipped, or read. */
static cx_code
read_group(cx_tablescan *scan, uint32_t *nvisible, cx_err *err)
{
	cx_code		rc = CX_OK;

	start_group(scan);
	if (lookup_skips_group(scan))
		count_skipped_group(scan);
	else if (scan->keys_only ||
			 !stats_may_match(scan, group_stats_at, scan->group))
		rc = skip_group(scan, err);
	else
		rc = read_visible(scan, nvisible, err);
	scan->pos++;
	return rc;
}

/*
 * Parallel scans.  Units are the row groups of the sources in the order
 * the scan opens them (base fragments, then generations; a source passed
 * over without opening has none), numbered from 0.  Claimed numbers only
 * grow, so a participant walks the sources forward once, opening each
 * (its footer) to learn how many units it holds.
 */

/* Whether there is a unit to read: always without claim(); otherwise the
 * one claimed before, or a new one. */
static bool
claim_next(cx_tablescan *scan)
{
	if (scan->spec.claim == NULL || scan->has_claim)
		return true;
	scan->has_claim = scan->spec.claim(scan->spec.claim_arg, &scan->claimed);
	return scan->has_claim;
}

/* Whether the open source has a group left to read, positioned at it: the
 * next one, or the claimed unit (skipping the groups before it). */
static bool
source_holds_claim(cx_tablescan *scan)
{
	uint32_t	ngroups = cx_fragr_num_groups(scan->r);

	if (scan->spec.claim == NULL)
		return scan->pos < ngroups;
	if (scan->claimed >= scan->unit_base + ngroups)
	{
		scan->unit_base += ngroups;
		return false;
	}
	/* Claimed scans visit row groups in storage order (begin_spec). */
	scan->pos = scan->claimed - scan->unit_base;
	return true;
}

cx_code
cx_tablescan_next(cx_tablescan *scan, const cx_rowgroup **group,
				  const uint32_t **rows, uint32_t *nrows, cx_err *err)
{
	*group = NULL;
	*rows = NULL;
	*nrows = 0;
	/* Each pass either returns, opens the next source, or consumes one row
	 * group of the open one, so the loop ends. */
	for (;;)
	{
		uint32_t	nvisible = 0;

		cx_rowgroup_free(scan->g);
		scan->g = NULL;
		if (scan->phase != PHASE_DONE && !claim_next(scan))
			scan->phase = PHASE_DONE;
		if (scan->phase == PHASE_DONE)
			return CX_OK;
		if (scan->r == NULL)
		{
			if (open_next(scan, err) != CX_OK)
				return err->code;
			continue;
		}
		if (!source_holds_claim(scan))
		{
			close_source(scan);
			continue;
		}
		if (read_group(scan, &nvisible, err) != CX_OK)
			return err->code;
		scan->has_claim = false;
		if (nvisible > 0)
		{
			*group = scan->g;
			*rows = scan->rows;
			*nrows = nvisible;
			return CX_OK;
		}
	}
}

void
cx_tablescan_end(cx_tablescan *scan)
{
	if (scan == NULL)
		return;
	cx_rowgroup_free(scan->g);
	close_source(scan);
	cx_keymap_free(scan->map);
	for (uint32_t i = 0; scan->losers != NULL && i < scan->snap->ngens; i++)
		free(scan->losers[i].words);
	free(scan->losers);
	free(scan->marks);
	cx_lookup_free(scan->lookup);
	cx_keyrange_free(&scan->range);
	free(scan->rows);
	free(scan->want);
	free(scan->key_want);
	free(scan->frag_order);
	free(scan->group_order);
	free(scan->group_first);
	free(scan->want_user);
	free(scan);
}

const cx_colvec *
cx_tablescan_column(const cx_tablescan *scan, uint32_t column)
{
	return cx_layout_column(&scan->layout, scan->g, column);
}

const cx_tablescan_stats *
cx_tablescan_get_stats(const cx_tablescan *scan)
{
	return &scan->stats;
}
