/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the hpu device core's compute engines: MME_GEMM against
 * a double-precision reference and split over threads (bitwise the result
 * of one thread), TPC_LAUNCH's framework (parameter checks,
 * tensor mapping and staging, the split across TPCs) with test kernels,
 * every refusal and fault leaving memory untouched and the queue usable.
 *
 * The test kernels have ids the ABI does not use; the suite is linked with
 * --wrap=hdm_kernel_lookup so the engine finds them next to the library's,
 * and with --wrap=malloc and --wrap=calloc to weigh the engines' host memory.
 * Prints TAP.
 */
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdm_harness.h"
#include "hdm_kernel.h"
#include "hdm_mme.h"
#include "hdm_mmu.h"
#include "hdm_tpc.h"

/* HBM the test maps besides setup()'s: one run of 2 MiB pages, and 2 MiB pages out of order. */
#define VA_DATA 0x400000000ull
#define HBM_DATA (21ull << 30)
#define DATA_SIZE (96u << 20)
#define VA_SCAT 0x500000000ull
#define HBM_SCAT (22ull << 30)
#define SCAT_PAGES 4u
#define VA_RO 0x600000000ull /* a read-only HBM page */
#define PARAM_OFF 0xd00000u  /* host page of parameter blocks, at VA_HOST + PARAM_OFF */
#define PARAM_SIZE 0x10000u
#define VA_PARAM (VA_HOST + PARAM_OFF)

#define MME_ENGINE(q) (HPU_ENGINE_MME + (q) % hpu_test_cfg.num_mme)
#define REFUSED_LOGS 2 /* why, then the failed job */

/*
 * Host memory the device code holds while counting is on: the most at once
 * (a GEMM allocates its buffers when it starts or goes on after a yield,
 * and frees them when it ends or yields), and its largest allocation.
 */
void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void __real_free(void *p);

static struct {
	bool on;
	int64_t held;
	uint64_t peak, largest;
	size_t watch;     /* allocations of this size are counted, */
	uint64_t watched; /* here */
} allocs;

