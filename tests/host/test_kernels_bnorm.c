/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the batch-norm kernels (BATCH_NORM, BATCH_NORM_BWD):
 * the forward against a naive two-pass reference in double (training:
 * batch statistics and the running statistics' update with the unbiased
 * variance; eval: the running statistics), with and without weight and
 * bias, fp32 and bf16; the backward against the closed form in double and
 * grad_in against central differences of the reference; channels of
 * several chunks against the reference and giving the same bytes however
 * the launch is split; contiguous and scattered layouts giving the same
 * bytes; in place; every rejection.  Prints TAP.
 *
 * Tolerances: results computed in double from the stored inputs and
 * rounded once: 1e-6 relative for fp32, 2^-8 for bf16, the same absolute
 * (2e-6 for the running variance, two roundings).  Central differences
 * with step 1e-3 against fp32 grad_in within 1e-4 relative + 1e-5.
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

/* The forward's flags (a0). */
#define W 1
#define B 2
#define TRAIN 4
#define RUN 8

/* The backward's flags (a0). */
#define BW_WEIGHT 1
#define BW_GW 2
#define BW_GB 4
#define BW_TRAIN 8
#define BW_VAR 16

#define EPS 1e-5
#define MOMENTUM 0.1

struct bn_shape {
	uint32_t ndim;
	uint64_t d[4];
};

static const struct bn_shape shapes[] = {
	{ 2, { 6, 3 } },
	{ 3, { 2, 3, 5 } },
	{ 4, { 3, 2, 4, 5 } },
	{ 4, { 2, 1, 1, 1 } },
	{ 4, { 1, 4, 3, 1 } },
};

/* The forward's tensors: out, save_mean, save_invstd, in, weight, bias, running mean and var. */
struct bn {
	const struct bn_shape *s;
	uint64_t chans, m;
	int64_t flags;
	struct hpu_ktensor *t[8];
};

static void bn_new(struct bn *bn, const struct bn_shape *s, int64_t flags, uint32_t dtype,
		   uint32_t stat_dtype, uint64_t seed)
{
	uint64_t c = s->d[1];

	bn->s = s;
	bn->chans = c;
	bn->m = 1;
	for (uint32_t d = 0; d < s->ndim; d++)
		bn->m *= d == 1 ? 1 : s->d[d];
	bn->flags = flags;
	bn->t[0] = hpu_kt_new(dtype, s->ndim, s->d, NULL);
	bn->t[1] = hpu_kt_new(F32, 1, &c, NULL);
	bn->t[2] = hpu_kt_new(F32, 1, &c, NULL);
	bn->t[3] = hpu_kt_new(dtype, s->ndim, s->d, NULL);
	bn->t[4] = hpu_kt_new(dtype, 1, &c, NULL);
	bn->t[5] = hpu_kt_new(dtype, 1, &c, NULL);
	bn->t[6] = hpu_kt_new(stat_dtype, 1, &c, NULL);
	bn->t[7] = hpu_kt_new(stat_dtype, 1, &c, NULL);
	hpu_kt_fill_random(bn->t[3], seed, -2, 3);
	hpu_kt_fill_random(bn->t[4], seed + 1, 0.5, 1.5);
	hpu_kt_fill_random(bn->t[5], seed + 2, -1, 1);
	hpu_kt_fill_random(bn->t[6], seed + 3, -0.5, 0.5);
	hpu_kt_fill_random(bn->t[7], seed + 4, 0.5, 2);
}

static void bn_free(struct bn *bn)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(bn->t); i++)
		hpu_kt_free(bn->t[i]);
}

static struct hdm_kcall bn_call(const struct bn *bn)
{
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_BATCH_NORM, bn->t[0], bn->t[1], bn->t[2], bn->t[3], bn->t[4],
		  bn->t[5], bn->t[6], bn->t[7]);
	c.args[0] = bn->flags;
	c.scalars[0] = EPS;
	c.scalars[1] = MOMENTUM;
	return c;
}

/* Element j of channel ch of a row-major [N, C, S] as its linear index. */
static uint64_t at(const struct bn *bn, uint64_t ch, uint64_t j)
{
	uint64_t s = bn->m / bn->s->d[0];

	return (j / s * bn->chans + ch) * s + j % s;
}

