/*
 * cx_gc_sweep.c — the sweep of garbage collection: lists a prefix, tells
 * referenced, unknown, young and garbage keys apart, and deletes garbage
 * in batches, and the temporary files crashed uploads left under it
 * (cx_gc_int.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ctxstore/layout.h"
#include "maintenance/cx_gc_int.h"
#include "objstore/cx_layout.h"
#include "util/cx_buf.h"

cx_code
cx_gc_refs_add(cx_gc_refs *refs, const char *key, cx_err *err)
{
	char	   *copy;

	if (refs->n == refs->cap)
	{
		size_t		cap = refs->cap ? refs->cap * 2 : 64;
		char	  **k = realloc(refs->keys, cap * sizeof(char *));

		if (k == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory collecting references");
		refs->keys = k;
		refs->cap = cap;
	}
	copy = cx_strdup(key);
	if (copy == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory collecting references");
	refs->keys[refs->n++] = copy;
	return CX_OK;
}

static int
key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

void
cx_gc_refs_sort(cx_gc_refs *refs)
{
	if (refs->n > 0)
		qsort(refs->keys, refs->n, sizeof(char *), key_cmp);
}

cx_code
cx_gc_shard_add(cx_gc_run *run, const char *shard_id, uint64_t floor,
				uint64_t replay_seq, uint64_t empty_at, cx_err *err)
{
	cx_gc_shard *a = realloc(run->shards, (run->nshards + 1) * sizeof(*a));

	if (a == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	run->shards = a;
	a[run->nshards].shard_id = cx_strdup(shard_id);
	if (a[run->nshards].shard_id == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	a[run->nshards].floor = floor;
	a[run->nshards].replay_seq = replay_seq;
	a[run->nshards].empty_at = empty_at;
	run->nshards++;
	return CX_OK;
}

/* NULL for a shard the newest base version does not register. */
static const cx_gc_shard *
find_shard(const cx_gc_run *run, const char *shard_id)
{
	for (uint32_t i = 0; i < run->nshards; i++)
		if (strcmp(run->shards[i].shard_id, shard_id) == 0)
			return &run->shards[i];
	return NULL;
}

static bool
is_referenced(const cx_gc_refs *refs, const char *key)
{
	return refs->n > 0 &&
		bsearch(&key, refs->keys, refs->n, sizeof(char *), key_cmp) != NULL;
}

/*
 * Whether key is a kind of object GC may delete.  Versions (base or a
 * shard's) go only below the oldest retained, a prefix of the range: one
 * between retained ones stays, though its fragments may go.  A version
 * newer than the newest listed (committed while GC ran, or a commit of
 * unknown outcome that landed since) is above that floor too.  A WAL entry
 * is garbage once below the replay point of its shard's newest version.
 * A dirty marker numbered V is garbage once a version E >= V of its shard
 * lists no generation (invariant 21): every generation listed up to E was
 * merged and drained, and a generation listed after E is in a version
 * numbered above E whose writer put a marker of that number first, so no
 * marker <= E is what makes a reader read the shard.  It is the writer's
 * own rule for a drain; GC applies it to the markers a writer that
 * vanished, or a delete that failed, left behind.  A marker numbered above
 * every version (a seal whose put failed, or one in flight) is kept.
 * Hints, the compaction lease, retention records (the run that puts one
 * deletes those it replaces; "_gc/" is not swept) and everything of a
 * shard the base does not register, are kept.  Keys under iceberg/ are
 * cx_gc_iceberg.c's to judge.
 */
static bool
is_collectable(const cx_gc_run *run, const char *key, bool *unknown)
{
	cx_object_name name;
	const cx_gc_shard *shard;

	*unknown = false;
	if (strncmp(key, CX_ICEBERG_DIR "/", strlen(CX_ICEBERG_DIR "/")) == 0)
		return cx_gc_iceberg_collectable(run, key, unknown);
	switch (cx_object_parse(key, &name))
	{
		case CX_OBJECT_FRAGMENT:
		case CX_OBJECT_INDEX_SEGMENT:
			return true;
		case CX_OBJECT_BASE_VERSION:
			return name.number < run->base_floor;
		case CX_OBJECT_SHARD_VERSION:
			shard = find_shard(run, name.shard_id);
			return shard != NULL && name.number < shard->floor;
		case CX_OBJECT_WAL_ENTRY:
			shard = find_shard(run, name.shard_id);
			return shard != NULL && name.number < shard->replay_seq;
		case CX_OBJECT_DIRTY_MARKER:
			shard = find_shard(run, name.shard_id);
			return shard != NULL && shard->empty_at > 0 &&
				name.number <= shard->empty_at;
		case CX_OBJECT_SHARD_HINT:
		case CX_OBJECT_BASE_HINT:
		case CX_OBJECT_ACCESS_CHECK:
		case CX_OBJECT_COMPACTION_LEASE:
		case CX_OBJECT_GC_RECORD:
			return false;
		case CX_OBJECT_NONE:
			break;
	}
	*unknown = true;
	return false;
}

