/* SPDX-License-Identifier: GPL-2.0 */
/* MSI-X vectors and the misc interrupt's sources (hpu_irq.c). */
#ifndef HPU_IRQ_H
#define HPU_IRQ_H

#include <linux/types.h>

struct hpu_device;

int hpu_irq_init(struct hpu_device *hdev);
void hpu_irq_fini(struct hpu_device *hdev);
void hpu_irq_enable(struct hpu_device *hdev, u32 sources);
void hpu_irq_disable(struct hpu_device *hdev, u32 sources);

#endif /* HPU_IRQ_H */
