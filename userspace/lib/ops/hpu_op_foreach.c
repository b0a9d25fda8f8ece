/* SPDX-License-Identifier: MIT */
/*
 * Fused optimizer steps and the norm clip over lists of tensors (the
 * FOREACH kernels): as many tensors to a launch as it takes, the launches
 * back to back on the stream (recorded into one graph in lazy mode), every
 * launch checked before the first is issued so that a bad list changes
 * nothing.  The learning rate and the step count are device scalars the
 * kernels read, so a schedule that writes lr changes no launch.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include <drm/hpu_kernels.h>

#include "../ops/ops.h"

/* FOREACH a0 bits (drm/hpu_kernels.h). */
#define HPU_FE_LAST 1
#define HPU_FE_FLAG1 2 /* SGD: nesterov; LAMB: bias correction */
#define HPU_FE_FLAG2 4 /* LAMB: grad averaging */
#define HPU_FE_RESET 1 /* NORM */

/* The lists of one optimizer step: lists[0] params, [1] grads, then the state. */
struct hpu_fe_step {
	uint32_t kernel;
	const char *name;
	struct hpu_tensor *const *lists[4];
	const char *names[4];
	unsigned int width; /* lists used */
	unsigned int count;
	const struct hpu_tensor *lr;
	struct hpu_tensor *step;
	int64_t flags;
	double scalars[4];
};

/* Runs ops[0..n) back to back if ret is 0 (their checks passed), else reports ret. */
static int hpu_fe_run(const char *func, struct hpu_stream *s, struct hpu_op *ops, unsigned int n,
		      int ret)
{
	if (ret)
		return hpu_error_in(func, ret);
	for (unsigned int i = 0; i < n && !ret; i++)
		ret = hpu_op_finish(func, s, &ops[i], 0);
	return ret;
}

/* The operands of param i of a step, from operand first on. */
static int hpu_fe_group(struct hpu_op *op, const struct hpu_fe_step *st, unsigned int i,
			unsigned int first)
{
	int ret = 0;

	for (unsigned int j = 0; j < st->width && !ret; j++) {
		if (!st->lists[j])
			return hpu_error_set(EINVAL, "%s is NULL", st->names[j]);
		ret = hpu_op_operand(op, first + j, st->lists[j][i], st->names[j],
				     j == 1 ? 0 : HPU_ARG_OUT);
		if (!ret)
			ret = hpu_op_dtype_in(op, first + j, HPU_DTS_FLOAT);
		if (!ret && j)
			ret = hpu_op_same_shape(op, first, first + j);
	}
	return ret;
}

/* lr and step: F32 (step also I64) scalars, or F64 for the host. */
static int hpu_fe_scalars(struct hpu_op *op, const struct hpu_tensor *lr, struct hpu_tensor *step)
{
	int ret = hpu_op_operand(op, 0, lr, "lr", 0);

	if (!ret)
		ret = hpu_op_operand(op, 1, step, "step", HPU_ARG_OUT);
	if (!ret)
		ret = hpu_op_dtype_in(op, 0, hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_F64));
	if (!ret)
		ret = hpu_op_dtype_in(op, 1, hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_I64) |
					     hpu_dt_bit(HPU_DT_F64));
	if (!ret)
		ret = hpu_op_scalar_operand(op, 0);
	return ret ? ret : hpu_op_scalar_operand(op, 1);
}

/* A step's launches, each as many params as fit, the last advancing the step. */
static int hpu_fe_step_run(const char *func, struct hpu_stream *s, const struct hpu_fe_step *st)
{
	unsigned int per = (HPU_OP_TENSORS - 2) / st->width, n, i;
	struct hpu_op *ops;
	int ret = 0;

	if (!st->count)
		return hpu_error_in(func, hpu_error_set(EINVAL, "no params"));
	n = (st->count + per - 1) / per;
	ops = calloc(n, sizeof(*ops));
	if (!ops)
		return hpu_error_in(func, hpu_error_set(ENOMEM, "%u launches", n));
	for (i = 0; i < st->count && !ret; i++) {
		struct hpu_op *op = &ops[i / per];

		if (i % per == 0) {
			op->kernel = st->kernel;
			op->name = st->name;
			op->args[0] = st->flags | (i + per >= st->count ? HPU_FE_LAST : 0);
			memcpy(op->scalars, st->scalars, sizeof(st->scalars));
			ret = hpu_fe_scalars(op, st->lr, st->step);
		}
		if (!ret)
			ret = hpu_fe_group(op, st, i, 2 + i % per * st->width);
	}
	ret = hpu_fe_run(func, s, ops, n, ret);
	free(ops);
	return ret;
}

/* x in [lo, hi], or [lo, hi) when hi_open. */
static int hpu_fe_bound(const char *name, double x, double lo, double hi, bool hi_open)
{
	if (x >= lo && (hi_open ? x < hi : x <= hi))
		return 0;
	return hpu_error_set(EINVAL, "%s is %g, not in [%g, %g%c", name, x, lo, hi,
			     hi_open ? ')' : ']');
}

