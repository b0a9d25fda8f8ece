/* SPDX-License-Identifier: MIT */
/*
 * The caching sub-allocator.  Memory comes from the backend in slabs; each
 * slab is a chain of blocks in address order, and a free block sits in the
 * bin of its size (power-of-two classes) of its pool.  An allocation takes
 * the best fit of its size class or any block of a larger class, splitting
 * off the rest; a free block merges with free neighbours, so a slab whose
 * blocks are all free is one block again and can be unmapped.
 *
 * A freed block may still be in use by work submitted before the free: it
 * waits, pending, until the backend says that work has ended, and only then
 * becomes free.  Pending blocks are kept in the order they were freed, which
 * is the order of their fences.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../mem/mem.h"

#define HPU_BINS 64
#define HPU_HASH_MIN_BITS 8

enum hpu_block_state {
	HPU_BLOCK_FREE,    /* in a bin */
	HPU_BLOCK_USED,    /* in the hash */
	HPU_BLOCK_PENDING, /* in sa->pending */
};

struct hpu_slab {
	struct hpu_list node; /* in sa->slabs */
	struct hpu_slab_map map;
	uint64_t size;
	unsigned int pool;
	uint64_t busy;            /* blocks used or pending */
	struct hpu_block *first; /* the block at the start: merging keeps the lower block */
};

struct hpu_block {
	uint64_t addr, size;
	struct hpu_slab *slab;
	struct hpu_block *prev, *next; /* neighbours in the slab */
	struct hpu_list link;          /* free: its bin; pending: sa->pending */
	struct hpu_block *hash_next;   /* used */
	uint64_t fence;                /* pending: reusable once retired reaches it */
	enum hpu_block_state state;
};

struct hpu_pool {
	struct hpu_list bins[HPU_BINS];
	uint64_t nonempty; /* bit b: bins[b] has a block */
};

struct hpu_suballoc {
	pthread_mutex_t lock;
	struct hpu_suballoc_config config;
	const struct hpu_suballoc_ops *ops;
	void *ctx;
	unsigned int granule_shift;
	struct hpu_pool pools[HPU_SUBALLOC_POOLS];
	struct hpu_list slabs;
	struct hpu_list pending;
	struct hpu_block **hash; /* used blocks by address, chained */
	unsigned int hash_bits;
	size_t hash_count;
	struct hpu_mem_cache_stats stats;
};

int hpu_suballoc_create(const struct hpu_suballoc_config *config,
			const struct hpu_suballoc_ops *ops, void *ctx, struct hpu_suballoc **sap)
{
	struct hpu_suballoc *sa;
	unsigned int p, b;

	sa = calloc(1, sizeof(*sa));
	if (sa)
		sa->hash = calloc(1u << HPU_HASH_MIN_BITS, sizeof(*sa->hash));
	if (!sa || !sa->hash) {
		free(sa);
		return hpu_error_set(ENOMEM, "out of memory");
	}
	pthread_mutex_init(&sa->lock, NULL);
	sa->config = *config;
	sa->ops = ops;
	sa->ctx = ctx;
	sa->granule_shift = __builtin_ctzll(config->granule);
	for (p = 0; p < HPU_SUBALLOC_POOLS; p++)
		for (b = 0; b < HPU_BINS; b++)
			hpu_list_init(&sa->pools[p].bins[b]);
	hpu_list_init(&sa->slabs);
	hpu_list_init(&sa->pending);
	sa->hash_bits = HPU_HASH_MIN_BITS;
	*sap = sa;
	return 0;
}

static void hpu_slab_unmap(struct hpu_suballoc *sa, struct hpu_slab *slab)
{
	sa->ops->slab_destroy(sa->ctx, slab->size, &slab->map);
	hpu_list_del(&slab->node);
	sa->stats.reserved -= slab->size;
	sa->stats.slabs--;
	sa->stats.slabs_released++;
	free(slab);
}

