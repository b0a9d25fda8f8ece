// SPDX-License-Identifier: GPL-2.0
/*
 * hpu device MMU.
 *
 * The first HPU_MMU_REGION_SIZE bytes of HBM, reached through BAR4, hold
 * the context table (one entry per ASID) and every page table.  The driver
 * hands out the region's 4 KiB pages from a bitmap, one page per table, and
 * keeps a shadow of each table in kernel memory so that walks never read
 * the BAR.  A table page is zeroed when it is handed out again; the device
 * reset at probe cleared the pages never handed out.
 *
 * A context's tables are only ever walked by its own jobs.  Tables are not
 * freed while the context lives (an emptied table stays linked and is
 * reused by later mappings): freeing one under a running job could let the
 * job's walk read a page that another context has since reused.  They all
 * go in hpu_pgtable_fini(), after the context's jobs have ended.  A file's
 * tables count against its share and its user's (hpu_limits.c): -EDQUOT
 * past either; -ENOMEM once the region itself is full.
 *
 * Every BAR4 access is made inside drm_dev_enter(): once the device is
 * unplugged the shadow is still kept and freed, but the BAR is left alone.
 */
#include <linux/bitmap.h>
#include <linux/io.h>
#include <linux/lockdep.h>
#include <linux/slab.h>
#include <drm/drm_drv.h>
#include <drm/drm_managed.h>

#include "hpu_device.h"
#include "hpu_fault.h"
#include "hpu_limits.h"
#include "hpu_mmu.h"
#include "hpu_regs.h"

#define HPU_PT_ENTRIES 512
#define HPU_PT_LEAF_LEVEL (HPU_MMU_LEVELS - 1)
#define HPU_PT_HUGE_LEVEL 2

/* The kernel's copy of one table. */
struct hpu_pt {
	u32 page;		/* table page index in the MMU region */
	u32 live;		/* present entries */
	u64 *pte;		/* HPU_PT_ENTRIES entries, as the device sees them */
	struct hpu_pt **child;	/* next-level tables; NULL at the leaf level */
};

static u64 hpu_pt_offset(const struct hpu_pt *pt)
{
	return (u64)pt->page << HPU_MMU_PAGE_SHIFT;
}

static void hpu_mmu_write(struct hpu_device *hdev, u64 offset, u64 val)
{
	int idx;

	if (!drm_dev_enter(&hdev->drm, &idx))
		return;
	writeq(val, hdev->mmu_bar + offset);
	drm_dev_exit(idx);
}

/* BAR4 takes aligned 4- and 8-byte accesses only: no memset_io(). */
static void hpu_mmu_clear(struct hpu_device *hdev, u64 offset, u64 size)
{
	u64 i;
	int idx;

	if (!drm_dev_enter(&hdev->drm, &idx))
		return;
	for (i = 0; i < size; i += sizeof(u64))
		writeq(0, hdev->mmu_bar + offset + i);
	drm_dev_exit(idx);
}

/* Hand out a zeroed table page of the MMU region. */
static int hpu_mmu_page_alloc(struct hpu_device *hdev, u32 *page)
{
	struct hpu_mmu *mmu = &hdev->mmu;
	unsigned long p;
	bool dirty;

	mutex_lock(&mmu->lock);
	p = find_next_zero_bit(mmu->used_pages, mmu->num_pages, mmu->next_page);
	if (p >= mmu->num_pages)
		p = find_first_zero_bit(mmu->used_pages, mmu->num_pages);
	if (p >= mmu->num_pages) {
		mutex_unlock(&mmu->lock);
		return -ENOMEM;
	}
	__set_bit(p, mmu->used_pages);
	mmu->next_page = p + 1;
	WRITE_ONCE(mmu->tables, mmu->tables + 1); /* read locklessly by hpu_mmu_tables_used() */
	dirty = __test_and_set_bit(p, mmu->dirty_pages);
	mutex_unlock(&mmu->lock);

	/* Nothing of the page's last owner may show through. */
	if (dirty)
		hpu_mmu_clear(hdev, (u64)p << HPU_MMU_PAGE_SHIFT, HPU_MMU_PAGE_SIZE);
	*page = p;
	return 0;
}

