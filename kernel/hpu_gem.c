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
 * Free HBM is zero, so a new buffer reads as zero and GEM_CREATE starts no
 * job.  The device reset at probe (hpu_fw_reset() before the boot) gives
 * the driver fresh HBM, all zero; a freed buffer's chunks are scrubbed
 * before they are free again.  hpu_bo_free() returns the file's and user's
 * charge at once but leaves the chunks allocated, on hpu_hbm.dirty (still
 * in hpu_hbm.used, and in .scrubbing); the scrub work zeroes them, a batch
 * at a time, with LIN_DMA MEMSET jobs of the driver's context
 * (hpu_job_zero_hbm(), adjacent chunks in one job).  Once every job of a
 * batch has ended, its chunks return to the free space; if one failed (the
 * device broke or went away) they may hold a file's data and stay out of
 * use for good (hpu_hbm.bad), logged.
 *
 * Those jobs run on queue 0 behind other files' work, which may take long;
 * only a GEM_CREATE short of free HBM while scrubs are pending waits for
 * them, killably, and tries again.
 *
 * Each file's buffers count against its share and its user's
 * (hpu_limits.c): -EDQUOT past either, -ENOMEM when HBM itself is full.
 */
#include <linux/dma-fence.h>
#include <linux/list_sort.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_gem.h"
#include "hpu_job.h"
#include "hpu_limits.h"
#include "hpu_regs.h"

/* Zeroing jobs one scrub starts at most, unless its one chunk needs more. */
#define HPU_SCRUB_MAX_JOBS 64
/* How soon the scrub work tries again when it had no memory to start jobs. */
#define HPU_SCRUB_RETRY_MS 100

struct hpu_scrub;

/* One zeroing job of a scrub. */
struct hpu_scrub_job {
	struct dma_fence *fence;	/* its end; a reference */
	struct dma_fence_cb cb;
	struct hpu_scrub *scrub;
};

/* A batch of freed chunks being zeroed. */
struct hpu_scrub {
	struct hpu_device *hdev;
	struct list_head chunks;	/* struct hpu_bo_chunk, by HBM offset */
	u64 bytes;
	atomic_t pending;		/* jobs not ended, and one while they are started */
	atomic_t error;			/* the first failed job's -errno */
	int start_error;		/* why a job could not be started: 0 or -errno */
	struct llist_node ended;	/* in hpu_hbm.ended */
	unsigned int num_jobs;
	struct hpu_scrub_job job[];
};

u64 hpu_hbm_total(struct hpu_device *hdev)
{
	return hdev->hbm.end - hdev->hbm.start;
}

/* Return @chunks' HBM, which is zero, to the free space. */
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

static void hpu_hbm_kick(struct hpu_hbm *hbm, unsigned int delay_ms)
{
	mod_delayed_work(system_unbound_wq, &hbm->scrub_work, msecs_to_jiffies(delay_ms));
}

/* A job of @s ended with @status (or was never started: 0); the last one queues @s. */
static void hpu_scrub_job_ended(struct hpu_scrub *s, int status)
{
	struct hpu_hbm *hbm = &s->hdev->hbm;

	if (status < 0)
		atomic_cmpxchg(&s->error, 0, status);
	if (!atomic_dec_and_test(&s->pending))
		return;
	llist_add(&s->ended, &hbm->ended);
	wake_up_all(&hbm->ended_wait);
	hpu_hbm_kick(hbm, 0);
}

/* Under the fence's lock, maybe in an interrupt. */
static void hpu_scrub_job_cb(struct dma_fence *fence, struct dma_fence_cb *cb)
{
	struct hpu_scrub_job *j = container_of(cb, struct hpu_scrub_job, cb);

	hpu_scrub_job_ended(j->scrub, dma_fence_get_status_locked(fence));
}

/*
 * Return the chunks of the scrubs whose jobs all ended to the free space,
 * keep them out of use if a job failed, or queue them again if not all
 * jobs could be started for want of memory.
 */
