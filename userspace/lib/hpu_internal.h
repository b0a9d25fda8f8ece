/* SPDX-License-Identifier: MIT */
/*
 * libhpu internals, shared by the library's files only.  Nothing here is
 * exported: the library builds with -fvisibility=hidden and only HPU_API
 * declarations of <hpu/hpu.h> are visible.
 *
 * Lock order, outermost first: device, stream, staging, recipe cache, recipe,
 * event, sub-allocator, host table, jobs, disk cache.  No lock is held across a call into an
 * outer one.
 */
#ifndef HPU_INTERNAL_H
#define HPU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hpu/hpu.h>
#include <hpu/hpu_tensor.h>
#include <hpu/hpu_graph.h>

#define HPU_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define HPU_PAGE_SIZE 4096ull
/* A WAIT timeout that never passes. */
#define HPU_FOREVER INT64_MAX

static inline uint64_t hpu_round_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) / align * align;
}

/* Reads a word the device writes (DMA into pinned host memory). */
static inline uint32_t hpu_device_word(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Intrusive doubly linked list, circular through its head. */
struct hpu_list {
	struct hpu_list *prev, *next;
};

#define hpu_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void hpu_list_init(struct hpu_list *head)
{
	head->prev = head->next = head;
}

static inline bool hpu_list_empty(const struct hpu_list *head)
{
	return head->next == head;
}

static inline void hpu_list_add_tail(struct hpu_list *head, struct hpu_list *node)
{
	node->prev = head->prev;
	node->next = head;
	head->prev->next = node;
	head->prev = node;
}

static inline void hpu_list_del(struct hpu_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
}

/* hpu_cb.c: command buffers, the packets of uapi/drm/hpu_packets.h. */

/* Room for the largest job libhpu builds (a linear op: a launch, a GEMM and the signal). */
#define HPU_CB_CAPACITY 256u

struct hpu_cb {
	uint32_t size; /* bytes used */
	uint64_t buf[HPU_CB_CAPACITY / 8];
};

void hpu_cb_init(struct hpu_cb *cb);
void hpu_cb_copy(struct hpu_cb *cb, uint64_t dst, uint64_t src, uint64_t size);
void hpu_cb_fill(struct hpu_cb *cb, uint64_t dst, uint8_t value, uint64_t size);
void hpu_cb_signal(struct hpu_cb *cb, uint64_t addr, uint32_t value);
void hpu_cb_wait(struct hpu_cb *cb, uint64_t addr, uint32_t value);
void hpu_cb_timestamp(struct hpu_cb *cb, uint64_t addr);
void hpu_cb_tpc_launch(struct hpu_cb *cb, uint64_t params, uint32_t params_size);
/* gemm: a struct hpu_pkt_mme_gemm, header included (built by hpu_gemm_encode()). */
void hpu_cb_gemm(struct hpu_cb *cb, const void *gemm);

/*
 * hpu_suballoc.c: the caching sub-allocator behind device memory and pinned
 * host memory.  It manages address ranges only; a backend maps and unmaps
 * the slabs and says which work has ended, so it runs without a device in
 * the host unit tests.
 */

/* How hard the backend should try to learn which work has ended. */
enum hpu_retire {
	HPU_RETIRE_KNOWN, /* what it knows already: no system call */
	HPU_RETIRE_POLL,  /* ask the driver, without waiting */
	HPU_RETIRE_WAIT,  /* wait for all work submitted so far */
};

struct hpu_slab_map {
	uint64_t va;     /* device address */
	void *host;      /* CPU address of the same memory, or NULL */
	uint32_t handle; /* the backend's */
};

struct hpu_suballoc_ops {
	/* Maps a slab of size bytes (a pool's slab size, or a multiple of dedicated_align). */
	int (*slab_create)(void *ctx, uint64_t size, struct hpu_slab_map *map);
	void (*slab_destroy)(void *ctx, uint64_t size, const struct hpu_slab_map *map);
	/* A block freed now may be reused once retired() reaches this fence. */
	uint64_t (*fence)(void *ctx);
	uint64_t (*retired)(void *ctx, enum hpu_retire how);
};

#define HPU_SUBALLOC_POOLS 2

/*
 * A request goes to the first pool whose max_request it fits.  It is carved
 * from a slab of slab_size bytes, or gets a slab of its own (rounded up to
 * dedicated_align) if it is more than half that.  A block is split only if
 * at least min_split bytes would be left over.
 */
struct hpu_suballoc_config {
	const char *name; /* "device memory", in messages */
	uint64_t granule; /* sizes are rounded up to it; a power of two */
	uint64_t dedicated_align;
	struct {
		uint64_t max_request, slab_size, min_split;
	} pools[HPU_SUBALLOC_POOLS];
};

struct hpu_suballoc;

int hpu_suballoc_create(const struct hpu_suballoc_config *config,
			const struct hpu_suballoc_ops *ops, void *ctx, struct hpu_suballoc **sap);
/* Unmaps every slab, even those with live blocks. */
void hpu_suballoc_destroy(struct hpu_suballoc *sa);
/* size > 0.  *host is the CPU address if the slabs have one, else NULL. */
int hpu_suballoc_alloc(struct hpu_suballoc *sa, uint64_t size, uint64_t *addr, void **host);
int hpu_suballoc_free(struct hpu_suballoc *sa, uint64_t addr);
/* Unmaps the slabs with no live block and no pending one after a poll. */
void hpu_suballoc_trim(struct hpu_suballoc *sa);
void hpu_suballoc_stats(struct hpu_suballoc *sa, struct hpu_mem_cache_stats *stats);

/*
 * hpu_jobs.c: submitting jobs and knowing which have ended.  The driver
 * numbers a file's jobs in one sequence across all queues, and a queue runs
 * its jobs in order, so "job s of queue q has ended" means every earlier job
 * of q has too.  That is all the library needs to remember: per queue, the
 * last job submitted and the last known to have ended.
 */

/* A failed job of a user queue, until the process closes the device. */
struct hpu_job_error {
	uint64_t seq;
	int error;
};

struct hpu_uqueue;

struct hpu_jobs {
	pthread_mutex_t lock;
	unsigned int num_queues;
	uint64_t last;         /* the file's last job */
	uint64_t *queue_last;  /* per queue, 0 if none */
	uint64_t *queue_ended; /* per queue: it and every earlier job of the queue have ended */
	/* User queues (hpu_uqueue.c), one per queue index; NULL: jobs go through SUBMIT. */
	struct hpu_uqueue *uq;
	bool uq_decided;       /* the first stream has chosen between uq and SUBMIT */
	struct hpu_job_error *errors;
	size_t num_errors, cap_errors;
};

struct hpu_device;

int hpu_jobs_init(struct hpu_jobs *jobs, unsigned int num_queues);
void hpu_jobs_fini(struct hpu_jobs *jobs);
int hpu_job_submit(struct hpu_device *dev, uint32_t queue, const struct hpu_cb *cb, uint64_t *seq);
/* Jobs submitted together, in one SUBMIT (or at once to user queues); seqs[i] is job i's. */
struct hpu_job_cb {
	uint32_t queue;
	const void *cb;
	uint32_t size;
};
int hpu_jobs_submit(struct hpu_device *dev, const struct hpu_job_cb *jobs, unsigned int count,
		    uint64_t *seqs);
/*
 * Waits up to timeout_ns (0 polls) for job seq of queue: 0 once it ended,
 * with its error (0 or -errno) in *job_error; -ETIME if it has not.
 */
int hpu_job_wait(struct hpu_device *dev, uint32_t queue, uint64_t seq, int64_t timeout_ns,
		 int *job_error);
/* Records that job seq of queue has ended, learnt without asking the driver. */
void hpu_jobs_ended(struct hpu_device *dev, uint32_t queue, uint64_t seq);
/*
 * The fence of work submitted so far, and the largest fence whose work has
 * ended.  ctx is a struct hpu_device, so that they serve as hpu_suballoc_ops.
 */
uint64_t hpu_jobs_fence(void *ctx);
uint64_t hpu_jobs_retired(void *ctx, enum hpu_retire how);

/* hpu_uqueue.c: user queues, when the driver has them (jobs.uq). */

/*
 * With dev->lock held, at the first stream: takes num_queues user queues,
 * or none (all taken, HPU_USER_QUEUES=0), and jobs go through SUBMIT.
 */
int hpu_uqueues_open(struct hpu_device *dev);
void hpu_uqueues_close(struct hpu_device *dev);
int hpu_uqueues_submit(struct hpu_device *dev, const struct hpu_job_cb *jobs, unsigned int count,
		       uint64_t *seqs);
int hpu_uqueue_wait(struct hpu_device *dev, uint64_t seq, int64_t timeout_ns, int *job_error);
/* Records the ends the status words show, without waiting; false if jobs go through SUBMIT. */
bool hpu_uqueues_reap(struct hpu_device *dev);
/* "MMU fault (-EFAULT)" for a job's error. */
const char *hpu_job_error_name(int error, char *buf, size_t len);

/* hpu_host.c: pinned host memory and the table of what is pinned. */

struct hpu_host_range;

struct hpu_host_table {
	pthread_rwlock_t lock;
	struct hpu_host_range *ranges; /* sorted by start, disjoint */
	size_t count, capacity;
};

/*
 * The device's staging buffer: pageable copies of every stream go through
 * its two halves, one filling while the device copies the other, one copy
 * at a time.  One buffer, not one per stream, so that what a process pins
 * does not grow with its streams (RLIMIT_MEMLOCK).
 */
struct hpu_staging {
	pthread_mutex_t lock; /* everything below */
	uint64_t half;        /* bytes of each half, from the pinning limit */
	uint64_t va;          /* allocated on first use */
	uint8_t *host;
	/* The last job that used each half: seq 0 if none. */
	struct {
		uint64_t seq, index; /* the device's number, the stream's */
		unsigned int stream; /* id */
		uint32_t queue;
	} last[2];
};

/*
 * Sizes the pinned cache's slabs and the staging buffer from what the
 * process may pin (RLIMIT_MEMLOCK, unless CAP_IPC_LOCK lifts it).
 */
int hpu_host_init(struct hpu_device *dev);
/* Unmaps the pinned cache and what the caller left registered. */
void hpu_host_fini(struct hpu_device *dev);
/* The device address of [ptr, ptr + size) if one pinned range holds all of it. */
bool hpu_host_lookup(struct hpu_device *dev, const void *ptr, size_t size, uint64_t *va);
/* Pinned memory for libhpu's own use: staging buffers and sync slots. */
int hpu_pinned_alloc(struct hpu_device *dev, uint64_t size, uint64_t *va, void **host);
void hpu_pinned_free(struct hpu_device *dev, uint64_t va);

/* hpu_mem.c: the device memory cache. */

int hpu_mem_init(struct hpu_device *dev);

/* hpu_fallback.c's per-device counts; the names are hpu_fallback.c's. */
#define HPU_FALLBACK_OPS 64
struct hpu_fallback_state {
	atomic_uint_fast64_t counts[HPU_FALLBACK_OPS];
	atomic_int strict; /* 0: as HPU_FALLBACK_STRICT says, 1 on, 2 off */
};

/* hpu_stream.c */

struct hpu_stream_job {
	uint64_t seq;
	const char *what; /* the call that enqueued it */
};

/*
 * Kernel parameter blocks go to a ring of chunks of pinned memory per
 * stream; a chunk is refilled once the last job that used it has ended.
 */
#define HPU_PARAM_CHUNKS 32u
#define HPU_PARAM_CHUNK (4u << 10) /* 128 KiB pinned per stream that launches */

struct hpu_stream {
	struct hpu_device *dev;
	struct hpu_list node; /* in dev->streams while the user holds it */
	atomic_uint refs;     /* the user's, and one per event recorded on it last */
	unsigned int id;
	uint32_t queue;
	pthread_mutex_t lock; /* everything below */
	/* Every job of the stream ends by adding 1 here, unless it failed. */
	uint64_t done_va;
	uint32_t *done;
	uint64_t jobs;     /* submitted */
	uint64_t verified; /* jobs known to have ended, their failures reported */
	uint64_t lost;     /* failed jobs among the verified */
	/* Jobs verified + 1 .. jobs, oldest at ring[head]; capacity a power of two. */
	struct hpu_stream_job *ring;
	size_t ring_capacity, ring_head;
	/* Kernel parameter blocks (hpu_launch.c), allocated on first use. */
	uint64_t params_va;
	uint8_t *params;
	unsigned int params_chunk; /* the chunk being filled */
	uint32_t params_used;      /* bytes of it */
	uint64_t params_job[HPU_PARAM_CHUNKS]; /* the last job using each chunk */
	/* Lazy mode (hpu_lazy.c) */
	int lazy;                    /* 0: as HPU_LAZY_MODE says, 1 lazy, 2 eager */
	unsigned int max_graph_ops;  /* 0: as HPU_MAX_COMPOUND_OP_SIZE says */
	struct hpu_ir *graph;     /* recorded ops, NULL before the first */
	struct hpu_graph *capture; /* the HPU graph capturing the stream's ops, or NULL */
};

/*
 * A point of a stream to settle: job `index` has ended, and the failures
 * among the stream's jobs up to it are reported.  The device tells without
 * a system call when *ok (its count of the stream's jobs that completed, up
 * to job ok_through) shows no failure and, if signal is set, *signal has
 * reached target (job `index` itself completed).
 */
struct hpu_settle {
	uint64_t index;
	const uint32_t *ok;
	uint64_t ok_through;
	const uint32_t *signal;
	uint32_t target;
};

/* The stream's lock is held for these.  A submit first flushes what a lazy stream recorded. */
int hpu_stream_submit(struct hpu_stream *stream, struct hpu_cb *cb, const char *what);
/*
 * Submits jobs together, the last on the stream's queue; each must end by
 * adding 1 to the stream's done counter, and all count as the stream's.
 */
int hpu_stream_submit_group(struct hpu_stream *stream, const struct hpu_job_cb *jobs,
			    unsigned int count, const char *what);
int hpu_stream_settle(struct hpu_stream *stream, const struct hpu_settle *settle,
		      int64_t timeout_ns);
/* Settles everything submitted on the stream. */
int hpu_stream_settle_all(struct hpu_stream *stream, int64_t timeout_ns);
/* Waits for job index to end, ignoring its failure (a later settle reports it). */
int hpu_stream_wait_job(struct hpu_stream *stream, uint64_t index);
/* The device's number of the stream's last job. */
uint64_t hpu_stream_last_seq(const struct hpu_stream *stream);

void hpu_stream_get(struct hpu_stream *stream);
void hpu_stream_put(struct hpu_stream *stream);
/* The stream of the synchronous copies, created on first use. */
int hpu_stream_default(struct hpu_device *dev, struct hpu_stream **streamp);
/* For hpu_device_close(): destroys the streams the user still holds. */
void hpu_streams_close(struct hpu_device *dev);

/* hpu_event.c */

void hpu_events_close(struct hpu_device *dev);

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

/*
 * hpu_ops.c builds one struct hpu_op per call: the kernel and its operands
 * as the device takes them (layouts already broadcast), which hpu_launch.c
 * runs on the device or hpu_fallback.c on the host.
 */

/* Operands of one op: the most a kernel takes (HPU_KERNEL_MAX_TENSORS). */
#define HPU_OP_TENSORS 16

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
	double scalars[8];
};