/* The largest of *at and v, atomically. */
static void atomic_max(uint64_t *at, uint64_t v)
{
	uint64_t old = __atomic_load_n(at, __ATOMIC_RELAXED);

	while (v > old &&
	       !__atomic_compare_exchange_n(at, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void *alloc_count(void *p, uint64_t bytes)
{
	int64_t held;

	if (!p || !__atomic_load_n(&allocs.on, __ATOMIC_RELAXED))
		return p;
	held = __atomic_add_fetch(&allocs.held, (int64_t)malloc_usable_size(p), __ATOMIC_RELAXED);
	atomic_max(&allocs.peak, held > 0 ? (uint64_t)held : 0);
	atomic_max(&allocs.largest, bytes);
	if (bytes == allocs.watch)
		__atomic_add_fetch(&allocs.watched, 1, __ATOMIC_RELAXED);
	return p;
}

void *__wrap_malloc(size_t size)
{
	return alloc_count(__real_malloc(size), size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return alloc_count(__real_calloc(n, size), (uint64_t)n * size);
}

void __wrap_free(void *p)
{
	if (p && __atomic_load_n(&allocs.on, __ATOMIC_RELAXED))
		__atomic_sub_fetch(&allocs.held, (int64_t)malloc_usable_size(p), __ATOMIC_RELAXED);
	__real_free(p);
}

static void alloc_start(void)
{
	allocs.held = 0;
	allocs.peak = 0;
	allocs.largest = 0;
	allocs.watched = 0;
	__atomic_store_n(&allocs.on, true, __ATOMIC_RELAXED);
}

/* What the MME promises, staged bytes (hdm_tmem.h) aside: bounded buffers, bounded in all. */
static void alloc_check(struct hpu_test *t, uint64_t staged, int line)
{
	__atomic_store_n(&allocs.on, false, __ATOMIC_RELAXED);
	if (allocs.largest > HDM_MME_STEP_ELEMS * sizeof(float) ||
	    allocs.peak > HDM_MME_WORK_MAX + staged)
		printf("# %llu bytes held at most, %llu in one allocation\n",
		       (unsigned long long)allocs.peak, (unsigned long long)allocs.largest);
	hpu_check(t, allocs.largest <= HDM_MME_STEP_ELEMS * sizeof(float),
		  "largest allocation within HDM_MME_STEP_ELEMS", line);
	hpu_check(t, allocs.peak <= HDM_MME_WORK_MAX + staged,
		  "memory held within HDM_MME_WORK_MAX", line);
}

static void map_compute(struct hpu_test *t)
{
	static const unsigned int order[SCAT_PAGES] = { 2, 0, 3, 1 };
	unsigned int i;

	setup(t);
	for (i = 0; i < DATA_SIZE / HPU_MMU_HUGE_SIZE; i++)
		pt_map_page(t, ASID, VA_DATA + i * HPU_MMU_HUGE_SIZE, HBM_DATA + i * HPU_MMU_HUGE_SIZE,
			    PTE_RW | HPU_PTE_HUGE);
	for (i = 0; i < SCAT_PAGES; i++)
		pt_map_page(t, ASID, VA_SCAT + i * HPU_MMU_HUGE_SIZE,
			    HBM_SCAT + order[i] * HPU_MMU_HUGE_SIZE, PTE_RW | HPU_PTE_HUGE);
	pt_map_page(t, ASID, VA_RO, HBM_DATA + DATA_SIZE, HPU_PTE_PRESENT);
	pt_map_host(t, ASID, PARAM_OFF, PARAM_SIZE);
}

/* Copy between test memory and the context's VAs, as the device sees them. */
static void va_copy(struct hpu_test *t, uint64_t va, void *buf, uint64_t len, bool to_device)
{
	uint8_t *p = buf;
	struct hdm_mmu_run run;
	uint8_t *mem;

	while (len) {
		if (hdm_mmu_translate(t->core->hbm, ASID, va, len, false, &run)) {
			printf("# test bug: VA 0x%llx unmapped\n", (unsigned long long)va);
			exit(2);
		}
		mem = run.host ? t->mem + (run.addr - HPU_TEST_MEM_BASE) :
				 hdm_hbm_span(t->core->hbm, run.addr, run.len, to_device);
		memcpy(to_device ? mem : p, to_device ? p : mem, run.len);
		va += run.len;
		p += run.len;
		len -= run.len;
	}
}

static void va_write(struct hpu_test *t, uint64_t va, const void *buf, uint64_t len)
{
	va_copy(t, va, (void *)buf, len, true);
}

static void va_read(struct hpu_test *t, uint64_t va, void *buf, uint64_t len)
{
	va_copy(t, va, buf, len, false);
}

static uint64_t hpu_rng = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	return xorshift64s(&hpu_rng);
}

/* A value in [-2, 2) of few bits, so bf16 holds it exactly. */
static float rnd_value(void)
{
	return (float)((int)(rnd() >> 58) - 32) / 16.0f;
}

/*
 * A value that dtype holds exactly but whose products and sums round in
 * fp32, so the order of a dot product shows in its bits: all 24 bits for
 * F32, a few bits scaled by 2^-8 .. 2^7 for BF16.
 */
static float rnd_rounding(uint32_t dtype)
{
	if (dtype == HPU_DTYPE_BF16)
		return ldexpf(rnd_value(), (int)(rnd() >> 60) - 8);
	return (float)((int64_t)(rnd() >> 40) - (1 << 23)) / (1 << 22);
}

static void store(uint8_t *p, uint32_t dtype, float v)
{
	hdm_kstore_f(dtype, p, v);
}

static double load(const uint8_t *p, uint32_t dtype)
{
	return hdm_kload_f(dtype, p);
}

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* ---- MME_GEMM ---- */

enum place { IN_HBM, IN_SCAT, IN_HOST };

/* A GEMM packet, in host order. */
struct gemm {
	uint32_t flags, dtype_ab, dtype_c, batch, m, n, k, pad;
	uint64_t a, b, c, lda, ldb, ldc, stride_a, stride_b, stride_c;
	float alpha, beta;
};

static void cb_gemm(struct hpu_cb *cb, const struct gemm *g)
{
	cb_u32(cb, HPU_PKT_HEADER(HPU_PKT_MME_GEMM, g->flags));
	cb_u32(cb, g->dtype_ab);
	cb_u32(cb, g->dtype_c);
	cb_u32(cb, g->batch);
	cb_u32(cb, g->m);
	cb_u32(cb, g->n);
	cb_u32(cb, g->k);
	cb_u32(cb, g->pad);
	cb_u64(cb, g->a);
	cb_u64(cb, g->b);
	cb_u64(cb, g->c);
	cb_u64(cb, g->lda);
	cb_u64(cb, g->ldb);
	cb_u64(cb, g->ldc);
	cb_u64(cb, g->stride_a);
	cb_u64(cb, g->stride_b);
	cb_u64(cb, g->stride_c);
	cb_u32(cb, f32_bits(g->alpha));
	cb_u32(cb, f32_bits(g->beta));
}

struct gemm_case {
	const char *name;
	uint32_t dtype_ab, dtype_c, flags;
	uint32_t batch, m, n, k;
	uint32_t pad_a, pad_b, pad_c; /* leading dimension beyond the row */
	int32_t gap_a, gap_b, gap_c;  /* batch stride beyond the matrix; -1: stride 0 */
	float alpha, beta;
	enum place pa, pb, pc;
	uint32_t check_rows; /* 0: check every row, else the rows around each multiple of it */
};

/* One operand: batch matrices of rows x cols in a test image of its extent. */
struct operand {
	uint32_t dtype, rows, cols;
	uint64_t ld, stride, bytes, va;
	uint8_t *img;
};

static void operand_init(struct operand *o, uint32_t dtype, uint32_t batch, uint32_t rows,
			 uint32_t cols, uint32_t pad, int32_t gap)
{
	uint64_t i;

	o->dtype = dtype;
	o->rows = rows;
	o->cols = cols;
	o->ld = cols + pad;
	o->stride = gap == -1 ? 0 : (uint64_t)((int64_t)(rows * o->ld) + gap);
	o->bytes = ((batch - 1) * o->stride + (rows - 1) * o->ld + cols) * hdm_dtype_size(dtype);
	o->img = malloc(o->bytes);
	/* Padding and gaps hold NaN: an engine reading them poisons its result. */
	for (i = 0; i < o->bytes / hdm_dtype_size(dtype); i++)
		store(o->img + i * hdm_dtype_size(dtype), dtype, NAN);
}

static uint8_t *operand_at(const struct operand *o, uint32_t b, uint32_t r, uint32_t c)
{
	return o->img + (b * o->stride + r * o->ld + c) * hdm_dtype_size(o->dtype);
}

/* Where an operand of this placement goes: crossing a page boundary where that matters. */
static uint64_t place_va(enum place p, unsigned int which, uint64_t bytes)
{
	switch (p) {
	case IN_SCAT:
		/* Straddle the boundary after page which: the two halves are not consecutive HBM. */
		return VA_SCAT + (which + 1) * HPU_MMU_HUGE_SIZE - bytes / 2;
	case IN_HOST:
		return VA_HOST + (which == 2 ? DST_OFF : SRC_OFF + which * (BUF_SIZE / 2));
	default:
		/* A, B (up to 64 MiB) at 8 MiB, C (up to 24 MiB) at 72 MiB: apart, not 64-byte aligned. */
		return VA_DATA + (which == 1 ? 8u << 20 : which == 2 ? 72u << 20 : 0) + 8 * which;
	}
}

static void gemm_ref(const struct gemm_case *c, const struct operand *a, const struct operand *b,
		     const struct operand *c0, uint32_t bi, uint32_t i, uint32_t j, double *ref,
		     double *scale)
{
	double sum = 0, mag = 0, x, y, c_in;
	uint32_t p;

	for (p = 0; p < c->k; p++) {
		x = load(c->flags & HPU_PKT_GEMM_TRANS_A ? operand_at(a, bi, p, i) :
							   operand_at(a, bi, i, p), a->dtype);
		y = load(c->flags & HPU_PKT_GEMM_TRANS_B ? operand_at(b, bi, j, p) :
							   operand_at(b, bi, p, j), b->dtype);
		sum += x * y;
		mag += fabs(x * y);
	}
	c_in = c->beta != 0.0f ? load(operand_at(c0, bi, i, j), c0->dtype) : 0;
	*ref = c->alpha * sum + c->beta * c_in;
	*scale = fabs(c->alpha) * mag + fabs(c->beta * c_in);
}

static bool row_checked(const struct gemm_case *c, uint32_t i)
{
	uint32_t r = c->check_rows;

	return !r || i % r < 2 || i % r >= r - 2 || i + 2 >= c->m;
}

/*
 * fp32 results: the reference in double, within fp32 accumulation error
 * (1e-5 of the magnitudes summed).  bf16 inputs are exact in fp32, so the
 * same holds; a bf16 C adds its rounding, 2^-8 of the result.
 */
static void gemm_check(struct hpu_test *t, const struct gemm_case *c, const struct operand *a,
		       const struct operand *b, const struct operand *c0,
		       const struct operand *got)
{
	unsigned int bad = 0;
	uint32_t bi, i, j;
	uint64_t e;
	double ref, scale, v, tol;

	for (bi = 0; bi < c->batch; bi++) {
		for (i = 0; i < c->m; i++) {
			if (!row_checked(c, i))
				continue;
			for (j = 0; j < c->n; j++) {
				gemm_ref(c, a, b, c0, bi, i, j, &ref, &scale);
				v = load(operand_at(got, bi, i, j), got->dtype);
				tol = 1e-5 * scale + 1e-30;
				if (got->dtype == HPU_DTYPE_BF16)
					tol += fabs(ref) / 256;
				if (!(fabs(v - ref) <= tol) && bad++ < 5)
					printf("# C[%u][%u][%u] = %g, expected %g\n", bi, i, j, v,
					       ref);
				/* Checked: mark it, so the padding comparison below skips it. */
				memcpy(operand_at(got, bi, i, j), operand_at(c0, bi, i, j),
				       hdm_dtype_size(got->dtype));
			}
		}
	}
	HPU_CHECK_EQ(t, bad, 0);
	/* Everything else of C's extent (padding, gaps, unchecked rows aside) is as it was. */
	for (e = 0, bad = 0; e < got->bytes; e++)
		bad += got->img[e] != c0->img[e];
	if (!c->check_rows)
		HPU_CHECK_EQ(t, bad, 0);
}

/* Operands of random values: of few bits, or rounding (rnd_rounding()). */
static void gemm_setup(const struct gemm_case *c, struct gemm *g, struct operand *a,
		       struct operand *b, struct operand *c0, bool rounding)
{
	bool ta = c->flags & HPU_PKT_GEMM_TRANS_A, tb = c->flags & HPU_PKT_GEMM_TRANS_B;
	uint32_t bi, r, col;

	operand_init(a, c->dtype_ab, c->batch, ta ? c->k : c->m, ta ? c->m : c->k, c->pad_a,
		     c->gap_a);
	operand_init(b, c->dtype_ab, c->batch, tb ? c->n : c->k, tb ? c->k : c->n, c->pad_b,
		     c->gap_b);
	operand_init(c0, c->dtype_c, c->batch, c->m, c->n, c->pad_c, c->gap_c);
	for (bi = 0; bi < c->batch; bi++) {
		for (r = 0; r < a->rows; r++)
			for (col = 0; col < a->cols; col++)
				store(operand_at(a, bi, r, col), a->dtype,
				      rounding ? rnd_rounding(a->dtype) : rnd_value());
		for (r = 0; r < b->rows; r++)
			for (col = 0; col < b->cols; col++)
				store(operand_at(b, bi, r, col), b->dtype,
				      rounding ? rnd_rounding(b->dtype) : rnd_value());
		/* With beta 0, C is not read: NaN there must not leak into the result. */
		for (r = 0; r < c0->rows; r++)
			for (col = 0; col < c0->cols; col++)
				store(operand_at(c0, bi, r, col), c0->dtype,
				      c->beta == 0.0f ? NAN :
				      rounding ? rnd_rounding(c0->dtype) : rnd_value());
	}
	a->va = place_va(c->pa, 0, a->bytes);
	b->va = place_va(c->pb, 1, b->bytes);
	c0->va = place_va(c->pc, 2, c0->bytes);
	*g = (struct gemm){
		.flags = c->flags, .dtype_ab = c->dtype_ab, .dtype_c = c->dtype_c,
		.batch = c->batch, .m = c->m, .n = c->n, .k = c->k,
		.a = a->va, .b = b->va, .c = c0->va, .lda = a->ld, .ldb = b->ld, .ldc = c0->ld,
		.stride_a = a->stride, .stride_b = b->stride, .stride_c = c0->stride,
		.alpha = c->alpha, .beta = c->beta,
	};
}

/* Bytes of the operands the engine stages (hdm_tmem.h): all but those in one run of HBM. */
static uint64_t gemm_staged(const struct gemm_case *c, const struct operand *a,
			    const struct operand *b, const struct operand *c0)
{
	return (c->pa != IN_HBM ? a->bytes : 0) + (c->pb != IN_HBM ? b->bytes : 0) +
	       (c->pc != IN_HBM ? c0->bytes : 0);
}

/*
 * Run g on queue 1, C first reset to c0, the MME on at most cpus threads,
 * its host memory checked (staged bytes aside); C's image after.
 */
static uint8_t *gemm_run(struct hpu_test *t, const struct gemm *g, const struct operand *c0,
			 unsigned int cpus, uint64_t tag, uint64_t staged)
{
	struct hpu_cb *cb = calloc(1, sizeof(*cb));
	uint8_t *img = malloc(c0->bytes);

	t->core->tpc.cpus = cpus;
	va_write(t, c0->va, c0->img, c0->bytes);
	cb_gemm(cb, g);
	submit_user(t, 1, cb, tag);
	alloc_start();
	run(t);
	alloc_check(t, staged, __LINE__);
	EXPECT_DONE(t, 1);
	HPU_CHECK_EQ(t, completion(t, 1), COMPLETION_VALUE + tag);
	va_read(t, c0->va, img, c0->bytes);
	free(cb);
	return img;
}

static void gemm_free(struct operand *a, struct operand *b, struct operand *c0)
{
	free(a->img);
	free(b->img);
	free(c0->img);
}

/* The MME on at most cpus threads. */
static void test_gemm_on(struct hpu_test *t, const struct gemm_case *c, unsigned int cpus)
{
	struct operand a, b, c0, got;
	struct gemm g;

	map_compute(t);
	gemm_setup(c, &g, &a, &b, &c0, false);
	va_write(t, a.va, a.img, a.bytes);
	va_write(t, b.va, b.img, b.bytes);
	got = c0;
	got.img = gemm_run(t, &g, &c0, cpus, 7, gemm_staged(c, &a, &b, &c0));
	gemm_check(t, c, &a, &b, &c0, &got);
	gemm_free(&a, &b, &c0);
	free(got.img);
}

/* On the host's CPUs, as the device runs it. */
static void test_gemm(struct hpu_test *t, const struct gemm_case *c)
{
	test_gemm_on(t, c, t->core->tpc.cpus);
}

/* The same without oneDNN: bf16 operands widened to fp32 for OpenBLAS. */
static void test_gemm_widened(struct hpu_test *t, const struct gemm_case *c)
{
	hdm_mme_native_bf16(false);
	test_gemm(t, c);
	hdm_mme_native_bf16(true);
}

/*
 * Split over 2 and over num_tpc threads (each case's plan has several
 * parts): every byte of C's extent as one thread leaves it, since every
 * step is the same OpenBLAS call whichever thread makes it.
 */
static void test_gemm_split(struct hpu_test *t, const struct gemm_case *c)
{
	const unsigned int cpus[2] = { 2, hpu_test_cfg.num_tpc };
	struct operand a, b, c0, got;
	struct hdm_mme_plan plan;
	uint8_t *one;
	unsigned int i;
	struct gemm g;

	hdm_mme_plan(&plan, c->batch, c->m, c->n, c->k, 2);
	HPU_CHECK(t, plan.parts == 2);
	map_compute(t);
	gemm_setup(c, &g, &a, &b, &c0, true);
	va_write(t, a.va, a.img, a.bytes);
	va_write(t, b.va, b.img, b.bytes);
	one = gemm_run(t, &g, &c0, 1, 1, gemm_staged(c, &a, &b, &c0));
	got = c0;
	for (i = 0; i < 2; i++) {
		got.img = gemm_run(t, &g, &c0, cpus[i], 2 + i, gemm_staged(c, &a, &b, &c0));
		HPU_CHECK(t, !memcmp(got.img, one, c0.bytes));
		free(got.img);
	}
	got.img = one;
	gemm_check(t, c, &a, &b, &c0, &got);
	gemm_free(&a, &b, &c0);
	free(one);
}

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define TA HPU_PKT_GEMM_TRANS_A
#define TB HPU_PKT_GEMM_TRANS_B

static const struct gemm_case gemm_cases[] = {
	{ "fp32 1x1x1", F32, F32, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 37x29x53", F32, F32, 0, 1, 37, 29, 53, 0, 0, 0, 0, 0, 0, 1, 0, IN_HBM, IN_HBM,
	  IN_HBM, 0 },
	{ "fp32 A transposed, padded rows", F32, F32, TA, 1, 37, 29, 53, 3, 1, 5, 0, 0, 0, 1, 0,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 B transposed, padded rows", F32, F32, TB, 1, 31, 17, 64, 2, 7, 1, 0, 0, 0, 1, 0,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 both transposed, padded rows", F32, F32, TA | TB, 1, 33, 65, 19, 1, 2, 3, 0, 0, 0,
	  1, 0, IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 alpha -1.5, beta 0.5", F32, F32, 0, 1, 40, 24, 33, 0, 0, 4, 0, 0, 0, -1.5f, 0.5f,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 batch 3, gaps between matrices", F32, F32, TB, 3, 12, 9, 7, 1, 0, 2, 5, 3, 11, 1,
	  1, IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 batch 4, B's stride 0", F32, F32, 0, 4, 10, 11, 12, 0, 0, 0, 0, -1, 0, 2, 0,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 batch 3, A's stride 0", F32, F32, TA, 3, 10, 11, 12, 0, 2, 0, -1, 0, 1, 1, 0.25f,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "bf16 in, fp32 out", BF16, F32, 0, 1, 45, 23, 61, 0, 0, 0, 0, 0, 0, 1, 0, IN_HBM, IN_HBM,
	  IN_HBM, 0 },
	{ "bf16 in, bf16 out, beta 1, transposed", BF16, BF16, TA | TB, 2, 21, 34, 17, 3, 1, 2, 4,
	  0, 6, 0.5f, 1, IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32 in, bf16 out", F32, BF16, TA, 1, 27, 30, 31, 0, 1, 0, 0, 0, 0, 1, 0, IN_HBM,
	  IN_HBM, IN_HBM, 0 },
	{ "bf16, B's stride 0", BF16, F32, TB, 3, 8, 9, 10, 0, 0, 0, 0, -1, 0, 1, 0, IN_HBM,
	  IN_HBM, IN_HBM, 0 },
	{ "operands across non-consecutive HBM pages (staged)", F32, F32, 0, 2, 300, 200, 250, 1,
	  0, 3, 0, 0, 0, 1, 0.5f, IN_SCAT, IN_SCAT, IN_SCAT, 0 },
	{ "bf16 C across non-consecutive HBM pages", BF16, BF16, TB, 1, 520, 600, 40, 0, 0, 0, 0,
	  0, 0, 1, 1, IN_HBM, IN_HBM, IN_SCAT, 0 },
	{ "operands in host memory", F32, F32, TA, 2, 64, 48, 80, 1, 0, 2, 3, 0, 1, 1, 1, IN_HOST,
	  IN_HOST, IN_HOST, 0 },
	{ "bf16 operands in host memory", BF16, BF16, 0, 1, 70, 50, 90, 0, 0, 0, 0, 0, 0, -1, 0,
	  IN_HOST, IN_HBM, IN_HOST, 0 },
	/* n * k of 2^22: at most 256 rows of C per step, so C's rows come in three blocks of 174. */
	{ "fp32 in row blocks", F32, F32, 0, 1, 520, 2048, 2048, 0, 0, 0, 0, 0, 0, 1, 0.5f, IN_HBM,
	  IN_HBM, IN_HBM, 174 },
	{ "bf16 in row blocks, A transposed", BF16, BF16, TA | TB, 1, 520, 2048, 2048, 0, 0, 0, 0,
	  0, 0, 1, 1, IN_HBM, IN_HBM, IN_HBM, 174 },
	/* B widened whole would take 94 MiB a thread: 23 blocks of 261 columns. */
	{ "bf16, B in column blocks of bounded size", BF16, F32, 0, 1, 64, 6000, 4096, 0, 0, 0, 0, 0,
	  0, 1, 0, IN_HBM, IN_HBM, IN_HBM, 64 },
	/* k beyond HDM_MME_BLOCK_K: summed in two chunks, C accumulating (in fp32 for bf16). */
	{ "bf16, k in two chunks, beta 1", BF16, BF16, TA, 1, 2, 5, (1u << 20) + 5, 1, 0, 0, 0, 0,
	  0, 0.5f, 1, IN_HBM, IN_HBM, IN_HBM, 0 },
	{ "fp32, k in two chunks, beta 0.5", F32, F32, TB, 1, 1, 3, (1u << 20) + 5, 0, 0, 1, 0, 0,
	  0, 1, 0.5f, IN_HBM, IN_HBM, IN_HBM, 0 },
};

/* Shapes each cut into several steps (block sizes in the comments), several threads' worth. */
static const struct gemm_case gemm_split_cases[] = {
	/* 3 blocks of 334 rows. */
	{ "rows, alpha -1.5, beta 0.5, padded rows", F32, F32, 0, 1, 1000, 300, 400, 3, 1, 5, 0, 0,
	  0, -1.5f, 0.5f, IN_HBM, IN_HBM, IN_HBM, 334 },
	/* 2 blocks of 350 rows. */
	{ "rows, both transposed, beta 1", F32, F32, TA | TB, 1, 700, 256, 512, 0, 0, 0, 0, 0, 0, 1,
	  1, IN_HBM, IN_HBM, IN_HBM, 350 },
	/* m is small: 3 blocks of 667 columns. */
	{ "columns, B transposed, beta -1", F32, F32, TB, 1, 64, 2000, 500, 1, 2, 3, 0, 0, 0, 1, -1,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	/* 2 blocks of 2048 columns. */
	{ "columns, bf16 in, A transposed", BF16, F32, TA, 1, 32, 4096, 300, 0, 0, 0, 0, 0, 0, 1, 0,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	/* 3 blocks of 1000 columns. */
	{ "columns, bf16 out, beta 1", F32, BF16, 0, 1, 48, 3000, 400, 0, 0, 2, 0, 0, 0, 1, 1,
	  IN_HBM, IN_HBM, IN_HBM, 0 },
	/* One block per batch matrix. */
	{ "batch 6, A transposed, gaps, beta 0.5", F32, F32, TA, 6, 128, 256, 600, 1, 0, 2, 5, 3,
	  11, 1, 0.5f, IN_HBM, IN_HBM, IN_HBM, 0 },
	/* 3 x 2 blocks of 300 rows. */
	{ "batch 3 in rows, bf16, beta 1", BF16, BF16, TB, 3, 600, 256, 512, 0, 0, 0, 0, 0, 0, 0.5f,
	  1, IN_HBM, IN_HBM, IN_HBM, 300 },
	/* 4 x 2 blocks of 300 rows, each thread widening the one B once. */
	{ "batch 4 in rows, bf16, B's stride 0", BF16, F32, TB, 4, 600, 200, 600, 0, 0, 0, 0, -1,
	  0, 1, 0, IN_HBM, IN_HBM, IN_HBM, 300 },
	/* 2 x 2 blocks of 300 and 299 rows; A's second matrix starts at its first's 2nd block. */
	{ "batch 2 in rows, bf16, A's matrices overlapping", BF16, F32, 0, 2, 599, 256, 512, 0, 0,
	  0, -299 * 512, 0, 0, 1, 0, IN_HBM, IN_HBM, IN_HBM, 300 },
	/* 2 x 2 blocks of 256 rows, each thread widening each block of A once. */
	{ "batch 2 in rows, bf16, A's stride 0, staged", BF16, F32, 0, 2, 512, 300, 500, 0, 0, 0,
	  -1, 0, 0, 1, 0, IN_SCAT, IN_HBM, IN_SCAT, 256 },
};

/* How GEMMs are cut: by shape alone; small ones are one step on one thread. */
static void case_gemm_plan(struct hpu_test *t)
{
	static const struct {
		uint32_t batch, m, n, k;
		unsigned int cpus;
		uint64_t block_rows, block_cols, steps, parts;
	} plans[] = {
		/*
		 * The MNIST MLP's GEMMs: fc2 is one step on one thread; fc1's forward
		 * and weight gradient, worth two threads, two steps of short blocks.
		 */
		{ 1, 200, 10, 128, 64, 200, 10, 1, 1 },
		{ 1, 200, 128, 784, 64, 100, 128, 2, 2 },
		{ 1, 128, 784, 200, 64, 64, 784, 2, 2 },
		/* Rows of at least HDM_MME_MIN_BLOCK, as many threads as there are CPUs for. */
		{ 1, 1024, 1024, 1024, 2, 256, 1024, 4, 2 },
		{ 1, 1024, 1024, 1024, 64, 256, 1024, 4, 4 },
		/* About HDM_MME_PART_MACS a step when rows are short. */
		{ 1, 1000000, 16, 16, 64, 33334, 16, 30, 30 },
		/* No more than 2^30 multiply-adds a step. */
		{ 1, 4096, 4096, 4096, 64, 64, 4096, 64, 64 },
		/* m is small: columns. */
		{ 1, 64, 2000, 500, 64, 64, 286, 7, 7 },
		{ 1, 1, 1u << 20, 4096, 4, 1, 2048, 512, 4 },
		/* Each batch matrix cut as one GEMM is; one thread when all are little work. */
		{ 6, 128, 256, 600, 64, 64, 256, 12, 12 },
		{ 64, 10, 11, 12, 64, 10, 11, 64, 1 },
	};
	struct hdm_mme_plan p;
	unsigned int i;

	for (i = 0; i < HPU_ARRAY_SIZE(plans); i++) {
		hdm_mme_plan(&p, plans[i].batch, plans[i].m, plans[i].n, plans[i].k, plans[i].cpus);
		if (p.block_rows != plans[i].block_rows || p.block_cols != plans[i].block_cols ||
		    p.steps != plans[i].steps || p.parts != plans[i].parts)
			printf("# plan %u: %llu x %llu blocks, %llu steps, %llu parts\n", i,
			       (unsigned long long)p.block_rows, (unsigned long long)p.block_cols,
			       (unsigned long long)p.steps, (unsigned long long)p.parts);
		HPU_CHECK_EQ(t, p.block_rows, plans[i].block_rows);
		HPU_CHECK_EQ(t, p.block_cols, plans[i].block_cols);
		HPU_CHECK_EQ(t, p.steps, plans[i].steps);
		HPU_CHECK_EQ(t, p.parts, plans[i].parts);
	}
}

/* ---- refusals and faults ---- */

/* A good job after a failed one: the queue goes on. */
static void expect_usable(struct hpu_test *t, unsigned int q)
{
	struct hpu_cb cb = { .len = 0 };
	const float one = 1.0f;
	float out = 0;
	struct gemm g = {
		.dtype_ab = F32, .dtype_c = F32, .batch = 1, .m = 1, .n = 1, .k = 1,
		.a = VA_DATA + 0x1000, .b = VA_DATA + 0x1000, .c = VA_DATA + 0x2000,
		.lda = 1, .ldb = 1, .ldc = 1, .alpha = 3, .beta = 0,
	};

	va_write(t, g.a, &one, sizeof(one));
	cb_gemm(&cb, &g);
	submit_user(t, q, &cb, 99);
	run(t);
	EXPECT_DONE(t, q);
	va_read(t, g.c, &out, sizeof(out));
	HPU_CHECK(t, out == 3.0f);
}

/* C's sentinel: a refused or faulting GEMM leaves it as it was. */
#define C_VA (VA_DATA + 0x100000)
#define C_BYTES 4096u

static void expect_c_untouched(struct hpu_test *t)
{
	uint8_t buf[C_BYTES];
	unsigned int i, bad = 0;

	va_read(t, C_VA, buf, sizeof(buf));
	for (i = 0; i < sizeof(buf); i++)
		bad += buf[i] != 0xa5;
	HPU_CHECK_EQ(t, bad, 0);
}

/* A valid 4 x 4 fp32 GEMM into C_VA, for the cases to break. */
static struct gemm gemm_good(void)
{
	return (struct gemm){
		.dtype_ab = F32, .dtype_c = F32, .batch = 1, .m = 4, .n = 4, .k = 4,
		.a = VA_DATA, .b = VA_DATA + 0x1000, .c = C_VA, .lda = 4, .ldb = 4, .ldc = 4,
		.stride_a = 16, .stride_b = 16, .stride_c = 16, .alpha = 1, .beta = 0,
	};
}

struct gemm_bad_case {
	const char *name;
	void (*bend)(struct gemm *g);
	uint32_t event;
	uint64_t addr; /* 0: the packet's offset, 8 (a NOP comes first) */
};

#define BEND(fn, stmt) \
	static void fn(struct gemm *g) { stmt; }

BEND(bad_dtype_ab, g->dtype_ab = HPU_DTYPE_I32)
BEND(bad_dtype_c, g->dtype_c = 0)
BEND(bad_batch, g->batch = 0)
BEND(bad_m, g->m = 0)
BEND(bad_n, g->n = 0)
BEND(bad_k, g->k = 0)
BEND(bad_m_huge, g->m = 1u << 31)
BEND(bad_lda, g->lda = 3)
BEND(bad_lda_trans, (g->flags = TA, g->m = 5))
BEND(bad_ldb, (g->flags = TB, g->ldb = 3))
BEND(bad_ldc, g->ldc = 3)
BEND(bad_ld_huge, (g->lda = 1ull << 31))
BEND(bad_stride_overflow, (g->batch = 5, g->stride_a = 1ull << 62))
BEND(bad_stride_sign, (g->batch = 2, g->stride_b = 1ull << 63))
BEND(bad_extent_wrap, (g->c = UINT64_MAX - 16))
/* Every extent fits (C's batch stride is 0), but not the count of 1 x 2^24 blocks: 2^68. */
BEND(bad_steps, (g->batch = UINT32_MAX, g->m = HDM_MME_DIM_MAX, g->n = 1u << 29, g->k = 1,
		 g->lda = 1, g->ldb = 1u << 29, g->ldc = 1u << 29, g->stride_a = 0, g->stride_b = 0,
		 g->stride_c = 0))
BEND(bad_flag, g->flags = 4)
BEND(bad_pad, g->pad = 1)
BEND(fault_a, g->a = VA_UNMAPPED)
BEND(fault_b_tail, (g->b = VA_HBM + BUF_SIZE - 32, g->ldb = 4, g->k = 4))
BEND(fault_c, g->c = VA_UNMAPPED + 64)
BEND(fault_c_ro, (g->c = VA_RO + 16, g->beta = 1))
BEND(fault_batch_past, (g->batch = 2, g->stride_c = BUF_SIZE, g->c = VA_HBM + 64))
BEND(fault_host_tail, (g->a = VA_HOST + SRC_OFF + BUF_SIZE - 16))

static const struct gemm_bad_case gemm_bad_cases[] = {
	{ "dtype of A and B", bad_dtype_ab, HPU_EVENT_BAD_KERNEL, 0 },
	{ "dtype of C", bad_dtype_c, HPU_EVENT_BAD_KERNEL, 0 },
	{ "batch 0", bad_batch, HPU_EVENT_BAD_KERNEL, 0 },
	{ "m 0", bad_m, HPU_EVENT_BAD_KERNEL, 0 },
	{ "n 0", bad_n, HPU_EVENT_BAD_KERNEL, 0 },
	{ "k 0", bad_k, HPU_EVENT_BAD_KERNEL, 0 },
	{ "m of 2^31", bad_m_huge, HPU_EVENT_BAD_KERNEL, 0 },
	{ "lda below k", bad_lda, HPU_EVENT_BAD_KERNEL, 0 },
	{ "lda below m, A transposed", bad_lda_trans, HPU_EVENT_BAD_KERNEL, 0 },
	{ "ldb below k, B transposed", bad_ldb, HPU_EVENT_BAD_KERNEL, 0 },
	{ "ldc below n", bad_ldc, HPU_EVENT_BAD_KERNEL, 0 },
	{ "lda of 2^31", bad_ld_huge, HPU_EVENT_BAD_KERNEL, 0 },
	{ "batch stride overflowing the extent", bad_stride_overflow, HPU_EVENT_BAD_KERNEL, 0 },
	{ "batch stride of 2^63", bad_stride_sign, HPU_EVENT_BAD_KERNEL, 0 },
	{ "C wrapping the address space", bad_extent_wrap, HPU_EVENT_BAD_KERNEL, 0 },
	{ "more than 2^64 - 1 blocks", bad_steps, HPU_EVENT_BAD_KERNEL, 0 },
	{ "unknown flag", bad_flag, HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "pad", bad_pad, HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "A unmapped", fault_a, HPU_EVENT_MMU_FAULT, VA_UNMAPPED },
	{ "B running off its mapping", fault_b_tail, HPU_EVENT_MMU_FAULT, VA_HBM + BUF_SIZE },
	{ "C unmapped", fault_c, HPU_EVENT_MMU_FAULT, VA_UNMAPPED + 64 },
	{ "C read-only", fault_c_ro, HPU_EVENT_MMU_FAULT, VA_RO + 16 },
	{ "C's second matrix unmapped", fault_batch_past, HPU_EVENT_MMU_FAULT, VA_HBM + BUF_SIZE },
	{ "A's host pages end", fault_host_tail, HPU_EVENT_MMU_FAULT, VA_HOST + SRC_OFF + BUF_SIZE },
};

static void test_gemm_bad(struct hpu_test *t, const struct gemm_bad_case *c)
{
	struct hpu_cb cb = { .len = 0 };
	uint8_t sentinel[C_BYTES];
	struct gemm g = gemm_good();

	map_compute(t);
	memset(sentinel, 0xa5, sizeof(sentinel));
	va_write(t, C_VA, sentinel, sizeof(sentinel));
	c->bend(&g);
	cb_u32(&cb, HPU_PKT_HEADER(HPU_PKT_NOP, 0));
	cb_u32(&cb, 0);
	cb_gemm(&cb, &g);
	submit_user(t, 2, &cb, 5);
	run(t);
	expect_event(t, c->event, 2, ASID,
		     c->event == HPU_EVENT_ILLEGAL_PACKET ? HPU_ENGINE_QMAN : MME_ENGINE(2), 5,
		     c->addr ? c->addr : 8, c->event == HPU_EVENT_BAD_KERNEL ? REFUSED_LOGS : 1,
		     __LINE__);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(2, CI)), hpu_rd(t, REG_Q(2, PI)));
	/* The driver's tail of a failed job is skipped. */
	HPU_CHECK_EQ(t, completion(t, 2), 0);
	expect_c_untouched(t);
	expect_usable(t, 2);
}

/* A queue reset while the MME stages A: the third read, after the descriptor and the command buffer. */
static void reset_queue_2(struct hpu_test *t)
{
	if (t->dma_reads < 3)
		return;
	t->on_dma = NULL;
	hpu_wr(t, REG_Q(2, CTRL), HPU_Q_CTRL_RESET);
}

static void case_gemm_abort(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	uint8_t sentinel[C_BYTES];
	struct gemm g = gemm_good();

	map_compute(t);
	memset(sentinel, 0xa5, sizeof(sentinel));
	va_write(t, C_VA, sentinel, sizeof(sentinel));
	g.a = VA_HOST + SRC_OFF;
	cb_gemm(&cb, &g);
	submit_user(t, 2, &cb, 6);
	t->dma_reads = 0;
	t->on_dma = reset_queue_2;
	run(t);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 2, ASID, MME_ENGINE(2), 6, 0);
	expect_c_untouched(t);
	expect_usable(t, 2);
}

/* ---- enormous GEMMs ---- */

/*
 * A bf16 GEMM whose parts' buffers on 16 threads would take more than
 * HDM_MME_WORK_MAX: 16 steps of 64 x 4096 blocks, 65 MiB of buffers each,
 * run by 15 parts, to the bit what one thread computes (which the case
 * "B in column blocks" checks against the reference).
 */
static void case_gemm_work_max(struct hpu_test *t)
{
	static const struct gemm_case c = {
		"bf16 on 16 threads", BF16, F32, 0, 1, 512, 8192, 4096, 0, 0, 0, 0, 0, 0, 1, 0,
		IN_HBM, IN_HBM, IN_HBM, 0,
	};
	struct operand a, b, c0;
	uint8_t *one, *many;
	struct gemm g;

	map_compute(t);
	gemm_setup(&c, &g, &a, &b, &c0, true);
	va_write(t, a.va, a.img, a.bytes);
	va_write(t, b.va, b.img, b.bytes);
	one = gemm_run(t, &g, &c0, 1, 1, 0);
	many = gemm_run(t, &g, &c0, 16, 2, 0);
	HPU_CHECK(t, !memcmp(many, one, c0.bytes));
	gemm_free(&a, &b, &c0);
	free(one);
	free(many);
}

/*
 * An operand that is not one run of HBM is staged in host memory, which the
 * guest would name without bound: 2 MiB of HBM mapped over 1.2 GiB of VA.
 */
#define VA_ALIAS 0x2000000000ull
#define ALIASES 600u

static void case_gemm_stage_max(struct hpu_test *t)
{
	struct hpu_cb cb = { .len = 0 };
	struct gemm g = gemm_good();
	unsigned int i;

	map_compute(t);
	for (i = 0; i < ALIASES; i++)
		pt_map_page(t, ASID, VA_ALIAS + (uint64_t)i * HPU_MMU_HUGE_SIZE, HBM_DATA,
			    PTE_RW | HPU_PTE_HUGE);
	/* A's two matrices 1.1 GiB apart: one range of more than a packet may stage. */
	g.a = VA_ALIAS;
	g.batch = 2;
	g.stride_a = (ALIASES - 1) * (HPU_MMU_HUGE_SIZE / 4);
	g.stride_b = g.stride_c = 0;
	g.beta = 1;
	cb_gemm(&cb, &g);
	submit_user(t, 2, &cb, 7);
	alloc_start();
	run(t);
	expect_event(t, HPU_EVENT_BAD_KERNEL, 2, ASID, MME_ENGINE(2), 7, VA_ALIAS, REFUSED_LOGS,
		     __LINE__);
	alloc_check(t, 0, __LINE__);
	expect_usable(t, 2);
}

/* 16 GiB of HBM never written: it reads as zeros and costs the host nothing. */
#define VA_HUGE 0x1000000000ull
#define HBM_HUGE (1ull << 30)
#define HUGE_SIZE (16ull << 30)
/*
 * How long a queue reset may take to stop any GEMM, with room for a loaded
 * host: measured 5 to 70 ms (reading fresh pages), seconds before the cut.
 */
#define HUGE_STOP_NS 500000000ull

struct huge_case {
	const char *name;
	uint32_t dtype_ab, flags, m, n, k;
};

static const struct huge_case huge_cases[] = {
	/* B is 16 GiB: 2^33 multiply-adds. */
	{ "fp32 2 x 65536 x 65536", F32, 0, 2, 65536, 65536 },
	/* k beyond HDM_MME_STEP_ELEMS, whose rows of A and B widened whole take 768 MiB. */
	{ "bf16 2 x 2 x 2^26, B transposed", BF16, TB, 2, 2, 1u << 26 },
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait (20 s at most) until queue q's register reg reads want. */
static void wait_reg(struct hpu_test *t, uint32_t reg, uint32_t want, uint32_t mask)
{
	const struct timespec tick = { .tv_nsec = 100000 };
	uint64_t until = now_ns() + 20000000000ull;

	while ((hpu_rd(t, reg) & mask) != want && now_ns() < until)
		nanosleep(&tick, NULL);
}

/* A GEMM of enormous legal size, on the engine's thread, stopped by a queue reset. */
static void test_gemm_huge(struct hpu_test *t, const struct huge_case *c)
{
	const struct timespec settle = { .tv_nsec = 20000000 };
	struct hpu_cb cb = { .len = 0 };
	struct gemm g = {
		.flags = c->flags, .dtype_ab = c->dtype_ab, .dtype_c = F32, .batch = 1,
		.m = c->m, .n = c->n, .k = c->k, .a = VA_HUGE, .b = VA_HUGE, .c = VA_DATA,
		.lda = c->flags & TA ? c->m : c->k, .ldb = c->flags & TB ? c->k : c->n,
		.ldc = c->n, .alpha = 1,
	};
	pthread_t engine;
	uint64_t off, start, took;

	map_compute(t);
	for (off = 0; off < HUGE_SIZE; off += HPU_MMU_HUGE_SIZE)
		pt_map_page(t, ASID, VA_HUGE + off, HBM_HUGE + off,
			    HPU_PTE_PRESENT | HPU_PTE_HUGE);
	cb_gemm(&cb, &g);
	submit_user(t, 2, &cb, 4);
	alloc_start();
	if (pthread_create(&engine, NULL, engine_thread, t->core)) {
		HPU_CHECK(t, false);
		return;
	}
	wait_reg(t, REG_Q(2, STATUS), HPU_Q_STATUS_BUSY, HPU_Q_STATUS_BUSY);
	nanosleep(&settle, NULL);
	start = now_ns();
	hpu_wr(t, REG_Q(2, CTRL), HPU_Q_CTRL_RESET);
	wait_reg(t, REG_Q(2, CI), hpu_rd(t, REG_Q(2, PI)), UINT32_MAX);
	took = now_ns() - start;
	hdm_core_engine_stop(t->core);
	pthread_join(engine, NULL);
	printf("# stopped %.1f ms after the queue reset\n", took / 1e6);
	HPU_CHECK(t, took < HUGE_STOP_NS);
	alloc_check(t, 0, __LINE__);
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 2, ASID, MME_ENGINE(2), 4, 0);
}

/* ---- TPC_LAUNCH: test kernels ---- */

#define TK_COUNT 0x7e570001u  /* t: out I32, += 1 per item; items = numel(out) */
#define TK_AXPY 0x7e570002u   /* t: y (io, F32), x (F32): y = 2 y + x; refuses other shapes */
#define TK_ABORT 0x7e570003u  /* TK_COUNT whose first item resets queue 0 */
#define TK_PHASES 0x7e570004u /* TK_COUNT's items twice, in two phases */

static struct {
	struct hpu_test *t;            /* for TK_ABORT */
	unsigned int parts, finishes;  /* __atomic */
	unsigned int phase_finishes[HDM_KERNEL_MAX_PHASES];
	uint64_t early;                /* TK_PHASES's phase-1 items that ran before phase 0 ended */
	unsigned int in_phase;         /* 1 + the phase of TK_PHASES's last part, 0 once done */
	unsigned int inside[HDM_KERNEL_MAX_PHASES]; /* TK_COUNT parts run inside each */
	const uint8_t *bases[HPU_KERNEL_MAX_TENSORS];
} tk;

static uint32_t tk_writes_t0(const struct hdm_kcall *c)
{
	(void)c;
	return 1;
}

/* Where the engine put each tensor. */
static void tk_record(const struct hdm_kcall *c)
{
	unsigned int i;

	for (i = 0; i < c->num_tensors; i++)
		tk.bases[i] = c->t[i].base;
}

static int tk_count_check(const struct hdm_kcall *c, uint64_t *items)
{
	tk_record(c);
	if (c->t[0].dtype != HPU_DTYPE_I32)
		return -1;
	*items = hdm_kview_numel(&c->t[0]);
	return 0;
}

static void tk_add_one(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	uint8_t *p;

	__atomic_add_fetch(&tk.parts, 1, __ATOMIC_RELAXED);
	for (; begin < end; begin++) {
		p = hdm_kview_at(&c->t[0], begin);
		hdm_kstore_i(HPU_DTYPE_I32, p, hdm_kload_i(HPU_DTYPE_I32, p) + 1);
	}
}

static void tk_count_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	unsigned int in = __atomic_load_n(&tk.in_phase, __ATOMIC_RELAXED);

	if (in)
		__atomic_add_fetch(&tk.inside[in - 1], 1, __ATOMIC_RELAXED);
	tk_add_one(c, begin, end);
}

static void tk_finish(const struct hdm_kcall *c)
{
	(void)c;
	__atomic_add_fetch(&tk.finishes, 1, __ATOMIC_RELAXED);
}

static int tk_axpy_check(const struct hdm_kcall *c, uint64_t *items)
{
	unsigned int d;

	tk_record(c);
	if (c->t[0].dtype != F32 || c->t[1].dtype != F32 || c->t[0].ndim != c->t[1].ndim)
		return -1;
	for (d = 0; d < c->t[0].ndim; d++)
		if (c->t[0].shape[d] != c->t[1].shape[d])
			return -1;
	*items = hdm_kview_numel(&c->t[0]);
	return 0;
}

static void tk_axpy_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	uint8_t *y;

	__atomic_add_fetch(&tk.parts, 1, __ATOMIC_RELAXED);
	for (; begin < end; begin++) {
		y = hdm_kview_at(&c->t[0], begin);
		hdm_kstore_f(F32, y, 2 * hdm_kload_f(F32, y) +
					     hdm_kload_f(F32, hdm_kview_at(&c->t[1], begin)));
	}
}

