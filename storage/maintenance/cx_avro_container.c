/*
 * cx_avro_container.c — an Avro object container file checked before
 * libavro decodes it.
 *
 * libavro trusts the lengths it reads: a negative or huge string, bytes,
 * block or array length makes it allocate that much (gigabytes from a few
 * bytes) and its error paths then leak.  So every length is checked here
 * against what remains, in the container (magic, metadata map, sync
 * marker, each block's object count and byte size, the sync marker after
 * it) and within each block against the writer schema (every value of the
 * block walked: varints, string and bytes lengths, union branches, array
 * and map blocks), and the block must end exactly where its values do.
 * The writer schema must be one the caller knows: the file's text is
 * compared, never parsed (libavro's JSON schema parser leaks on malformed
 * ones).  libavro then decodes only blocks that passed, from memory.
 *
 * Stricter than the Avro spec where no Iceberg file needs more: only the
 * "null" codec (the one the engine writes), at most one array item or map
 * entry per byte left (no array of zero-sized items), one object per byte
 * of its block, schemas nested at most CX_AVRO_MAX_DEPTH deep.  Work is
 * bounded per byte of input.
 */
#include <string.h>

#include "maintenance/cx_avro_container.h"
#include "maintenance/cx_iceberg_int.h"

#define CX_AVRO_MAX_DEPTH 32

typedef struct cursor
{
	const uint8_t *p;
	const uint8_t *end;
} cursor;

static size_t
left(const cursor *c)
{
	return (size_t) (c->end - c->p);
}

/* A zig-zag varint of at most max_bytes bytes. */
static bool
read_varint(cursor *c, int max_bytes, int64_t *v)
{
	uint64_t	u = 0;

	for (int i = 0; i < max_bytes && c->p < c->end; i++)
	{
		uint8_t		b = *c->p++;

		u |= (uint64_t) (b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0)
		{
			*v = (int64_t) (u >> 1) ^ -(int64_t) (u & 1);
			return true;
		}
	}
	return false;
}

static bool
read_long(cursor *c, int64_t *v)
{
	return read_varint(c, 10, v);
}

/* A length (of a string, bytes, or a block) that the input still holds. */
static bool
read_len(cursor *c, size_t *len)
{
	int64_t		v;

	if (!read_long(c, &v) || v < 0 || (uint64_t) v > left(c))
		return false;
	*len = (size_t) v;
	return true;
}

static bool
skip(cursor *c, size_t n)
{
	if (n > left(c))
		return false;
	c->p += n;
	return true;
}

static bool
skip_bytes(cursor *c)
{
	size_t		len;

	return read_len(c, &len) && skip(c, len);
}

/*
 * The item count of the next block of an array or map (0: the last), and
 * the block's byte size checked when the writer gave one (negative count).
 */
static bool
read_block_count(cursor *c, int64_t *count)
{
	size_t		size;

	if (!read_long(c, count) || *count == INT64_MIN)
		return false;
	if (*count < 0)
	{
		*count = -*count;
		if (!read_len(c, &size))
			return false;
	}
	return (uint64_t) *count <= left(c);
}

static bool walk_value(cursor *c, avro_schema_t s, int depth);

/* An array's items or a map's entries (a string key before each value). */
static bool
walk_blocks(cursor *c, avro_schema_t items, bool keyed, int depth)
{
	int64_t		count;

	do
	{
		if (!read_block_count(c, &count))
			return false;
		for (int64_t i = 0; i < count; i++)
			if ((keyed && !skip_bytes(c)) || !walk_value(c, items, depth))
				return false;
	} while (count > 0);
	return true;
}

/* An index (a union branch, an enum symbol) below n. */
static bool
read_index(cursor *c, int64_t n, int *index)
{
	int64_t		i;

	if (!read_long(c, &i) || i < 0 || i >= n)
		return false;
	*index = (int) i;
	return true;
}

static bool
walk_record(cursor *c, avro_schema_t s, int depth)
{
	size_t		n = avro_schema_record_size(s);

	for (size_t i = 0; i < n; i++)
		if (!walk_value(c, avro_schema_record_field_get_by_index(s, (int) i), depth))
			return false;
	return true;
}