/*
 * The reference forward of x and the launch's other inputs as they are now:
 * out (numel), then per channel mean, invstd, running_mean, running_var.
 */
static double *bn_reference(const struct bn *bn, const double *x)
{
	uint64_t n = bn->m * bn->chans, c = bn->chans;
	double *w = hpu_kt_values(bn->t[4]), *b = hpu_kt_values(bn->t[5]);
	double *rm = hpu_kt_values(bn->t[6]), *rv = hpu_kt_values(bn->t[7]);
	double *y = malloc((n + 4 * c) * sizeof(*y));

	for (uint64_t ch = 0; ch < c; ch++) {
		double mean = 0, var = 0, invstd;

		if (bn->flags & TRAIN) {
			for (uint64_t j = 0; j < bn->m; j++)
				mean += x[at(bn, ch, j)];
			mean /= (double)bn->m;
			for (uint64_t j = 0; j < bn->m; j++)
				var += (x[at(bn, ch, j)] - mean) * (x[at(bn, ch, j)] - mean);
			invstd = 1 / sqrt(var / (double)bn->m + EPS);
			y[n + 2 * c + ch] = (1 - MOMENTUM) * rm[ch] + MOMENTUM * mean;
			y[n + 3 * c + ch] = (1 - MOMENTUM) * rv[ch] +
					    MOMENTUM * var / (double)(bn->m - 1);
		} else {
			mean = rm[ch];
			invstd = 1 / sqrt(rv[ch] + EPS);
			y[n + 2 * c + ch] = rm[ch];
			y[n + 3 * c + ch] = rv[ch];
		}
		if (!(bn->flags & RUN)) {
			y[n + 2 * c + ch] = rm[ch];
			y[n + 3 * c + ch] = rv[ch];
		}
		y[n + ch] = mean;
		y[n + c + ch] = invstd;
		for (uint64_t j = 0; j < bn->m; j++) {
			uint64_t i = at(bn, ch, j);

			y[i] = (x[i] - mean) * invstd * (bn->flags & W ? w[ch] : 1) +
			       (bn->flags & B ? b[ch] : 0);
		}
	}
	free(w);
	free(b);
	free(rm);
	free(rv);
	return y;
}

/* Runs the forward and checks every output against the reference. */
static void bn_forward_checked(struct bn *bn)
{
	struct hdm_kcall c = bn_call(bn);
	double *x = hpu_kt_values(bn->t[3]), *want = bn_reference(bn, x);
	uint64_t n = bn->m * bn->chans;
	bool bf16_stats = bn->t[6]->v.dtype == BF16;

	HPU_KLAUNCH(&hdm_kernel_batch_norm, &c);
	HPU_KEXPECT_NEAR_DT(bn->t[0], want);
	HPU_KEXPECT_NEAR_DT(bn->t[1], want + n);
	HPU_KEXPECT_NEAR_DT(bn->t[2], want + n + bn->chans);
	HPU_KEXPECT_NEAR(bn->t[6], want + n + 2 * bn->chans, hpu_ktol(bn->t[6]->v.dtype),
			 hpu_ktol(bn->t[6]->v.dtype));
	HPU_KEXPECT_NEAR(bn->t[7], want + n + 3 * bn->chans,
			 bf16_stats ? HPU_KTOL_BF16 : 2 * HPU_KTOL_F32,
			 bf16_stats ? HPU_KTOL_BF16 : 2 * HPU_KTOL_F32);
	free(x);
	free(want);
}

static const int64_t fwd_flags[] = {
	TRAIN | RUN | W | B, TRAIN | RUN, TRAIN | W, TRAIN | B, RUN | W | B, RUN,
};

static void test_forward(void)
{
	uint64_t seed = 1;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(shapes); i++)
		for (size_t f = 0; f < HPU_ARRAY_SIZE(fwd_flags); f++)
			for (int dt = 0; dt < 3; dt++, seed += 8) {
				struct bn bn;

				bn_new(&bn, &shapes[i], fwd_flags[f], dt ? BF16 : F32,
				       dt == 2 ? BF16 : F32, seed);
				bn_forward_checked(&bn);
				bn_free(&bn);
			}
}

