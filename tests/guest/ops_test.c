// SPDX-License-Identifier: MIT
/*
 * libhpu's ops against the live device.  Every op runs twice on the same
 * values: on the device in F32 and in BF16, and as the host reference in
 * F64 - which the device lacks, so libhpu computes it on the CPU
 * (hpu_fallback.c, double precision, itself checked against hand-computed
 * values by tests/host/test_libhpu_tensor.c).  Operands broadcast and are
 * non-contiguous views (transposed, strided) where the op allows.
 *
 * Tolerance, |device - reference| <= atol + rtol * |reference|:
 *   F32   rtol 1e-4, atol 1e-4: fp32 arithmetic against fp64, sums of a few
 *         hundred terms and transcendental functions.
 *   BF16  rtol 2^-6, atol 2^-6: inputs are made bf16-exact first, so the
 *         error is the output's rounding to 8 significant bits (2^-9
 *         relative) plus that of bf16 intermediates some kernels store
 *         (a mean, a normalised value), a few roundings deep.
 * Integer and bool results (argmax, comparisons, masks) must match exactly.
 *
 * Also: dropout's statistics, the fallback's counting, logging and strict
 * mode, the runtime's rejections with their errno, and eager ordering of
 * many ops without a wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hpu/hpu.h>
#include <hpu/hpu_tensor.h>

#include "kselftest_harness.h"

/* The case table lists only the fields each case uses. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define MAX_OPERANDS 10

/* What an operand holds, and how its view is laid out in its storage. */
/* STAT: F32 whatever the run's float dtype (layer norm's statistics, step counts, norms). */
enum kind { FLOAT, STAT, INDEX, MASK, RNG };
enum view { CONTIG, TRANS, STRIDED };

struct operand {
	enum kind kind;
	unsigned int ndim;
	int64_t shape[4];
	enum view view;
	double lo, hi; /* values drawn from; INDEX: integers in [lo, hi) */
	bool out;      /* written (compared after the op) */
};

struct op_case;
typedef int (*op_fn)(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c);

struct op_case {
	const char *name;
	op_fn run;
	int arg;
	double x;
	unsigned int n;
	struct operand t[MAX_OPERANDS];
	bool f32_only; /* ties in bf16 make the order of equal values arbitrary */
};

/* Operand shorthands: F(ndim, shape..., view, lo, hi) and friends. */
#define SH(...) { __VA_ARGS__ }
#define IN(nd, sh, v, lo_, hi_) { FLOAT, nd, sh, v, lo_, hi_, false }
#define OUT(nd, sh) { FLOAT, nd, sh, CONTIG, -1, 1, true }
#define IO(nd, sh, lo_, hi_) { FLOAT, nd, sh, CONTIG, lo_, hi_, true }
#define IDX(nd, sh, hi_) { INDEX, nd, sh, CONTIG, 0, hi_, false }
#define IDX_OUT(nd, sh) { INDEX, nd, sh, CONTIG, 0, 1, true }
#define MSK(nd, sh) { MASK, nd, sh, CONTIG, 0, 2, false }
#define MSK_OUT(nd, sh) { MASK, nd, sh, CONTIG, 0, 2, true }

static int run_unary(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->arg == HPU_UN_POW_SCALAR ? hpu_op_pow_scalar(s, t[0], t[1], c->x)
					   : hpu_op_unary(s, c->arg, t[0], t[1]);
}

static int run_binary(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	if (c->n == 2)
		return hpu_op_binary_scalar(s, c->arg, t[0], t[1], c->x);
	return c->arg == HPU_BIN_ADD ? hpu_op_add(s, t[0], t[1], t[2], c->x)
				     : hpu_op_binary(s, c->arg, t[0], t[1], t[2]);
}

static int run_where(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	(void)c;
	return hpu_op_where(s, t[0], t[1], t[2], t[3]);
}

static int run_fill(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return hpu_op_fill(s, t[0], c->x);
}

static int run_reduce(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return hpu_op_reduce(s, c->arg >> 8, t[0], t[1], c->arg & 0xff);
}

static int run_softmax(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->n == 2 ? hpu_op_softmax(s, t[0], t[1], 1, c->arg)
			 : hpu_op_softmax_backward(s, t[0], t[1], t[2], 1, c->arg);
}

static int run_nll(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return hpu_op_nll_loss(s, t[0], t[1], t[2], c->arg, 3);
}

static int run_nll_bwd(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return hpu_op_nll_loss_backward(s, t[0], t[1], t[2], c->arg, 3);
}

static int run_ce(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->n == 3 ? hpu_op_cross_entropy(s, t[0], t[1], t[2], c->arg, 3)
			 : hpu_op_cross_entropy_backward(s, t[0], t[1], t[2], t[3], c->arg, 3);
}

static int run_dropout(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->n == 4 ? hpu_op_dropout(s, t[0], t[1], t[2], t[3], c->x)
			 : hpu_op_dropout_backward(s, t[0], t[1], t[2], c->x);
}

static int run_act_bwd(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->arg < 0 ? hpu_op_relu_backward(s, t[0], t[1], t[2])
			  : hpu_op_gelu_backward(s, t[0], t[1], t[2], c->arg);
}

static int run_layer_norm(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->n == 6 ? hpu_op_layer_norm(s, t[0], t[1], t[2], t[3], t[4], t[5], c->arg, 1e-5)
			 : hpu_op_layer_norm_backward(s, t[0], t[1], t[2], t[3], t[4], t[5], t[6],
						      t[7], c->arg);
}

static int run_embedding(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->arg ? hpu_op_embedding_backward(s, t[0], t[1], t[2], 1)
		      : hpu_op_embedding(s, t[0], t[1], t[2], 1);
}

static int run_matmul(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	if (!c->arg)
		return hpu_op_matmul(s, t[0], t[1], t[2]);
	return hpu_op_linear(s, t[0], t[1], t[2], c->n == 4 ? t[3] : NULL);
}

static int run_optim(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	/* Nesterov wants no dampening (torch.optim.SGD's rule). */
	const struct hpu_sgd_config sgd = { .lr = 0.1, .momentum = 0.9,
					    .dampening = c->arg & 1 ? 0 : 0.1,
					    .weight_decay = 0.01, .nesterov = c->arg & 1 };
	const struct hpu_adadelta_config ada = { .lr = 1.0, .rho = 0.9, .eps = 1e-6,
						 .weight_decay = 0.01 };
	const struct hpu_adamw_config adamw = { .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999,
						.eps = 1e-8, .weight_decay = 0.01 };

	switch (c->n) {
	case 3: return hpu_op_sgd(s, t[0], t[1], t[2], &sgd, c->arg & 2);
	case 4: return hpu_op_adadelta(s, t[0], t[1], t[2], t[3], &ada);
	default: return hpu_op_adamw(s, t[0], t[1], t[2], t[3], t[4], &adamw);
	}
}

static int run_clip(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return hpu_op_clip_grad_norm(s, t[0], t + 1, c->n - 1, 0.5, c->arg ? INFINITY : 2);
}

/* Convolution parameters by case arg: 0 plain with padding, 1 strided, dilated and grouped. */
static const struct hpu_conv_params conv_params[2] = {
	{ { 1, 1 }, { 1, 1 }, { 1, 1 }, 1 },
	{ { 2, 1 }, { 0, 1 }, { 1, 2 }, 2 },
};

static int run_conv(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->n == 4 ? hpu_op_conv(s, t[0], t[1], t[2], t[3], &conv_params[c->arg])
			 : hpu_op_conv_backward(s, t[0], t[1], t[2], t[3], t[4], t[5],
						&conv_params[c->arg]);
}

/* batch_norm's backward: arg's flags and BN_BWD (forward and backward both have 8 operands). */
#define BN_BWD 0x100

static int run_batch_norm(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	unsigned int flags = c->arg & ~BN_BWD;

	return c->arg & BN_BWD ? hpu_op_batch_norm_backward(s, t[0], t[1], t[2], t[3], t[4], t[5],
							     t[6], t[7], flags, 1e-5)
			       : hpu_op_batch_norm(s, t[0], t[1], t[2], t[3], t[4], t[5], t[6],
						   t[7], flags, 0.1, 1e-5);
}