/* Deletes the batch (a dry run only counted it), then reports progress,
 * the caller's chance to cancel. */
static cx_code
flush_batch(cx_gc_run *run, cx_err *err)
{
	bool		dry = run->opts->dry_run;
	cx_code		rc = CX_OK;
	uint32_t	i;

	if (run->nbatch == 0)
		return CX_OK;
	for (i = 0; !dry && i < run->nbatch && rc == CX_OK; i++)
	{
		rc = cx_obj_delete(run->store, run->batch[i], err);
		if (rc == CX_OK)
		{
			run->res->objects_deleted++;
			run->res->bytes_deleted += run->batch_bytes[i];
		}
	}
	for (i = 0; i < run->nbatch; i++)
		free(run->batch[i]);
	run->nbatch = 0;
	if (rc == CX_OK && run->progress != NULL && run->progress->report != NULL &&
		!run->progress->report(run->progress->arg, dry ? "count" : "delete",
							   dry ? run->res->objects_garbage : run->res->objects_deleted,
							   run->res->objects_garbage))
		rc = cx_err_set(err, CX_ERR_CANCELED, "garbage collection canceled");
	return rc;
}

/* A dry run batches too (keys not kept), so that it reports progress and
 * can be canceled the same way. */
static cx_code
add_garbage(cx_gc_run *run, const char *key, uint64_t size, cx_err *err)
{
	char	   *copy = NULL;

	run->res->objects_garbage++;
	run->res->bytes_garbage += size;
	if (!run->opts->dry_run && (copy = cx_strdup(key)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	run->batch[run->nbatch] = copy;
	run->batch_bytes[run->nbatch++] = size;
	return run->nbatch == run->batch_cap ? flush_batch(run, err) : CX_OK;
}

/* A key neither referenced nor unknown is garbage once older than grace,
 * by the mtime its listing entry tells (no request per key). */
static cx_code
consider(cx_gc_run *run, const cx_list_entry *e, cx_err *err)
{
	bool		unknown;

	if (is_referenced(&run->refs, e->key))
		return CX_OK;
	if (!is_collectable(run, e->key, &unknown))
	{
		run->res->objects_unknown += unknown;
		return CX_OK;
	}
	if (e->mtime_us > run->now - run->opts->grace_us)
		return CX_OK;
	return add_garbage(run, e->key, e->size, err);
}

static bool
on_entry(void *arg, const cx_list_entry *e)
{
	cx_gc_run  *run = arg;

	run->res->objects_listed++;
	run->res->bytes_listed += e->size;
	run->rc = consider(run, e, run->err);
	return run->rc == CX_OK;
}

/* A temporary file a crashed upload left, removed (or in a dry run found):
 * garbage, though no listing of objects shows it. */
static bool
on_temporary(void *arg, const cx_list_entry *e)
{
	cx_gc_run  *run = arg;

	run->res->objects_garbage++;
	run->res->bytes_garbage += e->size;
	if (!run->opts->dry_run)
	{
		run->res->objects_deleted++;
		run->res->bytes_deleted += e->size;
	}
	return true;
}

cx_code
cx_gc_sweep(cx_gc_run *run, const char *prefix, cx_err *err)
{
	cx_code		rc;

	if (run->batch == NULL)
	{
		run->batch_cap = run->opts->batch ? run->opts->batch : CX_GC_DEFAULT_BATCH;
		run->batch = calloc(run->batch_cap, sizeof(char *));
		run->batch_bytes = calloc(run->batch_cap, sizeof(uint64_t));
		if (run->batch == NULL || run->batch_bytes == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	run->rc = CX_OK;
	run->err = err;
	rc = cx_obj_list_entries(run->store, prefix, on_entry, run, err);
	if (rc == CX_OK)
		rc = run->rc;
	/* Older than the grace, as objects: an upload still running is
	 * younger (it writes its file as it goes). */
	if (rc == CX_OK)
		rc = cx_obj_sweep_temporaries(run->store, prefix,
									  run->now - run->opts->grace_us,
									  run->opts->dry_run, on_temporary, run,
									  err);
	if (rc == CX_OK)
		rc = flush_batch(run, err);
	return rc;
}

void
cx_gc_run_free(cx_gc_run *run)
{
	for (uint32_t i = 0; i < run->nbatch; i++)
		free(run->batch[i]);
	free(run->batch);
	free(run->batch_bytes);
	for (size_t i = 0; i < run->refs.n; i++)
		free(run->refs.keys[i]);
	free(run->refs.keys);
	for (uint32_t i = 0; i < run->nshards; i++)
		free(run->shards[i].shard_id);
	free(run->shards);
	free(run->retained.v);
	json_decref(run->ice_meta);
}
