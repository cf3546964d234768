/*
 * sim_check.c — the simulation's checks: the storage invariants
 * (docs/INVARIANTS.md) that the objects themselves show, and at the end
 * the newest snapshot against the oracle's record of what every append
 * was told.
 *
 * The oracle does not read the store: for each key it knows the appends
 * that wrote it, acknowledged (with their commit time) or of unknown
 * outcome, and derives which final states are allowed: the acknowledged
 * write with the latest commit time (the documented rule within and across
 * clusters), or an unknown one that may have come after it.  Commit times
 * increase per shard, so an unknown append lies between the acknowledged
 * ones of its cluster before and after it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_shard_manifest.h"
#include "mw_util.h"
#include "sim.h"

/* ---- gap-free versions (invariant 1), from the keys ---- */

typedef struct version_span
{
	uint64_t	min;
	uint64_t	max;
	uint64_t	count;
} version_span;

typedef struct spans
{
	version_span base;
	version_span shard[SIM_CLUSTERS_MAX];
} spans;

static void
span_add(version_span *sp, uint64_t v)
{
	if (sp->count == 0 || v < sp->min)
		sp->min = v;
	if (sp->count == 0 || v > sp->max)
		sp->max = v;
	sp->count++;
}

static void
collect_version(void *arg, const char *key)
{
	spans	   *sp = arg;
	cx_object_name name;

	switch (cx_object_parse(key, &name))
	{
		case CX_OBJECT_BASE_VERSION:
			span_add(&sp->base, name.number);
			break;
		case CX_OBJECT_SHARD_VERSION:
			if (name.shard_id[0] == 'c' && name.shard_id[1] >= '0' &&
				name.shard_id[1] < '0' + SIM_CLUSTERS_MAX)
				span_add(&sp->shard[name.shard_id[1] - '0'], name.number);
			break;
		default:
			break;
	}
}

static void
check_span(const version_span *sp, const char *what)
{
	if (sp->count > 0 && sp->count != sp->max - sp->min + 1)
		sim_violation("%s versions %" PRIu64 "..%" PRIu64 " have gaps (%" PRIu64 " present)",
					  what, sp->min, sp->max, sp->count);
}

void
sim_check_versions(void)
{
	spans		sp;

	memset(&sp, 0, sizeof(sp));
	sim_store_each(sim.store, collect_version, &sp);
	check_span(&sp.base, "base");
	for (int c = 0; c < sim.nclusters; c++)
	{
		char		what[32];

		snprintf(what, sizeof(what), "shard c%d", c);
		check_span(&sp.shard[c], what);
	}
}

/* ---- referenced objects present (invariants 3, 10), epochs (2) ---- */

static void
need_object(const char *key, const char *who)
{
	if (!sim_store_has(sim.store, key))
		sim_violation("%s lists %s, which is gone", who, key);
}

/* A generation's bytes: its object, or the version carrying them. */
static void
need_generation(const cx_shard_manifest *m, const cx_generation *g,
				const char *who)
{
	cx_objstore *in;
	cx_err		err;

	if (g->carrier == 0)
		need_object(g->fragment.path, who);
	else if (cx_generation_open(sim.store, m, g, &in, &err) != CX_OK)
		sim_violation("%s lists inline generation %" PRIu64 ": %s", who,
					  g->gen, err.msg);
	else
		cx_generation_done(sim.store, in);
}

static uint64_t
rows_hash(const mw_rows *rows)
{
	uint64_t	h = UINT64_C(1469598103934665603);

	for (uint32_t i = 0; i < rows->n; i++)
	{
		for (const char *p = rows->r[i].id; *p; p++)
			h = (h ^ (uint8_t) *p) * UINT64_C(1099511628211);
		h = (h ^ (uint64_t) rows->r[i].v) * UINT64_C(1099511628211);
	}
	return h | 1;				/* never 0, which means "not read yet" */
}

void
sim_check_version_rows(uint64_t v, const mw_rows *rows)
{
	uint64_t	h = rows_hash(rows);

	if (v == 0 || v >= SIM_VERSIONS_MAX)
		return;
	if (sim.version_rows[v] == 0)
		sim.version_rows[v] = h;
	else if (sim.version_rows[v] != h)
		sim_violation("base version %" PRIu64 " reads differently now (%u rows)",
					  v, rows->n);
}

/* A retained version reads, and reads as it did before. */
static void
check_version_reads(uint64_t v)
{
	mw_rows		rows;
	cx_err		err;

	if (mw_scan_version(sim.store, v, NULL, &rows, &err) != CX_OK)
	{
		sim_violation("scan of retained base version %" PRIu64 ": %s", v, err.msg);
		return;
	}
	sim_check_version_rows(v, &rows);
	mw_rows_free(&rows);
}

/* The newest SIM_RETAIN_VERSIONS base versions: GC must keep everything
 * they list, and each reads as it always did. */
