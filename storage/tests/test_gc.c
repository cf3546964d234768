/*
 * test_gc.c — garbage collection (ctxstore/lifecycle.h, cx_gc*.c): what
 * retained versions reference survives and stays readable, replaced
 * fragments and orphans go only after the grace period, unknown keys are
 * reported and kept, a dry run deletes nothing, deletes come in batches;
 * the retention record a run puts before it deletes (cx_gc_record.h,
 * cx_gc_collected): cumulative, not written by a dry run, kept whole by
 * racing runs, its decoder strict.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctxstore/iceberg.h"
#include "ctxstore/lifecycle.h"
#include "maintenance/cx_gc_record.h"
#include "merge/cx_merge.h"
#include "objstore/cx_layout.h"
#include "table/cx_commit.h"
#include "table/cx_key_index.h"
#include "util/cx_clock.h"
#include "util/cx_crc32c.h"
#include "util/cx_failpoint.h"
#include "util/cx_frame.h"
#include "memwal/cx_shard_manifest.h"
#include "cx_test.h"
#include "cx_test_emu.h"
#include "mw_util.h"

/* Three merged and drained rounds of 10 rows: base versions 1 (register),
 * 2 (create) and 3 to 5, each merge adding one fragment; shard versions 1
 * to 7, the newest with no generation left. */
static cx_code
three_merges(cx_objstore *s, cx_err *err)
{
	cx_sw_options o;
	cx_shardwriter *w;
	cx_merge_result res;
	cx_code		rc;

	/* Generations of their own, so that draining leaves them as garbage. */
	mw_writer_options(true, &o);
	o.inline_generation_max = 0;
	if ((rc = cx_sw_open(s, "a", &o, &w, err)) != CX_OK)
		return rc;
	for (int g = 0; g < 3 && rc == CX_OK; g++)
	{
		rc = mw_put(w, "k", g * 10, 10, g, true, err);
		if (rc == CX_OK)
			rc = cx_merge_shard(s, "a", NULL, &res, err);
		if (rc == CX_OK)
			rc = mw_drain(s, w, err);
	}
	if (rc == CX_OK)
		return cx_sw_close(w, false, err);
	(void) cx_sw_close(w, false, err);
	return rc;
}

/* A stand-in for compaction's edit: the first fragment is replaced (its
 * rows vanish with it, which is all GC cares about). */
static cx_code
drop_first_fragment(void *arg, const cx_manifest *base, cx_manifest *next,
					cx_err *err)
{
	(void) arg;
	(void) base;
	if (next->nfragments == 0 || (next->dvs != NULL && next->dvs[0].n > 0))
		return cx_err_set(err, CX_ERR_INVALID, "test store not as expected");
	cx_fragment_info_free(&next->fragments[0]);
	memmove(&next->fragments[0], &next->fragments[1],
			(next->nfragments - 1) * sizeof(next->fragments[0]));
	if (next->dvs != NULL)
		memmove(&next->dvs[0], &next->dvs[1],
				(next->nfragments - 1) * sizeof(next->dvs[0]));
	next->nfragments--;
	return CX_OK;
}

static cx_gc_options
gc_opts(uint32_t retain_versions, int64_t retain_interval_us, int64_t grace_us)
{
	cx_gc_options o;

	cx_gc_options_default(&o);
	o.retain_versions = retain_versions;
	o.retain_interval_us = retain_interval_us;
	o.grace_us = grace_us;
	return o;
}

static bool
exists(cx_objstore *s, const char *key)
{
	uint64_t	size;
	cx_err		err;

	return cx_obj_head(s, key, &size, &err) == CX_OK;
}

static uint32_t
rows_at(cx_objstore *s, uint64_t version)
{
	mw_rows		r;
	uint32_t	n;
	cx_err		err;

	if (mw_scan_version(s, version, NULL, &r, &err) != CX_OK)
		return UINT32_MAX;
	n = r.n;
	mw_rows_free(&r);
	return n;
}

/*
 * Version 6 replaces version 5's first fragment; only versions 3 to 5 still
 * name it.  It survives while any of them is retained (by count, interval
 * or pin) or while it is younger than the grace, and every retained version
 * stays readable; then it goes.
 */
CX_TEST(gc_replaced_fragment_lives_as_long_as_a_retained_version)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m;
	char		replaced[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	uint64_t	v;
	uint64_t	pin = 4;
	cx_gc_options o;
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	REQUIRE(m->version == 5 && m->nfragments == 3);
	snprintf(replaced, sizeof(replaced), "%s", m->fragments[0].path);
	cx_manifest_free(m);
	REQUIRE_OK(cx_commit(s, "compact", drop_first_fragment, NULL, NULL, &v,
						 &err), &err);
	REQUIRE(v == 6);

	/* by count: versions 4..6 */
	o = gc_opts(3, 0, 0);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.versions_retained == 3);
	CHECK(exists(s, replaced));
	CHECK(rows_at(s, 4) == 20 && rows_at(s, 6) == 20);
	/* by interval: all of them are recent */
	o = gc_opts(1, CX_GC_DEFAULT_RETAIN_INTERVAL_US, 0);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.versions_retained == 3 && exists(s, replaced));
	/* by pin */
	o = gc_opts(1, 0, 0);
	o.pinned = &pin;
	o.npinned = 1;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.versions_retained == 2 && exists(s, replaced));
	CHECK(rows_at(s, 4) == 20);
	/* version 5, between two retained, stays: no gap in the versions */
	cx_manifest_key(5, key, sizeof(key));
	CHECK(exists(s, key));
	/* unreferenced but younger than the grace */
	o = gc_opts(1, 0, CX_GC_DEFAULT_GRACE_US);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_garbage == 0 && exists(s, replaced));
	/* past the grace: the fragment and versions 4 and 5 go (the runs
	 * before took the older manifests and the drained shard state) */
	o = gc_opts(1, 0, 0);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.versions_retained == 1);
	CHECK(res.objects_deleted == 3 && res.objects_garbage == 3);
	CHECK(!exists(s, replaced));
	CHECK(rows_at(s, 0) == 20);
	CHECK(exists(s, CX_LATEST_HINT_KEY));
	cx_obj_close(s);
}

