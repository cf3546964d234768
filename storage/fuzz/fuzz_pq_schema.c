/*
 * fuzz_pq_schema.c — libFuzzer harness for the engine schema a fragment
 * carries as key-value metadata, JSON parsed with jansson
 * (cx_pq_schema_from_json).  A schema that parses must survive a round
 * trip: its JSON parses again to the same schema and the same JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "format/cx_parquet_schema.h"
#include "support.h"

static void
round_trip(const cx_schema *s)
{
	char	   *first = cx_pq_schema_json(s);
	char	   *again;
	cx_schema  *s2;
	const char *why;

	if (first == NULL)
		return;
	if ((s2 = cx_pq_schema_from_json(first, &why)) == NULL ||
		!cx_schema_equal(s, s2) ||
		(again = cx_pq_schema_json(s2)) == NULL || strcmp(first, again) != 0)
		abort();
	free(again);
	cx_schema_free(s2);
	free(first);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *json = malloc(size + 1);
	cx_schema  *s;
	const char *why;

	if (json == NULL)
		return 0;
	memcpy(json, data, size);
	json[size] = '\0';
	if ((s = cx_pq_schema_from_json(json, &why)) != NULL)
	{
		round_trip(s);
		cx_schema_free(s);
	}
	free(json);
	return 0;
}
