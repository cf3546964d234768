/*
 * cx_types.c — how PostgreSQL values travel as engine values (cx_datum).
 *
 * The whole mapping lives here (docs/SQL.md has the table):
 *
 *   bool int2 int4 int8 float4 float8     native, bit for bit (NaN, ±Infinity)
 *   date time timestamp timestamptz       PostgreSQL's own integer forms
 *   interval uuid bytea                   native
 *   text varchar bpchar json              UTF-8 text (bpchar with its padding)
 *   numeric jsonb                         canonical text (numeric_out, jsonb_out);
 *                                         numeric(p,s) with 1 <= p <= 38 and
 *                                         0 <= s <= p also records p and s
 *                                         (the fragment stores a DECIMAL)
 *   one-dimensional arrays of the above   CX_T_LIST (NULL elements kept)
 *   anything else                         CX_T_EXTERNAL: the type's binary
 *                                         send/receive form, tagged with its name
 *
 * Arrays of other types are lists of external values, so an array never
 * carries element type OIDs (which differ between clusters).  Arrays with more
 * than one dimension or a lower bound other than 1 are refused: a list has no
 * place to keep either.  Domains travel as their base type.
 */
#include "postgres.h"

#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/syscache.h"
#include "utils/uuid.h"

#include "ctxstore_fdw.h"

/*
 * The PostgreSQL base types stored natively, and their engine types: the one
 * map, read both ways.  Several types may share an engine type; the first of
 * them is the type its values are read as (IMPORT FOREIGN SCHEMA).
 */
static const struct
{
	Oid			typid;
	cx_type		type;
}			native_types[] =
{
	{BOOLOID, CX_T_BOOL},
	{INT2OID, CX_T_INT16},
	{INT4OID, CX_T_INT32},
	{INT8OID, CX_T_INT64},
	{FLOAT4OID, CX_T_FLOAT32},
	{FLOAT8OID, CX_T_FLOAT64},
	{NUMERICOID, CX_T_NUMERIC},
	{TEXTOID, CX_T_STRING},
	{VARCHAROID, CX_T_STRING},
	{BPCHAROID, CX_T_STRING},
	{BYTEAOID, CX_T_BINARY},
	{JSONOID, CX_T_JSON},
	{JSONBOID, CX_T_JSONB},
	{UUIDOID, CX_T_UUID},
	{DATEOID, CX_T_DATE},
	{TIMEOID, CX_T_TIME},
	{TIMESTAMPOID, CX_T_TIMESTAMP},
	{TIMESTAMPTZOID, CX_T_TIMESTAMPTZ},
	{INTERVALOID, CX_T_INTERVAL},
};

/* The engine type a PostgreSQL base type maps to natively, or 0. */
static cx_type
native_type(Oid typid)
{
	for (int i = 0; i < lengthof(native_types); i++)
		if (native_types[i].typid == typid)
			return native_types[i].type;
	return 0;
}

Oid
cxfdw_native_type_oid(cx_type type)
{
	for (int i = 0; i < lengthof(native_types); i++)
		if (native_types[i].type == type)
			return native_types[i].typid;
	elog(ERROR, "engine type %d has no native PostgreSQL type", (int) type);
	return InvalidOid;			/* keep the compiler quiet */
}

/* A type's name as external values are tagged with: as format_type_be()
 * spells it for built-in types, schema-qualified for the others, so that the
 * tag does not depend on search_path. */
static char *
external_name(Oid typid)
{
	HeapTuple	tp = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	Oid			nsp;

	if (!HeapTupleIsValid(tp))
		elog(ERROR, "cache lookup failed for type %u", typid);
	nsp = ((Form_pg_type) GETSTRUCT(tp))->typnamespace;
	ReleaseSysCache(tp);
	return nsp == PG_CATALOG_NAMESPACE ? format_type_be(typid)
		: format_type_be_qualified(typid);
}

/*
 * Fills the scalar half of ti for base type typid (the column's type, or the
 * element type of an array): its engine type and, where values go through a
 * text or binary form, the functions that produce and consume it.
 */
