/* SPDX-License-Identifier: MIT */
/*
 * The network layers' ops: dropout, the activation backwards, layer norm
 * and embedding, forward and backward (the device's hdm_kernel_nn.c).
 */
#include <errno.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

static int hpu_check_p(double p)
{
	return p >= 0 && p < 1 ? 0 : hpu_error_set(EINVAL, "p is %g, not in [0, 1)", p);
}

int hpu_op_dropout(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *mask,
		   const struct hpu_tensor *in, struct hpu_tensor *rng, double p)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_OUT(mask, "mask"),
					HPU_SAME(in, "in"), { rng, "rng", HPU_ARG_OUT } };
	struct hpu_op op = { .scalars = { p } };
	int ret = hpu_check_p(p);

	if (!ret)
		ret = hpu_op_describe(&op, HPU_KERNEL_DROPOUT, "dropout", args, 4);
	if (!ret)
		ret = hpu_op_same_shape(&op, 2, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 2, 1);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 0, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 1, hpu_dt_bit(HPU_DT_U8));
	if (!ret)
		ret = hpu_op_dtype_in(&op, 3, hpu_dt_bit(HPU_DT_I64));
	if (!ret && (op.l[3].ndim != 1 || op.l[3].shape[0] != 2))
		ret = hpu_error_set(EINVAL, "rng must be I64 [2]: seed, offset");
	return hpu_op_finish(__func__, s, &op, ret);
}

/* grad_in, grad_out and a third operand, elementwise: the activation backward kernels. */
static int hpu_op_backward3(struct hpu_op *op, uint32_t kernel, const char *name,
			    struct hpu_tensor *grad_in, const struct hpu_tensor *grad_out,
			    const struct hpu_tensor *third, const char *third_name,
			    unsigned int third_dtypes)
{
	const struct hpu_arg args[] = { HPU_OUT(grad_in, "grad_in"), HPU_IN(grad_out, "grad_out"),
					HPU_IN(third, third_name) };
	int ret = hpu_op_describe(op, kernel, name, args, 3);

	if (!ret)
		ret = hpu_op_dtype_in(op, 0, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(op, 0, 1);
	if (!ret)
		ret = hpu_op_dtype_in(op, 2, third_dtypes);
	return ret;
}

int hpu_op_dropout_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			    const struct hpu_tensor *grad_out, const struct hpu_tensor *mask,
			    double p)
{
	struct hpu_op op = { .scalars = { p } };
	int ret = hpu_check_p(p);

	if (!ret)
		ret = hpu_op_backward3(&op, HPU_KERNEL_DROPOUT_BWD, "dropout_backward", grad_in,
				       grad_out, mask, "mask", hpu_dt_bit(HPU_DT_U8));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_relu_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			 const struct hpu_tensor *grad_out, const struct hpu_tensor *in)
{
	struct hpu_op op = { 0 };
	int ret = hpu_op_backward3(&op, HPU_KERNEL_RELU_BWD, "relu_backward", grad_in, grad_out,
				   in, "in", HPU_DTS_FLOAT);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_gelu_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			 const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
			 bool tanh_approx)
{
	struct hpu_op op = { .args = { tanh_approx } };
	int ret = hpu_op_backward3(&op, HPU_KERNEL_GELU_BWD, "gelu_backward", grad_in, grad_out,
				   in, "in", HPU_DTS_FLOAT);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	return hpu_op_finish(__func__, s, &op, ret);
}

/*
 * Layer norm's operands: t[x] the input (float, `dims` trailing dims
 * normalised), t[stats..stats+1] mean and rstd (F32, x's leading dims),
 * t[params..params+1] weight and bias or their grads (x's trailing dims,
 * absent allowed).
 */
static int hpu_op_norm(struct hpu_op *op, unsigned int x, unsigned int stats, unsigned int params,
		       unsigned int dims)
{
	const struct hpu_tensor_layout *lx = &op->l[x];
	unsigned int lead = lx->ndim - dims, i, k;
	int ret;

	if (dims < 1 || dims > lx->ndim)
		return hpu_error_set(EINVAL, "dims is %u for an input of %u dims", dims, lx->ndim);
	op->args[0] = dims;
	op->args[1] = (op->t[params] ? 1 : 0) | (op->t[params + 1] ? 2 : 0);
	for (i = 0; i < 2; i++) {
		const struct hpu_tensor_layout *st = &op->l[stats + i], *pr = &op->l[params + i];

		ret = hpu_op_dtype_in(op, stats + i, hpu_dt_bit(HPU_DT_F32));
		if (!ret)
			ret = hpu_op_same_dtype(op, x, params + i);
		if (ret)
			return ret;
		if (st->ndim != lead)
			return hpu_error_set(EINVAL, "%s must have %s's %u leading dims",
					     op->names[stats + i], op->names[x], lead);
		for (k = 0; k < lead; k++)
			if (st->shape[k] != lx->shape[k])
				return hpu_error_set(EINVAL, "%s must have %s's leading dims",
						     op->names[stats + i], op->names[x]);
		if (!op->t[params + i])
			continue;
		if (pr->ndim != dims)
			return hpu_error_set(EINVAL, "%s must have %s's %u trailing dims",
					     op->names[params + i], op->names[x], dims);
		for (k = 0; k < dims; k++)
			if (pr->shape[k] != lx->shape[lead + k])
				return hpu_error_set(EINVAL, "%s must have %s's trailing dims",
						     op->names[params + i], op->names[x]);
	}
	return 0;
}

