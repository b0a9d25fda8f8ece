/* SPDX-License-Identifier: MIT */
/*
 * The public ops: each describes its kernel's operands and checks the
 * rules of <hpu/hpu_tensor.h> that are its own (shapes, dtypes, arguments);
 * hpu_op_run() checks the rest and runs it.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* Runs a described op and names the public call in a failure. */
static int hpu_op_finish(const char *func, struct hpu_stream *s, struct hpu_op *op, int ret)
{
	if (!ret)
		ret = hpu_op_run(s, op);
	return hpu_error_in(func, ret);
}

#define HPU_OUT(t, name) { t, name, HPU_ARG_OUT }
#define HPU_IN(t, name) { t, name, HPU_ARG_BROADCAST }
#define HPU_SAME(t, name) { t, name, 0 }

/* Operands all of one dtype from first on, that dtype one of dtypes. */
static int hpu_op_one_dtype(const struct hpu_op *op, unsigned int first, unsigned int dtypes)
{
	unsigned int i;
	int ret = hpu_op_dtype_in(op, first, dtypes);

	for (i = first + 1; i < op->num_tensors && !ret; i++)
		ret = hpu_op_same_dtype(op, first, i);
	return ret;
}

/* Operands from first on have operand ref's shape. */
static int hpu_op_shapes_of(const struct hpu_op *op, unsigned int ref, unsigned int first)
{
	unsigned int i;
	int ret = 0;

	for (i = first; i < op->num_tensors && !ret; i++)
		if (op->t[i])
			ret = hpu_op_same_shape(op, ref, i);
	return ret;
}

/* Elementwise: out, then inputs broadcast to its shape. */
static int hpu_op_elementwise(struct hpu_op *op, uint32_t kernel, const char *name,
			      const struct hpu_arg *args, unsigned int count)
{
	op->kernel = kernel;
	op->name = name;
	return hpu_op_operands(op, args, count);
}

static int hpu_unary(struct hpu_op *op, enum hpu_unary_fn fn, struct hpu_tensor *out,
		     const struct hpu_tensor *in)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_IN(in, "in") };
	bool integral_ok = fn == HPU_UN_COPY || fn == HPU_UN_NEG || fn == HPU_UN_ABS ||
			   fn == HPU_UN_RELU;
	int ret;

	if ((unsigned int)fn >= HPU_UNARY_FNS)
		return hpu_error_set(EINVAL, "unknown unary function %d", fn);
	op->args[0] = fn;
	ret = hpu_op_elementwise(op, HPU_KERNEL_UNARY, hpu_unary_names[fn], args, 2);
	if (!ret && fn != HPU_UN_COPY)
		ret = hpu_op_one_dtype(op, 0, integral_ok ? HPU_DTS_ANY : HPU_DTS_FLOAT);
	return ret;
}

int hpu_op_unary(struct hpu_stream *s, enum hpu_unary_fn fn, struct hpu_tensor *out,
		 const struct hpu_tensor *in)
{
	struct hpu_op op = { 0 };
	int ret = fn == HPU_UN_POW_SCALAR
			  ? hpu_error_set(EINVAL, "POW_SCALAR takes an exponent: hpu_op_pow_scalar()")
			  : hpu_unary(&op, fn, out, in);

	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_pow_scalar(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		      double exponent)
{
	struct hpu_op op = { .scalars = { exponent } };

	return hpu_op_finish(__func__, s, &op, hpu_unary(&op, HPU_UN_POW_SCALAR, out, in));
}

/* b NULL: b_value stands for it. */
static int hpu_binary(struct hpu_op *op, enum hpu_binary_fn fn, struct hpu_tensor *out,
		      const struct hpu_tensor *a, const struct hpu_tensor *b, double b_value,
		      double alpha)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_IN(a, "a"), HPU_IN(b, "b") };
	int ret;

	if ((unsigned int)fn >= HPU_BINARY_FNS)
		return hpu_error_set(EINVAL, "unknown binary function %d", fn);
	op->args[0] = fn;
	op->args[1] = !b;
	op->scalars[0] = alpha;
	op->scalars[1] = b_value;
	ret = hpu_op_elementwise(op, HPU_KERNEL_BINARY, hpu_binary_names[fn], args, b ? 3 : 2);
	if (!ret)
		ret = hpu_op_one_dtype(op, 1, fn >= HPU_BIN_EQ || fn == HPU_BIN_MAX ||
						      fn == HPU_BIN_MIN || fn <= HPU_BIN_DIV
					      ? HPU_DTS_ANY
					      : HPU_DTS_FLOAT);
	if (!ret && fn < HPU_BIN_EQ)
		ret = hpu_op_same_dtype(op, 1, 0);
	return ret;
}