/* Running statistics over several steps follow the reference's. */
static void test_running_steps(void)
{
	struct bn bn;

	bn_new(&bn, &shapes[2], TRAIN | RUN | W | B, F32, F32, 99);
	for (uint64_t step = 0; step < 5; step++) {
		hpu_kt_fill_random(bn.t[3], 100 + step, -3 + (double)step, 2);
		bn_forward_checked(&bn);
	}
	bn_free(&bn);
}

/* out may be in itself. */
static void test_in_place(void)
{
	struct bn bn;
	struct hdm_kcall c;
	double *x, *want;

	bn_new(&bn, &shapes[2], TRAIN | RUN | W | B, F32, F32, 7);
	x = hpu_kt_values(bn.t[3]);
	want = bn_reference(&bn, x);
	c = bn_call(&bn);
	c.t[0] = c.t[3];
	HPU_KLAUNCH(&hdm_kernel_batch_norm, &c);
	HPU_KEXPECT_NEAR_DT(bn.t[3], want);
	free(x);
	free(want);
	bn_free(&bn);
}

/* ---- backward ---- */

/*
 * The closed form in double: grad_in, then grad_weight and grad_bias per
 * channel, over grad_out g and the forward's statistics (mean, invstd).
 */
static double *bwd_reference(const struct bn *bn, const double *x, const double *g,
			     const double *mean, const double *invstd, bool training)
{
	uint64_t n = bn->m * bn->chans;
	double *w = hpu_kt_values(bn->t[4]), *r = malloc((n + 2 * bn->chans) * sizeof(*r));

	for (uint64_t ch = 0; ch < bn->chans; ch++) {
		double sg = 0, sgx = 0, scale = invstd[ch] * (bn->flags & W ? w[ch] : 1);

		for (uint64_t j = 0; j < bn->m; j++) {
			uint64_t i = at(bn, ch, j);

			sg += g[i];
			sgx += g[i] * (x[i] - mean[ch]) * invstd[ch];
		}
		r[n + ch] = sgx;
		r[n + bn->chans + ch] = sg;
		for (uint64_t j = 0; j < bn->m; j++) {
			uint64_t i = at(bn, ch, j);
			double xhat = (x[i] - mean[ch]) * invstd[ch];

			r[i] = training ? scale * (g[i] - sg / (double)bn->m -
						   xhat * sgx / (double)bn->m) :
					  scale * g[i];
		}
	}
	free(w);
	return r;
}

struct fd_ctx {
	struct bn *bn;
	const double *g;
};

/* sum(g * out) of the reference forward at in's current values. */
static double fd_f(void *p)
{
	struct fd_ctx *ctx = p;
	double *x = hpu_kt_values(ctx->bn->t[3]), *y = bn_reference(ctx->bn, x), s = 0;

	for (uint64_t i = 0; i < ctx->bn->m * ctx->bn->chans; i++)
		s += ctx->g[i] * y[i];
	free(x);
	free(y);
	return s;
}

/*
 * A forward, then its backward with flags bflags, against the closed form;
 * fp32 training also against central differences.  Eval passes the running
 * variance (BW_VAR) or invstd.
 */
