// SPDX-License-Identifier: GPL-2.0
/*
 * hpu jobs: SUBMIT and WAIT.
 *
 * SUBMIT copies each command buffer into a buffer the driver owns, so it
 * cannot change after the check, checks every packet there, and only
 * then, for all the jobs of the call at once, maps them for the device,
 * gives them the file's next sequence numbers and hands them to the
 * scheduler (hpu_sched.c), which puts them into the rings.
 * Any rejection leaves nothing submitted.  The kernel tail (completion
 * write and interrupt, hpu_job_set_tail()) follows the user's packets, and
 * the descriptor's priv_offset marks where the user's packets end.
 *
 * A job's end fence is embedded in the job, on a timeline per file and
 * queue, carrying the job's error; WAIT and the out-syncobj use it.  A small
 * command buffer's copy lives in the job's own allocation, not one of its
 * own, to keep SUBMIT of a small job cheap.  WAIT polls the completion slot
 * briefly before it sleeps, since a short job ends within that.  A command
 * buffer is DMA-mapped only while the device is there and after the
 * user's copies, and unbind waits for the last one to be unmapped.
 */
#include <linux/dma-fence.h>
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>
#include <drm/drm_syncobj.h>

#include "hpu_compat.h"
#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_job.h"
#include "hpu_queue.h"
#include "hpu_reset.h"
#include "hpu_sched.h"

/* The size of a user packet of @opcode; 0 for an unknown or privileged one. */
static u32 hpu_job_pkt_size(u32 opcode)
{
	switch (opcode) {
	case HPU_PKT_NOP:
		return sizeof(struct hpu_pkt_nop);
	case HPU_PKT_LIN_DMA:
		return sizeof(struct hpu_pkt_lin_dma);
	case HPU_PKT_SIGNAL:
		return sizeof(struct hpu_pkt_signal);
	case HPU_PKT_WAIT:
		return sizeof(struct hpu_pkt_wait);
	case HPU_PKT_TIMESTAMP:
		return sizeof(struct hpu_pkt_timestamp);
	case HPU_PKT_MME_GEMM:
		return sizeof(struct hpu_pkt_mme_gemm);
	case HPU_PKT_TPC_LAUNCH:
		return sizeof(struct hpu_pkt_tpc_launch);
	case HPU_PKT_CALL:
		return sizeof(struct hpu_pkt_call);
	default:
		return 0;
	}
}

/*
 * Check the user's packets.  The first packet that breaks a rule decides:
 * -EPERM for a privileged opcode, -EINVAL for an unknown opcode, non-zero
 * reserved header bits, pad or unknown flags, a misaligned sync,
 * timestamp or parameter-block address, or a packet running past the end.
 */
