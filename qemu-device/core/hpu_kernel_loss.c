/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: softmax and the losses built on it (NLL, cross
 * entropy), forward and backward.  Work items are rows; a reduced loss is a
 * single item, since its sum needs every row.  A row may be long, so every
 * loop keeps a pace (hpu_kpace()); targets are checked where they index.
 */
#include "hpu_kernel_nn.h"

/* log(sum(exp(row))), shifted by the row's max so that exp cannot overflow. */
static double hpu_krow_logsumexp(const struct hpu_krow *w, struct hpu_kpace *p)
{
	double m = -INFINITY, s = 0;

	hpu_kfor(p, j, w->n) {
		double x = hpu_krow_get(w, j);

		if (x > m || isnan(x))
			m = x;
	}
	/* All -inf (or a +inf): the shift would make NaN of every term, as torch does anyway. */
	if (isinf(m))
		return m;
	hpu_kfor(p, j, w->n)
		s += exp(hpu_krow_get(w, j) - m);
	return m + log(s);
}

/* ---- softmax ---- */

/* Every operand a float view of t[0]'s shape; a0 a dim of it (0 for a scalar), a1 0 or 1. */
static int hpu_softmax_check(const struct hpu_kcall *c, unsigned int ntensors, uint64_t *items)
{
	const struct hpu_kview *out = &c->t[0];
	int64_t dims = out->ndim ? out->ndim : 1;

	if (c->num_tensors != ntensors || c->args[0] < 0 || c->args[0] >= dims ||
	    (c->args[1] != 0 && c->args[1] != 1))
		return -1;
	for (unsigned int i = 0; i < ntensors; i++)
		if (!hpu_kview_float_like(&c->t[i], out))
			return -1;
	*items = hpu_kview_rows(out, (uint32_t)c->args[0]);
	return 0;
}

/* Rows along a0. */
static uint64_t hpu_softmax_work(const struct hpu_kcall *c, uint64_t items)
{
	return hpu_kwork_rows(items, c->t[0].shape[c->args[0]]);
}

static int hpu_softmax_fwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	return hpu_softmax_check(c, 2, items);
}

static void hpu_softmax_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	uint32_t dim = (uint32_t)c->args[0];
	struct hpu_kpace p = hpu_kpace_start(c);

	for (uint64_t r = begin; r < end && !hpu_kpace(&p, 1); r++) {
		struct hpu_krow out = hpu_krow(&c->t[0], dim, r), in = hpu_krow(&c->t[1], dim, r);
		double lse = hpu_krow_logsumexp(&in, &p);

		hpu_kfor(&p, j, in.n) {
			double logp = hpu_krow_get(&in, j) - lse;

			hpu_krow_set(&out, j, c->args[1] ? logp : exp(logp));
		}
	}
}

const struct hpu_kernel_def hpu_kernel_softmax = {
	.name = "softmax",
	.min_tensors = 2,
	.max_tensors = 2,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_softmax_fwd_check,
	.work = hpu_softmax_work,
	.run = hpu_softmax_run,
};

static int hpu_softmax_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	return hpu_softmax_check(c, 3, items);
}

/*
 * softmax: grad_in = y * (g - sum(g * y)); log_softmax: grad_in = g - exp(y) * sum(g),
 * y being the forward's output.
 */
static void hpu_softmax_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	uint32_t dim = (uint32_t)c->args[0];
	bool log_variant = c->args[1];
	struct hpu_kpace p = hpu_kpace_start(c);

	for (uint64_t r = begin; r < end && !hpu_kpace(&p, 1); r++) {
		struct hpu_krow gi = hpu_krow(&c->t[0], dim, r), g = hpu_krow(&c->t[1], dim, r),
				y = hpu_krow(&c->t[2], dim, r);
		double s = 0;

		hpu_kfor(&p, j, g.n)
			s += hpu_krow_get(&g, j) * (log_variant ? 1 : hpu_krow_get(&y, j));
		hpu_kfor(&p, j, g.n) {
			double gj = hpu_krow_get(&g, j), yj = hpu_krow_get(&y, j);

			hpu_krow_set(&gi, j, log_variant ? gj - exp(yj) * s : yj * (gj - s));
		}
	}
}

const struct hpu_kernel_def hpu_kernel_softmax_bwd = {
	.name = "softmax_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_softmax_bwd_check,
	.work = hpu_softmax_work,
	.run = hpu_softmax_bwd_run,
};

/* ---- NLL and cross entropy ---- */

/*
 * What both losses, forward and backward, ask: x (log-probabilities, logits
 * or a gradient of them) a float [N, C], target an index [N] whose values
 * are ignore_index (a1) or in [0, C), and loss (the loss or its gradient)
 * a float [N] for reduction NONE, a scalar for MEAN and SUM.  The state's
 * memo: the targets counted (not ignore_index), a MEAN's divisor.
 */
