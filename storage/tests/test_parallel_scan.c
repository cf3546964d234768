/*
 * test_parallel_scan.c — pinned snapshots and scans that read only the
 * units claim() hands them (cx_scan_spec.claim), as the participants of a
 * parallel scan do: together they return exactly the rows of a serial scan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/cx_merge.h"
#include "cx_test.h"
#include "mw_util.h"

#define NBASE 100

/*
 * Shard g merged into the base (NBASE rows b<i> at time 5, in row groups of
 * 16, and "a" at time 50); shard f unmerged: "a" at time 10 (older than the
 * base's "a", which therefore wins: a merged row of a shard that committed
 * later), an update and a delete of base keys, a new key, and a second
 * generation updating b3 again.
 */
static void
make_layers(cx_objstore *s)
{
	mw_genrow	g[NBASE + 1];
	char		ids[NBASE][16];
	const mw_genrow f1[] = {{"a", 1, 10, false}, {"b3", 33, 60, false},
	{"b4", 0, 60, true}, {"n1", 7, 60, false}};
	const mw_genrow f2[] = {{"b3", 333, 70, false}};
	cx_merge_options o;
	cx_merge_result res;
	cx_err		err;

	for (int i = 0; i < NBASE; i++)
	{
		snprintf(ids[i], sizeof(ids[i]), "b%d", i);
		g[i] = (mw_genrow) {ids[i], i, 5, false};
	}
	g[NBASE] = (mw_genrow) {"a", 50, 50, false};
	cx_merge_options_default(&o);
	o.fragment.rows_per_group = 16;
	REQUIRE_OK(mw_fake_seal(s, "g", g, NBASE + 1, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "g", &o, &res, &err), &err);
	REQUIRE_OK(mw_fake_drain(s, "g", &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", f1, 4, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", f2, 1, &err), &err);
}

/* Hands out the units u with u % stride == first, in order. */
typedef struct strided
{
	uint32_t	next;
	uint32_t	stride;
	uint32_t	limit;			/* past every unit of the test's tables */
} strided;

static bool
claim_strided(void *arg, uint32_t *unit)
{
	strided    *c = arg;

	if (c->next >= c->limit)
		return false;
	*unit = c->next;
	c->next += c->stride;
	return true;
}

/* One shared counter, as the fdw's atomic one. */
static bool
claim_shared(void *arg, uint32_t *unit)
{
	uint32_t   *next = arg;

	if (*next >= 1000)
		return false;
	*unit = (*next)++;
	return true;
}

/* Runs n participants, each on its own pinned copy of snap, stepping them
 * in turn so that they interleave; collects their rows into out and
 * their scans' stats into stats[]. */
static void
scan_in_parallel(cx_objstore *s, cx_snapshot *snap, cx_scan_spec *specs,
				 int n, mw_rows *out, cx_tablescan_stats *stats)
{
	cx_snapshot_pin pin;
	cx_snapshot *snaps[4];
	cx_tablescan *scans[4];
	bool		done[4] = {false};
	int			left = n;
	cx_err		err;

	memset(out, 0, sizeof(*out));
	cx_snapshot_pin_of(snap, &pin);
	for (int p = 0; p < n; p++)
	{
		REQUIRE_OK(cx_snapshot_open_pinned(s, &pin, &snaps[p], &err), &err);
		REQUIRE_OK(cx_tablescan_begin_spec(snaps[p], &specs[p], &scans[p],
										   &err), &err);
	}
	while (left > 0)
		for (int p = 0; p < n; p++)
		{
			const cx_rowgroup *g;
			const uint32_t *rows;
			uint32_t	k;

			if (done[p])
				continue;
			REQUIRE_OK(cx_tablescan_next(scans[p], &g, &rows, &k, &err), &err);
			if (g != NULL)
				mw_rows_add(scans[p], rows, k, out);
			else
			{
				done[p] = true;
				left--;
			}
		}
	for (int p = 0; p < n; p++)
	{
		stats[p] = *cx_tablescan_get_stats(scans[p]);
		cx_tablescan_end(scans[p]);
		cx_snapshot_close(snaps[p]);
	}
	mw_rows_sort(out);
}

/* Participants taking units round-robin, and from one shared counter,
 * return exactly the serial scan's rows: the base "a" hides the older
 * generation "a" though another participant reads it. */
