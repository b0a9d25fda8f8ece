/* SPDX-License-Identifier: MIT */
/*
 * Convolution 1d and 2d, forward and backward (the device's
 * hdm_kernel_conv.c): the shape rules checked here with messages naming
 * the operand, the parameters packed into the kernels' args; the bias
 * gradient is a sum of grad_out over all dims but the channels.
 */
#include <errno.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* The parameters' limits, the device's (drm/hpu_kernels.h). */
#define HPU_CONV_STEP_MAX (1 << 20)

/* Output length along a dim, or 0 when the dilated kernel is longer than the padded input. */
static int64_t hpu_conv_out_len(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil)
{
	int64_t span = dil * (k - 1) + 1;

	return in + 2 * pad < span ? 0 : (in + 2 * pad - span) / stride + 1;
}

static int hpu_conv_param(int64_t v, int64_t lo, const char *what, unsigned int d)
{
	if (v >= lo && v <= HPU_CONV_STEP_MAX)
		return 0;
	return hpu_error_set(EINVAL, "%s[%u] is %lld, not in [%lld, 2^20]", what, d, (long long)v,
			     (long long)lo);
}

/*
 * Checks the convolution of operands x [N, Cin, (H,) W], w [Cout, Cin /
 * groups, (kh,) kw] and y [N, Cout, (Ho,) Wo] (op's operands ix, iw, iy:
 * in or its grad, weight or its grad, out or its grad) and sets op's args.
 */
static int hpu_conv_check(struct hpu_op *op, unsigned int ix, unsigned int iw, unsigned int iy,
			  const struct hpu_conv_params *p)
{
	const struct hpu_tensor_layout *x = &op->l[ix], *w = &op->l[iw], *y = &op->l[iy];
	unsigned int nd = x->ndim, sp = nd - 2, d;
	int64_t o;
	int ret;

	if (!p)
		return hpu_error_set(EINVAL, "params is NULL");
	ret = hpu_op_one_dtype(op, 0, HPU_DTS_FLOAT);
	if (ret)
		return ret;
	if ((nd != 3 && nd != 4) || w->ndim != nd || y->ndim != nd)
		return hpu_error_set(EINVAL, "%s, %s and %s must all have 3 dims (1d) or 4 (2d)",
				     op->names[ix], op->names[iw], op->names[iy]);
	for (d = 2 - sp; d < 2 && !ret; d++) {
		ret = hpu_conv_param(p->stride[d], 1, "stride", d);
		if (!ret)
			ret = hpu_conv_param(p->padding[d], 0, "padding", d);
		if (!ret)
			ret = hpu_conv_param(p->dilation[d], 1, "dilation", d);
	}
	if (ret)
		return ret;
	if (p->groups < 1 || x->shape[1] % p->groups || w->shape[0] % p->groups)
		return hpu_error_set(EINVAL, "groups %lld must divide %s's %lld channels and %s's "
				     "%lld", (long long)p->groups, op->names[ix],
				     (long long)x->shape[1], op->names[iw], (long long)w->shape[0]);
	if (w->shape[1] * p->groups != x->shape[1] || !w->shape[1])
		return hpu_error_set(EINVAL, "%s must have %s's channels / groups = %lld at dim 1",
				     op->names[iw], op->names[ix], (long long)(x->shape[1] / p->groups));
	if (y->shape[0] != x->shape[0] || y->shape[1] != w->shape[0])
		return hpu_error_set(EINVAL, "%s must be [%s's batch, %s's out channels, ...]",
				     op->names[iy], op->names[ix], op->names[iw]);
	for (d = 0; d < sp; d++) {
		unsigned int pd = 2 - sp + d;

		o = hpu_conv_out_len(x->shape[2 + d], w->shape[2 + d], p->stride[pd],
				     p->padding[pd], p->dilation[pd]);
		if (!w->shape[2 + d] || !o)
			return hpu_error_set(EINVAL, "%s's kernel of %lld (dilation %lld) does not fit "
					     "%s's %lld padded by %lld", op->names[iw],
					     (long long)w->shape[2 + d], (long long)p->dilation[pd],
					     op->names[ix], (long long)x->shape[2 + d],
					     (long long)p->padding[pd]);
		if (y->shape[2 + d] != o)
			return hpu_error_set(EINVAL, "%s's dim %u is %lld, the convolution gives %lld",
					     op->names[iy], 2 + d, (long long)y->shape[2 + d],
					     (long long)o);
	}
	/* 1d keeps the height entries at their neutral values, as the device wants. */
	op->args[0] = sp == 2 ? p->stride[0] : 1;
	op->args[1] = p->stride[1];
	op->args[2] = sp == 2 ? p->padding[0] : 0;
	op->args[3] = p->padding[1];
	op->args[4] = sp == 2 ? p->dilation[0] : 1;
	op->args[5] = p->dilation[1];
	op->args[6] = p->groups;
	return 0;
}

