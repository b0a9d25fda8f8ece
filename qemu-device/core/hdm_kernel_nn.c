/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: dropout, the activation backwards, layer norm and
 * embedding.  Elementwise kernels take elements as work items, layer norm
 * rows (and columns for its weight and bias gradients), embedding rows;
 * the embedding backward splits its scatter-add over grad_weight's elements
 * so that no two parts add to the same one.  Rows and columns may be long,
 * so their loops keep a pace (hpu_kpace()); no item visits more than
 * HPU_KERNEL_MAX_ITEM_WORK elements.  Indices are checked by a first phase,
 * before anything is written, and again where they index.
 */
#include "hdm_kernel_nn.h"
#include "hpu_philox.h"

/* ---- elementwise backwards: grad_in = f(grad_out, x) ---- */

typedef double hpu_grad_fn(const struct hpu_kcall *c, double grad_out, double x);

/* t: grad_in, grad_out, x: one shape, floats but for a U8 mask x. */
static int hpu_grad_check(const struct hpu_kcall *c, uint32_t x_dtype, uint64_t *items)
{
	const struct hpu_kview *gi = &c->t[0], *x = &c->t[2];

	if (c->num_tensors != 3 || !hpu_dtype_is_float(gi->dtype) ||
	    !hpu_kview_float_like(&c->t[1], gi) || !hpu_kview_same_shape(x, gi) ||
	    (x_dtype == HPU_DTYPE_U8 ? x->dtype != x_dtype : !hpu_dtype_is_float(x->dtype)))
		return -1;
	*items = hpu_kview_numel(gi);
	return 0;
}

struct hpu_grad {
	const struct hpu_kcall *c;
	hpu_grad_fn *f;
};

/* e: grad_in, grad_out, x. */
static inline void hpu_grad_el(const void *ctx, uint64_t i, const struct hpu_kel *e)
{
	const struct hpu_grad *g = ctx;

	(void)i;
	hpu_kel_set(&e[0], g->f(g->c, hpu_kel_get(&e[1]), hpu_kel_get(&e[2])));
}

/* Always inlined, so that each kernel's own f is inlined into its walk; dense as hpu_kwalk()'s. */
static inline __attribute__((always_inline)) void
hpu_grad_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end, hpu_grad_fn *f,
	     const uint32_t *dense)
{
	const struct hpu_grad g = { c, f };
	struct hpu_kpace p = hpu_kpace_start(c);

	hpu_kwalk(c, 3, begin, end, hpu_grad_el, &g, dense, &p);
}

static int hpu_relu_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	return hpu_grad_check(c, HPU_DTYPE_F32, items);
}

static double hpu_relu_grad(const struct hpu_kcall *c, double g, double x)
{
	(void)c;
	return hpu_kkeep(x > 0, g);
}

static void hpu_relu_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	hpu_grad_run(c, begin, end, hpu_relu_grad, hpu_kwalk_f32);
}

const struct hpu_kernel_def hpu_kernel_relu_bwd = {
	.name = "relu_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_relu_bwd_check,
	.run = hpu_relu_bwd_run,
};

static int hpu_gelu_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	if (c->args[0] != 0 && c->args[0] != 1)
		return -1;
	return hpu_grad_check(c, HPU_DTYPE_F32, items);
}

/*
 * d/dx of x * Phi(x) is Phi(x) + x * phi(x); of the tanh form
 * 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), it is
 * 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx.
 */
static double hpu_gelu_grad(const struct hpu_kcall *c, double g, double x)
{
	if (c->args[0]) {
		const double k = sqrt(2 / M_PI), a = 0.044715;
		double th = tanh(k * (x + a * x * x * x));

		return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * k * (1 + 3 * a * x * x));
	}
	return g * (0.5 * (1 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI));
}

static void hpu_gelu_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	hpu_grad_run(c, begin, end, hpu_gelu_grad, hpu_kwalk_f32);
}

const struct hpu_kernel_def hpu_kernel_gelu_bwd = {
	.name = "gelu_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_gelu_bwd_check,
	.run = hpu_gelu_bwd_run,
};

/* ---- dropout ---- */

/* p == 1 is allowed: every draw is < 1, so everything is dropped and nothing divides by 0. */
static bool hpu_dropout_p_ok(double p)
{
	return p >= 0 && p <= 1;
}

/* out = kept ? x / (1 - p) : 0, for the forward's input and the backward's grad_out alike. */
static double hpu_dropout_apply(double p, bool kept, double x)
{
	return hpu_kkeep(kept, x / (1 - p));
}

