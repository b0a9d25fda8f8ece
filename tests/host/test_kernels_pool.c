/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the pooling kernels (MAX_POOL, AVG_POOL and their
 * backwards): every forward against a naive reference in double (windows
 * as torch computes them: padding, dilation, ceil_mode, count_include_pad,
 * a divisor override, adaptive windows), every backward against a
 * reference that scatters grad_out (the kernels gather), fp32 and bf16,
 * contiguous and scattered layouts giving the same bytes, max pooling's
 * ties and NaN, a bad index failing the backward before it writes, and
 * every rejection.  Prints TAP.
 *
 * Tolerances: results are computed in double from the stored inputs and
 * rounded once: 1e-6 relative for fp32, 2^-8 for bf16, the same absolute.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_kernel_harness.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64
#define U8 HPU_DTYPE_U8

/* One pooling: planes of H x W, windows per axis, the output size torch gives them. */
struct pool_case {
	uint64_t planes[2]; /* the leading dims */
	int64_t h, w, k[2], s[2], p[2], d[2];
	bool ceil, include_pad, adaptive;
	int64_t divisor, oh, ow; /* adaptive: the output size */
};

/* A window's kernel, stride, padding and dilation along H and W. */
#define WIN(kh, kw, sh, sw, ph, pw, dh, dw)                                            \
	.k = { kh, kw }, .s = { sh, sw }, .p = { ph, pw }, .d = { dh, dw }

static const struct pool_case max_cases[] = {
	{ .planes = { 2, 3 }, .h = 7, .w = 9, WIN(2, 2, 2, 2, 0, 0, 1, 1) },
	{ .planes = { 1, 2 }, .h = 8, .w = 5, WIN(3, 2, 2, 1, 1, 1, 1, 1) },
	{ .planes = { 2, 1 }, .h = 7, .w = 7, WIN(3, 3, 2, 2, 1, 0, 1, 1), .ceil = true },
	{ .planes = { 1, 3 }, .h = 10, .w = 9, WIN(3, 2, 1, 3, 1, 1, 2, 3) },
	{ .planes = { 3, 1 }, .h = 6, .w = 11, WIN(2, 3, 3, 2, 0, 1, 2, 1), .ceil = true },
	{ .planes = { 1, 1 }, .h = 1, .w = 13, WIN(1, 4, 1, 3, 0, 2, 1, 1), .ceil = true },
};

static const struct pool_case avg_cases[] = {
	{ .planes = { 2, 3 }, .h = 7, .w = 9, WIN(2, 2, 2, 2, 0, 0, 1, 1) },
	{ .planes = { 1, 2 }, .h = 8, .w = 5, WIN(3, 2, 2, 1, 1, 1, 1, 1), .include_pad = true },
	{ .planes = { 1, 2 }, .h = 8, .w = 5, WIN(3, 2, 2, 1, 1, 1, 1, 1) },
	{ .planes = { 2, 1 }, .h = 7, .w = 7, WIN(3, 3, 2, 2, 1, 1, 1, 1), .ceil = true,
	  .include_pad = true },
	{ .planes = { 2, 1 }, .h = 7, .w = 7, WIN(3, 3, 2, 2, 1, 1, 1, 1), .ceil = true },
	{ .planes = { 3, 1 }, .h = 6, .w = 11, WIN(2, 3, 1, 2, 1, 0, 1, 1), .divisor = 5 },
	{ .planes = { 1, 1 }, .h = 1, .w = 13, WIN(1, 4, 1, 3, 0, 2, 1, 1), .ceil = true },
	{ .planes = { 2, 3 }, .h = 7, .w = 9, .adaptive = true, .oh = 3, .ow = 4 },
	{ .planes = { 1, 2 }, .h = 5, .w = 6, .adaptive = true, .oh = 7, .ow = 1 },
	{ .planes = { 2, 2 }, .h = 6, .w = 6, .adaptive = true, .oh = 1, .ow = 1 },
};

/* torch's pooling output size along an axis. */
static int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil)
{
	int64_t ext = (k - 1) * d + 1, o = (n + 2 * p - ext + (ceil ? s - 1 : 0)) / s + 1;

	if (ceil && (o - 1) * s >= n + p)
		o--;
	return o;
}

