/* SPDX-License-Identifier: MIT */
/*
 * Metrics: process-wide counters, named as the seeds' metric_global()
 * ("graph_compilation" with TotalNumber, TotalTime, AvgTime), read with
 * hpu_metric_global() or written as JSON - on request, or at exit when
 * HPU_METRICS_FILE names a file.  The counters are atomics bumped where
 * things happen; the fallback and memory metrics are read from the open
 * devices, and a device that closes leaves its fallback counts and memory
 * peak behind, so the exit dump still has them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hpu/hpu_graph.h>

#include "../top/top.h"

/* The open devices, and what closed ones left. */
static pthread_mutex_t hpu_metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hpu_device **hpu_devices;
static unsigned int hpu_num_devices, hpu_cap_devices;
static uint64_t hpu_closed_fallbacks[HPU_FALLBACK_OPS];
static uint64_t hpu_closed_peak;
/* A device was opened in this process (since its fork): it writes HPU_METRICS_FILE at exit. */
static bool hpu_opened;

void hpu_metrics_device_open(struct hpu_device *dev)
{
	pthread_mutex_lock(&hpu_metrics_lock);
	if (hpu_num_devices == hpu_cap_devices) {
		unsigned int cap = hpu_cap_devices ? 2 * hpu_cap_devices : 4;
		struct hpu_device **d = realloc(hpu_devices, cap * sizeof(*d));

		/* Without room the device just goes uncounted. */
		if (d) {
			hpu_devices = d;
			hpu_cap_devices = cap;
		}
	}
	if (hpu_num_devices < hpu_cap_devices)
		hpu_devices[hpu_num_devices++] = dev;
	hpu_opened = true;
	pthread_mutex_unlock(&hpu_metrics_lock);
}

void hpu_metrics_device_close(struct hpu_device *dev)
{
	struct hpu_mem_cache_stats mem;
	unsigned int i, k;

	pthread_mutex_lock(&hpu_metrics_lock);
	for (i = k = 0; i < hpu_num_devices; i++)
		if (hpu_devices[i] != dev)
			hpu_devices[k++] = hpu_devices[i];
	if (k < hpu_num_devices) {
		for (i = 0; i < HPU_FALLBACK_OPS; i++)
			hpu_closed_fallbacks[i] += atomic_load(&dev->fallback->counts[i]);
		hpu_suballoc_stats(dev->mem, &mem);
		if (mem.peak_allocated > hpu_closed_peak)
			hpu_closed_peak = mem.peak_allocated;
	}
	hpu_num_devices = k;
	pthread_mutex_unlock(&hpu_metrics_lock);
}

static void hpu_stat(struct hpu_metric *m, const char *name, uint64_t value)
{
	if (m->count == HPU_METRIC_STATS_MAX)
		return;
	snprintf(m->stats[m->count].name, sizeof(m->stats[0].name), "%s", name);
	m->stats[m->count++].value = value;
}

static void hpu_timed(struct hpu_metric *m, enum hpu_counter count, enum hpu_counter ns)
{
	uint64_t n = hpu_counter_get(count), t = hpu_counter_get(ns);

	hpu_stat(m, "TotalNumber", n);
	hpu_stat(m, "TotalTime", t);
	hpu_stat(m, "AvgTime", n ? t / n : 0);
}

static void hpu_metric_compilation(struct hpu_metric *m)
{
	hpu_timed(m, HPU_C_COMPILES, HPU_C_COMPILE_NS);
	hpu_stat(m, "RecompileWarnings", hpu_counter_get(HPU_C_RECOMPILE_WARNINGS));
	hpu_stat(m, "Repeats", hpu_counter_get(HPU_C_REPEATS));
}

static void hpu_metric_launch(struct hpu_metric *m)
{
	hpu_timed(m, HPU_C_LAUNCHES, HPU_C_LAUNCH_NS);
	hpu_stat(m, "Uploads", hpu_counter_get(HPU_C_UPLOADS));
	hpu_stat(m, "UploadBytes", hpu_counter_get(HPU_C_UPLOAD_BYTES));
	hpu_stat(m, "Inline", hpu_counter_get(HPU_C_INLINE));
}

