/*
 * cx_gc.c — garbage collection of a store (ctxstore/lifecycle.h,
 * docs/design/maintenance.md "Garbage collection").
 *
 * The referenced set is every object a retained base version names: its
 * manifest, fragments and key-index segments; the retained shard versions'
 * generations; what the retained Iceberg metadata references
 * (cx_gc_iceberg.c, which also expires snapshots).  Every fragment, index
 * segment, manifest and Iceberg file outside it that is older than the
 * grace period is garbage, and so is a dirty marker numbered at or below a
 * shard version that lists no generation (it guards nothing: below).  Keys
 * under those prefixes that are no key of the layout are counted as unknown
 * and left alone.  Before anything is deleted the run records which base
 * versions it retained (cx_gc_record.h), so that reads can tell what GC
 * collected from what is damaged, whatever options they run with.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "maintenance/cx_gc_int.h"
#include "maintenance/cx_gc_record.h"
#include "maintenance/cx_iceberg_int.h"
#include "memwal/cx_shard_manifest.h"
#include "objstore/cx_layout.h"
#include "objstore/cx_versioned.h"
#include "table/cx_key_index.h"
#include "table/cx_manifest.h"
#include "util/cx_clock.h"

void
cx_gc_options_default(cx_gc_options *o)
{
	memset(o, 0, sizeof(*o));
	o->retain_versions = CX_GC_DEFAULT_RETAIN_VERSIONS;
	o->retain_interval_us = CX_GC_DEFAULT_RETAIN_INTERVAL_US;
	o->grace_us = CX_GC_DEFAULT_GRACE_US;
	o->batch = CX_GC_DEFAULT_BATCH;
}

static bool
is_pinned(const cx_gc_run *run, uint64_t version)
{
	if (run->retain_every_base)
		return true;
	for (uint32_t i = 0; i < run->opts->npinned; i++)
		if (run->opts->pinned[i] == version)
			return true;
	return run->iceberg_pin != 0 && run->iceberg_pin == version;
}

static bool
collect_version(void *arg, uint64_t version)
{
	cx_gc_versions *v = arg;

	if (v->n == v->cap)
	{
		size_t		cap = v->cap ? v->cap * 2 : 64;
		uint64_t   *a = realloc(v->v, cap * sizeof(uint64_t));

		if (a == NULL)
		{
			v->oom = true;
			return false;
		}
		v->v = a;
		v->cap = cap;
	}
	v->v[v->n++] = version;
	return true;
}

static cx_code
list_versions(cx_objstore *s, const cx_vseq *q, cx_gc_versions *v,
			  cx_err *err)
{
	cx_code		rc = cx_vseq_list(s, q, collect_version, v, err);

	if (rc == CX_OK && v->oom)
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory listing versions");
	return rc;
}

/*
 * One sequence of versions (base versions, or one shard's manifests) as
 * the retention walk sees it: load a version (telling its commit time),
 * add what the loaded one references, release it.
 */
typedef struct version_walk
{
	cx_code		(*load) (struct version_walk *w, uint64_t version,
						 int64_t *committed_at_us, cx_err *err);
	cx_code		(*reference) (struct version_walk *w, cx_err *err);
	void		(*release) (struct version_walk *w);
	cx_objstore *store;
	cx_gc_refs *refs;
	const char *shard_id;		/* the shard walked; NULL: the base */
	cx_manifest *base;			/* the base version loaded */
	cx_shard_manifest *shard;	/* the shard version loaded */
	uint64_t	replay_seq;		/* of the shard's newest version */
	uint64_t	empty_at;		/* the newest version loaded that lists no
								 * generation (0: none) */
	uint64_t	carriers_from;	/* the oldest version carrying the bytes of
								 * an inline generation a retained one lists
								 * (UINT64_MAX: none) */
	bool		seen_newest;
	uint64_t	oldest_retained;
	cx_gc_versions *kept;		/* receives the retained ones; may be NULL */
} version_walk;

/*
 * Walks the versions newest first: the newest retain_versions, and every
 * one committed within retain_interval, are retained (commit times grow
 * along the chain, so the walk stops loading at the first that is neither);
 * pinned ones (base versions only) are retained wherever they are.  The
 * newest always is.  w->oldest_retained receives the oldest retained.
 */
static cx_code
walk_retained(version_walk *w, const cx_gc_versions *v, const cx_gc_run *run,
			  bool pins, uint64_t *retained, cx_err *err)
{
	const cx_gc_options *o = run->opts;
	bool		in_window = true;
	cx_code		rc = CX_OK;

	for (size_t k = v->n; k-- > 0 && rc == CX_OK;)
	{
		size_t		age = v->n - 1 - k;
		bool		pinned = pins && is_pinned(run, v->v[k]);
		int64_t		committed_at;

		if (!in_window && !pinned)
			continue;
		if ((rc = w->load(w, v->v[k], &committed_at, err)) != CX_OK)
			break;
		if (age == 0 || age < o->retain_versions ||
			committed_at >= run->now - o->retain_interval_us || pinned)
		{
			rc = w->reference(w, err);
			w->oldest_retained = v->v[k];
			(*retained)++;
			if (w->kept != NULL && !collect_version(w->kept, v->v[k]))
				rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory");
		}
		else
			in_window = false;
		w->release(w);
	}
	return rc;
}

