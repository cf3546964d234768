/*
 * cx_parallel.c — parallel scans of ctxstore foreign tables: the partial
 * path, and the state the leader shares with its workers
 * (docs/design/scan.md, "Parallel scans").
 *
 * Every participant (the leader too) opens the same snapshot: the leader
 * pins its base and shard-manifest versions in shared memory and each
 * worker reopens exactly those (cx_snapshot_open_pinned).  The row groups
 * of that snapshot are numbered in one order; an atomic counter hands them
 * out, one claim before each row group a participant reads.  Every
 * participant builds the same de-duplication map, so a key's winner is
 * decided the same way wherever its versions are read.
 *
 * The transaction's buffered rows (cx_xact.c) live in the leader's memory:
 * a table that has some is not parallel safe at planning, and a plan made
 * before they were written (a cached one) runs with every store row read by
 * the leader, which alone can apply them; its workers then return nothing.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "port/atomics.h"

#include "ctxstore_fdw.h"

typedef struct CxParallelShared
{
	pg_atomic_uint32 next_unit;
	bool		store_rows;		/* false: the leader reads every row */
	uint64		base_version;	/* the leader's snapshot (cx_snapshot_pin) */
	uint32		nshards;
	uint64		shard_versions[FLEXIBLE_ARRAY_MEMBER];
} CxParallelShared;

BlockNumber
cxfdw_snapshot_pages(const cx_snapshot *snap)
{
	uint64		bytes = cx_snapshot_bytes(snap);

	return (BlockNumber) Min((bytes + BLCKSZ - 1) / BLCKSZ, MaxBlockNumber);
}

/* The share of the rows one participant returns, as the planner counts it
 * for a parallel sequential scan (costsize.c, get_parallel_divisor). */
static double
parallel_divisor(int workers)
{
	double		divisor = workers;
	double		leader = 1.0 - 0.3 * workers;

	if (parallel_leader_participation && leader > 0)
		divisor += leader;
	return divisor;
}

void
cxfdw_add_partial_path(PlannerInfo *root, RelOptInfo *baserel, Cost startup,
					   Cost run)
{
	int			workers;
	double		divisor;
	ForeignPath *path;

	if (!baserel->consider_parallel)
		return;
	/* min_parallel_table_scan_size against the snapshot's bytes. */
	workers = compute_parallel_worker(baserel, baserel->pages, -1,
									  max_parallel_workers_per_gather);
	if (workers <= 0)
		return;
	divisor = parallel_divisor(workers);
	path = create_foreignscan_path(root, baserel, NULL,
								   clamp_row_est(baserel->rows / divisor),
								   startup, startup + run / divisor,
								   NIL, NULL, NULL, NIL);
	path->path.parallel_aware = true;
	path->path.parallel_workers = workers;
	add_partial_path(baserel, (Path *) path);
}

/* Workers cannot see the transaction's buffered rows, nor skip the
 * snapshot rows those replace. */
static bool
cx_parallel_safe(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	CxPending  *p = cxfdw_pending_find(rte->relid);

	return p == NULL || cxfdw_pending_rows(p) == 0;
}

static Size
shared_size(uint32 nshards)
{
	return add_size(offsetof(CxParallelShared, shard_versions),
					mul_size(nshards, sizeof(uint64)));
}

static Size
cx_estimate_dsm(ForeignScanState *node, ParallelContext *pcxt)
{
	cx_snapshot_pin pin;

	cx_snapshot_pin_of(cxfdw_scan_snapshot(node), &pin);
	return shared_size(pin.nshards);
}

/* The next unit; past the last one the scan ends by itself. */
static bool
claim_unit(void *arg, uint32_t *unit)
{
	CxParallelShared *sh = arg;

	*unit = pg_atomic_fetch_add_u32(&sh->next_unit, 1);
	return true;
}

static void
cx_initialize_dsm(ForeignScanState *node, ParallelContext *pcxt,
				  void *coordinate)
{
	CxParallelShared *sh = coordinate;
	cx_snapshot_pin pin;

	cx_snapshot_pin_of(cxfdw_scan_snapshot(node), &pin);
	pg_atomic_init_u32(&sh->next_unit, 0);
	sh->store_rows = !cxfdw_scan_has_pending(node);
	sh->base_version = pin.base_version;
	sh->nshards = pin.nshards;
	if (pin.nshards > 0)
		memcpy(sh->shard_versions, pin.shard_versions,
			   sizeof(uint64) * pin.nshards);
	if (sh->store_rows)
		cxfdw_scan_set_claim(node, claim_unit, sh);
}

/* A rescan starts the units over (the leader's own rescan restarts its
 * scan). */
static void
cx_reinitialize_dsm(ForeignScanState *node, ParallelContext *pcxt,
					void *coordinate)
{
	CxParallelShared *sh = coordinate;

	pg_atomic_write_u32(&sh->next_unit, 0);
}

static void
cx_initialize_worker(ForeignScanState *node, shm_toc *toc, void *coordinate)
{
	CxParallelShared *sh = coordinate;
	cx_snapshot_pin pin;

	pin.base_version = sh->base_version;
	pin.nshards = sh->nshards;
	pin.shard_versions = sh->shard_versions;
	cxfdw_scan_begin_worker(node, &pin, sh->store_rows);
	if (sh->store_rows)
		cxfdw_scan_set_claim(node, claim_unit, sh);
}

void
cxfdw_parallel_routine(FdwRoutine *routine)
{
	routine->IsForeignScanParallelSafe = cx_parallel_safe;
	routine->EstimateDSMForeignScan = cx_estimate_dsm;
	routine->InitializeDSMForeignScan = cx_initialize_dsm;
	routine->ReInitializeDSMForeignScan = cx_reinitialize_dsm;
	routine->InitializeWorkerForeignScan = cx_initialize_worker;
}