/* Pooling: kernel 3, stride 2, padding 1 (adaptive: arg 2). */
static const int64_t pool_k[2] = { 3, 3 }, pool_s[2] = { 2, 2 }, pool_p[2] = { 1, 1 };
static const int64_t pool_d[2] = { 1, 1 };

/* max_pool2d; its backward (t gi, go, in, out, indices) from the forward's indices of in. */
static int run_max_pool(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	int ret;

	if (c->n == 3)
		return hpu_op_max_pool2d(s, t[0], t[1], t[2], pool_k, pool_s, pool_p, pool_d);
	ret = hpu_op_max_pool2d(s, t[3], t[4], t[2], pool_k, pool_s, pool_p, pool_d);
	return ret ? ret : hpu_op_max_pool2d_backward(s, t[0], t[1], t[4], pool_k, pool_s, pool_p,
						      pool_d);
}

/* Average pooling by case arg: count_include_pad, backward, adaptive; x a divisor override. */
enum { POOL_PAD = 1, POOL_BWD = 2, POOL_ADAPTIVE = 4 };

static int run_avg_pool(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	bool pad = c->arg & POOL_PAD;

	switch (c->arg & ~POOL_PAD) {
	case POOL_ADAPTIVE: return hpu_op_adaptive_avg_pool2d(s, t[0], t[1]);
	case POOL_ADAPTIVE | POOL_BWD: return hpu_op_adaptive_avg_pool2d_backward(s, t[0], t[1]);
	case POOL_BWD:
		return hpu_op_avg_pool2d_backward(s, t[0], t[1], pool_k, pool_s, pool_p, pad,
						  (int64_t)c->x);
	default: return hpu_op_avg_pool2d(s, t[0], t[1], pool_k, pool_s, pool_p, pad, (int64_t)c->x);
	}
}

static int run_misc(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	switch (c->n) {
	case 1: return hpu_op_arange(s, t[0], c->x, 0.25, 0, 0);
	case 2: return hpu_op_triangle(s, t[0], t[1], c->arg, c->x != 0);
	default: return hpu_op_silu_backward(s, t[0], t[1], t[2]);
	}
}

static int run_rms_norm(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->n == 4 ? hpu_op_rms_norm(s, t[0], t[1], t[2], t[3], c->arg, 1e-5)
			 : hpu_op_rms_norm_backward(s, t[0], t[1], t[2], t[3], t[4], t[5], c->arg);
}

/* The index ops along dim 1, by case arg. */
enum { IX_SELECT, IX_GATHER, IX_SCATTER_ADD, IX_SCATTER, IX_ADD, IX_TOPK };

static int run_index(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	switch (c->arg) {
	case IX_SELECT: return hpu_op_index_select(s, t[0], t[1], t[2], 1);
	case IX_GATHER: return hpu_op_gather(s, t[0], t[1], t[2], 1);
	case IX_SCATTER_ADD: return hpu_op_scatter_add(s, t[0], t[1], t[2], 1);
	case IX_SCATTER: return hpu_op_scatter(s, t[0], t[1], t[2], 1);
	case IX_ADD: return hpu_op_index_add(s, t[0], t[1], t[2], 1);
	default: return hpu_op_topk(s, t[0], t[1], t[2], 3, 1, c->x != 0, true);
	}
}

static int run_group_norm(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->n == 6 ? hpu_op_group_norm(s, t[0], t[1], t[2], t[3], t[4], t[5], c->arg, 1e-5)
			 : hpu_op_group_norm_backward(s, t[0], t[1], t[2], t[3], t[4], t[5], t[6],
						      t[7], c->arg);
}

static int run_random(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	return c->arg ? hpu_op_normal(s, t[0], t[1], 0.5, 2) : hpu_op_uniform(s, t[0], t[1], -1, 3);
}

/*
 * Fused attention, arg causal: the forward (t out, lse, q, k, v and a float mask if n is 6);
 * the backward (t grad_q, grad_k, grad_v, grad_out, q, k, v, out, lse) of the forward it runs
 * first into out and lse.
 */
static int run_sdpa(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	const struct hpu_sdpa_params p = { .scale = 0.5, .causal = c->arg };
	int ret;

	if (c->n <= 6)
		return hpu_op_sdpa(s, t[0], t[1], t[2], t[3], t[4], c->n == 6 ? t[5] : NULL, NULL,
				   NULL, NULL, NULL, NULL, &p);
	ret = hpu_op_sdpa(s, t[7], t[8], t[4], t[5], t[6], NULL, NULL, NULL, NULL, NULL, NULL, &p);
	return ret ? ret : hpu_op_sdpa_backward(s, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7],
						t[8], NULL, NULL, NULL, &p);
}

/*
 * The fused optimizers over two parameters: t lr, step, then the lists (params, grads and
 * each state's) two by two; arg picks the optimizer, the clip of two grads when n is 4.
 */
enum { FUSED_SGD, FUSED_ADAMW, FUSED_LAMB, FUSED_ADADELTA };

static int run_fused(struct hpu_stream *s, struct hpu_tensor **t, const struct op_case *c)
{
	const struct hpu_fused_sgd_config sgd = { .momentum = 0.9, .dampening = 0.1,
						  .weight_decay = 0.01 };
	const struct hpu_fused_adamw_config adamw = { 0.9, 0.999, 1e-8, 0.01 };
	const struct hpu_fused_lamb_config lamb = { 0.9, 0.999, 1e-6, 0.01, true, true };
	const struct hpu_fused_adadelta_config ada = { 0.9, 1e-6, 0.01 };

	if (c->n == 4)
		return hpu_op_clip_norm(s, t[0], t[1], t + 2, 2, 0.5, c->arg ? INFINITY : 2);
	switch (c->arg) {
	case FUSED_SGD: return hpu_op_fused_sgd(s, t + 2, t + 4, t + 6, 2, t[0], t[1], &sgd);
	case FUSED_ADAMW:
		return hpu_op_fused_adamw(s, t + 2, t + 4, t + 6, t + 8, 2, t[0], t[1], &adamw);
	case FUSED_LAMB:
		return hpu_op_fused_lamb(s, t + 2, t + 4, t + 6, t + 8, 2, t[0], t[1], &lamb);
	default: return hpu_op_fused_adadelta(s, t + 2, t + 4, t + 6, t + 8, 2, t[0], t[1], &ada);
	}
}

#define UN(fn, lo, hi) \
	{ #fn, run_unary, fn, 0.5, 2, { OUT(3, SH(3, 5, 7)), IN(3, SH(3, 5, 7), TRANS, lo, hi) } }
#define BIN(fn, lo, hi)                                                          \
	{ #fn, run_binary, fn, 0.5, 3, { OUT(3, SH(4, 5, 6)), IN(2, SH(5, 1), STRIDED, lo, hi), \
					 IN(3, SH(4, 1, 6), TRANS, lo, hi) } }
#define RED(fn, mask, out_nd, out_sh, out_kind)                                        \
	{ #fn, run_reduce, (fn) << 8 | (mask), 0, 2,                                 \
	  { { out_kind, out_nd, out_sh, CONTIG, 0, 1, true },                        \
	    IN(3, SH(4, 6, 5), TRANS, -2, 2) }, (fn) >= HPU_RED_ARGMAX }

