/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: the optimizer steps of torch.optim (SGD, Adadelta,
 * AdamW) and torch.nn.utils.clip_grad_norm_.  The steps are elementwise, so
 * items are elements; clip_grad_norm needs the total norm before it may
 * scale any grad, so it runs in two phases of chunks: the norm's partials,
 * then the scaling.  Long walks keep a pace (hdm_kpace()).
 */
#include "hdm_kernel_optim.h"

/* x in [lo, hi]; false for NaN. */
static bool hdm_in_range(double x, double lo, double hi)
{
	return x >= lo && x <= hi;
}

/* t[0, nshaped) floats of param's (t[0]) shape; items are elements. */
static int hdm_optim_check(const struct hdm_kcall *c, unsigned int ntensors, unsigned int nshaped,
			   uint64_t *items)
{
	if (c->num_tensors != ntensors || !hdm_dtype_is_float(c->t[0].dtype))
		return -1;
	for (unsigned int i = 1; i < nshaped; i++)
		if (!hdm_kview_float_like(&c->t[i], &c->t[0]))
			return -1;
	*items = hdm_kview_numel(&c->t[0]);
	return 0;
}

/* ---- SGD ---- */

#define HDM_SGD_NESTEROV 1
#define HDM_SGD_FIRST_STEP 2

/* s: lr, momentum, dampening, weight_decay.  Without momentum there is no buffer to write. */
static uint32_t hdm_sgd_outputs(const struct hdm_kcall *c)
{
	return c->scalars[1] != 0 ? 5 : 1;
}

/* torch.optim.SGD's own checks; nesterov wants momentum and no dampening. */
static int hdm_sgd_check(const struct hdm_kcall *c, uint64_t *items)
{
	const double *s = c->scalars;

	if (!hdm_in_range(s[0], 0, INFINITY) || !hdm_in_range(s[1], 0, INFINITY) ||
	    !isfinite(s[2]) || !hdm_in_range(s[3], 0, INFINITY) ||
	    (c->args[0] & ~(int64_t)(HDM_SGD_NESTEROV | HDM_SGD_FIRST_STEP)) ||
	    ((c->args[0] & HDM_SGD_NESTEROV) && (s[1] == 0 || s[2] != 0)))
		return -1;
	return hdm_optim_check(c, 3, 3, items);
}

HDM_KERNEL_AVX2 static void hdm_sgd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_sgd o = {
		c->scalars[0], c->scalars[1], c->scalars[2], c->scalars[3],
		c->args[0] & HDM_SGD_NESTEROV, c->args[0] & HDM_SGD_FIRST_STEP,
	};
	struct hdm_kpace p = hdm_kpace_start(c);

	hdm_kwalk(c, 3, begin, end, hdm_sgd_el, &o, hdm_kwalk_f32, &p);
}

const struct hdm_kernel_def hdm_kernel_sgd = {
	.name = "sgd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_sgd_outputs,
	.check = hdm_sgd_check,
	.run = hdm_sgd_run,
};

/* ---- Adadelta ---- */

/* t: param, grad, square_avg, acc_delta. */
static uint32_t hdm_adadelta_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 1u | 1u << 2 | 1u << 3;
}

/* s: lr, rho, eps, weight_decay, with torch.optim.Adadelta's bounds. */
static int hdm_adadelta_check(const struct hdm_kcall *c, uint64_t *items)
{
	const double *s = c->scalars;

	if (!hdm_in_range(s[0], 0, INFINITY) || !hdm_in_range(s[1], 0, 1) ||
	    !hdm_in_range(s[2], 0, INFINITY) || !hdm_in_range(s[3], 0, INFINITY))
		return -1;
	return hdm_optim_check(c, 4, 4, items);
}

HDM_KERNEL_AVX2 static void hdm_adadelta_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_adadelta o = { c->scalars[0], c->scalars[1], c->scalars[2], c->scalars[3] };
	struct hdm_kpace p = hdm_kpace_start(c);

	hdm_kwalk(c, 4, begin, end, hdm_adadelta_el, &o, hdm_kwalk_f32, &p);
}

const struct hdm_kernel_def hdm_kernel_adadelta = {
	.name = "adadelta",
	.min_tensors = 4,
	.max_tensors = 4,
	.outputs = hdm_adadelta_outputs,
	.check = hdm_adadelta_check,
	.run = hdm_adadelta_run,
};