static cx_type
resolve_scalar(Oid typid, CxTypeInfo *ti)
{
	cx_type		type = native_type(typid);
	bool		varlena;
	Oid			out_func;
	Oid			in_func;

	if (type == CX_T_NUMERIC || type == CX_T_JSONB)
	{
		getTypeOutputInfo(typid, &out_func, &varlena);
		getTypeInputInfo(typid, &in_func, &ti->in_ioparam);
	}
	else if (type == 0)
	{
		type = CX_T_EXTERNAL;
		ti->ext_type = external_name(typid);
		/* Both raise a clear error for a type without send/receive. */
		getTypeBinaryOutputInfo(typid, &out_func, &varlena);
		getTypeBinaryInputInfo(typid, &in_func, &ti->in_ioparam);
	}
	else
		return type;
	/* Looked up here rather than per value (Oid*FunctionCall would). */
	fmgr_info(out_func, &ti->out_func);
	fmgr_info(in_func, &ti->in_func);
	return type;
}

/*
 * A numeric typmod's precision and scale when the fragment format stores the
 * column as a DECIMAL; others (no typmod, p > 38, negative scale, s > p)
 * stay canonical text.
 */
static void
resolve_decimal(int32 typmod, CxTypeInfo *ti)
{
	int32		p;
	int32		s;

	if (typmod < (int32) VARHDRSZ)
		return;
	p = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	/* The scale is an 11-bit signed field (negative scales since 15). */
	s = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	if (p < 1 || p > CX_DECIMAL_PRECISION_MAX || s < 0 || s > p)
		return;
	ti->precision = (uint8) p;
	ti->scale = (uint8) s;
}

void
cxfdw_type_resolve(Oid typid, int32 typmod, CxTypeInfo *ti)
{
	Oid			elem;

	memset(ti, 0, sizeof(*ti));
	ti->typmod = typmod;
	ti->typid = getBaseTypeAndTypmod(typid, &ti->typmod);

	elem = get_element_type(ti->typid);
	if (!OidIsValid(elem))
	{
		ti->type = resolve_scalar(ti->typid, ti);
		if (ti->type == CX_T_NUMERIC)
			resolve_decimal(ti->typmod, ti);
		return;
	}
	ti->type = CX_T_LIST;
	ti->elem_typid = elem;
	get_typlenbyvalalign(elem, &ti->elem_len, &ti->elem_byval, &ti->elem_align);
	/* An array column's typmod is its elements', so ti->typmod serves the
	 * element conversions too. */
	ti->elem_type = resolve_scalar(getBaseType(elem), ti);
}

/* "int32", "list of float32", "external (inet)", "numeric(10,2)", for error
 * details. */
char *
cxfdw_type_describe(cx_type type, cx_type elem_type, const char *ext_type,
					int precision, int scale)
{
	const char *ext = ext_type ? psprintf(" (%s)", ext_type) : "";

	if (type == CX_T_LIST)
		return psprintf("list of %s%s", cx_type_name(elem_type), ext);
	if (precision > 0)
		return psprintf("%s(%d,%d)", cx_type_name(type), precision, scale);
	return psprintf("%s%s", cx_type_name(type), ext);
}

char *
cxfdw_column_describe(const cx_column *c)
{
	return cxfdw_type_describe(c->type, c->elem_type, c->ext_type,
							   c->precision, c->scale);
}

char *
cxfdw_typeinfo_describe(const CxTypeInfo *ti)
{
	return cxfdw_type_describe(ti->type, ti->elem_type, ti->ext_type,
							   ti->precision, ti->scale);
}

/* ---- PostgreSQL -> engine ---- */

/* Text in the database encoding as UTF-8 bytes (no copy when it already is). */
static void
text_to_utf8(const char *p, size_t len, cx_datum *out)
{
	char	   *conv = pg_server_to_any(p, (int) len, PG_UTF8);

	out->v.bytes.ptr = (const uint8_t *) conv;
	out->v.bytes.len = conv == p ? len : strlen(conv);
}

