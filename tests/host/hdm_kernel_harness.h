/* SPDX-License-Identifier: MIT */
/*
 * Harness of the kernel-library host tests: host tensors of any dtype and
 * layout, launches built from them, a runner that drives a kernel the way
 * the TPC engine does (check, then run on split item ranges, also on
 * concurrent threads, then finish), comparisons against references
 * computed in double, a finite-difference gradient check, and TAP.
 */
#ifndef HDM_KERNEL_HARNESS_H
#define HDM_KERNEL_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hdm_kernel.h"

#define HPU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- TAP ---- */

/* Set by a failed expectation; the runner clears it before each test. */
extern bool hpu_ktest_failed;

void hpu_kexpect(bool ok, const char *what, const char *file, int line);
#define HPU_KEXPECT(cond) hpu_kexpect(cond, #cond, __FILE__, __LINE__)

struct hpu_ktest_case {
	const char *name;
	void (*run)(void);
};

/* The TAP header: how many tests follow. */
void hpu_ktest_plan(size_t count);
/* Prints test n's line and clears the failure for the next; true if it passed. */
bool hpu_ktest_report(unsigned int n, const char *name);
/* Runs cases[], numbering on from *n; returns how many failed. */
unsigned int hpu_ktest_run(const struct hpu_ktest_case *cases, size_t count, unsigned int *n);
/* The plan and every case: a main()'s whole job; returns how many failed. */
unsigned int hpu_ktest_main(const struct hpu_ktest_case *cases, size_t count);

/* ---- host tensors ---- */

/*
 * A tensor in its own allocation: v.base may sit inside buf (negative
 * strides), and buf's bytes no element reaches hold HPU_KT_POISON, so a
 * kernel writing through a gap shows.
 */
struct hpu_ktensor {
	struct hdm_kview v;
	uint8_t *buf;
	size_t size;
};

#define HPU_KT_POISON 0xa5

/* Shape and strides by literal: HPU_KT_DIMS(2, 3) is (const uint64_t[]){ 2, 3 }. */
#define HPU_KT_DIMS(...) ((const uint64_t[]){ __VA_ARGS__ })
#define HPU_KT_STRIDES(...) ((const int64_t[]){ __VA_ARGS__ })

/*
 * A tensor of ndim dims; strides NULL: contiguous row-major.  Strides may
 * be 0, negative or in any order.  Elements start at 0.
 */
struct hpu_ktensor *hpu_kt_new(uint32_t dtype, uint32_t ndim, const uint64_t *shape,
			       const int64_t *strides);
void hpu_kt_free(struct hpu_ktensor *t);

uint64_t hpu_kt_numel(const struct hpu_ktensor *t);
/* Element i in row-major order over t's shape, stored as t's dtype stores it. */
void hpu_kt_set(struct hpu_ktensor *t, uint64_t i, double v);
double hpu_kt_get(const struct hpu_ktensor *t, uint64_t i);
int64_t hpu_kt_get_i(const struct hpu_ktensor *t, uint64_t i);
/* Every element from vals[] (row-major; numel entries). */
void hpu_kt_fill(struct hpu_ktensor *t, const double *vals);
/*
 * Every element from a deterministic pseudo-random stream in [lo, hi);
 * integral dtypes get whole numbers.  A broadcast tensor's shared elements
 * take the last value written.
 */
void hpu_kt_fill_random(struct hpu_ktensor *t, uint64_t seed, double lo, double hi);
/* The same with whole numbers in every dtype: ties, and sums exact in any order. */
void hpu_kt_fill_whole(struct hpu_ktensor *t, uint64_t seed, double lo, double hi);
/* Every element, row-major, as stored (after the dtype's rounding): numel doubles, malloc'ed. */
double *hpu_kt_values(const struct hpu_ktensor *t);
/* v as a store to dtype rounds it, read back. */
double hpu_kround(uint32_t dtype, double v);
/* No byte of t->buf outside the elements t reaches has changed. */
bool hpu_kt_gaps_intact(const struct hpu_ktensor *t);

/* ---- launches ---- */

/*
 * A launch of kernel on tensors t[0..n): args and scalars zero, to be set
 * by the caller; a state for running it without hpu_krun() (never
 * cancelled, shared by every such launch).
 */
