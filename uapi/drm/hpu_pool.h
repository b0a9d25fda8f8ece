/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The windows of the pooling kernels (MAX_POOL, AVG_POOL and their
 * backwards, hpu_kernels.h) along one spatial axis, shared by the device
 * model and the runtime (its checks and CPU fallback) so that both take
 * the same launches and pool the same positions.  Windowed pooling is
 * torch's: window o starts at o * s - p and takes k positions d apart,
 * those inside the input; adaptive window o spans [floor(o n / no),
 * ceil((o + 1) n / no)).
 */
#ifndef HPU_POOL_H
#define HPU_POOL_H

#include <stdbool.h>
#include <stdint.h>

/* The largest kernel, stride, padding, dilation or divisor: sums of them stay far from overflow. */
#define HPU_POOL_MAX_ARG (1 << 20)

/* One spatial axis: input size n, output size no, and how windows map between them. */
struct hpu_pool_axis {
	int64_t n, no, k, s, p, d;
	bool adaptive;
};

/* torch's output size along an axis (ceil_mode or not); valid parameters. */
static inline int64_t hpu_pool_out_size(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d,
					bool ceil_mode)
{
	int64_t ext = (k - 1) * d + 1, o = (n + 2 * p - ext + (ceil_mode ? s - 1 : 0)) / s + 1;

	/* The last window must start inside the input or its left padding. */
	if (ceil_mode && (o - 1) * s >= n + p)
		o--;
	return o;
}

/*
 * Window o of axis x: the positions lo, lo + d, ... below hi that lie in
 * the input (none when lo >= hi), and the extent of the window clipped to
 * the padded input (count_include_pad's divisor).
 */
static inline void hpu_pool_window(const struct hpu_pool_axis *x, int64_t o, int64_t *lo,
				   int64_t *hi, int64_t *padded)
{
	int64_t st, en;

	if (x->adaptive) {
		*lo = o * x->n / x->no;
		*hi = ((o + 1) * x->n + x->no - 1) / x->no;
		*padded = *hi - *lo;
		return;
	}
	st = o * x->s - x->p;
	en = st + (x->k - 1) * x->d + 1;
	*padded = (en < x->n + x->p ? en : x->n + x->p) - st;
	*lo = st >= 0 ? st : st + (-st + x->d - 1) / x->d * x->d;
	*hi = en < x->n ? en : x->n;
}

/* The windows of axis x that may hold position h: [*first, *last]; all do without dilation. */
static inline void hpu_pool_holders(const struct hpu_pool_axis *x, int64_t h, int64_t *first,
				    int64_t *last)
{
	if (x->adaptive) {
		*first = h * x->no / x->n;
		*last = ((h + 1) * x->no - 1) / x->n;
	} else {
		int64_t from = h + x->p - (x->k - 1) * x->d;

		*first = from <= 0 ? 0 : (from + x->s - 1) / x->s;
		*last = (h + x->p) / x->s;
	}
	if (*last > x->no - 1)
		*last = x->no - 1;
}

/* Whether position h is one of window o's. */
static inline bool hpu_pool_holds(const struct hpu_pool_axis *x, int64_t o, int64_t h)
{
	int64_t lo, hi, padded;

	hpu_pool_window(x, o, &lo, &hi, &padded);
	return h >= lo && h < hi && (h - lo) % x->d == 0;
}

/* The most windows one position is in, along x. */
static inline uint64_t hpu_pool_max_holders(const struct hpu_pool_axis *x)
{
	if (x->adaptive)
		return (uint64_t)((x->no + x->n - 1) / x->n + 1);
	return (uint64_t)((((x->k - 1) * x->d + 1) + x->s - 1) / x->s);
}

/* The most positions one window has, along x. */
static inline uint64_t hpu_pool_max_span(const struct hpu_pool_axis *x)
{
	return x->adaptive ? (uint64_t)((x->n + x->no - 1) / x->no + 1) : (uint64_t)x->k;
}

/*
 * The divisor of average pooling's window (oy, ox) over axes ax[2]: the
 * override if nonzero, else the window's positions in the input, or with
 * count_include_pad in the padded input.
 */
static inline double hpu_pool_divisor(const struct hpu_pool_axis *ax, int64_t oy, int64_t ox,
				      bool include_pad, int64_t divisor)
{
	int64_t lo[2], hi[2], padded[2];

	if (divisor)
		return (double)divisor;
	hpu_pool_window(&ax[0], oy, &lo[0], &hi[0], &padded[0]);
	hpu_pool_window(&ax[1], ox, &lo[1], &hi[1], &padded[1]);
	return (double)(include_pad ? padded[0] * padded[1] : (hi[0] - lo[0]) * (hi[1] - lo[1]));
}

/*
 * Axis x's parameters in range and no torch's output size for them, with
 * ceil_mode or without; every window holding an input position.
 */
static inline bool hpu_pool_axis_ok(const struct hpu_pool_axis *x)
{
	int64_t ext, floor_no, ceil_no;

	if (x->n < 1 || x->no < 1)
		return false;
	/* Adaptive windows' bounds multiply positions by sizes. */
	if (x->adaptive)
		return !x->k && !x->s && !x->p && x->n <= INT64_MAX / 4 / x->no;
	if (x->k < 1 || x->k > HPU_POOL_MAX_ARG || x->s < 1 || x->s > HPU_POOL_MAX_ARG ||
	    x->d < 1 || x->d > HPU_POOL_MAX_ARG || x->p < 0 || x->p > x->k / 2)
		return false;
	ext = (x->k - 1) * x->d + 1;
	if (x->n + 2 * x->p < ext)
		return false;
	floor_no = hpu_pool_out_size(x->n, x->k, x->s, x->p, x->d, false);
	ceil_no = hpu_pool_out_size(x->n, x->k, x->s, x->p, x->d, true);
	if (x->no != floor_no && x->no != ceil_no)
		return false;
	/* Only windows starting before 0 can miss the input (p <= k / 2 keeps the rest in). */
	for (int64_t o = 0; o < x->no && o * x->s < x->p; o++) {
		int64_t lo, hi, padded;

		hpu_pool_window(x, o, &lo, &hi, &padded);
		if (lo >= hi)
			return false;
	}
	return true;
}

#endif /* HPU_POOL_H */
