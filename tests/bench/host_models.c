// SPDX-License-Identifier: MIT
/*
 * The host half of bench-models: conv2d as the host computes it with
 * OpenBLAS (im2col of each image, then one cblas_sgemm of the weights by the
 * patch matrix), float32 NCHW, on ResNet-like shapes, best of three rounds;
 * then the host's bf16 GEMM (bf16_gemm_host.h).
 *
 *   host_models              prints "conv2d_<shape> <GFLOP/s>" for every shape,
 *                            then bf16_gemm_host_print()'s lines
 *   host_models --serve DIR  returns at once: the guest half needs nothing
 *                            more from the host during its run
 *
 * A shape's key spells it whole, conv2d_n<N>c<Cin>h<H>w<W>o<Cout>k<kernel>
 * s<stride>p<padding>, so that the guest half (tests/bench/bench_models.py)
 * reads the shapes from this output rather than keeping a second list.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16_gemm_host.h"

struct conv_shape {
	int n, c, h, w, o, k, s, p;
};

/* ResNet-50's: the stem, a 3x3 of each stage, a strided 3x3, a 1x1 expansion. */
static const struct conv_shape shapes[] = {
	{ 2, 3, 224, 224, 64, 7, 2, 3 },
	{ 4, 64, 56, 56, 64, 3, 1, 1 },
	{ 4, 64, 56, 56, 128, 3, 2, 1 },
	{ 4, 128, 28, 28, 128, 3, 1, 1 },
	{ 4, 256, 14, 14, 256, 3, 1, 1 },
	{ 4, 256, 14, 14, 1024, 1, 1, 0 },
};

#define SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static int out_dim(const struct conv_shape *c, int in)
{
	return (in + 2 * c->p - c->k) / c->s + 1;
}

/*
 * col [C k k, Ho Wo] = the patches of image x [C, H, W], zero outside it: each of its rows
 * is zeros, a run of input pixels (copied whole at stride 1), zeros.
 */
static void im2col(const struct conv_shape *c, const float *x, float *col)
{
	int ho = out_dim(c, c->h), wo = out_dim(c, c->w);

	for (int ch = 0; ch < c->c; ch++)
		for (int ki = 0; ki < c->k; ki++)
			for (int kj = 0; kj < c->k; kj++, col += ho * wo) {
				/* Output columns j0..j1 read inside the input's width. */
				int j0 = c->p > kj ? (c->p - kj + c->s - 1) / c->s : 0;
				int last = c->w - 1 + c->p - kj;
				int j1 = last < 0 ? 0 : last / c->s + 1;

				j0 = j0 > wo ? wo : j0;
				j1 = j1 > wo ? wo : j1 < j0 ? j0 : j1;
				for (int i = 0; i < ho; i++) {
					int y = i * c->s - c->p + ki;
					const float *src;
					float *row = col + i * wo;

					if (y < 0 || y >= c->h) {
						memset(row, 0, sizeof(float) * wo);
						continue;
					}
					src = x + (ch * c->h + y) * c->w + j0 * c->s - c->p + kj;
					memset(row, 0, sizeof(float) * j0);
					if (c->s == 1)
						memcpy(row + j0, src, sizeof(float) * (j1 - j0));
					else
						for (int j = j0; j < j1; j++)
							row[j] = src[(j - j0) * c->s];
					memset(row + j1, 0, sizeof(float) * (wo - j1));
				}
			}
}

/* One forward: y [N, O, Ho, Wo] = weight [O, C k k] @ im2col(x[n]) for each image. */
static void conv2d(const struct conv_shape *c, const float *x, const float *wt, float *col,
		   float *y)
{
	int pix = out_dim(c, c->h) * out_dim(c, c->w), patch = c->c * c->k * c->k;

	for (int n = 0; n < c->n; n++) {
		im2col(c, x + (size_t)n * c->c * c->h * c->w, col);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->o, pix, patch, 1.0f, wt,
			    patch, col, pix, 0.0f, y + (size_t)n * c->o * pix, pix);
	}
}

static float *filled(size_t len, int mod)
{
	float *a = malloc(sizeof(float) * len);

	for (size_t i = 0; a && i < len; i++)
		a[i] = (float)(i % mod) / mod - 0.5f;
	return a;
}

/* Best of three rounds of about 0.2 s each, in GFLOP/s; 0 without memory. */
static double measure(const struct conv_shape *c)
{
	size_t pix = (size_t)out_dim(c, c->h) * out_dim(c, c->w), patch = (size_t)c->c * c->k * c->k;
	float *x = filled((size_t)c->n * c->c * c->h * c->w, 7), *wt = filled(c->o * patch, 5);
	float *col = malloc(sizeof(float) * patch * pix), *y = malloc(sizeof(float) * c->n * c->o * pix);
	double flop = 2.0 * c->n * c->o * pix * patch, best = 0;

	if (x && wt && col && y) {
		double t = gemm_now_s();
		int reps;

		conv2d(c, x, wt, col, y); /* warm-up, and the repetitions a round needs */
		t = gemm_now_s() - t;
		reps = t > 0.2 ? 1 : (int)(0.2 / t) + 1;
		for (int round = 0; round < 3; round++) {
			t = gemm_now_s();
			for (int r = 0; r < reps; r++)
				conv2d(c, x, wt, col, y);
			t = gemm_now_s() - t;
			if (flop * reps / t / 1e9 > best)
				best = flop * reps / t / 1e9;
		}
	}
	free(x);
	free(wt);
	free(col);
	free(y);
	return best;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--serve"))
		return 0;
	for (unsigned int i = 0; i < SHAPES; i++) {
		const struct conv_shape *c = &shapes[i];

		printf("conv2d_n%dc%dh%dw%do%dk%ds%dp%d %.2f\n", c->n, c->c, c->h, c->w, c->o, c->k,
		       c->s, c->p, measure(c));
		fflush(stdout);
	}
	bf16_gemm_host_print(stdout);
	return 0;
}
