/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the neural-network kernels (softmax, NLL, cross
 * entropy, dropout, the activation backwards, layer norm, embedding) and of
 * Philox4x32-10: every forward against a naive reference in double over
 * contiguous, transposed, sliced and flipped layouts and bf16; every
 * backward against central differences of that reference; dropout's mask,
 * statistics, reproducibility and independence from the split; every
 * rejection.  Launches rotate through the harness's ways of splitting the
 * items (one range, uneven parts, threads).  Prints TAP.
 *
 * Tolerances: a result is computed in double from the stored inputs, so
 * the only error is its rounding: 1e-6 relative for fp32, 2^-8 for bf16
 * (8-bit significand), the same as absolute for values near 0.  Gradients:
 * central differences with step 1e-3 in double (truncation ~1e-6) against
 * fp32 kernels within 1e-4 relative + 1e-5 absolute; a backward fed bf16
 * operands within 2^-6 + 2^-7, its inputs being rounded already.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_kernel_harness.h"
#include "hpu_philox.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64
#define U8 HPU_DTYPE_U8

#define GRAD_EPS 1e-3
#define GRAD_RTOL 1e-4
#define GRAD_ATOL 1e-5
#define GRAD_RTOL_BF16 (1.0 / 64)
#define GRAD_ATOL_BF16 (1.0 / 128)

/* ---- tensors and launches ---- */

enum layout { CONTIG, TRANSPOSED, SLICED, FLIPPED, LAYOUTS };

/*
 * A tensor in a layout (taken modulo LAYOUTS): row-major; column-major;
 * every other element of rows padded by one; row-major with the last dim
 * reversed.
 */
static struct hpu_ktensor *tensor(uint32_t dtype, uint32_t ndim, const uint64_t *shape,
				  unsigned int layout)
{
	int64_t st[HPU_TENSOR_MAX_DIMS], step = 1;
	uint32_t d;

	switch (ndim ? layout % LAYOUTS : CONTIG) {
	case CONTIG:
		return hpu_kt_new(dtype, ndim, shape, NULL);
	case TRANSPOSED:
		for (d = 0; d < ndim; step *= (int64_t)shape[d++])
			st[d] = step;
		break;
	case SLICED:
		for (d = ndim; d-- > 0; step = st[d] * (int64_t)shape[d])
			st[d] = d == ndim - 1 ? 2 : step + 1;
		break;
	default:
		for (d = ndim; d-- > 0; step *= (int64_t)shape[d])
			st[d] = step;
		st[ndim - 1] = -1;
		break;
	}
	return hpu_kt_new(dtype, ndim, shape, st);
}

static struct hpu_ktensor *random_tensor(uint32_t dtype, uint32_t ndim, const uint64_t *shape,
					 unsigned int layout, double lo, double hi)
{
	static uint64_t seed;
	struct hpu_ktensor *t = tensor(dtype, ndim, shape, layout);

	hpu_kt_fill_random(t, ++seed, lo, hi);
	return t;
}

/* Exact 64-bit stores (hpu_kt_set goes through double). */
static void kt_set_i(struct hpu_ktensor *t, uint64_t i, int64_t v)
{
	hdm_kstore_i(t->v.dtype, hdm_kview_at(&t->v, i), v);
}

static int64_t *kt_values_i(const struct hpu_ktensor *t)
{
	uint64_t n = hpu_kt_numel(t);
	int64_t *v = malloc((n ? n : 1) * sizeof(*v));

	for (uint64_t i = 0; i < n; i++)
		v[i] = hpu_kt_get_i(t, i);
	return v;
}

static void free_tensors(struct hpu_ktensor **t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hpu_kt_free(t[i]);
}

static bool is_bf16(const struct hpu_ktensor *t)
{
	return t->v.dtype == BF16;
}

/* Gradient check of grad against f's differences in x, at the tolerance grad's dtype allows. */
static void gradcheck(struct hpu_ktensor *x, double (*f)(void *ctx), void *ctx,
		      const struct hpu_ktensor *grad, bool bf16_inputs, const char *what, int line)
{
	bool bf16 = bf16_inputs || is_bf16(grad);

	hpu_kgradcheck(x, f, ctx, grad, GRAD_EPS, bf16 ? GRAD_RTOL_BF16 : GRAD_RTOL,
		       bf16 ? GRAD_ATOL_BF16 : GRAD_ATOL, what, line);
}
#define GRADCHECK(x, f, ctx, grad, bf16) gradcheck(x, f, ctx, grad, bf16, #grad, __LINE__)

/* sum(w[i] * y[i]): the scalar whose gradient a backward computes for grad_out = w. */
static double dot(const double *w, const double *y, uint64_t n)
{
	double s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += w[i] * y[i];
	return s;
}

/* ---- Philox ---- */