static void bwd_case(const struct bn_shape *s, int64_t fflags, int64_t bflags, uint32_t dtype,
		     uint64_t seed)
{
	struct bn bn;
	struct hpu_ktensor *gi, *gw, *gb, *go;
	uint64_t n, c = s->d[1];
	double *x, *g, *mean, *invstd, *want;
	bool training = bflags & BW_TRAIN;
	struct hdm_kcall k;

	bn_new(&bn, s, fflags, dtype, F32, seed);
	k = bn_call(&bn);
	HPU_KLAUNCH(&hdm_kernel_batch_norm, &k);
	n = bn.m * bn.chans;
	gi = hpu_kt_new(dtype, s->ndim, s->d, NULL);
	go = hpu_kt_new(dtype, s->ndim, s->d, NULL);
	gw = hpu_kt_new(dtype, 1, &c, NULL);
	gb = hpu_kt_new(dtype, 1, &c, NULL);
	hpu_kt_fill_random(go, seed + 5, -1, 1);
	hpu_kt_fill_random(gw, seed + 6, 5, 6);
	hpu_kt_fill_random(gb, seed + 7, 5, 6);
	HPU_KCALL(&k, HPU_KERNEL_BATCH_NORM_BWD, gi, gw, gb, go, bn.t[3],
		  training ? bn.t[1] : bn.t[6], training || !(bflags & BW_VAR) ? bn.t[2] : bn.t[7],
		  bn.t[4]);
	k.args[0] = bflags;
	k.scalars[0] = EPS;
	x = hpu_kt_values(bn.t[3]);
	g = hpu_kt_values(go);
	mean = hpu_kt_values(training ? bn.t[1] : bn.t[6]);
	invstd = hpu_kt_values(bn.t[2]);
	if (!training) {
		double *rv = hpu_kt_values(bn.t[7]);

		for (uint64_t ch = 0; ch < c; ch++)
			invstd[ch] = bflags & BW_VAR ? 1 / sqrt(rv[ch] + EPS) : invstd[ch];
		free(rv);
	}
	want = bwd_reference(&bn, x, g, mean, invstd, training);
	HPU_KLAUNCH(&hdm_kernel_batch_norm_bwd, &k);
	HPU_KEXPECT_NEAR_DT(gi, want);
	if (bflags & BW_GW)
		HPU_KEXPECT_NEAR_DT(gw, want + n);
	else
		HPU_KEXPECT(hpu_kt_get(gw, 0) >= 5);
	if (bflags & BW_GB)
		HPU_KEXPECT_NEAR_DT(gb, want + n + c);
	else
		HPU_KEXPECT(hpu_kt_get(gb, 0) >= 5);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_batch_norm_bwd, &k);
	if (training && dtype == F32 && (fflags & TRAIN)) {
		struct fd_ctx ctx = { &bn, g };

		bn.flags &= ~RUN; /* the reference's running statistics are not differentiated */
		hpu_kgradcheck(bn.t[3], fd_f, &ctx, gi, 1e-3, 1e-4, 1e-5, "grad_in", __LINE__);
	}
	free(x);
	free(g);
	free(mean);
	free(invstd);
	free(want);
	hpu_kt_free(gi);
	hpu_kt_free(go);
	hpu_kt_free(gw);
	hpu_kt_free(gb);
	bn_free(&bn);
}

static void test_backward(void)
{
	static const int64_t bflags[] = {
		BW_TRAIN | BW_WEIGHT | BW_GW | BW_GB, BW_TRAIN, BW_TRAIN | BW_GB,
		BW_WEIGHT | BW_GW | BW_GB | BW_VAR, BW_WEIGHT | BW_VAR, BW_GW,
	};
	uint64_t seed = 500;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(shapes); i++)
		for (size_t f = 0; f < HPU_ARRAY_SIZE(bflags); f++)
			for (int dt = 0; dt < 2; dt++, seed += 8) {
				int64_t fflags = bflags[f] & BW_TRAIN ? TRAIN | RUN | W | B : RUN | W | B;

				if (!(bflags[f] & BW_WEIGHT))
					fflags &= ~W;
				bwd_case(&shapes[i], fflags, bflags[f], dt ? BF16 : F32, seed);
			}
}

/* The forward's layouts agree; a backward in place (grad_in = grad_out) writes the same. */
static void test_layouts_and_in_place(void)
{
	struct bn bn;
	struct hpu_ktensor *gi, *go, *gw, *gb;
	struct hdm_kcall c;
	uint64_t ch = 2;

	bn_new(&bn, &shapes[2], TRAIN | RUN | W | B, F32, F32, 31);
	c = bn_call(&bn);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_batch_norm, &c);
	HPU_KLAUNCH(&hdm_kernel_batch_norm, &c);
	gi = hpu_kt_new(F32, 4, shapes[2].d, NULL);
	go = hpu_kt_new(F32, 4, shapes[2].d, NULL);
	gw = hpu_kt_new(F32, 1, &ch, NULL);
	gb = hpu_kt_new(F32, 1, &ch, NULL);
	hpu_kt_fill_random(go, 32, -1, 1);
	HPU_KCALL(&c, HPU_KERNEL_BATCH_NORM_BWD, gi, gw, gb, go, bn.t[3], bn.t[1], bn.t[2],
		  bn.t[4]);
	c.args[0] = BW_TRAIN | BW_WEIGHT | BW_GW | BW_GB;
	HPU_KLAUNCH(&hdm_kernel_batch_norm_bwd, &c);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_batch_norm_bwd, &c);
	c.t[0] = go->v;
	HPU_KLAUNCH(&hdm_kernel_batch_norm_bwd, &c);
	HPU_KEXPECT_SAME(go, gi);
	hpu_kt_free(gi);
	hpu_kt_free(go);
	hpu_kt_free(gw);
	hpu_kt_free(gb);
	bn_free(&bn);
}

