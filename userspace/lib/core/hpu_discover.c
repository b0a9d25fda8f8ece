/* SPDX-License-Identifier: MIT */
/*
 * Finding the hpu devices.  Candidate nodes come from libdrm (render nodes)
 * and from /dev/accel (accel nodes, which libdrm does not know); a candidate
 * is kept if hpu_node_open() recognises it as an hpu.
 */
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include <xf86drm.h>

#include "../core/core.h"

#define HPU_ACCEL_NODES "/dev/accel/accel*"

/* A node that cannot be checked is counted, not fatal: others may be fine. */
static int hpu_discover_node(struct hpu_discovery *found, const char *path)
{
	struct hpu_device_desc *descs;
	struct hpu_device dev = { 0 };
	int ret;

	ret = hpu_node_open(path, &dev);
	if (ret == -ENODEV)
		return 0;
	if (ret) {
		found->inaccessible++;
		return 0;
	}
	hpu_node_close(&dev);
	descs = realloc(found->descs, (found->count + 1) * sizeof(*descs));
	if (!descs)
		return hpu_error_set(ENOMEM, "out of memory");
	descs[found->count++] = dev.desc;
	found->descs = descs;
	return 0;
}

static int hpu_discover_render_nodes(struct hpu_discovery *found)
{
	drmDevicePtr *devices = NULL;
	int i, n, ret = 0;

	/* Flags 0: do not wake devices to read their PCI revision. */
	n = drmGetDevices2(0, NULL, 0);
	if (n > 0) {
		devices = calloc(n, sizeof(*devices));
		if (!devices)
			return hpu_error_set(ENOMEM, "out of memory");
		n = drmGetDevices2(0, devices, n);
	}
	if (n == -ENOENT) /* no /dev/dri */
		n = 0;
	if (n < 0)
		ret = hpu_error_set(-n, "drmGetDevices2: %s", strerror(-n));
	for (i = 0; i < n && !ret; i++) {
		if (devices[i]->bustype == DRM_BUS_PCI &&
		    devices[i]->available_nodes & (1 << DRM_NODE_RENDER))
			ret = hpu_discover_node(found, devices[i]->nodes[DRM_NODE_RENDER]);
	}
	if (n > 0)
		drmFreeDevices(devices, n);
	free(devices);
	return ret;
}

static int hpu_discover_accel_nodes(struct hpu_discovery *found)
{
	glob_t nodes;
	size_t i;
	int ret;

	/* Without GLOB_ERR the only failures are GLOB_NOMATCH (no accel node) and GLOB_NOSPACE. */
	ret = glob(HPU_ACCEL_NODES, 0, NULL, &nodes);
	if (ret == GLOB_NOSPACE)
		ret = hpu_error_set(ENOMEM, "out of memory");
	else
		ret = 0;
	for (i = 0; i < nodes.gl_pathc && !ret; i++)
		ret = hpu_discover_node(found, nodes.gl_pathv[i]);
	globfree(&nodes);
	return ret;
}

/* sysfs bus ids are lowercase hex, fixed width but for wide domains: length first. */
static int hpu_desc_cmp(const void *a, const void *b)
{
	const struct hpu_device_desc *x = a, *y = b;
	size_t x_len = strlen(x->pci_bus_id), y_len = strlen(y->pci_bus_id);

	if (x_len != y_len)
		return x_len < y_len ? -1 : 1;
	return strcmp(x->pci_bus_id, y->pci_bus_id);
}

int hpu_discover(struct hpu_discovery *found)
{
	int ret;

	*found = (struct hpu_discovery){ 0 };
	ret = hpu_discover_render_nodes(found);
	if (!ret)
		ret = hpu_discover_accel_nodes(found);
	if (ret) {
		hpu_discovery_free(found);
		return ret;
	}
	if (found->count > 1)
		qsort(found->descs, found->count, sizeof(*found->descs), hpu_desc_cmp);
	return 0;
}

void hpu_discovery_free(struct hpu_discovery *found)
{
	free(found->descs);
}

static int hpu_discover_list(struct hpu_device_desc *descs, unsigned int capacity,
			     unsigned int *count)
{
	struct hpu_discovery found;
	int ret;

	if (!count)
		return hpu_error_set(EINVAL, "count is NULL");
	if (!descs && capacity)
		return hpu_error_set(EINVAL, "descs is NULL but capacity is %u", capacity);
	ret = hpu_discover(&found);
	if (ret)
		return ret;
	if (found.count && capacity)
		memcpy(descs, found.descs,
		       (found.count < capacity ? found.count : capacity) * sizeof(*descs));
	*count = found.count;
	hpu_discovery_free(&found);
	return 0;
}

int hpu_device_count(unsigned int *count)
{
	return hpu_error_in(__func__, hpu_discover_list(NULL, 0, count));
}

int hpu_device_list(struct hpu_device_desc *descs, unsigned int capacity, unsigned int *count)
{
	return hpu_error_in(__func__, hpu_discover_list(descs, capacity, count));
}