void hpu_kcall_init(struct hdm_kcall *c, uint32_t kernel, unsigned int n,
		    struct hpu_ktensor *const *t);
#define HPU_KCALL(c, kernel, ...)                                                        \
	hpu_kcall_init(c, kernel,                                                         \
		       sizeof((struct hpu_ktensor *[]){ __VA_ARGS__ }) / sizeof(void *),  \
		       (struct hpu_ktensor *[]){ __VA_ARGS__ })

/* How hpu_krun() hands out the items. */
enum hpu_ksplit {
	HPU_KSPLIT_ONE,     /* one range of every item */
	HPU_KSPLIT_SEQ,     /* uneven ranges (some empty) one after another, last first */
	HPU_KSPLIT_THREADS, /* ranges on concurrent threads */
	HPU_KSPLIT_COUNT
};

extern const char *const hpu_ksplit_names[HPU_KSPLIT_COUNT];

/* What hpu_krun() returns when a part failed the launch (hdm_kfail()). */
#define HPU_KRUN_FAULT 1

/* The most elements one of items items of c's phase visits, as the engine works it out. */
uint64_t hpu_kitem_work(const struct hdm_kernel_def *def, const struct hdm_kcall *c,
			uint64_t items);

/*
 * Runs a launch as the engine would, with a state of its own: the tensor
 * count against the def's bounds, check(), then for each phase run() over
 * its items as split says (expecting each item within
 * HPU_KERNEL_MAX_ITEM_WORK) and finish() unless a part failed the launch.  Returns
 * check()'s verdict (or -1 for a bad count; nothing runs when it is
 * nonzero), else HPU_KRUN_FAULT if a part failed the launch (printing
 * why), else 0.  Also expects that no tensor outside outputs() was
 * written (unless it is the same view as an output).
 */
int hpu_krun(const struct hdm_kernel_def *def, const struct hdm_kcall *launch,
	     enum hpu_ksplit split);

/*
 * A launch that must be valid, run with each way of splitting in turn
 * (a suite's launches then cover them all); a rejection fails the test.
 */
void hpu_klaunch(const struct hdm_kernel_def *def, const struct hdm_kcall *c, int line);
#define HPU_KLAUNCH(def, c) hpu_klaunch(def, c, __LINE__)

/* ---- comparisons ---- */

/*
 * Expects every element of got (row-major) within atol + rtol * |want| of
 * want[]; NaN matches NaN, an infinity only itself.  Prints the first
 * mismatches as TAP diagnostics naming what and the caller's line.
 */
bool hpu_kexpect_near(const struct hpu_ktensor *got, const double *want, double rtol, double atol,
		      const char *what, int line);
