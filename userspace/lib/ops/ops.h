/* SPDX-License-Identifier: MIT */
/*
 * libhpu's op layer: tensors and their layouts, and ops - checked, then
 * encoded and launched on a stream, or run on the host.
 */
#ifndef HPU_OPS_H
#define HPU_OPS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hpu/hpu_tensor.h>

#include "../submit/submit.h"

/*
 * hpu_layout.c: view arithmetic (no device).  A layout's offset and strides
 * are in elements of its dtype.
 */

const char *hpu_dt_name(uint32_t dtype);
bool hpu_dt_is_float(uint32_t dtype);
int64_t hpu_shape_numel(unsigned int ndim, const int64_t *shape);
int64_t hpu_layout_numel(const struct hpu_tensor_layout *l);
/* Element offset of index idx[ndim]. */
int64_t hpu_layout_offset(const struct hpu_tensor_layout *l, const int64_t *idx);
/* Steps idx through shape in row-major order; false after the last index (idx back at 0). */
bool hpu_index_next(unsigned int ndim, const int64_t *shape, int64_t *idx);
/* ndim and every dim in range; name is the tensor's, in messages. */
int hpu_shape_check(unsigned int ndim, const int64_t *shape, const char *name);
/* A contiguous row-major layout at offset 0. */
void hpu_layout_init(struct hpu_tensor_layout *l, uint32_t dtype, unsigned int ndim,
		     const int64_t *shape);
bool hpu_layout_is_contiguous(const struct hpu_tensor_layout *l);
/* Element offsets of the lowest and highest element reached; false if there are none. */
bool hpu_layout_span(const struct hpu_tensor_layout *l, int64_t *lo, int64_t *hi);
/* Valid dtype and shape, and every element inside a storage of storage_bytes. */
int hpu_layout_check(const struct hpu_tensor_layout *l, uint64_t storage_bytes, const char *name);
const char *hpu_shape_str(unsigned int ndim, const int64_t *shape, char *buf, size_t len);
/* in expanded to shape: its dims aligned at the end, size-1 and missing ones with stride 0. */
int hpu_layout_broadcast(const struct hpu_tensor_layout *in, unsigned int ndim,
			 const int64_t *shape, struct hpu_tensor_layout *out, const char *name);
/* The shape both broadcast to. */
int hpu_broadcast_shapes(unsigned int andim, const int64_t *ashape, unsigned int bndim,
			 const int64_t *bshape, unsigned int *ndim, int64_t *shape);
int hpu_layout_view(const struct hpu_tensor_layout *in, unsigned int ndim, const int64_t *shape,
		    struct hpu_tensor_layout *out);
int hpu_layout_permute(const struct hpu_tensor_layout *in, const unsigned int *dims,
		       struct hpu_tensor_layout *out);
int hpu_layout_slice(const struct hpu_tensor_layout *in, unsigned int dim, int64_t start,
		     int64_t end, int64_t step, struct hpu_tensor_layout *out);
int hpu_layout_expand(const struct hpu_tensor_layout *in, unsigned int ndim, const int64_t *shape,
		      struct hpu_tensor_layout *out);
/* A dim of more than one element with stride 0: writing it would race with itself. */
bool hpu_layout_has_repeats(const struct hpu_tensor_layout *l);
bool hpu_layout_same(const struct hpu_tensor_layout *a, const struct hpu_tensor_layout *b);
bool hpu_layout_overlap(const struct hpu_tensor_layout *a, const struct hpu_tensor_layout *b);

/* hpu_tensor.c: storages and views. */

struct hpu_storage {
	struct hpu_device *dev;
	uint64_t va;   /* device memory, 0 if size is 0 */
	uint64_t size; /* bytes */
	atomic_uint refs;
};

struct hpu_tensor {
	struct hpu_storage *storage;
	struct hpu_tensor_layout l;
};

/* Device address of the element at offset (elements) of t's storage. */
uint64_t hpu_tensor_addr(const struct hpu_storage *st, const struct hpu_tensor_layout *l);
/*
 * The bytes a layout of st spans, between host and device: what the
 * fallback and non-contiguous copies move.  *lo is the first element.
 */
int hpu_span_read(struct hpu_stream *s, const struct hpu_storage *st,
		  const struct hpu_tensor_layout *l, void **buf, int64_t *lo);
int hpu_span_write(struct hpu_stream *s, const struct hpu_storage *st,
		   const struct hpu_tensor_layout *l, const void *buf, int64_t lo);

