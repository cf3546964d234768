/*
 * cx_scan.c — planning and executing scans of ctxstore foreign tables, and
 * what EXPLAIN shows of them.
 *
 * A scan reads one snapshot of the store (cx_table_scan.h): the base
 * fragments minus their deletion vectors, unioned with the unmerged
 * generations of every shard, at most one row per key, one row group at a
 * time, fetching only the columns the query references (its target list and
 * its quals).  Unless the table is pinned to a version, the rows the current
 * transaction has buffered for the table shadow it (read-your-writes): a
 * snapshot row whose key has a buffered row is skipped, and after the
 * snapshot the newest buffered row of each key is returned unless it is a
 * DELETE; a buffered TRUNCATE marker hides every snapshot row and every
 * buffered row before it.  Quals are all evaluated locally, by the executor
 * or, when the scan answers an ORDER BY / LIMIT itself (cx_topk.c), by the
 * scan; a qual naming keys (cx_keypath.c) also makes the scan read only the
 * row groups that hold them, and quals the store's statistics can answer
 * (cx_pushdown.c) make it skip fragments and row groups none of whose rows
 * match.
 *
 * Snapshots are shared, reference-counted, by the planning and the execution
 * of a statement (of a transaction under REPEATABLE READ or SERIALIZABLE):
 * opening one reads the base manifest and every shard's manifest.
 *
 * The engine's objects (snapshot, table scan) are malloc'd; a reset callback
 * on the executor's memory context frees them, so an ERROR in the middle of
 * a scan leaks nothing.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "access/xact.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "access/parallel.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/prep.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/ruleutils.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"
#include "cx_topk.h"
#include "ctxstore/engine.h"

/* Planner cost of opening the store (manifests and fragment footers). */
#define STORE_STARTUP_COST 100.0

/*
 * A snapshot of one store at one version (0: the newest), kept in the
 * backend's cache while it is current and by every scan reading it.
 */
typedef struct CxSnap
{
	cx_snapshot *snap;
	int			refs;			/* the cache's while listed, plus one per scan */
	CxStore    *store;
	uint64		version;
	LocalTransactionId lxid;	/* when it was opened */
	TimestampTz stmt;
	struct CxSnap *next;		/* in the cache */
} CxSnap;

static CxSnap *snapshots = NULL;

typedef struct CxScanState
{
	CxRelInfo  *ri;
	CxSnap	   *snap;			/* one reference held */
	List	   *retrieved;		/* attribute numbers the query needs */
	bool		narrow_slot;	/* the scan slot holds just those, in order
								 * (fdw_scan_tlist) */
	CxBinding	bind;			/* table columns vs the store's */
	bool	   *want;			/* per store column: fetch it */
	CxKeyClause key;			/* a qual naming keys (key.clause NULL: none) */
	ExprState  *key_values;		/* its keys, evaluated as the scan begins */
	ExprContext *econtext;
	/* Predicate pushdown (cx_pushdown.c): NULL when no qual is pushed. */
	CxPushdown *pushdown;

	/* Position in the store: rows[pos] of group, of nrows visible rows. */
	cx_tablescan *scan;			/* NULL: empty store, or EXPLAIN only */
	bool		scan_done;
	bool		scan_pending_start;	/* begin_store_scan at the next row */
	const cx_rowgroup *group;
	const uint32_t *rows;
	uint32_t	nrows;
	uint32_t	pos;

	/* The transaction's own rows: bytes [pending_pos, pending_end). */
	CxPending  *pending;
	CxBinding	pending_bind;
	CxKeyMap   *pending_keys;	/* of the bytes before pending_end */
	int			store_key_col;	/* the key's column in the snapshot */
	int			pending_key_col;	/* and in the buffered rows */
	cx_type		key_type;
	size_t		pending_start;	/* after the newest TRUNCATE marker */
	size_t		pending_pos;
	size_t		pending_end;
	cx_datum   *pending_values;
	cx_buf		scratch;

	/* Parallel scans (cx_parallel.c): the units this participant reads
	 * (claim NULL: all). */
	bool		(*claim) (void *arg, uint32_t *unit);
	void	   *claim_arg;
	/* ORDER BY / LIMIT answered in the scan (cx_topk.c); NULL: none. */
	CxTopk	   *topk;

	MemoryContextCallback cleanup;
} CxScanState;