static cx_code
base_load(version_walk *w, uint64_t version, int64_t *committed_at_us,
		  cx_err *err)
{
	cx_code		rc = cx_manifest_load(w->store, version, &w->base, err);

	if (rc == CX_OK)
		*committed_at_us = w->base->committed_at_us;
	return rc;
}

/* A base version references its manifest, fragments and index segments. */
static cx_code
base_reference(version_walk *w, cx_err *err)
{
	const cx_manifest *m = w->base;
	char		key[CX_KEY_MAX + 1];
	cx_keyindex ix;
	cx_code		rc;

	cx_manifest_key(m->version, key, sizeof(key));
	if ((rc = cx_gc_refs_add(w->refs, key, err)) != CX_OK)
		return rc;
	for (uint32_t f = 0; f < m->nfragments; f++)
		if ((rc = cx_gc_refs_add(w->refs, m->fragments[f].path, err)) != CX_OK)
			return rc;
	if ((rc = cx_keyindex_load(m, &ix, err)) != CX_OK)
		return rc;
	for (uint32_t i = 0; i < ix.n && rc == CX_OK; i++)
		rc = cx_gc_refs_add(w->refs, ix.segs[i].path, err);
	cx_keyindex_free(&ix);
	return rc;
}

static void
base_release(version_walk *w)
{
	cx_manifest_free(w->base);
	w->base = NULL;
}

static cx_code
shard_load(version_walk *w, uint64_t version, int64_t *committed_at_us,
		   cx_err *err)
{
	cx_code		rc = cx_shard_manifest_load(w->store, w->shard_id, version,
											&w->shard, err);

	if (rc != CX_OK)
		return rc;
	*committed_at_us = w->shard->committed_at_us;
	/* The walk loads the newest first. */
	if (!w->seen_newest)
		w->replay_seq = w->shard->replay_seq;
	w->seen_newest = true;
	if (w->empty_at == 0 && w->shard->ngens == 0)
		w->empty_at = version;
	return CX_OK;
}

/* A shard version references its manifest and its generations: their
 * objects, or for inline ones the versions carrying them. */
static cx_code
shard_reference(version_walk *w, cx_err *err)
{
	const cx_shard_manifest *m = w->shard;
	char		key[CX_KEY_MAX + 1];
	cx_code		rc;

	cx_shard_manifest_key(m->shard_id, m->version, key, sizeof(key));
	if ((rc = cx_gc_refs_add(w->refs, key, err)) != CX_OK)
		return rc;
	for (uint32_t g = 0; g < m->ngens && rc == CX_OK; g++)
	{
		const cx_generation *gen = &m->gens[g];

		if (gen->carrier == 0)
			rc = cx_gc_refs_add(w->refs, gen->fragment.path, err);
		else if (gen->carrier < w->carriers_from)
			w->carriers_from = gen->carrier;
	}
	return rc;
}

static void
shard_release(version_walk *w)
{
	cx_shard_manifest_free(w->shard);
	w->shard = NULL;
}

/* What the public retention computation adds for a retained version:
 * nothing, it only collects them. */
static cx_code
reference_nothing(version_walk *w, cx_err *err)
{
	(void) w;
	(void) err;
	return CX_OK;
}

/* Walks the base versions, collecting the retained ones into run->retained
 * and adding what each references with reference. */
static cx_code
walk_base(cx_gc_run *run,
		  cx_code (*reference) (version_walk *w, cx_err *err), cx_err *err)
{
	version_walk w = {.load = base_load, .reference = reference,
		.release = base_release, .store = run->store, .refs = &run->refs,
	.kept = &run->retained};
	cx_gc_versions v = {0};
	cx_code		rc = list_versions(run->store, &cx_layout_base_versions, &v, err);

	if (rc == CX_OK && v.n > 0)
	{
		run->newest = v.v[v.n - 1];
		rc = walk_retained(&w, &v, run, true, &run->res->versions_retained,
						   err);
		run->base_floor = w.oldest_retained;
	}
	free(v.v);
	return rc;
}

cx_code
cx_gc_retained_versions(cx_objstore *s, const cx_gc_options *o,
						int64_t now_us, uint64_t **versions, size_t *n,
						cx_err *err)
{
	cx_gc_result res = {0};
	cx_gc_run	run = {.store = s,.opts = o,.res = &res,.now = now_us};
	cx_code		rc = cx_gc_iceberg_load(&run, err);

	if (rc == CX_OK)
		rc = walk_base(&run, reference_nothing, err);
	*versions = rc == CX_OK ? run.retained.v : NULL;
	*n = rc == CX_OK ? run.retained.n : 0;
	if (rc == CX_OK)
		run.retained.v = NULL;
	cx_gc_run_free(&run);
	return rc;
}

