/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: softmax and the losses built on it (NLL, cross
 * entropy), forward and backward.  Work items are rows (a reduced loss's:
 * groups of rows, their sums joined at the end), at most
 * HPU_KERNEL_MAX_ITEM_WORK elements each; every loop keeps a pace
 * (hdm_kpace()).  Targets are checked in a first phase, before anything is
 * written, and again where they index.
 */
#include "hdm_kernel_nn.h"

/* log(sum(exp(row))), shifted by the row's max so that exp cannot overflow. */
static double hdm_krow_logsumexp(const struct hdm_krow *w, struct hdm_kpace *p)
{
	double m = -INFINITY, s = 0;

	hdm_kfor(p, j, w->n) {
		double x = hdm_krow_get(w, j);

		if (x > m || isnan(x))
			m = x;
	}
	/* All -inf (or a +inf): the shift would make NaN of every term, as torch does anyway. */
	if (isinf(m))
		return m;
	hdm_kfor(p, j, w->n)
		s += exp(hdm_krow_get(w, j) - m);
	return m + log(s);
}

/* ---- softmax ---- */

/* Every operand a float view of t[0]'s shape; a0 a dim of it (0 for a scalar), a1 0 or 1. */
static int hdm_softmax_check(const struct hdm_kcall *c, unsigned int ntensors, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0];
	int64_t dims = out->ndim ? out->ndim : 1;

	if (c->num_tensors != ntensors || c->args[0] < 0 || c->args[0] >= dims ||
	    (c->args[1] != 0 && c->args[1] != 1))
		return -1;
	for (unsigned int i = 0; i < ntensors; i++)
		if (!hdm_kview_float_like(&c->t[i], out))
			return -1;
	*items = hdm_kview_rows(out, (uint32_t)c->args[0]);
	return 0;
}

/* Rows along a0. */
static uint64_t hdm_softmax_work(const struct hdm_kcall *c, uint64_t items)
{
	return hdm_kwork_rows(items, c->t[0].shape[c->args[0]]);
}

static int hdm_softmax_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	return hdm_softmax_check(c, 2, items);
}

static void hdm_softmax_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	uint32_t dim = (uint32_t)c->args[0];
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t r = begin; r < end && !hdm_kpace(&p, 1); r++) {
		struct hdm_krow out = hdm_krow(&c->t[0], dim, r), in = hdm_krow(&c->t[1], dim, r);
		double lse = hdm_krow_logsumexp(&in, &p);

		hdm_kfor(&p, j, in.n) {
			double logp = hdm_krow_get(&in, j) - lse;

			hdm_krow_set(&out, j, c->args[1] ? logp : exp(logp));
		}
	}
}

const struct hdm_kernel_def hdm_kernel_softmax = {
	.name = "softmax",
	.min_tensors = 2,
	.max_tensors = 2,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_softmax_fwd_check,
	.work = hdm_softmax_work,
	.run = hdm_softmax_run,
};

static int hdm_softmax_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	return hdm_softmax_check(c, 3, items);
}

/*
 * softmax: grad_in = y * (g - sum(g * y)); log_softmax: grad_in = g - exp(y) * sum(g),
 * y being the forward's output.
 */
static void hdm_softmax_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	uint32_t dim = (uint32_t)c->args[0];
	bool log_variant = c->args[1];
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t r = begin; r < end && !hdm_kpace(&p, 1); r++) {
		struct hdm_krow gi = hdm_krow(&c->t[0], dim, r), g = hdm_krow(&c->t[1], dim, r),
				y = hdm_krow(&c->t[2], dim, r);
		double s = 0;

		hdm_kfor(&p, j, g.n)
			s += hdm_krow_get(&g, j) * (log_variant ? 1 : hdm_krow_get(&y, j));
		hdm_kfor(&p, j, g.n) {
			double gj = hdm_krow_get(&g, j), yj = hdm_krow_get(&y, j);

			hdm_krow_set(&gi, j, log_variant ? gj - exp(yj) * s : yj * (gj - s));
		}
	}
}

const struct hdm_kernel_def hdm_kernel_softmax_bwd = {
	.name = "softmax_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_softmax_bwd_check,
	.work = hdm_softmax_work,
	.run = hdm_softmax_bwd_run,
};

/* ---- NLL and cross entropy ---- */

/*
 * Both losses, forward and backward, run in two phases.  Phase 0 reads the
 * targets in chunks of HDM_KSCAN_CHUNK: one out of range fails the
 * launch before anything is written; each chunk counts the targets that are
 * not ignore_index (a1), and finish() adds the counts up (a MEAN's
 * divisor).  Phase 1's items are rows (reduction NONE, the backwards) or,
 * for a forward MEAN or SUM, groups of rows: each group's sum goes into the
 * scratch, and finish() adds them in order, so the result does not depend
 * on how the launch was split or yielded.  With N up to
 * HDM_LOSS_GROUPS_MAX a group is a row.
 */
