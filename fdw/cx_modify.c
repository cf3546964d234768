/*
 * cx_modify.c — INSERT, COPY FROM, UPDATE, DELETE and TRUNCATE of a ctxstore
 * foreign table.
 *
 * Every change becomes rows appended to the transaction's buffer for the
 * table (cx_xact.c) in the store's column order; nothing reaches the store
 * before COMMIT.  An inserted row is sent as the request its table's options
 * ask for (insert_kind); an updated row as the key's new whole row (PUT); a
 * deleted row as a tombstone (DELETE with only the key); TRUNCATE as one
 * DELETE with a NULL key.  The key is the row identity of UPDATE and DELETE:
 * the scan below them fetches it, and changing it is refused.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "access/table.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/inherit.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "ctxstore_fdw.h"
#include "cx_writer_protocol.h"

/* Rows the executor collects before calling ExecForeignBatchInsert. */
#define INSERT_BATCH_SIZE 64

/* Names of the junk columns UPDATE and DELETE get from the scan. */
#define KEY_JUNK "cx_key"
#define DELETED_ROW_JUNK "cx_deleted_row"

typedef struct CxModifyState
{
	const CxRelInfo *ri;
	TupleDesc	tupdesc;
	CxPending  *pending;
	const CxStoreSettings *settings;
	CxBinding	binding;
	cx_datum   *values;			/* one per store column */
	int			key_col;		/* the key's store column */
	int			key_att;		/* and its attribute, -1 if the table has
								 * none */
	bool		do_nothing;		/* INSERT ... ON CONFLICT DO NOTHING */
	AttrNumber	key_junk;		/* UPDATE, DELETE: the key in the plan's row */
	AttrNumber	deleted_row_junk;	/* DELETE RETURNING: the whole old row */
	MemoryContext row_cxt;		/* conversions of one row */
} CxModifyState;

static const char *
operation_name(CmdType operation)
{
	switch (operation)
	{
		case CMD_UPDATE:
			return "UPDATE";
		case CMD_DELETE:
			return "DELETE";
		default:
			return "INSERT";
	}
}

/* The key attribute of a table that UPDATE or DELETE identifies rows of. */
static int
row_identity_attribute(Relation rel, CmdType operation)
{
	CxRelInfo  *ri = cxfdw_rel_info(rel, GetUserId());
	int			att = cxfdw_key_attribute(ri);
	CxStoreSettings s;

	if (att < 0)
	{
		cxfdw_table_settings(ri, &s);
		ereport(ERROR,
				errcode(ERRCODE_UNDEFINED_COLUMN),
				errmsg("cannot %s foreign table \"%s\": it has no column for its key \"%s\"",
					   operation_name(operation), ri->relname, s.key_column),
				errdetail("UPDATE and DELETE identify rows by their key."),
				errhint("Add the key column to the foreign table, or set its key option to a column it has."));
	}
	return att;
}

/*
 * The scan below UPDATE and DELETE returns each row's key; DELETE RETURNING
 * also needs the whole row it deletes (the store gets only the key).
 */
static void
cx_add_update_targets(PlannerInfo *root, Index rtindex,
					  RangeTblEntry *target_rte, Relation target_relation)
{
	CmdType		operation = root->parse->commandType;
	Form_pg_attribute attr;

	attr = TupleDescAttr(RelationGetDescr(target_relation),
						 row_identity_attribute(target_relation, operation));
	add_row_identity_var(root, makeVar(rtindex, attr->attnum, attr->atttypid,
									   attr->atttypmod, attr->attcollation, 0),
						 rtindex, KEY_JUNK);
	/* Of type record, as PostgreSQL's own whole-row identity, so that the
	 * partitions of one table (each its own row type) can share it. */
	if (operation == CMD_DELETE && root->parse->returningList != NIL)
		add_row_identity_var(root, makeVar(rtindex, InvalidAttrNumber, RECORDOID,
										   -1, InvalidOid, 0),
							 rtindex, DELETED_ROW_JUNK);
}

