/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the fused attention kernels (hdm_kernel_sdpa.c): forward
 * and backward against a naive reference in double (the full [L, S]
 * matrix, softmax, products) over odd shapes that span several key blocks
 * and query items, with and without causal masking, float and bool masks
 * broadcast over heads, valid lengths with right and left padding, dropout
 * (the draws are DROPOUT's Philox stream, and the backward regenerates the
 * forward's mask from rng_used), the probabilities and dropout mask
 * outputs, bf16 and fast softmax; the same bits whatever the split and the
 * layouts; every rejection, and a valid length out of range failing before
 * anything is written.  Prints TAP.
 *
 * Tolerances: fp32 kernels accumulate in fp32 over D and S, so outputs,
 * lse and gradients are within 1e-4 relative + 1e-4 absolute of the
 * reference (values are of order 1); bf16 outputs are rounded once, within
 * 2^-7 relative + 2^-7 absolute (the reference reads the same bf16 inputs,
 * and the backward's delta uses the stored out, as the kernel does).  lse
 * and the fp32 probabilities within 1e-5, 4e-4 with fast softmax (its exp's
 * error is under 2e-4).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_kernel_harness.h"
#include "hpu_philox.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define U8 HPU_DTYPE_U8
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64

enum { MASK_NONE, MASK_FLOAT, MASK_BOOL };

struct cfg {
	uint64_t B, H, L, S, D, Dv;
	uint32_t flags, dtype;
	int mask;
	double scale, p;
	int32_t vlen[3];
};

/* A launch's tensors: the forward's 11, then grad_out and the three gradients. */
struct att {
	struct cfg cf;
	struct hpu_ktensor *t[11], *dout, *dq, *dk, *dv;
};

static const uint64_t SEED = 0x1234567890abcdefull, OFFSET = 1000003;

static struct hpu_ktensor *absent(void)
{
	return hpu_kt_new(F32, 1, HPU_KT_DIMS(0), NULL);
}

static struct hpu_ktensor *t4(uint32_t dt, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return hpu_kt_new(dt, 4, HPU_KT_DIMS(a, b, c, d), NULL);
}

static void att_new(struct att *a, const struct cfg *cf)
{
	const struct cfg *c = &a->cf;

	memset(a, 0, sizeof(*a));
	a->cf = *cf;
	a->t[0] = t4(c->dtype, c->B, c->H, c->L, c->Dv);
	a->t[1] = hpu_kt_new(F32, 3, HPU_KT_DIMS(c->B, c->H, c->L), NULL);
	a->t[2] = t4(c->dtype, c->B, c->H, c->L, c->D);
	a->t[3] = t4(c->dtype, c->B, c->H, c->S, c->D);
	a->t[4] = t4(c->dtype, c->B, c->H, c->S, c->Dv);
	hpu_kt_fill_random(a->t[2], 1, -1, 1);
	hpu_kt_fill_random(a->t[3], 2, -1, 1);
	hpu_kt_fill_random(a->t[4], 3, -1, 1);
	if (c->mask != MASK_NONE) {
		/* Broadcast over heads: stride 0. */
		a->t[5] = hpu_kt_new(c->mask == MASK_BOOL ? U8 : c->dtype, 4,
				     HPU_KT_DIMS(c->B, c->H, c->L, c->S),
				     HPU_KT_STRIDES((int64_t)(c->L * c->S), 0, (int64_t)c->S, 1));
		if (c->mask == MASK_BOOL)
			for (uint64_t i = 0; i < hpu_kt_numel(a->t[5]); i++)
				hpu_kt_set(a->t[5], i, (i * 7919 % 5) != 0);
		else
			hpu_kt_fill_random(a->t[5], 4, -2, 1);
		a->cf.flags |= HPU_SDPA_MASK;
	} else {
		a->t[5] = absent();
	}
	if (c->flags & HPU_SDPA_VALID_LEN) {
		a->t[6] = hpu_kt_new(I32, 1, HPU_KT_DIMS(c->B), NULL);
		for (uint64_t b = 0; b < c->B; b++)
			hpu_kt_set(a->t[6], b, c->vlen[b]);
	} else {
		a->t[6] = absent();
	}
	if (c->p > 0) {
		a->t[7] = hpu_kt_new(I64, 1, HPU_KT_DIMS(2), NULL);
		a->t[8] = hpu_kt_new(I64, 1, HPU_KT_DIMS(2), NULL);
		hpu_kt_set(a->t[7], 0, (double)SEED);
		hpu_kt_set(a->t[7], 1, OFFSET);
		/* hpu_kt_set goes through double: SEED's low bits need the exact store. */
		memcpy(a->t[7]->v.base, &SEED, 8);
	} else {
		a->t[7] = absent();
		a->t[8] = absent();
	}
	a->t[9] = c->flags & HPU_SDPA_PROBS ? t4(F32, c->B, c->H, c->L, c->S) : absent();
	a->t[10] = c->flags & HPU_SDPA_DROP_MASK ? t4(U8, c->B, c->H, c->L, c->S) : absent();
	a->dout = t4(c->dtype, c->B, c->H, c->L, c->Dv);
	hpu_kt_fill_random(a->dout, 5, -1, 1);
	a->dq = t4(c->dtype, c->B, c->H, c->L, c->D);
	a->dk = t4(c->dtype, c->B, c->H, c->S, c->D);
	a->dv = t4(c->dtype, c->B, c->H, c->S, c->Dv);
}

static void att_free(struct att *a)
{
	for (int i = 0; i < 11; i++)
		hpu_kt_free(a->t[i]);
	hpu_kt_free(a->dout);
	hpu_kt_free(a->dq);
	hpu_kt_free(a->dk);
	hpu_kt_free(a->dv);
}

static struct hdm_kcall fwd_call(struct att *a)
{
	struct hdm_kcall c;

	hpu_kcall_init(&c, HPU_KERNEL_FUSED_SDPA, 11, a->t);
	c.args[0] = a->cf.flags;
	c.scalars[0] = a->cf.scale;
	c.scalars[1] = a->cf.p;
	return c;
}

static struct hdm_kcall bwd_call(struct att *a)
{
	struct hpu_ktensor *t[12] = { a->dq, a->dk, a->dv, a->dout, a->t[2], a->t[3], a->t[4],
				      a->t[0], a->t[1], a->t[5], a->t[6], a->t[8] };
	struct hdm_kcall c;

	hpu_kcall_init(&c, HPU_KERNEL_FUSED_SDPA_BWD, 12, t);
	c.args[0] = a->cf.flags & ~(uint32_t)(HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK);
	c.scalars[0] = a->cf.scale;
	c.scalars[1] = a->cf.p;
	return c;
}

/* ---- the reference, in double over the whole [L, S] matrix ---- */

struct ref {
	double *out, *lse, *probs, *keep, *dq, *dk, *dv;
};

/* Whether query i of batch b sees key j, as hpu_kernels.h states it. */
static bool ref_visible(const struct cfg *c, const double *mask, const double *vlen, uint64_t b,
			uint64_t h, uint64_t i, uint64_t j)
{
	if ((c->flags & HPU_SDPA_CAUSAL) && j > i)
		return false;
	if (c->flags & HPU_SDPA_VALID_LEN) {
		uint64_t n = (uint64_t)vlen[b];

		if (c->flags & HPU_SDPA_PAD_LEFT) {
			if (i + n < c->L || j + n < c->S)
				return false;
		} else if (i >= n || j >= n) {
			return false;
		}
	}
	if (c->mask == MASK_BOOL)
		return mask[((b * c->H + h) * c->L + i) * c->S + j] != 0;
	return true;
}

/*
 * Forward (out, lse, probs, keep) from the inputs as stored; with dout, the
 * backward from the stored out.
 */
static void reference(struct att *a, struct ref *r, bool bwd)
{
	const struct cfg *c = &a->cf;
	double *q = hpu_kt_values(a->t[2]), *k = hpu_kt_values(a->t[3]), *v = hpu_kt_values(a->t[4]);
	double *mask = c->mask ? hpu_kt_values(a->t[5]) : NULL;
	double *vlen = c->flags & HPU_SDPA_VALID_LEN ? hpu_kt_values(a->t[6]) : NULL;
	double *out = bwd ? hpu_kt_values(a->t[0]) : NULL, *dout = hpu_kt_values(a->dout);
	uint64_t BH = c->B * c->H, L = c->L, S = c->S, D = c->D, Dv = c->Dv;
	double *s = malloc(S * sizeof(double));

	r->out = calloc(BH * L * Dv, sizeof(double));
	r->lse = calloc(BH * L, sizeof(double));
	r->probs = calloc(BH * L * S + 1, sizeof(double));
	r->keep = calloc(BH * L * S + 1, sizeof(double));
	r->dq = calloc(BH * L * D, sizeof(double));
	r->dk = calloc(BH * S * D, sizeof(double));
	r->dv = calloc(BH * S * Dv, sizeof(double));
	for (uint64_t bh = 0; bh < BH; bh++) {
		for (uint64_t i = 0; i < L; i++) {
			const double *qi = q + (bh * L + i) * D, *go = dout + (bh * L + i) * Dv;
			double mx = -INFINITY, sum = 0, delta = 0, *pr = r->probs + (bh * L + i) * S;
			double *kp = r->keep + (bh * L + i) * S;

			for (uint64_t j = 0; j < S; j++) {
				uint64_t m = (bh * L + i) * S + j;
				double x = 0;

				for (uint64_t d = 0; d < D; d++)
					x += qi[d] * k[(bh * S + j) * D + d];
				x *= c->scale;
				if (c->mask == MASK_FLOAT)
					x += mask[m];
				s[j] = ref_visible(c, mask, vlen, bh / c->H, bh % c->H, i, j) ? x
												  : -INFINITY;
				mx = fmax(mx, s[j]);
				kp[j] = c->p > 0 && hpu_philox_uniform(SEED, OFFSET + m) < c->p
						? 0 : 1 / (1 - c->p);
			}
			r->lse[bh * L + i] = -INFINITY;
			if (mx == -INFINITY)
				continue;
			for (uint64_t j = 0; j < S; j++)
				sum += exp(s[j] - mx);
			r->lse[bh * L + i] = mx + log(sum);
			for (uint64_t j = 0; j < S; j++) {
				pr[j] = exp(s[j] - mx) / sum;
				for (uint64_t e = 0; e < Dv; e++)
					r->out[(bh * L + i) * Dv + e] +=
						pr[j] * kp[j] * v[(bh * S + j) * Dv + e];
			}
			if (!bwd)
				continue;
			for (uint64_t e = 0; e < Dv; e++)
				delta += go[e] * out[(bh * L + i) * Dv + e];
			for (uint64_t j = 0; j < S; j++) {
				double da = 0, ds;

				for (uint64_t e = 0; e < Dv; e++) {
					da += go[e] * v[(bh * S + j) * Dv + e];
					r->dv[(bh * S + j) * Dv + e] += pr[j] * kp[j] * go[e];
				}
				ds = pr[j] * (da * kp[j] - delta) * c->scale;
				for (uint64_t d = 0; d < D; d++) {
					r->dq[(bh * L + i) * D + d] += ds * k[(bh * S + j) * D + d];
					r->dk[(bh * S + j) * D + d] += ds * qi[d];
				}
			}
		}
	}
	free(s);
	free(q);
	free(k);
	free(v);
	free(mask);
	free(vlen);
	free(out);
	free(dout);
}

static void ref_free(struct ref *r)
{
	free(r->out);
	free(r->lse);
	free(r->probs);
	free(r->keep);
	free(r->dq);
	free(r->dk);
	free(r->dv);
}

static double tol(const struct cfg *c)
{
	return c->dtype == BF16 ? 1.0 / 128 : 1e-4;
}

/* Forward then backward of cf, each against the reference; the backward's bits split-free. */
static void check_both(const struct cfg *cf, int line)
{
	const struct hdm_kernel_def *fwd = &hdm_kernel_fused_sdpa;
	const struct hdm_kernel_def *bwd = &hdm_kernel_fused_sdpa_bwd;
	struct att a;
	struct ref r;
	struct hdm_kcall c;
	double t, tp;

	att_new(&a, cf);
	t = tol(&a.cf);
	tp = a.cf.flags & HPU_SDPA_FAST_SOFTMAX ? 4e-4 : 1e-5;
	c = fwd_call(&a);
	hpu_klaunch(fwd, &c, line);
	reference(&a, &r, true);
	HPU_KEXPECT(hpu_kexpect_near(a.t[0], r.out, t, t, "out", line));
	HPU_KEXPECT(hpu_kexpect_near(a.t[1], r.lse, tp, tp, "lse", line));
	if (a.cf.flags & HPU_SDPA_PROBS)
		HPU_KEXPECT(hpu_kexpect_near(a.t[9], r.probs, tp, tp / 10, "probs", line));
	if (a.cf.flags & HPU_SDPA_DROP_MASK)
		for (uint64_t m = 0; m < hpu_kt_numel(a.t[10]); m++)
			HPU_KEXPECT((hpu_kt_get(a.t[10], m) != 0) == (r.keep[m] != 0));
	if (a.cf.p > 0) {
		/* rng_used holds what the forward drew from; rng moved past it. */
		HPU_KEXPECT((uint64_t)hpu_kt_get_i(a.t[8], 0) == SEED);
		HPU_KEXPECT(hpu_kt_get_i(a.t[8], 1) == (int64_t)OFFSET);
		HPU_KEXPECT(hpu_kt_get_i(a.t[7], 1) ==
			    (int64_t)(OFFSET + a.cf.B * a.cf.H * a.cf.L * a.cf.S));
	}
	c = bwd_call(&a);
	HPU_KEXPECT(hpu_krun(bwd, &c, HPU_KSPLIT_ONE) == 0);
	HPU_KEXPECT(hpu_kexpect_near(a.dq, r.dq, t, t, "dq", line));
	HPU_KEXPECT(hpu_kexpect_near(a.dk, r.dk, t, t, "dk", line));
	HPU_KEXPECT(hpu_kexpect_near(a.dv, r.dv, t, t, "dv", line));
	{
		/* Another split on threads: the very same bits. */
		struct hpu_ktensor *dq = a.dq, *dk = a.dk, *dv = a.dv;

		a.dq = t4(a.cf.dtype, a.cf.B, a.cf.H, a.cf.L, a.cf.D);
		a.dk = t4(a.cf.dtype, a.cf.B, a.cf.H, a.cf.S, a.cf.D);
		a.dv = t4(a.cf.dtype, a.cf.B, a.cf.H, a.cf.S, a.cf.Dv);
		c = bwd_call(&a);
		HPU_KEXPECT(hpu_krun(bwd, &c, HPU_KSPLIT_THREADS) == 0);
		HPU_KEXPECT(hpu_kexpect_same(a.dq, dq, "dq split", line));
		HPU_KEXPECT(hpu_kexpect_same(a.dk, dk, "dk split", line));
		HPU_KEXPECT(hpu_kexpect_same(a.dv, dv, "dv split", line));
		hpu_kt_free(dq);
		hpu_kt_free(dk);
		hpu_kt_free(dv);
	}
	ref_free(&r);
	att_free(&a);
}

#define CHECK_BOTH(...) check_both(&(const struct cfg){ __VA_ARGS__ }, __LINE__)

static void test_plain(void)
{
	CHECK_BOTH(.B = 2, .H = 3, .L = 5, .S = 7, .D = 4, .Dv = 6, .dtype = F32, .scale = 0.5);
	/* Several key blocks and query items, D != Dv. */
	CHECK_BOTH(.B = 1, .H = 2, .L = 150, .S = 261, .D = 9, .Dv = 3, .dtype = F32, .scale = 0.3);
	CHECK_BOTH(.B = 1, .H = 1, .L = 1, .S = 1, .D = 1, .Dv = 1, .dtype = F32, .scale = 1);
}

static void test_causal(void)
{
	CHECK_BOTH(.B = 2, .H = 2, .L = 197, .S = 197, .D = 5, .Dv = 5, .dtype = F32,
		   .flags = HPU_SDPA_CAUSAL, .scale = 0.4);
	/* L != S: top left, as torch.tril(ones(L, S)); rows past S see every key. */
	CHECK_BOTH(.B = 1, .H = 2, .L = 9, .S = 170, .D = 3, .Dv = 4, .dtype = F32,
		   .flags = HPU_SDPA_CAUSAL, .scale = 0.4);
	CHECK_BOTH(.B = 1, .H = 2, .L = 180, .S = 6, .D = 3, .Dv = 4, .dtype = F32,
		   .flags = HPU_SDPA_CAUSAL, .scale = 0.4);
}

static void test_masks(void)
{
	CHECK_BOTH(.B = 2, .H = 3, .L = 11, .S = 177, .D = 4, .Dv = 5, .dtype = F32,
		   .mask = MASK_FLOAT, .scale = 0.5);
	/* Bool masks leave some rows with no key: out 0, lse -inf, no gradient. */
	CHECK_BOTH(.B = 2, .H = 3, .L = 11, .S = 3, .D = 4, .Dv = 5, .dtype = F32,
		   .mask = MASK_BOOL, .scale = 0.5);
	CHECK_BOTH(.B = 1, .H = 2, .L = 13, .S = 13, .D = 4, .Dv = 5, .dtype = F32,
		   .mask = MASK_FLOAT, .flags = HPU_SDPA_CAUSAL, .scale = 0.5);
}

static void test_valid_len(void)
{
	CHECK_BOTH(.B = 3, .H = 2, .L = 170, .S = 170, .D = 4, .Dv = 4, .dtype = F32,
		   .flags = HPU_SDPA_CAUSAL | HPU_SDPA_VALID_LEN, .vlen = { 150, 170, 0 }, .scale = 0.5);
	CHECK_BOTH(.B = 3, .H = 2, .L = 170, .S = 170, .D = 4, .Dv = 4, .dtype = F32,
		   .flags = HPU_SDPA_CAUSAL | HPU_SDPA_VALID_LEN | HPU_SDPA_PAD_LEFT,
		   .vlen = { 50, 170, 1 }, .scale = 0.5);
}

static void test_dropout(void)
{
	CHECK_BOTH(.B = 2, .H = 2, .L = 21, .S = 175, .D = 4, .Dv = 6, .dtype = F32, .p = 0.3,
		   .flags = HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK, .scale = 0.5);
	CHECK_BOTH(.B = 1, .H = 3, .L = 166, .S = 166, .D = 4, .Dv = 6, .dtype = F32, .p = 0.5,
		   .flags = HPU_SDPA_CAUSAL | HPU_SDPA_DROP_MASK, .scale = 0.5);
}

static void test_bf16(void)
{
	CHECK_BOTH(.B = 2, .H = 2, .L = 133, .S = 170, .D = 8, .Dv = 8, .dtype = BF16,
		   .flags = HPU_SDPA_CAUSAL, .scale = 0.35);
	CHECK_BOTH(.B = 2, .H = 2, .L = 33, .S = 70, .D = 8, .Dv = 8, .dtype = BF16,
		   .flags = HPU_SDPA_CAUSAL | HPU_SDPA_FAST_SOFTMAX | HPU_SDPA_PROBS, .scale = 0.35);
	CHECK_BOTH(.B = 1, .H = 2, .L = 17, .S = 19, .D = 8, .Dv = 8, .dtype = BF16,
		   .mask = MASK_FLOAT, .p = 0.2, .scale = 0.35);
}

/* Scattered, flipped layouts (the mask's broadcast included) give the same bits. */
static void test_layouts(void)
{
	const struct cfg cf = { .B = 2, .H = 2, .L = 139, .S = 170, .D = 5, .Dv = 3, .dtype = F32,
				.mask = MASK_FLOAT, .flags = HPU_SDPA_CAUSAL, .p = 0.25,
				.scale = 0.5 };
	struct att a;
	struct hdm_kcall c;

	att_new(&a, &cf);
	c = fwd_call(&a);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_fused_sdpa, &c);
	HPU_KLAUNCH(&hdm_kernel_fused_sdpa, &c);
	c = bwd_call(&a);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_fused_sdpa_bwd, &c);
	att_free(&a);
}