static int64_t case_oh(const struct pool_case *pc)
{
	return pc->adaptive ? pc->oh : out_size(pc->h, pc->k[0], pc->s[0], pc->p[0], pc->d[0], pc->ceil);
}

static int64_t case_ow(const struct pool_case *pc)
{
	return pc->adaptive ? pc->ow : out_size(pc->w, pc->k[1], pc->s[1], pc->p[1], pc->d[1], pc->ceil);
}

static uint64_t case_planes(const struct pool_case *pc)
{
	return pc->planes[0] * pc->planes[1];
}

/* A tensor [planes, a, b]; transposed: the plane dims last in memory. */
static struct hpu_ktensor *plane_tensor(const struct pool_case *pc, uint32_t dtype, int64_t a,
					int64_t b, bool transposed)
{
	uint64_t shape[4] = { pc->planes[0], pc->planes[1], (uint64_t)a, (uint64_t)b };
	int64_t p = (int64_t)case_planes(pc);

	if (!transposed)
		return hpu_kt_new(dtype, 4, shape, NULL);
	return hpu_kt_new(dtype, 4, shape,
			  HPU_KT_STRIDES(1, (int64_t)pc->planes[0], p * b, p));
}

/* The window of output o along an axis: [*lo, *hi) at step d within the input, padded extent. */
static void ref_window(const struct pool_case *pc, int a, int64_t n, int64_t no, int64_t o,
		       int64_t *lo, int64_t *hi, int64_t *padded)
{
	int64_t st, en;

	if (pc->adaptive) {
		*lo = (int64_t)floor((double)(o * n) / (double)no);
		*hi = (int64_t)ceil((double)((o + 1) * n) / (double)no);
		*padded = *hi - *lo;
		return;
	}
	st = o * pc->s[a] - pc->p[a];
	en = st + (pc->k[a] - 1) * pc->d[a] + 1;
	*padded = fmin(en, n + pc->p[a]) - st;
	for (*lo = st; *lo < 0; *lo += pc->d[a])
		;
	*hi = en < n ? en : n;
}

/*
 * The reference forward over x (row-major values): out, and for max
 * pooling the indices (torch's: the first maximum, NaN wins, the last NaN).
 */
static void ref_pool(const struct pool_case *pc, bool max, const double *x, double *out,
		     int64_t *idx)
{
	int64_t oh = case_oh(pc), ow = case_ow(pc);

	for (uint64_t q = 0; q < case_planes(pc); q++) {
		const double *xp = x + q * (uint64_t)(pc->h * pc->w);

		for (int64_t oy = 0; oy < oh; oy++) {
			for (int64_t ox = 0; ox < ow; ox++) {
				int64_t y0, y1, x0, x1, py, px, best_at = -1, n = 0;
				double best = -INFINITY, sum = 0;
				uint64_t o = (q * (uint64_t)oh + (uint64_t)oy) * (uint64_t)ow +
					     (uint64_t)ox;

				ref_window(pc, 0, pc->h, oh, oy, &y0, &y1, &py);
				ref_window(pc, 1, pc->w, ow, ox, &x0, &x1, &px);
				for (int64_t y = y0; y < y1; y += max ? pc->d[0] : 1) {
					for (int64_t xx = x0; xx < x1; xx += max ? pc->d[1] : 1) {
						double v = xp[y * pc->w + xx];

						if (best_at < 0 || v > best || isnan(v)) {
							best = v;
							best_at = y * pc->w + xx;
						}
						sum += v;
						n++;
					}
				}
				if (max) {
					out[o] = best;
					idx[o] = best_at;
				} else {
					out[o] = sum / (double)(pc->divisor ? pc->divisor :
								pc->include_pad ? py * px : n);
				}
			}
		}
	}
}

