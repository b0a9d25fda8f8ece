/* SPDX-License-Identifier: MIT */
/*
 * FOREACH kernels: an optimizer step over a list of parameters in one
 * launch (SGD, AdamW, Adadelta, LAMB) with the learning rate and the step
 * count read from device scalars, so that a schedule changes no launch and
 * a replayed graph follows it; and a norm clip over any number of tensors,
 * whose NORM launches add partials to an accumulator on the device in a
 * fixed order before CLIP launches scale by the total.  The element steps
 * are torch.optim's (hdm_kernel_optim.h).
 */
#include "hdm_kernel_optim.h"

/* a0 bits. */
#define HDM_FE_LAST 1		  /* the step's last launch: finish() advances step */
#define HDM_FE_NESTEROV 2	  /* FOREACH_SGD */
#define HDM_FE_BIAS_CORRECTION 2 /* FOREACH_LAMB */
#define HDM_FE_GRAD_AVERAGING 4	  /* FOREACH_LAMB */
#define HDM_FE_RESET 1		  /* FOREACH_NORM: acc starts at 0 */

/* The optimizers' operands: lr, step, then a group of this many tensors per parameter. */
#define HDM_FE_FIRST 2

static unsigned int hdm_fe_width(const struct hdm_kcall *c)
{
	if (c->kernel != HPU_KERNEL_FOREACH_SGD)
		return 4;
	return c->scalars[0] != 0 ? 3 : 2; /* no momentum: no buffer */
}

static unsigned int hdm_fe_groups(const struct hdm_kcall *c)
{
	return (c->num_tensors - HDM_FE_FIRST) / hdm_fe_width(c);
}

static bool hdm_fe_scalar(const struct hdm_kview *v, bool or_i64)
{
	return v->ndim == 0 && (v->dtype == HPU_DTYPE_F32 || (or_i64 && v->dtype == HPU_DTYPE_I64));
}

static bool hdm_fe_in(double x, double lo, double hi, bool hi_open)
{
	return x >= lo && (hi_open ? x < hi : x <= hi);
}

/* ---- chunks: t[first], t[first + stride], ... each cut in HPU_CLIP_CHUNK elements ---- */

static uint64_t hdm_fe_chunks_of(uint64_t n)
{
	return (n + HPU_CLIP_CHUNK - 1) / HPU_CLIP_CHUNK;
}

static uint64_t hdm_fe_chunks(const struct hdm_kcall *c, unsigned int first, unsigned int stride)
{
	uint64_t chunks = 0;

	for (unsigned int i = first; i < c->num_tensors; i += stride)
		chunks += hdm_fe_chunks_of(hdm_kview_numel(&c->t[i]));
	return chunks;
}

/* Chunk k: its tensor's index, its first element (*start) and how many it has (*n). */
static unsigned int hdm_fe_chunk(const struct hdm_kcall *c, unsigned int first,
				 unsigned int stride, uint64_t k, uint64_t *start, uint64_t *n)
{
	unsigned int i;

	for (i = first;; i += stride) {
		uint64_t numel = hdm_kview_numel(&c->t[i]), chunks = hdm_fe_chunks_of(numel);

		if (k < chunks) {
			*start = k * HPU_CLIP_CHUNK;
			*n = numel - *start < HPU_CLIP_CHUNK ? numel - *start : HPU_CLIP_CHUNK;
			return i;
		}
		k -= chunks;
	}
}

/* The elements of the chunked tensors: an elementwise pass's work. */
static uint64_t hdm_fe_numel(const struct hdm_kcall *c, unsigned int first, unsigned int stride)
{
	uint64_t n = 0;

	for (unsigned int i = first; i < c->num_tensors; i += stride)
		n += hdm_kview_numel(&c->t[i]);
	return n;
}

/* The longest chunk. */
static uint64_t hdm_fe_longest(const struct hdm_kcall *c, unsigned int first, unsigned int stride)
{
	uint64_t most = 0;

	for (unsigned int i = first; i < c->num_tensors; i += stride) {
		uint64_t n = hdm_kview_numel(&c->t[i]);

		if (n > most)
			most = n < HPU_CLIP_CHUNK ? n : HPU_CLIP_CHUNK;
	}
	return most;
}

