/*
 * cx_writer_round.c — one group-commit round of the writer worker.
 *
 * A round takes every QUEUED slot at once (QUEUED -> TAKEN), reads each
 * slot's batch (in the request ring, or a DSM segment it maps), and groups
 * the write requests by store, in submission order (by URI and options,
 * then folding groups whose stores are one: RoundGroup).  Every request of
 * every group is staged first: the store's resident shard writer resolves
 * it against the live rows (a unique or cardinality violation fails that request, and so
 * its whole transaction, alone; later requests see earlier ones' rows).
 * A transaction that fails in one store is withdrawn from every other store
 * before anything is appended, so a violation never leaves a transaction
 * half-written.  Then each group becomes ONE append holding the resolved rows
 * of its surviving requests (sealed if any of them asks for seal_on_insert):
 * 2 PUTs sealed, 1 unsealed.  The groups' appends run concurrently on the
 * seal pool's threads (at most ctxstore.writer_concurrent_seals at once, a
 * URI's groups one after the other); only the engine's append runs there,
 * everything PostgreSQL stays on this thread (docs/design/workers.md,
 * "Concurrent seals").
 * Whatever is queued while this runs waits for the next round, which is what
 * makes the commit a group commit.  Control requests (flush, merge, cleanup)
 * run after the groups; a merge leaves its slot TAKEN until the maintenance
 * worker has merged (cx_writer_background.c).  As each group's append
 * finishes, the transactions it settled (every request of theirs has an outcome) are
 * published under one lock acquisition and their requesters' latches set
 * once the lock is released: a transaction waits for the appends of the
 * stores it wrote, not for those of every other store in the round.  The
 * rest (controls, and everything after an ERROR) is published at the end.
 *
 * Failure isolation: a group's failure fails only that group's requests; a
 * request whose rows do not decode or do not resolve is failed (with its
 * transaction) before its group is appended.  An append that fails after
 * another store's append of the same transaction landed leaves that one
 * written: the backend's error says how many stores were.  Only engine calls run while an engine object is half-built, so
 * an ERROR can never strand a malloc'd one; an ERROR elsewhere in the round
 * fails the requests that have no outcome yet and leaves the worker running.
 */
#include "postgres.h"

#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/pmsignal.h"
#include "utils/memutils.h"

#include "cx_writer_int.h"

/* How often a wait for appends in flight looks at the postmaster. */
#define SEAL_WAIT_SLICE_MS 100L

/* A slot taken in this round. */
typedef struct RoundSlot
{
	int			slotno;
	uint64		seq;
	bool		in_ring;		/* the batch is in the request ring */
	uint64		ring_off;
	dsm_handle	handle;			/* else in this DSM segment */
	dsm_segment *seg;			/* NULL if in the ring or not mapped */
	CxBatchHeader *hdr;
	bool		deferred;		/* a waiter owns it (and seg) now */
	bool		doomed;			/* a request failed: none is written */
	bool		published;		/* outcome handed to the requester, whose
								 * ring space the worker may no longer read */
	int			nacked;			/* requests carried out */
	/* First failure, copied to the shared slot when the round ends. */
	int			nfailed;
	int			failed_request;
	CxFailure	failure;
} RoundSlot;

/* One request of a taken batch. */
typedef struct RoundItem
{
	RoundSlot  *slot;
	int			reqno;
	CxBatchView view;
	cx_schema  *schema;			/* writes; malloc'd, freed at the end */
	bool		staged;			/* its resolved rows await the append */
	bool		finished;		/* outcome recorded */
} RoundItem;

/*
 * Write requests that share one store: one append.  Not split by schema or
 * size: the store's shard writer has one staging area, so a second group of
 * the store would wipe the first one's staged rows (a request whose schema
 * is not the store's fails alone when it is staged).  Requests are grouped
 * by URI and options first, then groups that found the same store (two
 * roles' user mappings) are folded into one (resolve_groups).
 */
