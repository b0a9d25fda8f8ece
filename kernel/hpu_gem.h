/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu buffers: HBM allocations as GEM objects.
 */
#ifndef HPU_GEM_H
#define HPU_GEM_H

#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <drm/drm_gem.h>
#include <drm/drm_mm.h>

struct drm_device;
struct drm_file;
struct hpu_ctx;
struct hpu_device;

/*
 * HBM above the MMU region, where buffers live.  Free HBM is zero: freed
 * buffers' chunks are zeroed (scrubbed) by jobs of the driver's context
 * before they return to @mm's free space.
 */
struct hpu_hbm {
	/*
	 * Protects @mm, the byte counts and the chunk lists.  Held only to
	 * allocate and free ranges, never while waiting for a job.  A leaf;
	 * nests inside vm.lock (a mapping's release may free its buffer).
	 */
	struct mutex lock;
	struct drm_mm mm;
	u64 start;		/* HPU_HBM_USER_BASE */
	u64 end;		/* HBM size */
	u64 used;		/* bytes of @mm's nodes: buffers, scrubbing and bad chunks */
	u64 scrubbing;		/* of @used: freed, not yet zeroed */
	u64 bad;		/* of @used: a zeroing job failed on them: never handed out */
	u64 scrubbed;		/* count of scrubs ended, for hpu_hbm_alloc()'s wait */
	bool stopped;		/* the driver's context is going: no new zeroing job */
	struct list_head dirty;	/* freed chunks no zeroing job was started for */
	struct list_head bad_chunks;
	/* Scrubs whose jobs ended (struct hpu_scrub), returned by hpu_hbm_reclaim(). */
	struct llist_head ended;
	wait_queue_head_t ended_wait;
	struct delayed_work scrub_work;	/* starts zeroing jobs and reclaims */
	u64 fence_context;	/* of the scrubs' fence arrays */
	u64 fence_seqno;	/* under @lock */
};

/* One physically contiguous piece of a buffer. */
struct hpu_bo_chunk {
	struct drm_mm_node node;	/* HBM offset and size */
	struct list_head link;		/* in hpu_bo.chunks, in buffer order; then in a scrub */
};

struct hpu_bo {
	struct drm_gem_object base;
	u64 size;			/* bytes of HBM, a multiple of 4 KiB */
	u32 flags;			/* DRM_HPU_GEM_* */
	struct hpu_ctx *ctx;		/* charged for the size; holds a reference */
	struct list_head chunks;	/* struct hpu_bo_chunk */
};

static inline struct hpu_bo *to_hpu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct hpu_bo, base);
}

int hpu_hbm_init(struct hpu_device *hdev);
u64 hpu_hbm_total(struct hpu_device *hdev);
u64 hpu_hbm_used(struct hpu_device *hdev);
void hpu_hbm_usage(struct hpu_device *hdev, u64 *used, u64 *scrubbing, u64 *bad);
void hpu_hbm_scrub_stop(struct hpu_device *hdev);

struct hpu_bo *hpu_bo_lookup(struct drm_file *file, u32 handle);
void hpu_bo_put(struct hpu_bo *bo);

int hpu_ioctl_gem_create(struct drm_device *drm, void *data,
			 struct drm_file *file);

#endif /* HPU_GEM_H */