#define NB 6
#define NC 5
static const struct op_case cases[] = {
	UN(HPU_UN_COPY, -2, 2), UN(HPU_UN_NEG, -2, 2), UN(HPU_UN_ABS, -2, 2),
	UN(HPU_UN_RELU, -2, 2), UN(HPU_UN_GELU, -3, 3), UN(HPU_UN_GELU_TANH, -3, 3),
	UN(HPU_UN_TANH, -2, 2), UN(HPU_UN_SIGMOID, -4, 4), UN(HPU_UN_EXP, -2, 2),
	UN(HPU_UN_LOG, 0.1, 4), UN(HPU_UN_SQRT, 0.1, 4), UN(HPU_UN_RSQRT, 0.2, 4),
	UN(HPU_UN_RECIPROCAL, 0.2, 4), UN(HPU_UN_POW_SCALAR, 0.1, 3),
	BIN(HPU_BIN_ADD, -2, 2), BIN(HPU_BIN_SUB, -2, 2), BIN(HPU_BIN_MUL, -2, 2),
	BIN(HPU_BIN_DIV, 0.5, 2), BIN(HPU_BIN_MAX, -2, 2), BIN(HPU_BIN_MIN, -2, 2),
	BIN(HPU_BIN_POW, 0.5, 2), BIN(HPU_BIN_EQ, -2, 2), BIN(HPU_BIN_NE, -2, 2),
	BIN(HPU_BIN_LT, -2, 2), BIN(HPU_BIN_LE, -2, 2), BIN(HPU_BIN_GT, -2, 2),
	BIN(HPU_BIN_GE, -2, 2),
	{ "binary_scalar", run_binary, HPU_BIN_MUL, -1.5, 2,
	  { OUT(2, SH(4, 5)), IN(2, SH(4, 5), STRIDED, -2, 2) } },
	{ "where", run_where, 0, 0, 4,
	  { OUT(3, SH(4, 5, 6)), MSK(2, SH(5, 1)), IN(3, SH(4, 5, 6), TRANS, -2, 2),
	    IN(1, SH(6), CONTIG, -2, 2) } },
	{ "fill", run_fill, 0, 2.75, 1, { OUT(2, SH(7, 3)) } },
	RED(HPU_RED_SUM, 1 << 1, 2, SH(4, 5), FLOAT), RED(HPU_RED_SUM, 5, 3, SH(1, 6, 1), FLOAT),
	RED(HPU_RED_MEAN, 1 << 2, 3, SH(4, 6, 1), FLOAT), RED(HPU_RED_MAX, 1 << 0, 2, SH(6, 5), FLOAT),
	RED(HPU_RED_MIN, 3, 1, SH(5), FLOAT), RED(HPU_RED_ARGMAX, 1 << 1, 2, SH(4, 5), INDEX),
	RED(HPU_RED_ARGMIN, 1 << 2, 2, SH(4, 6), INDEX),
	{ "softmax", run_softmax, 0, 0, 2, { OUT(2, SH(NB, NC)), IN(2, SH(NB, NC), TRANS, -3, 3) } },
	{ "log_softmax", run_softmax, 1, 0, 2, { OUT(2, SH(NB, NC)), IN(2, SH(NB, NC), STRIDED, -3, 3) } },
	{ "softmax_backward", run_softmax, 0, 0, 3,
	  { OUT(2, SH(NB, NC)), IN(2, SH(NB, NC), TRANS, -1, 1), IN(2, SH(NB, NC), CONTIG, 0.05, 0.3) } },
	{ "log_softmax_backward", run_softmax, 1, 0, 3,
	  { OUT(2, SH(NB, NC)), IN(2, SH(NB, NC), STRIDED, -1, 1), IN(2, SH(NB, NC), CONTIG, -3, -1) } },
	{ "nll_loss none", run_nll, HPU_LOSS_NONE, 0, 3,
	  { OUT(1, SH(NB)), IN(2, SH(NB, NC), TRANS, -3, 0), IDX(1, SH(NB ), NC) } },
	{ "nll_loss mean", run_nll, HPU_LOSS_MEAN, 0, 3,
	  { OUT(0, SH(0)), IN(2, SH(NB, NC), STRIDED, -3, 0), IDX(1, SH(NB ), NC) } },
	{ "nll_loss sum", run_nll, HPU_LOSS_SUM, 0, 3,
	  { OUT(0, SH(0)), IN(2, SH(NB, NC), CONTIG, -3, 0), IDX(1, SH(NB ), NC) } },
	{ "nll_loss_backward mean", run_nll_bwd, HPU_LOSS_MEAN, 0, 3,
	  { OUT(2, SH(NB, NC)), IN(0, SH(0), CONTIG, 0.5, 2), IDX(1, SH(NB ), NC) } },
	{ "nll_loss_backward none", run_nll_bwd, HPU_LOSS_NONE, 0, 3,
	  { OUT(2, SH(NB, NC)), IN(1, SH(NB), CONTIG, -1, 1), IDX(1, SH(NB ), NC) } },
	{ "cross_entropy", run_ce, HPU_LOSS_MEAN, 0, 3,
	  { OUT(0, SH(0)), IN(2, SH(NB, NC), TRANS, -3, 3), IDX(1, SH(NB ), NC) } },
	{ "cross_entropy_backward", run_ce, HPU_LOSS_SUM, 0, 4,
	  { OUT(2, SH(NB, NC)), IN(0, SH(0), CONTIG, 0.5, 2), IN(2, SH(NB, NC), STRIDED, -3, 3),
	    IDX(1, SH(NB ), NC) } },
	{ "dropout", run_dropout, 0, 0.3, 4,
	  { OUT(2, SH(8, 9)), MSK_OUT(2, SH(8, 9)), IN(2, SH(8, 9), TRANS, -2, 2),
	    { RNG, 1, SH(2), CONTIG, 0, 0, true } } },
	{ "dropout_backward", run_dropout, 0, 0.3, 3,
	  { OUT(2, SH(8, 9)), IN(2, SH(8, 9), TRANS, -2, 2), MSK(1, SH(9)) } },
	{ "relu_backward", run_act_bwd, -1, 0, 3,
	  { OUT(2, SH(5, 6)), IN(2, SH(5, 6), TRANS, -2, 2), IN(1, SH(6), CONTIG, -2, 2) } },
	{ "gelu_backward", run_act_bwd, 0, 0, 3,
	  { OUT(2, SH(5, 6)), IN(2, SH(5, 6), STRIDED, -2, 2), IN(2, SH(5, 6), TRANS, -3, 3) } },
	{ "gelu_backward tanh", run_act_bwd, 1, 0, 3,
	  { OUT(2, SH(5, 6)), IN(2, SH(5, 6), CONTIG, -2, 2), IN(2, SH(5, 6), CONTIG, -3, 3) } },
	{ "layer_norm", run_layer_norm, 1, 0, 6,
	  { OUT(3, SH(2, 3, 8)), { STAT, 2, SH(2, 3), CONTIG, 0, 1, true },
	    { STAT, 2, SH(2, 3), CONTIG, 0, 1, true }, IN(3, SH(2, 3, 8), TRANS, -2, 2),
	    IN(1, SH(8), CONTIG, 0.5, 1.5), IN(1, SH(8), CONTIG, -0.5, 0.5) } },
	{ "layer_norm_backward", run_layer_norm, 2, 0, 8,
	  { OUT(3, SH(2, 3, 4)), OUT(2, SH(3, 4)), OUT(2, SH(3, 4)),
	    IN(3, SH(2, 3, 4), TRANS, -1, 1), IN(3, SH(2, 3, 4), CONTIG, -2, 2),
	    { STAT, 1, SH(2), CONTIG, -0.5, 0.5, false }, { STAT, 1, SH(2), CONTIG, 0.5, 2, false },
	    IN(2, SH(3, 4), STRIDED, 0.5, 1.5) } },
	{ "embedding", run_embedding, 0, 0, 3,
	  { OUT(3, SH(2, 3, 4)), IN(2, SH(7, 4), TRANS, -2, 2), IDX(2, SH(2, 3), 7) } },
	{ "embedding_backward", run_embedding, 1, 0, 3,
	  { IO(2, SH(7, 4), -1, 1), IN(3, SH(2, 3, 4), STRIDED, -2, 2), IDX(2, SH(2, 3), 7) } },
	{ "sgd", run_optim, 0, 0, 3,
	  { IO(2, SH(4, 6), -1, 1), IN(2, SH(4, 6), TRANS, -1, 1), IO(2, SH(4, 6), -0.5, 0.5) } },
	{ "sgd nesterov first step", run_optim, 3, 0, 3,
	  { IO(2, SH(4, 6), -1, 1), IN(2, SH(4, 6), STRIDED, -1, 1), IO(2, SH(4, 6), -0.5, 0.5) } },
	{ "adadelta", run_optim, 0, 0, 4,
	  { IO(2, SH(4, 6), -1, 1), IN(2, SH(4, 6), TRANS, -1, 1), IO(2, SH(4, 6), 0, 0.5),
	    IO(2, SH(4, 6), 0, 0.5) } },
	{ "adamw", run_optim, 0, 0, 5,
	  { IO(2, SH(4, 6), -1, 1), IN(2, SH(4, 6), TRANS, -1, 1), IO(2, SH(4, 6), -0.1, 0.1),
	    IO(2, SH(4, 6), 0, 0.1), { STAT, 0, SH(0), CONTIG, 3, 3, true } } },
	{ "clip_grad_norm", run_clip, 0, 0, 3,
	  { { STAT, 0, SH(0), CONTIG, 0, 1, true }, IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1) } },
	{ "clip_grad_norm inf", run_clip, 1, 0, 3,
	  { { STAT, 0, SH(0), CONTIG, 0, 1, true }, IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1) } },
	{ "matmul batched", run_matmul, 0, 0, 3,
	  { OUT(3, SH(3, 5, 7)), IN(3, SH(3, 5, 9), TRANS, -1, 1), IN(2, SH(9, 7), CONTIG, -1, 1) } },
	{ "matmul b transposed", run_matmul, 0, 0, 3,
	  { OUT(3, SH(2, 4, 6)), IN(2, SH(4, 8), CONTIG, -1, 1), IN(3, SH(2, 8, 6), TRANS, -1, 1) } },
	{ "linear", run_matmul, 1, 0, 4,
	  { OUT(3, SH(2, 5, 6)), IN(3, SH(2, 5, 9), CONTIG, -1, 1), IN(2, SH(6, 9), TRANS, -1, 1),
	    IN(1, SH(6), CONTIG, -1, 1) } },
	{ "linear without bias", run_matmul, 1, 0, 3,
	  { OUT(2, SH(4, 6)), IN(2, SH(4, 9), CONTIG, -1, 1), IN(2, SH(6, 9), CONTIG, -1, 1) } },
	UN(HPU_UN_SILU, -4, 4), UN(HPU_UN_SIN, -4, 4), UN(HPU_UN_COS, -4, 4), UN(HPU_UN_ERF, -2, 2),
	{ "silu_backward", run_misc, 0, 0, 3,
	  { OUT(2, SH(5, 6)), IN(2, SH(5, 6), TRANS, -2, 2), IN(2, SH(5, 6), STRIDED, -4, 4) } },
	{ "triu", run_misc, 1, 1, 2, { OUT(3, SH(2, 4, 5)), IN(3, SH(2, 4, 5), TRANS, -2, 2) } },
	{ "tril", run_misc, -1, 0, 2, { OUT(2, SH(5, 4)), IN(2, SH(5, 4), STRIDED, -2, 2) } },
	{ "arange", run_misc, 0, -2.5, 1, { OUT(1, SH(21)) } },
	{ "conv2d", run_conv, 0, 0, 4,
	  { OUT(4, SH(2, 6, 5, 6)), IN(4, SH(2, 4, 5, 6), TRANS, -1, 1),
	    IN(4, SH(6, 4, 3, 3), CONTIG, -1, 1), IN(1, SH(6), CONTIG, -1, 1) } },
	{ "conv2d strided dilated grouped", run_conv, 1, 0, 4,
	  { OUT(4, SH(2, 6, 3, 6)), IN(4, SH(2, 4, 7, 6), STRIDED, -1, 1),
	    IN(4, SH(6, 2, 3, 2), TRANS, -1, 1), IN(1, SH(6), CONTIG, -1, 1) } },
	{ "conv2d_backward", run_conv, 0, 0, 6,
	  { OUT(4, SH(2, 4, 5, 6)), OUT(4, SH(6, 4, 3, 3)), OUT(1, SH(6)),
	    IN(4, SH(2, 6, 5, 6), TRANS, -1, 1), IN(4, SH(2, 4, 5, 6), STRIDED, -1, 1),
	    IN(4, SH(6, 4, 3, 3), CONTIG, -1, 1) } },
	{ "conv2d_backward strided dilated grouped", run_conv, 1, 0, 6,
	  { OUT(4, SH(2, 4, 7, 6)), OUT(4, SH(6, 2, 3, 2)), OUT(1, SH(6)),
	    IN(4, SH(2, 6, 3, 6), CONTIG, -1, 1), IN(4, SH(2, 4, 7, 6), TRANS, -1, 1),
	    IN(4, SH(6, 2, 3, 2), STRIDED, -1, 1) } },
	{ "batch_norm training", run_batch_norm, HPU_BN_TRAINING, 0, 8,
	  { OUT(4, SH(3, 4, 5, 6)), { STAT, 1, SH(4), CONTIG, 0, 1, true },
	    { STAT, 1, SH(4), CONTIG, 0, 1, true }, IN(4, SH(3, 4, 5, 6), TRANS, -2, 2),
	    IN(1, SH(4), CONTIG, 0.5, 1.5), IN(1, SH(4), CONTIG, -0.5, 0.5),
	    IO(1, SH(4), -0.5, 0.5), IO(1, SH(4), 0.5, 1.5) } },
	{ "batch_norm eval", run_batch_norm, 0, 0, 8,
	  { OUT(3, SH(3, 4, 7)), { STAT, 1, SH(4), CONTIG, 0, 1, true },
	    { STAT, 1, SH(4), CONTIG, 0, 1, true }, IN(3, SH(3, 4, 7), STRIDED, -2, 2),
	    IN(1, SH(4), CONTIG, 0.5, 1.5), IN(1, SH(4), CONTIG, -0.5, 0.5),
	    IN(1, SH(4), CONTIG, -0.5, 0.5), IN(1, SH(4), CONTIG, 0.5, 1.5) } },
	{ "batch_norm_backward training", run_batch_norm, BN_BWD | HPU_BN_TRAINING, 0, 8,
	  { OUT(4, SH(3, 4, 5, 6)), OUT(1, SH(4)), OUT(1, SH(4)),
	    IN(4, SH(3, 4, 5, 6), TRANS, -1, 1), IN(4, SH(3, 4, 5, 6), CONTIG, -2, 2),
	    { STAT, 1, SH(4), CONTIG, -0.5, 0.5, false }, { STAT, 1, SH(4), CONTIG, 0.5, 2, false },
	    IN(1, SH(4), CONTIG, 0.5, 1.5) } },
	{ "batch_norm_backward eval variance", run_batch_norm, BN_BWD | HPU_BN_VAR, 0, 8,
	  { OUT(3, SH(3, 4, 7)), OUT(1, SH(4)), OUT(1, SH(4)),
	    IN(3, SH(3, 4, 7), STRIDED, -1, 1), IN(3, SH(3, 4, 7), CONTIG, -2, 2),
	    { STAT, 1, SH(4), CONTIG, -0.5, 0.5, false }, { STAT, 1, SH(4), CONTIG, 0.5, 2, false },
	    IN(1, SH(4), CONTIG, 0.5, 1.5) } },
	{ "max_pool2d", run_max_pool, 0, 0, 3,
	  { OUT(4, SH(2, 3, 4, 4)), IDX_OUT(4, SH(2, 3, 4, 4)), IN(4, SH(2, 3, 7, 8), TRANS, -2, 2) } },
	{ "max_pool2d_backward", run_max_pool, 0, 0, 5,
	  { OUT(4, SH(2, 3, 7, 8)), IN(4, SH(2, 3, 4, 4), STRIDED, -1, 1),
	    IN(4, SH(2, 3, 7, 8), CONTIG, -2, 2), OUT(4, SH(2, 3, 4, 4)),
	    IDX_OUT(4, SH(2, 3, 4, 4)) } },
	{ "avg_pool2d", run_avg_pool, 0, 0, 2,
	  { OUT(4, SH(2, 3, 4, 4)), IN(4, SH(2, 3, 7, 8), TRANS, -2, 2) } },
	{ "avg_pool2d count_include_pad divisor", run_avg_pool, POOL_PAD, 5, 2,
	  { OUT(3, SH(3, 4, 4)), IN(3, SH(3, 7, 8), STRIDED, -2, 2) } },
	{ "avg_pool2d_backward", run_avg_pool, POOL_BWD, 0, 2,
	  { OUT(4, SH(2, 3, 7, 8)), IN(4, SH(2, 3, 4, 4), TRANS, -1, 1) } },
	{ "avg_pool2d_backward count_include_pad divisor", run_avg_pool, POOL_BWD | POOL_PAD, 5, 2,
	  { OUT(3, SH(3, 7, 8)), IN(3, SH(3, 4, 4), STRIDED, -1, 1) } },
	{ "adaptive_avg_pool2d", run_avg_pool, POOL_ADAPTIVE, 0, 2,
	  { OUT(4, SH(2, 3, 3, 4)), IN(4, SH(2, 3, 7, 9), TRANS, -2, 2) } },
	{ "adaptive_avg_pool2d_backward", run_avg_pool, POOL_ADAPTIVE | POOL_BWD, 0, 2,
	  { OUT(4, SH(2, 3, 7, 9)), IN(4, SH(2, 3, 3, 4), STRIDED, -1, 1) } },
	{ "rms_norm", run_rms_norm, 1, 0, 4,
	  { OUT(3, SH(2, 3, 8)), { STAT, 2, SH(2, 3), CONTIG, 0, 1, true },
	    IN(3, SH(2, 3, 8), TRANS, -2, 2), IN(1, SH(8), CONTIG, 0.5, 1.5) } },
	{ "rms_norm_backward", run_rms_norm, 1, 0, 6,
	  { OUT(3, SH(2, 3, 4)), OUT(1, SH(4)), IN(3, SH(2, 3, 4), TRANS, -1, 1),
	    IN(3, SH(2, 3, 4), CONTIG, -2, 2), { STAT, 2, SH(2, 3), CONTIG, 0.5, 2, false },
	    IN(1, SH(4), STRIDED, 0.5, 1.5) } },
	{ "index_select", run_index, IX_SELECT, 0, 3,
	  { OUT(3, SH(4, 3, 5)), IN(3, SH(4, 7, 5), TRANS, -2, 2), IDX(1, SH(3), 7) } },
	{ "gather", run_index, IX_GATHER, 0, 3,
	  { OUT(3, SH(4, 3, 5)), IN(3, SH(4, 7, 5), STRIDED, -2, 2), IDX(3, SH(4, 3, 5), 7) } },
	{ "scatter_add", run_index, IX_SCATTER_ADD, 0, 3,
	  { IO(3, SH(4, 7, 5), -1, 1), IDX(3, SH(4, 3, 5), 7), IN(3, SH(4, 3, 5), TRANS, -2, 2) } },
	{ "scatter", run_index, IX_SCATTER, 0, 3,
	  { IO(3, SH(4, 7, 5), -1, 1), IDX(3, SH(4, 6, 5), 7), IN(3, SH(4, 6, 5), STRIDED, -2, 2) } },
	{ "index_add", run_index, IX_ADD, 0, 3,
	  { IO(3, SH(4, 7, 5), -1, 1), IDX(1, SH(9), 7), IN(3, SH(4, 9, 5), TRANS, -2, 2) } },
	{ "topk largest", run_index, IX_TOPK, 1, 3,
	  { OUT(3, SH(4, 3, 5)), IDX_OUT(3, SH(4, 3, 5)), IN(3, SH(4, 7, 5), TRANS, -2, 2) } },
	{ "topk smallest", run_index, IX_TOPK, 0, 3,
	  { OUT(2, SH(4, 3)), IDX_OUT(2, SH(4, 3)), IN(2, SH(4, 9), STRIDED, -2, 2) } },
	{ "group_norm", run_group_norm, 3, 0, 6,
	  { OUT(3, SH(2, 6, 5)), { STAT, 2, SH(2, 3), CONTIG, 0, 1, true },
	    { STAT, 2, SH(2, 3), CONTIG, 0, 1, true }, IN(3, SH(2, 6, 5), TRANS, -2, 2),
	    IN(1, SH(6), CONTIG, 0.5, 1.5), IN(1, SH(6), CONTIG, -0.5, 0.5) } },
	{ "group_norm_backward", run_group_norm, 2, 0, 8,
	  { OUT(4, SH(2, 4, 3, 2)), OUT(1, SH(4)), OUT(1, SH(4)),
	    IN(4, SH(2, 4, 3, 2), TRANS, -1, 1), IN(4, SH(2, 4, 3, 2), STRIDED, -2, 2),
	    { STAT, 2, SH(2, 2), CONTIG, -0.5, 0.5, false }, { STAT, 2, SH(2, 2), CONTIG, 0.5, 2, false },
	    IN(1, SH(4), CONTIG, 0.5, 1.5) } },
	{ "uniform", run_random, 0, 0, 2,
	  { OUT(2, SH(5, 7)), { RNG, 1, SH(2), CONTIG, 0, 0, true } } },
	{ "normal", run_random, 1, 0, 2,
	  { OUT(3, SH(2, 3, 5)), { RNG, 1, SH(2), CONTIG, 0, 0, true } } },
	{ "sdpa masked", run_sdpa, 0, 0, 6,
	  { OUT(4, SH(2, 2, 5, 3)), { STAT, 3, SH(2, 2, 5), CONTIG, 0, 1, true },
	    IN(4, SH(2, 2, 5, 4), TRANS, -1, 1), IN(4, SH(2, 2, 7, 4), CONTIG, -1, 1),
	    IN(4, SH(2, 2, 7, 3), STRIDED, -1, 1), IN(4, SH(2, 1, 5, 7), CONTIG, -1, 1) } },
	{ "sdpa causal", run_sdpa, 1, 0, 5,
	  { OUT(4, SH(1, 3, 6, 4)), { STAT, 3, SH(1, 3, 6), CONTIG, 0, 1, true },
	    IN(4, SH(1, 3, 6, 4), CONTIG, -1, 1), IN(4, SH(1, 3, 6, 4), TRANS, -1, 1),
	    IN(4, SH(1, 3, 6, 4), CONTIG, -1, 1) } },
	{ "sdpa_backward causal", run_sdpa, 1, 0, 9,
	  { OUT(4, SH(2, 2, 5, 4)), OUT(4, SH(2, 2, 7, 4)), OUT(4, SH(2, 2, 7, 3)),
	    IN(4, SH(2, 2, 5, 3), STRIDED, -1, 1), IN(4, SH(2, 2, 5, 4), TRANS, -1, 1),
	    IN(4, SH(2, 2, 7, 4), CONTIG, -1, 1), IN(4, SH(2, 2, 7, 3), CONTIG, -1, 1),
	    OUT(4, SH(2, 2, 5, 3)), { STAT, 3, SH(2, 2, 5), CONTIG, 0, 1, true } } },
	{ "fused_sgd", run_fused, FUSED_SGD, 0, 8,
	  { { STAT, 0, SH(0), CONTIG, 0.1, 0.1, false }, { STAT, 0, SH(0), CONTIG, 2, 2, true },
	    IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1), IN(2, SH(4, 6), TRANS, -1, 1),
	    IN(1, SH(9), STRIDED, -1, 1), IO(2, SH(4, 6), -0.5, 0.5), IO(1, SH(9), -0.5, 0.5) } },
	{ "fused_adamw", run_fused, FUSED_ADAMW, 0, 10,
	  { { STAT, 0, SH(0), CONTIG, 0.01, 0.01, false }, { STAT, 0, SH(0), CONTIG, 3, 3, true },
	    IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1), IN(2, SH(4, 6), TRANS, -1, 1),
	    IN(1, SH(9), STRIDED, -1, 1), IO(2, SH(4, 6), -0.1, 0.1), IO(1, SH(9), -0.1, 0.1),
	    IO(2, SH(4, 6), 0, 0.1), IO(1, SH(9), 0, 0.1) } },
	{ "fused_lamb", run_fused, FUSED_LAMB, 0, 10,
	  { { STAT, 0, SH(0), CONTIG, 0.01, 0.01, false }, { STAT, 0, SH(0), CONTIG, 3, 3, true },
	    IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1), IN(2, SH(4, 6), STRIDED, -1, 1),
	    IN(1, SH(9), CONTIG, -1, 1), IO(2, SH(4, 6), -0.1, 0.1), IO(1, SH(9), -0.1, 0.1),
	    IO(2, SH(4, 6), 0, 0.1), IO(1, SH(9), 0, 0.1) } },
	{ "fused_adadelta", run_fused, FUSED_ADADELTA, 0, 10,
	  { { STAT, 0, SH(0), CONTIG, 1, 1, false }, { STAT, 0, SH(0), CONTIG, 3, 3, true },
	    IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1), IN(2, SH(4, 6), TRANS, -1, 1),
	    IN(1, SH(9), CONTIG, -1, 1), IO(2, SH(4, 6), 0, 0.5), IO(1, SH(9), 0, 0.5),
	    IO(2, SH(4, 6), 0, 0.5), IO(1, SH(9), 0, 0.5) } },
	{ "clip_norm", run_fused, 0, 0, 4,
	  { { STAT, 0, SH(0), CONTIG, 0, 1, true }, { STAT, 0, SH(0), CONTIG, 0, 1, false },
	    IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1) } },
	{ "clip_norm inf", run_fused, 1, 0, 4,
	  { { STAT, 0, SH(0), CONTIG, 0, 1, true }, { STAT, 0, SH(0), CONTIG, 0, 1, false },
	    IO(2, SH(4, 6), -1, 1), IO(1, SH(9), -1, 1) } },
};