/* The reference backward: grad_out scattered onto the windows (max: onto idx) in double. */
static void ref_pool_bwd(const struct pool_case *pc, bool max, const double *g, const int64_t *idx,
			 double *gi)
{
	int64_t oh = case_oh(pc), ow = case_ow(pc), hw = pc->h * pc->w;

	memset(gi, 0, case_planes(pc) * (uint64_t)hw * sizeof(*gi));
	for (uint64_t q = 0; q < case_planes(pc); q++) {
		for (int64_t oy = 0; oy < oh; oy++) {
			for (int64_t ox = 0; ox < ow; ox++) {
				uint64_t o = (q * (uint64_t)oh + (uint64_t)oy) * (uint64_t)ow +
					     (uint64_t)ox;
				int64_t y0, y1, x0, x1, py, px;
				double div;

				if (max) {
					gi[q * (uint64_t)hw + (uint64_t)idx[o]] += g[o];
					continue;
				}
				ref_window(pc, 0, pc->h, oh, oy, &y0, &y1, &py);
				ref_window(pc, 1, pc->w, ow, ox, &x0, &x1, &px);
				div = (double)(pc->divisor ? pc->divisor : pc->include_pad ? py * px :
					       (y1 - y0) * (x1 - x0));
				for (int64_t y = y0; y < y1; y++)
					for (int64_t x = x0; x < x1; x++)
						gi[q * (uint64_t)hw + (uint64_t)(y * pc->w + x)] +=
							g[o] / div;
			}
		}
	}
}

/* A launch's args for pc (max: dilations in a6, a7; average: flags and divisor). */
static void set_args(struct hdm_kcall *c, const struct pool_case *pc, bool max)
{
	if (!pc->adaptive) {
		for (int a = 0; a < 2; a++) {
			c->args[a] = pc->k[a];
			c->args[2 + a] = pc->s[a];
			c->args[4 + a] = pc->p[a];
		}
	}
	if (max) {
		c->args[6] = pc->d[0];
		c->args[7] = pc->d[1];
	} else {
		c->args[6] = (pc->include_pad ? 1 : 0) | (pc->adaptive ? 2 : 0);
		c->args[7] = pc->divisor;
	}
}

static bool has_nan(const double *v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (isnan(v[i]))
			return true;
	return false;
}

/* Forward, then backward of pc in dtype and a layout; against the references. */
static void pool_case_run(const struct pool_case *pc, bool max, uint32_t dtype, bool transposed,
			  bool whole)
{
	int64_t oh = case_oh(pc), ow = case_ow(pc);
	struct hpu_ktensor *in = plane_tensor(pc, dtype, pc->h, pc->w, transposed);
	struct hpu_ktensor *out = plane_tensor(pc, dtype, oh, ow, !transposed);
	struct hpu_ktensor *idx = plane_tensor(pc, transposed ? I32 : I64, oh, ow, transposed);
	struct hpu_ktensor *go = plane_tensor(pc, dtype, oh, ow, transposed);
	struct hpu_ktensor *gi = plane_tensor(pc, dtype, pc->h, pc->w, !transposed);
	uint64_t no = hpu_kt_numel(out), ni = hpu_kt_numel(in);
	double *want = malloc(no * sizeof(*want)), *gwant = malloc(ni * sizeof(*gwant));
	int64_t *iwant = malloc(no * sizeof(*iwant));
	double *x, *g;
	struct hdm_kcall c;

	/* Whole numbers make ties, which the first maximum must win. */
	if (whole)
		hpu_kt_fill_whole(in, 7, -3, 3);
	else
		hpu_kt_fill_random(in, 7, -2, 2);
	hpu_kt_fill_random(go, 8, -1, 1);
	x = hpu_kt_values(in);
	g = hpu_kt_values(go);
	ref_pool(pc, max, x, want, iwant);
	if (max)
		HPU_KCALL(&c, HPU_KERNEL_MAX_POOL, out, idx, in);
	else
		HPU_KCALL(&c, HPU_KERNEL_AVG_POOL, out, in);
	set_args(&c, pc, max);
	HPU_KLAUNCH(max ? &hdm_kernel_max_pool : &hdm_kernel_avg_pool, &c);
	HPU_KEXPECT_NEAR_DT(out, want);
	if (max) {
		for (uint64_t i = 0; i < no; i++)
			HPU_KEXPECT(hpu_kt_get_i(idx, i) == iwant[i]);
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_max_pool, &c);
		HPU_KCALL(&c, HPU_KERNEL_MAX_POOL_BWD, gi, go, idx);
	} else {
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_avg_pool, &c);
		HPU_KCALL(&c, HPU_KERNEL_AVG_POOL_BWD, gi, go);
	}
	set_args(&c, pc, max);
	HPU_KLAUNCH(max ? &hdm_kernel_max_pool_bwd : &hdm_kernel_avg_pool_bwd, &c);
	HPU_KEXPECT(!has_nan(g, no));
	ref_pool_bwd(pc, max, g, iwant, gwant);
	HPU_KEXPECT_NEAR_DT(gi, gwant);
	HPU_KEXPECT_LAYOUTS_AGREE(max ? &hdm_kernel_max_pool_bwd : &hdm_kernel_avg_pool_bwd, &c);
	free(x);
	free(g);
	free(want);
	free(gwant);
	free(iwant);
	hpu_kt_free(in);
	hpu_kt_free(out);
	hpu_kt_free(idx);
	hpu_kt_free(go);
	hpu_kt_free(gi);
}

