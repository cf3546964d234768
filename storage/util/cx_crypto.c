/*
 * cx_crypto.c — SHA-256, HMAC-SHA256 (OpenSSL) and hex/base64 encoding.
 */
#include "util/cx_crypto.h"

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

void
cx_base64_encode(cx_buf *out, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t		n = (len + 2) / 3 * 4;
	char	   *o;

	if (!cx_buf_reserve(out, n + 1))
		return;
	o = (char *) out->data + out->len;
	for (size_t i = 0; i < len; i += 3)
	{
		uint32_t	v = (uint32_t) p[i] << 16;
		size_t		left = len - i;

		if (left > 1)
			v |= (uint32_t) p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		*o++ = b64_alphabet[(v >> 18) & 63];
		*o++ = b64_alphabet[(v >> 12) & 63];
		*o++ = left > 1 ? b64_alphabet[(v >> 6) & 63] : '=';
		*o++ = left > 2 ? b64_alphabet[v & 63] : '=';
	}
	*o = '\0';
	out->len += n;
}

static int
b64_value(char c)
{
	const char *hit = c ? strchr(b64_alphabet, c) : NULL;

	return hit ? (int) (hit - b64_alphabet) : -1;
}

cx_code
cx_base64_decode(cx_buf *out, const char *s, cx_err *err)
{
	size_t		len = strlen(s);
	size_t		pad = 0;

	if (len % 4 != 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "not base64: length %zu is not a multiple of 4", len);
	while (pad < 2 && pad < len && s[len - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < len; i += 4)
	{
		uint32_t	v = 0;
		int			nchars = i + 4 == len ? 4 - (int) pad : 4;
		uint8_t		bytes[3];

		for (int j = 0; j < nchars; j++)
		{
			int			d = b64_value(s[i + j]);

			if (d < 0)
				return cx_err_set(err, CX_ERR_INVALID,
								  "not base64: unexpected character at offset %zu",
								  i + j);
			v |= (uint32_t) d << (18 - 6 * j);
		}
		bytes[0] = (uint8_t) (v >> 16);
		bytes[1] = (uint8_t) (v >> 8);
		bytes[2] = (uint8_t) v;
		cx_buf_put(out, bytes, (size_t) nchars - 1);
	}
	if (!cx_buf_ok(out))
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory decoding base64");
	return CX_OK;
}
