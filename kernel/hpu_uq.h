/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu user queues: hardware queues bound to one file's context and fed by
 * the process itself through its doorbell page (DRM_IOCTL_HPU_UQUEUE_*).
 */
#ifndef HPU_UQ_H
#define HPU_UQ_H

#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "hpu_regs.h"

struct drm_device;
struct drm_file;
struct drm_hpu_stats;
struct hpu_ctx;
struct hpu_device;
struct hpu_uq_db;

struct hpu_uq {
	u32 index;
	/* Under hpu_uqs.lock. */
	struct hpu_ctx *ctx;	/* owner; NULL: free */
	struct hpu_uq_db *db;	/* the owner's doorbell mapping */
	bool live;		/* bound and not being unbound: the doorbell may be mapped */
	u32 gen;		/* bumped at every bind: snapshots of PI know their binding */
	bool broken;		/* a reset did not finish: never handed out again */
	/*
	 * Its file was banned: disabled (or to be, once a device reset lets
	 * its engine go), UQUEUE_WAIT fails.  Also read locklessly by waiters.
	 */
	bool stopped;
	/*
	 * The context whose memory the job a reset did not stop may still
	 * use, until a wait for its release (hpu_uq.c) sees the engine let go:
	 * the context's VM_UNMAPs wait for it and its file's release waits
	 * for it, so it is cleared before the context goes.  NULL: none.
	 */
	struct hpu_ctx *held;
	u32 dropped;		/* jobs of this binding a queue reset ended without a status */
	/* The watchdog's: busy with CI at watch_ci since watch_since, as far as it saw. */
	bool watch_busy;
	u32 watch_ci;
	unsigned long watch_since;
	/* UQUEUE_WAIT sleepers, woken by HPU_IRQ_UQ, an unbind or the device going. */
	wait_queue_head_t wq;
};

struct hpu_uqs {
	/*
	 * Protects the queues' ownership, watchdog and @dropped fields (@ctx
	 * and @live are also read locklessly by sleeping waiters) and orders
	 * queue resets, held across their waits.  Taken in the doorbell fault
	 * handler, so under mmap_lock: never held across a user-memory access.
	 * Nests inside vm.lock; takes no other driver lock.
	 */
	struct mutex lock;
	u32 count;		/* queues the device has (0: none) */
	phys_addr_t db_base;	/* bus address of the doorbell BAR */
	unsigned long period;	/* watchdog period, jiffies */
	struct delayed_work watchdog;
	struct hpu_uq q[HPU_NUM_UQ];
};

/* A context's user queues when a range was unmapped: jobs up to these PIs may still use it. */
struct hpu_uq_marks {
	u32 mask;
	u32 gen[HPU_NUM_UQ];
	u32 pi[HPU_NUM_UQ];
};

int hpu_uqs_init(struct hpu_device *hdev);
void hpu_uqs_halt(struct hpu_device *hdev);
void hpu_uq_irq(struct hpu_device *hdev);
void hpu_uq_rewatch_locked(struct hpu_device *hdev);
void hpu_uq_restart_locked(struct hpu_device *hdev);
void hpu_uq_ban_locked(struct hpu_ctx *ctx);
void hpu_uq_ctx_release(struct hpu_ctx *ctx, struct drm_file *file);
void hpu_uq_mark(struct hpu_ctx *ctx, struct hpu_uq_marks *marks);
void hpu_uq_stats(struct hpu_ctx *ctx, struct drm_hpu_stats *st);
bool hpu_uq_marks_passed(struct hpu_device *hdev, struct hpu_uq_marks *marks);

int hpu_ioctl_uqueue_create(struct drm_device *drm, void *data, struct drm_file *file);
int hpu_ioctl_uqueue_destroy(struct drm_device *drm, void *data, struct drm_file *file);
int hpu_ioctl_uqueue_wait(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* HPU_UQ_H */
