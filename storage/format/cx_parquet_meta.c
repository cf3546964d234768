/*
 * cx_parquet_meta.c — Parquet metadata structures to and from the Thrift
 * compact protocol (cx_parquet_meta.h).  Field ids are parquet.thrift's.
 *
 * Decoders read each struct as: begin, then one field at a time (known
 * ids decoded with their type checked, any other id skipped), then end,
 * then a check that every required field came.  A known field that comes
 * twice is refused, which also keeps a decoder from leaking what the first
 * copy allocated.  Lists are allocated zeroed and their length stored at
 * once, so the _free functions can free a partly decoded structure.
 */
#include "format/cx_parquet_meta.h"

#include <stdlib.h>
#include <string.h>

#include "format/cx_thrift.h"

#define lengthof(a) (sizeof(a) / sizeof((a)[0]))

/* ---- encoding ---- */

static void
enc_bytes(cx_thrift_w *w, int16_t id, const cx_pq_bytes *b)
{
	cx_thrift_w_field_binary(w, id, b->ptr, b->len);
}

static void
enc_stats(cx_thrift_w *w, int16_t id, const cx_pq_stats *s)
{
	cx_thrift_w_field_struct(w, id);
	if (s->has_null_count)
		cx_thrift_w_field_i64(w, 3, s->null_count);
	if (s->has_max)
		enc_bytes(w, 5, &s->max_value);
	if (s->has_min)
		enc_bytes(w, 6, &s->min_value);
	if (s->has_max_exact)
		cx_thrift_w_field_bool(w, 7, s->max_exact);
	if (s->has_min_exact)
		cx_thrift_w_field_bool(w, 8, s->min_exact);
	cx_thrift_w_end(w);
}

/* A member of a union of empty structs (TimeUnit, ColumnOrder). */
static void
enc_empty_member(cx_thrift_w *w, int16_t member)
{
	cx_thrift_w_begin(w);
	cx_thrift_w_field_struct(w, member);
	cx_thrift_w_end(w);
	cx_thrift_w_end(w);
}

static void
enc_logical(cx_thrift_w *w, const cx_pq_logical *lt)
{
	cx_thrift_w_field_struct(w, 10);
	cx_thrift_w_field_struct(w, (int16_t) lt->kind);
	switch (lt->kind)
	{
		case CX_PQ_LT_DECIMAL:
			cx_thrift_w_field_i32(w, 1, lt->scale);
			cx_thrift_w_field_i32(w, 2, lt->precision);
			break;
		case CX_PQ_LT_TIME:
		case CX_PQ_LT_TIMESTAMP:
			cx_thrift_w_field_bool(w, 1, lt->adjusted_to_utc);
			cx_thrift_w_field(w, 2, CX_THRIFT_STRUCT);
			enc_empty_member(w, (int16_t) lt->unit);
			break;
		case CX_PQ_LT_INTEGER:
			cx_thrift_w_field_i8(w, 1, lt->bit_width);
			cx_thrift_w_field_bool(w, 2, lt->is_signed);
			break;
		default:
			break;				/* the other members are empty structs */
	}
	cx_thrift_w_end(w);
	cx_thrift_w_end(w);
}

static void
enc_schema_element(cx_thrift_w *w, const cx_pq_schema_element *e)
{
	cx_thrift_w_begin(w);
	if (e->has_type)
		cx_thrift_w_field_i32(w, 1, e->type);
	if (e->type_length > 0)
		cx_thrift_w_field_i32(w, 2, e->type_length);
	if (e->has_repetition)
		cx_thrift_w_field_i32(w, 3, e->repetition);
	cx_thrift_w_field_string(w, 4, e->name);
	if (e->num_children > 0)
		cx_thrift_w_field_i32(w, 5, e->num_children);
	if (e->has_converted)
		cx_thrift_w_field_i32(w, 6, e->converted);
	if (e->has_scale_precision)
	{
		cx_thrift_w_field_i32(w, 7, e->scale);
		cx_thrift_w_field_i32(w, 8, e->precision);
	}
	if (e->has_field_id)
		cx_thrift_w_field_i32(w, 9, e->field_id);
	if (e->logical.kind != CX_PQ_LT_NONE)
		enc_logical(w, &e->logical);
	cx_thrift_w_end(w);
}

static void
enc_string_list(cx_thrift_w *w, int16_t id, char *const *s, uint32_t n)
{
	cx_thrift_w_field_list(w, id, CX_THRIFT_BINARY, n);
	for (uint32_t i = 0; i < n; i++)
		cx_thrift_w_binary(w, s[i], strlen(s[i]));
}

static void
enc_column_meta(cx_thrift_w *w, const cx_pq_column_meta *m)
{
	cx_thrift_w_field_struct(w, 3);
	cx_thrift_w_field_i32(w, 1, m->type);
	cx_thrift_w_field_list(w, 2, CX_THRIFT_I32, m->nencodings);
	for (uint32_t i = 0; i < m->nencodings; i++)
		cx_thrift_w_i32(w, m->encodings[i]);
	enc_string_list(w, 3, m->path_in_schema, m->npath);
	cx_thrift_w_field_i32(w, 4, m->codec);
	cx_thrift_w_field_i64(w, 5, m->num_values);
	cx_thrift_w_field_i64(w, 6, m->total_uncompressed_size);
	cx_thrift_w_field_i64(w, 7, m->total_compressed_size);
	cx_thrift_w_field_i64(w, 9, m->data_page_offset);
	if (m->has_dictionary_page_offset)
		cx_thrift_w_field_i64(w, 11, m->dictionary_page_offset);
	if (m->has_statistics)
		enc_stats(w, 12, &m->statistics);
	cx_thrift_w_end(w);
}

