/* SPDX-License-Identifier: MIT */
/*
 * A model's glue ops (the device's hdm_kernel_misc.c): silu's backward,
 * triu and tril, and arange.
 */
#include <errno.h>
#include <math.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

int hpu_op_silu_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			 const struct hpu_tensor *grad_out, const struct hpu_tensor *in)
{
	const struct hpu_arg args[] = { HPU_OUT(grad_in, "grad_in"), HPU_SAME(grad_out, "grad_out"),
					HPU_SAME(in, "in") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_SILU_BWD, "silu_backward", args, 3);

	if (!ret)
		ret = hpu_op_one_dtype(&op, 0, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_shapes_of(&op, 0, 1);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_triangle(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		    int64_t diagonal, bool upper)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in") };
	struct hpu_op op = { .args = { diagonal, upper } };
	int ret = hpu_op_describe(&op, HPU_KERNEL_TRIANGLE, "triangle", args, 2);

	if (!ret)
		ret = hpu_op_one_dtype(&op, 0, HPU_DTS_ANY);
	if (!ret)
		ret = hpu_op_same_shape(&op, 0, 1);
	if (!ret && op.l[0].ndim < 2)
		ret = hpu_error_set(EINVAL, "out has %u dims, not at least 2", op.l[0].ndim);
	return hpu_op_finish(__func__, s, &op, ret);
}

/* A whole number int64 holds. */
static bool hpu_whole(double v)
{
	return v == trunc(v) && v >= -0x1p63 && v < 0x1p63;
}

int hpu_op_arange(struct hpu_stream *s, struct hpu_tensor *out, double start, double step,
		  unsigned int lanes, uint64_t chunk)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out") };
	struct hpu_op op = { .args = { lanes, (int64_t)chunk }, .scalars = { start, step } };
	int ret = hpu_op_describe(&op, HPU_KERNEL_ARANGE, "arange", args, 1);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 0, HPU_DTS_FLOAT | HPU_DTS_INDEX);
	if (!ret && op.l[0].ndim != 1)
		ret = hpu_error_set(EINVAL, "out has %u dims, not 1", op.l[0].ndim);
	if (!ret && (!isfinite(start) || !isfinite(step)))
		ret = hpu_error_set(EINVAL, "start %g and step %g must be finite", start, step);
	if (!ret && !(op.l[0].dtype == HPU_DT_F32 || op.l[0].dtype == HPU_DT_BF16 ||
		      op.l[0].dtype == HPU_DT_F64) && !(hpu_whole(start) && hpu_whole(step)))
		ret = hpu_error_set(EINVAL, "an integral arange wants whole start and step");
	if (!ret && (lanes > 64 || chunk > INT64_MAX))
		ret = hpu_error_set(EINVAL, "lanes %u past 64 or chunk past INT64_MAX", lanes);
	return hpu_op_finish(__func__, s, &op, ret);
}