/* Checks what every op shares, then runs it on the device or falls back. */
int hpu_op_run(struct hpu_stream *s, struct hpu_op *op);
/* A number for each op name (for the fallback counts), -1 for a name that is no op. */
int hpu_op_index(const char *name);

#define HPU_UNARY_FNS 14
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
/* Appends args as the next operands. */
int hpu_op_operands(struct hpu_op *op, const struct hpu_arg *args, unsigned int count);
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
/* Operand i (if present) has one element: it becomes a 0-dim scalar. */
int hpu_op_scalar_operand(struct hpu_op *op, unsigned int i);

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
/* Enqueues op on s (its lock held). */
int hpu_launch(struct hpu_stream *s, const struct hpu_op *op);
void hpu_params_release(struct hpu_stream *s);

/* hpu_fallback.c: ops on the host. */

/* Why an op cannot run on the device; NULL if it can. */
const char *hpu_fallback_reason(const struct hpu_op *op);
/* Runs op on the host (s's lock not held), or fails in strict mode. */
int hpu_fallback_run(struct hpu_stream *s, const struct hpu_op *op, const char *reason);

/*
 * Lazy mode and graphs (<hpu/hpu_graph.h>).  hpu_ir.c is the graph IR ops
 * are recorded into; hpu_lazy.c records a lazy stream's ops and flushes
 * them, hpu_graph.c captures HPU graphs; hpu_compiler.c turns an IR into a
 * recipe (no device: the host unit tests run it); hpu_recipe.c puts a
 * recipe on the device and launches it; hpu_recipe_cache.c keeps recipes
 * per device; hpu_metrics.c counts.
 */