static int hpu_job_check_cb(struct hpu_job *job)
{
	const void *cb = job->cb;
	u32 off = 0, size = job->user_size;

	while (off < size) {
		const void *p = cb + off;
		u32 header = *(const u32 *)p, opcode = HPU_PKT_OPCODE(header);
		u32 flags = HPU_PKT_FLAGS(header), len = hpu_job_pkt_size(opcode);

		if (HPU_PKT_IS_PRIVILEGED(opcode))
			return -EPERM;
		if (HPU_PKT_RESERVED(header) || !len || size - off < len)
			return -EINVAL;

		switch (opcode) {
		case HPU_PKT_NOP: {
			const struct hpu_pkt_nop *pkt = p;

			if (flags || pkt->pad)
				return -EINVAL;
			break;
		}
		case HPU_PKT_LIN_DMA: {
			const struct hpu_pkt_lin_dma *pkt = p;

			if (flags & ~HPU_PKT_LIN_DMA_MEMSET || pkt->pad)
				return -EINVAL;
			break;
		}
		case HPU_PKT_WAIT:
		case HPU_PKT_SIGNAL: {
			/* The same layout. */
			const struct hpu_pkt_signal *pkt = p;

			if (flags || !IS_ALIGNED(pkt->addr, 4))
				return -EINVAL;
			break;
		}
		case HPU_PKT_TIMESTAMP: {
			const struct hpu_pkt_timestamp *pkt = p;

			if (flags || pkt->pad || !IS_ALIGNED(pkt->addr, 8))
				return -EINVAL;
			break;
		}
		case HPU_PKT_MME_GEMM: {
			/* Dimensions and dtypes are the device's to check (BAD_KERNEL). */
			const struct hpu_pkt_mme_gemm *pkt = p;

			if (pkt->pad || flags & ~(HPU_PKT_GEMM_TRANS_A | HPU_PKT_GEMM_TRANS_B))
				return -EINVAL;
			break;
		}
		case HPU_PKT_TPC_LAUNCH: {
			/* The device reads the parameter block through the context's MMU. */
			const struct hpu_pkt_tpc_launch *pkt = p;

			if (flags || !IS_ALIGNED(pkt->params, 8))
				return -EINVAL;
			break;
		}
		case HPU_PKT_CALL: {
			/*
			 * The callee is in the context's memory, where it may
			 * change: the device checks its packets as they run.
			 */
			const struct hpu_pkt_call *pkt = p;

			if (flags || pkt->pad || !IS_ALIGNED(pkt->addr, 8) || !pkt->size ||
			    !IS_ALIGNED(pkt->size, 8) || pkt->size > HPU_CALL_MAX_SIZE)
				return -EINVAL;
			break;
		}
		}
		off += len;
	}
	return 0;
}

/*
 * The driver's copy of a command buffer.  Most are a few packets: those
 * live at the end of the job's own allocation, larger ones are
 * kmalloc'ed; both are mapped for streaming, which costs far less than a
 * coherent allocation (a zeroed page) per job.  Inline copies stay as long
 * as the job's fence (the context's history keeps the last ones), hence
 * the small bound.
 */
#define HPU_JOB_INLINE_CB 256

static int hpu_job_cb_alloc(struct hpu_job *job, void *inline_cb)
{
	if (inline_cb) {
		job->cb_kind = HPU_JOB_CB_INLINE;
		job->cb = inline_cb;
		return 0;
	}
	job->cb_kind = HPU_JOB_CB_KMALLOC;
	job->cb = hpu_fault_alloc(job->cb_size) ? NULL : kmalloc(job->cb_size, GFP_KERNEL);
	return job->cb ? 0 : -ENOMEM;
}

/*
 * Map the checked command buffers of @jobs for the device, only while it
 * is there, and count them: hpu_remove() waits for the count to reach
 * zero, so that no job's mapping outlives the driver's unbind
 * (hpu_jobs_unmapped()).  Called once every copy from the user is done:
 * a copy may stall as long as the user likes (a page of a FUSE file, or
 * one userfaultfd has to fill), and must not hold up an unbind.  Mapping
 * after the copy also hands the device what the CPU wrote.
 */
static int hpu_jobs_cb_map(struct hpu_device *hdev, struct hpu_job **jobs, unsigned int n)
{
	struct device *dev = hpu_dev(hdev);
	unsigned int i;
	int idx, ret = 0;

	if (!drm_dev_enter(&hdev->drm, &idx))
		return -ENODEV;
	for (i = 0; i < n; i++) {
		struct hpu_job *job = jobs[i];

		job->cb_dma = hpu_fault_alloc(job->cb_size) ? DMA_MAPPING_ERROR :
			      dma_map_single(dev, job->cb, job->cb_size, DMA_TO_DEVICE);
		if (dma_mapping_error(dev, job->cb_dma)) {
			ret = -ENOMEM;
			break;
		}
		job->cb_mapped = true;
		atomic_inc(&hdev->jobs_mapped);
	}
	drm_dev_exit(idx);
	return ret;
}