static bool
walk_union(cursor *c, avro_schema_t s, int depth)
{
	int			i;

	return read_index(c, (int64_t) avro_schema_union_size(s), &i) &&
		walk_value(c, avro_schema_union_branch(s, i), depth);
}

/* One value of schema s at c, every length in it checked. */
static bool
walk_value(cursor *c, avro_schema_t s, int depth)
{
	int64_t		v;
	int			symbol;

	if (s == NULL || ++depth > CX_AVRO_MAX_DEPTH)
		return false;
	switch (avro_typeof(s))
	{
		case AVRO_NULL:
			return true;
		case AVRO_BOOLEAN:
			return c->p < c->end && *c->p++ <= 1;
		case AVRO_INT32:
			return read_varint(c, 5, &v) && v >= INT32_MIN && v <= INT32_MAX;
		case AVRO_INT64:
			return read_long(c, &v);
		case AVRO_FLOAT:
			return skip(c, 4);
		case AVRO_DOUBLE:
			return skip(c, 8);
		case AVRO_STRING:
		case AVRO_BYTES:
			return skip_bytes(c);
		case AVRO_FIXED:
			return skip(c, (size_t) avro_schema_fixed_size(s));
		case AVRO_ENUM:
			return read_index(c, avro_schema_enum_number_of_symbols(s), &symbol);
		case AVRO_RECORD:
			return walk_record(c, s, depth);
		case AVRO_UNION:
			return walk_union(c, s, depth);
		case AVRO_ARRAY:
			return walk_blocks(c, avro_schema_array_items(s), false, depth);
		case AVRO_MAP:
			return walk_blocks(c, avro_schema_map_values(s), true, depth);
		case AVRO_LINK:
			return walk_value(c, avro_schema_link_target(s), depth);
		default:
			return false;
	}
}

/* ---- the container ---- */

static cx_code
corrupt(const char *name, const char *what, cx_err *err)
{
	return cx_err_set(err, CX_ERR_CORRUPT, "%s is no valid Avro file: %s", name, what);
}

/* Calls fn for each key and value of the metadata map at c; false on a
 * malformed map. */
typedef void (*meta_fn) (void *arg, const cursor *key, const cursor *value);

static bool
walk_meta(cursor *c, meta_fn fn, void *arg)
{
	int64_t		count;

	do
	{
		if (!read_block_count(c, &count))
			return false;
		for (int64_t i = 0; i < count; i++)
		{
			cursor		key,
						value;
			size_t		len;

			if (!read_len(c, &len))
				return false;
			key = (cursor) {c->p, c->p + len};
			c->p += len;
			if (!read_len(c, &len))
				return false;
			value = (cursor) {c->p, c->p + len};
			c->p += len;
			fn(arg, &key, &value);
		}
	} while (count > 0);
	return true;
}

/* Whether key holds exactly the bytes of the string name. */
static bool
is_key(const cursor *key, const char *name)
{
	return left(key) == strlen(name) && memcmp(key->p, name, left(key)) == 0;
}

/* The metadata a reader needs: the writer schema's text and the codec. */
typedef struct header_meta
{
	cursor		schema;
	cursor		codec;
} header_meta;

static void
take_header_meta(void *arg, const cursor *key, const cursor *value)
{
	header_meta *m = arg;

	if (is_key(key, "avro.schema"))
		m->schema = *value;
	else if (is_key(key, "avro.codec"))
		m->codec = *value;
}

/* The magic and the metadata map of data, fn called on each entry; c is
 * left at the sync marker. */
static cx_code
walk_header(const cx_buf *data, const char *name, cursor *c, meta_fn fn,
			void *arg, cx_err *err)
{
	if (data->len == 0)
		return corrupt(name, "an empty object", err);
	*c = (cursor) {data->data, data->data + data->len};
	if (data->len > CX_ICE_AVRO_MAX_BYTES)
		return cx_err_set(err, CX_ERR_CORRUPT,
						  "%s is an Avro file of %zu bytes, over the %d MiB an Iceberg manifest may take",
						  name, data->len, CX_ICE_AVRO_MAX_BYTES >> 20);
	if (!skip(c, CX_AVRO_MAGIC_LEN) || memcmp(data->data, CX_AVRO_MAGIC, CX_AVRO_MAGIC_LEN) != 0)
		return corrupt(name, "no Avro magic", err);
	if (!walk_meta(c, fn, arg))
		return corrupt(name, "a malformed metadata map", err);
	return CX_OK;
}

