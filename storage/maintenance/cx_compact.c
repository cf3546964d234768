/*
 * cx_compact.c — the compaction job (cx_compact, ctxstore/lifecycle.h;
 * docs/design/maintenance.md "Compaction").
 *
 * Finds whether anything is due (no lease for nothing), takes the lease,
 * loads the newest base, chooses inputs, rewrites them
 * (cx_compact_merge.c), commits (cx_compact_commit.c), with force again
 * batch after batch while small fragments are left, and releases the
 * lease on every path.  Outputs that are not committed (canceled, failed
 * before the commit, lost to another compaction) are deleted, best effort;
 * a commit that failed otherwise may have landed (a put of unknown
 * outcome), so its outputs stay.  GC collects what a crash, a failed
 * delete or such a commit leaves, once no retained version lists it.  The key
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
	cx_compact_result *res;		/* the sum of the batches so far */
	/* Of the batches before the current one, for progress across them: */
	uint64_t	inputs_before;
	uint64_t	outputs_before;
	uint32_t	batches;
	uint32_t	batch_limit;	/* the first base's fragments: each batch
								 * but the last removes one at least, so
								 * only merges meanwhile could need more */
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

/* cx_compact_step_fn of a batch's rewrite: its reading and writing counts
 * continue those of the batches before it. */
static cx_code
batch_step(void *arg, const char *phase, uint64_t done, uint64_t total,
		   cx_err *err)
{
	compact_job *job = arg;
	uint64_t	before = 0;

	if (strcmp(phase, "reading") == 0)
		before = job->inputs_before;
	else if (strcmp(phase, "writing") == 0)
		before = job->outputs_before;
	return job_step(job, phase, before + done, before + total, err);
}

static void
add_to_result(compact_job *job, const cx_compact_rewrite_job *rw)
{
	cx_compact_result *res = job->res;

	res->inputs += rw->ninputs;
	res->outputs += rw->noutputs;
	res->rows += rw->rows;
	res->rows_dropped += rw->rows_dropped;
	res->bytes_read += rw->bytes_read;
	res->bytes_written += rw->bytes_written;
}

/* Rewrites the chosen inputs of read and commits the result. */
static cx_code
rewrite_and_commit(compact_job *job, const cx_manifest *read,
				   const uint32_t *inputs, uint32_t ninputs, cx_err *err)
{
	cx_compact_rewrite_job rw = {.s = job->s, .o = job->o, .read = read,
	.inputs = inputs, .ninputs = ninputs, .step = batch_step, .step_arg = job};
	cx_compact_edit e = {.read = read, .inputs = inputs, .ninputs = ninputs,
	.map = &rw.map};
	bool		committed = false;
	bool		maybe_listed = false;	/* a version may list the outputs */
	cx_code		rc;

	rc = cx_compact_rewrite(&rw, err);
	add_to_result(job, &rw);
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
		/* A failed commit may still have landed (a put of unknown
		 * outcome): only a conflict says that no version lists them. */
		maybe_listed = rc != CX_ERR_CONFLICT;
		job->res->compacted |= committed;
		job->res->deletions_carried += e.deletions_carried;
		job->res->retries += e.retries;
	}
	if (!maybe_listed)
		delete_outputs(job, &rw);
	for (uint32_t i = 0; i < rw.noutputs; i++)
		cx_fragment_info_free(&rw.outputs[i]);
	free(rw.outputs);
	cx_compact_rowmap_free(&rw.map);
	if (committed)
		rc = CX_FAILPOINT("compact.after_commit", err);
	return rc;
}

/*
 * One batch: loads the newest base (the batch before, if any, is committed),
 * chooses at most max_inputs inputs and compacts them.  *more: with force,
 * whether another batch may find work: this one was full and made fewer
 * fragments than it read (so the fragments count down and the batches
 * end), within the batch limit (so merges meanwhile cannot keep the job
 * going for ever).
 */
static cx_code
run_batch(compact_job *job, bool *more, cx_err *err)
{
	cx_manifest *read = NULL;
	uint32_t   *inputs = NULL;
	uint32_t	ninputs = 0;
	cx_code		rc;

	*more = false;
	rc = cx_manifest_load_latest(job->s, &read, err);
	if (rc == CX_OK && read != NULL)
		rc = job_step(job, "selecting", 0, read->nfragments, err);
	if (rc == CX_OK && read != NULL)
		rc = cx_compact_select(read, job->o, &inputs, &ninputs, err);
	if (rc == CX_OK && ninputs > 0)
	{
		if (job->batches++ == 0)
			job->batch_limit = read->nfragments;
		rc = rewrite_and_commit(job, read, inputs, ninputs, err);
		*more = rc == CX_OK && job->o->force && ninputs == job->o->max_inputs &&
			job->res->outputs - job->outputs_before < ninputs &&
			job->batches < job->batch_limit;
		job->inputs_before += ninputs;
		job->outputs_before = job->res->outputs;
	}
	free(inputs);
	if (read != NULL)
		cx_manifest_free(read);
	return rc;
}

static cx_code
run_job(compact_job *job, cx_err *err)
{
	bool		more = true;
	cx_code		rc = CX_OK;

	if (CX_FAILPOINT("compact.after_lease", err) != CX_OK)
		return err->code;
	while (rc == CX_OK && more)
		rc = run_batch(job, &more, err);
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
	if (o->max_inputs < 2)
		return cx_err_set(err, CX_ERR_INVALID,
						  "compaction needs at least two inputs a batch");
	return CX_OK;
}

/* *due: whether the newest base has fragments to compact with o now (no
 * lease, nothing written; a store without a base has none), so that a
 * compaction with nothing to do writes nothing. */
static cx_code
compaction_due(cx_objstore *s, const cx_compact_options *o, bool *due,
			   cx_err *err)
{
	cx_manifest *m = NULL;
	uint32_t   *picked = NULL;
	uint32_t	n = 0;
	cx_code		rc;

	*due = false;
	rc = cx_manifest_load_latest(s, &m, err);
	if (rc == CX_OK && m != NULL)
		rc = cx_compact_select(m, o, &picked, &n, err);
	*due = rc == CX_OK && n > 0;
	free(picked);
	if (m != NULL)
		cx_manifest_free(m);
	return rc;
}

cx_code
cx_compact(cx_objstore *s, const cx_compact_options *o,
		   const cx_job_progress *progress, cx_compact_result *res,
		   cx_err *err)
{
	compact_job job = {.s = s, .o = o, .progress = progress, .res = res};
	cx_err		release_err;
	bool		due;
	cx_code		rc;

	memset(res, 0, sizeof(*res));
	if (check_options(o, err) != CX_OK)
		return err->code;
	if (o->holder != NULL)
		snprintf(job.holder, sizeof(job.holder), "%s", o->holder);
	else
		snprintf(job.holder, sizeof(job.holder), "pid %d", (int) getpid());
	if (compaction_due(s, o, &due, err) != CX_OK)
		return err->code;
	if (!due)
		return CX_OK;
	if (take_lease(&job, err) != CX_OK)
		return err->code;
	rc = run_job(&job, err);
	/* A lease left behind only delays the next compaction until it expires. */
	(void) cx_compact_lease_release(s, job.holder, &release_err);
	return rc;
}
