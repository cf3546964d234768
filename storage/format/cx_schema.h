/*
 * cx_schema.h — column types, table schemas and the value carrier (cx_datum).
 *
 * The engine knows a small set of physical types.  Each PostgreSQL type maps
 * to one of them in fdw/ (docs/FORMAT.md lists the mapping); types the engine
 * has no native form for travel as CX_T_EXTERNAL: the type's binary
 * send/receive bytes, tagged with the PostgreSQL type name so a mismatch is
 * caught instead of decoded as garbage.
 */
#ifndef CX_SCHEMA_H
#define CX_SCHEMA_H

#include "ctxstore/schema.h"
#include "util/cx_buf.h"

#define CX_T_MAX CX_T_LIST

/* What the engine knows of each type (cx_schema.c).  The lookups below are
 * inline: the row codec, the column builders and the statistics ask them
 * once per value. */
typedef struct cx_type_info
{
	const char *name;
	int			width;
	bool		has_stats;
} cx_type_info;

extern const cx_type_info cx_type_infos[CX_T_MAX + 1];

static inline bool
cx_type_is_valid(int t)
{
	return t >= CX_T_BOOL && t <= CX_T_MAX;
}

/* Width in bytes of a fixed-width type; 0 for variable-width and lists. */
static inline int
cx_type_width(cx_type t)
{
	return cx_type_is_valid(t) ? cx_type_infos[t].width : 0;
}

/* Whether min/max statistics are kept for the type. */
static inline bool
cx_type_has_stats(cx_type t)
{
	return cx_type_is_valid(t) && cx_type_infos[t].has_stats;
}

/* The largest user field id of s (0 if none). */
int32_t		cx_schema_max_user_field_id(const cx_schema *s);

/* Checks a schema built by hand (cx_schema_add() already enforces this):
 * known types, no list of lists, ext_type exactly for external columns,
 * names non-empty and unique.  CX_ERR_INVALID names the column. */
cx_code		cx_schema_validate(const cx_schema *s, cx_err *err);
#endif							/* CX_SCHEMA_H */
