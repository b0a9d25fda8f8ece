/* SPDX-License-Identifier: MIT */
/*
 * hpu device MMU: translates a context's device virtual addresses through
 * the context table and page tables kept in HBM (format in hpu_regs.h).
 */
#ifndef HDM_MMU_H
#define HDM_MMU_H

#include <stdbool.h>
#include <stdint.h>

#include "hdm_hbm.h"

/* What a run of device virtual addresses maps to. */
struct hdm_mmu_run {
	uint64_t addr; /* HBM offset, or host bus address if host */
	uint64_t len;  /* bytes mapped contiguously from the VA, 1..the length asked for */
	bool host;
};

/*
 * Translate [va, va + len) (len > 0) of context asid (< HPU_MMU_NUM_ASIDS)
 * for a read or a write.  Returns 0 with the longest contiguous run starting
 * at va (every page re-translated; the run ends where the next page is not
 * contiguous, of the other kind, or not mapped), or -EFAULT if va itself has
 * no valid, permitted mapping.
 */
int hdm_mmu_translate(struct hdm_hbm *hbm, uint32_t asid, uint64_t va, uint64_t len, bool write,
		      struct hdm_mmu_run *run);

#endif /* HDM_MMU_H */