static void
varlena_to_cx(cx_type type, Datum value, cx_datum *out)
{
	struct varlena *v = PG_DETOAST_DATUM_PACKED(value);

	if (type == CX_T_BINARY)
	{
		out->v.bytes.ptr = (const uint8_t *) VARDATA_ANY(v);
		out->v.bytes.len = VARSIZE_ANY_EXHDR(v);
	}
	else
		text_to_utf8(VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v), out);
}

static void
scalar_to_cx(const CxTypeInfo *ti, cx_type type, Datum value, cx_datum *out)
{
	Interval   *iv;
	char	   *s;
	bytea	   *b;

	out->isnull = false;
	switch (type)
	{
		case CX_T_BOOL:
			out->v.b = DatumGetBool(value);
			break;
		case CX_T_INT16:
			out->v.i16 = DatumGetInt16(value);
			break;
		case CX_T_INT32:
			out->v.i32 = DatumGetInt32(value);
			break;
		case CX_T_DATE:
			out->v.i32 = DatumGetDateADT(value);
			break;
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			/* TimeADT and both Timestamp types are int64 Datums. */
			out->v.i64 = DatumGetInt64(value);
			break;
		case CX_T_FLOAT32:
			out->v.f32 = DatumGetFloat4(value);
			break;
		case CX_T_FLOAT64:
			out->v.f64 = DatumGetFloat8(value);
			break;
		case CX_T_UUID:
			memcpy(out->v.uuid, DatumGetUUIDP(value)->data, UUID_LEN);
			break;
		case CX_T_INTERVAL:
			iv = DatumGetIntervalP(value);
			out->v.interval.usec = iv->time;
			out->v.interval.days = iv->day;
			out->v.interval.months = iv->month;
			break;
		case CX_T_STRING:
		case CX_T_JSON:
		case CX_T_BINARY:
			varlena_to_cx(type, value, out);
			break;
		case CX_T_NUMERIC:
		case CX_T_JSONB:
			s = OutputFunctionCall(unconstify(FmgrInfo *, &ti->out_func), value);
			text_to_utf8(s, strlen(s), out);
			break;
		case CX_T_EXTERNAL:
			b = SendFunctionCall(unconstify(FmgrInfo *, &ti->out_func), value);
			out->v.bytes.ptr = (const uint8_t *) VARDATA(b);
			out->v.bytes.len = VARSIZE(b) - VARHDRSZ;
			break;
		case CX_T_LIST:
			elog(ERROR, "a list element cannot be a list");
	}
}

static void
array_to_cx(const CxTypeInfo *ti, Datum value, cx_datum *out)
{
	ArrayType  *arr = DatumGetArrayTypeP(value);
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	cx_datum   *items;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("ctxstore stores only one-dimensional arrays"),
				errdetail("The array has %d dimensions.", ARR_NDIM(arr)));
	if (ARR_NDIM(arr) == 1 && ARR_LBOUND(arr)[0] != 1)
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("ctxstore stores only arrays whose lower bound is 1"),
				errdetail("The array starts at index %d.", ARR_LBOUND(arr)[0]));

	deconstruct_array(arr, ti->elem_typid, ti->elem_len, ti->elem_byval,
					  ti->elem_align, &elems, &nulls, &n);
	items = palloc(sizeof(cx_datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		items[i].isnull = nulls[i];
		if (!nulls[i])
			scalar_to_cx(ti, ti->elem_type, elems[i], &items[i]);
	}
	out->isnull = false;
	out->v.list.items = items;
	out->v.list.n = n;
}

void
cxfdw_to_cx(const CxTypeInfo *ti, Datum value, cx_datum *out)
{
	if (ti->type == CX_T_LIST)
		array_to_cx(ti, value, out);
	else
		scalar_to_cx(ti, ti->type, value, out);
}

/*
 * Fragments store timestamps as Unix microseconds in an int64 (FORMAT.md),
 * where the largest value means infinity; PostgreSQL's range reaches a
 * little further.  The infinities are kept as they are.
 */
