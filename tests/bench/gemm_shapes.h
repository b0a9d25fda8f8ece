/* SPDX-License-Identifier: MIT */
/*
 * The shapes bench-gemm measures, on the host (host_gemm.c) and on the
 * device (bench_gemm.c): a large square and the MNIST MLP's GEMMs; and how
 * the host halves time a GEMM (gemm_best_gflops()).
 */
#ifndef GEMM_SHAPES_H
#define GEMM_SHAPES_H

#include <time.h>

struct gemm_shape {
	const char *name;
	int m, n, k;
	int reps;
};

static const struct gemm_shape gemm_shapes[] = {
	{ "1024x1024x1024", 1024, 1024, 1024, 8 },
	{ "mlp_fc1_fwd", 200, 128, 784, 200 },   /* x [200, 784] @ W1^T */
	{ "mlp_fc1_wgrad", 128, 784, 200, 200 }, /* dy^T [128, 200] @ x */
	{ "mlp_fc2_fwd", 200, 10, 128, 200 },    /* h [200, 128] @ W2^T */
};

#define GEMM_SHAPES (sizeof(gemm_shapes) / sizeof(gemm_shapes[0]))

static inline double gemm_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best of three rounds of g's repetitions of run(g, arg), in GFLOP/s. */
static inline double gemm_best_gflops(const struct gemm_shape *g,
				      void (*run)(const struct gemm_shape *g, void *arg), void *arg)
{
	double best = 0;

	for (int round = 0; round < 3; round++) {
		double t = gemm_now_s(), gflops;

		for (int r = 0; r < g->reps; r++)
			run(g, arg);
		t = gemm_now_s() - t;
		gflops = 2.0 * g->m * g->n * g->k * g->reps / t / 1e9;
		if (gflops > best)
			best = gflops;
	}
	return best;
}

#endif /* GEMM_SHAPES_H */
