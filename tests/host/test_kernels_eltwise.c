/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the elementwise kernels (UNARY, BINARY, WHERE, FILL):
 * every op against a naive reference in double, over broadcast, strided,
 * transposed and negative layouts and the dtype combinations that matter;
 * casts; the integral corner cases; every rejection; and the same bytes
 * whichever way the items are split.  Prints TAP.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hdm_kernel_harness.h"

/* Most launches run on a [3, 4, 5] tensor in one of these layouts. */
#define SHAPE HPU_KT_DIMS(3, 4, 5)

struct layout {
	const char *name;
	const int64_t *strides; /* NULL: contiguous */
	bool output_ok;         /* an output may not overlap itself */
};

static const struct layout layouts[] = {
	{ "contiguous", NULL, true },
	{ "transposed", HPU_KT_STRIDES(1, 3, 12), true },
	{ "gapped", HPU_KT_STRIDES(45, 10, 2), true },
	{ "negative", HPU_KT_STRIDES(-20, 5, -1), true },
	{ "broadcast rows", HPU_KT_STRIDES(0, 5, 1), false },
	{ "broadcast middle", HPU_KT_STRIDES(5, 0, 1), false },
	{ "broadcast all", HPU_KT_STRIDES(0, 0, 0), false },
};

#define OUT_LAYOUTS 4 /* the first ones, those an output may have */

/* Successive launches rotate through the ways of splitting the items. */
static unsigned int split_turn;

static enum hpu_ksplit next_split(void)
{
	return (enum hpu_ksplit)(split_turn++ % HPU_KSPLIT_COUNT);
}

/* ---- one op of a kernel against its reference ---- */

struct elt_op {
	const char *name;
	uint32_t kernel;
	int64_t a0, a1;
	double s0, s1;
	double lo, hi; /* inputs are drawn from [lo, hi) */
	bool whole;    /* whole numbers only: comparisons then see ties */
	/* The exact result; out_dtype only for what an integral out changes. */
	double (*ref)(const struct elt_op *op, uint32_t out_dtype, const double *x);
};

static const struct hdm_kernel_def *def_of(uint32_t kernel)
{
	switch (kernel) {
	case HPU_KERNEL_UNARY: return &hdm_kernel_unary;
	case HPU_KERNEL_BINARY: return &hdm_kernel_binary;
	case HPU_KERNEL_WHERE: return &hdm_kernel_where;
	default: return &hdm_kernel_fill;
	}
}

static unsigned int inputs_of(const struct elt_op *op)
{
	switch (op->kernel) {
	case HPU_KERNEL_UNARY: return 1;
	case HPU_KERNEL_BINARY: return 2 - (unsigned int)op->a1;
	case HPU_KERNEL_WHERE: return 3;
	default: return 0;
	}
}

static void fill_inputs(struct hpu_ktensor *t, const struct elt_op *op, uint64_t seed)
{
	if (op->whole)
		hpu_kt_fill_whole(t, seed, op->lo, op->hi);
	else
		hpu_kt_fill_random(t, seed, op->lo, op->hi);
}

/* What a store of the reference's exact result to dtype must give, within the dtype's tolerance. */
static double expected(uint32_t dtype, double v)
{
	return hdm_dtype_is_float(dtype) ? v : hpu_kround(dtype, v);
}

static struct hpu_ktensor *tensor_in(uint32_t dtype, size_t layout)
{
	return hpu_kt_new(dtype, 3, SHAPE, layouts[layout].strides);
}

/*
 * One launch of op: out in layout out_layout, input j in layout
 * in_layout + j (so a and b differ); WHERE's cond is U8 in {0, 1}.
 */
static void run_op(const struct elt_op *op, uint32_t out_dtype, const uint32_t *in_dtypes,
		   size_t in_layout, size_t out_layout, uint64_t seed)
{
	struct hpu_ktensor *t[1 + 3];
	unsigned int nin = inputs_of(op), j;
	double *vals[3], *want, x[3];
	uint64_t i, n;
	struct hdm_kcall c;

	t[0] = tensor_in(out_dtype, out_layout);
	for (j = 0; j < nin; j++) {
		bool cond = op->kernel == HPU_KERNEL_WHERE && j == 0;

		t[1 + j] = tensor_in(cond ? HPU_DTYPE_U8 : in_dtypes[j],
				     (in_layout + j) % HPU_ARRAY_SIZE(layouts));
		if (cond)
			hpu_kt_fill_random(t[1 + j], seed + j, 0, 2);
		else
			fill_inputs(t[1 + j], op, seed + j);
		vals[j] = hpu_kt_values(t[1 + j]);
	}
	hpu_kcall_init(&c, op->kernel, 1 + nin, t);
	c.args[0] = op->a0;
	c.args[1] = op->a1;
	c.scalars[0] = op->s0;
	c.scalars[1] = op->s1;
	HPU_KEXPECT(hpu_krun(def_of(op->kernel), &c, next_split()) == 0);

	n = hpu_kt_numel(t[0]);
	want = malloc(n * sizeof(*want));
	for (i = 0; i < n; i++) {
		for (j = 0; j < nin; j++)
			x[j] = vals[j][i];
		want[i] = expected(out_dtype, op->ref(op, out_dtype, x));
	}
	if (!hpu_kexpect_near(t[0], want, hpu_ktol(out_dtype), 1e-12, op->name, __LINE__))
		printf("#   out dtype %u, input dtypes %u %u %u, input layout %s, out layout %s\n",
		       out_dtype, in_dtypes[0], nin > 1 ? in_dtypes[1] : 0, nin > 2 ? in_dtypes[2] : 0,
		       layouts[in_layout].name, layouts[out_layout].name);
	free(want);
	for (j = 0; j < nin; j++)
		free(vals[j]);
	for (j = 0; j <= nin; j++)
		hpu_kt_free(t[j]);
}