static void hpu_hbm_reclaim(struct hpu_device *hdev)
{
	struct hpu_hbm *hbm = &hdev->hbm;
	struct llist_node *ended = llist_del_all(&hbm->ended);
	struct hpu_scrub *s, *tmp;
	bool retry = false;
	unsigned int i;
	int err;

	if (!ended)
		return;
	llist_for_each_entry_safe(s, tmp, ended, ended) {
		err = atomic_read(&s->error);
		mutex_lock(&hbm->lock);
		if (!err && s->start_error == -ENOMEM) {
			/* Zeroed in part, if at all: all of it again, later. */
			list_splice_tail_init(&s->chunks, &hbm->dirty);
			retry = true;
		} else if (err || s->start_error) {
			err = err ?: s->start_error;
			list_splice_tail_init(&s->chunks, &hbm->bad_chunks);
			hbm->scrubbing -= s->bytes;
			hbm->bad += s->bytes;
		} else {
			hpu_hbm_free_locked(hbm, &s->chunks);
			hbm->scrubbing -= s->bytes;
		}
		WRITE_ONCE(hbm->scrubbed, hbm->scrubbed + 1);
		mutex_unlock(&hbm->lock);

		/* A device that went away took its HBM with it: nothing to say. */
		if (err && err != -ENODEV)
			dev_err_ratelimited(hpu_dev(hdev),
					    "zeroing %llu bytes of freed HBM failed (%d): kept out of use\n",
					    s->bytes, err);
		for (i = 0; i < s->num_jobs; i++)
			dma_fence_put(s->job[i].fence);
		kfree(s);
	}
	wake_up_all(&hbm->ended_wait);
	if (retry && !READ_ONCE(hbm->stopped))
		hpu_hbm_kick(hbm, HPU_SCRUB_RETRY_MS);
}

/* Start zeroing [@addr, @addr + @size) with jobs of @s; 0 or -errno. */
static int hpu_scrub_range(struct hpu_scrub *s, u64 addr, u64 size)
{
	while (size) {
		u64 piece = min(size, HPU_ZERO_JOB_BYTES);
		struct hpu_scrub_job *j = &s->job[s->num_jobs];
		struct dma_fence *end;

		end = hpu_job_zero_hbm(s->hdev, addr, piece);
		if (IS_ERR(end))
			return PTR_ERR(end);
		j->fence = end;
		j->scrub = s;
		s->num_jobs++;
		atomic_inc(&s->pending);
		if (dma_fence_add_callback(end, &j->cb, hpu_scrub_job_cb))
			hpu_scrub_job_ended(s, dma_fence_get_status(end));
		addr += piece;
		size -= piece;
	}
	return 0;
}

/* Start @s's jobs, one per run of adjacent chunks (and per HPU_ZERO_JOB_BYTES). */
static void hpu_scrub_start(struct hpu_scrub *s)
{
	struct hpu_bo_chunk *c;
	u64 start = 0, len = 0;
	int ret = 0;

	list_for_each_entry(c, &s->chunks, link) {
		if (len && c->node.start != start + len) {
			ret = hpu_scrub_range(s, start, len);
			if (ret)
				break;
			len = 0;
		}
		if (!len)
			start = c->node.start;
		len += c->node.size;
	}
	if (!ret)
		ret = hpu_scrub_range(s, start, len);
	s->start_error = ret;
	/* The starter's count: the last job to end, or this, queues the scrub. */
	hpu_scrub_job_ended(s, 0);
}

static unsigned int hpu_zero_jobs(u64 bytes)
{
	return DIV_ROUND_UP_ULL(bytes, HPU_ZERO_JOB_BYTES);
}

/*
 * A scrub of the first chunks of @todo (non-empty), which take at most
 * HPU_SCRUB_MAX_JOBS jobs, or of its first chunk; NULL without memory.
 */
static struct hpu_scrub *hpu_scrub_take(struct hpu_device *hdev, struct list_head *todo)
{
	struct hpu_bo_chunk *c, *last = NULL;
	unsigned int jobs = 0;
	struct hpu_scrub *s;
	u64 bytes = 0;

	list_for_each_entry(c, todo, link) {
		if (last && jobs + hpu_zero_jobs(c->node.size) > HPU_SCRUB_MAX_JOBS)
			break;
		/* Adjacent chunks may share a job: this counts enough. */
		jobs += hpu_zero_jobs(c->node.size);
		bytes += c->node.size;
		last = c;
	}
	s = kzalloc(struct_size(s, job, jobs), GFP_KERNEL);
	if (!s)
		return NULL;
	s->hdev = hdev;
	INIT_LIST_HEAD(&s->chunks);
	list_cut_position(&s->chunks, todo, &last->link);
	s->bytes = bytes;
	atomic_set(&s->pending, 1);
	return s;
}

