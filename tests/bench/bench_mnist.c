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

static const char *const modes[] = {
	"eager", "lazy", "graphed_callables", "capture_replay", "module_cacher",
};

/* Runs the example in mode, passing its BENCH lines on; *step_ms and *host_ms from them. */
static int run(const char *top, const char *mode, double *step_ms, double *host_ms)
{
	char cmd[4200], line[512], name[128];
	double v;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s/build/userspace/bin/mnist -B -m %s", top, mode);
	p = popen(cmd, "r");
	if (!p) {
		perror(cmd);
		return -1;
	}
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "BENCH %127s %lf", name, &v) != 2)
			continue;
		fputs(line, stdout);
		if (strstr(name, "_step_ms"))
			*step_ms = v;
		else if (strstr(name, "_host_ms"))
			*host_ms = v;
	}
	fflush(stdout);
	return pclose(p) ? -1 : 0;
}

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
		if (run(top, modes[i], &step[i], &host[i])) {
			fprintf(stderr, "bench-mnist: mode %s failed\n", modes[i]);
			failed = 1;
		}
	}
	/* lazy is modes[1], capture_replay modes[3]. */
	if (host[3] > 0 && step[3] > 0) {
		printf("BENCH mnist_host_ratio %.1f ratio\n", host[1] / host[3]);
		printf("BENCH mnist_step_ratio %.2f ratio\n", step[1] / step[3]);
	}
	return failed;
}
