/* SPDX-License-Identifier: MIT */
/*
 * Tensor-engine kernels: 2-d max and average pooling (windowed, adaptive)
 * and their backwards, over the last two dims of a tensor whose leading
 * dims are planes.  Forward items are out's elements, each reducing its
 * window; backward items are grad_in's elements, each gathering from the
 * windows that hold it (a gather: no two parts write one element, and
 * each sum runs in double in window order, whatever the split).  The max
 * pool backward's indices are checked by a first phase (each a position
 * of its window) before anything is written; the gather only compares
 * them with its own position, so one that changes meanwhile can misplace
 * a gradient but never an access.
 */
#include "hdm_kernel_nn.h"
#include "hpu_pool.h"

struct hdm_pool {
	const struct hdm_kview *in, *out; /* [..., H, W] and [..., Ho, Wo] (grads in a backward) */
	uint32_t lead;                    /* the plane dims */
	struct hpu_pool_axis ax[2];       /* H, W */
	bool include_pad;
	int64_t divisor; /* 0: the window's own count */
};

/*
 * The pooling of launch c: in (the H, W side; grad_in for a backward) and
 * out (grad_out); max pooling with a6 and a7 as dilations, average pooling
 * with a6 the flags and a7 the divisor.  Values are only read here:
 * check() judges them.
 */
static struct hdm_pool hdm_pool_get(const struct hdm_kcall *c)
{
	bool max = c->kernel == HPU_KERNEL_MAX_POOL || c->kernel == HPU_KERNEL_MAX_POOL_BWD;
	bool fwd = c->kernel == HPU_KERNEL_MAX_POOL || c->kernel == HPU_KERNEL_AVG_POOL;
	/* t: out, indices, in; out, in; grad_in, grad_out (, indices). */
	unsigned int in = fwd ? (max ? 2 : 1) : 0, out = fwd ? 0 : 1;
	struct hdm_pool pl = { .in = &c->t[in], .out = &c->t[out] };
	bool adaptive = !max && (c->args[6] & 2);

	pl.lead = pl.in->ndim >= 2 ? pl.in->ndim - 2 : 0;
	for (unsigned int a = 0; a < 2; a++) {
		pl.ax[a] = (struct hpu_pool_axis){
			.n = (int64_t)pl.in->shape[pl.lead + a], .no = (int64_t)pl.out->shape[pl.lead + a],
			.k = c->args[a], .s = c->args[2 + a], .p = c->args[4 + a],
			.d = max ? c->args[6 + a] : 1, .adaptive = adaptive,
		};
	}
	pl.include_pad = !max && (c->args[6] & 1);
	pl.divisor = max ? 0 : c->args[7];
	return pl;
}

/* in a float [..., H, W], out a float of its leading dims, not in; both axes valid. */
static bool hdm_pool_ok(const struct hdm_pool *pl)
{
	if (pl->in->ndim < 3 || pl->out->ndim != pl->in->ndim ||
	    !hdm_dtype_is_float(pl->in->dtype) || !hdm_dtype_is_float(pl->out->dtype) ||
	    hdm_kview_aliases(pl->in, pl->out))
		return false;
	for (uint32_t d = 0; d < pl->lead; d++)
		if (pl->out->shape[d] != pl->in->shape[d])
			return false;
	return hpu_pool_axis_ok(&pl->ax[0]) && hpu_pool_axis_ok(&pl->ax[1]);
}

/*
 * Element i of v [..., A, B] (row-major) as its plane's index in each
 * leading dim (q[], which every operand of the pooling shares) and (y, x).
 */
static void hdm_pool_split(const struct hdm_kview *v, uint32_t lead, uint64_t i, uint64_t *q,
			   int64_t *y, int64_t *x)
{
	uint64_t b = v->shape[lead + 1], a = v->shape[lead];

	*x = (int64_t)(i % b);
	i /= b;
	*y = (int64_t)(i % a);
	i /= a;
	for (uint32_t d = lead; d-- > 0;) {
		q[d] = i % v->shape[d];
		i /= v->shape[d];
	}
}

/* Plane q of a view of the pooling's rank: its (0, 0) and its steps in bytes along H and W. */
struct hdm_pool_plane {
	uint8_t *base;
	int64_t sy, sx;
	uint32_t dtype;
};

