/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: RMSNorm forward and backward (RMS_NORM,
 * RMS_NORM_BWD in hpu_kernels.h), layer norm without the mean and the bias.
 * Items are rows of the normalised dims; the weight gradient sums over rows
 * in a first phase of column chunks whose partials a second phase joins in
 * order, so every sum is the same whatever the split.  Rows may be long, so
 * their loops keep a pace (hdm_kpace()); no item visits more than
 * HPU_KERNEL_MAX_ITEM_WORK elements.
 */
#include "hdm_kernel_nn.h"

/* Each row item walks its row twice; rows are refused past HPU_KERNEL_MAX_ITEM_WORK / 2. */
#define HDM_RMS_PASSES 2
/* Rows a weight-gradient partial sums (a chunk of a column). */
#define HDM_RMS_ROW_CHUNK HPU_KERNEL_MAX_ITEM_WORK

struct hdm_rms {
	const struct hdm_kview *in, *rstd, *weight;
	uint32_t lead;       /* in's leading (not normalised) dims */
	uint64_t rows, cols; /* elements of the leading and of the normalised dims */
	bool has_weight;
};

static struct hdm_rms hdm_rms_get(const struct hdm_kcall *c, unsigned int in, unsigned int rstd,
				  unsigned int weight)
{
	struct hdm_rms r = {
		.in = &c->t[in], .rstd = &c->t[rstd], .weight = &c->t[weight],
		.rows = 1, .cols = 1, .has_weight = c->args[1] == 1,
	};

	/* A bad a0 (check() rejects it) still gives a lead within in's dims. */
	if (c->args[0] >= 1 && c->args[0] <= r.in->ndim)
		r.lead = r.in->ndim - (uint32_t)c->args[0];
	for (uint32_t d = 0; d < r.in->ndim; d++)
		*(d < r.lead ? &r.rows : &r.cols) *= r.in->shape[d];
	return r;
}

/* A float of the normalised dims' shape: weight and its gradient. */
static bool hdm_rms_trailing_ok(const struct hdm_rms *r, const struct hdm_kview *v)
{
	return hdm_dtype_is_float(v->dtype) &&
	       hdm_kview_has_shape(v, r->in->ndim - r->lead, r->in->shape + r->lead);
}

/* What both directions ask: a0, a1, in float, rstd F32 of the leading shape, weight, row length. */
static int hdm_rms_check(const struct hdm_kcall *c, unsigned int ntensors, const struct hdm_rms *r)
{
	if (c->num_tensors != ntensors || c->args[0] < 1 || c->args[0] > r->in->ndim ||
	    (c->args[1] != 0 && c->args[1] != 1) || !hdm_dtype_is_float(r->in->dtype) ||
	    r->cols > HPU_KERNEL_MAX_ITEM_WORK / HDM_RMS_PASSES || r->rstd->dtype != HPU_DTYPE_F32 ||
	    !hdm_kview_has_shape(r->rstd, r->lead, r->in->shape) ||
	    (r->has_weight && !hdm_rms_trailing_ok(r, r->weight)))
		return -1;
	return 0;
}

/* The weight under cursor w, walking along a row: 1 without a weight. */
static double hdm_rms_weight(const struct hdm_rms *r, const struct hdm_kcur *w)
{
	return r->has_weight ? hdm_kcur_get(w) : 1;
}

static uint64_t hdm_rms_row_item_work(const struct hdm_rms *r)
{
	return hdm_kwork_rows(HDM_RMS_PASSES, r->cols);
}

/* ---- forward: t out, rstd, in, weight ---- */

static struct hdm_rms hdm_rms_fwd_get(const struct hdm_kcall *c)
{
	return hdm_rms_get(c, 2, 1, 3);
}

static uint32_t hdm_rms_fwd_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 3;
}

static int hdm_rms_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_rms r = hdm_rms_fwd_get(c);

	if (hdm_rms_check(c, 4, &r) || !hdm_kview_float_like(&c->t[0], r.in) ||
	    !(c->scalars[0] >= 0))
		return -1;
	*items = r.rows;
	return 0;
}

static uint64_t hdm_rms_fwd_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_rms r = hdm_rms_fwd_get(c);

	return hdm_kmul_sat(items, hdm_rms_row_item_work(&r));
}

static uint64_t hdm_rms_fwd_item_work(const struct hdm_kcall *c)
{
	struct hdm_rms r = hdm_rms_fwd_get(c);

	return hdm_rms_row_item_work(&r);
}

