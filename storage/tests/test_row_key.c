/*
 * test_row_key.c — a value's key bytes are the same whether taken from a
 * cx_datum (what probes and the write path hold) or from the stored column
 * (what scans and merges read): cx_datum_key_bytes against cx_key_bytes.
 */
#include <string.h>

#include "format/cx_fragment.h"
#include "table/cx_row_key.h"
#include "cx_test.h"

static const cx_type key_types[] = {
	CX_T_BOOL, CX_T_INT16, CX_T_INT32, CX_T_INT64, CX_T_DATE,
	CX_T_TIMESTAMPTZ, CX_T_UUID, CX_T_STRING, CX_T_BINARY
};
#define NTYPES (sizeof(key_types) / sizeof(key_types[0]))
#define NROWS 3

static void
make_value(cx_type type, int row, cx_datum *d, char *text)
{
	memset(d, 0, sizeof(*d));
	d->isnull = row == 2;		/* the last row is all NULL */
	switch (type)
	{
		case CX_T_BOOL:
			d->v.b = row == 1;
			break;
		case CX_T_INT16:
			d->v.i16 = (int16_t) (-300 + row);
			break;
		case CX_T_INT32:
		case CX_T_DATE:
			d->v.i32 = -70000 * (row + 1);
			break;
		case CX_T_INT64:
		case CX_T_TIMESTAMPTZ:
			d->v.i64 = (int64_t) 1 << (40 + row);
			break;
		case CX_T_UUID:
			for (int i = 0; i < 16; i++)
				d->v.uuid[i] = (uint8_t) (i * 17 + row);
			break;
		default:
			snprintf(text, 32, "key-%d", row);
			d->v.bytes.ptr = (const uint8_t *) text;
			d->v.bytes.len = strlen(text);
			break;
	}
}

CX_TEST(row_key_bytes_of_a_datum_match_the_stored_column)
{
	cx_objstore *s = NULL;
	cx_schema  *schema = cx_schema_new();
	cx_datum	vals[NROWS][NTYPES];
	char		text[NROWS][NTYPES][32];
	cx_fragw   *w;
	cx_fragr   *r;
	cx_rowgroup *g;
	cx_fragment_info info;
	cx_err		err;

	REQUIRE_OK(cx_objstore_open(cx_test_uri("/rowkey"), NULL, 0, &s, &err), &err);
	for (size_t c = 0; c < NTYPES; c++)
	{
		char		name[16];

		snprintf(name, sizeof(name), "c%zu", c);
		REQUIRE_OK(cx_schema_add(schema, name, key_types[c], 0, NULL, &err), &err);
	}
	REQUIRE_OK(cx_fragw_open(s, "data/rowkey.parquet", schema, NULL, &w, &err), &err);
	for (int row = 0; row < NROWS; row++)
	{
		for (size_t c = 0; c < NTYPES; c++)
			make_value(key_types[c], row, &vals[row][c], text[row][c]);
		REQUIRE_OK(cx_fragw_append(w, vals[row], &err), &err);
	}
	REQUIRE_OK(cx_fragw_finish(w, &info, &err), &err);
	REQUIRE_OK(cx_fragr_open(s, "data/rowkey.parquet", info.size, &r, &err), &err);
	REQUIRE_OK(cx_fragr_read_group(r, 0, NULL, &g, &err), &err);
	for (int row = 0; row < NROWS; row++)
		for (size_t c = 0; c < NTYPES; c++)
		{
			uint8_t		fixed[CX_KEY_FIXED_MAX];
			const uint8_t *stored,
					   *given;
			size_t		stored_len,
						given_len;
			bool		has_stored = cx_key_bytes(cx_rowgroup_column(g, (uint32_t) c),
												  (uint32_t) row, &stored, &stored_len);
			bool		has_given = cx_datum_key_bytes(key_types[c], &vals[row][c],
													   fixed, &given, &given_len);

			CHECK(has_stored == has_given);
			if (has_stored && has_given)
				CHECK(stored_len == given_len &&
					  memcmp(stored, given, given_len) == 0);
		}
	cx_rowgroup_free(g);
	cx_fragr_close(r);
	cx_fragment_info_free(&info);
	cx_schema_free(schema);
	cx_obj_close(s);
}
