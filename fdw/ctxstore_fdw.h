/*
 * ctxstore_fdw.h — declarations shared by the files of the foreign-data
 * wrapper (fdw/).  Not installed; the engine (storage/) never sees it.
 *
 * One file per concern:
 *   ctxstore.c       the backend side's set-up, the handler
 *   cx_option.c      option validation and reading a table's options
 *   cx_types.c       PostgreSQL type <-> engine type and value conversion
 *   cx_columns.c     store schemas from table columns, column matching
 *   cx_store.c       per-backend store handles and manifest cache, access checks
 *   cx_scan.c        planner, executor scan and EXPLAIN
 *   cx_keypath.c     scans that read only given keys (key = / IN / ANY)
 *   cx_pushdown.c    clauses the store skips fragments and row groups by
 *   cx_upper.c       ORDER BY / LIMIT paths answered by the scan
 *   cx_topk.c        the scan's bounded top-k and early stop (cx_topk.h)
 *   cx_vector.c      the distance functions (cx_vector.h)
 *   cx_modify.c      INSERT, COPY FROM, UPDATE, DELETE, TRUNCATE into the
 *                    transaction's buffer
 *   cx_xact.c        the transaction buffers, their key maps and their
 *                    commit / abort hooks
 *   cx_tableopts.c   write settings from table options, the table key check
 *   cx_relcache.c    the per-backend cache of tables' CxRelInfo and settings
 *   cx_functions.c   SQL functions in schema ctxstore
 *   cx_import.c      IMPORT FOREIGN SCHEMA: one table per store below a prefix
 *   cx_alter.c       ALTER FOREIGN TABLE: the event triggers that change the
 *                    store's columns
 *   cx_maintenance.c SQL functions that ask the writer (flush, merge, ...)
 *   cx_writer_submit.c  the writer protocol's backend side: submit and wait
 *   cx_workers_view.c   the ctxstore.workers view
 *   cx_parallel.c    parallel scans: partial paths, the shared state
 *   cx_analyze.c     ANALYZE: the row sample
 *
 * What the workers and this side share (module entry, GUCs, the option
 * table, engine errors -> ereport, the writer protocol) is in shared/.
 */
#ifndef CTXSTORE_FDW_H
#define CTXSTORE_FDW_H

#include "postgres.h"

#include "commands/explain.h"
#include "foreign/fdwapi.h"
#include "utils/relcache.h"

#include "ctxstore/engine.h"
#include "cx_module.h"

/* ---- type mapping (cx_types.c) ---- */

/* How values of one PostgreSQL column travel as engine values. */
typedef struct CxTypeInfo
{
	Oid			typid;			/* the column's type (domains: their base) */
	int32		typmod;
	cx_type		type;			/* engine type */
	cx_type		elem_type;		/* element engine type of a CX_T_LIST */
	char	   *ext_type;		/* type name of a CX_T_EXTERNAL, else NULL */
	/* numeric(p,s) stored as a DECIMAL (cx_column.precision/scale); 0 and 0
	 * for canonical text */
	uint8		precision;
	uint8		scale;
	/* Arrays stored as lists: the element type and its storage properties. */
	Oid			elem_typid;
	int16		elem_len;
	bool		elem_byval;
	char		elem_align;
	/* Types with a text form (numeric, jsonb) or a binary one (external):
	 * their output/send and input/receive functions, looked up once. */
	FmgrInfo	out_func;
	FmgrInfo	in_func;
	Oid			in_ioparam;
} CxTypeInfo;

/* Where the items of a list value are: cx_row_decode() hands them out as an
 * items array, a row group as a slice of a child column vector. */
typedef enum CxListForm
{
	CX_LIST_ITEMS,
	CX_LIST_SLICE
} CxListForm;

extern void cxfdw_type_resolve(Oid typid, int32 typmod, CxTypeInfo *ti);
/* The PostgreSQL type values of a native engine type are read as. */
extern Oid	cxfdw_native_type_oid(cx_type type);
extern char *cxfdw_type_describe(cx_type type, cx_type elem_type,
								 const char *ext_type, int precision,
								 int scale);