int hpu_op_binary(struct hpu_stream *s, enum hpu_binary_fn fn, struct hpu_tensor *out,
		  const struct hpu_tensor *a, const struct hpu_tensor *b)
{
	struct hpu_op op = { 0 };
	int ret = b ? hpu_binary(&op, fn, out, a, b, 0, 1) : hpu_error_set(EINVAL, "b is NULL");

	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_binary_scalar(struct hpu_stream *s, enum hpu_binary_fn fn, struct hpu_tensor *out,
			 const struct hpu_tensor *a, double b)
{
	struct hpu_op op = { 0 };

	return hpu_op_finish(__func__, s, &op, hpu_binary(&op, fn, out, a, NULL, b, 1));
}

int hpu_op_add(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *a,
	       const struct hpu_tensor *b, double alpha)
{
	struct hpu_op op = { 0 };
	int ret = b ? hpu_binary(&op, HPU_BIN_ADD, out, a, b, 0, alpha)
		    : hpu_error_set(EINVAL, "b is NULL");

	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_where(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *cond,
		 const struct hpu_tensor *a, const struct hpu_tensor *b)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_IN(cond, "cond"), HPU_IN(a, "a"),
					HPU_IN(b, "b") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_elementwise(&op, HPU_KERNEL_WHERE, "where", args, 4);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 3);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_fill(struct hpu_stream *s, struct hpu_tensor *out, double value)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out") };
	struct hpu_op op = { .scalars = { value } };

	return hpu_op_finish(__func__, s, &op,
			     hpu_op_elementwise(&op, HPU_KERNEL_FILL, "fill", args, 1));
}

/* out's layout with in's ndim: the reduced dims it lacks put back with size 1. */
static int hpu_reduce_out(struct hpu_op *op, uint32_t mask)
{
	struct hpu_tensor_layout *out = &op->l[0], keep = *out;
	const struct hpu_tensor_layout *in = &op->l[1];
	unsigned int d, k = 0;

	if (!mask || mask >> in->ndim)
		return hpu_error_set(EINVAL, "dims_mask 0x%x does not name dims of in's %u", mask,
				     in->ndim);
	keep.ndim = in->ndim;
	for (d = 0; d < in->ndim; d++) {
		bool reduced = mask & (1u << d);

		if (out->ndim == in->ndim) {
			k = d;
		} else if (reduced) {
			keep.shape[d] = 1;
			keep.strides[d] = 0;
			continue;
		}
		if (k >= out->ndim || out->shape[k] != (reduced ? 1 : in->shape[d]))
			return hpu_error_set(EINVAL, "out's shape does not match in's with dims 0x%x "
					     "reduced", mask);
		keep.shape[d] = out->shape[k];
		keep.strides[d] = out->strides[k++];
	}
	if (out->ndim != in->ndim && k != out->ndim)
		return hpu_error_set(EINVAL, "out has %u dims, in %u with %d reduced", out->ndim,
				     in->ndim, __builtin_popcount(mask));
	*out = keep;
	return 0;
}

int hpu_op_reduce(struct hpu_stream *s, enum hpu_reduce_fn fn, struct hpu_tensor *out,
		  const struct hpu_tensor *in, uint32_t dims_mask)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in") };
	struct hpu_op op = { .args = { fn, dims_mask } };
	bool arg = fn == HPU_RED_ARGMAX || fn == HPU_RED_ARGMIN;
	int ret = 0;

	if ((unsigned int)fn >= HPU_REDUCE_FNS)
		ret = hpu_error_set(EINVAL, "unknown reduction %d", fn);
	if (!ret)
		ret = hpu_op_elementwise(&op, HPU_KERNEL_REDUCE, hpu_reduce_names[fn], args, 2);
	if (!ret)
		ret = hpu_reduce_out(&op, dims_mask);
	if (!ret && arg && __builtin_popcount(dims_mask) != 1)
		ret = hpu_error_set(EINVAL, "%s reduces exactly one dim", op.name);
	if (!ret && arg)
		ret = hpu_op_dtype_in(&op, 0, HPU_DTS_INDEX);
	else if (!ret && hpu_dt_is_float(op.l[1].dtype))
		ret = hpu_op_same_dtype(&op, 1, 0);
	else if (!ret)
		ret = hpu_op_dtype_in(&op, 0, HPU_DTS_INT);
	return hpu_op_finish(__func__, s, &op, ret);
}

/* Float operands of one dtype and one shape, and a dim of them. */
static int hpu_op_rowwise(struct hpu_op *op, unsigned int dim)
{
	int ret = hpu_op_one_dtype(op, 0, HPU_DTS_FLOAT);

	if (!ret)
		ret = hpu_op_shapes_of(op, 0, 1);
	if (!ret && dim >= op->l[0].ndim)
		ret = hpu_error_set(EINVAL, "dim %u of a tensor of %u dims", dim, op->l[0].ndim);
	return ret;
}

