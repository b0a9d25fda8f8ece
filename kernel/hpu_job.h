/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu jobs: command buffers checked and copied at submit, put into a
 * queue's ring by the scheduler (hpu_sched.c), waited for by sequence
 * number.
 */
#ifndef HPU_JOB_H
#define HPU_JOB_H

#include <linux/atomic.h>
#include <linux/dma-fence.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/types.h>

#include <drm/hpu_packets.h>

#include "hpu_regs.h"

struct drm_device;
struct drm_file;
struct hpu_ctx;
struct hpu_device;
struct hpu_queue;

/* What the driver appends to every command buffer; the device takes up to HPU_QUEUE_TAIL_MAX. */
#define HPU_JOB_TAIL_SIZE \
	(sizeof(struct hpu_pkt_write_completion) + sizeof(struct hpu_pkt_interrupt))
static_assert(HPU_JOB_TAIL_SIZE <= HPU_QUEUE_TAIL_MAX);

/* HBM one zeroing job clears, so each stays well inside the job timeout. */
#define HPU_ZERO_JOB_BYTES (256ull << 20)

enum hpu_job_state {
	HPU_JOB_NEW,		/* being created */
	HPU_JOB_WAITING,	/* on the queue's waiting list */
	HPU_JOB_QUEUED,		/* its descriptor is in the ring */
	HPU_JOB_ENDED,		/* result known; the fence is (being) signalled */
};

enum hpu_job_cb_kind {
	HPU_JOB_CB_INLINE,	/* after deps[] */
	HPU_JOB_CB_KMALLOC,
};

/* A fence the job waits for, from an in-syncobj. */
struct hpu_job_dep {
	struct dma_fence *fence;	/* a reference */
	struct dma_fence_cb cb;
	struct hpu_job *job;
};

struct hpu_job {
	/*
	 * Signalled when the job ends, with its error.  The job's memory
	 * goes with the fence's last reference (WAIT, syncobjs and the
	 * context's history hold some); what else the job holds is
	 * released when it is freed, soon after it ended.
	 */
	struct dma_fence fence;
	/*
	 * The fence's lock, in the job rather than the queue: an exported
	 * fence (a sync file) may outlive the device.  Its callbacks run
	 * under it and may take queue->lock of any queue, so it is never
	 * taken under one: fences are signalled after that is dropped
	 * (hpu_queue_signal()).
	 */
	spinlock_t fence_lock;
	bool module_ref;		/* the fence holds a reference to the module */
	struct hpu_ctx *ctx;		/* holds a reference until freed */
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
	enum hpu_job_cb_kind cb_kind;
	bool cb_mapped;			/* @cb_dma maps @cb for streaming to the device */

	/* Under queue->lock once submitted. */
	struct list_head link;		/* in queue->waiting, then queue->pending */
	enum hpu_job_state state;
	u64 hw_seq;			/* descriptor tag and completion value; 0: never pushed */
	u32 ring_pos;			/* ring index of its descriptor (free running) */
	u32 ring_epoch;			/* the queue's ring_epoch when it was pushed */
	unsigned long head_since;	/* jiffies since it has been the oldest in the ring */
	unsigned long charged;		/* jiffies of its own it ran before it was set aside */
	/* The device holds its progress (HPU_EVENT_PREEMPTED): pushed again with RESUME. */
	bool set_aside;
	int hw_error;			/* reported by the event queue */
	u64 hw_error_addr;		/* and the event's address */
	int result;			/* once ENDED: 0 or -errno */

	atomic_t deps_left;		/* fences of @deps not yet signalled */
	struct llist_node free_node;	/* in queue->free_list once ended */
	unsigned int num_deps;
	struct hpu_job_dep deps[];
};

void hpu_job_set_tail(struct hpu_job *job, u64 completion_addr, u32 vector);
void hpu_job_signal(struct hpu_job *job);
void hpu_job_free(struct hpu_job *job);
void hpu_jobs_unmapped(struct hpu_device *hdev);
struct dma_fence *hpu_job_zero_hbm(struct hpu_device *hdev, u64 addr, u64 size);

int hpu_ioctl_submit(struct drm_device *drm, void *data, struct drm_file *file);
int hpu_ioctl_wait(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* HPU_JOB_H */
