/* SPDX-License-Identifier: MIT */
/*
 * What a benchmark's host half (tests/bench/host_<bench>.c) printed before
 * the guest booted: lines "<key> <value>" in $HPU_TOP/build/bench-host/<bench>.txt,
 * read by the guest half through its read-only view of the host.
 */
#ifndef BENCH_HOST_H
#define BENCH_HOST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last value printed for key; 0 if the file or the key is missing. */
static inline double bench_host_value(const char *bench, const char *key)
{
	const char *top = getenv("HPU_TOP");
	char path[4096], name[64];
	double v, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/build/bench-host/%s.txt", top ? top : ".", bench);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%63s %lf", name, &v) == 2)
		if (!strcmp(name, key))
			found = v;
	fclose(f);
	return found;
}

#endif /* BENCH_HOST_H */