/* The same for a store column and for a table column's type. */
extern char *cxfdw_column_describe(const cx_column *c);
extern char *cxfdw_typeinfo_describe(const CxTypeInfo *ti);
/* Conversions allocate in CurrentMemoryContext; a cx_datum filled by
 * cxfdw_to_cx points into that memory or into the Datum. */
extern void cxfdw_to_cx(const CxTypeInfo *ti, Datum value, cx_datum *out);
/* The same for a value to be stored (INSERT, UPDATE): also raises for what
 * the fragment format cannot hold (a timestamp beyond the Unix microsecond
 * range, NaN in a DECIMAL column), before anything reaches the writer. */
extern void cxfdw_to_cx_stored(const CxTypeInfo *ti, Datum value,
							   cx_datum *out);
extern Datum cxfdw_from_cx(const CxTypeInfo *ti, const cx_datum *d,
						   CxListForm form);

/* ---- a foreign table as the wrapper sees it (cx_option.c) ---- */

typedef struct CxColumnDef
{
	char	   *attname;		/* NULL if the attribute is dropped */
	char	   *name;			/* store column name (column_name or attname) */
	CxTypeInfo	type;
} CxColumnDef;

typedef struct CxRelInfo
{
	Oid			relid;
	char	   *relname;
	Oid			userid;			/* whose user mapping and privileges apply */
	char	   *uri;
	uint64		version;		/* pinned version, 0 = the latest */
	/* Options the engine opens the store with (server + user mapping);
	 * may hold secrets, so never shown anywhere. */
	cx_option  *store_options;
	int			nstore_options;
	bool		has_credentials;	/* the user mapping supplies some */
	bool		env_credentials;	/* allow_env_credentials in effect */
	int			natts;
	CxColumnDef *columns;		/* one per attribute, attnum - 1 */
} CxRelInfo;

extern CxRelInfo *cxfdw_rel_info(Relation rel, Oid userid);
/* The same from this backend's cache (cx_relcache.c), for the write path:
 * read-only, valid until the end of the transaction. */
extern const CxRelInfo *cxfdw_rel_info_cached(Relation rel, Oid userid);
/* Only relid, relname and the columns (no options, no credentials). */
extern CxRelInfo *cxfdw_rel_columns(Relation rel);
/* The store options of ri->uri for ri->userid through server serverid; the
 * one place they are resolved.  IMPORT FOREIGN SCHEMA uses it on a CxRelInfo
 * with only uri and userid set (relname NULL: no table yet). */
extern void cxfdw_resolve_store_options(CxRelInfo *ri, Oid serverid);
extern bool cxfdw_uri_is_file(const char *uri);
/* The one spelling of a store URI (palloc'd); raises the validator's error
 * for a URI that is not one. */
extern char *cxfdw_canonical_uri(const char *uri);
/* Whether a statement mentions a user-mapping option whose value is a
 * secret (the server log then leaves the statement out). */
extern bool cxfdw_mentions_secret(const char *sql);
/* The default of a foreign-table option, as text. */
extern const char *cxfdw_option_default(const char *name);

/* While pushed, errors name the column being converted (att, or none if
 * att is -1) in their CONTEXT line (cx_types.c). */
typedef struct CxConvErrContext
{
	ErrorContextCallback cb;
	const CxRelInfo *ri;
	int			att;
} CxConvErrContext;

extern void cxfdw_conv_errcontext_push(CxConvErrContext *ec,
									   const CxRelInfo *ri);
extern void cxfdw_conv_errcontext_pop(CxConvErrContext *ec);

/* ---- columns and store schemas (cx_columns.c) ---- */

/* How a table's attributes line up with a store schema's columns. */
typedef struct CxBinding
{
	const cx_schema *schema;
	int		   *att_col;		/* per attribute: store column, -1 if dropped */
	int		   *col_att;		/* per store column: attribute index, or -1
								 * if the table has no such column */
} CxBinding;

