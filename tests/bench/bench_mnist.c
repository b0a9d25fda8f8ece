// SPDX-License-Identifier: MIT
/*
 * bench-mnist: the seeds' table for our stack.  One epoch of the MNIST
 * example (userspace/examples/mnist.c) in each mode, each step synchronized
 * so that it can be timed; the example prints, per mode:
 *   mnist_<mode>_step_ms    mean time of a training step, enqueue to done
 *   mnist_<mode>_host_ms    mean CPU time the host spends enqueueing a step
 *   mnist_<mode>_accuracy   test accuracy after the epoch (fraction)
 * and this adds the seed's comparison of lazy mode with capture and replay:
 *   mnist_host_ratio        lazy host time / capture_replay host time
 *   mnist_step_ratio        lazy step time / capture_replay step time
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mnist_run.h"

static const char *const modes[] = {
	"eager", "lazy", "graphed_callables", "capture_replay", "module_cacher",
};

int main(void)
{
	const char *top = getenv("HPU_TOP");
	double step[5] = { 0 }, host[5] = { 0 };
	int failed = 0;
	size_t i;

	if (!top) {
		fprintf(stderr, "bench-mnist: HPU_TOP not set (run through tests/run-bench.sh)\n");
		return 1;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char args[128], step_name[64], host_name[64];
		const char *want[] = { step_name, host_name };
		double got[2] = { 0, 0 };

		snprintf(args, sizeof(args), "-B -m %s", modes[i]);
		snprintf(step_name, sizeof(step_name), "mnist_%s_step_ms", modes[i]);
		snprintf(host_name, sizeof(host_name), "mnist_%s_host_ms", modes[i]);
		if (mnist_run(top, "", args, true, 2, want, got)) {
			fprintf(stderr, "bench-mnist: mode %s failed\n", modes[i]);
			failed = 1;
		}
		step[i] = got[0];
		host[i] = got[1];
	}
	/* lazy is modes[1], capture_replay modes[3]. */
	if (host[3] > 0 && step[3] > 0) {
		printf("BENCH mnist_host_ratio %.1f ratio\n", host[1] / host[3]);
		printf("BENCH mnist_step_ratio %.2f ratio\n", step[1] / step[3]);
	}
	return failed;
}
