/*
 * cx_pgerror.c — engine error codes as PostgreSQL errors.
 *
 * The engine reports failures as a cx_code plus a message naming the object
 * involved (never a credential).  Everything PostgreSQL-side raises them
 * through cx_pg_report(), so a given failure always carries the same SQLSTATE
 * and the engine's words end up in the DETAIL, under a message that says what
 * the backend was doing.
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "cx_pgerror.h"

int
cx_pg_errcode(cx_code code)
{
	switch (code)
	{
		case CX_ERR_NOT_FOUND:
			return ERRCODE_UNDEFINED_FILE;
		case CX_ERR_EXISTS:
			return ERRCODE_DUPLICATE_FILE;
		case CX_ERR_CORRUPT:
			return ERRCODE_DATA_CORRUPTED;
		case CX_ERR_IO:
			return ERRCODE_IO_ERROR;
		case CX_ERR_INVALID:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case CX_ERR_NOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case CX_ERR_CONFLICT:
			return ERRCODE_T_R_SERIALIZATION_FAILURE;
		case CX_ERR_SCHEMA:
			return ERRCODE_DATATYPE_MISMATCH;
		case CX_ERR_UNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case CX_ERR_TIMEOUT:
			/* Not 57014 (query_canceled): nobody cancelled anything. */
			return ERRCODE_SYSTEM_ERROR;
		case CX_ERR_AUTH:
			return ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION;
		case CX_ERR_FENCED:
			return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		case CX_ERR_LIMIT:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case CX_ERR_PERMISSION:
			return ERRCODE_INSUFFICIENT_PRIVILEGE;
		case CX_ERR_NOSPACE:
			return ERRCODE_DISK_FULL;
		case CX_ERR_IO_PERMANENT:
			/* As CX_ERR_IO; the engine just does not retry it. */
			return ERRCODE_IO_ERROR;
		case CX_ERR_UNIQUE:
			return ERRCODE_UNIQUE_VIOLATION;
		case CX_ERR_CARDINALITY:
			return ERRCODE_CARDINALITY_VIOLATION;
		case CX_ERR_BUSY:
			return ERRCODE_LOCK_NOT_AVAILABLE;
		case CX_ERR_CANCELED:
			return ERRCODE_QUERY_CANCELED;
		case CX_OK:
			break;
	}
	/* CX_OK or a code this build does not know: a bug, not a user error. */
	return ERRCODE_INTERNAL_ERROR;
}

/* The next step for the codes that have an obvious one, else NULL. */
static const char *
hint_for(cx_code code)
{
	switch (code)
	{
		case CX_ERR_NOT_FOUND:
			return "If the detail names an object a version lists, the store lacks it: \"ctxstore-inspect URI verify\" lists every such object; restore it, or read an older version through a foreign table with the option version.";
		case CX_ERR_CORRUPT:
			return "The object named in the detail is damaged; \"ctxstore-inspect URI verify\" checks a whole store.";
		case CX_ERR_CONFLICT:
			return "Other writers kept committing to the store; retry the transaction.";
		case CX_ERR_AUTH:
			return "Check the credentials in the user mapping for this server.";
		case CX_ERR_FENCED:
			return "Another writer took over the store's shard; check that no two clusters share a ctxstore.shard_id.";
		case CX_ERR_PERMISSION:
			return "The store refused access to the object named in the detail: for a file:// store, let the server's operating-system user write the store's directory; for s3:// or az://, grant the credentials in the user mapping write access.";
		case CX_ERR_NOSPACE:
			return "The disk or quota holding the store is full; free space, then retry.";
		case CX_ERR_TIMEOUT:
			return "The store did not answer within the server's request_timeout on any attempt retry_max_attempts and retry_max_seconds allowed; retry once it answers. A COMMIT that failed so may have been applied: look for its rows first.";
		case CX_ERR_UNIQUE:
			return "To skip rows whose key exists use INSERT ... ON CONFLICT DO NOTHING; to replace them, set the table option unique_key 'false' or use UPDATE.";
		case CX_ERR_BUSY:
			return "Another compaction of the store is running (the detail names its holder); retry once it ends, or once its lease expires if that holder is gone.";
		case CX_ERR_CARDINALITY:
			return "An upsert supersedes at most one row: delete all but one of the rows holding that upsert-key value.";
		default:
			return NULL;
	}
}

const char *
cx_pg_violation(cx_code code)
{
	switch (code)
	{
		case CX_ERR_UNIQUE:
			return "duplicate key value violates the unique key of ctxstore store \"%s\"";
		case CX_ERR_CARDINALITY:
			return "an insert into ctxstore store \"%s\" matches more than one row by its upsert key";
		default:
			return NULL;
	}
}

void
cx_pg_report(int elevel, const cx_err *err, const char *fmt,...)
{
	StringInfoData msg;
	const char *hint = hint_for(err->code);

	initStringInfo(&msg);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}

	ereport(elevel,
			errcode(cx_pg_errcode(err->code)),
			errmsg_internal("%s", msg.data),
			err->msg[0] ? errdetail_internal("%s", err->msg) : 0,
			hint ? errhint("%s", hint) : 0);
	pfree(msg.data);
}
