// SPDX-License-Identifier: GPL-2.0
/*
 * hpu debugfs: /sys/kernel/debug/hpu/<pci address>/regs dumps the registers
 * that describe the device's state; "usage" the driver's allocators, what
 * open files hold, and job counters.
 *
 * debugfs failures are deliberately ignored: it is a debugging aid, and its
 * functions accept the error pointers of failed calls.
 */
#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/pci.h>
#include <linux/seq_file.h>

#include "hpu_debugfs.h"
#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_gem.h"
#include "hpu_inject.h"
#include "hpu_limits.h"
#include "hpu_mmu.h"
#include "hpu_regs.h"

#define HPU_DEBUGFS_REG(reg) { .name = #reg, .offset = HPU_REG_##reg }
#define HPU_DEBUGFS_QREG(q, reg) { .name = "Q" #q "_" #reg, .offset = HPU_REG_Q(q, HPU_Q_##reg) }
#define HPU_DEBUGFS_QUEUE(q) \
	HPU_DEBUGFS_QREG(q, RING_SIZE), HPU_DEBUGFS_QREG(q, PI), \
	HPU_DEBUGFS_QREG(q, CI), HPU_DEBUGFS_QREG(q, STATUS)

/* Readable registers only: reading RESET, BOOT_CTRL or Q_CTRL is a guest error. */
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
	HPU_DEBUGFS_REG(EQ_RING_SIZE),
	HPU_DEBUGFS_REG(EQ_PI),
	HPU_DEBUGFS_REG(EQ_CI),
	HPU_DEBUGFS_REG(EQ_STATUS),
	HPU_DEBUGFS_QUEUE(0),
	HPU_DEBUGFS_QUEUE(1),
	HPU_DEBUGFS_QUEUE(2),
	HPU_DEBUGFS_QUEUE(3),
};

/* Device-wide use of the driver's allocators. */
static int hpu_debugfs_usage_show(struct seq_file *m, void *unused)
{
	struct hpu_device *hdev = m->private;
	u64 hbm_used, hbm_scrubbing, hbm_bad;

	hpu_hbm_usage(hdev, &hbm_used, &hbm_scrubbing, &hbm_bad);
	seq_printf(m, "contexts %d\n", atomic_read(&hdev->stats.contexts));
	/* Freed HBM counts in hbm_used until it is zeroed (hpu_gem.c). */
	seq_printf(m, "hbm_used %llu\n", hbm_used);
	seq_printf(m, "hbm_scrubbing %llu\n", hbm_scrubbing);
	seq_printf(m, "hbm_bad %llu\n", hbm_bad);
	seq_printf(m, "mmu_tables %u\n", hpu_mmu_tables_used(hdev));
	/* What files hold (hpu_limits.c): all zero once they are closed. */
	seq_printf(m, "users %lu\n", hpu_usage_users(hdev));
	seq_printf(m, "file_hbm %lld\n", atomic64_read(&hdev->usage.hbm));
	seq_printf(m, "file_tables %lld\n", atomic64_read(&hdev->usage.tables));
	seq_printf(m, "host_pinned %lld\n", atomic64_read(&hdev->usage.host_pinned));
	seq_printf(m, "jobs_submitted %lld\n", atomic64_read(&hdev->stats.jobs_submitted));
	seq_printf(m, "jobs_completed %lld\n", atomic64_read(&hdev->stats.jobs_completed));
	seq_printf(m, "jobs_failed %lld\n", atomic64_read(&hdev->stats.jobs_failed));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hpu_debugfs_usage);

/* Parent of the per-device directories. */
static struct dentry *hpu_debugfs_root;

void hpu_debugfs_register(void)
{
	hpu_debugfs_root = debugfs_create_dir(DRM_HPU_DRIVER_NAME, NULL);
	hpu_fault_debugfs_init(hpu_debugfs_root);
}

void hpu_debugfs_unregister(void)
{
	debugfs_remove_recursive(hpu_debugfs_root);
}

void hpu_debugfs_init(struct hpu_device *hdev)
{
	BUILD_BUG_ON(HPU_NUM_QUEUES != 4);

	hdev->regset.regs = hpu_debugfs_regs;
	hdev->regset.nregs = ARRAY_SIZE(hpu_debugfs_regs);
	hdev->regset.base = hdev->regs;

	hdev->debugfs = debugfs_create_dir(pci_name(hdev->pdev),
					   hpu_debugfs_root);
	debugfs_create_regset32("regs", 0400, hdev->debugfs, &hdev->regset);
	debugfs_create_file("usage", 0400, hdev->debugfs, hdev,
			    &hpu_debugfs_usage_fops);
	hpu_inject_debugfs_init(hdev, hdev->debugfs);
}

/* Waits for readers of "regs" to finish, so the registers may go after it. */
void hpu_debugfs_fini(struct hpu_device *hdev)
{
	debugfs_remove_recursive(hdev->debugfs);
}
