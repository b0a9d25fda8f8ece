/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor-engine kernels: the id -> definition table.
 */
#include <stddef.h>

#include "hdm_kernel.h"

static const struct hpu_kernel_def *const hpu_kernels[] = {
	[HPU_KERNEL_UNARY] = &hpu_kernel_unary,
	[HPU_KERNEL_BINARY] = &hpu_kernel_binary,
	[HPU_KERNEL_WHERE] = &hpu_kernel_where,
	[HPU_KERNEL_FILL] = &hpu_kernel_fill,
	[HPU_KERNEL_REDUCE] = &hpu_kernel_reduce,
	[HPU_KERNEL_SOFTMAX] = &hpu_kernel_softmax,
	[HPU_KERNEL_SOFTMAX_BWD] = &hpu_kernel_softmax_bwd,
	[HPU_KERNEL_NLL_LOSS] = &hpu_kernel_nll_loss,
	[HPU_KERNEL_NLL_LOSS_BWD] = &hpu_kernel_nll_loss_bwd,
	[HPU_KERNEL_CROSS_ENTROPY] = &hpu_kernel_cross_entropy,
	[HPU_KERNEL_CROSS_ENTROPY_BWD] = &hpu_kernel_cross_entropy_bwd,
	[HPU_KERNEL_DROPOUT] = &hpu_kernel_dropout,
	[HPU_KERNEL_DROPOUT_BWD] = &hpu_kernel_dropout_bwd,
	[HPU_KERNEL_RELU_BWD] = &hpu_kernel_relu_bwd,
	[HPU_KERNEL_GELU_BWD] = &hpu_kernel_gelu_bwd,
	[HPU_KERNEL_LAYER_NORM] = &hpu_kernel_layer_norm,
	[HPU_KERNEL_LAYER_NORM_BWD] = &hpu_kernel_layer_norm_bwd,
	[HPU_KERNEL_EMBEDDING] = &hpu_kernel_embedding,
	[HPU_KERNEL_EMBEDDING_BWD] = &hpu_kernel_embedding_bwd,
	[HPU_KERNEL_SGD] = &hpu_kernel_sgd,
	[HPU_KERNEL_ADADELTA] = &hpu_kernel_adadelta,
	[HPU_KERNEL_ADAMW] = &hpu_kernel_adamw,
	[HPU_KERNEL_CLIP_GRAD_NORM] = &hpu_kernel_clip_grad_norm,
};

const struct hpu_kernel_def *hpu_kernel_lookup(uint32_t id)
{
	return id < sizeof(hpu_kernels) / sizeof(hpu_kernels[0]) ? hpu_kernels[id] : NULL;
}