/* ---- snapshots ---- */

static void
snap_release(CxSnap *c)
{
	if (--c->refs > 0)
		return;
	cx_snapshot_close(c->snap);
	pfree(c);
}

/* Drops c from the cache (the scans reading it keep it alive). */
static void
snap_uncache(CxSnap *c)
{
	CxSnap	  **link = &snapshots;

	while (*link != c)
		link = &(*link)->next;
	*link = c->next;
	snap_release(c);
}

/* Whether c is what a reader now would open: the same statement (READ
 * COMMITTED) or transaction (REPEATABLE READ and above); a pinned version
 * never changes. */
static bool
snap_current(const CxSnap *c)
{
	if (c->version != 0)
		return true;
	if (c->lxid != MyProc->lxid)
		return false;
	return IsolationUsesXactSnapshot() ||
		c->stmt == GetCurrentStatementStartTimestamp();
}

static CxSnap *
snap_open(const CxRelInfo *ri, CxStore *st)
{
	CxSnap	   *c = MemoryContextAllocZero(TopMemoryContext, sizeof(CxSnap));
	cx_err		err;

	if (cx_snapshot_open(cxfdw_store_handle(st), ri->version, &c->snap,
						 &err) != CX_OK)
	{
		pfree(c);
		cxfdw_raise_if_collected(ri, cxfdw_store_handle(st), &err);
		if (ri->version != 0)
			cx_pg_error(&err, "could not read version " UINT64_FORMAT " of store %s",
						ri->version, ri->uri);
		cx_pg_error(&err, "could not read the newest version of store %s",
					ri->uri);
	}
	c->refs = 1;
	c->store = st;
	c->version = ri->version;
	c->lxid = MyProc->lxid;
	c->stmt = GetCurrentStatementStartTimestamp();
	c->next = snapshots;
	snapshots = c;
	return c;
}

/* The snapshot the table reads now (after the access check); it belongs to
 * the cache: take a reference to keep it. */
static CxSnap *
snap_get(const CxRelInfo *ri)
{
	CxStore    *st = cxfdw_store_open(ri, CX_ACCESS_READ);
	CxSnap	   *c;

	for (c = snapshots; c != NULL; c = c->next)
		if (c->store == st && c->version == ri->version)
			break;
	if (c != NULL && snap_current(c))
		return c;
	if (c != NULL)
		snap_uncache(c);
	return snap_open(ri, st);
}

/* Raises err, met reading snapshot c of ri. */
static void
scan_error(const CxRelInfo *ri, const CxSnap *c, const cx_err *err)
{
	cxfdw_raise_if_collected(ri, cxfdw_store_handle(c->store), err);
	cx_pg_error(err, "could not read store %s of foreign table \"%s\"",
				ri->uri, ri->relname);
}

/* ---- planning ---- */

static Oid
planner_user(PlannerInfo *root, RelOptInfo *baserel)
{
	RangeTblEntry *rte = planner_rt_fetch(baserel->relid, root);

	return OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
}

/* Rows of the snapshot the table reads (base rows plus unmerged generation
 * rows, before de-duplication), plus those this transaction wrote. */
