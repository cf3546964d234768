/*
 * fuzz_uri_options.c — libFuzzer harness for store URIs and store options:
 * the input is NUL-separated fields, a URI then option name/value pairs.
 * The URI is canonicalised (cx_uri_canonical); an s3:// or az:// store is
 * opened with the options (cx_objstore_open: option names, region, endpoint
 * and URL style, credentials, the Azure account key's base64 and the SAS
 * token, list_page_size, the HTTP timeouts and retry options), which makes
 * no request; then every option is read as a boolean and as an integer.
 * file:// stores are only canonicalised: opening one touches the disk.
 *
 * shared/cx_options.c (the table and server option table) is not fuzzed
 * here: it builds only against the PostgreSQL headers.
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/cx_http.h"
#include "support.h"

#define MAX_OPTIONS 8

static void
read_options(const cx_option *o, size_t n)
{
	cx_http_config c;
	cx_err		err;

	(void) cx_http_config_from_options(&c, o, n, &err);
	for (size_t i = 0; i < n; i++)
	{
		bool		b;
		long		l;

		(void) cx_option_bool(o, n, o[i].name, false, &b, &err);
		(void) cx_option_int(o, n, o[i].name, -1000, 1000000, 0, &l, &err);
	}
}

static void
open_store(const char *uri, const cx_option *o, size_t n)
{
	char	   *canonical;
	cx_objstore *s;
	cx_err		err;

	if (cx_uri_canonical(uri, &canonical, &err) != CX_OK)
		return;
	if (strncmp(canonical, "file:", 5) != 0 &&
		cx_objstore_open(uri, o, n, &s, &err) == CX_OK)
		cx_obj_close(s);
	free(canonical);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = malloc(size + 1);
	const char *fields[1 + 2 * MAX_OPTIONS];
	size_t		nfields = 0;
	cx_option	o[MAX_OPTIONS];
	size_t		n = 0;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (size_t pos = 0; pos <= size && nfields < 1 + 2 * MAX_OPTIONS;
		 pos += strlen(text + pos) + 1)
		fields[nfields++] = text + pos;
	for (size_t f = 1; f + 1 < nfields; f += 2, n++)
	{
		o[n].name = fields[f];
		o[n].value = fields[f + 1];
	}
	read_options(o, n);
	open_store(fields[0], o, n);
	free(text);
	return 0;
}
