/*
 * sim.h — the deterministic simulation of the engine (docs/RELIABILITY.md,
 * "Deterministic simulation").
 *
 * One thread runs several actors (shard writers of distinct clusters,
 * merges, garbage collection, readers), each a coroutine that yields to a
 * seeded scheduler on every object-store call, on an in-memory store that
 * injects faults, under a simulated clock.  The seed fixes everything: the
 * order of the calls, every fault, every clock reading and every random
 * name, so a failing seed replays exactly.  An oracle records what each
 * append was told (acknowledged, failed, unknown) and the storage
 * invariants are checked from the objects as the run goes and at its end.
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "objstore/cx_objstore.h"
#include "ctxstore/lifecycle.h"

/* ---- the seeded PRNG (sim_sched.c) ---- */

uint64_t	sim_rand(void);
/* Uniform in [0, n); n > 0. */
uint32_t	sim_below(uint32_t n);
/* True with probability per_mille / 1000. */
bool		sim_chance(uint32_t per_mille);

/* ---- the simulated clock (sim_sched.c) ---- */

int64_t		sim_now_us(void);	/* microseconds since the run began */
/* The wall clock the engine sees at sim_now_us() == 0 (Unix us). */
#define SIM_EPOCH_US INT64_C(1800000000000000)

/* ---- the scheduler (sim_sched.c) ---- */

typedef struct sim_actor sim_actor;
typedef void (*sim_action_fn) (sim_actor *a);

struct sim_actor
{
	char		name[32];
	sim_action_fn action;		/* one bounded action per call */
	void	   *state;
	cx_objstore *store;			/* its handle on sim.store (a view) */
	/* Scheduler-owned. */
	void	   *ctx;
	void	   *stack;
	bool		idle;			/* between actions */
	bool		done;
};

/* Hands control back to the scheduler (a no-op outside an actor: the
 * checks and the final phase run in the scheduler's own context). */
void		sim_yield(void);

/* Seeds the PRNG, starts the clock at 0 and puts the engine on it (and on
 * the PRNG for its random names); sim_sched_end() puts it back. */
void		sim_sched_begin(uint64_t seed);
void		sim_sched_end(void);
/* Moves the clock on (the scheduler between steps, a quiesced jump). */
void		sim_advance(int64_t us);
void		sim_actor_add(sim_actor *a);
/* Runs one slice of one actor drawn by the PRNG, up to its next store call
 * or the end of its action; false when no actor may run. */
bool		sim_step(void);
/* Quiescing: actors stop at the end of their action until it is off. */
void		sim_quiesce(bool on);
bool		sim_all_idle(void);
/* Stopping: actors end after their current action. */
void		sim_stop(void);
/* Who runs now ("main": the checks and the final phase). */
const char *sim_current_name(void);
/* The actor that has not finished its action yet, or NULL. */
const sim_actor *sim_busy_actor(void);

/* ---- the in-memory store (sim_store.c) ---- */

typedef struct sim_faults
{
	/* per mille of calls, per kind */
	uint32_t	error;			/* a 5xx or throttling answer, nothing done */
	uint32_t	lost_ack;		/* done, but the caller hears a failure */
	uint32_t	deferred;		/* not done yet; lands at a later step */
	uint32_t	delay;			/* other actors run several steps first */
} sim_faults;

cx_objstore *sim_store_open(void);
/* Another handle on s's objects, with caches and stats of its own: every
 * actor has one, as every process has its own, since an actor yields in
 * the middle of a call and a handle's caches are one caller's at a time.
 * Close it before s. */
cx_objstore *sim_store_view(cx_objstore *s);
/* Faults off (the checks, the final phase) or on with f. */
void		sim_store_faults(cx_objstore *s, const sim_faults *f);
/* At a scheduler step: lands a deferred put now and then (all: every one). */
void		sim_store_land_deferred(cx_objstore *s, bool all);

/* Direct look at the objects, no fault, no yield (the checks). */
bool		sim_store_has(cx_objstore *s, const char *key);
typedef void (*sim_key_fn) (void *arg, const char *key);
void		sim_store_each(cx_objstore *s, sim_key_fn fn, void *arg);
uint64_t	sim_store_faults_injected(cx_objstore *s);
/* CX_SIM_TRACE=1 prints every call and its fault to stderr. */
void		sim_store_trace(cx_objstore *s, bool on);

