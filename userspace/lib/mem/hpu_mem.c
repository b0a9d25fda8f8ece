/* SPDX-License-Identifier: MIT */
/*
 * Device memory: the sub-allocator over slabs of HBM, each a GEM buffer
 * mapped once into the device address space.  Sizes follow the PyTorch CUDA
 * caching allocator, which frameworks are tuned for: small requests share
 * 2 MiB slabs (one huge page of the device MMU), medium ones 20 MiB slabs,
 * and large ones get a slab of their own, rounded to 2 MiB.  A small
 * allocation from a slab already mapped costs no system call.
 */
#include <errno.h>

#include <drm/hpu_accel.h>

#include "../mem/mem.h"

#define HPU_MIB (1ull << 20)

static const struct hpu_suballoc_config hpu_mem_config = {
	.name = "device memory",
	.granule = 512,
	.dedicated_align = 2 * HPU_MIB,
	.pools = {
		{ .max_request = HPU_MIB, .slab_size = 2 * HPU_MIB, .min_split = 512 },
		{ .max_request = UINT64_MAX, .slab_size = 20 * HPU_MIB, .min_split = HPU_MIB },
	},
};

static void hpu_gem_close(struct hpu_device *dev, uint32_t handle)
{
	struct drm_gem_close args = { .handle = handle };

	/* Fails only for a handle that is not there: nothing to undo. */
	hpu_ioctl(dev, DRM_IOCTL_GEM_CLOSE, &args);
}

static int hpu_mem_slab_create(void *ctx, uint64_t size, struct hpu_slab_map *map)
{
	struct hpu_device *dev = ctx;
	struct drm_hpu_gem_create create = { .size = size };
	struct drm_hpu_vm_map vm = { .size = size,
				     .flags = DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE };
	int ret;

	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_GEM_CREATE, &create);
	if (ret)
		return ret;
	vm.handle = create.handle;
	ret = hpu_ioctl(dev, DRM_IOCTL_HPU_VM_MAP, &vm);
	if (ret) {
		hpu_gem_close(dev, create.handle);
		return ret;
	}
	*map = (struct hpu_slab_map){ .va = vm.va, .handle = create.handle };
	return 0;
}

static void hpu_mem_slab_destroy(void *ctx, uint64_t size, const struct hpu_slab_map *map)
{
	struct hpu_device *dev = ctx;
	struct drm_hpu_vm_unmap unmap = { .va = map->va };

	(void)size;
	hpu_ioctl(dev, DRM_IOCTL_HPU_VM_UNMAP, &unmap);
	hpu_gem_close(dev, map->handle);
}

static const struct hpu_suballoc_ops hpu_mem_ops = {
	.slab_create = hpu_mem_slab_create,
	.slab_destroy = hpu_mem_slab_destroy,
	.fence = hpu_mem_fence,
	.retired = hpu_mem_retired,
};

uint64_t hpu_mem_fence(void *ctx)
{
	struct hpu_device *dev = ctx;

	return dev->retire->fence(dev);
}

uint64_t hpu_mem_retired(void *ctx, enum hpu_retire how)
{
	struct hpu_device *dev = ctx;

	return dev->retire->retired(dev, how);
}

int hpu_mem_init(struct hpu_device *dev)
{
	return hpu_suballoc_create(&hpu_mem_config, &hpu_mem_ops, dev, &dev->mem);
}

int hpu_mem_alloc(struct hpu_device *dev, size_t size, uint64_t *devptr)
{
	uint64_t addr = 0;
	void *host;
	int ret;

	if (!dev || !devptr)
		ret = hpu_error_set(EINVAL, "%s is NULL", dev ? "devptr" : "dev");
	else
		ret = hpu_device_check_submission(dev);
	if (!ret && size)
		ret = hpu_suballoc_alloc(dev->mem, size, &addr, &host);
	if (!ret)
		*devptr = addr;
	return hpu_error_in(__func__, ret);
}

int hpu_mem_free(struct hpu_device *dev, uint64_t devptr)
{
	int ret = 0;

	if (!dev)
		ret = hpu_error_set(EINVAL, "dev is NULL");
	else if (devptr)
		ret = hpu_suballoc_free(dev->mem, devptr);
	return hpu_error_in(__func__, ret);
}

int hpu_mem_empty_cache(struct hpu_device *dev)
{
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	hpu_suballoc_trim(dev->mem);
	hpu_suballoc_trim(dev->pinned);
	return 0;
}

int hpu_mem_get_stats(struct hpu_device *dev, struct hpu_mem_stats *stats)
{
	struct hpu_mem_stats known = { 0 };
	int ret;

	ret = hpu_sized_check(dev, stats, "stats", HPU_MEM_STATS_SIZE_V1);
	if (ret)
		return hpu_error_in(__func__, ret);
	hpu_suballoc_stats(dev->mem, &known.device);
	hpu_suballoc_stats(dev->pinned, &known.host);
	hpu_sized_out(stats, &known, sizeof(known));
	return 0;
}