static void hpu_job_cb_free(struct hpu_job *job)
{
	struct hpu_device *hdev = job->ctx->hdev;

	if (job->cb_mapped) {
		dma_unmap_single(hpu_dev(hdev), job->cb_dma, job->cb_size, DMA_TO_DEVICE);
		job->cb_mapped = false;
		if (atomic_dec_and_test(&hdev->jobs_mapped))
			wake_up_all(&hdev->jobs_unmapped);
	}
	if (job->cb_kind == HPU_JOB_CB_KMALLOC)
		kfree(job->cb);
	job->cb = NULL;
}

/*
 * Unbind, the device gone (drm_dev_unplug()) and its queues halted: every
 * job has ended or, mapped before the unplug, is on its way to a queue,
 * which ends it at once; no job maps a command buffer any more.  Wait for
 * the schedulers' free works to unmap the last ones (a job's fence, which
 * a scrub or a sync file may hold longer, keeps only its memory).
 */
void hpu_jobs_unmapped(struct hpu_device *hdev)
{
	wait_event(hdev->jobs_unmapped, !atomic_read(&hdev->jobs_mapped));
}

/* Called by the queue when the job is first pushed, with the queue's lock held. */
void hpu_job_set_tail(struct hpu_job *job, u64 completion_addr, u32 vector)
{
	struct hpu_pkt_write_completion *wc = job->cb + job->user_size;
	struct hpu_pkt_interrupt *irq = (void *)(wc + 1);

	*wc = (struct hpu_pkt_write_completion){
		.header = HPU_PKT_HEADER(HPU_PKT_WRITE_COMPLETION, 0),
		.addr = completion_addr,
		.value = job->hw_seq,
	};
	*irq = (struct hpu_pkt_interrupt){
		.header = HPU_PKT_HEADER(HPU_PKT_INTERRUPT, 0),
		.vector = vector,
	};
	/* The rest went to the device when the command buffer was mapped. */
	dma_sync_single_range_for_device(hpu_dev(job->ctx->hdev), job->cb_dma, job->user_size,
					 HPU_JOB_TAIL_SIZE, DMA_TO_DEVICE);
}

static void hpu_job_count(struct hpu_job *job, bool ok)
{
	struct hpu_device *hdev = job->ctx->hdev;

	if (job->ctx->kernel)
		return;
	if (ok) {
		atomic64_inc(&job->ctx->jobs_completed);
		atomic64_inc(&hdev->stats.jobs_completed);
	} else {
		atomic64_inc(&job->ctx->jobs_failed);
		atomic64_inc(&hdev->stats.jobs_failed);
	}
}

/* The queue or the scheduler ended the job (state ENDED, result set). */
void hpu_job_signal(struct hpu_job *job)
{
	if (job->result)
		dma_fence_set_error(&job->fence, job->result);
	hpu_job_count(job, !job->result);
	dma_fence_signal(&job->fence);
	hpu_sched_job_done(job);
}

static const char *hpu_job_fence_driver_name(struct dma_fence *fence)
{
	return DRM_HPU_DRIVER_NAME;
}

static const char *hpu_job_fence_timeline_name(struct dma_fence *fence)
{
	/* A constant: a fence exported as a sync file may outlive the device. */
	return "hpu-queue";
}

/* A grace period after the fence's last reference: readers may look at it under RCU. */
static void hpu_job_fence_free(struct rcu_head *rcu)
{
	struct hpu_job *job = container_of(rcu, struct hpu_job, fence.rcu);
	bool module_ref = job->module_ref;

	kfree(job);
	/* The module's exit waits for this callback to return (rcu_barrier()). */
	if (module_ref)
		module_put(THIS_MODULE);
}

/* The last reference to the fence: what is left of the job goes. */
static void hpu_job_fence_release(struct dma_fence *fence)
{
	call_rcu(&fence->rcu, hpu_job_fence_free);
}

static const struct dma_fence_ops hpu_job_fence_ops = {
	.get_driver_name = hpu_job_fence_driver_name,
	.get_timeline_name = hpu_job_fence_timeline_name,
	.release = hpu_job_fence_release,
};