static void tk_abort_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	if (!begin)
		hpu_wr(tk.t, REG_Q(0, CTRL), HPU_Q_CTRL_RESET);
	tk_count_run(c, begin, end);
}

/* TK_PHASES's scratch: phase 0's items done, and whether its finish() ran. */
struct tk_phases_scratch {
	uint64_t done; /* __atomic */
	bool joined;
};

static int tk_phases_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (tk_count_check(c, items))
		return -1;
	items[1] = items[0];
	return 0;
}

static uint64_t tk_phases_scratch_len(const struct hdm_kcall *c, uint64_t items)
{
	(void)c;
	(void)items;
	return sizeof(struct tk_phases_scratch);
}

static void tk_phases_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct tk_phases_scratch *sc = c->state->scratch;

	__atomic_store_n(&tk.in_phase, c->state->phase + 1, __ATOMIC_RELAXED);
	if (c->state->phase == 0)
		__atomic_add_fetch(&sc->done, end - begin, __ATOMIC_RELAXED);
	else if (!sc->joined)
		__atomic_add_fetch(&tk.early, end - begin, __ATOMIC_RELAXED);
	tk_add_one(c, begin, end);
}

static void tk_phases_finish(const struct hdm_kcall *c)
{
	struct tk_phases_scratch *sc = c->state->scratch;

	tk.phase_finishes[c->state->phase]++;
	if (c->state->phase == 0)
		sc->joined = sc->done == hdm_kview_numel(&c->t[0]);
	else
		__atomic_store_n(&tk.in_phase, 0, __ATOMIC_RELAXED);
}

