/*
 * sim_actors.c — what the simulation's actors do, one bounded action at a
 * time: a shard writer per cluster (appends of puts and deletes over a key
 * space every cluster shares, seals, drains, a new process claiming the
 * shard, a stale process writing after that claim), merges of any shard,
 * garbage collection, and readers of the newest snapshot (checking that it
 * misses no committed generation) and of retained versions.  Writers
 * record what each append was told in the oracle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_shard_manifest.h"
#include "memwal/cx_shard_writer.h"
#include "mw_util.h"
#include "table/cx_manifest.h"
#include "sim.h"

typedef struct sim_writer
{
	int			cluster;
	char		shard[8];
	cx_shardwriter *w;			/* NULL: none open (the next action opens) */
	cx_objstore **store;		/* its actor's handle, which w uses */
} sim_writer;

bool
sim_damage(cx_code rc)
{
	return rc == CX_ERR_NOT_FOUND || rc == CX_ERR_CORRUPT;
}

static void
report_damage(const char *who, cx_code rc, const cx_err *err)
{
	if (sim_damage(rc))
		sim_violation("%s: %s", who, err->msg);
}

static sim_actor *
actor_new(const char *name, sim_action_fn action, void *state)
{
	sim_actor  *a = calloc(1, sizeof(*a));

	if (a == NULL)
		abort();
	snprintf(a->name, sizeof(a->name), "%s", name);
	a->action = action;
	a->state = state;
	a->store = sim_store_view(sim.store);
	return a;
}

void
sim_actor_free(sim_actor *a)
{
	free(a->state);
	cx_obj_close(a->store);
	free(a);
}

/* ---- the writer ---- */

/* Each cluster's clock: the simulated one, off by the run's skew for it
 * (commit times then disagree with the order of events across clusters,
 * as on machines whose clocks differ; the later commit time still wins). */
#define CLUSTER_CLOCK(c) \
	static int64_t cluster_clock_##c(void) \
	{ return SIM_EPOCH_US + sim_now_us() + sim.skew_us[c]; }
CLUSTER_CLOCK(0)
CLUSTER_CLOCK(1)
CLUSTER_CLOCK(2)
static int64_t (*const cluster_clocks[SIM_CLUSTERS_MAX]) (void) = {
	cluster_clock_0, cluster_clock_1, cluster_clock_2
};

static cx_code
open_writer(sim_writer *sw, cx_objstore *s, cx_shardwriter **w, cx_err *err)
{
	cx_sw_options o;

	mw_writer_options(true, &o);
	o.clock_us = cluster_clocks[sw->cluster];
	o.pending_generations_max = 6;
	o.revalidate_after_ms = sim.revalidate_after_ms;
	o.inline_generation_max = sim.inline_generation_max;
	o.view_lag_generations = sim.view_lag_generations;
	o.view_lag_keys = sim.view_lag_keys;
	return cx_sw_open(s, sw->shard, &o, w, err);
}

static void
close_writer(cx_shardwriter **w, bool seal)
{
	cx_err		err;

	if (*w != NULL)
		(void) cx_sw_close(*w, seal, &err);
	*w = NULL;
}

/* Errors that refuse an append before anything is written. */
static bool
refused(cx_code rc)
{
	return rc == CX_ERR_LIMIT || rc == CX_ERR_SCHEMA ||
		rc == CX_ERR_INVALID || rc == CX_ERR_UNIQUE;
}

/* A put, an insert (refused while the key is live), an insert-if-absent
 * (dropped while the key is live) or a delete. */
static cx_row_kind
draw_kind(void)
{
	uint32_t	r = sim_below(100);

	return r < 25 ? CX_ROW_DELETE : r < 40 ? CX_ROW_INSERT :
		r < 50 ? CX_ROW_INSERT_IF_ABSENT : CX_ROW_PUT;
}

static void
trace_append(const sim_append *a, const char *msg)
{
	static const char *const outcomes[] = {"acknowledged", "failed", "unknown"};

	fprintf(stderr, "sim: t=%lld append by c%d:", (long long) sim_now_us(),
			a->cluster);
	if (a->truncate)
		fprintf(stderr, " TRUNCATE");
	for (int i = 0; i < a->nops; i++)
		if (a->ops[i].del)
			fprintf(stderr, " delete k%02d", a->ops[i].key);
		else
			fprintf(stderr, " k%02d=%lld", a->ops[i].key, (long long) a->ops[i].v);
	fprintf(stderr, " -> %s ts %lld %s\n", outcomes[a->outcome],
			(long long) a->ts, msg);
}

