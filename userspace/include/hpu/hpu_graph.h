/* SPDX-License-Identifier: MIT */
/*
 * libhpu graphs (0.5; replays with stand-in inputs 0.6): lazy mode, recipes,
 * the recipe cache, HPU graphs (capture and replay, graphed callables, a
 * per-shape graph cache), dynamic shapes and metrics.
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
 * Environment (read when a stream first records, a device opens, or - for
 * HPU_RECOMPILE_WARN - at each compilation):
 *   HPU_LAZY_MODE=1              streams start lazy (default 0: eager)
 *   HPU_MAX_COMPOUND_OP_SIZE=n   a graph holds at most n ops; recording
 *                                the next flushes it (default 1000)
 *   HPU_RECIPE_CACHE_SIZE=n      recipes cached per device (default 64)
 *   HPU_METRICS_FILE=path        the metrics are written there as JSON at
 *                                exit (or when libhpu is unloaded) by a
 *                                process that opened a device
 *   HPU_RECOMPILE_WARN=n         warn (once, on stderr) when one graph site
 *                                has compiled more than n recipes (default 8)
 *   HPU_RECIPE_CACHE_CONFIG=dir,clear,max_mb
 *                                recipes are also kept in files in dir
 *                                (created if missing), which processes may
 *                                share: a recipe missing from memory is
 *                                loaded from there before it is compiled,
 *                                and a compiled one is written there by a
 *                                thread of libhpu's (device close waits for
 *                                it).  clear (true or false): remove the
 *                                recipe files there at each device open,
 *                                in every process.  max_mb: the least
 *                                recently used files are removed to keep
 *                                them within 0.99 x max_mb MiB.  A file
 *                                loads only into the libhpu, driver,
 *                                firmware and device it was compiled for;
 *                                one that does not (or is damaged) is
 *                                compiled again and replaced.  A bad value:
 *                                a warning, no disk cache.  A write that
 *                                fails (disk full, read-only directory):
 *                                one warning, then new recipes stay in
 *                                memory only
 *   HPU_RECIPE_CACHE_LOG=1       a line on stderr per file the disk cache
 *                                removes ("Removed <id> successfully. Disk
 *                                cache size after removal: <n> bytes") or
 *                                ignores
 */
#ifndef HPU_HPU_GRAPH_H
#define HPU_HPU_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <hpu/hpu.h>
#include <hpu/hpu_tensor.h>

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
 * stream, then returns without waiting.  Nothing recorded, an eager
 * stream, or one capturing an HPU graph: a no-op.
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
 * HPU graphs: capture once, replay many times.
 *
 * Between hpu_graph_capture_begin() and hpu_graph_capture_end() the ops
 * enqueued on the capturing stream are recorded into the graph, not run
 * (whether the stream is lazy or eager).  The end compiles them into a
 * recipe (through the recipe cache) with memory of its own; each replay
 * then runs every captured op as one submission, whatever their number,
 * with no host work per op.  The tensors the ops used keep their device
 * memory: the graph holds it, so the caller may destroy them.  Those the
 * caller still holds at the end are the graph's static inputs and outputs
 * (write new data into an input before a replay, read an output after
 * it); those it destroyed during the capture, written before being read,
 * are intermediates in the graph's workspace.  Dropout draws fresh masks
 * at every replay (its RNG state lives in device memory).
 *
 * Only ops are captured: anything else on the capturing stream - a copy
 * to or from the host, an event, a synchronize or query, an op that falls
 * back to the host, a replay - fails with -EBUSY and leaves the capture
 * going.  A graph is used by one thread at a time.
 */
struct hpu_graph;

HPU_API int hpu_graph_create(struct hpu_device *dev, struct hpu_graph **graphp);
/* Its memory is reused once its replays have ended.  NULL is a no-op. */
HPU_API void hpu_graph_destroy(struct hpu_graph *graph);
/*
 * Starts recording stream's ops into graph; what a lazy stream recorded
 * before is launched first.  -EBUSY if either is capturing already,
 * -EINVAL if graph was captured before.
 */
HPU_API int hpu_graph_capture_begin(struct hpu_graph *graph, struct hpu_stream *stream);
/* Ends the capture and compiles the graph.  A failure leaves graph empty (replays fail). */
HPU_API int hpu_graph_capture_end(struct hpu_graph *graph);
/* Enqueues the captured ops on stream (any stream of the graph's device). */
HPU_API int hpu_graph_replay(struct hpu_graph *graph, struct hpu_stream *stream);

