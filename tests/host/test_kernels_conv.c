/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of the convolution kernels (CONV, CONV_BWD_INPUT,
 * CONV_BWD_WEIGHT): forward, input and weight gradients against a naive
 * direct convolution in double, 1d and 2d, odd sizes, strides, padding,
 * dilation, groups (depthwise too), bias, bf16, strided and flipped
 * operands, shapes large enough to cut into many blocks; the same bytes
 * whatever the layout and split; every rejection.  Prints TAP.
 *
 * Tolerances: the kernels multiply in fp32 (sgemm), so an element's error
 * is bounded by its sum of |terms| times 2^-20 (fp32's 2^-24 grown by sums
 * of up to a few thousand terms); a bf16 result adds its rounding, 2^-8
 * relative.  Inputs are read back as stored, so bf16 inputs add nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_kernel_harness.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32

#define SUM_TOL (1.0 / (1 << 20))

struct shape {
	uint64_t n, cin, h, w, cout, kh, kw;
	int64_t sh, sw, ph, pw, dh, dw, groups;
	bool d1, bias;
	uint32_t dtype;
	bool strided; /* operands in a scattered layout: channels last, flipped width */
};

static uint64_t out_len(uint64_t in, int64_t pad, uint64_t k, int64_t dil, int64_t stride)
{
	return (in + 2 * (uint64_t)pad - (k - 1) * (uint64_t)dil - 1) / (uint64_t)stride + 1;
}

/* A [a, b, c, d] tensor (1d: [a, b, d]); strided: dim 1 innermost, the last dim flipped. */
static struct hpu_ktensor *conv_tensor(const struct shape *s, uint64_t a, uint64_t b, uint64_t c,
				       uint64_t d)
{
	uint64_t shape[4] = { a, b, c, d };
	int64_t st[4];
	uint32_t nd = s->d1 ? 3 : 4;

	if (s->d1)
		shape[2] = d;
	if (!s->strided)
		return hpu_kt_new(s->dtype, nd, shape, NULL);
	/* Channels last: dim 1 steps by 1, then the last dim (flipped), then height, batch. */
	st[1] = 1;
	st[nd - 1] = -(int64_t)shape[1];
	if (nd == 4)
		st[2] = (int64_t)(shape[1] * shape[3]);
	st[0] = (int64_t)(shape[1] * shape[nd - 1] * (nd == 4 ? shape[2] : 1)) + 3;
	return hpu_kt_new(s->dtype, nd, shape, st);
}

struct conv_case {
	struct shape s;
	uint64_t ho, wo;
	struct hpu_ktensor *x, *w, *b, *y, *gy, *gx, *gw;
};

static struct hpu_ktensor *random_of(struct hpu_ktensor *t, uint64_t seed)
{
	hpu_kt_fill_random(t, seed, -1, 1);
	return t;
}

static void case_init(struct conv_case *k, const struct shape *shape)
{
	struct shape *s = &k->s;
	uint64_t h = shape->d1 ? 1 : shape->h, kh = shape->d1 ? 1 : shape->kh;

	memset(k, 0, sizeof(*k));
	*s = *shape;
	s->sh += !s->sh, s->sw += !s->sw, s->dh += !s->dh, s->dw += !s->dw;
	s->groups += !s->groups;
	s->dtype = s->dtype ? s->dtype : F32;
	k->ho = s->d1 ? 1 : out_len(s->h, s->ph, s->kh, s->dh, s->sh);
	k->wo = out_len(s->w, s->pw, s->kw, s->dw, s->sw);
	k->x = random_of(conv_tensor(s, s->n, s->cin, h, s->w), 1);
	k->w = random_of(conv_tensor(s, s->cout, s->cin / (uint64_t)s->groups, kh, s->kw), 2);
	k->b = random_of(hpu_kt_new(s->dtype, 1, HPU_KT_DIMS(s->cout), NULL), 3);
	k->y = conv_tensor(s, s->n, s->cout, k->ho, k->wo);
	k->gy = random_of(conv_tensor(s, s->n, s->cout, k->ho, k->wo), 4);
	k->gx = conv_tensor(s, s->n, s->cin, h, s->w);
	k->gw = conv_tensor(s, s->cout, s->cin / (uint64_t)s->groups, kh, s->kw);
}