typedef struct RoundGroup
{
	CxResident *store;			/* NULL until found (or if that failed) */
	RoundItem **items;
	int			nitems;
	uint64		acked;
	uint64		acked_rows;
	uint64		failed;
	bool		started;		/* its append was begun */
	bool		done;			/* its outcome is recorded */
	bool		published;		/* outcome and counters published */
	CxAppend	append;
	cx_pool_task task;			/* runs append on a pool thread */
} RoundGroup;

/* The threads that run the stores' appends (NULL: they run in the worker's
 * own thread, one after the other). */
static cx_pool *seal_pool = NULL;
/* A size the system refused threads for: not tried again until it changes. */
static int	seal_pool_refused = 0;

typedef struct Round
{
	RoundSlot  *slots;
	int			nslots;
	RoundItem  *items;
	int			nitems;
	RoundGroup *groups;
	int			ngroups;
	uint64		appends;
	CxRoundSummary *summary;	/* the commits settled, for the gather */
} Round;

static void publish_settled(Round *r, bool all);

static void
slot_fail(RoundSlot *rs, int reqno, const CxFailure *fail)
{
	if (rs->nfailed++ == 0)
	{
		rs->failed_request = reqno;
		rs->failure = *fail;
	}
}

static void
item_fail(RoundItem *it, const CxFailure *fail)
{
	it->finished = true;
	slot_fail(it->slot, it->reqno, fail);
}

static void
item_done(RoundItem *it, const CxWriteResult *res)
{
	it->finished = true;
	it->slot->nacked++;
	it->slot->hdr->requests[it->reqno].result = *res;
}

static int
slot_seq_cmp(const void *a, const void *b)
{
	const RoundSlot *x = a;
	const RoundSlot *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq ? 1 : 0;
}

/* QUEUED -> TAKEN for every queued slot, in submission order. */
static void
take_queued(Round *r, uint64 generation)
{
	r->slots = palloc0(sizeof(RoundSlot) * CxWriter->nslots);
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	for (int i = 0; i < CxWriter->nslots; i++)
	{
		CxWriterSlot *slot = &CxWriter->slots[i];
		RoundSlot  *rs;

		if (slot->state != CX_SLOT_QUEUED)
			continue;
		slot->state = CX_SLOT_TAKEN;
		slot->taken_generation = generation;
		rs = &r->slots[r->nslots++];
		rs->slotno = i;
		rs->seq = slot->seq;
		rs->in_ring = slot->in_ring;
		rs->ring_off = slot->ring_off;
		rs->handle = slot->handle;
		rs->failed_request = -1;
		if (rs->in_ring)
			CxWriter->ring_batches++;
		else
			CxWriter->dsm_batches++;
	}
	LWLockRelease(CxWriter->lock);
	qsort(r->slots, r->nslots, sizeof(RoundSlot), slot_seq_cmp);
}

/* A write request's schema (its rows are checked by the shard writer's
 * append, before anything is written). */
static void
describe_write(RoundItem *it)
{
	CxFailure	fail;
	cx_rd		rd;

	if (it->view.schema_bytes == NULL || it->view.nrows == 0)
	{
		cx_failure_set(&fail, CX_ERR_CORRUPT, "write request for store %s has no schema or no rows",
					it->view.uri);
		item_fail(it, &fail);
		return;
	}
	cx_rd_init(&rd, it->view.schema_bytes, it->view.schema_len);
	it->schema = cx_schema_decode(&rd);
	if (it->schema == NULL)
	{
		cx_failure_set(&fail, CX_ERR_CORRUPT, "request for store %s carries a malformed schema",
					it->view.uri);
		item_fail(it, &fail);
	}
}

/*
 * Maps the batch of rs, or fails the slot; true if mapped and sound.  A
 * ring batch stays valid while the slot is TAKEN or ABANDONED: only the
 * worker frees it then (cx_slot_finish_locked).
 */