/* Dtypes of one launch: out, then the inputs. */
struct dtypes {
	uint32_t out, in[3];
};

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64
#define U8 HPU_DTYPE_U8

/* Float outs: the transcendental ops, and every op in the float domain. */
static const struct dtypes float_dtypes[] = {
	{ F32, { F32, F32, F32 } },  { BF16, { BF16, BF16, BF16 } }, { BF16, { F32, F32, F32 } },
	{ F32, { BF16, F32, BF16 } }, { F32, { I32, F32, I64 } },
};

/* Combinations for ops that take any dtype: both domains, casts on the way out. */
static const struct dtypes any_dtypes[] = {
	{ F32, { F32, F32, F32 } }, { BF16, { BF16, BF16, BF16 } }, { F32, { BF16, I32, F32 } },
	{ I32, { I32, I32, I32 } }, { I64, { I64, I32, I64 } },     { I64, { I32, U8, I32 } },
	{ I32, { F32, F32, F32 } }, { F32, { I64, I64, I32 } },     { U8, { I32, I32, U8 } },
};

/* Every dtype combination, each input layout, the outputs' layouts in turn. */
static void run_op_all(const struct elt_op *op, const struct dtypes *dt, size_t ndt)
{
	uint64_t seed = 1;

	for (size_t k = 0; k < ndt; k++)
		for (size_t l = 0; l < HPU_ARRAY_SIZE(layouts); l++)
			run_op(op, dt[k].out, dt[k].in, l, l % OUT_LAYOUTS, seed++);
}

/* ---- references, written apart from the kernels' own formulas ---- */

static double ref_unary(const struct elt_op *op, uint32_t out_dtype, const double *x)
{
	double v = x[0], k = sqrt(2 / M_PI);

	(void)out_dtype;
	switch (op->a0) {
	case HPU_UNARY_COPY: return v;
	case HPU_UNARY_NEG: return 0 - v;
	case HPU_UNARY_ABS: return v < 0 ? -v : v;
	case HPU_UNARY_RELU: return fmax(v, 0);
	case HPU_UNARY_GELU: return v * 0.5 * erfc(-v / sqrt(2));
	case HPU_UNARY_GELU_TANH: return v / (1 + exp(-2 * k * (v + 0.044715 * pow(v, 3))));
	case HPU_UNARY_TANH: return sinh(v) / cosh(v);
	case HPU_UNARY_SIGMOID: return 0.5 + 0.5 * tanh(v / 2);
	case HPU_UNARY_EXP: return pow(M_E, v);
	case HPU_UNARY_LOG: return log2(v) * M_LN2;
	case HPU_UNARY_SQRT: return pow(v, 0.5);
	case HPU_UNARY_RSQRT: return pow(v, -0.5);
	case HPU_UNARY_RECIPROCAL: return pow(v, -1);
	case HPU_UNARY_SILU: return v * (0.5 + 0.5 * tanh(v / 2));
	case HPU_UNARY_SIN: return cos(v - M_PI_2);
	case HPU_UNARY_COS: return sin(v + M_PI_2);
	case HPU_UNARY_ERF: return 1 - erfc(v);
	default: return exp(op->s0 * log(v));
	}
}

static double ref_binary(const struct elt_op *op, uint32_t out_dtype, const double *x)
{
	double a = x[0], b = op->a1 ? op->s1 : x[1];

	switch (op->a0) {
	case HPU_BINARY_ADD: return a + op->s0 * b;
	case HPU_BINARY_SUB: return a + -op->s0 * b;
	case HPU_BINARY_MUL: return a * b;
	case HPU_BINARY_DIV: return hdm_dtype_is_float(out_dtype) ? a / b : trunc(a / b);
	case HPU_BINARY_MAX: return fmax(a, b);
	case HPU_BINARY_MIN: return fmin(a, b);
	case HPU_BINARY_POW: return pow(a, b);
	case HPU_BINARY_EQ: return !(a < b || a > b);
	case HPU_BINARY_NE: return a < b || a > b;
	case HPU_BINARY_LT: return !(a >= b);
	case HPU_BINARY_LE: return !(a > b);
	case HPU_BINARY_GT: return b < a;
	default: return b <= a;
	}
}

static double ref_where(const struct elt_op *op, uint32_t out_dtype, const double *x)
{
	(void)op;
	(void)out_dtype;
	return x[0] ? x[1] : x[2];
}

static double ref_fill(const struct elt_op *op, uint32_t out_dtype, const double *x)
{
	(void)x;
	(void)out_dtype;
	return op->s0;
}

/* ---- the op tables ---- */

