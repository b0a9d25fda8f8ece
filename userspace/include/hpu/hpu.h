/* SPDX-License-Identifier: MIT */
/*
 * libhpu: the runtime of the hpu accelerator.
 *
 * Conventions, for every function unless its comment says otherwise:
 *  - Objects are opaque handles; functions are named hpu_<object>_<verb>.
 *  - Returns 0 on success or a negative errno.  On failure hpu_last_error()
 *    says why, and output arguments are left untouched (handles are set to
 *    NULL).
 *  - Thread-safe.  A handle may be used by several threads at once, but
 *    must not be closed while another thread still uses it.  The handles
 *    that hand out outputs of their own (HPU graphs, graphed callables,
 *    module cachers: <hpu/hpu_graph.h>) are used by one thread at a time.
 *  - fork(): the child is another process.  It must not use the parent's
 *    handles (their driver file, queues and memory are the parent's); it
 *    may open devices of its own, and its metrics start from zero.
 *
 * Compatibility: the soname, libhpu.so.<HPU_VERSION_MAJOR>, changes only
 * when the ABI breaks.  Under one soname, functions are only added (a new
 * symbol version node per minor version), enums and flags only gain values,
 * and structs with a `size` member only grow at their tail: the caller sets
 * size = sizeof(the struct it was built with), so old binaries keep working
 * with a newer library and new binaries detect an older one.
 */
#ifndef HPU_HPU_H
#define HPU_HPU_H

#include <stddef.h>
#include <stdint.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Marks the exported symbols; everything else in libhpu is hidden. */
#define HPU_API __attribute__((visibility("default")))

/* Version of this header; hpu_version() gives the loaded library's. */
#define HPU_VERSION_MAJOR 0
#define HPU_VERSION_MINOR 11
#define HPU_VERSION_PATCH 0

struct hpu_version {
	uint16_t major;
	uint16_t minor;
	uint16_t patch;
};

/* Version of the libhpu actually loaded.  Cannot fail. */
HPU_API struct hpu_version hpu_version(void);

/*
 * Message describing the last failed libhpu call of the calling thread,
 * e.g. "hpu_device_open: no hpu device 3 (2 found)"; "" if none failed yet.
 * The string belongs to the thread; its next libhpu call may rewrite it,
 * even a successful one, so read it right after the failure.  Cannot fail.
 */
HPU_API const char *hpu_last_error(void);

/* ------------------------------------------------------------------------
 * Devices
 *
 * Devices are numbered 0..count-1 in PCI bus id order, so an index names the
 * same device for as long as the set of devices does not change.  A device
 * is any DRM render node (/dev/dri/renderD*, kernels before 6.2) or compute
 * accelerator node (/dev/accel/accel*) whose driver is "hpu".  Discovery
 * opens every such node; nodes the caller may not open are not listed.
 */

struct hpu_device; /* opaque: an open device */

#define HPU_PCI_BUS_ID_MAX 32 /* "dddd:bb:dd.f" with room for wide domains */
#define HPU_PATH_MAX 128

/* Where a device is.  Fixed layout: new device data goes to hpu_device_info. */
struct hpu_device_desc {
	char pci_bus_id[HPU_PCI_BUS_ID_MAX]; /* "0000:00:04.0" */
	char path[HPU_PATH_MAX];             /* device node, "/dev/accel/accel0" */
};

/* Number of hpu devices present, 0 if none. */
HPU_API int hpu_device_count(unsigned int *count);

/*
 * Describes the first min(capacity, *count) devices in descs[] and sets
 * *count to the number of devices present.  descs may be NULL if capacity
 * is 0.
 */
HPU_API int hpu_device_list(struct hpu_device_desc *descs, unsigned int capacity,
			    unsigned int *count);

/* Opens device number index (see hpu_device_list()).  -ENODEV if absent. */
HPU_API int hpu_device_open(unsigned int index, struct hpu_device **devp);

/* Opens the device at a node path.  -ENODEV if the node is not an hpu device. */
HPU_API int hpu_device_open_path(const char *path, struct hpu_device **devp);

/*
 * Closes a device and frees its handle.  First waits for the work enqueued
 * on it; then its streams, events, device memory and pinned host memory are
 * gone, and their handles and addresses must not be used again.  NULL is a
 * no-op.  Cannot fail.
 */
HPU_API void hpu_device_close(struct hpu_device *dev);

enum hpu_device_status {
	HPU_DEVICE_STATUS_READY = 1,       /* firmware running, accepting work */
	HPU_DEVICE_STATUS_IN_RESET = 2,    /* a reset is in progress */
	HPU_DEVICE_STATUS_MALFUNCTION = 3, /* unusable until the driver is reloaded */
};