/* Release what the job holds but its memory, which its fence keeps. */
static void hpu_job_release(struct hpu_job *job)
{
	struct hpu_ctx *ctx = job->ctx;
	unsigned int i;

	for (i = 0; i < job->num_deps; i++) {
		/* No callback runs or will run once this returns. */
		dma_fence_remove_callback(job->deps[i].fence, &job->deps[i].cb);
		dma_fence_put(job->deps[i].fence);
	}
	hpu_job_cb_free(job);
	hpu_ctx_job_freed(ctx);
	hpu_ctx_put(ctx);
}

/* A job that was never numbered: the SUBMIT failed. */
static void hpu_job_abort(struct hpu_job *job)
{
	hpu_job_release(job);
	kfree(job);
}

static struct hpu_job *hpu_job_alloc(struct hpu_ctx *ctx, u32 queue,
				     u32 user_size, unsigned int num_deps)
{
	u32 cb_size = user_size + HPU_JOB_TAIL_SIZE;
	bool inline_cb = cb_size <= HPU_JOB_INLINE_CB;
	struct hpu_job *job;
	size_t size = struct_size(job, deps, num_deps);
	int ret;

	/* deps[] holds pointers: an inline copy after it is 8-byte aligned. */
	job = hpu_fault_alloc(size) ? NULL :
	      kzalloc(size + (inline_cb ? cb_size : 0), GFP_KERNEL);
	if (!job)
		return ERR_PTR(-ENOMEM);
	job->ctx = hpu_ctx_get(ctx);
	atomic_inc(&ctx->jobs);
	job->queue = &ctx->hdev->queues[queue];
	job->user_size = user_size;
	job->cb_size = cb_size;
	INIT_LIST_HEAD(&job->link);
	ret = hpu_job_cb_alloc(job, inline_cb ? (void *)job + size : NULL);
	if (ret) {
		hpu_job_abort(job);
		return ERR_PTR(ret);
	}
	return job;
}

/* The job ended and its fence signalled (the scheduler's free work). */
void hpu_job_free(struct hpu_job *job)
{
	hpu_queue_wait_consumed(job->queue, job);
	hpu_job_release(job);
	dma_fence_put(&job->fence);
}

/* Give @job the next sequence number of its context and its fence. */
static void hpu_job_number_locked(struct hpu_job *job)
{
	struct hpu_ctx *ctx = job->ctx;
	u32 queue = job->queue->index;

	lockdep_assert_held(&ctx->submit_lock);
	job->seq = hpu_ctx_next_seq_locked(ctx);
	/*
	 * The fence's ops are the module's code, and a user's fence may outlive
	 * its file (a sync file): it holds the module until it goes.  The
	 * driver's own fences go with the device, before the module can.
	 */
	job->module_ref = !ctx->kernel;
	if (job->module_ref)
		__module_get(THIS_MODULE);
	spin_lock_init(&job->fence_lock);
	/* A file's jobs on one queue end in submission order: one timeline each. */
	dma_fence_init(&job->fence, &hpu_job_fence_ops, &job->fence_lock,
		       ctx->fence_context + queue, job->seq);
	hpu_ctx_add_job_locked(ctx, queue, &job->fence);
}

/* Arm and push @jobs in order, numbering them; on failure nothing is pushed. */
static int hpu_job_push(struct hpu_ctx *ctx, struct hpu_job **jobs,
			unsigned int n, struct drm_syncobj *out, u64 *last_seq)
{
	struct hpu_device *hdev = ctx->hdev;
	unsigned int i;
	int ret;

	ret = mutex_lock_interruptible(&ctx->submit_lock);
	if (ret)
		return ret;
	ret = hpu_ctx_reserve_seqs_locked(ctx, n);
	if (ret)
		goto out_unlock;

	/* The point of no return. */
	for (i = 0; i < n; i++) {
		struct hpu_job *job = jobs[i];

		hpu_job_number_locked(job);
		if (i == n - 1) {
			*last_seq = job->seq;
			if (out)
				drm_syncobj_replace_fence(out, &job->fence);
		}
		atomic64_inc(&ctx->jobs_submitted);
		atomic64_inc(&hdev->stats.jobs_submitted);
		/* The scheduler owns the job from here on. */
		hpu_sched_submit(job);
	}

out_unlock:
	mutex_unlock(&ctx->submit_lock);
	return ret;
}

