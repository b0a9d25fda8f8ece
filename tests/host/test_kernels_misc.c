/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of SILU_BWD, TRIANGLE and ARANGE (hdm_kernel_misc.c):
 * SILU_BWD against central differences of silu in double; TRIANGLE exact
 * for every dtype, diagonal, direction and layout, batched and in place;
 * ARANGE exact against references that compute each element on their own
 * (int64, and the CPU loop's blocks of lanes); every rejection.  Prints TAP.
 *
 * Tolerances: SILU_BWD's difference quotient (step 1e-4 in double,
 * truncation ~1e-8) within 1e-6 relative and absolute for fp32 (its
 * rounding), 2^-8 for bf16; everything else exact.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hdm_kernel_harness.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64
#define U8 HPU_DTYPE_U8

static void free_tensors(struct hpu_ktensor **t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hpu_kt_free(t[i]);
}

/* ---- SILU_BWD ---- */

static double silu(double x)
{
	return x * 0.5 * (1 + tanh(x / 2));
}

static void test_silu_bwd(void)
{
	static const uint32_t dtypes[] = { F32, BF16 };

	for (size_t d = 0; d < HPU_ARRAY_SIZE(dtypes); d++) {
		uint32_t dt = dtypes[d];
		/* x transposed: the walk carries across a strided operand. */
		struct hpu_ktensor *gi = hpu_kt_new(dt, 2, HPU_KT_DIMS(5, 7), NULL);
		struct hpu_ktensor *go = hpu_kt_new(dt, 2, HPU_KT_DIMS(5, 7), NULL);
		struct hpu_ktensor *x = hpu_kt_new(dt, 2, HPU_KT_DIMS(5, 7), HPU_KT_STRIDES(1, 5));
		double want[35];
		struct hdm_kcall c;

		hpu_kt_fill_random(go, 1, -2, 2);
		hpu_kt_fill_random(x, 2, -9, 9);
		for (uint64_t i = 0; i < 35; i++) {
			double v = hpu_kt_get(x, i), h = 1e-4;

			want[i] = hpu_kt_get(go, i) * (silu(v + h) - silu(v - h)) / (2 * h);
		}
		HPU_KCALL(&c, HPU_KERNEL_SILU_BWD, gi, go, x);
		HPU_KLAUNCH(&hdm_kernel_silu_bwd, &c);
		HPU_KEXPECT_NEAR_DT(gi, want);
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_silu_bwd, &c);
		/* In place of grad_out. */
		HPU_KCALL(&c, HPU_KERNEL_SILU_BWD, go, go, x);
		HPU_KLAUNCH(&hdm_kernel_silu_bwd, &c);
		HPU_KEXPECT_SAME(go, gi);
		free_tensors((struct hpu_ktensor *[]){ gi, go, x }, 3);
	}
}

/* ---- TRIANGLE ---- */

/* Element i of a [.., R, C] tensor is on the kept side of diagonal diag. */
static bool tri_keeps(uint64_t i, uint64_t r, uint64_t c, int64_t diag, bool upper)
{
	int64_t col = (int64_t)(i % c), row = (int64_t)((i / c) % r);

	/* col - row, not row + diag: diag may be anywhere in int64. */
	return upper ? diag <= col - row : diag >= col - row;
}

static void tri_case(uint32_t dtype, uint32_t ndim, const uint64_t *shape, const int64_t *st,
		     int64_t diag, bool upper, bool in_place)
{
	struct hpu_ktensor *in = hpu_kt_new(dtype, ndim, shape, st);
	struct hpu_ktensor *out = in_place ? in : hpu_kt_new(dtype, ndim, shape, NULL);
	uint64_t n = hpu_kt_numel(in), r = shape[ndim - 2], cols = shape[ndim - 1];
	int64_t *want = malloc(n * sizeof(*want));
	double *fwant = malloc(n * sizeof(*fwant));
	struct hdm_kcall c;
	bool ok = true;

	hpu_kt_fill_random(in, (uint64_t)diag + 5, -100, 100);
	/* Large int64 values: a trip through double would round them. */
	for (uint64_t i = 0; dtype == I64 && i < n; i++)
		hdm_kstore_i(I64, hdm_kview_at(&in->v, i), (int64_t)(i * 0x9e3779b97f4a7c15ull));
	for (uint64_t i = 0; i < n; i++)
		want[i] = tri_keeps(i, r, cols, diag, upper) ? hpu_kt_get_i(in, i) : 0;
	for (uint64_t i = 0; i < n; i++)
		fwant[i] = tri_keeps(i, r, cols, diag, upper) ? hpu_kt_get(in, i) : 0;
	HPU_KCALL(&c, HPU_KERNEL_TRIANGLE, out, in);
	c.args[0] = diag;
	c.args[1] = upper;
	HPU_KLAUNCH(&hdm_kernel_triangle, &c);
	for (uint64_t i = 0; i < n; i++)
		ok &= hpu_kt_get_i(out, i) == want[i];
	for (uint64_t i = 0; i < n; i++)
		ok &= hpu_kt_get(out, i) == fwant[i];
	if (!ok)
		printf("#   triangle dtype %u diag %lld upper %d in place %d differs\n", dtype,
		       (long long)diag, upper, in_place);
	HPU_KEXPECT(ok);
	free(want);
	free(fwant);
	if (!in_place)
		hpu_kt_free(out);
	hpu_kt_free(in);
}

