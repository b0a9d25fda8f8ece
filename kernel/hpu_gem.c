// SPDX-License-Identifier: GPL-2.0
/*
 * hpu buffers: HBM as GEM objects.
 *
 * HBM above the MMU region is one drm_mm.  A CONTIGUOUS buffer is one node;
 * any other buffer takes the largest nodes that fit, from its whole size
 * down to 4 KiB, 2 MiB aligned while they are at least 2 MiB so that
 * mappings can use 2 MiB leaves.  Buffers are private to the file that
 * created them (render nodes refuse flink, the driver offers no PRIME) and
 * have no CPU mapping: they get no mmap offset, so mmap() finds nothing to
 * map (the node's mmap serves user queues' doorbells).  A buffer is freed with its last reference: its
 * handle and each of its mappings hold one.
 *
 * New buffers read as zero.  The device reset at probe clears HBM, and HBM
 * that has not been handed out since (above hpu_hbm.clean_from) is still
 * zero; any other range of a new buffer is zeroed by a LIN_DMA MEMSET job on
 * the driver's own context before the handle is returned.
 */
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_gem.h"
#include "hpu_job.h"
#include "hpu_regs.h"

u64 hpu_hbm_total(struct hpu_device *hdev)
{
	return hdev->hbm.end - hdev->hbm.start;
}

u64 hpu_hbm_used(struct hpu_device *hdev)
{
	return READ_ONCE(hdev->hbm.used);
}

/* drm release: every buffer is gone with the files that held them. */
static void hpu_hbm_fini(struct drm_device *drm, void *arg)
{
	struct hpu_hbm *hbm = arg;

	if (drm_mm_initialized(&hbm->mm))
		drm_mm_takedown(&hbm->mm);
	mutex_destroy(&hbm->lock);
}

/* Lives as long as the DRM device: buffers of open files are freed into it. */
int hpu_hbm_init(struct hpu_device *hdev)
{
	struct hpu_hbm *hbm = &hdev->hbm;

	mutex_init(&hbm->lock);
	hbm->start = HPU_HBM_USER_BASE;
	hbm->end = max(round_down(hdev->info.hbm_size, HPU_MMU_PAGE_SIZE),
		       hbm->start);
	hbm->used = 0;
	hbm->clean_from = hbm->start;
	/* A device with no HBM above the MMU region refuses every buffer. */
	if (hbm->end > hbm->start)
		drm_mm_init(&hbm->mm, hbm->start, hbm->end - hbm->start);
	else
		dev_warn(hpu_dev(hdev), "no HBM for buffers (%llu bytes)\n",
			 hdev->info.hbm_size);

	return drmm_add_action_or_reset(&hdev->drm, hpu_hbm_fini, hbm);
}

static void hpu_hbm_free_locked(struct hpu_hbm *hbm, struct list_head *chunks)
{
	struct hpu_bo_chunk *c, *tmp;

	lockdep_assert_held(&hbm->lock);

	list_for_each_entry_safe(c, tmp, chunks, link) {
		WRITE_ONCE(hbm->used, hbm->used - c->node.size);
		drm_mm_remove_node(&c->node);
		list_del(&c->link);
		kfree(c);
	}
}

/* Allocate @size bytes aligned to @align as the next chunk of @chunks. */
static int hpu_hbm_insert_locked(struct hpu_hbm *hbm, struct list_head *chunks,
				 u64 size, u64 align)
{
	struct hpu_bo_chunk *c;
	u64 end;
	int ret;

	lockdep_assert_held(&hbm->lock);

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	ret = drm_mm_insert_node_in_range(&hbm->mm, &c->node, size, align, 0,
					  hbm->start, hbm->end,
					  DRM_MM_INSERT_BEST);
	if (ret) {
		kfree(c);
		return ret;
	}

	end = c->node.start + size;
	if (c->node.start < hbm->clean_from)
		c->dirty = min(end, hbm->clean_from) - c->node.start;
	hbm->clean_from = max(hbm->clean_from, end);
	WRITE_ONCE(hbm->used, hbm->used + size);
	list_add_tail(&c->link, chunks);
	return 0;
}

static u64 hpu_hbm_align(u64 size)
{
	return size >= HPU_MMU_HUGE_SIZE ? HPU_MMU_HUGE_SIZE : HPU_MMU_PAGE_SIZE;
}

/* The next smaller chunk size to try after @size did not fit. */
static u64 hpu_hbm_smaller(u64 size)
{
	if (size > HPU_MMU_HUGE_SIZE)
		return max(round_down(size / 2, HPU_MMU_HUGE_SIZE), HPU_MMU_HUGE_SIZE);
	return round_down(size / 2, HPU_MMU_PAGE_SIZE);
}

