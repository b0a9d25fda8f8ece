/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: fused scaled dot-product attention, forward and
 * backward (FUSED_SDPA, FUSED_SDPA_BWD in hpu_kernels.h), as flash
 * attention computes it.  The forward's item is a block of query rows of
 * one (batch, head): it walks the keys in blocks of HPU_SDPA_BLOCK with a
 * running max and sum per row (fp32), so no [L, S] matrix exists, and keeps
 * each row's logsumexp.  The backward recomputes the probabilities block by
 * block from it, and the dropout mask from the forward's Philox position;
 * its items own disjoint outputs (query blocks grad_q, key blocks grad_k and
 * grad_v) and sum in a fixed order, so any split gives the same bits.
 *
 * Operands are packed to fp32 per block (keys transposed), so that the
 * inner loops run along contiguous floats without a reduction the compiler
 * would have to reorder: they become vector code at -O3.  Valid lengths are
 * scanned by a first phase before anything is written and read again,
 * checked, where they bound a row.
 */
#include <cblas.h>
#include <stdlib.h>

#include "hdm_kernel_nn.h"
#include "hpu_philox.h"

#define KB HPU_SDPA_BLOCK
/* The most query (or key) rows of one item. */
#define SDPA_ROWS 128u
/* Draws made for a row's block of keys: whole lanes of Philox blocks. */
#define SDPA_DRAWS (KB + HPU_PHILOX_LANES * HPU_PHILOX_WORDS)
#define SDPA_LEN(a) ((unsigned int)(sizeof(a) / sizeof((a)[0])))

enum { FWD_OUT, FWD_LSE, FWD_Q, FWD_K, FWD_V, FWD_MASK, FWD_VLEN, FWD_RNG, FWD_RNG_USED,
       FWD_PROBS, FWD_DMASK, FWD_TENSORS };
enum { BWD_DQ, BWD_DK, BWD_DV, BWD_DOUT, BWD_Q, BWD_K, BWD_V, BWD_OUT, BWD_LSE, BWD_MASK,
       BWD_VLEN, BWD_RNG, BWD_TENSORS };

#define SDPA_FWD_FLAGS (HPU_SDPA_CAUSAL | HPU_SDPA_MASK | HPU_SDPA_VALID_LEN | HPU_SDPA_PAD_LEFT | \
			HPU_SDPA_FAST_SOFTMAX | HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK)
#define SDPA_BWD_FLAGS (SDPA_FWD_FLAGS & ~(HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK))

/* A launch decoded: operands, sizes, and how rows are blocked into items. */
struct sdpa {
	const struct hdm_kview *q, *k, *v, *out, *lse, *mask, *vlen, *rng;
	uint64_t B, H, L, S, D, Dv, BH;
	uint32_t flags;
	float scale, p, keep_scale;
	bool bwd;
	uint64_t qrows, qitems; /* query rows per item, query items */
	uint64_t krows, kitems; /* backward: key rows per item, key items */
};

/* Element (b, h, i, j) of a 4-dim view (fewer dims: the others 0). */
static inline uint8_t *sdpa_at(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t i,
			       uint64_t j)
{
	int64_t off = (int64_t)b * v->strides[0] + (int64_t)h * v->strides[1] +
		      (int64_t)i * v->strides[2] + (int64_t)j * v->strides[3];

	return v->base + off * (int64_t)hdm_dtype_size(v->dtype);
}

static bool sdpa_shape4(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t l, uint64_t d)
{
	const uint64_t shape[4] = { b, h, l, d };

	return hdm_kview_has_shape(v, 4, shape);
}

static bool sdpa_float4(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t l, uint64_t d)
{
	return hdm_dtype_is_float(v->dtype) && sdpa_shape4(v, b, h, l, d);
}

/* The most elements one of rows rows visits (pack: per item), 0 if one row is too many. */
static uint64_t sdpa_rows_per_item(uint64_t pack, uint64_t macs, uint64_t row)
{
	uint64_t per_row = (macs + HPU_SDPA_MACS_PER_WORK - 1) / HPU_SDPA_MACS_PER_WORK + row, n;

	if (pack + per_row > HPU_KERNEL_MAX_ITEM_WORK)
		return 0;
	n = (HPU_KERNEL_MAX_ITEM_WORK - pack) / per_row;
	return n < SDPA_ROWS ? n : SDPA_ROWS;
}

/* The item work of n rows, as sdpa_rows_per_item() counts it. */
static uint64_t sdpa_item_work(uint64_t pack, uint64_t macs, uint64_t row, uint64_t n)
{
	return pack + n * ((macs + HPU_SDPA_MACS_PER_WORK - 1) / HPU_SDPA_MACS_PER_WORK + row);
}

/*
 * The forward's item work of n query rows, or with key true the backward's
 * of n key rows, or the backward's of n query rows; every product is small:
 * D, Dv <= HPU_SDPA_MAX_HEAD_DIM, L and S < 2^32.
 */
static uint64_t sdpa_work(const struct sdpa *s, bool key, uint64_t n, bool rows_only)
{
	uint64_t D = s->D, Dv = s->Dv, pack, macs, row;
	bool second = !s->bwd && (s->flags & (HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK));

	if (key) {
		pack = s->L * (D + 2 * Dv);
		macs = s->L * (2 * D + 2 * Dv);
		row = s->L + D + Dv;
	} else if (s->bwd) {
		pack = s->S * (2 * D + 2 * Dv);
		macs = s->S * (2 * D + Dv);
		row = s->S + D + 2 * Dv;
	} else {
		pack = s->S * (D + Dv) * (second ? 2 : 1);
		macs = s->S * (D + Dv + (second ? D : 0));
		row = s->S * (second ? 3 : 1) + D + Dv;
	}
	return rows_only ? sdpa_rows_per_item(pack, macs, row) : sdpa_item_work(pack, macs, row, n);
}

