/* SPDX-License-Identifier: MIT */
/*
 * hpu matrix engine: GEMM on OpenBLAS.  fp32 operands go to cblas_sgemm
 * straight from HBM.  bf16 ones are widened (exactly) to fp32 blocks first:
 * Debian's OpenBLAS declares cblas_sbgemm but is built without it.  A bf16
 * C is computed in fp32 and rounded once.
 */
#include <cblas.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpu_core_internal.h"
#include "hpu_kernel.h"
#include "hpu_le.h"
#include "hpu_mme.h"
#include "hpu_tmem.h"

#define HPU_GEMM_OFF(field) offsetof(struct hpu_pkt_mme_gemm, field)

/* Multiply-adds per OpenBLAS call: tens of ms, the longest a queue reset waits for the MME. */
#define HPU_MME_STEP_MACS (1ull << 30)
/* Elements of an fp32 working block, so a step's buffers stay small. */
#define HPU_MME_STEP_ELEMS (1ull << 24)

/* One operand as stored: batch matrices of rows x cols, rows ld elements apart. */
struct hpu_mme_operand {
	uint64_t va, ld, stride;
	uint64_t rows, cols;
	unsigned int esize;
	unsigned int slot; /* its range in the tmem set */
	uint8_t *host;     /* element 0 of matrix 0, once mapped */
};

struct hpu_gemm {
	struct hpu_mme_operand a, b, c;
	uint32_t batch, m, n, k;
	bool trans_a, trans_b;
	float alpha, beta;
	uint64_t block_rows; /* rows of C per step */
	float *wa, *wb, *wc; /* fp32 working copies of bf16 operands, or NULL */
};

