/* SPDX-License-Identifier: MIT */
/*
 * What every op shares: its operands and their checks, the names ops are
 * counted by, and the choice between the device and the host.  The public
 * op functions (hpu_op_<family>.c) only describe an op with these helpers.
 *
 * An input broadcast to the output's shape becomes stride-0 dims, which is
 * how the kernels take it (hpu_kernels.h).  The checks <hpu/hpu_tensor.h>
 * lists all run before anything is enqueued or recorded, so a bad op fails
 * at its call in eager and lazy mode alike.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* The public op numbers are the ABI's, so they pass through unconverted. */
#define HPU_SAME_VALUE(a, b) ((int)(a) == (int)(b))
_Static_assert(HPU_SAME_VALUE(HPU_UN_COPY, HPU_UNARY_COPY) &&
		       HPU_SAME_VALUE(HPU_UN_GELU_TANH, HPU_UNARY_GELU_TANH) &&
		       HPU_SAME_VALUE(HPU_UN_POW_SCALAR, HPU_UNARY_POW_SCALAR) &&
		       HPU_SAME_VALUE(HPU_UN_ERF, HPU_UNARY_ERF),
	       "unary functions differ from the ABI's");
_Static_assert(HPU_SAME_VALUE(HPU_BIN_ADD, HPU_BINARY_ADD) &&
		       HPU_SAME_VALUE(HPU_BIN_POW, HPU_BINARY_POW) &&
		       HPU_SAME_VALUE(HPU_BIN_EQ, HPU_BINARY_EQ) &&
		       HPU_SAME_VALUE(HPU_BIN_GE, HPU_BINARY_GE),
	       "binary functions differ from the ABI's");
_Static_assert(HPU_SAME_VALUE(HPU_RED_SUM, HPU_REDUCE_SUM) &&
		       HPU_SAME_VALUE(HPU_RED_ARGMIN, HPU_REDUCE_ARGMIN),
	       "reductions differ from the ABI's");
_Static_assert(HPU_SAME_VALUE(HPU_LOSS_NONE, HPU_REDUCTION_NONE) &&
		       HPU_SAME_VALUE(HPU_LOSS_SUM, HPU_REDUCTION_SUM),
	       "loss reductions differ from the ABI's");

const char *const hpu_unary_names[HPU_UNARY_FNS] = {
	"copy", "neg", "abs", "relu", "gelu", "gelu_tanh", "tanh", "sigmoid",
	"exp", "log", "sqrt", "rsqrt", "reciprocal", "pow_scalar", "silu", "sin", "cos", "erf",
};
const char *const hpu_binary_names[HPU_BINARY_FNS] = {
	"add", "sub", "mul", "div", "maximum", "minimum", "pow",
	"eq", "ne", "lt", "le", "gt", "ge",
};
const char *const hpu_reduce_names[HPU_REDUCE_FNS] = {
	"sum", "mean", "max", "min", "argmax", "argmin",
};
/* Every other op, by the name its function gives it. */
static const char *const hpu_other_names[] = {
	"where", "fill", "softmax", "log_softmax", "softmax_backward", "nll_loss",
	"nll_loss_backward", "cross_entropy", "cross_entropy_backward", "dropout",
	"dropout_backward", "relu_backward", "gelu_backward", "layer_norm",
	"layer_norm_backward", "embedding", "embedding_backward", "sgd", "adadelta", "adamw",
	"clip_grad_norm", "matmul", "linear", "cumsum", "silu_backward", "rms_norm",
	"rms_norm_backward", "triangle", "arange", "conv", "conv_backward_input",
	"conv_backward_weight", "index_select", "gather", "scatter_add", "scatter", "index_add",
	"topk", "batch_norm", "batch_norm_backward", "max_pool2d", "max_pool2d_backward",
	"avg_pool2d", "avg_pool2d_backward", "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward",
	"group_norm", "group_norm_backward", "random",
	"sdpa", "sdpa_backward",
	"fused_sgd", "fused_adamw", "fused_lamb", "fused_adadelta", "clip_norm",
};

_Static_assert(HPU_UNARY_FNS + HPU_BINARY_FNS + HPU_REDUCE_FNS + HPU_ARRAY_SIZE(hpu_other_names) <=
		       HPU_FALLBACK_OPS,
	       "more ops than fallback counters");

