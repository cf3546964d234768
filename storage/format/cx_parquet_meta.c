/*
 * cx_parquet_meta.c — Parquet metadata structures to and from the Thrift
 * compact protocol (cx_parquet_meta.h).  Field ids are parquet.thrift's.
 *
 * Decoders are table-driven: a struct_desc per struct names its fields'
 * decoder and its required fields, and dec_struct reads any struct with
 * it.  Lists are allocated zeroed and their length stored at once, so the
 * _free functions can free a partly decoded structure.
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
enc_sorting_column(cx_thrift_w *w, const cx_pq_sorting_column *s)
{
	cx_thrift_w_begin(w);
	cx_thrift_w_field_i32(w, 1, s->column_idx);
	cx_thrift_w_field_bool(w, 2, s->descending);
	cx_thrift_w_field_bool(w, 3, s->nulls_first);
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
	if (g->nsorting > 0)
	{
		cx_thrift_w_field_list(w, 4, CX_THRIFT_STRUCT, g->nsorting);
		for (uint32_t i = 0; i < g->nsorting; i++)
			enc_sorting_column(w, &g->sorting[i]);
	}
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
	/* With no leaves there is nothing to order: an empty list would read
	 * back as no TypeDefinedOrder and re-encode differently. */
	if (m->type_defined_order && count_leaves(m) > 0)
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

/* ---- decoding ---- */

/*
 * Each struct is described by a struct_desc: its name (for messages), the
 * function that decodes one of its fields, and its required fields.
 * dec_struct does the rest: field headers, skipping fields the function
 * does not take, refusing a known field met twice (the second copy would
 * leak the first), and the required-field check.
 */

/* Decodes field id of wire type t into out; false if the struct has no
 * such field this file reads (dec_struct skips it). */
typedef bool (*field_decoder) (cx_thrift_r *r, int16_t id, cx_thrift_type t,
							   void *out);

typedef struct struct_desc
{
	const char *name;
	field_decoder field;
	const char *const *required;	/* [id] = name of required field id */
	size_t		nrequired;
	bool		is_union;		/* a member must be present */
	/* Called after the struct with the ids 1..31 met, when set. */
	void		(*done) (uint32_t seen, void *out);
} struct_desc;

static uint32_t
id_bit(int16_t id)
{
	/* every parquet.thrift id this file reads is below 32 */
	return (id > 0 && id < 32) ? 1u << id : 0;
}

static void
dec_struct(cx_thrift_r *r, const struct_desc *d, void *out)
{
	uint32_t	seen = 0;
	int16_t		id;
	cx_thrift_type t;
	bool		any = false;

	if (!cx_thrift_r_begin(r, d->name))
		return;
	while (cx_thrift_r_next(r, &id, &t))
	{
		if (seen & id_bit(id))
		{
			cx_thrift_r_fail(r, "field %d repeated", id);
			break;
		}
		seen |= id_bit(id);
		any = true;
		if (!d->field(r, id, t, out))
			cx_thrift_r_skip(r, t, false);
	}
	cx_thrift_r_end(r);
	for (size_t i = 1; i < d->nrequired && !r->bad; i++)
		if (d->required[i] && !(seen & (1u << i)))
			cx_thrift_r_fail(r, "%s.%s missing", d->name, d->required[i]);
	if (d->is_union && !any && !r->bad)
		cx_thrift_r_fail(r, "%s without a member", d->name);
	if (d->done && !r->bad)
		d->done(seen, out);
}

static void
dec_struct_field(cx_thrift_r *r, cx_thrift_type t, const struct_desc *d,
				 void *out)
{
	if (cx_thrift_r_want(r, t, CX_THRIFT_STRUCT))
		dec_struct(r, d, out);
}

/* Opens a list field and allocates its n zeroed elements (closed with
 * cx_thrift_r_list_end by the caller when the result is not NULL).  n is
 * set with the allocation, so the _free functions can free a list whose
 * elements were only partly decoded. */
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

