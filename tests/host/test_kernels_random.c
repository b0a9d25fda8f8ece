/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of RANDOM (uniform and normal fills from the device's
 * Philox stream): every element against a reference in double from
 * Random123's block function (positions unaligned to a block, counters
 * crossing 2^32), fp32 and bf16, contiguous and strided outputs; the
 * offset advanced by the draws, so that two launches fill what one
 * launch of both would; the same bytes whatever the split of the launch;
 * the distributions' moments; every rejection.  Prints TAP.
 *
 * Tolerances: values computed in double and stored once (fp32: 1e-6
 * relative, bf16: 2^-8).  Moments over 2^20 draws within 5 standard
 * errors of the distribution's (the stream is deterministic, so a bound
 * holds or fails every run; 5 SE is what an honest generator misses with
 * probability below 1e-6): uniform [-2, 3) mean, variance and a 32-bin
 * chi-square (31 degrees of freedom, below 70); normal(1.5, 2) mean,
 * variance, skewness and kurtosis.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdm_kernel_harness.h"
#include "hpu_philox.h"

#define F32 HPU_DTYPE_F32
#define BF16 HPU_DTYPE_BF16
#define I32 HPU_DTYPE_I32
#define I64 HPU_DTYPE_I64

#define UNIFORM HPU_RANDOM_UNIFORM
#define NORMAL HPU_RANDOM_NORMAL

/* Draw m of seed's stream, from the block function itself. */
static double ref_draw(uint64_t seed, uint64_t m)
{
	const uint32_t ctr[4] = { (uint32_t)(m / 4), (uint32_t)(m / 4 >> 32), 0, 0 };
	const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
	uint32_t out[4];

	hpu_philox4x32(ctr, key, out);
	return ldexp(out[m % 4] >> 8, -24);
}

/* Element k's value at the stream's offset. */
static double ref_value(int64_t dist, double s0, double s1, uint64_t seed, uint64_t offset,
			uint64_t k)
{
	if (dist == UNIFORM)
		return s0 + (s1 - s0) * ref_draw(seed, offset + k);
	return s0 + s1 * sqrt(-2 * log(1 - ref_draw(seed, offset + 2 * k))) *
			    cos(2 * M_PI * ref_draw(seed, offset + 2 * k + 1));
}

struct fill {
	struct hpu_ktensor *out, *rng;
	struct hdm_kcall c;
};

static void fill_new(struct fill *f, struct hpu_ktensor *out, int64_t dist, double s0,
		     double s1, uint64_t seed, uint64_t offset)
{
	f->out = out;
	f->rng = hpu_kt_new(I64, 1, HPU_KT_DIMS(2), NULL);
	memcpy(f->rng->v.base, &seed, 8);
	memcpy(f->rng->v.base + 8, &offset, 8);
	HPU_KCALL(&f->c, HPU_KERNEL_RANDOM, f->out, f->rng);
	f->c.args[0] = dist;
	f->c.scalars[0] = s0;
	f->c.scalars[1] = s1;
}

static uint64_t rng_word(const struct fill *f, int i)
{
	uint64_t v;

	memcpy(&v, f->rng->v.base + 8 * i, 8);
	return v;
}

static void fill_free(struct fill *f)
{
	hpu_kt_free(f->out);
	hpu_kt_free(f->rng);
}

/*
 * Each distribution, dtype and layout against the reference; the seed kept
 * and the offset on by the draws.
 */
