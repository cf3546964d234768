/*
 * fuzz_iceberg.c — libFuzzer harness for the Iceberg metadata the engine
 * reads back when it publishes again: the input is parsed as a table
 * metadata file (jansson, then what publishing takes from it: the current
 * snapshot, its summary, and a new snapshot added to it), and as the Avro
 * files it reads (a manifest list's paths, a manifest's entries, a file's
 * metadata values), through libavro.
 */
#include <stdlib.h>
#include <jansson.h>

#include "maintenance/cx_iceberg_int.h"
#include "support.h"

static volatile int64_t sink;

static void
table_metadata(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t	   *meta = json_loadb((const char *) data, size, 0, &jerr);
	json_t	   *cur;
	cx_err		err;

	if (meta == NULL)
		return;
	if ((cur = cx_ice_meta_current(meta)) != NULL)
	{
		cx_ice_snapshot snap = {
			.snapshot_id = 2, .parent_id = 1, .seq = 2, .timestamp_ms = 1,
			.manifest_list = "file:///m.avro", .operation = "append",
			.summary = json_object(), .previous_metadata = "file:///v1.json",
			.schema_id = 1,
		};

		sink = (int64_t) cx_ice_snapshot_base_version(cur) +
			cx_ice_summary_int(cur, "total-records");
		(void) cx_ice_meta_add_snapshot(meta, &snap, &err);
	}
	json_decref(meta);
}

static void
avro_files(const uint8_t *data, size_t size)
{
	cx_buf		b;
	char	  **paths = NULL;
	uint32_t	n = 0;
	cx_ice_files files = {0};
	char	   *value = NULL;
	cx_err		err;

	cx_buf_init(&b);
	cx_buf_put(&b, data, size);
	/* What the readers return is the caller's to free, whatever the outcome. */
	(void) cx_ice_read_manifest_list(&b, "fuzz", &paths, &n, &err);
	for (uint32_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	(void) cx_ice_read_manifest(&b, "fuzz", &files, &err);
	cx_ice_files_free(&files);
	(void) cx_ice_avro_file_meta(&b, "fuzz", "schema", &value, &err);
	free(value);
	cx_buf_free(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	table_metadata(data, size);
	avro_files(data, size);
	return 0;
}
