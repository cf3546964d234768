/*
 * cx_writer_batch.c — lays a transaction's write requests out in one batch,
 * in the request ring or a dynamic shared memory segment (backend side), and
 * reads them back (worker side).
 *
 * A batch carries rows to write, or (one request, no rows) a control request
 * or a merge job; every request carries the store's URI, the options that
 * open it and the table's settings.  The encoded rows, which dominate the
 * size, are copied exactly once: from the FDW's transaction buffer into the
 * batch.  The worker decodes them in place, and checks every offset before
 * using it, so a malformed batch fails its request instead of the worker.
 */
#include "postgres.h"

#include "ctxstore/engine.h"
#include "cx_writer_shmem.h"

/* Bytes of the options block: each name and value NUL-terminated. */
static Size
options_size(const CxWriteRequest *req)
{
	Size		n = 0;

	for (int i = 0; i < req->noptions; i++)
		n += strlen(req->options[i].name) + 1 + strlen(req->options[i].value) + 1;
	return n;
}

/* cx_schema_encode() into palloc'd memory, so no malloc'd buffer is live
 * across a call that can raise an ERROR. */
static char *
encode_schema(const cx_schema *schema, Size *len)
{
	cx_buf		buf;
	char	   *copy = NULL;

	*len = 0;
	if (schema == NULL)
		return NULL;
	cx_buf_init(&buf);
	cx_schema_encode(schema, &buf);
	if (cx_buf_ok(&buf))
	{
		copy = palloc_extended(buf.len, MCXT_ALLOC_NO_OOM);
		if (copy != NULL)
			memcpy(copy, buf.data, buf.len);
	}
	*len = buf.len;
	cx_buf_free(&buf);
	if (copy == NULL)
		ereport(ERROR,
				errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("out of memory encoding a ctxstore table schema"));
	return copy;
}

static char *
put_options(char *p, const CxWriteRequest *req)
{
	for (int i = 0; i < req->noptions; i++)
	{
		Size		n = strlen(req->options[i].name) + 1;
		Size		v = strlen(req->options[i].value) + 1;

		memcpy(p, req->options[i].name, n);
		memcpy(p + n, req->options[i].value, v);
		p += n + v;
	}
	return p;
}

void
cx_batch_plan(CxBatchPlan *plan, int kind, const CxWriteRequest *requests,
			  int nrequests)
{
	Size		total = MAXALIGN(offsetof(CxBatchHeader, requests) +
								 sizeof(CxBatchRequest) * nrequests);

	plan->kind = kind;
	plan->requests = requests;
	plan->nrequests = nrequests;
	plan->schemas = palloc(sizeof(char *) * nrequests);
	plan->schema_lens = palloc(sizeof(Size) * nrequests);
	for (int i = 0; i < nrequests; i++)
	{
		plan->schemas[i] = encode_schema(requests[i].schema, &plan->schema_lens[i]);
		total = add_size(total, MAXALIGN(strlen(requests[i].uri) + 1));
		total = add_size(total, MAXALIGN(options_size(&requests[i])));
		total = add_size(total, MAXALIGN(plan->schema_lens[i]));
		total = add_size(total, MAXALIGN(requests[i].rows_len));
	}
	plan->total_len = total;
}

void
cx_batch_write(CxBatchPlan *plan, void *dst)
{
	CxBatchHeader *hdr = dst;
	char	   *base = dst;
	Size		off = MAXALIGN(offsetof(CxBatchHeader, requests) +
							   sizeof(CxBatchRequest) * plan->nrequests);

	hdr->magic = CX_BATCH_MAGIC;
	hdr->kind = plan->kind;
	hdr->nrequests = plan->nrequests;
	hdr->total_len = plan->total_len;
	for (int i = 0; i < plan->nrequests; i++)
	{
		const CxWriteRequest *req = &plan->requests[i];
		CxBatchRequest *br = &hdr->requests[i];

		br->uri_off = off;
		strcpy(base + off, req->uri);
		off += MAXALIGN(strlen(req->uri) + 1);
		br->options_off = off;
		br->options_len = options_size(req);
		br->noptions = req->noptions;
		put_options(base + off, req);
		off += MAXALIGN(br->options_len);
		br->schema_off = off;
		br->schema_len = plan->schema_lens[i];
		if (plan->schemas[i] != NULL)
		{
			memcpy(base + off, plan->schemas[i], plan->schema_lens[i]);
			pfree(plan->schemas[i]);
		}
		off += MAXALIGN(plan->schema_lens[i]);
		br->rows_off = off;
		br->rows_len = req->rows_len;
		if (req->rows_len > 0)
			memcpy(base + off, req->rows, req->rows_len);
		off += MAXALIGN(req->rows_len);
		br->nrows = req->nrows;
		br->settings = req->settings;
		memset(&br->result, 0, sizeof(br->result));
	}
	Assert(off == plan->total_len);
	pfree(plan->schemas);
	pfree(plan->schema_lens);
}

