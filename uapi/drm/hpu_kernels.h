/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * hpu compute ABI, shared by the runtime (which builds launches) and the
 * device model (which runs them): the matrix engine's GEMM packet lives in
 * hpu_packets.h; this header defines what a tensor-engine launch points at.
 *
 * A TPC_LAUNCH packet names a parameter block in device memory (a device
 * virtual address of the submitting context): a struct hpu_kernel_params
 * followed by num_tensors struct hpu_tensor_desc.  The device reads it when
 * the packet runs, so a recorded command stream may be replayed with new
 * data behind the same descriptors.  Everything is little-endian.
 *
 * Tensors: element (i0, ..., in-1) of a descriptor lives at
 * addr + sum(ik * strides[k]) * element size; strides are in elements, may
 * be 0 (broadcast) or negative, and every byte a tensor can reach must be
 * mapped (else the job fails with an MMU fault).  ndim 0 is a scalar of one
 * element.  Broadcasting is expressed by the runtime: elementwise kernels
 * take every operand with the output's shape, broadcast dimensions having
 * stride 0.  Outputs may be the very same view as an input (in place): the
 * same address, dtype, shape and strides.  An output that shares elements
 * with another operand otherwise gives undefined values, never an access
 * outside the operands' memory.
 *
 * Arithmetic: floating results are computed in at least fp32 (bf16 inputs
 * are widened exactly; bf16 outputs are rounded to nearest even);
 * integral results in int64, wrapping.  Sums accumulate in fp64.
 *
 * A launch whose parameters break a kernel's rules (unknown kernel or op,
 * wrong operand count, dtype or shape, index out of range, a limit below)
 * fails its job with HPU_EVENT_BAD_KERNEL; nothing is written.  Indices are
 * checked again where the device uses them: one that changed while the
 * launch ran (another job writing it) fails the job the same way, its
 * outputs then partly written.
 *
 * Limits: every tensor has at most HPU_KERNEL_MAX_ELEMENTS elements (the
 * product of its dims but those of size 0, broadcast dims counted), and a
 * launch's work, the elements its kernel visits, is at most
 * HPU_KERNEL_MAX_WORK: out's elements for the elementwise kernels, the
 * optimizers and EMBEDDING; in's for REDUCE, SOFTMAX and LAYER_NORM (twice
 * for LAYER_NORM_BWD with a weight or bias gradient); the [N, C] operand's
 * for CROSS_ENTROPY and the loss backwards, N for NLL_LOSS; twice every
 * grad's for CLIP_GRAD_NORM; the indices' plus 512 for each column of each
 * block of 512 rows of grad_weight for EMBEDDING_BWD (a row of no elements
 * still counts one); the indices or targets once more for EMBEDDING(_BWD)
 * and the losses, which check them all before they write anything; in's
 * three times for BATCH_NORM(_BWD) (and each chunk its channel's chunks);
 * out's times the window (kH * kW, or an adaptive window's most) for the
 * pooling forwards; grad_in's times the most windows that can hold one of
 * its elements for their backwards, plus the indices for MAX_POOL_BWD.  The
 * work comes in items (an element, a row, a chunk), none of more than
 * HPU_KERNEL_MAX_ITEM_WORK elements (the kernels' row and count limits
 * below follow from it): between two items the device may turn to another
 * queue's work, so a launch holds the engine for an item at most.  A queue
 * reset stops a running launch within milliseconds, however large.
 *
 * Versions: HPU_KERNEL_PARAMS_VERSION is bumped only to add kernels, ops
 * or flags, and a device runs launches of every version from 1 to its own,
 * rejecting the others: a runtime newer than its device learns so from its
 * first launch.  Version 2 added the unary ops SILU to ERF and the kernels
 * from CONV (24) on; version 3 RANDOM (27), GROUP_NORM(_BWD) (34, 35),
 * FUSED_SDPA(_BWD) (41, 42) and the FOREACH kernels (49 to 54).
 */
#ifndef HPU_KERNELS_H
#define HPU_KERNELS_H

#include <linux/types.h>

#define HPU_KERNEL_PARAMS_VERSION 3

enum hpu_dtype {
	HPU_DTYPE_F32 = 1,
	HPU_DTYPE_BF16 = 2,
	HPU_DTYPE_I32 = 3,
	HPU_DTYPE_I64 = 4,
	HPU_DTYPE_U8 = 5, /* bool: comparison results, masks; 0 false, else true */
};

#define HPU_TENSOR_MAX_DIMS 6
#define HPU_KERNEL_MAX_TENSORS 16
#define HPU_KERNEL_MAX_ARGS 8
#define HPU_KERNEL_MAX_SCALARS 8
#define HPU_KERNEL_MAX_ELEMENTS ((__u64)1 << 32)
#define HPU_KERNEL_MAX_WORK ((__u64)1 << 36)
#define HPU_KERNEL_MAX_ITEM_WORK ((__u64)1 << 20)

