/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hpu device MMU: address-space IDs, the table pages of the MMU region and
 * the page tables of each context.
 */
#ifndef HPU_MMU_H
#define HPU_MMU_H

#include <linux/idr.h>
#include <linux/mutex.h>
#include <linux/types.h>

struct hpu_device;
struct hpu_pt;
struct hpu_user;

/* The MMU region of HBM (BAR4) as the driver hands it out. */
struct hpu_mmu {
	/*
	 * Protects @used_pages, @dirty_pages, @next_page, @tables and @ctx_table, and
	 * serializes the writes to the context table.  Entries of a context's own tables are
	 * written under that context's lock (struct hpu_pgtable.lock, its
	 * vm.lock), inside which this one nests.  A leaf.
	 */
	struct mutex lock;
	unsigned long *used_pages;	/* one bit per 4 KiB page of the region */
	unsigned long *dirty_pages;	/* pages handed out since the reset at probe */
	unsigned int num_pages;
	unsigned int next_page;		/* where the next search starts */
	unsigned int tables;		/* table pages in use */
	u64 *ctx_table;			/* the context table's entries, for hpu_mmu_restore() */

	/* ASIDs of open files: 1 .. HPU_MMU_NUM_ASIDS - 1 (ASID 0 is the driver's). */
	struct ida asids;
};

/* The page tables of one address space. */
struct hpu_pgtable {
	struct hpu_device *hdev;
	/* The owner's lock: held for every call on this page table. */
	struct mutex *lock;
	struct hpu_pt *root;
	u32 asid;
	/*
	 * A file's tables are charged to it and to @user (hpu_limits.c); the
	 * driver's own (@user NULL) are not.
	 */
	struct hpu_user *user;
	unsigned int tables;		/* table pages it holds, under @lock */
};

int hpu_mmu_init(struct hpu_device *hdev);
int hpu_mmu_asid_alloc(struct hpu_device *hdev);
void hpu_mmu_asid_free(struct hpu_device *hdev, u32 asid);
unsigned int hpu_mmu_tables_used(struct hpu_device *hdev);
void hpu_mmu_restore(struct hpu_device *hdev);

int hpu_pgtable_init(struct hpu_device *hdev, struct hpu_pgtable *pgt,
		     u32 asid, struct hpu_user *user, struct mutex *lock);
void hpu_pgtable_fini(struct hpu_pgtable *pgt);
int hpu_pgtable_map(struct hpu_pgtable *pgt, u64 va, u64 addr, u64 size,
		    u64 pte_flags);
void hpu_pgtable_unmap(struct hpu_pgtable *pgt, u64 va, u64 size);

#endif /* HPU_MMU_H */
