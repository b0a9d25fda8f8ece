/* SPDX-License-Identifier: MIT */
/*
 * hpu device MMU: four-level page walk with 4 KiB pages and 2 MiB level-2 leaves.
 */
#include <errno.h>

#include "hdm_mmu.h"
#include "hpu_regs.h"

#define HDM_MMU_HUGE_LEVEL 2

/* Translate the page holding va: run covers va to the end of that page. */
static int hdm_mmu_walk(struct hdm_hbm *hbm, uint32_t asid, uint64_t va, bool write,
			struct hdm_mmu_run *run)
{
	uint64_t entry, table, page_size;
	unsigned int level;

	if (va >> HPU_MMU_VA_BITS)
		return -EFAULT;
	entry = hdm_hbm_ld64(hbm, HPU_MMU_CTX_TABLE + (uint64_t)asid * sizeof(uint64_t));
	for (level = 0;; level++) {
		/* entry points at a table: HUGE or HOST there is malformed. */
		if ((entry & (HPU_PTE_PRESENT | HPU_PTE_HUGE | HPU_PTE_HOST)) != HPU_PTE_PRESENT)
			return -EFAULT;
		/* Tables live in the MMU region: a context cannot point its walk at buffers. */
		table = entry & HPU_PTE_ADDR_MASK;
		if (table >= HPU_MMU_REGION_SIZE)
			return -EFAULT;
		entry = hdm_hbm_ld64(hbm, table + HPU_MMU_INDEX(va, level) * sizeof(uint64_t));
		if (level == HPU_MMU_LEVELS - 1 ||
		    (level == HDM_MMU_HUGE_LEVEL && (entry & HPU_PTE_HUGE)))
			break;
	}

	page_size = level == HDM_MMU_HUGE_LEVEL ? HPU_MMU_HUGE_SIZE : HPU_MMU_PAGE_SIZE;
	run->addr = entry & HPU_PTE_ADDR_MASK;
	run->host = entry & HPU_PTE_HOST;
	if (!(entry & HPU_PTE_PRESENT) || (level != HDM_MMU_HUGE_LEVEL && (entry & HPU_PTE_HUGE)) ||
	    (run->addr & (page_size - 1)) || (write && !(entry & HPU_PTE_WRITE)) ||
	    (!run->host && run->addr >= hdm_hbm_size(hbm)))
		return -EFAULT;
	run->addr += va & (page_size - 1);
	run->len = page_size - (va & (page_size - 1));
	return 0;
}

int hdm_mmu_translate(struct hdm_hbm *hbm, uint32_t asid, uint64_t va, uint64_t len, bool write,
		      struct hdm_mmu_run *run)
{
	struct hdm_mmu_run next;

	if (hdm_mmu_walk(hbm, asid, va, write, run))
		return -EFAULT;
	while (run->len < len && !hdm_mmu_walk(hbm, asid, va + run->len, write, &next) &&
	       next.host == run->host && next.addr == run->addr + run->len)
		run->len += next.len;
	if (run->len > len)
		run->len = len;
	return 0;
}
