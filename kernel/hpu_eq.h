/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu event queue: the device's reports of failed jobs.
 */
#ifndef HPU_EQ_H
#define HPU_EQ_H

#include <linux/spinlock.h>
#include <linux/types.h>

#include "hpu_regs.h"

struct hpu_device;

#define HPU_EQ_ENTRIES 256

struct hpu_eq {
	/* Freed at remove, after the device reset. */
	struct hpu_event *ring;
	dma_addr_t ring_dma;
	/*
	 * Serializes consumers of the ring (the misc interrupt and queue
	 * recovery) and protects @ci.  Taken with interrupts off; nests
	 * outside the queue locks and the fence locks (events end jobs).
	 */
	spinlock_t lock;
	u32 ci;				/* events consumed (free running) */
};

void hpu_eq_early_init(struct hpu_device *hdev);
int hpu_eq_init(struct hpu_device *hdev);
void hpu_eq_restart(struct hpu_device *hdev);
void hpu_eq_fini(struct hpu_device *hdev);
void hpu_eq_process(struct hpu_device *hdev);

#endif /* HPU_EQ_H */
