/* SPDX-License-Identifier: MIT */
/*
 * Operand helpers of the neural-network, loss and optimizer kernel families
 * (hdm_kernel_nn.c, hdm_kernel_loss.c, hdm_kernel_optim.c).
 */
#ifndef HPU_KERNEL_NN_H
#define HPU_KERNEL_NN_H

#include "hdm_kernel.h"

/* Element i (row-major over v's shape), widened / rounded by v's dtype. */
static inline double hpu_kget(const struct hpu_kview *v, uint64_t i)
{
	return hpu_kload_f(v->dtype, hpu_kview_at(v, i));
}

static inline int64_t hpu_kget_i(const struct hpu_kview *v, uint64_t i)
{
	return hpu_kload_i(v->dtype, hpu_kview_at(v, i));
}

static inline void hpu_kset(const struct hpu_kview *v, uint64_t i, double x)
{
	hpu_kstore_f(v->dtype, hpu_kview_at(v, i), x);
}

static inline bool hpu_kview_is_index(const struct hpu_kview *v)
{
	return v->dtype == HPU_DTYPE_I32 || v->dtype == HPU_DTYPE_I64;
}

/* v has ndim dims equal to shape[0..ndim). */
static inline bool hpu_kview_has_shape(const struct hpu_kview *v, uint32_t ndim,
				       const uint64_t *shape)
{
	if (v->ndim != ndim)
		return false;
	for (uint32_t d = 0; d < ndim; d++)
		if (v->shape[d] != shape[d])
			return false;
	return true;
}

static inline bool hpu_kview_same_shape(const struct hpu_kview *a, const struct hpu_kview *b)
{
	return hpu_kview_has_shape(a, b->ndim, b->shape);
}

/* A float view of ref's shape. */
static inline bool hpu_kview_float_like(const struct hpu_kview *v, const struct hpu_kview *ref)
{
	return hpu_dtype_is_float(v->dtype) && hpu_kview_same_shape(v, ref);
}

/*
 * Kernels whose output elements read other elements of an input cannot run
 * in place; the ABI's only allowed overlap is the very same view, so one
 * base address is enough to see it.  Empty views share no element (the
 * engine may point them all at one place).
 */
static inline bool hpu_kview_aliases(const struct hpu_kview *a, const struct hpu_kview *b)
{
	return a->base == b->base && hpu_kview_numel(a) && hpu_kview_numel(b);
}

/* Rows of v along dim: the product of the other dims. */
static inline uint64_t hpu_kview_rows(const struct hpu_kview *v, uint32_t dim)
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
static inline struct hpu_kview hpu_kview_lead(const struct hpu_kview *v, uint32_t lead, uint64_t j)
{
	struct hpu_kview w = *v;

	w.base = hpu_kview_at_from(v, lead, j);
	w.ndim = lead;
	for (uint32_t d = lead; d < HPU_TENSOR_MAX_DIMS; d++) {
		w.shape[d] = 1;
		w.strides[d] = 0;
	}
	return w;
}

/* One row of a view along a dim: n elements, step bytes apart. */
struct hpu_krow {
	uint8_t *p;
	int64_t step;
	uint64_t n;
	uint32_t dtype;
};

/* Row r of v along dim, r being row-major over the other dims. */
static inline struct hpu_krow hpu_krow(const struct hpu_kview *v, uint32_t dim, uint64_t r)
{
	int64_t size = hpu_dtype_size(v->dtype), off = 0;

	for (uint32_t d = v->ndim; d-- > 0;) {
		if (d == dim)
			continue;
		off += (int64_t)(r % v->shape[d]) * v->strides[d];
		r /= v->shape[d];
	}
	return (struct hpu_krow){ v->base + off * size, v->strides[dim] * size, v->shape[dim],
				  v->dtype };
}

static inline double hpu_krow_get(const struct hpu_krow *w, uint64_t j)
{
	return hpu_kload_f(w->dtype, w->p + (int64_t)j * w->step);
}

static inline void hpu_krow_set(const struct hpu_krow *w, uint64_t j, double x)
{
	hpu_kstore_f(w->dtype, w->p + (int64_t)j * w->step, x);
}

/* The work of rows of n elements each: a row of none still costs a visit. */
static inline uint64_t hpu_kwork_rows(uint64_t rows, uint64_t n)
{
	return hpu_kmul_sat(rows, n ? n : 1);
}

/*
 * Element i of index tensor v, read once and checked where it is used: in
 * [0, n), else the launch fails with why and the result is false.
 */
static inline bool hpu_kget_index(const struct hpu_kcall *c, const struct hpu_kview *v, uint64_t i,
				  uint64_t n, const char *why, int64_t *x)
{
	*x = hpu_kload_index(v->dtype, hpu_kview_at(v, i));
	return hpu_kindex_ok(c, *x, n, why);
}

/* outputs() of the kernels that write t[0] alone. */
static inline uint32_t hpu_kernel_writes_t0(const struct hpu_kcall *c)
{
	(void)c;
	return 1;
}

/*
 * A phase that checks every index of a tensor before a later one uses
 * them, so that a bad one fails the launch before anything is written:
 * its items are chunks of HPU_KSCAN_CHUNK indices.
 */
#define HPU_KSCAN_CHUNK HPU_KERNEL_MAX_ITEM_WORK

/* The scan's items over n indices. */
static inline uint64_t hpu_kscan_items(uint64_t n)
{
	return (n + HPU_KSCAN_CHUNK - 1) / HPU_KSCAN_CHUNK;
}

/* The most indices one item of the scan over n reads. */
static inline uint64_t hpu_kscan_item_work(uint64_t n)
{
	return n < HPU_KSCAN_CHUNK ? n : HPU_KSCAN_CHUNK;
}

/*
 * Item k of the scan of index tensor v: each index in [0, n), or equal to
 * *ignore if ignore is not NULL, else the launch fails with why.  Returns
 * how many of the chunk's indices are not *ignore (all of them without).
 */
static inline uint64_t hpu_kscan_chunk(const struct hpu_kcall *c, const struct hpu_kview *v,
				       uint64_t n, const int64_t *ignore, uint64_t k,
				       struct hpu_kpace *p, const char *why)
{
	uint64_t first = k * HPU_KSCAN_CHUNK, len = hpu_kscan_item_work(hpu_kview_numel(v) - first);
	uint64_t counted = 0;
	struct hpu_kcur cur;

	hpu_kcur_init(&cur, v, first);
	hpu_kfor(p, i, len) {
		int64_t x = hpu_kload_index(cur.dtype, hpu_kcur_ptr(&cur));
		bool skip = ignore && x == *ignore;

		if (!skip && !hpu_kindex_ok(c, x, n, why))
			return counted;
		counted += !skip;
		hpu_kcur_next(&cur);
	}
	return counted;
}

#endif /* HPU_KERNEL_NN_H */
