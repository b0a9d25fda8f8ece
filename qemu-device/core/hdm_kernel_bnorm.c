/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: batch norm and its backward over in [N, C, ...],
 * channel by channel.  A channel's elements (in's order over every dim but
 * C) are walked in chunks of HPU_BNORM_CHUNK, each a work item.  Phase 0
 * leaves each chunk's partial statistics in the scratch (training, or the
 * backward's sums); phase 1's items are the chunks again, each joining its
 * channel's partials in order, so every chunk (and the split of the
 * launch) sees the same statistics, then writing its chunk; a channel's
 * first chunk also writes its per-channel outputs.
 */
#include "hdm_kernel_nn.h"

/* The launch's in: t[3] of the forward, t[4] of the backward. */
static struct hdm_bn hdm_bn_get(const struct hdm_kcall *c)
{
	struct hdm_bn bn = { .in = &c->t[c->kernel == HPU_KERNEL_BATCH_NORM ? 3 : 4] };

	bn.chans = bn.in->ndim >= 2 ? bn.in->shape[1] : 0;
	bn.m = bn.chans ? hdm_kview_numel(bn.in) / bn.chans : 0;
	bn.chunks = hdm_bn_chunks(bn.m);
	return bn;
}

/* A float [C] operand (weight, bias, statistics). */
static bool hdm_bn_chan_ok(const struct hdm_bn *bn, const struct hdm_kview *v)
{
	return hdm_dtype_is_float(v->dtype) && hdm_kview_has_shape(v, 1, &bn->chans);
}

/* in float, of at least 2 dims, C >= 1 and chunks within the scratch's bound. */
static bool hdm_bn_ok(const struct hdm_bn *bn)
{
	return bn->in->ndim >= 2 && hdm_dtype_is_float(bn->in->dtype) && bn->chans &&
	       bn->chans <= HDM_BN_MAX_PARTS / bn->chunks;
}

struct hdm_kview hdm_kview_drop(const struct hdm_kview *v, uint32_t dim, uint64_t i)
{
	struct hdm_kview w = *v;

	w.base += (int64_t)i * v->strides[dim] * (int64_t)hdm_dtype_size(v->dtype);
	for (uint32_t d = dim; d + 1 < HPU_TENSOR_MAX_DIMS; d++) {
		w.shape[d] = v->shape[d + 1];
		w.strides[d] = v->strides[d + 1];
	}
	w.shape[HPU_TENSOR_MAX_DIMS - 1] = 1;
	w.strides[HPU_TENSOR_MAX_DIMS - 1] = 0;
	w.ndim = v->ndim - 1;
	return w;
}

void hdm_bn_item(const struct hdm_bn *bn, uint64_t it, uint64_t *ch, uint64_t *first,
		 uint64_t *len)
{
	*ch = it / bn->chunks;
	*first = it % bn->chunks * HDM_BN_CHUNK;
	*len = hdm_bn_chunk_len(bn, it % bn->chunks);
}

/* Phase 0 or 1 items: one per chunk; phase 0 only when it has partials to leave. */
static void hdm_bn_items(const struct hdm_bn *bn, bool parts, uint64_t *items)
{
	items[0] = parts ? bn->chans * bn->chunks : 0;
	items[1] = bn->chans * bn->chunks;
}

/* Phase 0 walks its chunk twice at most; phase 1 joins the partials and walks it once. */
static uint64_t hdm_bn_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_bn bn = hdm_bn_get(c);
	uint64_t len = bn.m < HDM_BN_CHUNK ? bn.m : HDM_BN_CHUNK;

	if (!c->state->phase)
		return hdm_kwork_rows(items, 2 * len);
	return hdm_kwork_rows(items, len + bn.chunks);
}

static uint64_t hdm_bn_item_work(const struct hdm_kcall *c)
{
	return hdm_bn_work(c, 1);
}

static uint64_t hdm_bn_scratch(const struct hdm_kcall *c, uint64_t items)
{
	(void)c;
	return hdm_kmul_sat(items, sizeof(struct hdm_bn_part));
}

/* ---- forward ---- */

enum {
	HDM_BN_WEIGHT = 1,
	HDM_BN_BIAS = 2,
	HDM_BN_TRAINING = 4,
	HDM_BN_RUNNING = 8,
};