static float hpu_mme_f32(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Why the operand's layout is refused, or NULL; computes its byte range. */
static const char *hpu_mme_layout(const struct hpu_gemm *g, struct hpu_mme_operand *op,
				  uint64_t *lo, uint64_t *len)
{
	const uint64_t shape[3] = { g->batch, op->rows, op->cols };
	int64_t strides[3] = { 0, (int64_t)op->ld, 1 };

	if (op->ld < op->cols)
		return "a leading dimension is below its row length";
	if (op->ld > HPU_MME_DIM_MAX)
		return "a leading dimension is beyond 2^31 - 1";
	/* A single matrix has no batch stride to check. */
	if (g->batch > 1) {
		if (op->stride > INT64_MAX)
			return "a batch stride overflows";
		strides[0] = (int64_t)op->stride;
	}
	if (hpu_tmem_extent(op->va, 3, shape, strides, op->esize, lo, len))
		return "an operand's extent overflows";
	return NULL;
}

static void hpu_mme_operand(struct hpu_mme_operand *op, const uint8_t *pkt, size_t va_off,
			    size_t ld_off, size_t stride_off, uint64_t rows, uint64_t cols,
			    uint32_t dtype)
{
	op->va = hpu_ld_le64(pkt + va_off);
	op->ld = hpu_ld_le64(pkt + ld_off);
	op->stride = hpu_ld_le64(pkt + stride_off);
	op->rows = rows;
	op->cols = cols;
	op->esize = hpu_dtype_size(dtype);
}

/* Decode and check the packet, and collect its operands' ranges in set. */
static int hpu_mme_decode(struct hpu_job *job, const uint8_t *pkt, struct hpu_gemm *g,
			  struct hpu_tmem_set *set)
{
	uint32_t flags = HPU_PKT_FLAGS(hpu_ld_le32(pkt));
	uint32_t dtype_ab = hpu_ld_le32(pkt + HPU_GEMM_OFF(dtype_ab));
	uint32_t dtype_c = hpu_ld_le32(pkt + HPU_GEMM_OFF(dtype_c));
	struct hpu_mme_operand *ops[3] = { &g->a, &g->b, &g->c };
	uint64_t lo, len;
	const char *why;
	unsigned int i;

	g->batch = hpu_ld_le32(pkt + HPU_GEMM_OFF(batch));
	g->m = hpu_ld_le32(pkt + HPU_GEMM_OFF(m));
	g->n = hpu_ld_le32(pkt + HPU_GEMM_OFF(n));
	g->k = hpu_ld_le32(pkt + HPU_GEMM_OFF(k));
	g->trans_a = flags & HPU_PKT_GEMM_TRANS_A;
	g->trans_b = flags & HPU_PKT_GEMM_TRANS_B;
	g->alpha = hpu_mme_f32(hpu_ld_le32(pkt + HPU_GEMM_OFF(alpha)));
	g->beta = hpu_mme_f32(hpu_ld_le32(pkt + HPU_GEMM_OFF(beta)));
	if ((dtype_ab != HPU_DTYPE_F32 && dtype_ab != HPU_DTYPE_BF16) ||
	    (dtype_c != HPU_DTYPE_F32 && dtype_c != HPU_DTYPE_BF16))
		return hpu_pkt_refuse(job, "a dtype is not F32 or BF16");
	if (!g->batch || !g->m || !g->n || !g->k)
		return hpu_pkt_refuse(job, "batch, m, n or k is 0");
	if (g->m > HPU_MME_DIM_MAX || g->n > HPU_MME_DIM_MAX || g->k > HPU_MME_DIM_MAX)
		return hpu_pkt_refuse(job, "m, n or k is beyond 2^31 - 1");
	hpu_mme_operand(&g->a, pkt, HPU_GEMM_OFF(a), HPU_GEMM_OFF(lda), HPU_GEMM_OFF(stride_a),
			g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, dtype_ab);
	hpu_mme_operand(&g->b, pkt, HPU_GEMM_OFF(b), HPU_GEMM_OFF(ldb), HPU_GEMM_OFF(stride_b),
			g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, dtype_ab);
	hpu_mme_operand(&g->c, pkt, HPU_GEMM_OFF(c), HPU_GEMM_OFF(ldc), HPU_GEMM_OFF(stride_c),
			g->m, g->n, dtype_c);
	for (i = 0; i < 3; i++) {
		why = hpu_mme_layout(g, ops[i], &lo, &len);
		if (why)
			return hpu_pkt_refuse(job, why);
		/* C is written (and read when beta is not 0). */
		ops[i]->slot = hpu_tmem_add(set, lo, len, ops[i] == &g->c);
	}
	return 0;
}

/* Widen a rows x cols bf16 block, rows ld apart, to a compact fp32 one. */
static void hpu_mme_widen(float *dst, const uint8_t *src, uint64_t rows, uint64_t cols,
			  uint64_t ld)
{
	uint64_t r, c;

	for (r = 0; r < rows; r++, src += ld * 2, dst += cols)
		for (c = 0; c < cols; c++)
			dst[c] = hpu_bf16_to_f32((uint16_t)(src[2 * c] | src[2 * c + 1] << 8));
}

/* Round a compact rows x cols fp32 block into bf16 rows ld apart. */
static void hpu_mme_narrow(uint8_t *dst, const float *src, uint64_t rows, uint64_t cols,
			   uint64_t ld)
{
	uint64_t r, c;
	uint16_t v;

	for (r = 0; r < rows; r++, dst += ld * 2, src += cols) {
		for (c = 0; c < cols; c++) {
			v = hpu_f32_to_bf16(src[c]);
			dst[2 * c] = (uint8_t)v;
			dst[2 * c + 1] = (uint8_t)(v >> 8);
		}
	}
}

static uint64_t hpu_mme_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The fp32 working buffers a bf16 GEMM needs; false if the host has no memory for them. */
static bool hpu_mme_alloc(struct hpu_gemm *g)
{
	bool bf16_ab = g->a.esize == 2, bf16_c = g->c.esize == 2;

	/* Rows of C per step: a bounded amount of work and of working memory, at least one row. */
	g->block_rows = hpu_mme_min(HPU_MME_STEP_MACS / ((uint64_t)g->n * g->k),
				    hpu_mme_min(HPU_MME_STEP_ELEMS / g->k, HPU_MME_STEP_ELEMS / g->n));
	g->block_rows = hpu_mme_min(g->m, g->block_rows ? g->block_rows : 1);
	g->wa = bf16_ab ? malloc(g->block_rows * g->k * sizeof(float)) : NULL;
	g->wb = bf16_ab ? malloc((uint64_t)g->k * g->n * sizeof(float)) : NULL;
	g->wc = bf16_c ? malloc(g->block_rows * g->n * sizeof(float)) : NULL;
	return (!bf16_ab || (g->wa && g->wb)) && (!bf16_c || g->wc);
}

/* C rows [i, i + rows) of matrix bi; b is matrix bi of op(B) in fp32. */
static void hpu_mme_block(struct hpu_gemm *g, uint64_t bi, uint64_t i, uint64_t rows,
			  const float *b, uint64_t ldb)
{
	const uint8_t *a = g->a.host + bi * g->a.stride * g->a.esize;
	uint8_t *c = g->c.host + (bi * g->c.stride + i * g->c.ld) * g->c.esize;
	uint64_t lda = g->a.ld, ldc = g->c.ld;
	float *cf = (float *)c;

	/* Stored A is k x m when transposed: the block is columns i.., else rows i... */
	a += (g->trans_a ? i : i * g->a.ld) * g->a.esize;
	if (g->wa) {
		hpu_mme_widen(g->wa, a, g->trans_a ? g->k : rows, g->trans_a ? rows : g->k, lda);
		lda = g->trans_a ? rows : g->k;
		a = (const uint8_t *)g->wa;
	}
	if (g->wc) {
		/* With beta 0, C is not read. */
		if (g->beta != 0.0f)
			hpu_mme_widen(g->wc, c, rows, g->n, ldc);
		cf = g->wc;
		ldc = g->n;
	}
	cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
		    g->trans_b ? CblasTrans : CblasNoTrans, (int)rows, (int)g->n, (int)g->k,
		    g->alpha, (const float *)a, (int)lda, b, (int)ldb, g->beta, cf, (int)ldc);
	if (g->wc)
		hpu_mme_narrow(c, g->wc, rows, g->n, g->c.ld);
}