/* For hpu_graph_replay_with(): tensor stands in for static_input. */
struct hpu_graph_input {
	struct hpu_tensor *static_input;
	struct hpu_tensor *tensor;
};

/*
 * A replay that reads and writes other tensors in place of some of the
 * graph's static inputs, without copying them in: the seed's loop of
 * copying each batch into the static inputs and replaying, as one
 * submission.  A static input must be a whole tensor (as hpu_tensor_empty()
 * makes them) that the graph holds; its stand-in a contiguous tensor of the
 * same dtype and shape on the graph's device, whose memory the graph does
 * not hold.  The stand-ins count for this replay only.  Costs a replay plus
 * re-writing the addresses that moved.  -EINVAL, with a message, for any
 * other pair.
 */
HPU_API int hpu_graph_replay_with(struct hpu_graph *graph, struct hpu_stream *stream,
				  const struct hpu_graph_input *inputs, unsigned int count);

struct hpu_graph_info {
	uint32_t size;        /* in: sizeof(struct hpu_graph_info); out: bytes filled */
	uint32_t num_ops;     /* captured */
	uint32_t num_tensors; /* static inputs and outputs the graph keeps */
	uint32_t num_engines; /* hardware queues a replay uses */
	uint64_t workspace_bytes; /* intermediates */
	uint64_t device_bytes;    /* held by the graph: command buffers and workspace */
	uint64_t replays;
};

/* Fills info (the size rule of hpu_device_get_info()).  -EINVAL before the capture ended. */
HPU_API int hpu_graph_get_info(struct hpu_graph *graph, struct hpu_graph_info *info);

/*
 * A callable, as the graph helpers below take it: enqueues its ops on
 * stream, reading in[] and writing out[] - tensors it creates, which its
 * caller owns - and whatever state it keeps in ctx.
 */
typedef int (*hpu_callable_fn)(void *ctx, struct hpu_stream *stream,
			       struct hpu_tensor *const *in, struct hpu_tensor **out);

/* ------------------------------------------------------------------------
 * Graphed callables (torch.hpu.make_graphed_callables): a callable's
 * forward and its backward, which the framework supplies, each captured
 * into a graph of its own after warm-up runs, with static inputs and
 * outputs the graphed callable keeps.  Like a graph, it is used by one
 * thread at a time: each replay overwrites the outputs it handed out.
 */
struct hpu_graphed;

struct hpu_graphed_config {
	hpu_callable_fn forward;  /* in: num_inputs tensors; out: num_outputs */
	hpu_callable_fn backward; /* optional.  in: a gradient per output; out: num_grad_inputs */
	void *ctx;
	unsigned int num_inputs, num_outputs, num_grad_inputs;
	unsigned int warmup;      /* eager runs of forward (and backward) before the capture */
};

/*
 * Allocates static inputs shaped as sample_inputs (which it copies in),
 * runs the warm-up on stream, captures forward, then backward with static
 * gradients shaped as forward's outputs.  Returns once stream has run it all.
 */
HPU_API int hpu_make_graphed_callable(struct hpu_stream *stream,
				      const struct hpu_graphed_config *config,
				      struct hpu_tensor *const *sample_inputs,
				      struct hpu_graphed **graphedp);
/*
 * Copies inputs into the static inputs (skipping those that are them),
 * replays forward on stream and points outputs[] at the static outputs:
 * handles the graphed callable owns, overwritten by the next replay.
 * -EINVAL if an input's dtype or shape is not its static input's.
 */
HPU_API int hpu_graphed_forward(struct hpu_graphed *graphed, struct hpu_stream *stream,
				struct hpu_tensor *const *inputs, struct hpu_tensor **outputs);
/* The same for backward: grad_outputs in, grad_inputs out (if num_grad_inputs). */
HPU_API int hpu_graphed_backward(struct hpu_graphed *graphed, struct hpu_stream *stream,
				 struct hpu_tensor *const *grad_outputs,
				 struct hpu_tensor **grad_inputs);
HPU_API void hpu_graphed_destroy(struct hpu_graphed *graphed);

/* ------------------------------------------------------------------------
 * Module cacher (torch.hpu.ModuleCacher): a callable whose calls run as
 * HPU graphs, one per distinct key - the inputs' dtypes and shapes and the
 * bytes of its non-tensor arguments.  A new key is captured (with static
 * inputs of its own) and replayed; a known one copies the inputs in and
 * replays.  At most max_graphs are kept, and, if budget_bytes is set, at
 * most that much device memory (static tensors, workspace, command
 * buffers): the least recently called go first.  A cacher is used by one
 * thread at a time, as a graph is: each call overwrites its outputs.
 */
