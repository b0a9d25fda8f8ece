/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the REDUCE kernel: every op over every dim mask of a
 * 3-d tensor in several layouts and dtypes against a naive reference,
 * ties, NaN, wide integers, empty tensors, every rejection, the same
 * bytes however the items are split, and a finite-difference gradient
 * check of bias-add (BINARY ADD of a broadcast bias; its backward a SUM
 * over the batch dim).  Prints TAP.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hdm_kernel_harness.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64
#define U8 HPU_DTYPE_U8

#define SHAPE HPU_KT_DIMS(3, 4, 5)
#define ALL_DIMS 7

static const int64_t *const in_layouts[] = {
	NULL,                           /* contiguous */
	HPU_KT_STRIDES(1, 3, 12),       /* transposed */
	HPU_KT_STRIDES(45, 10, 2),      /* gapped */
	HPU_KT_STRIDES(-20, 5, -1),     /* negative */
	HPU_KT_STRIDES(0, 5, 1),        /* broadcast rows */
};

static const char *const op_names[] = { "SUM", "MEAN", "MAX", "MIN", "ARGMAX", "ARGMIN" };

/* Successive launches rotate through the ways of splitting the items. */
static unsigned int split_turn;

static enum hpu_ksplit next_split(void)
{
	return (enum hpu_ksplit)(split_turn++ % HPU_KSPLIT_COUNT);
}

/* in's shape with the masked dims 1: the keepdim shape of out. */
static void out_shape(const struct hpu_ktensor *in, int64_t mask, uint64_t *shape)
{
	for (uint32_t d = 0; d < in->v.ndim; d++)
		shape[d] = mask >> d & 1 ? 1 : in->v.shape[d];
}

/* Column-major strides: an out that is not contiguous. */
static void column_major(uint32_t ndim, const uint64_t *shape, int64_t *strides)
{
	int64_t step = 1;

	for (uint32_t d = 0; d < ndim; d++) {
		strides[d] = step;
		step *= (int64_t)shape[d];
	}
}

static void unravel(const struct hdm_kview *v, uint64_t i, uint64_t *idx)
{
	for (uint32_t d = v->ndim; d-- > 0;) {
		idx[d] = i % v->shape[d];
		i /= v->shape[d];
	}
}

/*
 * The reference, by brute force: each output scans every input element
 * and takes those whose kept coordinates match its own.  The extremum is
 * found first and its first position after, NaN before either.
 */
static void ref_reduce(int64_t op, int64_t mask, const struct hpu_ktensor *in,
		       const struct hpu_ktensor *out, double *want)
{
	uint64_t n_in = hpu_kt_numel(in), n_out = hpu_kt_numel(out), o, i;
	double *vals = hpu_kt_values(in);
	uint64_t oi[HPU_TENSOR_MAX_DIMS], ii[HPU_TENSOR_MAX_DIMS];
	int dim = -1;

	for (int d = 0; d < (int)in->v.ndim; d++)
		if (mask >> d & 1)
			dim = d; /* the ARG ops' one dim */
	for (o = 0; o < n_out; o++) {
		double sum = 0, ext = op == HPU_REDUCE_MAX || op == HPU_REDUCE_ARGMAX ? -INFINITY : INFINITY;
		double at = -1, nan_at = -1;
		uint64_t count = 0;

		unravel(&out->v, o, oi);
		for (int pass = 0; pass < 2; pass++) {
			for (i = 0; i < n_in; i++) {
				bool mine = true;

				unravel(&in->v, i, ii);
				for (uint32_t d = 0; d < in->v.ndim; d++)
					mine &= (mask >> d & 1) || ii[d] == oi[d];
				if (!mine)
					continue;
				if (pass == 0) {
					sum += vals[i];
					count++;
					if (isnan(vals[i]) && nan_at < 0)
						nan_at = dim >= 0 ? (double)ii[dim] : 0;
					ext = op == HPU_REDUCE_MAX || op == HPU_REDUCE_ARGMAX ?
						      fmax(ext, vals[i]) : fmin(ext, vals[i]);
				} else if (at < 0 && vals[i] == ext) {
					at = dim >= 0 ? (double)ii[dim] : 0;
				}
			}
		}
		switch (op) {
		case HPU_REDUCE_SUM: want[o] = sum; break;
		case HPU_REDUCE_MEAN: want[o] = sum / (double)count; break;
		case HPU_REDUCE_MAX: case HPU_REDUCE_MIN: want[o] = nan_at >= 0 ? NAN : ext; break;
		default: want[o] = nan_at >= 0 ? nan_at : at; break;
		}
	}
	free(vals);
}