#define HDM_LOSS_GROUPS_MAX (1u << 19)

/* Where the scratch keeps what. */
struct hdm_loss_plan {
	uint64_t n, classes;
	uint64_t chunks;     /* of targets: phase 0's items */
	uint64_t group_rows; /* rows a phase-1 item does */
	uint64_t groups;     /* phase 1's items */
	bool reduced;        /* a forward MEAN or SUM */
};

/* Scratch: the counted total, each chunk's count, then a reduced forward's group sums. */
struct hdm_loss_scratch {
	uint64_t counted;
	uint64_t chunk_counted[];
	/* double group_sum[groups] follows chunk_counted[chunks] */
};

static bool hdm_loss_is_bwd(const struct hdm_kcall *c)
{
	return c->kernel == HPU_KERNEL_NLL_LOSS_BWD || c->kernel == HPU_KERNEL_CROSS_ENTROPY_BWD;
}

/* The [N, C] operand: the forward's input, the backward's gradient. */
static const struct hdm_kview *hdm_loss_x(const struct hdm_kcall *c)
{
	return &c->t[hdm_loss_is_bwd(c) ? 0 : 1];
}

/* The targets: the last operand. */
static const struct hdm_kview *hdm_loss_targets(const struct hdm_kcall *c)
{
	return &c->t[c->num_tensors - 1];
}

static struct hdm_loss_plan hdm_loss_plan(const struct hdm_kcall *c)
{
	const struct hdm_kview *x = hdm_loss_x(c);
	struct hdm_loss_plan pl = { .n = x->shape[0], .classes = x->shape[1], .group_rows = 1 };

	pl.chunks = hdm_kscan_items(pl.n);
	pl.reduced = !hdm_loss_is_bwd(c) && c->args[0] != HPU_REDUCTION_NONE;
	if (pl.reduced && pl.n > HDM_LOSS_GROUPS_MAX)
		pl.group_rows = (pl.n + HDM_LOSS_GROUPS_MAX - 1) / HDM_LOSS_GROUPS_MAX;
	pl.groups = (pl.n + pl.group_rows - 1) / pl.group_rows;
	return pl;
}

static struct hdm_loss_scratch *hdm_loss_scratch(const struct hdm_kcall *c)
{
	return c->state->scratch;
}

static double *hdm_loss_group_sums(const struct hdm_kcall *c, const struct hdm_loss_plan *pl)
{
	return (double *)&hdm_loss_scratch(c)->chunk_counted[pl->chunks];
}

static uint64_t hdm_loss_scratch_len(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_loss_plan pl = hdm_loss_plan(c);

	(void)items;
	return sizeof(struct hdm_loss_scratch) + pl.chunks * sizeof(uint64_t) +
	       (pl.reduced ? pl.groups * sizeof(double) : 0);
}

/*
 * What both losses, forward and backward, ask: x (log-probabilities, logits
 * or a gradient of them) a float [N, C], target an index [N], and loss (the
 * loss or its gradient) a float [N] for reduction NONE, a scalar for MEAN
 * and SUM.  Phase 0's items are chunks of targets, phase 1's rows or groups.
 */
