// SPDX-License-Identifier: GPL-2.0
/*
 * hpu debugfs: /sys/kernel/debug/hpu/<pci address>/regs dumps the registers
 * that describe the device's state.
 *
 * debugfs failures are deliberately ignored: it is a debugging aid, and its
 * functions accept the error pointers of failed calls.
 */
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/pci.h>

#include "hpu_debugfs.h"
#include "hpu_device.h"
#include "hpu_regs.h"

#define HPU_DEBUGFS_REG(reg) { .name = #reg, .offset = HPU_REG_##reg }

/* Readable registers only: reading RESET or BOOT_CTRL is a guest error. */
static const struct debugfs_reg32 hpu_debugfs_regs[] = {
	HPU_DEBUGFS_REG(ID),
	HPU_DEBUGFS_REG(REGS_VERSION),
	HPU_DEBUGFS_REG(HW_REV),
	HPU_DEBUGFS_REG(ERR_CODE),
	HPU_DEBUGFS_REG(BOOT_ADDR_LO),
	HPU_DEBUGFS_REG(BOOT_ADDR_HI),
	HPU_DEBUGFS_REG(BOOT_SIZE),
	HPU_DEBUGFS_REG(BOOT_STATUS),
	HPU_DEBUGFS_REG(BOOT_ERROR),
	HPU_DEBUGFS_REG(FW_VERSION),
	HPU_DEBUGFS_REG(FW_IF_VERSION),
	HPU_DEBUGFS_REG(HBM_SIZE_LO),
	HPU_DEBUGFS_REG(HBM_SIZE_HI),
	HPU_DEBUGFS_REG(NUM_DMA),
	HPU_DEBUGFS_REG(NUM_MME),
	HPU_DEBUGFS_REG(NUM_TPC),
	HPU_DEBUGFS_REG(CAPS),
	HPU_DEBUGFS_REG(IRQ_CAUSE),
	HPU_DEBUGFS_REG(IRQ_MASK),
};

/* Parent of the per-device directories. */
static struct dentry *hpu_debugfs_root;

void hpu_debugfs_register(void)
{
	hpu_debugfs_root = debugfs_create_dir(DRM_HPU_DRIVER_NAME, NULL);
}

void hpu_debugfs_unregister(void)
{
	debugfs_remove_recursive(hpu_debugfs_root);
}

void hpu_debugfs_init(struct hpu_device *hdev)
{
	hdev->regset.regs = hpu_debugfs_regs;
	hdev->regset.nregs = ARRAY_SIZE(hpu_debugfs_regs);
	hdev->regset.base = hdev->regs;

	hdev->debugfs = debugfs_create_dir(pci_name(hdev->pdev),
					   hpu_debugfs_root);
	debugfs_create_regset32("regs", 0400, hdev->debugfs, &hdev->regset);
}

/* Waits for readers of "regs" to finish, so the registers may go after it. */
void hpu_debugfs_fini(struct hpu_device *hdev)
{
	debugfs_remove_recursive(hdev->debugfs);
}