static double
table_rows(const CxRelInfo *ri)
{
	double		rows = (double) cx_snapshot_row_estimate(snap_get(ri)->snap);
	CxPending  *p;

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

/* What planning found out about a scan, as baserel->fdw_private. */
typedef struct CxPlanInfo
{
	List	   *retrieved;		/* attributes to fetch */
	bool		has_key;		/* key holds a qual naming keys */
	CxKeyClause key;
	List	   *pushed;			/* cxfdw_pushdown_classify() */
	List	   *pushed_values;
	double		read_rows;		/* of the fragments not skipped */
	bool		user_columns_only;	/* no whole-row or system column used */
} CxPlanInfo;

/* Estimates the rows and records the attributes to fetch (those the query
 * outputs or filters on) and the qual naming keys, if there is one. */
static void
cx_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	Relation	rel = table_open(foreigntableid, NoLock);
	CxRelInfo  *ri = cxfdw_rel_info(rel, planner_user(root, baserel));
	CxPlanInfo *pi = palloc0(sizeof(CxPlanInfo));
	Bitmapset  *attrs = NULL;
	ListCell   *lc;

	table_close(rel, NoLock);
	baserel->tuples = table_rows(ri);
	baserel->pages = cxfdw_snapshot_pages(snap_get(ri)->snap);
	/* PostgreSQL's estimate (exact with ANALYZE's statistics), but never
	 * more than the rows of the fragments the pushed quals do not skip. */
	pi->pushed = cxfdw_pushdown_classify(baserel, ri, &pi->pushed_values);
	pi->read_rows = baserel->tuples;
	if (pi->pushed != NIL)
	{
		cx_snapshot *snap = snap_get(ri)->snap;

		pi->read_rows -= (double) cx_snapshot_row_estimate(snap) -
			cxfdw_pushdown_rows(snap, pi->pushed, pi->pushed_values, ri);
	}
	baserel->rows = clamp_row_est(Min(pi->read_rows, baserel->tuples *
									  clauselist_selectivity(root, baserel->baserestrictinfo,
															 0, JOIN_INNER, NULL)));

	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &attrs);
	foreach(lc, baserel->baserestrictinfo)
		pull_varattnos((Node *) lfirst_node(RestrictInfo, lc)->clause,
					   baserel->relid, &attrs);
	pi->retrieved = retrieved_attrs(attrs, ri->natts);
	pi->user_columns_only = bms_is_empty(attrs) ||
		bms_next_member(attrs, -1) > -FirstLowInvalidHeapAttributeNumber;
	pi->has_key = cxfdw_key_clause(baserel, ri, &pi->key);
	/* A key has at most one row. */
	if (pi->has_key)
		baserel->rows = clamp_row_est(Min(baserel->rows,
										  cxfdw_key_clause_rows(&pi->key)));
	baserel->fdw_private = pi;
}

/* A key lookup costs its rows; any other scan reads every row of the
 * fragments it does not skip. */
static void
cx_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	const CxPlanInfo *pi = baserel->fdw_private;
	double		read = pi->has_key ? baserel->rows : pi->read_rows;
	Cost		startup = STORE_STARTUP_COST + baserel->baserestrictcost.startup;
	Cost		total = startup + read *
		(cpu_tuple_cost + baserel->baserestrictcost.per_tuple);
	ForeignPath *serial = create_foreignscan_path(root, baserel, NULL,
												  baserel->rows, startup,
												  total, NIL, NULL, NULL, NIL);

	/* Only a parallel-aware scan reads the leader's snapshot (cx_parallel.c):
	 * a whole scan run inside a worker would open one of its own. */
	serial->path.parallel_safe = false;
	add_path(baserel, (Path *) serial);
	if (!pi->has_key)
		cxfdw_add_partial_path(root, baserel, startup, total - startup);
}

/* The retrieved attributes as a target list of Vars of baserel (of the
 * attributes' own types: a domain, not its base type). */
static List *
retrieved_tlist(RelOptInfo *baserel, TupleDesc desc, List *retrieved)
{
	List	   *tlist = NIL;
	ListCell   *lc;

	foreach(lc, retrieved)
	{
		Form_pg_attribute a = TupleDescAttr(desc, lfirst_int(lc) - 1);
		Var		   *v = makeVar(baserel->relid, lfirst_int(lc), a->atttypid,
								a->atttypmod, a->attcollation, 0);

		tlist = lappend(tlist, makeTargetEntry((Expr *) v,
											   list_length(tlist) + 1,
											   NULL, false));
	}
	return tlist;
}

/*
 * The scan's output, when it can be narrowed to the attributes fetched (a
 * scan of a table not being modified or locked, using user columns only):
 * the planner's physical target list (every column) becomes the path's
 * target (labelled with its sort and group references, as the planner
 * labels what it builds), and the scan tuple the fetched columns
 * (*scan_tlist; NIL when none is).
 */