/* ---- AdamW ---- */

/* t: param, grad, exp_avg, exp_avg_sq, step. */
static uint32_t hdm_adamw_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 1u | 1u << 2 | 1u << 3 | 1u << 4;
}

/* s: lr, beta1, beta2, eps, weight_decay, with torch.optim.AdamW's bounds. */
static int hdm_adamw_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *step = &c->t[4];
	const double *s = c->scalars;

	if (!hdm_in_range(s[0], 0, INFINITY) || !(s[1] >= 0 && s[1] < 1) ||
	    !(s[2] >= 0 && s[2] < 1) || !hdm_in_range(s[3], 0, INFINITY) ||
	    !hdm_in_range(s[4], 0, INFINITY) || c->num_tensors != 5 ||
	    (step->dtype != HPU_DTYPE_F32 && step->dtype != HPU_DTYPE_I64) || step->ndim != 0 ||
	    !hdm_in_range(hdm_kget(step, 0), 0, INFINITY))
		return -1;
	return hdm_optim_check(c, 5, 4, items);
}

HDM_KERNEL_AVX2 static void hdm_adamw_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const double *s = c->scalars;
	const struct hdm_adamw o = hdm_adamw_at(s[0], s[1], s[2], s[3], s[4],
						hdm_kget(&c->t[4], 0) + 1);
	struct hdm_kpace p = hdm_kpace_start(c);

	hdm_kwalk(c, 4, begin, end, hdm_adamw_el, &o, hdm_kwalk_f32, &p);
}

static void hdm_adamw_finish(const struct hdm_kcall *c)
{
	const struct hdm_kview *step = &c->t[4];

	if (step->dtype == HPU_DTYPE_I64)
		hdm_kstore_i(step->dtype, step->base, hdm_kload_i(step->dtype, step->base) + 1);
	else
		hdm_kstore_f(step->dtype, step->base, hdm_kload_f(step->dtype, step->base) + 1);
}

const struct hdm_kernel_def hdm_kernel_adamw = {
	.name = "adamw",
	.min_tensors = 5,
	.max_tensors = 5,
	.outputs = hdm_adamw_outputs,
	.check = hdm_adamw_check,
	.run = hdm_adamw_run,
	.finish = hdm_adamw_finish,
};

/* ---- clip_grad_norm ---- */

/* t: total_norm, grads...: every one written. */
static uint32_t hdm_clip_outputs(const struct hdm_kcall *c)
{
	return (uint32_t)((1ull << c->num_tensors) - 1);
}

/*
 * Two phases of the same items, chunks of HPU_CLIP_CHUNK elements of each
 * grad, grad after grad: phase 0 leaves each chunk's partial (sum of
 * squares, or max of |x|) in the scratch, and its finish() joins them in
 * chunk order into the total norm, written out and kept; phase 1 scales
 * each chunk by the total's coefficient.  So the norm is the same whatever
 * the split, and the runtime's CPU fallback adds the same partials.
 */
struct hdm_clip_scratch {
	double total;
	double partial[]; /* one per chunk */
};

/* Every grad's chunks' partials: well inside the scratch. */
#define HDM_CLIP_MAX_CHUNKS \
	((HPU_KERNEL_MAX_TENSORS - 1) * (HPU_KERNEL_MAX_ELEMENTS / HPU_CLIP_CHUNK + 1))
_Static_assert(sizeof(struct hdm_clip_scratch) + HDM_CLIP_MAX_CHUNKS * sizeof(double) <=
	       HDM_KERNEL_SCRATCH_MAX, "clip_grad_norm's partials fit the scratch");

static uint64_t hdm_clip_chunks_of(uint64_t n)
{
	return (n + HPU_CLIP_CHUNK - 1) / HPU_CLIP_CHUNK;
}

/* The launch's chunks: its items in each phase. */
static uint64_t hdm_clip_chunks(const struct hdm_kcall *c)
{
	uint64_t chunks = 0;

	for (unsigned int i = 1; i < c->num_tensors; i++)
		chunks += hdm_clip_chunks_of(hdm_kview_numel(&c->t[i]));
	return chunks;
}