/* ---- the optimizers ---- */

/* Params, and the step when this launch advances it. */
static uint32_t hdm_fe_outputs(const struct hdm_kcall *c)
{
	unsigned int w = hdm_fe_width(c), n = hdm_fe_groups(c);
	uint32_t group = w == 2 ? 1 : ((1u << w) - 1) & ~2u, out = 0;

	for (unsigned int g = 0; g < n; g++)
		out |= group << (HDM_FE_FIRST + g * w);
	return out | (c->args[0] & HDM_FE_LAST ? 2 : 0);
}

/*
 * lr and step scalars, then whole groups of float tensors of their
 * param's shape; flags the a0 bits the kernel knows.  Items: elements.
 */
static int hdm_fe_check(const struct hdm_kcall *c, int64_t flags, uint64_t *items)
{
	unsigned int w = hdm_fe_width(c);

	if (c->num_tensors < HDM_FE_FIRST + w || (c->num_tensors - HDM_FE_FIRST) % w ||
	    !hdm_fe_scalar(&c->t[0], false) || !hdm_fe_scalar(&c->t[1], true) ||
	    (c->args[0] & ~flags))
		return -1;
	for (unsigned int i = HDM_FE_FIRST; i < c->num_tensors; i += w) {
		if (!hdm_dtype_is_float(c->t[i].dtype))
			return -1;
		for (unsigned int j = 1; j < w; j++)
			if (!hdm_kview_float_like(&c->t[i + j], &c->t[i]))
				return -1;
	}
	*items = hdm_fe_numel(c, HDM_FE_FIRST, w);
	return 0;
}

/* Beta1, beta2, eps and weight decay in s[0..4), as torch.optim.AdamW takes them. */
static bool hdm_fe_adam_scalars(const double *s)
{
	return hdm_fe_in(s[0], 0, 1, true) && hdm_fe_in(s[1], 0, 1, true) &&
	       hdm_fe_in(s[2], 0, INFINITY, false) && hdm_fe_in(s[3], 0, INFINITY, false);
}

static double hdm_fe_lr(const struct hdm_kcall *c)
{
	return hdm_kget(&c->t[0], 0);
}

/* The step this launch takes, from 1. */
static double hdm_fe_step(const struct hdm_kcall *c)
{
	return hdm_kget(&c->t[1], 0) + 1;
}

/*
 * Elements [begin, end) of the params' in order through f, each group of w
 * (a constant: hdm_kwalk() unrolls by it) as the operands t[0, w) of a
 * call of its own.
 */
static inline __attribute__((always_inline)) void
hdm_fe_walk(const struct hdm_kcall *c, unsigned int w, uint64_t begin, uint64_t end,
	    hdm_kel_fn *f, const void *ctx)
{
	struct hdm_kpace p = hdm_kpace_start(c);
	struct hdm_kcall sub;
	uint64_t off = 0;

	for (unsigned int i = HDM_FE_FIRST; i < c->num_tensors && off < end; i += w) {
		uint64_t len = hdm_kview_numel(&c->t[i]);
		uint64_t b = begin > off ? begin - off : 0, e = end - off < len ? end - off : len;

		if (b < e) {
			memcpy(sub.t, &c->t[i], w * sizeof(sub.t[0]));
			if (hdm_kwalk(&sub, w, b, e, f, ctx, hdm_kwalk_f32, &p))
				return;
		}
		off += len;
	}
}

/* The step's last launch counts it. */
static void hdm_fe_finish(const struct hdm_kcall *c)
{
	const struct hdm_kview *step = &c->t[1];

	if (!(c->args[0] & HDM_FE_LAST))
		return;
	if (step->dtype == HPU_DTYPE_I64) /* wraps: the count is the process's data */
		hdm_kstore_i(step->dtype, step->base,
			     (int64_t)((uint64_t)hdm_kload_i(step->dtype, step->base) + 1));
	else
		hdm_kstore_f(step->dtype, step->base, hdm_kload_f(step->dtype, step->base) + 1);
}

