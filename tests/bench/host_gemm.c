// SPDX-License-Identifier: MIT
/*
 * The host half of bench-gemm: OpenBLAS sgemm on the machine that runs the
 * emulator, the shapes of gemm_shapes.h, best of three rounds.
 *
 *   host_gemm              prints "<shape> <GFLOP/s>" for every shape
 *   host_gemm --serve DIR  answers the guest half while it runs, so that
 *                          host and device take turns within one run: keeps
 *                          DIR/gemm.ready present (the guest launcher
 *                          empties DIR first), and for each request file
 *                          DIR/gemm.req.<n> naming a shape writes
 *                          DIR/gemm.resp.<n> (atomically) with its GFLOP/s;
 *                          stops at DIR/gemm.done
 */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemm_shapes.h"

struct sgemm_operands {
	float *a, *b, *c;
};

static void sgemm_once(const struct gemm_shape *g, void *arg)
{
	struct sgemm_operands *op = arg;

	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f, op->a,
		    g->k, op->b, g->n, 0.0f, op->c, g->n);
}

/* Best of three rounds of g's repetitions, in GFLOP/s; 0 without memory. */
static double measure(const struct gemm_shape *g)
{
	struct sgemm_operands op = {
		.a = malloc(sizeof(float) * g->m * g->k),
		.b = malloc(sizeof(float) * g->k * g->n),
		.c = malloc(sizeof(float) * g->m * g->n),
	};
	double best = 0;

	if (op.a && op.b && op.c) {
		for (int i = 0; i < g->m * g->k; i++)
			op.a[i] = (float)(i % 7) / 7;
		for (int i = 0; i < g->k * g->n; i++)
			op.b[i] = (float)(i % 5) / 5;
		best = gemm_best_gflops(g, sgemm_once, &op);
	}
	free(op.a);
	free(op.b);
	free(op.c);
	return best;
}

static const struct gemm_shape *shape_named(const char *name)
{
	for (unsigned int s = 0; s < GEMM_SHAPES; s++)
		if (!strcmp(gemm_shapes[s].name, name))
			return &gemm_shapes[s];
	return NULL;
}

/* Answers requests in dir until gemm.done appears. */
static int serve(const char *dir)
{
	char path[4096], tmp[4096], name[64];
	unsigned int n = 0;

	for (;;) {
		const struct gemm_shape *g;
		FILE *f;

		snprintf(path, sizeof(path), "%s/gemm.done", dir);
		if (!access(path, F_OK))
			return 0;
		snprintf(path, sizeof(path), "%s/gemm.ready", dir);
		if (access(path, F_OK) && (f = fopen(path, "w")))
			fclose(f);
		snprintf(path, sizeof(path), "%s/gemm.req.%u", dir, n);
		f = fopen(path, "r");
		if (!f) {
			usleep(2000);
			continue;
		}
		g = fscanf(f, "%63s", name) == 1 ? shape_named(name) : NULL;
		fclose(f);
		snprintf(tmp, sizeof(tmp), "%s/gemm.resp.%u.tmp", dir, n);
		f = fopen(tmp, "w");
		if (!f)
			return 1;
		fprintf(f, "%.2f\n", g ? measure(g) : 0.0);
		fclose(f);
		snprintf(path, sizeof(path), "%s/gemm.resp.%u", dir, n);
		if (rename(tmp, path))
			return 1;
		n++;
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--serve"))
		return serve(argv[2]);
	for (unsigned int s = 0; s < GEMM_SHAPES; s++)
		printf("%s %.2f\n", gemm_shapes[s].name, measure(&gemm_shapes[s]));
	return 0;
}
