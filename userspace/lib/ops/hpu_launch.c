/* SPDX-License-Identifier: MIT */
/*
 * Launching ops on the device: a kernel is a TPC_LAUNCH packet naming a
 * parameter block, a matrix product an MME_GEMM packet, a copy or zero fill
 * that moves bytes unchanged a LIN_DMA; each becomes one job on the stream.
 *
 * Parameter blocks live in pinned host memory, a ring of chunks per stream
 * (struct hpu_param_ring): the CPU writes a block in place and the
 * device reads it over the MMU when the packet runs, so a launch costs no
 * copy packet and no system call beyond its submit.  Device memory would
 * need the block DMAed in by a LIN_DMA from pinned memory anyway, one more
 * packet and a second pass over the same bytes, for a block of at most
 * 2 KiB that the device reads once.  A chunk is refilled only once the
 * last job that used it has ended; the stream's done counter usually tells
 * that without asking the driver.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <drm/hpu_packets.h>

#include "../ops/ops.h"

_Static_assert(HPU_KERNEL_PARAMS_MAX <= HPU_PARAM_CHUNK, "a parameter block outgrows a chunk");

/* Blocks start 64-byte aligned: a cache line of their own. */
#define HPU_PARAM_ALIGN 64u

void hpu_params_release(struct hpu_stream *s)
{
	if (!s->params)
		return;
	hpu_pinned_free(s->dev, s->params->va);
	free(s->params);
}

/* The stream's ring, at its first kernel. */
static int hpu_params_create(struct hpu_stream *s)
{
	struct hpu_param_ring *p;
	void *mem;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p)
		return hpu_error_set(ENOMEM, "out of memory");
	ret = hpu_pinned_alloc(s->dev, HPU_PARAM_CHUNKS * HPU_PARAM_CHUNK, &p->va, &mem);
	if (ret) {
		free(p);
		return ret;
	}
	p->host = mem;
	s->params = p;
	return 0;
}

/* Room for size bytes in the stream's ring, for the job to be submitted next. */
static int hpu_params_alloc(struct hpu_stream *s, uint32_t size, uint64_t *va, void **host)
{
	struct hpu_param_ring *p;
	uint64_t last;
	int ret;

	if (!s->params) {
		ret = hpu_params_create(s);
		if (ret)
			return ret;
	}
	p = s->params;
	size = (uint32_t)hpu_round_up(size, HPU_PARAM_ALIGN);
	if (p->used + size > HPU_PARAM_CHUNK) {
		unsigned int next = (p->chunk + 1) % HPU_PARAM_CHUNKS;

		/* A job whose submit failed never ran: its chunk is free. */
		last = p->job[next] < s->jobs ? p->job[next] : s->jobs;
		ret = hpu_stream_wait_job(s, last);
		if (ret)
			return ret;
		p->chunk = next;
		p->used = 0;
	}
	*va = p->va + p->chunk * HPU_PARAM_CHUNK + p->used;
	*host = p->host + p->chunk * HPU_PARAM_CHUNK + p->used;
	p->used += size;
	p->job[p->chunk] = s->jobs + 1;
	return 0;
}

static void hpu_op_addrs(const struct hpu_op *op, uint64_t *addrs)
{
	unsigned int i;

	for (i = 0; i < op->num_tensors; i++)
		addrs[i] = op->t[i] ? hpu_tensor_addr(op->t[i]->storage, &op->l[i]) : 0;
}

static int hpu_launch_kernel(struct hpu_stream *s, struct hpu_cb *cb, const struct hpu_op *op)
{
	uint8_t block[HPU_KERNEL_PARAMS_MAX];
	uint64_t addrs[HPU_OP_TENSORS], va;
	size_t size;
	void *host;
	int ret;

	hpu_op_addrs(op, addrs);
	size = hpu_params_encode(op, addrs, block);
	ret = hpu_params_alloc(s, (uint32_t)size, &va, &host);
	if (ret)
		return ret;
	memcpy(host, block, size);
	hpu_cb_tpc_launch(cb, va, (uint32_t)size);
	return 0;
}

/*
 * A GEMM with a bias: the bias is first broadcast into out (a COPY kernel),
 * then the product accumulates onto it (beta 1), both in one job.
 */
static int hpu_launch_gemm(struct hpu_stream *s, struct hpu_cb *cb, const struct hpu_op *op)
{
	uint8_t pkt[sizeof(struct hpu_pkt_mme_gemm)];
	uint64_t addrs[HPU_OP_TENSORS];
	int ret;

	hpu_op_addrs(op, addrs);
	ret = hpu_gemm_encode(op, addrs, op->t[3] ? 1.0 : 0.0, pkt);
	if (!ret && op->t[3]) {
		struct hpu_op copy = {
			.name = op->name,
			.kernel = HPU_KERNEL_UNARY,
			.num_tensors = 2,
			.outputs = 1,
			.t = { op->t[0], op->t[3] },
			.l = { op->l[0], op->l[3] },
			.args = { HPU_UNARY_COPY },
		};

		ret = hpu_launch_kernel(s, cb, &copy);
	}
	if (!ret)
		hpu_cb_gemm(cb, pkt);
	return ret;
}

/*
 * A copy or a zero fill whose bytes a DMA moves as they are, as the
 * compiler lowers it: no parameter block, and the DMA engine instead of a
 * kernel.  False if op is not one.
 */
static bool hpu_launch_dma(struct hpu_cb *cb, const struct hpu_op *op)
{
	bool copy = hpu_op_is_dma_copy(op) && op->t[0]->storage != op->t[1]->storage;
	uint64_t addrs[HPU_OP_TENSORS], bytes;

	if (!copy && !hpu_op_is_dma_fill(op))
		return false;
	bytes = (uint64_t)hpu_layout_numel(&op->l[0]) * hpu_dt_size(op->l[0].dtype);
	if (!bytes)
		return false;
	hpu_op_addrs(op, addrs);
	if (copy)
		hpu_cb_copy(cb, addrs[0], addrs[1], bytes);
	else
		hpu_cb_fill(cb, addrs[0], 0, bytes);
	return true;
}

int hpu_launch(struct hpu_stream *s, const struct hpu_op *op)
{
	struct hpu_cb cb;
	int ret = 0;

	hpu_cb_init(&cb);
	if (op->kernel == HPU_OPK_GEMM)
		ret = hpu_launch_gemm(s, &cb, op);
	else if (!hpu_launch_dma(&cb, op))
		ret = hpu_launch_kernel(s, &cb, op);
	return ret ? ret : hpu_stream_submit(s, &cb, op->name);
}