int hpu_op_softmax(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		   unsigned int dim, bool log)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in") };
	struct hpu_op op = { .args = { dim, log } };
	int ret = hpu_op_elementwise(&op, HPU_KERNEL_SOFTMAX, log ? "log_softmax" : "softmax",
				     args, 2);

	return hpu_op_finish(__func__, s, &op, ret ? ret : hpu_op_rowwise(&op, dim));
}

int hpu_op_softmax_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			    const struct hpu_tensor *grad_out, const struct hpu_tensor *out,
			    unsigned int dim, bool log)
{
	const struct hpu_arg args[] = { HPU_OUT(grad_in, "grad_in"), HPU_SAME(grad_out, "grad_out"),
					HPU_SAME(out, "out") };
	struct hpu_op op = { .args = { dim, log } };
	int ret = hpu_op_elementwise(&op, HPU_KERNEL_SOFTMAX_BWD, "softmax_backward", args, 3);

	return hpu_op_finish(__func__, s, &op, ret ? ret : hpu_op_rowwise(&op, dim));
}

/*
 * The loss kernels: t[x] is [N, C] (float), t[target] [N] (index), t[loss]
 * the loss ([N] for NONE, one element otherwise) of t[x]'s dtype.
 */
static int hpu_op_loss(struct hpu_op *op, unsigned int x, unsigned int target, unsigned int loss,
		       enum hpu_loss_reduction reduction, int64_t ignore_index)
{
	const struct hpu_tensor_layout *lx = &op->l[x], *lt = &op->l[target];
	int ret;

	op->args[0] = reduction;
	op->args[1] = ignore_index;
	if ((unsigned int)reduction > HPU_LOSS_SUM)
		return hpu_error_set(EINVAL, "unknown reduction %d", reduction);
	ret = hpu_op_dtype_in(op, x, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(op, x, loss);
	if (!ret)
		ret = hpu_op_dtype_in(op, target, HPU_DTS_INDEX);
	if (ret)
		return ret;
	if (lx->ndim != 2 || lt->ndim != 1 || lt->shape[0] != lx->shape[0])
		return hpu_error_set(EINVAL, "%s must be [N, C] and %s [N]", op->names[x],
				     op->names[target]);
	if (reduction != HPU_LOSS_NONE)
		return hpu_op_scalar_operand(op, loss);
	if (op->l[loss].ndim != 1 || op->l[loss].shape[0] != lx->shape[0])
		return hpu_error_set(EINVAL, "%s must be [N] without a reduction", op->names[loss]);
	return 0;
}

/* A loss kernel: t[x] [N, C], t[target], t[loss] the loss or its gradient. */
struct hpu_loss_kernel {
	uint32_t kernel;
	const char *name;
	unsigned int x, target, loss;
};

static int hpu_op_loss_run(const char *func, struct hpu_stream *s, const struct hpu_loss_kernel *k,
			   const struct hpu_arg *args, unsigned int count,
			   enum hpu_loss_reduction reduction, int64_t ignore_index)
{
	struct hpu_op op = { 0 };
	int ret = hpu_op_elementwise(&op, k->kernel, k->name, args, count);

	if (!ret)
		ret = hpu_op_loss(&op, k->x, k->target, k->loss, reduction, ignore_index);
	/* A gradient of x (t[0] when x is not t[0]) is shaped and typed like x. */
	if (!ret && k->x > 1)
		ret = hpu_op_same_dtype(&op, 0, k->x);
	if (!ret && k->x > 1)
		ret = hpu_op_same_shape(&op, k->x, 0);
	return hpu_op_finish(func, s, &op, ret);
}

int hpu_op_nll_loss(struct hpu_stream *s, struct hpu_tensor *loss, const struct hpu_tensor *logp,
		    const struct hpu_tensor *target, enum hpu_loss_reduction reduction,
		    int64_t ignore_index)
{
	static const struct hpu_loss_kernel k = { HPU_KERNEL_NLL_LOSS, "nll_loss", 1, 2, 0 };
	const struct hpu_arg args[] = { HPU_OUT(loss, "loss"), HPU_SAME(logp, "logp"),
					HPU_SAME(target, "target") };

	return hpu_op_loss_run(__func__, s, &k, args, 3, reduction, ignore_index);
}

int hpu_op_nll_loss_backward(struct hpu_stream *s, struct hpu_tensor *grad_logp,
			     const struct hpu_tensor *grad_loss, const struct hpu_tensor *target,
			     enum hpu_loss_reduction reduction, int64_t ignore_index)
{
	static const struct hpu_loss_kernel k = { HPU_KERNEL_NLL_LOSS_BWD, "nll_loss_backward",
						  0, 2, 1 };
	const struct hpu_arg args[] = { HPU_OUT(grad_logp, "grad_logp"),
					HPU_SAME(grad_loss, "grad_loss"),
					HPU_SAME(target, "target") };

