/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: convolution 1d and 2d, forward and the input and
 * weight gradients (stride, zero padding, dilation, groups, bias), NCHW
 * (NCL for 1d, computed as height 1), weight [Cout, Cin / groups, kh, kw].
 *
 * Each is GEMMs on OpenBLAS's cblas_sgemm over im2col blocks: an item
 * gathers a block of the patch matrix (and packs its block of weights) into
 * fp32 working memory, widening bf16 exactly, and multiplies; outputs are
 * rounded once.  We chose im2col blocks over an implicit GEMM (a GEMM whose
 * packing reads the input through the convolution's index map) because
 * OpenBLAS takes only dense matrices, so an implicit GEMM means our own
 * multiply loops.  Measured on one core of the host, a 3x3 64-to-64
 * channel 56x56 forward: im2col blocks + sgemm 2.4 ms (96 GFLOP/s, as fast
 * as one sgemm over the whole patch matrix, 2.6 ms), direct loops with a
 * vectorized inner row (our implicit GEMM) 38 ms (6 GFLOP/s).  The gather
 * runs along rows of pixels and costs about 1/Cout of the multiply-adds.
 * It is bounded: an item's blocks are sized so that its work (multiply-adds
 * / HPU_CONV_MACS_PER_WORK plus the elements it gathers and writes, all in
 * its working memory) stays within HPU_KERNEL_MAX_ITEM_WORK, so a part
 * allocates at most that many floats (4 MiB), once, for all its items.
 * Parts call sgemm concurrently, each on one thread, as the MME's steps do
 * (hdm_mme.c: Debian's pthread OpenBLAS, limited to one thread a call).
 *
 * Items: the forward takes (group, block of output channels, block of
 * output pixels over N Ho Wo); the input gradient (image, group, block of
 * input channels, rectangle of input pixels): it computes the patch rows of
 * the output pixels that reach the rectangle and adds them (col2im) into
 * the rectangle only, so that no two items write one element; the weight
 * gradient (group, block of output channels, block of patch rows, chunk of
 * N Ho Wo) writes an fp32 partial into the scratch, and a second phase adds
 * the chunks' partials in order (fp64) into grad_weight, the same sums
 * whatever the split.
 */
#include <cblas.h>
#include <stdlib.h>

#include "hdm_kernel.h"

#define CONV_MAX_STEP (1u << 20) /* strides, dilations and paddings at most this */
#define CONV_MAX_PARTIALS (HDM_KERNEL_SCRATCH_MAX / sizeof(float))

/* A tensor of the convolution as 4 dims (1d: height 1, of stride 0), strides in elements. */
struct conv_t {
	const uint8_t *base;
	uint32_t dtype, esize;
	uint64_t shape[4];
	int64_t st[4];
};

struct conv {
	struct conv_t x, w, y, b; /* in (or grad_in), weight (or its grad), out (or grad_out), bias */
	bool bias;
	uint64_t n, cin, h, wd, cout, ho, wo, kh, kw;
	int64_t sh, sw, ph, pw, dh, dw;
	uint64_t groups, cin_g, cout_g, khw, k, p, np;
	/* Blocks: output channels, pixels (over N Ho Wo), patch rows; input channels, rows, cols. */
	uint64_t cb, qb, kb, icb, rh, rw;
	uint64_t item_work, buf; /* an item's work, and the floats its working memory holds */
	uint64_t items, chunks;  /* phase 0's items; the weight gradient's pixel chunks */
};

enum conv_kind { CONV_FWD, CONV_BWD_INPUT, CONV_BWD_WEIGHT };

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t half_up(uint64_t a)
{
	return div_up(a, 2);
}

/* Blocks of at most len cutting n into as few, evened out. */
static uint64_t even_block(uint64_t n, uint64_t len)
{
	return n ? div_up(n, div_up(n, len)) : 1;
}

static void conv_view(struct conv_t *t, const struct hdm_kview *v)
{
	bool d1 = v->ndim == 3;

	t->base = v->base;
	t->dtype = v->dtype;
	t->esize = hdm_dtype_size(v->dtype);
	for (unsigned int d = 0; d < 4; d++) {
		unsigned int s = d1 && d >= 2 ? d - 1 : d;

		t->shape[d] = d1 && d == 2 ? 1 : v->shape[s];
		t->st[d] = d1 && d == 2 ? 0 : v->strides[s];
	}
}

static inline void conv_st(const struct conv_t *t, int64_t off, float v)
{
	hdm_kstore_f(t->dtype, (uint8_t *)t->base + off * (int64_t)t->esize, v);
}

/* dst[0..len) = t's elements from off on, step elements apart, widened. */
static void conv_ld_row(const struct conv_t *t, int64_t off, int64_t step, uint64_t len,
			float *dst)
{
	const uint8_t *p = t->base + off * (int64_t)t->esize;
	int64_t bstep = step * (int64_t)t->esize;

	if (t->dtype == HPU_DTYPE_F32 && step == 1)
		memcpy(dst, p, len * sizeof(float));
	else if (t->dtype == HPU_DTYPE_F32)
		for (uint64_t j = 0; j < len; j++)
			memcpy(&dst[j], p + (int64_t)j * bstep, 4);
	else
		for (uint64_t j = 0; j < len; j++, p += bstep)
			dst[j] = hdm_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* t's elements from off on, step elements apart = src[0..len) + add, rounded. */
static void conv_st_row(const struct conv_t *t, int64_t off, int64_t step, uint64_t len,
			const float *src, float add)
{
	uint8_t *p = (uint8_t *)t->base + off * (int64_t)t->esize;
	int64_t bstep = step * (int64_t)t->esize;

	if (t->dtype == HPU_DTYPE_F32) {
		for (uint64_t j = 0; j < len; j++) {
			float v = src[j] + add;

			memcpy(p + (int64_t)j * bstep, &v, 4);
		}
		return;
	}
	for (uint64_t j = 0; j < len; j++, p += bstep) {
		uint16_t b = hdm_f32_to_bf16(src[j] + add);

		p[0] = (uint8_t)b;
		p[1] = (uint8_t)(b >> 8);
	}
}

static inline int64_t conv_off(const struct conv_t *t, uint64_t a, uint64_t b, uint64_t c,
			       uint64_t d)
{
	return (int64_t)a * t->st[0] + (int64_t)b * t->st[1] + (int64_t)c * t->st[2] +
	       (int64_t)d * t->st[3];
}

/* ---- plans: blocks within an item's work ---- */

static uint64_t fwd_cost(const struct conv *v, uint64_t cb, uint64_t qb)
{
	return cb * qb * v->k / HPU_CONV_MACS_PER_WORK + v->k * qb + cb * v->k + cb * qb;
}

/* Output pixels (along one dim) that reach len input pixels at most. */
static uint64_t conv_reach(uint64_t len, uint64_t kdim, int64_t dil, int64_t stride, uint64_t o)
{
	uint64_t r = (len - 1 + (kdim - 1) * (uint64_t)dil) / (uint64_t)stride + 1;

	return r < o ? r : o;
}

static uint64_t bwdi_out(const struct conv *v, uint64_t rh, uint64_t rw)
{
	return conv_reach(rh, v->kh, v->dh, v->sh, v->ho) * conv_reach(rw, v->kw, v->dw, v->sw, v->wo);
}

/* Working floats of an input-gradient item: weights, grad_out block, patch rows, its pixels. */
static uint64_t bwdi_buf(const struct conv *v, uint64_t icb, uint64_t rh, uint64_t rw)
{
	uint64_t m = icb * v->khw, r = bwdi_out(v, rh, rw);

	return m * v->cout_g + v->cout_g * r + m * r + icb * rh * rw;
}

static uint64_t bwdi_cost(const struct conv *v, uint64_t icb, uint64_t rh, uint64_t rw)
{
	uint64_t m = icb * v->khw;

	return m * v->cout_g * bwdi_out(v, rh, rw) / HPU_CONV_MACS_PER_WORK +
	       bwdi_buf(v, icb, rh, rw);
}

static uint64_t bwdw_cost(uint64_t cb, uint64_t kb, uint64_t qb)
{
	return cb * kb * qb / HPU_CONV_MACS_PER_WORK + (cb + kb) * qb + cb * kb;
}

/* The largest pixel chunk within an item's work with cb x kb blocks (0: none). */
static uint64_t bwdw_chunk(const struct conv *v, uint64_t cb, uint64_t kb)
{
	uint64_t per = cb * kb / HPU_CONV_MACS_PER_WORK + cb + kb + 1;
	uint64_t q = cb * kb < HPU_KERNEL_MAX_ITEM_WORK ?
		     (HPU_KERNEL_MAX_ITEM_WORK - cb * kb) / per : 0;

	return q < v->np ? q : v->np;
}

static int plan_fwd(struct conv *v)
{
	uint64_t cb = v->cout_g, qb = v->np < 1024 ? v->np : 1024;

	/* sgemm packs the patch block at each call: keep its rows many (channels) and long. */
	while (fwd_cost(v, cb, qb) > HPU_KERNEL_MAX_ITEM_WORK) {
		if (qb > 256)
			qb = half_up(qb);
		else if (cb > 64)
			cb = half_up(cb);
		else if (qb > 32)
			qb = half_up(qb);
		else if (cb > 1)
			cb = half_up(cb);
		else if (qb > 1)
			qb = half_up(qb);
		else
			return -1;
	}
	v->cb = even_block(v->cout_g, cb);
	v->qb = even_block(v->np, qb);
	v->item_work = fwd_cost(v, v->cb, v->qb);
	v->buf = v->cb * v->k + v->k * v->qb + v->cb * v->qb;
	v->items = v->groups * div_up(v->cout_g, v->cb) * div_up(v->np, v->qb);
	return 0;
}

static int plan_bwd_input(struct conv *v)
{
	uint64_t icb = v->cin_g, rh = v->h, rw = v->wd;

	while (bwdi_cost(v, icb, rh, rw) > HPU_KERNEL_MAX_ITEM_WORK) {
		if (icb > 16)
			icb = half_up(icb);
		else if (rh > 1 && (rh >= rw || rw == 1))
			rh = half_up(rh);
		else if (rw > 1)
			rw = half_up(rw);
		else if (icb > 1)
			icb = half_up(icb);
		else
			return -1;
	}
	v->icb = even_block(v->cin_g, icb);
	v->rh = even_block(v->h, rh);
	v->rw = even_block(v->wd, rw);
	v->item_work = bwdi_cost(v, v->icb, v->rh, v->rw);
	v->buf = bwdi_buf(v, v->icb, v->rh, v->rw);
	v->items = v->n * v->groups * div_up(v->cin_g, v->icb) * div_up(v->h, v->rh) *
		   div_up(v->wd, v->rw);
	return 0;
}

/* Blocks of 64 x 256 or less, smaller while the chunks' partials overflow the scratch. */
static int plan_bwd_weight(struct conv *v)
{
	uint64_t cb = v->cout_g < 64 ? v->cout_g : 64, kb = v->k < 256 ? v->k : 256, qb;

	if (!v->np || !v->cout) {
		/* No pixel, or no weight: phase 1 writes zeros, or nothing. */
		v->item_work = 1;
		return 0;
	}
	for (;;) {
		qb = bwdw_chunk(v, cb, kb);
		if (qb && div_up(v->np, qb) <= CONV_MAX_PARTIALS / (v->cout * v->k))
			break;
		if (cb == 1 && kb == 1)
			return -1;
		if (cb >= kb)
			cb = half_up(cb);
		else
			kb = half_up(kb);
	}
	v->chunks = div_up(v->np, qb);
	v->cb = even_block(v->cout_g, cb);
	v->kb = even_block(v->k, kb);
	v->qb = div_up(v->np, v->chunks);
	v->item_work = bwdw_cost(v->cb, v->kb, v->qb);
	v->buf = (v->cb + v->kb) * v->qb;
	v->items = v->groups * div_up(v->cout_g, v->cb) * div_up(v->k, v->kb) * v->chunks;
	return 0;
}

/* ---- operands ---- */

static bool conv_step_ok(int64_t a, int64_t lo)
{
	return a >= lo && a <= CONV_MAX_STEP;
}

/* Output size along a dim, or 0 when the dilated kernel does not fit the padded input. */
static uint64_t conv_out_len(uint64_t in, int64_t pad, uint64_t kdim, int64_t dil, int64_t stride)
{
	uint64_t span = (kdim - 1) * (uint64_t)dil + 1, padded = in + 2 * (uint64_t)pad;

	return padded < span ? 0 : (padded - span) / (uint64_t)stride + 1;
}

/*
 * Decode and check a launch of kind: t[0..2] are, by kind, (out, in,
 * weight), (grad_in, grad_out, weight), (grad_weight, grad_out, in).
 */
static int conv_decode(const struct hdm_kcall *c, enum conv_kind kind, struct conv *v)
{
	static const unsigned int slots[3][3] = { { 1, 2, 0 }, { 0, 2, 1 }, { 2, 0, 1 } };
	const struct hdm_kview *x = &c->t[slots[kind][0]], *w = &c->t[slots[kind][1]];
	const struct hdm_kview *y = &c->t[slots[kind][2]];
	uint32_t nd = x->ndim;
	const int64_t *a = c->args;

	memset(v, 0, sizeof(*v));
	v->bias = kind == CONV_FWD && c->num_tensors == 4;
	if (c->num_tensors != 3u + v->bias || (nd != 3 && nd != 4) || w->ndim != nd ||
	    y->ndim != nd)
		return -1;
	for (unsigned int i = 0; i < c->num_tensors; i++)
		if (!hdm_dtype_is_float(c->t[i].dtype))
			return -1;
	if (!conv_step_ok(a[0], 1) || !conv_step_ok(a[1], 1) || !conv_step_ok(a[2], 0) ||
	    !conv_step_ok(a[3], 0) || !conv_step_ok(a[4], 1) || !conv_step_ok(a[5], 1) ||
	    a[6] < 1 || a[7] || (nd == 3 && (a[0] != 1 || a[2] || a[4] != 1)))
		return -1;
	conv_view(&v->x, x);
	conv_view(&v->w, w);
	conv_view(&v->y, y);
	v->n = v->x.shape[0];
	v->cin = v->x.shape[1];
	v->h = v->x.shape[2];
	v->wd = v->x.shape[3];
	v->cout = v->w.shape[0];
	v->cin_g = v->w.shape[1];
	v->kh = v->w.shape[2];
	v->kw = v->w.shape[3];
	v->sh = a[0], v->sw = a[1], v->ph = a[2], v->pw = a[3], v->dh = a[4], v->dw = a[5];
	v->groups = (uint64_t)a[6];
	if (!v->cin_g || !v->kh || !v->kw || v->cin != v->cin_g * v->groups ||
	    v->cout % v->groups)
		return -1;
	v->ho = conv_out_len(v->h, v->ph, v->kh, v->dh, v->sh);
	v->wo = conv_out_len(v->wd, v->pw, v->kw, v->dw, v->sw);
	if (!v->ho || !v->wo || v->y.shape[0] != v->n || v->y.shape[1] != v->cout ||
	    v->y.shape[2] != v->ho || v->y.shape[3] != v->wo)
		return -1;
	if (v->bias) {
		const struct hdm_kview *b = &c->t[3];

		if (b->ndim != 1 || b->shape[0] != v->cout)
			return -1;
		conv_view(&v->b, b);
	}
	v->cout_g = v->cout / v->groups;
	v->khw = v->kh * v->kw;
	v->k = v->cin_g * v->khw;
	v->p = v->ho * v->wo;
	v->np = v->n * v->p;
	switch (kind) {
	case CONV_FWD:
		return plan_fwd(v);
	case CONV_BWD_INPUT:
		return plan_bwd_input(v);
	default:
		return plan_bwd_weight(v);
	}
}

static uint32_t conv_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 1u;
}

/* Working memory of a part, or NULL with the launch failed. */
static float *conv_buf(const struct hdm_kcall *c, const struct conv *v)
{
	float *buf = malloc(v->buf * sizeof(float));

	if (!buf)
		hdm_kfail(c, "convolution: no working memory");
	return buf;
}

/* ---- gathers ---- */

/* Pixel q of N Ho Wo as (image, row, col). */
struct conv_pix {
	uint64_t n, ho, wo;
};

static struct conv_pix conv_pix(const struct conv *v, uint64_t q)
{
	return (struct conv_pix){ q / v->p, q % v->p / v->wo, q % v->wo };
}

/*
 * A block of pixels walked in segments along output rows: pixels j to
 * j + len of the block are (px.n, px.ho, px.wo to px.wo + len).
 */
struct conv_seg {
	uint64_t j, len;
	struct conv_pix px;
};

static struct conv_seg conv_seg_start(const struct conv *v, uint64_t q0)
{
	return (struct conv_seg){ 0, 0, conv_pix(v, q0) };
}

/* The next segment of a block of qn pixels: false past its end. */
static bool conv_seg_next(const struct conv *v, struct conv_seg *s, uint64_t qn)
{
	s->j += s->len;
	s->px.wo += s->len;
	if (s->px.wo == v->wo) {
		s->px.wo = 0;
		if (++s->px.ho == v->ho) {
			s->px.ho = 0;
			s->px.n++;
		}
	}
	if (s->j >= qn)
		return false;
	s->len = min_u64(qn - s->j, v->wo - s->px.wo);
	return true;
}

/* Output columns [*lo, return) whose tap at dx (input column o sw + dx) is inside the input. */
static uint64_t conv_cols_inside(const struct conv *v, int64_t dx, uint64_t *lo)
{
	int64_t end = (int64_t)v->wd - dx;

	*lo = dx < 0 ? div_up((uint64_t)-dx, (uint64_t)v->sw) : 0;
	return end <= 0 ? 0 : min_u64(v->wo, div_up((uint64_t)end, (uint64_t)v->sw));
}

/* col[r][j] = the patch element k0 + r of pixel q0 + j in group g (0 in the padding). */
static void conv_im2col(const struct conv *v, uint64_t g, uint64_t k0, uint64_t kn, uint64_t q0,
			uint64_t qn, float *col)
{
	for (uint64_t r = 0; r < kn; r++, col += qn) {
		uint64_t kk = k0 + r, ci = g * v->cin_g + kk / v->khw, tap = kk % v->khw, in_lo;
		int64_t dy = (int64_t)(tap / v->kw) * v->dh - v->ph;
		int64_t dx = (int64_t)(tap % v->kw) * v->dw - v->pw;
		uint64_t in_hi = conv_cols_inside(v, dx, &in_lo);

		for (struct conv_seg s = conv_seg_start(v, q0); conv_seg_next(v, &s, qn);) {
			int64_t hh = (int64_t)s.px.ho * v->sh + dy;
			uint64_t end = s.px.wo + s.len;
			uint64_t lo = in_lo > s.px.wo ? in_lo : s.px.wo, hi = min_u64(in_hi, end);
			float *dst = col + s.j - s.px.wo;

			if ((uint64_t)hh >= v->h || lo >= hi) {
				memset(dst + s.px.wo, 0, s.len * sizeof(float));
				continue;
			}
			memset(dst + s.px.wo, 0, (lo - s.px.wo) * sizeof(float));
			conv_ld_row(&v->x, conv_off(&v->x, s.px.n, ci, (uint64_t)hh,
						    (uint64_t)((int64_t)lo * v->sw + dx)),
				    v->sw * v->x.st[3], hi - lo, dst + lo);
			memset(dst + hi, 0, (end - hi) * sizeof(float));
		}
	}
}

/* dst[r][j] = y at channel c0 + r of group g, pixel q0 + j. */
static void conv_gather_y(const struct conv *v, uint64_t g, uint64_t c0, uint64_t cn, uint64_t q0,
			  uint64_t qn, float *dst)
{
	for (uint64_t r = 0; r < cn; r++, dst += qn) {
		uint64_t co = g * v->cout_g + c0 + r;

		for (struct conv_seg s = conv_seg_start(v, q0); conv_seg_next(v, &s, qn);)
			conv_ld_row(&v->y, conv_off(&v->y, s.px.n, co, s.px.ho, s.px.wo),
				    v->y.st[3], s.len, dst + s.j);
	}
}

/*
 * dst[r][m] = weight of output channel c0 + r of group g, its patch element
 * k0 + m: a row of kw taps at a time, or the whole patch when it is dense.
 */
static void conv_pack_w(const struct conv *v, uint64_t g, uint64_t c0, uint64_t cn, uint64_t k0,
			uint64_t kn, float *dst)
{
	const struct conv_t *w = &v->w;
	bool dense = w->st[3] == 1 && w->st[2] == (int64_t)v->kw &&
		     (w->st[1] == (int64_t)v->khw || v->cin_g == 1);

	for (uint64_t r = 0; r < cn; r++, dst += kn) {
		uint64_t co = g * v->cout_g + c0 + r;

		for (uint64_t m = 0, len; m < kn; m += len) {
			uint64_t kk = k0 + m, tap = kk % v->khw;

			len = dense ? kn - m : min_u64(v->kw - tap % v->kw, kn - m);
			conv_ld_row(w, conv_off(w, co, kk / v->khw, tap / v->kw, tap % v->kw),
				    w->st[3], len, dst + m);
		}
	}
}

/* Elements of grad_weight that an item of the weight gradient's phase 1 sums. */
static uint64_t conv_sum_len(const struct conv *v)
{
	return HPU_KERNEL_MAX_ITEM_WORK / (v->chunks ? v->chunks : 1);
}

/* ---- forward ---- */

/* Item i: a block of output channels of a group over a block of pixels. */
static void conv_fwd_item(const struct conv *v, uint64_t i, float *buf)
{
	uint64_t nq = div_up(v->np, v->qb), ncb = div_up(v->cout_g, v->cb);
	uint64_t q0 = i % nq * v->qb, c0 = i / nq % ncb * v->cb, g = i / nq / ncb;
	uint64_t qn = min_u64(v->qb, v->np - q0), cn = min_u64(v->cb, v->cout_g - c0);
	float *wb = buf, *col = wb + v->cb * v->k, *acc = col + v->k * v->qb;

	conv_pack_w(v, g, c0, cn, 0, v->k, wb);
	conv_im2col(v, g, 0, v->k, q0, qn, col);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)cn, (int)qn, (int)v->k, 1.0f,
		    wb, (int)v->k, col, (int)qn, 0.0f, acc, (int)qn);
	for (uint64_t r = 0; r < cn; r++) {
		uint64_t co = g * v->cout_g + c0 + r;
		float bias = 0.0f;

		if (v->bias)
			conv_ld_row(&v->b, (int64_t)co * v->b.st[0], 1, 1, &bias);
		for (struct conv_seg s = conv_seg_start(v, q0); conv_seg_next(v, &s, qn);)
			conv_st_row(&v->y, conv_off(&v->y, s.px.n, co, s.px.ho, s.px.wo),
				    v->y.st[3], s.len, acc + r * qn + s.j, bias);
	}
}