#define UNARY(op, lo, hi) \
	{ #op, HPU_KERNEL_UNARY, HPU_UNARY_##op, 0, 2.5, 0, lo, hi, false, ref_unary }

/* COPY, NEG, ABS and RELU take any dtypes; the others want a float out. */
static const struct elt_op unary_any_ops[] = {
	UNARY(COPY, -50, 50), UNARY(NEG, -50, 50), UNARY(ABS, -50, 50), UNARY(RELU, -50, 50),
};

static const struct elt_op unary_float_ops[] = {
	UNARY(GELU, -5, 5),     UNARY(GELU_TANH, -5, 5), UNARY(TANH, -4, 4),
	UNARY(SIGMOID, -8, 8),  UNARY(EXP, -5, 5),       UNARY(LOG, 1, 9),
	UNARY(SQRT, 1, 9),      UNARY(RSQRT, 1, 9),      UNARY(RECIPROCAL, 1, 9),
	UNARY(POW_SCALAR, 1, 9), UNARY(SILU, -8, 8),     UNARY(SIN, -7, 7),
	UNARY(COS, -7, 7),      UNARY(ERF, -3, 3),
};

/* Whole numbers, so integral and float domains agree and comparisons tie. */
#define BINARY(op, lo, hi) \
	{ #op, HPU_KERNEL_BINARY, HPU_BINARY_##op, 0, 1, 0, lo, hi, true, ref_binary }

static const struct elt_op binary_ops[] = {
	BINARY(ADD, -20, 20), BINARY(SUB, -20, 20), BINARY(MUL, -20, 20), BINARY(DIV, 1, 9),
	BINARY(MAX, -4, 4),   BINARY(MIN, -4, 4),   BINARY(POW, 1, 4),    BINARY(EQ, -2, 2),
	BINARY(NE, -2, 2),    BINARY(LT, -2, 2),    BINARY(LE, -2, 2),    BINARY(GT, -2, 2),
	BINARY(GE, -2, 2),
};

/* Fractions and negative bases: the float domain only. */
static const struct elt_op binary_float_ops[] = {
	{ "fractional DIV", HPU_KERNEL_BINARY, HPU_BINARY_DIV, 0, 1, 0, -3, 3, false, ref_binary },
	{ "fractional POW", HPU_KERNEL_BINARY, HPU_BINARY_POW, 0, 1, 0, 0.5, 2, false, ref_binary },
	{ "fractional MAX", HPU_KERNEL_BINARY, HPU_BINARY_MAX, 0, 1, 0, -3, 3, false, ref_binary },
	{ "fractional LT", HPU_KERNEL_BINARY, HPU_BINARY_LT, 0, 1, 0, -3, 3, false, ref_binary },
};

static const struct elt_op alpha_ops[] = {
	{ "ADD alpha -3", HPU_KERNEL_BINARY, HPU_BINARY_ADD, 0, -3, 0, -20, 20, true, ref_binary },
	{ "SUB alpha 2", HPU_KERNEL_BINARY, HPU_BINARY_SUB, 0, 2, 0, -20, 20, true, ref_binary },
	{ "ADD alpha 0.25", HPU_KERNEL_BINARY, HPU_BINARY_ADD, 0, 0.25, 0, -20, 20, false, ref_binary },
};

static const struct elt_op scalar_ops[] = {
	{ "ADD scalar 3", HPU_KERNEL_BINARY, HPU_BINARY_ADD, 1, 1, 3, -20, 20, true, ref_binary },
	{ "SUB scalar 1.5 alpha 2", HPU_KERNEL_BINARY, HPU_BINARY_SUB, 1, 2, 1.5, -20, 20, true,
	  ref_binary },
	{ "MUL scalar -0.5", HPU_KERNEL_BINARY, HPU_BINARY_MUL, 1, 1, -0.5, -20, 20, false, ref_binary },
	{ "DIV scalar 4", HPU_KERNEL_BINARY, HPU_BINARY_DIV, 1, 1, 4, -20, 20, true, ref_binary },
	{ "POW scalar 2", HPU_KERNEL_BINARY, HPU_BINARY_POW, 1, 1, 2, -5, 5, true, ref_binary },
	{ "GT scalar 0", HPU_KERNEL_BINARY, HPU_BINARY_GT, 1, 1, 0, -2, 2, true, ref_binary },
	{ "EQ scalar 1", HPU_KERNEL_BINARY, HPU_BINARY_EQ, 1, 1, 1, -2, 2, true, ref_binary },
};

static const struct elt_op where_op = {
	"where", HPU_KERNEL_WHERE, 0, 0, 0, 0, -50, 50, true, ref_where,
};

static const struct elt_op fill_ops[] = {
	{ "fill 2.75", HPU_KERNEL_FILL, 0, 0, 2.75, 0, 0, 0, false, ref_fill },
	{ "fill -7", HPU_KERNEL_FILL, 0, 0, -7, 0, 0, 0, false, ref_fill },
};

#define RUN_TABLE(ops, dt)                                                               \
	for (size_t o = 0; o < HPU_ARRAY_SIZE(ops); o++)                                   \
		run_op_all(&ops[o], dt, HPU_ARRAY_SIZE(dt))

static void test_unary_any(void) { RUN_TABLE(unary_any_ops, any_dtypes); }
static void test_unary_float(void) { RUN_TABLE(unary_float_ops, float_dtypes); }
static void test_binary(void) { RUN_TABLE(binary_ops, any_dtypes); }
static void test_binary_float(void) { RUN_TABLE(binary_float_ops, float_dtypes); }
static void test_alpha(void) { RUN_TABLE(alpha_ops, any_dtypes); }
static void test_scalar_b(void) { RUN_TABLE(scalar_ops, any_dtypes); }
static void test_where(void) { run_op_all(&where_op, any_dtypes, HPU_ARRAY_SIZE(any_dtypes)); }
static void test_fill(void) { RUN_TABLE(fill_ops, any_dtypes); }

/* ---- exact cases: casts and integral corners ---- */

/* A launch on 1-d tensors of given values; compares out exactly (NaN matching NaN). */
static void run_exact(uint32_t kernel, int64_t a0, int64_t a1, double s1, uint32_t out_dtype,
		      uint32_t a_dtype, uint32_t b_dtype, const double *a, const double *b,
		      const double *want, uint64_t n, int line)
{
	struct hpu_ktensor *out = hpu_kt_new(out_dtype, 1, &n, NULL);
	struct hpu_ktensor *ta = hpu_kt_new(a_dtype, 1, &n, NULL);
	struct hpu_ktensor *tb = b ? hpu_kt_new(b_dtype, 1, &n, NULL) : NULL;
	struct hdm_kcall c;

	hpu_kt_fill(ta, a);
	if (tb) {
		hpu_kt_fill(tb, b);
		HPU_KCALL(&c, kernel, out, ta, tb);
	} else {
		HPU_KCALL(&c, kernel, out, ta);
	}
	c.args[0] = a0;
	c.args[1] = a1;
	c.scalars[0] = 1;
	c.scalars[1] = s1;
	HPU_KEXPECT(hpu_krun(def_of(kernel), &c, next_split()) == 0);
	hpu_kexpect_near(out, want, 0, 0, "out", line);
	hpu_kt_free(out);
	hpu_kt_free(ta);
	hpu_kt_free(tb);
}

#define CAST(out_dtype, in_dtype, in, want)                                               \
	run_exact(HPU_KERNEL_UNARY, HPU_UNARY_COPY, 0, 0, out_dtype, in_dtype, 0, in, NULL, want, \
		  HPU_ARRAY_SIZE(in), __LINE__)

static void test_casts(void)
{
	/* bf16 keeps 8 significant bits: 1 + 2^-8 is a tie, to even (1); 1 + 3 * 2^-8 to 1 + 2^-6. */
	static const double f32_in[] = { 1 + 0x1p-8, 1 + 3 * 0x1p-8, -(1 + 0x1p-8), 1 + 0x1p-8 + 0x1p-20,
					 0x1.ffp127, -0.0, INFINITY, NAN, 3.0 };
	static const double f32_bf16[] = { 1, 1 + 0x1p-6, -1, 1 + 0x1p-7, INFINITY, -0.0, INFINITY,
					   NAN, 3.0 };
	/* Toward zero, to every integral dtype; U8 is a bool. */
	static const double trunc_in[] = { 2.7, -2.7, 0.5, -0.5, 1e9, -1e9, 0 };
	static const double trunc_want[] = { 2, -2, 0, 0, 1e9, -1e9, 0 };
	static const double bool_want[] = { 1, 1, 1, 1, 1, 1, 0 };
	static const double i64_in[] = { 0x1p62, -0x1p62, 7, -1 };
	static const double i64_u8[] = { 1, 1, 1, 1 };
	static const double bf16_in[] = { 0x1.fep-100, -3.5, 65280 };
	struct hpu_ktensor *big, *copy;
	uint64_t n = 1;
	struct hdm_kcall c;

	CAST(BF16, F32, f32_in, f32_bf16);
	CAST(F32, BF16, bf16_in, bf16_in);
	CAST(BF16, BF16, bf16_in, bf16_in);
	CAST(I32, F32, trunc_in, trunc_want);
	CAST(I64, F32, trunc_in, trunc_want);
	CAST(I32, BF16, bf16_in, ((double[]){ 0, -3, 65280 }));
	CAST(U8, F32, trunc_in, bool_want);
	CAST(I32, I64, i64_in, ((double[]){ 0, 0, 7, -1 }));
	CAST(U8, I64, i64_in, i64_u8);
	CAST(F32, U8, i64_u8, i64_u8);

	/* int64 to int64 stays exact past double's 53 bits. */
	big = hpu_kt_new(I64, 1, &n, NULL);
	copy = hpu_kt_new(I64, 1, &n, NULL);
	memcpy(big->v.base, &(int64_t){ (1ll << 62) + 1 }, 8);
	HPU_KCALL(&c, HPU_KERNEL_UNARY, copy, big);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_unary, &c, HPU_KSPLIT_ONE) == 0);
	HPU_KEXPECT(hpu_kt_get_i(copy, 0) == (1ll << 62) + 1);
	hpu_kt_free(big);
	hpu_kt_free(copy);
}