static int hpu_dropout_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	if (!hpu_dropout_p_ok(c->scalars[0]))
		return -1;
	return hpu_grad_check(c, HPU_DTYPE_U8, items);
}

static double hpu_dropout_grad(const struct hpu_kcall *c, double g, double mask)
{
	/*
	 * At p == 1 nothing is kept, not even a stray mask bit (the forward
	 * never sets one), so no x / 0 comes out.  & rather than &&: without a
	 * branch the walk vectorizes.
	 */
	return hpu_dropout_apply(c->scalars[0], (mask != 0) & (c->scalars[0] < 1), g);
}

static void hpu_dropout_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	static const uint32_t dense[] = { HPU_DTYPE_F32, HPU_DTYPE_F32, HPU_DTYPE_U8 };

	hpu_grad_run(c, begin, end, hpu_dropout_grad, dense);
}

const struct hpu_kernel_def hpu_kernel_dropout_bwd = {
	.name = "dropout_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.check = hpu_dropout_bwd_check,
	.run = hpu_dropout_bwd_run,
};

/* t: out, mask, in, rng; rng (seed, offset) is read and written. */
static uint32_t hpu_dropout_outputs(const struct hpu_kcall *c)
{
	(void)c;
	return 1u << 0 | 1u << 1 | 1u << 3;
}

static int hpu_dropout_check(const struct hpu_kcall *c, uint64_t *items)
{
	const struct hpu_kview *out = &c->t[0], *mask = &c->t[1], *rng = &c->t[3];
	const uint64_t rng_shape = 2;

	if (c->num_tensors != 4 || !hpu_dtype_is_float(out->dtype) ||
	    !hpu_kview_float_like(&c->t[2], out) || mask->dtype != HPU_DTYPE_U8 ||
	    !hpu_kview_same_shape(mask, out) || rng->dtype != HPU_DTYPE_I64 ||
	    !hpu_kview_has_shape(rng, 1, &rng_shape) || !hpu_dropout_p_ok(c->scalars[0]))
		return -1;
	*items = hpu_kview_numel(out);
	return 0;
}

/* Elements whose draws are made ahead of their walk, in lanes of blocks (hpu_philox_uniforms()). */
#define HPU_DROPOUT_CHUNK 256
#define HPU_DROPOUT_LANE_DRAWS (HPU_PHILOX_LANES * HPU_PHILOX_WORDS)

/*
 * The rng's state and p, as every part reads them before any finish();
 * u[k - first + skew] is k's draw, skew being where offset + first falls
 * in its block.
 */
struct hpu_dropout {
	uint64_t seed, offset, first, skew;
	double p;
	/* A chunk's draws from the start of its first block, in whole lanes. */
	float u[HPU_DROPOUT_CHUNK + HPU_DROPOUT_LANE_DRAWS];
};

/* e: out, mask, in. */
static inline __attribute__((always_inline)) void
hpu_dropout_el(const void *ctx, uint64_t k, const struct hpu_kel *e)
{
	const struct hpu_dropout *d = ctx;
	bool kept = d->u[k - d->first + d->skew] >= d->p;

	hpu_kel_set_i(&e[1], kept);
	hpu_kel_set(&e[0], hpu_dropout_apply(d->p, kept, hpu_kel_get(&e[2])));
}

/* Element k's draw depends on k alone, so parts are independent and any split draws one mask. */
static void hpu_dropout_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	static const uint32_t dense[] = { HPU_DTYPE_F32, HPU_DTYPE_U8, HPU_DTYPE_F32 };
	struct hpu_dropout d = {
		.seed = (uint64_t)hpu_kget_i(&c->t[3], 0),
		.offset = (uint64_t)hpu_kget_i(&c->t[3], 1),
		.p = c->scalars[0],
	};
	struct hpu_kpace pace = hpu_kpace_start(c);

	for (d.first = begin; d.first < end; d.first += HPU_DROPOUT_CHUNK) {
		uint64_t n = end - d.first < HPU_DROPOUT_CHUNK ? end - d.first : HPU_DROPOUT_CHUNK;
		uint64_t pos = d.offset + d.first, block = pos / HPU_PHILOX_WORDS;
		uint64_t blocks = (pos % HPU_PHILOX_WORDS + n + HPU_PHILOX_WORDS - 1) / HPU_PHILOX_WORDS;

		d.skew = pos % HPU_PHILOX_WORDS;
		for (uint64_t b = 0; b < blocks; b += HPU_PHILOX_LANES)
			hpu_philox_uniforms(d.seed, block + b,
					    (unsigned int)(blocks - b < HPU_PHILOX_LANES ?
							   blocks - b : HPU_PHILOX_LANES),
					    &d.u[b * HPU_PHILOX_WORDS]);
		if (hpu_kwalk(c, 3, d.first, d.first + n, hpu_dropout_el, &d, dense, &pace))
			return;
	}
}