struct dtypes {
	uint32_t out, in;
};

static const struct dtypes sum_dtypes[] = {
	{ F32, F32 }, { BF16, BF16 }, { F32, BF16 }, { BF16, F32 }, { I64, I32 }, { I64, I64 },
	{ F32, I32 }, { I32, U8 },
};
static const struct dtypes mean_dtypes[] = {
	{ F32, F32 }, { BF16, BF16 }, { F32, BF16 }, { F32, I64 },
};
static const struct dtypes cmp_dtypes[] = {
	{ F32, F32 }, { BF16, BF16 }, { F32, BF16 }, { I32, I32 }, { I64, I32 }, { F32, I64 },
};
static const struct dtypes arg_dtypes[] = {
	{ I64, F32 }, { I32, F32 }, { I64, BF16 }, { I64, I32 }, { I32, I64 },
};

/* One launch: in in layout l, out contiguous or column-major; compares with the reference. */
static void run_reduce(int64_t op, int64_t mask, const struct dtypes *dt, size_t l, uint64_t seed)
{
	struct hpu_ktensor *in = hpu_kt_new(dt->in, 3, SHAPE, in_layouts[l]), *out;
	uint64_t oshape[3];
	int64_t ostrides[3];
	struct hdm_kcall c;
	double *want;

	out_shape(in, mask, oshape);
	column_major(3, oshape, ostrides);
	out = hpu_kt_new(dt->out, 3, oshape, seed & 1 ? ostrides : NULL);
	/* Comparisons see whole numbers in a small range, so ties are common. */
	if (op >= HPU_REDUCE_MAX)
		hpu_kt_fill_whole(in, seed, -3, 3);
	else
		hpu_kt_fill_random(in, seed, -10, 10);
	HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
	c.args[0] = op;
	c.args[1] = mask;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, next_split()) == 0);
	want = malloc(hpu_kt_numel(out) * sizeof(*want));
	ref_reduce(op, mask, in, out, want);
	/* Sums are exact in double then rounded once; sums near 0 get an absolute slack. */
	if (!hpu_kexpect_near(out, want, hpu_ktol(dt->out), hdm_dtype_is_float(dt->out) ? 1e-9 : 0,
			      op_names[op], __LINE__))
		printf("#   mask %lld, out dtype %u, in dtype %u, in layout %zu\n", (long long)mask,
		       dt->out, dt->in, l);
	free(want);
	hpu_kt_free(in);
	hpu_kt_free(out);
}

/* Every mask (ARG ops: each single dim), every dtype pair, every input layout. */
static void run_op(int64_t op, const struct dtypes *dt, size_t ndt)
{
	uint64_t seed = 1;

	for (int64_t mask = 0; mask <= ALL_DIMS; mask++) {
		if (op >= HPU_REDUCE_ARGMAX && mask != 1 && mask != 2 && mask != 4)
			continue;
		for (size_t k = 0; k < ndt; k++)
			for (size_t l = 0; l < HPU_ARRAY_SIZE(in_layouts); l++)
				run_reduce(op, mask, &dt[k], l, seed++);
	}
}

#define RUN_OP(op, dt) run_op(op, dt, HPU_ARRAY_SIZE(dt))

static void test_sum(void) { RUN_OP(HPU_REDUCE_SUM, sum_dtypes); }
static void test_mean(void) { RUN_OP(HPU_REDUCE_MEAN, mean_dtypes); }
static void test_max(void) { RUN_OP(HPU_REDUCE_MAX, cmp_dtypes); }
static void test_min(void) { RUN_OP(HPU_REDUCE_MIN, cmp_dtypes); }
static void test_argmax(void) { RUN_OP(HPU_REDUCE_ARGMAX, arg_dtypes); }
static void test_argmin(void) { RUN_OP(HPU_REDUCE_ARGMIN, arg_dtypes); }

