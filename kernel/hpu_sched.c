// SPDX-License-Identifier: GPL-2.0
/*
 * hpu job scheduler: when a job enters its queue's ring, job timeouts, and
 * freeing ended jobs.
 *
 * Why not drm_sched: it runs every job through the scheduler's thread, a
 * wake-up (an IPI when the thread sleeps on another CPU) per job and per
 * queue.  In the emulated machine this driver is tested on, that hop costs
 * more than a small job runs, and a replayed recipe pays it once per
 * engine queue.  Here SUBMIT itself puts a job into the ring when it may
 * run; only a job that must wait goes through the queue's waiting list:
 *
 *  - a file's jobs enter a queue's ring in the order it submitted them:
 *    a job waits while an earlier job of its file on that queue waits;
 *  - a job waits until the fences of its in-syncobjs have signalled; the
 *    callback of the last one pushes it;
 *  - the ring holds at most HPU_QUEUE_ENTRIES - 1 jobs, and at most
 *    max_file_ring_jobs of one file; the waiting jobs of all files take
 *    the room that ending jobs free in submission order, but a file at its
 *    share waits for its own jobs to end while the others' go on.  So a
 *    file cannot fill a ring with long jobs or jobs that park on a WAIT:
 *    another file's job enters the ring, and the job at its head is set
 *    aside for it within preempt_ms (hpu_queue_recover()).
 *
 * A delayed work per queue times out the oldest job in the ring
 * (hpu_queue_recover()), and a work per queue frees ended jobs a tick
 * later, in batches: freeing may sleep, and a job ends in the completion
 * interrupt.  A closing file's waiting jobs are cancelled
 * (hpu_sched_cancel_waiting()).
 */
#include <linux/dma-fence.h>
#include <linux/jiffies.h>
#include <linux/lockdep.h>
#include <linux/moduleparam.h>
#include <linux/workqueue.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_job.h"
#include "hpu_queue.h"
#include "hpu_sched.h"

static unsigned int max_file_ring_jobs = 64;
module_param(max_file_ring_jobs, uint, 0644);
MODULE_PARM_DESC(max_file_ring_jobs,
		 "Jobs of one open file a hardware queue's ring holds at once (1..255; 0: 255)");

/* A file's share of a ring: 1 .. all of it. */
static u32 hpu_sched_file_share(void)
{
	u32 share = READ_ONCE(max_file_ring_jobs);

	return share ? min_t(u32, share, HPU_QUEUE_ENTRIES - 1) : HPU_QUEUE_ENTRIES - 1;
}

/*
 * Push what may run of @q's waiting jobs, oldest first; with @error
 * (-ENODEV: the device is gone, outside drm_dev_enter(); -EIO: it
 * malfunctions), end every waiting job with it instead.  Ended jobs go to
 * @done, for hpu_queue_signal().
 */
void hpu_sched_run_locked(struct hpu_queue *q, int error, struct list_head *done)
{
	u32 scan, share = hpu_sched_file_share();
	struct hpu_job *job, *tmp;

	lockdep_assert_held(&q->lock);

	/* A queue reset in progress pushes them when it is done. */
	if (list_empty(&q->waiting) || (!error && q->resetting))
		return;

	/* A file whose job cannot go yet is blocked for the rest of the scan. */
	scan = ++q->scan;
	list_for_each_entry_safe(job, tmp, &q->waiting, link) {
		struct hpu_ctx *ctx = job->ctx;

		if (error) {
			hpu_queue_end_locked(q, job, error, done);
			continue;
		}
		if (ctx->blocked_scan[q->index] == scan)
			continue;
		if (atomic_read(&job->deps_left) ||
		    (!ctx->kernel && ctx->ring_jobs[q->index] >= share)) {
			ctx->blocked_scan[q->index] = scan;
			continue;
		}
		if (q->queued >= HPU_QUEUE_ENTRIES - 1)
			break;
		list_del(&job->link);
		hpu_queue_push_locked(q, job);
	}
}

/*
 * Add @job (if any) to @q's waiting jobs, and push what may run of them.
 * Without @job it is a fence callback, which must not signal fences (the
 * lock order, hpu_device.h): with the device gone it leaves the waiting
 * jobs to hpu_queues_halt().
 */
static void hpu_sched_add_run(struct hpu_queue *q, struct hpu_job *job)
{
	unsigned long flags;
	LIST_HEAD(done);
	bool alive;
	int idx;

	alive = drm_dev_enter(&q->hdev->drm, &idx);
	if (!alive && !job)
		return;
	spin_lock_irqsave(&q->lock, flags);
	if (job) {
		job->state = HPU_JOB_WAITING;
		list_add_tail(&job->link, &q->waiting);
	}
	hpu_sched_run_locked(q, alive ? 0 : -ENODEV, &done);
	spin_unlock_irqrestore(&q->lock, flags);
	if (alive)
		drm_dev_exit(idx);
	hpu_queue_signal(&done);
}

