/*
 * test_azure_auth.c — Azure SharedKey string-to-sign and signatures, SAS
 * tokens.  No network: test_azure.c proves against Azurite that the service
 * accepts what is built here.
 *
 * Vectors: the first string-to-sign is the worked example of Microsoft's
 * "Authorize with Shared Key" page (GET .../mycontainer?restype=container&
 * comp=metadata&timeout=20).  The signatures were computed independently of
 * this code, with the Azurite development key:
 *
 *   KEY=$(printf %s "$DEVKEY" | base64 -d | xxd -p -c 256)
 *   printf '<string-to-sign>' | openssl dgst -sha256 -mac HMAC \
 *       -macopt hexkey:$KEY -binary | base64
 */
#include <stdlib.h>

#include "objstore/cx_azure_auth.h"
#include "cx_test.h"

#define DEV_ACCOUNT "devstoreaccount1"
#define DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

/* Fri, 26 Jun 2015 23:39:12 GMT and Tue, 14 Nov 2023 22:13:20 GMT. */
#define T_2015 ((time_t) 1435361952)
#define T_2023 ((time_t) 1700000000)

/* The string-to-sign of req (with extra headers) for account, in a static
 * buffer, or "ERROR <message>". */
static const char *
sts(const char *account, const cx_http_request *req,
	const cx_http_headers *extra)
{
	static char out[4096];
	cx_buf		b;
	cx_err		err;

	cx_buf_init(&b);
	if (cx_az_string_to_sign(account, req, extra, &b, &err) != CX_OK)
		snprintf(out, sizeof(out), "ERROR %s", err.msg);
	else
		snprintf(out, sizeof(out), "%s", (const char *) b.data);
	cx_buf_free(&b);
	return out;
}

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

CX_TEST(azure_sts_published_example)
{
	cx_http_headers h;
	cx_http_request req = {0};

	cx_http_headers_init(&h);
	cx_http_headers_add(&h, "x-ms-version", "2015-02-21");
	cx_http_headers_add(&h, "x-ms-date", "Fri, 26 Jun 2015 23:39:12 GMT");
	req.method = "GET";
	req.url = "https://myaccount.blob.core.windows.net/mycontainer?restype=container&comp=metadata&timeout=20";
	req.headers = &h;
	CHECK(strcmp(sts("myaccount", &req, NULL),
				 "GET\n\n\n\n\n\n\n\n\n\n\n\n"
				 "x-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n"
				 "x-ms-version:2015-02-21\n"
				 "/myaccount/mycontainer\ncomp:metadata\nrestype:container\ntimeout:20") == 0);
	cx_http_headers_free(&h);
}

/* Standard header slots in order, Content-Length from the body, x-ms-
 * headers lower-cased and sorted across both lists, the path as encoded
 * in the URL, and the account twice with a path-style endpoint. */
CX_TEST(azure_sts_put_path_style)
{
	cx_http_headers h;
	cx_http_headers extra;
	cx_http_request req = {0};

	cx_http_headers_init(&h);
	cx_http_headers_init(&extra);
	cx_http_headers_add(&h, "X-MS-Version", "2021-08-06");
	cx_http_headers_add(&h, "Content-Type", "application/octet-stream");
	cx_http_headers_add(&h, "If-None-Match", "*");
	cx_http_headers_add(&h, "x-ms-blob-type", "  BlockBlob ");
	cx_http_headers_add(&extra, "x-ms-date", "Tue, 14 Nov 2023 22:13:20 GMT");
	req.method = "PUT";
	req.url = "http://127.0.0.1:10000/devstoreaccount1/ctx/a%20b/c%2B.bin";
	req.headers = &h;
	req.body = "hello world";
	req.body_len = 11;
	CHECK(strcmp(sts(DEV_ACCOUNT, &req, &extra),
				 "PUT\n\n\n11\n\napplication/octet-stream\n\n\n\n*\n\n\n"
				 "x-ms-blob-type:BlockBlob\n"
				 "x-ms-date:Tue, 14 Nov 2023 22:13:20 GMT\n"
				 "x-ms-version:2021-08-06\n"
				 "/devstoreaccount1/devstoreaccount1/ctx/a%20b/c%2B.bin") == 0);

	/* An empty body signs as an empty Content-Length (2015-02-21+). */
	req.body_len = 0;
	CHECK(starts_with(sts(DEV_ACCOUNT, &req, &extra), "PUT\n\n\n\n\napplication"));
	cx_http_headers_free(&h);
	cx_http_headers_free(&extra);
}