static void run_cases(const struct pool_case *cases, size_t n, bool max, bool whole)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < n; i++)
		for (int bf = 0; bf < 2; bf++, turn++)
			pool_case_run(&cases[i], max, bf ? BF16 : F32, turn % 3 == 1, whole);
}

static void test_max_pool(void)
{
	run_cases(max_cases, HPU_ARRAY_SIZE(max_cases), true, false);
}

static void test_max_pool_ties(void)
{
	run_cases(max_cases, HPU_ARRAY_SIZE(max_cases), true, true);
}

static void test_avg_pool(void)
{
	run_cases(avg_cases, HPU_ARRAY_SIZE(avg_cases), false, false);
}

/* NaN wins a window (the last NaN); -inf everywhere still names the first position. */
static void test_max_pool_nan(void)
{
	const struct pool_case pc = { .planes = { 1, 1 }, .h = 2, .w = 4, WIN(2, 2, 2, 2, 0, 0, 1, 1) };
	struct hpu_ktensor *in = plane_tensor(&pc, F32, 2, 4, false);
	struct hpu_ktensor *out = plane_tensor(&pc, F32, 1, 2, false);
	struct hpu_ktensor *idx = plane_tensor(&pc, I64, 1, 2, false);
	const double x[] = { 1, NAN, -INFINITY, -INFINITY, NAN, 5, -INFINITY, -INFINITY };
	struct hdm_kcall c;

	hpu_kt_fill(in, x);
	HPU_KCALL(&c, HPU_KERNEL_MAX_POOL, out, idx, in);
	set_args(&c, &pc, true);
	HPU_KLAUNCH(&hdm_kernel_max_pool, &c);
	HPU_KEXPECT(isnan(hpu_kt_get(out, 0)) && hpu_kt_get_i(idx, 0) == 4);
	HPU_KEXPECT(hpu_kt_get(out, 1) == -INFINITY && hpu_kt_get_i(idx, 1) == 2);
	hpu_kt_free(in);
	hpu_kt_free(out);
	hpu_kt_free(idx);
}

/*
 * An index outside its window, or past the plane, fails the backward
 * before grad_in is written, whichever element holds it.
 */
static void test_max_pool_bad_index(void)
{
	const struct pool_case pc = { .planes = { 2, 1 }, .h = 4, .w = 4, WIN(2, 2, 2, 2, 0, 0, 1, 1) };
	const int64_t bad[] = { -1, 16, 2, 8, 10 }; /* element 0's window is {0, 1, 4, 5} */

	for (size_t b = 0; b < HPU_ARRAY_SIZE(bad); b++) {
		struct hpu_ktensor *gi = plane_tensor(&pc, F32, 4, 4, false);
		struct hpu_ktensor *go = plane_tensor(&pc, F32, 2, 2, false);
		struct hpu_ktensor *idx = plane_tensor(&pc, I64, 2, 2, false);
		const int64_t good[] = { 5, 2, 8, 15 };
		struct hdm_kcall c;

		for (uint64_t i = 0; i < 8; i++)
			hpu_kt_set(idx, i, (double)good[i % 4]);
		hpu_kt_set(idx, b % 2 ? 7 : 0, (double)bad[b]);
		if (b % 2)
			hpu_kt_set(idx, 7, 4); /* element 3's window is {10, 11, 14, 15} */
		hpu_kt_fill_random(go, 3, -1, 1);
		hpu_kt_fill_random(gi, 4, 7, 8);
		HPU_KCALL(&c, HPU_KERNEL_MAX_POOL_BWD, gi, go, idx);
		set_args(&c, &pc, true);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_max_pool_bwd, &c, (enum hpu_ksplit)(b % 3)) ==
			    HPU_KRUN_FAULT);
		for (uint64_t i = 0; i < hpu_kt_numel(gi); i++)
			HPU_KEXPECT(hpu_kt_get(gi, i) >= 7);
		hpu_kt_free(gi);
		hpu_kt_free(go);
		hpu_kt_free(idx);
	}
}

