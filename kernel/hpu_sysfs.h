/* SPDX-License-Identifier: GPL-2.0 */
/* The device's sysfs attributes (hpu_sysfs.c). */
#ifndef HPU_SYSFS_H
#define HPU_SYSFS_H

#include <linux/sysfs.h>

/* Attributes of the PCI device, created by the driver core around probe. */
extern const struct attribute_group *hpu_sysfs_groups[];

#endif /* HPU_SYSFS_H */