void hpu_suballoc_destroy(struct hpu_suballoc *sa)
{
	while (!hpu_list_empty(&sa->slabs)) {
		struct hpu_slab *slab = hpu_container_of(sa->slabs.next, struct hpu_slab, node);
		struct hpu_block *b = slab->first, *next;

		for (; b; b = next) {
			next = b->next;
			free(b);
		}
		hpu_slab_unmap(sa, slab);
	}
	pthread_mutex_destroy(&sa->lock);
	free(sa->hash);
	free(sa);
}

/* Size class: floor(log2(size in granules)). */
static unsigned int hpu_bin_of(const struct hpu_suballoc *sa, uint64_t size)
{
	return 63 - __builtin_clzll(size >> sa->granule_shift);
}

static void hpu_bin_insert(struct hpu_suballoc *sa, struct hpu_block *b)
{
	struct hpu_pool *pool = &sa->pools[b->slab->pool];
	unsigned int bin = hpu_bin_of(sa, b->size);

	b->state = HPU_BLOCK_FREE;
	hpu_list_add_tail(&pool->bins[bin], &b->link);
	pool->nonempty |= 1ull << bin;
}

static void hpu_bin_remove(struct hpu_suballoc *sa, struct hpu_block *b)
{
	struct hpu_pool *pool = &sa->pools[b->slab->pool];
	unsigned int bin = hpu_bin_of(sa, b->size);

	hpu_list_del(&b->link);
	if (hpu_list_empty(&pool->bins[bin]))
		pool->nonempty &= ~(1ull << bin);
}

/* The best fit in size's own class, else the first block of the next class that has one. */
static struct hpu_block *hpu_find_fit(struct hpu_suballoc *sa, unsigned int p, uint64_t size)
{
	struct hpu_pool *pool = &sa->pools[p];
	unsigned int bin = hpu_bin_of(sa, size);
	struct hpu_block *best = NULL;
	struct hpu_list *it;
	uint64_t larger;

	for (it = pool->bins[bin].next; it != &pool->bins[bin]; it = it->next) {
		struct hpu_block *b = hpu_container_of(it, struct hpu_block, link);

		if (b->size >= size && (!best || b->size < best->size))
			best = b;
		if (b->size == size)
			break;
	}
	if (best)
		return best;
	/* Every block of a larger class is at least twice the class floor: it fits. */
	larger = pool->nonempty & ~((2ull << bin) - 1);
	if (!larger)
		return NULL;
	return hpu_container_of(pool->bins[__builtin_ctzll(larger)].next, struct hpu_block, link);
}

/* Frees a block: merges it with free neighbours into one free block. */
static void hpu_block_release(struct hpu_suballoc *sa, struct hpu_block *b)
{
	struct hpu_block *n;

	if (b->prev && b->prev->state == HPU_BLOCK_FREE) {
		n = b;
		b = b->prev;
		hpu_bin_remove(sa, b);
		b->size += n->size;
		b->next = n->next;
		if (b->next)
			b->next->prev = b;
		free(n);
	}
	n = b->next;
	if (n && n->state == HPU_BLOCK_FREE) {
		hpu_bin_remove(sa, n);
		b->size += n->size;
		b->next = n->next;
		if (b->next)
			b->next->prev = b;
		free(n);
	}
	hpu_bin_insert(sa, b);
}

/* Pending blocks whose work has ended become free. */
static void hpu_retire(struct hpu_suballoc *sa, enum hpu_retire how)
{
	uint64_t retired;

	if (hpu_list_empty(&sa->pending))
		return;
	retired = sa->ops->retired(sa->ctx, how);
	while (!hpu_list_empty(&sa->pending)) {
		struct hpu_block *b = hpu_container_of(sa->pending.next, struct hpu_block, link);

		if (b->fence > retired)
			break;
		hpu_list_del(&b->link);
		sa->stats.pending -= b->size;
		b->slab->busy--;
		hpu_block_release(sa, b);
	}
}

static int hpu_slab_new(struct hpu_suballoc *sa, unsigned int p, uint64_t size,
			struct hpu_block **bp)
{
	struct hpu_slab *slab = calloc(1, sizeof(*slab));
	struct hpu_block *b = calloc(1, sizeof(*b));
	int ret;

