// SPDX-License-Identifier: GPL-2.0
/*
 * hpu: driver for the hpu AI accelerator PCI device.
 *
 * Module entry points, the PCI driver and the DRM device: probe brings the
 * device up to running firmware and publishes it, remove takes it down.
 */
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/string_helpers.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_ioctl.h>

#include "hpu_compat.h"
#include "hpu_ctx.h"
#include "hpu_debugfs.h"
#include "hpu_device.h"
#include "hpu_eq.h"
#include "hpu_fw.h"
#include "hpu_fw_if.h"
#include "hpu_gem.h"
#include "hpu_info.h"
#include "hpu_ioctl.h"
#include "hpu_irq.h"
#include "hpu_job.h"
#include "hpu_limits.h"
#include "hpu_mmu.h"
#include "hpu_queue.h"
#include "hpu_regs.h"
#include "hpu_reset.h"
#include "hpu_sysfs.h"
#include "hpu_uq.h"
#include "hpu_vm.h"

/*
 * The register map minor the driver needs (1.6: preemption); it binds a device of that or
 * a later minor, whatever HPU_REGS_VERSION_MINOR the shared header has grown to, and uses
 * 1.7's engine and warm resets, heartbeat and fault injection only on a 1.7 device.
 */
#define HPU_DRV_REGS_MINOR 6

static unsigned int job_timeout_ms = 10000;
module_param(job_timeout_ms, uint, 0444);
MODULE_PARM_DESC(job_timeout_ms,
		 "Time a job may run before its queue is reset and it fails with -ETIMEDOUT, in ms");

static const struct drm_ioctl_desc hpu_ioctls[] = {
	DRM_IOCTL_DEF_DRV(HPU_INFO, hpu_ioctl_info, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_GEM_CREATE, hpu_ioctl_gem_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_VM_MAP, hpu_ioctl_vm_map, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_VM_UNMAP, hpu_ioctl_vm_unmap, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_SUBMIT, hpu_ioctl_submit, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_WAIT, hpu_ioctl_wait, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_UQUEUE_CREATE, hpu_ioctl_uqueue_create, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_UQUEUE_DESTROY, hpu_ioctl_uqueue_destroy, DRM_RENDER_ALLOW),
	DRM_IOCTL_DEF_DRV(HPU_UQUEUE_WAIT, hpu_ioctl_uqueue_wait, DRM_RENDER_ALLOW),
};

/*
 * mmap() serves only user queues' doorbell pages (hpu_uq.c): buffers are
 * HBM, which the CPU cannot reach, and have no mmap offset.  No DRM events
 * to poll or read.
 */
static const struct file_operations hpu_fops = {
	.owner = THIS_MODULE,
	.open = hpu_compat_open,
	.release = drm_release,
	.unlocked_ioctl = drm_ioctl,
	.compat_ioctl = drm_compat_ioctl,
	.llseek = noop_llseek,
	.mmap = drm_gem_mmap,
};

static const struct drm_driver hpu_drm_driver = {
	.driver_features = HPU_DRIVER_FEATURES | DRIVER_GEM | DRIVER_SYNCOBJ,
	.open = hpu_ctx_open,
	.postclose = hpu_ctx_postclose,
	.fops = &hpu_fops,
	.ioctls = hpu_ioctls,
	.num_ioctls = ARRAY_SIZE(hpu_ioctls),
	.name = DRM_HPU_DRIVER_NAME,
	.desc = "hpu AI accelerator",
	HPU_DRM_DRIVER_DATE
	.major = DRM_HPU_ABI_MAJOR,
	.minor = DRM_HPU_ABI_MINOR,
};