	return hpu_op_loss_run(__func__, s, &k, args, 3, reduction, ignore_index);
}

int hpu_op_cross_entropy(struct hpu_stream *s, struct hpu_tensor *loss,
			 const struct hpu_tensor *logits, const struct hpu_tensor *target,
			 enum hpu_loss_reduction reduction, int64_t ignore_index)
{
	static const struct hpu_loss_kernel k = { HPU_KERNEL_CROSS_ENTROPY, "cross_entropy",
						  1, 2, 0 };
	const struct hpu_arg args[] = { HPU_OUT(loss, "loss"), HPU_SAME(logits, "logits"),
					HPU_SAME(target, "target") };

	return hpu_op_loss_run(__func__, s, &k, args, 3, reduction, ignore_index);
}

int hpu_op_cross_entropy_backward(struct hpu_stream *s, struct hpu_tensor *grad_logits,
				  const struct hpu_tensor *grad_loss,
				  const struct hpu_tensor *logits, const struct hpu_tensor *target,
				  enum hpu_loss_reduction reduction, int64_t ignore_index)
{
	static const struct hpu_loss_kernel k = { HPU_KERNEL_CROSS_ENTROPY_BWD,
						  "cross_entropy_backward", 2, 3, 1 };
	const struct hpu_arg args[] = { HPU_OUT(grad_logits, "grad_logits"),
					HPU_SAME(grad_loss, "grad_loss"),
					HPU_SAME(logits, "logits"), HPU_SAME(target, "target") };

	return hpu_op_loss_run(__func__, s, &k, args, 4, reduction, ignore_index);
}

static int hpu_check_p(double p)
{
	return p >= 0 && p < 1 ? 0 : hpu_error_set(EINVAL, "p is %g, not in [0, 1)", p);
}

int hpu_op_dropout(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *mask,
		   const struct hpu_tensor *in, struct hpu_tensor *rng, double p)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_OUT(mask, "mask"),
					HPU_SAME(in, "in"), { rng, "rng", HPU_ARG_OUT } };
	struct hpu_op op = { .scalars = { p } };
	int ret = hpu_check_p(p);

	if (!ret)
		ret = hpu_op_elementwise(&op, HPU_KERNEL_DROPOUT, "dropout", args, 4);
	if (!ret)
		ret = hpu_op_same_shape(&op, 2, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 2, 1);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 0, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 1, hpu_dt_bit(HPU_DT_U8));
	if (!ret)
		ret = hpu_op_dtype_in(&op, 3, hpu_dt_bit(HPU_DT_I64));
	if (!ret && (op.l[3].ndim != 1 || op.l[3].shape[0] != 2))
		ret = hpu_error_set(EINVAL, "rng must be I64 [2]: seed, offset");
	return hpu_op_finish(__func__, s, &op, ret);
}

/* grad_in, grad_out and a third operand, elementwise: the activation backward kernels. */
static int hpu_op_backward3(struct hpu_op *op, uint32_t kernel, const char *name,
			    struct hpu_tensor *grad_in, const struct hpu_tensor *grad_out,
			    const struct hpu_tensor *third, const char *third_name,
			    unsigned int third_dtypes)
{
	const struct hpu_arg args[] = { HPU_OUT(grad_in, "grad_in"), HPU_IN(grad_out, "grad_out"),
					HPU_IN(third, third_name) };
	int ret = hpu_op_elementwise(op, kernel, name, args, 3);

	if (!ret)
		ret = hpu_op_dtype_in(op, 0, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(op, 0, 1);
	if (!ret)
		ret = hpu_op_dtype_in(op, 2, third_dtypes);
	return ret;
}

int hpu_op_dropout_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			    const struct hpu_tensor *grad_out, const struct hpu_tensor *mask,
			    double p)
{
	struct hpu_op op = { .scalars = { p } };
	int ret = hpu_check_p(p);

	if (!ret)
		ret = hpu_op_backward3(&op, HPU_KERNEL_DROPOUT_BWD, "dropout_backward", grad_in,
				       grad_out, mask, "mask", hpu_dt_bit(HPU_DT_U8));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_relu_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			 const struct hpu_tensor *grad_out, const struct hpu_tensor *in)
{
	struct hpu_op op = { 0 };
	int ret = hpu_op_backward3(&op, HPU_KERNEL_RELU_BWD, "relu_backward", grad_in, grad_out,
				   in, "in", HPU_DTS_FLOAT);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_gelu_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			 const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
			 bool tanh_approx)
{
	struct hpu_op op = { .args = { tanh_approx } };
	int ret = hpu_op_backward3(&op, HPU_KERNEL_GELU_BWD, "gelu_backward", grad_in, grad_out,
				   in, "in", HPU_DTS_FLOAT);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	return hpu_op_finish(__func__, s, &op, ret);
}