/*
 * Channels of three chunks: the joined statistics and sums match the
 * reference, and every split of the launch writes the same bytes.
 */
static void test_chunks(void)
{
	static const struct bn_shape big = { 3, { 3, 2, 2 * HPU_BNORM_CHUNK / 3 + 7 } };
	struct hpu_ktensor *ref_out, *ref_gi, *gi, *go, *gw, *gb;
	struct bn bn;
	struct hdm_kcall c, k;
	uint64_t ch = 2;

	bn_new(&bn, &big, TRAIN | W | B, F32, F32, 41);
	/* A large mean, and each chunk's own (batch n at 100 + 5 n): the join must be exact. */
	hpu_kt_fill_random(bn.t[3], 41, 100, 101);
	for (uint64_t i = 0; i < hpu_kt_numel(bn.t[3]); i++)
		hpu_kt_set(bn.t[3], i, hpu_kt_get(bn.t[3], i) + 5.0 * (double)(i / (2 * big.d[2])));
	bn_forward_checked(&bn);
	ref_out = hpu_kt_new(F32, 3, big.d, NULL);
	memcpy(ref_out->buf, bn.t[0]->buf, ref_out->size);
	gi = hpu_kt_new(F32, 3, big.d, NULL);
	ref_gi = hpu_kt_new(F32, 3, big.d, NULL);
	go = hpu_kt_new(F32, 3, big.d, NULL);
	gw = hpu_kt_new(F32, 1, &ch, NULL);
	gb = hpu_kt_new(F32, 1, &ch, NULL);
	hpu_kt_fill_random(go, 42, -1, 1);
	HPU_KCALL(&k, HPU_KERNEL_BATCH_NORM_BWD, ref_gi, gw, gb, go, bn.t[3], bn.t[1], bn.t[2],
		  bn.t[4]);
	k.args[0] = BW_TRAIN | BW_WEIGHT | BW_GW | BW_GB;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_batch_norm_bwd, &k, HPU_KSPLIT_ONE) == 0);
	for (int s = 0; s < HPU_KSPLIT_COUNT; s++) {
		c = bn_call(&bn);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_batch_norm, &c, (enum hpu_ksplit)s) == 0);
		HPU_KEXPECT_SAME(bn.t[0], ref_out);
		k.t[0] = gi->v;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_batch_norm_bwd, &k, (enum hpu_ksplit)s) == 0);
		HPU_KEXPECT_SAME(gi, ref_gi);
	}
	{
		double *x = hpu_kt_values(bn.t[3]), *g = hpu_kt_values(go);
		double *mean = hpu_kt_values(bn.t[1]), *invstd = hpu_kt_values(bn.t[2]);
		double *want = bwd_reference(&bn, x, g, mean, invstd, true);
		uint64_t n = bn.m * bn.chans;

		HPU_KEXPECT_NEAR(gi, want, 1e-5, 1e-5);
		HPU_KEXPECT_NEAR(gw, want + n, 1e-5, 1e-3);
		HPU_KEXPECT_NEAR(gb, want + n + ch, 1e-5, 1e-3);
		free(x);
		free(g);
		free(mean);
		free(invstd);
		free(want);
	}
	hpu_kt_free(ref_out);
	hpu_kt_free(ref_gi);
	hpu_kt_free(gi);
	hpu_kt_free(go);
	hpu_kt_free(gw);
	hpu_kt_free(gb);
	bn_free(&bn);
}

#define T234 { F32, 3, { 2, 3, 4 } }
#define C3 { F32, 1, { 3 } }