/*
 * The schema text, if it is one of known, parsed.  libavro never parses a
 * schema read from a file: its JSON parser leaks on malformed ones.
 */
static bool
parse_known_schema(const cursor *text, const char *const *known, int nknown,
				   avro_schema_t *schema)
{
	for (int i = 0; i < nknown; i++)
		if (is_key(text, known[i]))
			return avro_schema_from_json_length(known[i], strlen(known[i]), schema) == 0;
	return false;
}

cx_code
cx_avro_open(const cx_buf *data, const char *name, const char *const *known,
			 int nknown, cx_avro_file *f, cx_err *err)
{
	header_meta m = {{NULL, NULL}, {NULL, NULL}};
	cursor		c;
	cx_code		rc = walk_header(data, name, &c, take_header_meta, &m, err);

	memset(f, 0, sizeof(*f));
	if (rc != CX_OK)
		return rc;
	if (m.schema.p == NULL)
		return corrupt(name, "no avro.schema", err);
	if (m.codec.p != NULL && !is_key(&m.codec, "null"))
		return corrupt(name, "a codec other than null", err);
	f->sync = c.p;
	if (!skip(&c, CX_AVRO_SYNC_LEN))
		return corrupt(name, "no sync marker", err);
	if (!parse_known_schema(&m.schema, known, nknown, &f->schema))
		return corrupt(name, "an avro.schema other than those the engine writes", err);
	f->next = c.p;
	f->end = c.end;
	return CX_OK;
}

cx_code
cx_avro_next_block(cx_avro_file *f, const char *name, cx_avro_block *b,
				   cx_err *err)
{
	cursor		c = {f->next, f->end};
	cursor		values;

	memset(b, 0, sizeof(*b));
	if (left(&c) == 0)
		return CX_OK;
	if (!read_long(&c, &b->count) || b->count < 0 || !read_len(&c, &b->len) ||
		(uint64_t) b->count > b->len)
		return corrupt(name, "a block's count or size out of range", err);
	b->data = c.p;
	values = (cursor) {c.p, c.p + b->len};
	for (int64_t i = 0; i < b->count; i++)
		if (!walk_value(&values, f->schema, 0))
			return corrupt(name, "a value out of its block", err);
	if (left(&values) != 0)
		return corrupt(name, "a block longer than its values", err);
	c.p += b->len;
	if (left(&c) < CX_AVRO_SYNC_LEN || memcmp(c.p, f->sync, CX_AVRO_SYNC_LEN) != 0)
		return corrupt(name, "a block not followed by the sync marker", err);
	f->next = c.p + CX_AVRO_SYNC_LEN;
	return CX_OK;
}

void
cx_avro_close(cx_avro_file *f)
{
	if (f->schema != NULL)
		avro_schema_decref(f->schema);
	memset(f, 0, sizeof(*f));
}

/* The value of one key of the metadata map. */
typedef struct meta_lookup
{
	const char *key;
	cursor		value;
} meta_lookup;

static void
find_key(void *arg, const cursor *key, const cursor *value)
{
	meta_lookup *l = arg;

	if (is_key(key, l->key))
		l->value = *value;
}

cx_code
cx_ice_avro_file_meta(const cx_buf *data, const char *name, const char *key,
					  char **value, cx_err *err)
{
	meta_lookup l = {key, {NULL, NULL}};
	cursor		c;
	cx_code		rc = walk_header(data, name, &c, find_key, &l, err);

	*value = NULL;
	if (rc != CX_OK || l.value.p == NULL)
		return rc;
	if ((*value = strndup((const char *) l.value.p, left(&l.value))) == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading %s", name);
	return CX_OK;
}