/* hpu_tensor.c: a storage reference for the graph. */
void hpu_storage_put(struct hpu_storage *st);
/*
 * The static tensors of graphed callables and the module cacher: new
 * contiguous tensors of like[]'s dtypes and shapes (a failure leaves t[]
 * to destroy), and copies into them (skipping a tensor copied onto itself).
 */
int hpu_tensors_like(struct hpu_device *dev, unsigned int n, struct hpu_tensor *const *like,
		     struct hpu_tensor **t);
int hpu_tensors_copy(struct hpu_stream *s, unsigned int n, struct hpu_tensor *const *dst,
		     struct hpu_tensor *const *src);

/*
 * hpu_op_run.c builds one struct hpu_op per call: the kernel and its operands
 * as the device takes them (layouts already broadcast), which hpu_launch.c
 * runs on the device or hpu_fallback.c on the host.
 */

/* Operands of one op: the most a kernel takes (HPU_KERNEL_MAX_TENSORS). */
#define HPU_OP_TENSORS 16
/* Numbers of one op: a kernel's parameter block holds as many (HPU_KERNEL_MAX_ARGS). */
#define HPU_OP_SCALARS 8

/* Not a device kernel: the matrix engine, or host only. */
enum hpu_op_engine_kernel {
	HPU_OPK_GEMM = 0x100,   /* t: out, a, b, bias (optional); a0: batch dims (in layouts) */
	HPU_OPK_CUMSUM = 0x101, /* t: out, in; a0: dim */
};

struct hpu_op {
	const char *name; /* counted and logged by it */
	uint32_t kernel;  /* enum hpu_kernel_id or enum hpu_op_engine_kernel */
	unsigned int num_tensors;
	uint32_t outputs; /* bit i: t[i] is written */
	const struct hpu_tensor *t[HPU_OP_TENSORS]; /* NULL: absent operand */
	const char *names[HPU_OP_TENSORS];          /* of the operands, in messages */
	struct hpu_tensor_layout l[HPU_OP_TENSORS];
	int64_t args[8];
	double scalars[HPU_OP_SCALARS];
};

/*
 * The graph layer's say before an op runs (dev->op_hooks, NULL in host tests).
 * take(), with s->lock held (reason: why op runs on the host, or NULL): 1 if
 * it recorded op, 0 to run it now, or -errno.
 */
struct hpu_op_hooks {
	int (*take)(struct hpu_stream *s, const struct hpu_op *op, const char *reason);
};

/* Checks what every op shares, then runs it on the device or falls back. */
int hpu_op_run(struct hpu_stream *s, struct hpu_op *op);
/* A number for each op name (for the fallback counts), -1 for a name that is no op. */
int hpu_op_index(const char *name);

#define HPU_UNARY_FNS 18
#define HPU_BINARY_FNS 13
#define HPU_REDUCE_FNS 6
extern const char *const hpu_unary_names[HPU_UNARY_FNS];
extern const char *const hpu_binary_names[HPU_BINARY_FNS];
extern const char *const hpu_reduce_names[HPU_REDUCE_FNS];

/* Building an op's operands: t[i] is the i-th operand the kernel takes. */
#define HPU_ARG_OUT (1u << 0)       /* written */
#define HPU_ARG_OPTIONAL (1u << 1)  /* may be NULL */
#define HPU_ARG_BROADCAST (1u << 2) /* expanded to t[0]'s shape */

struct hpu_arg {
	const struct hpu_tensor *t;
	const char *name;
	unsigned int flags;
};

/* Sets operand i (its layout t's, or broadcast). */
int hpu_op_operand(struct hpu_op *op, unsigned int i, const struct hpu_tensor *t,
		   const char *name, unsigned int flags);
#define HPU_OUT(t, name) { t, name, HPU_ARG_OUT }
#define HPU_IN(t, name) { t, name, HPU_ARG_BROADCAST }
#define HPU_SAME(t, name) { t, name, 0 }

/* Appends args as the next operands. */
int hpu_op_operands(struct hpu_op *op, const struct hpu_arg *args, unsigned int count);
/* Names op's kernel and appends its operands (inputs broadcast if args say so). */
int hpu_op_describe(struct hpu_op *op, uint32_t kernel, const char *name,
		    const struct hpu_arg *args, unsigned int count);
