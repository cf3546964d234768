/*
 * cx_compact_rowmap.c — where each input row of a compaction went, and the
 * carrying over of deletions committed while it ran (cx_compact_int.h).
 */
#include "maintenance/cx_compact_int.h"

#include <stdlib.h>

#include "merge/cx_merge_int.h"

cx_code
cx_compact_rowmap_init(cx_compact_rowmap *map, const cx_manifest *m,
					   const uint32_t *inputs, uint32_t ninputs, cx_err *err)
{
	map->ninputs = ninputs;
	map->nrows = calloc(ninputs ? ninputs : 1, sizeof(uint64_t));
	map->dest = calloc(ninputs ? ninputs : 1, sizeof(cx_row_dest *));
	if (map->nrows == NULL || map->dest == NULL)
	{
		cx_compact_rowmap_free(map);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory mapping compacted rows");
	}
	for (uint32_t i = 0; i < ninputs; i++)
	{
		uint64_t	rows = m->fragments[inputs[i]].rows;

		map->nrows[i] = rows;
		map->dest[i] = malloc(sizeof(cx_row_dest) * (rows ? rows : 1));
		if (map->dest[i] == NULL)
		{
			cx_compact_rowmap_free(map);
			return cx_err_set(err, CX_ERR_NOMEM, "out of memory mapping compacted rows");
		}
		for (uint64_t r = 0; r < rows; r++)
			map->dest[i][r].output = CX_ROW_NOT_WRITTEN;
	}
	return CX_OK;
}

void
cx_compact_rowmap_free(cx_compact_rowmap *map)
{
	for (uint32_t i = 0; map->dest != NULL && i < map->ninputs; i++)
		free(map->dest[i]);
	free(map->dest);
	free(map->nrows);
	map->dest = NULL;
	map->nrows = NULL;
	map->ninputs = 0;
}

static const cx_deletion_vector no_deletions = {0, NULL};

static const cx_deletion_vector *
deletions_of(const cx_manifest *m, int64_t f)
{
	return m->dvs != NULL ? &m->dvs[f] : &no_deletions;
}

/* The rows of `now` that `then` lacks (both ascending), mapped through dest
 * to rows of edited's outputs (from first_output on), gathered in carry. */
static cx_code
collect_new_deletions(const cx_deletion_vector *then,
					  const cx_deletion_vector *now, const cx_row_dest *dest,
					  uint64_t nrows, const cx_manifest *edited,
					  uint32_t first_output, cx_dvset *carry, cx_err *err)
{
	uint32_t	j = 0;

	for (uint32_t k = 0; k < now->n; k++)
	{
		uint32_t	row = now->rows[k];

		while (j < then->n && then->rows[j] < row)
			j++;
		if (j < then->n && then->rows[j] == row)
			continue;
		/* Live when read, so written: else the map is wrong. */
		if (row >= nrows || dest[row].output == CX_ROW_NOT_WRITTEN ||
			dest[row].output >= edited->nfragments - first_output)
			return cx_err_set(err, CX_ERR_INVALID,
							  "row %u deleted since compaction read it was not written",
							  row);
		if (cx_dvset_add(carry, edited->fragments[first_output + dest[row].output].path,
						 dest[row].row, err) != CX_OK)
			return err->code;
	}
	return CX_OK;
}

cx_code
cx_compact_carry_deletions(const cx_compact_rowmap *map,
						   const cx_manifest *read, const uint32_t *inputs,
						   const cx_manifest *now, cx_manifest *edited,
						   uint32_t first_output, uint64_t *carried,
						   cx_err *err)
{
	cx_dvset	carry = {0};
	cx_code		rc = CX_OK;

	*carried = 0;
	for (uint32_t i = 0; rc == CX_OK && i < map->ninputs; i++)
	{
		const char *path = read->fragments[inputs[i]].path;
		int64_t		f = cx_manifest_find_fragment(now, path);

		if (f < 0)
			rc = cx_manifest_lists_inputs(now, &path, 1, err);
		else
			rc = collect_new_deletions(deletions_of(read, inputs[i]),
									   deletions_of(now, f), map->dest[i],
									   map->nrows[i], edited, first_output,
									   &carry, err);
	}
	if (rc == CX_OK)
		rc = cx_dvset_apply(&carry, edited, carried, err);
	cx_dvset_free(&carry);
	return rc;
}