/* s: momentum, dampening, weight_decay, with torch.optim.SGD's bounds. */
static int hdm_fe_sgd_check(const struct hdm_kcall *c, uint64_t *items)
{
	const double *s = c->scalars;

	if (!hdm_fe_in(s[0], 0, INFINITY, false) || !isfinite(s[1]) ||
	    !hdm_fe_in(s[2], 0, INFINITY, false) ||
	    ((c->args[0] & HDM_FE_NESTEROV) && (s[0] == 0 || s[1] != 0)))
		return -1;
	return hdm_fe_check(c, HDM_FE_LAST | HDM_FE_NESTEROV, items);
}

HDM_KERNEL_AVX2 static void hdm_fe_sgd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const double *s = c->scalars;
	const struct hdm_sgd o = { hdm_fe_lr(c), s[0], s[1], s[2], c->args[0] & HDM_FE_NESTEROV,
				   hdm_fe_step(c) == 1 };

	if (o.momentum != 0)
		hdm_fe_walk(c, 3, begin, end, hdm_sgd_el, &o);
	else
		hdm_fe_walk(c, 2, begin, end, hdm_sgd_el, &o);
}

const struct hdm_kernel_def hdm_kernel_foreach_sgd = {
	.name = "foreach_sgd",
	.min_tensors = HDM_FE_FIRST + 2,
	.max_tensors = HPU_KERNEL_MAX_TENSORS,
	.outputs = hdm_fe_outputs,
	.check = hdm_fe_sgd_check,
	.run = hdm_fe_sgd_run,
	.finish = hdm_fe_finish,
};

static int hdm_fe_adamw_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (!hdm_fe_adam_scalars(c->scalars))
		return -1;
	return hdm_fe_check(c, HDM_FE_LAST, items);
}

HDM_KERNEL_AVX2 static void hdm_fe_adamw_run(const struct hdm_kcall *c, uint64_t begin,
					     uint64_t end)
{
	const double *s = c->scalars;
	const struct hdm_adamw o = hdm_adamw_at(hdm_fe_lr(c), s[0], s[1], s[2], s[3],
						hdm_fe_step(c));

	hdm_fe_walk(c, 4, begin, end, hdm_adamw_el, &o);
}

const struct hdm_kernel_def hdm_kernel_foreach_adamw = {
	.name = "foreach_adamw",
	.min_tensors = HDM_FE_FIRST + 4,
	.max_tensors = HPU_KERNEL_MAX_TENSORS,
	.outputs = hdm_fe_outputs,
	.check = hdm_fe_adamw_check,
	.run = hdm_fe_adamw_run,
	.finish = hdm_fe_finish,
};

/* s: rho, eps, weight_decay, with torch.optim.Adadelta's bounds. */
static int hdm_fe_adadelta_check(const struct hdm_kcall *c, uint64_t *items)
{
	const double *s = c->scalars;

	if (!hdm_fe_in(s[0], 0, 1, false) || !hdm_fe_in(s[1], 0, INFINITY, false) ||
	    !hdm_fe_in(s[2], 0, INFINITY, false))
		return -1;
	return hdm_fe_check(c, HDM_FE_LAST, items);
}

HDM_KERNEL_AVX2 static void hdm_fe_adadelta_run(const struct hdm_kcall *c, uint64_t begin,
						uint64_t end)
{
	const double *s = c->scalars;
	const struct hdm_adadelta o = { hdm_fe_lr(c), s[0], s[1], s[2] };

	hdm_fe_walk(c, 4, begin, end, hdm_adadelta_el, &o);
}

const struct hdm_kernel_def hdm_kernel_foreach_adadelta = {
	.name = "foreach_adadelta",
	.min_tensors = HDM_FE_FIRST + 4,
	.max_tensors = HPU_KERNEL_MAX_TENSORS,
	.outputs = hdm_fe_outputs,
	.check = hdm_fe_adadelta_check,
	.run = hdm_fe_adadelta_run,
	.finish = hdm_fe_finish,
};

/* ---- LAMB ---- */