static int hdm_loss_check(const struct hdm_kcall *c, unsigned int ntensors, unsigned int loss,
			  uint64_t *items)
{
	const struct hdm_kview *xv = hdm_loss_x(c), *lv = &c->t[loss], *tv = hdm_loss_targets(c);
	uint64_t n = xv->shape[0];
	struct hdm_loss_plan pl;

	if (c->num_tensors != ntensors || xv->ndim != 2 || !hdm_dtype_is_float(xv->dtype) ||
	    !hdm_dtype_is_float(lv->dtype) || !hdm_kview_is_index(tv) ||
	    !hdm_kview_has_shape(tv, 1, &n))
		return -1;
	switch (c->args[0]) {
	case HPU_REDUCTION_NONE:
		if (!hdm_kview_has_shape(lv, 1, &n))
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
	pl = hdm_loss_plan(c);
	items[0] = pl.chunks;
	items[1] = pl.groups;
	return 0;
}

/* Phase 0's items [begin, end): chunks of targets checked and counted. */
static void hdm_loss_count(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_loss_scratch *sc = hdm_loss_scratch(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t k = begin; k < end && !hdm_kstop(c); k++)
		sc->chunk_counted[k] = hdm_kscan_chunk(c, hdm_loss_targets(c), hdm_loss_x(c)->shape[1],
						       &c->args[1], k, &p, "a target out of range");
}

/* Phase 0's items in all: the targets, once. */
static uint64_t hdm_loss_count_work(const struct hdm_kcall *c)
{
	return hdm_loss_targets(c)->shape[0];
}

/*
 * After phase 0: the counted targets in all; after a reduced forward's
 * phase 1: the loss, its group sums added in order (MEAN over no counted
 * target is 0 / 0 = NaN, as torch).
 */
static void hdm_loss_finish(const struct hdm_kcall *c)
{
	struct hdm_loss_plan pl = hdm_loss_plan(c);
	struct hdm_loss_scratch *sc = hdm_loss_scratch(c);
	const double *sums = hdm_loss_group_sums(c, &pl);
	double sum = 0;

	if (c->state->phase == 0) {
		for (uint64_t k = 0; k < pl.chunks; k++)
			sc->counted += sc->chunk_counted[k];
		return;
	}
	if (!pl.reduced)
		return;
	for (uint64_t g = 0; g < pl.groups; g++)
		sum += sums[g];
	hdm_kset(&c->t[0], 0, c->args[0] == HPU_REDUCTION_MEAN ? sum / (double)sc->counted : sum);
}

/*
 * Row n's target, read once and checked where it indexes the row: true
 * for a target in [0, C); false for ignore_index, or one out of range,
 * which fails the launch (another writer changed it since phase 0).
 */
static bool hdm_loss_target(const struct hdm_kcall *c, uint64_t n, uint64_t classes, int64_t *t)
{
	const struct hdm_kview *target = hdm_loss_targets(c);

	*t = hdm_kload_index(target->dtype, hdm_kview_at(target, n));
	return *t != c->args[1] && hdm_kindex_ok(c, *t, classes, "a target out of range");
}

/* The loss of row n with target t in [0, C), x being t[1]. */
typedef double hdm_row_loss_fn(const struct hdm_kview *x, uint64_t n, int64_t t,
			       struct hdm_kpace *p);

/* Phase 1 of a forward: rows' losses (NONE), or groups' sums into the scratch. */
static void hdm_loss_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end,
			 hdm_row_loss_fn *row_loss)
{
	const struct hdm_kview *loss = &c->t[0], *x = &c->t[1];
	struct hdm_loss_plan pl = hdm_loss_plan(c);
	struct hdm_kpace p = hdm_kpace_start(c);
	double *sums = hdm_loss_group_sums(c, &pl);
	int64_t t;

	if (c->state->phase == 0) {
		hdm_loss_count(c, begin, end);
		return;
	}
	for (uint64_t g = begin; g < end; g++) {
		uint64_t row = g * pl.group_rows;
		uint64_t last = pl.n - row < pl.group_rows ? pl.n : row + pl.group_rows;
		double sum = 0;

		for (uint64_t n = row; n < last; n++) {
			double l;

			if (hdm_kpace(&p, 1))
				return;
			l = hdm_loss_target(c, n, pl.classes, &t) ? row_loss(x, n, t, &p) : 0;
			if (pl.reduced)
				sum += l;
			else
				hdm_kset(loss, n, l);
		}
		if (pl.reduced)
			sums[g] = sum;
	}
}

/*
 * d loss / d loss_n in the backward: grad_loss's element n (NONE) or its
 * scalar, divided by the number of counted targets (phase 0's) for MEAN; 0
 * for an ignored target.
 */
static double hdm_loss_grad(const struct hdm_kcall *c, const struct hdm_kview *grad_loss,
			    uint64_t n, int64_t t)
{
	if (t == c->args[1])
		return 0;
	if (c->args[0] == HPU_REDUCTION_NONE)
		return hdm_kget(grad_loss, n);
	return hdm_kget(grad_loss, 0) /
	       (c->args[0] == HPU_REDUCTION_MEAN ? (double)hdm_loss_scratch(c)->counted : 1);
}

/*
 * Phase 1's elements in all: a target each for NLL's forward, rows of C
 * for the others (whose rows are read whole).
 */
static uint64_t hdm_loss_work(const struct hdm_kcall *c, uint64_t items)
{
	const struct hdm_kview *x = hdm_loss_x(c);

	(void)items;
	if (c->state->phase == 0)
		return hdm_loss_count_work(c);
	if (c->kernel == HPU_KERNEL_NLL_LOSS)
		return x->shape[0];
	return hdm_kwork_rows(x->shape[0], x->shape[1]);
}

