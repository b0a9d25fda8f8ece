/* SPDX-License-Identifier: MIT */
/*
 * libhpu internals, shared by the library's files only.  Nothing here is
 * exported: the library builds with -fvisibility=hidden and only HPU_API
 * declarations of <hpu/hpu.h> are visible.
 *
 * Lock order, outermost first: device, stream, event, sub-allocator, host
 * table, jobs.  No lock is held across a call into an outer one.
 */
#ifndef HPU_INTERNAL_H
#define HPU_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hpu/hpu.h>

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

/* Room for the largest job libhpu builds (an event record: 80 bytes). */
#define HPU_CB_CAPACITY 128u

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

struct hpu_jobs {
	pthread_mutex_t lock;
	unsigned int num_queues;
	uint64_t last;         /* the file's last job */
	uint64_t *queue_last;  /* per queue, 0 if none */
	uint64_t *queue_ended; /* per queue: it and every earlier job of the queue have ended */
};

struct hpu_device;

int hpu_jobs_init(struct hpu_jobs *jobs, unsigned int num_queues);
void hpu_jobs_fini(struct hpu_jobs *jobs);
int hpu_job_submit(struct hpu_device *dev, uint32_t queue, const struct hpu_cb *cb, uint64_t *seq);
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
/* "MMU fault (-EFAULT)" for a job's error. */
const char *hpu_job_error_name(int error, char *buf, size_t len);

/* hpu_host.c: pinned host memory and the table of what is pinned. */

struct hpu_host_range;

struct hpu_host_table {
	pthread_rwlock_t lock;
	struct hpu_host_range *ranges; /* sorted by start, disjoint */
	size_t count, capacity;
};

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

/* hpu_stream.c */

struct hpu_stream_job {
	uint64_t seq;
	const char *what; /* the call that enqueued it */
};

/* Pageable copies go through two halves of a pinned buffer, one filling while one copies. */
#define HPU_STAGING_HALF (2ull << 20)

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
	/* Staging buffer (allocated on first use) and the last job that used each half. */
	uint64_t staging_va;
	uint8_t *staging;
	uint64_t staging_job[2];
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

/* The stream's lock is held for these. */
int hpu_stream_submit(struct hpu_stream *stream, struct hpu_cb *cb, const char *what);
int hpu_stream_settle(struct hpu_stream *stream, const struct hpu_settle *settle,
		      int64_t timeout_ns);
/* Settles everything submitted on the stream. */
int hpu_stream_settle_all(struct hpu_stream *stream, int64_t timeout_ns);
/* Waits for job index to end, ignoring its failure (a later settle reports it). */
int hpu_stream_wait_job(struct hpu_stream *stream, uint64_t index);
int hpu_stream_staging(struct hpu_stream *stream);

void hpu_stream_get(struct hpu_stream *stream);
void hpu_stream_put(struct hpu_stream *stream);
/* The stream of the synchronous copies, created on first use. */
int hpu_stream_default(struct hpu_device *dev, struct hpu_stream **streamp);
/* For hpu_device_close(): destroys the streams the user still holds. */
void hpu_streams_close(struct hpu_device *dev);

/* hpu_event.c */

void hpu_events_close(struct hpu_device *dev);

/* An open device. */
struct hpu_device {
	int fd;
	struct hpu_device_desc desc;
	atomic_uint_fast64_t ioctls; /* issued through hpu_ioctl() */
	/* The rest is set up by hpu_device_open*(), not by discovery's probe. */
	struct hpu_version abi_version;
	uint32_t num_queues;
	pthread_mutex_t lock; /* streams, events, next_queue, next_stream_id, default_stream */
	struct hpu_list streams, events;
	uint32_t next_queue;
	unsigned int next_stream_id;
	struct hpu_stream *default_stream;
	struct hpu_jobs jobs;
	struct hpu_suballoc *mem;    /* device memory */
	struct hpu_suballoc *pinned; /* pinned host memory */
	struct hpu_host_table host;
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
