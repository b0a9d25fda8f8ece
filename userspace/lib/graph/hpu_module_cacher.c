/* SPDX-License-Identifier: MIT */
/*
 * Module cacher (torch.hpu.ModuleCacher), on the public HPU graph and op
 * API: a callable whose calls run as HPU graphs, one per key.
 *
 * The key is each input's dtype, ndim and shape, then the args bytes: what
 * decides the ops fn enqueues.  A graph is found by a 64-bit FNV-1a hash of
 * the key and then the whole key, so a collision cannot replay the wrong
 * graph.  Where the inputs are and their strides are not in the key: a
 * call copies them into the graph's static inputs (contiguous, its own).
 *
 * A new key allocates the static inputs, copies the inputs in, captures fn
 * into a new graph and replays it (a capture runs nothing, and the call
 * returns results); a known one copies the inputs in and replays.
 *
 * The graphs are kept in the order of their last call.  After each call
 * the least recently called go while more than max_graphs are kept or,
 * with a budget, while their device memory - per graph its static inputs'
 * and outputs' storages and hpu_graph_get_info()'s device_bytes (command
 * buffers, workspace) - exceeds budget_bytes.  The graph of the call is
 * never evicted, since the call returns its outputs: one larger than the
 * budget by itself is kept, alone, and stats.bytes then exceeds
 * budget_bytes.  Evicting destroys the graph and its static tensors; their
 * memory is reused once the replays enqueued so far have ended (the
 * caching allocator waits for them).
 *
 * A cacher is used by one thread at a time, as a graph is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"

/* A key's graph and its static tensors. */
struct hpu_cached_graph {
	struct hpu_list lru; /* in the cacher's, least recently called first */
	uint64_t hash;
	uint8_t *key;
	size_t key_size;
	struct hpu_graph *graph;
	uint64_t bytes;         /* device memory, as the budget counts it */
	struct hpu_tensor *t[]; /* static inputs, then outputs */
};

struct hpu_module_cacher {
	struct hpu_device *dev;
	struct hpu_module_cacher_config config;
	struct hpu_list lru;
	struct hpu_module_cacher_stats stats; /* but its size */
};

int hpu_module_cacher_create(struct hpu_device *dev, const struct hpu_module_cacher_config *config,
			     struct hpu_module_cacher **cacherp)
{
	struct hpu_module_cacher *c;

	if (!cacherp)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "cacherp is NULL"));
	*cacherp = NULL;
	if (!dev || !config)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "%s is NULL",
							    dev ? "config" : "dev"));
	if (!config->fn || !config->max_graphs)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "config->%s",
							    config->fn ? "max_graphs is 0"
								       : "fn is NULL"));
	c = calloc(1, sizeof(*c));
	if (!c)
		return hpu_error_in(__func__, hpu_error_set(ENOMEM, "out of memory"));
	c->dev = dev;
	c->config = *config;
	hpu_list_init(&c->lru);
	*cacherp = c;
	return 0;
}

static void hpu_cached_graph_free(struct hpu_module_cacher *c, struct hpu_cached_graph *e)
{
	unsigned int i;

	hpu_graph_destroy(e->graph);
	for (i = 0; i < c->config.num_inputs + c->config.num_outputs; i++)
		hpu_tensor_destroy(e->t[i]);
	free(e->key);
	free(e);
}

void hpu_module_cacher_destroy(struct hpu_module_cacher *c)
{
	if (!c)
		return;
	while (!hpu_list_empty(&c->lru)) {
		struct hpu_cached_graph *e = hpu_container_of(c->lru.next, struct hpu_cached_graph,
							      lru);

		hpu_list_del(&e->lru);
		hpu_cached_graph_free(c, e);
	}
	free(c);
}

static int hpu_cacher_call_check(const struct hpu_module_cacher *c, const struct hpu_stream *s,
				 struct hpu_tensor *const *in, const void *args, size_t args_size,
				 struct hpu_tensor **out)
{
	unsigned int i;

	if (!c || !s)
		return hpu_error_set(EINVAL, "%s is NULL", c ? "stream" : "cacher");
	if (s->dev != c->dev)
		return hpu_error_set(EINVAL, "stream %u belongs to another device than the cacher",
				     s->id);
	if (c->config.num_inputs && !in)
		return hpu_error_set(EINVAL, "inputs is NULL");
	for (i = 0; i < c->config.num_inputs; i++) {
		if (!in[i])
			return hpu_error_set(EINVAL, "inputs[%u] is NULL", i);
		if (in[i]->storage->dev != c->dev)
			return hpu_error_set(EINVAL, "inputs[%u] belongs to another device than "
					     "the cacher", i);
	}
	if (args_size && !args)
		return hpu_error_set(EINVAL, "args is NULL, args_size %zu", args_size);
	if (c->config.num_outputs && !out)
		return hpu_error_set(EINVAL, "outputs is NULL");
	return 0;
}