static List *
cx_plan_modify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
			   int subplan_index)
{
	RangeTblEntry *rte = planner_rt_fetch(resultRelation, root);

	if (plan->operation == CMD_UPDATE)
	{
		Relation	rel = table_open(rte->relid, NoLock);
		int			att = row_identity_attribute(rel, CMD_UPDATE);
		Bitmapset  *updated = get_rel_all_updated_cols(root,
													   find_base_rel(root, resultRelation));

		if (bms_is_member(att + 1 - FirstLowInvalidHeapAttributeNumber, updated))
			ereport(ERROR,
					errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("cannot update key column \"%s\" of foreign table \"%s\"",
						   NameStr(TupleDescAttr(RelationGetDescr(rel), att)->attname),
						   RelationGetRelationName(rel)),
					errdetail("A row's key is its identity in the store."),
					errhint("DELETE the row and INSERT it with the new key."));
		table_close(rel, NoLock);
	}
	/* ON CONFLICT DO UPDATE never reaches a foreign table: the parser
	 * refuses it (it needs a unique index). */
	return list_make1(makeBoolean(plan->onConflictAction == ONCONFLICT_NOTHING));
}

static int
cx_updatable(Relation rel)
{
	return (1 << CMD_INSERT) | (1 << CMD_UPDATE) | (1 << CMD_DELETE);
}

/* Whose privileges and user mapping a change uses. */
static Oid
modify_user(EState *estate, ResultRelInfo *rinfo)
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

/* The buffer a change of ri goes to, after the checks every change makes. */
static CxPending *
open_for_write(const CxRelInfo *ri)
{
	if (ri->version != 0)
		ereport(ERROR,
				errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				errmsg("foreign table \"%s\" is pinned to version " UINT64_FORMAT " of its store and is read-only",
					   ri->relname, ri->version),
				errhint("Write through a foreign table without the version option."));
	if (!cx_writer_available())
		ereport(ERROR,
				errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("cannot write to foreign table \"%s\": the ctxstore writer worker is not running",
					   ri->relname),
				errdetail("ctxstore was not loaded through shared_preload_libraries."),
				errhint("Add ctxstore to shared_preload_libraries in postgresql.conf and restart the server."));
	return cxfdw_pending_open(ri, cxfdw_store_open(ri, CX_ACCESS_WRITE));
}

static CxModifyState *
begin_modify(EState *estate, ResultRelInfo *rinfo)
{
	Relation	rel = rinfo->ri_RelationDesc;
	CxModifyState *state = palloc0(sizeof(CxModifyState));
	const CxRelInfo *ri = cxfdw_rel_info_cached(rel, modify_user(estate, rinfo));

	state->ri = ri;
	state->tupdesc = RelationGetDescr(rel);
	state->pending = open_for_write(ri);
	state->settings = cxfdw_pending_settings(state->pending);
	cxfdw_bind(ri, cxfdw_pending_schema(state->pending), &state->binding);
	state->key_col = cx_schema_find(state->binding.schema,
									state->settings->key_column);
	state->key_att = state->binding.col_att[state->key_col];
	state->values = palloc(sizeof(cx_datum) * Max(state->binding.schema->ncolumns, 1));
	state->row_cxt = AllocSetContextCreate(estate->es_query_cxt,
										   "ctxstore modified row",
										   ALLOCSET_DEFAULT_SIZES);
	return state;
}

static void
cx_begin_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
				List *fdw_private, int subplan_index, int eflags)
{
	CmdType		operation = mtstate->operation;
	List	   *tlist = outerPlanState(mtstate)->plan->targetlist;
	CxModifyState *state;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	state = begin_modify(mtstate->ps.state, rinfo);
	state->do_nothing = boolVal(linitial(fdw_private));
	if (operation == CMD_UPDATE || operation == CMD_DELETE)
	{
		state->key_junk = ExecFindJunkAttributeInTlist(tlist, KEY_JUNK);
		if (!AttributeNumberIsValid(state->key_junk))
			elog(ERROR, "could not find junk column %s", KEY_JUNK);
		state->deleted_row_junk = ExecFindJunkAttributeInTlist(tlist,
															   DELETED_ROW_JUNK);
	}
	rinfo->ri_FdwState = state;
}