/*
 * Phase 0 leaves each chunk's sums of squares of p and of its update u,
 * and its finish() joins them per param in chunk order into the trust
 * ratios phase 1 steps by.
 */
struct hdm_lamb_scratch {
	double ratio[HPU_KERNEL_MAX_TENSORS]; /* per group */
	double partial[][2];		       /* per chunk: sum p^2, sum u^2 */
};

#define HDM_LAMB_MAX_CHUNKS \
	((HPU_KERNEL_MAX_TENSORS / 4) * (HPU_KERNEL_MAX_ELEMENTS / HPU_CLIP_CHUNK + 1))
_Static_assert(sizeof(struct hdm_lamb_scratch) + HDM_LAMB_MAX_CHUNKS * 2 * sizeof(double) <=
	       HDM_KERNEL_SCRATCH_MAX, "LAMB's partials fit the scratch");

struct hdm_lamb {
	double beta1, beta2, beta3, eps, wd, bc1, bc2;
};

static struct hdm_lamb hdm_lamb_of(const struct hdm_kcall *c)
{
	const double *s = c->scalars;
	bool bias = c->args[0] & HDM_FE_BIAS_CORRECTION;
	double t = hdm_fe_step(c);

	return (struct hdm_lamb){ s[0], s[1], c->args[0] & HDM_FE_GRAD_AVERAGING ? 1 - s[0] : 1,
				  s[2], s[3], bias ? 1 - pow(s[0], t) : 1,
				  bias ? 1 - pow(s[1], t) : 1 };
}

/* The update of param p from its moments m and v as stored. */
static double hdm_lamb_update(const struct hdm_lamb *o, double p, double m, double v)
{
	return m / o->bc1 / (sqrt(v / o->bc2) + o->eps) + o->wd * p;
}

static int hdm_fe_lamb_check(const struct hdm_kcall *c, uint64_t *items)
{
	int ret = hdm_fe_adam_scalars(c->scalars) ? hdm_fe_check(c, HDM_FE_LAST |
				HDM_FE_BIAS_CORRECTION | HDM_FE_GRAD_AVERAGING, items) : -1;

	if (!ret)
		items[0] = items[1] = hdm_fe_chunks(c, HDM_FE_FIRST, 4);
	return ret;
}

/* Each param's elements once a phase. */
static uint64_t hdm_fe_lamb_work(const struct hdm_kcall *c, uint64_t items)
{
	(void)items;
	return hdm_fe_numel(c, HDM_FE_FIRST, 4);
}

static uint64_t hdm_fe_lamb_item_work(const struct hdm_kcall *c)
{
	return hdm_fe_longest(c, HDM_FE_FIRST, 4);
}

static uint64_t hdm_fe_lamb_scratch(const struct hdm_kcall *c, uint64_t items)
{
	(void)c;
	return sizeof(struct hdm_lamb_scratch) + items * 2 * sizeof(double);
}

/* Chunk it: phase 0 steps the moments and sums the squares, phase 1 steps the param. */
static void hdm_lamb_chunk(const struct hdm_kcall *c, const struct hdm_lamb *o, double lr,
			   uint64_t it, struct hdm_kpace *pace)
{
	struct hdm_lamb_scratch *s = c->state->scratch;
	uint64_t start = 0, n = 0;
	unsigned int i = hdm_fe_chunk(c, HDM_FE_FIRST, 4, it, &start, &n);
	double step = lr * s->ratio[(i - HDM_FE_FIRST) / 4], sp = 0, su = 0;
	struct hdm_kcur k[4];

	for (unsigned int j = 0; j < 4; j++)
		hdm_kcur_init(&k[j], &c->t[i + j], start);
	hdm_kfor(pace, j, n) {
		double p = hdm_kcur_get(&k[0]), u;

		if (!c->state->phase) {
			double g = hdm_kcur_get(&k[1]);

			hdm_kcur_set(&k[2], o->beta1 * hdm_kcur_get(&k[2]) + o->beta3 * g);
			hdm_kcur_set(&k[3],
				     o->beta2 * hdm_kcur_get(&k[3]) + (1 - o->beta2) * g * g);
		}
		u = hdm_lamb_update(o, p, hdm_kcur_get(&k[2]), hdm_kcur_get(&k[3]));
		if (c->state->phase) {
			hdm_kcur_set(&k[0], p - step * u);
		} else {
			sp += p * p;
			su += u * u;
		}
		for (unsigned int m = 0; m < 4; m++)
			hdm_kcur_next(&k[m]);
	}
	if (!c->state->phase) {
		s->partial[it][0] = sp;
		s->partial[it][1] = su;
	}
}