/* A COPY to its own dtype moves bits, signaling NaNs too, whatever the layouts. */
static void test_copy_keeps_bits(void)
{
	/* Signaling NaNs of both signs, a NaN with a payload, -0, the least subnormal. */
	static const uint32_t f32[] = { 0x7f800001, 0xff800123, 0x7fc01234, 0x80000000, 1, 0x3f800000 };
	static const uint16_t bf16[] = { 0x7f81, 0xff85, 0x7fc3, 0x8000, 1, 0x3f80 };
	const struct { uint32_t dtype; const void *bits; } cases[] = { { F32, f32 }, { BF16, bf16 } };

	for (size_t k = 0; k < HPU_ARRAY_SIZE(cases); k++) {
		unsigned int size = hdm_dtype_size(cases[k].dtype);

		for (enum hpu_ksplit sp = 0; sp < HPU_KSPLIT_COUNT; sp++) {
			/* [2, 3] read column-major, written row-major from the end. */
			struct hpu_ktensor *in = hpu_kt_new(cases[k].dtype, 2, HPU_KT_DIMS(2, 3),
							    HPU_KT_STRIDES(1, 2));
			struct hpu_ktensor *out = hpu_kt_new(cases[k].dtype, 2, HPU_KT_DIMS(2, 3),
							     HPU_KT_STRIDES(-3, -1));
			struct hdm_kcall c;

			for (uint64_t i = 0; i < 6; i++)
				memcpy(hdm_kview_at(&in->v, i), (const uint8_t *)cases[k].bits + i * size,
				       size);
			HPU_KCALL(&c, HPU_KERNEL_UNARY, out, in);
			c.args[0] = HPU_UNARY_COPY;
			HPU_KEXPECT(hpu_krun(&hdm_kernel_unary, &c, sp) == 0);
			for (uint64_t i = 0; i < 6; i++)
				HPU_KEXPECT(!memcmp(hdm_kview_at(&out->v, i),
						    (const uint8_t *)cases[k].bits + i * size, size));
			HPU_KEXPECT(hpu_kt_gaps_intact(out));
			hpu_kt_free(in);
			hpu_kt_free(out);
		}
	}
}

