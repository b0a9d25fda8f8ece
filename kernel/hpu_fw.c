// SPDX-License-Identifier: GPL-2.0
/*
 * hpu firmware boot: load the image, hand it to the device, wait for the
 * verdict.  The device validates the content; the driver only checks that
 * the size can be transferred.
 *
 * Probe's first trip to the device: the image (hpu/hpu-fw.bin, loaded with
 * request_firmware_direct()) goes into a coherent DMA buffer whose bus
 * address and size are written to the boot mailbox, then BOOT_CTRL START.
 * The device fetches the image itself, checks it, and answers on MSI-X
 * vector 0 (BOOT_DONE) with READY and its capabilities (HBM size, engine
 * counts, data types, firmware version) or FAILED and a reason in
 * BOOT_ERROR.  After READY the capabilities are read once (hpu_info.c), and
 * INFO and sysfs serve that copy.
 *
 * Every failure logs exactly one "boot failed: ..." line (tests match them).
 * A device reset (hpu_reset.c) boots the firmware again the same way, after
 * a warm reset, and a failed boot then leaves the device warm-reset: HBM
 * keeps its contents for the next try.
 */
#include <linux/completion.h>
#include <linux/dma-mapping.h>
#include <linux/firmware.h>
#include <linux/jiffies.h>
#include <linux/moduleparam.h>
#include <linux/string.h>

#include "hpu_device.h"
#include "hpu_fw.h"
#include "hpu_fw_if.h"
#include "hpu_irq.h"
#include "hpu_regs.h"

static char *fw_name = HPU_FW_DEFAULT_NAME;
module_param(fw_name, charp, 0444);
MODULE_PARM_DESC(fw_name, "Firmware image in the firmware search path");

static unsigned int boot_timeout_ms = 2000;
module_param(boot_timeout_ms, uint, 0644);
MODULE_PARM_DESC(boot_timeout_ms, "Time the device has to boot the firmware, in ms");

/* Return the device to IDLE: stops running firmware, cancels a boot in flight. */
void hpu_fw_reset(struct hpu_device *hdev)
{
	hpu_wreg(hdev, HPU_REG_RESET, HPU_RESET_KEY);
	/* Flush the posted write: callers free the image right after. */
	hpu_rreg(hdev, HPU_REG_BOOT_STATUS);
}

/*
 * Start the boot of the image at @dma and wait for the device's verdict; on
 * failure, reset the device with @reset_key.
 */
static int hpu_fw_handshake(struct hpu_device *hdev, const char *name,
			    dma_addr_t dma, u32 size, unsigned int timeout_ms, u32 reset_key)
{
	struct device *dev = hpu_dev(hdev);
	unsigned long left;
	char reason[32];
	u32 status;
	int ret;

	hpu_wreg(hdev, HPU_REG_BOOT_ADDR_LO, lower_32_bits(dma));
	hpu_wreg(hdev, HPU_REG_BOOT_ADDR_HI, upper_32_bits(dma));
	hpu_wreg(hdev, HPU_REG_BOOT_SIZE, size);

	reinit_completion(&hdev->boot_done);
	hpu_irq_enable(hdev, HPU_IRQ_BOOT_DONE);
	hpu_wreg(hdev, HPU_REG_BOOT_CTRL, HPU_BOOT_CTRL_START);
	left = wait_for_completion_timeout(&hdev->boot_done,
					   msecs_to_jiffies(timeout_ms));
	hpu_irq_disable(hdev, HPU_IRQ_BOOT_DONE);

	if (!left) {
		dev_err(dev, "boot failed: firmware %s did not boot within %u ms\n",
			name, timeout_ms);
		ret = -ETIMEDOUT;
		goto err_reset_device;
	}

	status = hpu_rreg(hdev, HPU_REG_BOOT_STATUS);
	if (status == HPU_FW_BOOT_READY)
		return 0;

	if (status == HPU_FW_BOOT_FAILED) {
		u32 code = hpu_rreg(hdev, HPU_REG_BOOT_ERROR);
		const char *why = hpu_fw_boot_error_name(code);

		if (!why) {
			snprintf(reason, sizeof(reason), "unknown error %u", code);
			why = reason;
		}
		dev_err(dev, "boot failed: firmware %s rejected by device: %s\n",
			name, why);
	} else {
		dev_err(dev, "boot failed: firmware %s left device in boot status %u\n",
			name, status);
	}
	ret = -EIO;

err_reset_device:
	/* Leave the device idle and healthy for the next probe or try. */
	hpu_wreg(hdev, HPU_REG_RESET, reset_key);
	hpu_rreg(hdev, HPU_REG_BOOT_STATUS);
	return ret;
}

/*
 * Boot the fw_name firmware, giving the device boot_timeout_ms to start it.
 * On failure the device is reset with @reset_key (HPU_RESET_KEY, or
 * HPU_RESET_KEY_WARM in a device reset) and the reason logged.
 */
int hpu_fw_boot(struct hpu_device *hdev, u32 reset_key)
{
	unsigned int timeout_ms = READ_ONCE(boot_timeout_ms);
	struct device *dev = hpu_dev(hdev);
	const char *name = fw_name;
	const struct firmware *fw;
	dma_addr_t dma;
	void *image;
	int ret;

	/* Direct: no usermode helper fallback and no second warning from the core. */
	ret = request_firmware_direct(&fw, name, dev);
	if (ret) {
		dev_err(dev, "boot failed: firmware %s not found (error %d)\n",
			name, ret);
		return ret;
	}

	if (fw->size < HPU_FW_HEADER_SIZE || fw->size > HPU_FW_MAX_IMAGE_SIZE) {
		dev_err(dev, "boot failed: firmware %s has invalid size %zu\n",
			name, fw->size);
		ret = -EINVAL;
		goto out_release_firmware;
	}

	/* The device fetches the image into its boot SRAM during the boot. */
	image = dma_alloc_coherent(dev, fw->size, &dma, GFP_KERNEL);
	if (!image) {
		ret = -ENOMEM;
		goto out_release_firmware;
	}
	memcpy(image, fw->data, fw->size);

	ret = hpu_fw_handshake(hdev, name, dma, fw->size, timeout_ms, reset_key);

	/* Safe: the boot either finished or was cancelled by a reset. */
	dma_free_coherent(dev, fw->size, image, dma);
out_release_firmware:
	release_firmware(fw);
	return ret;
}
