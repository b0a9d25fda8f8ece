/* SPDX-License-Identifier: MIT */
/*
 * HPU graphs: a stream's ops captured into the graph IR (hpu_ir.c) instead
 * of being run, compiled once at the end of the capture, and replayed.
 *
 * A graph has a recipe instance of its own (hpu_recipe.c): its command
 * buffers resolved against the addresses of the tensors it holds, which
 * never move, so every replay - after the first, which uploads them - is
 * one submission with no host work per op.  The compiled recipe itself
 * comes from the device's recipe cache, so graphs of the same ops share
 * one compilation; the graph writes its ops' numbers as captured into its
 * instance (a recipe's numbers are parameters), and every replay keeps
 * them, as a CUDA graph does.
 *
 * A replay may bind other tensors in place of static inputs
 * (hpu_graph_replay_with()): the launch re-writes the addresses that moved
 * in the graph's instance, as lazy mode's re-binding does, instead of the
 * caller copying each batch into the static inputs first.
 *
 * Ops reach a capture through the same hook as lazy mode
 * (hpu_graph_op_take()), eager or lazy stream alike.  What is not a device
 * op is refused where every ordering point of a stream already goes:
 * hpu_lazy_flush() fails with -EBUSY on a capturing stream, so a copy, a
 * host read, an event, a synchronize or a CPU fallback fails at its call
 * and the capture goes on.
 *
 * The capture's state changes under the capturing stream's lock; a
 * stream's recording's `capture` (graph.h) points at its graph while it
 * captures, and the graph holds a reference to the stream until the
 * capture ends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"

enum hpu_graph_state {
	HPU_GRAPH_EMPTY,     /* created, or its capture failed */
	HPU_GRAPH_CAPTURING,
	HPU_GRAPH_READY,     /* captured: replays */
};

struct hpu_graph {
	struct hpu_device *dev;
	enum hpu_graph_state state;
	struct hpu_stream *stream; /* capturing, with a reference */
	struct hpu_ir ir;          /* the ops; its storages the tensors the graph keeps */
	struct hpu_recipe *recipe; /* NULL for a graph of no ops */
	struct hpu_recipe_inst *inst;
	uint64_t *bindings;
	uint64_t *rebound;         /* a replay_with's bindings; the graph's one user at a time */
	uint64_t *values;          /* the numbers of the ops as captured, which every replay keeps */
	uint64_t replays;
};

int hpu_graph_create(struct hpu_device *dev, struct hpu_graph **gp)
{
	if (!gp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "graphp is NULL"));
	*gp = NULL;
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	*gp = calloc(1, sizeof(**gp));
	if (!*gp)
		return hpu_error_in(__func__, hpu_error_set(ENOMEM, "out of memory"));
	(*gp)->dev = dev;
	return 0;
}

/* Drops what a capture made, back to an empty graph. */
static void hpu_graph_reset(struct hpu_graph *g)
{
	hpu_recipe_inst_destroy(g->inst);
	if (g->recipe)
		hpu_recipe_put(g->recipe);
	free(g->bindings);
	free(g->rebound);
	free(g->values);
	hpu_ir_clear(&g->ir);
	g->inst = NULL;
	g->recipe = NULL;
	g->bindings = NULL;
	g->rebound = NULL;
	g->values = NULL;
	g->state = HPU_GRAPH_EMPTY;
}

/* Detaches a capturing graph from its stream, whose lock is held. */
static void hpu_graph_detach_locked(struct hpu_graph *g)
{
	g->stream->recording->capture = NULL;
	g->stream = NULL;
}

void hpu_stream_capture_abort(struct hpu_stream *s)
{
	struct hpu_graph *g = s->recording->capture;

	/* The stream goes: the graph keeps no reference, so the caller's last one is freed. */
	if (!g)
		return;
	hpu_graph_detach_locked(g);
	hpu_stream_put(s);
	hpu_graph_reset(g);
}

void hpu_graph_destroy(struct hpu_graph *g)
{
	struct hpu_stream *s;

	if (!g)
		return;
	s = g->stream;
	if (s) {
		pthread_mutex_lock(&s->lock);
		hpu_graph_detach_locked(g);
		pthread_mutex_unlock(&s->lock);
		hpu_stream_put(s);
	}
	hpu_graph_reset(g);
	free(g->ir.nodes);
	free(g->ir.bufs);
	free(g);
}

/* A graph and a stream of its device. */
static int hpu_graph_stream_check(const struct hpu_graph *g, const struct hpu_stream *s)
{
	if (!g || !s)
		return hpu_error_set(EINVAL, "%s is NULL", g ? "stream" : "graph");
	if (s->dev != g->dev)
		return hpu_error_set(EINVAL, "stream %u belongs to another device than the graph",
				     s->id);
	return 0;
}

