// SPDX-License-Identifier: GPL-2.0
/*
 * hpu GPU-scheduler glue.
 *
 * One drm_gpu_scheduler per hardware queue; every context has an entity
 * on each.  The scheduler resolves a job's dependencies (the in-syncobjs),
 * keeps at most HPU_QUEUE_ENTRIES - 1 jobs in the ring, and times out the
 * oldest one after job_timeout_ms: hpu_queue_recover() resets the queue,
 * and every job it dropped is pushed again.  The schedulers live as long
 * as the DRM device, since entities of open files outlive an unbind; after
 * it, run_job fails jobs with -ENODEV.
 */
#include <linux/jiffies.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "hpu_compat.h"
#include "hpu_device.h"
#include "hpu_job.h"
#include "hpu_queue.h"
#include "hpu_sched.h"

/*
 * Push the job; or, when recovery calls again, hand back the fence of a
 * job that is still in the ring or already ended.
 */
static struct dma_fence *hpu_sched_run_job(struct drm_sched_job *sched_job)
{
	struct hpu_job *job = to_hpu_job(sched_job);
	int ret;

	if (job->state == HPU_JOB_NEW) {
		ret = hpu_queue_push(job->queue, job);
		if (ret)
			return ERR_PTR(ret);
	}
	return dma_fence_get(job->hw_fence);
}

static enum drm_gpu_sched_stat
hpu_sched_timedout_job(struct drm_sched_job *sched_job)
{
	struct hpu_job *job = to_hpu_job(sched_job);
	struct hpu_queue *q = job->queue;
	int idx;

	/*
	 * Always stop and restart: stopping puts the job back on the
	 * scheduler's list, and restarting re-arms the completion callbacks
	 * of every job through run_job.
	 */
	drm_sched_stop(&q->sched, sched_job);
	if (drm_dev_enter(&q->hdev->drm, &idx)) {
		hpu_queue_recover(q);
		drm_dev_exit(idx);
	}
	drm_sched_resubmit_jobs(&q->sched);
	hpu_compat_sched_start(&q->sched);
	return HPU_SCHED_STAT_HANDLED;
}

static void hpu_sched_free_job(struct drm_sched_job *sched_job)
{
	struct hpu_job *job = to_hpu_job(sched_job);

	drm_sched_job_cleanup(sched_job);
	hpu_job_free(job);
}

static const struct drm_sched_backend_ops hpu_sched_ops = {
	.run_job = hpu_sched_run_job,
	.timedout_job = hpu_sched_timedout_job,
	.free_job = hpu_sched_free_job,
};

/* drm release: the entities of every context are gone. */
static void hpu_sched_fini(struct drm_device *drm, void *arg)
{
	struct hpu_queue *q = arg;

	drm_sched_fini(&q->sched);
}

int hpu_sched_init(struct hpu_queue *q, unsigned int timeout_ms)
{
	int ret;

	ret = hpu_compat_sched_init(&q->sched, &hpu_sched_ops,
				    HPU_QUEUE_ENTRIES - 1,
				    msecs_to_jiffies(timeout_ms), q->name,
				    hpu_dev(q->hdev));
	if (ret)
		return ret;
	return drmm_add_action_or_reset(&q->hdev->drm, hpu_sched_fini, q);
}