static void test_triangle(void)
{
	static const uint32_t dtypes[] = { F32, BF16, I32, I64, U8 };
	static const int64_t diags[] = { 0, 1, -1, 3, -4, 100, -100, INT64_MAX, INT64_MIN };

	for (size_t d = 0; d < HPU_ARRAY_SIZE(dtypes); d++)
		for (size_t k = 0; k < HPU_ARRAY_SIZE(diags); k++)
			for (int up = 0; up < 2; up++) {
				tri_case(dtypes[d], 2, HPU_KT_DIMS(5, 7), NULL, diags[k], up,
					 false);
				/* Batched, the last two dims transposed in memory. */
				tri_case(dtypes[d], 3, HPU_KT_DIMS(3, 6, 4),
					 HPU_KT_STRIDES(24, 1, 6), diags[k], up, k % 2);
			}
}

/* ---- ARANGE ---- */

/* The CPU's loop, written out: each chunk's full blocks of 2 * lanes from lane bases, then a tail. */
static double ref_arange(uint32_t dtype, double start, double step, uint64_t n, uint64_t lanes,
			 uint64_t chunk, uint64_t i)
{
	bool bf = dtype == BF16;
	uint64_t b = chunk ? i - i % chunk : 0, len = n - b, k;
	double base;

	if (chunk && len > chunk)
		len = chunk;
	if (!lanes || i - b >= len - len % (2 * lanes))
		return bf ? (double)((float)start + (float)step * (float)i) : start + step * (double)i;
	k = b + (i - b) / lanes * lanes;
	base = bf ? hpu_kround(BF16, (float)start + (float)step * (float)k)
		  : hpu_kround(F32, start + step * (double)k);
	return bf ? (double)((float)base + (float)(i - k) * (float)step) : base + (double)(i - k) * step;
}

static void arange_case(uint32_t dtype, double start, double step, uint64_t n, int64_t lanes,
			int64_t chunk)
{
	struct hpu_ktensor *out = hpu_kt_new(dtype, 1, &n, HPU_KT_STRIDES(-1));
	double *want = malloc(n * sizeof(*want));
	struct hdm_kcall c;

	for (uint64_t i = 0; i < n; i++)
		want[i] = hpu_kround(dtype, ref_arange(dtype, start, step, n, (uint64_t)lanes,
						       (uint64_t)chunk, i));
	HPU_KCALL(&c, HPU_KERNEL_ARANGE, out);
	c.args[0] = lanes;
	c.args[1] = chunk;
	c.scalars[0] = start;
	c.scalars[1] = step;
	HPU_KLAUNCH(&hdm_kernel_arange, &c);
	HPU_KEXPECT_NEAR(out, want, 0, 0);
	free(want);
	hpu_kt_free(out);
}

static void test_arange_float(void)
{
	for (int64_t lanes = 0; lanes <= 16; lanes += 8)
		for (int64_t chunk = 0; chunk <= 40; chunk += 40) {
			arange_case(F32, 0.3, 0.07, 98, lanes, chunk);
			arange_case(F32, -3, 0.013, 616, lanes, chunk);
			arange_case(BF16, 1, 0.3, 330, lanes, chunk);
			arange_case(F32, 5, -0.25, 17, lanes, chunk);
		}
}

