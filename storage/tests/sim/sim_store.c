/*
 * sim_store.c — an in-memory object store (the cx_objstore_ops of a
 * backend) whose every call yields to the simulation's scheduler first and
 * may then misbehave as a cloud store does: a 5xx or throttling answer, an
 * acknowledgement lost after the write landed (heard as an I/O error, or as
 * "exists" from a transport retry that met its own object), a slow call
 * (other actors run meanwhile), or a put that lands only at a later step,
 * after its caller gave up.  Put-if-absent is exact; mtimes come from the
 * simulated clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

typedef struct sim_obj
{
	char	   *key;
	uint8_t    *data;
	size_t		len;
	int64_t		mtime_us;
} sim_obj;

typedef struct sim_put
{
	char	   *key;
	uint8_t    *data;
	size_t		len;
	cx_put_mode mode;
} sim_put;

typedef struct sim_store
{
	cx_objstore base;
	sim_obj    *objs;			/* sorted by key */
	size_t		nobjs;
	size_t		cap;
	sim_put    *deferred;
	size_t		ndeferred;
	bool		faulty;
	bool		trace;
	sim_faults	faults;
	uint64_t	injected;
} sim_store;

typedef struct sim_upload
{
	cx_upload	base;
	cx_buf		data;
} sim_upload;

/* Another handle on a store: its own caches and stats, the same objects. */
typedef struct sim_view
{
	cx_objstore base;
	sim_store  *st;
} sim_view;

static const cx_objstore_ops sim_view_ops;

static sim_store *
store_of(cx_objstore *s)
{
	return s->ops == &sim_view_ops ? ((sim_view *) s)->st : (sim_store *) s;
}

