/*
 * cx_modify.c — INSERT and COPY FROM into a ctxstore foreign table.
 *
 * Inserting converts each row to engine values in the store's column order
 * (NULL for store columns the table lacks) and appends it to the
 * transaction's buffer for the table (cx_xact.c); nothing reaches the store
 * before COMMIT.  UPDATE, DELETE and ON CONFLICT are refused at plan time.
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_writer_protocol.h"

/* Rows the executor collects before calling ExecForeignBatchInsert. */
#define INSERT_BATCH_SIZE 64

typedef struct CxModifyState
{
	CxRelInfo  *ri;
	TupleDesc	tupdesc;
	CxPending  *pending;
	CxBinding	binding;
	cx_datum   *values;			/* one per store column */
	int			key_col;		/* the key's store column, -1 if none */
	MemoryContext row_cxt;		/* conversions of one row */
} CxModifyState;

static List *
cx_plan_modify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
			   int subplan_index)
{
	if (plan->operation == CMD_UPDATE || plan->operation == CMD_DELETE)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("%s on ctxstore foreign tables is not supported yet",
					   plan->operation == CMD_UPDATE ? "UPDATE" : "DELETE"),
				errhint("ctxstore foreign tables accept INSERT and COPY FROM."));
	if (plan->onConflictAction != ONCONFLICT_NONE)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("INSERT with ON CONFLICT on ctxstore foreign tables is not supported yet"));
	return NIL;
}

static int
cx_updatable(Relation rel)
{
	return 1 << CMD_INSERT;
}

/* Whose privileges and user mapping an insert uses. */
static Oid
insert_user(EState *estate, ResultRelInfo *rinfo)
{
	Index		rti = rinfo->ri_RangeTableIndex;
	RangeTblEntry *rte;

	/* A partition reached by tuple routing has no range table entry of its
	 * own; the routing target's says who is inserting. */
	if (rti == 0)
		rti = rinfo->ri_RootResultRelInfo->ri_RangeTableIndex;
	rte = exec_rt_fetch(rti, estate);
	return OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
}

static CxModifyState *
begin_insert(EState *estate, ResultRelInfo *rinfo)
{
	Relation	rel = rinfo->ri_RelationDesc;
	CxModifyState *state = palloc0(sizeof(CxModifyState));
	CxRelInfo  *ri = cxfdw_rel_info(rel, insert_user(estate, rinfo));
	CxStore    *st;

	if (ri->version != 0)
		ereport(ERROR,
				errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				errmsg("foreign table \"%s\" is pinned to version " UINT64_FORMAT " of its store and is read-only",
					   ri->relname, ri->version),
				errhint("Insert through a foreign table without the version option."));
	if (!cx_writer_available())
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("cannot write to foreign table \"%s\": the ctxstore writer worker is not running",
					   ri->relname),
				errdetail("ctxstore was not loaded through shared_preload_libraries."),
				errhint("Add ctxstore to shared_preload_libraries in postgresql.conf and restart the server."));

	st = cxfdw_store_open(ri, CX_ACCESS_WRITE);
	state->ri = ri;
	state->tupdesc = RelationGetDescr(rel);
	state->pending = cxfdw_pending_open(ri, st);
	cxfdw_bind(ri, cxfdw_pending_schema(state->pending), &state->binding);
	state->key_col = cx_schema_find(state->binding.schema,
									cxfdw_pending_key(state->pending));
	state->values = palloc(sizeof(cx_datum) * Max(state->binding.schema->ncolumns, 1));
	state->row_cxt = AllocSetContextCreate(estate->es_query_cxt,
										   "ctxstore insert row",
										   ALLOCSET_DEFAULT_SIZES);
	return state;
}

static void
cx_begin_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
				List *fdw_private, int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	rinfo->ri_FdwState = begin_insert(mtstate->ps.state, rinfo);
}

static void
cx_begin_insert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	rinfo->ri_FdwState = begin_insert(mtstate->ps.state, rinfo);
}