/* Random123's known answers for philox4x32_R(10, ...). */
static void test_philox_known_answers(void)
{
	static const struct {
		uint32_t ctr[4], key[2], want[4];
	} kat[] = {
		{ { 0, 0, 0, 0 }, { 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
		{ { ~0u, ~0u, ~0u, ~0u }, { ~0u, ~0u },
		  { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
		{ { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
		  { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
	};

	for (size_t i = 0; i < HPU_ARRAY_SIZE(kat); i++) {
		uint32_t out[4];

		hpu_philox4x32(kat[i].ctr, kat[i].key, out);
		HPU_KEXPECT(!memcmp(out, kat[i].want, sizeof(out)));
	}
}

/*
 * Position m's draw: word m % 4 of the block for counter (lo, hi, 0, 0) of
 * m / 4 and key (lo, hi) of the seed, its top 24 bits.
 */
static double ref_uniform(uint64_t seed, uint64_t m)
{
	const uint32_t ctr[4] = { (uint32_t)(m / 4), (uint32_t)(m / 4 >> 32), 0, 0 };
	const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
	uint32_t out[4];

	hpu_philox4x32(ctr, key, out);
	return ldexp(out[m % 4] >> 8, -24);
}

/*
 * Draws in lanes of every count of blocks up to HPU_PHILOX_LANES, each
 * against its own block, and single draws, around the 2^32 block boundary.
 */
static void test_philox_uniform(void)
{
	static const uint64_t seeds[] = { 0, 1, 0x0123456789abcdefull, ~0ull };
	double lo = 1, hi = 0;

	for (size_t s = 0; s < HPU_ARRAY_SIZE(seeds); s++) {
		for (uint64_t b = 0xfffffff0ull; b < 0x100000010ull; b++) {
			unsigned int count = 1 + b % HPU_PHILOX_LANES;
			float u[HPU_PHILOX_LANES * HPU_PHILOX_WORDS];

			hpu_philox_uniforms(seeds[s], b, count, u);
			for (unsigned int k = 0; k < count * HPU_PHILOX_WORDS; k++) {
				HPU_KEXPECT(u[k] == ref_uniform(seeds[s], 4 * b + k));
				lo = fmin(lo, u[k]);
				hi = fmax(hi, u[k]);
			}
			HPU_KEXPECT(hpu_philox_uniform(seeds[s], 4 * b + b % 4) == u[b % 4]);
		}
	}
	HPU_KEXPECT(lo >= 0 && hi < 1 && hi - lo > 0.9);
}

/* ---- softmax ---- */

struct shape {
	uint32_t ndim;
	uint64_t d[3];
};

static const struct shape softmax_shapes[] = {
	{ 2, { 5, 7 } }, { 3, { 3, 4, 6 } }, { 1, { 9 } }, { 0, { 0 } }, { 2, { 4, 1 } },
};

/* Element (o, j, q) of a tensor seen as [outer, n, inner] around dim is (o * n + j) * inner + q. */
struct around {
	uint64_t outer, n, inner;
};

static struct around around_dim(const struct shape *s, uint32_t dim)
{
	struct around a = { 1, s->ndim ? s->d[dim] : 1, 1 };

	for (uint32_t d = 0; d < s->ndim; d++) {
		if (d < dim)
			a.outer *= s->d[d];
		else if (d > dim)
			a.inner *= s->d[d];
	}
	return a;
}

static void ref_softmax(const double *x, double *y, struct around a, bool log_variant)
{
	for (uint64_t o = 0; o < a.outer; o++) {
		for (uint64_t q = 0; q < a.inner; q++) {
			const double *xr = x + o * a.n * a.inner + q;
			double *yr = y + o * a.n * a.inner + q, m = -INFINITY, s = 0;
			uint64_t j;

			for (j = 0; j < a.n; j++)
				m = fmax(m, xr[j * a.inner]);
			for (j = 0; j < a.n; j++)
				s += exp(xr[j * a.inner] - m);
			for (j = 0; j < a.n; j++)
				yr[j * a.inner] = log_variant ? xr[j * a.inner] - m - log(s) :
								exp(xr[j * a.inner] - m) / s;
		}
	}
}

static uint32_t dims_of(const struct shape *s)
{
	return s->ndim ? s->ndim : 1;
}

/* (in dtype, out dtype) pairs the float kernels are run with. */
static const uint32_t dtype_pairs[][2] = {
	{ F32, F32 }, { BF16, F32 }, { F32, BF16 }, { BF16, BF16 },
};

static void softmax_forward_case(const struct shape *s, uint32_t dim, bool log_variant,
				 const uint32_t *dtypes, unsigned int layout, double shift)
{
	struct hpu_ktensor *in = random_tensor(dtypes[0], s->ndim, s->d, layout, shift - 4,
					       shift + 4);
	struct hpu_ktensor *out = tensor(dtypes[1], s->ndim, s->d, layout + 1);
	double *x = hpu_kt_values(in), *want = malloc(hpu_kt_numel(in) * sizeof(*want) + 1);
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_SOFTMAX, out, in);
	c.args[0] = dim;
	c.args[1] = log_variant;
	HPU_KLAUNCH(&hdm_kernel_softmax, &c);
	ref_softmax(x, want, around_dim(s, dim), log_variant);
	HPU_KEXPECT_NEAR_DT(out, want);
	free(x);
	free(want);
	hpu_kt_free(in);
	hpu_kt_free(out);
}

static void test_softmax_forward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(softmax_shapes); i++)
		for (uint32_t dim = 0; dim < dims_of(&softmax_shapes[i]); dim++)
			for (int log_variant = 0; log_variant < 2; log_variant++)
				for (size_t p = 0; p < HPU_ARRAY_SIZE(dtype_pairs); p++, turn++)
					softmax_forward_case(&softmax_shapes[i], dim, log_variant,
							     dtype_pairs[p], turn, 0);
}

/* Logits near 1000 overflow exp() unless the row's max is taken off first. */
static void test_softmax_large_logits(void)
{
	for (int log_variant = 0; log_variant < 2; log_variant++)
		softmax_forward_case(&softmax_shapes[1], 2, log_variant, dtype_pairs[0],
				     log_variant, 1000);
}

struct softmax_ctx {
	struct hpu_ktensor *x;
	const double *w;
	struct around a;
	bool log_variant;
};

static double softmax_f(void *p)
{
	struct softmax_ctx *ctx = p;
	uint64_t n = hpu_kt_numel(ctx->x);
	double *x = hpu_kt_values(ctx->x), *y = malloc(n * sizeof(*y)), s;

	ref_softmax(x, y, ctx->a, ctx->log_variant);
	s = dot(ctx->w, y, n);
	free(x);
	free(y);
	return s;
}

/* softmax_bwd fed the forward kernel's output, against differences of the reference. */
static void softmax_grad_case(const struct shape *s, uint32_t dim, bool log_variant, uint32_t dtype,
			      unsigned int layout)
{
	struct hpu_ktensor *t[] = {
		random_tensor(F32, s->ndim, s->d, layout, -2, 2),        /* x */
		tensor(dtype, s->ndim, s->d, layout + 1),                /* y */
		random_tensor(dtype, s->ndim, s->d, layout + 2, -1, 1), /* grad_out */
		tensor(dtype, s->ndim, s->d, layout + 3),                /* grad_in */
	};
	double *w = hpu_kt_values(t[2]);
	struct softmax_ctx ctx = { t[0], w, around_dim(s, dim), log_variant };
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_SOFTMAX, t[1], t[0]);
	c.args[0] = dim;
	c.args[1] = log_variant;
	HPU_KLAUNCH(&hdm_kernel_softmax, &c);
	HPU_KCALL(&c, HPU_KERNEL_SOFTMAX_BWD, t[3], t[2], t[1]);
	c.args[0] = dim;
	c.args[1] = log_variant;
	HPU_KLAUNCH(&hdm_kernel_softmax_bwd, &c);
	GRADCHECK(t[0], softmax_f, &ctx, t[3], dtype == BF16);
	free(w);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

static void test_softmax_backward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(softmax_shapes); i++)
		for (uint32_t dim = 0; dim < dims_of(&softmax_shapes[i]); dim++)
			for (int log_variant = 0; log_variant < 2; log_variant++, turn++)
				softmax_grad_case(&softmax_shapes[i], dim, log_variant,
						  turn % 5 == 4 ? BF16 : F32, turn);
}

/* ---- NLL and cross entropy ---- */

#define LOSS_N 7
#define LOSS_C 5

static double ref_row_loss(bool ce, const double *row, uint64_t classes, int64_t t)
{
	double m = -INFINITY, s = 0;

	if (!ce)
		return -row[t];
	for (uint64_t j = 0; j < classes; j++)
		m = fmax(m, row[j]);
	for (uint64_t j = 0; j < classes; j++)
		s += exp(row[j] - m);
	return m + log(s) - row[t];
}

/* loss[N] for NONE, loss[0] otherwise. */
static void ref_loss(bool ce, const double *x, const int64_t *target, uint64_t n, uint64_t classes,
		     int64_t reduction, int64_t ignore, double *loss)
{
	double sum = 0;
	uint64_t counted = 0;

	for (uint64_t i = 0; i < n; i++) {
		bool counted_row = target[i] != ignore;
		double l = counted_row ? ref_row_loss(ce, x + i * classes, classes, target[i]) : 0;

		if (reduction == HPU_REDUCTION_NONE)
			loss[i] = l;
		sum += l;
		counted += target[i] != ignore;
	}
	if (reduction != HPU_REDUCTION_NONE)
		loss[0] = reduction == HPU_REDUCTION_SUM ? sum : sum / (double)counted;
}

/* A launch's operands: x [N, C], target [N] (some ignored), and loss or grad_loss. */
struct loss_case {
	bool ce;
	int64_t reduction, ignore;
	struct hpu_ktensor *x, *target, *loss;
	int64_t *t;
	double *xv;
};

static const int64_t reductions[] = { HPU_REDUCTION_NONE, HPU_REDUCTION_MEAN, HPU_REDUCTION_SUM };

static void loss_case_new(struct loss_case *lc, bool ce, int64_t reduction, int64_t ignore,
			  uint32_t x_dtype, uint32_t loss_dtype, unsigned int layout)
{
	const uint64_t n = LOSS_N;

	lc->ce = ce;
	lc->reduction = reduction;
	lc->ignore = ignore;
	/* NLL wants log-probabilities: negative numbers. */
	lc->x = random_tensor(x_dtype, 2, HPU_KT_DIMS(LOSS_N, LOSS_C), layout, ce ? -3 : -5,
			      ce ? 3 : 0);
	lc->target = random_tensor(layout % 2 ? I32 : I64, 1, &n, layout % 2 ? FLIPPED : CONTIG, 0,
				   LOSS_C);
	kt_set_i(lc->target, 1, ignore);
	kt_set_i(lc->target, 4, ignore);
	lc->loss = random_tensor(loss_dtype, reduction == HPU_REDUCTION_NONE, &n, layout + 1, 0.5,
				 1.5);
	lc->t = kt_values_i(lc->target);
	lc->xv = hpu_kt_values(lc->x);
}

static void loss_case_free(struct loss_case *lc)
{
	free(lc->t);
	free(lc->xv);
	hpu_kt_free(lc->x);
	hpu_kt_free(lc->target);
	hpu_kt_free(lc->loss);
}

static void loss_forward(struct loss_case *lc)
{
	struct hdm_kcall c;

	HPU_KCALL(&c, lc->ce ? HPU_KERNEL_CROSS_ENTROPY : HPU_KERNEL_NLL_LOSS, lc->loss, lc->x,
		  lc->target);
	c.args[0] = lc->reduction;
	c.args[1] = lc->ignore;
	HPU_KLAUNCH(lc->ce ? &hdm_kernel_cross_entropy : &hdm_kernel_nll_loss, &c);
}

/* ignore_index -100 (no class) and 2 (a class, also drawn at random). */
static const int64_t ignores[] = { -100, 2 };

static void test_loss_forward(void)
{
	unsigned int turn = 0;

	for (int ce = 0; ce < 2; ce++)
		for (size_t r = 0; r < HPU_ARRAY_SIZE(reductions); r++)
			for (size_t g = 0; g < HPU_ARRAY_SIZE(ignores); g++)
				for (size_t p = 0; p < HPU_ARRAY_SIZE(dtype_pairs); p++, turn++) {
					struct loss_case lc;
					double want[LOSS_N];

					loss_case_new(&lc, ce, reductions[r], ignores[g],
						      dtype_pairs[p][0], dtype_pairs[p][1], turn);
					loss_forward(&lc);
					ref_loss(ce, lc.xv, lc.t, LOSS_N, LOSS_C, reductions[r],
						 ignores[g], want);
					HPU_KEXPECT_NEAR_DT(lc.loss, want);
					loss_case_free(&lc);
				}
}

struct loss_ctx {
	struct loss_case *lc;
	const double *grad_loss;
};

static double loss_f(void *p)
{
	struct loss_ctx *ctx = p;
	struct loss_case *lc = ctx->lc;
	double *x = hpu_kt_values(lc->x), loss[LOSS_N], s;

	ref_loss(lc->ce, x, lc->t, LOSS_N, LOSS_C, lc->reduction, lc->ignore, loss);
	s = dot(ctx->grad_loss, loss, lc->reduction == HPU_REDUCTION_NONE ? LOSS_N : 1);
	free(x);
	return s;
}

/* The backward's t: grad_x, grad_loss, (logits,) target. */
static void loss_backward(struct loss_case *lc, struct hpu_ktensor *grad)
{
	struct hdm_kcall c;

	if (lc->ce)
		HPU_KCALL(&c, HPU_KERNEL_CROSS_ENTROPY_BWD, grad, lc->loss, lc->x, lc->target);
	else
		HPU_KCALL(&c, HPU_KERNEL_NLL_LOSS_BWD, grad, lc->loss, lc->target);
	c.args[0] = lc->reduction;
	c.args[1] = lc->ignore;
	HPU_KLAUNCH(lc->ce ? &hdm_kernel_cross_entropy_bwd : &hdm_kernel_nll_loss_bwd, &c);
}

static void test_loss_backward(void)
{
	unsigned int turn = 0;

	for (int ce = 0; ce < 2; ce++)
		for (size_t r = 0; r < HPU_ARRAY_SIZE(reductions); r++)
			for (size_t g = 0; g < HPU_ARRAY_SIZE(ignores); g++, turn++) {
				uint32_t dtype = turn % 4 == 3 ? BF16 : F32;
				struct hpu_ktensor *grad =
					tensor(dtype, 2, HPU_KT_DIMS(LOSS_N, LOSS_C), turn + 2);
				struct loss_case lc;
				struct loss_ctx ctx = { &lc, NULL };

				loss_case_new(&lc, ce, reductions[r], ignores[g], F32, dtype, turn);
				ctx.grad_loss = hpu_kt_values(lc.loss);
				loss_backward(&lc, grad);
				GRADCHECK(lc.x, loss_f, &ctx, grad, dtype == BF16);
				free((void *)ctx.grad_loss);
				loss_case_free(&lc);
				hpu_kt_free(grad);
			}
}

/* No target counted: MEAN is NaN (0 / 0, as torch), SUM 0, every gradient 0. */
static void test_loss_all_ignored(void)
{
	for (int ce = 0; ce < 2; ce++)
		for (size_t r = 1; r < HPU_ARRAY_SIZE(reductions); r++) {
			struct hpu_ktensor *grad = tensor(F32, 2, HPU_KT_DIMS(LOSS_N, LOSS_C), 0);
			double zeros[LOSS_N * LOSS_C] = { 0 };
			struct loss_case lc;

			loss_case_new(&lc, ce, reductions[r], -1, F32, F32, r);
			for (uint64_t i = 0; i < LOSS_N; i++)
				kt_set_i(lc.target, i, -1);
			loss_forward(&lc);
			if (reductions[r] == HPU_REDUCTION_MEAN)
				HPU_KEXPECT(isnan(hpu_kt_get(lc.loss, 0)));
			else
				HPU_KEXPECT(hpu_kt_get(lc.loss, 0) == 0);
			hpu_kt_set(lc.loss, 0, 1);
			loss_backward(&lc, grad);
			HPU_KEXPECT_NEAR_DT(grad, zeros);
			loss_case_free(&lc);
			hpu_kt_free(grad);
		}
}

/* ---- dropout ---- */

struct dropout {
	struct hpu_ktensor *out, *mask, *in, *rng;
	struct hdm_kcall c;
};

static void dropout_new(struct dropout *d, uint32_t ndim, const uint64_t *shape,
			unsigned int layout, uint64_t seed, uint64_t offset, double p)
{
	d->out = tensor(F32, ndim, shape, layout);
	d->mask = tensor(U8, ndim, shape, layout + 1);
	d->in = random_tensor(F32, ndim, shape, layout + 2, -2, 2);
	d->rng = tensor(I64, 1, HPU_KT_DIMS(2), layout % 2 ? FLIPPED : CONTIG);
	kt_set_i(d->rng, 0, (int64_t)seed);
	kt_set_i(d->rng, 1, (int64_t)offset);
	HPU_KCALL(&d->c, HPU_KERNEL_DROPOUT, d->out, d->mask, d->in, d->rng);
	d->c.scalars[0] = p;
}

static void dropout_free(struct dropout *d)
{
	hpu_kt_free(d->out);
	hpu_kt_free(d->mask);
	hpu_kt_free(d->in);
	hpu_kt_free(d->rng);
}

static uint64_t kept_count(const struct hpu_ktensor *mask)
{
	uint64_t n = hpu_kt_numel(mask), kept = 0;

	for (uint64_t i = 0; i < n; i++)
		kept += hpu_kt_get_i(mask, i) != 0;
	return kept;
}

/*
 * The mask is the reference draw's, the kept values scaled, the offset
 * advanced; the counters cross 2^32.
 */
static void test_dropout_mask(void)
{
	/* Unaligned to a block, its blocks crossing 2^32 (the counter's high word). */
	const uint64_t seed = 0x0123456789abcdefull, offset = 0x3ffffff7full, n = 4 * 60;
	const double p = 0.3;

	for (unsigned int layout = 0; layout < LAYOUTS; layout++) {
		struct dropout d;
		double *x, want[4 * 60];
		bool mask_ok = true;

		dropout_new(&d, 2, HPU_KT_DIMS(4, 60), layout, seed, offset, p);
		x = hpu_kt_values(d.in);
		HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
		for (uint64_t k = 0; k < n; k++) {
			bool kept = ref_uniform(seed, offset + k) >= p;

			mask_ok &= hpu_kt_get_i(d.mask, k) == kept;
			want[k] = kept ? x[k] / (1 - p) : 0;
		}
		HPU_KEXPECT(mask_ok);
		HPU_KEXPECT_NEAR_DT(d.out, want);
		HPU_KEXPECT(hpu_kt_get_i(d.rng, 0) == (int64_t)seed);
		HPU_KEXPECT(hpu_kt_get_i(d.rng, 1) == (int64_t)(offset + n));
		free(x);
		dropout_free(&d);
	}
}

/* At the threshold: p equal to a draw keeps it, the next double above drops it. */
static void test_dropout_threshold(void)
{
	const uint64_t seed = 7, offset = 5, n = 64;

	for (unsigned int above = 0; above < 2; above++) {
		double draw = ref_uniform(seed, offset + 9);
		double p = above ? nextafter(draw, 2) : draw;
		bool mask_ok = true;
		struct dropout d;

		dropout_new(&d, 1, &n, CONTIG, seed, offset, p);
		HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
		HPU_KEXPECT(hpu_kt_get_i(d.mask, 9) == !above);
		for (uint64_t k = 0; k < n; k++)
			mask_ok &= hpu_kt_get_i(d.mask, k) == (ref_uniform(seed, offset + k) >= p);
		HPU_KEXPECT(mask_ok);
		dropout_free(&d);
	}
}

/* 5 sigma of the binomial: a false failure once in ~3 million seeds. */
static void test_dropout_statistics(void)
{
	static const double ps[] = { 0.1, 0.5, 0.9 };
	const uint64_t n = 1 << 16;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(ps); i++) {
		struct dropout d;
		double kept;

		dropout_new(&d, 1, &n, CONTIG, 42 + i, 0, ps[i]);
		HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
		kept = (double)kept_count(d.mask) / (double)n;
		HPU_KEXPECT(fabs(kept - (1 - ps[i])) <= 5 * sqrt(ps[i] * (1 - ps[i]) / (double)n));
		dropout_free(&d);
	}
}

/* Consecutive launches draw fresh masks; the same (seed, offset) draws the same one again. */
static void test_dropout_reproducible(void)
{
	const uint64_t shape[] = { 8, 32 };
	struct dropout d;
	struct hpu_ktensor *first = tensor(U8, 2, shape, CONTIG);
	struct hpu_ktensor *first_out = tensor(F32, 2, shape, CONTIG);
	uint64_t differ = 0;

	dropout_new(&d, 2, shape, TRANSPOSED, 7, 1000, 0.5);
	HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
	for (uint64_t i = 0; i < 8 * 32; i++) {
		hpu_kt_set(first, i, hpu_kt_get(d.mask, i));
		hpu_kt_set(first_out, i, hpu_kt_get(d.out, i));
	}
	HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
	HPU_KEXPECT(hpu_kt_get_i(d.rng, 1) == 1000 + 2 * 8 * 32);
	for (uint64_t i = 0; i < 8 * 32; i++)
		differ += hpu_kt_get_i(d.mask, i) != hpu_kt_get_i(first, i);
	HPU_KEXPECT(differ > 8 * 32 / 4);
	kt_set_i(d.rng, 1, 1000);
	HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
	HPU_KEXPECT_SAME(d.mask, first);
	HPU_KEXPECT_SAME(d.out, first_out);
	hpu_kt_free(first);
	hpu_kt_free(first_out);
	dropout_free(&d);
}

/* One range, uneven parts and threads write the same bytes. */
static void test_dropout_split(void)
{
	const uint64_t shape[] = { 3, 5, 67 };
	struct dropout d[HPU_KSPLIT_COUNT];
	double *x = NULL;

	for (int s = 0; s < HPU_KSPLIT_COUNT; s++) {
		dropout_new(&d[s], 3, shape, SLICED, 99, 5, 0.4);
		if (!x)
			x = hpu_kt_values(d[s].in);
		hpu_kt_fill(d[s].in, x);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_dropout, &d[s].c, (enum hpu_ksplit)s) == 0);
	}
	free(x);
	for (int s = 1; s < HPU_KSPLIT_COUNT; s++) {
		HPU_KEXPECT_SAME(d[s].mask, d[0].mask);
		HPU_KEXPECT_SAME(d[s].out, d[0].out);
	}
	for (int s = 0; s < HPU_KSPLIT_COUNT; s++)
		dropout_free(&d[s]);
}

