/* SPDX-License-Identifier: MIT */
/*
 * Lazy mode: a lazy stream records its ops into a graph instead of
 * launching them, and flushes the graph - compiled, or found in the recipe
 * cache, then launched - at hpu_mark_step() or when anything else needs
 * the ops done or ordered (hpu_stream_submit() and the synchronizing calls
 * flush first).  Everything here runs with the stream's lock held, so a
 * graph is the stream's alone.
 *
 * A recorded op keeps its checked struct hpu_op, with each operand turned
 * into (buffer, byte delta): the graph holds one reference per storage, so
 * the caller may destroy tensors before the flush.  A storage no one else
 * holds at the flush, whose first access writes all of it, is an
 * intermediate and gets workspace memory instead of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "hpu_internal.h"

#define HPU_MAX_OPS_DEFAULT 1000u

/* What a recorded operand's t[i] points at: it says "present", nothing more. */
const struct hpu_tensor hpu_graph_present;

bool hpu_stream_lazy(struct hpu_stream *s)
{
	if (!s->lazy)
		s->lazy = hpu_env_uint("HPU_LAZY_MODE", 0) == 1 ? 1 : 2;
	return s->lazy == 1;
}

static int hpu_graph_buffer(struct hpu_graph *g, struct hpu_storage *st, uint32_t *index)
{
	uint32_t i;
	int ret;

	for (i = 0; i < g->num_bufs; i++)
		if (g->bufs[i].st == st)
			break;
	if (i == g->num_bufs) {
		ret = hpu_array_grow((void **)&g->bufs, &g->cap_bufs, i + 1, sizeof(*g->bufs));
		if (ret)
			return ret;
		atomic_fetch_add(&st->refs, 1);
		g->bufs[g->num_bufs++] = (struct hpu_gbuf){ .st = st, .size = st->size };
	}
	*index = i;
	return 0;
}

/* Drops the recorded ops and the graph's references. */
static void hpu_graph_clear(struct hpu_graph *g)
{
	unsigned int i;

	for (i = 0; i < g->num_bufs; i++)
		if (g->bufs[i].st)
			hpu_storage_put(g->bufs[i].st);
	g->num_bufs = 0;
	g->num_nodes = 0;
}

void hpu_graph_free(struct hpu_graph *g)
{
	if (!g)
		return;
	hpu_graph_clear(g);
	free(g->nodes);
	free(g->bufs);
	free(g);
}

int hpu_graph_record(struct hpu_stream *s, const struct hpu_op *op)
{
	unsigned int max = s->max_graph_ops ? s->max_graph_ops
					    : hpu_env_uint("HPU_MAX_COMPOUND_OP_SIZE",
							   HPU_MAX_OPS_DEFAULT);
	struct hpu_graph *g = s->graph;
	struct hpu_gnode *node;
	unsigned int i;
	int ret;

	/* What the encoder refuses must fail now, at the op's call, as in eager mode. */
	if (op->kernel == HPU_OPK_GEMM) {
		uint8_t pkt[256];
		const uint64_t addrs[HPU_OP_TENSORS] = { 0 };

		ret = hpu_gemm_encode(op, addrs, 0, pkt);
		if (ret)
			return ret;
	}
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g)
			return hpu_error_set(ENOMEM, "out of memory");
		s->graph = g;
	}
	if (g->num_nodes >= max) {
		hpu_counter_add(HPU_C_CAP_SPLITS, 1);
		ret = hpu_graph_flush(s);
		if (ret)
			return ret;
	}
	ret = hpu_array_grow((void **)&g->nodes, &g->cap_nodes, g->num_nodes + 1, sizeof(*g->nodes));
	if (ret)
		return ret;
	node = &g->nodes[g->num_nodes];
	node->op = *op;
	for (i = 0; i < HPU_OP_TENSORS; i++) {
		node->buf[i] = HPU_GRAPH_NONE;
		node->delta[i] = 0;
		if (i >= op->num_tensors || !op->t[i])
			continue;
		ret = hpu_graph_buffer(g, op->t[i]->storage, &node->buf[i]);
		if (ret)
			return ret;
		node->delta[i] = op->l[i].offset * (int64_t)hpu_dt_size(op->l[i].dtype);
		node->op.l[i].offset = 0;
		node->op.t[i] = &hpu_graph_present;
	}
	g->num_nodes++;
	hpu_counter_add(HPU_C_OPS, 1);
	return 0;
}

/* Kernels whose outputs are read as well: optimizer state, scatter-adds, the RNG state. */
static bool hpu_op_reads_output(const struct hpu_op *op, unsigned int i)
{
	switch (op->kernel) {
	case HPU_KERNEL_SGD:
	case HPU_KERNEL_ADADELTA:
	case HPU_KERNEL_ADAMW:
	case HPU_KERNEL_EMBEDDING_BWD:
	case HPU_KERNEL_CLIP_GRAD_NORM:
		return true;
	case HPU_KERNEL_DROPOUT:
		return i == 3;
	default:
		return false;
	}
}

/* Whether node n's access to buffer b (its first) writes every byte of it and reads none. */
static bool hpu_node_defines(const struct hpu_gnode *n, uint32_t b, uint64_t size)
{
	bool covered = false;
	unsigned int i;

	for (i = 0; i < n->op.num_tensors; i++) {
		const struct hpu_tensor_layout *l = &n->op.l[i];

		if (n->buf[i] != b)
			continue;
		if (!(n->op.outputs & (1u << i)) || hpu_op_reads_output(&n->op, i))
			return false;
		covered |= n->delta[i] == 0 && hpu_layout_is_contiguous(l) &&
			   (uint64_t)hpu_layout_numel(l) * hpu_dt_size(l->dtype) == size;
	}
	return covered;
}

