/*
 * cx_writer_commit.c — one group-commit round of the writer worker.
 *
 * A round takes every QUEUED slot at once (QUEUED -> TAKEN), maps each
 * slot's batch, and groups the requests by store identity (URI + options)
 * and schema, in submission order.  Each group becomes ONE fragment holding
 * every row of every request in it and ONE manifest commit; whatever is
 * queued while this runs waits for the next round, which is what makes the
 * commit a group commit.  Outcomes are published per slot at the end, under
 * one lock acquisition, and each requester's latch is set.
 *
 * Failure isolation: a group's failure fails only that group's requests; a
 * request whose rows do not decode (or are refused by the fragment writer)
 * is failed alone and its group is rewritten without it.  Between opening a
 * fragment and finishing or aborting it only engine calls run, so an ERROR
 * can never strand a malloc'd engine object; an ERROR elsewhere in the round
 * fails the requests that have no outcome yet and leaves the worker running.
 */
#include "postgres.h"

#include "storage/lwlock.h"
#include "utils/memutils.h"

#include "cx_commit.h"
#include "cx_fragment.h"
#include "cx_rowcodec.h"
#include "cx_writer_int.h"

/* A slot taken in this round. */
typedef struct RoundSlot
{
	int			slotno;
	uint64		seq;
	dsm_handle	handle;
	dsm_segment *seg;			/* NULL if the batch could not be mapped */
	CxBatchHeader *hdr;
	int			nacked;			/* requests committed */
	/* First failure, copied to the shared slot when the round ends. */
	int			nfailed;
	int			failed_request;
	cx_code		error_code;
	char		error_msg[CX_ERR_MSG_LEN];
} RoundSlot;

/* One request of a taken batch. */
typedef struct RoundItem
{
	RoundSlot  *slot;
	int			reqno;
	CxBatchView view;
	cx_schema  *schema;			/* malloc'd (cx_schema_decode); freed at end */
	bool		finished;		/* outcome recorded */
	bool		failed;
} RoundItem;

/* Requests that share one store identity and schema: one fragment, one
 * commit. */
typedef struct RoundGroup
{
	RoundItem **items;
	int			nitems;
	CxWriterStoreStats stats;
} RoundGroup;

typedef struct Round
{
	MemoryContext cxt;
	RoundSlot  *slots;
	int			nslots;
	RoundItem  *items;
	int			nitems;
	RoundGroup *groups;
	int			ngroups;
} Round;

static void
slot_fail(RoundSlot *rs, int reqno, const cx_err *err)
{
	if (rs->nfailed++ == 0)
	{
		rs->failed_request = reqno;
		rs->error_code = err->code;
		strlcpy(rs->error_msg, err->msg, sizeof(rs->error_msg));
	}
}

static void
item_fail(RoundItem *it, const cx_err *err)
{
	it->finished = true;
	it->failed = true;
	slot_fail(it->slot, it->reqno, err);
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
		rs->handle = slot->handle;
		rs->failed_request = -1;
	}
	LWLockRelease(CxWriter->lock);
	qsort(r->slots, r->nslots, sizeof(RoundSlot), slot_seq_cmp);
}

/* Maps each slot's batch and describes its requests as items. */
static void
map_batches(Round *r)
{
	int			maxitems = 0;
	cx_err		err;

	for (int i = 0; i < r->nslots; i++)
	{
		RoundSlot  *rs = &r->slots[i];
		const char *why;

		rs->seg = dsm_attach(rs->handle);
		if (rs->seg == NULL)
		{
			/* The requester gave up and unmapped it: nothing to write. */
			cx_err_set(&err, CX_ERR_INVALID, "the request was gone before the writer could read it");
			slot_fail(rs, 0, &err);
			continue;
		}
		rs->hdr = dsm_segment_address(rs->seg);
		if (!cx_batch_check(rs->hdr, dsm_segment_map_length(rs->seg), &why))
		{
			cx_err_set(&err, CX_ERR_CORRUPT, "%s", why);
			slot_fail(rs, 0, &err);
			rs->hdr = NULL;
			continue;
		}
		maxitems += rs->hdr->nrequests;
	}

	r->items = palloc0(sizeof(RoundItem) * Max(maxitems, 1));
	for (int i = 0; i < r->nslots; i++)
	{
		RoundSlot  *rs = &r->slots[i];

		for (int k = 0; rs->hdr != NULL && k < rs->hdr->nrequests; k++)
		{
			RoundItem  *it = &r->items[r->nitems++];
			cx_rd		rd;

			it->slot = rs;
			it->reqno = k;
			cx_batch_view(rs->hdr, k, &it->view);
			cx_rd_init(&rd, it->view.schema_bytes, it->view.schema_len);
			it->schema = cx_schema_decode(&rd);
			if (it->schema == NULL)
			{
				cx_err_set(&err, CX_ERR_CORRUPT, "request for store \"%s\" carries a malformed schema",
						   it->view.uri);
				item_fail(it, &err);
			}
		}
	}
}

