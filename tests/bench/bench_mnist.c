// SPDX-License-Identifier: MIT
/*
 * bench-mnist: the seeds' table for our stack.  One epoch of the MNIST
 * example (userspace/examples/mnist.c) in each mode, each step synchronized
 * so that it can be timed; the example prints, per mode:
 *   mnist_<mode>_step_ms    mean time of a training step, enqueue to done
 *   mnist_<mode>_host_ms    mean CPU time the host spends enqueueing a step
 *   mnist_<mode>_accuracy   test accuracy after the epoch (fraction)
 * and this adds mnist_accuracy (eager mode's, the figure of the op library
 * alone), and the seed's comparison of lazy mode with capture and replay:
 *   mnist_host_ratio        lazy host time / capture_replay host time
 *   mnist_step_ratio        lazy step time / capture_replay step time
 * and the same against capture_bind (replays with the batch bound in place
 * of the static inputs instead of copied into them):
 *   mnist_bind_host_ratio   lazy host time / capture_bind host time
 *   mnist_bind_step_ratio   lazy step time / capture_bind step time
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mnist_run.h"

static const char *const modes[] = {
	"eager", "lazy", "graphed_callables", "capture_replay", "module_cacher", "capture_bind",
};
#define MODES (sizeof(modes) / sizeof(modes[0]))

/* lazy ÷ mode, as name_host_ratio and name_step_ratio. */
static void ratios(const char *name, const double *step, const double *host, size_t mode)
{
	if (host[mode] > 0 && step[mode] > 0) {
		printf("BENCH %s_host_ratio %.1f ratio\n", name, host[1] / host[mode]);
		printf("BENCH %s_step_ratio %.2f ratio\n", name, step[1] / step[mode]);
	}
}

int main(void)
{
	const char *top = getenv("HPU_TOP");
	double step[MODES] = { 0 }, host[MODES] = { 0 }, accuracy = 0;
	int failed = 0;
	size_t i;

	if (!top) {
		fprintf(stderr, "bench-mnist: HPU_TOP not set (run through tests/run-bench.sh)\n");
		return 1;
	}
	for (i = 0; i < MODES; i++) {
		char args[128], step_name[64], host_name[64], accuracy_name[64];
		const char *want[] = { step_name, host_name, accuracy_name };
		double got[3] = { 0, 0, 0 };

		snprintf(args, sizeof(args), "-B -m %s", modes[i]);
		snprintf(step_name, sizeof(step_name), "mnist_%s_step_ms", modes[i]);
		snprintf(host_name, sizeof(host_name), "mnist_%s_host_ms", modes[i]);
		snprintf(accuracy_name, sizeof(accuracy_name), "mnist_%s_accuracy", modes[i]);
		if (mnist_run(top, "", args, true, 3, want, got)) {
			fprintf(stderr, "bench-mnist: mode %s failed\n", modes[i]);
			failed = 1;
		}
		step[i] = got[0];
		host[i] = got[1];
		if (!i)
			accuracy = got[2];
	}
	if (accuracy > 0)
		printf("BENCH mnist_accuracy %.4f fraction\n", accuracy);
	/* lazy is modes[1], capture_replay modes[3], capture_bind modes[5]. */
	ratios("mnist", step, host, 3);
	ratios("mnist_bind", step, host, 5);
	return failed;
}
