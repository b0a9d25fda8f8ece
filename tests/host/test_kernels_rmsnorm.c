/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the RMSNorm kernels (hdm_kernel_rmsnorm.c): the
 * forward against a reference in double over contiguous, transposed and
 * flipped layouts, fp32 and bf16, with and without a weight; the backward
 * against central differences of that reference, in place, and with more
 * rows than one weight-gradient chunk; every rejection.  Launches rotate
 * through the harness's ways of splitting the items.  Prints TAP.
 *
 * Tolerances: the forward's only error is its rounding (hpu_ktol(): 1e-6
 * relative for fp32, 2^-8 for bf16).  Gradients: central differences with
 * step 1e-3 in double against fp32 kernels within 1e-4 relative + 1e-5
 * absolute; bf16 outputs within 2^-6 + 2^-7.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hdm_kernel_harness.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define EPS 1e-5

/* A layout by turn: row-major, column-major, or row-major with the last dim reversed. */
static struct hpu_ktensor *tensor(uint32_t dtype, uint32_t ndim, const uint64_t *shape,
				  unsigned int turn)
{
	int64_t st[HPU_TENSOR_MAX_DIMS], step = 1;
	uint32_t d;

	if (!ndim || turn % 3 == 0)
		return hpu_kt_new(dtype, ndim, shape, NULL);
	if (turn % 3 == 1) {
		for (d = 0; d < ndim; step *= (int64_t)shape[d++])
			st[d] = step;
	} else {
		for (d = ndim; d-- > 0; step *= (int64_t)shape[d])
			st[d] = step;
		st[ndim - 1] = -1;
	}
	return hpu_kt_new(dtype, ndim, shape, st);
}

struct rms_shape {
	uint32_t ndim;
	uint64_t d[4];
	int64_t k; /* trailing dims normalised */
};

static const struct rms_shape shapes[] = {
	{ 2, { 4, 6 }, 1 }, { 3, { 2, 3, 5 }, 2 }, { 3, { 3, 4, 7 }, 1 },
	{ 1, { 7 }, 1 },    { 3, { 2, 1, 9 }, 3 },
};

/* A forward's tensors: out, rstd, in, weight; rows and cols of in. */
struct rms {
	const struct rms_shape *s;
	uint64_t rows, cols;
	bool weight;
	struct hpu_ktensor *t[4];
};

static void rms_new(struct rms *r, const struct rms_shape *s, bool weight, uint32_t dtype,
		    unsigned int turn)
{
	uint32_t lead = s->ndim - (uint32_t)s->k;

	r->s = s;
	r->weight = weight;
	r->rows = r->cols = 1;
	for (uint32_t d = 0; d < s->ndim; d++)
		*(d < lead ? &r->rows : &r->cols) *= s->d[d];
	r->t[0] = tensor(dtype, s->ndim, s->d, turn);
	r->t[1] = tensor(F32, lead, s->d, turn + 1);
	r->t[2] = tensor(dtype, s->ndim, s->d, turn + 2);
	hpu_kt_fill_random(r->t[2], turn + 7, -2, 3);
	r->t[3] = tensor(dtype, (uint32_t)s->k, s->d + lead, turn);
	hpu_kt_fill_random(r->t[3], turn + 11, 0.5, 1.5);
}

static struct hdm_kcall rms_forward_call(const struct rms *r)
{
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_RMS_NORM, r->t[0], r->t[1], r->t[2], r->t[3]);
	c.args[0] = r->s->k;
	c.args[1] = r->weight;
	c.scalars[0] = EPS;
	return c;
}

/* out then rstd, from in and weight as they are now: one malloc'ed array. */
static double *rms_reference(const struct rms *r)
{
	double *x = hpu_kt_values(r->t[2]), *w = hpu_kt_values(r->t[3]);
	double *y = malloc((r->rows * r->cols + r->rows) * sizeof(*y));

	for (uint64_t i = 0; i < r->rows; i++) {
		const double *xr = x + i * r->cols;
		double ms = 0, s;

		for (uint64_t j = 0; j < r->cols; j++)
			ms += xr[j] * xr[j] / (double)r->cols;
		s = pow(ms + EPS, -0.5);
		for (uint64_t j = 0; j < r->cols; j++)
			y[i * r->cols + j] = xr[j] * s * (r->weight ? w[j] : 1);
		y[r->rows * r->cols + i] = s;
	}
	free(x);
	free(w);
	return y;
}

static void free_tensors(struct hpu_ktensor **t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hpu_kt_free(t[i]);
}

