/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels a model's glue needs: SILU_BWD, TRIANGLE (triu and
 * tril) and ARANGE (hpu_kernels.h).  Each is elementwise over its output,
 * an element a work item, walked with hdm_kwalk().
 */
#include "hdm_kernel_nn.h"

/* ---- SILU_BWD: t grad_in, grad_out, in ---- */

static int hdm_silu_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *gi = &c->t[0];

	for (uint32_t a = 0; a < HPU_KERNEL_MAX_ARGS; a++)
		if (c->args[a])
			return -1;
	if (c->num_tensors != 3 || !hdm_dtype_is_float(gi->dtype) ||
	    !hdm_kview_float_like(&c->t[1], gi) || !hdm_kview_float_like(&c->t[2], gi))
		return -1;
	*items = hdm_kview_numel(gi);
	return 0;
}

static inline __attribute__((always_inline)) void
hdm_silu_bwd_el(const void *ctx, uint64_t i, const struct hdm_kel *e)
{
	double x = hdm_kel_get(&e[2]), s = 1 / (1 + exp(-x));

	(void)ctx;
	(void)i;
	hdm_kel_set(&e[0], hdm_kel_get(&e[1]) * s * (1 + x * (1 - s)));
}

static void hdm_silu_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_kpace p = hdm_kpace_start(c);

	hdm_kwalk(c, 3, begin, end, hdm_silu_bwd_el, NULL, hdm_kwalk_f32, &p);
}

const struct hdm_kernel_def hdm_kernel_silu_bwd = {
	.name = "silu_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_silu_bwd_check,
	.run = hdm_silu_bwd_run,
};

/* ---- TRIANGLE: t out, in; a0 diagonal, a1 upper ---- */

struct hdm_tri {
	uint64_t rows, cols; /* the last two dims */
	int64_t diag;
	bool upper;
	size_t size; /* element bytes: an element kept is copied, one dropped zeroed */
};

/* Element i (row-major over out's shape) is kept. */
static inline bool hdm_tri_keeps(const struct hdm_tri *t, uint64_t i)
{
	int64_t j = (int64_t)(i % t->cols), r = (int64_t)(i / t->cols % t->rows);

	/* j - r is within +-2^32 (HPU_KERNEL_MAX_ELEMENTS); diag saturates the compare. */
	return t->upper ? j - r >= t->diag : j - r <= t->diag;
}

static inline __attribute__((always_inline)) void
hdm_tri_el(const void *ctx, uint64_t i, const struct hdm_kel *e)
{
	const struct hdm_tri *t = ctx;

	if (hdm_tri_keeps(t, i))
		memmove(e[0].p, e[1].p, t->size);
	else
		memset(e[0].p, 0, t->size);
}

/* Same dtype both (bits move unchanged; zero bytes are 0 in every dtype), same shape, ndim >= 2. */
static int hdm_tri_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0];

	for (uint32_t a = 2; a < HPU_KERNEL_MAX_ARGS; a++)
		if (c->args[a])
			return -1;
	if (c->num_tensors != 2 || out->ndim < 2 || c->t[1].dtype != out->dtype ||
	    !hdm_kview_same_shape(&c->t[1], out) || (c->args[1] != 0 && c->args[1] != 1))
		return -1;
	*items = hdm_kview_numel(out);
	return 0;
}

static void hdm_tri_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *out = &c->t[0];
	struct hdm_tri t = {
		.rows = out->shape[out->ndim - 2], .cols = out->shape[out->ndim - 1],
		.diag = c->args[0], .upper = c->args[1], .size = hdm_dtype_size(out->dtype),
	};
	struct hdm_kpace p = hdm_kpace_start(c);

	hdm_kwalk(c, 2, begin, end, hdm_tri_el, &t, hdm_kwalk_f32, &p);
}

const struct hdm_kernel_def hdm_kernel_triangle = {
	.name = "triangle",
	.min_tensors = 2,
	.max_tensors = 2,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_tri_check,
	.run = hdm_tri_run,
};

/* ---- ARANGE: t out; s0 start, s1 step; a0 lanes, a1 chunk ---- */