static void case_free(struct conv_case *k)
{
	struct hpu_ktensor *t[] = { k->x, k->w, k->b, k->y, k->gy, k->gx, k->gw };

	for (size_t i = 0; i < HPU_ARRAY_SIZE(t); i++)
		hpu_kt_free(t[i]);
}

static void conv_args(struct hdm_kcall *c, const struct shape *s)
{
	c->args[0] = s->d1 ? 1 : s->sh;
	c->args[1] = s->sw;
	c->args[2] = s->d1 ? 0 : s->ph;
	c->args[3] = s->pw;
	c->args[4] = s->d1 ? 1 : s->dh;
	c->args[5] = s->dw;
	c->args[6] = s->groups;
}

static void call_fwd(struct hdm_kcall *c, struct conv_case *k)
{
	if (k->s.bias)
		HPU_KCALL(c, HPU_KERNEL_CONV, k->y, k->x, k->w, k->b);
	else
		HPU_KCALL(c, HPU_KERNEL_CONV, k->y, k->x, k->w);
	conv_args(c, &k->s);
}

static void call_bwd_input(struct hdm_kcall *c, struct conv_case *k)
{
	HPU_KCALL(c, HPU_KERNEL_CONV_BWD_INPUT, k->gx, k->gy, k->w);
	conv_args(c, &k->s);
}

static void call_bwd_weight(struct hdm_kcall *c, struct conv_case *k)
{
	HPU_KCALL(c, HPU_KERNEL_CONV_BWD_WEIGHT, k->gw, k->gy, k->x);
	conv_args(c, &k->s);
}

/* The references, row-major, with each element's sum of |terms| (for the tolerance). */
struct refs {
	double *y, *ya, *gx, *gxa, *gw, *gwa;
};

static void refs_free(struct refs *r)
{
	free(r->y), free(r->ya), free(r->gx), free(r->gxa), free(r->gw), free(r->gwa);
}

/* Direct convolution in double: every (output, tap) pair once. */
static void reference(const struct conv_case *k, struct refs *r)
{
	const struct shape *s = &k->s;
	uint64_t h = s->d1 ? 1 : s->h, kh = s->d1 ? 1 : s->kh, cin_g = s->cin / (uint64_t)s->groups;
	uint64_t cout_g = s->cout / (uint64_t)s->groups;
	int64_t sh = s->d1 ? 1 : s->sh, ph = s->d1 ? 0 : s->ph, dh = s->d1 ? 1 : s->dh;
	double *x = hpu_kt_values(k->x), *w = hpu_kt_values(k->w), *b = hpu_kt_values(k->b);
	double *gy = hpu_kt_values(k->gy);
	uint64_t ny = hpu_kt_numel(k->y), nx = hpu_kt_numel(k->x), nw = hpu_kt_numel(k->w);

	r->y = calloc(ny + 1, sizeof(double)), r->ya = calloc(ny + 1, sizeof(double));
	r->gx = calloc(nx + 1, sizeof(double)), r->gxa = calloc(nx + 1, sizeof(double));
	r->gw = calloc(nw + 1, sizeof(double)), r->gwa = calloc(nw + 1, sizeof(double));
	for (uint64_t n = 0; n < s->n; n++)
	for (uint64_t co = 0; co < s->cout; co++)
	for (uint64_t oh = 0; oh < k->ho; oh++)
	for (uint64_t ow = 0; ow < k->wo; ow++) {
		uint64_t yi = ((n * s->cout + co) * k->ho + oh) * k->wo + ow, g = co / cout_g;

		if (s->bias) {
			r->y[yi] = b[co];
			r->ya[yi] = fabs(b[co]);
		}
		for (uint64_t cl = 0; cl < cin_g; cl++)
		for (uint64_t ki = 0; ki < kh; ki++)
		for (uint64_t kj = 0; kj < s->kw; kj++) {
			int64_t hh = (int64_t)oh * sh - ph + (int64_t)ki * dh;
			int64_t ww = (int64_t)ow * s->sw - s->pw + (int64_t)kj * s->dw;
			uint64_t ci = g * cin_g + cl, xi, wi;

			if (hh < 0 || hh >= (int64_t)h || ww < 0 || ww >= (int64_t)s->w)
				continue;
			xi = ((n * s->cin + ci) * h + (uint64_t)hh) * s->w + (uint64_t)ww;
			wi = ((co * cin_g + cl) * kh + ki) * s->kw + kj;
			r->y[yi] += x[xi] * w[wi];
			r->ya[yi] += fabs(x[xi] * w[wi]);
			r->gx[xi] += gy[yi] * w[wi];
			r->gxa[xi] += fabs(gy[yi] * w[wi]);
			r->gw[wi] += gy[yi] * x[xi];
			r->gwa[wi] += fabs(gy[yi] * x[xi]);
		}
	}
	free(x), free(w), free(b), free(gy);
}

