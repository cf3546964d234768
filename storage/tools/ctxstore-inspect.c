/*
 * ctxstore-inspect — look inside a ctxstore store without a server.
 *
 *   ctxstore-inspect URI versions              list committed versions
 *   ctxstore-inspect URI manifest [VERSION]    dump a manifest (default latest),
 *                                              key index segments included
 *   ctxstore-inspect URI fragment KEY          a Parquet fragment: schema with
 *                                              field ids and logical types,
 *                                              row groups, chunk statistics,
 *                                              pages with sizes and CRCs
 *   ctxstore-inspect URI shard ID [VERSION]    dump a shard manifest (default latest)
 *   ctxstore-inspect URI rows [VERSION|latest] [LIMIT]
 *                                              print the visible rows (latest:
 *                                              base + unmerged generations,
 *                                              one row per key; VERSION: that
 *                                              base version only)
 *   ctxstore-inspect URI verify                check every checksum in the store
 *                                              (fragments: every page CRC, the
 *                                              offset indexes, and the footer
 *                                              against the manifest entry) and
 *                                              that every object a version
 *                                              lists is there
 *   ctxstore-inspect URI repair [--apply]      the newest base version's
 *                                              fragments that are missing or
 *                                              fail their footer checksum,
 *                                              and the rows lost with them
 *                                              (their keys, as the key index
 *                                              knows them); --apply commits a
 *                                              base version without them
 *                                              ("repair")
 * The command may also come first ("ctxstore-inspect repair URI").
 *
 * Exit status: 0 on success, 1 on an engine error or when verify finds no
 * store at URI (message on stderr), 2 on bad usage, 3 when verify found
 * corrupt or missing objects or a repair without --apply found fragments
 * to drop.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "table/cx_commit.h"
#include "format/cx_fragment.h"
#include "format/cx_parquet_types.h"
#include "objstore/cx_layout.h"
#include "table/cx_key_index.h"
#include "table/cx_manifest.h"
#include "table/cx_row_key.h"
#include "objstore/cx_objstore.h"
#include "memwal/cx_shard_manifest.h"
#include "scan/cx_table_scan.h"
#include "memwal/cx_wal.h"
#include "maintenance/cx_gc_record.h"

/* PostgreSQL's epoch (2000-01-01) in days and seconds after the Unix epoch. */
#define PG_EPOCH_DAYS 10957
#define USECS_PER_DAY INT64_C(86400000000)

static int
usage(void)
{
	fprintf(stderr,
			"usage: ctxstore-inspect URI versions\n"
			"       ctxstore-inspect URI manifest [VERSION]\n"
			"       ctxstore-inspect URI fragment KEY\n"
			"       ctxstore-inspect URI shard ID [VERSION]\n"
			"       ctxstore-inspect URI rows [VERSION|latest] [LIMIT]\n"
			"       ctxstore-inspect URI verify\n"
			"       ctxstore-inspect URI repair [--apply]\n");
	return 2;
}

static int
fail(const cx_err *err)
{
	fprintf(stderr, "ctxstore-inspect: %s (%s)\n", err->msg,
			cx_code_name(err->code));
	return 1;
}

/* Gregorian date from days since 1970-01-01 (Howard Hinnant's algorithm). */
static void
civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t		era,
				yoe,
				doy,
				mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	yoe = z - era * 146097;
	yoe = (yoe - yoe / 1460 + yoe / 36524 - yoe / 146096) / 365;
	doy = z - era * 146097 - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static void
print_date(int64_t days_since_2000)
{
	int64_t		y;
	int			m,
				d;

	civil_from_days(days_since_2000 + PG_EPOCH_DAYS, &y, &m, &d);
	printf("%04" PRId64 "-%02d-%02d", y, m, d);
}

static void
print_time_of_day(int64_t usec)
{
	printf("%02" PRId64 ":%02" PRId64 ":%02" PRId64 ".%06" PRId64,
		   usec / INT64_C(3600000000), usec / 60000000 % 60,
		   usec / 1000000 % 60, usec % 1000000);
}

static void
print_timestamp(int64_t usec, bool utc)
{
	int64_t		days = usec / USECS_PER_DAY;
	int64_t		rem = usec % USECS_PER_DAY;

	if (rem < 0)
	{
		rem += USECS_PER_DAY;
		days--;
	}
	print_date(days);
	putchar(' ');
	print_time_of_day(rem);
	if (utc)
		printf("+00");
}

static void
print_bytes_quoted(const uint8_t *p, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++)
	{
		if (p[i] == '"' || p[i] == '\\')
			printf("\\%c", p[i]);
		else if (p[i] < 0x20)
			printf("\\x%02x", p[i]);
		else
			putchar(p[i]);
	}
	putchar('"');
}

