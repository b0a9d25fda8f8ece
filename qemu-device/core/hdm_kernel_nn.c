/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: dropout, the activation backwards, layer norm and
 * embedding.  Elementwise kernels take elements as work items, layer norm
 * rows (and columns for its weight and bias gradients), embedding rows;
 * the embedding backward splits its scatter-add over grad_weight's elements
 * so that no two parts add to the same one.  Rows and columns may be long,
 * so their loops keep a pace (hdm_kpace()); no item visits more than
 * HPU_KERNEL_MAX_ITEM_WORK elements.  Indices are checked by a first phase,
 * before anything is written, and again where they index.
 */
#include "hdm_kernel_nn.h"
#include "hpu_philox.h"

_Static_assert(HDM_PHILOX_LANE_DRAWS == HPU_PHILOX_LANES * HPU_PHILOX_WORDS,
	       "a lane of Philox blocks' draws");

/* ---- elementwise backwards: grad_in = f(grad_out, x) ---- */

typedef double hdm_grad_fn(const struct hdm_kcall *c, double grad_out, double x);

/* t: grad_in, grad_out, x: one shape, floats but for a U8 mask x. */
static int hdm_grad_check(const struct hdm_kcall *c, uint32_t x_dtype, uint64_t *items)
{
	const struct hdm_kview *gi = &c->t[0], *x = &c->t[2];

	if (c->num_tensors != 3 || !hdm_dtype_is_float(gi->dtype) ||
	    !hdm_kview_float_like(&c->t[1], gi) || !hdm_kview_same_shape(x, gi) ||
	    (x_dtype == HPU_DTYPE_U8 ? x->dtype != x_dtype : !hdm_dtype_is_float(x->dtype)))
		return -1;
	*items = hdm_kview_numel(gi);
	return 0;
}

struct hdm_grad {
	const struct hdm_kcall *c;
	hdm_grad_fn *f;
};

/* e: grad_in, grad_out, x. */
static inline void hdm_grad_el(const void *ctx, uint64_t i, const struct hdm_kel *e)
{
	const struct hdm_grad *g = ctx;

	(void)i;
	hdm_kel_set(&e[0], g->f(g->c, hdm_kel_get(&e[1]), hdm_kel_get(&e[2])));
}

/* Always inlined, so that each kernel's own f is inlined into its walk; dense as hdm_kwalk()'s. */
static inline __attribute__((always_inline)) void
hdm_grad_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end, hdm_grad_fn *f,
	     const uint32_t *dense)
{
	const struct hdm_grad g = { c, f };
	struct hdm_kpace p = hdm_kpace_start(c);

	hdm_kwalk(c, 3, begin, end, hdm_grad_el, &g, dense, &p);
}

static int hdm_relu_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	return hdm_grad_check(c, HPU_DTYPE_F32, items);
}

static double hdm_relu_grad(const struct hdm_kcall *c, double g, double x)
{
	(void)c;
	return hdm_kkeep(x > 0, g);
}

static void hdm_relu_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	hdm_grad_run(c, begin, end, hdm_relu_grad, hdm_kwalk_f32);
}

const struct hdm_kernel_def hdm_kernel_relu_bwd = {
	.name = "relu_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_relu_bwd_check,
	.run = hdm_relu_bwd_run,
};

static int hdm_gelu_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (c->args[0] != 0 && c->args[0] != 1)
		return -1;
	return hdm_grad_check(c, HPU_DTYPE_F32, items);
}

/*
 * d/dx of x * Phi(x) is Phi(x) + x * phi(x); of the tanh form
 * 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), it is
 * 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx.
 */
static double hdm_gelu_grad(const struct hdm_kcall *c, double g, double x)
{
	if (c->args[0]) {
		const double k = sqrt(2 / M_PI), a = 0.044715;
		double th = tanh(k * (x + a * x * x * x));

		return g * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * k * (1 + 3 * a * x * x));
	}
	return g * (0.5 * (1 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI));
}

static void hdm_gelu_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	hdm_grad_run(c, begin, end, hdm_gelu_grad, hdm_kwalk_f32);
}

const struct hdm_kernel_def hdm_kernel_gelu_bwd = {
	.name = "gelu_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_gelu_bwd_check,
	.run = hdm_gelu_bwd_run,
};

/* ---- dropout ---- */

