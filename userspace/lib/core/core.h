/* SPDX-License-Identifier: MIT */
/*
 * libhpu's core: the device handle, its node and ioctls, and discovery.
 * struct hpu_device holds each layer's per-device state by value, so that a
 * device is one allocation; the types of that state are defined here, and
 * only the layer named in each comment touches its fields.
 *
 * Lock order, outermost first: device, stream, staging, recipe cache, recipe,
 * event, sub-allocator, host table, jobs, disk cache.  No lock is held across a call into an
 * outer one.
 */
#ifndef HPU_CORE_H
#define HPU_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <hpu/hpu.h>

#include "../util/util.h"

/* The jobs' state (submit/hpu_jobs.c). */
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

/* Pinned host memory (mem/hpu_host.c). */
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

/* The ops' fallback counts (ops/hpu_fallback.c, which names them). */
#define HPU_FALLBACK_OPS 64
struct hpu_fallback_state {
	atomic_uint_fast64_t counts[HPU_FALLBACK_OPS];
	atomic_int strict; /* 0: as HPU_FALLBACK_STRICT says, 1 on, 2 off */
};

/* The recipe caches, memory and disk: the recipe layer's (recipe/recipe.h). */
struct hpu_recipe_cache;

struct hpu_suballoc;
struct hpu_stream;
struct hpu_retire_ops;
struct hpu_stream_hooks;
struct hpu_op_hooks;

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
	/* The upper layers' hooks, set at open: submit/ and ops/ never call up. */
	const struct hpu_stream_hooks *stream_hooks;
	const struct hpu_op_hooks *op_hooks;
	struct hpu_jobs jobs;
	const struct hpu_retire_ops *retire; /* the jobs', for the memory layer */
	struct hpu_suballoc *mem;    /* device memory */
	struct hpu_suballoc *pinned; /* pinned host memory */
	struct hpu_host_table host;
	struct hpu_staging staging;
	struct hpu_fallback_state fallback;
	struct hpu_recipe_cache *recipes;
};

/* INFO's device query, converted to the public struct. */
int hpu_device_query(struct hpu_device *dev, struct hpu_device_info *out);
/* -EOPNOTSUPP, with a message, if the driver predates command submission (ABI 1.1). */
int hpu_device_check_submission(struct hpu_device *dev);

/*
 * Output structs that start with `uint32_t size` (see <hpu/hpu.h>): the
 * arguments' check, and filling what both sides know.
 */
int hpu_sized_check(const struct hpu_device *dev, const void *out, const char *name,
		    uint32_t min_size);
void hpu_sized_out(void *out, void *known, uint32_t known_size);

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

#endif /* HPU_CORE_H */