static const struct hdm_kernel_def tk_count = {
	.name = "test count", .min_tensors = 1, .max_tensors = 1, .outputs = tk_writes_t0,
	.check = tk_count_check, .run = tk_count_run, .finish = tk_finish,
};

static const struct hdm_kernel_def tk_axpy = {
	.name = "test axpy", .min_tensors = 2, .max_tensors = 2, .outputs = tk_writes_t0,
	.check = tk_axpy_check, .run = tk_axpy_run,
};

static const struct hdm_kernel_def tk_abort = {
	.name = "test abort", .min_tensors = 1, .max_tensors = 1, .outputs = tk_writes_t0,
	.check = tk_count_check, .run = tk_abort_run, .finish = tk_finish,
};

static const struct hdm_kernel_def tk_phases = {
	.name = "test phases", .min_tensors = 1, .max_tensors = 1, .outputs = tk_writes_t0,
	.phases = 2, .check = tk_phases_check, .scratch = tk_phases_scratch_len,
	.run = tk_phases_run, .finish = tk_phases_finish,
};

const struct hdm_kernel_def *__real_hdm_kernel_lookup(uint32_t id);
const struct hdm_kernel_def *__wrap_hdm_kernel_lookup(uint32_t id);

const struct hdm_kernel_def *__wrap_hdm_kernel_lookup(uint32_t id)
{
	switch (id) {
	case TK_COUNT:
		return &tk_count;
	case TK_AXPY:
		return &tk_axpy;
	case TK_ABORT:
		return &tk_abort;
	case TK_PHASES:
		return &tk_phases;
	default:
		return __real_hdm_kernel_lookup(id);
	}
}

/* ---- TPC_LAUNCH: parameter blocks ---- */

/* Serialise l (with room for extra descriptors) at va; returns its exact size. */
static uint32_t launch_write(struct hpu_test *t, uint64_t va, const struct launch *l)
{
	uint8_t buf[sizeof(*l)];
	uint8_t *p = buf;
	unsigned int i, k;

	hdm_st_le32(p, l->p.version);
	hdm_st_le32(p + 4, l->p.kernel);
	hdm_st_le32(p + 8, l->p.num_tensors);
	hdm_st_le32(p + 12, l->p.flags);
	for (i = 0; i < HPU_KERNEL_MAX_ARGS; i++)
		hdm_st_le64(p + offsetof(struct hpu_kernel_params, args) + 8 * i,
			    (uint64_t)l->p.args[i]);
	for (i = 0; i < HPU_KERNEL_MAX_SCALARS; i++)
		hdm_st_le64(p + offsetof(struct hpu_kernel_params, scalars) + 8 * i,
			    l->p.scalars[i]);
	p += sizeof(l->p);
	for (i = 0; i < HPU_KERNEL_MAX_TENSORS + 1; i++, p += sizeof(l->t[0])) {
		hdm_st_le64(p, l->t[i].addr);
		hdm_st_le32(p + 8, l->t[i].dtype);
		hdm_st_le32(p + 12, l->t[i].ndim);
		for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++) {
			hdm_st_le64(p + offsetof(struct hpu_tensor_desc, shape) + 8 * k,
				    l->t[i].shape[k]);
			hdm_st_le64(p + offsetof(struct hpu_tensor_desc, strides) + 8 * k,
				    (uint64_t)l->t[i].strides[k]);
		}
	}
	va_write(t, va, buf, sizeof(buf));
	return launch_size(l);
}

/* Run one launch on queue 0 as job tag 3. */
static void launch_run(struct hpu_test *t, uint64_t params, uint32_t size)
{
	struct hpu_cb cb = { .len = 0 };

	cb_launch(&cb, params, size);
	submit_user(t, 0, &cb, 3);
	run(t);
}

static void launch_ok(struct hpu_test *t, const struct launch *l, int line)
{
	tk.parts = tk.finishes = 0;
	launch_run(t, VA_PARAM, launch_write(t, VA_PARAM, l));
	expect_done(t, 0, line);
}

static int32_t read_i32(struct hpu_test *t, uint64_t va)
{
	int32_t v;

	va_read(t, va, &v, sizeof(v));
	return v;
}

/* Every item of an n-element count tensor at va was done exactly once. */
static void expect_counts(struct hpu_test *t, uint64_t va, uint64_t n, int64_t stride, int line)
{
	unsigned int bad = 0;
	uint64_t i;

	for (i = 0; i < n; i++)
		bad += read_i32(t, va + (uint64_t)((int64_t)i * stride * 4)) != 1;
	hpu_check_eq(t, bad, 0, "items not done exactly once", line);
}

/*
 * Items split into min(num_tpc, items / HDM_TPC_PART_ITEMS) parts, at least
 * one, and more if a part would pass HDM_TPC_PART_MAX_ITEMS.
 */
static void test_split(struct hpu_test *t, uint64_t items, unsigned int parts)
{
	struct launch l = launch_new(TK_COUNT, 1);
	uint64_t shape[2] = { items / 8, 8 };

	map_compute(t);
	l.t[0] = desc(VA_DATA, HPU_DTYPE_I32, 2, shape, 0);
	launch_ok(t, &l, __LINE__);
	HPU_CHECK_EQ(t, tk.parts, parts);
	HPU_CHECK_EQ(t, tk.finishes, 1);
	expect_counts(t, VA_DATA, items, 1, __LINE__);
	HPU_CHECK_EQ(t, read_i32(t, VA_DATA + items * 4), 0);
}

