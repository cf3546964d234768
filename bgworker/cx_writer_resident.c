/*
 * cx_writer_resident.c — the writer worker's resident stores: for each store
 * it writes, one handle (cx_stores.c) and one shard writer
 * (storage/memwal/cx_shard_writer.h) claiming this cluster's shard
 * (ctxstore.shard_id), kept across rounds.
 *
 * The shard is claimed once, when the first request for the store arrives,
 * and then written without reopening or re-claiming.  It is claimed again
 * only when:
 *   - the writer was fenced (another cluster claimed the same shard id):
 *     the fenced writer is dropped at once and the next request re-claims,
 *     which is logged; nothing retries a claim in a loop;
 *   - the store options the writer was opened with (key, unique_key,
 *     pending_generations_max, compression_level) change: the writer is
 *     sealed, closed and opened again with the new ones;
 *   - the store is closed (evicted, reopened with another user mapping's
 *     options, worker exit) and its claim could not be kept.
 * A store that is closed (and a writer reopened for new options) is sealed
 * first, and its claim is kept (cx_sw_close_keep): reopening it resumes the
 * claim with reads only, unless another writer claimed the shard meanwhile
 * (docs/design/memwal.md, "Kept claims").  So the number of stores the
 * writer keeps open (ctxstore.writer_max_open_stores) bounds its memory,
 * not the claims it makes.
 * Unsealed rows are durable in the shard's WAL, so a writer that is dropped
 * or dies without sealing loses nothing: the next claim replays them.
 */
#include "postgres.h"

#include <unistd.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "ctxstore/engine.h"
#include "cx_time.h"
#include "cx_writer_int.h"

/* Most kept claims of closed stores the writer remembers (a few dozen bytes
 * each); past it a closed store's claim is not kept, and its next open
 * claims the shard. */
#define KEPT_CLAIMS_MAX 65536
/* How often a store's pending-generations warning may repeat. */
#define WARN_EVERY_MS 60000

static void resident_closing(CxOpenStore *os);
static bool resident_busy(const CxOpenStore *os);

/* The claim of a closed store, by the digest of its identity. */
typedef struct KeptClaim
{
	uint8		store[CX_SHA256_LEN];	/* SHA-256 of URI and location */
	cx_sw_kept	kept;
} KeptClaim;

static HTAB *kept_claims;

void
cx_resident_init(void)
{
	CxStoreHooks h = {resident_closing, resident_busy};
	HASHCTL		ctl;

	ctl.keysize = CX_SHA256_LEN;
	ctl.entrysize = sizeof(KeptClaim);
	kept_claims = hash_create("ctxstore kept claims", 256, &ctl,
							  HASH_ELEM | HASH_BLOBS);
	cx_stores_init(&h, cx_writer_max_open_stores);
}

static void
store_digest(const CxOpenStore *os, uint8 *digest)
{
	StringInfoData id;

	initStringInfo(&id);
	appendStringInfo(&id, "%s\n%s", os->uri, os->location);
	cx_sha256(id.data, id.len, digest);
	pfree(id.data);
}

/* Frees the store's shard writer, keeping its claim for the next open if it
 * can be kept (cx_sw_close_keep). */
static void
keep_claim(CxResident *r)
{
	uint8		digest[CX_SHA256_LEN];
	cx_sw_kept	kept;
	KeptClaim  *e;

	cx_sw_close_keep(r->w, &kept);
	if (kept.version == 0 || hash_get_num_entries(kept_claims) >= KEPT_CLAIMS_MAX)
		return;
	store_digest(r->os, digest);
	e = hash_search(kept_claims, digest, HASH_ENTER, NULL);
	e->kept = kept;
}

/* The store's kept claim, taken out of the table (cleared if none). */
static void
take_kept_claim(const CxOpenStore *os, cx_sw_kept *kept)
{
	uint8		digest[CX_SHA256_LEN];
	KeptClaim  *e;

	store_digest(os, digest);
	e = hash_search(kept_claims, digest, HASH_FIND, NULL);
	if (e == NULL)
	{
		memset(kept, 0, sizeof(*kept));
		return;
	}
	*kept = e->kept;
	hash_search(kept_claims, digest, HASH_REMOVE, NULL);
}

static void
fail_from(CxFailure *fail, const cx_err *err, CxFailHint hint)
{
	fail->code = err->code;
	fail->hint = hint;
	strlcpy(fail->msg, err->msg, sizeof(fail->msg));
}