/* p == 1 is allowed: every draw is < 1, so everything is dropped and nothing divides by 0. */
static bool hdm_dropout_p_ok(double p)
{
	return p >= 0 && p <= 1;
}

/* out = kept ? x / (1 - p) : 0, for the forward's input and the backward's grad_out alike. */
static double hdm_dropout_apply(double p, bool kept, double x)
{
	return hdm_kkeep(kept, x / (1 - p));
}

static int hdm_dropout_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	if (!hdm_dropout_p_ok(c->scalars[0]))
		return -1;
	return hdm_grad_check(c, HPU_DTYPE_U8, items);
}

static double hdm_dropout_grad(const struct hdm_kcall *c, double g, double mask)
{
	/*
	 * At p == 1 nothing is kept, not even a stray mask bit (the forward
	 * never sets one), so no x / 0 comes out.  & rather than &&: without a
	 * branch the walk vectorizes.
	 */
	return hdm_dropout_apply(c->scalars[0], (mask != 0) & (c->scalars[0] < 1), g);
}

static void hdm_dropout_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	static const uint32_t dense[] = { HPU_DTYPE_F32, HPU_DTYPE_F32, HPU_DTYPE_U8 };

	hdm_grad_run(c, begin, end, hdm_dropout_grad, dense);
}

const struct hdm_kernel_def hdm_kernel_dropout_bwd = {
	.name = "dropout_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_dropout_bwd_check,
	.run = hdm_dropout_bwd_run,
};

/* t: out, mask, in, rng; rng (seed, offset) is read and written. */
static uint32_t hdm_dropout_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 1u << 0 | 1u << 1 | 1u << 3;
}

static int hdm_dropout_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0], *mask = &c->t[1], *rng = &c->t[3];
	const uint64_t rng_shape = 2;

	if (c->num_tensors != 4 || !hdm_dtype_is_float(out->dtype) ||
	    !hdm_kview_float_like(&c->t[2], out) || mask->dtype != HPU_DTYPE_U8 ||
	    !hdm_kview_same_shape(mask, out) || rng->dtype != HPU_DTYPE_I64 ||
	    !hdm_kview_has_shape(rng, 1, &rng_shape) || !hdm_dropout_p_ok(c->scalars[0]))
		return -1;
	*items = hdm_kview_numel(out);
	return 0;
}

/* Elements whose draws are made ahead of their walk, in lanes of blocks (hpu_philox_uniforms()). */
#define HDM_DROPOUT_CHUNK 256

/*
 * The rng's state and p, as every part reads them before any finish();
 * u[k - first + skew] is k's draw, skew being where offset + first falls
 * in its block.
 */
struct hdm_dropout {
	uint64_t seed, offset, first, skew;
	double p;
	/* A chunk's draws from the start of its first block, in whole lanes. */
	float u[HDM_DROPOUT_CHUNK + HDM_PHILOX_LANE_DRAWS];
};

/* e: out, mask, in. */
static inline __attribute__((always_inline)) void
hdm_dropout_el(const void *ctx, uint64_t k, const struct hdm_kel *e)
{
	const struct hdm_dropout *d = ctx;
	bool kept = d->u[k - d->first + d->skew] >= d->p;

	hdm_kel_set_i(&e[1], kept);
	hdm_kel_set(&e[0], hdm_dropout_apply(d->p, kept, hdm_kel_get(&e[2])));
}

/* Element k's draw depends on k alone, so parts are independent and any split draws one mask. */
static void hdm_dropout_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	static const uint32_t dense[] = { HPU_DTYPE_F32, HPU_DTYPE_U8, HPU_DTYPE_F32 };
	struct hdm_dropout d = {
		.seed = (uint64_t)hdm_kget_i(&c->t[3], 0),
		.offset = (uint64_t)hdm_kget_i(&c->t[3], 1),
		.p = c->scalars[0],
	};
	struct hdm_kpace pace = hdm_kpace_start(c);

	for (d.first = begin; d.first < end; d.first += HDM_DROPOUT_CHUNK) {
		uint64_t n = end - d.first < HDM_DROPOUT_CHUNK ? end - d.first : HDM_DROPOUT_CHUNK;

		d.skew = hdm_philox_draws(d.seed, d.offset + d.first, n, d.u);
		if (hdm_kwalk(c, 3, d.first, d.first + n, hdm_dropout_el, &d, dense, &pace))
			return;
	}
}