/* After every part has read the old offset: the next launch draws past this one's counters. */
static void hpu_dropout_finish(const struct hpu_kcall *c)
{
	uint8_t *offset = hpu_kview_at(&c->t[3], 1);
	uint64_t next = (uint64_t)hpu_kload_i(HPU_DTYPE_I64, offset) + hpu_kview_numel(&c->t[0]);

	hpu_kstore_i(HPU_DTYPE_I64, offset, (int64_t)next);
}

const struct hpu_kernel_def hpu_kernel_dropout = {
	.name = "dropout",
	.min_tensors = 4,
	.max_tensors = 4,
	.outputs = hpu_dropout_outputs,
	.check = hpu_dropout_check,
	.run = hpu_dropout_run,
	.finish = hpu_dropout_finish,
};

/* ---- layer norm ---- */

/*
 * A row item walks its row this many times; rows are refused past
 * HPU_KERNEL_MAX_ITEM_WORK / passes elements.
 */
#define HPU_LN_FWD_PASSES 3
#define HPU_LN_BWD_PASSES 2

/* What the forward and the backward share: in, its statistics and the optional weight. */
struct hpu_ln {
	const struct hpu_kview *in, *mean, *rstd, *weight;
	uint32_t lead;        /* in's leading (not normalised) dims */
	uint64_t rows, cols;  /* elements of the leading and of the normalised dims */
	bool has_weight, has_bias;
};

static struct hpu_ln hpu_ln_get(const struct hpu_kcall *c, unsigned int in, unsigned int mean,
				unsigned int rstd, unsigned int weight)
{
	struct hpu_ln ln = {
		.in = &c->t[in], .mean = &c->t[mean], .rstd = &c->t[rstd], .weight = &c->t[weight],
		.rows = 1, .cols = 1, .has_weight = c->args[1] & 1, .has_bias = c->args[1] & 2,
	};

	/* A bad a0 (check() rejects it) still gives a lead within in's dims. */
	if (c->args[0] >= 1 && c->args[0] <= ln.in->ndim)
		ln.lead = ln.in->ndim - (uint32_t)c->args[0];
	for (uint32_t d = 0; d < ln.in->ndim; d++)
		*(d < ln.lead ? &ln.rows : &ln.cols) *= ln.in->shape[d];
	return ln;
}

/* A float of the normalised dims' shape: weight, bias and their gradients. */
static bool hpu_ln_trailing_ok(const struct hpu_ln *ln, const struct hpu_kview *v)
{
	return hpu_dtype_is_float(v->dtype) &&
	       hpu_kview_has_shape(v, ln->in->ndim - ln->lead, ln->in->shape + ln->lead);
}

/*
 * a0 in [1, in's ndim]; a1 two flag bits; mean and rstd F32 of the leading
 * shape; rows that an item walking them passes times keeps within its bound.
 */
static int hpu_ln_check(const struct hpu_kcall *c, unsigned int ntensors, const struct hpu_ln *ln,
			unsigned int passes)
{
	if (c->num_tensors != ntensors || c->args[0] < 1 || c->args[0] > ln->in->ndim ||
	    ln->cols > HPU_KERNEL_MAX_ITEM_WORK / passes ||
	    (c->args[1] & ~3) || !hpu_dtype_is_float(ln->in->dtype) ||
	    ln->mean->dtype != HPU_DTYPE_F32 || ln->rstd->dtype != HPU_DTYPE_F32 ||
	    !hpu_kview_has_shape(ln->mean, ln->lead, ln->in->shape) ||
	    !hpu_kview_has_shape(ln->rstd, ln->lead, ln->in->shape) ||
	    (ln->has_weight && !hpu_ln_trailing_ok(ln, ln->weight)))
		return -1;
	return 0;
}

/* The weight under cursor w, walking along a row: 1 without a weight. */
static double hpu_ln_weight(const struct hpu_ln *ln, const struct hpu_kcur *w)
{
	return ln->has_weight ? hpu_kcur_get(w) : 1;
}