/* xorshift64*: the same values for the device and the reference run. */
static uint64_t rng_state;

static double draw(double lo, double hi)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return lo + (hi - lo) * (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 0x1p53;
}

static double round_bf16(double v)
{
	float f = (float)v;
	uint32_t b;

	memcpy(&b, &f, 4);
	b = (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000u;
	memcpy(&f, &b, 4);
	return f;
}

static enum hpu_dt dtype_of(enum kind k, enum hpu_dt fl)
{
	return k == FLOAT ? fl : k == STAT ? HPU_DT_F32 : k == MASK ? HPU_DT_U8 : HPU_DT_I64;
}

static void pack(enum hpu_dt dt, const double *v, size_t n, void *buf)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (dt) {
		case HPU_DT_F32: ((float *)buf)[i] = (float)v[i]; break;
		case HPU_DT_BF16: {
			float f = (float)v[i];

			memcpy((uint16_t *)buf + i, (char *)&f + 2, 2);
			break;
		}
		case HPU_DT_I64: ((int64_t *)buf)[i] = (int64_t)v[i]; break;
		case HPU_DT_U8: ((uint8_t *)buf)[i] = (uint8_t)v[i]; break;
		default: ((double *)buf)[i] = v[i]; break;
		}
	}
}

static void unpack(enum hpu_dt dt, const void *buf, size_t n, double *v)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (dt) {
		case HPU_DT_F32: v[i] = ((const float *)buf)[i]; break;
		case HPU_DT_BF16: {
			uint32_t b = (uint32_t)((const uint16_t *)buf)[i] << 16;
			float f;

			memcpy(&f, &b, 4);
			v[i] = f;
			break;
		}
		case HPU_DT_I64: v[i] = (double)((const int64_t *)buf)[i]; break;
		case HPU_DT_U8: v[i] = ((const uint8_t *)buf)[i]; break;
		default: v[i] = ((const double *)buf)[i]; break;
		}
	}
}