static struct hdm_pool_plane hdm_pool_plane(const struct hdm_kview *v, uint32_t lead,
					    const uint64_t *q)
{
	int64_t off = 0, size = (int64_t)hdm_dtype_size(v->dtype);

	for (uint32_t d = 0; d < lead; d++)
		off += (int64_t)q[d] * v->strides[d];
	return (struct hdm_pool_plane){ v->base + off * size, v->strides[lead] * size,
					v->strides[lead + 1] * size, v->dtype };
}

/* Address of element (y, x) of a plane. */
static uint8_t *hdm_pool_at(const struct hdm_pool_plane *pp, int64_t y, int64_t x)
{
	return pp->base + y * pp->sy + x * pp->sx;
}

/* ---- max pooling ---- */

static uint32_t hdm_maxpool_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 3;
}

static uint64_t hdm_maxpool_window(const struct hdm_pool *pl)
{
	return hdm_kmul_sat(hpu_pool_max_span(&pl->ax[0]), hpu_pool_max_span(&pl->ax[1]));
}

static int hdm_maxpool_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_pool pl = hdm_pool_get(c);

	if (c->num_tensors != 3 || !hdm_pool_ok(&pl) ||
	    !hdm_kview_is_index(&c->t[1]) || !hdm_kview_same_shape(&c->t[1], pl.out) ||
	    hdm_kview_aliases(&c->t[1], pl.in) || hdm_kview_aliases(&c->t[1], pl.out) ||
	    hdm_maxpool_window(&pl) > HPU_KERNEL_MAX_ITEM_WORK)
		return -1;
	*items = hdm_kview_numel(pl.out);
	return 0;
}

/* A forward's items each reduce a window. */
static uint64_t hdm_pool_fwd_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_pool pl = hdm_pool_get(c);

	return hdm_kmul_sat(items, hdm_maxpool_window(&pl));
}

static uint64_t hdm_pool_fwd_item_work(const struct hdm_kcall *c)
{
	struct hdm_pool pl = hdm_pool_get(c);

	return hdm_maxpool_window(&pl);
}

/* As torch: the first maximum, but any NaN over a number and a later NaN over an earlier. */
static void hdm_maxpool_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_pool pl = hdm_pool_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t i = begin; i < end && !hdm_kpace(&p, hdm_maxpool_window(&pl)); i++) {
		int64_t ylo, yhi, xlo, xhi, pad, best_at = -1;
		double best = -INFINITY;
		struct hdm_pool_plane pp, op, ip;
		uint64_t q[HPU_TENSOR_MAX_DIMS];
		int64_t oy, ox;

		hdm_pool_split(pl.out, pl.lead, i, q, &oy, &ox);
		pp = hdm_pool_plane(pl.in, pl.lead, q);
		op = hdm_pool_plane(pl.out, pl.lead, q);
		ip = hdm_pool_plane(&c->t[1], pl.lead, q);
		hpu_pool_window(&pl.ax[0], oy, &ylo, &yhi, &pad);
		hpu_pool_window(&pl.ax[1], ox, &xlo, &xhi, &pad);
		for (int64_t y = ylo; y < yhi; y += pl.ax[0].d) {
			for (int64_t x = xlo; x < xhi; x += pl.ax[1].d) {
				double v = hdm_kload_f(pp.dtype, hdm_pool_at(&pp, y, x));

				if (v > best || isnan(v) || best_at < 0) {
					best = v;
					best_at = y * pl.ax[1].n + x;
				}
			}
		}
		hdm_kstore_f(op.dtype, hdm_pool_at(&op, oy, ox), best);
		hdm_kstore_i(ip.dtype, hdm_pool_at(&ip, oy, ox), best_at);
	}
}

const struct hdm_kernel_def hdm_kernel_max_pool = {
	.name = "max_pool",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_maxpool_outputs,
	.check = hdm_maxpool_check,
	.work = hdm_pool_fwd_work,
	.item_work = hdm_pool_fwd_item_work,
	.run = hdm_maxpool_run,
};

/* ---- backwards: gathers ---- */

/* The most grad_out elements one grad_in element gathers from. */
static uint64_t hdm_pool_bwd_holders(const struct hdm_pool *pl)
{
	return hdm_kmul_sat(hpu_pool_max_holders(&pl->ax[0]), hpu_pool_max_holders(&pl->ax[1]));
}

/* A backward's pooling valid, and its gathers within an item's bound. */
static bool hdm_pool_bwd_ok(const struct hdm_pool *pl)
{
	return hdm_pool_ok(pl) &&
	       hdm_pool_bwd_holders(pl) <= HPU_KERNEL_MAX_ITEM_WORK;
}

