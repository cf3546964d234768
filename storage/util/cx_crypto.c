/*
 * cx_crypto.c — SHA-256, HMAC-SHA256 and base64 (OpenSSL), hex encoding.
 */
#include "util/cx_crypto.h"

#include <limits.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

static const char b64_alphabet[] =
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void
cx_sha256(const void *data, size_t len, uint8_t out[CX_SHA256_LEN])
{
	SHA256(data, len, out);
}

void
cx_sha256_hex(const void *data, size_t len, char out[CX_SHA256_HEX_LEN + 1])
{
	uint8_t		digest[CX_SHA256_LEN];

	cx_sha256(data, len, digest);
	cx_hex_encode(digest, sizeof(digest), out);
}

void
cx_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
			   uint8_t out[CX_SHA256_LEN])
{
	unsigned int outlen = CX_SHA256_LEN;

	/* HMAC() fails only on allocation failure inside OpenSSL; the signature
	 * is then zeroes, which the server refuses as a bad signature. */
	if (HMAC(EVP_sha256(), key, (int) keylen, data, len, out, &outlen) == NULL)
		memset(out, 0, CX_SHA256_LEN);
}

void
cx_hex_encode(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++)
	{
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Bytes encoded per EVP_EncodeBlock call: a multiple of 3, so that only the
 * last block is padded and the blocks join into one encoding. */
#define B64_BLOCK 3072

void
cx_base64_encode(cx_buf *out, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t		n = (len + 2) / 3 * 4;
	unsigned char *o;

	if (!cx_buf_reserve(out, n + 1))
		return;
	o = out->data + out->len;
	for (size_t i = 0; i < len; i += B64_BLOCK)
	{
		size_t		chunk = len - i < B64_BLOCK ? len - i : B64_BLOCK;

		o += EVP_EncodeBlock(o, p + i, (int) chunk);
	}
	*o = '\0';
	out->len += n;
}

/*
 * Strict: only the standard alphabet, a length that is a multiple of 4, and
 * '=' only as the last one or two characters (EVP_DecodeBlock alone would
 * also skip surrounding white space, and counts padding as zero bytes).
 */
cx_code
cx_base64_decode(cx_buf *out, const char *s, cx_err *err)
{
	size_t		len = strlen(s);
	size_t		pad = 0;
	size_t		valid;
	int			n;

	if (len % 4 != 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "not base64: length %zu is not a multiple of 4", len);
	if (len > (size_t) INT_MAX)
		return cx_err_set(err, CX_ERR_INVALID, "not base64: %zu characters is too long", len);
	while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
		pad++;
	valid = strspn(s, b64_alphabet);
	if (valid < len - pad)
		return cx_err_set(err, CX_ERR_INVALID,
						  "not base64: unexpected character at offset %zu", valid);
	if (len == 0)
		return CX_OK;
	if (!cx_buf_reserve(out, len / 4 * 3))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory decoding base64");
	n = EVP_DecodeBlock(out->data + out->len, (const unsigned char *) s, (int) len);
	if (n < 0)
		return cx_err_set(err, CX_ERR_INVALID, "not base64");
	out->len += (size_t) n - pad;
	return CX_OK;
}