/*
 * Layer norm's operands: t[x] the input (float, `dims` trailing dims
 * normalised), t[stats..stats+1] mean and rstd (F32, x's leading dims),
 * t[params..params+1] weight and bias or their grads (x's trailing dims,
 * absent allowed).
 */
static int hpu_op_norm(struct hpu_op *op, unsigned int x, unsigned int stats, unsigned int params,
		       unsigned int dims)
{
	const struct hpu_tensor_layout *lx = &op->l[x];
	unsigned int lead = lx->ndim - dims, i, k;
	int ret;

	if (dims < 1 || dims > lx->ndim)
		return hpu_error_set(EINVAL, "dims is %u for an input of %u dims", dims, lx->ndim);
	op->args[0] = dims;
	op->args[1] = (op->t[params] ? 1 : 0) | (op->t[params + 1] ? 2 : 0);
	for (i = 0; i < 2; i++) {
		const struct hpu_tensor_layout *st = &op->l[stats + i], *pr = &op->l[params + i];

		ret = hpu_op_dtype_in(op, stats + i, hpu_dt_bit(HPU_DT_F32));
		if (!ret)
			ret = hpu_op_same_dtype(op, x, params + i);
		if (ret)
			return ret;
		if (st->ndim != lead)
			return hpu_error_set(EINVAL, "%s must have %s's %u leading dims",
					     op->names[stats + i], op->names[x], lead);
		for (k = 0; k < lead; k++)
			if (st->shape[k] != lx->shape[k])
				return hpu_error_set(EINVAL, "%s must have %s's leading dims",
						     op->names[stats + i], op->names[x]);
		if (!op->t[params + i])
			continue;
		if (pr->ndim != dims)
			return hpu_error_set(EINVAL, "%s must have %s's %u trailing dims",
					     op->names[params + i], op->names[x], dims);
		for (k = 0; k < dims; k++)
			if (pr->shape[k] != lx->shape[lead + k])
				return hpu_error_set(EINVAL, "%s must have %s's trailing dims",
						     op->names[params + i], op->names[x]);
	}
	return 0;
}

