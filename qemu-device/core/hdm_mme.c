/* SPDX-License-Identifier: MIT */
/*
 * hpu matrix engine: GEMM on OpenBLAS.  fp32 operands go to cblas_sgemm
 * straight from HBM.  bf16 ones go to oneDNN's dnnl_gemm_bf16bf16f32 (bf16
 * products accumulated in fp32, on the host's bf16 instructions: AVX512-BF16,
 * AMX) when the host has libdnnl.so.2 (Debian's PyTorch depends on it; looked
 * up at run time, so the device builds and runs without it), else they are
 * widened (exactly) to fp32 blocks for cblas_sgemm: Debian's OpenBLAS
 * declares cblas_sbgemm but is built without it.  oneDNN counts subnormal
 * inputs and products as zero.  A bf16 C is computed in fp32 and rounded
 * once.
 *
 * Steps (hdm_mme.h) run on several threads at once, each with working
 * buffers of its own.  OpenBLAS limited to one thread computes on its
 * caller's, and its pthread build (Debian's default) locks the table of
 * buffers it packs into, so such calls can overlap.  Its sequential build
 * does not lock, its OpenMP build runs its own threads: with those the MME
 * keeps to one thread.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_internal.h"
#include "hdm_kernel.h"
#include "hdm_le.h"
#include "hdm_mme.h"
#include "hdm_tmem.h"

#define HDM_GEMM_OFF(field) offsetof(struct hpu_pkt_mme_gemm, field)

/* What openblas_get_parallel() says of the pthread build. */
#define HDM_MME_OPENBLAS_PTHREADS 1

/* oneDNN's bf16 GEMM (dnnl.h, row-major as cblas): 0 on success. */
typedef int hdm_mme_dnnl_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k,
			      float alpha, const uint16_t *a, int64_t lda, const uint16_t *b,
			      int64_t ldb, float beta, float *c, int64_t ldc);
typedef void hdm_mme_omp_threads(int n);

/* Set once by hdm_mme_init(); NULL without libdnnl. */
static struct {
	hdm_mme_dnnl_gemm *gemm;
	hdm_mme_omp_threads *threads; /* its OpenMP's omp_set_num_threads() */
	bool off;                     /* hdm_mme_native_bf16(false) */
} hdm_mme_dnnl;

/* One operand as stored: batch matrices of rows x cols, rows ld elements apart. */
struct hdm_mme_operand {
	uint64_t va, ld, stride;
	uint64_t rows, cols;
	unsigned int esize;
	unsigned int slot; /* its range in the tmem set */
	uint8_t *host;     /* element 0 of matrix 0, once mapped */
};

/* Which block of a bf16 operand a working buffer holds. */
struct hdm_mme_held {
	const uint8_t *src; /* where it starts, NULL: none yet */
	uint64_t len, k;    /* its rows of op(A) or columns of op(B), and its length of k */
};

/* A part's fp32 working copies of bf16 blocks (or NULL), and the blocks of A and B they hold. */
struct hdm_mme_work {
	float *wa, *wb, *wc;
	struct hdm_mme_held a, b;
};

struct hdm_gemm {
	struct hdm_job *job;
	struct hdm_mme_operand a, b, c;
	uint32_t batch, m, n, k;
	bool trans_a, trans_b;
	float alpha, beta;
	struct hdm_mme_plan plan;
	uint64_t first;     /* the first step of this run: the GEMM yielded after the ones before */
	uint64_t next_step; /* __atomic */
	struct hdm_mme_work *work; /* nr_work of them, the first plan.parts with their buffers */
	uint64_t nr_work;
};

/*
 * What a GEMM decoded to, and so which block each step computes: its packet
 * (all its parameters) and where its operands were mapped.  A GEMM that
 * yielded goes on with the steps left only if it decodes to the same again.
 */
struct hdm_mme_decoded {
	uint8_t pkt[sizeof(struct hpu_pkt_mme_gemm)];
	const uint8_t *host[3];
};

_Static_assert(sizeof(struct hpu_pkt_mme_gemm) % sizeof(void *) == 0,
	       "a decoded GEMM has padding");