/* An optional operand: present (the flag set) and valid, or absent. */
static bool sdpa_optional_ok(const struct sdpa *s, uint32_t flag, bool ok)
{
	return (s->flags & flag) ? ok : true;
}

/* Outputs against the inputs: none may be one (kernels read across rows). */
static bool sdpa_no_alias(const struct hdm_kcall *c, const uint32_t *outs, unsigned int nout,
			  const uint32_t *ins, unsigned int nin)
{
	for (unsigned int o = 0; o < nout; o++) {
		for (unsigned int i = 0; i < nin; i++)
			if (hdm_kview_aliases(&c->t[outs[o]], &c->t[ins[i]]))
				return false;
		for (unsigned int i = 0; i < o; i++)
			if (hdm_kview_aliases(&c->t[outs[o]], &c->t[outs[i]]))
				return false;
	}
	return true;
}

/*
 * Decodes and checks a launch (check() and every run() alike: the same
 * verdict from the same descriptors); 0 or -1.
 */
static int sdpa_decode(const struct hdm_kcall *c, bool bwd, struct sdpa *s)
{
	static const uint32_t fwd_outs[] = { FWD_OUT, FWD_LSE, FWD_PROBS, FWD_DMASK, FWD_RNG_USED };
	static const uint32_t fwd_ins[] = { FWD_Q, FWD_K, FWD_V, FWD_MASK, FWD_VLEN, FWD_RNG };
	static const uint32_t bwd_outs[] = { BWD_DQ, BWD_DK, BWD_DV };
	static const uint32_t bwd_ins[] = { BWD_DOUT, BWD_Q, BWD_K, BWD_V, BWD_OUT, BWD_LSE,
					    BWD_MASK, BWD_VLEN, BWD_RNG };
	unsigned int base = bwd ? BWD_Q : FWD_Q;
	const uint64_t two = 2;
	bool ok;

	memset(s, 0, sizeof(*s));
	s->bwd = bwd;
	if (c->num_tensors != (bwd ? BWD_TENSORS : FWD_TENSORS))
		return -1;
	s->q = &c->t[base];
	s->k = &c->t[base + 1];
	s->v = &c->t[base + 2];
	s->out = &c->t[bwd ? BWD_OUT : FWD_OUT];
	s->lse = &c->t[bwd ? BWD_LSE : FWD_LSE];
	s->mask = &c->t[bwd ? BWD_MASK : FWD_MASK];
	s->vlen = &c->t[bwd ? BWD_VLEN : FWD_VLEN];
	s->rng = &c->t[bwd ? BWD_RNG : FWD_RNG];
	if (s->q->ndim != 4 || s->v->ndim != 4)
		return -1;
	s->B = s->q->shape[0];
	s->H = s->q->shape[1];
	s->L = s->q->shape[2];
	s->D = s->q->shape[3];
	s->S = s->k->shape[2];
	s->Dv = s->v->shape[3];
	s->BH = s->B * s->H;
	if (c->args[0] < 0 || (uint64_t)c->args[0] & ~(uint64_t)(bwd ? SDPA_BWD_FLAGS : SDPA_FWD_FLAGS))
		return -1;
	s->flags = (uint32_t)c->args[0];
	s->scale = (float)c->scalars[0];
	s->p = (float)c->scalars[1];
	s->keep_scale = 1 / (1 - s->p);
	ok = isfinite(s->scale) && c->scalars[1] >= 0 && c->scalars[1] < 1 &&
	     s->D >= 1 && s->D <= HPU_SDPA_MAX_HEAD_DIM && s->Dv >= 1 &&
	     s->Dv <= HPU_SDPA_MAX_HEAD_DIM && hdm_dtype_is_float(s->q->dtype) &&
	     sdpa_float4(s->k, s->B, s->H, s->S, s->D) && sdpa_float4(s->v, s->B, s->H, s->S, s->Dv) &&
	     sdpa_float4(s->out, s->B, s->H, s->L, s->Dv) && s->lse->dtype == HPU_DTYPE_F32 &&
	     hdm_kview_has_shape(s->lse, 3, s->q->shape);
	ok = ok && sdpa_optional_ok(s, HPU_SDPA_MASK,
				    (hdm_dtype_is_float(s->mask->dtype) ||
				     s->mask->dtype == HPU_DTYPE_U8) &&
				    sdpa_shape4(s->mask, s->B, s->H, s->L, s->S));
	/* The seeds' valid lengths: causal attention without a mask; left padding needs them. */
	ok = ok && sdpa_optional_ok(s, HPU_SDPA_VALID_LEN,
				    hdm_kview_is_index(s->vlen) &&
				    hdm_kview_has_shape(s->vlen, 1, &s->B) &&
				    (s->flags & HPU_SDPA_CAUSAL) && !(s->flags & HPU_SDPA_MASK));
	ok = ok && sdpa_optional_ok(s, HPU_SDPA_PAD_LEFT, s->flags & HPU_SDPA_VALID_LEN) &&
	     sdpa_optional_ok(s, HPU_SDPA_FAST_SOFTMAX, s->q->dtype == HPU_DTYPE_BF16);
	if (s->p > 0)
		ok = ok && s->rng->dtype == HPU_DTYPE_I64 && hdm_kview_has_shape(s->rng, 1, &two) &&
		     (bwd || (c->t[FWD_RNG_USED].dtype == HPU_DTYPE_I64 &&
			      hdm_kview_has_shape(&c->t[FWD_RNG_USED], 1, &two)));
	if (bwd) {
		ok = ok && sdpa_float4(&c->t[BWD_DQ], s->B, s->H, s->L, s->D) &&
		     sdpa_float4(&c->t[BWD_DK], s->B, s->H, s->S, s->D) &&
		     sdpa_float4(&c->t[BWD_DV], s->B, s->H, s->S, s->Dv) &&
		     sdpa_float4(&c->t[BWD_DOUT], s->B, s->H, s->L, s->Dv) &&
		     sdpa_no_alias(c, bwd_outs, 3, bwd_ins, SDPA_LEN(bwd_ins));
	} else {
		ok = ok && sdpa_optional_ok(s, HPU_SDPA_PROBS,
					    sdpa_float4(&c->t[FWD_PROBS], s->B, s->H, s->L, s->S)) &&
		     sdpa_optional_ok(s, HPU_SDPA_DROP_MASK,
				      c->t[FWD_DMASK].dtype == HPU_DTYPE_U8 &&
				      sdpa_shape4(&c->t[FWD_DMASK], s->B, s->H, s->L, s->S)) &&
		     sdpa_no_alias(c, fwd_outs, SDPA_LEN(fwd_outs), fwd_ins,
				   SDPA_LEN(fwd_ins));
	}
	if (!ok)
		return -1;
	s->qrows = sdpa_work(s, false, 0, true);
	s->qitems = s->qrows ? hdm_kmul_sat(s->BH, (s->L + s->qrows - 1) / s->qrows) : 0;
	if (bwd) {
		s->krows = sdpa_work(s, true, 0, true);
		s->kitems = s->krows ? hdm_kmul_sat(s->BH, (s->S + s->krows - 1) / s->krows) : 0;
	}
	/* A row past the item limit is refused (the runtime computes it on the host). */
	if (!s->qrows || (bwd && !s->krows))
		return -1;
	return 0;
}