static void hdm_fe_lamb_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_lamb o = hdm_lamb_of(c);
	struct hdm_kpace p = hdm_kpace_start(c);
	double lr = hdm_fe_lr(c);

	for (uint64_t it = begin; it < end; it++)
		hdm_lamb_chunk(c, &o, lr, it, &p);
}

/* After phase 0: each param's trust ratio from its chunks' sums in order; then the step. */
static void hdm_fe_lamb_finish(const struct hdm_kcall *c)
{
	struct hdm_lamb_scratch *s = c->state->scratch;
	uint64_t k = 0;

	if (c->state->phase) {
		hdm_fe_finish(c);
		return;
	}
	for (unsigned int i = HDM_FE_FIRST, g = 0; i < c->num_tensors; i += 4, g++) {
		uint64_t chunks = hdm_fe_chunks_of(hdm_kview_numel(&c->t[i]));
		double sp = 0, su = 0;

		for (; chunks--; k++) {
			sp += s->partial[k][0];
			su += s->partial[k][1];
		}
		s->ratio[g] = sp > 0 && su > 0 ? sqrt(sp) / sqrt(su) : 1;
	}
}

const struct hdm_kernel_def hdm_kernel_foreach_lamb = {
	.name = "foreach_lamb",
	.min_tensors = HDM_FE_FIRST + 4,
	.max_tensors = HPU_KERNEL_MAX_TENSORS,
	.outputs = hdm_fe_outputs,
	.phases = 2,
	.check = hdm_fe_lamb_check,
	.work = hdm_fe_lamb_work,
	.item_work = hdm_fe_lamb_item_work,
	.scratch = hdm_fe_lamb_scratch,
	.run = hdm_fe_lamb_run,
	.finish = hdm_fe_lamb_finish,
};

/* ---- NORM and CLIP ---- */

/* s0: 2 or +inf. */
static bool hdm_fe_max_norm(const struct hdm_kcall *c)
{
	return isinf(c->scalars[0]);
}

/* t[first...] float tensors; items: their chunks. */
static int hdm_fe_chunked_check(const struct hdm_kcall *c, unsigned int first, uint64_t *items)
{
	for (unsigned int i = first; i < c->num_tensors; i++)
		if (!hdm_dtype_is_float(c->t[i].dtype))
			return -1;
	*items = hdm_fe_chunks(c, first, 1);
	return 0;
}

static uint32_t hdm_fe_norm_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 3;
}

static int hdm_fe_norm_check(const struct hdm_kcall *c, uint64_t *items)
{
	double type = c->scalars[0];

	if (c->num_tensors < 2 || !hdm_fe_scalar(&c->t[0], false) ||
	    !hdm_fe_scalar(&c->t[1], false) || (type != 2 && type != INFINITY) ||
	    (c->args[0] & ~(int64_t)HDM_FE_RESET))
		return -1;
	return hdm_fe_chunked_check(c, 2, items);
}

static uint64_t hdm_fe_norm_work(const struct hdm_kcall *c, uint64_t items)
{
	(void)items;
	return hdm_fe_numel(c, 2, 1);
}

static uint64_t hdm_fe_norm_item_work(const struct hdm_kcall *c)
{
	return hdm_fe_longest(c, 2, 1);
}

/* A partial per chunk. */
static uint64_t hdm_fe_norm_scratch(const struct hdm_kcall *c, uint64_t items)
{
	(void)c;
	return items * sizeof(double);
}