/* ---- input gradient ---- */

/*
 * Output pixels [*lo, *lo + return) along a dim whose taps reach input
 * pixels [i0, i1): o s - p + t d in [i0, i1) for some tap t < kdim.
 */
static uint64_t conv_reach_range(int64_t i0, int64_t i1, uint64_t kdim, int64_t s, int64_t p,
				 int64_t d, uint64_t o, uint64_t *lo)
{
	int64_t first = i0 + p - (int64_t)(kdim - 1) * d, last = i1 - 1 + p;
	int64_t a = first <= 0 ? 0 : (first + s - 1) / s, b = last / s;

	if (b > (int64_t)o - 1)
		b = (int64_t)o - 1;
	*lo = (uint64_t)a;
	return b >= a ? (uint64_t)(b - a + 1) : 0;
}

struct conv_rect {
	uint64_t n, g, ci0, cin, h0, hn, w0, wn; /* the item's input block */
	uint64_t oh0, ohn, ow0, own;             /* the output pixels reaching it */
};

static struct conv_rect conv_bwdi_rect(const struct conv *v, uint64_t i)
{
	uint64_t nw = div_up(v->wd, v->rw), nh = div_up(v->h, v->rh), nc = div_up(v->cin_g, v->icb);
	struct conv_rect r;