/* Every element within its sum of |terms| times SUM_TOL, plus bf16's rounding. */
static bool expect_sums(const struct hpu_ktensor *got, const double *want, const double *abs_sum,
			const char *what, int line)
{
	double *v = hpu_kt_values(got);
	double rel = got->v.dtype == BF16 ? 1.0 / 256 : 0;
	unsigned int bad = 0;

	for (uint64_t i = 0; i < hpu_kt_numel(got); i++) {
		double tol = abs_sum[i] * SUM_TOL + rel * fabs(want[i]) + 1e-30;

		if (!(fabs(v[i] - want[i]) <= tol) && bad++ < 4)
			printf("# line %d: %s[%llu] = %.9g, want %.9g (tol %.3g)\n", line, what,
			       (unsigned long long)i, v[i], want[i], tol);
	}
	free(v);
	HPU_KEXPECT(!bad);
	return !bad;
}
#define EXPECT_SUMS(got, want, abs_sum) expect_sums(got, want, abs_sum, #got, __LINE__)

/* All three kernels of a shape against the reference. */
static void check_shape(const struct shape *s)
{
	struct conv_case k;
	struct hdm_kcall c;
	struct refs r;

	case_init(&k, s);
	reference(&k, &r);
	call_fwd(&c, &k);
	HPU_KLAUNCH(&hdm_kernel_conv, &c);
	EXPECT_SUMS(k.y, r.y, r.ya);
	call_bwd_input(&c, &k);
	HPU_KLAUNCH(&hdm_kernel_conv_bwd_input, &c);
	EXPECT_SUMS(k.gx, r.gx, r.gxa);
	call_bwd_weight(&c, &k);
	HPU_KLAUNCH(&hdm_kernel_conv_bwd_weight, &c);
	EXPECT_SUMS(k.gw, r.gw, r.gwa);
	refs_free(&r);
	case_free(&k);
}

/* A shape literal; strides, dilations and groups left 0 are 1, dtype 0 is F32. */
#define SHAPE(...) (&(const struct shape){ __VA_ARGS__ })

static void test_conv2d_basic(void)
{
	check_shape(SHAPE(.n = 2, .cin = 3, .h = 7, .w = 9, .cout = 5, .kh = 3, .kw = 3,
			  .bias = true));
	check_shape(SHAPE(.n = 1, .cin = 4, .h = 5, .w = 6, .cout = 2, .kh = 1, .kw = 1));
	check_shape(SHAPE(.n = 3, .cin = 2, .h = 4, .w = 4, .cout = 3, .kh = 4, .kw = 4,
			  .bias = true));
}

static void test_conv2d_stride_padding_dilation(void)
{
	check_shape(SHAPE(.n = 2, .cin = 3, .h = 9, .w = 11, .cout = 4, .kh = 3, .kw = 3, .sh = 2,
			  .sw = 2, .ph = 1, .pw = 1, .bias = true));
	check_shape(SHAPE(.n = 1, .cin = 2, .h = 10, .w = 7, .cout = 3, .kh = 3, .kw = 2, .dh = 2,
			  .dw = 2, .ph = 2, .pw = 1));
	check_shape(SHAPE(.n = 2, .cin = 3, .h = 13, .w = 8, .cout = 2, .kh = 5, .kw = 3, .sh = 3,
			  .sw = 1, .ph = 0, .pw = 2, .dh = 2, .dw = 1, .bias = true));
	/* Stride past the kernel: inputs no output reads get a zero gradient. */
	check_shape(SHAPE(.n = 1, .cin = 2, .h = 9, .w = 9, .cout = 2, .kh = 1, .kw = 2, .sh = 3,
			  .sw = 4));
	/* Padding wider than the input: outputs of padding alone. */
	check_shape(SHAPE(.n = 1, .cin = 1, .h = 2, .w = 1, .cout = 2, .kh = 2, .kw = 2, .ph = 3,
			  .pw = 3, .bias = true));
}

