/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * hpu command-buffer packets, shared by the runtime (which builds command
 * buffers), the driver (which checks them) and the device model (which runs
 * them).  Little-endian; every packet starts with a __u32 header and is a
 * multiple of 8 bytes; packets follow each other with no gaps.
 *
 * Addresses in packets are device virtual addresses of the submitting
 * context, translated by the device MMU, except in the privileged packets,
 * which the driver alone appends after the user's packets.
 *
 * Version 1: bump HPU_PKT_VERSION only to add opcodes or flags.
 * Version 2: MME_GEMM and TPC_LAUNCH (operands and dtypes in hpu_kernels.h).
 * Version 3: CALL.
 * Version 4: user queues (descriptor and doorbell page, end of file).
 */
#ifndef HPU_PACKETS_H
#define HPU_PACKETS_H

#include <linux/types.h>

#include "hpu_kernels.h"

#define HPU_PKT_VERSION 4

/* A user command buffer is at most this long. */
#define HPU_CB_MAX_SIZE (64u << 10)

/* Header: opcode in bits 0-7, flags in bits 8-15, bits 16-31 zero. */
#define HPU_PKT_HEADER(opcode, flags) ((__u32)(opcode) | ((__u32)(flags) << 8))
#define HPU_PKT_OPCODE(header) ((header) & 0xff)
#define HPU_PKT_FLAGS(header) (((header) >> 8) & 0xff)
#define HPU_PKT_RESERVED(header) ((header) >> 16)

enum hpu_pkt_opcode {
	HPU_PKT_NOP = 0x00,
	HPU_PKT_LIN_DMA = 0x01,
	HPU_PKT_SIGNAL = 0x02,
	HPU_PKT_WAIT = 0x03,
	HPU_PKT_TIMESTAMP = 0x04,
	HPU_PKT_MME_GEMM = 0x05,   /* version 2 */
	HPU_PKT_TPC_LAUNCH = 0x06, /* version 2 */
	HPU_PKT_CALL = 0x07,       /* version 3 */
	/* Privileged: only in the driver's tail of a job. */
	HPU_PKT_WRITE_COMPLETION = 0x80,
	HPU_PKT_INTERRUPT = 0x81,
};

#define HPU_PKT_IS_PRIVILEGED(opcode) ((opcode) & 0x80)

struct hpu_pkt_nop {
	__u32 header;
	__u32 pad; /* must be 0 */
};

/* LIN_DMA flags */
#define HPU_PKT_LIN_DMA_MEMSET (1u << 0) /* fill dst with the low byte of src */

/* Copy size bytes from src to dst (any alignment; ranges must not overlap). */
struct hpu_pkt_lin_dma {
	__u32 header;
	__u32 pad; /* must be 0 */
	__u64 src;
	__u64 dst;
	__u64 size;
};

/* Atomically add value to the __u32 at addr (a sync object in memory). */
struct hpu_pkt_signal {
	__u32 header;
	__u32 value;
	__u64 addr; /* 4-byte aligned */
};

/* Stall this queue until the __u32 at addr is >= value. */
struct hpu_pkt_wait {
	__u32 header;
	__u32 value;
	__u64 addr; /* 4-byte aligned */
};

/* Write the device clock, in ns, as a __u64 to addr, once earlier packets are done. */
struct hpu_pkt_timestamp {
	__u32 header;
	__u32 pad; /* must be 0 */
	__u64 addr; /* 8-byte aligned */
};

/* MME_GEMM flags */
#define HPU_PKT_GEMM_TRANS_A (1u << 0) /* A is stored k x m */
#define HPU_PKT_GEMM_TRANS_B (1u << 1) /* B is stored n x k */

/*
 * Matrix engine, row-major: for every b < batch,
 *   C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b]
 * with op(A) m x k, op(B) k x n, C m x n, accumulated in fp32.  Leading
 * dimensions are in elements (lda >= the stored row length, ...); batch
 * strides are in elements, 0 reusing one matrix for every b.  With beta 0,
 * C is not read.  Operands must not overlap C.
 */