static void
check_base_versions(void)
{
	uint64_t	latest;
	cx_err		err;

	if (cx_manifest_latest_version(sim.store, &latest, &err) != CX_OK)
	{
		sim_violation("newest base version: %s", err.msg);
		return;
	}
	for (uint64_t v = latest; v > 0 && latest - v < SIM_RETAIN_VERSIONS; v--)
	{
		cx_manifest *m;
		char		who[48];

		if (cx_manifest_load(sim.store, v, &m, &err) != CX_OK)
		{
			sim_violation("retained base version %" PRIu64 ": %s", v, err.msg);
			return;
		}
		snprintf(who, sizeof(who), "base version %" PRIu64, v);
		for (uint32_t f = 0; f < m->nfragments; f++)
			need_object(m->fragments[f].path, who);
		cx_manifest_free(m);
		check_version_reads(v);
	}
}

/* A shard's newest version: its generations present, its epoch not below
 * the version before it. */
static void
check_shard(int c)
{
	char		shard[8];
	char		who[64];
	cx_shard_manifest *m,
			   *prev = NULL;
	cx_err		err;

	sim_shard_name(c, shard);
	if (cx_shard_manifest_load_latest(sim.store, shard, 0, &m, &err) != CX_OK)
	{
		sim_violation("newest version of shard %s: %s", shard, err.msg);
		return;
	}
	if (m == NULL)
		return;
	snprintf(who, sizeof(who), "shard %s version %" PRIu64, shard, m->version);
	for (uint32_t g = 0; g < m->ngens; g++)
		need_generation(m, &m->gens[g], who);
	if (m->version > 1 &&
		cx_shard_manifest_load(sim.store, shard, m->version - 1, &prev,
							   &err) == CX_OK)
	{
		if (prev->epoch > m->epoch)
			sim_violation("%s has epoch %" PRIu64 " below its predecessor's %" PRIu64,
						  who, m->epoch, prev->epoch);
		cx_shard_manifest_free(prev);
	}
	cx_shard_manifest_free(m);
}

/* The rows of the newest snapshot, a key at most once (invariant 5). */
static bool
scan_newest(mw_rows *rows, const char *when)
{
	cx_err		err;

	if (mw_scan(sim.store, NULL, rows, &err) != CX_OK)
	{
		sim_violation("%s: scan of the newest snapshot: %s", when, err.msg);
		return false;
	}
	for (uint32_t i = 1; i < rows->n; i++)
		if (strcmp(rows->r[i - 1].id, rows->r[i].id) == 0)
			sim_violation("%s: key %s twice in the newest snapshot", when,
						  rows->r[i].id);
	return true;
}

/* Looking every key up (through the key index where there is one) finds
 * what the scan of the whole snapshot found. */
static void
check_lookups(const mw_rows *scanned)
{
	char		names[SIM_KEYS][8];
	const char *keys[SIM_KEYS];
	mw_rows		found;
	cx_err		err;

	for (int k = 0; k < SIM_KEYS; k++)
	{
		sim_key_name(k, names[k]);
		keys[k] = names[k];
	}
	if (mw_scan_keys(sim.store, keys, SIM_KEYS, &found, &err) != CX_OK)
	{
		sim_violation("looking up every key: %s", err.msg);
		return;
	}
	mw_rows_sort(&found);
	if (!mw_rows_equal(&found, scanned))
	{
		uint32_t	i = 0;

		while (i < found.n && i < scanned->n &&
			   strcmp(found.r[i].id, scanned->r[i].id) == 0 &&
			   found.r[i].v == scanned->r[i].v)
			i++;
		sim_violation("looking up every key finds %u rows, the scan %u; first difference: lookup %s=%" PRId64 ", scan %s=%" PRId64,
					  found.n, scanned->n,
					  i < found.n ? found.r[i].id : "-", i < found.n ? found.r[i].v : 0,
					  i < scanned->n ? scanned->r[i].id : "-", i < scanned->n ? scanned->r[i].v : 0);
	}
	mw_rows_free(&found);
}

void
sim_check_objects(void)
{
	mw_rows		rows;

	check_base_versions();
	for (int c = 0; c < sim.nclusters; c++)
		check_shard(c);
	if (scan_newest(&rows, "check"))
	{
		check_lookups(&rows);
		mw_rows_free(&rows);
	}
}

/* ---- the oracle ---- */

/* The commit times bounding each unknown append: those of its cluster's
 * acknowledged appends just before (lo) and just after (hi) it. */
typedef struct bounds
{
	int64_t		lo;
	int64_t		hi;
} bounds;

/* An acknowledged append that wrote something (commit time 0: every row
 * was dropped or refused, nothing written). */
static bool
wrote(const sim_append *a)
{
	return a->outcome == SIM_ACKED && a->ts != 0;
}

static bounds *
unknown_bounds(void)
{
	bounds	   *b = calloc(sim.nappends + 1, sizeof(bounds));
	int64_t		last[SIM_CLUSTERS_MAX];

	if (b == NULL)
		abort();
	for (int c = 0; c < SIM_CLUSTERS_MAX; c++)
		last[c] = INT64_MIN;
	for (size_t i = 0; i < sim.nappends; i++)
	{
		const sim_append *a = sim.appends[i];

		b[i].lo = last[a->cluster];
		if (wrote(a))
			last[a->cluster] = a->ts;
	}
	for (int c = 0; c < SIM_CLUSTERS_MAX; c++)
		last[c] = INT64_MAX;
	for (size_t i = sim.nappends; i-- > 0;)
	{
		const sim_append *a = sim.appends[i];

		b[i].hi = last[a->cluster];
		if (wrote(a))
			last[a->cluster] = a->ts;
	}
	return b;
}