/* Foreign tables get no constraint checks from the executor; NOT NULL is
 * cheap to honour here and the store has no other way to keep it. */
static void
check_not_null(CxModifyState *state, int att)
{
	if (TupleDescAttr(state->tupdesc, att)->attnotnull)
		ereport(ERROR,
				errcode(ERRCODE_NOT_NULL_VIOLATION),
				errmsg("null value in column \"%s\" of relation \"%s\" violates not-null constraint",
					   state->ri->columns[att].attname, state->ri->relname));
}

/* Every row has a key: it is what names the row to the store (a NULL key
 * could be neither found, replaced nor deleted). */
static void
check_key(CxModifyState *state)
{
	if (state->key_col >= 0 && state->values[state->key_col].isnull)
		ereport(ERROR,
				errcode(ERRCODE_NOT_NULL_VIOLATION),
				errmsg("null value in key column \"%s\" of foreign table \"%s\"",
					   state->binding.schema->columns[state->key_col].name,
					   state->ri->relname),
				errdetail("Every row of a ctxstore store needs a value of its key."),
				errhint("Give the key column (the table's key option, default \"id\") a value."));
}

static void
insert_row(CxModifyState *state, TupleTableSlot *slot)
{
	const CxBinding *b = &state->binding;
	CxConvErrContext ec;
	MemoryContext old;

	slot_getallattrs(slot);
	for (int att = 0; att < state->ri->natts; att++)
		if (slot->tts_isnull[att] && b->att_col[att] >= 0)
			check_not_null(state, att);

	cxfdw_conv_errcontext_push(&ec, state->ri);
	old = MemoryContextSwitchTo(state->row_cxt);
	for (uint32 c = 0; c < b->schema->ncolumns; c++)
	{
		int			att = b->col_att[c];

		state->values[c].isnull = att < 0 || slot->tts_isnull[att];
		if (state->values[c].isnull)
			continue;
		ec.att = att;
		cxfdw_to_cx(&state->ri->columns[att].type, slot->tts_values[att],
					&state->values[c]);
	}
	ec.att = -1;
	check_key(state);
	cxfdw_pending_append(state->pending, CX_ROW_PUT, state->values);
	MemoryContextSwitchTo(old);
	cxfdw_conv_errcontext_pop(&ec);
	MemoryContextReset(state->row_cxt);
}

static TupleTableSlot *
cx_exec_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
			   TupleTableSlot *planSlot)
{
	insert_row(rinfo->ri_FdwState, slot);
	return slot;
}

static TupleTableSlot **
cx_exec_batch_insert(EState *estate, ResultRelInfo *rinfo,
					 TupleTableSlot **slots, TupleTableSlot **planSlots,
					 int *numSlots)
{
	for (int i = 0; i < *numSlots; i++)
		insert_row(rinfo->ri_FdwState, slots[i]);
	return slots;
}

/* Batching hands the FDW rows in groups; RETURNING, row triggers and WITH
 * CHECK OPTION need each row back as it is inserted, so they disable it. */
static int
cx_batch_size(ResultRelInfo *rinfo)
{
	TriggerDesc *trig = rinfo->ri_TrigDesc;

	if (rinfo->ri_projectReturning != NULL || rinfo->ri_WithCheckOptions != NIL ||
		(trig != NULL && (trig->trig_insert_before_row || trig->trig_insert_after_row)))
		return 1;
	return INSERT_BATCH_SIZE;
}

void
cxfdw_modify_routine(FdwRoutine *routine)
{
	routine->PlanForeignModify = cx_plan_modify;
	routine->BeginForeignModify = cx_begin_modify;
	routine->ExecForeignInsert = cx_exec_insert;
	routine->ExecForeignBatchInsert = cx_exec_batch_insert;
	routine->GetForeignModifyBatchSize = cx_batch_size;
	routine->BeginForeignInsert = cx_begin_insert;
	routine->IsForeignRelUpdatable = cx_updatable;
}