static cx_code
record_outcome(sim_append *a, cx_code rc, const cx_err *err)
{
	a->outcome = rc == CX_OK ? SIM_ACKED : refused(rc) ? SIM_FAILED : SIM_UNKNOWN;
	if (sim.trace)
		trace_append(a, rc == CX_OK ? "" : err->msg);
	return rc;
}

/*
 * The rows of a as one request each, staged and then appended once: a
 * request refused while staging (an INSERT of a live key) fails alone, and
 * goes to an append record of its own, failed; the others share the
 * append's outcome.
 */
static cx_code
append_requests(cx_shardwriter *w, sim_append *a, const mw_op *ops,
				bool seal, cx_err *err)
{
	sim_op		refused_ops[SIM_OPS_MAX];
	int			nrefused = 0;
	int			kept = 0;
	int			cluster = a->cluster;
	cx_code		rc = CX_OK;

	for (int i = 0; i < a->nops && rc == CX_OK; i++)
	{
		rc = mw_stage(w, &ops[i], err);
		if (rc == CX_OK)
			a->ops[kept++] = a->ops[i];
		else if (refused(rc))
		{
			refused_ops[nrefused++] = a->ops[i];
			rc = CX_OK;
		}
	}
	a->nops = kept;
	if (rc == CX_OK)
		rc = cx_sw_append_staged(w, seal, &a->ts, err);
	else
		cx_sw_unstage(w);
	rc = record_outcome(a, rc, err);
	if (nrefused > 0)
	{
		sim_append *f = sim_record_append();

		f->cluster = cluster;
		f->nops = nrefused;
		memcpy(f->ops, refused_ops, nrefused * sizeof(sim_op));
		f->outcome = SIM_FAILED;
	}
	return rc;
}

/* One append, recorded: a TRUNCATE now and then, else 1..SIM_OPS_MAX rows
 * on distinct keys, in one request or one request per row. */
static cx_code
append_batch(sim_writer *sw, cx_shardwriter *w, bool seal, cx_err *err)
{
	sim_append *a = sim_record_append();
	mw_op		ops[SIM_OPS_MAX];
	char		names[SIM_OPS_MAX][8];
	bool		used[SIM_KEYS] = {false};
	cx_row_kind kind;
	cx_code		rc;

	a->cluster = sw->cluster;
	a->outcome = SIM_UNKNOWN;
	if (sim_chance(30))
	{
		const mw_op marker = {CX_ROW_DELETE, NULL, 0};

		a->truncate = true;
		rc = mw_append_ts(w, &marker, 1, seal, &a->ts, err);
		return record_outcome(a, rc, err);
	}
	a->nops = 1 + (int) sim_below(SIM_OPS_MAX);
	for (int i = 0; i < a->nops; i++)
	{
		sim_op	   *op = &a->ops[i];

		do
			op->key = (int) sim_below(SIM_KEYS);
		while (used[op->key]);
		used[op->key] = true;
		kind = draw_kind();
		op->del = kind == CX_ROW_DELETE;
		op->maybe = kind == CX_ROW_INSERT_IF_ABSENT;
		op->v = op->del ? 0 : ++sim.next_value;
		sim_key_name(op->key, names[i]);
		ops[i] = (mw_op) {kind, names[i], op->v};
	}
	if (a->nops > 1 && sim_chance(300))
		return append_requests(w, a, ops, seal, err);
	rc = mw_append_ts(w, ops, a->nops, seal, &a->ts, err);
	return record_outcome(a, rc, err);
}

/* What a writer does after an error: a fenced one is done for. */
static void
after_error(sim_writer *sw, cx_code rc, const cx_err *err)
{
	report_damage(sw->shard, rc, err);
	if (rc == CX_ERR_FENCED)
		close_writer(&sw->w, false);
}

/* A second process of the cluster (a handle of its own) claims the shard;
 * the first one then writes once more (it must be fenced or its rows kept)
 * and dies. */
static void
stale_write(sim_writer *sw)
{
	cx_objstore *other = sim_store_view(sim.store);
	cx_shardwriter *next;
	cx_err		err;
	cx_code		rc = open_writer(sw, other, &next, &err);
	size_t		made = sim.nappends;	/* the record append_batch makes */

	if (rc != CX_OK)
	{
		cx_obj_close(other);
		after_error(sw, rc, &err);
		return;
	}
	rc = append_batch(sw, sw->w, sim_chance(500), &err);
	report_damage(sw->shard, rc, &err);
	/* The newer claim is complete: the stale writer's next write is
	 * fenced (invariant 2), whatever it is (commit time 0: nothing was
	 * left to write, every row dropped or refused). */
	if (rc == CX_OK && sim.appends[made]->ts != 0)
		sim_violation("shard %s: a writer acknowledged an append after a newer claim of its shard",
					  sw->shard);
	close_writer(&sw->w, false);
	cx_obj_close(*sw->store);
	*sw->store = other;
	sw->w = next;
}