uint64_t hdm_philox_draws(uint64_t seed, uint64_t pos, uint64_t n, float *u)
{
	uint64_t block = pos / HPU_PHILOX_WORDS, skew = pos % HPU_PHILOX_WORDS;
	uint64_t blocks = (skew + n + HPU_PHILOX_WORDS - 1) / HPU_PHILOX_WORDS;

	for (uint64_t b = 0; b < blocks; b += HPU_PHILOX_LANES)
		hpu_philox_uniforms(seed, block + b,
				    (unsigned int)(blocks - b < HPU_PHILOX_LANES ? blocks - b
										: HPU_PHILOX_LANES),
				    &u[b * HPU_PHILOX_WORDS]);
	return skew;
}

void hdm_philox_advance(const struct hdm_kview *rng, uint64_t draws)
{
	uint8_t *offset = hdm_kview_at(rng, 1);
	uint64_t next = (uint64_t)hdm_kload_i(HPU_DTYPE_I64, offset) + draws;

	hdm_kstore_i(HPU_DTYPE_I64, offset, (int64_t)next);
}

/* After every part has read the old offset: the next launch draws past this one's counters. */
static void hdm_dropout_finish(const struct hdm_kcall *c)
{
	hdm_philox_advance(&c->t[3], hdm_kview_numel(&c->t[0]));
}

const struct hdm_kernel_def hdm_kernel_dropout = {
	.name = "dropout",
	.min_tensors = 4,
	.max_tensors = 4,
	.outputs = hdm_dropout_outputs,
	.check = hdm_dropout_check,
	.run = hdm_dropout_run,
	.finish = hdm_dropout_finish,
};

/* ---- layer norm ---- */

/*
 * A row item walks its row this many times; rows are refused past
 * HPU_KERNEL_MAX_ITEM_WORK / passes elements.
 */
#define HDM_LN_FWD_PASSES 3
#define HDM_LN_BWD_PASSES 2

/* What the forward and the backward share: in, its statistics and the optional weight. */
struct hdm_ln {
	const struct hdm_kview *in, *mean, *rstd, *weight;
	uint32_t lead;        /* in's leading (not normalised) dims */
	uint64_t rows, cols;  /* elements of the leading and of the normalised dims */
	bool has_weight, has_bias;
};

static struct hdm_ln hdm_ln_get(const struct hdm_kcall *c, unsigned int in, unsigned int mean,
				unsigned int rstd, unsigned int weight)
{
	struct hdm_ln ln = {
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
static bool hdm_ln_trailing_ok(const struct hdm_ln *ln, const struct hdm_kview *v)
{
	return hdm_dtype_is_float(v->dtype) &&
	       hdm_kview_has_shape(v, ln->in->ndim - ln->lead, ln->in->shape + ln->lead);
}

/*
 * a0 in [1, in's ndim]; a1 two flag bits; mean and rstd F32 of the leading
 * shape; rows that an item walking them passes times keeps within its bound.
 */
static int hdm_ln_check(const struct hdm_kcall *c, unsigned int ntensors, const struct hdm_ln *ln,
			unsigned int passes)
{
	if (c->num_tensors != ntensors || c->args[0] < 1 || c->args[0] > ln->in->ndim ||
	    ln->cols > HPU_KERNEL_MAX_ITEM_WORK / passes ||
	    (c->args[1] & ~3) || !hdm_dtype_is_float(ln->in->dtype) ||
	    ln->mean->dtype != HPU_DTYPE_F32 || ln->rstd->dtype != HPU_DTYPE_F32 ||
	    !hdm_kview_has_shape(ln->mean, ln->lead, ln->in->shape) ||
	    !hdm_kview_has_shape(ln->rstd, ln->lead, ln->in->shape) ||
	    (ln->has_weight && !hdm_ln_trailing_ok(ln, ln->weight)))
		return -1;
	return 0;
}

/* The weight under cursor w, walking along a row: 1 without a weight. */
static double hdm_ln_weight(const struct hdm_ln *ln, const struct hdm_kcur *w)
{
	return ln->has_weight ? hdm_kcur_get(w) : 1;
}

/* Cursors on row r's first element of in and of row (a tensor of in's shape), and on weight's. */
static void hdm_ln_row(const struct hdm_ln *ln, const struct hdm_kview *row, uint64_t r,
		       struct hdm_kcur *x, struct hdm_kcur *rk, struct hdm_kcur *w)
{
	hdm_kcur_init(x, ln->in, r * ln->cols);
	hdm_kcur_init(rk, row, r * ln->cols);
	hdm_kcur_init(w, ln->weight, 0);
}

/* t: out, mean, rstd, in, weight, bias. */
static struct hdm_ln hdm_ln_fwd_get(const struct hdm_kcall *c)
{
	return hdm_ln_get(c, 3, 1, 2, 4);
}

static uint32_t hdm_ln_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 7;
}

static int hdm_ln_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_ln ln = hdm_ln_fwd_get(c);

	if (hdm_ln_check(c, 6, &ln, HDM_LN_FWD_PASSES) || !hdm_kview_float_like(&c->t[0], ln.in) ||
	    (ln.has_bias && !hdm_ln_trailing_ok(&ln, &c->t[5])) || !(c->scalars[0] >= 0))
		return -1;
	*items = ln.rows;
	return 0;
}