/* t: out, save_mean, save_invstd, in, weight, bias, running_mean, running_var. */
static uint32_t hdm_bn_fwd_outputs(const struct hdm_kcall *c)
{
	int64_t f = c->args[0];

	return 7u | ((f & HDM_BN_TRAINING) && (f & HDM_BN_RUNNING) ? 0xc0u : 0);
}

/* The statistics' outputs may not be read as running statistics. */
static bool hdm_bn_fwd_aliases(const struct hdm_kcall *c)
{
	for (unsigned int o = 1; o < 3; o++)
		for (unsigned int i = 3; i < 8; i++)
			if (hdm_kview_aliases(&c->t[o], &c->t[i]))
				return true;
	return hdm_kview_aliases(&c->t[1], &c->t[2]);
}

static int hdm_bn_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_bn bn = hdm_bn_get(c);
	int64_t f = c->args[0];
	bool running = f & HDM_BN_RUNNING, training = f & HDM_BN_TRAINING;

	if (c->num_tensors != 8 || (f & ~15) || !hdm_bn_ok(&bn) ||
	    !hdm_kview_float_like(&c->t[0], bn.in) ||
	    c->t[1].dtype != HPU_DTYPE_F32 || !hdm_kview_has_shape(&c->t[1], 1, &bn.chans) ||
	    c->t[2].dtype != HPU_DTYPE_F32 || !hdm_kview_has_shape(&c->t[2], 1, &bn.chans) ||
	    ((f & HDM_BN_WEIGHT) && !hdm_bn_chan_ok(&bn, &c->t[4])) ||
	    ((f & HDM_BN_BIAS) && !hdm_bn_chan_ok(&bn, &c->t[5])) ||
	    (running && (!hdm_bn_chan_ok(&bn, &c->t[6]) || !hdm_bn_chan_ok(&bn, &c->t[7]) ||
			 hdm_kview_aliases(&c->t[6], &c->t[7]))) ||
	    (!training && !running) || (training && !bn.m) || hdm_bn_fwd_aliases(c) ||
	    !(c->scalars[0] >= 0) || !isfinite(c->scalars[0]) || !isfinite(c->scalars[1]))
		return -1;
	hdm_bn_items(&bn, training, items);
	return 0;
}

/* Phase 0: each chunk's mean and sum of squared deviations from it (two passes). */
static void hdm_bn_fwd_parts(const struct hdm_kcall *c, const struct hdm_bn *bn, uint64_t begin,
			     uint64_t end, struct hdm_kpace *p)
{
	struct hdm_bn_part *part = c->state->scratch;

	for (uint64_t it = begin; it < end && !hdm_kpace(p, 1); it++) {
		uint64_t ch, first, len;
		struct hdm_kview x;

		hdm_bn_item(bn, it, &ch, &first, &len);
		x = hdm_kview_drop(bn->in, 1, ch);
		part[it] = hdm_bn_moments(&x, first, len, p);
	}
}

struct hdm_bn_part hdm_bn_moments(const struct hdm_kview *x, uint64_t first, uint64_t len,
				  struct hdm_kpace *p)
{
	double mean = 0, m2 = 0;
	struct hdm_kcur k;

	hdm_kcur_init(&k, x, first);
	hdm_kfor(p, j, len) {
		mean += hdm_kcur_get(&k);
		hdm_kcur_next(&k);
	}
	mean /= (double)len;
	hdm_kcur_init(&k, x, first);
	hdm_kfor(p, j, len) {
		double d = hdm_kcur_get(&k) - mean;

		m2 += d * d;
		hdm_kcur_next(&k);
	}
	return (struct hdm_bn_part){ mean, m2 };
}

void hdm_bn_join(struct hdm_bn_join *j, const struct hdm_bn_part *part, double nk)
{
	double delta = part->a - j->mean;

	j->mean += delta * nk / (j->n + nk);
	j->m2 += part->b + delta * delta * j->n * nk / (j->n + nk);
	j->n += nk;
}

/* Channel ch's mean and squared deviations: its chunks' joined in order (Chan et al.). */
static void hdm_bn_join_stats(const struct hdm_kcall *c, const struct hdm_bn *bn, uint64_t ch,
			      double *mean, double *m2)
{
	const struct hdm_bn_part *part = (const struct hdm_bn_part *)c->state->scratch +
					 ch * bn->chunks;
	struct hdm_bn_join j = { 0 };

	for (uint64_t k = 0; k < bn->chunks; k++)
		hdm_bn_join(&j, &part[k], hdm_bn_chunk_len(bn, k));
	*mean = j.mean;
	*m2 = j.m2;
}

