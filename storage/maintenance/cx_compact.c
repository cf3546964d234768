/*
 * cx_compact.c — the compaction job (cx_compact, ctxstore/lifecycle.h;
 * docs/design/maintenance.md "Compaction").
 *
 * Takes the lease, loads the newest base, chooses inputs, rewrites them
 * (cx_compact_merge.c), commits (cx_compact_commit.c) and releases the
 * lease on every path.  Outputs that are not committed (canceled, failed,
 * lost to another compaction) are deleted, best effort: GC collects what a
 * crash or a failed delete leaves, since no version lists them.  The key
 * index is not touched: segments naming the inputs are ignored for them
 * from the committed version on, and the outputs stay unindexed until the
 * caller runs cx_keyindex_update_table, as after a merge.
 *
 * Failpoints (cx_failpoint.h), each reached after the step it names:
 *   compact.after_lease     the lease is taken, nothing read
 *   compact.after_outputs   the outputs are uploaded, not committed
 *   compact.after_commit    the base version is committed, the lease not
 *                           released
 */
#include "maintenance/cx_compact_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cx_clock.h"
#include "util/cx_failpoint.h"

typedef struct compact_job
{
	cx_objstore *s;
	const cx_compact_options *o;
	const cx_job_progress *progress;
	char		holder[CX_LEASE_HOLDER_MAX + 1];
	int64_t		renewed_us;		/* when the lease was last taken or renewed */
	cx_compact_result *res;
} compact_job;

static cx_code
take_lease(compact_job *job, cx_err *err)
{
	int64_t		now = cx_clock_now_us();

	if (cx_compact_lease_take(job->s, job->holder, job->o->lease_seconds, now,
							  err) != CX_OK)
		return err->code;
	job->renewed_us = now;
	return CX_OK;
}

/* cx_compact_step_fn: the caller's progress callback, and a renewal of the
 * lease once a third of it has passed, so that it never lapses while the
 * job runs unless a step outlasts two thirds of it. */
static cx_code
job_step(void *arg, const char *phase, uint64_t done, uint64_t total,
		 cx_err *err)
{
	compact_job *job = arg;
	const cx_job_progress *p = job->progress;

	if (p != NULL && p->report != NULL && !p->report(p->arg, phase, done, total))
		return cx_err_set(err, CX_ERR_CANCELED, "compaction canceled while %s",
						  phase);
	if (cx_clock_now_us() - job->renewed_us >
		(int64_t) job->o->lease_seconds * 1000000 / 3)
		return take_lease(job, err);
	return CX_OK;
}

/* Deletes outputs no version lists; a failure leaves them to GC. */
static void
delete_outputs(compact_job *job, const cx_compact_rewrite_job *rw)
{
	for (uint32_t i = 0; i < rw->noutputs; i++)
	{
		cx_err		ignored;

		(void) cx_obj_delete(job->s, rw->outputs[i].path, &ignored);
	}
}

static void
fill_result(compact_job *job, const cx_compact_rewrite_job *rw)
{
	cx_compact_result *res = job->res;

	res->inputs = rw->ninputs;
	res->outputs = rw->noutputs;
	res->rows = rw->rows;
	res->rows_dropped = rw->rows_dropped;
	res->bytes_read = rw->bytes_read;
	res->bytes_written = rw->bytes_written;
}

/* Rewrites the chosen inputs of read and commits the result. */
static cx_code
rewrite_and_commit(compact_job *job, const cx_manifest *read,
				   const uint32_t *inputs, uint32_t ninputs, cx_err *err)
{
	cx_compact_rewrite_job rw = {.s = job->s, .o = job->o, .read = read,
	.inputs = inputs, .ninputs = ninputs, .step = job_step, .step_arg = job};
	cx_compact_edit e = {.read = read, .inputs = inputs, .ninputs = ninputs,
	.map = &rw.map};
	bool		committed = false;
	cx_code		rc;

	rc = cx_compact_rewrite(&rw, err);
	fill_result(job, &rw);
	if (rc == CX_OK)
		rc = CX_FAILPOINT("compact.after_outputs", err);
	if (rc == CX_OK)
		rc = job_step(job, "committing", 0, 1, err);
	if (rc == CX_OK)
	{
		e.outputs = rw.outputs;
		e.noutputs = rw.noutputs;
		rc = cx_compact_commit(job->s, &e, &job->res->version, err);
		committed = rc == CX_OK;
		job->res->compacted = committed;
		job->res->deletions_carried = e.deletions_carried;
		job->res->retries = e.retries;
	}
	if (!committed)
		delete_outputs(job, &rw);
	for (uint32_t i = 0; i < rw.noutputs; i++)
		cx_fragment_info_free(&rw.outputs[i]);
	free(rw.outputs);
	cx_compact_rowmap_free(&rw.map);
	if (committed)
		rc = CX_FAILPOINT("compact.after_commit", err);
	return rc;
}

static cx_code
run_job(compact_job *job, cx_err *err)
{
	cx_manifest *read = NULL;
	uint32_t   *inputs = NULL;
	uint32_t	ninputs = 0;
	cx_code		rc;

	if (CX_FAILPOINT("compact.after_lease", err) != CX_OK)
		return err->code;
	rc = cx_manifest_load_latest(job->s, &read, err);
	if (rc == CX_OK && read != NULL)
		rc = job_step(job, "selecting", 0, read->nfragments, err);
	if (rc == CX_OK && read != NULL)
		rc = cx_compact_select(read, job->o, &inputs, &ninputs, err);
	if (rc == CX_OK && ninputs > 0)
		rc = rewrite_and_commit(job, read, inputs, ninputs, err);
	free(inputs);
	if (read != NULL)
		cx_manifest_free(read);
	return rc;
}

static cx_code
check_options(const cx_compact_options *o, cx_err *err)
{
	if (o->target_rows_per_fragment == 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "compaction needs a target of at least one row per fragment");
	if (o->lease_seconds == 0)
		return cx_err_set(err, CX_ERR_INVALID,
						  "compaction needs a lease of at least one second");
	return CX_OK;
}

cx_code
cx_compact(cx_objstore *s, const cx_compact_options *o,
		   const cx_job_progress *progress, cx_compact_result *res,
		   cx_err *err)
{
	compact_job job = {.s = s, .o = o, .progress = progress, .res = res};
	cx_err		release_err;
	cx_code		rc;

	memset(res, 0, sizeof(*res));
	if (check_options(o, err) != CX_OK)
		return err->code;
	if (o->holder != NULL)
		snprintf(job.holder, sizeof(job.holder), "%s", o->holder);
	else
		snprintf(job.holder, sizeof(job.holder), "pid %d", (int) getpid());
	if (take_lease(&job, err) != CX_OK)
		return err->code;
	rc = run_job(&job, err);
	/* A lease left behind only delays the next compaction until it expires. */
	(void) cx_compact_lease_release(s, job.holder, &release_err);
	return rc;
}