/* Phase 0 scans the valid lengths (if any); phase 1 attends. */
static int sdpa_check(const struct hdm_kcall *c, bool bwd, uint64_t *items)
{
	struct sdpa s;

	if (sdpa_decode(c, bwd, &s))
		return -1;
	items[0] = (s.flags & HPU_SDPA_VALID_LEN) ? hdm_kscan_items(s.B) : 0;
	items[1] = s.qitems + s.kitems;
	return 0;
}

static int sdpa_fwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	return sdpa_check(c, false, items);
}

static int sdpa_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	return sdpa_check(c, true, items);
}

static uint64_t sdpa_phase_work(const struct hdm_kcall *c, uint64_t items, bool bwd)
{
	struct sdpa s;
	uint64_t qb, kb;

	if (sdpa_decode(c, bwd, &s))
		return 0;
	if (c->state->phase == 0)
		return hdm_kscan_item_work(s.B) * items;
	qb = hdm_kmul_sat(s.qitems, sdpa_work(&s, false, s.qrows, false));
	kb = bwd ? hdm_kmul_sat(s.kitems, sdpa_work(&s, true, s.krows, false)) : 0;
	return qb + kb < qb ? UINT64_MAX : qb + kb;
}

static uint64_t sdpa_phase_item_work(const struct hdm_kcall *c, bool bwd)
{
	struct sdpa s;
	uint64_t q, k;

	if (sdpa_decode(c, bwd, &s))
		return 0;
	if (c->state->phase == 0)
		return hdm_kscan_item_work(s.B);
	q = sdpa_work(&s, false, s.qrows, false);
	k = bwd ? sdpa_work(&s, true, s.krows, false) : 0;
	return q > k ? q : k;
}

static uint64_t sdpa_fwd_work(const struct hdm_kcall *c, uint64_t items)
{
	return sdpa_phase_work(c, items, false);
}

static uint64_t sdpa_bwd_work(const struct hdm_kcall *c, uint64_t items)
{
	return sdpa_phase_work(c, items, true);
}

static uint64_t sdpa_fwd_item_work(const struct hdm_kcall *c)
{
	return sdpa_phase_item_work(c, false);
}

static uint64_t sdpa_bwd_item_work(const struct hdm_kcall *c)
{
	return sdpa_phase_item_work(c, true);
}

/* ---- rows and keys ---- */

/* Which keys query row i sees, [lo, hi) before the mask; lo >= hi: none (a padding row). */
struct sdpa_range {
	uint64_t lo, hi;
};

/*
 * The valid length of batch b, read once and checked here, its use; -1
 * (the launch failed) when out of [0, S].  S without VALID_LEN.
 */
static int64_t sdpa_valid_len(const struct hdm_kcall *c, const struct sdpa *s, uint64_t b)
{
	int64_t n = (int64_t)s->S;

	if ((s->flags & HPU_SDPA_VALID_LEN) &&
	    !hdm_kget_index(c, s->vlen, b, s->S + 1, "fused_sdpa: valid length out of [0, S]", &n))
		return -1;
	return n;
}

static struct sdpa_range sdpa_row_range(const struct sdpa *s, uint64_t n, uint64_t i)
{
	struct sdpa_range r = { 0, s->S };

	if (s->flags & HPU_SDPA_CAUSAL && i + 1 < r.hi)
		r.hi = i + 1;
	if (s->flags & HPU_SDPA_VALID_LEN) {
		bool left = s->flags & HPU_SDPA_PAD_LEFT;

		/* A padding query row sees nothing. */
		if (left ? i + n < s->L : i >= n)
			return (struct sdpa_range){ 0, 0 };
		if (left)
			r.lo = s->S - n;
		else if (n < r.hi)
			r.hi = n;
	}
	return r;
}

/* The end of the keys any of query rows [i0, i0 + n) sees. */
static uint64_t sdpa_rows_hi(const struct sdpa *s, int64_t vl, uint64_t i0, uint64_t n)
{
	uint64_t hi = 0;

	for (uint64_t r = 0; r < n; r++) {
		struct sdpa_range rg = sdpa_row_range(s, (uint64_t)vl, i0 + r);

		hi = rg.lo < rg.hi && rg.hi > hi ? rg.hi : hi;
	}
	return hi;
}

