/*
 * cx_xact.c — the rows a transaction wrote, until COMMIT hands them over.
 *
 * Backends never write a store.  Each foreign table a transaction inserts
 * into gets a buffer of rows encoded with cx_row_encode() in its store's
 * column order; at PRE_COMMIT all of them go to the writer worker in one
 * cx_writer_submit() call, which returns once they are durable (or raises,
 * which aborts the transaction).  ROLLBACK drops the buffers and ROLLBACK TO
 * SAVEPOINT cuts each one back to where the subtransaction began.
 *
 * Subtransaction ids grow monotonically within a transaction, so every row
 * written before subtransaction S began carries a smaller id than S and every
 * row written since carries S or a later id.  A buffer therefore only records
 * "marks" where the writing subtransaction changed, and aborting S truncates
 * it at the oldest trailing mark whose id is >= S.
 *
 * Encoded rows live in a malloc'd cx_buf (that is what cx_row_encode appends
 * to); the bookkeeping lives in TopTransactionContext.  Every exit of the
 * transaction (commit, abort, prepare) frees both.
 *
 * Key maps say which buffered row is the newest of each key (and where the
 * newest TRUNCATE marker hides what precedes it): scans build one over the
 * rows buffered when they begin, to shadow committed rows; inserts check
 * each row against the buffer's own, kept up to date by every append.
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "ctxstore_fdw.h"
#include "cx_pgerror.h"
#include "ctxstore/engine.h"
#include "cx_writer_protocol.h"

typedef struct CxMark
{
	SubTransactionId subid;		/* the subtransaction that wrote from here */
	size_t		offset;			/* rows.len where its rows begin */
	uint64		nrows;			/* row count at that point */
} CxMark;

struct CxPending
{
	Oid			relid;			/* hash key */
	int			seq;			/* tables in order of first write: 0, 1, ... */
	/* What the writer worker needs, copied from the table at first write. */
	char	   *uri;
	CxStore    *store;			/* the backend's handle (lives for good) */
	cx_option  *options;
	int			noptions;
	CxStoreSettings settings;	/* the table's write options */
	cx_schema  *schema;			/* the store's, or the table's for a new
								 * store; malloc'd */
	int			key_col;		/* the key's column in schema */
	cx_buf		rows;			/* malloc'd */
	uint64		nrows;
	CxKeyMap   *keys;			/* newest row per key, kept up to date once
								 * asked for; NULL: not built */
	CxMark	   *marks;
	int			nmarks;
	int			maxmarks;
};

/* Buffers of the current transaction by foreign table OID, or NULL. */
static HTAB *pending = NULL;

/* Bytes buffered by the current transaction, all tables together. */
static size_t pending_bytes = 0;

/* ---- keys of buffered rows ---- */

typedef struct CxKeyEntry
{
	CxKeyBytes	key;			/* hash key; bytes owned by the map */
	size_t		offset;			/* where the key's newest row begins */
	cx_row_kind kind;
} CxKeyEntry;

struct CxKeyMap
{
	HTAB	   *entries;
	MemoryContext cxt;
	size_t		visible_from;	/* rows before the newest TRUNCATE marker
								 * (0 if none) are hidden */
	bool		truncated;
};

/* The key as the engine compares keys: bytewise, the value of a fixed-width
 * type or the bytes of a variable-width one. */
void
cxfdw_key_bytes(cx_type type, const cx_datum *d, CxKeyBytes *out)
{
	(void) cx_datum_key_bytes(type, d, out->fixed, &out->p, &out->len);
}

static uint32
key_hash(const void *key, Size keysize)
{
	const CxKeyBytes *k = key;

	return hash_bytes(k->p, (int) k->len);
}

static int
key_match(const void *a, const void *b, Size keysize)
{
	const CxKeyBytes *x = a;
	const CxKeyBytes *y = b;

	return x->len == y->len && memcmp(x->p, y->p, x->len) == 0 ? 0 : 1;
}