/* What a key shows: absent, or one row with value v. */
typedef struct shown
{
	bool		present;
	int64_t		v;
} shown;

static bool
shows(const shown *s, const sim_op *op)
{
	return op->del ? !s->present : (s->present && s->v == op->v);
}

/* What append a did to key (NULL: nothing); a TRUNCATE deletes every key
 * committed before it. */
static const sim_op *
op_on(const sim_append *a, int key)
{
	static const sim_op truncated = {.key = -1, .del = true};

	if (a->truncate)
		return &truncated;
	for (int i = 0; i < a->nops; i++)
		if (a->ops[i].key == key)
			return &a->ops[i];
	return NULL;
}

/* The acknowledged write of key with the latest commit time (NULL: none),
 * leaving out inserts-if-absent, which may have been dropped; *ts receives
 * that time. */
static const sim_op *
last_acked(int key, int64_t *ts)
{
	const sim_op *best = NULL;

	*ts = INT64_MIN;
	for (size_t i = 0; i < sim.nappends; i++)
	{
		const sim_append *a = sim.appends[i];
		const sim_op *op = op_on(a, key);

		if (op != NULL && !op->maybe && a->outcome == SIM_ACKED && a->ts >= *ts)
		{
			best = op;
			*ts = a->ts;
		}
	}
	return best;
}

/* Whether key's state s is one the oracle allows. */
static bool
allowed(int key, const shown *s, const bounds *b)
{
	int64_t		ts;
	const sim_op *x = last_acked(key, &ts);

	if (x == NULL ? !s->present : shows(s, x))
		return true;
	for (size_t i = 0; i < sim.nappends; i++)
	{
		const sim_append *a = sim.appends[i];
		const sim_op *op = op_on(a, key);

		/* An exact tie of commit times across clusters may go either way;
		 * an insert-if-absent after the last write may have gone in. */
		if (op != NULL && a->outcome == SIM_ACKED &&
			(a->ts == ts || (op->maybe && a->ts > ts)) && shows(s, op))
			return true;
		if (op != NULL && a->outcome == SIM_UNKNOWN && b[i].hi > ts &&
			shows(s, op))
			return true;
	}
	return false;
}

/*
 * An unknown append landed entirely or not at all: it shows on a key
 * where it holds the value, and it did not land if a key shows an
 * acknowledged put committed before it (which it would have replaced).
 */
static void
check_all_or_nothing(const shown *state, const bounds *b, const char *when)
{
	for (size_t i = 0; i < sim.nappends; i++)
	{
		const sim_append *a = sim.appends[i];
		int			landed = -1,
					missing = -1;

		if (a->outcome != SIM_UNKNOWN)
			continue;
		for (int k = 0; k < a->nops; k++)
		{
			const sim_op *op = &a->ops[k];
			int64_t		ts;
			const sim_op *x = last_acked(op->key, &ts);

			if (!op->del && shows(&state[op->key], op))
				landed = op->key;
			else if (!op->maybe && x != NULL && !x->del && ts <= b[i].lo &&
					 shows(&state[op->key], x))
				missing = op->key;
		}
		if (landed >= 0 && missing >= 0)
			sim_violation("%s: an append of unknown outcome shows on k%02d but not on k%02d",
						  when, landed, missing);
	}
}

static void
describe(const shown *s, char *out, size_t n)
{
	if (s->present)
		snprintf(out, n, "value %" PRId64, s->v);
	else
		snprintf(out, n, "absent");
}

void
sim_check_oracle(const char *when)
{
	mw_rows		rows;
	shown		state[SIM_KEYS];
	bounds	   *b;

	if (!scan_newest(&rows, when))
		return;
	memset(state, 0, sizeof(state));
	for (uint32_t i = 0; i < rows.n; i++)
	{
		int			key;

		if (sscanf(rows.r[i].id, "k%d", &key) != 1 || key < 0 || key >= SIM_KEYS)
			sim_violation("%s: a row of key \"%s\" nobody wrote", when, rows.r[i].id);
		else
			state[key] = (shown) {true, rows.r[i].v};
	}
	mw_rows_free(&rows);
	b = unknown_bounds();
	for (int k = 0; k < SIM_KEYS; k++)
		if (!allowed(k, &state[k], b))
		{
			char		got[48];
			int64_t		ts;
			const sim_op *x = last_acked(k, &ts);

			describe(&state[k], got, sizeof(got));
			sim_violation("%s: k%02d is %s; last acknowledged: %s %" PRId64 " at %" PRId64,
						  when, k, got, x == NULL ? "nothing" : x->del ? "delete" : "put",
						  x == NULL ? 0 : x->v, ts);
		}
	check_all_or_nothing(state, b, when);
	free(b);
}