/* Every op name, numbered in this order. */
static const struct {
	const char *const *names;
	int count;
} hpu_op_tables[] = {
	{ hpu_unary_names, HPU_UNARY_FNS },
	{ hpu_binary_names, HPU_BINARY_FNS },
	{ hpu_reduce_names, HPU_REDUCE_FNS },
	{ hpu_other_names, (int)HPU_ARRAY_SIZE(hpu_other_names) },
};

int hpu_op_index(const char *name)
{
	size_t t;
	int i, base = 0;

	for (t = 0; t < HPU_ARRAY_SIZE(hpu_op_tables); base += hpu_op_tables[t++].count)
		for (i = 0; i < hpu_op_tables[t].count; i++)
			if (!strcmp(hpu_op_tables[t].names[i], name))
				return base + i;
	return -1;
}

const char *hpu_op_name(int index)
{
	size_t t;

	for (t = 0; t < HPU_ARRAY_SIZE(hpu_op_tables) && index >= 0;
	     index -= hpu_op_tables[t++].count)
		if (index < hpu_op_tables[t].count)
			return hpu_op_tables[t].names[index];
	return NULL;
}

int hpu_op_operand(struct hpu_op *op, unsigned int i, const struct hpu_tensor *t,
		   const char *name, unsigned int flags)
{
	if (!t && !(flags & HPU_ARG_OPTIONAL))
		return hpu_error_set(EINVAL, "%s is NULL", name);
	op->t[i] = t;
	op->names[i] = name;
	if (flags & HPU_ARG_OUT)
		op->outputs |= 1u << i;
	if (i >= op->num_tensors)
		op->num_tensors = i + 1;
	if (!t)
		return 0;
	if (flags & HPU_ARG_BROADCAST)
		return hpu_layout_broadcast(&t->l, op->l[0].ndim, op->l[0].shape, &op->l[i], name);
	op->l[i] = t->l;
	return 0;
}

int hpu_op_operands(struct hpu_op *op, const struct hpu_arg *args, unsigned int count)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < count && !ret; i++)
		ret = hpu_op_operand(op, op->num_tensors, args[i].t, args[i].name, args[i].flags);
	return ret;
}

int hpu_op_describe(struct hpu_op *op, uint32_t kernel, const char *name,
		    const struct hpu_arg *args, unsigned int count)
{
	op->kernel = kernel;
	op->name = name;
	return hpu_op_operands(op, args, count);
}

int hpu_op_finish(const char *func, struct hpu_stream *s, struct hpu_op *op, int ret)
{
	if (!ret)
		ret = hpu_op_run(s, op);
	return hpu_error_in(func, ret);
}

int hpu_op_same_shape(const struct hpu_op *op, unsigned int i, unsigned int j)
{
	const struct hpu_tensor_layout *a = &op->l[i], *b = &op->l[j];
	char as[96], bs[96];

	if (a->ndim == b->ndim && !memcmp(a->shape, b->shape, a->ndim * sizeof(a->shape[0])))
		return 0;
	return hpu_error_set(EINVAL, "%s has shape %s, %s %s: they must match", op->names[j],
			     hpu_shape_str(b->ndim, b->shape, bs, sizeof(bs)), op->names[i],
			     hpu_shape_str(a->ndim, a->shape, as, sizeof(as)));
}

int hpu_op_same_dtype(const struct hpu_op *op, unsigned int i, unsigned int j)
{
	if (!op->t[i] || !op->t[j] || op->l[i].dtype == op->l[j].dtype)
		return 0;
	return hpu_error_set(EINVAL, "dtype mismatch: %s is %s, %s is %s", op->names[i],
			     hpu_dt_name(op->l[i].dtype), op->names[j], hpu_dt_name(op->l[j].dtype));
}

int hpu_op_dtype_in(const struct hpu_op *op, unsigned int i, unsigned int dtypes)
{
	static const uint32_t all[] = { HPU_DT_F32, HPU_DT_BF16, HPU_DT_I32, HPU_DT_I64,
					HPU_DT_U8, HPU_DT_F64 };
	char want[64] = "";
	size_t k, used = 0;

	if (!op->t[i] || (dtypes & hpu_dt_bit(op->l[i].dtype)))
		return 0;
	for (k = 0; k < HPU_ARRAY_SIZE(all); k++)
		if (dtypes & hpu_dt_bit(all[k]))
			used += snprintf(want + used, sizeof(want) - used, "%s%s", used ? " or " : "",
					 hpu_dt_name(all[k]));
	return hpu_error_set(EINVAL, "%s is %s, the op takes %s", op->names[i],
			     hpu_dt_name(op->l[i].dtype), want);
}

