/* SPDX-License-Identifier: MIT */
/*
 * The graph compiler: a recorded graph becomes a recipe, with no device.
 *
 *  1. Lowering: a linear with a bias becomes a COPY of the bias into out
 *     and a GEMM accumulating onto it (as eager mode runs it); a COPY
 *     between contiguous tensors of one dtype becomes a LIN_DMA, a fill
 *     with zero a memset: DMA-engine work, as in eager mode (hpu_encode.c).
 *  2. Workspace: intermediates get offsets in one workspace; two whose
 *     lifetimes (first to last use, in program order) overlap never share
 *     bytes.  Largest first, each at the lowest offset that fits.
 *  3. Dependencies on memory as it will be laid out (so workspace reuse
 *     orders the reuser after the last use too): an op depends on every
 *     earlier op touching overlapping bytes where either writes.
 *  4. Scheduling: with fit_engines, a graph that is mostly one chain (its
 *     work less than HPU_SPREAD_PARALLELISM times its critical path's) runs
 *     on one engine: spread, it would overlap little and pay a job per
 *     engine at every launch and a sync object per hop.  Otherwise DMA
 *     work to the DMA engine, GEMMs to the matrix engine,
 *     kernels to a tensor engine - the one that ran the op's latest
 *     producer among them, else the least loaded.  Each engine runs its
 *     ops in program order.
 *  5. Sync objects: a dependency on another engine becomes a WAIT on that
 *     engine's sync object (a counter its SIGNALs after chosen ops bump),
 *     unless the engine already knows it is met: every engine keeps a
 *     vector clock of what it has waited for, transitively, so a chain of
 *     waits is never repeated.
 *  6. Emission: one command buffer per engine and the parameter blocks, in
 *     one blob whose addresses are sites: relative to the blob, to the
 *     workspace (placed after the blob) or to a binding (a persistent
 *     tensor's base), resolved when the recipe is put on a device.  The
 *     numbers in a recorded op's parameter block are parameters: each
 *     launch writes the graph's values there, so one recipe serves a
 *     learning rate that changes every step.
 *
 * The engines' sync objects start from 0 at every launch (the launch
 * zeroes them before any engine starts), so the WAIT values are constants.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_packets.h>

#include "../recipe/recipe.h"

/* Bump when the recipe of a graph changes: the key then never matches an older one. */
#define HPU_COMPILER_VERSION 2u
#define HPU_BLOB_SYNC_SIZE 64u
#define HPU_PARAMS_ALIGN 64u
/* Sites whose value is relative to the parameter blocks, until the blob is laid out. */
#define HPU_SITE_PARAMS (UINT32_MAX - 2)

_Static_assert(HPU_GRAPH_MAX_ENGINES * sizeof(uint32_t) <= HPU_BLOB_SYNC_SIZE,
	       "sync objects outgrow their area");

enum hpu_lkind { HPU_L_KERNEL, HPU_L_GEMM, HPU_L_DMA_COPY, HPU_L_DMA_FILL };

/* An op after lowering, and what scheduling decides for it. */
struct hpu_lnode {
	struct hpu_op op;
	uint32_t src; /* the IR node whose numbers op has, HPU_GRAPH_NONE if they are constants */
	uint32_t buf[HPU_OP_TENSORS];
	int64_t delta[HPU_OP_TENSORS];
	enum hpu_lkind kind;
	double beta;
	uint64_t cost;
	unsigned int engine;
	uint32_t pos; /* 1-based place among its engine's ops */
	uint32_t deps_start, deps_count;
	uint32_t wait[HPU_GRAPH_MAX_ENGINES]; /* per engine, the op to wait for, or NONE */
	uint32_t vc[HPU_GRAPH_MAX_ENGINES];   /* per engine, its ops known done after this one */
	bool signal;
	uint32_t ordinal; /* the sync object's value once this op signalled */
};

struct hpu_access {
	uint32_t node, region; /* region 0: the workspace; 1 + i: binding i */
	int64_t lo, hi;        /* bytes [lo, hi) */
	bool write;
};

