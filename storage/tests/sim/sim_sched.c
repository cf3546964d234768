/*
 * sim_sched.c — the simulation's seeded PRNG, its clock and its scheduler:
 * every actor is a coroutine (ucontext) that runs until its next
 * object-store call, where sim_yield() hands control back; the scheduler
 * then draws the next actor to run.  One thread and one PRNG decide the
 * whole order.
 */
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "util/cx_clock.h"
#include "sim.h"

#define SIM_ACTORS_MAX 16
#define SIM_STACK_BYTES (512 * 1024)

static uint64_t prng;
static int64_t clock_us;
static ucontext_t sched_ctx;
static sim_actor *actors[SIM_ACTORS_MAX];
static int nactors;
static sim_actor *current;
static bool quiescing;
static bool stopping;

/* splitmix64: small, fast, and every seed gives a good stream. */
uint64_t
sim_rand(void)
{
	uint64_t	z = (prng += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

uint32_t
sim_below(uint32_t n)
{
	return (uint32_t) (sim_rand() % n);
}

bool
sim_chance(uint32_t per_mille)
{
	return sim_below(1000) < per_mille;
}

int64_t
sim_now_us(void)
{
	return clock_us;
}

void
sim_advance(int64_t us)
{
	clock_us += us;
}

/* ---- the engine's view: clock hooks and the random source ---- */

static int64_t
hook_now_us(void)
{
	return SIM_EPOCH_US + clock_us;
}

static int64_t
hook_mono_us(void)
{
	return clock_us;
}

/* A sleeping actor lets the others run while its time passes. */
static void
hook_sleep_us(int64_t us)
{
	if (us > 0)
		clock_us += us;
	sim_yield();
}

static const cx_clock_hooks sim_clock = {hook_now_us, hook_mono_us, hook_sleep_us};

static void
hook_random(void *buf, size_t n)
{
	uint8_t    *p = buf;

	while (n > 0)
	{
		uint64_t	r = sim_rand();
		size_t		k = n < sizeof(r) ? n : sizeof(r);

		memcpy(p, &r, k);
		p += k;
		n -= k;
	}
}

void
sim_sched_begin(uint64_t seed)
{
	prng = seed;
	clock_us = 0;
	nactors = 0;
	current = NULL;
	quiescing = stopping = false;
	cx_clock_set_hooks(&sim_clock);
	cx_random_set_source(hook_random);
}

void
sim_sched_end(void)
{
	for (int i = 0; i < nactors; i++)
	{
		free(actors[i]->stack);
		free(actors[i]->ctx);
	}
	nactors = 0;
	cx_clock_set_hooks(NULL);
	cx_random_set_source(NULL);
}

/* ---- coroutines ---- */

void
sim_yield(void)
{
	sim_actor  *a = current;

	if (a != NULL)
		swapcontext(a->ctx, &sched_ctx);
}

/* An actor's life: bounded actions until the run stops; between actions it
 * is idle, and it stays so while the scheduler quiesces. */
static void
actor_main(void)
{
	sim_actor  *a = current;

	while (!stopping)
	{
		a->idle = false;
		a->action(a);
		a->idle = true;
		do
			sim_yield();
		while (quiescing && !stopping);
	}
	a->done = true;
	swapcontext(a->ctx, &sched_ctx);
	abort();					/* a finished actor is never resumed */
}

void
sim_actor_add(sim_actor *a)
{
	ucontext_t *ctx = calloc(1, sizeof(ucontext_t));

	if (ctx == NULL || nactors == SIM_ACTORS_MAX)
		abort();
	a->ctx = ctx;
	a->stack = malloc(SIM_STACK_BYTES);
	if (a->stack == NULL || getcontext(ctx) != 0)
		abort();
	ctx->uc_stack.ss_sp = a->stack;
	ctx->uc_stack.ss_size = SIM_STACK_BYTES;
	ctx->uc_link = NULL;
	makecontext(ctx, actor_main, 0);
	a->idle = true;
	a->done = false;
	actors[nactors++] = a;
}

static bool
runnable(const sim_actor *a)
{
	return !a->done && !(quiescing && a->idle);
}

bool
sim_step(void)
{
	sim_actor  *ready[SIM_ACTORS_MAX];
	int			n = 0;

	for (int i = 0; i < nactors; i++)
		if (runnable(actors[i]))
			ready[n++] = actors[i];
	if (n == 0)
		return false;
	current = ready[sim_below((uint32_t) n)];
	swapcontext(&sched_ctx, current->ctx);
	current = NULL;
	return true;
}

void
sim_quiesce(bool on)
{
	quiescing = on;
}

bool
sim_all_idle(void)
{
	for (int i = 0; i < nactors; i++)
		if (!actors[i]->done && !actors[i]->idle)
			return false;
	return true;
}

void
sim_stop(void)
{
	stopping = true;
}

const char *
sim_current_name(void)
{
	return current != NULL ? current->name : "main";
}

const sim_actor *
sim_busy_actor(void)
{
	for (int i = 0; i < nactors; i++)
		if (!actors[i]->done)
			return actors[i];
	return NULL;
}