#define BIN(op, dtype, a, b, want)                                                          \
	run_exact(HPU_KERNEL_BINARY, HPU_BINARY_##op, 0, 0, dtype, dtype, dtype, a, b, want,    \
		  HPU_ARRAY_SIZE(a), __LINE__)

static void test_integral_corners(void)
{
	/* Truncating division; by zero gives 0 and INT64_MIN / -1 wraps, neither traps. */
	static const double a[] = { 7, -7, 7, -7, 5, 0 };
	static const double b[] = { 2, 2, -2, -2, 0, 0 };
	static const double div[] = { 3, -3, -3, 3, 0, 0 };
	/* Negative powers truncate: only 1 and -1 survive. */
	static const double pa[] = { 2, 1, -1, -1, 3, 0, -2 };
	static const double pb[] = { -1, -5, -3, -2, 0, -1, 3 };
	static const double pw[] = { 0, 1, -1, 1, 1, 0, -8 };
	struct hpu_ktensor *x, *y, *out;
	uint64_t n = 1;
	struct hdm_kcall c;

	BIN(DIV, I32, a, b, div);
	BIN(DIV, I64, a, b, div);
	BIN(POW, I64, pa, pb, pw);

	x = hpu_kt_new(I64, 1, &n, NULL);
	y = hpu_kt_new(I64, 1, &n, NULL);
	out = hpu_kt_new(I64, 1, &n, NULL);
	memcpy(x->v.base, &(int64_t){ INT64_MIN }, 8);
	memcpy(y->v.base, &(int64_t){ -1 }, 8);
	HPU_KCALL(&c, HPU_KERNEL_BINARY, out, x, y);
	c.args[0] = HPU_BINARY_DIV;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_binary, &c, HPU_KSPLIT_ONE) == 0);
	HPU_KEXPECT(hpu_kt_get_i(out, 0) == INT64_MIN);
	/* Wrapping, not saturating: INT64_MAX + 1 * 1. */
	memcpy(x->v.base, &(int64_t){ INT64_MAX }, 8);
	memcpy(y->v.base, &(int64_t){ 1 }, 8);
	c.args[0] = HPU_BINARY_ADD;
	c.scalars[0] = 1;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_binary, &c, HPU_KSPLIT_ONE) == 0);
	HPU_KEXPECT(hpu_kt_get_i(out, 0) == INT64_MIN);
	/* Large operands that double would round: 2^62 + 1 - 1. */
	memcpy(x->v.base, &(int64_t){ (1ll << 62) + 1 }, 8);
	c.args[0] = HPU_BINARY_SUB;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_binary, &c, HPU_KSPLIT_ONE) == 0);
	HPU_KEXPECT(hpu_kt_get_i(out, 0) == 1ll << 62);
	hpu_kt_free(x);
	hpu_kt_free(y);
	hpu_kt_free(out);
}

static void test_float_corners(void)
{
	static const double a[] = { NAN, 1, NAN, -0.0, 1, -1, 0 };
	static const double b[] = { 1, NAN, NAN, 0.0, 0, 0, 0 };
	static const double max[] = { NAN, NAN, NAN, 0.0, 1, 0, 0 };
	static const double min[] = { NAN, NAN, NAN, -0.0, 0, -1, 0 };
	static const double div[] = { NAN, NAN, NAN, NAN, INFINITY, -INFINITY, NAN };
	static const double eq[] = { 0, 0, 0, 1, 0, 0, 1 };
	static const double ne[] = { 1, 1, 1, 0, 1, 1, 0 };

	BIN(MAX, F32, a, b, max);
	BIN(MIN, F32, a, b, min);
	BIN(DIV, F32, a, b, div);
	BIN(DIV, BF16, a, b, div);
	BIN(EQ, F32, a, b, eq);
	BIN(NE, F32, a, b, ne);
	/* Comparisons of float inputs into a U8 out. */
	run_exact(HPU_KERNEL_BINARY, HPU_BINARY_NE, 0, 0, U8, F32, F32, a, b, ne, HPU_ARRAY_SIZE(a),
		  __LINE__);
	/* RELU lets NaN through; the scalar b of a float a. */
	run_exact(HPU_KERNEL_UNARY, HPU_UNARY_RELU, 0, 0, F32, F32, 0, a, NULL,
		  (double[]){ NAN, 1, NAN, 0, 1, 0, 0 }, HPU_ARRAY_SIZE(a), __LINE__);
	run_exact(HPU_KERNEL_BINARY, HPU_BINARY_MAX, 1, 0.5, F32, F32, 0, a, NULL,
		  (double[]){ NAN, 1, NAN, 0.5, 1, 0.5, 0.5 }, HPU_ARRAY_SIZE(a), __LINE__);
}

/* ---- in place, empty, split, the MNIST-sized fast path ---- */

