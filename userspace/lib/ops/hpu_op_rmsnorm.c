/* SPDX-License-Identifier: MIT */
/*
 * RMSNorm forward and backward (the device's hdm_kernel_rmsnorm.c): layer
 * norm without the mean and the bias.
 */
#include <errno.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/*
 * t[x] the input (float, `dims` trailing dims normalised), t[rstd] F32 of
 * x's leading dims, t[w] and t[gw] (grad_weight, or none: gw == w) of x's
 * trailing dims and dtype, or absent.  Sets a0 and a1.
 */
static int hpu_op_rms_operands(struct hpu_op *op, unsigned int x, unsigned int rstd,
			       unsigned int w, unsigned int gw, unsigned int dims)
{
	const struct hpu_tensor_layout *lx = &op->l[x], *lr = &op->l[rstd];
	const unsigned int params[2] = { w, gw };
	unsigned int lead = lx->ndim - dims, k, p;
	int ret;

	if (dims < 1 || dims > lx->ndim)
		return hpu_error_set(EINVAL, "dims is %u for an input of %u dims", dims, lx->ndim);
	op->args[0] = dims;
	op->args[1] = op->t[w] ? 1 : 0;
	ret = hpu_op_dtype_in(op, x, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_dtype_in(op, rstd, hpu_dt_bit(HPU_DT_F32));
	if (ret)
		return ret;
	if (lr->ndim != lead)
		return hpu_error_set(EINVAL, "rstd must have %s's %u leading dims", op->names[x],
				     lead);
	for (k = 0; k < lead; k++)
		if (lr->shape[k] != lx->shape[k])
			return hpu_error_set(EINVAL, "rstd must have %s's leading dims",
					     op->names[x]);
	for (p = 0; p < (w == gw ? 1u : 2u); p++) {
		unsigned int i = params[p];
		const struct hpu_tensor_layout *lp = &op->l[i];

		ret = hpu_op_same_dtype(op, x, i);
		if (ret)
			return ret;
		if (!op->t[i])
			continue;
		if (lp->ndim != dims)
			return hpu_error_set(EINVAL, "%s must have %s's %u trailing dims",
					     op->names[i], op->names[x], dims);
		for (k = 0; k < dims; k++)
			if (lp->shape[k] != lx->shape[lead + k])
				return hpu_error_set(EINVAL, "%s must have %s's trailing dims",
						     op->names[i], op->names[x]);
	}
	return 0;
}

int hpu_op_rms_norm(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *rstd,
		    const struct hpu_tensor *in, const struct hpu_tensor *weight, unsigned int dims,
		    double eps)
{
	const struct hpu_arg args[] = {
		HPU_OUT(out, "out"), HPU_OUT(rstd, "rstd"), HPU_SAME(in, "in"),
		{ weight, "weight", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { .scalars = { eps } };
	int ret = eps >= 0 ? 0 : hpu_error_set(EINVAL, "eps is %g, below 0", eps);

	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_RMS_NORM, "rms_norm", args, 4);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 2, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 2, 0);
	if (!ret)
		ret = hpu_op_rms_operands(&op, 2, 1, 3, 3, dims);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_rms_norm_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			     struct hpu_tensor *grad_weight, const struct hpu_tensor *grad_out,
			     const struct hpu_tensor *in, const struct hpu_tensor *rstd,
			     const struct hpu_tensor *weight, unsigned int dims)
{
	const struct hpu_arg args[] = {
		HPU_OUT(grad_in, "grad_in"),
		{ grad_weight, "grad_weight", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		HPU_SAME(grad_out, "grad_out"), HPU_SAME(in, "in"), HPU_SAME(rstd, "rstd"),
		{ weight, "weight", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { 0 };
	int ret = !grad_weight != !weight
			  ? hpu_error_set(EINVAL, "grad_weight is given exactly when weight is")
			  : 0;

	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_RMS_NORM_BWD, "rms_norm_backward", args, 6);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 3, 0);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 3, 2);
	if (!ret)
		ret = hpu_op_same_shape(&op, 3, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 3, 2);
	if (!ret)
		ret = hpu_op_rms_operands(&op, 3, 4, 5, 1, dims);
	return hpu_op_finish(__func__, s, &op, ret);
}