/* 1.5 * 2^23: adding and subtracting it rounds a float of magnitude below 2^22 to an integer. */
#define SDPA_ROUND 12582912.f

/* 2^n for an integral n in [-126, 127], built from its bits. */
static inline float sdpa_pow2i(float n)
{
	uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/*
 * The softmax's exp, inline and without branches so that a row's loop
 * becomes vector code.  Default: x = n ln2 + r (ln2 in two parts, exact
 * products), |r| <= ln2 / 2, e^r from a degree-7 series in minimax form
 * (Cody and Waite; within 2 ulp of expf).  Fast (softmax_mode 'fast'): 2^t
 * as 2^round(t) times a cubic of the fraction, relative error under
 * 2e-4, half the multiplies: enough for bf16's 2^-9.  The inputs are
 * at most 0 (or a rounding above: a score less the max or the lse); both
 * give 0 below -87 (e^-87 is 1.6e-38).
 */
static inline float sdpa_exp(bool fast, float x)
{
	/*
	 * x below -87 (sign set, magnitude bits above -87's): clamped, and the
	 * result 0.  An integer select, not a branch: the loop stays vector code.
	 */
	const uint32_t m87 = 0xc2ae0000u; /* -87.0f */
	uint32_t bits, under;
	float n, r, y;

	memcpy(&bits, &x, sizeof(bits));
	under = 0u - (uint32_t)(bits > m87);
	bits = (bits & ~under) | (m87 & under);
	memcpy(&x, &bits, sizeof(x));
	if (fast) {
		float t = x * 1.44269504f;

		n = t + SDPA_ROUND - SDPA_ROUND;
		r = t - n;
		y = 1 + r * (0.69331646f + r * (0.24192412f + r * 0.05460262f));
	} else {
		n = x * 1.44269504f + SDPA_ROUND - SDPA_ROUND;
		r = x - n * 0.693359375f + n * 2.12194440e-4f;
		y = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
		      4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
		y = y * r * r + r + 1;
	}
	y *= sdpa_pow2i(n);
	memcpy(&bits, &y, sizeof(bits));
	bits &= ~under;
	memcpy(&y, &bits, sizeof(y));
	return y;
}

/* The largest of x[0, n) (-inf for none), in 8 lanes: vector code, and exact in any order. */
static float sdpa_max(const float *x, uint64_t n)
{
	float m[8] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY,
		       -INFINITY, -INFINITY, -INFINITY, -INFINITY };
	uint64_t j = 0;

	for (; j + 8 <= n; j += 8)
		for (unsigned int l = 0; l < 8; l++)
			m[l] = x[j + l] > m[l] ? x[j + l] : m[l];
	for (; j < n; j++)
		m[0] = x[j] > m[0] ? x[j] : m[0];
	for (unsigned int l = 1; l < 8; l++)
		m[0] = m[l] > m[0] ? m[l] : m[0];
	return m[0];
}

/* x[j] = e^(x[j] - sub), j < n: a loop of its own per mode, which becomes vector code. */
static void sdpa_exp_row(bool fast, float *restrict x, float sub, uint64_t n)
{
	if (fast)
		for (uint64_t j = 0; j < n; j++)
			x[j] = sdpa_exp(true, x[j] - sub);
	else
		for (uint64_t j = 0; j < n; j++)
			x[j] = sdpa_exp(false, x[j] - sub);
}

/* The sum of x[0, n) in 8 lanes joined in order: the same bits every time, and vector code. */
static float sdpa_sum(const float *x, uint64_t n)
{
	float a[8] = { 0 };
	uint64_t j = 0;

	for (; j + 8 <= n; j += 8)
		for (unsigned int l = 0; l < 8; l++)
			a[l] += x[j + l];
	for (; j < n; j++)
		a[0] += x[j];
	for (unsigned int l = 1; l < 8; l++)
		a[0] += a[l];
	return a[0];
}

/* Rows of one (b, h) matrix as fp32 for sgemm: ld floats apart. */
struct sdpa_mat {
	const float *p;
	int ld;
};

/*
 * Rows [i0, i0 + n) of v's (b, h) matrix, cols wide: in place when they
 * are aligned fp32 along a unit stride, rows apart (as sgemm reads them),
 * else packed to buf as fp32.
 */
static struct sdpa_mat sdpa_rows(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t i0,
				 uint64_t n, uint64_t cols, float *buf)
{
	const uint8_t *first = sdpa_at(v, b, h, i0, 0);
	int64_t ld = n > 1 ? v->strides[2] : (int64_t)cols;
	int64_t step = v->strides[3] * (int64_t)hdm_dtype_size(v->dtype);

	if (v->dtype == HPU_DTYPE_F32 && v->strides[3] == 1 && ld >= (int64_t)cols &&
	    ld <= INT32_MAX && (uintptr_t)first % sizeof(float) == 0)
		return (struct sdpa_mat){ (const float *)(const void *)first, (int)ld };
	for (uint64_t r = 0; r < n; r++) {
		const uint8_t *p = sdpa_at(v, b, h, i0 + r, 0);

		for (uint64_t d = 0; d < cols; d++, p += step)
			buf[r * cols + d] = (float)hdm_kload_f(v->dtype, p);
	}
	return (struct sdpa_mat){ buf, (int)cols };
}

/* Rows [i0, i0 + n) of v's (b, h) matrix from src [n][cols], rounded to v's dtype. */
static void sdpa_store_rows(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t i0,
			    uint64_t n, uint64_t cols, const float *src)
{
	int64_t step = v->strides[3] * (int64_t)hdm_dtype_size(v->dtype);

	for (uint64_t r = 0; r < n; r++) {
		uint8_t *p = sdpa_at(v, b, h, i0 + r, 0);

		for (uint64_t d = 0; d < cols; d++, p += step)
			hdm_kstore_f(v->dtype, p, src[r * cols + d]);
	}
}