static void test_forward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(shapes); i++)
		for (int w = 0; w < 2; w++)
			for (int b = 0; b < 2; b++, turn++) {
				struct rms r;
				struct hdm_kcall c;
				double *want;

				rms_new(&r, &shapes[i], w, b ? BF16 : F32, turn);
				c = rms_forward_call(&r);
				HPU_KLAUNCH(&hdm_kernel_rms_norm, &c);
				want = rms_reference(&r);
				HPU_KEXPECT_NEAR_DT(r.t[0], want);
				HPU_KEXPECT_NEAR_DT(r.t[1], want + r.rows * r.cols);
				HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_rms_norm, &c);
				free(want);
				free_tensors(r.t, HPU_ARRAY_SIZE(r.t));
			}
}

/* out = in itself: the same values as into a tensor of its own. */
static void test_forward_in_place(void)
{
	struct rms r;
	struct hdm_kcall c;
	double *want;

	rms_new(&r, &shapes[2], true, F32, 0);
	want = rms_reference(&r);
	hpu_kt_free(r.t[0]);
	r.t[0] = r.t[2];
	c = rms_forward_call(&r);
	HPU_KLAUNCH(&hdm_kernel_rms_norm, &c);
	HPU_KEXPECT_NEAR_DT(r.t[2], want);
	free(want);
	free_tensors(r.t + 1, 3);
}

struct rms_ctx {
	struct rms *r;
	const double *g;
};

/* sum(grad_out * out): the scalar whose gradient the backward computes. */
static double rms_f(void *p)
{
	struct rms_ctx *ctx = p;
	double *y = rms_reference(ctx->r), s = 0;

	for (uint64_t i = 0; i < ctx->r->rows * ctx->r->cols; i++)
		s += ctx->g[i] * y[i];
	free(y);
	return s;
}

/* t: grad_in, grad_weight (or a stand-in), grad_out, in, rstd, weight (or a stand-in). */
static struct hdm_kcall rms_backward_call(const struct rms *r, struct hpu_ktensor *gi,
					  struct hpu_ktensor *gw, struct hpu_ktensor *go,
					  struct hpu_ktensor *stand_in)
{
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_RMS_NORM_BWD, gi, r->weight ? gw : stand_in, go, r->t[2], r->t[1],
		  r->weight ? r->t[3] : stand_in);
	c.args[0] = r->s->k;
	c.args[1] = r->weight;
	return c;
}

static void grad_case(const struct rms_shape *s, bool weight, uint32_t dtype, unsigned int turn)
{
	uint32_t lead = s->ndim - (uint32_t)s->k;
	struct hpu_ktensor *go = tensor(dtype, s->ndim, s->d, turn + 1);
	struct hpu_ktensor *gi = tensor(dtype, s->ndim, s->d, turn + 2);
	struct hpu_ktensor *gw = tensor(dtype, (uint32_t)s->k, s->d + lead, turn);
	struct hpu_ktensor *stand_in = hpu_kt_new(F32, 0, NULL, NULL), *same, *gw2;
	double rtol = dtype == BF16 ? 1.0 / 64 : 1e-4, atol = dtype == BF16 ? 1.0 / 128 : 1e-5;
	struct hdm_kcall c;
	struct rms r;
	struct rms_ctx ctx = { &r, NULL };

	hpu_kt_fill_random(go, turn + 3, -1, 1);
	ctx.g = hpu_kt_values(go);
	rms_new(&r, s, weight, F32, turn);
	c = rms_forward_call(&r);
	HPU_KLAUNCH(&hdm_kernel_rms_norm, &c);
	c = rms_backward_call(&r, gi, gw, go, stand_in);
	HPU_KLAUNCH(&hdm_kernel_rms_norm_bwd, &c);
	hpu_kgradcheck(r.t[2], rms_f, &ctx, gi, 1e-3, rtol, atol, "grad_in", __LINE__);
	if (weight)
		hpu_kgradcheck(r.t[3], rms_f, &ctx, gw, 1e-3, rtol, atol, "grad_weight", __LINE__);
	HPU_KEXPECT(hpu_kt_get(stand_in, 0) == 0);
	/* grad_in in place of grad_out, on every split: the same bytes. */
	for (int sp = 0; sp < HPU_KSPLIT_COUNT; sp++) {
		same = tensor(dtype, s->ndim, s->d, turn + 1);
		gw2 = tensor(dtype, (uint32_t)s->k, s->d + lead, turn);
		hpu_kt_fill(same, ctx.g);
		c = rms_backward_call(&r, same, gw2, same, stand_in);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_rms_norm_bwd, &c, (enum hpu_ksplit)sp) == 0);
		HPU_KEXPECT_SAME(same, gi);
		if (weight)
			HPU_KEXPECT_SAME(gw2, gw);
		free_tensors((struct hpu_ktensor *[]){ same, gw2 }, 2);
	}
	free((void *)ctx.g);
	free_tensors((struct hpu_ktensor *[]){ go, gi, gw, stand_in }, 4);
	free_tensors(r.t, HPU_ARRAY_SIZE(r.t));
}

