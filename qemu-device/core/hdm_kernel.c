/* SPDX-License-Identifier: MIT */
/*
 * hpu tensor-engine kernels: the id -> definition table.
 */
#include <stddef.h>

#include "hdm_kernel.h"

static const struct hdm_kernel_def *const hdm_kernels[] = {
	[HPU_KERNEL_UNARY] = &hdm_kernel_unary,
	[HPU_KERNEL_BINARY] = &hdm_kernel_binary,
	[HPU_KERNEL_WHERE] = &hdm_kernel_where,
	[HPU_KERNEL_FILL] = &hdm_kernel_fill,
	[HPU_KERNEL_REDUCE] = &hdm_kernel_reduce,
	[HPU_KERNEL_SOFTMAX] = &hdm_kernel_softmax,
	[HPU_KERNEL_SOFTMAX_BWD] = &hdm_kernel_softmax_bwd,
	[HPU_KERNEL_NLL_LOSS] = &hdm_kernel_nll_loss,
	[HPU_KERNEL_NLL_LOSS_BWD] = &hdm_kernel_nll_loss_bwd,
	[HPU_KERNEL_CROSS_ENTROPY] = &hdm_kernel_cross_entropy,
	[HPU_KERNEL_CROSS_ENTROPY_BWD] = &hdm_kernel_cross_entropy_bwd,
	[HPU_KERNEL_DROPOUT] = &hdm_kernel_dropout,
	[HPU_KERNEL_DROPOUT_BWD] = &hdm_kernel_dropout_bwd,
	[HPU_KERNEL_RELU_BWD] = &hdm_kernel_relu_bwd,
	[HPU_KERNEL_GELU_BWD] = &hdm_kernel_gelu_bwd,
	[HPU_KERNEL_LAYER_NORM] = &hdm_kernel_layer_norm,
	[HPU_KERNEL_LAYER_NORM_BWD] = &hdm_kernel_layer_norm_bwd,
	[HPU_KERNEL_EMBEDDING] = &hdm_kernel_embedding,
	[HPU_KERNEL_EMBEDDING_BWD] = &hdm_kernel_embedding_bwd,
	[HPU_KERNEL_SGD] = &hdm_kernel_sgd,
	[HPU_KERNEL_ADADELTA] = &hdm_kernel_adadelta,
	[HPU_KERNEL_ADAMW] = &hdm_kernel_adamw,
	[HPU_KERNEL_CLIP_GRAD_NORM] = &hdm_kernel_clip_grad_norm,
	[HPU_KERNEL_CONV] = &hdm_kernel_conv,
	[HPU_KERNEL_CONV_BWD_INPUT] = &hdm_kernel_conv_bwd_input,
	[HPU_KERNEL_CONV_BWD_WEIGHT] = &hdm_kernel_conv_bwd_weight,
	[HPU_KERNEL_SILU_BWD] = &hdm_kernel_silu_bwd,
	[HPU_KERNEL_TRIANGLE] = &hdm_kernel_triangle,
	[HPU_KERNEL_ARANGE] = &hdm_kernel_arange,
	[HPU_KERNEL_RMS_NORM] = &hdm_kernel_rms_norm,
	[HPU_KERNEL_RMS_NORM_BWD] = &hdm_kernel_rms_norm_bwd,
	[HPU_KERNEL_FUSED_SDPA] = &hdm_kernel_fused_sdpa,
	[HPU_KERNEL_FUSED_SDPA_BWD] = &hdm_kernel_fused_sdpa_bwd,
	[HPU_KERNEL_INDEX_SELECT] = &hdm_kernel_index_select,
	[HPU_KERNEL_GATHER] = &hdm_kernel_gather,
	[HPU_KERNEL_SCATTER_ADD] = &hdm_kernel_scatter_add,
	[HPU_KERNEL_TOPK] = &hdm_kernel_topk,
	[HPU_KERNEL_SCATTER] = &hdm_kernel_scatter,
	[HPU_KERNEL_FOREACH_SGD] = &hdm_kernel_foreach_sgd,
	[HPU_KERNEL_FOREACH_ADAMW] = &hdm_kernel_foreach_adamw,
	[HPU_KERNEL_FOREACH_ADADELTA] = &hdm_kernel_foreach_adadelta,
	[HPU_KERNEL_FOREACH_LAMB] = &hdm_kernel_foreach_lamb,
	[HPU_KERNEL_FOREACH_NORM] = &hdm_kernel_foreach_norm,
	[HPU_KERNEL_FOREACH_CLIP] = &hdm_kernel_foreach_clip,
	[HPU_KERNEL_BATCH_NORM] = &hdm_kernel_batch_norm,
	[HPU_KERNEL_BATCH_NORM_BWD] = &hdm_kernel_batch_norm_bwd,
	[HPU_KERNEL_MAX_POOL] = &hdm_kernel_max_pool,
	[HPU_KERNEL_MAX_POOL_BWD] = &hdm_kernel_max_pool_bwd,
	[HPU_KERNEL_AVG_POOL] = &hdm_kernel_avg_pool,
	[HPU_KERNEL_AVG_POOL_BWD] = &hdm_kernel_avg_pool_bwd,
	[HPU_KERNEL_RANDOM] = &hdm_kernel_random,
	[HPU_KERNEL_GROUP_NORM] = &hdm_kernel_group_norm,
	[HPU_KERNEL_GROUP_NORM_BWD] = &hdm_kernel_group_norm_bwd,
};

const struct hdm_kernel_def *hdm_kernel_lookup(uint32_t id)
{
	return id < sizeof(hdm_kernels) / sizeof(hdm_kernels[0]) ? hdm_kernels[id] : NULL;
}