struct hpu_tensor_desc {
	__u64 addr;   /* device VA of element (0, ..., 0) */
	__u32 dtype;  /* enum hpu_dtype */
	__u32 ndim;   /* 0..HPU_TENSOR_MAX_DIMS */
	__u64 shape[HPU_TENSOR_MAX_DIMS];   /* dims >= ndim must be 1 */
	__s64 strides[HPU_TENSOR_MAX_DIMS]; /* elements; dims >= ndim must be 0 */
};

struct hpu_kernel_params {
	__u32 version;     /* HPU_KERNEL_PARAMS_VERSION */
	__u32 kernel;      /* enum hpu_kernel_id */
	__u32 num_tensors; /* descriptors following this struct */
	__u32 flags;       /* must be 0 */
	__s64 args[HPU_KERNEL_MAX_ARGS];    /* integer arguments, per kernel; unused ones 0 */
	__u64 scalars[HPU_KERNEL_MAX_SCALARS]; /* IEEE-754 binary64 bit patterns, per kernel */
	/* struct hpu_tensor_desc tensors[num_tensors]; */
};

/*
 * Kernels.  Operands are listed as t[i] (tensor descriptors), a[i] (args)
 * and s[i] (scalars); "out" operands are written, "io" read and written.
 * Float means F32 or BF16; index means I32 or I64; "scalar" operands are
 * ndim 0.  Hyperparameters outside the ranges torch.optim accepts (a
 * negative lr, eps or weight decay, betas or rho outside [0, 1), Nesterov
 * without momentum or with dampening) fail the launch.
 */