/* Cursors on row r's first element of in and of row (a tensor of in's shape), and on weight's. */
static void hpu_ln_row(const struct hpu_ln *ln, const struct hpu_kview *row, uint64_t r,
		       struct hpu_kcur *x, struct hpu_kcur *rk, struct hpu_kcur *w)
{
	hpu_kcur_init(x, ln->in, r * ln->cols);
	hpu_kcur_init(rk, row, r * ln->cols);
	hpu_kcur_init(w, ln->weight, 0);
}

/* t: out, mean, rstd, in, weight, bias. */
static struct hpu_ln hpu_ln_fwd_get(const struct hpu_kcall *c)
{
	return hpu_ln_get(c, 3, 1, 2, 4);
}

static uint32_t hpu_ln_outputs(const struct hpu_kcall *c)
{
	(void)c;
	return 7;
}

static int hpu_ln_fwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	struct hpu_ln ln = hpu_ln_fwd_get(c);

	if (hpu_ln_check(c, 6, &ln, HPU_LN_FWD_PASSES) || !hpu_kview_float_like(&c->t[0], ln.in) ||
	    (ln.has_bias && !hpu_ln_trailing_ok(&ln, &c->t[5])) || !(c->scalars[0] >= 0))
		return -1;
	*items = ln.rows;
	return 0;
}

static uint64_t hpu_ln_fwd_work(const struct hpu_kcall *c, uint64_t items)
{
	struct hpu_ln ln = hpu_ln_fwd_get(c);

	return hpu_kwork_rows(items, ln.cols);
}

static uint64_t hpu_ln_fwd_item_work(const struct hpu_kcall *c)
{
	return hpu_kwork_rows(HPU_LN_FWD_PASSES, hpu_ln_fwd_get(c).cols);
}

/* Biased variance, as torch; out may be in itself (each element is read before it is written). */
static void hpu_ln_fwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	struct hpu_ln ln = hpu_ln_fwd_get(c);
	struct hpu_kpace p = hpu_kpace_start(c);
	struct hpu_kcur x, out, w, b;

	for (uint64_t r = begin; r < end && !hpu_kpace(&p, 1); r++) {
		double mean = 0, var = 0, rstd;

		hpu_ln_row(&ln, &c->t[0], r, &x, &out, &w);
		hpu_kfor(&p, j, ln.cols) {
			mean += hpu_kcur_get(&x);
			hpu_kcur_next(&x);
		}
		mean /= (double)ln.cols;
		hpu_kcur_init(&x, ln.in, r * ln.cols);
		hpu_kfor(&p, j, ln.cols) {
			double d = hpu_kcur_get(&x) - mean;

			var += d * d;
			hpu_kcur_next(&x);
		}
		rstd = 1 / sqrt(var / (double)ln.cols + c->scalars[0]);
		hpu_kset(ln.mean, r, mean);
		hpu_kset(ln.rstd, r, rstd);
		hpu_kcur_init(&x, ln.in, r * ln.cols);
		hpu_kcur_init(&b, &c->t[5], 0);
		hpu_kfor(&p, j, ln.cols) {
			double xhat = (hpu_kcur_get(&x) - mean) * rstd;
			double bias = ln.has_bias ? hpu_kcur_get(&b) : 0;

			hpu_kcur_set(&out, xhat * hpu_ln_weight(&ln, &w) + bias);
			hpu_kcur_next(&x);
			hpu_kcur_next(&out);
			hpu_kcur_next(&w);
			hpu_kcur_next(&b);
		}
	}
}

const struct hpu_kernel_def hpu_kernel_layer_norm = {
	.name = "layer_norm",
	.min_tensors = 6,
	.max_tensors = 6,
	.outputs = hpu_ln_outputs,
	.check = hpu_ln_fwd_check,
	.work = hpu_ln_fwd_work,
	.item_work = hpu_ln_fwd_item_work,
	.run = hpu_ln_fwd_run,
};

/* t: grad_in, grad_weight, grad_bias, grad_out, in, mean, rstd, weight. */
static struct hpu_ln hpu_ln_bwd_get(const struct hpu_kcall *c)
{
	return hpu_ln_get(c, 4, 5, 6, 7);
}

static uint32_t hpu_ln_bwd_outputs(const struct hpu_kcall *c)
{
	return 1u | (c->args[1] & 1 ? 2u : 0) | (c->args[1] & 2 ? 4u : 0);
}

/*
 * Two phases.  Phase 0 sums grad_weight and grad_bias over the rows:
 * items are a column's chunk of HPU_LN_ROW_CHUNK rows (chunk-major), each
 * leaving its two partial sums in the scratch.  Phase 1's items are the
 * rows of grad_in, then the columns, each joining its chunks' partials in
 * order into grad_weight and grad_bias: every sum is the same whatever the
 * split, and one of a single chunk is the plain sum over the rows.  All
 * that phase 0 reads is read before a row of grad_in is written, which may
 * be grad_out or in itself.
 */