/* Engines a recipe schedules onto, each a hardware queue: DMA, MME, TPC x 2. */
#define HPU_GRAPH_MAX_ENGINES 4
#define HPU_GRAPH_NONE UINT32_MAX

/* A recorded op: operands name IR buffers, not tensors (which may be gone). */
struct hpu_gnode {
	/* t[i] only tells a present operand (hpu_ir_present); l[i].offset is 0 */
	struct hpu_op op;
	uint32_t buf[HPU_OP_TENSORS];  /* buffer of operand i, HPU_GRAPH_NONE if absent */
	int64_t delta[HPU_OP_TENSORS]; /* bytes from the buffer's base to operand i's element 0 */
};

/* A storage the IR uses. */
struct hpu_gbuf {
	struct hpu_storage *st; /* a reference of the IR's; NULL in the host tests */
	uint64_t size;          /* bytes */
	int64_t anchor;         /* persistent: bytes from the storage's start to the buffer's base */
	bool internal;          /* an intermediate, in the recipe's workspace */
};

struct hpu_ir {
	struct hpu_gnode *nodes;
	unsigned int num_nodes, cap_nodes;
	struct hpu_gbuf *bufs;
	unsigned int num_bufs, cap_bufs;
};

extern const struct hpu_tensor hpu_ir_present;