int hpu_graph_capture_begin(struct hpu_graph *g, struct hpu_stream *s)
{
	int ret = hpu_graph_stream_check(g, s);

	if (ret)
		return hpu_error_in(__func__, ret);
	if (g->state == HPU_GRAPH_CAPTURING)
		return hpu_error_in(__func__, hpu_error_set(EBUSY, "the graph is capturing "
							    "already (stream %u)", g->stream->id));
	if (g->state == HPU_GRAPH_READY)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "the graph was captured "
							    "already: create another"));
	pthread_mutex_lock(&s->lock);
	if (s->recording->capture) {
		ret = hpu_error_set(EBUSY, "stream %u is capturing another graph", s->id);
	} else {
		/* What a lazy stream recorded was enqueued before: it is not the graph's. */
		ret = hpu_lazy_flush(s);
	}
	if (!ret) {
		s->recording->capture = g;
		g->stream = s;
		g->state = HPU_GRAPH_CAPTURING;
		hpu_stream_get(s);
	}
	pthread_mutex_unlock(&s->lock);
	return hpu_error_in(__func__, ret);
}

int hpu_graph_capture_record_locked(struct hpu_stream *s, const struct hpu_op *op)
{
	int ret = hpu_ir_add(&s->recording->capture->ir, op);

	if (!ret)
		hpu_counter_add(HPU_C_CAPTURED_OPS, 1);
	return ret;
}

/* Compiles the captured ops and makes the graph's instance of them. */
static int hpu_graph_build(struct hpu_graph *g)
{
	unsigned int b;
	int ret;

	if (!g->ir.num_nodes)
		return 0;
	ret = hpu_ir_seal(&g->ir);
	if (!ret)
		ret = hpu_ir_bindings(&g->ir, &g->bindings);
	if (!ret)
		ret = hpu_ir_bindings(&g->ir, &g->rebound);
	if (!ret)
		ret = hpu_ir_recipe(g->dev, &g->ir, &g->recipe);
	/* The cached recipe may have been compiled with other numbers: the capture's are these. */
	if (!ret)
		ret = hpu_ir_values(&g->ir, g->recipe, &g->values);
	if (!ret)
		ret = hpu_recipe_inst_create(g->dev, g->recipe, &g->inst);
	if (ret)
		return ret;
	/* Intermediates live in the workspace: their own memory can go now. */
	for (b = 0; b < g->ir.num_bufs; b++) {
		if (g->ir.bufs[b].internal) {
			hpu_storage_put(g->ir.bufs[b].st);
			g->ir.bufs[b].st = NULL;
		}
	}
	return 0;
}

int hpu_graph_capture_end(struct hpu_graph *g)
{
	struct hpu_stream *s;
	int ret;

	if (!g)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "graph is NULL"));
	s = g->stream;
	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "the graph is not capturing"));
	pthread_mutex_lock(&s->lock);
	hpu_graph_detach_locked(g);
	pthread_mutex_unlock(&s->lock);
	hpu_stream_put(s);
	ret = hpu_graph_build(g);
	if (ret) {
		hpu_graph_reset(g);
		return hpu_error_in(__func__, ret);
	}
	g->state = HPU_GRAPH_READY;
	hpu_counter_add(HPU_C_CAPTURES, 1);
	return 0;
}

/* A replay of a captured graph on s, with these bindings. */
static int hpu_graph_launch(struct hpu_graph *g, struct hpu_stream *s, const uint64_t *bindings)
{
	uint64_t start = hpu_now_ns();
	int ret;

	pthread_mutex_lock(&s->lock);
	/* Ordered after what the stream has enqueued, lazily recorded ops included. */
	if (s->recording->capture)
		ret = hpu_error_set(EBUSY, "stream %u is capturing a graph: a replay cannot be "
				    "captured", s->id);
	else
		ret = hpu_lazy_flush(s);
	if (!ret && g->recipe)
		ret = hpu_recipe_launch(s, g->recipe, g->inst, bindings, g->values);
	pthread_mutex_unlock(&s->lock);
	if (ret)
		return ret;
	g->replays++;
	hpu_counter_add(HPU_C_REPLAYS, 1);
	hpu_counter_add(HPU_C_REPLAY_NS, (int64_t)(hpu_now_ns() - start));
	return 0;
}

/* The graph and stream of a replay, and a capture to replay. */
static int hpu_graph_replay_check(const struct hpu_graph *g, const struct hpu_stream *s)
{
	int ret = hpu_graph_stream_check(g, s);

	if (ret)
		return ret;
	if (g->state != HPU_GRAPH_READY)
		return hpu_error_set(g->state == HPU_GRAPH_CAPTURING ? EBUSY : EINVAL,
				     "the graph %s", g->state == HPU_GRAPH_CAPTURING
							     ? "is being captured"
							     : "holds no capture");
	return 0;
}