#define HPU_LN_ROW_CHUNK HPU_KERNEL_MAX_ITEM_WORK

struct hpu_ln_part {
	double sw, sb;
};

static bool hpu_ln_bwd_sums(const struct hpu_ln *ln)
{
	return ln->has_weight || ln->has_bias;
}

/* Each column's chunks of rows (a column of no rows is one chunk of none). */
static uint64_t hpu_ln_bwd_chunks(const struct hpu_ln *ln)
{
	return ln->rows ? (ln->rows + HPU_LN_ROW_CHUNK - 1) / HPU_LN_ROW_CHUNK : 1;
}

/* grad_weight and grad_bias hold sums that every row reads into, so they may not be an input. */
static bool hpu_ln_bwd_sum_aliases(const struct hpu_kcall *c, const struct hpu_ln *ln,
				   const struct hpu_kview *sum)
{
	for (unsigned int i = 3; i < 7; i++)
		if (hpu_kview_aliases(sum, &c->t[i]))
			return true;
	return ln->has_weight && hpu_kview_aliases(sum, ln->weight);
}

/*
 * The partials fit the scratch whenever in has at most
 * HPU_KERNEL_MAX_ELEMENTS: several chunks mean fewer than 2^12 columns.
 */
static int hpu_ln_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	struct hpu_ln ln = hpu_ln_bwd_get(c);
	uint64_t parts;

	if (hpu_ln_check(c, 8, &ln, HPU_LN_BWD_PASSES) || !hpu_kview_float_like(&c->t[0], ln.in) ||
	    !hpu_kview_float_like(&c->t[3], ln.in) ||
	    (ln.has_weight && (!hpu_ln_trailing_ok(&ln, &c->t[1]) ||
			       hpu_ln_bwd_sum_aliases(c, &ln, &c->t[1]))) ||
	    (ln.has_bias && (!hpu_ln_trailing_ok(&ln, &c->t[2]) ||
			     hpu_ln_bwd_sum_aliases(c, &ln, &c->t[2]))))
		return -1;
	parts = hpu_ln_bwd_sums(&ln) ? hpu_kmul_sat(ln.cols, hpu_ln_bwd_chunks(&ln)) : 0;
	if (parts > HPU_KERNEL_SCRATCH_MAX / sizeof(struct hpu_ln_part))
		return -1;
	items[0] = parts;
	items[1] = ln.rows + (hpu_ln_bwd_sums(&ln) ? ln.cols : 0);
	return 0;
}

/* Every row for the sums; then every row again, and the joins. */
static uint64_t hpu_ln_bwd_work(const struct hpu_kcall *c, uint64_t items)
{
	struct hpu_ln ln = hpu_ln_bwd_get(c);

	if (!hpu_ln_bwd_sums(&ln))
		return c->state->phase ? hpu_kwork_rows(ln.rows, ln.cols) : 0;
	if (!c->state->phase)
		return hpu_kwork_rows(items, ln.rows < HPU_LN_ROW_CHUNK ? ln.rows : HPU_LN_ROW_CHUNK);
	return hpu_kwork_rows(ln.rows, ln.cols) + hpu_kmul_sat(ln.cols, hpu_ln_bwd_chunks(&ln));
}

/* A chunk of a column; a row walked twice, or a column's join. */
static uint64_t hpu_ln_bwd_item_work(const struct hpu_kcall *c)
{
	struct hpu_ln ln = hpu_ln_bwd_get(c);
	uint64_t row = hpu_kwork_rows(HPU_LN_BWD_PASSES, ln.cols), join = hpu_ln_bwd_chunks(&ln);

	if (!c->state->phase)
		return hpu_kwork_rows(1, ln.rows < HPU_LN_ROW_CHUNK ? ln.rows : HPU_LN_ROW_CHUNK);
	return row > join ? row : join;
}

/* One partial per phase 0 item. */
static uint64_t hpu_ln_bwd_scratch(const struct hpu_kcall *c, uint64_t items)
{
	(void)c;
	return hpu_kmul_sat(items, sizeof(struct hpu_ln_part));
}

/*
 * With xhat = (x - mean) * rstd and gy = grad_out * weight:
 * grad_in = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)).
 */