/* Appends op (checked already), taking a reference to each storage it uses. */
int hpu_ir_add(struct hpu_ir *ir, const struct hpu_op *op);
/* Drops the ops and the IR's references. */
void hpu_ir_clear(struct hpu_ir *ir);
void hpu_ir_free(struct hpu_ir *ir);
/*
 * The decision made once recording ends, apart for the tests: a buffer
 * nobody else holds (holders[b] == 0) whose first access writes all of it
 * is internal; the others get the lowest operand address as base.
 */
void hpu_ir_finalize(struct hpu_ir *ir, const unsigned int *holders);
/* hpu_ir_finalize() with the holders the storages' reference counts tell. */
int hpu_ir_seal(struct hpu_ir *ir);
/* Device addresses of the persistent buffers, in binding order (malloc'ed). */
int hpu_ir_bindings(const struct hpu_ir *ir, uint64_t **bindings);
struct hpu_recipe;
/* The recipe of a sealed IR: from dev's cache, or compiled and cached; a reference. */
int hpu_ir_recipe(struct hpu_device *dev, const struct hpu_ir *ir, struct hpu_recipe **rp);

/*
 * hpu_recompile.c: called for every compilation of ir (key_hash its key's
 * hash) for the recipe cache of id cache, tells its site (the same ops with
 * other shapes) and warns once when the site has compiled more than
 * HPU_RECOMPILE_WARN shapes, and once when it has compiled keys it had
 * compiled for the same cache more than that many times.
 */
