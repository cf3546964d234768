/*
 * cx_functions.h — what the SQL functions of schema ctxstore share
 * (cx_functions.c: stats and versions; cx_maintenance.c: flush, merge_wal,
 * cleanup_wal, pending_wal_generations).
 */
#ifndef CX_FUNCTIONS_H
#define CX_FUNCTIONS_H

#include "postgres.h"

#include "utils/relcache.h"

#include "table/cx_manifest.h"
#include "objstore/cx_objstore.h"

/* What a function requires of its caller on the table. */
typedef enum CxTableCheck
{
	CX_CHECK_SELECT,			/* SELECT privilege (it reads) */
	CX_CHECK_OWNER				/* ownership (it maintains the store) */
} CxTableCheck;

/* Opens the ctxstore foreign table relid (AccessShareLock) after checking
 * that it is one and that the caller passes check. */
extern Relation cxfdw_function_table(Oid relid, CxTableCheck check);

/* One shard of a store, as its newest shard manifest and the newest base
 * manifest describe it. */
typedef struct CxShardInfo
{
	char	   *shard_id;
	uint64		version;		/* newest shard-manifest version (0: none) */
	uint64		epoch;
	char	   *writer;			/* who holds the epoch ("host pid ...") */
	uint64		merged_gen;		/* the base's watermark */
	uint32		generations;	/* listed and not merged */
	uint64		rows;			/* in those generations */
} CxShardInfo;

/* Every shard registered in the store (palloc'd array).  The shard
 * manifests are read before the base whose watermarks count them, so a
 * merge and drain in between never makes merged generations look pending. */
extern CxShardInfo *cxfdw_read_shards(cx_objstore *s, int *nshards);

#endif							/* CX_FUNCTIONS_H */