static void hpu_mmu_page_free(struct hpu_device *hdev, u32 page)
{
	struct hpu_mmu *mmu = &hdev->mmu;

	mutex_lock(&mmu->lock);
	WARN_ON(!__test_and_clear_bit(page, mmu->used_pages));
	WRITE_ONCE(mmu->tables, mmu->tables - 1);
	mutex_unlock(&mmu->lock);
}

unsigned int hpu_mmu_tables_used(struct hpu_device *hdev)
{
	return READ_ONCE(hdev->mmu.tables);
}

/* Point @asid's context-table entry at @root, or clear it (@root NULL). */
static void hpu_mmu_set_context(struct hpu_device *hdev, u32 asid,
				const struct hpu_pt *root)
{
	u64 entry = root ? hpu_pt_offset(root) | HPU_PTE_PRESENT : 0;

	mutex_lock(&hdev->mmu.lock);
	hdev->mmu.ctx_table[asid] = entry;
	hpu_mmu_write(hdev, HPU_MMU_CTX_TABLE + asid * sizeof(u64), entry);
	mutex_unlock(&hdev->mmu.lock);
}

/*
 * A warm reset zeroed the context table and kept every other table: write
 * each live context's entry again (a device reset, before the engines run).
 */
void hpu_mmu_restore(struct hpu_device *hdev)
{
	struct hpu_mmu *mmu = &hdev->mmu;
	u32 asid;

	mutex_lock(&mmu->lock);
	for (asid = 0; asid < HPU_MMU_NUM_ASIDS; asid++)
		if (mmu->ctx_table[asid])
			hpu_mmu_write(hdev, HPU_MMU_CTX_TABLE + asid * sizeof(u64),
				      mmu->ctx_table[asid]);
	mutex_unlock(&mmu->lock);
}

int hpu_mmu_asid_alloc(struct hpu_device *hdev)
{
	/* -ENOSPC once every ASID is taken. */
	return hpu_fault_alloc(sizeof(u32)) ? -ENOMEM :
	       ida_alloc_range(&hdev->mmu.asids, 1, HPU_MMU_NUM_ASIDS - 1, GFP_KERNEL);
}

void hpu_mmu_asid_free(struct hpu_device *hdev, u32 asid)
{
	ida_free(&hdev->mmu.asids, asid);
}

/* drm release: every context, and so every table and ASID, is gone. */
static void hpu_mmu_fini(struct drm_device *drm, void *arg)
{
	struct hpu_mmu *mmu = arg;

	WARN_ON(mmu->tables);
	ida_destroy(&mmu->asids);
	kfree(mmu->ctx_table);
	bitmap_free(mmu->dirty_pages);
	bitmap_free(mmu->used_pages);
	mutex_destroy(&mmu->lock);
}

/* Lives as long as the DRM device: open files free their tables into it. */
int hpu_mmu_init(struct hpu_device *hdev)
{
	struct hpu_mmu *mmu = &hdev->mmu;
	unsigned int ctx_pages = DIV_ROUND_UP(HPU_MMU_NUM_ASIDS * sizeof(u64),
					      HPU_MMU_PAGE_SIZE);

	mmu->num_pages = HPU_MMU_REGION_SIZE >> HPU_MMU_PAGE_SHIFT;
	mmu->used_pages = bitmap_zalloc(mmu->num_pages, GFP_KERNEL);
	mmu->dirty_pages = bitmap_zalloc(mmu->num_pages, GFP_KERNEL);
	mmu->ctx_table = kcalloc(HPU_MMU_NUM_ASIDS, sizeof(*mmu->ctx_table), GFP_KERNEL);
	if (!mmu->used_pages || !mmu->dirty_pages || !mmu->ctx_table) {
		kfree(mmu->ctx_table);
		bitmap_free(mmu->dirty_pages);
		bitmap_free(mmu->used_pages);
		return -ENOMEM;
	}
	/* The context table comes first. */
	bitmap_set(mmu->used_pages, 0, ctx_pages);
	mmu->next_page = ctx_pages;
	mmu->tables = 0;
	mutex_init(&mmu->lock);
	ida_init(&mmu->asids);

	/*
	 * The device reset at probe cleared HBM: table pages start clean
	 * (dirty_pages is empty), and so does the context table.
	 */

	return drmm_add_action_or_reset(&hdev->drm, hpu_mmu_fini, mmu);
}