/* Operand i has ref's shape (ref checked already). */
static int hpu_conv_shape_of(const struct hpu_op *op, unsigned int i, const struct hpu_tensor *ref,
			     const char *ref_name)
{
	const struct hpu_tensor_layout *l = &op->l[i];

	if (l->ndim == ref->l.ndim && !memcmp(l->shape, ref->l.shape, l->ndim * sizeof(int64_t)))
		return 0;
	return hpu_error_set(EINVAL, "%s must have %s's shape", op->names[i], ref_name);
}

int hpu_op_conv(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		const struct hpu_tensor *weight, const struct hpu_tensor *bias,
		const struct hpu_conv_params *p)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in"),
					HPU_SAME(weight, "weight"), HPU_SAME(bias, "bias") };
	struct hpu_op op = { 0 };
	/* The kernel takes bias as a fourth operand only when there is one. */
	int ret = hpu_op_describe(&op, HPU_KERNEL_CONV, "conv", args, bias ? 4 : 3);

	if (!ret)
		ret = hpu_conv_check(&op, 1, 2, 0, p);
	if (!ret && bias && (op.l[3].ndim != 1 || op.l[3].shape[0] != op.l[2].shape[0]))
		ret = hpu_error_set(EINVAL, "bias must be [out channels] = [%lld]",
				    (long long)op.l[2].shape[0]);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_conv_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			 struct hpu_tensor *grad_weight, struct hpu_tensor *grad_bias,
			 const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
			 const struct hpu_tensor *weight, const struct hpu_conv_params *p)
{
	struct hpu_op op = { 0 };
	int ret = 0;

	/* The forward's operands first: every launch below is then valid or none runs. */
	if (grad_in || grad_weight) {
		const struct hpu_arg args[] = { HPU_SAME(in, "in"), HPU_SAME(weight, "weight"),
						HPU_SAME(grad_out, "grad_out") };

		ret = hpu_op_describe(&op, HPU_KERNEL_CONV, "conv_backward", args, 3);
		if (!ret)
			ret = hpu_conv_check(&op, 0, 1, 2, p);
	}
	if (!ret && grad_in) {
		const struct hpu_arg args[] = { HPU_OUT(grad_in, "grad_in"),
						HPU_SAME(grad_out, "grad_out"),
						HPU_SAME(weight, "weight") };

		op = (struct hpu_op){ 0 };
		ret = hpu_op_describe(&op, HPU_KERNEL_CONV_BWD_INPUT, "conv_backward_input", args,
				      3);
		if (!ret)
			ret = hpu_conv_shape_of(&op, 0, in, "in");
		if (!ret)
			ret = hpu_conv_check(&op, 0, 2, 1, p);
		ret = hpu_op_finish(__func__, s, &op, ret);
	}
	if (!ret && grad_weight) {
		const struct hpu_arg args[] = { HPU_OUT(grad_weight, "grad_weight"),
						HPU_SAME(grad_out, "grad_out"), HPU_SAME(in, "in") };

		op = (struct hpu_op){ 0 };
		ret = hpu_op_describe(&op, HPU_KERNEL_CONV_BWD_WEIGHT, "conv_backward_weight",
				      args, 3);
		if (!ret)
			ret = hpu_conv_shape_of(&op, 0, weight, "weight");
		if (!ret)
			ret = hpu_conv_check(&op, 2, 0, 1, p);
		ret = hpu_op_finish(__func__, s, &op, ret);
	}
	/* grad_bias [Cout]: grad_out summed over N and the spatial dims, all but dim 1. */
	if (!ret && grad_bias && !grad_out)
		ret = hpu_error_in(__func__, hpu_error_set(EINVAL, "grad_out is NULL"));
	if (!ret && grad_bias)
		ret = hpu_op_reduce(s, HPU_RED_SUM, grad_bias, grad_out,
				    ((1u << grad_out->l.ndim) - 1) & ~2u);
	return ret;
}
