// SPDX-License-Identifier: GPL-2.0
/*
 * hpu device description: gathered once after the firmware booted and
 * served unchanged by DRM_IOCTL_HPU_INFO and sysfs.
 */
#include <linux/kernel.h>
#include <linux/pci.h>

#include "hpu_device.h"
#include "hpu_info.h"
#include "hpu_regs.h"

/* Register bits are the device's; the ioctl reports the ABI's. */
static const struct {
	u32 hw;
	u64 uapi;
} hpu_info_caps[] = {
	{ HPU_REG_CAPS_FP32, DRM_HPU_CAP_FP32 },
	{ HPU_REG_CAPS_BF16, DRM_HPU_CAP_BF16 },
	{ HPU_REG_CAPS_FP16, DRM_HPU_CAP_FP16 },
	{ HPU_REG_CAPS_FP8, DRM_HPU_CAP_FP8 },
};

static u64 hpu_info_translate_caps(u32 hw_caps)
{
	u64 caps = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(hpu_info_caps); i++)
		if (hw_caps & hpu_info_caps[i].hw)
			caps |= hpu_info_caps[i].uapi;

	return caps;
}

/* Capability registers are valid only while the firmware is READY. */
void hpu_info_init(struct hpu_device *hdev)
{
	struct drm_hpu_device_info *info = &hdev->info;
	struct pci_dev *pdev = hdev->pdev;

	info->abi_version = DRM_HPU_ABI_VERSION;
	info->status = DRM_HPU_STATUS_READY;
	info->capabilities = hpu_info_translate_caps(hpu_rreg(hdev, HPU_REG_CAPS));
	info->pci_vendor_id = pdev->vendor;
	info->pci_device_id = pdev->device;
	info->pci_subsystem_vendor_id = pdev->subsystem_vendor;
	info->pci_subsystem_id = pdev->subsystem_device;
	info->pci_revision = pdev->revision;
	info->hw_revision = hpu_rreg(hdev, HPU_REG_HW_REV);
	info->fw_version = hpu_rreg(hdev, HPU_REG_FW_VERSION);
	info->fw_if_version = hpu_rreg(hdev, HPU_REG_FW_IF_VERSION);
	info->hbm_size = (u64)hpu_rreg(hdev, HPU_REG_HBM_SIZE_HI) << 32 |
			 hpu_rreg(hdev, HPU_REG_HBM_SIZE_LO);
	info->num_dma_engines = hpu_rreg(hdev, HPU_REG_NUM_DMA);
	info->num_mme_engines = hpu_rreg(hdev, HPU_REG_NUM_MME);
	info->num_tpc_engines = hpu_rreg(hdev, HPU_REG_NUM_TPC);
	info->pad = 0;
	info->num_queues = HPU_NUM_QUEUES;
	/* ASID 0 is the driver's own. */
	info->max_contexts = HPU_MMU_NUM_ASIDS - 1;
}