/* s0: max_norm (not NaN); s1: 2 or +inf. */
static int hdm_clip_check(const struct hdm_kcall *c, uint64_t *items)
{
	double type = c->scalars[1];

	if (c->num_tensors < 1 || c->t[0].dtype != HPU_DTYPE_F32 || c->t[0].ndim != 0 ||
	    isnan(c->scalars[0]) || (type != 2 && type != INFINITY))
		return -1;
	for (unsigned int i = 1; i < c->num_tensors; i++)
		if (!hdm_dtype_is_float(c->t[i].dtype))
			return -1;
	items[0] = items[1] = hdm_clip_chunks(c);
	return 0;
}

/* Every grad's elements, once a phase. */
static uint64_t hdm_clip_work(const struct hdm_kcall *c, uint64_t items)
{
	uint64_t work = 0;

	(void)items;
	for (unsigned int i = 1; i < c->num_tensors; i++)
		work += hdm_kview_numel(&c->t[i]);
	return work;
}

/* The longest chunk. */
static uint64_t hdm_clip_item_work(const struct hdm_kcall *c)
{
	uint64_t most = 0;

	for (unsigned int i = 1; i < c->num_tensors; i++) {
		uint64_t n = hdm_kview_numel(&c->t[i]);

		if (n > most)
			most = n < HPU_CLIP_CHUNK ? n : HPU_CLIP_CHUNK;
	}
	return most;
}

/* The total and a partial per item. */
static uint64_t hdm_clip_scratch_len(const struct hdm_kcall *c, uint64_t items)
{
	(void)c;
	return sizeof(struct hdm_clip_scratch) + items * sizeof(double);
}

/* Chunk k of the launch: a cursor on its first element and how many it has. */
static uint64_t hdm_clip_chunk(const struct hdm_kcall *c, uint64_t k, struct hdm_kcur *cur)
{
	for (unsigned int i = 1;; i++) {
		uint64_t n = hdm_kview_numel(&c->t[i]), chunks = hdm_clip_chunks_of(n);

		if (k < chunks) {
			hdm_kcur_init(cur, &c->t[i], k * HPU_CLIP_CHUNK);
			n -= k * HPU_CLIP_CHUNK;
			return n < HPU_CLIP_CHUNK ? n : HPU_CLIP_CHUNK;
		}
		k -= chunks;
	}
}

static void hdm_clip_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_clip_scratch *s = c->state->scratch;
	struct hdm_kpace p = hdm_kpace_start(c);
	bool max_norm = isinf(c->scalars[1]);
	double coef = 0;

	if (c->state->phase) {
		/* torch scales even by 1, and a NaN or infinite norm spreads to every grad. */
		coef = c->scalars[0] / (s->total + 1e-6);
		if (coef > 1)
			coef = 1;
	}
	for (uint64_t it = begin; it < end; it++) {
		struct hdm_kcur k;
		uint64_t n = hdm_clip_chunk(c, it, &k);
		double part = 0;

		if (!c->state->phase) {
			hdm_kfor(&p, j, n) {
				double x = fabs(hdm_kcur_get(&k));

				part = hdm_clip_join(max_norm, part, max_norm ? x : x * x);
				hdm_kcur_next(&k);
			}
			s->partial[it] = part;
			continue;
		}
		hdm_kfor(&p, j, n) {
			hdm_kcur_set(&k, hdm_kcur_get(&k) * coef);
			hdm_kcur_next(&k);
		}
	}
}

/* After phase 0: the partials joined in order, the norm written and kept for phase 1. */
static void hdm_clip_finish(const struct hdm_kcall *c)
{
	struct hdm_clip_scratch *s = c->state->scratch;
	bool max_norm = isinf(c->scalars[1]);
	uint64_t chunks = hdm_clip_chunks(c);
	double total = 0;

	if (c->state->phase)
		return;
	for (uint64_t k = 0; k < chunks; k++)
		total = hdm_clip_join(max_norm, total, s->partial[k]);
	s->total = max_norm ? total : sqrt(total);
	hdm_kset(&c->t[0], 0, s->total);
}

const struct hdm_kernel_def hdm_kernel_clip_grad_norm = {
	.name = "clip_grad_norm",
	.min_tensors = 1,
	.max_tensors = HPU_KERNEL_MAX_TENSORS,
	.outputs = hdm_clip_outputs,
	.phases = 2,
	.check = hdm_clip_check,
	.work = hdm_clip_work,
	.item_work = hdm_clip_item_work,
	.scratch = hdm_clip_scratch_len,
	.run = hdm_clip_run,
	.finish = hdm_clip_finish,
};
