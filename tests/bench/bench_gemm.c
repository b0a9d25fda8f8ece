// SPDX-License-Identifier: MIT
/*
 * bench-gemm: fp32 GEMM on the device's matrix engine through libhpu
 * (hpu_op_matmul, reps enqueued back to back on a stream, then one
 * synchronize; best of three rounds) against OpenBLAS sgemm on the host
 * that runs the emulator, measured just before the guest booted
 * (tests/bench/host_gemm.c, handed over in $HPU_TOP/build/bench-host/):
 *   gemm_<shape>_gflops            the device
 *   gemm_<shape>_vs_openblas       device / host OpenBLAS
 *   gemm_vs_openblas               the same for the largest shape
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hpu/hpu.h>
#include <hpu/hpu_tensor.h>

#include "gemm_shapes.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-gemm: %s: %s (%d)\n", what, hpu_last_error(), err);
	exit(1);
}

/* The host's GFLOP/s for shape, from host_gemm's output; 0 if missing. */
static double host_gflops(const char *shape)
{
	const char *top = getenv("HPU_TOP");
	char path[4096], name[64];
	double v, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/build/bench-host/gemm.txt", top ? top : ".");
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%63s %lf", name, &v) == 2)
		if (!strcmp(name, shape))
			found = v;
	fclose(f);
	return found;
}

static struct hpu_tensor *matrix(struct hpu_device *dev, struct hpu_stream *s, int rows, int cols,
				 int mod)
{
	int64_t shape[2] = { rows, cols };
	size_t n = (size_t)rows * cols;
	float *host = malloc(n * sizeof(float));
	struct hpu_tensor *t;
	int err;

	if (!host)
		die("host memory", -1);
	for (size_t i = 0; i < n; i++)
		host[i] = (float)(i % mod) / mod;
	if ((err = hpu_tensor_empty(dev, HPU_DT_F32, 2, shape, &t)) ||
	    (err = hpu_tensor_copy_from_host(s, t, host, n * sizeof(float))))
		die("tensor", err);
	free(host);
	return t;
}

int main(void)
{
	struct hpu_device *dev;
	struct hpu_stream *s;
	double ratio_first = 0;
	int err;

	if ((err = hpu_device_open(0, &dev)) || (err = hpu_stream_create(dev, &s)))
		die("device", err);
	for (unsigned int i = 0; i < GEMM_SHAPES; i++) {
		const struct gemm_shape *g = &gemm_shapes[i];
		struct hpu_tensor *a = matrix(dev, s, g->m, g->k, 7), *b = matrix(dev, s, g->k, g->n, 5);
		struct hpu_tensor *c = matrix(dev, s, g->m, g->n, 3);
		double best = 0, host = host_gflops(g->name);

		for (int round = 0; round < 3; round++) {
			double t;

			if ((err = hpu_stream_synchronize(s)))
				die("synchronize", err);
			t = now_s();
			for (int r = 0; r < g->reps; r++)
				if ((err = hpu_op_matmul(s, c, a, b)))
					die("matmul", err);
			if ((err = hpu_stream_synchronize(s)))
				die("synchronize", err);
			t = now_s() - t;
			if (2.0 * g->m * g->n * g->k * g->reps / t / 1e9 > best)
				best = 2.0 * g->m * g->n * g->k * g->reps / t / 1e9;
		}
		printf("BENCH gemm_%s_gflops %.2f GFLOP/s\n", g->name, best);
		if (host > 0) {
			printf("BENCH gemm_%s_host_openblas_gflops %.2f GFLOP/s\n", g->name, host);
			printf("BENCH gemm_%s_vs_openblas %.2f ratio\n", g->name, best / host);
			if (!i)
				ratio_first = best / host;
		}
		hpu_tensor_destroy(a);
		hpu_tensor_destroy(b);
		hpu_tensor_destroy(c);
	}
	if (ratio_first > 0)
		printf("BENCH gemm_vs_openblas %.2f ratio\n", ratio_first);
	else
		fprintf(stderr, "bench-gemm: no host measurement (run through make bench-gemm)\n");
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return ratio_first > 0 ? 0 : 1;
}
