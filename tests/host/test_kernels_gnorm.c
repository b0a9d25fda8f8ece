/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the group-norm kernels (GROUP_NORM, GROUP_NORM_BWD):
 * the forward against a naive two-pass reference in double, with and
 * without weight and bias, fp32 and bf16, groups of one channel, of
 * several and of all, rows of one element; the backward against the
 * closed form in double and grad_in against central differences of the
 * reference, each output wanted or not; rows of several chunks against
 * the reference and giving the same bytes however the launch is split;
 * contiguous and scattered layouts giving the same bytes; in place; the
 * scratch's bound; every rejection.  Prints TAP.
 *
 * Tolerances: results computed in double from the stored inputs and
 * rounded once: 1e-6 relative for fp32, 2^-8 for bf16, the same absolute.
 * Central differences with step 1e-3 against fp32 grad_in within 1e-4
 * relative + 1e-5.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_kernel_harness.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define U8 HPU_DTYPE_U8

/* The forward's flags (a1). */
#define W 1
#define B 2

/* The backward's flags (a1). */
#define BW_WEIGHT 1
#define BW_GW 2
#define BW_GB 4
#define BW_GI 8

#define EPS 1e-5

struct gn_shape {
	uint32_t ndim;
	uint64_t d[4];
	int64_t groups;
};

static const struct gn_shape shapes[] = {
	{ 3, { 2, 6, 5 }, 3 },	 { 4, { 3, 4, 2, 3 }, 2 }, { 2, { 2, 6 }, 3 },
	{ 3, { 1, 5, 7 }, 5 },	 { 3, { 2, 6, 3 }, 1 },	   { 3, { 3, 9, 7 }, 3 },
	{ 4, { 1, 3, 1, 1 }, 1 },
};

/* The forward's tensors: out, mean, rstd, in, weight, bias. */
struct gn {
	const struct gn_shape *s;
	uint64_t n, c, hw, cg;
	int64_t flags;
	struct hpu_ktensor *t[6];
};

static void gn_new(struct gn *gn, const struct gn_shape *s, int64_t flags, uint32_t dtype,
		   uint64_t seed)
{
	uint64_t stat[2] = { s->d[0], (uint64_t)s->groups };

	gn->s = s;
	gn->n = s->d[0];
	gn->c = s->d[1];
	gn->hw = 1;
	for (uint32_t d = 2; d < s->ndim; d++)
		gn->hw *= s->d[d];
	gn->cg = gn->c / (uint64_t)s->groups;
	gn->flags = flags;
	gn->t[0] = hpu_kt_new(dtype, s->ndim, s->d, NULL);
	gn->t[1] = hpu_kt_new(F32, 2, stat, NULL);
	gn->t[2] = hpu_kt_new(F32, 2, stat, NULL);
	gn->t[3] = hpu_kt_new(dtype, s->ndim, s->d, NULL);
	gn->t[4] = hpu_kt_new(dtype, 1, &gn->c, NULL);
	gn->t[5] = hpu_kt_new(dtype, 1, &gn->c, NULL);
	hpu_kt_fill_random(gn->t[3], seed, -2, 3);
	hpu_kt_fill_random(gn->t[4], seed + 1, 0.5, 1.5);
	hpu_kt_fill_random(gn->t[5], seed + 2, -1, 1);
}

static void gn_free(struct gn *gn)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(gn->t); i++)
		hpu_kt_free(gn->t[i]);
}

static struct hdm_kcall gn_call(const struct gn *gn)
{
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_GROUP_NORM, gn->t[0], gn->t[1], gn->t[2], gn->t[3], gn->t[4],
		  gn->t[5]);
	c.args[0] = gn->s->groups;
	c.args[1] = gn->flags;
	c.scalars[0] = EPS;
	return c;
}

/* Group ng's element j (channel after channel) as its row-major index. */
static uint64_t at(const struct gn *gn, uint64_t ng, uint64_t j)
{
	uint64_t groups = (uint64_t)gn->s->groups;

	return ((ng / groups) * gn->c + ng % groups * gn->cg) * gn->hw + j;
}

