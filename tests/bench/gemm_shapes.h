/* SPDX-License-Identifier: MIT */
/*
 * The shapes bench-gemm measures, on the host (host_gemm.c) and on the
 * device (bench_gemm.c): a large square and the MNIST MLP's GEMMs.
 */
#ifndef GEMM_SHAPES_H
#define GEMM_SHAPES_H

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

#endif /* GEMM_SHAPES_H */