static int hpu_cacher_key(const struct hpu_module_cacher *c, struct hpu_tensor *const *in,
			  const void *args, size_t args_size, struct hpu_bytes *k, uint64_t *hash)
{
	unsigned int i;

	for (i = 0; i < c->config.num_inputs; i++) {
		const struct hpu_tensor_layout *l = &in[i]->l;

		hpu_bytes_put(k, &l->dtype, sizeof(l->dtype));
		hpu_bytes_put(k, &l->ndim, sizeof(l->ndim));
		hpu_bytes_put(k, l->shape, l->ndim * sizeof(l->shape[0]));
	}
	hpu_bytes_put(k, args, args_size);
	if (k->oom) {
		free(k->p);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	*hash = hpu_fnv1a(HPU_FNV1A_INIT, k->p, k->len);
	return 0;
}

static struct hpu_cached_graph *hpu_cacher_find(struct hpu_module_cacher *c, uint64_t hash,
						const struct hpu_bytes *k)
{
	struct hpu_list *it;

	for (it = c->lru.next; it != &c->lru; it = it->next) {
		struct hpu_cached_graph *e = hpu_container_of(it, struct hpu_cached_graph, lru);

		if (e->hash == hash && e->key_size == k->len && !memcmp(e->key, k->p, k->len))
			return e;
	}
	return NULL;
}

/* Static inputs like in[], fn captured into a graph and replayed once. */
static int hpu_cached_graph_capture(struct hpu_module_cacher *c, struct hpu_cached_graph *e,
				    struct hpu_stream *s, struct hpu_tensor *const *in,
				    const void *args)
{
	unsigned int n_in = c->config.num_inputs, n = n_in + c->config.num_outputs, i;
	struct hpu_graph_info info = { .size = sizeof(info) };
	int ret;

	ret = hpu_tensors_like(c->dev, n_in, in, e->t);
	if (!ret)
		ret = hpu_tensors_copy(s, n_in, e->t, in);
	if (!ret)
		ret = hpu_graph_create(c->dev, &e->graph);
	if (!ret)
		ret = hpu_graph_capture_begin(e->graph, s);
	/* If fn fails, destroying the graph ends the capture without compiling it. */
	if (!ret)
		ret = c->config.fn(c->config.ctx, s, e->t, args, e->t + n_in);
	for (i = n_in; i < n && !ret; i++)
		if (!e->t[i])
			ret = hpu_error_set(EINVAL, "fn returned 0 but made no output %u", i - n_in);
	if (!ret)
		ret = hpu_graph_capture_end(e->graph);
	if (!ret)
		ret = hpu_graph_get_info(e->graph, &info);
	if (!ret)
		ret = hpu_graph_replay(e->graph, s);
	e->bytes = info.device_bytes;
	for (i = 0; i < n && !ret; i++)
		e->bytes += e->t[i]->storage->size;
	return ret;
}

/* A new entry for key k (which it takes), captured. */
static int hpu_cacher_miss(struct hpu_module_cacher *c, struct hpu_stream *s,
			   struct hpu_tensor *const *in, const void *args, struct hpu_bytes *k,
			   uint64_t hash, struct hpu_cached_graph **ep)
{
	size_t n = (size_t)c->config.num_inputs + c->config.num_outputs;
	struct hpu_cached_graph *e = calloc(1, sizeof(*e) + n * sizeof(e->t[0]));
	int ret;

	if (!e) {
		free(k->p);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	e->hash = hash;
	e->key = k->p;
	e->key_size = k->len;
	ret = hpu_cached_graph_capture(c, e, s, in, args);
	if (ret) {
		hpu_cached_graph_free(c, e);
		return ret;
	}
	c->stats.graphs++;
	c->stats.captures++;
	c->stats.bytes += e->bytes;
	*ep = e;
	return 0;
}

/* Drops the least recently called graphs beyond the limits, but the last called. */
static void hpu_cacher_trim(struct hpu_module_cacher *c)
{
	const struct hpu_module_cacher_config *cfg = &c->config;

	while (c->stats.graphs > 1 &&
	       (c->stats.graphs > cfg->max_graphs ||
		(cfg->budget_bytes && c->stats.bytes > cfg->budget_bytes))) {
		struct hpu_cached_graph *e = hpu_container_of(c->lru.next, struct hpu_cached_graph,
							      lru);

		hpu_list_del(&e->lru);
		c->stats.graphs--;
		c->stats.evictions++;
		c->stats.bytes -= e->bytes;
		hpu_cached_graph_free(c, e);
	}
}

int hpu_module_cacher_call(struct hpu_module_cacher *cacher, struct hpu_stream *stream,
			   struct hpu_tensor *const *inputs, const void *args, size_t args_size,
			   struct hpu_tensor **outputs)
{
	struct hpu_cached_graph *e;
	struct hpu_bytes k = { 0 };
	uint64_t hash = 0;
	int ret;

	ret = hpu_cacher_call_check(cacher, stream, inputs, args, args_size, outputs);
	if (!ret)
		ret = hpu_cacher_key(cacher, inputs, args, args_size, &k, &hash);
	if (ret)
		return hpu_error_in(__func__, ret);
	e = hpu_cacher_find(cacher, hash, &k);
	if (e) {
		free(k.p);
		ret = hpu_tensors_copy(stream, cacher->config.num_inputs, e->t, inputs);
		if (!ret)
			ret = hpu_graph_replay(e->graph, stream);
		if (ret)
			return hpu_error_in(__func__, ret);
		cacher->stats.hits++;
		hpu_list_del(&e->lru);
	} else {
		ret = hpu_cacher_miss(cacher, stream, inputs, args, &k, hash, &e);
		if (ret)
			return hpu_error_in(__func__, ret);
	}
	hpu_list_add_tail(&cacher->lru, &e->lru);
	cacher->stats.calls++;
	if (cacher->config.num_outputs)
		memcpy(outputs, e->t + cacher->config.num_inputs,
		       cacher->config.num_outputs * sizeof(*outputs));
	hpu_cacher_trim(cacher);
	return 0;
}

int hpu_module_cacher_get_stats(struct hpu_module_cacher *cacher,
				struct hpu_module_cacher_stats *stats)
{
	struct hpu_module_cacher_stats known;
	int ret;

	if (!cacher)
		return hpu_error_in(__func__, hpu_error_set(EINVAL, "cacher is NULL"));
	ret = hpu_sized_check(cacher->dev, stats, "stats", sizeof(*stats));
	if (ret)
		return hpu_error_in(__func__, ret);
	known = cacher->stats;
	hpu_sized_out(stats, &known, sizeof(known));
	return 0;
}