static List *
narrow_tlist(PlannerInfo *root, RelOptInfo *baserel, TupleDesc desc,
			 const CxPlanInfo *pi, const PathTarget *target, List *tlist,
			 List **scan_tlist)
{
	List	   *used = NIL;
	ListCell   *lc;

	*scan_tlist = NIL;
	if (!pi->user_columns_only ||
		baserel->relid == root->parse->resultRelation ||
		get_plan_rowmark(root->rowMarks, baserel->relid) != NULL)
		return tlist;
	foreach(lc, target->exprs)
	{
		TargetEntry *te;

		if (!IsA(lfirst(lc), Var))
			return tlist;
		te = makeTargetEntry(lfirst(lc), list_length(used) + 1, NULL, false);
		if (target->sortgrouprefs != NULL)
			te->ressortgroupref = target->sortgrouprefs[foreach_current_index(lc)];
		used = lappend(used, te);
	}
	/* Nothing fetched (count(*)): a relation-shaped scan tuple, all NULL. */
	if (pi->retrieved != NIL)
		*scan_tlist = retrieved_tlist(baserel, desc, pi->retrieved);
	return tlist_same_exprs(tlist, used) ? tlist : used;
}

/*
 * fdw_private: the attributes to fetch, the qual naming keys (NULL if
 * none), the pushed quals and, for an ORDER BY / LIMIT answered in the
 * scan, its description (cx_upper.c); fdw_exprs: that qual's keys (or
 * NULL), the pushed quals' values and the top-k's expressions, so that
 * setrefs fixes their parameters.  Every qual stays among the plan's quals
 * (rechecked), except in a top-k scan, which evaluates them itself.
 */
static ForeignScan *
cx_plan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
		ForeignPath *best_path, List *tlist, List *scan_clauses,
		Plan *outer_plan)
{
	const CxPlanInfo *pi = baserel->fdw_private;
	List	   *private = list_make1(pi->retrieved);
	List	   *exprs = list_make1(NULL);
	Relation	rel = table_open(foreigntableid, NoLock);
	List	   *scan_tlist = NIL;
	List	   *quals = extract_actual_clauses(scan_clauses, false);

	if (pi->has_key)
		linitial(exprs) = pi->key.values;
	/* A top-k scan evaluates the quals and its order on whole rows
	 * (cx_topk.c): its scan tuple is not narrowed. */
	if (best_path->fdw_private == NIL)
		tlist = narrow_tlist(root, baserel, RelationGetDescr(rel), pi,
							 best_path->path.pathtarget, tlist, &scan_tlist);
	table_close(rel, NoLock);
	private = lappend(private, pi->has_key ? pi->key.clause : NULL);
	private = lappend(private, pi->pushed);
	exprs = lappend(exprs, pi->pushed_values);
	if (best_path->fdw_private != NIL)
		cxfdw_upper_plan(best_path->fdw_private, &private, &exprs, &quals);
	return make_foreignscan(tlist, quals, baserel->relid, exprs, private,
							scan_tlist, NIL, outer_plan);
}

/* ---- execution ---- */

/* Frees the engine objects; safe to call twice (EndForeignScan, then the
 * memory context reset). */