/* The reference forward of x: out (numel), then mean and rstd per group. */
static double *gn_reference(const struct gn *gn, const double *x)
{
	uint64_t numel = gn->n * gn->c * gn->hw, groups = gn->n * (uint64_t)gn->s->groups;
	uint64_t m = gn->cg * gn->hw;
	double *w = hpu_kt_values(gn->t[4]), *b = hpu_kt_values(gn->t[5]);
	double *y = malloc((numel + 2 * groups) * sizeof(*y));

	for (uint64_t ng = 0; ng < groups; ng++) {
		double mean = 0, var = 0, rstd;

		for (uint64_t j = 0; j < m; j++)
			mean += x[at(gn, ng, j)];
		mean /= (double)m;
		for (uint64_t j = 0; j < m; j++)
			var += (x[at(gn, ng, j)] - mean) * (x[at(gn, ng, j)] - mean);
		rstd = 1 / sqrt(var / (double)m + EPS);
		y[numel + ng] = mean;
		y[numel + groups + ng] = rstd;
		for (uint64_t j = 0; j < m; j++) {
			uint64_t i = at(gn, ng, j), ch = i / gn->hw % gn->c;

			y[i] = (x[i] - mean) * rstd * (gn->flags & W ? w[ch] : 1) +
			       (gn->flags & B ? b[ch] : 0);
		}
	}
	free(w);
	free(b);
	return y;
}

/* Runs the forward and checks every output against the reference. */
static void gn_forward_checked(struct gn *gn)
{
	struct hdm_kcall c = gn_call(gn);
	double *x = hpu_kt_values(gn->t[3]), *want = gn_reference(gn, x);
	uint64_t numel = gn->n * gn->c * gn->hw;

	HPU_KLAUNCH(&hdm_kernel_group_norm, &c);
	HPU_KEXPECT_NEAR_DT(gn->t[0], want);
	HPU_KEXPECT_NEAR_DT(gn->t[1], want + numel);
	HPU_KEXPECT_NEAR_DT(gn->t[2], want + numel + gn->n * (uint64_t)gn->s->groups);
	free(x);
	free(want);
}

static void test_forward(void)
{
	static const int64_t flags[] = { W | B, 0, W, B };
	uint64_t seed = 1;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(shapes); i++)
		for (size_t f = 0; f < HPU_ARRAY_SIZE(flags); f++)
			for (int dt = 0; dt < 2; dt++, seed += 4) {
				struct gn gn;

				gn_new(&gn, &shapes[i], flags[f], dt ? BF16 : F32, seed);
				gn_forward_checked(&gn);
				gn_free(&gn);
			}
}

/* ---- backward ---- */

/* The closed form in double: grad_in, then grad_weight and grad_bias per channel. */
static double *bwd_reference(const struct gn *gn, const double *x, const double *g,
			     const double *mean, const double *rstd, bool weight)
{
	uint64_t numel = gn->n * gn->c * gn->hw, m = gn->cg * gn->hw;
	double *w = hpu_kt_values(gn->t[4]), *r = calloc(numel + 2 * gn->c, sizeof(*r));

	for (uint64_t ng = 0; ng < gn->n * (uint64_t)gn->s->groups; ng++) {
		double sdy = 0, sdyx = 0;

		for (uint64_t j = 0; j < m; j++) {
			uint64_t i = at(gn, ng, j), ch = i / gn->hw % gn->c;
			double xhat = (x[i] - mean[ng]) * rstd[ng], wc = weight ? w[ch] : 1;

			sdy += g[i] * wc;
			sdyx += g[i] * wc * xhat;
			r[numel + ch] += g[i] * xhat;
			r[numel + gn->c + ch] += g[i];
		}
		for (uint64_t j = 0; j < m; j++) {
			uint64_t i = at(gn, ng, j), ch = i / gn->hw % gn->c;
			double xhat = (x[i] - mean[ng]) * rstd[ng], wc = weight ? w[ch] : 1;

			r[i] = rstd[ng] * (g[i] * wc - sdy / (double)m - xhat * sdyx / (double)m);
		}
	}
	free(w);
	return r;
}

struct fd_ctx {
	struct gn *gn;
	const double *g;
};

/* sum(g * out) of the reference forward at in's current values. */
static double fd_f(void *p)
{
	struct fd_ctx *ctx = p;
	double *x = hpu_kt_values(ctx->gn->t[3]), *y = gn_reference(ctx->gn, x), s = 0;

	for (uint64_t i = 0; i < ctx->gn->n * ctx->gn->c * ctx->gn->hw; i++)
		s += ctx->g[i] * y[i];
	free(x);
	free(y);
	return s;
}

/* The backward's tensors after a forward of gn: grad_in, grad_weight, grad_bias, grad_out. */
struct gn_grads {
	struct hpu_ktensor *gi, *gw, *gb, *go;
};

