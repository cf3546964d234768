/*
 * cx_fragment_summary.c — what a manifest says about one of its fragments,
 * for the SQL function ctxstore.fragments() (ctxstore/table.h).
 */
#include <string.h>

#include "table/cx_fragment_entry.h"
#include "table/cx_manifest.h"
#include "format/cx_row_codec.h"

void
cx_manifest_fragment_summary(const cx_manifest *m, uint32_t f,
							 cx_fragment_summary *out)
{
	const cx_fragment_info *fi = &m->fragments[f];

	out->rows = fi->rows;
	out->deleted = cx_manifest_deleted_count(m, f);
	out->origin_shard = fi->origin_shard;
}

/* A bound's bytes as a value; NULL when there is none or they do not read
 * as one. */
static void
bound_value(cx_type type, bool has, const uint8_t *p, uint8_t len,
			cx_datum *d)
{
	cx_err		err;

	if (!has || cx_value_from_bytes(type, p, len, d, &err) != CX_OK)
		d->isnull = true;
}

void
cx_manifest_fragment_bounds(const cx_manifest *m, uint32_t f, uint32_t column,
							cx_datum *min, cx_datum *max)
{
	const cx_colstats *st = cx_fragment_stats(&m->fragments[f], m->schema,
											  column);
	cx_type		type = (cx_type) m->schema->columns[column].type;

	memset(min, 0, sizeof(*min));
	memset(max, 0, sizeof(*max));
	bound_value(type, st != NULL && st->has_min, st ? st->min : NULL,
				st ? st->min_len : 0, min);
	bound_value(type, st != NULL && st->has_max, st ? st->max : NULL,
				st ? st->max_len : 0, max);
}
