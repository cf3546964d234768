/*
 * cx_functions.h — what the SQL functions of schema ctxstore share
 * (cx_functions.c: stats and versions; cx_maintenance.c: flush, merge_wal,
 * cleanup_wal, pending_wal_generations, create_id_index, publish_iceberg;
 * cx_lifecycle.c: compact, gc).
 */
#ifndef CX_FUNCTIONS_H
#define CX_FUNCTIONS_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/relcache.h"

#include "ctxstore/engine.h"

/* What a function requires of its caller on the table. */
typedef enum CxTableCheck
{
	CX_CHECK_SELECT,			/* SELECT privilege (it reads) */
	CX_CHECK_OWNER				/* ownership (it maintains the store) */
} CxTableCheck;

/* Opens the ctxstore foreign table relid (AccessShareLock) after checking
 * that it is one and that the caller passes check. */
extern Relation cxfdw_function_table(Oid relid, CxTableCheck check);

/* Whether relid is a foreign table of this wrapper. */
extern bool cxfdw_is_ctxstore_table(Oid relid);

/* cx_shards_read() in palloc'd memory. */
extern cx_shard_info *cxfdw_read_shards(cx_objstore *s, int *nshards);

/* The store of an unpinned table, opened for writing; a table pinned to a
 * version is refused (fname cannot verb it). */
struct CxRelInfo;
struct CxStore;
extern struct CxStore *cxfdw_open_unpinned(struct CxRelInfo *ri,
										   const char *fname,
										   const char *verb);

/* Brings the key index of ri's store up to date with its base. */
extern cx_code cxfdw_index_store(const struct CxRelInfo *ri,
								 struct CxStore *st, cx_keyindex_result *res,
								 cx_err *err);

/* Appends "key":value to the JSON object or array buf is writing
 * (cx_functions.c). */
extern void cxfdw_json_uint(StringInfo buf, const char *key, uint64 value);

#endif							/* CX_FUNCTIONS_H */