static int64_t numel(const struct operand *o)
{
	int64_t n = 1;
	unsigned int i;

	for (i = 0; i < o->ndim; i++)
		n *= o->shape[i];
	return n;
}

/*
 * The operand as a view of a bigger storage: TRANS stores the last two dims
 * swapped and transposes them back, STRIDED stores the last dim twice as
 * long and takes every other element.
 */
static int make_view(struct hpu_device *dev, enum hpu_dt dt, const struct operand *o,
		     struct hpu_tensor **t)
{
	int64_t shape[4];
	struct hpu_tensor *base;
	unsigned int nd = o->ndim;
	int ret;

	memcpy(shape, o->shape, sizeof(shape));
	if (o->view == TRANS) {
		shape[nd - 2] = o->shape[nd - 1];
		shape[nd - 1] = o->shape[nd - 2];
	} else if (o->view == STRIDED) {
		shape[nd - 1] *= 2;
	}
	ret = hpu_tensor_empty(dev, dt, nd, shape, &base);
	if (ret || o->view == CONTIG) {
		*t = base;
		return ret;
	}
	ret = o->view == TRANS ? hpu_tensor_transpose(base, nd - 2, nd - 1, t)
			       : hpu_tensor_slice(base, nd - 1, 0, shape[nd - 1], 2, t);
	hpu_tensor_destroy(base);
	return ret;
}