/* An Iceberg snapshot of version 5 keeps its data files (version 5's
 * fragments) although no retained version names the replaced one. */
CX_TEST(gc_keeps_what_iceberg_snapshots_list)
{
	cx_objstore *s = mw_open_store();
	cx_manifest *m;
	char		replaced[CX_KEY_MAX + 1];
	cx_iceberg_result pub;
	uint64_t	v;
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &pub, &err), &err);
	CHECK(pub.published && pub.base_version == 5);
	cx_iceberg_result_free(&pub);
	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	snprintf(replaced, sizeof(replaced), "%s", m->fragments[0].path);
	cx_manifest_free(m);
	REQUIRE_OK(cx_commit(s, "compact", drop_first_fragment, NULL, NULL, &v,
						 &err), &err);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.versions_retained == 2);
	CHECK(exists(s, replaced));
	CHECK(rows_at(s, 5) == 30);
	CHECK(exists(s, CX_ICEBERG_VERSION_HINT_KEY));
	cx_obj_close(s);
}

/*
 * Versions 1 to 5, Iceberg published from 5, then 6 to 8; version 2 is
 * pinned.  With retain_versions 2, GC retains 8, 7, the Iceberg snapshot's
 * 5 and the pinned 2: not 6, 4, 3 and 1, although 6, 4 and 3 sit between
 * retained ones and keep their manifests.  GC retains exactly those.
 */
CX_TEST(gc_retained_versions_skip_those_between_pinned_ones)
{
	static const uint64_t expected[] = {8, 7, 5, 2};
	cx_objstore *s = mw_open_store();
	cx_iceberg_result pub;
	uint64_t	pin = 2;
	uint64_t	v;
	char		key[CX_KEY_MAX + 1];
	uint64_t   *retained;
	size_t		n;
	cx_gc_options o = gc_opts(2, 0, 0);
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	REQUIRE_OK(cx_iceberg_publish(s, &pub, &err), &err);
	REQUIRE(pub.published && pub.base_version == 5);
	cx_iceberg_result_free(&pub);
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(cx_commit(s, "compact", drop_first_fragment, NULL, NULL,
							 &v, &err), &err);
	REQUIRE(v == 8);
	o.pinned = &pin;
	o.npinned = 1;
	REQUIRE_OK(cx_gc_retained_versions(s, &o, cx_clock_now_us(), &retained,
									   &n, &err), &err);
	CHECK(n == 4);
	for (size_t k = 0; k < n && k < 4; k++)
		CHECK(retained[k] == expected[k]);
	free(retained);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.versions_retained == 4);
	CHECK(rows_at(s, 5) == 30 && rows_at(s, 2) == 0);
	/* no gap in the versions: 6 stays listed, though not retained */
	cx_manifest_key(6, key, sizeof(key));
	CHECK(exists(s, key));
	cx_obj_close(s);
}

static bool
shard_version_exists(cx_objstore *s, uint64_t version)
{
	char		key[CX_KEY_MAX + 1];

	cx_shard_manifest_key("a", version, key, sizeof(key));
	return exists(s, key);
}

/*
 * Inline generations live in the shard-manifest versions that sealed them:
 * GC keeps those (and, versions going as a prefix, the ones after them)
 * while a retained version lists the generation, and removes them once it
 * is merged and drained.
 */
CX_TEST(gc_keeps_the_versions_carrying_inline_generations_until_merged)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *w;
	cx_merge_result res;
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result gc;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &w, &err), &err);
	/* claim: version 1; three seals: versions 2 to 4, each carrying one */
	for (int g = 0; g < 3; g++)
		REQUIRE_OK(mw_put(w, "k", g * 10, 10, g, true, &err), &err);
	REQUIRE(cx_sw_manifest(w)->version == 4 &&
			cx_sw_manifest(w)->gens[0].carrier == 2);
	REQUIRE_OK(cx_gc(s, &o, NULL, &gc, &err), &err);
	CHECK(!shard_version_exists(s, 1));
	CHECK(shard_version_exists(s, 2) && shard_version_exists(s, 3));
	CHECK(rows_at(s, 0) == 30);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(mw_drain(s, w, &err), &err);
	REQUIRE_OK(cx_gc(s, &o, NULL, &gc, &err), &err);
	CHECK(!shard_version_exists(s, 2) && !shard_version_exists(s, 4));
	CHECK(shard_version_exists(s, cx_sw_manifest(w)->version));
	CHECK(rows_at(s, 0) == 30);
	REQUIRE_OK(cx_sw_close(w, false, &err), &err);
	cx_obj_close(s);
}

/* An object written but never committed (a crashed upload). */
static cx_code
put_orphan(cx_objstore *s, uint8_t tag, char *key, cx_err *err)
{
	uint8_t		id[CX_FRAGMENT_ID_LEN];

	memset(id, tag, sizeof(id));
	cx_layout_fragment(id, key);
	return cx_obj_put(s, key, "orphan", 6, CX_PUT_OVERWRITE, err);
}

