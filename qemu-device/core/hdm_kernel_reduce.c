/* SPDX-License-Identifier: MIT */
/*
 * REDUCE (hpu_kernels.h): SUM, MEAN, MAX, MIN, ARGMAX and ARGMIN of in over
 * the dims of a bit mask, into out of in's shape with those dims 1.
 *
 * A work item is one output element's walk over the reduced sub-tensor
 * under it, or a chunk of HPU_REDUCE_CHUNK elements of a longer walk: one
 * output may reduce billions of elements (a broadcast dim), and an item is
 * what the engine cannot pause.  A chunked walk leaves each chunk's partial
 * result in the launch's scratch, and finish() combines them in order, so
 * every output sums its elements in the same order however the launch is
 * split.  Walks keep a pace (hdm_kpace()) span by span.
 * MIN and ARGMIN are MAX and ARGMAX of an order-reversed key (-v, or ~v
 * for integers, which cannot overflow), so one comparison serves all four.
 */
#include "hdm_kernel.h"

/* A launch, as every output element's walk needs it. */
struct hdm_kreduce {
	int64_t op;
	uint32_t in_dtype;
	bool int_sum; /* SUM of integral into integral: int64, wrapping, exact */
	bool int_cmp; /* integral in: compared as int64, exact past 2^53 */
	bool reverse; /* MIN, ARGMIN */
	struct hdm_kview sub; /* in's reduced dims, outermost first: the elements under one output */
	uint64_t count;
	uint64_t chunks; /* items per output: 1, or count in HPU_REDUCE_CHUNK chunks */
};

/* What a walk ends with: the sum, or the best key and where it was. */
struct hdm_kacc {
	double sum, best;
	int64_t isum, ibest;
	uint64_t at;
};

static bool hdm_reduce_is_cmp(int64_t op)
{
	return op >= HPU_REDUCE_MAX;
}

static bool hdm_reduce_is_arg(int64_t op)
{
	return op >= HPU_REDUCE_ARGMAX;
}

/* Element k (row-major over the reduced dims) of the sub-tensor at p joins acc; first: acc's first. */
static void hdm_kacc_add(const struct hdm_kreduce *r, struct hdm_kacc *acc, const uint8_t *p,
			 uint64_t k, bool first)
{
	if (!hdm_reduce_is_cmp(r->op)) {
		if (r->int_sum)
			acc->isum = (int64_t)((uint64_t)acc->isum + (uint64_t)hdm_kload_i(r->in_dtype, p));
		else
			acc->sum += hdm_kload_f(r->in_dtype, p);
	} else if (r->int_cmp) {
		int64_t v = hdm_kload_i(r->in_dtype, p), key = r->reverse ? ~v : v;

		if (first || key > acc->ibest) {
			acc->ibest = key;
			acc->at = k;
		}
	} else {
		double v = hdm_kload_f(r->in_dtype, p), key = r->reverse ? -v : v;

		/* The first NaN wins and stays; otherwise strictly greater: ties keep the first. */
		if (first || (!isnan(acc->best) && (key > acc->best || isnan(key)))) {
			acc->best = key;
			acc->at = k;
		}
	}
}

/*
 * Chunk ch of the walk over the sub-tensor whose first element is at p,
 * into *acc; false if the launch stopped meanwhile.
 */
static bool hdm_reduce_walk(const struct hdm_kreduce *r, uint8_t *p, uint64_t ch,
			    struct hdm_kacc *acc, struct hdm_kpace *pace)
{
	uint64_t i = ch * HPU_REDUCE_CHUNK, end = r->chunks > 1 ? i + HPU_REDUCE_CHUNK : r->count;
	struct hdm_kview sub = r->sub;
	struct hdm_kcur k;
	int64_t step;

	if (end > r->count)
		end = r->count;
	sub.base = p;
	hdm_kcur_init(&k, &sub, i);
	step = k.step[0];
	/* Span by span of the walk, each a pointer stepping along, none longer than a poll's. */
	while (i < end) {
		uint64_t left = end - i;
		uint8_t *span;
		uint64_t n = hdm_kcur_span(&k, left < HDM_KPOLL ? left : HDM_KPOLL, &span);

		if (hdm_kpace(pace, n))
			return false;
		for (uint64_t j = 0; j < n; j++, i++)
			hdm_kacc_add(r, acc, span + (int64_t)j * step, i, i == ch * HPU_REDUCE_CHUNK);
	}
	return true;
}

