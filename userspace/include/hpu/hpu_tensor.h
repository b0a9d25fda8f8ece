/* SPDX-License-Identifier: MIT */
/*
 * libhpu tensors and ops (libhpu 0.3), on top of <hpu/hpu.h> and under its
 * conventions (opaque handles, 0 or -errno, hpu_last_error()).
 *
 * A tensor is a view - dtype, shape, strides in elements, offset - of a
 * storage of device memory that the views share and that lives until its
 * last view is destroyed (the memory then goes back to the device cache,
 * which reuses it only after the work that may use it has ended).
 *
 * Ops write into tensors the caller gives.  Each op is checked, then
 * enqueued on a stream as one job and the call returns: ops run on the
 * device in stream order, without the host waiting (eager execution).
 * Inputs broadcast to the output's shape as in NumPy: dims are aligned at
 * the end and a dim of size 1 (or a missing leading one) repeats.
 *
 * Checked before anything is enqueued, failing with -EINVAL and a message
 * naming the operand: NULL handles, tensors of different devices, shapes
 * that do not broadcast or do not match, dtypes an op does not take, views
 * reaching outside their storage, more than HPU_MAX_DIMS dims, and outputs
 * overlapping an input other than as the very same view (in place).
 *
 * CPU fallback: an op the device has no kernel for (hpu_op_cumsum), or any
 * op on an HPU_DT_F64 tensor (the device has no fp64), runs on the host
 * instead: the stream is synchronized, the operands are copied to host
 * memory, computed there in double precision, and the outputs copied back.
 * Each fallback is counted per op (hpu_fallback_count()).  Environment:
 *   HPU_LOG_FALLBACK=1     print "hpu: fallback: <op> (<reason>)" to stderr
 *                          for every op that falls back
 *   HPU_FALLBACK_STRICT=1  make a fallback an error: the op fails with
 *                          -EOPNOTSUPP and a message naming it (the default
 *                          of hpu_fallback_set_strict())
 */
#ifndef HPU_HPU_TENSOR_H
#define HPU_HPU_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hpu/hpu.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Most dims a tensor has. */
#define HPU_MAX_DIMS 6

/* Element types.  All but F64 are the device's own. */
enum hpu_dt {
	HPU_DT_F32 = 1,
	HPU_DT_BF16 = 2,
	HPU_DT_I32 = 3,
	HPU_DT_I64 = 4,
	HPU_DT_U8 = 5,       /* bool as well: 0 false, else true */
	HPU_DT_F64 = 0x100,  /* host only: every op on it falls back */
};

/* Bytes of one element, 0 for an unknown dtype.  Cannot fail. */
HPU_API size_t hpu_dt_size(enum hpu_dt dtype);

struct hpu_tensor; /* opaque: a view of a storage */

/* How a view addresses its storage. */
struct hpu_tensor_layout {
	uint32_t dtype; /* enum hpu_dt */
	uint32_t ndim;
	int64_t shape[HPU_MAX_DIMS];
	int64_t strides[HPU_MAX_DIMS]; /* elements */
	int64_t offset;                /* elements from the storage's start */
};

/*
 * A new contiguous (row-major) tensor of uninitialised device memory.
 * ndim 0 is a scalar of one element; dims may be 0 (no elements).
 */
HPU_API int hpu_tensor_empty(struct hpu_device *dev, enum hpu_dt dtype, unsigned int ndim,
			     const int64_t *shape, struct hpu_tensor **tp);

/* Destroys a view; its storage goes when its last view does.  NULL is a no-op.  Cannot fail. */
HPU_API void hpu_tensor_destroy(struct hpu_tensor *t);

HPU_API int hpu_tensor_get_layout(const struct hpu_tensor *t, struct hpu_tensor_layout *layout);

/* Elements in the view (the product of its shape); 0 for NULL. */
HPU_API int64_t hpu_tensor_numel(const struct hpu_tensor *t);

/* Device address of element (0, ..., 0), for the copy functions of <hpu/hpu.h>. */
HPU_API int hpu_tensor_device_pointer(const struct hpu_tensor *t, uint64_t *devptr);

/*
 * Views: each makes a new handle on t's storage (destroy it like any
 * tensor).  Elements are shared, nothing is copied.
 */

/*
 * The same elements in another shape, in row-major order; one dim may be
 * -1 (inferred).  -EINVAL if t's strides cannot express it without a copy
 * (as torch.Tensor.view).
 */
HPU_API int hpu_tensor_view(struct hpu_tensor *t, unsigned int ndim, const int64_t *shape,
			    struct hpu_tensor **outp);
/* Dims reordered: dim i of the view is dim dims[i] of t. */
HPU_API int hpu_tensor_permute(struct hpu_tensor *t, const unsigned int *dims,
			       struct hpu_tensor **outp);
HPU_API int hpu_tensor_transpose(struct hpu_tensor *t, unsigned int dim0, unsigned int dim1,
				 struct hpu_tensor **outp);