static int hpu_fe_adam_bounds(double beta1, double beta2, double eps, double weight_decay)
{
	int ret = hpu_fe_bound("beta1", beta1, 0, 1, true);

	if (!ret)
		ret = hpu_fe_bound("beta2", beta2, 0, 1, true);
	if (!ret)
		ret = hpu_fe_bound("eps", eps, 0, INFINITY, false);
	return ret ? ret : hpu_fe_bound("weight_decay", weight_decay, 0, INFINITY, false);
}

int hpu_op_fused_sgd(struct hpu_stream *s, struct hpu_tensor *const *params,
		     struct hpu_tensor *const *grads, struct hpu_tensor *const *momentum_bufs,
		     unsigned int count, const struct hpu_tensor *lr, struct hpu_tensor *step,
		     const struct hpu_fused_sgd_config *c)
{
	struct hpu_fe_step st = {
		.kernel = HPU_KERNEL_FOREACH_SGD, .name = "fused_sgd",
		.lists = { params, grads, momentum_bufs },
		.names = { "params[i]", "grads[i]", "momentum_bufs[i]" },
	};
	int ret = c ? 0 : hpu_error_set(EINVAL, "config is NULL");

	if (!ret)
		ret = hpu_fe_bound("momentum", c->momentum, 0, INFINITY, false);
	if (!ret)
		ret = hpu_fe_bound("dampening", c->dampening, -DBL_MAX, DBL_MAX, false);
	if (!ret)
		ret = hpu_fe_bound("weight_decay", c->weight_decay, 0, INFINITY, false);
	if (!ret && c->nesterov && (c->momentum == 0 || c->dampening != 0))
		ret = hpu_error_set(EINVAL, "nesterov wants a momentum and no dampening");
	if (ret)
		return hpu_error_in(__func__, ret);
	st.width = c->momentum != 0 ? 3 : 2;
	st.count = count;
	st.lr = lr;
	st.step = step;
	st.flags = c->nesterov ? HPU_FE_FLAG1 : 0;
	memcpy(st.scalars, (double[]){ c->momentum, c->dampening, c->weight_decay },
	       3 * sizeof(double));
	return hpu_fe_step_run(__func__, s, &st);
}

/* AdamW and LAMB: params, grads and both moments, and the same four numbers. */
static int hpu_fe_adam_like(const char *func, struct hpu_stream *s, struct hpu_fe_step *st,
			    unsigned int count, const struct hpu_tensor *lr,
			    struct hpu_tensor *step, const double *beta1_beta2_eps_wd)
{
	const double *b = beta1_beta2_eps_wd;
	int ret = hpu_fe_adam_bounds(b[0], b[1], b[2], b[3]);

	if (ret)
		return hpu_error_in(func, ret);
	st->names[0] = "params[i]";
	st->names[1] = "grads[i]";
	st->names[2] = "exp_avgs[i]";
	st->names[3] = "exp_avg_sqs[i]";
	st->width = 4;
	st->count = count;
	st->lr = lr;
	st->step = step;
	memcpy(st->scalars, b, 4 * sizeof(*b));
	return hpu_fe_step_run(func, s, st);
}

int hpu_op_fused_adamw(struct hpu_stream *s, struct hpu_tensor *const *params,
		       struct hpu_tensor *const *grads, struct hpu_tensor *const *exp_avgs,
		       struct hpu_tensor *const *exp_avg_sqs, unsigned int count,
		       const struct hpu_tensor *lr, struct hpu_tensor *step,
		       const struct hpu_fused_adamw_config *c)
{
	struct hpu_fe_step st = { .kernel = HPU_KERNEL_FOREACH_ADAMW, .name = "fused_adamw",
				  .lists = { params, grads, exp_avgs, exp_avg_sqs } };

	if (!c)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "config is NULL"));
	return hpu_fe_adam_like(__func__, s, &st, count, lr, step,
				(double[]){ c->beta1, c->beta2, c->eps, c->weight_decay });
}

int hpu_op_fused_lamb(struct hpu_stream *s, struct hpu_tensor *const *params,
		      struct hpu_tensor *const *grads, struct hpu_tensor *const *exp_avgs,
		      struct hpu_tensor *const *exp_avg_sqs, unsigned int count,
		      const struct hpu_tensor *lr, struct hpu_tensor *step,
		      const struct hpu_fused_lamb_config *c)
{
	struct hpu_fe_step st = { .kernel = HPU_KERNEL_FOREACH_LAMB, .name = "fused_lamb",
				  .lists = { params, grads, exp_avgs, exp_avg_sqs } };

	if (!c)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "config is NULL"));
	st.flags = (c->bias_correction ? HPU_FE_FLAG1 : 0) | (c->grad_averaging ? HPU_FE_FLAG2 : 0);
	return hpu_fe_adam_like(__func__, s, &st, count, lr, step,
				(double[]){ c->beta1, c->beta2, c->eps, c->weight_decay });
}