	r.w0 = i % nw * v->rw;
	i /= nw;
	r.h0 = i % nh * v->rh;
	i /= nh;
	r.ci0 = i % nc * v->icb;
	i /= nc;
	r.g = i % v->groups;
	r.n = i / v->groups;
	r.wn = min_u64(v->rw, v->wd - r.w0);
	r.hn = min_u64(v->rh, v->h - r.h0);
	r.cin = min_u64(v->icb, v->cin_g - r.ci0);
	r.ohn = conv_reach_range((int64_t)r.h0, (int64_t)(r.h0 + r.hn), v->kh, v->sh, v->ph, v->dh,
				 v->ho, &r.oh0);
	r.own = conv_reach_range((int64_t)r.w0, (int64_t)(r.w0 + r.wn), v->kw, v->sw, v->pw, v->dw,
				 v->wo, &r.ow0);
	return r;
}

/* acc[ci][y][x] += col's patch rows of the rectangle's reaching outputs, where inside. */
static void conv_col2im(const struct conv *v, const struct conv_rect *r, const float *col,
			float *acc)
{
	uint64_t nout = r->ohn * r->own;

	for (uint64_t m = 0; m < r->cin * v->khw; m++, col += nout) {
		uint64_t tap = m % v->khw;
		float *plane = acc + m / v->khw * r->hn * r->wn;
		int64_t dy = (int64_t)(tap / v->kw) * v->dh - v->ph - (int64_t)r->h0;
		int64_t dx = (int64_t)(tap % v->kw) * v->dw - v->pw - (int64_t)r->w0;

		for (uint64_t oy = 0; oy < r->ohn; oy++) {
			int64_t yy = (int64_t)(r->oh0 + oy) * v->sh + dy;

			if ((uint64_t)yy >= r->hn)
				continue;
			for (uint64_t ox = 0; ox < r->own; ox++) {
				int64_t xx = (int64_t)(r->ow0 + ox) * v->sw + dx;

				if ((uint64_t)xx < r->wn)
					plane[(uint64_t)yy * r->wn + (uint64_t)xx] +=
						col[oy * r->own + ox];
			}
		}
	}
}