static int hpu_loss_check(const struct hpu_kcall *c, unsigned int ntensors, unsigned int loss,
			  unsigned int x, unsigned int target)
{
	const struct hpu_kview *xv = &c->t[x], *lv = &c->t[loss], *tv = &c->t[target];
	uint64_t n = xv->shape[0], classes = xv->shape[1], counted = 0;
	struct hpu_kpace p = hpu_kpace_start(c);

	if (c->num_tensors != ntensors || xv->ndim != 2 || !hpu_dtype_is_float(xv->dtype) ||
	    !hpu_dtype_is_float(lv->dtype) || !hpu_kview_is_index(tv) ||
	    !hpu_kview_has_shape(tv, 1, &n))
		return -1;
	switch (c->args[0]) {
	case HPU_REDUCTION_NONE:
		if (!hpu_kview_has_shape(lv, 1, &n))
			return -1;
		break;
	case HPU_REDUCTION_MEAN:
	case HPU_REDUCTION_SUM:
		if (lv->ndim != 0)
			return -1;
		break;
	default:
		return -1;
	}
	for (uint64_t i = 0; i < n; i++) {
		int64_t t = hpu_kget_i(tv, i);

		if (hpu_kpace(&p, 1) || (t != c->args[1] && (t < 0 || (uint64_t)t >= classes)))
			return -1;
		counted += t != c->args[1];
	}
	c->state->memo = counted;
	return 0;
}

/* The forward writes one loss a row, or one sum of them all. */
static uint64_t hpu_loss_items(const struct hpu_kcall *c)
{
	return c->args[0] == HPU_REDUCTION_NONE ? c->t[1].shape[0] : 1;
}

/*
 * Row n's target, read once and checked where it indexes the row: true
 * for a target in [0, C); false for ignore_index, or one out of range,
 * which fails the launch (another writer changed it since check()).
 */
static bool hpu_loss_target(const struct hpu_kcall *c, const struct hpu_kview *target, uint64_t n,
			    uint64_t classes, int64_t *t)
{
	*t = hpu_kload_index(target->dtype, hpu_kview_at(target, n));
	return *t != c->args[1] && hpu_kindex_ok(c, *t, classes, "a target out of range");
}

/* The loss of row n with target t in [0, C), x being t[1]. */
typedef double hpu_row_loss_fn(const struct hpu_kview *x, uint64_t n, int64_t t,
			       struct hpu_kpace *p);

static void hpu_loss_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end,
			 hpu_row_loss_fn *row_loss)
{
	const struct hpu_kview *loss = &c->t[0], *x = &c->t[1], *target = &c->t[2];
	struct hpu_kpace p = hpu_kpace_start(c);
	uint64_t counted = 0;
	double sum = 0;
	int64_t t;

	if (c->args[0] == HPU_REDUCTION_NONE) {
		for (uint64_t n = begin; n < end && !hpu_kpace(&p, 1); n++)
			hpu_kset(loss, n, hpu_loss_target(c, target, n, x->shape[1], &t) ?
					  row_loss(x, n, t, &p) : 0);
		return;
	}
	if (begin == end) /* a part without the one item */
		return;
	for (uint64_t n = 0; n < x->shape[0] && !hpu_kpace(&p, 1); n++) {
		if (hpu_loss_target(c, target, n, x->shape[1], &t)) {
			sum += row_loss(x, n, t, &p);
			counted++;
		}
	}
	/* MEAN over no counted target is 0 / 0 = NaN, as torch. */
	hpu_kset(loss, 0, c->args[0] == HPU_REDUCTION_MEAN ? sum / (double)counted : sum);
}

/*
 * d loss / d loss_n in the backward: grad_loss's element n (NONE) or its
 * scalar, divided by the number of counted targets (check()'s memo) for
 * MEAN; 0 for an ignored target.
 */
static double hpu_loss_grad(const struct hpu_kcall *c, const struct hpu_kview *grad_loss,
			    uint64_t n, int64_t t)
{
	if (t == c->args[1])
		return 0;
	if (c->args[0] == HPU_REDUCTION_NONE)
		return hpu_kget(grad_loss, n);
	return hpu_kget(grad_loss, 0) /
	       (c->args[0] == HPU_REDUCTION_MEAN ? (double)c->state->memo : 1);
}

/* The elements of the loss's [N, C] operand t[i]: a row each. */
static uint64_t hpu_loss_work(const struct hpu_kcall *c, unsigned int i)
{
	return hpu_kwork_rows(c->t[i].shape[0], c->t[i].shape[1]);
}