/* Map BAR0 and BAR4 and make sure an hpu answers behind them. */
static int hpu_map_regs(struct hpu_device *hdev)
{
	struct pci_dev *pdev = hdev->pdev;
	u32 id, version;
	int ret;

	if (pci_resource_len(pdev, HPU_BAR_MMU) < HPU_MMU_REGION_SIZE) {
		dev_err(&pdev->dev, "BAR%d is %llu bytes, expected %llu\n",
			HPU_BAR_MMU, (u64)pci_resource_len(pdev, HPU_BAR_MMU),
			HPU_MMU_REGION_SIZE);
		return -ENODEV;
	}
	ret = pcim_iomap_regions(pdev, BIT(HPU_BAR_REGS) | BIT(HPU_BAR_MMU),
				 DRM_HPU_DRIVER_NAME);
	if (ret)
		return dev_err_probe(&pdev->dev, ret, "cannot map registers\n");
	hdev->regs = pcim_iomap_table(pdev)[HPU_BAR_REGS];
	hdev->mmu_bar = pcim_iomap_table(pdev)[HPU_BAR_MMU];

	id = hpu_rreg(hdev, HPU_REG_ID);
	if (id != HPU_ID_VALUE) {
		dev_err(&pdev->dev, "unexpected ID register 0x%08x (expected 0x%08x)\n",
			id, HPU_ID_VALUE);
		return -ENODEV;
	}
	/* Every register the driver reads: an older map would answer them with device errors. */
	version = hpu_rreg(hdev, HPU_REG_REGS_VERSION);
	if (version >> 16 != HPU_REGS_VERSION_MAJOR || (version & 0xffff) < HPU_DRV_REGS_MINOR) {
		dev_err(&pdev->dev, "register map %u.%u; the driver needs %u.%u or a later %u.x\n",
			version >> 16, version & 0xffff, HPU_REGS_VERSION_MAJOR,
			HPU_DRV_REGS_MINOR, HPU_REGS_VERSION_MAJOR);
		return -ENODEV;
	}
	/* 1.7's resets and heartbeat only where the device has them (hpu_reset.c). */
	hdev->regs_minor = version & 0xffff;

	return 0;
}

static void hpu_log_ready(struct hpu_device *hdev)
{
	const struct drm_hpu_device_info *info = &hdev->info;
	char hbm[16];

	string_get_size(info->hbm_size, 1, STRING_UNITS_2, hbm, sizeof(hbm));
	dev_info(hpu_dev(hdev),
		 "firmware %u.%u.%u (interface %u.%u) ready: %s HBM, %u DMA, %u MME, %u TPC engines, node %s%d\n",
		 HPU_FW_VERSION_MAJOR(info->fw_version),
		 HPU_FW_VERSION_MINOR(info->fw_version),
		 HPU_FW_VERSION_PATCH(info->fw_version),
		 HPU_FW_IF_MAJOR(info->fw_if_version),
		 HPU_FW_IF_MINOR(info->fw_if_version),
		 hbm, info->num_dma_engines, info->num_mme_engines,
		 info->num_tpc_engines,
		 HPU_NODE_PREFIX, hpu_compat_minor(&hdev->drm)->index);
}

/* Stop the device: no job runs and the engine has let go of all memory. */
static void hpu_hw_stop(struct hpu_device *hdev)
{
	hpu_fw_reset(hdev);
	hpu_queues_quiesce(hdev);
}

/* Free what the stopped device reached by DMA.  Each part tolerates not having been set up. */
static void hpu_hw_free(struct hpu_device *hdev)
{
	hpu_eq_fini(hdev);
	hpu_queues_fini(hdev);
}