CX_TEST(gc_dry_run_reports_what_the_real_run_deletes)
{
	cx_objstore *s = mw_open_store();
	char		orphan[CX_FRAGMENT_KEY_SIZE];
	char		drained[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	cx_shard_manifest *sm;
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result dry;
	cx_gc_result real;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	REQUIRE_OK(cx_shard_manifest_load(s, "a", 6, &sm, &err), &err);
	REQUIRE(sm->ngens == 1);
	snprintf(drained, sizeof(drained), "%s", sm->gens[0].fragment.path);
	cx_shard_manifest_free(sm);
	REQUIRE_OK(put_orphan(s, 0xab, orphan, &err), &err);
	REQUIRE_OK(cx_obj_put(s, "data/notes.txt", "x", 1, CX_PUT_OVERWRITE, &err),
			   &err);
	o.dry_run = true;
	REQUIRE_OK(cx_gc(s, &o, NULL, &dry, &err), &err);
	/* the orphan, base versions 1..4, shard versions 1..6 and the three
	 * drained generations */
	CHECK(dry.objects_garbage == 14 && dry.objects_deleted == 0);
	CHECK(dry.objects_unknown == 1);
	CHECK(exists(s, orphan) && exists(s, drained));
	o.dry_run = false;
	REQUIRE_OK(cx_gc(s, &o, NULL, &real, &err), &err);
	CHECK(real.objects_garbage == dry.objects_garbage);
	CHECK(real.bytes_garbage == dry.bytes_garbage);
	CHECK(real.objects_deleted == dry.objects_garbage);
	CHECK(real.bytes_deleted == dry.bytes_garbage);
	CHECK(!exists(s, orphan) && !exists(s, drained));
	CHECK(exists(s, "data/notes.txt"));
	/* the shard's newest version, hint and WAL entry at the replay point */
	cx_shard_manifest_key("a", 7, key, sizeof(key));
	CHECK(exists(s, key));
	cx_layout_shard_hint("a", key);
	CHECK(exists(s, key));
	CHECK(exists(s, "_shards/a/wal/00000000000000000001.wal"));
	cx_shard_manifest_key("a", 6, key, sizeof(key));
	CHECK(!exists(s, key));
	CHECK(rows_at(s, 0) == 30);
	cx_obj_close(s);
}

typedef struct progress_log
{
	int			calls;
	int			stop_after;		/* 0: never */
} progress_log;

static bool
log_progress(void *arg, const char *phase, uint64_t done, uint64_t total)
{
	progress_log *p = arg;

	(void) phase;
	(void) done;
	(void) total;
	p->calls++;
	return p->stop_after == 0 || p->calls < p->stop_after;
}

CX_TEST(gc_deletes_in_batches_and_stops_when_asked)
{
	cx_objstore *s = mw_open_store();
	char		key[CX_FRAGMENT_KEY_SIZE];
	progress_log log = {0, 2};
	cx_job_progress progress = {log_progress, &log};
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	for (int i = 0; i < 50; i++)
		REQUIRE_OK(put_orphan(s, (uint8_t) (i + 1), key, &err), &err);
	o.batch = 7;
	/* a dry run reports per batch too, and stops as well: after the 4
	 * base manifests (a batch ends with its prefix) and 6 shard ones */
	o.dry_run = true;
	CHECK_CODE(cx_gc(s, &o, &progress, &res, &err), CX_ERR_CANCELED);
	CHECK(res.objects_garbage == 10 && res.objects_deleted == 0);
	o.dry_run = false;
	log.calls = 0;
	CHECK_CODE(cx_gc(s, &o, &progress, &res, &err), CX_ERR_CANCELED);
	CHECK(res.objects_deleted == 10);
	log.stop_after = 0;
	log.calls = 0;
	REQUIRE_OK(cx_gc(s, &o, &progress, &res, &err), &err);
	/* left: 53 under data/ (orphans, drained generations) in 7 full
	 * batches and one of 4 */
	CHECK(res.objects_deleted == 53);
	CHECK(log.calls == 7 + 1);
	CHECK(rows_at(s, 0) == 30);
	cx_obj_close(s);
}

/* Commits slipped into a GC run at its first progress report: a merge
 * (a new fragment, shard and base versions) and a compaction stand-in
 * (a fragment the old newest version still lists replaced). */
typedef struct mid_sweep
{
	cx_objstore *store;
	bool		done;
	cx_code		rc;
	cx_err		err;
} mid_sweep;

static bool
commit_mid_sweep(void *arg, const char *phase, uint64_t done, uint64_t total)
{
	mid_sweep  *m = arg;
	cx_shardwriter *w;
	cx_merge_result res;
	uint64_t	v;

	(void) phase;
	(void) done;
	(void) total;
	if (m->done)
		return true;
	m->done = true;
	m->rc = mw_writer(m->store, "a", true, &w, &m->err);
	if (m->rc != CX_OK)
		return true;
	m->rc = mw_put(w, "k", 30, 10, 3, true, &m->err);
	if (m->rc == CX_OK)
		m->rc = cx_merge_shard(m->store, "a", NULL, &res, &m->err);
	if (m->rc == CX_OK)
		m->rc = mw_drain(m->store, w, &m->err);
	if (m->rc == CX_OK)
		m->rc = cx_sw_close(w, false, &m->err);
	else
		(void) cx_sw_close(w, false, &m->err);
	if (m->rc == CX_OK)
		m->rc = cx_commit(m->store, "compact", drop_first_fragment, NULL, NULL,
						  &v, &m->err);
	return true;
}

/* Every object the newest base and shard versions reference exists. */
static void
check_newest_complete(cx_objstore *s)
{
	cx_manifest *m;
	cx_shard_manifest *sm;
	cx_keyindex ix;
	cx_err		err;

	REQUIRE_OK(cx_manifest_load_latest(s, &m, &err), &err);
	for (uint32_t f = 0; f < m->nfragments; f++)
		CHECK(exists(s, m->fragments[f].path));
	REQUIRE_OK(cx_keyindex_load(m, &ix, &err), &err);
	for (uint32_t i = 0; i < ix.n; i++)
		CHECK(exists(s, ix.segs[i].path));
	cx_keyindex_free(&ix);
	cx_manifest_free(m);
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "a", 0, &sm, &err), &err);
	for (uint32_t g = 0; g < sm->ngens; g++)
		CHECK(exists(s, sm->gens[g].fragment.path));
	cx_shard_manifest_free(sm);
}