/* The most elements an item visits: a chunk of targets; a group of rows. */
static uint64_t hdm_loss_item_work(const struct hdm_kcall *c)
{
	struct hdm_loss_plan pl = hdm_loss_plan(c);

	if (c->state->phase == 0)
		return hdm_kscan_item_work(pl.n);
	if (c->kernel == HPU_KERNEL_NLL_LOSS)
		return pl.group_rows;
	return hdm_kmul_sat(pl.group_rows, pl.classes ? pl.classes : 1);
}

static double hdm_nll_row(const struct hdm_kview *logp, uint64_t n, int64_t t, struct hdm_kpace *p)
{
	struct hdm_krow row = hdm_krow(logp, 1, n);

	(void)p;
	return -hdm_krow_get(&row, (uint64_t)t);
}

/* t: loss, x, target. */
static int hdm_loss_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	return hdm_loss_check(c, 3, 0, items);
}

static void hdm_nll_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	hdm_loss_run(c, begin, end, hdm_nll_row);
}

#define HDM_LOSS_DEF(id, ntensors, checker, runner)                                        \
	{                                                                                  \
		.name = id, .min_tensors = ntensors, .max_tensors = ntensors,              \
		.outputs = hdm_kernel_writes_t0, .phases = 2, .check = checker,            \
		.work = hdm_loss_work, .item_work = hdm_loss_item_work,                    \
		.scratch = hdm_loss_scratch_len, .run = runner, .finish = hdm_loss_finish, \
	}

const struct hdm_kernel_def hdm_kernel_nll_loss =
	HDM_LOSS_DEF("nll_loss", 3, hdm_loss_fwd_check, hdm_nll_run);

/* t: grad_logp, grad_loss, target; phase 1's items are rows of grad_logp. */
static int hdm_nll_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	return hdm_loss_check(c, 3, 1, items);
}

/* A target only compares to columns here: it indexes nothing. */
static void hdm_nll_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *target = &c->t[2];
	struct hdm_kpace p = hdm_kpace_start(c);

	if (c->state->phase == 0) {
		hdm_loss_count(c, begin, end);
		return;
	}
	for (uint64_t n = begin; n < end && !hdm_kpace(&p, 1); n++) {
		int64_t t = hdm_kget_i(target, n);
		double w = hdm_loss_grad(c, &c->t[1], n, t);
		struct hdm_krow row = hdm_krow(&c->t[0], 1, n);

		hdm_kfor(&p, j, row.n)
			hdm_krow_set(&row, j, (int64_t)j == t ? -w : 0);
	}
}

const struct hdm_kernel_def hdm_kernel_nll_loss_bwd =
	HDM_LOSS_DEF("nll_loss_bwd", 3, hdm_nll_bwd_check, hdm_nll_bwd_run);

/* -log_softmax(row)[t] */
static double hdm_ce_row(const struct hdm_kview *logits, uint64_t n, int64_t t, struct hdm_kpace *p)
{
	struct hdm_krow row = hdm_krow(logits, 1, n);

	return hdm_krow_logsumexp(&row, p) - hdm_krow_get(&row, (uint64_t)t);
}

static void hdm_ce_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	hdm_loss_run(c, begin, end, hdm_ce_row);
}

const struct hdm_kernel_def hdm_kernel_cross_entropy =
	HDM_LOSS_DEF("cross_entropy", 3, hdm_loss_fwd_check, hdm_ce_run);

/* t: grad_logits, grad_loss, logits, target; phase 1's items are rows. */
static int hdm_ce_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (hdm_loss_check(c, 4, 1, items) || !hdm_kview_float_like(&c->t[2], &c->t[0]))
		return -1;
	return 0;
}

/* grad_logits = w * (softmax(logits) - onehot(t)); a row may be its own logits (in place). */
static void hdm_ce_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *target = &c->t[3];
	struct hdm_kpace pace = hdm_kpace_start(c);

	if (c->state->phase == 0) {
		hdm_loss_count(c, begin, end);
		return;
	}
	for (uint64_t n = begin; n < end && !hdm_kpace(&pace, 1); n++) {
		int64_t t = hdm_kget_i(target, n);
		double w = hdm_loss_grad(c, &c->t[1], n, t);
		struct hdm_krow grad = hdm_krow(&c->t[0], 1, n), logits = hdm_krow(&c->t[2], 1, n);
		double lse = hdm_krow_logsumexp(&logits, &pace);

		hdm_kfor(&pace, j, grad.n) {
			double p = exp(hdm_krow_get(&logits, j) - lse);

			hdm_krow_set(&grad, j, w * (p - ((int64_t)j == t)));
		}
	}
}

const struct hdm_kernel_def hdm_kernel_cross_entropy_bwd =
	HDM_LOSS_DEF("cross_entropy_bwd", 4, hdm_ce_bwd_check, hdm_ce_bwd_run);
