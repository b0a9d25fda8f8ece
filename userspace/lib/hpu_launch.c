/* SPDX-License-Identifier: MIT */
/*
 * Launching ops on the device: a kernel is a TPC_LAUNCH packet naming a
 * parameter block, a matrix product an MME_GEMM packet; either becomes one
 * job on the stream.
 *
 * Parameter blocks live in pinned host memory, a ring of chunks per stream
 * (struct hpu_stream.params): the CPU writes a block in place and the
 * device reads it over the MMU when the packet runs, so a launch costs no
 * copy packet and no system call beyond its submit.  Device memory would
 * need the block DMAed in by a LIN_DMA from pinned memory anyway, one more
 * packet and a second pass over the same bytes, for a block of at most
 * 2 KiB that the device reads once.  A chunk is refilled only once the
 * last job that used it has ended; the stream's done counter usually tells
 * that without asking the driver.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <drm/hpu_packets.h>

#include "hpu_internal.h"

_Static_assert(HPU_OP_TENSORS == HPU_KERNEL_MAX_TENSORS, "op operands differ from the ABI's");
_Static_assert(HPU_KERNEL_PARAMS_MAX <= HPU_PARAM_CHUNK, "a parameter block outgrows a chunk");
_Static_assert(sizeof(((struct hpu_op *)0)->args) ==
		       sizeof(((struct hpu_kernel_params *)0)->args) &&
		       sizeof(((struct hpu_op *)0)->scalars) ==
		       sizeof(((struct hpu_kernel_params *)0)->scalars),
	       "op arguments differ from the ABI's");

/* Blocks start 64-byte aligned: a cache line of their own. */
#define HPU_PARAM_ALIGN 64u

static uint64_t hpu_f64_bits(double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

static uint32_t hpu_f32_bits(float v)
{
	uint32_t bits;

	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

size_t hpu_params_encode(const struct hpu_op *op, const uint64_t *addrs, void *buf)
{
	struct hpu_kernel_params p = {
		.version = HPU_KERNEL_PARAMS_VERSION,
		.kernel = op->kernel,
		.num_tensors = op->num_tensors,
	};
	struct hpu_tensor_desc *d = (struct hpu_tensor_desc *)((char *)buf + sizeof(p));
	unsigned int i, k;

	for (i = 0; i < HPU_KERNEL_MAX_ARGS; i++) {
		p.args[i] = op->args[i];
		p.scalars[i] = hpu_f64_bits(op->scalars[i]);
	}
	memcpy(buf, &p, sizeof(p));
	for (i = 0; i < op->num_tensors; i++, d++) {
		const struct hpu_tensor_layout *l = &op->l[i];
		struct hpu_tensor_desc desc = { 0 };

		/* An absent operand keeps its slot with an empty descriptor (ignored). */
		for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++)
			desc.shape[k] = 1;
		if (op->t[i]) {
			desc.addr = addrs[i];
			desc.dtype = l->dtype;
			desc.ndim = l->ndim;
			for (k = 0; k < l->ndim; k++) {
				desc.shape[k] = (uint64_t)l->shape[k];
				desc.strides[k] = l->strides[k];
			}
		}
		memcpy(d, &desc, sizeof(desc));
	}
	return sizeof(p) + op->num_tensors * sizeof(*d);
}

/*
 * One matrix of a [batch, rows, cols] layout as the engine takes it: row
 * major with a leading dimension, or transposed (stored cols x rows).
 * Dims of size 1 take any stride.
 */
static int hpu_gemm_matrix(const struct hpu_tensor_layout *l, const char *name, bool may_trans,
			   __u64 *ld, __u64 *batch_stride, bool *trans)
{
	int64_t r = l->shape[1], c = l->shape[2], sr = l->strides[1], sc = l->strides[2];

	if (c == 1)
		sc = 1;
	if (r == 1)
		sr = sc == 1 ? c : 1;
	if (l->strides[0] < 0 || (l->shape[0] > 1 && sr < 0) || sc < 0)
		return hpu_error_set(EINVAL, "%s has a negative stride: the matrix engine takes none",
				     name);
	*batch_stride = (__u64)l->strides[0];
	*trans = false;
	if (sc == 1 && sr >= c) {
		*ld = (__u64)sr;
		return 0;
	}
	if (may_trans && sr == 1 && sc >= r) {
		*ld = (__u64)sc;
		*trans = true;
		return 0;
	}
	return hpu_error_set(EINVAL,
			     "%s (strides %" PRId64 ", %" PRId64 ") is not a matrix the engine reads: "
			     "it needs %s stride 1; copy it to a contiguous tensor",
			     name, l->strides[1], l->strides[2],
			     may_trans ? "one dim of" : "its last dim of");
}

int hpu_gemm_encode(const struct hpu_op *op, const uint64_t *addrs, double beta, void *out)
{
	const struct hpu_tensor_layout *c = &op->l[0], *a = &op->l[1], *b = &op->l[2];
	struct hpu_pkt_mme_gemm pkt = {
		.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, 0),
		.dtype_ab = a->dtype,
		.dtype_c = c->dtype,
		.batch = (uint32_t)c->shape[0],
		.m = (uint32_t)c->shape[1],
		.n = (uint32_t)c->shape[2],
		.k = (uint32_t)a->shape[2],
		.a = addrs[1],
		.b = addrs[2],
		.c = addrs[0],
		.alpha = hpu_f32_bits(1.0f),
		.beta = hpu_f32_bits((float)beta),
	};
	bool ta, tb, tc;
	int ret;

	if (c->shape[0] > UINT32_MAX || c->shape[1] > UINT32_MAX || c->shape[2] > UINT32_MAX ||
	    a->shape[2] > UINT32_MAX)
		return hpu_error_set(EINVAL, "matmul dims beyond the engine's 2^32");
	ret = hpu_gemm_matrix(a, "a", true, &pkt.lda, &pkt.stride_a, &ta);
	if (!ret)
		ret = hpu_gemm_matrix(b, "b", true, &pkt.ldb, &pkt.stride_b, &tb);
	if (!ret)
		ret = hpu_gemm_matrix(c, "out", false, &pkt.ldc, &pkt.stride_c, &tc);
	if (ret)
		return ret;
	pkt.header = HPU_PKT_HEADER(HPU_PKT_MME_GEMM, (ta ? HPU_PKT_GEMM_TRANS_A : 0) |
							      (tb ? HPU_PKT_GEMM_TRANS_B : 0));
	memcpy(out, &pkt, sizeof(pkt));
	return 0;
}

