/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: group norm and its backward over in [N, C, ...]
 * in G groups of C / G channels, on batch norm's walk (hdm_kernel_nn.h):
 * a row is one (n, c)'s elements, walked in chunks, each a work item.
 * Phase 0 leaves each chunk's partials in the scratch; finish() joins them
 * in order (a group's channels one after the other, a channel's chunks in
 * order; a channel's n in order) into each group's statistics, which it
 * keeps after the partials, and writes the per-group or per-channel
 * outputs; phase 1's items are the chunks again, each writing its chunk
 * from its group's statistics.  Nothing depends on the split.
 */
#include "hdm_kernel_nn.h"

struct hdm_gn {
	struct hdm_bn bn; /* rows: the N C (n, c) pairs */
	uint64_t n, c, groups, cg;
};

/* The launch's in: t[3] of the forward, t[4] of the backward. */
static struct hdm_gn hdm_gn_get(const struct hdm_kcall *c)
{
	struct hdm_gn gn = { .bn.in = &c->t[c->kernel == HPU_KERNEL_GROUP_NORM ? 3 : 4] };
	const struct hdm_kview *in = gn.bn.in;

	if (in->ndim >= 2) {
		gn.n = in->shape[0];
		gn.c = in->shape[1];
	}
	gn.groups = c->args[0] > 0 ? (uint64_t)c->args[0] : 0;
	gn.cg = gn.groups ? gn.c / gn.groups : 0;
	gn.bn.chans = gn.n * gn.c;
	gn.bn.m = gn.bn.chans ? hdm_kview_numel(in) / gn.bn.chans : 0;
	gn.bn.chunks = hdm_bn_chunks(gn.bn.m);
	return gn;
}

/*
 * in float [N, C, ...] with N, C and the row at least 1, G dividing C;
 * the partials and the groups' statistics within the scratch.
 */
static bool hdm_gn_ok(const struct hdm_gn *gn)
{
	const struct hdm_bn *bn = &gn->bn;

	return bn->in->ndim >= 2 && hdm_dtype_is_float(bn->in->dtype) && bn->chans && bn->m &&
	       gn->groups && gn->c % gn->groups == 0 &&
	       bn->chans <= HDM_BN_MAX_PARTS / bn->chunks &&
	       gn->n * gn->groups <= HDM_BN_MAX_PARTS - bn->chans * bn->chunks;
}

/* A float [C] operand. */
static bool hdm_gn_chan_ok(const struct hdm_gn *gn, const struct hdm_kview *v)
{
	return hdm_dtype_is_float(v->dtype) && hdm_kview_has_shape(v, 1, &gn->c);
}

/* A float [N, G] operand. */
static bool hdm_gn_stat_ok(const struct hdm_gn *gn, const struct hdm_kview *v)
{
	uint64_t shape[2] = { gn->n, gn->groups };

	return hdm_dtype_is_float(v->dtype) && hdm_kview_has_shape(v, 2, shape);
}

/* Whether t[o] aliases any of t[from..to). */
static bool hdm_gn_aliases(const struct hdm_kcall *c, unsigned int o, unsigned int from,
			   unsigned int to)
{
	for (unsigned int i = from; i < to; i++)
		if (i != o && hdm_kview_aliases(&c->t[o], &c->t[i]))
			return true;
	return false;
}

/* Row r's elements of v (of in's shape). */
static struct hdm_kview hdm_gn_row(const struct hdm_gn *gn, const struct hdm_kview *v,
				   uint64_t r)
{
	struct hdm_kview w = hdm_kview_drop(v, 1, r % gn->c);

	return hdm_kview_drop(&w, 0, r / gn->c);
}

/* The groups' statistics, after the partials in the scratch. */
static struct hdm_bn_part *hdm_gn_groups(const struct hdm_kcall *c, const struct hdm_gn *gn)
{
	return (struct hdm_bn_part *)c->state->scratch + gn->bn.chans * gn->bn.chunks;
}

/* Row r's group, as n G + g. */
static uint64_t hdm_gn_group_of(const struct hdm_gn *gn, uint64_t r)
{
	return r / gn->c * gn->groups + r % gn->c / gn->cg;
}

/* Phase 0 walks a chunk twice at most, phase 1 once. */
static uint64_t hdm_gn_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_gn gn = hdm_gn_get(c);
	uint64_t len = gn.bn.m < HDM_BN_CHUNK ? gn.bn.m : HDM_BN_CHUNK;

	return hdm_kwork_rows(items, c->state->phase ? len : 2 * len);
}