static void case_split_tiny(struct hpu_test *t)
{
	test_split(t, 96, 1);
}

/* A launch of the first parameter version still runs: a runtime older than the device. */
static void case_version_1_runs(struct hpu_test *t)
{
	struct launch l = launch_new(TK_COUNT, 1);
	uint64_t shape[2] = { 12, 8 };

	map_compute(t);
	l.p.version = 1;
	l.t[0] = desc(VA_DATA, HPU_DTYPE_I32, 2, shape, 0);
	launch_ok(t, &l, __LINE__);
	expect_counts(t, VA_DATA, 96, 1, __LINE__);
}

static void case_split_some(struct hpu_test *t)
{
	test_split(t, 3 * HDM_TPC_PART_ITEMS + 8, 3);
}

static void case_split_all(struct hpu_test *t)
{
	test_split(t, 100 * HDM_TPC_PART_ITEMS + 24, hpu_test_cfg.num_tpc);
}

/* Past num_tpc parts of the most a part takes: more parts than TPCs, each done once. */
static void case_split_bounded(struct hpu_test *t)
{
	uint64_t items = (uint64_t)(hpu_test_cfg.num_tpc + 1) * HDM_TPC_PART_MAX_ITEMS + 24;

	test_split(t, items, hpu_test_cfg.num_tpc + 2);
}

/* A strided, broadcast and reversed view: the items are the view's, wherever they live. */
static void case_views(struct hpu_test *t)
{
	struct launch l = launch_new(TK_COUNT, 1);
	const uint64_t va = VA_DATA + 0x10000;

	map_compute(t);
	/* 5 x 7, columns reversed (stride -1 from the last), rows 16 apart. */
	l.t[0] = (struct hpu_tensor_desc){
		.addr = va + 6 * 4, .dtype = HPU_DTYPE_I32, .ndim = 2,
		.shape = { 5, 7, 1, 1, 1, 1 }, .strides = { 16, -1 },
	};
	launch_ok(t, &l, __LINE__);
	expect_counts(t, va, 7, 1, __LINE__);
	expect_counts(t, va + 4 * 16 * 4, 7, 1, __LINE__);
	HPU_CHECK_EQ(t, read_i32(t, va + 7 * 4), 0);
	HPU_CHECK_EQ(t, read_i32(t, va - 4), 0);
	/* A broadcast dim counts its one element for every index: 4 here. */
	l.t[0] = (struct hpu_tensor_desc){
		.addr = va + 0x1000, .dtype = HPU_DTYPE_I32, .ndim = 2,
		.shape = { 4, 3, 1, 1, 1, 1 }, .strides = { 0, 1 },
	};
	launch_ok(t, &l, __LINE__);
	HPU_CHECK_EQ(t, read_i32(t, va + 0x1000), 4);
	HPU_CHECK_EQ(t, read_i32(t, va + 0x1008), 4);
	HPU_CHECK_EQ(t, read_i32(t, va + 0x100c), 0);
	/* A scalar (ndim 0) is one item. */
	l.t[0] = (struct hpu_tensor_desc){
		.addr = va + 0x2000, .dtype = HPU_DTYPE_I32,
		.shape = { 1, 1, 1, 1, 1, 1 },
	};
	launch_ok(t, &l, __LINE__);
	HPU_CHECK_EQ(t, read_i32(t, va + 0x2000), 1);
}

/* An empty tensor: no items, nothing mapped (its address may be anything), finish still runs. */
static void case_empty(struct hpu_test *t)
{
	struct launch l = launch_new(TK_COUNT, 1);
	const uint64_t shape[3] = { 4, 0, 9 };

	map_compute(t);
	l.t[0] = desc(VA_UNMAPPED, HPU_DTYPE_I32, 3, shape, 0);
	launch_ok(t, &l, __LINE__);
	HPU_CHECK_EQ(t, tk.parts, 0);
	HPU_CHECK_EQ(t, tk.finishes, 1);
}

static void fill_floats(struct hpu_test *t, uint64_t va, unsigned int n, float base)
{
	float *v = malloc(n * sizeof(*v));
	unsigned int i;

	for (i = 0; i < n; i++)
		v[i] = base + (float)i;
	va_write(t, va, v, n * sizeof(*v));
	free(v);
}

/* y = 2y + x at y_va, x_va over n floats, and check the result. */
static void test_axpy(struct hpu_test *t, uint64_t y_va, uint64_t x_va, unsigned int n)
{
	struct launch l = launch_new(TK_AXPY, 2);
	const uint64_t shape[1] = { n };
	float *y = malloc(n * sizeof(*y)), *x = malloc(n * sizeof(*x));
	unsigned int i, bad = 0;

	fill_floats(t, y_va, n, 1);
	if (x_va != y_va)
		fill_floats(t, x_va, n, 1000);
	va_read(t, y_va, y, n * sizeof(*y));
	va_read(t, x_va, x, n * sizeof(*x));
	l.t[0] = desc(y_va, F32, 1, shape, 0);
	l.t[1] = desc(x_va, F32, 1, shape, 0);
	launch_ok(t, &l, __LINE__);
	for (i = 0; i < n; i++)
		x[i] = 2 * y[i] + x[i];
	va_read(t, y_va, y, n * sizeof(*y));
	for (i = 0; i < n; i++)
		bad += y[i] != x[i];
	HPU_CHECK_EQ(t, bad, 0);
	free(y);
	free(x);
}

/* Output and input the identical view: one mapping, y = 3y. */
static void case_in_place(struct hpu_test *t)
{
	map_compute(t);
	test_axpy(t, VA_DATA + 0x40000, VA_DATA + 0x40000, 5000);
	HPU_CHECK(t, tk.bases[0] == tk.bases[1]);
	/* Staged: both views still share the one staging copy. */
	test_axpy(t, VA_SCAT + HPU_MMU_HUGE_SIZE - 4000, VA_SCAT + HPU_MMU_HUGE_SIZE - 4000, 3000);
	HPU_CHECK(t, tk.bases[0] == tk.bases[1]);
}

/* Outputs in scattered HBM and host memory are staged and written back; inputs gathered. */
static void case_staged(struct hpu_test *t)
{
	map_compute(t);
	test_axpy(t, VA_SCAT + HPU_MMU_HUGE_SIZE - 8000, VA_SCAT + 3 * HPU_MMU_HUGE_SIZE - 6000,
		  70000);
	test_axpy(t, VA_HOST + DST_OFF + 4, VA_HOST + SRC_OFF + 8, 30000);
	test_axpy(t, VA_DATA + 0x80000, VA_HOST + SRC_OFF, 20000);
	/* Direct HBM: the kernel works in HBM itself. */
	test_axpy(t, VA_DATA + 0x80000, VA_DATA + 0x100000, 20000);
	HPU_CHECK(t, tk.bases[0] == hdm_hbm_span(t->core->hbm, HBM_DATA + 0x80000, 4, false));
}

/* The parameter block in HBM, read in place, and across non-consecutive pages. */
static void case_params_in_hbm(struct hpu_test *t)
{
	struct launch l = launch_new(TK_COUNT, 1);
	const uint64_t shape[1] = { 10 };
	const uint64_t at[] = { VA_DATA + 0x200000, VA_SCAT + HPU_MMU_HUGE_SIZE - 64 };
	unsigned int i;

	map_compute(t);
	for (i = 0; i < HPU_ARRAY_SIZE(at); i++) {
		l.t[0] = desc(VA_DATA + 0x300000 + i * 0x100, HPU_DTYPE_I32, 1, shape, 0);
		launch_run(t, at[i], launch_write(t, at[i], &l));
		EXPECT_DONE(t, 0);
		expect_counts(t, VA_DATA + 0x300000 + i * 0x100, 10, 1, __LINE__);
	}
}

/* A library kernel through the real table: relu_bwd. */
static void case_library_kernel(struct hpu_test *t)
{
	struct launch l = launch_new(HPU_KERNEL_RELU_BWD, 3);
	const uint64_t shape[2] = { 3, 4 };
	const float grad[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	const float x[12] = { -1, 1, -1, 1, 0, 2, 0, 2, -3, 3, -3, 3 };
	float out[12];
	unsigned int i;

	map_compute(t);
	va_write(t, VA_DATA + 0x1000, grad, sizeof(grad));
	va_write(t, VA_DATA + 0x2000, x, sizeof(x));
	l.t[0] = desc(VA_DATA, F32, 2, shape, 0);
	l.t[1] = desc(VA_DATA + 0x1000, F32, 2, shape, 0);
	l.t[2] = desc(VA_DATA + 0x2000, F32, 2, shape, 0);
	launch_ok(t, &l, __LINE__);
	va_read(t, VA_DATA, out, sizeof(out));
	for (i = 0; i < 12; i++)
		HPU_CHECK(t, out[i] == (x[i] > 0 ? grad[i] : 0));
}

/* A queue reset from inside the first part: later parts skip, nothing is written back. */
static void case_launch_abort(struct hpu_test *t)
{
	struct launch l = launch_new(TK_ABORT, 1);
	const uint64_t shape[1] = { 8 * HDM_TPC_PART_ITEMS };
	const uint64_t staged = VA_SCAT + HPU_MMU_HUGE_SIZE - 4 * HDM_TPC_PART_ITEMS;
	unsigned int i, bad = 0;

	map_compute(t);
	tk.t = t;
	tk.finishes = 0;
	l.t[0] = desc(staged, HPU_DTYPE_I32, 1, shape, 0);
	launch_run(t, VA_PARAM, launch_write(t, VA_PARAM, &l));
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 0, ASID, HPU_ENGINE_TPC, 3, 0);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), hpu_rd(t, REG_Q(0, PI)));
	HPU_CHECK_EQ(t, tk.finishes, 0);
	for (i = 0; i < shape[0]; i++)
		bad += read_i32(t, staged + 4 * i) != 0;
	HPU_CHECK_EQ(t, bad, 0);
	l = launch_new(TK_COUNT, 1);
	l.t[0] = desc(staged, HPU_DTYPE_I32, 1, shape, 0);
	launch_ok(t, &l, __LINE__);
	expect_counts(t, staged, shape[0], 1, __LINE__);
}

/* ---- long packets yield to other queues ---- */

/* Where queue 0's long packet and queue 1's job write their TIMESTAMPs. */
#define TS_LONG (SYNC_OFF + 8)
#define TS_OTHER (SYNC_OFF + 16)

/*
 * Queue q: a TIMESTAMP, then a WAIT nobody satisfies.  Ready when the
 * engine starts, it has a long packet yield once, then parks: its
 * DEFERRED_US stays to be read.  (Alone on the engine, a packet never
 * yields.)
 */
static void submit_other(struct hpu_test *t, unsigned int q)
{
	struct hpu_cb other = { .len = 0 };

	cb_timestamp(&other, VA_HOST + TS_OTHER);
	cb_sync(&other, HPU_PKT_WAIT, SYNC_VA(0), 1);
	submit_user(t, q, &other, 2);
}

/*
 * Queue 0: cb (one long packet), then a TIMESTAMP; queue 1: submit_other().
 * Run on the caller's thread; how long that took, in us.
 */
static uint64_t run_beside_other(struct hpu_test *t, struct hpu_cb *cb)
{
	uint64_t start;

	cb_timestamp(cb, VA_HOST + TS_LONG);
	submit_user(t, 0, cb, 1);
	submit_other(t, 1);
	start = now_ns();
	run(t);
	return (now_ns() - start) / 1000;
}

/*
 * Queue 1 waited for about a slice of queue 0's long packet, not for all of
 * it; for a slice stretched by the packet's staging (hdm_tmem.h) if staged.
 */
static void expect_yielded(struct hpu_test *t, const char *what, uint64_t ran_us, bool staged,
			   int line)
{
	uint64_t last = hdm_ld_le64(t->mem + TS_LONG), other = hdm_ld_le64(t->mem + TS_OTHER);
	uint32_t deferred = hpu_rd(t, REG_Q(1, DEFERRED_US));

	printf("# slice: a %" PRIu64 " us %s%s deferred queue 1 by %u us\n", ran_us,
	       staged ? "staged " : "", what, deferred);
	expect_done(t, 0, line);
	hpu_check(t, ran_us >= 4 * HPU_ENGINE_SLICE_US, "the packet is longer than 4 slices", line);
	hpu_check(t, other && other < last, "queue 1 ran before the packet ended", line);
	hpu_check(t, deferred >= HPU_ENGINE_SLICE_US && deferred < ran_us / (staged ? 1 : 2),
		  "queue 1 deferred for about a slice", line);
	hpu_check_eq(t, hpu_rd(t, REG_Q(1, STATUS)), HPU_Q_STATUS_WAITING, "queue 1 parked", line);
}

/* Items of the long launches: 32 parts of HDM_TPC_PART_MAX_ITEMS. */
#define LONG_ITEMS (32ull * HDM_TPC_PART_MAX_ITEMS)

/* Each of n int32 at va is times: every item done exactly that often. */
static void expect_all_times(struct hpu_test *t, uint64_t va, uint64_t n, int32_t times, int line)
{
	int32_t *v = malloc(n * sizeof(*v));
	uint64_t i, bad = 0;

	va_read(t, va, v, n * sizeof(*v));
	for (i = 0; i < n; i++)
		bad += v[i] != times;
	hpu_check_eq(t, bad, 0, "items not done exactly as often as the launch says", line);
	free(v);
}

static void expect_all_once(struct hpu_test *t, uint64_t va, uint64_t n, int line)
{
	expect_all_times(t, va, n, 1, line);
}

/*
 * A launch of 32 parts yields between two of them once its slice is over,
 * and goes on with the parts left: each part runs once, each item is done
 * once, finish() runs once at the end.
 */
