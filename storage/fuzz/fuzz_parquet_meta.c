/*
 * fuzz_parquet_meta.c — libFuzzer harness for the Parquet metadata
 * decoders (make -C storage fuzz).
 *
 * Every input goes to each decoder.  Beyond not crashing (ASan and UBSan
 * watch the reads, LeakSanitizer the partly decoded results), a structure
 * that decodes must survive a round trip: its encoding decodes again and
 * re-encodes to the same bytes, so the encoder writes only what the decoder
 * accepts and the decoder keeps everything the encoder writes.
 */
#include <stdlib.h>
#include <string.h>

#include "format/cx_parquet_meta.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The decoders with one signature. */
static cx_code
dec_file_meta(const uint8_t *p, size_t n, cx_pq_file_meta *out, cx_err *err)
{
	return cx_pq_file_meta_decode(p, n, out, "fuzz", err);
}

static cx_code
dec_page_header(const uint8_t *p, size_t n, cx_pq_page_header *out,
				cx_err *err)
{
	size_t		used = 0;
	cx_code		rc = cx_pq_page_header_decode(p, n, out, &used, "fuzz", err);

	if (rc == CX_OK && (used == 0 || used > n))
		abort();
	return rc;
}

static cx_code
dec_offset_index(const uint8_t *p, size_t n, cx_pq_offset_index *out,
				 cx_err *err)
{
	return cx_pq_offset_index_decode(p, n, out, "fuzz", err);
}

static cx_code
dec_column_index(const uint8_t *p, size_t n, cx_pq_column_index *out,
				 cx_err *err)
{
	return cx_pq_column_index_decode(p, n, out, "fuzz", err);
}

/* Decodes data; if that works, aborts (a finding) unless the encoding
 * decodes and re-encodes to itself. */
#define FUZZ_ONE(fn, type, decode, encode, free_fn) \
static void \
fn(const uint8_t *data, size_t size) \
{ \
	type		a; \
	type		b; \
	cx_buf		first; \
	cx_buf		again; \
	cx_err		err; \
	\
	if (decode(data, size, &a, &err) == CX_OK) \
	{ \
		cx_buf_init(&first); \
		cx_buf_init(&again); \
		encode(&a, &first); \
		if (decode(first.data, first.len, &b, &err) != CX_OK) \
			abort(); \
		encode(&b, &again); \
		if (again.len != first.len || memcmp(again.data, first.data, first.len) != 0) \
			abort(); \
		free_fn(&b); \
		cx_buf_free(&first); \
		cx_buf_free(&again); \
	} \
	free_fn(&a); \
}

FUZZ_ONE(fuzz_file_meta, cx_pq_file_meta, dec_file_meta,
		 cx_pq_file_meta_encode, cx_pq_file_meta_free)
FUZZ_ONE(fuzz_page_header, cx_pq_page_header, dec_page_header,
		 cx_pq_page_header_encode, cx_pq_page_header_free)
FUZZ_ONE(fuzz_offset_index, cx_pq_offset_index, dec_offset_index,
		 cx_pq_offset_index_encode, cx_pq_offset_index_free)
FUZZ_ONE(fuzz_column_index, cx_pq_column_index, dec_column_index,
		 cx_pq_column_index_encode, cx_pq_column_index_free)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_file_meta(data, size);
	fuzz_page_header(data, size);
	fuzz_offset_index(data, size);
	fuzz_column_index(data, size);
	return 0;
}
