/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu jobs: command buffers checked and copied at submit, run by a queue's
 * scheduler, waited for by sequence number.
 */
#ifndef HPU_JOB_H
#define HPU_JOB_H

#include <linux/list.h>
#include <linux/types.h>
#include <drm/gpu_scheduler.h>

#include <drm/hpu_packets.h>

#include "hpu_regs.h"

struct dma_fence;
struct drm_device;
struct drm_file;
struct hpu_ctx;
struct hpu_device;
struct hpu_queue;

/* What the driver appends to every command buffer; the device takes up to HPU_QUEUE_TAIL_MAX. */
#define HPU_JOB_TAIL_SIZE \
	(sizeof(struct hpu_pkt_write_completion) + sizeof(struct hpu_pkt_interrupt))
static_assert(HPU_JOB_TAIL_SIZE <= HPU_QUEUE_TAIL_MAX);

enum hpu_job_state {
	HPU_JOB_NEW,	/* not in a ring: never run, or dropped by a queue reset */
	HPU_JOB_QUEUED,	/* its descriptor is in the ring */
	HPU_JOB_ENDED,	/* result known; the hardware fence is (being) signalled */
};

struct hpu_job {
	struct drm_sched_job base;
	struct hpu_ctx *ctx;		/* holds a reference */
	struct hpu_queue *queue;
	u64 seq;			/* the file's sequence number */

	/*
	 * What the device runs: the checked copy of the user's packets
	 * (@user_size bytes, the descriptor's priv_offset) and the tail.
	 */
	void *cb;
	dma_addr_t cb_dma;
	u32 cb_size;
	u32 user_size;

	/* Ends the job for the scheduler; initialized when first pushed. */
	struct dma_fence *hw_fence;

	/*
	 * Queue side, under queue->lock once pushed.  @state moves from NEW
	 * to QUEUED only in run_job (the scheduler thread), and back only in
	 * recovery with that thread parked.
	 */
	struct list_head link;		/* in queue->pending */
	enum hpu_job_state state;
	u64 hw_seq;			/* descriptor tag and completion value; 0: never pushed */
	u32 ring_pos;			/* ring index of its descriptor (free running) */
	unsigned long head_since;	/* jiffies since it has been the oldest in the ring */
	int hw_error;			/* reported by the event queue */
	int result;			/* once ENDED: 0 or -errno */
};

static inline struct hpu_job *to_hpu_job(struct drm_sched_job *sched_job)
{
	return container_of(sched_job, struct hpu_job, base);
}

int hpu_job_pool_init(struct hpu_device *hdev);
void hpu_job_set_tail(struct hpu_job *job, u64 completion_addr, u32 vector);
void hpu_job_signal(struct hpu_job *job);
void hpu_job_free(struct hpu_job *job);
int hpu_job_zero_hbm(struct hpu_device *hdev, u64 addr, u64 size);

int hpu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file);
int hpu_ioctl_wait(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* HPU_JOB_H */