static void
release_store_objects(void *arg)
{
	CxScanState *s = arg;

	cx_tablescan_end(s->scan);
	s->scan = NULL;
	if (s->snap != NULL)
		snap_release(s->snap);
	s->snap = NULL;
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

/*
 * Finds the transaction's rows for the table, and what they shadow.  Rows
 * this statement writes itself are not its input: only the bytes buffered
 * now are read.
 */
static void
begin_pending(CxScanState *s)
{
	const cx_schema *schema;

	s->pending = s->ri->version == 0 ? cxfdw_pending_find(s->ri->relid) : NULL;
	if (s->pending == NULL || cxfdw_pending_rows(s->pending) == 0)
	{
		s->pending = NULL;
		return;
	}
	schema = cxfdw_pending_schema(s->pending);
	cxfdw_bind(s->ri, schema, &s->pending_bind);
	s->pending_values = palloc(sizeof(cx_datum) * schema->ncolumns);
	cxfdw_pending_data(s->pending, &s->pending_end);
	s->pending_keys = cxfdw_pending_keymap(s->pending, s->pending_end);
	cxfdw_keymap_truncated(s->pending_keys, &s->pending_start);
	s->pending_pos = s->pending_start;
	s->pending_key_col = cx_schema_find(schema, cxfdw_pending_key(s->pending));
	s->key_type = schema->columns[s->pending_key_col].type;
}

/* Whether the snapshot's rows are read at all, and which of their columns:
 * the key's too when buffered rows may shadow some. */
static void
choose_store_columns(CxScanState *s, const cx_manifest *base)
{
	size_t		from;

	if (base->schema == NULL ||
		(s->pending != NULL && cxfdw_keymap_truncated(s->pending_keys, &from)))
		return;
	cxfdw_bind(s->ri, base->schema, &s->bind);
	s->want = wanted_columns(s);
	if (s->pending == NULL)
		return;
	s->store_key_col = cx_schema_find(base->schema,
									  cxfdw_pending_key(s->pending));
	s->want[s->store_key_col] = true;
}

/* Makes spec look up the rows of n keys (in the key column's type). */
static void
spec_keys(cx_scan_spec *spec, const CxTypeInfo *ti, const cx_datum *keys,
		  uint32 n)
{
	const uint8_t **bytes = palloc(sizeof(uint8_t *) * Max(n, 1));
	size_t	   *lens = palloc(sizeof(size_t) * Max(n, 1));
	uint8_t    *fixed = palloc(CX_KEY_FIXED_MAX * Max(n, 1));

	for (uint32 i = 0; i < n; i++)
		(void) cx_datum_key_bytes(ti->type, &keys[i],
								  fixed + (size_t) i * CX_KEY_FIXED_MAX,
								  &bytes[i], &lens[i]);
	spec->has_keys = true;
	spec->keys = bytes;
	spec->lens = lens;
	spec->nkeys = n;
}

/* Starts reading the snapshot's rows (none for an empty store): those of
 * the keys a qual names, or all of them, skipping what the pushed quals
 * rule out, best-first by the column a top-k orders by (keys and values
 * evaluated now, in per-query memory that lasts as long as the scan:
 * parameters may differ per rescan). */
static void
begin_store_scan(CxScanState *s)
{
	MemoryContext old;
	cx_scan_spec spec;
	int			att;
	bool		desc;
	cx_err		err;
	cx_code		rc;

	s->scan_done = true;
	s->scan_pending_start = false;
	s->pos = s->nrows = 0;
	if (s->want == NULL)
		return;
	old = MemoryContextSwitchTo(s->econtext->ecxt_per_query_memory);
	cx_scan_spec_init(&spec);
	spec.want = s->want;
	if (s->key_values != NULL)
	{
		const CxTypeInfo *ti = &s->ri->columns[s->key.key_att].type;
		uint32		n;
		cx_datum   *keys = cxfdw_key_values(&s->key, s->key_values, ti,
											s->econtext, &n);

		spec_keys(&spec, ti, keys, n);
	}
	if (s->pushdown != NULL)
		spec.preds = cxfdw_pushdown_preds(s->pushdown, s->ri, &s->bind,
										  s->econtext, &spec.npreds);
	if (s->topk != NULL && cxfdw_topk_order(s->topk, &att, &desc))
	{
		spec.order_column = s->bind.att_col[att];
		spec.order_desc = desc;
	}
	spec.claim = s->claim;
	spec.claim_arg = s->claim_arg;
	rc = cx_tablescan_begin_spec(s->snap->snap, &spec, &s->scan, &err);
	MemoryContextSwitchTo(old);
	if (rc != CX_OK)
		scan_error(s->ri, s->snap, &err);
	s->scan_done = false;
}

/* Whether a committed row of key (a value of ri's key column, of type
 * key_type) is in the snapshot ri reads, for INSERT ... ON CONFLICT DO
 * NOTHING. */
bool
cxfdw_key_committed(const CxRelInfo *ri, const CxTypeInfo *key_type,
					const cx_datum *key)
{
	CxSnap	   *snap = snap_get(ri);
	const cx_manifest *base = cx_snapshot_base(snap->snap);
	cx_tablescan *scan = NULL;
	const cx_rowgroup *g;
	const uint32_t *rows;
	uint32_t	n = 0;
	cx_scan_spec spec;
	cx_err		err;
	cx_code		rc;

	if (base->schema == NULL)
		return false;
	cx_scan_spec_init(&spec);
	spec.want = palloc0(sizeof(bool) * base->schema->ncolumns);
	spec_keys(&spec, key_type, key, 1);
	rc = cx_tablescan_begin_spec(snap->snap, &spec, &scan, &err);
	if (rc == CX_OK)
		rc = cx_tablescan_next(scan, &g, &rows, &n, &err);
	cx_tablescan_end(scan);
	if (rc != CX_OK)
		scan_error(ri, snap, &err);
	return n > 0;
}

static void
cx_begin_scan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	EState	   *estate = node->ss.ps.state;
	RangeTblEntry *rte = exec_rt_fetch(plan->scan.scanrelid, estate);
	CxScanState *s = palloc0(sizeof(CxScanState));
	const cx_manifest *base;

	s->ri = cxfdw_rel_info(node->ss.ss_currentRelation,
						   OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId());
	s->retrieved = linitial(plan->fdw_private);
	s->narrow_slot = plan->fdw_scan_tlist != NIL;
	s->econtext = node->ss.ps.ps_ExprContext;
	if (lsecond(plan->fdw_private) != NULL)
	{
		cxfdw_key_clause_of_plan(lsecond(plan->fdw_private),
								 linitial(plan->fdw_exprs), s->ri, &s->key);
		s->key_values = ExecInitExpr(s->key.values, &node->ss.ps);
	}
	if (lthird(plan->fdw_private) != NIL)
		s->pushdown = cxfdw_pushdown_begin(lthird(plan->fdw_private),
										   lsecond(plan->fdw_exprs),
										   &node->ss.ps);
	if (list_length(plan->fdw_private) > 3)
		s->topk = cxfdw_topk_begin(node, lfourth(plan->fdw_private),
								   lthird(plan->fdw_exprs), s->ri);
	cx_buf_init(&s->scratch);
	s->cleanup.func = release_store_objects;
	s->cleanup.arg = s;
	MemoryContextRegisterResetCallback(estate->es_query_cxt, &s->cleanup);
	node->fdw_state = s;

	/* cxfdw_scan_begin_worker gives it the leader's snapshot. */
	if (IsParallelWorker() && plan->scan.plan.parallel_aware)
		return;
	s->snap = snap_get(s->ri);
	s->snap->refs++;
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	base = cx_snapshot_base(s->snap->snap);
	begin_pending(s);
	choose_store_columns(s, base);
	/* The store scan begins with the first row asked for: the keys of a
	 * lookup may be parameters that are only set then. */
	s->scan_done = true;
	s->scan_pending_start = true;
}