/* Elements start, start + step, ... below end of dim (0 <= start <= end <= size, step >= 1). */
HPU_API int hpu_tensor_slice(struct hpu_tensor *t, unsigned int dim, int64_t start, int64_t end,
			     int64_t step, struct hpu_tensor **outp);
/* t broadcast to shape (dims of size 1 repeat with stride 0; new leading dims). */
HPU_API int hpu_tensor_expand(struct hpu_tensor *t, unsigned int ndim, const int64_t *shape,
			      struct hpu_tensor **outp);
/* Any view of t's storage; -EINVAL if it reaches outside the storage. */
HPU_API int hpu_tensor_as_strided(struct hpu_tensor *t, const struct hpu_tensor_layout *layout,
				  struct hpu_tensor **outp);

/*
 * Copies between a view and host memory holding its elements in row-major
 * order (size must be numel * element size).  Enqueued on stream, as
 * hpu_memcpy_*_async(): to the host waits for the data; from the host
 * returns once src may be reused.  A view that is not contiguous is read
 * or written through the bytes its elements span, synchronizing stream.
 */
HPU_API int hpu_tensor_copy_from_host(struct hpu_stream *stream, struct hpu_tensor *t,
				      const void *src, size_t size);
HPU_API int hpu_tensor_copy_to_host(struct hpu_stream *stream, const struct hpu_tensor *t,
				    void *dst, size_t size);

/* ------------------------------------------------------------------------
 * Ops.  Unless said otherwise: inputs broadcast to the output's shape;
 * floating ops take F32 or BF16 (F64 falls back) with every operand of one
 * dtype; results are computed in fp32 and rounded to the output's dtype.
 */

/* Elementwise functions of one input. */
enum hpu_unary_fn {
	HPU_UN_COPY = 0, /* a cast when the dtypes differ: any dtypes */
	HPU_UN_NEG = 1,
	HPU_UN_ABS = 2,
	HPU_UN_RELU = 3,
	HPU_UN_GELU = 4,      /* exact (erf) */
	HPU_UN_GELU_TANH = 5, /* tanh approximation */
	HPU_UN_TANH = 6,
	HPU_UN_SIGMOID = 7,
	HPU_UN_EXP = 8,
	HPU_UN_LOG = 9,
	HPU_UN_SQRT = 10,
	HPU_UN_RSQRT = 11,
	HPU_UN_RECIPROCAL = 12,
	HPU_UN_POW_SCALAR = 13, /* in ** scalar */
	HPU_UN_SILU = 14,       /* in * sigmoid(in) */
	HPU_UN_SIN = 15,
	HPU_UN_COS = 16,
	HPU_UN_ERF = 17,
};

/* Elementwise functions of two inputs. */
enum hpu_binary_fn {
	HPU_BIN_ADD = 0, /* a + alpha * b */
	HPU_BIN_SUB = 1, /* a - alpha * b */
	HPU_BIN_MUL = 2,
	HPU_BIN_DIV = 3, /* true division; integral out truncates */
	HPU_BIN_MAX = 4,
	HPU_BIN_MIN = 5,
	HPU_BIN_POW = 6,
	/* Comparisons: 1 or 0 in out's dtype, which may be any. */
	HPU_BIN_EQ = 7,
	HPU_BIN_NE = 8,
	HPU_BIN_LT = 9,
	HPU_BIN_LE = 10,
	HPU_BIN_GT = 11,
	HPU_BIN_GE = 12,
};

enum hpu_reduce_fn {
	HPU_RED_SUM = 0,
	HPU_RED_MEAN = 1,
	HPU_RED_MAX = 2,
	HPU_RED_MIN = 3,
	HPU_RED_ARGMAX = 4, /* exactly one dim; out I64 or I32; ties take the first */
	HPU_RED_ARGMIN = 5,
};

/* How a loss reduces over the batch. */
enum hpu_loss_reduction {
	HPU_LOSS_NONE = 0, /* loss [N] */
	HPU_LOSS_MEAN = 1, /* scalar: mean over the targets counted */
	HPU_LOSS_SUM = 2,  /* scalar */
};

/* out = fn(in).  Integral dtypes take COPY, NEG, ABS and RELU. */
HPU_API int hpu_op_unary(struct hpu_stream *stream, enum hpu_unary_fn fn, struct hpu_tensor *out,
			 const struct hpu_tensor *in);
/* out = in ** exponent */
HPU_API int hpu_op_pow_scalar(struct hpu_stream *stream, struct hpu_tensor *out,
			      const struct hpu_tensor *in, double exponent);
/* out = fn(a, b).  a and b of one dtype; out too, but for comparisons. */
HPU_API int hpu_op_binary(struct hpu_stream *stream, enum hpu_binary_fn fn, struct hpu_tensor *out,
			  const struct hpu_tensor *a, const struct hpu_tensor *b);