static void conv_bwdi_item(const struct conv *v, uint64_t i, float *buf)
{
	struct conv_rect r = conv_bwdi_rect(v, i);
	uint64_t m = r.cin * v->khw, nout = r.ohn * r.own;
	float *wb = buf, *gy = wb + v->cout_g * m, *col = gy + v->cout_g * nout, *acc = col + m * nout;

	memset(acc, 0, r.cin * r.hn * r.wn * sizeof(float));
	/* Every element of grad_in is written, zero where no output reaches it. */
	if (nout && v->cout_g) {
		conv_pack_w(v, r.g, 0, v->cout_g, r.ci0 * v->khw, m, wb);
		for (uint64_t co = 0; co < v->cout_g; co++)
			for (uint64_t oy = 0; oy < r.ohn; oy++)
				conv_ld_row(&v->y, conv_off(&v->y, r.n, r.g * v->cout_g + co,
							    r.oh0 + oy, r.ow0),
					    v->y.st[3], r.own, gy + co * nout + oy * r.own);
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)nout,
			    (int)v->cout_g, 1.0f, wb, (int)m, gy, (int)nout, 0.0f, col, (int)nout);
		conv_col2im(v, &r, col, acc);
	}
	for (uint64_t ci = 0; ci < r.cin; ci++)
		for (uint64_t yy = 0; yy < r.hn; yy++, acc += r.wn)
			conv_st_row(&v->x, conv_off(&v->x, r.n, r.g * v->cin_g + r.ci0 + ci,
						    r.h0 + yy, r.w0),
				    v->x.st[3], r.wn, acc, 0.0f);
}

