/*
 * cx_prune.c — skipping fragments and row groups by their statistics
 * (cx_prune.h has the rules).
 */
#include "scan/cx_prune.h"

#include <math.h>
#include <string.h>

#include "format/cx_encoding.h"

/* A predicate operand as statistics hold values. */
typedef struct operand
{
	const uint8_t *p;
	size_t		len;
	uint8_t		fixed[16];
} operand;

static bool
is_nan(cx_type type, const cx_datum *d)
{
	return (type == CX_T_FLOAT32 && isnan(d->v.f32)) ||
		(type == CX_T_FLOAT64 && isnan(d->v.f64));
}

/* false when the operand proves nothing (NULL, NaN, wrong shape). */
static bool
operand_of(cx_type type, const cx_datum *d, operand *o)
{
	size_t		width = (size_t) cx_type_width(type);

	if (d->isnull || is_nan(type, d) || width > sizeof(o->fixed))
		return false;
	if (width > 0)
	{
		cx_fixed_encode(type, d, o->fixed);
		o->p = o->fixed;
		o->len = width;
	}
	else
	{
		o->p = d->v.bytes.ptr;
		o->len = d->v.bytes.len;
	}
	return true;
}

static int
cmp_min(cx_type type, const cx_colstats *st, const operand *o)
{
	return cx_stats_cmp(type, st->min, st->min_len, o->p, o->len);
}

static int
cmp_max(cx_type type, const cx_colstats *st, const operand *o)
{
	return cx_stats_cmp(type, st->max, st->max_len, o->p, o->len);
}

/* Whether some value in [min, max] may be equal to o. */
static bool
may_equal(cx_type type, const cx_colstats *st, const operand *o)
{
	return !(st->has_min && cmp_min(type, st, o) > 0) &&
		!(st->has_max && cmp_max(type, st, o) < 0);
}

static bool
starts_with(const uint8_t *p, size_t len, const operand *prefix)
{
	return len >= prefix->len &&
		(prefix->len == 0 || memcmp(p, prefix->p, prefix->len) == 0);
}

/* Values starting with the prefix lie at or above it, and below every value
 * greater than it that does not start with it. */
static bool
may_have_prefix(cx_type type, const cx_colstats *st, const operand *o)
{
	if (type != CX_T_STRING && type != CX_T_BINARY)
		return true;
	if (st->has_max && cmp_max(type, st, o) < 0)
		return false;
	return !(st->has_min && cmp_min(type, st, o) > 0 &&
			 !starts_with(st->min, st->min_len, o));
}

/* One comparison of the column with operand o. */
static bool
may_compare(cx_type type, const cx_colstats *st, cx_pred_op op,
			const operand *o)
{
	switch (op)
	{
		case CX_PRED_EQ:
		case CX_PRED_IN:
			return may_equal(type, st, o);
		case CX_PRED_NE:
			return !(st->has_min && st->has_max && cmp_min(type, st, o) == 0 &&
					 cmp_max(type, st, o) == 0);
		case CX_PRED_LT:
			return !(st->has_min && cmp_min(type, st, o) >= 0);
		case CX_PRED_LE:
			return !(st->has_min && cmp_min(type, st, o) > 0);
		case CX_PRED_GT:
			return !(st->has_max && cmp_max(type, st, o) <= 0);
		case CX_PRED_GE:
			return !(st->has_max && cmp_max(type, st, o) < 0);
		case CX_PRED_PREFIX:
			return may_have_prefix(type, st, o);
		default:
			return true;
	}
}

bool
cx_prune_may_match(cx_type type, const cx_colstats *st, const cx_pred *p)
{
	if (st == NULL)
		return true;
	if (p->op == CX_PRED_IS_NULL)
		return st->null_count > 0;
	if (p->op == CX_PRED_IS_NOT_NULL)
		return st->value_count > 0;
	if (st->value_count == 0)
		return false;
	if (!cx_type_has_stats(type))
		return true;
	for (uint32_t i = 0; i < p->nvalues; i++)
	{
		operand		o;

		if (!operand_of(type, &p->values[i], &o) ||
			may_compare(type, st, p->op, &o))
			return true;
		if (p->op != CX_PRED_IN)
			return false;
	}
	/* An IN list none of whose values may be present; any other operator
	 * without an operand is malformed and proves nothing. */
	return p->op != CX_PRED_IN;
}

bool
cx_prune_may_beat(cx_type type, const cx_colstats *st, const cx_datum *bound,
				  bool desc, bool nulls_win)
{
	operand		o;

	if (st == NULL || (nulls_win && st->null_count > 0))
		return true;
	if (st->value_count == 0)
		return false;
	if (!cx_type_has_stats(type) || !operand_of(type, bound, &o))
		return true;
	return may_compare(type, st, desc ? CX_PRED_GT : CX_PRED_LT, &o);
}

int
cx_prune_order_cmp(cx_type type, const cx_colstats *a, const cx_colstats *b,
				   bool desc)
{
	bool		ka = a != NULL && (desc ? a->has_max : a->has_min);
	bool		kb = b != NULL && (desc ? b->has_max : b->has_min);
	int			c;

	if (!cx_type_has_stats(type) || (!ka && !kb))
		return 0;
	if (!ka || !kb)
		return ka ? 1 : -1;		/* the unknown one first */
	c = desc ? cx_stats_cmp(type, b->max, b->max_len, a->max, a->max_len) :
		cx_stats_cmp(type, a->min, a->min_len, b->min, b->min_len);
	return c;
}