dsm_segment *
cx_batch_create_planned(CxBatchPlan *plan)
{
	dsm_segment *seg = dsm_create(plan->total_len, DSM_CREATE_NULL_IF_MAXSEGMENTS);

	if (seg == NULL)
		ereport(ERROR,
				errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				errmsg("too many dynamic shared memory segments to hand a transaction to the ctxstore writer"),
				errhint("Raise max_connections, or commit from fewer sessions at once."));
	cx_batch_write(plan, dsm_segment_address(seg));
	return seg;
}

dsm_segment *
cx_batch_create(int kind, const CxWriteRequest *requests, int nrequests)
{
	CxBatchPlan plan;

	cx_batch_plan(&plan, kind, requests, nrequests);
	return cx_batch_create_planned(&plan);
}

static bool
range_ok(Size off, Size len, Size total)
{
	return off <= total && len <= total - off;
}

/* Options block: exactly noptions name/value pairs, each NUL-terminated. */
static bool
options_ok(const char *p, Size len, int noptions)
{
	Size		pos = 0;

	for (int i = 0; i < 2 * noptions; i++)
	{
		const char *nul = memchr(p + pos, '\0', len - pos);

		if (nul == NULL)
			return false;
		pos = nul - p + 1;
	}
	return pos == len;
}

bool
cx_batch_check(const CxBatchHeader *hdr, Size maplen, const char **why)
{
	const char *base = (const char *) hdr;

	*why = "malformed request batch";
	if (maplen < offsetof(CxBatchHeader, requests) ||
		hdr->magic != CX_BATCH_MAGIC || hdr->nrequests <= 0 ||
		(hdr->kind != CX_BATCH_WRITE && hdr->nrequests != 1) ||
		hdr->total_len > maplen ||
		hdr->total_len < offsetof(CxBatchHeader, requests) ||
		(Size) hdr->nrequests > (hdr->total_len - offsetof(CxBatchHeader, requests)) /
		sizeof(CxBatchRequest))
		return false;
	for (int i = 0; i < hdr->nrequests; i++)
	{
		const CxBatchRequest *br = &hdr->requests[i];
		Size		total = hdr->total_len;

		if (!range_ok(br->uri_off, 1, total) ||
			memchr(base + br->uri_off, '\0', total - br->uri_off) == NULL ||
			!range_ok(br->options_off, br->options_len, total) ||
			br->noptions < 0 ||
			!options_ok(base + br->options_off, br->options_len, br->noptions) ||
			!range_ok(br->schema_off, br->schema_len, total) ||
			!range_ok(br->rows_off, br->rows_len, total))
			return false;
	}
	return true;
}

void
cx_options_split(const char *bytes, int noptions, cx_option *out)
{
	const char *p = bytes;

	for (int k = 0; k < noptions; k++)
	{
		out[k].name = p;
		p += strlen(p) + 1;
		out[k].value = p;
		p += strlen(p) + 1;
	}
}

void
cx_batch_view(CxBatchHeader *hdr, int i, CxBatchView *out)
{
	const CxBatchRequest *br = &hdr->requests[i];
	const char *base = (const char *) hdr;

	out->uri = base + br->uri_off;
	out->noptions = br->noptions;
	out->options = palloc(sizeof(cx_option) * Max(br->noptions, 1));
	cx_options_split(base + br->options_off, br->noptions, out->options);
	out->options_bytes = base + br->options_off;
	out->options_len = br->options_len;
	out->schema_bytes = br->schema_len > 0 ? (const uint8 *) base + br->schema_off : NULL;
	out->schema_len = br->schema_len;
	out->rows = (const uint8 *) base + br->rows_off;
	out->rows_len = br->rows_len;
	out->nrows = br->nrows;
	out->settings = &br->settings;
}