/* c [m][n] (ldc) = alpha a b + beta c; a is [m][k] (or ta: [k][m]), b [k][n] (or tb: [n][k]). */
static void sdpa_gemm(bool ta, bool tb, uint64_t m, uint64_t n, uint64_t k, float alpha,
		      struct sdpa_mat a, struct sdpa_mat b, float beta, float *c, uint64_t ldc)
{
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
		    (int)m, (int)n, (int)k, alpha, a.p, a.ld, b.p, b.ld, beta, c, (int)ldc);
}

/*
 * Query row i's scores against keys [j0, j0 + n) (x, scaled q . k),
 * masked: -inf where the row does not see the key.  Returns their max.
 */
static float sdpa_mask_scores(const struct sdpa *s, uint64_t b, uint64_t h, uint64_t i,
			      struct sdpa_range r, uint64_t j0, uint64_t n, float *x)
{
	uint64_t lo = r.lo > j0 ? r.lo - j0 : 0, hi = r.hi > j0 ? r.hi - j0 : 0;

	lo = lo < n ? lo : n;
	hi = hi < n ? (hi > lo ? hi : lo) : n;
	for (uint64_t j = 0; j < lo; j++)
		x[j] = -INFINITY;
	for (uint64_t j = hi; j < n; j++)
		x[j] = -INFINITY;
	if (s->flags & HPU_SDPA_MASK && lo < hi) {
		const uint8_t *m = sdpa_at(s->mask, b, h, i, j0 + lo);
		int64_t step = s->mask->strides[3] * (int64_t)hdm_dtype_size(s->mask->dtype);

		for (uint64_t j = lo; j < hi; j++, m += step) {
			if (s->mask->dtype == HPU_DTYPE_U8)
				x[j] = *m ? x[j] : -INFINITY;
			else
				x[j] += (float)hdm_kload_f(s->mask->dtype, m);
		}
	}
	return sdpa_max(x + lo, hi - lo);
}

/*
 * Dropout's keep scales of row (bh, i)'s keys [j0, j0 + n): keep[j] is
 * 1 / (1 - p) or 0, all 1 without dropout.  Also the mask bits (may be NULL).
 */
static void sdpa_keep(const struct sdpa *s, uint64_t seed, uint64_t offset, uint64_t bh,
		      uint64_t i, uint64_t j0, uint64_t n, float *keep)
{
	float u[SDPA_DRAWS];
	uint64_t pos, block, blocks, skew;

	if (s->p == 0) {
		for (uint64_t j = 0; j < n; j++)
			keep[j] = 1;
		return;
	}
	pos = offset + (bh * s->L + i) * s->S + j0;
	block = pos / HPU_PHILOX_WORDS;
	skew = pos % HPU_PHILOX_WORDS;
	blocks = (skew + n + HPU_PHILOX_WORDS - 1) / HPU_PHILOX_WORDS;
	for (uint64_t l = 0; l < blocks; l += HPU_PHILOX_LANES)
		hpu_philox_uniforms(seed, block + l,
				    (unsigned int)(blocks - l < HPU_PHILOX_LANES ? blocks - l
										 : HPU_PHILOX_LANES),
				    &u[l * HPU_PHILOX_WORDS]);
	for (uint64_t j = 0; j < n; j++)
		keep[j] = u[skew + j] >= s->p ? s->keep_scale : 0;
}

/* The valid-length scan: every length in [0, S] before anything is written. */
static bool sdpa_scan(const struct hdm_kcall *c, const struct sdpa *s, uint64_t begin,
		      uint64_t end)
{
	struct hdm_kpace pace = hdm_kpace_start(c);

	if (c->state->phase != 0)
		return false;
	for (uint64_t k = begin; k < end; k++)
		hdm_kscan_chunk(c, s->vlen, s->S + 1, NULL, k, &pace,
				"fused_sdpa: valid length out of [0, S]");
	return true;
}

/* ---- forward ---- */

/* A part's working memory: one allocation, carved; rows of SDPA_ROWS, blocks of KB keys. */
struct sdpa_buf {
	float *q, *k, *v, *dout, *x, *da, *keep, *m, *l, *acc, *acc2;
};

/* Every buffer but acc2 sized for the larger head dim; false (the launch failed) without memory. */
static bool sdpa_buf_alloc(const struct hdm_kcall *c, const struct sdpa *s, struct sdpa_buf *w)
{
	uint64_t dm = s->D > s->Dv ? s->D : s->Dv, R = SDPA_ROWS;
	float *mem = malloc((R * dm * 6 + R * KB * 2 + KB + R * 2) * sizeof(float));

	if (!mem) {
		hdm_kfail(c, "fused_sdpa: no working memory");
		return false;
	}
	w->q = mem;
	w->k = w->q + R * dm;
	w->v = w->k + R * dm;
	w->dout = w->v + R * dm;
	w->acc = w->dout + R * dm;
	w->acc2 = w->acc + R * dm;
	w->x = w->acc2 + R * dm;
	w->da = w->x + R * KB;
	w->keep = w->da + R * KB;
	w->m = w->keep + KB;
	w->l = w->m + R;
	return true;
}