struct hpu_compiler {
	const struct hpu_ir *g;
	const struct hpu_compile_config *cfg;
	struct hpu_lnode *nodes;
	unsigned int num_nodes;
	uint64_t *ws_off;  /* per buffer, internal ones */
	uint32_t *binding; /* per buffer, persistent ones */
	unsigned int num_bindings;
	uint64_t ws_size;
	uint32_t *deps;
	unsigned int num_deps, cap_deps;
	unsigned int dma, mme, tpc_first, tpc_count, engines;
	uint32_t signals[HPU_GRAPH_MAX_ENGINES];
	unsigned int waits;
	/* emission: section 0 the parameter blocks, 1 + e engine e's command buffer */
	struct hpu_bytes sec[1 + HPU_GRAPH_MAX_ENGINES];
	struct hpu_site *sites;
	uint32_t *site_sec;
	unsigned int num_sites, cap_sites, cap_site_sec;
	struct hpu_param *params; /* offsets in section 0 until the blob is laid out */
	unsigned int num_params, cap_params;
};

/* 1. Lowering */

static struct hpu_lnode hpu_lnode_of(const struct hpu_gnode *g, uint32_t src)
{
	struct hpu_lnode n = { .op = g->op, .src = src, .kind = HPU_L_KERNEL };

	memcpy(n.buf, g->buf, sizeof(n.buf));
	memcpy(n.delta, g->delta, sizeof(n.delta));
	return n;
}

static int hpu_lower(struct hpu_compiler *c)
{
	const struct hpu_ir *g = c->g;
	unsigned int i, k = 0;

	c->nodes = calloc(2 * (size_t)g->num_nodes + 1, sizeof(*c->nodes));
	if (!c->nodes)
		return hpu_error_set(ENOMEM, "out of memory");
	for (i = 0; i < g->num_nodes; i++) {
		/* Numbers are parameters exactly where the key leaves their values out. */
		uint32_t src = hpu_op_scalars_at_run(&g->nodes[i].op) ? i : HPU_GRAPH_NONE;
		struct hpu_lnode n = hpu_lnode_of(&g->nodes[i], src);

		if (n.op.kernel == HPU_OPK_GEMM && n.buf[3] != HPU_GRAPH_NONE) {
			struct hpu_lnode copy = {
				.op = { .name = n.op.name, .kernel = HPU_KERNEL_UNARY, .num_tensors = 2,
					.outputs = 1, .t = { n.op.t[0], n.op.t[3] },
					.names = { n.op.names[0], n.op.names[3] },
					.l = { n.op.l[0], n.op.l[3] }, .args = { HPU_UNARY_COPY } },
				.src = HPU_GRAPH_NONE,
				.buf = { n.buf[0], n.buf[3] },
				.delta = { n.delta[0], n.delta[3] },
				.kind = HPU_L_KERNEL,
			};
			unsigned int t;

			for (t = 2; t < HPU_OP_TENSORS; t++)
				copy.buf[t] = HPU_GRAPH_NONE;
			c->nodes[k++] = copy;
			n.op.t[3] = NULL;
			n.buf[3] = HPU_GRAPH_NONE;
			n.beta = 1;
		}
		if (n.op.kernel == HPU_OPK_GEMM)
			n.kind = HPU_L_GEMM;
		else if (hpu_op_is_dma_copy(&n.op) && n.buf[0] != n.buf[1])
			n.kind = HPU_L_DMA_COPY;
		else if (hpu_op_is_dma_fill(&n.op))
			n.kind = HPU_L_DMA_FILL;
		n.cost = (uint64_t)hpu_layout_numel(&n.op.l[0]) + 1;
		if (n.kind == HPU_L_GEMM)
			n.cost *= (uint64_t)n.op.l[1].shape[2];
		c->nodes[k++] = n;
	}
	c->num_nodes = k;
	return 0;
}

/* 2. Workspace */

/* Lowest offset for size bytes clear of the placed buffers in [lo, hi) (sorted by start). */
static uint64_t hpu_first_fit(const uint64_t *lo, const uint64_t *hi, unsigned int count,
			      uint64_t size)
{
	uint64_t at = 0;
	unsigned int i;

	for (i = 0; i < count; i++) {
		if (lo[i] >= at + size)
			break;
		if (hi[i] > at)
			at = hpu_round_up(hi[i], HPU_WS_ALIGN);
	}
	return at;
}