/* out = fn(a, b) with b a number. */
HPU_API int hpu_op_binary_scalar(struct hpu_stream *stream, enum hpu_binary_fn fn,
				 struct hpu_tensor *out, const struct hpu_tensor *a, double b);
/* out = a + alpha * b (torch.add). */
HPU_API int hpu_op_add(struct hpu_stream *stream, struct hpu_tensor *out,
		       const struct hpu_tensor *a, const struct hpu_tensor *b, double alpha);
/* out = cond != 0 ? a : b.  cond any dtype; a, b and out of one dtype. */
HPU_API int hpu_op_where(struct hpu_stream *stream, struct hpu_tensor *out,
			 const struct hpu_tensor *cond, const struct hpu_tensor *a,
			 const struct hpu_tensor *b);
/* Every element of out = value. */
HPU_API int hpu_op_fill(struct hpu_stream *stream, struct hpu_tensor *out, double value);
/*
 * out = fn over the dims of in in dims_mask (bit d: dim d).  out has in's
 * dims with the reduced ones of size 1, or without them.  SUM and MEAN of
 * integers take an integral out.
 */
HPU_API int hpu_op_reduce(struct hpu_stream *stream, enum hpu_reduce_fn fn, struct hpu_tensor *out,
			  const struct hpu_tensor *in, uint32_t dims_mask);
/* out = (log_)softmax(in) along dim; out and in of one shape. */
HPU_API int hpu_op_softmax(struct hpu_stream *stream, struct hpu_tensor *out,
			   const struct hpu_tensor *in, unsigned int dim, bool log);
/* grad_in from grad_out and the forward's out. */
HPU_API int hpu_op_softmax_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				    const struct hpu_tensor *grad_out,
				    const struct hpu_tensor *out, unsigned int dim, bool log);
/*
 * Negative log likelihood of logp [N, C] at target [N] (I64 or I32);
 * targets equal to ignore_index count for nothing.
 */
HPU_API int hpu_op_nll_loss(struct hpu_stream *stream, struct hpu_tensor *loss,
			    const struct hpu_tensor *logp, const struct hpu_tensor *target,
			    enum hpu_loss_reduction reduction, int64_t ignore_index);
HPU_API int hpu_op_nll_loss_backward(struct hpu_stream *stream, struct hpu_tensor *grad_logp,
				     const struct hpu_tensor *grad_loss,
				     const struct hpu_tensor *target,
				     enum hpu_loss_reduction reduction, int64_t ignore_index);
/* nll_loss(log_softmax(logits, 1), target). */
HPU_API int hpu_op_cross_entropy(struct hpu_stream *stream, struct hpu_tensor *loss,
				 const struct hpu_tensor *logits, const struct hpu_tensor *target,
				 enum hpu_loss_reduction reduction, int64_t ignore_index);
HPU_API int hpu_op_cross_entropy_backward(struct hpu_stream *stream,
					  struct hpu_tensor *grad_logits,
					  const struct hpu_tensor *grad_loss,
					  const struct hpu_tensor *logits,
					  const struct hpu_tensor *target,
					  enum hpu_loss_reduction reduction, int64_t ignore_index);
/*
 * Dropout with the device's Philox generator: mask (U8) records the kept
 * elements, out = kept ? in / (1 - p) : 0.  rng is an I64 [2] tensor
 * {seed, offset}; each call advances offset by in's element count.
 */
HPU_API int hpu_op_dropout(struct hpu_stream *stream, struct hpu_tensor *out,
			   struct hpu_tensor *mask, const struct hpu_tensor *in,
			   struct hpu_tensor *rng, double p);
/*
 * Random fills from the same generator: out (float, any layout) gets
 * uniform values from + (to - from) u, u a 24-bit draw in [0, 1) (from <=
 * to), or normal ones mean + std z (std >= 0), z by Box-Muller from two
 * draws (|z| < 5.8).  Element k (row-major over out's shape) takes draw
 * offset + k, or the pair offset + 2k and offset + 2k + 1, whatever the
 * device's split; offset advances by the draws, so every call (and every
 * replay of a recorded one) draws anew, and a seed and offset repeat it.
 */
HPU_API int hpu_op_uniform(struct hpu_stream *stream, struct hpu_tensor *out,
			   struct hpu_tensor *rng, double from, double to);
HPU_API int hpu_op_normal(struct hpu_stream *stream, struct hpu_tensor *out,
			  struct hpu_tensor *rng, double mean, double std);
HPU_API int hpu_op_dropout_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				    const struct hpu_tensor *grad_out,
				    const struct hpu_tensor *mask, double p);
/* grad_in = in > 0 ? grad_out : 0 */
HPU_API int hpu_op_relu_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				 const struct hpu_tensor *grad_out, const struct hpu_tensor *in);
HPU_API int hpu_op_gelu_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				 const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
				 bool tanh_approx);
