/*
 * fuzz_http_headers.c — libFuzzer harness for the HTTP response header
 * handling of the cloud backends: the input is split into lines as libcurl
 * hands them to the header callback (cx_http_header_line), then the headers
 * are read as the backends read them: a HEAD answer's Content-Length and
 * Last-Modified (cx_http_read_head), Retry-After (cx_http_retry_after_ms),
 * ETag and x-ms-error-code.
 */
#include <string.h>

#include "objstore/cx_http.h"
#include "support.h"

static volatile size_t sink;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cx_http_headers h;
	const char *line = (const char *) data;
	const char *end = line + size;
	uint64_t	len;
	int64_t		mtime;
	cx_err		err;

	cx_http_headers_init(&h);
	while (line < end)
	{
		const char *nl = memchr(line, '\n', (size_t) (end - line));
		size_t		n = nl != NULL ? (size_t) (nl - line) + 1 : (size_t) (end - line);

		cx_http_header_line(&h, line, n);
		line += n;
	}
	(void) cx_http_read_head(&h, &len, NULL, &err);
	(void) cx_http_read_head(&h, &len, &mtime, &err);
	sink = (size_t) cx_http_retry_after_ms(&h);
	for (const char *const *name = (const char *const[]) {"etag", "x-ms-error-code", NULL};
		 *name != NULL; name++)
	{
		const char *v = cx_http_headers_get(&h, *name);

		sink = v != NULL ? strlen(v) : 0;
	}
	cx_http_headers_free(&h);
	return 0;
}