/*
 * Channel ch's mean and invstd for phase 1: the batch's (and a first chunk
 * updates the running statistics with them), or the running ones.
 */
static void hdm_bn_fwd_stats(const struct hdm_kcall *c, const struct hdm_bn *bn, uint64_t ch,
			     bool first, double *mean, double *invstd)
{
	int64_t f = c->args[0];
	double eps = c->scalars[0], mom = c->scalars[1], m2;

	if (!(f & HDM_BN_TRAINING)) {
		*mean = hdm_kget(&c->t[6], ch);
		*invstd = 1 / sqrt(hdm_kget(&c->t[7], ch) + eps);
		return;
	}
	hdm_bn_join_stats(c, bn, ch, mean, &m2);
	*invstd = 1 / sqrt(m2 / (double)bn->m + eps);
	if (first && (f & HDM_BN_RUNNING)) {
		/* Unbiased, as torch: one element per channel gives NaN (0 / 0). */
		double var = m2 / (double)(bn->m - 1);

		hdm_kset(&c->t[6], ch, (1 - mom) * hdm_kget(&c->t[6], ch) + mom * *mean);
		hdm_kset(&c->t[7], ch, (1 - mom) * hdm_kget(&c->t[7], ch) + mom * var);
	}
}

/* Phase 1: out = (x - mean) * invstd * weight + bias over each chunk. */
static void hdm_bn_fwd_norm(const struct hdm_kcall *c, const struct hdm_bn *bn, uint64_t begin,
			    uint64_t end, struct hdm_kpace *p)
{
	int64_t f = c->args[0];

	for (uint64_t it = begin; it < end && !hdm_kpace(p, bn->chunks); it++) {
		uint64_t ch, first, len;
		double mean, invstd, scale, shift;
		struct hdm_kview x, out;

		hdm_bn_item(bn, it, &ch, &first, &len);
		hdm_bn_fwd_stats(c, bn, ch, !first, &mean, &invstd);
		if (!first) {
			hdm_kset(&c->t[1], ch, mean);
			hdm_kset(&c->t[2], ch, invstd);
		}
		scale = invstd * (f & HDM_BN_WEIGHT ? hdm_kget(&c->t[4], ch) : 1);
		shift = f & HDM_BN_BIAS ? hdm_kget(&c->t[5], ch) : 0;
		x = hdm_kview_drop(bn->in, 1, ch);
		out = hdm_kview_drop(&c->t[0], 1, ch);
		hdm_bn_affine(&out, &x, first, len, mean, scale, shift, p);
	}
}

void hdm_bn_affine(const struct hdm_kview *out, const struct hdm_kview *x, uint64_t first,
		   uint64_t len, double mean, double scale, double shift, struct hdm_kpace *p)
{
	struct hdm_kcur kx, ko;

	hdm_kcur_init(&kx, x, first);
	hdm_kcur_init(&ko, out, first);
	hdm_kfor(p, j, len) {
		hdm_kcur_set(&ko, (hdm_kcur_get(&kx) - mean) * scale + shift);
		hdm_kcur_next(&kx);
		hdm_kcur_next(&ko);
	}
}

static void hdm_bn_fwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_bn bn = hdm_bn_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	if (c->state->phase)
		hdm_bn_fwd_norm(c, &bn, begin, end, &p);
	else
		hdm_bn_fwd_parts(c, &bn, begin, end, &p);
}

const struct hdm_kernel_def hdm_kernel_batch_norm = {
	.name = "batch_norm",
	.min_tensors = 8,
	.max_tensors = 8,
	.outputs = hdm_bn_fwd_outputs,
	.phases = 2,
	.check = hdm_bn_fwd_check,
	.work = hdm_bn_work,
	.item_work = hdm_bn_item_work,
	.scratch = hdm_bn_scratch,
	.run = hdm_bn_fwd_run,
};

/* ---- backward ---- */

enum {
	HDM_BN_BWD_WEIGHT = 1,
	HDM_BN_BWD_GRAD_WEIGHT = 2,
	HDM_BN_BWD_GRAD_BIAS = 4,
	HDM_BN_BWD_TRAINING = 8,
	HDM_BN_BWD_VAR = 16,
};

