/* SPDX-License-Identifier: MIT */
/*
 * Order statistics for the benchmarks: noisy timings are summed up by their
 * least, median and most, never by one sample.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stddef.h>
#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* v[0..n) in ascending order. */
static inline void bench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
}

/* The median of v[0..n), n > 0 (the upper one for even n); sorts v. */
static inline double bench_median(double *v, size_t n)
{
	bench_sort(v, n);
	return v[n / 2];
}

#endif /* BENCH_STATS_H */
