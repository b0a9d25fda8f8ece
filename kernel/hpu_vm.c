// SPDX-License-Identifier: GPL-2.0
/*
 * hpu per-context address spaces.
 *
 * Each open file has its own ASID and page tables (hpu_mmu.c) and a drm_mm
 * of the device addresses [HPU_VA_START, HPU_VA_END) it has mapped.  A
 * mapping covers a range of a buffer (HBM offsets in the leaves) or of the
 * caller's memory, pinned long-term and DMA-mapped page by page (bus
 * addresses in HPU_PTE_HOST leaves).  Mappings without DRM_HPU_VM_MAP_WRITE
 * get leaves without HPU_PTE_WRITE (the device has no "no read" permission)
 * and their pages are mapped DMA_TO_DEVICE.  A writable mapping's pages are
 * mapped DMA_BIDIRECTIONAL.  Each page is mapped once for the device in
 * each direction (struct hpu_host_dma), for all the mappings that hold it:
 * the DMA API does not let the device write through two mappings of one
 * cacheline (CPU cache maintenance of one would undo the other's), and a
 * process may map a page writable many times (libhpu registers buffers
 * that share pages).  A mapping takes its pages' references a batch at a
 * time, so that a big one does not hold the device-wide table's lock for
 * long.  At unbind they are all unmapped.  Without FIXED, the driver takes
 * the hint if it is free, else the highest free range, and leaves an
 * unmapped guard page after the mapping.
 *
 * Unmapping clears the leaves at once, so jobs that touch the range later
 * fault.  What a job already running may still use (the pinned pages, the
 * buffer) is released only once the context's jobs submitted before the
 * unmap have ended, on kernel queues and on its user queues (up to their PI
 * at the unmap): until then the mapping waits on vm->zombies, and is
 * reaped by the next VM ioctl or stats query, or at close.
 */
#include <linux/dma-mapping.h>
#include <linux/lockdep.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>

#include "hpu_ctx.h"
#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_gem.h"
#include "hpu_vm.h"

struct hpu_mapping {
	struct drm_mm_node node;	/* its device addresses and any guard page */
	u64 size;			/* bytes mapped from node.start */
	u32 flags;			/* DRM_HPU_VM_MAP_* */

	/* A buffer mapping: [offset, offset + size) of bo. */
	struct hpu_bo *bo;		/* holds a reference */
	u64 offset;

	/* A host mapping. */
	struct page **pages;
	dma_addr_t *dma;		/* each page's bus address */
	unsigned long npages;
	struct mm_struct *mm;		/* charged (pinned_vm) for the pages */

	/* Once unmapped, while jobs may still use it. */
	struct list_head zombie_link;
	struct dma_fence *fences[HPU_NUM_QUEUES];
	struct hpu_uq_marks uq_marks;
};

/*
 * An entry of hdev->host_dma.pages: the page's bus address (below 2^52: the
 * DMA mask) in pages, and in the low bits how many mappings hold the page.
 */
#define HPU_HOST_DMA_REF_BITS 20
#define HPU_HOST_DMA_REF_MAX ((1ul << HPU_HOST_DMA_REF_BITS) - 1)

static void *hpu_host_dma_entry(dma_addr_t dma, unsigned long refs)
{
	return xa_mk_value((unsigned long)(dma >> PAGE_SHIFT) << HPU_HOST_DMA_REF_BITS | refs);
}

static dma_addr_t hpu_host_dma_addr(void *entry)
{
	return (dma_addr_t)(xa_to_value(entry) >> HPU_HOST_DMA_REF_BITS) << PAGE_SHIFT;
}

static unsigned long hpu_host_dma_refs(void *entry)
{
	return xa_to_value(entry) & HPU_HOST_DMA_REF_MAX;
}

static enum dma_data_direction hpu_mapping_dir(const struct hpu_mapping *map)
{
	return map->flags & DRM_HPU_VM_MAP_WRITE ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;
}

/* The table of the pages mapped in direction @dir. */
static struct xarray *hpu_host_dma_table(struct hpu_device *hdev, enum dma_data_direction dir)
{
	return dir == DMA_TO_DEVICE ? &hdev->host_dma.ro_pages : &hdev->host_dma.pages;
}

/* The bus address of @page for a mapping in direction @dir: its first, or one more reference. */
static int hpu_host_dma_get_locked(struct hpu_device *hdev, enum dma_data_direction dir,
				   struct page *page, dma_addr_t *dma)
{
	struct xarray *xa = hpu_host_dma_table(hdev, dir);
	unsigned long pfn = page_to_pfn(page);
	void *entry;
	int ret;

