/* SPDX-License-Identifier: MIT */
/*
 * The group-norm ops, forward and backward (the device's
 * hdm_kernel_gnorm.c): operands checked here with reasons, the groups and
 * flags mapped onto the kernels' a0 and a1.
 */
#include <errno.h>
#include <math.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* The most partials the device's scratch holds (hdm_kernel_gnorm.c). */
#define HPU_GN_MAX_PARTS (1u << 19)

/*
 * t[x] a float [N, C, ...] (N, C and the elements per channel at least 1)
 * of t[like]'s dtype and shape, groups dividing C, within the device's
 * bound; the operands of mask chans (those present) float [C], those of
 * mask stats F32 [N, G] (or F64: the host's).  Sets a0.
 */
static int hpu_op_gn_operands(struct hpu_op *op, unsigned int x, unsigned int like,
			      unsigned int chans, unsigned int stats, unsigned int groups)
{
	const struct hpu_tensor_layout *l = &op->l[x];
	int64_t n, c, hw, chunks;
	unsigned int i;
	int ret = hpu_op_norm_input(op, x, like);

	if (ret)
		return ret;
	n = l->shape[0];
	c = l->shape[1];
	hw = n && c ? hpu_layout_numel(l) / (n * c) : 0;
	if (!hw)
		return hpu_error_set(EINVAL, "%s has no element to normalise", op->names[x]);
	if (!groups || c % groups)
		return hpu_error_set(EINVAL, "%u groups do not divide %lld channels", groups,
				     (long long)c);
	chunks = (hw + HPU_BNORM_CHUNK - 1) / HPU_BNORM_CHUNK;
	if (n * c > (HPU_GN_MAX_PARTS - n * (int64_t)groups) / chunks)
		return hpu_error_set(EINVAL, "%s has %lld rows of %lld elements in %u groups: the "
				     "device takes N C ceil(rows / 2^19) + N G up to 2^19",
				     op->names[x], (long long)(n * c), (long long)hw, groups);
	op->args[0] = groups;
	for (i = 0; i < op->num_tensors; i++) {
		bool stat = stats & (1u << i);
		unsigned int dts = stat ? hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_F64) :
					  HPU_DTS_FLOAT;
		const struct hpu_tensor_layout *li = &op->l[i];

		if (!((chans | stats) & (1u << i)) || !op->t[i])
			continue;
		ret = hpu_op_dtype_in(op, i, dts);
		if (ret)
			return ret;
		if (stat && (li->ndim != 2 || li->shape[0] != n || li->shape[1] != groups))
			return hpu_error_set(EINVAL, "%s must be [N, G] = [%lld, %u]", op->names[i],
					     (long long)n, groups);
		if (!stat && (li->ndim != 1 || li->shape[0] != c))
			return hpu_error_set(EINVAL, "%s must be [C], C = %lld (%s's dim 1)",
					     op->names[i], (long long)c, op->names[x]);
	}
	return 0;
}

int hpu_op_group_norm(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *mean,
		      struct hpu_tensor *rstd, const struct hpu_tensor *in,
		      const struct hpu_tensor *weight, const struct hpu_tensor *bias,
		      unsigned int groups, double eps)
{
	const struct hpu_arg args[] = {
		HPU_OUT(out, "out"), HPU_OUT(mean, "mean"), HPU_OUT(rstd, "rstd"),
		HPU_SAME(in, "in"), { weight, "weight", HPU_ARG_OPTIONAL },
		{ bias, "bias", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { .scalars = { eps } };
	int ret = eps >= 0 && isfinite(eps) ?
			  0 : hpu_error_set(EINVAL, "eps %g must be finite and >= 0", eps);

	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_GROUP_NORM, "group_norm", args, 6);
	if (!ret)
		ret = hpu_op_gn_operands(&op, 3, 0, 0x30, 0x6, groups);
	op.args[1] = (weight ? 1 : 0) | (bias ? 2 : 0);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_group_norm_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			       struct hpu_tensor *grad_weight, struct hpu_tensor *grad_bias,
			       const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
			       const struct hpu_tensor *mean, const struct hpu_tensor *rstd,
			       const struct hpu_tensor *weight, unsigned int groups)
{
	const struct hpu_arg args[] = {
		{ grad_in, "grad_in", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ grad_weight, "grad_weight", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ grad_bias, "grad_bias", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		HPU_SAME(grad_out, "grad_out"), HPU_SAME(in, "in"), HPU_SAME(mean, "mean"),
		HPU_SAME(rstd, "rstd"), { weight, "weight", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_GROUP_NORM_BWD, "group_norm_backward", args, 8);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 3, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_shape(&op, 3, 4);
	if (!ret && grad_in)
		ret = hpu_op_same_dtype(&op, 4, 0);
	if (!ret)
		ret = hpu_op_gn_operands(&op, 4, grad_in ? 0 : 4, 0x86, 0x60, groups);
	op.args[1] = (weight ? 1 : 0) | (grad_weight ? 2 : 0) | (grad_bias ? 4 : 0) |
		     (grad_in ? 8 : 0);
	return hpu_op_finish(__func__, s, &op, ret);
}
