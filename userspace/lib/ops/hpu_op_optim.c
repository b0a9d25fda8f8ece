/* SPDX-License-Identifier: MIT */
/*
 * Optimizer steps (SGD, Adadelta, AdamW), one parameter tensor per op, with
 * the hyperparameter ranges torch.optim accepts, and clip_grad_norm over a
 * list of gradients.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* An optimizer step: every operand of param's shape and float dtype. */
static int hpu_op_optimizer(struct hpu_op *op, uint32_t kernel, const char *name,
			    const struct hpu_arg *args, unsigned int count, const void *config)
{
	int ret = config ? hpu_op_describe(op, kernel, name, args, count)
			 : hpu_error_set(EINVAL, "config is NULL");

	if (!ret)
		ret = hpu_op_one_dtype(op, 0, HPU_DTS_FLOAT);
	return ret ? ret : hpu_op_shapes_of(op, 0, 1);
}

#define HPU_IO(t, name) { t, name, HPU_ARG_OUT }

/* A hyperparameter and the range torch.optim accepts for it. */
struct hpu_bound {
	const char *name;
	double value, lo, hi;
	bool hi_open; /* [lo, hi) rather than [lo, hi] */
};

static int hpu_check_bounds(const struct hpu_bound *b, unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++, b++)
		if (!(b->value >= b->lo && (b->hi_open ? b->value < b->hi : b->value <= b->hi)))
			return hpu_error_set(EINVAL, "%s is %g, not in [%g, %g%c", b->name, b->value,
					     b->lo, b->hi, b->hi_open ? ')' : ']');
	return 0;
}

int hpu_op_sgd(struct hpu_stream *s, struct hpu_tensor *param, const struct hpu_tensor *grad,
	       struct hpu_tensor *momentum_buf, const struct hpu_sgd_config *c, bool first_step)
{
	const struct hpu_arg args[] = { HPU_IO(param, "param"), HPU_SAME(grad, "grad"),
					HPU_IO(momentum_buf, "momentum_buf") };
	struct hpu_op op = { .args = { (c && c->nesterov) | (first_step << 1) } };
	int ret = hpu_op_optimizer(&op, HPU_KERNEL_SGD, "sgd", args, 3, c);

	if (!ret) {
		const struct hpu_bound b[] = {
			{ "lr", c->lr, 0, INFINITY, false }, { "momentum", c->momentum, 0, INFINITY, false },
			{ "dampening", c->dampening, -DBL_MAX, DBL_MAX, false },
			{ "weight_decay", c->weight_decay, 0, INFINITY, false },
		};

		ret = hpu_check_bounds(b, HPU_ARRAY_SIZE(b));
	}
	if (!ret && c->nesterov && (c->momentum == 0 || c->dampening != 0))
		ret = hpu_error_set(EINVAL, "nesterov wants a momentum and no dampening");
	if (!ret)
		memcpy(op.scalars, (double[]){ c->lr, c->momentum, c->dampening, c->weight_decay },
		       4 * sizeof(double));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_adadelta(struct hpu_stream *s, struct hpu_tensor *param, const struct hpu_tensor *grad,
		    struct hpu_tensor *square_avg, struct hpu_tensor *acc_delta,
		    const struct hpu_adadelta_config *c)
{
	const struct hpu_arg args[] = { HPU_IO(param, "param"), HPU_SAME(grad, "grad"),
					HPU_IO(square_avg, "square_avg"),
					HPU_IO(acc_delta, "acc_delta") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_optimizer(&op, HPU_KERNEL_ADADELTA, "adadelta", args, 4, c);

	if (!ret) {
		const struct hpu_bound b[] = {
			{ "lr", c->lr, 0, INFINITY, false }, { "rho", c->rho, 0, 1, false },
			{ "eps", c->eps, 0, INFINITY, false },
			{ "weight_decay", c->weight_decay, 0, INFINITY, false },
		};

		ret = hpu_check_bounds(b, HPU_ARRAY_SIZE(b));
	}
	if (!ret)
		memcpy(op.scalars, (double[]){ c->lr, c->rho, c->eps, c->weight_decay },
		       4 * sizeof(double));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_adamw(struct hpu_stream *s, struct hpu_tensor *param, const struct hpu_tensor *grad,
		 struct hpu_tensor *exp_avg, struct hpu_tensor *exp_avg_sq, struct hpu_tensor *step,
		 const struct hpu_adamw_config *c)
{
	const struct hpu_arg args[] = { HPU_IO(param, "param"), HPU_SAME(grad, "grad"),
					HPU_IO(exp_avg, "exp_avg"), HPU_IO(exp_avg_sq, "exp_avg_sq") };
	struct hpu_op op = { 0 };
	int ret = hpu_op_optimizer(&op, HPU_KERNEL_ADAMW, "adamw", args, 4, c);

	if (!ret)
		ret = hpu_op_operand(&op, 4, step, "step", HPU_ARG_OUT);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 4, hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_I64));
	if (!ret)
		ret = hpu_op_scalar_operand(&op, 4);
	if (!ret) {
		const struct hpu_bound b[] = {
			{ "lr", c->lr, 0, INFINITY, false }, { "beta1", c->beta1, 0, 1, true },
			{ "beta2", c->beta2, 0, 1, true }, { "eps", c->eps, 0, INFINITY, false },
			{ "weight_decay", c->weight_decay, 0, INFINITY, false },
		};

		ret = hpu_check_bounds(b, HPU_ARRAY_SIZE(b));
	}
	if (!ret)
		memcpy(op.scalars, (double[]){ c->lr, c->beta1, c->beta2, c->eps, c->weight_decay },
		       5 * sizeof(double));
	return hpu_op_finish(__func__, s, &op, ret);
}

int hpu_op_clip_grad_norm(struct hpu_stream *s, struct hpu_tensor *total_norm,
			  struct hpu_tensor *const *grads, unsigned int count, double max_norm,
			  double norm_type)
{
	struct hpu_op op = { .kernel = HPU_KERNEL_CLIP_GRAD_NORM, .name = "clip_grad_norm",
			     .scalars = { max_norm, norm_type } };
	unsigned int i;
	int ret = hpu_op_operand(&op, 0, total_norm, "total_norm", HPU_ARG_OUT);

	if (!ret && (!grads || count < 1 || count >= HPU_OP_TENSORS))
		ret = hpu_error_set(EINVAL, "grads must name 1 to %d tensors", HPU_OP_TENSORS - 1);
	for (i = 0; i < count && !ret; i++)
		ret = hpu_op_operand(&op, i + 1, grads[i], "grads[i]", HPU_ARG_OUT);
	if (!ret)
		ret = hpu_op_dtype_in(&op, 0, hpu_dt_bit(HPU_DT_F32));
	if (!ret)
		ret = hpu_op_scalar_operand(&op, 0);
	if (!ret)
		ret = hpu_op_one_dtype(&op, 1, HPU_DTS_FLOAT);
	if (!ret && norm_type != 2 && !isinf(norm_type))
		ret = hpu_error_set(EINVAL, "norm_type is %g: 2 or INFINITY", norm_type);
	return hpu_op_finish(__func__, s, &op, ret);
}