struct hdm_arange {
	double start, step;
	int64_t istart, istep;
	uint64_t n, lanes, chunk;
	uint32_t dtype;
};

/* v as out's dtype stores it. */
static double hdm_arange_round(uint32_t dtype, double v)
{
	uint8_t b[sizeof(double)];

	hdm_kstore_f(dtype, b, v);
	return hdm_kload_f(dtype, b);
}

/* start + k * step as the CPU's scalar loop computes it: double for F32, float for BF16. */
static inline double hdm_arange_at(const struct hdm_arange *a, uint64_t k)
{
	if (a->dtype == HPU_DTYPE_BF16)
		return (float)((float)a->start + (float)a->step * (float)k);
	return a->start + a->step * (double)k;
}

/*
 * Element i.  Integral: start + i * step in wrapping int64.  Float: the
 * CPU's loop, emulated: it computes chunks of `chunk` elements (its
 * threads' ranges; 0: one chunk), and in each chunk blocks of 2 * lanes
 * whose lanes run from a base stored in out's dtype first; the chunk's
 * tail is computed element by element.
 */
static double hdm_arange_value(const struct hdm_arange *a, uint64_t i)
{
	uint64_t b = a->chunk ? i / a->chunk * a->chunk : 0;
	uint64_t len = a->chunk && a->n - b > a->chunk ? a->chunk : a->n - b, j = i - b, k;
	double base;

	if (!a->lanes || j >= len / (2 * a->lanes) * (2 * a->lanes))
		return hdm_arange_at(a, i);
	k = i - j % a->lanes;
	base = hdm_arange_round(a->dtype, hdm_arange_at(a, k));
	if (a->dtype == HPU_DTYPE_BF16)
		return (float)base + (float)(i - k) * (float)a->step;
	return base + (double)(i - k) * a->step;
}

static inline __attribute__((always_inline)) void
hdm_arange_el(const void *ctx, uint64_t i, const struct hdm_kel *e)
{
	const struct hdm_arange *a = ctx;

	if (hdm_dtype_is_float(a->dtype))
		hdm_kel_set(&e[0], hdm_arange_value(a, i));
	else
		hdm_kel_set_i(&e[0], (int64_t)((uint64_t)a->istart + (uint64_t)a->istep * i));
}

/* A whole number int64 holds exactly. */
static bool hdm_arange_whole(double v)
{
	return v == trunc(v) && v >= -0x1p63 && v < 0x1p63;
}

static int hdm_arange_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0];
	bool fl = hdm_dtype_is_float(out->dtype);

	for (uint32_t a = 2; a < HPU_KERNEL_MAX_ARGS; a++)
		if (c->args[a])
			return -1;
	if (c->num_tensors != 1 || out->ndim != 1 || out->dtype == HPU_DTYPE_U8 ||
	    c->args[0] < 0 || c->args[0] > 64 || c->args[1] < 0 || !isfinite(c->scalars[0]) ||
	    !isfinite(c->scalars[1]) ||
	    (!fl && (!hdm_arange_whole(c->scalars[0]) || !hdm_arange_whole(c->scalars[1]))))
		return -1;
	*items = hdm_kview_numel(out);
	return 0;
}

static void hdm_arange_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_arange a = {
		.start = c->scalars[0], .step = c->scalars[1], .n = hdm_kview_numel(&c->t[0]),
		.lanes = (uint64_t)c->args[0], .chunk = (uint64_t)c->args[1],
		.dtype = c->t[0].dtype,
	};
	struct hdm_kpace p = hdm_kpace_start(c);

	if (!hdm_dtype_is_float(a.dtype)) {
		a.istart = (int64_t)a.start;
		a.istep = (int64_t)a.step;
	}
	hdm_kwalk(c, 1, begin, end, hdm_arange_el, &a, hdm_kwalk_f32, &p);
}

const struct hdm_kernel_def hdm_kernel_arange = {
	.name = "arange",
	.min_tensors = 1,
	.max_tensors = 1,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_arange_check,
	.run = hdm_arange_run,
};