/* Query names lower-cased and sorted, values decoded, repeated names merged
 * with their values sorted, empty values kept; no path signs as "/". */
CX_TEST(azure_sts_query_canonical)
{
	cx_http_request req = {0};

	req.method = "GET";
	req.url = "http://127.0.0.1:10000/devstoreaccount1/ctx?restype=container&comp=list"
		"&prefix=a%2Fb%20c%2b&marker=&maxresults=2&Include=y&include=x";
	CHECK(strcmp(sts(DEV_ACCOUNT, &req, NULL),
				 "GET\n\n\n\n\n\n\n\n\n\n\n\n"
				 "/devstoreaccount1/devstoreaccount1/ctx\n"
				 "comp:list\ninclude:x,y\nmarker:\nmaxresults:2\n"
				 "prefix:a/b c+\nrestype:container") == 0);

	req.url = "https://acct.blob.core.windows.net?comp=list";
	CHECK(strcmp(sts("acct", &req, NULL),
				 "GET\n\n\n\n\n\n\n\n\n\n\n\n/acct/\ncomp:list") == 0);

	req.url = "https://acct.blob.core.windows.net/c?prefix=%zz";
	CHECK(strstr(sts("acct", &req, NULL), "malformed percent escape") != NULL);
	req.url = "https://acct.blob.core.windows.net/c?prefix=%00";
	CHECK(strstr(sts("acct", &req, NULL), "malformed percent escape") != NULL);
	req.url = "/no/scheme";
	CHECK(starts_with(sts("acct", &req, NULL), "ERROR request URL has no scheme"));
}

CX_TEST(azure_http_date)
{
	char		d[CX_AZ_DATE_LEN];

	cx_az_http_date(T_2015, d);
	CHECK(strcmp(d, "Fri, 26 Jun 2015 23:39:12 GMT") == 0);
	cx_az_http_date((time_t) 0, d);
	CHECK(strcmp(d, "Thu, 01 Jan 1970 00:00:00 GMT") == 0);
}

/* The published example, signed: x-ms-date added, then the signature. */
CX_TEST(azure_sign_published_example)
{
	cx_az_sharedkey k;
	cx_http_headers h;
	cx_http_headers out;
	cx_http_request req = {0};
	cx_err		err;

	REQUIRE_OK(cx_az_sharedkey_init(&k, "myaccount", DEV_KEY, &err), &err);
	cx_http_headers_init(&h);
	cx_http_headers_init(&out);
	cx_http_headers_add(&h, "x-ms-version", "2015-02-21");
	req.method = "GET";
	req.url = "https://myaccount.blob.core.windows.net/mycontainer?restype=container&comp=metadata&timeout=20";
	req.headers = &h;
	CHECK(cx_az_sign_at(&k, &req, T_2015, &out, &err) == CX_OK);
	CHECK(out.n == 2);
	CHECK(cx_http_headers_get(&out, "x-ms-date") != NULL &&
		  strcmp(cx_http_headers_get(&out, "x-ms-date"),
				 "Fri, 26 Jun 2015 23:39:12 GMT") == 0);
	CHECK(cx_http_headers_get(&out, "Authorization") != NULL &&
		  strcmp(cx_http_headers_get(&out, "Authorization"),
				 "SharedKey myaccount:1u9lui2jDxj0+fpbHjQ5m5NnastJRSYM+PSmfi8TXx4=") == 0);
	cx_http_headers_free(&h);
	cx_http_headers_free(&out);
	cx_az_sharedkey_free(&k);
}