static uint64_t hdm_ln_fwd_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_ln ln = hdm_ln_fwd_get(c);

	return hdm_kwork_rows(items, ln.cols);
}

static uint64_t hdm_ln_fwd_item_work(const struct hdm_kcall *c)
{
	return hdm_kwork_rows(HDM_LN_FWD_PASSES, hdm_ln_fwd_get(c).cols);
}

/* Biased variance, as torch; out may be in itself (each element is read before it is written). */
static void hdm_ln_fwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_ln ln = hdm_ln_fwd_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);
	struct hdm_kcur x, out, w, b;

	for (uint64_t r = begin; r < end && !hdm_kpace(&p, 1); r++) {
		double mean = 0, var = 0, rstd;

		hdm_ln_row(&ln, &c->t[0], r, &x, &out, &w);
		hdm_kfor(&p, j, ln.cols) {
			mean += hdm_kcur_get(&x);
			hdm_kcur_next(&x);
		}
		mean /= (double)ln.cols;
		hdm_kcur_init(&x, ln.in, r * ln.cols);
		hdm_kfor(&p, j, ln.cols) {
			double d = hdm_kcur_get(&x) - mean;

			var += d * d;
			hdm_kcur_next(&x);
		}
		rstd = 1 / sqrt(var / (double)ln.cols + c->scalars[0]);
		hdm_kset(ln.mean, r, mean);
		hdm_kset(ln.rstd, r, rstd);
		hdm_kcur_init(&x, ln.in, r * ln.cols);
		hdm_kcur_init(&b, &c->t[5], 0);
		hdm_kfor(&p, j, ln.cols) {
			double xhat = (hdm_kcur_get(&x) - mean) * rstd;
			double bias = ln.has_bias ? hdm_kcur_get(&b) : 0;

			hdm_kcur_set(&out, xhat * hdm_ln_weight(&ln, &w) + bias);
			hdm_kcur_next(&x);
			hdm_kcur_next(&out);
			hdm_kcur_next(&w);
			hdm_kcur_next(&b);
		}
	}
}

const struct hdm_kernel_def hdm_kernel_layer_norm = {
	.name = "layer_norm",
	.min_tensors = 6,
	.max_tensors = 6,
	.outputs = hdm_ln_outputs,
	.check = hdm_ln_fwd_check,
	.work = hdm_ln_fwd_work,
	.item_work = hdm_ln_fwd_item_work,
	.run = hdm_ln_fwd_run,
};

/* t: grad_in, grad_weight, grad_bias, grad_out, in, mean, rstd, weight. */
static struct hdm_ln hdm_ln_bwd_get(const struct hdm_kcall *c)
{
	return hdm_ln_get(c, 4, 5, 6, 7);
}

static uint32_t hdm_ln_bwd_outputs(const struct hdm_kcall *c)
{
	return 1u | (c->args[1] & 1 ? 2u : 0) | (c->args[1] & 2 ? 4u : 0);
}

/*
 * Two phases.  Phase 0 sums grad_weight and grad_bias over the rows:
 * items are a column's chunk of HDM_LN_ROW_CHUNK rows (chunk-major), each
 * leaving its two partial sums in the scratch.  Phase 1's items are the
 * rows of grad_in, then the columns, each joining its chunks' partials in
 * order into grad_weight and grad_bias: every sum is the same whatever the
 * split, and one of a single chunk is the plain sum over the rows.  All
 * that phase 0 reads is read before a row of grad_in is written, which may
 * be grad_out or in itself.
 */