CX_TEST(parallel_scan_participants_return_the_serial_rows)
{
	cx_objstore *s = mw_open_store();
	cx_snapshot *snap;
	cx_scan_spec specs[3];
	strided		st[3];
	uint32_t	shared = 0;
	cx_tablescan_stats st3[3];
	mw_rows		serial,
				par;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	make_layers(s);
	REQUIRE_OK(mw_scan(s, NULL, &serial, &err), &err);
	CHECK(serial.n == NBASE + 1);	/* b4 deleted, n1 added */
	CHECK(mw_count(&serial, "a", &v) == 1 && v == 50);
	CHECK(mw_count(&serial, "b3", &v) == 1 && v == 333);
	CHECK(mw_count(&serial, "b4", NULL) == 0);
	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	for (int n = 2; n <= 3; n++)
	{
		for (int p = 0; p < n; p++)
		{
			cx_scan_spec_init(&specs[p]);
			st[p] = (strided) {p, n, 1000};
			specs[p].claim = claim_strided;
			specs[p].claim_arg = &st[p];
		}
		scan_in_parallel(s, snap, specs, n, &par, st3);
		CHECK(mw_rows_equal(&serial, &par));
		for (int p = 0; p < n; p++)
			CHECK(st3[p].row_groups_read >= 2);	/* every one read a share */
		mw_rows_free(&par);
	}
	for (int p = 0; p < 3; p++)
	{
		cx_scan_spec_init(&specs[p]);
		specs[p].claim = claim_shared;
		specs[p].claim_arg = &shared;
	}
	scan_in_parallel(s, snap, specs, 3, &par, st3);
	CHECK(mw_rows_equal(&serial, &par));
	/* once each */
	CHECK(st3[0].row_groups_read + st3[1].row_groups_read +
		  st3[2].row_groups_read == 7 + 2);
	mw_rows_free(&par);
	cx_snapshot_close(snap);
	mw_rows_free(&serial);
	cx_obj_close(s);
}

/* A lone participant that reads only the generations still hides the
 * generation row the base beats: no base unit of its own marked it. */
CX_TEST(parallel_scan_generation_reader_probes_the_base)
{
	cx_objstore *s = mw_open_store();
	cx_snapshot *snap;
	cx_scan_spec spec;
	strided		gens_only = {7, 1, 1000};	/* the 7 base groups are 0..6 */
	cx_tablescan_stats st;
	mw_rows		r;
	int64_t		v = 0;
	cx_err		err;

	REQUIRE(s != NULL);
	make_layers(s);
	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	cx_scan_spec_init(&spec);
	spec.claim = claim_strided;
	spec.claim_arg = &gens_only;
	scan_in_parallel(s, snap, &spec, 1, &r, &st);
	CHECK(st.row_groups_read == 2);
	CHECK(r.n == 2);			/* b3 = 333 and n1; not a = 1 */
	/* a (beaten by the base), b3 = 33 (replaced), b4 (a tombstone) */
	CHECK(st.rows_hidden == 3 && st.rows_returned == 2);
	CHECK(mw_count(&r, "a", NULL) == 0);
	CHECK(mw_count(&r, "b3", &v) == 1 && v == 333);
	CHECK(mw_count(&r, "n1", NULL) == 1);
	mw_rows_free(&r);
	cx_snapshot_close(snap);
	cx_obj_close(s);
}

/* A pinned snapshot opens exactly the versions of the one it was taken
 * from, whatever was committed since; a pin that does not fit is refused. */
CX_TEST(parallel_scan_pinned_snapshot_ignores_later_commits)
{
	cx_objstore *s = mw_open_store();
	const mw_genrow later[] = {{"z", 1, 80, false}};
	cx_snapshot *snap,
			   *again;
	cx_snapshot_pin pin,
				bad;
	cx_merge_result res;
	mw_rows		before,
				after;
	cx_scan_spec spec;
	uint32_t	unit = 0;
	cx_tablescan_stats st;
	cx_err		err;

	REQUIRE(s != NULL);
	make_layers(s);
	REQUIRE_OK(mw_scan(s, NULL, &before, &err), &err);
	REQUIRE_OK(cx_snapshot_open(s, 0, &snap, &err), &err);
	REQUIRE_OK(mw_fake_seal(s, "f", later, 1, &err), &err);
	REQUIRE_OK(cx_merge_shard(s, "f", NULL, &res, &err), &err);
	cx_snapshot_pin_of(snap, &pin);
	REQUIRE_OK(cx_snapshot_open_pinned(s, &pin, &again, &err), &err);
	CHECK(cx_snapshot_version(again) == cx_snapshot_version(snap));
	CHECK(cx_snapshot_pending_generations(again) == 2);
	CHECK(cx_snapshot_bytes(again) == cx_snapshot_bytes(snap));
	CHECK(cx_snapshot_bytes(snap) > 0);
	cx_snapshot_close(again);
	cx_scan_spec_init(&spec);
	spec.claim = claim_shared;
	spec.claim_arg = &unit;
	scan_in_parallel(s, snap, &spec, 1, &after, &st);
	CHECK(mw_rows_equal(&before, &after));
	CHECK(mw_count(&after, "z", NULL) == 0);
	mw_rows_free(&after);
	bad = pin;
	bad.nshards = 1;
	CHECK(cx_snapshot_open_pinned(s, &bad, &again, &err) == CX_ERR_INVALID);
	cx_snapshot_close(snap);
	mw_rows_free(&before);
	cx_obj_close(s);
}
