// SPDX-License-Identifier: GPL-2.0
/*
 * hpu INFO ioctl.  The rules it follows are set out in uapi/drm/hpu_accel.h;
 * the other ioctls live with what they manage (hpu_gem.c, hpu_vm.c,
 * hpu_job.c, hpu_uq.c).
 */
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/uaccess.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_gem.h"
#include "hpu_ioctl.h"
#include "hpu_reset.h"
#include "hpu_vm.h"

static void hpu_ioctl_stats(struct hpu_device *hdev, struct hpu_ctx *ctx,
			    struct drm_hpu_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->hbm_total = hpu_hbm_total(hdev);
	st->hbm_used = hpu_hbm_used(hdev);
	st->ctx_hbm_used = atomic64_read(&ctx->hbm_used);
	st->ctx_host_pinned = hpu_vm_host_pinned(ctx);
	/* Completions before submissions: a reader never sees more ended than submitted. */
	st->jobs_completed = atomic64_read(&hdev->stats.jobs_completed);
	st->jobs_failed = atomic64_read(&hdev->stats.jobs_failed);
	st->jobs_submitted = atomic64_read(&hdev->stats.jobs_submitted);
	st->ctx_jobs_completed = atomic64_read(&ctx->jobs_completed);
	st->ctx_jobs_failed = atomic64_read(&ctx->jobs_failed);
	st->ctx_jobs_submitted = atomic64_read(&ctx->jobs_submitted);
	st->num_contexts = atomic_read(&hdev->stats.contexts);
	st->ctx_id = ctx->asid;
	hpu_uq_stats(ctx, st);
}

int hpu_ioctl_info(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct drm_hpu_info *args = data;
	struct drm_hpu_device_info info;
	struct drm_hpu_stats stats;
	const void *src;
	u32 size, min_size;
	int idx;

	/* The ABI is frozen: a size change here breaks every runtime. */
	BUILD_BUG_ON(sizeof(struct drm_hpu_info) != 24);
	BUILD_BUG_ON(sizeof(struct drm_hpu_device_info) != 96);
	BUILD_BUG_ON(sizeof(struct drm_hpu_device_info) < DRM_HPU_DEVICE_INFO_SIZE_V1);
	BUILD_BUG_ON(sizeof(struct drm_hpu_stats) != 96);
	BUILD_BUG_ON(sizeof(struct drm_hpu_stats) < DRM_HPU_STATS_SIZE_V1);
	BUILD_BUG_ON(sizeof(struct drm_hpu_gem_create) != 16);
	BUILD_BUG_ON(sizeof(struct drm_hpu_vm_map) != 40);
	BUILD_BUG_ON(sizeof(struct drm_hpu_vm_unmap) != 16);
	BUILD_BUG_ON(sizeof(struct drm_hpu_job) != 24);
	BUILD_BUG_ON(sizeof(struct drm_hpu_submit) != 40);
	BUILD_BUG_ON(sizeof(struct drm_hpu_wait) != 24);
	BUILD_BUG_ON(sizeof(struct drm_hpu_uqueue_create) != 32);
	BUILD_BUG_ON(sizeof(struct drm_hpu_uqueue_destroy) != 8);
	BUILD_BUG_ON(sizeof(struct drm_hpu_uqueue_wait) != 24);

	if (args->flags & ~DRM_HPU_INFO_FLAGS_ALL || args->pad)
		return -EINVAL;

	switch (args->query) {
	case DRM_HPU_INFO_DEVICE:
		min_size = DRM_HPU_DEVICE_INFO_SIZE_V1;
		size = sizeof(info);
		src = &info;
		break;
	case DRM_HPU_INFO_STATS:
		min_size = DRM_HPU_STATS_SIZE_V1;
		size = sizeof(stats);
		src = &stats;
		break;
	default:
		return -EINVAL;
	}
	if (args->data_size < min_size)
		return -EINVAL;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	if (args->query == DRM_HPU_INFO_STATS) {
		hpu_ioctl_stats(hdev, file->driver_priv, &stats);
	} else {
		info = hdev->info;
		info.status = READ_ONCE(hdev->info.status);
		hpu_reset_fill_info(hdev, &info);
	}
	drm_dev_exit(idx);

	/*
	 * Outside the section: a copy to the user may stall as long as the
	 * user likes (a userfaultfd page), and unbind waits for the sections.
	 * Older callers know a prefix of the struct; newer ones get ours.
	 */
	size = min_t(u32, args->data_size, size);
	if (copy_to_user(u64_to_user_ptr(args->data_ptr), src, size))
		return -EFAULT;
	args->data_size = size;
	return 0;
}