_Static_assert(sizeof(struct hdm_mme_decoded) <= HDM_JOB_DECODED_MAX,
	       "a decoded GEMM does not fit its job");

static float hdm_mme_f32(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Why the operand's layout is refused, or NULL; computes its byte range. */
static const char *hdm_mme_layout(const struct hdm_gemm *g, struct hdm_mme_operand *op,
				  uint64_t *lo, uint64_t *len)
{
	const uint64_t shape[3] = { g->batch, op->rows, op->cols };
	int64_t strides[3] = { 0, (int64_t)op->ld, 1 };

	if (op->ld < op->cols)
		return "a leading dimension is below its row length";
	if (op->ld > HDM_MME_DIM_MAX)
		return "a leading dimension is beyond 2^31 - 1";
	/* A single matrix has no batch stride to check. */
	if (g->batch > 1) {
		if (op->stride > INT64_MAX)
			return "a batch stride overflows";
		strides[0] = (int64_t)op->stride;
	}
	if (hdm_tmem_extent(op->va, 3, shape, strides, op->esize, lo, len))
		return "an operand's extent overflows";
	return NULL;
}

static void hdm_mme_operand(struct hdm_mme_operand *op, const uint8_t *pkt, size_t va_off,
			    size_t ld_off, size_t stride_off, uint64_t rows, uint64_t cols,
			    uint32_t dtype)
{
	op->va = hdm_ld_le64(pkt + va_off);
	op->ld = hdm_ld_le64(pkt + ld_off);
	op->stride = hdm_ld_le64(pkt + stride_off);
	op->rows = rows;
	op->cols = cols;
	op->esize = hdm_dtype_size(dtype);
}

/* Decode and check the packet, and collect its operands' ranges in set. */
static int hdm_mme_decode(struct hdm_job *job, const uint8_t *pkt, struct hdm_gemm *g,
			  struct hdm_tmem_set *set, unsigned int cpus)
{
	uint32_t flags = HPU_PKT_FLAGS(hdm_ld_le32(pkt));
	uint32_t dtype_ab = hdm_ld_le32(pkt + HDM_GEMM_OFF(dtype_ab));
	uint32_t dtype_c = hdm_ld_le32(pkt + HDM_GEMM_OFF(dtype_c));
	struct hdm_mme_operand *ops[3] = { &g->a, &g->b, &g->c };
	uint64_t lo, len;
	const char *why;
	unsigned int i;

	g->batch = hdm_ld_le32(pkt + HDM_GEMM_OFF(batch));
	g->m = hdm_ld_le32(pkt + HDM_GEMM_OFF(m));
	g->n = hdm_ld_le32(pkt + HDM_GEMM_OFF(n));
	g->k = hdm_ld_le32(pkt + HDM_GEMM_OFF(k));
	g->trans_a = flags & HPU_PKT_GEMM_TRANS_A;
	g->trans_b = flags & HPU_PKT_GEMM_TRANS_B;
	g->alpha = hdm_mme_f32(hdm_ld_le32(pkt + HDM_GEMM_OFF(alpha)));
	g->beta = hdm_mme_f32(hdm_ld_le32(pkt + HDM_GEMM_OFF(beta)));
	if ((dtype_ab != HPU_DTYPE_F32 && dtype_ab != HPU_DTYPE_BF16) ||
	    (dtype_c != HPU_DTYPE_F32 && dtype_c != HPU_DTYPE_BF16))
		return hdm_pkt_refuse(job, "a dtype is not F32 or BF16");
	if (!g->batch || !g->m || !g->n || !g->k)
		return hdm_pkt_refuse(job, "batch, m, n or k is 0");
	if (g->m > HDM_MME_DIM_MAX || g->n > HDM_MME_DIM_MAX || g->k > HDM_MME_DIM_MAX)
		return hdm_pkt_refuse(job, "m, n or k is beyond 2^31 - 1");
	if (hdm_mme_plan(&g->plan, g->batch, g->m, g->n, g->k, cpus))
		return hdm_pkt_refuse(job, "more than 2^64 - 1 blocks to compute");
	hdm_mme_operand(&g->a, pkt, HDM_GEMM_OFF(a), HDM_GEMM_OFF(lda), HDM_GEMM_OFF(stride_a),
			g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, dtype_ab);
	hdm_mme_operand(&g->b, pkt, HDM_GEMM_OFF(b), HDM_GEMM_OFF(ldb), HDM_GEMM_OFF(stride_b),
			g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, dtype_ab);
	hdm_mme_operand(&g->c, pkt, HDM_GEMM_OFF(c), HDM_GEMM_OFF(ldc), HDM_GEMM_OFF(stride_c),
			g->m, g->n, dtype_c);
	for (i = 0; i < 3; i++) {
		why = hdm_mme_layout(g, ops[i], &lo, &len);
		if (why)
			return hdm_pkt_refuse(job, "%s", why);
		/* C is written (and read when beta is not 0). */
		ops[i]->slot = hdm_tmem_add(set, lo, len, ops[i] == &g->c);
	}
	return 0;
}

/*
 * Widen a rows x cols bf16 block, rows ld apart, to a compact fp32 one.  Whole
 * 16-bit loads and stores (little-endian host, hdm_kernel.h) let the compiler
 * make both loops vector code.
 */
static void hdm_mme_widen(float *dst, const uint8_t *src, uint64_t rows, uint64_t cols,
			  uint64_t ld)
{
	uint64_t r, c;
	uint16_t v;

	for (r = 0; r < rows; r++, src += ld * 2, dst += cols) {
		for (c = 0; c < cols; c++) {
			memcpy(&v, src + 2 * c, sizeof(v));
			dst[c] = hdm_bf16_to_f32(v);
		}
	}
}

/* Round a compact rows x cols fp32 block into bf16 rows ld apart. */
static void hdm_mme_narrow(uint8_t *dst, const float *src, uint64_t rows, uint64_t cols,
			   uint64_t ld)
{
	uint64_t r, c;
	uint16_t v;

	for (r = 0; r < rows; r++, dst += ld * 2, src += cols) {
		for (c = 0; c < cols; c++) {
			v = hdm_f32_to_bf16(src[c]);
			memcpy(dst + 2 * c, &v, sizeof(v));
		}
	}
}

static uint64_t hdm_mme_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t hdm_mme_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t hdm_mme_div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* Length of the blocks cutting len: about one per HDM_MME_PART_MACS of macs, at most max_len. */
static uint64_t hdm_mme_block(uint64_t len, double macs, uint64_t max_len)
{
	uint64_t blocks = len / HDM_MME_MIN_BLOCK;

	if (blocks < 2)
		blocks = len / HDM_MME_SHORT_BLOCK;
	if (macs / HDM_MME_PART_MACS < (double)blocks)
		blocks = (uint64_t)(macs / HDM_MME_PART_MACS);
	blocks = hdm_mme_max(blocks, hdm_mme_div_up(len, hdm_mme_max(max_len, 1)));
	return hdm_mme_div_up(len, hdm_mme_max(blocks, 1));
}

int hdm_mme_plan(struct hdm_mme_plan *plan, uint32_t batch, uint32_t m, uint32_t n, uint32_t k,
		 unsigned int cpus)
{
	double macs = (double)m * n * k, worth = batch * macs / HDM_MME_PART_MACS;
	uint64_t kc = hdm_mme_div_up(k, hdm_mme_div_up(k, HDM_MME_BLOCK_K));
	/* The most columns a block of op(B) of kc rows has in a working buffer. */
	uint64_t max_cols = hdm_mme_min(n, HDM_MME_STEP_ELEMS / kc);
	/* Bounded work per call, and bounded working memory for bf16 operands; 1 at least. */
	uint64_t max_rows = hdm_mme_min(HDM_MME_STEP_MACS / (max_cols * kc),
					HDM_MME_STEP_ELEMS / hdm_mme_max(max_cols, kc));
	uint64_t blocks;

	plan->block_k = kc;
	plan->block_rows = hdm_mme_block(m, macs, max_rows);
	if (plan->block_rows == m)
		plan->block_cols = hdm_mme_block(n, macs, max_cols);
	else
		plan->block_cols = hdm_mme_div_up(n, hdm_mme_div_up(n, max_cols));
	if (__builtin_mul_overflow(hdm_mme_div_up(m, plan->block_rows),
				   hdm_mme_div_up(n, plan->block_cols), &blocks) ||
	    __builtin_mul_overflow(blocks, (uint64_t)batch, &plan->steps))
		return -1;
	plan->parts = hdm_mme_min(cpus, plan->steps);
	if (worth < (double)plan->parts)
		plan->parts = worth < 1 ? 1 : (uint64_t)worth;
	return 0;
}

/*
 * Working buffers for each part, as many parts as HDM_MME_WORK_MAX holds,
 * fewer if the host runs short; false if none.
 */
static bool hdm_mme_alloc(struct hdm_gemm *g)
{
	bool bf16_ab = g->a.esize == 2, bf16_c = g->c.esize == 2;
	uint64_t rows = g->plan.block_rows, cols = g->plan.block_cols, kc = g->plan.block_k, p;
	/* Each at most HDM_MME_STEP_ELEMS (hdm_mme_plan()). */
	uint64_t a_len = bf16_ab ? rows * kc : 0, b_len = bf16_ab ? kc * cols : 0;
	uint64_t c_len = bf16_c ? rows * cols : 0;
	uint64_t part = (a_len + b_len + c_len) * sizeof(float) + sizeof(*g->work);
	struct hdm_mme_work *w;

	g->plan.parts = hdm_mme_min(g->plan.parts, HDM_MME_WORK_MAX / part);
	g->work = calloc(g->plan.parts, sizeof(*g->work));
	g->nr_work = g->work ? g->plan.parts : 0;
	for (p = 0; p < g->nr_work; p++) {
		w = &g->work[p];
		w->wa = a_len ? malloc(a_len * sizeof(float)) : NULL;
		w->wb = b_len ? malloc(b_len * sizeof(float)) : NULL;
		w->wc = c_len ? malloc(c_len * sizeof(float)) : NULL;
		if ((bf16_ab && (!w->wa || !w->wb)) || (bf16_c && !w->wc))
			break;
	}
	g->plan.parts = p;
	return p;
}

static void hdm_mme_free(struct hdm_gemm *g)
{
	uint64_t p;

	for (p = 0; p < g->nr_work; p++) {
		free(g->work[p].wa);
		free(g->work[p].wb);
		free(g->work[p].wc);
	}
	free(g->work);
}

/*
 * The fp32 block at src (len rows of op(A) or columns of op(B), k of k) in dst,
 * its rows cols apart, widened unless there.
 */
static const float *hdm_mme_stage(float *dst, struct hdm_mme_held *held, const uint8_t *src,
				  uint64_t len, uint64_t k, uint64_t rows, uint64_t cols, uint64_t ld)
{
	if (held->src != src || held->len != len || held->k != k) {
		hdm_mme_widen(dst, src, rows, cols, ld);
		*held = (struct hdm_mme_held){ .src = src, .len = len, .k = k };
	}
	return dst;
}

/*
 * A chunk of a bf16 block by oneDNN, from the operands as stored (op(A)'s
 * rows x kc at a, op(B)'s kc x cols at b) into fp32 c; false if there is no
 * oneDNN or it refused (the caller widens).  Its OpenMP runs on the calling
 * thread alone: the parts are the MME's threads.
 */
static bool hdm_mme_bf16_native(const struct hdm_gemm *g, const uint8_t *a, const uint8_t *b,
				uint64_t rows, uint64_t cols, uint64_t kc, float beta, float *c,
				uint64_t ldc)
{
	if (!hdm_mme_dnnl.gemm || __atomic_load_n(&hdm_mme_dnnl.off, __ATOMIC_RELAXED))
		return false;
	hdm_mme_dnnl.threads(1);
	return !hdm_mme_dnnl.gemm(g->trans_a ? 'T' : 'N', g->trans_b ? 'T' : 'N', (int64_t)rows,
				  (int64_t)cols, (int64_t)kc, g->alpha, (const uint16_t *)a,
				  (int64_t)g->a.ld, (const uint16_t *)b, (int64_t)g->b.ld, beta, c,
				  (int64_t)ldc);
}

/*
 * Step s: block (i, j) of C's batch matrix bi, with a part's working buffers
 * w, in calls of block_k of k at most; stops between two if the job is
 * cancelled.
 */
static void hdm_mme_step(const struct hdm_gemm *g, struct hdm_mme_work *w, uint64_t s)
{
	uint64_t row_blocks = hdm_mme_div_up(g->m, g->plan.block_rows);
	uint64_t col_blocks = hdm_mme_div_up(g->n, g->plan.block_cols);
	uint64_t bi = s / col_blocks / row_blocks;
	uint64_t i = s / col_blocks % row_blocks * g->plan.block_rows;
	uint64_t j = s % col_blocks * g->plan.block_cols;
	uint64_t rows = hdm_mme_min(g->plan.block_rows, g->m - i);
	uint64_t cols = hdm_mme_min(g->plan.block_cols, g->n - j);
	uint64_t lda = g->a.ld, ldb = g->b.ld, ldc = g->c.ld, p, kc, lda_p, ldb_p;
	/* Stored A is k x m when transposed, stored B n x k: their blocks are columns, rows. */
	const uint8_t *a = g->a.host + (bi * g->a.stride + (g->trans_a ? i : i * lda)) * g->a.esize;
	const uint8_t *b = g->b.host + (bi * g->b.stride + (g->trans_b ? j * ldb : j)) * g->b.esize;
	/* Where the block's chunk of k moves to, in elements per element of k. */
	uint64_t a_step = g->trans_a ? lda : 1, b_step = g->trans_b ? 1 : ldb;
	uint8_t *c = g->c.host + (bi * g->c.stride + i * ldc + j) * g->c.esize;
	const uint8_t *a_p, *b_p;
	const float *af, *bf;
	float *cf = (float *)c, beta = g->beta;

	if (w->wc) {
		/* With beta 0, C is not read. */
		if (beta != 0.0f)
			hdm_mme_widen(w->wc, c, rows, cols, ldc);
		cf = w->wc;
		ldc = cols;
	}
	for (p = 0; p < g->k; p += kc) {
		kc = hdm_mme_min(g->plan.block_k, g->k - p);
		if (p && hdm_job_cancelled(g->job))
			return;
		a_p = a + p * a_step * g->a.esize;
		b_p = b + p * b_step * g->b.esize;
		af = (const float *)a_p;
		bf = (const float *)b_p;
		lda_p = lda;
		ldb_p = ldb;
		if (w->wa && hdm_mme_bf16_native(g, a_p, b_p, rows, cols, kc, beta, cf, ldc)) {
			beta = 1.0f;
			continue;
		}
		/* A batch stride of 0 repeats a block: a part widens it once. */
		if (w->wa) {
			lda_p = g->trans_a ? rows : kc;
			ldb_p = g->trans_b ? kc : cols;
			af = hdm_mme_stage(w->wa, &w->a, a_p, rows, kc, g->trans_a ? kc : rows,
					   lda_p, lda);
			bf = hdm_mme_stage(w->wb, &w->b, b_p, cols, kc, g->trans_b ? cols : kc,
					   ldb_p, ldb);
		}
		cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
			    g->trans_b ? CblasTrans : CblasNoTrans, (int)rows, (int)cols, (int)kc,
			    g->alpha, af, (int)lda_p, bf, (int)ldb_p, beta, cf, (int)ldc);
		/* Later chunks add to what the first left. */
		beta = 1.0f;
	}
	if (w->wc)
		hdm_mme_narrow(c, w->wc, rows, cols, g->c.ld);
}