void hpu_recompile_note(const struct hpu_ir *ir, uint64_t key_hash, uint64_t cache);

/*
 * hpu_fork.c: around a fork(), each module with process-wide state takes
 * its lock (PREPARE), then releases it in the parent, or in the child
 * resets that state to a new process's and releases it.
 */
enum hpu_fork_phase { HPU_FORK_PREPARE, HPU_FORK_PARENT, HPU_FORK_CHILD };
void hpu_metrics_fork(enum hpu_fork_phase phase);
void hpu_recompile_fork(enum hpu_fork_phase phase);

/* hpu_lazy.c, with s->lock held: records op (checked already) instead of launching it. */
int hpu_lazy_record(struct hpu_stream *s, const struct hpu_op *op);
/*
 * With s->lock held: compiles and launches what s recorded; 0 if nothing.
 * Everything that needs the stream's ops done or ordered calls it first,
 * so it is also where a capturing stream refuses them (-EBUSY).
 */
int hpu_lazy_flush(struct hpu_stream *s);
/* Whether ops on s are recorded (HPU_LAZY_MODE decides until set). */
bool hpu_stream_lazy(struct hpu_stream *s);
/* Locks s and flushes: before a synchronize, a query, a destroy. */
int hpu_lazy_flush_stream(struct hpu_stream *s);

/* hpu_graph.c, with s->lock held: records op (checked already) into s->capture. */
int hpu_graph_capture_record_locked(struct hpu_stream *s, const struct hpu_op *op);
/* With s->lock held, for a stream the user destroys: its capture fails. */
void hpu_stream_capture_abort(struct hpu_stream *s);

struct hpu_compile_config {
	unsigned int engines; /* 1..HPU_GRAPH_MAX_ENGINES hardware queues */
	uint32_t fw_version;  /* recipes belong to a firmware: part of the key */
	/* Use one engine for a graph with too little parallelism to overlap (hpu_compiler.c). */
	bool fit_engines;
};

/* The u64 at blob offset `at` gets an address added: the blob's, the workspace's or a binding's. */
#define HPU_SITE_BLOB UINT32_MAX
#define HPU_SITE_WORKSPACE (UINT32_MAX - 1)
struct hpu_site {
	uint32_t at;
	uint32_t base; /* HPU_SITE_BLOB, or the index of a binding (a persistent buffer) */
};

/* The workspace starts at this multiple after the blob, and each intermediate in it at one. */
#define HPU_WS_ALIGN 256u

