/* SPDX-License-Identifier: MIT */
/*
 * Matrix products on the matrix engine: batched matmul with broadcasting,
 * and linear (x times weight transposed, plus an optional bias), each
 * brought to the [batch, rows, cols] layouts a GEMM packet takes.
 */
#include <errno.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

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
	int ret = hpu_op_describe(&op, HPU_OPK_GEMM, "matmul", args, 3);

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
	int ret = hpu_op_describe(&op, HPU_OPK_GEMM, "linear", args, 4);

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
