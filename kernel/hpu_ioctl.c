// SPDX-License-Identifier: GPL-2.0
/*
 * hpu ioctls.  The rules they follow are set out in uapi/drm/hpu_accel.h.
 */
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/uaccess.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "hpu_device.h"
#include "hpu_ioctl.h"

int hpu_ioctl_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct drm_hpu_info *args = data;
	u32 size;
	int ret = 0;
	int idx;

	/* The ABI is frozen: a size change here breaks every runtime. */
	BUILD_BUG_ON(sizeof(struct drm_hpu_info) != 24);
	BUILD_BUG_ON(sizeof(struct drm_hpu_device_info) != 72);
	BUILD_BUG_ON(sizeof(struct drm_hpu_device_info) < DRM_HPU_DEVICE_INFO_SIZE_V1);

	if (args->flags & ~DRM_HPU_INFO_FLAGS_ALL || args->pad)
		return -EINVAL;
	if (args->query != DRM_HPU_INFO_DEVICE)
		return -EINVAL;
	if (args->data_size < DRM_HPU_DEVICE_INFO_SIZE_V1)
		return -EINVAL;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	/* Older callers know a prefix of the struct; newer ones get ours. */
	size = min_t(u32, args->data_size, sizeof(hdev->info));
	if (copy_to_user(u64_to_user_ptr(args->data_ptr), &hdev->info, size))
		ret = -EFAULT;
	else
		args->data_size = size;

	drm_dev_exit(idx);
	return ret;
}
