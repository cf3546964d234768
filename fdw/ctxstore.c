/*
 * ctxstore.c — the backend side's set-up (cxfdw_init, called by _PG_init in
 * shared/cx_module.c) and the FDW handler.
 */
#include "postgres.h"

#include "fmgr.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"

#include "ctxstore_fdw.h"

static emit_log_hook_type prev_emit_log_hook = NULL;

/*
 * The server log never repeats a statement that carries credentials: the
 * validator's own errors hide it (errhidestmt), and this catches the rest,
 * those PostgreSQL raises about such a statement ("user mapping ... already
 * exists", a syntax error) and the lines log_statement and
 * log_min_duration_statement write for it.
 */
static void
hide_secret_statements(ErrorData *edata)
{
	if (debug_query_string != NULL && cxfdw_mentions_secret(debug_query_string))
	{
		edata->hide_stmt = true;
		if (edata->message != NULL &&
			strstr(edata->message, debug_query_string) != NULL)
			edata->message = pstrdup("statement hidden by ctxstore: it carries user-mapping credentials");
	}
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

void
cxfdw_init(void)
{
	cxfdw_xact_register();
	cx_register_recorded_flush(cxfdw_flush_recorded);
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = hide_secret_statements;
}

PG_FUNCTION_INFO_V1(ctxstore_fdw_handler);

Datum
ctxstore_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	cxfdw_scan_routine(routine);
	cxfdw_modify_routine(routine);
	routine->ImportForeignSchema = cxfdw_import_schema;
	PG_RETURN_POINTER(routine);
}