int hpu_op_layer_norm(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *mean,
		      struct hpu_tensor *rstd, const struct hpu_tensor *in,
		      const struct hpu_tensor *weight, const struct hpu_tensor *bias,
		      unsigned int dims, double eps)
{
	const struct hpu_arg args[] = {
		HPU_OUT(out, "out"), HPU_OUT(mean, "mean"), HPU_OUT(rstd, "rstd"),
		HPU_SAME(in, "in"), { weight, "weight", HPU_ARG_OPTIONAL },
		{ bias, "bias", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { .scalars = { eps } };
	int ret = hpu_op_elementwise(&op, HPU_KERNEL_LAYER_NORM, "layer_norm", args, 6);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 3, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 3, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 3, 0);
	if (!ret)
		ret = hpu_op_norm(&op, 3, 1, 4, dims);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_layer_norm_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			       struct hpu_tensor *grad_weight, struct hpu_tensor *grad_bias,
			       const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
			       const struct hpu_tensor *mean, const struct hpu_tensor *rstd,
			       const struct hpu_tensor *weight, unsigned int dims)
{
	const struct hpu_arg args[] = {
		HPU_OUT(grad_in, "grad_in"),
		{ grad_weight, "grad_weight", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ grad_bias, "grad_bias", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		HPU_SAME(grad_out, "grad_out"), HPU_SAME(in, "in"), HPU_SAME(mean, "mean"),
		HPU_SAME(rstd, "rstd"), { weight, "weight", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { 0 };
	int ret = hpu_op_elementwise(&op, HPU_KERNEL_LAYER_NORM_BWD, "layer_norm_backward", args,
				     8);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 4, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 4, 0);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 4, 3);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 4, 7);
	if (!ret)
		ret = hpu_op_same_shape(&op, 4, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 4, 3);
	if (!ret && !grad_weight != !weight)
		ret = hpu_error_set(EINVAL, "grad_weight is given exactly when weight is");
	if (!ret)
		ret = hpu_op_norm(&op, 4, 5, 1, dims);
	/* The weight's presence bit is the forward's; grads are written if given. */
	if (!ret)
		op.args[1] = (weight ? 1 : 0) | (grad_bias ? 2 : 0);
	return hpu_op_finish(__func__, s, &op, ret);
}

/* t[table] [V, D], t[rows] [..., D], t[idx] index [...]. */
static int hpu_op_embedding_shapes(struct hpu_op *op, unsigned int table, unsigned int rows,
				   unsigned int idx, int64_t padding_idx)
{
	const struct hpu_tensor_layout *w = &op->l[table], *r = &op->l[rows], *ix = &op->l[idx];
	unsigned int k;
	int ret;

	op->args[0] = padding_idx;
	ret = hpu_op_dtype_in(op, table, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(op, table, rows);
	if (!ret)
		ret = hpu_op_dtype_in(op, idx, HPU_DTS_INDEX);
	if (ret)
		return ret;
	if (w->ndim != 2 || r->ndim != ix->ndim + 1 || r->shape[r->ndim - 1] != w->shape[1])
		return hpu_error_set(EINVAL, "%s must be [V, D], %s [..., D] with %s's dims",
				     op->names[table], op->names[rows], op->names[idx]);
	for (k = 0; k < ix->ndim; k++)
		if (r->shape[k] != ix->shape[k])
			return hpu_error_set(EINVAL, "%s's leading dims must be %s's",
					     op->names[rows], op->names[idx]);
	if (padding_idx < -1 || padding_idx >= w->shape[0])
		return hpu_error_set(EINVAL, "padding_idx %lld is not a row or -1",
				     (long long)padding_idx);
	return 0;
}

int hpu_op_embedding(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *weight,
		     const struct hpu_tensor *indices, int64_t padding_idx)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(weight, "weight"),
					HPU_SAME(indices, "indices") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_elementwise(&op, HPU_KERNEL_EMBEDDING, "embedding", args, 3);

	return hpu_op_finish(__func__, s, &op,
			     ret ? ret : hpu_op_embedding_shapes(&op, 1, 0, 2, padding_idx));
}

int hpu_op_embedding_backward(struct hpu_stream *s, struct hpu_tensor *grad_weight,
			      const struct hpu_tensor *grad_out, const struct hpu_tensor *indices,
			      int64_t padding_idx)
{
	const struct hpu_arg args[] = { HPU_OUT(grad_weight, "grad_weight"),
					HPU_SAME(grad_out, "grad_out"),
					HPU_SAME(indices, "indices") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_elementwise(&op, HPU_KERNEL_EMBEDDING_BWD, "embedding_backward", args, 3);

	return hpu_op_finish(__func__, s, &op,
			     ret ? ret : hpu_op_embedding_shapes(&op, 0, 1, 2, padding_idx));
}

/*
 * Collapses dims [first, first + count) of l into one dim at first, if one
 * stride steps through them (broadcast dims collapse with stride 0); count
 * 0 inserts a dim of size 1.
 */
static int hpu_layout_collapse(struct hpu_tensor_layout *l, unsigned int first,
			       unsigned int count, const char *name)
{
	struct hpu_tensor_layout c = *l;
	int64_t size = 1, stride = 0;
	bool have = false;
	unsigned int d;

	for (d = first + count; d-- > first;) {
		if (l->shape[d] == 1)
			continue;
		if (!have) {
			stride = l->strides[d];
			have = true;
		} else if (l->strides[d] != stride * size) {
			return hpu_error_set(EINVAL, "%s's leading dims cannot be stepped with one "
					     "stride; copy it to a contiguous tensor", name);
		}
		size *= l->shape[d];
	}
	c.ndim = l->ndim - count + 1;
	c.shape[first] = size;
	c.strides[first] = stride;
	for (d = first + count; d < l->ndim; d++) {
		c.shape[d - count + 1] = l->shape[d];
		c.strides[d - count + 1] = l->strides[d];
	}
	*l = c;
	return 0;
}

/* A matrix operand: at least 2 dims, float. */
static int hpu_op_matrix(const struct hpu_op *op, unsigned int i, unsigned int min_ndim)
{
	if (op->l[i].ndim < min_ndim)
		return hpu_error_set(EINVAL, "%s has %u dims, at least %u expected", op->names[i],
				     op->l[i].ndim, min_ndim);
	return hpu_op_dtype_in(op, i, HPU_DTS_FLOAT);
}

int hpu_op_matmul(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *a,
		  const struct hpu_tensor *b)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(a, "a"), HPU_SAME(b, "b") };
	struct hpu_op op = { 0 };
	int64_t shape[HPU_MAX_DIMS];
	unsigned int i, nb = 0;
	int ret = hpu_op_elementwise(&op, HPU_OPK_GEMM, "matmul", args, 3);

	for (i = 0; i < 3 && !ret; i++)
		ret = hpu_op_matrix(&op, i, 2);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 1, 2);
	if (ret)
		return hpu_error_in(__func__, ret);
	nb = op.l[0].ndim - 2;
	memcpy(shape, op.l[0].shape, nb * sizeof(shape[0]));
	/* a and b broadcast to [out's batch..., m, k] and [..., k, n]. */
	shape[nb] = op.l[0].shape[nb];
	shape[nb + 1] = op.l[1].shape[op.l[1].ndim - 1];
	ret = hpu_layout_broadcast(&a->l, nb + 2, shape, &op.l[1], "a");
	if (!ret) {
		shape[nb] = shape[nb + 1];
		shape[nb + 1] = op.l[0].shape[nb + 1];
		ret = hpu_layout_broadcast(&b->l, nb + 2, shape, &op.l[2], "b");
	}
	for (i = 0; i < 3 && !ret; i++)
		ret = hpu_layout_collapse(&op.l[i], 0, nb, op.names[i]);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_linear(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *x,
		  const struct hpu_tensor *weight, const struct hpu_tensor *bias)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(x, "x"),
					HPU_SAME(weight, "weight"),
					{ bias, "bias", HPU_ARG_OPTIONAL } };
	struct hpu_op op = { 0 };
	struct hpu_tensor_layout *lo = &op.l[0], *lx = &op.l[1], *lw = &op.l[2];
	unsigned int i, lead;
	int ret = hpu_op_elementwise(&op, HPU_OPK_GEMM, "linear", args, 4);

	for (i = 0; i < 2 && !ret; i++)
		ret = hpu_op_matrix(&op, i, 1);
	if (!ret)
		ret = hpu_op_matrix(&op, 2, 2);
	for (i = 2; i < 4 && !ret; i++)
		ret = hpu_op_same_dtype(&op, 1, i);
	if (ret)
		return hpu_error_in(__func__, ret);
	lead = lx->ndim - 1;
	if (lw->ndim != 2 || lo->ndim != lx->ndim || lx->shape[lead] != lw->shape[1] ||
	    lo->shape[lead] != lw->shape[0] || memcmp(lo->shape, lx->shape, lead * sizeof(int64_t)))
		ret = hpu_error_set(EINVAL, "x must be [..., k], weight [n, k] and out [..., n]");
	/* x and out as [1, rows, k] and [1, rows, n]; weight transposed as [1, k, n]. */
	for (i = 0; i < 2 && !ret; i++) {
		ret = hpu_layout_collapse(&op.l[i], 0, lead, op.names[i]);
		if (!ret)
			ret = hpu_layout_collapse(&op.l[i], 0, 0, op.names[i]);
	}
	if (!ret) {
		*lw = (struct hpu_tensor_layout){
			.dtype = weight->l.dtype, .ndim = 3, .offset = weight->l.offset,
			.shape = { 1, weight->l.shape[1], weight->l.shape[0] },
			.strides = { 0, weight->l.strides[1], weight->l.strides[0] },
		};
	}
	if (!ret && bias)
		ret = bias->l.ndim == 1 ? hpu_layout_broadcast(&bias->l, 3, lo->shape, &op.l[3], "bias")
					: hpu_error_set(EINVAL, "bias must be [n]");
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_cumsum(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		  unsigned int dim)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in") };
	struct hpu_op op = { .args = { dim } };
	int ret = hpu_op_elementwise(&op, HPU_OPK_CUMSUM, "cumsum", args, 2);

	if (!ret)
		ret = hpu_op_one_dtype(&op, 0, HPU_DTS_FLOAT | HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_op_shapes_of(&op, 0, 1);
	if (!ret && dim >= op.l[0].ndim)
		ret = hpu_error_set(EINVAL, "dim %u of a tensor of %u dims", dim, op.l[0].ndim);
	return hpu_op_finish(__func__, s, &op, ret);
}

