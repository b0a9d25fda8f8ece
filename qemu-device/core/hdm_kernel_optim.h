/* SPDX-License-Identifier: MIT */
/*
 * The optimizers' element steps, torch.optim's single-tensor formulas,
 * shared by the one-tensor kernels (hdm_kernel_optim.c) and the FOREACH
 * ones over lists of tensors (hdm_kernel_foreach.c).
 */
#ifndef HDM_KERNEL_OPTIM_H
#define HDM_KERNEL_OPTIM_H

#include "hdm_kernel_nn.h"

/* torch adds weight decay to the gradient only when it is set (0 * inf would be NaN). */
static inline double hdm_decayed_grad(const struct hdm_kel *grad, double param, double wd)
{
	double g = hdm_kel_get(grad);

	return wd != 0 ? g + wd * param : g;
}

struct hdm_sgd {
	double lr, momentum, dampening, wd;
	bool nesterov, first;
};

/* e: param, grad, buf. */
static inline __attribute__((always_inline)) void
hdm_sgd_el(const void *ctx, uint64_t i, const struct hdm_kel *e)
{
	const struct hdm_sgd *o = ctx;
	double p = hdm_kel_get(&e[0]), d = hdm_decayed_grad(&e[1], p, o->wd);

	(void)i;
	if (o->momentum != 0) {
		double b = o->first ? d : o->momentum * hdm_kel_get(&e[2]) + (1 - o->dampening) * d;

		hdm_kel_set(&e[2], b);
		d = o->nesterov ? d + o->momentum * b : b;
	}
	hdm_kel_set(&e[0], p - o->lr * d);
}

struct hdm_adadelta {
	double lr, rho, eps, wd;
};

/* e: param, grad, square_avg, acc_delta. */
static inline __attribute__((always_inline)) void
hdm_adadelta_el(const void *ctx, uint64_t i, const struct hdm_kel *e)
{
	const struct hdm_adadelta *o = ctx;
	double p = hdm_kel_get(&e[0]), g = hdm_decayed_grad(&e[1], p, o->wd);
	double sq = o->rho * hdm_kel_get(&e[2]) + (1 - o->rho) * g * g;
	double acc = hdm_kel_get(&e[3]);
	double delta = sqrt(acc + o->eps) / sqrt(sq + o->eps) * g;

	(void)i;
	hdm_kel_set(&e[2], sq);
	hdm_kel_set(&e[3], o->rho * acc + (1 - o->rho) * delta * delta);
	hdm_kel_set(&e[0], p - o->lr * delta);
}

/* Every part of a launch uses the same t = step + 1: only finish() advances the step. */
struct hdm_adamw {
	double lr, beta1, beta2, eps, wd, step_size, bc2_sqrt;
};

/* e: param, grad, exp_avg, exp_avg_sq. */
static inline __attribute__((always_inline)) void
hdm_adamw_el(const void *ctx, uint64_t i, const struct hdm_kel *e)
{
	const struct hdm_adamw *o = ctx;
	double g = hdm_kel_get(&e[1]), p = hdm_kel_get(&e[0]) * (1 - o->lr * o->wd);
	double m = o->beta1 * hdm_kel_get(&e[2]) + (1 - o->beta1) * g;
	double v = o->beta2 * hdm_kel_get(&e[3]) + (1 - o->beta2) * g * g;

	(void)i;
	hdm_kel_set(&e[2], m);
	hdm_kel_set(&e[3], v);
	hdm_kel_set(&e[0], p - o->step_size * m / (sqrt(v) / o->bc2_sqrt + o->eps));
}

/* The constants of AdamW's step t (from 1). */
static inline struct hdm_adamw hdm_adamw_at(double lr, double beta1, double beta2, double eps,
					    double wd, double t)
{
	return (struct hdm_adamw){ lr, beta1, beta2, eps, wd,
				   lr / (1 - pow(beta1, t)), sqrt(1 - pow(beta2, t)) };
}

/* Partial a with b, the next element's square or |x|, or the next chunk's partial. */
static inline double hdm_clip_join(bool max_norm, double a, double b)
{
	if (!max_norm)
		return a + b;
	return b > a || isnan(b) ? b : a; /* a NaN stays */
}

#endif /* HDM_KERNEL_OPTIM_H */