/* "host pid N": who holds the epoch, recorded in claims. */
static const char *
writer_info(void)
{
	static char info[300];

	if (info[0] == '\0')
	{
		char		host[256];

		if (gethostname(host, sizeof(host)) != 0)
			strlcpy(host, "?", sizeof(host));
		host[sizeof(host) - 1] = '\0';
		snprintf(info, sizeof(info), "%s pid %d ctxstore writer", host, MyProcPid);
	}
	return info;
}

/*
 * For tests of cross-cluster commit order: CTXSTORE_TEST_CLOCK_OFFSET_MS in
 * the server's environment (like CTXSTORE_FAILPOINTS, never set in
 * production) shifts the clock the shard writers take commit times from,
 * as a clock that stepped forward would.  (libfaketime cannot do it:
 * PostgreSQL 15 forks background workers from a signal handler, where
 * libfaketime answers with the real time.)
 */
static int64
clock_offset_us(void)
{
	static bool read = false;
	static int64 offset = 0;

	if (!read)
	{
		const char *v = getenv("CTXSTORE_TEST_CLOCK_OFFSET_MS");

		offset = v != NULL ? strtoll(v, NULL, 10) * 1000 : 0;
		read = true;
	}
	return offset;
}

static int64_t
offset_clock_us(void)
{
	return (int64_t) (cx_unix_us_from_timestamptz(GetCurrentTimestamp()) +
					  clock_offset_us());
}

static void
sw_options(const CxStoreSettings *s, cx_sw_options *o)
{
	cx_sw_options_default(o);
	if (clock_offset_us() != 0)
		o->clock_us = offset_clock_us;
	o->writer_info = writer_info();
	o->key_column = s->key_column;
	o->unique_key = s->unique_key;
	o->upsert_column = s->upsert_key[0] != '\0' ? s->upsert_key : NULL;
	o->pending_generations_max = (uint32_t) s->pending_generations_max;
	o->fragment.compression_level = s->compression_level;
}

/* Whether a change from a to b needs the shard writer opened again. */
static bool
writer_settings_differ(const CxStoreSettings *a, const CxStoreSettings *b)
{
	return strcmp(a->key_column, b->key_column) != 0 ||
		strcmp(a->upsert_key, b->upsert_key) != 0 ||
		a->unique_key != b->unique_key ||
		a->pending_generations_max != b->pending_generations_max ||
		a->compression_level != b->compression_level;
}

/*
 * unsealed_since follows the memtable: set when it first holds rows (an
 * unsealed append, rows a claim replayed, an append whose outcome is
 * unknown), 0 once it is empty (a seal, or a later call settling that an
 * earlier seal had landed).  Brought in step after every shard-writer call,
 * so a timed seal is never due for an empty memtable (it would do nothing and
 * be due again at once: the writer would spin) nor missing for rows waiting.
 */
static void
track_unsealed(CxResident *r)
{
	if (r->w == NULL || cx_sw_memtable_rows(r->w) == 0)
		r->unsealed_since = 0;
	else if (r->unsealed_since == 0)
		r->unsealed_since = GetCurrentTimestamp();
	/* A writer dropped with rows (fenced, failed) leaves them in the WAL,
	 * sealed by the next claim: the record stays until one has sealed. */
	if (r->unsealed_recorded && r->w != NULL && cx_sw_memtable_rows(r->w) == 0)
	{
		cx_unsealed_forget(r->os);
		r->unsealed_recorded = false;
	}
}

/* Before the first unsealed append to an empty memtable: the record that
 * lets a restarted writer seal these rows without a client's help. */
static void
record_unsealed(CxResident *r)
{
	if (r->unsealed_recorded)
		return;
	cx_unsealed_record(r->os, &r->settings.source);
	r->unsealed_recorded = true;
}

/* Frees the shard writer (without sealing; keeping its claim if keep),
 * publishing its last counters before and its absence after. */
static void
writer_free(CxResident *r, bool keep)
{
	cx_err		ignored;

	cx_resident_publish(r);
	if (keep)
		keep_claim(r);
	else
		(void) cx_sw_close(r->w, false, &ignored);
	r->w = NULL;
	memset(&r->published_sw, 0, sizeof(r->published_sw));
	r->unsealed_since = 0;
	cx_resident_publish(r);
}

