/*
 * cx_pool.c — a small pool of threads that run the caller's tasks
 * (ctxstore/util.h, "Task pool").
 *
 * One mutex guards two FIFO lists: tasks waiting for a thread and tasks
 * finished but not yet handed back.  Threads sleep on "work", the caller on
 * "done" (a monotonic-clock condition, so a wall-clock step never stretches
 * a bounded wait).  Tasks are the caller's structs: submitting allocates
 * nothing and cannot fail.
 *
 * The threads block every signal: the host process's signal handlers (the
 * PostgreSQL worker's latch and shutdown handlers) expect to run on its main
 * thread, which is where they are then delivered.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "ctxstore/util.h"
#include "util/cx_failpoint.h"

typedef struct task_list
{
	cx_pool_task *head;
	cx_pool_task *tail;
} task_list;

struct cx_pool
{
	pthread_mutex_t lock;
	pthread_cond_t work;		/* signalled: a task queued, or stop */
	pthread_cond_t done;		/* signalled: a task finished */
	task_list	queued;
	task_list	finished;
	int			outstanding;	/* submitted, not handed back by wait */
	bool		stop;
	int			nthreads;
	pthread_t	threads[CX_POOL_MAX_THREADS];
};

static void
list_push(task_list *l, cx_pool_task *t)
{
	t->next = NULL;
	if (l->tail != NULL)
		l->tail->next = t;
	else
		l->head = t;
	l->tail = t;
}

static cx_pool_task *
list_pop(task_list *l)
{
	cx_pool_task *t = l->head;

	if (t != NULL && (l->head = t->next) == NULL)
		l->tail = NULL;
	return t;
}

static void *
thread_main(void *arg)
{
	cx_pool    *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;)
	{
		cx_pool_task *t;

		while (!p->stop && p->queued.head == NULL)
			pthread_cond_wait(&p->work, &p->lock);
		if ((t = list_pop(&p->queued)) == NULL)
			break;				/* stopping, nothing left to run */
		pthread_mutex_unlock(&p->lock);
		t->fn(t->arg);
		pthread_mutex_lock(&p->lock);
		list_push(&p->finished, t);
		pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Ends and joins the threads started so far (queued tasks run first). */
static void
stop_threads(cx_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	p->nthreads = 0;
}

static cx_code
start_threads(cx_pool *p, int nthreads, cx_err *err)
{
	sigset_t	all;
	sigset_t	old;
	int			rc = 0;
	int			started;

	/* A new thread inherits its creator's mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (p->nthreads < nthreads && rc == 0)
	{
		rc = CX_FAILPOINT_ERRNO("pool.thread_create");
		if (rc == 0)
			rc = pthread_create(&p->threads[p->nthreads], NULL, thread_main, p);
		if (rc == 0)
			p->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		return CX_OK;
	started = p->nthreads;
	stop_threads(p);
	return cx_err_set(err, rc == EAGAIN ? CX_ERR_LIMIT : CX_ERR_IO,
					  "could not start the task pool's thread %d of %d: error %d",
					  started + 1, nthreads, rc);
}

cx_code
cx_pool_create(int nthreads, cx_pool **out, cx_err *err)
{
	pthread_condattr_t attr;
	cx_pool    *p;

	*out = NULL;
	if (nthreads < 1 || nthreads > CX_POOL_MAX_THREADS)
		return cx_err_set(err, CX_ERR_INVALID, "a task pool has 1 to %d threads, not %d",
						  CX_POOL_MAX_THREADS, nthreads);
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory for a task pool");
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&p->done, &attr);
	pthread_condattr_destroy(&attr);
	if (start_threads(p, nthreads, err) != CX_OK)
	{
		cx_pool_destroy(p);
		return err->code;
	}
	*out = p;
	return CX_OK;
}

int
cx_pool_threads(const cx_pool *p)
{
	return p->nthreads;
}

void
cx_pool_submit(cx_pool *p, cx_pool_task *t)
{
	pthread_mutex_lock(&p->lock);
	list_push(&p->queued, t);
	p->outstanding++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

int
cx_pool_outstanding(cx_pool *p)
{
	int			n;

	pthread_mutex_lock(&p->lock);
	n = p->outstanding;
	pthread_mutex_unlock(&p->lock);
	return n;
}

static struct timespec
deadline_after_ms(long timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L)
	{
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

cx_pool_task *
cx_pool_wait(cx_pool *p, long timeout_ms)
{
	struct timespec deadline = deadline_after_ms(timeout_ms > 0 ? timeout_ms : 0);
	cx_pool_task *t;
	int			rc = 0;

	pthread_mutex_lock(&p->lock);
	while (p->finished.head == NULL && p->outstanding > 0 && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&p->done, &p->lock, &deadline);
	if ((t = list_pop(&p->finished)) != NULL)
		p->outstanding--;
	pthread_mutex_unlock(&p->lock);
	return t;
}

void
cx_pool_destroy(cx_pool *p)
{
	if (p == NULL)
		return;
	stop_threads(p);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
