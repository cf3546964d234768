/*
 * cx_analyze.c — ANALYZE of a ctxstore foreign table: a uniform sample of
 * the rows a scan returns (docs/SQL.md, "ANALYZE").
 *
 * The rows of the committed snapshot (the transaction's buffered rows are
 * not), de-duplicated as a scan returns them, are streamed a row group at a
 * time into a reservoir of targrows rows (Vitter's algorithm, as file_fdw
 * and postgres_fdw sample).  Every row is visited, so the row count ANALYZE
 * records is the exact number of visible rows, not the manifests' sum
 * (which counts a key once per unmerged version); there are no dead rows.
 * The page count is the snapshot's bytes in blocks, the measure the
 * planner's parallel threshold uses too.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sampling.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"

/* The reservoir and what streaming into it needs. */
typedef struct CxSample
{
	Relation	rel;
	CxRelInfo  *ri;
	CxBinding	bind;
	List	   *retrieved;		/* every attribute the store has */
	HeapTuple  *rows;
	int			targrows;
	int			numrows;
	double		seen;			/* rows streamed so far */
	double		rowstoskip;		/* before the next replacement; -1: draw */
	ReservoirStateData rstate;
	MemoryContext row_cxt;		/* one row's conversion */
	Datum	   *values;
	bool	   *isnull;
} CxSample;

/* The attributes the store has a column for, and the store columns they
 * read. */
static bool *
sampled_columns(CxSample *sm)
{
	bool	   *want = palloc0(sizeof(bool) * Max(sm->bind.schema->ncolumns, 1));

	for (int att = 0; att < sm->ri->natts; att++)
		if (sm->bind.att_col[att] >= 0)
		{
			sm->retrieved = lappend_int(sm->retrieved, att + 1);
			want[sm->bind.att_col[att]] = true;
		}
	return want;
}

/* The slot of the reservoir row i goes to: the next free one while it
 * fills, then a random one or none (-1). */
static int
reservoir_slot(CxSample *sm)
{
	int			k;

	if (sm->numrows < sm->targrows)
		return sm->numrows++;
	if (sm->rowstoskip < 0)
		sm->rowstoskip = reservoir_get_next_S(&sm->rstate, sm->seen,
											  sm->targrows);
	if (sm->rowstoskip > 0)
	{
		sm->rowstoskip -= 1;
		return -1;
	}
	sm->rowstoskip = -1;
	k = (int) (sm->targrows * sampler_random_fract(&sm->rstate.randstate));
	Assert(k >= 0 && k < sm->targrows);
	heap_freetuple(sm->rows[k]);
	return k;
}

static void
sample_row(CxSample *sm, const cx_tablescan *scan, uint32 row)
{
	int			k = reservoir_slot(sm);
	MemoryContext old;

	sm->seen += 1;
	if (k < 0)
		return;
	memset(sm->isnull, true, sizeof(bool) * sm->ri->natts);
	old = MemoryContextSwitchTo(sm->row_cxt);
	cxfdw_scan_row_values(sm->ri, &sm->bind, sm->retrieved, scan, row,
						  false, sm->values, sm->isnull);
	MemoryContextSwitchTo(old);
	sm->rows[k] = heap_form_tuple(RelationGetDescr(sm->rel), sm->values,
								  sm->isnull);
	MemoryContextReset(sm->row_cxt);
}

/* Raises err, met reading ri's store: as a scan does, a version GC no
 * longer retains says so. */
static void
read_error(const CxRelInfo *ri, const cx_err *err)
{
	cxfdw_raise_if_collected(ri, cxfdw_store_handle(cxfdw_store_open(ri, CX_ACCESS_READ)),
							 err);
	cx_pg_error(err, "could not read store %s of foreign table \"%s\"",
				ri->uri, ri->relname);
}

/* The committed snapshot ri reads (malloc'd: the caller closes it). */
static cx_snapshot *
open_snapshot(const CxRelInfo *ri)
{
	cx_snapshot *snap;
	cx_err		err;

	if (cx_snapshot_open(cxfdw_store_handle(cxfdw_store_open(ri, CX_ACCESS_READ)),
						 ri->version, &snap, &err) != CX_OK)
		read_error(ri, &err);
	return snap;
}

/* Streams every visible row of snap into the reservoir. */
static void
sample_snapshot(CxSample *sm, cx_snapshot *snap)
{
	const cx_manifest *base = cx_snapshot_base(snap);
	cx_tablescan *volatile scan = NULL;
	cx_tablescan *opened;
	cx_err		err;

	if (base->schema == NULL)
		return;					/* an empty store */
	cxfdw_bind(sm->ri, base->schema, &sm->bind);
	if (cx_tablescan_begin(snap, sampled_columns(sm), &opened, &err) != CX_OK)
		read_error(sm->ri, &err);
	scan = opened;
	PG_TRY();
	{
		for (;;)
		{
			const cx_rowgroup *g;
			const uint32_t *rows;
			uint32_t	n;

			vacuum_delay_point();
			if (cx_tablescan_next(scan, &g, &rows, &n, &err) != CX_OK)
				read_error(sm->ri, &err);
			if (g == NULL)
				break;
			for (uint32_t i = 0; i < n; i++)
				sample_row(sm, scan, rows[i]);
		}
	}
	PG_FINALLY();
	{
		cx_tablescan_end(scan);
	}
	PG_END_TRY();
}

static int
cx_acquire_sample_rows(Relation relation, int elevel, HeapTuple *rows,
					   int targrows, double *totalrows,
					   double *totaldeadrows)
{
	CxSample	sm = {0};
	cx_snapshot *volatile snap;

	sm.rel = relation;
	sm.ri = cxfdw_rel_info(relation, GetUserId());
	sm.rows = rows;
	sm.targrows = targrows;
	sm.rowstoskip = -1;
	reservoir_init_selection_state(&sm.rstate, targrows);
	sm.row_cxt = AllocSetContextCreate(CurrentMemoryContext,
									   "ctxstore analyze row",
									   ALLOCSET_SMALL_SIZES);
	sm.values = palloc0(sizeof(Datum) * Max(sm.ri->natts, 1));
	sm.isnull = palloc(sizeof(bool) * Max(sm.ri->natts, 1));
	snap = open_snapshot(sm.ri);
	PG_TRY();
	{
		sample_snapshot(&sm, snap);
	}
	PG_FINALLY();
	{
		cx_snapshot_close(snap);
	}
	PG_END_TRY();
	MemoryContextDelete(sm.row_cxt);
	*totalrows = sm.seen;
	*totaldeadrows = 0;
	ereport(elevel,
			(errmsg("\"%s\": store %s holds %.0f rows; %d rows in sample",
					RelationGetRelationName(relation), sm.ri->uri, sm.seen,
					sm.numrows)));
	return sm.numrows;
}

static bool
cx_analyze_table(Relation relation, AcquireSampleRowsFunc *func,
				 BlockNumber *totalpages)
{
	CxRelInfo  *ri = cxfdw_rel_info(relation, GetUserId());
	cx_snapshot *snap;

	snap = open_snapshot(ri);
	*totalpages = cxfdw_snapshot_pages(snap);
	cx_snapshot_close(snap);
	*func = cx_acquire_sample_rows;
	return true;
}

void
cxfdw_analyze_routine(FdwRoutine *routine)
{
	routine->AnalyzeForeignTable = cx_analyze_table;
}