static void test_in_place(void)
{
	struct hpu_ktensor *x = hpu_kt_new(F32, 3, SHAPE, layouts[3].strides);
	struct hpu_ktensor *y = hpu_kt_new(F32, 3, SHAPE, layouts[1].strides);
	uint64_t i, n = hpu_kt_numel(x);
	double *before, *want = malloc(n * sizeof(*want));
	struct hdm_kcall c;

	hpu_kt_fill_random(x, 3, -2, 2);
	hpu_kt_fill_random(y, 4, -2, 2);
	before = hpu_kt_values(x);
	HPU_KCALL(&c, HPU_KERNEL_BINARY, x, x, y); /* x = x * y */
	c.args[0] = HPU_BINARY_MUL;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_binary, &c, HPU_KSPLIT_THREADS) == 0);
	for (i = 0; i < n; i++)
		want[i] = before[i] * hpu_kt_get(y, i);
	HPU_KEXPECT_NEAR(x, want, HPU_KTOL_F32, 0);
	free(before);
	free(want);
	hpu_kt_free(x);
	hpu_kt_free(y);
}

static void test_empty(void)
{
	static const uint64_t shapes[][2] = { { 0, 5 }, { 4, 0 } };

	for (size_t s = 0; s < HPU_ARRAY_SIZE(shapes); s++) {
		struct hpu_ktensor *out = hpu_kt_new(F32, 2, shapes[s], NULL);
		struct hpu_ktensor *in = hpu_kt_new(F32, 2, shapes[s], HPU_KT_STRIDES(0, 0));
		struct hdm_kcall c;
		uint64_t items = 1;

		for (enum hpu_ksplit sp = 0; sp < HPU_KSPLIT_COUNT; sp++) {
			HPU_KCALL(&c, HPU_KERNEL_UNARY, out, in);
			c.args[0] = HPU_UNARY_EXP;
			HPU_KEXPECT(hdm_kernel_unary.check(&c, &items) == 0 && items == 0);
			HPU_KEXPECT(hpu_krun(&hdm_kernel_unary, &c, sp) == 0);
			HPU_KCALL(&c, HPU_KERNEL_FILL, out);
			HPU_KEXPECT(hpu_krun(&hdm_kernel_fill, &c, sp) == 0);
		}
		hpu_kt_free(out);
		hpu_kt_free(in);
	}
}

/* Dense operands (fp32 read and written directly) and scattered ones give the same bytes. */
static void test_layouts_agree(void)
{
	static const uint32_t dts[] = { F32, BF16, I64 };
	const uint64_t *shape = HPU_KT_DIMS(5, 7, 9); /* 315 elements: more than one block */

	for (size_t d = 0; d < HPU_ARRAY_SIZE(dts); d++) {
		struct hpu_ktensor *t[] = {
			hpu_kt_new(dts[d], 3, shape, NULL),
			hpu_kt_new(dts[d], 3, shape, NULL),
			hpu_kt_new(dts[d], 3, shape, NULL),
			hpu_kt_new(U8, 3, shape, NULL),
		};
		struct hdm_kcall c;

		for (unsigned int i = 1; i < HPU_ARRAY_SIZE(t); i++)
			hpu_kt_fill_random(t[i], i, i < 3 ? -5 : 0, i < 3 ? 5 : 2);
		HPU_KCALL(&c, HPU_KERNEL_BINARY, t[0], t[1], t[2]);
		for (c.args[0] = HPU_BINARY_MUL; c.args[0] <= HPU_BINARY_DIV; c.args[0]++)
			HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_binary, &c);
		HPU_KCALL(&c, HPU_KERNEL_UNARY, t[0], t[1]);
		c.args[0] = HPU_UNARY_RELU;
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_unary, &c);
		HPU_KCALL(&c, HPU_KERNEL_WHERE, t[0], t[3], t[1], t[2]);
		HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_where, &c);
		for (unsigned int i = 0; i < HPU_ARRAY_SIZE(t); i++)
			hpu_kt_free(t[i]);
	}
}

/* Each split of the items gives the very bytes one range gives, over more than one block. */
static void test_split_invariance(void)
{
	static const uint64_t shape[] = { 7, 130 };
	static const uint32_t dts[] = { F32, BF16, I32, I64 };
	static const struct elt_op *ops[] = {
		&binary_ops[3], &binary_float_ops[1], &unary_float_ops[0], &where_op, &fill_ops[0],
		&scalar_ops[1],
	};

	for (size_t o = 0; o < HPU_ARRAY_SIZE(ops); o++) {
		for (size_t d = 0; d < HPU_ARRAY_SIZE(dts); d++) {
			struct hpu_ktensor *out[HPU_KSPLIT_COUNT], *in[3];
			unsigned int nin = inputs_of(ops[o]), j;
			struct hdm_kcall c;

			if (!hdm_dtype_is_float(dts[d]) && ops[o]->kernel == HPU_KERNEL_UNARY)
				continue;
			for (j = 0; j < nin; j++) {
				/* Transposed inputs: the walk crosses rows at block edges. */
				in[j] = hpu_kt_new(j == 0 && ops[o]->kernel == HPU_KERNEL_WHERE ? U8 : dts[d],
						   2, shape, HPU_KT_STRIDES(1, 7));
				fill_inputs(in[j], ops[o], 10 + j);
			}
			for (enum hpu_ksplit sp = 0; sp < HPU_KSPLIT_COUNT; sp++) {
				struct hpu_ktensor *t[4];

				out[sp] = hpu_kt_new(dts[d], 2, shape, NULL);
				t[0] = out[sp];
				for (j = 0; j < nin; j++)
					t[1 + j] = in[j];
				hpu_kcall_init(&c, ops[o]->kernel, 1 + nin, t);
				c.args[0] = ops[o]->a0;
				c.args[1] = ops[o]->a1;
				c.scalars[0] = ops[o]->s0;
				c.scalars[1] = ops[o]->s1;
				HPU_KEXPECT(hpu_krun(def_of(ops[o]->kernel), &c, sp) == 0);
				if (sp)
					HPU_KEXPECT_SAME(out[sp], out[0]);
			}
			for (enum hpu_ksplit sp = 0; sp < HPU_KSPLIT_COUNT; sp++)
				hpu_kt_free(out[sp]);
			for (j = 0; j < nin; j++)
				hpu_kt_free(in[j]);
		}
	}
}

