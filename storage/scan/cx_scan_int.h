/*
 * cx_scan_int.h — the snapshot's insides, shared by cx_snapshot.c (which
 * builds it) and cx_table_scan.c (which reads it).  Not a public interface.
 */
#ifndef CX_SNAPSHOT_INT_H
#define CX_SNAPSHOT_INT_H

#include "memwal/cx_shard_manifest.h"
#include "scan/cx_table_scan.h"

/* One unmerged generation in the snapshot. */
typedef struct cx_snapgen
{
	const cx_generation *gen;	/* borrowed from its shard manifest */
	uint32_t	shard;			/* index of its shard in base->shards */
	cx_objstore *from;			/* where its bytes are read (NULL: not yet
								 * opened; cx_generation_open) */
} cx_snapgen;

struct cx_snapshot
{
	cx_objstore *store;
	cx_manifest *base;			/* never NULL; version 0 = empty store */
	uint32_t	nshards;		/* base->nshards */
	cx_shard_manifest **shards; /* newest manifest per shard, or NULL */
	uint64_t   *shard_versions; /* their versions (0: NULL), for the pin */
	uint32_t	ngens;
	cx_snapgen *gens;			/* by shard (base order), then generation */
};

#endif							/* CX_SNAPSHOT_INT_H */