/* The fences of the in-syncobjs (NULL for a syncobj without one). */
static int hpu_job_in_fences(struct drm_file *file,
			     const struct drm_hpu_submit *args,
			     struct dma_fence ***fences)
{
	struct dma_fence **f;
	u32 *handles;
	unsigned int i;
	int ret = 0;

	*fences = NULL;
	if (!args->num_in_syncobjs)
		return 0;

	handles = hpu_fault_alloc(args->num_in_syncobjs * sizeof(*handles)) ? ERR_PTR(-ENOMEM) :
		  memdup_user(u64_to_user_ptr(args->in_syncobjs_ptr),
			      args->num_in_syncobjs * sizeof(*handles));
	if (IS_ERR(handles))
		return PTR_ERR(handles);
	f = hpu_fault_alloc(args->num_in_syncobjs * sizeof(*f)) ? NULL :
	    kcalloc(args->num_in_syncobjs, sizeof(*f), GFP_KERNEL);
	if (!f) {
		ret = -ENOMEM;
		goto out_free_handles;
	}

	for (i = 0; i < args->num_in_syncobjs; i++) {
		struct drm_syncobj *syncobj = drm_syncobj_find(file, handles[i]);

		if (!syncobj) {
			ret = -ENOENT;
			break;
		}
		f[i] = drm_syncobj_fence_get(syncobj);
		drm_syncobj_put(syncobj);
	}
	if (ret) {
		while (i--)
			dma_fence_put(f[i]);
		kfree(f);
	} else {
		*fences = f;
	}

out_free_handles:
	kfree(handles);
	return ret;
}

static int hpu_job_check_args(const struct drm_hpu_job *uj)
{
	if (uj->flags || uj->pad)
		return -EINVAL;
	if (uj->queue >= HPU_NUM_QUEUES)
		return -EINVAL;
	if (!uj->cb_size || !IS_ALIGNED(uj->cb_size, 8) ||
	    uj->cb_size > HPU_CB_MAX_SIZE)
		return -EINVAL;
	return 0;
}

/* A checked copy of @uj's command buffer, depending on the @num_in fences @in. */
static struct hpu_job *hpu_job_create_user(struct hpu_ctx *ctx,
					   const struct drm_hpu_job *uj,
					   struct dma_fence **in, u32 num_in)
{
	struct hpu_job *job;
	unsigned int i, deps = 0;
	int ret;

	for (i = 0; i < num_in; i++)
		deps += !!in[i];
	job = hpu_job_alloc(ctx, uj->queue, uj->cb_size, deps);
	if (IS_ERR(job))
		return job;

	if (copy_from_user(job->cb, u64_to_user_ptr(uj->cb_ptr), uj->cb_size)) {
		ret = -EFAULT;
		goto err_abort_job;
	}
	ret = hpu_job_check_cb(job);
	if (ret)
		goto err_abort_job;

	for (i = 0; i < num_in; i++) {
		struct hpu_job_dep *dep = &job->deps[job->num_deps];

		if (!in[i])
			continue;
		dep->fence = dma_fence_get(in[i]);
		/* Not armed yet: removing the callback finds nothing to remove. */
		INIT_LIST_HEAD(&dep->cb.node);
		job->num_deps++;
	}
	return job;

err_abort_job:
	hpu_job_abort(job);
	return ERR_PTR(ret);
}