#define HDM_LN_ROW_CHUNK HPU_KERNEL_MAX_ITEM_WORK

struct hdm_ln_part {
	double sw, sb;
};

static bool hdm_ln_bwd_sums(const struct hdm_ln *ln)
{
	return ln->has_weight || ln->has_bias;
}

/* Each column's chunks of rows (a column of no rows is one chunk of none). */
static uint64_t hdm_ln_bwd_chunks(const struct hdm_ln *ln)
{
	return ln->rows ? (ln->rows + HDM_LN_ROW_CHUNK - 1) / HDM_LN_ROW_CHUNK : 1;
}

/* grad_weight and grad_bias hold sums that every row reads into, so they may not be an input. */
static bool hdm_ln_bwd_sum_aliases(const struct hdm_kcall *c, const struct hdm_ln *ln,
				   const struct hdm_kview *sum)
{
	for (unsigned int i = 3; i < 7; i++)
		if (hdm_kview_aliases(sum, &c->t[i]))
			return true;
	return ln->has_weight && hdm_kview_aliases(sum, ln->weight);
}

/*
 * The partials fit the scratch whenever in has at most
 * HPU_KERNEL_MAX_ELEMENTS: several chunks mean fewer than 2^12 columns.
 */
static int hdm_ln_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_ln ln = hdm_ln_bwd_get(c);
	uint64_t parts;

	if (hdm_ln_check(c, 8, &ln, HDM_LN_BWD_PASSES) || !hdm_kview_float_like(&c->t[0], ln.in) ||
	    !hdm_kview_float_like(&c->t[3], ln.in) ||
	    (ln.has_weight && (!hdm_ln_trailing_ok(&ln, &c->t[1]) ||
			       hdm_ln_bwd_sum_aliases(c, &ln, &c->t[1]))) ||
	    (ln.has_bias && (!hdm_ln_trailing_ok(&ln, &c->t[2]) ||
			     hdm_ln_bwd_sum_aliases(c, &ln, &c->t[2]))))
		return -1;
	parts = hdm_ln_bwd_sums(&ln) ? hdm_kmul_sat(ln.cols, hdm_ln_bwd_chunks(&ln)) : 0;
	if (parts > HDM_KERNEL_SCRATCH_MAX / sizeof(struct hdm_ln_part))
		return -1;
	items[0] = parts;
	items[1] = ln.rows + (hdm_ln_bwd_sums(&ln) ? ln.cols : 0);
	return 0;
}

/* Every row for the sums; then every row again, and the joins. */
static uint64_t hdm_ln_bwd_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_ln ln = hdm_ln_bwd_get(c);

	if (!hdm_ln_bwd_sums(&ln))
		return c->state->phase ? hdm_kwork_rows(ln.rows, ln.cols) : 0;
	if (!c->state->phase)
		return hdm_kwork_rows(items, ln.rows < HDM_LN_ROW_CHUNK ? ln.rows : HDM_LN_ROW_CHUNK);
	return hdm_kwork_rows(ln.rows, ln.cols) + hdm_kmul_sat(ln.cols, hdm_ln_bwd_chunks(&ln));
}

/* A chunk of a column; a row walked twice, or a column's join. */
static uint64_t hdm_ln_bwd_item_work(const struct hdm_kcall *c)
{
	struct hdm_ln ln = hdm_ln_bwd_get(c);
	uint64_t row = hdm_kwork_rows(HDM_LN_BWD_PASSES, ln.cols), join = hdm_ln_bwd_chunks(&ln);

	if (!c->state->phase)
		return hdm_kwork_rows(1, ln.rows < HDM_LN_ROW_CHUNK ? ln.rows : HDM_LN_ROW_CHUNK);
	return row > join ? row : join;
}

/* One partial per phase 0 item. */
static uint64_t hdm_ln_bwd_scratch(const struct hdm_kcall *c, uint64_t items)
{
	(void)c;
	return hdm_kmul_sat(items, sizeof(struct hdm_ln_part));
}

/*
 * With xhat = (x - mean) * rstd and gy = grad_out * weight:
 * grad_in = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)).
 */
