// SPDX-License-Identifier: GPL-2.0
/*
 * hpu contexts.
 *
 * Opening the node creates a context: an ASID, its page tables and its
 * address space, counted in the opener's share (hpu_limits.c: -EDQUOT past
 * max_user_files, -ENOSPC once every ASID is taken).
 * The driver has one more context, ASID 0, whose address space maps all
 * buffer HBM onto itself, for its own jobs (zeroing freed buffers,
 * hpu_gem.c); it lives as long as the DRM device.
 *
 * Closing the file (postclose, after DRM dropped its buffer handles and
 * sync objects) cancels the jobs not yet in a ring (their end fences carry
 * -ESRCH), lets the jobs in the rings run for a grace period
 * (HPU_CTX_CLOSE_GRACE_MS) and then cancels them (-ECANCELED) with a queue
 * reset, and only when every job of the context is freed unmaps
 * everything, unpins host pages, frees the page tables and the ASID.  The
 * struct itself goes with its last reference (its buffers hold one), and
 * with it its reference on its user, whose share the buffers are charged to.
 */
#include <linux/dma-fence.h>
#include <linux/jiffies.h>
#include <linux/lockdep.h>
#include <linux/slab.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_gem.h"
#include "hpu_limits.h"
#include "hpu_queue.h"
#include "hpu_sched.h"
#include "hpu_uq.h"
#include "hpu_vm.h"

/* How long jobs of a closed file may still run before they are cancelled. */
#define HPU_CTX_CLOSE_GRACE_MS 1000

static void hpu_ctx_release(struct kref *ref)
{
	struct hpu_ctx *ctx = container_of(ref, struct hpu_ctx, ref);

	if (ctx->user)
		hpu_user_put(ctx->hdev, ctx->user);
	xa_destroy(&ctx->old_errors);
	mutex_destroy(&ctx->submit_lock);
	kvfree(ctx);
}

struct hpu_ctx *hpu_ctx_get(struct hpu_ctx *ctx)
{
	kref_get(&ctx->ref);
	return ctx;
}

void hpu_ctx_put(struct hpu_ctx *ctx)
{
	kref_put(&ctx->ref, hpu_ctx_release);
}

static struct hpu_ctx *hpu_ctx_create(struct hpu_device *hdev, bool kernel)
{
	struct hpu_user *user;
	struct hpu_ctx *ctx;
	int ret;

	ctx = hpu_fault_alloc(sizeof(*ctx)) ? NULL : kvzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	kref_init(&ctx->ref);
	ctx->hdev = hdev;
	ctx->kernel = kernel;
	mutex_init(&ctx->submit_lock);
	spin_lock_init(&ctx->fence_lock);
	xa_init(&ctx->old_errors);
	atomic_set(&ctx->jobs, 0);
	init_waitqueue_head(&ctx->jobs_freed);
	ctx->fence_context = dma_fence_context_alloc(HPU_NUM_QUEUES);

	if (!kernel) {
		user = hpu_user_get(hdev);
		if (IS_ERR(user)) {
			ret = PTR_ERR(user);
			goto err_put_ctx;
		}
		ctx->user = user;
		ret = hpu_mmu_asid_alloc(hdev);
		if (ret < 0)
			goto err_close_user;
		ctx->asid = ret;
	}

	ret = hpu_vm_init(ctx);
	if (ret)
		goto err_free_asid;
	return ctx;

err_free_asid:
	if (!kernel)
		hpu_mmu_asid_free(hdev, ctx->asid);
err_close_user:
	if (!kernel)
		hpu_user_close(hdev, ctx->user);
err_put_ctx:
	hpu_ctx_put(ctx);
	return ERR_PTR(ret);
}

/* Wait until every job of @ctx is freed, cancelling those that run on. */
static void hpu_ctx_wait_jobs(struct hpu_ctx *ctx)
{
	unsigned int q;

	if (wait_event_timeout(ctx->jobs_freed, !atomic_read(&ctx->jobs),
			       msecs_to_jiffies(HPU_CTX_CLOSE_GRACE_MS)))
		return;
	do {
		for (q = 0; q < HPU_NUM_QUEUES; q++)
			hpu_queue_cancel_ctx(&ctx->hdev->queues[q], ctx);
	} while (!wait_event_timeout(ctx->jobs_freed, !atomic_read(&ctx->jobs),
				     HZ));
}

static void hpu_ctx_destroy(struct hpu_ctx *ctx)
{
	unsigned int q, i;

	WRITE_ONCE(ctx->closing, true);
	hpu_sched_cancel_waiting(ctx, -ESRCH);
	hpu_ctx_wait_jobs(ctx);

	/* No job of the context runs or will run: its memory can go. */
	hpu_vm_fini(ctx);
	if (!ctx->kernel) {
		hpu_mmu_asid_free(ctx->hdev, ctx->asid);
		hpu_user_close(ctx->hdev, ctx->user);
	}

	for (i = 0; i < HPU_CTX_HISTORY; i++)
		dma_fence_put(ctx->history[i]);
	for (q = 0; q < HPU_NUM_QUEUES; q++)
		dma_fence_put(ctx->last[q]);
	hpu_ctx_put(ctx);
}

int hpu_ctx_open(struct drm_device *drm, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct hpu_ctx *ctx;

	ctx = hpu_ctx_create(hdev, false);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	file->driver_priv = ctx;
	atomic_inc(&hdev->stats.contexts);
	return 0;
}

