/* SPDX-License-Identifier: MIT */
/*
 * Operand helpers of the neural-network, loss and optimizer kernel families
 * (hdm_kernel_nn.c, hdm_kernel_loss.c, hdm_kernel_optim.c).
 */
#ifndef HDM_KERNEL_NN_H
#define HDM_KERNEL_NN_H

#include "hdm_kernel.h"

/* Element i (row-major over v's shape), widened / rounded by v's dtype. */
static inline double hdm_kget(const struct hdm_kview *v, uint64_t i)
{
	return hdm_kload_f(v->dtype, hdm_kview_at(v, i));
}

static inline int64_t hdm_kget_i(const struct hdm_kview *v, uint64_t i)
{
	return hdm_kload_i(v->dtype, hdm_kview_at(v, i));
}

static inline void hdm_kset(const struct hdm_kview *v, uint64_t i, double x)
{
	hdm_kstore_f(v->dtype, hdm_kview_at(v, i), x);
}

static inline bool hdm_kview_is_index(const struct hdm_kview *v)
{
	return v->dtype == HPU_DTYPE_I32 || v->dtype == HPU_DTYPE_I64;
}

/* v has ndim dims equal to shape[0..ndim). */
static inline bool hdm_kview_has_shape(const struct hdm_kview *v, uint32_t ndim,
				       const uint64_t *shape)
{
	if (v->ndim != ndim)
		return false;
	for (uint32_t d = 0; d < ndim; d++)
		if (v->shape[d] != shape[d])
			return false;
	return true;
}

static inline bool hdm_kview_same_shape(const struct hdm_kview *a, const struct hdm_kview *b)
{
	return hdm_kview_has_shape(a, b->ndim, b->shape);
}

/* A float view of ref's shape. */
static inline bool hdm_kview_float_like(const struct hdm_kview *v, const struct hdm_kview *ref)
{
	return hdm_dtype_is_float(v->dtype) && hdm_kview_same_shape(v, ref);
}

/*
 * Kernels whose output elements read other elements of an input cannot run
 * in place; the ABI's only allowed overlap is the very same view, so one
 * base address is enough to see it.  Empty views share no element (the
 * engine may point them all at one place).
 */
static inline bool hdm_kview_aliases(const struct hdm_kview *a, const struct hdm_kview *b)
{
	return a->base == b->base && hdm_kview_numel(a) && hdm_kview_numel(b);
}

/* Rows of v along dim: the product of the other dims. */
static inline uint64_t hdm_kview_rows(const struct hdm_kview *v, uint32_t dim)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < v->ndim; d++)
		if (d != dim)
			n *= v->shape[d];
	return n;
}

/*
 * v's first lead dims, based at element j of its other dims: walking it
 * visits v's elements r * n + j in order of r, n being the other dims' size
 * (a column of v seen as [rows, n]; with no rows, a column of none).
 */
static inline struct hdm_kview hdm_kview_lead(const struct hdm_kview *v, uint32_t lead, uint64_t j)
{
	struct hdm_kview w = *v;

	w.base = hdm_kview_at_from(v, lead, j);
	w.ndim = lead;
	for (uint32_t d = lead; d < HPU_TENSOR_MAX_DIMS; d++) {
		w.shape[d] = 1;
		w.strides[d] = 0;
	}
	return w;
}

/* One row of a view along a dim: n elements, step bytes apart. */
struct hdm_krow {
	uint8_t *p;
	int64_t step;
	uint64_t n;
	uint32_t dtype;
};

/* Row r of v along dim, r being row-major over the other dims. */
static inline struct hdm_krow hdm_krow(const struct hdm_kview *v, uint32_t dim, uint64_t r)
{
	int64_t size = hdm_dtype_size(v->dtype), off = 0;

	for (uint32_t d = v->ndim; d-- > 0;) {
		if (d == dim)
			continue;
		off += (int64_t)(r % v->shape[d]) * v->strides[d];
		r /= v->shape[d];
	}
	return (struct hdm_krow){ v->base + off * size, v->strides[dim] * size, v->shape[dim],
				  v->dtype };
}

static inline double hdm_krow_get(const struct hdm_krow *w, uint64_t j)
{
	return hdm_kload_f(w->dtype, w->p + (int64_t)j * w->step);
}

static inline void hdm_krow_set(const struct hdm_krow *w, uint64_t j, double x)
{
	hdm_kstore_f(w->dtype, w->p + (int64_t)j * w->step, x);
}

/* The work of rows of n elements each: a row of none still costs a visit. */
static inline uint64_t hdm_kwork_rows(uint64_t rows, uint64_t n)
{
	return hdm_kmul_sat(rows, n ? n : 1);
}

/*
 * Element i of index tensor v, read once and checked where it is used: in
 * [0, n), else the launch fails with why and the result is false.
 */
static inline bool hdm_kget_index(const struct hdm_kcall *c, const struct hdm_kview *v, uint64_t i,
				  uint64_t n, const char *why, int64_t *x)
{
	*x = hdm_kload_index(v->dtype, hdm_kview_at(v, i));
	return hdm_kindex_ok(c, *x, n, why);
}

/* outputs() of the kernels that write t[0] alone. */
static inline uint32_t hdm_kernel_writes_t0(const struct hdm_kcall *c)
{
	(void)c;
	return 1;
}

/*
 * A phase that checks every index of a tensor before a later one uses
 * them, so that a bad one fails the launch before anything is written:
 * its items are chunks of HDM_KSCAN_CHUNK indices.
 */