/*
 * Layer norm over the last `dims` dims of in; mean and rstd (F32) have in's
 * leading dims.  weight and bias (the normalised shape) may be NULL.
 */
HPU_API int hpu_op_layer_norm(struct hpu_stream *stream, struct hpu_tensor *out,
			      struct hpu_tensor *mean, struct hpu_tensor *rstd,
			      const struct hpu_tensor *in, const struct hpu_tensor *weight,
			      const struct hpu_tensor *bias, unsigned int dims, double eps);
/* grad_weight and grad_bias may be NULL (not computed); weight as forward. */
HPU_API int hpu_op_layer_norm_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				       struct hpu_tensor *grad_weight,
				       struct hpu_tensor *grad_bias,
				       const struct hpu_tensor *grad_out,
				       const struct hpu_tensor *in, const struct hpu_tensor *mean,
				       const struct hpu_tensor *rstd,
				       const struct hpu_tensor *weight, unsigned int dims);
/* grad_in = grad_out * d/dx silu(in); floats of one dtype and shape. */
HPU_API int hpu_op_silu_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				 const struct hpu_tensor *grad_out, const struct hpu_tensor *in);
/*
 * RMSNorm over the last `dims` dims of in: rstd (F32, in's leading dims)
 * = 1 / sqrt(mean(in^2) + eps), out = in * rstd * weight.  weight (the
 * normalised shape) may be NULL.  out may be in.
 */
HPU_API int hpu_op_rms_norm(struct hpu_stream *stream, struct hpu_tensor *out,
			    struct hpu_tensor *rstd, const struct hpu_tensor *in,
			    const struct hpu_tensor *weight, unsigned int dims, double eps);
/* grad_weight is given exactly when weight is; rstd from the forward. */
HPU_API int hpu_op_rms_norm_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				     struct hpu_tensor *grad_weight,
				     const struct hpu_tensor *grad_out,
				     const struct hpu_tensor *in, const struct hpu_tensor *rstd,
				     const struct hpu_tensor *weight, unsigned int dims);
/*
 * torch.triu (upper) or torch.tril of in over its last two dims (at least
 * 2), batched over the others: elements off the kept side of the diagonal
 * become 0.  out and in of one dtype (any) and shape; out may be in.
 */
HPU_API int hpu_op_triangle(struct hpu_stream *stream, struct hpu_tensor *out,
			    const struct hpu_tensor *in, int64_t diagonal, bool upper);
/*
 * out [n] = start + i * step (1 dim, any dtype but U8; integral: start and
 * step whole numbers, computed in int64).  A float out computed as
 * torch's CPU loop does when lanes is nonzero: in ranges of `chunk`
 * elements (its threads'; 0: one range), blocks of 2 * lanes elements
 * counting on from a lane base rounded to out's dtype, the tail element by
 * element; lanes 0: every element on its own, rounded once.
 */
HPU_API int hpu_op_arange(struct hpu_stream *stream, struct hpu_tensor *out, double start,
			  double step, unsigned int lanes, uint64_t chunk);
/* hpu_op_batch_norm()'s and hpu_op_batch_norm_backward()'s flags. */
enum hpu_batch_norm_flags {
	HPU_BN_TRAINING = 1 << 0, /* batch statistics (and their gradient); else running ones */
	HPU_BN_VAR = 1 << 1,      /* backward: invstd holds a variance, 1 / sqrt(var + eps) taken */
};

/*
 * Batch norm over in [N, C, ...] per channel (dim 1), torch's: training
 * (HPU_BN_TRAINING) normalises by the batch mean and biased variance and,
 * if running_mean and running_var are given, updates them in place to
 * (1 - momentum) * running + momentum * stat (the unbiased variance);
 * eval normalises by running_mean and running_var (then required).
 * save_mean and save_invstd (F32 [C]) get the mean and 1 / sqrt(var + eps)
 * used, what the backward takes.  weight, bias (float [C]) may be NULL.
 * Every channel needs an element in training; C * ceil(N * spatial /
 * 2^19) is at most 2^19.  out may be in itself.
 */
HPU_API int hpu_op_batch_norm(struct hpu_stream *stream, struct hpu_tensor *out,
			      struct hpu_tensor *save_mean, struct hpu_tensor *save_invstd,
			      const struct hpu_tensor *in, const struct hpu_tensor *weight,
			      const struct hpu_tensor *bias, struct hpu_tensor *running_mean,
			      struct hpu_tensor *running_var, unsigned int flags, double momentum,
			      double eps);
/*
 * The gradients of batch norm given the forward's mean and invstd (with
 * HPU_BN_VAR: a variance, such as eval's running_var, and eps); with
 * HPU_BN_TRAINING the statistics' own gradient flows into grad_in.
 * grad_weight and grad_bias may be NULL (not computed), weight too.
 */
