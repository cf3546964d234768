/*
 * cx_gc_record.c — the retention records of garbage collection: codec,
 * merge, reading the newest and putting the next (cx_gc_record.h), and
 * what they tell the read path (ctxstore/lifecycle.h).
 */
#include "maintenance/cx_gc_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctxstore/lifecycle.h"
#include "objstore/cx_layout.h"
#include "objstore/cx_versioned.h"
#include "util/cx_frame.h"

#define CX_GC_RECORD_MAGIC "CXG1"
#define CX_GC_RECORD_FORMAT 1
#define RECORD_KIND "GC retention record"
/* Fixed part of the body: number, newest, count. */
#define RECORD_HEAD_LEN (8 + 8 + 4)
/* Numbers another run took first before a put gives up. */
#define MAX_PUT_RACES 8
/* Listings of the newest record whose read found it deleted (a run that
 * put a newer one collected it). */
#define MAX_LATEST_READS 3

void
cx_gc_record_free(cx_gc_record *r)
{
	free(r->retained);
	memset(r, 0, sizeof(*r));
}

static bool
retains(const cx_gc_record *r, uint64_t version)
{
	size_t		lo = 0;
	size_t		hi = r->n;

	while (lo < hi)
	{
		size_t		mid = lo + (hi - lo) / 2;

		if (r->retained[mid] == version)
			return true;
		if (r->retained[mid] < version)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool
cx_gc_record_collected(const cx_gc_record *r, uint64_t version)
{
	return version <= r->newest && !retains(r, version);
}

cx_code
cx_gc_record_merge(cx_gc_record *into, const cx_gc_record *other,
				   cx_err *err)
{
	uint64_t   *out;
	size_t		i = 0;
	size_t		j = 0;
	size_t		k = 0;

	if (other->newest == 0)
		return CX_OK;
	out = malloc((into->n + other->n) * sizeof(uint64_t));
	if (out == NULL)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory merging GC retention records");
	/* Every version either retains, ascending, kept if neither collected
	 * it. */
	while (i < into->n || j < other->n)
	{
		uint64_t	v = j == other->n ||
			(i < into->n && into->retained[i] < other->retained[j]) ?
			into->retained[i] : other->retained[j];

		i += i < into->n && into->retained[i] == v;
		j += j < other->n && other->retained[j] == v;
		if (!cx_gc_record_collected(into, v) &&
			!cx_gc_record_collected(other, v))
			out[k++] = v;
	}
	free(into->retained);
	into->retained = out;
	into->n = k;
	if (other->newest > into->newest)
		into->newest = other->newest;
	return CX_OK;
}

cx_code
cx_gc_record_encode(const cx_gc_record *r, cx_buf *out, cx_err *err)
{
	size_t		start;

	if (r->n > UINT32_MAX)
		return cx_err_set(err, CX_ERR_LIMIT,
						  "a GC retention record of %zu versions is over the limit",
						  r->n);
	start = cx_frame_begin(out, CX_GC_RECORD_MAGIC, CX_GC_RECORD_FORMAT);
	cx_buf_put_u64(out, r->number);
	cx_buf_put_u64(out, r->newest);
	cx_buf_put_u32(out, (uint32_t) r->n);
	for (size_t i = 0; i < r->n; i++)
		cx_buf_put_u64(out, r->retained[i]);
	return cx_frame_end(out, start, RECORD_KIND, err);
}

static cx_code
malformed(cx_gc_record *r, const char *name, const char *what, cx_err *err)
{
	cx_gc_record_free(r);
	return cx_err_set(err, CX_ERR_CORRUPT, RECORD_KIND " %s: %s", name, what);
}

/* The retained versions: ascending, each in [1, newest], the last newest
 * (GC always retains the newest). */
static cx_code
decode_retained(cx_rd *rd, cx_gc_record *r, const char *name, cx_err *err)
{
	for (size_t i = 0; i < r->n; i++)
	{
		uint64_t	v = cx_rd_u64(rd);

		if (v == 0 || (i > 0 && v <= r->retained[i - 1]))
			return malformed(r, name, "retained versions not ascending from 1", err);
		if (v > r->newest)
			return malformed(r, name, "a retained version above the newest", err);
		r->retained[i] = v;
	}
	if (r->retained[r->n - 1] != r->newest)
		return malformed(r, name, "the newest version is not retained", err);
	return CX_OK;
}

cx_code
cx_gc_record_decode(const uint8_t *data, size_t len, const char *name,
					cx_gc_record *r, cx_err *err)
{
	const uint8_t *body;
	uint32_t	body_len;
	cx_rd		rd;

	memset(r, 0, sizeof(*r));
	if (cx_frame_check(data, len, CX_GC_RECORD_MAGIC, CX_GC_RECORD_FORMAT,
					   RECORD_KIND, name, &body, &body_len, err) != CX_OK)
		return err->code;
	cx_rd_init(&rd, body, body_len);
	r->number = cx_rd_u64(&rd);
	r->newest = cx_rd_u64(&rd);
	r->n = cx_rd_u32(&rd);
	if (!cx_rd_ok(&rd))
		return malformed(r, name, "body shorter than its fixed fields", err);
	if (r->number == 0 || r->newest == 0 || r->n == 0)
		return malformed(r, name, "number, newest version or count is 0", err);
	if (cx_rd_left(&rd) != (uint64_t) r->n * sizeof(uint64_t))
		return malformed(r, name, "body length does not match the count", err);
	if ((r->retained = malloc(r->n * sizeof(uint64_t))) == NULL)
	{
		r->n = 0;
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory reading " RECORD_KIND " %s", name);
	}
	return decode_retained(&rd, r, name, err);
}

static void
record_name(cx_objstore *s, uint64_t number, char *key, char *name,
			size_t size)
{
	cx_vseq_key(&cx_layout_gc_records, number, key);
	snprintf(name, size, "%.900s/%s", s->uri, key);
}

/* Decodes the record read from number and checks it belongs there. */
static cx_code
decode_at(cx_objstore *s, uint64_t number, const cx_buf *b, cx_gc_record *r,
		  cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	char		name[2 * CX_KEY_MAX];

	record_name(s, number, key, name, sizeof(name));
	if (cx_gc_record_decode(b->data, b->len, name, r, err) != CX_OK)
		return err->code;
	if (r->number != number)
		return malformed(r, name, "holds another number than its key names", err);
	return CX_OK;
}

cx_code
cx_gc_record_load_latest(cx_objstore *s, cx_gc_record *r, cx_err *err)
{
	char		key[CX_KEY_MAX + 1];
	char		name[2 * CX_KEY_MAX];
	uint64_t	number = 0;
	cx_buf		b;
	cx_code		rc = CX_OK;

	memset(r, 0, sizeof(*r));
	cx_buf_init(&b);
	for (int reads = 0; reads < MAX_LATEST_READS; reads++)
	{
		rc = cx_vseq_latest(s, &cx_layout_gc_records, NULL, 0, &number, err);
		if (rc != CX_OK || number == 0)
			break;
		record_name(s, number, key, name, sizeof(name));
		rc = cx_obj_get(s, key, &b, err);
		if (rc != CX_ERR_NOT_FOUND)
			break;
	}
	if (rc == CX_OK && number > 0)
		rc = decode_at(s, number, &b, r, err);
	else if (rc == CX_ERR_NOT_FOUND)
		rc = cx_err_set(err, CX_ERR_CONFLICT,
						"the newest " RECORD_KIND " of %s was collected %d times while being read",
						s->uri, MAX_LATEST_READS);
	cx_buf_free(&b);
	return rc;
}

static bool
collect_number(void *arg, uint64_t n)
{
	cx_buf_put_u64(arg, n);
	return true;
}

/*
 * Deletes the records numbered below landed: the one landed holds all
 * their decisions.  A failure leaves them to the next run, which deletes
 * them the same way; a reader that finds the one it listed gone lists
 * again.
 */
static void
delete_replaced(cx_objstore *s, uint64_t landed)
{
	char		key[CX_KEY_MAX + 1];
	cx_buf		numbers;
	cx_err		err;

	cx_buf_init(&numbers);
	if (cx_vseq_list(s, &cx_layout_gc_records, collect_number, &numbers,
					 &err) == CX_OK && cx_buf_ok(&numbers))
		for (size_t off = 0; off < numbers.len; off += sizeof(uint64_t))
		{
			uint64_t	n = cx_load_u64(numbers.data + off);

			cx_vseq_key(&cx_layout_gc_records, n, key);
			if (n < landed)
				(void) cx_obj_delete(s, key, &err);
		}
	cx_buf_free(&numbers);
}

/*
 * Two runs that decided the same put the same bytes at a number: the one
 * that finds the other's there takes it for its own, which it is in all
 * that matters.
 */
cx_code
cx_gc_record_put(cx_objstore *s, cx_gc_record *mine, cx_err *err)
{
	cx_buf		b;
	cx_buf		taken;
	cx_vseq_outcome outcome = CX_VSEQ_FAILED;
	cx_code		rc = CX_OK;
	uint64_t	number = mine->number;

	cx_buf_init(&b);
	cx_buf_init(&taken);
	for (int races = 0; races < MAX_PUT_RACES && rc == CX_OK; races++)
	{
		cx_gc_record theirs;

		mine->number = ++number;
		cx_buf_reset(&b);
		cx_buf_reset(&taken);
		rc = cx_gc_record_encode(mine, &b, err);
		if (rc == CX_OK)
			rc = cx_vseq_put(s, &cx_layout_gc_records, number, &b, &taken,
							 &outcome, err);
		if (rc != CX_OK || outcome == CX_VSEQ_LANDED)
			break;
		rc = decode_at(s, number, &taken, &theirs, err);
		if (rc == CX_OK)
			rc = cx_gc_record_merge(mine, &theirs, err);
		cx_gc_record_free(&theirs);
	}
	if (rc == CX_OK && outcome != CX_VSEQ_LANDED)
		rc = cx_err_set(err, CX_ERR_CONFLICT,
						"could not record GC's retention in %s: other runs took %d numbers first",
						s->uri, MAX_PUT_RACES);
	if (rc == CX_OK)
		delete_replaced(s, number);
	cx_buf_free(&b);
	cx_buf_free(&taken);
	return rc;
}

cx_code
cx_gc_collected_versions(cx_objstore *s, const uint64_t *versions, size_t n,
						 bool *collected, cx_err *err)
{
	cx_gc_record r;
	cx_code		rc = cx_gc_record_load_latest(s, &r, err);

	for (size_t i = 0; i < n; i++)
		collected[i] = rc == CX_OK && cx_gc_record_collected(&r, versions[i]);
	cx_gc_record_free(&r);
	return rc;
}

cx_code
cx_gc_collected(cx_objstore *s, uint64_t version, bool *collected,
				cx_err *err)
{
	return cx_gc_collected_versions(s, &version, 1, collected, err);
}
