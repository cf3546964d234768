/*
 * cx_scan.c — planning and executing scans of ctxstore foreign tables, and
 * what EXPLAIN shows of them.
 *
 * A scan reads the fragments of one manifest version, one row group at a
 * time, fetching only the columns the query references (its target list and
 * its quals) and skipping the rows the fragments' deletion vectors list; then,
 * unless the table is pinned to a version, the rows the current transaction
 * has buffered for the table (read-your-writes).  Quals are all evaluated
 * locally by the executor.
 *
 * The engine's objects (manifest copy, fragment reader, row group) are
 * malloc'd; a reset callback on the executor's memory context frees them, so
 * an ERROR in the middle of a scan leaks nothing.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"
#include "cx_rowcodec.h"

/* Planner cost of opening the store (manifest and fragment footers). */
#define STORE_STARTUP_COST 100.0

typedef struct CxScanState
{
	CxRelInfo  *ri;
	cx_objstore *store;			/* the backend's cached handle */
	cx_manifest *manifest;		/* private copy; NULL for an empty store */
	List	   *retrieved;		/* attribute numbers the query needs */
	CxBinding	bind;			/* table columns vs the store's */
	bool	   *want;			/* per store column: fetch it */
	bool		fetch_none;		/* no column needed: only count rows */

	/* Position in the store. */
	uint32		next_fragment;
	cx_fragr   *fragr;
	const cx_deletion_vector *dv;	/* the fragment's, NULL if none */
	uint32		dv_pos;			/* first entry not below the current row */
	uint32		next_group;
	uint64		group_first;	/* fragment row number of the group's row 0 */
	cx_rowgroup *group;
	uint32		group_rows;
	uint32		row;

	/* The transaction's own rows: bytes [pending_pos, pending_end). */
	CxPending  *pending;
	CxBinding	pending_bind;
	size_t		pending_pos;
	size_t		pending_end;
	cx_datum   *pending_values;
	cx_buf		scratch;

	MemoryContextCallback cleanup;
} CxScanState;

/* ---- planning ---- */

static Oid
planner_user(PlannerInfo *root, RelOptInfo *baserel)
{
	RangeTblEntry *rte = planner_rt_fetch(baserel->relid, root);

	return OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
}

/* Rows of the version the table reads, plus those this transaction wrote. */
static double
table_rows(const CxRelInfo *ri)
{
	const cx_manifest *m;
	double		rows = 0;
	CxPending  *p;

	m = cxfdw_store_manifest(cxfdw_store_open(ri, CX_ACCESS_READ), ri->version);
	if (m != NULL)
		rows = (double) cx_manifest_rows(m);
	p = ri->version == 0 ? cxfdw_pending_find(ri->relid) : NULL;
	if (p != NULL)
		rows += (double) cxfdw_pending_rows(p);
	return rows;
}

/* The attribute numbers in attrs (offset as pull_varattnos leaves them);
 * a whole-row reference means all of them. */
static List *
retrieved_attrs(Bitmapset *attrs, int natts)
{
	List	   *result = NIL;
	bool		whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber,
										  attrs);

	for (int a = 1; a <= natts; a++)
		if (whole_row || bms_is_member(a - FirstLowInvalidHeapAttributeNumber, attrs))
			result = lappend_int(result, a);
	return result;
}

/* Estimates the rows and records, as baserel->fdw_private, the attributes
 * to fetch: those the query outputs or filters on. */
static void
cx_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Relation	rel = table_open(foreigntableid, NoLock);
	CxRelInfo  *ri = cxfdw_rel_info(rel, planner_user(root, baserel));
	Bitmapset  *attrs = NULL;
	ListCell   *lc;

	table_close(rel, NoLock);
	baserel->tuples = table_rows(ri);
	baserel->rows = clamp_row_est(baserel->tuples *
								  clauselist_selectivity(root, baserel->baserestrictinfo,
														 0, JOIN_INNER, NULL));

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(lc, baserel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause,
					   baserel->relid, &attrs);
	baserel->fdw_private = retrieved_attrs(attrs, ri->natts);
}

static void
cx_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Cost		startup = STORE_STARTUP_COST + baserel->baserestrictcost.startup;
	Cost		total = startup + baserel->tuples *
		(cpu_tuple_cost + baserel->baserestrictcost.per_tuple);

	add_path(baserel, (Path *) create_foreignscan_path(root, baserel, NULL,
													   baserel->rows,
													   startup, total,
													   NIL, NULL, NULL, NIL));
}

static ForeignScan *
cx_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
		ForeignPath *best_path, List *tlist, List *scan_clauses,
		Plan *outer_plan)
{
	return make_foreignscan(tlist, extract_actual_clauses(scan_clauses, false),
							baserel->relid, NIL, list_make1(baserel->fdw_private),
							NIL, NIL, outer_plan);
}

/* ---- execution ---- */

/* Frees the engine objects; safe to call twice (EndForeignScan, then the
 * memory context reset). */