/* Where attribute att, the i-th retrieved, goes in the scan tuple: at i
 * in a narrowed one, else at its own position. */
static int
slot_position(bool narrow, int att, int i)
{
	return narrow ? i : att;
}

void
cxfdw_scan_row_values(const CxRelInfo *ri, const CxBinding *bind,
					  List *retrieved, const cx_tablescan *scan, uint32 row,
					  bool narrow, Datum *values, bool *isnull)
{
	CxConvErrContext ec;
	ListCell   *lc;

	cxfdw_conv_errcontext_push(&ec, ri);
	foreach(lc, retrieved)
	{
		int			att = lfirst_int(lc) - 1;
		int			at = slot_position(narrow, att, foreach_current_index(lc));
		cx_datum	d;

		cx_colvec_get(cx_tablescan_column(scan, bind->att_col[att]), row, &d);
		isnull[at] = d.isnull;
		if (d.isnull)
			continue;
		ec.att = att;
		values[at] = cxfdw_from_cx(&ri->columns[att].type, &d, CX_LIST_SLICE);
	}
	cxfdw_conv_errcontext_pop(&ec);
}

static void
fill_from_group(CxScanState *s, TupleTableSlot *slot)
{
	cxfdw_scan_row_values(s->ri, &s->bind, s->retrieved, s->scan,
						  s->rows[s->pos], s->narrow_slot, slot->tts_values,
						  slot->tts_isnull);
}