/* One launch over a [2, 5] F32 tensor of given values; out compared exactly. */
static void run_rows(int64_t op, int64_t mask, uint32_t out_dtype, const double *in_vals,
		     const double *want, int line)
{
	struct hpu_ktensor *in = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, 5), NULL), *out;
	uint64_t oshape[2];
	struct hdm_kcall c;

	out_shape(in, mask, oshape);
	out = hpu_kt_new(out_dtype, 2, oshape, NULL);
	hpu_kt_fill(in, in_vals);
	HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
	c.args[0] = op;
	c.args[1] = mask;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, next_split()) == 0);
	hpu_kexpect_near(out, want, 0, 0, op_names[op], line);
	hpu_kt_free(in);
	hpu_kt_free(out);
}

#define ROWS(op, mask, dtype, in, ...) \
	run_rows(HPU_REDUCE_##op, mask, dtype, in, (const double[]){ __VA_ARGS__ }, __LINE__)

static void test_ties_and_nan(void)
{
	static const double ties[] = { 1, 3, 3, 0, 3,
				       0, 0, -2, 7, -2 };
	static const double nans[] = { 1, NAN, 5, NAN, 0,
				       -1, 2, 2, -1, -INFINITY };

	ROWS(ARGMAX, 2, I64, ties, 1, 3);
	ROWS(ARGMIN, 2, I64, ties, 3, 2);
	ROWS(ARGMAX, 1, I32, ties, 0, 0, 0, 1, 0);
	ROWS(ARGMIN, 1, I32, ties, 1, 1, 1, 0, 1);
	/* The first NaN wins MAX, MIN and their ARGs; -inf is an ordinary value. */
	ROWS(ARGMAX, 2, I64, nans, 1, 1);
	ROWS(ARGMIN, 2, I64, nans, 1, 4);
	ROWS(MAX, 2, F32, nans, NAN, 2);
	ROWS(MIN, 2, F32, nans, NAN, -INFINITY);
	ROWS(ARGMAX, 1, I64, nans, 0, 0, 0, 0, 0);
	ROWS(MAX, 1, F32, nans, 1, NAN, 5, NAN, 0);
	ROWS(SUM, 2, F32, nans, NAN, -INFINITY);
	ROWS(MAX, 3, BF16, ties, 7);
	ROWS(MIN, 0, F32, ties, 1, 3, 3, 0, 3, 0, 0, -2, 7, -2);
}

/* Integral in and out stay exact past double's 53 bits and wrap. */
static void test_wide_integers(void)
{
	/* 2^62 + 1 and 2^62 are one value to a double; their sum wraps to INT64_MIN + 1. */
	static const int64_t vals[] = { (1ll << 62) + 1, 1ll << 62, INT64_MIN, INT64_MAX };
	static const struct {
		int64_t op;
		uint32_t out_dtype;
		uint64_t n;
		int64_t want;
	} cases[] = {
		{ HPU_REDUCE_SUM, I64, 2, INT64_MIN + 1 },
		{ HPU_REDUCE_MAX, I64, 2, (1ll << 62) + 1 },
		{ HPU_REDUCE_ARGMIN, I32, 2, 1 },
		{ HPU_REDUCE_SUM, I64, 4, INT64_MIN }, /* wraps twice more */
		{ HPU_REDUCE_MAX, I64, 4, INT64_MAX },
		{ HPU_REDUCE_MIN, I64, 4, INT64_MIN },
		{ HPU_REDUCE_ARGMAX, I64, 4, 3 },
		{ HPU_REDUCE_ARGMIN, I32, 4, 2 },
	};

	for (size_t k = 0; k < HPU_ARRAY_SIZE(cases); k++) {
		struct hpu_ktensor *in = hpu_kt_new(I64, 1, &cases[k].n, NULL);
		struct hpu_ktensor *out = hpu_kt_new(cases[k].out_dtype, 1, HPU_KT_DIMS(1), NULL);
		struct hdm_kcall c;

		memcpy(in->v.base, vals, cases[k].n * sizeof(vals[0]));
		HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
		c.args[0] = cases[k].op;
		c.args[1] = 1;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, HPU_KSPLIT_ONE) == 0);
		if (hpu_kt_get_i(out, 0) != cases[k].want) {
			printf("#   %s of %llu: %lld, want %lld\n", op_names[cases[k].op],
			       (unsigned long long)cases[k].n, (long long)hpu_kt_get_i(out, 0),
			       (long long)cases[k].want);
			hpu_ktest_failed = true;
		}
		hpu_kt_free(in);
		hpu_kt_free(out);
	}
}