/* Whether the GEMM yields before its next step: its slice over, a step of this run taken. */
static bool hdm_mme_yields(struct hdm_gemm *g)
{
	return __atomic_load_n(&g->next_step, __ATOMIC_RELAXED) > g->first &&
	       hdm_job_slice_over(g->job);
}

/*
 * Part p: steps in turn until none is left, the queue is reset or the GEMM
 * yields.  Every step taken is computed whole: a block's chunks of k add up
 * in C (in a working buffer for bf16), so a yield between them would lose
 * or change the sum.
 */
static void hdm_mme_part(void *ctx, uint64_t p)
{
	struct hdm_gemm *g = ctx;
	uint64_t s;

	while (!hdm_job_cancelled(g->job) && !hdm_mme_yields(g) &&
	       (s = __atomic_fetch_add(&g->next_step, 1, __ATOMIC_RELAXED)) < g->plan.steps)
		hdm_mme_step(g, &g->work[p], s);
}

static void hdm_mme_dnnl_open(void)
{
	void *lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return;
	/* Its OpenMP is a dependency of it: dlsym searches there too. */
	hdm_mme_dnnl.threads = (hdm_mme_omp_threads *)dlsym(lib, "omp_set_num_threads");
	if (hdm_mme_dnnl.threads)
		hdm_mme_dnnl.gemm = (hdm_mme_dnnl_gemm *)dlsym(lib, "dnnl_gemm_bf16bf16f32");
	if (!hdm_mme_dnnl.gemm)
		dlclose(lib);
}