static void
release_store_objects(void *arg)
{
	CxScanState *s = arg;

	cx_rowgroup_free(s->group);
	s->group = NULL;
	cx_fragr_close(s->fragr);
	s->fragr = NULL;
	cx_manifest_free(s->manifest);
	s->manifest = NULL;
	cx_buf_free(&s->scratch);
}

static bool *
wanted_columns(CxScanState *s)
{
	bool	   *want = palloc0(sizeof(bool) * Max(s->bind.schema->ncolumns, 1));
	ListCell   *lc;

	foreach(lc, s->retrieved)
		want[s->bind.att_col[lfirst_int(lc) - 1]] = true;
	return want;
}

static void
begin_pending(CxScanState *s)
{
	size_t		len;

	s->pending = s->ri->version == 0 ? cxfdw_pending_find(s->ri->relid) : NULL;
	if (s->pending == NULL || cxfdw_pending_rows(s->pending) == 0)
	{
		s->pending = NULL;
		return;
	}
	cxfdw_bind(s->ri, cxfdw_pending_schema(s->pending), &s->pending_bind);
	s->pending_values = palloc(sizeof(cx_datum) *
							   s->pending_bind.schema->ncolumns);
	/* Rows this statement inserts itself are not its input. */
	cxfdw_pending_data(s->pending, &len);
	s->pending_end = len;
}

static void
cx_begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;
	RangeTblEntry *rte = exec_rt_fetch(plan->scan.scanrelid, estate);
	CxScanState *s = palloc0(sizeof(CxScanState));
	CxStore    *st;

	s->ri = cxfdw_rel_info(node->ss.ss_currentRelation,
						   OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId());
	s->retrieved = linitial(plan->fdw_private);
	cx_buf_init(&s->scratch);
	s->cleanup.func = release_store_objects;
	s->cleanup.arg = s;
	MemoryContextRegisterResetCallback(estate->es_query_cxt, &s->cleanup);
	node->fdw_state = s;

	st = cxfdw_store_open(s->ri, CX_ACCESS_READ);
	s->store = cxfdw_store_handle(st);
	s->manifest = cxfdw_store_manifest_copy(st, s->ri->version);
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	if (s->manifest != NULL && s->manifest->schema != NULL)
	{
		cxfdw_bind(s->ri, s->manifest->schema, &s->bind);
		s->want = wanted_columns(s);
		s->fetch_none = s->retrieved == NIL;
	}
	begin_pending(s);
}

static void
open_fragment(CxScanState *s, uint32 index)
{
	const cx_fragment_info *fi = &s->manifest->fragments[index];
	cx_err		err;

	if (cx_fragr_open(s->store, fi->path, fi->size, &s->fragr, &err) != CX_OK)
		cx_pg_error(&err, "could not read store %s of foreign table \"%s\"",
					s->ri->uri, s->ri->relname);
	/* Column positions come from the manifest's schema: a fragment with
	 * another one would be read as garbage. */
	if (!cx_schema_equal(cx_fragr_schema(s->fragr), s->manifest->schema))
		ereport(ERROR,
				errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("fragment %s of store %s does not have the store's schema",
					   fi->path, s->ri->uri));
	s->next_group = 0;
	s->group_first = 0;
	s->group_rows = 0;
	s->dv = s->manifest->dvs != NULL && s->manifest->dvs[index].n > 0
		? &s->manifest->dvs[index] : NULL;
	s->dv_pos = 0;
}

/*
 * Moves to the next row group that has rows; false at the end of the store.
 * A scan that needs no column counts rows without fetching any chunk.
 */
static bool
next_group(CxScanState *s)
{
	cx_err		err;

	cx_rowgroup_free(s->group);
	s->group = NULL;
	for (;;)
	{
		if (s->fragr != NULL && s->next_group < cx_fragr_num_groups(s->fragr))
		{
			uint32		g = s->next_group++;

			s->row = 0;
			s->group_first += s->group_rows;
			s->group_rows = cx_fragr_group_rows(s->fragr, g);
			if (s->group_rows == 0)
				continue;
			if (s->fetch_none)
				return true;
			if (cx_fragr_read_group(s->fragr, g, s->want, &s->group, &err) != CX_OK)
				cx_pg_error(&err, "could not read store %s of foreign table \"%s\"",
							s->ri->uri, s->ri->relname);
			return true;
		}
		cx_fragr_close(s->fragr);
		s->fragr = NULL;
		if (s->manifest == NULL || s->next_fragment >= s->manifest->nfragments)
			return false;
		open_fragment(s, s->next_fragment++);
	}
}

