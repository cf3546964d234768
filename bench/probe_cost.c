/*
 * probe_cost.c — the writer's uniqueness probe in isolation: N probes of
 * one new key each (cx_base_probe, as the writer makes one per request)
 * against the latest base of a store, on one handle.  bench/probe_cost.sh
 * counts its instructions under callgrind.
 *   probe_cost <store uri> <N>
 */
#include <stdio.h>
#include <stdlib.h>

#include "ctxstore/objstore.h"
#include "table/cx_base_probe.h"
#include "table/cx_manifest.h"

static int
probe_new_keys(cx_objstore *s, const cx_manifest *m, int n, cx_err *err)
{
	char		key[64];

	for (int i = 0; i < n; i++)
	{
		const uint8_t *v = (const uint8_t *) key;
		size_t		len;
		cx_probe_result r;

		/* uuid-shaped keys no bench row has */
		len = (size_t) snprintf(key, sizeof(key), "%08x-0000-4000-8000-%012x",
								(unsigned) i * 2654435761u, (unsigned) i);
		if (cx_base_probe(s, m, 0, &v, &len, 1, &r, err) != CX_OK)
			return -1;
		if (i == n - 1)
			printf("fragments %u, segments read %u, fragments scanned %u, GETs %llu\n",
				   m->nfragments, r.index_segments_read, r.fragments_scanned,
				   (unsigned long long) s->stats.gets);
		cx_probe_result_free(&r);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	cx_objstore *s;
	cx_manifest *m;
	cx_err		err;
	int			rc;

	if (argc != 3)
	{
		fprintf(stderr, "usage: probe_cost <store uri> <N>\n");
		return 2;
	}
	if (cx_objstore_open(argv[1], NULL, 0, &s, &err) != CX_OK)
	{
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	rc = cx_manifest_load_latest(s, &m, &err) == CX_OK ? 0 : -1;
	if (rc == 0)
	{
		rc = probe_new_keys(s, m, atoi(argv[2]), &err);
		cx_manifest_free(m);
	}
	if (rc != 0)
		fprintf(stderr, "%s\n", err.msg);
	cx_obj_close(s);
	return rc == 0 ? 0 : 1;
}
