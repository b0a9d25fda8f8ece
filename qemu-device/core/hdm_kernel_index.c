/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: index ops (index_select, gather, scatter_add,
 * scatter) and topk.  index_select is a gather whose index is the 1-D one
 * broadcast over the output's other dims.  Gathers take output elements as
 * work items; the scatters take blocks of self along dim at fixed other
 * coordinates, so no two parts write the same element and each sum (or
 * last write) runs in index order whatever the split; topk takes rows.
 * Indices are checked by a first phase, before anything is written, and
 * again where they address.
 */
#include "hdm_kernel_nn.h"

/* The kernels' dim, arg a: in [0, max(v's ndim, 1)). */
static bool hdm_ix_dim(int64_t a, const struct hdm_kview *v, uint32_t *dim)
{
	uint32_t nd = v->ndim ? v->ndim : 1;

	if (a < 0 || a >= nd)
		return false;
	*dim = (uint32_t)a;
	return true;
}

/*
 * An odometer over a shape of nd dims (row-major) that keeps the element
 * offsets of up to three views, each with its own strides: the kernels
 * walk operands of one shape whose dim along `dim` they address apart.
 */
struct hdm_ixwalk {
	uint32_t nd, nv;
	uint64_t shape[HPU_TENSOR_MAX_DIMS], pos[HPU_TENSOR_MAX_DIMS];
	int64_t st[3][HPU_TENSOR_MAX_DIMS];
	int64_t off[3];
};

/* At linear index i (below the shape's product) of shape; st[v] the views' strides. */
static void hdm_ixwalk_init(struct hdm_ixwalk *w, uint32_t nd, const uint64_t *shape,
			    unsigned int nv, const int64_t *const *st, uint64_t i)
{
	w->nd = nd ? nd : 1;
	w->nv = nv;
	for (unsigned int v = 0; v < nv; v++) {
		memcpy(w->st[v], st[v], sizeof(w->st[v]));
		w->off[v] = 0;
	}
	memcpy(w->shape, shape, sizeof(w->shape));
	for (uint32_t d = w->nd; d-- > 0;) {
		w->pos[d] = i % shape[d];
		i /= shape[d];
		for (unsigned int v = 0; v < nv; v++)
			w->off[v] += (int64_t)w->pos[d] * w->st[v][d];
	}
}

static inline void hdm_ixwalk_next(struct hdm_ixwalk *w)
{
	for (uint32_t d = w->nd; d-- > 0;) {
		for (unsigned int v = 0; v < w->nv; v++)
			w->off[v] += w->st[v][d];
		if (++w->pos[d] < w->shape[d])
			return;
		for (unsigned int v = 0; v < w->nv; v++)
			w->off[v] -= (int64_t)w->shape[d] * w->st[v][d];
		w->pos[d] = 0;
	}
}

/* Phase 0 of the index kernels: the scan of t[ti]'s indices against bound n. */
static void hdm_ix_scan(const struct hdm_kcall *c, unsigned int ti, uint64_t n, uint64_t begin,
			uint64_t end)
{
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t k = begin; k < end && !hdm_kstop(c); k++)
		hdm_kscan_chunk(c, &c->t[ti], n, NULL, k, &p, "an index out of range");
}

#define HDM_IX_PHASES 2

static uint64_t hdm_ix_scan_work(const struct hdm_kcall *c, unsigned int ti)
{
	return hdm_kview_numel(&c->t[ti]);
}

/* ---- index_select and gather: t out, in, index ---- */

static int hdm_gather_check_common(const struct hdm_kcall *c, uint32_t *dim)
{
	const struct hdm_kview *out = &c->t[0], *in = &c->t[1], *idx = &c->t[2];

	if (c->num_tensors != 3 || out->dtype != in->dtype || out->ndim != in->ndim ||
	    !hdm_kview_is_index(idx) || !hdm_ix_dim(c->args[0], in, dim) || hdm_kview_aliases(out, in) ||
	    hdm_kview_aliases(out, idx))
		return -1;
	return 0;
}

