/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu contexts: one per open file (and one for the driver itself, ASID 0),
 * owning an address space and the file's job sequence numbers.
 */
#ifndef HPU_CTX_H
#define HPU_CTX_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "hpu_regs.h"
#include "hpu_vm.h"

struct dma_fence;
struct drm_device;
struct drm_file;
struct hpu_device;
struct hpu_user;

/*
 * WAIT reports the result of any of a file's jobs.  The end fences of the
 * last HPU_CTX_HISTORY jobs are kept; a job older than that has ended (a
 * slot is reused only once its job ended) and only its error, if any, is
 * kept, in old_errors.
 */
#define HPU_CTX_HISTORY 1024

struct hpu_ctx {
	/* Held by the open file, each of its jobs and each of its buffers. */
	struct kref ref;
	struct hpu_device *hdev;
	u32 asid;
	struct hpu_user *user;	/* whose share it counts in; NULL for the driver's */
	bool kernel;		/* the driver's own context, ASID 0 */
	bool closing;		/* the file is closing: its jobs may be cancelled */
	/* Resets its jobs caused, and whether that got it banned (hpu_reset.c). */
	atomic_t resets;
	bool banned;

	struct hpu_vm vm;
	/* Its jobs' fences: one timeline per queue, fence_context + queue. */
	u64 fence_context;
	/*
	 * Under queues[q].lock: the scan of queue q's waiting list that found
	 * a job of this context that cannot go yet, and how many of its jobs
	 * are in queue q's ring (bounded by max_file_ring_jobs, hpu_sched.c).
	 */
	u32 blocked_scan[HPU_NUM_QUEUES];
	u32 ring_jobs[HPU_NUM_QUEUES];

	/*
	 * Serializes SUBMIT, so that sequence numbers follow the push order.
	 * Held while waiting for old fences and while pushing (q->lock, fence
	 * locks: the lock order is in hpu_device.h).
	 */
	struct mutex submit_lock;
	/*
	 * Protects @seq, @history and @last.  Written under @submit_lock;
	 * WAIT and VM_UNMAP read under it alone.  A leaf, nested inside
	 * submit_lock and vm.lock; taken with interrupts on, so never in an
	 * interrupt or a fence callback.
	 */
	spinlock_t fence_lock;
	u64 seq;					/* last sequence number given */
	struct dma_fence *history[HPU_CTX_HISTORY];	/* end fence of job seq at seq % size */
	struct dma_fence *last[HPU_NUM_QUEUES];		/* end fence of the last job per queue */
	/* seq -> -errno of failed jobs out of @history; charged to the process's memcg. */
	struct xarray old_errors;

	/* Jobs not yet freed; the file's release waits until none is left. */
	atomic_t jobs;
	wait_queue_head_t jobs_freed;

	/* Usage, reported by DRM_HPU_INFO_STATS; hbm_used is bounded (hpu_limits.c). */
	atomic64_t hbm_used;
	atomic64_t jobs_submitted;
	atomic64_t jobs_completed;
	atomic64_t jobs_failed;
};

struct hpu_ctx *hpu_ctx_get(struct hpu_ctx *ctx);
void hpu_ctx_put(struct hpu_ctx *ctx);

int hpu_ctx_open(struct drm_device *drm, struct drm_file *file);
void hpu_ctx_postclose(struct drm_device *drm, struct drm_file *file);
int hpu_ctx_kernel_init(struct hpu_device *hdev);
void hpu_ctx_kernel_fini(struct hpu_device *hdev);

int hpu_ctx_reserve_seqs_locked(struct hpu_ctx *ctx, unsigned int n);
u64 hpu_ctx_next_seq_locked(struct hpu_ctx *ctx);
void hpu_ctx_add_job_locked(struct hpu_ctx *ctx, u32 queue,
			    struct dma_fence *fence);
int hpu_ctx_job_fence(struct hpu_ctx *ctx, u64 seq, struct dma_fence **fence,
		      int *error);
void hpu_ctx_last_fences(struct hpu_ctx *ctx,
			 struct dma_fence *fences[HPU_NUM_QUEUES]);
void hpu_ctx_job_freed(struct hpu_ctx *ctx);

#endif /* HPU_CTX_H */