/* ---- what the store asks of the background work (cx_writer_background.c) ---- */

void
cx_merge_want(CxResident *r, uint64 until_gen)
{
	if (until_gen <= r->merge_until)
		return;
	if (r->merge_until == 0)
		r->merge_wanted_at = GetCurrentTimestamp();
	r->merge_until = until_gen;
}

void
cx_waiter_finish(CxWaiter *w, const CxFailure *fail)
{
	CxBatchHeader *hdr = dsm_segment_address(w->seg);
	int			requester;

	if (fail == NULL)
		hdr->requests[0].result = w->result;
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	requester = cx_slot_finish_locked(w->slotno, fail != NULL ? 1 : 0, 0, fail);
	LWLockRelease(CxWriter->lock);
	cx_set_latch(requester);
	dsm_detach(w->seg);
	dlist_delete(&w->node);
	pfree(w);
}

void
cx_waiters_fail(CxResident *r, const CxFailure *fail)
{
	dlist_mutable_iter it;

	dlist_foreach_modify(it, &r->waiters)
	{
		/* cppcheck-suppress nullPointer ; it takes offsetof() for a NULL dereference */
		cx_waiter_finish(dlist_container(CxWaiter, node, it.cur), fail);
	}
}

/*
 * The writer was fenced: drop it.  Its acknowledged unsealed rows are in the
 * WAL below the new claimant's fence marker, which replays them.  The next
 * request re-claims (an explicit, logged claim; no retry here).
 */
static void
writer_drop_fenced(CxResident *r, const cx_err *err)
{
	CxFailure	fail;

	ereport(LOG,
			errmsg("ctxstore writer: shard %s of store \"%s\" was claimed by another writer; dropping this writer, the next request to the store re-claims it",
				   cx_shard_id(), r->os->uri),
			errdetail_internal("%s", err->msg),
			errhint("Two clusters must not share a ctxstore.shard_id."));
	cx_worker_note_error(&CxWriter->writer, "store %s: %s", r->os->uri, err->msg);
	r->new_fenced++;
	r->reclaim = true;
	r->merge_until = 0;
	writer_free(r, false);
	fail_from(&fail, err, CX_HINT_FENCED);
	cx_waiters_fail(r, &fail);
}

/* After any shard-writer call: a fenced writer is dropped; a store whose
 * handle's credentials were refused is reopened with the next request's
 * (the WAL keeps what the dropped writer held). */
static cx_code
after_call(CxResident *r, cx_code rc, const cx_err *err)
{
	if (rc == CX_ERR_FENCED && r->w != NULL)
		writer_drop_fenced(r, err);
	if (rc == CX_ERR_AUTH)
		cx_stores_want_reopen(r->os);
	return rc;
}

/*
 * The open claimed the shard: counted and logged.  overtaken: the store had
 * a kept claim, but another writer claimed the shard while the store was
 * closed (a claim of this cluster's shard id elsewhere: as telling as being
 * fenced).
 */
static void
note_claim(CxResident *r, bool overtaken)
{
	r->new_claims++;
	r->claim_rows = cx_sw_get_stats(r->w)->replayed_rows;
	/* A previous writer may have left a record of this store: the claim
	 * sealed what it stood for, so it goes once the memtable is empty. */
	r->unsealed_recorded = true;
	ereport(LOG,
			errmsg("ctxstore writer: %s shard %s of store \"%s\" (epoch " UINT64_FORMAT ")",
				   r->reclaim || overtaken ? "re-claimed" : "claimed", cx_shard_id(),
				   r->os->uri, cx_sw_epoch(r->w)),
			overtaken ? errdetail("Another writer claimed the shard while this writer had the store closed.") : 0,
			overtaken ? errhint("Two clusters must not share a ctxstore.shard_id.") : 0);
	r->reclaim = false;
}

/* Opens the shard writer: resumes the store's kept claim if it is still
 * the shard's, else claims. */
