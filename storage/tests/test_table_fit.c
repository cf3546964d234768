/*
 * test_table_fit.c — the rule for whether a table fits a store
 * (cx_table_fits), each misfit in its order.
 */
#include <stdlib.h>

#include "cx_test.h"
#include "table/cx_manifest.h"

/* A store with columns id int64, body string and key id (unique). */
static cx_manifest *
keyed_store(void)
{
	cx_manifest *m = cx_manifest_new();
	cx_schema  *s = cx_schema_new();
	cx_err		err;

	if (m == NULL || s == NULL ||
		cx_schema_add(s, "id", CX_T_INT64, 0, NULL, &err) != CX_OK ||
		cx_schema_add(s, "body", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		cx_manifest_set_schema(m, s, &err) != CX_OK ||
		cx_manifest_set_key(m, "id", true, &err) != CX_OK)
		abort();
	cx_schema_free(s);
	return m;
}

static cx_misfit_kind
fit(const cx_manifest *m, const cx_column *cols, uint32_t n, const char *key,
	bool unique, int *column)
{
	cx_table_decl t = {cols, n, key, unique};
	cx_misfit	why;
	bool		fits = cx_table_fits(m, &t, &why);

	CHECK(fits == (why.kind == CX_FITS));
	*column = why.column;
	return why.kind;
}

CX_TEST(table_fit_checks_key_then_columns)
{
	cx_manifest *m = keyed_store();
	cx_column	cols[] = {{.name = "id", .type = CX_T_INT64, .field_id = 1},
	{.name = NULL}, {.name = "body", .type = CX_T_STRING, .field_id = 2}};
	int			col;

	CHECK(fit(m, cols, 3, "id", true, &col) == CX_FITS);
	CHECK(fit(m, cols, 3, "nope", true, &col) == CX_MISFIT_KEY_COLUMN);
	CHECK(fit(m, cols, 3, "body", true, &col) == CX_MISFIT_KEY);
	CHECK(fit(m, cols, 3, "id", false, &col) == CX_MISFIT_KEY);
	cols[2].type = CX_T_BINARY;
	CHECK(fit(m, cols, 3, "id", true, &col) == CX_MISFIT_COLUMN_TYPE && col == 2);
	cols[2].name = "extra";
	CHECK(fit(m, cols, 3, "id", true, &col) == CX_MISFIT_COLUMN && col == 2);
	/* Without a key, only the columns are checked. */
	CHECK(fit(m, cols, 1, NULL, false, &col) == CX_FITS);
	cx_manifest_free(m);
}

CX_TEST(table_fit_of_a_store_without_schema_uses_the_table_columns)
{
	cx_column	cols[] = {{.name = "id", .type = CX_T_INT64, .field_id = 1}};
	int			col;
	cx_err		err;
	cx_table_decl t = {cols, 1, "id", true};

	CHECK(fit(NULL, cols, 1, "id", true, &col) == CX_FITS);
	CHECK(fit(NULL, cols, 1, "sid", true, &col) == CX_MISFIT_KEY_COLUMN);
	CHECK(fit(NULL, NULL, 0, "sid", true, &col) == CX_FITS);
	t.key_column = "sid";
	CHECK_CODE(cx_table_check_fit(NULL, &t, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, "\"sid\" is not a column") != NULL);
}

CX_TEST(manifest_set_key_refuses_another_key)
{
	cx_manifest *m = keyed_store();
	cx_err		err;

	CHECK_CODE(cx_manifest_set_key(m, "id", true, &err), CX_OK);
	CHECK_CODE(cx_manifest_set_key(m, "body", true, &err), CX_ERR_SCHEMA);
	CHECK(strstr(err.msg, "the key cannot change") != NULL);
	CHECK_CODE(cx_manifest_set_key(m, "id", false, &err), CX_ERR_SCHEMA);
	cx_manifest_free(m);
}