/* Empty: the sum of nothing is 0, its mean NaN, its extremum rejected; no outputs, no work. */
static void test_empty(void)
{
	struct hpu_ktensor *in = hpu_kt_new(F32, 2, HPU_KT_DIMS(0, 5), NULL);
	struct hpu_ktensor *out = hpu_kt_new(F32, 2, HPU_KT_DIMS(1, 5), NULL);
	struct hpu_ktensor *none = hpu_kt_new(I64, 2, HPU_KT_DIMS(0, 1), NULL);
	static const double zeros[5], nans[5] = { NAN, NAN, NAN, NAN, NAN };
	struct hdm_kcall c;
	uint64_t items = 1;

	HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
	c.args[1] = 1;
	hpu_kt_fill(out, nans);
	c.args[0] = HPU_REDUCE_SUM;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, HPU_KSPLIT_THREADS) == 0);
	HPU_KEXPECT_NEAR(out, zeros, 0, 0);
	c.args[0] = HPU_REDUCE_MEAN;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, HPU_KSPLIT_SEQ) == 0);
	HPU_KEXPECT_NEAR(out, nans, 0, 0);
	for (int64_t op = HPU_REDUCE_MAX; op <= HPU_REDUCE_ARGMIN; op++) {
		c.args[0] = op;
		c.t[0].dtype = op >= HPU_REDUCE_ARGMAX ? I64 : F32;
		HPU_KEXPECT(hdm_kernel_reduce.check(&c, &items) != 0);
	}
	/* Reducing dim 1 of [0, 5]: no outputs, so even ARGMAX has nothing to refuse. */
	HPU_KCALL(&c, HPU_KERNEL_REDUCE, none, in);
	c.args[1] = 2;
	for (int64_t op = HPU_REDUCE_SUM; op <= HPU_REDUCE_ARGMIN; op++) {
		c.args[0] = op;
		c.t[0].dtype = op == HPU_REDUCE_MEAN ? F32 : I64;
		HPU_KEXPECT(hdm_kernel_reduce.check(&c, &items) == 0 && items == 0);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, HPU_KSPLIT_THREADS) == 0);
	}
	hpu_kt_free(in);
	hpu_kt_free(out);
	hpu_kt_free(none);
}

/* A scalar in (ndim 0) reduces over no dims: a copy. */
static void test_scalar(void)
{
	struct hpu_ktensor *in = hpu_kt_new(BF16, 0, NULL, NULL), *out = hpu_kt_new(F32, 0, NULL, NULL);
	struct hdm_kcall c;

	hpu_kt_set(in, 0, -2.5);
	HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
	for (int64_t op = HPU_REDUCE_SUM; op <= HPU_REDUCE_MIN; op++) {
		c.args[0] = op;
		HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, next_split()) == 0);
		HPU_KEXPECT(hpu_kt_get(out, 0) == -2.5);
	}
	c.args[0] = HPU_REDUCE_ARGMAX;
	c.t[0].dtype = I64;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, HPU_KSPLIT_ONE) != 0);
	hpu_kt_free(in);
	hpu_kt_free(out);
}

struct reject {
	const char *why;
	unsigned int n;
	int64_t op, mask;
	uint32_t out_dtype;
	const uint64_t *out_shape; /* NULL: the keepdim shape */
	uint32_t out_ndim;
	int64_t a2;
};