/* A list field of structs, each size bytes. */
static void *
dec_struct_list(cx_thrift_r *r, cx_thrift_type t, const struct_desc *d,
				size_t size, uint32_t *n)
{
	char	   *a = begin_list_field(r, t, CX_THRIFT_STRUCT, size, n);

	if (a == NULL)
		return NULL;
	for (uint32_t i = 0; i < *n && cx_thrift_r_ok(r); i++)
		dec_struct(r, d, a + (size_t) i * size);
	cx_thrift_r_list_end(r);
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

static bool
field_bytes(cx_thrift_r *r, cx_thrift_type t, cx_pq_bytes *b)
{
	return cx_thrift_r_field_bytes(r, t, &b->ptr, &b->len);
}

/* Reads one top-level struct. */
static cx_code
dec_top(const uint8_t *p, size_t len, const struct_desc *d, void *out,
		size_t *used, const char *what, cx_err *err)
{
	cx_thrift_r r;

	cx_thrift_r_init(&r, p, len);
	dec_struct(&r, d, out);
	if (used)
		*used = r.bad ? 0 : r.pos;
	if (r.bad)
		return cx_err_set(err, r.nomem ? CX_ERR_NOMEM : CX_ERR_CORRUPT,
						  "%s: Parquet %s: %s", what, d->name, r.msg);
	return CX_OK;
}

/* -- Statistics -- */

static bool
stats_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_stats *s = out;

	switch (id)
	{
		case 3:
			s->has_null_count = cx_thrift_r_field_i64(r, t, &s->null_count);
			break;
		case 5:
			s->has_max = field_bytes(r, t, &s->max_value);
			break;
		case 6:
			s->has_min = field_bytes(r, t, &s->min_value);
			break;
		case 7:
			s->has_max_exact = cx_thrift_r_field_bool(r, t, &s->max_exact);
			break;
		case 8:
			s->has_min_exact = cx_thrift_r_field_bool(r, t, &s->min_exact);
			break;
		default:
			return false;
	}
	return true;
}

static const struct_desc stats_desc = {.name = "Statistics", .field = stats_field};

/* -- LogicalType -- */

/* A member of a union of empty structs (TimeUnit, ColumnOrder): out is an
 * int that gets the member's id. */
static bool
member_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	(void) r;
	(void) t;
	*(int *) out = id;
	return false;				/* its empty struct is skipped */
}

static const struct_desc time_unit_desc = {
	.name = "TimeUnit", .field = member_field, .is_union = true
};

static bool
decimal_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_logical *lt = out;

	if (id == 1)
		cx_thrift_r_field_i32(r, t, &lt->scale);
	else if (id == 2)
		cx_thrift_r_field_i32(r, t, &lt->precision);
	else
		return false;
	return true;
}

/* TimeType and TimestampType have the same fields. */
static bool
time_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_logical *lt = out;
	int			unit = 0;

	if (id == 1)
		cx_thrift_r_field_bool(r, t, &lt->adjusted_to_utc);
	else if (id == 2)
	{
		dec_struct_field(r, t, &time_unit_desc, &unit);
		lt->unit = (cx_pq_time_unit) unit;
	}
	else
		return false;
	return true;
}

static bool
int_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_logical *lt = out;

	if (id == 1)
		cx_thrift_r_field_i8(r, t, &lt->bit_width);
	else if (id == 2)
		cx_thrift_r_field_bool(r, t, &lt->is_signed);
	else
		return false;
	return true;
}

static const char *const decimal_required[] = {NULL, "scale", "precision"};
static const char *const time_required[] = {NULL, "isAdjustedToUTC", "unit"};
static const char *const int_required[] = {NULL, "bitWidth", "isSigned"};

#define DESC(name, field, required) \
	{name, field, required, lengthof(required), false, NULL}

static const struct_desc decimal_desc =
	DESC("DecimalType", decimal_field, decimal_required);
static const struct_desc time_desc =
	DESC("TimeType", time_field, time_required);
static const struct_desc timestamp_desc =
	DESC("TimestampType", time_field, time_required);
static const struct_desc int_desc =
	DESC("IntType", int_field, int_required);

static bool
logical_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_logical *lt = out;

	/* A member this file does not know is kept by its id (the reader
	 * refuses it by that); its contents are skipped. */
	lt->kind = (cx_pq_logical_kind) id;
	switch (id)
	{
		case CX_PQ_LT_DECIMAL:
			dec_struct_field(r, t, &decimal_desc, lt);
			break;
		case CX_PQ_LT_TIME:
			dec_struct_field(r, t, &time_desc, lt);
			break;
		case CX_PQ_LT_TIMESTAMP:
			dec_struct_field(r, t, &timestamp_desc, lt);
			break;
		case CX_PQ_LT_INTEGER:
			dec_struct_field(r, t, &int_desc, lt);
			break;
		default:
			return false;
	}
	return true;
}

static const struct_desc logical_desc = {
	.name = "LogicalType", .field = logical_field, .is_union = true
};

/* -- SchemaElement -- */

static bool
schema_element_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_schema_element *e = out;
	int			v = 0;

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
			dec_struct_field(r, t, &logical_desc, &e->logical);
			break;
		default:
			return false;
	}
	return true;
}