/* t: grad_in, grad_weight, grad_bias, grad_out, in, mean, invstd, weight. */
static uint32_t hdm_bn_bwd_outputs(const struct hdm_kcall *c)
{
	return 1u | (c->args[0] & HDM_BN_BWD_GRAD_WEIGHT ? 2u : 0) |
	       (c->args[0] & HDM_BN_BWD_GRAD_BIAS ? 4u : 0);
}

/* Whether phase 0 sums grad_out and grad_out * xhat. */
static bool hdm_bn_bwd_sums(const struct hdm_kcall *c)
{
	return c->args[0] & (HDM_BN_BWD_GRAD_WEIGHT | HDM_BN_BWD_GRAD_BIAS | HDM_BN_BWD_TRAINING);
}

/* grad_weight and grad_bias (when written) a float [C] that is no input. */
static bool hdm_bn_bwd_sum_ok(const struct hdm_kcall *c, const struct hdm_bn *bn, unsigned int o)
{
	if (!hdm_bn_chan_ok(bn, &c->t[o]))
		return false;
	for (unsigned int i = 3; i < 8; i++)
		if (hdm_kview_aliases(&c->t[o], &c->t[i]))
			return false;
	return true;
}

static int hdm_bn_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_bn bn = hdm_bn_get(c);
	int64_t f = c->args[0];

	if (c->num_tensors != 8 || (f & ~31) || !hdm_bn_ok(&bn) ||
	    !hdm_kview_float_like(&c->t[0], bn.in) || !hdm_kview_float_like(&c->t[3], bn.in) ||
	    !hdm_bn_chan_ok(&bn, &c->t[5]) || !hdm_bn_chan_ok(&bn, &c->t[6]) ||
	    ((f & HDM_BN_BWD_WEIGHT) && !hdm_bn_chan_ok(&bn, &c->t[7])) ||
	    ((f & HDM_BN_BWD_GRAD_WEIGHT) && !hdm_bn_bwd_sum_ok(c, &bn, 1)) ||
	    ((f & HDM_BN_BWD_GRAD_BIAS) && !hdm_bn_bwd_sum_ok(c, &bn, 2)) ||
	    ((f & HDM_BN_BWD_GRAD_WEIGHT) && (f & HDM_BN_BWD_GRAD_BIAS) &&
	     hdm_kview_aliases(&c->t[1], &c->t[2])) ||
	    ((f & HDM_BN_BWD_TRAINING) && !bn.m) || !(c->scalars[0] >= 0) ||
	    !isfinite(c->scalars[0]))
		return -1;
	hdm_bn_items(&bn, hdm_bn_bwd_sums(c), items);
	return 0;
}

/* Channel ch's mean and invstd as the launch gives them. */
static void hdm_bn_bwd_stats(const struct hdm_kcall *c, uint64_t ch, double *mean, double *invstd)
{
	double v = hdm_kget(&c->t[6], ch);

	*mean = hdm_kget(&c->t[5], ch);
	*invstd = c->args[0] & HDM_BN_BWD_VAR ? 1 / sqrt(v + c->scalars[0]) : v;
}

/* Phase 0: each chunk's sums of grad_out and of grad_out * xhat. */
static void hdm_bn_bwd_parts(const struct hdm_kcall *c, const struct hdm_bn *bn, uint64_t begin,
			     uint64_t end, struct hdm_kpace *p)
{
	struct hdm_bn_part *part = c->state->scratch;

	for (uint64_t it = begin; it < end && !hdm_kpace(p, 1); it++) {
		uint64_t ch, first, len;
		double mean, invstd;
		struct hdm_kview x, g;

		hdm_bn_item(bn, it, &ch, &first, &len);
		hdm_bn_bwd_stats(c, ch, &mean, &invstd);
		x = hdm_kview_drop(bn->in, 1, ch);
		g = hdm_kview_drop(&c->t[3], 1, ch);
		part[it] = hdm_bn_grad_sums(&g, &x, first, len, mean, invstd, p);
	}
}

struct hdm_bn_part hdm_bn_grad_sums(const struct hdm_kview *g, const struct hdm_kview *x,
				    uint64_t first, uint64_t len, double mean, double invstd,
				    struct hdm_kpace *p)
{
	double sg = 0, sgx = 0;
	struct hdm_kcur kx, kg;

