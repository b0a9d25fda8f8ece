// SPDX-License-Identifier: GPL-2.0
/*
 * hpu device fault injection through debugfs, for root (the files are
 * 0600 and debugfs itself is root's):
 *
 *   /sys/kernel/debug/hpu/<pci address>/fault/<kind>/
 *       times        faults still to inject (4294967295: no limit)
 *       skip         events of the kind to let pass first
 *       probability  of each further event, out of 2^32 (4294967295: always)
 *       seed         of the device's generator, drawn from at each write
 *       asid         events of this context only (4294967295: any)
 *       injected     faults of the kind injected since power-on (read-only)
 *   /sys/kernel/debug/hpu/<pci address>/reset
 *       writing anything resets the device (cause "request") and returns
 *       once the reset is done
 *
 * <kind> is one of enum hpu_fault_kind (hw/hpu_regs.h): engine_hang,
 * mmu_fault, dma_error, lost_irq, bad_completion, heartbeat_loss,
 * boot_fail, reset_fail.  Each write selects the kind (HPU_REG_FI_SELECT),
 * writes the setting and arms the kind with all its settings; each read
 * selects it and reads.  reset.fi_lock keeps the select and the access
 * together.  The fault directory exists only on a device with register
 * map 1.7.
 */
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "hpu_device.h"
#include "hpu_inject.h"
#include "hpu_regs.h"
#include "hpu_reset.h"

static const char * const hpu_inject_kinds[HPU_FAULT_KINDS] = {
	[HPU_FAULT_ENGINE_HANG] = "engine_hang",
	[HPU_FAULT_MMU_FAULT] = "mmu_fault",
	[HPU_FAULT_DMA_ERROR] = "dma_error",
	[HPU_FAULT_LOST_IRQ] = "lost_irq",
	[HPU_FAULT_BAD_COMPLETION] = "bad_completion",
	[HPU_FAULT_HEARTBEAT_LOSS] = "heartbeat_loss",
	[HPU_FAULT_BOOT_FAIL] = "boot_fail",
	[HPU_FAULT_RESET_FAIL] = "reset_fail",
};

static const struct {
	const char *name;
	u32 reg;
} hpu_inject_settings[] = {
	{ "times", HPU_REG_FI_TIMES },
	{ "skip", HPU_REG_FI_SKIP },
	{ "probability", HPU_REG_FI_PROB },
	{ "seed", HPU_REG_FI_SEED },
	{ "asid", HPU_REG_FI_ASID },
	{ "injected", HPU_REG_FI_INJECTED },
};

/* What one file reaches: a register of a kind. */
struct hpu_inject_file {
	struct hpu_device *hdev;
	u32 kind;
	u32 reg;
};

static int hpu_inject_get(void *data, u64 *val)
{
	struct hpu_inject_file *f = data;
	struct hpu_device *hdev = f->hdev;
	int idx;

	if (!drm_dev_enter(&hdev->drm, &idx))
		return -ENODEV;
	mutex_lock(&hdev->reset.fi_lock);
	hpu_wreg(hdev, HPU_REG_FI_SELECT, f->kind);
	*val = hpu_rreg(hdev, f->reg);
	mutex_unlock(&hdev->reset.fi_lock);
	drm_dev_exit(idx);
	return 0;
}

static int hpu_inject_set(void *data, u64 val)
{
	struct hpu_inject_file *f = data;
	struct hpu_device *hdev = f->hdev;
	int idx;

	if (val > U32_MAX || f->reg == HPU_REG_FI_INJECTED)
		return -EINVAL;
	if (!drm_dev_enter(&hdev->drm, &idx))
		return -ENODEV;
	mutex_lock(&hdev->reset.fi_lock);
	hpu_wreg(hdev, HPU_REG_FI_SELECT, f->kind);
	hpu_wreg(hdev, f->reg, val);
	hpu_wreg(hdev, HPU_REG_FI_CTRL, HPU_FI_CTRL_ARM);
	mutex_unlock(&hdev->reset.fi_lock);
	drm_dev_exit(idx);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(hpu_inject_fops, hpu_inject_get, hpu_inject_set, "%llu\n");

static ssize_t hpu_inject_reset_write(struct file *file, const char __user *buf,
				      size_t count, loff_t *ppos)
{
	struct hpu_device *hdev = file->private_data;

	hpu_reset_device_schedule(hdev, DRM_HPU_RESET_CAUSE_REQUEST);
	flush_work(&hdev->reset.work);
	return count;
}

static const struct file_operations hpu_inject_reset_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = hpu_inject_reset_write,
	.llseek = noop_llseek,
};

/* Under the device's debugfs directory @dir. */
void hpu_inject_debugfs_init(struct hpu_device *hdev, struct dentry *dir)
{
	struct hpu_inject_file *files;
	struct dentry *fault, *kdir;
	unsigned int k, i, n = 0;

	debugfs_create_file("reset", 0200, dir, hdev, &hpu_inject_reset_fops);
	if (hdev->regs_minor < 7)
		return;
	files = drmm_kcalloc(&hdev->drm, HPU_FAULT_KINDS * ARRAY_SIZE(hpu_inject_settings),
			     sizeof(*files), GFP_KERNEL);
	if (!files)
		return;
	fault = debugfs_create_dir("fault", dir);
	for (k = HPU_FAULT_ENGINE_HANG; k < HPU_FAULT_KINDS; k++) {
		kdir = debugfs_create_dir(hpu_inject_kinds[k], fault);
		for (i = 0; i < ARRAY_SIZE(hpu_inject_settings); i++, n++) {
			u32 reg = hpu_inject_settings[i].reg;

			files[n] = (struct hpu_inject_file){ hdev, k, reg };
			debugfs_create_file_unsafe(hpu_inject_settings[i].name,
						   reg == HPU_REG_FI_INJECTED ? 0400 : 0600,
						   kdir, &files[n], &hpu_inject_fops);
		}
	}
}