enum hpu_kernel_id {
	/* t: out, in.  a0: enum hpu_unary_op.  s0: the exponent of POW_SCALAR.
	 * Any dtypes (COPY between different dtypes is a cast: float to
	 * integer truncates toward zero, out-of-range is undefined; to U8 it
	 * is != 0); the ops from GELU on want a float out.  RELU passes NaN. */
	HPU_KERNEL_UNARY = 1,
	/* t: out, a, b.  a0: enum hpu_binary_op.  s0: alpha, b is scaled by it
	 * for ADD and SUB (torch.add's alpha; 1.0 otherwise).  a1: 1 when b
	 * is absent and s1 stands for it (t then has two entries).
	 * Comparisons write 1 or 0 in out's dtype.  The arithmetic is int64
	 * when every tensor is integral and alpha (ADD, SUB) and a scalar b
	 * are whole numbers, else floating; MAX and MIN propagate NaN. */
	HPU_KERNEL_BINARY = 2,
	/* t: out, cond (U8), a, b.  out = cond != 0 ? a : b. */
	HPU_KERNEL_WHERE = 3,
	/* t: out.  Every element = s0. */
	HPU_KERNEL_FILL = 4,
	/* t: out, in.  a0: enum hpu_reduce_op.  a1: bit mask of reduced dims
	 * of in.  out has in's ndim with the reduced dims of size 1 (keepdim).
	 * ARGMAX/ARGMIN reduce exactly one dim and write I64 (or I32) indices;
	 * ties take the first; NaN wins a MAX or MIN (the first NaN, for the
	 * ARG ops).  MEAN wants a float out.  Integral in and out SUM in
	 * int64, wrapping.  Over no element: SUM 0, MEAN NaN, others rejected. */
	HPU_KERNEL_REDUCE = 5,
	/* t: out, in.  a0: dim.  a1: 1 for log_softmax.  Float.  A row (along
	 * a0) has at most HPU_KERNEL_MAX_ITEM_WORK elements. */
	HPU_KERNEL_SOFTMAX = 6,
	/* t: grad_in (out), grad_out, out (the forward's result).  a0, a1 as forward. */
	HPU_KERNEL_SOFTMAX_BWD = 7,
	/* t: loss (out), logp [N, C], target [N] index.  a0: enum hpu_reduction
	 * (loss is [N] for NONE, a scalar otherwise).  a1: ignore_index
	 * (targets equal to it count for nothing; others must be in [0, C)).
	 * MEAN divides by the number of targets counted.  MEAN and SUM add the
	 * rows' losses in groups of ceil(N / 2^19) rows (a row each up to 2^19
	 * rows), the groups' sums in order, whatever the split. */
	HPU_KERNEL_NLL_LOSS = 8,
	/* t: grad_logp (out) [N, C], grad_loss, target.  a0, a1 as forward. */
	HPU_KERNEL_NLL_LOSS_BWD = 9,
	/* t: loss (out), logits [N, C], target [N].  a0, a1 as NLL_LOSS: the
	 * NLL of log_softmax(logits) along dim 1.  C is at most
	 * HPU_KERNEL_MAX_ITEM_WORK, here and in both loss backwards. */
	HPU_KERNEL_CROSS_ENTROPY = 10,
	/* t: grad_logits (out), grad_loss, logits, target.  a0, a1 as forward. */
	HPU_KERNEL_CROSS_ENTROPY_BWD = 11,
	/* t: out, mask (out, U8), in, rng (io, I64 [2]: seed, offset).
	 * s0: p, the probability of dropping.  Element k (row-major index over
	 * in's shape) is kept when the draw at position offset + k of seed's
	 * Philox4x32-10 stream is >= p: every word of a block makes a draw
	 * (hpu_philox.h).  p in [0, 1] (1 drops everything).
	 * out = kept ? in / (1 - p) : 0.
	 * Afterwards offset grows by the number of elements, so the next
	 * launch, or a replay of the same command buffer, draws fresh masks. */
	HPU_KERNEL_DROPOUT = 12,
	/* t: grad_in (out), grad_out, mask.  s0: p.  grad_in = mask ? grad_out / (1 - p) : 0. */
	HPU_KERNEL_DROPOUT_BWD = 13,
	/* t: grad_in (out), grad_out, in (the forward's input).  grad_in = in > 0 ? grad_out : 0. */
	HPU_KERNEL_RELU_BWD = 14,
	/* t: grad_in (out), grad_out, in.  a0: 0 exact (erf), 1 tanh approximation. */
	HPU_KERNEL_GELU_BWD = 15,
	/* t: out, mean (out, F32), rstd (out, F32), in, weight, bias.
	 * a0: the number of trailing dims normalised; mean and rstd have in's
	 * leading dims.  a1: bit 0 weight present, bit 1 bias present (an
	 * absent operand still takes its slot with a valid descriptor, which
	 * is not read: an empty F32 tensor, ndim 1 and shape[0] 0, will do).
	 * s0: eps.  A row (the normalised dims) has at most
	 * HPU_KERNEL_MAX_ITEM_WORK / 3 elements. */
	HPU_KERNEL_LAYER_NORM = 16,
	/* t: grad_in (out), grad_weight (out), grad_bias (out), grad_out, in,
	 * mean, rstd, weight.  a0, a1 as forward (absent grads are not written).
	 * A row has at most HPU_KERNEL_MAX_ITEM_WORK / 2 elements; grad_weight
	 * and grad_bias add the partial sums of chunks of
	 * HPU_KERNEL_MAX_ITEM_WORK rows in order; grad_in may be grad_out or
	 * in itself. */
	HPU_KERNEL_LAYER_NORM_BWD = 17,
	/* t: out [..., D], weight [V, D], indices [...] index.  a0: padding
	 * index (-1: none); every index must be in [0, V).  D is at most
	 * HPU_KERNEL_MAX_ITEM_WORK. */
	HPU_KERNEL_EMBEDDING = 18,
	/* t: grad_weight (io) [V, D], grad_out [..., D], indices.  a0 as
	 * forward; rows of grad_out are added to grad_weight's rows named by
	 * indices (scatter-add), none to the padding index's.  At most
	 * HPU_KERNEL_MAX_ITEM_WORK - 512 indices. */
	HPU_KERNEL_EMBEDDING_BWD = 19,
	/* t: param (io), grad, momentum_buf (io).  s: lr, momentum, dampening,
	 * weight_decay.  a0: bit 0 nesterov, bit 1 first step (the buffer is
	 * set to the gradient, as torch.optim.SGD does when it has none). */
	HPU_KERNEL_SGD = 20,
	/* t: param (io), grad, square_avg (io), acc_delta (io).  s: lr, rho,
	 * eps, weight_decay.  torch.optim.Adadelta's update. */
	HPU_KERNEL_ADADELTA = 21,
	/* t: param (io), grad, exp_avg (io), exp_avg_sq (io), step (io, F32 or
	 * I64 scalar: steps done so far; this launch does step + 1 and stores
	 * it).  s: lr, beta1, beta2, eps, weight_decay.  torch.optim.AdamW. */
	HPU_KERNEL_ADAMW = 22,
	/* t: total_norm (out, F32 scalar), grads (io)...  s0: max_norm.
	 * s1: norm type (2.0, or +inf for the max norm).  Every grad is
	 * scaled by min(1, max_norm / (total_norm + 1e-6)), as
	 * torch.nn.utils.clip_grad_norm_. */
	HPU_KERNEL_CLIP_GRAD_NORM = 23,
	/* t: out [N, Cout, Ho, Wo], in [N, Cin, H, W], weight [Cout, Cin / a6,
	 * kh, kw], and optionally bias [Cout] (4 tensors: present).  Float,
	 * any mix.  a0, a1: stride (height, width), a2, a3: zero padding on
	 * both sides, a4, a5: dilation, a6: groups, a7: 0.  Strides and
	 * dilations in [1, 2^20], paddings in [0, 2^20]; groups divide Cin
	 * and Cout; Ho = (H + 2 a2 - a4 (kh - 1) - 1) / a0 + 1 (at least 1),
	 * Wo likewise.  1d: every tensor of 3 dims (no height), a0, a2, a4
	 * then 1, 0, 1.  Computed as GEMMs in fp32 (HPU_CONV_MACS_PER_WORK).
	 * The most elements an item visits, HPU_KERNEL_MAX_ITEM_WORK, bounds
	 * one output element's multiply-adds (Cin / a6 kh kw, at most about
	 * 2^19). */
	HPU_KERNEL_CONV = 24,
	/* t: grad_in (out) [N, Cin, H, W], grad_out [N, Cout, Ho, Wo],
	 * weight.  a0..a7 as CONV, whose shape rules grad_in and grad_out
	 * follow as in and out. */
	HPU_KERNEL_CONV_BWD_INPUT = 25,
	/* t: grad_weight (out) [Cout, Cin / a6, kh, kw], grad_out, in.  a as
	 * CONV.  The sums over N Ho Wo are split into chunks whose fp32
	 * partials go to the launch's scratch, added in order (fp64) by a
	 * second phase: Cout (Cin / a6) kh kw times the chunks is at most
	 * 2^21 (the bias gradient is a REDUCE SUM of grad_out). */
	HPU_KERNEL_CONV_BWD_WEIGHT = 26,
	/* t: out (float, any shape), rng (io, I64 [2]: seed, offset, as
	 * DROPOUT's).  a0: enum hpu_random_dist.  s0, s1: UNIFORM's from and to
	 * (from <= to), NORMAL's mean and std (std >= 0), finite.  Element k
	 * (row-major index over out's shape) takes UNIFORM's one draw u at
	 * position offset + k of seed's Philox4x32-10 stream (hpu_philox.h),
	 * from + (to - from) u, or NORMAL's two at offset + 2k and offset + 2k
	 * + 1, mean + std sqrt(-2 ln(1 - u1)) cos(2 pi u2) (Box-Muller, one
	 * normal per pair), computed in double and stored in out's dtype
	 * (u has 24 bits: |z| < 5.8).  Afterwards offset grows by the draws made (numel, or twice
	 * that), so the next launch, or a replay, draws anew.  Work: the
	 * draws. */
	HPU_KERNEL_RANDOM = 27,
	/* t: out, save_mean (out, F32 [C]), save_invstd (out, F32 [C]), in [N, C, ...],
	 * weight [C], bias [C], running_mean (io) [C], running_var (io) [C]: in,
	 * out, weight, bias and the running statistics float.  a0: bit 0 weight
	 * present, bit 1 bias present (absent operands take their slot as in
	 * LAYER_NORM), bit 2 training, bit 3 running statistics present (eval
	 * needs them).  s0: eps (>= 0), s1: momentum.  Training normalises each
	 * channel by its batch mean and biased variance and, with running
	 * statistics, sets running = (1 - momentum) * running + momentum * stat
	 * (the unbiased variance, as torch); eval normalises by the running
	 * statistics.  save_mean and save_invstd get the mean and 1 / sqrt(var +
	 * eps) used.  A channel's elements (in's order over the dims but 1) are
	 * walked in chunks of HPU_BNORM_CHUNK, each a work item; the chunks'
	 * means and squared deviations are joined in order (Chan et al.),
	 * whatever the split.  C * chunks is at most 2^19; training needs at
	 * least one element per channel.  out may be in itself. */
	HPU_KERNEL_BATCH_NORM = 28,
	/* t: grad_in (out), grad_weight (out) [C], grad_bias (out) [C],
	 * grad_out, in, mean [C], invstd [C], weight [C].  a0: bit 0 weight
	 * present, bit 1 grad_weight wanted, bit 2 grad_bias wanted, bit 3
	 * training (the batch statistics' own gradient flows), bit 4 t[6] holds
	 * a variance (invstd = 1 / sqrt(var + s0): eval's running_var).
	 * grad_weight = sum grad_out * xhat, grad_bias = sum grad_out per
	 * channel, summed in HPU_BNORM_CHUNK chunks joined in order; grad_in
	 * may be grad_out or in itself.  Limits as BATCH_NORM. */
	HPU_KERNEL_BATCH_NORM_BWD = 29,
	/* t: out [..., Ho, Wo], indices (out, index, out's shape), in [..., H,
	 * W]: float, the leading dims (at least one) equal.  a0 kH, a1 kW, a2
	 * sH, a3 sW, a4 pH, a5 pW, a6 dH, a7 dW: kernel, stride, padding,
	 * dilation, all >= 1 (padding >= 0) and at most 2^20, padding at most
	 * half the kernel.  Ho is torch's output size with ceil_mode or
	 * without (either is accepted, which is how ceil_mode is given), every
	 * window holding an element of in; H, W >= 1; kH * kW at most
	 * HPU_KERNEL_MAX_ITEM_WORK.  indices are h * W + w within the plane;
	 * the first maximum wins, NaN over any number (the last NaN). */
	HPU_KERNEL_MAX_POOL = 30,
	/* t: grad_in (out) [..., H, W], grad_out [..., Ho, Wo], indices.  a0-a7
	 * as forward; every index must be a position of its window (checked
	 * before anything is written).  grad_in = the sum, in window order, of
	 * the grad_out elements whose index names it. */
	HPU_KERNEL_MAX_POOL_BWD = 31,
	/* t: out [..., Ho, Wo], in [..., H, W] as MAX_POOL.  a0-a5 as MAX_POOL;
	 * a6: bit 0 count_include_pad, bit 1 adaptive (then a0-a5 are 0 and
	 * window o spans [floor(o H / Ho), ceil((o + 1) H / Ho)) for any Ho >=
	 * 1); a7: divisor override (0: none, else > 0).  The mean of each
	 * window, over its elements in in, or (count_include_pad) over the
	 * window clipped to the padded input, as torch. */
	HPU_KERNEL_AVG_POOL = 32,
	/* t: grad_in (out) [..., H, W], grad_out [..., Ho, Wo].  a0-a7 as
	 * forward.  grad_in = the sum, in window order, of grad_out / divisor
	 * over the windows that hold the element. */
	HPU_KERNEL_AVG_POOL_BWD = 33,
	/* t: out, mean (out, F32 [N, G]), rstd (out, F32 [N, G]), in [N, C, ...]
	 * float, weight [C], bias [C] (float; absent ones take their slot as in
	 * LAYER_NORM).  a0: G, the groups, dividing C.  a1: bit 0 weight
	 * present, bit 1 bias present.  s0: eps (>= 0).  torch's group norm:
	 * each (n, group) of C / G channels is normalised by its mean and
	 * biased variance, rstd = 1 / sqrt(var + eps), then each channel
	 * scaled by weight and shifted by bias.  A row, one (n, c)'s elements
	 * (in's order over dims 2 on, at least one), is walked in chunks of
	 * HPU_BNORM_CHUNK, each a work item; a group's chunks' means and
	 * squared deviations are joined in order (channel after channel,
	 * Chan et al.) whatever the split.  N C chunks + N G is at most 2^19.
	 * out may be in itself; mean and rstd may alias nothing.  Work: 3
	 * times in's elements. */
	HPU_KERNEL_GROUP_NORM = 34,
	/* t: grad_in (out), grad_weight (out) [C], grad_bias (out) [C],
	 * grad_out, in, mean [N, G], rstd [N, G], weight [C].  a0: G.  a1: bit
	 * 0 weight present, bit 1 grad_weight wanted, bit 2 grad_bias wanted,
	 * bit 3 grad_in wanted (absent outputs are not written).  With xhat =
	 * (in - mean) * rstd and dy = grad_out * weight: grad_in = rstd * (dy
	 * - mean(dy) - xhat * mean(dy * xhat)) over each group; grad_weight =
	 * sum of grad_out * xhat, grad_bias = sum of grad_out per channel.
	 * Every sum joins per-chunk partials in order (n after n, chunk after
	 * chunk; a group's channels in order), whatever the split.  grad_in
	 * may be grad_out or in itself; grad_weight and grad_bias alias no
	 * other operand.  Limits as GROUP_NORM.  Work: twice in's elements. */
	HPU_KERNEL_GROUP_NORM_BWD = 35,
	/* t: grad_in (out), grad_out, in.  grad_in = grad_out * d/dx silu(in):
	 * with s = sigmoid(in), grad_out * s * (1 + in * (1 - s)).  Floats of
	 * one shape.  Work: out's elements. */
	HPU_KERNEL_SILU_BWD = 36,
	/* t: out, in: of one shape, at least 2 dims, any dtypes of one kind
	 * (both integral or both float; COPY's cast).  a0: diagonal (any
	 * value).  a1: 1 upper (torch.triu), 0 lower (torch.tril).  Over the
	 * last two dims [.., R, C], batched over the others: out[.., i, j] =
	 * in[.., i, j] where j - i >= a0 (upper) or j - i <= a0 (lower), else
	 * 0.  out may be in itself.  Work: out's elements. */
	HPU_KERNEL_TRIANGLE = 37,
	/* t: out, of 1 dim, any dtype but U8.  s0: start, s1: step.  out[i] =
	 * start + i * step, computed in double (float out) and rounded once,
	 * or in int64 (integral out: start and step must be whole numbers in
	 * int64's range), as torch.arange on the CPU.  Work: out's elements. */
	HPU_KERNEL_ARANGE = 38,
	/* t: out, rstd (out, F32), in, weight.  RMSNorm over in's a0 trailing
	 * dims: rstd = 1 / sqrt(mean(in^2) + s0) of in's leading dims, out =
	 * in * rstd * weight.  a1: 1 weight present, 0 absent (its slot then
	 * holds any valid descriptor, not read).  s0: eps >= 0.  Floats; out
	 * may be in itself.  A row has at most HPU_KERNEL_MAX_ITEM_WORK / 2
	 * elements.  Work: twice in's elements. */
	HPU_KERNEL_RMS_NORM = 39,
	/* t: grad_in (out), grad_weight (out), grad_out, in, rstd, weight.
	 * a0, a1 as forward (grad_weight written when a1 is 1).  With xhat =
	 * in * rstd and gy = grad_out * weight: grad_in = rstd * (gy - xhat *
	 * mean(gy * xhat)) along the row; grad_weight = the sum over rows of
	 * grad_out * xhat, in partial sums of chunks of
	 * HPU_KERNEL_MAX_ITEM_WORK rows added in order.  A row has at most
	 * HPU_KERNEL_MAX_ITEM_WORK / 2 elements; grad_in may be grad_out or in
	 * itself; grad_weight may alias no input.  Work: twice in's elements,
	 * once more with grad_weight. */
	HPU_KERNEL_RMS_NORM_BWD = 40,
	/* t: out (out) [B, H, L, Dv], lse (out, F32 [B, H, L]), q [B, H, L, D],
	 * k [B, H, S, D], v [B, H, S, Dv], mask [B, H, L, S] (float, added to
	 * the scores, or U8: 0 masks), valid_len (index [B]), rng (io, I64
	 * [2]: seed, offset), rng_used (out, I64 [2]), probs (out, float
	 * [B, H, L, S]), drop_mask (out, U8 [B, H, L, S]): 11 tensors, the
	 * optional ones (a0 says which) absent as in LAYER_NORM.  Floats of
	 * any mix; D and Dv in [1, HPU_SDPA_MAX_HEAD_DIM].  a0: HPU_SDPA_*
	 * flags.  s0: scale (finite), s1: dropout p in [0, 1).  Attention
	 * out = dropout(softmax(s0 q k^T + mask)) v per (b, h), computed in
	 * fp32 in blocks of HPU_SDPA_BLOCK keys with a running max and sum
	 * (the [L, S] scores are never stored), lse = the row's logsumexp.
	 * Key j is seen by query i unless masked: CAUSAL j > i (top left, as
	 * torch.tril(ones(L, S))); VALID_LEN (with CAUSAL, without MASK) n =
	 * valid_len[b] in [0, S], checked where read: right padding masks keys
	 * j >= n and makes query rows i >= n padding, PAD_LEFT masks j < S - n
	 * and makes i < L - n padding.  A row that sees no key (padding, or
	 * all masked) gets out 0 and lse -inf.  Dropout keeps element
	 * (b, h, i, j) when the draw at position offset + ((b H + h) L + i) S
	 * + j of DROPOUT's Philox stream is >= p, scaling it by 1 / (1 - p);
	 * with p > 0 rng_used gets (seed, offset) as read and rng's offset
	 * grows by B H L S (rng and rng_used absent with p = 0).  PROBS writes
	 * the softmax (before dropout), DROP_MASK the keep mask.  exp is
	 * within 2 ulp of expf; FAST_SOFTMAX (BF16 q only) takes a cubic of
	 * 2^frac instead (relative error under 2e-4).  Items are blocks of query rows of one
	 * (b, h); an item's work is its multiply-adds over
	 * HPU_SDPA_MACS_PER_WORK plus every element it loads or writes
	 * (S (D + Dv) per item to pack the keys and values), at most
	 * HPU_KERNEL_MAX_ITEM_WORK for one row.  No output may be an input. */
	HPU_KERNEL_FUSED_SDPA = 41,
	/* t: grad_q (out), grad_k (out), grad_v (out), grad_out [B, H, L, Dv],
	 * q, k, v, out, lse, mask, valid_len, rng_used: the forward's operands
	 * (12 tensors).  a0, s0, s1 as the forward (not PROBS or DROP_MASK).
	 * The probabilities are recomputed block by block from lse and the
	 * dropout mask from rng_used's draws.  Items: blocks of query rows
	 * (grad_q, each row summing over the keys in order), then blocks of
	 * key rows (grad_k and grad_v, each summing over the queries in
	 * order), so the result does not depend on the split of the launch.
	 * Work as the forward (a key block packs L (D + 2 Dv)). */
	HPU_KERNEL_FUSED_SDPA_BWD = 42,
	/* t: out, in, index (index, ndim 0 or 1).  a0: dim, in [0, max(in's
	 * ndim, 1)).  out has in's ndim and dtype (any dtype) and in's shape
	 * but out.shape[dim] = index's elements; out[..., j, ...] =
	 * in[..., index[j], ...], every index in [0, in.shape[dim]).  out may
	 * not be in or index. */
	HPU_KERNEL_INDEX_SELECT = 44,
	/* t: out, in, index (index).  a0: dim as INDEX_SELECT.  torch.gather:
	 * in, index and out have one ndim; out has index's shape and in's
	 * dtype (any dtype); index.shape[d] <= in.shape[d] for d != dim;
	 * out[i] = in[i with i[dim] = index[i]], every index in
	 * [0, in.shape[dim]).  out may not be in or index. */
	HPU_KERNEL_GATHER = 45,
	/* t: self (io), index (index), src.  a0: dim as INDEX_SELECT.
	 * torch.Tensor.scatter_add_: one ndim; src has self's dtype (F32,
	 * BF16, I32 or I64); index.shape[d] <= src.shape[d] for every d and
	 * <= self.shape[d] for d != dim; self[i with i[dim] = index[i]] +=
	 * src[i] over index's elements, every index in [0, self.shape[dim]).
	 * An item is a block of HPU_SCATTER_BLOCK elements of self along dim
	 * at fixed other coordinates: it visits that column's indices in
	 * order and sums in fp64 (integral: int64, wrapping) from self's
	 * value, so the result does not depend on the split of the launch.
	 * index.shape[dim] is at most HPU_KERNEL_MAX_ITEM_WORK -
	 * HPU_SCATTER_BLOCK.  self may not be index or src.  A 1-D index
	 * broadcast (strides 0) over src's other dims is index_add_. */
	HPU_KERNEL_SCATTER_ADD = 46,
	/* t: values (out), indices (out, index), in.  a0: k, a1: dim as
	 * INDEX_SELECT, a2: 1 largest, 0 smallest; a3: 1 sorted, 0 any order
	 * (the device sorts either way).  in is F32, BF16, I32 or I64;
	 * values has its dtype, values and indices its ndim and shape but
	 * shape[dim] = k <= in.shape[dim].  Each row along dim keeps its k
	 * largest (smallest) elements best first, NaN above every number
	 * (torch on the CPU), ties by the lower index first.  A row of n
	 * elements costs (n + k) * (bits of k + 1) work, at most
	 * HPU_KERNEL_MAX_ITEM_WORK.  No output may be in or the other. */
	HPU_KERNEL_TOPK = 47,
	/* t: self (io), index (index), src.  a0: dim.  torch.Tensor.scatter_
	 * with a src: as SCATTER_ADD, but each element of src replaces self's
	 * (the last along dim in index order wins); the same operands and
	 * limits. */
	HPU_KERNEL_SCATTER = 48,
	/*
	 * The FOREACH optimizers (49-52) step a list of parameters in one
	 * launch, torch.optim's single-tensor formulas: t[0] lr, an F32
	 * scalar, and t[1] step, an F32 or I64 scalar (the steps done so
	 * far), both read by the device, so that an LR schedule changes no
	 * launch; then groups of tensors, one per parameter, each float (F32
	 * or BF16) of its param's shape: as many groups as fit, at least one.
	 * a0 bit 0: the last launch of the step, whose end adds 1 to step
	 * (the launches before it read the same step).  Items: the params'
	 * elements (LAMB: chunks of HPU_CLIP_CHUNK elements of each param);
	 * work: the params' elements (LAMB's twice, NORM's and CLIP's the
	 * tensors').
	 *
	 * Groups: param (io), grad, momentum_buf (io, only if s0 != 0).
	 * s: momentum, dampening, weight_decay.  a0 bit 1: nesterov.  The
	 * step is torch.optim.SGD's, the buffer set to the gradient while
	 * step is 0. */
	HPU_KERNEL_FOREACH_SGD = 49,
	/* Groups: param (io), grad, exp_avg (io), exp_avg_sq (io).  s: beta1,
	 * beta2, eps, weight_decay.  torch.optim.AdamW at t = step + 1. */
	HPU_KERNEL_FOREACH_ADAMW = 50,
	/* Groups: param (io), grad, square_avg (io), acc_delta (io).  s: rho,
	 * eps, weight_decay.  torch.optim.Adadelta. */
	HPU_KERNEL_FOREACH_ADADELTA = 51,
	/* Groups: param (io), grad, exp_avg (io), exp_avg_sq (io).  s: beta1,
	 * beta2, eps, weight_decay.  a0 bit 1: bias correction, bit 2: grad
	 * averaging (m takes (1 - beta1) g, else g).  LAMB in two phases: the
	 * moments and each param's norms ||p|| and ||u|| of its update
	 * u = m^ / (sqrt(v^) + eps) + weight_decay p (sums of squares of
	 * chunks added in order, as CLIP_GRAD_NORM), then
	 * p -= lr * r * u with the trust ratio r = ||p|| / ||u||, or 1 if
	 * either is 0. */
	HPU_KERNEL_FOREACH_LAMB = 52,
	/* t: acc (io), norm (out), both F32 scalars, then float tensors.
	 * s0: norm type (2.0, or +inf).  a0 bit 0: acc starts at 0 (else at
	 * its value).  acc becomes acc + the tensors' sum of squares (chunks
	 * of HPU_CLIP_CHUNK added in order, as CLIP_GRAD_NORM) or the max of
	 * acc and every |x|, and norm sqrt(acc) (or acc): launches one after
	 * the other give the norm of all their tensors, in a fixed order. */
	HPU_KERNEL_FOREACH_NORM = 53,
	/* t: norm (F32 scalar, read), then float tensors (io).  s0: max_norm.
	 * Every tensor is scaled by min(1, max_norm / (norm + 1e-6)), as
	 * torch.nn.utils.clip_grad_norm_ does with the norm FOREACH_NORM
	 * left.  Items: chunks of HPU_CLIP_CHUNK elements. */
	HPU_KERNEL_FOREACH_CLIP = 54,
};