static void test_conv2d_groups(void)
{
	check_shape(SHAPE(.n = 2, .cin = 4, .h = 6, .w = 5, .cout = 6, .kh = 3, .kw = 3,
			  .groups = 2, .ph = 1, .pw = 1, .bias = true));
	/* Depthwise, with a channel multiplier of 2. */
	check_shape(SHAPE(.n = 2, .cin = 5, .h = 7, .w = 7, .cout = 10, .kh = 3, .kw = 3,
			  .groups = 5, .sh = 2, .sw = 2, .ph = 1, .pw = 1));
	check_shape(SHAPE(.n = 1, .cin = 6, .h = 5, .w = 5, .cout = 6, .kh = 3, .kw = 3,
			  .groups = 6, .dh = 2, .dw = 2, .ph = 2, .pw = 2, .bias = true));
}

static void test_conv1d(void)
{
	check_shape(SHAPE(.d1 = true, .n = 3, .cin = 4, .w = 17, .cout = 5, .kw = 3, .bias = true));
	check_shape(SHAPE(.d1 = true, .n = 2, .cin = 4, .w = 20, .cout = 6, .kw = 5, .sw = 2,
			  .pw = 3, .dw = 2, .groups = 2));
	check_shape(SHAPE(.d1 = true, .n = 1, .cin = 3, .w = 9, .cout = 3, .kw = 4, .groups = 3,
			  .pw = 1, .bias = true));
}

static void test_conv_bf16(void)
{
	check_shape(SHAPE(.dtype = BF16, .n = 2, .cin = 3, .h = 7, .w = 6, .cout = 4, .kh = 3,
			  .kw = 3, .sh = 2, .ph = 1, .pw = 1, .bias = true));
	check_shape(SHAPE(.dtype = BF16, .d1 = true, .n = 2, .cin = 4, .w = 11, .cout = 4,
			  .kw = 3, .groups = 2, .dw = 2, .pw = 2, .bias = true));
}

static void test_conv_strided_operands(void)
{
	check_shape(SHAPE(.strided = true, .n = 2, .cin = 3, .h = 6, .w = 7, .cout = 4, .kh = 3,
			  .kw = 2, .sh = 2, .ph = 1, .pw = 1, .bias = true));
	check_shape(SHAPE(.strided = true, .d1 = true, .n = 2, .cin = 4, .w = 9, .cout = 2,
			  .kw = 3, .groups = 2, .pw = 1));
	check_shape(SHAPE(.strided = true, .dtype = BF16, .n = 1, .cin = 2, .h = 5, .w = 5,
			  .cout = 2, .kh = 2, .kw = 2, .dh = 2, .dw = 2));
}

/*
 * Shapes whose items cannot take all of a dim: output channels and pixels
 * in blocks, input rectangles and channel blocks, pixel chunks whose
 * partials the second phase adds.
 */
static void test_conv_many_blocks(void)
{
	check_shape(SHAPE(.n = 2, .cin = 48, .h = 30, .w = 29, .cout = 40, .kh = 3, .kw = 3,
			  .ph = 1, .pw = 1, .bias = true));
	check_shape(SHAPE(.n = 1, .cin = 600, .h = 6, .w = 5, .cout = 70, .kh = 3, .kw = 3,
			  .groups = 2, .sh = 2, .sw = 2, .ph = 1, .pw = 1));
	check_shape(SHAPE(.d1 = true, .n = 2, .cin = 8, .w = 30000, .cout = 8, .kw = 5, .pw = 2,
			  .dw = 3, .bias = true));
}

/* Scattered copies of the operands and uneven splits give the same bytes. */
static void test_conv_layouts_agree(void)
{
	const struct shape *s = SHAPE(.n = 2, .cin = 4, .h = 7, .w = 5, .cout = 6, .kh = 3,
				      .kw = 2, .sh = 2, .ph = 1, .pw = 1, .groups = 2, .bias = true);
	struct conv_case k;
	struct hdm_kcall c;

	case_init(&k, s);
	call_fwd(&c, &k);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_conv, &c);
	call_bwd_input(&c, &k);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_conv_bwd_input, &c);
	call_bwd_weight(&c, &k);
	HPU_KEXPECT_LAYOUTS_AGREE(&hdm_kernel_conv_bwd_weight, &c);
	case_free(&k);
}