static void
writer_action(sim_actor *a)
{
	sim_writer *sw = a->state;
	uint32_t	r = sim_below(100);
	cx_err		err;
	cx_code		rc = CX_OK;

	if (sw->w == NULL)
	{
		rc = open_writer(sw, *sw->store, &sw->w, &err);
		if (rc != CX_OK)
		{
			report_damage(sw->shard, rc, &err);
			sw->w = NULL;
		}
		return;
	}
	if (r < 60)
		rc = append_batch(sw, sw->w, sim_chance(250), &err);
	else if (r < 72)
		rc = cx_sw_seal(sw->w, &err);
	else if (r < 84)
		rc = mw_drain(*sw->store, sw->w, &err);
	else if (r < 90)
		close_writer(&sw->w, false);	/* a crash: the next claim replays */
	else if (r < 94)
		close_writer(&sw->w, sim_chance(500));
	else
		stale_write(sw);
	if (rc != CX_OK)
		after_error(sw, rc, &err);
}

sim_actor *
sim_writer_new(int cluster)
{
	sim_writer *sw = calloc(1, sizeof(*sw));
	sim_actor  *a;
	char		name[32];

	if (sw == NULL)
		abort();
	sw->cluster = cluster;
	sim_shard_name(cluster, sw->shard);
	snprintf(name, sizeof(name), "writer %s", sw->shard);
	a = actor_new(name, writer_action, sw);
	sw->store = &a->store;
	return a;
}

void
sim_writer_finish(sim_actor *a)
{
	sim_writer *sw = a->state;

	close_writer(&sw->w, sim_chance(500));
}

/* ---- merges ---- */

static void
merger_action(sim_actor *a)
{
	cx_merge_options o;
	cx_merge_result res;
	char		shard[8];
	cx_err		err;
	cx_code		rc;

	cx_merge_options_default(&o);
	o.max_generations = 1 + sim_below(4);
	o.target_rows_per_fragment = 2 + sim_below(30);
	sim_shard_name((int) sim_below((uint32_t) sim.nclusters), shard);
	rc = cx_merge_shard(a->store, shard, &o, &res, &err);
	report_damage("merge", rc, &err);
}

sim_actor *
sim_merger_new(void)
{
	return actor_new("merge", merger_action, NULL);
}

/* ---- compaction ---- */

void
sim_compact_options(cx_compact_options *o, const char *holder, bool force)
{
	cx_compact_options_default(o);
	o->min_fragments = 2 + sim_below(4);
	o->target_rows_per_fragment = 4 + sim_below(40);
	o->holder = holder;
	o->force = force;
}

/* Two compactions may race: one gets the lease, the other CX_ERR_BUSY. */
static void
compact_action(sim_actor *a)
{
	cx_compact_options o;
	cx_compact_result res;
	cx_err		err;
	cx_code		rc;

	sim_compact_options(&o, a->name, sim_chance(200));
	rc = cx_compact(a->store, &o, NULL, &res, &err);
	report_damage(a->name, rc, &err);
}

sim_actor *
sim_compactor_new(int n)
{
	char		name[32];

	snprintf(name, sizeof(name), "compaction %d", n);
	return actor_new(name, compact_action, NULL);
}

/* ---- key-index builds ---- */

static void
index_action(sim_actor *a)
{
	cx_keyindex_options o;
	cx_keyindex_result res;
	cx_err		err;
	cx_code		rc;

	cx_keyindex_options_default(&o);
	o.max_entries = 4 + sim_below(16);
	o.max_segments = 1 + sim_below(3);
	rc = cx_keyindex_update_table(a->store, NULL, &o, &res, &err);
	report_damage("key index", rc, &err);
}

sim_actor *
sim_indexer_new(void)
{
	return actor_new("key index", index_action, NULL);
}

/* ---- garbage collection ---- */

void
sim_gc_options(cx_gc_options *o)
{
	cx_gc_options_default(o);
	o->retain_versions = SIM_RETAIN_VERSIONS;
	o->retain_interval_us = SIM_GRACE_US;
	o->grace_us = SIM_GRACE_US;
	o->batch = 4;
}

