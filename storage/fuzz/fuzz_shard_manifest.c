/*
 * fuzz_shard_manifest.c — libFuzzer harness for the shard manifest decoder
 * (cx_shard_manifest_decode).  A manifest that decodes must survive a round
 * trip (fuzz_round_trip).  The same bytes go to the check of a carrier's
 * head (cx_shard_carried_check), as the head of a generation that fills
 * them exactly and of one larger than they are (never accepted).
 *
 * The fuzz build does not check frame checksums (FUZZING_BUILD_MODE_UNSAFE_
 * FOR_PRODUCTION), so mutated bodies reach the decoder.
 */
#include <stdlib.h>

#include "memwal/cx_shard_manifest.h"
#include "support.h"

static void *
decode(const uint8_t *data, size_t size)
{
	cx_shard_manifest *m;
	cx_err		err;

	return cx_shard_manifest_decode(data, size, "fuzz", &m, &err) == CX_OK ? m : NULL;
}

static cx_code
encode(const void *m, cx_buf *out, cx_err *err)
{
	return cx_shard_manifest_encode(m, out, err);
}

static void
free_manifest(void *m)
{
	cx_shard_manifest_free(m);
}

static const fuzz_codec codec = {decode, encode, free_manifest};

/* A head that passes holds the bytes it says at CX_SHARD_CARRIED_AT. */
static void
check_head(const uint8_t *data, size_t size, uint64_t carried)
{
	bool		whole;
	cx_err		err;

	if (cx_shard_carried_check(data, size, carried, "fuzz", &whole,
							   &err) == CX_OK && !whole &&
		size != CX_SHARD_CARRIED_AT + carried)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t	fits = size >= CX_SHARD_CARRIED_AT ? size - CX_SHARD_CARRIED_AT : 0;

	free_manifest(fuzz_round_trip(&codec, data, size));
	check_head(data, size, fits);
	check_head(data, size, size);
	return 0;
}
