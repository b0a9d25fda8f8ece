/* SPDX-License-Identifier: MIT */
/* Device handles: opening, closing and querying a device. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_accel.h>

#include "hpu_internal.h"

/* The public values are the ABI's, so they pass through unconverted. */
_Static_assert((int)HPU_DEVICE_STATUS_READY == (int)DRM_HPU_STATUS_READY &&
		       (int)HPU_DEVICE_STATUS_IN_RESET == (int)DRM_HPU_STATUS_IN_RESET &&
		       (int)HPU_DEVICE_STATUS_MALFUNCTION == (int)DRM_HPU_STATUS_MALFUNCTION,
	       "device status values differ from the ABI's");
_Static_assert(HPU_CAP_FP32 == DRM_HPU_CAP_FP32 && HPU_CAP_BF16 == DRM_HPU_CAP_BF16 &&
		       HPU_CAP_FP16 == DRM_HPU_CAP_FP16 && HPU_CAP_FP8 == DRM_HPU_CAP_FP8,
	       "capability bits differ from the ABI's");
/* Until a field is added, the current size is the first version's. */
_Static_assert(sizeof(struct hpu_device_info) == HPU_DEVICE_INFO_SIZE_V1,
	       "struct hpu_device_info changed size");

static int hpu_device_create(const char *path, struct hpu_device **devp)
{
	struct hpu_device *dev;
	int ret;

	dev = malloc(sizeof(*dev));
	if (!dev)
		return hpu_error_set(ENOMEM, "out of memory");
	ret = hpu_node_open(path, dev);
	if (ret) {
		free(dev);
		return ret;
	}
	*devp = dev;
	return 0;
}

static int hpu_device_open_index(unsigned int index, struct hpu_device **devp)
{
	struct hpu_discovery found;
	int ret;

	ret = hpu_discover(&found);
	if (ret)
		return ret;
	if (index < found.count)
		ret = hpu_device_create(found.descs[index].path, devp);
	else if (found.inaccessible)
		ret = hpu_error_set(ENODEV, "no hpu device %u (%u found, %u device nodes not accessible)",
				    index, found.count, found.inaccessible);
	else
		ret = hpu_error_set(ENODEV, "no hpu device %u (%u found)", index, found.count);
	hpu_discovery_free(&found);
	return ret;
}

int hpu_device_open(unsigned int index, struct hpu_device **devp)
{
	if (!devp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "devp is NULL"));
	*devp = NULL;
	return hpu_error_in(__func__, hpu_device_open_index(index, devp));
}

int hpu_device_open_path(const char *path, struct hpu_device **devp)
{
	int ret;

	if (!devp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "devp is NULL"));
	*devp = NULL;
	if (!path)
		ret = hpu_error_set(EINVAL, "path is NULL");
	else
		ret = hpu_device_create(path, devp);
	return hpu_error_in(__func__, ret);
}

void hpu_device_close(struct hpu_device *dev)
{
	if (!dev)
		return;
	hpu_node_close(dev);
	free(dev);
}

static struct hpu_version hpu_version_of_fw(uint32_t v)
{
	/* major << 16 | minor << 8 | patch */
	return (struct hpu_version){ .major = v >> 16, .minor = (v >> 8) & 0xff, .patch = v & 0xff };
}

static struct hpu_version hpu_version_of_interface(uint32_t v)
{
	/* major << 16 | minor */
	return (struct hpu_version){ .major = v >> 16, .minor = v & 0xffff };
}

static int hpu_device_query(struct hpu_device *dev, struct hpu_device_info *out)
{
	struct drm_hpu_device_info raw = { 0 };
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&raw,
		.data_size = sizeof(raw),
		.query = DRM_HPU_INFO_DEVICE,
	};
	int ret;

	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_INFO, &args);
	if (ret)
		return ret;
	/* An older driver writes less; the fields it does not know stay 0. */
	if (args.data_size < DRM_HPU_DEVICE_INFO_SIZE_V1)
		return hpu_error_set(EPROTO, "%s: driver returned %u bytes of device info, expected %u",
				     dev->desc.path, args.data_size, DRM_HPU_DEVICE_INFO_SIZE_V1);
	*out = (struct hpu_device_info){
		.size = sizeof(*out),
		.status = raw.status,
		.capabilities = raw.capabilities,
		.hbm_size = raw.hbm_size,
		.pci_revision = raw.pci_revision,
		.hw_revision = raw.hw_revision,
		.num_dma_engines = raw.num_dma_engines,
		.num_mme_engines = raw.num_mme_engines,
		.num_tpc_engines = raw.num_tpc_engines,
		.pci_vendor_id = raw.pci_vendor_id,
		.pci_device_id = raw.pci_device_id,
		.pci_subsystem_vendor_id = raw.pci_subsystem_vendor_id,
		.pci_subsystem_id = raw.pci_subsystem_id,
		.abi_version = hpu_version_of_interface(raw.abi_version),
		.fw_version = hpu_version_of_fw(raw.fw_version),
		.fw_if_version = hpu_version_of_interface(raw.fw_if_version),
	};
	memcpy(out->pci_bus_id, dev->desc.pci_bus_id, sizeof(out->pci_bus_id));
	memcpy(out->path, dev->desc.path, sizeof(out->path));
	return 0;
}

int hpu_device_get_info(struct hpu_device *dev, struct hpu_device_info *info)
{
	struct hpu_device_info known;
	uint32_t size;
	int ret;

	if (!dev || !info)
		ret = hpu_error_set(EINVAL, "%s is NULL", dev ? "info" : "dev");
	else if (info->size < HPU_DEVICE_INFO_SIZE_V1)
		ret = hpu_error_set(EINVAL, "info->size is %u, at least %u expected", info->size,
				    HPU_DEVICE_INFO_SIZE_V1);
	else
		ret = hpu_device_query(dev, &known);
	if (ret)
		return hpu_error_in(__func__, ret);
	/* A caller built with a newer header passes more: zero what we do not know. */
	size = info->size < sizeof(known) ? info->size : sizeof(known);
	memset((char *)info + size, 0, info->size - size);
	known.size = size;
	memcpy(info, &known, size);
	return 0;
}
