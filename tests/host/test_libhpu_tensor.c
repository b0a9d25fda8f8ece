/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu's tensor and op layer without a device, built
 * from its sources: view arithmetic (shapes, strides, broadcasting, views
 * and their bounds), the checks every op makes before anything is
 * enqueued, the operands an op hands the device (parameter block and GEMM
 * packet bytes), and the CPU fallback computing on host memory.  The
 * device is faked: a storage's address is host memory, "launching" an op
 * records it, and span copies are memcpy.  Prints TAP.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_kernels.h>
#include <drm/hpu_packets.h>
#include <drm/hpu_philox.h>

#include "../../userspace/lib/ops/ops.h"
#include "test_libhpu_tap.h"

/* The fake device. */
static struct hpu_fallback_state fake_fallback;
static struct hpu_device fake_dev = { .fallback = &fake_fallback };
static struct hpu_stream fake_stream = { .dev = &fake_dev, .lock = PTHREAD_MUTEX_INITIALIZER };
static struct hpu_stream *const S = &fake_stream;
static struct hpu_op launched;
static unsigned int launches;

int hpu_launch(struct hpu_stream *s, const struct hpu_op *op)
{
	(void)s;
	launched = *op;
	launches++;
	return 0;
}

static uint8_t *fake_bytes(const struct hpu_storage *st, int64_t lo, uint32_t dtype)
{
	return (uint8_t *)(uintptr_t)st->va + lo * (int64_t)hpu_dt_size(dtype);
}

int hpu_span_read(struct hpu_stream *s, const struct hpu_storage *st,
		  const struct hpu_tensor_layout *l, void **buf, int64_t *lo)
{
	int64_t hi;
	size_t size;

	(void)s;
	if (!hpu_layout_span(l, lo, &hi))
		hi = *lo - 1;
	size = (size_t)(hi - *lo + 1) * hpu_dt_size(l->dtype);
	*buf = malloc(size + 1);
	memcpy(*buf, fake_bytes(st, *lo, l->dtype), size);
	return 0;
}

int hpu_span_write(struct hpu_stream *s, const struct hpu_storage *st,
		   const struct hpu_tensor_layout *l, const void *buf, int64_t lo)
{
	int64_t first, hi;

	(void)s;
	if (hpu_layout_span(l, &first, &hi))
		memcpy(fake_bytes(st, lo, l->dtype), buf,
		       (size_t)(hi - first + 1) * hpu_dt_size(l->dtype));
	return 0;
}

/* What the fakes allocate, freed after the tests so that a leak checker sees only the library's. */
static void *fake_allocs[1024];
static size_t fake_nallocs;

static void *fake_alloc(size_t size)
{
	void *p = calloc(1, size);

	if (!p || fake_nallocs == ARRAY_SIZE(fake_allocs))
		abort();
	fake_allocs[fake_nallocs++] = p;
	return p;
}

/* A contiguous tensor of the fake device; its memory is zeroed host memory. */
static struct hpu_tensor *fake(uint32_t dtype, unsigned int ndim, const int64_t *shape)
{
	struct hpu_storage *st = fake_alloc(sizeof(*st));
	struct hpu_tensor *t = fake_alloc(sizeof(*t));

	hpu_layout_init(&t->l, dtype, ndim, shape);
	st->dev = &fake_dev;
	st->size = (uint64_t)hpu_layout_numel(&t->l) * hpu_dt_size(dtype);
	st->va = (uintptr_t)fake_alloc(st->size + 8);
	t->storage = st;
	return t;
}

/* Another view of t's storage. */
static struct hpu_tensor *fake_view(const struct hpu_tensor *t, const struct hpu_tensor_layout *l)
{
	struct hpu_tensor *v = fake_alloc(sizeof(*v));

	*v = *t;
	v->l = *l;
	return v;
}

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NDIM(...) (sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t))
#define FAKE(dtype, ...) fake(dtype, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))

static bool strides_are(const struct hpu_tensor_layout *l, unsigned int ndim, const int64_t *want)
{
	return l->ndim == ndim && !memcmp(l->strides, want, ndim * sizeof(*want));
}

static void test_contiguous_layouts(void)
{
	struct hpu_tensor_layout l;
	int64_t lo, hi;

	hpu_layout_init(&l, HPU_DT_F32, 3, SHAPE(2, 3, 4));
	EXPECT(strides_are(&l, 3, SHAPE(12, 4, 1)));
	EXPECT(hpu_layout_numel(&l) == 24);
	EXPECT(hpu_layout_is_contiguous(&l));
	EXPECT(hpu_layout_span(&l, &lo, &hi) && lo == 0 && hi == 23);
	EXPECT(hpu_layout_check(&l, 96, "t") == 0);
	EXPECT(hpu_layout_check(&l, 95, "t") == -EINVAL);
	EXPECT_STR(hpu_last_error(), "t reaches elements 0..23 of a storage of 23 F32 elements");
	hpu_layout_init(&l, HPU_DT_BF16, 0, NULL);
	EXPECT(hpu_layout_numel(&l) == 1 && hpu_layout_check(&l, 2, "scalar") == 0);
	EXPECT(hpu_shape_check(7, SHAPE(1, 1, 1, 1, 1, 1, 1), "t") == -EINVAL);
	EXPECT_STR(hpu_last_error(), "t has 7 dims, at most 6 supported");
	EXPECT(hpu_shape_check(2, SHAPE(2, -3), "x") == -EINVAL);
	EXPECT_STR(hpu_last_error(), "x: dim 1 is -3");
}

static void test_broadcast(void)
{
	struct hpu_tensor_layout in, out;
	unsigned int ndim;
	int64_t shape[HPU_MAX_DIMS];

	hpu_layout_init(&in, HPU_DT_F32, 2, SHAPE(3, 1));
	EXPECT(hpu_layout_broadcast(&in, 3, SHAPE(2, 3, 4), &out, "a") == 0);
	EXPECT(strides_are(&out, 3, SHAPE(0, 1, 0)));
	EXPECT(hpu_layout_broadcast(&in, 2, SHAPE(4, 4), &out, "a") == -EINVAL);
	EXPECT_STR(hpu_last_error(), "a of shape [3, 1] does not broadcast to [4, 4]");
	EXPECT(hpu_broadcast_shapes(2, SHAPE(3, 1), 1, SHAPE(5), &ndim, shape) == 0);
	EXPECT(ndim == 2 && shape[0] == 3 && shape[1] == 5);
	EXPECT(hpu_broadcast_shapes(1, SHAPE(3), 1, SHAPE(5), &ndim, shape) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "shapes [3] and [5] do not broadcast");
}

static void test_views(void)
{
	struct hpu_tensor_layout base, t, v, s;

	hpu_layout_init(&base, HPU_DT_F32, 3, SHAPE(2, 3, 4));
	EXPECT(hpu_layout_view(&base, 2, SHAPE(6, -1), &v) == 0);
	EXPECT(v.shape[1] == 4 && strides_are(&v, 2, SHAPE(4, 1)));
	EXPECT(hpu_layout_view(&base, 4, SHAPE(2, 3, 2, 2), &v) == 0);
	EXPECT(strides_are(&v, 4, SHAPE(12, 4, 2, 1)));
	EXPECT(hpu_layout_view(&base, 2, SHAPE(5, 5), &v) == -EINVAL);
	/* Transposed: its dims may split, not merge. */
	EXPECT(hpu_layout_permute(&base, (const unsigned int[]){ 2, 0, 1 }, &t) == 0);
	EXPECT(t.shape[0] == 4 && strides_are(&t, 3, SHAPE(1, 12, 4)));
	EXPECT(hpu_layout_view(&t, 2, SHAPE(4, 6), &v) == 0);
	EXPECT(strides_are(&v, 2, SHAPE(1, 4)));
	EXPECT(hpu_layout_view(&t, 2, SHAPE(24, 1), &v) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "view: [4, 2, 3] cannot be viewed as [24, 1] without a copy");
	EXPECT(hpu_layout_permute(&base, (const unsigned int[]){ 0, 0, 1 }, &t) == -EINVAL);
	/* Every other row of the middle dim, from row 1. */
	EXPECT(hpu_layout_slice(&base, 1, 1, 3, 2, &s) == 0);
	EXPECT(s.offset == 4 && s.shape[1] == 1 && strides_are(&s, 3, SHAPE(12, 8, 1)));
	EXPECT(!hpu_layout_is_contiguous(&s));
	EXPECT(hpu_layout_slice(&base, 2, 0, 5, 1, &s) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "slice 0:5:1 out of range for dim 2 of size 4");
	EXPECT(hpu_layout_slice(&base, 2, 1, 4, 2, &s) == 0 && s.shape[2] == 2);
	EXPECT(hpu_layout_expand(&s, 4, SHAPE(5, 2, 3, 2), &v) == 0);
	EXPECT(strides_are(&v, 4, SHAPE(0, 12, 4, 2)) && v.offset == 1);
	EXPECT(hpu_layout_has_repeats(&v) && !hpu_layout_has_repeats(&s));
	/* Bounds: a view one element past its storage. */
	v = base;
	v.offset = 1;
	EXPECT(hpu_layout_check(&v, 96, "view") == -EINVAL);
	v.offset = 0;
	v.strides[0] = -12;
	EXPECT(hpu_layout_check(&v, 96, "view") == -EINVAL);
	v.offset = 12;
	EXPECT(hpu_layout_check(&v, 96, "view") == 0);
}

static void test_overlap(void)
{
	struct hpu_tensor_layout base, a, b;

	hpu_layout_init(&base, HPU_DT_F32, 2, SHAPE(4, 4));
	hpu_layout_slice(&base, 0, 0, 2, 1, &a);
	hpu_layout_slice(&base, 0, 2, 4, 1, &b);
	EXPECT(!hpu_layout_overlap(&a, &b));
	hpu_layout_slice(&base, 0, 1, 3, 1, &b);
	EXPECT(hpu_layout_overlap(&a, &b));
	EXPECT(hpu_layout_same(&a, &a) && !hpu_layout_same(&a, &b));
}

static struct hpu_kernel_params params_of(const struct hpu_op *op, struct hpu_tensor_desc *d)
{
	uint8_t buf[HPU_KERNEL_PARAMS_MAX];
	uint64_t addrs[HPU_OP_TENSORS] = { 0x1000, 0x2000, 0x3000, 0x4000 };
	struct hpu_kernel_params p;
	size_t size = hpu_params_encode(op, addrs, buf);

	EXPECT(size == sizeof(p) + op->num_tensors * sizeof(*d));
	memcpy(&p, buf, sizeof(p));
	memcpy(d, buf + sizeof(p), op->num_tensors * sizeof(*d));
	return p;
}

