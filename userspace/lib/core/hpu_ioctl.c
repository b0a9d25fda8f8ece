/* SPDX-License-Identifier: MIT */
/*
 * The single place the library talks to the driver, so that every ioctl
 * gets the same EINTR handling, errno convention and failure message.
 */
#include <xf86drm.h>

#include "../core/core.h"

int hpu_ioctl_call(struct hpu_device *dev, unsigned long request, const char *request_name,
		   void *arg)
{
	/* Counted for hpu_device_stats: tests check which calls cost a system call. */
	atomic_fetch_add_explicit(&dev->ioctls, 1, memory_order_relaxed);
	/* drmIoctl() restarts on EINTR and EAGAIN. */
	if (drmIoctl(dev->fd, request, arg) == 0)
		return 0;
	return hpu_error_errno("%s on %s", request_name, dev->desc.path);
}