/* An optimizer step: every operand of param's shape and float dtype. */
static int hpu_op_optimizer(struct hpu_op *op, uint32_t kernel, const char *name,
			    const struct hpu_arg *args, unsigned int count, const void *config)
{
	int ret = config ? hpu_op_elementwise(op, kernel, name, args, count)
			 : hpu_error_set(EINVAL, "config is NULL");

	if (!ret)
		ret = hpu_op_one_dtype(op, 0, HPU_DTS_FLOAT);
	return ret ? ret : hpu_op_shapes_of(op, 0, 1);
}

#define HPU_IO(t, name) { t, name, HPU_ARG_OUT }

/* A hyperparameter and the range torch.optim accepts for it. */
struct hpu_bound {
	const char *name;
	double value, lo, hi;
	bool hi_open; /* [lo, hi) rather than [lo, hi] */
};

static int hpu_check_bounds(const struct hpu_bound *b, unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++, b++)
		if (!(b->value >= b->lo && (b->hi_open ? b->value < b->hi : b->value <= b->hi)))
			return hpu_error_set(EINVAL, "%s is %g, not in [%g, %g%c", b->name, b->value,
					     b->lo, b->hi, b->hi_open ? ')' : ']');
	return 0;
}

int hpu_op_sgd(struct hpu_stream *s, struct hpu_tensor *param, const struct hpu_tensor *grad,
	       struct hpu_tensor *momentum_buf, const struct hpu_sgd_config *c, bool first_step)
{
	const struct hpu_arg args[] = { HPU_IO(param, "param"), HPU_SAME(grad, "grad"),
					HPU_IO(momentum_buf, "momentum_buf") };
	struct hpu_op op = { .args = { (c && c->nesterov) | (first_step << 1) } };
	int ret = hpu_op_optimizer(&op, HPU_KERNEL_SGD, "sgd", args, 3, c);

