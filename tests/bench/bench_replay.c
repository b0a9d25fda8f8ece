// SPDX-License-Identifier: MIT
/*
 * bench-replay: the host's cost of running a step of n ops (n = 10, 100,
 * 1000 elementwise ops on one tensor) as an HPU graph replay, against
 * enqueueing the same ops eagerly or lazily (recorded, then hpu_mark_step:
 * a cache hit).  Host time is the CPU time of the calls that enqueue a
 * step (the device runs each step to its end before the next, untimed);
 * the results are checked.  The least over the steps is the host's own
 * cost: the emulated device's threads share the host's CPUs with the
 * guest's, so a step whose device work overlaps its enqueueing reads
 * longer (the median says how much).
 *
 * Every timed step follows the same two short synchronized steps (a
 * one-op graph), whatever n: under TCG the calls after a synchronize that
 * slept (any wait longer than the runtime's spin, such as a 1000-op
 * step's) run two to eight times slower for a while, so timing each step
 * right after its own synchronized predecessor compared a 1000-op replay
 * after a sleep with a 10-op one after a spin, not the cost of their op
 * counts (docs/PERFORMANCE.md).  Those measures are printed too.  The
 * sizes take turns, in a new random order each round, so that the host's
 * load, which drifts by 2x within minutes on these hosts, weighs on each
 * alike, and so does what ran before the settling steps.
 *   replay_<n>_host_us   a replay (least; and _median_us)
 *   replay_<n>_after_own_host_us  a replay right after its predecessor (least)
 *   replay_10_after_1000_host_us  a 10-op replay right after a 1000-op step
 *   lazy_<n>_host_us     recording the ops and launching the cached recipe
 *   eager_<n>_host_us    enqueueing the ops one by one
 *   replay_flatness      replay_1000_host_us / replay_10_host_us
 *   replay_flatness_after_own  the same of the _after_own_ figures
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <hpu/hpu.h>
#include <hpu/hpu_graph.h>
#include <hpu/hpu_tensor.h>

#include "bench_stats.h"

enum { ELEMS = 1024, REPLAYS = 60, LAZY_STEPS = 10, EAGER_STEPS = 3, SETTLES = 2, LONG = 1000 };

static void check(int ret, const char *what)
{
	if (ret < 0) {
		fprintf(stderr, "bench-replay: %s: %s (%d)\n", what, hpu_last_error(), ret);
		exit(1);
	}
}

static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The least and the median of v (sorted). */
static void least_median(double *v, int n, double *least, double *med)
{
	bench_sort(v, (size_t)n);
	*least = v[0];
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The step: n ops adding 1 to a (alternately to b and back, so that ops depend on each other). */
static void step_ops(struct hpu_stream *s, struct hpu_tensor *a, struct hpu_tensor *b, int n)
{
	int i;

	for (i = 0; i < n; i++)
		check(hpu_op_binary_scalar(s, HPU_BIN_ADD, i % 2 ? a : b, i % 2 ? b : a, 1), "op");
}

/* a's first element, which every step adds n to. */
static float first(struct hpu_stream *s, struct hpu_tensor *a)
{
	float v[ELEMS];

	check(hpu_tensor_copy_to_host(s, a, v, sizeof(v)), "read");
	return v[0];
}

enum how { REPLAY, LAZY, EAGER };

/* A step of n ops on tensors of its own: a captured graph of them, or the ops to enqueue. */
struct step {
	struct hpu_tensor *a, *b;
	struct hpu_graph *g;
	double *t;
};

/*
 * Least and median host time of steps of n[j] ops run as how, the sizes
 * taking turns in a random order, each step after settles synchronized
 * replays of settle (right after the previous step if there are none);
 * the values checked after.
 */
static void measure(struct hpu_device *dev, struct hpu_stream *s, const int *n, int count,
		    enum how how, struct hpu_graph *settle, int settles, double *least, double *med)
{
	int steps = how == REPLAY ? REPLAYS : how == LAZY ? LAZY_STEPS : EAGER_STEPS, i, j, k, x;
	struct step *st = calloc(count, sizeof(*st));
	int *order = calloc(count, sizeof(*order));
	uint32_t lcg = 1;
	double c;

	for (j = 0; j < count; j++) {
		st[j].t = calloc(steps, sizeof(double));
		check(hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ ELEMS }, &st[j].a), "tensor");
		check(hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ ELEMS }, &st[j].b), "tensor");
		check(hpu_op_fill(s, st[j].a, 0), "fill");
		if (how == REPLAY) {
			check(hpu_graph_create(dev, &st[j].g), "graph");
			check(hpu_graph_capture_begin(st[j].g, s), "capture");
			step_ops(s, st[j].a, st[j].b, n[j]);
			check(hpu_graph_capture_end(st[j].g), "capture end");
		}
	}
	check(hpu_stream_set_lazy(s, how == LAZY), "lazy");
	for (j = 0; j < count; j++)
		order[j] = j;
	/* One untimed round: the first replay uploads, the first lazy step compiles. */
	for (i = -1; i < steps; i++) {
		/* A fresh order each round: every size follows every other alike. */
		for (k = count - 1; k > 0; k--) {
			lcg = lcg * 1103515245u + 12345u;
			x = (int)(lcg >> 16) % (k + 1);
			j = order[k];
			order[k] = order[x];
			order[x] = j;
		}
		for (x = 0; x < count; x++) {
			j = order[x];
			for (k = 0; k < settles; k++) {
				check(hpu_graph_replay(settle, s), "settle");
				check(hpu_stream_synchronize(s), "synchronize");
			}
			c = cpu_us();
			if (how == REPLAY) {
				check(hpu_graph_replay(st[j].g, s), "replay");
			} else {
				step_ops(s, st[j].a, st[j].b, n[j]);
				check(hpu_mark_step(s), "mark_step");
			}
			if (i >= 0)
				st[j].t[i] = cpu_us() - c;
			check(hpu_stream_synchronize(s), "synchronize");
		}
	}
	check(hpu_stream_set_lazy(s, false), "eager");
	for (j = 0; j < count; j++) {
		if (first(s, st[j].a) != (float)((steps + 1) * n[j])) {
			fprintf(stderr, "bench-replay: %d ops x %d steps gave %g\n", n[j], steps + 1,
				first(s, st[j].a));
			exit(1);
		}
		least_median(st[j].t, steps, &least[j], &med[j]);
		hpu_graph_destroy(st[j].g);
		hpu_tensor_destroy(st[j].a);
		hpu_tensor_destroy(st[j].b);
		free(st[j].t);
	}
	free(order);
	free(st);
}