/* ---- the world the actors share, and the oracle's record ---- */

#define SIM_CLUSTERS_MAX 3
#define SIM_KEYS 24				/* "k00".."k23", shared by every cluster */
#define SIM_OPS_MAX 4			/* rows per append, distinct keys */
#define SIM_RETAIN_VERSIONS 3	/* GC's retain_versions */
#define SIM_GRACE_US INT64_C(5000000)	/* GC's grace and retain_interval */
#define SIM_VERSIONS_MAX 4096	/* base versions whose content is kept */

typedef struct sim_op
{
	int			key;
	bool		del;
	bool		maybe;			/* insert-if-absent: dropped if the key was
								 * live, which the oracle cannot tell */
	int64_t		v;				/* unique over the run (puts) */
} sim_op;

typedef enum sim_outcome
{
	SIM_ACKED,					/* CX_OK: must be durable */
	SIM_FAILED,					/* refused before writing: no trace */
	SIM_UNKNOWN					/* any other error: all or nothing */
} sim_outcome;

typedef struct sim_append
{
	int			cluster;
	bool		truncate;		/* a TRUNCATE marker alone (nops 0) */
	int			nops;
	sim_op		ops[SIM_OPS_MAX];
	sim_outcome outcome;
	int64_t		ts;				/* commit time (acknowledged ones) */
} sim_append;

typedef struct sim_world
{
	cx_objstore *store;
	sim_faults	faults;			/* the run's, while faults are on */
	int			nclusters;
	uint32_t	revalidate_after_ms;
	uint32_t	inline_generation_max;	/* the writers' (0: seals write
										 * their generation as an object) */
	uint32_t	view_lag_generations;	/* the writers' */
	uint32_t	view_lag_keys;	/* the writers' */
	int64_t		skew_us[SIM_CLUSTERS_MAX];	/* each cluster's clock error */
	bool		trace;			/* CX_SIM_TRACE: print calls and appends */
	uint64_t	step;
	int64_t		next_value;
	uint64_t	version_rows[SIM_VERSIONS_MAX];	/* a hash of what each base
												 * version held when first
												 * read (0: not read yet) */
	sim_append **appends;		/* per cluster in the order made; each
								 * record stays where it is, since actors
								 * hold theirs across switches */
	size_t		nappends;
	size_t		cap;
} sim_world;

extern sim_world sim;

void		sim_key_name(int key, char out[8]);
/* The shard id of cluster c ("c0", "c1", ...). */
void		sim_shard_name(int c, char out[8]);
sim_append *sim_record_append(void);

/* ---- actors (sim_actors.c) ---- */

sim_actor  *sim_writer_new(int cluster);
sim_actor  *sim_merger_new(void);
sim_actor  *sim_gc_new(void);
sim_actor  *sim_compactor_new(int n);
sim_actor  *sim_indexer_new(void);
sim_actor  *sim_reader_new(void);
/* Ends cluster c's writer as a clean close or a crash (PRNG's choice). */
void		sim_writer_finish(sim_actor *a);
void		sim_actor_free(sim_actor *a);
/* Whether an error of the engine is one an injected fault cannot explain
 * (a missing or corrupt object). */
bool		sim_damage(cx_code rc);
/* Compaction options drawn for one run of the job by holder. */
void		sim_compact_options(struct cx_compact_options *o,
								const char *holder, bool force);
/* The GC options of the run. */
void		sim_gc_options(struct cx_gc_options *o);

/* ---- checks (sim_check.c) ---- */

/* Gap-free versions, from the keys alone (every step). */
void		sim_check_versions(void);
/* Referenced objects present, epochs, no key twice (every few steps and at
 * the end; faults must be off). */
void		sim_check_objects(void);
/* A base version's rows (a scan of version v > 0) are the same every time
 * it is read: a version is immutable, whatever merges, compactions and GC
 * did since. */
struct mw_rows;
void		sim_check_version_rows(uint64_t v, const struct mw_rows *rows);
/* The newest snapshot against the oracle (the end). */
void		sim_check_oracle(const char *when);

/* ---- the run (test_sim.c) ---- */

/* Reports a violation (the first one of a seed is kept and printed as
 * "sim: seed S failed at step K: <what>"). */
void		sim_violation(const char *fmt,...) __attribute__((format(printf, 1, 2)));

#endif							/* SIM_H */