static int hdm_index_select_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0], *in = &c->t[1], *idx = &c->t[2];
	uint64_t shape[HPU_TENSOR_MAX_DIMS];
	uint32_t dim;

	if (hdm_gather_check_common(c, &dim) || idx->ndim > 1)
		return -1;
	memcpy(shape, in->shape, sizeof(shape));
	shape[dim] = hdm_kview_numel(idx);
	if (!hdm_kview_has_shape(out, in->ndim, shape) || (!in->ndim && shape[0] != 1))
		return -1;
	items[0] = hdm_kscan_items(hdm_kview_numel(idx));
	items[1] = hdm_kview_numel(out);
	return 0;
}

static int hdm_gather_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0], *in = &c->t[1], *idx = &c->t[2];
	uint32_t dim;

	if (hdm_gather_check_common(c, &dim) || !hdm_kview_same_shape(out, idx))
		return -1;
	for (uint32_t d = 0; d < in->ndim; d++)
		if (d != dim && idx->shape[d] > in->shape[d])
			return -1;
	items[0] = hdm_kscan_items(hdm_kview_numel(idx));
	items[1] = hdm_kview_numel(out);
	return 0;
}

/* The scan's indices, then an element each. */
static uint64_t hdm_gather_work(const struct hdm_kcall *c, uint64_t items)
{
	return c->state->phase ? items : hdm_ix_scan_work(c, 2);
}

static uint64_t hdm_gather_item_work(const struct hdm_kcall *c)
{
	return c->state->phase ? 1 : hdm_kscan_item_work(hdm_ix_scan_work(c, 2));
}

/*
 * out[i] = in[i with i[dim] = index'[i]] for out's elements [begin, end),
 * index' being index itself (gather) or, for index_select, the 1-D index
 * along dim broadcast over out's other dims.
 */
static void hdm_gather_copy(const struct hdm_kcall *c, bool select, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *out = &c->t[0], *in = &c->t[1], *idx = &c->t[2];
	uint32_t dim = (uint32_t)c->args[0];
	unsigned int esize = hdm_dtype_size(out->dtype), isize = hdm_dtype_size(idx->dtype);
	int64_t in_st[HPU_TENSOR_MAX_DIMS], idx_st[HPU_TENSOR_MAX_DIMS] = { 0 };
	struct hdm_kpace p = hdm_kpace_start(c);
	struct hdm_ixwalk w;

	if (begin == end)
		return; /* out may be empty: no position to start at */
	memcpy(in_st, in->strides, sizeof(in_st));
	in_st[dim] = 0;
	if (select)
		idx_st[dim] = idx->strides[0];
	else
		memcpy(idx_st, idx->strides, sizeof(idx_st));
	hdm_ixwalk_init(&w, out->ndim, out->shape, 3,
			(const int64_t *const[]){ out->strides, idx_st, in_st }, begin);
	hdm_kfor(&p, i, end - begin) {
		int64_t x = hdm_kload_index(idx->dtype, idx->base + w.off[1] * isize);

		if (!hdm_kindex_ok(c, x, in->shape[dim], "an index out of range"))
			return;
		memcpy(out->base + w.off[0] * esize,
		       in->base + (w.off[2] + x * in->strides[dim]) * esize, esize);
		hdm_ixwalk_next(&w);
	}
}

static void hdm_index_select_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	if (!c->state->phase)
		hdm_ix_scan(c, 2, c->t[1].shape[c->args[0]], begin, end);
	else
		hdm_gather_copy(c, true, begin, end);
}

static void hdm_gather_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	if (!c->state->phase)
		hdm_ix_scan(c, 2, c->t[1].shape[c->args[0]], begin, end);
	else
		hdm_gather_copy(c, false, begin, end);
}