/* Milliseconds one run() over every item of a checked launch takes. */
static double time_run(const struct hdm_kernel_def *def, const struct hdm_kcall *c)
{
	struct timespec t0, t1;
	uint64_t items = 0;

	HPU_KEXPECT(def->check(c, &items) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	def->run(c, 0, items);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}

/* The MNIST-sized case the fast path is for: y = relu(x + bias), [200, 784] fp32. */
static void test_mnist_sized(void)
{
	static const uint64_t shape[] = { 200, 784 };
	struct hpu_ktensor *x = hpu_kt_new(F32, 2, shape, NULL);
	struct hpu_ktensor *bias = hpu_kt_new(F32, 2, shape, HPU_KT_STRIDES(0, 1));
	struct hpu_ktensor *y = hpu_kt_new(F32, 2, shape, NULL);
	uint64_t i, n = hpu_kt_numel(x);
	double *want = malloc(n * sizeof(*want)), add_ms, relu_ms;
	struct hdm_kcall add, relu;

	hpu_kt_fill_random(x, 5, -1, 1);
	hpu_kt_fill_random(bias, 6, -1, 1);
	HPU_KCALL(&add, HPU_KERNEL_BINARY, y, x, bias);
	add.args[0] = HPU_BINARY_ADD;
	add.scalars[0] = 1;
	HPU_KCALL(&relu, HPU_KERNEL_UNARY, y, y);
	relu.args[0] = HPU_UNARY_RELU;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_binary, &add, HPU_KSPLIT_THREADS) == 0);
	HPU_KEXPECT(hpu_krun(&hdm_kernel_unary, &relu, HPU_KSPLIT_THREADS) == 0);
	for (i = 0; i < n; i++)
		want[i] = fmax((double)(float)(hpu_kt_get(x, i) + hpu_kt_get(bias, i)), 0);
	HPU_KEXPECT_NEAR(y, want, 0, 0);
	add_ms = time_run(&hdm_kernel_binary, &add);
	relu_ms = time_run(&hdm_kernel_unary, &relu);
	printf("# [200, 784] fp32 on one thread: add bias %.2f ms, relu in place %.2f ms\n", add_ms,
	       relu_ms);
	free(want);
	hpu_kt_free(x);
	hpu_kt_free(bias);
	hpu_kt_free(y);
}

/* ---- rejections ---- */

struct reject {
	const char *why;
	uint32_t kernel;
	unsigned int n;           /* tensors */
	uint32_t dtypes[4];       /* 0: F32 */
	unsigned int bad_shape;   /* this tensor (when nonzero) has another shape */
	int64_t args[3];
};

static const struct reject rejects[] = {
	{ "unary: one tensor", HPU_KERNEL_UNARY, 1, { 0 }, 0, { 0 } },
	{ "unary: three tensors", HPU_KERNEL_UNARY, 3, { 0 }, 0, { 0 } },
	{ "unary: op -1", HPU_KERNEL_UNARY, 2, { 0 }, 0, { -1 } },
	{ "unary: op 18", HPU_KERNEL_UNARY, 2, { 0 }, 0, { 18 } },
	{ "unary: silu to int", HPU_KERNEL_UNARY, 2, { I64, F32 }, 0, { HPU_UNARY_SILU } },
	{ "unary: erf to U8", HPU_KERNEL_UNARY, 2, { U8, F32 }, 0, { HPU_UNARY_ERF } },
	{ "unary: exp to int", HPU_KERNEL_UNARY, 2, { I32, F32 }, 0, { HPU_UNARY_EXP } },
	{ "unary: reciprocal to U8", HPU_KERNEL_UNARY, 2, { U8, F32 }, 0, { HPU_UNARY_RECIPROCAL } },
	{ "unary: shape", HPU_KERNEL_UNARY, 2, { 0 }, 1, { 0 } },
	{ "unary: a1 set", HPU_KERNEL_UNARY, 2, { 0 }, 0, { 0, 1 } },
	{ "binary: two tensors", HPU_KERNEL_BINARY, 2, { 0 }, 0, { 0 } },
	{ "binary: scalar b, three tensors", HPU_KERNEL_BINARY, 3, { 0 }, 0, { 0, 1 } },
	{ "binary: a1 2", HPU_KERNEL_BINARY, 3, { 0 }, 0, { 0, 2 } },
	{ "binary: op 13", HPU_KERNEL_BINARY, 3, { 0 }, 0, { 13 } },
	{ "binary: op -1", HPU_KERNEL_BINARY, 3, { 0 }, 0, { -1 } },
	{ "binary: a shape", HPU_KERNEL_BINARY, 3, { 0 }, 1, { 0 } },
	{ "binary: b shape", HPU_KERNEL_BINARY, 3, { 0 }, 2, { 0 } },
	{ "binary: a2 set", HPU_KERNEL_BINARY, 3, { 0 }, 0, { 0, 0, 5 } },
	{ "where: three tensors", HPU_KERNEL_WHERE, 3, { 0, U8 }, 0, { 0 } },
	{ "where: F32 cond", HPU_KERNEL_WHERE, 4, { 0, F32 }, 0, { 0 } },
	{ "where: cond shape", HPU_KERNEL_WHERE, 4, { 0, U8 }, 1, { 0 } },
	{ "where: b shape", HPU_KERNEL_WHERE, 4, { 0, U8 }, 3, { 0 } },
	{ "where: a0 set", HPU_KERNEL_WHERE, 4, { 0, U8 }, 0, { 1 } },
	{ "fill: two tensors", HPU_KERNEL_FILL, 2, { 0 }, 0, { 0 } },
	{ "fill: a0 set", HPU_KERNEL_FILL, 1, { 0 }, 0, { 1 } },
};