static void hpu_ln_bwd_rows(const struct hpu_kcall *c, const struct hpu_ln *ln, uint64_t begin,
			    uint64_t end, struct hpu_kpace *p)
{
	struct hpu_kcur x, g, w, gi;

	for (uint64_t r = begin; r < end && !hpu_kpace(p, 1); r++) {
		double mean = hpu_kget(ln->mean, r), rstd = hpu_kget(ln->rstd, r), sg = 0, sgx = 0;

		hpu_ln_row(ln, &c->t[3], r, &x, &g, &w);
		hpu_kfor(p, j, ln->cols) {
			double gy = hpu_kcur_get(&g) * hpu_ln_weight(ln, &w);

			sg += gy;
			sgx += gy * (hpu_kcur_get(&x) - mean) * rstd;
			hpu_kcur_next(&x);
			hpu_kcur_next(&g);
			hpu_kcur_next(&w);
		}
		sg /= (double)ln->cols;
		sgx /= (double)ln->cols;
		hpu_ln_row(ln, &c->t[3], r, &x, &g, &w);
		hpu_kcur_init(&gi, &c->t[0], r * ln->cols);
		hpu_kfor(p, j, ln->cols) {
			double gy = hpu_kcur_get(&g) * hpu_ln_weight(ln, &w);
			double xhat = (hpu_kcur_get(&x) - mean) * rstd;

			hpu_kcur_set(&gi, rstd * (gy - sg - xhat * sgx));
			hpu_kcur_next(&x);
			hpu_kcur_next(&g);
			hpu_kcur_next(&w);
			hpu_kcur_next(&gi);
		}
	}
}

/*
 * Phase 0's items [begin, end): the partials, over a chunk of rows, of
 * grad_weight = sum of grad_out * xhat and grad_bias = sum of grad_out.
 */
static void hpu_ln_bwd_parts(const struct hpu_kcall *c, const struct hpu_ln *ln, uint64_t begin,
			     uint64_t end, struct hpu_kpace *p)
{
	struct hpu_ln_part *part = c->state->scratch;

	for (uint64_t it = begin; it < end && !hpu_kpace(p, 1); it++) {
		uint64_t j = it % ln->cols, r0 = it / ln->cols * HPU_LN_ROW_CHUNK;
		uint64_t n = ln->rows - r0 < HPU_LN_ROW_CHUNK ? ln->rows - r0 : HPU_LN_ROW_CHUNK;
		struct hpu_kview gv = hpu_kview_lead(&c->t[3], ln->lead, j);
		struct hpu_kview xv = hpu_kview_lead(ln->in, ln->lead, j);
		struct hpu_kcur g, x, mean, rstd;
		double sw = 0, sb = 0;

		hpu_kcur_init(&g, &gv, r0);
		hpu_kcur_init(&x, &xv, r0);
		hpu_kcur_init(&mean, ln->mean, r0);
		hpu_kcur_init(&rstd, ln->rstd, r0);
		hpu_kfor(p, r, n) {
			double gr = hpu_kcur_get(&g);

			sw += gr * (hpu_kcur_get(&x) - hpu_kcur_get(&mean)) * hpu_kcur_get(&rstd);
			sb += gr;
			hpu_kcur_next(&g);
			hpu_kcur_next(&x);
			hpu_kcur_next(&mean);
			hpu_kcur_next(&rstd);
		}
		part[it] = (struct hpu_ln_part){ sw, sb };
	}
}

/* Columns [begin, end): their partials joined in order, into grad_weight and grad_bias. */
static void hpu_ln_bwd_join(const struct hpu_kcall *c, const struct hpu_ln *ln, uint64_t begin,
			    uint64_t end, struct hpu_kpace *p)
{
	const struct hpu_ln_part *part = c->state->scratch;
	uint64_t chunks = hpu_ln_bwd_chunks(ln);

	for (uint64_t j = begin; j < end && !hpu_kpace(p, chunks); j++) {
		struct hpu_ln_part sum = part[j];

		for (uint64_t ch = 1; ch < chunks; ch++) {
			sum.sw += part[ch * ln->cols + j].sw;
			sum.sb += part[ch * ln->cols + j].sb;
		}
		if (ln->has_weight)
			hpu_kset(&c->t[1], j, sum.sw);
		if (ln->has_bias)
			hpu_kset(&c->t[2], j, sum.sb);
	}
}

static void hpu_ln_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	struct hpu_ln ln = hpu_ln_bwd_get(c);
	struct hpu_kpace p = hpu_kpace_start(c);

	if (!c->state->phase) {
		hpu_ln_bwd_parts(c, &ln, begin, end, &p);
		return;
	}
	if (begin < ln.rows)
		hpu_ln_bwd_rows(c, &ln, begin, end < ln.rows ? end : ln.rows, &p);
	if (end > ln.rows)
		hpu_ln_bwd_join(c, &ln, begin > ln.rows ? begin - ln.rows : 0, end - ln.rows, &p);
}

