/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor-engine kernels: the contract between the TPC engine (which
 * reads a launch's parameter block, checks and maps its tensors, and splits
 * the work across the TPCs) and the kernel library (pure computation on
 * host memory, one file per family).  The ABI is in hpu_kernels.h.
 *
 * The engine hands a kernel every tensor as a host view: base points at
 * element (0, ..., 0) and every element the descriptor can reach is host
 * memory (HBM itself, or a staging copy the engine writes back for the
 * kernel's outputs).  A kernel never sees device addresses.
 *
 * Tensor data is untrusted where it is used, not only where check() read
 * it: HBM is computed on in place, and other engines or the host may write
 * it meanwhile.  A value read from a tensor that becomes an address is
 * read once and bounds-checked at its use; out of range, the part fails
 * the launch (hdm_kfail()).  Every tensor has at most
 * HPU_KERNEL_MAX_ELEMENTS elements (the engine checked), so no product of
 * dims overflows; an item whose own work can be long polls hdm_kpace().
 *
 * Speed: elementwise kernels walk their operands with hdm_kwalk(), which
 * runs a span where every operand is packed and of the kernel's common dtypes
 * in a copy of the loop with those steps and dtypes as constants.  The kernel
 * files are a library of their own built at -O3 without errno
 * (qemu-device/qemu/meson.build), where that copy becomes vector code, and
 * the optimizers' run() is also built for AVX2 (HDM_KERNEL_AVX2).  Every copy
 * computes the same bits.
 */
#ifndef HDM_KERNEL_H
#define HDM_KERNEL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hpu_kernels.h"

struct hdm_kview {
	uint8_t *base;
	uint32_t dtype; /* enum hpu_dtype, known to the engine */
	uint32_t ndim;
	uint64_t shape[HPU_TENSOR_MAX_DIMS];   /* dims >= ndim are 1 */
	int64_t strides[HPU_TENSOR_MAX_DIMS]; /* elements; dims >= ndim are 0 */
};

/* What a launch's check() and parts share with the engine that runs them. */
struct hdm_kstate {
	/* Whether the launch was cancelled (a queue reset): its parts stop; NULL: never. */
	bool (*cancelled)(const void *job);
	const void *job;
	/* Why a part failed the launch, or NULL (__atomic): the engine then refuses it. */
	const char *fault;
	/*
	 * hdm_kernel_def.scratch bytes, zero when the launch starts, that its
	 * items and finish() share; the same across the launch's yields.
	 */
	void *scratch;
	/* The phase work() and run() are called for (hdm_kernel_def.phases). */
	uint32_t phase;
};

/* One launch, decoded to host order. */
struct hdm_kcall {
	uint32_t kernel;
	uint32_t num_tensors;
	int64_t args[HPU_KERNEL_MAX_ARGS];
	double scalars[HPU_KERNEL_MAX_SCALARS];
	struct hdm_kview t[HPU_KERNEL_MAX_TENSORS];
	struct hdm_kstate *state; /* never NULL */
};

struct hdm_kernel_def {
	const char *name;
	uint8_t min_tensors, max_tensors;
	/*
	 * Which tensors the kernel writes (bit i: t[i]), given the call: the
	 * engine stages and writes back only these.
	 */
	uint32_t (*outputs)(const struct hdm_kcall *c);
	/*
	 * The launch runs in this many phases (0 means 1), one after the
	 * other: every item of a phase ends before the next phase's first
	 * starts, so a phase may use what the one before left in the scratch
	 * (a norm before the scaling by it), and a first phase that only
	 * reads (index checks) fails the launch before anything is written.
	 */
	uint8_t phases;
	/*
	 * Check what the ABI asks of the operands' descriptors (dtypes,
	 * shapes, args: no pass over tensor data, which is a phase's work)
	 * and say how many independent work items each phase has
	 * (items[phase], zeroed).  Nonzero: the launch fails, nothing written.
	 */
	int (*check)(const struct hdm_kcall *c, uint64_t *items);
	/*
	 * After a successful check(): about how many elements the items of
	 * state->phase visit in all (saturating); NULL, or fewer than the
	 * items: one per item.  The engine bounds the sum
	 * (HPU_KERNEL_MAX_WORK) and sizes parts by it.
	 */
	uint64_t (*work)(const struct hdm_kcall *c, uint64_t items);
	/*
	 * Optional: the most elements one item of state->phase visits; NULL:
	 * work / items, rounded up (items of one size).  The engine refuses a
	 * launch past HPU_KERNEL_MAX_ITEM_WORK: an item is never cut short by a
	 * yield, so this bounds how long another queue waits for the engine.
	 */
	uint64_t (*item_work)(const struct hdm_kcall *c);
	/*
	 * Optional, after a successful check(): bytes of scratch the launch
	 * needs (hdm_kstate.scratch), at most HDM_KERNEL_SCRATCH_MAX.
	 */
	uint64_t (*scratch)(const struct hdm_kcall *c, uint64_t items);
	/* Do items [begin, end) of state->phase; parts on disjoint ranges run concurrently. */
	void (*run)(const struct hdm_kcall *c, uint64_t begin, uint64_t end);
	/*
	 * Optional, once after every part of state->phase, before the next
	 * phase's first (joining partials, advancing an RNG offset).
	 */
	void (*finish)(const struct hdm_kcall *c);
};

/*
 * The most elements one of a phase's items items visits, work in all: the
 * def's item_work(), else work spread evenly, rounded up.
 */
static inline uint64_t hdm_kernel_item_work(const struct hdm_kernel_def *def,
					    const struct hdm_kcall *c, uint64_t items,
					    uint64_t work)
{
	if (def->item_work)
		return def->item_work(c);
	return items ? work / items + !!(work % items) : 0;
}

/* The most scratch one launch has: a REDUCE's partials of all its chunks. */
#define HDM_KERNEL_SCRATCH_MAX (8u << 20)

/* The most phases a kernel has. */
#define HDM_KERNEL_MAX_PHASES 2u

/* NULL for an unknown id. */
const struct hdm_kernel_def *hdm_kernel_lookup(uint32_t id);

/*
 * The library, by family (hdm_kernel_eltwise.c, hdm_kernel_reduce.c, hdm_kernel_nn.c,
 * hdm_kernel_optim.c, hdm_kernel_bnorm.c, hdm_kernel_pool.c).
 */
extern const struct hdm_kernel_def hdm_kernel_unary, hdm_kernel_binary, hdm_kernel_where, hdm_kernel_fill;
extern const struct hdm_kernel_def hdm_kernel_reduce;
extern const struct hdm_kernel_def hdm_kernel_softmax, hdm_kernel_softmax_bwd;
extern const struct hdm_kernel_def hdm_kernel_nll_loss, hdm_kernel_nll_loss_bwd;
extern const struct hdm_kernel_def hdm_kernel_cross_entropy, hdm_kernel_cross_entropy_bwd;
extern const struct hdm_kernel_def hdm_kernel_dropout, hdm_kernel_dropout_bwd;
extern const struct hdm_kernel_def hdm_kernel_relu_bwd, hdm_kernel_gelu_bwd;
extern const struct hdm_kernel_def hdm_kernel_layer_norm, hdm_kernel_layer_norm_bwd;
extern const struct hdm_kernel_def hdm_kernel_embedding, hdm_kernel_embedding_bwd;
extern const struct hdm_kernel_def hdm_kernel_sgd, hdm_kernel_adadelta, hdm_kernel_adamw;
extern const struct hdm_kernel_def hdm_kernel_clip_grad_norm;
/* hdm_kernel_conv.c */
extern const struct hdm_kernel_def hdm_kernel_conv, hdm_kernel_conv_bwd_input;
extern const struct hdm_kernel_def hdm_kernel_conv_bwd_weight;
/* hdm_kernel_misc.c, hdm_kernel_rmsnorm.c */
extern const struct hdm_kernel_def hdm_kernel_silu_bwd, hdm_kernel_triangle, hdm_kernel_arange;
extern const struct hdm_kernel_def hdm_kernel_rms_norm, hdm_kernel_rms_norm_bwd;
/* hdm_kernel_index.c */
extern const struct hdm_kernel_def hdm_kernel_index_select, hdm_kernel_gather;
extern const struct hdm_kernel_def hdm_kernel_scatter_add, hdm_kernel_topk, hdm_kernel_scatter;
/* hdm_kernel_foreach.c */
extern const struct hdm_kernel_def hdm_kernel_foreach_sgd, hdm_kernel_foreach_adamw;
extern const struct hdm_kernel_def hdm_kernel_foreach_adadelta, hdm_kernel_foreach_lamb;
extern const struct hdm_kernel_def hdm_kernel_foreach_norm, hdm_kernel_foreach_clip;
/* hdm_kernel_bnorm.c, hdm_kernel_pool.c */
extern const struct hdm_kernel_def hdm_kernel_batch_norm, hdm_kernel_batch_norm_bwd;
extern const struct hdm_kernel_def hdm_kernel_max_pool, hdm_kernel_max_pool_bwd;
extern const struct hdm_kernel_def hdm_kernel_avg_pool, hdm_kernel_avg_pool_bwd;
/* hdm_kernel_gnorm.c, hdm_kernel_random.c */
extern const struct hdm_kernel_def hdm_kernel_group_norm, hdm_kernel_group_norm_bwd;
extern const struct hdm_kernel_def hdm_kernel_random;
/* hdm_kernel_sdpa.c */
extern const struct hdm_kernel_def hdm_kernel_fused_sdpa, hdm_kernel_fused_sdpa_bwd;

/* ---- faults and cancellation ---- */

/* A part met tensor data it cannot use (an index out of range): the launch fails, parts stop. */
static inline void hdm_kfail(const struct hdm_kcall *c, const char *why)
{
	__atomic_store_n(&c->state->fault, why, __ATOMIC_RELAXED);
}

/* Whether the launch's parts should stop: it was cancelled, or a part failed it. */
static inline bool hdm_kstop(const struct hdm_kcall *c)
{
	const struct hdm_kstate *s = c->state;

	return __atomic_load_n(&s->fault, __ATOMIC_RELAXED) || (s->cancelled && s->cancelled(s->job));
}

/* Elements a long loop visits between two looks at hdm_kstop(): well under a millisecond. */
#define HDM_KPOLL (1u << 14)

/* A long loop's pace: how many more elements it visits before it looks again; 0: stopped. */
struct hdm_kpace {
	const struct hdm_kcall *c;
	uint64_t left;
};

static inline struct hdm_kpace hdm_kpace_start(const struct hdm_kcall *c)
{
	return (struct hdm_kpace){ c, HDM_KPOLL };
}

/*
 * n more elements visited: whether the loop stops here (for good).  A
 * compare per call; hdm_kstop() once per HDM_KPOLL elements.
 */
static inline bool hdm_kpace(struct hdm_kpace *p, uint64_t n)
{
	if (p->left > n) {
		p->left -= n;
		return false;
	}
	if (p->left && !hdm_kstop(p->c)) {
		p->left = HDM_KPOLL;
		return false;
	}
	p->left = 0;
	return true;
}

/*
 * The end of a long loop's next stretch from j of n: at most HDM_KPOLL
 * elements on, through pace p; j itself when the loop is done or stops.
 */
static inline uint64_t hdm_kstretch(struct hdm_kpace *p, uint64_t j, uint64_t n)
{
	uint64_t m = n - j < HDM_KPOLL ? n - j : HDM_KPOLL;

	return m && !hdm_kpace(p, m) ? j + m : j;
}

/*
 * for (j = 0; j < n; j++) body, in stretches through pace p (hdm_kpace()):
 * the body stays a tight loop, and the whole ends early once the launch
 * should stop.  The body may return but not break.
 */
#define hdm_kfor(p, j, n)                                                              \
	for (uint64_t j = 0, j##_end; (j##_end = hdm_kstretch(p, j, n)) > j;)         \
		for (; j < j##_end; j++)

/* ---- element access, shared by every kernel ---- */

static inline unsigned int hdm_dtype_size(uint32_t dtype)
{
	switch (dtype) {
	case HPU_DTYPE_F32: case HPU_DTYPE_I32: return 4;
	case HPU_DTYPE_BF16: return 2;
	case HPU_DTYPE_I64: return 8;
	case HPU_DTYPE_U8: return 1;
	default: return 0;
	}
}

static inline bool hdm_dtype_is_float(uint32_t dtype)
{
	return dtype == HPU_DTYPE_F32 || dtype == HPU_DTYPE_BF16;
}

static inline float hdm_bf16_to_f32(uint16_t v)
{
	uint32_t bits = (uint32_t)v << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

/*
 * Round to nearest even; NaN stays a (quiet) NaN.  A select, not a branch, so
 * that loops of it become vector code.
 */
static inline uint16_t hdm_f32_to_bf16(float f)
{
	uint32_t bits;
	uint16_t quiet, nearest;

	memcpy(&bits, &f, sizeof(bits));
	quiet = (uint16_t)((bits >> 16) | 0x40);
	nearest = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
	return (bits & 0x7fffffffu) > 0x7f800000u ? quiet : nearest;
}

/*
 * Host memory is little-endian on every host QEMU builds this core for.
 * F32 is tested before the switch, which compilers lay out as a search
 * that tries other dtypes first: the common case is one compare.
 */
static inline double hdm_kload_f(uint32_t dtype, const uint8_t *p)
{
	if (dtype == HPU_DTYPE_F32) {
		float v;

		memcpy(&v, p, 4);
		return v;
	}
	switch (dtype) {
	case HPU_DTYPE_BF16: { uint16_t v; memcpy(&v, p, 2); return hdm_bf16_to_f32(v); }
	case HPU_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case HPU_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	default: return *p;
	}
}

static inline int64_t hdm_kload_i(uint32_t dtype, const uint8_t *p)
{
	switch (dtype) {
	case HPU_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); return v; }
	case HPU_DTYPE_I64: { int64_t v; memcpy(&v, p, 8); return v; }
	case HPU_DTYPE_U8: return *p;
	default: return (int64_t)hdm_kload_f(dtype, p);
	}
}

/* Floating stores round (fp32 first, then bf16: the order hardware does it). */
static inline void hdm_kstore_f(uint32_t dtype, uint8_t *p, double v)
{
	if (dtype == HPU_DTYPE_F32) {
		float f = (float)v;

		memcpy(p, &f, 4);
		return;
	}
	switch (dtype) {
	case HPU_DTYPE_BF16: { uint16_t b = hdm_f32_to_bf16((float)v); memcpy(p, &b, 2); break; }
	case HPU_DTYPE_I32: { int32_t i = (int32_t)(int64_t)v; memcpy(p, &i, 4); break; }
	case HPU_DTYPE_I64: { int64_t i = (int64_t)v; memcpy(p, &i, 8); break; }
	default: *p = v != 0; break;
	}
}

static inline void hdm_kstore_i(uint32_t dtype, uint8_t *p, int64_t v)
{
	switch (dtype) {
	case HPU_DTYPE_I32: { int32_t i = (int32_t)v; memcpy(p, &i, 4); break; }
	case HPU_DTYPE_I64: memcpy(p, &v, 8); break;
	case HPU_DTYPE_U8: *p = v != 0; break;
	default: hdm_kstore_f(dtype, p, (double)v); break;
	}
}

/*
 * keep ? v : +0.0 without a branch: which way it goes is data (signs,
 * dropout draws), so a branch would mispredict half the time, and
 * compilers keep a double's ?: a branch.
 */
static inline double hdm_kkeep(bool keep, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	bits &= (uint64_t)0 - keep;
	memcpy(&v, &bits, sizeof(v));
	return v;
}

/*
 * An integral element at p, read once: the value a kernel checks is the one
 * it uses, however the compiler keeps it and whoever writes p meanwhile.
 */
static inline int64_t hdm_kload_index(uint32_t dtype, const uint8_t *p)
{
	int64_t x = hdm_kload_i(dtype, p);

	__asm__("" : "+r"(x));
	return x;
}

/* Index x is in [0, n); if not, the launch fails with why. */
static inline bool hdm_kindex_ok(const struct hdm_kcall *c, int64_t x, uint64_t n, const char *why)
{
	if (x >= 0 && (uint64_t)x < n)
		return true;
	hdm_kfail(c, why);
	return false;
}

/* a * b, or UINT64_MAX if that overflows: work estimates past any limit. */
static inline uint64_t hdm_kmul_sat(uint64_t a, uint64_t b)
{
	uint64_t p;

	return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

static inline uint64_t hdm_kview_numel(const struct hdm_kview *v)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < v->ndim; d++)
		n *= v->shape[d];
	return n;
}

/*
 * Address of the element with row-major linear index i over v's dims from
 * `from` on, at index 0 of the dims before: those may be empty (i must be
 * below the product of the others, so none of those is).
 */
static inline uint8_t *hdm_kview_at_from(const struct hdm_kview *v, uint32_t from, uint64_t i)
{
	int64_t off = 0;

	for (uint32_t d = v->ndim; d-- > from;) {
		off += (int64_t)(i % v->shape[d]) * v->strides[d];
		i /= v->shape[d];
	}
	return v->base + off * (int64_t)hdm_dtype_size(v->dtype);
}

/* Address of the element with row-major linear index i over v's own shape. */
static inline uint8_t *hdm_kview_at(const struct hdm_kview *v, uint64_t i)
{
	return hdm_kview_at_from(v, 0, i);
}

/* ---- walking views ---- */

/*
 * A cursor over a view's elements in row-major order, from any linear
 * index: the next element is one add away, and a dim that runs out carries
 * into the next like an odometer, where hdm_kview_at() would divide by
 * every dim for every element.  Dims that continue the next inner one are
 * merged first, so a dense view walks as one row and never carries.
 */
struct hdm_kcur {
	uint8_t *base;
	int64_t off;   /* bytes from base to the current element */
	uint64_t left; /* elements from the current one to dim 0's end */
	uint32_t dtype;
	uint32_t ndim; /* merged dims, innermost first; at least 1 */
	uint64_t shape[HPU_TENSOR_MAX_DIMS];
	int64_t step[HPU_TENSOR_MAX_DIMS]; /* bytes */
	uint64_t idx[HPU_TENSOR_MAX_DIMS]; /* in dims past 0 (left counts dim 0) */
};

/* A cursor on element i of v; i may be numel (a walk of no elements). */
static inline void hdm_kcur_init(struct hdm_kcur *k, const struct hdm_kview *v, uint64_t i)
{
	int64_t esize = hdm_dtype_size(v->dtype);
	uint32_t n = 0;

	k->base = v->base;
	k->dtype = v->dtype;
	for (uint32_t d = v->ndim; d-- > 0;) {
		int64_t step = v->strides[d] * esize;

		if (v->shape[d] == 1)
			continue;
		if (n && step == k->step[n - 1] * (int64_t)k->shape[n - 1]) {
			k->shape[n - 1] *= v->shape[d];
		} else {
			k->shape[n] = v->shape[d];
			k->step[n++] = step;
		}
	}
	/* A single element (or none: the walk never starts) is a row of one. */
	if (!n || !hdm_kview_numel(v)) {
		n = 1;
		k->shape[0] = 1;
		k->step[0] = 0;
	}
	k->ndim = n;
	k->off = 0;
	for (uint32_t d = 0; d < n; d++) {
		uint64_t x = i % k->shape[d];

		k->off += (int64_t)x * k->step[d];
		k->idx[d] = x;
		i /= k->shape[d];
	}
	k->left = k->shape[0] - k->idx[0];
}

static inline uint8_t *hdm_kcur_ptr(const struct hdm_kcur *k)
{
	return k->base + k->off;
}

/* On by m elements, m <= left: along dim 0, then carrying outwards if it ran out. */
static inline void hdm_kcur_skip(struct hdm_kcur *k, uint64_t m)
{
	k->off += (int64_t)m * k->step[0];
	k->left -= m;
	if (k->left)
		return;
	k->off -= (int64_t)k->shape[0] * k->step[0];
	k->left = k->shape[0];
	for (uint32_t d = 1; d < k->ndim; d++) {
		k->off += k->step[d];
		if (++k->idx[d] < k->shape[d])
			return;
		k->off -= (int64_t)k->shape[d] * k->step[d];
		k->idx[d] = 0;
	}
}

static inline void hdm_kcur_next(struct hdm_kcur *k)
{
	hdm_kcur_skip(k, 1);
}

/*
 * The next span of k's walk: up to n elements along dim 0, step[0] bytes
 * apart, the first at *p.  Moves k past them and says how many they are.
 */
static inline uint64_t hdm_kcur_span(struct hdm_kcur *k, uint64_t n, uint8_t **p)
{
	uint64_t m = n < k->left ? n : k->left;

	*p = hdm_kcur_ptr(k);
	hdm_kcur_skip(k, m);
	return m;
}

static inline double hdm_kcur_get(const struct hdm_kcur *k)
{
	return hdm_kload_f(k->dtype, hdm_kcur_ptr(k));
}

static inline int64_t hdm_kcur_get_i(const struct hdm_kcur *k)
{
	return hdm_kload_i(k->dtype, hdm_kcur_ptr(k));
}

static inline void hdm_kcur_set(const struct hdm_kcur *k, double x)
{
	hdm_kstore_f(k->dtype, hdm_kcur_ptr(k), x);
}

/* One operand's element in an elementwise walk. */
struct hdm_kel {
	uint8_t *p;
	uint32_t dtype;
};

static inline double hdm_kel_get(const struct hdm_kel *e)
{
	return hdm_kload_f(e->dtype, e->p);
}

static inline void hdm_kel_set(const struct hdm_kel *e, double x)
{
	hdm_kstore_f(e->dtype, e->p, x);
}

static inline void hdm_kel_set_i(const struct hdm_kel *e, int64_t x)
{
	hdm_kstore_i(e->dtype, e->p, x);
}

/* Element i of an elementwise kernel: e[j] is operand t[j]'s; ctx is the kernel's own. */
typedef void hdm_kel_fn(const void *ctx, uint64_t i, const struct hdm_kel *e);

/*
 * A run() also built for AVX2, the copy chosen when QEMU loads: elementwise
 * double math (the optimizers') is twice as wide there.  AVX2 alone brings
 * no FMA, so nothing is contracted and both copies compute the same bits.
 */
#if defined(__x86_64__) && defined(__GNUC__)
#define HDM_KERNEL_AVX2 __attribute__((target_clones("avx2", "default")))
#else
#define HDM_KERNEL_AVX2
#endif

/* The dtypes of an elementwise kernel whose operands are all fp32, for hdm_kwalk(). */
static const uint32_t hdm_kwalk_f32[HPU_KERNEL_MAX_TENSORS] = {
	HPU_DTYPE_F32, HPU_DTYPE_F32, HPU_DTYPE_F32, HPU_DTYPE_F32, HPU_DTYPE_F32,
};

/*
 * Calls f on elements [begin, end) of operands t[0, n) of one shape, in
 * order, so each element is read and written as an indexed loop would.
 * Between carries every operand's element is a pointer bumped by a
 * constant step; f is inlined into that inner loop (it must be
 * always_inline: an indirect call per element would cost more than most
 * kernels' math), and a ctx of per-launch constants stays in registers
 * there, which c would not: f's stores may alias it as far as the compiler
 * knows.  A span where every operand is packed and of the dtype dense[]
 * names (a constant array: the kernel's common case) runs a second copy of
 * the loop in which steps and dtypes are constants, which the compiler
 * turns into vector code; the elements and their order are the same.
 * Spans are at most HDM_KPOLL elements, each paced through p: true when
 * the walk stopped early (the launch should stop).
 */
static inline __attribute__((always_inline)) bool
hdm_kwalk(const struct hdm_kcall *c, unsigned int n, uint64_t begin, uint64_t end, hdm_kel_fn *f,
	  const void *ctx, const uint32_t *dense, struct hdm_kpace *p)
{
	struct hdm_kcur k[HPU_KERNEL_MAX_TENSORS];
	struct hdm_kel e[HPU_KERNEL_MAX_TENSORS];
	uint8_t *first[HPU_KERNEL_MAX_TENSORS];
	int64_t step[HPU_KERNEL_MAX_TENSORS];
	bool typed = true;
	unsigned int j;

	for (j = 0; j < n; j++) {
		hdm_kcur_init(&k[j], &c->t[j], begin);
		e[j].dtype = k[j].dtype;
		typed &= k[j].dtype == dense[j];
	}
	while (begin < end) {
		uint64_t span = end - begin < HDM_KPOLL ? end - begin : HDM_KPOLL;
		bool packed = typed;

		/* A span: as far as every operand goes along its dim 0. */
		for (j = 0; j < n; j++)
			if (k[j].left < span)
				span = k[j].left;
		if (hdm_kpace(p, span))
			return true;
		for (j = 0; j < n; j++) {
			step[j] = k[j].step[0];
			hdm_kcur_span(&k[j], span, &first[j]);
			packed &= step[j] == (int64_t)hdm_dtype_size(dense[j]);
		}
		if (packed) {
			for (uint64_t s = 0; s < span; s++) {
				struct hdm_kel d[HPU_KERNEL_MAX_TENSORS];

#pragma GCC unroll 16
				for (j = 0; j < n; j++)
					d[j] = (struct hdm_kel){ first[j] + s * hdm_dtype_size(dense[j]),
								 dense[j] };
				f(ctx, begin + s, d);
			}
		} else {
			for (uint64_t s = 0; s < span; s++) {
				/* Unrolled (n is a constant here), so that e[] lives in registers. */
#pragma GCC unroll 16
				for (j = 0; j < n; j++)
					e[j].p = first[j] + (int64_t)s * step[j];
				f(ctx, begin + s, e);
			}
		}
		begin += span;
	}
	return false;
}

#endif /* HDM_KERNEL_H */