const struct hdm_kernel_def hdm_kernel_index_select = {
	.name = "index_select",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.phases = HDM_IX_PHASES,
	.check = hdm_index_select_check,
	.work = hdm_gather_work,
	.item_work = hdm_gather_item_work,
	.run = hdm_index_select_run,
};

const struct hdm_kernel_def hdm_kernel_gather = {
	.name = "gather",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.phases = HDM_IX_PHASES,
	.check = hdm_gather_check,
	.work = hdm_gather_work,
	.item_work = hdm_gather_item_work,
	.run = hdm_gather_run,
};

/* ---- scatter_add and scatter: t self (io), index, src ---- */

/* Items: blocks of self along dim (HPU_SCATTER_BLOCK, or all of a shorter dim) per column. */
static uint64_t hdm_scatter_block(const struct hdm_kcall *c)
{
	uint64_t n = c->t[0].shape[c->args[0]];

	return n < HPU_SCATTER_BLOCK ? (n ? n : 1) : HPU_SCATTER_BLOCK;
}

static uint64_t hdm_scatter_blocks(const struct hdm_kcall *c)
{
	uint64_t n = c->t[0].shape[c->args[0]], b = hdm_scatter_block(c);

	return (n + b - 1) / b;
}

static bool hdm_scatter_dtype(uint32_t dtype)
{
	return hdm_dtype_is_float(dtype) || dtype == HPU_DTYPE_I32 || dtype == HPU_DTYPE_I64;
}

static int hdm_scatter_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *self = &c->t[0], *idx = &c->t[1], *src = &c->t[2];
	uint32_t dim;

	if (c->num_tensors != 3 || !hdm_scatter_dtype(self->dtype) || src->dtype != self->dtype ||
	    !hdm_kview_is_index(idx) || idx->ndim != self->ndim || src->ndim != self->ndim ||
	    !hdm_ix_dim(c->args[0], self, &dim) || hdm_kview_aliases(self, idx) ||
	    hdm_kview_aliases(self, src) ||
	    idx->shape[dim] > HPU_KERNEL_MAX_ITEM_WORK - HPU_SCATTER_BLOCK)
		return -1;
	for (uint32_t d = 0; d < self->ndim; d++)
		if (idx->shape[d] > src->shape[d] || (d != dim && idx->shape[d] > self->shape[d]))
			return -1;
	items[0] = hdm_kscan_items(hdm_kview_numel(idx));
	items[1] = hdm_kmul_sat(hdm_kview_rows(idx, dim), hdm_scatter_blocks(c));
	return 0;
}

/* An item visits its column's indices and its block. */
static uint64_t hdm_scatter_item_work(const struct hdm_kcall *c)
{
	if (!c->state->phase)
		return hdm_kscan_item_work(hdm_ix_scan_work(c, 1));
	return c->t[1].shape[c->args[0]] + hdm_scatter_block(c);
}

static uint64_t hdm_scatter_work(const struct hdm_kcall *c, uint64_t items)
{
	if (!c->state->phase)
		return hdm_ix_scan_work(c, 1);
	return hdm_kmul_sat(items, hdm_scatter_item_work(c));
}

/* A block's sums (or last values): fp64 for floats, int64 (wrapping, as unsigned) for integers. */
union hdm_scatter_acc {
	double f[HPU_SCATTER_BLOCK];
	uint64_t i[HPU_SCATTER_BLOCK];
};

static void hdm_scatter_item(const struct hdm_kcall *c, uint64_t it, uint64_t nb,
			     union hdm_scatter_acc *acc, struct hdm_kpace *p)
{
	const struct hdm_kview *self = &c->t[0], *idx = &c->t[1], *src = &c->t[2];
	uint32_t dim = (uint32_t)c->args[0];
	uint64_t blk = hdm_scatter_block(c), n = self->shape[dim], k = idx->shape[dim];
	uint64_t v0 = it % nb * blk, nv = n - v0 < blk ? n - v0 : blk;
	unsigned int esize = hdm_dtype_size(self->dtype), isize = hdm_dtype_size(idx->dtype);
	bool fl = hdm_dtype_is_float(self->dtype), put = c->kernel == HPU_KERNEL_SCATTER;
	uint64_t col_shape[HPU_TENSOR_MAX_DIMS];
	struct hdm_ixwalk w;
	uint8_t *sp, *ip, *xp;

