/* SPDX-License-Identifier: MIT */
/*
 * The pooling ops: 2-d max, average and adaptive average pooling, forward
 * and backward (the device's hdm_kernel_pool.c).  Windows are checked
 * here as the device checks them (drm/hpu_pool.h), so a bad one fails at
 * the call with a reason.
 */
#include <errno.h>

#include <drm/hpu_kernels.h>
#include <drm/hpu_pool.h>

#include "../ops/ops.h"

/* The windows of a pooling, as the ABI's args carry them. */
struct hpu_pool_spec {
	const int64_t *kernel, *stride, *padding, *dilation; /* NULL: adaptive (all), 1 (dilation) */
	bool include_pad;
	int64_t divisor;
};

/*
 * Checks op's pooling of t[in] [..., H, W] into t[out] [..., Ho, Wo] (for
 * a backward: grad_in and grad_out) and sets its args.
 */
static int hpu_op_pool(struct hpu_op *op, unsigned int in, unsigned int out,
		       const struct hpu_pool_spec *ps, bool backward)
{
	const struct hpu_tensor_layout *li = &op->l[in], *lo = &op->l[out];
	bool max = op->kernel == HPU_KERNEL_MAX_POOL || op->kernel == HPU_KERNEL_MAX_POOL_BWD;
	uint64_t span = 1, holders = 1;
	unsigned int lead = li->ndim - 2, a;
	int ret = hpu_op_dtype_in(op, in, HPU_DTS_FLOAT);

	if (!ret)
		ret = hpu_op_same_dtype(op, in, out);
	if (ret)
		return ret;
	if (li->ndim < 3 || lo->ndim != li->ndim)
		return hpu_error_set(EINVAL, "%s and %s must have the same dims, at least 3 "
				     "([..., H, W])", op->names[in], op->names[out]);
	for (a = 0; a < lead; a++)
		if (li->shape[a] != lo->shape[a])
			return hpu_error_set(EINVAL, "%s and %s must have the same leading dims",
					     op->names[in], op->names[out]);
	if (ps->divisor < 0 || ps->divisor > HPU_POOL_MAX_ARG)
		return hpu_error_set(EINVAL, "divisor_override %lld is not in [0, %d]",
				     (long long)ps->divisor, HPU_POOL_MAX_ARG);
	for (a = 0; a < 2; a++) {
		struct hpu_pool_axis x = {
			.n = li->shape[lead + a], .no = lo->shape[lead + a], .d = 1,
			.adaptive = !ps->kernel,
		};

		if (ps->kernel) {
			x.k = ps->kernel[a];
			x.s = ps->stride[a];
			x.p = ps->padding[a];
			x.d = ps->dilation ? ps->dilation[a] : 1;
			op->args[a] = x.k;
			op->args[2 + a] = x.s;
			op->args[4 + a] = x.p;
			if (max)
				op->args[6 + a] = x.d;
		}
		if (!hpu_pool_axis_ok(&x))
			return hpu_error_set(EINVAL, "%s %s: no pooling of %lld into %lld with kernel "
					     "%lld, stride %lld, padding %lld (at most half the "
					     "kernel), dilation %lld, in (0, 2^20]",
					     a ? "width" : "height", op->names[out],
					     (long long)x.n, (long long)x.no, (long long)x.k,
					     (long long)x.s, (long long)x.p, (long long)x.d);
		span *= hpu_pool_max_span(&x);
		holders *= hpu_pool_max_holders(&x);
	}
	if (!max) {
		op->args[6] = (ps->include_pad ? 1 : 0) | (ps->kernel ? 0 : 2);
		op->args[7] = ps->divisor;
	}
	if ((backward ? holders : span) > HPU_KERNEL_MAX_ITEM_WORK)
		return hpu_error_set(EINVAL, "%s: windows of %llu elements, or an element in %llu "
				     "windows: the device takes %llu", op->name,
				     (unsigned long long)span, (unsigned long long)holders,
				     (unsigned long long)HPU_KERNEL_MAX_ITEM_WORK);
	return 0;
}