/*
 * A compiled graph: per-engine command buffers, parameter blocks and sync
 * objects in one blob whose addresses are relative (sites), a workspace
 * after it, and the persistent buffers to bind at launch.
 */
struct hpu_recipe {
	atomic_uint refs;
	struct hpu_list lru; /* in the cache */
	uint64_t hash;
	uint8_t *key;
	size_t key_size;
	uint8_t *blob;
	uint32_t blob_size;
	uint32_t sync_off, sync_size; /* the engines' sync objects, zeroed at each launch */
	uint64_t workspace_off, workspace_size; /* device memory: workspace_off + workspace_size */
	struct hpu_site *sites;
	unsigned int num_sites;
	unsigned int num_bindings;
	unsigned int num_engines;
	struct {
		uint32_t off, size; /* its command buffer in the blob */
		unsigned int nodes;
	} engine[HPU_GRAPH_MAX_ENGINES];
	unsigned int num_nodes, num_signals, num_waits;
	uint64_t disk_used_ns; /* when its disk file's use was last refreshed (hpu_disk_cache.c) */
	/* hpu_recipe.c's state on the device, freed with the recipe */
	void *inst;
	void (*inst_free)(void *inst);
};

/* hpu_compiler.c */
int hpu_compile(const struct hpu_ir *g, const struct hpu_compile_config *cfg,
		struct hpu_recipe **rp);
/* The cache key: every byte that decides what the recipe computes, and its hash. */
int hpu_ir_key(const struct hpu_ir *g, const struct hpu_compile_config *cfg, uint8_t **key,
		  size_t *size, uint64_t *hash);
void hpu_recipe_get(struct hpu_recipe *r);
void hpu_recipe_put(struct hpu_recipe *r);
/* A growing byte array; a failed growth is remembered (oom) and reported once. */
struct hpu_bytes {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};
/* Room for need elements of elem bytes in the array *p of *cap (grown by doubling). */
int hpu_array_grow(void **p, unsigned int *cap, unsigned int need, size_t elem);
/* FNV-1a, the hash of cache keys: h (HPU_FNV1A_INIT to start) continued over n bytes. */
#define HPU_FNV1A_INIT 0xcbf29ce484222325ull
static inline uint64_t hpu_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}
/* Appends len bytes of data (zeros if NULL); returns where they start. */
size_t hpu_bytes_put(struct hpu_bytes *b, const void *data, size_t len);
/* Bytes of the packet starting with header (0 for an unknown opcode). */
uint32_t hpu_pkt_size(uint32_t header);

/* hpu_recipe_cache.c: least recently launched first out. */
struct hpu_recipe_cache {
	pthread_mutex_t lock;
	struct hpu_list lru; /* most recent first */
	unsigned int count, capacity;
	uint64_t id; /* unique in the process, for hpu_recompile_note() */
	uint32_t fw_version;
	/* The device runs CALL: 0 not known yet, 1 yes, -1 no; streams on two threads may both probe. */
	atomic_int call;
	struct hpu_disk_cache *disk; /* behind the memory, NULL if off (hpu_disk_cache.c) */
};

void hpu_recipe_cache_init(struct hpu_recipe_cache *c, uint32_t fw_version);
void hpu_recipe_cache_fini(struct hpu_recipe_cache *c);
/* The recipe of key with a reference, or NULL; counts a hit or a miss. */
struct hpu_recipe *hpu_recipe_cache_find(struct hpu_recipe_cache *c, uint64_t hash,
					 const uint8_t *key, size_t size);
/* Keeps r (a reference of the cache's), evicting the least recent beyond the capacity. */
void hpu_recipe_cache_insert(struct hpu_recipe_cache *c, struct hpu_recipe *r);
void hpu_recipe_cache_resize(struct hpu_recipe_cache *c, unsigned int capacity);

/*
 * hpu_disk_cache.c: recipes in files of a directory that processes share
 * (HPU_RECIPE_CACHE_CONFIG), looked up after the memory cache.  A file
 * loads only where its compat record and then its whole key match.
 */

/* What a file must match besides the key: u32s only, so its bytes have no padding. */
struct hpu_disk_compat {
	uint32_t libhpu_version; /* major << 16 | minor << 8 | patch; set by the disk cache */
	uint32_t format;         /* HPU_DISK_FORMAT; set by the disk cache */
	uint32_t abi_version;    /* driver ABI: major << 16 | minor */
	uint32_t fw_version;     /* major << 16 | minor << 8 | patch */
	uint32_t fw_if_version;  /* major << 16 | minor */
	uint32_t hw_revision, pci_revision;
	uint32_t pci_id;         /* vendor << 16 | device */
	uint32_t num_dma, num_mme, num_tpc, num_queues;
	uint32_t capabilities_lo, capabilities_hi;
};

