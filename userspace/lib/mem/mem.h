/* SPDX-License-Identifier: MIT */
/*
 * libhpu's memory layer: device memory and pinned host memory, through a
 * caching sub-allocator.  Which work has ended - when a freed block may be
 * reused - is the submission layer's knowledge, handed down at init.
 */
#ifndef HPU_MEM_H
#define HPU_MEM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/core.h"

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

/*
 * Which work has ended: the submission layer's knowledge (hpu_jobs_retire),
 * set in dev->retire before the memory's init.  ctx is the device.
 */
struct hpu_retire_ops {
	uint64_t (*fence)(void *ctx);
	uint64_t (*retired)(void *ctx, enum hpu_retire how);
};

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

/* hpu_host.c: pinned host memory and the table of what is pinned (dev->host). */

struct hpu_host_range;

struct hpu_host_table {
	pthread_rwlock_t lock;
	struct hpu_host_range *ranges; /* sorted by start, disjoint */
	size_t count, capacity;
};

/*
 * Sizes the pinned cache's slabs, and the halves of the submission layer's
 * staging buffer (*staging_half), from what the process may pin
 * (RLIMIT_MEMLOCK, unless CAP_IPC_LOCK lifts it).
 */
int hpu_host_init(struct hpu_device *dev, uint64_t *staging_half);
/* Unmaps the pinned cache and what the caller left registered. */
void hpu_host_fini(struct hpu_device *dev);
/* The device address of [ptr, ptr + size) if one pinned range holds all of it. */
bool hpu_host_lookup(struct hpu_device *dev, const void *ptr, size_t size, uint64_t *va);
/* Pinned memory for libhpu's own use: staging buffers and sync slots. */
int hpu_pinned_alloc(struct hpu_device *dev, uint64_t size, uint64_t *va, void **host);
void hpu_pinned_free(struct hpu_device *dev, uint64_t va);

/* hpu_mem.c: the device memory cache. */

int hpu_mem_init(struct hpu_device *dev);
/* dev->retire's answers, as the slabs' struct hpu_suballoc_ops take them. */
uint64_t hpu_mem_fence(void *ctx);
uint64_t hpu_mem_retired(void *ctx, enum hpu_retire how);

#endif /* HPU_MEM_H */