/* p = 0 keeps every element as it is; p = 1 drops every one (no division by 0). */
static void test_dropout_extremes(void)
{
	const uint64_t n = 500;

	for (int drop_all = 0; drop_all < 2; drop_all++) {
		struct dropout d;
		double *want;

		dropout_new(&d, 1, &n, FLIPPED, 3, 0, drop_all);
		want = hpu_kt_values(d.in);
		for (uint64_t i = 0; drop_all && i < n; i++)
			want[i] = 0;
		HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
		HPU_KEXPECT(kept_count(d.mask) == (drop_all ? 0 : n));
		HPU_KEXPECT_NEAR_DT(d.out, want);
		free(want);
		dropout_free(&d);
	}
}

/* ---- elementwise backwards: dropout, relu, gelu ---- */

struct elt_ctx {
	struct hpu_ktensor *x;
	const double *w;
	double (*fn)(const struct elt_ctx *ctx, uint64_t i, double x);
	const double *mask;
	double p;
	bool tanh_form;
};

static double elt_f(void *p)
{
	struct elt_ctx *ctx = p;
	uint64_t n = hpu_kt_numel(ctx->x);
	double s = 0;

	for (uint64_t i = 0; i < n; i++)
		s += ctx->w[i] * ctx->fn(ctx, i, hpu_kt_get(ctx->x, i));
	return s;
}

static double ref_dropout(const struct elt_ctx *ctx, uint64_t i, double x)
{
	return ctx->mask[i] ? x / (1 - ctx->p) : 0;
}

static double ref_relu(const struct elt_ctx *ctx, uint64_t i, double x)
{
	(void)ctx;
	(void)i;
	return x > 0 ? x : 0;
}

static double ref_gelu(const struct elt_ctx *ctx, uint64_t i, double x)
{
	(void)i;
	if (ctx->tanh_form)
		return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
	return 0.5 * x * (1 + erf(x / sqrt(2)));
}

/*
 * One backward t: grad_in, grad_out, third (the input, or the mask) and
 * its gradient check in x; x's values stay clear of relu's kink.
 */
static void elt_grad_case(const struct hdm_kernel_def *def, uint32_t kernel, struct elt_ctx *ctx,
			  struct hpu_ktensor *third, int64_t a0, double s0, uint32_t dtype,
			  unsigned int layout)
{
	const uint64_t *shape = HPU_KT_DIMS(3, 4, 5);
	struct hpu_ktensor *gi = tensor(dtype, 3, shape, layout);
	struct hpu_ktensor *go = random_tensor(dtype, 3, shape, layout + 1, -1, 1);
	double *w = hpu_kt_values(go);
	struct hdm_kcall c;

	ctx->w = w;
	HPU_KCALL(&c, kernel, gi, go, third);
	c.args[0] = a0;
	c.scalars[0] = s0;
	HPU_KLAUNCH(def, &c);
	GRADCHECK(ctx->x, elt_f, ctx, gi, dtype == BF16 || third->v.dtype == BF16);
	free(w);
	hpu_kt_free(gi);
	hpu_kt_free(go);
}

/*
 * The input in dtype, and an fp32 copy for the differences (a bf16 input
 * cannot take a small step); values clear of relu's kink.
 */
static struct hpu_ktensor *activation_input(uint32_t dtype, unsigned int layout,
					    struct hpu_ktensor **x32)
{
	struct hpu_ktensor *x = random_tensor(dtype, 3, HPU_KT_DIMS(3, 4, 5), layout, -3, 3);

	*x32 = tensor(F32, 3, HPU_KT_DIMS(3, 4, 5), layout + 1);
	for (uint64_t i = 0; i < 60; i++) {
		if (fabs(hpu_kt_get(x, i)) < 0.01)
			hpu_kt_set(x, i, 0.5);
		hpu_kt_set(*x32, i, hpu_kt_get(x, i));
	}
	return x;
}

static void test_relu_gelu_backward(void)
{
	for (unsigned int turn = 0; turn < 2 * LAYOUTS; turn++) {
		uint32_t dtype = turn >= LAYOUTS ? BF16 : F32;
		struct hpu_ktensor *x32, *x = activation_input(dtype, turn, &x32);
		struct elt_ctx ctx = { .x = x32, .fn = ref_relu };

		elt_grad_case(&hdm_kernel_relu_bwd, HPU_KERNEL_RELU_BWD, &ctx, x, 0, 0, dtype,
			      turn);
		ctx.fn = ref_gelu;
		for (int tanh_form = 0; tanh_form < 2; tanh_form++) {
			ctx.tanh_form = tanh_form;
			elt_grad_case(&hdm_kernel_gelu_bwd, HPU_KERNEL_GELU_BWD, &ctx, x,
				      tanh_form, 0, dtype, turn + 1);
		}
		hpu_kt_free(x);
		hpu_kt_free(x32);
	}
}

