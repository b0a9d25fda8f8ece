// SPDX-License-Identifier: GPL-2.0
/*
 * hpu interrupts: MSI-X setup and the misc vector (boot done, device
 * errors, events, user queues).  The queues' vectors are handled in hpu_queue.c.
 */
#include <linux/interrupt.h>
#include <linux/lockdep.h>
#include <linux/pci.h>

#include "hpu_device.h"
#include "hpu_eq.h"
#include "hpu_irq.h"
#include "hpu_regs.h"
#include "hpu_uq.h"

/* The misc vector, then one per hardware queue (requested in hpu_queue.c). */
#define HPU_IRQ_NUM_VECTORS (HPU_MSIX_VEC_MISC + 1 + HPU_NUM_QUEUES)

static const char *hpu_irq_err_name(u32 code)
{
	static const char * const names[] = {
		[HPU_ERR_NONE] = "none",
		[HPU_ERR_BAD_ACCESS] = "bad register access",
		[HPU_ERR_READ_ONLY] = "write to read-only register",
		[HPU_ERR_BOOT_BUSY] = "boot started while busy",
		[HPU_ERR_BAD_RESET_KEY] = "bad reset key",
		[HPU_ERR_BAD_CTRL] = "bad control bits",
		[HPU_ERR_BAD_QUEUE] = "bad queue programming",
	};

	return code < ARRAY_SIZE(names) ? names[code] : "unknown";
}

static irqreturn_t hpu_irq_misc(int irq, void *arg)
{
	struct hpu_device *hdev = arg;
	u32 cause = hpu_rreg(hdev, HPU_REG_IRQ_CAUSE);

	if (!cause)
		return IRQ_NONE;

	/* Acknowledge first: an event arriving while we handle this one re-raises. */
	hpu_wreg(hdev, HPU_REG_IRQ_CAUSE, cause);

	if (cause & HPU_IRQ_ERROR) {
		u32 code = hpu_rreg(hdev, HPU_REG_ERR_CODE);

		dev_err_ratelimited(hpu_dev(hdev), "device error %u (%s)\n",
				    code, hpu_irq_err_name(code));
	}
	if (cause & HPU_IRQ_BOOT_DONE)
		complete(&hdev->boot_done);
	if (cause & HPU_IRQ_EVENT)
		hpu_eq_process(hdev);
	if (cause & HPU_IRQ_UQ)
		hpu_uq_irq(hdev);

	return IRQ_HANDLED;
}

/* Clear, then set, bits of IRQ_MASK; a set bit masks its source. */
static void hpu_irq_update_mask_locked(struct hpu_device *hdev, u32 clear,
				       u32 set)
{
	u32 val;

	lockdep_assert_held(&hdev->irq_mask_lock);

	val = hpu_rreg(hdev, HPU_REG_IRQ_MASK);
	hpu_wreg(hdev, HPU_REG_IRQ_MASK, (val & ~clear) | set);
}

/* Let @sources (HPU_IRQ_*) raise the misc vector. */
void hpu_irq_enable(struct hpu_device *hdev, u32 sources)
{
	unsigned long flags;

	spin_lock_irqsave(&hdev->irq_mask_lock, flags);
	hpu_irq_update_mask_locked(hdev, sources, 0);
	spin_unlock_irqrestore(&hdev->irq_mask_lock, flags);
}

void hpu_irq_disable(struct hpu_device *hdev, u32 sources)
{
	unsigned long flags;

	spin_lock_irqsave(&hdev->irq_mask_lock, flags);
	hpu_irq_update_mask_locked(hdev, 0, sources);
	spin_unlock_irqrestore(&hdev->irq_mask_lock, flags);
}

int hpu_irq_init(struct hpu_device *hdev)
{
	struct pci_dev *pdev = hdev->pdev;
	int ret;

	ret = pci_alloc_irq_vectors(pdev, HPU_IRQ_NUM_VECTORS,
				    HPU_IRQ_NUM_VECTORS, PCI_IRQ_MSIX);
	if (ret < 0)
		return dev_err_probe(&pdev->dev, ret,
				     "cannot allocate MSI-X vectors\n");

	ret = pci_request_irq(pdev, HPU_MSIX_VEC_MISC, hpu_irq_misc, NULL,
			      hdev, "hpu-misc@%s", pci_name(pdev));
	if (ret) {
		dev_err(&pdev->dev, "cannot request misc interrupt: %d\n", ret);
		goto err_free_vectors;
	}

	/* Drop causes left over from before this driver instance. */
	hpu_wreg(hdev, HPU_REG_IRQ_CAUSE, HPU_IRQ_ALL);
	hpu_irq_enable(hdev, HPU_IRQ_ERROR);
	return 0;

err_free_vectors:
	pci_free_irq_vectors(pdev);
	return ret;
}

void hpu_irq_fini(struct hpu_device *hdev)
{
	hpu_irq_disable(hdev, HPU_IRQ_ALL);
	pci_free_irq(hdev->pdev, HPU_MSIX_VEC_MISC, hdev);
	pci_free_irq_vectors(hdev->pdev);
}