struct run {
	struct hpu_tensor *t[MAX_OPERANDS];
	double *out[MAX_OPERANDS];
};

/* Runs case c with floats of dtype fl on values vals; reads back its outputs. */
static int run_case(struct hpu_device *dev, struct hpu_stream *s, const struct op_case *c,
		    enum hpu_dt fl, double *const *vals, struct run *r)
{
	unsigned int i;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < c->n && !ret; i++) {
		const struct operand *o = &c->t[i];
		enum hpu_dt dt = dtype_of(o->kind, fl);
		size_t n = (size_t)numel(o), bytes = n * hpu_dt_size(dt);
		void *buf = malloc(bytes + 1);

		ret = make_view(dev, dt, o, &r->t[i]);
		pack(dt, vals[i], n, buf);
		if (!ret)
			ret = hpu_tensor_copy_from_host(s, r->t[i], buf, bytes);
		free(buf);
	}
	if (!ret)
		ret = c->run(s, r->t, c);
	for (i = 0; i < c->n && !ret; i++) {
		const struct operand *o = &c->t[i];
		enum hpu_dt dt = dtype_of(o->kind, fl);
		size_t n = (size_t)numel(o), bytes = n * hpu_dt_size(dt);
		void *buf;

		if (!o->out)
			continue;
		buf = malloc(bytes + 1);
		r->out[i] = malloc(n * sizeof(double));
		ret = hpu_tensor_copy_to_host(s, r->t[i], buf, bytes);
		unpack(dt, buf, n, r->out[i]);
		free(buf);
	}
	return ret;
}

static void run_free(struct run *r)
{
	unsigned int i;

	for (i = 0; i < MAX_OPERANDS; i++) {
		hpu_tensor_destroy(r->t[i]);
		free(r->out[i]);
	}
}

/* The values of every operand; floats exact in the device dtype. */
static void make_values(const struct op_case *c, enum hpu_dt fl, double **vals)
{
	unsigned int i;
	int64_t k;

	for (i = 0; i < c->n; i++) {
		const struct operand *o = &c->t[i];

		vals[i] = malloc((size_t)numel(o) * sizeof(double));
		for (k = 0; k < numel(o); k++) {
			double v = draw(o->lo, o->hi);

			if (o->kind == RNG)
				v = k == 0 ? 12345 : 678; /* seed, offset */
			else if (o->kind != FLOAT && o->kind != STAT)
				v = floor(v);
			else if (fl == HPU_DT_BF16 || o->kind == STAT)
				v = round_bf16(v);
			vals[i][k] = v;
		}
	}
}

/* Runs every case on the device in dtype fl and on the host in F64; returns the failures. */
static int check_cases(struct __test_metadata *_metadata, struct hpu_device *dev,
		       struct hpu_stream *s, enum hpu_dt fl, double rtol, double atol)
{
	size_t ci;
	int failures = 0;

	for (ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const struct op_case *c = &cases[ci];
		double *vals[MAX_OPERANDS], worst = 0;
		struct run dev_run, ref_run;
		unsigned int i, bad = 0;
		int ret;

		if (c->f32_only && fl != HPU_DT_F32)
			continue;
		rng_state = 0x9e3779b97f4a7c15ull + ci;
		make_values(c, fl, vals);
		ret = run_case(dev, s, c, fl, vals, &dev_run);
		EXPECT_EQ(0, ret) TH_LOG("%s on the device: %s", c->name, hpu_last_error());
		ret = ret ? ret : run_case(dev, s, c, HPU_DT_F64, vals, &ref_run);
		EXPECT_EQ(0, ret) TH_LOG("%s on the host: %s", c->name, hpu_last_error());
		for (i = 0; i < c->n && !ret; i++) {
			bool exact = c->t[i].kind != FLOAT && c->t[i].kind != STAT;
			int64_t k;

			if (!c->t[i].out)
				continue;
			for (k = 0; k < numel(&c->t[i]); k++) {
				double d = dev_run.out[i][k], r = ref_run.out[i][k];
				double err = fabs(d - r), tol = exact ? 0 : atol + rtol * fabs(r);

				if (!(err <= tol) && !bad++)
					TH_LOG("%s (%s): operand %u element %lld is %.7g, the host's %.7g",
					       c->name, hpu_dt_size(fl) == 2 ? "BF16" : "F32", i,
					       (long long)k, d, r);
				if (!exact && err > worst)
					worst = err;
			}
		}
		EXPECT_EQ(0, bad) TH_LOG("%s: %u elements off", c->name, bad);
		failures += ret || bad;
		run_free(&dev_run);
		if (!ret)
			run_free(&ref_run);
		for (i = 0; i < c->n; i++)
			free(vals[i]);
	}
	return failures;
}