/* Data types the engines compute in (hpu_device_info.capabilities). */
#define HPU_CAP_FP32 (1ull << 0)
#define HPU_CAP_BF16 (1ull << 1)
#define HPU_CAP_FP16 (1ull << 2)
#define HPU_CAP_FP8 (1ull << 3)

/* sizeof(struct hpu_device_info) in libhpu 0.1: the smallest size accepted. */
#define HPU_DEVICE_INFO_SIZE_V1 232u

struct hpu_device_info {
	uint32_t size;         /* in: sizeof(struct hpu_device_info); out: bytes filled */
	uint32_t status;       /* enum hpu_device_status; other values: not ready */
	uint64_t capabilities; /* HPU_CAP_*; unknown bits may be set */
	uint64_t hbm_size;     /* device memory, bytes */
	uint32_t pci_revision;
	uint32_t hw_revision;  /* device hardware revision register */
	uint32_t num_dma_engines;
	uint32_t num_mme_engines;
	uint32_t num_tpc_engines;
	uint16_t pci_vendor_id;
	uint16_t pci_device_id;
	uint16_t pci_subsystem_vendor_id;
	uint16_t pci_subsystem_id;
	struct hpu_version abi_version;   /* kernel driver ABI (patch is 0) */
	struct hpu_version fw_version;    /* running firmware */
	struct hpu_version fw_if_version; /* firmware interface (patch is 0) */
	char pci_bus_id[HPU_PCI_BUS_ID_MAX];
	char path[HPU_PATH_MAX];
	/* libhpu 0.2 */
	uint32_t num_queues;   /* hardware queues streams run on; 0: no command submission */
	uint32_t max_contexts; /* processes (open devices) the device can serve at once */
	/* libhpu 0.7 */
	uint32_t num_user_queues; /* queues the device lets processes feed without a system call */
	uint32_t user_queues;     /* 1: its streams submit to user queues (known once one exists) */
};

/*
 * Queries the device.  The caller sets info->size (at least
 * HPU_DEVICE_INFO_SIZE_V1); the library fills that many bytes, zeroing
 * fields it does not know, and sets info->size to the bytes it knew.
 */
HPU_API int hpu_device_get_info(struct hpu_device *dev, struct hpu_device_info *info);

/* sizeof(struct hpu_device_stats) in libhpu 0.2: the smallest size accepted. */
#define HPU_DEVICE_STATS_SIZE_V1 96u

/* Usage now, as the driver counts it: device-wide, and of this open device (its context). */
struct hpu_device_stats {
	uint32_t size;          /* in: sizeof(struct hpu_device_stats); out: bytes filled */
	uint32_t num_contexts;  /* open contexts, this one included */
	uint64_t hbm_total;     /* bytes available for buffers */
	uint64_t hbm_used;      /* bytes buffers of all contexts hold */
	uint64_t ctx_hbm_used;  /* bytes allocated by this context (what the memory cache holds) */
	uint64_t ctx_host_pinned; /* host bytes this context has pinned for the device */
	uint64_t jobs_submitted; /* device-wide, since the driver bound */
	uint64_t jobs_completed;
	uint64_t jobs_failed;
	uint64_t ctx_jobs_submitted; /* this context */
	uint64_t ctx_jobs_completed;
	uint64_t ctx_jobs_failed;
	uint64_t ioctls;        /* ioctls libhpu issued on this device before this call */
	/* libhpu 0.11 */
	uint32_t ctx_id;        /* this context's id (its ASID; 0 from a driver before ABI 1.4) */
	uint32_t pad;
};

/* Fills stats (the size rule of hpu_device_get_info()).  Needs driver ABI 1.1. */
HPU_API int hpu_device_get_stats(struct hpu_device *dev, struct hpu_device_stats *stats);

/* ------------------------------------------------------------------------
 * Device memory
 *
 * Device memory is named by its device address, a uint64_t the caller may
 * offset into and pass to the copy functions.  Allocations come from a cache:
 * slabs of device memory (2 MiB for requests up to 1 MiB, 20 MiB up to
 * 10 MiB, a slab of its own above) are mapped once and carved up without
 * any system call; freed blocks go back to the cache.  Addresses are aligned
 * to 512 bytes; contents are undefined.
 *
 * Freeing never waits: a block freed while work submitted earlier may still
 * use it is reused only once that work has ended.
 *
 * The cache gives memory back to the driver only in hpu_mem_empty_cache(),
 * when the device is out of memory, and in hpu_device_close().
 */

/* Allocates size bytes.  size 0 gives *devptr = 0.  -ENOMEM if the device is full. */
HPU_API int hpu_mem_alloc(struct hpu_device *dev, size_t size, uint64_t *devptr);