	lockdep_assert_held(&hdev->host_dma.lock);

	if (hdev->host_dma.gone)
		return -ENODEV;
	entry = xa_load(xa, pfn);
	if (entry) {
		if (hpu_host_dma_refs(entry) == HPU_HOST_DMA_REF_MAX)
			return -ENOMEM;
		*dma = hpu_host_dma_addr(entry);
		/* What the CPU wrote since the device's first mapping of the page. */
		dma_sync_single_for_device(hpu_dev(hdev), *dma, PAGE_SIZE, dir);
		/* In place: allocates nothing, cannot fail. */
		xa_store(xa, pfn, hpu_host_dma_entry(*dma, hpu_host_dma_refs(entry) + 1),
			 GFP_KERNEL);
		return 0;
	}

	*dma = dma_map_page(hpu_dev(hdev), page, 0, PAGE_SIZE, dir);
	if (dma_mapping_error(hpu_dev(hdev), *dma))
		return -ENOMEM;
	ret = xa_err(xa_store(xa, pfn, hpu_host_dma_entry(*dma, 1), GFP_KERNEL));
	if (ret)
		dma_unmap_page(hpu_dev(hdev), *dma, PAGE_SIZE, dir);
	return ret;
}

/*
 * Drop a mapping's reference to @page: the last one unmaps it.  Once the
 * device is gone, every page was unmapped already (hpu_host_dma_unplug()).
 */
static void hpu_host_dma_put_locked(struct hpu_device *hdev, enum dma_data_direction dir,
				    struct page *page)
{
	struct xarray *xa = hpu_host_dma_table(hdev, dir);
	unsigned long pfn = page_to_pfn(page);
	void *entry = xa_load(xa, pfn);
	bool mapped = !hdev->host_dma.gone;
	dma_addr_t dma;

	lockdep_assert_held(&hdev->host_dma.lock);

	if (WARN_ON_ONCE(!entry))
		return;
	dma = hpu_host_dma_addr(entry);
	if (hpu_host_dma_refs(entry) > 1) {
		/* What the device wrote through this mapping, for the CPU. */
		if (mapped && dir != DMA_TO_DEVICE)
			dma_sync_single_for_cpu(hpu_dev(hdev), dma, PAGE_SIZE, dir);
		xa_store(xa, pfn, hpu_host_dma_entry(dma, hpu_host_dma_refs(entry) - 1),
			 GFP_KERNEL);
		return;
	}
	xa_erase(xa, pfn);
	if (mapped)
		dma_unmap_page(hpu_dev(hdev), dma, PAGE_SIZE, dir);
}

/*
 * Pages a mapping takes or drops per hold of the device-wide host_dma.lock.
 * Each page's reference stands alone, so a big mapping lets go between
 * batches: held for all of 256 MiB, the lock kept every other process's
 * VM_MAP and VM_UNMAP of host memory waiting ~40 ms under TCG (bench-vmmap).
 */
#define HPU_HOST_DMA_BATCH 512

/* Undo the DMA mappings of the first @n pages of @map. */
static void hpu_vm_dma_unmap(struct hpu_device *hdev, struct hpu_mapping *map, unsigned long n)
{
	unsigned long i = 0, end;

	while (i < n) {
		end = min(n, i + HPU_HOST_DMA_BATCH);
		mutex_lock(&hdev->host_dma.lock);
		for (; i < end; i++)
			hpu_host_dma_put_locked(hdev, hpu_mapping_dir(map), map->pages[i]);
		mutex_unlock(&hdev->host_dma.lock);
		cond_resched();
	}
}

/* Give each pinned page of @map its bus address (map->npages of them). */
static int hpu_vm_dma_map(struct hpu_device *hdev, struct hpu_mapping *map)
{
	unsigned long i = 0, end;
	int ret = 0;

	while (i < map->npages && !ret) {
		end = min(map->npages, i + HPU_HOST_DMA_BATCH);
		mutex_lock(&hdev->host_dma.lock);
		for (; i < end; i++) {
			ret = hpu_host_dma_get_locked(hdev, hpu_mapping_dir(map), map->pages[i],
						      &map->dma[i]);
			if (ret)
				break;
		}
		mutex_unlock(&hdev->host_dma.lock);
		cond_resched();
	}
	if (ret)
		hpu_vm_dma_unmap(hdev, map, i);
	return ret;
}

