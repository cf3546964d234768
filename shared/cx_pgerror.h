/*
 * cx_pgerror.h — turning engine errors (cx_err) into PostgreSQL errors.
 *
 * The one place that maps cx_code to SQLSTATE, so the FDW and the workers
 * report the same failure the same way.  Usable from any PostgreSQL-side file
 * (fdw/, bgworker/); storage/ never includes it.
 */
#ifndef CX_PGERROR_H
#define CX_PGERROR_H

#include "postgres.h"

#include "ctxstore/engine.h"

/* The SQLSTATE (an ERRCODE_* value) an engine error code is reported as. */
extern int	cx_pg_errcode(cx_code code);

/* For the codes that are constraint violations (unique key, upsert
 * cardinality), the errmsg format (one %s: the store), else NULL: the
 * engine's message, which names the keys, is the DETAIL. */
extern const char *cx_pg_violation(cx_code code);

/*
 * Raises err at elevel: errmsg is the printf-style context ("could not read
 * store \"%s\""), errdetail the engine's message, plus a hint for the codes
 * that have an obvious next step.  Does not return when elevel >= ERROR.
 */
extern void cx_pg_report(int elevel, const cx_err *err, const char *fmt,...)
			pg_attribute_printf(3, 4);

#define cx_pg_error(err, ...) \
	do { \
		cx_pg_report(ERROR, (err), __VA_ARGS__); \
		pg_unreachable(); \
	} while (0)

#endif							/* CX_PGERROR_H */