static cx_code
writer_open(CxResident *r, CxFailure *fail)
{
	cx_sw_options opt;
	cx_sw_kept	kept;
	cx_err		err;

	sw_options(&r->settings, &opt);
	take_kept_claim(r->os, &kept);
	if (cx_sw_open_kept(r->os->handle, cx_shard_id(), &opt, &kept, &r->w,
						&err) != CX_OK)
	{
		ereport(LOG,
				errmsg("ctxstore writer: could not claim shard %s of store \"%s\"",
					   cx_shard_id(), r->os->uri),
				errdetail_internal("%s", err.msg));
		cx_worker_note_error(&CxWriter->writer, "store %s: %s", r->os->uri, err.msg);
		fail_from(fail, &err, err.code == CX_ERR_FENCED ? CX_HINT_FENCED : CX_HINT_NONE);
		return err.code;
	}
	if (cx_sw_get_stats(r->w)->claims == 0)
		elog(DEBUG1, "ctxstore writer: resumed the kept claim of shard %s of store \"%s\" (epoch " UINT64_FORMAT ")",
			 cx_shard_id(), r->os->uri, cx_sw_epoch(r->w));
	else
		note_claim(r, kept.version != 0);
	track_unsealed(r);
	return CX_OK;
}

/* Seals and closes the writer so that it is opened again with new
 * settings; false (fail filled) if the seal failed. */
static bool
writer_close_for_reopen(CxResident *r, CxFailure *fail)
{
	uint64		sealed;

	if (cx_resident_seal(r, &sealed, fail) != CX_OK)
		return false;
	if (r->w != NULL)
	{
		elog(LOG, "ctxstore writer: reopening shard %s of store \"%s\" with changed table options",
			 cx_shard_id(), r->os->uri);
		writer_free(r, true);
	}
	return true;
}

/* A new resident store; its first request's settings become its own
 * (take_settings, which also starts the cleanup clock). */
static CxResident *
resident_new(CxOpenStore *os)
{
	CxResident *r = MemoryContextAllocZero(TopMemoryContext, sizeof(CxResident));

	r->os = os;
	dlist_init(&r->waiters);
	os->state = r;
	return r;
}

/* The store's settings with req's applied, or false (fail filled) if req's
 * table contradicts another table about a store option. */
static bool
merged_settings(CxResident *r, const CxStoreSettings *req,
				CxStoreSettings *merged, CxTableRef *owners, CxFailure *fail)
{
	char		why[CX_ERR_MSG_LEN];

	*merged = r->settings;
	memcpy(owners, r->owners, sizeof(r->owners));
	if (cx_settings_apply(merged, owners, req, why, sizeof(why)))
		return true;
	cx_failure_set(fail, CX_ERR_INVALID, "%s", why);
	fail->hint = CX_HINT_STORE_OPTION;
	return false;
}

/* Takes the store's new settings; the cleanup clock restarts when its
 * interval changes. */
static void
take_settings(CxResident *r, const CxStoreSettings *s, const CxTableRef *owners)
{
	if (s->cleanup_interval_s != r->settings.cleanup_interval_s)
		r->next_cleanup = s->cleanup_interval_s > 0
			? TimestampTzPlusMilliseconds(GetCurrentTimestamp(), s->cleanup_interval_s * 1000L)
			: 0;
	r->settings = *s;
	memcpy(r->owners, owners, sizeof(r->owners));
}

/* The round in progress (its number), if any: what holds a store open. */
static uint64 round_number;
static bool round_running;

void
cx_resident_round_begin(void)
{
	round_number++;
	round_running = true;
}

void
cx_resident_round_end(void)
{
	round_running = false;
}

cx_code
cx_resident_get(const CxBatchView *req, CxResident **out, CxFailure *fail)
{
	CxOpenStore *os;
	CxResident *r;
	CxStoreSettings settings;
	CxTableRef	owners[CX_SETTINGS_MAX];
	cx_err		err;

	*out = NULL;
	if (cx_stores_get(req, &os, &err) != CX_OK)
	{
		fail_from(fail, &err, CX_HINT_NONE);
		return err.code;
	}
	r = os->state != NULL ? os->state : resident_new(os);
	if (!merged_settings(r, req->settings, &settings, owners, fail))
		return fail->code;
	if (r->w != NULL && writer_settings_differ(&r->settings, &settings) &&
		!writer_close_for_reopen(r, fail))
		return fail->code;
	take_settings(r, &settings, owners);
	if (r->w == NULL && writer_open(r, fail) != CX_OK)
		return fail->code;
	r->held_round = round_number;
	*out = r;
	return CX_OK;
}

uint32
cx_resident_pending(const CxResident *r)
{
	return r->w != NULL ? cx_sw_pending_generations(r->w) : 0;
}