static void hpu_sched_dep_signalled(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct hpu_job_dep *dep = container_of(cb, struct hpu_job_dep, cb);

	if (atomic_dec_and_test(&dep->job->deps_left))
		hpu_sched_add_run(dep->job->queue, NULL);
}

/*
 * Hand a numbered job to its queue: into the ring now if it may run, else
 * into the waiting list.  The scheduler owns it from here on.
 */
void hpu_sched_submit(struct hpu_job *job)
{
	unsigned int i;

	/*
	 * Armed before any scan sees the job, so that it cannot end (and be
	 * freed) meanwhile.  A callback that brings the count to zero before
	 * the job is on the list finds nothing to push; the scan that adds
	 * the job then sees the count at zero.
	 */
	atomic_set(&job->deps_left, 1);
	for (i = 0; i < job->num_deps; i++) {
		struct hpu_job_dep *dep = &job->deps[i];

		dep->job = job;
		atomic_inc(&job->deps_left);
		if (dma_fence_add_callback(dep->fence, &dep->cb, hpu_sched_dep_signalled))
			atomic_dec(&job->deps_left);	/* already signalled */
	}
	atomic_dec(&job->deps_left);
	hpu_sched_add_run(job->queue, job);
}

/*
 * End the waiting jobs of @ctx with @error: they never run (-ESRCH: its
 * file closes; -EIO: it is banned).
 */
void hpu_sched_cancel_waiting(struct hpu_ctx *ctx, int error)
{
	unsigned int i;

	for (i = 0; i < HPU_NUM_QUEUES; i++) {
		struct hpu_queue *q = &ctx->hdev->queues[i];
		struct hpu_job *job, *tmp;
		LIST_HEAD(done);
		bool alive;
		int idx;

		alive = drm_dev_enter(&ctx->hdev->drm, &idx);
		spin_lock_irq(&q->lock);
		list_for_each_entry_safe(job, tmp, &q->waiting, link)
			if (job->ctx == ctx)
				hpu_queue_end_locked(q, job, error, &done);
		/* Jobs of other files may have waited for ring space behind them. */
		hpu_sched_run_locked(q, alive ? 0 : -ENODEV, &done);
		spin_unlock_irq(&q->lock);
		if (alive)
			drm_dev_exit(idx);
		hpu_queue_signal(&done);
	}
}

/* The oldest job in @q's ring now has HPU's job timeout to end. */
void hpu_sched_arm_timeout(struct hpu_queue *q)
{
	queue_delayed_work(system_wq, &q->timeout_work, q->timeout);
}

/* Check the oldest job in @q's ring in @delay jiffies, e.g. now because its file closes. */
void hpu_sched_timeout_in(struct hpu_queue *q, unsigned long delay)
{
	mod_delayed_work(system_wq, &q->timeout_work, delay);
}

static void hpu_sched_timeout_work(struct work_struct *work)
{
	struct hpu_queue *q = container_of(to_delayed_work(work), struct hpu_queue,
					   timeout_work);
	unsigned long left;
	int idx;

	if (!drm_dev_enter(&q->hdev->drm, &idx))
		return;
	/* Not while the device is being reset (hpu_reset.c). */
	down_read(&q->hdev->reset.sem);
	left = hpu_queue_recover(q);
	up_read(&q->hdev->reset.sem);
	drm_dev_exit(idx);
	if (left)
		queue_delayed_work(system_wq, &q->timeout_work, left);
}

/*
 * @job ended and its fence signalled: free it in process context, a tick
 * later with the other jobs that end meanwhile; a wake-up per job would
 * cost the CPUs more than freeing.
 */
void hpu_sched_job_done(struct hpu_job *job)
{
	struct hpu_queue *q = job->queue;

	if (llist_add(&job->free_node, &q->free_list))
		queue_delayed_work(system_wq, &q->free_work, 1);
}

static void hpu_sched_free_work(struct work_struct *work)
{
	struct hpu_queue *q = container_of(to_delayed_work(work), struct hpu_queue,
					   free_work);
	struct hpu_job *job, *tmp;

	llist_for_each_entry_safe(job, tmp, llist_del_all(&q->free_list), free_node)
		hpu_job_free(job);
}

/* drm release: every file is closed and every job freed. */
static void hpu_sched_fini(struct drm_device *drm, void *arg)
{
	struct hpu_queue *q = arg;

	cancel_delayed_work_sync(&q->timeout_work);
	flush_delayed_work(&q->free_work);
}

int hpu_sched_init(struct hpu_queue *q, unsigned int timeout_ms)
{
	INIT_LIST_HEAD(&q->waiting);
	q->timeout = msecs_to_jiffies(timeout_ms);
	INIT_DELAYED_WORK(&q->timeout_work, hpu_sched_timeout_work);
	init_llist_head(&q->free_list);
	INIT_DELAYED_WORK(&q->free_work, hpu_sched_free_work);
	return drmm_add_action_or_reset(&q->hdev->drm, hpu_sched_fini, q);
}