static bool
same_group(const RoundItem *a, const RoundItem *b)
{
	return strcmp(a->view.uri, b->view.uri) == 0 &&
		a->view.options_len == b->view.options_len &&
		memcmp(a->view.options_bytes, b->view.options_bytes,
			   a->view.options_len) == 0 &&
		cx_schema_equal(a->schema, b->schema);
}

/* Groups the live items, keeping submission order within each group. */
static void
group_items(Round *r)
{
	r->groups = palloc0(sizeof(RoundGroup) * Max(r->nitems, 1));
	for (int i = 0; i < r->nitems; i++)
	{
		RoundItem  *it = &r->items[i];
		RoundGroup *g = NULL;

		if (it->finished)
			continue;
		for (int k = 0; k < r->ngroups && g == NULL; k++)
			if (same_group(r->groups[k].items[0], it))
				g = &r->groups[k];
		if (g == NULL)
		{
			g = &r->groups[r->ngroups++];
			g->items = palloc(sizeof(RoundItem *) * r->nitems);
		}
		g->items[g->nitems++] = it;
	}
}

/* Codes cx_fragw_append() returns for a bad value rather than a bad store. */
static bool
is_value_error(cx_code code)
{
	return code == CX_ERR_INVALID || code == CX_ERR_LIMIT ||
		code == CX_ERR_CORRUPT;
}

/*
 * Decodes an item's rows and appends them.  On failure *item_fault says
 * whether the item itself is to blame (its rows), not the store.
 */
static cx_code
append_item(cx_fragw *w, RoundItem *it, cx_datum *values, cx_buf *scratch,
			bool *item_fault, cx_err *err)
{
	cx_rd		rd;
	cx_code		rc;

	*item_fault = true;
	cx_rd_init(&rd, it->view.rows, it->view.rows_len);
	for (uint64 n = 0; n < it->view.nrows; n++)
	{
		rc = cx_row_decode(it->schema, &rd, values, scratch, err);
		if (rc != CX_OK)
			return rc;
		rc = cx_fragw_append(w, values, err);
		if (rc != CX_OK)
		{
			*item_fault = is_value_error(rc);
			return rc;
		}
	}
	if (cx_rd_left(&rd) != 0)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%zu bytes left over after the request's " UINT64_FORMAT " rows",
						  cx_rd_left(&rd), it->view.nrows);
	return CX_OK;
}

/*
 * Writes every live item of g into one fragment.  *bad receives the item to
 * drop and retry without, if one item is at fault.  Engine calls only.
 */
static cx_code
write_fragment(cx_objstore *store, RoundGroup *g, cx_datum *values,
			   cx_fragment_info *info, RoundItem **bad, cx_err *err)
{
	RoundItem  *first = NULL;
	cx_fragw_options opt;
	char		key[128];
	cx_fragw   *w;
	cx_buf		scratch;
	cx_code		rc;

	*bad = NULL;
	for (int i = 0; i < g->nitems && first == NULL; i++)
		if (!g->items[i]->finished)
			first = g->items[i];
	cx_fragw_options_default(&opt);
	opt.compression_level = first->view.compression_level;
	rc = cx_fragment_new_key(key, sizeof(key), err);
	if (rc == CX_OK)
		rc = cx_fragw_open(store, key, first->schema, &opt, &w, err);
	if (rc != CX_OK)
		return rc;

	cx_buf_init(&scratch);
	for (int i = 0; i < g->nitems && rc == CX_OK; i++)
	{
		bool		item_fault;

		if (g->items[i]->finished)
			continue;
		rc = append_item(w, g->items[i], values, &scratch, &item_fault, err);
		if (rc != CX_OK && item_fault)
			*bad = g->items[i];
	}
	cx_buf_free(&scratch);
	if (rc != CX_OK)
	{
		cx_fragw_abort(w);
		return rc;
	}
	return cx_fragw_finish(w, info, err);
}

static int
live_items(const RoundGroup *g)
{
	int			n = 0;

	for (int i = 0; i < g->nitems; i++)
		n += !g->items[i]->finished;
	return n;
}

/* Records the group's outcome on each of its live items. */
static void
group_finish(RoundGroup *g, cx_code rc, uint64 version, const cx_err *err)
{
	for (int i = 0; i < g->nitems; i++)
	{
		RoundItem  *it = g->items[i];

		if (it->finished)
			continue;
		if (rc == CX_OK)
		{
			it->finished = true;
			it->slot->nacked++;
			it->slot->hdr->requests[it->reqno].result_version = version;
			g->stats.acked_transactions++;
			g->stats.acked_rows += it->view.nrows;
		}
		else
		{
			item_fail(it, err);
			g->stats.failed_transactions++;
		}
	}
	if (rc == CX_OK)
		g->stats.store_commits++;
}

/* One fragment and one commit for the group (retried without an item whose
 * rows are at fault). */