/*
 * A merge and a compaction commit while GC sweeps (keeping one version):
 * what the versions they commit reference is either referenced by a
 * version GC retains or younger than the grace, so nothing of it goes; the
 * orphans, older than the grace, do.  The grace is what protects them, not
 * the run's start time: file systems stamp mtimes with a coarse clock that
 * can lag the one GC reads by a tick, and S3 and Azure in whole seconds, so
 * with a grace of 0 an object written just after the run began can look
 * older than it.
 */
#define GRACE_US 1000000

CX_TEST(gc_keeps_what_a_version_committed_during_the_sweep_references)
{
	cx_objstore *s = mw_open_store();
	char		key[CX_FRAGMENT_KEY_SIZE];
	mid_sweep	mid = {0};
	cx_job_progress progress = {commit_mid_sweep, &mid};
	cx_gc_options o = gc_opts(1, 0, GRACE_US);
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	for (int i = 0; i < 12; i++)
		REQUIRE_OK(put_orphan(s, (uint8_t) (i + 1), key, &err), &err);
	usleep(GRACE_US + 200000);	/* the orphans are past the grace */
	mid.store = s;
	o.batch = 4;
	REQUIRE_OK(cx_gc(s, &o, &progress, &res, &err), &err);
	REQUIRE(mid.done);
	REQUIRE_OK(mid.rc, &mid.err);
	CHECK(!exists(s, key));
	check_newest_complete(s);
	/* 40 rows merged, the compaction stand-in's 10 gone with their fragment */
	CHECK(rows_at(s, 0) == 30);
	/* the next run, which sees the new versions, keeps them complete too */
	usleep(GRACE_US + 200000);	/* what they replaced is past the grace */
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_deleted > 0);
	check_newest_complete(s);
	CHECK(rows_at(s, 0) == 30);
	cx_obj_close(s);
}

/* Forks a compaction of s that is killed right after uploading its
 * outputs, before its commit; true if it died there. */
static bool
compaction_killed_before_commit(cx_objstore *s)
{
	pid_t		pid = fork();
	int			status;

	if (pid < 0)
		return false;
	if (pid == 0)
	{
		cx_compact_options o;
		cx_compact_result res;
		cx_err		err;

		cx_compact_options_default(&o);
		o.holder = "crashed";
		o.force = true;
		if (cx_failpoint_set("compact.after_outputs=crash", &err) != CX_OK)
			_exit(2);
		(void) cx_compact(s, &o, NULL, &res, &err);
		_exit(3);
	}
	return waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
		WTERMSIG(status) == SIGKILL;
}

static uint32_t
data_objects(cx_objstore *s)
{
	cx_test_listed l = {0};
	cx_err		err;

	if (cx_obj_list(s, CX_FRAGMENT_PREFIX, cx_test_collect, &l, &err) != CX_OK)
		return UINT32_MAX;
	return (uint32_t) l.n;
}

/* A compaction killed before its commit leaves its outputs under data/,
 * orphans GC deletes once past the grace, and its lease, which GC keeps
 * (the job's next run takes it over once expired). */
CX_TEST(gc_deletes_a_crashed_compactions_outputs_not_its_lease)
{
	cx_objstore *s = mw_open_store();
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	/* the drained generations go: the three base fragments stay */
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	REQUIRE(data_objects(s) == 3);
	REQUIRE(compaction_killed_before_commit(s));
	REQUIRE(data_objects(s) > 3 && exists(s, "_compaction/lease"));
	/* young, they stay */
	o.grace_us = CX_GC_DEFAULT_GRACE_US;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_garbage == 0 && data_objects(s) > 3);
	o.grace_us = 0;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(data_objects(s) == 3 && res.objects_unknown == 0);
	CHECK(exists(s, "_compaction/lease"));
	CHECK(rows_at(s, 0) == 30);
	cx_obj_close(s);
}

CX_TEST(gc_reads_mtimes_from_the_listing)
{
	cx_objstore *s = mw_open_store();

	REQUIRE(s != NULL);
	cx_test_gc_reads_listed_mtimes(s, 20);
	cx_obj_close(s);
}

/* WAL entries below the replay point of the shard's newest version are
 * sealed into generations: garbage; from the replay point on they stay. */