HPU_API int hpu_op_batch_norm_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				       struct hpu_tensor *grad_weight,
				       struct hpu_tensor *grad_bias,
				       const struct hpu_tensor *grad_out,
				       const struct hpu_tensor *in, const struct hpu_tensor *mean,
				       const struct hpu_tensor *invstd,
				       const struct hpu_tensor *weight, unsigned int flags,
				       double eps);

/*
 * Group norm over in [N, C, ...] (torch's): each n's channels in `groups`
 * groups of C / groups, each group normalised by its mean and biased
 * variance, then each channel scaled by weight and shifted by bias (float
 * [C], either may be NULL).  mean and rstd (F32 [N, groups]) get each
 * group's mean and 1 / sqrt(var + eps), what the backward takes.  Every
 * channel needs an element; N C ceil(elements per channel / 2^19) +
 * N groups is at most 2^19.  The sums join fixed chunks in order: the
 * result does not depend on how the device splits the work.  out may be
 * in itself.
 */
HPU_API int hpu_op_group_norm(struct hpu_stream *stream, struct hpu_tensor *out,
			      struct hpu_tensor *mean, struct hpu_tensor *rstd,
			      const struct hpu_tensor *in, const struct hpu_tensor *weight,
			      const struct hpu_tensor *bias, unsigned int groups, double eps);
/*
 * The gradients of group norm given the forward's mean and rstd; grad_in,
 * grad_weight and grad_bias may each be NULL (not computed), weight too.
 */
HPU_API int hpu_op_group_norm_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				       struct hpu_tensor *grad_weight,
				       struct hpu_tensor *grad_bias,
				       const struct hpu_tensor *grad_out,
				       const struct hpu_tensor *in, const struct hpu_tensor *mean,
				       const struct hpu_tensor *rstd,
				       const struct hpu_tensor *weight, unsigned int groups);

/*
 * 2-d pooling over the last two dims of in [..., H, W] (at least one
 * leading dim), as torch: kernel, stride, padding and dilation are
 * {H, W} pairs; padding at most half the kernel.  out [..., Ho, Wo] gives
 * ceil_mode: Ho is torch's output size with or without it.  Max pooling
 * writes indices (I64 or I32, out's shape): h * W + w of each window's
 * first maximum (NaN wins).  Average pooling divides by divisor_override
 * if nonzero, else by the window's positions in the input, or with
 * count_include_pad in the padded input.  1-d pooling is the 2-d one with
 * H = 1.
 */
HPU_API int hpu_op_max_pool2d(struct hpu_stream *stream, struct hpu_tensor *out,
			      struct hpu_tensor *indices, const struct hpu_tensor *in,
			      const int64_t kernel[2], const int64_t stride[2],
			      const int64_t padding[2], const int64_t dilation[2]);
/* grad_in [..., H, W] = the sum of the grad_out elements whose index names each element. */
HPU_API int hpu_op_max_pool2d_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				       const struct hpu_tensor *grad_out,
				       const struct hpu_tensor *indices, const int64_t kernel[2],
				       const int64_t stride[2], const int64_t padding[2],
				       const int64_t dilation[2]);
HPU_API int hpu_op_avg_pool2d(struct hpu_stream *stream, struct hpu_tensor *out,
			      const struct hpu_tensor *in, const int64_t kernel[2],
			      const int64_t stride[2], const int64_t padding[2],
			      bool count_include_pad, int64_t divisor_override);
HPU_API int hpu_op_avg_pool2d_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				       const struct hpu_tensor *grad_out, const int64_t kernel[2],
				       const int64_t stride[2], const int64_t padding[2],
				       bool count_include_pad, int64_t divisor_override);
/* Adaptive average pooling: out's [Ho, Wo] windows of in's [H, W], torch's. */
HPU_API int hpu_op_adaptive_avg_pool2d(struct hpu_stream *stream, struct hpu_tensor *out,
				       const struct hpu_tensor *in);
HPU_API int hpu_op_adaptive_avg_pool2d_backward(struct hpu_stream *stream,
						struct hpu_tensor *grad_in,
						const struct hpu_tensor *grad_out);
/* out [..., D] = rows of weight [V, D] named by indices [...]; padding_idx -1 for none. */
HPU_API int hpu_op_embedding(struct hpu_stream *stream, struct hpu_tensor *out,
			     const struct hpu_tensor *weight, const struct hpu_tensor *indices,
			     int64_t padding_idx);
/* grad_weight += rows of grad_out scattered by indices (none to padding_idx). */
HPU_API int hpu_op_embedding_backward(struct hpu_stream *stream, struct hpu_tensor *grad_weight,
				      const struct hpu_tensor *grad_out,
				      const struct hpu_tensor *indices, int64_t padding_idx);

/*
 * out = a @ b, batched over leading dims (which broadcast): a [..., m, k],
 * b [..., k, n], out [..., m, n], on the matrix engine.  a and b F32 or
 * BF16 (one dtype), out F32 or BF16, accumulated in fp32.  Transposed
 * views need no copy: each matrix must have a dim of stride 1, and out
 * its last.
 */