static void
print_hex(const uint8_t *p, size_t n)
{
	printf("\\x");
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static void
print_float(double v)
{
	if (isnan(v))
		printf("NaN");
	else if (isinf(v))
		printf(v > 0 ? "Infinity" : "-Infinity");
	else
		printf("%.17g", v);
}

static void print_value(const cx_colvec *v, uint32_t row);

static void
print_scalar(const cx_datum *d, cx_type type)
{
	switch (type)
	{
		case CX_T_BOOL:
			printf(d->v.b ? "true" : "false");
			break;
		case CX_T_INT16:
			printf("%d", d->v.i16);
			break;
		case CX_T_INT32:
			printf("%" PRId32, d->v.i32);
			break;
		case CX_T_INT64:
			printf("%" PRId64, d->v.i64);
			break;
		case CX_T_FLOAT32:
			print_float(d->v.f32);
			break;
		case CX_T_FLOAT64:
			print_float(d->v.f64);
			break;
		case CX_T_DATE:
			print_date(d->v.i32);
			break;
		case CX_T_TIME:
			print_time_of_day(d->v.i64);
			break;
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			print_timestamp(d->v.i64, type == CX_T_TIMESTAMPTZ);
			break;
		case CX_T_UUID:
			for (int i = 0; i < 16; i++)
				printf("%s%02x", (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "",
					   d->v.uuid[i]);
			break;
		case CX_T_INTERVAL:
			printf("%" PRId32 " months %" PRId32 " days %" PRId64 " us",
				   d->v.interval.months, d->v.interval.days, d->v.interval.usec);
			break;
		case CX_T_BINARY:
		case CX_T_EXTERNAL:
			print_hex(d->v.bytes.ptr, d->v.bytes.len);
			break;
		case CX_T_STRING:
		case CX_T_JSON:
		case CX_T_JSONB:
		case CX_T_NUMERIC:
			print_bytes_quoted(d->v.bytes.ptr, d->v.bytes.len);
			break;
		case CX_T_LIST:
			break;
	}
}

static void
print_value(const cx_colvec *v, uint32_t row)
{
	cx_datum	d;

	cx_colvec_get(v, row, &d);
	if (d.isnull)
	{
		printf("NULL");
		return;
	}
	if (v->type != CX_T_LIST)
	{
		print_scalar(&d, v->type);
		return;
	}
	putchar('[');
	for (uint32_t i = 0; i < d.v.slice.n; i++)
	{
		if (i > 0)
			printf(", ");
		print_value(d.v.slice.elems, d.v.slice.start + i);
	}
	putchar(']');
}

static void
print_schema(const cx_schema *s)
{
	for (uint32_t i = 0; i < s->ncolumns; i++)
	{
		const cx_column *c = &s->columns[i];

		printf("  %-24s %s", c->name, cx_type_name(c->type));
		if (c->type == CX_T_LIST)
			printf("<%s>", cx_type_name(c->elem_type));
		if (c->ext_type)
			printf(" (%s)", c->ext_type);
		putchar('\n');
	}
}

static void
print_commit_id(const uint8_t *id)
{
	for (int i = 0; i < 16; i++)
		printf("%02x", id[i]);
}

static void
print_utc_us(int64_t unix_us)
{
	print_timestamp(unix_us - (int64_t) PG_EPOCH_DAYS * USECS_PER_DAY, true);
}

typedef struct versions_ctx
{
	cx_objstore *store;
	cx_err	   *err;
	int			rc;
} versions_ctx;

static bool
print_version_line(void *arg, uint64_t version)
{
	versions_ctx *ctx = arg;
	cx_manifest *m;

	if (cx_manifest_load(ctx->store, version, &m, ctx->err) != CX_OK)
	{
		ctx->rc = fail(ctx->err);
		return false;
	}
	printf("%10" PRIu64 "  ", version);
	print_utc_us(m->committed_at_us);
	printf("  %-10s %17" PRIu64 " %16" PRIu32 "\n",
		   m->operation, cx_manifest_rows(m), m->nfragments);
	cx_manifest_free(m);
	return true;
}

static int
cmd_versions(cx_objstore *s, cx_err *err)
{
	versions_ctx ctx = {s, err, 0};

	printf("%10s  %-29s  %-10s %17s %16s\n", "version", "committed at (UTC)",
		   "operation", "rows", "fragments");
	if (cx_manifest_list_versions(s, print_version_line, &ctx, err) != CX_OK)
		return fail(err);
	return ctx.rc;
}

static int
load_version(cx_objstore *s, const char *arg, cx_manifest **m, cx_err *err)
{
	if (arg == NULL || strcmp(arg, "latest") == 0)
	{
		if (cx_manifest_load_latest(s, m, err) != CX_OK)
			return fail(err);
		if (*m == NULL)
		{
			printf("empty store (no version committed)\n");
			return -1;
		}
		return 0;
	}
	if (cx_manifest_load(s, strtoull(arg, NULL, 10), m, err) != CX_OK)
		return fail(err);
	return 0;
}

/* Prints a min/max bound (stored as the value's on-disk bytes) as a value,
 * through a one-row column vector so print_value() does the formatting. */
static void
print_bound(const uint8_t *bytes, uint8_t len, const cx_column *col)
{
	uint32_t	offsets[2] = {0, len};
	cx_colvec	v = {.type = col->type, .width = (uint8_t) cx_type_width(col->type),
	.nrows = 1};

	if (v.width > 0)
		v.fixed = bytes;
	else
	{
		v.offsets = offsets;
		v.bytes = bytes;
	}
	print_value(&v, 0);
}

static void
print_stats(const cx_colstats *st, const cx_column *col)
{
	printf("nulls %" PRIu64 " values %" PRIu64, st->null_count, st->value_count);
	if (st->has_min)
	{
		printf(" min ");
		print_bound(st->min, st->min_len, col);
	}
	if (st->has_max)
	{
		printf(" max ");
		print_bound(st->max, st->max_len, col);
	}
}

/* The column with that field id in with_hidden (the current schema and the
 * hidden columns) or, for a dropped or changed one, the newest schema of
 * the history that has it; NULL if none. */
static const cx_column *
column_by_field_id(const cx_manifest *m, const cx_schema *with_hidden,
				   int32_t field_id)
{
	int			c = cx_schema_find_field(with_hidden, field_id);

	for (uint32_t i = m->nold_schemas; c < 0 && i > 0; i--)
	{
		const cx_schema *s = m->old_schemas[i - 1].schema;

		if ((c = cx_schema_find_field(s, field_id)) >= 0)
			return &s->columns[c];
	}
	return c >= 0 ? &with_hidden->columns[c] : NULL;
}

/* Statistic c of f describes this column: by the field id the entry
 * records, else (an entry without them) by position in with_hidden. */
static const cx_column *
stats_column(const cx_manifest *m, const cx_fragment_info *f, uint32_t c,
			 const cx_schema *with_hidden)
{
	if (with_hidden == NULL)
		return NULL;
	if (f->stats[c].field_id != 0)
		return column_by_field_id(m, with_hidden, f->stats[c].field_id);
	return f->ncolumns == with_hidden->ncolumns ? &with_hidden->columns[c] : NULL;
}

static void
print_fragment_entry(const cx_manifest *m, uint32_t i,
					 const cx_schema *with_hidden)
{
	const cx_fragment_info *f = &m->fragments[i];

	printf("  %s  %" PRIu64 " bytes  %" PRIu64 " rows  %" PRIu32 " deleted  footer @%" PRIu64 "+%" PRIu32 "  from shard %s\n",
		   f->path, f->size, f->rows, cx_manifest_deleted_count(m, i),
		   f->footer_offset, f->footer_len,
		   f->origin_shard != NULL ? f->origin_shard : "(unknown)");
	for (uint32_t c = 0; c < f->ncolumns; c++)
	{
		const cx_column *col = stats_column(m, f, c, with_hidden);

		if (col == NULL)
		{
			printf("    statistics of %" PRIu32 " columns match no schema of the table\n",
				   f->ncolumns);
			return;
		}
		printf("    %-22s ", col->name);
		print_stats(&f->stats[c], col);
		putchar('\n');
	}
}

/* The key index segments m lists, each with what it covers. */
static void
print_key_index(const cx_manifest *m)
{
	cx_keyindex ix;
	cx_err		err;

	if (cx_keyindex_load(m, &ix, &err) != CX_OK)
	{
		printf("key index    unreadable: %s\n", err.msg);
		return;
	}
	if (ix.n > 0)
		printf("key index    %" PRIu32 " segments\n", ix.n);
	for (uint32_t i = 0; i < ix.n; i++)
	{
		const cx_keyseg_ref *r = &ix.segs[i];
		const char *col = m->schema != NULL && r->column < m->schema->ncolumns ?
			m->schema->columns[r->column].name : "?";

		printf("  %s  column %s  %" PRIu64 " bytes  %" PRIu64 " entries  %" PRIu32 " fragments\n",
			   r->path, col, r->size, r->entries, r->nfragments);
		for (uint32_t k = 0; k < r->nfragments; k++)
			printf("    %s%s\n", r->fragments[k],
				   cx_manifest_find_fragment(m, r->fragments[k]) < 0 ?
				   " (no longer listed)" : "");
	}
	cx_keyindex_free(&ix);
}

static int
cmd_manifest(cx_objstore *s, const char *arg, cx_err *err)
{
	cx_manifest *m;
	cx_schema  *with_hidden = NULL;
	int			rc = load_version(s, arg, &m, err);

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if (m->schema != NULL &&
		cx_shard_generation_schema(m->schema, &with_hidden, err) != CX_OK)
	{
		cx_manifest_free(m);
		return fail(err);
	}
	printf("version      %" PRIu64 "\ncommit id    ", m->version);
	print_commit_id(m->commit_id);
	printf("\ncommitted at ");
	print_utc_us(m->committed_at_us);
	printf("\noperation    %s\nrows         %" PRIu64 "\nschema%s\n",
		   m->operation, cx_manifest_rows(m), m->schema ? ":" : " (none yet)");
	if (m->schema)
	{
		print_schema(m->schema);
		printf("schema id    %" PRIu32 " (%" PRIu32 " earlier in the history; last field id %" PRId32 ")\n",
			   m->schema_id, m->nold_schemas, m->last_field_id);
	}
	printf("key          %s%s\n", m->key_column ? m->key_column : "(none yet)",
		   m->key_column ? (m->unique_key ? " (unique)" : " (not unique)") : "");
	printf("truncated    ");
	if (m->truncated_before_us > 0)
	{
		printf("rows committed before ");
		print_utc_us(m->truncated_before_us);
		putchar('\n');
	}
	else
		printf("never\n");
	printf("shards       %" PRIu32 "\n", m->nshards);
	for (uint32_t i = 0; i < m->nshards; i++)
		printf("  %s  merged through generation %" PRIu64 "\n",
			   m->shards[i].shard_id, m->shards[i].merged_gen);
	printf("fragments    %" PRIu32 "\n", m->nfragments);
	for (uint32_t i = 0; i < m->nfragments; i++)
		print_fragment_entry(m, i, with_hidden);
	for (uint32_t i = 0; i < m->nexts; i++)
		if (m->exts[i].tag != CX_KEYINDEX_EXT_TAG)
			printf("extension    tag %" PRIu32 ", %" PRIu32 " bytes\n",
				   m->exts[i].tag, m->exts[i].len);
	print_key_index(m);
	cx_schema_free(with_hidden);
	cx_manifest_free(m);
	return 0;
}

static const char *
physical_name(const cx_pq_schema_element *el)
{
	static const char *const names[] = {
		"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
		"FIXED_LEN_BYTE_ARRAY"
	};

	if (!el->has_type)
		return "group";
	return el->type <= CX_PQ_FIXED_LEN_BYTE_ARRAY ? names[el->type] : "?";
}

static void
print_logical(const cx_pq_logical *lt)
{
	switch (lt->kind)
	{
		case CX_PQ_LT_STRING:
			printf(" STRING");
			break;
		case CX_PQ_LT_LIST:
			printf(" LIST");
			break;
		case CX_PQ_LT_DECIMAL:
			printf(" DECIMAL(%d,%d)", lt->precision, lt->scale);
			break;
		case CX_PQ_LT_DATE:
			printf(" DATE");
			break;
		case CX_PQ_LT_TIME:
		case CX_PQ_LT_TIMESTAMP:
			printf(" %s(MICROS, %s)", lt->kind == CX_PQ_LT_TIME ? "TIME" : "TIMESTAMP",
				   lt->adjusted_to_utc ? "UTC" : "local");
			break;
		case CX_PQ_LT_INTEGER:
			printf(" INTEGER(%d, %s)", lt->bit_width, lt->is_signed ? "signed" : "unsigned");
			break;
		case CX_PQ_LT_JSON:
			printf(" JSON");
			break;
		case CX_PQ_LT_UUID:
			printf(" UUID");
			break;
		default:
			break;
	}
}

/* The Parquet schema the reader checked the file's against. */
static bool
print_parquet_schema(const cx_schema *schema)
{
	static const char *const reps[] = {"REQUIRED", "OPTIONAL", "REPEATED"};
	cx_pq_schema_element *els;
	uint32_t	n;

	if (!cx_pq_schema_elements(schema, &els, &n))
	{
		free(els);
		return false;
	}
	printf("Parquet schema:\n");
	for (uint32_t i = 1; i < n; i++)
	{
		const cx_pq_schema_element *el = &els[i];
		int			depth = strcmp(el->name, "list") == 0 ? 2 :
			strcmp(el->name, "element") == 0 && i > 1 && els[i - 1].num_children == 1 &&
			strcmp(els[i - 1].name, "list") == 0 ? 3 : 1;

		printf("%*s%-*s %s", 2 * depth, "", 24 - 2 * depth, el->name,
			   physical_name(el));
		if (el->type_length > 0)
			printf("(%d)", el->type_length);
		print_logical(&el->logical);
		printf(" %s", reps[el->repetition]);
		if (el->has_field_id)
			printf(" field_id %d", el->field_id);
		putchar('\n');
	}
	free(els);
	return true;
}

static cx_code
print_pages(cx_fragr *r, uint32_t g, uint32_t c, cx_err *err)
{
	cx_page_info *pages;
	uint32_t	n;

	if (cx_fragr_chunk_pages(r, g, c, &pages, &n, err) != CX_OK)
	{
		free(pages);
		return err->code;
	}
	for (uint32_t k = 0; k < n; k++)
		printf("    page %" PRIu32 " @%" PRIu64 " header %" PRIu32 " stored %" PRIu32
			   " raw %" PRIu32 " values %" PRIu32 " first row %" PRIu64
			   " crc %08" PRIx32 " %s\n", k, pages[k].offset, pages[k].header_len,
			   pages[k].stored_len, pages[k].raw_len, pages[k].num_values,
			   pages[k].first_row, pages[k].crc, pages[k].crc_ok ? "ok" : "MISMATCH");
	free(pages);
	return CX_OK;
}

static int
cmd_fragment(cx_objstore *s, const char *key, cx_err *err)
{
	cx_fragr   *r;
	const cx_schema *schema;
	cx_code		rc = CX_OK;

	if (cx_fragr_open(s, key, 0, &r, err) != CX_OK)
		return fail(err);
	schema = cx_fragr_schema(r);
	printf("fragment %s: %" PRIu64 " rows in %" PRIu32 " row groups\nschema:\n",
		   key, cx_fragr_rows(r), cx_fragr_num_groups(r));
	print_schema(schema);
	if (!print_parquet_schema(schema))
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	for (uint32_t g = 0; rc == CX_OK && g < cx_fragr_num_groups(r); g++)
	{
		printf("row group %" PRIu32 ": %" PRIu32 " rows\n", g,
			   cx_fragr_group_rows(r, g));
		for (uint32_t c = 0; rc == CX_OK && c < schema->ncolumns; c++)
		{
			const cx_chunk_meta *ch = cx_fragr_chunk(r, g, c);

			printf("  %-22s @%" PRIu64 " stored %" PRIu64 " raw %" PRIu64 " zstd  ",
				   schema->columns[c].name, ch->offset, ch->stored_len,
				   ch->raw_len);
			if (schema->columns[c].type == CX_T_LIST)
				printf("no statistics");
			else
				print_stats(&ch->stats, &schema->columns[c]);
			putchar('\n');
			rc = print_pages(r, g, c, err);
		}
	}
	cx_fragr_close(r);
	return rc == CX_OK ? 0 : fail(err);
}

/* Prints the rows of the scan's batch, every base-schema column. */
static void
print_batch(const cx_tablescan *scan, const uint32_t *rows, uint32_t nrows,
			uint32_t ncolumns, uint64_t *left)
{
	for (uint32_t i = 0; i < nrows && *left > 0; i++, (*left)--)
	{
		for (uint32_t c = 0; c < ncolumns; c++)
		{
			printf(c ? " | " : "");
			print_value(cx_tablescan_column(scan, c), rows[i]);
		}
		putchar('\n');
	}
}

static int
cmd_rows(cx_objstore *s, const char *version, const char *limit, cx_err *err)
{
	uint64_t	left = limit ? strtoull(limit, NULL, 10) : UINT64_MAX;
	uint64_t	pinned = (version && strcmp(version, "latest") != 0) ?
		strtoull(version, NULL, 10) : 0;
	cx_snapshot *snap;
	cx_tablescan *scan = NULL;
	const cx_schema *schema;
	cx_code		rc;

	if (cx_snapshot_open(s, pinned, &snap, err) != CX_OK)
		return fail(err);
	schema = cx_snapshot_base(snap) ? cx_snapshot_base(snap)->schema : NULL;
	if (schema == NULL)
	{
		printf("empty store (no rows committed)\n");
		cx_snapshot_close(snap);
		return 0;
	}
	for (uint32_t c = 0; c < schema->ncolumns; c++)
		printf("%s%s", c ? " | " : "", schema->columns[c].name);
	putchar('\n');
	rc = cx_tablescan_begin(snap, NULL, &scan, err);
	while (rc == CX_OK && left > 0)
	{
		const cx_rowgroup *g;
		const uint32_t *rows;
		uint32_t	nrows;

		rc = cx_tablescan_next(scan, &g, &rows, &nrows, err);
		if (rc != CX_OK || g == NULL)
			break;
		print_batch(scan, rows, nrows, schema->ncolumns, &left);
	}
	if (scan)
		cx_tablescan_end(scan);
	cx_snapshot_close(snap);
	return rc == CX_OK ? 0 : fail(err);
}

static int
cmd_shard(cx_objstore *s, const char *shard_id, const char *version, cx_err *err)
{
	cx_shard_manifest *m;
	cx_code		rc = version ?
		cx_shard_manifest_load(s, shard_id, strtoull(version, NULL, 10), &m, err) :
		cx_shard_manifest_load_latest(s, shard_id, 0, &m, err);

	if (rc != CX_OK)
		return fail(err);
	if (m == NULL)
	{
		printf("shard %s has no manifest\n", shard_id);
		return 0;
	}
	printf("shard        %s\nversion      %" PRIu64 "\nepoch        %" PRIu64
		   "\nwriter       %s\ncommitted at ",
		   m->shard_id, m->version, m->epoch, m->writer ? m->writer : "");
	print_utc_us(m->committed_at_us);
	printf("\nreplay seq   %" PRIu64 "\nnext gen     %" PRIu64
		   "\ngenerations  %" PRIu32 "\n",
		   m->replay_seq, m->next_gen, m->ngens);
	for (uint32_t i = 0; i < m->ngens; i++)
	{
		const cx_generation *g = &m->gens[i];

		printf("  gen %" PRIu64 "  ", g->gen);
		if (g->carrier != 0)
			printf("inline in version %" PRIu64, g->carrier);
		else
			fputs(g->fragment.path, stdout);
		printf("  %" PRIu64 " rows  %" PRIu64 " bytes  commit times ",
			   g->fragment.rows, g->fragment.size);
		print_utc_us(g->min_ts);
		printf(" .. ");
		print_utc_us(g->max_ts);
		putchar('\n');
	}
	if (m->carried != NULL)
		printf("carries      generation %" PRIu64 ", %" PRIu64 " bytes\n",
			   m->gens[m->ngens - 1].gen, m->carried_len);
	cx_shard_manifest_free(m);
	return 0;
}

/*
 * verify: every object listed is checked (manifests decode, fragments'
 * footers and chunks and key index segments' blocks pass their checksums,
 * so do the bytes a shard version carries, a segment's entries are in
 * order), and every object a version lists (a
 * base version's fragments and index segments, a shard version's
 * generations) must be among them.  Every version present counts as retained: GC removes only
 * objects no retained version lists (docs/design/memwal.md, "What GC
 * must respect").
 */
typedef struct listed_ref
{
	char	   *key;			/* the object a version lists */
	char	   *by;				/* "base version 3", for the report */
	/* fragments: where the entry says the footer is, and its checksum */
	bool		is_fragment;
	cx_fragment_info entry;		/* size and footer only; no path, stats */
} listed_ref;

typedef struct verify_ctx
{
	cx_objstore *store;
	char	  **keys;			/* every key listed, ascending */
	size_t		nkeys;
	listed_ref *refs;
	size_t		nrefs;
	bool		oom;
	uint64_t	objects;
	uint64_t	bad;
} verify_ctx;

static bool
grow(void **array, size_t n, size_t elem)
{
	void	   *bigger;

	if ((n & (n - 1)) != 0)		/* capacity doubles at powers of two */
		return true;
	bigger = realloc(*array, (n ? 2 * n : 1) * elem);
	if (bigger == NULL)
		return false;
	*array = bigger;
	return true;
}

static bool
collect_key(void *arg, const char *key, uint64_t size)
{
	verify_ctx *ctx = arg;
	char	   *copy;

	(void) size;
	if (!grow((void **) &ctx->keys, ctx->nkeys, sizeof(char *)) ||
		(copy = strdup(key)) == NULL)
	{
		ctx->oom = true;
		return false;
	}
	ctx->keys[ctx->nkeys++] = copy;
	return true;
}

static void verify_failed(verify_ctx *ctx, const cx_err *err);

static void
add_ref_of(verify_ctx *ctx, const char *key, const char *by,
		   const cx_fragment_info *fi)
{
	listed_ref r = {strdup(key), strdup(by), fi != NULL, {0}};

	if (fi != NULL)
	{
		r.entry.size = fi->size;
		r.entry.footer_offset = fi->footer_offset;
		r.entry.footer_len = fi->footer_len;
		r.entry.footer_crc = fi->footer_crc;
	}
	if (r.key == NULL || r.by == NULL ||
		!grow((void **) &ctx->refs, ctx->nrefs, sizeof(listed_ref)))
	{
		free(r.key);
		free(r.by);
		ctx->oom = true;
		return;
	}
	ctx->refs[ctx->nrefs++] = r;
}

static void
add_ref(verify_ctx *ctx, const char *key, const char *by)
{
	add_ref_of(ctx, key, by, NULL);
}

static void
add_fragment_ref(verify_ctx *ctx, const cx_fragment_info *fi, const char *by)
{
	add_ref_of(ctx, fi->path, by, fi);
}

static void
add_base_refs(verify_ctx *ctx, const cx_manifest *m)
{
	char		by[64];
	cx_keyindex ix;
	cx_err		err;

	snprintf(by, sizeof(by), "base version %" PRIu64, m->version);
	for (uint32_t i = 0; i < m->nfragments; i++)
		add_fragment_ref(ctx, &m->fragments[i], by);
	if (cx_keyindex_load(m, &ix, &err) != CX_OK)
	{
		verify_failed(ctx, &err);
		return;
	}
	for (uint32_t i = 0; i < ix.n; i++)
		add_ref(ctx, ix.segs[i].path, by);
	cx_keyindex_free(&ix);
}

static void
add_shard_refs(verify_ctx *ctx, const cx_shard_manifest *m)
{
	char		by[CX_SHARD_ID_MAX + 96];

	for (uint32_t i = 0; i < m->ngens; i++)
	{
		const cx_generation *g = &m->gens[i];
		char		carrier[CX_KEY_MAX + 1];

		snprintf(by, sizeof(by), "shard %s version %" PRIu64 " (generation %" PRIu64 ")",
				 m->shard_id, m->version, g->gen);
		/* An inline generation's bytes are in the version carrying it. */
		if (g->carrier == 0)
			add_fragment_ref(ctx, &g->fragment, by);
		else
		{
			cx_shard_manifest_key(m->shard_id, g->carrier, carrier,
								  sizeof(carrier));
			add_ref(ctx, carrier, by);
		}
	}
}

static void
verify_failed(verify_ctx *ctx, const cx_err *err)
{
	ctx->bad++;
	printf("BAD  %s (%s)\n", err->msg, cx_code_name(err->code));
}

/* A manifest entry of key (the first; every version lists the same
 * object the same way), or NULL when no version lists it. */
static const cx_fragment_info *
entry_of(const verify_ctx *ctx, const char *key, cx_fragment_info *fi)
{
	for (size_t i = 0; i < ctx->nrefs; i++)
		if (ctx->refs[i].is_fragment && strcmp(ctx->refs[i].key, key) == 0)
		{
			*fi = ctx->refs[i].entry;
			fi->path = (char *) key;
			return fi;
		}
	return NULL;
}

/* Every page's CRC and the offset indexes of group g. */
static cx_code
verify_pages(cx_fragr *r, uint32_t g, cx_err *err)
{
	for (uint32_t c = 0; c < cx_fragr_schema(r)->ncolumns; c++)
	{
		cx_page_info *pages;
		uint32_t	n;
		cx_code		rc = cx_fragr_chunk_pages(r, g, c, &pages, &n, err);

		for (uint32_t k = 0; rc == CX_OK && k < n; k++)
			if (!pages[k].crc_ok)
				rc = cx_err_set(err, CX_ERR_CORRUPT,
								"corrupt fragment %s: row group %u, column %u, page %u: checksum mismatch",
								cx_fragr_key(r), g, c, k);
		free(pages);
		if (rc != CX_OK)
			return rc;
	}
	return CX_OK;
}

/* Opens fragment key of from, from its manifest entry fi when a version
 * lists it (NULL: none does), so that its footer checksum is checked, then
 * reads and decodes every row group and checks every page. */
static cx_code
check_fragment(cx_objstore *from, const char *key, const cx_fragment_info *fi,
			   cx_err *err)
{
	cx_fragr   *r;
	cx_code		rc;

	rc = fi != NULL ?
		cx_fragr_open_entry(from, fi, &r, err) :
		cx_fragr_open(from, key, 0, &r, err);
	if (rc != CX_OK)
		return rc;
	for (uint32_t g = 0; rc == CX_OK && g < cx_fragr_num_groups(r); g++)
	{
		cx_rowgroup *rg;

		rc = verify_pages(r, g, err);
		if (rc == CX_OK)
			rc = cx_fragr_read_group(r, g, NULL, &rg, err);
		if (rc == CX_OK)
			cx_rowgroup_free(rg);
	}
	cx_fragr_close(r);
	return rc;
}

static void
verify_fragment(verify_ctx *ctx, const char *key)
{
	cx_fragment_info fi;
	cx_err		err;

	if (check_fragment(ctx->store, key, entry_of(ctx, key, &fi), &err) != CX_OK)
		verify_failed(ctx, &err);
}

/* The bytes a shard version carries are a fragment: checked as one,
 * beyond the version's own CRC (readers of them check only theirs). */
static void
verify_carried(verify_ctx *ctx, const cx_shard_manifest *m)
{
	const cx_generation *g;
	cx_objstore *from;
	cx_err		err;
	cx_code		rc;

	if (m->carried == NULL)
		return;
	g = &m->gens[m->ngens - 1];
	rc = cx_generation_open(ctx->store, m, g, &from, &err);
	if (rc == CX_OK)
	{
		rc = check_fragment(from, g->fragment.path, &g->fragment, &err);
		cx_generation_done(ctx->store, from);
	}
	if (rc != CX_OK)
	{
		cx_shard_generation_failed(m, g, &err);
		verify_failed(ctx, &err);
	}
}

static void
verify_index_segment(verify_ctx *ctx, const char *key)
{
	cx_err		err;
	uint64_t	entries;

	if (cx_keyseg_check(ctx->store, key, &entries, &err) != CX_OK)
		verify_failed(ctx, &err);
}

typedef enum small_object
{
	BASE_MANIFEST,
	SHARD_MANIFEST,
	WAL_ENTRY,
	GC_RECORD
} small_object;

/* Decodes a small object, which checks its frame checksum and structure,
 * and notes what a manifest lists. */
static cx_code
decode_small_object(verify_ctx *ctx, const cx_buf *b, const char *key,
					small_object kind, cx_err *err)
{
	cx_manifest *m;
	cx_shard_manifest *sm;
	cx_wal_entry e;
	cx_gc_record r;

	switch (kind)
	{
		case BASE_MANIFEST:
			if (cx_manifest_decode(b->data, b->len, key, &m, err) != CX_OK)
				return err->code;
			add_base_refs(ctx, m);
			cx_manifest_free(m);
			break;
		case SHARD_MANIFEST:
			if (cx_shard_manifest_decode(b->data, b->len, key, &sm, err) != CX_OK)
				return err->code;
			add_shard_refs(ctx, sm);
			verify_carried(ctx, sm);
			cx_shard_manifest_free(sm);
			break;
		case WAL_ENTRY:
			if (cx_wal_decode(b->data, b->len, key, &e, err) != CX_OK)
				return err->code;
			cx_wal_entry_clear(&e);
			break;
		case GC_RECORD:
			if (cx_gc_record_decode(b->data, b->len, key, &r, err) != CX_OK)
				return err->code;
			cx_gc_record_free(&r);
			break;
	}
	return CX_OK;
}

static void
verify_small_object(verify_ctx *ctx, const char *key, small_object kind)
{
	cx_err		err;
	cx_buf		b;

	cx_buf_init(&b);
	if (cx_obj_get(ctx->store, key, &b, &err) != CX_OK ||
		decode_small_object(ctx, &b, key, kind, &err) != CX_OK)
		verify_failed(ctx, &err);
	cx_buf_free(&b);
}

/* Hints are not verified: a damaged one is harmless (readers fall back to
 * a listing); the access check and the compaction lease hold no checksum. */
static void
verify_object(verify_ctx *ctx, const char *key)
{
	cx_object_name name;

	switch (cx_object_parse(key, &name))
	{
		case CX_OBJECT_FRAGMENT:
			verify_fragment(ctx, key);
			break;
		case CX_OBJECT_INDEX_SEGMENT:
			verify_index_segment(ctx, key);
			break;
		case CX_OBJECT_BASE_VERSION:
			verify_small_object(ctx, key, BASE_MANIFEST);
			break;
		case CX_OBJECT_SHARD_VERSION:
			verify_small_object(ctx, key, SHARD_MANIFEST);
			break;
		case CX_OBJECT_WAL_ENTRY:
			verify_small_object(ctx, key, WAL_ENTRY);
			break;
		case CX_OBJECT_GC_RECORD:
			verify_small_object(ctx, key, GC_RECORD);
			break;
		case CX_OBJECT_BASE_HINT:
		case CX_OBJECT_SHARD_HINT:
		case CX_OBJECT_ACCESS_CHECK:
		case CX_OBJECT_COMPACTION_LEASE:
		case CX_OBJECT_DIRTY_MARKER:
		case CX_OBJECT_NONE:
			return;
	}
	ctx->objects++;
}

static int
compare_key(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static int
compare_ref(const void *a, const void *b)
{
	return strcmp(((const listed_ref *) a)->key, ((const listed_ref *) b)->key);
}

static bool
is_listed(const verify_ctx *ctx, const char *key)
{
	return bsearch(&key, ctx->keys, ctx->nkeys, sizeof(char *), compare_key) != NULL;
}

/* Reports each listed object that is missing once, with who lists it. */
static void
verify_refs(verify_ctx *ctx)
{
	qsort(ctx->refs, ctx->nrefs, sizeof(listed_ref), compare_ref);
	for (size_t i = 0, next; i < ctx->nrefs; i = next)
	{
		next = i + 1;
		while (next < ctx->nrefs &&
			   strcmp(ctx->refs[next].key, ctx->refs[i].key) == 0)
			next++;
		if (is_listed(ctx, ctx->refs[i].key))
			continue;
		ctx->bad++;
		printf("BAD  %s is missing; %s lists it", ctx->refs[i].key,
			   ctx->refs[i].by);
		if (next - i > 1)
			printf(" (and %zu more versions)", next - i - 1);
		printf(" (not_found)\n");
	}
}

/* A base version or an object of a shard: a store's mark. */
static bool
marks_a_store(const char *key)
{
	cx_object_name name;
	cx_object_kind kind = cx_object_parse(key, &name);

	return kind == CX_OBJECT_BASE_VERSION || kind == CX_OBJECT_SHARD_VERSION ||
		kind == CX_OBJECT_SHARD_HINT || kind == CX_OBJECT_WAL_ENTRY;
}

static bool
holds_a_store(const verify_ctx *ctx)
{
	for (size_t i = 0; i < ctx->nkeys; i++)
		if (marks_a_store(ctx->keys[i]))
			return true;
	return false;
}

static void
verify_ctx_free(verify_ctx *ctx)
{
	for (size_t i = 0; i < ctx->nkeys; i++)
		free(ctx->keys[i]);
	for (size_t i = 0; i < ctx->nrefs; i++)
	{
		free(ctx->refs[i].key);
		free(ctx->refs[i].by);
	}
	free(ctx->keys);
	free(ctx->refs);
}

static int
cmd_verify(cx_objstore *s, cx_err *err)
{
	verify_ctx	ctx = {.store = s};
	int			rc;

	if (cx_obj_list(s, "", collect_key, &ctx, err) != CX_OK)
		rc = fail(err);
	else if (!ctx.oom && !holds_a_store(&ctx))
	{
		fprintf(stderr, "ctxstore-inspect: no store at URI %s\n", s->uri);
		rc = 1;
	}
	else
	{
		for (size_t i = 0; i < ctx.nkeys; i++)
			verify_object(&ctx, ctx.keys[i]);
		verify_refs(&ctx);
		printf("%" PRIu64 " objects checked, %" PRIu64 " bad\n", ctx.objects, ctx.bad);
		rc = ctx.bad ? 3 : 0;
	}
	if (ctx.oom)
	{
		fprintf(stderr, "ctxstore-inspect: out of memory\n");
		rc = 1;
	}
	verify_ctx_free(&ctx);
	return rc;
}

/*
 * repair: the fragments of the newest base version that are missing or
 * fail their footer checksum (cx_fragr_open_entry checks both), and, with
 * --apply, a base version without them.  Their rows are lost from the new
 * version (older versions still list them: restoring the objects is the
 * better fix when a copy exists).  The commit is refused if another version
 * was committed after the one checked: run repair again.
 */
typedef struct repair_ctx
{
	uint64_t	checked_version;
	char	  **broken;			/* paths, malloc'd */
	uint32_t	nbroken;
	uint64_t	rows_lost;		/* live rows of the broken fragments */
} repair_ctx;

/* Whether fragment fi is missing or damaged (*broken); any other failure
 * (the store unreachable) is returned. */
static cx_code
fragment_broken(cx_objstore *s, const cx_fragment_info *fi, bool *broken,
				cx_err *err)
{
	cx_fragr   *r;
	cx_code		rc = cx_fragr_open_entry(s, fi, &r, err);

	if (rc == CX_OK)
		cx_fragr_close(r);
	*broken = rc == CX_ERR_NOT_FOUND || rc == CX_ERR_CORRUPT;
	return *broken ? CX_OK : rc;
}

/* The live rows of one broken fragment whose keys the key index knows. */
typedef struct lost_keys
{
	const cx_deletion_vector *dv;	/* the fragment's */
	uint32_t	pos;			/* its position in the segment's list */
	uint64_t	printed;
} lost_keys;

static bool
row_deleted(const cx_deletion_vector *dv, uint32_t row)
{
	uint32_t	lo = 0;
	uint32_t	hi = dv->n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (dv->rows[mid] == row)
			return true;
		if (dv->rows[mid] < row)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static cx_code
print_lost_key(void *arg, uint32_t value, const cx_keyentry *e, cx_err *err)
{
	lost_keys  *lk = arg;

	(void) value;
	(void) err;
	if (e->fragment != lk->pos || e->tombstone || row_deleted(lk->dv, e->row))
		return CX_OK;
	printf("  lost key ");
	print_bytes_quoted(e->value, e->len);
	putchar('\n');
	lk->printed++;
	return CX_OK;
}

/*
 * Prints the keys of fragment f's live rows from the key index, the one
 * record of them that outlives the fragment: the key column's segments
 * that cover it.  Fragments no segment covers (not indexed yet) are said
 * so; a store without a key has no keys to print.
 */
static cx_code
print_lost_keys(cx_objstore *s, const cx_manifest *m, uint32_t f, cx_err *err)
{
	cx_keyindex ix;
	uint32_t	key_col;
	bool		covered = false;
	cx_code		rc;

	if (m->key_column == NULL)
		return CX_OK;
	if ((rc = cx_key_column(m->schema, m->key_column, &key_col, err)) != CX_OK ||
		(rc = cx_keyindex_load(m, &ix, err)) != CX_OK)
		return rc;
	for (uint32_t i = 0; rc == CX_OK && i < ix.n; i++)
	{
		const cx_keyseg_ref *seg = &ix.segs[i];

		if (seg->column != key_col)
			continue;
		for (uint32_t p = 0; rc == CX_OK && p < seg->nfragments; p++)
		{
			lost_keys	lk = {&m->dvs[f], p, 0};

			if (strcmp(seg->fragments[p], m->fragments[f].path) != 0)
				continue;
			covered = true;
			rc = cx_keyseg_walk(s, seg, print_lost_key, &lk, err);
		}
	}
	cx_keyindex_free(&ix);
	if (rc == CX_OK && !covered)
		printf("  its keys are unknown: no key-index segment covers it\n");
	return rc;
}

/* Notes and prints every broken fragment of m, with the keys it loses. */
static cx_code
find_broken(cx_objstore *s, const cx_manifest *m, repair_ctx *ctx,
			cx_err *err)
{
	ctx->broken = calloc(m->nfragments + 1, sizeof(char *));
	if (ctx->broken == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	for (uint32_t f = 0; f < m->nfragments; f++)
	{
		cx_fragment_summary sum;
		bool		broken;

		if (fragment_broken(s, &m->fragments[f], &broken, err) != CX_OK)
			return err->code;
		if (!broken)
			continue;
		cx_manifest_fragment_summary(m, f, &sum);
		printf("fragment %s: %s; %" PRIu64 " live rows\n",
			   m->fragments[f].path, err->msg, sum.rows - sum.deleted);
		ctx->rows_lost += sum.rows - sum.deleted;
		if (print_lost_keys(s, m, f, err) != CX_OK)
			return err->code;
		ctx->broken[ctx->nbroken] = strdup(m->fragments[f].path);
		if (ctx->broken[ctx->nbroken++] == NULL)
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory");
	}
	return CX_OK;
}

static cx_code
repair_rebase(void *arg, const cx_manifest *base, cx_manifest *next,
			  cx_err *err)
{
	repair_ctx *ctx = arg;

	if (base == NULL || base->version != ctx->checked_version)
		return cx_err_set(err, CX_ERR_CONFLICT,
						  "base version %" PRIu64 " was committed after the one checked; run repair again",
						  base != NULL ? base->version : 0);
	for (uint32_t i = 0; i < ctx->nbroken; i++)
	{
		int64_t		f = cx_manifest_find_fragment(next, ctx->broken[i]);

		if (f >= 0)
			cx_manifest_remove_fragment(next, (uint32_t) f);
	}
	return CX_OK;
}

static int
repair_report(cx_objstore *s, repair_ctx *ctx, uint32_t nfragments,
			  bool apply, cx_err *err)
{
	uint64_t	version;

	if (ctx->nbroken == 0)
	{
		printf("base version %" PRIu64 ": %u fragments, none missing or damaged\n",
			   ctx->checked_version, nfragments);
		return 0;
	}
	if (!apply)
	{
		printf("base version %" PRIu64 ": %u of %u fragments missing or damaged, %" PRIu64 " rows lost; nothing changed (--apply commits a version without them)\n",
			   ctx->checked_version, ctx->nbroken, nfragments, ctx->rows_lost);
		return 3;
	}
	if (cx_commit(s, "repair", repair_rebase, ctx, NULL, &version, err) != CX_OK)
		return fail(err);
	printf("committed base version %" PRIu64 " without %u fragments: %" PRIu64 " rows lost\n",
		   version, ctx->nbroken, ctx->rows_lost);
	return 0;
}

static int
cmd_repair(cx_objstore *s, bool apply, cx_err *err)
{
	repair_ctx	ctx = {0};
	cx_manifest *m;
	int			rc;

	if (cx_manifest_load_latest(s, &m, err) != CX_OK)
		return fail(err);
	if (m == NULL)
	{
		printf("empty store: nothing to repair\n");
		return 0;
	}
	ctx.checked_version = m->version;
	rc = find_broken(s, m, &ctx, err) != CX_OK ? fail(err) :
		repair_report(s, &ctx, m->nfragments, apply, err);
	for (uint32_t i = 0; i < ctx.nbroken; i++)
		free(ctx.broken[i]);
	free(ctx.broken);
	cx_manifest_free(m);
	return rc;
}

int
main(int argc, char **argv)
{
	cx_objstore *s;
	cx_err		err;
	const char *cmd;
	int			rc;

	if (argc < 3)
		return usage();
	/* "repair URI" as well as "URI repair": a URI is the argument with a
	 * scheme. */
	if (strstr(argv[1], "://") == NULL && strstr(argv[2], "://") != NULL)
	{
		char	   *first = argv[1];

		argv[1] = argv[2];
		argv[2] = first;
	}
	cmd = argv[2];
	if (cx_objstore_open(argv[1], NULL, 0, &s, &err) != CX_OK)
		return fail(&err);
	if (strcmp(cmd, "versions") == 0 && argc == 3)
		rc = cmd_versions(s, &err);
	else if (strcmp(cmd, "manifest") == 0 && argc <= 4)
		rc = cmd_manifest(s, argc == 4 ? argv[3] : NULL, &err);
	else if (strcmp(cmd, "fragment") == 0 && argc == 4)
		rc = cmd_fragment(s, argv[3], &err);
	else if (strcmp(cmd, "shard") == 0 && (argc == 4 || argc == 5))
		rc = cmd_shard(s, argv[3], argc == 5 ? argv[4] : NULL, &err);
	else if (strcmp(cmd, "rows") == 0 && argc <= 5)
		rc = cmd_rows(s, argc >= 4 ? argv[3] : NULL, argc == 5 ? argv[4] : NULL, &err);
	else if (strcmp(cmd, "verify") == 0 && argc == 3)
		rc = cmd_verify(s, &err);
	else if (strcmp(cmd, "repair") == 0 &&
			 (argc == 3 || (argc == 4 && strcmp(argv[3], "--apply") == 0)))
		rc = cmd_repair(s, argc == 4, &err);
	else
		rc = usage();
	cx_obj_close(s);
	return rc;
}