#define T(dt, ...) { dt, 4, { __VA_ARGS__ } }

static const struct hpu_kreject_case reject_cases[] = {
	{ "max_pool", &hdm_kernel_max_pool, HPU_KERNEL_MAX_POOL, { 3, 2, 2, 2, 1, 1, 1, 1 }, { 0 },
	  3, { T(F32, 2, 3, 4, 5), T(I64, 2, 3, 4, 5), T(F32, 2, 3, 7, 9) },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_DTYPE(0, I32), HPU_KM_DTYPE(2, I64),
		    HPU_KM_DTYPE(1, F32), HPU_KM_SHAPE(1, 3), HPU_KM_SHAPE(0, 0),
		    HPU_KM_SHAPE(0, 2), HPU_KM_SHAPE(0, 3), HPU_KM_NDIM(2, 2), HPU_KM_NDIM(0, 3),
		    HPU_KM_ARG(0, 0), HPU_KM_ARG(0, 1), HPU_KM_ARG(2, 0), HPU_KM_ARG(4, -1),
		    HPU_KM_ARG(4, 2), HPU_KM_ARG(6, 0), HPU_KM_ARG(7, 4), HPU_KM_ARG(1, 1 << 21),
		    HPU_KM_ARG(3, 1 << 21), HPU_KM_ALIAS(0, 2), HPU_KM_ALIAS(1, 2)) },
	/* One window of 2 x 2 (all zero indices name its first position). */
	{ "max_pool_bwd", &hdm_kernel_max_pool_bwd, HPU_KERNEL_MAX_POOL_BWD,
	  { 2, 2, 2, 2, 0, 0, 1, 1 }, { 0 }, 3,
	  { T(F32, 2, 3, 2, 2), T(BF16, 2, 3, 1, 1), T(I32, 2, 3, 1, 1) },
	  HPU_KMUTS(HPU_KM_COUNT(4), HPU_KM_DTYPE(2, F32), HPU_KM_DTYPE(0, U8),
		    HPU_KM_SHAPE(2, 2), HPU_KM_SHAPE(1, 3), HPU_KM_ARG(5, 2), HPU_KM_ALIAS(0, 1),
		    HPU_KM_ALIAS(0, 2), HPU_KM_VALUE(2, 4), HPU_KM_VALUE(2, -1)) },
	{ "avg_pool", &hdm_kernel_avg_pool, HPU_KERNEL_AVG_POOL, { 3, 3, 2, 2, 1, 1, 1, 0 },
	  { 0 }, 2, { T(BF16, 2, 3, 4, 4), T(F32, 2, 3, 7, 7) },
	  HPU_KMUTS(HPU_KM_COUNT(3), HPU_KM_DTYPE(1, I32), HPU_KM_DTYPE(0, U8),
		    HPU_KM_SHAPE(0, 1), HPU_KM_SHAPE(0, 2), HPU_KM_NDIM(1, 2), HPU_KM_ARG(6, 4),
		    HPU_KM_ARG(6, 2), HPU_KM_ARG(7, -1), HPU_KM_ARG(5, 2), HPU_KM_ARG(3, 0),
		    HPU_KM_ALIAS(0, 1)) },
	{ "avg_pool adaptive", &hdm_kernel_avg_pool, HPU_KERNEL_AVG_POOL, { 0, 0, 0, 0, 0, 0, 2, 0 },
	  { 0 }, 2, { T(F32, 2, 3, 3, 10), T(F32, 2, 3, 7, 7) },
	  HPU_KMUTS(HPU_KM_ARG(0, 3), HPU_KM_ARG(2, 1), HPU_KM_ARG(5, 1), HPU_KM_NDIM(0, 3)) },
	{ "avg_pool_bwd", &hdm_kernel_avg_pool_bwd, HPU_KERNEL_AVG_POOL_BWD,
	  { 2, 2, 2, 2, 0, 0, 0, 3 }, { 0 }, 2, { T(F32, 1, 2, 4, 4), T(F32, 1, 2, 2, 2) },
	  HPU_KMUTS(HPU_KM_COUNT(1), HPU_KM_DTYPE(1, I64), HPU_KM_SHAPE(1, 3), HPU_KM_SHAPE(1, 0),
		    HPU_KM_ARG(2, 1), HPU_KM_ARG(7, -2), HPU_KM_ALIAS(0, 1)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

/* Windows past an item's bound, forward and backward, are refused. */
static void test_bounds(void)
{
	const uint64_t in[] = { 1, 1, 1100, 1100 }, out[] = { 1, 1, 1, 1 };
	struct hpu_ktensor *x = hpu_kt_new(F32, 4, in, NULL), *y = hpu_kt_new(F32, 4, out, NULL);
	struct hpu_ktensor *g = hpu_kt_new(F32, 4, in, NULL);
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_AVG_POOL, y, x);
	set_args(&c, &(struct pool_case){ .k = { 1100, 1100 }, .s = { 1, 1 } }, false);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_avg_pool, &c, HPU_KSPLIT_ONE) != 0);
	c.args[0] = 900;
	c.args[1] = 1000;
	c.args[2] = 900;
	c.args[3] = 1000;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_avg_pool, &c, HPU_KSPLIT_ONE) == 0);
	/* Windows of 1100 x 1100 at stride 1: each position in 1100^2 of them. */
	hpu_kt_free(y);
	y = hpu_kt_new(F32, 4, HPU_KT_DIMS(1, 1, 1, 1), NULL);
	HPU_KCALL(&c, HPU_KERNEL_AVG_POOL_BWD, g, y);
	set_args(&c, &(struct pool_case){ .k = { 1100, 1100 }, .s = { 1, 1 } }, false);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_avg_pool_bwd, &c, HPU_KSPLIT_ONE) != 0);
	hpu_kt_free(x);
	hpu_kt_free(y);
	hpu_kt_free(g);
}