struct hpu_module_cacher;

typedef int (*hpu_module_fn)(void *ctx, struct hpu_stream *stream, struct hpu_tensor *const *in,
			     const void *args, struct hpu_tensor **out);

struct hpu_module_cacher_config {
	hpu_module_fn fn;
	void *ctx;
	unsigned int num_inputs, num_outputs;
	unsigned int max_graphs;   /* >= 1 */
	uint64_t budget_bytes;     /* 0: no budget */
};

HPU_API int hpu_module_cacher_create(struct hpu_device *dev,
				     const struct hpu_module_cacher_config *config,
				     struct hpu_module_cacher **cacherp);
/*
 * Runs fn on inputs and args (args_size bytes, part of the key) as a graph.
 * outputs[] are the graph's static outputs, owned by the cacher: valid
 * until its next call or destruction.
 */
HPU_API int hpu_module_cacher_call(struct hpu_module_cacher *cacher, struct hpu_stream *stream,
				   struct hpu_tensor *const *inputs, const void *args,
				   size_t args_size, struct hpu_tensor **outputs);

struct hpu_module_cacher_stats {
	uint32_t size;   /* in: sizeof(struct hpu_module_cacher_stats); out: bytes filled */
	uint32_t graphs; /* cached now */
	uint64_t calls, hits, captures, evictions;
	uint64_t bytes;  /* device memory of the cached graphs */
};

HPU_API int hpu_module_cacher_get_stats(struct hpu_module_cacher *cacher,
					struct hpu_module_cacher_stats *stats);
HPU_API void hpu_module_cacher_destroy(struct hpu_module_cacher *cacher);

/* ------------------------------------------------------------------------
 * Dynamic shapes.  Each distinct shape is a graph to compile; padding a
 * dynamic dim to a few bucket sizes bounds their number.  A graph site -
 * the same ops with other shapes - that compiles more than
 * HPU_RECOMPILE_WARN recipes gets one warning on stderr naming it.
 */

/*
 * The bucket of n: the least power of two >= max(n, min), capped at max
 * (itself a bucket); n for n > max.  -EINVAL unless n >= 1 and
 * 1 <= min <= max.
 */
HPU_API int64_t hpu_bucket_size(int64_t n, int64_t min, int64_t max);
/*
 * *outp = a new tensor shaped as in but for dim, of size elements, in's
 * elements first and value after (ops enqueued on stream).  size >= in's
 * size along dim.  Pad outside the graph the padded tensor feeds (e.g. on
 * an eager stream): recorded into it, the copy of in - of in's shape -
 * would make that graph one per shape again.
 */
HPU_API int hpu_tensor_pad(struct hpu_stream *stream, const struct hpu_tensor *in,
			   unsigned int dim, int64_t size, double value,
			   struct hpu_tensor **outp);

/* ------------------------------------------------------------------------
 * Metrics, process-wide: each a named set of counters.
 *
 *   graph_compilation  TotalNumber, TotalTime, AvgTime (ns of host time),
 *                      RecompileWarnings (warnings about sites), Repeats
 *                      (compilations of a graph compiled before: its
 *                      recipe was evicted, or threads missed on it at once)
 *   graph_launch       TotalNumber, TotalTime, AvgTime, Uploads (launches
 *                      that uploaded the recipe or re-bound its tensors),
 *                      UploadBytes (what they copied: the whole recipe, or
 *                      the words of the tensors that moved),
 *                      Inline (launches that copied the command buffers
 *                      into their jobs: a device without CALL, or
 *                      HPU_RECIPE_INLINE=1)
 *   lazy_mode          Graphs (flushed), Ops (recorded), CapSplits
 *                      (flushes forced by the op cap)
 *   hpu_graph          Captures, CapturedOps, Replays, ReplayTime (ns of
 *                      host time), AvgReplayTime
 *   recipe_cache       Hits, Misses, Evictions, Entries
 *   recipe_cache_disk  Hits, Misses (looked up on disk after missing in
 *                      memory), Writes, Evictions, BytesRead,
 *                      BytesWritten, Ignored (files found but not loaded:
 *                      damaged, or of another version or device),
 *                      WriteFailures
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
