/* SPDX-License-Identifier: GPL-2.0 */
/* Firmware boot and reset (hpu_fw.c). */
#ifndef HPU_FW_H
#define HPU_FW_H

#include <linux/types.h>

struct hpu_device;

int hpu_fw_boot(struct hpu_device *hdev, u32 reset_key);
void hpu_fw_reset(struct hpu_device *hdev);

#endif /* HPU_FW_H */