	/* The column: index's other coordinates, at 0 along dim in every view. */
	memcpy(col_shape, idx->shape, sizeof(col_shape));
	col_shape[dim] = 1;
	hdm_ixwalk_init(&w, self->ndim, col_shape, 3,
			(const int64_t *const[]){ self->strides, idx->strides, src->strides },
			it / nb);
	sp = self->base + (w.off[0] + (int64_t)v0 * self->strides[dim]) * esize;
	for (uint64_t j = 0; j < nv; j++) {
		const uint8_t *e = sp + (int64_t)j * self->strides[dim] * esize;

		if (fl)
			acc->f[j] = hdm_kload_f(self->dtype, e);
		else
			acc->i[j] = (uint64_t)hdm_kload_i(self->dtype, e);
	}
	ip = idx->base + w.off[1] * isize;
	xp = src->base + w.off[2] * esize;
	hdm_kfor(p, j, k) {
		int64_t x = hdm_kload_index(idx->dtype, ip + (int64_t)j * idx->strides[dim] * isize);
		const uint8_t *e = xp + (int64_t)j * src->strides[dim] * esize;

		if (!hdm_kindex_ok(c, x, n, "an index out of range"))
			return;
		if ((uint64_t)x - v0 >= nv)
			continue;
		if (fl)
			acc->f[(uint64_t)x - v0] = hdm_kload_f(src->dtype, e) +
						   (put ? 0 : acc->f[(uint64_t)x - v0]);
		else
			acc->i[(uint64_t)x - v0] = (uint64_t)hdm_kload_i(src->dtype, e) +
						   (put ? 0 : acc->i[(uint64_t)x - v0]);
	}
	if (hdm_kstop(c))
		return;
	for (uint64_t j = 0; j < nv; j++) {
		uint8_t *e = sp + (int64_t)j * self->strides[dim] * esize;

		if (fl)
			hdm_kstore_f(self->dtype, e, acc->f[j]);
		else
			hdm_kstore_i(self->dtype, e, (int64_t)acc->i[j]);
	}
}

static void hdm_scatter_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_kpace p = hdm_kpace_start(c);
	union hdm_scatter_acc acc;
	uint64_t nb = hdm_scatter_blocks(c);

	if (!c->state->phase) {
		hdm_ix_scan(c, 1, c->t[0].shape[c->args[0]], begin, end);
		return;
	}
	for (uint64_t it = begin; it < end && !hdm_kpace(&p, hdm_scatter_block(c)); it++)
		hdm_scatter_item(c, it, nb, &acc, &p);
}

#define HDM_SCATTER_DEF(kname)                                                           \
	{                                                                                \
		.name = kname, .min_tensors = 3, .max_tensors = 3,                       \
		.outputs = hdm_kernel_writes_t0, .phases = HDM_IX_PHASES,                \
		.check = hdm_scatter_check, .work = hdm_scatter_work,                    \
		.item_work = hdm_scatter_item_work, .run = hdm_scatter_run,              \
	}

const struct hdm_kernel_def hdm_kernel_scatter_add = HDM_SCATTER_DEF("scatter_add");
const struct hdm_kernel_def hdm_kernel_scatter = HDM_SCATTER_DEF("scatter");

/* ---- topk: t values (out), indices (out), in ---- */

/*
 * A row keeps a heap of its k best so far (the worst of them at the root)
 * in its own indices row, then sorts it there by heapsort, best first.
 * Those indices are read back from an output, so each is checked again.
 */
