/* SPDX-License-Identifier: MIT */
/*
 * Process-wide counters, atomics bumped where things happen and reported
 * by the metrics (top/hpu_metrics.c); and the clock and environment
 * numbers they and the layers use.
 */
#include <stdlib.h>
#include <time.h>

#include "../util/util.h"

static atomic_int_fast64_t hpu_counters[HPU_COUNTERS];

void hpu_counter_add(enum hpu_counter c, int64_t v)
{
	atomic_fetch_add(&hpu_counters[c], v);
}

uint64_t hpu_counter_get(enum hpu_counter c)
{
	return (uint64_t)atomic_load(&hpu_counters[c]);
}

void hpu_counters_reset(void)
{
	unsigned int i;

	for (i = 0; i < HPU_COUNTERS; i++)
		atomic_store(&hpu_counters[i], 0);
}

uint64_t hpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

unsigned int hpu_env_uint(const char *name, unsigned int def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	return *end || !n || n > UINT32_MAX ? def : (unsigned int)n;
}