CX_TEST(gc_wal_below_the_replay_point_goes)
{
	cx_objstore *s = mw_open_store();
	cx_shard_manifest *sm;
	cx_shard_manifest *winner;
	bool		unknown;
	char		prefix[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	cx_vseq		wal;
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	cx_layout_wal("a", prefix, &wal);
	for (uint64_t seq = 2; seq <= 4; seq++)
	{
		cx_vseq_key(&wal, seq, key);
		REQUIRE_OK(cx_obj_put(s, key, "w", 1, CX_PUT_OVERWRITE, &err), &err);
	}
	/* a hand-made next shard version that sealed through entry 2 */
	REQUIRE_OK(cx_shard_manifest_load_latest(s, "a", 0, &sm, &err), &err);
	sm->version++;
	sm->replay_seq = 3;
	REQUIRE_OK(cx_shard_manifest_put(s, sm, &winner, &unknown, &err), &err);
	REQUIRE(winner == NULL);
	cx_shard_manifest_free(sm);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	for (uint64_t seq = 1; seq <= 4; seq++)
	{
		cx_vseq_key(&wal, seq, key);
		CHECK(exists(s, key) == (seq >= 3));
	}
	cx_obj_close(s);
}

/* Plants a temporary file of a local store's upload of data/<name>, last
 * written age_s seconds ago; its path in path (PATH_MAX bytes). */
static void
plant_temporary(const char *name, time_t age_s, char *path)
{
	const uint8_t random[CX_TEMP_RANDOM_LEN] = {1, 2, 3, 4, 5, 6, 7, (uint8_t) age_s};
	char		object[PATH_MAX];
	struct timespec times[2];
	int			fd;

	snprintf(object, sizeof(object), "%s/store/data/%s", cx_test_tmpdir(), name);
	cx_layout_temporary(object, random, path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "partial", 7) != 7 || close(fd) != 0)
		abort();
	clock_gettime(CLOCK_REALTIME, &times[0]);
	times[0].tv_sec -= age_s;
	times[1] = times[0];
	if (utimensat(AT_FDCWD, path, times, 0) != 0)
		abort();
}

/* A crashed upload's temporary file (no O_TMPFILE) older than the grace is
 * garbage: counted, and deleted unless in a dry run; one younger than the
 * grace (an upload in progress) is neither.  Neither is a listed object. */
CX_TEST(gc_deletes_temporary_files_of_crashed_uploads_after_the_grace)
{
	cx_objstore *s = mw_open_store();
	char		old[PATH_MAX];
	char		young[PATH_MAX];
	cx_gc_options o = gc_opts(1, 0, 3600 * INT64_C(1000000));
	cx_gc_result before;
	cx_gc_result res;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	o.dry_run = true;
	REQUIRE_OK(cx_gc(s, &o, NULL, &before, &err), &err);
	plant_temporary("crashed.parquet", 7200, old);
	plant_temporary("uploading.parquet", 60, young);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_listed == before.objects_listed);
	CHECK(res.objects_garbage == before.objects_garbage + 1);
	CHECK(res.bytes_garbage == before.bytes_garbage + 7);
	CHECK(res.objects_deleted == 0 && access(old, F_OK) == 0);
	o.dry_run = false;
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.objects_garbage == before.objects_garbage + 1);
	CHECK(res.objects_deleted == res.objects_garbage);
	CHECK(access(old, F_OK) != 0 && access(young, F_OK) == 0);
	CHECK(rows_at(s, 0) == 30);
	cx_obj_close(s);
}

/* Whether shard_id's dirty marker numbered version exists; with plant, puts
 * it first, as a writer that vanished or a delete that failed leaves it. */