/* A graph of n ops on tensors of its own, run before timed steps. */
static struct hpu_graph *settle_graph(struct hpu_device *dev, struct hpu_stream *s, int n,
				      struct hpu_tensor **t)
{
	struct hpu_graph *g;

	check(hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ ELEMS }, &t[0]), "tensor");
	check(hpu_tensor_empty(dev, HPU_DT_F32, 1, (int64_t[]){ ELEMS }, &t[1]), "tensor");
	check(hpu_graph_create(dev, &g), "graph");
	check(hpu_graph_capture_begin(g, s), "capture");
	step_ops(s, t[0], t[1], n);
	check(hpu_graph_capture_end(g), "capture end");
	return g;
}

int main(void)
{
	static const int sizes[] = { 10, 100, 1000 };
	static const char *const names[] = { "replay", "lazy", "eager" };
	double host[3][3], med[3][3], own[3], after_long, m;
	struct hpu_tensor *settle_t[2], *long_t[2];
	struct hpu_graph *settle, *longer;
	struct hpu_device *dev;
	struct hpu_stream *s;
	int i, how;

	check(hpu_device_open(0, &dev), "open");
	check(hpu_stream_create(dev, &s), "stream");
	settle = settle_graph(dev, s, 1, settle_t);
	longer = settle_graph(dev, s, LONG, long_t);
	for (how = REPLAY; how <= EAGER; how++) {
		measure(dev, s, sizes, 3, how, settle, SETTLES, host[how], med[how]);
		for (i = 0; i < 3; i++) {
			printf("BENCH %s_%d_host_us %.1f us\n", names[how], sizes[i], host[how][i]);
			printf("BENCH %s_%d_host_median_us %.1f us\n", names[how], sizes[i],
			       med[how][i]);
		}
		fflush(stdout);
	}
	for (i = 0; i < 3; i++) {
		measure(dev, s, &sizes[i], 1, REPLAY, NULL, 0, &own[i], &m);
		printf("BENCH replay_%d_after_own_host_us %.1f us\n", sizes[i], own[i]);
	}
	measure(dev, s, sizes, 1, REPLAY, longer, 1, &after_long, &m);
	printf("BENCH replay_10_after_%d_host_us %.1f us\n", LONG, after_long);
	printf("BENCH replay_flatness %.2f ratio\n", host[REPLAY][2] / host[REPLAY][0]);
	printf("BENCH replay_flatness_after_own %.2f ratio\n", own[2] / own[0]);
	printf("BENCH replay_vs_lazy_1000 %.1f ratio\n", host[LAZY][2] / host[REPLAY][2]);
	for (i = 0; i < 2; i++) {
		hpu_tensor_destroy(settle_t[i]);
		hpu_tensor_destroy(long_t[i]);
	}
	hpu_graph_destroy(settle);
	hpu_graph_destroy(longer);
	hpu_stream_destroy(s);
	hpu_device_close(dev);
	return 0;
}
