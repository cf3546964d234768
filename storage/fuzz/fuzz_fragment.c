/*
 * fuzz_fragment.c — libFuzzer harness for the fragment reader: the input is
 * a whole fragment object, opened from an in-memory store and read as a
 * scan and a point lookup would (cx_fragr_open, every row group whole and
 * one row of it, every chunk's page list).  Every value of a decoded column
 * is touched, so a column vector whose offsets or bitmaps do not fit its
 * buffers is an out-of-bounds read ASan reports.
 *
 * The fuzz build does not check page CRCs (FUZZING_BUILD_MODE_UNSAFE_FOR_
 * PRODUCTION), so mutated pages reach the decoders.
 */
#include <stdlib.h>

#include "format/cx_fragment.h"
#include "support.h"

/* Sums every byte a column vector's shape says it holds; the sum is kept
 * in a volatile so that the reads are not optimised away. */
static volatile uint8_t sink;

static void
touch_column(const cx_colvec *v, uint32_t nrows)
{
	uint8_t		acc = 0;

	if (v == NULL)
		return;
	for (uint32_t i = 0; i < nrows; i++)
	{
		if (cx_colvec_isnull(v, i))
			continue;
		if (v->fixed != NULL)
			for (uint32_t b = 0; b < v->width; b++)
				acc += v->fixed[(size_t) i * v->width + b];
		else if (v->offsets != NULL && v->child == NULL)
			for (uint32_t o = v->offsets[i]; o < v->offsets[i + 1]; o++)
				acc += v->bytes[o];
	}
	if (v->child != NULL && v->offsets != NULL)
		touch_column(v->child, v->offsets[nrows]);
	sink = acc;
}

static void
touch_group(const cx_fragr *r, const cx_rowgroup *g)
{
	uint32_t	ncols = cx_fragr_schema(r)->ncolumns;

	for (uint32_t c = 0; c < ncols; c++)
		touch_column(cx_rowgroup_column(g, c), cx_rowgroup_rows(g));
}

static void
read_group(cx_fragr *r, uint32_t group)
{
	uint32_t	ncols = cx_fragr_schema(r)->ncolumns;
	uint32_t	rows = cx_fragr_group_rows(r, group);
	cx_rowgroup *g;
	cx_err		err;

	if (cx_fragr_read_group(r, group, NULL, &g, &err) == CX_OK)
	{
		touch_group(r, g);
		cx_rowgroup_free(g);
	}
	if (rows > 0 &&
		cx_fragr_read_rows(r, group, rows / 2, 1, NULL, &g, &err) == CX_OK)
	{
		touch_group(r, g);
		cx_rowgroup_free(g);
	}
	for (uint32_t c = 0; c < ncols; c++)
	{
		cx_page_info *pages = NULL;
		uint32_t	npages = 0;

		(void) cx_fragr_chunk_pages(r, group, c, &pages, &npages, &err);
		free(pages);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *key = "data/00000000000000000000000000000000.parquet";
	cx_objstore *s = fuzz_memstore(key, data, size);
	cx_fragr   *r;
	cx_err		err;

	if (s == NULL)
		return 0;
	if (cx_fragr_open(s, key, size, &r, &err) == CX_OK)
	{
		for (uint32_t g = 0; g < cx_fragr_num_groups(r); g++)
			read_group(r, g);
		cx_fragr_close(r);
	}
	cx_obj_close(s);
	return 0;
}