/* relu's gradient at 0 is 0 (in > 0, strictly). */
static void test_relu_backward_at_zero(void)
{
	struct hpu_ktensor *t[] = {
		tensor(F32, 1, HPU_KT_DIMS(3), 0),
		tensor(F32, 1, HPU_KT_DIMS(3), 0),
		tensor(F32, 1, HPU_KT_DIMS(3), 0),
	};
	static const double g[] = { 1, 2, 3 }, x[] = { -1, 0, 1 }, want[] = { 0, 0, 3 };
	struct hdm_kcall c;

	hpu_kt_fill(t[1], g);
	hpu_kt_fill(t[2], x);
	HPU_KCALL(&c, HPU_KERNEL_RELU_BWD, t[0], t[1], t[2]);
	HPU_KLAUNCH(&hdm_kernel_relu_bwd, &c);
	HPU_KEXPECT_NEAR_DT(t[0], want);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/* dropout_bwd with a fixed mask (a forward's), p = 1 included: no gradient at all. */
static void test_dropout_backward(void)
{
	static const double ps[] = { 0.25, 0.6, 1 };

	for (size_t i = 0; i < HPU_ARRAY_SIZE(ps); i++) {
		struct dropout d;
		double *mask;
		struct elt_ctx ctx = { .fn = ref_dropout, .p = ps[i] };

		dropout_new(&d, 3, HPU_KT_DIMS(3, 4, 5), (unsigned int)i, 11, 0, ps[i]);
		HPU_KLAUNCH(&hdm_kernel_dropout, &d.c);
		mask = hpu_kt_values(d.mask);
		ctx.mask = mask;
		ctx.x = d.in;
		elt_grad_case(&hdm_kernel_dropout_bwd, HPU_KERNEL_DROPOUT_BWD, &ctx, d.mask, 0,
			      ps[i], i == 1 ? BF16 : F32, (unsigned int)i + 1);
		free(mask);
		dropout_free(&d);
	}
}

/* The elementwise kernels, f32 and bf16: contiguous and scattered operands give the same bytes. */
static void test_elementwise_layouts_agree(void)
{
	const uint64_t *shape = HPU_KT_DIMS(5, 7, 9); /* 315 elements: past a dropout chunk */

	for (uint32_t dtype = F32; dtype <= BF16; dtype++) {
		struct hpu_ktensor *t[] = {
			tensor(dtype, 3, shape, CONTIG),
			random_tensor(dtype, 3, shape, CONTIG, -1, 1),
			random_tensor(dtype, 3, shape, CONTIG, -3, 3),
			random_tensor(U8, 3, shape, CONTIG, 0, 2),
		};
		struct dropout d;
		struct hdm_kcall c;

		HPU_KCALL(&c, HPU_KERNEL_RELU_BWD, t[0], t[1], t[2]);
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_relu_bwd, &c);
		c.kernel = HPU_KERNEL_GELU_BWD;
		for (c.args[0] = 0; c.args[0] < 2; c.args[0]++)
			HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_gelu_bwd, &c);
		HPU_KCALL(&c, HPU_KERNEL_DROPOUT_BWD, t[0], t[1], t[3]);
		c.scalars[0] = 0.3;
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_dropout_bwd, &c);
		/* Counters across 2^32. */
		dropout_new(&d, 3, shape, CONTIG, 7, (1ull << 32) - 100, 0.3);
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_dropout, &d.c);
		dropout_free(&d);
		free_tensors(t, HPU_ARRAY_SIZE(t));
	}
}

/* ---- layer norm ---- */

struct ln_shape {
	struct shape s;
	int64_t k; /* trailing dims normalised */
};

static const struct ln_shape ln_shapes[] = {
	{ { 2, { 4, 6 } }, 1 }, { { 3, { 2, 3, 5 } }, 2 }, { { 3, { 3, 4, 5 } }, 1 },
	{ { 1, { 7 } }, 1 },    { { 3, { 2, 1, 8 } }, 3 },
};

/* Operands of both directions: in [R, M], weight and bias [M] (NULL: absent). */
struct ln_ref {
	uint64_t rows, cols;
	double eps;
};

static struct ln_ref ln_ref_of(const struct ln_shape *ls)
{
	struct ln_ref r = { 1, 1, 1e-5 };

	for (uint32_t d = 0; d < ls->s.ndim; d++)
		*(d < ls->s.ndim - ls->k ? &r.rows : &r.cols) *= ls->s.d[d];
	return r;
}

static void ref_layer_norm(const struct ln_ref *r, const double *x, const double *w,
			   const double *b, double *y, double *mean, double *rstd)
{
	for (uint64_t i = 0; i < r->rows; i++) {
		const double *xr = x + i * r->cols;
		double m = 0, v = 0, s;

		for (uint64_t j = 0; j < r->cols; j++)
			m += xr[j];
		m /= (double)r->cols;
		for (uint64_t j = 0; j < r->cols; j++)
			v += (xr[j] - m) * (xr[j] - m);
		s = 1 / sqrt(v / (double)r->cols + r->eps);
		for (uint64_t j = 0; j < r->cols; j++)
			y[i * r->cols + j] = (xr[j] - m) * s * (w ? w[j] : 1) + (b ? b[j] : 0);
		mean[i] = m;
		rstd[i] = s;
	}
}

/* A forward's tensors: out, mean, rstd, in, weight, bias. */
struct ln {
	const struct ln_shape *ls;
	struct ln_ref r;
	int64_t flags;
	struct hpu_ktensor *t[6];
};

static void ln_new(struct ln *ln, const struct ln_shape *ls, int64_t flags, uint32_t in_dtype,
		   uint32_t out_dtype, unsigned int layout)
{
	uint32_t lead = ls->s.ndim - (uint32_t)ls->k;

	ln->ls = ls;
	ln->r = ln_ref_of(ls);
	ln->flags = flags;
	ln->t[0] = tensor(out_dtype, ls->s.ndim, ls->s.d, layout);
	ln->t[1] = tensor(F32, lead, ls->s.d, layout + 1);
	ln->t[2] = tensor(F32, lead, ls->s.d, layout + 2);
	ln->t[3] = random_tensor(in_dtype, ls->s.ndim, ls->s.d, layout + 3, -2, 3);
	ln->t[4] = random_tensor(in_dtype, (uint32_t)ls->k, ls->s.d + lead, layout, 0.5, 1.5);
	ln->t[5] = random_tensor(in_dtype, (uint32_t)ls->k, ls->s.d + lead, layout + 1, -1, 1);
}

static struct hdm_kcall ln_forward_call(const struct ln *ln)
{
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_LAYER_NORM, ln->t[0], ln->t[1], ln->t[2], ln->t[3], ln->t[4],
		  ln->t[5]);
	c.args[0] = ln->ls->k;
	c.args[1] = ln->flags;
	c.scalars[0] = ln->r.eps;
	return c;
}

static void ln_forward(struct ln *ln)
{
	struct hdm_kcall c = ln_forward_call(ln);

	HPU_KLAUNCH(&hdm_kernel_layer_norm, &c);
}

/* The reference of in, weight and bias as they are now: out, mean, rstd in one malloc'ed array. */
static double *ln_reference(const struct ln *ln)
{
	uint64_t n = ln->r.rows * ln->r.cols;
	double *x = hpu_kt_values(ln->t[3]), *w = hpu_kt_values(ln->t[4]);
	double *b = hpu_kt_values(ln->t[5]);
	double *y = malloc((n + 2 * ln->r.rows) * sizeof(*y));

	ref_layer_norm(&ln->r, x, ln->flags & 1 ? w : NULL, ln->flags & 2 ? b : NULL, y, y + n,
		       y + n + ln->r.rows);
	free(x);
	free(w);
	free(b);
	return y;
}

static void test_layer_norm_forward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(ln_shapes); i++)
		for (int64_t flags = 0; flags < 4; flags++)
			for (size_t p = 0; p < HPU_ARRAY_SIZE(dtype_pairs); p++, turn++) {
				struct ln ln;
				double *want;
				uint64_t n;

				ln_new(&ln, &ln_shapes[i], flags, dtype_pairs[p][0],
				       dtype_pairs[p][1], turn);
				ln_forward(&ln);
				want = ln_reference(&ln);
				n = ln.r.rows * ln.r.cols;
				HPU_KEXPECT_NEAR_DT(ln.t[0], want);
				HPU_KEXPECT_NEAR_DT(ln.t[1], want + n);
				HPU_KEXPECT_NEAR_DT(ln.t[2], want + n + ln.r.rows);
				free(want);
				free_tensors(ln.t, HPU_ARRAY_SIZE(ln.t));
			}
}

struct ln_ctx {
	struct ln *ln;
	const double *w;
};

static double ln_f(void *p)
{
	struct ln_ctx *ctx = p;
	double *y = ln_reference(ctx->ln), s = dot(ctx->w, y, ctx->ln->r.rows * ctx->ln->r.cols);

	free(y);
	return s;
}

/*
 * t: grad_in, grad_weight, grad_bias, grad_out, in, mean, rstd, weight;
 * absent operands get a one-element stand-in the kernel must not write.
 */
static struct hdm_kcall ln_backward_call(const struct ln *ln, struct hpu_ktensor *const *grads,
					 struct hpu_ktensor *grad_out, struct hpu_ktensor *stand_in)
{
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_LAYER_NORM_BWD, grads[0], ln->flags & 1 ? grads[1] : stand_in,
		  ln->flags & 2 ? grads[2] : stand_in, grad_out, ln->t[3], ln->t[1], ln->t[2],
		  ln->flags & 1 ? ln->t[4] : stand_in);
	c.args[0] = ln->ls->k;
	c.args[1] = ln->flags;
	return c;
}

/* grads[0..3): grad_in, grad_weight, grad_bias in dtype. */
static void ln_grads_new(struct hpu_ktensor **grads, const struct ln_shape *ls, uint32_t dtype,
			 unsigned int layout)
{
	uint32_t lead = ls->s.ndim - (uint32_t)ls->k;

	grads[0] = tensor(dtype, ls->s.ndim, ls->s.d, layout);
	grads[1] = tensor(dtype, (uint32_t)ls->k, ls->s.d + lead, layout + 1);
	grads[2] = tensor(dtype, (uint32_t)ls->k, ls->s.d + lead, layout + 2);
}