uint64
cx_resident_newest_gen(const CxResident *r)
{
	return r->w != NULL ? cx_sw_newest_gen(r->w) : 0;
}

void
cx_resident_result(const CxResident *r, CxWriteResult *res)
{
	if (r->w == NULL)
		return;
	res->shard_version = cx_sw_manifest(r->w)->version;
	res->epoch = cx_sw_epoch(r->w);
	res->pending_generations = cx_sw_pending_generations(r->w);
}

/* Too many unmerged generations: a WARNING in the server log, at most once
 * a minute per store. */
static void
warn_pending(CxResident *r, uint32 pending)
{
	TimestampTz now = GetCurrentTimestamp();

	if (r->settings.pending_generations_warn <= 0 ||
		pending <= (uint32) r->settings.pending_generations_warn ||
		!TimestampDifferenceExceeds(r->last_warned, now, WARN_EVERY_MS))
		return;
	r->last_warned = now;
	ereport(WARNING,
			errmsg("ctxstore writer: shard %s of store \"%s\" has %u unmerged generations (pending_generations_warn is %d)",
				   cx_shard_id(), r->os->uri, pending,
				   r->settings.pending_generations_warn),
			errhint("Writes are refused from pending_generations_max (%d) on. Run ctxstore.merge_wal() on a table of the store, or check its merge_after_generations and cleanup_interval options.",
					r->settings.pending_generations_max));
}

static const char *
unix_us_to_str(int64 us)
{
	return timestamptz_to_str(cx_timestamptz_from_unix_us(us));
}

/*
 * The append's commit time ran ahead of this server's clock (a clock that
 * jumped forward, here or on the cluster that wrote the shard before, is
 * inherited: commit times only increase).  Across clusters the later commit
 * time wins a key, so this shard would win every conflict until real time
 * catches up: a WARNING with both times, at most once a minute per store.
 */
static void
warn_clock_ahead(CxResident *r)
{
	const cx_sw_stats *sw = cx_sw_get_stats(r->w);
	TimestampTz now = GetCurrentTimestamp();

	if (sw->clock_ahead_commits == r->published_sw.clock_ahead_commits ||
		!TimestampDifferenceExceeds(r->clock_warned_at, now, WARN_EVERY_MS))
		return;
	r->clock_warned_at = now;
	ereport(WARNING,
			errmsg("ctxstore writer: commit time of shard %s of store \"%s\" is %.3f s ahead of this server's clock",
				   cx_shard_id(), r->os->uri,
				   (double) (sw->clock_ahead_commit_us - sw->clock_ahead_clock_us) / 1e6),
			errdetail("Commit time %s, clock %s.",
					  unix_us_to_str(sw->clock_ahead_commit_us),
					  unix_us_to_str(sw->clock_ahead_clock_us)),
			errhint("A clock stepped forward, here or on the cluster that wrote this shard before; until real time catches up this shard wins every key written by two clusters. Keep the clocks of clusters that share a store synchronised (NTP)."));
}

/* After a seal: the warning, and the count-triggered merge. */
static void
after_seal(CxResident *r)
{
	uint32		pending = cx_sw_pending_generations(r->w);
	int			after = r->settings.merge_after_generations;

	track_unsealed(r);
	warn_pending(r, pending);
	if (after > 0 && pending >= (uint32) after)
		cx_merge_want(r, cx_resident_newest_gen(r));
}

static CxFailHint
hint_for(const CxResident *r, cx_code rc)
{
	if (rc == CX_ERR_FENCED)
		return CX_HINT_FENCED;
	if (rc == CX_ERR_LIMIT && r->w != NULL &&
		cx_sw_pending_generations(r->w) >= (uint32) r->settings.pending_generations_max)
		return CX_HINT_PENDING_LIMIT;
	return CX_HINT_NONE;
}

/* The writer was dropped (fenced) by an earlier call of this round. */
static cx_code
writer_gone(CxResident *r, CxFailure *fail)
{
	cx_failure_set(fail, CX_ERR_FENCED,
				   "shard %s of store %s was claimed by another writer during this commit",
				   cx_shard_id(), r->os->uri);
	fail->hint = CX_HINT_FENCED;
	return CX_ERR_FENCED;
}