static int hpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct hpu_device *hdev;
	int ret;

	ret = pcim_enable_device(pdev);
	if (ret)
		return dev_err_probe(&pdev->dev, ret, "cannot enable device\n");

	/* Freed with the last reference to the DRM device, not at unbind. */
	hdev = devm_drm_dev_alloc(&pdev->dev, &hpu_drm_driver,
				  struct hpu_device, drm);
	if (IS_ERR(hdev))
		return PTR_ERR(hdev);
	hdev->pdev = pdev;
	hdev->job_timeout_ms = max(READ_ONCE(job_timeout_ms), 1u);
	spin_lock_init(&hdev->irq_mask_lock);
	init_completion(&hdev->boot_done);
	init_waitqueue_head(&hdev->jobs_unmapped);
	hpu_eq_early_init(hdev);
	pci_set_drvdata(pdev, hdev);
	ret = hpu_reset_init(hdev);
	if (ret)
		return ret;

	pci_set_master(pdev);
	/* A page-table entry holds 52 address bits. */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(52));
	if (ret)
		return dev_err_probe(&pdev->dev, ret, "no 52-bit DMA\n");
	/* The MMU maps a segment page by page, whatever its length; the default claims 64 KiB. */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);

	ret = hpu_map_regs(hdev);
	if (ret)
		return ret;

	/* Start from IDLE whatever a previous driver instance left running. */
	hpu_fw_reset(hdev);

	ret = hpu_irq_init(hdev);
	if (ret)
		return ret;

	ret = hpu_fw_boot(hdev, HPU_RESET_KEY);
	if (ret)
		goto err_irq_fini;

	hpu_info_init(hdev);

	/* Allocators that open files use: they live as long as the DRM device. */
	ret = hpu_usage_init(hdev);
	if (ret)
		goto err_hw_fini;
	ret = hpu_host_dma_init(hdev);
	if (ret)
		goto err_hw_fini;
	ret = hpu_mmu_init(hdev);
	if (ret)
		goto err_hw_fini;
	ret = hpu_hbm_init(hdev);
	if (ret)
		goto err_hw_fini;

	ret = hpu_queues_init(hdev);
	if (ret)
		goto err_hw_fini;
	ret = hpu_eq_init(hdev);
	if (ret)
		goto err_hw_fini;
	ret = hpu_uqs_init(hdev);
	if (ret)
		goto err_hw_fini;
	ret = hpu_ctx_kernel_init(hdev);
	if (ret)
		goto err_hw_fini;

	ret = drm_dev_register(&hdev->drm, 0);
	if (ret) {
		dev_err(&pdev->dev, "cannot register DRM device: %d\n", ret);
		goto err_kernel_ctx_fini;
	}

	hpu_debugfs_init(hdev);
	hpu_reset_start(hdev);
	hpu_log_ready(hdev);
	return 0;

err_kernel_ctx_fini:
	hpu_ctx_kernel_fini(hdev);
err_hw_fini:
	hpu_hw_stop(hdev);
	hpu_hw_free(hdev);
err_irq_fini:
	hpu_irq_fini(hdev);
	return ret;
}

/*
 * Open files keep the DRM device, and with it struct hpu_device, alive;
 * drm_dev_unplug() makes their ioctls fail with -ENODEV from now on and
 * waits for every drm_dev_enter() section (hardware access, pushes to a
 * ring, queue recovery), after which nothing touches the hardware any more.
 * The reset ladder's works stop, the device reset stops every queue; the
 * jobs in a ring or waiting for one then fail with -ENODEV, and remove waits
 * for their command buffers' DMA mappings to go (the scheduler's free works,
 * a tick later): the DMA API wants none left when the driver unbinds.
 * What open files use (allocators, the
 * scheduler's works, the driver's context) stays until the DRM device is
 * released.
 */
static void hpu_remove(struct pci_dev *pdev)
{
	struct hpu_device *hdev = pci_get_drvdata(pdev);

	hpu_debugfs_fini(hdev);
	drm_dev_unplug(&hdev->drm);
	hpu_reset_stop(hdev);
	hpu_hw_stop(hdev);
	hpu_uqs_halt(hdev);
	hpu_queues_halt(hdev);
	hpu_jobs_unmapped(hdev);
	hpu_host_dma_unplug(hdev);
	hpu_hw_free(hdev);
	hpu_irq_fini(hdev);
}

static const struct pci_device_id hpu_pci_ids[] = {
	{ PCI_DEVICE(HPU_PCI_VENDOR_ID, HPU_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, hpu_pci_ids);

static struct pci_driver hpu_pci_driver = {
	.name = DRM_HPU_DRIVER_NAME,
	.id_table = hpu_pci_ids,
	.probe = hpu_probe,
	.remove = hpu_remove,
	.dev_groups = hpu_sysfs_groups,
};

static int __init hpu_init(void)
{
	int ret;

	hpu_debugfs_register();

	ret = pci_register_driver(&hpu_pci_driver);
	if (ret)
		hpu_debugfs_unregister();

	return ret;
}
module_init(hpu_init);

static void __exit hpu_exit(void)
{
	pci_unregister_driver(&hpu_pci_driver);
	hpu_debugfs_unregister();
	/* The RCU callbacks that freed the last fences (hpu_job.c) have returned. */
	rcu_barrier();
}
module_exit(hpu_exit);

MODULE_DESCRIPTION("hpu AI accelerator driver");
MODULE_LICENSE("GPL");
MODULE_FIRMWARE(HPU_FW_DEFAULT_NAME);