static void test_backward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(shapes); i++)
		for (int w = 0; w < 2; w++, turn++)
			grad_case(&shapes[i], w, turn % 4 == 3 ? BF16 : F32, turn);
}

/*
 * More rows than a weight-gradient chunk (HPU_KERNEL_MAX_ITEM_WORK): the
 * chunks' partials added in order.  Whole-number products keep every sum
 * exact, so the want is exact whatever the order.
 */
static void test_backward_chunks(void)
{
	const uint64_t rows = HPU_KERNEL_MAX_ITEM_WORK + 3, shape[2] = { rows, 2 };
	struct hpu_ktensor *x = hpu_kt_new(F32, 2, shape, NULL), *g = hpu_kt_new(F32, 2, shape, NULL);
	struct hpu_ktensor *gi = hpu_kt_new(F32, 2, shape, NULL);
	struct hpu_ktensor *rstd = hpu_kt_new(F32, 1, shape, NULL);
	struct hpu_ktensor *w = hpu_kt_new(F32, 1, shape + 1, NULL);
	struct hpu_ktensor *gw = hpu_kt_new(F32, 1, shape + 1, NULL);
	double want[2] = { 0, 0 };
	struct hdm_kcall c;

	for (uint64_t i = 0; i < rows; i++) {
		for (uint64_t j = 0; j < 2; j++) {
			double xv = (double)(i % 5) - 2, gv = j ? 1 : (double)(i % 3);

			hpu_kt_set(x, i * 2 + j, xv);
			hpu_kt_set(g, i * 2 + j, gv);
			want[j] += xv * gv * 2;
		}
		hpu_kt_set(rstd, i, 2);
	}
	hpu_kt_set(w, 0, 1);
	hpu_kt_set(w, 1, 1);
	HPU_KCALL(&c, HPU_KERNEL_RMS_NORM_BWD, gi, gw, g, x, rstd, w);
	c.args[0] = 1;
	c.args[1] = 1;
	HPU_KLAUNCH(&hdm_kernel_rms_norm_bwd, &c);
	HPU_KEXPECT_NEAR(gw, want, 0, 0);
	free_tensors((struct hpu_ktensor *[]){ x, g, gi, rstd, w, gw }, 6);
}

