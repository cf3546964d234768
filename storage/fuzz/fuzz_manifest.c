/*
 * fuzz_manifest.c — libFuzzer harness for the base manifest decoder
 * (cx_manifest_decode) and what readers take out of a decoded manifest:
 * its key index section (cx_keyindex_load), its row and deletion counts.
 * A manifest that decodes must survive a round trip (fuzz_round_trip).
 *
 * The fuzz build does not check frame checksums (FUZZING_BUILD_MODE_UNSAFE_
 * FOR_PRODUCTION), so mutated bodies reach the decoder.
 */
#include "table/cx_key_index.h"
#include "support.h"

static void *
decode(const uint8_t *data, size_t size)
{
	cx_manifest *m;
	cx_err		err;

	return cx_manifest_decode(data, size, "fuzz", &m, &err) == CX_OK ? m : NULL;
}

static cx_code
encode(const void *m, cx_buf *out, cx_err *err)
{
	return cx_manifest_encode(m, out, err);
}

static void
free_manifest(void *m)
{
	cx_manifest_free(m);
}

static const fuzz_codec codec = {decode, encode, free_manifest};

static void
use(const cx_manifest *m)
{
	cx_keyindex ix;
	cx_err		err;

	if (cx_keyindex_load(m, &ix, &err) == CX_OK)
		cx_keyindex_free(&ix);
	(void) cx_manifest_rows(m);
	for (uint32_t f = 0; f < m->nfragments; f++)
		(void) cx_manifest_deleted_count(m, f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cx_manifest *m = fuzz_round_trip(&codec, data, size);

	if (m != NULL)
	{
		use(m);
		cx_manifest_free(m);
	}
	return 0;
}