/* Writes probs and the dropout mask of the item's rows: a second pass, from the lse in w->m. */
static void sdpa_fwd_extras(const struct hdm_kcall *c, const struct sdpa *s,
			    const struct sdpa_buf *w, struct sdpa_mat q, uint64_t b, uint64_t h,
			    uint64_t i0, uint64_t n, int64_t vl, uint64_t seed, uint64_t offset)
{
	const struct hdm_kview *probs = &c->t[FWD_PROBS], *dmask = &c->t[FWD_DMASK];
	bool fast = s->flags & HPU_SDPA_FAST_SOFTMAX;

	for (uint64_t j0 = 0; j0 < s->S; j0 += KB) {
		uint64_t nk = s->S - j0 < KB ? s->S - j0 : KB;
		struct sdpa_mat k = sdpa_rows(s->k, b, h, j0, nk, s->D, w->k);

		sdpa_gemm(false, true, n, nk, s->D, s->scale, q, k, 0, w->x, KB);
		for (uint64_t r = 0; r < n; r++) {
			uint64_t i = i0 + r;
			float *x = w->x + r * KB;

			sdpa_mask_scores(s, b, h, i, sdpa_row_range(s, (uint64_t)vl, i), j0, nk, x);
			sdpa_keep(s, seed, offset, b * s->H + h, i, j0, nk, w->keep);
			for (uint64_t j = 0; j < nk; j++) {
				float pr = w->m[r] == -INFINITY ? 0 : sdpa_exp(fast, x[j] - w->m[r]);

				if (s->flags & HPU_SDPA_PROBS)
					hdm_kstore_f(probs->dtype, sdpa_at(probs, b, h, i, j0 + j), pr);
				if (s->flags & HPU_SDPA_DROP_MASK)
					*sdpa_at(dmask, b, h, i, j0 + j) = w->keep[j] != 0;
			}
		}
	}
}

/*
 * Row r of the block's scores x (keys [j0, j0 + nk)) into the running
 * max m, sum l and accumulator acc (Dv), x becoming the weights of the
 * values (probabilities times the keep scales, 0 for masked keys).  False
 * if the row sees none of these keys (x all 0, nothing changed).
 */
static bool sdpa_online_row(const struct sdpa *s, const struct sdpa_buf *w, uint64_t b, uint64_t h,
			    uint64_t i, uint64_t r, struct sdpa_range rg, uint64_t j0, uint64_t nk,
			    uint64_t seed, uint64_t offset)
{
	bool fast = s->flags & HPU_SDPA_FAST_SOFTMAX;
	float *x = w->x + r * KB, *acc = w->acc + r * s->Dv, mx = -INFINITY, mnew, corr, sum;

	if (rg.lo < rg.hi && j0 + nk > rg.lo && j0 < rg.hi)
		mx = sdpa_mask_scores(s, b, h, i, rg, j0, nk, x);
	if (mx == -INFINITY) {
		memset(x, 0, nk * sizeof(float));
		return false;
	}
	mnew = mx > w->m[r] ? mx : w->m[r];
	corr = w->m[r] == -INFINITY ? 0 : sdpa_exp(fast, w->m[r] - mnew);
	for (uint64_t e = 0; e < s->Dv; e++)
		acc[e] *= corr;
	sdpa_keep(s, seed, offset, b * s->H + h, i, j0, nk, w->keep);
	sdpa_exp_row(fast, x, mnew, nk);
	sum = sdpa_sum(x, nk);
	for (uint64_t j = 0; j < nk; j++)
		x[j] *= w->keep[j];
	w->l[r] = w->l[r] * corr + sum;
	w->m[r] = mnew;
	return true;
}

/* One item: query rows [i0, i0 + n) of (b, h). */
static void sdpa_fwd_item(const struct hdm_kcall *c, const struct sdpa *s,
			  const struct sdpa_buf *w, uint64_t item, uint64_t seed, uint64_t offset)
{
	uint64_t bh = item / (s->qitems / s->BH), i0 = item % (s->qitems / s->BH) * s->qrows;
	uint64_t b = bh / s->H, h = bh % s->H, n = s->L - i0 < s->qrows ? s->L - i0 : s->qrows;
	int64_t vl = sdpa_valid_len(c, s, b);
	struct sdpa_mat q;
	uint64_t hi;

	if (vl < 0)
		return;
	hi = sdpa_rows_hi(s, vl, i0, n);
	q = sdpa_rows(s->q, b, h, i0, n, s->D, w->q);
	for (uint64_t r = 0; r < n; r++) {
		w->m[r] = -INFINITY;
		w->l[r] = 0;
	}
	memset(w->acc, 0, n * s->Dv * sizeof(float));
	for (uint64_t j0 = 0; j0 < hi; j0 += KB) {
		uint64_t nk = hi - j0 < KB ? hi - j0 : KB;
		struct sdpa_mat k = sdpa_rows(s->k, b, h, j0, nk, s->D, w->k);
		struct sdpa_mat v = sdpa_rows(s->v, b, h, j0, nk, s->Dv, w->v);
		bool any = false;

		sdpa_gemm(false, true, n, nk, s->D, s->scale, q, k, 0, w->x, KB);
		for (uint64_t r = 0; r < n; r++)
			any |= sdpa_online_row(s, w, b, h, i0 + r, r,
					       sdpa_row_range(s, (uint64_t)vl, i0 + r), j0, nk, seed,
					       offset);
		if (any)
			sdpa_gemm(false, false, n, s->Dv, nk, 1, (struct sdpa_mat){ w->x, KB }, v, 1,
				  w->acc, s->Dv);
	}
	for (uint64_t r = 0; r < n; r++) {
		float inv = w->l[r] > 0 ? 1 / w->l[r] : 0;

		for (uint64_t e = 0; e < s->Dv; e++)
			w->acc[r * s->Dv + e] *= inv;
		/* m then holds the lse, which the second pass subtracts. */
		w->m[r] = w->l[r] > 0 ? w->m[r] + logf(w->l[r]) : -INFINITY;
		hdm_kstore_f(HPU_DTYPE_F32, sdpa_at(s->lse, b, h, i0 + r, 0), w->m[r]);
	}
	sdpa_store_rows(s->out, b, h, i0, n, s->Dv, w->acc);
	if (s->flags & (HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK))
		sdpa_fwd_extras(c, s, w, q, b, h, i0, n, vl, seed, offset);
}

