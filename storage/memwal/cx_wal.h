/*
 * cx_wal.h — a shard's write-ahead log (private to the shard writer).
 *
 * Entry seq of shard <id> is the immutable object
 * "_shards/<id>/wal/<seq as 20 digits>.wal", written once with put-if-absent
 * (docs/FORMAT.md "Shards").  Two kinds:
 *   rows   one append: its rows (cx_rowcodec bytes), their schema and commit
 *          time.  Durable once the put returns: this is what an unsealed
 *          append acknowledges.
 *   fence  written by a claim at the WAL tip: an older writer's next entry
 *          collides with it (or with a later entry) and the older writer
 *          learns it is fenced.
 * Every entry carries the writer's epoch and a random commit id, so a writer
 * recognises its own landed put after an ambiguous answer, and anyone can
 * tell an older writer's straggler from a newer writer's entry.
 *
 * Seqs of one writer are increasing.  A seq whose put failed for certain
 * is reused; one whose outcome is unknown is settled (the same bytes put
 * again) before the writer writes past it, so that no entry of a writer
 * lands above a gap a claim's fence could take.  A seq may still stay a gap
 * (the writer crashed or was fenced), so readers list the prefix rather
 * than assume contiguity.
 */
#ifndef CX_WAL_H
#define CX_WAL_H

#include <stdbool.h>
#include <stdint.h>

#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"
#include "objstore/cx_versioned.h"

#define CX_WAL_MAGIC "CXW1"
#define CX_WAL_FORMAT 1

typedef enum cx_wal_kind
{
	CX_WAL_ROWS = 1,
	CX_WAL_FENCE = 2
} cx_wal_kind;

typedef struct cx_wal_entry
{
	uint8_t		kind;			/* cx_wal_kind */
	uint64_t	epoch;			/* writer epoch, >= 1 */
	uint64_t	seq;			/* equals the number in the key, >= 1 */
	int64_t		commit_ts;		/* rows: their commit time (Unix us);
								 * fence: when it was placed */
	uint8_t		commit_id[16];	/* random */
	uint64_t	nrows;			/* rows: >= 1; fence: 0 */
	cx_schema  *schema;			/* rows: the rows' columns */
	const uint8_t *rows;		/* rows: nrows rows, cx_row_encode() form;
								 * after decoding, points into the object */
	size_t		rows_len;
	char	   *writer;			/* fence: who claimed ("host pid ...") */
} cx_wal_entry;

/* Frees what cx_wal_read() allocated (schema, writer); not rows. */
void		cx_wal_entry_clear(cx_wal_entry *e);

cx_code		cx_wal_encode(const cx_wal_entry *e, cx_buf *out, cx_err *err);
/* Decodes into *e (rows point into data); name is for messages. */
cx_code		cx_wal_decode(const uint8_t *data, size_t len, const char *name,
						  cx_wal_entry *e, cx_err *err);

/* Who holds the seq a put found taken; epoch 0 if the put's own entry
 * does. */
typedef struct cx_wal_taken
{
	uint64_t	epoch;
	uint8_t		kind;			/* cx_wal_kind */
} cx_wal_taken;

/*
 * Writes e at e->seq with put-if-absent.  On CX_OK, *taken says who holds
 * the seq (the caller decides: newer means fenced, older means an older
 * writer's straggler or an overtaken claim's fence).  When the outcome
 * cannot be settled, *unknown is set along with the error.
 */
cx_code		cx_wal_put(cx_objstore *s, const char *shard_id,
					   const cx_wal_entry *e, cx_wal_taken *taken,
					   bool *unknown, cx_err *err);
/* The same with the entry already encoded (cx_wal_encode): settling an
 * unknown outcome puts exactly the bytes of the first put again. */
cx_code		cx_wal_put_encoded(cx_objstore *s, const char *shard_id,
							   uint64_t seq, const cx_buf *bytes,
							   cx_wal_taken *taken, bool *unknown,
							   cx_err *err);

/* Reads entry seq into *e; bytes (reused across calls, so one entry is in
 * memory at a time) holds the object e->rows points into. */
cx_code		cx_wal_read(cx_objstore *s, const char *shard_id, uint64_t seq,
						cx_buf *bytes, cx_wal_entry *e, cx_err *err);

#endif							/* CX_WAL_H */
