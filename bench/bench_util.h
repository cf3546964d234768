/*
 * bench_util.h — what the C benchmarks share (each is one program, built
 * against storage/ by its script): failing loudly, opening a store, and
 * the rows an agent turn writes.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/cx_objstore.h"
#include "format/cx_row_codec.h"
#include "format/cx_schema.h"

/* The program's name, for messages. */
extern const char *bench_name;

static void
die(const char *what, const cx_err *err)
{
	fprintf(stderr, "%s: %s: %s\n", bench_name, what, err ? err->msg : "");
	exit(1);
}

static cx_objstore *
open_store(const char *uri, const cx_option *opts, int nopts)
{
	cx_objstore *s;
	cx_err		err;

	if (cx_objstore_open(uri, opts, (size_t) nopts, &s, &err) != CX_OK)
		die("opening the store", &err);
	return s;
}

/* The rows: (id, session_id, n). */
static cx_schema *
bench_schema(void)
{
	cx_schema  *s = cx_schema_new();
	cx_err		err;

	if (s == NULL ||
		cx_schema_add(s, "id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		cx_schema_add(s, "session_id", CX_T_STRING, 0, NULL, &err) != CX_OK ||
		cx_schema_add(s, "n", CX_T_INT64, 0, NULL, &err) != CX_OK)
		die("schema", NULL);
	return s;
}

/* Appends the row ("<prefix>-<i>", "session-1", i) to out. */
static void
bench_row(const cx_schema *schema, const char *prefix, int i, cx_buf *out)
{
	char		id[64];
	cx_datum	v[3];

	snprintf(id, sizeof(id), "%s-%d", prefix, i);
	memset(v, 0, sizeof(v));
	v[0].v.bytes.ptr = (const uint8_t *) id;
	v[0].v.bytes.len = strlen(id);
	v[1].v.bytes.ptr = (const uint8_t *) "session-1";
	v[1].v.bytes.len = strlen("session-1");
	v[2].v.i64 = i;
	cx_row_encode(schema, CX_ROW_PUT, v, out);
	if (!cx_buf_ok(out))
		die("encoding a row", NULL);
}

#endif							/* BENCH_UTIL_H */