/* Empty batch: nothing to compute; the weight gradient is zeros. */
static void test_conv_empty_batch(void)
{
	struct conv_case k;
	struct hdm_kcall c;
	double zeros[2 * 3 * 2 * 2] = { 0 };

	case_init(&k, SHAPE(.n = 0, .cin = 3, .h = 4, .w = 4, .cout = 2, .kh = 2, .kw = 2));
	hpu_kt_fill_random(k.gw, 9, 1, 2);
	call_fwd(&c, &k);
	HPU_KLAUNCH(&hdm_kernel_conv, &c);
	call_bwd_input(&c, &k);
	HPU_KLAUNCH(&hdm_kernel_conv_bwd_input, &c);
	call_bwd_weight(&c, &k);
	HPU_KLAUNCH(&hdm_kernel_conv_bwd_weight, &c);
	HPU_KEXPECT_NEAR(k.gw, zeros, 0, 0);
	case_free(&k);
}

/* A patch too long for any item (2^19 + 2^18 multiply-adds an output element) is refused. */
static void test_conv_item_bound(void)
{
	uint64_t cin = (1u << 19) + (1u << 18);
	struct hpu_ktensor *y = hpu_kt_new(F32, 4, HPU_KT_DIMS(1, 1, 1, 1), NULL);
	struct hpu_ktensor *x = hpu_kt_new(F32, 4, HPU_KT_DIMS(1, cin, 1, 1), NULL);
	struct hpu_ktensor *w = hpu_kt_new(F32, 4, HPU_KT_DIMS(1, cin, 1, 1), NULL);
	struct hdm_kcall c;

	HPU_KCALL(&c, HPU_KERNEL_CONV, y, x, w);
	c.args[0] = c.args[1] = c.args[4] = c.args[5] = c.args[6] = 1;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_conv, &c, HPU_KSPLIT_ONE) != 0);
	HPU_KCALL(&c, HPU_KERNEL_CONV_BWD_WEIGHT, w, y, x);
	c.args[0] = c.args[1] = c.args[4] = c.args[5] = c.args[6] = 1;
	HPU_KEXPECT(hpu_krun(&hdm_kernel_conv_bwd_weight, &c, HPU_KSPLIT_ONE) == 0);
	hpu_kt_free(y), hpu_kt_free(x), hpu_kt_free(w);
}

/* ---- rejections ---- */

/*
 * 2d: in [2, 4, 5, 6], weight [6, 2, 3, 3], groups 2; height padded by 1,
 * width of stride 2 and dilation 2: out [2, 6, 5, 1].  Every dim one
 * larger changes the output size (no stride rounds it away).
 */
#define X4 { F32, 4, { 2, 4, 5, 6 } }
#define W4 { F32, 4, { 6, 2, 3, 3 } }
#define Y4 { F32, 4, { 2, 6, 5, 1 } }
#define ARGS2D { 1, 2, 1, 0, 1, 2, 2, 0 }
/* 1d: in [2, 4, 9], weight [4, 4, 3], dilation 2: out [2, 4, 5]. */
#define X3 { F32, 3, { 2, 4, 9 } }
#define W3 { BF16, 3, { 4, 4, 3 } }
#define Y3 { F32, 3, { 2, 4, 5 } }
#define ARGS1D { 1, 1, 0, 0, 1, 2, 1, 0 }

#define COMMON_MUTS(x, w, y)                                                               \
	HPU_KM_COUNT(2), HPU_KM_DTYPE(x, I32), HPU_KM_DTYPE(w, HPU_DTYPE_U8),             \
	HPU_KM_DTYPE(y, HPU_DTYPE_I64), HPU_KM_NDIM(x, 5), HPU_KM_NDIM(w, 2),             \
	HPU_KM_SHAPE(x, 0), HPU_KM_SHAPE(x, 1), HPU_KM_SHAPE(x, 2), HPU_KM_SHAPE(x, 3),   \
	HPU_KM_SHAPE(w, 0), HPU_KM_SHAPE(w, 1), HPU_KM_SHAPE(w, 2), HPU_KM_SHAPE(w, 3),   \
	HPU_KM_SHAPE(y, 0), HPU_KM_SHAPE(y, 1), HPU_KM_SHAPE(y, 2), HPU_KM_SHAPE(y, 3),   \
	HPU_KM_ARG(0, 0), HPU_KM_ARG(1, -1), HPU_KM_ARG(0, (1 << 20) + 1), HPU_KM_ARG(0, 2), \
	HPU_KM_ARG(2, -1), HPU_KM_ARG(3, (1 << 20) + 1), HPU_KM_ARG(3, 1), HPU_KM_ARG(4, 0), \
	HPU_KM_ARG(5, -2), HPU_KM_ARG(5, 1), HPU_KM_ARG(6, 0), HPU_KM_ARG(6, 3),          \
	HPU_KM_ARG(6, 1), HPU_KM_ARG(6, -2), HPU_KM_ARG(7, 1)