static struct hdm_kcall bwd_call(struct gn *gn, struct gn_grads *d, int64_t bflags,
				 uint64_t seed)
{
	uint32_t dtype = gn->t[3]->v.dtype;
	struct hdm_kcall k = gn_call(gn);

	HPU_KLAUNCH(&hdm_kernel_group_norm, &k);
	d->gi = hpu_kt_new(dtype, gn->s->ndim, gn->s->d, NULL);
	d->go = hpu_kt_new(dtype, gn->s->ndim, gn->s->d, NULL);
	d->gw = hpu_kt_new(dtype, 1, &gn->c, NULL);
	d->gb = hpu_kt_new(dtype, 1, &gn->c, NULL);
	hpu_kt_fill_random(d->go, seed, -1, 1);
	/* Outputs not wanted keep these. */
	hpu_kt_fill_random(d->gi, seed + 1, 5, 6);
	hpu_kt_fill_random(d->gw, seed + 2, 5, 6);
	hpu_kt_fill_random(d->gb, seed + 3, 5, 6);
	HPU_KCALL(&k, HPU_KERNEL_GROUP_NORM_BWD, d->gi, d->gw, d->gb, d->go, gn->t[3], gn->t[1],
		  gn->t[2], gn->t[4]);
	k.args[0] = gn->s->groups;
	k.args[1] = bflags;
	return k;
}

static void grads_free(struct gn_grads *d)
{
	hpu_kt_free(d->gi);
	hpu_kt_free(d->gw);
	hpu_kt_free(d->gb);
	hpu_kt_free(d->go);
}

/* An output wanted matches the reference; one not wanted keeps its values. */
static void expect_grad(const struct hpu_ktensor *t, bool wanted, const double *want)
{
	if (wanted)
		HPU_KEXPECT_NEAR_DT(t, want);
	else
		HPU_KEXPECT(hpu_kt_get(t, 0) >= 5);
}

/* A forward, then its backward with bflags against the closed form (and central differences). */
static void bwd_case(const struct gn_shape *s, int64_t bflags, uint32_t dtype, uint64_t seed)
{
	struct gn gn;
	struct gn_grads d;
	struct hdm_kcall k;
	double *x, *g, *mean, *rstd, *want;
	uint64_t numel;

	gn_new(&gn, s, bflags & BW_WEIGHT ? W | B : B, dtype, seed);
	k = bwd_call(&gn, &d, bflags, seed + 4);
	numel = gn.n * gn.c * gn.hw;
	x = hpu_kt_values(gn.t[3]);
	g = hpu_kt_values(d.go);
	mean = hpu_kt_values(gn.t[1]);
	rstd = hpu_kt_values(gn.t[2]);
	want = bwd_reference(&gn, x, g, mean, rstd, bflags & BW_WEIGHT);
	HPU_KLAUNCH(&hdm_kernel_group_norm_bwd, &k);
	expect_grad(d.gi, bflags & BW_GI, want);
	expect_grad(d.gw, bflags & BW_GW, want + numel);
	expect_grad(d.gb, bflags & BW_GB, want + numel + gn.c);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_group_norm_bwd, &k);
	if (dtype == F32 && (bflags & BW_GI)) {
		struct fd_ctx ctx = { &gn, g };

		hpu_kgradcheck(gn.t[3], fd_f, &ctx, d.gi, 1e-3, 1e-4, 1e-5, "grad_in", __LINE__);
	}
	free(x);
	free(g);
	free(mean);
	free(rstd);
	free(want);
	grads_free(&d);
	gn_free(&gn);
}

static void test_backward(void)
{
	static const int64_t bflags[] = {
		BW_WEIGHT | BW_GI | BW_GW | BW_GB, BW_GI, BW_WEIGHT | BW_GI, BW_WEIGHT | BW_GW,
		BW_GB, BW_GW | BW_GB,
	};
	uint64_t seed = 500;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(shapes); i++)
		for (size_t f = 0; f < HPU_ARRAY_SIZE(bflags); f++)
			for (int dt = 0; dt < 2; dt++, seed += 8)
				bwd_case(&shapes[i], bflags[f], dt ? BF16 : F32, seed);
}