/* Blocks of lanes differ from the plain formula: the emulation is not the identity. */
static void test_arange_lanes_matter(void)
{
	const uint64_t n = 16;
	struct hpu_ktensor *a = hpu_kt_new(F32, 1, &n, NULL), *b = hpu_kt_new(F32, 1, &n, NULL);
	struct hdm_kcall c;

	/* arange(0, 1, 0.1): element 9 from base 0.8f is 0.9000000358f, not 0.9f. */
	HPU_KCALL(&c, HPU_KERNEL_ARANGE, a);
	c.scalars[1] = 0.1;
	HPU_KLAUNCH(&hdm_kernel_arange, &c);
	HPU_KCALL(&c, HPU_KERNEL_ARANGE, b);
	c.scalars[1] = 0.1;
	c.args[0] = 8;
	HPU_KLAUNCH(&hdm_kernel_arange, &c);
	HPU_KEXPECT(hpu_kt_get(a, 9) == (float)0.9);
	HPU_KEXPECT(hpu_kt_get(b, 9) != hpu_kt_get(a, 9));
	hpu_kt_free(a);
	hpu_kt_free(b);
}

static void test_arange_integral(void)
{
	static const uint32_t dtypes[] = { I64, I32 };
	const uint64_t n = 33;

	for (size_t d = 0; d < HPU_ARRAY_SIZE(dtypes); d++) {
		struct hpu_ktensor *out = hpu_kt_new(dtypes[d], 1, &n, NULL);
		int64_t start = dtypes[d] == I64 ? (int64_t)1 << 60 : -7, step = -3;
		struct hdm_kcall c;
		bool ok = true;

		HPU_KCALL(&c, HPU_KERNEL_ARANGE, out);
		c.args[0] = 8;
		c.scalars[0] = (double)start;
		c.scalars[1] = (double)step;
		HPU_KLAUNCH(&hdm_kernel_arange, &c);
		for (uint64_t i = 0; i < n; i++)
			ok &= hpu_kt_get_i(out, i) == start + step * (int64_t)i;
		HPU_KEXPECT(ok);
		hpu_kt_free(out);
	}
}

/* ---- rejections ---- */

static const struct hpu_kreject_case reject_cases[] = {
	{ "silu_bwd", &hdm_kernel_silu_bwd, HPU_KERNEL_SILU_BWD, { 0 }, { 0 }, 3,
	  { { F32, 2, { 3, 4 } }, { F32, 2, { 3, 4 } }, { F32, 2, { 3, 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_DTYPE(0, I32), HPU_KM_DTYPE(1, I64),
		    HPU_KM_DTYPE(2, U8), HPU_KM_SHAPE(1, 0), HPU_KM_SHAPE(2, 1),
		    HPU_KM_NDIM(2, 1), HPU_KM_ARG(0, 1)) },
	{ "triangle", &hdm_kernel_triangle, HPU_KERNEL_TRIANGLE, { 2, 1 }, { 0 }, 2,
	  { { F32, 3, { 2, 3, 4 } }, { F32, 3, { 2, 3, 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(1), HPU_KM_DTYPE(1, BF16), HPU_KM_DTYPE(0, I32),
		    HPU_KM_SHAPE(1, 2), HPU_KM_NDIM(1, 2), HPU_KM_ARG(1, 2), HPU_KM_ARG(1, -1),
		    HPU_KM_ARG(2, 1)) },
	{ "arange", &hdm_kernel_arange, HPU_KERNEL_ARANGE, { 8, 40 }, { 0.5, 0.25 }, 1,
	  { { F32, 1, { 9 } } },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_NDIM(0, 2), HPU_KM_DTYPE(0, U8),
		    HPU_KM_DTYPE(0, I64), HPU_KM_ARG(0, -1), HPU_KM_ARG(0, 65),
		    HPU_KM_ARG(1, -1), HPU_KM_ARG(2, 1), HPU_KM_SCALAR(0, NAN),
		    HPU_KM_SCALAR(1, INFINITY)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

int main(void)
{
	static const struct hpu_ktest_case cases[] = {
		{ "silu_bwd", test_silu_bwd },
		{ "triangle", test_triangle },
		{ "arange float", test_arange_float },
		{ "arange lanes matter", test_arange_lanes_matter },
		{ "arange integral", test_arange_integral },
		{ "rejections", test_rejections },
	};

	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