static void ln_grad_case(const struct ln_shape *ls, int64_t flags, uint32_t dtype,
			 unsigned int layout)
{
	struct hpu_ktensor *grads[3], *same[3];
	struct hpu_ktensor *grad_out = random_tensor(dtype, ls->s.ndim, ls->s.d, layout + 1, -1, 1);
	struct hpu_ktensor *stand_in = tensor(F32, 0, NULL, 0);
	struct ln ln;
	struct ln_ctx ctx = { &ln, hpu_kt_values(grad_out) };
	struct hdm_kcall c;
	bool bf16 = dtype == BF16;

	ln_grads_new(grads, ls, dtype, layout + 2);
	ln_new(&ln, ls, flags, F32, F32, layout);
	ln_forward(&ln);
	c = ln_backward_call(&ln, grads, grad_out, stand_in);
	HPU_KLAUNCH(&hdm_kernel_layer_norm_bwd, &c);
	GRADCHECK(ln.t[3], ln_f, &ctx, grads[0], bf16);
	if (flags & 1)
		GRADCHECK(ln.t[4], ln_f, &ctx, grads[1], bf16);
	if (flags & 2)
		GRADCHECK(ln.t[5], ln_f, &ctx, grads[2], bf16);
	/* grad_in in place of grad_out: one item doing the column sums first, the same bytes. */
	for (int s = 0; s < HPU_KSPLIT_COUNT; s++) {
		ln_grads_new(same, ls, dtype, layout + 1);
		hpu_kt_fill(same[0], ctx.w);
		c = ln_backward_call(&ln, same, same[0], stand_in);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_layer_norm_bwd, &c, (enum hpu_ksplit)s) == 0);
		for (int i = 0; i < 3; i++)
			if (i == 0 || (flags >> (i - 1) & 1))
				HPU_KEXPECT_SAME(same[i], grads[i]);
		free_tensors(same, HPU_ARRAY_SIZE(same));
	}
	free((void *)ctx.w);
	free_tensors(grads, HPU_ARRAY_SIZE(grads));
	free_tensors((struct hpu_ktensor *[]){ grad_out, stand_in }, 2);
	free_tensors(ln.t, HPU_ARRAY_SIZE(ln.t));
}

static void test_layer_norm_backward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(ln_shapes); i++)
		for (int64_t flags = 0; flags < 4; flags++, turn++)
			ln_grad_case(&ln_shapes[i], flags, turn % 6 == 5 ? BF16 : F32, turn);
}

/* ---- embedding ---- */

/* t: rows [..., D], table [V, D], indices [...]; indices repeat, padding_idx among them. */
struct emb {
	uint64_t v, d, n;
	int64_t pad;
	struct hpu_ktensor *rows, *table, *indices;
	int64_t *idx;
};

static void emb_new(struct emb *e, uint64_t v, uint64_t d, uint32_t idx_ndim,
		    const uint64_t *idx_shape, int64_t pad, uint32_t dtype, unsigned int layout)
{
	uint64_t shape[HPU_TENSOR_MAX_DIMS];

	memcpy(shape, idx_shape, idx_ndim * sizeof(*shape));
	shape[idx_ndim] = d;
	e->v = v;
	e->d = d;
	e->pad = pad;
	e->table = random_tensor(dtype, 2, HPU_KT_DIMS(v, d), layout, -1, 1);
	e->rows = random_tensor(dtype, idx_ndim + 1, shape, layout + 1, -1, 1);
	e->indices = random_tensor(layout % 2 ? I32 : I64, idx_ndim, idx_shape, layout + 2, 0,
				   (double)v);
	e->n = hpu_kt_numel(e->indices);
	kt_set_i(e->indices, e->n - 1, hpu_kt_get_i(e->indices, 0));
	if (pad >= 0)
		kt_set_i(e->indices, e->n / 2, pad);
	e->idx = kt_values_i(e->indices);
}

static void emb_free(struct emb *e)
{
	free(e->idx);
	hpu_kt_free(e->table);
	hpu_kt_free(e->rows);
	hpu_kt_free(e->indices);
}

static struct hdm_kcall emb_call(const struct emb *e, bool backward)
{
	struct hdm_kcall c;

	if (backward)
		HPU_KCALL(&c, HPU_KERNEL_EMBEDDING_BWD, e->table, e->rows, e->indices);
	else
		HPU_KCALL(&c, HPU_KERNEL_EMBEDDING, e->rows, e->table, e->indices);
	c.args[0] = e->pad;
	return c;
}

static void emb_launch(const struct emb *e, bool backward)
{
	struct hdm_kcall c = emb_call(e, backward);

	HPU_KLAUNCH(backward ? &hdm_kernel_embedding_bwd : &hdm_kernel_embedding, &c);
}

/* Vocabularies of one block of rows and of several (the backward sums 512 rows a pass). */
static const struct {
	uint64_t v, d;
	uint32_t ndim;
	uint64_t shape[2];
	int64_t pad;
} emb_cases[] = {
	{ 10, 4, 2, { 2, 3 }, -1 },
	{ 10, 4, 2, { 3, 4 }, 3 },
	{ 1300, 3, 1, { 700 }, 1299 },
	{ 6, 5, 0, { 0 }, -1 },
};

static void emb_case_new(struct emb *e, size_t i, uint32_t dtype, unsigned int layout)
{
	emb_new(e, emb_cases[i].v, emb_cases[i].d, emb_cases[i].ndim, emb_cases[i].shape,
		emb_cases[i].pad, dtype, layout);
}

/* Layer norm both ways and embedding_bwd: contiguous and scattered operands give the same bytes. */
static void test_rows_layouts_agree(void)
{
	struct hpu_ktensor *stand_in = tensor(F32, 0, NULL, 0);

	for (size_t i = 0; i < HPU_ARRAY_SIZE(ln_shapes); i++) {
		for (int64_t flags = 0; flags < 4; flags++) {
			const struct ln_shape *ls = &ln_shapes[i];
			struct hpu_ktensor *grads[3];
			struct hpu_ktensor *grad_out =
				random_tensor(F32, ls->s.ndim, ls->s.d, CONTIG, -1, 1);
			struct hdm_kcall c;
			struct ln ln;

			ln_new(&ln, ls, flags, F32, F32, CONTIG);
			c = ln_forward_call(&ln);
			HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_layer_norm, &c);
			ln_forward(&ln); /* mean and rstd for the backward */
			ln_grads_new(grads, ls, F32, CONTIG);
			c = ln_backward_call(&ln, grads, grad_out, stand_in);
			HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_layer_norm_bwd, &c);
			free_tensors(grads, HPU_ARRAY_SIZE(grads));
			free_tensors(ln.t, HPU_ARRAY_SIZE(ln.t));
			hpu_kt_free(grad_out);
		}
	}
	hpu_kt_free(stand_in);
	for (size_t i = 0; i < HPU_ARRAY_SIZE(emb_cases); i++) {
		struct hdm_kcall c;
		struct emb e;

		emb_case_new(&e, i, F32, CONTIG);
		c = emb_call(&e, true);
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_embedding_bwd, &c);
		emb_free(&e);
	}
}

static void test_embedding_forward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(emb_cases); i++)
		for (uint32_t dtype = F32; dtype <= BF16; dtype++, turn++) {
			struct emb e;
			double *table, *want;

			emb_case_new(&e, i, dtype, turn);
			emb_launch(&e, false);
			table = hpu_kt_values(e.table);
			want = malloc(e.n * e.d * sizeof(*want));
			for (uint64_t k = 0; k < e.n; k++)
				memcpy(want + k * e.d, table + e.idx[k] * e.d, e.d * sizeof(*want));
			HPU_KEXPECT_NEAR_DT(e.rows, want);
			free(table);
			free(want);
			emb_free(&e);
		}
}

/* grad_weight is io: the rows add to what it holds; none to the padding row. */
static void test_embedding_backward(void)
{
	unsigned int turn = 0;

	for (size_t i = 0; i < HPU_ARRAY_SIZE(emb_cases); i++)
		for (uint32_t dtype = F32; dtype <= BF16; dtype++, turn++) {
			struct emb e;
			double *want, *g;

			emb_case_new(&e, i, dtype, turn);
			want = hpu_kt_values(e.table);
			g = hpu_kt_values(e.rows);
			for (uint64_t k = 0; k < e.n; k++)
				for (uint64_t j = 0; e.idx[k] != e.pad && j < e.d; j++)
					want[e.idx[k] * e.d + j] += g[k * e.d + j];
			emb_launch(&e, true);
			HPU_KEXPECT_NEAR_DT(e.table, want);
			free(want);
			free(g);
			emb_free(&e);
		}
}

struct emb_ctx {
	struct emb *e;
	const double *w;
};

static double emb_f(void *p)
{
	struct emb_ctx *ctx = p;
	struct emb *e = ctx->e;
	double s = 0;

	for (uint64_t k = 0; k < e->n; k++)
		for (uint64_t j = 0; j < e->d; j++)
			s += ctx->w[k * e->d + j] *
			     hpu_kt_get(e->table, (uint64_t)e->idx[k] * e->d + j);
	return s;
}

/* From a zero grad_weight, without padding (whose row the forward still reads). */
static void test_embedding_gradcheck(void)
{
	for (unsigned int layout = 0; layout < LAYOUTS; layout++) {
		struct emb e;
		struct hpu_ktensor *grad;
		struct emb_ctx ctx = { &e, NULL };
		struct hdm_kcall c;

		emb_new(&e, 9, 3, 2, HPU_KT_DIMS(4, 5), -1, F32, layout);
		grad = tensor(layout == FLIPPED ? BF16 : F32, 2, HPU_KT_DIMS(9, 3), layout + 2);
		ctx.w = hpu_kt_values(e.rows);
		HPU_KCALL(&c, HPU_KERNEL_EMBEDDING_BWD, grad, e.rows, e.indices);
		c.args[0] = -1;
		HPU_KLAUNCH(&hdm_kernel_embedding_bwd, &c);
		GRADCHECK(e.table, emb_f, &ctx, grad, false);
		free((void *)ctx.w);
		hpu_kt_free(grad);
		emb_free(&e);
	}
}

/* Empty operands at one address (as the engine maps them) are not aliases: these launches run. */
static void test_empty_not_aliased(void)
{
	struct hpu_ktensor *t[] = {
		tensor(F32, 2, HPU_KT_DIMS(0, 4), 0),     /* embedding out */
		tensor(F32, 2, HPU_KT_DIMS(0, 4), 0),     /* weight, V = 0 */
		tensor(I64, 1, HPU_KT_DIMS(0), 0),        /* indices */
		tensor(F32, 2, HPU_KT_DIMS(3, 0), 0),     /* layer norm in, grad_in, grad_out */
		tensor(F32, 1, HPU_KT_DIMS(0), 0),        /* weight and grads, no column */
		tensor(F32, 1, HPU_KT_DIMS(3), 0),        /* mean, rstd */
	};
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_EMBEDDING, t[0], t[1], t[2]);
	c.args[0] = -1;
	c.t[0].base = c.t[1].base;
	HPU_KLAUNCH(&hdm_kernel_embedding, &c);
	HPU_KCALL(&c, HPU_KERNEL_LAYER_NORM_BWD, t[3], t[4], t[4], t[3], t[3], t[5], t[5], t[4]);
	c.args[0] = 1;
	c.args[1] = 3;
	HPU_KLAUNCH(&hdm_kernel_layer_norm_bwd, &c);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/*
 * Backward passes over no rows: grad_out [0, 4] (layer norm over its last
 * dim, embedding of no index) sums nothing into the weight's gradients.
 * Their columns are walked down the rows: a column of none is still a
 * place to start from (this divided by zero before).
 */
