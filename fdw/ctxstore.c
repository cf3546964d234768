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
#include "utils/guc.h"

#include "ctxstore_fdw.h"
#include "cx_writer_protocol.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

int			cxfdw_max_transaction_kb = 1024 * 1024;

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
