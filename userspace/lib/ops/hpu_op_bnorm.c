/* SPDX-License-Identifier: MIT */
/*
 * The batch-norm ops, forward and backward (the device's
 * hdm_kernel_bnorm.c): operands checked here with reasons, the flags
 * mapped onto the kernels' a0.
 */
#include <errno.h>
#include <math.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* The most chunks of channels the device's scratch holds (hdm_kernel_bnorm.c). */
#define HPU_BN_MAX_PARTS (1u << 19)

int hpu_op_norm_input(const struct hpu_op *op, unsigned int x, unsigned int like)
{
	int ret = hpu_op_dtype_in(op, x, HPU_DTS_FLOAT);

	if (!ret)
		ret = hpu_op_same_dtype(op, x, like);
	if (!ret)
		ret = hpu_op_same_shape(op, x, like);
	if (!ret && op->l[x].ndim < 2)
		ret = hpu_error_set(EINVAL, "%s must be [N, C, ...]", op->names[x]);
	return ret;
}

/*
 * t[x] a float [N, C, ...] of t[like]'s dtype and shape (its result or
 * gradient); the operands of mask chans (those present) float [C], those
 * of mask stats F32 (or F64: the host's); channels within the device's
 * bound.  Sets *m to the elements per channel.
 */
static int hpu_op_bn_operands(const struct hpu_op *op, unsigned int x, unsigned int like,
			      unsigned int chans, unsigned int stats, int64_t *m)
{
	const struct hpu_tensor_layout *l = &op->l[x];
	int64_t c, chunks;
	unsigned int i;
	int ret = hpu_op_norm_input(op, x, like);

	if (ret)
		return ret;
	c = l->shape[1];
	*m = c ? hpu_layout_numel(l) / c : 0;
	chunks = *m ? (*m + HPU_BNORM_CHUNK - 1) / HPU_BNORM_CHUNK : 1;
	if (!c || c > HPU_BN_MAX_PARTS / chunks)
		return hpu_error_set(EINVAL, "%s has %lld channels of %lld elements: the device "
				     "takes 1 to 2^19 chunks of 2^19", op->names[x], (long long)c,
				     (long long)*m);
	for (i = 0; i < op->num_tensors; i++) {
		unsigned int dts = stats & (1u << i) ?
				   hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_F64) : HPU_DTS_FLOAT;

		if (!(chans & (1u << i)) || !op->t[i])
			continue;
		ret = hpu_op_dtype_in(op, i, dts);
		if (ret)
			return ret;
		if (op->l[i].ndim != 1 || op->l[i].shape[0] != c)
			return hpu_error_set(EINVAL, "%s must be [C], C = %lld (%s's dim 1)",
					     op->names[i], (long long)c, op->names[x]);
	}
	return 0;
}

int hpu_op_batch_norm(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *save_mean,
		      struct hpu_tensor *save_invstd, const struct hpu_tensor *in,
		      const struct hpu_tensor *weight, const struct hpu_tensor *bias,
		      struct hpu_tensor *running_mean, struct hpu_tensor *running_var,
		      unsigned int flags, double momentum, double eps)
{
	bool training = flags & HPU_BN_TRAINING;
	unsigned int run = HPU_ARG_OPTIONAL | (training ? HPU_ARG_OUT : 0);
	const struct hpu_arg args[] = {
		HPU_OUT(out, "out"), HPU_OUT(save_mean, "save_mean"),
		HPU_OUT(save_invstd, "save_invstd"), HPU_SAME(in, "in"),
		{ weight, "weight", HPU_ARG_OPTIONAL }, { bias, "bias", HPU_ARG_OPTIONAL },
		{ running_mean, "running_mean", run }, { running_var, "running_var", run },
	};
	struct hpu_op op = { .scalars = { eps, momentum } };
	int64_t m;
	int ret = 0;

	if (flags & ~(unsigned int)HPU_BN_TRAINING)
		ret = hpu_error_set(EINVAL, "flags %#x: the forward takes HPU_BN_TRAINING", flags);
	else if (!running_mean != !running_var)
		ret = hpu_error_set(EINVAL, "running_mean and running_var come together");
	else if (!training && !running_mean)
		ret = hpu_error_set(EINVAL, "eval normalises by running statistics: none given");
	else if (!(eps >= 0) || !isfinite(eps) || !isfinite(momentum))
		ret = hpu_error_set(EINVAL, "eps %g (>= 0) and momentum %g must be finite", eps,
				    momentum);
	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_BATCH_NORM, "batch_norm", args, 8);
	if (!ret)
		ret = hpu_op_bn_operands(&op, 3, 0, 0xf6, 0x6, &m);
	if (!ret && training && !m)
		ret = hpu_error_set(EINVAL, "training needs an element per channel: in has none");
	op.args[0] = (weight ? 1 : 0) | (bias ? 2 : 0) | (training ? 4 : 0) | (running_mean ? 8 : 0);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_batch_norm_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			       struct hpu_tensor *grad_weight, struct hpu_tensor *grad_bias,
			       const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
			       const struct hpu_tensor *mean, const struct hpu_tensor *invstd,
			       const struct hpu_tensor *weight, unsigned int flags, double eps)
{
	const struct hpu_arg args[] = {
		HPU_OUT(grad_in, "grad_in"),
		{ grad_weight, "grad_weight", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ grad_bias, "grad_bias", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		HPU_SAME(grad_out, "grad_out"), HPU_SAME(in, "in"), HPU_SAME(mean, "mean"),
		HPU_SAME(invstd, "invstd"), { weight, "weight", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { .scalars = { eps } };
	int64_t m;
	int ret = 0;

	if (flags & ~(unsigned int)(HPU_BN_TRAINING | HPU_BN_VAR))
		ret = hpu_error_set(EINVAL, "flags %#x: the backward takes HPU_BN_TRAINING and "
				    "HPU_BN_VAR", flags);
	else if (!(eps >= 0) || !isfinite(eps))
		ret = hpu_error_set(EINVAL, "eps %g must be finite and >= 0", eps);
	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_BATCH_NORM_BWD, "batch_norm_backward", args,
				      8);
	if (!ret)
		ret = hpu_op_same_shape(&op, 4, 3);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 3, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_bn_operands(&op, 4, 0, 0xe6, 0, &m);
	if (!ret && (flags & HPU_BN_TRAINING) && !m)
		ret = hpu_error_set(EINVAL, "training needs an element per channel: in has none");
	op.args[0] = (weight ? 1 : 0) | (grad_weight ? 2 : 0) | (grad_bias ? 4 : 0) |
		     (flags & HPU_BN_TRAINING ? 8 : 0) | (flags & HPU_BN_VAR ? 16 : 0);
	return hpu_op_finish(__func__, s, &op, ret);
}
