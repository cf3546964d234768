/*
 * fuzz_gc_record.c — libFuzzer harness for the decoder of GC retention
 * records (cx_gc_record_decode).  A record that decodes must survive a
 * round trip (fuzz_round_trip), call none of its retained versions
 * collected, and merged with itself stay the same decision.
 *
 * The fuzz build does not check frame checksums (FUZZING_BUILD_MODE_UNSAFE_
 * FOR_PRODUCTION), so mutated bodies reach the decoder.
 */
#include <stdlib.h>
#include <string.h>

#include "maintenance/cx_gc_record.h"
#include "support.h"

static void *
decode(const uint8_t *data, size_t size)
{
	cx_gc_record *r = malloc(sizeof(*r));
	cx_err		err;

	if (r != NULL && cx_gc_record_decode(data, size, "fuzz", r, &err) != CX_OK)
	{
		free(r);
		r = NULL;
	}
	return r;
}

static cx_code
encode(const void *r, cx_buf *out, cx_err *err)
{
	return cx_gc_record_encode(r, out, err);
}

static void
free_record(void *r)
{
	if (r != NULL)
		cx_gc_record_free(r);
	free(r);
}

static const fuzz_codec codec = {decode, encode, free_record};

/* A decision merged with itself is itself. */
static void
check_self_merge(const cx_gc_record *r)
{
	cx_gc_record copy = *r;
	cx_err		err;

	copy.retained = malloc(r->n * sizeof(uint64_t));
	if (copy.retained == NULL)
		return;
	memcpy(copy.retained, r->retained, r->n * sizeof(uint64_t));
	if (cx_gc_record_merge(&copy, r, &err) == CX_OK &&
		(copy.newest != r->newest || copy.n != r->n ||
		 memcmp(copy.retained, r->retained, r->n * sizeof(uint64_t)) != 0))
		abort();
	cx_gc_record_free(&copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cx_gc_record *r = fuzz_round_trip(&codec, data, size);

	if (r != NULL)
	{
		for (size_t i = 0; i < r->n; i++)
			if (cx_gc_record_collected(r, r->retained[i]))
				abort();
		check_self_merge(r);
	}
	free_record(r);
	return 0;
}
