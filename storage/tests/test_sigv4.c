/*
 * test_sigv4.c — Signature V4 against AWS's published S3 examples ("Signature
 * Calculations for the Authorization Header: Transferring Payload in a Single
 * Chunk"), plus the crypto, URL and XML helpers the cloud backends share.
 */
#include <stdlib.h>

#include "util/cx_crypto.h"
#include "objstore/cx_http.h"
#include "objstore/cx_sigv4.h"
#include "cx_test.h"
#include "objstore/cx_xml.h"

#define EXAMPLE_HOST "https://examplebucket.s3.amazonaws.com"

static const cx_sigv4_creds example_creds = {
	.access_key_id = "AKIAIOSFODNN7EXAMPLE",
	.secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	.session_token = NULL,
};

static cx_sigv4_request
example_request(const char *method, const char *url, const cx_http_headers *h,
				const char *payload_hash)
{
	cx_sigv4_request r = {
		.method = method,
		.url = url,
		.headers = h,
		.payload_hash = payload_hash,
		.amz_date = "20130524T000000Z",
		.region = "us-east-1",
		.service = "s3",
	};

	return r;
}

/* SHA-256 of r's canonical request, in hex, in a static buffer. */
static const char *
canonical_hash(const cx_sigv4_request *r, const cx_sigv4_creds *c)
{
	static char hex[CX_SHA256_HEX_LEN + 1];
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	if (cx_sigv4_canonical_request(r, c, &b, NULL, &err) != CX_OK)
		snprintf(hex, sizeof(hex), "error");
	else
		cx_sha256_hex(b.data, b.len, hex);
	cx_buf_free(&b);
	return hex;
}

/* The Authorization header cx_sigv4_sign() produces, in a static buffer. */
static const char *
authorization(const cx_sigv4_request *r, const cx_sigv4_creds *c)
{
	static char out[512];
	cx_http_headers h;
	cx_err		err;

	cx_http_headers_init(&h);
	if (cx_sigv4_sign(r, c, &h, &err) != CX_OK)
		snprintf(out, sizeof(out), "error: %.400s", err.msg);
	else
		snprintf(out, sizeof(out), "%s", cx_http_headers_get(&h, "authorization"));
	cx_http_headers_free(&h);
	return out;
}

CX_TEST(sigv4_get_object_example)
{
	cx_http_headers h;
	cx_sigv4_request r;
	cx_buf		canon;
	cx_err		err;

	cx_http_headers_init(&h);
	cx_http_headers_add(&h, "Range", "bytes=0-9");
	r = example_request("GET", EXAMPLE_HOST "/test.txt", &h, CX_SIGV4_EMPTY_SHA256);

	cx_buf_init(&canon);
	REQUIRE_OK(cx_sigv4_canonical_request(&r, &example_creds, &canon, NULL, &err), &err);
	cx_buf_put_u8(&canon, 0);
	CHECK(strcmp((char *) canon.data,
				 "GET\n/test.txt\n\n"
				 "host:examplebucket.s3.amazonaws.com\n"
				 "range:bytes=0-9\n"
				 "x-amz-content-sha256:" CX_SIGV4_EMPTY_SHA256 "\n"
				 "x-amz-date:20130524T000000Z\n\n"
				 "host;range;x-amz-content-sha256;x-amz-date\n"
				 CX_SIGV4_EMPTY_SHA256) == 0);
	cx_buf_free(&canon);
	CHECK(strcmp(canonical_hash(&r, &example_creds),
				 "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972") == 0);
	CHECK(strcmp(authorization(&r, &example_creds),
				 "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
				 "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
				 "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") == 0);
	cx_http_headers_free(&h);
}

