/*
 * ctxstore/layout.h — what an object key of a store names, as the
 * PostgreSQL side reads it (objstore/cx_layout.h builds the keys too).
 *
 * docs/FORMAT.md "Store layout" lists the keys; objstore/cx_layout.c is the
 * one place that spells them.
 */
#ifndef CTXSTORE_LAYOUT_H
#define CTXSTORE_LAYOUT_H

#include <stdint.h>

#define CX_SHARD_ID_MAX 128		/* [A-Za-z0-9._-]{1,128} */
#define CX_FRAGMENT_ID_LEN 16	/* random bytes naming a fragment */

/* The object a writer overwrites to check that a role's credentials may
 * write the store; nothing reads it. */
#define CX_ACCESS_CHECK_KEY "_access_check"

typedef enum cx_object_kind
{
	CX_OBJECT_NONE = 0,			/* no key of the layout */
	CX_OBJECT_BASE_VERSION,		/* _versions/<20 digits>.manifest */
	CX_OBJECT_BASE_HINT,		/* _latest */
	CX_OBJECT_FRAGMENT,			/* data/<32 lowercase hex>.parquet */
	CX_OBJECT_SHARD_VERSION,	/* _shards/<id>/_versions/<20 digits>.shard */
	CX_OBJECT_SHARD_HINT,		/* _shards/<id>/_latest */
	CX_OBJECT_WAL_ENTRY,		/* _shards/<id>/wal/<20 digits>.wal */
	CX_OBJECT_ACCESS_CHECK,		/* CX_ACCESS_CHECK_KEY */
	CX_OBJECT_INDEX_SEGMENT,	/* index/<32 lowercase hex>.cxk */
	CX_OBJECT_COMPACTION_LEASE,	/* _compaction/lease */
	CX_OBJECT_DIRTY_MARKER,		/* _dirty/<id>.<20 digits>.dirty */
	CX_OBJECT_GC_RECORD			/* _gc/<20 digits>.retention */
} cx_object_kind;

/* A key taken apart; fields the kind does not have are zero. */
typedef struct cx_object_name
{
	cx_object_kind kind;
	uint64_t	number;			/* version, WAL seq or record, >= 1 */
	char		shard_id[CX_SHARD_ID_MAX + 1];
	uint8_t		fragment_id[CX_FRAGMENT_ID_LEN];	/* or index segment id */
} cx_object_name;

/*
 * Parses key (relative to the store root) into *name and returns its kind:
 * CX_OBJECT_NONE for any other key, including numbers that are not exactly
 * 20 digits or are 0, invalid shard ids and temporary names.
 */
cx_object_kind cx_object_parse(const char *key, cx_object_name *name);

#endif							/* CTXSTORE_LAYOUT_H */
