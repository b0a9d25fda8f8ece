/* SPDX-License-Identifier: MIT */
/*
 * Device handles: querying a device (opened and closed, and described with
 * the submission layer's part, in top/hpu_device_open.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_accel.h>

#include "../core/core.h"

/* The public values are the ABI's, so they pass through unconverted. */
_Static_assert((int)HPU_DEVICE_STATUS_READY == (int)DRM_HPU_STATUS_READY &&
		       (int)HPU_DEVICE_STATUS_IN_RESET == (int)DRM_HPU_STATUS_IN_RESET &&
		       (int)HPU_DEVICE_STATUS_MALFUNCTION == (int)DRM_HPU_STATUS_MALFUNCTION,
	       "device status values differ from the ABI's");
_Static_assert(HPU_CAP_FP32 == DRM_HPU_CAP_FP32 && HPU_CAP_BF16 == DRM_HPU_CAP_BF16 &&
		       HPU_CAP_FP16 == DRM_HPU_CAP_FP16 && HPU_CAP_FP8 == DRM_HPU_CAP_FP8,
	       "capability bits differ from the ABI's");
/* Fields are only appended: 0.2's start where 0.1's struct ended. */
_Static_assert(offsetof(struct hpu_device_info, num_queues) == HPU_DEVICE_INFO_SIZE_V1,
	       "struct hpu_device_info changed before its 0.1 end");
_Static_assert(offsetof(struct hpu_device_stats, ctx_id) == HPU_DEVICE_STATS_SIZE_V1,
	       "struct hpu_device_stats changed before its 0.2 end");
_Static_assert(sizeof(struct hpu_mem_stats) == HPU_MEM_STATS_SIZE_V1,
	       "struct hpu_mem_stats changed size");

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

int hpu_device_query(struct hpu_device *dev, struct hpu_device_info *out)
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
		.num_queues = raw.num_queues,
		.max_contexts = raw.max_contexts,
		.num_user_queues = raw.num_user_queues,
	};
	memcpy(out->pci_bus_id, dev->desc.pci_bus_id, sizeof(out->pci_bus_id));
	memcpy(out->path, dev->desc.path, sizeof(out->path));
	return 0;
}

int hpu_device_check_submission(struct hpu_device *dev)
{
	if (dev->num_queues)
		return 0;
	return hpu_error_set(EOPNOTSUPP, "%s: the driver (ABI %u.%u) has no command submission",
			     dev->desc.path, dev->abi_version.major, dev->abi_version.minor);
}

int hpu_sized_check(const struct hpu_device *dev, const void *out, const char *name,
		    uint32_t min_size)
{
	uint32_t size;

	if (!dev || !out)
		return hpu_error_set(EINVAL, "%s is NULL", dev ? name : "dev");
	memcpy(&size, out, sizeof(size));
	if (size < min_size)
		return hpu_error_set(EINVAL, "%s->size is %u, at least %u expected", name, size,
				     min_size);
	return 0;
}

void hpu_sized_out(void *out, void *known, uint32_t known_size)
{
	uint32_t out_size, size;

	memcpy(&out_size, out, sizeof(out_size));
	/* A caller built with a newer header passes more: zero what we do not know. */
	size = out_size < known_size ? out_size : known_size;
	memset((char *)out + size, 0, out_size - size);
	memcpy(known, &size, sizeof(size));
	memcpy(out, known, size);
}

static int hpu_device_query_stats(struct hpu_device *dev, struct hpu_device_stats *out)
{
	struct drm_hpu_stats raw = { 0 };
	struct drm_hpu_info args = {
		.data_ptr = (uintptr_t)&raw,
		.data_size = sizeof(raw),
		.query = DRM_HPU_INFO_STATS,
	};
	uint64_t ioctls = atomic_load(&dev->ioctls);
	int ret;

	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_INFO, &args);
	if (ret)
		return ret;
	if (args.data_size < DRM_HPU_STATS_SIZE_V1)
		return hpu_error_set(EPROTO, "%s: driver returned %u bytes of stats, expected %u",
				     dev->desc.path, args.data_size, DRM_HPU_STATS_SIZE_V1);
	*out = (struct hpu_device_stats){
		.num_contexts = raw.num_contexts,
		.hbm_total = raw.hbm_total,
		.hbm_used = raw.hbm_used,
		.ctx_hbm_used = raw.ctx_hbm_used,
		.ctx_host_pinned = raw.ctx_host_pinned,
		.jobs_submitted = raw.jobs_submitted,
		.jobs_completed = raw.jobs_completed,
		.jobs_failed = raw.jobs_failed,
		.ctx_jobs_submitted = raw.ctx_jobs_submitted,
		.ctx_jobs_completed = raw.ctx_jobs_completed,
		.ctx_jobs_failed = raw.ctx_jobs_failed,
		.ioctls = ioctls,
		.ctx_id = raw.ctx_id,
	};
	return 0;
}

int hpu_device_get_stats(struct hpu_device *dev, struct hpu_device_stats *stats)
{
	struct hpu_device_stats known;
	int ret;

	ret = hpu_sized_check(dev, stats, "stats", HPU_DEVICE_STATS_SIZE_V1);
	if (!ret)
		ret = hpu_device_check_submission(dev);
	if (!ret)
		ret = hpu_device_query_stats(dev, &known);
	if (ret)
		return hpu_error_in(__func__, ret);
	hpu_sized_out(stats, &known, sizeof(known));
	return 0;
}