/*
 * A file: the header, then the compat record, the key, the record, the
 * sites and the blob.  crc (zlib's crc32) covers everything after the header.
 */
#define HPU_DISK_MAGIC 0x52555048u /* "HPUR" */
#define HPU_DISK_FORMAT 1u
struct hpu_disk_header {
	uint32_t magic, format;
	uint64_t body_size;
	uint32_t crc, compat_size, key_size, reserved;
};

/* The scalars of a struct hpu_recipe. */
struct hpu_disk_record {
	uint32_t blob_size, sync_off, sync_size, num_sites;
	uint64_t workspace_off, workspace_size;
	uint32_t num_bindings, num_engines, num_nodes, num_signals, num_waits, reserved;
	struct {
		uint32_t off, size, nodes, reserved;
	} engine[HPU_GRAPH_MAX_ENGINES];
};

#define HPU_DISK_DIR_MAX 4096
struct hpu_disk_config {
	char dir[HPU_DISK_DIR_MAX];
	bool clear;         /* remove the recipe files there at open */
	uint64_t max_bytes; /* eviction keeps the files within 0.99 x this */
};

struct hpu_disk_cache;

/* "<dir>,<true|false>,<max MB>"; -EINVAL with a message if it is not that. */
int hpu_disk_config_parse(const char *s, struct hpu_disk_config *cfg);
/*
 * Creates the directory if need be (and its parents, 0700) and clears it if
 * asked; -EPERM if another user owns it or may write it.
 */
int hpu_disk_cache_open(const struct hpu_disk_config *cfg, const struct hpu_disk_compat *compat,
			struct hpu_disk_cache **dcp);
/* As HPU_RECIPE_CACHE_CONFIG says: NULL if unset, or after one warning if unusable. */
struct hpu_disk_cache *hpu_disk_cache_from_env(const struct hpu_disk_compat *compat);
/* Waits for the queued writes, then frees dc.  NULL is a no-op. */
void hpu_disk_cache_close(struct hpu_disk_cache *dc);
/*
 * The recipe of key from its file, a reference with no key set, in *rp; NULL
 * on a miss (dc NULL too) or a file not loaded (damaged, another version's
 * or graph's: ignored).  -ENOMEM if memory ran out, which says nothing of
 * the file: it stays, and the caller fails rather than compile over it.
 */
int hpu_disk_cache_load(struct hpu_disk_cache *dc, const uint8_t *key, size_t size,
			struct hpu_recipe **rp);
/* Queues r (its key set) for the cache's thread to write.  dc NULL: a no-op. */
void hpu_disk_cache_store(struct hpu_disk_cache *dc, struct hpu_recipe *r);
/* Waits until the queued writes and the eviction after them are done. */
/*
 * A memory hit on r: its file's use is refreshed (at most once a minute),
 * so that other processes' eviction sees a recipe this one keeps using.
 */
void hpu_disk_cache_touch(struct hpu_disk_cache *dc, struct hpu_recipe *r);
void hpu_disk_cache_flush(struct hpu_disk_cache *dc);

/*
 * hpu_recipe.c.  An instance is a recipe's memory and state on a device:
 * a cached recipe makes its own at its first launch; an HPU graph has one
 * of its own, so that its bindings never change.
 */
struct hpu_recipe_inst;
int hpu_recipe_inst_create(struct hpu_device *dev, const struct hpu_recipe *r,
			   struct hpu_recipe_inst **inst);
/* Its memory is reused once the work launched so far has ended. */
void hpu_recipe_inst_destroy(void *inst);
/* Device memory it holds. */
uint64_t hpu_recipe_inst_bytes(const struct hpu_recipe_inst *inst);
/* With s->lock held; inst NULL: the recipe's own; bindings[i] is binding i's device address. */
int hpu_recipe_launch(struct hpu_stream *s, struct hpu_recipe *r, struct hpu_recipe_inst *inst,
		      const uint64_t *bindings);