static void hpu_pt_free(struct hpu_pgtable *pgt, struct hpu_pt *pt)
{
	unsigned int i;

	if (pt->child)
		for (i = 0; i < HPU_PT_ENTRIES; i++)
			if (pt->child[i])
				hpu_pt_free(pgt, pt->child[i]);
	hpu_mmu_page_free(pgt->hdev, pt->page);
	if (pgt->user)
		hpu_user_uncharge_table(pgt->hdev, pgt->user);
	pgt->tables--;
	kfree(pt->child);
	kfree(pt->pte);
	kfree(pt);
}

static struct hpu_pt *hpu_pt_alloc(struct hpu_pgtable *pgt, unsigned int level)
{
	struct hpu_pt *pt;
	int ret;

	if (pgt->user) {
		ret = hpu_user_charge_table(pgt->hdev, pgt->user, pgt->tables);
		if (ret)
			return ERR_PTR(ret);
	}
	ret = -ENOMEM;
	pt = hpu_fault_alloc(sizeof(*pt)) ? NULL : kzalloc(sizeof(*pt), GFP_KERNEL);
	if (!pt)
		goto err_uncharge;
	pt->pte = kcalloc(HPU_PT_ENTRIES, sizeof(*pt->pte), GFP_KERNEL);
	if (!pt->pte)
		goto err_free_pt;
	if (level < HPU_PT_LEAF_LEVEL) {
		pt->child = hpu_fault_alloc(PAGE_SIZE) ? NULL :
			    kcalloc(HPU_PT_ENTRIES, sizeof(*pt->child), GFP_KERNEL);
		if (!pt->child)
			goto err_free_pte;
	}
	ret = hpu_mmu_page_alloc(pgt->hdev, &pt->page);
	if (ret)
		goto err_free_child;
	pgt->tables++;
	return pt;

err_free_child:
	kfree(pt->child);
err_free_pte:
	kfree(pt->pte);
err_free_pt:
	kfree(pt);
err_uncharge:
	if (pgt->user)
		hpu_user_uncharge_table(pgt->hdev, pgt->user);
	return ERR_PTR(ret);
}

static void hpu_pt_set(struct hpu_pgtable *pgt, struct hpu_pt *pt,
		       unsigned int i, u64 val)
{
	pt->pte[i] = val;
	hpu_mmu_write(pgt->hdev, hpu_pt_offset(pt) + i * sizeof(u64), val);
}

/* The table at @level covering @va, created on the way if @create. */
static struct hpu_pt *hpu_pt_walk(struct hpu_pgtable *pgt, u64 va,
				  unsigned int level, bool create)
{
	struct hpu_pt *pt = pgt->root;
	unsigned int l;

	for (l = 0; l < level; l++) {
		unsigned int i = HPU_MMU_INDEX(va, l);
		struct hpu_pt *child = pt->child[i];

		if (!child) {
			if (!create)
				return NULL;
			/* A huge leaf covers @va: the VA allocator let an overlap through. */
			if (WARN_ON(pt->pte[i]))
				return ERR_PTR(-EEXIST);
			child = hpu_pt_alloc(pgt, l + 1);
			if (IS_ERR(child))
				return child;
			pt->child[i] = child;
			hpu_pt_set(pgt, pt, i, hpu_pt_offset(child) | HPU_PTE_PRESENT);
			pt->live++;
		}
		pt = child;
	}
	return pt;
}

/*
 * Map [@va, @va + @size) to [@addr, @addr + @size) (HBM offsets, or bus
 * addresses with HPU_PTE_HOST in @pte_flags).  2 MiB leaves where both
 * sides are 2 MiB aligned and the level-2 entry is free, 4 KiB leaves
 * elsewhere.  The range must be unmapped; on failure nothing stays mapped.
 */