	if (!slab || !b)
		ret = hpu_error_set(ENOMEM, "out of memory");
	else
		ret = sa->ops->slab_create(sa->ctx, size, &slab->map);
	if (ret) {
		free(slab);
		free(b);
		return ret;
	}
	slab->size = size;
	slab->pool = p;
	slab->first = b;
	hpu_list_add_tail(&sa->slabs, &slab->node);
	*b = (struct hpu_block){ .addr = slab->map.va, .size = size, .slab = slab };
	hpu_bin_insert(sa, b);
	sa->stats.reserved += size;
	sa->stats.slabs++;
	sa->stats.slabs_created++;
	*bp = b;
	return 0;
}

static void hpu_trim(struct hpu_suballoc *sa)
{
	struct hpu_list *it, *next;

	for (it = sa->slabs.next; it != &sa->slabs; it = next) {
		struct hpu_slab *slab = hpu_container_of(it, struct hpu_slab, node);

		next = it->next;
		if (slab->busy)
			continue;
		/* Nothing busy: the merged free block spans the slab. */
		hpu_bin_remove(sa, slab->first);
		free(slab->first);
		hpu_slab_unmap(sa, slab);
	}
}

/*
 * No cached block fits: map a slab, and if the device is full or the file's
 * share of it is spent (-EDQUOT, the driver's per-file limit), wait for
 * pending blocks, give back every unused slab and try once more.
 */
static int hpu_grow(struct hpu_suballoc *sa, unsigned int p, uint64_t size, struct hpu_block **bp)
{
	uint64_t slab_size = sa->config.pools[p].slab_size;
	int ret;

	if (size > slab_size / 2)
		slab_size = hpu_round_up(size, sa->config.dedicated_align);
	ret = hpu_slab_new(sa, p, slab_size, bp);
	if (ret != -ENOMEM && ret != -EDQUOT)
		return ret;
	hpu_retire(sa, HPU_RETIRE_WAIT);
	*bp = hpu_find_fit(sa, p, size);
	if (*bp)
		return 0;
	hpu_trim(sa);
	return hpu_slab_new(sa, p, slab_size, bp);
}

static unsigned int hpu_pool_of(const struct hpu_suballoc *sa, uint64_t size)
{
	unsigned int p;

	for (p = 0; p + 1 < HPU_SUBALLOC_POOLS && size > sa->config.pools[p].max_request; p++)
		;
	return p;
}

/* Cuts b down to size if enough is left over to be worth a block of its own. */
static void hpu_split(struct hpu_suballoc *sa, struct hpu_block *b, uint64_t size)
{
	struct hpu_block *rest;

	if (b->size - size < sa->config.pools[b->slab->pool].min_split)
		return;
	/* Without memory for the bookkeeping, the caller gets the whole block. */
	rest = malloc(sizeof(*rest));
	if (!rest)
		return;
	*rest = (struct hpu_block){
		.addr = b->addr + size,
		.size = b->size - size,
		.slab = b->slab,
		.prev = b,
		.next = b->next,
	};
	if (b->next)
		b->next->prev = rest;
	b->next = rest;
	b->size = size;
	hpu_bin_insert(sa, rest);
}

static size_t hpu_hash_of(const struct hpu_suballoc *sa, uint64_t addr)
{
	return (size_t)(((addr >> sa->granule_shift) * 0x9e3779b97f4a7c15ull) >>
			(64 - sa->hash_bits));
}

/* Doubles the table when it is full; without memory, chains just get longer. */
static void hpu_hash_grow(struct hpu_suballoc *sa)
{
	size_t i, old_size = (size_t)1 << sa->hash_bits;
	struct hpu_block **old = sa->hash, *b, *next;

	if (sa->hash_count < old_size)
		return;
	sa->hash = calloc(old_size * 2, sizeof(*sa->hash));
	if (!sa->hash) {
		sa->hash = old;
		return;
	}
	sa->hash_bits++;
	for (i = 0; i < old_size; i++) {
		for (b = old[i]; b; b = next) {
			size_t h = hpu_hash_of(sa, b->addr);

			next = b->hash_next;
			b->hash_next = sa->hash[h];
			sa->hash[h] = b;
		}
	}
	free(old);
}

