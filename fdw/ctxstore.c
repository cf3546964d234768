/*
 * ctxstore.c — module entry: _PG_init, the GUCs and the FDW handler.
 *
 * Loaded through shared_preload_libraries, the module also sets up the writer
 * worker (bgworker/); loaded on demand by a backend it can still read stores,
 * and refuses writes with a hint (cx_modify.c).
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "tcop/tcopprot.h"
#include "utils/elog.h"
#include "utils/guc.h"

#include "ctxstore_fdw.h"
#include "cx_writer_protocol.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static emit_log_hook_type prev_emit_log_hook = NULL;

int			cxfdw_max_transaction_kb = 1024 * 1024;

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
_PG_init(void)
{
	DefineCustomIntVariable("ctxstore.max_transaction_bytes",
							"Most row data one transaction may write to ctxstore foreign tables.",
							"Rows stay in the backend's memory until COMMIT hands them to the writer worker.",
							&cxfdw_max_transaction_kb,
							1024 * 1024, 1, INT_MAX,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	cxfdw_xact_register();
	cx_writer_init_module();
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = hide_secret_statements;
	MarkGUCPrefixReserved("ctxstore");
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
