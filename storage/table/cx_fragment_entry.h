/*
 * cx_fragment_entry.h — the encoded description of one fragment, as manifests
 * list it (docs/FORMAT.md, "Manifest object": fragment entry).
 *
 *   str16   path            key of the fragment object
 *   u64     size            object size in bytes
 *   u64     rows
 *   u64     footer_offset
 *   u32     footer_len      footer bytes: FileMetaData, its length, "PAR1"
 *   u32     footer_crc      CRC-32C of those bytes (checked when opened)
 *   u32     ncolumns
 *   ncolumns x column statistics (cx_colstats_encode)
 *   ncolumns x u32 field id of each column, in the same order (0: unknown;
 *                   absent from base manifests before format 3)
 *
 * Shard manifests list generation fragments in exactly this form; base
 * manifests follow each entry with the fragment's deletion vector.
 */
#ifndef CX_FRAGENTRY_H
#define CX_FRAGENTRY_H

#include <stdbool.h>

#include "format/cx_fragment.h"

/* Smallest encoded entry: empty path, no columns. */
#define CX_FRAGENTRY_MIN_LEN (2 + 8 + 8 + 8 + 4 + 4 + 4)

/* CX_ERR_INVALID unless a reader would accept the entry (valid key, footer
 * inside the object, statistics present for every column). */
cx_code		cx_fragentry_check(const cx_fragment_info *fi, cx_err *err);
void		cx_fragentry_encode(const cx_fragment_info *fi, cx_buf *out);
/* Decodes into *fi (zeroed by the caller; freed with cx_fragment_info_free
 * even after a failure); field_ids: the entry has them (base manifests of
 * format 3 on, shard manifests).  Malformed input marks r bad; returns false
 * only when memory runs out, so the two can be reported differently. */
bool		cx_fragentry_decode(cx_rd *r, bool field_ids, cx_fragment_info *fi);

/*
 * Statistics by field id, so that a fragment listed by a manifest is judged
 * without opening it whatever schema it was written with.  Writers record
 * the field id of every column (cx_fragentry_set_field_ids, with the schema
 * the fragment was written with); an entry without them is taken to hold
 * the table's columns in order, then the hidden ones.
 */
void		cx_fragentry_set_field_ids(cx_fragment_info *fi,
									   const cx_schema *written);
/* Of table column `column` of table; NULL when the fragment lacks the
 * column or stores it as a narrower type (its bounds would be misread). */
const cx_colstats *cx_fragment_stats(const cx_fragment_info *fi,
									 const cx_schema *table, uint32_t column);
/* Of a hidden column (CX_FIELD_ID_COMMIT_TS or CX_FIELD_ID_TOMBSTONE). */
const cx_colstats *cx_fragment_hidden_stats(const cx_fragment_info *fi,
											int32_t field_id);
/* Whether a listed fragment may hold tombstone rows, by its statistics
 * (true when they are missing): readers look at the tombstone column only
 * of fragments that may. */
bool		cx_fragment_may_have_tombstones(const cx_fragment_info *fi);

#endif							/* CX_FRAGENTRY_H */