/* out may be in itself: a row is read whole before any of it is written. */
static void hdm_rms_fwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_rms r = hdm_rms_fwd_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);
	struct hdm_kcur x, out, w;

	for (uint64_t row = begin; row < end && !hdm_kpace(&p, 1); row++) {
		double ss = 0, rstd;

		hdm_kcur_init(&x, r.in, row * r.cols);
		hdm_kfor(&p, j, r.cols) {
			double v = hdm_kcur_get(&x);

			ss += v * v;
			hdm_kcur_next(&x);
		}
		rstd = 1 / sqrt(ss / (double)r.cols + c->scalars[0]);
		hdm_kset(r.rstd, row, rstd);
		hdm_kcur_init(&x, r.in, row * r.cols);
		hdm_kcur_init(&out, &c->t[0], row * r.cols);
		hdm_kcur_init(&w, r.weight, 0);
		hdm_kfor(&p, j, r.cols) {
			hdm_kcur_set(&out, hdm_kcur_get(&x) * rstd * hdm_rms_weight(&r, &w));
			hdm_kcur_next(&x);
			hdm_kcur_next(&out);
			hdm_kcur_next(&w);
		}
	}
}

const struct hdm_kernel_def hdm_kernel_rms_norm = {
	.name = "rms_norm",
	.min_tensors = 4,
	.max_tensors = 4,
	.outputs = hdm_rms_fwd_outputs,
	.check = hdm_rms_fwd_check,
	.work = hdm_rms_fwd_work,
	.item_work = hdm_rms_fwd_item_work,
	.run = hdm_rms_fwd_run,
};

/* ---- backward: t grad_in, grad_weight, grad_out, in, rstd, weight ---- */

static struct hdm_rms hdm_rms_bwd_get(const struct hdm_kcall *c)
{
	return hdm_rms_get(c, 3, 4, 5);
}

static uint32_t hdm_rms_bwd_outputs(const struct hdm_kcall *c)
{
	return c->args[1] == 1 ? 3u : 1u;
}

/* Each column's chunks of rows (a column of no rows is one chunk of none). */
static uint64_t hdm_rms_bwd_chunks(const struct hdm_rms *r)
{
	return r->rows ? (r->rows + HDM_RMS_ROW_CHUNK - 1) / HDM_RMS_ROW_CHUNK : 1;
}

static uint64_t hdm_rms_bwd_chunk_rows(const struct hdm_rms *r)
{
	return r->rows < HDM_RMS_ROW_CHUNK ? r->rows : HDM_RMS_ROW_CHUNK;
}

/*
 * Phase 0: a weight gradient's partials, one per column and chunk of rows
 * (chunk-major), in the scratch; phase 1: the rows of grad_in, then each
 * column's join.  grad_weight, summed into, may alias no input.  The
 * partials fit the scratch whenever in has at most HPU_KERNEL_MAX_ELEMENTS.
 */
static int hdm_rms_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_rms r = hdm_rms_bwd_get(c);
	uint64_t parts = 0;

	if (hdm_rms_check(c, 6, &r) || !hdm_kview_float_like(&c->t[0], r.in) ||
	    !hdm_kview_float_like(&c->t[2], r.in))
		return -1;
	if (r.has_weight) {
		if (!hdm_rms_trailing_ok(&r, &c->t[1]))
			return -1;
		for (unsigned int i = 2; i < 6; i++)
			if (hdm_kview_aliases(&c->t[1], &c->t[i]))
				return -1;
		parts = hdm_kmul_sat(r.cols, hdm_rms_bwd_chunks(&r));
		if (parts > HDM_KERNEL_SCRATCH_MAX / sizeof(double))
			return -1;
	}
	items[0] = parts;
	items[1] = r.rows + (r.has_weight ? r.cols : 0);
	return 0;
}

static uint64_t hdm_rms_bwd_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_rms r = hdm_rms_bwd_get(c);

	if (!c->state->phase)
		return hdm_kwork_rows(items, hdm_rms_bwd_chunk_rows(&r));
	return hdm_kmul_sat(hdm_kwork_rows(r.rows, r.cols), HDM_RMS_PASSES) +
	       (r.has_weight ? hdm_kmul_sat(r.cols, hdm_rms_bwd_chunks(&r)) : 0);
}

/* A chunk of a column; a row walked twice, or a column's join. */
static uint64_t hdm_rms_bwd_item_work(const struct hdm_kcall *c)
{
	struct hdm_rms r = hdm_rms_bwd_get(c);
	uint64_t row = hdm_rms_row_item_work(&r), join = hdm_rms_bwd_chunks(&r);

	if (!c->state->phase)
		return hdm_kwork_rows(1, hdm_rms_bwd_chunk_rows(&r));
	return row > join ? row : join;
}

static uint64_t hdm_rms_bwd_scratch(const struct hdm_kcall *c, uint64_t items)
{
	(void)c;
	return hdm_kmul_sat(items, sizeof(double));
}