HPU_API int hpu_op_matmul(struct hpu_stream *stream, struct hpu_tensor *out,
			  const struct hpu_tensor *a, const struct hpu_tensor *b);
/* out [..., n] = x [..., k] @ weight [n, k]^T + bias [n] (bias may be NULL): torch's Linear. */
HPU_API int hpu_op_linear(struct hpu_stream *stream, struct hpu_tensor *out,
			  const struct hpu_tensor *x, const struct hpu_tensor *weight,
			  const struct hpu_tensor *bias);
/* A convolution's stride, zero padding and dilation: [0] height, [1] width (1d: [1] only). */
struct hpu_conv_params {
	int64_t stride[2], padding[2], dilation[2];
	int64_t groups; /* dividing the input and output channels */
};

/*
 * out = conv(in, weight) + bias, torch's conv1d / conv2d: in [N, Cin, H, W]
 * (1d: [N, Cin, L]), weight [Cout, Cin / groups, kh, kw] (1d: [Cout, Cin /
 * groups, k]), bias [Cout] or NULL, out [N, Cout, Ho, Wo] with Ho = (H +
 * 2 padding - dilation (kh - 1) - 1) / stride + 1.  One float dtype;
 * computed as GEMMs in fp32 (since libhpu 0.9).
 */
HPU_API int hpu_op_conv(struct hpu_stream *stream, struct hpu_tensor *out,
			const struct hpu_tensor *in, const struct hpu_tensor *weight,
			const struct hpu_tensor *bias, const struct hpu_conv_params *params);
/*
 * The gradients of hpu_op_conv() from grad_out: grad_in (in's shape),
 * grad_weight (weight's) and grad_bias ([Cout]), each NULL when not wanted.
 * The weight's is summed over chunks of N Ho Wo, added in order.
 */
HPU_API int hpu_op_conv_backward(struct hpu_stream *stream, struct hpu_tensor *grad_in,
				 struct hpu_tensor *grad_weight, struct hpu_tensor *grad_bias,
				 const struct hpu_tensor *grad_out, const struct hpu_tensor *in,
				 const struct hpu_tensor *weight,
				 const struct hpu_conv_params *params);
/* Fused attention's settings (hpu_op_sdpa()). */
struct hpu_sdpa_params {
	double scale;     /* of the scores q k^T: 1 / sqrt(D) in torch */
	double dropout_p; /* [0, 1) */
	bool causal;      /* key j is hidden from query i when j > i (torch.tril(ones(L, S))) */
	bool pad_left;    /* valid lengths count from the end (left padding) */
	bool fast_softmax; /* bf16 only: a cheaper exp (relative error under 2e-4) */
};

/*
 * Fused scaled dot-product attention, flash-attention style (the [L, S]
 * scores are never stored): per (b, h), out [B, H, L, Dv] = dropout(
 * softmax(scale q k^T + mask)) v for q [B, H, L, D], k [B, H, S, D] and v
 * [B, H, S, Dv] (floats; D, Dv <= 1024), in fp32; lse (F32 [B, H, L]) gets
 * each row's logsumexp for the backward.  mask (or NULL): float, added to
 * the scores, or U8 (bool: false hides the key), of 4 dims [B, 1 or H,
 * 1 or L, 1 or S] (no broadcast over the batch).  valid_len (or NULL):
 * index [B], each in [0, S], with causal and no mask: keys past it (before
 * S - it with pad_left) are hidden and the query rows there are padding.
 * A row that sees no key gets out 0 and lse -inf.  With dropout_p > 0 the
 * mask is drawn from rng (I64 [2]: seed, offset, as hpu_op_dropout(); its
 * offset advances) and rng_used (I64 [2]) gets the state drawn from, for
 * the backward; both may be NULL without dropout.  probs ([B, H, L, S]
 * float: the softmax) and drop_mask (U8 [B, H, L, S]: kept) are written
 * when given (they cost the [L, S] the op otherwise avoids).
 */
HPU_API int hpu_op_sdpa(struct hpu_stream *stream, struct hpu_tensor *out, struct hpu_tensor *lse,
			const struct hpu_tensor *q, const struct hpu_tensor *k,
			const struct hpu_tensor *v, const struct hpu_tensor *mask,
			const struct hpu_tensor *valid_len, struct hpu_tensor *rng,
			struct hpu_tensor *rng_used, struct hpu_tensor *probs,
			struct hpu_tensor *drop_mask, const struct hpu_sdpa_params *params);
/*
 * The gradients of hpu_op_sdpa() from grad_out (out's shape), given the
 * forward's operands, out and lse: the probabilities are recomputed block
 * by block, the dropout mask from rng_used.  grad_q, grad_k and grad_v
 * have q's, k's and v's shapes (floats); each is summed in a fixed order.
 */