/* The next chunk's partial b joins a, the partial of the chunks before it: as one walk would. */
static void hdm_kacc_join(const struct hdm_kreduce *r, struct hdm_kacc *a, const struct hdm_kacc *b)
{
	if (!hdm_reduce_is_cmp(r->op)) {
		a->sum += b->sum;
		a->isum = (int64_t)((uint64_t)a->isum + (uint64_t)b->isum);
	} else if (r->int_cmp ? b->ibest > a->ibest :
		   !isnan(a->best) && (b->best > a->best || isnan(b->best))) {
		*a = *b;
	}
}

/* The whole walk's acc into the output element at o. */
static void hdm_reduce_store(const struct hdm_kreduce *r, const struct hdm_kacc *acc,
			     uint32_t out_dtype, uint8_t *o)
{
	switch (r->op) {
	case HPU_REDUCE_SUM:
		if (r->int_sum)
			hdm_kstore_i(out_dtype, o, acc->isum);
		else
			hdm_kstore_f(out_dtype, o, acc->sum);
		break;
	case HPU_REDUCE_MEAN:
		hdm_kstore_f(out_dtype, o, acc->sum / (double)r->count); /* 0 / 0: NaN when empty */
		break;
	case HPU_REDUCE_MAX:
	case HPU_REDUCE_MIN:
		if (r->int_cmp)
			hdm_kstore_i(out_dtype, o, r->reverse ? ~acc->ibest : acc->ibest);
		else
			hdm_kstore_f(out_dtype, o, r->reverse ? -acc->best : acc->best);
		break;
	default:
		hdm_kstore_i(out_dtype, o, (int64_t)acc->at);
		break;
	}
}

static void hdm_reduce_init(const struct hdm_kcall *c, struct hdm_kreduce *r)
{
	const struct hdm_kview *in = &c->t[1];
	bool int_in = !hdm_dtype_is_float(in->dtype);

	memset(r, 0, sizeof(*r));
	r->op = c->args[0];
	r->in_dtype = in->dtype;
	r->int_sum = r->op == HPU_REDUCE_SUM && int_in && !hdm_dtype_is_float(c->t[0].dtype);
	r->int_cmp = int_in;
	r->reverse = r->op == HPU_REDUCE_MIN || r->op == HPU_REDUCE_ARGMIN;
	r->sub.dtype = in->dtype;
	for (uint32_t d = 0; d < HPU_TENSOR_MAX_DIMS; d++)
		r->sub.shape[d] = 1;
	for (uint32_t d = 0; d < in->ndim; d++) {
		if (!(c->args[1] >> d & 1))
			continue;
		r->sub.shape[r->sub.ndim] = in->shape[d];
		r->sub.strides[r->sub.ndim++] = in->strides[d];
	}
	r->count = hdm_kview_numel(&r->sub);
	r->chunks = r->count > HPU_REDUCE_CHUNK ?
		    (r->count + HPU_REDUCE_CHUNK - 1) / HPU_REDUCE_CHUNK : 1;
}

static void hdm_reduce_run(const struct hdm_kcall *c, uint64_t begin, uint64_t end)
{
	const struct hdm_kview *out = &c->t[0];
	/*
	 * in with out's shape: out's index is in's with the reduced dims at 0,
	 * where its sub-tensor starts.
	 */
	struct hdm_kview starts = c->t[1];
	struct hdm_kacc *partial = c->state->scratch;
	struct hdm_kpace pace = hdm_kpace_start(c);
	struct hdm_kcur o, s;
	struct hdm_kreduce r;

	hdm_reduce_init(c, &r);
	memcpy(starts.shape, out->shape, sizeof(starts.shape));
	hdm_kcur_init(&o, out, begin / r.chunks);
	hdm_kcur_init(&s, &starts, begin / r.chunks);
	for (uint64_t i = begin; i < end; i++) {
		struct hdm_kacc acc = { 0 };

		if (i > begin && i % r.chunks == 0) {
			hdm_kcur_next(&o);
			hdm_kcur_next(&s);
		}
		if (!hdm_reduce_walk(&r, hdm_kcur_ptr(&s), i % r.chunks, &acc, &pace))
			return;
		if (r.chunks > 1)
			partial[i] = acc;
		else
			hdm_reduce_store(&r, &acc, out->dtype, hdm_kcur_ptr(&o));
	}
}

