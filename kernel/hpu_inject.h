/* SPDX-License-Identifier: GPL-2.0 */
/* Device fault injection and the device reset by hand, in debugfs (hpu_inject.c). */
#ifndef HPU_INJECT_H
#define HPU_INJECT_H

struct dentry;
struct hpu_device;

void hpu_inject_debugfs_init(struct hpu_device *hdev, struct dentry *dir);

#endif /* HPU_INJECT_H */