static void
enc_column_chunk(cx_thrift_w *w, const cx_pq_column_chunk *c)
{
	cx_thrift_w_begin(w);
	cx_thrift_w_field_i64(w, 2, c->file_offset);
	if (c->has_meta)
		enc_column_meta(w, &c->meta);
	if (c->has_offset_index)
	{
		cx_thrift_w_field_i64(w, 4, c->offset_index_offset);
		cx_thrift_w_field_i32(w, 5, c->offset_index_length);
	}
	if (c->has_column_index)
	{
		cx_thrift_w_field_i64(w, 6, c->column_index_offset);
		cx_thrift_w_field_i32(w, 7, c->column_index_length);
	}
	cx_thrift_w_end(w);
}

static void
enc_row_group(cx_thrift_w *w, const cx_pq_row_group *g)
{
	cx_thrift_w_begin(w);
	cx_thrift_w_field_list(w, 1, CX_THRIFT_STRUCT, g->ncolumns);
	for (uint32_t i = 0; i < g->ncolumns; i++)
		enc_column_chunk(w, &g->columns[i]);
	cx_thrift_w_field_i64(w, 2, g->total_byte_size);
	cx_thrift_w_field_i64(w, 3, g->num_rows);
	if (g->has_file_offset)
		cx_thrift_w_field_i64(w, 5, g->file_offset);
	if (g->has_total_compressed_size)
		cx_thrift_w_field_i64(w, 6, g->total_compressed_size);
	if (g->has_ordinal)
		cx_thrift_w_field_i16(w, 7, g->ordinal);
	cx_thrift_w_end(w);
}

static void
enc_key_value(cx_thrift_w *w, const cx_pq_key_value *kv)
{
	cx_thrift_w_begin(w);
	cx_thrift_w_field_string(w, 1, kv->key);
	if (kv->value)
		cx_thrift_w_field_string(w, 2, kv->value);
	cx_thrift_w_end(w);
}

/* Leaves are the schema elements after the root without children. */
static uint32_t
count_leaves(const cx_pq_file_meta *m)
{
	uint32_t	n = 0;

	for (uint32_t i = 1; i < m->nschema; i++)
		n += m->schema[i].num_children == 0;
	return n;
}

void
cx_pq_file_meta_encode(const cx_pq_file_meta *m, cx_buf *out)
{
	cx_thrift_w w;

	cx_thrift_w_init(&w, out);
	cx_thrift_w_begin(&w);
	cx_thrift_w_field_i32(&w, 1, m->version);
	cx_thrift_w_field_list(&w, 2, CX_THRIFT_STRUCT, m->nschema);
	for (uint32_t i = 0; i < m->nschema; i++)
		enc_schema_element(&w, &m->schema[i]);
	cx_thrift_w_field_i64(&w, 3, m->num_rows);
	cx_thrift_w_field_list(&w, 4, CX_THRIFT_STRUCT, m->nrow_groups);
	for (uint32_t i = 0; i < m->nrow_groups; i++)
		enc_row_group(&w, &m->row_groups[i]);
	if (m->nkv > 0)
	{
		cx_thrift_w_field_list(&w, 5, CX_THRIFT_STRUCT, m->nkv);
		for (uint32_t i = 0; i < m->nkv; i++)
			enc_key_value(&w, &m->kv[i]);
	}
	if (m->created_by)
		cx_thrift_w_field_string(&w, 6, m->created_by);
	if (m->type_defined_order)
	{
		uint32_t	nleaves = count_leaves(m);

		cx_thrift_w_field_list(&w, 7, CX_THRIFT_STRUCT, nleaves);
		for (uint32_t i = 0; i < nleaves; i++)
			enc_empty_member(&w, 1);
	}
	cx_thrift_w_end(&w);
}

static void
enc_data_page_header(cx_thrift_w *w, const cx_pq_data_page_header *d)
{
	cx_thrift_w_field_struct(w, 5);
	cx_thrift_w_field_i32(w, 1, d->num_values);
	cx_thrift_w_field_i32(w, 2, d->encoding);
	cx_thrift_w_field_i32(w, 3, d->definition_level_encoding);
	cx_thrift_w_field_i32(w, 4, d->repetition_level_encoding);
	if (d->has_statistics)
		enc_stats(w, 5, &d->statistics);
	cx_thrift_w_end(w);
}

static void
enc_dictionary_page_header(cx_thrift_w *w,
						   const cx_pq_dictionary_page_header *d)
{
	cx_thrift_w_field_struct(w, 7);
	cx_thrift_w_field_i32(w, 1, d->num_values);
	cx_thrift_w_field_i32(w, 2, d->encoding);
	if (d->has_is_sorted)
		cx_thrift_w_field_bool(w, 3, d->is_sorted);
	cx_thrift_w_end(w);
}