static bool
marker(cx_objstore *s, const char *shard_id, uint64_t version, bool plant)
{
	char		prefix[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	cx_vseq		q;
	cx_err		err;

	cx_layout_dirty_markers(shard_id, prefix, &q);
	cx_vseq_key(&q, version, key);
	if (plant && cx_obj_put(s, key, "", 0, CX_PUT_OVERWRITE, &err) != CX_OK)
		return false;
	return exists(s, key);
}

/*
 * Dirty markers left behind on shard a, drained empty at version V: one
 * numbered V (a delete that failed) goes; one numbered V + 1 (a seal whose
 * put failed: its version may still land) stays, as does the marker of
 * shard b, which lists a generation.  After a seals again at V + 1, a
 * marker numbered V left again goes and the seal's own stays: readers
 * still read every row.
 */
CX_TEST(gc_deletes_dirty_markers_no_generation_needs)
{
	cx_objstore *s = mw_open_store();
	cx_shardwriter *a;
	cx_shardwriter *b;
	cx_merge_result res;
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result gc;
	mw_rows		r;
	uint64_t	drained;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
	REQUIRE_OK(mw_writer(s, "b", true, &b, &err), &err);
	REQUIRE_OK(mw_put(a, "a", 0, 10, 1, true, &err), &err);
	REQUIRE_OK(mw_put(b, "b", 0, 10, 1, true, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
	REQUIRE_OK(mw_drain(s, a, &err), &err);
	drained = cx_sw_manifest(a)->version;
	REQUIRE(cx_sw_manifest(a)->ngens == 0 && cx_sw_manifest(b)->ngens == 1);
	REQUIRE(marker(s, "a", drained, true) && marker(s, "a", drained + 1, true));
	REQUIRE(marker(s, "b", cx_sw_manifest(b)->version, false));

	REQUIRE_OK(cx_gc(s, &o, NULL, &gc, &err), &err);
	CHECK(!marker(s, "a", drained, false));
	CHECK(marker(s, "a", drained + 1, false));
	CHECK(marker(s, "b", cx_sw_manifest(b)->version, false));

	REQUIRE_OK(mw_put(a, "a", 10, 5, 2, true, &err), &err);
	REQUIRE(cx_sw_manifest(a)->version == drained + 1);
	REQUIRE(marker(s, "a", drained, true));
	REQUIRE_OK(cx_gc(s, &o, NULL, &gc, &err), &err);
	CHECK(!marker(s, "a", drained, false));
	CHECK(marker(s, "a", drained + 1, false));
	REQUIRE_OK(mw_scan(s, NULL, &r, &err), &err);
	CHECK(r.n == 25 && mw_count(&r, "a12", NULL) == 1);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(a, false, &err), &err);
	REQUIRE_OK(cx_sw_close(b, false, &err), &err);
	cx_obj_close(s);
}

/*
 * A reader keeps the shard manifest it last read; GC (retain_versions 1)
 * may then remove that version and its successor both, once two newer ones
 * exist.  The reader's next snapshot must not take the missing successor as
 * proof that its kept version is still the newest: it sees the rows sealed
 * since.
 */
CX_TEST(gc_removing_a_readers_kept_shard_version_hides_no_rows)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *reader = mw_open_store();
	cx_shardwriter *a;
	cx_merge_result res;
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result gc;
	mw_rows		r;
	uint64_t	kept;
	cx_err		err;

	REQUIRE(s != NULL && reader != NULL);
	REQUIRE_OK(mw_writer(s, "a", true, &a, &err), &err);
	REQUIRE_OK(mw_put(a, "a", 0, 10, 1, true, &err), &err);
	kept = cx_sw_manifest(a)->version;
	REQUIRE_OK(mw_scan(reader, NULL, &r, &err), &err);	/* keeps version kept */
	CHECK(r.n == 10);
	mw_rows_free(&r);

	for (int i = 0; i < 2; i++)
	{
		REQUIRE_OK(cx_merge_shard(s, "a", NULL, &res, &err), &err);
		REQUIRE_OK(mw_drain(s, a, &err), &err);
		REQUIRE_OK(mw_put(a, "a", 10 + 5 * i, 5, 2 + i, true, &err), &err);
	}
	REQUIRE(cx_sw_manifest(a)->version == kept + 4);
	REQUIRE_OK(cx_gc(s, &o, NULL, &gc, &err), &err);
	REQUIRE(!shard_version_exists(s, kept) &&
			!shard_version_exists(s, kept + 1));

	REQUIRE_OK(mw_scan(reader, NULL, &r, &err), &err);
	CHECK(r.n == 20 && mw_count(&r, "a17", NULL) == 1);
	mw_rows_free(&r);
	REQUIRE_OK(cx_sw_close(a, false, &err), &err);
	cx_obj_close(reader);
	cx_obj_close(s);
}

/* ---- retention records ---- */

/* Retains the newest and the npins of pins; deletes at once. */
static cx_gc_options
pinned_opts(const uint64_t *pins, uint32_t npins)
{
	cx_gc_options o = gc_opts(1, 0, 0);

	o.pinned = pins;
	o.npinned = npins;
	return o;
}

/* "1,2,4": the versions 1 .. upto the store records as collected. */
static void
collected_list(cx_objstore *s, uint64_t upto, char *out, size_t size)
{
	uint64_t	versions[16] = {0};
	bool		collected[16];
	size_t		len = 0;
	cx_err		err;

	out[0] = '\0';
	if (upto > 16)
		upto = 16;
	for (uint64_t v = 1; v <= upto; v++)
		versions[v - 1] = v;
	if (cx_gc_collected_versions(s, versions, upto, collected, &err) != CX_OK)
	{
		snprintf(out, size, "error: %.40s", err.msg);
		return;
	}
	for (uint64_t v = 1; v <= upto; v++)
		if (collected[v - 1] && len < size)
			len += snprintf(out + len, size - len, "%s%llu", len ? "," : "",
							(unsigned long long) v);
}

/* How many retention records the store holds. */
static int
records_present(cx_objstore *s)
{
	cx_test_listed listed = {0};
	cx_err		err;

	if (cx_obj_list(s, CX_GC_RECORD_PREFIX, cx_test_collect, &listed, &err) != CX_OK)
		return -1;
	return listed.n;
}

static cx_code
run_gc(cx_objstore *s, const cx_gc_options *o, cx_err *err)
{
	cx_gc_result res;

	return cx_gc(s, o, NULL, &res, err);
}

/*
 * A store no GC of this kind ran on has no record: nothing counts as
 * collected.  A run that pins 3 records 1, 2 and 4 as collected (4 keeps
 * its manifest, between retained ones, but may miss fragments), and
 * neither 3 and 5 nor a version above the newest it listed.
 */
CX_TEST(gc_record_says_what_a_run_collected)
{
	cx_objstore *s = mw_open_store();
	uint64_t	pin = 3;
	cx_gc_options o = pinned_opts(&pin, 1);
	char		got[64];
	bool		one;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	collected_list(s, 6, got, sizeof(got));
	CHECK(strcmp(got, "") == 0);
	CHECK(records_present(s) == 0);
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	collected_list(s, 6, got, sizeof(got));
	CHECK(strcmp(got, "1,2,4") == 0);
	REQUIRE_OK(cx_gc_collected(s, 4, &one, &err), &err);
	CHECK(one);
	REQUIRE_OK(cx_gc_collected(s, 5, &one, &err), &err);
	CHECK(!one);
	CHECK(records_present(s) == 1);
	cx_obj_close(s);
}

/*
 * A later run that retains more (here every version present, 4 pinned
 * now) still records 4 as collected: its fragments may be gone.  One that
 * retains less adds to what is collected.  Each run replaces the record,
 * so one stays.
 */
CX_TEST(gc_record_is_cumulative)
{
	cx_objstore *s = mw_open_store();
	uint64_t	pins[2] = {3, 4};
	cx_gc_options o = pinned_opts(pins, 1);
	char		got[64];
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	o = pinned_opts(pins, 2);
	o.retain_versions = 10;
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	collected_list(s, 6, got, sizeof(got));
	CHECK(strcmp(got, "1,2,4") == 0);
	CHECK(records_present(s) == 1);
	o = gc_opts(1, 0, 0);
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	collected_list(s, 6, got, sizeof(got));
	CHECK(strcmp(got, "1,2,3,4") == 0);
	CHECK(records_present(s) == 1);
	cx_obj_close(s);
}

/* A dry run neither writes a record nor changes one. */
CX_TEST(gc_dry_run_records_nothing)
{
	cx_objstore *s = mw_open_store();
	uint64_t	pin = 3;
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_record r;
	char		got[64];
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	o.dry_run = true;
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	CHECK(records_present(s) == 0);
	o = pinned_opts(&pin, 1);
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	o = gc_opts(1, 0, 0);
	o.dry_run = true;
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	collected_list(s, 6, got, sizeof(got));
	CHECK(strcmp(got, "1,2,4") == 0);
	REQUIRE_OK(cx_gc_record_load_latest(s, &r, &err), &err);
	CHECK(r.number == 1);
	cx_gc_record_free(&r);
	cx_obj_close(s);
}

/* A damaged record stops GC before it deletes anything (it cannot know
 * what earlier runs collected), naming the record; reads of the record say
 * so too. */
CX_TEST(gc_with_a_damaged_record_deletes_nothing)
{
	cx_objstore *s = mw_open_store();
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result res;
	char		key[CX_KEY_MAX + 1];
	bool		collected;
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	cx_vseq_key(&cx_layout_gc_records, 1, key);
	REQUIRE_OK(cx_obj_put(s, key, "CXG1 damaged", 12, CX_PUT_OVERWRITE, &err), &err);
	CHECK_CODE(cx_gc(s, &o, NULL, &res, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, key) != NULL);
	CHECK(res.objects_deleted == 0);
	CHECK(rows_at(s, 3) == 10);
	CHECK_CODE(cx_gc_collected(s, 3, &collected, &err), CX_ERR_CORRUPT);
	CHECK(!collected);
	cx_obj_close(s);
}

/* A handle's backend with an operation replaced by a test's hook, which
 * calls the real one through hooked_real. */
static const cx_objstore_ops *hooked_real;
static cx_objstore_ops hooked_ops;

static void
hook_store(cx_objstore *s)
{
	hooked_real = s->ops;
	hooked_ops = *s->ops;
	s->ops = &hooked_ops;
}

/* How many records the store held when GC first deleted (-1: no delete). */
static int	records_at_first_delete;

static cx_code
noting_delete(cx_objstore *s, const char *key, cx_err *err)
{
	if (records_at_first_delete < 0)
		records_at_first_delete = records_present(s);
	return hooked_real->del(s, key, err);
}

/* The record is in the store before GC deletes anything. */
CX_TEST(gc_puts_its_record_before_the_first_delete)
{
	cx_objstore *s = mw_open_store();
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	hook_store(s);
	hooked_ops.del = noting_delete;
	records_at_first_delete = -1;
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	s->ops = hooked_real;
	CHECK(records_at_first_delete == 1);
	cx_obj_close(s);
}

/*
 * Two runs on two handles (two clusters), the second one's record landing
 * between the first's read of the newest record and its put: the first
 * finds its number taken, merges the winner's decision and lands at the
 * next, so the record holds both (the first collected 3, the second 4).
 */
static cx_objstore *racing_other;
static cx_code racing_rc;

static cx_code
racing_put(cx_objstore *s, const char *key, const void *data, size_t len,
		   cx_put_mode mode, cx_err *err)
{
	cx_object_name name;

	if (racing_other != NULL &&
		cx_object_parse(key, &name) == CX_OBJECT_GC_RECORD)
	{
		uint64_t	pin = 3;
		cx_gc_options o = pinned_opts(&pin, 1);
		cx_objstore *other = racing_other;
		cx_err		other_err;

		racing_other = NULL;
		racing_rc = run_gc(other, &o, &other_err);
	}
	return hooked_real->put(s, key, data, len, mode, err);
}

CX_TEST(gc_record_of_racing_runs_keeps_both_decisions)
{
	cx_objstore *s = mw_open_store();
	cx_objstore *other = mw_open_store();
	uint64_t	pin = 4;
	cx_gc_options o = pinned_opts(&pin, 1);
	cx_gc_record r;
	char		got[64];
	cx_err		err;

	REQUIRE(s != NULL && other != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	hook_store(s);
	hooked_ops.put = racing_put;
	racing_other = other;
	racing_rc = CX_ERR_INVALID;
	REQUIRE_OK(run_gc(s, &o, &err), &err);
	s->ops = hooked_real;
	CHECK(racing_rc == CX_OK);
	collected_list(s, 6, got, sizeof(got));
	CHECK(strcmp(got, "1,2,3,4") == 0);
	REQUIRE_OK(cx_gc_record_load_latest(s, &r, &err), &err);
	CHECK(r.number == 2 && r.newest == 5 && r.n == 1);
	cx_gc_record_free(&r);
	CHECK(records_present(s) == 1);
	cx_obj_close(other);
	cx_obj_close(s);
}

/* A record's frame around body (the checksum right), for the decoder. */
static void
framed(const uint64_t *fields, size_t nfields, uint32_t count, cx_buf *out)
{
	size_t		start = cx_frame_begin(out, "CXG1", 1);
	cx_err		err;

	cx_buf_put_u64(out, fields[0]);
	cx_buf_put_u64(out, fields[1]);
	cx_buf_put_u32(out, count);
	for (size_t i = 2; i < nfields; i++)
		cx_buf_put_u64(out, fields[i]);
	(void) cx_frame_end(out, start, "test record", &err);
}

static cx_code
decode_fields(const uint64_t *fields, size_t nfields, uint32_t count,
			  cx_err *err)
{
	cx_buf		b;
	cx_gc_record r;
	cx_code		rc;

	cx_buf_init(&b);
	framed(fields, nfields, count, &b);
	rc = cx_gc_record_decode(b.data, b.len, "t", &r, err);
	cx_gc_record_free(&r);
	cx_buf_free(&b);
	return rc;
}

/*
 * The decoder takes untrusted bytes: every truncation and flipped bit is
 * corrupt (the checksum), and with a right checksum so is each body the
 * encoder never writes, each with its reason; a newer format is
 * unsupported.  What it accepts re-encodes to the same bytes.
 */
CX_TEST(gc_record_decoder_refuses_malformed_records)
{
	static const uint64_t ok[] = {7, 9, 3, 9};
	static const uint64_t zero_number[] = {0, 9, 9};
	static const uint64_t not_ascending[] = {7, 9, 3, 3, 9};
	static const uint64_t above[] = {7, 9, 3, 10};
	static const uint64_t newest_missing[] = {7, 9, 3, 8};
	cx_gc_record good = {7, 9, (uint64_t[]) {3, 9}, 2};
	cx_gc_record r;
	cx_buf		b;
	cx_buf		again;
	cx_err		err;

	cx_buf_init(&b);
	cx_buf_init(&again);
	REQUIRE_OK(cx_gc_record_encode(&good, &b, &err), &err);
	REQUIRE_OK(cx_gc_record_decode(b.data, b.len, "t", &r, &err), &err);
	CHECK(r.number == 7 && r.newest == 9 && r.n == 2 && r.retained[0] == 3);
	REQUIRE_OK(cx_gc_record_encode(&r, &again, &err), &err);
	CHECK(again.len == b.len && memcmp(again.data, b.data, b.len) == 0);
	cx_gc_record_free(&r);
	for (size_t len = 0; len < b.len; len++)
		CHECK_CODE(cx_gc_record_decode(b.data, len, "t", &r, &err), CX_ERR_CORRUPT);
	for (size_t bit = 0; bit < b.len * 8; bit++)
	{
		b.data[bit / 8] ^= (uint8_t) (1 << (bit % 8));
		CHECK(cx_gc_record_decode(b.data, b.len, "t", &r, &err) != CX_OK);
		b.data[bit / 8] ^= (uint8_t) (1 << (bit % 8));
	}

	REQUIRE_OK(decode_fields(ok, 4, 2, &err), &err);
	CHECK_CODE(decode_fields(zero_number, 3, 1, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "is 0") != NULL);
	CHECK_CODE(decode_fields(ok, 2, 0, &err), CX_ERR_CORRUPT);
	CHECK_CODE(decode_fields(ok, 4, 3, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "does not match the count") != NULL);
	CHECK_CODE(decode_fields(not_ascending, 5, 3, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "not ascending") != NULL);
	CHECK_CODE(decode_fields(above, 4, 2, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "above the newest") != NULL);
	CHECK_CODE(decode_fields(newest_missing, 4, 2, &err), CX_ERR_CORRUPT);
	CHECK(strstr(err.msg, "newest version is not retained") != NULL);

	cx_buf_reset(&b);
	REQUIRE_OK(cx_gc_record_encode(&good, &b, &err), &err);
	cx_store_u16(b.data + 4, 2);
	cx_store_u32(b.data + b.len - 4, cx_crc32c(0, b.data, b.len - 4));
	CHECK_CODE(cx_gc_record_decode(b.data, b.len, "t", &r, &err), CX_ERR_UNSUPPORTED);
	cx_buf_free(&b);
	cx_buf_free(&again);
}

/*
 * On a full disk the record cannot be put: the run then collects no base
 * version (every one stays whole and nothing new is called collected) but
 * still frees the drained generations and older shard versions, so that
 * writes can resume; the next run with room records and collects.
 */
CX_TEST(gc_without_room_for_its_record_collects_no_base_version)
{
	cx_objstore *s = mw_open_store();
	cx_gc_options o = gc_opts(1, 0, 0);
	cx_gc_result res;
	char		got[64];
	cx_err		err;

	REQUIRE(s != NULL);
	REQUIRE_OK(three_merges(s, &err), &err);
	REQUIRE_OK(cx_failpoint_set("local.open_upload=enospc", &err), &err);
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	REQUIRE_OK(cx_failpoint_set("", &err), &err);
	CHECK(res.versions_retained == 5 && res.objects_deleted > 0);
	CHECK(records_present(s) == 0);
	for (uint64_t v = 1; v <= 5; v++)
		CHECK(rows_at(s, v) == (v < 3 ? 0 : (uint32_t) (v - 2) * 10));
	REQUIRE_OK(cx_gc(s, &o, NULL, &res, &err), &err);
	CHECK(res.versions_retained == 1);
	collected_list(s, 6, got, sizeof(got));
	CHECK(strcmp(got, "1,2,3,4") == 0);
	cx_obj_close(s);
}
