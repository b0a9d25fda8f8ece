/* SPDX-License-Identifier: MIT */
/*
 * libhpu graphs (0.4): lazy mode, recipes, the recipe cache and metrics.
 *
 * Lazy mode.  On a lazy stream the ops of <hpu/hpu_tensor.h> are recorded,
 * not launched: they accumulate into a graph until hpu_mark_step(), or
 * until anything else needs their results or their order - a copy, a
 * tensor read on the host, an event, a synchronize or query, a CPU
 * fallback, switching the stream back to eager, destroying it.  The graph
 * is then compiled into a recipe (its ops scheduled onto the engines -
 * DMA, matrix engine, tensor engines - each engine a hardware queue, with
 * sync objects between them and intermediates in a workspace planned by
 * liveness) and launched.  Checks happen when an op is recorded, so an op
 * fails at its call, as in eager mode; results are bitwise those of eager
 * mode.  A tensor the caller destroyed before the flush whose graph writes
 * all of it first is an intermediate: it lives in the recipe's workspace,
 * its own memory is never touched.
 *
 * Recipes are cached per device, keyed by everything that affects what
 * they compute (ops, shapes, dtypes, strides, attributes, which operands
 * share memory, the compiler and firmware versions), not by where the
 * caller's tensors are: an identical step launches the cached recipe with
 * no compilation, as one submission.
 *
 * Environment (read when a stream first records, or a device opens):
 *   HPU_LAZY_MODE=1              streams start lazy (default 0: eager)
 *   HPU_MAX_COMPOUND_OP_SIZE=n   a graph holds at most n ops; recording
 *                                the next flushes it (default 1000)
 *   HPU_RECIPE_CACHE_SIZE=n      recipes cached per device (default 64)
 *   HPU_METRICS_FILE=path        the metrics are written there as JSON at
 *                                exit (or when libhpu is unloaded)
 */
#ifndef HPU_HPU_GRAPH_H
#define HPU_HPU_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <hpu/hpu.h>

#if defined(__cplusplus)
extern "C" {
#endif

/*
 * Makes the stream lazy or eager.  Going eager flushes what was recorded.
 * A stream is eager unless HPU_LAZY_MODE=1.
 */
HPU_API int hpu_stream_set_lazy(struct hpu_stream *stream, bool lazy);
HPU_API int hpu_stream_get_lazy(struct hpu_stream *stream, bool *lazy);

/*
 * Compiles (or finds in the cache) and launches the ops recorded on the
 * stream, then returns without waiting.  Nothing recorded, or an eager
 * stream: a no-op.
 */
HPU_API int hpu_mark_step(struct hpu_stream *stream);

/* Ops per graph on this stream (>= 1); 0 restores HPU_MAX_COMPOUND_OP_SIZE's. */
HPU_API int hpu_stream_set_max_graph_ops(struct hpu_stream *stream, unsigned int max_ops);

/*
 * Recipes the device keeps (>= 1); the least recently launched go first.
 * Lowering it evicts at once.
 */
HPU_API int hpu_recipe_cache_set_capacity(struct hpu_device *dev, unsigned int capacity);

/* ------------------------------------------------------------------------
 * Metrics, process-wide: each a named set of counters.
 *
 *   graph_compilation  TotalNumber, TotalTime, AvgTime (ns of host time)
 *   graph_launch       TotalNumber, TotalTime, AvgTime, Uploads (launches
 *                      that uploaded the recipe or re-bound its tensors),
 *                      Inline (launches that copied the command buffers
 *                      into their jobs: a device without CALL, or
 *                      HPU_RECIPE_INLINE=1)
 *   lazy_mode          Graphs (flushed), Ops (recorded), CapSplits
 *                      (flushes forced by the op cap)
 *   recipe_cache       Hits, Misses, Evictions, Entries
 *   cpu_fallback       Total, and one counter per op that fell back
 *   memory             InUse, Peak, Allocations, Reserved: device memory
 *                      of the open devices (bytes; Peak the most any one
 *                      device has had allocated, closed ones included)
 */

#define HPU_METRIC_NAME_MAX 32
#define HPU_METRIC_STATS_MAX 64

struct hpu_metric {
	unsigned int count; /* stats filled */
	struct {
		char name[HPU_METRIC_NAME_MAX];
		uint64_t value;
	} stats[HPU_METRIC_STATS_MAX];
};

/* The counters of metric name now.  -ENOENT for an unknown name. */
HPU_API int hpu_metric_global(const char *name, struct hpu_metric *metric);

/* One counter: hpu_metric_value("recipe_cache", "Hits", &v).  -ENOENT if either is unknown. */
HPU_API int hpu_metric_value(const char *name, const char *stat, uint64_t *value);

/* Writes every metric as one JSON object to path ("-": stdout). */
HPU_API int hpu_metrics_dump_json(const char *path);

#if defined(__cplusplus)
}
#endif

#endif /* HPU_HPU_GRAPH_H */