static const struct reject rejects[] = {
	{ "one tensor", 1, HPU_REDUCE_SUM, 1, F32, NULL, 3, 0 },
	{ "three tensors", 3, HPU_REDUCE_SUM, 1, F32, NULL, 3, 0 },
	{ "op -1", 2, -1, 1, F32, NULL, 3, 0 },
	{ "op 6", 2, 6, 1, F32, NULL, 3, 0 },
	{ "mask bit 3 of a 3-d in", 2, HPU_REDUCE_SUM, 8, F32, NULL, 3, 0 },
	{ "negative mask", 2, HPU_REDUCE_SUM, -1, F32, NULL, 3, 0 },
	{ "reduced dim not 1 (no keepdim)", 2, HPU_REDUCE_SUM, 1, F32, HPU_KT_DIMS(4, 5), 2, 0 },
	{ "reduced dim kept", 2, HPU_REDUCE_SUM, 1, F32, HPU_KT_DIMS(3, 4, 5), 3, 0 },
	{ "kept dim changed", 2, HPU_REDUCE_MAX, 1, F32, HPU_KT_DIMS(1, 4, 4), 3, 0 },
	{ "out ndim 4", 2, HPU_REDUCE_SUM, 1, F32, HPU_KT_DIMS(1, 4, 5, 1), 4, 0 },
	{ "argmax of two dims", 2, HPU_REDUCE_ARGMAX, 3, I64, NULL, 3, 0 },
	{ "argmin of no dim", 2, HPU_REDUCE_ARGMIN, 0, I64, NULL, 3, 0 },
	{ "argmax into F32", 2, HPU_REDUCE_ARGMAX, 1, F32, NULL, 3, 0 },
	{ "argmin into U8", 2, HPU_REDUCE_ARGMIN, 1, U8, NULL, 3, 0 },
	{ "mean into I64", 2, HPU_REDUCE_MEAN, 1, I64, NULL, 3, 0 },
	{ "a2 set", 2, HPU_REDUCE_SUM, 1, F32, NULL, 3, 1 },
};

static void test_rejections(void)
{
	for (size_t r = 0; r < HPU_ARRAY_SIZE(rejects); r++) {
		const struct reject *rj = &rejects[r];
		struct hpu_ktensor *in = hpu_kt_new(F32, 3, SHAPE, NULL), *out, *extra;
		uint64_t oshape[3], items;
		struct hdm_kcall c;
		double *before;

		out_shape(in, rj->mask & ALL_DIMS, oshape);
		out = hpu_kt_new(rj->out_dtype, rj->out_shape ? rj->out_ndim : 3,
				 rj->out_shape ? rj->out_shape : oshape, NULL);
		extra = hpu_kt_new(F32, 3, SHAPE, NULL);
		hpu_kt_fill_random(in, r, -1, 1);
		hpu_kt_fill_random(out, r + 1, -1, 1);
		before = hpu_kt_values(out);
		hpu_kcall_init(&c, HPU_KERNEL_REDUCE, rj->n, (struct hpu_ktensor *[]){ out, in, extra });
		c.args[0] = rj->op;
		c.args[1] = rj->mask;
		c.args[2] = rj->a2;
		if (hdm_kernel_reduce.check(&c, &items) == 0) {
			printf("#   accepted: %s\n", rj->why);
			hpu_ktest_failed = true;
		}
		HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, HPU_KSPLIT_ONE) != 0);
		HPU_KEXPECT_NEAR(out, before, 0, 0);
		free(before);
		hpu_kt_free(in);
		hpu_kt_free(out);
		hpu_kt_free(extra);
	}
}