void hpu_ctx_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);

	/* Its user queues stop before the memory they reach goes. */
	hpu_uq_ctx_release(file->driver_priv, file);
	hpu_ctx_destroy(file->driver_priv);
	file->driver_priv = NULL;
	atomic_dec(&hdev->stats.contexts);
}

void hpu_ctx_kernel_fini(struct hpu_device *hdev)
{
	if (!hdev->kctx)
		return;
	/* No new zeroing job; those in flight end before the context goes. */
	hpu_hbm_scrub_stop(hdev);
	hpu_ctx_destroy(hdev->kctx);
	hdev->kctx = NULL;
}

/* drm release: ioctls still running at unbind may use the context until then. */
static void hpu_ctx_kernel_release(struct drm_device *drm, void *arg)
{
	hpu_ctx_kernel_fini(arg);
}

/*
 * The driver's context lives as long as the DRM device (its schedulers'
 * entities too): a buffer freed while the device is being unbound is still
 * zeroed, or its zeroing fails with the device.  A failed probe calls hpu_ctx_kernel_fini() itself, with
 * the device still mapped.
 */
int hpu_ctx_kernel_init(struct hpu_device *hdev)
{
	struct hpu_ctx *ctx;
	int ret;

	ctx = hpu_ctx_create(hdev, true);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);

	if (hdev->hbm.end > hdev->hbm.start) {
		ret = hpu_vm_map_identity(ctx, hdev->hbm.start,
					  hdev->hbm.end - hdev->hbm.start);
		if (ret) {
			hpu_ctx_destroy(ctx);
			return ret;
		}
	}
	hdev->kctx = ctx;
	/* Registered after the schedulers' fini: runs before it. */
	return drmm_add_action_or_reset(&hdev->drm, hpu_ctx_kernel_release, hdev);
}

/*
 * Make room in the history for the next @n sequence numbers: the jobs
 * whose slots they take must have ended; their errors move to old_errors.
 * Interruptible; nothing changes for the caller's jobs on failure.
 */
int hpu_ctx_reserve_seqs_locked(struct hpu_ctx *ctx, unsigned int n)
{
	unsigned int i;
	int ret;

	lockdep_assert_held(&ctx->submit_lock);

	for (i = 1; i <= n; i++) {
		u64 seq = ctx->seq + i;
		struct dma_fence *old = ctx->history[seq % HPU_CTX_HISTORY];
		int status;

		if (!old)
			continue;
		ret = dma_fence_wait(old, true);
		if (ret)
			return ret;
		status = dma_fence_get_status(old);
		if (status < 0) {
			ret = hpu_fault_alloc(sizeof(void *)) ? -ENOMEM :
			      xa_err(xa_store(&ctx->old_errors, seq - HPU_CTX_HISTORY,
					      xa_mk_value(-status), GFP_KERNEL_ACCOUNT));
			if (ret)
				return ret;
		}
		spin_lock(&ctx->fence_lock);
		ctx->history[seq % HPU_CTX_HISTORY] = NULL;
		spin_unlock(&ctx->fence_lock);
		dma_fence_put(old);
	}
	return 0;
}

/* The number hpu_ctx_add_job_locked() gives next. */
u64 hpu_ctx_next_seq_locked(struct hpu_ctx *ctx)
{
	lockdep_assert_held(&ctx->submit_lock);

	return ctx->seq + 1;
}

/* Number the next job of @ctx, ending with @fence, on @queue. */
void hpu_ctx_add_job_locked(struct hpu_ctx *ctx, u32 queue,
			    struct dma_fence *fence)
{
	struct dma_fence *old;
	u64 seq;

	lockdep_assert_held(&ctx->submit_lock);

	spin_lock(&ctx->fence_lock);
	seq = ++ctx->seq;
	WARN_ON(ctx->history[seq % HPU_CTX_HISTORY]);
	ctx->history[seq % HPU_CTX_HISTORY] = dma_fence_get(fence);
	old = ctx->last[queue];
	ctx->last[queue] = dma_fence_get(fence);
	spin_unlock(&ctx->fence_lock);

	dma_fence_put(old);
}

/*
 * The end fence of job @seq (with a reference), or NULL and its error if
 * it left the history.  -EINVAL for a number never given.
 */
int hpu_ctx_job_fence(struct hpu_ctx *ctx, u64 seq, struct dma_fence **fence,
		      int *error)
{
	void *entry;

	spin_lock(&ctx->fence_lock);
	if (!seq || seq > ctx->seq) {
		spin_unlock(&ctx->fence_lock);
		return -EINVAL;
	}
	*fence = NULL;
	if (ctx->seq - seq < HPU_CTX_HISTORY)
		*fence = dma_fence_get(ctx->history[seq % HPU_CTX_HISTORY]);
	spin_unlock(&ctx->fence_lock);

	if (!*fence) {
		entry = xa_load(&ctx->old_errors, seq);
		*error = entry ? -(int)xa_to_value(entry) : 0;
	}
	return 0;
}

/* The end fence of the context's last job on each queue (references). */
void hpu_ctx_last_fences(struct hpu_ctx *ctx,
			 struct dma_fence *fences[HPU_NUM_QUEUES])
{
	unsigned int q;

	spin_lock(&ctx->fence_lock);
	for (q = 0; q < HPU_NUM_QUEUES; q++)
		fences[q] = dma_fence_get(ctx->last[q]);
	spin_unlock(&ctx->fence_lock);
}

/* A job of @ctx was freed; the caller still holds the job's reference. */
void hpu_ctx_job_freed(struct hpu_ctx *ctx)
{
	if (atomic_dec_and_test(&ctx->jobs))
		wake_up_all(&ctx->jobs_freed);
}
