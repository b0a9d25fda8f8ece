/* SPDX-License-Identifier: MIT */
/*
 * The elementwise ops: unary and binary functions (against a tensor or a
 * scalar), where and fill.  Each describes its kernel's operands and checks
 * the rules of <hpu/hpu_tensor.h> that are its own; hpu_op_run() checks the
 * rest and runs it, as for every op family in hpu_op_*.c.
 */
#include <errno.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

static int hpu_unary(struct hpu_op *op, enum hpu_unary_fn fn, struct hpu_tensor *out,
		     const struct hpu_tensor *in)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_IN(in, "in") };
	bool integral_ok = fn == HPU_UN_COPY || fn == HPU_UN_NEG || fn == HPU_UN_ABS ||
			   fn == HPU_UN_RELU;
	int ret;

	if ((unsigned int)fn >= HPU_UNARY_FNS)
		return hpu_error_set(EINVAL, "unknown unary function %d", fn);
	op->args[0] = fn;
	ret = hpu_op_describe(op, HPU_KERNEL_UNARY, hpu_unary_names[fn], args, 2);
	if (!ret && fn != HPU_UN_COPY)
		ret = hpu_op_one_dtype(op, 0, integral_ok ? HPU_DTS_ANY : HPU_DTS_FLOAT);
	return ret;
}

int hpu_op_unary(struct hpu_stream *s, enum hpu_unary_fn fn, struct hpu_tensor *out,
		 const struct hpu_tensor *in)
{
	struct hpu_op op = { 0 };
	int ret = fn == HPU_UN_POW_SCALAR
			  ? hpu_error_set(EINVAL, "POW_SCALAR takes an exponent: hpu_op_pow_scalar()")
			  : hpu_unary(&op, fn, out, in);

	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_pow_scalar(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *in,
		      double exponent)
{
	struct hpu_op op = { .scalars = { exponent } };

	return hpu_op_finish(__func__, s, &op, hpu_unary(&op, HPU_UN_POW_SCALAR, out, in));
}

/* b NULL: b_value stands for it. */
static int hpu_binary(struct hpu_op *op, enum hpu_binary_fn fn, struct hpu_tensor *out,
		      const struct hpu_tensor *a, const struct hpu_tensor *b, double b_value,
		      double alpha)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_IN(a, "a"), HPU_IN(b, "b") };
	int ret;

	if ((unsigned int)fn >= HPU_BINARY_FNS)
		return hpu_error_set(EINVAL, "unknown binary function %d", fn);
	op->args[0] = fn;
	op->args[1] = !b;
	op->scalars[0] = alpha;
	op->scalars[1] = b_value;
	ret = hpu_op_describe(op, HPU_KERNEL_BINARY, hpu_binary_names[fn], args, b ? 3 : 2);
	if (!ret)
		ret = hpu_op_one_dtype(op, 1, fn >= HPU_BIN_EQ || fn == HPU_BIN_MAX ||
						      fn == HPU_BIN_MIN || fn <= HPU_BIN_DIV
					      ? HPU_DTS_ANY
					      : HPU_DTS_FLOAT);
	if (!ret && fn < HPU_BIN_EQ)
		ret = hpu_op_same_dtype(op, 1, 0);
	return ret;
}

int hpu_op_binary(struct hpu_stream *s, enum hpu_binary_fn fn, struct hpu_tensor *out,
		  const struct hpu_tensor *a, const struct hpu_tensor *b)
{
	struct hpu_op op = { 0 };
	int ret = b ? hpu_binary(&op, fn, out, a, b, 0, 1) : hpu_error_set(EINVAL, "b is NULL");

	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_binary_scalar(struct hpu_stream *s, enum hpu_binary_fn fn, struct hpu_tensor *out,
			 const struct hpu_tensor *a, double b)
{
	struct hpu_op op = { 0 };

	return hpu_op_finish(__func__, s, &op, hpu_binary(&op, fn, out, a, NULL, b, 1));
}

int hpu_op_add(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *a,
	       const struct hpu_tensor *b, double alpha)
{
	struct hpu_op op = { 0 };
	int ret = b ? hpu_binary(&op, HPU_BIN_ADD, out, a, b, 0, alpha)
		    : hpu_error_set(EINVAL, "b is NULL");

	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_where(struct hpu_stream *s, struct hpu_tensor *out, const struct hpu_tensor *cond,
		 const struct hpu_tensor *a, const struct hpu_tensor *b)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out"), HPU_IN(cond, "cond"), HPU_IN(a, "a"),
					HPU_IN(b, "b") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_describe(&op, HPU_KERNEL_WHERE, "where", args, 4);

	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 2);
	if (!ret)
		ret = hpu_op_same_dtype(&op, 0, 3);
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_fill(struct hpu_stream *s, struct hpu_tensor *out, double value)
{
	const struct hpu_arg args[] = { HPU_OUT(out, "out") };
	struct hpu_op op = { .scalars = { value } };

	return hpu_op_finish(__func__, s, &op,
			     hpu_op_describe(&op, HPU_KERNEL_FILL, "fill", args, 1));
}