static int
version_cmp(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * Records the run's retention decision in the store before anything is
 * deleted, merged with the newest record so that no version an earlier run
 * collected counts as retained again (its objects may be gone): what the
 * read path asks to tell collection from damage (cx_gc_collected).  A dry
 * run records nothing.
 */
static cx_code
record_retention(cx_gc_run *run, cx_err *err)
{
	cx_gc_record mine = {0};
	cx_gc_record latest;
	cx_code		rc;

	if (run->opts->dry_run)
		return CX_OK;
	if ((rc = cx_gc_record_load_latest(run->store, &latest, err)) != CX_OK)
		return rc;
	mine.number = latest.number;
	mine.newest = run->newest;
	mine.n = run->retained.n;
	if ((mine.retained = malloc(mine.n * sizeof(uint64_t))) == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	else
	{
		memcpy(mine.retained, run->retained.v, mine.n * sizeof(uint64_t));
		qsort(mine.retained, mine.n, sizeof(uint64_t), version_cmp);
		rc = cx_gc_record_merge(&mine, &latest, err);
	}
	if (rc == CX_OK)
		rc = cx_gc_record_put(run->store, &mine, err);
	cx_gc_record_free(&mine);
	cx_gc_record_free(&latest);
	return rc;
}

/*
 * No room for the retention record (a full disk): the run collects no base
 * version, so that there is nothing to record, by walking the base again
 * with every version pinned, and still frees what no base version names
 * (drained generations, older shard versions, WAL, orphans), which is what
 * lets writes resume.
 */
static cx_code
retain_every_base(cx_gc_run *run, cx_err *err)
{
	for (size_t i = 0; i < run->refs.n; i++)
		free(run->refs.keys[i]);
	run->refs.n = 0;
	run->retained.n = 0;
	run->res->versions_retained = 0;
	run->retain_every_base = true;
	return walk_base(run, base_reference, err);
}

/* Every shard the newest base version registers. */
static cx_code
reference_shards(cx_gc_run *run, cx_err *err)
{
	version_walk w = {.load = shard_load, .reference = shard_reference,
		.release = shard_release, .store = run->store, .refs = &run->refs};
	cx_manifest *base;
	uint64_t	retained = 0;
	cx_code		rc = cx_manifest_load(run->store, run->newest, &base, err);

	for (uint32_t i = 0; rc == CX_OK && i < base->nshards; i++)
	{
		char		prefix[CX_KEY_MAX + 1];
		cx_vseq		q;
		cx_gc_versions v = {0};

		w.shard_id = base->shards[i].shard_id;
		w.seen_newest = false;
		w.replay_seq = 0;
		w.empty_at = 0;
		w.carriers_from = UINT64_MAX;
		cx_layout_shard_versions(w.shard_id, prefix, &q);
		rc = list_versions(run->store, &q, &v, err);
		if (rc == CX_OK && v.n > 0)
			rc = walk_retained(&w, &v, run, false, &retained, err);
		/* Versions go as a prefix only, so keeping a carrier keeps the
		 * versions after it too, until its generation is merged. */
		if (rc == CX_OK && v.n > 0)
			rc = cx_gc_shard_add(run, w.shard_id,
								 w.carriers_from < w.oldest_retained ?
								 w.carriers_from : w.oldest_retained,
								 w.replay_seq, w.empty_at, err);
		free(v.v);
	}
	if (base != NULL)
		cx_manifest_free(base);
	return rc;
}

cx_code
cx_gc(cx_objstore *s, const cx_gc_options *o, const cx_job_progress *progress,
	  cx_gc_result *res, cx_err *err)
{
	/* Manifests and metadata before the files they name: a run that stops
	 * half way leaves orphan files, never a version missing its files. */
	static const char *const prefixes[] = {
		CX_VERSIONS_PREFIX, CX_SHARDS_PREFIX, CX_ICEBERG_DIR "/",
		CX_INDEX_SEGMENT_PREFIX, CX_FRAGMENT_PREFIX, CX_DIRTY_PREFIX
	};
	cx_gc_run	run = {0};
	cx_code		rc;

	memset(res, 0, sizeof(*res));
	run.store = s;
	run.opts = o;
	run.progress = progress;
	run.res = res;
	run.now = cx_clock_now_us();
	rc = cx_gc_iceberg_load(&run, err);
	if (rc == CX_OK)
		rc = walk_base(&run, base_reference, err);
	/* An empty store has nothing to collect. */
	if (rc == CX_OK && run.newest > 0)
		rc = record_retention(&run, err);
	if (rc == CX_ERR_NOSPACE)
		rc = retain_every_base(&run, err);
	if (rc == CX_OK && run.newest > 0)
		rc = reference_shards(&run, err);
	if (rc == CX_OK && run.newest > 0)
		rc = cx_gc_iceberg_reference(&run, err);
	if (rc == CX_OK && run.newest > 0)
	{
		cx_gc_refs_sort(&run.refs);
		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]) && rc == CX_OK; i++)
			rc = cx_gc_sweep(&run, prefixes[i], err);
	}
	cx_gc_run_free(&run);
	return rc;
}
