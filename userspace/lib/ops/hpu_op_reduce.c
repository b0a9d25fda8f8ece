/* SPDX-License-Identifier: MIT */
/*
 * Reductions: sum, mean, max, min, argmax and argmin over the dims of a
 * mask, and the cumulative sum along one dim (run on the host).
 */
#include <errno.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

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
		ret = hpu_op_describe(&op, HPU_KERNEL_REDUCE, hpu_reduce_names[fn], args, 2);
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

int hpu_op_cumsum(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		  unsigned int dim)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in") };
	struct hpu_op op = { .args = { dim } };
	int ret = hpu_op_describe(&op, HPU_OPK_CUMSUM, "cumsum", args, 2);

	if (!ret)
		ret = hpu_op_one_dtype(&op, 0, HPU_DTS_FLOAT | HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_op_shapes_of(&op, 0, 1);
	if (!ret && dim >= op.l[0].ndim)
		ret = hpu_error_set(EINVAL, "dim %u of a tensor of %u dims", dim, op.l[0].ndim);
	return hpu_op_finish(__func__, s, &op, ret);
}
