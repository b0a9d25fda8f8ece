/* SPDX-License-Identifier: MIT */
/*
 * hpu matrix engine: runs MME_GEMM packets (format in hpu_packets.h) with
 * OpenBLAS on the operands' host memory (hdm_tmem.h), on the TPC pool's
 * threads (hdm_tpc.h).
 *
 * Parameters the packet's rules refuse fail the job with BAD_KERNEL at the
 * packet, before any memory is touched; unmapped operands fail it with an
 * MMU fault.  Work and host memory are bounded per call whatever the shapes:
 * a queue reset is noticed between calls.  Once the job's slice is over
 * (hdm_qman.h), a GEMM whose operands all lie in HBM yields between two
 * blocks of C and goes on with the blocks left when the job runs again,
 * decoded and checked anew.
 */
#ifndef HDM_MME_H
#define HDM_MME_H

#include "hdm_pkt.h"

/* Beyond what the ABI asks: OpenBLAS takes dimensions and leading dimensions as int. */
#define HDM_MME_DIM_MAX 0x7fffffffu

/* Multiply-adds worth a host thread: about 0.2 ms here, far more than waking one. */
#define HDM_MME_PART_MACS (1ull << 23)
/* Fewest rows (or columns) worth a step: each OpenBLAS call repacks the other operand (~3 %). */
#define HDM_MME_MIN_BLOCK 256u
/* ... unless that leaves a GEMM worth two threads in one block (the MLP's 200 x 128 x 784). */
#define HDM_MME_SHORT_BLOCK 64u

/*
 * Multiply-adds per OpenBLAS call at most: tens of ms, the longest a queue
 * reset waits for the MME, whatever the GEMM's size.
 */
#define HDM_MME_STEP_MACS (1ull << 30)
/* Most of k one call sums: a longer k is summed in chunks, C accumulating. */
#define HDM_MME_BLOCK_K (1ull << 20)
/* Elements of an fp32 working buffer at most (a widened block of A, B or C): 64 MiB. */
#define HDM_MME_STEP_ELEMS (1ull << 24)
/* Host memory of a GEMM's working buffers, all parts together, whatever its shapes. */
#define HDM_MME_WORK_MAX (1ull << 30)

/*
 * How a GEMM runs: every batch matrix of C is cut into blocks of block_rows
 * rows, or when that leaves one block (m is small) of block_cols columns;
 * columns are cut too where a block of B would not fit a working buffer.
 * A step computes one block with single-threaded OpenBLAS calls, one per
 * block_k of k; parts threads take the steps in turn.  The cut follows
 * from the shape alone, not from the host's CPUs: OpenBLAS's result for an
 * element depends (in its last bits) on where the element's block starts.
 */
struct hdm_mme_plan {
	uint64_t block_rows, block_cols, block_k;
	uint64_t steps; /* blocks of the whole batch */
	uint64_t parts; /* at most cpus and steps, about one per HDM_MME_PART_MACS */
};

/* 0, or -1 if the GEMM has more than 2^64 - 1 steps. */
int hdm_mme_plan(struct hdm_mme_plan *plan, uint32_t batch, uint32_t m, uint32_t n, uint32_t k,
		 unsigned int cpus);

/* At device init: OpenBLAS computes on its caller's thread alone; oneDNN looked up. */
void hdm_mme_init(void);

/*
 * Whether bf16 GEMMs go to oneDNN (on by default; tests run both ways);
 * whether the host has it.
 */
bool hdm_mme_native_bf16(bool on);

enum hdm_pkt_status hdm_mme_gemm(struct hdm_job *job, const uint8_t *pkt);

#endif /* HDM_MME_H */