#define HPU_KEXPECT_NEAR(got, want, rtol, atol)                                          \
	hpu_kexpect_near(got, want, rtol, atol, #got, __LINE__)

/* Every element of a and b has the same bytes. */
bool hpu_kexpect_same(const struct hpu_ktensor *a, const struct hpu_ktensor *b, const char *what,
		      int line);
#define HPU_KEXPECT_SAME(a, b) hpu_kexpect_same(a, b, #a " vs " #b, __LINE__)

/*
 * Runs a valid launch on two sets of copies of its tensors: all contiguous
 * (the kernels walk each as one row), and all scattered, with the dims in
 * reverse order in memory, a gap after every element and the last dim
 * flipped (the walks carry at the end of every row), split into uneven
 * ranges; expects every output the same bytes both ways.  Tensors that
 * are the same view stay one tensor; the launch's own are only read.
 */
void hpu_kexpect_layouts_agree(const struct hdm_kernel_def *def, const struct hdm_kcall *c,
			       int line);
#define HPU_KEXPECT_LAYOUTS_AGREE(def, c) hpu_kexpect_layouts_agree(def, c, __LINE__)

/* Tolerances: fp32 computed in double and rounded once; bf16's 8-bit significand. */
#define HPU_KTOL_F32 1e-6
#define HPU_KTOL_BF16 (1.0 / 256)
/* The relative tolerance for results stored as dtype (0 for integral: exact). */
double hpu_ktol(uint32_t dtype);
/* HPU_KEXPECT_NEAR with got's dtype's tolerance, relative and absolute. */
#define HPU_KEXPECT_NEAR_DT(got, want)                                                   \
	HPU_KEXPECT_NEAR(got, want, hpu_ktol((got)->v.dtype), hpu_ktol((got)->v.dtype))

/*
 * Gradient check: for every element of x, the central difference
 * (f(x + eps) - f(x - eps)) / 2 eps of the scalar function f (computed by
 * the caller, typically a forward launch and a weighted sum in double)
 * against the analytic gradient grad (row-major, grad of x's shape).
 * x is restored afterwards.
 */
bool hpu_kgradcheck(struct hpu_ktensor *x, double (*f)(void *ctx), void *ctx,
		    const struct hpu_ktensor *grad, double eps, double rtol, double atol,
		    const char *what, int line);

/* ---- rejections ---- */

/* One change that makes a valid launch invalid. */
enum hpu_kmut_kind {
	HPU_KMUT_COUNT,  /* num_tensors = v */
	HPU_KMUT_DTYPE,  /* t[i].dtype = v */
	HPU_KMUT_NDIM,   /* t[i].ndim = v */
	HPU_KMUT_SHAPE,  /* t[i].shape[v] one larger */
	HPU_KMUT_ARG,    /* args[i] = v */
	HPU_KMUT_SCALAR, /* scalars[i] = s */
	HPU_KMUT_VALUE,  /* element 0 of t[i] = v (an index, a step) */
	HPU_KMUT_ALIAS,  /* t[i] at t[v]'s address */
};

struct hpu_kmutation {
	const char *what;
	enum hpu_kmut_kind kind;
	unsigned int i;
	int64_t v;
	double s;
};

/*
 * A valid launch of contiguous zero-filled tensors (zero being a valid
 * index and value for every check) and mutations that each break it.
 */
struct hpu_kreject_case {
	const char *name;
	const struct hdm_kernel_def *def;
	uint32_t kernel;
	int64_t args[HPU_KERNEL_MAX_ARGS];
	double scalars[HPU_KERNEL_MAX_SCALARS];
	unsigned int n;
	struct {
		uint32_t dtype, ndim;
		uint64_t shape[HPU_TENSOR_MAX_DIMS];
	} t[HPU_KERNEL_MAX_TENSORS];
	const struct hpu_kmutation *muts;
	size_t nmuts;
};

/* Mutations by kind, named after what they change. */
#define HPU_KMUT(name, k, idx, val) { .what = name, .kind = HPU_KMUT_##k, .i = idx, .v = val }
#define HPU_KM_COUNT(n) HPU_KMUT("num_tensors " #n, COUNT, 0, n)
#define HPU_KM_DTYPE(t, d) HPU_KMUT("t[" #t "] " #d, DTYPE, t, d)
#define HPU_KM_NDIM(t, n) HPU_KMUT("t[" #t "] of " #n " dims", NDIM, t, n)
#define HPU_KM_SHAPE(t, d) HPU_KMUT("t[" #t "] dim " #d " one larger", SHAPE, t, d)
#define HPU_KM_ARG(a, x) HPU_KMUT("a" #a " = " #x, ARG, a, x)
#define HPU_KM_SCALAR(a, x) { .what = "s" #a " = " #x, .kind = HPU_KMUT_SCALAR, .i = a, .s = x }
#define HPU_KM_VALUE(t, x) HPU_KMUT("t[" #t "][0] = " #x, VALUE, t, x)
#define HPU_KM_ALIAS(t, u) HPU_KMUT("t[" #t "] at t[" #u "]", ALIAS, t, u)

/* A hpu_kreject_case's mutations from a list. */
#define HPU_KMUTS(...)                                                                   \
	.muts = (const struct hpu_kmutation[]){ __VA_ARGS__ },                           \
	.nmuts = sizeof((const struct hpu_kmutation[]){ __VA_ARGS__ }) /                 \
		 sizeof(struct hpu_kmutation)

/* Expects the valid launch to run and check() to reject each mutation, naming any it accepts. */
void hpu_kexpect_rejections(const struct hpu_kreject_case *rc);

#endif /* HDM_KERNEL_HARNESS_H */
