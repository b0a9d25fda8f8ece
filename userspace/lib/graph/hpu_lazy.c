/* SPDX-License-Identifier: MIT */
/*
 * Lazy mode: a lazy stream records its ops into a graph instead of
 * launching them, and flushes the graph - compiled, or found in the recipe
 * cache, then launched - at hpu_mark_step() or when anything else needs
 * the ops done or ordered (hpu_stream_submit() and the synchronizing calls
 * flush first).  Everything here runs with the stream's lock held, so a
 * graph is the stream's alone.
 *
 * The graph is the IR of hpu_ir.c: the caller may destroy tensors before
 * the flush, and those whose last holder is the graph become intermediates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../graph/graph.h"

#define HPU_MAX_OPS_DEFAULT 1000u

int hpu_recording_init(struct hpu_stream *s)
{
	s->recording = calloc(1, sizeof(*s->recording));
	return s->recording ? 0 : hpu_error_set(ENOMEM, "out of memory");
}

void hpu_recording_release(struct hpu_stream *s)
{
	hpu_ir_free(s->recording->graph);
	free(s->recording);
}

bool hpu_stream_lazy(struct hpu_stream *s)
{
	struct hpu_recording *r = s->recording;

	if (!r->lazy)
		r->lazy = hpu_env_uint("HPU_LAZY_MODE", 0) == 1 ? 1 : 2;
	return r->lazy == 1;
}

int hpu_lazy_record(struct hpu_stream *s, const struct hpu_op *op)
{
	struct hpu_recording *r = s->recording;
	unsigned int max = r->max_graph_ops ? r->max_graph_ops
					    : hpu_env_uint("HPU_MAX_COMPOUND_OP_SIZE",
							   HPU_MAX_OPS_DEFAULT);
	int ret;

	if (!r->graph) {
		r->graph = calloc(1, sizeof(*r->graph));
		if (!r->graph)
			return hpu_error_set(ENOMEM, "out of memory");
	}
	if (r->graph->num_nodes >= max) {
		hpu_counter_add(HPU_C_CAP_SPLITS, 1);
		ret = hpu_lazy_flush(s);
		if (ret)
			return ret;
	}
	ret = hpu_ir_add(r->graph, op);
	if (!ret)
		hpu_counter_add(HPU_C_OPS, 1);
	return ret;
}

int hpu_graph_op_take(struct hpu_stream *s, const struct hpu_op *op, const char *reason)
{
	struct hpu_recording *r = s->recording;
	int ret;

	if (reason && r->capture)
		return hpu_error_set(EBUSY, "%s runs on the host (%s): stream %u is capturing a "
				     "graph, which takes device ops only", op->name, reason, s->id);
	if (reason)
		/* The host reads the operands: what a lazy stream recorded runs first. */
		return hpu_lazy_flush(s);
	if (r->capture)
		ret = hpu_graph_capture_record_locked(s, op);
	else if (hpu_stream_lazy(s))
		ret = hpu_lazy_record(s, op);
	else
		return 0;
	return ret ? ret : 1;
}

/*
 * Binds the persistent buffers and launches, through the recipe cache, with
 * the graph's numbers: a recipe compiled for other values serves it.
 */
static int hpu_lazy_launch(struct hpu_stream *s, struct hpu_ir *ir)
{
	struct hpu_recipe *r;
	uint64_t *bindings, *values = NULL;
	int ret;

	ret = hpu_ir_seal(ir);
	if (!ret)
		ret = hpu_ir_bindings(ir, &bindings);
	if (ret)
		return ret;
	ret = hpu_ir_recipe(s->dev, ir, &r);
	if (!ret) {
		ret = hpu_ir_values(ir, r, &values);
		if (!ret)
			ret = hpu_recipe_launch(s, r, NULL, bindings, values);
		free(values);
		hpu_recipe_put(r);
	}
	free(bindings);
	return ret;
}

int hpu_lazy_flush(struct hpu_stream *s)
{
	struct hpu_recording *r = s->recording;
	int ret;

	if (r->capture)
		return hpu_error_set(EBUSY, "stream %u is capturing a graph, which takes device "
				     "ops only", s->id);
	if (!r->graph || !r->graph->num_nodes)
		return 0;
	ret = hpu_lazy_launch(s, r->graph);
	hpu_counter_add(HPU_C_GRAPHS, 1);
	/* After the submission: freed storage is reused only once the launch has ended. */
	hpu_ir_clear(r->graph);
	return ret;
}

int hpu_lazy_flush_stream(struct hpu_stream *s)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = hpu_lazy_flush(s);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int hpu_stream_set_lazy(struct hpu_stream *s, bool lazy)
{
	int ret = 0;

	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "stream is NULL"));
	pthread_mutex_lock(&s->lock);
	if (!lazy)
		ret = hpu_lazy_flush(s);
	s->recording->lazy = lazy ? 1 : 2;
	pthread_mutex_unlock(&s->lock);
	return hpu_error_in(__func__, ret);
}

int hpu_stream_get_lazy(struct hpu_stream *s, bool *lazy)
{
	if (!s || !lazy)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL",
							    s ? "lazy" : "stream"));
	pthread_mutex_lock(&s->lock);
	*lazy = hpu_stream_lazy(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int hpu_mark_step(struct hpu_stream *s)
{
	int ret = 0;

	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "stream is NULL"));
	pthread_mutex_lock(&s->lock);
	/* A capture is one graph already: its step marks mean nothing. */
	if (!s->recording->capture)
		ret = hpu_lazy_flush(s);
	pthread_mutex_unlock(&s->lock);
	return hpu_error_in(__func__, ret);
}

int hpu_stream_set_max_graph_ops(struct hpu_stream *s, unsigned int max_ops)
{
	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "stream is NULL"));
	pthread_mutex_lock(&s->lock);
	s->recording->max_graph_ops = max_ops;
	pthread_mutex_unlock(&s->lock);
	return 0;
}