static void
cx_begin_insert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	CxModifyState *state = begin_modify(mtstate->ps.state, rinfo);
	ModifyTable *plan = (ModifyTable *) mtstate->ps.plan;

	/* COPY FROM has no plan. */
	state->do_nothing = plan != NULL &&
		plan->onConflictAction == ONCONFLICT_NOTHING;
	rinfo->ri_FdwState = state;
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
	if (state->values[state->key_col].isnull)
		ereport(ERROR,
				errcode(ERRCODE_NOT_NULL_VIOLATION),
				errmsg("null value in key column \"%s\" of foreign table \"%s\"",
					   state->binding.schema->columns[state->key_col].name,
					   state->ri->relname),
				errdetail("Every row of a ctxstore store needs a value of its key."),
				errhint("Give the key column (the table's key option, default \"id\") a value."));
}

/* Converts slot's row into state->values (in row_cxt). */
static void
convert_row(CxModifyState *state, TupleTableSlot *slot)
{
	const CxBinding *b = &state->binding;
	CxConvErrContext ec;

	slot_getallattrs(slot);
	for (int att = 0; att < state->ri->natts; att++)
		if (slot->tts_isnull[att] && b->att_col[att] >= 0)
			check_not_null(state, att);

	cxfdw_conv_errcontext_push(&ec, state->ri);
	for (uint32 c = 0; c < b->schema->ncolumns; c++)
	{
		int			att = b->col_att[c];

		state->values[c].isnull = att < 0 || slot->tts_isnull[att];
		if (state->values[c].isnull)
			continue;
		ec.att = att;
		cxfdw_to_cx_stored(&state->ri->columns[att].type,
						   slot->tts_values[att], &state->values[c]);
	}
	cxfdw_conv_errcontext_pop(&ec);
	check_key(state);
}

/*
 * The request an inserted row is sent as: an upsert if the table names an
 * upsert key, an insert-if-absent for ON CONFLICT DO NOTHING, an insert that
 * must not meet a live key if the key is unique, else a plain new version.
 */
static cx_row_kind
insert_kind(const CxModifyState *state)
{
	if (state->settings->upsert_key[0] != '\0')
		return CX_ROW_UPSERT;
	if (state->do_nothing)
		return CX_ROW_INSERT_IF_ABSENT;
	if (state->settings->unique_key)
		return CX_ROW_INSERT;
	return CX_ROW_PUT;
}

/* The newest buffered row of the key in state->values (this statement's
 * included): false if the transaction wrote none since its last TRUNCATE. */
static bool
pending_version(CxModifyState *state, cx_row_kind *kind)
{
	CxKeyBytes	key;
	size_t		offset;

	cxfdw_key_bytes(state->binding.schema->columns[state->key_col].type,
					&state->values[state->key_col], &key);
	return cxfdw_keymap_find(cxfdw_pending_keys(state->pending), &key,
							 &offset, kind);
}

/* Whether the transaction holds a live row of the key in state->values. */
static bool
key_pending(CxModifyState *state)
{
	cx_row_kind kind;

	return pending_version(state, &kind) && kind != CX_ROW_DELETE;
}

/*
 * Whether the key in state->values is live for this transaction: as its
 * newest buffered row says if it wrote the key, else as the snapshot says
 * unless a buffered TRUNCATE hid every committed row.  (The writer checks
 * again at COMMIT and drops the row if a concurrent commit took the key.)
 */
static bool
key_live(CxModifyState *state)
{
	cx_row_kind kind;
	size_t		from;

	if (pending_version(state, &kind))
		return kind != CX_ROW_DELETE;
	if (cxfdw_keymap_truncated(cxfdw_pending_keys(state->pending), &from))
		return false;
	return cxfdw_key_committed(state->ri, &state->ri->columns[state->key_att].type,
							   &state->values[state->key_col]);
}