static int hpu_mme_run(struct hpu_job *job, struct hpu_gemm *g)
{
	uint64_t bi, i, ldb = g->b.ld;
	const uint8_t *b = NULL;

	for (bi = 0; bi < g->batch; bi++) {
		/* A batch stride of 0 reuses B: widen it once. */
		if (!b || g->b.stride) {
			b = g->b.host + bi * g->b.stride * g->b.esize;
			if (g->wb) {
				hpu_mme_widen(g->wb, b, g->b.rows, g->b.cols, g->b.ld);
				b = (const uint8_t *)g->wb;
				ldb = g->b.cols;
			}
		}
		for (i = 0; i < g->m; i += g->block_rows) {
			if (hpu_job_cancelled(job))
				return hpu_job_fail(job, HPU_EVENT_ABORTED, job->pos);
			hpu_mme_block(g, bi, i, hpu_mme_min(g->block_rows, g->m - i),
				      (const float *)b, ldb);
		}
	}
	return 0;
}

void hpu_mme_init(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	/*
	 * OpenBLAS's workers spin for about 0.1 s of CPU after every call: leave
	 * one host CPU to the vCPUs, so on a 2-CPU host the MME is one thread.
	 */
	openblas_set_num_threads(cpus > 2 ? (int)cpus - 1 : 1);
}

enum hpu_pkt_status hpu_mme_gemm(struct hpu_job *job, const uint8_t *pkt)
{
	struct hpu_gemm g = { 0 };
	struct hpu_tmem_set set;
	int err = -1;

	hpu_tmem_init(&set);
	if (hpu_mme_decode(job, pkt, &g, &set) || hpu_tmem_map(job, &set))
		return HPU_PKT_FAILED;
	g.a.host = set.r[g.a.slot].host;
	g.b.host = set.r[g.b.slot].host;
	g.c.host = set.r[g.c.slot].host;
	if (!hpu_mme_alloc(&g))
		hpu_tmem_oom(job, "GEMM working memory", job->pos);
	else if (!hpu_mme_run(job, &g))
		err = hpu_tmem_write_back(job, &set);
	free(g.wa);
	free(g.wb);
	free(g.wc);
	hpu_tmem_release(&set);
	return err ? HPU_PKT_FAILED : HPU_PKT_DONE;
}