int hpu_op_fused_adadelta(struct hpu_stream *s, struct hpu_tensor *const *params,
			  struct hpu_tensor *const *grads, struct hpu_tensor *const *square_avgs,
			  struct hpu_tensor *const *acc_deltas, unsigned int count,
			  const struct hpu_tensor *lr, struct hpu_tensor *step,
			  const struct hpu_fused_adadelta_config *c)
{
	struct hpu_fe_step st = { HPU_KERNEL_FOREACH_ADADELTA, "fused_adadelta",
				  { params, grads, square_avgs, acc_deltas },
				  { "params[i]", "grads[i]", "square_avgs[i]", "acc_deltas[i]" },
				  4, count, lr, step, 0, { 0 } };
	int ret = c ? 0 : hpu_error_set(EINVAL, "config is NULL");

	if (!ret)
		ret = hpu_fe_bound("rho", c->rho, 0, 1, false);
	if (!ret)
		ret = hpu_fe_bound("eps", c->eps, 0, INFINITY, false);
	if (!ret)
		ret = hpu_fe_bound("weight_decay", c->weight_decay, 0, INFINITY, false);
	if (ret)
		return hpu_error_in(__func__, ret);
	memcpy(st.scalars, (double[]){ c->rho, c->eps, c->weight_decay }, 3 * sizeof(double));
	return hpu_fe_step_run(__func__, s, &st);
}

/* One of the clip's launches over tensors [i, i + n) from operand first on. */
static int hpu_fe_clip_op(struct hpu_op *op, struct hpu_tensor *const *grads, unsigned int i,
			  unsigned int n, unsigned int first)
{
	int ret = 0;

	for (unsigned int j = 0; j < n && !ret; j++) {
		ret = hpu_op_operand(op, first + j, grads[i + j], "grads[i]", HPU_ARG_OUT);
		if (!ret)
			ret = hpu_op_dtype_in(op, first + j, HPU_DTS_FLOAT);
	}
	return ret;
}

/* An F32 (F64 for the host) scalar operand i. */
static int hpu_fe_norm_operand(struct hpu_op *op, unsigned int i, struct hpu_tensor *t,
			       const char *name, unsigned int flags)
{
	int ret = hpu_op_operand(op, i, t, name, flags);

	if (!ret)
		ret = hpu_op_dtype_in(op, i, hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_F64));
	return ret ? ret : hpu_op_scalar_operand(op, i);
}

int hpu_op_clip_norm(struct hpu_stream *s, struct hpu_tensor *total_norm, struct hpu_tensor *acc,
		     struct hpu_tensor *const *grads, unsigned int count, double max_norm,
		     double norm_type)
{
	const unsigned int pn = HPU_OP_TENSORS - 2, pc = HPU_OP_TENSORS - 1;
	unsigned int nn = count ? (count + pn - 1) / pn : 1, nc = count ? (count + pc - 1) / pc : 1;
	struct hpu_op *ops;
	int ret = 0;

	if (isnan(max_norm))
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "max_norm is NaN"));
	if (norm_type != 2 && norm_type != INFINITY)
		return hpu_error_in(__func__, hpu_error_set(EINVAL,
							    "norm_type is %g: 2 or INFINITY",
							    norm_type));
	if (count && !grads)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "grads is NULL"));
	ops = calloc(nn + nc, sizeof(*ops));
	if (!ops)
		return hpu_error_in(__func__, hpu_error_set(ENOMEM, "%u launches", nn + nc));
	for (unsigned int k = 0; k < nn + nc && !ret; k++) {
		struct hpu_op *op = &ops[k];
		bool norm = k < nn;
		unsigned int per = norm ? pn : pc, i = (norm ? k : k - nn) * per;
		unsigned int n = count - i < per ? count - i : per;

		op->kernel = norm ? HPU_KERNEL_FOREACH_NORM : HPU_KERNEL_FOREACH_CLIP;
		op->name = "clip_norm";
		op->scalars[0] = norm ? norm_type : max_norm;
		op->args[0] = norm && !k ? HPU_FE_RESET : 0;
		if (norm)
			ret = hpu_fe_norm_operand(op, 0, acc, "acc", HPU_ARG_OUT);
		if (!ret)
			ret = hpu_fe_norm_operand(op, norm, total_norm, "total_norm",
						  norm ? HPU_ARG_OUT : 0);
		if (!ret)
			ret = hpu_fe_clip_op(op, grads, i, n, norm ? 2 : 1);
	}
	ret = hpu_fe_run(__func__, s, ops, nn + nc, ret);
	free(ops);
	return ret;
}
