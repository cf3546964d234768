/*
 * cx_vector_column.c — the vectors of a list column, read in place for the
 * distance kernels (ctxstore/vector.h): a row's elements are contiguous in
 * the child vector's fixed-width values.
 */
#include "format/cx_fragment.h"
#include "ctxstore/vector.h"

cx_vector_state
cx_colvec_vector(const cx_colvec *list, uint32_t i, cx_type elem_type,
				 const void **items, uint32_t *n)
{
	const cx_colvec *elems = list->child;
	uint32_t	start;

	if (list->type != CX_T_LIST || elems == NULL || elems->type != elem_type)
		return CX_VECTOR_WRONG_TYPE;
	if (cx_colvec_isnull(list, i))
		return CX_VECTOR_NULL;
	start = list->offsets[i];
	*n = list->offsets[i + 1] - start;
	for (uint32_t e = start; e < start + *n; e++)
		if (cx_colvec_isnull(elems, e))
			return CX_VECTOR_NULL_ELEMENT;
	*items = elems->fixed + (size_t) start * elems->width;
	return CX_VECTOR_OK;
}