/* ---- weight gradient ---- */

static uint64_t conv_bwdw_scratch(const struct hdm_kcall *c, uint64_t items)
{
	struct conv v;

	(void)items;
	conv_decode(c, CONV_BWD_WEIGHT, &v);
	return v.chunks * v.cout * v.k * sizeof(float);
}

/* Item i of phase 0: chunk's partial of a block of grad_weight, in the scratch. */
static void conv_bwdw_item(const struct hdm_kcall *c, const struct conv *v, uint64_t i,
			   float *buf)
{
	uint64_t nk = div_up(v->k, v->kb), ncb = div_up(v->cout_g, v->cb);
	uint64_t chunk = i % v->chunks, k0 = i / v->chunks % nk * v->kb;
	uint64_t c0 = i / v->chunks / nk % ncb * v->cb, g = i / v->chunks / nk / ncb;
	uint64_t q0 = chunk * v->qb, qn = min_u64(v->qb, v->np - q0);
	uint64_t kn = min_u64(v->kb, v->k - k0), cn = min_u64(v->cb, v->cout_g - c0);
	float *gy = buf, *col = buf + cn * qn;
	float *part = (float *)c->state->scratch + chunk * v->cout * v->k +
		      (g * v->cout_g + c0) * v->k + k0;

	conv_gather_y(v, g, c0, cn, q0, qn, gy);
	conv_im2col(v, g, k0, kn, q0, qn, col);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)cn, (int)kn, (int)qn, 1.0f, gy,
		    (int)qn, col, (int)qn, 0.0f, part, (int)v->k);
}