static void
commit_group(RoundGroup *g)
{
	const CxBatchView *view = &g->items[0]->view;
	cx_datum   *values = palloc(sizeof(cx_datum) *
								Max(g->items[0]->schema->ncolumns, 1));
	cx_objstore *store = NULL;
	cx_fragment_info info;
	RoundItem  *bad;
	uint64		version = 0;
	cx_err		err;
	cx_code		rc = CX_OK;

	while (live_items(g) > 0)
	{
		rc = cx_stores_get(view, &store, &err);
		if (rc != CX_OK)
			break;
		rc = write_fragment(store, g, values, &info, &bad, &err);
		if (rc != CX_OK && bad != NULL)
		{
			elog(LOG, "ctxstore writer: refusing one request for store \"%s\": %s",
				 view->uri, err.msg);
			item_fail(bad, &err);
			g->stats.failed_transactions++;
			continue;
		}
		if (rc == CX_OK)
		{
			rc = cx_commit_append(store, g->items[0]->schema, &info, 1,
								  &version, &err);
			cx_fragment_info_free(&info);
		}
		/* A store that failed may hold a broken connection or a stale
		 * view: open it afresh next time (a schema mismatch is not the
		 * handle's fault). */
		if (rc != CX_OK && rc != CX_ERR_SCHEMA)
			cx_stores_discard(store);
		break;
	}
	if (live_items(g) == 0)
		return;
	if (rc != CX_OK)
		elog(LOG, "ctxstore writer: commit to store \"%s\" failed: %s",
			 view->uri, err.msg);
	group_finish(g, rc, version, &err);
}

/* Every request of the slot's batch was committed. */
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
	cx_err		err;

	cx_err_set(&err, CX_ERR_IO, "ctxstore writer error: %s", why);
	for (int i = 0; i < r->nitems; i++)
		if (!r->items[i].finished)
			item_fail(&r->items[i], &err);
	/* Slots the round did not get as far as describing. */
	for (int i = 0; i < r->nslots; i++)
		if (!slot_succeeded(&r->slots[i]) && r->slots[i].nfailed == 0)
			slot_fail(&r->slots[i], 0, &err);
}

/* Publishes each slot's outcome and wakes its requester. */
static void
publish(Round *r)
{
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	CxWriter->rounds++;
	for (int i = 0; i < r->ngroups; i++)
		cx_writer_stats_add(r->groups[i].items[0]->view.uri, &r->groups[i].stats);
	for (int i = 0; i < r->nslots; i++)
	{
		RoundSlot  *rs = &r->slots[i];
		CxWriterSlot *slot = &CxWriter->slots[rs->slotno];

		if (slot->state == CX_SLOT_ABANDONED)
		{
			/* Its requester may be waiting to post its next transaction. */
			slot->state = CX_SLOT_FREE;
			cx_writer_set_latch(slot->requester_procno);
			continue;
		}
		Assert(slot->state == CX_SLOT_TAKEN);
		Assert(slot_succeeded(rs) || rs->nfailed > 0);
		slot->state = slot_succeeded(rs) ? CX_SLOT_DONE : CX_SLOT_FAILED;
		slot->nfailed = rs->nfailed;
		slot->failed_request = rs->failed_request;
		slot->error_code = rs->error_code;
		slot->outcome_unknown = false;
		strlcpy(slot->error_msg, rs->error_msg, sizeof(slot->error_msg));
		cx_writer_set_latch(slot->requester_procno);
	}
	LWLockRelease(CxWriter->lock);
}

/* Unmaps the batches and frees the engine's schemas. */
static void
release(Round *r)
{
	for (int i = 0; i < r->nitems; i++)
		if (r->items[i].schema != NULL)
			cx_schema_free(r->items[i].schema);
	for (int i = 0; i < r->nslots; i++)
		if (r->slots[i].seg != NULL)
			dsm_detach(r->slots[i].seg);
}

int
cx_writer_run_round(uint64 generation)
{
	static MemoryContext round_cxt = NULL;
	Round	   *r;
	MemoryContext old;
	int			ntaken;

	if (round_cxt == NULL)
		round_cxt = AllocSetContextCreate(TopMemoryContext, "ctxstore writer round",
										  ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(round_cxt);
	r = palloc0(sizeof(Round));
	take_queued(r, generation);
	if (r->nslots > 0)
	{
		PG_TRY();
		{
			map_batches(r);
			group_items(r);
			for (int i = 0; i < r->ngroups; i++)
				commit_group(&r->groups[i]);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(round_cxt);
			edata = CopyErrorData();
			FlushErrorState();
			elog(LOG, "ctxstore writer: round failed: %s", edata->message);
			fail_unfinished(r, edata->message);
		}
		PG_END_TRY();
		publish(r);
		release(r);
	}
	ntaken = r->nslots;
	MemoryContextSwitchTo(old);
	MemoryContextReset(round_cxt);
	return ntaken;
}