int hpu_op_layer_norm(struct hpu_stream *s, struct hpu_tensor *out, struct hpu_tensor *mean,
		      struct hpu_tensor *rstd, const struct hpu_tensor *in,
		      const struct hpu_tensor *weight, const struct hpu_tensor *bias,
		      unsigned int dims, double eps)
{
	const struct hpu_arg args[] = {
		HPU_OUT(out, "out"), HPU_OUT(mean, "mean"), HPU_OUT(rstd, "rstd"),
		HPU_SAME(in, "in"), { weight, "weight", HPU_ARG_OPTIONAL },
		{ bias, "bias", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { .scalars = { eps } };
	int ret = hpu_op_describe(&op, HPU_KERNEL_LAYER_NORM, "layer_norm", args, 6);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 3, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 3, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 3, 0);
	if (!ret)
		ret = hpu_op_norm(&op, 3, 1, 4, dims);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_layer_norm_backward(struct hpu_stream *s, struct hpu_tensor *grad_in,
			       struct hpu_tensor *grad_weight, struct hpu_tensor *grad_bias,
			       const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
			       const struct hpu_tensor *mean, const struct hpu_tensor *rstd,
			       const struct hpu_tensor *weight, unsigned int dims)
{
	const struct hpu_arg args[] = {
		HPU_OUT(grad_in, "grad_in"),
		{ grad_weight, "grad_weight", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		{ grad_bias, "grad_bias", HPU_ARG_OUT | HPU_ARG_OPTIONAL },
		HPU_SAME(grad_out, "grad_out"), HPU_SAME(in, "in"), HPU_SAME(mean, "mean"),
		HPU_SAME(rstd, "rstd"), { weight, "weight", HPU_ARG_OPTIONAL },
	};
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_LAYER_NORM_BWD, "layer_norm_backward",
				  args, 8);

	if (!ret)
		ret = hpu_op_dtype_in(&op, 4, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 4, 0);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 4, 3);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 4, 7);
	if (!ret)
		ret = hpu_op_same_shape(&op, 4, 0);
	if (!ret)
		ret = hpu_op_same_shape(&op, 4, 3);
	if (!ret && !grad_weight != !weight)
		ret = hpu_error_set(EINVAL, "grad_weight is given exactly when weight is");
	if (!ret)
		ret = hpu_op_norm(&op, 4, 5, 1, dims);
	/* The weight's presence bit is the forward's; grads are written if given. */
	if (!ret)
		op.args[1] = (weight ? 1 : 0) | (grad_bias ? 2 : 0);
	return hpu_op_finish(__func__, s, &op, ret);
}

/* t[table] [V, D], t[rows] [..., D], t[idx] index [...]. */
static int hpu_op_embedding_shapes(struct hpu_op *op, unsigned int table, unsigned int rows,
				   unsigned int idx, int64_t padding_idx)
{
	const struct hpu_tensor_layout *w = &op->l[table], *r = &op->l[rows], *ix = &op->l[idx];
	unsigned int k;
	int ret;

	op->args[0] = padding_idx;
	ret = hpu_op_dtype_in(op, table, HPU_DTS_FLOAT);
	if (!ret)
		ret = hpu_op_same_dtype(op, table, rows);
	if (!ret)
		ret = hpu_op_dtype_in(op, idx, HPU_DTS_INDEX);
	if (ret)
		return ret;
	if (w->ndim != 2 || r->ndim != ix->ndim + 1 || r->shape[r->ndim - 1] != w->shape[1])
		return hpu_error_set(EINVAL, "%s must be [V, D], %s [..., D] with %s's dims",
				     op->names[table], op->names[rows], op->names[idx]);
	for (k = 0; k < ix->ndim; k++)
		if (r->shape[k] != ix->shape[k])
			return hpu_error_set(EINVAL, "%s's leading dims must be %s's",
					     op->names[rows], op->names[idx]);
	if (padding_idx < -1 || padding_idx >= w->shape[0])
		return hpu_error_set(EINVAL, "padding_idx %lld is not a row or -1",
				     (long long)padding_idx);
	return 0;
}

int hpu_op_embedding(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *weight,
		     const struct hpu_tensor *indices, int64_t padding_idx)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_SAME(weight, "weight"),
					HPU_SAME(indices, "indices") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_EMBEDDING, "embedding", args, 3);

	return hpu_op_finish(__func__, s, &op,
			     ret ? ret : hpu_op_embedding_shapes(&op, 1, 0, 2, padding_idx));
}

int hpu_op_embedding_backward(struct hpu_stream *s, struct hpu_tensor *grad_weight,
			      const struct hpu_tensor *grad_out, const struct hpu_tensor *indices,
			      int64_t padding_idx)
{
	const struct hpu_arg args[] = { HPU_OUT(grad_weight, "grad_weight"),
					HPU_SAME(grad_out, "grad_out"),
					HPU_SAME(indices, "indices") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_EMBEDDING_BWD, "embedding_backward", args, 3);

	return hpu_op_finish(__func__, s, &op,
			     ret ? ret : hpu_op_embedding_shapes(&op, 0, 1, 2, padding_idx));
}
