/*
 * fuzz_xml.c — libFuzzer harness for the S3 and Azure answers the engine
 * parses: the input is a response body, parsed as a ListObjectsV2 page
 * (cx_s3_list_page), as an Azure List Blobs page (cx_az_list_page, with
 * percent-encoded names), as an error body (cx_http_error_code) and for the
 * fields a multipart upload takes from its answers (cx_xml_doc_field), all
 * through libexpat and the tree cx_xml.c builds of it.
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/cx_http.h"
#include "objstore/cx_xml.h"
#include "support.h"

static bool
count_key(void *arg, const cx_list_entry *e)
{
	*(size_t *) arg += strlen(e->key) + (size_t) (e->size & 1) +
		(size_t) (e->mtime_us & 1);
	return true;
}

static void
list_pages(const cx_buf *page)
{
	char	   *next = NULL;
	size_t		n = 0;
	cx_err		err;

	(void) cx_s3_list_page("pre/", page, count_key, &n, &next, &err);
	free(next);
	next = NULL;
	(void) cx_s3_list_page("", page, count_key, &n, &next, &err);
	free(next);
	next = cx_strdup("m");
	(void) cx_az_list_page("pre/", page, count_key, &n, &next, &err);
	free(next);
}

static void
error_fields(const cx_buf *page)
{
	static const char *const fields[] = {"Code", "UploadId", "ETag", "Message"};
	cx_http_response resp;

	cx_http_response_init(&resp);
	cx_buf_put(&resp.body, page->data, page->len);
	free(cx_http_error_code(&resp));
	cx_http_response_free(&resp);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		free(cx_xml_doc_field((const char *) page->data, page->len, fields[i]));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cx_buf		page;

	cx_buf_init(&page);
	cx_buf_put(&page, data, size);
	if (!cx_buf_ok(&page))
		return 0;
	list_pages(&page);
	error_fields(&page);
	cx_buf_free(&page);
	return 0;
}
