/* SPDX-License-Identifier: MIT */
/*
 * The host half of BENCH bf16_gemm_vs_sbgemm (for host_models.c to include):
 * the host's best GEMM of bf16 operands accumulated in fp32, on the shapes
 * bench_models.py's bf16_gemm section times on the device (torch.matmul of
 * bf16 [m, k] @ [k, n], a bf16 result).  That is cblas_sbgemm when the
 * host's OpenBLAS exports it (looked up at run time: Debian's declares it in
 * cblas.h but is built without it), else what the device does without it:
 * A and B widened to fp32 (exact), cblas_sgemm with OpenBLAS's threads, C
 * rounded to bf16 (nearest even).  Best of three rounds.
 *
 *   bf16_gemm_host_print(stdout)   one "bf16_gemm_<shape> <GFLOP/s>" line a shape
 */
#ifndef BF16_GEMM_HOST_H
#define BF16_GEMM_HOST_H

#include <cblas.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm_shapes.h"

/* bench_models.py's bf16_gemm section names the same shapes. */
static const struct gemm_shape bf16_gemm_shapes[] = {
	{ "1024x1024x1024", 1024, 1024, 1024, 8 },
	{ "4096x256x1024", 4096, 256, 1024, 8 }, /* a linear layer over 4096 tokens */
};

typedef void bf16_gemm_sbgemm_fn(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
				 blasint, blasint, blasint, float, const uint16_t *, blasint,
				 const uint16_t *, blasint, float, float *, blasint);

static double bf16_gemm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

/* One GEMM: sbgemm's if given, else widen, sgemm, round. */
static void bf16_gemm_once(const struct gemm_shape *g, bf16_gemm_sbgemm_fn *sbgemm,
			   const uint16_t *a, const uint16_t *b, float *af, float *bf, float *cf,
			   uint16_t *c)
{
	size_t mk = (size_t)g->m * g->k, kn = (size_t)g->k * g->n, mn = (size_t)g->m * g->n;

	if (sbgemm) {
		sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f, a, g->k,
		       b, g->n, 0.0f, cf, g->n);
	} else {
		bf16_gemm_widen(af, a, mk);
		bf16_gemm_widen(bf, b, kn);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f, af,
			    g->k, bf, g->n, 0.0f, cf, g->n);
	}
	bf16_gemm_narrow(c, cf, mn);
}

/* Best of three rounds of g's repetitions, in GFLOP/s; 0 without memory. */
static double bf16_gemm_measure(const struct gemm_shape *g, bf16_gemm_sbgemm_fn *sbgemm)
{
	size_t mk = (size_t)g->m * g->k, kn = (size_t)g->k * g->n, mn = (size_t)g->m * g->n;
	uint16_t *a = malloc(mk * 2), *b = malloc(kn * 2), *c = malloc(mn * 2);
	float *af = malloc(mk * 4), *bf = malloc(kn * 4), *cf = malloc(mn * 4);
	double best = 0;

	if (a && b && c && af && bf && cf) {
		/* bf16 of i % 7 / 7 and i % 5 / 5: 0x3f80 is 1.0, the top half of its fp32. */
		for (size_t i = 0; i < mk; i++)
			a[i] = (uint16_t)(0x3e00 + i % 7 * 0x20);
		for (size_t i = 0; i < kn; i++)
			b[i] = (uint16_t)(0x3e00 + i % 5 * 0x20);
		bf16_gemm_once(g, sbgemm, a, b, af, bf, cf, c);
		for (int round = 0; round < 3; round++) {
			double t = bf16_gemm_now(), gflops;

			for (int r = 0; r < g->reps; r++)
				bf16_gemm_once(g, sbgemm, a, b, af, bf, cf, c);
			t = bf16_gemm_now() - t;
			gflops = 2.0 * g->m * g->n * g->k * g->reps / t / 1e9;
			if (gflops > best)
				best = gflops;
		}
	}
	free(a);
	free(b);
	free(c);
	free(af);
	free(bf);
	free(cf);
	return best;
}

static void bf16_gemm_host_print(FILE *out)
{
	bf16_gemm_sbgemm_fn *sbgemm = (bf16_gemm_sbgemm_fn *)dlsym(RTLD_DEFAULT, "cblas_sbgemm");

	for (size_t s = 0; s < sizeof(bf16_gemm_shapes) / sizeof(bf16_gemm_shapes[0]); s++)
		fprintf(out, "bf16_gemm_%s %.2f\n", bf16_gemm_shapes[s].name,
			bf16_gemm_measure(&bf16_gemm_shapes[s], sbgemm));
}

#endif /* BF16_GEMM_HOST_H */
