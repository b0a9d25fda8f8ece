/* SPDX-License-Identifier: MIT */
/*
 * The graph IR that lazy mode (hpu_lazy.c) and HPU graphs (hpu_capture.c)
 * record ops into; hpu_recipe_cache.c finds or compiles its recipe.
 *
 * A recorded op keeps its checked struct hpu_op, with each operand turned
 * into (buffer, byte delta): the IR holds one reference per storage, so
 * the caller may destroy tensors before the IR is compiled.  A storage no
 * one else holds by then, whose first access writes all of it, is an
 * intermediate and gets workspace memory instead of its own.  The other
 * (persistent) buffers are based at their lowest operand address, so a view
 * that moves (the next batch of a data set) is the same graph at another
 * binding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_kernels.h>

#include "../recipe/recipe.h"

/* What a recorded operand's t[i] points at: it says "present", nothing more. */
const struct hpu_tensor hpu_ir_present;

static int hpu_ir_buffer(struct hpu_ir *g, struct hpu_storage *st, uint32_t *index)
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

int hpu_ir_add(struct hpu_ir *ir, const struct hpu_op *op)
{
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
	ret = hpu_array_grow((void **)&ir->nodes, &ir->cap_nodes, ir->num_nodes + 1,
			     sizeof(*ir->nodes));
	if (ret)
		return ret;
	node = &ir->nodes[ir->num_nodes];
	node->op = *op;
	for (i = 0; i < HPU_OP_TENSORS; i++) {
		node->buf[i] = HPU_GRAPH_NONE;
		node->delta[i] = 0;
		if (i >= op->num_tensors || !op->t[i])
			continue;
		ret = hpu_ir_buffer(ir, op->t[i]->storage, &node->buf[i]);
		if (ret)
			return ret;
		node->delta[i] = op->l[i].offset * (int64_t)hpu_dt_size(op->l[i].dtype);
		node->op.l[i].offset = 0;
		node->op.t[i] = &hpu_ir_present;
	}
	ir->num_nodes++;
	return 0;
}

void hpu_ir_clear(struct hpu_ir *ir)
{
	unsigned int i;

	for (i = 0; i < ir->num_bufs; i++)
		if (ir->bufs[i].st)
			hpu_storage_put(ir->bufs[i].st);
	ir->num_bufs = 0;
	ir->num_nodes = 0;
}

void hpu_ir_free(struct hpu_ir *ir)
{
	if (!ir)
		return;
	hpu_ir_clear(ir);
	free(ir->nodes);
	free(ir->bufs);
	free(ir);
}

/* Kernels whose outputs are read as well: optimizer state, scatter-adds, the RNG state. */
static bool hpu_op_reads_output(const struct hpu_op *op, unsigned int i)
{
	switch (op->kernel) {
	case HPU_KERNEL_SGD:
	case HPU_KERNEL_ADADELTA:
	case HPU_KERNEL_ADAMW:
	case HPU_KERNEL_EMBEDDING_BWD:
	case HPU_KERNEL_SCATTER_ADD:
	case HPU_KERNEL_SCATTER:
	case HPU_KERNEL_CLIP_GRAD_NORM:
	case HPU_KERNEL_FOREACH_SGD:
	case HPU_KERNEL_FOREACH_ADAMW:
	case HPU_KERNEL_FOREACH_ADADELTA:
	case HPU_KERNEL_FOREACH_LAMB:
	case HPU_KERNEL_FOREACH_CLIP:
		return true;
	case HPU_KERNEL_FOREACH_NORM:
		return i == 0; /* the accumulator */
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

void hpu_ir_finalize(struct hpu_ir *g, const unsigned int *holders)
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

int hpu_ir_seal(struct hpu_ir *ir)
{
	unsigned int *holders, b;

	holders = malloc((ir->num_bufs ? ir->num_bufs : 1) * sizeof(*holders));
	if (!holders)
		return hpu_error_set(ENOMEM, "out of memory");
	/* Every other reference is a tensor of the caller's. */
	for (b = 0; b < ir->num_bufs; b++)
		holders[b] = atomic_load(&ir->bufs[b].st->refs) - 1;
	hpu_ir_finalize(ir, holders);
	free(holders);
	return 0;
}

int hpu_ir_bindings(const struct hpu_ir *ir, uint64_t **bindings)
{
	unsigned int b, k = 0;

	*bindings = malloc((ir->num_bufs ? ir->num_bufs : 1) * sizeof(**bindings));
	if (!*bindings)
		return hpu_error_set(ENOMEM, "out of memory");
	for (b = 0; b < ir->num_bufs; b++)
		if (!ir->bufs[b].internal)
			(*bindings)[k++] = ir->bufs[b].st->va + (uint64_t)ir->bufs[b].anchor;
	return 0;
}

int hpu_ir_values(const struct hpu_ir *ir, const struct hpu_recipe *r, uint64_t **values)
{
	unsigned int p;

	*values = malloc((r->num_params ? r->num_params : 1) * sizeof(**values));
	if (!*values)
		return hpu_error_set(ENOMEM, "out of memory");
	for (p = 0; p < r->num_params; p++) {
		uint32_t n = r->params[p].src / HPU_OP_SCALARS;

		/* The key has the node count; a loaded recipe's parameters were checked against it. */
		if (n >= ir->num_nodes) {
			free(*values);
			*values = NULL;
			return hpu_error_set(EINVAL, "a recipe parameter names op %u of %u", n,
					     ir->num_nodes);
		}
		memcpy(&(*values)[p], &ir->nodes[n].op.scalars[r->params[p].src % HPU_OP_SCALARS],
		       sizeof(**values));
	}
	return 0;
}
