// SPDX-License-Identifier: MIT
/*
 * The host half of bench-gemm: OpenBLAS sgemm on the machine that runs the
 * emulator, the shapes of gemm_shapes.h, best of three rounds.  Prints
 * "<shape> <GFLOP/s>" lines for the guest half to divide by.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gemm_shapes.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
	for (unsigned int s = 0; s < GEMM_SHAPES; s++) {
		const struct gemm_shape *g = &gemm_shapes[s];
		float *a = malloc(sizeof(float) * g->m * g->k), *b = malloc(sizeof(float) * g->k * g->n);
		float *c = malloc(sizeof(float) * g->m * g->n);
		double best = 0;

		if (!a || !b || !c)
			return 1;
		for (int i = 0; i < g->m * g->k; i++)
			a[i] = (float)(i % 7) / 7;
		for (int i = 0; i < g->k * g->n; i++)
			b[i] = (float)(i % 5) / 5;
		for (int round = 0; round < 3; round++) {
			double t = now_s(), gflops;

			for (int r = 0; r < g->reps; r++)
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k,
					    1.0f, a, g->k, b, g->n, 0.0f, c, g->n);
			t = now_s() - t;
			gflops = 2.0 * g->m * g->n * g->k * g->reps / t / 1e9;
			if (gflops > best)
				best = gflops;
		}
		printf("%s %.2f\n", g->name, best);
		free(a);
		free(b);
		free(c);
	}
	return 0;
}
