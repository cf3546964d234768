/*
 * mw_util.h — helpers for the MemWAL merge and scan tests: a small keyed
 * table, writers on it, hand-made shards (for rows the writer API cannot
 * produce: tombstones, chosen commit times), and scans into a sorted row
 * list.
 *
 * The table is (id text, v int64, tags text[]), key id.  A row's tags are
 * v % 3 copies of "t<v>", so list columns travel through every path.
 */
#ifndef MW_UTIL_H
#define MW_UTIL_H

#include "table/cx_manifest.h"
#include "memwal/cx_shard_manifest.h"
#include "memwal/cx_shard_writer.h"
#include "scan/cx_table_scan.h"

cx_schema  *mw_schema(void);	/* static; do not free */

/* Rewrites b, an encoded format 3 shard manifest, as format 2 (what earlier
 * releases wrote): the same with the carried part (u64 length, bytes) at
 * the end of the body instead of its start. */
void		mw_to_format_2(cx_buf *b);
/* The test's store "<tmpdir>/store" (NULL if it cannot be opened). */
cx_objstore *mw_open_store(void);

/* Opens a writer of shard_id on s with key "id". */
/* The options mw_writer opens with. */
void		mw_writer_options(bool unique_key, cx_sw_options *o);
cx_code		mw_writer(cx_objstore *s, const char *shard_id, bool unique_key,
					  cx_shardwriter **w, cx_err *err);
/* Appends rows "<prefix><first>" .. "<prefix><first + n - 1>" with v = v. */
cx_code		mw_put(cx_shardwriter *w, const char *prefix, int first, int n,
				   int64_t v, bool seal, cx_err *err);

/* One row of an append: a put (id, v) or a tombstone of id (v unused; a
 * NULL id is a TRUNCATE marker). */
typedef struct mw_op
{
	cx_row_kind kind;			/* CX_ROW_PUT or CX_ROW_DELETE */
	const char *id;
	int64_t		v;
} mw_op;

/* Appends the rows of ops in order, in one cx_sw_append (one commit time). */
cx_code		mw_append(cx_shardwriter *w, const mw_op *ops, int n, bool seal,
					  cx_err *err);
/* Stages op as a request of its own (cx_sw_stage); cx_sw_append_staged
 * appends what was staged. */
cx_code		mw_stage(cx_shardwriter *w, const mw_op *op, cx_err *err);
/* The same, telling the commit time given to the rows. */
cx_code		mw_append_ts(cx_shardwriter *w, const mw_op *ops, int n, bool seal,
						 int64_t *commit_ts, cx_err *err);

/* Appends one TRUNCATE marker (a tombstone with a NULL key). */
cx_code		mw_truncate(cx_shardwriter *w, bool seal, cx_err *err);

/* A row of a hand-made generation. */
typedef struct mw_genrow
{
	const char *id;				/* NULL = NULL key */
	int64_t		v;
	int64_t		ts;
	bool		tombstone;
} mw_genrow;

/*
 * Hand-made shard: registers shard_id (and the key "id", unique) in the base
 * if needed and commits the next shard-manifest version with one more
 * generation holding rows (no writer, no epoch handling: tests only).
 */
cx_code		mw_fake_seal(cx_objstore *s, const char *shard_id,
						 const mw_genrow *rows, int n, cx_err *err);
/*
 * Hand-made base version listing fragments, committed directly (tests of
 * the commit machinery and of ctxstore-inspect; the engine's base versions
 * come from merges): sets the schema on the first commit, refuses one that
 * differs from the store's (CX_ERR_SCHEMA).
 */
cx_code		mw_commit_fragments(cx_objstore *s, const cx_schema *schema,
								const cx_fragment_info *fragments, uint32_t n,
								uint64_t *version, cx_err *err);
/* Drains from w's shard the generations the newest base version of s
 * marks merged (the engine drains through a merge's result instead). */
cx_code		mw_drain(cx_objstore *s, cx_shardwriter *w, cx_err *err);
/* Whether row `row` of fragment `fragment` is deleted in m. */
bool		mw_is_deleted(const cx_manifest *m, uint32_t fragment, uint64_t row);
/* Drops the generations the base marks merged from a hand-made shard. */
cx_code		mw_fake_drain(cx_objstore *s, const char *shard_id, cx_err *err);

typedef struct mw_row
{
	char		id[128];		/* "" for a NULL key */
	int64_t		v;
	uint32_t	ntags;
	bool		tags_ok;		/* every tag is "t<v>" */
} mw_row;

typedef struct mw_rows
{
	mw_row	   *r;				/* sorted by id, then v */
	uint32_t	n;
	cx_tablescan_stats stats;
	uint32_t	pending;		/* unmerged generations in the snapshot */
} mw_rows;

/* Scans the newest snapshot (want NULL = all columns). */
cx_code		mw_scan(cx_objstore *s, const bool *want, mw_rows *out,
					cx_err *err);
/* The same for a pinned base version (0: the newest snapshot). */
cx_code		mw_scan_version(cx_objstore *s, uint64_t version, const bool *want,
							mw_rows *out, cx_err *err);
/* Scans the newest snapshot for the rows of n keys (at most 64), all
 * columns (cx_tablescan_begin_keys). */
cx_code		mw_scan_keys(cx_objstore *s, const char *const *keys, uint32_t n,
						 mw_rows *out, cx_err *err);
/* Appends rows[0..n) of the batch scan just returned (unsorted). */
void		mw_rows_add(const cx_tablescan *scan, const uint32_t *rows,
						uint32_t n, mw_rows *out);
void		mw_rows_sort(mw_rows *rows);
void		mw_rows_free(mw_rows *rows);
/* Occurrences of id; *v receives the value of the last one. */
int			mw_count(const mw_rows *rows, const char *id, int64_t *v);
bool		mw_rows_equal(const mw_rows *a, const mw_rows *b);
/* Whether two finished statistics are the same (bounds byte for byte). */
bool		mw_colstats_equal(const cx_colstats *a, const cx_colstats *b);

#endif							/* MW_UTIL_H */