static const char *const schema_element_required[] = {[4] = "name"};
static const struct_desc schema_element_desc =
	DESC("SchemaElement", schema_element_field, schema_element_required);

/* -- ColumnMetaData, ColumnChunk, RowGroup -- */

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

static bool
column_meta_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_column_meta *m = out;
	int			v = 0;

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
			dec_struct_field(r, t, &stats_desc, &m->statistics);
			break;
		default:
			return false;
	}
	return true;
}

static const char *const column_meta_required[] = {
	[1] = "type", [2] = "encodings", [3] = "path_in_schema", [4] = "codec",
	[5] = "num_values", [6] = "total_uncompressed_size",
	[7] = "total_compressed_size", [9] = "data_page_offset"
};
static const struct_desc column_meta_desc =
	DESC("ColumnMetaData", column_meta_field, column_meta_required);

static bool
column_chunk_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_column_chunk *c = out;

	switch (id)
	{
		case 2:
			field_size64(r, t, &c->file_offset);
			break;
		case 3:
			c->has_meta = true;
			dec_struct_field(r, t, &column_meta_desc, &c->meta);
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
			return false;
	}
	return true;
}

/* An index location is only usable with both its offset and its length. */
static void
column_chunk_done(uint32_t seen, void *out)
{
	cx_pq_column_chunk *c = out;
	uint32_t	offset_index = id_bit(4) | id_bit(5);
	uint32_t	column_index = id_bit(6) | id_bit(7);

	c->has_offset_index = (seen & offset_index) == offset_index;
	c->has_column_index = (seen & column_index) == column_index;
}

static const char *const column_chunk_required[] = {[2] = "file_offset"};
static const struct_desc column_chunk_desc = {
	"ColumnChunk", column_chunk_field, column_chunk_required,
	lengthof(column_chunk_required), false, column_chunk_done
};

static bool
sorting_column_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_sorting_column *s = out;

	switch (id)
	{
		case 1:
			if (cx_thrift_r_field_i32(r, t, &s->column_idx) &&
				s->column_idx < 0)
				cx_thrift_r_fail(r, "field %d is negative", r->field_id);
			break;
		case 2:
			cx_thrift_r_field_bool(r, t, &s->descending);
			break;
		case 3:
			cx_thrift_r_field_bool(r, t, &s->nulls_first);
			break;
		default:
			return false;
	}
	return true;
}

static const char *const sorting_column_required[] = {
	[1] = "column_idx", [2] = "descending", [3] = "nulls_first"
};
static const struct_desc sorting_column_desc =
	DESC("SortingColumn", sorting_column_field, sorting_column_required);

static bool
row_group_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_row_group *g = out;

	switch (id)
	{
		case 1:
			g->columns = dec_struct_list(r, t, &column_chunk_desc,
										 sizeof(*g->columns), &g->ncolumns);
			break;
		case 2:
			field_size64(r, t, &g->total_byte_size);
			break;
		case 3:
			field_size64(r, t, &g->num_rows);
			break;
		case 4:
			g->sorting = dec_struct_list(r, t, &sorting_column_desc,
										 sizeof(*g->sorting), &g->nsorting);
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
			return false;
	}
	return true;
}

static const char *const row_group_required[] = {
	[1] = "columns", [2] = "total_byte_size", [3] = "num_rows"
};
static const struct_desc row_group_desc =
	DESC("RowGroup", row_group_field, row_group_required);

/* -- FileMetaData -- */

static bool
key_value_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_key_value *kv = out;

	if (id == 1)
		cx_thrift_r_field_string(r, t, &kv->key);
	else if (id == 2)
		cx_thrift_r_field_string(r, t, &kv->value);
	else
		return false;
	return true;
}

static const char *const key_value_required[] = {[1] = "key"};
static const struct_desc key_value_desc =
	DESC("KeyValue", key_value_field, key_value_required);

static const struct_desc column_order_desc = {
	.name = "ColumnOrder", .field = member_field, .is_union = true
};

static void
dec_column_orders(cx_thrift_r *r, cx_thrift_type t, cx_pq_file_meta *m)
{
	uint32_t	n = 0;
	bool		all_type_defined = true;

	if (!cx_thrift_r_field_list(r, t, CX_THRIFT_STRUCT, &n))
		return;
	for (uint32_t i = 0; i < n && cx_thrift_r_ok(r); i++)
	{
		int			member = 0;

		dec_struct(r, &column_order_desc, &member);
		all_type_defined &= member == 1;
	}
	cx_thrift_r_list_end(r);
	m->ncolumn_orders = n;
	m->type_defined_order = n > 0 && all_type_defined;
}