struct hdm_topk_row {
	const struct hdm_kcall *c;
	const uint8_t *in;     /* the row of in */
	int64_t in_step;       /* bytes */
	uint8_t *ix;           /* the row of indices */
	int64_t ix_step;       /* bytes */
	uint32_t dtype, ix_dtype;
	uint64_t n;
	bool largest, fl;
};

/* Element a of the row against b: >0 greater, NaN above every number. */
static int hdm_topk_cmp(const struct hdm_topk_row *r, uint64_t a, uint64_t b)
{
	const uint8_t *pa = r->in + (int64_t)a * r->in_step, *pb = r->in + (int64_t)b * r->in_step;

	if (r->fl) {
		double x = hdm_kload_f(r->dtype, pa), y = hdm_kload_f(r->dtype, pb);

		if (isnan(x) || isnan(y))
			return isnan(x) - isnan(y);
		return (x > y) - (x < y);
	}
	int64_t x = hdm_kload_i(r->dtype, pa), y = hdm_kload_i(r->dtype, pb);

	return (x > y) - (x < y);
}

/* Whether element a ranks before b: larger (smaller), ties by the lower index. */
static bool hdm_topk_before(const struct hdm_topk_row *r, uint64_t a, uint64_t b)
{
	int s = hdm_topk_cmp(r, a, b);

	if (!r->largest)
		s = -s;
	return s ? s > 0 : a < b;
}

/* Heap slot j's index, checked: false (the launch failed) if it is out of the row. */
static bool hdm_topk_get(const struct hdm_topk_row *r, uint64_t j, uint64_t *x)
{
	int64_t v = hdm_kload_index(r->ix_dtype, r->ix + (int64_t)j * r->ix_step);

	if (!hdm_kindex_ok(r->c, v, r->n, "an index changed under the launch"))
		return false;
	*x = (uint64_t)v;
	return true;
}

static void hdm_topk_put(const struct hdm_topk_row *r, uint64_t j, uint64_t x)
{
	hdm_kstore_i(r->ix_dtype, r->ix + (int64_t)j * r->ix_step, (int64_t)x);
}

/*
 * Sifts index x down from slot j of a heap of m slots whose root is its
 * worst (no child ranks after its parent).  False if the launch failed.
 */
static bool hdm_topk_sift(const struct hdm_topk_row *r, uint64_t j, uint64_t m, uint64_t x)
{
	for (;;) {
		uint64_t ch = 2 * j + 1, a, b;

		if (ch >= m)
			break;
		if (!hdm_topk_get(r, ch, &a))
			return false;
		if (ch + 1 < m) {
			if (!hdm_topk_get(r, ch + 1, &b))
				return false;
			if (hdm_topk_before(r, a, b)) {
				ch++;
				a = b;
			}
		}
		if (!hdm_topk_before(r, x, a))
			break;
		hdm_topk_put(r, j, a);
		j = ch;
	}
	hdm_topk_put(r, j, x);
	return true;
}

/* Ranks a row: its indices row holds its k best, best first; false if the launch failed. */
static bool hdm_topk_rank(const struct hdm_topk_row *r, uint64_t k, struct hdm_kpace *p,
			  uint64_t cost)
{
	uint64_t x, root;

	if (!k)
		return true;
	for (uint64_t i = 0; i < r->n; i++) {
		if (hdm_kpace(p, cost))
			return false;
		if (i < k) {
			/* Sift up: a worse new element rises towards the root. */
			uint64_t j = i;

			while (j) {
				uint64_t parent = (j - 1) / 2;

				if (!hdm_topk_get(r, parent, &x))
					return false;
				if (!hdm_topk_before(r, x, i))
					break;
				hdm_topk_put(r, j, x);
				j = parent;
			}
			hdm_topk_put(r, j, i);
			continue;
		}
		if (!hdm_topk_get(r, 0, &root))
			return false;
		if (hdm_topk_before(r, i, root) && !hdm_topk_sift(r, 0, k, i))
			return false;
	}
	/* Heapsort: the worst left goes to the end of the shrinking heap. */
	for (uint64_t m = k; m > 1; m--) {
		if (hdm_kpace(p, cost) || !hdm_topk_get(r, 0, &root) || !hdm_topk_get(r, m - 1, &x))
			return false;
		hdm_topk_put(r, m - 1, root);
		if (!hdm_topk_sift(r, 0, m - 1, x))
			return false;
	}
	return true;
}

