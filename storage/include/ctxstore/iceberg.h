/*
 * ctxstore/iceberg.h — publishing a store as an Iceberg v2 table, so that
 * other engines (Spark, Trino, pyiceberg, DuckDB) read it without a
 * catalog service (storage/maintenance/cx_iceberg.c says how;
 * docs/FORMAT.md "Iceberg metadata" specifies the files).
 *
 * A publish describes the store's newest base version as one Iceberg
 * snapshot: its data files are the base fragments themselves (referenced by
 * absolute URI, never copied), and every row that is not live in the base
 * (a deletion-vector entry, a tombstone, a row before the base's TRUNCATE
 * cut) is a position delete.  Rows of unmerged generations are not part of
 * it: they appear after their merge and the next publish.
 */
#ifndef CTXSTORE_ICEBERG_H
#define CTXSTORE_ICEBERG_H

#include <stdbool.h>
#include <stdint.h>

#include "ctxstore/objstore.h"

/* What a publish did (or found already done). */
typedef struct cx_iceberg_result
{
	bool		published;		/* false: the base version was published
								 * already (or the store is empty) */
	uint64_t	base_version;	/* the version the snapshot describes */
	uint64_t	metadata_version;	/* N of vN.metadata.json; 0: none */
	int64_t		snapshot_id;	/* 0: none */
	uint32_t	data_files;
	uint64_t	records;		/* rows of the data files */
	uint32_t	delete_files;
	uint64_t	position_deletes;
	char	   *metadata_location;	/* absolute URI, malloc'd; NULL: none */
} cx_iceberg_result;

void		cx_iceberg_result_free(cx_iceberg_result *res);

/*
 * Publishes the newest base version of s: adds one snapshot for it to the
 * table under "<store>/iceberg/" (creating the table on the first publish),
 * keeping every earlier snapshot.  Idempotent: when the current snapshot
 * already describes that base version (or a newer one) nothing is written
 * and res describes the current snapshot.  The new vN.metadata.json is
 * written with put-if-absent; a publish that loses the race to another
 * publisher starts again from the winner's metadata, at most a few times
 * (then CX_ERR_CONFLICT).  An empty store publishes nothing.
 */
cx_code		cx_iceberg_publish(cx_objstore *s, cx_iceberg_result *res,
							   cx_err *err);

#endif							/* CTXSTORE_ICEBERG_H */
