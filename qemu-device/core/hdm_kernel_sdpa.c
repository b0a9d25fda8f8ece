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
#include <stdlib.h>

#include "hdm_kernel_nn.h"
#include "hpu_philox.h"

#define KB HPU_SDPA_BLOCK
/* The most query (or key) rows of one item. */
#define SDPA_ROWS 64u
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

/* The exp of softmax_mode: expf, or (fast) 2^x from a quartic of its fraction. */
static inline float sdpa_exp(bool fast, float x)
{
	float t, f, poly;
	int32_t e;
	uint32_t bits;

	if (!fast)
		return expf(x);
	t = x * 1.44269504f;
	if (!(t > -126.f))
		return 0;
	if (t > 127.f)
		t = 127.f;
	e = (int32_t)t - (t < (float)(int32_t)t);
	f = t - (float)e;
	poly = 1 + f * (0.69304348f + f * (0.24124981f + f * (0.05235283f + f * 0.01334154f)));
	memcpy(&bits, &poly, 4);
	bits += (uint32_t)e << 23;
	memcpy(&poly, &bits, 4);
	return poly;
}

/* rows [i0, i0 + n) of v's (b, h) matrix, cols wide, as fp32 times mul: dst[r * ld + d]. */
static void sdpa_pack(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t i0, uint64_t n,
		      uint64_t cols, float mul, float *dst, uint64_t ld)
{
	int64_t step = v->strides[3] * (int64_t)hdm_dtype_size(v->dtype);

	for (uint64_t r = 0; r < n; r++) {
		const uint8_t *p = sdpa_at(v, b, h, i0 + r, 0);

		for (uint64_t d = 0; d < cols; d++, p += step)
			dst[r * ld + d] = (float)hdm_kload_f(v->dtype, p) * mul;
	}
}

/* The same transposed: dst[d * ld + r]. */
static void sdpa_pack_t(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t i0,
			uint64_t n, uint64_t cols, float *dst, uint64_t ld)
{
	int64_t step = v->strides[3] * (int64_t)hdm_dtype_size(v->dtype);

	for (uint64_t r = 0; r < n; r++) {
		const uint8_t *p = sdpa_at(v, b, h, i0 + r, 0);

		for (uint64_t d = 0; d < cols; d++, p += step)
			dst[d * ld + r] = (float)hdm_kload_f(v->dtype, p);
	}
}

/* x[j] = sum over d of a[d] * bt[d * KB + j], j < n: a row against a transposed block. */
static void sdpa_dots(const float *a, const float *bt, uint64_t depth, uint64_t n, float *x)
{
	for (uint64_t j = 0; j < n; j++)
		x[j] = 0;
	for (uint64_t d = 0; d < depth; d++) {
		const float ad = a[d], *row = bt + d * KB;

		for (uint64_t j = 0; j < n; j++)
			x[j] += ad * row[j];
	}
}

/* acc[e] += w * row[e], e < n. */
static void sdpa_axpy(float *acc, float w, const float *row, uint64_t n)
{
	for (uint64_t e = 0; e < n; e++)
		acc[e] += w * row[e];
}

/*
 * Query row i's scores against keys [j0, j0 + n) (x, from sdpa_dots()),
 * masked: -inf where the row does not see the key.  Returns their max.
 */
static float sdpa_mask_scores(const struct sdpa *s, uint64_t b, uint64_t h, uint64_t i,
			      struct sdpa_range r, uint64_t j0, uint64_t n, float *x)
{
	float mx = -INFINITY;