	if (!ret) {
		const struct hpu_bound b[] = {
			{ "lr", c->lr, 0, INFINITY, false }, { "momentum", c->momentum, 0, INFINITY, false },
			{ "dampening", c->dampening, -DBL_MAX, DBL_MAX, false },
			{ "weight_decay", c->weight_decay, 0, INFINITY, false },
		};

		ret = hpu_check_bounds(b, HPU_ARRAY_SIZE(b));
	}
	if (!ret && c->nesterov && (c->momentum == 0 || c->dampening != 0))
		ret = hpu_error_set(EINVAL, "nesterov wants a momentum and no dampening");
	if (!ret)
		memcpy(op.scalars, (double[]){ c->lr, c->momentum, c->dampening, c->weight_decay },
		       4 * sizeof(double));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_adadelta(struct hpu_stream *s, struct hpu_tensor *param, const struct hpu_tensor *grad,
		    struct hpu_tensor *square_avg, struct hpu_tensor *acc_delta,
		    const struct hpu_adadelta_config *c)
{
	const struct hpu_arg args[] = { HPU_IO(param, "param"), HPU_SAME(grad, "grad"),
					HPU_IO(square_avg, "square_avg"),
					HPU_IO(acc_delta, "acc_delta") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_optimizer(&op, HPU_KERNEL_ADADELTA, "adadelta", args, 4, c);

	if (!ret) {
		const struct hpu_bound b[] = {
			{ "lr", c->lr, 0, INFINITY, false }, { "rho", c->rho, 0, 1, false },
			{ "eps", c->eps, 0, INFINITY, false },
			{ "weight_decay", c->weight_decay, 0, INFINITY, false },
		};

		ret = hpu_check_bounds(b, HPU_ARRAY_SIZE(b));
	}
	if (!ret)
		memcpy(op.scalars, (double[]){ c->lr, c->rho, c->eps, c->weight_decay },
		       4 * sizeof(double));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_adamw(struct hpu_stream *s, struct hpu_tensor *param, const struct hpu_tensor *grad,
		 struct hpu_tensor *exp_avg, struct hpu_tensor *exp_avg_sq, struct hpu_tensor *step,
		 const struct hpu_adamw_config *c)
{
	const struct hpu_arg args[] = { HPU_IO(param, "param"), HPU_SAME(grad, "grad"),
					HPU_IO(exp_avg, "exp_avg"), HPU_IO(exp_avg_sq, "exp_avg_sq") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_optimizer(&op, HPU_KERNEL_ADAMW, "adamw", args, 4, c);

	if (!ret)
		ret = hpu_op_operand(&op, 4, step, "step", HPU_ARG_OUT);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 4, hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_I64));
	if (!ret)
		ret = hpu_op_scalar_operand(&op, 4);
	if (!ret) {
		const struct hpu_bound b[] = {
			{ "lr", c->lr, 0, INFINITY, false }, { "beta1", c->beta1, 0, 1, true },
			{ "beta2", c->beta2, 0, 1, true }, { "eps", c->eps, 0, INFINITY, false },
			{ "weight_decay", c->weight_decay, 0, INFINITY, false },
		};

		ret = hpu_check_bounds(b, HPU_ARRAY_SIZE(b));
	}
	if (!ret)
		memcpy(op.scalars, (double[]){ c->lr, c->beta1, c->beta2, c->eps, c->weight_decay },
		       5 * sizeof(double));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_clip_grad_norm(struct hpu_stream *s, struct hpu_tensor *total_norm,
			  struct hpu_tensor *const *grads, unsigned int count, double max_norm,
			  double norm_type)
{
	struct hpu_op op = { .kernel = HPU_KERNEL_CLIP_GRAD_NORM, .name = "clip_grad_norm",
			     .scalars = { max_norm, norm_type } };
	unsigned int i;
	int ret = hpu_op_operand(&op, 0, total_norm, "total_norm", HPU_ARG_OUT);

	if (!ret && (!grads || count < 1 || count >= HPU_OP_TENSORS))
		ret = hpu_error_set(EINVAL, "grads must name 1 to %d tensors", HPU_OP_TENSORS - 1);
	for (i = 0; i < count && !ret; i++)
		ret = hpu_op_operand(&op, i + 1, grads[i], "grads[i]", HPU_ARG_OUT);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 0, hpu_dt_bit(HPU_DT_F32));
	if (!ret)
		ret = hpu_op_scalar_operand(&op, 0);
	if (!ret)
		ret = hpu_op_one_dtype(&op, 1, HPU_DTS_FLOAT);
	if (!ret && norm_type != 2 && !isinf(norm_type))
		ret = hpu_error_set(EINVAL, "norm_type is %g: 2 or INFINITY", norm_type);
	return hpu_op_finish(__func__, s, &op, ret);
}
