/* SPDX-License-Identifier: MIT */
/*
 * Host unit test of libhpu's metrics (top/hpu_metrics.c), built from its
 * sources with no device open: the stats that the layers' counters
 * (util/hpu_counters.c) feed, each read by its name, the disk cache's in
 * their order; hpu_metric_global()'s refusal of an unknown name; and the
 * JSON dump.  Prints TAP.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../userspace/lib/top/top.h"
#include "test_libhpu_tap.h"

/* The op names of the fallback metric (ops/hpu_op_run.c, whose table needs the whole op layer). */
const char *hpu_op_name(int index)
{
	return index == 0 ? "copy" : NULL;
}

int hpu_op_index(const char *name)
{
	return strcmp(name, "copy") ? -1 : 0;
}

static uint64_t value(const char *metric, const char *stat)
{
	uint64_t v = 0;

	EXPECT(hpu_metric_value(metric, stat, &v) == 0);
	return v;
}

/* Each stat a counter feeds moves with it, and only by what was added. */
static void test_counters_by_name(void)
{
	static const struct {
		const char *metric, *stat;
		enum hpu_counter counter;
	} stats[] = {
		{ "graph_compilation", "TotalNumber", HPU_C_COMPILES },
		{ "graph_compilation", "RecompileWarnings", HPU_C_RECOMPILE_WARNINGS },
		{ "graph_compilation", "Repeats", HPU_C_REPEATS },
		{ "recipe_cache", "Hits", HPU_C_HITS },
		{ "recipe_cache", "Misses", HPU_C_MISSES },
		{ "recipe_cache", "Evictions", HPU_C_EVICTIONS },
		{ "recipe_cache", "Entries", HPU_C_ENTRIES },
		{ "recipe_cache_disk", "Hits", HPU_C_DISK_HITS },
		{ "recipe_cache_disk", "Misses", HPU_C_DISK_MISSES },
		{ "recipe_cache_disk", "Writes", HPU_C_DISK_WRITES },
		{ "recipe_cache_disk", "Evictions", HPU_C_DISK_EVICTIONS },
		{ "recipe_cache_disk", "BytesRead", HPU_C_DISK_BYTES_READ },
		{ "recipe_cache_disk", "BytesWritten", HPU_C_DISK_BYTES_WRITTEN },
		{ "recipe_cache_disk", "Ignored", HPU_C_DISK_IGNORED },
		{ "recipe_cache_disk", "WriteFailures", HPU_C_DISK_WRITE_FAILURES },
	};
	uint64_t before[ARRAY_SIZE(stats)];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(stats); i++)
		before[i] = value(stats[i].metric, stats[i].stat);
	for (i = 0; i < ARRAY_SIZE(stats); i++)
		hpu_counter_add(stats[i].counter, i + 1);
	for (i = 0; i < ARRAY_SIZE(stats); i++) {
		if (value(stats[i].metric, stats[i].stat) - before[i] == i + 1)
			continue;
		printf("#   %s.%s does not read its counter\n", stats[i].metric, stats[i].stat);
		test_failed = true;
	}
}

static void test_disk_stats_in_order(void)
{
	static const char *const names[] = { "Hits", "Misses", "Writes", "Evictions", "BytesRead",
					     "BytesWritten", "Ignored", "WriteFailures" };
	struct hpu_metric m;
	unsigned int i;

	EXPECT(hpu_metric_global("recipe_cache_disk", &m) == 0);
	EXPECT(m.count == ARRAY_SIZE(names));
	for (i = 0; i < m.count && i < ARRAY_SIZE(names); i++)
		EXPECT_STR(m.stats[i].name, names[i]);
}

static void test_metrics_as_json(void)
{
	char path[] = "/tmp/hpu_metrics_XXXXXX", buf[2048];
	struct hpu_metric m;
	size_t n = 0;
	FILE *f;
	int fd = mkstemp(path);

	/* From zero, whatever the tests before added. */
	hpu_counters_reset();
	hpu_counter_add(HPU_C_COMPILES, 2);
	hpu_counter_add(HPU_C_COMPILE_NS, 3000);
	EXPECT(hpu_metric_global("graph_compilation", &m) == 0);
	EXPECT(m.count == 5 && !strcmp(m.stats[2].name, "AvgTime") && m.stats[2].value == 1500);
	EXPECT(hpu_metric_global("nonsense", &m) == -ENOENT);
	EXPECT_STR(hpu_last_error(), "hpu_metric_global: no metric is named \"nonsense\"");
	EXPECT(fd >= 0);
	EXPECT(hpu_metrics_dump_json(path) == 0);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	EXPECT(strstr(buf, "\"graph_compilation\": {\"TotalNumber\": 2, \"TotalTime\": 3000, "
			   "\"AvgTime\": 1500, \"RecompileWarnings\": 0, \"Repeats\": 0}") != NULL);
	EXPECT(strstr(buf, "\"cpu_fallback\": {\"Total\": 0}") != NULL);
	unlink(path);
}

static const struct tap_test tests[] = {
	{ "stats fed by counters read them by name", test_counters_by_name },
	{ "the disk cache's stats, in order", test_disk_stats_in_order },
	{ "metrics read by name and written as JSON", test_metrics_as_json },
};

int main(void)
{
	unsigned int n = 0;

	printf("TAP version 13\n1..%zu\n", ARRAY_SIZE(tests));
	return tap_run(tests, ARRAY_SIZE(tests), &n) ? 1 : 0;
}