static void test_reference(void)
{
	const uint64_t seed = 0x0123456789abcdefull, offset = 0x3ffffff7dull;
	const struct { int64_t dist; double s0, s1; } dists[] = {
		{ UNIFORM, -2, 3 }, { UNIFORM, 0, 1 }, { UNIFORM, 4, 4 }, { NORMAL, 1.5, 2 },
		{ NORMAL, 0, 0 },
	};

	for (size_t d = 0; d < HPU_ARRAY_SIZE(dists); d++)
		for (int dt = 0; dt < 2; dt++)
			for (int strided = 0; strided < 2; strided++) {
				uint32_t dtype = dt ? BF16 : F32;
				struct hpu_ktensor *out = strided ?
					hpu_kt_new(dtype, 2, HPU_KT_DIMS(7, 45), HPU_KT_STRIDES(1, -9)) :
					hpu_kt_new(dtype, 2, HPU_KT_DIMS(7, 45), NULL);
				double want[7 * 45];
				struct fill f;

				fill_new(&f, out, dists[d].dist, dists[d].s0, dists[d].s1, seed,
					 offset);
				for (uint64_t k = 0; k < 7 * 45; k++)
					want[k] = ref_value(dists[d].dist, dists[d].s0, dists[d].s1,
							    seed, offset, k);
				HPU_KLAUNCH(&hdm_kernel_random, &f.c);
				HPU_KEXPECT_NEAR_DT(f.out, want);
				HPU_KEXPECT(rng_word(&f, 0) == seed);
				HPU_KEXPECT(rng_word(&f, 1) ==
					    offset + 7 * 45 * (dists[d].dist == NORMAL ? 2 : 1));
				fill_free(&f);
			}
}

/*
 * Two launches of n fill what one of 2n does (the stream continues), and
 * every split of a launch writes the same bytes.
 */
static void test_stream_and_splits(void)
{
	for (int64_t dist = UNIFORM; dist <= NORMAL; dist++) {
		const uint64_t n = 3001;
		struct fill one, two;
		struct hpu_ktensor *ref = hpu_kt_new(F32, 1, HPU_KT_DIMS(2 * n), NULL);
		bool same = true;

		fill_new(&one, hpu_kt_new(F32, 1, HPU_KT_DIMS(2 * n), NULL), dist, 0, 1, 7, 5);
		HPU_KEXPECT(hpu_krun(&hdm_kernel_random, &one.c, HPU_KSPLIT_ONE) == 0);
		fill_new(&two, hpu_kt_new(F32, 1, HPU_KT_DIMS(n), NULL), dist, 0, 1, 7, 5);
		for (int half = 0; half < 2; half++) {
			HPU_KEXPECT(hpu_krun(&hdm_kernel_random, &two.c, HPU_KSPLIT_SEQ) == 0);
			for (uint64_t k = 0; k < n; k++)
				same &= hpu_kt_get(two.out, k) == hpu_kt_get(one.out, half * n + k);
		}
		HPU_KEXPECT(same);
		HPU_KEXPECT(rng_word(&one, 1) == rng_word(&two, 1));
		memcpy(ref->buf, one.out->buf, ref->size);
		for (int s = 0; s < HPU_KSPLIT_COUNT; s++) {
			uint64_t offset = 5;

			memcpy(one.rng->v.base + 8, &offset, 8);
			HPU_KEXPECT(hpu_krun(&hdm_kernel_random, &one.c, (enum hpu_ksplit)s) == 0);
			HPU_KEXPECT_SAME(one.out, ref);
		}
		hpu_kt_free(ref);
		fill_free(&one);
		fill_free(&two);
	}
}

/* 2^20 values of dist into x (double). */
static double *draws(int64_t dist, double s0, double s1, uint64_t seed, uint64_t n)
{
	struct fill f;
	double *x;

	fill_new(&f, hpu_kt_new(F32, 1, &n, NULL), dist, s0, s1, seed, 0);
	HPU_KLAUNCH(&hdm_kernel_random, &f.c);
	x = hpu_kt_values(f.out);
	fill_free(&f);
	return x;
}

/* The n values' mean and central moments 2 to 4. */
static void moments(const double *x, uint64_t n, double m[4])
{
	memset(m, 0, 4 * sizeof(*m));
	for (uint64_t i = 0; i < n; i++)
		m[0] += x[i];
	m[0] /= (double)n;
	for (uint64_t i = 0; i < n; i++) {
		double d = x[i] - m[0];

		m[1] += d * d / (double)n;
		m[2] += d * d * d / (double)n;
		m[3] += d * d * d * d / (double)n;
	}
}

