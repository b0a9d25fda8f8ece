/* SPDX-License-Identifier: MIT */
/*
 * Softmax, forward and backward, and the losses built on it: NLL and
 * cross entropy, forward and backward (the device's hdm_kernel_loss.c).
 */
#include <errno.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

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
	int ret = hpu_op_describe(&op, HPU_KERNEL_SOFTMAX, log ? "log_softmax" : "softmax",
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
	int ret = hpu_op_describe(&op, HPU_KERNEL_SOFTMAX_BWD, "softmax_backward", args, 3);

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
	int ret = hpu_op_describe(&op, k->kernel, k->name, args, count);

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
