/*
 * test_pool.c — the task pool (ctxstore/util.h): as many tasks run at once
 * as it has threads and never more, each comes back exactly once through a
 * bounded wait, destroying runs what is still queued, its threads take no
 * signals, and a pool that cannot have its threads says so and leaves none.
 */
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "cx_test.h"
#include "ctxstore/util.h"
#include "util/cx_failpoint.h"

/* How long a task waits for its peers before it gives up (a bound, not a
 * timing the test relies on). */
#define PEER_WAIT_MS 10000

typedef struct shared_state
{
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int			running;
	int			max_running;
	int			ran;
	int			rendezvous;		/* tasks wait until this many ran at once */
	bool		gathered;		/* they did */
	bool		released;		/* blocked tasks may finish */
	bool		term_blocked;	/* SIGTERM was blocked in every task */
} shared_state;

typedef struct probe
{
	cx_pool_task task;
	shared_state *s;
	bool		met;			/* saw the rendezvous */
	int			returned;		/* times cx_pool_wait handed it back */
} probe;

static void
state_init(shared_state *s, int rendezvous)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->rendezvous = rendezvous;
	s->term_blocked = true;
}

static struct timespec
in_ms(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L)
	{
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* Counts itself running, waits (bounded) until rendezvous tasks have run at
 * once and until released, then counts itself done. */
static void
probe_run(void *arg)
{
	probe	   *pr = arg;
	shared_state *s = pr->s;
	struct timespec until = in_ms(PEER_WAIT_MS);
	sigset_t	mask;
	int			rc = 0;

	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	pthread_mutex_lock(&s->lock);
	s->term_blocked &= sigismember(&mask, SIGTERM) == 1;
	if (++s->running > s->max_running)
		s->max_running = s->running;
	s->gathered |= s->running >= s->rendezvous;
	pthread_cond_broadcast(&s->cond);
	while ((!s->gathered || !s->released) && rc == 0)
		rc = pthread_cond_timedwait(&s->cond, &s->lock, &until);
	pr->met = s->gathered;
	s->running--;
	s->ran++;
	pthread_mutex_unlock(&s->lock);
}

static void
probes_init(probe *pr, int n, shared_state *s)
{
	memset(pr, 0, sizeof(*pr) * n);
	for (int i = 0; i < n; i++)
	{
		pr[i].task.fn = probe_run;
		pr[i].task.arg = &pr[i];
		pr[i].s = s;
	}
}

static void
release(shared_state *s)
{
	pthread_mutex_lock(&s->lock);
	s->released = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Hands back every outstanding task (bounded: each wait is). */
static int
collect(cx_pool *p)
{
	int			n = 0;
	cx_pool_task *t;

	while ((t = cx_pool_wait(p, PEER_WAIT_MS)) != NULL)
	{
		((probe *) t->arg)->returned++;
		n++;
	}
	return n;
}

CX_TEST(pool_runs_as_many_tasks_at_once_as_threads)
{
	shared_state s;
	probe		pr[7];
	cx_pool    *p;
	cx_err		err;

	state_init(&s, 3);
	probes_init(pr, 7, &s);
	REQUIRE_OK(cx_pool_create(3, &p, &err), &err);
	CHECK(cx_pool_threads(p) == 3);
	release(&s);
	for (int i = 0; i < 7; i++)
		cx_pool_submit(p, &pr[i].task);
	CHECK(collect(p) == 7);
	CHECK(cx_pool_outstanding(p) == 0);
	/* The first three met: three ran at once; never a fourth. */
	CHECK(pr[0].met && pr[1].met && pr[2].met);
	CHECK(s.max_running == 3);
	CHECK(s.ran == 7);
	CHECK(s.term_blocked);
	for (int i = 0; i < 7; i++)
		CHECK(pr[i].returned == 1);
	cx_pool_destroy(p);
}

CX_TEST(pool_wait_is_bounded)
{
	shared_state s;
	probe		pr;
	cx_pool    *p;
	cx_err		err;

	state_init(&s, 1);
	probes_init(&pr, 1, &s);
	REQUIRE_OK(cx_pool_create(1, &p, &err), &err);
	/* Nothing outstanding: no wait at all. */
	CHECK(cx_pool_wait(p, PEER_WAIT_MS) == NULL);
	cx_pool_submit(p, &pr.task);
	/* The task waits to be released: the wait runs out empty-handed. */
	CHECK(cx_pool_wait(p, 50) == NULL);
	CHECK(cx_pool_outstanding(p) == 1);
	release(&s);
	CHECK(cx_pool_wait(p, PEER_WAIT_MS) == &pr.task);
	CHECK(cx_pool_outstanding(p) == 0);
	cx_pool_destroy(p);
}

CX_TEST(pool_destroy_runs_what_is_queued)
{
	shared_state s;
	probe		pr[4];
	cx_pool    *p;
	cx_err		err;

	state_init(&s, 1);
	probes_init(pr, 4, &s);
	REQUIRE_OK(cx_pool_create(1, &p, &err), &err);
	for (int i = 0; i < 4; i++)
		cx_pool_submit(p, &pr[i].task);
	release(&s);
	cx_pool_destroy(p);
	CHECK(s.ran == 4);
	CHECK(s.max_running == 1);
}

CX_TEST(pool_refuses_bad_sizes_and_refused_threads)
{
	cx_pool    *p = (cx_pool *) &p;
	cx_err		err;

	CHECK_CODE(cx_pool_create(0, &p, &err), CX_ERR_INVALID);
	CHECK(p == NULL);
	CHECK_CODE(cx_pool_create(CX_POOL_MAX_THREADS + 1, &p, &err), CX_ERR_INVALID);
	/* The second thread is refused: the first is stopped, no pool. */
	REQUIRE_OK(cx_failpoint_set("pool.thread_create=error@2", &err), &err);
	CHECK_CODE(cx_pool_create(3, &p, &err), CX_ERR_IO);
	CHECK(p == NULL);
	CHECK(strstr(err.msg, "thread 2 of 3") != NULL);
	CHECK(cx_failpoint_hits("pool.thread_create") == 2);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	REQUIRE_OK(cx_pool_create(3, &p, &err), &err);
	cx_pool_destroy(p);
}
