/*
 * cx_merge.c — merging a shard's oldest unmerged generations into the base
 * table in one atomic base commit (cx_merge.h; protocol and crash cases in
 * docs/design/merge.md).
 *
 * The long part (reading the generations and the base keys, writing the new
 * fragments) touches no manifest, so the shard's appends and other shards'
 * merges go on meanwhile.  Only the last step is a commit, and its rebase
 * callback re-does the cheap part on whatever base version is newest: checks
 * that nobody merged these generations, compares our rows with fragments
 * committed since we started, adds fragments, deletion vectors and the
 * watermark together.
 */
#include <stdlib.h>
#include <string.h>

#include "table/cx_commit.h"
#include "util/cx_failpoint.h"
#include "merge/cx_merge_int.h"

void
cx_merge_options_default(cx_merge_options *o)
{
	memset(o, 0, sizeof(*o));	/* every option added later defaults to 0 */
	o->max_generations = CX_MERGE_DEFAULT_MAX_GENERATIONS;
	o->max_bytes = CX_MERGE_DEFAULT_MAX_BYTES;
	o->target_rows_per_fragment = CX_MERGE_DEFAULT_TARGET_ROWS;
	cx_fragw_options_default(&o->fragment);
	o->sort_key = NULL;
	o->sort_memory = CX_MERGE_DEFAULT_SORT_MEMORY;
}

static void
merge_state_free(merge_state *ms)
{
	cx_gen_memo_close(ms->memo);
	cx_manifest_free(ms->start);
	cx_shard_manifest_free(ms->sm);
	if (ms->table != NULL)
		cx_schema_free(ms->table);
	if (ms->written_schema != NULL)
		cx_schema_free(ms->written_schema);
	cx_keymap_free(ms->map);
	cx_keyrange_free(&ms->range);
	cx_dvset_free(&ms->replaced);
	cx_dvset_free(&ms->rebased);
	for (uint32_t i = 0; i < ms->nscanned; i++)
		free(ms->scanned[i]);
	free(ms->scanned);
	for (uint32_t i = 0; i < ms->nout; i++)
		cx_fragment_info_free(&ms->out[i]);
	free(ms->out);
}

/*
 * The oldest generations above the watermark: at most max_generations and
 * max_bytes of fragments, but always at least one (a generation larger than
 * max_bytes must still be merged, or the shard would never make progress),
 * and never part of one.
 */
static cx_code
choose_generations(merge_state *ms, cx_err *err)
{
	const cx_shard_manifest *sm = ms->sm;
	uint64_t	merged = cx_manifest_merged_gen(ms->start, ms->shard_id);
	uint64_t	bytes = 0;
	uint32_t	first = 0;

	while (first < sm->ngens && sm->gens[first].gen <= merged)
		first++;
	ms->gens = &sm->gens[first];
	ms->ngens = 0;
	for (uint32_t i = first; i < sm->ngens; i++)
	{
		uint64_t	size = sm->gens[i].fragment.size;

		if (i > first && sm->gens[i].gen <= sm->gens[i - 1].gen)
			return cx_err_set(err, CX_ERR_CORRUPT,
							  "shard %s manifest version %llu: generations out of order",
							  ms->shard_id, (unsigned long long) sm->version);
		if (ms->ngens > 0 &&
			(ms->ngens >= ms->opt.max_generations ||
			 bytes >= ms->opt.max_bytes || size > ms->opt.max_bytes - bytes))
			break;
		bytes = size > UINT64_MAX - bytes ? UINT64_MAX : bytes + size;
		ms->ngens++;
	}
	return CX_OK;
}

/*
 * The order rows are written in: the sort key, then the key, so that zone
 * maps of both become selective (without a sort key the key is the order;
 * a table with neither keeps commit order and is not buffered).  The
 * fragments record it (cx_fragw_options.sort_columns).
 */
static cx_code
fix_order(merge_state *ms, cx_err *err)
{
	if (cx_sort_order_resolve(ms->table, ms->opt.sort_key, ms->keyed,
							  ms->key_col, &ms->order, err) != CX_OK)
		return err->code;
	ms->opt.fragment.sort_columns = ms->order.cols;
	ms->opt.fragment.nsort_columns = ms->order.n;
	return CX_OK;
}

/* The table schema, what merged fragments hold, and the key.  Writers
 * record the schema in the base before their first generation exists. */