/*
 * At unbind, the device stopped: unmap every host page for good, though
 * open files' mappings still hold them (the DMA API wants a device's
 * mappings gone with its driver); their references just drop from now on.
 */
void hpu_host_dma_unplug(struct hpu_device *hdev)
{
	struct hpu_host_dma *hd = &hdev->host_dma;
	enum dma_data_direction dir;
	unsigned long pfn;
	void *entry;

	mutex_lock(&hd->lock);
	for (dir = DMA_BIDIRECTIONAL; dir <= DMA_TO_DEVICE; dir++)
		xa_for_each(hpu_host_dma_table(hdev, dir), pfn, entry)
			dma_unmap_page(hpu_dev(hdev), hpu_host_dma_addr(entry), PAGE_SIZE, dir);
	hd->gone = true;
	mutex_unlock(&hd->lock);
}

static void hpu_host_dma_fini(struct drm_device *drm, void *data)
{
	struct hpu_host_dma *hd = data;

	/* Every mapping is gone with the last file. */
	WARN_ON(!xa_empty(&hd->pages) || !xa_empty(&hd->ro_pages));
	xa_destroy(&hd->pages);
	xa_destroy(&hd->ro_pages);
	mutex_destroy(&hd->lock);
}

int hpu_host_dma_init(struct hpu_device *hdev)
{
	struct hpu_host_dma *hd = &hdev->host_dma;

	mutex_init(&hd->lock);
	xa_init(&hd->pages);
	xa_init(&hd->ro_pages);
	hd->gone = false;
	return drmm_add_action_or_reset(&hdev->drm, hpu_host_dma_fini, hd);
}