/*
 * A dilated window whose positions skip the whole input (H 3, k 2, dilation
 * 4, padding 1: positions -1 and 3) is refused; H 4 puts 3 inside.
 */
static void test_window_misses(void)
{
	for (uint64_t h = 3; h <= 4; h++) {
		struct hpu_ktensor *x = hpu_kt_new(F32, 3, HPU_KT_DIMS(1, h, 2), NULL);
		struct hpu_ktensor *y = hpu_kt_new(F32, 3, HPU_KT_DIMS(1, h - 2, 2), NULL);
		struct hpu_ktensor *i = hpu_kt_new(I64, 3, HPU_KT_DIMS(1, h - 2, 2), NULL);
		struct hdm_kcall c;

		HPU_KCALL(&c, HPU_KERNEL_MAX_POOL, y, i, x);
		set_args(&c, &(struct pool_case){ .k = { 2, 1 }, .s = { 1, 1 }, .p = { 1, 0 },
						  .d = { 4, 1 } }, true);
		HPU_KEXPECT((hpu_krun(&hdm_kernel_max_pool, &c, HPU_KSPLIT_ONE) == 0) == (h == 4));
		hpu_kt_free(x);
		hpu_kt_free(y);
		hpu_kt_free(i);
	}
}

static const struct hpu_ktest_case cases[] = {
	{ "max_pool, max_pool_bwd: padding, dilation, ceil_mode, fp32 and bf16", test_max_pool },
	{ "max_pool: ties take the first maximum; backward onto it", test_max_pool_ties },
	{ "max_pool: NaN wins, -inf windows", test_max_pool_nan },
	{ "max_pool_bwd: an index outside its window writes nothing", test_max_pool_bad_index },
	{ "avg_pool, avg_pool_bwd: count_include_pad, ceil_mode, divisor, adaptive",
	  test_avg_pool },
	{ "pooling windows within an item's bound", test_bounds },
	{ "max_pool: a dilated window missing the input is refused", test_window_misses },
	{ "every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