static const struct hpu_kreject_case reject_cases[] = {
	{ "rms_norm", &hdm_kernel_rms_norm, HPU_KERNEL_RMS_NORM, { 1, 1 }, { 1e-5 }, 4,
	  { { F32, 2, { 3, 4 } }, { F32, 1, { 3 } }, { F32, 2, { 3, 4 } },
	    { F32, 1, { 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(3), HPU_KM_ARG(0, 0), HPU_KM_ARG(0, 3), HPU_KM_ARG(1, 2),
		    HPU_KM_ARG(1, -1), HPU_KM_DTYPE(2, I32), HPU_KM_DTYPE(0, I32),
		    HPU_KM_DTYPE(1, BF16), HPU_KM_DTYPE(3, I32), HPU_KM_SHAPE(0, 1),
		    HPU_KM_SHAPE(1, 0), HPU_KM_SHAPE(3, 0), HPU_KM_NDIM(1, 2),
		    HPU_KM_SCALAR(0, -1), HPU_KM_SCALAR(0, NAN)) },
	{ "rms_norm_bwd", &hdm_kernel_rms_norm_bwd, HPU_KERNEL_RMS_NORM_BWD, { 1, 1 }, { 0 },
	  6,
	  { { F32, 2, { 3, 4 } }, { F32, 1, { 4 } }, { F32, 2, { 3, 4 } },
	    { F32, 2, { 3, 4 } }, { F32, 1, { 3 } }, { F32, 1, { 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(5), HPU_KM_ARG(0, 0), HPU_KM_ARG(0, 3), HPU_KM_ARG(1, 3),
		    HPU_KM_DTYPE(0, I32), HPU_KM_DTYPE(1, I32), HPU_KM_DTYPE(2, I32),
		    HPU_KM_DTYPE(4, BF16), HPU_KM_SHAPE(0, 1), HPU_KM_SHAPE(1, 0),
		    HPU_KM_SHAPE(2, 0), HPU_KM_SHAPE(4, 0), HPU_KM_SHAPE(5, 0),
		    HPU_KM_ALIAS(1, 2), HPU_KM_ALIAS(1, 3), HPU_KM_ALIAS(1, 5)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

/* A row past HPU_KERNEL_MAX_ITEM_WORK / 2 elements is refused, without data behind it. */
static void test_row_limit(void)
{
	struct hpu_ktensor *t = hpu_kt_new(F32, 0, NULL, NULL);
	struct hdm_kcall c;
	uint64_t items[HDM_KERNEL_MAX_PHASES];

	HPU_KCALL(&c, HPU_KERNEL_RMS_NORM, t, t, t, t);
	c.args[0] = 1;
	for (unsigned int i = 0; i < 4; i++) {
		c.t[i].ndim = 1;
		c.t[i].shape[0] = HPU_KERNEL_MAX_ITEM_WORK / 2 + 1;
	}
	c.t[1].ndim = 0;
	c.t[1].shape[0] = 1;
	HPU_KEXPECT(hdm_kernel_rms_norm.check(&c, items) != 0);
	c.t[0].shape[0] = c.t[2].shape[0] = c.t[3].shape[0] = HPU_KERNEL_MAX_ITEM_WORK / 2;
	HPU_KEXPECT(hdm_kernel_rms_norm.check(&c, items) == 0);
	hpu_kt_free(t);
}

/* Milliseconds run() takes over every item of each phase of a checked launch, on one thread. */
static double time_run(const struct hdm_kernel_def *def, struct hdm_kcall *c)
{
	uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };
	unsigned int phases = def->phases ? def->phases : 1;
	struct timespec t0, t1;
	void *scratch;

	HPU_KEXPECT(def->check(c, items) == 0);
	scratch = calloc(1, def->scratch ? def->scratch(c, items[0]) + 1 : 1);
	c->state->scratch = scratch;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int p = 0; p < phases; p++) {
		c->state->phase = p;
		def->run(c, 0, items[p]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	c->state->phase = 0;
	c->state->scratch = NULL;
	free(scratch);
	return (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}

/* A small GPT's RMSNorm, [256 tokens, 512] fp32 with a weight: the time of each direction. */
static void test_gpt_sized(void)
{
	static const struct rms_shape s = { 2, { 256, 512 }, 1 };
	struct hpu_ktensor *gi = hpu_kt_new(F32, 2, s.d, NULL), *go = hpu_kt_new(F32, 2, s.d, NULL);
	struct hpu_ktensor *gw = hpu_kt_new(F32, 1, s.d + 1, NULL), *stand_in = hpu_kt_new(F32, 0,
											   NULL, NULL);
	struct hdm_kcall fwd, bwd;
	double fwd_ms, bwd_ms;
	struct rms r;

	rms_new(&r, &s, true, F32, 0);
	hpu_kt_fill_random(go, 9, -1, 1);
	fwd = rms_forward_call(&r);
	HPU_KLAUNCH(&hdm_kernel_rms_norm, &fwd);
	bwd = rms_backward_call(&r, gi, gw, go, stand_in);
	HPU_KLAUNCH(&hdm_kernel_rms_norm_bwd, &bwd);
	fwd_ms = time_run(&hdm_kernel_rms_norm, &fwd);
	bwd_ms = time_run(&hdm_kernel_rms_norm_bwd, &bwd);
	printf("# [256, 512] fp32 on one thread: rms_norm %.2f ms, rms_norm_bwd %.2f ms\n", fwd_ms,
	       bwd_ms);
	free_tensors((struct hpu_ktensor *[]){ gi, go, gw, stand_in }, 4);
	free_tensors(r.t, HPU_ARRAY_SIZE(r.t));
}

int main(void)
{
	static const struct hpu_ktest_case cases[] = {
		{ "forward", test_forward },
		{ "forward in place", test_forward_in_place },
		{ "backward", test_backward },
		{ "backward over several chunks of rows", test_backward_chunks },
		{ "rejections", test_rejections },
		{ "row limit", test_row_limit },
		{ "GPT-sized timing", test_gpt_sized },
	};

	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