extern cx_schema *cxfdw_schema_from_rel(const CxRelInfo *ri);
extern void cxfdw_bind(const CxRelInfo *ri, const cx_schema *schema,
					   CxBinding *b);
/* The engine's fit rule (cx_table_fits) for the table's columns and the
 * key it declares (NULL: not checked); *why says what failed. */
extern bool cxfdw_table_fits(const CxRelInfo *ri, const char *key_column,
							 bool unique_key, const cx_manifest *base,
							 cx_misfit *why);

/* ---- store handles and manifests (cx_store.c) ---- */

typedef enum CxAccess
{
	CX_ACCESS_READ,
	CX_ACCESS_WRITE
} CxAccess;

typedef struct CxStore CxStore;

extern CxStore *cxfdw_store_open(const CxRelInfo *ri, CxAccess access);
/* A handle of the caller's own, after the same checks; not cached, so the
 * caller closes it (cx_obj_close), also on error. */
extern cx_objstore *cxfdw_store_connect(const CxRelInfo *ri, CxAccess access);
extern cx_objstore *cxfdw_store_handle(CxStore *st);
extern const cx_manifest *cxfdw_store_manifest(CxStore *st, uint64 version);
/* What a write checks a table against: the store's schema and key, cached
 * per handle once the store has recorded both (they never change then). */
extern const cx_manifest *cxfdw_store_write_base(CxStore *st, bool *cached);
extern void cxfdw_store_forget_write_base(CxStore *st);

/* ---- transaction buffers (cx_xact.c) ---- */

typedef struct CxPending CxPending;

extern void cxfdw_xact_register(void);
extern CxPending *cxfdw_pending_find(Oid relid);
extern CxPending *cxfdw_pending_open(const CxRelInfo *ri, CxStore *st);
extern const cx_schema *cxfdw_pending_schema(const CxPending *p);
/* The store column that is the key of the pending rows. */
extern const char *cxfdw_pending_key(const CxPending *p);
extern const CxStoreSettings *cxfdw_pending_settings(const CxPending *p);
extern void cxfdw_pending_append(CxPending *p, cx_row_kind kind,
								 const cx_datum *values);
extern uint64 cxfdw_pending_rows(const CxPending *p);
/* The bytes of the rows buffered so far; valid until the next append. */
extern const uint8_t *cxfdw_pending_data(const CxPending *p, size_t *len);
extern cx_row_kind cxfdw_pending_decode(const CxPending *p, size_t *pos,
										size_t end, cx_datum *values,
										cx_buf *scratch);

/* A key as the engine compares keys (bytewise); p points into fixed or
 * into the value. */
typedef struct CxKeyBytes
{
	const uint8_t *p;
	size_t		len;
	uint8_t		fixed[CX_KEY_FIXED_MAX];
} CxKeyBytes;

extern void cxfdw_key_bytes(cx_type type, const cx_datum *d, CxKeyBytes *out);

/* The newest buffered row of each key, and where the newest TRUNCATE marker
 * (a DELETE with a NULL key) hides the rows before it. */
typedef struct CxKeyMap CxKeyMap;

extern CxKeyMap *cxfdw_pending_keymap(const CxPending *p, size_t end);
extern const CxKeyMap *cxfdw_pending_keys(CxPending *p);
extern bool cxfdw_keymap_find(const CxKeyMap *m, const CxKeyBytes *key,
							  size_t *offset, cx_row_kind *kind);
extern bool cxfdw_keymap_truncated(const CxKeyMap *m, size_t *visible_from);

/* ---- write settings (cx_option.c, cx_tableopts.c) ---- */

/* The settings of a table that sets none of them. */
extern void cxfdw_settings_default(CxStoreSettings *s);
/* Sets the setting of the table option name from value, read by the
 * validator's parser; returns its number, or -1 if the option is no such
 * setting. */
extern int	cxfdw_setting_set(CxStoreSettings *s, const char *name,
							  const char *value);
extern void cxfdw_table_settings(const CxRelInfo *ri, CxStoreSettings *out);
/* The same, kept with ri's cache entry when ri came from
 * cxfdw_rel_info_cached (cx_relcache.c). */
