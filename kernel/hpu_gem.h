/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu buffers: HBM allocations as GEM objects.
 */
#ifndef HPU_GEM_H
#define HPU_GEM_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <drm/drm_gem.h>
#include <drm/drm_mm.h>

struct dma_fence;
struct drm_device;
struct drm_file;
struct hpu_ctx;
struct hpu_device;

/* HBM above the MMU region, where buffers live. */
struct hpu_hbm {
	/*
	 * Protects @mm, @used, @clean_from and @parked.  Held only to
	 * allocate and free ranges, never while a job runs.
	 */
	struct mutex lock;
	struct drm_mm mm;
	u64 start;		/* HPU_HBM_USER_BASE */
	u64 end;		/* HBM size */
	u64 used;		/* bytes allocated, parked buffers included */
	/*
	 * HBM at and above this offset has not been handed out since the
	 * device reset at probe cleared it, so it needs no zeroing.
	 */
	u64 clean_from;
	/* Freed buffers whose HBM a zeroing job may still write: struct hpu_bo. */
	struct list_head parked;
};

/* One physically contiguous piece of a buffer. */
struct hpu_bo_chunk {
	struct drm_mm_node node;	/* HBM offset and size */
	struct list_head link;		/* in hpu_bo.chunks, in buffer order */
	u64 dirty;			/* bytes from the start to zero before use */
};

struct hpu_bo {
	struct drm_gem_object base;
	u64 size;			/* bytes of HBM, a multiple of 4 KiB */
	u32 flags;			/* DRM_HPU_GEM_* */
	struct hpu_ctx *ctx;		/* charged for the size; holds a reference */
	struct list_head chunks;	/* struct hpu_bo_chunk */
	/*
	 * The zeroing job GEM_CREATE stopped waiting for when its caller was
	 * killed (a reference).  Until it ends, the freed buffer waits in
	 * hpu_hbm.parked, its HBM and its file's charge kept.
	 */
	struct dma_fence *zeroing;
	struct list_head park_link;
};

static inline struct hpu_bo *to_hpu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct hpu_bo, base);
}

int hpu_hbm_init(struct hpu_device *hdev);
u64 hpu_hbm_total(struct hpu_device *hdev);
u64 hpu_hbm_used(struct hpu_device *hdev);

struct hpu_bo *hpu_bo_lookup(struct drm_file *file, u32 handle);
void hpu_bo_put(struct hpu_bo *bo);

int hpu_ioctl_gem_create(struct drm_device *drm, void *data,
			 struct drm_file *file);

#endif /* HPU_GEM_H */
