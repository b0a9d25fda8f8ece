/* SPDX-License-Identifier: MIT */
/*
 * libhpu internals, shared by the library's files only.  Nothing here is
 * exported: the library builds with -fvisibility=hidden and only HPU_API
 * declarations of <hpu/hpu.h> are visible.
 */
#ifndef HPU_INTERNAL_H
#define HPU_INTERNAL_H

#include <hpu/hpu.h>

/* An open device: the node's file descriptor and where the device is. */
struct hpu_device {
	int fd;
	struct hpu_device_desc desc;
};

/* hpu_error.c: the thread-local message behind hpu_last_error(). */

/* Records a message and returns -err, so failures read `return hpu_error_set(...)`. */
int hpu_error_set(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same for a failed system call: appends ": <strerror(errno)>" and returns -errno. */
int hpu_error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Public entry points end with `return hpu_error_in(__func__, ret);`: on
 * failure it prefixes the message with the entry point's name, so messages
 * name the call the user made rather than the internal helper that failed.
 */
int hpu_error_in(const char *func, int ret);

/* hpu_ioctl.c: every ioctl of the library goes through hpu_ioctl(). */

int hpu_ioctl_call(struct hpu_device *dev, unsigned long request, const char *request_name,
		   void *arg);

/* Names the request in failure messages, e.g. "DRM_IOCTL_HPU_INFO on /dev/accel/accel0: ...". */
#define hpu_ioctl(dev, request, arg) hpu_ioctl_call(dev, request, #request, arg)

/* hpu_node.c: opening a device node and telling whether it is an hpu. */

/* Opens path into dev (fd and desc).  -ENODEV if it is not an hpu node. */
int hpu_node_open(const char *path, struct hpu_device *dev);
void hpu_node_close(struct hpu_device *dev);

/* hpu_discover.c: finding the hpu devices of the system. */

struct hpu_discovery {
	struct hpu_device_desc *descs; /* in PCI bus id order */
	unsigned int count;
	unsigned int inaccessible; /* candidate nodes that could not be checked */
};

int hpu_discover(struct hpu_discovery *found);
void hpu_discovery_free(struct hpu_discovery *found);

#endif /* HPU_INTERNAL_H */
