/*
 * cx_snapshot.c — fixing what a scan reads: one base version and, for each
 * shard it registers, one shard-manifest version (cx_table_scan.h).
 *
 * Order matters.  A merge commits base version N+1 (fragments + watermark)
 * and only then drains the merged generations from the shard manifest.  A
 * reader that paired base N with a shard manifest read after the drain would
 * miss those rows: they are in neither.  So the base version a snapshot uses
 * is always read AFTER every shard manifest it uses: any generation missing
 * from a shard manifest was drained after a base commit that the later base
 * read sees, with its watermark.  Shard manifests newer than the base are
 * harmless: their extra generations are above the base's watermark (a
 * watermark is committed atomically with the merged rows), so they are
 * simply unmerged, visible rows.
 *
 * Concretely: read the base, read the shard manifests of its shards, then
 * check the newest base version (one hint GET and one HEAD when nothing
 * moved); if it moved, read it, and if it registers shards not read yet,
 * read those and check again.  The loop ends when a base read follows every
 * shard read; new shards are rare (one per writer, ever), so it is bounded.
 *
 * Shard manifests come through the handle's cache (memwal/cx_shard_cache.c):
 * two HEADs per shard that did not change since this handle last read it.
 *
 * Shards the base flags dirty_marked are read only if they have a dirty
 * marker (memwal/cx_shard_dirty.c), all found by one listing, made when it
 * may save requests (such a shard this handle did not last see listing
 * generations) and before the base check above.
 *
 * A shard without a marker at the listing had a newest manifest listing no
 * generation: everything it ever sealed was merged into a base version
 * committed before the drain that emptied it, so before the listing, so
 * into the base the check above ends on; and a generation sealed before
 * the snapshot began has its marker put before it.  Invariant 21.
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/cx_layout.h"
#include "scan/cx_scan_int.h"

/* Rounds of "a newer base registers another shard" before giving up. */
#define MAX_ROUNDS 16

/* Shard manifests read so far, by shard id (the base's shard list can grow
 * while the snapshot is being fixed, so indexes are assigned at the end). */
typedef struct loaded
{
	uint32_t	n;
	uint32_t	cap;
	cx_shard_manifest **m;		/* m[i] NULL: the shard has no manifest, or
								 * none that lists a generation */
	char	  **ids;
	bool		listed;			/* the dirty markers were listed */
	uint32_t	ndirty;
	char	  **dirty;			/* shard ids with a dirty marker */
} loaded;

static void
loaded_free(loaded *l)
{
	for (uint32_t i = 0; i < l->n; i++)
	{
		cx_shard_manifest_free(l->m[i]);
		free(l->ids[i]);
	}
	free(l->m);
	free(l->ids);
	for (uint32_t i = 0; i < l->ndirty; i++)
		free(l->dirty[i]);
	free(l->dirty);
}

/* Index of shard_id among the loaded, or -1. */
static int64_t
loaded_find(const loaded *l, const char *shard_id)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (strcmp(l->ids[i], shard_id) == 0)
			return i;
	return -1;
}

/* Whether shard_id has a dirty marker among those listed. */
static bool
listed_dirty(const loaded *l, const char *shard_id)
{
	for (uint32_t i = 0; i < l->ndirty; i++)
		if (strcmp(l->dirty[i], shard_id) == 0)
			return true;
	return false;
}

typedef struct dirty_listing
{
	loaded	   *l;
	bool		nomem;
} dirty_listing;

static bool
note_dirty(void *arg, const char *key, uint64_t size)
{
	dirty_listing *d = arg;
	loaded	   *l = d->l;
	cx_object_name name;
	char	  **grown;

	(void) size;
	if (cx_object_parse(key, &name) != CX_OBJECT_DIRTY_MARKER ||
		listed_dirty(l, name.shard_id))
		return true;
	grown = realloc(l->dirty, ((size_t) l->ndirty + 1) * sizeof(char *));
	if (grown == NULL || (grown[l->ndirty] = cx_strdup(name.shard_id)) == NULL)
	{
		if (grown != NULL)
			l->dirty = grown;
		d->nomem = true;
		return false;
	}
	l->dirty = grown;
	l->ndirty++;
	return true;
}

