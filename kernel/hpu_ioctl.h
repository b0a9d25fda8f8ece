/* SPDX-License-Identifier: GPL-2.0 */
/* The INFO ioctl (hpu_ioctl.c); the other ioctls are declared with what they manage. */
#ifndef HPU_IOCTL_H
#define HPU_IOCTL_H

struct drm_device;
struct drm_file;

int hpu_ioctl_info(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* HPU_IOCTL_H */