/*
 * grad_in's elements [begin, end) of phase 1 (max) or the only phase
 * (average): each the sum over the windows that hold it, in order, of
 * grad_out (divided by the window's divisor), or for max pooling of the
 * grad_out elements whose index names it.
 */
static void hdm_pool_gather(const struct hdm_kcall *c, const struct hdm_pool *pl, bool max,
			    uint64_t begin, uint64_t end)
{
	const struct hdm_kview *gi = pl->in, *go = pl->out, *idx = &c->t[2];
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t i = begin; i < end && !hdm_kpace(&p, hdm_pool_bwd_holders(pl)); i++) {
		int64_t y, x, oy0, oy1, ox0, ox1, me;
		struct hdm_pool_plane gp, ip = { 0 }, op;
		double sum = 0;
		uint64_t q[HPU_TENSOR_MAX_DIMS];

		hdm_pool_split(gi, pl->lead, i, q, &y, &x);
		gp = hdm_pool_plane(go, pl->lead, q);
		op = hdm_pool_plane(gi, pl->lead, q);
		if (max)
			ip = hdm_pool_plane(idx, pl->lead, q);
		me = y * pl->ax[1].n + x;
		hpu_pool_holders(&pl->ax[0], y, &oy0, &oy1);
		hpu_pool_holders(&pl->ax[1], x, &ox0, &ox1);
		for (int64_t oy = oy0; oy <= oy1; oy++) {
			for (int64_t ox = ox0; ox <= ox1; ox++) {
				double g = hdm_kload_f(gp.dtype, hdm_pool_at(&gp, oy, ox));

				if (max) {
					if (hdm_kload_index(ip.dtype, hdm_pool_at(&ip, oy, ox)) == me)
						sum += g;
					continue;
				}
				/* Average windows are runs: every holder of the range holds it. */
				sum += g / hpu_pool_divisor(pl->ax, oy, ox, pl->include_pad,
							    pl->divisor);
			}
		}
		hdm_kstore_f(op.dtype, hdm_pool_at(&op, y, x), sum);
	}
}

/* Phase 0 checks the indices in chunks of HDM_KSCAN_CHUNK; phase 1 gathers grad_in's elements. */
static int hdm_maxpool_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_pool pl = hdm_pool_get(c);

	if (c->num_tensors != 3 || !hdm_pool_bwd_ok(&pl) ||
	    !hdm_kview_is_index(&c->t[2]) || !hdm_kview_same_shape(&c->t[2], pl.out) ||
	    hdm_kview_aliases(pl.in, &c->t[2]))
		return -1;
	items[0] = hdm_kscan_items(hdm_kview_numel(pl.out));
	items[1] = hdm_kview_numel(pl.in);
	return 0;
}

/* Whether c's phase is max pooling's scan of the indices, before its gather. */
static bool hdm_pool_scanning(const struct hdm_kcall *c)
{
	return c->kernel == HPU_KERNEL_MAX_POOL_BWD && !c->state->phase;
}

/* A gather's items, or the scan's. */
static uint64_t hdm_pool_bwd_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_pool pl = hdm_pool_get(c);

	if (hdm_pool_scanning(c))
		return hdm_kview_numel(pl.out);
	return hdm_kmul_sat(items, hdm_pool_bwd_holders(&pl));
}

static uint64_t hdm_pool_bwd_item_work(const struct hdm_kcall *c)
{
	struct hdm_pool pl = hdm_pool_get(c);

	if (hdm_pool_scanning(c))
		return hdm_kscan_item_work(hdm_kview_numel(pl.out));
	return hdm_pool_bwd_holders(&pl);
}

/* Phase 0's chunk k: every index a position of its own window. */
static void hdm_maxpool_scan(const struct hdm_kcall *c, const struct hdm_pool *pl, uint64_t k,
			     struct hdm_kpace *p)
{
	uint64_t first = k * HDM_KSCAN_CHUNK, n = hdm_kview_numel(pl->out) - first;

	hdm_kfor(p, j, n < HDM_KSCAN_CHUNK ? n : HDM_KSCAN_CHUNK) {
		struct hdm_pool_plane ip;
		int64_t oy, ox, at;
		uint64_t q[HPU_TENSOR_MAX_DIMS];

		hdm_pool_split(pl->out, pl->lead, first + j, q, &oy, &ox);
		ip = hdm_pool_plane(&c->t[2], pl->lead, q);
		at = hdm_kload_index(ip.dtype, hdm_pool_at(&ip, oy, ox));
		if (at < 0 || !hpu_pool_holds(&pl->ax[0], oy, at / pl->ax[1].n) ||
		    !hpu_pool_holds(&pl->ax[1], ox, at % pl->ax[1].n)) {
			hdm_kfail(c, "a max-pool index outside its window");
			return;
		}
	}
}

