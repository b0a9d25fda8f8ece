// SPDX-License-Identifier: MIT
/*
 * bench-mnist: the seeds' table for our stack.  One epoch of the MNIST
 * example (userspace/examples/mnist.c) in each mode, each step synchronized
 * so that it can be timed; the example prints, per mode:
 *   mnist_<mode>_step_ms    mean time of a training step, enqueue to done
 *   mnist_<mode>_host_ms    mean host time of a step: its calls, which return
 *                           without waiting for the device, first to last (a
 *                           profile of the host, as the seed's figures are)
 *   mnist_<mode>_host_cpu_ms the thread's CPU time over the same calls, read
 *                           by two system calls that themselves cost
 *                           several microseconds under the emulator
 *   mnist_<mode>_accuracy   test accuracy after the epoch (fraction)
 * and this adds mnist_accuracy (eager mode's, the figure of the op library
 * alone), and the seed's comparison of lazy mode with capture and replay:
 *   mnist_host_ratio        lazy host time / capture_replay host time
 *   mnist_step_ratio        lazy step time / capture_replay step time
 *   mnist_host_cpu_ratio    lazy CPU time / capture_replay CPU time
 * and the same against capture_bind (replays with the batch bound in place
 * of the static inputs instead of copied into them):
 *   mnist_bind_host_ratio   lazy host time / capture_bind host time
 *   mnist_bind_step_ratio   lazy step time / capture_bind step time
 * The modes' epochs run one after the other, while the host's load changes
 * by factors of 2-3 over seconds here, so the ratios come from ROUNDS
 * further rounds of ROUND_STEPS steps of the three modes back to back: each
 * the median of its rounds' ratios, printed with the least and the most
 * (_min, _max).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"
#include "mnist_run.h"

static const char *const modes[] = {
	"eager", "lazy", "graphed_callables", "capture_replay", "module_cacher", "capture_bind",
};
#define MODES (sizeof(modes) / sizeof(modes[0]))
/* In the rounds: lazy, capture_replay, capture_bind. */
static const unsigned int round_modes[] = { 1, 3, 5 };
#define ROUND_MODES (sizeof(round_modes) / sizeof(round_modes[0]))
#define ROUNDS 5
#define ROUND_STEPS "100"

/* name, then its median, least and most of n values (sorted here), with digits decimals. */
static void print_spread(const char *name, double *v, unsigned int n, int digits)
{
	bench_sort(v, n);
	printf("BENCH %s %.*f ratio\n", name, digits, v[n / 2]);
	printf("BENCH %s_min %.*f ratio\n", name, digits, v[0]);
	printf("BENCH %s_max %.*f ratio\n", name, digits, v[n - 1]);
}

/*
 * Rounds of the three modes back to back; lazy ÷ capture_replay and
 * lazy ÷ capture_bind, host and step time, and lazy ÷ capture_replay CPU
 * time, per round.  0 if all ran.
 */
static int rounds(const char *top)
{
	double ratio[5][ROUNDS];
	unsigned int r, i, done = 0;
	int failed = 0;

	for (r = 0; r < ROUNDS; r++) {
		double step[ROUND_MODES] = { 0 }, host[ROUND_MODES] = { 0 }, cpu[ROUND_MODES] = { 0 };
		bool all = true;

		for (i = 0; i < ROUND_MODES; i++) {
			const char *want[] = { "_step_ms", "_host_ms", "_host_cpu_ms" };
			double got[3] = { 0, 0, 0 };
			char args[128];

			snprintf(args, sizeof(args), "-B -s " ROUND_STEPS " -m %s", modes[round_modes[i]]);
			if (mnist_run(top, "", args, false, 3, want, got)) {
				fprintf(stderr, "bench-mnist: round %u, mode %s failed\n", r,
					modes[round_modes[i]]);
				failed = 1;
			}
			step[i] = got[0];
			host[i] = got[1];
			cpu[i] = got[2];
			all &= got[0] > 0 && got[1] > 0 && got[2] > 0;
		}
		if (!all)
			continue;
		ratio[0][done] = host[0] / host[1];
		ratio[1][done] = step[0] / step[1];
		ratio[2][done] = host[0] / host[2];
		ratio[3][done] = step[0] / step[2];
		ratio[4][done] = cpu[0] / cpu[1];
		done++;
	}
	if (done) {
		print_spread("mnist_host_ratio", ratio[0], done, 1);
		print_spread("mnist_step_ratio", ratio[1], done, 2);
		print_spread("mnist_bind_host_ratio", ratio[2], done, 1);
		print_spread("mnist_bind_step_ratio", ratio[3], done, 2);
		print_spread("mnist_host_cpu_ratio", ratio[4], done, 1);
	}
	return failed;
}

int main(void)
{
	const char *top = getenv("HPU_TOP");
	double accuracy = 0;
	int failed = 0;
	size_t i;

	if (!top) {
		fprintf(stderr, "bench-mnist: HPU_TOP not set (run through tests/run-bench.sh)\n");
		return 1;
	}
	for (i = 0; i < MODES; i++) {
		char args[128], accuracy_name[64];
		const char *want[] = { accuracy_name };
		double got = 0;

		snprintf(args, sizeof(args), "-B -m %s", modes[i]);
		snprintf(accuracy_name, sizeof(accuracy_name), "mnist_%s_accuracy", modes[i]);
		if (mnist_run(top, "", args, true, 1, want, &got)) {
			fprintf(stderr, "bench-mnist: mode %s failed\n", modes[i]);
			failed = 1;
		}
		if (!i)
			accuracy = got;
	}
	if (accuracy > 0)
		printf("BENCH mnist_accuracy %.4f fraction\n", accuracy);
	return rounds(top) || failed;
}