CX_TEST(azure_sign_put_path_style)
{
	cx_az_sharedkey k;
	cx_http_headers h;
	cx_http_headers out;
	cx_http_request req = {0};
	cx_err		err;

	REQUIRE_OK(cx_az_sharedkey_init(&k, DEV_ACCOUNT, DEV_KEY, &err), &err);
	CHECK(k.keylen == 64);
	cx_http_headers_init(&h);
	cx_http_headers_init(&out);
	cx_http_headers_add(&h, "x-ms-version", "2021-08-06");
	cx_http_headers_add(&h, "Content-Type", "application/octet-stream");
	cx_http_headers_add(&h, "If-None-Match", "*");
	cx_http_headers_add(&h, "x-ms-blob-type", "BlockBlob");
	req.method = "PUT";
	req.url = "http://127.0.0.1:10000/devstoreaccount1/ctx/a%20b/c%2B.bin";
	req.headers = &h;
	req.body = "hello world";
	req.body_len = 11;
	CHECK(cx_az_sign_at(&k, &req, T_2023, &out, &err) == CX_OK);
	CHECK(cx_http_headers_get(&out, "Authorization") != NULL &&
		  strcmp(cx_http_headers_get(&out, "Authorization"),
				 "SharedKey devstoreaccount1:GLEVMpM8Zma2ayX2AP5WrGbjZjwOPBy7LZYYsoppYDE=") == 0);
	cx_http_headers_free(&h);
	cx_http_headers_free(&out);
	cx_az_sharedkey_free(&k);
}

/* Bad credentials are refused with messages that never show the key. */
CX_TEST(azure_sharedkey_init_refusals)
{
	cx_az_sharedkey k;
	cx_err		err;
	const char *bad_key = "c2VjcmV0LWtleS1tYXRlcmlhbA#=";

	CHECK_CODE(cx_az_sharedkey_init(&k, "", DEV_KEY, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "account_name") != NULL);
	CHECK_CODE(cx_az_sharedkey_init(&k, "bad/name", DEV_KEY, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_az_sharedkey_init(&k, DEV_ACCOUNT, "", &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "account_key") != NULL);
	CHECK_CODE(cx_az_sharedkey_init(&k, DEV_ACCOUNT, bad_key, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "account_key") != NULL);
	CHECK(strstr(err.msg, "c2VjcmV0") == NULL);
	CHECK_CODE(cx_az_sharedkey_init(&k, DEV_ACCOUNT, "abc", &err), CX_ERR_INVALID);
	/* Freeing a zeroed or failed record is harmless. */
	cx_az_sharedkey_free(&k);
}

CX_TEST(azure_sas_normalize)
{
	char	   *sas;
	cx_err		err;

	REQUIRE_OK(cx_az_sas_normalize("?sv=2021-08-06&ss=b&sig=abc%2Bdef%3D", &sas, &err), &err);
	CHECK(strcmp(sas, "sv=2021-08-06&ss=b&sig=abc%2Bdef%3D") == 0);
	free(sas);
	REQUIRE_OK(cx_az_sas_normalize("sig=x&sv=2021-08-06", &sas, &err), &err);
	CHECK(strcmp(sas, "sig=x&sv=2021-08-06") == 0);
	free(sas);

	CHECK_CODE(cx_az_sas_normalize("", &sas, &err), CX_ERR_INVALID);
	CHECK(sas == NULL);
	CHECK_CODE(cx_az_sas_normalize("?", &sas, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_az_sas_normalize("sv=2021&notsig=secretvalue", &sas, &err),
			   CX_ERR_INVALID);
	CHECK(strstr(err.msg, "sig=") != NULL);
	CHECK(strstr(err.msg, "secretvalue") == NULL);
	CHECK_CODE(cx_az_sas_normalize("sv=1&sig=a b", &sas, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_az_sas_normalize("sv=1&sig=ab#frag", &sas, &err), CX_ERR_INVALID);
	CHECK_CODE(cx_az_sas_normalize("sv=1&sig=a?b", &sas, &err), CX_ERR_INVALID);
	CHECK(strstr(err.msg, "sig=a") == NULL);
}

CX_TEST(azure_url_append_sas)
{
	cx_buf		url;

	cx_buf_init(&url);
	cx_buf_put(&url, "http://h/c/k", 13);
	url.len--;
	cx_az_url_append_sas(&url, "sv=1&sig=x");
	CHECK(cx_buf_ok(&url) && strcmp((char *) url.data, "http://h/c/k?sv=1&sig=x") == 0);
	CHECK(url.len == strlen("http://h/c/k?sv=1&sig=x"));

	cx_buf_reset(&url);
	cx_buf_put(&url, "http://h/c?comp=list", 21);
	url.len--;
	cx_az_url_append_sas(&url, "sv=1&sig=x");
	CHECK(strcmp((char *) url.data, "http://h/c?comp=list&sv=1&sig=x") == 0);
	cx_buf_free(&url);
}