static void
unique_violation(CxModifyState *state, TupleTableSlot *slot)
{
	Form_pg_attribute attr = TupleDescAttr(state->tupdesc, state->key_att);
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(attr->atttypid, &out, &varlena);
	ereport(ERROR,
			errcode(ERRCODE_UNIQUE_VIOLATION),
			errmsg("duplicate key value violates the unique key of foreign table \"%s\"",
				   state->ri->relname),
			errdetail("Key (%s)=(%s) already exists.", NameStr(attr->attname),
					  OidOutputFunctionCall(out, slot->tts_values[state->key_att])),
			errhint("Set unique_key 'false' on the table to make a later insert replace the row."));
}

/*
 * Buffers one inserted row; false if ON CONFLICT DO NOTHING skips it.  Keys
 * live in this transaction are checked here, before the row is sent (and,
 * for DO NOTHING, committed ones too, so the command tag counts what is
 * inserted); the writer checks committed rows again at COMMIT.
 */
static bool
insert_row(CxModifyState *state, TupleTableSlot *slot)
{
	cx_row_kind kind = insert_kind(state);
	bool		inserted = true;
	MemoryContext old = MemoryContextSwitchTo(state->row_cxt);

	convert_row(state, slot);
	if (state->settings->upsert_key[0] != '\0')
		;						/* the writer resolves repeats */
	else if (state->do_nothing)
		inserted = !key_live(state);
	else if (state->settings->unique_key && key_pending(state))
		unique_violation(state, slot);
	if (inserted)
		cxfdw_pending_append(state->pending, kind, state->values);
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->row_cxt);
	return inserted;
}

static TupleTableSlot *
cx_exec_insert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
			   TupleTableSlot *planSlot)
{
	return insert_row(rinfo->ri_FdwState, slot) ? slot : NULL;
}

static void
swap_slots(TupleTableSlot **slots, int i, int j)
{
	TupleTableSlot *slot = slots[i];

	slots[i] = slots[j];
	slots[j] = slot;
}

/*
 * Moves the inserted rows first: the executor counts *numSlots of them.  The
 * arrays are the executor's own slots, which it clears and reuses, so they
 * are reordered, never overwritten.
 */
static TupleTableSlot **
cx_exec_batch_insert(EState *estate, ResultRelInfo *rinfo,
					 TupleTableSlot **slots, TupleTableSlot **planSlots,
					 int *numSlots)
{
	int			ninserted = 0;

	for (int i = 0; i < *numSlots; i++)
	{
		if (!insert_row(rinfo->ri_FdwState, slots[i]))
			continue;
		swap_slots(slots, ninserted, i);
		swap_slots(planSlots, ninserted, i);
		ninserted++;
	}
	*numSlots = ninserted;
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

/* EXPLAIN VERBOSE of an INSERT says how many rows go to the FDW at a time. */
static void
cx_explain_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo,
				  List *fdw_private, int subplan_index, ExplainState *es)
{
	if (es->verbose && mtstate->operation == CMD_INSERT)
		ExplainPropertyInteger("Batch Size", NULL, rinfo->ri_BatchSize, es);
}

/*
 * PostgreSQL moves an updated row to another partition only out of a local
 * partition; out of a foreign one the row would stay where it no longer
 * belongs, so the UPDATE is refused.
 */
static void
check_partition(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot)
{
	Relation	rel = rinfo->ri_RelationDesc;

	if (rel->rd_rel->relispartition &&
		!ExecPartitionCheck(rinfo, slot, estate, false))
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("cannot move a row out of foreign partition \"%s\"",
					   RelationGetRelationName(rel)),
				errdetail("The updated row no longer satisfies the partition constraint."),
				errhint("DELETE the row and INSERT it with the new values."));
}

/* The new version of an updated row replaces the whole row: slot holds
 * every column (unchanged ones from the scan). */
