/* SPDX-License-Identifier: MIT */
/*
 * The host half of BENCH bf16_gemm_vs_sbgemm (for host_models.c to include):
 * the host's best GEMM of bf16 operands accumulated in fp32, on the shapes
 * bench_models.py's bf16_gemm section times on the device (torch.matmul of
 * bf16 [m, k] @ [k, n], a bf16 result), best of three rounds, all the host's
 * threads.  The best is the first there is of: cblas_sbgemm (Debian's
 * OpenBLAS declares it in cblas.h but is built without it), oneDNN's
 * dnnl_gemm_bf16bf16f32 (libdnnl.so.2, which Debian's PyTorch depends on;
 * the device's MME uses it too), and what the device does without either:
 * A and B widened to fp32 (exact) for cblas_sgemm.  C is rounded to bf16
 * (nearest even) as the device rounds it.  oneDNN is measured on all the
 * host's threads and on one, the better kept.  Libraries are looked up at run
 * time.
 *
 *   bf16_gemm_host_print(stdout)   "bf16_gemm_<shape> <GFLOP/s>" a shape (the
 *                                  best), and "bf16_gemm_widened_<shape>
 *                                  <GFLOP/s>" (widen + sgemm, for comparison)
 */
#ifndef BF16_GEMM_HOST_H
#define BF16_GEMM_HOST_H

#include <cblas.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemm_shapes.h"

/* bench_models.py's bf16_gemm section names the same shapes. */
static const struct gemm_shape bf16_gemm_shapes[] = {
	{ "1024x1024x1024", 1024, 1024, 1024, 8 },
	{ "4096x256x1024", 4096, 256, 1024, 8 }, /* a linear layer over 4096 tokens */
};

/* oneDNN's (dnnl.h): row-major as cblas, 0 on success. */
typedef int bf16_gemm_dnnl_fn(char, char, int64_t, int64_t, int64_t, float, const uint16_t *,
			      int64_t, const uint16_t *, int64_t, float, float *, int64_t);

typedef void bf16_gemm_sbgemm_fn(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
				 blasint, blasint, blasint, float, const uint16_t *, blasint,
				 const uint16_t *, blasint, float, float *, blasint);

static void bf16_gemm_widen(float *dst, const uint16_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t bits = (uint32_t)src[i] << 16;

		memcpy(&dst[i], &bits, sizeof(bits));
	}
}

/* Nearest even (the values here are finite). */
static void bf16_gemm_narrow(uint16_t *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t bits;

		memcpy(&bits, &src[i], sizeof(bits));
		dst[i] = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
	}
}

/* The bf16 GEMM to measure: a library's (one of them, or neither: widen + sgemm). */
struct bf16_gemm_lib {
	bf16_gemm_sbgemm_fn *sbgemm;
	bf16_gemm_dnnl_fn *dnnl;
};

/* What one GEMM reads and writes. */
struct bf16_gemm_operands {
	struct bf16_gemm_lib lib;
	uint16_t *a, *b, *c;
	float *af, *bf, *cf; /* fp32 copies of A and B for the widened GEMM; C before rounding */
};

/* One GEMM by op's lib, C rounded to bf16. */
static void bf16_gemm_once(const struct gemm_shape *g, void *arg)
{
	size_t mk = (size_t)g->m * g->k, kn = (size_t)g->k * g->n, mn = (size_t)g->m * g->n;
	struct bf16_gemm_operands *op = arg;
	struct bf16_gemm_lib lib = op->lib;
	const uint16_t *a = op->a, *b = op->b;
	float *af = op->af, *bf = op->bf, *cf = op->cf;

	if (lib.sbgemm) {
		lib.sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f, a,
			   g->k, b, g->n, 0.0f, cf, g->n);
	} else if (lib.dnnl) {
		lib.dnnl('N', 'N', g->m, g->n, g->k, 1.0f, a, g->k, b, g->n, 0.0f, cf, g->n);
	} else {
		bf16_gemm_widen(af, a, mk);
		bf16_gemm_widen(bf, b, kn);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f, af,
			    g->k, bf, g->n, 0.0f, cf, g->n);
	}
	bf16_gemm_narrow(op->c, cf, mn);
}

/* Best of three rounds of g's repetitions, in GFLOP/s; 0 without memory. */
static double bf16_gemm_measure(const struct gemm_shape *g, struct bf16_gemm_lib lib)
{
	size_t mk = (size_t)g->m * g->k, kn = (size_t)g->k * g->n, mn = (size_t)g->m * g->n;
	struct bf16_gemm_operands op = {
		.lib = lib,
		.a = malloc(mk * 2), .b = malloc(kn * 2), .c = malloc(mn * 2),
		.af = malloc(mk * 4), .bf = malloc(kn * 4), .cf = malloc(mn * 4),
	};
	double best = 0;

	if (op.a && op.b && op.c && op.af && op.bf && op.cf) {
		/* bf16 of i % 7 / 7 and i % 5 / 5: 0x3f80 is 1.0, the top half of its fp32. */
		for (size_t i = 0; i < mk; i++)
			op.a[i] = (uint16_t)(0x3e00 + i % 7 * 0x20);
		for (size_t i = 0; i < kn; i++)
			op.b[i] = (uint16_t)(0x3e00 + i % 5 * 0x20);
		bf16_gemm_once(g, &op); /* warm-up: the first call loads the library's kernels */
		best = gemm_best_gflops(g, bf16_gemm_once, &op);
	}
	free(op.a);
	free(op.b);
	free(op.c);
	free(op.af);
	free(op.bf);
	free(op.cf);
	return best;
}

static void bf16_gemm_host_print(FILE *out)
{
	void *dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
	struct bf16_gemm_lib best = {
		.sbgemm = (bf16_gemm_sbgemm_fn *)dlsym(RTLD_DEFAULT, "cblas_sbgemm"),
	}, widened = { 0 };
	const struct gemm_shape *g;

	void (*omp_threads)(int) = NULL;
	double gflops;

	if (!best.sbgemm && dnnl) {
		best.dnnl = (bf16_gemm_dnnl_fn *)dlsym(dnnl, "dnnl_gemm_bf16bf16f32");
		omp_threads = (void (*)(int))dlsym(dnnl, "omp_set_num_threads");
	}
	for (size_t s = 0; s < sizeof(bf16_gemm_shapes) / sizeof(bf16_gemm_shapes[0]); s++) {
		g = &bf16_gemm_shapes[s];
		gflops = bf16_gemm_measure(g, best);
		/* oneDNN's OpenMP on one thread too: its barriers suffer most from a busy host. */
		if (best.dnnl && omp_threads) {
			double one;

			omp_threads(1);
			one = bf16_gemm_measure(g, best);
			gflops = one > gflops ? one : gflops;
			omp_threads((int)sysconf(_SC_NPROCESSORS_ONLN));
		}
		fprintf(out, "bf16_gemm_%s %.2f\n", g->name, gflops);
		fprintf(out, "bf16_gemm_widened_%s %.2f\n", g->name, bf16_gemm_measure(g, widened));
	}
	if (dnnl)
		dlclose(dnnl);
}

#endif /* BF16_GEMM_HOST_H */