static void test_add_broadcasts_into_the_block(void)
{
	struct hpu_tensor *out = FAKE(HPU_DT_F32, 3, 4), *a = FAKE(HPU_DT_F32, 3, 1),
			  *b = FAKE(HPU_DT_F32, 4);
	struct hpu_tensor_desc d[3];
	struct hpu_kernel_params p;
	double alpha;

	EXPECT(hpu_op_add(S, out, a, b, -0.5) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_BINARY && launched.num_tensors == 3);
	p = params_of(&launched, d);
	EXPECT(p.version == HPU_KERNEL_PARAMS_VERSION && p.kernel == HPU_KERNEL_BINARY &&
	       p.num_tensors == 3 && p.flags == 0);
	EXPECT(p.args[0] == HPU_BINARY_ADD && p.args[1] == 0);
	memcpy(&alpha, &p.scalars[0], sizeof(alpha));
	EXPECT(alpha == -0.5);
	EXPECT(d[0].addr == 0x1000 && d[0].dtype == HPU_DTYPE_F32 && d[0].ndim == 2);
	EXPECT(d[0].shape[0] == 3 && d[0].shape[1] == 4 && d[0].shape[2] == 1 && d[0].shape[5] == 1);
	EXPECT(d[0].strides[0] == 4 && d[0].strides[1] == 1 && d[0].strides[2] == 0);
	EXPECT(d[1].shape[1] == 4 && d[1].strides[0] == 1 && d[1].strides[1] == 0);
	EXPECT(d[2].shape[0] == 3 && d[2].strides[0] == 0 && d[2].strides[1] == 1);
	/* With a scalar b: two operands, a1 set and s1 the value. */
	EXPECT(hpu_op_binary_scalar(S, HPU_BIN_MUL, out, out, 3) == 0);
	p = params_of(&launched, d);
	EXPECT(p.num_tensors == 2 && p.args[0] == HPU_BINARY_MUL && p.args[1] == 1);
}

/* layer_norm without weight and bias: their slots hold empty tensors, the flags say absent. */
static void test_absent_operands(void)
{
	struct hpu_tensor *in = FAKE(HPU_DT_BF16, 2, 3, 8), *out = FAKE(HPU_DT_BF16, 2, 3, 8),
			  *mean = FAKE(HPU_DT_F32, 2, 3), *rstd = FAKE(HPU_DT_F32, 2, 3);
	struct hpu_tensor_desc d[6];
	struct hpu_kernel_params p;

	EXPECT(hpu_op_layer_norm(S, out, mean, rstd, in, NULL, NULL, 1, 1e-5) == 0);
	p = params_of(&launched, d);
	EXPECT(p.kernel == HPU_KERNEL_LAYER_NORM && p.num_tensors == 6);
	EXPECT(p.args[0] == 1 && p.args[1] == 0);
	EXPECT(d[4].addr == 0 && d[4].dtype == HPU_DTYPE_F32 && d[4].ndim == 1 &&
	       d[4].shape[0] == 0 && d[4].shape[1] == 1 && d[4].strides[0] == 0);
	EXPECT(!memcmp(&d[4], &d[5], sizeof(d[4])));
	EXPECT(d[3].dtype == HPU_DTYPE_BF16 && d[1].dtype == HPU_DTYPE_F32 && d[1].ndim == 2);
}