/* Whether the transaction wrote a row of key since the scan's snapshot; if
 * so, *offset and *kind tell its newest. */
static bool
pending_newest(CxScanState *s, const cx_datum *key, size_t *offset,
			   cx_row_kind *kind)
{
	CxKeyBytes	k;

	cxfdw_key_bytes(s->key_type, key, &k);
	return cxfdw_keymap_find(s->pending_keys, &k, offset, kind);
}

/* Whether the current snapshot row is replaced or deleted by a row of the
 * transaction. */
static bool
store_row_shadowed(CxScanState *s)
{
	cx_datum	key;
	size_t		offset;
	cx_row_kind kind;

	if (s->pending == NULL)
		return false;
	cx_colvec_get(cx_tablescan_column(s->scan, s->store_key_col),
				  s->rows[s->pos], &key);
	return !key.isnull && pending_newest(s, &key, &offset, &kind);
}

/* Moves to the next buffered row that is the newest of its key and not a
 * DELETE, decoded into pending_values; false after the last. */
static bool
next_pending_row(CxScanState *s)
{
	while (s->pending != NULL && s->pending_pos < s->pending_end)
	{
		size_t		offset = s->pending_pos;
		size_t		newest;
		cx_row_kind kind;

		kind = cxfdw_pending_decode(s->pending, &s->pending_pos,
									s->pending_end, s->pending_values,
									&s->scratch);
		if (kind == CX_ROW_DELETE)
			continue;
		if (pending_newest(s, &s->pending_values[s->pending_key_col],
						   &newest, &kind) &&
			newest == offset && kind != CX_ROW_DELETE)
			return true;
	}
	return false;
}

/* Fills slot from the buffered row in pending_values. */
static void
fill_from_pending(CxScanState *s, TupleTableSlot *slot)
{
	CxConvErrContext ec;
	ListCell   *lc;

	cxfdw_conv_errcontext_push(&ec, s->ri);
	foreach(lc, s->retrieved)
	{
		int			att = lfirst_int(lc) - 1;
		int			at = slot_position(s->narrow_slot, att,
									   foreach_current_index(lc));
		const cx_datum *d = &s->pending_values[s->pending_bind.att_col[att]];

		slot->tts_isnull[at] = d->isnull;
		if (d->isnull)
			continue;
		ec.att = att;
		slot->tts_values[at] = cxfdw_from_cx(&s->ri->columns[att].type, d,
											 CX_LIST_ITEMS);
	}
	cxfdw_conv_errcontext_pop(&ec);
}

/* Moves to the next visible row of the snapshot; false at its end. */
static bool
next_store_row(CxScanState *s)
{
	cx_err		err;

	while (s->pos >= s->nrows)
	{
		if (s->scan_done)
			return false;
		if (cx_tablescan_next(s->scan, &s->group, &s->rows, &s->nrows,
							  &err) != CX_OK)
			scan_error(s->ri, s->snap, &err);
		s->pos = 0;
		s->scan_done = s->group == NULL;
	}
	return true;
}

/* The next visible row into slot, a CxNextRow. */
static bool
next_row(void *arg, TupleTableSlot *slot)
{
	CxScanState *s = arg;

	ExecClearTuple(slot);
	/* Columns the query does not use stay NULL. */
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);

	if (s->scan_pending_start)
		begin_store_scan(s);
	while (next_store_row(s))
	{
		bool		skip = store_row_shadowed(s) ||
			(s->topk != NULL &&
			 !cxfdw_topk_admit(s->topk, s->scan, s->bind.att_col,
							   s->rows[s->pos]));

		if (!skip)
			fill_from_group(s, slot);
		s->pos++;
		if (!skip)
		{
			ExecStoreVirtualTuple(slot);
			return true;
		}
	}
	if (!next_pending_row(s))
		return false;
	fill_from_pending(s, slot);
	ExecStoreVirtualTuple(slot);
	return true;
}