static cx_code
fix_table(merge_state *ms, cx_err *err)
{
	if (ms->start->schema == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "base version %llu has no schema but shard %s lists generations",
						  (unsigned long long) ms->start->version, ms->shard_id);
	if ((ms->table = cx_schema_clone(ms->start->schema)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	if (cx_shard_generation_schema(ms->table, &ms->written_schema,
								   err) != CX_OK)
		return err->code;
	ms->keyed = ms->start->key_column != NULL;
	if (ms->keyed &&
		cx_key_column(ms->table, ms->start->key_column, &ms->key_col,
					  err) != CX_OK)
		return err->code;
	return fix_order(ms, err);
}

static bool
same_text(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* Table properties that must not have changed since the merge started. */
static cx_code
check_table(const merge_state *ms, cx_manifest *next, cx_err *err)
{
	if (!same_text(next->key_column, ms->start->key_column))
		return cx_err_set(err, CX_ERR_CONFLICT,
						  "merge of shard %s: the table key changed while merging",
						  ms->shard_id);
	if (next->schema == NULL)
		return cx_err_set(err, CX_ERR_CONFLICT,
						  "merge of shard %s: the base lost its schema while merging",
						  ms->shard_id);
	/* The columns may have changed meanwhile: the new fragments keep the
	 * schema they were written with and are read by field id. */
	if (cx_manifest_had_schema(next, ms->table))
		return CX_OK;
	return cx_commit_check_schema(next->schema, ms->table, err);
}

/*
 * The newest TRUNCATE marker of the chosen generations (the newest
 * generation holding one) and the cut it makes with the truncation the
 * base already records.  Only tables with a key have markers (a tombstone
 * with a NULL key).
 */
static cx_code
find_truncation(merge_state *ms, cx_err *err)
{
	ms->cut_ts = ms->start->truncated_before_us;
	for (uint32_t i = ms->ngens; ms->keyed && i > 0; i--)
	{
		cx_objstore *from;
		cx_code		rc;

		if (cx_generation_open(ms->s, ms->sm, &ms->gens[i - 1], &from,
							   err) != CX_OK)
			return cx_shard_generation_failed(ms->sm, &ms->gens[i - 1], err);
		rc = cx_marker_find(cx_gen_memo_source(ms->memo, from),
							&ms->gens[i - 1].fragment, ms->table,
							ms->key_col, &ms->mark, err);
		cx_generation_done(ms->s, from);
		if (rc != CX_OK)
			return cx_shard_generation_failed(ms->sm, &ms->gens[i - 1], err);
		if (!ms->mark.found)
			continue;
		ms->mark_source = i - 1;
		if (ms->mark.ts > ms->cut_ts)
			ms->cut_ts = ms->mark.ts;
		break;
	}
	return CX_OK;
}

/* Derives the committed version from the newest one (cx_rebase_fn). */
static cx_code
merge_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			 cx_err *err)
{
	merge_state *ms = arg;
	uint64_t	first = ms->gens[0].gen;
	uint64_t	last = ms->gens[ms->ngens - 1].gen;
	uint64_t	merged = cx_manifest_merged_gen(next, ms->shard_id);
	uint64_t	replaced = 0;

	if (merged >= first)
		return cx_err_set(err, CX_ERR_CONFLICT,
						  "merge of shard %s generations %llu..%llu: another merge got there first (watermark now %llu); nothing committed",
						  ms->shard_id, (unsigned long long) first,
						  (unsigned long long) last,
						  (unsigned long long) merged);
	if (check_table(ms, next, err) != CX_OK)
		return err->code;
	if (ms->keyed && base != NULL && base->version != ms->start->version &&
		cx_merge_compare_new(ms, base, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < ms->nout; i++)
		if (cx_manifest_add_fragment(next, &ms->out[i], err) != CX_OK)
			return err->code;
	/* A merge of another shard may have merged a TRUNCATE meanwhile and
	 * removed fragments whose rows we replace: nothing left to delete. */
	cx_dvset_forget_truncated(&ms->replaced, ms->start, next);
	if (cx_dvset_apply(&ms->replaced, next, &replaced, err) != CX_OK ||
		cx_dvset_apply(&ms->rebased, next, &replaced, err) != CX_OK)
		return err->code;
	ms->rows_replaced = replaced;
	/* Also where only another merge raised it: fragments written by merges
	 * that started before it may lie wholly before it. */
	(void) cx_manifest_truncate(next, ms->mark.found ? ms->mark.ts : 0);
	return cx_manifest_set_merged_gen(next, ms->shard_id, last, err);
}

/* The shard manifest the merge chooses from (see plan). */
static cx_code
load_shard(merge_state *ms, cx_err *err)
{
	if (ms->opt.shard_version > 0)
	{
		cx_code		rc = cx_shard_manifest_load_version_cached(ms->s, ms->shard_id,
															   ms->opt.shard_version,
															   &ms->sm, err);

		if (rc != CX_ERR_NOT_FOUND)
			return rc;
	}
	return cx_shard_manifest_load_latest_cached(ms->s, ms->shard_id, &ms->sm,
												err);
}

/*
 * Reads the shard and base manifests and picks the generations.  The shard
 * manifest comes first: a writer records the table's schema in the base
 * before its first generation exists, so the base read after a shard
 * manifest that lists generations has the schema (read the other way
 * round, a first append between the two reads looked like a corrupt
 * store).  A base newer than the shard manifest only skips generations
 * another merge took meanwhile.  The shard manifest is the version the
 * options name (the writer's newest when it asked for the merge), else the
 * newest through the handle's cache: a maintenance handle merges the same
 * shard job after job, and probing on from the version it saw last costs a
 * few HEADs, where a cold read probes on from the shard hint.
 */
static cx_code
plan(merge_state *ms, cx_err *err)
{
	if (cx_shard_id_validate(ms->shard_id, err) != CX_OK ||
		load_shard(ms, err) != CX_OK ||
		cx_manifest_load_latest(ms->s, &ms->start, err) != CX_OK)
		return err->code;
	if (ms->start == NULL && (ms->start = cx_manifest_new()) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "merge: out of memory");
	if (ms->sm == NULL)
		return CX_OK;
	return choose_generations(ms, err);
}

static cx_code
check_options(const cx_merge_options *o, cx_err *err)
{
	if (o->target_rows_per_fragment == 0 ||
		o->target_rows_per_fragment > UINT32_MAX)
		return cx_err_set(err, CX_ERR_INVALID,
						  "target_rows_per_fragment must be between 1 and %u",
						  UINT32_MAX);
	if (o->sort_memory == 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "sort_memory must be positive");
	return CX_OK;
}

cx_code
cx_merge_shard(cx_objstore *s, const char *shard_id,
			   const cx_merge_options *opt, cx_merge_result *out, cx_err *err)
{
	merge_state ms;
	uint64_t	version = 0;
	cx_code		rc;

	memset(out, 0, sizeof(*out));
	memset(&ms, 0, sizeof(ms));
	ms.s = s;
	ms.shard_id = shard_id;
	if (opt != NULL)
		ms.opt = *opt;
	else
		cx_merge_options_default(&ms.opt);
	rc = check_options(&ms.opt, err);
	if (rc == CX_OK)
		rc = plan(&ms, err);
	if (rc != CX_OK || ms.ngens == 0)
	{
		merge_state_free(&ms);
		return rc;
	}
	rc = cx_gen_memo_open(s, ms.gens, ms.ngens, &ms.memo, err);
	if (rc == CX_OK)
		rc = fix_table(&ms, err);
	if (rc == CX_OK)
		rc = find_truncation(&ms, err);
	if (rc == CX_OK && ms.keyed)
		rc = cx_merge_build_keymap(&ms, err);
	if (rc == CX_OK && ms.keyed)
		rc = cx_merge_find_replaced(&ms, err);
	if (rc == CX_OK)
		rc = cx_merge_write(&ms, err);
	if (rc == CX_OK)
		rc = CX_FAILPOINT("merge.after_upload", err);
	if (rc == CX_OK)
		rc = cx_commit(s, ms.mark.found ? "truncate" : "merge", merge_rebase,
					   &ms, NULL, &version, err);
	if (rc == CX_OK)
		rc = CX_FAILPOINT("merge.after_commit", err);
	if (rc == CX_OK)
	{
		out->generations = ms.ngens;
		out->bytes_merged = 0;
		for (uint32_t i = 0; i < ms.ngens; i++)
			out->bytes_merged += ms.gens[i].fragment.size;
		out->merged_through = ms.gens[ms.ngens - 1].gen;
		out->rows_written = ms.rows_written;
		out->sorted_runs = ms.sorted_runs;
		out->rows_replaced = ms.rows_replaced;
		out->base_version = version;
		out->key_conflicts = ms.key_conflicts;
		memcpy(out->key_conflict_example, ms.key_conflict_example,
			   sizeof(out->key_conflict_example));
	}
	else
		cx_err_prefix(err, "merging shard %s of %s", shard_id, s->uri);
	merge_state_free(&ms);
	return rc;
}