static void hpu_hash_insert(struct hpu_suballoc *sa, struct hpu_block *b)
{
	size_t h;

	hpu_hash_grow(sa);
	h = hpu_hash_of(sa, b->addr);
	b->hash_next = sa->hash[h];
	sa->hash[h] = b;
	sa->hash_count++;
}

static struct hpu_block *hpu_hash_remove(struct hpu_suballoc *sa, uint64_t addr)
{
	struct hpu_block **link = &sa->hash[hpu_hash_of(sa, addr)], *b;

	for (; (b = *link); link = &b->hash_next) {
		if (b->addr == addr) {
			*link = b->hash_next;
			sa->hash_count--;
			return b;
		}
	}
	return NULL;
}

int hpu_suballoc_alloc(struct hpu_suballoc *sa, uint64_t size, uint64_t *addr, void **host)
{
	struct hpu_block *b;
	unsigned int p;
	int ret = 0;

	if (size > UINT64_MAX - sa->config.dedicated_align)
		return hpu_error_set(ENOMEM, "%llu bytes of %s is more than there can be",
				     (unsigned long long)size, sa->config.name);
	size = hpu_round_up(size, sa->config.granule);
	p = hpu_pool_of(sa, size);
	pthread_mutex_lock(&sa->lock);
	b = hpu_find_fit(sa, p, size);
	if (!b) {
		hpu_retire(sa, HPU_RETIRE_KNOWN);
		b = hpu_find_fit(sa, p, size);
	}
	if (!b) {
		hpu_retire(sa, HPU_RETIRE_POLL);
		b = hpu_find_fit(sa, p, size);
	}
	if (!b)
		ret = hpu_grow(sa, p, size, &b);
	if (!ret) {
		hpu_bin_remove(sa, b);
		hpu_split(sa, b, size);
		b->state = HPU_BLOCK_USED;
		b->slab->busy++;
		hpu_hash_insert(sa, b);
		sa->stats.allocated += b->size;
		if (sa->stats.allocated > sa->stats.peak_allocated)
			sa->stats.peak_allocated = sa->stats.allocated;
		sa->stats.allocations++;
		*addr = b->addr;
		*host = b->slab->map.host;
		if (*host)
			*host = (char *)*host + (b->addr - b->slab->map.va);
	}
	pthread_mutex_unlock(&sa->lock);
	return ret;
}

int hpu_suballoc_free(struct hpu_suballoc *sa, uint64_t addr)
{
	struct hpu_block *b;

	pthread_mutex_lock(&sa->lock);
	b = hpu_hash_remove(sa, addr);
	if (!b) {
		pthread_mutex_unlock(&sa->lock);
		return hpu_error_set(EINVAL, "0x%llx is not allocated %s", (unsigned long long)addr,
				     sa->config.name);
	}
	sa->stats.allocated -= b->size;
	sa->stats.allocations--;
	sa->stats.pending += b->size;
	b->state = HPU_BLOCK_PENDING;
	b->fence = sa->ops->fence(sa->ctx);
	hpu_list_add_tail(&sa->pending, &b->link);
	hpu_retire(sa, HPU_RETIRE_KNOWN);
	pthread_mutex_unlock(&sa->lock);
	return 0;
}

void hpu_suballoc_trim(struct hpu_suballoc *sa)
{
	pthread_mutex_lock(&sa->lock);
	hpu_retire(sa, HPU_RETIRE_POLL);
	hpu_trim(sa);
	pthread_mutex_unlock(&sa->lock);
}

void hpu_suballoc_stats(struct hpu_suballoc *sa, struct hpu_mem_cache_stats *stats)
{
	pthread_mutex_lock(&sa->lock);
	*stats = sa->stats;
	pthread_mutex_unlock(&sa->lock);
}
