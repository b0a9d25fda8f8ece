/* SPDX-License-Identifier: MIT */
/*
 * libhpu's core: the device handle, its node and ioctls, and discovery.
 * struct hpu_device holds the core's fields and a pointer to each upper
 * layer's per-device state: a type that layer defines in its own header,
 * allocates at open (top/hpu_device_open.c, in layer order) and alone
 * touches.  The core sees only the types' names.
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

/* The recipe caches, memory and disk: the recipe layer's (recipe/recipe.h). */
struct hpu_recipe_cache;

struct hpu_suballoc;
struct hpu_host_table;
struct hpu_jobs;
struct hpu_staging;
struct hpu_fallback_state;
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
	struct hpu_jobs *jobs;               /* submit/hpu_jobs.c */
	const struct hpu_retire_ops *retire; /* the jobs', for the memory layer */
	struct hpu_suballoc *mem;            /* device memory (mem/hpu_mem.c) */
	struct hpu_suballoc *pinned;         /* pinned host memory (mem/hpu_host.c) */
	struct hpu_host_table *host;         /* what is pinned (mem/hpu_host.c) */
	struct hpu_staging *staging;         /* submit/hpu_copy.c */
	struct hpu_fallback_state *fallback; /* ops/hpu_fallback.c */
	struct hpu_recipe_cache *recipes;    /* recipe/hpu_recipe_cache.c */
};

/* INFO's device query, converted to the public struct; user_queues is the submission layer's. */
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