/* The work bound: a row of 513 keys of head dims 1024 is refused, 255 accepted. */
static void test_item_limit(void)
{
	for (uint64_t S = 255; S <= 513; S += 258) {
		const struct cfg cf = { .B = 1, .H = 1, .L = 2, .S = S, .D = 1024, .Dv = 1024,
					.dtype = BF16, .scale = 1 };
		const struct hdm_kernel_def *def = &hdm_kernel_fused_sdpa;
		uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };
		struct hdm_kstate st = { 0 };
		struct att a;
		struct hdm_kcall c;

		att_new(&a, &cf);
		c = fwd_call(&a);
		c.state = &st;
		HPU_KEXPECT((def->check(&c, items) == 0) == (S < 512));
		if (S < 512) {
			st.phase = 1;
			HPU_KEXPECT(def->item_work(&c) <= HPU_KERNEL_MAX_ITEM_WORK);
		}
		att_free(&a);
	}
}

#define ABSENT { F32, 1, { 0 } }
#define T4(dt, a, b, c, d) { dt, 4, { a, b, c, d } }

static void test_rejections(void)
{
	const struct hpu_kreject_case fwd = {
		.name = "fused_sdpa mask", .def = &hdm_kernel_fused_sdpa,
		.kernel = HPU_KERNEL_FUSED_SDPA, .args = { HPU_SDPA_MASK }, .scalars = { 0.5, 0 },
		.n = 11,
		.t = { T4(F32, 2, 3, 4, 5), { F32, 3, { 2, 3, 4 } }, T4(F32, 2, 3, 4, 6),
		       T4(F32, 2, 3, 7, 6), T4(F32, 2, 3, 7, 5), T4(F32, 2, 3, 4, 7), ABSENT, ABSENT,
		       ABSENT, ABSENT, ABSENT },
		HPU_KMUTS(HPU_KM_COUNT(10), HPU_KM_COUNT(12), HPU_KM_DTYPE(1, BF16),
			  HPU_KM_DTYPE(2, I32), HPU_KM_DTYPE(0, U8), HPU_KM_NDIM(2, 3),
			  HPU_KM_SHAPE(3, 2), HPU_KM_SHAPE(3, 3), HPU_KM_SHAPE(4, 2), HPU_KM_SHAPE(0, 3),
			  HPU_KM_SHAPE(1, 2), HPU_KM_SHAPE(5, 3), HPU_KM_SHAPE(5, 0), HPU_KM_SHAPE(4, 0),
			  HPU_KM_DTYPE(5, I32), HPU_KM_ARG(0, 1 << 7), HPU_KM_ARG(0, -1),
			  HPU_KM_ARG(0, HPU_SDPA_MASK | HPU_SDPA_CAUSAL | HPU_SDPA_VALID_LEN),
			  HPU_KM_ARG(0, HPU_SDPA_MASK | HPU_SDPA_PAD_LEFT),
			  HPU_KM_ARG(0, HPU_SDPA_MASK | HPU_SDPA_FAST_SOFTMAX),
			  HPU_KM_ARG(0, HPU_SDPA_MASK | HPU_SDPA_PROBS),
			  HPU_KM_ARG(0, HPU_SDPA_MASK | HPU_SDPA_DROP_MASK), HPU_KM_SCALAR(1, 1.0),
			  HPU_KM_SCALAR(1, -0.1), HPU_KM_SCALAR(1, 0.1), HPU_KM_SCALAR(0, INFINITY),
			  HPU_KM_ALIAS(0, 2), HPU_KM_ALIAS(1, 5), HPU_KM_ALIAS(0, 1)),
	};
	const struct hpu_kreject_case fwd_len = {
		.name = "fused_sdpa valid_len", .def = &hdm_kernel_fused_sdpa,
		.kernel = HPU_KERNEL_FUSED_SDPA,
		.args = { HPU_SDPA_CAUSAL | HPU_SDPA_VALID_LEN | HPU_SDPA_PAD_LEFT | HPU_SDPA_PROBS |
			  HPU_SDPA_DROP_MASK },
		.scalars = { 0.5, 0.1 }, .n = 11,
		.t = { T4(F32, 2, 3, 4, 5), { F32, 3, { 2, 3, 4 } }, T4(F32, 2, 3, 4, 6),
		       T4(F32, 2, 3, 4, 6), T4(F32, 2, 3, 4, 5), ABSENT, { I32, 1, { 2 } },
		       { I64, 1, { 2 } }, { I64, 1, { 2 } }, T4(F32, 2, 3, 4, 4), T4(U8, 2, 3, 4, 4) },
		HPU_KMUTS(HPU_KM_DTYPE(6, F32), HPU_KM_SHAPE(6, 0), HPU_KM_DTYPE(7, I32),
			  HPU_KM_SHAPE(8, 0), HPU_KM_SHAPE(9, 3), HPU_KM_DTYPE(10, F32),
			  HPU_KM_ARG(0, HPU_SDPA_VALID_LEN), HPU_KM_ALIAS(8, 7), HPU_KM_ALIAS(9, 3),
			  HPU_KM_VALUE(6, 5), HPU_KM_VALUE(6, -1)),
	};
	const struct hpu_kreject_case bwd = {
		.name = "fused_sdpa_bwd", .def = &hdm_kernel_fused_sdpa_bwd,
		.kernel = HPU_KERNEL_FUSED_SDPA_BWD, .args = { HPU_SDPA_MASK | HPU_SDPA_CAUSAL },
		.scalars = { 0.5, 0 }, .n = 12,
		.t = { T4(F32, 2, 3, 4, 6), T4(F32, 2, 3, 7, 6), T4(F32, 2, 3, 7, 5),
		       T4(F32, 2, 3, 4, 5), T4(F32, 2, 3, 4, 6), T4(F32, 2, 3, 7, 6),
		       T4(F32, 2, 3, 7, 5), T4(F32, 2, 3, 4, 5), { F32, 3, { 2, 3, 4 } },
		       T4(U8, 2, 3, 4, 7), ABSENT, ABSENT },
		HPU_KMUTS(HPU_KM_COUNT(11), HPU_KM_SHAPE(0, 3), HPU_KM_SHAPE(1, 2),
			  HPU_KM_DTYPE(2, I32), HPU_KM_SHAPE(3, 3), HPU_KM_SHAPE(7, 2),
			  HPU_KM_DTYPE(8, BF16), HPU_KM_ARG(0, HPU_SDPA_MASK | HPU_SDPA_PROBS),
			  HPU_KM_SCALAR(1, 0.5), HPU_KM_ALIAS(0, 4), HPU_KM_ALIAS(1, 0),
			  HPU_KM_ALIAS(2, 3)),
	};

	hpu_kexpect_rejections(&fwd);
	hpu_kexpect_rejections(&fwd_len);
	hpu_kexpect_rejections(&bwd);
}

int main(void)
{
	static const struct hpu_ktest_case cases[] = {
		{ "forward and backward, no mask", test_plain },
		{ "causal, L == S and L != S", test_causal },
		{ "float and bool masks broadcast over heads", test_masks },
		{ "valid lengths, right and left padding", test_valid_len },
		{ "dropout: Philox draws, mask returned and regenerated", test_dropout },
		{ "bf16 and fast softmax", test_bf16 },
		{ "layouts agree", test_layouts },
		{ "a row past the item work is refused", test_item_limit },
		{ "rejections", test_rejections },
	};

	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