/* Each split gives the bytes one range gives: float sums in a fixed order. */
static void test_split_invariance(void)
{
	static const int64_t masks[] = { 1, 2, 3, 0 };
	static const uint64_t shape[] = { 37, 70 };

	for (int64_t op = HPU_REDUCE_SUM; op <= HPU_REDUCE_ARGMIN; op++) {
		for (size_t m = 0; m < HPU_ARRAY_SIZE(masks); m++) {
			struct hpu_ktensor *in = hpu_kt_new(F32, 2, shape, HPU_KT_STRIDES(1, 37));
			struct hpu_ktensor *out[HPU_KSPLIT_COUNT];
			uint64_t oshape[2];
			struct hdm_kcall c;

			if (op >= HPU_REDUCE_ARGMAX && (masks[m] == 0 || masks[m] == 3)) {
				hpu_kt_free(in);
				continue;
			}
			hpu_kt_fill_random(in, (uint64_t)(op * 10 + m), -1, 1);
			out_shape(in, masks[m], oshape);
			for (enum hpu_ksplit sp = 0; sp < HPU_KSPLIT_COUNT; sp++) {
				out[sp] = hpu_kt_new(op >= HPU_REDUCE_ARGMAX ? I64 : F32, 2, oshape, NULL);
				HPU_KCALL(&c, HPU_KERNEL_REDUCE, out[sp], in);
				c.args[0] = op;
				c.args[1] = masks[m];
				HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, sp) == 0);
				if (sp)
					HPU_KEXPECT_SAME(out[sp], out[0]);
			}
			for (enum hpu_ksplit sp = 0; sp < HPU_KSPLIT_COUNT; sp++)
				hpu_kt_free(out[sp]);
			hpu_kt_free(in);
		}
	}
}

/* Every op and mask: contiguous and scattered operands give the same bytes (sums in index order). */
static void test_layouts_agree(void)
{
	struct hpu_ktensor *in = hpu_kt_new(F32, 3, HPU_KT_DIMS(5, 7, 9), NULL);

	hpu_kt_fill_random(in, 3, -2, 2);
	for (int64_t op = HPU_REDUCE_SUM; op <= HPU_REDUCE_ARGMIN; op++) {
		for (int64_t mask = 1; mask <= ALL_DIMS; mask++) {
			bool arg = op >= HPU_REDUCE_ARGMAX;
			uint64_t shape[3];
			struct hpu_ktensor *out;
			struct hdm_kcall c;

			if (arg && (mask & (mask - 1))) /* one dim */
				continue;
			out_shape(in, mask, shape);
			out = hpu_kt_new(arg ? I64 : F32, 3, shape, NULL);
			HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
			c.args[0] = op;
			c.args[1] = mask;
			HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_reduce, &c);
			hpu_kt_free(out);
		}
	}
	hpu_kt_free(in);
}

/* ---- bias-add's gradient ---- */

#define GRAD_N 6
#define GRAD_D 5

/* y = x + bias over [N, D], bias [1, D] broadcast along the batch dim; loss = sum(y * w). */
struct bias_add {
	struct hpu_ktensor *x, *bias, *y, *w;
};

static double bias_add_loss(void *ctx)
{
	struct bias_add *b = ctx;
	struct hdm_kcall c;
	double loss = 0;

	HPU_KCALL(&c, HPU_KERNEL_BINARY, b->y, b->x, b->bias);
	/* The bias as an operand of y's shape: stride 0 along the batch. */
	c.t[2].shape[0] = GRAD_N;
	c.t[2].strides[0] = 0;
	c.args[0] = HPU_BINARY_ADD;
	c.scalars[0] = 1;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_binary, &c, HPU_KSPLIT_ONE) == 0);
	for (uint64_t i = 0; i < GRAD_N * GRAD_D; i++)
		loss += hpu_kt_get(b->y, i) * hpu_kt_get(b->w, i);
	return loss;
}

