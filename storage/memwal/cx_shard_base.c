/*
 * cx_shard_base.c — what the shard writer reads from and writes to the base
 * manifest (cx_memwal_int.h):
 *
 *   registration  once per shard lifetime, at its first claim: readers find
 *                 every shard through the base manifest alone, and the
 *                 table key is recorded with the first writer's options;
 *                 a shard registered before dirty markers is registered
 *                 again, to flag it dirty_marked;
 *   first schema  the first append to a store without a schema records it;
 *   new schema    a base whose columns changed (cx_schema_change.c) gives
 *                 the writer its schema, once the memtable (rows of the old
 *                 one) is sealed;
 *   watermark     how far a merge has taken this shard's generations.
 *
 * Registration and the first schema are ordinary optimistic base commits
 * (cx_commit): two first writers of an empty store race for version 1, the
 * loser rebases onto the winner's version, and both succeed (invariant 11).
 * Each rebase checks rather than overwrites what another writer recorded.
 */
#include <stdlib.h>
#include <string.h>

#include "table/cx_commit.h"
#include "memwal/cx_memwal_int.h"

/*
 * Takes the base's schema when it differs from the writer's: the store's
 * first, or a change of its columns.  The memtable's rows are in the old
 * schema, so they are sealed first (a generation keeps its own schema and is
 * read by field id); requests staged in the old one are not converted, so
 * with some staged the old schema stays until they are appended.
 */
static cx_code
adopt_schema(cx_shardwriter *w, const cx_schema *schema, cx_err *err)
{
	cx_schema  *copy;

	if (schema == NULL || (w->schema != NULL && cx_schema_equal(w->schema, schema)))
		return CX_OK;
	if (w->schema != NULL && w->staged_nrows > 0)
		return CX_OK;
	if (w->schema != NULL && w->mt.nbatches > 0 && cx_sw_seal(w, err) != CX_OK)
		return cx_err_prefix(err, "sealing before the store's columns change");
	if ((copy = cx_schema_clone(schema)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "copying the store schema: out of memory");
	cx_schema_free(w->schema);
	w->schema = copy;
	w->columns_known = false;
	return CX_OK;
}

/* Adopts what the writer needs from a base version. */
static cx_code
adopt_base(cx_shardwriter *w, const cx_manifest *base, cx_err *err)
{
	uint64_t	merged = cx_manifest_merged_gen(base, w->shard_id);

	if (merged > w->merged_gen)
		w->merged_gen = merged;
	return adopt_schema(w, base->schema, err);
}

static cx_code
register_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
				cx_err *err)
{
	cx_shardwriter *w = arg;

	(void) base;
	if (cx_manifest_set_dirty_marked(next, w->shard_id, err) != CX_OK)
		return err->code;
	if (w->key_column != NULL &&
		cx_manifest_set_key(next, w->key_column, w->opt.unique_key, err) != CX_OK)
		return err->code;
	/* Every attempt builds on the newest base; the last one is what lands. */
	return adopt_base(w, next, err);
}

/* Whether base already records everything registration would. */
static cx_code
registered(const cx_shardwriter *w, const cx_manifest *base, bool *done,
		   cx_err *err)
{
	cx_table_decl table = {.key_column = w->key_column,
	.unique_key = w->opt.unique_key};

	*done = false;
	if (base == NULL || cx_manifest_shard(base, w->shard_id) == NULL ||
		!cx_manifest_shard(base, w->shard_id)->dirty_marked)
		return CX_OK;
	if (w->key_column == NULL || base->key_column == NULL)
	{
		*done = w->key_column == NULL;
		return CX_OK;
	}
	if (cx_table_check_fit(base, &table, err) != CX_OK)
		return err->code;
	*done = true;
	return CX_OK;
}

/* The registration commit.  Whatever the shard's manifest lists (it may
 * predate dirty markers), a marker goes first: the shard then counts as
 * dirty until a version listing no generation clears it. */