static void test_uniform_moments(void)
{
	const uint64_t n = 1u << 20, bins = 32;
	const double lo = -2, hi = 3, w = hi - lo;
	double *x = draws(UNIFORM, lo, hi, 11, n), m[4], chi2 = 0, mn = hi, mx = lo;
	uint64_t count[32] = { 0 };

	moments(x, n, m);
	for (uint64_t i = 0; i < n; i++) {
		mn = fmin(mn, x[i]);
		mx = fmax(mx, x[i]);
		count[(uint64_t)((x[i] - lo) / w * bins)]++;
	}
	for (uint64_t b = 0; b < bins; b++)
		chi2 += pow((double)count[b] - (double)n / bins, 2) / ((double)n / bins);
	printf("#   uniform: mean %.5f var %.5f chi2 %.1f min %.6f max %.6f\n", m[0], m[1], chi2, mn,
	       mx);
	HPU_KEXPECT(fabs(m[0] - 0.5) < 5 * sqrt(w * w / 12 / n));
	HPU_KEXPECT(fabs(m[1] - w * w / 12) < 5 * sqrt(pow(w, 4) * (1.0 / 80 - 1.0 / 144) / n));
	HPU_KEXPECT(chi2 < 70);
	HPU_KEXPECT(mn >= lo && mx < hi);
	free(x);
}

static void test_normal_moments(void)
{
	const uint64_t n = 1u << 20;
	const double mean = 1.5, std = 2;
	double *x = draws(NORMAL, mean, std, 12, n), m[4];

	moments(x, n, m);
	printf("#   normal: mean %.5f var %.5f skew %.5f kurtosis %.5f\n", m[0], m[1],
	       m[2] / pow(m[1], 1.5), m[3] / (m[1] * m[1]));
	HPU_KEXPECT(fabs(m[0] - mean) < 5 * std / sqrt((double)n));
	HPU_KEXPECT(fabs(m[1] - std * std) < 5 * std * std * sqrt(2.0 / n));
	HPU_KEXPECT(fabs(m[2] / pow(m[1], 1.5)) < 5 * sqrt(6.0 / n));
	HPU_KEXPECT(fabs(m[3] / (m[1] * m[1]) - 3) < 5 * sqrt(24.0 / n));
	free(x);
}

static const struct hpu_kreject_case reject_cases[] = {
	{ "random: uniform", &hdm_kernel_random, HPU_KERNEL_RANDOM, { UNIFORM }, { 0, 1 }, 2,
	  { { F32, 2, { 3, 4 } }, { I64, 1, { 2 } } },
	  HPU_KMUTS(HPU_KM_COUNT(1), HPU_KM_COUNT(3), HPU_KM_DTYPE(0, I32), HPU_KM_DTYPE(1, I32),
		    HPU_KM_SHAPE(1, 0), HPU_KM_NDIM(1, 2), HPU_KM_ALIAS(0, 1), HPU_KM_ARG(0, 2),
		    HPU_KM_ARG(0, -1), HPU_KM_SCALAR(0, 2), HPU_KM_SCALAR(0, NAN),
		    HPU_KM_SCALAR(1, INFINITY)) },
	{ "random: normal", &hdm_kernel_random, HPU_KERNEL_RANDOM, { NORMAL }, { 0, 1 }, 2,
	  { { BF16, 1, { 5 } }, { I64, 1, { 2 } } },
	  HPU_KMUTS(HPU_KM_SCALAR(1, -1), HPU_KM_SCALAR(1, NAN), HPU_KM_SCALAR(0, -INFINITY),
		    HPU_KM_DTYPE(0, I64)) },
};

static void test_rejections(void)
{
	for (size_t i = 0; i < HPU_ARRAY_SIZE(reject_cases); i++)
		hpu_kexpect_rejections(&reject_cases[i]);
}

static const struct hpu_ktest_case cases[] = {
	{ "random: uniform and normal against the reference, fp32 and bf16, strided",
	  test_reference },
	{ "random: the stream continues across launches; any split, the same bytes",
	  test_stream_and_splits },
	{ "random: uniform's moments and chi-square within stated bounds", test_uniform_moments },
	{ "random: normal's moments within stated bounds", test_normal_moments },
	{ "every kernel's check() rejections", test_rejections },
};

int main(void)
{
	return hpu_ktest_main(cases, HPU_ARRAY_SIZE(cases)) ? 1 : 0;
}