#define UNIX_EPOCH_OFFSET_US \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

static void
check_storable_timestamp(int64 value)
{
	if (value == DT_NOBEGIN || value == DT_NOEND ||
		value < PG_INT64_MAX - UNIX_EPOCH_OFFSET_US)
		return;
	ereport(ERROR,
			errcode(ERRCODE_DATETIME_FIELD_OVERFLOW),
			errmsg("timestamp out of range for ctxstore"),
			errhint("ctxstore stores finite timestamps from 4714-11-24 00:00:00 BC up to 294247-01-10 04:00:54.775806 UTC (Unix microseconds in 64 bits, the largest of which means infinity), and infinity and -infinity."));
}

static void
check_storable_scalar(const CxTypeInfo *ti, cx_type type, const cx_datum *d)
{
	if (d->isnull)
		return;
	if (type == CX_T_TIMESTAMP || type == CX_T_TIMESTAMPTZ)
		check_storable_timestamp(d->v.i64);
	else if (type == CX_T_NUMERIC && ti->precision > 0 &&
			 d->v.bytes.len == 3 && memcmp(d->v.bytes.ptr, "NaN", 3) == 0)
		ereport(ERROR,
				errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				errmsg("ctxstore cannot store NaN in a numeric(%d,%d) column",
					   ti->precision, ti->scale),
				errhint("Columns numeric(p,s) are stored as DECIMAL, which has no NaN; use numeric without a typmod to store NaN."));
}

void
cxfdw_to_cx_stored(const CxTypeInfo *ti, Datum value, cx_datum *out)
{
	cxfdw_to_cx(ti, value, out);
	if (ti->type != CX_T_LIST)
	{
		check_storable_scalar(ti, ti->type, out);
		return;
	}
	for (uint32 i = 0; i < out->v.list.n; i++)
		check_storable_scalar(ti, ti->elem_type, &out->v.list.items[i]);
}

/* ---- engine -> PostgreSQL ---- */

/* UTF-8 bytes as a string in the database encoding.  Data written through
 * this wrapper was validated on the way in, so a UTF-8 database takes the
 * bytes as they are. */
static char *
utf8_to_server(const cx_datum *d, size_t *len)
{
	const char *p = (const char *) d->v.bytes.ptr;
	char	   *conv;

	*len = d->v.bytes.len;
	if (GetDatabaseEncoding() == PG_UTF8 || *len == 0)
		return unconstify(char *, p);
	conv = pg_any_to_server(p, (int) *len, PG_UTF8);
	if (conv != p)
		*len = strlen(conv);
	return conv;
}

static Datum
text_form_from_cx(const CxTypeInfo *ti, const cx_datum *d)
{
	size_t		len;
	char	   *s = utf8_to_server(d, &len);
	char	   *str = palloc(len + 1);

	/* The length is known: copy without pnstrdup's strnlen over the value
	 * (a NUL inside would end the string for the input function either
	 * way). */
	memcpy(str, s, len);
	str[len] = '\0';
	return InputFunctionCall(unconstify(FmgrInfo *, &ti->in_func), str, ti->in_ioparam, ti->typmod);
}

static Datum
external_from_cx(const CxTypeInfo *ti, const cx_datum *d)
{
	StringInfoData buf;
	Datum		result;

	/* Receive functions expect a NUL-terminated StringInfo of their own. */
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (const char *) d->v.bytes.ptr, d->v.bytes.len);
	result = ReceiveFunctionCall(unconstify(FmgrInfo *, &ti->in_func), &buf, ti->in_ioparam,
									ti->typmod);
	if (buf.cursor != buf.len)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				errmsg("stored value of type %s has %d bytes left over after decoding",
					   ti->ext_type, buf.len - buf.cursor));
	return result;
}