/* Item i of phase 1: elements of grad_weight, each the sum of its chunks' partials. */
static void conv_bwdw_sum(const struct hdm_kcall *c, const struct conv *v, uint64_t i)
{
	uint64_t len = conv_sum_len(v), total = v->cout * v->k;
	const float *part = c->state->scratch;

	for (uint64_t e = i * len; e < total && e < (i + 1) * len; e++) {
		uint64_t kk = e % v->k, tap = kk % v->khw;
		double s = 0;

		for (uint64_t r = 0; r < v->chunks; r++)
			s += part[r * total + e];
		conv_st(&v->w, conv_off(&v->w, e / v->k, kk / v->khw, tap / v->kw, tap % v->kw),
			(float)s);
	}
}

/* ---- the three kernels ---- */

static int conv_check(const struct hdm_kcall *c, enum conv_kind kind, uint64_t *items)
{
	struct conv v;

	if (conv_decode(c, kind, &v))
		return -1;
	items[0] = v.items;
	/* The weight gradient's phase 1 sums every element's partials; over no pixels, zeros. */
	if (kind == CONV_BWD_WEIGHT)
		items[1] = div_up(v.cout * v.k, conv_sum_len(&v));
	return 0;
}

static uint64_t conv_item_work(const struct hdm_kcall *c, enum conv_kind kind)
{
	struct conv v;

	conv_decode(c, kind, &v);
	if (kind == CONV_BWD_WEIGHT && c->state->phase)
		return conv_sum_len(&v) * (v.chunks ? v.chunks : 1);
	return v.item_work;
}