static void hdm_maxpool_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_pool pl = hdm_pool_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	if (c->state->phase) {
		hdm_pool_gather(c, &pl, true, begin, end);
		return;
	}
	for (uint64_t k = begin; k < end && !hdm_kstop(c); k++)
		hdm_maxpool_scan(c, &pl, k, &p);
}

const struct hdm_kernel_def hdm_kernel_max_pool_bwd = {
	.name = "max_pool_bwd",
	.min_tensors = 3,
	.max_tensors = 3,
	.outputs = hdm_kernel_writes_t0,
	.phases = 2,
	.check = hdm_maxpool_bwd_check,
	.work = hdm_pool_bwd_work,
	.item_work = hdm_pool_bwd_item_work,
	.run = hdm_maxpool_bwd_run,
};

/* ---- average pooling ---- */

/* a6 two flag bits, a7 >= 0. */
static bool hdm_avgpool_args_ok(const struct hdm_kcall *c)
{
	return !(c->args[6] & ~3) && c->args[7] >= 0 && c->args[7] <= HPU_POOL_MAX_ARG;
}

static int hdm_avgpool_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_pool pl = hdm_pool_get(c);

	if (c->num_tensors != 2 || !hdm_avgpool_args_ok(c) ||
	    !hdm_pool_ok(&pl) ||
	    hdm_maxpool_window(&pl) > HPU_KERNEL_MAX_ITEM_WORK)
		return -1;
	*items = hdm_kview_numel(pl.out);
	return 0;
}

static void hdm_avgpool_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_pool pl = hdm_pool_get(c);
	struct hdm_kpace p = hdm_kpace_start(c);

	for (uint64_t i = begin; i < end && !hdm_kpace(&p, hdm_maxpool_window(&pl)); i++) {
		int64_t ylo, yhi, xlo, xhi, pad, oy, ox;
		struct hdm_pool_plane pp, op;
		double sum = 0;
		uint64_t q[HPU_TENSOR_MAX_DIMS];

		hdm_pool_split(pl.out, pl.lead, i, q, &oy, &ox);
		pp = hdm_pool_plane(pl.in, pl.lead, q);
		op = hdm_pool_plane(pl.out, pl.lead, q);
		hpu_pool_window(&pl.ax[0], oy, &ylo, &yhi, &pad);
		hpu_pool_window(&pl.ax[1], ox, &xlo, &xhi, &pad);
		for (int64_t y = ylo; y < yhi; y++)
			for (int64_t x = xlo; x < xhi; x++)
				sum += hdm_kload_f(pp.dtype, hdm_pool_at(&pp, y, x));
		hdm_kstore_f(op.dtype, hdm_pool_at(&op, oy, ox),
			     sum / hpu_pool_divisor(pl.ax, oy, ox, pl.include_pad, pl.divisor));
	}
}

const struct hdm_kernel_def hdm_kernel_avg_pool = {
	.name = "avg_pool",
	.min_tensors = 2,
	.max_tensors = 2,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_avgpool_check,
	.work = hdm_pool_fwd_work,
	.item_work = hdm_pool_fwd_item_work,
	.run = hdm_avgpool_run,
};

static int hdm_avgpool_bwd_check(const struct hdm_kcall *c, uint64_t *items)
{
	struct hdm_pool pl = hdm_pool_get(c);

	if (c->num_tensors != 2 || !hdm_avgpool_args_ok(c) || !hdm_pool_bwd_ok(&pl))
		return -1;
	*items = hdm_kview_numel(pl.in);
	return 0;
}

static void hdm_avgpool_bwd_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	struct hdm_pool pl = hdm_pool_get(c);

	hdm_pool_gather(c, &pl, false, begin, end);
}

const struct hdm_kernel_def hdm_kernel_avg_pool_bwd = {
	.name = "avg_pool_bwd",
	.min_tensors = 2,
	.max_tensors = 2,
	.outputs = hdm_kernel_writes_t0,
	.check = hdm_avgpool_bwd_check,
	.work = hdm_pool_bwd_work,
	.item_work = hdm_pool_bwd_item_work,
	.run = hdm_avgpool_bwd_run,
};