static void test_rejections(void)
{
	for (size_t r = 0; r < HPU_ARRAY_SIZE(rejects); r++) {
		const struct reject *rj = &rejects[r];
		struct hpu_ktensor *t[4];
		struct hdm_kcall c;
		uint64_t items;
		unsigned int i;
		double *before;

		for (i = 0; i < rj->n; i++) {
			/* [3, 4, 5] or, for the odd one out, [3, 5, 4]: the same numel. */
			t[i] = hpu_kt_new(rj->dtypes[i] ? rj->dtypes[i] : F32, 3,
					  i && i == rj->bad_shape ? HPU_KT_DIMS(3, 5, 4) : SHAPE, NULL);
			hpu_kt_fill_random(t[i], i, -1, 1);
		}
		before = hpu_kt_values(t[0]);
		hpu_kcall_init(&c, rj->kernel, rj->n, t);
		memcpy(c.args, rj->args, sizeof(rj->args));
		c.scalars[0] = 1;
		if (def_of(rj->kernel)->check(&c, &items) == 0) {
			printf("#   accepted: %s\n", rj->why);
			hpu_ktest_failed = true;
		}
		/* Nothing written: out still holds what it was filled with. */
		HPU_KEXPECT(hpu_krun(def_of(rj->kernel), &c, HPU_KSPLIT_ONE) != 0);
		HPU_KEXPECT_NEAR(t[0], before, 0, 0);
		free(before);
		for (i = 0; i < rj->n; i++)
			hpu_kt_free(t[i]);
	}
}

static void test_accepts_ndim0_and_6(void)
{
	struct hpu_ktensor *o0 = hpu_kt_new(F32, 0, NULL, NULL), *i0 = hpu_kt_new(I32, 0, NULL, NULL);
	struct hpu_ktensor *o6 = hpu_kt_new(F32, 6, HPU_KT_DIMS(2, 1, 3, 2, 1, 2), NULL);
	struct hpu_ktensor *i6 = hpu_kt_new(F32, 6, HPU_KT_DIMS(2, 1, 3, 2, 1, 2),
					    HPU_KT_STRIDES(-1, 0, 2, 6, 5, 0));
	uint64_t i, n = hpu_kt_numel(o6);
	double *want = malloc(n * sizeof(*want));
	struct hdm_kcall c;

	hpu_kt_set(i0, 0, -4);
	HPU_KCALL(&c, HPU_KERNEL_UNARY, o0, i0);
	c.args[0] = HPU_UNARY_ABS;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_unary, &c, HPU_KSPLIT_THREADS) == 0);
	HPU_KEXPECT(hpu_kt_get(o0, 0) == 4);
	hpu_kt_fill_random(i6, 9, -3, 3);
	HPU_KCALL(&c, HPU_KERNEL_UNARY, o6, i6);
	c.args[0] = HPU_UNARY_NEG;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_unary, &c, HPU_KSPLIT_SEQ) == 0);
	for (i = 0; i < n; i++)
		want[i] = -hpu_kt_get(i6, i);
	HPU_KEXPECT_NEAR(o6, want, 0, 0);
	free(want);
	hpu_kt_free(o0);
	hpu_kt_free(i0);
	hpu_kt_free(o6);
	hpu_kt_free(i6);
}

static const struct hpu_ktest_case cases[] = {
	{ "unary COPY, NEG, ABS, RELU: every layout and dtype", test_unary_any },
	{ "unary transcendental ops: every layout, float dtypes", test_unary_float },
	{ "binary ops: every layout and dtype", test_binary },
	{ "binary DIV, POW, MAX, LT on fractions", test_binary_float },
	{ "binary ADD and SUB alpha", test_alpha },
	{ "binary scalar b (a1 = 1)", test_scalar_b },
	{ "where with a U8 cond", test_where },
	{ "fill", test_fill },
	{ "casts: bf16 rounding ties, truncation, bool, wide int64", test_casts },
	{ "a copy to its own dtype keeps every bit, signaling NaNs too", test_copy_keeps_bits },
	{ "integral division by zero, wrap, negative powers", test_integral_corners },
	{ "NaN, signed zero and infinities", test_float_corners },
	{ "in place", test_in_place },
	{ "empty tensors", test_empty },
	{ "ndim 0 and 6", test_accepts_ndim0_and_6 },
	{ "one range, split and threads give the same bytes", test_split_invariance },
	{ "dense and scattered layouts give the same bytes", test_layouts_agree },
	{ "[200, 784] bias add and relu", test_mnist_sized },
	{ "check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