	for (uint64_t j = 0; j < n; j++) {
		uint64_t key = j0 + j;

		if (key < r.lo || key >= r.hi) {
			x[j] = -INFINITY;
			continue;
		}
		if (s->flags & HPU_SDPA_MASK) {
			const uint8_t *m = sdpa_at(s->mask, b, h, i, key);

			if (s->mask->dtype == HPU_DTYPE_U8)
				x[j] = *m ? x[j] : -INFINITY;
			else
				x[j] += (float)hdm_kload_f(s->mask->dtype, m);
		}
		mx = x[j] > mx ? x[j] : mx;
	}
	return mx;
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

/* A part's working memory: one allocation, carved. */
struct sdpa_fwd_buf {
	float *q, *kt, *v, *acc, *m, *l, *x, *keep;
};

static float *sdpa_alloc(const struct hdm_kcall *c, size_t n)
{
	float *p = malloc(n * sizeof(float));

	if (!p)
		hdm_kfail(c, "fused_sdpa: no working memory");
	return p;
}

/* Writes probs and the dropout mask of the item's rows: a second pass, from the lse. */
static void sdpa_fwd_extras(const struct hdm_kcall *c, const struct sdpa *s,
			    const struct sdpa_fwd_buf *w, uint64_t b, uint64_t h, uint64_t i0,
			    uint64_t n, int64_t vl, uint64_t seed, uint64_t offset)
{
	const struct hdm_kview *probs = &c->t[FWD_PROBS], *dmask = &c->t[FWD_DMASK];
	bool fast = s->flags & HPU_SDPA_FAST_SOFTMAX;

	for (uint64_t j0 = 0; j0 < s->S; j0 += KB) {
		uint64_t nk = s->S - j0 < KB ? s->S - j0 : KB;

		sdpa_pack_t(s->k, b, h, j0, nk, s->D, w->kt, KB);
		for (uint64_t r = 0; r < n; r++) {
			uint64_t i = i0 + r;
			struct sdpa_range rg = sdpa_row_range(s, (uint64_t)vl, i);

			sdpa_dots(w->q + r * s->D, w->kt, s->D, nk, w->x);
			sdpa_mask_scores(s, b, h, i, rg, j0, nk, w->x);
			sdpa_keep(s, seed, offset, b * s->H + h, i, j0, nk, w->keep);
			for (uint64_t j = 0; j < nk; j++) {
				float pr = w->m[r] == -INFINITY ? 0 : sdpa_exp(fast, w->x[j] - w->m[r]);

				if (s->flags & HPU_SDPA_PROBS)
					hdm_kstore_f(probs->dtype, sdpa_at(probs, b, h, i, j0 + j), pr);
				if (s->flags & HPU_SDPA_DROP_MASK)
					*sdpa_at(dmask, b, h, i, j0 + j) = w->keep[j] != 0;
			}
		}
	}
}

/* One item: query rows [i0, i0 + n) of (b, h). */
static void sdpa_fwd_item(const struct hdm_kcall *c, const struct sdpa *s,
			  const struct sdpa_fwd_buf *w, uint64_t item, uint64_t seed,
			  uint64_t offset)
{
	uint64_t bh = item / (s->qitems / s->BH), i0 = item % (s->qitems / s->BH) * s->qrows;
	uint64_t b = bh / s->H, h = bh % s->H, n = s->L - i0 < s->qrows ? s->L - i0 : s->qrows;
	bool fast = s->flags & HPU_SDPA_FAST_SOFTMAX;
	int64_t vl = sdpa_valid_len(c, s, b);
	uint64_t hi;

	if (vl < 0)
		return;
	hi = sdpa_rows_hi(s, vl, i0, n);
	sdpa_pack(s->q, b, h, i0, n, s->D, s->scale, w->q, s->D);
	for (uint64_t r = 0; r < n; r++) {
		w->m[r] = -INFINITY;
		w->l[r] = 0;
	}
	memset(w->acc, 0, n * s->Dv * sizeof(float));
	for (uint64_t j0 = 0; j0 < hi; j0 += KB) {
		uint64_t nk = hi - j0 < KB ? hi - j0 : KB;

		sdpa_pack_t(s->k, b, h, j0, nk, s->D, w->kt, KB);
		sdpa_pack(s->v, b, h, j0, nk, s->Dv, 1, w->v, s->Dv);
		for (uint64_t r = 0; r < n; r++) {
			uint64_t i = i0 + r;
			struct sdpa_range rg = sdpa_row_range(s, (uint64_t)vl, i);
			float mx, mnew, corr, *acc = w->acc + r * s->Dv;

			if (rg.lo >= rg.hi || j0 + nk <= rg.lo || j0 >= rg.hi)
				continue;
			sdpa_dots(w->q + r * s->D, w->kt, s->D, nk, w->x);
			mx = sdpa_mask_scores(s, b, h, i, rg, j0, nk, w->x);
			if (mx == -INFINITY)
				continue;
			mnew = mx > w->m[r] ? mx : w->m[r];
			corr = w->m[r] == -INFINITY ? 0 : sdpa_exp(fast, w->m[r] - mnew);
			w->l[r] *= corr;
			for (uint64_t e = 0; e < s->Dv; e++)
				acc[e] *= corr;
			sdpa_keep(s, seed, offset, bh, i, j0, nk, w->keep);
			for (uint64_t j = 0; j < nk; j++) {
				float pr = sdpa_exp(fast, w->x[j] - mnew);

				w->l[r] += pr;
				sdpa_axpy(acc, pr * w->keep[j], w->v + j * s->Dv, s->Dv);
			}
			w->m[r] = mnew;
		}
	}
	for (uint64_t r = 0; r < n; r++) {
		float inv = w->l[r] > 0 ? 1 / w->l[r] : 0;
		uint8_t *o = sdpa_at(s->out, b, h, i0 + r, 0);
		int64_t step = s->out->strides[3] * (int64_t)hdm_dtype_size(s->out->dtype);

		for (uint64_t e = 0; e < s->Dv; e++, o += step)
			hdm_kstore_f(s->out->dtype, o, w->acc[r * s->Dv + e] * inv);
		/* m then holds the lse, which the second pass subtracts. */
		w->m[r] = w->l[r] > 0 ? w->m[r] + logf(w->l[r]) : -INFINITY;
		hdm_kstore_f(HPU_DTYPE_F32, sdpa_at(s->lse, b, h, i0 + r, 0), w->m[r]);
	}
	if (s->flags & (HPU_SDPA_PROBS | HPU_SDPA_DROP_MASK))
		sdpa_fwd_extras(c, s, w, b, h, i0, n, vl, seed, offset);
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
	struct sdpa_fwd_buf w;
	uint64_t seed, offset, D, Dv;
	float *mem;

	if (sdpa_decode(c, false, &s) || sdpa_scan(c, &s, begin, end))
		return;
	D = s.D;
	Dv = s.Dv;
	mem = sdpa_alloc(c, SDPA_ROWS * (D + Dv + 2) + KB * (D + Dv + 2));
	if (!mem)
		return;
	w.q = mem;
	w.acc = w.q + SDPA_ROWS * D;
	w.m = w.acc + SDPA_ROWS * Dv;
	w.l = w.m + SDPA_ROWS;
	w.kt = w.l + SDPA_ROWS;
	w.v = w.kt + KB * D;
	w.x = w.v + KB * Dv;
	w.keep = w.x + KB;
	sdpa_rng_read(&s, &seed, &offset);
	for (uint64_t item = begin; item < end && !hdm_kstop(c); item++)
		sdpa_fwd_item(c, &s, &w, item, seed, offset);
	free(mem);
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

struct sdpa_bwd_buf {
	float *q, *dout, *dlt, *lse, *k, *kt, *vt, *acc, *acc2, *x, *da, *keep;
};

/* Rows [i0, i0 + n) of (b, h): q scaled, grad_out, lse and delta = grad_out . out. */
static void sdpa_bwd_rows(const struct sdpa *s, const struct hdm_kview *dout,
			  const struct sdpa_bwd_buf *w, uint64_t b, uint64_t h, uint64_t i0,
			  uint64_t n)
{
	int64_t step = s->out->strides[3] * (int64_t)hdm_dtype_size(s->out->dtype);

	sdpa_pack(s->q, b, h, i0, n, s->D, s->scale, w->q, s->D);
	sdpa_pack(dout, b, h, i0, n, s->Dv, 1, w->dout, s->Dv);
	for (uint64_t r = 0; r < n; r++) {
		const uint8_t *o = sdpa_at(s->out, b, h, i0 + r, 0);
		double dl = 0;

		for (uint64_t e = 0; e < s->Dv; e++, o += step)
			dl += (double)w->dout[r * s->Dv + e] * hdm_kload_f(s->out->dtype, o);
		w->dlt[r] = (float)dl;
		w->lse[r] = (float)hdm_kload_f(HPU_DTYPE_F32, sdpa_at(s->lse, b, h, i0 + r, 0));
	}
}

/*
 * Row r (query i) against keys [j0, j0 + nk) of w->kt and w->vt: w->x gets
 * the probabilities times the keep scales (the attention weights), w->da
 * the scores' gradient; false if the row sees none of these keys.
 */
static bool sdpa_bwd_block(const struct sdpa *s, const struct sdpa_bwd_buf *w, uint64_t b,
			   uint64_t h, uint64_t i, uint64_t r, struct sdpa_range rg, uint64_t j0,
			   uint64_t nk, uint64_t seed, uint64_t offset)
{
	bool fast = s->flags & HPU_SDPA_FAST_SOFTMAX;

	if (rg.lo >= rg.hi || j0 + nk <= rg.lo || j0 >= rg.hi || w->lse[r] == -INFINITY)
		return false;
	sdpa_dots(w->q + r * s->D, w->kt, s->D, nk, w->x);
	sdpa_mask_scores(s, b, h, i, rg, j0, nk, w->x);
	sdpa_dots(w->dout + r * s->Dv, w->vt, s->Dv, nk, w->da);
	sdpa_keep(s, seed, offset, b * s->H + h, i, j0, nk, w->keep);
	for (uint64_t j = 0; j < nk; j++) {
		float pr = w->x[j] == -INFINITY ? 0 : sdpa_exp(fast, w->x[j] - w->lse[r]);

		w->da[j] = pr * (w->da[j] * w->keep[j] - w->dlt[r]);
		w->x[j] = pr * w->keep[j];
	}
	return true;
}

static void sdpa_store_rows(const struct hdm_kview *v, uint64_t b, uint64_t h, uint64_t i0,
			    uint64_t n, uint64_t cols, const float *src, float mul)
{
	int64_t step = v->strides[3] * (int64_t)hdm_dtype_size(v->dtype);

	for (uint64_t r = 0; r < n; r++) {
		uint8_t *p = sdpa_at(v, b, h, i0 + r, 0);

		for (uint64_t d = 0; d < cols; d++, p += step)
			hdm_kstore_f(v->dtype, p, src[r * cols + d] * mul);
	}
}

/* grad_q of query rows [i0, i0 + n): each row over every key block in order. */
static void sdpa_bwd_q_item(const struct hdm_kcall *c, const struct sdpa *s,
			    const struct sdpa_bwd_buf *w, uint64_t bh, uint64_t i0, int64_t vl,
			    uint64_t seed, uint64_t offset)
{
	uint64_t b = bh / s->H, h = bh % s->H, n = s->L - i0 < s->qrows ? s->L - i0 : s->qrows;
	uint64_t hi = sdpa_rows_hi(s, vl, i0, n);

	sdpa_bwd_rows(s, &c->t[BWD_DOUT], w, b, h, i0, n);
	memset(w->acc, 0, n * s->D * sizeof(float));
	for (uint64_t j0 = 0; j0 < hi && !hdm_kstop(c); j0 += KB) {
		uint64_t nk = hi - j0 < KB ? hi - j0 : KB;

		sdpa_pack_t(s->k, b, h, j0, nk, s->D, w->kt, KB);
		sdpa_pack(s->k, b, h, j0, nk, s->D, 1, w->k, s->D);
		sdpa_pack_t(s->v, b, h, j0, nk, s->Dv, w->vt, KB);
		for (uint64_t r = 0; r < n; r++) {
			struct sdpa_range rg = sdpa_row_range(s, (uint64_t)vl, i0 + r);

			if (!sdpa_bwd_block(s, w, b, h, i0 + r, r, rg, j0, nk, seed, offset))
				continue;
			for (uint64_t j = 0; j < nk; j++)
				sdpa_axpy(w->acc + r * s->D, w->da[j], w->k + j * s->D, s->D);
		}
	}
	sdpa_store_rows(&c->t[BWD_DQ], b, h, i0, n, s->D, w->acc, s->scale);
}

/* grad_k and grad_v of key rows [j0, j0 + nk): each over every query row in order. */
static void sdpa_bwd_k_item(const struct hdm_kcall *c, const struct sdpa *s,
			    const struct sdpa_bwd_buf *w, uint64_t bh, uint64_t j0, int64_t vl,
			    uint64_t seed, uint64_t offset)
{
	uint64_t b = bh / s->H, h = bh % s->H, nk = s->S - j0 < s->krows ? s->S - j0 : s->krows;
	float *dk = w->acc, *dv = w->acc2;

	sdpa_pack_t(s->k, b, h, j0, nk, s->D, w->kt, KB);
	sdpa_pack_t(s->v, b, h, j0, nk, s->Dv, w->vt, KB);
	memset(dk, 0, nk * s->D * sizeof(float));
	memset(dv, 0, nk * s->Dv * sizeof(float));
	for (uint64_t i0 = 0; i0 < s->L && !hdm_kstop(c); i0 += SDPA_ROWS) {
		uint64_t n = s->L - i0 < SDPA_ROWS ? s->L - i0 : SDPA_ROWS, r = 0;

		/* Causal rows before the block see none of it: skip their packing. */
		if (s->flags & HPU_SDPA_CAUSAL && i0 + n <= j0)
			continue;
		sdpa_bwd_rows(s, &c->t[BWD_DOUT], w, b, h, i0, n);
		for (r = 0; r < n; r++) {
			struct sdpa_range rg = sdpa_row_range(s, (uint64_t)vl, i0 + r);

			if (!sdpa_bwd_block(s, w, b, h, i0 + r, r, rg, j0, nk, seed, offset))
				continue;
			for (uint64_t j = 0; j < nk; j++) {
				sdpa_axpy(dv + j * s->Dv, w->x[j], w->dout + r * s->Dv, s->Dv);
				sdpa_axpy(dk + j * s->D, w->da[j], w->q + r * s->D, s->D);
			}
		}
	}
	sdpa_store_rows(&c->t[BWD_DK], b, h, j0, nk, s->D, dk, 1);
	sdpa_store_rows(&c->t[BWD_DV], b, h, j0, nk, s->Dv, dv, 1);
}

static void sdpa_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct sdpa s;
	struct sdpa_bwd_buf w;
	uint64_t seed, offset, D, Dv, R = SDPA_ROWS;
	float *mem;

	if (sdpa_decode(c, true, &s) || sdpa_scan(c, &s, begin, end))
		return;
	D = s.D;
	Dv = s.Dv;
	mem = sdpa_alloc(c, R * (D + Dv + 2) + KB * (2 * D + Dv + 3) + R * (D + Dv) + KB * Dv);
	if (!mem)
		return;
	w.q = mem;
	w.dout = w.q + R * D;
	w.dlt = w.dout + R * Dv;
	w.lse = w.dlt + R;
	w.k = w.lse + R;
	w.kt = w.k + KB * D;
	w.vt = w.kt + KB * D;
	w.x = w.vt + KB * Dv;
	w.da = w.x + KB;
	w.keep = w.da + KB;
	w.acc = w.keep + KB;
	w.acc2 = w.acc + R * (D > Dv ? D : Dv);
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
	free(mem);
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