static void hdm_ln_bwd_rows(const struct hdm_kcall *c, const struct hdm_ln *ln, uint64_t begin,
			    uint64_t end, struct hdm_kpace *p)
{
	struct hdm_kcur x, g, w, gi;

	for (uint64_t r = begin; r < end && !hdm_kpace(p, 1); r++) {
		double mean = hdm_kget(ln->mean, r), rstd = hdm_kget(ln->rstd, r), sg = 0, sgx = 0;

		hdm_ln_row(ln, &c->t[3], r, &x, &g, &w);
		hdm_kfor(p, j, ln->cols) {
			double gy = hdm_kcur_get(&g) * hdm_ln_weight(ln, &w);

			sg += gy;
			sgx += gy * (hdm_kcur_get(&x) - mean) * rstd;
			hdm_kcur_next(&x);
			hdm_kcur_next(&g);
			hdm_kcur_next(&w);
		}
		sg /= (double)ln->cols;
		sgx /= (double)ln->cols;
		hdm_ln_row(ln, &c->t[3], r, &x, &g, &w);
		hdm_kcur_init(&gi, &c->t[0], r * ln->cols);
		hdm_kfor(p, j, ln->cols) {
			double gy = hdm_kcur_get(&g) * hdm_ln_weight(ln, &w);
			double xhat = (hdm_kcur_get(&x) - mean) * rstd;

			hdm_kcur_set(&gi, rstd * (gy - sg - xhat * sgx));
			hdm_kcur_next(&x);
			hdm_kcur_next(&g);
			hdm_kcur_next(&w);
			hdm_kcur_next(&gi);
		}
	}
}

/*
 * Phase 0's items [begin, end): the partials, over a chunk of rows, of
 * grad_weight = sum of grad_out * xhat and grad_bias = sum of grad_out.
 */
static void hdm_ln_bwd_parts(const struct hdm_kcall *c, const struct hdm_ln *ln, uint64_t begin,
			     uint64_t end, struct hdm_kpace *p)
{
	struct hdm_ln_part *part = c->state->scratch;

	for (uint64_t it = begin; it < end && !hdm_kpace(p, 1); it++) {
		uint64_t j = it % ln->cols, r0 = it / ln->cols * HDM_LN_ROW_CHUNK;
		uint64_t n = ln->rows - r0 < HDM_LN_ROW_CHUNK ? ln->rows - r0 : HDM_LN_ROW_CHUNK;
		struct hdm_kview gv = hdm_kview_lead(&c->t[3], ln->lead, j);
		struct hdm_kview xv = hdm_kview_lead(ln->in, ln->lead, j);
		struct hdm_kcur g, x, mean, rstd;
		double sw = 0, sb = 0;

		hdm_kcur_init(&g, &gv, r0);
		hdm_kcur_init(&x, &xv, r0);
		hdm_kcur_init(&mean, ln->mean, r0);
		hdm_kcur_init(&rstd, ln->rstd, r0);
		hdm_kfor(p, r, n) {
			double gr = hdm_kcur_get(&g);

			sw += gr * (hdm_kcur_get(&x) - hdm_kcur_get(&mean)) * hdm_kcur_get(&rstd);
			sb += gr;
			hdm_kcur_next(&g);
			hdm_kcur_next(&x);
			hdm_kcur_next(&mean);
			hdm_kcur_next(&rstd);
		}
		part[it] = (struct hdm_ln_part){ sw, sb };
	}
}

/* Columns [begin, end): their partials joined in order, into grad_weight and grad_bias. */
static void hdm_ln_bwd_join(const struct hdm_kcall *c, const struct hdm_ln *ln, uint64_t begin,
			    uint64_t end, struct hdm_kpace *p)
{
	const struct hdm_ln_part *part = c->state->scratch;
	uint64_t chunks = hdm_ln_bwd_chunks(ln);

	for (uint64_t j = begin; j < end && !hdm_kpace(p, chunks); j++) {
		struct hdm_ln_part sum = part[j];

		for (uint64_t ch = 1; ch < chunks; ch++) {
			sum.sw += part[ch * ln->cols + j].sw;
			sum.sb += part[ch * ln->cols + j].sb;
		}
		if (ln->has_weight)
			hdm_kset(&c->t[1], j, sum.sw);
		if (ln->has_bias)
			hdm_kset(&c->t[2], j, sum.sb);
	}
}

static void hdm_ln_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_ln ln = hdm_ln_bwd_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	if (!c->state->phase) {
		hdm_ln_bwd_parts(c, &ln, begin, end, &p);
		return;
	}
	if (begin < ln.rows)
		hdm_ln_bwd_rows(c, &ln, begin, end < ln.rows ? end : ln.rows, &p);
	if (end > ln.rows)
		hdm_ln_bwd_join(c, &ln, begin > ln.rows ? begin - ln.rows : 0, end - ln.rows, &p);
}