/* Long-term pins count against RLIMIT_MEMLOCK, as RDMA's do. */
static int hpu_vm_charge_pinned(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 total = atomic64_add_return(npages, &mm->pinned_vm);

	if (total > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

/* Pin [@uaddr, @uaddr + @size) of the caller and map it for the device. */
static int hpu_vm_pin_host(struct hpu_device *hdev, struct hpu_mapping *map,
			   u64 uaddr, u64 size)
{
	unsigned long npages = size >> PAGE_SHIFT, pinned = 0;
	/*
	 * Pin for writing even when the device only reads, if the process
	 * may write: a read pin of a page never written pins the shared zero
	 * page (or one copy-on-write will replace), and the device would miss
	 * what the process writes there afterwards.
	 */
	unsigned int gup = FOLL_LONGTERM | FOLL_WRITE;
	int ret;

	if (npages > INT_MAX)
		return -ENOMEM;

	/* The limit first: a huge request must fail cleanly, not in the allocator. */
	ret = hpu_vm_charge_pinned(current->mm, npages);
	if (ret)
		return ret;
	map->pages = hpu_fault_alloc(npages * sizeof(*map->pages)) ? NULL :
		     kvmalloc_array(npages, sizeof(*map->pages), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!map->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}

	while (pinned < npages) {
		ret = hpu_fault_alloc((npages - pinned) << PAGE_SHIFT) ? -ENOMEM :
		      pin_user_pages_fast(uaddr + (pinned << PAGE_SHIFT), npages - pinned, gup,
					  map->pages + pinned);
		if (ret == -EFAULT && !(map->flags & DRM_HPU_VM_MAP_WRITE) &&
		    (gup & FOLL_WRITE)) {
			/*
			 * A read-only VMA: the process cannot replace its pages
			 * either.  Not any failure: one for want of memory
			 * retried for reading would pin pages never written as
			 * the zero page.
			 */
			gup &= ~FOLL_WRITE;
			continue;
		}
		if (ret <= 0) {
			ret = ret ?: -EFAULT;
			goto err_unpin;
		}
		pinned += ret;
	}

	map->npages = npages;
	map->dma = hpu_fault_alloc(npages * sizeof(*map->dma)) ? NULL :
		   kvmalloc_array(npages, sizeof(*map->dma), GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!map->dma) {
		ret = -ENOMEM;
		goto err_unpin;
	}
	ret = hpu_vm_dma_map(hdev, map);
	if (ret)
		goto err_free_dma;

	map->mm = current->mm;
	mmgrab(map->mm);
	return 0;

err_free_dma:
	kvfree(map->dma);
err_unpin:
	unpin_user_pages(map->pages, pinned);
	kvfree(map->pages);
	map->pages = NULL;
err_uncharge:
	atomic64_sub(npages, &current->mm->pinned_vm);
	return ret;
}

static void hpu_vm_unpin_host(struct hpu_device *hdev, struct hpu_mapping *map)
{
	hpu_vm_dma_unmap(hdev, map, map->npages);
	kvfree(map->dma);
	unpin_user_pages_dirty_lock(map->pages, map->npages,
				    map->flags & DRM_HPU_VM_MAP_WRITE);
	atomic64_sub(map->npages, &map->mm->pinned_vm);
	mmdrop(map->mm);
	kvfree(map->pages);
}

/* Count @bytes more (or fewer) of host memory pinned by the context and by all files. */
static void hpu_vm_add_pinned_locked(struct hpu_ctx *ctx, s64 bytes)
{
	lockdep_assert_held(&ctx->vm.lock);

	WRITE_ONCE(ctx->vm.host_pinned, ctx->vm.host_pinned + bytes);
	atomic64_add(bytes, &ctx->hdev->usage.host_pinned);
}

/* Give back what @map holds; its leaves and VA range are already gone. */
static void hpu_vm_release_locked(struct hpu_ctx *ctx, struct hpu_mapping *map)
{
	struct hpu_vm *vm = &ctx->vm;
	unsigned int q;

	lockdep_assert_held(&vm->lock);

	if (map->bo) {
		hpu_bo_put(map->bo);
	} else {
		hpu_vm_unpin_host(ctx->hdev, map);
		hpu_vm_add_pinned_locked(ctx, -(s64)map->size);
	}
	for (q = 0; q < HPU_NUM_QUEUES; q++)
		dma_fence_put(map->fences[q]);
	kfree(map);
}

static bool hpu_mapping_idle(struct hpu_ctx *ctx, struct hpu_mapping *map)
{
	unsigned int q;

	for (q = 0; q < HPU_NUM_QUEUES; q++)
		if (map->fences[q] && !dma_fence_is_signaled(map->fences[q]))
			return false;
	return hpu_uq_marks_passed(ctx->hdev, &map->uq_marks);
}

/* Release the unmapped mappings no job can use any more. */
static void hpu_vm_reap_locked(struct hpu_ctx *ctx)
{
	struct hpu_mapping *map, *tmp;

	lockdep_assert_held(&ctx->vm.lock);

	list_for_each_entry_safe(map, tmp, &ctx->vm.zombies, zombie_link) {
		if (!hpu_mapping_idle(ctx, map))
			continue;
		list_del(&map->zombie_link);
		hpu_vm_release_locked(ctx, map);
	}
}

/* Bytes of host memory the context has pinned, after reaping. */
u64 hpu_vm_host_pinned(struct hpu_ctx *ctx)
{
	u64 pinned;

	mutex_lock(&ctx->vm.lock);
	hpu_vm_reap_locked(ctx);
	pinned = ctx->vm.host_pinned;
	mutex_unlock(&ctx->vm.lock);
	return pinned;
}

static struct hpu_mapping *hpu_vm_find_locked(struct hpu_vm *vm, u64 va)
{
	struct drm_mm_node *node;

	lockdep_assert_held(&vm->lock);

	drm_mm_for_each_node_in_range(node, &vm->mm, va, va + 1)
		if (node->start == va)
			return container_of(node, struct hpu_mapping, node);
	return NULL;
}

/*
 * Give @map (of map->size bytes) its device addresses: exactly @va with
 * FIXED (-EEXIST if any of it is taken); else @va if it is free, else the
 * highest free range, 2 MiB aligned for mappings of 2 MiB or more.  So the
 * driver's choices stay away from the low addresses callers tend to fix.
 * A mapping the driver places is followed by an unmapped guard page, so
 * that a job running off its end faults instead of reaching a neighbour.
 */
static int hpu_vm_alloc_va_locked(struct hpu_vm *vm, struct hpu_mapping *map,
				  u64 va, bool fixed)
{
	u64 size = map->size, span = size + HPU_MMU_PAGE_SIZE;
	u64 align = size >= HPU_MMU_HUGE_SIZE ? HPU_MMU_HUGE_SIZE :
						HPU_MMU_PAGE_SIZE;
	int ret;

	lockdep_assert_held(&vm->lock);

	if (fixed) {
		map->node.start = va;
		map->node.size = size;
		ret = drm_mm_reserve_node(&vm->mm, &map->node);
		return ret == -ENOSPC ? -EEXIST : ret;
	}
	if (va >= HPU_VA_START && va < HPU_VA_END && span <= HPU_VA_END - va) {
		map->node.start = va;
		map->node.size = span;
		if (!drm_mm_reserve_node(&vm->mm, &map->node))
			return 0;
		memset(&map->node, 0, sizeof(map->node));
	}
	ret = drm_mm_insert_node_in_range(&vm->mm, &map->node, span, align, 0,
					  HPU_VA_START, HPU_VA_END,
					  DRM_MM_INSERT_HIGH);
	return ret == -ENOSPC ? -ENOMEM : ret;
}

/* Write the leaves of @map, which has its VA range. */
static int hpu_vm_write_ptes_locked(struct hpu_vm *vm, struct hpu_mapping *map)
{
	u64 va = map->node.start, size = map->size, done = 0;
	u64 flags = map->flags & DRM_HPU_VM_MAP_WRITE ? HPU_PTE_WRITE : 0;
	int ret;

	lockdep_assert_held(&vm->lock);

	if (map->bo) {
		u64 want = map->offset, end = map->offset + size, pos = 0;
		struct hpu_bo_chunk *c;

		list_for_each_entry(c, &map->bo->chunks, link) {
			u64 cs = pos, ce = pos + c->node.size, from, to;

			pos = ce;
			if (ce <= want || cs >= end)
				continue;
			from = max(cs, want);
			to = min(ce, end);
			ret = hpu_pgtable_map(&vm->pgt, va + (from - want),
					      c->node.start + (from - cs),
					      to - from, flags);
			if (ret)
				goto err_unmap;
			done = to - want;
		}
	} else {
		unsigned long i, run;

		/* A run of pages at consecutive bus addresses at a time. */
		for (i = 0; i < map->npages; i += run) {
			for (run = 1; i + run < map->npages &&
			     map->dma[i + run] == map->dma[i] + run * PAGE_SIZE; run++)
				;
			ret = hpu_pgtable_map(&vm->pgt, va + done, map->dma[i],
					      run * PAGE_SIZE, flags | HPU_PTE_HOST);
			if (ret)
				goto err_unmap;
			done += run * PAGE_SIZE;
		}
	}
	return 0;

err_unmap:
	hpu_pgtable_unmap(&vm->pgt, va, done);
	return ret;
}

/* The rules of uapi/drm/hpu_accel.h that need no lookup. */
static int hpu_vm_map_check(const struct drm_hpu_vm_map *args)
{
	const u64 page = HPU_MMU_PAGE_SIZE;

	if (args->flags & ~DRM_HPU_VM_MAP_FLAGS_ALL)
		return -EINVAL;
	if (!(args->flags & (DRM_HPU_VM_MAP_READ | DRM_HPU_VM_MAP_WRITE)))
		return -EINVAL;
	if (!args->size || !IS_ALIGNED(args->size, page) ||
	    args->size > HPU_VA_END - HPU_VA_START)
		return -EINVAL;
	if (!IS_ALIGNED(args->va, page))
		return -EINVAL;
	if ((args->flags & DRM_HPU_VM_MAP_FIXED) &&
	    (args->va < HPU_VA_START || args->va > HPU_VA_END - args->size))
		return -EINVAL;

	if (args->handle) {
		if (args->user_ptr || !IS_ALIGNED(args->offset, page))
			return -EINVAL;
	} else {
		/* Host pages are pinned whole. */
		if (args->offset || !PAGE_ALIGNED(args->user_ptr) ||
		    !PAGE_ALIGNED(args->size) ||
		    args->user_ptr > U64_MAX - args->size)
			return -EINVAL;
	}
	return 0;
}

int hpu_ioctl_vm_map(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct hpu_device *hdev = to_hpu_device(drm);
	struct hpu_ctx *ctx = file->driver_priv;
	struct drm_hpu_vm_map *args = data;
	struct hpu_vm *vm = &ctx->vm;
	struct hpu_mapping *map;
	int ret;

	ret = hpu_vm_map_check(args);
	if (ret)
		return ret;

	/* Charged to the caller's memcg: a file may make many mappings. */
	map = hpu_fault_alloc(sizeof(*map)) ? NULL : kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
	if (!map)
		return -ENOMEM;
	map->size = args->size;
	map->flags = args->flags;
	INIT_LIST_HEAD(&map->zombie_link);

	if (args->handle) {
		map->bo = hpu_bo_lookup(file, args->handle);
		if (!map->bo) {
			ret = -ENOENT;
			goto err_free_map;
		}
		if (args->offset > map->bo->size ||
		    args->size > map->bo->size - args->offset) {
			ret = -EINVAL;
			goto err_put_bo;
		}
		map->offset = args->offset;
	} else {
		ret = hpu_vm_pin_host(hdev, map, args->user_ptr, args->size);
		if (ret)
			goto err_free_map;
	}

	mutex_lock(&vm->lock);
	hpu_vm_reap_locked(ctx);
	ret = hpu_vm_alloc_va_locked(vm, map, args->va,
				     args->flags & DRM_HPU_VM_MAP_FIXED);
	if (ret)
		goto err_unlock;
	ret = hpu_vm_write_ptes_locked(vm, map);
	if (ret)
		goto err_remove_node;
	if (!map->bo)
		hpu_vm_add_pinned_locked(ctx, args->size);
	args->va = map->node.start;
	mutex_unlock(&vm->lock);
	return 0;

err_remove_node:
	drm_mm_remove_node(&map->node);
err_unlock:
	mutex_unlock(&vm->lock);
	if (!map->bo)
		hpu_vm_unpin_host(hdev, map);
err_put_bo:
	if (map->bo)
		hpu_bo_put(map->bo);
err_free_map:
	kfree(map);
	return ret;
}

int hpu_ioctl_vm_unmap(struct drm_device *drm, void *data,
		       struct drm_file *file)
{
	struct hpu_ctx *ctx = file->driver_priv;
	struct drm_hpu_vm_unmap *args = data;
	struct hpu_vm *vm = &ctx->vm;
	struct hpu_mapping *map;

	if (args->flags || args->pad)
		return -EINVAL;
	if (!IS_ALIGNED(args->va, HPU_MMU_PAGE_SIZE))
		return -EINVAL;

	mutex_lock(&vm->lock);
	hpu_vm_reap_locked(ctx);
	map = hpu_vm_find_locked(vm, args->va);
	if (!map) {
		mutex_unlock(&vm->lock);
		return -ENOENT;
	}

	/* Jobs that walk the range from now on fault ... */
	hpu_pgtable_unmap(&vm->pgt, map->node.start, map->size);
	drm_mm_remove_node(&map->node);
	/* ... and those submitted before may still be using it. */
	hpu_ctx_last_fences(ctx, map->fences);
	hpu_uq_mark(ctx, &map->uq_marks);
	if (hpu_mapping_idle(ctx, map))
		hpu_vm_release_locked(ctx, map);
	else
		list_add_tail(&map->zombie_link, &vm->zombies);
	mutex_unlock(&vm->lock);
	return 0;
}

/* Map [@start, @start + @size) onto the same HBM offsets (the driver's context). */
int hpu_vm_map_identity(struct hpu_ctx *ctx, u64 start, u64 size)
{
	int ret;

	mutex_lock(&ctx->vm.lock);
	ret = hpu_pgtable_map(&ctx->vm.pgt, start, start, size, HPU_PTE_WRITE);
	mutex_unlock(&ctx->vm.lock);
	return ret;
}

int hpu_vm_init(struct hpu_ctx *ctx)
{
	struct hpu_vm *vm = &ctx->vm;
	int ret;

	mutex_init(&vm->lock);
	INIT_LIST_HEAD(&vm->zombies);
	vm->host_pinned = 0;
	drm_mm_init(&vm->mm, HPU_VA_START, HPU_VA_END - HPU_VA_START);

	ret = hpu_pgtable_init(ctx->hdev, &vm->pgt, ctx->asid, ctx->user, &vm->lock);
	if (ret) {
		drm_mm_takedown(&vm->mm);
		mutex_destroy(&vm->lock);
	}
	return ret;
}

/* At close, once no job of the context can run any more. */
void hpu_vm_fini(struct hpu_ctx *ctx)
{
	struct hpu_vm *vm = &ctx->vm;
	struct hpu_mapping *map, *tmp;
	struct drm_mm_node *node, *next;

	mutex_lock(&vm->lock);
	/* Out of the context table first: the device can no longer reach any of it. */
	hpu_pgtable_fini(&vm->pgt);
	list_for_each_entry_safe(map, tmp, &vm->zombies, zombie_link) {
		list_del(&map->zombie_link);
		hpu_vm_release_locked(ctx, map);
	}
	drm_mm_for_each_node_safe(node, next, &vm->mm) {
		map = container_of(node, struct hpu_mapping, node);
		drm_mm_remove_node(node);
		hpu_vm_release_locked(ctx, map);
	}
	mutex_unlock(&vm->lock);

	drm_mm_takedown(&vm->mm);
	mutex_destroy(&vm->lock);
}
