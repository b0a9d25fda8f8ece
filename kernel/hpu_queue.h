/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu hardware queues: descriptor rings, completion slots, completion
 * interrupts and queue resets.
 */
#ifndef HPU_QUEUE_H
#define HPU_QUEUE_H

#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <drm/gpu_scheduler.h>

#include "hpu_regs.h"

struct hpu_ctx;
struct hpu_device;
struct hpu_job;

/* Descriptors per ring; at most HPU_QUEUE_ENTRIES - 1 jobs are in one. */
#define HPU_QUEUE_ENTRIES 256

struct hpu_queue {
	struct hpu_device *hdev;
	u32 index;
	char name[16];			/* of the scheduler and the interrupt */

	/* Lives until the DRM device is released: entities of open files use it. */
	struct drm_gpu_scheduler sched;

	/* Freed at remove, after the device reset. */
	struct hpu_queue_desc *ring;
	dma_addr_t ring_dma;
	/* The job tails write their hardware sequence number to slots[seq % entries]. */
	u64 *slots;
	dma_addr_t slots_dma;
	bool irq_requested;

	u64 fence_context;
	/* Lock of the hardware fences of this queue's jobs. */
	spinlock_t fence_lock;

	/*
	 * Protects the ring, @pi, @hw_seq, @pending, @resetting and the
	 * queue-side fields of the jobs on @pending.  Taken in the queue's
	 * and the event interrupt: always with interrupts off.
	 */
	spinlock_t lock;
	u32 pi;				/* producer index (free running) */
	u64 hw_seq;			/* last hardware sequence number given */
	struct list_head pending;	/* jobs in the ring, in ring order */
	bool resetting;			/* completions are left to the reset */
};

int hpu_queues_init(struct hpu_device *hdev);
void hpu_queues_quiesce(struct hpu_device *hdev);
void hpu_queues_halt(struct hpu_device *hdev);
void hpu_queues_fini(struct hpu_device *hdev);

int hpu_queue_push(struct hpu_queue *q, struct hpu_job *job);
void hpu_queue_recover(struct hpu_queue *q);
void hpu_queue_job_failed(struct hpu_queue *q, u64 tag, int error);
void hpu_queue_fail_lost(struct hpu_queue *q);
void hpu_queue_cancel_ctx(struct hpu_queue *q, const struct hpu_ctx *ctx);
void hpu_queue_wait_consumed(struct hpu_queue *q, struct hpu_job *job);
void hpu_queue_poll(struct hpu_queue *q, struct drm_sched_fence *end);

#endif /* HPU_QUEUE_H */