/* hpu_metrics.c */
enum hpu_counter {
	HPU_C_COMPILES, HPU_C_COMPILE_NS,
	HPU_C_LAUNCHES, HPU_C_LAUNCH_NS, HPU_C_UPLOADS, HPU_C_UPLOAD_BYTES, HPU_C_INLINE,
	HPU_C_GRAPHS, HPU_C_OPS, HPU_C_CAP_SPLITS,
	HPU_C_HITS, HPU_C_MISSES, HPU_C_EVICTIONS, HPU_C_ENTRIES,
	HPU_C_CAPTURES, HPU_C_CAPTURED_OPS, HPU_C_REPLAYS, HPU_C_REPLAY_NS,
	HPU_C_RECOMPILE_WARNINGS, HPU_C_REPEATS,
	HPU_C_DISK_HITS, HPU_C_DISK_MISSES, HPU_C_DISK_WRITES, HPU_C_DISK_EVICTIONS,
	HPU_C_DISK_BYTES_READ, HPU_C_DISK_BYTES_WRITTEN, HPU_C_DISK_IGNORED,
	HPU_C_DISK_WRITE_FAILURES,
	HPU_COUNTERS
};
void hpu_counter_add(enum hpu_counter c, int64_t v);
uint64_t hpu_now_ns(void);
/* Open devices count in the memory and fallback metrics; closed ones leave their totals. */
void hpu_metrics_device_open(struct hpu_device *dev);
void hpu_metrics_device_close(struct hpu_device *dev);
/* The op of a fallback counter's index (hpu_op_index()), NULL past the last. */
const char *hpu_op_name(int index);
/* A positive number from the environment, or def. */
unsigned int hpu_env_uint(const char *name, unsigned int def);

/* hpu_cb.c */
void hpu_cb_call(struct hpu_cb *cb, uint64_t addr, uint64_t size);

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

/* An open device. */
struct hpu_device {
	int fd;
	struct hpu_device_desc desc;
	atomic_uint_fast64_t ioctls; /* issued through hpu_ioctl() */
	/* The rest is set up by hpu_device_open*(), not by discovery's probe. */
	struct hpu_version abi_version;
	uint32_t num_queues;
	uint32_t num_user_queues; /* the device's, as INFO said at open */
	pthread_mutex_t lock; /* streams, events, next_queue, next_stream_id, default_stream */
	struct hpu_list streams, events;
	uint32_t next_queue;
	unsigned int next_stream_id;
	struct hpu_stream *default_stream;
	struct hpu_jobs jobs;
	struct hpu_suballoc *mem;    /* device memory */
	struct hpu_suballoc *pinned; /* pinned host memory */
	struct hpu_host_table host;
	struct hpu_staging staging;
	struct hpu_fallback_state fallback;
	struct hpu_recipe_cache recipes;
};

/* -EOPNOTSUPP, with a message, if the driver predates command submission (ABI 1.1). */
int hpu_device_check_submission(struct hpu_device *dev);

/*
 * Output structs that start with `uint32_t size` (see <hpu/hpu.h>): the
 * arguments' check, and filling what both sides know.
 */
int hpu_sized_check(const struct hpu_device *dev, const void *out, const char *name,
		    uint32_t min_size);
void hpu_sized_out(void *out, void *known, uint32_t known_size);

/* hpu_error.c: the thread-local message behind hpu_last_error(). */

/* Records a message and returns -err, so failures read `return hpu_error_set(...)`. */
int hpu_error_set(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same for a failed system call: appends ": <strerror(errno)>" and returns -errno. */
int hpu_error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Public entry points end with `return hpu_error_in(__func__, ret);`: on
 * failure it prefixes the message with the entry point's name, so messages
 * name the call the user made rather than the internal helper that failed.
 */
int hpu_error_in(const char *func, int ret);

/* hpu_ioctl.c: every ioctl of the library goes through hpu_ioctl(). */

int hpu_ioctl_call(struct hpu_device *dev, unsigned long request, const char *request_name,
		   void *arg);

/* Names the request in failure messages, e.g. "DRM_IOCTL_HPU_INFO on /dev/accel/accel0: ...". */
#define hpu_ioctl(dev, request, arg) hpu_ioctl_call(dev, request, #request, arg)

/* hpu_node.c: opening a device node and telling whether it is an hpu. */

/* Opens path into dev (fd and desc).  -ENODEV if it is not an hpu node. */
int hpu_node_open(const char *path, struct hpu_device *dev);
void hpu_node_close(struct hpu_device *dev);

/* hpu_discover.c: finding the hpu devices of the system. */

struct hpu_discovery {
	struct hpu_device_desc *descs; /* in PCI bus id order */
	unsigned int count;
	unsigned int inaccessible; /* candidate nodes that could not be checked */
};

int hpu_discover(struct hpu_discovery *found);
void hpu_discovery_free(struct hpu_discovery *found);

#endif /* HPU_INTERNAL_H */