const struct hdm_kernel_def hdm_kernel_layer_norm_bwd = {
	.name = "layer_norm_bwd",
	.min_tensors = 8,
	.max_tensors = 8,
	.outputs = hdm_ln_bwd_outputs,
	.phases = 2,
	.check = hdm_ln_bwd_check,
	.work = hdm_ln_bwd_work,
	.item_work = hdm_ln_bwd_item_work,
	.scratch = hdm_ln_bwd_scratch,
	.run = hdm_ln_bwd_run,
};

/* ---- embedding ---- */

/*
 * Phase 0 checks every index (hdm_kscan_chunk()), so that a bad one fails
 * the launch before a row is written; phase 1 gathers or scatter-adds.
 */
#define HDM_EMB_PHASES 2

/*
 * t[table] a float [V, D], t[rows] a float of indices' shape + [D], indices
 * (t[2]) index values in [0, V), a0 the padding index or -1.  rows may not
 * be table itself: a gather in place would read rows it has overwritten.
 * Items: the scan's, then per phase 1 item of the kernel's.
 */
static int hdm_emb_check(const struct hdm_kcall *c, unsigned int table, unsigned int rows)
{
	const struct hdm_kview *tv = &c->t[table], *rv = &c->t[rows], *iv = &c->t[2];
	uint64_t shape[HPU_TENSOR_MAX_DIMS];

	if (c->num_tensors != 3 || tv->ndim != 2 || !hdm_dtype_is_float(tv->dtype) ||
	    !hdm_dtype_is_float(rv->dtype) || !hdm_kview_is_index(iv) ||
	    iv->ndim >= HPU_TENSOR_MAX_DIMS || c->args[0] < -1 ||
	    (c->args[0] >= 0 && (uint64_t)c->args[0] >= tv->shape[0]) || hdm_kview_aliases(rv, tv))
		return -1;
	memcpy(shape, iv->shape, iv->ndim * sizeof(shape[0]));
	shape[iv->ndim] = tv->shape[1];
	if (!hdm_kview_has_shape(rv, iv->ndim + 1, shape))
		return -1;
	return 0;
}

/* Phase 0's items over the indices in a launch whose table is t[table]. */
static void hdm_emb_scan(const struct hdm_kcall *c, unsigned int table, uint64_t begin,
			 uint64_t end)
{
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t k = begin; k < end && !hdm_kstop(c); k++)
		hdm_kscan_chunk(c, &c->t[2], c->t[table].shape[0], NULL, k, &p,
				"an index out of range");
}

/*
 * Items: indices, each a row of D, at most HPU_KERNEL_MAX_ITEM_WORK
 * elements (longer rows are refused).
 */
static int hdm_emb_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	uint64_t n = hdm_kview_numel(&c->t[2]);

	if (hdm_emb_check(c, 1, 0) || c->t[1].shape[1] > HPU_KERNEL_MAX_ITEM_WORK)
		return -1;
	items[0] = hdm_kscan_items(n);
	items[1] = n;
	return 0;
}

/* The indices, then a row of D each. */
static uint64_t hdm_emb_fwd_work(const struct hdm_kcall *c, uint64_t items)
{
	if (!c->state->phase)
		return hdm_kview_numel(&c->t[2]);
	return hdm_kwork_rows(items, c->t[1].shape[1]);
}

static uint64_t hdm_emb_fwd_item_work(const struct hdm_kcall *c)
{
	if (!c->state->phase)
		return hdm_kscan_item_work(hdm_kview_numel(&c->t[2]));
	return hdm_kwork_rows(1, c->t[1].shape[1]);
}

static void hdm_emb_fwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *out = &c->t[0];
	struct hdm_kpace p = hdm_kpace_start(c);
	int64_t v;

	if (!c->state->phase) {
		hdm_emb_scan(c, 1, begin, end);
		return;
	}
	for (uint64_t n = begin; n < end && !hdm_kpace(&p, 1); n++) {
		struct hdm_krow dst = hdm_krow(out, out->ndim - 1, n), src;

		if (!hdm_kget_index(c, &c->t[2], n, c->t[1].shape[0], "an index out of range", &v))
			return;
		src = hdm_krow(&c->t[1], 1, (uint64_t)v);
		hdm_kfor(&p, j, dst.n)
			hdm_krow_set(&dst, j, hdm_krow_get(&src, j));
	}
}