static void test_rejections(void)
{
	struct hpu_tensor *f = FAKE(HPU_DT_F32, 4, 4), *i = FAKE(HPU_DT_I32, 4, 4),
			  *small = FAKE(HPU_DT_F32, 3), *big = FAKE(HPU_DT_F32, 8, 4);
	struct hpu_tensor_layout l;
	struct hpu_tensor *top, *bottom, *mid, *rep;
	unsigned int before = launches;

	EXPECT(hpu_op_add(S, f, f, small, 1) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_add: b of shape [3] does not broadcast to [4, 4]");
	EXPECT(hpu_op_add(S, f, f, i, 1) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_add: dtype mismatch: a is F32, b is I32");
	EXPECT(hpu_op_unary(S, HPU_UN_EXP, i, i) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_unary: out is I32, the op takes F32 or BF16 or F64");
	EXPECT(hpu_op_unary(S, HPU_UN_COPY, NULL, f) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_unary: out is NULL");
	EXPECT(hpu_op_binary(S, (enum hpu_binary_fn)99, f, f, f) == -EINVAL);
	EXPECT(hpu_op_add(NULL, f, f, f, 1) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_add: stream is NULL");
	/* Overlapping views of one storage: rows 0-3 and 2-5 of big. */
	hpu_layout_slice(&big->l, 0, 0, 4, 1, &l);
	top = fake_view(big, &l);
	hpu_layout_slice(&big->l, 0, 2, 6, 1, &l);
	mid = fake_view(big, &l);
	hpu_layout_slice(&big->l, 0, 4, 8, 1, &l);
	bottom = fake_view(big, &l);
	EXPECT(hpu_op_unary(S, HPU_UN_NEG, mid, top) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_unary: out overlaps in");
	EXPECT(hpu_op_unary(S, HPU_UN_NEG, bottom, top) == 0);
	EXPECT(hpu_op_unary(S, HPU_UN_NEG, top, top) == 0); /* in place */
	EXPECT(hpu_op_matmul(S, top, top, f) == -EINVAL);
	EXPECT_STR(hpu_last_error(),
		   "hpu_op_matmul: out overlaps a (the matrix engine works out of place)");
	/* A broadcast view cannot be written. */
	hpu_layout_expand(&small->l, 2, SHAPE(4, 3), &l);
	rep = fake_view(small, &l);
	EXPECT(hpu_op_fill(S, rep, 1) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_fill: out repeats elements (a broadcast view): "
				     "it cannot be written");
	/* Loss shapes and reductions. */
	EXPECT(hpu_op_nll_loss(S, small, f, i, HPU_LOSS_MEAN, -100) == -EINVAL);
	EXPECT(hpu_op_reduce(S, HPU_RED_SUM, small, f, 1 << 2) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_reduce: dims_mask 0x4 does not name dims of in's 2");
	EXPECT(hpu_op_reduce(S, HPU_RED_ARGMAX, f, f, 1) == -EINVAL);
	EXPECT(hpu_op_dropout(S, f, f, f, f, 1.5) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_dropout: p is 1.5, not in [0, 1)");
	/* 2^34 elements of a broadcast view: the device would refuse the launch, so does the op. */
	hpu_layout_expand(&FAKE(HPU_DT_F32, 1, 1)->l, 2, SHAPE(1 << 17, 1 << 17), &l);
	rep = fake_view(small, &l);
	EXPECT(hpu_op_reduce(S, HPU_RED_SUM, FAKE(HPU_DT_F32, 1, 1), rep, 3) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_reduce: in has 17179869184 elements: the tensor "
				     "engines take 4294967296 at most");
	EXPECT(launches == before + 2);
}

static void test_reduce_keeps_dims(void)
{
	struct hpu_tensor *in = FAKE(HPU_DT_F32, 2, 3, 4), *out = FAKE(HPU_DT_I64, 2, 4),
			  *sum = FAKE(HPU_DT_F32, 3);

	EXPECT(hpu_op_reduce(S, HPU_RED_ARGMAX, out, in, 1 << 1) == 0);
	EXPECT(launched.l[0].ndim == 3 && launched.l[0].shape[1] == 1);
	EXPECT(strides_are(&launched.l[0], 3, SHAPE(4, 0, 1)));
	EXPECT(launched.args[0] == HPU_REDUCE_ARGMAX && launched.args[1] == 2);
	EXPECT(hpu_op_reduce(S, HPU_RED_SUM, sum, in, 1 << 0 | 1 << 2) == 0);
	EXPECT(launched.l[0].shape[0] == 1 && launched.l[0].shape[1] == 3 &&
	       launched.l[0].shape[2] == 1);
}

/* Which copies and fills the launch hands to a DMA: bytes moved unchanged, nothing else. */
static void test_dma_ops(void)
{
	struct hpu_tensor *a = FAKE(HPU_DT_F32, 4, 6), *b = FAKE(HPU_DT_F32, 4, 6);
	struct hpu_op op = { .kernel = HPU_KERNEL_UNARY, .num_tensors = 2, .outputs = 1,
			     .args = { HPU_UNARY_COPY } };

	EXPECT(hpu_op_unary(S, HPU_UN_COPY, a, b) == 0 && hpu_op_is_dma_copy(&launched));
	EXPECT(hpu_op_fill(S, a, 0) == 0 && hpu_op_is_dma_fill(&launched));
	/* -0 and 1 are not all zero bytes. */
	EXPECT(hpu_op_fill(S, a, -0.0) == 0 && !hpu_op_is_dma_fill(&launched));
	EXPECT(hpu_op_fill(S, a, 1) == 0 && !hpu_op_is_dma_fill(&launched));
	hpu_layout_init(&op.l[0], HPU_DT_F32, 2, SHAPE(6, 4));
	hpu_layout_init(&op.l[1], HPU_DT_F32, 2, SHAPE(6, 4));
	EXPECT(hpu_op_is_dma_copy(&op) && !hpu_op_is_dma_fill(&op));
	/* A transposed source is read with strides, another dtype is converted: kernels. */
	hpu_layout_init(&op.l[1], HPU_DT_F32, 2, SHAPE(4, 6));
	EXPECT(hpu_layout_permute(&op.l[1], (const unsigned int[]){ 1, 0 }, &op.l[1]) == 0);
	EXPECT(!hpu_op_is_dma_copy(&op));
	hpu_layout_init(&op.l[1], HPU_DT_BF16, 2, SHAPE(6, 4));
	EXPECT(!hpu_op_is_dma_copy(&op));
	/* A broadcast source repeats its elements; a strided slice of the output skips some. */
	hpu_layout_init(&op.l[1], HPU_DT_F32, 1, SHAPE(4));
	EXPECT(hpu_layout_expand(&op.l[1], 2, SHAPE(6, 4), &op.l[1]) == 0);
	EXPECT(!hpu_op_is_dma_copy(&op));
	hpu_layout_init(&op.l[1], HPU_DT_F32, 2, SHAPE(6, 4));
	hpu_layout_init(&op.l[0], HPU_DT_F32, 2, SHAPE(12, 4));
	EXPECT(hpu_layout_slice(&op.l[0], 0, 0, 12, 2, &op.l[0]) == 0);
	EXPECT(!hpu_op_is_dma_copy(&op));
	/* A contiguous slice at an offset is one span: a DMA. */
	hpu_layout_init(&op.l[0], HPU_DT_F32, 2, SHAPE(12, 4));
	EXPECT(hpu_layout_slice(&op.l[0], 0, 6, 12, 1, &op.l[0]) == 0 && op.l[0].offset == 24);
	EXPECT(hpu_op_is_dma_copy(&op));
	op.args[0] = HPU_UNARY_NEG;
	EXPECT(!hpu_op_is_dma_copy(&op));
}

static struct hpu_pkt_mme_gemm gemm_of(const struct hpu_op *op, double beta, int *ret)
{
	uint64_t addrs[HPU_OP_TENSORS] = { 0xc000, 0xa000, 0xb000 };
	struct hpu_pkt_mme_gemm pkt = { 0 };

	*ret = hpu_gemm_encode(op, addrs, beta, &pkt);
	return pkt;
}

static void test_gemm_packets(void)
{
	struct hpu_tensor *a = FAKE(HPU_DT_F32, 5, 3), *b = FAKE(HPU_DT_BF16, 4, 5, 7),
			  *out = FAKE(HPU_DT_F32, 4, 3, 7), *w = FAKE(HPU_DT_F32, 6, 7),
			  *bias = FAKE(HPU_DT_F32, 6), *x = FAKE(HPU_DT_F32, 2, 3, 7),
			  *y = FAKE(HPU_DT_F32, 2, 3, 6), *bb = FAKE(HPU_DT_F32, 4, 5, 7);
	struct hpu_tensor_layout l;
	struct hpu_tensor *at;
	struct hpu_pkt_mme_gemm g;
	int ret;

	/* a^T [3, 5] (a transposed view) times b [4, 5, 7], a broadcast over the batch. */
	hpu_layout_permute(&a->l, (const unsigned int[]){ 1, 0 }, &l);
	at = fake_view(a, &l);
	EXPECT(hpu_op_matmul(S, out, at, b) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_matmul: dtype mismatch: a is F32, b is BF16");
	EXPECT(hpu_op_matmul(S, out, at, bb) == 0);
	g = gemm_of(&launched, 0, &ret);
	EXPECT(ret == 0);
	EXPECT(HPU_PKT_OPCODE(g.header) == HPU_PKT_MME_GEMM &&
	       HPU_PKT_FLAGS(g.header) == HPU_PKT_GEMM_TRANS_A);
	EXPECT(g.batch == 4 && g.m == 3 && g.n == 7 && g.k == 5);
	EXPECT(g.lda == 3 && g.stride_a == 0 && g.ldb == 7 && g.stride_b == 35);
	EXPECT(g.ldc == 7 && g.stride_c == 21 && g.a == 0xa000 && g.c == 0xc000);
	EXPECT(g.dtype_ab == HPU_DTYPE_F32 && g.dtype_c == HPU_DTYPE_F32 && g.beta == 0);
	/* linear: weight [6, 7] read transposed, bias broadcast over the rows. */
	EXPECT(hpu_op_linear(S, y, x, w, bias) == 0);
	EXPECT(launched.kernel == HPU_OPK_GEMM && launched.t[3] == bias);
	EXPECT(strides_are(&launched.l[3], 3, SHAPE(0, 0, 1)) && launched.l[3].shape[1] == 6);
	g = gemm_of(&launched, 1, &ret);
	EXPECT(ret == 0 && HPU_PKT_FLAGS(g.header) == HPU_PKT_GEMM_TRANS_B);
	EXPECT(g.batch == 1 && g.m == 6 && g.n == 6 && g.k == 7 && g.ldb == 7 && g.lda == 7);
	EXPECT(g.beta == 0x3f800000);
	/* An out whose rows are not contiguous is no matrix for the engine. */
	hpu_layout_permute(&out->l, (const unsigned int[]){ 0, 2, 1 }, &l);
	launched.l[0] = (struct hpu_tensor_layout){ .dtype = HPU_DT_F32, .ndim = 3,
						     .shape = { 1, 7, 3 }, .strides = { 0, 1, 7 } };
	gemm_of(&launched, 0, &ret);
	EXPECT(ret == -EINVAL);
}

static void put_f64(struct hpu_tensor *t, const double *v, size_t n)
{
	memcpy((void *)(uintptr_t)t->storage->va, v, n * sizeof(*v));
}

static double f64_at(const struct hpu_tensor *t, size_t i)
{
	return ((const double *)(uintptr_t)t->storage->va)[i];
}

static void test_fallback(void)
{
	struct hpu_tensor *a = FAKE(HPU_DT_F64, 2, 3), *b = FAKE(HPU_DT_F64, 3),
			  *out = FAKE(HPU_DT_F64, 2, 3), *cs = FAKE(HPU_DT_F32, 2, 3),
			  *cin = FAKE(HPU_DT_F32, 2, 3), *loss = FAKE(HPU_DT_F64),
			  *tgt = FAKE(HPU_DT_I64, 2), *mm = FAKE(HPU_DT_F64, 2, 2);
	struct hpu_tensor_layout l;
	struct hpu_tensor *bt;
	unsigned int before = launches;
	uint64_t count;
	float *c;

	put_f64(a, (const double[]){ 1, 2, 3, 4, 5, 6 }, 6);
	put_f64(b, (const double[]){ 10, 20, 30 }, 3);
	EXPECT(hpu_op_add(S, out, a, b, 2) == 0);
	EXPECT(f64_at(out, 0) == 21 && f64_at(out, 5) == 66);
	EXPECT(hpu_fallback_count(&fake_dev, "add", &count) == 0 && count == 1);
	EXPECT(hpu_fallback_count(&fake_dev, "frobnicate", &count) == -ENOENT);
	/* log_softmax along dim 1, then the mean NLL of targets {2, 0}. */
	EXPECT(hpu_op_softmax(S, out, a, 1, true) == 0);
	EXPECT(fabs(f64_at(out, 2) - (3 - log(exp(1) + exp(2) + exp(3)))) < 1e-12);
	((int64_t *)(uintptr_t)tgt->storage->va)[0] = 2;
	EXPECT(hpu_op_nll_loss(S, loss, out, tgt, HPU_LOSS_MEAN, -100) == 0);
	EXPECT(fabs(f64_at(loss, 0) + (f64_at(out, 2) + f64_at(out, 3)) / 2) < 1e-12);
	/* a [2, 3] @ b^T (a transposed view of a): a Gram matrix. */
	hpu_layout_permute(&a->l, (const unsigned int[]){ 1, 0 }, &l);
	bt = fake_view(a, &l);
	EXPECT(hpu_op_matmul(S, mm, a, bt) == 0);
	EXPECT(f64_at(mm, 0) == 14 && f64_at(mm, 1) == 32 && f64_at(mm, 3) == 77);
	/* cumsum has no device kernel: F32 falls back too. */
	c = (float *)(uintptr_t)cin->storage->va;
	memcpy(c, (const float[]){ 1, 2, 3, 4, 5, 6 }, 6 * sizeof(float));
	EXPECT(hpu_op_cumsum(S, cs, cin, 1) == 0);
	c = (float *)(uintptr_t)cs->storage->va;
	EXPECT(c[0] == 1 && c[2] == 6 && c[3] == 4 && c[5] == 15);
	EXPECT(hpu_fallback_count(&fake_dev, "cumsum", &count) == 0 && count == 1);
	EXPECT(hpu_fallback_total(&fake_dev, &count) == 0 && count == 5);
	EXPECT(launches == before);
	/* Strict: the op fails, named, and is not counted. */
	EXPECT(hpu_fallback_set_strict(&fake_dev, true) == 0);
	EXPECT(hpu_op_cumsum(S, cs, cin, 0) == -EOPNOTSUPP);
	EXPECT_STR(hpu_last_error(),
		   "hpu_op_cumsum: cumsum would fall back to the CPU (no device kernel): strict mode");
	EXPECT(hpu_fallback_total(&fake_dev, &count) == 0 && count == 5);
	hpu_fallback_set_strict(&fake_dev, false);
}

/*
 * Dropout's draws are Philox4x32-10's, four a block: Random123's known
 * answer for counter 0 and key 0 starts with 0x6627e8d5, 0xe169c58d, so
 * element 0 draws 0x6627e8 / 2^24 and element 1 0xe169c5 / 2^24.
 */
static void test_fallback_dropout(void)
{
	struct hpu_tensor *in = FAKE(HPU_DT_F64, 1), *out = FAKE(HPU_DT_F64, 1),
			  *mask = FAKE(HPU_DT_U8, 1), *rng = FAKE(HPU_DT_I64, 2);
	const double draw = 0x6627e8 / 16777216.0;
	int64_t *state = (int64_t *)(uintptr_t)rng->storage->va;
	uint8_t *kept = (uint8_t *)(uintptr_t)mask->storage->va;

	put_f64(in, (const double[]){ 3 }, 1);
	EXPECT(hpu_op_dropout(S, out, mask, in, rng, draw) == 0);
	EXPECT(*kept == 1 && f64_at(out, 0) == 3 / (1 - draw) && state[0] == 0 && state[1] == 1);
	state[1] = 0;
	EXPECT(hpu_op_dropout(S, out, mask, in, rng, draw + 1e-9) == 0);
	EXPECT(*kept == 0 && f64_at(out, 0) == 0 && state[1] == 1);
	EXPECT(hpu_op_dropout(S, out, mask, in, rng, 0xe169c5 / 16777216.0) == 0);
	EXPECT(*kept == 1 && state[1] == 2);
	state[1] = 1;
	EXPECT(hpu_op_dropout(S, out, mask, in, rng, 0xe169c5 / 16777216.0 + 1e-9) == 0);
	EXPECT(*kept == 0 && state[1] == 2);
}

/* Many elements from an offset inside a block: each draws its own position of the stream. */
static void test_fallback_dropout_stream(void)
{
	enum { N = 11 };
	struct hpu_tensor *in = FAKE(HPU_DT_F64, N), *out = FAKE(HPU_DT_F64, N),
			  *mask = FAKE(HPU_DT_U8, N), *rng = FAKE(HPU_DT_I64, 2);
	int64_t *state = (int64_t *)(uintptr_t)rng->storage->va;
	const uint8_t *kept = (const uint8_t *)(uintptr_t)mask->storage->va;
	const uint64_t seed = 0x123456789abcdefull, offset = 4 * 0xffffffffull + 2;
	double x[N];
	int i, same = 0;

	for (i = 0; i < N; i++)
		x[i] = i + 1;
	put_f64(in, x, N);
	state[0] = (int64_t)seed;
	state[1] = (int64_t)offset;
	EXPECT(hpu_op_dropout(S, out, mask, in, rng, 0.5) == 0);
	for (i = 0; i < N; i++)
		same += kept[i] == (hpu_philox_uniform(seed, offset + (uint64_t)i) >= 0.5) &&
			f64_at(out, i) == (kept[i] ? 2 * x[i] : 0);
	EXPECT(same == N && state[1] == (int64_t)offset + N);
}

/*
 * CLIP_GRAD_NORM's 2-norm adds each HPU_CLIP_CHUNK chunk's partial sum in
 * order, as the device does: grads of several chunks (the device's test,
 * test_kernels_optim.c, has the same ones) give the device's total to the
 * bit, and its scale.  A NaN spreads through the max norm to every grad.
 */
#define CLIP_CHUNKED_TOTAL 0x1.6a0c3b552b57p+9

static double clip_chunked_grad(unsigned int i, uint64_t k)
{
	uint32_t h = (uint32_t)(k * 2654435761u + i * 40503u);

	return (float)((int32_t)h / 2147483648.0);
}

/*
 * A softmax row one element longer than a device item may visit runs on
 * the host, counted; a row of exactly the bound is launched.  So does a
 * layer norm row past its bound (a third of it: it walks a row thrice).
 */
static void put_i64(struct hpu_tensor *t, const int64_t *v, size_t n)
{
	memcpy((void *)(uintptr_t)t->storage->va, v, n * sizeof(*v));
}

/*
 * The index ops on F64 run on the host: every index checked before it
 * addresses memory (a bad one fails, nothing written), topk's order the
 * device's.  F32's index_add launches scatter_add with a broadcast index.
 */
static void test_fallback_index(void)
{
	struct hpu_tensor *x = FAKE(HPU_DT_F64, 2, 3), *out = FAKE(HPU_DT_F64, 2, 2);
	struct hpu_tensor *i2 = FAKE(HPU_DT_I64, 2), *g = FAKE(HPU_DT_I64, 2, 2);
	struct hpu_tensor *v = FAKE(HPU_DT_F64, 2, 2), *vi = FAKE(HPU_DT_I64, 2, 2);
	struct hpu_tensor *f = FAKE(HPU_DT_F32, 4, 3), *fs = FAKE(HPU_DT_F32, 4, 5);
	struct hpu_tensor *i5 = FAKE(HPU_DT_I32, 5);
	unsigned int before = launches;

	put_f64(x, (const double[]){ 1, NAN, 3, 3, 2, 3 }, 6);
	put_i64(i2, (const int64_t[]){ 2, 0 }, 2);
	EXPECT(hpu_op_index_select(S, out, x, i2, -1) == 0);
	EXPECT(f64_at(out, 0) == 3 && f64_at(out, 1) == 1 && f64_at(out, 3) == 3);
	put_i64(g, (const int64_t[]){ 1, 1, 0, 2 }, 4);
	EXPECT(hpu_op_gather(S, out, x, g, 1) == 0);
	EXPECT(isnan(f64_at(out, 0)) && f64_at(out, 2) == 3 && f64_at(out, 3) == 3);
	/* Duplicates add; scatter's last write wins. */
	put_f64(out, (const double[]){ 10, 20, 30, 40 }, 4);
	EXPECT(hpu_op_scatter_add(S, x, g, out, 1) == 0);
	EXPECT(f64_at(x, 0) == 1 && isnan(f64_at(x, 1)) && f64_at(x, 3) == 33);
	EXPECT(f64_at(x, 5) == 43);
	EXPECT(hpu_op_scatter(S, x, g, out, 1) == 0);
	EXPECT(isnan(f64_at(x, 1)) == false && f64_at(x, 1) == 20);
	/* NaN ranks first, ties by the lower index. */
	put_f64(x, (const double[]){ 1, NAN, 3, 3, 2, 3 }, 6);
	EXPECT(hpu_op_topk(S, v, vi, x, 2, 1, true, true) == 0);
	EXPECT(isnan(f64_at(v, 0)) && f64_at(v, 1) == 3 && f64_at(v, 2) == 3);
	EXPECT(((int64_t *)(uintptr_t)vi->storage->va)[1] == 2);
	EXPECT(((int64_t *)(uintptr_t)vi->storage->va)[3] == 2);
	EXPECT(hpu_op_topk(S, v, vi, x, 2, 1, false, true) == 0);
	EXPECT(f64_at(v, 0) == 1 && f64_at(v, 1) == 3 && f64_at(v, 2) == 2);
	EXPECT(launches == before);
	/* A bad index fails and writes nothing. */
	put_i64(g, (const int64_t[]){ 1, 1, 0, 3 }, 4);
	EXPECT(hpu_op_scatter_add(S, x, g, out, 1) == -EINVAL);
	EXPECT(f64_at(x, 0) == 1 && f64_at(x, 5) == 3);
	put_i64(i2, (const int64_t[]){ -1, 0 }, 2);
	EXPECT(hpu_op_index_select(S, out, x, i2, 1) == -EINVAL);
	/* Shapes, dims and k are checked before anything runs. */
	EXPECT(hpu_op_index_select(S, out, x, g, 1) == -EINVAL);
	EXPECT(hpu_op_gather(S, out, x, g, 2) == -EINVAL);
	EXPECT(hpu_op_topk(S, v, vi, x, 4, 1, true, true) == -EINVAL);
	EXPECT(hpu_op_index_add(S, x, i2, out, 0) == -EINVAL);
	EXPECT(launches == before);
	/* index_add: its index along dim 1 of src, broadcast over dim 0. */
	EXPECT(hpu_op_index_add(S, f, i5, fs, 1) == 0);
	EXPECT(launches == before + 1 && launched.kernel == HPU_KERNEL_SCATTER_ADD);
	EXPECT(strides_are(&launched.l[1], 2, (const int64_t[]){ 0, 1 }));
	EXPECT(launched.l[1].shape[0] == 4 && launched.l[1].shape[1] == 5);
}

static void test_fallback_long_rows(void)
{
	const int64_t n = HPU_KERNEL_MAX_ITEM_WORK + 1;
	struct hpu_tensor *in = FAKE(HPU_DT_F32, 1, n), *out = FAKE(HPU_DT_F32, 1, n);
	struct hpu_tensor *fits = FAKE(HPU_DT_F32, 1, n - 1), *fits_out = FAKE(HPU_DT_F32, 1, n - 1);
	unsigned int before = launches;
	uint64_t count = 0, was;
	const float *o;

	EXPECT(hpu_fallback_count(&fake_dev, "softmax", &was) == 0);
	memset((void *)(uintptr_t)in->storage->va, 0, (size_t)n * sizeof(float));
	EXPECT(hpu_op_softmax(S, out, in, 1, false) == 0);
	o = (const float *)(uintptr_t)out->storage->va;
	EXPECT(o[0] == (float)(1.0 / (double)n) && o[n - 1] == o[0]);
	EXPECT(hpu_fallback_count(&fake_dev, "softmax", &count) == 0 && count == was + 1);
	EXPECT(launches == before);
	EXPECT(hpu_op_softmax(S, fits_out, fits, 1, false) == 0);
	EXPECT(hpu_fallback_count(&fake_dev, "softmax", &count) == 0 && count == was + 1);
	EXPECT(launches == before + 1);
	EXPECT(hpu_fallback_count(&fake_dev, "layer_norm", &was) == 0);
	in->l.shape[1] = out->l.shape[1] = HPU_KERNEL_MAX_ITEM_WORK / 3 + 1;
	EXPECT(hpu_op_layer_norm(S, out, FAKE(HPU_DT_F32, 1), FAKE(HPU_DT_F32, 1), in, NULL, NULL,
				 1, 1e-5) == 0);
	EXPECT(o[0] == 0);
	EXPECT(hpu_fallback_count(&fake_dev, "layer_norm", &count) == 0 && count == was + 1);
	EXPECT(launches == before + 1);
}

/*
 * layer_norm on F64 [2, 3] rows x with weight w and a bias, and its
 * backward of g, against the formulas of row 0.
 */
static void test_fallback_layer_norm(struct hpu_tensor *x, struct hpu_tensor *g,
				     struct hpu_tensor *w)
{
	struct hpu_tensor *y = FAKE(HPU_DT_F64, 2, 3), *b = FAKE(HPU_DT_F64, 3);
	struct hpu_tensor *mean = FAKE(HPU_DT_F32, 2), *rstd = FAKE(HPU_DT_F32, 2);
	struct hpu_tensor *gw = FAKE(HPU_DT_F64, 3), *gb = FAKE(HPU_DT_F64, 3);
	const double *xv = (const double *)(uintptr_t)x->storage->va;
	const double *gv = (const double *)(uintptr_t)g->storage->va;
	const double *wv = (const double *)(uintptr_t)w->storage->va;
	double *bv = (double *)(uintptr_t)b->storage->va, *yv = (double *)(uintptr_t)y->storage->va;
	const double *gwv = (const double *)(uintptr_t)gw->storage->va;
	const double *gbv = (const double *)(uintptr_t)gb->storage->va;
	const float *mv = (const float *)(uintptr_t)mean->storage->va;
	const float *rv = (const float *)(uintptr_t)rstd->storage->va;
	double m = (xv[0] + xv[1] + xv[2]) / 3, var = 0, sg = 0, sgx = 0, xhat[3];

	for (int j = 0; j < 3; j++) {
		var += (xv[j] - m) * (xv[j] - m) / 3;
		bv[j] = j - 1;
	}
	EXPECT(hpu_op_layer_norm(S, y, mean, rstd, x, w, b, 1, 0.5) == 0);
	EXPECT(mv[0] == (float)m && rv[0] == (float)(1 / sqrt(var + 0.5)));
	EXPECT(fabs(yv[2] - ((xv[2] - m) / sqrt(var + 0.5) * wv[2] + bv[2])) < 1e-12);
	/* The backward from the statistics as saved (F32). */
	for (int j = 0; j < 3; j++) {
		xhat[j] = (xv[j] - mv[0]) * rv[0];
		sg += gv[j] * wv[j] / 3;
		sgx += gv[j] * wv[j] * xhat[j] / 3;
	}
	EXPECT(hpu_op_layer_norm_backward(S, y, gw, gb, g, x, mean, rstd, w, 1) == 0);
	EXPECT(fabs(yv[2] - rv[0] * (gv[2] * wv[2] - sg - xhat[2] * sgx)) < 1e-12);
	EXPECT(fabs(gwv[0] - (gv[0] * xhat[0] + gv[3] * (xv[3] - mv[1]) * rv[1])) < 1e-12);
	EXPECT(gbv[1] == gv[1] + gv[4]);
}

/*
 * The ops of issue 24's model glue on F64 (host only): silu, sin, cos, erf and silu's
 * backward elementwise; rms_norm, layer_norm and their backwards against the formulas;
 * triu as bytes; arange's lane blocks (each lane counting on from its base).
 */
static void test_fallback_misc(void)
{
	struct hpu_tensor *x = FAKE(HPU_DT_F64, 2, 3), *y = FAKE(HPU_DT_F64, 2, 3);
	struct hpu_tensor *g = FAKE(HPU_DT_F64, 2, 3), *gw = FAKE(HPU_DT_F64, 3);
	struct hpu_tensor *w = FAKE(HPU_DT_F64, 3), *rstd = FAKE(HPU_DT_F32, 2);
	struct hpu_tensor *ar = FAKE(HPU_DT_F64, 21), *ai = FAKE(HPU_DT_I64, 5);
	double *xv = (double *)(uintptr_t)x->storage->va, *yv = (double *)(uintptr_t)y->storage->va;
	double *gv = (double *)(uintptr_t)g->storage->va, *wv = (double *)(uintptr_t)w->storage->va;
	const double *gwv = (const double *)(uintptr_t)gw->storage->va;
	const double *arv = (const double *)(uintptr_t)ar->storage->va;
	const float *rv = (const float *)(uintptr_t)rstd->storage->va;
	static const double xs[6] = { -1.5, 0.25, 2, 3, -4, 0.5 };
	double r0 = 1 / sqrt((2.25 + 0.0625 + 4) / 3 + 0.5), s = 1 / (1 + exp(-2.0)), sgx = 0;

	for (int i = 0; i < 6; i++) {
		xv[i] = xs[i];
		gv[i] = 1 + i;
	}
	for (int i = 0; i < 3; i++)
		wv[i] = 0.5 * (i + 1);
	EXPECT(hpu_op_unary(S, HPU_UN_SILU, y, x) == 0 && yv[2] == 2 / (1 + exp(-2.0)));
	EXPECT(hpu_op_unary(S, HPU_UN_SIN, y, x) == 0 && yv[0] == sin(-1.5));
	EXPECT(hpu_op_unary(S, HPU_UN_COS, y, x) == 0 && yv[1] == cos(0.25));
	EXPECT(hpu_op_unary(S, HPU_UN_ERF, y, x) == 0 && yv[3] == erf(3.0));
	EXPECT(hpu_op_silu_backward(S, y, g, x) == 0 && yv[2] == 3 * s * (1 + 2 * (1 - s)));
	EXPECT(hpu_op_rms_norm(S, y, rstd, x, w, 1, 0.5) == 0);
	EXPECT(rv[0] == (float)r0 && fabs(yv[2] - 2 * r0 * 1.5) < 1e-12);
	/* rstd as the device saved it (F32), the gradient's formula row 0, column 2. */
	for (int j = 0; j < 3; j++)
		sgx += gv[j] * wv[j] * xv[j] * rv[0] / 3;
	EXPECT(hpu_op_rms_norm_backward(S, y, gw, g, x, rstd, w, 1) == 0);
	EXPECT(fabs(yv[2] - rv[0] * (3 * 1.5 - 2 * rv[0] * sgx)) < 1e-12);
	EXPECT(fabs(gwv[0] - (-1.5 * rv[0] + 12.0 * rv[1])) < 1e-12);
	test_fallback_layer_norm(x, g, w);
	EXPECT(hpu_op_triangle(S, y, x, 0, true) == 0 && yv[3] == 0 && yv[4] == -4 && yv[2] == 2);
	/* Blocks of 2 * 4 lanes: elements 0-15 from bases 0 and 4 * 0.1 ..., 16-20 the tail. */
	EXPECT(hpu_op_arange(S, ar, 0, 0.1, 4, 0) == 0);
	/* 12 * 0.1 + 0.1 is 1.3000000000000003, 13 * 0.1 is 1.3: the blocks show. */
	EXPECT(arv[13] == 12 * 0.1 + 0.1 && arv[13] != 13 * 0.1 && arv[20] == 20 * 0.1);
	/* Integral: no fallback (a launch of the fake device), whole numbers wanted. */
	EXPECT(hpu_op_arange(S, ai, (double)(1ll << 60), -3, 0, 0) == 0);
	EXPECT(hpu_op_arange(S, ai, 0.5, 1, 0, 0) == -EINVAL);
}

static void test_fallback_clip(void)
{
	const int64_t n[2] = { 2 * HPU_CLIP_CHUNK + 77, HPU_CLIP_CHUNK + 3 };
	struct hpu_tensor *total = FAKE(HPU_DT_F32), *g[2] = { FAKE(HPU_DT_F64, n[0]),
							      FAKE(HPU_DT_F64, n[1]) };
	const double coef = 0.5 / (CLIP_CHUNKED_TOTAL + 1e-6);
	const float *norm = (const float *)(uintptr_t)total->storage->va;
	double *v[2];
	int64_t bad = 0;

	for (unsigned int i = 0; i < 2; i++) {
		v[i] = (double *)(uintptr_t)g[i]->storage->va;
		for (int64_t k = 0; k < n[i]; k++)
			v[i][k] = clip_chunked_grad(i + 1, (uint64_t)k);
	}
	EXPECT(hpu_op_clip_grad_norm(S, total, g, 2, 0.5, 2) == 0);
	EXPECT(*norm == (float)CLIP_CHUNKED_TOTAL);
	for (unsigned int i = 0; i < 2; i++)
		for (int64_t k = 0; k < n[i]; k++)
			bad += v[i][k] != clip_chunked_grad(i + 1, (uint64_t)k) * coef;
	EXPECT(bad == 0);
	v[0][5] = NAN;
	EXPECT(hpu_op_clip_grad_norm(S, total, g, 2, 0.5, INFINITY) == 0);
	EXPECT(isnan(*norm) && isnan(v[0][0]) && isnan(v[1][n[1] - 1]));
}

/*
 * Convolution: F32 launches carry the parameters as the kernels' args (1d
 * with the neutral height entries, bias only when given); F64 falls back
 * and computes forward and all three gradients; bad shapes are refused.
 */
static void test_conv(void)
{
	struct hpu_tensor *x = FAKE(HPU_DT_F64, 1, 1, 3, 3), *w = FAKE(HPU_DT_F64, 1, 1, 2, 2);
	struct hpu_tensor *b = FAKE(HPU_DT_F64, 1), *y = FAKE(HPU_DT_F64, 1, 1, 2, 2);
	struct hpu_tensor *gx = FAKE(HPU_DT_F64, 1, 1, 3, 3), *gw = FAKE(HPU_DT_F64, 1, 1, 2, 2);
	struct hpu_tensor *gb = FAKE(HPU_DT_F64, 1), *x1 = FAKE(HPU_DT_F32, 2, 4, 9);
	struct hpu_tensor *w1 = FAKE(HPU_DT_F32, 6, 2, 3), *y1 = FAKE(HPU_DT_F32, 2, 6, 4);
	const struct hpu_conv_params p = { { 1, 1 }, { 0, 0 }, { 1, 1 }, 1 };
	const struct hpu_conv_params p1 = { { 7, 2 }, { 7, 1 }, { 7, 2 }, 2 };
	const double want_gx[9] = { 1, 1, 0, 1, 2, 1, 0, 1, 1 }, want_gw[4] = { 12, 16, 24, 28 };
	unsigned int before = launches, i;
	const int64_t args1[8] = { 1, 2, 0, 1, 1, 2, 2, 0 };
	uint64_t was, count;

	put_f64(x, (const double[]){ 1, 2, 3, 4, 5, 6, 7, 8, 9 }, 9);
	put_f64(w, (const double[]){ 1, 0, 0, 1 }, 4);
	put_f64(b, (const double[]){ 0.5 }, 1);
	EXPECT(hpu_op_conv(S, y, x, w, b, &p) == 0);
	EXPECT(f64_at(y, 0) == 6.5 && f64_at(y, 1) == 8.5 && f64_at(y, 2) == 12.5 &&
	       f64_at(y, 3) == 14.5);
	put_f64(y, (const double[]){ 1, 1, 1, 1 }, 4);
	EXPECT(hpu_op_conv_backward(S, gx, gw, gb, y, x, w, &p) == 0);
	for (i = 0; i < 9; i++)
		EXPECT(f64_at(gx, i) == want_gx[i]);
	for (i = 0; i < 4; i++)
		EXPECT(f64_at(gw, i) == want_gw[i]);
	EXPECT(f64_at(gb, 0) == 4);
	EXPECT(launches == before);
	/* 1d, stride 2, padding 1, dilation 2, groups 2: L 9 gives (9 + 2 - 5) / 2 + 1 = 4. */
	EXPECT(hpu_op_conv(S, y1, x1, w1, NULL, &p1) == 0);
	EXPECT(launches == before + 1 && launched.kernel == HPU_KERNEL_CONV &&
	       launched.num_tensors == 3 && !memcmp(launched.args, args1, sizeof(args1)));
	EXPECT(hpu_op_conv_backward(S, FAKE(HPU_DT_F32, 2, 4, 10), NULL, NULL, y1, x1, w1, &p1) ==
	       -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_conv_backward: grad_in must have in's shape");
	y1->l.shape[2] = 5;
	EXPECT(hpu_op_conv(S, y1, x1, w1, NULL, &p1) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_conv: out's dim 2 is 5, the convolution gives 4");
	y1->l.shape[2] = 4;
	w1->l.shape[1] = 3;
	EXPECT(hpu_op_conv(S, y1, x1, w1, NULL, &p1) == -EINVAL);
	w1->l.shape[1] = 2;
	EXPECT(hpu_op_conv(S, y1, x1, w1, NULL, &(struct hpu_conv_params){ { 1, 0 }, { 0, 1 },
									      { 1, 2 }, 2 }) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_conv: stride[1] is 0, not in [1, 2^20]");
	EXPECT(hpu_op_conv(S, y1, x1, w1, NULL, &(struct hpu_conv_params){ { 1, 2 }, { 0, 1 },
									      { 1, 2 }, 3 }) == -EINVAL);
	EXPECT(launches == before + 1);
	/* A patch of 2^19 + 2^18 multiply-adds is past any item of the device: the host's. */
	x1 = FAKE(HPU_DT_F32, 1, 786432, 1, 1);
	w1 = FAKE(HPU_DT_F32, 1, 786432, 1, 1);
	y1 = FAKE(HPU_DT_F32, 1, 1, 1, 1);
	((float *)(uintptr_t)x1->storage->va)[786431] = 3;
	((float *)(uintptr_t)w1->storage->va)[786431] = 2;
	EXPECT(hpu_fallback_count(&fake_dev, "conv", &was) == 0);
	EXPECT(hpu_op_conv(S, y1, x1, w1, NULL, &p) == 0);
	EXPECT(*(float *)(uintptr_t)y1->storage->va == 6);
	EXPECT(hpu_fallback_count(&fake_dev, "conv", &count) == 0 && count == was + 1);
	EXPECT(launches == before + 1);
}

/* Pooling and batch norm: the launches' args, the refusals with reasons. */
static void test_pool_bnorm_ops(void)
{
	static const int64_t k[2] = { 3, 2 }, st[2] = { 2, 2 }, pad[2] = { 1, 1 }, dil[2] = { 1, 1 };
	struct hpu_tensor *in = FAKE(HPU_DT_BF16, 2, 3, 7, 9), *out = FAKE(HPU_DT_BF16, 2, 3, 4, 5);
	struct hpu_tensor *ix = FAKE(HPU_DT_I64, 2, 3, 4, 5), *c3 = FAKE(HPU_DT_F32, 3);
	struct hpu_tensor *c4 = FAKE(HPU_DT_F32, 4), *m = FAKE(HPU_DT_F32, 3), *v = FAKE(HPU_DT_F32, 3);
	unsigned int before = launches;

	EXPECT(hpu_op_max_pool2d(S, out, ix, in, k, st, pad, dil) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_MAX_POOL && launched.args[0] == 3 &&
	       launched.args[1] == 2 && launched.args[4] == 1 && launched.args[7] == 1);
	EXPECT(hpu_op_avg_pool2d_backward(S, in, out, k, st, pad, true, 0) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_AVG_POOL_BWD && launched.args[6] == 1);
	EXPECT(hpu_op_adaptive_avg_pool2d(S, FAKE(HPU_DT_BF16, 2, 3, 1, 4), in) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_AVG_POOL && launched.args[6] == 2 &&
	       launched.args[0] == 0);
	EXPECT(hpu_op_max_pool2d(S, out, ix, in, k, st, (const int64_t[]){ 2, 1 }, dil) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_max_pool2d: height out: no pooling of 7 into 4 with "
				     "kernel 3, stride 2, padding 2 (at most half the kernel), "
				     "dilation 1, in (0, 2^20]");
	EXPECT(hpu_op_avg_pool2d(S, FAKE(HPU_DT_BF16, 2, 3, 5, 5), in, k, st, pad, false, 0) ==
	       -EINVAL);
	EXPECT(hpu_op_avg_pool2d(S, FAKE(HPU_DT_BF16, 3, 3, 4, 5), in, k, st, pad, false, 0) ==
	       -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_avg_pool2d: in and out must have the same leading dims");
	EXPECT(hpu_op_max_pool2d(S, out, out, in, k, st, pad, dil) == -EINVAL);
	EXPECT(hpu_op_batch_norm(S, in, m, v, in, c3, NULL, c3, v, HPU_BN_TRAINING, 0.1, 1e-5) ==
	       -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_batch_norm: save_invstd overlaps running_var");
	EXPECT(hpu_op_batch_norm(S, in, m, v, in, c4, NULL, NULL, NULL, HPU_BN_TRAINING, 0.1,
				 1e-5) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_batch_norm: weight must be [C], C = 3 (in's dim 1)");
	EXPECT(hpu_op_batch_norm(S, in, m, v, in, NULL, NULL, NULL, NULL, 0, 0.1, 1e-5) == -EINVAL);
	EXPECT_STR(hpu_last_error(),
		   "hpu_op_batch_norm: eval normalises by running statistics: none given");
	EXPECT(hpu_op_batch_norm(S, in, m, v, in, c3, c3, FAKE(HPU_DT_F32, 3), FAKE(HPU_DT_F32, 3),
				 HPU_BN_TRAINING, 0.1, 1e-5) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_BATCH_NORM && launched.args[0] == 15 &&
	       launched.scalars[0] == 1e-5 && launched.scalars[1] == 0.1);
	EXPECT(hpu_op_batch_norm_backward(S, in, NULL, c3, in, out, m, v, NULL, HPU_BN_TRAINING,
					  1e-5) == -EINVAL);
	EXPECT(hpu_op_batch_norm_backward(S, out, c4, c3, out, out, m, v, NULL, HPU_BN_VAR, 1e-5) ==
	       -EINVAL);
	EXPECT(hpu_op_batch_norm_backward(S, out, NULL, c3, out, FAKE(HPU_DT_BF16, 2, 3, 4, 5), m,
					  v, NULL, HPU_BN_VAR, 1e-3) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_BATCH_NORM_BWD && launched.args[0] == 20);
	EXPECT(launches == before + 5);
}

/*
 * F64 pooling and batch norm on the host: a max with its index and
 * gradient, an average with count_include_pad, batch statistics and the
 * running statistics' update.
 */
static void test_fallback_pool_bnorm(void)
{
	static const int64_t k[2] = { 2, 2 }, st[2] = { 2, 2 }, p0[2] = { 0, 0 }, p1[2] = { 0, 1 };
	static const int64_t one[2] = { 1, 1 };
	struct hpu_tensor *x = FAKE(HPU_DT_F64, 1, 1, 2, 4), *y = FAKE(HPU_DT_F64, 1, 1, 1, 2);
	struct hpu_tensor *ix = FAKE(HPU_DT_I64, 1, 1, 1, 2), *gx = FAKE(HPU_DT_F64, 1, 1, 2, 4);
	struct hpu_tensor *ya = FAKE(HPU_DT_F64, 1, 1, 1, 3), *bx = FAKE(HPU_DT_F64, 2, 2);
	struct hpu_tensor *by = FAKE(HPU_DT_F64, 2, 2), *m = FAKE(HPU_DT_F64, 2);
	struct hpu_tensor *is = FAKE(HPU_DT_F64, 2), *rm = FAKE(HPU_DT_F64, 2);
	struct hpu_tensor *rv = FAKE(HPU_DT_F64, 2);
	int64_t *idx = (int64_t *)(uintptr_t)ix->storage->va;

	put_f64(x, (const double[]){ 1, 7, 3, 0, 7, 2, 4, 4 }, 8);
	EXPECT(hpu_op_max_pool2d(S, y, ix, x, k, st, p0, one) == 0);
	EXPECT(f64_at(y, 0) == 7 && idx[0] == 1 && f64_at(y, 1) == 4 && idx[1] == 6);
	put_f64(y, (const double[]){ 10, 20 }, 2);
	EXPECT(hpu_op_max_pool2d_backward(S, gx, y, ix, k, st, p0, one) == 0);
	EXPECT(f64_at(gx, 1) == 10 && f64_at(gx, 4) == 0 && f64_at(gx, 6) == 20 &&
	       f64_at(gx, 7) == 0);
	idx[1] = 1; /* outside window 1: refused before anything is written */
	EXPECT(hpu_op_max_pool2d_backward(S, gx, y, ix, k, st, p0, one) == -EINVAL);
	EXPECT(f64_at(gx, 6) == 20);
	/* Windows of 2 x 2 at columns -1, 1, 3: sums 8, 16, 4 over 4, or 2, 4, 2 in the input. */
	EXPECT(hpu_op_avg_pool2d(S, ya, x, k, st, p1, true, 0) == 0);
	EXPECT(f64_at(ya, 0) == 2 && f64_at(ya, 1) == 4 && f64_at(ya, 2) == 1);
	EXPECT(hpu_op_avg_pool2d(S, ya, x, k, st, p1, false, 0) == 0);
	EXPECT(f64_at(ya, 0) == 4 && f64_at(ya, 1) == 4 && f64_at(ya, 2) == 2);
	/* Channels {1, 3} and {2, 6}: means 2, 4, biased variances 1, 4. */
	put_f64(bx, (const double[]){ 1, 2, 3, 6 }, 4);
	put_f64(rv, (const double[]){ 1, 1 }, 2);
	EXPECT(hpu_op_batch_norm(S, by, m, is, bx, NULL, NULL, rm, rv, HPU_BN_TRAINING, 0.5, 0) ==
	       0);
	EXPECT(f64_at(by, 0) == -1 && f64_at(by, 3) == 1 && f64_at(is, 1) == 0.5);
	EXPECT(f64_at(rm, 1) == 2 && f64_at(rv, 0) == 1.5 && f64_at(rv, 1) == 4.5);
	EXPECT(hpu_op_batch_norm(S, by, m, is, bx, NULL, NULL, rm, rv, 0, 0.5, 0) == 0);
	EXPECT(fabs(f64_at(by, 3) - (6 - 2) / sqrt(4.5)) < 1e-12);
}

/*
 * Group norm: the launches' args and refusals; F64 on the host: two groups
 * of two elements (means 2 and 4, rstd 1 and 1 / 2), weight and bias, and
 * the gradients of one group of three against the closed form.
 */
static void test_gnorm(void)
{
	struct hpu_tensor *in = FAKE(HPU_DT_BF16, 2, 6, 4), *st = FAKE(HPU_DT_F32, 2, 3);
	struct hpu_tensor *st2 = FAKE(HPU_DT_F32, 2, 3), *c6 = FAKE(HPU_DT_F32, 6);
	struct hpu_tensor *x = FAKE(HPU_DT_F64, 1, 2, 2), *y = FAKE(HPU_DT_F64, 1, 2, 2);
	struct hpu_tensor *m = FAKE(HPU_DT_F64, 1, 2), *r = FAKE(HPU_DT_F64, 1, 2);
	struct hpu_tensor *w = FAKE(HPU_DT_F64, 2), *b = FAKE(HPU_DT_F64, 2);
	struct hpu_tensor *x3 = FAKE(HPU_DT_F64, 1, 1, 3), *g3 = FAKE(HPU_DT_F64, 1, 1, 3);
	struct hpu_tensor *gi = FAKE(HPU_DT_F64, 1, 1, 3), *m1 = FAKE(HPU_DT_F64, 1, 1);
	struct hpu_tensor *r1 = FAKE(HPU_DT_F64, 1, 1), *gw = FAKE(HPU_DT_F64, 1);
	double rstd = 1 / sqrt(6), xhat[3] = { -3 * rstd, 0, 3 * rstd };

	EXPECT(hpu_op_group_norm(S, in, st, st2, in, c6, NULL, 3, 1e-5) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_GROUP_NORM && launched.args[0] == 3 &&
	       launched.args[1] == 1 && launched.scalars[0] == 1e-5);
	EXPECT(hpu_op_group_norm(S, in, st, st2, in, NULL, NULL, 4, 1e-5) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_group_norm: 4 groups do not divide 6 channels");
	EXPECT(hpu_op_group_norm(S, in, st, FAKE(HPU_DT_F32, 2, 2), in, NULL, NULL, 3, 0) ==
	       -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_group_norm: rstd must be [N, G] = [2, 3]");
	EXPECT(hpu_op_group_norm(S, in, st, st2, in, FAKE(HPU_DT_F32, 4), NULL, 3, 0) == -EINVAL);
	EXPECT(hpu_op_group_norm(S, in, st, st, in, NULL, NULL, 3, 0) == -EINVAL);
	EXPECT(hpu_op_group_norm(S, in, st, st2, in, NULL, NULL, 3, -1) == -EINVAL);
	EXPECT(hpu_op_group_norm_backward(S, NULL, c6, NULL, in, in, st, st2, NULL, 3) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_GROUP_NORM_BWD && launched.args[1] == 2);
	EXPECT(hpu_op_group_norm_backward(S, in, NULL, NULL, FAKE(HPU_DT_F32, 2, 6, 4), in, st,
					  st2, c6, 2) == -EINVAL);
	put_f64(x, (const double[]){ 1, 3, 2, 6 }, 4);
	put_f64(w, (const double[]){ 2, 3 }, 2);
	put_f64(b, (const double[]){ 0, 1 }, 2);
	EXPECT(hpu_op_group_norm(S, y, m, r, x, w, b, 2, 0) == 0);
	EXPECT(f64_at(y, 0) == -2 && f64_at(y, 1) == 2 && f64_at(y, 2) == -2 && f64_at(y, 3) == 4);
	EXPECT(f64_at(m, 1) == 4 && f64_at(r, 0) == 1 && f64_at(r, 1) == 0.5);
	put_f64(x3, (const double[]){ 0, 3, 6 }, 3);
	put_f64(g3, (const double[]){ 1, 0, 0 }, 3);
	EXPECT(hpu_op_group_norm(S, gi, m1, r1, x3, NULL, NULL, 1, 0) == 0);
	EXPECT(hpu_op_group_norm_backward(S, gi, gw, NULL, g3, x3, m1, r1, NULL, 1) == 0);
	EXPECT(fabs(f64_at(gw, 0) - xhat[0]) < 1e-12);
	for (int i = 0; i < 3; i++)
		EXPECT(fabs(f64_at(gi, i) - rstd * ((i == 0) - 1.0 / 3 - xhat[i] * xhat[0] / 3)) <
		       1e-12);
}

/*
 * Random fills: the launch's args, the refusals; F64 on the host from the
 * stream's first draws (seed 0: 0x6627e8 and 0xe169c5 / 2^24).
 */
static void test_random(void)
{
	struct hpu_tensor *out = FAKE(HPU_DT_F64, 2), *one = FAKE(HPU_DT_F64, 1);
	struct hpu_tensor *rng = FAKE(HPU_DT_I64, 2);
	int64_t *state = (int64_t *)(uintptr_t)rng->storage->va;
	const double u0 = 0x6627e8 / 16777216.0, u1 = 0xe169c5 / 16777216.0;

	EXPECT(hpu_op_uniform(S, FAKE(HPU_DT_BF16, 3, 4), rng, -1, 1) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_RANDOM && launched.args[0] == HPU_RANDOM_UNIFORM &&
	       launched.scalars[0] == -1 && launched.scalars[1] == 1);
	EXPECT(hpu_op_normal(S, FAKE(HPU_DT_F32, 5), rng, 0, 2) == 0);
	EXPECT(launched.args[0] == HPU_RANDOM_NORMAL && launched.scalars[1] == 2);
	EXPECT(hpu_op_uniform(S, out, rng, 1, 0) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_uniform: from 1 is above to 0");
	EXPECT(hpu_op_normal(S, out, rng, 0, -1) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_normal: std -1 is below 0");
	EXPECT(hpu_op_normal(S, out, rng, INFINITY, 1) == -EINVAL);
	EXPECT(hpu_op_uniform(S, FAKE(HPU_DT_I32, 2), rng, 0, 1) == -EINVAL);
	EXPECT(hpu_op_uniform(S, out, FAKE(HPU_DT_I64, 3), 0, 1) == -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_uniform: rng must be I64 [2]: seed, offset");
	state[0] = state[1] = 0;
	EXPECT(hpu_op_uniform(S, out, rng, -1, 3) == 0);
	EXPECT(f64_at(out, 0) == -1 + 4 * u0 && f64_at(out, 1) == -1 + 4 * u1 && state[1] == 2);
	state[1] = 0;
	EXPECT(hpu_op_normal(S, one, rng, 0.5, 2) == 0);
	EXPECT(fabs(f64_at(one, 0) - (0.5 + 2 * sqrt(-2 * log(1 - u0)) * cos(2 * M_PI * u1))) <
	       1e-12 && state[1] == 2);
}

/*
 * Fused attention: the launch's flags and the mask broadcast over heads and
 * rows (not the batch), every refusal; on F64 the fallback's forward and
 * backward against hand-worked causal rows; head dims past the device's
 * fall back.
 */
static void test_sdpa(void)
{
	struct hpu_sdpa_params p = { .scale = 0.5, .causal = true };
	struct hpu_tensor *q = FAKE(HPU_DT_F32, 2, 2, 3, 4), *k = FAKE(HPU_DT_F32, 2, 2, 5, 4);
	struct hpu_tensor *v = FAKE(HPU_DT_F32, 2, 2, 5, 6), *o = FAKE(HPU_DT_F32, 2, 2, 3, 6);
	struct hpu_tensor *lse = FAKE(HPU_DT_F32, 2, 2, 3), *m = FAKE(HPU_DT_U8, 2, 1, 3, 1);
	struct hpu_tensor *m1 = FAKE(HPU_DT_U8, 1, 1, 3, 5), *vl = FAKE(HPU_DT_I32, 2);
	struct hpu_tensor *rng = FAKE(HPU_DT_I64, 2), *big = FAKE(HPU_DT_F32, 1, 1, 2, 1025);
	struct hpu_tensor *bo = FAKE(HPU_DT_F32, 1, 1, 2, 6), *bl = FAKE(HPU_DT_F32, 1, 1, 2);
	struct hpu_tensor *bv = FAKE(HPU_DT_F32, 1, 1, 2, 6);
	struct hpu_tensor *x[6], *gq = FAKE(HPU_DT_F64, 1, 1, 2, 2), *gk = FAKE(HPU_DT_F64, 1, 1, 3, 2);
	struct hpu_tensor *gv = FAKE(HPU_DT_F64, 1, 1, 3, 2);
	uint64_t was, count;

	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, m, NULL, NULL, NULL, NULL, NULL, &p) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_FUSED_SDPA && launched.num_tensors == 11 &&
	       launched.args[0] == (HPU_SDPA_CAUSAL | HPU_SDPA_MASK) && launched.scalars[0] == 0.5);
	EXPECT(strides_are(&launched.l[5], 4, SHAPE(3, 0, 1, 0)) && launched.l[5].shape[3] == 5);
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, NULL, vl, NULL, NULL, NULL, NULL, &p) == 0 &&
	       launched.args[0] == (HPU_SDPA_CAUSAL | HPU_SDPA_VALID_LEN));
	/* No batch broadcast; valid lengths only causal without a mask; fast softmax bf16 only. */
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, m1, NULL, NULL, NULL, NULL, NULL, &p) == -EINVAL);
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, m, vl, NULL, NULL, NULL, NULL, &p) == -EINVAL);
	p.fast_softmax = true;
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, NULL, NULL, NULL, NULL, NULL, NULL, &p) == -EINVAL);
	p = (struct hpu_sdpa_params){ .scale = 0.5, .dropout_p = 0.25 };
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, NULL, NULL, rng, NULL, NULL, NULL, &p) == -EINVAL);
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, NULL, vl, rng, rng, NULL, NULL, &p) == -EINVAL);
	p.dropout_p = 1;
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, NULL, NULL, rng, rng, NULL, NULL, &p) == -EINVAL);
	p.dropout_p = 0;
	EXPECT(hpu_op_sdpa(S, o, lse, k, k, v, NULL, NULL, NULL, NULL, NULL, NULL, &p) == -EINVAL);
	EXPECT(hpu_op_sdpa(S, o, o, q, k, v, NULL, NULL, NULL, NULL, NULL, NULL, &p) == -EINVAL);
	EXPECT(hpu_op_sdpa(S, o, lse, q, k, v, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == -EINVAL);
	EXPECT(hpu_op_sdpa_backward(S, q, k, v, o, q, k, v, o, lse, NULL, NULL, NULL, &p) == 0 &&
	       launched.kernel == HPU_KERNEL_FUSED_SDPA_BWD && launched.num_tensors == 12);
	EXPECT(hpu_op_sdpa_backward(S, q, v, v, o, q, k, v, o, lse, NULL, NULL, NULL, &p) ==
	       -EINVAL);

	/* F64 on the host, causal, L 2, S 3, D = Dv = 2: row 0 sees key 0, row 1 keys 0 and 1. */
	for (int i = 0; i < 6; i++)
		x[i] = FAKE(HPU_DT_F64, 1, 1, i % 3 == 0 || i == 5 ? 2 : 3, 2);
	lse = FAKE(HPU_DT_F32, 1, 1, 2);
	put_f64(x[0], (const double[]){ 1, 0, 0.5, -1 }, 4);
	put_f64(x[1], (const double[]){ 1, 2, -1, 0.5, 3, 3 }, 6);
	put_f64(x[2], (const double[]){ 1, -2, 4, 0.5, 7, 7 }, 6);
	p = (struct hpu_sdpa_params){ .scale = 0.5, .causal = true };
	EXPECT(hpu_fallback_count(&fake_dev, "sdpa", &was) == 0);
	EXPECT(hpu_op_sdpa(S, x[3], lse, x[0], x[1], x[2], NULL, NULL, NULL, NULL, NULL, NULL,
			   &p) == 0);
	EXPECT(hpu_fallback_count(&fake_dev, "sdpa", &count) == 0 && count == was + 1);
	{
		/* Row 1: scores 0.5 * (0.5 - 2) and 0.5 * (-0.5 - 0.5). */
		double s0 = -0.75, s1 = -0.5, l1 = log(exp(s0) + exp(s1));
		double p0 = exp(s0 - l1), p1 = exp(s1 - l1);
		const float *lv = (const float *)(uintptr_t)lse->storage->va;

		EXPECT(f64_at(x[3], 0) == 1 && f64_at(x[3], 1) == -2 && lv[0] == 0.5f);
		EXPECT(fabs(lv[1] - l1) < 1e-6 && fabs(f64_at(x[3], 2) - (p0 + 4 * p1)) < 1e-12);
		/* grad_out 1 everywhere: row 0's own delta cancels, key 2 is seen by none. */
		put_f64(x[5], (const double[]){ 1, 1, 1, 1 }, 4);
		EXPECT(hpu_op_sdpa_backward(S, gq, gk, gv, x[5], x[0], x[1], x[2], x[3], lse, NULL,
					    NULL, NULL, &p) == 0);
		EXPECT(f64_at(gq, 0) == 0 && f64_at(gq, 1) == 0 && f64_at(gk, 4) == 0);
		EXPECT(f64_at(gv, 4) == 0 && f64_at(gv, 5) == 0 && fabs(f64_at(gv, 2) - p1) < 1e-6);
	}
	/* A head dim past the device's runs on the host. */
	EXPECT(hpu_op_sdpa(S, bo, bl, big, big, bv, NULL, NULL, NULL, NULL, NULL, NULL, &p) == 0);
	EXPECT(hpu_fallback_count(&fake_dev, "sdpa", &count) == 0 && count == was + 2);
}

/* ---- fused optimizers over tensor lists ---- */

#define FE_PARAMS 20

/* FE_PARAMS params of odd shapes, and lists of their like for the grads and state. */
static void fe_lists(uint32_t dtype, struct hpu_tensor *t[4][FE_PARAMS])
{
	for (unsigned int j = 0; j < 4; j++)
		for (unsigned int i = 0; i < FE_PARAMS; i++)
			t[j][i] = i % 3 ? FAKE(dtype, i + 1, 3) : FAKE(dtype, 7);
}

/*
 * Launches back to back, as many params to each as fit, the last counting
 * the step; a bad list anywhere issues nothing.
 */
static void test_foreach_launches(void)
{
	struct hpu_tensor *t[4][FE_PARAMS], *lr = FAKE(HPU_DT_F32), *step = FAKE(HPU_DT_I64);
	struct hpu_tensor *lr2 = FAKE(HPU_DT_F32, 2), *acc = FAKE(HPU_DT_F32), *norm = FAKE(HPU_DT_F32);
	const struct hpu_fused_adamw_config adamw = { 0.9, 0.999, 1e-8, 0.01 };
	struct hpu_fused_sgd_config sgd = { 0, 0, 0, false };
	const struct hpu_fused_lamb_config lamb = { 0.9, 0.999, 1e-6, 0, true, true };
	const struct hpu_fused_adadelta_config adadelta = { 0.9, 1e-6, 0 };
	struct hpu_tensor *bad[FE_PARAMS];
	unsigned int before = launches;

	fe_lists(HPU_DT_F32, t);
	EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr, step, &adamw) == 0);
	EXPECT(launches == before + 7 && launched.kernel == HPU_KERNEL_FOREACH_ADAMW);
	EXPECT(launched.num_tensors == 2 + 2 * 4 && launched.args[0] == 1);
	EXPECT(launched.t[0] == lr && launched.t[1] == step && launched.t[9] == t[3][19]);
	EXPECT(hpu_op_fused_lamb(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr, step, &lamb) == 0);
	EXPECT(launched.kernel == HPU_KERNEL_FOREACH_LAMB && launched.args[0] == (1 | 2 | 4));
	EXPECT(hpu_op_fused_adadelta(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr, step, &adadelta) ==
	       0);
	/* SGD without momentum: no buffers, 7 params a launch. */
	before = launches;
	EXPECT(hpu_op_fused_sgd(S, t[0], t[1], NULL, FE_PARAMS, lr, step, &sgd) == 0);
	EXPECT(launches == before + 3 && launched.num_tensors == 2 + 6 * 2);
	sgd.momentum = 0.9;
	EXPECT(hpu_op_fused_sgd(S, t[0], t[1], NULL, FE_PARAMS, lr, step, &sgd) == -EINVAL);
	sgd.nesterov = true;
	EXPECT(hpu_op_fused_sgd(S, t[0], t[1], t[2], FE_PARAMS, lr, step, &sgd) == 0);
	EXPECT(launches == before + 3 + 5 && launched.args[0] == (1 | 2));
	/* Refused before anything is issued: the last param's state, a shape, lr, numbers. */
	before = launches;
	memcpy(bad, t[3], sizeof(bad));
	bad[FE_PARAMS - 1] = t[3][0];
	EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], bad, FE_PARAMS, lr, step, &adamw) ==
	       -EINVAL);
	EXPECT_STR(hpu_last_error(), "hpu_op_fused_adamw: exp_avg_sqs[i] has shape [7], params[i] "
				     "[20, 3]: they must match");
	bad[FE_PARAMS - 1] = FAKE(HPU_DT_I32, FE_PARAMS, 3);
	EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], bad, FE_PARAMS, lr, step, &adamw) ==
	       -EINVAL);
	EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr2, step, &adamw) ==
	       -EINVAL);
	EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr, lr2, &adamw) ==
	       -EINVAL);
	EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], t[3], 0, lr, step, &adamw) == -EINVAL);
	EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], t[3], 1, lr, step, NULL) == -EINVAL);
	EXPECT(hpu_op_fused_lamb(S, t[0], t[1], t[2], t[3], 1, lr, step,
				 &(struct hpu_fused_lamb_config){ 1, 0.9, 0, 0, true, true }) ==
	       -EINVAL);
	EXPECT(hpu_op_fused_adadelta(S, t[0], t[1], t[2], t[3], 1, lr, step,
				     &(struct hpu_fused_adadelta_config){ 1.5, 0, 0 }) == -EINVAL);
	sgd.dampening = 0.1;
	EXPECT(hpu_op_fused_sgd(S, t[0], t[1], t[2], 1, lr, step, &sgd) == -EINVAL);
	EXPECT(launches == before);
	/* The clip: NORMs of 14 (the first resetting), then CLIPs of 15; no grads: a norm of 0. */
	EXPECT(hpu_op_clip_norm(S, norm, acc, t[0], FE_PARAMS, 1, 2) == 0);
	EXPECT(launches == before + 2 + 2 && launched.kernel == HPU_KERNEL_FOREACH_CLIP);
	EXPECT(launched.num_tensors == 1 + 5 && launched.t[0] == norm);
	EXPECT(hpu_op_clip_norm(S, norm, acc, NULL, 0, 1, INFINITY) == 0);
	EXPECT(launches == before + 6);
	EXPECT(hpu_op_clip_norm(S, norm, acc, t[0], 2, 1, 1) == -EINVAL);
	EXPECT(hpu_op_clip_norm(S, norm, acc, t[0], 2, NAN, 2) == -EINVAL);
	EXPECT(hpu_op_clip_norm(S, norm, lr2, t[0], 2, 1, 2) == -EINVAL);
	EXPECT(launches == before + 6);
}