static void test_backward_of_no_rows(void)
{
	struct hpu_ktensor *t[] = {
		tensor(F32, 2, HPU_KT_DIMS(0, 4), 0),     /* grad_out, in, grad_in */
		tensor(F32, 1, HPU_KT_DIMS(4), 0),        /* layer norm's grad_weight */
		tensor(F32, 1, HPU_KT_DIMS(4), 0),        /* grad_bias */
		tensor(F32, 1, HPU_KT_DIMS(4), 0),        /* weight */
		tensor(F32, 1, HPU_KT_DIMS(0), 0),        /* mean, rstd */
		tensor(F32, 2, HPU_KT_DIMS(3, 4), 0),     /* embedding's grad_weight */
		tensor(I64, 1, HPU_KT_DIMS(0), 0),        /* indices */
	};
	const double sevens[12] = { 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7 };
	struct hdm_kcall c;
	unsigned int i;

	hpu_kt_fill(t[1], sevens);
	hpu_kt_fill(t[2], sevens);
	hpu_kt_fill(t[3], sevens);
	hpu_kt_fill(t[5], sevens);
	HPU_KCALL(&c, HPU_KERNEL_LAYER_NORM_BWD, t[0], t[1], t[2], t[0], t[0], t[4], t[4], t[3]);
	c.args[0] = 1;
	c.args[1] = 3;
	HPU_KLAUNCH(&hdm_kernel_layer_norm_bwd, &c);
	for (i = 0; i < 4; i++)
		HPU_KEXPECT(hpu_kt_get(t[1], i) == 0 && hpu_kt_get(t[2], i) == 0);
	HPU_KCALL(&c, HPU_KERNEL_EMBEDDING_BWD, t[5], t[0], t[6]);
	c.args[0] = -1;
	HPU_KLAUNCH(&hdm_kernel_embedding_bwd, &c);
	HPU_KEXPECT_NEAR(t[5], sevens, 0, 0);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/* ---- items within HPU_KERNEL_MAX_ITEM_WORK ---- */

/* Every item of every phase of valid launch c visits at most HPU_KERNEL_MAX_ITEM_WORK elements. */
static void expect_items_bounded(const struct hdm_kernel_def *def, const struct hdm_kcall *c)
{
	uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };
	unsigned int phases = def->phases ? def->phases : 1;

	HPU_KEXPECT(def->check(c, items) == 0);
	for (c->state->phase = 0; c->state->phase < phases; c->state->phase++)
		HPU_KEXPECT(hpu_kitem_work(def, c, items[c->state->phase]) <=
			    HPU_KERNEL_MAX_ITEM_WORK);
	c->state->phase = 0;
}

/*
 * A launch with dims *dims[0, n) just past a bound, at + 1, is refused by
 * check(); at the bound it is not, and its items keep it.
 */
static void expect_bound(const struct hdm_kernel_def *def, struct hdm_kcall *c, uint64_t at,
			 unsigned int n, uint64_t *const *dims)
{
	uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };

	for (unsigned int i = 0; i < n; i++)
		*dims[i] = at + 1;
	HPU_KEXPECT(def->check(c, items) != 0);
	for (unsigned int i = 0; i < n; i++)
		*dims[i] = at;
	expect_items_bounded(def, c);
}

#define EXPECT_BOUND(def, c, at, ...)                                                     \
	expect_bound(def, c, at, sizeof((uint64_t *[]){ __VA_ARGS__ }) / sizeof(uint64_t *),  \
		     (uint64_t *[]){ __VA_ARGS__ })

#define EMB_BWD_MAX_INDICES (HPU_KERNEL_MAX_ITEM_WORK - 512)

/*
 * An embedding row of at most HPU_KERNEL_MAX_ITEM_WORK elements, an
 * embedding backward of at most EMB_BWD_MAX_INDICES indices (each of its
 * items scans them all).
 */
static void test_embedding_bounds(void)
{
	struct hpu_ktensor *t[] = {
		tensor(F32, 2, HPU_KT_DIMS(1, HPU_KERNEL_MAX_ITEM_WORK + 1), 0), /* out */
		tensor(F32, 2, HPU_KT_DIMS(1, HPU_KERNEL_MAX_ITEM_WORK + 1), 0), /* table */
		tensor(I32, 1, HPU_KT_DIMS(EMB_BWD_MAX_INDICES + 1), 0),        /* ids */
		tensor(F32, 2, HPU_KT_DIMS(EMB_BWD_MAX_INDICES + 1, 1), 0),     /* grad_out */
		tensor(F32, 2, HPU_KT_DIMS(1, 1), 0),                          /* grad_weight */
	};
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_EMBEDDING, t[0], t[1], t[2]);
	c.args[0] = -1;
	c.t[2].shape[0] = 1;
	EXPECT_BOUND(&hdm_kernel_embedding, &c, HPU_KERNEL_MAX_ITEM_WORK, &c.t[0].shape[1],
		     &c.t[1].shape[1]);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_embedding, &c, HPU_KSPLIT_ONE) == 0);

	for (uint64_t i = 0; i <= EMB_BWD_MAX_INDICES; i++)
		hpu_kt_set(t[3], i, 1);
	HPU_KCALL(&c, HPU_KERNEL_EMBEDDING_BWD, t[4], t[3], t[2]);
	c.args[0] = -1;
	EXPECT_BOUND(&hdm_kernel_embedding_bwd, &c, EMB_BWD_MAX_INDICES, &c.t[1].shape[0],
		     &c.t[2].shape[0]);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_embedding_bwd, &c, HPU_KSPLIT_THREADS) == 0);
	HPU_KEXPECT(hpu_kt_get(t[4], 0) == EMB_BWD_MAX_INDICES);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/*
 * Layer norm rows an item walks three times (forward) or twice (backward):
 * at most HPU_KERNEL_MAX_ITEM_WORK / 3 and / 2 elements.
 */
static void test_layer_norm_bounds(void)
{
	const uint64_t most = HPU_KERNEL_MAX_ITEM_WORK / 2 + 1;
	struct hpu_ktensor *t[] = {
		tensor(F32, 2, HPU_KT_DIMS(1, most), 0), /* out, grad_in */
		tensor(F32, 1, HPU_KT_DIMS(1), 0),        /* mean */
		tensor(F32, 1, HPU_KT_DIMS(1), 0),        /* rstd */
		tensor(F32, 2, HPU_KT_DIMS(1, most), 0), /* in */
		tensor(F32, 1, HPU_KT_DIMS(0), 0),        /* no weight, bias or their grads */
		tensor(F32, 2, HPU_KT_DIMS(1, most), 0), /* grad_out */
	};
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_LAYER_NORM, t[0], t[1], t[2], t[3], t[4], t[4]);
	c.args[0] = 1;
	EXPECT_BOUND(&hdm_kernel_layer_norm, &c, HPU_KERNEL_MAX_ITEM_WORK / 3, &c.t[0].shape[1],
		     &c.t[3].shape[1]);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_layer_norm, &c, HPU_KSPLIT_ONE) == 0);
	HPU_KCALL(&c, HPU_KERNEL_LAYER_NORM_BWD, t[0], t[4], t[4], t[5], t[3], t[1], t[2], t[4]);
	c.args[0] = 1;
	EXPECT_BOUND(&hdm_kernel_layer_norm_bwd, &c, HPU_KERNEL_MAX_ITEM_WORK / 2,
		     &c.t[0].shape[1], &c.t[3].shape[1], &c.t[4].shape[1]);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_layer_norm_bwd, &c, HPU_KSPLIT_ONE) == 0);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/*
 * The weight and bias gradients of more rows than an item may walk, with
 * grad_in written over grad_out: columns in chunks of rows, whose partial
 * sums join in order, all read before any row is written.  Rows of (k, -k)
 * and grad_out 1 give whole sums and a grad_in of 0.
 */
#define LN_MANY_ROWS ((uint64_t)HPU_KERNEL_MAX_ITEM_WORK + 5)

static void test_layer_norm_backward_many_rows(void)
{
	struct hpu_ktensor *t[] = {
		tensor(F32, 2, HPU_KT_DIMS(LN_MANY_ROWS, 2), 0), /* grad_out, grad_in */
		tensor(F32, 1, HPU_KT_DIMS(2), 0),                /* grad_weight */
		tensor(F32, 1, HPU_KT_DIMS(2), 0),                /* grad_bias */
		tensor(F32, 2, HPU_KT_DIMS(LN_MANY_ROWS, 2), 0), /* in */
		tensor(F32, 1, HPU_KT_DIMS(LN_MANY_ROWS), 0),     /* mean */
		tensor(F32, 1, HPU_KT_DIMS(LN_MANY_ROWS), 0),     /* rstd */
		tensor(F32, 1, HPU_KT_DIMS(2), 0),                /* weight */
	};
	double sum = 0;
	struct hdm_kcall c;

	for (uint64_t r = 0; r < LN_MANY_ROWS; r++) {
		hpu_kt_set(t[3], 2 * r, (double)(r % 7));
		hpu_kt_set(t[3], 2 * r + 1, -(double)(r % 7));
		hpu_kt_set(t[5], r, 1);
		sum += (double)(r % 7);
	}
	hpu_kt_fill(t[6], (const double[]){ 1, 1 });
	HPU_KCALL(&c, HPU_KERNEL_LAYER_NORM_BWD, t[0], t[1], t[2], t[0], t[3], t[4], t[5], t[6]);
	c.args[0] = 1;
	c.args[1] = 3;
	expect_items_bounded(&hdm_kernel_layer_norm_bwd, &c);
	for (int split = 0; split < HPU_KSPLIT_COUNT; split++) {
		uint64_t bad = 0;

		for (uint64_t i = 0; i < 2 * LN_MANY_ROWS; i++)
			hpu_kt_set(t[0], i, 1);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_layer_norm_bwd, &c, split) == 0);
		HPU_KEXPECT_NEAR(t[1], ((const double[]){ sum, -sum }), 0, 0);
		HPU_KEXPECT_NEAR(t[2], ((const double[]){ LN_MANY_ROWS, LN_MANY_ROWS }), 0, 0);
		for (uint64_t i = 0; i < 2 * LN_MANY_ROWS; i++)
			bad += hpu_kt_get(t[0], i) != 0;
		HPU_KEXPECT(bad == 0);
	}
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/*
 * check() reads no index (n may be 2^32): a bad one, the last of millions,
 * fails the launch in its first phase, before anything is written.
 */
