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
 * zero; any other range of a new buffer is zeroed by LIN_DMA MEMSET jobs on
 * the driver's own context before the handle is returned.  GEM_CREATE waits
 * for them killably: they queue behind every other file's work on queue 0.
 * A killed caller's buffer is freed at once but its HBM is not: it waits,
 * with its file's charge, in hpu_hbm.parked until the job that may still
 * write it has ended, and is reaped by the next allocation or usage query.
 *
 * Each file's buffers count against its share, max_file_hbm_mb
 * (hpu_limits.c): -EDQUOT past it, -ENOMEM when HBM itself is full.
 */
#include <linux/completion.h>
#include <linux/dma-fence.h>
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
#include "hpu_limits.h"
#include "hpu_regs.h"

u64 hpu_hbm_total(struct hpu_device *hdev)
{
	return hdev->hbm.end - hdev->hbm.start;
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

/* Give back @bo's HBM and its file's charge; the GEM object is released. */
static void hpu_bo_release_locked(struct hpu_hbm *hbm, struct hpu_bo *bo)
{
	hpu_hbm_free_locked(hbm, &bo->chunks);
	if (bo->ctx) {
		atomic64_sub(bo->size, &bo->ctx->hbm_used);
		hpu_ctx_put(bo->ctx);
	}
	dma_fence_put(bo->zeroing);
	kfree(bo);
}

/* Release the parked buffers whose zeroing job has ended (all of them if @all). */
static void hpu_hbm_reap_locked(struct hpu_hbm *hbm, bool all)
{
	struct hpu_bo *bo, *tmp;

	lockdep_assert_held(&hbm->lock);

	list_for_each_entry_safe(bo, tmp, &hbm->parked, park_link) {
		if (!dma_fence_is_signaled(bo->zeroing) && !all)
			continue;
		list_del(&bo->park_link);
		hpu_bo_release_locked(hbm, bo);
	}
}

/* Bytes of HBM in buffers, after reaping. */
u64 hpu_hbm_used(struct hpu_device *hdev)
{
	struct hpu_hbm *hbm = &hdev->hbm;
	u64 used;

	mutex_lock(&hbm->lock);
	hpu_hbm_reap_locked(hbm, false);
	used = hbm->used;
	mutex_unlock(&hbm->lock);
	return used;
}

/*
 * drm release: every buffer is gone with the files that held them, and
 * the driver's context with its jobs: no zeroing job runs any more.
 */
static void hpu_hbm_fini(struct drm_device *drm, void *arg)
{
	struct hpu_hbm *hbm = arg;

	mutex_lock(&hbm->lock);
	hpu_hbm_reap_locked(hbm, true);
	mutex_unlock(&hbm->lock);
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
	INIT_LIST_HEAD(&hbm->parked);
	/* A device with no HBM above the MMU region refuses every buffer. */
	if (hbm->end > hbm->start)
		drm_mm_init(&hbm->mm, hbm->start, hbm->end - hbm->start);
	else
		dev_warn(hpu_dev(hdev), "no HBM for buffers (%llu bytes)\n",
			 hdev->info.hbm_size);

	return drmm_add_action_or_reset(&hdev->drm, hpu_hbm_fini, hbm);
}

/* Allocate @size bytes aligned to @align as the next chunk of @chunks. */
static int hpu_hbm_insert_locked(struct hpu_hbm *hbm, struct list_head *chunks,
				 u64 size, u64 align)
{
	struct hpu_bo_chunk *c;
	u64 end;
	int ret;

	lockdep_assert_held(&hbm->lock);

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
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
	hpu_hbm_reap_locked(hbm, false);
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
	struct hpu_hbm *hbm = &to_hpu_device(obj->dev)->hbm;
	struct hpu_bo *bo = to_hpu_bo(obj);

	drm_gem_object_release(obj);
	mutex_lock(&hbm->lock);
	if (bo->zeroing && !dma_fence_is_signaled(bo->zeroing))
		list_add_tail(&bo->park_link, &hbm->parked);
	else
		hpu_bo_release_locked(hbm, bo);
	mutex_unlock(&hbm->lock);
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

struct hpu_bo_waiter {
	struct dma_fence_cb cb;
	struct completion done;
};

static void hpu_bo_waiter_wake(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	complete(&container_of(cb, struct hpu_bo_waiter, cb)->done);
}

/*
 * Wait for @fence unless the caller is killed (-EINTR).  Other signals do
 * not end the wait: a restarted GEM_CREATE would start over, and a timer
 * signal could then keep parking buffers.
 */
static int hpu_bo_wait_killable(struct dma_fence *fence)
{
	struct hpu_bo_waiter w;

	init_completion(&w.done);
	if (dma_fence_add_callback(fence, &w.cb, hpu_bo_waiter_wake))
		return 0;
	if (!wait_for_completion_killable(&w.done))
		return 0;
	/* Under the fence's lock: a callback running now is done when this returns. */
	dma_fence_remove_callback(fence, &w.cb);
	return -EINTR;
}

/* Zero [@addr, @addr + @size) of @bo's HBM, one job at a time. */
static int hpu_bo_zero_range(struct hpu_device *hdev, struct hpu_bo *bo,
			     u64 addr, u64 size)
{
	while (size) {
		u64 piece = min(size, HPU_ZERO_JOB_BYTES);
		struct dma_fence *end;
		int ret;

		end = hpu_job_zero_hbm(hdev, addr, piece);
		if (IS_ERR(end))
			return PTR_ERR(end);
		ret = hpu_bo_wait_killable(end);
		if (ret) {
			/* The job may still write the HBM: hpu_bo_free() parks it. */
			bo->zeroing = end;
			return ret;
		}
		ret = dma_fence_get_status(end);
		dma_fence_put(end);
		if (ret < 0) {
			dev_err_ratelimited(hpu_dev(hdev), "zeroing HBM at 0x%llx failed: %d\n",
					    addr, ret);
			return ret == -ENODEV ? -ENODEV : -EIO;
		}
		addr += piece;
		size -= piece;
	}
	return 0;
}

/* Zero what of @bo may hold an earlier buffer's data. */
static int hpu_bo_zero(struct hpu_device *hdev, struct hpu_bo *bo)
{
	struct hpu_bo_chunk *c;
	int ret;

	list_for_each_entry(c, &bo->chunks, link) {
		if (!c->dirty)
			continue;
		ret = hpu_bo_zero_range(hdev, bo, c->node.start, c->dirty);
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

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return -ENOMEM;
	bo->base.funcs = &hpu_bo_funcs;
	bo->size = size;
	bo->flags = args->flags;
	INIT_LIST_HEAD(&bo->chunks);
	drm_gem_private_object_init(drm, &bo->base, round_up(size, PAGE_SIZE));

	/* From here on, freeing the buffer returns the charge. */
	ret = hpu_file_charge_hbm(&ctx->hbm_used, size);
	if (ret)
		goto out_put_bo;
	bo->ctx = hpu_ctx_get(ctx);
	ret = hpu_hbm_alloc(hdev, bo);
	if (ret)
		goto out_put_bo;

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