/* The forward's layouts agree; both run in place (out = in, grad_in = grad_out or in). */
static void test_layouts_and_in_place(void)
{
	struct gn gn;
	struct gn_grads d;
	struct hdm_kcall c, k;
	struct hpu_ktensor *copy;
	double *x, *want;

	gn_new(&gn, &shapes[1], W | B, F32, 31);
	c = gn_call(&gn);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_group_norm, &c);
	k = bwd_call(&gn, &d, BW_WEIGHT | BW_GI | BW_GW | BW_GB, 32);
	HPU_KLAUNCH(&hdm_kernel_group_norm_bwd, &k);
	k.t[0] = d.go->v;
	HPU_KLAUNCH(&hdm_kernel_group_norm_bwd, &k);
	HPU_KEXPECT_SAME(d.go, d.gi);
	copy = hpu_kt_new(F32, gn.s->ndim, gn.s->d, NULL);
	memcpy(copy->buf, gn.t[3]->buf, copy->size);
	k.t[0] = copy->v;
	k.t[4] = copy->v;
	hpu_kt_fill_random(d.go, 32, -1, 1);
	HPU_KLAUNCH(&hdm_kernel_group_norm_bwd, &k);
	HPU_KEXPECT_SAME(copy, d.gi);
	x = hpu_kt_values(gn.t[3]);
	want = gn_reference(&gn, x);
	c.t[0] = c.t[3];
	HPU_KLAUNCH(&hdm_kernel_group_norm, &c);
	HPU_KEXPECT_NEAR_DT(gn.t[3], want);
	free(x);
	free(want);
	hpu_kt_free(copy);
	grads_free(&d);
	gn_free(&gn);
}

/*
 * Rows of two chunks with a large mean, each row its own: the joined
 * statistics and sums match the reference, and every split of the launch
 * writes the same bytes.
 */
static void test_chunks(void)
{
	static const struct gn_shape big = { 3, { 2, 4, HPU_BNORM_CHUNK + 5 }, 2 };
	struct hpu_ktensor *ref_out, *ref_gi;
	struct gn gn;
	struct gn_grads d;
	struct hdm_kcall c, k;
	double *x, *g, *mean, *rstd, *want;
	uint64_t numel;

	gn_new(&gn, &big, W | B, F32, 41);
	numel = gn.n * gn.c * gn.hw;
	hpu_kt_fill_random(gn.t[3], 41, 100, 101);
	for (uint64_t i = 0; i < numel; i++)
		hpu_kt_set(gn.t[3], i, hpu_kt_get(gn.t[3], i) + 5.0 * (double)(i / gn.hw));
	gn_forward_checked(&gn);
	ref_out = hpu_kt_new(F32, 3, big.d, NULL);
	memcpy(ref_out->buf, gn.t[0]->buf, ref_out->size);
	k = bwd_call(&gn, &d, BW_WEIGHT | BW_GI | BW_GW | BW_GB, 42);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_group_norm_bwd, &k, HPU_KSPLIT_ONE) == 0);
	ref_gi = hpu_kt_new(F32, 3, big.d, NULL);
	memcpy(ref_gi->buf, d.gi->buf, ref_gi->size);
	for (int s = 0; s < HPU_KSPLIT_COUNT; s++) {
		c = gn_call(&gn);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_group_norm, &c, (enum hpu_ksplit)s) == 0);
		HPU_KEXPECT_SAME(gn.t[0], ref_out);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_group_norm_bwd, &k, (enum hpu_ksplit)s) == 0);
		HPU_KEXPECT_SAME(d.gi, ref_gi);
	}
	x = hpu_kt_values(gn.t[3]);
	g = hpu_kt_values(d.go);
	mean = hpu_kt_values(gn.t[1]);
	rstd = hpu_kt_values(gn.t[2]);
	want = bwd_reference(&gn, x, g, mean, rstd, true);
	HPU_KEXPECT_NEAR(d.gi, want, 1e-5, 1e-5);
	HPU_KEXPECT_NEAR(d.gw, want + numel, 1e-5, 1e-3);
	HPU_KEXPECT_NEAR(d.gb, want + numel + gn.c, 1e-5, 1e-3);
	free(x);
	free(g);
	free(mean);
	free(rstd);
	free(want);
	hpu_kt_free(ref_out);
	hpu_kt_free(ref_gi);
	grads_free(&d);
	gn_free(&gn);
}

/* N C chunks + N G partials fit the scratch up to 2^19, not one more. */
static void test_scratch_bound(void)
{
	for (uint64_t c = (1u << 19) - 1; c <= 1u << 19; c++) {
		uint64_t one = 1;
		struct hpu_ktensor *x = hpu_kt_new(F32, 2, HPU_KT_DIMS(1, c), NULL);
		struct hpu_ktensor *y = hpu_kt_new(F32, 2, HPU_KT_DIMS(1, c), NULL);
		struct hpu_ktensor *m = hpu_kt_new(F32, 2, HPU_KT_DIMS(1, 1), NULL);
		struct hpu_ktensor *s = hpu_kt_new(F32, 2, HPU_KT_DIMS(1, 1), NULL);
		struct hpu_ktensor *none = hpu_kt_new(F32, 1, &one, NULL);
		struct hdm_kcall k;

		HPU_KCALL(&k, HPU_KERNEL_GROUP_NORM, y, m, s, x, none, none);
		k.args[0] = 1;
		HPU_KEXPECT((hpu_krun(&hdm_kernel_group_norm, &k, HPU_KSPLIT_THREADS) == 0) ==
			    (c < 1u << 19));
		hpu_kt_free(x);
		hpu_kt_free(y);
		hpu_kt_free(m);
		hpu_kt_free(s);
		hpu_kt_free(none);
	}
}