static double *f64_data(const struct hpu_tensor *t)
{
	return (double *)(uintptr_t)t->storage->va;
}

/*
 * F64 falls back: two AdamW steps with lr changed in its scalar between
 * them, SGD's first-step buffer, LAMB's trust ratio, Adadelta, and the clip,
 * against torch.optim's formulas in double.
 */
static void test_fallback_foreach(void)
{
	struct hpu_tensor *t[4][FE_PARAMS], *lr = FAKE(HPU_DT_F32), *step = FAKE(HPU_DT_I64);
	struct hpu_tensor *acc = FAKE(HPU_DT_F32), *norm = FAKE(HPU_DT_F32);
	const struct hpu_fused_adamw_config adamw = { 0.9, 0.99, 1e-8, 0.1 };
	const struct hpu_fused_sgd_config sgd = { 0.5, 0, 0.1, true };
	const struct hpu_fused_lamb_config lamb = { 0.9, 0.99, 1e-6, 0.1, true, true };
	const struct hpu_fused_adadelta_config adadelta = { 0.9, 1e-6, 0.1 };
	float *lrv = (float *)(uintptr_t)lr->storage->va;
	int64_t *sv = (int64_t *)(uintptr_t)step->storage->va;
	double p = 0.5, g = 0.25, m = 0, v = 0, want, bc1, bc2, u;
	int64_t numel = 0;

	fe_lists(HPU_DT_F64, t);
	for (unsigned int i = 0; i < FE_PARAMS; i++) {
		numel += hpu_layout_numel(&t[0][i]->l);
		for (int64_t k = 0; k < hpu_layout_numel(&t[0][i]->l); k++) {
			f64_data(t[0][i])[k] = p;
			f64_data(t[1][i])[k] = g;
		}
	}
	/* AdamW, steps 1 and 2 at lr 0.5 then 0.25. */
	for (int k = 1; k <= 2; k++) {
		*lrv = 0.5f / (float)k;
		EXPECT(hpu_op_fused_adamw(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr, step, &adamw) ==
		       0);
		EXPECT(*sv == k);
		p *= 1 - *lrv * 0.1;
		m = 0.9 * m + (1 - 0.9) * g;
		v = 0.99 * v + (1 - 0.99) * g * g;
		p -= *lrv / (1 - pow(0.9, k)) * m / (sqrt(v) / sqrt(1 - pow(0.99, k)) + 1e-8);
	}
	EXPECT(fabs(f64_data(t[0][0])[0] - p) < 1e-15);
	EXPECT(f64_data(t[0][19])[59] == f64_data(t[0][0])[0]);
	EXPECT(f64_data(t[2][7])[3] == m && f64_data(t[3][7])[3] == v);
	/* SGD, nesterov: the step is 2, so the buffer (m's) takes its momentum. */
	want = p - 0.25 * ((g + 0.1 * p) + 0.5 * (0.5 * m + (g + 0.1 * p)));
	EXPECT(hpu_op_fused_sgd(S, t[0], t[1], t[2], FE_PARAMS, lr, step, &sgd) == 0);
	EXPECT(fabs(f64_data(t[0][5])[1] - want) < 1e-15 && *sv == 3);
	p = want;
	/* LAMB on fresh moments, step 4: every element alike, so the ratio is |p| / |u|. */
	for (unsigned int i = 0; i < FE_PARAMS; i++)
		for (int64_t k = 0; k < hpu_layout_numel(&t[0][i]->l); k++)
			f64_data(t[2][i])[k] = f64_data(t[3][i])[k] = 0;
	EXPECT(hpu_op_fused_lamb(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr, step, &lamb) == 0);
	bc1 = 1 - pow(0.9, 4);
	bc2 = 1 - pow(0.99, 4);
	u = 0.1 * g / bc1 / (sqrt(0.01 * g * g / bc2) + 1e-6) + 0.1 * p;
	want = p - 0.25 * fabs(p) / fabs(u) * u;
	EXPECT(fabs(f64_data(t[0][11])[4] - want) < 1e-15 && *sv == 4);
	p = want;
	/* Adadelta on fresh state. */
	for (unsigned int i = 0; i < FE_PARAMS; i++)
		for (int64_t k = 0; k < hpu_layout_numel(&t[0][i]->l); k++)
			f64_data(t[2][i])[k] = f64_data(t[3][i])[k] = 0;
	EXPECT(hpu_op_fused_adadelta(S, t[0], t[1], t[2], t[3], FE_PARAMS, lr, step, &adadelta) ==
	       0);
	u = g + 0.1 * p;
	want = p - 0.25 * sqrt(1e-6) / sqrt(0.1 * u * u + 1e-6) * u;
	EXPECT(fabs(f64_data(t[0][2])[0] - want) < 1e-15);
	/* The clip of every grad (0.25 each) to norm 1. */
	EXPECT(hpu_op_clip_norm(S, norm, acc, t[1], FE_PARAMS, 1, 2) == 0);
	want = sqrt((double)numel * g * g);
	EXPECT(*(float *)(uintptr_t)norm->storage->va == (float)want);
	EXPECT(fabs(f64_data(t[1][19])[0] - g / ((float)want + 1e-6)) < 1e-9);
}