HPU_API int hpu_op_sdpa_backward(struct hpu_stream *stream, struct hpu_tensor *grad_q,
				 struct hpu_tensor *grad_k, struct hpu_tensor *grad_v,
				 const struct hpu_tensor *grad_out, const struct hpu_tensor *q,
				 const struct hpu_tensor *k, const struct hpu_tensor *v,
				 const struct hpu_tensor *out, const struct hpu_tensor *lse,
				 const struct hpu_tensor *mask, const struct hpu_tensor *valid_len,
				 const struct hpu_tensor *rng_used,
				 const struct hpu_sdpa_params *params);
/* out = cumulative sum of in along dim.  No device kernel: always falls back. */
HPU_API int hpu_op_cumsum(struct hpu_stream *stream, struct hpu_tensor *out,
			  const struct hpu_tensor *in, unsigned int dim);

/*
 * Index ops and topk (torch's semantics; dim may be negative, counted from
 * the end; a 0-dim tensor has one dim of size 1 here).  Indices are I32 or
 * I64 in [0, size along dim): the device checks each one before it writes
 * anything, and an out-of-range or negative index fails the launch (the
 * stream's error, HPU_EVENT_BAD_KERNEL), outputs unwritten.
 */
/* out = in with dim's positions picked by index (ndim 0 or 1); out has in's dtype (any). */
HPU_API int hpu_op_index_select(struct hpu_stream *stream, struct hpu_tensor *out,
				const struct hpu_tensor *in, const struct hpu_tensor *index,
				int64_t dim);
/* torch.gather: out[i] = in[i with i[dim] = index[i]]; out has index's shape. */
HPU_API int hpu_op_gather(struct hpu_stream *stream, struct hpu_tensor *out,
			  const struct hpu_tensor *in, const struct hpu_tensor *index, int64_t dim);
/*
 * torch's scatter_add_: self[i with i[dim] = index[i]] += src[i] for every
 * element of index.  self and src F32, BF16, I32 or I64 (one dtype); sums
 * run in fp64 in index order along dim, the same whatever the device's split.
 */
HPU_API int hpu_op_scatter_add(struct hpu_stream *stream, struct hpu_tensor *self,
			       const struct hpu_tensor *index, const struct hpu_tensor *src,
			       int64_t dim);
/* torch's scatter_ with a src: as scatter_add, but src's element replaces self's (last wins). */
HPU_API int hpu_op_scatter(struct hpu_stream *stream, struct hpu_tensor *self,
			   const struct hpu_tensor *index, const struct hpu_tensor *src, int64_t dim);
/* torch's index_add_ (alpha 1): self's positions index[j] along dim += src's j-th. */
HPU_API int hpu_op_index_add(struct hpu_stream *stream, struct hpu_tensor *self,
			     const struct hpu_tensor *index, const struct hpu_tensor *src,
			     int64_t dim);
/*
 * torch.topk: the k largest (smallest) of in along dim, best first (always
 * sorted), NaN above every number, ties by the lower index.  values has
 * in's dtype (F32, BF16, I32 or I64), indices I64 or I32.
 */
HPU_API int hpu_op_topk(struct hpu_stream *stream, struct hpu_tensor *values,
			struct hpu_tensor *indices, const struct hpu_tensor *in, int64_t k,
			int64_t dim, bool largest, bool sorted);

/* Optimizer steps, in place, as torch.optim's (param, grad and state of one shape). */
struct hpu_sgd_config {
	double lr, momentum, dampening, weight_decay;
	bool nesterov;
};
/* first_step: momentum_buf is set to the gradient (torch's empty buffer). */
HPU_API int hpu_op_sgd(struct hpu_stream *stream, struct hpu_tensor *param,
		       const struct hpu_tensor *grad, struct hpu_tensor *momentum_buf,
		       const struct hpu_sgd_config *config, bool first_step);

struct hpu_adadelta_config {
	double lr, rho, eps, weight_decay;
};
HPU_API int hpu_op_adadelta(struct hpu_stream *stream, struct hpu_tensor *param,
			    const struct hpu_tensor *grad, struct hpu_tensor *square_avg,
			    struct hpu_tensor *acc_delta, const struct hpu_adadelta_config *config);

struct hpu_adamw_config {
	double lr, beta1, beta2, eps, weight_decay;
};
/* step: F32 or I64 scalar, the steps done so far; incremented. */
HPU_API int hpu_op_adamw(struct hpu_stream *stream, struct hpu_tensor *param,
			 const struct hpu_tensor *grad, struct hpu_tensor *exp_avg,
			 struct hpu_tensor *exp_avg_sq, struct hpu_tensor *step,
			 const struct hpu_adamw_config *config);
/*
 * Scales grads[0..count) by min(1, max_norm / (norm + 1e-6)) where norm
 * (written to total_norm, an F32 scalar) is their joint norm_type norm (2,
 * or INFINITY).  count <= 15.
 */
