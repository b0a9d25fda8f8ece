/* SPDX-License-Identifier: GPL-2.0 */
/* The device description INFO and sysfs serve, gathered after boot (hpu_info.c). */
#ifndef HPU_INFO_H
#define HPU_INFO_H

struct hpu_device;

void hpu_info_init(struct hpu_device *hdev);

#endif /* HPU_INFO_H */