	hdm_kcur_init(&kx, x, first);
	hdm_kcur_init(&kg, g, first);
	hdm_kfor(p, j, len) {
		double gv = hdm_kcur_get(&kg);

		sg += gv;
		sgx += gv * (hdm_kcur_get(&kx) - mean) * invstd;
		hdm_kcur_next(&kx);
		hdm_kcur_next(&kg);
	}
	return (struct hdm_bn_part){ sg, sgx };
}

/*
 * Phase 1: with xhat = (x - mean) * invstd, grad_in = weight * invstd *
 * (grad_out - sum(grad_out) / m - xhat * sum(grad_out * xhat) / m) in
 * training, weight * invstd * grad_out otherwise.
 */
static void hdm_bn_bwd_grads(const struct hdm_kcall *c, const struct hdm_bn *bn, uint64_t begin,
			     uint64_t end, struct hdm_kpace *p)
{
	const struct hdm_bn_part *part = c->state->scratch;
	int64_t f = c->args[0];

	for (uint64_t it = begin; it < end && !hdm_kpace(p, bn->chunks); it++) {
		uint64_t ch, first, len;
		double mean, invstd, scale, sg = 0, sgx = 0;
		struct hdm_kview x, g, gi;

		hdm_bn_item(bn, it, &ch, &first, &len);
		hdm_bn_bwd_stats(c, ch, &mean, &invstd);
		if (hdm_bn_bwd_sums(c)) {
			for (uint64_t k = 0; k < bn->chunks; k++) {
				sg += part[ch * bn->chunks + k].a;
				sgx += part[ch * bn->chunks + k].b;
			}
		}
		if (!first && (f & HDM_BN_BWD_GRAD_WEIGHT))
			hdm_kset(&c->t[1], ch, sgx);
		if (!first && (f & HDM_BN_BWD_GRAD_BIAS))
			hdm_kset(&c->t[2], ch, sg);
		if (!(f & HDM_BN_BWD_TRAINING))
			sg = sgx = 0;
		sg /= (double)(bn->m ? bn->m : 1);
		sgx /= (double)(bn->m ? bn->m : 1);
		scale = invstd * (f & HDM_BN_BWD_WEIGHT ? hdm_kget(&c->t[7], ch) : 1);
		x = hdm_kview_drop(bn->in, 1, ch);
		g = hdm_kview_drop(&c->t[3], 1, ch);
		gi = hdm_kview_drop(&c->t[0], 1, ch);
		hdm_bn_grad_in(&gi, &g, &x, first, len, mean, invstd,
			       (double[3]){ scale, -scale * sg, -scale * sgx }, p);
	}
}

void hdm_bn_grad_in(const struct hdm_kview *gi, const struct hdm_kview *g,
		    const struct hdm_kview *x, uint64_t first, uint64_t len, double mean,
		    double invstd, const double k[3], struct hdm_kpace *p)
{
	struct hdm_kcur kx, kg, ki;

	hdm_kcur_init(&kx, x, first);
	hdm_kcur_init(&kg, g, first);
	hdm_kcur_init(&ki, gi, first);
	hdm_kfor(p, j, len) {
		double xhat = (hdm_kcur_get(&kx) - mean) * invstd;

		hdm_kcur_set(&ki, k[0] * hdm_kcur_get(&kg) + k[1] + k[2] * xhat);
		hdm_kcur_next(&kx);
		hdm_kcur_next(&kg);
		hdm_kcur_next(&ki);
	}
}

static void hdm_bn_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_bn bn = hdm_bn_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	if (c->state->phase)
		hdm_bn_bwd_grads(c, &bn, begin, end, &p);
	else
		hdm_bn_bwd_parts(c, &bn, begin, end, &p);
}

const struct hdm_kernel_def hdm_kernel_batch_norm_bwd = {
	.name = "batch_norm_bwd",
	.min_tensors = 8,
	.max_tensors = 8,
	.outputs = hdm_bn_bwd_outputs,
	.phases = 2,
	.check = hdm_bn_bwd_check,
	.work = hdm_bn_work,
	.item_work = hdm_bn_item_work,
	.scratch = hdm_bn_scratch,
	.run = hdm_bn_bwd_run,
};