FIXTURE(ops) {
	struct hpu_device *dev;
	struct hpu_stream *s;
};

FIXTURE_SETUP(ops)
{
	ASSERT_EQ(0, hpu_device_open(0, &self->dev)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_stream_create(self->dev, &self->s)) TH_LOG("%s", hpu_last_error());
}

FIXTURE_TEARDOWN(ops)
{
	hpu_stream_destroy(self->s);
	hpu_device_close(self->dev);
}

TEST_F(ops, every_op_in_f32_matches_the_host)
{
	EXPECT_EQ(0, check_cases(_metadata, self->dev, self->s, HPU_DT_F32, 1e-4, 1e-4));
}

TEST_F(ops, every_op_in_bf16_matches_the_host)
{
	EXPECT_EQ(0, check_cases(_metadata, self->dev, self->s, HPU_DT_BF16, 0x1p-6, 0x1p-6));
}

static struct hpu_tensor *tensor_1d(struct __test_metadata *_metadata, struct hpu_device *dev,
				    enum hpu_dt dt, int64_t n)
{
	struct hpu_tensor *t = NULL;

	EXPECT_EQ(0, hpu_tensor_empty(dev, dt, 1, &n, &t)) TH_LOG("%s", hpu_last_error());
	return t;
}

/* 10000 draws at p 0.3: the kept fraction within 5 sigma; a second call draws afresh. */
TEST_F(ops, dropout_keeps_one_minus_p_and_advances_the_offset)
{
	enum { n = 10000 };
	struct hpu_tensor *in = tensor_1d(_metadata, self->dev, HPU_DT_F32, n);
	struct hpu_tensor *out = tensor_1d(_metadata, self->dev, HPU_DT_F32, n);
	struct hpu_tensor *mask = tensor_1d(_metadata, self->dev, HPU_DT_U8, n);
	struct hpu_tensor *rng = tensor_1d(_metadata, self->dev, HPU_DT_I64, 2);
	static uint8_t m1[n], m2[n];
	static float y[n];
	int64_t state[2] = { 7, 0 };
	int kept = 0, same = 0, i;

	ASSERT_EQ(0, hpu_op_fill(self->s, in, 2));
	ASSERT_EQ(0, hpu_tensor_copy_from_host(self->s, rng, state, sizeof(state)));
	ASSERT_EQ(0, hpu_op_dropout(self->s, out, mask, in, rng, 0.3)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, mask, m1, n));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, out, y, sizeof(y)));
	ASSERT_EQ(0, hpu_op_dropout(self->s, out, mask, in, rng, 0.3));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, mask, m2, n));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, rng, state, sizeof(state)));
	for (i = 0; i < n; i++) {
		kept += m1[i] != 0;
		same += m1[i] == m2[i];
		EXPECT_EQ(m1[i] ? 2 / 0.7f : 0.0f, y[i]);
		if (y[i] != (m1[i] ? 2 / 0.7f : 0.0f))
			break;
	}
	EXPECT_LT(abs(kept - 7000), 5 * 46) TH_LOG("%d of %d kept", kept, n);
	EXPECT_LT(same, 9000) TH_LOG("the second mask repeats the first");
	EXPECT_EQ(7, state[0]);
	EXPECT_EQ(2 * n, state[1]);
	hpu_tensor_destroy(in);
	hpu_tensor_destroy(out);
	hpu_tensor_destroy(mask);
	hpu_tensor_destroy(rng);
}

/* Runs fn with stderr going to a file; returns what it printed there. */
static void capture_stderr(int (*fn)(void *), void *arg, int *ret, char *text, size_t len)
{
	char path[] = "/run/tmp/ops_test.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	fflush(stderr);
	dup2(fd, 2);
	*ret = fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, text, len - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
}

struct cumsum_args {
	struct hpu_stream *s;
	struct hpu_tensor *out, *in;
};

static int do_cumsum(void *arg)
{
	struct cumsum_args *a = arg;

	return hpu_op_cumsum(a->s, a->out, a->in, 0);
}

TEST_F(ops, fallback_is_counted_logged_and_strict_makes_it_an_error)
{
	struct cumsum_args a = { .s = self->s };
	float v[4] = { 1, 2, 3, 4 }, got[4];
	double d[3] = { 1, 2, 3 }, dgot[3];
	struct hpu_tensor *x, *y;
	uint64_t count, total;
	char text[512];
	int ret;

	a.in = tensor_1d(_metadata, self->dev, HPU_DT_F32, 4);
	a.out = tensor_1d(_metadata, self->dev, HPU_DT_F32, 4);
	ASSERT_EQ(0, hpu_tensor_copy_from_host(self->s, a.in, v, sizeof(v)));
	setenv("HPU_LOG_FALLBACK", "1", 1);
	capture_stderr(do_cumsum, &a, &ret, text, sizeof(text));
	unsetenv("HPU_LOG_FALLBACK");
	ASSERT_EQ(0, ret) TH_LOG("%s", hpu_last_error());
	EXPECT_STREQ("hpu: fallback: cumsum (no device kernel)\n", text);
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, a.out, got, sizeof(got)));
	EXPECT_EQ(10, got[3]);
	capture_stderr(do_cumsum, &a, &ret, text, sizeof(text));
	EXPECT_STREQ("", text); /* logged only when asked */
	EXPECT_EQ(0, hpu_fallback_count(self->dev, "cumsum", &count));
	EXPECT_EQ(2, count);
	/* F64 runs any op on the host, counted under the op's name. */
	x = tensor_1d(_metadata, self->dev, HPU_DT_F64, 3);
	y = tensor_1d(_metadata, self->dev, HPU_DT_F64, 3);
	ASSERT_EQ(0, hpu_tensor_copy_from_host(self->s, x, d, sizeof(d)));
	ASSERT_EQ(0, hpu_op_unary(self->s, HPU_UN_EXP, y, x)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, y, dgot, sizeof(dgot)));
	EXPECT_EQ(exp(3.0), dgot[2]);
	EXPECT_EQ(0, hpu_fallback_count(self->dev, "exp", &count));
	EXPECT_EQ(1, count);
	EXPECT_EQ(0, hpu_fallback_total(self->dev, &total));
	EXPECT_EQ(3, total);
	EXPECT_EQ(-ENOENT, hpu_fallback_count(self->dev, "no_such_op", &count));
	/* Strict by the environment, then by the call. */
	setenv("HPU_FALLBACK_STRICT", "1", 1);
	EXPECT_EQ(-EOPNOTSUPP, hpu_op_cumsum(self->s, a.out, a.in, 0));
	EXPECT_STREQ("hpu_op_cumsum: cumsum would fall back to the CPU (no device kernel): "
		     "strict mode", hpu_last_error());
	unsetenv("HPU_FALLBACK_STRICT");
	EXPECT_EQ(0, hpu_fallback_set_strict(self->dev, true));
	EXPECT_EQ(-EOPNOTSUPP, hpu_op_unary(self->s, HPU_UN_EXP, y, x));
	EXPECT_STREQ("hpu_op_unary: exp would fall back to the CPU (F64 operand): strict mode",
		     hpu_last_error());
	EXPECT_EQ(0, hpu_fallback_total(self->dev, &total));
	EXPECT_EQ(3, total);
	/* Strict changes nothing for what the device runs. */
	EXPECT_EQ(0, hpu_op_unary(self->s, HPU_UN_NEG, a.out, a.in));
	EXPECT_EQ(0, hpu_fallback_set_strict(self->dev, false));
	EXPECT_EQ(0, hpu_op_cumsum(self->s, a.out, a.in, 0));
	hpu_tensor_destroy(a.in);
	hpu_tensor_destroy(a.out);
	hpu_tensor_destroy(x);
	hpu_tensor_destroy(y);
}