/* Runs a described op unless ret failed, naming the public call func in a failure. */
int hpu_op_finish(const char *func, struct hpu_stream *s, struct hpu_op *op, int ret);
int hpu_op_same_shape(const struct hpu_op *op, unsigned int i, unsigned int j);
/* 0 also when either operand is absent. */
int hpu_op_same_dtype(const struct hpu_op *op, unsigned int i, unsigned int j);
static inline unsigned int hpu_dt_bit(uint32_t dtype)
{
	return dtype == HPU_DT_F64 ? 1u << 6 : 1u << (dtype & 7);
}
#define HPU_DTS_FLOAT (hpu_dt_bit(HPU_DT_F32) | hpu_dt_bit(HPU_DT_BF16) | hpu_dt_bit(HPU_DT_F64))
#define HPU_DTS_INDEX (hpu_dt_bit(HPU_DT_I32) | hpu_dt_bit(HPU_DT_I64))
#define HPU_DTS_INT (HPU_DTS_INDEX | hpu_dt_bit(HPU_DT_U8))
#define HPU_DTS_ANY (HPU_DTS_FLOAT | HPU_DTS_INT)
/* Operand i (if present) has one of dtypes, a set of hpu_dt_bit()s. */
int hpu_op_dtype_in(const struct hpu_op *op, unsigned int i, unsigned int dtypes);
/* Operands all of one dtype from first on, that dtype one of dtypes. */
int hpu_op_one_dtype(const struct hpu_op *op, unsigned int first, unsigned int dtypes);
/* Operands from first on (those present) have operand ref's shape. */
int hpu_op_shapes_of(const struct hpu_op *op, unsigned int ref, unsigned int first);
/* Operand i (if present) has one element: it becomes a 0-dim scalar. */
int hpu_op_scalar_operand(struct hpu_op *op, unsigned int i);
/*
 * hpu_op_bnorm.c, for batch and group norm: t[x] a float [N, C, ...] of
 * t[like]'s dtype and shape (its result or gradient).
 */
int hpu_op_norm_input(const struct hpu_op *op, unsigned int x, unsigned int like);

/* The op of a fallback counter's index (hpu_op_index()), NULL past the last. */
const char *hpu_op_name(int index);

/* hpu_encode.c: what the device reads for an op. */

/* Bytes of op's parameter block, written to buf with its tensors at addrs. */
size_t hpu_params_encode(const struct hpu_op *op, const uint64_t *addrs, void *buf);
/*
 * A copy between contiguous tensors of one dtype and size, or a fill of a
 * contiguous tensor with +0: bytes a DMA moves unchanged, no kernel.  The
 * caller checks that a copy's operands do not overlap.
 */
bool hpu_op_is_dma_copy(const struct hpu_op *op);
bool hpu_op_is_dma_fill(const struct hpu_op *op);
/* The GEMM packet of an HPU_OPK_GEMM op; -EINVAL if the layouts do not fit the engine. */
int hpu_gemm_encode(const struct hpu_op *op, const uint64_t *addrs, double beta, void *pkt);

/* hpu_launch.c: kernels and GEMMs as jobs on a stream. */

/*
 * Kernel parameter blocks go to a ring of chunks of pinned memory per
 * stream (s->params, made at its first kernel, under s->lock); a chunk is
 * refilled once the last job that used it has ended.
 */
#define HPU_PARAM_CHUNKS 32u
#define HPU_PARAM_CHUNK (4u << 10) /* 128 KiB pinned per stream that launches */

struct hpu_param_ring {
	uint64_t va;
	uint8_t *host;
	unsigned int chunk; /* the chunk being filled */
	uint32_t used;      /* bytes of it */
	uint64_t job[HPU_PARAM_CHUNKS]; /* the last job using each chunk */
};

/* Enqueues op on s (its lock held). */
int hpu_launch(struct hpu_stream *s, const struct hpu_op *op);
/* At the stream's last reference. */
void hpu_params_release(struct hpu_stream *s);

/* hpu_fallback.c: ops on the host, and their counts per device (dev->fallback). */

#define HPU_FALLBACK_OPS 128
struct hpu_fallback_state {
	atomic_uint_fast64_t counts[HPU_FALLBACK_OPS]; /* by hpu_op_index() */
	atomic_int strict; /* 0: as HPU_FALLBACK_STRICT says, 1 on, 2 off */
};

int hpu_fallback_init(struct hpu_device *dev);
void hpu_fallback_fini(struct hpu_device *dev);

/* Why an op cannot run on the device; NULL if it can. */
const char *hpu_fallback_reason(const struct hpu_op *op);
/* Runs op on the host (s's lock not held), or fails in strict mode. */
int hpu_fallback_run(struct hpu_stream *s, const struct hpu_op *op, const char *reason);

#endif /* HPU_OPS_H */