CX_TEST(sigv4_put_object_example)
{
	const char *body = "Welcome to Amazon S3.";
	char		hash[CX_SHA256_HEX_LEN + 1];
	cx_http_headers h;
	cx_sigv4_request r;
	cx_buf		key;

	/* The key "test$file.text" encoded as the backend encodes keys. */
	cx_buf_init(&key);
	cx_buf_put(&key, EXAMPLE_HOST "/", strlen(EXAMPLE_HOST "/"));
	cx_http_url_encode(&key, "test$file.text", true);
	cx_buf_put_u8(&key, 0);
	CHECK(strcmp((char *) key.data, EXAMPLE_HOST "/test%24file.text") == 0);

	cx_sha256_hex(body, strlen(body), hash);
	CHECK(strcmp(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072") == 0);
	cx_http_headers_init(&h);
	cx_http_headers_add(&h, "Date", "Fri, 24 May 2013 00:00:00 GMT");
	cx_http_headers_add(&h, "x-amz-storage-class", "REDUCED_REDUNDANCY");
	r = example_request("PUT", (char *) key.data, &h, hash);
	CHECK(strcmp(canonical_hash(&r, &example_creds),
				 "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d") == 0);
	CHECK(strcmp(authorization(&r, &example_creds),
				 "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
				 "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
				 "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd") == 0);
	cx_http_headers_free(&h);
	cx_buf_free(&key);
}

CX_TEST(sigv4_lifecycle_and_list_examples)
{
	cx_sigv4_request r;

	/* A sub-resource without a value signs as "lifecycle=". */
	r = example_request("GET", EXAMPLE_HOST "/?lifecycle", NULL, CX_SIGV4_EMPTY_SHA256);
	CHECK(strstr(authorization(&r, &example_creds),
				 "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") != NULL);

	/* Query parameters are signed sorted, whatever the URL's order. */
	r = example_request("GET", EXAMPLE_HOST "/?prefix=J&max-keys=2", NULL, CX_SIGV4_EMPTY_SHA256);
	CHECK(strcmp(canonical_hash(&r, &example_creds),
				 "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7") == 0);
	CHECK(strcmp(authorization(&r, &example_creds),
				 "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
				 "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
				 "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == 0);
}

CX_TEST(sigv4_session_token_and_host_override)
{
	cx_sigv4_creds c = example_creds;
	cx_http_headers h;
	cx_http_headers out;
	cx_sigv4_request r;
	cx_buf		sh;
	cx_buf		canon;
	cx_err		err;
	char		date[CX_SIGV4_DATE_LEN];

	c.session_token = "FQoGZXIvYXdzEXAMPLE";
	cx_http_headers_init(&h);
	cx_http_headers_init(&out);
	/* A Host header wins over the URL's authority (the fault proxy). */
	cx_http_headers_add(&h, "Host", "127.0.0.1:4568");
	cx_http_headers_add(&h, "If-None-Match", "*");
	r = example_request("PUT", "http://127.0.0.1:9999/b/k", &h, CX_SIGV4_EMPTY_SHA256);
	cx_buf_init(&sh);
	cx_buf_init(&canon);
	REQUIRE_OK(cx_sigv4_canonical_request(&r, &c, &canon, &sh, &err), &err);
	CHECK(strcmp((char *) sh.data,
				 "host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token") == 0);
	cx_buf_put_u8(&canon, 0);
	CHECK(strstr((char *) canon.data, "host:127.0.0.1:4568\n") != NULL);
	REQUIRE_OK(cx_sigv4_sign(&r, &c, &out, &err), &err);
	CHECK(strcmp(cx_http_headers_get(&out, "x-amz-security-token"), c.session_token) == 0);
	CHECK(strstr(cx_http_headers_get(&out, "authorization"), c.secret_access_key) == NULL);

	cx_sigv4_date(0, date);
	CHECK(strcmp(date, "19700101T000000Z") == 0);
	cx_buf_free(&sh);
	cx_buf_free(&canon);
	cx_http_headers_free(&h);
	cx_http_headers_free(&out);
}

CX_TEST(crypto_hmac_and_base64)
{
	uint8_t		mac[CX_SHA256_LEN];
	char		hex[2 * CX_SHA256_LEN + 1];
	cx_buf		b;
	cx_err		err;

	/* RFC 4231 test case 2. */
	cx_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	cx_hex_encode(mac, sizeof(mac), hex);
	CHECK(strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0);

	cx_buf_init(&b);
	cx_base64_encode(&b, "foobar", 6);
	CHECK(b.len == 8 && strcmp((char *) b.data, "Zm9vYmFy") == 0);
	cx_buf_reset(&b);
	cx_base64_encode(&b, "fo", 2);
	CHECK(strcmp((char *) b.data, "Zm8=") == 0);
	cx_buf_reset(&b);
	REQUIRE_OK(cx_base64_decode(&b, "Zm9vYg==", &err), &err);
	CHECK(b.len == 4 && memcmp(b.data, "foob", 4) == 0);
	cx_buf_reset(&b);
	REQUIRE_OK(cx_base64_decode(&b, "", &err), &err);
	CHECK(b.len == 0);
	CHECK_CODE(cx_base64_decode(&b, "Zm9", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_base64_decode(&b, "Zm=v", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_base64_decode(&b, "Zm9*", &err), CX_ERR_INVALID);
	/* White space around the text, and padding alone, are not base64. */
	CHECK_CODE(cx_base64_decode(&b, "Zm9v    ", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_base64_decode(&b, "    Zm9v", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_base64_decode(&b, "====", &err), CX_ERR_INVALID);
	CHECK_CODE(cx_base64_decode(&b, "Zg=a", &err), CX_ERR_INVALID);
	cx_buf_free(&b);
}

/* Every length round-trips, including ones the encoder takes in several
 * blocks. */
CX_TEST(crypto_base64_round_trips)
{
	static const size_t lens[] = {0, 1, 2, 3, 4, 5, 3071, 3072, 3073, 10000};
	uint8_t		data[10000];
	cx_buf		enc;
	cx_buf		dec;
	cx_err		err;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t) (i * 7 + 3);
	cx_buf_init(&enc);
	cx_buf_init(&dec);
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
	{
		cx_buf_reset(&enc);
		cx_buf_reset(&dec);
		cx_base64_encode(&enc, data, lens[k]);
		REQUIRE(enc.len == (lens[k] + 2) / 3 * 4 && strlen((char *) enc.data) == enc.len);
		REQUIRE_OK(cx_base64_decode(&dec, (char *) enc.data, &err), &err);
		CHECK(dec.len == lens[k] && (lens[k] == 0 || memcmp(dec.data, data, lens[k]) == 0));
	}
	cx_buf_free(&enc);
	cx_buf_free(&dec);
}

CX_TEST(http_url_encode_and_redact)
{
	cx_buf		b;
	char		url[256];

	cx_buf_init(&b);
	cx_http_url_encode(&b, "a b/c+d~e_f.g-h%\xc3\xa9", true);
	cx_buf_put_u8(&b, 0);
	CHECK(strcmp((char *) b.data, "a%20b/c%2Bd~e_f.g-h%25%C3%A9") == 0);
	cx_buf_reset(&b);
	cx_http_url_encode(&b, "a/b=c&", false);
	cx_buf_put_u8(&b, 0);
	CHECK(strcmp((char *) b.data, "a%2Fb%3Dc%26") == 0);
	cx_buf_free(&b);

	cx_http_redact_url("https://user:secret@host:1/p/a?sig=SECRET#f", url, sizeof(url));
	CHECK(strcmp(url, "https://host:1/p/a") == 0);
	cx_http_redact_url("http://host?sv=x", url, sizeof(url));
	CHECK(strcmp(url, "http://host") == 0);
}

CX_TEST(xml_elements_and_entities)
{
	const char *doc =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<IsTruncated>true</IsTruncated>"
		"<Contents><Key>a&amp;b &lt;&#x41;&#66;&gt; &quot;&apos;</Key><Size>12</Size></Contents>"
		"<Contents><Key Encoded=\"true\"><![CDATA[x<y]]>&#233;</Key><Size>0</Size><Keys/></Contents>"
		"<NextContinuationToken>tok/+=</NextContinuationToken>"
		"</ListBucketResult>";
	cx_xml_doc *d;
	const cx_xml *root;
	const cx_xml *c = NULL;
	char	   *t;
	cx_err		err;
	int			n = 0;

	REQUIRE_OK(cx_xml_parse(doc, strlen(doc), &d, &err), &err);
	CHECK(cx_xml_root(d, "Error") == NULL);
	root = cx_xml_root(d, "ListBucketResult");
	REQUIRE(root != NULL);
	t = cx_xml_find_text(root, "IsTruncated");
	CHECK(t != NULL && strcmp(t, "true") == 0);
	free(t);
	while ((c = cx_xml_next(root, c, "Contents")) != NULL)
	{
		const cx_xml *key = cx_xml_find(c, "Key");

		REQUIRE(key != NULL);
		if (n == 0)
		{
			CHECK(strcmp(cx_xml_text(key), "a&b <AB> \"'") == 0);
			CHECK(cx_xml_attr(key, "Encoded") == NULL);
		}
		else
		{
			CHECK(strcmp(cx_xml_text(key), "x<y\xc3\xa9") == 0);
			CHECK(strcmp(cx_xml_attr(key, "Encoded"), "true") == 0);
			CHECK(strcmp(cx_xml_text(cx_xml_find(c, "Keys")), "") == 0);
		}
		n++;
	}
	CHECK(n == 2);
	t = cx_xml_find_text(root, "NextContinuationToken");
	CHECK(t != NULL && strcmp(t, "tok/+=") == 0);
	free(t);
	CHECK(cx_xml_find_text(root, "Missing") == NULL);
	cx_xml_free(d);

	t = cx_xml_doc_field("<Error><Code>NoSuchKey</Code></Error>", 37, "Code");
	CHECK(t != NULL && strcmp(t, "NoSuchKey") == 0);
	free(t);
	CHECK(cx_xml_doc_field("<Error><Code>NoSuch", 19, "Code") == NULL);
}

/* Parsing doc fails as corrupt, with a message that holds none of secret. */
static void
xml_refused(const char *doc, const char *secret)
{
	cx_xml_doc *d = (cx_xml_doc *) &d;	/* must come back NULL */
	cx_err		err;

	CHECK_CODE(cx_xml_parse(doc, strlen(doc), &d, &err), CX_ERR_CORRUPT);
	CHECK(d == NULL);
	CHECK(strstr(err.msg, secret) == NULL);
}

CX_TEST(xml_refuses_dtd_and_malformed)
{
	char		deep[33 * 7 + 1] = "";

	/* Entity declarations, even harmless ones, are never honoured. */
	xml_refused("<!DOCTYPE r [<!ENTITY s \"SECRET\">]><r>&s;</r>", "SECRET");
	xml_refused("<!DOCTYPE r SYSTEM \"file:///etc/passwd\"><r>SECRET</r>", "SECRET");
	/* Truncated: a cut-off listing page is not a short one. */
	xml_refused("<ListBucketResult><Contents><Key>SECRET", "SECRET");
	xml_refused("<ListBucketResult><Key>SECRET</Key>", "SECRET");
	xml_refused("", "SECRET");
	xml_refused("<K>SECRET&bogus;</K>", "SECRET");
	xml_refused("<K>SECRET&#0;</K>", "SECRET");
	xml_refused("<K>SECRET</J>", "SECRET");
	/* Well formed but deeper than any answer: bounded, not built. */
	for (int i = 0; i < 33; i++)
		strcat(deep, "<a>");
	for (int i = 0; i < 33; i++)
		strcat(deep, "</a>");
	xml_refused(deep, "SECRET");
}