static void
fill_from_group(CxScanState *s, TupleTableSlot *slot)
{
	CxConvErrContext ec;
	ListCell   *lc;

	cxfdw_conv_errcontext_push(&ec, s->ri);
	foreach(lc, s->retrieved)
	{
		int			att = lfirst_int(lc) - 1;
		cx_datum	d;

		cx_colvec_get(cx_rowgroup_column(s->group, s->bind.att_col[att]),
					  s->row, &d);
		slot->tts_isnull[att] = d.isnull;
		if (d.isnull)
			continue;
		ec.att = att;
		slot->tts_values[att] = cxfdw_from_cx(&s->ri->columns[att].type, &d,
											  CX_LIST_SLICE);
	}
	cxfdw_conv_errcontext_pop(&ec);
}

/* Decodes the next buffered row of the transaction into slot. */
static void
fill_from_pending(CxScanState *s, TupleTableSlot *slot)
{
	CxConvErrContext ec;
	const uint8_t *data;
	size_t		len;
	cx_rd		rd;
	cx_err		err;
	ListCell   *lc;

	/* Re-read the address each time: appends may have moved the buffer.
	 * Subtransaction rollbacks only cut rows written after the scan began,
	 * but clamp anyway so that a surprise is an error, not a wild read. */
	data = cxfdw_pending_data(s->pending, &len);
	cx_rd_init(&rd, data, Min(len, s->pending_end));
	rd.pos = s->pending_pos;
	if (cx_row_decode(s->pending_bind.schema, &rd, s->pending_values,
					  &s->scratch, &err) != CX_OK)
		cx_pg_error(&err, "could not decode a row buffered for foreign table \"%s\"",
					s->ri->relname);
	s->pending_pos = rd.pos;

	cxfdw_conv_errcontext_push(&ec, s->ri);
	foreach(lc, s->retrieved)
	{
		int			att = lfirst_int(lc) - 1;
		const cx_datum *d = &s->pending_values[s->pending_bind.att_col[att]];

		slot->tts_isnull[att] = d->isnull;
		if (d->isnull)
			continue;
		ec.att = att;
		slot->tts_values[att] = cxfdw_from_cx(&s->ri->columns[att].type, d,
											  CX_LIST_ITEMS);
	}
	cxfdw_conv_errcontext_pop(&ec);
}

/* Whether the current row is listed in its fragment's deletion vector
 * (rows are visited in ascending order, so the vector is walked once). */
static bool
row_deleted(CxScanState *s)
{
	uint64		r = s->group_first + s->row;

	if (s->dv == NULL)
		return false;
	while (s->dv_pos < s->dv->n && s->dv->rows[s->dv_pos] < r)
		s->dv_pos++;
	return s->dv_pos < s->dv->n && s->dv->rows[s->dv_pos] == r;
}

/* Moves to the next live row of the store; false at its end. */
static bool
next_store_row(CxScanState *s)
{
	for (;;)
	{
		if (s->row >= s->group_rows && !next_group(s))
			return false;
		if (!row_deleted(s))
			return true;
		s->row++;
	}
}

static TupleTableSlot *
cx_iterate(ForeignScanState *node)
{
	CxScanState *s = node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;

	ExecClearTuple(slot);
	/* Columns the query does not use stay NULL. */
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);

	if (next_store_row(s))
	{
		if (!s->fetch_none)
			fill_from_group(s, slot);
		s->row++;
	}
	else if (s->pending != NULL && s->pending_pos < s->pending_end)
		fill_from_pending(s, slot);
	else
		return slot;
	return ExecStoreVirtualTuple(slot);
}

static void
cx_rescan(ForeignScanState *node)
{
	CxScanState *s = node->fdw_state;

	cx_rowgroup_free(s->group);
	s->group = NULL;
	cx_fragr_close(s->fragr);
	s->fragr = NULL;
	s->next_fragment = 0;
	s->row = s->group_rows = 0;
	s->pending_pos = 0;
}

static void
cx_end_scan(ForeignScanState *node)
{
	if (node->fdw_state != NULL)
		release_store_objects(node->fdw_state);
}

/* ---- EXPLAIN ---- */

static void
cx_explain(ForeignScanState *node, ExplainState *es)
{
	CxScanState *s = node->fdw_state;

	ExplainPropertyText("Store", s->ri->uri, es);
	ExplainPropertyUInteger("Version", NULL,
							s->manifest != NULL ? s->manifest->version : 0, es);
	if (es->verbose && s->retrieved != NIL)
	{
		List	   *names = NIL;
		ListCell   *lc;

		foreach(lc, s->retrieved)
			names = lappend(names, s->ri->columns[lfirst_int(lc) - 1].name);
		ExplainPropertyList("Store Columns", names, es);
	}
}

void
cxfdw_scan_routine(FdwRoutine *routine)
{
	routine->GetForeignRelSize = cx_rel_size;
	routine->GetForeignPaths = cx_paths;
	routine->GetForeignPlan = cx_plan;
	routine->BeginForeignScan = cx_begin_scan;
	routine->IterateForeignScan = cx_iterate;
	routine->ReScanForeignScan = cx_rescan;
	routine->EndForeignScan = cx_end_scan;
	routine->ExplainForeignScan = cx_explain;
}
