/* SPDX-License-Identifier: MIT */
/*
 * Opening one device node and identifying it.  The same code serves render
 * nodes (kernels before 6.2) and accel nodes: both answer DRM_IOCTL_VERSION
 * and both sit under their PCI device in sysfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <drm/hpu_accel.h>

#include "../core/core.h"

/*
 * DRM_IOCTL_VERSION directly rather than drmGetVersion(), so that this ioctl
 * too goes through hpu_ioctl() and no allocation is needed.
 */
static int hpu_node_check_driver(struct hpu_device *dev)
{
	char name[32];
	struct drm_version version = {
		.name = name,
		.name_len = sizeof(name) - 1,
	};
	int ret;

	ret = hpu_ioctl(dev, DRM_IOCTL_VERSION, &version);
	if (ret == -ENOTTY || ret == -EINVAL)
		return hpu_error_set(ENODEV, "%s is not a DRM device node", dev->desc.path);
	if (ret)
		return ret;
	/* The kernel copies at most name_len bytes, unterminated, but reports the full length. */
	name[version.name_len < sizeof(name) - 1 ? version.name_len : sizeof(name) - 1] = '\0';
	if (strcmp(name, DRM_HPU_DRIVER_NAME))
		return hpu_error_set(ENODEV, "%s is not an hpu device (driver %s)",
				     dev->desc.path, name);
	return 0;
}

/* The node's sysfs "device" link points at its PCI device, named by bus id. */
static int hpu_node_read_bus_id(struct hpu_device *dev)
{
	char link[64], target[256];
	unsigned int domain, bus, slot, func;
	const char *bus_id;
	struct stat st;
	ssize_t len;

	if (fstat(dev->fd, &st))
		return hpu_error_errno("fstat %s", dev->desc.path);
	snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/device", major(st.st_rdev),
		 minor(st.st_rdev));
	len = readlink(link, target, sizeof(target) - 1);
	if (len < 0)
		return hpu_error_errno("%s: cannot read %s", dev->desc.path, link);
	target[len] = '\0';
	bus_id = strrchr(target, '/');
	bus_id = bus_id ? bus_id + 1 : target;
	if (sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &slot, &func) != 4 ||
	    strlen(bus_id) >= sizeof(dev->desc.pci_bus_id))
		return hpu_error_set(ENODEV, "%s is not a PCI device (%s)", dev->desc.path,
				     bus_id);
	strcpy(dev->desc.pci_bus_id, bus_id);
	return 0;
}

int hpu_node_open(const char *path, struct hpu_device *dev)
{
	int ret;

	if (strlen(path) >= sizeof(dev->desc.path))
		return hpu_error_set(ENAMETOOLONG, "path longer than %zu bytes: %s",
				     sizeof(dev->desc.path) - 1, path);
	strcpy(dev->desc.path, path);
	dev->fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0)
		return hpu_error_errno("cannot open %s", path);
	ret = hpu_node_check_driver(dev);
	if (!ret)
		ret = hpu_node_read_bus_id(dev);
	if (ret)
		hpu_node_close(dev);
	return ret;
}

void hpu_node_close(struct hpu_device *dev)
{
	close(dev->fd);
	dev->fd = -1;
}
