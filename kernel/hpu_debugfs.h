/* SPDX-License-Identifier: GPL-2.0 */
/* The debugfs files of hpu_debugfs.c: the module's root, a device's folder. */
#ifndef HPU_DEBUGFS_H
#define HPU_DEBUGFS_H

struct hpu_device;

void hpu_debugfs_register(void);
void hpu_debugfs_unregister(void);
void hpu_debugfs_init(struct hpu_device *hdev);
void hpu_debugfs_fini(struct hpu_device *hdev);

#endif /* HPU_DEBUGFS_H */