/*
 * The convolutions' work: an item's multiply-adds over
 * HPU_CONV_MACS_PER_WORK (a GEMM's blocked multiply-add costs about that
 * much less than an element visited one at a time), plus every element it
 * gathers, packs or writes.
 */
#define HPU_CONV_MACS_PER_WORK 64u

/* FUSED_SDPA(_BWD)'s a0 bits. */
#define HPU_SDPA_CAUSAL (1u << 0)
#define HPU_SDPA_MASK (1u << 1)         /* t[5] (backward t[9]) present */
#define HPU_SDPA_VALID_LEN (1u << 2)    /* t[6] (backward t[10]) present */
#define HPU_SDPA_PAD_LEFT (1u << 3)     /* with VALID_LEN: padding at the start */
#define HPU_SDPA_FAST_SOFTMAX (1u << 4)
#define HPU_SDPA_PROBS (1u << 5)        /* forward: t[9] present */
#define HPU_SDPA_DROP_MASK (1u << 6)    /* forward: t[10] present */
#define HPU_SDPA_MAX_HEAD_DIM 1024u
/* Keys in a block of FUSED_SDPA's online softmax. */
#define HPU_SDPA_BLOCK 128u
/* FUSED_SDPA(_BWD)'s multiply-adds (GEMMs, as the convolutions') counted as one element visited. */
#define HPU_SDPA_MACS_PER_WORK 64u