/* grad_in = rstd * (gy - xhat * mean(gy * xhat)), gy = grad_out * weight, xhat = x * rstd. */
static void hdm_rms_bwd_rows(const struct hdm_kcall *c, const struct hdm_rms *r, uint64_t begin,
			     uint64_t end, struct hdm_kpace *p)
{
	struct hdm_kcur x, g, w, gi;

	for (uint64_t row = begin; row < end && !hdm_kpace(p, 1); row++) {
		double rstd = hdm_kget(r->rstd, row), sgx = 0;

		hdm_kcur_init(&x, r->in, row * r->cols);
		hdm_kcur_init(&g, &c->t[2], row * r->cols);
		hdm_kcur_init(&w, r->weight, 0);
		hdm_kfor(p, j, r->cols) {
			sgx += hdm_kcur_get(&g) * hdm_rms_weight(r, &w) * hdm_kcur_get(&x) * rstd;
			hdm_kcur_next(&x);
			hdm_kcur_next(&g);
			hdm_kcur_next(&w);
		}
		sgx /= (double)r->cols;
		hdm_kcur_init(&x, r->in, row * r->cols);
		hdm_kcur_init(&g, &c->t[2], row * r->cols);
		hdm_kcur_init(&w, r->weight, 0);
		hdm_kcur_init(&gi, &c->t[0], row * r->cols);
		hdm_kfor(p, j, r->cols) {
			double gy = hdm_kcur_get(&g) * hdm_rms_weight(r, &w);

			hdm_kcur_set(&gi, rstd * (gy - hdm_kcur_get(&x) * rstd * sgx));
			hdm_kcur_next(&x);
			hdm_kcur_next(&g);
			hdm_kcur_next(&w);
			hdm_kcur_next(&gi);
		}
	}
}

/* Phase 0's items [begin, end): sums of grad_out * xhat over a chunk of a column's rows. */
static void hdm_rms_bwd_parts(const struct hdm_kcall *c, const struct hdm_rms *r, uint64_t begin,
			      uint64_t end, struct hdm_kpace *p)
{
	double *part = c->state->scratch;

	for (uint64_t it = begin; it < end && !hdm_kpace(p, 1); it++) {
		uint64_t j = it % r->cols, r0 = it / r->cols * HDM_RMS_ROW_CHUNK;
		uint64_t n = r->rows - r0 < HDM_RMS_ROW_CHUNK ? r->rows - r0 : HDM_RMS_ROW_CHUNK;
		struct hdm_kview gv = hdm_kview_lead(&c->t[2], r->lead, j);
		struct hdm_kview xv = hdm_kview_lead(r->in, r->lead, j);
		struct hdm_kcur g, x, rstd;
		double s = 0;

		hdm_kcur_init(&g, &gv, r0);
		hdm_kcur_init(&x, &xv, r0);
		hdm_kcur_init(&rstd, r->rstd, r0);
		hdm_kfor(p, i, n) {
			s += hdm_kcur_get(&g) * hdm_kcur_get(&x) * hdm_kcur_get(&rstd);
			hdm_kcur_next(&g);
			hdm_kcur_next(&x);
			hdm_kcur_next(&rstd);
		}
		part[it] = s;
	}
}

/* Columns [begin, end): their partials added in chunk order into grad_weight. */
static void hdm_rms_bwd_join(const struct hdm_kcall *c, const struct hdm_rms *r, uint64_t begin,
			     uint64_t end, struct hdm_kpace *p)
{
	const double *part = c->state->scratch;
	uint64_t chunks = hdm_rms_bwd_chunks(r);

	for (uint64_t j = begin; j < end && !hdm_kpace(p, chunks); j++) {
		double s = part[j];

		for (uint64_t ch = 1; ch < chunks; ch++)
			s += part[ch * r->cols + j];
		hdm_kset(&c->t[1], j, s);
	}
}

static void hdm_rms_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_rms r = hdm_rms_bwd_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	if (!c->state->phase) {
		hdm_rms_bwd_parts(c, &r, begin, end, &p);
		return;
	}
	if (begin < r.rows)
		hdm_rms_bwd_rows(c, &r, begin, end < r.rows ? end : r.rows, &p);
	if (end > r.rows)
		hdm_rms_bwd_join(c, &r, begin > r.rows ? begin - r.rows : 0, end - r.rows, &p);
}

const struct hdm_kernel_def hdm_kernel_rms_norm_bwd = {
	.name = "rms_norm_bwd",
	.min_tensors = 6,
	.max_tensors = 6,
	.outputs = hdm_rms_bwd_outputs,
	.phases = 2,
	.check = hdm_rms_bwd_check,
	.work = hdm_rms_bwd_work,
	.item_work = hdm_rms_bwd_item_work,
	.scratch = hdm_rms_bwd_scratch,
	.run = hdm_rms_bwd_run,
};
