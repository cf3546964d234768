/*
 * ctxstore/engine.h — the storage engine's public API: everything the
 * PostgreSQL side (fdw/, bgworker/, pgside/) may call.  The engine is plain C
 * (no PostgreSQL headers); every fallible call returns a cx_code and fills a
 * cx_err, and never longjmps.  Nothing here includes an internal header.
 */
#ifndef CTXSTORE_ENGINE_H
#define CTXSTORE_ENGINE_H

#include "ctxstore/error.h"
#include "ctxstore/util.h"
#include "ctxstore/objstore.h"
#include "ctxstore/layout.h"
#include "ctxstore/schema.h"
#include "ctxstore/table.h"
#include "ctxstore/memwal.h"
#include "ctxstore/scan.h"
#include "ctxstore/vector.h"
#include "ctxstore/iceberg.h"

#endif							/* CTXSTORE_ENGINE_H */