struct hpu_pkt_mme_gemm {
	__u32 header;
	__u32 dtype_ab; /* HPU_DTYPE_F32 or HPU_DTYPE_BF16, both A and B */
	__u32 dtype_c;  /* HPU_DTYPE_F32 or HPU_DTYPE_BF16 */
	__u32 batch;    /* >= 1 */
	__u32 m, n, k;  /* each >= 1 */
	__u32 pad;      /* must be 0 */
	__u64 a, b, c;
	__u64 lda, ldb, ldc;
	__u64 stride_a, stride_b, stride_c;
	__u32 alpha, beta; /* IEEE-754 binary32 bit patterns */
};

/* Largest parameter block a TPC_LAUNCH may name. */
#define HPU_KERNEL_PARAMS_MAX \
	(sizeof(struct hpu_kernel_params) + HPU_KERNEL_MAX_TENSORS * sizeof(struct hpu_tensor_desc))

/*
 * Tensor engines: run the kernel described by the parameter block at
 * params (struct hpu_kernel_params and its tensor descriptors, read through
 * the MMU when the packet runs), its index space split across the TPCs.
 */
struct hpu_pkt_tpc_launch {
	__u32 header;
	__u32 params_size; /* bytes: the block with exactly its num_tensors descriptors */
	__u64 params;      /* 8-byte aligned */
};

/* A CALL's command buffer is at most this long. */
#define HPU_CALL_MAX_SIZE (64u << 20)

/*
 * Run the command buffer of size bytes at addr (device memory of the
 * context, read through the MMU as it runs, so what is there when the
 * packet runs is what runs), then go on after this packet: a recipe
 * uploaded once and launched by one small job.  The callee holds user
 * packets only, and no CALL (ILLEGAL_PACKET otherwise, PRIV_PACKET for a
 * privileged one); a WAIT in it stalls the queue as in the caller.
 */
struct hpu_pkt_call {
	__u32 header;
	__u32 pad;  /* must be 0 */
	__u64 addr; /* 8-byte aligned */
	__u64 size; /* a multiple of 8, 8 .. HPU_CALL_MAX_SIZE */
};

/* Privileged: write value to the bus address addr, bypassing the MMU. */
struct hpu_pkt_write_completion {
	__u32 header;
	__u32 pad; /* must be 0 */
	__u64 addr; /* 8-byte aligned */
	__u64 value;
};

/* Privileged: raise MSI-X vector (1..HPU_MSIX_VECTORS-1). */
struct hpu_pkt_interrupt {
	__u32 header;
	__u32 vector;
};

/*
 * User queues (DRM_IOCTL_HPU_UQUEUE_CREATE): a process writes descriptors
 * into its ring, which lies in its own device address space, and then the
 * new producer index into its doorbell page.  The device reads the ring and
 * the command buffers through the MMU in the process's context, so nothing
 * they name can reach beyond it; privileged packets fail the job.
 */
struct hpu_uq_desc {
	__u64 cb_va;   /* device VA of the command buffer */
	__u32 cb_size; /* bytes, a multiple of 8, at most HPU_CB_MAX_SIZE */
	__u32 flags;   /* must be 0 */
	__u64 tag;     /* the submitter's, reported with the job's event */
	/* Written by the device before CI passes the job: 0 or enum hpu_uq_status.  Jobs a queue reset dropped keep the submitter's value. */
	__u32 status;
	__u32 pad;     /* must be 0 */
};

/* Why a user-queue job failed; the values of the device's event types. */
enum hpu_uq_status {
	HPU_UQ_STATUS_MMU_FAULT = 1,
	HPU_UQ_STATUS_ILLEGAL_PACKET = 2,
	HPU_UQ_STATUS_PRIV_PACKET = 3,
	HPU_UQ_STATUS_DMA_ERROR = 4,
	HPU_UQ_STATUS_ABORTED = 5,
	HPU_UQ_STATUS_BAD_KERNEL = 6,
};

/*
 * The doorbell page: 32-bit registers.  Writing PI (free running) hands the
 * device the descriptors up to it: it may not move back nor more than the
 * ring size past CI.  CI counts the jobs ended, completed or failed; ERRORS
 * those that failed.  The device has read a descriptor and its command
 * buffer once CI has passed it.
 */
#define HPU_UQ_DB_PAGE_SIZE 4096u
#define HPU_UQ_DB_PI 0x0     /* RW */
#define HPU_UQ_DB_CI 0x4     /* RO */
#define HPU_UQ_DB_ERRORS 0x8 /* RO */

#endif /* HPU_PACKETS_H */