static void test_bias_add_gradient(void)
{
	struct bias_add b = {
		hpu_kt_new(F32, 2, HPU_KT_DIMS(GRAD_N, GRAD_D), NULL),
		hpu_kt_new(F32, 2, HPU_KT_DIMS(1, GRAD_D), NULL),
		hpu_kt_new(F32, 2, HPU_KT_DIMS(GRAD_N, GRAD_D), NULL),
		hpu_kt_new(F32, 2, HPU_KT_DIMS(GRAD_N, GRAD_D), NULL),
	};
	struct hpu_ktensor *grad_bias = hpu_kt_new(F32, 2, HPU_KT_DIMS(1, GRAD_D), NULL);
	struct hpu_ktensor *grad_x = hpu_kt_new(F32, 2, HPU_KT_DIMS(GRAD_N, GRAD_D), NULL);
	struct hdm_kcall c;

	hpu_kt_fill_random(b.x, 1, -2, 2);
	hpu_kt_fill_random(b.bias, 2, -2, 2);
	hpu_kt_fill_random(b.w, 3, -1, 1); /* grad_y: d loss / d y */
	/* The backward: grad_bias = sum of grad_y over the batch, grad_x = grad_y. */
	HPU_KCALL(&c, HPU_KERNEL_REDUCE, grad_bias, b.w);
	c.args[0] = HPU_REDUCE_SUM;
	c.args[1] = 1;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, HPU_KSPLIT_THREADS) == 0);
	HPU_KCALL(&c, HPU_KERNEL_UNARY, grad_x, b.w);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_unary, &c, HPU_KSPLIT_THREADS) == 0);
	hpu_kgradcheck(b.bias, bias_add_loss, &b, grad_bias, 1e-2, 1e-3, 1e-4, "bias", __LINE__);
	hpu_kgradcheck(b.x, bias_add_loss, &b, grad_x, 1e-2, 1e-3, 1e-4, "x", __LINE__);
	hpu_kt_free(b.x);
	hpu_kt_free(b.bias);
	hpu_kt_free(b.y);
	hpu_kt_free(b.w);
	hpu_kt_free(grad_bias);
	hpu_kt_free(grad_x);
}

/* The MNIST-sized sums: a bias gradient (over the batch) and row sums, [200, 784] fp32. */
static void test_mnist_sized(void)
{
	static const int64_t masks[] = { 1, 2, 3 };
	struct hpu_ktensor *in = hpu_kt_new(F32, 2, HPU_KT_DIMS(200, 784), NULL);

	hpu_kt_fill_random(in, 7, -1, 1);
	printf("# [200, 784] fp32 SUM on one thread:");
	for (size_t m = 0; m < HPU_ARRAY_SIZE(masks); m++) {
		uint64_t oshape[2], items = 0;
		struct hpu_ktensor *out;
		struct timespec t0, t1;
		struct hdm_kcall c;
		double *want;

		out_shape(in, masks[m], oshape);
		out = hpu_kt_new(F32, 2, oshape, NULL);
		HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
		c.args[1] = masks[m];
		HPU_KEXPECT(hdm_kernel_reduce.check(&c, &items) == 0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		hdm_kernel_reduce.run(&c, 0, items);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf(" mask %lld %.2f ms%s", (long long)masks[m],
		       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
		       m + 1 < HPU_ARRAY_SIZE(masks) ? "," : "\n");
		want = malloc(items * sizeof(*want));
		ref_reduce(HPU_REDUCE_SUM, masks[m], in, out, want);
		HPU_KEXPECT_NEAR(out, want, HPU_KTOL_F32, 1e-9);
		free(want);
		hpu_kt_free(out);
	}
	hpu_kt_free(in);
}

/*
 * Walks longer than HPU_REDUCE_CHUNK are an item per chunk.  SUM adds the
 * chunks' double partials in order: exactly a reference summed so, however
 * the items are split.  MAX, MIN and their ARGs are one walk's across the
 * chunks: a later chunk's equal maximum loses, a larger one wins, the first
 * NaN stays.
 */
#define CH_N (2ull * HPU_REDUCE_CHUNK + 77)

static void reduce_rows(struct hpu_ktensor *out, struct hpu_ktensor *in, int64_t op,
			enum hpu_ksplit split)
{
	struct hdm_kcall c;
	uint64_t items = 0;

	HPU_KCALL(&c, HPU_KERNEL_REDUCE, out, in);
	c.args[0] = op;
	c.args[1] = 2;
	HPU_KEXPECT(hdm_kernel_reduce.check(&c, &items) == 0 && items == 2 * 3);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_reduce, &c, split) == 0);
}

