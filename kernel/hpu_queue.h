/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu hardware queues: descriptor rings, completion slots, completion
 * interrupts and queue resets.
 */
#ifndef HPU_QUEUE_H
#define HPU_QUEUE_H

#include <linux/list.h>
#include <linux/llist.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include "hpu_regs.h"

struct hpu_ctx;
struct hpu_device;
struct hpu_job;

/* How long the engines have to let go of memory after a device reset. */
#define HPU_QUEUE_QUIESCE_TIMEOUT_US (1000 * 1000)

/* Descriptors per ring; at most HPU_QUEUE_ENTRIES - 1 jobs are in one. */
#define HPU_QUEUE_ENTRIES 256

struct hpu_queue {
	struct hpu_device *hdev;
	u32 index;
	char name[16];			/* of the interrupt */

	/* Freed at remove, after the device reset. */
	struct hpu_queue_desc *ring;
	dma_addr_t ring_dma;
	/* The job tails write their hardware sequence number to slots[seq % entries]. */
	u64 *slots;
	dma_addr_t slots_dma;
	bool irq_requested;

	/*
	 * Protects the ring, @pi, @hw_seq, @pending, @queued, @waiting,
	 * @scan, @resetting, @started, @saved_tag, @wedged, the contexts' blocked_scan[index] and the
	 * scheduler fields of the jobs on @waiting and @pending.  Taken in
	 * the queue's and the event interrupt and in fence callbacks: always
	 * with interrupts off.  Nests inside the event queue's and the fence locks.
	 */
	spinlock_t lock;
	u32 pi;				/* producer index (free running) */
	u64 hw_seq;			/* last hardware sequence number given */
	struct list_head pending;	/* jobs in the ring, in ring order */
	u32 queued;			/* jobs on @pending */
	struct list_head waiting;	/* jobs not yet in the ring, in submission order */
	u32 scan;			/* number of the last scan of @waiting */
	bool resetting;			/* completions are left to the reset */
	/* The job the device had started when a device reset began (hpu_queues_freeze()). */
	struct hpu_job *started;
	u64 saved_tag;			/* and the tag of the job it saved (hpu_queues_note_saved()) */
	/*
	 * Device resets begun: a job pushed before the last one is in no ring
	 * of the device any more.  Also read locklessly (hpu_queue_wait_consumed()).
	 */
	u32 ring_epoch;
	/*
	 * A reset timed out with the engine in a job: the jobs in the ring
	 * keep their memory until the engine lets go (hpu_queue_recover()).
	 */
	bool wedged;

	/*
	 * The scheduler's (hpu_sched.c); they live until the DRM device is
	 * released, since jobs of open files outlive an unbind.
	 */
	unsigned long timeout;		/* job timeout, jiffies */
	struct delayed_work timeout_work;
	struct llist_head free_list;	/* ended jobs to free */
	struct delayed_work free_work;
};

int hpu_queues_init(struct hpu_device *hdev);
void hpu_queues_quiesce(struct hpu_device *hdev);
void hpu_queues_collect(struct hpu_device *hdev);
void hpu_queues_freeze(struct hpu_device *hdev);
void hpu_queues_note_saved(struct hpu_device *hdev);
void hpu_queues_restart(struct hpu_device *hdev);
void hpu_queues_wedge(struct hpu_device *hdev);
void hpu_queues_halt(struct hpu_device *hdev);
void hpu_queues_fini(struct hpu_device *hdev);

void hpu_queue_push_locked(struct hpu_queue *q, struct hpu_job *job);
void hpu_queue_end_locked(struct hpu_queue *q, struct hpu_job *job,
			  int result, struct list_head *done);
void hpu_queue_signal(struct list_head *done);
unsigned long hpu_queue_recover(struct hpu_queue *q);
unsigned long hpu_queue_reset_timeout_us(void);
bool hpu_queue_reset_wait(struct hpu_device *hdev, bool (*ended)(void *arg, u32 *status),
			  void *arg);
void hpu_queue_job_failed(struct hpu_queue *q, u64 tag, int error, u64 addr);
void hpu_queue_job_set_aside(struct hpu_queue *q, u64 tag);
void hpu_queue_fail_lost(struct hpu_queue *q);
void hpu_queue_cancel_ctx(struct hpu_queue *q, const struct hpu_ctx *ctx);
void hpu_queue_wait_consumed(struct hpu_queue *q, struct hpu_job *job);
void hpu_queue_poll(struct hpu_job *job);

#endif /* HPU_QUEUE_H */