HPU_API int hpu_op_clip_grad_norm(struct hpu_stream *stream, struct hpu_tensor *total_norm,
				  struct hpu_tensor *const *grads, unsigned int count,
				  double max_norm, double norm_type);

/*
 * Fused optimizer steps over lists of count parameters (count >= 1, any
 * number): params[i], grads[i] and each state list's [i] of params[i]'s
 * shape and a float dtype, stepped in place by torch.optim's single-tensor
 * formulas.  lr (an F32 scalar) and step (an F32 or I64 scalar: the steps
 * done so far, advanced by one) are tensors the device reads when the step
 * runs: writing lr changes no launch, so a schedule compiles nothing and a
 * recorded graph replays with the lr of the moment.  The op issues
 * launches back to back, as many params to each as a launch takes (7 for
 * SGD without momentum, 4 with, 3 for the others); it checks them all first, so a bad
 * list changes nothing.
 */
struct hpu_fused_sgd_config {
	double momentum, dampening, weight_decay;
	bool nesterov;
};
/* momentum_bufs: unused (may be NULL) without momentum; set to the gradient while step is 0. */
HPU_API int hpu_op_fused_sgd(struct hpu_stream *stream, struct hpu_tensor *const *params,
			     struct hpu_tensor *const *grads,
			     struct hpu_tensor *const *momentum_bufs, unsigned int count,
			     const struct hpu_tensor *lr, struct hpu_tensor *step,
			     const struct hpu_fused_sgd_config *config);

struct hpu_fused_adamw_config {
	double beta1, beta2, eps, weight_decay;
};
HPU_API int hpu_op_fused_adamw(struct hpu_stream *stream, struct hpu_tensor *const *params,
			       struct hpu_tensor *const *grads, struct hpu_tensor *const *exp_avgs,
			       struct hpu_tensor *const *exp_avg_sqs, unsigned int count,
			       const struct hpu_tensor *lr, struct hpu_tensor *step,
			       const struct hpu_fused_adamw_config *config);

/*
 * LAMB: AdamW's moments, the update u = m^ / (sqrt(v^) + eps) +
 * weight_decay * p (m^, v^ bias-corrected if asked; m averages
 * (1 - beta1) * g, or adds g without grad_averaging), and
 * p -= lr * ||p|| / ||u|| * u per parameter (ratio 1 if either norm is 0).
 */
struct hpu_fused_lamb_config {
	double beta1, beta2, eps, weight_decay;
	bool bias_correction, grad_averaging;
};
HPU_API int hpu_op_fused_lamb(struct hpu_stream *stream, struct hpu_tensor *const *params,
			      struct hpu_tensor *const *grads, struct hpu_tensor *const *exp_avgs,
			      struct hpu_tensor *const *exp_avg_sqs, unsigned int count,
			      const struct hpu_tensor *lr, struct hpu_tensor *step,
			      const struct hpu_fused_lamb_config *config);

struct hpu_fused_adadelta_config {
	double rho, eps, weight_decay;
};
HPU_API int hpu_op_fused_adadelta(struct hpu_stream *stream, struct hpu_tensor *const *params,
				  struct hpu_tensor *const *grads,
				  struct hpu_tensor *const *square_avgs,
				  struct hpu_tensor *const *acc_deltas, unsigned int count,
				  const struct hpu_tensor *lr, struct hpu_tensor *step,
				  const struct hpu_fused_adadelta_config *config);

/*
 * hpu_op_clip_grad_norm over any number of grads (count may be 0): their
 * squares (or |x|, norm_type INFINITY) summed on the device into acc in a
 * fixed order, 14 grads a launch, total_norm written from it, then every
 * grad scaled by min(1, max_norm / (total_norm + 1e-6)) reading total_norm
 * on the device.  acc and total_norm are F32 scalars; acc is scratch.
 */
HPU_API int hpu_op_clip_norm(struct hpu_stream *stream, struct hpu_tensor *total_norm,
			     struct hpu_tensor *acc, struct hpu_tensor *const *grads,
			     unsigned int count, double max_norm, double norm_type);

/* ------------------------------------------------------------------------
 * CPU fallback
 */

/*
 * How many times op fell back on this device, by the op's name: the
 * function of a family ("exp", "add", "sum", "argmax") or the op
 * ("cumsum", "matmul", "softmax", "nll_loss", ...).  -ENOENT for a name
 * that is no op.
 */
HPU_API int hpu_fallback_count(struct hpu_device *dev, const char *op, uint64_t *count);
/* All fallbacks of the device, every op together. */
HPU_API int hpu_fallback_total(struct hpu_device *dev, uint64_t *count);
/* Strict: an op that would fall back fails with -EOPNOTSUPP instead. */
HPU_API int hpu_fallback_set_strict(struct hpu_device *dev, bool strict);

#if defined(__cplusplus)
}
#endif

#endif /* HPU_HPU_TENSOR_H */