static void case_launch_yields(struct hpu_test *t)
{
	struct launch l = launch_new(TK_COUNT, 1);
	const uint64_t shape[1] = { LONG_ITEMS };
	struct hpu_cb cb = { .len = 0 };
	uint64_t ran_us;

	map_compute(t);
	l.t[0] = desc(VA_DATA, HPU_DTYPE_I32, 1, shape, 0);
	cb_launch(&cb, VA_PARAM, launch_write(t, VA_PARAM, &l));
	tk.parts = tk.finishes = 0;
	ran_us = run_beside_other(t, &cb);
	expect_yielded(t, "launch", ran_us, false, __LINE__);
	HPU_CHECK_EQ(t, tk.parts, LONG_ITEMS / HDM_TPC_PART_MAX_ITEMS);
	HPU_CHECK_EQ(t, tk.finishes, 1);
	expect_all_once(t, VA_DATA, LONG_ITEMS, __LINE__);
}

/* Items of each phase of a two-phase launch, and of the launch beside it: 8 and 24 parts at least. */
#define PHASE_ITEMS (8ull * HDM_TPC_PART_MAX_ITEMS)
#define BESIDE_ITEMS (24ull * HDM_TPC_PART_MAX_ITEMS)

/*
 * A launch of two phases of 8 parts each, beside another queue's longer
 * launch, yields inside both phases and goes on: each item of each phase
 * runs once, none of phase 1 before every item of phase 0 and its
 * finish(), which runs once per phase.
 */
static void case_launch_phases_yield(struct hpu_test *t)
{
	const uint64_t shape[1] = { PHASE_ITEMS }, beside[1] = { BESIDE_ITEMS };
	struct launch l = launch_new(TK_PHASES, 1), other = launch_new(TK_COUNT, 1);
	struct hpu_cb cb = { .len = 0 }, cb_other = { .len = 0 };
	uint64_t other_va = VA_DATA + PHASE_ITEMS * 4, other_param = VA_PARAM + 2048;

	map_compute(t);
	l.t[0] = desc(VA_DATA, HPU_DTYPE_I32, 1, shape, 0);
	cb_launch(&cb, VA_PARAM, launch_write(t, VA_PARAM, &l));
	other.t[0] = desc(other_va, HPU_DTYPE_I32, 1, beside, 0);
	cb_launch(&cb_other, other_param, launch_write(t, other_param, &other));
	tk.early = tk.in_phase = 0;
	memset(tk.phase_finishes, 0, sizeof(tk.phase_finishes));
	memset(tk.inside, 0, sizeof(tk.inside));
	submit_user(t, 0, &cb, 1);
	submit_user(t, 1, &cb_other, 2);
	run(t);
	expect_done(t, 0, __LINE__);
	expect_done(t, 1, __LINE__);
	printf("# queue 1 ran %u parts inside phase 0, %u inside phase 1\n", tk.inside[0],
	       tk.inside[1]);
	HPU_CHECK(t, tk.inside[0] > 0 && tk.inside[1] > 0);
	HPU_CHECK_EQ(t, tk.phase_finishes[0], 1);
	HPU_CHECK_EQ(t, tk.phase_finishes[1], 1);
	HPU_CHECK_EQ(t, tk.early, 0);
	expect_all_times(t, VA_DATA, PHASE_ITEMS, 2, __LINE__);
	expect_all_once(t, other_va, BESIDE_ITEMS, __LINE__);
}

/* A dense 1-D view of n elements at base, as the engine hands a kernel its tensors. */
static struct hdm_kview host_view(void *base, uint32_t dtype, uint64_t n)
{
	struct hdm_kview v = { .base = base, .dtype = dtype, .ndim = 1, .strides = { 1 } };
	unsigned int k;

	for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++)
		v.shape[k] = k ? 1 : n;
	return v;
}

#define YD_N (1u << 23)

/*
 * dropout over 2^23 elements, its mask at mask_va, yields between its
 * parts: out and mask are to the bit what one uninterrupted call of the
 * kernel leaves, and the rng's offset advances once (its finish()), at the
 * end: every part drew from the offset the launch began with.
 */
static void dropout_yields(struct hpu_test *t, uint64_t mask_va)
{
	const uint64_t out_va = VA_DATA, in_va = VA_DATA + 4 * YD_N, rng_va = VA_DATA + 9 * YD_N;
	const uint64_t shape[1] = { YD_N }, rng_shape[1] = { 2 };
	const double p = 0.3;
	struct launch l = launch_new(HPU_KERNEL_DROPOUT, 4);
	float *in = malloc(YD_N * 4), *out = malloc(YD_N * 4), *ref = malloc(YD_N * 4);
	uint8_t *mask = malloc(YD_N), *ref_mask = malloc(YD_N);
	int64_t rng[2] = { 1234, 77 }, ref_rng[2] = { 1234, 77 };
	struct hdm_kstate state = { 0 };
	struct hdm_kcall c = { .kernel = HPU_KERNEL_DROPOUT, .num_tensors = 4, .state = &state };
	struct hpu_cb cb = { .len = 0 };
	uint64_t i, items = 0;

	for (i = 0; i < YD_N; i++)
		in[i] = rnd_value();
	c.scalars[0] = p;
	c.t[0] = host_view(ref, F32, YD_N);
	c.t[1] = host_view(ref_mask, HPU_DTYPE_U8, YD_N);
	c.t[2] = host_view(in, F32, YD_N);
	c.t[3] = host_view(ref_rng, HPU_DTYPE_I64, 2);
	HPU_CHECK_EQ(t, hdm_kernel_dropout.check(&c, &items), 0);
	hdm_kernel_dropout.run(&c, 0, items);
	hdm_kernel_dropout.finish(&c);

	map_compute(t);
	va_write(t, in_va, in, YD_N * 4);
	va_write(t, rng_va, rng, sizeof(rng));
	l.t[0] = desc(out_va, F32, 1, shape, 0);
	l.t[1] = desc(mask_va, HPU_DTYPE_U8, 1, shape, 0);
	l.t[2] = desc(in_va, F32, 1, shape, 0);
	l.t[3] = desc(rng_va, HPU_DTYPE_I64, 1, rng_shape, 0);
	memcpy(&l.p.scalars[0], &p, sizeof(p));
	cb_launch(&cb, VA_PARAM, launch_write(t, VA_PARAM, &l));
	/* The staged mask's buffers. */
	allocs.watch = YD_N;
	alloc_start();
	expect_yielded(t, "dropout", run_beside_other(t, &cb),
		       mask_va == VA_SCAT && !t->core->qman.held_max, __LINE__);
	__atomic_store_n(&allocs.on, false, __ATOMIC_RELAXED);
	if (mask_va != VA_SCAT)
		HPU_CHECK_EQ(t, allocs.watched, 0);
	else if (t->core->qman.held_max)
		HPU_CHECK_EQ(t, allocs.watched, 1);
	else
		HPU_CHECK(t, allocs.watched > 1);
	va_read(t, out_va, out, YD_N * 4);
	va_read(t, mask_va, mask, YD_N);
	va_read(t, rng_va, rng, sizeof(rng));
	HPU_CHECK(t, !memcmp(out, ref, YD_N * 4));
	HPU_CHECK(t, !memcmp(mask, ref_mask, YD_N));
	HPU_CHECK_EQ(t, rng[1], 77 + YD_N);
	HPU_CHECK_EQ(t, ref_rng[1], rng[1]);
	free(in);
	free(out);
	free(ref);
	free(mask);
	free(ref_mask);
}

static void case_dropout_yields(struct hpu_test *t)
{
	dropout_yields(t, VA_DATA + 8 * YD_N);
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
}

/*
 * The mask across the scattered pages (all of them) is staged: the launch
 * keeps its buffer across its yields (staged once), and yields as often as
 * if it were not staged.
 */
static void case_staged_dropout_yields(struct hpu_test *t)
{
	dropout_yields(t, VA_SCAT);
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
}

/*
 * With no room to keep staging buffers, the mask is written back at each
 * yield and gathered again (staged again) when the launch goes on, in
 * longer slices.
 */
static void case_staged_dropout_yields_unheld(struct hpu_test *t)
{
	t->core->qman.held_max = 0;
	dropout_yields(t, VA_SCAT);
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
}

/* Reset queue 0 once its launch yielded keeping a staging buffer (queue 1's job is read). */
static void reset_held(struct hpu_test *t)
{
	if (!t->core->qman.held)
		return;
	t->on_dma = NULL;
	hpu_wr(t, REG_Q(0, CTRL), HPU_Q_CTRL_RESET);
}

/*
 * A queue reset while the launch is yielded with a staging buffer kept: the
 * job fails ABORTED, and the buffer is freed (the sanitizer build checks
 * for leaks), not written back: the mask keeps what it had.
 */
static void case_staged_held_reset(struct hpu_test *t)
{
	const uint64_t shape[1] = { YD_N }, rng_shape[1] = { 2 };
	const uint64_t rng_va = VA_DATA + 9 * YD_N;
	struct launch l = launch_new(HPU_KERNEL_DROPOUT, 4);
	int64_t rng[2] = { 1234, 77 };
	uint8_t *mask = malloc(YD_N);
	const double p = 0.3;
	struct hpu_cb cb = { .len = 0 };
	struct hpu_cb other = { .len = 0 };
	uint64_t i, touched = 0;

	map_compute(t);
	memset(mask, 0xa5, YD_N);
	va_write(t, VA_SCAT, mask, YD_N);
	va_write(t, rng_va, rng, sizeof(rng));
	l.t[0] = desc(VA_DATA, F32, 1, shape, 0);
	l.t[1] = desc(VA_SCAT, HPU_DTYPE_U8, 1, shape, 0);
	l.t[2] = desc(VA_DATA + 4 * YD_N, F32, 1, shape, 0);
	l.t[3] = desc(rng_va, HPU_DTYPE_I64, 1, rng_shape, 0);
	memcpy(&l.p.scalars[0], &p, sizeof(p));
	cb_launch(&cb, VA_PARAM, launch_write(t, VA_PARAM, &l));
	submit_user(t, 0, &cb, 3);
	cb_timestamp(&other, VA_HOST + TS_OTHER);
	submit_user(t, 1, &other, 2);
	t->on_dma = reset_held;
	run(t);
	/* Noticed before the launch went on: at the packet, by the queue's engine. */
	EXPECT_EVENT(t, HPU_EVENT_ABORTED, 0, ASID, HPU_ENGINE_QMAN, 3, 0);
	HPU_CHECK(t, t->on_dma == NULL);
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
	va_read(t, VA_SCAT, mask, YD_N);
	for (i = 0; i < YD_N; i++)
		touched += mask[i] != 0xa5;
	HPU_CHECK_EQ(t, touched, 0);
	free(mask);
}

/*
 * A SUM of 2^26 ones (a broadcast dim) into one output is 64 items of a
 * chunk each, not one: it yields between them, its partials kept in the
 * launch's scratch across the yields, and sums to 2^26.
 */
static void case_reduce_one_output_yields(struct hpu_test *t)
{
	const uint64_t shape[1] = { 1ull << 26 }, one[1] = { 1 };
	struct launch l = launch_new(HPU_KERNEL_REDUCE, 2);
	struct hpu_cb cb = { .len = 0 };
	const float ones = 1.0f;
	float sum = 0;

	map_compute(t);
	va_write(t, VA_DATA + 64, &ones, sizeof(ones));
	l.t[0] = desc(VA_DATA, F32, 1, one, 0);
	l.t[1] = desc(VA_DATA + 64, F32, 1, shape, 1);
	l.p.args[0] = HPU_REDUCE_SUM;
	l.p.args[1] = 1;
	cb_launch(&cb, VA_PARAM, launch_write(t, VA_PARAM, &l));
	expect_yielded(t, "one-output SUM", run_beside_other(t, &cb), false, __LINE__);
	va_read(t, VA_DATA, &sum, sizeof(sum));
	HPU_CHECK(t, sum == (float)(1ull << 26));
	HPU_CHECK(t, !t->core->qman.queues[0].job.scratch);
}

/* The launch a yielded one is rewritten into (on_dma), once its parts began. */
static struct launch rewrite_to;

/* Rewrite the parameter block as the launch yielded: the first read after its parts ran. */
static void rewrite_params(struct hpu_test *t)
{
	if (!__atomic_load_n(&tk.parts, __ATOMIC_RELAXED))
		return;
	t->on_dma = NULL;
	launch_write(t, VA_PARAM, &rewrite_to);
}

/*
 * The long launch on queue 0, beside submit_other(): it yields once, and
 * is rewritten into rewrite_to (as l's, but what changes) before it goes on.
 */
static void launch_rewritten(struct hpu_test *t, struct launch *l)
{
	const uint64_t shape[1] = { LONG_ITEMS };

	map_compute(t);
	*l = launch_new(TK_COUNT, 1);
	l->t[0] = desc(VA_DATA, HPU_DTYPE_I32, 1, shape, 0);
	rewrite_to = *l;
	tk.parts = tk.finishes = 0;
	t->on_dma = rewrite_params;
	submit_other(t, 1);
}

/* A launch that yielded is decoded and checked anew: rewritten into one refused, it fails. */
static void case_launch_rewritten(struct hpu_test *t)
{
	struct launch l;

	launch_rewritten(t, &l);
	rewrite_to.t[0].dtype = F32;
	launch_run(t, VA_PARAM, launch_write(t, VA_PARAM, &l));
	expect_event(t, HPU_EVENT_BAD_KERNEL, 0, ASID, HPU_ENGINE_TPC, 3, 0, REFUSED_LOGS,
		     __LINE__);
	HPU_CHECK(t, tk.parts > 0 && tk.parts < LONG_ITEMS / HDM_TPC_PART_MAX_ITEMS);
	HPU_CHECK_EQ(t, tk.finishes, 0);
}

/*
 * Rewritten into a smaller staged launch, the launch that yielded runs that
 * whole from its first item (the progress saved was another launch's), and
 * nothing past its operand is touched (what the sanitizer build checks).
 */
static void case_launch_rewritten_staged(struct hpu_test *t)
{
	const uint64_t small[1] = { 3 * HDM_TPC_PART_ITEMS + 8 };
	const uint64_t staged = VA_SCAT + HPU_MMU_HUGE_SIZE - 4 * HDM_TPC_PART_ITEMS;
	struct launch l;

	launch_rewritten(t, &l);
	rewrite_to.t[0] = desc(staged, HPU_DTYPE_I32, 1, small, 0);
	launch_run(t, VA_PARAM, launch_write(t, VA_PARAM, &l));
	EXPECT_DONE(t, 0);
	HPU_CHECK_EQ(t, tk.finishes, 1);
	expect_all_once(t, staged, small[0], __LINE__);
	HPU_CHECK_EQ(t, read_i32(t, staged - 4), 0);
	HPU_CHECK_EQ(t, read_i32(t, staged + small[0] * 4), 0);
}

