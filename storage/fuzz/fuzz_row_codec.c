/*
 * fuzz_row_codec.c — libFuzzer harness for the row codec (cx_row_decode,
 * cx_rows_check, cx_value_from_bytes).  The input's first byte gives the
 * number of columns (1 to 8), the next ones their types (a list takes a
 * second byte for its element type); the rest is rows of that schema.
 * Every row that decodes must re-encode to the bytes it came from.
 */
#include <stdio.h>

#include "format/cx_row_codec.h"
#include "support.h"

#define MAX_COLUMNS 8

/* A type from a byte: every cx_type, a list's element never a list. */
static cx_type
type_of(uint8_t b, bool element)
{
	int			n = element ? CX_T_LIST - 1 : CX_T_LIST;

	return (cx_type) (1 + b % n);
}

/* The schema the input's head describes; *used: bytes it took. */
static cx_schema *
schema_of(const uint8_t *data, size_t size, size_t *used)
{
	cx_schema  *s;
	size_t		pos = 1;
	cx_err		err;

	if (size == 0 || (s = cx_schema_new()) == NULL)
		return NULL;
	for (int c = 0; c < 1 + data[0] % MAX_COLUMNS && pos < size; c++)
	{
		cx_type		t = type_of(data[pos++], false);
		cx_type		elem = 0;
		char		name[16];

		if (t == CX_T_LIST)
			elem = pos < size ? type_of(data[pos++], true) : CX_T_INT32;
		snprintf(name, sizeof(name), "c%d", c);
		if (cx_schema_add(s, name, t, elem,
						  t == CX_T_EXTERNAL || elem == CX_T_EXTERNAL ? "point" : NULL,
						  &err) != CX_OK)
		{
			cx_schema_free(s);
			return NULL;
		}
	}
	*used = pos;
	return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t		used = 0;
	cx_schema  *s = schema_of(data, size, &used);
	cx_datum	d;
	cx_err		err;

	if (s == NULL)
		return 0;
	fuzz_rows(s, data + used, size - used);
	(void) cx_rows_check(s, data + used, size - used, 1, &err);
	for (uint32_t c = 0; c < s->ncolumns; c++)
		(void) cx_value_from_bytes(s->columns[c].type, data + used,
								   size - used, &d, &err);
	cx_schema_free(s);
	return 0;
}