static bool
file_meta_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_file_meta *m = out;

	switch (id)
	{
		case 1:
			cx_thrift_r_field_i32(r, t, &m->version);
			break;
		case 2:
			m->schema = dec_struct_list(r, t, &schema_element_desc,
										sizeof(*m->schema), &m->nschema);
			break;
		case 3:
			field_size64(r, t, &m->num_rows);
			break;
		case 4:
			m->row_groups = dec_struct_list(r, t, &row_group_desc,
											sizeof(*m->row_groups),
											&m->nrow_groups);
			break;
		case 5:
			m->kv = dec_struct_list(r, t, &key_value_desc, sizeof(*m->kv),
									&m->nkv);
			break;
		case 6:
			cx_thrift_r_field_string(r, t, &m->created_by);
			break;
		case 7:
			dec_column_orders(r, t, m);
			break;
		default:
			return false;
	}
	return true;
}

static const char *const file_meta_required[] = {
	[1] = "version", [2] = "schema", [3] = "num_rows", [4] = "row_groups"
};
static const struct_desc file_meta_desc =
	DESC("FileMetaData", file_meta_field, file_meta_required);

cx_code
cx_pq_file_meta_decode(const uint8_t *p, size_t len, cx_pq_file_meta *out,
					   const char *what, cx_err *err)
{
	memset(out, 0, sizeof(*out));
	return dec_top(p, len, &file_meta_desc, out, NULL, what, err);
}

/* -- PageHeader -- */

static bool
data_page_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_data_page_header *d = out;
	int			v = 0;

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
			dec_struct_field(r, t, &stats_desc, &d->statistics);
			break;
		default:
			return false;
	}
	return true;
}

static const char *const data_page_required[] = {
	[1] = "num_values", [2] = "encoding", [3] = "definition_level_encoding",
	[4] = "repetition_level_encoding"
};
static const struct_desc data_page_desc =
	DESC("DataPageHeader", data_page_field, data_page_required);

static bool
dictionary_page_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_dictionary_page_header *d = out;
	int			v = 0;

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
		return false;
	return true;
}

static const char *const dictionary_page_required[] = {
	[1] = "num_values", [2] = "encoding"
};
static const struct_desc dictionary_page_desc =
	DESC("DictionaryPageHeader", dictionary_page_field,
		 dictionary_page_required);

static bool
page_header_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_page_header *h = out;
	int			v = 0;
	int32_t		crc = 0;

	switch (id)
	{
		case 1:
			if (field_enum(r, t, &v))
				h->type = (cx_pq_page_type) v;
			break;
		case 2:
			field_size32(r, t, &h->uncompressed_page_size);
			break;
		case 3:
			field_size32(r, t, &h->compressed_page_size);
			break;
		case 4:
			if ((h->has_crc = cx_thrift_r_field_i32(r, t, &crc)))
				h->crc = (uint32_t) crc;
			break;
		case 5:
			h->has_data_page = true;
			dec_struct_field(r, t, &data_page_desc, &h->data_page);
			break;
		case 7:
			h->has_dictionary_page = true;
			dec_struct_field(r, t, &dictionary_page_desc, &h->dictionary_page);
			break;
		default:
			return false;
	}
	return true;
}

static const char *const page_header_required[] = {
	[1] = "type", [2] = "uncompressed_page_size", [3] = "compressed_page_size"
};
static const struct_desc page_header_desc =
	DESC("PageHeader", page_header_field, page_header_required);

cx_code
cx_pq_page_header_decode(const uint8_t *p, size_t len, cx_pq_page_header *out,
						 size_t *used, const char *what, cx_err *err)
{
	memset(out, 0, sizeof(*out));
	return dec_top(p, len, &page_header_desc, out, used, what, err);
}

/* -- OffsetIndex -- */

static bool
page_location_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_page_location *loc = out;

	if (id == 1)
		field_size64(r, t, &loc->offset);
	else if (id == 2)
		field_size32(r, t, &loc->compressed_page_size);
	else if (id == 3)
		field_size64(r, t, &loc->first_row_index);
	else
		return false;
	return true;
}

static const char *const page_location_required[] = {
	[1] = "offset", [2] = "compressed_page_size", [3] = "first_row_index"
};
static const struct_desc page_location_desc =
	DESC("PageLocation", page_location_field, page_location_required);