void
cx_pq_page_header_encode(const cx_pq_page_header *h, cx_buf *out)
{
	cx_thrift_w w;

	cx_thrift_w_init(&w, out);
	cx_thrift_w_begin(&w);
	cx_thrift_w_field_i32(&w, 1, h->type);
	cx_thrift_w_field_i32(&w, 2, h->uncompressed_page_size);
	cx_thrift_w_field_i32(&w, 3, h->compressed_page_size);
	if (h->has_crc)
		cx_thrift_w_field_i32(&w, 4, (int32_t) h->crc);
	if (h->has_data_page)
		enc_data_page_header(&w, &h->data_page);
	if (h->has_dictionary_page)
		enc_dictionary_page_header(&w, &h->dictionary_page);
	cx_thrift_w_end(&w);
}

void
cx_pq_offset_index_encode(const cx_pq_offset_index *x, cx_buf *out)
{
	cx_thrift_w w;

	cx_thrift_w_init(&w, out);
	cx_thrift_w_begin(&w);
	cx_thrift_w_field_list(&w, 1, CX_THRIFT_STRUCT, x->npages);
	for (uint32_t i = 0; i < x->npages; i++)
	{
		cx_thrift_w_begin(&w);
		cx_thrift_w_field_i64(&w, 1, x->pages[i].offset);
		cx_thrift_w_field_i32(&w, 2, x->pages[i].compressed_page_size);
		cx_thrift_w_field_i64(&w, 3, x->pages[i].first_row_index);
		cx_thrift_w_end(&w);
	}
	cx_thrift_w_end(&w);
}

static void
enc_bytes_list(cx_thrift_w *w, int16_t id, const cx_pq_bytes *b, uint32_t n)
{
	cx_thrift_w_field_list(w, id, CX_THRIFT_BINARY, n);
	for (uint32_t i = 0; i < n; i++)
		cx_thrift_w_binary(w, b[i].ptr, b[i].len);
}

void
cx_pq_column_index_encode(const cx_pq_column_index *x, cx_buf *out)
{
	cx_thrift_w w;

	cx_thrift_w_init(&w, out);
	cx_thrift_w_begin(&w);
	cx_thrift_w_field_list(&w, 1, CX_THRIFT_TRUE, x->npages);
	for (uint32_t i = 0; i < x->npages; i++)
		cx_thrift_w_bool_elem(&w, x->null_pages[i]);
	enc_bytes_list(&w, 2, x->min_values, x->npages);
	enc_bytes_list(&w, 3, x->max_values, x->npages);
	cx_thrift_w_field_i32(&w, 4, x->boundary_order);
	if (x->has_null_counts)
	{
		cx_thrift_w_field_list(&w, 5, CX_THRIFT_I64, x->npages);
		for (uint32_t i = 0; i < x->npages; i++)
			cx_thrift_w_i64(&w, x->null_counts[i]);
	}
	cx_thrift_w_end(&w);
}

/* ---- decoding helpers ---- */

/*
 * The next field of a struct; seen collects the ids 1..31 met so far (all
 * parquet.thrift ids this file reads are below 32), and one met again makes
 * the input malformed.
 */
static bool
next_field(cx_thrift_r *r, uint32_t *seen, int16_t *id, cx_thrift_type *t)
{
	uint32_t	bit;

	if (!cx_thrift_r_next(r, id, t))
		return false;
	bit = (*id > 0 && *id < 32) ? 1u << *id : 0;
	if (*seen & bit)
	{
		cx_thrift_r_fail(r, "field %d repeated", *id);
		return false;
	}
	*seen |= bit;
	return true;
}

/* names[id] is the name of required field id (NULL: not required). */
static void
check_required(cx_thrift_r *r, uint32_t seen, const char *strct,
			   const char *const *names, size_t nnames)
{
	for (size_t id = 1; id < nnames && !r->bad; id++)
		if (names[id] && !(seen & (1u << id)))
			cx_thrift_r_fail(r, "%s.%s missing", strct, names[id]);
}

#define CHECK_REQUIRED(r, seen, strct, names) \
	check_required(r, seen, strct, names, lengthof(names))

/* Opens a struct field after checking its type. */
static bool
begin_struct_field(cx_thrift_r *r, cx_thrift_type t, const char *name)
{
	return cx_thrift_r_want(r, t, CX_THRIFT_STRUCT) &&
		cx_thrift_r_begin(r, name);
}

/* Opens a list field and allocates its n zeroed elements (closed with
 * cx_thrift_r_list_end by the caller when the result is not NULL). */
static void *
begin_list_field(cx_thrift_r *r, cx_thrift_type t, cx_thrift_type elem,
				 size_t size, uint32_t *n)
{
	uint32_t	count;
	void	   *a;

	if (!cx_thrift_r_field_list(r, t, elem, &count))
		return NULL;
	a = calloc(count ? count : 1, size);
	if (a == NULL)
	{
		cx_thrift_r_nomem(r);
		cx_thrift_r_list_end(r);
		return NULL;
	}
	*n = count;
	return a;
}

static bool
field_enum(cx_thrift_r *r, cx_thrift_type t, int *v)
{
	int32_t		x = 0;

	if (cx_thrift_r_field_i32(r, t, &x))
		*v = x;
	return !r->bad;
}

