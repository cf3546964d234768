/*
 * support.h — what the libFuzzer harnesses share: an in-memory object
 * store, so that decoders which read through a store (fragments, key index
 * segments) see the fuzzer's bytes as an object without touching the disk.
 */
#ifndef FUZZ_SUPPORT_H
#define FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "objstore/cx_objstore.h"
#include "format/cx_schema.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A store holding one object, key, with a copy of data; NULL when out of
 * memory.  Puts, uploads and deletes are refused: a decoder only reads.
 * Close with cx_obj_close(). */
cx_objstore *fuzz_memstore(const char *key, const uint8_t *data, size_t size);

/* A key under prefix never used before in this process ("index/<n>.cxk"):
 * caches keyed by object name must not carry one input over to the next. */
void		fuzz_fresh_key(char *key, size_t keysize, const char *prefix,
						   const char *suffix);

/* Decodes rows (cx_row_encode() form, as WAL entries hold them) of schema
 * one at a time until the bytes run out or one does not decode; aborts (a
 * finding) if a decoded row does not re-encode to exactly the bytes it was
 * decoded from. */
void		fuzz_rows(const cx_schema *schema, const uint8_t *rows, size_t len);

/* How a harness decodes and encodes one kind of object, for the round trip
 * below: decode returns a new object, or NULL if the bytes do not decode. */
typedef struct fuzz_codec
{
	void	   *(*decode) (const uint8_t *data, size_t size);
	cx_code		(*encode) (const void *obj, cx_buf *out, cx_err *err);
	void		(*free) (void *obj);
} fuzz_codec;

/* Decodes data; if that works, aborts (a finding) unless the object
 * encodes to bytes that decode and re-encode to themselves: the encoder
 * writes only what the decoder accepts, the decoder keeps all it writes.
 * Returns the decoded object (the caller frees it with c->free), or NULL. */
void	   *fuzz_round_trip(const fuzz_codec *c, const uint8_t *data,
							size_t size);

#endif							/* FUZZ_SUPPORT_H */