static int hpu_plan_workspace(struct hpu_compiler *c)
{
	const struct hpu_ir *g = c->g;
	unsigned int nb = g->num_bufs, i, j, k, n, t, placed = 0;
	uint32_t *first, *last, *order;
	uint64_t *lo, *hi;
	int ret = 0;

	first = malloc((nb + 1) * sizeof(*first));
	last = malloc((nb + 1) * sizeof(*last));
	order = malloc((nb + 1) * sizeof(*order));
	lo = malloc((nb + 1) * sizeof(*lo));
	hi = malloc((nb + 1) * sizeof(*hi));
	if (!first || !last || !order || !lo || !hi) {
		ret = hpu_error_set(ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < nb; i++) {
		first[i] = UINT32_MAX;
		last[i] = 0;
	}
	for (n = 0; n < c->num_nodes; n++)
		for (t = 0; t < c->nodes[n].op.num_tensors; t++) {
			uint32_t b = c->nodes[n].buf[t];

			if (b == HPU_GRAPH_NONE)
				continue;
			if (first[b] == UINT32_MAX)
				first[b] = n;
			last[b] = n;
		}
	/* Internal buffers by size, largest first (insertion sort: stable, deterministic). */
	for (i = 0; i < nb; i++) {
		if (!g->bufs[i].internal) {
			c->binding[i] = c->num_bindings++;
			continue;
		}
		for (j = placed++; j > 0 && g->bufs[order[j - 1]].size < g->bufs[i].size; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (i = 0; i < placed; i++) {
		uint32_t b = order[i];
		unsigned int count = 0;

		/* The placed buffers live at the same time as b, by offset. */
		for (j = 0; j < i; j++) {
			uint32_t o = order[j];

			if (first[o] > last[b] || first[b] > last[o])
				continue;
			for (k = count++; k > 0 && lo[k - 1] > c->ws_off[o]; k--) {
				lo[k] = lo[k - 1];
				hi[k] = hi[k - 1];
			}
			lo[k] = c->ws_off[o];
			hi[k] = c->ws_off[o] + g->bufs[o].size;
		}
		c->ws_off[b] = hpu_first_fit(lo, hi, count, g->bufs[b].size);
		if (c->ws_off[b] + g->bufs[b].size > c->ws_size)
			c->ws_size = c->ws_off[b] + g->bufs[b].size;
	}
out:
	free(first);
	free(last);
	free(order);
	free(lo);
	free(hi);
	return ret;
}

/* 3. Dependencies */

static bool hpu_access_of(const struct hpu_compiler *c, uint32_t node, unsigned int i,
			  struct hpu_access *a)
{
	const struct hpu_lnode *n = &c->nodes[node];
	const struct hpu_tensor_layout *l = &n->op.l[i];
	int64_t lo, hi, el = (int64_t)hpu_dt_size(l->dtype), base;
	uint32_t b = n->buf[i];

	if (b == HPU_GRAPH_NONE || !hpu_layout_span(l, &lo, &hi))
		return false;
	base = c->g->bufs[b].internal ? (int64_t)c->ws_off[b] : 0;
	*a = (struct hpu_access){
		.node = node,
		.region = c->g->bufs[b].internal ? 0 : 1 + c->binding[b],
		.lo = base + n->delta[i] + lo * el,
		.hi = base + n->delta[i] + (hi + 1) * el,
		.write = n->op.outputs & (1u << i),
	};
	return true;
}

static bool hpu_access_conflict(const struct hpu_access *a, const struct hpu_access *b)
{
	return a->region == b->region && a->lo < b->hi && b->lo < a->hi && (a->write || b->write);
}

static int hpu_dependencies(struct hpu_compiler *c)
{
	struct hpu_access *live = NULL, a;
	unsigned int num_live = 0, cap_live = 0, n, i, j, k;
	int ret = 0;

	for (n = 0; n < c->num_nodes && !ret; n++) {
		struct hpu_lnode *node = &c->nodes[n];

		node->deps_start = c->num_deps;
		for (i = 0; i < node->op.num_tensors && !ret; i++) {
			if (!hpu_access_of(c, n, i, &a))
				continue;
			for (j = 0; j < num_live && !ret; j++) {
				if (!hpu_access_conflict(&a, &live[j]))
					continue;
				ret = hpu_array_grow((void **)&c->deps, &c->cap_deps,
							c->num_deps + 1, sizeof(*c->deps));
				if (!ret)
					c->deps[c->num_deps++] = live[j].node;
			}
		}
		node->deps_count = c->num_deps - node->deps_start;
		/* Then the op's own accesses; a write hides what it covers from later ops. */
		for (i = 0; i < node->op.num_tensors && !ret; i++) {
			if (!hpu_access_of(c, n, i, &a))
				continue;
			for (j = k = 0; a.write && j < num_live; j++)
				if (!(live[j].region == a.region && live[j].lo >= a.lo &&
				      live[j].hi <= a.hi && live[j].node != n))
					live[k++] = live[j];
			if (a.write)
				num_live = k;
			ret = hpu_array_grow((void **)&live, &cap_live, num_live + 1,
						sizeof(*live));
			if (!ret)
				live[num_live++] = a;
		}
	}
	free(live);
	return ret;
}

/* 4 and 5. Scheduling and sync objects */

/* fit_engines: below this, one engine. */
#define HPU_SPREAD_PARALLELISM 1.5

/* The graph's work over its critical path's, by the nodes' costs: what could overlap. */
static double hpu_parallelism(const struct hpu_compiler *c)
{
	uint64_t total = 0, longest = 0, *finish = calloc(c->num_nodes + 1, sizeof(*finish));
	unsigned int n, d;

	/* Out of memory: not worth failing the compile over. */
	if (!finish)
		return HPU_SPREAD_PARALLELISM;
	for (n = 0; n < c->num_nodes; n++) {
		const struct hpu_lnode *node = &c->nodes[n];
		uint64_t start = 0;

		for (d = 0; d < node->deps_count; d++)
			if (finish[c->deps[node->deps_start + d]] > start)
				start = finish[c->deps[node->deps_start + d]];
		finish[n] = start + node->cost;
		total += node->cost;
		if (finish[n] > longest)
			longest = finish[n];
	}
	free(finish);
	return longest ? (double)total / (double)longest : 1;
}

static bool hpu_is_tpc(const struct hpu_compiler *c, unsigned int e)
{
	return e >= c->tpc_first && e < c->tpc_first + c->tpc_count;
}

static unsigned int hpu_engine_for(const struct hpu_compiler *c, const struct hpu_lnode *n,
				   const uint64_t *load)
{
	unsigned int e, best, d;
	uint32_t latest = HPU_GRAPH_NONE;

	if (n->kind == HPU_L_DMA_COPY || n->kind == HPU_L_DMA_FILL)
		return c->dma;
	if (n->kind == HPU_L_GEMM)
		return c->mme;
	for (d = 0; d < n->deps_count; d++) {
		uint32_t p = c->deps[n->deps_start + d];

		if (hpu_is_tpc(c, c->nodes[p].engine) && (latest == HPU_GRAPH_NONE || p > latest))
			latest = p;
	}
	if (latest != HPU_GRAPH_NONE)
		return c->nodes[latest].engine;
	best = c->tpc_first;
	for (e = c->tpc_first; e < c->tpc_first + c->tpc_count; e++)
		if (load[e] < load[best])
			best = e;
	return best;
}

static void hpu_schedule(struct hpu_compiler *c)
{
	uint32_t vc[HPU_GRAPH_MAX_ENGINES][HPU_GRAPH_MAX_ENGINES] = { { 0 } };
	uint64_t load[HPU_GRAPH_MAX_ENGINES] = { 0 };
	unsigned int n, d, e, f;

	for (n = 0; n < c->num_nodes; n++) {
		struct hpu_lnode *node = &c->nodes[n];
		uint32_t need[HPU_GRAPH_MAX_ENGINES];

		e = node->engine = hpu_engine_for(c, node, load);
		load[e] += node->cost;
		for (f = 0; f < c->engines; f++) {
			need[f] = HPU_GRAPH_NONE;
			node->wait[f] = HPU_GRAPH_NONE;
		}
		/* On each other engine, the latest producer covers the earlier ones. */
		for (d = 0; d < node->deps_count; d++) {
			uint32_t p = c->deps[node->deps_start + d];

			f = c->nodes[p].engine;
			if (f != e && (need[f] == HPU_GRAPH_NONE || p > need[f]))
				need[f] = p;
		}
		for (f = 0; f < c->engines; f++) {
			struct hpu_lnode *p;
			unsigned int k;

			if (need[f] == HPU_GRAPH_NONE)
				continue;
			p = &c->nodes[need[f]];
			if (p->pos <= vc[e][f])
				continue; /* known done through an earlier wait */
			node->wait[f] = need[f];
			p->signal = true;
			c->waits++;
			for (k = 0; k < c->engines; k++)
				if (p->vc[k] > vc[e][k])
					vc[e][k] = p->vc[k];
		}
		node->pos = ++vc[e][e];
		memcpy(node->vc, vc[e], sizeof(node->vc));
	}
	for (n = 0; n < c->num_nodes; n++)
		if (c->nodes[n].signal)
			c->nodes[n].ordinal = ++c->signals[c->nodes[n].engine];
}

/* 6. Emission */

static int hpu_site(struct hpu_compiler *c, unsigned int sec, size_t at, uint32_t base)
{
	int ret = hpu_array_grow((void **)&c->sites, &c->cap_sites, c->num_sites + 1,
				    sizeof(*c->sites));

	if (!ret)
		ret = hpu_array_grow((void **)&c->site_sec, &c->cap_site_sec, c->num_sites + 1,
					sizeof(*c->site_sec));
	if (ret)
		return ret;
	c->sites[c->num_sites] = (struct hpu_site){ .at = (uint32_t)at, .base = base };
	c->site_sec[c->num_sites++] = sec;
	return 0;
}

/* Operand addresses less their sites' bases; bases[i] HPU_GRAPH_NONE for an absent one. */
static void hpu_operand_addrs(const struct hpu_compiler *c, const struct hpu_lnode *n,
			      uint64_t *addrs, uint32_t *bases)
{
	unsigned int i;

	for (i = 0; i < HPU_OP_TENSORS; i++) {
		uint32_t b = n->buf[i];

		addrs[i] = 0;
		bases[i] = HPU_GRAPH_NONE;
		if (b == HPU_GRAPH_NONE || i >= n->op.num_tensors)
			continue;
		if (c->g->bufs[b].internal) {
			bases[i] = HPU_SITE_WORKSPACE;
			addrs[i] = c->ws_off[b] + (uint64_t)n->delta[i];
		} else {
			bases[i] = c->binding[b];
			addrs[i] = (uint64_t)n->delta[i];
		}
	}
}

static uint64_t hpu_sync_addr(unsigned int e)
{
	return e * sizeof(uint32_t);
}

/* A packet's address fields and what they are relative to. */
struct hpu_pkt_sites {
	unsigned int count;
	size_t at[3];
	uint32_t base[3];
};

static int hpu_emit_params(struct hpu_compiler *c, const struct hpu_lnode *n,
			   const uint64_t *addrs, const uint32_t *bases, uint64_t *off,
			   uint32_t *size)
{
	uint8_t block[HPU_KERNEL_PARAMS_MAX];
	unsigned int i;
	int ret = 0;

	*size = (uint32_t)hpu_params_encode(&n->op, addrs, block);
	hpu_bytes_align(&c->sec[0], HPU_PARAMS_ALIGN);
	*off = hpu_bytes_put(&c->sec[0], block, *size);
	for (i = 0; i < HPU_OP_SCALARS && n->src != HPU_GRAPH_NONE && !ret; i++) {
		ret = hpu_array_grow((void **)&c->params, &c->cap_params, c->num_params + 1,
				     sizeof(*c->params));
		if (!ret)
			c->params[c->num_params++] = (struct hpu_param){
				.at = (uint32_t)(*off + offsetof(struct hpu_kernel_params, scalars) +
						 i * sizeof(uint64_t)),
				.src = n->src * HPU_OP_SCALARS + i,
			};
	}
	for (i = 0; i < n->op.num_tensors && !ret; i++)
		if (bases[i] != HPU_GRAPH_NONE)
			ret = hpu_site(c, 0, *off + sizeof(struct hpu_kernel_params) +
						     i * sizeof(struct hpu_tensor_desc) +
						     offsetof(struct hpu_tensor_desc, addr),
				       bases[i]);
	return ret;
}

/* The op's own packet into cb; ps gets its address fields, offsets within cb. */
static int hpu_emit_op(struct hpu_compiler *c, const struct hpu_lnode *n, struct hpu_cb *cb,
		       struct hpu_pkt_sites *ps)
{
	uint8_t gemm[sizeof(struct hpu_pkt_mme_gemm)];
	uint64_t addrs[HPU_OP_TENSORS], off, bytes;
	uint32_t bases[HPU_OP_TENSORS], size;
	size_t at = cb->size;
	int ret;

	hpu_operand_addrs(c, n, addrs, bases);
	bytes = (uint64_t)hpu_layout_numel(&n->op.l[0]) * hpu_dt_size(n->op.l[0].dtype);
	switch (n->kind) {
	case HPU_L_GEMM:
		ret = hpu_gemm_encode(&n->op, addrs, n->beta, gemm);
		if (ret)
			return ret;
		hpu_cb_gemm(cb, gemm);
		*ps = (struct hpu_pkt_sites){
			3,
			{ at + offsetof(struct hpu_pkt_mme_gemm, c),
			  at + offsetof(struct hpu_pkt_mme_gemm, a),
			  at + offsetof(struct hpu_pkt_mme_gemm, b) },
			{ bases[0], bases[1], bases[2] },
		};
		return 0;
	case HPU_L_DMA_COPY:
		hpu_cb_copy(cb, addrs[0], addrs[1], bytes);
		*ps = (struct hpu_pkt_sites){ 2,
					      { at + offsetof(struct hpu_pkt_lin_dma, dst),
						at + offsetof(struct hpu_pkt_lin_dma, src) },
					      { bases[0], bases[1] } };
		return 0;
	case HPU_L_DMA_FILL:
		hpu_cb_fill(cb, addrs[0], 0, bytes);
		*ps = (struct hpu_pkt_sites){ 1, { at + offsetof(struct hpu_pkt_lin_dma, dst) },
					      { bases[0] } };
		return 0;
	case HPU_L_KERNEL:
		break;
	}
	ret = hpu_emit_params(c, n, addrs, bases, &off, &size);
	if (ret)
		return ret;
	hpu_cb_tpc_launch(cb, off, size);
	*ps = (struct hpu_pkt_sites){ 1, { at + offsetof(struct hpu_pkt_tpc_launch, params) },
				      { HPU_SITE_PARAMS } };
	return 0;
}

/* An op on its engine: its waits, its packet, its signal. */
static int hpu_emit_node(struct hpu_compiler *c, const struct hpu_lnode *n)
{
	unsigned int sec = 1 + n->engine, f, i;
	struct hpu_pkt_sites ps = { 0 };
	struct hpu_cb cb;
	size_t start = c->sec[sec].len;
	int ret = 0;

	hpu_cb_init(&cb);
	for (f = 0; f < c->engines; f++) {
		if (n->wait[f] == HPU_GRAPH_NONE)
			continue;
		ret = hpu_site(c, sec, start + cb.size + offsetof(struct hpu_pkt_wait, addr),
			       HPU_SITE_BLOB);
		hpu_cb_wait(&cb, hpu_sync_addr(f), c->nodes[n->wait[f]].ordinal);
		if (ret)
			return ret;
	}
	ret = hpu_emit_op(c, n, &cb, &ps);
	for (i = 0; i < ps.count && !ret; i++)
		if (ps.base[i] != HPU_GRAPH_NONE)
			ret = hpu_site(c, sec, start + ps.at[i], ps.base[i]);
	if (!ret && n->signal) {
		ret = hpu_site(c, sec, start + cb.size + offsetof(struct hpu_pkt_signal, addr),
			       HPU_SITE_BLOB);
		hpu_cb_signal(&cb, hpu_sync_addr(n->engine), 1);
	}
	hpu_bytes_put(&c->sec[sec], cb.buf, cb.size);
	return ret;
}

/* Lays the sections out in one blob and makes every site relative to it. */
static int hpu_emit_blob(struct hpu_compiler *c, struct hpu_recipe *r)
{
	struct hpu_bytes blob = { 0 };
	size_t start[1 + HPU_GRAPH_MAX_ENGINES];
	unsigned int s, e, i;

	hpu_bytes_put(&blob, NULL, HPU_BLOB_SYNC_SIZE);
	for (s = 0; s <= c->engines; s++) {
		hpu_bytes_align(&blob, s ? 8 : HPU_PARAMS_ALIGN);
		start[s] = hpu_bytes_put(&blob, c->sec[s].p, c->sec[s].len);
		if (c->sec[s].oom)
			blob.oom = true;
	}
	if (blob.oom || blob.len > UINT32_MAX) {
		free(blob.p);
		return hpu_error_set(ENOMEM, "out of memory for a recipe of %u ops", c->num_nodes);
	}
	for (i = 0; i < c->num_sites; i++) {
		struct hpu_site *site = &c->sites[i];

		site->at += (uint32_t)start[c->site_sec[i]];
		if (site->base == HPU_SITE_PARAMS) {
			hpu_put_u64(blob.p + site->at, hpu_get_u64(blob.p + site->at) + start[0]);
			site->base = HPU_SITE_BLOB;
		}
	}
	for (i = 0; i < c->num_params; i++)
		c->params[i].at += (uint32_t)start[0];
	r->blob = blob.p;
	r->blob_size = (uint32_t)blob.len;
	r->sync_off = 0;
	r->sync_size = HPU_BLOB_SYNC_SIZE;
	r->workspace_off = hpu_round_up(blob.len, HPU_WS_ALIGN);
	r->workspace_size = c->ws_size;
	r->num_engines = c->engines;
	for (e = 0; e < c->engines; e++) {
		r->engine[e].off = (uint32_t)start[1 + e];
		r->engine[e].size = (uint32_t)c->sec[1 + e].len;
	}
	return 0;
}

static int hpu_emit(struct hpu_compiler *c, struct hpu_recipe *r)
{
	unsigned int n;
	int ret = 0;

	for (n = 0; n < c->num_nodes && !ret; n++) {
		ret = hpu_emit_node(c, &c->nodes[n]);
		r->engine[c->nodes[n].engine].nodes++;
	}
	return ret ? ret : hpu_emit_blob(c, r);
}

static void hpu_compiler_engines(struct hpu_compiler *c, unsigned int e)
{
	c->engines = e ? (e < HPU_GRAPH_MAX_ENGINES ? e : HPU_GRAPH_MAX_ENGINES) : 1;
	/* Fewer queues than engine kinds: kinds share an engine, DMA with the MME first. */
	c->dma = 0;
	c->mme = c->engines > 2 ? 1 : 0;
	c->tpc_first = c->engines > 2 ? 2 : c->engines - 1;
	c->tpc_count = c->engines - c->tpc_first;
}

int hpu_compile(const struct hpu_ir *g, const struct hpu_compile_config *cfg,
		struct hpu_recipe **rp)
{
	struct hpu_compiler c = { .g = g, .cfg = cfg };
	struct hpu_recipe *r = calloc(1, sizeof(*r));
	unsigned int s;
	int ret;

	c.ws_off = calloc(g->num_bufs + 1, sizeof(*c.ws_off));
	c.binding = calloc(g->num_bufs + 1, sizeof(*c.binding));
	ret = r && c.ws_off && c.binding ? 0 : hpu_error_set(ENOMEM, "out of memory");
	hpu_compiler_engines(&c, cfg->engines);
	if (!ret)
		ret = hpu_lower(&c);
	if (!ret)
		ret = hpu_plan_workspace(&c);
	if (!ret)
		ret = hpu_dependencies(&c);
	if (!ret && cfg->fit_engines && c.engines > 1 &&
	    hpu_parallelism(&c) < HPU_SPREAD_PARALLELISM)
		hpu_compiler_engines(&c, 1);
	if (!ret) {
		hpu_schedule(&c);
		ret = hpu_emit(&c, r);
	}
	if (!ret) {
		atomic_init(&r->refs, 1);
		r->sites = c.sites;
		c.sites = NULL;
		r->num_sites = c.num_sites;
		r->params = c.params;
		c.params = NULL;
		r->num_params = c.num_params;
		r->num_bindings = c.num_bindings;
		r->num_nodes = c.num_nodes;
		r->num_waits = c.waits;
		for (s = 0; s < c.engines; s++)
			r->num_signals += c.signals[s];
		*rp = r;
	} else {
		free(r);
	}
	for (s = 0; s <= HPU_GRAPH_MAX_ENGINES; s++)
		free(c.sec[s].p);
	free(c.sites);
	free(c.params);
	free(c.site_sec);
	free(c.nodes);
	free(c.deps);
	free(c.ws_off);
	free(c.binding);
	return ret;
}

void hpu_recipe_get(struct hpu_recipe *r)
{
	atomic_fetch_add(&r->refs, 1);
}

void hpu_recipe_put(struct hpu_recipe *r)
{
	if (atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (r->inst)
		r->inst_free(r->inst);
	free(r->blob);
	free(r->sites);
	free(r->params);
	free(r->key);
	free(r);
}

void hpu_recipe_write_params(const struct hpu_recipe *r, uint8_t *image, const uint64_t *values)
{
	unsigned int i;

	for (i = 0; i < r->num_params; i++)
		hpu_put_u64(image + r->params[i].at, values[i]);
}

bool hpu_op_scalars_at_run(const struct hpu_op *op)
{
	return op->kernel < HPU_OPK_GEMM && !hpu_op_is_dma_fill(op);
}

/*
 * The key: every field that decides the recipe's bytes or what it computes -
 * compiler, packet and kernel-ABI versions, firmware, engines; per op its
 * kernel, arguments and outputs, whether its numbers are parameters and
 * else their values, per operand its buffer (which operands share memory),
 * delta, dtype, shape and strides; which buffers are intermediates and
 * their sizes - but not where the persistent tensors are, nor the values
 * of parameters (a launch writes them).  Its hash is FNV-1a.
 */
int hpu_ir_key(const struct hpu_ir *g, const struct hpu_compile_config *cfg, uint8_t **key,
		  size_t *size, uint64_t *hash)
{
	struct hpu_bytes k = { 0 };
	unsigned int n, i, d;

	hpu_bytes_put_u64(&k, (uint64_t)HPU_COMPILER_VERSION << 32 | HPU_PKT_VERSION << 16 |
				      HPU_KERNEL_PARAMS_VERSION);
	hpu_bytes_put_u64(&k, (uint64_t)cfg->fw_version << 32 | cfg->engines);
	hpu_bytes_put_u64(&k, cfg->fit_engines);
	hpu_bytes_put_u64(&k, g->num_bufs);
	/* A persistent buffer's size does not matter: only the bytes its operands reach. */
	for (i = 0; i < g->num_bufs; i++)
		hpu_bytes_put_u64(&k, g->bufs[i].internal ? g->bufs[i].size << 1 | 1 : 0);
	hpu_bytes_put_u64(&k, g->num_nodes);
	for (n = 0; n < g->num_nodes; n++) {
		const struct hpu_op *op = &g->nodes[n].op;

		hpu_bytes_put_u64(&k, (uint64_t)op->kernel << 32 | op->num_tensors << 16 |
				      op->outputs);
		hpu_bytes_put(&k, op->args, sizeof(op->args));
		hpu_bytes_put_u64(&k, hpu_op_scalars_at_run(op));
		if (!hpu_op_scalars_at_run(op))
			hpu_bytes_put(&k, op->scalars, sizeof(op->scalars));
		for (i = 0; i < op->num_tensors; i++) {
			const struct hpu_tensor_layout *l = &op->l[i];

			hpu_bytes_put_u64(&k, g->nodes[n].buf[i]);
			if (g->nodes[n].buf[i] == HPU_GRAPH_NONE)
				continue;
			hpu_bytes_put_u64(&k, (uint64_t)g->nodes[n].delta[i]);
			hpu_bytes_put_u64(&k, (uint64_t)l->dtype << 32 | l->ndim);
			for (d = 0; d < l->ndim; d++) {
				hpu_bytes_put_u64(&k, (uint64_t)l->shape[d]);
				hpu_bytes_put_u64(&k, (uint64_t)l->strides[d]);
			}
		}
	}
	if (k.oom) {
		free(k.p);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	*key = k.p;
	*size = k.len;
	*hash = hpu_fnv1a(HPU_FNV1A_INIT, k.p, k.len);
	return 0;
}

