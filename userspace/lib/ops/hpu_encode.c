/* SPDX-License-Identifier: MIT */
/*
 * The bytes the device reads for an op: a kernel's parameter block with its
 * tensor descriptors, and the matrix engine's GEMM packet; and which ops
 * need neither, since a DMA moves their bytes.  No device here, so the
 * host unit tests check every byte.
 *
 * hpu_op_is_dma_copy() and hpu_op_is_dma_fill() decide for eager launches
 * and the compiler alike: a COPY between contiguous tensors of one dtype
 * (in different storages, which the callers know) and a fill with +0 are
 * LIN_DMAs, work for the DMA engine and no parameter block.  The COPY
 * kernel to the same dtype moves bytes too (other kernels compute in
 * double, which would quiet a signaling NaN), so either path keeps every
 * bit.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <drm/hpu_packets.h>

#include "../ops/ops.h"

_Static_assert(HPU_OP_TENSORS == HPU_KERNEL_MAX_TENSORS, "op operands differ from the ABI's");
_Static_assert(sizeof(((struct hpu_op *)0)->args) ==
		       sizeof(((struct hpu_kernel_params *)0)->args) &&
		       sizeof(((struct hpu_op *)0)->scalars) ==
		       sizeof(((struct hpu_kernel_params *)0)->scalars),
	       "op arguments differ from the ABI's");

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

bool hpu_op_is_dma_copy(const struct hpu_op *op)
{
	const struct hpu_tensor_layout *o = &op->l[0], *i = &op->l[1];

	return op->kernel == HPU_KERNEL_UNARY && op->args[0] == HPU_UNARY_COPY &&
	       o->dtype == i->dtype && hpu_layout_is_contiguous(o) && hpu_layout_is_contiguous(i) &&
	       hpu_layout_numel(o) == hpu_layout_numel(i);
}

bool hpu_op_is_dma_fill(const struct hpu_op *op)
{
	/* +0 is all zero bytes in every dtype. */
	return op->kernel == HPU_KERNEL_FILL && op->scalars[0] == 0 && !signbit(op->scalars[0]) &&
	       hpu_layout_is_contiguous(&op->l[0]);
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

		/*
		 * An absent operand keeps its slot as an empty tensor: the kernel
		 * ignores it and the engine maps no memory for it.
		 */
		for (k = 0; k < HPU_TENSOR_MAX_DIMS; k++)
			desc.shape[k] = 1;
		if (!op->t[i]) {
			desc.dtype = HPU_DTYPE_F32;
			desc.ndim = 1;
			desc.shape[0] = 0;
		} else {
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
