/*
 * cx_crypto.h — the hashing and encoding helpers request signing needs
 * (SigV4 for S3, SharedKey for Azure), over OpenSSL's libcrypto.
 */
#ifndef CX_CRYPTO_H
#define CX_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#include "util/cx_buf.h"
#include "ctxstore/error.h"


void		cx_hmac_sha256(const void *key, size_t keylen, const void *data,
						   size_t len, uint8_t out[CX_SHA256_LEN]);

/* Lower-case hex of n bytes into out (2n + 1 bytes with the NUL). */
void		cx_hex_encode(const uint8_t *p, size_t n, char *out);

/* Appends the standard (padded) base64 of data to out, then a NUL that is
 * not counted in out->len.  Check cx_buf_ok(out) afterwards. */
void		cx_base64_encode(cx_buf *out, const void *data, size_t len);

/* Appends the bytes standard base64 text s encodes to out; CX_ERR_INVALID
 * if s is not base64 (whitespace is not allowed). */
cx_code		cx_base64_decode(cx_buf *out, const char *s, cx_err *err);

#endif							/* CX_CRYPTO_H */