static void conv_run(const struct hdm_kcall *c, enum conv_kind kind, uint64_t begin, uint64_t end)
{
	bool sum = kind == CONV_BWD_WEIGHT && c->state->phase;
	float *buf = NULL;
	struct conv v;

	conv_decode(c, kind, &v);
	if (!sum && !(buf = conv_buf(c, &v)))
		return;
	for (uint64_t i = begin; i < end && !hdm_kstop(c); i++) {
		if (sum)
			conv_bwdw_sum(c, &v, i);
		else if (kind == CONV_BWD_WEIGHT)
			conv_bwdw_item(c, &v, i, buf);
		else if (kind == CONV_BWD_INPUT)
			conv_bwdi_item(&v, i, buf);
		else
			conv_fwd_item(&v, i, buf);
	}
	free(buf);
}

/* A kind's entry points for its hdm_kernel_def. */
#define CONV_ENTRY_POINTS(name, kind)                                                      \
	static int name##_check(const struct hdm_kcall *c, uint64_t *items)               \
	{                                                                                  \
		return conv_check(c, kind, items);                                         \
	}                                                                                  \
	static uint64_t name##_item_work(const struct hdm_kcall *c)                        \
	{                                                                                  \
		return conv_item_work(c, kind);                                            \
	}                                                                                  \
	static uint64_t name##_work(const struct hdm_kcall *c, uint64_t items)             \
	{                                                                                  \
		return hdm_kmul_sat(items, conv_item_work(c, kind));                       \
	}                                                                                  \
	static void name##_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)    \
	{                                                                                  \
		conv_run(c, kind, begin, end);                                             \
	}