/* Frees an address hpu_mem_alloc() returned.  0 is a no-op. */
HPU_API int hpu_mem_free(struct hpu_device *dev, uint64_t devptr);

/*
 * Gives the cached memory back to the driver: every slab (device or pinned
 * host) with no live allocation and no work that may still use it.
 */
HPU_API int hpu_mem_empty_cache(struct hpu_device *dev);

/* One cache: device memory, or pinned host memory. */
struct hpu_mem_cache_stats {
	uint64_t allocated;      /* bytes in live allocations (rounded up as allocated) */
	uint64_t peak_allocated; /* the most `allocated` has been */
	uint64_t reserved;       /* bytes of the slabs the cache holds */
	uint64_t pending;        /* freed bytes waiting for earlier work to end */
	uint64_t allocations;    /* live allocations */
	uint64_t slabs;          /* slabs held */
	uint64_t slabs_created;  /* since the device was opened: each took system calls */
	uint64_t slabs_released;
};

/* sizeof(struct hpu_mem_stats) in libhpu 0.2: the smallest size accepted. */
#define HPU_MEM_STATS_SIZE_V1 136u

struct hpu_mem_stats {
	uint32_t size; /* in: sizeof(struct hpu_mem_stats); out: bytes filled */
	uint32_t pad;  /* written as 0 */
	struct hpu_mem_cache_stats device;
	/* hpu_host_alloc() memory, plus libhpu's own staging buffer, user queues and sync slots */
	struct hpu_mem_cache_stats host;
};

/* Fills stats (the size rule of hpu_device_get_info()).  Issues no system call. */
HPU_API int hpu_mem_get_stats(struct hpu_device *dev, struct hpu_mem_stats *stats);

/* ------------------------------------------------------------------------
 * Pinned host memory
 *
 * The device reaches host memory only when it is pinned and mapped into the
 * device's address space.  Copies to and from pinned memory are
 * asynchronous; copies to and from any other (pageable) memory are staged
 * through the device's pinned staging buffer, see hpu_memcpy_h2d_async().
 *
 * The driver charges every pinned page against the process's
 * RLIMIT_MEMLOCK (8 MiB for an ordinary user by default) unless it has
 * CAP_IPC_LOCK.  libhpu sizes its own pinned memory from that limit, less than
 * half of it with user queues, the staging buffer and several streams; the
 * rest is the caller's.  Pinning past the limit fails with -ENOMEM and a
 * message that gives the limit, what is pinned and what was asked.
 */

/* Allocates size bytes of pinned host memory (64-byte aligned; from a cache like device memory). */
HPU_API int hpu_host_alloc(struct hpu_device *dev, size_t size, void **ptr);

/* Frees memory of hpu_host_alloc().  NULL is a no-op.  Never waits (see hpu_mem_free()). */
HPU_API int hpu_host_free(struct hpu_device *dev, void *ptr);

/*
 * Pins and maps the caller's memory [ptr, ptr + size), which must stay
 * allocated until unregistered and must not overlap another registration.
 * Pins whole pages: the memory must be readable and writable.
 */
HPU_API int hpu_host_register(struct hpu_device *dev, void *ptr, size_t size);

/* Undoes hpu_host_register(ptr, ...), first waiting for all work submitted so far. */
HPU_API int hpu_host_unregister(struct hpu_device *dev, void *ptr);

/*
 * The device address of pinned host memory (allocated or registered), for
 * copies, GEMMs and kernels that read or write it.  -ENOENT if ptr is not pinned.
 */
HPU_API int hpu_host_get_device_pointer(struct hpu_device *dev, const void *ptr,
					uint64_t *devptr);

/*
 * Whether the size bytes at ptr are all pinned host memory of dev (in one
 * allocation or registration): 1 if so, 0 if not, -errno for a bad
 * argument.  Copies take the same test: pinned memory is reached directly
 * and asynchronously, any other is staged.  A "not pinned" is no error, so
 * asking about pageable memory costs no message.
 */
HPU_API int hpu_host_is_pinned(struct hpu_device *dev, const void *ptr, size_t size);

/* ------------------------------------------------------------------------
 * Streams
 *
 * A stream is an ordered sequence of work on one hardware queue of the
 * device; streams take the queues in turn.  Work on a stream runs in the
 * order it was enqueued; work on different streams is unordered unless
 * hpu_stream_wait_event() orders it.
 *
 * Errors: a failed job (an MMU fault, say) does not stop the stream.  The
 * next call that finds it failed - a synchronize, query or pageable copy of
 * its stream, or of an event recorded after it - returns the job's -errno
 * with a message naming the stream, the job and the call that enqueued it:
 *   "hpu_stream_synchronize: stream 2: job 12 (hpu_memcpy_h2d_async) on
 *    queue 1 failed: MMU fault (-EFAULT)"
 * Each failure is reported once.
 */

