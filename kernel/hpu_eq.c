// SPDX-License-Identifier: GPL-2.0
/*
 * hpu event queue.
 *
 * The device writes a struct hpu_event for every job that fails (MMU
 * fault, illegal or privileged packet, DMA error, abort by a queue reset)
 * or that it set aside (PREEMPTED, not a failure) and raises HPU_IRQ_EVENT
 * on the misc vector.  Each event names the queue and the tag of the job
 * (its hardware sequence number), which then ends with the matching errno,
 * or is pushed again to go on; a user queue's job has written its status into
 * its descriptor, so its event is only logged.  If the ring overflowed, the jobs the device
 * consumed without completing them and without an event fail with -EIO.
 */
#include <linux/dma-mapping.h>
#include <linux/lockdep.h>

#include "hpu_device.h"
#include "hpu_eq.h"
#include "hpu_irq.h"
#include "hpu_queue.h"

static int hpu_eq_errno(u32 type)
{
	switch (type) {
	case HPU_EVENT_MMU_FAULT:
		return -EFAULT;
	case HPU_EVENT_ILLEGAL_PACKET:
	case HPU_EVENT_BAD_KERNEL:
		return -EINVAL;
	case HPU_EVENT_PRIV_PACKET:
		return -EPERM;
	case HPU_EVENT_DMA_ERROR:
		return -EIO;
	case HPU_EVENT_ABORTED:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

static void hpu_eq_handle(struct hpu_device *hdev, const struct hpu_event *ev)
{
	/* A user queue's job reports its status to its process itself. */
	if (ev->queue - HPU_EVENT_QUEUE_UQ(0) < HPU_NUM_UQ) {
		dev_dbg(hpu_dev(hdev),
			"user queue %u asid %u engine 0x%x: job 0x%llx failed: event %u at 0x%llx\n",
			ev->queue - HPU_EVENT_QUEUE_UQ(0), ev->asid, ev->engine, ev->tag,
			ev->type, ev->addr);
		return;
	}
	if (ev->queue >= HPU_NUM_QUEUES) {
		dev_warn_ratelimited(hpu_dev(hdev),
				     "event %u for unknown queue %u\n",
				     ev->type, ev->queue);
		return;
	}
	dev_dbg(hpu_dev(hdev),
		"queue %u asid %u engine 0x%x: job %llu: event %u at 0x%llx\n",
		ev->queue, ev->asid, ev->engine, ev->tag, ev->type, ev->addr);
	if (ev->type == HPU_EVENT_PREEMPTED) {
		hpu_queue_job_set_aside(&hdev->queues[ev->queue], ev->tag);
		return;
	}
	hpu_queue_job_failed(&hdev->queues[ev->queue], ev->tag,
			     hpu_eq_errno(ev->type), ev->addr);
}

/* Consume the events written so far (misc interrupt, queue recovery). */
void hpu_eq_process(struct hpu_device *hdev)
{
	struct hpu_eq *eq = &hdev->eq;
	unsigned long flags;
	bool overflow;
	u32 pi;

	spin_lock_irqsave(&eq->lock, flags);
	if (!eq->ring) {
		/* Not programmed (yet, or any more). */
		spin_unlock_irqrestore(&eq->lock, flags);
		return;
	}
	pi = hpu_rreg(hdev, HPU_REG_EQ_PI);
	/* The entries the device wrote before PI moved. */
	rmb();
	if (pi - eq->ci > HPU_EQ_ENTRIES)
		eq->ci = pi - HPU_EQ_ENTRIES;
	while (eq->ci != pi) {
		struct hpu_event ev = eq->ring[eq->ci % HPU_EQ_ENTRIES];

		eq->ci++;
		hpu_eq_handle(hdev, &ev);
	}
	/* Writing EQ_CI clears OVERFLOW: read it first. */
	overflow = hpu_rreg(hdev, HPU_REG_EQ_STATUS) & HPU_EQ_STATUS_OVERFLOW;
	hpu_wreg(hdev, HPU_REG_EQ_CI, eq->ci);
	if (overflow) {
		unsigned int q;

		dev_warn_ratelimited(hpu_dev(hdev),
				     "event queue overflowed: events were lost\n");
		for (q = 0; q < HPU_NUM_QUEUES; q++)
			hpu_queue_fail_lost(&hdev->queues[q]);
	}
	spin_unlock_irqrestore(&eq->lock, flags);
}

/* Before the misc interrupt is requested. */
void hpu_eq_early_init(struct hpu_device *hdev)
{
	spin_lock_init(&hdev->eq.lock);
	hdev->eq.ring = NULL;
}

/* Point the device at the ring and consume from where it writes.  Lock held. */
static void hpu_eq_program_locked(struct hpu_device *hdev)
{
	struct hpu_eq *eq = &hdev->eq;

	lockdep_assert_held(&eq->lock);
	hpu_wreg(hdev, HPU_REG_EQ_RING_LO, lower_32_bits(eq->ring_dma));
	hpu_wreg(hdev, HPU_REG_EQ_RING_HI, upper_32_bits(eq->ring_dma));
	hpu_wreg(hdev, HPU_REG_EQ_RING_SIZE, HPU_EQ_ENTRIES);
	eq->ci = hpu_rreg(hdev, HPU_REG_EQ_PI);
	hpu_wreg(hdev, HPU_REG_EQ_CI, eq->ci);
}

/* The firmware is READY: program the ring and let events interrupt. */
int hpu_eq_init(struct hpu_device *hdev)
{
	struct hpu_eq *eq = &hdev->eq;
	struct hpu_event *ring;
	dma_addr_t ring_dma;

	ring = dma_alloc_coherent(hpu_dev(hdev), HPU_EQ_ENTRIES * sizeof(*ring),
				  &ring_dma, GFP_KERNEL);
	if (!ring)
		return -ENOMEM;

	spin_lock_irq(&eq->lock);
	eq->ring = ring;
	eq->ring_dma = ring_dma;
	hpu_eq_program_locked(hdev);
	spin_unlock_irq(&eq->lock);
	hpu_irq_enable(hdev, HPU_IRQ_EVENT);
	return 0;
}

/*
 * A warm reset disabled the ring and emptied it (a device reset,
 * hpu_reset.c, which restores the interrupt mask itself).
 */
void hpu_eq_restart(struct hpu_device *hdev)
{
	struct hpu_eq *eq = &hdev->eq;

	spin_lock_irq(&eq->lock);
	if (eq->ring)
		hpu_eq_program_locked(hdev);
	spin_unlock_irq(&eq->lock);
}

/* The device must be reset (idle) before the ring goes.  Safe without init. */
void hpu_eq_fini(struct hpu_device *hdev)
{
	struct hpu_eq *eq = &hdev->eq;
	struct hpu_event *ring;

	hpu_irq_disable(hdev, HPU_IRQ_EVENT);
	spin_lock_irq(&eq->lock);
	ring = eq->ring;
	eq->ring = NULL;
	spin_unlock_irq(&eq->lock);
	if (ring)
		dma_free_coherent(hpu_dev(hdev), HPU_EQ_ENTRIES * sizeof(*ring),
				  ring, eq->ring_dma);
}