static int hpu_chunk_cmp(void *priv, const struct list_head *a, const struct list_head *b)
{
	u64 sa = list_entry(a, struct hpu_bo_chunk, link)->node.start;
	u64 sb = list_entry(b, struct hpu_bo_chunk, link)->node.start;

	return sa > sb;
}

/* Reclaim what was zeroed; start zeroing what was freed. */
static void hpu_hbm_scrub_work(struct work_struct *work)
{
	struct hpu_hbm *hbm = container_of(to_delayed_work(work), struct hpu_hbm, scrub_work);
	struct hpu_device *hdev = container_of(hbm, struct hpu_device, hbm);
	struct hpu_scrub *s;
	LIST_HEAD(todo);

	hpu_hbm_reclaim(hdev);
	mutex_lock(&hbm->lock);
	if (!hbm->stopped)
		list_splice_init(&hbm->dirty, &todo);
	mutex_unlock(&hbm->lock);

	list_sort(NULL, &todo, hpu_chunk_cmp);
	while (!list_empty(&todo)) {
		s = hpu_scrub_take(hdev, &todo);
		if (!s) {
			mutex_lock(&hbm->lock);
			list_splice(&todo, &hbm->dirty);
			mutex_unlock(&hbm->lock);
			hpu_hbm_kick(hbm, HPU_SCRUB_RETRY_MS);
			return;
		}
		hpu_scrub_start(s);
	}
}

/* Freed @chunks (of a buffer handed out) are to be zeroed before they are free again. */
static void hpu_hbm_scrub(struct hpu_device *hdev, struct list_head *chunks)
{
	struct hpu_hbm *hbm = &hdev->hbm;
	struct hpu_bo_chunk *c;

	if (list_empty(chunks))
		return;
	mutex_lock(&hbm->lock);
	list_for_each_entry(c, chunks, link)
		hbm->scrubbing += c->node.size;
	list_splice_tail_init(chunks, &hbm->dirty);
	mutex_unlock(&hbm->lock);
	hpu_hbm_kick(hbm, 0);
}

/*
 * No new zeroing job from now on: the driver's context is going.  Chunks
 * not yet being zeroed stay allocated until hpu_hbm_fini().
 */
void hpu_hbm_scrub_stop(struct hpu_device *hdev)
{
	struct hpu_hbm *hbm = &hdev->hbm;

	mutex_lock(&hbm->lock);
	hbm->stopped = true;
	mutex_unlock(&hbm->lock);
	cancel_delayed_work_sync(&hbm->scrub_work);
}

/*
 * Bytes of HBM allocated (buffers, freed HBM being zeroed, HBM kept out of
 * use after a failed zeroing), and of them the last two.
 */
void hpu_hbm_usage(struct hpu_device *hdev, u64 *used, u64 *scrubbing, u64 *bad)
{
	struct hpu_hbm *hbm = &hdev->hbm;

	hpu_hbm_reclaim(hdev);
	mutex_lock(&hbm->lock);
	*used = hbm->used;
	*scrubbing = hbm->scrubbing;
	*bad = hbm->bad;
	mutex_unlock(&hbm->lock);
}

/*
 * What INFO's STATS reports: HBM that buffers hold.  Freed HBM being
 * zeroed is not, nor HBM kept out of use after its zeroing failed (so the
 * figure does not depend on how soon a failing zeroing job ended).
 */
u64 hpu_hbm_used(struct hpu_device *hdev)
{
	u64 used, scrubbing, bad;

	hpu_hbm_usage(hdev, &used, &scrubbing, &bad);
	return used - scrubbing - bad;
}

/*
 * drm release: every buffer is gone with the files that held them, and
 * the driver's context with its jobs: every scrub has ended.
 */