static CxKeyMap *
keymap_create(MemoryContext parent)
{
	CxKeyMap   *m = MemoryContextAllocZero(parent, sizeof(CxKeyMap));
	HASHCTL		ctl;

	m->cxt = AllocSetContextCreate(parent, "ctxstore pending keys",
								   ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(CxKeyBytes);
	ctl.entrysize = sizeof(CxKeyEntry);
	ctl.hash = key_hash;
	ctl.match = key_match;
	ctl.hcxt = m->cxt;
	m->entries = hash_create("ctxstore pending keys", 256, &ctl,
							 HASH_ELEM | HASH_FUNCTION | HASH_COMPARE |
							 HASH_CONTEXT);
	return m;
}

static void
keymap_free(CxKeyMap *m)
{
	MemoryContextDelete(m->cxt);
	pfree(m);
}

/* Records the row at offset as the newest of its key (NULL key and kind
 * DELETE: a TRUNCATE marker). */
static void
keymap_note(CxKeyMap *m, const cx_datum *key, cx_type type, size_t offset,
			size_t next, cx_row_kind kind)
{
	CxKeyBytes	k;
	CxKeyEntry *e;
	bool		found;

	if (key->isnull)
	{
		Assert(kind == CX_ROW_DELETE);
		m->visible_from = next;
		m->truncated = true;
		return;
	}
	cxfdw_key_bytes(type, key, &k);
	e = hash_search(m->entries, &k, HASH_ENTER, &found);
	if (!found)
	{
		uint8	   *copy = MemoryContextAlloc(m->cxt, Max(k.len, 1));

		memcpy(copy, k.p, k.len);
		e->key.p = copy;
		e->key.len = k.len;
	}
	e->offset = offset;
	e->kind = kind;
}

/* The newest buffered row of key after the newest TRUNCATE marker. */
bool
cxfdw_keymap_find(const CxKeyMap *m, const CxKeyBytes *key, size_t *offset,
				  cx_row_kind *kind)
{
	CxKeyEntry *e = hash_search(m->entries, key, HASH_FIND, NULL);

	if (e == NULL || e->offset < m->visible_from)
		return false;
	*offset = e->offset;
	*kind = e->kind;
	return true;
}

bool
cxfdw_keymap_truncated(const CxKeyMap *m, size_t *visible_from)
{
	*visible_from = m->visible_from;
	return m->truncated;
}

/*
 * Decodes the buffered row at *pos into values (variable-width ones point
 * into the buffer or scratch: valid until the next append) and moves *pos
 * past it.
 */
cx_row_kind
cxfdw_pending_decode(const CxPending *p, size_t *pos, size_t end,
					 cx_datum *values, cx_buf *scratch)
{
	cx_rd		rd;
	cx_row_kind kind;
	cx_err		err;

	/* Clamp to the buffer: a surprise is then an error, not a wild read. */
	cx_rd_init(&rd, p->rows.data, Min(p->rows.len, end));
	rd.pos = *pos;
	if (cx_row_decode(p->schema, &rd, &kind, values, scratch, &err) != CX_OK)
		cx_pg_error(&err, "could not decode a row buffered for store %s",
					p->uri);
	*pos = rd.pos;
	return kind;
}

/* The newest row of each key among the buffer's bytes [0, end), in memory
 * of the current context, for a scan to read a fixed set of rows by. */
CxKeyMap *
cxfdw_pending_keymap(const CxPending *p, size_t end)
{
	CxKeyMap   *m = keymap_create(CurrentMemoryContext);
	cx_datum   *values = palloc(sizeof(cx_datum) * p->schema->ncolumns);
	cx_buf		scratch;
	size_t		pos = 0;
	cx_type		type = p->schema->columns[p->key_col].type;

	cx_buf_init(&scratch);
	while (pos < end)
	{
		size_t		offset = pos;
		cx_row_kind kind = cxfdw_pending_decode(p, &pos, end, values,
												&scratch);

		keymap_note(m, &values[p->key_col], type, offset, pos, kind);
	}
	cx_buf_free(&scratch);
	pfree(values);
	return m;
}

/*
 * The newest buffered row of every key, kept up to date by every append
 * until a savepoint rollback cuts the buffer (then rebuilt on the next call):
 * what checks of each inserted row against the transaction's rows use, so
 * that they cost no pass over the buffer per statement.
 */
const CxKeyMap *
cxfdw_pending_keys(CxPending *p)
{
	if (p->keys == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		p->keys = cxfdw_pending_keymap(p, p->rows.len);
		MemoryContextSwitchTo(old);
	}
	return p->keys;
}

CxPending *
cxfdw_pending_find(Oid relid)
{
	if (pending == NULL)
		return NULL;
	return hash_search(pending, &relid, HASH_FIND, NULL);
}

static void
copy_destination(CxPending *p, const CxRelInfo *ri)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	p->uri = pstrdup(ri->uri);
	p->options = palloc(sizeof(cx_option) * Max(ri->nstore_options, 1));
	for (int i = 0; i < ri->nstore_options; i++)
	{
		p->options[i].name = pstrdup(ri->store_options[i].name);
		p->options[i].value = pstrdup(ri->store_options[i].value);
	}
	p->noptions = ri->nstore_options;
	MemoryContextSwitchTo(old);
}