const struct hpu_kernel_def hpu_kernel_layer_norm_bwd = {
	.name = "layer_norm_bwd",
	.min_tensors = 8,
	.max_tensors = 8,
	.outputs = hpu_ln_bwd_outputs,
	.phases = 2,
	.check = hpu_ln_bwd_check,
	.work = hpu_ln_bwd_work,
	.item_work = hpu_ln_bwd_item_work,
	.scratch = hpu_ln_bwd_scratch,
	.run = hpu_ln_bwd_run,
};

/* ---- embedding ---- */

/*
 * Phase 0 checks every index (hpu_kscan_chunk()), so that a bad one fails
 * the launch before a row is written; phase 1 gathers or scatter-adds.
 */
#define HPU_EMB_PHASES 2

/*
 * t[table] a float [V, D], t[rows] a float of indices' shape + [D], indices
 * (t[2]) index values in [0, V), a0 the padding index or -1.  rows may not
 * be table itself: a gather in place would read rows it has overwritten.
 * Items: the scan's, then per phase 1 item of the kernel's.
 */
static int hpu_emb_check(const struct hpu_kcall *c, unsigned int table, unsigned int rows)
{
	const struct hpu_kview *tv = &c->t[table], *rv = &c->t[rows], *iv = &c->t[2];
	uint64_t shape[HPU_TENSOR_MAX_DIMS];

	if (c->num_tensors != 3 || tv->ndim != 2 || !hpu_dtype_is_float(tv->dtype) ||
	    !hpu_dtype_is_float(rv->dtype) || !hpu_kview_is_index(iv) ||
	    iv->ndim >= HPU_TENSOR_MAX_DIMS || c->args[0] < -1 ||
	    (c->args[0] >= 0 && (uint64_t)c->args[0] >= tv->shape[0]) || hpu_kview_aliases(rv, tv))
		return -1;
	memcpy(shape, iv->shape, iv->ndim * sizeof(shape[0]));
	shape[iv->ndim] = tv->shape[1];
	if (!hpu_kview_has_shape(rv, iv->ndim + 1, shape))
		return -1;
	return 0;
}

/* Phase 0's items over the indices in a launch whose table is t[table]. */
static void hpu_emb_scan(const struct hpu_kcall *c, unsigned int table, uint64_t begin,
			 uint64_t end)
{
	struct hpu_kpace p = hpu_kpace_start(c);

	for (uint64_t k = begin; k < end && !hpu_kstop(c); k++)
		hpu_kscan_chunk(c, &c->t[2], c->t[table].shape[0], NULL, k, &p,
				"an index out of range");
}

/*
 * Items: indices, each a row of D, at most HPU_KERNEL_MAX_ITEM_WORK
 * elements (longer rows are refused).
 */
static int hpu_emb_fwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	uint64_t n = hpu_kview_numel(&c->t[2]);

	if (hpu_emb_check(c, 1, 0) || c->t[1].shape[1] > HPU_KERNEL_MAX_ITEM_WORK)
		return -1;
	items[0] = hpu_kscan_items(n);
	items[1] = n;
	return 0;
}

/* The indices, then a row of D each. */
static uint64_t hpu_emb_fwd_work(const struct hpu_kcall *c, uint64_t items)
{
	if (!c->state->phase)
		return hpu_kview_numel(&c->t[2]);
	return hpu_kwork_rows(items, c->t[1].shape[1]);
}

static uint64_t hpu_emb_fwd_item_work(const struct hpu_kcall *c)
{
	if (!c->state->phase)
		return hpu_kscan_item_work(hpu_kview_numel(&c->t[2]));
	return hpu_kwork_rows(1, c->t[1].shape[1]);
}

static void hpu_emb_fwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hpu_kview *out = &c->t[0];
	struct hpu_kpace p = hpu_kpace_start(c);
	int64_t v;

	if (!c->state->phase) {
		hpu_emb_scan(c, 1, begin, end);
		return;
	}
	for (uint64_t n = begin; n < end && !hpu_kpace(&p, 1); n++) {
		struct hpu_krow dst = hpu_krow(out, out->ndim - 1, n), src;

		if (!hpu_kget_index(c, &c->t[2], n, c->t[1].shape[0], "an index out of range", &v))
			return;
		src = hpu_krow(&c->t[1], 1, (uint64_t)v);
		hpu_kfor(&p, j, dst.n)
			hpu_krow_set(&dst, j, hpu_krow_get(&src, j));
	}
}

