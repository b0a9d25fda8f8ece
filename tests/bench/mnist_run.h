/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks that run the MNIST example (bench-mnist, bench-cache):
 * one process of it, its BENCH lines read back by name.
 */
#ifndef HPU_BENCH_MNIST_RUN_H
#define HPU_BENCH_MNIST_RUN_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Runs "<env> $HPU_TOP/build/userspace/bin/mnist <args>"; each BENCH line
 * whose name ends in suffixes[i] sets values[i] (left alone otherwise),
 * and is passed on to stdout if echo.  0 if the example exited with 0.
 */
static inline int mnist_run(const char *top, const char *env, const char *args, bool echo,
			    unsigned int n, const char *const *suffixes, double *values)
{
	char cmd[8400], line[512], name[128];
	unsigned int i;
	size_t len;
	double v;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s %s/build/userspace/bin/mnist %s", env, top, args);
	p = popen(cmd, "r");
	if (!p) {
		perror(cmd);
		return -1;
	}
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "BENCH %127s %lf", name, &v) != 2)
			continue;
		if (echo)
			fputs(line, stdout);
		len = strlen(name);
		for (i = 0; i < n; i++) {
			size_t sl = strlen(suffixes[i]);

			if (len >= sl && !strcmp(name + len - sl, suffixes[i]))
				values[i] = v;
		}
	}
	fflush(stdout);
	return pclose(p) ? -1 : 0;
}

#endif /* HPU_BENCH_MNIST_RUN_H */
