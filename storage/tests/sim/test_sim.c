/*
 * test_sim.c — runs the deterministic simulation (sim.h) for many seeds.
 *
 * A seed chooses the run's shape (clusters, readers, steps, how faulty the
 * store is), then the scheduler interleaves the actors step by step with
 * the cheap checks after every step and the deeper ones every few steps.
 * Now and then the run quiesces (every actor between actions) and the
 * clock jumps past GC's grace, so GC has garbage to collect while no
 * upload is waiting for its commit.  At the end the faults stop, the
 * actors finish, every cluster is claimed again (replaying its WAL) and
 * sealed, and the snapshot is checked against the oracle after that, after
 * merging everything, after a last compaction and after a last GC.
 *
 * CX_SIM_SEEDS=N runs seeds 1..N (default 2000; CX_SIM_FROM=F: F..N);
 * CX_SIM_SEED=S runs seed S alone and says what it did; CX_SIM_LENGTH=L
 * makes every run L times longer; CX_SIM_TRACE=1 prints every store call
 * and append.  "make -C storage sim SEEDS=N" and "make -C storage sim
 * SEED=S" set the first two.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx_test.h"
#include "mw_util.h"
#include "sim.h"

#define SIM_DEFAULT_SEEDS 2000
#define SIM_CHECK_EVERY 16		/* steps between the deep checks */
#define SIM_FINISH_STEPS 20000	/* for the actors to end their actions */
#define SIM_ACTORS_MAX_RUN 12

sim_world	sim;

static uint64_t seed_now;
static char first_violation[1024];