static TupleTableSlot *
cx_exec_update(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
			   TupleTableSlot *planSlot)
{
	CxModifyState *state = rinfo->ri_FdwState;
	MemoryContext old;

	check_partition(estate, rinfo, slot);
	old = MemoryContextSwitchTo(state->row_cxt);
	convert_row(state, slot);
	cxfdw_pending_append(state->pending, CX_ROW_PUT, state->values);
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->row_cxt);
	return slot;
}

/* RETURNING of a DELETE shows the row as the scan read it. */
static void
store_deleted_row(CxModifyState *state, TupleTableSlot *slot,
				  TupleTableSlot *planSlot)
{
	bool		isnull;
	Datum		d = ExecGetJunkAttribute(planSlot, state->deleted_row_junk,
										 &isnull);
	HeapTupleHeader td = DatumGetHeapTupleHeader(d);
	HeapTupleData tuple;

	tuple.t_len = HeapTupleHeaderGetDatumLength(td);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = state->ri->relid;
	tuple.t_data = td;
	/* A heap-tuple slot keeps the HeapTuple itself: give it a copy. */
	ExecForceStoreHeapTuple(heap_copytuple(&tuple), slot, true);
}

/* A deleted row becomes a tombstone: the key and nothing else. */
static TupleTableSlot *
cx_exec_delete(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
			   TupleTableSlot *planSlot)
{
	CxModifyState *state = rinfo->ri_FdwState;
	uint32		ncolumns = state->binding.schema->ncolumns;
	bool		isnull;
	Datum		key = ExecGetJunkAttribute(planSlot, state->key_junk, &isnull);
	MemoryContext old = MemoryContextSwitchTo(state->row_cxt);

	Assert(!isnull);
	for (uint32 c = 0; c < ncolumns; c++)
		state->values[c].isnull = true;
	cxfdw_to_cx(&state->ri->columns[state->key_att].type, key,
				&state->values[state->key_col]);
	state->values[state->key_col].isnull = false;
	cxfdw_pending_append(state->pending, CX_ROW_DELETE, state->values);
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->row_cxt);
	if (AttributeNumberIsValid(state->deleted_row_junk))
		store_deleted_row(state, slot, planSlot);
	return slot;
}

/*
 * TRUNCATE buffers one DELETE with a NULL key per table: at commit it hides
 * every row committed before it.  Foreign tables have no foreign keys to
 * cascade to, and PostgreSQL itself restarts the sequences RESTART IDENTITY
 * names, so both options need nothing here.
 */
static void
cx_exec_truncate(List *rels, DropBehavior behavior, bool restart_seqs)
{
	ListCell   *lc;

	foreach(lc, rels)
	{
		Relation	rel = lfirst(lc);
		const CxRelInfo *ri = cxfdw_rel_info_cached(rel, GetUserId());
		CxPending  *pending = open_for_write(ri);
		uint32		ncolumns = cxfdw_pending_schema(pending)->ncolumns;
		cx_datum   *values = palloc(sizeof(cx_datum) * Max(ncolumns, 1));

		for (uint32 c = 0; c < ncolumns; c++)
			values[c].isnull = true;
		cxfdw_pending_append(pending, CX_ROW_DELETE, values);
		pfree(values);
	}
}

void
cxfdw_modify_routine(FdwRoutine *routine)
{
	routine->AddForeignUpdateTargets = cx_add_update_targets;
	routine->PlanForeignModify = cx_plan_modify;
	routine->BeginForeignModify = cx_begin_modify;
	routine->ExecForeignInsert = cx_exec_insert;
	routine->ExecForeignBatchInsert = cx_exec_batch_insert;
	routine->GetForeignModifyBatchSize = cx_batch_size;
	routine->ExecForeignUpdate = cx_exec_update;
	routine->ExecForeignDelete = cx_exec_delete;
	routine->BeginForeignInsert = cx_begin_insert;
	routine->IsForeignRelUpdatable = cx_updatable;
	routine->ExecForeignTruncate = cx_exec_truncate;
	routine->ExplainForeignModify = cx_explain_modify;
}
