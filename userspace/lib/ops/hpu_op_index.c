/* SPDX-License-Identifier: MIT */
/*
 * The index ops: index_select, gather, scatter_add, scatter, index_add and topk
 * (the device's hdm_kernel_index.c).  Shapes, dtypes and dims are checked
 * here; index values live in device memory, so the device checks them.
 * index_add is scatter_add with its 1-D index broadcast over src's other
 * dims (stride 0).
 */
#include <errno.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* dim of operand i counted from the end if negative, into op->args[arg]. */
static int hpu_index_dim(struct hpu_op *op, unsigned int i, int64_t dim, unsigned int arg)
{
	int64_t nd = op->l[i].ndim ? op->l[i].ndim : 1;

	if (dim < -nd || dim >= nd)
		return hpu_error_set(EINVAL, "dim %lld is out of range for %s of %lld dims",
				     (long long)dim, op->names[i], (long long)op->l[i].ndim);
	op->args[arg] = dim < 0 ? dim + nd : dim;
	return 0;
}

/* Operand i's size along dim (1 for a 0-dim tensor). */
static int64_t hpu_index_size(const struct hpu_op *op, unsigned int i, int64_t dim)
{
	return op->l[i].ndim ? op->l[i].shape[dim] : 1;
}

static int hpu_index_mismatch(const struct hpu_op *op, unsigned int i, unsigned int j,
			      const char *rule)
{
	char a[96], b[96];

	return hpu_error_set(EINVAL, "%s of shape %s and %s of shape %s: %s", op->names[i],
			     hpu_shape_str(op->l[i].ndim, op->l[i].shape, a, sizeof(a)),
			     op->names[j],
			     hpu_shape_str(op->l[j].ndim, op->l[j].shape, b, sizeof(b)), rule);
}

/* Operand i has j's ndim and shape but along dim, where it has n. */
static int hpu_index_shape_but(const struct hpu_op *op, unsigned int i, unsigned int j,
			       int64_t dim, int64_t n)
{
	const struct hpu_tensor_layout *a = &op->l[i], *b = &op->l[j];
	bool ok = a->ndim == b->ndim && (a->ndim || n == 1);

	for (unsigned int d = 0; ok && d < a->ndim; d++)
		ok = a->shape[d] == (d == dim ? n : b->shape[d]);
	return ok ? 0 : hpu_index_mismatch(op, i, j, "wrong shape for the op");
}

/* Operand i is no larger than j in every dim (but dim unless dim < 0); one ndim. */
static int hpu_index_within(const struct hpu_op *op, unsigned int i, unsigned int j, int64_t dim)
{
	const struct hpu_tensor_layout *a = &op->l[i], *b = &op->l[j];
	bool ok = a->ndim == b->ndim;

	for (unsigned int d = 0; ok && d < a->ndim; d++)
		ok = d == dim || a->shape[d] <= b->shape[d];
	return ok ? 0 : hpu_index_mismatch(op, i, j, "the first may not be larger");
}

/* Operand i is a 1-D (or 0-dim) index. */
static int hpu_index_vector(const struct hpu_op *op, unsigned int i)
{
	int ret = hpu_op_dtype_in(op, i, HPU_DTS_INDEX);

	if (!ret && op->l[i].ndim > 1)
		ret = hpu_error_set(EINVAL, "%s must have at most one dim", op->names[i]);
	return ret;
}

int hpu_op_index_select(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
			const struct hpu_tensor *index, int64_t dim)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in"),
					HPU_SAME(index, "index") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_INDEX_SELECT, "index_select", args, 3);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 1);
	if (!ret)
		ret = hpu_index_vector(&op, 2);
	if (!ret)
		ret = hpu_index_dim(&op, 1, dim, 0);
	if (!ret)
		ret = hpu_index_shape_but(&op, 0, 1, op.args[0], hpu_layout_numel(&op.l[2]));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_gather(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		  const struct hpu_tensor *index, int64_t dim)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(in, "in"),
					HPU_SAME(index, "index") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_GATHER, "gather", args, 3);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 1);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 2, HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_index_dim(&op, 1, dim, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 2, 0);
	if (!ret)
		ret = hpu_index_within(&op, 2, 1, op.args[0]);
	return hpu_op_finish(__func__, s, &op, ret);
}