/* The store's schema if it has one, else the one this table would give it. */
static cx_schema *
schema_for_write(const CxRelInfo *ri, const cx_manifest *base)
{
	cx_schema  *schema;

	if (base == NULL || base->schema == NULL)
		return cxfdw_schema_from_rel(ri);
	schema = cx_schema_clone(base->schema);
	if (schema == NULL)
		ereport(ERROR, errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory"));
	return schema;
}


/*
 * The store's schema and key to check the table against: the backend's cached
 * ones if the table fits them, else the newest manifest's, so that a mismatch
 * is always reported against what the store records now.
 */
static const cx_manifest *
write_base(const CxRelInfo *ri, const CxStoreSettings *s, CxStore *st)
{
	bool		cached;
	const cx_manifest *base = cxfdw_store_write_base(st, &cached);

	cx_misfit	why;

	if (cached && !cxfdw_table_fits(ri, s->key_column, s->unique_key, base,
									&why))
	{
		cxfdw_store_forget_write_base(st);
		base = cxfdw_store_write_base(st, &cached);
	}
	return base;
}

/*
 * The buffer of a foreign table in this transaction, created on first use.
 * Its schema and write settings are fixed then, so every row of the
 * transaction has one layout and goes to the writer with one set of options.
 */
CxPending *
cxfdw_pending_open(const CxRelInfo *ri, CxStore *st)
{
	CxPending  *p;
	CxStoreSettings settings;

	if (pending == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(CxPending);
		ctl.hcxt = TopTransactionContext;
		pending = hash_create("ctxstore pending rows", 8, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	p = hash_search(pending, &ri->relid, HASH_FIND, NULL);
	if (p == NULL)
	{
		/* Read before the entry exists, so a bad option leaves none. */
		cxfdw_table_settings_cached(ri, &settings);
		cxfdw_settings_tell_pins(ri->uri, &settings);
		p = hash_search(pending, &ri->relid, HASH_ENTER, NULL);
		memset((char *) p + sizeof(Oid), 0, sizeof(CxPending) - sizeof(Oid));
		p->settings = settings;
		p->seq = hash_get_num_entries(pending) - 1;
		cx_buf_init(&p->rows);
		copy_destination(p, ri);
		p->store = st;
	}
	/* Set last: an error above leaves an entry that the next call finishes. */
	if (p->schema == NULL)
	{
		const cx_manifest *base = write_base(ri, &p->settings, st);

		cxfdw_check_table_key(ri, &p->settings, base);
		p->schema = schema_for_write(ri, base);
		p->key_col = cx_schema_find(p->schema, p->settings.key_column);
	}
	return p;
}

const char *
cxfdw_pending_key(const CxPending *p)
{
	return p->settings.key_column;
}

const CxStoreSettings *
cxfdw_pending_settings(const CxPending *p)
{
	return &p->settings;
}

const cx_schema *
cxfdw_pending_schema(const CxPending *p)
{
	return p->schema;
}

uint64
cxfdw_pending_rows(const CxPending *p)
{
	return p->nrows;
}

const uint8_t *
cxfdw_pending_data(const CxPending *p, size_t *len)
{
	*len = p->rows.len;
	return p->rows.data;
}

static void
mark_subtransaction(CxPending *p)
{
	SubTransactionId subid = GetCurrentSubTransactionId();

	if (p->nmarks > 0 && p->marks[p->nmarks - 1].subid == subid)
		return;
	if (p->nmarks == p->maxmarks)
	{
		p->maxmarks = Max(8, p->maxmarks * 2);
		p->marks = p->marks == NULL
			? MemoryContextAlloc(TopTransactionContext, sizeof(CxMark) * p->maxmarks)
			: repalloc(p->marks, sizeof(CxMark) * p->maxmarks);
	}
	p->marks[p->nmarks].subid = subid;
	p->marks[p->nmarks].offset = p->rows.len;
	p->marks[p->nmarks].nrows = p->nrows;
	p->nmarks++;
}

/* Drops the rows after offset (a failed grow leaves the bytes before it
 * intact, so the buffer is usable again afterwards). */
static void
truncate_rows(CxPending *p, size_t offset, uint64 nrows)
{
	pending_bytes -= p->rows.len - offset;
	if (p->keys != NULL && offset < p->rows.len)
	{
		keymap_free(p->keys);
		p->keys = NULL;
	}
	p->rows.len = offset;
	p->rows.failed = false;
	p->nrows = nrows;
}

/* Appends one row, values in the order of the buffer's schema. */
void
cxfdw_pending_append(CxPending *p, cx_row_kind kind, const cx_datum *values)
{
	size_t		before = p->rows.len;
	uint64		limit = (uint64) cx_max_transaction_kb * 1024;

	mark_subtransaction(p);
	cx_row_encode(p->schema, kind, values, &p->rows);
	pending_bytes += p->rows.len - before;
	if (!cx_buf_ok(&p->rows))
	{
		truncate_rows(p, before, p->nrows);
		ereport(ERROR,
				errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("out of memory"),
				errdetail("Could not buffer a row for store %s.", p->uri));
	}
	p->nrows++;
	if (p->keys != NULL)
		keymap_note(p->keys, &values[p->key_col],
					p->schema->columns[p->key_col].type, before,
					p->rows.len, kind);
	if (pending_bytes > limit)
		ereport(ERROR,
				errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("transaction wrote more than ctxstore.max_transaction_bytes to ctxstore foreign tables"),
				errdetail("The rows buffered for commit take %zu bytes; the limit is " UINT64_FORMAT " bytes.",
						  pending_bytes, limit),
				errhint("Insert in smaller transactions, or raise ctxstore.max_transaction_bytes."));
}

/* ---- transaction events ---- */

/*
 * Hands every table's rows to the writer worker in one call, in the order the
 * transaction first wrote to them, so that what happens when one of them
 * fails (the worker reports which others landed) does not depend on hash
 * order.
 */
static void
submit_pending(void)
{
	long		ntables = hash_get_num_entries(pending);
	CxPending **by_seq = palloc(sizeof(CxPending *) * ntables);
	CxWriteRequest *requests = palloc(sizeof(CxWriteRequest) * ntables);
	HASH_SEQ_STATUS scan;
	CxPending  *p;
	int			n = 0;

	hash_seq_init(&scan, pending);
	while ((p = hash_seq_search(&scan)) != NULL)
		by_seq[p->seq] = p;

	for (long i = 0; i < ntables; i++)
	{
		CxWriteRequest *r = &requests[n];

		p = by_seq[i];
		if (p->nrows == 0)
			continue;
		r->uri = p->uri;
		r->options = p->options;
		r->noptions = p->noptions;
		r->schema = p->schema;
		r->rows = (const char *) p->rows.data;
		r->rows_len = p->rows.len;
		r->nrows = p->nrows;
		r->settings = p->settings;
		n++;
	}
	if (n > 0)
		cx_writer_submit(requests, n, NULL);
	pfree(requests);
	pfree(by_seq);
}

static bool
has_pending_rows(void)
{
	HASH_SEQ_STATUS scan;
	CxPending  *p;

	hash_seq_init(&scan, pending);
	while ((p = hash_seq_search(&scan)) != NULL)
	{
		if (p->nrows > 0)
		{
			hash_seq_term(&scan);
			return true;
		}
	}
	return false;
}

/*
 * Frees the malloc'd parts; TopTransactionContext takes the rest.  After an
 * abort (a commit the writer refused among them) the stores' cached schemas
 * and keys are dropped too: the next write checks the newest manifest.
 */
static void
discard_pending(bool aborted)
{
	HASH_SEQ_STATUS scan;
	CxPending  *p;

	hash_seq_init(&scan, pending);
	while ((p = hash_seq_search(&scan)) != NULL)
	{
		if (aborted && p->store != NULL)
			cxfdw_store_forget_write_base(p->store);
		cx_buf_free(&p->rows);
		cx_schema_free(p->schema);
	}
	pending = NULL;
	pending_bytes = 0;
}

static void
xact_callback(XactEvent event, void *arg)
{
	if (pending == NULL)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			submit_pending();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (has_pending_rows())
				ereport(ERROR,
						errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("cannot PREPARE a transaction that wrote to a ctxstore foreign table"),
						errdetail("Rows written to ctxstore foreign tables are committed by the writer worker, which cannot take part in two-phase commit."));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
			discard_pending(false);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			discard_pending(true);
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS scan;
	CxPending  *p;

	if (event != SUBXACT_EVENT_ABORT_SUB || pending == NULL)
		return;
	hash_seq_init(&scan, pending);
	while ((p = hash_seq_search(&scan)) != NULL)
	{
		while (p->nmarks > 0 && p->marks[p->nmarks - 1].subid >= mySubid)
		{
			CxMark	   *m = &p->marks[--p->nmarks];

			truncate_rows(p, m->offset, m->nrows);
		}
	}
}

void
cxfdw_xact_register(void)
{
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
}