int hpu_graph_replay(struct hpu_graph *g, struct hpu_stream *s)
{
	int ret = hpu_graph_replay_check(g, s);

	if (!ret)
		ret = hpu_graph_launch(g, s, g->bindings);
	return hpu_error_in(__func__, ret);
}

/* The binding of g's persistent buffer over st (its IR buffer in *buf), or -1. */
static int hpu_graph_binding_of(const struct hpu_graph *g, const struct hpu_storage *st,
				unsigned int *buf)
{
	unsigned int b;
	int k = 0;

	for (b = 0; b < g->ir.num_bufs; b++) {
		if (g->ir.bufs[b].internal)
			continue;
		if (g->ir.bufs[b].st == st) {
			*buf = b;
			return k;
		}
		k++;
	}
	return -1;
}

/* Binds in->tensor in place of in->static_input in g->rebound. */
static int hpu_graph_bind(struct hpu_graph *g, const struct hpu_graph_input *in, unsigned int i)
{
	const struct hpu_tensor *st = in->static_input, *t = in->tensor;
	char a[64], b[64];
	unsigned int buf;
	int k;

	if (!st || !t)
		return hpu_error_set(EINVAL, "input %u: %s is NULL", i,
				     st ? "tensor" : "static_input");
	k = hpu_graph_binding_of(g, st->storage, &buf);
	if (k < 0 || st->l.offset || !hpu_layout_is_contiguous(&st->l) ||
	    (uint64_t)hpu_layout_numel(&st->l) * hpu_dt_size(st->l.dtype) != st->storage->size)
		return hpu_error_set(EINVAL, "input %u: not a static input of the graph (a whole "
				     "tensor the graph reads or writes)", i);
	if (g->rebound[k] != g->bindings[k])
		return hpu_error_set(EINVAL, "input %u: a static input bound twice", i);
	if (t->storage->dev != g->dev)
		return hpu_error_set(EINVAL, "input %u: a tensor of another device", i);
	if (t->l.dtype != st->l.dtype || t->l.ndim != st->l.ndim ||
	    memcmp(t->l.shape, st->l.shape, st->l.ndim * sizeof(st->l.shape[0])))
		return hpu_error_set(EINVAL, "input %u: %s %s in place of a static input %s %s", i,
				     hpu_dt_name(t->l.dtype),
				     hpu_shape_str(t->l.ndim, t->l.shape, a, sizeof(a)),
				     hpu_dt_name(st->l.dtype),
				     hpu_shape_str(st->l.ndim, st->l.shape, b, sizeof(b)));
	if (!hpu_layout_is_contiguous(&t->l))
		return hpu_error_set(EINVAL, "input %u: a tensor that is not contiguous", i);
	if (hpu_graph_binding_of(g, t->storage, &(unsigned int){ 0 }) >= 0)
		return hpu_error_set(EINVAL, "input %u: a tensor whose memory the graph holds", i);
	g->rebound[k] = hpu_tensor_addr(t->storage, &t->l) + (uint64_t)g->ir.bufs[buf].anchor;
	return 0;
}

int hpu_graph_replay_with(struct hpu_graph *g, struct hpu_stream *s,
			  const struct hpu_graph_input *inputs, unsigned int count)
{
	unsigned int i;
	int ret = hpu_graph_replay_check(g, s);

	if (!ret && count && !inputs)
		ret = hpu_error_set(EINVAL, "inputs is NULL");
	if (ret)
		return hpu_error_in(__func__, ret);
	if (g->recipe)
		memcpy(g->rebound, g->bindings, g->recipe->num_bindings * sizeof(*g->rebound));
	for (i = 0; i < count && !ret; i++)
		ret = g->recipe ? hpu_graph_bind(g, &inputs[i], i)
				: hpu_error_set(EINVAL, "input %u: the graph has no ops", i);
	if (!ret)
		ret = hpu_graph_launch(g, s, g->rebound);
	return hpu_error_in(__func__, ret);
}

int hpu_graph_get_info(struct hpu_graph *g, struct hpu_graph_info *info)
{
	struct hpu_graph_info known = { 0 };
	unsigned int b;
	int ret;

	if (!g)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "graph is NULL"));
	ret = hpu_sized_check(g->dev, info, "info", sizeof(*info));
	if (ret)
		return hpu_error_in(__func__, ret);
	if (g->state != HPU_GRAPH_READY)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "the graph holds no capture"));
	known.num_ops = g->ir.num_nodes;
	for (b = 0; b < g->ir.num_bufs; b++)
		known.num_tensors += !g->ir.bufs[b].internal;
	if (g->recipe) {
		known.num_engines = g->recipe->num_engines;
		known.workspace_bytes = g->recipe->workspace_size;
		known.device_bytes = hpu_recipe_inst_bytes(g->inst);
	}
	known.replays = g->replays;
	hpu_sized_out(info, &known, sizeof(known));
	return 0;
}
