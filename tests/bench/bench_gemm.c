// SPDX-License-Identifier: MIT
/*
 * bench-gemm: fp32 GEMM on the device's matrix engine through libhpu
 * (reps hpu_op_matmul captured as an HPU graph, replayed and synchronized:
 * the matrix engine's rate, not eager mode's launches, which bench-dma and
 * bench-replay measure; best of three rounds) against OpenBLAS sgemm on the host
 * that runs the emulator (tests/bench/host_gemm.c, best of three rounds).
 * Host and device take turns, PAIRS times per shape, within this run:
 * this half asks host_gemm --serve for each host measurement through
 * files in $HPU_OUT and waits, idle, for the answer, so that both see the
 * same load on the host's CPUs.  Without a serving host half it divides
 * by the numbers host_gemm printed before the guest booted
 * ($HPU_TOP/build/bench-host/gemm.txt).
 *   gemm_<shape>_gflops              the device, best
 *   gemm_<shape>_host_openblas_gflops  the host, best
 *   gemm_<shape>_vs_openblas         device / host, median of the pairs
 *   gemm_vs_openblas                 the same for the largest shape
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "bench_host.h"
#include "bench_stats.h"
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

#define PAIRS 3

/* Whether host_gemm --serve answers in $HPU_OUT (it says so before the guest boots). */
static bool host_serves(void)
{
	const char *out = getenv("HPU_OUT");
	char path[4096];

	snprintf(path, sizeof(path), "%s/gemm.ready", out ? out : ".");
	return out && !access(path, F_OK);
}

/* The host's GFLOP/s for shape measured now, while this waits; 0 if no answer. */
static double host_gflops_now(const char *shape)
{
	static unsigned int n;
	const char *out = getenv("HPU_OUT");
	char path[4096], tmp[4096];
	double v = 0;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/gemm.req.%u.tmp", out, n);
	snprintf(path, sizeof(path), "%s/gemm.req.%u", out, n);
	f = fopen(tmp, "w");
	if (!f)
		return 0;
	fprintf(f, "%s\n", shape);
	fclose(f);
	if (rename(tmp, path))
		return 0;
	snprintf(path, sizeof(path), "%s/gemm.resp.%u", out, n++);
	/* Polled every 5 ms: the guest idles meanwhile. */
	for (int i = 0; i < 60 * 200 && access(path, F_OK); i++)
		usleep(5000);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lf", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Best of three rounds of replaying graph (g's repetitions) on the device, in GFLOP/s. */
static double device_gflops(struct hpu_stream *s, const struct gemm_shape *g,
			    struct hpu_graph *graph)
{
	double best = 0;
	int err;

	for (int round = 0; round < 3; round++) {
		double t;

		if ((err = hpu_stream_synchronize(s)))
			die("synchronize", err);
		t = now_s();
		if ((err = hpu_graph_replay(graph, s)) || (err = hpu_stream_synchronize(s)))
			die("replay", err);
		t = now_s() - t;
		if (2.0 * g->m * g->n * g->k * g->reps / t / 1e9 > best)
			best = 2.0 * g->m * g->n * g->k * g->reps / t / 1e9;
	}
	return best;
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
	bool paired = host_serves();
	int err;

	if ((err = hpu_device_open(0, &dev)) || (err = hpu_stream_create(dev, &s)))
		die("device", err);
	for (unsigned int i = 0; i < GEMM_SHAPES; i++) {
		const struct gemm_shape *g = &gemm_shapes[i];
		struct hpu_tensor *a = matrix(dev, s, g->m, g->k, 7), *b = matrix(dev, s, g->k, g->n, 5);
		struct hpu_tensor *c = matrix(dev, s, g->m, g->n, 3);
		double dev_best = 0, host_best = 0, ratios[PAIRS], ratio;
		unsigned int pairs = paired ? PAIRS : 1;
		struct hpu_graph *graph;

		if ((err = hpu_graph_create(dev, &graph)) ||
		    (err = hpu_graph_capture_begin(graph, s)))
			die("capture", err);
		for (int r = 0; r < g->reps; r++)
			if ((err = hpu_op_matmul(s, c, a, b)))
				die("matmul", err);
		if ((err = hpu_graph_capture_end(graph)))
			die("capture", err);
		/* The first replay uploads the recipe: not timed. */
		if ((err = hpu_graph_replay(graph, s)))
			die("replay", err);

		for (unsigned int p = 0; p < pairs; p++) {
			double host = paired ? host_gflops_now(g->name) : bench_host_value("gemm", g->name);
			double device = device_gflops(s, g, graph);

			ratios[p] = host > 0 ? device / host : 0;
			dev_best = device > dev_best ? device : dev_best;
			host_best = host > host_best ? host : host_best;
		}
		bench_sort(ratios, pairs);
		ratio = ratios[pairs / 2];
		printf("BENCH gemm_%s_gflops %.2f GFLOP/s\n", g->name, dev_best);
		if (ratio > 0) {
			printf("BENCH gemm_%s_host_openblas_gflops %.2f GFLOP/s\n", g->name, host_best);
			printf("BENCH gemm_%s_vs_openblas %.2f ratio\n", g->name, ratio);
			if (!i)
				ratio_first = ratio;
		}
		hpu_graph_destroy(graph);
		hpu_tensor_destroy(a);
		hpu_tensor_destroy(b);
		hpu_tensor_destroy(c);
	}
	if (ratio_first > 0)
		printf("BENCH gemm_vs_openblas %.2f ratio\n", ratio_first);
	else
		fprintf(stderr, "bench-gemm: no host measurement (run through make bench-gemm)\n");
	if (paired) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/gemm.done", getenv("HPU_OUT"));
		f = fopen(path, "w");
		if (f)
			fclose(f);
	}
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return ratio_first > 0 ? 0 : 1;
}
