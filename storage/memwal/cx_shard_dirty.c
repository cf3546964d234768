/*
 * cx_shard_dirty.c — dirty markers: how a reader of a store that many
 * clusters wrote finds the few shards that may hold unmerged generations
 * with one listing instead of a request per shard (docs/design/scan.md,
 * "Many shards"; invariant 21 of docs/INVARIANTS.md).
 *
 * A marker "_dirty/<shard>.<V>.dirty" (empty) says "shard-manifest version
 * V of the shard, or a later one, may list a generation".  The writer puts
 * it before the put of a version V that lists generations on top of one
 * that lists none, and deletes the markers numbered <= V only after a
 * version V that lists none has landed.  A version that adds generations
 * after V is numbered above V, so the deletion never removes the marker of
 * a generation committed since; a marker left behind (a crash, a failed
 * delete) only makes readers read that shard, until GC deletes it by the
 * same rule (maintenance/cx_gc_sweep.c).  So, for a shard the base
 * flags dirty_marked, "no marker listed" proves that its newest manifest,
 * as of the listing, lists no generation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwal/cx_memwal_int.h"
#include "objstore/cx_layout.h"

cx_code
cx_shard_put_dirty_marker(cx_objstore *s, const char *shard_id,
						  uint64_t version, cx_err *err)
{
	char		prefix[CX_KEY_MAX + 1];
	char		key[CX_KEY_MAX + 1];
	cx_vseq		q;

	cx_layout_dirty_markers(shard_id, prefix, &q);
	cx_vseq_key(&q, version, key);
	if (cx_obj_put(s, key, "", 0, CX_PUT_OVERWRITE, err) != CX_OK)
		return cx_err_prefix(err, "shard %s: marking it dirty", shard_id);
	return CX_OK;
}

cx_code
cx_sw_mark_dirty(cx_shardwriter *w, const cx_shard_manifest *next,
				 cx_err *err)
{
	if (w->m->ngens > 0 || next->ngens == 0)
		return CX_OK;			/* a marker exists already, or none is due */
	if (cx_shard_put_dirty_marker(w->s, w->shard_id, next->version, err) != CX_OK)
		return err->code;
	w->markers_maybe = true;
	return CX_OK;
}

typedef struct stale_markers
{
	cx_objstore *s;
	const char *shard_id;
	uint64_t	through;		/* delete markers numbered <= this */
	cx_code		rc;
	cx_err	   *err;
} stale_markers;

static bool
delete_stale(void *arg, const char *key, uint64_t size)
{
	stale_markers *st = arg;
	cx_object_name name;

	(void) size;
	if (cx_object_parse(key, &name) != CX_OBJECT_DIRTY_MARKER ||
		strcmp(name.shard_id, st->shard_id) != 0 || name.number > st->through)
		return true;
	st->rc = cx_obj_delete(st->s, key, st->err);
	return st->rc == CX_OK;
}

void
cx_sw_clear_dirty(cx_shardwriter *w)
{
	char		prefix[CX_KEY_MAX + 1];
	cx_vseq		q;
	cx_err		ignored;
	stale_markers st = {w->s, w->shard_id, w->m->version, CX_OK, &ignored};

	if (w->m->ngens > 0 || !w->markers_maybe)
		return;
	cx_layout_dirty_markers(w->shard_id, prefix, &q);
	/* Best effort: a marker left behind costs readers a read, no more. */
	if (cx_obj_list(w->s, prefix, delete_stale, &st, &ignored) == CX_OK &&
		st.rc == CX_OK)
		w->markers_maybe = false;
}