#define COMMON_MUTS_1D(x, w, y)                                                            \
	HPU_KM_COUNT(4), HPU_KM_NDIM(x, 4), HPU_KM_NDIM(y, 2), HPU_KM_DTYPE(x, I32),      \
	HPU_KM_SHAPE(x, 1), HPU_KM_SHAPE(x, 2), HPU_KM_SHAPE(w, 1), HPU_KM_SHAPE(w, 2),   \
	HPU_KM_SHAPE(y, 2), HPU_KM_ARG(0, 2), HPU_KM_ARG(2, 1), HPU_KM_ARG(4, 2),         \
	HPU_KM_ARG(5, 1), HPU_KM_ARG(1, 0), HPU_KM_ARG(6, 3)

static const struct hpu_kreject_case reject_cases[] = {
	{ "conv", &hdm_kernel_conv, HPU_KERNEL_CONV, ARGS2D, { 0 }, 4,
	  { Y4, X4, W4, { F32, 1, { 6 } } },
	  HPU_KMUTS(COMMON_MUTS(1, 2, 0), HPU_KM_COUNT(5), HPU_KM_NDIM(3, 2), HPU_KM_SHAPE(3, 0),
		    HPU_KM_DTYPE(3, I32)) },
	{ "conv without bias", &hdm_kernel_conv, HPU_KERNEL_CONV, ARGS2D, { 0 }, 3,
	  { Y4, X4, W4 }, HPU_KMUTS(COMMON_MUTS(1, 2, 0)) },
	{ "conv_bwd_input", &hdm_kernel_conv_bwd_input, HPU_KERNEL_CONV_BWD_INPUT, ARGS2D, { 0 },
	  3, { X4, Y4, W4 }, HPU_KMUTS(COMMON_MUTS(0, 2, 1), HPU_KM_COUNT(4)) },
	{ "conv_bwd_weight", &hdm_kernel_conv_bwd_weight, HPU_KERNEL_CONV_BWD_WEIGHT, ARGS2D,
	  { 0 }, 3, { W4, Y4, X4 }, HPU_KMUTS(COMMON_MUTS(2, 0, 1), HPU_KM_COUNT(4)) },
	{ "conv 1d", &hdm_kernel_conv, HPU_KERNEL_CONV, ARGS1D, { 0 }, 3, { Y3, X3, W3 },
	  HPU_KMUTS(COMMON_MUTS_1D(1, 2, 0)) },
	{ "conv_bwd_input 1d", &hdm_kernel_conv_bwd_input, HPU_KERNEL_CONV_BWD_INPUT, ARGS1D,
	  { 0 }, 3, { X3, Y3, W3 }, HPU_KMUTS(COMMON_MUTS_1D(0, 2, 1)) },
	{ "conv_bwd_weight 1d", &hdm_kernel_conv_bwd_weight, HPU_KERNEL_CONV_BWD_WEIGHT, ARGS1D,
	  { 0 }, 3, { W3, Y3, X3 }, HPU_KMUTS(COMMON_MUTS_1D(2, 0, 1)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

static const struct hpu_ktest_case cases[] = {
	{ "conv2d: odd sizes, 1x1, bias", test_conv2d_basic },
	{ "conv2d: stride, padding, dilation", test_conv2d_stride_padding_dilation },
	{ "conv2d: groups, depthwise", test_conv2d_groups },
	{ "conv1d: stride, padding, dilation, groups", test_conv1d },
	{ "conv: bf16 operands", test_conv_bf16 },
	{ "conv: channels-last, flipped operands", test_conv_strided_operands },
	{ "conv: shapes cut into many blocks and chunks", test_conv_many_blocks },
	{ "conv: layouts and splits give the same bytes", test_conv_layouts_agree },
	{ "conv: an empty batch", test_conv_empty_batch },
	{ "conv: a patch past an item's work is refused", test_conv_item_bound },
	{ "conv: every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