static const struct hpu_kreject_case reject_cases[] = {
	{ "batch_norm", &hdm_kernel_batch_norm, HPU_KERNEL_BATCH_NORM, { TRAIN | RUN | W | B },
	  { 1e-5, 0.1 }, 8, { T234, C3, C3, T234, C3, C3, C3, C3 },
	  HPU_KMUTS(HPU_KM_COUNT(7), HPU_KM_ARG(0, 16), HPU_KM_ARG(0, 0), HPU_KM_NDIM(3, 1),
		    HPU_KM_DTYPE(3, I32), HPU_KM_DTYPE(0, U8), HPU_KM_SHAPE(0, 2),
		    HPU_KM_DTYPE(1, BF16), HPU_KM_SHAPE(2, 0), HPU_KM_SHAPE(4, 0),
		    HPU_KM_DTYPE(5, I64), HPU_KM_SHAPE(6, 0), HPU_KM_NDIM(7, 2),
		    HPU_KM_ALIAS(1, 6), HPU_KM_ALIAS(2, 7), HPU_KM_ALIAS(6, 7), HPU_KM_ALIAS(1, 2),
		    HPU_KM_SCALAR(0, -1), HPU_KM_SCALAR(0, NAN), HPU_KM_SCALAR(1, INFINITY)) },
	{ "batch_norm: an empty batch in training", &hdm_kernel_batch_norm,
	  HPU_KERNEL_BATCH_NORM, { RUN }, { 1e-5, 0.1 }, 8,
	  { { F32, 3, { 0, 3, 4 } }, C3, C3, { F32, 3, { 0, 3, 4 } }, C3, C3, C3, C3 },
	  HPU_KMUTS(HPU_KM_ARG(0, TRAIN), HPU_KM_ARG(0, TRAIN | RUN)) },
	{ "batch_norm_bwd", &hdm_kernel_batch_norm_bwd, HPU_KERNEL_BATCH_NORM_BWD,
	  { BW_TRAIN | BW_WEIGHT | BW_GW | BW_GB }, { 1e-5 }, 8,
	  { T234, C3, C3, T234, T234, C3, C3, C3 },
	  HPU_KMUTS(HPU_KM_COUNT(9), HPU_KM_ARG(0, 32), HPU_KM_SHAPE(0, 1), HPU_KM_SHAPE(3, 2),
		    HPU_KM_DTYPE(1, I32), HPU_KM_SHAPE(2, 0), HPU_KM_DTYPE(5, U8),
		    HPU_KM_NDIM(6, 0), HPU_KM_SHAPE(7, 0), HPU_KM_ALIAS(1, 7), HPU_KM_ALIAS(2, 5),
		    HPU_KM_ALIAS(1, 2), HPU_KM_SCALAR(0, -1)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

/* 2^19 channels of one chunk fit the scratch's partials; one more does not. */
static void test_channel_bound(void)
{
	for (uint64_t c = 1u << 19; c <= (1u << 19) + 1; c++) {
		struct hpu_ktensor *x = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, c), NULL);
		struct hpu_ktensor *y = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, c), NULL);
		struct hpu_ktensor *m = hpu_kt_new(F32, 1, &c, NULL), *s = hpu_kt_new(F32, 1, &c, NULL);
		struct hpu_ktensor *none = hpu_kt_new(F32, 1, HPU_KT_DIMS(0), NULL);
		struct hdm_kcall k;

		HPU_KCALL(&k, HPU_KERNEL_BATCH_NORM, y, m, s, x, none, none, none, none);
		k.args[0] = TRAIN;
		HPU_KEXPECT((hpu_krun(&hdm_kernel_batch_norm, &k, HPU_KSPLIT_THREADS) == 0) ==
			    (c == 1u << 19));
		hpu_kt_free(x);
		hpu_kt_free(y);
		hpu_kt_free(m);
		hpu_kt_free(s);
		hpu_kt_free(none);
	}
}

static const struct hpu_ktest_case cases[] = {
	{ "batch_norm: train and eval, weight and bias, fp32 and bf16", test_forward },
	{ "batch_norm: running statistics over five steps", test_running_steps },
	{ "batch_norm: in place", test_in_place },
	{ "batch_norm_bwd: closed form and central differences, train and eval", test_backward },
	{ "batch_norm(_bwd): layouts give the same bytes; backward in place",
	  test_layouts_and_in_place },
	{ "batch_norm(_bwd): channels of three chunks, the same whatever the split", test_chunks },
	{ "batch_norm: channels within the scratch's bound", test_channel_bound },
	{ "every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