static bool
map_batch(RoundSlot *rs)
{
	CxFailure	fail;
	const char *why;
	Size		len;

	if (rs->in_ring)
	{
		rs->hdr = cx_request_ring_at(rs->ring_off);
		len = cx_request_ring_len(rs->ring_off);
	}
	else if ((rs->seg = dsm_attach(rs->handle)) != NULL)
	{
		rs->hdr = dsm_segment_address(rs->seg);
		len = dsm_segment_map_length(rs->seg);
	}
	else
	{
		/* The requester gave up and unmapped it: nothing to do. */
		cx_failure_set(&fail, CX_ERR_INVALID, "the request was gone before the writer could read it");
		slot_fail(rs, 0, &fail);
		return false;
	}
	if (!cx_batch_check(rs->hdr, len, &why) ||
		(rs->in_ring && rs->hdr->kind != CX_BATCH_WRITE) ||
		(rs->hdr->kind != CX_BATCH_WRITE && rs->hdr->kind != CX_CONTROL_FLUSH &&
		 rs->hdr->kind != CX_CONTROL_MERGE && rs->hdr->kind != CX_CONTROL_CLEANUP))
	{
		cx_failure_set(&fail, CX_ERR_CORRUPT, "%s", why);
		slot_fail(rs, 0, &fail);
		rs->hdr = NULL;
		return false;
	}
	return true;
}

/* Maps each slot's batch and describes its requests as items. */
static void
map_batches(Round *r)
{
	int			maxitems = 0;

	for (int i = 0; i < r->nslots; i++)
		if (map_batch(&r->slots[i]))
			maxitems += r->slots[i].hdr->nrequests;

	r->items = palloc0(sizeof(RoundItem) * Max(maxitems, 1));
	for (int i = 0; i < r->nslots; i++)
	{
		RoundSlot  *rs = &r->slots[i];

		for (int k = 0; rs->hdr != NULL && k < rs->hdr->nrequests; k++)
		{
			RoundItem  *it = &r->items[r->nitems++];

			it->slot = rs;
			it->reqno = k;
			cx_batch_view(rs->hdr, k, &it->view);
			if (rs->hdr->kind == CX_BATCH_WRITE)
				describe_write(it);
		}
	}
}

static bool
is_write(const RoundItem *it)
{
	return it->slot->hdr->kind == CX_BATCH_WRITE;
}

/* Whether b carries the URI and options of g's requests: the same store,
 * and the same user mapping. */
static bool
same_group(const RoundGroup *g, const RoundItem *b)
{
	const RoundItem *a = g->items[0];

	return strcmp(a->view.uri, b->view.uri) == 0 &&
		a->view.options_len == b->view.options_len &&
		memcmp(a->view.options_bytes, b->view.options_bytes,
			   a->view.options_len) == 0;
}

/* Groups the live write items, keeping submission order within each. */
static void
group_items(Round *r)
{
	r->groups = palloc0(sizeof(RoundGroup) * Max(r->nitems, 1));
	for (int i = 0; i < r->nitems; i++)
	{
		RoundItem  *it = &r->items[i];
		RoundGroup *g = NULL;

		if (it->finished || !is_write(it))
			continue;
		for (int k = 0; k < r->ngroups && g == NULL; k++)
			if (same_group(&r->groups[k], it))
				g = &r->groups[k];
		if (g == NULL)
		{
			g = &r->groups[r->ngroups++];
			g->items = palloc(sizeof(RoundItem *) * r->nitems);
		}
		g->items[g->nitems++] = it;
	}
}

static void
group_fail(RoundGroup *g, RoundItem *it, const CxFailure *fail)
{
	item_fail(it, fail);
	it->slot->doomed = true;
	g->failed++;
}

/* The group whose store is store among the first n, or NULL. */
static RoundGroup *
group_of_store(Round *r, int n, const CxResident *store)
{
	for (int i = 0; i < n; i++)
		if (r->groups[i].store == store)
			return &r->groups[i];
	return NULL;
}