static uint64_t hdm_gn_item_work(const struct hdm_kcall *c)
{
	return hdm_gn_work(c, 1);
}

/* The partials, one per chunk, and the groups' statistics. */
static uint64_t hdm_gn_scratch(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_gn gn = hdm_gn_get(c);

	(void)items;
	return (gn.bn.chans * gn.bn.chunks + gn.n * gn.groups) * sizeof(struct hdm_bn_part);
}

/* ---- forward ---- */

enum {
	HDM_GN_WEIGHT = 1,
	HDM_GN_BIAS = 2,
};

/* t: out, mean, rstd, in, weight, bias. */
static uint32_t hdm_gn_fwd_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 7;
}

static int hdm_gn_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_gn gn = hdm_gn_get(c);
	int64_t f = c->args[1];

	if (c->num_tensors != 6 || (f & ~3) || !hdm_gn_ok(&gn) ||
	    !hdm_kview_float_like(&c->t[0], gn.bn.in) ||
	    !hdm_gn_stat_ok(&gn, &c->t[1]) || !hdm_gn_stat_ok(&gn, &c->t[2]) ||
	    ((f & HDM_GN_WEIGHT) && !hdm_gn_chan_ok(&gn, &c->t[4])) ||
	    ((f & HDM_GN_BIAS) && !hdm_gn_chan_ok(&gn, &c->t[5])) ||
	    hdm_gn_aliases(c, 1, 0, 6) || hdm_gn_aliases(c, 2, 0, 6) ||
	    !(c->scalars[0] >= 0) || !isfinite(c->scalars[0]))
		return -1;
	items[0] = items[1] = gn.bn.chans * gn.bn.chunks;
	return 0;
}

static void hdm_gn_fwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_gn gn = hdm_gn_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);
	struct hdm_bn_part *part = c->state->scratch, *group = hdm_gn_groups(c, &gn);
	int64_t f = c->args[1];

	for (uint64_t it = begin; it < end && !hdm_kpace(&p, 1); it++) {
		uint64_t r, first, len, ch;
		struct hdm_kview x, out;
		double scale, shift;

		hdm_bn_item(&gn.bn, it, &r, &first, &len);
		x = hdm_gn_row(&gn, gn.bn.in, r);
		if (!c->state->phase) {
			part[it] = hdm_bn_moments(&x, first, len, &p);
			continue;
		}
		ch = r % gn.c;
		scale = group[hdm_gn_group_of(&gn, r)].b *
			(f & HDM_GN_WEIGHT ? hdm_kget(&c->t[4], ch) : 1);
		shift = f & HDM_GN_BIAS ? hdm_kget(&c->t[5], ch) : 0;
		out = hdm_gn_row(&gn, &c->t[0], r);
		hdm_bn_affine(&out, &x, first, len, group[hdm_gn_group_of(&gn, r)].a, scale, shift,
			      &p);
	}
}

/* After phase 0: each group's mean and rstd, kept and written. */
static void hdm_gn_fwd_finish(const struct hdm_kcall *c)
{
	struct hdm_gn gn = hdm_gn_get(c);
	const struct hdm_bn_part *part = c->state->scratch;
	struct hdm_bn_part *group = hdm_gn_groups(c, &gn);

	if (c->state->phase)
		return;
	for (uint64_t ng = 0; ng < gn.n * gn.groups; ng++) {
		struct hdm_bn_join j = { 0 };
		uint64_t k0 = ng * gn.cg * gn.bn.chunks; /* the group's first row's first chunk */

		for (uint64_t k = 0; k < gn.cg * gn.bn.chunks; k++)
			hdm_bn_join(&j, &part[k0 + k],
				    (double)hdm_bn_chunk_len(&gn.bn, k % gn.bn.chunks));
		group[ng] = (struct hdm_bn_part){ j.mean, 1 / sqrt(j.m2 / j.n + c->scalars[0]) };
		hdm_kset(&c->t[1], ng, group[ng].a);
		hdm_kset(&c->t[2], ng, group[ng].b);
	}
}