/* The rng state every part reads (the finish advances it after them all). */
static void sdpa_rng_read(const struct sdpa *s, uint64_t *seed, uint64_t *offset)
{
	*seed = *offset = 0;
	if (s->p > 0) {
		*seed = (uint64_t)hdm_kget_i(s->rng, 0);
		*offset = (uint64_t)hdm_kget_i(s->rng, 1);
	}
}

static void sdpa_fwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct sdpa s;
	struct sdpa_buf w;
	uint64_t seed, offset;

	if (sdpa_decode(c, false, &s) || sdpa_scan(c, &s, begin, end) ||
	    !sdpa_buf_alloc(c, &s, &w))
		return;
	sdpa_rng_read(&s, &seed, &offset);
	for (uint64_t item = begin; item < end && !hdm_kstop(c); item++)
		sdpa_fwd_item(c, &s, &w, item, seed, offset);
	free(w.q);
}

/* After every part read the rng: the backward's position, and the next launch's. */
static void sdpa_fwd_finish(const struct hdm_kcall *c)
{
	struct sdpa s;
	uint64_t seed, offset;

	if (c->state->phase != 1 || sdpa_decode(c, false, &s) || s.p == 0)
		return;
	sdpa_rng_read(&s, &seed, &offset);
	hdm_kstore_i(HPU_DTYPE_I64, hdm_kview_at(&c->t[FWD_RNG_USED], 0), (int64_t)seed);
	hdm_kstore_i(HPU_DTYPE_I64, hdm_kview_at(&c->t[FWD_RNG_USED], 1), (int64_t)offset);
	hdm_kstore_i(HPU_DTYPE_I64, hdm_kview_at(s.rng, 1),
		     (int64_t)(offset + s.BH * s.L * s.S));
}

static uint32_t sdpa_fwd_outputs(const struct hdm_kcall *c)
{
	uint32_t o = 1u << FWD_OUT | 1u << FWD_LSE;
	int64_t f = c->args[0];

	if (c->scalars[1] > 0)
		o |= 1u << FWD_RNG | 1u << FWD_RNG_USED;
	if (f & HPU_SDPA_PROBS)
		o |= 1u << FWD_PROBS;
	if (f & HPU_SDPA_DROP_MASK)
		o |= 1u << FWD_DMASK;
	return o;
}

const struct hdm_kernel_def hdm_kernel_fused_sdpa = {
	.name = "fused_sdpa",
	.min_tensors = FWD_TENSORS,
	.max_tensors = FWD_TENSORS,
	.phases = 2,
	.outputs = sdpa_fwd_outputs,
	.check = sdpa_fwd_check,
	.work = sdpa_fwd_work,
	.item_work = sdpa_fwd_item_work,
	.run = sdpa_fwd_run,
	.finish = sdpa_fwd_finish,
};

/* ---- backward ---- */

/* A block of query rows: q, grad_out, and per row lse (w->l) and delta = grad_out . out (w->m). */
struct sdpa_qblock {
	struct sdpa_mat q, dout;
	uint64_t i0, n;
};

static struct sdpa_qblock sdpa_bwd_rows(const struct hdm_kcall *c, const struct sdpa *s,
					const struct sdpa_buf *w, uint64_t b, uint64_t h,
					uint64_t i0, uint64_t n)
{
	struct sdpa_qblock qb = {
		.q = sdpa_rows(s->q, b, h, i0, n, s->D, w->q),
		.dout = sdpa_rows(&c->t[BWD_DOUT], b, h, i0, n, s->Dv, w->dout),
		.i0 = i0, .n = n,
	};
	int64_t step = s->out->strides[3] * (int64_t)hdm_dtype_size(s->out->dtype);

	for (uint64_t r = 0; r < n; r++) {
		const uint8_t *o = sdpa_at(s->out, b, h, i0 + r, 0);
		const float *g = qb.dout.p + r * (uint64_t)qb.dout.ld;
		double dl = 0;

		for (uint64_t e = 0; e < s->Dv; e++, o += step)
			dl += (double)g[e] * hdm_kload_f(s->out->dtype, o);
		w->m[r] = (float)dl;
		w->l[r] = (float)hdm_kload_f(HPU_DTYPE_F32, sdpa_at(s->lse, b, h, i0 + r, 0));
	}
	return qb;
}

/* From a row's probabilities pr: da = pr (da keep - delta), pr = pr keep (vector code). */
static void sdpa_bwd_grad_row(float *restrict pr, float *restrict da, const float *restrict keep,
			      float delta, uint64_t n)
{
	for (uint64_t j = 0; j < n; j++) {
		da[j] = pr[j] * (da[j] * keep[j] - delta);
		pr[j] *= keep[j];
	}
}

/*
 * The query block against keys [j0, j0 + nk) (k, v): w->x gets the
 * attention weights (probabilities recomputed from the lse, times the
 * keep scales), w->da the scores' gradient, rows that see none of these
 * keys 0.  False if no row sees any.
 */
static bool sdpa_bwd_scores(const struct sdpa *s, const struct sdpa_buf *w,
			    const struct sdpa_qblock *qb, uint64_t b, uint64_t h, int64_t vl,
			    uint64_t j0, uint64_t nk, struct sdpa_mat k, struct sdpa_mat v,
			    uint64_t seed, uint64_t offset)
{
	bool fast = s->flags & HPU_SDPA_FAST_SOFTMAX, any = false;

	sdpa_gemm(false, true, qb->n, nk, s->D, s->scale, qb->q, k, 0, w->x, KB);
	sdpa_gemm(false, true, qb->n, nk, s->Dv, 1, qb->dout, v, 0, w->da, KB);
	for (uint64_t r = 0; r < qb->n; r++) {
		uint64_t i = qb->i0 + r;
		struct sdpa_range rg = sdpa_row_range(s, (uint64_t)vl, i);
		float *x = w->x + r * KB, *da = w->da + r * KB;

		if (rg.lo >= rg.hi || j0 + nk <= rg.lo || j0 >= rg.hi || w->l[r] == -INFINITY) {
			memset(x, 0, nk * sizeof(float));
			memset(da, 0, nk * sizeof(float));
			continue;
		}
		sdpa_mask_scores(s, b, h, i, rg, j0, nk, x);
		sdpa_keep(s, seed, offset, b * s->H + h, i, j0, nk, w->keep);
		sdpa_exp_row(fast, x, w->l[r], nk);
		sdpa_bwd_grad_row(x, da, w->keep, w->m[r], nk);
		any = true;
	}
	return any;
}