static void test_embedding_bad_last_index(void)
{
	const uint64_t n = 3ull << 20;
	struct hpu_ktensor *t[] = {
		tensor(F32, 2, HPU_KT_DIMS(n, 1), 0),                   /* out */
		tensor(F32, 2, HPU_KT_DIMS(4, 1), 0),                   /* table, grad_weight */
		tensor(I64, 1, HPU_KT_DIMS(n), 0),                      /* ids */
	};
	struct hdm_kcall c;
	double *before[2];

	hpu_kt_fill_random(t[0], 1, -1, 1);
	hpu_kt_fill_random(t[1], 2, -1, 1);
	before[0] = hpu_kt_values(t[0]);
	before[1] = hpu_kt_values(t[1]);
	kt_set_i(t[2], n - 1, 4);
	for (int split = 0; split < HPU_KSPLIT_COUNT; split++) {
		HPU_KCALL(&c, HPU_KERNEL_EMBEDDING, t[0], t[1], t[2]);
		c.args[0] = -1;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_embedding, &c, split) == HPU_KRUN_FAULT);
		HPU_KEXPECT_NEAR(t[0], before[0], 0, 0);
		/* The backward's bound on the indices: its last. */
		kt_set_i(t[2], EMB_BWD_MAX_INDICES - 1, 4);
		HPU_KCALL(&c, HPU_KERNEL_EMBEDDING_BWD, t[1], t[0], t[2]);
		c.args[0] = -1;
		c.t[1].shape[0] = c.t[2].shape[0] = EMB_BWD_MAX_INDICES;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_embedding_bwd, &c, split) == HPU_KRUN_FAULT);
		HPU_KEXPECT_NEAR(t[1], before[1], 0, 0);
		kt_set_i(t[2], EMB_BWD_MAX_INDICES - 1, 0);
	}
	free(before[0]);
	free(before[1]);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/*
 * The losses' check() reads no target: a bad one, the last of millions,
 * fails the launch in its first phase, before anything is written, for a
 * forward of each reduction and a backward.
 */
static void test_loss_bad_last_target(void)
{
	const uint64_t n = (3ull << 20) + 5;
	struct hpu_ktensor *t[] = {
		tensor(F32, 1, HPU_KT_DIMS(n), 0),    /* loss NONE, grad_loss */
		tensor(F32, 0, NULL, 0),              /* loss SUM */
		tensor(F32, 2, HPU_KT_DIMS(n, 2), 0), /* logits, logp, grad */
		tensor(I64, 1, HPU_KT_DIMS(n), 0),    /* targets */
	};
	double *before[3];
	struct hdm_kcall c;

	for (unsigned int i = 0; i < 3; i++) {
		hpu_kt_fill_random(t[i], i + 1, -1, 1);
		before[i] = hpu_kt_values(t[i]);
	}
	kt_set_i(t[3], n - 1, 2);
	for (int split = 0; split < HPU_KSPLIT_COUNT; split++) {
		HPU_KCALL(&c, HPU_KERNEL_NLL_LOSS, t[0], t[2], t[3]);
		c.args[1] = -100;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_nll_loss, &c, split) == HPU_KRUN_FAULT);
		HPU_KEXPECT_NEAR(t[0], before[0], 0, 0);
		HPU_KCALL(&c, HPU_KERNEL_CROSS_ENTROPY, t[1], t[2], t[3]);
		c.args[0] = HPU_REDUCTION_SUM;
		c.args[1] = -100;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_cross_entropy, &c, split) == HPU_KRUN_FAULT);
		HPU_KEXPECT_NEAR(t[1], before[1], 0, 0);
		HPU_KCALL(&c, HPU_KERNEL_NLL_LOSS_BWD, t[2], t[0], t[3]);
		c.args[1] = -100;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_nll_loss_bwd, &c, split) == HPU_KRUN_FAULT);
		HPU_KEXPECT_NEAR(t[2], before[2], 0, 0);
	}
	for (unsigned int i = 0; i < 3; i++)
		free(before[i]);
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/*
 * A reduced loss over more than 2^19 rows adds them in groups (here of two
 * rows), the groups' sums in order: every split gives the same bits, and
 * no item is past the bound (one item over every row would be).
 */
static void test_loss_reduced_many_rows(void)
{
	const uint64_t n = (1ull << 19) + 3;
	struct hpu_ktensor *t[] = {
		tensor(F32, 0, NULL, 0),
		tensor(F32, 2, HPU_KT_DIMS(n, 2), 0),
		tensor(I64, 1, HPU_KT_DIMS(n), 0),
	};
	double sum = 0;
	float first = 0;
	struct hdm_kcall c;

	hpu_kt_fill_random(t[1], 7, -3, 3);
	for (uint64_t i = 0; i < n; i++)
		kt_set_i(t[2], i, i % 3 ? (int64_t)(i & 1) : -100);
	/* Groups of two rows: each group's sum in double, then the groups in order. */
	for (uint64_t g = 0; g < n; g += 2) {
		double part = 0;

		for (uint64_t i = g; i < g + 2 && i < n; i++) {
			double a = hpu_kt_get(t[1], 2 * i), b = hpu_kt_get(t[1], 2 * i + 1);
			double m = a > b ? a : b, lse = m + log(exp(a - m) + exp(b - m));

			if (i % 3)
				part += lse - (i & 1 ? b : a);
		}
		sum += part;
	}
	for (int split = 0; split < HPU_KSPLIT_COUNT; split++) {
		HPU_KCALL(&c, HPU_KERNEL_CROSS_ENTROPY, t[0], t[1], t[2]);
		c.args[0] = HPU_REDUCTION_MEAN;
		c.args[1] = -100;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_cross_entropy, &c, split) == 0);
		if (!split)
			first = (float)hpu_kt_get(t[0], 0);
		HPU_KEXPECT((float)hpu_kt_get(t[0], 0) == first);
		HPU_KEXPECT(fabs(hpu_kt_get(t[0], 0) - sum / (double)(n - (n + 2) / 3)) < 1e-6);
	}
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/* ---- indices overwritten while a kernel runs ---- */

#define OVERWRITTEN_ROWS 8u

/*
 * Runs a launch's phases each on one range, then its finish(), as engine
 * parts would, with a state and scratch of its own (hpu_krun() would also
 * call the overlap a write to an input): why a part failed the launch, or
 * NULL.
 */
static const char *run_once(const struct hdm_kernel_def *def, struct hdm_kcall *c)
{
	struct hdm_kstate state = { .fault = NULL };
	uint64_t items[HDM_KERNEL_MAX_PHASES] = { 0 };
	unsigned int phases = def->phases ? def->phases : 1;

	c->state = &state;
	if (def->check(c, items))
		return "refused";
	if (def->scratch)
		state.scratch = calloc(1, def->scratch(c, items[0]));
	for (state.phase = 0; state.phase < phases && !state.fault; state.phase++) {
		def->run(c, 0, items[state.phase]);
		if (!state.fault && def->finish)
			def->finish(c);
	}
	free(state.scratch);
	return state.fault;
}

/*
 * t[0], an F32 [rows] or [rows, 1] output, laid over the I64 indices t[i]
 * holds: row n's result lands on the low word of index n + 1, which check()
 * saw in range (0) and which the kernel then meets as about 2^30.
 */
static void overwrite_next_index(struct hdm_kcall *c, unsigned int i)
{
	c->t[0].strides[0] = 2;
	c->t[0].base = c->t[i].base + 8;
	c->t[i].shape[0] = OVERWRITTEN_ROWS;
}

/*
 * The kernel must check an index where it uses it and fail the launch, not
 * read gigabytes past its row (the sanitizer build reports such a read, the
 * plain one crashes or reads what it should not).  The engine refuses this
 * overlap; another job writing HBM under a launch does the same.
 */
static void test_indices_overwritten_mid_run(void)
{
	static const struct {
		const struct hdm_kernel_def *def;
		uint32_t kernel;
		const char *fault;
	} losses[] = {
		{ &hdm_kernel_nll_loss, HPU_KERNEL_NLL_LOSS, "a target out of range" },
		{ &hdm_kernel_cross_entropy, HPU_KERNEL_CROSS_ENTROPY, "a target out of range" },
	};
	struct hpu_ktensor *t[] = {
		tensor(F32, 1, HPU_KT_DIMS(OVERWRITTEN_ROWS), 0),              /* loss */
		tensor(F32, 2, HPU_KT_DIMS(OVERWRITTEN_ROWS, 4), 0),           /* logp, logits */
		tensor(I64, 1, HPU_KT_DIMS(OVERWRITTEN_ROWS + 1), 0),          /* targets, ids */
		tensor(F32, 2, HPU_KT_DIMS(OVERWRITTEN_ROWS, 1), 0),           /* embedding out */
		tensor(F32, 2, HPU_KT_DIMS(4, 1), 0),                          /* weight */
	};
	const char *fault;
	struct hdm_kcall c;
	uint64_t i;

	for (i = 0; i < hpu_kt_numel(t[1]); i++)
		hpu_kt_set(t[1], i, -1.5);
	for (i = 0; i < 4; i++)
		hpu_kt_set(t[4], i, 1.5);
	for (i = 0; i < HPU_ARRAY_SIZE(losses); i++) {
		HPU_KCALL(&c, losses[i].kernel, t[0], t[1], t[2]);
		c.args[1] = -100;
		overwrite_next_index(&c, 2);
		memset(t[2]->buf, 0, t[2]->size);
		fault = run_once(losses[i].def, &c);
		HPU_KEXPECT(fault && !strcmp(fault, losses[i].fault));
	}
	HPU_KCALL(&c, HPU_KERNEL_EMBEDDING, t[3], t[4], t[2]);
	c.args[0] = -1;
	overwrite_next_index(&c, 2);
	memset(t[2]->buf, 0, t[2]->size);
	fault = run_once(&hdm_kernel_embedding, &c);
	HPU_KEXPECT(fault && !strcmp(fault, "an index out of range"));
	free_tensors(t, HPU_ARRAY_SIZE(t));
}

/* ---- rejections ---- */

#define T34 { F32, 2, { 3, 4 } }
#define V3 { F32, 1, { 3 } }
#define V4 { F32, 1, { 4 } }
#define T56 { F32, 2, { 5, 6 } }