#define T264 { F32, 3, { 2, 6, 4 } }
#define C6 { F32, 1, { 6 } }
#define S23 { F32, 2, { 2, 3 } }

static const struct hpu_kreject_case reject_cases[] = {
	{ "group_norm", &hdm_kernel_group_norm, HPU_KERNEL_GROUP_NORM, { 3, W | B }, { 1e-5 }, 6,
	  { T264, S23, S23, T264, C6, C6 },
	  HPU_KMUTS(HPU_KM_COUNT(5), HPU_KM_ARG(0, 0), HPU_KM_ARG(0, -3), HPU_KM_ARG(0, 4),
		    HPU_KM_ARG(0, 12), HPU_KM_ARG(1, 4), HPU_KM_NDIM(3, 1), HPU_KM_DTYPE(3, I32),
		    HPU_KM_DTYPE(0, U8), HPU_KM_SHAPE(0, 2), HPU_KM_SHAPE(1, 1),
		    HPU_KM_NDIM(2, 1), HPU_KM_DTYPE(1, I32), HPU_KM_SHAPE(4, 0),
		    HPU_KM_DTYPE(5, I32), HPU_KM_ALIAS(1, 2), HPU_KM_ALIAS(1, 3),
		    HPU_KM_ALIAS(2, 4), HPU_KM_ALIAS(1, 0), HPU_KM_SCALAR(0, -1),
		    HPU_KM_SCALAR(0, NAN), HPU_KM_SCALAR(0, INFINITY)) },
	{ "group_norm_bwd", &hdm_kernel_group_norm_bwd, HPU_KERNEL_GROUP_NORM_BWD,
	  { 3, BW_WEIGHT | BW_GI | BW_GW | BW_GB }, { 0 }, 8,
	  { T264, C6, C6, T264, T264, S23, S23, C6 },
	  HPU_KMUTS(HPU_KM_COUNT(7), HPU_KM_ARG(0, 0), HPU_KM_ARG(0, 4), HPU_KM_ARG(1, 16),
		    HPU_KM_SHAPE(0, 1), HPU_KM_SHAPE(3, 2), HPU_KM_DTYPE(1, I32),
		    HPU_KM_SHAPE(2, 0), HPU_KM_DTYPE(5, U8), HPU_KM_NDIM(6, 1),
		    HPU_KM_SHAPE(7, 0), HPU_KM_ALIAS(1, 7), HPU_KM_ALIAS(2, 3),
		    HPU_KM_ALIAS(1, 2), HPU_KM_ALIAS(0, 5), HPU_KM_ALIAS(1, 0)) },
};

/* Every mutation above, and rows of no element (no mutation makes a dim 0). */
static void test_rejections(void)
{
	struct hpu_ktensor *x = hpu_kt_new(F32, 3, HPU_KT_DIMS(2, 6, 0), NULL);
	struct hpu_ktensor *m = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, 3), NULL);
	struct hpu_ktensor *s = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, 3), NULL);
	struct hpu_ktensor *none = hpu_kt_new(F32, 1, HPU_KT_DIMS(6), NULL);
	struct hdm_kcall k;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
	HPU_KCALL(&k, HPU_KERNEL_GROUP_NORM, x, m, s, x, none, none);
	k.args[0] = 3;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_group_norm, &k, HPU_KSPLIT_ONE) != 0);
	hpu_kt_free(x);
	hpu_kt_free(m);
	hpu_kt_free(s);
	hpu_kt_free(none);
}

static const struct hpu_ktest_case cases[] = {
	{ "group_norm: weight and bias or not, fp32 and bf16, odd groups", test_forward },
	{ "group_norm_bwd: closed form and central differences, each output or not",
	  test_backward },
	{ "group_norm(_bwd): layouts give the same bytes; in place", test_layouts_and_in_place },
	{ "group_norm(_bwd): rows of two chunks, the same whatever the split", test_chunks },
	{ "group_norm: partials within the scratch's bound", test_scratch_bound },
	{ "every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