cx_code
cx_resident_stage(CxResident *r, const cx_schema *schema, const uint8 *rows,
				  Size len, uint64 nrows, CxFailure *fail)
{
	cx_sw_resolved resolved;
	cx_err		err;
	cx_code		rc;

	if (r->w == NULL)
		return writer_gone(r, fail);
	rc = cx_sw_stage(r->w, schema, rows, len, nrows, &resolved, &err);
	if (rc != CX_OK)
	{
		fail_from(fail, &err, hint_for(r, rc));
		(void) after_call(r, rc, &err);
	}
	return rc;
}

void
cx_resident_unstage(CxResident *r)
{
	if (r->w != NULL)
		cx_sw_unstage(r->w);
}

bool
cx_resident_append_begin(CxResident *r, bool seal, CxAppend *a)
{
	memset(a, 0, sizeof(*a));
	a->r = r;
	a->seal = seal;
	/* Every row dropped (ON CONFLICT DO NOTHING): nothing to write. */
	if (r->w == NULL || cx_sw_staged_rows(r->w) == 0)
		return false;
	r->claim_rows = 0;
	if (!seal)
		record_unsealed(r);
	a->called = true;
	return true;
}

void
cx_resident_append_run(void *arg)
{
	CxAppend   *a = arg;

	a->rc = cx_sw_append_staged(a->r->w, a->seal, &a->commit_ts, &a->err);
}

cx_code
cx_resident_append_end(CxAppend *a, CxWriteResult *res, CxFailure *fail)
{
	CxResident *r = a->r;

	if (!a->called && r->w == NULL)
		return writer_gone(r, fail);
	if (!a->called)
	{
		cx_resident_result(r, res);
		return CX_OK;
	}
	if (a->rc != CX_OK)
	{
		fail_from(fail, &a->err, hint_for(r, a->rc));
		(void) after_call(r, a->rc, &a->err);
		track_unsealed(r);
		return a->rc;
	}
	res->commit_ts = a->commit_ts;
	r->new_appends++;
	warn_clock_ahead(r);
	res->visible = a->seal;
	if (a->seal)
		after_seal(r);
	else
		track_unsealed(r);
	cx_resident_result(r, res);
	return CX_OK;
}

/* A seal or drain failed: fail filled, logged, noted for the view, and a
 * fenced writer dropped (after_call).  Returns the code. */
static cx_code
background_call_failed(CxResident *r, cx_code rc, const cx_err *err,
					   const char *what, CxFailure *fail)
{
	fail_from(fail, err, hint_for(r, rc));
	ereport(LOG,
			errmsg("ctxstore writer: could not %s shard %s of store \"%s\"",
				   what, cx_shard_id(), r->os->uri),
			errdetail_internal("%s", err->msg));
	cx_worker_note_error(&CxWriter->writer, "store %s: %s", r->os->uri, err->msg);
	rc = after_call(r, rc, err);
	track_unsealed(r);
	return rc;
}

cx_code
cx_resident_seal(CxResident *r, uint64 *sealed_rows, CxFailure *fail)
{
	cx_err		err;
	cx_code		rc;

	/* Rows a claim just replayed were sealed by it: reported once. */
	*sealed_rows = r->claim_rows;
	r->claim_rows = 0;
	if (r->w == NULL || cx_sw_memtable_rows(r->w) == 0)
	{
		track_unsealed(r);
		return CX_OK;
	}
	*sealed_rows += cx_sw_memtable_rows(r->w);
	rc = cx_sw_seal(r->w, &err);
	if (rc != CX_OK)
	{
		*sealed_rows = 0;
		return background_call_failed(r, rc, &err, "seal", fail);
	}
	after_seal(r);
	return CX_OK;
}

cx_code
cx_resident_drain(CxResident *r, uint64 merged_through, CxFailure *fail)
{
	cx_err		err;
	cx_code		rc;

	if (r->w == NULL)
		return CX_OK;
	rc = cx_sw_drain_through(r->w, merged_through, &err);
	track_unsealed(r);
	if (rc != CX_OK)
		return background_call_failed(r, rc, &err, "drain merged generations of", fail);
	return CX_OK;
}

/*
 * A drain is a shard-manifest commit between two rounds, on the appends'
 * path, while every seal's commit leaves merged generations out anyway: so
 * a merge nobody waits for is only noted, and the writer drains (a commit
 * only if a listed generation is still merged) once this long has passed
 * without a seal doing it, so that an idle shard's manifest sheds them too.
 */
#define LAZY_DRAIN_MS 1000