extern void cxfdw_table_settings_cached(const CxRelInfo *ri,
										CxStoreSettings *out);

/* ---- pinned versions (cx_pins.c) ---- */

/* The base versions tables of this database pin (option version) on the
 * store at uri, palloc'd; *n of them. */
extern uint64 *cxfdw_pinned_versions(const char *uri, uint32 *n);
/* Puts those versions in s, for the writer to hand the maintenance
 * worker's GC (more than CX_PINS_MAX: pins_overflow). */
extern void cxfdw_settings_tell_pins(const char *uri, CxStoreSettings *s);
/* The base versions ctxstore.gc() on ri's store would retain now (ri's
 * lifecycle options, this database's pins), less those the store records
 * a GC collected, palloc'd, newest first, *n of them (cx_lifecycle.c). */
extern uint64 *cxfdw_retained_versions(const CxRelInfo *ri,
									   cx_objstore *store, size_t *n);
extern bool cxfdw_version_in(const uint64 *retained, size_t n,
							 uint64 version);

/* Raises the error of a read of ri that met err when ri is pinned to a
 * version the store records a GC collected and err is an object missing;
 * else returns (cx_lifecycle.c). */
extern void cxfdw_raise_if_collected(const CxRelInfo *ri,
									 cx_objstore *store, const cx_err *err);

/* Raises unless upsert_key is unset or names a column other than the key. */
extern void cxfdw_check_upsert_key(const CxRelInfo *ri,
								   const CxStoreSettings *s);
extern void cxfdw_check_table_key(const CxRelInfo *ri,
								  const CxStoreSettings *s,
								  const cx_manifest *base);

/* ---- the writer protocol's backend side (cx_writer_submit.c) ---- */

/*
 * Submits the requests and waits until every one is acknowledged.  On any
 * failure it raises an ERROR (engine error mapped to a SQLSTATE, worker death,
 * timeout, cancel); on return every batch is durable (and visible if its
 * settings asked for seal_on_insert).  results may be NULL.  Must not be
 * called without cx_writer_available().
 */
void		cx_writer_submit(const CxWriteRequest *requests, int nrequests,
							 CxWriteResult *results);

/* Asks the writer to flush, merge or clean up the store of request (no
 * schema, no rows) and waits for the outcome, as cx_writer_submit(). */
void		cx_writer_control(CxControlKind kind, const CxWriteRequest *request,
							  CxWriteResult *result);

/* The recovery worker's flush (cx_maintenance.c), a cx_recorded_flush_fn. */
extern void cxfdw_flush_recorded(Oid relid, Oid userid, const char *uri,
								 CxWriteResult *res);

/* ---- key lookups (cx_keypath.c) ---- */

/* A restriction clause that names keys: key = value or key = ANY (values). */
typedef struct CxKeyClause
{
	Expr	   *clause;			/* the whole clause (it stays a qual) */
	Expr	   *values;			/* the side that is not the key */
	bool		is_array;		/* = ANY / IN: values is an array */
	Oid			value_type;		/* of a value (an element of the array) */
	int			key_att;		/* the key's attribute, 0-based */
} CxKeyClause;

extern int	cxfdw_key_attribute(const CxRelInfo *ri);
extern bool cxfdw_key_type_supported(const CxTypeInfo *ti);
extern bool cxfdw_key_clause(RelOptInfo *baserel, const CxRelInfo *ri,
							 CxKeyClause *out);
extern void cxfdw_key_clause_of_plan(Expr *clause, Expr *values,
									 const CxRelInfo *ri, CxKeyClause *out);
extern double cxfdw_key_clause_rows(const CxKeyClause *kc);
/* Whether the snapshot ri reads has a live row of key (cx_scan.c). */
extern bool cxfdw_key_committed(const CxRelInfo *ri, const CxTypeInfo *key_type,
								const cx_datum *key);
extern cx_datum *cxfdw_key_values(const CxKeyClause *kc, ExprState *values,
								  const CxTypeInfo *ti, ExprContext *econtext,
								  uint32 *n);
