/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu: the per-device state shared by all parts of the driver.
 *
 * Lock order, outermost first.  A lock is taken only while holding locks
 * listed above it; the nestings that exist are named, and two locks with no
 * named nesting are never held together.
 *
 * Sleeping locks:
 *  - reset.sem (hpu_reset.c): read by each kernel queue's recovery and the
 *    heartbeat work, written by the device reset work, which then takes
 *    uqs.lock (and under it mmu.lock, eq->lock, q->lock and irq_mask_lock
 *    while it restarts the device).  No path holding another driver lock
 *    takes it, and no path holding it waits for SUBMIT, WAIT, a file's
 *    release or an ioctl: those never wait for a reset (a SUBMIT meanwhile
 *    leaves its jobs waiting; a release waits for its jobs with no lock).
 *  - mmap_lock (core): the doorbell page's fault handler (hpu_uq.c) holds it
 *    and takes uqs.lock.  No driver lock is held across an access to user
 *    memory (copy_{from,to}_user(), VM_MAP's pin_user_pages_fast()).
 *  - ctx->submit_lock: SUBMIT, and the driver's context's zeroing jobs (the
 *    scrub work).  Waits for the context's old fences under it: no fence
 *    needs a mutex to signal.  Takes ctx->fence_lock, the out-syncobj's
 *    lock, fence locks (callbacks on the in-fences; the fences of jobs a
 *    gone device ends) and q->lock.
 *  - ctx->vm.lock, also the lock of the context's page tables: takes
 *    mmu.lock (table pages), hbm.lock (a mapping's release may free its
 *    buffer), host_dma.lock (or unmap its host pages), uqs.lock
 *    (hpu_uq_mark(), hpu_uq_marks_passed()) and ctx->fence_lock.
 *  - uqs.lock: held across a user queue's reset, which sleeps until the
 *    engine lets go; takes no other driver lock but mmu.lock, eq->lock,
 *    q->lock and irq_mask_lock in a device reset (above), and q->lock and
 *    fence locks to ban a file (hpu_reset_ban_jobs_locked(), also from a
 *    kernel queue's recovery, under reset.sem).
 *  - mmu.lock, hbm.lock, usage.lock, host_dma.lock: leaves, held to allocate
 *    and free.
 * The driver's mutexes are held across GFP_KERNEL allocations: none is
 * taken in reclaim (the driver has no shrinker).  dma_resv is never locked
 * (buffers are private, no PRIME).
 *
 * Spinlocks, under which nothing sleeps:
 *  - eq->lock: the misc interrupt and queue recovery.  Takes q->lock and,
 *    signalling the jobs that events end, their fence locks.
 *  - fence locks: each job's job->fence_lock (its fence's: in the job, which
 *    an exported fence keeps after the device is gone) and other drivers'
 *    in-fences' locks.  dma_fence_signal() runs the callbacks under
 *    them: hpu_sched_dep_signalled() takes q->lock of any queue,
 *    hpu_scrub_job_cb() only a wait queue's and the workqueue's.  A
 *    callback must not signal a fence: two fence locks, or one twice, would
 *    nest.
 *  - q->lock: ends jobs and pushes them into the ring; their fences are
 *    signalled once it is dropped (hpu_queue_signal()).  Takes only the
 *    timer and workqueue locks of (re)arming the scheduler's works.
 *  - ctx->fence_lock: a leaf, taken with interrupts on: never in an
 *    interrupt or a fence callback.
 *  - irq_mask_lock: a leaf.
 *  - reset.lock: a leaf, the device reset's pending cause.
 *  - reset.fi_lock (a mutex): a leaf, the fault-injection registers' select.
 * eq->lock, the fence locks, q->lock and irq_mask_lock are always taken with
 * interrupts off.
 *
 * Contexts: the queue vectors' handler takes q->lock, then signals; the misc
 * vector's takes eq->lock (and so the above) and wakes UQUEUE_WAIT sleepers;
 * fence callbacks may run in either.  None of them takes a mutex or
 * ctx->fence_lock.  The doorbell fault handler sleeps on uqs.lock under
 * mmap_lock.  drm_dev_enter() sections (SRCU readers) nest either way with
 * any lock: drm_dev_unplug() is called with none held.  The driver's works
 * are cancelled and flushed with no driver lock held, and unbind waits for
 * the jobs' command buffers to be unmapped (hpu_jobs_unmapped()) with none.
 */
#ifndef HPU_DEVICE_H
#define HPU_DEVICE_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/io.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <drm/drm_device.h>
#include <drm/hpu_accel.h>

#include "hpu_eq.h"
#include "hpu_gem.h"
#include "hpu_limits.h"
#include "hpu_mmu.h"
#include "hpu_queue.h"
#include "hpu_regs.h"
#include "hpu_reset.h"
#include "hpu_uq.h"
#include "hpu_vm.h"

struct hpu_ctx;

/* Device-wide job counters (jobs of SUBMIT, not the driver's own). */
struct hpu_stats {
	atomic64_t jobs_submitted;
	atomic64_t jobs_completed;
	atomic64_t jobs_failed;
	atomic_t contexts;		/* open files */
};

/*
 * One hpu PCI function.
 *
 * Lifetimes: hardware resources (BARs, interrupts, rings) go at unbind,
 * after drm_dev_unplug() and a device reset; what open files still use
 * (HBM and MMU allocators, ASIDs, the scheduler's works) goes with the DRM device,
 * when the last file is closed.  Paths that open files reach touch the
 * hardware only inside drm_dev_enter().
 */
struct hpu_device {
	/*
	 * Its refcount keeps this struct alive while a file is open, even
	 * after the PCI device went away (see hpu_remove()).
	 */
	struct drm_device drm;
	struct pci_dev *pdev;

	/* BAR0.  Unmapped at unbind: nothing an open file reaches may use it. */
	void __iomem *regs;
	/* BAR4: the MMU region of HBM.  Unmapped at unbind. */
	void __iomem *mmu_bar;

	/*
	 * Serializes read-modify-write cycles of HPU_REG_IRQ_MASK.  Taken with
	 * interrupts off so that any context may (un)mask a source; a leaf.
	 */
	spinlock_t irq_mask_lock;

	/* Completed by the misc interrupt on HPU_IRQ_BOOT_DONE. */
	struct completion boot_done;

	/*
	 * What DRM_IOCTL_HPU_INFO and sysfs report.  Written once in probe
	 * before the device is published and read-only afterwards, but for
	 * status, which the reset ladder (hpu_reset.c) changes with cmpxchg()
	 * and hpu_device_set_malfunction() with xchg(), and the reset counts,
	 * which INFO takes from @reset: no lock.
	 */
	struct drm_hpu_device_info info;

	/* debugfs directory of this device and its "regs" file's registers. */
	struct dentry *debugfs;
	struct debugfs_regset32 regset;

	unsigned int job_timeout_ms;	/* set at probe */
	u32 regs_minor;			/* the device's register map minor, set at probe */
	struct hpu_reset reset;
	struct hpu_mmu mmu;
	struct hpu_hbm hbm;
	struct hpu_usage usage;		/* shares of files and users (hpu_limits.c) */
	struct hpu_host_dma host_dma;	/* writable host pages' DMA mappings (hpu_vm.c) */
	struct hpu_queue queues[HPU_NUM_QUEUES];
	struct hpu_uqs uqs;
	struct hpu_eq eq;
	struct hpu_ctx *kctx;		/* the driver's context, ASID 0 */
	/*
	 * Jobs whose command buffer is DMA-mapped (hpu_job.c); unbind waits
	 * on @jobs_unmapped for none to be left.
	 */
	atomic_t jobs_mapped;
	wait_queue_head_t jobs_unmapped;
	struct hpu_stats stats;
};

static inline struct hpu_device *to_hpu_device(struct drm_device *drm)
{
	return container_of(drm, struct hpu_device, drm);
}

static inline struct device *hpu_dev(struct hpu_device *hdev)
{
	return &hdev->pdev->dev;
}

/*
 * The reset ladder failed (@why), and the engine may still use the memory
 * of the job it is in: the device is MALFUNCTION until the driver is
 * reloaded and takes no new work (SUBMIT, UQUEUE_CREATE and zeroing fail
 * with -EIO).
 */
static inline void hpu_device_set_malfunction(struct hpu_device *hdev, const char *why)
{
	if (xchg(&hdev->info.status, DRM_HPU_STATUS_MALFUNCTION) != DRM_HPU_STATUS_MALFUNCTION)
		dev_err(hpu_dev(hdev), "%s: the device malfunctions and takes no new work\n",
			why);
}

static inline bool hpu_device_malfunction(struct hpu_device *hdev)
{
	return READ_ONCE(hdev->info.status) == DRM_HPU_STATUS_MALFUNCTION;
}

static inline u32 hpu_rreg(struct hpu_device *hdev, u32 reg)
{
	return readl(hdev->regs + reg);
}

static inline void hpu_wreg(struct hpu_device *hdev, u32 reg, u32 val)
{
	writel(val, hdev->regs + reg);
}

#endif /* HPU_DEVICE_H */