void
cx_resident_note_merged(CxResident *r, uint64 merged_through)
{
	CxFailure	fail;
	cx_err		err;

	if (r->w == NULL)
		return;
	if (cx_sw_note_merged(r->w, merged_through, &err) != CX_OK)
	{
		(void) background_call_failed(r, err.code, &err,
									  "note merged generations of", &fail);
		return;
	}
	r->drain_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											  LAZY_DRAIN_MS);
}

CxResident *
cx_resident_find(const char *uri)
{
	CxOpenStore *os = cx_stores_find(uri);

	return os != NULL ? os->state : NULL;
}

uint64
cx_resident_cache_bytes(void)
{
	uint64		bytes = cx_stores_cache_bytes();

	for (int i = 0; i < cx_stores_max(); i++)
	{
		CxOpenStore *os = cx_stores_at(i);
		CxResident *r = os != NULL ? os->state : NULL;

		if (r != NULL && r->w != NULL)
			bytes += cx_sw_cache_bytes(r->w);
	}
	return bytes;
}

/* The shard writer's counters (since it was opened) as deltas, and the
 * shard as it sees it now. */
static void
publish_shard(CxWriterStoreStats *st, CxResident *r)
{
	const cx_sw_stats *sw = cx_sw_get_stats(r->w);

	st->wal_entries += sw->wal_entries - r->published_sw.wal_entries;
	st->seals += sw->seals - r->published_sw.seals;
	st->drains += sw->drains - r->published_sw.drains;
	st->hints += sw->hints - r->published_sw.hints;
	st->replayed_entries += sw->replayed_entries - r->published_sw.replayed_entries;
	st->clock_ahead_commits += sw->clock_ahead_commits - r->published_sw.clock_ahead_commits;
	st->clock_ahead_max_us = Max(st->clock_ahead_max_us, sw->clock_ahead_max_us);
	r->published_sw = *sw;
	st->epoch = cx_sw_epoch(r->w);
	st->shard_version = cx_sw_manifest(r->w)->version;
	st->pending_generations = cx_sw_pending_generations(r->w);
	st->memtable_rows = cx_sw_memtable_rows(r->w);
}

/* Counter deltas and gauges into the store's shared entry. */
void
cx_resident_publish_locked(CxResident *r)
{
	CxStoreStatsEntry *e = cx_stats_entry(r->os->uri, true);
	CxWriterStoreStats *st;

	if (e == NULL)
		return;
	st = &e->stats;
	st->store_commits += r->new_appends;
	st->claims += r->new_claims;
	st->fenced += r->new_fenced;
	r->new_appends = r->new_claims = r->new_fenced = 0;
	cx_counters_add_delta((uint64 *) &st->writer_requests,
						  (const uint64 *) &r->os->handle->stats,
						  (uint64 *) &r->os->published,
						  CX_NCOUNTERS(cx_objstats));
	st->writer_open = r->w != NULL;
	if (r->w != NULL)
		publish_shard(st, r);
}

void
cx_resident_publish(CxResident *r)
{
	LWLockAcquire(CxWriter->lock, LW_EXCLUSIVE);
	cx_resident_publish_locked(r);
	LWLockRelease(CxWriter->lock);
}

/* The store is being closed: seal (deferred rows become visible), close the
 * shard writer keeping its claim, fail whoever waits on the store. */
static void
resident_closing(CxOpenStore *os)
{
	CxResident *r = os->state;
	CxFailure	fail;
	uint64		sealed;

	if (r == NULL)
		return;
	(void) cx_resident_seal(r, &sealed, &fail);
	if (r->w != NULL)
		writer_free(r, true);
	else
		cx_resident_publish(r);
	cx_failure_set(&fail, CX_ERR_IO,
				   "the ctxstore writer closed store %s before the request finished",
				   os->uri);
	cx_waiters_fail(r, &fail);
	pfree(r);
	os->state = NULL;
}

/*
 * Busy stores are not closed to make room: one whose merge or waiters ride
 * on it, and one the round in progress found (a group of it holds the
 * resident and appends its staged rows; closing it would drop them).
 */
static bool
resident_busy(const CxOpenStore *os)
{
	CxResident *r = os->state;

	return r != NULL && (r->merge_running || !dlist_is_empty(&r->waiters) ||
						 (round_running && r->held_round == round_number));
}

void
cx_resident_shutdown(void)
{
	cx_stores_close_all();
}