int hpu_pgtable_map(struct hpu_pgtable *pgt, u64 va, u64 addr, u64 size,
		    u64 pte_flags)
{
	u64 done = 0;
	int ret;

	lockdep_assert_held(pgt->lock);

	while (done < size) {
		u64 v = va + done, a = addr + done;
		struct hpu_pt *pt;
		unsigned int i;

		if (WARN_ON(a & ~HPU_PTE_ADDR_MASK)) {
			ret = -EINVAL;
			goto err_unmap;
		}

		if (size - done >= HPU_MMU_HUGE_SIZE &&
		    IS_ALIGNED(v | a, HPU_MMU_HUGE_SIZE)) {
			pt = hpu_pt_walk(pgt, v, HPU_PT_HUGE_LEVEL, true);
			if (IS_ERR(pt)) {
				ret = PTR_ERR(pt);
				goto err_unmap;
			}
			i = HPU_MMU_INDEX(v, HPU_PT_HUGE_LEVEL);
			if (!pt->pte[i]) {
				hpu_pt_set(pgt, pt, i, a | pte_flags | HPU_PTE_HUGE |
					   HPU_PTE_PRESENT);
				pt->live++;
				done += HPU_MMU_HUGE_SIZE;
				continue;
			}
			/* A (possibly emptied) table is there: use 4 KiB leaves in it. */
		}

		pt = hpu_pt_walk(pgt, v, HPU_PT_LEAF_LEVEL, true);
		if (IS_ERR(pt)) {
			ret = PTR_ERR(pt);
			goto err_unmap;
		}
		i = HPU_MMU_INDEX(v, HPU_PT_LEAF_LEVEL);
		if (WARN_ON(pt->pte[i])) {
			ret = -EEXIST;
			goto err_unmap;
		}
		hpu_pt_set(pgt, pt, i, a | pte_flags | HPU_PTE_PRESENT);
		pt->live++;
		done += HPU_MMU_PAGE_SIZE;
	}
	return 0;

err_unmap:
	hpu_pgtable_unmap(pgt, va, done);
	return ret;
}

/* Clear the leaves of [@va, @va + @size), as mapped by hpu_pgtable_map(). */
void hpu_pgtable_unmap(struct hpu_pgtable *pgt, u64 va, u64 size)
{
	u64 end = va + size;

	lockdep_assert_held(pgt->lock);

	while (va < end) {
		struct hpu_pt *pt = hpu_pt_walk(pgt, va, HPU_PT_HUGE_LEVEL, false);
		unsigned int i;

		if (!pt) {
			va = round_down(va, HPU_MMU_HUGE_SIZE) + HPU_MMU_HUGE_SIZE;
			continue;
		}
		i = HPU_MMU_INDEX(va, HPU_PT_HUGE_LEVEL);
		if (pt->pte[i] & HPU_PTE_HUGE) {
			WARN_ON(!IS_ALIGNED(va, HPU_MMU_HUGE_SIZE) ||
				end - va < HPU_MMU_HUGE_SIZE);
			hpu_pt_set(pgt, pt, i, 0);
			pt->live--;
			va = round_down(va, HPU_MMU_HUGE_SIZE) + HPU_MMU_HUGE_SIZE;
			continue;
		}
		pt = pt->child[i];
		if (!pt) {
			va = round_down(va, HPU_MMU_HUGE_SIZE) + HPU_MMU_HUGE_SIZE;
			continue;
		}
		i = HPU_MMU_INDEX(va, HPU_PT_LEAF_LEVEL);
		if (pt->pte[i]) {
			hpu_pt_set(pgt, pt, i, 0);
			pt->live--;
		}
		va += HPU_MMU_PAGE_SIZE;
	}
}

/* An empty address space for @asid, live in the context table on return. */
int hpu_pgtable_init(struct hpu_device *hdev, struct hpu_pgtable *pgt,
		     u32 asid, struct hpu_user *user, struct mutex *lock)
{
	pgt->hdev = hdev;
	pgt->lock = lock;
	pgt->asid = asid;
	pgt->user = user;
	pgt->tables = 0;
	pgt->root = hpu_pt_alloc(pgt, 0);
	if (IS_ERR(pgt->root)) {
		int ret = PTR_ERR(pgt->root);

		pgt->root = NULL;
		return ret;
	}
	hpu_mmu_set_context(hdev, asid, pgt->root);
	return 0;
}

/*
 * Take the address space out of the context table and free its tables.
 * No job of the context may be running.
 */
void hpu_pgtable_fini(struct hpu_pgtable *pgt)
{
	lockdep_assert_held(pgt->lock);
	if (!pgt->root)
		return;
	hpu_mmu_set_context(pgt->hdev, pgt->asid, NULL);
	hpu_pt_free(pgt, pgt->root);
	pgt->root = NULL;
}