const struct hdm_kernel_def hdm_kernel_group_norm = {
	.name = "group_norm",
	.min_tensors = 6,
	.max_tensors = 6,
	.outputs = hdm_gn_fwd_outputs,
	.phases = 2,
	.check = hdm_gn_fwd_check,
	.work = hdm_gn_work,
	.item_work = hdm_gn_item_work,
	.scratch = hdm_gn_scratch,
	.run = hdm_gn_fwd_run,
	.finish = hdm_gn_fwd_finish,
};

/* ---- backward ---- */

enum {
	HDM_GN_BWD_WEIGHT = 1,
	HDM_GN_BWD_GRAD_WEIGHT = 2,
	HDM_GN_BWD_GRAD_BIAS = 4,
	HDM_GN_BWD_GRAD_IN = 8,
};

/* t: grad_in, grad_weight, grad_bias, grad_out, in, mean, rstd, weight. */
static uint32_t hdm_gn_bwd_outputs(const struct hdm_kcall *c)
{
	int64_t f = c->args[1];

	return (f & HDM_GN_BWD_GRAD_IN ? 1u : 0) | (f & HDM_GN_BWD_GRAD_WEIGHT ? 2u : 0) |
	       (f & HDM_GN_BWD_GRAD_BIAS ? 4u : 0);
}

/* grad_weight or grad_bias: a float [C] aliasing no other operand. */
static bool hdm_gn_bwd_sum_ok(const struct hdm_kcall *c, const struct hdm_gn *gn, unsigned int o)
{
	return hdm_gn_chan_ok(gn, &c->t[o]) && !hdm_gn_aliases(c, o, 0, 8);
}

static int hdm_gn_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_gn gn = hdm_gn_get(c);
	int64_t f = c->args[1];
	bool grad_in = f & HDM_GN_BWD_GRAD_IN;

	if (c->num_tensors != 8 || (f & ~15) || !hdm_gn_ok(&gn) ||
	    !hdm_kview_float_like(&c->t[3], gn.bn.in) ||
	    !hdm_gn_stat_ok(&gn, &c->t[5]) || !hdm_gn_stat_ok(&gn, &c->t[6]) ||
	    ((f & HDM_GN_BWD_WEIGHT) && !hdm_gn_chan_ok(&gn, &c->t[7])) ||
	    (grad_in && (!hdm_kview_float_like(&c->t[0], gn.bn.in) ||
			 hdm_gn_aliases(c, 0, 5, 8))) ||
	    ((f & HDM_GN_BWD_GRAD_WEIGHT) && !hdm_gn_bwd_sum_ok(c, &gn, 1)) ||
	    ((f & HDM_GN_BWD_GRAD_BIAS) && !hdm_gn_bwd_sum_ok(c, &gn, 2)))
		return -1;
	items[0] = f & ~HDM_GN_BWD_WEIGHT ? gn.bn.chans * gn.bn.chunks : 0;
	items[1] = grad_in ? gn.bn.chans * gn.bn.chunks : 0;
	return 0;
}

/* Row r's group's mean and rstd as the launch gives them. */
static void hdm_gn_bwd_stats(const struct hdm_kcall *c, const struct hdm_gn *gn, uint64_t r,
			     double *mean, double *rstd)
{
	*mean = hdm_kget(&c->t[5], hdm_gn_group_of(gn, r));
	*rstd = hdm_kget(&c->t[6], hdm_gn_group_of(gn, r));
}

static double hdm_gn_bwd_weight(const struct hdm_kcall *c, uint64_t ch)
{
	return c->args[1] & HDM_GN_BWD_WEIGHT ? hdm_kget(&c->t[7], ch) : 1;
}

/*
 * Phase 0: each chunk's sums of grad_out and grad_out * xhat.  Phase 1:
 * grad_in = rstd * (weight * grad_out - mean(dy) - xhat * mean(dy * xhat)),
 * the group's means kept by finish().
 */
