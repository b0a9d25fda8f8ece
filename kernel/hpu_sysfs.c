// SPDX-License-Identifier: GPL-2.0
/*
 * hpu sysfs: read-only device description on the PCI device, one value per
 * file; only status and the reset ladder's counts and last cause change.
 * The driver core adds these only after probe succeeded and removes
 * them before remove, so every reader sees a booted device.
 */
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/sysfs.h>

#include "hpu_device.h"
#include "hpu_fw_if.h"
#include "hpu_reset.h"
#include "hpu_sysfs.h"

static const struct drm_hpu_device_info *hpu_sysfs_info(struct device *dev)
{
	struct hpu_device *hdev = dev_get_drvdata(dev);

	return &hdev->info;
}

static ssize_t fw_version_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	u32 v = hpu_sysfs_info(dev)->fw_version;

	return sysfs_emit(buf, "%u.%u.%u\n", HPU_FW_VERSION_MAJOR(v),
			  HPU_FW_VERSION_MINOR(v), HPU_FW_VERSION_PATCH(v));
}
static DEVICE_ATTR_RO(fw_version);

static ssize_t fw_if_version_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	u32 v = hpu_sysfs_info(dev)->fw_if_version;

	return sysfs_emit(buf, "%u.%u\n", HPU_FW_IF_MAJOR(v), HPU_FW_IF_MINOR(v));
}
static DEVICE_ATTR_RO(fw_if_version);

/* An attribute printing one field of the cached device info. */
#define HPU_INFO_ATTR(name, fmt)						\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, fmt "\n", hpu_sysfs_info(dev)->name);	\
}									\
static DEVICE_ATTR_RO(name)

HPU_INFO_ATTR(hbm_size, "%llu");
HPU_INFO_ATTR(num_dma_engines, "%u");
HPU_INFO_ATTR(num_mme_engines, "%u");
HPU_INFO_ATTR(num_tpc_engines, "%u");
HPU_INFO_ATTR(hw_revision, "%u");
HPU_INFO_ATTR(capabilities, "0x%llx");

static ssize_t status_show(struct device *dev,
			   struct device_attribute *attr, char *buf)
{
	static const char * const names[] = {
		[DRM_HPU_STATUS_READY] = "ready",
		[DRM_HPU_STATUS_IN_RESET] = "in_reset",
		[DRM_HPU_STATUS_MALFUNCTION] = "malfunction",
	};
	u32 status = READ_ONCE(hpu_sysfs_info(dev)->status);

	if (status >= ARRAY_SIZE(names) || !names[status])
		return sysfs_emit(buf, "unknown\n");

	return sysfs_emit(buf, "%s\n", names[status]);
}
static DEVICE_ATTR_RO(status);

/* An attribute printing one of the reset ladder's counts (hpu_reset.c). */
#define HPU_RESET_ATTR(name)							\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	struct hpu_device *hdev = dev_get_drvdata(dev);			\
									\
	return sysfs_emit(buf, "%d\n", atomic_read(&hdev->reset.name));	\
}									\
static DEVICE_ATTR_RO(name)

HPU_RESET_ATTR(queue_resets);
HPU_RESET_ATTR(engine_resets);
HPU_RESET_ATTR(device_resets);

static ssize_t last_reset_cause_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	struct hpu_device *hdev = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%s\n", hpu_reset_cause_name(READ_ONCE(hdev->reset.last_cause)));
}
static DEVICE_ATTR_RO(last_reset_cause);

static struct attribute *hpu_sysfs_attrs[] = {
	&dev_attr_fw_version.attr,
	&dev_attr_fw_if_version.attr,
	&dev_attr_hbm_size.attr,
	&dev_attr_num_dma_engines.attr,
	&dev_attr_num_mme_engines.attr,
	&dev_attr_num_tpc_engines.attr,
	&dev_attr_hw_revision.attr,
	&dev_attr_capabilities.attr,
	&dev_attr_status.attr,
	&dev_attr_queue_resets.attr,
	&dev_attr_engine_resets.attr,
	&dev_attr_device_resets.attr,
	&dev_attr_last_reset_cause.attr,
	NULL
};

static const struct attribute_group hpu_sysfs_group = {
	.attrs = hpu_sysfs_attrs,
};

const struct attribute_group *hpu_sysfs_groups[] = {
	&hpu_sysfs_group,
	NULL
};
