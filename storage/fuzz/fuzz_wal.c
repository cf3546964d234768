/*
 * fuzz_wal.c — libFuzzer harness for the WAL entry decoder (cx_wal_decode)
 * and the rows a rows entry carries (cx_rows_check, then each row decoded
 * and re-encoded by fuzz_rows).  An entry that decodes must survive a round
 * trip (fuzz_round_trip).
 *
 * The fuzz build does not check frame checksums (FUZZING_BUILD_MODE_UNSAFE_
 * FOR_PRODUCTION), so mutated bodies reach the decoder.
 */
#include <stdlib.h>

#include "memwal/cx_wal.h"
#include "format/cx_row_codec.h"
#include "support.h"

static void *
decode(const uint8_t *data, size_t size)
{
	cx_wal_entry *e = malloc(sizeof(*e));
	cx_err		err;

	if (e != NULL && cx_wal_decode(data, size, "fuzz", e, &err) != CX_OK)
	{
		free(e);
		e = NULL;
	}
	return e;
}

static cx_code
encode(const void *e, cx_buf *out, cx_err *err)
{
	return cx_wal_encode(e, out, err);
}

static void
free_entry(void *e)
{
	if (e != NULL)
		cx_wal_entry_clear(e);
	free(e);
}

static const fuzz_codec codec = {decode, encode, free_entry};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cx_wal_entry *e = fuzz_round_trip(&codec, data, size);
	cx_err		err;

	if (e != NULL && e->kind == CX_WAL_ROWS)
	{
		(void) cx_rows_check(e->schema, e->rows, e->rows_len, e->nrows, &err);
		fuzz_rows(e->schema, e->rows, e->rows_len);
	}
	free_entry(e);
	return 0;
}