int main(void)
{
	static const struct tap_test tests[] = {
		{ "contiguous layouts, spans and bounds", test_contiguous_layouts },
		{ "broadcasting", test_broadcast },
		{ "view, permute, slice and expand", test_views },
		{ "overlap of views", test_overlap },
		{ "add broadcasts its inputs into the parameter block", test_add_broadcasts_into_the_block },
		{ "absent operands are empty tensors", test_absent_operands },
		{ "shape, dtype, overlap and argument rejections", test_rejections },
		{ "reductions keep the reduced dims", test_reduce_keeps_dims },
		{ "matmul and linear as GEMM packets", test_gemm_packets },
		{ "copies and zero fills a DMA moves", test_dma_ops },
		{ "CPU fallback: computed, counted, strict", test_fallback },
		{ "CPU fallback: dropout draws Philox4x32-10", test_fallback_dropout },
		{ "CPU fallback: dropout draws the stream's positions in turn",
		  test_fallback_dropout_stream },
		{ "CPU fallback: clip_grad_norm adds the device's chunks", test_fallback_clip },
		{ "CPU fallback: a row past the device's item bound", test_fallback_long_rows },
		{ "pooling and batch norm: args and refusals", test_pool_bnorm_ops },
		{ "CPU fallback: pooling and batch norm", test_fallback_pool_bnorm },
		{ "CPU fallback: silu, rms_norm, layer_norm, triangle, arange", test_fallback_misc },
		{ "convolution: args, F64 fallback of all gradients, rejections", test_conv },
		{ "CPU fallback: index ops check their indices", test_fallback_index },
		{ "group norm: args, refusals, F64 fallback", test_gnorm },
		{ "random fills: args, refusals, F64 fallback", test_random },
		{ "fused attention: flags, mask broadcast, refusals, F64 fallback", test_sdpa },
		{ "fused optimizers and the clip: launches over lists, refusals",
		  test_foreach_launches },
		{ "CPU fallback: fused optimizers and the clip", test_fallback_foreach },
	};
	unsigned int n = 0, failed;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	failed = tap_run(tests, ARRAY_SIZE(tests), &n);
	while (fake_nallocs)
		free(fake_allocs[--fake_nallocs]);
	return failed ? 1 : 0;
}
