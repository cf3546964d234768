/*
 * fuzz_shard_manifest.c — libFuzzer harness for the shard manifest decoder
 * (cx_shard_manifest_decode).  A manifest that decodes must survive a round
 * trip (fuzz_round_trip).
 *
 * The fuzz build does not check frame checksums (FUZZING_BUILD_MODE_UNSAFE_
 * FOR_PRODUCTION), so mutated bodies reach the decoder.
 */
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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	free_manifest(fuzz_round_trip(&codec, data, size));
	return 0;
}