/* The bits of k: a heap of k has that many levels. */
static uint64_t hdm_topk_levels(uint64_t k)
{
	return k ? 64 - (uint64_t)__builtin_clzll(k) : 0;
}

static int hdm_topk_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *val = &c->t[0], *ix = &c->t[1], *in = &c->t[2];
	uint64_t shape[HPU_TENSOR_MAX_DIMS];
	uint32_t dim;

	if (c->num_tensors != 3 || !hdm_scatter_dtype(in->dtype) || val->dtype != in->dtype ||
	    !hdm_kview_is_index(ix) || !hdm_ix_dim(c->args[1], in, &dim) ||
	    c->args[0] < 0 || (uint64_t)c->args[0] > in->shape[dim] || (c->args[2] & ~1) ||
	    (c->args[3] & ~1) || hdm_kview_aliases(val, in) || hdm_kview_aliases(ix, in) ||
	    hdm_kview_aliases(val, ix))
		return -1;
	memcpy(shape, in->shape, sizeof(shape));
	shape[dim] = (uint64_t)c->args[0];
	if (!hdm_kview_has_shape(val, in->ndim, shape) || !hdm_kview_has_shape(ix, in->ndim, shape))
		return -1;
	if (!in->ndim && c->args[0] != 1)
		return -1; /* a scalar's k is 1: values are scalars too */
	items[0] = hdm_kview_rows(in, dim);
	return 0;
}

static uint64_t hdm_topk_item_work(const struct hdm_kcall *c)
{
	uint64_t k = (uint64_t)c->args[0], n = c->t[2].shape[c->args[1]];

	return hdm_kwork_rows(n + k, hdm_topk_levels(k) + 1);
}

static uint64_t hdm_topk_work(const struct hdm_kcall *c, uint64_t items)
{
	return hdm_kmul_sat(items, hdm_topk_item_work(c));
}

static uint32_t hdm_topk_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 3;
}

static void hdm_topk_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *val = &c->t[0], *ix = &c->t[1], *in = &c->t[2];
	uint32_t dim = (uint32_t)c->args[1];
	uint64_t k = (uint64_t)c->args[0], cost = hdm_topk_levels(k) + 1;
	unsigned int esize = hdm_dtype_size(in->dtype);
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t row = begin; row < end; row++) {
		struct hdm_krow ir = hdm_krow(in, dim, row), xr = hdm_krow(ix, dim, row);
		struct hdm_krow vr = hdm_krow(val, dim, row);
		struct hdm_topk_row r = {
			.c = c, .in = ir.p, .in_step = ir.step, .ix = xr.p, .ix_step = xr.step,
			.dtype = in->dtype, .ix_dtype = ix->dtype, .n = ir.n,
			.largest = c->args[2], .fl = hdm_dtype_is_float(in->dtype),
		};
		uint64_t x;

		if (!hdm_topk_rank(&r, k, &p, cost))
			return;
		for (uint64_t j = 0; j < k; j++) {
			if (!hdm_topk_get(&r, j, &x))
				return;
			memcpy(vr.p + (int64_t)j * vr.step, r.in + (int64_t)x * r.in_step, esize);
		}
	}
}

const struct hdm_kernel_def hdm_kernel_topk = {
	.name = "topk",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_topk_outputs,
	.check = hdm_topk_check,
	.work = hdm_topk_work,
	.item_work = hdm_topk_item_work,
	.run = hdm_topk_run,
};