/* A chunked walk's partials, in order, into each output. */
static void hdm_reduce_finish(const struct hdm_kcall *c)
{
	const struct hdm_kacc *partial = c->state->scratch;
	const struct hdm_kview *out = &c->t[0];
	uint64_t n = hdm_kview_numel(out);
	struct hdm_kreduce r;
	struct hdm_kcur o;

	hdm_reduce_init(c, &r);
	if (r.chunks == 1)
		return;
	hdm_kcur_init(&o, out, 0);
	for (uint64_t i = 0; i < n; i++, hdm_kcur_next(&o)) {
		struct hdm_kacc acc = partial[i * r.chunks];

		for (uint64_t ch = 1; ch < r.chunks; ch++)
			hdm_kacc_join(&r, &acc, &partial[i * r.chunks + ch]);
		hdm_reduce_store(&r, &acc, out->dtype, hdm_kcur_ptr(&o));
	}
}

/* Every output walks its reduced elements, a chunk per item. */
static uint64_t hdm_reduce_work(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_kreduce r;

	hdm_reduce_init(c, &r);
	return hdm_kmul_sat(items / r.chunks, r.count ? r.count : 1);
}

/* A chunked walk's partials: one per item. */
static uint64_t hdm_reduce_scratch(const struct hdm_kcall *c, uint64_t items)
{
	struct hdm_kreduce r;

	hdm_reduce_init(c, &r);
	return r.chunks > 1 ? hdm_kmul_sat(items, sizeof(struct hdm_kacc)) : 0;
}

static int hdm_reduce_check(const struct hdm_kcall *c, uint64_t *items)
{
	const struct hdm_kview *out = &c->t[0], *in = &c->t[1];
	int64_t op = c->args[0], mask = c->args[1];
	struct hdm_kreduce r;

	if (c->num_tensors != 2 || op < HPU_REDUCE_SUM || op > HPU_REDUCE_ARGMIN)
		return -1;
	for (uint32_t a = 2; a < HPU_KERNEL_MAX_ARGS; a++)
		if (c->args[a])
			return -1;
	if (mask < 0 || mask >> in->ndim || out->ndim != in->ndim)
		return -1;
	for (uint32_t d = 0; d < in->ndim; d++)
		if (out->shape[d] != (mask >> d & 1 ? 1 : in->shape[d]))
			return -1;
	hdm_reduce_init(c, &r);
	*items = hdm_kmul_sat(hdm_kview_numel(out), r.chunks);
	if (op == HPU_REDUCE_MEAN && !hdm_dtype_is_float(out->dtype))
		return -1;
	if (hdm_reduce_is_arg(op)) {
		if (r.sub.ndim != 1 || (out->dtype != HPU_DTYPE_I64 && out->dtype != HPU_DTYPE_I32))
			return -1;
		if (out->dtype == HPU_DTYPE_I32 && r.count > (uint64_t)INT32_MAX + 1)
			return -1;
	}
	/* The extremum of nothing has no value; a sum of nothing is 0, a mean NaN. */
	if (hdm_reduce_is_cmp(op) && r.count == 0 && *items)
		return -1;
	return 0;
}

static uint32_t hdm_reduce_outputs(const struct hdm_kcall *c)
{
	(void)c;
	return 1;
}

const struct hdm_kernel_def hdm_kernel_reduce = {
	.name = "reduce",
	.min_tensors = 2,
	.max_tensors = 2,
	.outputs = hdm_reduce_outputs,
	.check = hdm_reduce_check,
	.work = hdm_reduce_work,
	.scratch = hdm_reduce_scratch,
	.run = hdm_reduce_run,
	.finish = hdm_reduce_finish,
};
