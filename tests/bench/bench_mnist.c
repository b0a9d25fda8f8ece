// SPDX-License-Identifier: MIT
/*
 * bench-mnist: one epoch of the MNIST example (userspace/examples/mnist.c)
 * in eager mode, each step synchronized so it can be timed:
 *   mnist_step_total_us  mean wall time of a training step, enqueue to done
 *   mnist_step_host_us   mean time the host spends enqueuing a step's ops
 *   mnist_accuracy       test accuracy after the epoch (fraction)
 * The example prints the BENCH lines itself (-B); this runs it from the tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	const char *top = getenv("HPU_TOP");
	char path[4096];

	if (!top) {
		fprintf(stderr, "bench-mnist: HPU_TOP not set (run through tests/run-bench.sh)\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/build/userspace/bin/mnist", top);
	fflush(stdout);
	execl(path, "mnist", "-B", (char *)NULL);
	perror(path);
	return 1;
}