/*
 * A GEMM of batch small blocks (A's and B's strides 0) yields between two
 * blocks once its slice is over and goes on with the blocks left: each
 * batch matrix of C (beta 0.5: a block computed twice would show) is to
 * the bit what the GEMM of batch 1 leaves, which never yields.
 */
#define YG_M 40u
#define YG_N 24u
#define YG_MAT (YG_M * YG_N * 4u)

static void gemm_yields(struct hpu_test *t, uint32_t batch, uint32_t k, uint64_t a_va,
			uint64_t c_va)
{
	struct gemm g = {
		.dtype_ab = F32, .dtype_c = F32, .batch = 1, .m = YG_M, .n = YG_N, .k = k,
		.a = a_va, .b = VA_DATA + (1u << 20), .c = c_va,
		.lda = k, .ldb = YG_N, .ldc = YG_N, .stride_c = YG_M * YG_N, .alpha = 1,
		.beta = 0.5f,
	};
	float *a = malloc((size_t)YG_M * k * 4), *b = malloc((size_t)k * YG_N * 4);
	float c0[YG_M * YG_N];
	const uint64_t bytes = (uint64_t)batch * YG_MAT;
	uint8_t *c = malloc(bytes), *one = malloc(YG_MAT);
	struct hpu_cb cb = { .len = 0 };
	uint64_t i, ran_us, bad = 0;

	map_compute(t);
	for (i = 0; i < (uint64_t)YG_M * k; i++)
		a[i] = rnd_rounding(F32);
	for (i = 0; i < (uint64_t)k * YG_N; i++)
		b[i] = rnd_rounding(F32);
	for (i = 0; i < HPU_ARRAY_SIZE(c0); i++)
		c0[i] = rnd_rounding(F32);
	va_write(t, g.a, a, (size_t)YG_M * k * 4);
	va_write(t, g.b, b, (size_t)k * YG_N * 4);
	for (i = 0; i < batch; i++)
		memcpy(c + i * YG_MAT, c0, YG_MAT);
	va_write(t, g.c, c, bytes);
	cb_gemm(&cb, &g);
	submit_user(t, 2, &cb, 3);
	run(t);
	EXPECT_DONE(t, 2);
	va_read(t, g.c, one, YG_MAT);

	va_write(t, g.c, c, bytes);
	g.batch = batch;
	cb.len = 0;
	cb_gemm(&cb, &g);
	ran_us = run_beside_other(t, &cb);
	expect_yielded(t, "GEMM", ran_us, false, __LINE__);
	HPU_CHECK_EQ(t, t->core->qman.held, 0);
	va_read(t, g.c, c, bytes);
	for (i = 0; i < batch; i++)
		bad += memcmp(c + i * YG_MAT, one, YG_MAT) != 0;
	HPU_CHECK_EQ(t, bad, 0);
	free(a);
	free(b);
	free(c);
	free(one);
}

static void case_gemm_yields(struct hpu_test *t)
{
	gemm_yields(t, 16384, 120, VA_DATA, VA_DATA + (2u << 20));
}

/*
 * A in host pages and C across the scattered pages (all of them) are
 * staged: the GEMM goes on with the blocks left although their buffers are
 * new at each step, C written back at each yield.
 */
static void case_staged_gemm_yields(struct hpu_test *t)
{
	gemm_yields(t, SCAT_PAGES * HPU_MMU_HUGE_SIZE / YG_MAT, 1200, VA_HOST + SRC_OFF, VA_SCAT);
}

/* ---- fuzz: random kernel launches and GEMMs ---- */

/*
 * Operands live in two areas: a run of HBM, and across the seam of the
 * scattered pages, where the engine stages each operand in a buffer of its
 * extent, so that a kernel reaching past an operand reads or writes past a
 * heap buffer (what the sanitizer build of this suite catches).  The first
 * half of an area holds int64 values 0..3 (indices, often valid), the
 * second random bytes.
 */
#define FZ_AREA 0x8000u
#define FZ_LAUNCHES 6000u

static const uint64_t fz_areas[] = { VA_DATA, VA_SCAT + HPU_MMU_HUGE_SIZE - FZ_AREA / 2 };
static const uint32_t fz_dtypes[] = { F32, BF16, HPU_DTYPE_I32, HPU_DTYPE_I64, HPU_DTYPE_U8, 9 };

/* Launches mostly share small sizes, so that many get past the kernels' checks. */
static uint64_t fz_dim(void)
{
	static const uint64_t dims[] = { 0, 1, 1, 2, 3, 5 };

	return dims[rnd() % HPU_ARRAY_SIZE(dims)];
}

/* Somewhere in an area; in its first half for indices. */
static uint64_t fz_va(bool indices)
{
	uint64_t half = FZ_AREA / 16;

	if (!(rnd() % 128))
		return rnd() % 2 ? VA_RO + 64 : rnd();
	return fz_areas[rnd() % HPU_ARRAY_SIZE(fz_areas)] +
	       (indices ? rnd() % half : rnd() % (2 * half)) * 8;
}

/* A different walk of d: reversed, broadcast by a stride of 0, or spread out. */
static void fz_stride(struct hpu_tensor_desc *d)
{
	if (d->ndim)
		d->strides[rnd() % d->ndim] *= (int64_t[]){ -1, 0, 3, -2 }[rnd() % 4];
}

/* Any kernel, any operand count, operands mostly of the launch's dtype and shape. */
static void fz_random(struct launch *l)
{
	uint32_t kernel = 1 + (uint32_t)(rnd() % HPU_KERNEL_CLIP_GRAD_NORM), dtype, ndim, n, i, k;
	const struct hdm_kernel_def *def = __real_hdm_kernel_lookup(kernel);
	uint64_t shape[HPU_TENSOR_MAX_DIMS], own[HPU_TENSOR_MAX_DIMS];

	n = def->min_tensors + (uint32_t)(rnd() % (def->max_tensors - def->min_tensors + 1u));
	if (!(rnd() % 16))
		n = (uint32_t)(rnd() % (HPU_KERNEL_MAX_TENSORS + 1));
	*l = launch_new(kernel, n);
	dtype = (uint32_t[]){ F32, F32, F32, F32, BF16, HPU_DTYPE_I64 }[rnd() % 6];
	ndim = (uint32_t)(rnd() % 4);
	for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++)
		shape[k] = fz_dim();
	for (i = 0; i < n; i++) {
		uint32_t nd = ndim;

		memcpy(own, shape, sizeof(own));
		switch (rnd() % 16) {
		case 0: /* a shape of its own */
			nd = (uint32_t)(rnd() % 4);
			for (k = 0; k < nd; k++)
				own[k] = fz_dim();
			break;
		case 1: /* broadcast, or reduced with its dims kept */
			for (k = 0; k < nd; k++)
				if (rnd() % 2)
					own[k] = 1;
			break;
		case 2: /* a scalar */
			nd = 0;
			break;
		default:
			break;
		}
		l->t[i] = desc(fz_va(false),
			       rnd() % 8 ? dtype : fz_dtypes[rnd() % HPU_ARRAY_SIZE(fz_dtypes)], nd,
			       own, 0);
		if (!(rnd() % 8))
			fz_stride(&l->t[i]);
	}
	/* An op or a dim, a flag or a mask of dims, or 0 (unused); the rest seldom set. */
	l->p.args[0] = rnd() % 2 ? 0 : (int64_t)(rnd() % 16) - 1;
	l->p.args[1] = rnd() % 2 ? 0 : (int64_t)(rnd() % 8) - 1;
	for (k = 2; k < HPU_KERNEL_MAX_ARGS; k++)
		l->p.args[k] = rnd() % 16 ? 0 : (int64_t)(rnd() % 4) - 1;
}

/*
 * Valid launches of the kernels whose operands index or have fixed shapes,
 * which random ones seldom are.  Per operand its dtype (f F32, u U8, l I64,
 * * the launch's float dtype) and dims (N, C, V, D: small sizes drawn per
 * launch; none: a scalar; R: the two words of an RNG state).
 */
static const struct fz_template {
	uint32_t kernel;
	int64_t a0, a1;
	const char *operands[HPU_KERNEL_MAX_TENSORS];
} fz_templates[] = {
	{ HPU_KERNEL_WHERE, 0, 0, { "*ND", "uND", "*ND", "*ND" } },
	{ HPU_KERNEL_NLL_LOSS, 0, -100, { "fN", "*NC", "lN" } },
	{ HPU_KERNEL_NLL_LOSS, 1, 1, { "f", "*NC", "lN" } },
	{ HPU_KERNEL_NLL_LOSS_BWD, 2, -100, { "*NC", "f", "lN" } },
	{ HPU_KERNEL_CROSS_ENTROPY, 1, -100, { "f", "*NC", "lN" } },
	{ HPU_KERNEL_CROSS_ENTROPY_BWD, 0, 2, { "*NC", "fN", "*NC", "lN" } },
	{ HPU_KERNEL_DROPOUT, 0, 0, { "*ND", "uND", "*ND", "lR" } },
	{ HPU_KERNEL_DROPOUT_BWD, 0, 0, { "*ND", "*ND", "uND" } },
	{ HPU_KERNEL_LAYER_NORM, 1, 3, { "*ND", "fN", "fN", "*ND", "*D", "*D" } },
	{ HPU_KERNEL_LAYER_NORM_BWD, 1, 3, { "*ND", "*D", "*D", "*ND", "*ND", "fN", "fN", "*D" } },
	{ HPU_KERNEL_EMBEDDING, -1, 0, { "*ND", "*VD", "lN" } },
	{ HPU_KERNEL_EMBEDDING_BWD, 1, 0, { "*VD", "*ND", "lN" } },
	{ HPU_KERNEL_ADAMW, 0, 0, { "*N", "*N", "*N", "*N", "l" } },
	{ HPU_KERNEL_CLIP_GRAD_NORM, 0, 0, { "f", "*N", "*D", "*ND" } },
};

/* A template's launch, then as often as not one thing of it changed. */
static void fz_template(struct launch *l)
{
	const struct fz_template *f = &fz_templates[rnd() % HPU_ARRAY_SIZE(fz_templates)];
	uint64_t sizes[26] = { 0 }, shape[HPU_TENSOR_MAX_DIMS];
	uint32_t dtype = rnd() % 4 ? F32 : BF16, n, i;
	struct hpu_tensor_desc *d;

	sizes['N' - 'A'] = fz_dim();
	sizes['D' - 'A'] = fz_dim();
	sizes['C' - 'A'] = 1 + rnd() % 5;
	sizes['V' - 'A'] = 1 + rnd() % 5;
	sizes['R' - 'A'] = 2;
	for (n = 0; n < HPU_KERNEL_MAX_TENSORS && f->operands[n]; n++)
		;
	*l = launch_new(f->kernel, n);
	l->p.args[0] = f->a0;
	l->p.args[1] = f->a1;
	for (i = 0; i < n; i++) {
		const char *op = f->operands[i], *dim;
		uint32_t dt = *op == 'f' ? F32 : *op == 'u' ? HPU_DTYPE_U8 :
			      *op == 'l' ? HPU_DTYPE_I64 : dtype;

		for (dim = op + 1; *dim; dim++)
			shape[dim - op - 1] = sizes[*dim - 'A'];
		l->t[i] = desc(fz_va(dt == HPU_DTYPE_I64), dt, (uint32_t)(dim - op - 1), shape, 0);
	}
	if (rnd() % 2)
		return;
	d = &l->t[rnd() % n];
	switch (rnd() % 5) {
	case 0:
		d->dtype = fz_dtypes[rnd() % HPU_ARRAY_SIZE(fz_dtypes)];
		break;
	case 1:
		if (d->ndim)
			d->shape[rnd() % d->ndim] = fz_dim();
		break;
	case 2:
		fz_stride(d);
		break;
	case 3:
		d->addr = fz_va(false);
		break;
	default:
		l->p.args[rnd() % 2] = (int64_t)(rnd() % 8) - 2;
		break;
	}
}

/* A GEMM of small or blocked sizes, leading dims and batch strides fitting or not. */
static void fz_gemm(struct gemm *g)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 5, 17, 64, 300 };
	static const uint32_t dtypes[] = { F32, F32, BF16, HPU_DTYPE_I32 };
	uint64_t rows_a, cols_a, rows_b, cols_b;

	*g = (struct gemm){
		.flags = (uint32_t)(rnd() % 4), .dtype_ab = dtypes[rnd() % 4],
		.dtype_c = dtypes[rnd() % 3], .batch = (uint32_t)(rnd() % 4),
		.m = sizes[rnd() % 8], .n = sizes[rnd() % 8], .k = sizes[rnd() % 8],
		.a = fz_va(false), .b = fz_va(false), .c = fz_va(false),
		.alpha = rnd() % 2 ? 1 : -0.5f, .beta = (float)(rnd() % 3) / 2,
	};
	rows_a = g->flags & TA ? g->k : g->m;
	cols_a = g->flags & TA ? g->m : g->k;
	rows_b = g->flags & TB ? g->n : g->k;
	cols_b = g->flags & TB ? g->k : g->n;
	/* Leading dims of the row, a little more, or one short. */
	g->lda = cols_a + rnd() % 3 - (rnd() % 8 ? 0 : 1);
	g->ldb = cols_b + rnd() % 3 - (rnd() % 8 ? 0 : 1);
	g->ldc = g->n + rnd() % 3 - (rnd() % 8 ? 0 : 1);
	/* Batch strides of the matrix, a little more, or 0 (one matrix repeated). */
	g->stride_a = rnd() % 4 ? rows_a * g->lda + rnd() % 3 : 0;
	g->stride_b = rnd() % 4 ? rows_b * g->ldb + rnd() % 3 : 0;
	g->stride_c = rnd() % 8 ? (uint64_t)g->m * g->ldc + rnd() % 3 : 0;
	if (!(rnd() % 32))
		g->pad = (uint32_t)rnd();
}