void
sim_violation(const char *fmt,...)
{
	va_list		ap;
	char		what[768];

	if (first_violation[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(first_violation, sizeof(first_violation),
			 "sim: seed %" PRIu64 " failed at step %" PRIu64 ": %s",
			 seed_now, sim.step, what);
}

void
sim_key_name(int key, char out[8])
{
	snprintf(out, 8, "k%02d", key % SIM_KEYS);
}

void
sim_shard_name(int c, char out[8])
{
	snprintf(out, 8, "c%d", c % SIM_CLUSTERS_MAX);
}

sim_append *
sim_record_append(void)
{
	if (sim.nappends == sim.cap)
	{
		sim.cap = sim.cap ? sim.cap * 2 : 64;
		sim.appends = realloc(sim.appends, sim.cap * sizeof(sim_append *));
		if (sim.appends == NULL)
			abort();
	}
	/* Its own allocation: an actor that yields inside its append writes
	 * the outcome after others have recorded theirs (a record inside the
	 * growing array moved under it). */
	if ((sim.appends[sim.nappends] = calloc(1, sizeof(sim_append))) == NULL)
		abort();
	return sim.appends[sim.nappends++];
}

/* The run's shape, drawn from its seed. */
typedef struct sim_shape
{
	int			readers;
	int			mergers;
	int			compactors;
	bool		indexer;
	bool		gc;
	uint32_t	steps;
	bool		faulty;
} sim_shape;

static uint64_t env_u64(const char *name, uint64_t dflt);

/* Each cluster's clock error: none in half the cases, else up to 100 ms
 * either way (drawn again at each clock jump: a clock that steps). */
static void
draw_skews(void)
{
	for (int c = 0; c < sim.nclusters; c++)
		sim.skew_us[c] = sim_chance(500) ? 0 : (int64_t) sim_below(200001) - 100000;
}

static void
draw_shape(sim_shape *sh)
{
	uint32_t	storm;

	sim.nclusters = 1 + (int) sim_below(SIM_CLUSTERS_MAX);
	sim.revalidate_after_ms = sim_chance(500) ? 0 : 50;
	sim.inline_generation_max = sim_chance(750) ? CX_SW_DEFAULT_INLINE_MAX : 0;
	draw_skews();
	sh->readers = (int) sim_below(3);
	sh->mergers = 1 + (int) sim_below(2);
	sh->gc = sim_chance(800);
	sh->compactors = (int) sim_below(3);
	sh->indexer = sim_chance(500);
	sh->steps = (150 + sim_below(250)) * (uint32_t) env_u64("CX_SIM_LENGTH", 1);
	sh->faulty = sim_chance(750);
	storm = sim_chance(100) ? 5 : 1;	/* a tenth of the seeds: a bad day */
	sim.faults.error = storm * sim_below(60);
	sim.faults.lost_ack = storm * sim_below(30);
	sim.faults.deferred = storm * sim_below(20);
	sim.faults.delay = storm * sim_below(50);
	/* Half the seeds refresh the writers' base views after every drain,
	 * half let them fall a few generations behind (stale views). */
	sim.view_lag_generations = sim_chance(500) ? 1 : 1 + (uint32_t) sim_below(6);
	/* A quarter of them also reload the view at a handful of cached keys. */
	sim.view_lag_keys = sim_chance(250) ? 2 + (uint32_t) sim_below(8) :
		CX_SW_DEFAULT_VIEW_LAG_KEYS;
}

/* Runs check with the faults off (it reads through the engine). */
static void
checked(void (*check) (void), bool faulty)
{
	sim_store_faults(sim.store, NULL);
	check();
	sim_store_faults(sim.store, faulty ? &sim.faults : NULL);
}

static void
run_steps(const sim_shape *sh)
{
	bool		jumping = false;

	for (sim.step = 1; sim.step <= sh->steps && first_violation[0] == '\0';
		 sim.step++)
	{
		sim_advance(1 + sim_below(2000));
		if (!sim_step())
			break;
		sim_store_land_deferred(sim.store, false);
		if (sim_chance(3))
			draw_skews();		/* a clock steps, maybe back */
		if (!jumping && sim_chance(15))
			sim_quiesce(jumping = true);
		if (jumping && sim_all_idle())
		{
			/* A request that timed out is applied within the request
			 * timeout, far below any grace GC is given: before the clock
			 * passes the grace, every deferred put has landed. */
			sim_store_land_deferred(sim.store, true);
			sim_advance(SIM_GRACE_US + 1000000);
			draw_skews();
			sim_quiesce(jumping = false);
		}
		sim_check_versions();
		if (sim.step % SIM_CHECK_EVERY == 0)
			checked(sim_check_objects, sh->faulty);
	}
	sim_quiesce(false);
}

/* The actors end their actions with the store well again. */
static void
finish_actors(void)
{
	sim_store_faults(sim.store, NULL);
	sim_stop();
	for (int n = 0; sim_step(); n++)
		if (n == SIM_FINISH_STEPS)
		{
			sim_violation("%s did not finish its action", sim_busy_actor()->name);
			return;
		}
	sim_store_land_deferred(sim.store, true);
}

/* Each cluster claims its shard once more (replaying what its last writer
 * left unsealed), seals and closes. */
static void
reclaim_every_shard(void)
{
	for (int c = 0; c < sim.nclusters; c++)
	{
		cx_sw_options o;
		cx_shardwriter *w;
		char		shard[8];
		cx_err		err;

		mw_writer_options(true, &o);
		o.pending_generations_max = 1000;
		sim_shard_name(c, shard);
		if (cx_sw_open(sim.store, shard, &o, &w, &err) != CX_OK ||
			cx_sw_close(w, true, &err) != CX_OK)
			sim_violation("final claim and seal of %s: %s", shard, err.msg);
	}
}

static void
merge_everything(void)
{
	for (int c = 0; c < sim.nclusters; c++)
	{
		char		shard[8];

		sim_shard_name(c, shard);
		for (int round = 0; round < 1000; round++)
		{
			cx_merge_result res;
			cx_err		err;

			if (cx_merge_shard(sim.store, shard, NULL, &res, &err) != CX_OK)
			{
				sim_violation("final merge of %s: %s", shard, err.msg);
				return;
			}
			if (res.generations == 0)
				break;
		}
	}
}

static void
last_compaction(void)
{
	cx_compact_options o;
	cx_compact_result res;
	cx_err		err;

	sim_compact_options(&o, "final", true);
	/* A job whose release failed left its lease: it lapses in bounded time. */
	sim_advance((int64_t) o.lease_seconds * 1000000 + 1);
	if (cx_compact(sim.store, &o, NULL, &res, &err) != CX_OK)
		sim_violation("final compaction: %s", err.msg);
}

static void
last_gc(void)
{
	cx_gc_options o;
	cx_gc_result res;
	cx_err		err;

	sim_gc_options(&o);
	sim_advance(SIM_GRACE_US + 1000000);
	if (cx_gc(sim.store, &o, NULL, &res, &err) != CX_OK)
		sim_violation("final GC: %s", err.msg);
}

/* The writers are the first sim.nclusters actors. */
static void
final_checks(sim_actor **actors)
{
	finish_actors();
	for (int c = 0; c < sim.nclusters; c++)
		sim_writer_finish(actors[c]);
	reclaim_every_shard();
	sim_check_versions();
	sim_check_objects();
	sim_check_oracle("after the final seal");
	merge_everything();
	sim_check_oracle("after the final merges");
	last_compaction();
	sim_check_oracle("after the final compaction");
	last_gc();
	sim_check_versions();
	sim_check_objects();
	sim_check_oracle("after the last GC");
}

typedef struct sim_totals
{
	uint64_t	steps;
	uint64_t	faults;
	uint64_t	appends[3];		/* by sim_outcome */
} sim_totals;

static uint64_t
env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? strtoull(v, NULL, 10) : dflt;
}

/* One seed; false (first_violation set) if an invariant broke. */
static bool
run_seed(uint64_t seed, sim_totals *t)
{
	sim_actor  *actors[SIM_ACTORS_MAX_RUN];
	int			nactors = 0;
	sim_shape	sh;

	seed_now = seed;
	first_violation[0] = '\0';
	sim_sched_begin(seed);
	memset(&sim, 0, sizeof(sim));
	sim.store = sim_store_open();
	sim.trace = env_u64("CX_SIM_TRACE", 0) != 0;
	sim_store_trace(sim.store, sim.trace);
	draw_shape(&sh);
	for (int c = 0; c < sim.nclusters; c++)
		actors[nactors++] = sim_writer_new(c);
	for (int m = 0; m < sh.mergers; m++)
		actors[nactors++] = sim_merger_new();
	if (sh.gc)
		actors[nactors++] = sim_gc_new();
	if (sh.indexer)
		actors[nactors++] = sim_indexer_new();
	for (int c = 0; c < sh.compactors; c++)
		actors[nactors++] = sim_compactor_new(c);
	for (int r = 0; r < sh.readers; r++)
		actors[nactors++] = sim_reader_new();
	for (int i = 0; i < nactors; i++)
		sim_actor_add(actors[i]);
	sim_store_faults(sim.store, sh.faulty ? &sim.faults : NULL);
	run_steps(&sh);
	if (first_violation[0] == '\0')
		final_checks(actors);
	t->steps += sim.step;
	t->faults += sim_store_faults_injected(sim.store);
	for (size_t i = 0; i < sim.nappends; i++)
		t->appends[sim.appends[i]->outcome]++;
	/* Coroutines stopped mid-action (after a violation) leak their state. */
	sim_sched_end();
	for (int i = 0; i < nactors; i++)
		sim_actor_free(actors[i]);
	cx_obj_close(sim.store);
	for (size_t i = 0; i < sim.nappends; i++)
		free(sim.appends[i]);
	free(sim.appends);
	return first_violation[0] == '\0';
}


CX_TEST(sim_seeds_keep_every_invariant)
{
	uint64_t	one = env_u64("CX_SIM_SEED", 0);
	uint64_t	first = one ? one : env_u64("CX_SIM_FROM", 1);
	uint64_t	last = one ? one : env_u64("CX_SIM_SEEDS", SIM_DEFAULT_SEEDS);
	sim_totals	t = {0};
	int			failures = 0;

	for (uint64_t seed = first; seed <= last && failures < 20; seed++)
	{
		if (!run_seed(seed, &t))
		{
			fprintf(stderr, "%s\n", first_violation);
			cx_test_fail(__FILE__, __LINE__, first_violation);
			failures++;
		}
		if (seed % 10000 == 0)	/* long runs say how far they got */
			fprintf(stderr, "sim: through seed %" PRIu64 ", %d failed\n",
					seed, failures);
	}
	fprintf(stderr, "sim: seeds %" PRIu64 "..%" PRIu64 ": %" PRIu64 " steps, %" PRIu64
			" faults injected, appends %" PRIu64 " acknowledged, %" PRIu64
			" failed, %" PRIu64 " unknown\n", first, last, t.steps, t.faults,
			t.appends[SIM_ACKED], t.appends[SIM_FAILED], t.appends[SIM_UNKNOWN]);
}