#define EXPECT_REJECTED(err, call, msg)                                           \
	do {                                                                      \
		EXPECT_EQ(-(err), call);                                          \
		EXPECT_STREQ(msg, hpu_last_error());                              \
	} while (0)

TEST_F(ops, bad_input_is_rejected_before_anything_runs)
{
	struct hpu_device *other;
	struct hpu_stream *other_s;
	struct hpu_tensor *a, *b, *i32, *o, *bad = NULL, *big;
	struct hpu_device_stats before = { .size = sizeof(before) }, after = { .size = sizeof(after) };
	struct hpu_tensor_layout l;
	int64_t shape7[7] = { 1, 1, 1, 1, 1, 1, 1 };

	a = tensor_1d(_metadata, self->dev, HPU_DT_F32, 4);
	b = tensor_1d(_metadata, self->dev, HPU_DT_F32, 3);
	i32 = tensor_1d(_metadata, self->dev, HPU_DT_I32, 4);
	o = tensor_1d(_metadata, self->dev, HPU_DT_F32, 4);
	ASSERT_EQ(0, hpu_device_get_stats(self->dev, &before));
	EXPECT_REJECTED(EINVAL, hpu_op_add(self->s, o, a, b, 1),
			"hpu_op_add: b of shape [3] does not broadcast to [4]");
	EXPECT_REJECTED(EINVAL, hpu_op_add(self->s, o, a, i32, 1),
			"hpu_op_add: dtype mismatch: a is F32, b is I32");
	EXPECT_REJECTED(EINVAL, hpu_op_softmax(self->s, o, a, 1, false),
			"hpu_op_softmax: dim 1 of a tensor of 1 dims");
	EXPECT_REJECTED(EINVAL, hpu_tensor_empty(self->dev, HPU_DT_F32, 7, shape7, &bad),
			"hpu_tensor_empty: tensor has 7 dims, at most 6 supported");
	ASSERT_EQ(0, hpu_tensor_get_layout(a, &l));
	l.shape[0] = 5;
	EXPECT_REJECTED(EINVAL, hpu_tensor_as_strided(a, &l, &bad),
			"hpu_tensor_as_strided: view reaches elements 0..4 of a storage of 4 F32 "
			"elements");
	l.shape[0] = 2;
	l.strides[0] = -1;
	EXPECT_REJECTED(EINVAL, hpu_tensor_as_strided(a, &l, &bad),
			"hpu_tensor_as_strided: view reaches elements -1..0 of a storage of 4 F32 "
			"elements");
	EXPECT_REJECTED(EINVAL, hpu_tensor_slice(a, 0, 2, 6, 1, &bad),
			"hpu_tensor_slice: slice 2:6:1 out of range for dim 0 of size 4");
	big = tensor_1d(_metadata, self->dev, HPU_DT_F32, 8);
	ASSERT_EQ(0, hpu_tensor_slice(big, 0, 2, 6, 1, &bad));
	EXPECT_REJECTED(EINVAL, hpu_op_unary(self->s, HPU_UN_NEG, bad, big),
			"hpu_op_unary: in of shape [8] does not broadcast to [4]");
	hpu_tensor_destroy(bad);
	EXPECT_REJECTED(EINVAL, hpu_op_fill(NULL, o, 0), "hpu_op_fill: stream is NULL");
	/* A tensor of another open device (its own context). */
	ASSERT_EQ(0, hpu_device_open(0, &other));
	ASSERT_EQ(0, hpu_stream_create(other, &other_s));
	EXPECT_REJECTED(EINVAL, hpu_op_add(other_s, o, a, a, 1),
			"hpu_op_add: out belongs to another device than the stream");
	hpu_stream_destroy(other_s);
	hpu_device_close(other);
	/* Nothing reached the driver. */
	ASSERT_EQ(0, hpu_device_get_stats(self->dev, &after));
	EXPECT_EQ(before.ctx_jobs_submitted, after.ctx_jobs_submitted);
	hpu_tensor_destroy(a);
	hpu_tensor_destroy(b);
	hpu_tensor_destroy(i32);
	hpu_tensor_destroy(o);
	hpu_tensor_destroy(big);
}

/* 300 dependent ops enqueued with no wait between them, then one read. */
TEST_F(ops, eager_ops_run_in_stream_order_without_waits)
{
	struct hpu_tensor *acc = tensor_1d(_metadata, self->dev, HPU_DT_F32, 1000);
	struct hpu_tensor *one = tensor_1d(_metadata, self->dev, HPU_DT_F32, 1);
	static float got[1000];
	int i;

	ASSERT_EQ(0, hpu_op_fill(self->s, acc, 0));
	ASSERT_EQ(0, hpu_op_fill(self->s, one, 1));
	for (i = 0; i < 300; i++)
		ASSERT_EQ(0, hpu_op_add(self->s, acc, acc, one, i % 2 ? 2 : 1))
			TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, acc, got, sizeof(got)));
	EXPECT_EQ(450, got[0]);
	EXPECT_EQ(450, got[999]);
	hpu_tensor_destroy(acc);
	hpu_tensor_destroy(one);
}

/*
 * Whole-tensor copies and zero fills go to the DMA engine, the rest to
 * kernels: both keep every bit (NaN payloads, -0, subnormals), touch only
 * their elements, and run in stream order with each other.
 */
TEST_F(ops, copies_and_fills_keep_every_bit_in_stream_order)
{
	enum { N = 1000 };
	struct hpu_tensor *src = tensor_1d(_metadata, self->dev, HPU_DT_F32, N);
	struct hpu_tensor *dst = tensor_1d(_metadata, self->dev, HPU_DT_F32, 2 * N);
	struct hpu_tensor *half = NULL, *low = NULL, *every2 = NULL;
	static uint32_t in[N], got[2 * N];
	uint32_t x = 12345;
	int i;

	for (i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		in[i] = (x & 0x7f800000u) == 0x7f800000u ? x | 0x00400000u : x;
	}
	in[0] = 0x7fc01234; /* a NaN with a payload */
	in[1] = 0x80000000; /* -0 */
	in[2] = 0x00000001; /* the least subnormal */
	in[3] = 0x7f800001; /* a signaling NaN */
	ASSERT_EQ(0, hpu_tensor_copy_from_host(self->s, src, in, sizeof(in)));
	ASSERT_EQ(0, hpu_tensor_slice(dst, 0, N, 2 * N, 1, &half));
	ASSERT_EQ(0, hpu_tensor_slice(dst, 0, 0, N, 1, &low));
	ASSERT_EQ(0, hpu_tensor_slice(dst, 0, 0, 2 * N, 2, &every2));
	/* A kernel fill, then a DMA copy into the upper half, a DMA zero fill of the lower half. */
	ASSERT_EQ(0, hpu_op_fill(self->s, dst, 7));
	ASSERT_EQ(0, hpu_op_unary(self->s, HPU_UN_COPY, half, src)) TH_LOG("%s", hpu_last_error());
	ASSERT_EQ(0, hpu_op_fill(self->s, low, 0));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, dst, got, sizeof(got)));
	for (i = 0; i < N && got[i] == 0; i++)
		;
	EXPECT_EQ(N, i);
	EXPECT_EQ(0, memcmp(got + N, in, sizeof(in)));
	/* Within one storage (a kernel), strided (a kernel): the upper half into the lower. */
	ASSERT_EQ(0, hpu_op_unary(self->s, HPU_UN_COPY, low, half));
	ASSERT_EQ(0, hpu_op_fill(self->s, every2, -0.0));
	ASSERT_EQ(0, hpu_tensor_copy_to_host(self->s, dst, got, sizeof(got)));
	for (i = 0; i < 2 * N; i++)
		if (got[i] != (i % 2 ? in[i % N] : 0x80000000u))
			break;
	EXPECT_EQ(2 * N, i) TH_LOG("element %d: 0x%08x", i, got[i]);
	hpu_tensor_destroy(every2);
	hpu_tensor_destroy(low);
	hpu_tensor_destroy(half);
	hpu_tensor_destroy(dst);
	hpu_tensor_destroy(src);
}

TEST_HARNESS_MAIN
