/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu: the per-device state shared by all parts of the driver.
 */
#ifndef HPU_DEVICE_H
#define HPU_DEVICE_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/io.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <drm/drm_device.h>
#include <drm/hpu_accel.h>

#include "hpu_eq.h"
#include "hpu_gem.h"
#include "hpu_limits.h"
#include "hpu_mmu.h"
#include "hpu_queue.h"
#include "hpu_regs.h"
#include "hpu_uq.h"

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
	 * interrupts off so that any context may (un)mask a source.
	 */
	spinlock_t irq_mask_lock;

	/* Completed by the misc interrupt on HPU_IRQ_BOOT_DONE. */
	struct completion boot_done;

	/*
	 * What DRM_IOCTL_HPU_INFO and sysfs report.  Written once in probe
	 * before the device is published and read-only afterwards, but for
	 * status, which hpu_device_set_malfunction() may set: no lock.
	 */
	struct drm_hpu_device_info info;

	/* debugfs directory of this device and its "regs" file's registers. */
	struct dentry *debugfs;
	struct debugfs_regset32 regset;

	unsigned int job_timeout_ms;	/* set at probe */
	struct hpu_mmu mmu;
	struct hpu_hbm hbm;
	struct hpu_usage usage;		/* shares of files and users (hpu_limits.c) */
	struct hpu_queue queues[HPU_NUM_QUEUES];
	struct hpu_uqs uqs;
	struct hpu_eq eq;
	struct hpu_ctx *kctx;		/* the driver's context, ASID 0 */
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
 * A queue reset did not stop an engine, which may still use the memory of
 * the job it is in: the device is MALFUNCTION until the driver is reloaded
 * and takes no new work (SUBMIT, UQUEUE_CREATE and zeroing fail with -EIO).
 */
static inline void hpu_device_set_malfunction(struct hpu_device *hdev)
{
	if (xchg(&hdev->info.status, DRM_HPU_STATUS_MALFUNCTION) != DRM_HPU_STATUS_MALFUNCTION)
		dev_err(hpu_dev(hdev),
			"a queue reset failed: the device malfunctions and takes no new work\n");
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