/* A SUBMIT of up to this many jobs keeps its arrays on the stack. */
#define HPU_SUBMIT_STACK_JOBS 8

int hpu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct drm_hpu_job ujobs_stack[HPU_SUBMIT_STACK_JOBS];
	struct hpu_job *jobs_stack[HPU_SUBMIT_STACK_JOBS];
	struct hpu_ctx *ctx = file->driver_priv;
	struct drm_hpu_submit *args = data;
	struct drm_syncobj *out = NULL;
	struct dma_fence **in = NULL;
	struct drm_hpu_job *ujobs = ujobs_stack;
	struct hpu_job **jobs = jobs_stack;
	unsigned int i, created = 0;
	int ret;

	if (args->flags)
		return -EINVAL;
	if (!args->num_jobs || args->num_jobs > DRM_HPU_SUBMIT_MAX_JOBS)
		return -EINVAL;
	if (args->num_in_syncobjs > DRM_HPU_SUBMIT_MAX_IN_SYNCOBJS)
		return -EINVAL;
	if (hpu_device_malfunction(ctx->hdev) || hpu_reset_banned(ctx))
		return -EIO;

	if (args->num_jobs > HPU_SUBMIT_STACK_JOBS) {
		ujobs = hpu_fault_alloc(args->num_jobs * sizeof(*ujobs)) ? ERR_PTR(-ENOMEM) :
			memdup_user(u64_to_user_ptr(args->jobs_ptr),
				    args->num_jobs * sizeof(*ujobs));
		if (IS_ERR(ujobs))
			return PTR_ERR(ujobs);
	} else if (copy_from_user(ujobs, u64_to_user_ptr(args->jobs_ptr),
				  args->num_jobs * sizeof(*ujobs))) {
		return -EFAULT;
	}
	for (i = 0; i < args->num_jobs; i++) {
		ret = hpu_job_check_args(&ujobs[i]);
		if (ret)
			goto out_free_ujobs;
	}

	ret = hpu_job_in_fences(file, args, &in);
	if (ret)
		goto out_free_ujobs;
	if (args->out_syncobj) {
		out = drm_syncobj_find(file, args->out_syncobj);
		if (!out) {
			ret = -ENOENT;
			goto out_put_in_fences;
		}
	}

	if (args->num_jobs > HPU_SUBMIT_STACK_JOBS) {
		jobs = hpu_fault_alloc(args->num_jobs * sizeof(*jobs)) ? NULL :
		       kcalloc(args->num_jobs, sizeof(*jobs), GFP_KERNEL);
		if (!jobs) {
			ret = -ENOMEM;
			goto out_put_out;
		}
	}
	for (created = 0; created < args->num_jobs; created++) {
		struct hpu_job *job = hpu_job_create_user(ctx, &ujobs[created], in,
							  args->num_in_syncobjs);

		if (IS_ERR(job)) {
			ret = PTR_ERR(job);
			goto out_abort_jobs;
		}
		jobs[created] = job;
	}

	ret = hpu_jobs_cb_map(ctx->hdev, jobs, args->num_jobs) ?:
	      hpu_job_push(ctx, jobs, args->num_jobs, out, &args->seq);
	if (!ret)
		created = 0;	/* the schedulers have them */

out_abort_jobs:
	for (i = 0; i < created; i++)
		hpu_job_abort(jobs[i]);
	if (jobs != jobs_stack)
		kfree(jobs);
out_put_out:
	if (out)
		drm_syncobj_put(out);
out_put_in_fences:
	for (i = 0; in && i < args->num_in_syncobjs; i++)
		dma_fence_put(in[i]);
	kfree(in);
out_free_ujobs:
	if (ujobs != ujobs_stack)
		kfree(ujobs);
	return ret;
}