/* SCATTER_ADD's block of self's elements along dim: one work item. */
#define HPU_SCATTER_BLOCK 512u

enum hpu_unary_op {
	HPU_UNARY_COPY = 0,
	HPU_UNARY_NEG = 1,
	HPU_UNARY_ABS = 2,
	HPU_UNARY_RELU = 3,
	HPU_UNARY_GELU = 4,      /* exact (erf) */
	HPU_UNARY_GELU_TANH = 5, /* tanh approximation */
	HPU_UNARY_TANH = 6,
	HPU_UNARY_SIGMOID = 7,
	HPU_UNARY_EXP = 8,
	HPU_UNARY_LOG = 9,
	HPU_UNARY_SQRT = 10,
	HPU_UNARY_RSQRT = 11,
	HPU_UNARY_RECIPROCAL = 12,
	HPU_UNARY_POW_SCALAR = 13, /* in ** s0 */
	HPU_UNARY_SILU = 14,       /* in * sigmoid(in) */
	HPU_UNARY_SIN = 15,
	HPU_UNARY_COS = 16,
	HPU_UNARY_ERF = 17,
};

enum hpu_binary_op {
	HPU_BINARY_ADD = 0,
	HPU_BINARY_SUB = 1,
	HPU_BINARY_MUL = 2,
	HPU_BINARY_DIV = 3, /* true division; integral (and U8) out truncates; integral x / 0 is 0 */
	HPU_BINARY_MAX = 4,
	HPU_BINARY_MIN = 5,
	HPU_BINARY_POW = 6, /* integral: a negative exponent gives trunc(1 / a ** -b), 0 for a = 0 */
	HPU_BINARY_EQ = 7,
	HPU_BINARY_NE = 8,
	HPU_BINARY_LT = 9,
	HPU_BINARY_LE = 10,
	HPU_BINARY_GT = 11,
	HPU_BINARY_GE = 12,
};