struct hpu_stream; /* opaque */

/* Creates a stream.  -EOPNOTSUPP if the driver has no hardware queues. */
HPU_API int hpu_stream_create(struct hpu_device *dev, struct hpu_stream **streamp);

/*
 * Destroys a stream without waiting: work already enqueued still runs, but
 * failures not yet reported are not.  NULL is a no-op.  Cannot fail.
 */
HPU_API void hpu_stream_destroy(struct hpu_stream *stream);

/* Waits for all work enqueued on the stream so far. */
HPU_API int hpu_stream_synchronize(struct hpu_stream *stream);

/* 0 if all work enqueued on the stream has ended, -EAGAIN if not; never waits. */
HPU_API int hpu_stream_query(struct hpu_stream *stream);

/*
 * Waits for all work enqueued on the device's streams so far, even destroyed
 * ones, and returns the first failure found on a live stream.
 */
HPU_API int hpu_device_synchronize(struct hpu_device *dev);

/* ------------------------------------------------------------------------
 * Copies
 *
 * Device addresses are those of hpu_mem_alloc() or
 * hpu_host_get_device_pointer(), plus any offset inside them; copies may be
 * of any size and alignment.  The ranges of a device-to-device copy must not
 * overlap.  Size 0 is a no-op.
 *
 * The _async functions enqueue on a stream and return: the memory must stay
 * valid until the stream gets there.  Pageable host memory is staged: an
 * H2D copy from it returns once the data is in the device's staging buffer
 * (the caller may reuse its memory at once); a D2H copy to it waits for the
 * stream to finish the copy, so it synchronizes the stream.
 *
 * The other functions run on the device's default stream and wait for the
 * copy; they are not ordered with other streams' work.
 */

HPU_API int hpu_memcpy_h2d_async(struct hpu_stream *stream, uint64_t dst, const void *src,
				 size_t size);
HPU_API int hpu_memcpy_d2h_async(struct hpu_stream *stream, void *dst, uint64_t src,
				 size_t size);
HPU_API int hpu_memcpy_d2d_async(struct hpu_stream *stream, uint64_t dst, uint64_t src,
				 size_t size);
/* Sets size bytes at dst to (unsigned char)value. */
HPU_API int hpu_memset_async(struct hpu_stream *stream, uint64_t dst, int value, size_t size);

HPU_API int hpu_memcpy_h2d(struct hpu_device *dev, uint64_t dst, const void *src, size_t size);
HPU_API int hpu_memcpy_d2h(struct hpu_device *dev, void *dst, uint64_t src, size_t size);
HPU_API int hpu_memcpy_d2d(struct hpu_device *dev, uint64_t dst, uint64_t src, size_t size);
HPU_API int hpu_memset(struct hpu_device *dev, uint64_t dst, int value, size_t size);

/* ------------------------------------------------------------------------
 * Events
 *
 * An event marks a point in a stream: hpu_event_record() places it after the
 * work enqueued so far, and the event completes when that work has ended.
 * The device stamps its clock when the event completes, for
 * hpu_event_elapsed_time().  An event never recorded counts as complete.
 * Recording again moves the event; waits already enqueued keep the old point.
 */

struct hpu_event; /* opaque */

HPU_API int hpu_event_create(struct hpu_device *dev, struct hpu_event **eventp);

/* Destroys an event (pending waits on it still complete).  NULL is a no-op.  Cannot fail. */
HPU_API void hpu_event_destroy(struct hpu_event *event);

/* Places the event after the work enqueued on stream so far. */
HPU_API int hpu_event_record(struct hpu_event *event, struct hpu_stream *stream);

/* Waits for the event; returns the first unreported failure of its stream up to it. */
HPU_API int hpu_event_synchronize(struct hpu_event *event);

/* As hpu_event_synchronize() without waiting: -EAGAIN if the event has not completed. */
HPU_API int hpu_event_query(struct hpu_event *event);

/*
 * Device time from start to end in nanoseconds (negative if end completed
 * first).  -EINVAL if either was never recorded, -EAGAIN if either has not
 * completed.
 */
HPU_API int hpu_event_elapsed_time(struct hpu_event *start, struct hpu_event *end, int64_t *ns);

/*
 * Makes work enqueued on stream from now on wait until the event completes
 * (as recorded now), without blocking the caller.  The wait happens on the
 * device: it stalls the stream's hardware queue.
 */
HPU_API int hpu_stream_wait_event(struct hpu_stream *stream, struct hpu_event *event);

#if defined(__cplusplus)
}
#endif

#endif /* HPU_HPU_H */
