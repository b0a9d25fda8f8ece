/* SPDX-License-Identifier: MIT */
/*
 * hpu matrix engine: runs MME_GEMM packets (format in hpu_packets.h) with
 * OpenBLAS on the operands' host memory (hpu_tmem.h).
 *
 * Parameters the packet's rules refuse fail the job with BAD_KERNEL at the
 * packet, before any memory is touched; unmapped operands fail it with an
 * MMU fault.  A queue reset is noticed between batches and row blocks.
 */
#ifndef HPU_MME_H
#define HPU_MME_H

#include "hpu_pkt.h"

/* Beyond what the ABI asks: OpenBLAS takes dimensions and leading dimensions as int. */
#define HPU_MME_DIM_MAX 0x7fffffffu

/* At device init: how many host threads OpenBLAS computes on. */
void hpu_mme_init(void);

enum hpu_pkt_status hpu_mme_gemm(struct hpu_job *job, const uint8_t *pkt);

#endif /* HPU_MME_H */