/* The operands of scatter_add, scatter and index_add: self (io), index, src. */
static int hpu_scatter_describe(struct hpu_op *op, uint32_t kernel, const char *name,
				struct hpu_tensor *self, const struct hpu_tensor *index,
				const struct hpu_tensor *src, int64_t dim)
{
	const struct hpu_arg args[] = { HPU_OUT(self, "self"), HPU_SAME(index, "index"),
					HPU_SAME(src, "src") };
	int ret = hpu_op_describe(op, kernel, name, args, 3);

	if (!ret)
		ret = hpu_op_dtype_in(op, 0, HPU_DTS_FLOAT | HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_op_same_dtype(op, 0, 2);
	if (!ret)
		ret = hpu_index_dim(op, 0, dim, 0);
	return ret;
}

/* scatter_add or scatter: index no larger than src, nor than self but along dim. */
static int hpu_scatter(const char *func, struct hpu_stream *s, uint32_t kernel, const char *name,
		       struct hpu_tensor *self, const struct hpu_tensor *index,
		       const struct hpu_tensor *src, int64_t dim)
{
	struct hpu_op op = { 0 };
	int ret = hpu_scatter_describe(&op, kernel, name, self, index, src, dim);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 1, HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_index_within(&op, 1, 2, -1);
	if (!ret)
		ret = hpu_index_within(&op, 1, 0, op.args[0]);
	return hpu_op_finish(func, s, &op, ret);
}

int hpu_op_scatter_add(struct hpu_stream *s, struct hpu_tensor *self,
		       const struct hpu_tensor *index, const struct hpu_tensor *src, int64_t dim)
{
	return hpu_scatter(__func__, s, HPU_KERNEL_SCATTER_ADD, "scatter_add", self, index, src,
			   dim);
}

int hpu_op_scatter(struct hpu_stream *s, struct hpu_tensor *self, const struct hpu_tensor *index,
		   const struct hpu_tensor *src, int64_t dim)
{
	return hpu_scatter(__func__, s, HPU_KERNEL_SCATTER, "scatter", self, index, src, dim);
}

int hpu_op_index_add(struct hpu_stream *s, struct hpu_tensor *self,
		     const struct hpu_tensor *index, const struct hpu_tensor *src, int64_t dim)
{
	struct hpu_op op = { 0 };
	int ret = hpu_scatter_describe(&op, HPU_KERNEL_SCATTER_ADD, "index_add", self, index, src,
				       dim);
	struct hpu_tensor_layout *ix = &op.l[1];
	int64_t step;

	if (!ret)
		ret = hpu_index_vector(&op, 1);
	if (!ret)
		ret = hpu_index_shape_but(&op, 2, 0, op.args[0], hpu_layout_numel(ix));
	if (!ret) {
		/* The index along dim, the same for every position of src's other dims. */
		step = ix->ndim ? ix->strides[0] : 0;
		ix->ndim = op.l[2].ndim;
		memcpy(ix->shape, op.l[2].shape, sizeof(ix->shape));
		memset(ix->strides, 0, sizeof(ix->strides));
		if (ix->ndim)
			ix->strides[op.args[0]] = step;
	}
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_topk(struct hpu_stream *s, struct hpu_tensor *values, struct hpu_tensor *indices,
		const struct hpu_tensor *in, int64_t k, int64_t dim, bool largest, bool sorted)
{
	const struct hpu_arg args[] = { HPU_OUT(values, "values"), HPU_OUT(indices, "indices"),
					HPU_SAME(in, "in") };
	struct hpu_op op = { .args = { k, 0, largest, sorted } };
	int ret = hpu_op_describe(&op, HPU_KERNEL_TOPK, "topk", args, 3);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 2, HPU_DTS_FLOAT | HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 1, HPU_DTS_INDEX);
	if (!ret)
		ret = hpu_index_dim(&op, 2, dim, 1);
	if (!ret && (k < 0 || k > hpu_index_size(&op, 2, op.args[1])))
		ret = hpu_error_set(EINVAL, "k %lld is out of range for a dim of %lld",
				    (long long)k, (long long)hpu_index_size(&op, 2, op.args[1]));
	if (!ret)
		ret = hpu_index_shape_but(&op, 0, 2, op.args[1], k);
	if (!ret)
		ret = hpu_index_shape_but(&op, 1, 2, op.args[1], k);
	return hpu_op_finish(__func__, s, &op, ret);
}