static void hdm_gn_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_gn gn = hdm_gn_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);
	struct hdm_bn_part *part = c->state->scratch, *group = hdm_gn_groups(c, &gn);

	for (uint64_t it = begin; it < end && !hdm_kpace(&p, 1); it++) {
		uint64_t r, first, len;
		struct hdm_kview x, g, gi;
		const struct hdm_bn_part *s;
		double mean, rstd;

		hdm_bn_item(&gn.bn, it, &r, &first, &len);
		hdm_gn_bwd_stats(c, &gn, r, &mean, &rstd);
		x = hdm_gn_row(&gn, gn.bn.in, r);
		g = hdm_gn_row(&gn, &c->t[3], r);
		if (!c->state->phase) {
			part[it] = hdm_bn_grad_sums(&g, &x, first, len, mean, rstd, &p);
			continue;
		}
		s = &group[hdm_gn_group_of(&gn, r)];
		gi = hdm_gn_row(&gn, &c->t[0], r);
		hdm_bn_grad_in(&gi, &g, &x, first, len, mean, rstd,
			       (double[3]){ rstd * hdm_gn_bwd_weight(c, r % gn.c), -rstd * s->a,
					    -rstd * s->b }, &p);
	}
}

/* A channel's two sums: its rows' partials, n after n, chunk after chunk. */
static struct hdm_bn_part hdm_gn_chan_sums(const struct hdm_kcall *c, const struct hdm_gn *gn,
					   uint64_t n0, uint64_t n1, uint64_t ch)
{
	const struct hdm_bn_part *part = c->state->scratch;
	struct hdm_bn_part s = { 0, 0 };

	for (uint64_t n = n0; n < n1; n++)
		for (uint64_t k = 0; k < gn->bn.chunks; k++) {
			s.a += part[(n * gn->c + ch) * gn->bn.chunks + k].a;
			s.b += part[(n * gn->c + ch) * gn->bn.chunks + k].b;
		}
	return s;
}

/*
 * After phase 0: grad_weight and grad_bias, and each group's means of dy
 * and dy * xhat (its channels' sums weighted, in order) for phase 1.
 */
static void hdm_gn_bwd_finish(const struct hdm_kcall *c)
{
	struct hdm_gn gn = hdm_gn_get(c);
	struct hdm_bn_part *group = hdm_gn_groups(c, &gn);
	int64_t f = c->args[1];
	double m = (double)(gn.cg * gn.bn.m);

	if (c->state->phase)
		return;
	for (uint64_t ch = 0; ch < gn.c && (f & 6); ch++) {
		struct hdm_bn_part s = hdm_gn_chan_sums(c, &gn, 0, gn.n, ch);

		if (f & HDM_GN_BWD_GRAD_WEIGHT)
			hdm_kset(&c->t[1], ch, s.b);
		if (f & HDM_GN_BWD_GRAD_BIAS)
			hdm_kset(&c->t[2], ch, s.a);
	}
	for (uint64_t ng = 0; ng < gn.n * gn.groups && (f & HDM_GN_BWD_GRAD_IN); ng++) {
		uint64_t n = ng / gn.groups, ch0 = ng % gn.groups * gn.cg;
		struct hdm_bn_part s = { 0, 0 };

		for (uint64_t ch = ch0; ch < ch0 + gn.cg; ch++) {
			struct hdm_bn_part cs = hdm_gn_chan_sums(c, &gn, n, n + 1, ch);
			double w = hdm_gn_bwd_weight(c, ch);

			s.a += w * cs.a;
			s.b += w * cs.b;
		}
		group[ng] = (struct hdm_bn_part){ s.a / m, s.b / m };
	}
}

const struct hdm_kernel_def hdm_kernel_group_norm_bwd = {
	.name = "group_norm_bwd",
	.min_tensors = 8,
	.max_tensors = 8,
	.outputs = hdm_gn_bwd_outputs,
	.phases = 2,
	.check = hdm_gn_bwd_check,
	.work = hdm_gn_work,
	.item_work = hdm_gn_item_work,
	.scratch = hdm_gn_scratch,
	.run = hdm_gn_bwd_run,
	.finish = hdm_gn_bwd_finish,
};