int hpu_op_one_dtype(const struct hpu_op *op, unsigned int first, unsigned int dtypes)
{
	unsigned int i;
	int ret = hpu_op_dtype_in(op, first, dtypes);

	for (i = first + 1; i < op->num_tensors && !ret; i++)
		ret = hpu_op_same_dtype(op, first, i);
	return ret;
}

int hpu_op_shapes_of(const struct hpu_op *op, unsigned int ref, unsigned int first)
{
	unsigned int i;
	int ret = 0;

	for (i = first; i < op->num_tensors && !ret; i++)
		if (op->t[i])
			ret = hpu_op_same_shape(op, ref, i);
	return ret;
}

int hpu_op_scalar_operand(struct hpu_op *op, unsigned int i)
{
	if (!op->t[i])
		return 0;
	if (hpu_layout_numel(&op->l[i]) != 1)
		return hpu_error_set(EINVAL, "%s must have one element, it has %lld", op->names[i],
				     (long long)hpu_layout_numel(&op->l[i]));
	op->l[i].ndim = 0;
	return 0;
}

/* Outputs are written once per element and touch no other operand but in place. */
static int hpu_op_check_aliasing(const struct hpu_op *op)
{
	unsigned int i, j;

	for (i = 0; i < op->num_tensors; i++) {
		if (!(op->outputs & (1u << i)) || !op->t[i])
			continue;
		if (hpu_layout_has_repeats(&op->l[i]))
			return hpu_error_set(EINVAL, "%s repeats elements (a broadcast view): "
					     "it cannot be written", op->names[i]);
		for (j = 0; j < op->num_tensors; j++) {
			bool in_place;

			if (j == i || !op->t[j] || op->t[j]->storage != op->t[i]->storage ||
			    !hpu_layout_overlap(&op->l[i], &op->l[j]))
				continue;
			in_place = !(op->outputs & (1u << j)) &&
				   hpu_layout_same(&op->t[i]->l, &op->t[j]->l);
			if (!in_place || op->kernel == HPU_OPK_GEMM)
				return hpu_error_set(EINVAL, "%s overlaps %s%s", op->names[i],
						     op->names[j],
						     in_place ? " (the matrix engine works out of place)"
							      : "");
		}
	}
	return 0;
}

/* A tensor engine refuses a tensor past HPU_KERNEL_MAX_ELEMENTS (broadcast dims count): say so here. */
static int hpu_op_check_size(const struct hpu_op *op)
{
	unsigned int i;

	if (op->kernel == HPU_OPK_GEMM)
		return 0;
	for (i = 0; i < op->num_tensors; i++)
		if (op->t[i] && (uint64_t)hpu_layout_numel(&op->l[i]) > HPU_KERNEL_MAX_ELEMENTS)
			return hpu_error_set(EINVAL, "%s has %lld elements: the tensor engines take "
					     "%llu at most", op->names[i],
					     (long long)hpu_layout_numel(&op->l[i]),
					     (unsigned long long)HPU_KERNEL_MAX_ELEMENTS);
	return 0;
}

int hpu_op_run(struct hpu_stream *s, struct hpu_op *op)
{
	const char *reason;
	unsigned int i;
	int ret;

	if (!s)
		return hpu_error_set(EINVAL, "stream is NULL");
	for (i = 0; i < op->num_tensors; i++)
		if (op->t[i] && op->t[i]->storage->dev != s->dev)
			return hpu_error_set(EINVAL, "%s belongs to another device than the stream",
					     op->names[i]);
	ret = hpu_op_check_aliasing(op);
	if (ret)
		return ret;
	reason = hpu_fallback_reason(op);
	if (!reason) {
		ret = hpu_op_check_size(op);
		if (ret)
			return ret;
	}
	pthread_mutex_lock(&s->lock);
	ret = s->dev->op_hooks ? s->dev->op_hooks->take(s, op, reason) : 0;
	if (ret > 0)
		ret = 0;
	else if (!ret && !reason)
		ret = hpu_launch(s, op);
	pthread_mutex_unlock(&s->lock);
	return !ret && reason ? hpu_fallback_run(s, op, reason) : ret;
}