static const struct hpu_kreject_case reject_cases[] = {
	{ "softmax", &hdm_kernel_softmax, HPU_KERNEL_SOFTMAX, { 1 }, { 0 }, 2, { T34, T34 },
	  HPU_KMUTS(HPU_KM_COUNT(1), HPU_KM_COUNT(3), HPU_KM_DTYPE(0, I32), HPU_KM_DTYPE(1, U8),
		    HPU_KM_SHAPE(1, 0), HPU_KM_NDIM(1, 3), HPU_KM_ARG(0, 2), HPU_KM_ARG(0, -1),
		    HPU_KM_ARG(1, 2)) },
	{ "softmax_bwd", &hdm_kernel_softmax_bwd, HPU_KERNEL_SOFTMAX_BWD, { 0, 1 }, { 0 }, 3,
	  { T34, T34, T34 },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_DTYPE(1, I64), HPU_KM_SHAPE(2, 1), HPU_KM_ARG(0, 2),
		    HPU_KM_ARG(1, -1)) },
	{ "nll_loss", &hdm_kernel_nll_loss, HPU_KERNEL_NLL_LOSS, { HPU_REDUCTION_MEAN, -100 },
	  { 0 }, 3, { { F32, 0, { 0 } }, { F32, 2, { 4, 3 } }, { I64, 1, { 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_COUNT(4), HPU_KM_ARG(0, 3), HPU_KM_ARG(0, -1),
		    HPU_KM_ARG(0, HPU_REDUCTION_NONE), HPU_KM_NDIM(0, 1), HPU_KM_NDIM(1, 3),
		    HPU_KM_DTYPE(1, I32), HPU_KM_DTYPE(0, U8), HPU_KM_DTYPE(2, F32),
		    HPU_KM_DTYPE(2, U8), HPU_KM_SHAPE(2, 0), HPU_KM_VALUE(2, 3),
		    HPU_KM_VALUE(2, -1)) },
	{ "nll_loss_bwd", &hdm_kernel_nll_loss_bwd, HPU_KERNEL_NLL_LOSS_BWD,
	  { HPU_REDUCTION_NONE, -100 }, { 0 }, 3,
	  { { F32, 2, { 4, 3 } }, { F32, 1, { 4 } }, { I32, 1, { 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(4), HPU_KM_ARG(0, HPU_REDUCTION_MEAN), HPU_KM_ARG(0, 7),
		    HPU_KM_SHAPE(1, 0), HPU_KM_SHAPE(0, 0), HPU_KM_DTYPE(0, I64),
		    HPU_KM_VALUE(2, 3), HPU_KM_VALUE(2, -100000)) },
	{ "cross_entropy", &hdm_kernel_cross_entropy, HPU_KERNEL_CROSS_ENTROPY,
	  { HPU_REDUCTION_SUM, 1 }, { 0 }, 3,
	  { { BF16, 0, { 0 } }, { BF16, 2, { 4, 3 } }, { I32, 1, { 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_ARG(0, 3), HPU_KM_NDIM(0, 1), HPU_KM_DTYPE(1, I64),
		    HPU_KM_SHAPE(1, 0), HPU_KM_VALUE(2, 3), HPU_KM_VALUE(2, -1)) },
	{ "cross_entropy_bwd", &hdm_kernel_cross_entropy_bwd, HPU_KERNEL_CROSS_ENTROPY_BWD,
	  { HPU_REDUCTION_SUM, -100 }, { 0 }, 4,
	  { { F32, 2, { 4, 3 } }, { F32, 0, { 0 } }, { F32, 2, { 4, 3 } }, { I64, 1, { 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(3), HPU_KM_SHAPE(2, 1), HPU_KM_DTYPE(2, I32), HPU_KM_NDIM(1, 1),
		    HPU_KM_VALUE(3, 5), HPU_KM_ARG(0, -2)) },
	{ "dropout", &hdm_kernel_dropout, HPU_KERNEL_DROPOUT, { 0 }, { 0.5 }, 4,
	  { T56, { U8, 2, { 5, 6 } }, T56, { I64, 1, { 2 } } },
	  HPU_KMUTS(HPU_KM_COUNT(3), HPU_KM_SCALAR(0, -0.1), HPU_KM_SCALAR(0, 1.5),
		    HPU_KM_SCALAR(0, NAN), HPU_KM_DTYPE(1, F32), HPU_KM_DTYPE(0, U8),
		    HPU_KM_DTYPE(3, I32), HPU_KM_SHAPE(3, 0), HPU_KM_NDIM(3, 2), HPU_KM_SHAPE(2, 1),
		    HPU_KM_SHAPE(1, 0)) },
	{ "dropout_bwd", &hdm_kernel_dropout_bwd, HPU_KERNEL_DROPOUT_BWD, { 0 }, { 0.5 }, 3,
	  { T56, T56, { U8, 2, { 5, 6 } } },
	  HPU_KMUTS(HPU_KM_COUNT(4), HPU_KM_SCALAR(0, 2), HPU_KM_SCALAR(0, NAN),
		    HPU_KM_DTYPE(2, F32), HPU_KM_SHAPE(1, 0), HPU_KM_SHAPE(2, 1)) },
	{ "relu_bwd", &hdm_kernel_relu_bwd, HPU_KERNEL_RELU_BWD, { 0 }, { 0 }, 3, { T56, T56, T56 },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_DTYPE(2, I32), HPU_KM_DTYPE(0, U8),
		    HPU_KM_DTYPE(1, I64), HPU_KM_SHAPE(1, 0), HPU_KM_NDIM(2, 1)) },
	{ "gelu_bwd", &hdm_kernel_gelu_bwd, HPU_KERNEL_GELU_BWD, { 1 }, { 0 }, 3, { T56, T56, T56 },
	  HPU_KMUTS(HPU_KM_ARG(0, 2), HPU_KM_ARG(0, -1), HPU_KM_SHAPE(2, 1), HPU_KM_DTYPE(2, U8)) },
	{ "layer_norm", &hdm_kernel_layer_norm, HPU_KERNEL_LAYER_NORM, { 1, 3 }, { 1e-5 }, 6,
	  { T34, { F32, 1, { 3 } }, { F32, 1, { 3 } }, T34, { F32, 1, { 4 } }, { F32, 1, { 4 } } },
	  HPU_KMUTS(HPU_KM_COUNT(5), HPU_KM_ARG(0, 0), HPU_KM_ARG(0, 3), HPU_KM_ARG(1, 4),
		    HPU_KM_DTYPE(1, BF16), HPU_KM_SHAPE(1, 0), HPU_KM_NDIM(2, 0),
		    HPU_KM_SHAPE(4, 0), HPU_KM_DTYPE(5, I32), HPU_KM_SCALAR(0, -1),
		    HPU_KM_SCALAR(0, NAN), HPU_KM_SHAPE(0, 1), HPU_KM_DTYPE(3, I64)) },
	{ "layer_norm_bwd", &hdm_kernel_layer_norm_bwd, HPU_KERNEL_LAYER_NORM_BWD, { 1, 3 }, { 0 },
	  8, { T34, V4, V4, T34, T34, V3, V3, V4 },
	  HPU_KMUTS(HPU_KM_COUNT(7), HPU_KM_ARG(0, 5), HPU_KM_ARG(1, 8), HPU_KM_SHAPE(0, 0),
		    HPU_KM_SHAPE(1, 0), HPU_KM_DTYPE(2, I32), HPU_KM_DTYPE(3, U8),
		    HPU_KM_DTYPE(6, BF16), HPU_KM_SHAPE(7, 0), HPU_KM_ALIAS(1, 7),
		    HPU_KM_ALIAS(2, 3)) },
	{ "embedding", &hdm_kernel_embedding, HPU_KERNEL_EMBEDDING, { -1 }, { 0 }, 3,
	  { { F32, 3, { 2, 3, 4 } }, { F32, 2, { 10, 4 } }, { I64, 2, { 2, 3 } } },
	  HPU_KMUTS(HPU_KM_COUNT(2), HPU_KM_VALUE(2, 10), HPU_KM_VALUE(2, -1), HPU_KM_ARG(0, 10),
		    HPU_KM_ARG(0, -2), HPU_KM_NDIM(1, 3), HPU_KM_SHAPE(0, 2), HPU_KM_SHAPE(0, 0),
		    HPU_KM_DTYPE(2, F32), HPU_KM_DTYPE(0, I32), HPU_KM_ALIAS(0, 1)) },
	{ "embedding_bwd", &hdm_kernel_embedding_bwd, HPU_KERNEL_EMBEDDING_BWD, { 3 }, { 0 }, 3,
	  { { F32, 2, { 10, 4 } }, { F32, 3, { 2, 3, 4 } }, { I32, 2, { 2, 3 } } },
	  HPU_KMUTS(HPU_KM_VALUE(2, 10), HPU_KM_SHAPE(1, 0), HPU_KM_ALIAS(1, 0), HPU_KM_ARG(0, 10),
		    HPU_KM_DTYPE(0, I64), HPU_KM_NDIM(2, 3)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

static const struct hpu_ktest_case cases[] = {
	{ "philox4x32-10 known answers", test_philox_known_answers },
	{ "philox draws: four a block, in lanes, across the 2^32 block boundary", test_philox_uniform },
	{ "softmax and log_softmax: every dim, layout and dtype", test_softmax_forward },
	{ "softmax: logits near 1000 stay finite", test_softmax_large_logits },
	{ "softmax_bwd: gradient check, both variants", test_softmax_backward },
	{ "nll_loss and cross_entropy: reductions, ignore_index, dtypes", test_loss_forward },
	{ "nll_loss_bwd and cross_entropy_bwd: gradient check", test_loss_backward },
	{ "losses with every target ignored", test_loss_all_ignored },
	{ "dropout: Philox mask, scaling, offset advanced", test_dropout_mask },
	{ "dropout: a draw equal to p is kept, p just above it drops it", test_dropout_threshold },
	{ "dropout: kept fraction within 5 sigma of 1 - p", test_dropout_statistics },
	{ "dropout: fresh masks, same (seed, offset) same mask", test_dropout_reproducible },
	{ "dropout: every split writes the same bytes", test_dropout_split },
	{ "dropout: p = 0 and p = 1", test_dropout_extremes },
	{ "dropout_bwd: gradient check with a fixed mask", test_dropout_backward },
	{ "relu_bwd and gelu_bwd (erf, tanh): gradient check", test_relu_gelu_backward },
	{ "relu_bwd at 0", test_relu_backward_at_zero },
	{ "relu, gelu, dropout backward, dropout: layouts give the same bytes",
	  test_elementwise_layouts_agree },
	{ "layer_norm: shapes, weight and bias, dtypes", test_layer_norm_forward },
	{ "layer_norm_bwd: gradient check of all three; in place", test_layer_norm_backward },
	{ "embedding: gather, repeated indices, bf16", test_embedding_forward },
	{ "embedding_bwd: scatter-add, padding, many blocks", test_embedding_backward },
	{ "embedding_bwd: gradient check", test_embedding_gradcheck },
	{ "layer_norm, layer_norm_bwd, embedding_bwd: layouts give the same bytes",
	  test_rows_layouts_agree },
	{ "empty operands at one address are not aliases", test_empty_not_aliased },
	{ "backward passes over no rows sum nothing into the weights' gradients",
	  test_backward_of_no_rows },
	{ "nll_loss, cross_entropy, embedding: an index overwritten mid-run fails the launch",
	  test_indices_overwritten_mid_run },
	{ "layer_norm, layer_norm_bwd: rows within an item's bound", test_layer_norm_bounds },
	{ "layer_norm_bwd: weight and bias grads of 2^20 + 5 rows, in place",
	  test_layer_norm_backward_many_rows },
	{ "embedding, embedding_bwd: rows and indices within an item's bound", test_embedding_bounds },
	{ "embedding, embedding_bwd: a bad last index of millions writes nothing",
	  test_embedding_bad_last_index },
	{ "nll_loss, cross_entropy, nll_loss_bwd: a bad last target of millions writes nothing",
	  test_loss_bad_last_target },
	{ "cross_entropy MEAN over 2^19 + 3 rows: groups of rows, the same whatever the split",
	  test_loss_reduced_many_rows },
	{ "every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