static void case_launch_fuzz(struct hpu_test *t)
{
	static const double scalars[] = { 0, 0.5, 1, -1, 2, 0.9, 1e-6, NAN, INFINITY };
	uint64_t fill[FZ_AREA / 8];
	unsigned int i, j, ran = 0, failed = 0;

	map_compute(t);
	hpu_rng = 0x13198a2e03707344ull;
	for (i = 0; i < HPU_ARRAY_SIZE(fz_areas); i++) {
		for (j = 0; j < HPU_ARRAY_SIZE(fill); j++)
			fill[j] = j < HPU_ARRAY_SIZE(fill) / 2 ? rnd() % 4 : rnd();
		va_write(t, fz_areas[i], fill, sizeof(fill));
	}
	for (i = 0; i < FZ_LAUNCHES && !t->failed; i++) {
		unsigned int q = rnd() % 4 ? 0 : 2;
		struct hpu_cb cb = { .len = 0 };
		struct launch l;
		struct gemm g;

		if (q) {
			fz_gemm(&g);
			cb_gemm(&cb, &g);
			submit_user(t, q, &cb, 3);
			run(t);
		} else {
			if (rnd() % 2)
				fz_random(&l);
			else
				fz_template(&l);
			for (j = 0; j < HPU_KERNEL_MAX_SCALARS; j++)
				memcpy(&l.p.scalars[j], &scalars[rnd() % HPU_ARRAY_SIZE(scalars)],
				       sizeof(l.p.scalars[j]));
			launch_run(t, VA_PARAM, launch_write(t, VA_PARAM, &l));
		}
		/* Done or failed, the job ended and the queue is idle. */
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, CI)), hpu_rd(t, REG_Q(q, PI)));
		HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(q, STATUS)), 0);
		if (hpu_rd(t, HPU_REG_EQ_PI) == hpu_rd(t, HPU_REG_EQ_CI))
			ran++;
		else
			failed++;
		hpu_wr(t, HPU_REG_EQ_CI, hpu_rd(t, HPU_REG_EQ_PI));
		HPU_CHECK_EQ(t, hpu_rd(t, HPU_REG_EQ_STATUS), 0);
	}
	printf("# fuzz: %u launches, %u ran, %u failed\n", i, ran, failed);
	/* Enough of them ran for the kernels, not only their checks, to have met odd operands. */
	HPU_CHECK(t, ran > FZ_LAUNCHES / 10 && failed > FZ_LAUNCHES / 10);
	t->logs_seen = t->logs;
	hpu_wr(t, HPU_REG_IRQ_CAUSE, UINT32_MAX);
	expect_usable(t, 0);
}

/* ---- TPC_LAUNCH refusals and faults ---- */

#define OUT_VA (VA_DATA + 0x500000)
#define OUT_WORDS 64u

struct launch_bad_case {
	const char *name;
	void (*bend)(struct launch *l, uint64_t *params, uint32_t *size);
	uint32_t event;
	uint64_t addr; /* 0: the packet's offset (0) */
};

/* Refusals are checked against a valid axpy launch on OUT_VA. */
#define LBEND(fn, stmt) \
	static void fn(struct launch *l, uint64_t *params, uint32_t *size) \
	{                                                                   \
		(void)l, (void)params, (void)size;                          \
		stmt;                                                       \
	}

LBEND(size_small, *size = sizeof(struct hpu_kernel_params) - 8)
LBEND(size_big, *size = HPU_KERNEL_PARAMS_MAX + 8)
LBEND(size_mismatch, *size -= sizeof(struct hpu_tensor_desc))
LBEND(size_extra, *size += sizeof(struct hpu_tensor_desc))
LBEND(version, l->p.version = HPU_KERNEL_PARAMS_VERSION + 1)
LBEND(version_0, l->p.version = 0)
LBEND(flags, l->p.flags = 1)
LBEND(too_many, (l->p.num_tensors = HPU_KERNEL_MAX_TENSORS + 1,
		 *size = (uint32_t)(sizeof(l->p) + 17 * sizeof(l->t[0]))))
LBEND(kernel_0, l->p.kernel = 0)
LBEND(kernel_unknown, l->p.kernel = 0x7e57ffffu)
LBEND(kernel_count, (l->p.num_tensors = 1, *size -= sizeof(l->t[0])))
LBEND(dtype, l->t[1].dtype = 9)
LBEND(dtype_0, l->t[0].dtype = 0)
LBEND(ndim, l->t[1].ndim = HPU_TENSOR_MAX_DIMS + 1)
LBEND(dim_shape, l->t[0].shape[3] = 2)
LBEND(dim_stride, l->t[1].strides[2] = 1)
LBEND(extent_overflow, (l->t[1].ndim = 2, l->t[1].shape[1] = 1ull << 62,
			l->t[1].strides[1] = 4))
LBEND(extent_wrap, l->t[1].addr = UINT64_MAX - 8)
LBEND(extent_below_0, (l->t[1].addr = 8, l->t[1].strides[0] = -1))
LBEND(shape_huge, (l->t[1].shape[0] = (1ull << 63) + 1, l->t[1].strides[0] = 0))
LBEND(check_refuses, l->t[0].shape[0] = OUT_WORDS - 1)
LBEND(params_unaligned, *params += 4)
LBEND(params_unmapped, *params = VA_UNMAPPED)
LBEND(params_tail, *params = VA_HOST + PARAM_OFF + PARAM_SIZE - 64)
LBEND(tensor_unmapped, l->t[1].addr = VA_UNMAPPED + 4)
LBEND(tensor_tail, l->t[1].addr = VA_HBM + BUF_SIZE - 16)
LBEND(output_ro, l->t[0].addr = VA_RO + 64)
LBEND(output_reversed_below, (l->t[0].addr = VA_DATA + 8, l->t[0].strides[0] = -1))

static const struct launch_bad_case launch_bad_cases[] = {
	{ "block smaller than the header", size_small, HPU_EVENT_BAD_KERNEL, 0 },
	{ "block past HPU_KERNEL_PARAMS_MAX", size_big, HPU_EVENT_BAD_KERNEL, 0 },
	{ "size one descriptor short", size_mismatch, HPU_EVENT_BAD_KERNEL, 0 },
	{ "size one descriptor long", size_extra, HPU_EVENT_BAD_KERNEL, 0 },
	{ "version", version, HPU_EVENT_BAD_KERNEL, 0 },
	{ "version 0", version_0, HPU_EVENT_BAD_KERNEL, 0 },
	{ "flags", flags, HPU_EVENT_BAD_KERNEL, 0 },
	{ "17 tensors", too_many, HPU_EVENT_BAD_KERNEL, 0 },
	{ "kernel id 0", kernel_0, HPU_EVENT_BAD_KERNEL, 0 },
	{ "unknown kernel id", kernel_unknown, HPU_EVENT_BAD_KERNEL, 0 },
	{ "fewer tensors than the kernel takes", kernel_count, HPU_EVENT_BAD_KERNEL, 0 },
	{ "unknown dtype", dtype, HPU_EVENT_BAD_KERNEL, 0 },
	{ "dtype 0", dtype_0, HPU_EVENT_BAD_KERNEL, 0 },
	{ "ndim 7", ndim, HPU_EVENT_BAD_KERNEL, 0 },
	{ "shape 2 past ndim", dim_shape, HPU_EVENT_BAD_KERNEL, 0 },
	{ "stride past ndim", dim_stride, HPU_EVENT_BAD_KERNEL, 0 },
	{ "extent overflowing", extent_overflow, HPU_EVENT_BAD_KERNEL, 0 },
	{ "extent wrapping the top", extent_wrap, HPU_EVENT_BAD_KERNEL, 0 },
	{ "extent reaching below 0", extent_below_0, HPU_EVENT_BAD_KERNEL, 0 },
	{ "shape of 2^63 + 1", shape_huge, HPU_EVENT_BAD_KERNEL, 0 },
	{ "the kernel's check refuses", check_refuses, HPU_EVENT_BAD_KERNEL, 0 },
	{ "block not 8-byte aligned", params_unaligned, HPU_EVENT_ILLEGAL_PACKET, 0 },
	{ "block unmapped", params_unmapped, HPU_EVENT_MMU_FAULT, VA_UNMAPPED },
	{ "block running off its mapping", params_tail, HPU_EVENT_MMU_FAULT,
	  VA_HOST + PARAM_OFF + PARAM_SIZE },
	{ "input unmapped", tensor_unmapped, HPU_EVENT_MMU_FAULT, VA_UNMAPPED + 4 },
	{ "input running off its mapping", tensor_tail, HPU_EVENT_MMU_FAULT, VA_HBM + BUF_SIZE },
	{ "output read-only", output_ro, HPU_EVENT_MMU_FAULT, VA_RO + 64 },
	{ "reversed output reaching below its mapping", output_reversed_below, HPU_EVENT_MMU_FAULT,
	  VA_DATA + 8 - 4 * (OUT_WORDS - 1) },
};

static void test_launch_bad(struct hpu_test *t, const struct launch_bad_case *c)
{
	struct launch l = launch_new(TK_AXPY, 2);
	const uint64_t shape[1] = { OUT_WORDS };
	uint32_t sentinel[OUT_WORDS], got[OUT_WORDS];
	uint64_t params = VA_PARAM;
	uint32_t size;

	map_compute(t);
	memset(sentinel, 0xa5, sizeof(sentinel));
	va_write(t, OUT_VA, sentinel, sizeof(sentinel));
	l.t[0] = desc(OUT_VA, F32, 1, shape, 0);
	l.t[1] = desc(VA_HBM, F32, 1, shape, 0);
	size = launch_size(&l);
	c->bend(&l, &params, &size);
	launch_write(t, VA_PARAM, &l);
	launch_run(t, params, size);
	expect_event(t, c->event, 0, ASID,
		     c->event == HPU_EVENT_ILLEGAL_PACKET ? HPU_ENGINE_QMAN : HPU_ENGINE_TPC, 3,
		     c->addr, c->event == HPU_EVENT_BAD_KERNEL ? REFUSED_LOGS : 1, __LINE__);
	HPU_CHECK_EQ(t, hpu_rd(t, REG_Q(0, CI)), hpu_rd(t, REG_Q(0, PI)));
	va_read(t, OUT_VA, got, sizeof(got));
	HPU_CHECK(t, !memcmp(got, sentinel, sizeof(got)));
	expect_usable(t, 0);
}

/* ---- the list ---- */

static const struct hpu_test_case hpu_tests[] = {
	{ "GEMM: how GEMMs are cut into steps and parts", case_gemm_plan },
	{ "GEMM: queue reset while staging", case_gemm_abort },
	{ "GEMM: working memory of many threads bounded", case_gemm_work_max },
	{ "GEMM: an operand staged past HDM_TMEM_STAGE_MAX is refused", case_gemm_stage_max },
	{ "launch: a tiny launch is one part", case_split_tiny },
	{ "launch: a version 1 parameter block still runs", case_version_1_runs },
	{ "launch: items split over some TPCs, each done once", case_split_some },
	{ "launch: items split over every TPC, each done once", case_split_all },
	{ "launch: parts of bounded length, more than TPCs, each done once", case_split_bounded },
	{ "launch: strided, reversed, broadcast and scalar views", case_views },
	{ "launch: empty tensors", case_empty },
	{ "launch: in place, one mapping for identical views", case_in_place },
	{ "launch: staged outputs written back, inputs gathered", case_staged },
	{ "launch: parameter block in HBM", case_params_in_hbm },
	{ "launch: a library kernel through the kernel table", case_library_kernel },
	{ "launch: queue reset from inside a part", case_launch_abort },
	{ "launch: a long launch yields to other queues between its parts", case_launch_yields },
	{ "launch: a launch of two phases yields inside each, the first ended before the second",
	  case_launch_phases_yield },
	{ "launch: a one-output REDUCE of 2^26 yields between its chunks", case_reduce_one_output_yields },
	{ "launch: a launch rewritten while it yields is checked anew", case_launch_rewritten },
	{ "launch: a launch rewritten while it yields into a staged one runs that whole",
	  case_launch_rewritten_staged },
	{ "launch: dropout yields, bitwise as one call, its offset advanced once", case_dropout_yields },
	{ "GEMM: a long GEMM yields to other queues between its blocks", case_gemm_yields },
	{ "launch: with its mask staged, dropout yields, bitwise as one call",
	  case_staged_dropout_yields },
	{ "launch: staged, with no room to keep it, dropout yields, bitwise as one call",
	  case_staged_dropout_yields_unheld },
	{ "launch: a queue reset while a launch holds staging: ABORTED, freed, not written",
	  case_staged_held_reset },
	{ "GEMM: with A and C staged, a long GEMM yields between its blocks",
	  case_staged_gemm_yields },
	{ "fuzz: random launches and GEMMs end, the device usable", case_launch_fuzz },
};

int main(void)
{
	unsigned int n = 0, failed = 0;
	struct hpu_test *t;
	char name[160];
	size_t i;

	printf("TAP version 13\n1..%zu\n",
	       2 * HPU_ARRAY_SIZE(gemm_cases) + HPU_ARRAY_SIZE(gemm_split_cases) +
	       HPU_ARRAY_SIZE(gemm_bad_cases) + HPU_ARRAY_SIZE(huge_cases) +
	       HPU_ARRAY_SIZE(hpu_tests) + HPU_ARRAY_SIZE(launch_bad_cases));
	HPU_RUN_TABLE(gemm_cases, test_gemm, "GEMM");
	/* A core's init (each test's) looked oneDNN up. */
	printf("# bf16 GEMMs on %s\n", hdm_mme_native_bf16(true) ? "oneDNN" : "widened operands");
	HPU_RUN_TABLE(gemm_cases, test_gemm_widened, "GEMM widened");
	HPU_RUN_TABLE(gemm_split_cases, test_gemm_split, "GEMM split");
	HPU_RUN_TABLE(gemm_bad_cases, test_gemm_bad, "GEMM refused");
	HPU_RUN_TABLE(huge_cases, test_gemm_huge, "GEMM stopped by a queue reset");
	failed += hpu_run_cases(hpu_tests, HPU_ARRAY_SIZE(hpu_tests), &n);
	HPU_RUN_TABLE(launch_bad_cases, test_launch_bad, "launch refused");
	return failed ? 1 : 0;
}