void hdm_mme_init(void)
{
	static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;

	/*
	 * The MME spreads GEMMs over the TPC pool, whose threads sleep when
	 * idle; OpenBLAS's own workers would spin ~0.1 s of CPU after every
	 * call, taking host CPUs from the vCPUs.
	 */
	openblas_set_num_threads(1);
	pthread_once(&dnnl_once, hdm_mme_dnnl_open);
}

bool hdm_mme_native_bf16(bool on)
{
	__atomic_store_n(&hdm_mme_dnnl.off, !on, __ATOMIC_RELAXED);
	return hdm_mme_dnnl.gemm;
}

/*
 * Compute the mapped GEMM's steps, from where it yielded if it decodes as
 * it did then.  Past the job's slice it yields between two steps
 * (hdm_tmem_yield()).
 */
static enum hdm_pkt_status hdm_mme_run(struct hdm_job *job, struct hdm_gemm *g,
				       const uint8_t *pkt, struct hdm_tmem_set *set)
{
	struct hdm_mme_decoded d;
	uint64_t done;

	memset(&d, 0, sizeof(d));
	memcpy(d.pkt, pkt, sizeof(d.pkt));
	/* A staged operand's buffer is new at each step; the packet's VA says what it is. */
	d.host[0] = hdm_tmem_staged(set, g->a.slot) ? NULL : g->a.host;
	d.host[1] = hdm_tmem_staged(set, g->b.slot) ? NULL : g->b.host;
	d.host[2] = hdm_tmem_staged(set, g->c.slot) ? NULL : g->c.host;
	g->first = hdm_job_resume(job, &d, sizeof(d));
	if (g->first >= g->plan.steps)
		g->first = 0;
	g->next_step = g->first;
	hdm_tpc_pool_run(&job->core->tpc, hdm_mme_part, g, 0, g->plan.parts, NULL);
	done = hdm_mme_min(g->next_step, g->plan.steps);
	if (done < g->plan.steps && !hdm_job_cancelled(job)) {
		if (hdm_tmem_yield(job, set))
			return HDM_PKT_FAILED;
		hdm_job_suspend(job, &d, sizeof(d), done);
		return HDM_PKT_YIELDED;
	}
	/* A reset that stopped the steps fails the job here, as aborted. */
	return hdm_tmem_write_back(job, set) ? HDM_PKT_FAILED : HDM_PKT_DONE;
}

enum hdm_pkt_status hdm_mme_gemm(struct hdm_job *job, const uint8_t *pkt)
{
	struct hdm_gemm g = { .job = job };
	enum hdm_pkt_status status = HDM_PKT_FAILED;
	struct hdm_tmem_set set;
	unsigned int cpus;

	hdm_tmem_init(&set);
	cpus = openblas_get_parallel() == HDM_MME_OPENBLAS_PTHREADS ? job->core->tpc.cpus : 1;
	if (hdm_mme_decode(job, pkt, &g, &set, cpus) || hdm_tmem_map_operands(job, &set))
		return HDM_PKT_FAILED;
	g.a.host = set.r[g.a.slot].host;
	g.b.host = set.r[g.b.slot].host;
	g.c.host = set.r[g.c.slot].host;
	if (!hdm_mme_alloc(&g))
		hdm_tmem_oom(job, "GEMM working memory", job->pos);
	else
		status = hdm_mme_run(job, &g, pkt, &set);
	hdm_mme_free(&g);
	hdm_tmem_release(&set);
	return status;
}