/* A negative timeout waits forever, as for UQUEUE_WAIT. */
static long hpu_job_timeout_jiffies(s64 timeout_ns)
{
	u64 j;

	if (timeout_ns < 0)
		return MAX_SCHEDULE_TIMEOUT;
	j = nsecs_to_jiffies64(timeout_ns) + 1;
	return j >= MAX_SCHEDULE_TIMEOUT ? MAX_SCHEDULE_TIMEOUT : (long)j;
}

/*
 * A short job ends within the queue's poll, before WAIT would sleep; the
 * poll counts against the timeout.  Fences of other drivers (a sync file
 * imported into a syncobj) are only waited for.
 */
static void hpu_job_poll(struct dma_fence *end)
{
	if (end->ops == &hpu_job_fence_ops)
		hpu_queue_poll(container_of(end, struct hpu_job, fence));
}

int hpu_ioctl_wait(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct hpu_ctx *ctx = file->driver_priv;
	struct drm_hpu_wait *args = data;
	struct dma_fence *fence;
	int ret, error = 0;
	long left;

	if (args->flags)
		return -EINVAL;

	ret = hpu_ctx_job_fence(ctx, args->seq, &fence, &error);
	if (ret)
		return ret;
	if (!fence) {
		/* Long ended. */
		args->error = error;
		return 0;
	}

	/*
	 * Interruptible, so killable.  A lost completion interrupt costs at
	 * most the job timeout: the queue's timeout work ends completed jobs.
	 */
	if (args->timeout_ns) {
		hpu_job_poll(fence);
		left = dma_fence_wait_timeout(fence, true,
					      hpu_job_timeout_jiffies(args->timeout_ns));
		if (left < 0) {
			ret = left;
			goto out_put_fence;
		}
	}
	ret = dma_fence_get_status(fence);
	if (!ret) {
		ret = -ETIME;
		goto out_put_fence;
	}
	args->error = ret < 0 ? ret : 0;
	ret = 0;

out_put_fence:
	dma_fence_put(fence);
	return ret;
}

/* Run the driver's command buffer @packets on queue 0; returns its end fence. */
static struct dma_fence *hpu_job_submit_kernel(struct hpu_device *hdev,
					       const void *packets, u32 size)
{
	struct hpu_ctx *ctx = hdev->kctx;
	struct dma_fence *end;
	struct hpu_job *job;
	int ret;

	if (hpu_device_malfunction(hdev))
		return ERR_PTR(-EIO);
	job = hpu_job_alloc(ctx, 0, size, 0);
	if (IS_ERR(job))
		return ERR_CAST(job);
	memcpy(job->cb, packets, size);
	ret = hpu_job_check_cb(job);
	WARN_ON(ret);
	ret = ret ?: hpu_jobs_cb_map(hdev, &job, 1);
	if (ret) {
		hpu_job_abort(job);
		return ERR_PTR(ret);
	}

	mutex_lock(&ctx->submit_lock);
	ret = hpu_ctx_reserve_seqs_locked(ctx, 1);
	if (ret) {
		mutex_unlock(&ctx->submit_lock);
		hpu_job_abort(job);
		return ERR_PTR(ret);
	}
	hpu_job_number_locked(job);
	end = dma_fence_get(&job->fence);
	hpu_sched_submit(job);
	mutex_unlock(&ctx->submit_lock);
	return end;
}

/*
 * Start filling [@addr, @addr + @size) of HBM, at most HPU_ZERO_JOB_BYTES,
 * with zeros (ASID 0 maps HBM 1:1); returns the job's end fence.
 */
struct dma_fence *hpu_job_zero_hbm(struct hpu_device *hdev, u64 addr, u64 size)
{
	struct hpu_pkt_lin_dma pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_LIN_DMA, HPU_PKT_LIN_DMA_MEMSET),
		.src = 0,
		.dst = addr,
		.size = size,
	};

	if (WARN_ON(size > HPU_ZERO_JOB_BYTES))
		return ERR_PTR(-EINVAL);
	return hpu_job_submit_kernel(hdev, &pkt, sizeof(pkt));
}