/*
 * REDUCE walks an output's elements in chunks of HPU_REDUCE_CHUNK, each a
 * work item of its own, so that a long walk does not hold the engine: SUM
 * and MEAN add the chunks' partial sums (double) in order, whatever the
 * split of the launch; MAX, MIN, ARGMAX and ARGMIN are exact whatever the
 * chunks.
 */
#define HPU_REDUCE_CHUNK (1u << 20)

/*
 * CLIP_GRAD_NORM reads and scales each grad in chunks of HPU_CLIP_CHUNK
 * elements, each a work item: the 2-norm's square is the sum, in order
 * (grad after grad, chunk after chunk), of the chunks' partial sums of
 * squares (double), whatever the split of the launch; the max norm is
 * exact whatever the chunks.
 */
#define HPU_CLIP_CHUNK (1u << 19)

/* BATCH_NORM(_BWD)'s chunk of a channel's elements: a work item walks it twice at most. */
#define HPU_BNORM_CHUNK (1u << 19)

/* RANDOM's distributions. */
enum hpu_random_dist {
	HPU_RANDOM_UNIFORM = 0,
	HPU_RANDOM_NORMAL = 1,
};

enum hpu_reduce_op {
	HPU_REDUCE_SUM = 0,
	HPU_REDUCE_MEAN = 1,
	HPU_REDUCE_MAX = 2,
	HPU_REDUCE_MIN = 3,
	HPU_REDUCE_ARGMAX = 4,
	HPU_REDUCE_ARGMIN = 5,
};

enum hpu_reduction {
	HPU_REDUCTION_NONE = 0,
	HPU_REDUCTION_MEAN = 1,
	HPU_REDUCTION_SUM = 2,
};

#endif /* HPU_KERNELS_H */