static void test_chunked(void)
{
	struct hpu_ktensor *in = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, CH_N), NULL);
	struct hpu_ktensor *out = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, 1), NULL);
	struct hpu_ktensor *first = hpu_kt_new(F32, 2, HPU_KT_DIMS(2, 1), NULL);
	struct hpu_ktensor *arg = hpu_kt_new(I64, 2, HPU_KT_DIMS(2, 1), NULL);
	float *v = (float *)in->buf;
	double want[2];
	unsigned int k;

	hpu_kt_fill_random(in, 11, -1, 1);
	for (unsigned int r = 0; r < 2; r++) {
		want[r] = 0;
		for (uint64_t ch = 0; ch * HPU_REDUCE_CHUNK < CH_N; ch++) {
			double part = 0;

			for (uint64_t i = ch * HPU_REDUCE_CHUNK;
			     i < CH_N && i < (ch + 1) * HPU_REDUCE_CHUNK; i++)
				part += v[r * CH_N + i];
			want[r] += part;
		}
		want[r] = (float)want[r];
	}
	reduce_rows(first, in, HPU_REDUCE_SUM, 0);
	HPU_KEXPECT_NEAR(first, want, 0, 0);
	for (k = 1; k < HPU_KSPLIT_COUNT; k++) {
		reduce_rows(out, in, HPU_REDUCE_SUM, (enum hpu_ksplit)k);
		HPU_KEXPECT_SAME(out, first);
	}

	memset(in->buf, 0, in->size);
	v[10] = 5;
	v[HPU_REDUCE_CHUNK + 3] = 5;
	v[2 * HPU_REDUCE_CHUNK + 1] = 6;
	v[CH_N + 7] = 9;
	v[CH_N + HPU_REDUCE_CHUNK + 5] = NAN;
	v[CH_N + 2 * HPU_REDUCE_CHUNK + 2] = NAN;
	reduce_rows(arg, in, HPU_REDUCE_ARGMAX, next_split());
	HPU_KEXPECT_NEAR(arg, ((const double[]){ 2 * HPU_REDUCE_CHUNK + 1,
						 HPU_REDUCE_CHUNK + 5 }), 0, 0);
	reduce_rows(out, in, HPU_REDUCE_MAX, next_split());
	HPU_KEXPECT_NEAR(out, ((const double[]){ 6, NAN }), 0, 0);
	v[10] = 7;
	reduce_rows(arg, in, HPU_REDUCE_ARGMAX, next_split());
	HPU_KEXPECT_NEAR(arg, ((const double[]){ 10, HPU_REDUCE_CHUNK + 5 }), 0, 0);
	reduce_rows(arg, in, HPU_REDUCE_ARGMIN, next_split());
	HPU_KEXPECT_NEAR(arg, ((const double[]){ 0, HPU_REDUCE_CHUNK + 5 }), 0, 0);
	hpu_kt_free(in);
	hpu_kt_free(out);
	hpu_kt_free(first);
	hpu_kt_free(arg);
}

static const struct hpu_ktest_case cases[] = {
	{ "SUM: every mask, layout and dtype", test_sum },
	{ "MEAN: every mask, layout and dtype", test_mean },
	{ "MAX: every mask, layout and dtype", test_max },
	{ "MIN: every mask, layout and dtype", test_min },
	{ "ARGMAX: every dim, layout and dtype", test_argmax },
	{ "ARGMIN: every dim, layout and dtype", test_argmin },
	{ "ties take the first, NaN wins", test_ties_and_nan },
	{ "int64 exact and wrapping", test_wide_integers },
	{ "empty tensors", test_empty },
	{ "ndim 0", test_scalar },
	{ "check() rejections", test_rejections },
	{ "one range, split and threads give the same bytes", test_split_invariance },
	{ "contiguous and scattered layouts give the same bytes", test_layouts_agree },
	{ "bias-add gradient: finite differences vs REDUCE SUM", test_bias_add_gradient },
	{ "[200, 784] sums", test_mnist_sized },
	{ "walks past HPU_REDUCE_CHUNK: chunk partials in order, extremes as one walk",
	  test_chunked },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