static void
gc_action(sim_actor *a)
{
	cx_gc_options o;
	cx_gc_result res;
	cx_err		err;
	cx_code		rc;

	sim_gc_options(&o);
	rc = cx_gc(a->store, &o, NULL, &res, &err);
	report_damage("gc", rc, &err);
}

sim_actor *
sim_gc_new(void)
{
	return actor_new("gc", gc_action, NULL);
}

/* ---- readers ---- */

/* No key twice in what one scan returned (its rows are sorted by id). */
static void
check_unique(const mw_rows *rows, const char *what)
{
	for (uint32_t i = 1; i < rows->n; i++)
		if (strcmp(rows->r[i - 1].id, rows->r[i].id) == 0)
			sim_violation("%s: key %s twice", what, rows->r[i].id);
}

/*
 * A snapshot misses no generation that was committed before it began
 * (invariant 21: it skips only shards without a dirty marker): for each
 * shard, it read the manifest version seen just before it or a newer one,
 * or its base merged every generation that version listed.  Faults while
 * looking make this round check nothing.
 */
static void
check_snapshot_sees_committed_generations(cx_objstore *s)
{
	cx_shard_manifest *before[SIM_CLUSTERS_MAX] = {0};
	cx_snapshot *snap = NULL;
	cx_snapshot_pin pin;
	char		shard[8];
	cx_err		err;
	bool		looked = true;

	for (int c = 0; c < sim.nclusters && looked; c++)
	{
		sim_shard_name(c, shard);
		looked = cx_shard_manifest_load_latest(s, shard, 0, &before[c],
											   &err) == CX_OK;
	}
	if (looked && cx_snapshot_open(s, 0, &snap, &err) == CX_OK)
	{
		const cx_manifest *base = cx_snapshot_base(snap);

		cx_snapshot_pin_of(snap, &pin);
		for (uint32_t i = 0; i < base->nshards; i++)
		{
			int			c = -1;

			for (int k = 0; k < sim.nclusters; k++)
			{
				sim_shard_name(k, shard);
				if (strcmp(shard, base->shards[i].shard_id) == 0)
					c = k;
			}
			if (c < 0 || before[c] == NULL || pin.shard_versions[i] >= before[c]->version)
				continue;
			for (uint32_t g = 0; g < before[c]->ngens; g++)
				if (before[c]->gens[g].gen > base->shards[i].merged_gen)
					sim_violation("snapshot of base %llu read shard %s at version %llu and missed generation %llu of version %llu",
								  (unsigned long long) base->version,
								  base->shards[i].shard_id,
								  (unsigned long long) pin.shard_versions[i],
								  (unsigned long long) before[c]->gens[g].gen,
								  (unsigned long long) before[c]->version);
		}
		cx_snapshot_close(snap);
	}
	for (int c = 0; c < sim.nclusters; c++)
		cx_shard_manifest_free(before[c]);
}

/*
 * Scans the newest snapshot or a base version among the newest retained.
 * A missing or corrupt object is a violation only if the version read is
 * still retained now (newer commits since the choice may have let GC take
 * it).
 */
static void
reader_action(sim_actor *a)
{
	uint64_t	latest = 0,
				v = 0,
				now = 0;
	mw_rows		rows;
	cx_err		err;
	cx_code		rc;

	if (sim_chance(500))
	{
		if (cx_manifest_latest_version(a->store, &latest, &err) != CX_OK ||
			latest == 0)
			return;
		v = latest - sim_below(latest < SIM_RETAIN_VERSIONS - 1 ?
							   (uint32_t) latest : SIM_RETAIN_VERSIONS - 1);
	}
	if (v == 0)
		check_snapshot_sees_committed_generations(a->store);
	rc = mw_scan_version(a->store, v, NULL, &rows, &err);
	if (rc == CX_OK)
	{
		check_unique(&rows, v == 0 ? "newest snapshot" : "retained version");
		sim_check_version_rows(v, &rows);
	}
	else if (sim_damage(rc))
	{
		cx_err		err2;

		sim_store_faults(sim.store, NULL);
		if (cx_manifest_latest_version(a->store, &now, &err2) == CX_OK &&
			(v == 0 || now - v < SIM_RETAIN_VERSIONS))
			sim_violation("read of version %llu (newest %llu): %s",
						  (unsigned long long) v, (unsigned long long) now,
						  err.msg);
		sim_store_faults(sim.store, &sim.faults);
	}
	mw_rows_free(&rows);
}

sim_actor *
sim_reader_new(void)
{
	return actor_new("reader", reader_action, NULL);
}