void hpu_params_release(struct hpu_stream *s)
{
	if (s->params)
		hpu_pinned_free(s->dev, s->params_va);
}

/* Room for size bytes in the stream's ring, for the job to be submitted next. */
static int hpu_params_alloc(struct hpu_stream *s, uint32_t size, uint64_t *va, void **host)
{
	uint64_t last;
	void *mem;
	int ret;

	if (!s->params) {
		ret = hpu_pinned_alloc(s->dev, HPU_PARAM_CHUNKS * HPU_PARAM_CHUNK, &s->params_va,
				       &mem);
		if (ret)
			return ret;
		s->params = mem;
		s->params_chunk = 0;
		s->params_used = 0;
		memset(s->params_job, 0, sizeof(s->params_job));
	}
	size = (uint32_t)hpu_round_up(size, HPU_PARAM_ALIGN);
	if (s->params_used + size > HPU_PARAM_CHUNK) {
		unsigned int next = (s->params_chunk + 1) % HPU_PARAM_CHUNKS;

		/* A job whose submit failed never ran: its chunk is free. */
		last = s->params_job[next] < s->jobs ? s->params_job[next] : s->jobs;
		ret = hpu_stream_wait_job(s, last);
		if (ret)
			return ret;
		s->params_chunk = next;
		s->params_used = 0;
	}
	*va = s->params_va + s->params_chunk * HPU_PARAM_CHUNK + s->params_used;
	*host = s->params + s->params_chunk * HPU_PARAM_CHUNK + s->params_used;
	s->params_used += size;
	s->params_job[s->params_chunk] = s->jobs + 1;
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

int hpu_launch(struct hpu_stream *s, const struct hpu_op *op)
{
	struct hpu_cb cb;
	int ret;

	hpu_cb_init(&cb);
	if (op->kernel == HPU_OPK_GEMM)
		ret = hpu_launch_gemm(s, &cb, op);
	else
		ret = hpu_launch_kernel(s, &cb, op);
	return ret ? ret : hpu_stream_submit(s, &cb, op->name);
}