static void hpu_hbm_fini(struct drm_device *drm, void *arg)
{
	struct hpu_device *hdev = arg;
	struct hpu_hbm *hbm = &hdev->hbm;

	hpu_hbm_scrub_stop(hdev);
	hpu_hbm_reclaim(hdev);
	mutex_lock(&hbm->lock);
	hpu_hbm_free_locked(hbm, &hbm->dirty);
	hpu_hbm_free_locked(hbm, &hbm->bad_chunks);
	hbm->scrubbing = 0;
	hbm->bad = 0;
	WARN_ON(hbm->used);
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
	INIT_LIST_HEAD(&hbm->dirty);
	INIT_LIST_HEAD(&hbm->bad_chunks);
	init_llist_head(&hbm->ended);
	init_waitqueue_head(&hbm->ended_wait);
	INIT_DELAYED_WORK(&hbm->scrub_work, hpu_hbm_scrub_work);
	/* A device with no HBM above the MMU region refuses every buffer. */
	if (hbm->end > hbm->start)
		drm_mm_init(&hbm->mm, hbm->start, hbm->end - hbm->start);
	else
		dev_warn(hpu_dev(hdev), "no HBM for buffers (%llu bytes)\n",
			 hdev->info.hbm_size);

	return drmm_add_action_or_reset(&hdev->drm, hpu_hbm_fini, hdev);
}

/* Allocate @size bytes aligned to @align as the next chunk of @chunks. */
static int hpu_hbm_insert_locked(struct hpu_hbm *hbm, struct list_head *chunks,
				 u64 size, u64 align)
{
	struct hpu_bo_chunk *c;
	int ret;

	lockdep_assert_held(&hbm->lock);

	c = hpu_fault_alloc(sizeof(*c)) ? NULL : kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	ret = drm_mm_insert_node_in_range(&hbm->mm, &c->node, size, align, 0,
					  hbm->start, hbm->end,
					  DRM_MM_INSERT_BEST);
	if (ret) {
		kfree(c);
		return ret;
	}

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

/* Free HBM for @bo, or -ENOMEM. */
static int hpu_hbm_alloc_locked(struct hpu_hbm *hbm, struct hpu_bo *bo)
{
	u64 left = bo->size, try = bo->size;
	int ret = -ENOMEM;

	lockdep_assert_held(&hbm->lock);

	if (bo->size > hbm->end - hbm->start - hbm->used)
		return ret;

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
		/* Never handed out: still zero. */
		hpu_hbm_free_locked(hbm, &bo->chunks);
		ret = ret == -ENOSPC ? -ENOMEM : ret;
	}
	return ret;
}

/*
 * Free HBM for @bo.  Short of it while freed HBM that would do is being
 * zeroed, wait for that (a fatal signal ends the wait: -EINTR) and try
 * again; -ENOMEM once nothing pending would do.
 */
static int hpu_hbm_alloc(struct hpu_device *hdev, struct hpu_bo *bo)
{
	struct hpu_hbm *hbm = &hdev->hbm;
	bool wait;
	u64 seen;
	int ret;

	for (;;) {
		hpu_hbm_reclaim(hdev);
		mutex_lock(&hbm->lock);
		ret = hpu_hbm_alloc_locked(hbm, bo);
		wait = ret == -ENOMEM && hbm->scrubbing &&
		       bo->size <= hpu_hbm_total(hdev) - hbm->used + hbm->scrubbing;
		seen = hbm->scrubbed;
		mutex_unlock(&hbm->lock);
		if (!wait)
			return ret;
		if (wait_event_killable(hbm->ended_wait, READ_ONCE(hbm->scrubbed) != seen ||
					!llist_empty(&hbm->ended)))
			return -EINTR;
	}
}

static void hpu_bo_free(struct drm_gem_object *obj)
{
	struct hpu_device *hdev = to_hpu_device(obj->dev);
	struct hpu_bo *bo = to_hpu_bo(obj);

	drm_gem_object_release(obj);
	hpu_hbm_scrub(hdev, &bo->chunks);
	if (bo->ctx) {
		hpu_uncharge_hbm(hdev, bo->ctx->user, &bo->ctx->hbm_used, bo->size);
		hpu_ctx_put(bo->ctx);
	}
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

	bo = hpu_fault_alloc(sizeof(*bo)) ? NULL : kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return -ENOMEM;
	bo->base.funcs = &hpu_bo_funcs;
	bo->size = size;
	bo->flags = args->flags;
	INIT_LIST_HEAD(&bo->chunks);
	drm_gem_private_object_init(drm, &bo->base, round_up(size, PAGE_SIZE));

	/* From here on, freeing the buffer returns the charge. */
	ret = hpu_charge_hbm(hdev, ctx->user, &ctx->hbm_used, size);
	if (ret)
		goto out_put_bo;
	bo->ctx = hpu_ctx_get(ctx);
	ret = hpu_hbm_alloc(hdev, bo);
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