static double hpu_nll_row(const struct hpu_kview *logp, uint64_t n, int64_t t, struct hpu_kpace *p)
{
	struct hpu_krow row = hpu_krow(logp, 1, n);

	(void)p;
	return -hpu_krow_get(&row, (uint64_t)t);
}

static int hpu_nll_check(const struct hpu_kcall *c, uint64_t *items)
{
	if (hpu_loss_check(c, 3, 0, 1, 2))
		return -1;
	*items = hpu_loss_items(c);
	return 0;
}

/* A row's target each. */
static uint64_t hpu_nll_work(const struct hpu_kcall *c, uint64_t items)
{
	(void)items;
	return c->t[1].shape[0];
}

static void hpu_nll_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	hpu_loss_run(c, begin, end, hpu_nll_row);
}

const struct hpu_kernel_def hpu_kernel_nll_loss = {
	.name = "nll_loss",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_nll_check,
	.work = hpu_nll_work,
	.run = hpu_nll_run,
};

/* t: grad_logp, grad_loss, target; items are rows of grad_logp. */
static int hpu_nll_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	if (hpu_loss_check(c, 3, 1, 0, 2))
		return -1;
	*items = c->t[0].shape[0];
	return 0;
}

/* The rows of the gradient written (x, t[0] of the backwards). */
static uint64_t hpu_loss_bwd_work(const struct hpu_kcall *c, uint64_t items)
{
	(void)items;
	return hpu_loss_work(c, 0);
}

/* A target only compares to columns here: it indexes nothing. */
static void hpu_nll_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hpu_kview *target = &c->t[2];
	struct hpu_kpace p = hpu_kpace_start(c);

	for (uint64_t n = begin; n < end && !hpu_kpace(&p, 1); n++) {
		int64_t t = hpu_kget_i(target, n);
		double w = hpu_loss_grad(c, &c->t[1], n, t);
		struct hpu_krow row = hpu_krow(&c->t[0], 1, n);

		hpu_kfor(&p, j, row.n)
			hpu_krow_set(&row, j, (int64_t)j == t ? -w : 0);
	}
}

const struct hpu_kernel_def hpu_kernel_nll_loss_bwd = {
	.name = "nll_loss_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_nll_bwd_check,
	.work = hpu_loss_bwd_work,
	.run = hpu_nll_bwd_run,
};

/* -log_softmax(row)[t] */
static double hpu_ce_row(const struct hpu_kview *logits, uint64_t n, int64_t t, struct hpu_kpace *p)
{
	struct hpu_krow row = hpu_krow(logits, 1, n);

	return hpu_krow_logsumexp(&row, p) - hpu_krow_get(&row, (uint64_t)t);
}

/* Every row of the logits. */
static uint64_t hpu_ce_work(const struct hpu_kcall *c, uint64_t items)
{
	(void)items;
	return hpu_loss_work(c, 1);
}

static void hpu_ce_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	hpu_loss_run(c, begin, end, hpu_ce_row);
}

const struct hpu_kernel_def hpu_kernel_cross_entropy = {
	.name = "cross_entropy",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_nll_check,
	.work = hpu_ce_work,
	.run = hpu_ce_run,
};

/* t: grad_logits, grad_loss, logits, target; items are rows. */
static int hpu_ce_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	if (hpu_loss_check(c, 4, 1, 0, 3) || !hpu_kview_float_like(&c->t[2], &c->t[0]))
		return -1;
	*items = c->t[0].shape[0];
	return 0;
}

/* grad_logits = w * (softmax(logits) - onehot(t)); a row may be its own logits (in place). */
static void hpu_ce_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hpu_kview *target = &c->t[3];
	struct hpu_kpace pace = hpu_kpace_start(c);

	for (uint64_t n = begin; n < end && !hpu_kpace(&pace, 1); n++) {
		int64_t t = hpu_kget_i(target, n);
		double w = hpu_loss_grad(c, &c->t[1], n, t);
		struct hpu_krow grad = hpu_krow(&c->t[0], 1, n), logits = hpu_krow(&c->t[2], 1, n);
		double lse = hpu_krow_logsumexp(&logits, &pace);

		hpu_kfor(&pace, j, grad.n) {
			double p = exp(hpu_krow_get(&logits, j) - lse);

			hpu_krow_set(&grad, j, w * (p - ((int64_t)j == t)));
		}
	}
}

const struct hpu_kernel_def hpu_kernel_cross_entropy_bwd = {
	.name = "cross_entropy_bwd",
	.min_tensors = 4,
	.max_tensors = 4,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_ce_bwd_check,
	.work = hpu_loss_bwd_work,
	.run = hpu_ce_bwd_run,
};