static void hdm_fe_norm_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	double *partial = c->state->scratch;
	struct hdm_kpace p = hdm_kpace_start(c);
	bool max_norm = hdm_fe_max_norm(c);

	for (uint64_t it = begin; it < end; it++) {
		uint64_t start = 0, n = 0;
		unsigned int i = hdm_fe_chunk(c, 2, 1, it, &start, &n);
		struct hdm_kcur k;
		double part = 0;

		hdm_kcur_init(&k, &c->t[i], start);
		hdm_kfor(&p, j, n) {
			double x = fabs(hdm_kcur_get(&k));

			part = hdm_clip_join(max_norm, part, max_norm ? x : x * x);
			hdm_kcur_next(&k);
		}
		partial[it] = part;
	}
}

/* The partials joined in order onto acc; the norm so far. */
static void hdm_fe_norm_finish(const struct hdm_kcall *c)
{
	const double *partial = c->state->scratch;
	uint64_t chunks = hdm_fe_chunks(c, 2, 1);
	bool max_norm = hdm_fe_max_norm(c);
	double acc = c->args[0] & HDM_FE_RESET ? 0 : hdm_kget(&c->t[0], 0);

	for (uint64_t k = 0; k < chunks; k++)
		acc = hdm_clip_join(max_norm, acc, partial[k]);
	hdm_kset(&c->t[0], 0, acc);
	acc = hdm_kget(&c->t[0], 0); /* as stored: the norm is that of what the next launch reads */
	hdm_kset(&c->t[1], 0, max_norm ? acc : sqrt(acc));
}

const struct hdm_kernel_def hdm_kernel_foreach_norm = {
	.name = "foreach_norm",
	.min_tensors = 2,
	.max_tensors = HPU_KERNEL_MAX_TENSORS,
	.outputs = hdm_fe_norm_outputs,
	.check = hdm_fe_norm_check,
	.work = hdm_fe_norm_work,
	.item_work = hdm_fe_norm_item_work,
	.scratch = hdm_fe_norm_scratch,
	.run = hdm_fe_norm_run,
	.finish = hdm_fe_norm_finish,
};

/* Every tensor after the norm. */
static uint32_t hdm_fe_clip_outputs(const struct hdm_kcall *c)
{
	return (uint32_t)((1ull << c->num_tensors) - 2);
}

/* s0: max_norm (not NaN). */
static int hdm_fe_clip_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (c->num_tensors < 1 || !hdm_fe_scalar(&c->t[0], false) || isnan(c->scalars[0]) ||
	    c->args[0])
		return -1;
	return hdm_fe_chunked_check(c, 1, items);
}

static uint64_t hdm_fe_clip_work(const struct hdm_kcall *c, uint64_t items)
{
	(void)items;
	return hdm_fe_numel(c, 1, 1);
}

static uint64_t hdm_fe_clip_item_work(const struct hdm_kcall *c)
{
	return hdm_fe_longest(c, 1, 1);
}

static void hdm_fe_clip_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	/* torch scales even by 1, and a NaN or infinite norm spreads to every tensor. */
	double coef = c->scalars[0] / (hdm_kget(&c->t[0], 0) + 1e-6);
	struct hdm_kpace p = hdm_kpace_start(c);

	if (coef > 1)
		coef = 1;
	for (uint64_t it = begin; it < end; it++) {
		uint64_t start = 0, n = 0;
		unsigned int i = hdm_fe_chunk(c, 1, 1, it, &start, &n);
		struct hdm_kcur k;

		hdm_kcur_init(&k, &c->t[i], start);
		hdm_kfor(&p, j, n) {
			hdm_kcur_set(&k, hdm_kcur_get(&k) * coef);
			hdm_kcur_next(&k);
		}
	}
}

const struct hdm_kernel_def hdm_kernel_foreach_clip = {
	.name = "foreach_clip",
	.min_tensors = 1,
	.max_tensors = HPU_KERNEL_MAX_TENSORS,
	.outputs = hdm_fe_clip_outputs,
	.check = hdm_fe_clip_check,
	.work = hdm_fe_clip_work,
	.item_work = hdm_fe_clip_item_work,
	.run = hdm_fe_clip_run,
};