/* Lists the dirty markers once, if base has a dirty_marked shard not read
 * yet that the listing may let the snapshot skip: one listing costs no more
 * than reading that shard (two HEADs warm, four requests cold).  Shards the
 * handle last saw listing generations most likely still do, and would be
 * read anyway, so they alone make no listing. */
static cx_code
list_dirty(cx_objstore *s, const cx_manifest *base, loaded *l, cx_err *err)
{
	dirty_listing d = {l, false};
	uint32_t	skippable = 0;

	if (l->listed)
		return CX_OK;
	for (uint32_t i = 0; i < base->nshards; i++)
		if (base->shards[i].dirty_marked &&
			loaded_find(l, base->shards[i].shard_id) < 0 &&
			!cx_shard_cache_lists_generations(s, base->shards[i].shard_id))
			skippable++;
	if (skippable == 0)
		return CX_OK;
	if (cx_obj_list(s, CX_DIRTY_PREFIX, note_dirty, &d, err) != CX_OK)
		return cx_err_prefix(err, "snapshot of %s: listing dirty shards", s->uri);
	if (d.nomem)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	l->listed = true;
	return CX_OK;
}

/* Makes room for one more loaded shard, named id, with no manifest yet. */
static cx_code
loaded_add(loaded *l, const char *id, cx_err *err)
{
	if (l->n == l->cap)
	{
		uint32_t	cap = l->cap ? l->cap * 2 : 8;
		cx_shard_manifest **m = realloc(l->m, cap * sizeof(*m));
		char	  **ids;

		if (m == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
		l->m = m;
		ids = realloc(l->ids, cap * sizeof(*ids));
		if (ids == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
		l->ids = ids;
		l->cap = cap;
	}
	if ((l->ids[l->n] = cx_strdup(id)) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	l->m[l->n] = NULL;
	l->n++;
	return CX_OK;
}

/* Reads the newest manifest of each shard of base not read yet, but of
 * those the listing proves clean (see above); *added says whether there
 * was any. */
static cx_code
load_new_shards(cx_objstore *s, const cx_manifest *base, loaded *l,
				bool *added, cx_err *err)
{
	*added = false;
	if (list_dirty(s, base, l, err) != CX_OK)
		return err->code;
	for (uint32_t i = 0; i < base->nshards; i++)
	{
		const cx_shard_mark *sm = &base->shards[i];

		if (loaded_find(l, sm->shard_id) >= 0)
			continue;
		if (loaded_add(l, sm->shard_id, err) != CX_OK)
			return err->code;
		*added = true;
		if (l->listed && sm->dirty_marked && !listed_dirty(l, sm->shard_id))
			continue;
		if (cx_shard_manifest_load_latest_cached(s, sm->shard_id,
												 &l->m[l->n - 1], err) != CX_OK)
			return cx_err_prefix(err, "snapshot of %s: shard %s", s->uri,
								 sm->shard_id);
	}
	return CX_OK;
}

/* Fixes the newest base version and the shard manifests (see above). */
static cx_code
fix_newest(cx_objstore *s, cx_manifest **base, loaded *l, cx_err *err)
{
	*base = NULL;
	if (cx_manifest_load_latest(s, base, err) != CX_OK)
		return err->code;
	for (int round = 0; *base != NULL && round < MAX_ROUNDS; round++)
	{
		uint64_t	newest;
		bool		added;

		if (load_new_shards(s, *base, l, &added, err) != CX_OK)
			return err->code;
		if (!added && round > 0)
			return CX_OK;		/* this base was read after every shard */
		if (cx_manifest_latest_version(s, &newest, err) != CX_OK)
			return err->code;
		if (newest == (*base)->version)
			return CX_OK;
		cx_manifest_free(*base);
		*base = NULL;
		if (cx_manifest_load(s, newest, base, err) != CX_OK)
			return err->code;
	}
	if (*base == NULL)
		return CX_OK;			/* empty store */
	return cx_err_set(err, CX_ERR_CONFLICT,
					  "snapshot of %s: new shards kept being registered over %d rounds",
					  s->uri, MAX_ROUNDS);
}

/* Lists the unmerged generations, by shard then generation number. */
static cx_code
collect_gens(cx_snapshot *snap, cx_err *err)
{
	uint32_t	n = 0;

	for (uint32_t i = 0; i < snap->nshards; i++)
		if (snap->shards[i] != NULL)
			n += snap->shards[i]->ngens;
	if (n == 0)
		return CX_OK;
	snap->gens = calloc(n, sizeof(cx_snapgen));
	if (snap->gens == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	for (uint32_t i = 0; i < snap->nshards; i++)
	{
		const cx_shard_manifest *sm = snap->shards[i];
		uint64_t	merged = snap->base->shards[i].merged_gen;

		for (uint32_t j = 0; sm != NULL && j < sm->ngens; j++)
		{
			if (sm->gens[j].gen <= merged)
				continue;
			snap->gens[snap->ngens].gen = &sm->gens[j];
			snap->gens[snap->ngens].shard = i;
			snap->ngens++;
		}
	}
	return CX_OK;
}

/* Generations exist only after their writer recorded the table schema in
 * the base (cx_shard_writer.h), so a base without one cannot have them. */
static cx_code
check_schema(const cx_snapshot *snap, cx_err *err)
{
	if (snap->ngens > 0 && snap->base->schema == NULL)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "snapshot of %s: base version %llu has no schema but shards list generations",
						  snap->store->uri,
						  (unsigned long long) snap->base->version);
	return CX_OK;
}

/* Moves the loaded shard manifests into base order. */
static cx_code
adopt_shards(cx_snapshot *snap, loaded *l, cx_err *err)
{
	snap->nshards = snap->base->nshards;
	if (snap->nshards == 0)
		return CX_OK;
	snap->shards = calloc(snap->nshards, sizeof(cx_shard_manifest *));
	if (snap->shards == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	for (uint32_t i = 0; i < snap->nshards; i++)
	{
		int64_t		j = loaded_find(l, snap->base->shards[i].shard_id);

		if (j >= 0)
		{
			snap->shards[i] = l->m[j];
			l->m[j] = NULL;
		}
	}
	return CX_OK;
}

/* Notes the version of each shard manifest, for cx_snapshot_pin_of. */
static cx_code
note_shard_versions(cx_snapshot *snap, cx_err *err)
{
	if (snap->nshards == 0)
		return CX_OK;
	snap->shard_versions = calloc(snap->nshards, sizeof(uint64_t));
	if (snap->shard_versions == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	for (uint32_t i = 0; i < snap->nshards; i++)
		if (snap->shards[i] != NULL)
			snap->shard_versions[i] = snap->shards[i]->version;
	return CX_OK;
}

/* What every way of opening does once the base and the shard manifests are
 * fixed (rc: how fixing them went); frees snap on failure. */
static cx_code
finish_open(cx_snapshot *snap, cx_code rc, cx_snapshot **out, cx_err *err)
{
	if (rc == CX_OK)
		rc = note_shard_versions(snap, err);
	if (rc == CX_OK)
		rc = collect_gens(snap, err);
	if (rc == CX_OK)
		rc = check_schema(snap, err);
	if (rc != CX_OK)
	{
		cx_snapshot_close(snap);
		return rc;
	}
	*out = snap;
	return CX_OK;
}

/* The base version, or an empty manifest for version 0. */
static cx_code
load_base(cx_snapshot *snap, uint64_t version, cx_err *err)
{
	if (version != 0)
		return cx_manifest_load(snap->store, version, &snap->base, err);
	if ((snap->base = cx_manifest_new()) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	return CX_OK;
}

cx_code
cx_snapshot_open(cx_objstore *s, uint64_t version, cx_snapshot **out,
				 cx_err *err)
{
	cx_snapshot *snap = calloc(1, sizeof(cx_snapshot));
	loaded		l = {0};
	cx_code		rc;

	*out = NULL;
	if (snap == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	snap->store = s;
	/* A pinned version reads its base fragments only: generations are not
	 * versioned with the base. */
	if (version != 0)
		rc = load_base(snap, version, err);
	else
		rc = fix_newest(s, &snap->base, &l, err);
	if (rc == CX_OK && snap->base == NULL)
		rc = load_base(snap, 0, err);
	if (rc == CX_OK && version == 0)
		rc = adopt_shards(snap, &l, err);
	loaded_free(&l);
	return finish_open(snap, rc, out, err);
}

void
cx_snapshot_pin_of(const cx_snapshot *snap, cx_snapshot_pin *pin)
{
	pin->base_version = snap->base->version;
	pin->nshards = snap->nshards;
	pin->shard_versions = snap->shard_versions;
}

/* The shard manifests the pin names, in the base's shard order. */
static cx_code
load_pinned_shards(cx_snapshot *snap, const cx_snapshot_pin *pin,
				   cx_err *err)
{
	if (pin->nshards == 0)
		return CX_OK;
	if (pin->nshards != snap->base->nshards)
		return cx_err_set(err, CX_ERR_INVALID,
						  "snapshot of %s: the pin names %u shards, base version %llu has %u",
						  snap->store->uri, pin->nshards,
						  (unsigned long long) pin->base_version,
						  snap->base->nshards);
	snap->shards = calloc(pin->nshards, sizeof(cx_shard_manifest *));
	if (snap->shards == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	snap->nshards = pin->nshards;
	for (uint32_t i = 0; i < snap->nshards; i++)
	{
		const char *id = snap->base->shards[i].shard_id;

		if (pin->shard_versions[i] != 0 &&
			cx_shard_manifest_load(snap->store, id, pin->shard_versions[i],
								   &snap->shards[i], err) != CX_OK)
			return cx_err_prefix(err, "snapshot of %s: shard %s",
								 snap->store->uri, id);
	}
	return CX_OK;
}

cx_code
cx_snapshot_open_pinned(cx_objstore *s, const cx_snapshot_pin *pin,
						cx_snapshot **out, cx_err *err)
{
	cx_snapshot *snap = calloc(1, sizeof(cx_snapshot));
	cx_code		rc;

	*out = NULL;
	if (snap == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "snapshot: out of memory");
	snap->store = s;
	rc = load_base(snap, pin->base_version, err);
	if (rc == CX_OK)
		rc = load_pinned_shards(snap, pin, err);
	return finish_open(snap, rc, out, err);
}

void
cx_snapshot_close(cx_snapshot *snap)
{
	if (snap == NULL)
		return;
	for (uint32_t i = 0; i < snap->nshards; i++)
		cx_shard_manifest_free(snap->shards[i]);
	free(snap->shards);
	free(snap->shard_versions);
	for (uint32_t i = 0; i < snap->ngens; i++)
		cx_generation_done(snap->store, snap->gens[i].from);
	free(snap->gens);
	cx_manifest_free(snap->base);
	free(snap);
}

const cx_manifest *
cx_snapshot_base(const cx_snapshot *snap)
{
	return snap->base;
}

uint64_t
cx_snapshot_version(const cx_snapshot *snap)
{
	return snap->base->version;
}

/* The unmerged generations' rows, or their bytes. */
static uint64_t
sum_generations(const cx_snapshot *snap, bool bytes)
{
	uint64_t	n = 0;

	for (uint32_t i = 0; i < snap->ngens; i++)
	{
		const cx_fragment_info *fi = &snap->gens[i].gen->fragment;

		n += bytes ? fi->size : fi->rows;
	}
	return n;
}

uint64_t
cx_snapshot_row_estimate(const cx_snapshot *snap)
{
	return cx_manifest_rows(snap->base) + sum_generations(snap, false);
}

uint32_t
cx_snapshot_pending_generations(const cx_snapshot *snap)
{
	return snap->ngens;
}

uint64_t
cx_snapshot_bytes(const cx_snapshot *snap)
{
	return cx_manifest_bytes(snap->base) + sum_generations(snap, true);
}