/* Item pointers in r->items' order, which is submission order. */
static int
item_order_cmp(const void *a, const void *b)
{
	const RoundItem *x = *(RoundItem *const *) a;
	const RoundItem *y = *(RoundItem *const *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Moves g's requests into "into" (which has room for every item of the
 * round), keeping submission order. */
static void
fold_group(RoundGroup *into, const RoundGroup *g)
{
	memcpy(into->items + into->nitems, g->items, sizeof(RoundItem *) * g->nitems);
	into->nitems += g->nitems;
	qsort(into->items, into->nitems, sizeof(RoundItem *), item_order_cmp);
}

/*
 * Finds each group's store (admitting its user mapping's credentials and
 * merging its settings), failing the group's requests if it cannot be
 * found, and folds groups that found the same store into the first of
 * them.  Before any staging, so a failed group's transactions are doomed
 * before their other requests are staged; a store found stays open for the
 * round (cx_resident_round_begin), so no later group's store closes it.
 */
static void
resolve_groups(Round *r)
{
	int			kept = 0;

	for (int i = 0; i < r->ngroups; i++)
	{
		RoundGroup *g = &r->groups[i];
		RoundGroup *into;
		CxFailure	fail;

		if (cx_resident_get(&g->items[0]->view, &g->store, &fail) != CX_OK)
			for (int k = 0; k < g->nitems; k++)
				group_fail(g, g->items[k], &fail);
		into = g->store != NULL ? group_of_store(r, kept, g->store) : NULL;
		if (into != NULL)
			fold_group(into, g);
		else
			r->groups[kept++] = *g;
	}
	r->ngroups = kept;
}

/*
 * Stages the group's requests whose transactions are not doomed, from
 * scratch.  True if a request failed whose transaction has other requests:
 * they may be staged (here or in another group) and must be withdrawn.
 */
static bool
stage_group(RoundGroup *g)
{
	CxFailure	fail;
	bool		withdraw = false;

	/* Its requests failed when its store was not found. */
	if (g->store == NULL)
		return false;
	cx_resident_unstage(g->store);
	for (int i = 0; i < g->nitems; i++)
	{
		RoundItem  *it = g->items[i];

		it->staged = false;
		if (it->finished || it->slot->doomed)
			continue;
		if (cx_resident_stage(g->store, it->schema, it->view.rows,
							  it->view.rows_len, it->view.nrows, &fail) == CX_OK)
			it->staged = true;
		else
		{
			group_fail(g, it, &fail);
			withdraw |= it->slot->hdr->nrequests > 1;
		}
	}
	return withdraw;
}

/*
 * Stages every group.  A failure that dooms a transaction with requests
 * elsewhere stages everything again without it; each such pass dooms one
 * more transaction, so there are at most as many passes as slots.  A
 * request that failed in an earlier pass stays failed (conservative: a row
 * withdrawn later may have been what it collided with).
 */
static void
stage_groups(Round *r)
{
	bool		again = true;

	for (int pass = 0; again && pass <= r->nslots; pass++)
	{
		again = false;
		for (int i = 0; i < r->ngroups; i++)
			again |= stage_group(&r->groups[i]);
	}
}

/* The requests of doomed transactions that did not fail themselves. */
static void
fail_withdrawn(Round *r)
{
	CxFailure	fail;

	for (int i = 0; i < r->nitems; i++)
	{
		RoundItem  *it = &r->items[i];

		if (it->finished || !it->slot->doomed || !is_write(it))
			continue;
		fail = it->slot->failure;
		item_fail(it, &fail);
	}
}

/* Whether any staged request of the group asks for a seal, and whether
 * any is staged. */
static bool
group_seals(const RoundGroup *g, bool *any)
{
	bool		seal = false;

	*any = false;
	for (int i = 0; i < g->nitems; i++)
	{
		*any |= g->items[i]->staged;
		seal |= g->items[i]->staged && g->items[i]->view.settings->seal_on_insert;
	}
	return seal;
}

/* The group's requests share its append's outcome. */
static void
finish_group(Round *r, RoundGroup *g)
{
	CxWriteResult res = {0};
	CxFailure	fail;
	cx_code		rc;

	g->done = true;
	rc = cx_resident_append_end(&g->append, &res, &fail);
	if (rc == CX_OK && res.commit_ts != 0)
		r->appends++;
	else if (rc != CX_OK)
	{
		elog(LOG, "ctxstore writer: commit to store \"%s\" failed: %s",
			 g->items[0]->view.uri, fail.msg);
		cx_worker_note_error(&CxWriter->writer, "store %s: %s",
							 g->items[0]->view.uri, fail.msg);
	}
	for (int i = 0; i < g->nitems; i++)
	{
		RoundItem  *it = g->items[i];

		if (!it->staged || it->finished)
			continue;
		if (rc == CX_OK)
		{
			item_done(it, &res);
			g->acked++;
			g->acked_rows += it->view.nrows;
		}
		else
		{
			item_fail(it, &fail);
			g->failed++;
		}
	}
}

/*
 * Begins the group's append: handed to the pool if the engine has work and
 * the round has other stores, else carried out here.
 */
static void
start_group(Round *r, RoundGroup *g)
{
	bool		seal;
	bool		any;

	g->started = true;
	seal = group_seals(g, &any);
	if (g->store == NULL || !any)
	{
		/* Every request failed before the append: nothing to record. */
		g->done = true;
		return;
	}
	if (!cx_resident_append_begin(g->store, seal, &g->append))
	{
		finish_group(r, g);
		return;
	}
	g->task.fn = cx_resident_append_run;
	g->task.arg = &g->append;
	/* A round of one store has nothing to overlap: no thread switch. */
	if (seal_pool != NULL && r->ngroups > 1)
	{
		cx_pool_submit(seal_pool, &g->task);
		return;
	}
	cx_resident_append_run(&g->append);
	finish_group(r, g);
}

/* Whether a group of the same URI is in flight: one store's appends stay
 * in order, and a shard writer serves one thread at a time. */
static bool
store_in_flight(const Round *r, const RoundGroup *g)
{
	for (int i = 0; i < r->ngroups; i++)
	{
		const RoundGroup *o = &r->groups[i];

		if (o != g && o->started && !o->done &&
			strcmp(o->items[0]->view.uri, g->items[0]->view.uri) == 0)
			return true;
	}
	return false;
}

/* Starts every group whose store has no append in flight; false once every
 * group has been started. */
static bool
start_ready_groups(Round *r)
{
	bool		waiting = false;

	for (int i = 0; i < r->ngroups; i++)
	{
		RoundGroup *g = &r->groups[i];

		if (g->started)
			continue;
		if (store_in_flight(r, g))
			waiting = true;
		else
			start_group(r, g);
	}
	return waiting;
}

/*
 * The next append to finish, waiting in slices of SEAL_WAIT_SLICE_MS.  The
 * appends are bounded by their stores' request timeouts, so the wait is;
 * a shutdown request lets them finish (a round is never cut short), the
 * postmaster's death ends the worker with them in flight, as a crash would:
 * nothing they wrote was acknowledged, and the next writer settles them.
 */
static RoundGroup *
next_finished(void)
{
	cx_pool_task *t;

	while ((t = cx_pool_wait(seal_pool, SEAL_WAIT_SLICE_MS)) == NULL)
	{
		if (!PostmasterIsAlive())
			proc_exit(1);
	}
	return (RoundGroup *) ((char *) t - offsetof(RoundGroup, task));
}

/*
 * Every group's append, each store's in its own pool thread, at most
 * ctxstore.writer_concurrent_seals at once.  Each group's transactions are
 * published as soon as its append (and every other append they wrote)
 * finished; the last ones are published with the round.
 */
static void
commit_groups(Round *r)
{
	bool		waiting = start_ready_groups(r);

	while (seal_pool != NULL && cx_pool_outstanding(seal_pool) > 0)
	{
		finish_group(r, next_finished());
		if (waiting)
			waiting = start_ready_groups(r);
		if (waiting || cx_pool_outstanding(seal_pool) > 0)
			publish_settled(r, false);
	}
}

/* After an ERROR: the appends still in flight finish and are recorded, so
 * that nothing written is reported as failed. */
static void
settle_in_flight(Round *r)
{
	while (seal_pool != NULL && cx_pool_outstanding(seal_pool) > 0)
		finish_group(r, next_finished());
}

/* Control requests, in submission order, after the round's appends. */
static void
run_controls(Round *r)
{
	for (int i = 0; i < r->nitems; i++)
	{
		RoundItem  *it = &r->items[i];
		CxResident *store;
		CxWriteResult res = {0};
		CxFailure	fail;

		if (it->finished || is_write(it))
			continue;
		if (cx_resident_get(&it->view, &store, &fail) != CX_OK)
		{
			item_fail(it, &fail);
			continue;
		}
		switch (cx_control_start(store, (CxControlKind) it->slot->hdr->kind,
								 it->slot->slotno, it->slot->seg, &res, &fail))
		{
			case CX_CONTROL_DONE:
				item_done(it, &res);
				break;
			case CX_CONTROL_FAILED:
				item_fail(it, &fail);
				break;
			case CX_CONTROL_WAITING:
				it->finished = true;
				it->slot->deferred = true;
				break;
		}
		cx_resident_publish(store);
	}
}

/* Every request of the slot's batch was carried out. */
static bool
slot_succeeded(const RoundSlot *rs)
{
	return rs->nfailed == 0 && rs->hdr != NULL &&
		rs->nacked == rs->hdr->nrequests;
}

/*
 * Fails every request that has no outcome yet (after an ERROR).  Nothing
 * unfinished was written: no PostgreSQL call that can raise an ERROR runs
 * between an engine commit and recording its outcome.
 */
static void
fail_unfinished(Round *r, const char *why)
{
	CxFailure	fail;

	cx_failure_set(&fail, CX_ERR_IO, "ctxstore writer error: %s", why);
	for (int i = 0; i < r->nitems; i++)
		if (!r->items[i].finished)
			item_fail(&r->items[i], &fail);
	/* Slots the round did not get as far as describing. */
	for (int i = 0; i < r->nslots; i++)
		if (!r->slots[i].deferred && !r->slots[i].published &&
			!slot_succeeded(&r->slots[i]) && r->slots[i].nfailed == 0)
			slot_fail(&r->slots[i], 0, &fail);
}

/* The group's outcome and its store's counters (found by URI: a later
 * group may have reopened the store). */
static void
publish_group_locked(RoundGroup *g)
{
	const char *uri = g->items[0]->view.uri;
	CxResident *store = cx_resident_find(uri);
	CxStoreStatsEntry *e;

	if (g->published)
		return;
	g->published = true;
	if (store != NULL)
		cx_resident_publish_locked(store);
	e = cx_stats_entry(uri, true);
	if (e == NULL)
		return;
	e->stats.acked_transactions += g->acked;
	e->stats.acked_rows += g->acked_rows;
	e->stats.failed_transactions += g->failed;
}

/*
 * Every request of the slot has an outcome, and no group still to finish
 * holds one of them (publishing a group reads its first item's batch; a
 * doomed transaction's requests are failed before any append).
 */
static bool
slot_settled(const Round *r, const RoundSlot *rs)
{
	for (int i = 0; i < r->nitems; i++)
		if (r->items[i].slot == rs && !r->items[i].finished)
			return false;
	for (int g = 0; g < r->ngroups; g++)
		for (int i = 0; !r->groups[g].done && i < r->groups[g].nitems; i++)
			if (r->groups[g].items[i]->slot == rs)
				return false;
	return slot_succeeded(rs) || rs->nfailed > 0;
}

/*
 * Publishes the outcome of the round's settled slots not published yet
 * (all of those not deferred if "all"), and the counters of its finished
 * groups (all if "all"), under one lock acquisition, then wakes the requesters
 * in one pass after releasing it, so that none wakes only to wait for the
 * lock.  (A requester that gave up meanwhile gets a stray SetLatch, which
 * is harmless.)  A published slot's batch is never read again: its
 * requester may free it at once.
 */
static void
publish_settled(Round *r, bool all)
{
	int		   *wake = palloc(sizeof(int) * Max(r->nslots, 1));
	int			nwake = 0;

	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	for (int i = 0; i < r->ngroups; i++)
		if (all || r->groups[i].done)
			publish_group_locked(&r->groups[i]);
	for (int i = 0; i < r->nslots; i++)
	{
		RoundSlot  *rs = &r->slots[i];

		if (rs->deferred || rs->published || (!all && !slot_settled(r, rs)))
			continue;
		Assert(slot_succeeded(rs) || rs->nfailed > 0);
		rs->published = true;
		if (rs->slotno % CX_LANES == CX_LANE_COMMIT)
			r->summary->settled[r->summary->nsettled++] = rs->slotno;
		wake[nwake++] = cx_slot_finish_locked(rs->slotno, rs->nfailed,
											  rs->failed_request, &rs->failure);
	}
	if (all)
	{
		CxWriter->writer.rounds++;
		CxWriter->writer.commits += r->appends;
	}
	LWLockRelease(CxWriter->lock);
	for (int i = 0; i < nwake; i++)
		cx_set_latch(wake[i]);
	pfree(wake);
}

/* Unmaps the batches no waiter keeps and frees the engine's schemas. */
static void
release(Round *r)
{
	for (int i = 0; i < r->nitems; i++)
		if (r->items[i].schema != NULL)
			cx_schema_free(r->items[i].schema);
	for (int i = 0; i < r->nslots; i++)
		if (r->slots[i].seg != NULL && !r->slots[i].deferred)
			dsm_detach(r->slots[i].seg);
}

static void
run(Round *r)
{
	map_batches(r);
	group_items(r);
	resolve_groups(r);
	stage_groups(r);
	fail_withdrawn(r);
	commit_groups(r);
	run_controls(r);
}

/*
 * Sizes the seal pool to ctxstore.writer_concurrent_seals (a reload may
 * change it; between rounds the pool is idle).  If the system refuses the
 * threads, the appends run in this thread, one store after the other.
 */
static void
size_seal_pool(void)
{
	cx_err		err;

	if ((seal_pool != NULL && cx_pool_threads(seal_pool) == cx_writer_concurrent_seals) ||
		seal_pool_refused == cx_writer_concurrent_seals)
		return;
	cx_pool_destroy(seal_pool);
	seal_pool = NULL;
	seal_pool_refused = 0;
	if (cx_pool_create(cx_writer_concurrent_seals, &seal_pool, &err) == CX_OK)
		return;
	seal_pool_refused = cx_writer_concurrent_seals;
	ereport(WARNING,
			errmsg("ctxstore writer: stores are sealed one at a time: %s", err.msg));
}

/*
 * Once the round's commits are all published, each store that appended in
 * this round and the one before gets ready for its next append of the same
 * kind (cx_sw_prepare_append: a local store makes the put's unnamed inode),
 * while the woken sessions commit again, instead of on their next commit's
 * path.  A store written now and then (many stores written in turn) is
 * not: its inode would wait, and be dropped for others, long before its
 * next put.
 */
static void
prepare_next_appends(Round *r)
{
	static uint64 round_no = 0;

	round_no++;
	for (int i = 0; i < r->ngroups; i++)
	{
		RoundGroup *g = &r->groups[i];
		CxResident *store = g->store;

		if (!g->started || store == NULL || store->w == NULL)
			continue;
		if (store->appended_round + 1 == round_no)
			cx_sw_prepare_append(store->w, g->append.seal);
		store->appended_round = round_no;
	}
}

void
cx_writer_run_round(uint64 generation, CxRoundSummary *summary)
{
	static MemoryContext round_cxt = NULL;
	Round	   *r;
	MemoryContext old;

	if (round_cxt == NULL)
		round_cxt = AllocSetContextCreate(TopMemoryContext, "ctxstore writer round",
										  ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(round_cxt);
	r = palloc0(sizeof(Round));
	r->summary = summary;
	summary->nsettled = 0;
	take_queued(r, generation);
	if (r->nslots > 0)
	{
		size_seal_pool();
		cx_resident_round_begin();
		PG_TRY();
		{
			run(r);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(round_cxt);
			edata = CopyErrorData();
			FlushErrorState();
			elog(LOG, "ctxstore writer: round failed: %s", edata->message);
			cx_worker_note_error(&CxWriter->writer, "round failed: %s", edata->message);
			settle_in_flight(r);
			fail_unfinished(r, edata->message);
		}
		PG_END_TRY();
		publish_settled(r, true);
		prepare_next_appends(r);
		release(r);
		cx_resident_round_end();
	}
	summary->taken = r->nslots;
	MemoryContextSwitchTo(old);
	MemoryContextReset(round_cxt);
}