const struct hdm_kernel_def hdm_kernel_embedding = {
	.name = "embedding",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.phases = HDM_EMB_PHASES,
	.check = hdm_emb_fwd_check,
	.work = hdm_emb_fwd_work,
	.item_work = hdm_emb_fwd_item_work,
	.run = hdm_emb_fwd_run,
};

/*
 * An item is one column of a block of grad_weight rows, summed in fp64 on
 * the stack: it scans every index and adds those of its block, so parts
 * never add to the same element and each sum is in index order.  An item
 * then visits every index and its block, at most HPU_KERNEL_MAX_ITEM_WORK
 * elements: a launch of more than HDM_EMB_BWD_MAX_INDICES is refused.
 */
#define HDM_EMB_BLOCK 512
#define HDM_EMB_BWD_MAX_INDICES (HPU_KERNEL_MAX_ITEM_WORK - HDM_EMB_BLOCK)

static int hdm_emb_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *gw = &c->t[0];
	uint64_t n = hdm_kview_numel(&c->t[2]);

	if (hdm_emb_check(c, 0, 1) || n > HDM_EMB_BWD_MAX_INDICES)
		return -1;
	items[0] = hdm_kscan_items(n);
	items[1] = (gw->shape[0] + HDM_EMB_BLOCK - 1) / HDM_EMB_BLOCK * gw->shape[1];
	return 0;
}

/* The indices; then each item scans every index and adds to a block of rows. */
static uint64_t hdm_emb_bwd_work(const struct hdm_kcall *c, uint64_t items)
{
	if (!c->state->phase)
		return hdm_kview_numel(&c->t[2]);
	return hdm_kmul_sat(items, hdm_kview_numel(&c->t[2]) + HDM_EMB_BLOCK);
}

static uint64_t hdm_emb_bwd_item_work(const struct hdm_kcall *c)
{
	uint64_t n = hdm_kview_numel(&c->t[2]);

	return c->state->phase ? n + HDM_EMB_BLOCK : hdm_kscan_item_work(n);
}

static void hdm_emb_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *gw = &c->t[0], *indices = &c->t[2];
	uint64_t d = gw->shape[1], n = hdm_kview_numel(indices);
	struct hdm_kpace p = hdm_kpace_start(c);
	double acc[HDM_EMB_BLOCK];

	if (!c->state->phase) {
		hdm_emb_scan(c, 0, begin, end);
		return;
	}
	for (uint64_t it = begin; it < end && !hdm_kpace(&p, HDM_EMB_BLOCK); it++) {
		uint64_t j = it % d, v0 = it / d * HDM_EMB_BLOCK;
		uint64_t nv = gw->shape[0] - v0 < HDM_EMB_BLOCK ? gw->shape[0] - v0 : HDM_EMB_BLOCK;
		struct hdm_krow col = hdm_krow(gw, 0, j);
		/* grad_out's column j, walked with the indices. */
		struct hdm_kview gv = hdm_kview_lead(&c->t[1], c->t[1].ndim - 1, j);
		struct hdm_kcur g, idx;

		for (uint64_t i = 0; i < nv; i++)
			acc[i] = hdm_krow_get(&col, v0 + i);
		hdm_kcur_init(&g, &gv, 0);
		hdm_kcur_init(&idx, indices, 0);
		hdm_kfor(&p, k, n) {
			int64_t v = hdm_kload_index(idx.dtype, hdm_kcur_ptr(&idx));

			if (!hdm_kindex_ok(c, v, gw->shape[0], "an index out of range"))
				return;
			if (v != c->args[0] && (uint64_t)v - v0 < nv)
				acc[(uint64_t)v - v0] += hdm_kcur_get(&g);
			hdm_kcur_next(&g);
			hdm_kcur_next(&idx);
		}
		for (uint64_t i = 0; i < nv; i++)
			hdm_krow_set(&col, v0 + i, acc[i]);
	}
}

const struct hdm_kernel_def hdm_kernel_embedding_bwd = {
	.name = "embedding_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.phases = HDM_EMB_PHASES,
	.check = hdm_emb_bwd_check,
	.work = hdm_emb_bwd_work,
	.item_work = hdm_emb_bwd_item_work,
	.run = hdm_emb_bwd_run,
};