static TupleTableSlot *
cx_iterate(ForeignScanState *node)
{
	CxScanState *s = node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;

	if (s->topk != NULL)
		return cxfdw_topk_next(s->topk, next_row, s);
	if (!next_row(s, slot))
		ExecClearTuple(slot);
	return slot;
}

/* ---- parallel scans (the rest is in cx_parallel.c) ---- */

cx_snapshot *
cxfdw_scan_snapshot(ForeignScanState *node)
{
	return ((CxScanState *) node->fdw_state)->snap->snap;
}

bool
cxfdw_scan_has_pending(ForeignScanState *node)
{
	return ((CxScanState *) node->fdw_state)->pending != NULL;
}

void
cxfdw_scan_set_claim(ForeignScanState *node,
					 bool (*claim) (void *arg, uint32_t *unit), void *arg)
{
	CxScanState *s = node->fdw_state;

	s->claim = claim;
	s->claim_arg = arg;
}

/* A worker reads the snapshot the leader pinned (not cached: no other scan
 * of the worker reads it), none of the store's rows when store_rows is
 * false, and never the leader's buffered rows (it has none). */
void
cxfdw_scan_begin_worker(ForeignScanState *node, const cx_snapshot_pin *pin,
						bool store_rows)
{
	CxScanState *s = node->fdw_state;
	CxStore    *st = cxfdw_store_open(s->ri, CX_ACCESS_READ);
	CxSnap	   *c = MemoryContextAllocZero(TopMemoryContext, sizeof(CxSnap));
	cx_err		err;

	if (cx_snapshot_open_pinned(cxfdw_store_handle(st), pin, &c->snap,
								&err) != CX_OK)
	{
		pfree(c);
		cx_pg_error(&err, "could not read version " UINT64_FORMAT " of store %s",
					pin->base_version, s->ri->uri);
	}
	c->refs = 1;
	c->store = st;
	c->version = s->ri->version;
	s->snap = c;
	if (store_rows)
		choose_store_columns(s, cx_snapshot_base(c->snap));
	s->scan_done = true;
	s->scan_pending_start = true;
}

static void
cx_rescan(ForeignScanState *node)
{
	CxScanState *s = node->fdw_state;

	cx_tablescan_end(s->scan);
	s->scan = NULL;
	s->scan_done = true;
	s->scan_pending_start = true;
	s->pending_pos = s->pending_start;
	if (s->topk != NULL)
		cxfdw_topk_rescan(s->topk);
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
							cx_snapshot_version(s->snap->snap), es);
	ExplainPropertyUInteger("Generations", NULL,
							cx_snapshot_pending_generations(s->snap->snap), es);
	if (s->key.clause != NULL)
		ExplainPropertyText("Key Lookup",
							deparse_expression((Node *) s->key.clause,
											   set_deparse_context_plan(es->deparse_cxt,
																		node->ss.ps.plan,
																		NIL),
											   false, false),
							es);
	if (es->verbose)
		cxfdw_pushdown_explain(s->pushdown, node, es);
	if (s->topk != NULL)
		cxfdw_topk_explain(s->topk, node, es);
	if (es->analyze && s->scan != NULL)
	{
		const cx_tablescan_stats *st = cx_tablescan_get_stats(s->scan);

		ExplainPropertyUInteger("Fragments Read", NULL, st->fragments_opened, es);
		if (s->key.clause != NULL || s->pushdown != NULL || s->topk != NULL)
		{
			ExplainPropertyUInteger("Row Groups Read", NULL, st->row_groups_read, es);
			ExplainPropertyUInteger("Row Groups Skipped", NULL,
									st->row_groups_skipped, es);
		}
		if (s->pushdown != NULL)
			cxfdw_pushdown_explain_counts(st, es);
		ExplainPropertyUInteger("Rows Hidden", NULL, st->rows_hidden, es);
	}
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
	cxfdw_parallel_routine(routine);
	cxfdw_analyze_routine(routine);
	routine->GetForeignUpperPaths = cxfdw_upper_paths;
}