#define HDM_KSCAN_CHUNK HPU_KERNEL_MAX_ITEM_WORK

/* The scan's items over n indices. */
static inline uint64_t hdm_kscan_items(uint64_t n)
{
	return (n + HDM_KSCAN_CHUNK - 1) / HDM_KSCAN_CHUNK;
}

/* The most indices one item of the scan over n reads. */
static inline uint64_t hdm_kscan_item_work(uint64_t n)
{
	return n < HDM_KSCAN_CHUNK ? n : HDM_KSCAN_CHUNK;
}

/*
 * Item k of the scan of index tensor v: each index in [0, n), or equal to
 * *ignore if ignore is not NULL, else the launch fails with why.  Returns
 * how many of the chunk's indices are not *ignore (all of them without).
 */
static inline uint64_t hdm_kscan_chunk(const struct hdm_kcall *c, const struct hdm_kview *v,
				       uint64_t n, const int64_t *ignore, uint64_t k,
				       struct hdm_kpace *p, const char *why)
{
	uint64_t first = k * HDM_KSCAN_CHUNK, len = hdm_kscan_item_work(hdm_kview_numel(v) - first);
	uint64_t counted = 0;
	struct hdm_kcur cur;

	hdm_kcur_init(&cur, v, first);
	hdm_kfor(p, i, len) {
		int64_t x = hdm_kload_index(cur.dtype, hdm_kcur_ptr(&cur));
		bool skip = ignore && x == *ignore;

		if (!skip && !hdm_kindex_ok(c, x, n, why))
			return counted;
		counted += !skip;
		hdm_kcur_next(&cur);
	}
	return counted;
}

/*
 * Batch norm's walk (hdm_kernel_bnorm.c), shared with group norm
 * (hdm_kernel_gnorm.c): rows ("channels") of m elements each, walked in
 * chunks of HDM_BN_CHUNK, each a work item leaving its partials in the
 * scratch, which are joined in order whatever the split.
 */
#define HDM_BN_CHUNK HPU_BNORM_CHUNK

/* The most partials the scratch holds. */
#define HDM_BN_MAX_PARTS (1u << 19)

struct hdm_bn {
	const struct hdm_kview *in;
	uint64_t chans, m, chunks; /* rows, elements per row, chunks per row */
};

/* A chunk's partials: its mean and squared deviations, or the backward's two sums. */
struct hdm_bn_part {
	double a, b;
};

/* Chunks of a row of m elements: one at least. */
static inline uint64_t hdm_bn_chunks(uint64_t m)
{
	return m ? (m + HDM_BN_CHUNK - 1) / HDM_BN_CHUNK : 1;
}

/* Elements in chunk k of a row. */
static inline uint64_t hdm_bn_chunk_len(const struct hdm_bn *bn, uint64_t k)
{
	uint64_t first = k * HDM_BN_CHUNK;

	return bn->m - first < HDM_BN_CHUNK ? bn->m - first : HDM_BN_CHUNK;
}

/* v without dim dim, at index i of it. */
struct hdm_kview hdm_kview_drop(const struct hdm_kview *v, uint32_t dim, uint64_t i);
/* Item it as row and chunk, and the chunk's first element and length. */
void hdm_bn_item(const struct hdm_bn *bn, uint64_t it, uint64_t *ch, uint64_t *first,
		 uint64_t *len);
/* Mean and squared deviations (two passes) of x's elements [first, first + len). */
struct hdm_bn_part hdm_bn_moments(const struct hdm_kview *x, uint64_t first, uint64_t len,
				  struct hdm_kpace *p);

/* Chunks' moments joined in order (Chan et al.): start from { 0 }. */
struct hdm_bn_join {
	double n, mean, m2;
};

void hdm_bn_join(struct hdm_bn_join *j, const struct hdm_bn_part *part, double nk);
/* out = (x - mean) * scale + shift over elements [first, first + len). */
void hdm_bn_affine(const struct hdm_kview *out, const struct hdm_kview *x, uint64_t first,
		   uint64_t len, double mean, double scale, double shift, struct hdm_kpace *p);
/* Sums of g and of g * (x - mean) * invstd over elements [first, first + len). */
struct hdm_bn_part hdm_bn_grad_sums(const struct hdm_kview *g, const struct hdm_kview *x,
				    uint64_t first, uint64_t len, double mean, double invstd,
				    struct hdm_kpace *p);
/* gi = k0 g + k1 + k2 xhat, xhat = (x - mean) * invstd, over elements [first, first + len). */
void hdm_bn_grad_in(const struct hdm_kview *gi, const struct hdm_kview *g,
		    const struct hdm_kview *x, uint64_t first, uint64_t len, double mean,
		    double invstd, const double k[3], struct hdm_kpace *p);

/*
 * The device's Philox stream (hpu_philox.h) as DROPOUT and RANDOM draw it
 * (hdm_kernel_nn.c), rng an I64 [2] {seed, offset}.  A walk's draws are made
 * ahead in whole lanes of blocks: u holds n + HDM_PHILOX_LANE_DRAWS floats.
 */
#define HDM_PHILOX_LANE_DRAWS (16 * 4)

/* Positions [pos, pos + n) of seed's stream into u, pos + j at u[skew + j]; returns skew. */
uint64_t hdm_philox_draws(uint64_t seed, uint64_t pos, uint64_t n, float *u);
/* rng's offset on by draws (in finish(), once every part has read it). */
void hdm_philox_advance(const struct hdm_kview *rng, uint64_t draws);

#endif /* HDM_KERNEL_NN_H */