const struct hpu_kernel_def hpu_kernel_embedding = {
	.name = "embedding",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.phases = HPU_EMB_PHASES,
	.check = hpu_emb_fwd_check,
	.work = hpu_emb_fwd_work,
	.item_work = hpu_emb_fwd_item_work,
	.run = hpu_emb_fwd_run,
};

/*
 * An item is one column of a block of grad_weight rows, summed in fp64 on
 * the stack: it scans every index and adds those of its block, so parts
 * never add to the same element and each sum is in index order.  An item
 * then visits every index and its block, at most HPU_KERNEL_MAX_ITEM_WORK
 * elements: a launch of more than HPU_EMB_BWD_MAX_INDICES is refused.
 */
#define HPU_EMB_BLOCK 512
#define HPU_EMB_BWD_MAX_INDICES (HPU_KERNEL_MAX_ITEM_WORK - HPU_EMB_BLOCK)

static int hpu_emb_bwd_check(const struct hpu_kcall *c, uint64_t *items)
{
	const struct hpu_kview *gw = &c->t[0];
	uint64_t n = hpu_kview_numel(&c->t[2]);

	if (hpu_emb_check(c, 0, 1) || n > HPU_EMB_BWD_MAX_INDICES)
		return -1;
	items[0] = hpu_kscan_items(n);
	items[1] = (gw->shape[0] + HPU_EMB_BLOCK - 1) / HPU_EMB_BLOCK * gw->shape[1];
	return 0;
}

/* The indices; then each item scans every index and adds to a block of rows. */
static uint64_t hpu_emb_bwd_work(const struct hpu_kcall *c, uint64_t items)
{
	if (!c->state->phase)
		return hpu_kview_numel(&c->t[2]);
	return hpu_kmul_sat(items, hpu_kview_numel(&c->t[2]) + HPU_EMB_BLOCK);
}

static uint64_t hpu_emb_bwd_item_work(const struct hpu_kcall *c)
{
	uint64_t n = hpu_kview_numel(&c->t[2]);

	return c->state->phase ? n + HPU_EMB_BLOCK : hpu_kscan_item_work(n);
}

static void hpu_emb_bwd_run(const struct hpu_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hpu_kview *gw = &c->t[0], *indices = &c->t[2];
	uint64_t d = gw->shape[1], n = hpu_kview_numel(indices);
	struct hpu_kpace p = hpu_kpace_start(c);
	double acc[HPU_EMB_BLOCK];

	if (!c->state->phase) {
		hpu_emb_scan(c, 0, begin, end);
		return;
	}
	for (uint64_t it = begin; it < end && !hpu_kpace(&p, HPU_EMB_BLOCK); it++) {
		uint64_t j = it % d, v0 = it / d * HPU_EMB_BLOCK;
		uint64_t nv = gw->shape[0] - v0 < HPU_EMB_BLOCK ? gw->shape[0] - v0 : HPU_EMB_BLOCK;
		struct hpu_krow col = hpu_krow(gw, 0, j);
		/* grad_out's column j, walked with the indices. */
		struct hpu_kview gv = hpu_kview_lead(&c->t[1], c->t[1].ndim - 1, j);
		struct hpu_kcur g, idx;

		for (uint64_t i = 0; i < nv; i++)
			acc[i] = hpu_krow_get(&col, v0 + i);
		hpu_kcur_init(&g, &gv, 0);
		hpu_kcur_init(&idx, indices, 0);
		hpu_kfor(&p, k, n) {
			int64_t v = hpu_kload_index(idx.dtype, hpu_kcur_ptr(&idx));

			if (!hpu_kindex_ok(c, v, gw->shape[0], "an index out of range"))
				return;
			if (v != c->args[0] && (uint64_t)v - v0 < nv)
				acc[(uint64_t)v - v0] += hpu_kcur_get(&g);
			hpu_kcur_next(&g);
			hpu_kcur_next(&idx);
		}
		for (uint64_t i = 0; i < nv; i++)
			hpu_krow_set(&col, v0 + i, acc[i]);
	}
}

const struct hpu_kernel_def hpu_kernel_embedding_bwd = {
	.name = "embedding_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hpu_kernel_writes_t0,
	.phases = HPU_EMB_PHASES,
	.check = hpu_emb_bwd_check,
	.work = hpu_emb_bwd_work,
	.item_work = hpu_emb_bwd_item_work,
	.run = hpu_emb_bwd_run,
};