/* Sizes and offsets: negative ones are malformed. */
static bool
field_size64(cx_thrift_r *r, cx_thrift_type t, int64_t *v)
{
	if (cx_thrift_r_field_i64(r, t, v) && *v < 0)
		cx_thrift_r_fail(r, "field %d is negative", r->field_id);
	return !r->bad;
}

static bool
field_size32(cx_thrift_r *r, cx_thrift_type t, int32_t *v)
{
	if (cx_thrift_r_field_i32(r, t, v) && *v < 0)
		cx_thrift_r_fail(r, "field %d is negative", r->field_id);
	return !r->bad;
}

static void
field_bytes(cx_thrift_r *r, cx_thrift_type t, cx_pq_bytes *b, bool *has)
{
	*has = cx_thrift_r_field_bytes(r, t, &b->ptr, &b->len);
}

static cx_code
finish(cx_thrift_r *r, const char *what, const char *strct, cx_err *err)
{
	if (r->bad)
		return cx_err_set(err, r->nomem ? CX_ERR_NOMEM : CX_ERR_CORRUPT,
						  "%s: Parquet %s: %s", what, strct, r->msg);
	return CX_OK;
}

/* ---- decoding ---- */

static void
dec_stats(cx_thrift_r *r, cx_thrift_type t, cx_pq_stats *s)
{
	uint32_t	seen = 0;
	int16_t		id;

	if (!begin_struct_field(r, t, "Statistics"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		switch (id)
		{
			case 3:
				s->has_null_count = cx_thrift_r_field_i64(r, t, &s->null_count);
				break;
			case 5:
				field_bytes(r, t, &s->max_value, &s->has_max);
				break;
			case 6:
				field_bytes(r, t, &s->min_value, &s->has_min);
				break;
			case 7:
				s->has_max_exact = cx_thrift_r_field_bool(r, t, &s->max_exact);
				break;
			case 8:
				s->has_min_exact = cx_thrift_r_field_bool(r, t, &s->min_exact);
				break;
			default:
				cx_thrift_r_skip(r, t, false);
		}
	}
	cx_thrift_r_end(r);
}

/* A union of empty structs: *member gets the id of the member present. */
static void
dec_empty_union(cx_thrift_r *r, const char *name, int *member)
{
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;
	bool		any = false;

	if (!cx_thrift_r_begin(r, name))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		*member = id;
		any = true;
		cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	if (!any && !r->bad)
		cx_thrift_r_fail(r, "%s without a member", name);
}

static const char *const decimal_required[] = {NULL, "scale", "precision"};
static const char *const time_required[] = {NULL, "isAdjustedToUTC", "unit"};
static const char *const int_required[] = {NULL, "bitWidth", "isSigned"};

static void
dec_decimal_type(cx_thrift_r *r, cx_thrift_type t, cx_pq_logical *lt)
{
	uint32_t	seen = 0;
	int16_t		id;

	if (!begin_struct_field(r, t, "DecimalType"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		if (id == 1)
			cx_thrift_r_field_i32(r, t, &lt->scale);
		else if (id == 2)
			cx_thrift_r_field_i32(r, t, &lt->precision);
		else
			cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "DecimalType", decimal_required);
}

/* TimeType and TimestampType have the same fields. */
static void
dec_time_type(cx_thrift_r *r, cx_thrift_type t, cx_pq_logical *lt,
			  const char *name)
{
	uint32_t	seen = 0;
	int16_t		id;
	int			unit = 0;

	if (!begin_struct_field(r, t, name))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		if (id == 1)
			cx_thrift_r_field_bool(r, t, &lt->adjusted_to_utc);
		else if (id == 2)
		{
			if (cx_thrift_r_want(r, t, CX_THRIFT_STRUCT))
				dec_empty_union(r, "TimeUnit", &unit);
			lt->unit = (cx_pq_time_unit) unit;
		}
		else
			cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, name, time_required);
}

static void
dec_int_type(cx_thrift_r *r, cx_thrift_type t, cx_pq_logical *lt)
{
	uint32_t	seen = 0;
	int16_t		id;

	if (!begin_struct_field(r, t, "IntType"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		if (id == 1)
			cx_thrift_r_field_i8(r, t, &lt->bit_width);
		else if (id == 2)
			cx_thrift_r_field_bool(r, t, &lt->is_signed);
		else
			cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "IntType", int_required);
}

static void
dec_logical(cx_thrift_r *r, cx_thrift_type t, cx_pq_logical *lt)
{
	uint32_t	seen = 0;
	int16_t		id;
	bool		any = false;

	if (!begin_struct_field(r, t, "LogicalType"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		any = true;
		/* A member this file does not know is kept by its id (the reader
		 * refuses it by that); its contents are skipped. */
		lt->kind = (cx_pq_logical_kind) id;
		switch (id)
		{
			case CX_PQ_LT_DECIMAL:
				dec_decimal_type(r, t, lt);
				break;
			case CX_PQ_LT_TIME:
				dec_time_type(r, t, lt, "TimeType");
				break;
			case CX_PQ_LT_TIMESTAMP:
				dec_time_type(r, t, lt, "TimestampType");
				break;
			case CX_PQ_LT_INTEGER:
				dec_int_type(r, t, lt);
				break;
			default:
				cx_thrift_r_skip(r, t, false);
		}
	}
	cx_thrift_r_end(r);
	if (!any && !r->bad)
		cx_thrift_r_fail(r, "LogicalType without a member");
}

static const char *const schema_required[] = {[4] = "name"};

static void
dec_schema_element(cx_thrift_r *r, cx_pq_schema_element *e)
{
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;
	int			v = 0;

	if (!cx_thrift_r_begin(r, "SchemaElement"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		switch (id)
		{
			case 1:
				if ((e->has_type = field_enum(r, t, &v)))
					e->type = (cx_pq_type) v;
				break;
			case 2:
				field_size32(r, t, &e->type_length);
				break;
			case 3:
				if ((e->has_repetition = field_enum(r, t, &v)))
					e->repetition = (cx_pq_repetition) v;
				break;
			case 4:
				cx_thrift_r_field_string(r, t, &e->name);
				break;
			case 5:
				field_size32(r, t, &e->num_children);
				break;
			case 6:
				if ((e->has_converted = field_enum(r, t, &v)))
					e->converted = (cx_pq_converted) v;
				break;
			case 7:
				e->has_scale_precision = cx_thrift_r_field_i32(r, t, &e->scale);
				break;
			case 8:
				cx_thrift_r_field_i32(r, t, &e->precision);
				break;
			case 9:
				e->has_field_id = cx_thrift_r_field_i32(r, t, &e->field_id);
				break;
			case 10:
				dec_logical(r, t, &e->logical);
				break;
			default:
				cx_thrift_r_skip(r, t, false);
		}
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "SchemaElement", schema_required);
}

static void
dec_string_list(cx_thrift_r *r, cx_thrift_type t, char ***out, uint32_t *n)
{
	*out = begin_list_field(r, t, CX_THRIFT_BINARY, sizeof(char *), n);
	if (*out == NULL)
		return;
	for (uint32_t i = 0; i < *n && cx_thrift_r_ok(r); i++)
		cx_thrift_r_field_string(r, CX_THRIFT_BINARY, &(*out)[i]);
	cx_thrift_r_list_end(r);
}

static void
dec_encodings(cx_thrift_r *r, cx_thrift_type t, cx_pq_column_meta *m)
{
	m->encodings = begin_list_field(r, t, CX_THRIFT_I32,
									sizeof(cx_pq_encoding), &m->nencodings);
	if (m->encodings == NULL)
		return;
	for (uint32_t i = 0; i < m->nencodings; i++)
		m->encodings[i] = (cx_pq_encoding) cx_thrift_r_i32(r);
	cx_thrift_r_list_end(r);
}

static const char *const column_meta_required[] = {
	[1] = "type", [2] = "encodings", [3] = "path_in_schema", [4] = "codec",
	[5] = "num_values", [6] = "total_uncompressed_size",
	[7] = "total_compressed_size", [9] = "data_page_offset"
};

static void
dec_column_meta(cx_thrift_r *r, cx_thrift_type t, cx_pq_column_meta *m)
{
	uint32_t	seen = 0;
	int16_t		id;
	int			v = 0;

	if (!begin_struct_field(r, t, "ColumnMetaData"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		switch (id)
		{
			case 1:
				if (field_enum(r, t, &v))
					m->type = (cx_pq_type) v;
				break;
			case 2:
				dec_encodings(r, t, m);
				break;
			case 3:
				dec_string_list(r, t, &m->path_in_schema, &m->npath);
				break;
			case 4:
				if (field_enum(r, t, &v))
					m->codec = (cx_pq_codec) v;
				break;
			case 5:
				field_size64(r, t, &m->num_values);
				break;
			case 6:
				field_size64(r, t, &m->total_uncompressed_size);
				break;
			case 7:
				field_size64(r, t, &m->total_compressed_size);
				break;
			case 9:
				field_size64(r, t, &m->data_page_offset);
				break;
			case 11:
				m->has_dictionary_page_offset =
					field_size64(r, t, &m->dictionary_page_offset);
				break;
			case 12:
				m->has_statistics = true;
				dec_stats(r, t, &m->statistics);
				break;
			default:
				cx_thrift_r_skip(r, t, false);
		}
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "ColumnMetaData", column_meta_required);
}

static const char *const column_chunk_required[] = {[2] = "file_offset"};

static void
dec_column_chunk(cx_thrift_r *r, cx_pq_column_chunk *c)
{
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;

	if (!cx_thrift_r_begin(r, "ColumnChunk"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		switch (id)
		{
			case 2:
				field_size64(r, t, &c->file_offset);
				break;
			case 3:
				c->has_meta = true;
				dec_column_meta(r, t, &c->meta);
				break;
			case 4:
				field_size64(r, t, &c->offset_index_offset);
				break;
			case 5:
				field_size32(r, t, &c->offset_index_length);
				break;
			case 6:
				field_size64(r, t, &c->column_index_offset);
				break;
			case 7:
				field_size32(r, t, &c->column_index_length);
				break;
			default:
				cx_thrift_r_skip(r, t, false);
		}
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "ColumnChunk", column_chunk_required);
	/* An index location is only usable with both its offset and length. */
	c->has_offset_index = (seen & (1u << 4 | 1u << 5)) == (1u << 4 | 1u << 5);
	c->has_column_index = (seen & (1u << 6 | 1u << 7)) == (1u << 6 | 1u << 7);
}

static const char *const row_group_required[] = {
	[1] = "columns", [2] = "total_byte_size", [3] = "num_rows"
};

static void
dec_columns(cx_thrift_r *r, cx_thrift_type t, cx_pq_row_group *g)
{
	g->columns = begin_list_field(r, t, CX_THRIFT_STRUCT,
								  sizeof(cx_pq_column_chunk), &g->ncolumns);
	if (g->columns == NULL)
		return;
	for (uint32_t i = 0; i < g->ncolumns && cx_thrift_r_ok(r); i++)
		dec_column_chunk(r, &g->columns[i]);
	cx_thrift_r_list_end(r);
}

static void
dec_row_group(cx_thrift_r *r, cx_pq_row_group *g)
{
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;

	if (!cx_thrift_r_begin(r, "RowGroup"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		switch (id)
		{
			case 1:
				dec_columns(r, t, g);
				break;
			case 2:
				field_size64(r, t, &g->total_byte_size);
				break;
			case 3:
				field_size64(r, t, &g->num_rows);
				break;
			case 5:
				g->has_file_offset = field_size64(r, t, &g->file_offset);
				break;
			case 6:
				g->has_total_compressed_size =
					field_size64(r, t, &g->total_compressed_size);
				break;
			case 7:
				g->has_ordinal = cx_thrift_r_field_i16(r, t, &g->ordinal);
				break;
			default:
				cx_thrift_r_skip(r, t, false);
		}
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "RowGroup", row_group_required);
}

static const char *const key_value_required[] = {[1] = "key"};

static void
dec_key_value(cx_thrift_r *r, cx_pq_key_value *kv)
{
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;

	if (!cx_thrift_r_begin(r, "KeyValue"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		if (id == 1)
			cx_thrift_r_field_string(r, t, &kv->key);
		else if (id == 2)
			cx_thrift_r_field_string(r, t, &kv->value);
		else
			cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "KeyValue", key_value_required);
}

/* Decodes a list field of structs into a zeroed array of n elements. */
#define DEC_STRUCT_LIST(r, t, arr, n, dec) \
	do { \
		(arr) = begin_list_field(r, t, CX_THRIFT_STRUCT, sizeof(*(arr)), &(n)); \
		if ((arr) == NULL) \
			break; \
		for (uint32_t i_ = 0; i_ < (n) && cx_thrift_r_ok(r); i_++) \
			dec(r, &(arr)[i_]); \
		cx_thrift_r_list_end(r); \
	} while (0)

static void
dec_column_orders(cx_thrift_r *r, cx_thrift_type t, cx_pq_file_meta *m)
{
	uint32_t	n = 0;
	int			member;
	bool		all_type_defined = true;

	if (!cx_thrift_r_field_list(r, t, CX_THRIFT_STRUCT, &n))
		return;
	for (uint32_t i = 0; i < n && cx_thrift_r_ok(r); i++)
	{
		member = 0;
		dec_empty_union(r, "ColumnOrder", &member);
		all_type_defined &= member == 1;
	}
	cx_thrift_r_list_end(r);
	m->ncolumn_orders = n;
	m->type_defined_order = n > 0 && all_type_defined;
}

static const char *const file_meta_required[] = {
	[1] = "version", [2] = "schema", [3] = "num_rows", [4] = "row_groups"
};

cx_code
cx_pq_file_meta_decode(const uint8_t *p, size_t len, cx_pq_file_meta *out,
					   const char *what, cx_err *err)
{
	cx_thrift_r r;
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;

	memset(out, 0, sizeof(*out));
	cx_thrift_r_init(&r, p, len);
	if (cx_thrift_r_begin(&r, "FileMetaData"))
	{
		while (next_field(&r, &seen, &id, &t))
		{
			switch (id)
			{
				case 1:
					cx_thrift_r_field_i32(&r, t, &out->version);
					break;
				case 2:
					DEC_STRUCT_LIST(&r, t, out->schema, out->nschema,
									dec_schema_element);
					break;
				case 3:
					field_size64(&r, t, &out->num_rows);
					break;
				case 4:
					DEC_STRUCT_LIST(&r, t, out->row_groups, out->nrow_groups,
									dec_row_group);
					break;
				case 5:
					DEC_STRUCT_LIST(&r, t, out->kv, out->nkv, dec_key_value);
					break;
				case 6:
					cx_thrift_r_field_string(&r, t, &out->created_by);
					break;
				case 7:
					dec_column_orders(&r, t, out);
					break;
				default:
					cx_thrift_r_skip(&r, t, false);
			}
		}
		cx_thrift_r_end(&r);
		CHECK_REQUIRED(&r, seen, "FileMetaData", file_meta_required);
	}
	return finish(&r, what, "FileMetaData", err);
}

static const char *const data_page_required[] = {
	[1] = "num_values", [2] = "encoding", [3] = "definition_level_encoding",
	[4] = "repetition_level_encoding"
};

static void
dec_data_page_header(cx_thrift_r *r, cx_thrift_type t,
					 cx_pq_data_page_header *d)
{
	uint32_t	seen = 0;
	int16_t		id;
	int			v = 0;

	if (!begin_struct_field(r, t, "DataPageHeader"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		switch (id)
		{
			case 1:
				field_size32(r, t, &d->num_values);
				break;
			case 2:
				if (field_enum(r, t, &v))
					d->encoding = (cx_pq_encoding) v;
				break;
			case 3:
				if (field_enum(r, t, &v))
					d->definition_level_encoding = (cx_pq_encoding) v;
				break;
			case 4:
				if (field_enum(r, t, &v))
					d->repetition_level_encoding = (cx_pq_encoding) v;
				break;
			case 5:
				d->has_statistics = true;
				dec_stats(r, t, &d->statistics);
				break;
			default:
				cx_thrift_r_skip(r, t, false);
		}
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "DataPageHeader", data_page_required);
}

static const char *const dictionary_page_required[] = {
	[1] = "num_values", [2] = "encoding"
};

static void
dec_dictionary_page_header(cx_thrift_r *r, cx_thrift_type t,
						   cx_pq_dictionary_page_header *d)
{
	uint32_t	seen = 0;
	int16_t		id;
	int			v = 0;

	if (!begin_struct_field(r, t, "DictionaryPageHeader"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		if (id == 1)
			field_size32(r, t, &d->num_values);
		else if (id == 2)
		{
			if (field_enum(r, t, &v))
				d->encoding = (cx_pq_encoding) v;
		}
		else if (id == 3)
			d->has_is_sorted = cx_thrift_r_field_bool(r, t, &d->is_sorted);
		else
			cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "DictionaryPageHeader", dictionary_page_required);
}

static const char *const page_header_required[] = {
	[1] = "type", [2] = "uncompressed_page_size", [3] = "compressed_page_size"
};

cx_code
cx_pq_page_header_decode(const uint8_t *p, size_t len, cx_pq_page_header *out,
						 size_t *used, const char *what, cx_err *err)
{
	cx_thrift_r r;
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;
	int			v = 0;
	int32_t		crc = 0;

	memset(out, 0, sizeof(*out));
	cx_thrift_r_init(&r, p, len);
	if (cx_thrift_r_begin(&r, "PageHeader"))
	{
		while (next_field(&r, &seen, &id, &t))
		{
			switch (id)
			{
				case 1:
					if (field_enum(&r, t, &v))
						out->type = (cx_pq_page_type) v;
					break;
				case 2:
					field_size32(&r, t, &out->uncompressed_page_size);
					break;
				case 3:
					field_size32(&r, t, &out->compressed_page_size);
					break;
				case 4:
					if ((out->has_crc = cx_thrift_r_field_i32(&r, t, &crc)))
						out->crc = (uint32_t) crc;
					break;
				case 5:
					out->has_data_page = true;
					dec_data_page_header(&r, t, &out->data_page);
					break;
				case 7:
					out->has_dictionary_page = true;
					dec_dictionary_page_header(&r, t, &out->dictionary_page);
					break;
				default:
					cx_thrift_r_skip(&r, t, false);
			}
		}
		cx_thrift_r_end(&r);
		CHECK_REQUIRED(&r, seen, "PageHeader", page_header_required);
	}
	if (used)
		*used = r.bad ? 0 : r.pos;
	return finish(&r, what, "PageHeader", err);
}

static const char *const page_location_required[] = {
	[1] = "offset", [2] = "compressed_page_size", [3] = "first_row_index"
};

static void
dec_page_location(cx_thrift_r *r, cx_pq_page_location *loc)
{
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;

	if (!cx_thrift_r_begin(r, "PageLocation"))
		return;
	while (next_field(r, &seen, &id, &t))
	{
		if (id == 1)
			field_size64(r, t, &loc->offset);
		else if (id == 2)
			field_size32(r, t, &loc->compressed_page_size);
		else if (id == 3)
			field_size64(r, t, &loc->first_row_index);
		else
			cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	CHECK_REQUIRED(r, seen, "PageLocation", page_location_required);
}

static const char *const offset_index_required[] = {[1] = "page_locations"};

cx_code
cx_pq_offset_index_decode(const uint8_t *p, size_t len,
						  cx_pq_offset_index *out, const char *what,
						  cx_err *err)
{
	cx_thrift_r r;
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;

	memset(out, 0, sizeof(*out));
	cx_thrift_r_init(&r, p, len);
	if (cx_thrift_r_begin(&r, "OffsetIndex"))
	{
		while (next_field(&r, &seen, &id, &t))
		{
			if (id == 1)
				DEC_STRUCT_LIST(&r, t, out->pages, out->npages,
								dec_page_location);
			else
				cx_thrift_r_skip(&r, t, false);
		}
		cx_thrift_r_end(&r);
		CHECK_REQUIRED(&r, seen, "OffsetIndex", offset_index_required);
	}
	return finish(&r, what, "OffsetIndex", err);
}

/*
 * Column index lists are parallel: each must have the length of the first
 * one read, which sets npages.  So every array present has npages entries,
 * which is what cx_pq_column_index_free relies on.
 */
static void *
begin_index_list(cx_thrift_r *r, cx_thrift_type t, cx_thrift_type elem,
				 size_t size, cx_pq_column_index *x, bool first)
{
	uint32_t	n = 0;
	void	   *a = begin_list_field(r, t, elem, size, &n);

	if (a == NULL)
		return NULL;
	if (first)
		x->npages = n;
	else if (n != x->npages)
	{
		cx_thrift_r_fail(r, "list field %d has %u entries, expected %u",
						 r->field_id, n, x->npages);
		cx_thrift_r_list_end(r);
		free(a);
		return NULL;
	}
	return a;
}

static void
dec_null_pages(cx_thrift_r *r, cx_thrift_type t, cx_pq_column_index *x,
			   bool first)
{
	x->null_pages = begin_index_list(r, t, CX_THRIFT_TRUE, sizeof(bool),
									 x, first);
	if (x->null_pages == NULL)
		return;
	for (uint32_t i = 0; i < x->npages; i++)
		x->null_pages[i] = cx_thrift_r_bool_elem(r);
	cx_thrift_r_list_end(r);
}

static void
dec_bytes_list(cx_thrift_r *r, cx_thrift_type t, cx_pq_column_index *x,
			   cx_pq_bytes **out, bool first)
{
	cx_pq_bytes *a = begin_index_list(r, t, CX_THRIFT_BINARY,
									  sizeof(cx_pq_bytes), x, first);

	*out = a;
	if (a == NULL)
		return;
	for (uint32_t i = 0; i < x->npages && cx_thrift_r_ok(r); i++)
		cx_thrift_r_field_bytes(r, CX_THRIFT_BINARY, &a[i].ptr, &a[i].len);
	cx_thrift_r_list_end(r);
}

static void
dec_null_counts(cx_thrift_r *r, cx_thrift_type t, cx_pq_column_index *x,
				bool first)
{
	x->null_counts = begin_index_list(r, t, CX_THRIFT_I64, sizeof(int64_t),
									  x, first);
	if (x->null_counts == NULL)
		return;
	x->has_null_counts = true;
	for (uint32_t i = 0; i < x->npages; i++)
		x->null_counts[i] = cx_thrift_r_i64(r);
	cx_thrift_r_list_end(r);
}

static const char *const column_index_required[] = {
	[1] = "null_pages", [2] = "min_values", [3] = "max_values",
	[4] = "boundary_order"
};

#define LIST_FIELDS_MASK (1u << 1 | 1u << 2 | 1u << 3 | 1u << 5)

cx_code
cx_pq_column_index_decode(const uint8_t *p, size_t len,
						  cx_pq_column_index *out, const char *what,
						  cx_err *err)
{
	cx_thrift_r r;
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;
	int			v = 0;
	bool		first;

	memset(out, 0, sizeof(*out));
	cx_thrift_r_init(&r, p, len);
	if (cx_thrift_r_begin(&r, "ColumnIndex"))
	{
		while (next_field(&r, &seen, &id, &t))
		{
			/* seen already has id: first when no other list came before */
			first = (seen & LIST_FIELDS_MASK & ~(1u << id)) == 0;
			switch (id)
			{
				case 1:
					dec_null_pages(&r, t, out, first);
					break;
				case 2:
					dec_bytes_list(&r, t, out, &out->min_values, first);
					break;
				case 3:
					dec_bytes_list(&r, t, out, &out->max_values, first);
					break;
				case 4:
					if (field_enum(&r, t, &v))
						out->boundary_order = (cx_pq_boundary_order) v;
					break;
				case 5:
					dec_null_counts(&r, t, out, first);
					break;
				default:
					cx_thrift_r_skip(&r, t, false);
			}
		}
		cx_thrift_r_end(&r);
		CHECK_REQUIRED(&r, seen, "ColumnIndex", column_index_required);
	}
	return finish(&r, what, "ColumnIndex", err);
}

/* ---- freeing ---- */

static void
stats_free(cx_pq_stats *s)
{
	free(s->min_value.ptr);
	free(s->max_value.ptr);
}

static void
column_meta_free(cx_pq_column_meta *m)
{
	free(m->encodings);
	for (uint32_t i = 0; i < m->npath; i++)
		free(m->path_in_schema[i]);
	free(m->path_in_schema);
	stats_free(&m->statistics);
}

static void
row_group_free(cx_pq_row_group *g)
{
	for (uint32_t i = 0; i < g->ncolumns; i++)
		column_meta_free(&g->columns[i].meta);
	free(g->columns);
}

void
cx_pq_file_meta_free(cx_pq_file_meta *m)
{
	for (uint32_t i = 0; i < m->nschema; i++)
		free(m->schema[i].name);
	free(m->schema);
	for (uint32_t i = 0; i < m->nrow_groups; i++)
		row_group_free(&m->row_groups[i]);
	free(m->row_groups);
	for (uint32_t i = 0; i < m->nkv; i++)
	{
		free(m->kv[i].key);
		free(m->kv[i].value);
	}
	free(m->kv);
	free(m->created_by);
	memset(m, 0, sizeof(*m));
}

void
cx_pq_page_header_free(cx_pq_page_header *h)
{
	stats_free(&h->data_page.statistics);
	memset(h, 0, sizeof(*h));
}

void
cx_pq_offset_index_free(cx_pq_offset_index *x)
{
	free(x->pages);
	memset(x, 0, sizeof(*x));
}

void
cx_pq_column_index_free(cx_pq_column_index *x)
{
	for (uint32_t i = 0; i < x->npages; i++)
	{
		if (x->min_values)
			free(x->min_values[i].ptr);
		if (x->max_values)
			free(x->max_values[i].ptr);
	}
	free(x->null_pages);
	free(x->min_values);
	free(x->max_values);
	free(x->null_counts);
	memset(x, 0, sizeof(*x));
}