static cx_code
register_marked(cx_shardwriter *w, cx_err *err)
{
	uint64_t	version;

	if (cx_shard_put_dirty_marker(w->s, w->shard_id, 1, err) != CX_OK)
		return err->code;
	return cx_commit(w->s, "register shard", register_rebase, w, NULL,
					 &version, err);
}

cx_code
cx_sw_register(cx_shardwriter *w, cx_err *err)
{
	cx_manifest *base;
	bool		done;
	cx_code		rc;

	if (cx_manifest_load_latest(w->s, &base, err) != CX_OK)
		return err->code;
	rc = registered(w, base, &done, err);
	if (rc == CX_OK && done)
		rc = adopt_base(w, base, err);
	else if (rc == CX_OK)
		rc = register_marked(w, err);
	if (rc == CX_OK && done)
		cx_sw_keep_base(w, base);
	else
		cx_manifest_free(base);
	if (rc != CX_OK)
		return cx_err_prefix(err, "registering shard %s in %s", w->shard_id,
							 w->s->uri);
	return CX_OK;
}

/* --------------------------------------------------------------------------
 * The store schema
 * -------------------------------------------------------------------------- */

/* A table schema a store without one (next) can take: no column in the
 * hidden namespace, and it fits the key the store records. */
static cx_code
check_table_schema(const cx_manifest *next, const cx_schema *schema,
				   cx_err *err)
{
	cx_table_decl table = {schema->columns, schema->ncolumns,
	next->key_column, next->unique_key};
	cx_schema  *gen;

	if (cx_shard_generation_schema(schema, &gen, err) != CX_OK)
		return err->code;
	cx_schema_free(gen);
	return cx_table_check_fit(next, &table, err);
}

static cx_code
schema_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	const cx_schema *schema = arg;

	(void) base;
	if (next->schema != NULL)
		return cx_commit_check_schema(next->schema, schema, err);
	if (check_table_schema(next, schema, err) != CX_OK)
		return err->code;
	return cx_manifest_set_schema(next, schema, err);
}

/* Rows of schema are the writer's own, or rows of an older schema of the
 * store that its current one can take (*reshape). */
static cx_code
check_known_schema(cx_shardwriter *w, const cx_schema *schema, bool *reshape,
				   cx_err *err)
{
	if (cx_schema_equal(w->schema, schema))
		return CX_OK;
	if (w->base != NULL && cx_manifest_had_schema(w->base, schema) &&
		cx_schema_reshapes_to(schema, w->schema))
	{
		*reshape = true;
		return CX_OK;
	}
	return cx_commit_check_schema(w->schema, schema, err);
}

cx_code
cx_sw_check_schema(cx_shardwriter *w, const cx_schema *schema, bool *reshape,
				   cx_err *err)
{
	uint64_t	version;

	*reshape = false;
	if (schema == NULL)
		return cx_err_set(err, CX_ERR_INVALID, "append to shard %s without a schema",
						  w->shard_id);
	if (w->schema != NULL && cx_schema_equal(w->schema, schema))
		return CX_OK;
	/* Another writer may have recorded it, or the columns changed, since we
	 * looked. */
	if (cx_sw_read_watermark(w, err) != CX_OK)
		return err->code;
	if (w->schema != NULL)
		return check_known_schema(w, schema, reshape, err);
	if (cx_commit(w->s, "create", schema_rebase, (void *) schema, NULL,
				  &version, err) != CX_OK)
		return err->code;
	w->schema = cx_schema_clone(schema);
	if (w->schema == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "copying the store schema: out of memory");
	return CX_OK;
}

cx_code
cx_sw_read_watermark(cx_shardwriter *w, cx_err *err)
{
	cx_manifest *base;
	cx_code		rc = CX_OK;

	if (cx_manifest_load_latest(w->s, &base, err) != CX_OK)
		return err->code;
	if (base != NULL)
		rc = adopt_base(w, base, err);
	if (rc == CX_OK)
		cx_sw_keep_base(w, base);
	else
		cx_manifest_free(base);
	return rc;
}