CONV_ENTRY_POINTS(conv_fwd, CONV_FWD)
CONV_ENTRY_POINTS(conv_bwdi, CONV_BWD_INPUT)
CONV_ENTRY_POINTS(conv_bwdw, CONV_BWD_WEIGHT)

const struct hdm_kernel_def hdm_kernel_conv = {
	.name = "conv",
	.min_tensors = 3,
	.max_tensors = 4,
	.outputs = conv_outputs,
	.check = conv_fwd_check,
	.work = conv_fwd_work,
	.item_work = conv_fwd_item_work,
	.run = conv_fwd_run,
};

const struct hdm_kernel_def hdm_kernel_conv_bwd_input = {
	.name = "conv_bwd_input",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = conv_outputs,
	.check = conv_bwdi_check,
	.work = conv_bwdi_work,
	.item_work = conv_bwdi_item_work,
	.run = conv_bwdi_run,
};

const struct hdm_kernel_def hdm_kernel_conv_bwd_weight = {
	.name = "conv_bwd_weight",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = conv_outputs,
	.phases = 2,
	.check = conv_bwdw_check,
	.work = conv_bwdw_work,
	.item_work = conv_bwdw_item_work,
	.scratch = conv_bwdw_scratch,
	.run = conv_bwdw_run,
};