static int hpu_hbm_alloc(struct hpu_device *hdev, struct hpu_bo *bo)
{
	struct hpu_hbm *hbm = &hdev->hbm;
	u64 left = bo->size, try = bo->size;
	int ret = -ENOMEM;

	mutex_lock(&hbm->lock);
	if (bo->size > hbm->end - hbm->start - hbm->used)
		goto out_unlock;

	if (bo->flags & DRM_HPU_GEM_CONTIGUOUS) {
		ret = hpu_hbm_insert_locked(hbm, &bo->chunks, bo->size,
					    hpu_hbm_align(bo->size));
		if (ret && hpu_hbm_align(bo->size) > HPU_MMU_PAGE_SIZE)
			ret = hpu_hbm_insert_locked(hbm, &bo->chunks, bo->size,
						    HPU_MMU_PAGE_SIZE);
		goto out_check;
	}

	while (left) {
		try = min(try, left);
		ret = hpu_hbm_insert_locked(hbm, &bo->chunks, try,
					    hpu_hbm_align(try));
		if (!ret) {
			left -= try;
			continue;
		}
		if (ret != -ENOSPC)
			break;
		try = hpu_hbm_smaller(try);
		if (!try)
			break;
	}

out_check:
	if (ret) {
		hpu_hbm_free_locked(hbm, &bo->chunks);
		ret = ret == -ENOSPC ? -ENOMEM : ret;
	}
out_unlock:
	mutex_unlock(&hbm->lock);
	return ret;
}

static void hpu_bo_free(struct drm_gem_object *obj)
{
	struct hpu_device *hdev = to_hpu_device(obj->dev);
	struct hpu_bo *bo = to_hpu_bo(obj);

	mutex_lock(&hdev->hbm.lock);
	hpu_hbm_free_locked(&hdev->hbm, &bo->chunks);
	mutex_unlock(&hdev->hbm.lock);

	if (bo->ctx) {
		atomic64_sub(bo->size, &bo->ctx->hbm_used);
		hpu_ctx_put(bo->ctx);
	}
	drm_gem_object_release(obj);
	kfree(bo);
}

static const struct drm_gem_object_funcs hpu_bo_funcs = {
	.free = hpu_bo_free,
};

/* The buffer behind @handle of @file, with a reference, or NULL. */
struct hpu_bo *hpu_bo_lookup(struct drm_file *file, u32 handle)
{
	struct drm_gem_object *obj = drm_gem_object_lookup(file, handle);

	if (!obj)
		return NULL;
	if (obj->funcs != &hpu_bo_funcs) {
		drm_gem_object_put(obj);
		return NULL;
	}
	return to_hpu_bo(obj);
}

void hpu_bo_put(struct hpu_bo *bo)
{
	drm_gem_object_put(&bo->base);
}

/* Zero what of @bo may hold an earlier buffer's data. */
static int hpu_bo_zero(struct hpu_device *hdev, struct hpu_bo *bo)
{
	struct hpu_bo_chunk *c;
	int ret;

	list_for_each_entry(c, &bo->chunks, link) {
		if (!c->dirty)
			continue;
		ret = hpu_job_zero_hbm(hdev, c->node.start, c->dirty);
		if (ret)
			return ret;
	}
	return 0;
}

int hpu_ioctl_gem_create(struct drm_device *drm, void *data,
			 struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct drm_hpu_gem_create *args = data;
	struct hpu_ctx *ctx = file->driver_priv;
	struct hpu_bo *bo;
	u32 handle;
	u64 size;
	int ret;

	if (args->flags & ~DRM_HPU_GEM_FLAGS_ALL)
		return -EINVAL;
	if (!args->size || args->size > U64_MAX - (HPU_MMU_PAGE_SIZE - 1))
		return -EINVAL;
	size = round_up(args->size, HPU_MMU_PAGE_SIZE);
	/* More than the device has can never succeed. */
	if (size > hpu_hbm_total(hdev))
		return -ENOMEM;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	bo->base.funcs = &hpu_bo_funcs;
	bo->size = size;
	bo->flags = args->flags;
	INIT_LIST_HEAD(&bo->chunks);
	drm_gem_private_object_init(drm, &bo->base, round_up(size, PAGE_SIZE));

	ret = hpu_hbm_alloc(hdev, bo);
	if (ret)
		goto out_put_bo;
	bo->ctx = hpu_ctx_get(ctx);
	atomic64_add(size, &ctx->hbm_used);

	ret = hpu_bo_zero(hdev, bo);
	if (ret)
		goto out_put_bo;

	ret = drm_gem_handle_create(file, &bo->base, &handle);
	if (ret)
		goto out_put_bo;
	args->handle = handle;

out_put_bo:
	/* On success the handle holds the buffer; otherwise this frees it. */
	drm_gem_object_put(&bo->base);
	return ret;
}