/* grad_q of query rows [i0, i0 + n): each row over the key blocks in order. */
static void sdpa_bwd_q_item(const struct hdm_kcall *c, const struct sdpa *s,
			    const struct sdpa_buf *w, uint64_t bh, uint64_t i0, int64_t vl,
			    uint64_t seed, uint64_t offset)
{
	uint64_t b = bh / s->H, h = bh % s->H, n = s->L - i0 < s->qrows ? s->L - i0 : s->qrows;
	uint64_t hi = sdpa_rows_hi(s, vl, i0, n);
	struct sdpa_qblock qb = sdpa_bwd_rows(c, s, w, b, h, i0, n);

	memset(w->acc, 0, n * s->D * sizeof(float));
	for (uint64_t j0 = 0; j0 < hi && !hdm_kstop(c); j0 += KB) {
		uint64_t nk = hi - j0 < KB ? hi - j0 : KB;
		struct sdpa_mat k = sdpa_rows(s->k, b, h, j0, nk, s->D, w->k);
		struct sdpa_mat v = sdpa_rows(s->v, b, h, j0, nk, s->Dv, w->v);

		if (sdpa_bwd_scores(s, w, &qb, b, h, vl, j0, nk, k, v, seed, offset))
			sdpa_gemm(false, false, n, s->D, nk, s->scale,
				  (struct sdpa_mat){ w->da, KB }, k, 1, w->acc, s->D);
	}
	sdpa_store_rows(&c->t[BWD_DQ], b, h, i0, n, s->D, w->acc);
}

/* grad_k and grad_v of key rows [j0, j0 + nk): each over the query blocks in order. */
static void sdpa_bwd_k_item(const struct hdm_kcall *c, const struct sdpa *s,
			    const struct sdpa_buf *w, uint64_t bh, uint64_t j0, int64_t vl,
			    uint64_t seed, uint64_t offset)
{
	uint64_t b = bh / s->H, h = bh % s->H, nk = s->S - j0 < s->krows ? s->S - j0 : s->krows;
	struct sdpa_mat k = sdpa_rows(s->k, b, h, j0, nk, s->D, w->k);
	struct sdpa_mat v = sdpa_rows(s->v, b, h, j0, nk, s->Dv, w->v);

	memset(w->acc, 0, nk * s->D * sizeof(float));
	memset(w->acc2, 0, nk * s->Dv * sizeof(float));
	for (uint64_t i0 = 0; i0 < s->L && !hdm_kstop(c); i0 += SDPA_ROWS) {
		uint64_t n = s->L - i0 < SDPA_ROWS ? s->L - i0 : SDPA_ROWS;
		struct sdpa_qblock qb;

		/* Causal rows before the block see none of it. */
		if (s->flags & HPU_SDPA_CAUSAL && i0 + n <= j0)
			continue;
		qb = sdpa_bwd_rows(c, s, w, b, h, i0, n);
		if (!sdpa_bwd_scores(s, w, &qb, b, h, vl, j0, nk, k, v, seed, offset))
			continue;
		sdpa_gemm(true, false, nk, s->Dv, n, 1, (struct sdpa_mat){ w->x, KB }, qb.dout, 1,
			  w->acc2, s->Dv);
		sdpa_gemm(true, false, nk, s->D, n, s->scale, (struct sdpa_mat){ w->da, KB }, qb.q,
			  1, w->acc, s->D);
	}
	sdpa_store_rows(&c->t[BWD_DK], b, h, j0, nk, s->D, w->acc);
	sdpa_store_rows(&c->t[BWD_DV], b, h, j0, nk, s->Dv, w->acc2);
}

static void sdpa_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct sdpa s;
	struct sdpa_buf w;
	uint64_t seed, offset;

	if (sdpa_decode(c, true, &s) || sdpa_scan(c, &s, begin, end) ||
	    !sdpa_buf_alloc(c, &s, &w))
		return;
	sdpa_rng_read(&s, &seed, &offset);
	for (uint64_t item = begin; item < end && !hdm_kstop(c); item++) {
		bool key = item >= s.qitems;
		uint64_t per = key ? s.kitems / s.BH : s.qitems / s.BH;
		uint64_t k = key ? item - s.qitems : item, bh = k / per;
		int64_t vl = sdpa_valid_len(c, &s, bh / s.H);

		if (vl < 0)
			break;
		if (key)
			sdpa_bwd_k_item(c, &s, &w, bh, k % per * s.krows, vl, seed, offset);
		else
			sdpa_bwd_q_item(c, &s, &w, bh, k % per * s.qrows, vl, seed, offset);
	}
	free(w.q);
}

static uint32_t sdpa_bwd_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 1u << BWD_DQ | 1u << BWD_DK | 1u << BWD_DV;
}

const struct hdm_kernel_def hdm_kernel_fused_sdpa_bwd = {
	.name = "fused_sdpa_bwd",
	.min_tensors = BWD_TENSORS,
	.max_tensors = BWD_TENSORS,
	.phases = 2,
	.outputs = sdpa_bwd_outputs,
	.check = sdpa_bwd_check,
	.work = sdpa_bwd_work,
	.item_work = sdpa_bwd_item_work,
	.run = sdpa_bwd_run,
};
