/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu per-context device address space: VA allocation, mappings of buffers
 * and of pinned host memory.
 */
#ifndef HPU_VM_H
#define HPU_VM_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/xarray.h>
#include <drm/drm_mm.h>

#include "hpu_mmu.h"

struct drm_device;
struct drm_file;
struct hpu_ctx;
struct hpu_device;

/* Device addresses a context may map: [1 MiB, 128 TiB). */
#define HPU_VA_START (1ull << 20)
#define HPU_VA_END (1ull << 47)

struct hpu_vm {
	/*
	 * Protects @mm and the mappings in it, the page tables @pgt, @zombies
	 * and @host_pinned.  Held across page-table writes; never while
	 * pinning user pages or waiting for a job (though uqs.lock, taken
	 * under it, may be held by a user queue's reset).  mmu.lock, the HBM
	 * lock, uqs.lock and ctx->fence_lock nest inside it.
	 */
	struct mutex lock;
	struct drm_mm mm;		/* allocated VA ranges: struct hpu_mapping */
	struct hpu_pgtable pgt;
	/* Unmapped, but jobs that may still use them have not all ended. */
	struct list_head zombies;
	u64 host_pinned;		/* bytes of host memory mapped (stats: READ_ONCE) */
};

/*
 * The device's DMA mappings of the host pages that mappings hold: one per
 * page and direction, however many mappings of however many files hold
 * it, so that no two DMA mappings the device may write through overlap.
 */
struct hpu_host_dma {
	/* Protects the rest; a leaf, taken alone or under a ctx->vm.lock. */
	struct mutex lock;
	/* pfn -> xa_mk_value(): the page's DMA address and its count of mappings. */
	struct xarray pages;		/* DMA_BIDIRECTIONAL: writable mappings' */
	struct xarray ro_pages;		/* DMA_TO_DEVICE: read-only mappings' */
	bool gone;			/* unbound: no page is DMA-mapped any more */
};

int hpu_host_dma_init(struct hpu_device *hdev);
void hpu_host_dma_unplug(struct hpu_device *hdev);

int hpu_vm_init(struct hpu_ctx *ctx);
int hpu_vm_map_identity(struct hpu_ctx *ctx, u64 start, u64 size);
void hpu_vm_fini(struct hpu_ctx *ctx);
u64 hpu_vm_host_pinned(struct hpu_ctx *ctx);

int hpu_ioctl_vm_map(struct drm_device *drm, void *data, struct drm_file *file);
int hpu_ioctl_vm_unmap(struct drm_device *drm, void *data, struct drm_file *file);

#endif /* HPU_VM_H */