static Datum
scalar_from_cx(const CxTypeInfo *ti, cx_type type, const cx_datum *d)
{
	Interval   *iv;
	pg_uuid_t  *uuid;
	size_t		len;
	char	   *s;

	switch (type)
	{
		case CX_T_BOOL:
			return BoolGetDatum(d->v.b);
		case CX_T_INT16:
			return Int16GetDatum(d->v.i16);
		case CX_T_INT32:
			return Int32GetDatum(d->v.i32);
		case CX_T_DATE:
			return DateADTGetDatum(d->v.i32);
		case CX_T_INT64:
		case CX_T_TIME:
		case CX_T_TIMESTAMP:
		case CX_T_TIMESTAMPTZ:
			return Int64GetDatum(d->v.i64);
		case CX_T_FLOAT32:
			return Float4GetDatum(d->v.f32);
		case CX_T_FLOAT64:
			return Float8GetDatum(d->v.f64);
		case CX_T_UUID:
			uuid = palloc(sizeof(pg_uuid_t));
			memcpy(uuid->data, d->v.uuid, UUID_LEN);
			return UUIDPGetDatum(uuid);
		case CX_T_INTERVAL:
			iv = palloc(sizeof(Interval));
			iv->time = d->v.interval.usec;
			iv->day = d->v.interval.days;
			iv->month = d->v.interval.months;
			return IntervalPGetDatum(iv);
		case CX_T_BINARY:
			return PointerGetDatum(cstring_to_text_with_len((const char *) d->v.bytes.ptr,
															(int) d->v.bytes.len));
		case CX_T_STRING:
		case CX_T_JSON:
			s = utf8_to_server(d, &len);
			return PointerGetDatum(cstring_to_text_with_len(s, (int) len));
		case CX_T_NUMERIC:
		case CX_T_JSONB:
			return text_form_from_cx(ti, d);
		case CX_T_EXTERNAL:
			return external_from_cx(ti, d);
		case CX_T_LIST:
			break;
	}
	elog(ERROR, "a list element cannot be a list");
}

static Datum
array_from_cx(const CxTypeInfo *ti, const cx_datum *d, CxListForm form)
{
	uint32		n = form == CX_LIST_ITEMS ? d->v.list.n : d->v.slice.n;
	Datum	   *elems;
	bool	   *nulls;
	int			dims[1];
	int			lbs[1] = {1};

	if (n == 0)
		return PointerGetDatum(construct_empty_array(ti->elem_typid));

	elems = palloc(sizeof(Datum) * n);
	nulls = palloc(sizeof(bool) * n);
	for (uint32 i = 0; i < n; i++)
	{
		cx_datum	item;

		if (form == CX_LIST_ITEMS)
			item = d->v.list.items[i];
		else
			cx_colvec_get(d->v.slice.elems, d->v.slice.start + i, &item);
		nulls[i] = item.isnull;
		elems[i] = item.isnull ? (Datum) 0 : scalar_from_cx(ti, ti->elem_type, &item);
	}
	dims[0] = (int) n;
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
											  ti->elem_typid, ti->elem_len,
											  ti->elem_byval, ti->elem_align));
}

/* d must not be NULL (callers test d->isnull first). */
Datum
cxfdw_from_cx(const CxTypeInfo *ti, const cx_datum *d, CxListForm form)
{
	if (ti->type == CX_T_LIST)
		return array_from_cx(ti, d, form);
	return scalar_from_cx(ti, ti->type, d);
}

/* ---- naming the column in conversion errors ---- */

static void
conversion_error_context(void *arg)
{
	CxConvErrContext *ec = arg;

	if (ec->att >= 0)
		errcontext("column \"%s\" of foreign table \"%s\"",
				   ec->ri->columns[ec->att].attname, ec->ri->relname);
}

void
cxfdw_conv_errcontext_push(CxConvErrContext *ec, const CxRelInfo *ri)
{
	ec->ri = ri;
	ec->att = -1;
	ec->cb.callback = conversion_error_context;
	ec->cb.arg = ec;
	ec->cb.previous = error_context_stack;
	error_context_stack = &ec->cb;
}

void
cxfdw_conv_errcontext_pop(CxConvErrContext *ec)
{
	error_context_stack = ec->cb.previous;
}