static void hpu_metric_lazy(struct hpu_metric *m)
{
	hpu_stat(m, "Graphs", hpu_counter_get(HPU_C_GRAPHS));
	hpu_stat(m, "Ops", hpu_counter_get(HPU_C_OPS));
	hpu_stat(m, "CapSplits", hpu_counter_get(HPU_C_CAP_SPLITS));
}

static void hpu_metric_hpu_graph(struct hpu_metric *m)
{
	uint64_t n = hpu_counter_get(HPU_C_REPLAYS), t = hpu_counter_get(HPU_C_REPLAY_NS);

	hpu_stat(m, "Captures", hpu_counter_get(HPU_C_CAPTURES));
	hpu_stat(m, "CapturedOps", hpu_counter_get(HPU_C_CAPTURED_OPS));
	hpu_stat(m, "Replays", n);
	hpu_stat(m, "ReplayTime", t);
	hpu_stat(m, "AvgReplayTime", n ? t / n : 0);
}

static void hpu_metric_cache(struct hpu_metric *m)
{
	hpu_stat(m, "Hits", hpu_counter_get(HPU_C_HITS));
	hpu_stat(m, "Misses", hpu_counter_get(HPU_C_MISSES));
	hpu_stat(m, "Evictions", hpu_counter_get(HPU_C_EVICTIONS));
	hpu_stat(m, "Entries", hpu_counter_get(HPU_C_ENTRIES));
}

static void hpu_metric_disk(struct hpu_metric *m)
{
	/* In the order of their counters, from HPU_C_DISK_HITS on. */
	static const char *const names[] = { "Hits", "Misses", "Writes", "Evictions", "BytesRead",
					     "BytesWritten", "Ignored", "WriteFailures" };
	unsigned int i;

	for (i = 0; i < HPU_ARRAY_SIZE(names); i++)
		hpu_stat(m, names[i], hpu_counter_get(HPU_C_DISK_HITS + i));
}

/* With hpu_metrics_lock held. */
static void hpu_metric_fallback(struct hpu_metric *m)
{
	uint64_t counts[HPU_FALLBACK_OPS], total = 0;
	unsigned int i, d;

	for (i = 0; i < HPU_FALLBACK_OPS; i++) {
		counts[i] = hpu_closed_fallbacks[i];
		for (d = 0; d < hpu_num_devices; d++)
			counts[i] += atomic_load(&hpu_devices[d]->fallback->counts[i]);
		total += counts[i];
	}
	hpu_stat(m, "Total", total);
	for (i = 0; i < HPU_FALLBACK_OPS; i++)
		if (counts[i] && hpu_op_name((int)i))
			hpu_stat(m, hpu_op_name((int)i), counts[i]);
}

/* With hpu_metrics_lock held. */
static void hpu_metric_memory(struct hpu_metric *m)
{
	struct hpu_mem_cache_stats sum = { .peak_allocated = hpu_closed_peak }, one;
	unsigned int d;

	for (d = 0; d < hpu_num_devices; d++) {
		hpu_suballoc_stats(hpu_devices[d]->mem, &one);
		sum.allocated += one.allocated;
		sum.allocations += one.allocations;
		sum.reserved += one.reserved;
		if (one.peak_allocated > sum.peak_allocated)
			sum.peak_allocated = one.peak_allocated;
	}
	hpu_stat(m, "InUse", sum.allocated);
	hpu_stat(m, "Peak", sum.peak_allocated);
	hpu_stat(m, "Allocations", sum.allocations);
	hpu_stat(m, "Reserved", sum.reserved);
}

static const struct {
	const char *name;
	void (*fill)(struct hpu_metric *m);
} hpu_metrics[] = {
	{ "graph_compilation", hpu_metric_compilation },
	{ "graph_launch", hpu_metric_launch },
	{ "lazy_mode", hpu_metric_lazy },
	{ "hpu_graph", hpu_metric_hpu_graph },
	{ "recipe_cache", hpu_metric_cache },
	{ "recipe_cache_disk", hpu_metric_disk },
	{ "cpu_fallback", hpu_metric_fallback },
	{ "memory", hpu_metric_memory },
};