int hpu_op_max_pool2d(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *indices,
		      const struct hpu_tensor *in, const int64_t kernel[2], const int64_t stride[2],
		      const int64_t padding[2], const int64_t dilation[2])
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_OUT(indices, "indices"),
					HPU_SAME(in, "in") };
	const struct hpu_pool_spec ps = { kernel, stride, padding, dilation, false, 0 };
	struct hpu_op op = { 0 };
	int ret = !kernel || !stride || !padding || !dilation ?
		  hpu_error_set(EINVAL, "kernel, stride, padding and dilation are needed") : 0;

	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_MAX_POOL, "max_pool2d", args, 3);
	if (!ret)
		ret = hpu_op_pool(&op, 2, 0, &ps, false);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 1, HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_op_same_shape(&op, 0, 1);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_max_pool2d_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			       const struct hpu_tensor *grad_out, const struct hpu_tensor *indices,
			       const int64_t kernel[2], const int64_t stride[2],
			       const int64_t padding[2], const int64_t dilation[2])
{
	const struct hpu_arg args[] = { HPU_OUT(grad_in, "grad_in"), HPU_SAME(grad_out, "grad_out"),
					HPU_SAME(indices, "indices") };
	const struct hpu_pool_spec ps = { kernel, stride, padding, dilation, false, 0 };
	struct hpu_op op = { 0 };
	int ret = !kernel || !stride || !padding || !dilation ?
		  hpu_error_set(EINVAL, "kernel, stride, padding and dilation are needed") : 0;

	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_MAX_POOL_BWD, "max_pool2d_backward", args, 3);
	if (!ret)
		ret = hpu_op_pool(&op, 0, 1, &ps, true);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 2, HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_op_same_shape(&op, 1, 2);
	return hpu_op_finish(__func__, s, &op, ret);
}

/* An average pooling, forward or backward: t[0] and t[1] are out, in or grad_in, grad_out. */
static int hpu_op_avg(struct hpu_stream *s, const char *func, bool backward,
		      struct hpu_tensor *t0, const struct hpu_tensor *t1,
		      const struct hpu_pool_spec *ps)
{
	const struct hpu_arg args[] = {
		HPU_OUT(t0, backward ? "grad_in" : "out"), HPU_SAME(t1, backward ? "grad_out" : "in"),
	};
	const char *name = ps->kernel ? (backward ? "avg_pool2d_backward" : "avg_pool2d") :
			   (backward ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool2d");
	struct hpu_op op = { 0 };
	int ret = ps->kernel && (!ps->stride || !ps->padding) ?
		  hpu_error_set(EINVAL, "kernel, stride and padding are needed") : 0;

	if (!ret)
		ret = hpu_op_describe(&op, backward ? HPU_KERNEL_AVG_POOL_BWD : HPU_KERNEL_AVG_POOL,
				      name, args, 2);
	if (!ret)
		ret = backward ? hpu_op_pool(&op, 0, 1, ps, true) : hpu_op_pool(&op, 1, 0, ps, false);
	return hpu_op_finish(func, s, &op, ret);
}

int hpu_op_avg_pool2d(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		      const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
		      bool count_include_pad, int64_t divisor_override)
{
	const struct hpu_pool_spec ps = { kernel, stride, padding, NULL, count_include_pad,
					  divisor_override };

	if (!kernel)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "kernel is NULL"));
	return hpu_op_avg(s, __func__, false, out, in, &ps);
}

int hpu_op_avg_pool2d_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			       const struct hpu_tensor *grad_out, const int64_t kernel[2],
			       const int64_t stride[2], const int64_t padding[2],
			       bool count_include_pad, int64_t divisor_override)
{
	const struct hpu_pool_spec ps = { kernel, stride, padding, NULL, count_include_pad,
					  divisor_override };

	if (!kernel)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "kernel is NULL"));
	return hpu_op_avg(s, __func__, true, grad_in, grad_out, &ps);
}

int hpu_op_adaptive_avg_pool2d(struct hpu_stream *s, struct hpu_tensor *out,
			       const struct hpu_tensor *in)
{
	const struct hpu_pool_spec ps = { 0 };

	return hpu_op_avg(s, __func__, false, out, in, &ps);
}

int hpu_op_adaptive_avg_pool2d_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
					const struct hpu_tensor *grad_out)
{
	const struct hpu_pool_spec ps = { 0 };

	return hpu_op_avg(s, __func__, true, grad_in, grad_out, &ps);
}