void hpu_graph_finalize(struct hpu_graph *g, const unsigned int *holders)
{
	unsigned int n, i, b;

	for (b = 0; b < g->num_bufs; b++) {
		g->bufs[b].internal = !holders[b];
		g->bufs[b].anchor = INT64_MAX;
	}
	for (n = 0; n < g->num_nodes; n++) {
		const struct hpu_gnode *node = &g->nodes[n];

		for (i = 0; i < node->op.num_tensors; i++) {
			struct hpu_gbuf *buf;

			if (node->buf[i] == HPU_GRAPH_NONE)
				continue;
			buf = &g->bufs[node->buf[i]];
			/* The first access decides: anchor is INT64_MAX until then. */
			if (buf->anchor == INT64_MAX && buf->internal)
				buf->internal = hpu_node_defines(node, node->buf[i], buf->size);
			if (node->delta[i] < buf->anchor)
				buf->anchor = node->delta[i];
		}
	}
	for (b = 0; b < g->num_bufs; b++)
		if (g->bufs[b].internal)
			g->bufs[b].anchor = 0;
	for (n = 0; n < g->num_nodes; n++)
		for (i = 0; i < g->nodes[n].op.num_tensors; i++)
			if (g->nodes[n].buf[i] != HPU_GRAPH_NONE)
				g->nodes[n].delta[i] -= g->bufs[g->nodes[n].buf[i]].anchor;
}

/* The recipe of g: from the cache, or compiled and cached. */
static int hpu_graph_recipe(struct hpu_device *dev, const struct hpu_graph *g,
			    struct hpu_recipe **rp)
{
	const struct hpu_compile_config cfg = {
		.engines = dev->num_queues < HPU_GRAPH_MAX_ENGINES ? dev->num_queues
								   : HPU_GRAPH_MAX_ENGINES,
		.fw_version = dev->recipes.fw_version,
	};
	uint64_t hash, start;
	uint8_t *key;
	size_t size;
	int ret;

	ret = hpu_graph_key(g, &cfg, &key, &size, &hash);
	if (ret)
		return ret;
	*rp = hpu_recipe_cache_find(&dev->recipes, hash, key, size);
	if (*rp) {
		free(key);
		return 0;
	}
	start = hpu_now_ns();
	ret = hpu_compile(g, &cfg, rp);
	if (ret) {
		free(key);
		return ret;
	}
	hpu_counter_add(HPU_C_COMPILES, 1);
	hpu_counter_add(HPU_C_COMPILE_NS, (int64_t)(hpu_now_ns() - start));
	(*rp)->hash = hash;
	(*rp)->key = key;
	(*rp)->key_size = size;
	hpu_recipe_cache_insert(&dev->recipes, *rp);
	return 0;
}

/* Binds the persistent buffers and launches. */
static int hpu_graph_launch(struct hpu_stream *s, const struct hpu_graph *g)
{
	struct hpu_recipe *r;
	uint64_t *bindings;
	unsigned int b, k = 0;
	int ret;

	bindings = malloc((g->num_bufs ? g->num_bufs : 1) * sizeof(*bindings));
	if (!bindings)
		return hpu_error_set(ENOMEM, "out of memory");
	for (b = 0; b < g->num_bufs; b++)
		if (!g->bufs[b].internal)
			bindings[k++] = g->bufs[b].st->va + (uint64_t)g->bufs[b].anchor;
	ret = hpu_graph_recipe(s->dev, g, &r);
	if (!ret) {
		ret = hpu_recipe_launch(s, r, bindings);
		hpu_recipe_put(r);
	}
	free(bindings);
	return ret;
}

int hpu_graph_flush(struct hpu_stream *s)
{
	struct hpu_graph *g = s->graph;
	unsigned int *holders, b;
	int ret;

	if (!g || !g->num_nodes)
		return 0;
	holders = malloc(g->num_bufs * sizeof(*holders));
	if (!holders) {
		ret = hpu_error_set(ENOMEM, "out of memory");
	} else {
		/* Every other reference is a tensor of the caller's. */
		for (b = 0; b < g->num_bufs; b++)
			holders[b] = atomic_load(&g->bufs[b].st->refs) - 1;
		hpu_graph_finalize(g, holders);
		free(holders);
		ret = hpu_graph_launch(s, g);
	}
	hpu_counter_add(HPU_C_GRAPHS, 1);
	/* After the submission: freed storage is reused only once the launch has ended. */
	hpu_graph_clear(g);
	return ret;
}

int hpu_graph_flush_stream(struct hpu_stream *s)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = hpu_graph_flush(s);
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
		ret = hpu_graph_flush(s);
	s->lazy = lazy ? 1 : 2;
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
	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "stream is NULL"));
	return hpu_error_in(__func__, hpu_graph_flush_stream(s));
}

int hpu_stream_set_max_graph_ops(struct hpu_stream *s, unsigned int max_ops)
{
	if (!s)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "stream is NULL"));
	pthread_mutex_lock(&s->lock);
	s->max_graph_ops = max_ops;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int hpu_recipe_cache_set_capacity(struct hpu_device *dev, unsigned int capacity)
{
	if (!dev)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "dev is NULL"));
	if (!capacity)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "capacity is 0"));
	hpu_recipe_cache_resize(&dev->recipes, capacity);
	return 0;
}