/* Index of key, or where it would go (*found false). */
static size_t
find(const sim_store *st, const char *key, bool *found)
{
	size_t		lo = 0,
				hi = st->nobjs;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;
		int			c = strcmp(st->objs[mid].key, key);

		if (c == 0)
		{
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static void *
xmemdup(const void *p, size_t n)
{
	void	   *q = malloc(n > 0 ? n : 1);

	if (q == NULL)
		abort();
	if (n > 0)
		memcpy(q, p, n);
	return q;
}

/* The put itself: false when put-if-absent met an object. */
static bool
apply_put(sim_store *st, const char *key, const void *data, size_t len,
		  cx_put_mode mode)
{
	bool		found;
	size_t		i = find(st, key, &found);
	sim_obj    *o;

	if (found && mode == CX_PUT_IF_ABSENT)
		return false;
	if (!found)
	{
		if (st->nobjs == st->cap)
		{
			st->cap = st->cap ? st->cap * 2 : 256;
			st->objs = realloc(st->objs, st->cap * sizeof(sim_obj));
			if (st->objs == NULL)
				abort();
		}
		memmove(&st->objs[i + 1], &st->objs[i],
				(st->nobjs - i) * sizeof(sim_obj));
		st->nobjs++;
		st->objs[i].key = strdup(key);
	}
	else
		free(st->objs[i].data);
	o = &st->objs[i];
	o->data = xmemdup(data, len);
	o->len = len;
	o->mtime_us = SIM_EPOCH_US + sim_now_us();
	return true;
}

static void
remove_at(sim_store *st, size_t i)
{
	free(st->objs[i].key);
	free(st->objs[i].data);
	memmove(&st->objs[i], &st->objs[i + 1],
			(st->nobjs - i - 1) * sizeof(sim_obj));
	st->nobjs--;
}

/* ---- faults ---- */

typedef enum sim_fault
{
	FAULT_NONE,
	FAULT_ERROR,
	FAULT_LOST_ACK,
	FAULT_DEFERRED
} sim_fault;

/*
 * Yields, then draws this call's fault.  A delay yields a few more times
 * (the call is slow: others run before it takes effect) and then draws
 * again.  Calls that cannot land later (reads) never get FAULT_DEFERRED.
 */
static sim_fault draw_fault(sim_store *st, bool is_write);

static sim_fault
begin_call(sim_store *st, const char *op, const char *key, bool is_write)
{
	static const char *const names[] = {"", " ERROR", " LOST-ACK", " DEFERRED"};
	sim_fault	f;

	sim_yield();
	f = st->faulty ? draw_fault(st, is_write) : FAULT_NONE;
	if (st->trace)
		fprintf(stderr, "sim: t=%lld %s: %s %s%s\n", (long long) sim_now_us(),
				sim_current_name(), op, key, names[f]);
	return f;
}

static sim_fault
draw_fault(sim_store *st, bool is_write)
{
	const sim_faults *f = &st->faults;
	uint32_t	r;

	r = sim_below(1000);
	if (r < f->delay)
	{
		int			steps = 1 + (int) sim_below(8);

		st->injected++;
		while (steps-- > 0)
			sim_yield();
		r = sim_below(1000);
	}
	if (r < f->error)
		return FAULT_ERROR;
	r -= f->error;
	if (!is_write)
		return FAULT_NONE;
	if (r < f->lost_ack)
		return FAULT_LOST_ACK;
	r -= f->lost_ack;
	if (r < f->deferred)
		return FAULT_DEFERRED;
	return FAULT_NONE;
}

static cx_code
injected(sim_store *st, const char *what, const char *key, cx_err *err)
{
	static const char *const answers[] = {
		"HTTP 500 Internal Error", "HTTP 503 Slow Down",
		"HTTP 429 Too Many Requests", "timed out"
	};

	st->injected++;
	return cx_err_set(err, CX_ERR_IO, "%s %s: %s", what, key,
					  answers[sim_below(4)]);
}

static cx_code
defer_put(sim_store *st, const char *key, const void *data, size_t len,
		  cx_put_mode mode, cx_err *err)
{
	sim_put    *p;

	st->deferred = realloc(st->deferred, (st->ndeferred + 1) * sizeof(sim_put));
	if (st->deferred == NULL)
		abort();
	p = &st->deferred[st->ndeferred++];
	p->key = strdup(key);
	p->data = xmemdup(data, len);
	p->len = len;
	p->mode = mode;
	st->injected++;
	return cx_err_set(err, CX_ERR_IO, "put %s: timed out", key);
}

static cx_code
faulty_put(sim_store *st, const char *key, const void *data, size_t len,
		   cx_put_mode mode, cx_err *err)
{
	switch (begin_call(st, mode == CX_PUT_IF_ABSENT ? "put-if-absent" : "put",
					   key, true))
	{
		case FAULT_ERROR:
			return injected(st, "put", key, err);
		case FAULT_DEFERRED:
			return defer_put(st, key, data, len, mode, err);
		case FAULT_LOST_ACK:
			if (!apply_put(st, key, data, len, mode))
				return cx_err_set(err, CX_ERR_EXISTS, "put %s: exists", key);
			st->injected++;
			/* A transport retry after a lost answer meets its own object. */
			if (mode == CX_PUT_IF_ABSENT && sim_chance(300))
				return cx_err_set(err, CX_ERR_EXISTS, "put %s: exists", key);
			return cx_err_set(err, CX_ERR_IO, "put %s: timed out", key);
		case FAULT_NONE:
			break;
	}
	if (!apply_put(st, key, data, len, mode))
		return cx_err_set(err, CX_ERR_EXISTS, "put %s: exists", key);
	return CX_OK;
}

/* ---- the ops ---- */

static cx_code
sim_put_op(cx_objstore *s, const char *key, const void *data, size_t len,
		   cx_put_mode mode, cx_err *err)
{
	return faulty_put(store_of(s), key, data, len, mode, err);
}

static cx_code
sim_get(cx_objstore *s, const char *key, uint64_t offset, size_t len,
		cx_buf *out, cx_err *err)
{
	sim_store  *st = store_of(s);
	bool		found;
	size_t		i;
	const sim_obj *o;
	size_t		n;

	if (begin_call(st, "get", key, false) == FAULT_ERROR)
		return injected(st, "get", key, err);
	i = find(st, key, &found);
	if (!found)
		return cx_err_set(err, CX_ERR_NOT_FOUND, "get %s: not found", key);
	o = &st->objs[i];
	if (offset >= o->len)
		return CX_OK;
	n = o->len - offset;
	if (len < n)
		n = len;
	cx_buf_put(out, o->data + offset, n);
	return cx_buf_ok(out) ? CX_OK :
		cx_err_set(err, CX_ERR_NOMEM, "get %s: out of memory", key);
}

static cx_code
sim_head(cx_objstore *s, const char *key, uint64_t *size, int64_t *mtime_us,
		 cx_err *err)
{
	sim_store  *st = store_of(s);
	bool		found;
	size_t		i;

	if (begin_call(st, "head", key, false) == FAULT_ERROR)
		return injected(st, "head", key, err);
	i = find(st, key, &found);
	if (!found)
		return cx_err_set(err, CX_ERR_NOT_FOUND, "head %s: not found", key);
	if (size != NULL)
		*size = st->objs[i].len;
	if (mtime_us != NULL)
		*mtime_us = st->objs[i].mtime_us;
	return CX_OK;
}

/*
 * A listing is taken in pages, yielding before each, as S3's and Azure's
 * are: objects may come and go between pages (and while the caller's
 * callback runs).  A fault may end it after a page, as a failed page
 * request does.
 */
#define LIST_PAGE 8

/* Up to LIST_PAGE entries under prefix after *after ("" = from the start),
 * their keys copied; returns how many. */
static int
list_page(const sim_store *st, const char *prefix, const char *after,
		  cx_list_entry page[LIST_PAGE])
{
	size_t		plen = strlen(prefix);
	bool		found;
	size_t		i = find(st, after[0] != '\0' ? after : prefix, &found);
	int			n = 0;

	if (after[0] != '\0' && found)
		i++;
	for (; i < st->nobjs && n < LIST_PAGE; i++, n++)
	{
		if (strncmp(st->objs[i].key, prefix, plen) != 0)
			break;
		page[n].key = strdup(st->objs[i].key);
		page[n].size = st->objs[i].len;
		page[n].mtime_us = st->objs[i].mtime_us;
	}
	return n;
}

static cx_code
sim_list(cx_objstore *s, const char *prefix, cx_list_entry_fn fn, void *arg,
		 cx_err *err)
{
	sim_store  *st = store_of(s);
	char		after[CX_KEY_MAX + 1] = "";
	bool		wanted = true;
	int			n = LIST_PAGE;

	while (wanted && n == LIST_PAGE)
	{
		cx_list_entry page[LIST_PAGE];

		if (begin_call(st, "list", prefix, false) == FAULT_ERROR)
			return injected(st, "list", prefix, err);
		n = list_page(st, prefix, after, page);
		for (int k = 0; k < n; k++)
		{
			if (wanted)
				wanted = fn(arg, &page[k]);
			snprintf(after, sizeof(after), "%s", page[k].key);
			free((char *) page[k].key);
		}
	}
	return CX_OK;
}

static cx_code
sim_del(cx_objstore *s, const char *key, cx_err *err)
{
	sim_store  *st = store_of(s);
	sim_fault	f = begin_call(st, "delete", key, true);
	bool		found;
	size_t		i;

	if (f == FAULT_ERROR)
		return injected(st, "delete", key, err);
	i = find(st, key, &found);
	if (found)
		remove_at(st, i);
	/* A delete that would land late is done at once: only its caller's
	 * answer differs, as for a lost acknowledgement. */
	if (f == FAULT_LOST_ACK || f == FAULT_DEFERRED)
		return injected(st, "delete", key, err);
	return CX_OK;
}

static cx_code
sim_upload_begin(cx_objstore *s, const char *key, cx_put_mode mode,
				 cx_upload **up, cx_err *err)
{
	sim_store  *st = store_of(s);
	sim_upload *u;

	if (begin_call(st, "upload", key, false) == FAULT_ERROR)
		return injected(st, "upload", key, err);
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		abort();
	u->base.store = s;
	snprintf(u->base.key, sizeof(u->base.key), "%s", key);
	u->base.mode = mode;
	cx_buf_init(&u->data);
	*up = &u->base;
	return CX_OK;
}

static cx_code
sim_upload_write(cx_upload *up, const void *data, size_t len, cx_err *err)
{
	sim_upload *u = (sim_upload *) up;

	if (begin_call(store_of(up->store), "upload-write", up->key, false) ==
		FAULT_ERROR)
		return injected(store_of(up->store), "upload", up->key, err);
	cx_buf_put(&u->data, data, len);
	if (!cx_buf_ok(&u->data))
		return cx_err_set(err, CX_ERR_NOMEM, "upload %s: out of memory",
						  up->key);
	up->written += len;
	return CX_OK;
}

static void
sim_upload_abort(cx_upload *up)
{
	sim_upload *u = (sim_upload *) up;

	cx_buf_free(&u->data);
	free(u);
}

static cx_code
sim_upload_finish(cx_upload *up, cx_err *err)
{
	sim_upload *u = (sim_upload *) up;
	cx_code		rc = faulty_put(store_of(up->store), up->key, u->data.data,
								u->data.len, up->mode, err);

	sim_upload_abort(up);
	return rc;
}

static void
free_deferred(sim_put *p)
{
	free(p->key);
	free(p->data);
}

static void
sim_close(cx_objstore *s)
{
	sim_store  *st = store_of(s);

	while (st->nobjs > 0)
		remove_at(st, st->nobjs - 1);
	free(st->objs);
	for (size_t i = 0; i < st->ndeferred; i++)
		free_deferred(&st->deferred[i]);
	free(st->deferred);
	free(st->base.uri);
	free(st);
}

static const cx_objstore_ops sim_ops = {
	.put = sim_put_op,
	.get = sim_get,
	.head = sim_head,
	.list = sim_list,
	.del = sim_del,
	.upload_begin = sim_upload_begin,
	.upload_write = sim_upload_write,
	.upload_finish = sim_upload_finish,
	.upload_abort = sim_upload_abort,
	.close = sim_close,
};

static void
sim_view_close(cx_objstore *s)
{
	free(s->uri);
	free(s);
}

static const cx_objstore_ops sim_view_ops = {
	.put = sim_put_op,
	.get = sim_get,
	.head = sim_head,
	.list = sim_list,
	.del = sim_del,
	.upload_begin = sim_upload_begin,
	.upload_write = sim_upload_write,
	.upload_finish = sim_upload_finish,
	.upload_abort = sim_upload_abort,
	.close = sim_view_close,
};

cx_objstore *
sim_store_view(cx_objstore *s)
{
	sim_view   *v = calloc(1, sizeof(*v));

	if (v == NULL || (v->base.uri = strdup(s->uri)) == NULL)
		abort();
	v->base.ops = &sim_view_ops;
	v->st = store_of(s);
	return &v->base;
}

cx_objstore *
sim_store_open(void)
{
	sim_store  *st = calloc(1, sizeof(*st));

	if (st == NULL)
		abort();
	st->base.ops = &sim_ops;
	st->base.uri = strdup("sim://store");
	return &st->base;
}

void
sim_store_faults(cx_objstore *s, const sim_faults *f)
{
	sim_store  *st = store_of(s);

	st->faulty = f != NULL;
	if (f != NULL)
		st->faults = *f;
}

void
sim_store_land_deferred(cx_objstore *s, bool all)
{
	sim_store  *st = store_of(s);

	while (st->ndeferred > 0 && (all || sim_chance(150)))
	{
		size_t		i = sim_below((uint32_t) st->ndeferred);
		sim_put    *p = &st->deferred[i];

		if (st->trace)
			fprintf(stderr, "sim: t=%lld deferred put %s lands\n",
					(long long) sim_now_us(), p->key);
		apply_put(st, p->key, p->data, p->len, p->mode);
		free_deferred(p);
		st->deferred[i] = st->deferred[--st->ndeferred];
		if (!all)
			break;
	}
}

bool
sim_store_has(cx_objstore *s, const char *key)
{
	bool		found;

	find(store_of(s), key, &found);
	return found;
}

void
sim_store_each(cx_objstore *s, sim_key_fn fn, void *arg)
{
	sim_store  *st = store_of(s);

	for (size_t i = 0; i < st->nobjs; i++)
		fn(arg, st->objs[i].key);
}

void
sim_store_trace(cx_objstore *s, bool on)
{
	store_of(s)->trace = on;
}

uint64_t
sim_store_faults_injected(cx_objstore *s)
{
	return store_of(s)->injected;
}