static bool
offset_index_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	cx_pq_offset_index *x = out;

	if (id != 1)
		return false;
	x->pages = dec_struct_list(r, t, &page_location_desc, sizeof(*x->pages),
							   &x->npages);
	return true;
}

static const char *const offset_index_required[] = {[1] = "page_locations"};
static const struct_desc offset_index_desc =
	DESC("OffsetIndex", offset_index_field, offset_index_required);

cx_code
cx_pq_offset_index_decode(const uint8_t *p, size_t len,
						  cx_pq_offset_index *out, const char *what,
						  cx_err *err)
{
	memset(out, 0, sizeof(*out));
	return dec_top(p, len, &offset_index_desc, out, NULL, what, err);
}

/* -- ColumnIndex -- */

/* Its lists are parallel: each must have the length of the first one read,
 * which sets npages.  So every array present has npages entries, which is
 * what cx_pq_column_index_free relies on. */
typedef struct column_index_dec
{
	cx_pq_column_index *x;
	bool		have_npages;
} column_index_dec;

static void *
begin_index_list(cx_thrift_r *r, cx_thrift_type t, cx_thrift_type elem,
				 size_t size, column_index_dec *ci)
{
	uint32_t	n = 0;
	void	   *a = begin_list_field(r, t, elem, size, &n);

	if (a == NULL)
		return NULL;
	if (!ci->have_npages)
	{
		ci->x->npages = n;
		ci->have_npages = true;
	}
	else if (n != ci->x->npages)
	{
		cx_thrift_r_fail(r, "list field %d has %u entries, expected %u",
						 r->field_id, n, ci->x->npages);
		cx_thrift_r_list_end(r);
		free(a);
		return NULL;
	}
	return a;
}

static void
dec_null_pages(cx_thrift_r *r, cx_thrift_type t, column_index_dec *ci)
{
	cx_pq_column_index *x = ci->x;

	x->null_pages = begin_index_list(r, t, CX_THRIFT_TRUE, sizeof(bool), ci);
	if (x->null_pages == NULL)
		return;
	for (uint32_t i = 0; i < x->npages; i++)
		x->null_pages[i] = cx_thrift_r_bool_elem(r);
	cx_thrift_r_list_end(r);
}

static cx_pq_bytes *
dec_bytes_list(cx_thrift_r *r, cx_thrift_type t, column_index_dec *ci)
{
	cx_pq_bytes *a = begin_index_list(r, t, CX_THRIFT_BINARY,
									  sizeof(cx_pq_bytes), ci);

	if (a == NULL)
		return NULL;
	for (uint32_t i = 0; i < ci->x->npages && cx_thrift_r_ok(r); i++)
		field_bytes(r, CX_THRIFT_BINARY, &a[i]);
	cx_thrift_r_list_end(r);
	return a;
}

static void
dec_null_counts(cx_thrift_r *r, cx_thrift_type t, column_index_dec *ci)
{
	cx_pq_column_index *x = ci->x;

	x->null_counts = begin_index_list(r, t, CX_THRIFT_I64, sizeof(int64_t),
									  ci);
	if (x->null_counts == NULL)
		return;
	x->has_null_counts = true;
	for (uint32_t i = 0; i < x->npages; i++)
		x->null_counts[i] = cx_thrift_r_i64(r);
	cx_thrift_r_list_end(r);
}

static bool
column_index_field(cx_thrift_r *r, int16_t id, cx_thrift_type t, void *out)
{
	column_index_dec *ci = out;
	int			v = 0;

	switch (id)
	{
		case 1:
			dec_null_pages(r, t, ci);
			break;
		case 2:
			ci->x->min_values = dec_bytes_list(r, t, ci);
			break;
		case 3:
			ci->x->max_values = dec_bytes_list(r, t, ci);
			break;
		case 4:
			if (field_enum(r, t, &v))
				ci->x->boundary_order = (cx_pq_boundary_order) v;
			break;
		case 5:
			dec_null_counts(r, t, ci);
			break;
		default:
			return false;
	}
	return true;
}

static const char *const column_index_required[] = {
	[1] = "null_pages", [2] = "min_values", [3] = "max_values",
	[4] = "boundary_order"
};
static const struct_desc column_index_desc =
	DESC("ColumnIndex", column_index_field, column_index_required);

cx_code
cx_pq_column_index_decode(const uint8_t *p, size_t len,
						  cx_pq_column_index *out, const char *what,
						  cx_err *err)
{
	column_index_dec ci = {.x = out};

	memset(out, 0, sizeof(*out));
	return dec_top(p, len, &column_index_desc, &ci, NULL, what, err);
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
	free(g->sorting);
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