/* The column's values a value (is_array: the elements of an array) of
 * value_type stands for: NULLs and numbers no value of the column can equal
 * left out. */
extern cx_datum *cxfdw_values_of(bool is_array, Oid value_type, Datum v,
								 bool isnull, const CxTypeInfo *ti, uint32 *n);
/* Whether values of value_type convert exactly to the column's (its own
 * type, varchar for text, or a number of another width). */
extern bool cxfdw_value_type_convertible(const CxTypeInfo *ti, Oid value_type);
/* The attribute (0-based) node is a column of relid under any
 * binary-compatible relabelling (as varchar = text has), or -1. */
extern int	cxfdw_column_att(Node *node, Index relid);
/* Whether expr can be computed once when the scan begins: no column of
 * relid, nothing volatile. */
extern bool cxfdw_is_scan_constant(Node *expr, Index relid);

/* ---- predicate pushdown (cx_pushdown.c) ---- */

typedef struct CxPushdown CxPushdown;

extern bool cxfdw_stats_ordered_type(Oid typid);
extern List *cxfdw_pushdown_classify(RelOptInfo *baserel, const CxRelInfo *ri,
									 List **values);
/* Rows of snap the plan-time constant clauses do not skip. */
extern double cxfdw_pushdown_rows(cx_snapshot *snap, List *conds,
								  List *values, const CxRelInfo *ri);
extern CxPushdown *cxfdw_pushdown_begin(List *conds, List *values,
										PlanState *ps);
extern cx_pred *cxfdw_pushdown_preds(const CxPushdown *pd,
									 const CxRelInfo *ri,
									 const CxBinding *bind,
									 ExprContext *econtext, uint32 *n);
extern void cxfdw_pushdown_explain(const CxPushdown *pd,
								   ForeignScanState *node, ExplainState *es);
extern void cxfdw_pushdown_explain_counts(const cx_tablescan_stats *st,
										  ExplainState *es);

/* ---- reading rows (cx_scan.c), for ANALYZE (cx_analyze.c) ---- */

/* Converts the attributes in retrieved (attribute numbers, 1-based) of row
 * `row` of the group scan returned last into values/isnull (indexed by
 * attribute number - 1, or, when narrow, by position in retrieved),
 * allocating in CurrentMemoryContext. */
extern void cxfdw_scan_row_values(const CxRelInfo *ri, const CxBinding *bind,
								  List *retrieved, const cx_tablescan *scan,
								  uint32 row, bool narrow, Datum *values,
								  bool *isnull);
extern void cxfdw_analyze_routine(FdwRoutine *routine);

/* ---- parallel scans (cx_parallel.c; the scan's side in cx_scan.c) ---- */

extern void cxfdw_parallel_routine(FdwRoutine *routine);
/* Pages the planner and ANALYZE count for a snapshot: its bytes. */
extern BlockNumber cxfdw_snapshot_pages(const cx_snapshot *snap);
/* Adds a parallel-aware partial path of the scan whose serial run (after
 * startup) costs run, when the table is big enough. */
extern void cxfdw_add_partial_path(PlannerInfo *root, RelOptInfo *baserel,
								   Cost startup, Cost run);
extern cx_snapshot *cxfdw_scan_snapshot(ForeignScanState *node);
extern bool cxfdw_scan_has_pending(ForeignScanState *node);
extern void cxfdw_scan_set_claim(ForeignScanState *node,
								 bool (*claim) (void *arg, uint32_t *unit),
								 void *arg);
extern void cxfdw_scan_begin_worker(ForeignScanState *node,
									const cx_snapshot_pin *pin,
									bool store_rows);

/* ---- the callbacks (cx_scan.c, cx_modify.c) ---- */

extern void cxfdw_scan_routine(FdwRoutine *routine);
extern void cxfdw_modify_routine(FdwRoutine *routine);
extern List *cxfdw_import_schema(ImportForeignSchemaStmt *stmt, Oid serverid);

#endif							/* CTXSTORE_FDW_H */