static int hpu_metric_fill(const char *name, struct hpu_metric *m)
{
	size_t i;

	for (i = 0; i < HPU_ARRAY_SIZE(hpu_metrics); i++) {
		if (strcmp(hpu_metrics[i].name, name))
			continue;
		m->count = 0;
		pthread_mutex_lock(&hpu_metrics_lock);
		hpu_metrics[i].fill(m);
		pthread_mutex_unlock(&hpu_metrics_lock);
		return 0;
	}
	return hpu_error_set(ENOENT, "no metric is named \"%s\"", name);
}

int hpu_metric_global(const char *name, struct hpu_metric *metric)
{
	if (!name || !metric)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL",
							    name ? "metric" : "name"));
	return hpu_error_in(__func__, hpu_metric_fill(name, metric));
}

int hpu_metric_value(const char *name, const char *stat, uint64_t *value)
{
	struct hpu_metric m;
	unsigned int i;
	int ret;

	if (!name || !stat || !value)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL",
							    !name ? "name" : !stat ? "stat" : "value"));
	ret = hpu_metric_fill(name, &m);
	for (i = 0; !ret && i < m.count; i++) {
		if (!strcmp(m.stats[i].name, stat)) {
			*value = m.stats[i].value;
			return 0;
		}
	}
	if (!ret && !strcmp(name, "cpu_fallback") && hpu_op_index(stat) >= 0) {
		*value = 0; /* an op that never fell back */
		return 0;
	}
	if (!ret)
		ret = hpu_error_set(ENOENT, "metric %s has no \"%s\"", name, stat);
	return hpu_error_in(__func__, ret);
}

static int hpu_metrics_write(FILE *f)
{
	struct hpu_metric m;
	size_t i;
	unsigned int k;

	fputs("{", f);
	for (i = 0; i < HPU_ARRAY_SIZE(hpu_metrics); i++) {
		hpu_metric_fill(hpu_metrics[i].name, &m);
		fprintf(f, "%s\n  \"%s\": {", i ? "," : "", hpu_metrics[i].name);
		for (k = 0; k < m.count; k++)
			fprintf(f, "%s\"%s\": %" PRIu64, k ? ", " : "", m.stats[k].name,
				m.stats[k].value);
		fputs("}", f);
	}
	fputs("\n}\n", f);
	return ferror(f) ? hpu_error_set(EIO, "writing the metrics failed") : 0;
}

int hpu_metrics_dump_json(const char *path)
{
	FILE *f;
	int ret;

	if (!path)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "path is NULL"));
	if (!strcmp(path, "-")) {
		ret = hpu_metrics_write(stdout);
		fflush(stdout);
		return hpu_error_in(__func__, ret);
	}
	f = fopen(path, "w");
	if (!f)
		return hpu_error_in(__func__, hpu_error_errno("cannot open %s", path));
	ret = hpu_metrics_write(f);
	if (fclose(f) && !ret)
		ret = hpu_error_errno("cannot write %s", path);
	return hpu_error_in(__func__, ret);
}

/*
 * The child of a fork() is another process: its metrics start from zero,
 * the parent's devices are not its own (their handles stay the parent's),
 * and it writes HPU_METRICS_FILE at exit only if it opens a device itself,
 * so the workers a training process forks leave the parent's file alone.
 */
void hpu_metrics_fork(enum hpu_fork_phase phase)
{
	if (phase == HPU_FORK_PREPARE) {
		pthread_mutex_lock(&hpu_metrics_lock);
		return;
	}
	if (phase == HPU_FORK_CHILD) {
		hpu_counters_reset();
		hpu_num_devices = 0;
		memset(hpu_closed_fallbacks, 0, sizeof(hpu_closed_fallbacks));
		hpu_closed_peak = 0;
		hpu_opened = false;
	}
	pthread_mutex_unlock(&hpu_metrics_lock);
}

/* At exit, and when a program unloads libhpu: a destructor, not atexit(), survives dlclose(). */
__attribute__((destructor)) static void hpu_metrics_at_exit(void)
{
	const char *path = getenv("HPU_METRICS_FILE");
	bool opened;

	pthread_mutex_lock(&hpu_metrics_lock);
	opened = hpu_opened;
	pthread_mutex_unlock(&hpu_metrics_lock);
	if (opened && path && *path && hpu_metrics_dump_json(path))
		fprintf(stderr, "hpu: %s\n", hpu_last_error());
}
